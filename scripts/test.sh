#!/usr/bin/env bash
# Set up (install what is missing, build), then run every test with ctest.
#   usage: scripts/test.sh [extra ctest args]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
scripts/setup.sh
ctest --test-dir "${BUILD_DIR:-build}" --output-on-failure -j "$(nproc)" "$@"
