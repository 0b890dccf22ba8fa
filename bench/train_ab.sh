#!/usr/bin/env bash
# Whole `dialtree train` runs on the real data, side by side: the first STEPS steps of CONFIG
# (the same batches, seeds and config) for each variant, ROUNDS times, alternating, in one run.
# A variant is NAME=DIALTREE[,key=value...]: a dialtree executable (e.g. this tree's and one
# built from another commit) and overrides of its own. Prints, per run, the median examples/s
# over steps 2..STEPS, the padded-token fraction of the rows the encoder computed, the loss at
# the last step and the run's peak resident set (GNU time's maximum RSS, for any dialtree;
# '-' where /usr/bin/time is missing); then each variant's median over its runs against the first variant's (a
# median, so that one run slowed by another process does not decide the ratio).
# usage: bench/train_ab.sh CONFIG NAME=DIALTREE[,key=value...] NAME=... [-- key=value ...]
#   env: STEPS (12), ROUNDS (2), THREADS (2), OUT (out/bench/train_ab)
# e.g. bench/train_ab.sh configs/pretrain-lm.yaml before=/tmp/before/dialtree after=build/cli/dialtree
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
: "${STEPS:=12}" "${ROUNDS:=2}" "${THREADS:=2}" "${OUT:=$root/out/bench/train_ab}"
usage="usage: bench/train_ab.sh CONFIG NAME=DIALTREE[,key=value...] NAME=... [-- key=value ...]"
[[ $# -ge 2 ]] || { echo "$usage" >&2; exit 2; }
config=$1
shift
[[ -f $config ]] || { echo "train_ab.sh: no config file $config" >&2; exit 2; }
variants=()
while [[ $# -gt 0 && $1 != -- ]]; do
  [[ $1 == ?*=?* ]] || { echo "train_ab.sh: '$1' is not NAME=DIALTREE[,key=value...]" >&2; exit 2; }
  name=${1%%=*}
  [[ $name =~ ^[A-Za-z0-9_.]+$ ]] ||
    { echo "train_ab.sh: variant name '$name': letters, digits, '_' and '.' only" >&2; exit 2; }
  exe=${1#*=}
  exe=${exe%%,*}
  [[ -x $exe ]] || { echo "train_ab.sh: variant $name: $exe is not an executable" >&2; exit 2; }
  variants+=("$1")
  shift
done
[[ ${#variants[@]} -ge 1 ]] || { echo "$usage" >&2; exit 2; }
[[ ${1:-} == -- ]] && shift
for f in out/sts/mlm_all.train.jsonl out/sts/sgd.train.jsonl out/tokenizer; do
  [[ -e $f ]] || { echo "train_ab.sh: $f is missing; run scripts/run.sh first" >&2; exit 1; }
done
rm -rf "$OUT"
mkdir -p "$OUT"
echo "== $config, first $STEPS steps, $THREADS threads ($(nproc) CPUs," \
  "$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | xargs), load $(cut -d' ' -f1-3 /proc/loadavg))"
for round in $(seq 1 "$ROUNDS"); do
  for v in "${variants[@]}"; do
    name=${v%%=*} spec=${v#*=}
    IFS=, read -r -a parts <<<"$spec"
    dir=$OUT/$name-$round
    timer=()
    [[ -x /usr/bin/time ]] && timer=(/usr/bin/time -f %M -o "$dir.maxrss_kb")
    "${timer[@]}" "${parts[0]}" train "$config" "output_dir=$dir" "max_steps=$STEPS" logging_steps=1 \
      save_steps=0 eval_steps=0 "threads=$THREADS" "${parts[@]:1}" "$@" >"$dir.log" 2>&1 ||
      { cat "$dir.log" >&2; exit 1; }
  done
done
names=()
for v in "${variants[@]}"; do names+=("${v%%=*}"); done
python3 - "$OUT" "${names[@]}" <<'EOF'
import json, pathlib, statistics, sys
out, names = pathlib.Path(sys.argv[1]), sys.argv[2:]
medians = {}
print("| run | median examples/s (steps 2..) | padded-token fraction (mean) | loss at the last step | peak resident set (MiB) |")
print("|---|---|---|---|---|")
for name in names:
    rates = []
    for d in sorted(out.glob(f"{name}-*/")):
        recs = [json.loads(l) for l in (d / "metrics.jsonl").read_text().splitlines()]
        recs = [r for r in recs if "loss" in r]
        eps = statistics.median(r["examples_per_second"] for r in recs[1:])
        pad = statistics.mean(r["padded_token_fraction"] for r in recs)
        rates.append(eps)
        kb = out / f"{d.name}.maxrss_kb"
        rss = f"{int(kb.read_text().split()[-1]) / 1024:.0f}" if kb.exists() else "-"
        print(f"| {d.name} | {eps:.1f} | {pad:.3f} | {recs[-1]['loss']:.4f} | {rss} |")
    medians[name] = statistics.median(rates)
print()
first = names[0]
for name in names[1:]:
    print(f"{name} / {first}: {medians[name]:.1f} / {medians[first]:.1f} examples/s = "
          f"{medians[name] / medians[first]:.2f}x")
EOF
