#!/usr/bin/env bash
# Set up (install what is missing, build), then run every test with ctest: the README's test
# command, minutes on 2 cores. The guard builds (sanitizers, fuzzing, the LibTorch suite under
# ASan+UBSan; docs/build.md "Guard build") are one command away, scripts/guard.sh, and CI runs
# them after this (.ci/run); GUARD=1 runs them here too.
#   usage: scripts/test.sh [extra ctest args]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
scripts/setup.sh
ctest --test-dir "${BUILD_DIR:-build}" --output-on-failure -j "$(nproc)" "$@"
if [[ ${GUARD:-0} != 0 ]]; then
  scripts/guard.sh
fi
