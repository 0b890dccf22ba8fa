#!/usr/bin/python3
"""A DialoGLUE folder whose few-shot training split of one slot task (restaurant8k, dstc8_sgd) is a
random subset of its train_10.json: to measure what an encoder adds when the labelled spans per
slot type are as scarce on one task as on another (docs/results.md "What limits restaurant8k and
TOP, and where the token stage's dstc8 points come from").

    scripts/subsample-split.py --task restaurant8k --keep 90 --seed 1 --out runs/r8k-90

writes OUT/<task>/train_10.json (KEEP examples of the original, drawn with SEED, in their
original order) and links the task folder's other files but train.json (val.json, test.json,
vocab.txt) and the files at the folder's top (gt_test.json, the BERT vocabulary), so that
`dialtree eval dialoglue --data-dir OUT --tasks <task> --setting few` fine-tunes on the subset
and scores val and test as on the original. Only labels of train_10 are read (OUT has no
train.json): a figure made on OUT is few-shot. OUT is written beside itself and renamed, so it
appears whole or not at all.

Prints the raw labels per slot type (the examples' "labels" lists) of the subset and of the
original; `scripts/slot-types.py --label-counts --data-dir OUT` counts them at DialoGLUE's word
level, where a label whose words do not match the text's is not one. Exits 2 on a bad task, a
KEEP out of range or an OUT that exists, 1 naming the file and example on a malformed split.
"""

import argparse
import collections
import json
import os
import random
import shutil
import sys

from dialoglue_tasks import folder_name

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TASKS = ("restaurant8k", "dstc8_sgd")


def spans_per_type(examples):
    """{slot: labelled spans} of DialoGLUE slot examples (their "labels" lists)."""
    return collections.Counter(lab["slot"] for ex in examples for lab in ex.get("labels", []))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
    ap.add_argument("--task", required=True, help="restaurant8k or dstc8_sgd")
    ap.add_argument("--keep", type=int, required=True, help="examples of train_10 to keep")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--data-dir", default=os.environ.get("DIALTREE_DATA", os.path.join(
        ROOT, "..", "shared", "data", "dialoglue")))
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    task = folder_name(args.task)
    if task not in TASKS:
        ap.error(f"--task: '{args.task}' is not one of {', '.join(TASKS)}")
    src = os.path.abspath(os.path.join(args.data_dir, task))
    path = os.path.join(src, "train_10.json")
    try:
        with open(path, encoding="utf-8") as f:
            examples = json.load(f)
    except (OSError, ValueError) as e:
        sys.exit(f"subsample-split: {path}: {e}")
    if not isinstance(examples, list):
        sys.exit(f"subsample-split: {path}: expected a JSON list of examples")
    for k, ex in enumerate(examples):  # the fields the counts read, checked before any write
        labels = ex.get("labels", []) if isinstance(ex, dict) else None
        if not isinstance(labels, list) or not all(
                isinstance(lab, dict) and isinstance(lab.get("slot"), str) for lab in labels):
            sys.exit(f"subsample-split: {path}: example {k}: expected an object whose \"labels\" "
                     "is a list of objects with a \"slot\" string")
    if not 0 < args.keep <= len(examples):
        ap.error(f"--keep {args.keep}: {path} has {len(examples)} examples")
    args.out = os.path.normpath(args.out)
    if os.path.exists(args.out):
        ap.error(f"--out {args.out} exists (a subset is written once)")
    picked = sorted(random.Random(args.seed).sample(range(len(examples)), args.keep))
    subset = [examples[i] for i in picked]
    # Written beside OUT, then renamed: OUT appears whole or not at all.
    tmp = f"{args.out}.tmp.{os.getpid()}"
    try:
        os.makedirs(os.path.join(tmp, task))
        for name in os.listdir(src):
            if name not in ("train_10.json", "train.json"):
                os.symlink(os.path.join(src, name), os.path.join(tmp, task, name))
        top = os.path.abspath(args.data_dir)
        for name in os.listdir(top):  # gt_test.json, the BERT vocab the scorer reads, ...
            if os.path.isfile(os.path.join(top, name)):
                os.symlink(os.path.join(top, name), os.path.join(tmp, name))
        with open(os.path.join(tmp, task, "train_10.json"), "w", encoding="utf-8") as f:
            json.dump(subset, f, indent=1)
        os.rename(tmp, args.out)
    except OSError as e:
        shutil.rmtree(tmp, ignore_errors=True)
        sys.exit(f"subsample-split: --out {args.out}: {e}")
    full, sub = spans_per_type(examples), spans_per_type(subset)
    print(f"{task}: {args.keep} of {len(examples)} train_10 examples (seed {args.seed}) -> "
          f"{args.out}")
    print("raw labels per slot type (subset / train_10): " + ", ".join(
        f"{s} {sub[s]}/{full[s]}" for s in sorted(full, key=lambda s: (full[s], s))))


if __name__ == "__main__":
    main()
