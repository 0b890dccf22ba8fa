#!/usr/bin/env bash
# Embedding server benchmark (issue 5), side by side in one run, loopback only:
#   1. offline `dialtree embed` vs the Python reference forward (bench/reference/embed.py on
#      python3-torch) on the same bundle and the same real sentences (token ids written by
#      bench_embed with the bundle's tokenizer), batched the same way; whole processes
#      (ROUNDS alternating, both load the model) and in-process passes (bench_embed, embed.py);
#      the vectors are compared (max abs difference);
#   2. `dialtree serve` under 1, 8 and 32 keep-alive clients sending single sentences
#      (bench_serve_load, DURATION s each): requests/s as a fraction of the offline in-process
#      rate on the same texts (tokenisation included on both sides, the server's thread count),
#      measured right before and right after each load run and averaged, so that the ratio is
#      taken in one window of this shared machine's speed; p50/p99 latency, mean batch size from
#      /metrics; the CPU time server and client each used during the run, as a share of all
#      CPUs (both run on this machine, so the server's share bounds its fraction of offline);
#      once per entry of SERVER_THREADS: a thread count, or THREADS:WORKERS to set
#      --inference-workers too (e.g. "2:1 2" runs the single-worker design, then the default);
#   3. the server's resident set size after warm-up and after SOAK requests from 32 clients, in
#      ten chunks, with an offline pass after each chunk (the soak's ratio uses their median).
# Takes about 2 min + 1.5 min per server thread count + SOAK / (32-client requests/s) + 1 min.
# Builds nothing: build dialtree, bench_embed and bench_serve_load in BUILD_DIR first.
#   usage: bench/serve.sh   env: BUILD_DIR (build), MODEL (runs/pretrain-intent-pseudo/final),
#     THREADS (2: LibTorch threads offline, both sides), PASSES (3), ROUNDS (2), DURATION (10),
#     SOAK (100000), SERVER_THREADS ("$THREADS 1": a server run per value; the soak runs on the
#     first), HTTP_THREADS (64), MAX_WAIT_MS (2), MAX_BATCH (64), TEXTS (banking test
#     split's text column), OUT (out/bench/serve)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
build=${BUILD_DIR:-build}
model=${MODEL:-runs/pretrain-intent-pseudo/final}
threads=${THREADS:-2}
passes=${PASSES:-3}
rounds=${ROUNDS:-2}
duration=${DURATION:-10}
soak=${SOAK:-100000}
http_threads=${HTTP_THREADS:-64}
max_wait=${MAX_WAIT_MS:-2}
max_batch=${MAX_BATCH:-64}
server_threads=${SERVER_THREADS:-"$threads 1"}
csv=${TEXTS:-$root/../shared/data/dialoglue/banking/test.csv}
out=${OUT:-$root/out/bench/serve}
py=/usr/bin/python3 # Debian's interpreter with python3-torch (docs/build.md P10)
dialtree=$build/cli/dialtree

die() { echo "bench/serve.sh: $*" >&2; exit 1; }
for b in "$dialtree" "$build/bench/bench_embed" "$build/bench/bench_serve_load"; do
  [[ -x $b ]] || die "$b is missing; build it first: cmake --build $build --target dialtree bench_embed bench_serve_load (configured with -DDIALTREE_BUILD_BENCH=ON)"
done
[[ -f $model/model.safetensors && -f $model/config.json ]] ||
  die "no model bundle at MODEL=$model; make one with scripts/run.sh (writes runs/pretrain-intent-pseudo/final) or pass MODEL=path/to/bundle"
[[ -f $csv ]] || die "no text file TEXTS=$csv (a CSV with a text column, e.g. DialoGLUE banking/test.csv)"
"$py" -c 'import torch' 2>/dev/null ||
  die "$py cannot import torch; install Debian's python3-torch (apt-get install python3-torch)"
mkdir -p "$out"
rm -f "$out"/*.txt "$out"/*.jsonl "$out"/*.log

server_pid=
cleanup() { [[ -n $server_pid ]] && kill "$server_pid" 2>/dev/null && wait "$server_pid" 2>/dev/null || true; }
trap cleanup EXIT
now() { date +%s.%N; }
field() { sed -nE "s/.*[ ]$1=([^ ]+).*/\1/p" <<<"$2"; }
med() { sort -g | awk '{v[NR] = $1} END {print NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
rss_mib() { awk '/^VmRSS/ {printf "%.1f", $2 / 1024}' "/proc/$1/status"; }
# User + system CPU seconds of process $1 so far (fields 14 and 15 of /proc/PID/stat, counted
# after the command name, which may hold spaces).
cpu_s() { sed -E 's/.*\) //' "/proc/$1/stat" | awk -v hz="$(getconf CLK_TCK)" '{print ($12 + $13) / hz}'; }
# "server/client" CPU share of all CPUs over a run: server CPU seconds $1, RESULT line $2.
cpu_share() { awk -v sv="$1" -v c="$(field client_cpu_s "$2")" -v t="$(field seconds "$2")" -v n="$(nproc)" \
  'BEGIN {printf "%.2f / %.2f", sv / (t * n), c / (t * n)}'; }

"$py" - "$csv" "$out/texts.txt" <<'EOF'
import csv, sys
with open(sys.argv[1], newline="", encoding="utf-8") as f, open(sys.argv[2], "w") as o:
    for row in csv.DictReader(f):
        text = " ".join(row["text"].split())
        if text:
            o.write(text + "\n")
EOF
n=$(wc -l <"$out/texts.txt")
cmd="BUILD_DIR=$build MODEL=$model THREADS=$threads SERVER_THREADS='$server_threads' PASSES=$passes ROUNDS=$rounds DURATION=$duration SOAK=$soak bench/serve.sh"
load0=$(cut -d' ' -f1-3 /proc/loadavg)
echo "== $cmd"
echo "== $(date -u +%FT%TZ), $(nproc) CPUs, load $load0, $n texts from $csv"

echo "== 1. offline, in-process ($passes timed passes after a warm-up, $threads threads)"
r_text=$("$build/bench/bench_embed" --model "$model" --input "$out/texts.txt" --threads "$threads" \
  --passes "$passes" --write-ids "$out/ids.jsonl")
echo "cpp text: $r_text"
r_ids=$("$build/bench/bench_embed" --model "$model" --input "$out/ids.jsonl" --input-format jsonl \
  --threads "$threads" --passes "$passes")
echo "cpp ids:  $r_ids"
"$dialtree" embed --model "$model" --input "$out/ids.jsonl" --input-format jsonl \
  --num-threads "$threads" --output "$out/cpp.ids.jsonl" 2>/dev/null
r_py=$("$py" bench/reference/embed.py --model "$model" --ids "$out/ids.jsonl" --threads "$threads" \
  --passes "$passes" --check "$out/cpp.ids.jsonl")
echo "py ids:   $r_py"

echo "== 1b. offline, whole processes ($rounds rounds, alternating; each loads the model)"
for ((r = 1; r <= rounds; ++r)); do
  t0=$(now)
  "$dialtree" embed --model "$model" --input "$out/ids.jsonl" --input-format jsonl \
    --num-threads "$threads" --output "$out/cpp.ids.jsonl" 2>/dev/null
  t1=$(now)
  "$py" bench/reference/embed.py --model "$model" --ids "$out/ids.jsonl" --threads "$threads" \
    --output "$out/py.ids.jsonl" >/dev/null
  t2=$(now)
  "$dialtree" embed --model "$model" --input "$out/texts.txt" --num-threads "$threads" \
    --output "$out/cpp.text.jsonl" 2>/dev/null
  t3=$(now)
  awk -v a="$t0" -v b="$t1" -v c="$t2" -v d="$t3" 'BEGIN {print b - a, c - b, d - c}' |
    tee -a "$out/whole.txt" | sed "s/^/round $r seconds (cpp ids, py ids, cpp text): /"
done
cmp -s "$out/cpp.ids.jsonl" "$out/cpp.text.jsonl" ||
  die "dialtree embed gives different vectors for the texts and for bench_embed's ids"
echo "dialtree embed: text input and id input give byte-identical vectors"
w_cpp=$(awk '{print $1}' "$out/whole.txt" | med)
w_py=$(awk '{print $2}' "$out/whole.txt" | med)
w_text=$(awk '{print $3}' "$out/whole.txt" | med)

# The serve flags of a SERVER_THREADS entry $1: THREADS or THREADS:WORKERS.
serve_flags() { if [[ $1 == *:* ]]; then echo "--num-threads ${1%%:*} --inference-workers ${1#*:}"; else echo "--num-threads $1"; fi; }
# Starts the server for SERVER_THREADS entry $1; sets server_pid and port.
start_server() {
  # shellcheck disable=SC2046 # two words on purpose
  "$dialtree" serve --model "$model" --port 0 $(serve_flags "$1") --http-threads "$http_threads" \
    --max-wait-ms "$max_wait" --max-batch-requests "$max_batch" 2>"$out/server.$1.log" &
  server_pid=$!
  port=
  for ((i = 0; i < 600; ++i)); do
    port=$(sed -nE 's/.*listening on http:\/\/[^:]+:([0-9]+).*/\1/p' "$out/server.$1.log" | head -1)
    [[ -n $port ]] && [[ $(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/health") == 200 ]] && return
    kill -0 "$server_pid" 2>/dev/null || { cat "$out/server.$1.log" >&2; die "the server exited"; }
    sleep 0.1
  done
  die "the server did not become ready in 60 s (log: $out/server.$1.log)"
}
# Offline in-process sentences/s of one timed pass (after a warm-up) with $1 LibTorch threads.
offline_now() {
  field sent_s "$("$build/bench/bench_embed" --model "$model" --input "$out/texts.txt" --threads "$1" --passes 1)"
}
batches() { curl -s "http://127.0.0.1:$port/metrics" |
  awk '/^dialtree_batch_size_sum/ {s = $2} /^dialtree_batch_size_count/ {c = $2} END {print s, c}'; }
declare -A res mean_batch off_at share
first=1
for st in $server_threads; do
  echo "== 2. dialtree serve $(serve_flags "$st") --http-threads $http_threads --max-wait-ms $max_wait --max-batch-requests $max_batch"
  start_server "$st"
  load=("$build/bench/bench_serve_load" --port "$port" --texts "$out/texts.txt")
  hidden=$(sed -nE 's/.*"hidden_size":([0-9]+).*/\1/p' <<<"$(curl -s "http://127.0.0.1:$port/info")")
  "${load[@]}" --clients 32 --duration 3 --check-dims "${hidden:-0}" >/dev/null ||
    die "warm-up requests failed (log: $out/server.$st.log)"
  rss0=$(rss_mib "$server_pid")
  echo "port $port, RSS after warm-up (3 s, 32 clients): $rss0 MiB"
  for c in 1 8 32; do
    o0=$(offline_now "${st%%:*}")
    b0=$(batches)
    c0=$(cpu_s "$server_pid")
    res[$st.$c]=$("${load[@]}" --clients "$c" --duration "$duration") || true # errors: in the table
    share[$st.$c]=$(cpu_share "$(awk -v a="$c0" -v b="$(cpu_s "$server_pid")" 'BEGIN {print b - a}')" "${res[$st.$c]}")
    b1=$(batches)
    o1=$(offline_now "${st%%:*}")
    off_at[$st.$c]=$(awk -v a="$o0" -v b="$o1" 'BEGIN {printf "%.1f", (a + b) / 2}')
    mean_batch[$st.$c]=$(awk -v a="$b0" -v b="$b1" 'BEGIN {split(a, x, " "); split(b, y, " ")
      printf "%.1f", (y[1] - x[1]) / (y[2] - x[2])}')
    echo "${res[$st.$c]} mean_batch=${mean_batch[$st.$c]} offline_before=$o0 offline_after=$o1"
  done
  if ((first)); then
    echo "== 3. soak: $soak requests from 32 clients (server $(serve_flags "$st"))"
    soak_threads=$st
    b0=$(batches)
    soak_rss0=$rss0
    rss_series=$rss0
    : >"$out/soak.txt"
    : >"$out/soak-offline.txt"
    soak_server_cpu=0
    for ((k = 1; k <= 10; ++k)); do # 10 chunks, RSS and an offline pass after each
      c0=$(cpu_s "$server_pid")
      "${load[@]}" --clients 32 --requests $((soak / 10)) >>"$out/soak.txt" || true
      soak_server_cpu=$(awk -v s="$soak_server_cpu" -v a="$c0" -v b="$(cpu_s "$server_pid")" 'BEGIN {print s + b - a}')
      rss_series+=" $(rss_mib "$server_pid")"
      offline_now "${st%%:*}" >>"$out/soak-offline.txt"
    done
    soak_off=$(med <"$out/soak-offline.txt")
    b1=$(batches)
    soak_batch=$(awk -v a="$b0" -v b="$b1" 'BEGIN {split(a, x, " "); split(b, y, " ")
      printf "%.1f", (y[1] - x[1]) / (y[2] - x[2])}')
    rss1=$(rss_mib "$server_pid")
    # Sums over the chunks; p50 = median of the chunks' p50s, p99 and max = their maxima.
    soak_res=$(awk '{for (i = 2; i <= NF; ++i) {split($i, kv, "="); v[kv[1]] = kv[2]}
      n += v["requests"]; e += v["errors"]; s += v["seconds"]; cpu += v["client_cpu_s"]
      if (v["p99_ms"] + 0 > p99) p99 = v["p99_ms"] + 0; if (v["max_ms"] + 0 > mx) mx = v["max_ms"] + 0}
      END {printf "RESULT requests=%d errors=%d seconds=%.3f rps=%.1f p50_ms=%s p99_ms=%.2f max_ms=%.2f client_cpu_s=%.3f\n",
        n, e, s, n / s, p50, p99, mx, cpu}' p50="$(sed -nE 's/.* p50_ms=([^ ]+).*/\1/p' "$out/soak.txt" | med)" \
      "$out/soak.txt")
    soak_share=$(cpu_share "$soak_server_cpu" "$soak_res")
    echo "$soak_res mean_batch=$soak_batch offline_median=$soak_off ($(tr '\n' ' ' <"$out/soak-offline.txt"))"
    echo "RSS (MiB) after warm-up, then after each tenth of the soak: $rss_series"
    first=0
  fi
  cleanup
  server_pid=
done

off=$(field sent_s "$r_text")
echo
echo "\`$cmd\`, $(date -u +%F): load average before the run $load0 (at the end $(cut -d' ' -f1-3 /proc/loadavg)); $(nproc) CPUs shared by client and server; $n sentences of $(basename "$(dirname "$csv")")/$(basename "$csv"); LibTorch threads $threads offline"
echo
echo "| offline: $n sentences | dialtree | Python reference | ratio |"
echo "|---|---|---|---|"
printf '| whole process (load + embed + write), s, median of %d | %.2f | %.2f | %.2fx |\n' \
  "$rounds" "$w_cpp" "$w_py" "$(awk -v a="$w_cpp" -v b="$w_py" 'BEGIN {print b / a}')"
printf '| whole process, sentences/s | %.0f | %.0f | |\n' \
  "$(awk -v s="$w_cpp" -v n="$n" 'BEGIN {print n / s}')" "$(awk -v s="$w_py" -v n="$n" 'BEGIN {print n / s}')"
printf '| in-process (ids), sentences/s, median of %d passes | %.0f | %.0f | %.2fx |\n' "$passes" \
  "$(field sent_s "$r_ids")" "$(field sent_s "$r_py")" \
  "$(awk -v a="$(field sent_s "$r_ids")" -v b="$(field sent_s "$r_py")" 'BEGIN {print a / b}')"
printf '| max abs difference of the vectors | %s | | |\n' "$(field max_abs_diff "$r_py")"
printf '| dialtree, text input (tokenisation included): whole process %.2f s; in-process %.0f sentences/s | | | |\n' \
  "$w_text" "$off"
echo
echo "| server: /embed, one sentence per request | requests/s | offline sentences/s, same threads, around the run | server / offline | CPU share of the $(nproc) CPUs: server / client | p50 ms | p99 ms | max ms | mean batch | errors |"
echo "|---|---|---|---|---|---|---|---|---|---|"
for st in $server_threads; do
  for c in 1 8 32; do
    r=${res[$st.$c]}
    printf '| %s, %d clients, %s s | %.0f | %.0f | %.2f | %s | %s | %s | %s | %s | %s |\n' "$(serve_flags "$st")" "$c" "$duration" \
      "$(field rps "$r")" "${off_at[$st.$c]}" "$(awk -v a="$(field rps "$r")" -v b="${off_at[$st.$c]}" 'BEGIN {print a / b}')" "${share[$st.$c]}" "$(field p50_ms "$r")" \
      "$(field p99_ms "$r")" "$(field max_ms "$r")" "${mean_batch[$st.$c]}" "$(field errors "$r")"
  done
done
printf '| %s, soak: %s requests, 32 clients | %.0f | %.0f | %.2f | %s | %s | %s | %s | %s | %s |\n' "$(serve_flags "$soak_threads")" \
  "$(field requests "$soak_res")" "$(field rps "$soak_res")" "$soak_off" \
  "$(awk -v a="$(field rps "$soak_res")" -v b="$soak_off" 'BEGIN {print a / b}')" "$soak_share" \
  "$(field p50_ms "$soak_res")" "$(field p99_ms "$soak_res")" "$(field max_ms "$soak_res")" "$soak_batch" \
  "$(field errors "$soak_res")"
echo
echo "Server RSS ($(serve_flags "$soak_threads")): $soak_rss0 MiB after warm-up, $rss1 MiB after the soak ($(awk -v a="$soak_rss0" -v b="$rss1" 'BEGIN {printf "%+.1f", b - a}') MiB); after warm-up and each tenth of the soak: $rss_series MiB."
