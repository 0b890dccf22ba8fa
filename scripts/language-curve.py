#!/usr/bin/python3
"""Puts fine-tuned few-shot val scores on a pretraining run's curves (docs/results.md "Which
language stage teaches the encoder more per CPU-minute?").

`dialtree plot --x minutes` draws a run's `eval_*` keys against its `train_seconds`. This script
reads RUN_DIR's metrics (metrics-with-train-seconds.jsonl where scripts/add-train-seconds.py
wrote one, else metrics.jsonl; neither is changed) and writes OUT_DIR/metrics.jsonl (so that
`dialtree plot OUT_DIR ...` names the curve after OUT_DIR): every record as it was, plus one
evaluation record per STEP=RESULTS given, at that step (after the run's last record of that
step), with the train_seconds of the run's
training record of that step (0 at step 0), and

  eval_finetuned_val_<task>_accuracy   the val score, mean over the fine-tuning seeds found
                                       (over those of --seeds only, when given)
  eval_finetuned_val_mean_accuracy     the mean of those over the tasks (only when every task
                                       has a score, so that one point means one set of tasks)

for each task of --tasks. RESULTS is a folder of `dialtree eval dialoglue --out` results, read
as scripts/stage-table.py reads one (RESULTS/results.json and RESULTS/*/results.json), e.g.
runs/lang/NAME/eval-few-random from scripts/language-stage.sh; at step 0, the encoder before
any training, `eval dialoglue --from-scratch` gives it. STEP is a step of the run, or `final`
for its last step. A step without a training record, a task with no score or a missing folder
is an error that names it.

usage: scripts/language-curve.py RUN_DIR OUT_DIR STEP=RESULTS [STEP=RESULTS ...]
           [--tasks banking,hwu] [--seeds 1,2,3]
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
    ap.add_argument("out_dir")
    ap.add_argument("points", nargs="+", metavar="STEP=RESULTS")
    ap.add_argument("--tasks", default="banking,hwu")
    ap.add_argument("--seeds", default="", help="only these fine-tuning seeds (default: all)")
    a = ap.parse_args()
    tasks = a.tasks.split(",")
    try:
        seeds = {int(x) for x in a.seeds.split(",")} if a.seeds else None
    except ValueError:
        sys.exit(f"language-curve: --seeds '{a.seeds}': expected integers separated by commas")
    path, records = read_metrics(a.run_dir)
    seconds = {0: 0.0}  # step -> train_seconds of its training record
    for r in records:
        if "examples_per_second" in r:
            if "train_seconds" not in r:
                sys.exit(f"language-curve: {path}: step {r.get('step')} has no train_seconds "
                         "(run scripts/add-train-seconds.py on the run first)")
            seconds[r["step"]] = r["train_seconds"]
    if len(seconds) == 1:
        sys.exit(f"language-curve: {path}: no training record")
    out = list(records)
    for point in a.points:
        step, sep, folder = point.partition("=")
        if not sep or not folder:
            sys.exit(f"language-curve: '{point}': expected STEP=RESULTS")
        step = max(seconds) if step == "final" else int(step)
        if step not in seconds:
            sys.exit(f"language-curve: {path}: no training record at step {step}")
        if not os.path.isdir(folder):
            sys.exit(f"language-curve: {folder}: no such folder")
        rec = {"step": step, "train_seconds": seconds[step]}
        scores = {}
        for task in tasks:
            _, vals = stage_table.finetuned(folder, "", task)
            if seeds is not None:
                vals = {k: v for k, v in vals.items() if k in seeds}
            if not vals:
                sys.exit(f"language-curve: {folder}: no {task} result"
                         + (f" of seeds {a.seeds}" if seeds is not None else ""))
            scores[task] = statistics.fmean(vals.values()) / 100
            rec[f"eval_finetuned_val_{task}_accuracy"] = scores[task]
        rec["eval_finetuned_val_mean_accuracy"] = statistics.fmean(scores.values())
        # After the last record of its step or an earlier one: the file's steps keep rising.
        at = max((i + 1 for i, r in enumerate(out) if r.get("step", 0) <= step), default=0)
        out.insert(at, rec)
        print(f"step {step} ({seconds[step] / 60:.1f} min): " +
              ", ".join(f"{t} {100 * s:.2f}" for t, s in scores.items()) +
              f", mean {100 * rec['eval_finetuned_val_mean_accuracy']:.2f}")
    os.makedirs(a.out_dir, exist_ok=True)
    target = os.path.join(a.out_dir, "metrics.jsonl")
    tmp = target + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        for r in out:
            f.write(json.dumps(r) + "\n")
    os.replace(tmp, target)
    print(target)


if __name__ == "__main__":
    main()
