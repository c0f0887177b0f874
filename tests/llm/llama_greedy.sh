#!/usr/bin/env bash
# tests/llm/llama_greedy.sh -- the llama.cpp peer's greedy text for a prompt, on one thread.
# Prints PROMPT followed by the continuation (what llama-simple prints), so tests can compare it with
# `infera generate`.  llama-simple cannot be told a thread count (it always starts GGML_DEFAULT_N_THREADS = 4
# threads: on a 2-vCPU machine one 12-token answer took 39 s to 3 minutes instead of 0.5 s), so this runs the
# peer's prompt CLI, llama-completion, with -t 1.  Its own echo of the prompt is left out (it drops special
# tokens such as <|im_start|>); " [end of text]" (its end-of-sequence mark) and the trailing newlines are removed.
# Usage: tests/llm/llama_greedy.sh LLAMA_BIN_DIR MODEL N_TOKENS PROMPT
set -euo pipefail
bin=$1 model=$2 n=$3 prompt=$4
out=$("$bin/llama-completion" -m "$model" -n "$n" -p "$prompt" -t 1 -tb 1 --temp 0 -no-cnv --simple-io \
    --no-warmup --no-display-prompt </dev/null 2>/dev/null)
out=${out%$'\n'}
out=${out%$'\n'}
out=${out% \[end of text\]}
printf '%s%s\n' "$prompt" "$out"
