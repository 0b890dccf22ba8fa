#!/usr/bin/python3
"""TF-IDF n-gram + logistic regression baseline on DialoGLUE's few-shot intent tasks.

The text-classification baseline of docs/results.md and issue 13: fit on `train_10` (10 labelled
examples per intent), score `val` and `test`, for banking, clinc and hwu. Two feature sets:
  - char: TF-IDF of character 2-5-grams inside word boundaries (analyzer='char_wb'), sublinear tf;
  - word: TF-IDF of word 1-2-grams, sublinear tf;
each followed by multinomial logistic regression (L2, C = 10, lbfgs). Both are deterministic, so
there is one run ("seed" 0) per task and the std is 0.

Run with Debian's interpreter and python3-sklearn:
    /usr/bin/python3 bench/reference/tfidf_baseline.py [--data DIR] [--tasks banking,clinc,hwu]
        [--json FILE]

Prints a Markdown table of test (and val) accuracy in percent, and how long it took. With
--json, writes a JSON array of two objects shaped like the results.json of
`dialtree eval dialoglue --out` (format dialtree-dialoglue-results/1; "model" names the
feature set), which `dialtree plot` draws next to dialtree's models (docs/plotting.md).
"""

import argparse
import csv
import json
import os
import sys
import time
import warnings

from sklearn.exceptions import ConvergenceWarning
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.linear_model import LogisticRegression

# As `dialtree eval dialoglue --data-dir`: $DIALTREE_DATA, else ../shared beside the checkout.
DEFAULT_DATA = os.environ.get("DIALTREE_DATA") or os.path.normpath(os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "../../../shared/data/dialoglue"))
C = 10.0
MAX_ITER = 2000

FEATURES = {
    "tfidf-char-2-5": dict(analyzer="char_wb", ngram_range=(2, 5), sublinear_tf=True),
    "tfidf-word-1-2": dict(analyzer="word", ngram_range=(1, 2), sublinear_tf=True),
}


def load(data, task, split):
    """(texts, labels) of <data>/<task>/<split>.csv (header `text,category`)."""
    path = os.path.join(data, task, split + ".csv")
    try:
        with open(path, newline="", encoding="utf-8") as f:
            rows = list(csv.DictReader(f))
    except OSError as e:
        sys.exit(f"error: {path}: {e.strerror} (set --data or DIALTREE_DATA)")
    if not rows or "text" not in rows[0] or "category" not in rows[0]:
        sys.exit(f"error: {path}: expected a header row `text,category` and data rows")
    return [r["text"] for r in rows], [r["category"] for r in rows]


def accuracy(predicted, gold):
    return 100.0 * sum(p == g for p, g in zip(predicted, gold)) / len(gold)


def run(data, task, features, train_split="train_10"):
    """Fits on train_split (train_10, or train for the full setting), returns (val accuracy,
    test accuracy, train size, test size, lbfgs iterations)."""
    x_train, y_train = load(data, task, train_split)
    x_val, y_val = load(data, task, "val")
    x_test, y_test = load(data, task, "test")
    vectorizer = TfidfVectorizer(**features)
    a_train = vectorizer.fit_transform(x_train)
    model = LogisticRegression(C=C, max_iter=MAX_ITER)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)  # not converged = a wrong baseline
        model.fit(a_train, y_train)
    val = accuracy(model.predict(vectorizer.transform(x_val)), y_val)
    test = accuracy(model.predict(vectorizer.transform(x_test)), y_test)
    return val, test, len(x_train), len(x_test), int(model.n_iter_.max())


def results_object(name, features, per_task):
    """One feature set's scores in the shape of dialtree's results.json."""
    options = {k: list(v) if isinstance(v, tuple) else v for k, v in features.items()}
    options.update(classifier="LogisticRegression", C=C, solver="lbfgs", max_iter=MAX_ITER)
    tasks = {}
    for task, (val, test, n_train, n_test, _) in per_task.items():
        tasks[task] = {"metric": "accuracy", "mean": test, "std": 0.0, "val_mean": val,
                       "train_examples": n_train,
                       "runs": [{"seed": 0, "test": test, "val": val, "test_examples": n_test}]}
    return {"format": "dialtree-dialoglue-results/1", "model": name, "setting": "few",
            "seeds": [0], "options": options, "gold": "test files", "tasks": tasks}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", default=DEFAULT_DATA,
                        help="DialoGLUE folder (default: $DIALTREE_DATA, else ../shared/data/dialoglue)")
    parser.add_argument("--tasks", default="banking,clinc,hwu")
    parser.add_argument("--json", help="write the scores as a results.json-shaped array here")
    args = parser.parse_args()
    tasks = [t for t in args.tasks.split(",") if t]

    start = time.perf_counter()
    scores = {}
    for name, features in FEATURES.items():
        scores[name] = {}
        for task in tasks:
            t0 = time.perf_counter()
            scores[name][task] = run(args.data, task, features)
            print(f"{name} {task}: {time.perf_counter() - t0:.1f} s, "
                  f"lbfgs iterations {scores[name][task][4]}", file=sys.stderr)
    seconds = time.perf_counter() - start

    print("| features | " + " | ".join(f"{t} test (val)" for t in tasks) + " |")
    print("|---|" + "---|" * len(tasks))
    for name in FEATURES:
        cells = [f"{s[1]:.2f} ({s[0]:.2f})" for s in (scores[name][t] for t in tasks)]
        print(f"| {name} | " + " | ".join(cells) + " |")
    print(f"\n{len(FEATURES) * len(tasks)} fits in {seconds:.1f} s")
    if args.json:
        out = [results_object(n, FEATURES[n], scores[n]) for n in FEATURES]
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(out, f, indent=2)
            f.write("\n")


if __name__ == "__main__":
    main()
