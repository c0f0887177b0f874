#!/usr/bin/env bash
# bench/llm/serve_batch.sh -- continuous batching in `infera serve`: aggregate completion tokens/s with 1, 2, 4
# and 8 concurrent greedy clients (bench/llm/serve_clients.py, /v1/chat/completions) for
#   batched      infera serve --llm-slots 8 (one batched forward pass per decode step for all active slots)
#   round-robin  the same server with INFERA_LLM_SCHEDULE=round-robin (each slot decoded alone in turn)
#   llama.cpp    llama-server -np 8 (continuous batching), when bench/llm/build_llama_cpp.sh --server built it
# on SmolLM2-135M-Instruct Q4_1 (tests/llm/smollm2.sh), 1 thread each, the servers interleaved per
# configuration (the machine is shared: each keeps its best of ROUNDS).  Also checks that the batched
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

start_infera() { # NAME [ENV=VALUE]: starts a server, sets URL (no subshell: the PIDs are kept)
  local log="$TMP/$1.log"
  env ${2:-} "$BUILD/infera" serve --port 0 --model "smol=$MODEL" --llm-slots $SLOTS --llm-ctx 512 \
    --threads "$THREADS" 2>"$log" &
  PIDS+=($!)
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
  for _ in $(seq 1 600); do
    curl -sf "http://127.0.0.1:$port/health" >/dev/null 2>&1 && { URL="http://127.0.0.1:$port"; return; }
    sleep 0.1
  done
  tail -5 "$TMP/llama.log" >&2
  URL=""
}

start_infera batched; URL_B=$URL
start_infera roundrobin INFERA_LLM_SCHEDULE=round-robin; URL_R=$URL
URL_L=""
if [ -x "$LLAMA_SERVER" ]; then start_llama; URL_L=$URL; fi

echo "CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'); flags: $(grep -m1 flags /proc/cpuinfo | grep -o 'avx2\|avx512f\|avx512_vnni\|avx512vnni' | sort -u | tr '\n' ' ')"
echo "model: $(basename "$MODEL"), $SLOTS slots, $THREADS thread(s), max_tokens $MAX_TOKENS, best of $ROUNDS rounds"
printf '%7s %14s %14s %8s %14s %8s %s\n' clients "batched tok/s" "round-robin" ratio "llama-server" ratio "texts"
for c in $CLIENTS; do
  n=$((c * 2 > 4 ? c * 2 : 4))
  best_b=0 best_r=0 best_l=0 same=yes
  for _ in $(seq "$ROUNDS"); do
    jb=$(python3 bench/llm/serve_clients.py "$URL_B" smol "$c" "$n" "$MAX_TOKENS")
    jr=$(python3 bench/llm/serve_clients.py "$URL_R" smol "$c" "$n" "$MAX_TOKENS")
    python3 -c 'import json,sys; sys.exit(json.loads(sys.argv[1])["texts"] != json.loads(sys.argv[2])["texts"])' \
      "$jb" "$jr" || same=DIFFER
    best_b=$(python3 -c 'import json,sys; print(max(float(sys.argv[2]), json.loads(sys.argv[1])["tokens_per_s"]))' "$jb" "$best_b")
    best_r=$(python3 -c 'import json,sys; print(max(float(sys.argv[2]), json.loads(sys.argv[1])["tokens_per_s"]))' "$jr" "$best_r")
    if [ -n "$URL_L" ]; then
      jl=$(python3 bench/llm/serve_clients.py "$URL_L" smol "$c" "$n" "$MAX_TOKENS")
      best_l=$(python3 -c 'import json,sys; print(max(float(sys.argv[2]), json.loads(sys.argv[1])["tokens_per_s"]))' "$jl" "$best_l")
    fi
  done
  ratio_r=$(python3 -c "print('%.2fx' % ($best_b / $best_r))")
  ratio_l=$(python3 -c "print('%.2fx' % ($best_b / $best_l) if $best_l else '-')")
  printf '%7s %14.1f %14.1f %8s %14s %8s %s\n' "$c" "$best_b" "$best_r" "$ratio_r" \
    "$([ -n "$URL_L" ] && printf '%.1f' "$best_l" || echo n/a)" "$ratio_l" "batched == round-robin: $same"
done
curl -s "$URL_B/metrics" | grep -E '^vllm:iteration_tokens_total_(sum|count)' | sed 's/^/batched server: /'
