#!/usr/bin/python3
"""The DialoGLUE scoreboard of the main job: rows of models, DialoGLUE's six tasks here as
columns (its order; MultiWOZ is not in ../shared), one table per setting (few-shot train_10,
full train), mean ± sample std over fine-tuning seeds, and the published anchors in a block of
their own.

usage: scripts/scoreboard.py [--out runs/scoreboard] [--row NAME=PATH ...] [--settings few,full]

Each row is a NAME=PATH pair; PATH is a results.json (or the folder holding it) from
`dialtree eval dialoglue`, or a JSON array of such objects (bench/reference/classical_baseline.py
--json), and may hold `{setting}`, replaced by few or full. PATH may join several sources with
`+` (e.g. the runs of one encoder made in parts, or the encoders of several pretraining runs),
and a source may end in `@TASK,TASK...` to take only those tasks from it (e.g. the intent tasks
of one recipe and the tagging tasks of another folder of the same encoder; each named task must
be in the source), or in `@?TASK,TASK...` to take those of the named tasks the source has, and
nothing when the source is missing (scripts/run.sh's main job, whose intent and tagging tasks may
be run in parts into two folders):
a task's runs are pooled, one run per (encoder, seed), and its mean ± std is over all of them; a
task whose runs come from more than one encoder says how many ("6 runs, 2 encoders"), and a
second table gives, for the rows that pool several encoders, the spread between pretraining
runs: the mean of the encoders' means ± their sample std, each encoder weighing once. An
encoder is a set of weights (results.json's model_weights); a file written before dialtree
recorded them counts as the encoder the row's other files record for the same model path, when
they name exactly one, else as its model path. A row whose
files are all missing for a setting is left out of that setting's table (and said on stderr); a
source that is missing while others are there stops the script; a task no source ran is "–".
Without --row, the rows of scripts/run.sh: the classical baseline, the language stage alone
(with LM_ROW=1) and the main job.

Writes OUT.md, OUT.json and, per setting, OUT-<setting>.rows.json (the rows as results.json
objects, which `dialtree plot OUT-few.rows.json --out DIR` draws as the figure), atomically, and
prints OUT.md. With --submission ROW, also OUT-<setting>.submission.json: DialoGLUE's submission
file of that row, each task's predictions taken from the submission.json that `dialtree eval
dialoglue` wrote beside the source that gave the task (so a row whose intent and tagging tasks
come from two encoders still makes one file, which `dialtree eval score --task T --predictions`
scores back); a task that two of the row's sources give is refused, as a submission holds one
model's runs. The "Average" column is the plain
mean of the six task means (DialoGLUE's leaderboard averages its seven; MultiWOZ is absent), shown
only for a row that has all six.
"""

import argparse
import json
import os
import statistics
import sys

from dialoglue_tasks import dialoglue_name

TASKS = ["banking", "hwu", "clinc", "restaurant8k", "dstc8", "top"]  # DialoGLUE's column order
HEADERS = {"banking": "BANKING77", "hwu": "HWU64", "clinc": "CLINC150", "restaurant8k": "REST8K",
           "dstc8": "DSTC8", "top": "TOP"}
METRICS = {"banking": "acc", "hwu": "acc", "clinc": "acc", "restaurant8k": "slot F1",
           "dstc8": "slot F1", "top": "EM"}
METRIC_NAMES = {"banking": "accuracy", "hwu": "accuracy", "clinc": "accuracy",
                "restaurant8k": "slot F1", "dstc8": "slot F1", "top": "exact match"}
DEFAULT_ROWS = [
    ("classical baseline", "runs/baselines/classical-{setting}.json"),
    ("language stage alone", "runs/eval-{setting}-lm"),
    ("main job", "runs/eval-{setting}"),
]
# Published figures, each with where it was read; a figure not read from its paper says so.
ANCHORS = [
    ("SPACE-2 (BERT-base size, pretrained from ConvBERT; its README)", "full",
     {"banking": 94.77, "hwu": 94.33, "clinc": 97.80, "restaurant8k": 96.20, "dstc8": 91.38,
      "top": 82.74}),
    ("DialoGLUE BERT-base (Table 1, as cited by a third party)", "full", {"banking": 93.02}),
]


MISSING = "missing"


def load_results(path, setting):
    """The results object of `setting` at path (a folder, a results.json, or an array); None
    when the file holds results of the other setting only; MISSING when there is no file."""
    if os.path.isdir(path):
        path = os.path.join(path, "results.json")
    if not os.path.isfile(path):
        return MISSING
    with open(path, encoding="utf-8") as f:
        data = json.load(f)
    for obj in data if isinstance(data, list) else [data]:
        if not isinstance(obj, dict) or "setting" not in obj:
            raise ValueError("expected results.json objects with a 'setting' (few or full)")
        if obj["setting"] == setting:
            return obj
    return None


def only_tasks(results, wanted):
    """A copy of one results object keeping only the tasks in `wanted` (DialoGLUE names).
    Raises ValueError naming a task it lacks."""
    kept = {t: e for t, e in results["tasks"].items() if dialoglue_name(t) in wanted}
    lacking = sorted(set(wanted) - {dialoglue_name(t) for t in kept})
    if lacking:
        raise ValueError(f"has no {', '.join(lacking)} (it has "
                         f"{', '.join(sorted(dialoglue_name(t) for t in results['tasks']))})")
    return dict(results, tasks=kept)


def task_runs(results, task):
    """(seed, test, val) of each run of `task` in one results object, or None when not run."""
    entry = next((e for key, e in results["tasks"].items() if dialoglue_name(key) == task), None)
    if entry is None:
        return None
    runs = entry.get("runs") or [{"seed": None, "test": entry["mean"],
                                  "val": entry.get("val_mean")}]
    return [(r.get("seed"), float(r["test"]), r.get("val")) for r in runs]


def encoder_keys(sources):
    """Each source's encoder: its model_weights; a source written before dialtree recorded them
    takes the weights that the row's other sources record for the same model path, when they
    name exactly one; else its model path."""
    by_path = {}
    for _, r in sources:
        if r.get("model_weights"):
            by_path.setdefault(r.get("model"), set()).add(r["model_weights"])
    keys = []
    for _, r in sources:
        known = by_path.get(r.get("model"), set())
        keys.append(r.get("model_weights") or (next(iter(known)) if len(known) == 1
                                                else r.get("model")))
    return keys


def row_of(name, sources):
    """One row from [(path, results object)]: each task's runs pooled over the sources."""
    keys = encoder_keys(sources)
    tasks = {}
    for task in TASKS:
        pooled = {}  # (model, seed) -> (test, val, path)
        for (path, results), encoder in zip(sources, keys):
            for seed, test, val in task_runs(results, task) or []:
                # One encoder = one set of weights: a bundle path is reused by every
                # pretraining run, so the weights' fingerprint names it where recorded.
                key = (encoder, seed)
                if key in pooled:
                    raise ValueError(f"{task}: model {results.get('model')} ({key[0]}) seed "
                                     f"{seed} is in both "
                                     f"{pooled[key][2]} and {path}; give each run once")
                pooled[key] = (test, val, path)
        if not pooled:
            continue
        scores = [v[0] for v in pooled.values()]
        vals = [v[1] for v in pooled.values() if v[1] is not None]
        by_encoder = {}  # encoder -> its runs' test scores, in the order of the sources
        for (encoder, _), v in pooled.items():
            by_encoder.setdefault(encoder, []).append(v[0])
        encoder_means = [statistics.fmean(x) for x in by_encoder.values()]
        tasks[task] = {"mean": statistics.fmean(scores),
                       "std": statistics.stdev(scores) if len(scores) > 1 else 0.0,
                       "runs": len(scores), "scores": scores,
                       "seeds": [k[1] if k[1] is not None else 0 for k in pooled],
                       "encoders": len(by_encoder),
                       # Between pretraining runs: each encoder weighs once, whatever its seeds.
                       "encoder_means": encoder_means,
                       "encoder_mean": statistics.fmean(encoder_means),
                       "encoder_std": (statistics.stdev(encoder_means)
                                       if len(encoder_means) > 1 else 0.0),
                       "val_mean": statistics.fmean(vals) if vals else None}
    average = (statistics.fmean(tasks[t]["mean"] for t in TASKS)
               if all(t in tasks for t in TASKS) else None)
    models = sorted({r.get("model") for _, r in sources if r.get("model")})
    return {"name": name, "source": "+".join(p for p, _ in sources), "models": models,
            "tasks": tasks, "average": average}


def submission_of(sources):
    """DialoGLUE's submission object of one row from [(path, results object)]: each task's entry
    from the submission.json beside the source that gave the task (the folder, or the folder of
    the results.json), in DialoGLUE's column order. Raises ValueError when a task comes from two
    sources, when a source has no submission file or when the file lacks one of its tasks."""
    merged, origin = {}, {}
    for path, results in sources:
        tasks = [dialoglue_name(t) for t in results["tasks"]]
        if not tasks:
            continue
        folder = path if os.path.isdir(path) else os.path.dirname(path)
        file = os.path.join(folder, "submission.json")
        if not os.path.isfile(file):
            raise ValueError(f"{file}: no submission file (`dialtree eval dialoglue` writes one "
                             "beside its results.json)")
        with open(file, encoding="utf-8") as f:
            submission = json.load(f)
        for task in tasks:
            if task in origin:
                raise ValueError(f"{task} is in both {origin[task]} and {file}; a submission "
                                 "holds one model's runs of each task")
            if not isinstance(submission, dict) or task not in submission:
                raise ValueError(f"{file}: has no {task}")
            merged[task], origin[task] = submission[task], file
    return {t: merged[t] for t in TASKS if t in merged}


def cell(entry):
    if entry is None:
        return "–"
    if entry["runs"] == 1:
        return f"{entry['mean']:.2f} (1)"
    runs = (f"{entry['runs']} runs, {entry['encoders']} encoders" if entry["encoders"] > 1
            else f"{entry['runs']}")
    return f"{entry['mean']:.2f} ± {entry['std']:.2f} ({runs})"


def encoder_cell(entry):
    if entry is None:
        return "–"
    if entry["encoders"] == 1:
        return "(1 encoder)"
    means = ", ".join(f"{m:.2f}" for m in entry["encoder_means"])
    return f"{entry['encoder_mean']:.2f} ± {entry['encoder_std']:.2f} ({means})"


def table(rows, cell_of=cell, average=True):
    head = "| | " + " | ".join(f"{HEADERS[t]} ({METRICS[t]})" for t in TASKS) + " |"
    head += " Average |" if average else ""
    lines = [head, "|---|" + "---|" * (len(TASKS) + average)]
    for r in rows:
        line = f"| {r['name']} | " + " | ".join(cell_of(r["tasks"].get(t)) for t in TASKS) + " |"
        if average:
            line += f" {r['average']:.2f} |" if r["average"] is not None else " – |"
        lines.append(line)
    return "\n".join(lines)


def between_encoders(rows):
    """The table of the spread between pretraining runs, for the rows that pool several
    encoders: per task the mean of the encoders' means ± their sample std, each weighing once
    however many fine-tuning seeds it has; "" when no row pools several."""
    several = [r for r in rows if any(e["encoders"] > 1 for e in r["tasks"].values())]
    if not several:
        return ""
    return ("\nBetween pretraining runs: the mean of each encoder's mean ± their sample std (the "
            "spread one pretraining run adds), each encoder's mean in brackets, in the order of "
            "the row's sources.\n\n" + table(several, encoder_cell, average=False) + "\n")


def plot_rows(setting, rows):
    """The rows as results.json-shaped objects (model = the row's name), which `dialtree plot`
    draws as the scoreboard's figure: per task its mean ± std and each run's score."""
    out = []
    for r in rows:
        tasks = {}
        for t, e in r["tasks"].items():
            tasks[t] = {"metric": METRIC_NAMES[t], "mean": e["mean"], "std": e["std"],
                        "runs": [{"seed": seed, "test": x}
                                 for seed, x in zip(e["seeds"], e["scores"])]}
        out.append({"format": "dialtree-dialoglue-results/1", "model": r["name"],
                    "setting": setting, "tasks": tasks})
    return out


def write_atomic(path, text):
    tmp = f"{path}.tmp.{os.getpid()}"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(tmp, path)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default="runs/scoreboard", help="OUT.md and OUT.json")
    parser.add_argument("--row", action="append", default=[], metavar="NAME=PATH")
    parser.add_argument("--settings", default="few,full")
    parser.add_argument("--submission", metavar="ROW",
                        help="also write OUT-<setting>.submission.json, this row's DialoGLUE "
                             "submission file")
    args = parser.parse_args()
    rows = []
    for spec in args.row:
        name, sep, path = spec.partition("=")
        if not sep or not name or not path:
            sys.exit(f"error: --row '{spec}': expected NAME=PATH")
        rows.append((name, path))
    rows = rows or DEFAULT_ROWS
    if args.submission is not None and args.submission not in [name for name, _ in rows]:
        sys.exit(f"error: --submission '{args.submission}': no such row "
                 f"({', '.join(name for name, _ in rows)})")
    settings = [s for s in args.settings.split(",") if s]
    if not settings:
        sys.exit("error: --settings: no setting given (few, full)")
    if not os.path.basename(args.out):
        sys.exit(f"error: --out {args.out}: give a file stem such as runs/scoreboard")
    for s in settings:
        if s not in ("few", "full"):
            sys.exit(f"error: --settings: unknown setting '{s}' (few, full)")

    board = {"format": "dialtree-scoreboard/1", "tasks": TASKS, "settings": {}}
    md = []
    submissions = {}  # setting -> the --submission row's submission object
    for setting in settings:
        got = []
        for name, path in rows:
            sources, missing = [], []
            for spec in path.replace("{setting}", setting).split("+"):
                source, at, wanted = spec.partition("@")
                optional = wanted.startswith("?")
                wanted = [t for t in wanted.removeprefix("?").split(",") if t]
                if at and not wanted:
                    sys.exit(f"error: row '{name}': {spec}: no task after '@'")
                for task in wanted:
                    if task not in TASKS:
                        sys.exit(f"error: row '{name}': {spec}: unknown task '{task}' "
                                 f"({', '.join(TASKS)})")
                try:
                    results = load_results(source, setting)
                    if wanted and results is not MISSING and results is not None:
                        if optional:  # those of the named tasks it has
                            wanted = [t for t in wanted if task_runs(results, t) is not None]
                        results = only_tasks(results, wanted)
                except (OSError, ValueError) as e:
                    sys.exit(f"error: {source}: {e}")
                if results is MISSING:
                    if not optional:
                        missing.append(source)
                elif results is not None:  # None: a file of the other setting, not this table's
                    sources.append((source, results))
            if not sources:
                print(f"scoreboard: no {setting} results in row '{name}' ({path}); left out",
                      file=sys.stderr)
                continue
            if missing:
                sys.exit(f"error: row '{name}': no {setting} results at {', '.join(missing)} "
                         f"(the row's other sources have them)")
            if name == args.submission:
                try:
                    submissions[setting] = submission_of(sources)
                except (OSError, ValueError) as e:
                    sys.exit(f"error: --submission '{name}': {e}")
            try:
                got.append(row_of(name, sources))
            except (KeyError, TypeError, AttributeError) as e:
                sys.exit(f"error: row '{name}' ({path}): not a dialtree results.json ({e!r} "
                         "missing or malformed; expected tasks.<task>.mean and runs[].test)")
            except ValueError as e:
                sys.exit(f"error: row '{name}': {e}")
        board["settings"][setting] = {"rows": got}
        title = ("Few-shot (train_10: 10 per intent, 10 % of the slot and TOP examples)"
                 if setting == "few" else "Full data (train)")
        md.append(f"### {title}\n\nTest score, mean ± sample std over runs, the runs in "
                  f"brackets: fine-tuning seeds of one encoder, or, where a cell says \"k "
                  f"encoders\", of k pretraining runs.\n\n" + (table(got) if got else "(no results yet)") + "\n"
                  + between_encoders(got))
    anchors = [a for a in ANCHORS if a[1] in settings]
    if anchors:
        lines = ["| published anchor | setting | " + " | ".join(HEADERS[t] for t in TASKS) + " |",
                 "|---|---|" + "---|" * len(TASKS)]
        for name, setting, scores in anchors:
            lines.append(f"| {name} | {setting} | " +
                         " | ".join(f"{scores[t]:.2f}" if t in scores else "–" for t in TASKS) +
                         " |")
        md.append("### Published anchors (not run here; larger models)\n\n" + "\n".join(lines) +
                  "\n")
        board["anchors"] = [{"name": n, "setting": s, "scores": sc} for n, s, sc in anchors]
    text = "\n".join(md)
    out_dir = os.path.dirname(args.out)
    if out_dir:
        os.makedirs(out_dir, exist_ok=True)
    write_atomic(args.out + ".md", text)
    write_atomic(args.out + ".json", json.dumps(board, indent=2) + "\n")
    for setting, part in board["settings"].items():
        write_atomic(f"{args.out}-{setting}.rows.json",
                     json.dumps(plot_rows(setting, part["rows"]), indent=1) + "\n")
    for setting, submission in submissions.items():
        write_atomic(f"{args.out}-{setting}.submission.json", json.dumps(submission) + "\n")
    print(text, end="")


if __name__ == "__main__":
    main()
