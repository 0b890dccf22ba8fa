#!/usr/bin/python3
"""scripts/finetune-curves.py: a worked example of the best val reached by each epoch (a run that
stopped early keeps its best), the runs whose best epoch lies past the patience window (and its edge), the
per-pretraining-run differences over common seeds, dstc8's folder name, and the errors for a
malformed row, a missing task and rows of two settings. Run by ctest (label scripts)."""

import json
import os
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(ROOT, "scripts", "finetune-curves.py")


def run(seed, vals, test=None):
    """A run.json entry whose val curve is vals (epochs 1, 2, ...); best epoch the first best."""
    best = max(range(len(vals)), key=lambda i: (vals[i], -i))
    out = {"seed": seed, "best_epoch": best + 1, "val": vals[best],
           "curve": [{"epoch": i + 1, "val": v} for i, v in enumerate(vals)]}
    if test is not None:
        out["test"] = test
    return out


class FinetuneCurves(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.addCleanup(self.tmp.cleanup)

    def write(self, folder, task, runs, epochs=6, patience=2, setting="few", task_options=None,
              warmup_ratio=None):
        path = os.path.join(self.tmp.name, folder)
        os.makedirs(path, exist_ok=True)
        options = {"num_train_epochs": epochs, "early_stopping_patience": patience}
        if warmup_ratio is not None:
            options["warmup_ratio"] = warmup_ratio
        results = {"setting": setting, "options": options,
                   "tasks": {task: {"runs": runs}}}
        if task_options is not None:
            results["task_options"] = task_options
        with open(os.path.join(path, "results.json"), "w", encoding="utf-8") as f:
            json.dump(results, f)
        return path

    def curves(self, *args, ok=True):
        p = subprocess.run([sys.executable, SCRIPT, *args], capture_output=True, text=True,
                           check=False)
        self.assertEqual(p.returncode == 0, ok, p.stderr)
        return p.stdout if ok else p.stderr

    def rows(self, out):
        """Table rows as lists of cells (headings and rules left out)."""
        return [line.strip("| ").split(" | ") for line in out.splitlines()
                if line.startswith("| ") and not line.startswith("| row") and
                not line.startswith("| by epoch")]

    def test_worked_example(self):
        # Row a, two pretraining runs: run 1 seeds 1-2, run 2 seed 1 (stopped after epoch 3).
        a1 = self.write("a1", "dstc8_sgd", [run(1, [0, 10, 30, 20, 40, 50]),
                                            run(2, [5, 5, 20, 25, 25, 30])])
        a2 = self.write("a2", "dstc8_sgd", [run(1, [10, 40, 30])])
        # Row b: run 1 seeds 1 and 3 (3 has no partner in a), run 2 seed 1.
        b1 = self.write("b1", "dstc8_sgd", [run(1, [0, 20, 20, 20, 20, 20]),
                                            run(3, [90, 90, 90])])
        b2 = self.write("b2", "dstc8_sgd", [run(1, [20, 20, 30, 30, 30, 35])])
        out = self.curves("--task", "dstc8", "--epochs", "1,3,6", f"a={a1}+{a2}", f"b={b1}+{b2}")
        rows = self.rows(out)
        # a by epoch 1: mean(0, 5, 10) = 5; by 3: mean(30, 20, 40) = 30; by 6: mean(50, 30, 40) = 40.
        # Best epochs 6, 6, 2: mean 4.67; past the patience window (> 6 - 2): 2 of 3.
        self.assertEqual(rows[0], ["a", "3", "5.00", "30.00", "40.00", "4.7", "2 of 3"])
        # b by 1: mean(0, 90, 20) = 36.67; by 3: mean(20, 90, 30) = 46.67; by 6: (20+90+35)/3;
        # best epochs 2, 1, 6: mean 3; past the window: 1 of 3.
        self.assertEqual(rows[1], ["b", "3", "36.67", "46.67", "48.33", "3.0", "1 of 3"])
        # a - b per run over common seeds: run 1 seed 1 only (0-0, 30-20, 50-20),
        # run 2 (10-20, 40-30, 40-35).
        self.assertEqual(rows[2], ["≤ 1", "+0.00", "-10.00", "-5.00"])
        self.assertEqual(rows[3], ["≤ 3", "+10.00", "+10.00", "+10.00"])
        self.assertEqual(rows[4], ["≤ 6", "+30.00", "+5.00", "+17.50"])
        self.assertIn("**dstc8: best val reached by epoch**", out)

    def test_no_difference_table_for_unequal_rows(self):
        a = self.write("a", "hwu", [run(1, [1, 2])])
        b = self.write("b", "hwu", [run(1, [3, 4])])
        out = self.curves("--task", "hwu", "--epochs", "2", f"a={a}+{b}", f"b={b}")
        self.assertNotIn("minus", out)
        self.assertEqual(self.rows(out)[0], ["a", "2", "3.00", "2.0", "0 of 2"])

    def test_the_patience_window_edge(self):
        # 6 epochs, patience 2: a best epoch of 4 could have been followed by a stop at 6; 5 not.
        four = self.write("four", "hwu", [run(1, [1, 2, 3, 4, 4, 4])])
        five = self.write("five", "hwu", [run(1, [1, 2, 3, 4, 5, 5])])
        rows = self.rows(self.curves("--task", "hwu", "--epochs", "6", f"4={four}", f"5={five}"))
        self.assertEqual(rows[0][-1], "0 of 1")
        self.assertEqual(rows[1][-1], "1 of 1")

    def test_a_task_section_sets_the_window(self):
        # The same run, best epoch 5: past the window of 6 epochs (> 4), inside that of dstc8's
        # section, 10 epochs (docs/evaluation.md "Per-task options"); another task's is ignored.
        curve = [1, 2, 3, 4, 5, 5]
        plain = self.write("plain", "dstc8_sgd", [run(1, curve)],
                           task_options={"hwu": {"num_train_epochs": 10}})
        section = self.write("section", "dstc8_sgd", [run(1, curve)],
                             task_options={"dstc8_sgd": {"num_train_epochs": 10}})
        rows = self.rows(self.curves("--task", "dstc8", "--epochs", "6", f"p={plain}",
                                     f"s={section}"))
        self.assertEqual(rows[0][-1], "1 of 1")
        self.assertEqual(rows[1][-1], "0 of 1")

    def test_patience_replayed_on_the_curves(self):
        # 10 epochs, warm-up 0.2 (epochs 1-2 do not count), patience 2 in the run's recipe.
        # Run 1 ran to the cap: best 3 at epoch 1, then 3 flat epochs (2 inside the warm-up),
        # best 5 at epoch 5, flat to 8, best 9 at epoch 9.
        # Run 2 was stopped at epoch 6 by patience 2 (best 4 at epoch 4).
        full = run(1, [3, 3, 3, 3, 5, 5, 5, 5, 9, 9], test=90)
        stopped = run(2, [1, 2, 3, 4, 4, 4], test=40)
        a = self.write("a", "hwu", [full, stopped], epochs=10, patience=2, warmup_ratio=0.2)
        out = self.curves("--task", "hwu", "--epochs", "10", "--patience", "1,2,3,0", f"a={a}")
        self.assertIn("**hwu: early stopping replayed on the curves**", out)
        rows = self.rows(out.split("replayed")[1])
        self.assertEqual(len(rows), 4)
        # Patience 1: run 1's first counted flat epoch is 3 (epoch 2 is in the warm-up): it
        # stops there with 3; run 2 stops at 5 with 4.
        # The test score is known where the replay keeps the run's own best epoch: run 2's
        # (epoch 4) at patience 1 and 2, run 1's (epoch 9) only with the patience off.
        self.assertEqual(rows[0], ["a", "1", "2 of 2", "3.50", "4.0", "40.00 (1)"])
        # Patience 2: run 1 stops at 4 with 3; run 2 at 6 with 4 (as it did).
        self.assertEqual(rows[1], ["a", "2", "2 of 2", "3.50", "5.0", "40.00 (1)"])
        # Patience 3: run 1 flat 6-8 after best 5 at 5: stops at 8 with 5; run 2's curve ends at 6
        # before a third flat epoch: undecided.
        self.assertEqual(rows[2], ["a", "3", "1 of 2", "5.00", "8.0", "–"])
        # Off: run 1 delivers its best, 9, after all 10 epochs; run 2 undecided.
        self.assertEqual(rows[3], ["a", "off", "1 of 2", "9.00", "10.0", "90.00 (1)"])
        self.assertIn("not a list of integers",
                      self.curves("--task", "hwu", "--patience", "x", f"a={a}", ok=False))
        self.assertIn(">= 0", self.curves("--task", "hwu", "--patience", "-1", f"a={a}",
                                          ok=False))

    def test_errors_name_the_row_or_file(self):
        a = self.write("a", "hwu", [run(1, [1, 2])])
        full = self.write("full", "hwu", [run(1, [1, 2])], setting="full")
        self.assertIn("expected NAME=FOLDER", self.curves("--task", "hwu", a, ok=False))
        self.assertIn("expected NAME=FOLDER", self.curves("--task", "hwu", f"a={a}+", ok=False))
        err = self.curves("--task", "banking", f"a={a}", ok=False)
        self.assertIn(os.path.join(a, "results.json"), err)
        self.assertIn("no task 'banking' (it has hwu)", err)
        err = self.curves("--task", "hwu", f"a={self.tmp.name}/none", ok=False)
        self.assertIn(os.path.join(self.tmp.name, "none", "results.json"), err)
        err = self.curves("--task", "hwu", f"a={a}", f"f={full}", ok=False)
        self.assertIn("rows of two settings", err)
        self.assertIn("not a list of integers",
                      self.curves("--task", "hwu", "--epochs", "1,x", f"a={a}", ok=False))


if __name__ == "__main__":
    unittest.main()
