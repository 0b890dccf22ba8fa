#!/usr/bin/env bash
# The guard build (docs/build.md "Guard build"): the torch-free libraries, their test suites and
# the libFuzzer targets, compiled with clang under AddressSanitizer + UndefinedBehaviorSanitizer,
# without LibTorch. Configures and builds GUARD_BUILD_DIR, then runs its ctest: the unit tests, and
# each fuzz target for FUZZ_SECONDS over its seed corpus (tests/fuzz/corpus/). Then builds the
# threaded ones (HTTP layer, batcher, the data-parallel hang watchdog) in TSAN_BUILD_DIR under
# ThreadSanitizer and runs them, and
# last the whole LibTorch suite in TORCH_ASAN_BUILD_DIR under ASan+UBSan.
# Prints what failed.
#   usage: scripts/guard.sh [extra ctest args]
#   env: GUARD_BUILD_DIR (default build-guard; its own name, so that the main build's BUILD_DIR
#        is never reconfigured as a sanitizer build), TSAN_BUILD_DIR (default build-tsan),
#        TORCH_ASAN (1; 0 skips the LibTorch suite under ASan+UBSan, the last and longest
#        stage), TORCH_ASAN_BUILD_DIR (default build-asan),
#        JOBS (default nproc), FUZZ_SECONDS (default 15),
#        DIALTREE_SPM_PREFIX (default .deps/sentencepiece, made by scripts/setup.sh)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
build=${GUARD_BUILD_DIR:-build-guard}
jobs=${JOBS:-$(nproc)}
fuzz_seconds=${FUZZ_SECONDS:-15}
spm=${DIALTREE_SPM_PREFIX:-$root/.deps/sentencepiece}

start=$SECONDS
log=$(mktemp)
trap 'rm -f "$log"' EXIT
# Configures DIR with clang at -O1 and line tables only (the sanitizers' usual level: fast
# tests, stacks with file:line, the least compile time) plus the given CMake arguments, then
# builds it, or only the targets after "--". Configured on every run, so a changed FUZZ_SECONDS
# or SPM prefix takes effect (cheap when nothing changed). Prints the errors and exits on
# failure.
clang_build() {  # dir [cmake args...] [-- targets...]
  local dir=$1 args=() targets=()
  shift
  while (($#)) && [[ $1 != -- ]]; do args+=("$1"); shift; done
  (($#)) && shift && targets=(--target "$@")
  if ! { cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
           -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
           "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -gline-tables-only" \
           "-DCMAKE_C_FLAGS_RELWITHDEBINFO=-O1 -gline-tables-only" \
           -DDIALTREE_BUILD_BENCH=OFF "-DDIALTREE_SPM_PREFIX=$spm" "${args[@]}" &&
         cmake --build "$dir" -j "$jobs" "${targets[@]}"; } >"$log" 2>&1; then
    grep -E -B2 -A12 'error:|FAILED:|Error' "$log" | head -200 >&2 || cat "$log" >&2
    echo "guard: FAILED to configure or build $dir (errors above; full log: cmake --build $dir)" >&2
    exit 1
  fi
}
clang_build "$build" -DDIALTREE_TORCH=OFF -DDIALTREE_SANITIZE=address,undefined \
  -DDIALTREE_FUZZ=ON "-DDIALTREE_FUZZ_SECONDS=$fuzz_seconds"
echo "guard: built $build in $((SECONDS - start)) s" >&2

# Sanitizer reports abort the test (UBSan: -fno-sanitize-recover; ASan: on its first report);
# leaks are reported too. Symbolized stacks need llvm-symbolizer (package llvm).
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:strict_string_checks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
start=$SECONDS
status=0
ctest --test-dir "$build" --output-on-failure -j "$jobs" "$@" >"$log" 2>&1 || status=$?
echo "guard: ctest ran in $((SECONDS - start)) s" >&2
if ((status)); then
  # The failed tests' output (ctest --output-on-failure), without the lines of passing tests.
  grep -v -E '^ +Start |\.\.\. +Passed +' "$log" >&2
  echo >&2
  echo "guard: FAILED tests (unit tests under ASan+UBSan; fuzz_*_smoke = fuzz targets):" >&2
  sed -n '/The following tests FAILED/,$p' "$log" >&2
  if compgen -G "$build/tests/fuzz/fuzz-artifacts/*/*" >/dev/null; then
    echo "guard: fuzz crash inputs (reproduce: $build/tests/fuzz/fuzz_<name> <file>):" >&2
    ls -1 "$build"/tests/fuzz/fuzz-artifacts/*/* >&2
  fi
  exit "$status"
fi
tail -n 3 "$log" >&2

# ThreadSanitizer (cannot share a build with ASan): the threaded torch-free code, i.e. the
# server's HTTP layer (event loop + worker pool, tests/http), the batcher and metrics
# (tests/serve/batcher_metrics_test.cpp) and the data-parallel hang watchdog beside the ranks'
# main threads (tests/trainer/watchdog_test.cpp; c10d and Gloo themselves are not instrumented,
# so the process group's collectives stay out of TSan). Only those three test executables are
# built.
tsan=${TSAN_BUILD_DIR:-build-tsan}
start=$SECONDS
clang_build "$tsan" -DDIALTREE_TORCH=OFF -DDIALTREE_SANITIZE=thread -- test_http \
  test_serve_batcher test_trainer_watchdog
export TSAN_OPTIONS=${TSAN_OPTIONS:-halt_on_error=1:second_deadlock_stack=1}
# Runs the ctest of DIR with the given arguments; on failure prints the failed tests' output
# and exits; else the summary.
sanitized_ctest() {  # dir what [ctest args...]
  local dir=$1 what=$2
  shift 2
  if ! ctest --test-dir "$dir" --output-on-failure -j "$jobs" "$@" >"$log" 2>&1; then
    grep -v -E '^ +Start |\.\.\. +Passed +' "$log" >&2
    echo "guard: FAILED tests under $what ($dir)" >&2
    exit 1
  fi
  echo "guard: $what: tests in $((SECONDS - start)) s" >&2
  tail -n 3 "$log" >&2
}
sanitized_ctest "$tsan" ThreadSanitizer -L '^(http|serve_batcher|trainer_watchdog)$'

# The whole LibTorch suite under ASan+UBSan (every ctest of the main build, the CLI and server
# executables they start included), unless TORCH_ASAN=0. LibTorch itself is not instrumented;
# our code and its calls into LibTorch are. Timing-bound tests (health checks, timeouts) run
# 2-3x slower here and may miss a deadline on a loaded machine, so a failed test is run once
# more; a sanitizer report fails both runs.
if [[ ${TORCH_ASAN:-1} != 0 ]]; then
  asan=${TORCH_ASAN_BUILD_DIR:-build-asan}
  start=$SECONDS
  clang_build "$asan" -DDIALTREE_SANITIZE=address,undefined
  echo "guard: LibTorch build under ASan+UBSan in $((SECONDS - start)) s" >&2
  start=$SECONDS
  sanitized_ctest "$asan" "ASan+UBSan (LibTorch suite)" --repeat until-pass:2
fi
echo "guard: all passed" >&2
