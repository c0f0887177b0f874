# ort_python.sh -- sourced by the quantization tests that use Python's onnxruntime as their oracle (after
# tests/check.sh): sets PY to the first of $INFERA_ORT_PYTHON, the venv scripts/install-deps.sh makes
# ($INFERA_CACHE or ~/.cache/infera, venv-ort-oracle: pinned PyPI onnxruntime 1.20.1, onnx 1.16.2) and python3 that
# imports onnx, onnxruntime and numpy; skips the test (77) when none does.
PY=
for p in "${INFERA_ORT_PYTHON:-}" "${INFERA_CACHE:-$HOME/.cache/infera}/venv-ort-oracle/bin/python" python3; do
    [ -n "$p" ] && "$p" -c "import onnx, onnxruntime, numpy" 2>/dev/null && { PY=$p; break; }
done
[ -n "$PY" ] || skip "no Python with onnx + onnxruntime (set INFERA_ORT_PYTHON)"
