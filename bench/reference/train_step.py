#!/usr/bin/python3
"""Python reference of dialtree's pre-training step, for bench/train_step.sh.

Run with Debian's interpreter and python3-torch (docs/build.md P10):
    /usr/bin/python3 bench/reference/train_step.py [--bf16] [--threads N] [--steps N]
        [--warmup N] [--seq-len L] [--batch B] [--shard-size S] [--seed S] [--dropout P]

The same model (configs/pretrain-small.yaml: post-LN BERT with SPACE-2's role and turn
embeddings and the bare prepended [CLS] row, fused-bias nn.Linear, exact-erf GELU, MLM head
tied to the word table, tanh projection head with ten views of 256), the same fixed synthetic
batches and the same objective (SupCon with soft masks over shards of 16, self term excluded,
tau = 0.07; MLM token mean; L = sup + 0.1 mlm_l + self + 0.1 mlm_u), the same AdamW and
clipping as bench/bench_train_step.cpp. The op sequence mirrors model/encoder.cpp and
losses/*.cpp, and weights, batches and dropout masks are drawn from torch's global generator in
the same order, so with the same seed the step-0 losses equal the C++ ones (to float rounding).

Prints the same lines as the C++ benchmark, ending with one `RESULT key=value ...` line.
"""

import argparse
import math
import statistics
import time

import torch
import torch.nn.functional as F
from torch import nn

VOCAB, HIDDEN, LAYERS, HEADS, FFN = 8000, 256, 4, 4, 1024
MAX_POS, TYPES, MAX_TURNS, VIEWS, PROJ = 64, 2, 16, 10, 256
LN_EPS, INIT_STD = 1e-12, 0.02
DROPOUT = 0.1  # every dropout of the model; main() sets it from --dropout
CLS_ID, MASK_ID, IGNORE, UTTERANCE_LEN = 101, 103, -100, 32


def layer_norm(x, ln):
    """LayerNorm in the parameters' dtype (bf16 activations are upcast, as in encoder.cpp)."""
    if x.dtype != ln.weight.dtype:
        x = x.to(ln.weight.dtype)
    return F.layer_norm(x, ln.normalized_shape, ln.weight, ln.bias, ln.eps)


class Layer(nn.Module):
    """One post-LN transformer block with SPACE-2's dropout after the FFN's GELU."""

    def __init__(self):
        super().__init__()
        self.query = nn.Linear(HIDDEN, HIDDEN)
        self.key = nn.Linear(HIDDEN, HIDDEN)
        self.value = nn.Linear(HIDDEN, HIDDEN)
        self.attn_out = nn.Linear(HIDDEN, HIDDEN)
        self.attn_ln = nn.LayerNorm(HIDDEN, eps=LN_EPS)
        self.inter = nn.Linear(HIDDEN, FFN)
        self.out = nn.Linear(FFN, HIDDEN)
        self.out_ln = nn.LayerNorm(HIDDEN, eps=LN_EPS)

    def matrices(self):
        """Weight matrices in the order model/encoder.cpp registers (and initialises) them."""
        return [self.query.weight, self.key.weight, self.value.weight, self.attn_out.weight,
                self.inter.weight, self.out.weight]

    def attention(self, x, bias, keep):
        b, t, _ = x.shape
        d = HIDDEN // HEADS

        def heads(z):
            return z.view(b, t, HEADS, d).transpose(1, 2)

        q = heads(self.query(x) * (1.0 / math.sqrt(d)))
        k = heads(self.key(x))
        v = heads(self.value(x))
        probs = torch.softmax(torch.matmul(q, k.transpose(-2, -1)) + bias, -1) * keep
        probs = F.dropout(probs, DROPOUT, self.training)
        return torch.matmul(probs, v).transpose(1, 2).reshape(b, t, HEADS * d)

    def forward(self, x, bias, keep):
        a = self.attn_out(self.attention(x, bias, keep))
        x = layer_norm(x + F.dropout(a, DROPOUT, self.training), self.attn_ln)
        f = F.dropout(F.gelu(self.inter(x)), DROPOUT, self.training)
        f = self.out(f)
        return layer_norm(x + F.dropout(f, DROPOUT, self.training), self.out_ln)


class SpaceModel(nn.Module):
    """Encoder, MLM head (decoder tied to the word table) and the per-view projection head."""

    def __init__(self):
        super().__init__()
        self.word = nn.Parameter(torch.empty(VOCAB, HIDDEN))
        self.position = nn.Parameter(torch.empty(MAX_POS, HIDDEN))
        self.role = nn.Parameter(torch.empty(TYPES, HIDDEN))
        self.turn = nn.Parameter(torch.empty(MAX_TURNS + 1, HIDDEN))
        self.emb_ln = nn.LayerNorm(HIDDEN, eps=LN_EPS)
        self.layers = nn.ModuleList(Layer() for _ in range(LAYERS))
        self.mlm_dense = nn.Linear(HIDDEN, HIDDEN)
        self.mlm_ln = nn.LayerNorm(HIDDEN, eps=LN_EPS)
        self.mlm_bias = nn.Parameter(torch.empty(VOCAB))
        self.proj = nn.Linear(HIDDEN, VIEWS * PROJ)

    def encoder_matrices(self):
        mats = [self.word, self.position, self.role, self.turn]
        for layer in self.layers:
            mats += layer.matrices()
        return mats

    def reset_parameters(self):
        """HF-BERT init drawing exactly what the C++ model draws: its encoder initialises
        itself once, then the full model re-initialises everything (encoder, MLM, projection),
        matrices N(0, 0.02) in registration order; biases 0 and LayerNorm gains 1 draw
        nothing."""
        with torch.no_grad():
            for p in self.parameters():
                if p.dim() == 1:
                    p.zero_()
            for m in self.modules():
                if isinstance(m, nn.LayerNorm):
                    m.weight.fill_(1.0)
            for p in self.encoder_matrices():
                p.normal_(0.0, INIT_STD)
            for p in self.encoder_matrices() + [self.mlm_dense.weight, self.proj.weight]:
                p.normal_(0.0, INIT_STD)

    def forward(self, ids, mask, pos, role, turn, prepend_cls):
        e = (F.embedding(ids, self.word) + F.embedding(pos, self.position) +
             F.embedding(role, self.role) + F.embedding(turn, self.turn))
        e = F.dropout(e, DROPOUT, self.training)
        m = mask.ne(0)
        if prepend_cls:
            b = ids.size(0)
            head = self.word[CLS_ID].view(1, 1, -1).expand(b, 1, -1)
            e = torch.cat([head.to(e.dtype), e], 1)
            m = torch.cat([m[:, :1], m], 1)
        x = layer_norm(e, self.emb_ln)
        pair = m.unsqueeze(2).logical_and(m.unsqueeze(1)).unsqueeze(1)
        bias_mask = pair.logical_or(m.logical_not().view(m.size(0), 1, m.size(1), 1))
        bias = torch.zeros(bias_mask.shape, dtype=torch.float32).masked_fill_(
            bias_mask.logical_not(), -math.inf)
        keep = pair.to(torch.float32)
        for layer in self.layers:
            x = layer(x, bias, keep)
        return x

    def mlm_logits(self, hidden):
        t = layer_norm(F.gelu(self.mlm_dense(hidden)), self.mlm_ln)
        return F.linear(t, self.word, self.mlm_bias)

    def project(self, cls):
        return torch.tanh(self.proj(cls)).view(cls.size(0), VIEWS, PROJ)


def per_view_losses(z1, z2, s, tau=0.07, base_tau=0.07, norm_eps=1e-12):
    """SupCon with soft masks for K views at once: z1, z2 [K, B, D], s [K, B, B] -> [K]."""
    b = z1.size(1)

    def normalise(z):
        return z / torch.norm(z, 2, [-1], keepdim=True).clamp_min(norm_eps)

    z = torch.cat([normalise(z1), normalise(z2)], 1)
    logits = torch.bmm(z, z.transpose(1, 2)) / tau
    self_mask = torch.eye(2 * b, dtype=torch.bool)
    lse = torch.logsumexp(logits.masked_fill(self_mask, -math.inf), [-1], keepdim=True)
    log_prob = logits - lse
    m = s.repeat(1, 2, 2).masked_fill(self_mask, 0.0)
    weight = m.sum(-1)
    safe_weight = torch.where(weight > 0, weight, torch.ones_like(weight))
    mean_log_prob = (m * log_prob).sum(-1) / safe_weight
    return (-(tau / base_tau) * mean_log_prob).mean(-1)


def multi_view_supcon_loss(p1, p2, masks, shard):
    """Mean over views of the per-view loss, averaged over shards of `shard` examples."""
    a = p1.float().transpose(0, 1)
    c = p2.float().transpose(0, 1)
    k, b = a.size(0), a.size(1)
    s = torch.eye(b).expand(k, b, b) if masks is None else masks
    if shard == 0 or shard >= b:
        return per_view_losses(a, c, s).mean()
    parts = [per_view_losses(a.narrow(1, i, min(shard, b - i)), c.narrow(1, i, min(shard, b - i)),
                             s.narrow(1, i, min(shard, b - i)).narrow(2, i, min(shard, b - i)))
             for i in range(0, b, shard)]
    return torch.stack(parts).mean(0).mean()


def mlm_loss(logits, labels):
    """Token-mean NLL over the targets (log_softmax in fp32)."""
    flat = labels.reshape(-1)
    target = flat != IGNORE
    log_probs = torch.log_softmax(logits.reshape(-1, logits.size(-1)), -1, dtype=torch.float32)
    nll_sum = F.nll_loss(log_probs, flat, reduction="sum", ignore_index=IGNORE)
    return nll_sum / target.sum().clamp_min(1).to(torch.float32)


def make_batch(b, length, labelled):
    """Fixed synthetic batch, drawn in the order of bench_train_step.cpp's make_batch()."""
    ids = torch.randint(9, VOCAB, (b, length), dtype=torch.int64)
    t = torch.arange(length, dtype=torch.int64)
    utterances = (length + UTTERANCE_LEN - 1) // UTTERANCE_LEN
    u = torch.div(t, UTTERANCE_LEN, rounding_mode="floor")
    pos = t.remainder(UTTERANCE_LEN)
    turn = (utterances - u).clamp_max(MAX_TURNS)
    role = (utterances - 1 - u).remainder(2).eq(0).to(torch.int64)
    inputs = (ids, torch.ones(b, length, dtype=torch.int64), pos.expand(b, length).contiguous(),
              role.expand(b, length).contiguous(), turn.expand(b, length).contiguous())
    masks = None
    if labelled:
        r = torch.rand(VIEWS, b, b)
        masks = (r + r.transpose(1, 2)) * 0.5
        masks.diagonal(0, 1, 2).fill_(1.0)
    target = torch.rand(b, length).lt(0.15)
    masked_ids = torch.where(target, torch.full_like(ids, MASK_ID), ids)
    labels = torch.where(target, ids, torch.full_like(ids, IGNORE))
    return inputs, masks, (masked_ids,) + inputs[1:], labels


def batch_losses(net, batch, shard):
    """The contrastive pass (2B forward, projection and loss in fp32) and the MLM pass."""
    inputs, masks, masked, labels = batch
    b = inputs[0].size(0)
    hidden = net(*(torch.cat([t, t], 0) for t in inputs), prepend_cls=True)
    with torch.autocast("cpu", enabled=False):
        proj = net.project(hidden[:, 0].to(torch.float32))
        contrastive = multi_view_supcon_loss(proj[:b], proj[b:], masks, shard)
    plain = net(*masked, prepend_cls=False)
    targets = labels.ne(IGNORE)
    rows = plain[targets]
    return contrastive, mlm_loss(net.mlm_logits(rows), labels[targets])


def forward_flops(b, length, shard, mlm_targets):
    """Matrix-product FLOPs of one forward pass of the step (as in bench_train_step.cpp)."""
    def encoder(seqs, s):
        return seqs * LAYERS * s * (8 * HIDDEN**2 + 4 * HIDDEN * FFN + 4 * s * HIDDEN)

    s = shard if 0 < shard < b else b
    shards = math.ceil(b / s)
    per_stream = (encoder(2 * b, length + 1) + encoder(b, length) +
                  2 * (2 * b) * HIDDEN * VIEWS * PROJ + shards * 2 * VIEWS * (2 * s)**2 * PROJ)
    return 2 * per_stream + 2 * mlm_targets * HIDDEN * (HIDDEN + VOCAB)


def gemm_peak(dtype):
    """Best GFLOP/s of torch.mm on 1024 x 1024 matrices of `dtype` over a few timed rounds."""
    n = 1024
    a, b = torch.randn(n, n).to(dtype), torch.randn(n, n).to(dtype)
    reps = 8 if dtype == torch.float32 else 32
    torch.mm(a, b)
    best = 0.0
    for _ in range(6):
        t0 = time.perf_counter()
        for _ in range(reps):
            torch.mm(a, b)
        best = max(best, 2.0 * n**3 * reps / (time.perf_counter() - t0) / 1e9)
    return best


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bf16", action="store_true")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--seq-len", type=int, default=128)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--shard-size", type=int, default=16)
    ap.add_argument("--seed", type=int, default=11)
    ap.add_argument("--dropout", type=float, default=0.1)
    o = ap.parse_args()
    global DROPOUT
    DROPOUT = o.dropout

    torch.set_num_threads(o.threads)
    net = SpaceModel()
    torch.manual_seed(o.seed)
    net.reset_parameters()
    net.train()
    lab = make_batch(o.batch, o.seq_len, True)
    unl = make_batch(o.batch, o.seq_len, False)
    targets = int(lab[3].ne(IGNORE).sum() + unl[3].ne(IGNORE).sum())

    lr = 1e-4
    params = list(net.parameters())
    groups = [{"params": [p for p in params if p.dim() >= 2], "weight_decay": 0.0},
              {"params": [p for p in params if p.dim() < 2], "weight_decay": 0.0}]
    opt = torch.optim.AdamW(groups, lr=lr, betas=(0.9, 0.999), eps=1e-6, weight_decay=0.0)

    step_s, cpu_s, phases, first = [], [], [], None
    for step in range(o.warmup + o.steps):
        ph = {}
        c0 = time.process_time()
        t0 = time.perf_counter()
        for g in opt.param_groups:
            g["lr"] = lr
        opt.zero_grad()
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=o.bf16):
            t = time.perf_counter()
            sup, mlm_l = batch_losses(net, lab, o.shard_size)
            ph["labelled"] = time.perf_counter() - t
            t = time.perf_counter()
            self_, mlm_u = batch_losses(net, unl, o.shard_size)
            ph["unlabelled"] = time.perf_counter() - t
        t = time.perf_counter()
        # combine_objective(): weighted halves, plus the logged values (one .item() each).
        total = (sup.reshape(()) * 1.0 + mlm_l.reshape(()) * 0.1) + \
            (self_.reshape(()) * 1.0 + mlm_u.reshape(()) * 0.1)
        values = [float(v.detach().double()) for v in (sup, mlm_l, self_, mlm_u)]
        ph["objective"] = time.perf_counter() - t
        t = time.perf_counter()
        (total / 1.0).backward()
        ph["backward"] = time.perf_counter() - t
        t = time.perf_counter()
        grad_norm = float(torch.nn.utils.clip_grad_norm_(params, 5.0))
        ph["clip"] = time.perf_counter() - t
        t = time.perf_counter()
        opt.step()
        ph["adamw"] = time.perf_counter() - t
        s = time.perf_counter() - t0
        c = time.process_time() - c0
        if step == 0:
            first = values + [grad_norm]
        if step >= o.warmup:
            step_s.append(s)
            cpu_s.append(c)
            phases.append(ph)

    peak32, peak16 = gemm_peak(torch.float32), gemm_peak(torch.bfloat16)
    med = statistics.median(step_s)
    examples = 2 * o.batch
    fwd = forward_flops(o.batch, o.seq_len, o.shard_size, targets)
    train = 3 * fwd
    mfu = train / med / 1e9 / (peak16 if o.bf16 else peak32)
    mode = "bf16" if o.bf16 else "fp32"
    sup0, mlm_l0, self0, mlm_u0, g0 = first
    total0 = (sup0 + 0.1 * mlm_l0) + (self0 + 0.1 * mlm_u0)
    shard = o.shard_size if o.shard_size > 0 else o.batch

    def pm(key):
        return statistics.median(p[key] for p in phases)

    print(f"impl python (torch {torch.__version__})  mode {mode}  threads "
          f"{torch.get_num_threads()}  batch {o.batch}+{o.batch}  seq_len {o.seq_len}  "
          f"dropout {o.dropout:g}  steps {o.steps} (+{o.warmup} warm-up)")
    print(f"step 0 losses: total {total0:.6f}  sup {sup0:.6f}  self {self0:.6f}  "
          f"mlm_l {mlm_l0:.6f}  mlm_u {mlm_u0:.6f}  |g| {g0:.6f}  "
          f"(ln(2s-1) = {math.log(2 * shard - 1):.4f})")
    print(f"seconds/step: median {med:.4f}  min {min(step_s):.4f}  max {max(step_s):.4f}  "
          f"(CPU seconds/step, all threads: median {statistics.median(cpu_s):.4f})")
    print(f"phases (median s): labelled fwd {pm('labelled'):.4f}  unlabelled fwd "
          f"{pm('unlabelled'):.4f}  objective {pm('objective'):.4f}  backward "
          f"{pm('backward'):.4f}  clip {pm('clip'):.4f}  adamw {pm('adamw'):.4f}")
    print(f"examples/s: {examples / med:.2f}")
    print(f"GFLOP/step: {train / 1e9:.1f} (forward {fwd / 1e9:.1f} x 3)  achieved "
          f"{train / med / 1e9:.1f} GFLOP/s")
    print(f"GEMM peak (mm 1024^2): fp32 {peak32:.0f} GFLOP/s  bf16 {peak16:.0f} GFLOP/s  ->  "
          f"MFU {100 * mfu:.1f}%")
    print(f"RESULT impl=python mode={mode} ex_s={examples / med:.3f} step_s={med:.4f} "
          f"cpu_s={statistics.median(cpu_s):.4f} gflop_step={train / 1e9:.2f} "
          f"peak_fp32={peak32:.1f} peak_bf16={peak16:.1f} mfu={mfu:.4f} loss0={total0:.6f}")


if __name__ == "__main__":
    main()
