#!/usr/bin/env bash
# Data-parallel pretraining, 1 process against 2 (docs/training.md "Data-parallel"): the same
# model (configs/pretrain-small.yaml's shape: 4 layers x 256, batches of 32 labelled + 32
# unlabelled per process) trained for STEPS steps by `dialtree train` as
#   a) 1 process x 1 thread, b) 1 process x 2 threads, c) 2 processes x 1 thread each
#   (`--nproc-per-node 2`, Gloo over 127.0.0.1: twice the global batch per step), d) as c with
#   the health checks off (ddp_health_checks=false: their cost is c against d, docs/training.md
#   "Health checks").
# Each run logs twice; the table uses the second window (steps STEPS/2+1 .. STEPS), so start-up,
# data loading and the first steps are excluded. Rows alternate ROUNDS times; the table shows the
# median over rounds.
# usage: bench/ddp.sh        env: BUILD_DIR (build), STEPS (20), ROUNDS (3), OUT (out/bench/ddp),
#                                 BF16 (false), NO_BUILD (1: use the built binary as it is),
#                                 ROWS (a b c d: which rows to run)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
build=${BUILD_DIR:-build}
steps=${STEPS:-20}
rounds=${ROUNDS:-3}
out=${OUT:-$root/out/bench/ddp}
bf16=${BF16:-false}
data=$root/../shared/data/dialoglue
bin=$build/cli/dialtree
((steps >= 2 && steps % 2 == 0)) || { echo "ddp.sh: STEPS must be even and >= 2" >&2; exit 2; }
if [[ ${NO_BUILD:-0} != 1 ]]; then
  log=$(cmake --build "$build" --target dialtree 2>&1) || { echo "$log" >&2; exit 1; }
fi
mkdir -p "$out"

# Inputs, made once: a SentencePiece tokenizer, BANKING77's 10% split as labelled data and the
# first 20,000 lines of the MLM text as unlabelled data.
if [[ ! -f $out/tok/tokenizer.json ]]; then
  head -n 20000 "$data/mlm_all_no_multiwoz.txt" >"$out/unlabelled.txt"
  "$bin" tokenizer train --input "$out/unlabelled.txt" --vocab-size 4000 --out "$out/tok" >/dev/null
fi
[[ -f $out/banking.jsonl ]] ||
  "$bin" sts convert --format intent-csv --input "$data/banking/train_10.csv" \
    --out "$out/banking.jsonl" >/dev/null

cat >"$out/bench.yaml" <<EOF
output_dir: $out/run
max_steps: $steps
per_device_train_batch_size: 32
unlabelled_batch_size: 32
learning_rate: 1.0e-4
logging_steps: $((steps / 2))
save_steps: 0
bf16: $bf16
threads: 1
model: {hidden_size: 256, num_hidden_layers: 4, num_attention_heads: 4, intermediate_size: 1024,
        max_position_embeddings: 64, projection_dim: 256, hidden_dropout_prob: 0.1,
        attention_probs_dropout_prob: 0.1}
data: {tokenizer: $out/tok, labelled: [$out/banking.jsonl], unlabelled: [$out/unlabelled.txt],
       max_len: 128, max_utt_len: 50, contrastive_shard_size: 16}
EOF

# name: "procs threads [overrides]"
declare -A rows=([a]="1 1" [b]="1 2" [c]="2 1" [d]="2 1 ddp_health_checks=false")
read -r -a run_rows <<<"${ROWS:-a b c d}"
echo "== ddp: $steps steps, $rounds rounds, $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)"
for ((r = 1; r <= rounds; ++r)); do
  for row in "${run_rows[@]}"; do
    read -r procs threads extra <<<"${rows[$row]}"
    rm -rf "$out/run"
    # shellcheck disable=SC2086 # extra: zero or one key=value override
    "$bin" train --nproc-per-node "$procs" "$out/bench.yaml" "threads=$threads" $extra \
      >"$out/$row.$r.log" 2>&1 || { cat "$out/$row.$r.log" >&2; exit 1; }
    # examples/s of the second logging window; each step holds 64 examples per process.
    eps=$(tail -n 1 "$out/run/metrics.jsonl" | sed -E 's/.*"examples_per_second":([0-9.e+-]+).*/\1/')
    echo "$eps" >"$out/$row.$r.eps"
    # rank 0's cost of the health checks in that window, when they ran
    health=$(tail -n 1 "$out/run/metrics.jsonl" |
      sed -nE 's/.*"health_overhead_fraction":([0-9.e+-]+).*/ health checks: \1 of the time/p')
    printf 'round %d  %s process(es) x %s thread(s) %s: %.2f examples/s (load %s)%s\n' "$r" "$procs" \
      "$threads" "$extra" "$eps" "$(cut -d' ' -f1 /proc/loadavg)" "$health"
  done
done

median() { sort -g | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
base_row=${run_rows[0]}
base=$(cat "$out"/"$base_row".*.eps | median)
echo
echo "| row | processes x threads | global batch (labelled + unlabelled) | steps/s | examples/s | examples/s vs row $base_row |"
echo "|---|---|---|---|---|---|"
for row in "${run_rows[@]}"; do
  read -r procs threads extra <<<"${rows[$row]}"
  eps=$(cat "$out"/$row.*.eps | median)
  awk -v row="$row" -v p="$procs" -v t="$threads" -v x="$extra" -v e="$eps" -v b="$base" 'BEGIN {
    printf "| %s | %d x %d %s | %d | %.3f | %.2f | %.3fx |\n", row, p, t, x, 64 * p, e / (64 * p), e, e / b }'
done
