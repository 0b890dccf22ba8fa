#!/usr/bin/env bash
# Benchmarks on the real data, each side by side with its Python reference in one run:
#   1. readers + STS conversion of every file in ../shared/data (bench/suite.h): records/s of
#      bench_convert vs bench/reference/convert.py, whole-process timing with hyperfine, and a
#      byte-for-byte comparison of the 20 output files;
#   2. SentencePiece encode throughput of dialtree's tokenizer vs Debian's python3-sentencepiece
#      on the same model and lines, with an id checksum that must agree; 2b. the same on one
#      line of 200,000 characters outside the vocabulary (docs/build.md P15);
#   3. one pre-training step (bench_train_step vs bench/reference/train_step.py on python3-torch),
#      fp32 and bf16, alternating (bench/train_step.sh; its env knobs apply).
# usage: bench/run.sh      env: DIALTREE_SHARED (default ../shared), RUNS (hyperfine runs, 5)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
scripts/setup.sh
need=()
for p in python3 python3-sentencepiece hyperfine; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || need+=("$p")
done
if ((${#need[@]})); then
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi
py=/usr/bin/python3  # the system interpreter, which has python3-sentencepiece (docs/build.md P10)
data=$(cd "${DIALTREE_SHARED:-$root/../shared}" && pwd -P)/data
build=${BUILD_DIR:-build}
out=$root/out/bench
runs=${RUNS:-5}
mkdir -p "$out"

echo "== 1. readers + STS conversion, all of $data (in-process timing)"
"$build/bench/bench_convert" "$data" "$out/cpp" | tee "$out/convert.cpp.txt"
"$py" bench/reference/convert.py --all "$data" "$out/py" | tee "$out/convert.py.txt"
cpp=$(awk '/^TOTAL/ {print $(NF-1)}' "$out/convert.cpp.txt")
ref=$(awk '/^TOTAL/ {print $(NF-1)}' "$out/convert.py.txt")
awk -v a="$cpp" -v b="$ref" 'BEGIN {printf "records/s: dialtree %.0f, python %.0f, ratio %.2fx\n", a, b, a / b}'
diffs=0
for f in "$out"/cpp/*.jsonl; do cmp -s "$f" "$out/py/$(basename "$f")" || { echo "DIFFERS: $(basename "$f")"; diffs=1; }; done
((diffs)) || echo "outputs: all $(ls "$out"/cpp/*.jsonl | wc -l) files byte-identical to the Python reference"

echo "== 1b. the same, whole processes (hyperfine, $runs runs)"
hyperfine -N --warmup 1 --runs "$runs" --export-markdown "$out/convert.hyperfine.md" \
  -n dialtree "$build/bench/bench_convert $data $out/cpp" \
  -n python "$py bench/reference/convert.py --all $data $out/py" | grep -vE '^\s*$'

echo "== 2. SentencePiece encode (1 thread)"
tok=$out/tokenizer
[[ -f $tok/tokenizer.json ]] ||
  "$build/cli/dialtree" tokenizer train --input "$data/dialoglue/mlm_all_no_multiwoz.txt" \
    --vocab-size 8000 --out "$tok"
spm_side_by_side() {  # text_file repeats: both sides, their ratio, and the id checksums
  local a b sa sb ca cb
  a=$("$build/bench/bench_spm_encode" "$tok" "$1" "$2"); echo "$a"
  b=$("$py" bench/reference/spm_encode.py "$tok" "$1" "$2"); echo "$b"
  sa=$(sed -E 's/.*: ([0-9.]+) sentences.*/\1/' <<<"$a"); sb=$(sed -E 's/.*: ([0-9.]+) sentences.*/\1/' <<<"$b")
  ca=${a##*checksum }; cb=${b##*checksum }
  awk -v a="$sa" -v b="$sb" 'BEGIN {printf "sentences/s ratio dialtree/python %.2fx\n", a / b}'
  [[ $ca == "$cb" ]] && echo "ids: identical checksums ($ca)" || { echo "ids DIFFER: $ca vs $cb"; exit 1; }
}
spm_side_by_side "$data/dialoglue/mlm_all_no_multiwoz.txt" 5

echo "== 2b. SentencePiece encode of one run of 200,000 characters outside the vocabulary (U+4F60)"
# docs/build.md P15: Debian's 0.1.97 (the Python side) merges such a run into one [UNK] in time
# quadratic in its length; dialtree's build is patched to do it in linear time, same ids.
"$py" -c 'import sys; open(sys.argv[1], "w", encoding="utf-8").write("\u4f60" * 200000 + "\n")' \
  "$out/unknown-run.txt"
spm_side_by_side "$out/unknown-run.txt" 3

echo "== 3. pre-training step (configs/pretrain-small.yaml model, synthetic batches), fp32 and bf16"
BUILD_DIR="$build" bench/train_step.sh
