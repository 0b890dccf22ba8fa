#!/usr/bin/python3
"""scripts/stage-table.py: fine-tuning results merged by seed from a results folder of many tasks
and from per-task folders, the --eval-dir choice, a worked mean ± sample std, the error for a
seed found twice, and rows pooled over pretraining runs (DIR+DIR). Run by ctest (label scripts)."""

import json
import os
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(ROOT, "scripts", "stage-table.py")


def results(tasks):
    """A results.json object: tasks {task: [(seed, test, val), ...]}."""
    return {"tasks": {t: {"runs": [{"seed": s, "test": x, "val": v} for s, x, v in runs]}
                      for t, runs in tasks.items()}}


class StageTable(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.row = self.tmp.name

    def tearDown(self):
        self.tmp.cleanup()

    def write(self, folder, obj):
        path = os.path.join(self.row, folder)
        os.makedirs(path, exist_ok=True)
        with open(os.path.join(path, "results.json"), "w", encoding="utf-8") as f:
            json.dump(obj, f)

    def table(self, *args, ok=True):
        p = subprocess.run([sys.executable, SCRIPT, *args, f"r={self.row}"],
                           capture_output=True, text=True, check=False)
        self.assertEqual(p.returncode == 0, ok, p.stderr)
        return p.stdout if ok else p.stderr

    def finetuned_row(self, out):
        return out.strip().splitlines()[-1].split(" | ")

    def test_many_task_folder_and_task_folders_merge_by_seed(self):
        # language-stage.sh writes one folder per task and seed; run.sh one folder of all tasks.
        self.write("eval-few-random", results({"hwu": [(1, 70.0, 71.0)],
                                               "banking": [(1, 60.0, 61.0)]}))
        self.write("eval-few-random/hwu-s2", results({"hwu": [(2, 72.0, 75.0)]}))
        self.write("eval-few-random/hwu-s3", results({"hwu": [(3, 74.0, 76.0)]}))
        cells = self.finetuned_row(self.table("--eval-dir", "eval-few-random"))
        # columns: row, banking, clinc, hwu, ...; hwu mean 72, sample std 2, val mean 74
        self.assertEqual(cells[1], "60.00 (1) / 61.00")
        self.assertEqual(cells[2], "–")
        self.assertEqual(cells[3], "72.00 ± 2.00 (3) / 74.00")

    def test_default_eval_dir_is_eval_few(self):
        self.write("eval-few/dstc8", results({"dstc8_sgd": [(1, 40.0, 50.0)]}))
        self.write("eval-few-random", results({"hwu": [(1, 70.0, 71.0)]}))
        cells = self.finetuned_row(self.table())
        self.assertEqual(cells[3], "–")
        self.assertEqual(cells[5], "40.00 (1) / 50.00")

    def test_the_heading_names_the_setting_and_one_table_holds_one(self):
        full = dict(results({"hwu": [(1, 80.0, 81.0)]}), setting="full")
        self.write("eval-full", full)
        out = self.table("--eval-dir", "eval-full")
        self.assertIn("**Fine-tuned full data, test mean ± std (seeds) / val mean**", out)
        self.write("eval-few", dict(results({"hwu": [(1, 70.0, 71.0)]}), setting="few"))
        self.assertIn("**Fine-tuned few-shot, test", self.table())
        self.write("eval-full/dstc8", dict(results({"dstc8_sgd": [(1, 40.0, 50.0)]}),
                                           setting="few"))
        err = self.table("--eval-dir", "eval-full", ok=False)
        self.assertIn("one table of two settings: few in", err)
        self.assertIn("full in", err)

    def test_a_seed_in_two_files_is_an_error(self):
        self.write("eval-few/hwu-s1", results({"hwu": [(1, 70.0, 71.0)]}))
        self.write("eval-few/hwu-again", results({"hwu": [(1, 71.0, 72.0)]}))
        err = self.table(ok=False)
        self.assertIn("hwu seed 1 is in both", err)
        self.assertIn("hwu-again", err)

    def test_pretraining_runs_pool_their_seeds_and_give_the_spread_between_them(self):
        # Two encoders of one recipe: hwu seeds 1-2 in each (the same seed numbers are separate
        # runs), probes averaged over the folders.
        other = os.path.join(self.row, "p12")
        self.write("p11/eval-few/hwu", results({"hwu": [(1, 70.0, 80.0), (2, 72.0, 82.0)]}))
        self.write("p12/eval-few/hwu", results({"hwu": [(1, 76.0, 84.0), (2, 78.0, 86.0)]}))
        for folder, score in (("p11", 0.5), ("p12", 0.7)):
            with open(os.path.join(self.row, folder, "probe-val.json"), "w", encoding="utf-8") as f:
                json.dump({"tag_rows": [{"task": "dstc8", "score": score}]}, f)
            with open(os.path.join(self.row, folder, "probe-test.json"), "w", encoding="utf-8") as f:
                json.dump({"tag_rows": [{"task": "dstc8", "score": score / 2}]}, f)
        p = subprocess.run([sys.executable, SCRIPT, f"r={os.path.join(self.row, 'p11')}+{other}"],
                           capture_output=True, text=True, check=False)
        self.assertEqual(p.returncode, 0, p.stderr)
        lines = p.stdout.strip().splitlines()
        probe_row = next(l for l in lines if l.startswith("| r |")).split(" | ")
        self.assertEqual(probe_row[5], "60.00 / 30.00")  # dstc8: (50 + 70) / 2, (25 + 35) / 2
        finetuned = [l for l in lines if l.startswith("| r |")][1].split(" | ")
        # 70, 72, 76, 78: mean 74, sample std sqrt(40 / 3) = 3.65; val mean 83
        self.assertEqual(finetuned[3], "74.00 ± 3.65 (4 runs, 2 encoders) / 83.00")
        between = lines[-1].split(" | ")
        # encoder means 71 and 77: mean 74, sample std sqrt(18) = 4.24
        self.assertEqual(between[3], "74.00 ± 4.24 (71.00, 77.00)")
        self.assertEqual(between[1], "–")


if __name__ == "__main__":
    unittest.main()
