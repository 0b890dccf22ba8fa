#!/usr/bin/python3
"""scripts/stage-table.py: fine-tuning results merged by seed from a results folder of many tasks
and from per-task folders, the --eval-dir choice, a worked mean ± sample std, and the error for a
seed found twice. Run by ctest (label scripts)."""

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

    def test_a_seed_in_two_files_is_an_error(self):
        self.write("eval-few/hwu-s1", results({"hwu": [(1, 70.0, 71.0)]}))
        self.write("eval-few/hwu-again", results({"hwu": [(1, 71.0, 72.0)]}))
        err = self.table(ok=False)
        self.assertIn("hwu seed 1 is in both", err)
        self.assertIn("hwu-again", err)


if __name__ == "__main__":
    unittest.main()
