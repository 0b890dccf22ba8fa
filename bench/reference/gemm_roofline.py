#!/usr/bin/python3
"""How high the pre-training step's MFU can go: its matrix products alone, at their real shapes.

Run with Debian's interpreter and python3-torch (docs/build.md P10), which multiplies through the
same OpenBLAS as LibTorch:
    /usr/bin/python3 bench/reference/gemm_roofline.py [--threads N]

bench/train_step.sh reports MFU as 3 x the forward pass's matrix-product FLOPs per step over the
step time and the best 1024^2 `mm` rate the process measures. This script times each product of
that step (forward, input gradient and weight gradient of every linear layer; the two attention
products per example and head and their four gradient products; the MLM head) at the step's
shapes (bench/README.md "Pre-training step": per step 2 x (64 + 32) sequences of 128 tokens
through 4 layers, hidden 256, FFN 1024, 4 heads, vocabulary 8000, 15 % MLM targets) against the
same 1024^2 peak, and prints their rate weighted by each product's share of the step's FLOPs:
the MFU of a step that did nothing but these products, each at its best. (The projection head
and the contrastive logits, under 1 % of the FLOPs, are left out.) Outputs are preallocated: a fresh 32 MB
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
    seqs, seq, hidden, ffn, vocab, heads, layers = 64, 128, 256, 1024, 8000, 4, 4
    tokens = seqs * seq  # timed at 64 sequences; the step runs 3x as many through 4 layers
    per_step = 3 * layers
    targets = int(0.15 * 2 * 32 * seq)  # MLM targets of the two 32-example MLM passes
    head_dim, pairs = hidden // heads, seqs * heads
    shapes = []  # (name, m, k, n, batch, times per step)
    for name, n_in, n_out in (("qkv", hidden, 3 * hidden), ("attention out", hidden, hidden),
                              ("ffn in", hidden, ffn), ("ffn out", ffn, hidden)):
        shapes += [(f"{name} forward", tokens, n_in, n_out, 1, per_step),
                   (f"{name} input grad", tokens, n_out, n_in, 1, per_step),
                   (f"{name} weight grad", n_out, tokens, n_in, 1, per_step)]
    shapes += [("attention QK^T", seq, head_dim, seq, pairs, per_step),
               ("attention PV", seq, seq, head_dim, pairs, per_step),
               ("attention grad dQ = dS K, dK = dS^T Q", seq, seq, head_dim, pairs, 2 * per_step),
               ("attention grad dP = dO V^T", seq, head_dim, seq, pairs, per_step),
               ("attention grad dV = P^T dO", seq, seq, head_dim, pairs, per_step),
               ("MLM head forward", targets, hidden, vocab, 1, 1),
               ("MLM head input grad", targets, vocab, hidden, 1, 1),
               ("MLM head weight grad", vocab, targets, hidden, 1, 1)]
    peak, _ = rate(1024, 1024, 1024)
    print(f"threads {args.threads}; 1024^2 mm peak: {peak:.1f} GFLOP/s")
    total_flops = total_s = 0.0
    for name, m, k, n, batch, count in shapes:
        g, flops = rate(m, k, n, batch)
        total_flops += count * flops
        total_s += count * flops / (g * 1e9)
        times = f" x{batch}" if batch > 1 else ""
        print(f"{name:38s} [{m}x{k}]x[{k}x{n}]{times}, {count:2d}/step: {g:6.1f} GFLOP/s = "
              f"{100 * g / peak:5.1f}% of peak")
    weighted = total_flops / total_s / 1e9
    print(f"RESULT peak_gflops={peak:.1f} step_gflop={total_flops / 1e9:.1f} "
          f"weighted_gflops={weighted:.1f} mfu_ceiling={100 * weighted / peak:.1f}%")


if __name__ == "__main__":
    main()
