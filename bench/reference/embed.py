#!/usr/bin/python3
"""Python reference of `dialtree embed` (offline embeddings), for bench/serve.sh.

Run with Debian's interpreter and python3-torch (docs/build.md P10):
    /usr/bin/python3 bench/reference/embed.py --model BUNDLE --ids IDS.jsonl [--threads N]
        [--passes N] [--batch-size 64] [--max-batch-tokens 16384] [--output FILE]
        [--check VECTORS.jsonl]

Loads the bundle's config.json and model.safetensors (read here with the standard library:
an 8-byte header length, a JSON header, raw little-endian tensors) into the encoder of
bench/reference/train_step.py, serialises each line of IDS.jsonl (sub-word ids) as
serve/embedder.cpp does for a token-id input: [sos_u] ids[:min(256, max_position) - 2] [eos_u],
positions 0.., role 1, turn 1, batches them as cli/embed_cmd.cpp does (longest first, at most
--batch-size inputs and --max-batch-tokens padded tokens per batch), and runs the forward pass
with the prepended [CLS] under torch.inference_mode(); the vector is the L2-normalised final
state of [CLS].

The first pass is always run (its vectors go to --output and are compared with --check, a
`dialtree embed` output of the same ids: max abs difference); then --passes timed passes.
Prints one `RESULT key=value ...` line (pass_s and sent_s: median of the timed passes).
"""

import argparse
import json
import os
import statistics
import struct
import sys
import time

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import train_step as ts  # noqa: E402  (the shared reference model)

DTYPES = {"F32": torch.float32, "F16": torch.float16, "BF16": torch.bfloat16}


def read_safetensors(path):
    """name -> tensor of a .safetensors file (float tensors only, which is what bundles hold)."""
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        data = f.read()
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        start, end = info["data_offsets"]
        t = torch.frombuffer(bytearray(data[start:end]), dtype=DTYPES[info["dtype"]])
        out[name] = t.view(info["shape"]).to(torch.float32)
    return out


def configure(cfg):
    """Sets train_step.py's module constants from the bundle's config.json."""
    ts.VOCAB, ts.HIDDEN = cfg["vocab_size"], cfg["hidden_size"]
    ts.LAYERS, ts.HEADS = cfg["num_hidden_layers"], cfg["num_attention_heads"]
    ts.FFN, ts.MAX_POS = cfg["intermediate_size"], cfg["max_position_embeddings"]
    ts.TYPES, ts.MAX_TURNS = cfg["type_vocab_size"], cfg["max_turns"]
    ts.VIEWS, ts.PROJ = len(cfg["projection_views"]), cfg["projection_dim"]
    ts.LN_EPS, ts.CLS_ID = cfg["layer_norm_eps"], cfg["cls_token_id"]
    ts.DROPOUT = 0.0


def load_model(bundle):
    """The bundle's encoder as a train_step.SpaceModel in eval mode (strict name mapping)."""
    with open(os.path.join(bundle, "config.json")) as f:
        cfg = json.load(f)
    configure(cfg)
    w = read_safetensors(os.path.join(bundle, "model.safetensors"))
    e = "bert.embeddings."
    sd = {"word": w[e + "word_embeddings.weight"], "position": w[e + "position_embeddings.weight"],
          "role": w[e + "token_type_embeddings.weight"], "turn": w[e + "turn_embeddings.weight"],
          "emb_ln.weight": w[e + "LayerNorm.weight"], "emb_ln.bias": w[e + "LayerNorm.bias"],
          "mlm_bias": w["cls.predictions.bias"]}
    names = {"query": "attention.self.query", "key": "attention.self.key",
             "value": "attention.self.value", "attn_out": "attention.output.dense",
             "attn_ln": "attention.output.LayerNorm", "inter": "intermediate.dense",
             "out": "output.dense", "out_ln": "output.LayerNorm"}
    for i in range(ts.LAYERS):
        for ours, theirs in names.items():
            for p in ("weight", "bias"):
                sd[f"layers.{i}.{ours}.{p}"] = w[f"bert.encoder.layer.{i}.{theirs}.{p}"]
    for ours, theirs in {"mlm_dense": "cls.predictions.transform.dense",
                         "mlm_ln": "cls.predictions.transform.LayerNorm",
                         "proj": "projection.dense"}.items():
        for p in ("weight", "bias"):
            sd[f"{ours}.{p}"] = w[f"{theirs}.{p}"]
    net = ts.SpaceModel()
    net.load_state_dict(sd, strict=True)
    net.eval()
    return net, cfg


def serialise(ids, sos_u, eos_u, keep):
    """serve/embedder.cpp for a token-id input: one current user utterance, cut to `keep`."""
    return [sos_u] + ids[:keep] + [eos_u]


def make_batches(seqs, batch_size, max_tokens):
    """cli/embed_cmd.cpp's batching: indices longest first (stable), greedy batches."""
    order = sorted(range(len(seqs)), key=lambda i: -len(seqs[i]))
    batches, start = [], 0
    while start < len(order):
        longest, end = len(seqs[order[start]]), start
        while end < len(order) and end - start < batch_size and (
                end == start or longest * (end - start + 1) <= max_tokens):
            end += 1
        batches.append(order[start:end])
        start = end
    return batches


def embed_pass(net, seqs, batches):
    """One pass: collation, forward, [CLS] row, L2 normalisation. -> [N, H] in input order."""
    out = [None] * len(seqs)
    for idx in batches:
        t = len(seqs[idx[0]])
        ids = torch.zeros(len(idx), t, dtype=torch.int64)
        mask = torch.zeros_like(ids)
        pos = torch.zeros_like(ids)
        for r, i in enumerate(idx):
            n = len(seqs[i])
            ids[r, :n] = torch.tensor(seqs[i], dtype=torch.int64)
            mask[r, :n] = 1
            pos[r, :n] = torch.arange(n)
        hidden = net(ids, mask, pos, mask, mask, prepend_cls=True)  # role = turn = 1 on tokens
        cls = F.normalize(hidden[:, 0].double(), dim=-1).float()
        for r, i in enumerate(idx):
            out[i] = cls[r]
    return torch.stack(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", required=True)
    ap.add_argument("--ids", required=True)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--passes", type=int, default=0)
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--max-batch-tokens", type=int, default=16384)
    ap.add_argument("--max-input-length", type=int, default=256)
    ap.add_argument("--output")
    ap.add_argument("--check")
    o = ap.parse_args()
    torch.set_num_threads(o.threads)
    t0 = time.perf_counter()
    net, cfg = load_model(o.model)
    with open(os.path.join(o.model, "tokenizer.json")) as f:
        special = json.load(f)["special_tokens"]
    load_s = time.perf_counter() - t0
    keep = min(o.max_input_length, cfg["max_position_embeddings"]) - 2
    with open(o.ids) as f:
        seqs = [serialise(json.loads(line), special["sos_u"], special["eos_u"], keep)
                for line in f if line.strip()]
    batches = make_batches(seqs, o.batch_size, o.max_batch_tokens)
    padded = sum(len(seqs[b[0]]) * len(b) for b in batches)
    times = []
    with torch.inference_mode():
        vectors = embed_pass(net, seqs, batches)
        for _ in range(o.passes):
            t = time.perf_counter()
            embed_pass(net, seqs, batches)
            times.append(time.perf_counter() - t)
    if o.output:
        with open(o.output, "w") as f:
            for v in vectors.tolist():
                f.write(json.dumps(v) + "\n")
    diff = "n/a"
    if o.check:
        with open(o.check) as f:
            theirs = torch.tensor([json.loads(line) for line in f if line.strip()])
        if theirs.shape != vectors.shape:
            sys.exit(f"embed.py: {o.check} has shape {tuple(theirs.shape)}, "
                     f"expected {tuple(vectors.shape)}")
        diff = f"{(theirs - vectors).abs().max().item():.3g}"
    med = statistics.median(times) if times else float("nan")
    print(f"RESULT impl=py inputs={len(seqs)} padded_tokens={padded} threads={o.threads} "
          f"load_s={load_s:.3f} pass_s={med:.3f} sent_s={len(seqs) / med:.1f} "
          f"max_abs_diff={diff}")


if __name__ == "__main__":
    main()
