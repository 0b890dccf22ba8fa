#!/usr/bin/env bash
# The main job's pretraining on the real data, padded against padding-free (docs/performance.md
# "Padding-free batches"): bench/train_ab.sh on configs/pretrain-small.yaml with the same
# executable and padding_free=false / true. Prints the median examples/s over steps 2..STEPS of
# every run, the padded-token fraction of the rows the encoder computed, the losses of the last
# step, and the ratio.
# usage: bench/padding_free.sh [extra key=value overrides]
#   env: BUILD_DIR (build), STEPS (12), ROUNDS (2), THREADS (2), OUT (out/bench/padding_free)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
bin=${BUILD_DIR:-build}/cli/dialtree
OUT=${OUT:-$root/out/bench/padding_free} exec bench/train_ab.sh configs/pretrain-small.yaml \
  "padded=$bin,padding_free=false" "padding_free=$bin,padding_free=true" -- "$@"
