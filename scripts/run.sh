#!/usr/bin/env bash
# The main job: set up (install what is missing, build), then run dialtree on the real data in
# ../shared/data: convert every dataset to sts/1 JSONL (out/sts/), train the SentencePiece
# tokenizer (out/tokenizer/), then pretrain in SPACE-2's order (docs/results.md "Language
# first"): the language stage (configs/pretrain-lm.yaml: MLM on the unlabelled utterances, 12,000
# steps) into runs/pretrain-lm/; with STAGE1=1 only, the tree-structured contrastive stage
# continued from it (configs/pretrain-small.yaml) into runs/pretrain-small/; the intent stage
# (configs/pretrain-intent.yaml, the model of the best val probe kept) into runs/pretrain-intent/,
# and the intent stage again from the same start with pseudo-labelled training utterances
# (docs/training.md "Pseudo-labelled intent stage") into runs/pretrain-intent-pseudo/. Then print
# the probe table of that model on test, fine-tune and score it few-shot on DialoGLUE's banking,
# clinc and hwu (configs/eval-few.yaml, the classifier started from the linear probe) into
# runs/eval-few/, fine-tune it again with self-training (the first seed's models label the
# unlabelled training utterances) into runs/eval-few-self/, print both tables, and draw the
# figures into runs/figures/. Re-running reuses a finished pretraining stage trained with the same
# configuration and resumes an interrupted one from its last checkpoint; the evaluation is re-run.
#   usage: scripts/run.sh
#   env: DIALTREE_SHARED (default ../shared), EVAL (1; 0 skips fine-tuning, the longest step),
#        SELF_TRAIN (1; 0 skips the self-training fine-tuning), STAGE1 (0; 1 adds SPACE-2's
#        stage 1), SEEDS (1,2,3; the first one's models are the self-training teachers),
#        TASKS (banking,clinc,hwu)
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

# One pretraining stage: reused when finished with the configuration this run asks for (every
# line of the stage's config.yaml is in `dialtree print-config` of the same config and overrides;
# thread count, data folder, resume point and overwrite_output_dir aside, and keys that a newer
# dialtree added with their defaults), stopped with the difference when finished with another
# (an earlier recipe), resumed from its newest checkpoint when interrupted.
stage() {  # run_dir config [overrides...]
  local run_dir=$1 config=$2
  shift 2
  if [[ -f $run_dir/final/model.safetensors ]]; then
    local ignore='^(resume_from_checkpoint|threads|eval_data_dir|overwrite_output_dir):' difference
    difference=$(diff <(grep -Ev "$ignore" "$run_dir/config.yaml") \
      <("$bin" print-config "$config" "$@" | grep -Ev "$ignore") || true)
    if grep -q '^<' <<<"$difference"; then
      echo "$difference" >&2
      echo "run: $run_dir was trained with another configuration (< its config.yaml, > this" \
        "run's); delete $run_dir and the stages after it to pretrain them again" >&2
      exit 1
    fi
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
figures=(runs/pretrain-lm)
start=runs/pretrain-lm/final
# SPACE-2's tree-structured contrastive stage (stage 1) runs only with STAGE1=1: after the
# language stage it lowers the frozen vectors' probe and leaves the fine-tuned score where it was,
# and its 16 minutes serve the language stage better (docs/results.md "SPACE-2's stages after the
# 12k language stage").
if [[ ${STAGE1:-0} != 0 ]]; then
  stage runs/pretrain-small configs/pretrain-small.yaml model_name_or_path=runs/pretrain-lm/final \
    eval_data_dir="$data/dialoglue"
  figures+=(runs/pretrain-small)
  start=runs/pretrain-small/final
fi
stage runs/pretrain-intent configs/pretrain-intent.yaml model_name_or_path="$start" \
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
  output_dir=runs/pretrain-intent-pseudo model_name_or_path="$start" \
  num_train_epochs=6 eval_steps=91 "data.labelled=[$(IFS=,; echo "${labelled[*]}")]" \
  eval_data_dir="$data/dialoglue"
figures+=(runs/pretrain-intent runs/pretrain-intent-pseudo)
model=runs/pretrain-intent-pseudo/final
tasks=${TASKS:-banking,clinc,hwu}
seeds=${SEEDS:-1,2,3}

"$bin" eval probe --model "$model" --tasks "$tasks" --split test --data "$data/dialoglue" \
  --out runs/probe.json
if [[ ${EVAL:-1} != 0 ]]; then
  # The classifier starts from the linear probe (docs/evaluation.md): chosen on val for the
  # pseudo-labelled intent stage's encoder (docs/results.md "Pseudo-labelled intent stage").
  # Every fine-tuned model is kept (OUT/TASK/seed-N/model, servable by `dialtree serve`).
  "$bin" eval dialoglue --model "$model" --tasks "$tasks" --setting few --seeds "$seeds" \
    --config configs/eval-few.yaml --data-dir "$data/dialoglue" --out runs/eval-few \
    --save-models classifier_init=linear_probe
  figures+=(runs/eval-few)
  if [[ ${SELF_TRAIN:-1} != 0 ]]; then
    # Self-training (docs/evaluation.md "Self-training (`--pseudo-labels DIR`)"): the first seed's fine-tuned model of
    # each task labels that task's unlabelled training utterances (train.csv's texts; its labels
    # are never read), and fine-tuning runs again on train_10 plus the 30 most confident per
    # intent, 25 epochs with patience 6 (docs/results.md "Fine-tuned teachers and
    # self-training").
    teachers=()
    for task in ${tasks//,/ }; do
      teachers+=(--teacher "$task=runs/eval-few/$task/seed-${seeds%%,*}/model")
    done
    "$bin" eval pseudo-label --tasks "$tasks" "${teachers[@]}" --out-dir "$out/pseudo-teacher" \
      --per-label 30 --data "$data/dialoglue"
    "$bin" eval dialoglue --model "$model" --tasks "$tasks" --setting few --seeds "$seeds" \
      --config configs/eval-few.yaml --data-dir "$data/dialoglue" --out runs/eval-few-self \
      --save-models --pseudo-labels "$out/pseudo-teacher" classifier_init=linear_probe \
      num_train_epochs=25 early_stopping_patience=6
    figures+=(runs/eval-few-self)
  fi
fi
"$bin" plot "${figures[@]}" --out runs/figures
