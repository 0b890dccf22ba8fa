#!/usr/bin/python3
"""How far a score can move from sampling alone: draws of n test examples (without replacement)
from one prediction file, each scored by `dialtree eval score` with DialoGLUE's rules, and the
spread of those scores. Used in docs/results.md to ask whether a val/test disagreement is larger
than what a val split of val's size shows by chance.

usage: scripts/split-noise.py --task dstc8 --predictions runs/eval-few-tokens/dstc8_sgd/seed-1/test_predictions.json
           --n 602 [--draws 200] [--seed 0] [--gold gt_test.json] [--dialtree build/cli/dialtree]

Prints the full-set score, then the mean, sample std, 5th and 95th percentile of the draws.
"""

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile

from dialoglue_tasks import dialoglue_name

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))


def score(dialtree, task, preds, gold, work):
    p, g = os.path.join(work, "p.json"), os.path.join(work, "g.json")
    with open(p, "w", encoding="utf-8") as f:
        json.dump(preds, f)
    with open(g, "w", encoding="utf-8") as f:
        json.dump({task: gold}, f)  # an answer-key object, as gt_test.json
    out = subprocess.run([dialtree, "eval", "score", "--task", task, "--predictions", p,
                          "--gold", g, "--json"], capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"error: dialtree eval score failed: {out.stderr.strip()}")
    return json.loads(out.stdout)["score"]


def load_json(path, what):
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except (OSError, ValueError) as e:
        sys.exit(f"error: {what} {path}: {e}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--task", required=True)
    parser.add_argument("--predictions", required=True, help="a DialoGLUE list in test order")
    parser.add_argument("--n", type=int, required=True, help="examples per draw")
    parser.add_argument("--draws", type=int, default=200)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--gold", default=os.environ.get("DIALTREE_DATA", os.path.join(
        ROOT, "../shared/data/dialoglue")) + "/gt_test.json")
    parser.add_argument("--dialtree", default=os.path.join(ROOT, "build/cli/dialtree"))
    args = parser.parse_args()
    task = dialoglue_name(args.task)
    if args.draws < 2:
        sys.exit("error: --draws must be at least 2 (a spread needs two draws)")
    preds = load_json(args.predictions, "--predictions")
    if isinstance(preds, dict):  # a submission object holding the task's list
        preds = preds.get(task)
    gold = load_json(args.gold, "--gold")
    if not isinstance(gold, dict) or task not in gold:
        sys.exit(f"error: --gold {args.gold}: no list for task '{task}' (the answer key "
                 "gt_test.json has banking, clinc, hwu, restaurant8k, dstc8, top)")
    gold = gold[task]
    if not isinstance(preds, list):
        sys.exit(f"error: --predictions {args.predictions}: no prediction list for '{task}'")
    if len(preds) != len(gold):
        sys.exit(f"error: {args.predictions}: {len(preds)} predictions for {len(gold)} examples")
    if not 0 < args.n <= len(gold):
        sys.exit(f"error: --n must be in [1, {len(gold)}]")
    rng = random.Random(args.seed)
    with tempfile.TemporaryDirectory() as work:
        full = score(args.dialtree, task, preds, gold, work)
        scores = []
        for _ in range(args.draws):
            idx = sorted(rng.sample(range(len(gold)), args.n))
            scores.append(score(args.dialtree, task, [preds[i] for i in idx],
                                [gold[i] for i in idx], work))
    scores.sort()
    print(f"{task}: all {len(gold)} examples {full:.2f}; {args.draws} draws of {args.n}: "
          f"mean {statistics.fmean(scores):.2f}, std {statistics.stdev(scores):.2f}, "
          f"5-95 % {scores[int(0.05 * len(scores))]:.2f}-{scores[int(0.95 * len(scores)) - 1]:.2f}")


if __name__ == "__main__":
    main()
