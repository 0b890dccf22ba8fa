#!/usr/bin/python3
"""How precise the intent stage's pseudo-labels are (docs/results.md "Two pretraining runs of the
30 % recipe"): the share of `dialtree eval pseudo-label`'s labels that equal train.csv's label of
the same text. A diagnosis only: it reads the labels of `train`, which no few-shot stage may see,
so its figures explain a run after the fact and never choose a recipe.

usage: scripts/pseudo-label-precision.py --data DIALOGUE_DIR PSEUDO_DIR [PSEUDO_DIR ...]

Each PSEUDO_DIR holds TASK.pseudo.jsonl (sts/1, one user turn labelled DEFAULT_DOMAIN -> intent)
for the intent tasks it has of banking, clinc and hwu; DIALOGUE_DIR/TASK/train.csv (text,category)
is the key. A text that train.csv holds more than once counts as right if any of its labels is
the pseudo-label. Prints a markdown table: per folder and task, precision in % and the count.
Exits 2 naming the file and line of a text train.csv lacks, of a record that is not sts/1 with
one intent label, or of a folder without any TASK.pseudo.jsonl.
"""

import argparse
import collections
import csv
import json
import os
import sys

TASKS = ("banking", "clinc", "hwu")


def fail(message):
    print(f"pseudo-label-precision: {message}", file=sys.stderr)
    sys.exit(2)


def gold_labels(path):
    gold = collections.defaultdict(set)
    try:
        with open(path, encoding="utf-8", newline="") as f:
            for row in csv.DictReader(f):
                if "text" not in row or "category" not in row:
                    fail(f"{path}: expected the columns text,category")
                gold[row["text"]].add(row["category"])
    except OSError as e:
        fail(f"{path}: {e.strerror}")
    return gold


def intent_of(record, where):
    """The one intent of an sts/1 record's last turn."""
    try:
        domains = record["turns"][-1]["label"]
        (intents,) = domains.values()
        (intent,) = intents.keys()
        return record["turns"][-1]["text"], intent
    except (KeyError, IndexError, TypeError, ValueError, AttributeError):
        fail(f"{where}: expected an sts/1 record whose last turn has one domain and one intent")


def precision(pseudo_path, gold):
    right = total = 0
    with open(pseudo_path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            where = f"{pseudo_path}:{n}"
            try:
                record = json.loads(line)
            except json.JSONDecodeError as e:
                fail(f"{where}: not JSON ({e.msg})")
            text, intent = intent_of(record, where)
            if text not in gold:
                fail(f"{where}: the text {text!r} is not in train.csv (another data folder?)")
            total += 1
            right += intent in gold[text]
    return right, total


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", required=True, help="DialoGLUE's folder (TASK/train.csv)")
    parser.add_argument("folders", nargs="+", help="folders of TASK.pseudo.jsonl")
    args = parser.parse_args()
    rows = []
    for folder in args.folders:
        cells = {}
        for task in TASKS:
            path = os.path.join(folder, f"{task}.pseudo.jsonl")
            if os.path.exists(path):
                right, total = precision(path, gold_labels(os.path.join(args.data, task, "train.csv")))
                cells[task] = f"{100.0 * right / total:.2f} ({total})" if total else "– (0)"
        if not cells:
            fail(f"{folder}: no banking, clinc or hwu .pseudo.jsonl")
        rows.append((folder, cells))
    print("| pseudo-labels | " + " | ".join(TASKS) + " |")
    print("|---|" + "---|" * len(TASKS))
    for folder, cells in rows:
        print(f"| {folder} | " + " | ".join(cells.get(t, "–") for t in TASKS) + " |")


if __name__ == "__main__":
    main()
