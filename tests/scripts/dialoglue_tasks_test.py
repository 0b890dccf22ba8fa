#!/usr/bin/python3
"""scripts/dialoglue_tasks.py: DSTC8's two names map both ways and every other task is its own
name; words_of runs `dialtree eval words` with the task, split and data folder it was given and
reads back the records it wrote, and exits naming the command and dialtree's message when dialtree
fails. A stand-in dialtree (a shell script) plays the binary, so the test needs no build. Run by
ctest (label scripts)."""

import os
import stat
import subprocess
import sys
import tempfile
import textwrap
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "scripts"))
import dialoglue_tasks as dt  # noqa: E402


class Names(unittest.TestCase):
    def test_dstc8_both_ways(self):
        self.assertEqual(dt.dialoglue_name("dstc8_sgd"), "dstc8")
        self.assertEqual(dt.dialoglue_name("dstc8"), "dstc8")
        self.assertEqual(dt.folder_name("dstc8"), "dstc8_sgd")
        self.assertEqual(dt.folder_name("dstc8_sgd"), "dstc8_sgd")

    def test_other_tasks_unchanged(self):
        for task in ("banking", "clinc", "hwu", "restaurant8k", "top"):
            self.assertEqual(dt.dialoglue_name(task), task)
            self.assertEqual(dt.folder_name(task), task)


FAKE = textwrap.dedent("""\
    #!/bin/sh
    # a stand-in for `dialtree eval words`: records its arguments, writes two records to --out
    echo "$@" > "$(dirname "$0")/args"
    [ "$6" = "nosuch" ] && { echo "no split 'nosuch' in $8/$4" >&2; exit 1; }
    printf '{"words": ["a", "b"], "tags": ["O", "B-x"]}\\n\\n{"words": [], "tags": []}\\n' > "${10}"
    """)


class WordsOf(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.bin = os.path.join(self.tmp.name, "dialtree")
        with open(self.bin, "w", encoding="utf-8") as f:
            f.write(FAKE)
        os.chmod(self.bin, stat.S_IRWXU)

    def tearDown(self):
        self.tmp.cleanup()

    def test_records_and_command(self):
        recs = dt.words_of(self.bin, "dstc8", "test", "/data", self.tmp.name)
        self.assertEqual(recs, [{"words": ["a", "b"], "tags": ["O", "B-x"]},
                                {"words": [], "tags": []}])
        with open(os.path.join(self.tmp.name, "args"), encoding="utf-8") as f:
            self.assertEqual(f.read().split(), [
                "eval", "words", "--task", "dstc8", "--split", "test", "--data-dir", "/data",
                "--out", os.path.join(self.tmp.name, "dstc8_sgd.test.words.jsonl")])

    def test_failure_exits_with_dialtree_message(self):
        code = ("import sys; sys.path.insert(0, sys.argv[1]); import dialoglue_tasks as dt; "
                "dt.words_of(sys.argv[2], 'top', 'nosuch', '/data', sys.argv[3])")
        p = subprocess.run([sys.executable, "-c", code, os.path.join(ROOT, "scripts"), self.bin,
                            self.tmp.name], capture_output=True, text=True, check=False)
        self.assertEqual(p.returncode, 1)
        self.assertIn("dialtree eval words --task top --split nosuch failed: "
                      "no split 'nosuch' in /data/top", p.stderr)


if __name__ == "__main__":
    unittest.main()
