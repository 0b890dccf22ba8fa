#!/usr/bin/python3
"""The table of a stage comparison: scripts/tree-stage.sh (docs/results.md "Does SPACE-2's tree
help where the tree has branches?") and scripts/language-stage.sh (docs/results.md "Which
language stage teaches the encoder more per CPU-minute?"). Per row, the frozen-vector probe on
val and test (the [CLS] intent probe of banking / clinc / hwu and the token-level probe of
restaurant8k / dstc8 / TOP) and the fine-tuned few-shot test scores (mean ± sample std over
fine-tuning seeds, seeds in brackets, val mean after the slash).

usage: scripts/stage-table.py NAME=DIR [NAME=DIR ...]

DIR holds what those scripts write: probe-val.json and probe-test.json (`dialtree eval probe
--out`), and eval-few/<task>*/results.json (`dialtree eval dialoglue --out`; several folders of
one task, e.g. seed 1 and seeds 2-3, are merged by seed). A missing file leaves its cells "–".
Prints a Markdown table.
"""

import glob
import json
import os
import statistics
import sys

INTENT = ["banking", "clinc", "hwu"]
TAGGING = ["restaurant8k", "dstc8", "top"]
FOLDER = {"dstc8": "dstc8"}  # eval-few/<task> as tree-stage.sh names it


def probe(path):
    """task -> score (percent) of one probe report, or {} when the file is missing."""
    if not os.path.exists(path):
        return {}
    with open(path, encoding="utf-8") as f:
        report = json.load(f)
    out = {r["task"]: 100 * r["lr_standardized_accuracy"]["mean"] for r in report.get("rows", [])}
    out.update({r["task"]: 100 * r["score"] for r in report.get("tag_rows", [])})
    return out


def finetuned(folder, task):
    """(test scores by seed, val scores by seed) of every results.json of `task` in `folder`."""
    tests, vals = {}, {}
    for path in sorted(glob.glob(os.path.join(folder, "eval-few", FOLDER.get(task, task) + "*",
                                              "results.json"))):
        with open(path, encoding="utf-8") as f:
            results = json.load(f)
        for name, t in results["tasks"].items():
            if name.replace("_sgd", "") != task:
                continue
            for run in t["runs"]:
                tests[run["seed"]] = run["test"]
                vals[run["seed"]] = run["val"]
    return tests, vals


def cell(tests, vals):
    if not tests:
        return "–"
    xs = [tests[s] for s in sorted(tests)]
    v = statistics.mean(vals[s] for s in sorted(vals))
    if len(xs) == 1:
        return f"{xs[0]:.2f} (1) / {v:.2f}"
    return f"{statistics.mean(xs):.2f} ± {statistics.stdev(xs):.2f} ({len(xs)}) / {v:.2f}"


def main():
    rows = [a.split("=", 1) for a in sys.argv[1:]]
    if not rows or any(len(r) != 2 for r in rows):
        sys.exit(__doc__)
    tasks = INTENT + TAGGING
    print("**Probe, val / test** ([CLS] accuracy for intents; slot F1, TOP exact match)\n")
    print("| row | " + " | ".join(tasks) + " | intent mean | tagging mean |")
    print("|---|" + "---|" * (len(tasks) + 2))
    for name, folder in rows:
        val = probe(os.path.join(folder, "probe-val.json"))
        test = probe(os.path.join(folder, "probe-test.json"))
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
    print("\n**Fine-tuned few-shot, test mean ± std (seeds) / val mean**\n")
    print("| row | " + " | ".join(tasks) + " |")
    print("|---|" + "---|" * len(tasks))
    for name, folder in rows:
        print(f"| {name} | " + " | ".join(cell(*finetuned(folder, t)) for t in tasks) + " |")


if __name__ == "__main__":
    main()
