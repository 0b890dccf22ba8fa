#!/usr/bin/env bash
# Install what is missing (Debian 12 packages), rebuild SentencePiece privately (docs/build.md P3),
# then configure and build dialtree into build/. Idempotent and quiet when nothing is missing.
#   usage: scripts/setup.sh            env: BUILD_DIR (default build), JOBS (default nproc),
#                                           BUILD_TARGETS (default: every target, tests and
#                                           benchmarks included; scripts/run.sh builds only the
#                                           two executables, docs/build.md P12)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
build=${BUILD_DIR:-build}
jobs=${JOBS:-$(nproc)}
read -ra targets <<<"${BUILD_TARGETS:-all}"

packages=(
  g++ cmake ninja-build ccache pkg-config dpkg-dev protobuf-compiler libprotobuf-dev
  libtorch-dev libopenblas0-openmp nlohmann-json3-dev libcli11-dev libeigen3-dev libyaml-cpp-dev
  libcpp-httplib-dev libboost-dev libgtest-dev libgmock-dev libspdlog-dev libfmt-dev libutf8proc-dev libcsv-dev
  libsimdjson-dev libgloo-dev libjemalloc-dev python3-sklearn gnuplot-nox clang libclang-rt-14-dev
  llvm lld prometheus
)
# libgloo-dev: the headers ProcessGroupGloo.hpp includes (data-parallel training, docs/build.md P9);
# the Gloo symbols themselves are in libtorch_cpu.so. libjemalloc-dev: the dialtree executable's
# malloc (flat server RSS; cmake/Dependencies.cmake).
# libboost-dev: Boost.Beast and Boost.Asio, header-only, the server's HTTP layer (serve/http.h);
# libcpp-httplib-dev is only the HTTP client of the tests and the load benchmark.
# python3-sklearn: the TF-IDF baseline and probe references in bench/reference (docs/results.md).
# gnuplot-nox: the program `dialtree plot` draws its PNG and SVG figures with (docs/plotting.md).
# clang, libclang-rt-14-dev, llvm: the guard build of scripts/guard.sh (docs/build.md "Guard
# build"): clang 14 with its sanitizer and libFuzzer runtimes (libclang_rt.asan/ubsan/fuzzer),
# and llvm-symbolizer for readable sanitizer stacks. lld: the linker of every build (docs/build.md
# P12: 10x faster links than GNU ld).
# prometheus: its promtool lints the server's /metrics text in a test (docs/serving.md
# "Metrics"); the server itself is not used.
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if ((${#missing[@]})); then
  [[ $(id -u) == 0 ]] || { echo "setup: run as root to install: ${missing[*]}" >&2; exit 1; }
  echo "setup: installing ${#missing[@]} Debian packages: ${missing[*]}" >&2
  log=$(mktemp)
  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
      --no-install-recommends "${missing[@]}"; } >"$log" 2>&1 || { cat "$log" >&2; exit 1; }
  rm -f "$log"
fi
# BLAS (docs/build.md P1): the OpenMP OpenBLAS must provide libblas.so.3, never the pthread one
# (its threads fight LibTorch's OpenMP pool) nor reference BLAS (55x slower). LibTorch also
# links libopenblas.so.0 by name, and python3-sklearn (through numpy/scipy) installs the pthread
# OpenBLAS, whose alternative has the higher priority: without the third entry dialtree loads
# the pthread library, whose threads start before main() and so cannot block SIGTERM (the
# server's drain then never runs).
for lib in libblas.so.3 liblapack.so.3 libopenblas.so.0; do
  alt=$lib-x86_64-linux-gnu
  want=/usr/lib/x86_64-linux-gnu/openblas-openmp/$lib
  if [[ -e $want && $(readlink -f /usr/lib/x86_64-linux-gnu/$lib) != "$(readlink -f "$want")" ]]; then
    update-alternatives --quiet --set "$alt" "$want"
  fi
done

scripts/build-sentencepiece.sh "$root/.deps/sentencepiece"

# The compiler (docs/build.md P14): clang 14, installed above for the guard build, compiles the
# tree in less time than g++ 12 and can share one precompiled LibTorch header across targets.
# A CXX of the user's wins.
compiler=()
if [[ -z ${CXX:-} ]] && command -v clang++ >/dev/null && command -v clang >/dev/null; then
  compiler=(-DCMAKE_CXX_COMPILER=clang++ -DCMAKE_C_COMPILER=clang)
fi
if [[ ! -f $build/build.ninja ]]; then
  log=$(mktemp)
  cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release "${compiler[@]}" >"$log" 2>&1 ||
    { cat "$log" >&2; exit 1; }
  rm -f "$log"
fi
# ninja prints one status line per step; keep the terminal quiet unless something fails.
out=$(cmake --build "$build" -j "$jobs" --target "${targets[@]}" 2>&1) ||
  { echo "$out" >&2; exit 1; }
