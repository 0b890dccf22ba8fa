#!/usr/bin/python3
"""Per-slot-type F1 of several rows on one slot task (restaurant8k, dstc8), or TOP's exact match
broken down: where a row wins or loses (docs/results.md "What limits restaurant8k and TOP, and
where the token stage's dstc8 points come from").

    scripts/slot-types.py --task restaurant8k "NAME=SOURCE[+SOURCE...]" ...

A SOURCE is a DialoGLUE submission file (or a results folder holding submission.json; a few-shot
submission holds one run per fine-tuning seed) or a word-tag prediction file (*.jsonl, as
bench/reference/classical_baseline.py --predictions-dir keeps it). Every source is scored by
`dialtree eval score --json`, DialoGLUE's own scorer, so a row's overall cell equals the
scoreboard's; the script only pools the runs: each cell is the mean ± sample std of a slot type's
F1 over the row's runs (x100), the runs in brackets. A second table gives precision / recall.

--task top reads submissions only and prints, per row, the exact match (dialtree's, checked
against the same count here), the intent accuracy, the share of examples with every piece tag
right, and that share by the gold's slot count (0, 1, 2, 3 or more B- tags).

--label-counts (no rows) prints, from `dialtree eval words`, the labelled spans at DialoGLUE's word
level (B- tags; a raw label whose words do not match, docs/dialoglue.md §4 step 3, is not one)
per type in train_10 and test, and the median over test spans of their type's train_10 count:
how scarce the few-shot labels are where the test set scores.

--split-name-punct (restaurant8k) prints the tables again for two parts of the test set: the
examples where a capitalised word with trailing punctuation follows a word tagged first_name
("my name is Kimberley Babat?": DialoGLUE's answer key never labels a name word that carries
punctuation, so the gold leaves the last name out), and the rest. Examples outside a part are
blanked in the answer key and in every prediction (no span on either side), so each part is
scored by the same scorer. The parts come from `dialtree eval words --split test`. A type with no
gold span in a part is not scored there (DialoGLUE's types are the gold's): the punctuated part
has no last_name column, and the last-name false positives it holds count only in the table of
the whole test set.
Exits 1 naming the source when dialtree rejects it, 2 on a malformed row.
"""

import argparse
import collections
import json
import os
import statistics
import subprocess
import sys
import tempfile

from dialoglue_tasks import dialoglue_name, words_of

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def submission_path(source):
    """A source as a file: a results folder gives its submission.json."""
    return os.path.join(source, "submission.json") if os.path.isdir(source) else source


def name_punct_examples(words):
    """Indices of the examples (records of `dialtree eval words`) where a capitalised word ending
    in a character that is not a letter or digit follows a word tagged B-/I-first_name."""
    out = set()
    for k, ex in enumerate(words):
        w, t = ex["words"], ex["tags"]
        for i in range(1, len(w)):
            if (t[i - 1].endswith("first_name") and w[i][:1].isupper()
                    and not w[i][-1].isalnum()):
                out.add(k)
                break
    return out


def blanked(source, keep, task, work, tag):
    """A copy of source (a submission or word-tag file) in work with every example not in keep
    blanked: no span (submission) or all tags O (word tags)."""
    source = submission_path(source)
    path = os.path.join(work, f"{tag}-{len(os.listdir(work))}-{os.path.basename(source)}")
    if source.endswith(".jsonl"):
        with open(source, encoding="utf-8") as f:
            recs = [json.loads(line) for line in f if line.strip()]
        with open(path, "w", encoding="utf-8") as f:
            for k, rec in enumerate(recs):
                if k not in keep:
                    rec = dict(rec, tags=["O"] * len(rec["tags"]))
                f.write(json.dumps(rec) + "\n")
        return path
    with open(source, encoding="utf-8") as f:
        sub = json.load(f)

    def blank(preds):
        return [p if k in keep else [] for k, p in enumerate(preds)]

    def blank_task_list(runs):
        # A few-shot list holds runs (lists of span lists); a full one span lists (strings).
        few = any(isinstance(x, list) for r in runs for x in r)
        return [blank(r) for r in runs] if few else blank(runs)

    if isinstance(sub, dict):  # a submission object: the task's list under its key
        key = dialoglue_name(task)
        if key not in sub:
            sys.exit(f"slot-types: {source}: no '{key}' in the submission")
        sub = dict(sub, **{key: blank_task_list(sub[key])})
    else:  # the bare task list, of runs or of examples
        sub = blank_task_list(sub)
    with open(path, "w", encoding="utf-8") as f:
        json.dump(sub, f)
    return path


def score_runs(dialtree, task, source, data_dir, gold, label=None):
    """Scores one source with `dialtree eval score --json`; returns its runs: [{"score": x100,
    "slot_types" (slot tasks): [...]}, ...]. label: the name errors give (the user's source when
    source is a blanked copy)."""
    label = label or source
    source = submission_path(source)
    how = "--word-tags" if source.endswith(".jsonl") else "--predictions"
    cmd = [dialtree, "eval", "score", "--task", task, how, source, "--json", "--gold", gold]
    if how == "--word-tags":  # the words the tags belong to
        cmd += ["--data-dir", data_dir]
    p = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if p.returncode != 0:
        sys.exit(f"slot-types: {label}: dialtree eval score failed: {p.stderr.strip()}")
    out = json.loads(p.stdout)
    return out.get("runs", [out])


def top_runs(dialtree, source, gold_path):
    """TOP: each run of a submission source broken down into intent accuracy, tags exactly right,
    and tags exactly right by the gold's slot count (0, 1, 2, 3 or more B- tags), x100. The exact
    match recomputed here must equal dialtree's (a check that the breakdown reads the same
    lists the scorer does)."""
    if source.endswith(".jsonl"):
        sys.exit(f"slot-types: {source}: --task top reads submissions only (piece-level tags)")
    source = submission_path(source)
    scores = [r["score"] for r in score_runs(dialtree, "top", source, None, gold_path)]
    with open(gold_path, encoding="utf-8") as f:
        gold = json.load(f)["top"]
    with open(source, encoding="utf-8") as f:
        sub = json.load(f)
    runs = sub["top"] if isinstance(sub, dict) else sub
    # A full-data list holds [intent, [tags]] pairs; a few-shot one a list of such lists (runs).
    if runs and isinstance(runs[0][0], str):
        runs = [runs]
    out = []
    for run, score in zip(runs, scores):
        n = len(gold)
        buckets = {}
        for pred, g in zip(run, gold):
            b = min(sum(t.startswith("B-") for t in g[1]), 3)
            right, total = buckets.get(b, (0, 0))
            buckets[b] = (right + (pred[1] == g[1]), total + 1)
        em = 100 * sum(pred[0] == g[0] and pred[1] == g[1] for pred, g in zip(run, gold)) / n
        if abs(em - score) > 1e-6:
            sys.exit(f"slot-types: {source}: exact match {em} here against {score} from dialtree")
        out.append({"score": em,
                    "intent": 100 * sum(pred[0] == g[0] for pred, g in zip(run, gold)) / n,
                    "tags": 100 * sum(pred[1] == g[1] for pred, g in zip(run, gold)) / n,
                    "by_slots": {b: 100 * r / t for b, (r, t) in buckets.items()},
                    "counts": {b: t for b, (_, t) in buckets.items()}})
    return out


def print_top(rows):
    """The TOP breakdown table of rows [(name, runs of top_runs)]."""
    counts = rows[0][1][0]["counts"]
    names = {0: "no slot", 1: "1 slot", 2: "2 slots", 3: "3 or more"}
    print("top: exact match broken down (test, x100, mean ± sample std over runs): the intent "
          "right, every tag right, and every tag right by the gold's slot count (examples)\n")
    print("| row | exact match | intent | tags | " + " | ".join(
        f"tags, {names[b]} ({counts[b]})" for b in sorted(counts)) + " |")
    print("|---|---|---|---|" + "---|" * len(counts))
    for name, runs in rows:
        print(f"| {name} | {cell([r['score'] for r in runs])} | "
              f"{cell([r['intent'] for r in runs])} | {cell([r['tags'] for r in runs])} | "
              + " | ".join(cell([r["by_slots"][b] for r in runs]) for b in sorted(counts)) + " |")


def print_label_counts(dialtree, task, data_dir):
    """Labelled spans (B- tags) per type in train_10 and test, rarest in train_10 first, and the
    median train_10 count of a test span's type."""
    with tempfile.TemporaryDirectory(prefix="slot-types-") as work:
        train, test = (collections.Counter(t[2:] for ex in words_of(dialtree, task, split,
                                                                     data_dir, work)
                                           for t in ex["tags"] if t.startswith("B-"))
                       for split in ("train_10", "test"))
    per_span = sorted(train[t] for t in test.elements())
    rare = sum(n for t, n in test.items() if train[t] <= 10)
    print(f"{task}: labelled spans per type, train_10 / test (rarest in train_10 first)\n")
    print(", ".join(f"{t} {train[t]}/{test[t]}" for t in sorted(
        set(train) | set(test), key=lambda t: (train[t], t))))
    print(f"\n{len(test)} types in test; a test span's type has a median of "
          f"{per_span[len(per_span) // 2]} train_10 spans; {100 * rare / len(per_span):.1f} % of "
          "the test spans are of a type with 10 or fewer")


def cell(values, digits=2):
    """'mean ± std (n)', or 'mean (1)' for one value."""
    if not values:
        return "–"
    m = statistics.mean(values)
    if len(values) == 1:
        return f"{m:.{digits}f} (1)"
    return f"{m:.{digits}f} ± {statistics.stdev(values):.{digits}f} ({len(values)})"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
    ap.add_argument("--task", required=True, choices=("restaurant8k", "dstc8", "dstc8_sgd", "top"))
    ap.add_argument("--dialtree", default=os.path.join(ROOT, "build", "cli", "dialtree"))
    ap.add_argument("--data-dir", default=os.environ.get("DIALTREE_DATA", os.path.join(
        ROOT, "..", "shared", "data", "dialoglue")),
                    help="DialoGLUE folder (default: $DIALTREE_DATA, else "
                    "../shared/data/dialoglue)")
    ap.add_argument("--gold", help="the answer key (default: DATA_DIR/gt_test.json)")
    ap.add_argument("--split-name-punct", action="store_true",
                    help="also score the examples with a punctuated word after a first name, "
                    "and the rest, apart (restaurant8k)")
    ap.add_argument("--label-counts", action="store_true",
                    help="print the labelled spans per type of train_10 and test (no rows)")
    ap.add_argument("rows", nargs="*", metavar="NAME=SOURCE[+SOURCE...]")
    args = ap.parse_args()
    if not (os.path.isfile(args.dialtree) and os.access(args.dialtree, os.X_OK)):
        ap.error(f"--dialtree {args.dialtree}: no such executable (build dialtree first)")
    if args.split_name_punct and args.task != "restaurant8k":
        ap.error("--split-name-punct is for restaurant8k")
    if args.label_counts:
        if args.rows or args.split_name_punct:
            ap.error("--label-counts takes no rows and no --split-name-punct")
        print_label_counts(args.dialtree, args.task, args.data_dir)
        return
    if not args.rows:
        ap.error("give at least one row NAME=SOURCE[+SOURCE...] (or --label-counts)")
    args.gold = args.gold or os.path.join(args.data_dir, "gt_test.json")
    specs = []
    for spec in args.rows:
        name, sep, sources = spec.partition("=")
        if not sep or not name or not sources:
            ap.error(f"row '{spec}': expected NAME=SOURCE[+SOURCE...]")
        if "|" in name:
            ap.error(f"row '{spec}': a row name cannot hold '|' (a Markdown cell)")
        parts = sources.split("+")
        if "" in parts:
            ap.error(f"row '{spec}': an empty source (a '+' at an end or doubled)")
        if len(set(parts)) != len(parts):
            ap.error(f"row '{spec}': a source given twice would count its runs twice")
        specs.append((name, parts))

    def rows_of(keep=None, work=None, gold=args.gold):
        rows = []
        for name, sources in specs:
            runs = []
            for source in sources:
                scored = source
                if keep is not None:
                    scored = blanked(source, keep, args.task, work, "pred")
                runs += score_runs(args.dialtree, args.task, scored, args.data_dir, gold, source)
            rows.append((name, runs))
        return rows

    if args.task == "top":
        print_top([(name, [r for source in sources for r in top_runs(args.dialtree, source,
                                                                     args.gold)])
                   for name, sources in specs])
        return
    print_tables(args.task, "", rows_of())
    if not args.split_name_punct:
        return
    with tempfile.TemporaryDirectory(prefix="slot-types-") as work:
        words = words_of(args.dialtree, args.task, "test", args.data_dir, work)
        part = name_punct_examples(words)
        with open(args.gold, encoding="utf-8") as f:
            gold = json.load(f)
        key = dialoglue_name(args.task)
        for label, keep in (
                (f"{len(part)} examples with a punctuated word after a first name", part),
                (f"the other {len(words) - len(part)} examples",
                 set(range(len(words))) - part)):
            g = dict(gold, **{key: [x if k in keep else [] for k, x in enumerate(gold[key])]})
            gpath = os.path.join(work, f"gold-{len(keep)}.json")
            with open(gpath, "w", encoding="utf-8") as f:
                json.dump(g, f)
            print()
            print_tables(args.task, f", {label}", rows_of(keep, work, gpath))


def print_tables(task, title, rows):
    """The per-type F1 table and the precision / recall table of rows [(name, runs)]."""
    types = sorted({t["type"] for _, runs in rows for r in runs for t in r["slot_types"]})

    def per_type(runs, key):
        return {ty: [t[key] for r in runs for t in r["slot_types"] if t["type"] == ty]
                for ty in types}

    print(f"{task}: slot F1 per slot type (test{title}; x100, mean ± sample std over runs)\n")
    print("| row | slot F1 | " + " | ".join(types) + " |")
    print("|---|---|" + "---|" * len(types))
    for name, runs in rows:
        f1 = per_type(runs, "f1")
        print(f"| {name} | {cell([r['score'] for r in runs])} | "
              + " | ".join(cell(f1[t]) for t in types) + " |")
    print("\nprecision / recall (means)\n")
    print("| row | " + " | ".join(types) + " |")
    print("|---|" + "---|" * len(types))
    for name, runs in rows:
        p, r = per_type(runs, "precision"), per_type(runs, "recall")
        print(f"| {name} | " + " | ".join(
            f"{statistics.mean(p[t]):.1f} / {statistics.mean(r[t]):.1f}" if p[t] else "–"
            for t in types) + " |")


if __name__ == "__main__":
    main()
