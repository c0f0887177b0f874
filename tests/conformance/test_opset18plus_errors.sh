#!/usr/bin/env bash
# The opset 18-26 models Infera must refuse, each with a precise error: for every
# tests/conformance/data/opset18plus_errors/<name>.onnx (written by gen_opset18plus.py),
# `infera run` must fail, without crashing, and its message must contain <name>.expect.
# Also checks that the optimizer's fusions apply to opset 18+ graphs (LayerNorm with
# Reduce* axes as inputs, MatMul + Add + native Gelu).
# Usage: test_opset18plus_errors.sh INFERA
set -u
INFERA=${1:?usage: $0 INFERA}
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/../check.sh"
DIR=$HERE/data/opset18plus_errors
SUITE=$HERE/data/opset18plus
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
for model in "$DIR"/*.onnx; do
  name=$(basename "$model" .onnx)
  want=$(cat "$DIR/$name.expect")
  msg=$("$INFERA" run "$model" --output-dir "$OUT" 2>&1)
  rc=$?
  if [ $rc -eq 0 ]; then
    bad "$name" "accepted; expected an error containing: $want"
  elif [ $rc -gt 128 ]; then
    bad "$name" "crashed (exit $rc): $msg"
  elif [[ "$msg" != *"$want"* ]]; then
    bad "$name" "error '$msg' does not contain '$want'"
  else
    ok "$name"
  fi
done
# fusions on opset 18+ graphs: the profile's op types show the fused node, not the pattern
check_fused() { # test-name fused-op
  local prof
  prof=$("$INFERA" bench "$SUITE/test_$1/model.onnx" --iters 2 --warmup 1 --profile 2>&1)
  if grep -q "^  $2 " <<<"$prof" && ! grep -qE "^  (ReduceMean|Gelu|MatMul) " <<<"$prof"; then
    ok "fused $1 -> $2"
  else
    bad "$1 is not fused into $2"; echo "$prof" | sed -n '/by op type/,$p'
  fi
}
check_fused fusion_layernorm_reduce_axes_input_opset18 LayerNormalization
check_fused fusion_layernorm_reduce_axes_input_opset23 LayerNormalization
check_fused fusion_matmul_add_gelu_opset20 FusedMatMul
# `infera conformance` run from outside the source tree, without --opset-dir or --expected-failures:
# the suite and the list of known failures are found in the tree the binary was built from
cd "$OUT" || exit 1
msg=$(env -u INFERA_EXPECTED_FAILURES "$INFERA" conformance --suite opset18plus --filter '^test_acos_opset22$' 2>&1)
rc=$?
check "conformance finds the opset18plus suite from another directory" '[ $rc -eq 0 ] && [[ "$msg" == *"1 passed, 0 failed"* ]]' "$msg"
if [ -d /usr/share/libonnx-testdata/data/simple ]; then
  msg=$(env -u INFERA_EXPECTED_FAILURES "$INFERA" conformance --suite simple --filter '^test_gradient_of_add$' 2>&1)
  rc=$?
  check "conformance reads the checked-in known failures by default" \
      '[ $rc -eq 0 ] && [[ "$msg" == *"known failures: 1; unexpected failures: 0;"* ]]' "$msg"
fi
check_done
