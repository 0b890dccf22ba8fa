#!/usr/bin/python3
"""Classical baselines on all six DialoGLUE tasks in ../shared, no pretraining: the floor every
row of the scoreboard (docs/results.md) is measured against.

  - intents (banking, clinc, hwu): TF-IDF of character 2-5-grams + logistic regression
    (bench/reference/tfidf_baseline.py's recipe, C = 10);
  - slots (restaurant8k, dstc8): a window-feature token tagger: each word of DialoGLUE's word
    sequence (`dialtree eval words`: the requested slot names in front) described by itself,
    its lower-cased form, prefix and suffix of 3, shape, digit and title flags, and the lower-cased
    words at offsets -2..+2, one-hot (DictVectorizer) into multinomial logistic regression
    (L2, C = 10, lbfgs), each word tagged on its own;
  - TOP: the same tagger for the flattened slot tags plus the intent classifier of the intent
    tasks on the utterance's words; an example is right when both are.

Fitted on train_10 (few) or train (full); no choice is made on test or val. Tagging predictions go
through `dialtree eval score --word-tags`, so they are spread over BERT pieces and scored by
DialoGLUE's own rules (slot F1, exact match) exactly as dialtree's models are. Deterministic: one
run per task and setting (std 0).

Run with Debian's interpreter and python3-sklearn, after building dialtree:
    /usr/bin/python3 bench/reference/classical_baseline.py [--data DIR] [--tasks LIST]
        [--settings few,full] [--dialtree build/cli/dialtree] [--json FILE]
        [--predictions-dir DIR]

Prints a Markdown table (test score, val in brackets for intents) and writes, with --json, one
results.json-shaped object per setting (adding to the file's earlier objects: tasks and settings
not run again are kept) (format dialtree-dialoglue-results/1, model
"classical (few)" / "classical (full)"),
which scripts/scoreboard.py puts on the scoreboard. With --predictions-dir the tagging tasks'
test predictions are kept there as DIR/<task>.<setting>.word-tags.jsonl, the file `dialtree eval
score --word-tags` reads (with --json it prints the per-slot-type F1 that scripts/slot-types.py
tabulates).
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import warnings

from sklearn.exceptions import ConvergenceWarning
from sklearn.feature_extraction import DictVectorizer
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.linear_model import LogisticRegression

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tfidf_baseline as tb  # noqa: E402  (the intent recipe, one place)
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../scripts"))
from dialoglue_tasks import words_of  # noqa: E402  (dialtree eval words, one place)

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "../.."))
INTENT_TASKS = ["banking", "clinc", "hwu"]
TAGGING_TASKS = ["restaurant8k", "dstc8", "top"]
C = 10.0
MAX_ITER = 2000
INTENT_FEATURES = "tfidf-char-2-5"


def shape(word):
    """Xx / x / d / other classes of each character, runs collapsed: "Sacramento." -> "Xx."."""
    out = []
    for ch in word:
        c = "X" if ch.isupper() else "x" if ch.islower() else "d" if ch.isdigit() else ch
        if not out or out[-1] != c:
            out.append(c)
    return "".join(out)


def word_features(words, i):
    w = words[i]
    f = {"w=" + w: 1, "lw=" + w.lower(): 1, "p3=" + w[:3].lower(): 1, "s3=" + w[-3:].lower(): 1,
         "shape=" + shape(w): 1, "digit": int(any(ch.isdigit() for ch in w)),
         "title": int(w[:1].isupper()), "first": int(i == 0)}
    for k in (-2, -1, 1, 2):
        j = i + k
        f[f"w{k:+d}=" + (words[j].lower() if 0 <= j < len(words) else "<pad>")] = 1
    return f


def fit(x, y):
    model = LogisticRegression(C=C, max_iter=MAX_ITER)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)  # not converged = a wrong baseline
        model.fit(x, y)
    return model


def run_dialtree(command):
    """Runs a dialtree command; on failure exits with what dialtree said."""
    out = subprocess.run(command, capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"error: {' '.join(command[1:4])} failed: {out.stderr.strip()}")
    return out.stdout


def run_tagging(dialtree, data, task, train_split, work, keep=None):
    """Fits the tagger (and TOP's intent classifier) on train_split; returns (test score,
    train examples, test examples, seconds). keep: a path the word-tag predictions are copied
    to (atomically), or None."""
    t0 = time.perf_counter()
    train = words_of(dialtree, task, train_split, data, work)
    test = words_of(dialtree, task, "test", data, work)
    vec = DictVectorizer()
    x = vec.fit_transform([word_features(ex["words"], i) for ex in train
                           for i in range(len(ex["words"]))])
    tagger = fit(x, [t for ex in train for t in ex["tags"]])
    flat = tagger.predict(vec.transform([word_features(ex["words"], i) for ex in test
                                         for i in range(len(ex["words"]))]))
    intents = None
    if task == "top":
        text = TfidfVectorizer(**tb.FEATURES[INTENT_FEATURES])
        clf = fit(text.fit_transform([" ".join(ex["words"]) for ex in train]),
                  [ex["intent"] for ex in train])
        intents = clf.predict(text.transform([" ".join(ex["words"]) for ex in test]))
    pred_path = os.path.join(work, f"{task}.{train_split}.pred.jsonl")
    with open(pred_path, "w", encoding="utf-8") as f:
        k = 0
        for i, ex in enumerate(test):
            rec = {"tags": list(flat[k:k + len(ex["words"])])}
            k += len(ex["words"])
            if intents is not None:
                rec["intent"] = str(intents[i])
            f.write(json.dumps(rec) + "\n")
    if keep:
        os.makedirs(os.path.dirname(keep) or ".", exist_ok=True)
        shutil.copyfile(pred_path, f"{keep}.tmp.{os.getpid()}")
        os.replace(f"{keep}.tmp.{os.getpid()}", keep)
    out = run_dialtree([dialtree, "eval", "score", "--task", task, "--word-tags", pred_path,
                        "--data-dir", data, "--gold", os.path.join(data, "gt_test.json"),
                        "--json"])
    score = json.loads(out)["score"]
    return score, len(train), len(test), time.perf_counter() - t0


def results_object(setting, per_task, metrics):
    tasks = {}
    for task, (val, test, n_train, n_test) in per_task.items():
        run = {"seed": 0, "test": test, "test_examples": n_test}
        if val is not None:
            run["val"] = val
        tasks[task] = {"metric": metrics[task], "mean": test, "std": 0.0, "val_mean": val,
                       "train_examples": n_train, "runs": [run]}
    return {"format": "dialtree-dialoglue-results/1", "model": f"classical ({setting})",
            "setting": setting,
            "seeds": [0], "gold": "gt_test.json",
            "options": {"intent": f"{INTENT_FEATURES} + LogisticRegression(C={C})",
                        "tagging": f"window features -2..+2 + LogisticRegression(C={C})"},
            "tasks": tasks}


def earlier_objects(path):
    """The results objects an earlier --json run left at path, by setting ({} when none). A file
    holding another recipe's results is moved to PATH.previous (-2, -3, ...: never overwritten)
    and nothing is kept; a file of another shape stops the run."""
    if not path or not os.path.isfile(path):
        return {}
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
        if not isinstance(data, list):
            raise ValueError("expected a JSON array of results objects")
        objs = {o["setting"]: o for o in data}
        for o in objs.values():
            if not isinstance(o["tasks"], dict):
                raise ValueError("'tasks' is not an object")
    except (OSError, ValueError, KeyError, TypeError) as e:
        sys.exit(f"error: --json {path}: cannot add to it ({e!r}); move it away or give "
                 "another file")
    recipe = results_object("few", {}, {})["options"]
    other = [s for s, o in objs.items() if o.get("options") != recipe]
    if other:  # another recipe's results are not added to: set the file aside, never lose it
        n, previous = 2, path + ".previous"
        while os.path.exists(previous):
            previous, n = f"{path}.previous-{n}", n + 1
        os.replace(path, previous)
        print(f"classical: {path} held results of another recipe (settings "
              f"{', '.join(map(str, other))}); moved to {previous}", file=sys.stderr)
        return {}
    return objs


def write_json(path, obj):
    """Writes `obj` to path atomically (a temporary sibling, then a rename)."""
    if os.path.dirname(path):
        os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = f"{path}.tmp.{os.getpid()}"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(obj, f, indent=2)
        f.write("\n")
    os.replace(tmp, path)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", default=tb.DEFAULT_DATA,
                        help="DialoGLUE folder (default: $DIALTREE_DATA, else "
                        "../shared/data/dialoglue)")
    parser.add_argument("--tasks", default=",".join(INTENT_TASKS + TAGGING_TASKS))
    parser.add_argument("--settings", default="few,full")
    parser.add_argument("--dialtree", default=os.path.join(ROOT, "build/cli/dialtree"))
    parser.add_argument("--json", help="write one results.json-shaped object per setting here")
    parser.add_argument("--predictions-dir",
                        help="keep the tagging tasks' test predictions here as "
                        "<task>.<setting>.word-tags.jsonl (for `dialtree eval score --word-tags`)")
    args = parser.parse_args()
    tasks = [t for t in args.tasks.split(",") if t]
    settings = [s for s in args.settings.split(",") if s]
    for t in tasks:
        if t not in INTENT_TASKS + TAGGING_TASKS:
            sys.exit(f"error: --tasks: unknown task '{t}' (banking, clinc, hwu, restaurant8k, "
                     "dstc8, top)")
    for s in settings:
        if s not in ("few", "full"):
            sys.exit(f"error: --settings: unknown setting '{s}' (few, full)")
    metrics = {t: "accuracy" for t in INTENT_TASKS}
    metrics.update(restaurant8k="slot F1", dstc8="slot F1", top="exact match")

    # --json adds to what an earlier run wrote there (scripts/run.sh runs TASKS in parts): tasks
    # and settings not run now are kept, a task run again is replaced.
    earlier = earlier_objects(args.json)
    for s, o in sorted(earlier.items()):
        print(f"classical: adding to {args.json}: keeping {s} {', '.join(sorted(o['tasks']))} "
              "where not run again", file=sys.stderr)

    def merged():
        out = []
        for s in ("few", "full"):
            tasks_now = results_object(s, results[s], metrics)["tasks"] if results.get(s) else {}
            if s in earlier or tasks_now:
                obj = results_object(s, {}, metrics)
                obj["tasks"] = {**earlier.get(s, {}).get("tasks", {}), **tasks_now}
                out.append(obj)
        return out

    start = time.perf_counter()
    results = {}
    with tempfile.TemporaryDirectory(prefix="classical-") as work:
        for setting in settings:
            results[setting] = {}
            split = "train_10" if setting == "few" else "train"
            for task in tasks:
                t0 = time.perf_counter()
                if task in INTENT_TASKS:
                    val, test, n_train, n_test, _ = tb.run(args.data, task,
                                                           tb.FEATURES[INTENT_FEATURES], split)
                else:
                    val = None
                    keep = (os.path.join(args.predictions_dir, f"{task}.{setting}.word-tags.jsonl")
                            if args.predictions_dir else None)
                    test, n_train, n_test, _ = run_tagging(args.dialtree, args.data, task, split,
                                                           work, keep)
                results[setting][task] = (val, test, n_train, n_test)
                print(f"{setting} {task}: {test:.2f} ({time.perf_counter() - t0:.1f} s)",
                      file=sys.stderr)
                if args.json:  # after every task: an interrupted run keeps what it finished
                    write_json(args.json, merged())
    print("| setting | " + " | ".join(f"{t} ({metrics[t]})" for t in tasks) + " |")
    print("|---|" + "---|" * len(tasks))
    for setting in settings:
        cells = []
        for t in tasks:
            val, test = results[setting][t][:2]
            cells.append(f"{test:.2f}" + (f" ({val:.2f})" if val is not None else ""))
        print(f"| {setting} | " + " | ".join(cells) + " |")
    print(f"\n{time.perf_counter() - start:.1f} s in all")


if __name__ == "__main__":
    main()
