#!/usr/bin/env bash
# Builds Infera.  Usage: scripts/build.sh [release|asan|fuzz|aarch64]   (default release)
#   release  -> build/        optimised (-O3), what users run
#   asan     -> build-asan/   AddressSanitizer + UndefinedBehaviorSanitizer
#   fuzz     -> build-fuzz/   clang + libFuzzer targets (with ASan/UBSan)
#   aarch64  -> build-aarch64/ cross-compiled for 64-bit ARM (cmake/aarch64-linux-gnu.cmake;
#               scripts/aarch64-sysroot.sh installs the cross gcc and qemu-user and unpacks the
#               arm64 libraries into build-aarch64/sysroot); tests: ctest -L aarch64 (under qemu)
set -euo pipefail
cd "$(dirname "$0")/.."
kind=${1:-release}
jobs=$(nproc)
# ccache (scripts/install-deps.sh installs it) makes a rebuild of unchanged sources a cache hit, also from
# another clone of the repo (paths taken relative to it); without ccache every build compiles everything
if command -v ccache >/dev/null; then
  export CMAKE_C_COMPILER_LAUNCHER=ccache CCACHE_BASEDIR=$PWD CCACHE_NOHASHDIR=1 # (debug info names the first clone)
fi
case "$kind" in
  release) cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
           cmake --build build -j"$jobs" ;;
  asan)    cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DINFERA_SANITIZE=ON >/dev/null
           cmake --build build-asan -j"$jobs" ;;
  fuzz)    CC=clang cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=Debug -DINFERA_SANITIZE=ON -DINFERA_FUZZ=ON >/dev/null
           cmake --build build-fuzz -j"$jobs" --target fuzz_model_load fuzz_tensor_pb fuzz_wire_scan fuzz_gguf fuzz_grpc_msg \
             fuzz_bundle fuzz_http_request fuzz_npy fuzz_tokenizer fuzz_pipeline fuzz_record_source fuzz_monitor_rules ;;
  aarch64) scripts/aarch64-sysroot.sh build-aarch64
           cmake -S . -B build-aarch64 -DCMAKE_BUILD_TYPE=Release \
                 -DCMAKE_TOOLCHAIN_FILE="$PWD/cmake/aarch64-linux-gnu.cmake" >/dev/null
           cmake --build build-aarch64 -j"$jobs" ${AARCH64_TARGETS:+--target $AARCH64_TARGETS} ;;
  *) echo "usage: scripts/build.sh [release|asan|fuzz|aarch64]" >&2; exit 2 ;;
esac
