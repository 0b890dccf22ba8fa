#!/usr/bin/env bash
# Which language stage teaches the encoder more per CPU-minute? (docs/results.md, the section of
# that name; scripts/stage-table.py prints its tables). For each NAME=MODEL (a pretraining run's
# final/ or checkpoint-N/), the [CLS] probe of the intent tasks on val and on test, then
# few-shot fine-tuning (configs/eval-few.yaml) on TASKS with SEEDS, one folder per task and seed,
# so that seeds can be added later. The classifier starts as INIT says: `random` by default, the
# start val chose for a language stage alone (docs/results.md "How the scoreboard was made"), or
# `linear_probe`, the main job's. Everything lands in runs/lang/NAME/ (the fine-tuning in
# eval-few-INIT/); a finished part is reused. The language stages themselves are trained by
# `dialtree train`, with the commands docs/results.md prints.
#   usage: scripts/language-stage.sh NAME=MODEL [NAME=MODEL ...]
#   env: TASKS (banking,clinc,hwu), SEEDS (1,2,3), INIT (random | linear_probe),
#        PROBE (1; 0 skips the probes), DIALTREE_SHARED (../shared), BUILD_DIR (build)
set -euo pipefail
cd "$(dirname "$0")/.."  # the repository root
data=$(cd "${DIALTREE_SHARED:-../shared}" && pwd -P)/data/dialoglue
bin=${BUILD_DIR:-build}/cli/dialtree
tasks=${TASKS:-banking,clinc,hwu}
seeds=${SEEDS:-1,2,3}
init=${INIT:-random}
(($# > 0)) || { sed -n '2,14p' "$0" >&2; exit 2; }
[[ $init == random || $init == linear_probe ]] ||
  { echo "language-stage: INIT='$init': expected random or linear_probe" >&2; exit 2; }
for arg in "$@"; do
  name=${arg%%=*} model=${arg#*=}
  [[ $arg == *=* && -n $name && $name != */* ]] ||
    { echo "language-stage: '$arg': expected NAME=MODEL (NAME without '/')" >&2; exit 2; }
  [[ -f $model/model.safetensors ]] ||
    { echo "language-stage: $name: no model in '$model' (no model.safetensors)" >&2; exit 1; }
done
for arg in "$@"; do
  name=${arg%%=*} model=${arg#*=}
  dir=runs/lang/$name
  mkdir -p "$dir"
  [[ ${PROBE:-1} == 0 ]] && continue
  for split in val test; do
    [[ -f $dir/probe-$split.json ]] ||
      "$bin" eval probe --model "$model" --tasks banking,clinc,hwu --protocols dialoglue-few \
        --split "$split" --data-dir "$data" --out "$dir/probe-$split.json"
  done
done
# Fine-tuning seed by seed across the rows, so that a stopped run has compared every row on the
# seeds it reached.
for seed in ${seeds//,/ }; do
  for task in ${tasks//,/ }; do
    for arg in "$@"; do
      name=${arg%%=*} model=${arg#*=}
      out=runs/lang/$name/eval-few-$init/$task-s$seed
      [[ -f $out/results.json ]] && continue
      "$bin" eval dialoglue --model "$model" --tasks "$task" --setting few --seeds "$seed" \
        --config configs/eval-few.yaml --data-dir "$data" --out "$out" \
        classifier_init="$init"
    done
  done
done
