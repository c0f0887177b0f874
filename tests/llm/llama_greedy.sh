#!/usr/bin/env bash
# tests/llm/llama_greedy.sh -- the llama.cpp peer's greedy text for a prompt, on one thread.
# Prints PROMPT followed by the continuation (what llama-simple prints), so tests can compare it with
# `infera generate`.  Runs bench/llm/llama_greedy.c (llama-simple's loop on the peer's libllama with one thread;
# built by bench/llm/build_llama_cpp.sh, here on first use): llama-simple itself always starts 4 threads (39 s to
# 3 minutes per 12-token answer on 2 vCPUs) and llama-completion's asynchronous log can lose its last tokens.
# Usage: tests/llm/llama_greedy.sh LLAMA_BIN_DIR MODEL N_TOKENS PROMPT
set -euo pipefail
bin=$1 model=$2 n=$3 prompt=$4
root=$(cd "$(dirname "$0")/../.." && pwd)
if [ ! -x "$bin/llama-greedy-1t" ] || [ "$root/bench/llm/llama_greedy.c" -nt "$bin/llama-greedy-1t" ]; then
    "$root/bench/llm/build_llama_cpp.sh" >/dev/null
fi
printf '%s' "$prompt"
"$bin/llama-greedy-1t" "$model" "$n" "$prompt"
echo
