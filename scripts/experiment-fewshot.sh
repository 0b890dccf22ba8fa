#!/usr/bin/env bash
# The few-shot experiment of docs/results.md: the small encoder evaluated few-shot (train_10) on
# banking, clinc and hwu, 3 seeds, the same fine-tuning budget (configs/eval-few.yaml), for
#   (a) no pretraining: the same architecture and tokenizer, every weight re-initialised;
#   (b) pretrained with MLM only: configs/pretrain-small.yaml with both contrastive weights 0
#       (same data, same steps; the contrastive passes are skipped, not multiplied by 0);
#   (c) pretrained with the full SPACE-2 objective: runs/pretrain-small from scripts/run.sh.
# Run scripts/run.sh first (it builds, converts the data, trains the tokenizer and (c)).
#   usage: scripts/experiment-fewshot.sh      env: DIALTREE_SHARED (../shared), SEEDS (1,2,3)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
data=$(cd "${DIALTREE_SHARED:-$root/../shared}" && pwd -P)/data/dialoglue
bin=${BUILD_DIR:-build}/cli/dialtree
seeds=${SEEDS:-1,2,3}
[[ -f runs/pretrain-small/final/model.safetensors ]] ||
  { echo "experiment: runs/pretrain-small/final is missing: run scripts/run.sh first" >&2; exit 1; }

if [[ ! -f runs/pretrain-small-mlm/final/model.safetensors ]]; then
  "$bin" train configs/pretrain-small.yaml output_dir=runs/pretrain-small-mlm \
    loss.contrastive_weight=0 loss.self_supervised_weight=0
fi

evaluate() {  # out model [flags]
  local out=$1 model=$2
  shift 2
  "$bin" eval dialoglue --model "$model" --tasks banking,clinc,hwu --setting few --seeds "$seeds" \
    --config configs/eval-few.yaml --data-dir "$data" --out "$out" "$@"
}
evaluate runs/fewshot-a-scratch runs/pretrain-small/final --from-scratch
evaluate runs/fewshot-b-mlm runs/pretrain-small-mlm/final
evaluate runs/fewshot-c-space2 runs/pretrain-small/final
for x in a-scratch b-mlm c-space2; do
  echo "== ($x)"
  cat "runs/fewshot-$x/results.md"
done
