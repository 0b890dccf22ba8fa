#!/usr/bin/python3
"""The table of a stage comparison: scripts/tree-stage.sh (docs/results.md "Does SPACE-2's tree
help where the tree has branches?") and scripts/language-stage.sh (docs/results.md "Which
language stage teaches the encoder more per CPU-minute?"). Per row, the frozen-vector probe on
val and test (the [CLS] intent probe of banking / clinc / hwu and the token-level probe of
restaurant8k / dstc8 / TOP) and the fine-tuned few-shot test scores (mean ± sample std over
fine-tuning seeds, seeds in brackets, val mean after the slash).

usage: scripts/stage-table.py [--eval-dir NAME] NAME=DIR[+DIR...] [NAME=DIR ...]

DIR holds what those scripts write: probe-val.json and probe-test.json (`dialtree eval probe
--out`), and the fine-tuning results under DIR/EVAL (`--eval-dir EVAL`, default eval-few;
language-stage.sh writes eval-few-random and eval-few-linear_probe): every results.json in EVAL
or one folder down (`dialtree eval dialoglue --out`), whichever tasks it holds. Runs of one task in several files,
e.g. seed 1 and seeds 2-3, are merged by seed; a seed found twice is an error. A missing file
leaves its cells "–". Prints a Markdown table.

A row of several DIRs joined by "+" pools pretraining runs of one recipe (scripts/tree-stage.sh
PRETRAIN_SEEDS): its probe cells are the mean over the DIRs that have the file, its fine-tuned
cells pool every (DIR, seed) run ("n runs, k encoders"), and a third table gives each such row's
spread between pretraining runs: the mean of the DIRs' means ± their sample std, the DIRs' means in
brackets, in the order given.
"""

import glob
import json
import os
import statistics
import sys

INTENT = ["banking", "clinc", "hwu"]
TAGGING = ["restaurant8k", "dstc8", "top"]


def probe(path):
    """task -> score (percent) of one probe report, or {} when the file is missing."""
    if not os.path.exists(path):
        return {}
    with open(path, encoding="utf-8") as f:
        report = json.load(f)
    out = {r["task"]: 100 * r["lr_standardized_accuracy"]["mean"] for r in report.get("rows", [])}
    out.update({r["task"]: 100 * r["score"] for r in report.get("tag_rows", [])})
    return out


# DialoGLUE setting ("few" or "full") -> a results.json that has it, of every file read: the
# fine-tuned table's heading names the setting, and a table of both settings is an error.
SETTINGS = {}
SETTING_NAMES = {"few": "few-shot", "full": "full data"}


def finetuned(folder, eval_dir, task):
    """(test scores by seed, val scores by seed) of `task` in every results.json of
    folder/eval_dir/ and of its subfolders. Exits naming both files when one seed is in two,
    or when two files hold different DialoGLUE settings."""
    tests, vals, where = {}, {}, {}
    root = os.path.join(folder, eval_dir)
    paths = [os.path.join(root, "results.json")] + glob.glob(os.path.join(root, "*", "results.json"))
    for path in sorted(p for p in paths if os.path.isfile(p)):
        with open(path, encoding="utf-8") as f:
            results = json.load(f)
        setting = results.get("setting")
        if setting is not None:
            SETTINGS.setdefault(setting, path)
            if len(SETTINGS) > 1:
                sys.exit("stage-table: one table of two settings: " +
                         ", ".join(f"{k} in {v}" for k, v in sorted(SETTINGS.items())))
        for name, t in results["tasks"].items():
            if name.replace("_sgd", "") != task:
                continue
            for run in t["runs"]:
                seed = run["seed"]
                if seed in where:
                    sys.exit(f"stage-table: {task} seed {seed} is in both {where[seed]} and {path}")
                where[seed] = path
                tests[seed] = run["test"]
                vals[seed] = run["val"]
    return tests, vals


def cell(tests, vals, encoders=1):
    """mean ± sample std (runs[, k encoders]) / val mean of the runs tests, vals (dicts by run)."""
    if not tests:
        return "–"
    xs = [tests[s] for s in sorted(tests)]
    v = statistics.mean(vals[s] for s in sorted(vals))
    runs = f"{len(xs)}" if encoders == 1 else f"{len(xs)} runs, {encoders} encoders"
    if len(xs) == 1:
        return f"{xs[0]:.2f} ({runs}) / {v:.2f}"
    return f"{statistics.mean(xs):.2f} ± {statistics.stdev(xs):.2f} ({runs}) / {v:.2f}"


def pooled(folders, eval_dir, task):
    """finetuned() of every folder, keyed by (folder index, seed), and the folders' test means
    (folders without runs of the task left out)."""
    tests, vals, means = {}, {}, []
    for i, folder in enumerate(folders):
        t, v = finetuned(folder, eval_dir, task)
        tests.update({(i, s): x for s, x in t.items()})
        vals.update({(i, s): x for s, x in v.items()})
        if t:
            means.append(statistics.mean(t.values()))
    return tests, vals, means


def probe_mean(folders, split):
    """task -> mean probe score over the folders whose probe-<split>.json has it."""
    by_task = {}
    for folder in folders:
        for task, score in probe(os.path.join(folder, f"probe-{split}.json")).items():
            by_task.setdefault(task, []).append(score)
    return {t: statistics.mean(xs) for t, xs in by_task.items()}


def main():
    args = sys.argv[1:]
    eval_dir = "eval-few"
    if args[:1] == ["--eval-dir"] and len(args) >= 2:
        eval_dir, args = args[1], args[2:]
    rows = [a.split("=", 1) for a in args]
    if not rows or any(len(r) != 2 for r in rows):
        sys.exit(__doc__)
    rows = [(name, dirs.split("+")) for name, dirs in rows]
    tasks = INTENT + TAGGING
    print("**Probe, val / test** ([CLS] accuracy for intents; slot F1, TOP exact match)\n")
    print("| row | " + " | ".join(tasks) + " | intent mean | tagging mean |")
    print("|---|" + "---|" * (len(tasks) + 2))
    for name, folders in rows:
        val = probe_mean(folders, "val")
        test = probe_mean(folders, "test")
        cells = [f"{val[t]:.2f} / {test[t]:.2f}" if t in val and t in test else "–"
                 for t in tasks]
        means = []
        for group in (INTENT, TAGGING):
            if all(t in val and t in test for t in group):
                means.append(f"{statistics.mean(val[t] for t in group):.2f} / "
                             f"{statistics.mean(test[t] for t in group):.2f}")
            else:
                means.append("–")
        print(f"| {name} | " + " | ".join(cells + means) + " |")
    lines = []
    for name, folders in rows:
        cells = []
        for t in tasks:
            tests, vals, means = pooled(folders, eval_dir, t)
            cells.append(cell(tests, vals, len(means)))
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    # The setting the results.json files give (files without one, e.g. hand-made: none named).
    setting = " ".join(SETTING_NAMES.get(k, k) for k in SETTINGS)
    print(f"\n**Fine-tuned{' ' + setting if setting else ''}, test mean ± std (seeds) / val mean**\n")
    print("| row | " + " | ".join(tasks) + " |")
    print("|---|" + "---|" * len(tasks))
    print("\n".join(lines))
    pooled_rows = [(name, folders) for name, folders in rows if len(folders) > 1]
    if pooled_rows:
        print("\n**Between pretraining runs, test: the mean of each encoder's mean ± their sample "
              "std (each encoder's mean)**\n")
        print("| row | " + " | ".join(tasks) + " |")
        print("|---|" + "---|" * len(tasks))
        for name, folders in pooled_rows:
            cells = []
            for t in tasks:
                means = pooled(folders, eval_dir, t)[2]
                if len(means) < 2:
                    cells.append("–")
                    continue
                each = ", ".join(f"{m:.2f}" for m in means)
                cells.append(f"{statistics.mean(means):.2f} ± {statistics.stdev(means):.2f} "
                             f"({each})")
            print(f"| {name} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
