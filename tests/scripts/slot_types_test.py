#!/usr/bin/python3
"""scripts/slot-types.py on restaurant8k's official answer key: the key itself scores 100 on every
slot type (as a few-shot submission, as a full one and as word tags from `dialtree eval words`),
a worked slot F1 when every people span is left out, the two parts of
--split-name-punct, TOP's exact match broken down, the label counts, and the error for a row without a source. Run by ctest (label scripts) with
DIALTREE_BIN (the dialtree launcher) and DIALTREE_DATA (the DialoGLUE folder)."""

import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(ROOT, "scripts", "slot-types.py")
BIN = os.environ.get("DIALTREE_BIN", os.path.join(ROOT, "build", "cli", "dialtree"))
DATA = os.environ.get("DIALTREE_DATA",
                      os.path.join(ROOT, "..", "shared", "data", "dialoglue"))


def table_rows(out, title_part):
    """{row name: [cells]} of the first F1 table whose title contains title_part."""
    block = out.split("slot F1 per slot type")
    for b in block[1:]:
        title = b.splitlines()[0]
        if title_part in title:
            lines = [l for l in b.splitlines() if l.startswith("| ")]
            header = [c.strip() for c in lines[0].strip("|").split("|")]
            rows = {}
            for l in lines[1:]:
                if l.startswith("| row"):
                    break  # the precision / recall table
                cells = [c.strip() for c in l.strip("|").split("|")]
                rows[cells[0]] = dict(zip(header[1:], cells[1:]))
            return rows
    raise AssertionError(f"no table '{title_part}' in:\n{out}")


class SlotTypes(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        with open(os.path.join(DATA, "gt_test.json"), encoding="utf-8") as f:
            cls.gold = json.load(f)["restaurant8k"]

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = self.tmp.name

    def tearDown(self):
        self.tmp.cleanup()

    def write(self, name, obj):
        path = os.path.join(self.dir, name)
        with open(path, "w", encoding="utf-8") as f:
            json.dump(obj, f)
        return path

    def run_script(self, *args, ok=True):
        p = subprocess.run([sys.executable, SCRIPT, "--dialtree", BIN, "--data-dir", DATA,
                            "--task", "restaurant8k", *args],
                           capture_output=True, text=True, check=False)
        self.assertEqual(p.returncode == 0, ok, p.stderr)
        return p.stdout if ok else p.stderr

    def test_answer_key_scores_100_and_a_worked_example(self):
        no_people = [[s for s in ex if not s.startswith("people:")] for ex in self.gold]
        few = self.write("few.json", {"restaurant8k": [self.gold, no_people]})
        full = self.write("full.json", {"restaurant8k": self.gold})
        words = os.path.join(self.dir, "words.jsonl")
        subprocess.run([BIN, "eval", "words", "--task", "restaurant8k", "--split", "test",
                        "--data-dir", DATA, "--out", words], check=True, capture_output=True)
        rows = table_rows(self.run_script(f"key={full}+{words}", f"few={few}"), "(test;")
        for ty in ("date", "first_name", "last_name", "people", "time"):
            self.assertEqual(rows["key"][ty], "100.00 ± 0.00 (2)", ty)
            if ty != "people":
                self.assertEqual(rows["few"][ty], "100.00 ± 0.00 (2)", ty)
        # Without its people spans run 2 scores people 0 and, slot F1 being the mean of the five
        # types, 80: pooled with the key's 100, 50 ± 70.71 and 90 ± 14.14 (sample std).
        self.assertEqual(rows["few"]["people"], "50.00 ± 70.71 (2)")
        self.assertEqual(rows["few"]["slot F1"], "90.00 ± 14.14 (2)")
        self.assertEqual(rows["key"]["slot F1"], "100.00 ± 0.00 (2)")

    def test_split_name_punct(self):
        few = self.write("few.json", {"restaurant8k": [self.gold]})
        out = self.run_script("--split-name-punct", f"key={few}")
        # Both parts of the answer key score 100; the name-punct part has no last_name span
        # (the key drops a punctuated name word), so that type is not in its table.
        part = table_rows(out, "with a punctuated word after a first name")
        self.assertEqual(part["key"]["slot F1"], "100.00 (1)")
        self.assertNotIn("last_name", part["key"])
        self.assertEqual(table_rows(out, "the other")["key"]["last_name"], "100.00 (1)")
        n = int(re.search(r"test, (\d+) examples with a punctuated", out).group(1))
        m = int(re.search(r"the other (\d+) examples", out).group(1))
        self.assertEqual(n + m, len(self.gold))
        self.assertGreater(n, 100)  # 119 in DialoGLUE's test set

    def test_top_breakdown(self):
        with open(os.path.join(DATA, "gt_test.json"), encoding="utf-8") as f:
            gold = json.load(f)["top"]
        # Run 2: the slot-free examples get another intent; run 3: every tag of the 1-slot ones
        # becomes O. Both change what dialtree's exact match counts, which the script checks.
        slots = [sum(t.startswith("B-") for t in tags) for _, tags in gold]
        run2 = [["IN_GET_WEATHER" if n == 0 and i != "IN_GET_WEATHER" else i, t]
                for (i, t), n in zip(gold, slots)]
        run3 = [[i, ["O"] * len(t) if n == 1 else t] for (i, t), n in zip(gold, slots)]
        few = self.write("top.json", {"top": [gold, run2, run3]})
        full = self.write("top-full.json", {"top": gold})
        out = self.run_script("--task", "top", f"few={few}", f"full={full}")
        lines = [l for l in out.splitlines() if l.startswith("| ")]
        header = [c.strip() for c in lines[0].strip("|").split("|")]
        rows = {l.strip("|").split("|")[0].strip(): dict(zip(header, (
            c.strip() for c in l.strip("|").split("|")))) for l in lines[1:]}
        n, n0 = len(gold), slots.count(0)
        n1 = slots.count(1)
        changed = sum(1 for (i, _), n_ in zip(gold, slots) if n_ == 0 and i != "IN_GET_WEATHER")
        intent2 = 100 * (n - changed) / n
        em3 = 100 * (n - n1) / n
        self.assertEqual(rows["full"]["exact match"], "100.00 (1)")
        self.assertEqual(rows["few"]["intent"], f"{(200 + intent2) / 3:.2f} ± "
                         f"{statistics.stdev([100, intent2, 100]):.2f} (3)")
        self.assertEqual(rows["few"]["exact match"], f"{(100 + intent2 + em3) / 3:.2f} ± "
                         f"{statistics.stdev([100, intent2, em3]):.2f} (3)")
        self.assertEqual(rows["few"][f"tags, no slot ({n0})"], "100.00 ± 0.00 (3)")
        self.assertEqual(rows["few"][f"tags, 1 slot ({n1})"], "66.67 ± 57.74 (3)")

    def test_label_counts(self):
        # restaurant8k at DialoGLUE's word level: the B- tags of train_10 and test per type.
        words = os.path.join(self.dir, "train.jsonl")
        subprocess.run([BIN, "eval", "words", "--task", "restaurant8k", "--split", "train_10",
                        "--data-dir", DATA, "--out", words], check=True, capture_output=True)
        with open(words, encoding="utf-8") as f:
            last = sum(t == "B-last_name" for line in f for t in json.loads(line)["tags"])
        out = self.run_script("--label-counts")
        self.assertIn(f"last_name {last}/", out)
        self.assertEqual(last, 63)
        self.assertIn("5 types in test; a test span's type has a median of 137 train_10 spans; "
                      "0.0 %", out)

    def test_split_reads_a_bare_list_of_runs(self):
        # A few-shot submission may be the bare task list (a list of runs), as dialtree reads it.
        bare = self.write("bare.json", [self.gold, self.gold])
        out = self.run_script("--split-name-punct", f"key={bare}")
        self.assertEqual(table_rows(out, "the other")["key"]["slot F1"], "100.00 ± 0.00 (2)")

    def test_bad_row(self):
        self.assertIn("at least one row", self.run_script(ok=False))
        key = self.write("key.json", {"restaurant8k": self.gold})
        self.assertIn("an empty source", self.run_script(f"x={key}+", ok=False))
        self.assertIn("given twice", self.run_script(f"x={key}+{key}", ok=False))
        self.assertIn("cannot hold '|'", self.run_script(f"a|b={key}", ok=False))
        self.assertIn("takes no rows", self.run_script("--label-counts", f"x={key}", ok=False))
        self.assertIn("no such executable", self.run_script(
            "--dialtree", os.path.join(self.dir, "none"), f"x={key}", ok=False))
        p = subprocess.run([sys.executable, SCRIPT, "--dialtree", BIN, "--task", "dstc8",
                            "--split-name-punct", f"x={key}"], capture_output=True, text=True,
                           check=False)
        self.assertEqual(p.returncode, 2)
        self.assertIn("--split-name-punct is for restaurant8k", p.stderr)
        err = self.run_script("nosource", ok=False)
        self.assertIn("expected NAME=SOURCE", err)
        missing = os.path.join(self.dir, "missing.json")
        err = self.run_script(f"x={missing}", ok=False)
        self.assertIn("missing.json", err)


if __name__ == "__main__":
    unittest.main()
