#!/usr/bin/env python3
"""Python reference of `dialtree sts convert` (the same mapping, docs/sts-format.md), used by
bench/ to compare speed and, byte for byte, output. Standard library only.

usage: convert.py FORMAT INPUT OUTPUT
       convert.py --all DATA_DIR OUT_DIR    (the suite of bench/suite.h, timed per file)
"""
import csv
import glob
import json
import os
import re
import sys
import time

DD, DI = "DEFAULT_DOMAIN", "DEFAULT_INTENT"


def fix_up(tree):
    for intents in tree.values():
        if not intents:
            return {}
        for intent, slots in intents.items():
            if intent == DI and not slots:
                return {}
    return tree


def add_value(tree, d, i, s, value, span=None):
    values = tree.setdefault(d, {}).setdefault(i, {}).setdefault(s, [])
    v = {"value": value}
    if span is not None:
        v["span"] = list(span)
    if v not in values:
        values.append(v)


def sort_tree(tree):
    return {d: {i: {s: tree[d][i][s] for s in sorted(tree[d][i])} for i in sorted(tree[d])}
            for d in sorted(tree)}


def turn(role, text, label=None, extra=None):
    t = {"role": role, "text": text}
    if label is not None:
        t["label"] = sort_tree(fix_up(label))
    if extra:
        t["extra"] = extra
    return t


def record(rid, source, turns):
    return {"format": "sts/1", "id": rid, "source": source, "turns": turns}


def names(path):
    p = os.path.normpath(path)
    return os.path.basename(os.path.dirname(p)), os.path.splitext(os.path.basename(p))[0]


def intent_csv(path):
    source, split = names(path)
    cats = json.load(open(os.path.join(os.path.dirname(path), "categories.json")))
    known = set(cats)
    with open(path, newline="", encoding="utf-8-sig") as f:
        rows = list(csv.reader(f))
    assert rows[0] == ["text", "category"], rows[0]
    for n, (text, label) in enumerate(rows[1:]):
        assert label in known, label
        yield record(f"{source}/{split}/{n}", source, [turn("user", text, {DD: {label: {}}})])


def slot_json(path):
    source, split = names(path)
    for n, ex in enumerate(json.load(open(path, encoding="utf-8"))):
        text = ex["userInput"]["text"]
        tree = {DD: {DI: {}}}
        for lab in ex.get("labels", []):
            a, b = lab["valueSpan"].get("startIndex", 0), lab["valueSpan"]["endIndex"]
            add_value(tree, DD, DI, lab["slot"], text[a:b], (a, b))
        extra = {}
        if ex.get("context", {}).get("requestedSlots"):
            extra["requested_slots"] = ex["context"]["requestedSlots"]
        if "id" in ex:
            extra["source_id"] = ex["id"]
        yield record(f"{source}/{split}/{n}", source, [turn("user", text, tree, extra)])


def top(path):
    source, split = names(path)
    marker = re.compile("_(IN|SL)_")
    for n, line in enumerate(open(path, encoding="utf-8")):
        words_tags, intent = line.rstrip("\r\n").split(" <=> ")
        words, tags = [], []
        for tok in words_tags.split(" "):
            if tok.startswith("::"):
                words.append(":"), tags.append(tok[2:])
            else:
                w, t = tok.split(":", 1)
                words.append(w), tags.append(t)
        text = " ".join(words)
        starts, pos = [], 0
        for w in words:
            starts.append(pos)
            pos += len(w) + 1
        tree = {DD: {intent: {}}}
        open_label, first, last = "", 0, 0

        def close():
            if open_label:
                s, e = starts[first], starts[last] + len(words[last])
                add_value(tree, DD, intent, open_label, text[s:e], (s, e))

        for w, tag in enumerate(tags):
            if not tag.startswith(("B-", "I-")) or len(tag) <= 2:
                close()
                open_label = ""
                continue
            stack = tag[2:]
            m = marker.search(stack, 3)
            outer, nested = (stack[:m.start()], True) if m else (stack, False)
            if outer == open_label and not (tag[0] == "B" and not nested):
                last = w
                continue
            close()
            open_label, first, last = outer, w, w
        close()
        yield record(f"{source}/{split}/{n}", source, [turn("user", text, tree)])


def sgd(path):
    files = sorted(glob.glob(os.path.join(path, "dialogues_*.json"))) if os.path.isdir(path) else [path]
    for fn in files:
        for dlg in json.load(open(fn, encoding="utf-8")):
            turns = []
            for t in dlg["turns"]:
                utt = t["utterance"]
                if t["speaker"] != "USER":
                    turns.append(turn("system", utt))
                    continue
                tree = {}
                for f in t["frames"]:
                    d = re.sub(r"_[0-9]+$", "", f["service"])
                    intent = f.get("state", {}).get("active_intent", "NONE")
                    intent = DI if intent == "NONE" else intent
                    tree.setdefault(d, {}).setdefault(intent, {})
                    spans = [s for s in f["slots"]]
                    for a in f["actions"]:
                        if a["act"] == "INFORM" and a["slot"]:
                            for v in a["values"]:
                                span = next(((s["start"], s["exclusive_end"]) for s in spans
                                             if s["slot"] == a["slot"]
                                             and utt[s["start"]:s["exclusive_end"]] == v), None)
                                add_value(tree, d, intent, a["slot"], v, span)
                        elif a["act"] == "REQUEST" and a["slot"]:
                            tree[d][intent].setdefault(a["slot"], [])
                turns.append(turn("user", utt, tree))
            yield record(f"sgd/{dlg['dialogue_id']}", "sgd", turns)


def text(path):
    split = os.path.splitext(os.path.basename(path))[0]
    with open(path, encoding="utf-8-sig", newline="") as f:
        for n, line in enumerate(f, 1):
            line = line.rstrip("\n").rstrip("\r")
            if line.strip(" \t"):
                yield record(f"{split}/{split}/{n}", split, [turn("user", line)])


CONVERTERS = {"intent-csv": intent_csv, "slot-json": slot_json, "top": top, "sgd": sgd,
              "text": text}


def suite():
    """The (format, input, output) list of bench/suite.h."""
    out = []
    for task in ("banking", "clinc", "hwu"):
        for split in ("train", "val", "test"):
            out.append(("intent-csv", f"dialoglue/{task}/{split}.csv", f"{task}.{split}.jsonl"))
    for task in ("restaurant8k", "dstc8_sgd"):
        for split in ("train", "val", "test"):
            out.append(("slot-json", f"dialoglue/{task}/{split}.json", f"{task}.{split}.jsonl"))
    for split in ("train", "eval", "test"):
        out.append(("top", f"dialoglue/top/{split}.txt", f"top.{split}.jsonl"))
    out.append(("sgd", "pretrain/sgd_train_subset", "sgd.train.jsonl"))
    out.append(("text", "dialoglue/mlm_all_no_multiwoz.txt", "mlm_all.jsonl"))
    return out


def convert(fmt, inp, out):
    n = 0
    with open(out + ".tmp", "w", encoding="utf-8", newline="\n") as f:
        for rec in CONVERTERS[fmt](inp):
            f.write(json.dumps(rec, ensure_ascii=False, separators=(",", ":")) + "\n")
            n += 1
    os.replace(out + ".tmp", out)
    return n


def main():
    if sys.argv[1] == "--all":
        data, outdir = sys.argv[2:4]
        os.makedirs(outdir, exist_ok=True)
        total, total_s = 0, 0.0
        for fmt, inp, out in suite():
            t0 = time.perf_counter()
            n = convert(fmt, os.path.join(data, inp), os.path.join(outdir, out))
            s = time.perf_counter() - t0
            print(f"{inp:<36} {n:8d} records {s:7.3f} s {n / s:10.0f} records/s")
            total, total_s = total + n, total_s + s
        print(f"{'TOTAL':<36} {total:8d} records {total_s:7.3f} s {total / total_s:10.0f} records/s")
        return
    fmt, inp, out = sys.argv[1:4]
    n = convert(fmt, inp, out)
    print(f"{inp}: {n} records -> {out}")


if __name__ == "__main__":
    main()
