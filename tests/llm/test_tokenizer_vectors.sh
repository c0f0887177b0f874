#!/usr/bin/env bash
# Runs test_tokenizer_vectors over every ggml-vocab-*.gguf of llama.cpp (installed outside the repo by
# bench/llm/build_llama_cpp.sh --src-only: npm node-llama-cpp@3.21.1 -> its llama.cpp git bundle).
# Exit 77 (ctest SKIP) when the vectors cannot be installed (no npm / offline).
set -u
BIN="$1"
HERE="$(cd "$(dirname "$0")" && pwd)"
. "$HERE/../check.sh"
SRC=$("$HERE/../../bench/llm/build_llama_cpp.sh" --src-only 2>/dev/null | sed -n 's/^LLAMA_CPP_SRC=//p')
if [ -z "$SRC" ] || ! ls "$SRC"/models/ggml-vocab-*.gguf >/dev/null 2>&1; then
    skip "llama.cpp tokenizer vectors not available (npm node-llama-cpp@3.21.1)"
fi
exec "$BIN" "$SRC"/models/ggml-vocab-*.gguf
