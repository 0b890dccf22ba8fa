#!/usr/bin/python3
"""Adds `train_seconds` to the metrics of a pretraining run logged before it existed.

`dialtree train` now writes `train_seconds` (seconds of optimisation steps so far, evaluation
and saving excluded) on every record of metrics.jsonl, and `dialtree plot --x minutes` draws the
curves against it (docs/plotting.md). This script rebuilds it for older runs: it reads
RUN_DIR/metrics.jsonl and writes RUN_DIR/metrics-with-train-seconds.jsonl (metrics.jsonl itself
is never changed), every record as it was plus `train_seconds`:

- a training record (one with `examples_per_second`) gets the sum over the logging windows up
  to its step of (step - previous logged step) * batch size / examples_per_second. A window's
  examples_per_second is the examples of its steps divided by the seconds of its steps (the
  same step seconds that train_seconds adds up), so a window's seconds equal its examples /
  examples_per_second, and the sum is exact up to the partial last batch of an epoch (counted
  here as a full one). A record whose step is not above the one before it (a resumed run that
  appended to the file) starts its window at the largest step logged before it that is below
  its own;
- an evaluation record (`eval_*` keys, no examples_per_second) gets the train_seconds of the
  training record of its step (0 at step 0). One whose step has no training record (eval_steps
  not a multiple of logging_steps) gets the time at its step within the window that holds it,
  at that window's speed, or, after the last training record, at that record's speed (with a
  warning: an estimate).

The batch size is the examples of one optimisation step: unlabelled_batch_size when
data.unlabelled is not empty, plus per_device_train_batch_size when data.labelled is not empty,
times gradient_accumulation_steps (all from RUN_DIR/config.yaml), times world_size (from
RUN_DIR/env.json, 1 without it). --batch-size N replaces all of that.

usage: scripts/add-train-seconds.py RUN_DIR [--batch-size N]
Prints the file it wrote and the train_seconds of the last training record.
"""
import argparse
import bisect
import json
import pathlib
import re
import sys


def fail(message):
    sys.exit(f"error: {message}")


def tiny_yaml(text):
    """The keys this script needs from a dialtree config.yaml, without PyYAML: top-level
    `key: value` scalars, and data.labelled / data.unlabelled as a list ([] or [a, b] flow
    lists, or `- item` lines below the key)."""
    config, data, section, list_key = {}, {}, None, None
    for raw in text.splitlines():
        line = raw.split(" #", 1)[0].rstrip()
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        indent = len(line) - len(line.lstrip())
        m = re.match(r"\s*([A-Za-z_][A-Za-z0-9_]*):\s*(.*)$", line)
        if indent == 0:
            list_key = None
            if m:
                section = m.group(1)
                if m.group(2):
                    config[section] = m.group(2).strip().strip("\"'")
            continue
        if section != "data":
            continue
        if m:
            list_key = None
            value = m.group(2).strip()
            if value.startswith("["):
                inner = value.strip("[]").strip()
                data[m.group(1)] = [v.strip() for v in inner.split(",")] if inner else []
            elif not value:
                list_key = m.group(1)
                data[list_key] = []
            else:
                data[m.group(1)] = value
        elif list_key and line.lstrip().startswith("- "):
            data[list_key].append(line.lstrip()[2:].strip())
    config["data"] = data
    return config


def read_config(path):
    text = path.read_text()
    try:
        import yaml  # PyYAML, when installed
    except ImportError:
        return tiny_yaml(text)
    return yaml.safe_load(text) or {}


def batch_size(run_dir):
    """Examples per optimisation step, from RUN_DIR/config.yaml and env.json (see above)."""
    config_path = run_dir / "config.yaml"
    if not config_path.is_file():
        fail(f"{config_path}: no such file (give --batch-size N)")
    config = read_config(config_path)
    data = config.get("data") or {}
    size = 0
    for stream, key in (("unlabelled", "unlabelled_batch_size"),
                        ("labelled", "per_device_train_batch_size")):
        if data.get(stream):
            if key not in config:
                fail(f"{config_path}: no {key} (give --batch-size N)")
            size += int(config[key])
    if size == 0:
        fail(f"{config_path}: neither data.unlabelled nor data.labelled lists a file "
             "(give --batch-size N)")
    size *= int(config.get("gradient_accumulation_steps", 1))
    env_path = run_dir / "env.json"
    if env_path.is_file():
        size *= int(json.loads(env_path.read_text()).get("world_size", 1))
    return size


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("run_dir", type=pathlib.Path, metavar="RUN_DIR")
    ap.add_argument("--batch-size", type=int,
                    help="examples per optimisation step (default: from config.yaml, env.json)")
    args = ap.parse_args()
    metrics = args.run_dir / "metrics.jsonl"
    if not metrics.is_file():
        fail(f"{metrics}: no such file")
    if args.batch_size is not None and args.batch_size < 1:
        fail("--batch-size must be >= 1")
    batch = args.batch_size if args.batch_size is not None else batch_size(args.run_dir)

    records = []
    lines = metrics.read_text().split("\n")
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
        except json.JSONDecodeError as e:
            if n == len(lines):  # the file ends inside it: a run still writing, or killed
                print(f"warning: {metrics}: line {n} is unfinished (no newline, not JSON): "
                      "skipped", file=sys.stderr)
                continue
            fail(f"{metrics}: line {n}: invalid JSON: {e}")
        if not isinstance(rec, dict) or not isinstance(rec.get("step"), int):
            fail(f"{metrics}: line {n}: not an object with an integer step")
        records.append((n, rec))

    # Training records, in file order: each window starts at the largest step logged before it
    # that is below its own (0 at the start).
    seconds = {0: 0.0}  # training step -> train_seconds (a step logged again: the later one)
    eps = {}  # training step -> its window's examples_per_second
    steps = [0]  # sorted keys of `seconds`
    for n, rec in records:
        if "examples_per_second" not in rec:
            continue
        step, speed = rec["step"], rec["examples_per_second"]
        if not isinstance(speed, (int, float)) or speed <= 0:
            fail(f"{metrics}: line {n}: examples_per_second must be a number > 0")
        prev = steps[bisect.bisect_left(steps, step) - 1] if step > 0 else 0
        rec["train_seconds"] = seconds[prev] + (step - prev) * batch / speed
        if step not in seconds:
            bisect.insort(steps, step)
        seconds[step], eps[step] = rec["train_seconds"], speed

    # Evaluation records: the training record's of their step, else within its window.
    for n, rec in records:
        if "examples_per_second" in rec:
            continue
        if not any(k.startswith("eval_") for k in rec):
            fail(f"{metrics}: line {n}: neither a training record (examples_per_second) nor an "
                 "evaluation record (eval_* keys)")
        step = rec["step"]
        if step in seconds:
            rec["train_seconds"] = seconds[step]
            continue
        i = bisect.bisect_left(steps, step)
        prev = steps[i - 1]
        if i < len(steps):
            speed = eps[steps[i]]  # the window that holds the step
        elif prev in eps:
            speed = eps[prev]
            print(f"warning: {metrics}: line {n}: evaluation at step {step}, after the last "
                  f"training record (step {prev}): its train_seconds assumes that record's speed",
                  file=sys.stderr)
        else:
            fail(f"{metrics}: no training record (examples_per_second) to time line {n} by")
        rec["train_seconds"] = seconds[prev] + (step - prev) * batch / speed

    out = args.run_dir / "metrics-with-train-seconds.jsonl"
    out.write_text("".join(json.dumps(rec, separators=(",", ":")) + "\n" for _, rec in records))
    last = max((s for s in steps if s in eps), default=None)
    print(out)
    if last is not None:
        print(f"batch size {batch}: train_seconds {seconds[last]:.1f} at step {last} "
              f"({seconds[last] / 60:.1f} min)")


if __name__ == "__main__":
    main()
