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
Exits 2 naming the file (and line) of a text train.csv lacks, of a record that is not sts/1 with
one intent label or not JSON, of a train.csv without the header text,category or with a short
row, of a file that is not UTF-8 or cannot be read, or of a folder that is missing or holds no
TASK.pseudo.jsonl.
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
        with open(path, encoding="utf-8-sig", newline="") as f:
            reader = csv.DictReader(f)
            if reader.fieldnames is None or not {"text", "category"} <= set(reader.fieldnames):
                fail(f"{path}:1: expected the header text,category")
            for row in reader:
                if row["text"] is None or row["category"] is None:
                    fail(f"{path}:{reader.line_num}: expected two fields, text and category")
                gold[row["text"]].add(row["category"])
    except OSError as e:
        fail(f"{path}: {e.strerror}")
    except UnicodeDecodeError as e:
        fail(f"{path}: not UTF-8 ({e.reason} at byte {e.start})")
    return gold


def intent_of(record, where):
    """The text and the one intent of an sts/1 record's last turn."""
    try:
        turn = record["turns"][-1]
        (intents,) = turn["label"].values()
        (intent,) = intents.keys()
        text = turn["text"]
    except (KeyError, IndexError, TypeError, ValueError, AttributeError):
        text = intent = None
    if not isinstance(text, str) or not isinstance(intent, str):
        fail(f"{where}: expected an sts/1 record whose last turn has a text, one domain and one "
             "intent")
    return text, intent


def precision(pseudo_path, gold):
    right = total = 0
    try:
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
    except OSError as e:
        fail(f"{pseudo_path}: {e.strerror}")
    except UnicodeDecodeError as e:
        fail(f"{pseudo_path}: not UTF-8 ({e.reason} at byte {e.start})")
    return right, total


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", required=True, help="DialoGLUE's folder (TASK/train.csv)")
    parser.add_argument("folders", nargs="+", help="folders of TASK.pseudo.jsonl")
    args = parser.parse_args()
    rows = []
    for folder in args.folders:
        if not os.path.isdir(folder):
            fail(f"{folder}: no such folder")
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
