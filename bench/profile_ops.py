#!/usr/bin/python3
"""What each operator of a profiled step costs: sums the Chrome trace that
`bench_train_step --profile TRACE` writes (LibTorch's profiler, one complete event per operator
call, nested calls inside their caller) into self time per operator name.

usage: bench/profile_ops.py TRACE --steps N [--top K] [--json FILE]

An event's self time is its duration minus the durations of the events directly inside it on the
same thread, so the self times of a thread add up to the time its outermost events cover. Prints,
per operator, calls a step, self milliseconds a step and the share of all self time, largest
first, then the groups of bench/README.md "What a bf16 step spends its time on" (matrix products,
normalisation, softmax, dropout, GELU and tanh, the optimiser and clipping, copies and casts,
element-wise work, other). LibTorch's profiler records the operators the profiled thread calls:
work inside a thread pool is in its caller's time, and code outside any operator (dialtree's
dropout mask) in none. With
--json, writes the same rows. Exits 2 with the file and what is wrong when the trace cannot be read.
"""

import argparse
import collections
import json
import re
import sys

# Operator names per group, as the words of a name: "aten::native_layer_norm_backward" and
# "NativeLayerNormBackward0" both read native, layer, norm, backward. The first group with a
# word of its list wins.
GROUPS = [
    ("matrix products", {"mm", "matmul", "linear", "addmm", "bmm", "baddbmm", "addbmm", "mkldnn"}),
    ("normalisation", {"layer"}),
    ("softmax", {"softmax", "nll", "cross"}),
    ("dropout", {"dropout", "bernoulli"}),
    ("GELU and tanh", {"gelu", "tanh"}),
    ("optimiser and clipping", {"addcdiv", "addcmul", "sqrt", "lerp", "norm", "foreach"}),
    ("copies and casts", {"copy", "to", "contiguous", "clone", "cat", "index", "gather", "scatter",
                          "masked", "empty", "zeros", "zero", "ones", "fill", "new", "view",
                          "reshape", "transpose", "t", "permute", "expand", "slice", "select",
                          "narrow", "split", "unbind", "squeeze", "unsqueeze", "strided",
                          "stack"}),
    ("element-wise", {"add", "sub", "rsub", "mul", "div", "exp", "log", "sum", "mean", "max",
                      "min", "neg", "pow", "where", "eq", "ne", "gt", "lt", "ge", "le", "abs",
                      "sign"}),
]


def words(name):
    """The lower-case words of an operator name, namespace and trailing digits dropped."""
    bare = re.sub(r"\d+$", "", name.split("::")[-1])
    return set(re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", bare).lower().split("_")) - {""}


def group_of(name):
    """The group of an operator name (GROUPS), "other" when none matches."""
    w = words(name)
    for group, names in GROUPS:
        if w & names:
            return group
    return "other"


def self_times(events):
    """{name: [calls, self microseconds]} over complete events ("ph" "X"), per thread."""
    by_thread = collections.defaultdict(list)
    for e in events:
        if e.get("ph") == "X":
            by_thread[e.get("tid")].append((float(e["ts"]), float(e["dur"]), e["name"]))
    out = collections.defaultdict(lambda: [0, 0.0])
    for evs in by_thread.values():
        evs.sort(key=lambda e: (e[0], -e[1]))  # a caller before what it calls
        stack = []  # [end, name, self]
        def close(until):
            while stack and stack[-1][0] <= until:
                end, name, own = stack.pop()
                out[name][0] += 1
                out[name][1] += own
        for ts, dur, name in evs:
            close(ts)
            if stack:
                stack[-1][2] -= dur
            stack.append([ts + dur, name, dur])
        close(float("inf"))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("trace")
    ap.add_argument("--steps", type=int, required=True, help="timed steps the trace holds")
    ap.add_argument("--top", type=int, default=25)
    ap.add_argument("--json")
    a = ap.parse_args()
    if a.steps < 1:
        print("error: --steps must be at least 1", file=sys.stderr)
        sys.exit(2)

    def fail(why):
        print(f"error: {a.trace}: {why}", file=sys.stderr)
        sys.exit(2)

    try:
        with open(a.trace, encoding="utf-8") as f:
            trace = json.load(f)
    except (OSError, ValueError) as e:
        fail(e)
    events = trace.get("traceEvents") if isinstance(trace, dict) else trace
    if not isinstance(events, list) or not all(isinstance(e, dict) for e in events):
        fail("expected a list of trace events (objects), or an object with traceEvents")
    if not any(e.get("ph") == "X" for e in events):
        fail("no trace events of operator calls (\"ph\": \"X\")")
    try:
        ops = self_times(events)
    except (KeyError, TypeError, ValueError) as e:
        fail(f"an event without ts, dur or name ({e})")
    total = sum(v[1] for v in ops.values())
    if total <= 0:
        fail("the operator calls last no time (every dur is 0)")
    rows = sorted(((name, c / a.steps, us / 1e3 / a.steps, 100 * us / total, group_of(name))
                   for name, (c, us) in ops.items()), key=lambda r: -r[2])
    print(f"self time of every operator: {total / 1e3 / a.steps:.1f} ms a step over {a.steps} steps")
    print("| operator | group | calls a step | self ms a step | share |")
    print("|---|---|---|---|---|")
    for name, calls, ms, share, group in rows[:a.top]:
        print(f"| {name} | {group} | {calls:.0f} | {ms:.2f} | {share:.1f}% |")
    groups = collections.defaultdict(float)
    for _, _, ms, _, group in rows:
        groups[group] += ms
    print("\n| group | self ms a step | share |")
    print("|---|---|---|")
    for group, ms in sorted(groups.items(), key=lambda g: -g[1]):
        print(f"| {group} | {ms:.2f} | {100 * ms * a.steps * 1e3 / total:.1f}% |")
    if a.json:
        try:
            with open(a.json, "w", encoding="utf-8") as f:
                json.dump([{"operator": n, "group": g, "calls_per_step": c, "self_ms_per_step": ms,
                            "share": s / 100} for n, c, ms, s, g in rows], f, indent=1)
        except OSError as e:
            print(f"error: --json {a.json}: {e}", file=sys.stderr)
            sys.exit(2)


if __name__ == "__main__":
    main()
