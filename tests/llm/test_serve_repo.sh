#!/usr/bin/env bash
# test_serve_repo.sh INFERA -- GGUF models in the KServe repository API of `infera serve` (the real server,
# the committed Austen pair of tests/llm/models): POST /v2/repository/models/{name}/load by a file under
# --model-root and by a registry reference, /v2/repository/index and GET /v1/models list them, a loaded model
# answers /v1/completions exactly like `infera generate --temperature 0` (the CLI oracle: the same engine without
# HTTP, itself checked against PyTorch and llama.cpp in llm_reference / llm_models), an unload issued during a
# generation returns only after that generation finished complete, then the name is gone (404); a reload swaps
# the file; a path outside the root is refused; 4 concurrent greedy requests on 2 slots give the tokens each
# gives alone; a non-streamed client that disconnects cancels its generation; a full queue answers 429.
set -euo pipefail
INFERA=$(readlink -f "$1")
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/../check.sh"
M="$HERE/models"
command -v curl >/dev/null && command -v jq >/dev/null || skip "curl/jq missing"
[ -f "$M/austen-target-q8_0.gguf" ] || skip "no committed models"
WORK=$(mktemp -d)
ROOT="$WORK/root"
mkdir -p "$ROOT"
cp "$M/austen-target-q8_0.gguf" "$M/austen-draft-q8_0.gguf" "$ROOT/"
export INFERA_HOME="$WORK/home"
cli() { "$INFERA" generate "$1" --prompt "$2" --max-tokens "$3" --temperature 0 --json | jq -r .text; }
"$INFERA" registry register austen "$ROOT/austen-target-q8_0.gguf" >/dev/null
# the CLI takes registry references too (generate, tokenize)
a=$("$INFERA" tokenize austen@1 --text "It is a truth" --json) b=$("$INFERA" tokenize "$ROOT/austen-target-q8_0.gguf" --text "It is a truth" --json)
[ -n "$a" ] && [ "$a" = "$b" ] && ok "tokenize austen@1 == tokenize FILE" || bad "tokenize by reference: '$a' vs '$b'"
[ "$(cli austen@1 "It is" 8)" = "$(cli "$ROOT/austen-target-q8_0.gguf" "It is" 8)" ] && ok "generate austen@1 == generate FILE" ||
  bad "generate by reference"

LOG="$WORK/serve.log"
"$INFERA" serve --port 0 --model "draft=$ROOT/austen-draft-q8_0.gguf" --allow-repository-paths --model-root "$ROOT" \
  --llm-slots 2 --llm-ctx 512 2>"$LOG" &
PID=$!
trap 'kill $PID 2>/dev/null; wait $PID 2>/dev/null; rm -rf "$WORK"' EXIT
URL=""
for _ in $(seq 1 200); do
  URL=$(grep -o 'listening on http://[^ ]*' "$LOG" 2>/dev/null | sed 's/listening on //' || true)
  [ -n "$URL" ] && break
  kill -0 $PID 2>/dev/null || { cat "$LOG"; exit 1; }
  sleep 0.1
done
[ -n "$URL" ] || { cat "$LOG"; echo "server did not start"; exit 1; }
models() { curl -s "$URL/v1/models" | jq -c '[.data[].id] | sort'; }
index() { curl -s -X POST "$URL/v2/repository/index" | jq -c '[.[] | select(.kind == "gguf") | .name] | sort'; }
load() { curl -s -o "$WORK/load.out" -w '%{http_code}' -X POST "$URL/v2/repository/models/$1/load" ${2:+-d "$2"}; }
unload() { curl -s -o "$WORK/unload.out" -w '%{http_code}' -X POST "$URL/v2/repository/models/$1/unload"; }
complete() { # MODEL PROMPT MAX -> text (or the HTTP error body)
  curl -s "$URL/v1/completions" -d "$(jq -nc --arg m "$1" --arg p "$2" --argjson n "$3" \
    '{model:$m, prompt:$p, max_tokens:$n, temperature:0}')" | jq -r '.choices[0].text // .error.message'
}
P="Elizabeth looked at her sister and"

[ "$(models)" = '["draft"]' ] && ok "/v1/models: the --model GGUF" || bad "/v1/models: $(models)"
[ "$(index)" = '["draft"]' ] && ok "index lists the GGUF model" || bad "index: $(curl -s -X POST "$URL/v2/repository/index")"
# KServe health with only a GGUF model served: the server and the model are ready (DESIGN.md §5)
code=$(curl -s -o /dev/null -w '%{http_code}' "$URL/v2/health/ready")
[ "$code" = 200 ] && ok "GET /v2/health/ready with only a GGUF model: 200" || bad "/v2/health/ready: $code"
code=$(curl -s -o "$WORK/ready.out" -w '%{http_code}' "$URL/v2/models/draft/ready")
[ "$code" = 200 ] && [ "$(jq -c . "$WORK/ready.out")" = '{"name":"draft","ready":true}' ] &&
  ok "GET /v2/models/draft/ready (GGUF): 200 ready" || bad "/v2/models/draft/ready: $code $(cat "$WORK/ready.out")"
code=$(curl -s -o /dev/null -w '%{http_code}' "$URL/v2/models/nosuch/ready")
[ "$code" = 400 ] && ok "GET /v2/models/nosuch/ready: 400" || bad "/v2/models/nosuch/ready: $code"

# load by a file under --model-root
c=$(load target '{"parameters":{"ref":"austen-target-q8_0.gguf"}}')
[ "$c" = 200 ] && ok "load target (file under --model-root): 200" || bad "load target: $c $(cat "$WORK/load.out")"
[ "$(models)" = '["draft","target"]' ] && ok "/v1/models after load" || bad "/v1/models after load: $(models)"
[ "$(index)" = '["draft","target"]' ] && ok "index after load" || bad "index after load"
want=$(cli "$ROOT/austen-target-q8_0.gguf" "$P" 24)
got=$(complete target "$P" 24)
[ "$got" = "$want" ] && ok "loaded target answers like infera generate" || bad "target: '$got' != '$want'"

# a file outside the root is refused
c=$(load evil "{\"parameters\":{\"ref\":\"$M/austen-draft-f32.gguf\"}}")
[ "$c" = 404 ] && ok "load of a file outside --model-root: 404" || bad "outside the root: $c $(cat "$WORK/load.out")"

# concurrent greedy requests on 2 slots (batched decode) == each alone
prompts=("It is a truth universally acknowledged" "Mr. Darcy" "$P" "My dear Mr. Bennet")
for i in 0 1 2 3; do complete target "${prompts[$i]}" 32 >"$WORK/conc$i" & done
wait $(jobs -p | grep -v "^$PID$") 2>/dev/null || true
same=1
for i in 0 1 2 3; do
  [ "$(cat "$WORK/conc$i")" = "$(cli "$ROOT/austen-target-q8_0.gguf" "${prompts[$i]}" 32)" ] || same=0
done
[ $same = 1 ] && ok "4 concurrent requests on 2 slots == each alone (CLI)" || bad "concurrent != alone"

# token metrics under batching (a fresh model: its own counters): 4 concurrent requests on 2 slots
c=$(load m '{"parameters":{"ref":"austen-target-q8_0.gguf"}}')
for i in 0 1 2 3; do
  curl -s "$URL/v1/completions" -d "$(jq -nc --arg p "${prompts[$i]}" '{model:"m", prompt:$p, max_tokens:80, temperature:0}')" \
    >"$WORK/m$i.json" &
done
wait $(jobs -p | grep -v "^$PID$") 2>/dev/null || true
METRICS=$(curl -s "$URL/metrics")
metric() { echo "$METRICS" | grep -F "$1{model_name=\"m\"${2:-}}" | awk '{print $2}'; }
usage=$(jq -s '[(map(.usage.prompt_tokens) | add), (map(.usage.completion_tokens) | add)] | @tsv' -r "$WORK"/m?.json)
read -r up uc <<<"$usage"
exp="$up $uc 4 4 4 4 0 0"
success=$(($(metric vllm:request_success_total ',finished_reason="stop"') + $(metric vllm:request_success_total ',finished_reason="length"')))
got="$(metric vllm:prompt_tokens_total) $(metric vllm:generation_tokens_total) $success"
got="$got $(metric vllm:time_to_first_token_seconds_count) $(metric vllm:time_per_output_token_seconds_count)"
got="$got $(metric vllm:e2e_request_latency_seconds_count) $(metric vllm:num_requests_running) $(metric vllm:num_requests_waiting)"
[ "$c" = 200 ] && [ "$got" = "$exp" ] && ok "metrics == the answers' usage (prompt, generation tokens; 4 TTFT/TPOT/e2e; idle)" ||
  bad "metrics: got '$got', want '$exp'"
steps=$(metric vllm:iteration_tokens_total_count) one=$(metric vllm:iteration_tokens_total_bucket ',le="1"')
seqs=$(metric vllm:iteration_tokens_total_sum) two=$(metric vllm:iteration_tokens_total_bucket ',le="2"')
# every token after a request's first comes from a decode step (80 each unless an EOS came first)
[ "$two" = "$steps" ] && [ "$one" -lt "$steps" ] && [ "$seqs" -ge $((uc - 4)) ] &&
  ok "vllm:iteration_tokens_total: $steps decode steps, $seqs sequences, some steps batched 2 (2 slots)" ||
  bad "iteration histogram: steps $steps, le1 $one, le2 $two, sum $seqs (completion tokens $uc)"
same=1
for i in 0 1 2 3; do
  [ "$(jq -r '.choices[0].text' "$WORK/m$i.json")" = "$(cli "$ROOT/austen-target-q8_0.gguf" "${prompts[$i]}" 80)" ] || same=0
done
[ $same = 1 ] && ok "the 4 batched answers (80 tokens each) == each alone (CLI)" || bad "batched answers != alone"
c=$(unload m)

# unload during a generation: it finishes complete, then the model is gone
curl -s "$URL/v1/completions" -d "{\"model\":\"target\",\"prompt\":\"Mr. Darcy\",\"max_tokens\":300,\"temperature\":0}" \
  >"$WORK/long.json" &
CURL=$!
for _ in $(seq 1 100); do
  curl -s "$URL/metrics" | grep -q '^vllm:num_requests_running{model_name="target"} 1' && break
  sleep 0.05
done
c=$(unload target)
for _ in $(seq 1 40); do kill -0 $CURL 2>/dev/null || break; sleep 0.05; done
n=$(jq -r '.usage.completion_tokens' "$WORK/long.json" 2>/dev/null || echo none)
fin=$(jq -r '.choices[0].finish_reason' "$WORK/long.json" 2>/dev/null || echo none)
[ "$c" = 200 ] && ok "unload target: 200" || bad "unload: $c $(cat "$WORK/unload.out")"
[ "$n" = 300 ] && [ "$fin" = length ] && ok "the generation in flight finished complete (300 tokens) before unload returned" ||
  bad "in-flight generation: $n tokens, finish $fin: $(head -c 300 "$WORK/long.json")"
[ "$(models)" = '["draft"]' ] && ok "/v1/models after unload" || bad "/v1/models after unload: $(models)"
code=$(curl -s -o /dev/null -w '%{http_code}' "$URL/v1/completions" -d '{"model":"target","prompt":"x","max_tokens":1}')
[ "$code" = 404 ] && ok "completion on the unloaded model: 404" || bad "after unload: $code"
code=$(curl -s -o /dev/null -w '%{http_code}' "$URL/v2/models/target/ready")
[ "$code" = 400 ] && ok "GET /v2/models/target/ready after unload: 400" || bad "ready after unload: $code"
c=$(unload target)
[ "$c" = 404 ] && ok "second unload: 404" || bad "second unload: $c"

# by a registry reference; then a reload of that name with another file swaps the model
c=$(load reg '{"parameters":{"ref":"austen@1"}}')
[ "$c" = 200 ] && ok "load reg (registry austen@1): 200" || bad "load reg: $c $(cat "$WORK/load.out")"
codes="$(curl -s -o /dev/null -w '%{http_code}' "$URL/v2/models/reg/versions/1/ready") $(curl -s -o /dev/null -w '%{http_code}' "$URL/v2/models/reg/versions/2/ready")"
[ "$codes" = "200 400" ] && ok "GET /v2/models/reg/versions/{1,2}/ready: 200 400" || bad "versioned ready: $codes"
got=$(complete reg "$P" 16)
[ "$got" = "$(cli "$ROOT/austen-target-q8_0.gguf" "$P" 16)" ] && ok "registry model answers like the file" || bad "reg: $got"
c=$(load reg '{"parameters":{"ref":"austen-draft-q8_0.gguf"}}')
got=$(complete reg "$P" 16)
[ "$c" = 200 ] && [ "$got" = "$(cli "$ROOT/austen-draft-q8_0.gguf" "$P" 16)" ] && ok "reload swaps reg to the draft file" ||
  bad "swap: $c '$got'"
c=$(load reg)
[ "$c" = 200 ] && [ "$(complete reg "$P" 16)" = "$got" ] && ok "reload without a ref reloads the same file" || bad "reload: $c"
[ "$(index)" = '["draft","reg"]' ] && ok "index at the end" || bad "index at the end: $(index)"

# a non-streamed client that closes its connection cancels its generation (libmicrohttpd does not watch a
# suspended connection: the server looks at the socket at each token): 500 tokens of the target take >= 40 ms,
# the client leaves after 5 ms; the request must not finish, and its slot is free again
c=$(load long '{"parameters":{"ref":"austen-target-q8_0.gguf"}}')
metric() { curl -s "$URL/metrics" | awk -v k="vllm:$1{model_name=\"long\"${2:-}}" '$1 == k {print $2}'; }
python3 - "$URL" <<'PY'
import socket, sys, time, urllib.parse
u = urllib.parse.urlparse(sys.argv[1])
body = b'{"model":"long","prompt":"It is","max_tokens":500,"temperature":0}'
s = socket.create_connection((u.hostname, u.port))
s.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n" % len(body) + body)
time.sleep(0.005)
s.close()
PY
for _ in $(seq 1 100); do [ "$(metric num_requests_running)" = 0 ] && break; sleep 0.05; done
made=$(metric generation_tokens_total)
fin() { metric request_success_total ",finished_reason=\"$1\""; }
[ "$c" = 200 ] && [ "$(metric num_requests_running)" = 0 ] && [ "$(fin stop) $(fin length)" = "0 0" ] &&
  [ "$(fin abort)" -le 1 ] && [ "${made:-0}" -lt 500 ] &&
  ok "a non-streamed client that disconnects cancels its generation ($made of 500 tokens made, finished_reason abort)" ||
  bad "disconnect: load $c, running $(metric num_requests_running), stop/length/abort $(fin stop)/$(fin length)/$(fin abort), tokens $made"
[ "$(complete long "$P" 16)" = "$(cli "$ROOT/austen-target-q8_0.gguf" "$P" 16)" ] &&
  ok "the next request on that model is answered right" || bad "after the disconnect"
stop_child $PID || true

# the queue limit: one slot and a queue of one; of 6 requests sent at once (500 tokens each, >= 40 ms), the
# first runs, one waits, the others get 429 in OpenAI's shape (code queue_full) with Retry-After
"$INFERA" serve --port 0 --model "q=$ROOT/austen-target-q8_0.gguf" --llm-slots 1 --llm-queue 1 --llm-ctx 512 2>"$LOG" &
PID=$!
URL=""
for _ in $(seq 1 200); do
  URL=$(grep -o 'listening on http://[^ ]*' "$LOG" 2>/dev/null | sed 's/listening on //' || true)
  [ -n "$URL" ] && break
  sleep 0.1
done
# (a loaded machine may start the six curls too far apart for any to find the queue full: up to 5 bursts)
for burst in 1 2 3 4 5; do
  rm -f "$WORK"/h? "$WORK"/q?.json
  for i in 1 2 3 4 5 6; do
    curl -s -D "$WORK/h$i" -o "$WORK/q$i.json" "$URL/v1/completions" \
      -d '{"model":"q","prompt":"It is","max_tokens":500,"temperature":0}' &
  done
  wait $(jobs -p | grep -v "^$PID$") 2>/dev/null || true
  n200=$(cat "$WORK"/h? 2>/dev/null | grep -c '^HTTP/1.1 200' || true)
  n429=$(cat "$WORK"/h? 2>/dev/null | grep -c '^HTTP/1.1 429' || true)
  [ "$n429" -ge 1 ] && break
done
# (each answer checked in an if: under set -e and pipefail a last answer of 200 must not end the script)
shaped=$(for i in 1 2 3 4 5 6; do if grep -q '^HTTP/1.1 429' "$WORK/h$i"; then
  jq -r '.error.code + "/" + .error.type' "$WORK/q$i.json"; grep -ci '^retry-after: 1' "$WORK/h$i" || true; fi; done |
  sort -u | tr '\n' ' ')
[ "$n200" -ge 1 ] && [ "$n429" -ge 1 ] && [ $((n200 + n429)) = 6 ] && [ "$shaped" = "1 queue_full/rate_limit_error " ] &&
  ok "queue full: $n200 answered, $n429 refused with 429 queue_full and Retry-After" ||
  bad "queue limit: $n200 x 200, $n429 x 429, '$shaped'"
stop_child $PID || true
trap 'rm -rf "$WORK"' EXIT
[ "$FAIL" = 0 ] || tail -20 "$LOG"
check_done
