#!/usr/bin/env bash
# bench/llm/serve_batch.sh -- continuous batching in `infera serve`: aggregate completion tokens/s with 1, 2, 4
# and 8 concurrent greedy clients (bench/llm/serve_clients.py, /v1/chat/completions) for
#   batched      infera serve --llm-slots 8 (one batched forward pass per decode step for all active slots)
#   round-robin  the same server with INFERA_LLM_SCHEDULE=round-robin (each slot decoded alone in turn)
#   llama.cpp    llama-server -np 8 (continuous batching), when bench/llm/build_llama_cpp.sh --server built it
# on SmolLM2-135M-Instruct Q4_1 (tests/llm/smollm2.sh), 1 thread each, the servers interleaved per
# configuration (the machine is shared: each keeps its best of ROUNDS).  Two measures: wall-clock tokens/s,
# and tokens per CPU-second of the server process (utime + stime from /proc/PID/stat around the run), which
# a machine shared by other jobs disturbs much less.  Also checks that the batched
# server's texts equal the round-robin server's (greedy: batching must not change a token).
# Usage: bench/llm/serve_batch.sh [BUILD_DIR]   MAX_TOKENS=48 ROUNDS=2 THREADS=1 CLIENTS="1 2 4 8"
set -euo pipefail
cd "$(dirname "$0")/../.."
BUILD=$(readlink -f "${1:-build}")
MAX_TOKENS=${MAX_TOKENS:-48}
ROUNDS=${ROUNDS:-2}
THREADS=${THREADS:-1}
CLIENTS=${CLIENTS:-"1 2 4 8"}
SLOTS=8
CACHE="${INFERA_CACHE:-$HOME/.cache/infera}"
MODEL=$(tests/llm/smollm2.sh)
LLAMA_SERVER="$CACHE/llama.cpp/build-cpu/bin/llama-server"
TMP=$(mktemp -d)
PIDS=()
trap 'for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null; rm -rf "$TMP"' EXIT

cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
# URL PID CLIENTS REQUESTS -> "wall_tokens_per_s tokens_per_cpu_s" and the answer JSON in $TMP/last.json
measure() {
  local t0 t1
  t0=$(cpu_ticks "$2")
  python3 bench/llm/serve_clients.py "$1" smol "$3" "$4" "$MAX_TOKENS" >"$TMP/last.json"
  t1=$(cpu_ticks "$2")
  python3 -c 'import json,sys,os; d=json.load(open(sys.argv[1])); t=(int(sys.argv[3])-int(sys.argv[2]))/os.sysconf("SC_CLK_TCK")
print(d["tokens_per_s"], round(d["completion_tokens"]/t, 1) if t > 0 else 0)' "$TMP/last.json" "$t0" "$t1"
}
start_infera() { # NAME [ENV=VALUE]: starts a server, sets URL and SPID (no subshell: the PIDs are kept)
  local log="$TMP/$1.log"
  env ${2:-} "$BUILD/infera" serve --port 0 --model "smol=$MODEL" --llm-slots $SLOTS --llm-ctx 512 \
    --threads "$THREADS" 2>"$log" &
  PIDS+=($!)
  SPID=$!
  for _ in $(seq 1 300); do
    URL=$(grep -o 'listening on http://[^ ]*' "$log" 2>/dev/null | sed 's/listening on //' || true)
    [ -n "$URL" ] && return
    sleep 0.1
  done
  cat "$log" >&2
  exit 1
}
start_llama() { # sets URL ("" when it does not come up)
  local port
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  "$LLAMA_SERVER" -m "$MODEL" -np $SLOTS -c $((SLOTS * 512)) -t "$THREADS" -tb "$THREADS" --port "$port" \
    --host 127.0.0.1 >"$TMP/llama.log" 2>&1 &
  PIDS+=($!)
  SPID=$!
  for _ in $(seq 1 600); do
    curl -sf "http://127.0.0.1:$port/health" >/dev/null 2>&1 && { URL="http://127.0.0.1:$port"; return; }
    sleep 0.1
  done
  tail -5 "$TMP/llama.log" >&2
  URL=""
}

start_infera batched; URL_B=$URL; PID_B=$SPID
start_infera roundrobin INFERA_LLM_SCHEDULE=round-robin; URL_R=$URL; PID_R=$SPID
URL_L="" PID_L=""
if [ -x "$LLAMA_SERVER" ]; then start_llama; URL_L=$URL; PID_L=$SPID; fi

echo "CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'); flags: $(grep -m1 flags /proc/cpuinfo | grep -o 'avx2\|avx512f\|avx512_vnni\|avx512vnni' | sort -u | tr '\n' ' ')"
echo "model: $(basename "$MODEL"), $SLOTS slots, $THREADS thread(s), max_tokens $MAX_TOKENS, best of $ROUNDS rounds"
printf '%7s | %9s %9s %6s %9s %6s | %9s %9s %6s %9s %6s | %s\n' clients batched r-robin ratio llama ratio \
  batched r-robin ratio llama ratio "texts"
printf '%7s | %-44s | %-44s |\n' "" "wall-clock tokens/s (best)" "tokens per server CPU-second (best)"
for c in $CLIENTS; do
  n=$((c * 2 > 4 ? c * 2 : 4))
  wb=0 wr=0 wl=0 cb=0 cr=0 cl=0 same=yes
  mx() { python3 -c "print(max(float('$1'), float('$2')))"; }
  for _ in $(seq "$ROUNDS"); do
    read -r w cc < <(measure "$URL_B" "$PID_B" "$c" "$n"); wb=$(mx "$wb" "$w"); cb=$(mx "$cb" "$cc")
    cp "$TMP/last.json" "$TMP/b.json"
    read -r w cc < <(measure "$URL_R" "$PID_R" "$c" "$n"); wr=$(mx "$wr" "$w"); cr=$(mx "$cr" "$cc")
    python3 -c 'import json,sys; sys.exit(json.load(open(sys.argv[1]))["texts"] != json.load(open(sys.argv[2]))["texts"])' \
      "$TMP/b.json" "$TMP/last.json" || same=DIFFER
    if [ -n "$URL_L" ]; then
      read -r w cc < <(measure "$URL_L" "$PID_L" "$c" "$n"); wl=$(mx "$wl" "$w"); cl=$(mx "$cl" "$cc")
    fi
  done
  r() { python3 -c "print('%.2fx' % ($1 / $2) if $2 else '-')"; }
  printf '%7s | %9.1f %9.1f %6s %9.1f %6s | %9.1f %9.1f %6s %9.1f %6s | batched == round-robin: %s\n' "$c" \
    "$wb" "$wr" "$(r "$wb" "$wr")" "$wl" "$(r "$wb" "$wl")" "$cb" "$cr" "$(r "$cb" "$cr")" "$cl" "$(r "$cb" "$cl")" "$same"
done
curl -s "$URL_B/metrics" | grep -E '^vllm:iteration_tokens_total_(sum|count)' | sed 's/^/batched server: /'
