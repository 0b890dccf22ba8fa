#!/usr/bin/env bash
# The main job: set up (install what is missing, build), then run dialtree on the real data in
# ../shared/data: convert every dataset to sts/1 JSONL (out/sts/), train the SentencePiece
# tokenizer (out/tokenizer/), then pretrain in SPACE-2's order (docs/results.md "What does the
# language stage's length buy?"): the language stage (configs/pretrain-lm.yaml: MLM on the
# unlabelled utterances, 12,000 steps) into runs/pretrain-lm/; with STAGE1=1 only, the
# tree-structured contrastive stage
# continued from it (configs/pretrain-small.yaml) into runs/pretrain-small/; unless
# TOKEN_STAGE=0, the token stage for the tagging tasks (the same config with the token-level tree
# term) continued from the language stage into runs/pretrain-tokens/; the intent stage
# (configs/pretrain-intent.yaml, the model of the best val probe kept) into runs/pretrain-intent/,
# and the intent stage again from the same start with pseudo-labelled training utterances
# (docs/training.md "Pseudo-labelled intent stage") into runs/pretrain-intent-pseudo/. Then print
# the probe table of that model on test (intent probe and token-level probe; with the token
# stage also the token stage's, runs/probe-tokens.json), fine-tune and score
# it on DialoGLUE's tasks (configs/eval-<setting>.yaml, the intent classifier started from the
# linear probe) into runs/eval-<setting>/ (with DialoGLUE's submission file; the tagging tasks
# from the token stage into runs/eval-<setting>-tokens/); with SELF_TRAIN=1
# fine-tune the intent tasks again with self-training (the first seed's models label the
# unlabelled training utterances) into runs/eval-few-self/; run the classical baselines
# (bench/reference), write the scoreboard runs/scoreboard.{md,json} and draw the figures into
# runs/figures/. It prints each
# part with its minutes and when the whole job should end. Re-running reuses a finished
# pretraining stage trained with the same configuration and resumes an interrupted one from its
# last checkpoint; the evaluation is re-run.
#   usage: scripts/run.sh
#   env: DIALTREE_SHARED (default ../shared), EVAL (1; 0 skips fine-tuning, the longest step),
#        TASKS (banking,clinc,hwu,restaurant8k,dstc8,top), SETTINGS (few; few,full for both
#        DialoGLUE settings), SEEDS (1,2,3: few-shot seeds; the first one's models are the
#        self-training teachers), FULL_SEEDS (the first of SEEDS: full-data seeds),
#        SELF_TRAIN (0; 1 adds self-training of the intent tasks, about 90 min), LM_ROW (0; 1
#        also fine-tunes the language stage alone into runs/eval-<setting>-lm, the scoreboard's
#        row), STAGE1 (0; 1 adds SPACE-2's stage 1), TOKEN_STAGE (1: the tagging tasks,
#        restaurant8k, dstc8 and top, are fine-tuned from a token stage: the ten views plus the
#        token-level tree term, configs/pretrain-small.yaml with loss.token_contrastive_weight=
#        TOKEN_WEIGHT (1), continued from the language stage into RUNS/pretrain-tokens, about
#        14 min; its fine-tuning goes to RUNS/eval-<setting>-tokens; docs/results.md "A
#        token-level tree term"; 0 fine-tunes them from the intent stages' encoder, as the
#        AMD runs 1-3, the scoreboard until 2026-12-07, were made),
#        RUNS (runs: the folder of every run folder above, e.g. runs/p2 for a second pretraining
#        run), PRETRAIN_SEED (the configs' seeds; N sets seed and data_seed of every stage),
#        LM_OPTIONS (key=value overrides of the language stage, space-separated, e.g.
#        "loss.mlm_probability=0.3"), LM_FROM (a finished language stage's run folder, e.g.
#        runs/pretrain-lm: the stages after it start from its final/ and the language stage is
#        not trained; PRETRAIN_SEED then seeds the later stages only), PRETRAIN_OPTIONS
#        (key=value overrides of every pretraining stage, the language stage too, e.g.
#        "bf16=false" on a CPU where bf16 runs slower: docs/performance.md "bf16 autocast"; a
#        finished stage trained otherwise stops the job, so a new precision needs a new RUNS),
#        EVAL_OPTIONS (key=value overrides of every `eval dialoglue` fine-tuning, e.g.
#        "bf16=false"; the probes and pseudo-labelling keep their own --bf16)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
# The main job needs the two executables only; tests and benchmarks (half of a clean build's
# compile time) are built by scripts/test.sh. BUILD_TARGETS=all builds everything.
BUILD_TARGETS=${BUILD_TARGETS:-dialtree dialtree-torch} scripts/setup.sh
shared=$(cd "${DIALTREE_SHARED:-$root/../shared}" && pwd -P)
data=$shared/data
out=$root/out  # configs/pretrain-small.yaml reads out/sts and out/tokenizer
# Every run folder (pretraining stages, fine-tuning, scoreboard, figures) goes under RUNS, so that
# a second pretraining run (PRETRAIN_SEED) or another language stage (LM_OPTIONS) keeps its own.
runs=${RUNS:-runs}
runs=${runs%/}
# (+ and @ join and select a scoreboard row's sources, | separates the fine-tuning parts.)
[[ -n $runs && $runs != *[[:space:]+@\|]* ]] ||
  { echo "run: RUNS='${RUNS:-}': expected a folder name without spaces, +, @ or |" >&2; exit 2; }
# Overrides of every pretraining stage (a pretraining seed, PRETRAIN_OPTIONS), of the language
# stage alone (LM_OPTIONS, given after them: it wins) and of every fine-tuning (EVAL_OPTIONS).
# They come after the script's own keys, so the keys that place a stage's folders and its start
# are the script's alone.
pretrain_options=()
if [[ -n ${PRETRAIN_SEED:-} ]]; then
  [[ $PRETRAIN_SEED =~ ^[0-9]+$ ]] ||
    { echo "run: PRETRAIN_SEED='$PRETRAIN_SEED': expected a non-negative integer" >&2; exit 2; }
  pretrain_options=("seed=$PRETRAIN_SEED" "data_seed=$PRETRAIN_SEED")
fi
read_options() {  # VAR ARRAY: the space-separated key=value list in $VAR into the array ARRAY
  local -n into=$2
  local option
  read -r -a into <<<"${!1:-}"
  for option in ${into[@]+"${into[@]}"}; do
    [[ $option == ?*=* ]] || { echo "run: $1: '$option': expected key=value" >&2; exit 2; }
    case ${option%%=*} in
      output_dir | model_name_or_path | resume_from_checkpoint)
        echo "run: $1: '${option%%=*}' is set by this script (RUNS, LM_FROM and its own" \
          "resuming choose it)" >&2
        exit 2
        ;;
    esac
  done
}
read_options LM_OPTIONS lm_options
read_options PRETRAIN_OPTIONS more_pretrain_options
read_options EVAL_OPTIONS eval_options
pretrain_options+=(${more_pretrain_options[@]+"${more_pretrain_options[@]}"})
# The language stage: trained into RUNS/pretrain-lm, or an earlier one (LM_FROM) reused as it is.
lm=$runs/pretrain-lm
if [[ -n ${LM_FROM:-} ]]; then
  lm=${LM_FROM%/}
  [[ $lm != *[[:space:]]* ]] ||
    { echo "run: LM_FROM='$LM_FROM': expected a folder name without spaces" >&2; exit 2; }
  [[ -f $lm/final/model.safetensors && -f $lm/config.yaml ]] || {
    echo "run: LM_FROM='$LM_FROM': no finished pretraining stage there (no config.yaml and" \
      "final/model.safetensors)" >&2
    exit 2
  }
  # A language stage reads no label: its config.yaml lists none.
  grep -q '^  labelled: \[\]' "$lm/config.yaml" || {
    echo "run: LM_FROM='$LM_FROM': not a language stage (its config.yaml has labelled data;" \
      "the language stage reads none)" >&2
    exit 2
  }
  ((${#lm_options[@]} == 0)) ||
    { echo "run: LM_FROM and LM_OPTIONS: the language stage is either reused or trained" >&2; exit 2; }
fi
# The pseudo-labels of the intent stage belong to one pretraining run: out/pseudo for runs/ (where
# earlier runs' configurations name them), RUNS/pseudo otherwise.
pseudo=$out/pseudo pseudo_teacher=$out/pseudo-teacher
[[ $runs == runs ]] || pseudo=$runs/pseudo pseudo_teacher=$runs/pseudo-teacher
bin=${BUILD_DIR:-build}/cli/dialtree
[[ -d $data/dialoglue ]] || { echo "run: no data in $data (set DIALTREE_SHARED)" >&2; exit 1; }
# What to evaluate, checked before anything runs (a typo must not cost the pretraining first).
default_tasks=banking,clinc,hwu,restaurant8k,dstc8,top
intent_family=banking,clinc,hwu tagging_family=restaurant8k,dstc8,top  # the two task families
tasks=${TASKS:-$default_tasks}
tasks=${tasks//dstc8_sgd/dstc8}  # the data folder's name, as dialtree's commands accept it
settings=${SETTINGS:-few}
seeds=${SEEDS:-1,2,3}
full_seeds=${FULL_SEEDS:-${seeds%%,*}}
intent_tasks=() tagging_tasks=()
for task in ${tasks//,/ }; do
  # Quoted: a task name is matched as it is, never as a pattern (TASKS=hw? is no task).
  if [[ ,$intent_family, == *,"$task",* ]]; then intent_tasks+=("$task")
  elif [[ ,$tagging_family, == *,"$task",* ]]; then tagging_tasks+=("$task")
  else
    echo "run: TASKS: unknown task '$task' (${default_tasks//,/, })" >&2
    exit 2
  fi
done
((${#intent_tasks[@]} + ${#tagging_tasks[@]})) || { echo "run: TASKS: no task given" >&2; exit 2; }
for setting in ${settings//,/ }; do
  [[ $setting == few || $setting == full ]] ||
    { echo "run: SETTINGS: unknown setting '$setting' (few, full)" >&2; exit 2; }
done
[[ -n ${settings//,/} ]] || { echo "run: SETTINGS: no setting given (few, full)" >&2; exit 2; }
for var in seeds full_seeds; do
  [[ ${!var} =~ ^[0-9]+(,[0-9]+)*$ ]] || {
    echo "run: ${var^^}: '${!var}' is not a comma-separated list of seeds (e.g. 1,2,3)" >&2
    exit 2
  }
done
token_stage=${TOKEN_STAGE:-1} token_weight=${TOKEN_WEIGHT:-1}
[[ $token_stage == 0 || $token_stage == 1 ]] ||
  { echo "run: TOKEN_STAGE='$token_stage': expected 0 or 1" >&2; exit 2; }
[[ $token_weight =~ ^[0-9]+([.][0-9]+)?$ && $token_weight =~ [1-9] ]] ||
  { echo "run: TOKEN_WEIGHT='$token_weight': expected a number above 0" >&2; exit 2; }
# The token stage serves the tagging tasks only: without them it is not trained.
((${#tagging_tasks[@]})) || token_stage=0
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
# The SGD dialogues of dstc8's four services are left out: DialoGLUE's dstc8 train.json comes from
# them, so a labelled stage that saw them would make a few-shot dstc8 figure not few-shot
# (docs/sts-format.md, the bullet "SGD and the dstc8 task").
"$bin" sts convert --format sgd --input "$data/pretrain/sgd_train_subset" \
  --out "$out/sts/sgd.train.jsonl" --exclude-services dstc8
convert text "$data/dialoglue/mlm_all_no_multiwoz.txt" mlm_all.train

if [[ ! -f $out/tokenizer/tokenizer.json ]]; then
  "$bin" tokenizer train --input "$data/dialoglue/mlm_all_no_multiwoz.txt" --vocab-size 8000 \
    --out "$out/tokenizer"
fi
echo "run: STS files in $out/sts, tokenizer in $out/tokenizer"

# The whole job's ETA. Minutes per part on 2 cores, measured (README "Set-up and use"; docs/
# results.md "The DialoGLUE scoreboard" has the runs): pretraining stages, and per task and seed the fine-tuning of each setting,
# self-training and the classical baseline (all seeds of a task together there). A part already
# done (a finished stage) counts 0. `eta` prints a part with its minutes and when the job should
# end, then takes the part off what remains.
declare -A minutes=(
  [lm]=45 [stage1]=16 [tokens]=14 [intent]=3 [pseudo]=5 [probe]=1
  [few:banking]=5 [few:clinc]=10 [few:hwu]=3 [few:restaurant8k]=2 [few:dstc8]=2 [few:top]=10
  [full:banking]=11 [full:clinc]=15 [full:hwu]=8 [full:restaurant8k]=4 [full:dstc8]=3
  [full:top]=14
  [self:banking]=8 [self:clinc]=18 [self:hwu]=4
  [classical-few:banking]=0 [classical-few:clinc]=0 [classical-few:hwu]=0
  [classical-few:restaurant8k]=0 [classical-few:dstc8]=0 [classical-few:top]=5
  [classical-full:banking]=1 [classical-full:clinc]=2 [classical-full:hwu]=1
  [classical-full:restaurant8k]=0 [classical-full:dstc8]=0 [classical-full:top]=50
)
plan_minutes() {  # part tasks seeds -> minutes of that part for every task and seed
  local part=$1 n_seeds total=0 task
  n_seeds=$(tr ',' '\n' <<<"$3" | grep -c .)
  for task in ${2//,/ }; do total=$((total + ${minutes[$part:$task]:-0} * n_seeds)); done
  echo "$total"
}
remaining=0  # minutes planned and not yet started; set once the plan is known
eta() {  # what minutes
  local end
  end=$(date -d "+${remaining} min" +%H:%M)
  echo "run: $1: about $2 min on 2 cores; the whole job should end about $end (${remaining} min left)"
  remaining=$((remaining > $2 ? remaining - $2 : 0))
}

# One pretraining stage: reused when finished with the configuration this run asks for (every
# line of the stage's config.yaml is in `dialtree print-config` of the same config and overrides;
# thread count, data folder, resume point and overwrite_output_dir aside, and keys that a newer
# dialtree added with their defaults), stopped with the difference when finished with another
# (an earlier recipe), resumed from its newest checkpoint when interrupted.
stage() {  # run_dir config [overrides...]: trains into run_dir (output_dir)
  local run_dir=$1 config=$2
  shift 2
  set -- "output_dir=$run_dir" "$@"
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
# The plan: what this run will do, in minutes.
left() { [[ -f $1/final/model.safetensors ]] && echo 0 || echo "$2"; }
remaining=$(($(left $lm "${minutes[lm]}") \
  + $(left $runs/pretrain-intent "${minutes[intent]}") \
  + $(left $runs/pretrain-intent-pseudo "${minutes[pseudo]}")))
if [[ ${STAGE1:-0} != 0 ]]; then
  remaining=$((remaining + $(left $runs/pretrain-small "${minutes[stage1]}")))
fi
if [[ $token_stage != 0 ]]; then  # the stage and its probe
  remaining=$((remaining + $(left $runs/pretrain-tokens "${minutes[tokens]}") + minutes[probe]))
fi
remaining=$((remaining + minutes[probe]))
if [[ ${EVAL:-1} != 0 ]]; then
  for setting in ${settings//,/ }; do
    s=$seeds
    [[ $setting == full ]] && s=$full_seeds
    n=$(plan_minutes "$setting" "$tasks" "$s")
    [[ ${LM_ROW:-0} != 0 ]] && n=$((n * 2))
    remaining=$((remaining + n))
  done
  if [[ ${SELF_TRAIN:-0} != 0 && ,$settings, == *,few,* ]]; then
    remaining=$((remaining + $(plan_minutes self "$tasks" "$seeds")))
  fi
  for setting in ${settings//,/ }; do
    remaining=$((remaining + $(plan_minutes "classical-$setting" "$tasks" 1)))
  done
fi
if [[ -n ${LM_FROM:-} ]]; then
  echo "run: the language stage is $lm/final (LM_FROM)"
else
  eta "the language stage ($lm)" "$(left $lm "${minutes[lm]}")"
  stage $lm configs/pretrain-lm.yaml eval_data_dir="$data/dialoglue" \
    ${pretrain_options[@]+"${pretrain_options[@]}"} ${lm_options[@]+"${lm_options[@]}"}
fi
figures=($lm)
start=$lm/final
# SPACE-2's tree-structured contrastive stage (stage 1) runs only with STAGE1=1: after the
# language stage it lowers the frozen vectors' probe and leaves the fine-tuned score where it was,
# and its 16 minutes serve the language stage better (docs/results.md "Does SPACE-2's
# tree-structured stage help?").
if [[ ${STAGE1:-0} != 0 ]]; then
  eta "SPACE-2's stage 1 ($runs/pretrain-small)" "$(left $runs/pretrain-small "${minutes[stage1]}")"
  stage $runs/pretrain-small configs/pretrain-small.yaml model_name_or_path=$lm/final \
    eval_data_dir="$data/dialoglue" ${pretrain_options[@]+"${pretrain_options[@]}"}
  figures+=($runs/pretrain-small)
  start=$runs/pretrain-small/final
fi
eta "the intent stage ($runs/pretrain-intent)" "$(left $runs/pretrain-intent "${minutes[intent]}")"
stage $runs/pretrain-intent configs/pretrain-intent.yaml model_name_or_path="$start" \
  eval_data_dir="$data/dialoglue" ${pretrain_options[@]+"${pretrain_options[@]}"}
# The semi-supervised intent stage (docs/training.md "Pseudo-labelled intent stage"): the intent
# stage's probe labels the unlabelled training utterances of the three tasks (train.csv's texts;
# its labels are never read), and the intent stage runs again from the same start with the 30
# most confident per intent beside train_10.
eta "the pseudo-labelled intent stage ($runs/pretrain-intent-pseudo)" \
  "$(left $runs/pretrain-intent-pseudo "${minutes[pseudo]}")"
if [[ ! -f $runs/pretrain-intent-pseudo/final/model.safetensors ]]; then
  "$bin" eval pseudo-label --model $runs/pretrain-intent/final --out-dir "$pseudo" \
    --per-label 30 --data "$data/dialoglue"
fi
labelled=()
for task in banking clinc hwu; do labelled+=("$out/sts/$task.train_10.jsonl"); done
for task in banking clinc hwu; do labelled+=("$pseudo/$task.pseudo.jsonl"); done
stage $runs/pretrain-intent-pseudo configs/pretrain-intent.yaml \
  output_dir=$runs/pretrain-intent-pseudo model_name_or_path="$start" \
  num_train_epochs=6 eval_steps=91 "data.labelled=[$(IFS=,; echo "${labelled[*]}")]" \
  eval_data_dir="$data/dialoglue" ${pretrain_options[@]+"${pretrain_options[@]}"}
figures+=($runs/pretrain-intent $runs/pretrain-intent-pseudo)
model=$runs/pretrain-intent-pseudo/final
# The tagging tasks' encoder: the token stage's, continued from the language stage, or with
# TOKEN_STAGE=0 the intent stages' model (docs/results.md "A token-level tree term": dstc8 +1.3
# to +4.0 fine-tuned over the language stage alone on four language stages, +0.1 to +4.3 over
# the intent stages' encoder on three; restaurant8k and TOP level).
tagging_model=$model tagging_suffix=""
if [[ $token_stage != 0 ]]; then
  eta "the token stage ($runs/pretrain-tokens)" "$(left $runs/pretrain-tokens "${minutes[tokens]}")"
  stage $runs/pretrain-tokens configs/pretrain-small.yaml model_name_or_path=$lm/final \
    loss.token_contrastive_weight="$token_weight" eval_tasks="[$default_tasks]" \
    eval_data_dir="$data/dialoglue" ${pretrain_options[@]+"${pretrain_options[@]}"}
  figures+=($runs/pretrain-tokens)
  tagging_model=$runs/pretrain-tokens/final tagging_suffix=-tokens
fi
intent_list=$(IFS=,; echo "${intent_tasks[*]}") tagging_list=$(IFS=,; echo "${tagging_tasks[*]}")
eta "the probe on test" "${minutes[probe]}"
"$bin" eval probe --model "$model" --tasks "$tasks" --protocols dialoglue-few --split test \
  --data "$data/dialoglue" --out $runs/probe.json
if [[ $token_stage != 0 ]]; then
  eta "the token stage's probe on test" "${minutes[probe]}"
  "$bin" eval probe --model "$tagging_model" --tasks "$tagging_list" --protocols dialoglue-few \
    --split test --data "$data/dialoglue" --out $runs/probe-tokens.json
fi
if [[ ${EVAL:-1} != 0 ]]; then
  for setting in ${settings//,/ }; do
    s=$seeds
    [[ $setting == full ]] && s=$full_seeds
    eta "fine-tuning the main job's encoder, $setting, tasks $tasks, seeds $s" \
      "$(plan_minutes "$setting" "$tasks" "$s")"
    # The intent classifier's start, chosen on val per setting (docs/evaluation.md): few-shot
    # from the linear probe (docs/results.md "Does the intent stage help, and why?"), full data
    # at random (docs/results.md "Full data: the main job, the language stage alone and the
    # cap"); the tagging heads start at random. Every fine-tuned model is kept
    # (OUT/TASK/seed-N/model: `dialtree serve` answers /classify with an intent model and /parse
    # with a slot or TOP model), and OUT/submission.json is DialoGLUE's submission file.
    # With the token stage the tagging tasks read its encoder, into a folder of
    # their own (a results folder holds one model's runs).
    init=()
    [[ $setting == few ]] && init=(classifier_init=linear_probe)
    parts=("$model|$tasks|")
    [[ $token_stage != 0 ]] && parts=("$model|$intent_list|" "$tagging_model|$tagging_list|-tokens")
    for part in "${parts[@]}"; do
      IFS='|' read -r part_model part_tasks suffix <<<"$part"
      [[ -n $part_tasks ]] || continue
      "$bin" eval dialoglue --model "$part_model" --tasks "$part_tasks" --setting "$setting" \
        --seeds "$s" --config "configs/eval-$setting.yaml" --data-dir "$data/dialoglue" \
        --out "$runs/eval-$setting$suffix" --save-models ${init[@]+"${init[@]}"} \
        ${eval_options[@]+"${eval_options[@]}"}
      figures+=("$runs/eval-$setting$suffix")
    done
    if [[ ${LM_ROW:-0} != 0 ]]; then  # the scoreboard's "language stage alone" row
      eta "fine-tuning the language stage alone, $setting" \
        "$(plan_minutes "$setting" "$tasks" "$s")"
      # Its intent classifier starts at random: the recipe val chose for an MLM-only encoder,
      # whose probe is weak (docs/results.md "The DialoGLUE scoreboard": val 75.52 at random
      # against 72.40 from the linear probe, banking seed 1).
      "$bin" eval dialoglue --model $lm/final --tasks "$tasks" --setting "$setting" \
        --seeds "$s" --config "configs/eval-$setting.yaml" --data-dir "$data/dialoglue" \
        --out "$runs/eval-$setting-lm" ${eval_options[@]+"${eval_options[@]}"}
    fi
  done
  if [[ ${SELF_TRAIN:-0} != 0 && ,$settings, == *,few,* && ${#intent_tasks[@]} -gt 0 ]]; then
    itasks=$(IFS=,; echo "${intent_tasks[*]}")
    eta "self-training on $itasks" "$(plan_minutes self "$itasks" "$seeds")"
    # Self-training (docs/evaluation.md "Self-training (`--pseudo-labels DIR`)"): the first
    # seed's fine-tuned model of each intent task labels that task's unlabelled training
    # utterances (train.csv's texts; its labels are never read), and fine-tuning runs again on
    # train_10 plus the 30 most confident per intent, 25 epochs with patience 6 (docs/results.md
    # "Self-training and pseudo-labels").
    teachers=()
    for task in "${intent_tasks[@]}"; do
      teachers+=(--teacher "$task=$runs/eval-few/$task/seed-${seeds%%,*}/model")
    done
    "$bin" eval pseudo-label --tasks "$itasks" "${teachers[@]}" --out-dir "$pseudo_teacher" \
      --per-label 30 --data "$data/dialoglue"
    "$bin" eval dialoglue --model "$model" --tasks "$itasks" --setting few --seeds "$seeds" \
      --config configs/eval-few.yaml --data-dir "$data/dialoglue" --out $runs/eval-few-self \
      --save-models --pseudo-labels "$pseudo_teacher" classifier_init=linear_probe \
      num_train_epochs=25 early_stopping_patience=6 ${eval_options[@]+"${eval_options[@]}"}
    figures+=($runs/eval-few-self)
  fi
  # The classical baselines of the same tasks and settings (no pretraining; scikit-learn), then
  # the scoreboard ($runs/scoreboard.{md,json}) and its figure per setting.
  n=0
  for setting in ${settings//,/ }; do
    n=$((n + $(plan_minutes "classical-$setting" "$tasks" 1)))
  done
  eta "classical baselines" "$n"
  mkdir -p $runs/baselines
  for setting in ${settings//,/ }; do
    /usr/bin/python3 bench/reference/classical_baseline.py --data "$data/dialoglue" \
      --tasks "$tasks" --settings "$setting" --dialtree "$bin" \
      --json "$runs/baselines/classical-$setting.json" >/dev/null
  done
  # The main job's row: with the token stage its intent and tagging tasks come from two folders
  # (each family's tasks that its folder holds, from this run and the earlier runs of the same
  # encoders), joined into one DialoGLUE submission file per setting
  # ($runs/scoreboard-<setting>.submission.json).
  main_row=$runs/eval-{setting}
  if [[ $token_stage != 0 ]]; then
    main_row="$runs/eval-{setting}@?$intent_family+$runs/eval-{setting}-tokens@?$tagging_family"
  fi
  scripts/scoreboard.py --settings "$settings" --out $runs/scoreboard \
    --row "classical baseline=$runs/baselines/classical-{setting}.json" \
    --row "language stage alone=$runs/eval-{setting}-lm" --row "main job=$main_row" \
    --submission "main job"
  for setting in ${settings//,/ }; do  # the figure: the scoreboard's own rows
    "$bin" plot "$runs/scoreboard-$setting.rows.json" --out "$runs/figures/scoreboard-$setting" \
      --format png >/dev/null
  done
fi
"$bin" plot "${figures[@]}" --out $runs/figures
if [[ ${EVAL:-1} != 0 ]]; then
  first_seed=${seeds%%,*}
  serve_bf16=true  # as the models were fine-tuned: EVAL_OPTIONS="bf16=false" serves in fp32
  for option in ${eval_options[@]+"${eval_options[@]}"}; do
    [[ $option == bf16=false ]] && serve_bf16=false
  done
  for setting in ${settings//,/ }; do
    for task in ${tasks//,/ }; do
      folder=${task/#dstc8/dstc8_sgd}  # eval dialoglue's folder of a task
      route=/classify suffix=""
      [[ ,$tagging_family, == *,$task,* ]] && route=/parse suffix=$tagging_suffix
      saved=$runs/eval-$setting$suffix/$folder/seed-$first_seed/model
      [[ -d $saved ]] || continue
      echo "run: serve $task: $bin serve --model $saved --bf16 $serve_bf16   (answers $route)"
    done
  done
fi
