#!/usr/bin/env bash
# Builds the llama.cpp peer (CPU only) from the git bundle shipped in npm node-llama-cpp@3.21.1.
# Everything lives outside the repo in a cache folder (default ~/.cache/infera); a re-run with a finished build
# only prints the tool paths. Prints "NAME=PATH" lines for llama-tokenize, llama-quantize, llama-simple,
# llama-completion, llama-bench, llama-speculative-simple, LLAMA_GREEDY and LLAMA_LOGITS (bench/llm/llama_greedy.c
# and llama_logits.c built against the peer's libllama: its greedy text and its logits on one thread, for the tests) and LLAMA_CPP_SRC=<source dir> (its
# models/ggml-vocab-* are the tokenizer test vectors).
# (llama-completion is the prompt CLI of this llama.cpp version; llama-cli is not built there).
# Usage: bench/llm/build_llama_cpp.sh [--src-only|--tests|--server]   (--src-only: clone the source only, no build;
#        --tests: only the tools the tests use -- llama-tokenize, llama-quantize, llama-simple, llama-completion and
#        the greedy driver -- as scripts/test.sh does (~5.5 min on 2 vCPUs from scratch);
#        --server: also build llama-server)
set -euo pipefail
CACHE="${INFERA_CACHE:-$HOME/.cache/infera}"
NPM_DIR="$CACHE/npm-llama"
SRC="$CACHE/llama.cpp"
BUILD="$SRC/build-cpu"
PKG="node-llama-cpp@3.21.1"
JOBS="${JOBS:-2}"
mkdir -p "$CACHE"

if [ ! -f "$NPM_DIR/node_modules/node-llama-cpp/llama/gitRelease.bundle" ]; then
    mkdir -p "$NPM_DIR"
    (cd "$NPM_DIR" && npm i -E "$PKG" --ignore-scripts --no-audit --no-fund >/dev/null) \
        || { echo "build_llama_cpp: npm install of $PKG failed" >&2; exit 1; }
fi
if [ ! -f "$SRC/CMakeLists.txt" ]; then
    rm -rf "$SRC"
    git clone -q "$NPM_DIR/node_modules/node-llama-cpp/llama/gitRelease.bundle" "$SRC" 2>/dev/null \
        || { echo "build_llama_cpp: cloning the llama.cpp bundle failed" >&2; exit 1; }
fi
echo "LLAMA_CPP_SRC=$SRC"
[ "${1:-}" = "--src-only" ] && exit 0

# (this llama.cpp has no llama-cli target: llama-completion is its prompt-completion CLI)
TOOLS="llama-tokenize llama-quantize llama-simple llama-completion"
[ "${1:-}" = "--tests" ] || TOOLS="$TOOLS llama-bench llama-speculative-simple"
need=0
for t in $TOOLS; do [ -x "$BUILD/bin/$t" ] || need=1; done
if [ "$need" = 1 ]; then
    cmake -S "$SRC" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DGGML_CUDA=OFF -DGGML_METAL=OFF -DGGML_VULKAN=OFF \
        -DGGML_NATIVE=ON -DGGML_OPENMP=OFF -DLLAMA_CURL=OFF -DLLAMA_BUILD_SERVER=OFF -DLLAMA_BUILD_TESTS=OFF \
        -DBUILD_SHARED_LIBS=OFF >"$BUILD.cmake.log" 2>&1 \
        || { echo "build_llama_cpp: cmake configure failed, see $BUILD.cmake.log" >&2; exit 1; }
    for t in $TOOLS; do
        cmake --build "$BUILD" -j"$JOBS" --target "$t" >>"$BUILD.build.log" 2>&1 \
            || { echo "build_llama_cpp: building $t failed, see $BUILD.build.log" >&2; exit 1; }
    done
fi
for t in $TOOLS; do
    name=$(echo "$t" | tr 'a-z-' 'A-Z_')
    echo "$name=$BUILD/bin/$t"
done
# the one-thread drivers of the tests (tests/llm/llama_greedy.sh: greedy text; test_gemma3.sh: logits), each rebuilt
# when its source is newer
build_driver() { # SOURCE BINARY (also rebuilt when their shared llama_driver.h is newer)
    if [ ! -x "$2" ] || [ "$1" -nt "$2" ] || [ "$(dirname "$1")/llama_driver.h" -nt "$2" ]; then
        ${CC:-cc} -x c -O2 -std=c11 -Wall -Wextra -I"$SRC/include" -I"$SRC/ggml/include" "$1" -x none \
            "$BUILD/src/libllama.a" "$BUILD/ggml/src/libggml.a" "$BUILD/ggml/src/libggml-cpu.a" \
            "$BUILD/ggml/src/libggml-base.a" -lstdc++ -lpthread -lm -o "$2.tmp" >>"$BUILD.build.log" 2>&1 &&
            mv "$2.tmp" "$2" ||
            { echo "build_llama_cpp: building $2 failed, see $BUILD.build.log" >&2; exit 1; }
    fi
}
HERE="$(cd "$(dirname "$0")" && pwd)"
GREEDY="$BUILD/bin/llama-greedy-1t"
build_driver "$HERE/llama_greedy.c" "$GREEDY"
build_driver "$HERE/llama_logits.c" "$BUILD/bin/llama-logits-1t"
echo "LLAMA_GREEDY=$GREEDY"
echo "LLAMA_LOGITS=$BUILD/bin/llama-logits-1t"
# --server: also llama-server (the continuous-batching peer of bench/llm/serve_batch.sh; a long build)
if [ "${1:-}" = "--server" ]; then
    if [ ! -x "$BUILD/bin/llama-server" ]; then
        cmake -S "$SRC" -B "$BUILD" -DLLAMA_BUILD_SERVER=ON >>"$BUILD.cmake.log" 2>&1 &&
            cmake --build "$BUILD" -j"$JOBS" --target llama-server >>"$BUILD.build.log" 2>&1 ||
            { echo "build_llama_cpp: building llama-server failed, see $BUILD.build.log" >&2; exit 1; }
    fi
    echo "LLAMA_SERVER=$BUILD/bin/llama-server"
fi
