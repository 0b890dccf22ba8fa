#!/usr/bin/python3
"""Python reference of dialtree's intent fine-tuning step and test prediction, for
bench/finetune.sh.

Run with Debian's interpreter and python3-torch (docs/build.md P10):
    /usr/bin/python3 bench/reference/finetune.py [--threads N] [--steps N] [--warmup N]
        [--seq-len L] [--batch B] [--eval-batch B] [--predict N] [--dropout P] [--seed S]

The model of bench/reference/train_step.py (configs/pretrain-small.yaml's encoder) plus a
77-class nn.Linear on the [CLS] row, fixed synthetic single-utterance batches ([sos_u] ids
[eos_u], positions 0..L-1, role 1, turn 1), cross-entropy, AdamW (weight decay 0.01 on
matrices, eps 1e-6), clipping 5.0, as bench/bench_finetune.cpp; prediction = arg-max over
--predict examples in batches of --eval-batch under torch.inference_mode(), median of 3.
Prints the same lines as the C++ benchmark, ending with one `RESULT key=value ...` line.
"""

import argparse
import math
import os
import statistics
import sys
import time

import torch
import torch.nn.functional as F
from torch import nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import train_step as ts  # noqa: E402  (the shared reference model)

CLASSES = 77


def make_inputs(b, length):
    ids = torch.randint(9, 8000, (b, length), dtype=torch.int64)
    ids[:, 0] = 13
    ids[:, length - 1] = 7
    ones = torch.ones(b, length, dtype=torch.int64)
    pos = torch.arange(length, dtype=torch.int64).expand(b, length).contiguous()
    return ids, ones, pos, ones.clone(), ones.clone()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--seq-len", type=int, default=24)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--eval-batch", type=int, default=256)
    ap.add_argument("--predict", type=int, default=3080)
    ap.add_argument("--dropout", type=float, default=0.25)
    ap.add_argument("--seed", type=int, default=1)
    o = ap.parse_args()
    ts.DROPOUT = o.dropout
    torch.set_num_threads(o.threads)
    torch.manual_seed(o.seed)
    net = ts.SpaceModel()
    net.reset_parameters()
    head = nn.Linear(ts.HIDDEN, CLASSES)
    with torch.no_grad():
        head.weight.normal_(0.0, ts.INIT_STD)
        head.bias.zero_()
    batch = make_inputs(o.batch, o.seq_len)
    labels = torch.randint(0, CLASSES, (o.batch,), dtype=torch.int64)
    test = make_inputs(o.predict, o.seq_len)
    params = list(net.parameters()) + list(head.parameters())
    groups = [{"params": [p for p in params if p.dim() >= 2], "weight_decay": 0.01},
              {"params": [p for p in params if p.dim() < 2], "weight_decay": 0.0}]
    opt = torch.optim.AdamW(groups, lr=2e-4, betas=(0.9, 0.999), eps=1e-6)

    net.train()
    step_s, loss0 = [], None
    for step in range(o.warmup + o.steps):
        t0 = time.perf_counter()
        opt.zero_grad()
        hidden = net(*batch, prepend_cls=True)
        loss = F.cross_entropy(head(hidden[:, 0]).float(), labels)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 5.0)
        opt.step()
        value = loss.item()
        if step == 0:
            loss0 = value
        if step >= o.warmup:
            step_s.append(time.perf_counter() - t0)

    net.eval()
    predict_s, checksum = [], 0
    for _ in range(3):
        with torch.inference_mode():
            t0 = time.perf_counter()
            checksum = 0
            for b in range(0, o.predict, o.eval_batch):
                part = [t[b:b + o.eval_batch] for t in test]
                hidden = net(*part, prepend_cls=True)
                checksum += int(head(hidden[:, 0]).float().argmax(-1).sum())
            predict_s.append(time.perf_counter() - t0)
    train_eps = o.batch / statistics.median(step_s)
    predict_eps = o.predict / statistics.median(predict_s)
    print(f"impl py (torch {torch.__version__})  threads {torch.get_num_threads()}  batch {o.batch}"
          f"  seq_len {o.seq_len}  classes {CLASSES}  dropout {o.dropout}  steps {o.steps}"
          f" (+{o.warmup} warm-up)")
    print(f"step 0 loss {loss0:.6f} (ln {CLASSES} = {math.log(CLASSES):.4f})")
    print(f"train: {statistics.median(step_s):.4f} s/step median, {train_eps:.1f} examples/s")
    print(f"predict: {o.predict} examples in batches of {o.eval_batch}, "
          f"{statistics.median(predict_s):.3f} s median of 3, {predict_eps:.1f} examples/s, "
          f"class-id checksum {checksum}")
    print(f"RESULT impl=py train_ex_s={train_eps:.3f} predict_ex_s={predict_eps:.3f} "
          f"loss0={loss0:.6f}")


if __name__ == "__main__":
    main()
