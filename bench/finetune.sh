#!/usr/bin/env bash
# Intent fine-tuning throughput, dialtree (bench_finetune: eval/finetune_step.h) against its
# Python reference (bench/reference/finetune.py on Debian's python3-torch): the same model, a
# 77-class head, fixed synthetic batches, training steps and test-set prediction, fp32. The
# programs alternate, C++ then Python, ROUNDS times; the table shows medians [ranges] over the
# rounds and the ratios.
#   usage: bench/finetune.sh     env: BUILD_DIR (build), ROUNDS (3), STEPS (30), THREADS (2),
#                                     OUT (out/bench/finetune)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
build=${BUILD_DIR:-build}
rounds=${ROUNDS:-3}
out=${OUT:-$root/out/bench/finetune}
args=(--steps "${STEPS:-30}" --threads "${THREADS:-2}")
if ! dpkg-query -W -f='${Status}' python3-torch 2>/dev/null | grep -q 'install ok installed'; then
  apt-get update -qq &&
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends python3-torch >/dev/null
fi
log=$(cmake --build "$build" --target bench_finetune 2>&1) || { echo "$log" >&2; exit 1; }
mkdir -p "$out"
rm -f "$out"/*.txt
echo "== fine-tuning: ${args[*]}, $rounds rounds, cpp py alternating (load $(cut -d' ' -f1-3 /proc/loadavg))"
for ((r = 1; r <= rounds; ++r)); do
  "$build/bench/bench_finetune" "${args[@]}" >"$out/cpp.$r.txt"
  /usr/bin/python3 bench/reference/finetune.py "${args[@]}" >"$out/py.$r.txt"
  for impl in cpp py; do
    printf '%-4s round %d: %s\n' "$impl" "$r" "$(grep RESULT "$out/$impl.$r.txt")"
  done
done
values() { cat "$out/$1".*.txt | sed -nE "s/^RESULT .* $2=([^ ]+).*/\1/p"; }
summary() {
  sort -g | awk '{v[NR] = $1} END {m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
    printf("%.1f [%.1f-%.1f]", m, v[1], v[NR])}'
}
med() { sort -g | awk '{v[NR] = $1} END {print NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
echo
echo "| phase | C++ examples/s | Python examples/s | ratio C++/Py |"
echo "|---|---|---|---|"
for key in train_ex_s predict_ex_s; do
  c=$(values cpp $key | med)
  p=$(values py $key | med)
  printf '| %s | %s | %s | %.2fx |\n' "${key%_ex_s}" "$(values cpp $key | summary)" \
    "$(values py $key | summary)" "$(awk -v c="$c" -v p="$p" 'BEGIN {print c / p}')"
done
