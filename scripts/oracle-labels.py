#!/usr/bin/env python3
"""Diagnostic, NOT a few-shot recipe: give pseudo-labelled records their true labels.

Reads DIR/<task>.pseudo.jsonl (as `dialtree eval pseudo-label` writes them) and writes
OUT/<task>.pseudo.jsonl with the same records in the same order, each intent replaced by the
label that DialoGLUE's <task>/train.csv gives its text (first occurrence of the text). A stage
trained on them differs from the pseudo-labelled stage only by the labels' noise, so it
measures what perfect pseudo-labels could add (docs/results.md "Oracle labels"). It reads the
labels of train.csv: nothing trained on its output is a few-shot result.

usage: scripts/oracle-labels.py --pseudo DIR --data ../shared/data/dialoglue --out OUT
       [--tasks banking,clinc,hwu]
Prints per task: records, how many labels were right (the pool's true precision).
"""
import argparse
import csv
import json
import pathlib
import sys


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--pseudo", required=True)
    p.add_argument("--data", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--tasks", default="banking,clinc,hwu")
    a = p.parse_args()
    out = pathlib.Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    for task in a.tasks.split(","):
        truth = {}
        with open(pathlib.Path(a.data) / task / "train.csv", newline="") as f:
            for row in csv.DictReader(f):
                truth.setdefault(row["text"], row["category"])
        src = pathlib.Path(a.pseudo) / f"{task}.pseudo.jsonl"
        lines, right = [], 0
        for n, line in enumerate(src.read_text().splitlines(), 1):
            rec = json.loads(line)
            turn = rec["turns"][0]
            (domain, intents), = turn["label"].items()
            (given,), = [list(intents)]
            if turn["text"] not in truth:
                sys.exit(f"{src}:{n}: text not in {task}/train.csv: {turn['text']!r}")
            true = truth[turn["text"]]
            right += given == true
            turn["label"] = {domain: {true: {}}}
            lines.append(json.dumps(rec))
        tmp = out / f".{task}.pseudo.jsonl.tmp"
        tmp.write_text("\n".join(lines) + "\n")
        tmp.replace(out / f"{task}.pseudo.jsonl")
        print(f"{task}: {len(lines)} records, {right} labels right ({100 * right / len(lines):.2f} %)")


if __name__ == "__main__":
    main()
