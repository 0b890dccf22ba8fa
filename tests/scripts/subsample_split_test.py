#!/usr/bin/python3
"""scripts/subsample-split.py on restaurant8k's real train_10: the subset's examples are the
original's, in order, the same seed draws the same subset, the other files are links (no
train.json), the span counts it prints add up, and bad arguments exit 2 with the reason. Run by
ctest (label scripts) with DIALTREE_DATA (the DialoGLUE folder)."""

import json
import os
import re
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(ROOT, "scripts", "subsample-split.py")
DATA = os.environ.get("DIALTREE_DATA",
                      os.path.join(ROOT, "..", "shared", "data", "dialoglue"))


class SubsampleSplit(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        with open(os.path.join(DATA, "restaurant8k", "train_10.json"), encoding="utf-8") as f:
            self.original = json.load(f)

    def tearDown(self):
        self.tmp.cleanup()

    def run_script(self, *args, ok=True):
        p = subprocess.run([sys.executable, SCRIPT, "--data-dir", DATA, *args],
                           capture_output=True, text=True, check=False)
        self.assertEqual(p.returncode == 0, ok, p.stderr)
        return p.stdout if ok else p.stderr

    def subset(self, out):
        with open(os.path.join(out, "restaurant8k", "train_10.json"), encoding="utf-8") as f:
            return json.load(f)

    def test_subset_links_and_counts(self):
        a, b = (os.path.join(self.tmp.name, n) for n in ("a", "b"))
        out = self.run_script("--task", "restaurant8k", "--keep", "40", "--seed", "7", "--out", a)
        self.run_script("--task", "restaurant8k", "--keep", "40", "--seed", "7", "--out", b)
        sub = self.subset(a)
        self.assertEqual(len(sub), 40)
        self.assertEqual(sub, self.subset(b))  # the seed decides
        # A subsequence of the original (train_10 holds duplicates: matched in order).
        rest = iter(self.original)
        self.assertTrue(all(any(ex == o for o in rest) for ex in sub))
        folder = os.path.join(a, "restaurant8k")
        self.assertEqual(sorted(os.listdir(folder)),
                         ["test.json", "train_10.json", "val.json", "vocab.txt"])
        self.assertTrue(os.path.islink(os.path.join(folder, "val.json")))
        for name in ("gt_test.json", "bert-base-uncased-vocab.txt"):
            self.assertTrue(os.path.samefile(os.path.join(a, name), os.path.join(DATA, name)))
        self.assertFalse(os.path.exists(os.path.join(a, "banking")))  # files only
        # "people 3/191": the printed counts are the subset's and train_10's labels.
        counts = dict((s, (int(x), int(y))) for s, x, y in re.findall(r"(\w+) (\d+)/(\d+)", out))
        for slot, (x, y) in counts.items():
            self.assertEqual(x, sum(l["slot"] == slot for ex in sub for l in ex.get("labels", [])))
            self.assertEqual(y, sum(l["slot"] == slot for ex in self.original
                                    for l in ex.get("labels", [])))
        self.assertEqual(set(counts), {"date", "first_name", "last_name", "people", "time"})

    def test_malformed_split_and_trailing_slash(self):
        bad = os.path.join(self.tmp.name, "bad")
        os.makedirs(os.path.join(bad, "restaurant8k"))
        with open(os.path.join(bad, "restaurant8k", "train_10.json"), "w", encoding="utf-8") as f:
            json.dump([{"labels": [{"slot": "time"}]}, {"labels": [{"valueSpan": {}}]}], f)
        out = os.path.join(self.tmp.name, "out")
        p = subprocess.run([sys.executable, SCRIPT, "--data-dir", bad, "--task", "restaurant8k",
                            "--keep", "1", "--out", out], capture_output=True, text=True,
                           check=False)
        self.assertEqual(p.returncode, 1)
        self.assertIn("train_10.json: example 1:", p.stderr)
        self.assertEqual(os.listdir(self.tmp.name), ["bad"])  # nothing written
        # --out with a trailing slash names the same folder.
        self.run_script("--task", "restaurant8k", "--keep", "3", "--out", out + "/")
        self.assertEqual(len(self.subset(out)), 3)
        self.assertEqual(sorted(os.listdir(self.tmp.name)), ["bad", "out"])

    def test_bad_arguments(self):
        out = os.path.join(self.tmp.name, "x")
        self.assertIn("has 724 examples", self.run_script(
            "--task", "restaurant8k", "--keep", "725", "--out", out, ok=False))
        self.assertIn("--keep 0", self.run_script(
            "--task", "restaurant8k", "--keep", "0", "--out", out, ok=False))
        self.assertIn("'hwu' is not one of", self.run_script(
            "--task", "hwu", "--keep", "5", "--out", out, ok=False))
        self.run_script("--task", "restaurant8k", "--keep", "5", "--out", out)
        self.assertIn("exists", self.run_script(
            "--task", "restaurant8k", "--keep", "5", "--out", out, ok=False))


if __name__ == "__main__":
    unittest.main()
