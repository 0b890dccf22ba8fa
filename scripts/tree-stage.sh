#!/usr/bin/env bash
# Does SPACE-2's tree help where the tree has branches? (docs/results.md, the section of that
# name; scripts/stage-table.py prints its tables). From the language stage
# (runs/pretrain-lm/final, `EVAL=0 TOKEN_STAGE=0 scripts/run.sh`),
# run a contrastive stage on the data with real trees (the SGD subset without DSTC8's services,
# and the train_10 split of all six DialoGLUE tasks; configs/pretrain-small.yaml) in arms that
# differ only in the projection views, in how the labelled batches are drawn, or in a token-level term:
#   tree    all ten views of SPACE-2 (D, I, S, V, DI, IS, SV, DIS, ISV, DISV);
#   single  the I view alone on the same data and steps ("more labels" without "tree views").
#   values  all ten views, with labelled batches drawn so that groups of 4 share a slot-value
#           pair (data.group_by_view=SV, docs/training.md "Batches that share values"): the
#           value views' positives that random batches of 32 almost never hold.
#   tokens  all ten views with random batches, plus the token-level tree term
#           (loss.token_contrastive_weight=1, docs/training.md "A token-level tree term"): the
#           S view at token level, for the tokens a tagger reads.
#   tokens-sgd  the tokens arm without the slot tasks' own train_10 (restaurant8k, dstc8, top) in
#           the stage: their spans reach the encoder only when it is fine-tuned, so what the term
#           adds can come only from the SGD subset's other services (the cause test).
# TOKEN_WEIGHT sets the token term's weight of both token arms (1); any other weight runs in
# runs/tree/<arm>-w<weight>-p<seed>/, so that a sweep on val keeps every weight's run.
# Each arm logs the val probe of all six tasks (intent [CLS] probe and token-level probe) every
# 150 steps (the curves), then the probe table on val and test, then is fine-tuned few-shot
# (configs/eval-few.yaml) on TASKS with SEEDS. Everything lands in runs/tree/<arm>-p<seed>/.
# A finished part is reused.
#   usage: scripts/tree-stage.sh
#   env: ARMS (tree,single; values, tokens, tokens-sgd on request), TOKEN_WEIGHT (1), PRETRAIN_SEEDS (11: pretraining seeds, `seed`/`data_seed`),
#        TASKS (restaurant8k,dstc8,top,banking,clinc,hwu: fine-tuned tasks, in this order),
#        SEEDS (1,2,3: fine-tuning seeds), DIALTREE_SHARED (../shared)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
shared=$(cd "${DIALTREE_SHARED:-$root/../shared}" && pwd -P)
data=$shared/data/dialoglue
bin=${BUILD_DIR:-build}/cli/dialtree
arms=${ARMS:-tree,single}
pretrain_seeds=${PRETRAIN_SEEDS:-11}
tasks=${TASKS:-restaurant8k,dstc8,top,banking,clinc,hwu}
seeds=${SEEDS:-1,2,3}
token_weight=${TOKEN_WEIGHT:-1}
[[ $token_weight =~ ^[0-9]+([.][0-9]+)?$ ]] ||
  { echo "tree-stage: TOKEN_WEIGHT: '$token_weight' is not a non-negative number" >&2; exit 2; }
all_tasks=banking,clinc,hwu,restaurant8k,dstc8,top
[[ -f runs/pretrain-lm/final/model.safetensors ]] ||
  { echo "tree-stage: no language stage in runs/pretrain-lm/final (run EVAL=0 TOKEN_STAGE=0 scripts/run.sh)" >&2; exit 1; }
# The run directory's name of an arm: the token arms at a weight other than 1 carry it.
arm_dir() {
  if [[ $1 == tokens* && $token_weight != 1 ]]; then echo "$1-w$token_weight"; else echo "$1"; fi
}
for arm in ${arms//,/ }; do  # a typo must not cost the earlier arms' training first
  [[ $arm == tree || $arm == single || $arm == values || $arm == tokens || $arm == tokens-sgd ]] ||
    { echo "tree-stage: ARMS: unknown arm '$arm' (tree, single, values, tokens, tokens-sgd)" >&2; exit 2; }
done
for arm in ${arms//,/ }; do
  extra=()
  case $arm in
    tree) views='[D,I,S,V,DI,IS,SV,DIS,ISV,DISV]' ;;
    single) views='[I]' ;;
    values) views='[D,I,S,V,DI,IS,SV,DIS,ISV,DISV]' extra=(data.group_by_view=SV data.group_size=4) ;;
    tokens) views='[D,I,S,V,DI,IS,SV,DIS,ISV,DISV]' extra=(loss.token_contrastive_weight="$token_weight") ;;
    tokens-sgd) views='[D,I,S,V,DI,IS,SV,DIS,ISV,DISV]'
      extra=(loss.token_contrastive_weight="$token_weight"
        'data.labelled=[out/sts/sgd.train.jsonl,out/sts/banking.train_10.jsonl,out/sts/clinc.train_10.jsonl,out/sts/hwu.train_10.jsonl]') ;;
    *) echo "tree-stage: ARMS: unknown arm '$arm' (tree, single, values, tokens, tokens-sgd)" >&2; exit 2 ;;
  esac
  for pseed in ${pretrain_seeds//,/ }; do
    dir=runs/tree/$(arm_dir "$arm")-p$pseed
    if [[ ! -f $dir/final/model.safetensors ]]; then
      echo "tree-stage: $arm, pretraining seed $pseed -> $dir"
      "$bin" train configs/pretrain-small.yaml model_name_or_path=runs/pretrain-lm/final \
        output_dir="$dir" overwrite_output_dir=true seed="$pseed" data_seed="$pseed" \
        model.projection_views="$views" eval_tasks="[$all_tasks]" eval_data_dir="$data" \
        ${extra[@]+"${extra[@]}"}
    fi
    for split in val test; do
      [[ -f $dir/probe-$split.json ]] ||
        "$bin" eval probe --model "$dir/final" --tasks "$all_tasks" --protocols dialoglue-few \
          --split "$split" --data-dir "$data" --out "$dir/probe-$split.json"
    done
  done
done
# Fine-tuning last, task by task across the arms, so that a stopped run has compared every arm on
# the tasks it reached.
for task in ${tasks//,/ }; do
  for arm in ${arms//,/ }; do
    for pseed in ${pretrain_seeds//,/ }; do
      dir=runs/tree/$(arm_dir "$arm")-p$pseed
      [[ -f $dir/eval-few/$task/results.json ]] && continue
      # As the main job fine-tunes: the intent classifier starts from the linear probe (tagging
      # heads start at random whatever this says).
      "$bin" eval dialoglue --model "$dir/final" --tasks "$task" --setting few --seeds "$seeds" \
        --config configs/eval-few.yaml --data-dir "$data" --out "$dir/eval-few/$task" \
        classifier_init=linear_probe
    done
  done
done
