#!/usr/bin/env python3
"""Serve a saved tagging model and check that its parse route answers DialoGLUE's test texts with
the spans of the test predictions that `eval dialoglue --save-models` wrote for the same model
(docs/serving.md "Parsing"). Each test example's words are joined by one space into a text and
sent to POST /parse (batches of --batch, left truncation as fine-tuning cuts); each answer's
entities (their "words" ranges) are compared with the spans of the predicted word tags in
test_word_tags.jsonl, read by DialoGLUE's rule (data/dialoglue_labels.h tag_spans), and TOP's
intent with the predicted one.

usage: scripts/check-parse.py RUN_DIR   (e.g. runs/eval-few-tokens/restaurant8k/seed-1, which holds
       model/ and test_word_tags.jsonl)   env: DIALTREE (build/cli/dialtree)
Prints the number of texts whose spans (and intent) agree, and the first disagreements; exits 1
when any disagree.
"""
import json
import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request


def tag_spans(tags):
    """DialoGLUE's reading of BIO tags (docs/dialoglue.md §4 step 6): (label, start, end)."""
    spans, label, start = [], None, 0
    for i, t in enumerate(tags + ["O"]):
        if t.startswith("I-") and label is not None and t[2:] == label:
            continue
        if label is not None:
            spans.append((label, start, i))
            label = None
        if t.startswith("B-"):
            label, start = t[2:], i
    return spans


def post(url, body):
    req = urllib.request.Request(url, json.dumps(body).encode(), {"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=300) as r:
        return json.loads(r.read())


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    run = sys.argv[1]
    model, preds_path = os.path.join(run, "model"), os.path.join(run, "test_word_tags.jsonl")
    for path in (model, preds_path):
        if not os.path.exists(path):
            sys.exit(f"check-parse: {path} does not exist (eval dialoglue --save-models writes it)")
    with open(preds_path, encoding="utf-8") as f:
        preds = [json.loads(line) for line in f if line.strip()]
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    binary = os.environ.get("DIALTREE", "build/cli/dialtree")
    # bf16 as fine-tuning predicted (where the CPU has it; float32 elsewhere, as fine-tuning).
    server = subprocess.Popen([binary, "serve", "--model", model, "--port", str(port), "--host", "127.0.0.1",
                               "--bf16", "true"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    base = f"http://127.0.0.1:{port}"
    try:
        for _ in range(600):
            try:
                urllib.request.urlopen(base + "/health", timeout=1)
                break
            except (urllib.error.URLError, ConnectionError):
                if server.poll() is not None:
                    sys.exit("check-parse: the server stopped:\n" + server.stderr.read())
                time.sleep(0.1)
        agree, shown, batch = 0, 0, 32
        started = time.time()
        for i in range(0, len(preds), batch):
            part = preds[i:i + batch]
            answers = post(base + "/parse", {"inputs": [" ".join(p["words"]) for p in part],
                                             "truncate": True, "truncation_direction": "left"})
            for k, (p, a) in enumerate(zip(part, answers)):
                want = tag_spans(p["tags"])
                got = [(e["entity"], e["words"][0], e["words"][1]) for e in a["entities"]]
                same = got == want and (a["intent"] or {}).get("name") == p.get("intent")
                agree += same
                if not same and shown < 5:
                    shown += 1
                    print(f"example {i + k}: {' '.join(p['words'])!r}\n  predicted {want} "
                          f"{p.get('intent')}\n  served    {got} {(a['intent'] or {}).get('name')}")
        seconds = time.time() - started
    finally:
        server.terminate()
        server.wait()
    print(f"check-parse: {agree} of {len(preds)} test texts served with the predicted spans"
          f"{' and intent' if preds and 'intent' in preds[0] else ''} "
          f"({len(preds) / seconds:.0f} texts/s through /parse)")
    sys.exit(0 if agree == len(preds) else 1)


if __name__ == "__main__":
    main()
