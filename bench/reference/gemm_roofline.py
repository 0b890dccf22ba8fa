#!/usr/bin/python3
"""How high the pre-training step's MFU can go: its matrix products alone, at their real shapes.

Run with Debian's interpreter and python3-torch (docs/build.md P10), which multiplies through the
same OpenBLAS as LibTorch:
    /usr/bin/python3 bench/reference/gemm_roofline.py [--threads N]

bench/train_step.sh reports MFU as 3 x the forward pass's matrix-product FLOPs per step over the
step time and the best 1024^2 `mm` rate the process measures. This script times each product of
that step (forward, input gradient and weight gradient of every linear layer; the attention
products per example and head; the MLM head) at the step's shapes (bench/README.md "Pre-training
step": 64 sequences of 128 tokens, hidden 256, FFN 1024, 4 heads, vocabulary 8000, 15 % MLM
targets) against the same 1024^2 peak, and prints their FLOP-weighted rate: the MFU of a step
that did nothing but these products, each at its best. Outputs are preallocated: a fresh 32 MB
result per call would time glibc's mmap and the kernel's page faults, not the product
(dialtree's jemalloc keeps its pages, docs/build.md P13).
"""

import argparse
import time

import torch


def rate(m, k, n, batch=1):
    """Best GFLOP/s of [m, k] x [k, n] (batch of them with torch.bmm when batch > 1)."""
    shape = (lambda *d: (batch, *d)) if batch > 1 else (lambda *d: d)
    a, b, c = torch.randn(shape(m, k)), torch.randn(shape(k, n)), torch.empty(shape(m, n))
    f = (lambda: torch.bmm(a, b, out=c)) if batch > 1 else (lambda: torch.mm(a, b, out=c))
    flops = 2.0 * m * k * n * batch
    reps = max(3, int(2e10 / flops))
    f()
    best = float("inf")
    for _ in range(3):
        t = time.perf_counter()
        for _ in range(reps):
            f()
        best = min(best, (time.perf_counter() - t) / reps)
    return flops / best / 1e9, flops


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    tokens, hidden, ffn, vocab, seq, heads = 64 * 128, 256, 1024, 8000, 128, 4
    targets = int(0.15 * tokens / 64 * 32 * 2)  # MLM targets of the two 32-example batches
    head_dim, pairs = hidden // heads, 64 * heads
    shapes = []
    for name, n_in, n_out in (("qkv", hidden, 3 * hidden), ("attention out", hidden, hidden),
                              ("ffn in", hidden, ffn), ("ffn out", ffn, hidden)):
        shapes += [(f"{name} forward", tokens, n_in, n_out, 1),
                   (f"{name} input grad", tokens, n_out, n_in, 1),
                   (f"{name} weight grad", n_out, tokens, n_in, 1)]
    shapes += [("attention QK^T, per example and head", seq, head_dim, seq, pairs),
               ("attention PV, per example and head", seq, seq, head_dim, pairs),
               ("MLM head forward", targets, hidden, vocab, 1),
               ("MLM head input grad", targets, vocab, hidden, 1),
               ("MLM head weight grad", vocab, targets, hidden, 1)]
    peak, _ = rate(1024, 1024, 1024)
    print(f"threads {args.threads}; 1024^2 mm peak: {peak:.1f} GFLOP/s")
    total_flops = total_s = 0.0
    for name, m, k, n, batch in shapes:
        g, flops = rate(m, k, n, batch)
        total_flops += flops
        total_s += flops / (g * 1e9)
        times = f" x{batch}" if batch > 1 else ""
        print(f"{name:40s} [{m}x{k}]x[{k}x{n}]{times}: {g:6.1f} GFLOP/s = {100 * g / peak:5.1f}% of peak")
    weighted = total_flops / total_s / 1e9
    print(f"RESULT peak_gflops={peak:.1f} weighted_gflops={weighted:.1f} "
          f"mfu_ceiling={100 * weighted / peak:.1f}%")


if __name__ == "__main__":
    main()
