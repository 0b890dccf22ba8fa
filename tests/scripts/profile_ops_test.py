#!/usr/bin/python3
"""bench/profile_ops.py: self time per operator from a Chrome trace with nested calls (a worked
example), calls a step, groups, and its errors. Run by ctest (label scripts)."""

import json
import os
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(ROOT, "bench", "profile_ops.py")
sys.path.insert(0, os.path.join(ROOT, "bench"))
import profile_ops  # noqa: E402


def event(name, ts, dur, tid=1):
    return {"name": name, "ph": "X", "ts": ts, "dur": dur, "tid": tid, "pid": "CPU Functions"}


# Two steps on thread 1: aten::linear (100 us) holds aten::addmm (70 us), which holds
# aten::copy_ (20 us); then aten::mul (10 us) on its own. Thread 2: one aten::mul (5 us) that
# overlaps thread 1's linear in time but is not inside it.
TRACE = [
    event("aten::linear", 0, 100), event("aten::addmm", 10, 70), event("aten::copy_", 15, 20),
    event("aten::mul", 120, 10),
    event("aten::linear", 200, 100), event("aten::addmm", 210, 70), event("aten::copy_", 215, 20),
    event("aten::mul", 320, 10),
    event("aten::mul", 50, 5, tid=2),
    {"name": "process_name", "ph": "M", "pid": 0},  # metadata: not an operator call
]


class SelfTimes(unittest.TestCase):
    def test_nested_calls_subtract_their_children(self):
        ops = profile_ops.self_times(TRACE)
        self.assertEqual(ops["aten::linear"], [2, 60.0])  # 2 x (100 - 70)
        self.assertEqual(ops["aten::addmm"], [2, 100.0])  # 2 x (70 - 20)
        self.assertEqual(ops["aten::copy_"], [2, 40.0])
        self.assertEqual(ops["aten::mul"], [3, 25.0])  # 10 + 10 on thread 1, 5 on thread 2
        # The self times add up to what the outermost events cover, per thread.
        self.assertEqual(sum(v[1] for v in ops.values()), 2 * 100 + 2 * 10 + 5)

    def test_groups(self):
        expected = {
            "aten::addmm": "matrix products", "aten::native_layer_norm": "normalisation",
            "NativeLayerNormBackward0": "normalisation", "MulBackward0": "element-wise",
            "aten::_log_softmax": "softmax", "aten::_to_copy": "copies and casts",
            "aten::norm": "optimiser and clipping", "aten::_softmax": "softmax",
            "aten::copy_": "copies and casts", "aten::mul": "element-wise",
            "aten::gelu_backward": "GELU and tanh", "aten::frobnicate": "other"}
        for name, group in expected.items():
            self.assertEqual(profile_ops.group_of(name), group, name)

class CommandLine(unittest.TestCase):
    def run_script(self, *args):
        return subprocess.run([sys.executable, SCRIPT, *args], capture_output=True, text=True)

    def test_table_per_step_and_json(self):
        with tempfile.TemporaryDirectory() as d:
            trace, out = os.path.join(d, "t.json"), os.path.join(d, "ops.json")
            with open(trace, "w", encoding="utf-8") as f:
                json.dump(TRACE, f)
            r = self.run_script(trace, "--steps", "2", "--json", out)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertIn("0.1 ms a step over 2 steps", r.stdout)  # 225 us / 2
            self.assertIn("| aten::addmm | matrix products | 1 | 0.05 | 44.4% |", r.stdout)
            with open(out, encoding="utf-8") as f:
                rows = {row["operator"]: row for row in json.load(f)}
            # 225 us over 2 steps; addmm 100 us -> 0.05 ms a step, 1 call a step, 44.4 %.
            self.assertAlmostEqual(rows["aten::addmm"]["self_ms_per_step"], 0.05)
            self.assertEqual(rows["aten::addmm"]["calls_per_step"], 1.0)
            self.assertAlmostEqual(rows["aten::addmm"]["share"], 100 / 225)
            self.assertAlmostEqual(rows["aten::mul"]["calls_per_step"], 1.5)

    def test_errors_name_the_file(self):
        with tempfile.TemporaryDirectory() as d:
            bad = os.path.join(d, "bad.json")
            with open(bad, "w", encoding="utf-8") as f:
                f.write("[{")
            r = self.run_script(bad, "--steps", "1")
            self.assertEqual(r.returncode, 2)
            self.assertIn(bad, r.stderr)
            empty = os.path.join(d, "empty.json")
            with open(empty, "w", encoding="utf-8") as f:
                json.dump([], f)
            r = self.run_script(empty, "--steps", "1")
            self.assertEqual(r.returncode, 2)
            self.assertIn("no trace events", r.stderr)
            no_dur = os.path.join(d, "no_dur.json")
            with open(no_dur, "w", encoding="utf-8") as f:
                json.dump([{"name": "aten::mul", "ph": "X", "ts": 0, "tid": 1}], f)
            r = self.run_script(no_dur, "--steps", "1")
            self.assertEqual(r.returncode, 2)
            self.assertIn("without ts, dur or name", r.stderr)
            for name, content, why in [
                    ("dict.json", {"other": 1}, "expected a list of trace events"),
                    ("ints.json", [1, 2], "expected a list of trace events"),
                    ("meta.json", [{"name": "p", "ph": "M"}], "no trace events of operator calls"),
                    ("zero.json", [{"name": "aten::mul", "ph": "X", "ts": 0, "dur": 0, "tid": 1}],
                     "last no time")]:
                path = os.path.join(d, name)
                with open(path, "w", encoding="utf-8") as f:
                    json.dump(content, f)
                r = self.run_script(path, "--steps", "1")
                self.assertEqual(r.returncode, 2, name)
                self.assertIn(why, r.stderr)
            r = self.run_script(no_dur, "--steps", "0")
            self.assertEqual(r.returncode, 2)


if __name__ == "__main__":
    unittest.main()
