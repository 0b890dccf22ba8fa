#!/usr/bin/env bash
# The main job: set up (install what is missing, build), then run dialtree on the real data in
# ../shared/data: convert every dataset to sts/1 JSONL (out/sts/), train the SentencePiece
# tokenizer (out/tokenizer/), then pretrain the small SPACE-2 encoder (configs/pretrain-small.yaml,
# about 25 minutes on 2 cores) into runs/pretrain-small/. The DialoGLUE evaluation will follow.
# Re-running skips a finished pretraining and resumes an interrupted one from its last checkpoint.
#   usage: scripts/run.sh            env: DIALTREE_SHARED (default ../shared)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
scripts/setup.sh
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

run_dir=runs/pretrain-small
if [[ -f $run_dir/final/model.safetensors ]]; then
  echo "run: $run_dir/final exists (delete $run_dir to pretrain again)"
else
  resume=()
  step=$(ls -d "$run_dir"/checkpoint-* 2>/dev/null | sed 's/.*checkpoint-//' | sort -n | tail -1 || true)
  if [[ -n $step ]]; then
    resume=("resume_from_checkpoint=$run_dir/checkpoint-$step")
    echo "run: resuming from $run_dir/checkpoint-$step"
  fi
  "$bin" train configs/pretrain-small.yaml "${resume[@]}"
fi
