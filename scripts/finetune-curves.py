#!/usr/bin/python3
"""How fast fine-tuning reaches its val score, per row: the best val score reached by each epoch
(docs/results.md "Where fine-tuning erases the token stage's lead"), from the val curves that
`dialtree eval dialoglue` keeps in results.json (docs/evaluation.md "Early stopping").

    scripts/finetune-curves.py --task TASK [--epochs 1,5,10,20,40,60] NAME=FOLDER[+FOLDER...] ...

A FOLDER is a results folder of `dialtree eval dialoglue --out` (its results.json); a row of
several FOLDERs joined by "+" pools pretraining runs of one recipe. For each row and listed epoch
the first table gives the best val score reached by that epoch, mean over the row's runs (every
FOLDER and fine-tuning seed), then the runs' mean best epoch and how many runs had their best
epoch where early stopping could not have ended them (best epoch > num_train_epochs -
early_stopping_patience): there the epoch cap, not the curve, ended training. A run that stopped
early keeps its best score for the later epochs (what the stopped run delivers).

With two rows of as many FOLDERs, a second table gives the first row minus the second per pair
of FOLDERs (the k-th of each, over their common seeds), then the mean over the pairs: each
pretraining run weighed once.

With --patience P[,P...], a last table replays early stopping on each run's curve as `dialtree
eval dialoglue` applies it (docs/evaluation.md "Early stopping": stop once P epochs after the
warm-up's have not beaten the best; 0 = off) and gives, per row and P, the val score and the
epochs the run would have delivered, mean over the runs whose curve decides it. A curve decides P
when the replay stops inside it or the run reached num_train_epochs; a run stopped earlier by a
smaller patience cannot say what a larger one would have done, and is counted as undecided. The
test score is known only where the replay keeps the run's own best epoch (the model test was
scored with): its mean is over those runs, their number in brackets.

Exits 1 naming the row or file on a malformed row, a FOLDER without results.json or without the
task, or rows of different settings (2 on bad options, as argparse does).
"""

import argparse
import json
import os
import statistics
import sys

from dialoglue_tasks import folder_name


def task_runs(folder, task):
    """(runs of task in folder/results.json as {seed: run}, options). Exits 1 naming the file."""
    path = os.path.join(folder, "results.json")
    try:
        with open(path, encoding="utf-8") as f:
            results = json.load(f)
    except (OSError, ValueError) as e:
        sys.exit(f"finetune-curves: {path}: {e}")
    key = folder_name(task)
    if key not in results.get("tasks", {}):
        sys.exit(f"finetune-curves: {path}: no task '{task}' (it has "
                 f"{', '.join(sorted(results.get('tasks', {}))) or 'none'})")
    runs = {r["seed"]: r for r in results["tasks"][key]["runs"]}
    # The task's recipe: options with its task_options (docs/evaluation.md "Per-task options").
    options = dict(results.get("options", {}), **results.get("task_options", {}).get(key, {}))
    return runs, dict(options, setting=results.get("setting"))


def best_by(run, epoch):
    """The best val score of run's curve up to and including epoch (the last one if it stopped
    earlier)."""
    return max(p["val"] for p in run["curve"] if p["epoch"] <= epoch)


def capped(run, options):
    """Whether run's best epoch lies where early stopping could not have ended it."""
    return run["best_epoch"] > options["num_train_epochs"] - options["early_stopping_patience"]


def replay(run, options, patience):
    """(best val, epochs run, best epoch) had `run` been early-stopped with `patience` (0 = off),
    or None where its curve ends before that is decided (it stopped earlier, by a smaller
    patience).
    Epochs that end inside the warm-up (epoch <= warmup_ratio x num_train_epochs) do not count
    towards the patience, as in eval/finetune.cpp."""
    cap = options["num_train_epochs"]
    warm = options.get("warmup_ratio", 0.0) * cap
    best, best_epoch, since = None, 0, 0
    for point in run["curve"]:
        if best is None or point["val"] > best:
            best, best_epoch, since = point["val"], point["epoch"], 0
        elif point["epoch"] > warm:
            since += 1
        if patience > 0 and since >= patience:
            return best, point["epoch"], best_epoch
    last = run["curve"][-1]["epoch"] if run["curve"] else 0
    return (best, last, best_epoch) if last >= cap else None


def int_list(flag, text, minimum, rule):
    """The comma-separated integers of option `flag` (none for ""), each >= minimum; exits 1
    naming the option, with `rule` when one is too small."""
    try:
        values = [int(v) for v in text.split(",")] if text else []
    except ValueError:
        sys.exit(f"finetune-curves: {flag} {text!r}: not a list of integers")
    if any(v < minimum for v in values):
        sys.exit(f"finetune-curves: {flag} {text!r}: {rule}")
    return values


def print_replay(task, rows, patiences):
    """The --patience table: per row and patience, replay() over the row's runs."""
    print(f"\n**{task}: early stopping replayed on the curves** (mean over the runs the "
          "curve decides)\n")
    print("| row | patience | runs decided | best val | epochs run | test (runs) |")
    print("|---|---|---|---|---|---|")
    for name, loaded in rows:
        runs = [(r, o) for runs, o in loaded for r in runs.values()]
        for p in patiences:
            got = [(r, g) for r, g in ((r, replay(r, o, p)) for r, o in runs) if g is not None]
            tests = [r["test"] for r, g in got if g[2] == r["best_epoch"] and "test" in r]
            cells = ([f"{statistics.mean(g[0] for _, g in got):.2f}",
                      f"{statistics.mean(g[1] for _, g in got):.1f}"] if got else ["–", "–"])
            cells.append(f"{statistics.mean(tests):.2f} ({len(tests)})" if tests else "–")
            print(f"| {name} | {p if p > 0 else 'off'} | {len(got)} of {len(runs)} | " +
                  " | ".join(cells) + " |")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--task", required=True)
    ap.add_argument("--epochs", default="1,5,10,20,40,60",
                    help="the epochs of the columns, comma-separated (default 1,5,10,20,40,60)")
    ap.add_argument("--patience", default="",
                    help="early-stopping patiences to replay on the curves, comma-separated "
                         "(0 = off); default none")
    ap.add_argument("rows", nargs="+", metavar="NAME=FOLDER[+FOLDER...]")
    args = ap.parse_args()
    patiences = int_list("--patience", args.patience, 0, "a patience is >= 0 (0 = off)")
    epochs = int_list("--epochs", args.epochs, 1, "epochs count from 1")
    if not epochs:
        sys.exit("finetune-curves: --epochs '': not a list of integers")

    rows, settings = [], {}
    for spec in args.rows:
        name, sep, folders = spec.partition("=")
        parts = folders.split("+")
        if not sep or not name or any(not p for p in parts):
            sys.exit(f"finetune-curves: row {spec!r}: expected NAME=FOLDER[+FOLDER...]")
        loaded = [task_runs(p, args.task) for p in parts]
        for p, (_, options) in zip(parts, loaded):
            settings.setdefault(options["setting"], p)
        rows.append((name, loaded))
    if len(settings) > 1:
        sys.exit("finetune-curves: rows of two settings: " +
                 ", ".join(f"{s} in {p}" for s, p in sorted(settings.items(), key=str)))

    print(f"**{args.task}: best val reached by epoch** (mean over runs)\n")
    print("| row | runs | " + " | ".join(f"≤ {e}" for e in epochs) +
          " | best epoch | best epoch past the patience window |")
    print("|---|---|" + "---|" * (len(epochs) + 2))
    for name, loaded in rows:
        runs = [(r, o) for runs, o in loaded for r in runs.values()]
        cells = [f"{statistics.mean(best_by(r, e) for r, _ in runs):.2f}" for e in epochs]
        best = statistics.mean(r["best_epoch"] for r, _ in runs)
        caps = sum(capped(r, o) for r, o in runs)
        print(f"| {name} | {len(runs)} | " + " | ".join(cells) +
              f" | {best:.1f} | {caps} of {len(runs)} |")

    if len(rows) == 2 and len(rows[0][1]) == len(rows[1][1]):
        (a_name, a), (b_name, b) = rows
        print(f"\n**{a_name} minus {b_name}, per pretraining run** (over common seeds), "
              "and their mean\n")
        print("| by epoch | " + " | ".join(f"run {k + 1}" for k in range(len(a))) + " | mean |")
        print("|---|" + "---|" * (len(a) + 1))
        for e in epochs:
            gaps = []
            for (ra, _), (rb, _) in zip(a, b):
                seeds = sorted(set(ra) & set(rb))
                if not seeds:
                    sys.exit("finetune-curves: a pair of folders has no seed in common")
                gaps.append(statistics.mean(best_by(ra[s], e) - best_by(rb[s], e) for s in seeds))
            print(f"| ≤ {e} | " + " | ".join(f"{g:+.2f}" for g in gaps) +
                  f" | {statistics.mean(gaps):+.2f} |")

    if patiences:
        print_replay(args.task, rows, patiences)

if __name__ == "__main__":
    main()
