#!/usr/bin/env bash
# The few-shot comparison of docs/results.md: the small encoder (configs/pretrain-small.yaml)
# under different pretraining, each scored two ways on DialoGLUE's banking, clinc and hwu:
#   - the representation probe on frozen [CLS] vectors (`dialtree eval probe`, seconds), and
#   - fine-tuned with SPACE-2's intent recipe on train_10 (configs/eval-few.yaml), test accuracy
#     mean ± std over SEEDS;
# with the TF-IDF n-gram baseline (bench/reference/tfidf_baseline.py) in the same table.
# Rows (every stage sees labels of train_10 only: few-shot throughout):
#   (a) no pretraining: the same architecture and tokenizer, every weight re-initialised;
#   (b) MLM only: configs/pretrain-small.yaml with both contrastive weights 0;
#   (c) SPACE-2: configs/pretrain-small.yaml from random weights (the old main job's stage 1);
#   (d) SPACE-2 + intent stage: configs/pretrain-intent.yaml continued from (c);
#   (e) intent stage alone, from random weights (is the language stage worth its time?);
#   (f) the language stage alone: configs/pretrain-lm.yaml (MLM on the unlabelled utterances)
#       at 6,000 steps, the length these rows were measured at (the main job runs 12,000);
#   (g) SPACE-2's order from scratch: (f)'s checkpoint at step 2000 (of its 6000), then
#       configs/pretrain-small.yaml continued from it, then the intent stage (docs/notebook.md
#       "Language first": the run measured there).
# A finished stage is skipped when re-run. Results: runs/fewshot/<row>/{probe.json,eval/},
# and the figures in runs/fewshot/figures/; scripts/fewshot-table.py prints the fine-tuned table.
#   usage: scripts/experiment-fewshot.sh
#   env: DIALTREE_SHARED (../shared), SEEDS (1,2,3), TASKS (banking,clinc,hwu), ROWS (a,...,g),
#        FINETUNE (1; 0 = probe only), EVAL_OVERRIDES (key=value ... for configs/eval-few.yaml),
#        THREADS (LibTorch threads per job, default all CPUs)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
data=$(cd "${DIALTREE_SHARED:-$root/../shared}" && pwd -P)/data/dialoglue
bin=${BUILD_DIR:-build}/cli/dialtree
seeds=${SEEDS:-1,2,3}
tasks=${TASKS:-banking,clinc,hwu}
rows=${ROWS:-a,b,c,d,e,f,g}
threads=${THREADS:-$(nproc)}
out=runs/fewshot
mkdir -p "$out"
[[ -f out/tokenizer/tokenizer.json ]] ||
  { echo "experiment: run scripts/run.sh first (it converts the data and trains the tokenizer)" >&2; exit 1; }

pretrain() {  # run_dir config [overrides...]: skipped when run_dir/final exists
  local dir=$1 config=$2
  shift 2
  [[ -f $dir/final/model.safetensors ]] && return 0
  "$bin" train "$config" output_dir="$dir" threads="$threads" "$@"
}

row_model() {  # row -> the bundle it evaluates
  case $1 in
    a|c) echo "$out/c-space2/final" ;;  # (a) re-initialises (c)'s architecture: --from-scratch
    b) echo "$out/b-mlm/final" ;;
    d) echo "$out/d-space2-intent/final" ;;
    e) echo "$out/e-intent-only/final" ;;
    f) echo "$out/f-lm/final" ;;
    g) echo "$out/g-lm-space2-intent/final" ;;
  esac
}

for row in ${rows//,/ }; do
  case $row in
    a|c) pretrain "$out/c-space2" configs/pretrain-small.yaml eval_steps=150 ;;
    b) pretrain "$out/b-mlm" configs/pretrain-small.yaml eval_steps=150 \
         loss.contrastive_weight=0 loss.self_supervised_weight=0 ;;
    d) pretrain "$out/c-space2" configs/pretrain-small.yaml eval_steps=150
       pretrain "$out/d-space2-intent" configs/pretrain-intent.yaml \
         model_name_or_path="$out/c-space2/final" ;;
    e) pretrain "$out/e-intent-only" configs/pretrain-intent.yaml model_name_or_path= ;;
    f) pretrain "$out/f-lm" configs/pretrain-lm.yaml max_steps=6000 ;;
    g) pretrain "$out/f-lm" configs/pretrain-lm.yaml max_steps=6000
       pretrain "$out/g-lm-space2" configs/pretrain-small.yaml eval_steps=150 \
         model_name_or_path="$out/f-lm/checkpoint-2000"
       pretrain "$out/g-lm-space2-intent" configs/pretrain-intent.yaml \
         model_name_or_path="$out/g-lm-space2/final" ;;
    *) echo "experiment: unknown row '$row' (a, b, c, d, e, f, g)" >&2; exit 2 ;;
  esac
  model=$(row_model "$row")
  scratch=() probe_scratch=()
  [[ $row == a ]] && scratch=(--from-scratch) probe_scratch=(--from-scratch-seed 1)
  dir=$out/$row
  mkdir -p "$dir"
  DIALTREE_NUM_THREADS=$threads "$bin" eval probe --model "$model" "${probe_scratch[@]}" \
    --tasks "$tasks" --protocols dialoglue-few,mteb --split test --data "$data" \
    --out "$dir/probe.json" | tee "$dir/probe.md"
  if [[ ${FINETUNE:-1} != 0 ]]; then
    # shellcheck disable=SC2086
    DIALTREE_NUM_THREADS=$threads "$bin" eval dialoglue --model "$model" "${scratch[@]}" \
      --tasks "$tasks" --setting few --seeds "$seeds" --config configs/eval-few.yaml \
      --data-dir "$data" --out "$dir/eval" ${EVAL_OVERRIDES:-}
  fi
done

/usr/bin/python3 bench/reference/tfidf_baseline.py --data "$data" --json "$out/tfidf.json" \
  >"$out/tfidf.md"
figures=()
for row in ${rows//,/ }; do [[ -f $out/$row/eval/results.json ]] && figures+=("$out/$row/eval"); done
"$bin" plot "$out"/*/metrics.jsonl "${figures[@]}" "$out/tfidf.json" --out "$out/figures"
echo "experiment: results in $out (probe.md and eval/results.md per row, tfidf.md, figures/)"
