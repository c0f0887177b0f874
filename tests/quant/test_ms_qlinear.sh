#!/usr/bin/env bash
# test_ms_qlinear.sh -- the com.microsoft quantized ops (src/ops/ref/ms_qlinear.c) against ONNX Runtime:
#   - one-node models per op, uint8 and int8, with saturation, rounding ties, broadcasting, per-column QGemm
#     weights, and bad inputs (tests/quant/ms_qlinear_check.py);
#   - the sweep's CNNs / MLP / 1-D conv / transformer (tests/quant/gen_sweep_models.py) quantized by ONNX Runtime's
#     own quantizer (quantize_static QOperator per tensor / per channel, quantize_dynamic), run in Infera and ORT
#     (tests/quant/ms_qoperator_models.py).
#   tests/quant/test_ms_qlinear.sh INFERA
# The oracle is Python's onnxruntime with onnx and numpy: $INFERA_ORT_PYTHON, else the venv scripts/install-deps.sh
# makes ($INFERA_CACHE or ~/.cache/infera, venv-ort-oracle: pinned PyPI onnxruntime 1.20.1, onnx 1.16.2), else python3; skip (77) when none imports them.  The model part
# also needs Debian's python3-torch (for gen_sweep_models.py; skipped without it).
set -u
INFERA=$1
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/../check.sh"
. "$HERE/ort_python.sh"
D=$(mktemp -d)
trap 'rm -rf "$D"' EXIT
check_lines "$PY" "$HERE/ms_qlinear_check.py" "$INFERA" "$D/ops"
if /usr/bin/python3 -c "import torch, onnx, numpy" 2>/dev/null; then
    if /usr/bin/python3 "$HERE/gen_sweep_models.py" "$D/sweep" >"$D/gen.log" 2>&1; then
        check_lines "$PY" "$HERE/ms_qoperator_models.py" "$INFERA" "$D/sweep" "$D/models"
    else
        bad "gen_sweep_models.py" "$(tail -3 "$D/gen.log")"
    fi
else
    echo "SKIP: the ORT-quantized sweep models (python3-torch not installed)"
    SKIPPED_PARTS=$((${SKIPPED_PARTS:-0} + 1))
fi
check_done
