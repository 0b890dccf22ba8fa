#!/usr/bin/env bash
# The main job: set up (install what is missing, build), then run dialtree on the real data in
# ../shared/data: convert every dataset to sts/1 JSONL (out/sts/), train the SentencePiece
# tokenizer (out/tokenizer/), then SPACE-2's three stages in its order (docs/results.md
# "Language first"): the language stage (configs/pretrain-lm.yaml: MLM on the unlabelled
# utterances) into runs/pretrain-lm/, the tree-structured contrastive stage continued from it
# (configs/pretrain-small.yaml, the representation probe on val every 150 steps) into
# runs/pretrain-small/, and the intent stage (configs/pretrain-intent.yaml, the model of the
# best val probe kept) into runs/pretrain-intent/, and the intent stage again with pseudo-labelled
# training utterances (docs/training.md "Pseudo-labelled intent stage") into
# runs/pretrain-intent-pseudo/; print the probe table of that model on test,
# then fine-tune and score it few-shot on DialoGLUE's banking, clinc and hwu (configs/eval-few.yaml,
# the classifier started from the linear probe) into
# runs/eval-few/ and print the table, and draw the figures into runs/figures/. Re-running skips
# a finished pretraining stage and resumes an interrupted one from its last checkpoint; the
# evaluation is re-run (EVAL=0 skips the fine-tuning, which is the longest step).
#   usage: scripts/run.sh
#   env: DIALTREE_SHARED (default ../shared), EVAL (1), SEEDS (1,2,3), TASKS (banking,clinc,hwu)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
# The main job needs the two executables only; tests and benchmarks (half of a clean build's
# compile time) are built by scripts/test.sh. BUILD_TARGETS=all builds everything.
BUILD_TARGETS=${BUILD_TARGETS:-dialtree dialtree-torch} scripts/setup.sh
shared=$(cd "${DIALTREE_SHARED:-$root/../shared}" && pwd -P)
data=$shared/data
out=$root/out  # configs/pretrain-small.yaml reads out/sts and out/tokenizer
bin=${BUILD_DIR:-build}/cli/dialtree
[[ -d $data/dialoglue ]] || { echo "run: no data in $data (set DIALTREE_SHARED)" >&2; exit 1; }
mkdir -p "$out/sts"

convert() {  # format input output
  "$bin" sts convert --format "$1" --input "$2" --out "$out/sts/$3.jsonl"
}
# Every split; pretraining reads only train_10 (few-shot) and the SGD subset, never val or test.
for task in banking clinc hwu; do
  for split in train train_10 val test; do
    convert intent-csv "$data/dialoglue/$task/$split.csv" "$task.$split"
  done
done
for task in restaurant8k dstc8_sgd; do
  for split in train train_10 val test; do
    convert slot-json "$data/dialoglue/$task/$split.json" "$task.$split"
  done
done
for split in train train_10 eval test; do convert top "$data/dialoglue/top/$split.txt" "top.$split"; done
convert sgd "$data/pretrain/sgd_train_subset" sgd.train
convert text "$data/dialoglue/mlm_all_no_multiwoz.txt" mlm_all.train

if [[ ! -f $out/tokenizer/tokenizer.json ]]; then
  "$bin" tokenizer train --input "$data/dialoglue/mlm_all_no_multiwoz.txt" --vocab-size 8000 \
    --out "$out/tokenizer"
fi
echo "run: STS files in $out/sts, tokenizer in $out/tokenizer"

# One pretraining stage: skipped when finished, resumed from its newest checkpoint otherwise.
stage() {  # run_dir config [overrides...]
  local run_dir=$1 config=$2
  shift 2
  if [[ -f $run_dir/final/model.safetensors ]]; then
    echo "run: $run_dir/final exists (delete $run_dir to pretrain again)"
    return 0
  fi
  local resume=() step
  step=$(ls -d "$run_dir"/checkpoint-* 2>/dev/null | sed 's/.*checkpoint-//' | sort -n | tail -1 || true)
  if [[ -n $step ]]; then
    resume=("resume_from_checkpoint=$run_dir/checkpoint-$step")
    echo "run: resuming from $run_dir/checkpoint-$step"
  fi
  "$bin" train "$config" "$@" "${resume[@]}"
}
stage runs/pretrain-lm configs/pretrain-lm.yaml eval_data_dir="$data/dialoglue"
# A contrastive stage finished by an earlier run.sh started from random weights: say so, since
# it is skipped below as finished.
if [[ -f runs/pretrain-small/config.yaml ]] &&
  ! grep -q '^model_name_or_path: runs/pretrain-lm/final' runs/pretrain-small/config.yaml; then
  echo "run: warning: runs/pretrain-small was pretrained without the language stage (an earlier" \
    "recipe); delete runs/pretrain-small and runs/pretrain-intent to pretrain them again" >&2
fi
stage runs/pretrain-small configs/pretrain-small.yaml model_name_or_path=runs/pretrain-lm/final \
  eval_data_dir="$data/dialoglue"
stage runs/pretrain-intent configs/pretrain-intent.yaml model_name_or_path=runs/pretrain-small/final \
  eval_data_dir="$data/dialoglue"
# The semi-supervised intent stage (docs/training.md "Pseudo-labelled intent stage"): the intent
# stage's probe labels the unlabelled training utterances of the three tasks (train.csv's texts;
# its labels are never read), and the intent stage runs again from the same start with the 30
# most confident per intent beside train_10.
if [[ ! -f runs/pretrain-intent-pseudo/final/model.safetensors ]]; then
  "$bin" eval pseudo-label --model runs/pretrain-intent/final --out-dir "$out/pseudo" \
    --per-label 30 --data "$data/dialoglue"
fi
labelled=()
for task in banking clinc hwu; do labelled+=("$out/sts/$task.train_10.jsonl"); done
for task in banking clinc hwu; do labelled+=("$out/pseudo/$task.pseudo.jsonl"); done
stage runs/pretrain-intent-pseudo configs/pretrain-intent.yaml \
  output_dir=runs/pretrain-intent-pseudo model_name_or_path=runs/pretrain-small/final \
  num_train_epochs=6 eval_steps=91 "data.labelled=[$(IFS=,; echo "${labelled[*]}")]" \
  eval_data_dir="$data/dialoglue"
model=runs/pretrain-intent-pseudo/final
tasks=${TASKS:-banking,clinc,hwu}

"$bin" eval probe --model "$model" --tasks "$tasks" --split test --data "$data/dialoglue" \
  --out runs/probe.json
figures=(runs/pretrain-lm runs/pretrain-small runs/pretrain-intent runs/pretrain-intent-pseudo)
if [[ ${EVAL:-1} != 0 ]]; then
  # The classifier starts from the linear probe (docs/evaluation.md): chosen on val for the
  # pseudo-labelled intent stage's encoder (docs/results.md "Pseudo-labelled intent stage").
  "$bin" eval dialoglue --model "$model" --tasks "$tasks" --setting few \
    --seeds "${SEEDS:-1,2,3}" --config configs/eval-few.yaml --data-dir "$data/dialoglue" \
    --out runs/eval-few classifier_init=linear_probe
  figures+=(runs/eval-few)
fi
"$bin" plot "${figures[@]}" --out runs/figures
