#!/usr/bin/env python3
"""Python reference for bench_spm_encode: the same model, lines, repeats and checksum, through
Debian's python3-sentencepiece.   usage: spm_encode.py TOKENIZER_DIR TEXT_FILE [REPEATS]"""
import os
import sys
import time

import sentencepiece as spm


def main():
    sp = spm.SentencePieceProcessor(model_file=os.path.join(sys.argv[1], "spm.model"))
    repeats = int(sys.argv[3]) if len(sys.argv) > 3 else 3
    with open(sys.argv[2], encoding="utf-8", newline="") as f:
        lines = [l.rstrip("\n").rstrip("\r") for l in f.read().split("\n")]
    lines = [l for l in lines if l]
    tokens = checksum = 0
    t0 = time.perf_counter()
    for r in range(repeats):
        for l in lines:
            ids = sp.encode(l)
            tokens += len(ids)
            if r == 0:
                checksum += sum((i + 1) * t for i, t in enumerate(ids))
    s = time.perf_counter() - t0
    n = len(lines) * repeats
    print(f"python {len(lines)} lines x {repeats}: {n / s:.2f} sentences/s, {tokens / s:.2f} tokens/s, "
          f"checksum {checksum % (1 << 64)}")


if __name__ == "__main__":
    main()
