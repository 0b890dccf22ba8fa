#!/usr/bin/env bash
# Start-up time of whole dialtree processes (docs/performance.md, "Two executables"): the light
# `dialtree` runs torch-free commands itself; `dialtree-torch` with the kernel choice switched off
# is what every command cost before the split (LibTorch and its ~300 shared libraries load
# first); started directly it also chooses the BLAS kernels and re-executes once. Timed with hyperfine
# (-N: no shell in between), side by side in one run, as ratios.
# usage: bench/startup.sh     env: BUILD_DIR (build), RUNS (30), OUT (out/bench/startup)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
build=${BUILD_DIR:-build}
runs=${RUNS:-30}
out=${OUT:-$root/out/bench/startup}
if ! command -v hyperfine >/dev/null; then
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq hyperfine >/dev/null
fi
log=$(cmake --build "$build" --target dialtree 2>&1) || { echo "$log" >&2; exit 1; }
mkdir -p "$out"
light=$build/cli/dialtree
torch=$build/cli/dialtree-torch
echo "== start-up, $runs runs each ($(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2-)," \
  "load $(cut -d' ' -f1-3 /proc/loadavg))"
hyperfine -N --warmup 3 --runs "$runs" --export-markdown "$out/startup.md" \
  -n "dialtree version" "$light version" \
  -n "dialtree print-config" "$light print-config configs/pretrain-small.yaml" \
  -n "dialtree version --verbose (kernel choice, exec, LibTorch)" "$light version --verbose" \
  -n "dialtree-torch version (LibTorch, no kernel choice: every command before the split)" \
  "env DIALTREE_BLAS_KERNELS=none $torch version" \
  -n "dialtree-torch version started directly (LibTorch, choice, one re-exec)" "$torch version"
cat "$out/startup.md"
