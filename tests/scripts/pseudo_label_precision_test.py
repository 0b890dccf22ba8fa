#!/usr/bin/python3
"""scripts/pseudo-label-precision.py: a worked example of the precision (a text train.csv holds
twice counts right with either label), the table it prints, and its errors naming file and line.
Run by ctest (label scripts)."""

import json
import os
import subprocess
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(ROOT, "scripts", "pseudo-label-precision.py")


def record(text, intent):
    return {"format": "sts/1", "id": "x", "source": "hwu",
            "turns": [{"role": "user", "text": text, "label": {"DEFAULT_DOMAIN": {intent: {}}}}]}


class PseudoLabelPrecision(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        d = self.tmp.name
        self.data = os.path.join(d, "dialoglue")
        os.makedirs(os.path.join(self.data, "hwu"))
        with open(os.path.join(self.data, "hwu", "train.csv"), "w", encoding="utf-8") as f:
            f.write('text,category\nwake me at 7,alarm_set\n"play jazz, please",play_music\n'
                    "what time is it,datetime_query\nwhat time is it,alarm_query\n")
        self.pseudo = os.path.join(d, "pseudo")
        os.makedirs(self.pseudo)
        self.write([record("wake me at 7", "alarm_set"), record("play jazz, please", "alarm_set"),
                    record("what time is it", "alarm_query")])

    def tearDown(self):
        self.tmp.cleanup()

    def write(self, records, raw=""):
        with open(os.path.join(self.pseudo, "hwu.pseudo.jsonl"), "w", encoding="utf-8") as f:
            f.writelines(json.dumps(r) + "\n" for r in records)
            f.write(raw)

    def run_script(self, *folders):
        return subprocess.run(["/usr/bin/python3", SCRIPT, "--data", self.data, *folders],
                              capture_output=True, text=True)

    def test_precision_of_a_worked_example(self):
        done = self.run_script(self.pseudo)
        self.assertEqual(done.returncode, 0, done.stderr)
        # 2 of 3 right: "what time is it" is in train.csv with both labels.
        self.assertEqual(done.stdout.splitlines(), [
            "| pseudo-labels | banking | clinc | hwu |",
            "|---|---|---|---|",
            f"| {self.pseudo} | – | – | 66.67 (3) |",
        ])

    def test_a_text_train_lacks_names_file_and_line(self):
        self.write([record("wake me at 7", "alarm_set"), record("order a pizza", "takeaway")])
        done = self.run_script(self.pseudo)
        self.assertEqual(done.returncode, 2)
        self.assertIn("hwu.pseudo.jsonl:2", done.stderr)
        self.assertIn("'order a pizza' is not in train.csv", done.stderr)

    def test_a_record_without_one_intent_names_file_and_line(self):
        self.write([record("wake me at 7", "alarm_set")],
                   raw='{"turns": [{"text": ["x"], "label": {"D": {"i": {}}}}]}\n')
        done = self.run_script(self.pseudo)
        self.assertEqual(done.returncode, 2)
        self.assertIn("hwu.pseudo.jsonl:2: expected an sts/1 record", done.stderr)

    def test_bad_train_csv_and_bad_bytes_are_named(self):
        train = os.path.join(self.data, "hwu", "train.csv")
        with open(train, "w", encoding="utf-8") as f:
            f.write("wake me at 7,alarm_set\n")  # no header
        done = self.run_script(self.pseudo)
        self.assertEqual(done.returncode, 2)
        self.assertIn("train.csv:1: expected the header text,category", done.stderr)
        with open(train, "w", encoding="utf-8") as f:
            f.write("text,category\nwake me at 7\n")  # a short row
        done = self.run_script(self.pseudo)
        self.assertEqual(done.returncode, 2)
        self.assertIn("train.csv:2: expected two fields", done.stderr)
        with open(train, "wb") as f:  # a BOM is fine
            f.write("\ufefftext,category\nwake me at 7,alarm_set\n".encode("utf-8"))
        self.write([record("wake me at 7", "alarm_set")])
        done = self.run_script(self.pseudo)
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertIn("| 100.00 (1) |", done.stdout)
        with open(os.path.join(self.pseudo, "hwu.pseudo.jsonl"), "wb") as f:
            f.write(b"\xff\xfe\n")
        done = self.run_script(self.pseudo)
        self.assertEqual(done.returncode, 2)
        self.assertIn("hwu.pseudo.jsonl: not UTF-8", done.stderr)
        self.assertNotIn("Traceback", done.stderr)

    def test_not_json_and_a_missing_folder(self):
        self.write([record("wake me at 7", "alarm_set")], raw="not json\n")
        done = self.run_script(self.pseudo)
        self.assertEqual(done.returncode, 2)
        self.assertIn("hwu.pseudo.jsonl:2: not JSON", done.stderr)
        done = self.run_script(os.path.join(self.tmp.name, "nowhere"))
        self.assertEqual(done.returncode, 2)
        self.assertIn("nowhere: no such folder", done.stderr)

    def test_a_folder_without_pseudo_labels(self):
        empty = os.path.join(self.tmp.name, "empty")
        os.makedirs(empty)
        done = self.run_script(empty)
        self.assertEqual(done.returncode, 2)
        self.assertIn("empty: no banking, clinc or hwu .pseudo.jsonl", done.stderr)


if __name__ == "__main__":
    unittest.main()
