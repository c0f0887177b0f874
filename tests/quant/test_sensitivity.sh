#!/usr/bin/env bash
# test_sensitivity.sh -- `infera quantize --sensitivity / --min-sqnr / --sensitivity-json` against ONNX Runtime and
# numpy (tests/quant/sensitivity_check.py: an MLP with one deliberately sensitive layer; each node-alone file run
# in ORT, SQNR / max abs error / top-1 computed in numpy; --min-sqnr's file checked with onnx; bad input).
#   tests/quant/test_sensitivity.sh INFERA
# The oracle is Python's onnxruntime with onnx and numpy (tests/quant/ort_python.sh finds it; skip (77) without).
set -u
INFERA=$1
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/../check.sh"
. "$HERE/ort_python.sh"
# as test_quantize.sh: ORT's vpmaddubsw kernels (x86 without VNNI) saturate with 8-bit weights, 7-bit ones are exact
RR=
if grep -q '^flags.* avx2' /proc/cpuinfo 2>/dev/null && ! grep -qE '^flags.* (avx512_vnni|avx_vnni)' /proc/cpuinfo; then
    RR=--reduce-range
fi
D=$(mktemp -d)
trap 'rm -rf "$D"' EXIT
check_lines "$PY" "$HERE/sensitivity_check.py" "$INFERA" "$D" $RR
check_done
