#!/usr/bin/env bash
# The main job's pretraining on the real data, padded against padding-free (docs/performance.md
# "Padding-free batches"): the first STEPS steps of configs/pretrain-small.yaml (the same
# batches, seeds and config), run ROUNDS times each way, alternating, in one run. Prints the
# median examples/s over steps 2..STEPS of every run, the padded-token fraction of the rows the
# encoder computed, and the losses of the last step.
# usage: bench/padding_free.sh [extra key=value overrides]
#   env: BUILD_DIR (build), STEPS (12), ROUNDS (2), THREADS (2), OUT (out/bench/padding_free)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
: "${BUILD_DIR:=build}" "${STEPS:=12}" "${ROUNDS:=2}" "${THREADS:=2}"
: "${OUT:=$root/out/bench/padding_free}"
for f in out/sts/sgd.train.jsonl out/tokenizer; do
  [[ -e $f ]] || { echo "padding_free.sh: $f is missing; run scripts/run.sh first" >&2; exit 1; }
done
rm -rf "$OUT"
mkdir -p "$OUT"
echo "== main job, first $STEPS steps, $THREADS threads ($(nproc) CPUs," \
  "$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | xargs), load $(cut -d' ' -f1-3 /proc/loadavg))"
for round in $(seq 1 "$ROUNDS"); do
  for pf in false true; do
    dir=$OUT/padding_free-$pf-$round
    "$BUILD_DIR/cli/dialtree" train configs/pretrain-small.yaml "output_dir=$dir" "max_steps=$STEPS" \
      logging_steps=1 save_steps=0 eval_steps=0 "threads=$THREADS" "padding_free=$pf" "$@" \
      >"$dir.log" 2>&1 || { cat "$dir.log" >&2; exit 1; }
  done
done
python3 - "$OUT" <<'EOF'
import json, pathlib, statistics, sys
out = pathlib.Path(sys.argv[1])
rows = {}
print("| run | median examples/s (steps 2..) | padded-token fraction (mean) | loss at the last step |")
print("|---|---|---|---|")
for d in sorted(p for p in out.iterdir() if p.is_dir()):
    recs = [json.loads(l) for l in (d / "metrics.jsonl").read_text().splitlines()]
    recs = [r for r in recs if "loss" in r]
    eps = statistics.median(r["examples_per_second"] for r in recs[1:])
    pad = statistics.mean(r["padded_token_fraction"] for r in recs)
    pf = d.name.split("-")[1]
    rows.setdefault(pf, []).append(eps)
    print(f"| {d.name} | {eps:.1f} | {pad:.3f} | {recs[-1]['loss']:.4f} |")
off, on = statistics.mean(rows["false"]), statistics.mean(rows["true"])
print(f"\npadding-free / padded: {on:.1f} / {off:.1f} examples/s = {on / off:.2f}x")
EOF
