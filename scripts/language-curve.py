#!/usr/bin/python3
"""Puts fine-tuned few-shot val scores on a pretraining run's curves (docs/results.md "Which
language stage teaches the encoder more per CPU-minute?").

`dialtree plot --x minutes` draws a run's `eval_*` keys against its `train_seconds`. This script
reads RUN_DIR's metrics (metrics-with-train-seconds.jsonl where scripts/add-train-seconds.py
wrote one, else metrics.jsonl; neither is changed) and writes RUN_DIR/metrics-with-finetuned.jsonl:
every record as it was, plus one evaluation record per STEP=DIR given, at that step, with the
train_seconds of the run's training record of that step, and

  eval_finetuned_val_<task>_accuracy   the val score, mean over the fine-tuning seeds found
  eval_finetuned_val_mean_accuracy     the mean of those over the tasks (only when every task
                                       has a score, so that one point means one set of tasks)

for each task of --tasks. DIR is a scripts/language-stage.sh row (runs/lang/NAME), read as
scripts/stage-table.py reads it (DIR/EVAL_DIR/**/results.json). STEP is a step of the run, or
`final` for its last step. A step without a training record, a task with no score or a
missing folder is an error that names it.

usage: scripts/language-curve.py RUN_DIR STEP=DIR [STEP=DIR ...]
           [--tasks banking,hwu] [--eval-dir eval-few-random]
Prints, per step, the minutes and the scores it wrote.
"""

import argparse
import importlib.util
import json
import os
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
_spec = importlib.util.spec_from_file_location("stage_table", os.path.join(HERE, "stage-table.py"))
stage_table = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(stage_table)


def read_metrics(run_dir):
    """(path, records) of the run's metrics, preferring the file with train_seconds."""
    for name in ("metrics-with-train-seconds.jsonl", "metrics.jsonl"):
        path = os.path.join(run_dir, name)
        if os.path.exists(path):
            with open(path, encoding="utf-8") as f:
                return path, [json.loads(line) for line in f if line.strip()]
    sys.exit(f"language-curve: {run_dir}: no metrics.jsonl")


def main():
    ap = argparse.ArgumentParser(usage=__doc__.split("usage: ")[1].split("\n\n")[0])
    ap.add_argument("run_dir")
    ap.add_argument("points", nargs="+", metavar="STEP=DIR")
    ap.add_argument("--tasks", default="banking,hwu")
    ap.add_argument("--eval-dir", default="eval-few-random")
    a = ap.parse_args()
    tasks = a.tasks.split(",")
    path, records = read_metrics(a.run_dir)
    seconds = {}  # step -> train_seconds of its training record
    for r in records:
        if "examples_per_second" in r:
            if "train_seconds" not in r:
                sys.exit(f"language-curve: {path}: step {r.get('step')} has no train_seconds "
                         "(run scripts/add-train-seconds.py on the run first)")
            seconds[r["step"]] = r["train_seconds"]
    if not seconds:
        sys.exit(f"language-curve: {path}: no training record")
    out = list(records)
    for point in a.points:
        step, sep, folder = point.partition("=")
        if not sep or not folder:
            sys.exit(f"language-curve: '{point}': expected STEP=DIR")
        step = max(seconds) if step == "final" else int(step)
        if step not in seconds:
            sys.exit(f"language-curve: {path}: no training record at step {step}")
        if not os.path.isdir(os.path.join(folder, a.eval_dir)):
            sys.exit(f"language-curve: {folder}: no {a.eval_dir}/ folder")
        rec = {"step": step, "train_seconds": seconds[step]}
        scores = {}
        for task in tasks:
            _, vals = stage_table.finetuned(folder, a.eval_dir, task)
            if not vals:
                sys.exit(f"language-curve: {folder}/{a.eval_dir}: no {task} result")
            scores[task] = statistics.fmean(vals.values()) / 100
            rec[f"eval_finetuned_val_{task}_accuracy"] = scores[task]
        rec["eval_finetuned_val_mean_accuracy"] = statistics.fmean(scores.values())
        out.append(rec)
        print(f"step {step} ({seconds[step] / 60:.1f} min): " +
              ", ".join(f"{t} {100 * s:.2f}" for t, s in scores.items()) +
              f", mean {100 * rec['eval_finetuned_val_mean_accuracy']:.2f}")
    target = os.path.join(a.run_dir, "metrics-with-finetuned.jsonl")
    tmp = target + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        for r in out:
            f.write(json.dumps(r) + "\n")
    os.replace(tmp, target)
    print(target)


if __name__ == "__main__":
    main()
