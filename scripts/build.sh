#!/usr/bin/env bash
# Builds Infera.  Usage: scripts/build.sh [release|asan|fuzz]   (default release)
#   release  -> build/        optimised (-O3), what users run
#   asan     -> build-asan/   AddressSanitizer + UndefinedBehaviorSanitizer
#   fuzz     -> build-fuzz/   clang + libFuzzer targets (with ASan/UBSan)
set -euo pipefail
cd "$(dirname "$0")/.."
kind=${1:-release}
jobs=$(nproc)
case "$kind" in
  release) cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
           cmake --build build -j"$jobs" ;;
  asan)    cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DINFERA_SANITIZE=ON >/dev/null
           cmake --build build-asan -j"$jobs" ;;
  fuzz)    CC=clang cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=Debug -DINFERA_SANITIZE=ON -DINFERA_FUZZ=ON >/dev/null
           cmake --build build-fuzz -j"$jobs" --target fuzz_model_load fuzz_tensor_pb fuzz_wire_scan fuzz_gguf fuzz_grpc_msg \
             fuzz_bundle ;;
  *) echo "usage: scripts/build.sh [release|asan|fuzz]" >&2; exit 2 ;;
esac
