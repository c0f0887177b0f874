#!/usr/bin/env bash
# Runs every test: installs dependencies, builds the release and the
# sanitizer (ASan + UBSan) configurations, runs the whole ctest suite on
# both (unit, conformance, integration), then fuzzes the model and tensor
# decoders for a short while.  Exit status 0 only if everything passed.
#   FUZZ_SECONDS=N   seconds per fuzz target (default 60; 0 skips fuzzing)
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
export LC_ALL=C.UTF-8
status=0

echo "== release build"
scripts/build.sh release
ctest --test-dir build --output-on-failure -j2 || status=1

echo "== sanitizer build (ASan + UBSan)"
scripts/build.sh asan
ASAN_OPTIONS=detect_leaks=1:abort_on_error=0:allocator_may_return_null=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ctest --test-dir build-asan --output-on-failure -j2 || status=1

fuzz_seconds=${FUZZ_SECONDS:-60}
if [ "$fuzz_seconds" -gt 0 ]; then
  echo "== fuzzing the decoders for ${fuzz_seconds}s each"
  scripts/build.sh fuzz
  corpus=$(mktemp -d)
  cp tests/models/*.onnx tests/fuzz/regressions/*.onnx tests/fuzz/seeds/xgb_tiny.* "$corpus"/ 2>/dev/null || true
  for t in add conv_with_strides_padding gemm_default_no_bias reshape_negative_dim if loop11 lstm_defaults; do
    [ -f "/usr/share/libonnx-testdata/data/node/test_$t/model.onnx" ] &&
      cp "/usr/share/libonnx-testdata/data/node/test_$t/model.onnx" "$corpus/node_$t.onnx"
  done
  # a fuzzed shape may ask for terabytes: malloc's NULL must reach our ENOMEM path, not abort ASan
  export ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}allocator_may_return_null=1
  # a failing input is kept in build-fuzz/ (the corpus folders are removed below)
  (cd "$corpus" && "$OLDPWD/build-fuzz/fuzz_model_load" -max_total_time="$fuzz_seconds" -rss_limit_mb=4096 \
     -timeout=20 -artifact_prefix="$OLDPWD/build-fuzz/model-" "$corpus" 2>&1 | tail -3) || status=1
  pbcorpus=$(mktemp -d)
  cp tests/models/*_input.pb "$pbcorpus"/
  (cd "$pbcorpus" && "$OLDPWD/build-fuzz/fuzz_tensor_pb" -max_total_time="$fuzz_seconds" -rss_limit_mb=4096 \
     -artifact_prefix="$OLDPWD/build-fuzz/tensor-" "$pbcorpus" 2>&1 | tail -3) || status=1
  ggufcorpus=$(mktemp -d)
  cp tests/fuzz/seeds/*.gguf tests/fuzz/regressions/*.gguf "$ggufcorpus"/ 2>/dev/null || true
  (cd "$ggufcorpus" && "$OLDPWD/build-fuzz/fuzz_gguf" -max_total_time="$fuzz_seconds" -rss_limit_mb=4096 \
     -artifact_prefix="$OLDPWD/build-fuzz/gguf-" "$ggufcorpus" 2>&1 | tail -3) || status=1
  rm -rf "$corpus" "$pbcorpus" "$ggufcorpus"
fi

if [ "$status" -eq 0 ]; then echo "ALL TESTS PASSED"; else echo "SOME TESTS FAILED"; fi
exit "$status"
