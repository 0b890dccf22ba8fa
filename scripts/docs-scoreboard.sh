#!/usr/bin/env bash
# The scoreboard of docs/results.md ("The DialoGLUE scoreboard") from the run folders its
# commands wrote: scripts/scoreboard.py with one row per model, each row pooling the folders
# that hold its runs (runs made in parts: seeds 1, then 2-3, then 4-5), then the figures.
# Writes docs/figures/scoreboard/{scoreboard,scoreboard-15,runs,mask-rate,runs-30,full-data,
# scoreboard-today,xeon-tagging,intent-machines,xeon-full}.{md,json}, *-<setting>.rows.json and
# the figures few/, full/ and today/ (dialtree plot), and prints the tables.
#   usage: scripts/docs-scoreboard.sh
#   env: BUILD_DIR (default build), PARTS (today: the scoreboard docs/results.md opens with, as
#        scripts/run.sh runs it today, from the Intel Xeon runs and the AMD runs' intent columns,
#        plus the Xeon's tables of the tagging and intent columns and of full data; few and full:
#        the earlier tables from the AMD EPYC runs' folders, few-shot and full data; a machine
#        holds one part's folders, and runs/p2 is a different run on each machine)
# A folder that is missing stops it with its name (scoreboard.py): the rows below are the
# runs docs/results.md reports, nothing else.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
bin=${BUILD_DIR:-build}/cli/dialtree
out=docs/figures/scoreboard
join() { local IFS=+; echo "$*"; }
# A few-shot scoreboard's four rows into $out/NAME.{md,json} and its figure into $out/FIGURE.
board() {  # name figure no-pretraining language-stage-alone main-job (row sources)
  scripts/scoreboard.py --settings few --out "$out/$1" \
    --row "classical baseline=runs/baselines/classical-{setting}.json" \
    --row "no pretraining=$3" --row "language stage alone=$4" --row "main job=$5"
  "$bin" plot "$out/$1-few.rows.json" --out "$out/$2" --format png >/dev/null
}
parts=${PARTS:-today}
for part in ${parts//,/ }; do
  [[ $part == few || $part == full || $part == today ]] ||
    { echo "docs-scoreboard: PARTS: unknown part '$part' (few, full, today)" >&2; exit 2; }
done

if [[ ,$parts, == *,few,* ]]; then

# The second pretraining run of the main job's recipe (run B: runs/pretrain-lm, then
# runs/pretrain-intent-pseudo), fine-tuned on every task.
# The language stage alone: the intent tasks with the classifier started at random (the start
# val chose for it), the slot and TOP tasks in the folders of each seed group.
lm_few=$(join runs/eval-few-lm-random runs/tag-few-lm/{restaurant8k,dstc8,top} \
  runs/tag-few-lm-s23/{restaurant8k,dstc8} runs/tag-few-lm-s45 runs/tag-few-lm-top-s2)
main_few=$(join runs/eval-few-main2 runs/tag-few-main/{restaurant8k,dstc8,top} \
  runs/tag-few-main-s23/{restaurant8k,dstc8} runs/tag-few-main-s45 runs/tag-few-main-top-s2)
# The language stage alone of run B fine-tuned from the linear probe (scripts/language-stage.sh's
# folders, one per task and seed).
lang=runs/lang/mlm/eval-few-linear_probe
lm_probe_start=$(join $lang/banking-s{1,2,3} $lang/hwu-s{1,2,3} $lang/clinc-s1)
scratch_few=$(join runs/scratch-few/tagging runs/scratch-few/top runs/scratch-few/intent \
  runs/scratch-few/clinc)

scripts/scoreboard.py --settings few,full --out "$out/scoreboard-15" \
  --row "classical baseline=runs/baselines/classical-{setting}.json" \
  --row "no pretraining=$scratch_few" \
  --row "language stage alone, 15 % (run B)=$lm_few" \
  --row "main job, 15 % (run B)=$main_few+$out/run-b-main-full.json"
# Two pretraining runs of the intent rows: run A (the first, whose per-seed results
# docs/figures/scoreboard/run-a-*.json transcribe from docs/results.md) and run B, apart and
# pooled.
scripts/scoreboard.py --settings few --out "$out/runs" \
  --row "main job, run A=$out/run-a-main-few.json" \
  --row "main job, run B=runs/eval-few-main2" \
  --row "main job, runs A and B=$out/run-a-main-few.json+runs/eval-few-main2" \
  --row "language stage alone, run A=$out/run-a-lm-few.json" \
  --row "language stage alone, run B=runs/eval-few-lm-random" \
  --row "language stage alone, runs A and B=$out/run-a-lm-few.json+runs/eval-few-lm-random" \
  --row "language stage alone from the linear probe, run A=$out/run-a-lm-probe-start-few.json" \
  --row "language stage alone from the linear probe, run B=$lm_probe_start"
# The language stage masking 30 % of the sub-words (runs/pretrain-mlm30) against run B's 15 %,
# alone and under the main job's intent stages (RUNS=runs/mlm30 scripts/run.sh, its language
# stage copied from runs/pretrain-mlm30): docs/results.md "Which language stage teaches the
# encoder more per CPU-minute?".
mlm30=runs/lang/mlm30/eval-few-random
scripts/scoreboard.py --settings few --out "$out/mask-rate" \
  --row "language stage alone, 15 %=runs/eval-few-lm-random" \
  --row "language stage alone, 30 %=$(join $mlm30/{banking,clinc,hwu}-s{1,2,3})" \
  --row "main job, 15 % (run B)=runs/eval-few-main2" \
  --row "main job, 30 %=runs/mlm30/eval-few"
# A second and a third pretraining run of the 30 % recipe (RUNS=runs/pN PRETRAIN_SEED=N LM_ROW=1
# scripts/run.sh), apart and with the first (runs/pretrain-mlm30 and runs/mlm30), and the intent
# stages alone seeded 2 on the first run's language stage (RUNS=runs/mlm30-i2
# LM_FROM=runs/mlm30/pretrain-lm PRETRAIN_SEED=2): docs/results.md "Three pretraining runs of the
# 30 % recipe". The rows pooled over all three runs are the scoreboard's (below).
mlm30_lm=$(join $mlm30/{banking,clinc,hwu}-s{1,2,3} $mlm30/{restaurant8k,dstc8}-s1)
# Each run's folders; TOP of runs 1 and 2 was fine-tuned after them (eval-few-top,
# eval-few-lm-top: the commands of docs/results.md "How the scoreboard was made").
lm1=$(join "$mlm30_lm" runs/mlm30/eval-few-lm-top) main1=$(join runs/mlm30/eval-few{,-top})
lm2=$(join runs/p2/eval-few-lm{,-top}) main2=$(join runs/p2/eval-few{,-top})
lm3=runs/p3/eval-few-lm main3=runs/p3/eval-few
scripts/scoreboard.py --settings few --out "$out/runs-30" \
  --row "language stage alone, 30 %, run 1=$lm1" \
  --row "language stage alone, 30 %, run 2=$lm2" \
  --row "language stage alone, 30 %, run 3=$lm3" \
  --row "language stage alone, 30 %, runs 1 and 2=$lm1+$lm2" \
  --row "main job, 30 %, run 1=$main1" \
  --row "main job, 30 %, run 2=$main2" \
  --row "main job, 30 %, run 3=$main3" \
  --row "main job, 30 %, runs 1 and 2=$main1+$main2" \
  --row "main job, 30 %, run 1's language stage, intent stages seeded 2=runs/mlm30-i2/eval-few"
# The scoreboard docs/results.md opens with: the main job's recipe (the language stage masking
# 30 %) pretrained three times (runs/mlm30 with runs/pretrain-mlm30, runs/p2, runs/p3: RUNS=runs/pN
# PRETRAIN_SEED=N LM_ROW=1 scripts/run.sh), pooled over the three encoders and their fine-tuning
# seeds.
board scoreboard few "$scratch_few" "$lm1+$lm2+$lm3" "$main1+$main2+$main3"
fi

if [[ ,$parts, == *,full,* ]]; then
# Full data (train), seed 1: run 1's encoders (pretraining seed 11; runs/pretrain-lm and
# runs/pretrain-intent-pseudo as `scripts/run.sh` trains them), fine-tuned by `TASKS=dstc8,hwu,
# restaurant8k,banking SETTINGS=full SEEDS=1 scripts/run.sh` and the `dialtree eval dialoglue
# --setting full` commands of docs/results.md "How the scoreboard was made" (runs/eval-full,
# runs/eval-full-random, runs/eval-full-lm, runs/scratch-full); run B's 15 % encoder as
# transcribed. The main job's intent tasks start at random on full data (val's choice, which
# run.sh makes since): they come from runs/eval-full-random, its tagging tasks (random heads
# either way) from runs/eval-full.
scripts/scoreboard.py --settings full --out "$out/full-data" \
  --row "classical baseline=runs/baselines/classical-{setting}.json" \
  --row "no pretraining=runs/scratch-full" \
  --row "language stage alone=runs/eval-full-lm" \
  --row "main job=runs/eval-full-random@banking,hwu,clinc+runs/eval-full@restaurant8k,dstc8,top" \
  --row "main job, 15 % (run B)=$out/run-b-main-full.json"
"$bin" plot "$out/full-data-full.rows.json" --out "$out/full" --format png >/dev/null
fi

if [[ ,$parts, == *,today,* ]]; then
# The scoreboard docs/results.md opens with: the main job as scripts/run.sh runs it since
# 2026-12-07, the intent tasks from the intent stages' encoder, the tagging tasks from the token
# stage. The intent columns are runs 1-3 above (2-core AMD EPYC; that recipe has not changed),
# transcribed per encoder from scoreboard-few.rows.json because their folders are not on the
# machine that made the rest (amd-run*-intent-few.json). The tagging columns are three pretraining
# runs of today's recipe on a 2-core Intel Xeon (RUNS=runs/p1-xeon PRETRAIN_SEED=11, RUNS=runs/p2
# PRETRAIN_SEED=2 and RUNS=runs/p3-xeon PRETRAIN_SEED=3, each `LM_ROW=1 TASKS=restaurant8k,dstc8
# SEEDS=1,2,3,4,5 scripts/run.sh` (runs/p2 with SEEDS=1,2,3, seeds 4-5 added after), TOP and the
# intent stages' rows by the commands of docs/results.md "A token-level tree term"; on that
# machine runs/p2 is the Xeon's run, not the AMD run 2 of the part above). The
# classical baseline is rerun on all six tasks (runs/baselines); no pretraining is the AMD
# folders' row (amd-no-pretraining-few.json) with its clinc and dstc8 cells from the Xeon
# (runs/scratch-few/clinc; runs/scratch-few/dstc8-e120, dstc8 at its 120 epochs).
xeon=(runs/p1-xeon runs/p2 runs/p3-xeon)
# Only the tagging tasks of each folder (@?: those it holds), so that an intent task fine-tuned
# there later is never pooled with the transcribed intent columns. These are the 60-epoch runs of
# every tagging task (the table of the tagging columns below compares three encoders at 60).
tagging=@?restaurant8k,dstc8,top
tag_lm=$(join "${xeon[@]/%//eval-few-lm$tagging}")
tag_intent=$(join "${xeon[@]/%//eval-few$tagging}")
tag_tokens=$(join "${xeon[@]/%//eval-few-tokens$tagging}")
# The scoreboard's tagging columns as configs/eval-few.yaml fine-tunes them since 2026-12-07:
# dstc8 for 120 epochs (its task section), from the cap-120 folders of the same encoders and seeds
# (docs/results.md "Where fine-tuning erases the token stage's lead").
board_lm=$(join "${xeon[@]/%//eval-few-lm@?restaurant8k,top}" "${xeon[@]/%//eval-few-lm-e120@dstc8}")
board_tokens=$(join "${xeon[@]/%//eval-few-tokens@?restaurant8k,top}" \
  "${xeon[@]/%//eval-few-tokens-e120@dstc8}")
# The intent tasks on the same three Xeon runs (fine-tuning seeds 1-3, 2026-12-07: the
# commands of docs/results.md "The DialoGLUE scoreboard", 11-19 minutes an encoder and seed),
# pooled with the AMD runs' transcriptions: six encoders per intent cell.
intents=@?banking,clinc,hwu
xeon_lm=$(join "${xeon[@]/%//eval-few-lm$intents}")
xeon_main=$(join "${xeon[@]/%//eval-few$intents}")
board scoreboard-today today \
  "$out/amd-no-pretraining-few.json@banking,hwu,restaurant8k,top+runs/scratch-few/clinc+runs/scratch-few/dstc8-e120" \
  "$(join "$out"/amd-run{1,2,3}-lm-intent-few.json)+$xeon_lm+$board_lm" \
  "$(join "$out"/amd-run{1,2,3}-main-intent-few.json)+$xeon_main+$board_tokens"
# The intent columns on each machine alone.
scripts/scoreboard.py --settings few --out "$out/intent-machines" \
  --row "language stage alone, AMD EPYC runs 1-3=$(join "$out"/amd-run{1,2,3}-lm-intent-few.json)" \
  --row "main job, AMD EPYC runs 1-3=$(join "$out"/amd-run{1,2,3}-main-intent-few.json)" \
  --row "language stage alone, Xeon runs=$xeon_lm" \
  --row "main job, Xeon runs=$xeon_main"
# The tagging columns alone, with the intent stages' encoder (the tagging encoder until
# 2026-12-07) on the same three language stages.
scripts/scoreboard.py --settings few --out "$out/xeon-tagging" \
  --row "language stage alone=$tag_lm" \
  --row "intent stages, the tagging encoder until 2026-12-07=$tag_intent" \
  --row "token stage, the tagging encoder since=$tag_tokens"
# Full data on the Xeon's run 2 (pretraining seed 2): the tagging tasks from each of its three
# encoders (restaurant8k and dstc8 seeds 1-3, TOP seed 1; the commands of docs/results.md "How the
# scoreboard was made").
scripts/scoreboard.py --settings full --out "$out/xeon-full" \
  --row "language stage alone=runs/p2/eval-full-lm" \
  --row "intent stages, the tagging encoder until 2026-12-07=runs/p2/eval-full" \
  --row "token stage, the tagging encoder since=runs/p2/eval-full-tokens"
fi
