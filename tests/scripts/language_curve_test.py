#!/usr/bin/python3
"""scripts/language-curve.py: fine-tuned val scores placed at their checkpoint's step and
train_seconds (mean over seeds, then over tasks), the run's records kept, and its errors.
Run by ctest (label scripts)."""

import json
import os
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(ROOT, "scripts", "language-curve.py")


def write_json(path, obj):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        json.dump(obj, f)


def results(task, runs):
    return {"tasks": {task: {"runs": [{"seed": s, "test": t, "val": v} for s, t, v in runs]}}}


class LanguageCurve(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        d = self.tmp.name
        self.run_dir = os.path.join(d, "pretrain")
        os.makedirs(self.run_dir)
        self.records = [
            {"step": 100, "loss": 5.0, "examples_per_second": 10.0, "train_seconds": 60.0},
            {"step": 200, "loss": 4.0, "examples_per_second": 10.0, "train_seconds": 120.0},
            {"step": 200, "eval_probe_hwu_accuracy": 0.5},
        ]
        with open(os.path.join(self.run_dir, "metrics.jsonl"), "w", encoding="utf-8") as f:
            f.writelines(json.dumps(r) + "\n" for r in self.records)
        self.out_dir = os.path.join(d, "curves", "m")
        self.scratch = os.path.join(d, "scratch")
        self.ckpt = os.path.join(d, "lang", "m-100", "eval-few-random")
        self.final = os.path.join(d, "lang", "m", "eval-few-random")
        write_json(os.path.join(self.scratch, "results.json"),
                   {"tasks": {"hwu": results("hwu", [(1, 0, 40.0)])["tasks"]["hwu"],
                              "banking": results("banking", [(1, 0, 30.0)])["tasks"]["banking"]}})
        write_json(os.path.join(self.ckpt, "hwu-s1", "results.json"),
                   results("hwu", [(1, 60.0, 62.0)]))
        write_json(os.path.join(self.ckpt, "hwu-s2", "results.json"),
                   results("hwu", [(2, 60.0, 64.0)]))
        write_json(os.path.join(self.ckpt, "banking-s1", "results.json"),
                   results("banking", [(1, 50.0, 57.0)]))
        write_json(os.path.join(self.final, "results.json"),
                   {"tasks": {"hwu": results("hwu", [(1, 0, 70.0)])["tasks"]["hwu"],
                              "banking": results("banking", [(1, 0, 60.0)])["tasks"]["banking"]}})

    def tearDown(self):
        self.tmp.cleanup()

    def run_script(self, *args, ok=True):
        p = subprocess.run([sys.executable, SCRIPT, self.run_dir, self.out_dir, *args],
                           capture_output=True, text=True, check=False)
        self.assertEqual(p.returncode == 0, ok, p.stderr)
        return p.stdout if ok else p.stderr

    def test_points_at_their_steps(self):
        out = self.run_script(f"0={self.scratch}", f"100={self.ckpt}", f"final={self.final}")
        self.assertIn("step 0 (0.0 min): banking 30.00, hwu 40.00, mean 35.00", out)
        self.assertIn("step 100 (1.0 min): banking 57.00, hwu 63.00, mean 60.00", out)
        with open(os.path.join(self.out_dir, "metrics.jsonl"), encoding="utf-8") as f:
            written = [json.loads(line) for line in f]
        # In step order: step 0's point first, step 100's after the run's step-100 record.
        self.assertEqual([r["step"] for r in written], [0, 100, 100, 200, 200, 200])
        self.assertEqual(written[0]["train_seconds"], 0.0)
        self.assertEqual([written[1], written[3], written[4]], self.records)
        written = [written[2], written[5]]
        self.assertEqual(written[0]["step"], 100)
        self.assertEqual(written[0]["train_seconds"], 60.0)
        self.assertAlmostEqual(written[0]["eval_finetuned_val_hwu_accuracy"], 0.63)
        self.assertAlmostEqual(written[0]["eval_finetuned_val_mean_accuracy"], 0.60)
        self.assertEqual(written[1]["step"], 200)
        self.assertAlmostEqual(written[1]["eval_finetuned_val_mean_accuracy"], 0.65)

    def test_seeds_choose_the_runs(self):
        out = self.run_script(f"100={self.ckpt}", "--seeds", "2", "--tasks", "hwu")
        self.assertIn("step 100 (1.0 min): hwu 64.00, mean 64.00", out)
        self.assertIn("no banking result of seeds 2",
                      self.run_script(f"100={self.ckpt}", "--seeds", "2", ok=False))

    def test_errors_name_what_is_missing(self):
        self.assertIn("no training record at step 150",
                      self.run_script(f"150={self.ckpt}", ok=False))
        self.assertIn("no clinc result",
                      self.run_script(f"100={self.ckpt}", "--tasks", "hwu,clinc", ok=False))
        self.assertIn("no such folder",
                      self.run_script(f"100={self.ckpt}-gone", ok=False))
        self.assertIn("expected STEP=RESULTS", self.run_script("100", ok=False))


if __name__ == "__main__":
    unittest.main()
