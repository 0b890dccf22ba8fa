#!/usr/bin/env bash
# Which language stage teaches the encoder more per CPU-minute? (docs/results.md, the section of
# that name; scripts/stage-table.py prints its tables). For each NAME=MODEL (a pretraining run's
# final/ or checkpoint-N/), the [CLS] probe of the intent tasks on val and on test, then
# few-shot fine-tuning (configs/eval-few.yaml, as the main job fine-tunes: the classifier starts
# from the linear probe) on TASKS with SEEDS, one folder per task and seed, so that seeds can be
# added later. Everything lands in runs/lang/NAME/; a finished part is reused. The language stages
# themselves are trained by `dialtree train`, with the commands docs/results.md prints.
#   usage: scripts/language-stage.sh NAME=MODEL [NAME=MODEL ...]
#   env: TASKS (banking,clinc,hwu), SEEDS (1,2,3), PROBE (1; 0 skips the probes),
#        DIALTREE_SHARED (../shared), BUILD_DIR (build)
set -euo pipefail
cd "$(dirname "$0")/.."  # the repository root
data=$(cd "${DIALTREE_SHARED:-../shared}" && pwd -P)/data/dialoglue
bin=${BUILD_DIR:-build}/cli/dialtree
tasks=${TASKS:-banking,clinc,hwu}
seeds=${SEEDS:-1,2,3}
(($# > 0)) || { sed -n '2,12p' "$0" >&2; exit 2; }
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
      out=runs/lang/$name/eval-few/$task-s$seed
      [[ -f $out/results.json ]] && continue
      "$bin" eval dialoglue --model "$model" --tasks "$task" --setting few --seeds "$seed" \
        --config configs/eval-few.yaml --data-dir "$data" --out "$out" \
        classifier_init=linear_probe
    done
  done
done
