#!/usr/bin/env bash
# The prepared GPU check (docs/gpu.md "The prepared GPU check"). For a machine with one NVIDIA GPU,
# CUDA and a PyTorch 2.x installation but none of Debian's packages and no network. Needs
# .deps/gpu/ from scripts/gpu-deps.sh (run beforehand on Debian 12) beside the sources. Builds
# dialtree against PyTorch's LibTorch, then prints the CUDA tests, embed on cuda vs cpu,
# pretraining throughput and MFU (small and BERT-base shapes), and a 50-step run on cuda resumed
# on the CPU. Full output also in $OUT/gpu-check.log when OUT is set.
#
#   bash scripts/gpu-check.sh            # everything (about 6-8 minutes on 16 cores)
#   GPU_CHECK_BUILD_ONLY=1 bash scripts/gpu-check.sh      # stop after the build
#   GPU_CHECK_CONFIGURE_ONLY=1 ...                        # stop after cmake's configure step
#   GPU_CHECK_TORCH_PREFIX=/opt/libtorch ...              # a LibTorch other than PyTorch's
#   GPU_CHECK_BUILD_DIR=build GPU_CHECK_DEVICE=cpu ...    # a dry run of the steps after the
#                                                         # build, on an existing build, on the CPU
#   GPU_CHECK_BENCH_ARGS="--batch 4 --steps 1" ...        # bench_train_step's size
set -uo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
cd "$here" || exit 1
if [[ -n ${OUT:-} ]]; then
  mkdir -p "$OUT"
  exec > >(tee "$OUT/gpu-check.log") 2>&1
fi
section() { printf '\n== %s (%s)\n' "$*" "$(date +%T)"; }
die() {
  echo "gpu-check: $*"
  exit 1
}
deps=$here/.deps/gpu
root=$deps/root   # the unpacked Debian packages (root/usr/...)
build=${GPU_CHECK_BUILD_DIR:-$here/build-gpu}
dev=${GPU_CHECK_DEVICE:-cuda}
bench_args=${GPU_CHECK_BENCH_ARGS:---batch 64 --seq-len 128 --steps 20 --warmup 5}
jobs=$(nproc)

section "environment"
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,driver_version,memory.total \
  --format=csv,noheader || echo "nvidia-smi: not found"
[[ -d $deps/debs ]] || die "no $deps/debs: run scripts/gpu-deps.sh on Debian 12 first and carry .deps/gpu"
torch_prefix=${GPU_CHECK_TORCH_PREFIX:-}
if [[ -z $torch_prefix ]]; then
  python3 - 2>/dev/null <<'EOF' || die "python3 with torch is needed (or set GPU_CHECK_TORCH_PREFIX)"
import torch
print(f"pytorch {torch.__version__}, cuda {torch.version.cuda}, "
      f"gpus visible {torch.cuda.device_count()}, cxx11 abi {torch._C._GLIBCXX_USE_CXX11_ABI}")
print(f"cmake prefix {torch.utils.cmake_prefix_path}")
EOF
  torch_prefix=$(python3 -c 'import torch; print(torch.utils.cmake_prefix_path)')
fi
echo "cpus $jobs; $(c++ --version 2>/dev/null | head -1 || echo 'no c++ compiler')"

section "dependencies: unpacking $(ls "$deps/debs" | wc -l) Debian packages into $root"
if [[ ! -f $root/.unpacked ]]; then
  rm -rf "$root" && mkdir -p "$root"
  # A .deb is an ar archive holding data.tar.*; Python reads both without dpkg.
  python3 - "$deps/debs" "$root" <<'EOF' || die "unpacking failed"
import io, os, sys, tarfile
src, dest = sys.argv[1], sys.argv[2]
for name in sorted(os.listdir(src)):
    blob = open(os.path.join(src, name), "rb").read()
    assert blob[:8] == b"!<arch>\n", name
    pos = 8
    while pos < len(blob):
        header = blob[pos:pos + 60]
        member = header[:16].decode().strip().rstrip("/")
        size = int(header[48:58].decode().strip())
        body = blob[pos + 60:pos + 60 + size]
        pos += 60 + size + (size & 1)
        if member.startswith("data.tar"):
            if member.endswith(".zst"):
                sys.exit(f"{name}: zstd data needs dpkg-deb")
            with tarfile.open(fileobj=io.BytesIO(body)) as tar:
                tar.extractall(dest)
EOF
  touch "$root/.unpacked"
fi
arch=x86_64-linux-gnu
libdir=$root/usr/lib/$arch
export LD_LIBRARY_PATH=$libdir:$deps/sentencepiece/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export PKG_CONFIG_PATH=$libdir/pkgconfig:$root/usr/share/pkgconfig
export PKG_CONFIG_SYSROOT_DIR=$root
cmake_bin=$(command -v cmake || true)
if [[ -z $cmake_bin ]] || ! "$cmake_bin" --version | awk 'NR==1{split($3,v,"."); exit !(v[1]>3 || (v[1]==3 && v[2]>=18))}'; then
  cmake_bin=$root/usr/bin/cmake
  export CMAKE_ROOT=$root/usr/share/cmake-3.25
fi
ninja_bin=$(command -v ninja || echo "$root/usr/bin/ninja")
echo "cmake: $cmake_bin ($("$cmake_bin" --version | head -1)); ninja: $ninja_bin"
# A CUDA LibTorch's CMake files look for the CUDA toolkit; help them find nvcc where pip puts it.
if ! command -v nvcc >/dev/null; then
  for d in /usr/local/cuda "$(python3 -c 'import nvidia, os; print(os.path.dirname(nvidia.__path__[0]))' 2>/dev/null)/nvidia/cuda_nvcc"; do
    [[ -x $d/bin/nvcc ]] && export PATH=$d/bin:$PATH CUDA_HOME=$d && break
  done
fi
echo "nvcc: $(command -v nvcc || echo 'not found (configuring may fail: docs/gpu.md)')"

if [[ -z ${GPU_CHECK_BUILD_DIR:-} ]]; then
section "build (cmake -DDIALTREE_LIBTORCH=$torch_prefix)"
t0=$(date +%s)
mkdir -p "$build"
"$cmake_bin" -S . -B "$build" -G Ninja -DCMAKE_MAKE_PROGRAM="$ninja_bin" \
  -DDIALTREE_LIBTORCH="$torch_prefix" -DDIALTREE_SPM_PREFIX="$deps/sentencepiece" \
  -DCMAKE_PREFIX_PATH="$root/usr;$libdir/cmake;$root/usr/share/cmake;$root/usr/share/eigen3/cmake" \
  -DCMAKE_LIBRARY_PATH="$libdir" -DCMAKE_INCLUDE_PATH="$root/usr/include" \
  -DBoost_INCLUDE_DIR="$root/usr/include" -DPKG_CONFIG_EXECUTABLE="$root/usr/bin/pkgconf" \
  -DPROTOBUF_LITE_LIBRARY="$libdir/libprotobuf-lite.so.32" \
  -DDIALTREE_SHARED_DIR="$here/.deps/gpu/shared" -DDIALTREE_BUILD_BENCH=ON >"$build/gpu-check-configure.log" 2>&1 ||
  { tail -40 "$build/gpu-check-configure.log"; die "configure failed (full log: $build/gpu-check-configure.log)"; }
grep -E "LibTorch|CUDA" "$build/gpu-check-configure.log" | head -5
# Where each dependency was found: every one should be under $root (or PyTorch's tree).
grep -E "^(yaml-cpp|spdlog|fmt|GTest|simdjson|nlohmann_json|CLI11|Eigen3|Boost)_DIR|^(CSV_LIBRARY|PROTOBUF_LITE_LIBRARY|Boost_INCLUDE_DIR)|^pkgcfg_lib_(CPP_HTTPLIB|UTF8PROC|JEMALLOC)" \
  "$build/CMakeCache.txt" | grep -v -- -ADVANCED | sed 's/:[A-Z]*=/ = /'
[[ -n ${GPU_CHECK_CONFIGURE_ONLY:-} ]] && exit 0
"$cmake_bin" --build "$build" -j "$jobs" >"$build/gpu-check-build.log" 2>&1 ||
  { grep -E "error|Error" "$build/gpu-check-build.log" | head -30; die "build failed (full log: $build/gpu-check-build.log)"; }
echo "built in $(($(date +%s) - t0)) s"
[[ -n ${GPU_CHECK_BUILD_ONLY:-} ]] && exit 0
fi
dt=$build/cli/dialtree
"$dt" version --verbose

section "CUDA and device tests"
(cd "$build" && ctest -R 'Cuda\.|Device\.|DeviceSpec\.' --output-on-failure 2>&1 | tail -25)
(cd "$build" && ./tests/test_trainer --gtest_filter='Cuda.*' 2>&1 | grep -E "^\[ +(OK|FAILED|SKIPPED) +\]")

data=$deps/data
work=$(mktemp -d)
section "pretraining: 50 steps on $dev (checkpoint at 25), then resumed on the CPU from step 25"
common=(output_dir="$work/run" max_steps=50 save_steps=25 save_total_limit=0 eval_steps=0
  logging_steps=5 data.tokenizer="$data/tokenizer"
  "data.labelled=[$data/sgd.train.jsonl,$data/banking.train_10.jsonl]" "data.unlabelled=[]"
  threads="$(( jobs < 8 ? jobs : 8 ))" bf16=true)
"$dt" train configs/pretrain-small.yaml "${common[@]}" device="$dev" 2>&1 | grep -E "model:|step (5|25|50)/|saved" | head -12
cp "$work/run/metrics.jsonl" "$work/metrics-first.jsonl"
"$dt" train configs/pretrain-small.yaml "${common[@]}" device=cpu \
  resume_from_checkpoint="$work/run/checkpoint-25" 2>&1 | grep -E "resum|step (30|50)/|saved" | head -8
python3 - "$work/metrics-first.jsonl" "$work/run/metrics.jsonl" "$dev" <<'EOF'
import json, sys
def rows(p):
    return {r["step"]: r for r in map(json.loads, open(p)) if "loss" in r}
a, b = rows(sys.argv[1]), rows(sys.argv[2])
for s in sorted(set(a) & set(b)):
    d = sys.argv[3]
    print(f"step {s:3}: loss {d} {a[s]['loss']:.4f}  {d} then cpu {b[s]['loss']:.4f}")
EOF

section "embed: banking test texts on $dev and on the CPU"
bundle=$work/run/final
for d in "$dev" cpu; do
  t=$(date +%s.%N)
  "$dt" embed --model "$bundle" --device $d --input "$data/banking.test.txt" --output "$work/$d.jsonl" \
    --normalize false 2>&1 | tail -1
  echo "$d: $(wc -l <"$data/banking.test.txt") texts in $(python3 -c "print(round($(date +%s.%N) - $t, 2))") s (whole process)"
done
python3 - "$work/$dev.jsonl" "$work/cpu.jsonl" "$dev" <<'EOF'
import json, sys
a = [json.loads(l) for l in open(sys.argv[1])]
b = [json.loads(l) for l in open(sys.argv[2])]
d = max(abs(x - y) for u, v in zip(a, b) for x, y in zip(u, v))
s = max(abs(x) for u in b for x in u)
print(f"{len(a)} vectors; largest |{sys.argv[3]} - cpu| {d:.2e} (largest |cpu| {s:.2f}; "
      "fp32: embed does not autocast)")
EOF

section "pretraining step throughput and MFU (bench_train_step, synthetic batches)"
for m in small base; do
  for mode in "" --bf16; do
    # shellcheck disable=SC2086
    "$build/bench/bench_train_step" --device "$dev" --model $m $mode $bench_args 2>&1 |
      grep -E "^RESULT|GEMM peak"
  done
done
section "transformers reads the HF interop fixture as dialtree does"
rm -rf "$work/hf-tiny"
DIALTREE_KEEP_HF_FIXTURE="$work/hf-tiny" "$build/tests/test_model" \
  --gtest_filter='ImportHf.ForwardMatchesIndependentReference' 2>&1 | grep -E "^\[ +(OK|FAILED) +\]"
python3 tests/fixtures/hf/check_with_transformers.py "$work/hf-tiny" 2>&1 | tail -3

rm -rf "$work"
section "done"
