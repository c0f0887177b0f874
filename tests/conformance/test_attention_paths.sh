#!/usr/bin/env bash
# Which kernel ONNX's Attention takes (ops/ref/attention_onnx.c): the fused float32 kernel wherever the node
# fits it (float32; no softcap, sliding window, qk_matmul_output or nonpad_kv_seqlen; a mask over every key),
# the double reference kernel otherwise.  Each test_attention_* case of the opset 18+ suite (ONNX Runtime's
# outputs, tests/conformance/gen_opset18plus.py) runs with INFERA_LOG=debug; the case must pass and its node
# must log the kernel listed here.  (Thread counts: tests/kernels/test_attention_gqa.c.)
# Usage: test_attention_paths.sh INFERA
set -u
INFERA=${1:?usage: $0 INFERA}
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/../check.sh"
FUSED="4d_gqa 4d_causal_scale 4d_bool_mask 4d_float_mask_broadcast 3d_heads past_present_causal
       fully_masked_row opset26 fused_llama_gqa_causal fused_causal_short_q fused_3d_mqa_bool fused_past_present_3d
       fused_present_no_past"
REFERENCE="softcap_qk_softmax:softcap qk_with_bias:qk_matmul_output nonpad:nonpad_kv_seqlen"
run_case() { # NAME -> the run's output (PASS line and debug lines)
  INFERA_LOG=debug "$INFERA" conformance --suite opset18plus --opset-dir "$HERE/data" \
    --filter "^test_attention_$1(_opset2[0-9])?\$" 2>&1
}
for name in $FUSED; do
  out=$(run_case "$name")
  if [[ "$out" != *"PASS  opset18plus/test_attention_$name"* ]]; then bad "$name" "did not pass: $out"
  elif [[ "$out" != *"the fused float32 kernel"* || "$out" == *"the reference kernel"* ]]; then
    bad "$name" "not on the fused kernel: $out"
  else ok "$name fused"; fi
done
for item in $REFERENCE; do
  name=${item%%:*} why=${item#*:}
  out=$(run_case "$name")
  if [[ "$out" != *"PASS  opset18plus/test_attention_$name"* ]]; then bad "$name" "did not pass: $out"
  elif [[ "$out" != *"the reference kernel ($why"* || "$out" == *"the fused float32 kernel"* ]]; then
    bad "$name" "not on the reference kernel for $why: $out"
  else ok "$name reference ($why)"; fi
done
check_done
