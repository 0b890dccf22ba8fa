#!/usr/bin/python3
"""scripts/scoreboard.py: rows pooled from several results files (one encoder's runs made in
parts, or several pretraining runs), worked examples of mean ± sample std, and its errors.
Run by ctest (label scripts)."""

import json
import os
import statistics
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(ROOT, "scripts", "scoreboard.py")


def results(model, setting, tasks):
    """A results.json object: tasks {task: [(seed, test, val), ...]}."""
    out = {"format": "dialtree-dialoglue-results/1", "model": model, "setting": setting,
           "tasks": {}}
    for task, runs in tasks.items():
        tests = [t for _, t, _ in runs]
        out["tasks"][task] = {
            "mean": statistics.fmean(tests),
            "std": statistics.stdev(tests) if len(tests) > 1 else 0.0,
            "runs": [{"seed": s, "test": t, "val": v} for s, t, v in runs]}
    return out


class Scoreboard(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = self.tmp.name

    def tearDown(self):
        self.tmp.cleanup()

    def write(self, name, obj):
        path = os.path.join(self.dir, name)
        os.makedirs(path, exist_ok=True)
        with open(os.path.join(path, "results.json"), "w", encoding="utf-8") as f:
            json.dump(obj, f)
        return path

    def run_board(self, *rows, ok=True):
        out = os.path.join(self.dir, "board")
        args = [sys.executable, SCRIPT, "--settings", "few", "--out", out]
        for r in rows:
            args += ["--row", r]
        p = subprocess.run(args, capture_output=True, text=True, check=False)
        if ok:
            self.assertEqual(p.returncode, 0, p.stderr)
            with open(out + ".json", encoding="utf-8") as f:
                return p.stdout, json.load(f)
        self.assertNotEqual(p.returncode, 0)
        return p.stderr, None

    def test_parts_of_one_encoder_pool_into_one_cell(self):
        a = self.write("a", results("m1", "few", {"hwu": [(1, 70.0, 71.0), (2, 72.0, 73.0)],
                                                   "banking": [(1, 60.0, 61.0)]}))
        b = self.write("b", results("m1", "few", {"hwu": [(3, 74.0, 75.0)]}))
        text, board = self.run_board(f"main={a}+{b}")
        row = board["settings"]["few"]["rows"][0]
        hwu = row["tasks"]["hwu"]
        # 70, 72, 74: mean 72, sample std 2 (deviations -2, 0, 2; 8 / 2 = 4).
        self.assertEqual(hwu["runs"], 3)
        self.assertAlmostEqual(hwu["mean"], 72.0)
        self.assertAlmostEqual(hwu["std"], 2.0)
        self.assertAlmostEqual(hwu["val_mean"], 73.0)
        self.assertEqual(hwu["encoders"], 1)
        self.assertEqual(row["models"], ["m1"])
        self.assertIn("| main | 60.00 (1) | 72.00 ± 2.00 (3) | – |", text)
        # The figure's input: the row as one results.json object, every run with its seed.
        with open(os.path.join(self.dir, "board-few.rows.json"), encoding="utf-8") as f:
            plot = json.load(f)
        self.assertEqual([o["model"] for o in plot], ["main"])
        self.assertEqual(plot[0]["tasks"]["hwu"]["runs"],
                         [{"seed": 1, "test": 70.0}, {"seed": 2, "test": 72.0},
                          {"seed": 3, "test": 74.0}])
        self.assertEqual(plot[0]["tasks"]["hwu"]["metric"], "accuracy")

    def test_several_pretraining_runs_say_how_many_encoders(self):
        a = self.write("a", results("run1", "few", {"hwu": [(1, 70.0, 0), (2, 72.0, 0)]}))
        b = self.write("b", results("run2", "few", {"hwu": [(1, 76.0, 0), (2, 78.0, 0)]}))
        text, board = self.run_board(f"main={a}+{b}")
        hwu = board["settings"]["few"]["rows"][0]["tasks"]["hwu"]
        self.assertEqual((hwu["runs"], hwu["encoders"]), (4, 2))
        # 70, 72, 76, 78: mean 74, sum of squares 16+4+4+16 = 40, / 3.
        self.assertAlmostEqual(hwu["std"], (40 / 3) ** 0.5)
        self.assertIn("74.00 ± 3.65 (4 runs, 2 encoders)", text)

    def test_the_spread_between_pretraining_runs_weighs_each_encoder_once(self):
        # Run 1 fine-tuned with three seeds, run 2 with one: the pooled mean leans on run 1.
        a = self.write("a", results("run1", "few", {"hwu": [(1, 70.0, 0), (2, 72.0, 0),
                                                             (3, 74.0, 0)],
                                                     "banking": [(1, 60.0, 0)]}))
        b = self.write("b", results("run2", "few", {"hwu": [(1, 78.0, 0)]}))
        one = self.write("one", results("run3", "few", {"hwu": [(1, 50.0, 0)]}))
        text, board = self.run_board(f"main={a}+{b}", f"single={one}")
        hwu = board["settings"]["few"]["rows"][0]["tasks"]["hwu"]
        # Pooled: 70, 72, 74, 78 -> 73.5. Encoders: 72 and 78 -> 75, sample std sqrt(18).
        self.assertAlmostEqual(hwu["mean"], 73.5)
        self.assertEqual(hwu["encoder_means"], [72.0, 78.0])
        self.assertAlmostEqual(hwu["encoder_mean"], 75.0)
        self.assertAlmostEqual(hwu["encoder_std"], 18 ** 0.5)
        self.assertIn("| main | 60.00 (1) | 73.50 ± 3.42 (4 runs, 2 encoders) |", text)
        # The second table: only the rows that pool several encoders, a cell per task.
        between = text.split("Between pretraining runs")[1]
        self.assertIn("| main | (1 encoder) | 75.00 ± 4.24 (72.00, 78.00) | – |", between)
        self.assertNotIn("| single |", between)
        # One encoder everywhere: no second table.
        text, _ = self.run_board(f"single={one}")
        self.assertNotIn("Between pretraining runs", text)

    def test_a_run_given_twice_is_refused(self):
        a = self.write("a", results("m1", "few", {"hwu": [(1, 70.0, 0)]}))
        err, _ = self.run_board(f"main={a}+{a}", ok=False)
        self.assertIn("hwu: model m1 (m1) seed 1 is in both", err)

    def test_encoders_are_told_apart_by_their_weights(self):
        # Every scripts/run.sh run saves its encoder to the same path; the weights differ.
        first = results("runs/main/final", "few", {"hwu": [(1, 70.0, 0)]})
        first["model_weights"] = "10 bytes, fnv1a64 01"
        second = dict(first, model_weights="10 bytes, fnv1a64 02")
        a, b = self.write("a", first), self.write("b", second)
        _, board = self.run_board(f"main={a}+{b}")
        hwu = board["settings"]["few"]["rows"][0]["tasks"]["hwu"]
        self.assertEqual((hwu["runs"], hwu["encoders"]), (2, 2))

    def test_older_files_join_the_encoder_of_their_model_path(self):
        # Seeds 1-2 written before model_weights was recorded, seed 3 after: one encoder.
        old = self.write("old", results("runs/main/final", "few", {"hwu": [(1, 70.0, 0),
                                                                         (2, 72.0, 0)]}))
        new = results("runs/main/final", "few", {"hwu": [(3, 74.0, 0)]})
        new["model_weights"] = "10 bytes, fnv1a64 01"
        new = self.write("new", new)
        _, board = self.run_board(f"main={old}+{new}")
        hwu = board["settings"]["few"]["rows"][0]["tasks"]["hwu"]
        self.assertEqual((hwu["runs"], hwu["encoders"]), (3, 1))
        # Two recorded weights at that path: the older file cannot be told apart, stays its own.
        other = results("runs/main/final", "few", {"hwu": [(4, 76.0, 0)]})
        other["model_weights"] = "10 bytes, fnv1a64 02"
        other = self.write("other", other)
        _, board = self.run_board(f"main={old}+{new}+{other}")
        hwu = board["settings"]["few"]["rows"][0]["tasks"]["hwu"]
        self.assertEqual((hwu["runs"], hwu["encoders"]), (4, 3))

    def test_missing_sources(self):
        a = self.write("a", results("m1", "few", {"hwu": [(1, 70.0, 0)]}))
        gone = os.path.join(self.dir, "gone")
        # Every source missing: the row is left out of that setting and said.
        text, board = self.run_board(f"main={a}", f"later={gone}")
        self.assertEqual([r["name"] for r in board["settings"]["few"]["rows"]], ["main"])
        # One of several missing: an error, not a row that silently lacks runs.
        err, _ = self.run_board(f"main={a}+{gone}", ok=False)
        self.assertIn(f"row 'main': no few results at {gone}", err)
        # A full-data folder in the row is not the few-shot table's: it is passed over.
        full = self.write("full", results("m1", "full", {"hwu": [(1, 90.0, 0)]}))
        text, board = self.run_board(f"main={a}+{full}")
        self.assertIn("| main | – | 70.00 (1) |", text)

    def test_a_source_can_give_some_of_its_tasks(self):
        # One encoder, two recipes: the intent tasks from one folder, dstc8 from the other.
        a = self.write("a", results("m1", "few", {"hwu": [(1, 70.0, 71.0)],
                                                   "dstc8_sgd": [(1, 30.0, 31.0)]}))
        b = self.write("b", results("m1", "few", {"hwu": [(1, 80.0, 81.0)],
                                                   "dstc8_sgd": [(1, 40.0, 41.0)]}))
        text, board = self.run_board(f"main={b}@hwu+{a}@dstc8")
        row = board["settings"]["few"]["rows"][0]
        self.assertAlmostEqual(row["tasks"]["hwu"]["mean"], 80.0)
        self.assertAlmostEqual(row["tasks"]["dstc8"]["mean"], 30.0)
        self.assertEqual(row["tasks"]["hwu"]["runs"], 1)
        # Without the selection the same seed of the same encoder would be there twice.
        err, _ = self.run_board(f"main={b}+{a}", ok=False)
        self.assertIn("give each run once", err)
        err, _ = self.run_board(f"main={b}@banking", ok=False)
        self.assertIn(f"{b}: has no banking (it has dstc8, hwu)", err)
        err, _ = self.run_board(f"main={b}@hwu,slots", ok=False)
        self.assertIn("unknown task 'slots'", err)
        err, _ = self.run_board(f"main={b}@", ok=False)
        self.assertIn("no task after '@'", err)
        # @? takes those of the named tasks a source has, and nothing from a missing source.
        c = self.write("c", results("m2", "few", {"top": [(1, 60.0, 61.0)]}))
        _, board = self.run_board(f"main={b}@?banking,hwu+{c}@?top,dstc8+{self.dir}/none@?hwu")
        row = board["settings"]["few"]["rows"][0]
        self.assertEqual(sorted(row["tasks"]), ["hwu", "top"])
        self.assertAlmostEqual(row["tasks"]["hwu"]["mean"], 80.0)
        self.assertAlmostEqual(row["tasks"]["top"]["mean"], 60.0)
        err, _ = self.run_board(f"main={b}@?hwu+{self.dir}/none@top", ok=False)
        self.assertIn("no few results at", err)

    def test_the_submission_of_a_row_joins_its_sources_tasks(self):
        # The intent tasks from one encoder's folder, dstc8 from another's: one DialoGLUE file.
        a = self.write("a", results("m1", "few", {"hwu": [(1, 70.0, 71.0)],
                                                   "dstc8_sgd": [(1, 30.0, 31.0)]}))
        b = self.write("b", results("m2", "few", {"dstc8_sgd": [(1, 40.0, 41.0)]}))
        hwu = [["alarm_set", "alarm_set"], ["play_music", "alarm_query"]]  # two seeds' lists
        for folder, sub in ((a, {"hwu": hwu, "dstc8": [["a"]]}), (b, {"dstc8": [["b"]]})):
            with open(os.path.join(folder, "submission.json"), "w", encoding="utf-8") as f:
                json.dump(sub, f)
        out = os.path.join(self.dir, "board")
        args = [sys.executable, SCRIPT, "--settings", "few", "--out", out,
                "--row", f"other={a}", "--row", f"main={a}@hwu+{b}@dstc8", "--submission", "main"]
        p = subprocess.run(args, capture_output=True, text=True, check=False)
        self.assertEqual(p.returncode, 0, p.stderr)
        with open(out + "-few.submission.json", encoding="utf-8") as f:
            self.assertEqual(json.load(f), {"hwu": hwu, "dstc8": [["b"]]})
        # Errors: a task from two sources, a folder without the file, a row that is not there.
        def refused(row, name="main"):
            p = subprocess.run([sys.executable, SCRIPT, "--settings", "few", "--out", out,
                                "--row", row, "--submission", name],
                               capture_output=True, text=True, check=False)
            self.assertNotEqual(p.returncode, 0)
            return p.stderr
        self.assertIn(f"dstc8 is in both {a}/submission.json and {b}/submission.json",
                      refused(f"main={a}@dstc8+{b}"))
        os.remove(os.path.join(b, "submission.json"))
        self.assertIn(f"{b}/submission.json: no submission file", refused(f"main={a}@hwu+{b}"))
        self.assertIn("--submission 'best': no such row (main)", refused(f"main={a}", "best"))

    def test_dstc8_folder_name_and_average_over_six(self):
        tasks = {t: [(1, 50.0, 0)] for t in ("banking", "hwu", "clinc", "restaurant8k", "top")}
        tasks["dstc8_sgd"] = [(1, 20.0, 0)]
        a = self.write("a", results("m", "few", tasks))
        _, board = self.run_board(f"all={a}")
        row = board["settings"]["few"]["rows"][0]
        self.assertAlmostEqual(row["tasks"]["dstc8"]["mean"], 20.0)
        self.assertAlmostEqual(row["average"], 45.0)


class ClassicalJson(unittest.TestCase):
    """bench/reference/classical_baseline.py --json adds to an earlier file of its recipe."""

    def test_earlier_objects(self):
        sys.path.insert(0, os.path.join(ROOT, "bench", "reference"))
        import classical_baseline as cb  # pylint: disable=import-outside-toplevel
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "classical.json")
            self.assertEqual(cb.earlier_objects(path), {})  # no file yet
            mine = cb.results_object("few", {"hwu": (71.5, 70.9, 640, 1076)}, {"hwu": "accuracy"})
            other = dict(mine, setting="full", options={"intent": "another recipe"})
            cb.write_json(path, [mine])
            kept = cb.earlier_objects(path)
            self.assertEqual(list(kept), ["few"])
            self.assertEqual(kept["few"]["tasks"]["hwu"]["mean"], 70.9)
            # Another recipe's file is moved aside whole, never overwritten.
            cb.write_json(path, [mine, other])
            self.assertEqual(cb.earlier_objects(path), {})
            self.assertFalse(os.path.exists(path))
            with open(path + ".previous", encoding="utf-8") as f:
                self.assertEqual(json.load(f), [mine, other])
            cb.write_json(path, [other])
            self.assertEqual(cb.earlier_objects(path), {})
            self.assertTrue(os.path.exists(path + ".previous-2"))
            with open(path, "w", encoding="utf-8") as f:
                f.write('{"setting": "few"}')
            with self.assertRaises(SystemExit) as e:
                cb.earlier_objects(path)
            self.assertIn("cannot add to it", str(e.exception))


if __name__ == "__main__":
    unittest.main()
