#!/usr/bin/env bash
# Fine-tuning under jemalloc's defaults against the MALLOC_CONF that `dialtree eval dialoglue`
# now runs with (freed pages kept, released every 50 steps: docs/build.md P13). Whole
# `dialtree eval dialoglue` runs of one few-shot task, the two settings alternating, ROUNDS times;
# prints training examples/s (results.json), wall seconds, peak resident set and minor page
# faults (GNU time), the ratio of the medians, and checks that both settings give the same val
# curve and test accuracy (the allocator must not change a result).
#   usage: bench/finetune_malloc.sh BUNDLE
#   env: TASK (hwu), EPOCHS (3), ROUNDS (3), THREADS (1), BUILD_DIR (build),
#        DATA (../shared/data/dialoglue), OUT (out/bench/finetune_malloc), EXTRA (more key=value)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
bundle=${1:?usage: bench/finetune_malloc.sh BUNDLE}
task=${TASK:-hwu}
rounds=${ROUNDS:-3}
out=${OUT:-$root/out/bench/finetune_malloc}
data=${DATA:-$root/../shared/data/dialoglue}
bin=${BUILD_DIR:-build}/cli/dialtree
[ -x "$bin" ] || { echo "error: $bin not built (scripts/setup.sh)" >&2; exit 1; }
[ -x /usr/bin/time ] || { echo "error: needs GNU time (apt-get install time)" >&2; exit 1; }
rm -rf "$out"; mkdir -p "$out"
# defaults: jemalloc's own decay, as `eval dialoglue` ran before (a user's MALLOC_CONF stands);
# kept: no MALLOC_CONF, so the launcher chooses.
declare -A conf=([defaults]="dirty_decay_ms:10000,muzzy_decay_ms:0" [kept]="")
echo "== $task few-shot, ${EPOCHS:-3} epochs, $rounds rounds, $(nproc) cores, ${THREADS:-1} thread(s)," \
  "load $(cut -d' ' -f1-3 /proc/loadavg); $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2)"
for ((r = 1; r <= rounds; ++r)); do
  for name in defaults kept; do
    dir=$out/$name.$r
    MALLOC_CONF=${conf[$name]} DIALTREE_NUM_THREADS=${THREADS:-1} /usr/bin/time \
      -f "wall_s=%e maxrss_kb=%M minflt=%R sys_s=%S user_s=%U" -o "$dir.time" \
      "$bin" eval dialoglue --model "$bundle" --tasks "$task" --setting few --seeds 1 \
      --config configs/eval-few.yaml --data-dir "$data" --out "$dir" \
      num_train_epochs="${EPOCHS:-3}" early_stopping_patience=100 ${EXTRA:-} >"$dir.log" 2>&1 ||
      { echo "error: $name round $r failed; see $dir.log" >&2; tail -5 "$dir.log" >&2; exit 1; }
    printf '%-8s round %d: %s\n' "$name" "$r" "$(cat "$dir.time")"
  done
done
/usr/bin/python3 - "$out" "$task" "$rounds" <<'PY'
import json, re, statistics, sys
out, task, rounds = sys.argv[1], sys.argv[2], int(sys.argv[3])
rows, results = {}, {}
for name in ("defaults", "kept"):
    for r in range(1, rounds + 1):
        t = dict(re.findall(r"(\w+)=([0-9.]+)", open(f"{out}/{name}.{r}.time").read()))
        run = json.load(open(f"{out}/{name}.{r}/results.json"))["tasks"][task]["runs"][0]
        t["train_ex_s"] = run["train_examples_per_second"]
        results.setdefault(name, []).append(([c["val"] for c in run["curve"]], run["test"]))
        for k, v in t.items():
            rows.setdefault((name, k), []).append(float(v))
def cell(name, k):
    v = sorted(rows[(name, k)])
    return f"{statistics.median(v):.1f} [{v[0]:.1f}-{v[-1]:.1f}]"
print()
print("| MALLOC_CONF | train examples/s | wall s | peak RSS MB | minor faults | sys s |")
print("|---|---|---|---|---|---|")
for name, label in (("defaults", "dirty_decay_ms:10000,muzzy_decay_ms:0 (jemalloc's defaults)"),
                    ("kept", "none: the launcher's (pages kept, released every 50 steps)")):
    print(f"| {label} | {cell(name, 'train_ex_s')} | {cell(name, 'wall_s')} | "
          f"{statistics.median(rows[(name, 'maxrss_kb')]) / 1024:.0f} | "
          f"{statistics.median(rows[(name, 'minflt')]):.0f} | {cell(name, 'sys_s')} |")
ratio = statistics.median(rows[("kept", "train_ex_s")]) / statistics.median(rows[("defaults", "train_ex_s")])
print(f"\ntraining examples/s, kept / defaults: {ratio:.2f}x")
same = len({json.dumps(x) for xs in results.values() for x in xs}) == 1
print("val curve and test accuracy identical across settings and rounds:", "yes" if same else "NO")
sys.exit(0 if same else 1)
PY
