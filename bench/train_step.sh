#!/usr/bin/env bash
# One pre-training step, dialtree (bench_train_step) against its Python reference
# (bench/reference/train_step.py on Debian's python3-torch): the same model, fixed batches,
# objective, optimiser and thread count. For each mode (fp32, bf16) the programs alternate, C++
# then Python, ROUNDS times; each process reports the median of its timed steps, and the table
# shows the median [range] over the rounds, the ratio, the CPU time per step and the model FLOP
# utilisation against the GEMM peak each process measured itself. It also compares the step-0
# losses: with torch's own dropout both sides draw identical weights, batches and masks.
# usage: bench/train_step.sh
#   env: BUILD_DIR (build), ROUNDS (3), STEPS (20), WARMUP (3), SEQ_LEN (128), THREADS (2),
#        MODES ("fp32 bf16"), OUT (out/bench/train_step),
#        SPACE2 (1; 0 skips the SPACE-2 step's table), LANGUAGE (1; 0 skips the language-stage
#        table), LANG_BATCH (128), LANG_SEQ_LEN (16),
#        PATCHED (optional: another bench_train_step binary, e.g. built against a modified
#        encoder or by another compiler; it runs third in every round, with the same
#        MALLOC_CONF as the C++ side unless it sets its own, and gets its own table rows)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
build=${BUILD_DIR:-build}
rounds=${ROUNDS:-3}
if [[ -z ${MODES:-} ]] && ! grep -qwE 'avx512_bf16|amx_bf16' /proc/cpuinfo; then
  # Emulated bf16 matrix products run at a few GFLOP/s: nothing a user would run (the trainer
  # itself falls back to fp32 on such CPUs, common/cpu_features.h).
  echo "train_step: this CPU has no native bf16 (avx512_bf16 / amx_bf16): fp32 only" >&2
  MODES=fp32
fi
modes=${MODES:-fp32 bf16}
out=${OUT:-$root/out/bench/train_step}
py=/usr/bin/python3  # the system interpreter, which has python3-torch (docs/build.md P10)
args=(--steps "${STEPS:-20}" --warmup "${WARMUP:-3}" --seq-len "${SEQ_LEN:-128}"
  --threads "${THREADS:-2}")

if ! dpkg-query -W -f='${Status}' python3-torch 2>/dev/null | grep -q 'install ok installed'; then
  apt-get update -qq &&
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends python3-torch >/dev/null
fi
log=$(cmake --build "$build" --target bench_train_step 2>&1) || { echo "$log" >&2; exit 1; }
mkdir -p "$out"
rm -f "$out"/*.txt

# The C++ step runs with the allocator setting `dialtree train` runs with (cli/app.h
# training_malloc_conf: jemalloc keeps freed pages, docs/build.md P13), unless MALLOC_CONF is set.
cpp_malloc=${MALLOC_CONF:-dirty_decay_ms:-1,muzzy_decay_ms:-1}
declare -A cmd=([cpp]="env MALLOC_CONF=$cpp_malloc $build/bench/bench_train_step"
  [py]="$py bench/reference/train_step.py")
impls=(cpp py)
if [[ -n ${PATCHED:-} ]]; then
  cmd[patched]="env MALLOC_CONF=$cpp_malloc $PATCHED"
  impls+=(patched)
fi

# Value of RESULT key $3 in every file matching $1.$2.*.txt, one per line.
values() { cat "$out/$1.$2".*.txt | sed -nE "s/^RESULT .* $3=([^ ]+).*/\1/p"; }
median() {
  sort -g | awk '{v[NR] = $1} END {print NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'
}
# "median [min-max]" of numbers on stdin, with printf format $1.
summary() {
  sort -g | awk -v f="$1" '{v[NR] = $1} END {
    m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
    printf(f " [" f "-" f "]", m, v[1], v[NR])}'
}

# The SPACE-2 step against its Python reference (SPACE2=0 skips it).
if [[ ${SPACE2:-1} != 0 ]]; then
  echo "== train step: ${args[*]}, $rounds rounds per mode, ${impls[*]} alternating ($(nproc) CPUs," \
    "load $(cut -d' ' -f1-3 /proc/loadavg))"
  for mode in $modes; do
    flag=()
    [[ $mode == bf16 ]] && flag=(--bf16)
    for ((r = 1; r <= rounds; ++r)); do
      for impl in "${impls[@]}"; do
        # shellcheck disable=SC2086  # cmd holds a command line
        ${cmd[$impl]} "${args[@]}" "${flag[@]}" >"$out/$impl.$mode.$r.txt"
        printf '%-4s %-7s round %d: %s (load %s)\n' "$mode" "$impl" "$r" \
          "$(grep -E '^(examples/s|seconds/step)' "$out/$impl.$mode.$r.txt" | tr '\n' ' ')" \
          "$(cut -d' ' -f1 /proc/loadavg)"
      done
    done
  done

  echo
  echo "| mode | C++ ex/s | Python ex/s | ratio C++/Py | CPU s/step C++ / Py | MFU C++ / Py | GEMM peak GFLOP/s C++ / Py | step-0 loss C++ / Py |"
  echo "|---|---|---|---|---|---|---|---|"
  for mode in $modes; do
    for impl in "${impls[@]:0:1}" "${impls[@]:2}"; do
      label=$mode
      [[ $impl == patched ]] && label="$mode, patched C++"
      ca=$(values "$impl" "$mode" ex_s | median)
      pa=$(values py "$mode" ex_s | median)
      lc=$(values "$impl" "$mode" loss0 | median)
      lp=$(values py "$mode" loss0 | median)
      # Another dropout generator moves the step-0 loss slightly; more than 1% means another
      # objective.
      loss=$(awk -v a="$lc" -v b="$lp" 'BEGIN {d = a - b; if (d < 0) d = -d
        printf("%s / %s%s", a, b, d == 0 ? " (equal)" : d > 0.01 * b ? " (MISMATCH)" : " (within 1%)")}')
      printf '| %s | %s | %s | %.2fx | %.2f / %.2f | %.1f%% / %.1f%% | %.0f / %.0f | %s |\n' "$label" \
        "$(values "$impl" "$mode" ex_s | summary %.2f)" "$(values py "$mode" ex_s | summary %.2f)" \
        "$(awk -v a="$ca" -v b="$pa" 'BEGIN {print a / b}')" \
        "$(values "$impl" "$mode" cpu_s | median)" "$(values py "$mode" cpu_s | median)" \
        "$(values "$impl" "$mode" mfu | median | awk '{print 100 * $1}')" \
        "$(values py "$mode" mfu | median | awk '{print 100 * $1}')" \
        "$(values "$impl" "$mode" "peak_$mode" | median)" \
        "$(values py "$mode" "peak_$mode" | median)" "$loss"
    done
  done
  echo "(ex/s: 64 examples per step / the process's median step time, median [min-max] over the"
  echo " rounds; MFU: 3 x forward matrix-product FLOPs per step / median step time / the process's"
  echo " own best torch mm 1024^2 GFLOP/s in the mode's dtype; per-process output in $out)"
fi

# The language stage's step (configs/pretrain-lm.yaml: the unlabelled batch alone, no
# contrastive pass): MLM against replaced-token detection (--language rtd, a generator of a
# quarter of the depth) and against MLM with every dropout at 0 (mlm-dropout0, the candidate of
# docs/results.md "Dropout off in the language stage, and a higher learning rate"; the other two
# keep the stage's 0.1), alternating in each round, C++ only (the Python reference has no RTD).
# The batch is the stage's 128 utterances at a length near DialoGLUE's (LANG_SEQ_LEN tokens,
# no padding). GFLOP/step counts the generator and the encoder (bench_train_step.cpp,
# forward_flops_language).
if [[ ${LANGUAGE:-1} != 0 ]]; then
  largs=(--steps "${STEPS:-20}" --warmup "${WARMUP:-3}" --seq-len "${LANG_SEQ_LEN:-16}"
    --batch "${LANG_BATCH:-128}" --threads "${THREADS:-2}")
  echo
  variants="mlm rtd mlm-dropout0"
  echo "== language-stage step: ${largs[*]}, $rounds rounds per mode, $variants alternating"
  for mode in $modes; do
    flag=()
    [[ $mode == bf16 ]] && flag=(--bf16)
    for ((r = 1; r <= rounds; ++r)); do
      for objective in $variants; do
        vflag=(--language "${objective%-dropout0}")
        [[ $objective == *-dropout0 ]] && vflag+=(--dropout 0)
        env MALLOC_CONF="$cpp_malloc" "$build/bench/bench_train_step" "${largs[@]}" "${flag[@]}" \
          "${vflag[@]}" >"$out/lang-$objective.$mode.$r.txt"
      done
    done
  done
  echo
  echo "| mode | objective | ex/s | ratio to MLM | GFLOP/step | MFU | step-0 loss |"
  echo "|---|---|---|---|---|---|---|"
  for mode in $modes; do
    base=$(values lang-mlm "$mode" ex_s | median)
    for objective in $variants; do
      ex=$(values "lang-$objective" "$mode" ex_s | median)
      printf '| %s | %s | %s | %.2fx | %s | %.1f%% | %s |\n' "$mode" "$objective" \
        "$(values "lang-$objective" "$mode" ex_s | summary %.1f)" \
        "$(awk -v a="$ex" -v b="$base" 'BEGIN {print a / b}')" \
        "$(values "lang-$objective" "$mode" gflop_step | median)" \
        "$(values "lang-$objective" "$mode" mfu | median | awk '{print 100 * $1}')" \
        "$(values "lang-$objective" "$mode" loss0 | median)"
    done
  done
  echo "(ex/s: LANG_BATCH utterances per step / median step time, median [min-max] over the"
  echo " rounds; MFU: 3 x forward FLOPs of generator and encoder / step time / the process's"
  echo " own GEMM peak in the mode's dtype)"
fi
