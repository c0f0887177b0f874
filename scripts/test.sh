#!/usr/bin/env bash
# Runs every test: installs dependencies, builds the release and the
# sanitizer (ASan + UBSan) configurations, runs the whole ctest suite on
# both (unit, conformance, integration), then fuzzes the decoders of
# untrusted bytes (tests/fuzz/) for a short while.  Exit status 0 only if everything passed.
#   FUZZ_SECONDS=N   seconds per fuzz target (default 60; 0 skips fuzzing)
#   INFERA_REQUIRE_SERVICES=1   a service the tests start (Redis, PostgreSQL,
#       mosquitto) or the en_US locale missing is a failure, not a skip
#       (.ci/run sets it on CI, which installs them all)
#   INFERA_LLAMA_PEER=0   don't build the llama.cpp peer (its comparisons skip)
# After each ctest run the tests it skipped (exit 77, SKIP_RETURN_CODE) are
# listed, so a test that could not run is never mistaken for a pass.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
export LC_ALL=C.UTF-8
status=0

# run_ctest BUILD_DIR [ctest args]: ctest, then the list of the tests it skipped
run_ctest() {
  local dir=$1 rc=0
  shift
  ctest --test-dir "$dir" "$@" 2>&1 | tee "$dir/ctest.out" || rc=1
  local skipped
  skipped=$(grep -E '^[[:space:]]*[0-9]+ - .*\((Skipped|Not Run|Disabled)\)' "$dir/ctest.out" || true)
  if [ -n "$skipped" ]; then
    echo "== skipped tests in $dir (they did not run: not a pass):"
    echo "$skipped"
  else
    echo "== no skipped tests in $dir"
  fi
  return "$rc"
}

echo "== release build"
scripts/build.sh release

# the llama.cpp peer the LLM tests compare with (greedy text, llama-tokenize ids, llama-quantize files): built
# once into ~/.cache/infera (~5.5 min on 2 vCPUs from scratch, nothing on a re-run); without it those checks SKIP.
#   INFERA_LLAMA_PEER=0 skips the build (the checks then list as skipped, never a pass)
if [ "${INFERA_LLAMA_PEER:-1}" = 0 ]; then
  echo "== SKIP the llama.cpp peer build (INFERA_LLAMA_PEER=0): its comparisons will skip"
else
  echo "== llama.cpp peer (bench/llm/build_llama_cpp.sh --tests)"
  bench/llm/build_llama_cpp.sh --tests >/dev/null || { echo "== llama.cpp peer build FAILED"; status=1; }
fi
run_ctest build --output-on-failure -j2 || status=1

# aarch64 (docs/edge-aarch64.md): cross-built (with the edge runtime libinfera_edge.a), the `aarch64` subset
# under qemu-user.
#   INFERA_AARCH64=0 skips it (printed as SKIP, never a pass)
if [ "${INFERA_AARCH64:-1}" = 0 ]; then
  echo "== SKIP aarch64 build and tests (INFERA_AARCH64=0): NOT tested"
elif AARCH64_TARGETS="infera infera_edge npy_compare kernels_test_vmath kernels_test_neon_gemm kernels_test_conv test_crc32c" scripts/build.sh aarch64; then
  echo "== aarch64 tests (qemu-user)"
  run_ctest build-aarch64 -L aarch64 --output-on-failure -j2 || status=1
else
  echo "== aarch64 build FAILED"
  status=1
fi

echo "== sanitizer build (ASan + UBSan)"
scripts/build.sh asan
ASAN_OPTIONS=detect_leaks=1:abort_on_error=0:allocator_may_return_null=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  run_ctest build-asan --output-on-failure -j2 || status=1

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
  # hostile seeds (issue 27): nesting at and past the limits, external data leaving the folder
  gen="python3 tests/fuzz/gen_hostile.py"
  $gen nested-if 64 "$corpus/nested_if64.onnx"; $gen nested-if 70 "$corpus/nested_if70.onnx"
  $gen nested-type 40 "$corpus/nested_type40.onnx"; $gen loop 4611686018427387904 "$corpus/loop_2p62.onnx"
  $gen external ../outside.bin 0 16 "$corpus/ext_dotdot.onnx"; $gen external /etc/hostname 0 16 "$corpus/ext_abs.onnx"
  $gen external w.bin 9223372036854775000 16 "$corpus/ext_huge_offset.onnx"
  # a fuzzed shape may ask for terabytes: malloc's NULL must reach our ENOMEM path, not abort ASan
  export ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}allocator_may_return_null=1
  # a failing input is kept in build-fuzz/ (the corpus folders are removed below)
  (cd "$corpus" && "$OLDPWD/build-fuzz/fuzz_model_load" -max_total_time="$fuzz_seconds" -rss_limit_mb=4096 \
     -timeout=20 -artifact_prefix="$OLDPWD/build-fuzz/model-" "$corpus" 2>&1 | tail -3) || status=1
  pbcorpus=$(mktemp -d)
  cp tests/models/*_input.pb "$pbcorpus"/
  $gen nested-seq 10 "$pbcorpus/nested_seq10.pb"; $gen nested-seq 70 "$pbcorpus/nested_seq70.pb"
  (cd "$pbcorpus" && "$OLDPWD/build-fuzz/fuzz_tensor_pb" -max_total_time="$fuzz_seconds" -rss_limit_mb=4096 \
     -artifact_prefix="$OLDPWD/build-fuzz/tensor-" "$pbcorpus" 2>&1 | tail -3) || status=1
  # the nesting check in front of protobuf-c, seeded with models and nested values at and past the limits
  wirecorpus=$(mktemp -d)
  cp "$corpus"/nested_* "$pbcorpus"/nested_* "$wirecorpus"/
  $gen nested-seq 64 "$wirecorpus/nested_seq64.pb"; $gen nested-type 33 "$wirecorpus/nested_type33.onnx"
  (cd "$wirecorpus" && "$OLDPWD/build-fuzz/fuzz_wire_scan" -max_total_time="$fuzz_seconds" -rss_limit_mb=4096 \
     -artifact_prefix="$OLDPWD/build-fuzz/wire-" "$wirecorpus" 2>&1 | tail -3) || status=1
  ggufcorpus=$(mktemp -d)
  cp tests/fuzz/seeds/*.gguf tests/fuzz/regressions/*.gguf "$ggufcorpus"/ 2>/dev/null || true
  (cd "$ggufcorpus" && "$OLDPWD/build-fuzz/fuzz_gguf" -max_total_time="$fuzz_seconds" -rss_limit_mb=4096 \
     -artifact_prefix="$OLDPWD/build-fuzz/gguf-" "$ggufcorpus" 2>&1 | tail -3) || status=1
  # the KServe V2 gRPC request decoder (serve --grpc-port), seeded with typed and raw requests
  grpccorpus=$(mktemp -d)
  /usr/bin/python3 tests/fuzz/gen_grpc_seeds.py "$grpccorpus" || true
  cp tests/fuzz/regressions/grpc_*.pb "$grpccorpus"/
  (cd "$grpccorpus" && "$OLDPWD/build-fuzz/fuzz_grpc_msg" -max_total_time="$fuzz_seconds" -rss_limit_mb=4096 \
     -artifact_prefix="$OLDPWD/build-fuzz/grpc-" "$grpccorpus" 2>&1 | tail -3) || status=1
  # the bundle loader (issue 22), seeded with bundles of the test models; a short run
  bundlecorpus=$(mktemp -d)
  for m in mlp cnn fold attention conv_add; do # cnn and conv_add: CONVPACK sections
    build/infera compile "tests/models/$m.onnx" -o "$bundlecorpus/$m.bundle" >/dev/null 2>&1 || true
  done
  cp tests/fuzz/regressions/*.bundle "$bundlecorpus"/ 2>/dev/null || true
  (cd "$bundlecorpus" && "$OLDPWD/build-fuzz/fuzz_bundle" -max_total_time="$(( fuzz_seconds < 30 ? fuzz_seconds : 30 ))" \
     -rss_limit_mb=4096 -timeout=20 -artifact_prefix="$OLDPWD/build-fuzz/bundle-" "$bundlecorpus" 2>&1 | tail -3) || status=1
  # what serve decodes of an HTTP request (framing, chunked bodies, /infer and /records bodies); a short run
  httpcorpus=$(mktemp -d)
  cp tests/fuzz/seeds/http_*.bin "$httpcorpus"/
  (cd "$httpcorpus" && "$OLDPWD/build-fuzz/fuzz_http_request" -max_total_time="$(( fuzz_seconds < 30 ? fuzz_seconds : 30 ))" \
     -rss_limit_mb=4096 -timeout=20 -artifact_prefix="$OLDPWD/build-fuzz/http-" "$httpcorpus" 2>&1 | tail -3) || status=1
  rm -rf "$corpus" "$pbcorpus" "$wirecorpus" "$ggufcorpus" "$grpccorpus" "$bundlecorpus" "$httpcorpus"
  # the decoders of files users pass and of every prompt: .npy tensors, pipeline specs with their records,
  # CSV/JSONL sources, monitoring rules, the tokenizers on any bytes (with llama.cpp's vocabularies, BPE
  # included, when installed: the tokenizer_vectors test installs them); seeds tests/fuzz/seeds/PREFIX_*,
  # regressions tests/fuzz/regressions/PREFIX-*
  vocabs=$(bench/llm/build_llama_cpp.sh --src-only 2>/dev/null | sed -n 's/^LLAMA_CPP_SRC=//p')
  vocabs=$(ls "${vocabs:-/nonexistent}"/models/ggml-vocab-*.gguf 2>/dev/null | tr '\n' ':')
  for t in npy:npy tokenizer:tok pipeline:pipeline record_source:records monitor_rules:rules; do
    target=${t%%:*} prefix=${t#*:}
    dcorpus=$(mktemp -d)
    cp tests/fuzz/seeds/"$prefix"_* "$dcorpus"/
    cp tests/fuzz/regressions/"$prefix"-* "$dcorpus"/ 2>/dev/null || true
    (cd "$dcorpus" && INFERA_FUZZ_VOCABS="$vocabs" "$OLDPWD/build-fuzz/fuzz_$target" -max_total_time="$fuzz_seconds" \
       -rss_limit_mb=4096 -timeout=20 -artifact_prefix="$OLDPWD/build-fuzz/$prefix-" "$dcorpus" 2>&1 | tail -3) || status=1
    rm -rf "$dcorpus"
  done
fi

if [ "$status" -eq 0 ]; then echo "ALL TESTS PASSED"; else echo "SOME TESTS FAILED"; fi
exit "$status"
