#!/usr/bin/env python3
"""The fine-tuned table of docs/results.md from `dialtree eval dialoglue` results.

Reads ROOT/<row>/<sub>/<task>-s<seed>/results.json (one task and seed per run, as the job queue
of docs/results.md "How to reproduce" writes them) and prints one Markdown row per pretraining
row: test accuracy per task as mean ± sample std over the seeds found, the seeds in brackets,
and the TF-IDF baseline from bench/reference/tfidf_baseline.py's JSON in the same table.

usage: scripts/fewshot-table.py [--root runs/fewshot] [--sub lr3e-4] [--tfidf runs/tfidf.json]
                                [--rows a,f,s,h]
"""
import argparse
import json
import math
import pathlib
import re
import sys

TASKS = ["banking", "clinc", "hwu"]
NAMES = {
    "a": "(a) no pretraining",
    "f": "(f) language stage (MLM only)",
    "s": "(s) language stage + SPACE-2 stage 1",
    "h": "(h) language + SPACE-2 + intent stage (main job)",
    "f12k": "(f12k) language stage, 12,000 steps",
    "h12k": "(h12k) f12k + SPACE-2 stage 1 + intent stage",
    "s12k": "(s12k) f12k + SPACE-2 stage 1",
    "i12k": "(i12k) f12k + intent stage (no stage 1)",
    "il": "(i12k) + LP-FT start",
    "fl": "(f12k) + LP-FT start",
    "p30": "(p12k) f12k + pseudo-labelled intent stage, + LP-FT start",
    "r2": "(p12k, round 2) pseudo-labels from (p12k), 60 per intent, + LP-FT start",
    "p30lr1": "(p12k) + LP-FT start, fine-tuned at lr 1e-4",
    "p30rand": "(p12k), random classifier start",
    "ilong": "(i12k-long) f12k + intent stage for 23 epochs, + LP-FT start",
    "t30": "(t12k) f12k + intent stage on labels from fine-tuned (p12k) teachers, 30 per intent, + LP-FT start",
    "pst": "(p12k) + self-training fine-tune: train_10 + 30 per intent labelled by fine-tuned (p12k) teachers, 15 epochs, LP-FT start",
    "fst": "(f12k) + self-training fine-tune: train_10 + 30 per intent labelled by fine-tuned (f12k) teachers, 15 epochs",
    "pst25": "(p12k) + self-training fine-tune as (pst), 25 epochs, patience 6",
    "fst25": "(f12k) + self-training fine-tune as (fst), 25 epochs, patience 6",
    "pst25d3": "(pst25) at dropout 0.3 (SPACE-2's hwu value)",
    "pst25n60": "(pst25) with 60 pseudo-labels per intent instead of 30",
    "fst25n60": "(fst25) with 60 pseudo-labels per intent, from (f12k)'s teachers",
    "pst25r2": "(pst25), second round: labelled by (pst25)'s fine-tuned seed 1 instead of (p12k)'s",
    "tf": "(f12k) seed-1 teachers (re-run with --save-models)",
    "o30": "(o30) as (p12k), each pseudo-label replaced by its train.csv label (diagnostic: reads train's labels, not few-shot)",
    "ofull": "(ofull) f12k + intent stage on every train.csv label of the three tasks, 546 steps as (p12k) (diagnostic: not few-shot)",
}


def cell(scores, runs=None):
    """mean ± std (n); with `runs`, each seed's test (val, best epoch / epochs run) after it."""
    if not scores:
        return "–"
    mean = sum(scores) / len(scores)
    if len(scores) == 1:
        text = f"{mean:.2f} (1)"
    else:
        std = math.sqrt(sum((s - mean) ** 2 for s in scores) / (len(scores) - 1))
        text = f"{mean:.2f} ± {std:.2f} ({len(scores)})"
    if runs:
        text += ": " + ", ".join(
            f"s{r['seed']} {r['test']:.2f} (val {r['val']:.2f}, best {r['best_epoch']}/{len(r['curve'])})"
            for r in sorted(runs, key=lambda r: r["seed"]))
    return text


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--root", default="runs/fewshot")
    p.add_argument("--sub", default="lr3e-4")
    p.add_argument("--tfidf", default="runs/tfidf.json")
    p.add_argument("--rows", default="a,f,s,h")
    p.add_argument("--detail", action="store_true",
                   help="after each cell, every seed's test (val, best epoch / epochs run)")
    p.add_argument("--write", default="",
                   help="also write DIR/<row>/results.json: each row's tasks and seeds merged "
                        "into one results file, for `dialtree plot`")
    a = p.parse_args()
    root = pathlib.Path(a.root)
    print("| row | " + " | ".join(TASKS) + " |")
    print("|---|" + "---|" * len(TASKS))
    tfidf = pathlib.Path(a.tfidf)
    if tfidf.is_file():  # a list of results, one per feature set
        for r in json.loads(tfidf.read_text()):
            vals = [f"{r['tasks'][t]['mean']:.2f}" if t in r["tasks"] else "–" for t in TASKS]
            print(f"| TF-IDF {r['model']} + LR | " + " | ".join(vals) + " |")
    for row in a.rows.split(","):
        scores = {task: [] for task in TASKS}
        runs = {task: [] for task in TASKS}
        merged = None
        for res in sorted((root / row / a.sub).glob("*-s*/results.json")):
            m = re.fullmatch(r"(\w+)-s(\d+)", res.parent.name)
            if not m or m.group(1) not in scores:
                continue
            r = json.loads(res.read_text())
            task = r["tasks"][m.group(1)]
            for run in task["runs"]:
                scores[m.group(1)].append(run["test"])
                runs[m.group(1)].append(run)
            if merged is None:
                merged = dict(r, tasks={}, seeds=[])
            into = merged["tasks"].setdefault(m.group(1), dict(task, runs=[]))
            into["runs"] += task["runs"]
            tests = [x["test"] for x in into["runs"]]
            into["mean"] = sum(tests) / len(tests)
            into["std"] = (math.sqrt(sum((x - into["mean"]) ** 2 for x in tests) / (len(tests) - 1))
                           if len(tests) > 1 else 0.0)
            vals = [x["val"] for x in into["runs"]]
            into["val_mean"] = sum(vals) / len(vals)
            merged["seeds"] = sorted(set(merged["seeds"]) | {x["seed"] for x in task["runs"]})
        print(f"| {NAMES.get(row, row)} | " + " | ".join(cell(scores[t], runs[t] if a.detail else None) for t in TASKS) + " |")
        if a.write and merged is not None:
            out = pathlib.Path(a.write) / row
            out.mkdir(parents=True, exist_ok=True)
            (out / "results.json").write_text(json.dumps(merged, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
