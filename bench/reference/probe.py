#!/usr/bin/python3
"""Python reference of `dialtree eval probe`'s logistic regression (docs/evaluation.md, Probe).

Run with Debian's interpreter, python3-sklearn and python3-numpy:
    /usr/bin/python3 bench/reference/probe.py --train STEM --test STEM [--C 1,10]
        [--max-iter 100] [--draws DRAWS.json]

STEM names an embedding file pair as `dialtree eval probe --dump-embeddings DIR` writes it
(DIR/<task>/train_10, DIR/<task>/test, ...; tests/fixtures/probe/train and test): STEM.json, a
header {"rows", "dim", "dtype": "float32", "byte_order": "little", "data": FILE, "labels"}, and
FILE beside it, rows x dim little-endian float32, row-major.

For each C it fits scikit-learn's LogisticRegression(C=C, max_iter=max_iter, solver="lbfgs")
on the training rows, raw and after a StandardScaler fitted on them, and scores the test rows:
accuracy and f1_score(average="macro"). With --draws (DIR/<task>/mteb_draws.json, the MTEB
protocol's draws, indices into the training rows) it fits once per draw and reports the mean and
the sample standard deviation (ddof 1) over the draws.

Prints one JSON object: {"sklearn": version, "train", "test", "max_iter", "results": [{"C",
"raw": {...}, "standardized": {...}}]}, each {...} holding "accuracy", "macro_f1" (fractions),
"n_iter" (most L-BFGS iterations of a fit) and "converged" (every fit stopped before max_iter),
plus "accuracy_std" and "macro_f1_std" with --draws.
"""

import argparse
import json
import os
import sys
import warnings

import numpy as np
import sklearn
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import accuracy_score, f1_score
from sklearn.preprocessing import StandardScaler


def read_embeddings(stem):
    with open(stem + ".json", encoding="utf-8") as f:
        header = json.load(f)
    if header.get("dtype") != "float32" or header.get("byte_order") != "little":
        sys.exit(f"probe.py: {stem}.json: expected little-endian float32")
    path = os.path.join(os.path.dirname(stem + ".json"), header["data"])
    x = np.fromfile(path, dtype="<f4").reshape(header["rows"], header["dim"])
    return x.astype(np.float64), np.asarray(header["labels"], dtype=np.int64)


def fit_score(x_train, y_train, x_test, y_test, c, max_iter, standardize):
    if standardize:
        scaler = StandardScaler().fit(x_train)
        x_train, x_test = scaler.transform(x_train), scaler.transform(x_test)
    clf = LogisticRegression(C=c, max_iter=max_iter, solver="lbfgs")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        clf.fit(x_train, y_train)
    pred = clf.predict(x_test)
    n_iter = int(np.max(clf.n_iter_))
    return {
        "accuracy": float(accuracy_score(y_test, pred)),
        "macro_f1": float(f1_score(y_test, pred, average="macro")),
        "n_iter": n_iter,
        "converged": n_iter < max_iter,
    }


def summarise(runs):
    if len(runs) == 1:
        return runs[0]
    out = {}
    for key in ("accuracy", "macro_f1"):
        values = np.array([r[key] for r in runs])
        out[key] = float(values.mean())
        out[key + "_std"] = float(values.std(ddof=1))
    out["n_iter"] = max(r["n_iter"] for r in runs)
    out["converged"] = all(r["converged"] for r in runs)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--train", required=True, help="training embeddings (file stem)")
    ap.add_argument("--test", required=True, help="scored embeddings (file stem)")
    ap.add_argument("--C", default="1", help="comma-separated C values (default 1)")
    ap.add_argument("--max-iter", type=int, default=100)
    ap.add_argument("--draws", help="mteb_draws.json: fit once per draw of training rows")
    args = ap.parse_args()

    x_train, y_train = read_embeddings(args.train)
    x_test, y_test = read_embeddings(args.test)
    draws = [list(range(len(y_train)))]
    if args.draws:
        with open(args.draws, encoding="utf-8") as f:
            draws = json.load(f)["draws"]
    results = []
    for c in [float(v) for v in args.C.split(",")]:
        entry = {"C": c}
        for name, standardize in (("raw", False), ("standardized", True)):
            runs = [
                fit_score(x_train[d], y_train[d], x_test, y_test, c, args.max_iter, standardize)
                for d in draws
            ]
            entry[name] = summarise(runs)
        results.append(entry)
    json.dump(
        {
            "sklearn": sklearn.__version__,
            "train": args.train,
            "test": args.test,
            "max_iter": args.max_iter,
            "results": results,
        },
        sys.stdout,
        indent=1,
    )
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
