#!/usr/bin/env bash
# Set up (install what is missing, build), then run every test with ctest, then the guard build
# (scripts/guard.sh, docs/build.md "Guard build"; skipped with GUARD=0): the torch-free tests
# under ASan+UBSan and fuzz smoke runs, the threaded ones under ThreadSanitizer, then the whole
# LibTorch suite under ASan+UBSan (TORCH_ASAN=0 skips this last and longest stage).
#   usage: scripts/test.sh [extra ctest args]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
scripts/setup.sh
ctest --test-dir "${BUILD_DIR:-build}" --output-on-failure -j "$(nproc)" "$@"
if [[ ${GUARD:-1} != 0 ]]; then
  BUILD_DIR=${GUARD_BUILD_DIR:-build-guard} scripts/guard.sh
fi
