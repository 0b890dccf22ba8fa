"""DialoGLUE's task names, as its answer key and dialtree's data folders spell them, and the
word-level records of `dialtree eval words`: one place for the scripts under scripts/ and
bench/reference (docs/dialoglue.md, the task table: DSTC8's data folder and results.json key is
`dstc8_sgd`, its name in the answer key `gt_test.json` and in a submission is `dstc8`).

Import from a script under scripts/ as `import dialoglue_tasks` (a script's own folder is on
sys.path); from elsewhere, put this folder on sys.path first.
"""

import json
import os
import subprocess
import sys

# DialoGLUE name (answer key, submission, --task) -> data folder and results.json key, where they differ.
FOLDER_OF = {"dstc8": "dstc8_sgd"}
NAME_OF = {folder: name for name, folder in FOLDER_OF.items()}


def dialoglue_name(task):
    """The answer key's name of a task given by either name: "dstc8_sgd" -> "dstc8"; others as given."""
    return NAME_OF.get(task, task)


def folder_name(task):
    """The data folder's (and results.json's) name of a task given by either name: "dstc8" ->
    "dstc8_sgd"; others as given."""
    return FOLDER_OF.get(task, task)


def words_of(dialtree, task, split, data_dir, work):
    """The records of `dialtree eval words --task task --split split` ({"words", "tags"} per
    example, DialoGLUE's word level), written under the folder `work` and read back.
    Exits 1 with what dialtree printed when it fails (these are command-line scripts)."""
    path = os.path.join(work, f"{folder_name(task)}.{split}.words.jsonl")
    p = subprocess.run([dialtree, "eval", "words", "--task", task, "--split", split,
                        "--data-dir", data_dir, "--out", path],
                       capture_output=True, text=True, check=False)
    if p.returncode != 0:
        sys.exit(f"{os.path.basename(sys.argv[0])}: dialtree eval words --task {task} --split "
                 f"{split} failed: {p.stderr.strip()}")
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]
