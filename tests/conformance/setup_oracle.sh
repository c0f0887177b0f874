#!/usr/bin/env bash
# Creates the Python venv with the pinned oracle that tests/conformance/gen_opset18plus.py needs
# (ONNX 1.23.2 to write models of opsets 18-26, ONNX Runtime 1.30.0 to compute their outputs).
# Only to regenerate the committed suite; the build and CI do not need it.  A re-run is cheap.
# Usage: tests/conformance/setup_oracle.sh [VENV_DIR]   (default /tmp/opset-venv); then
#        VENV_DIR/bin/python tests/conformance/gen_opset18plus.py
set -euo pipefail
venv=${1:-/tmp/opset-venv}
want="onnx==1.23.2 onnxruntime==1.30.0 numpy"
if [ -x "$venv/bin/python" ] && "$venv/bin/python" -c 'import onnx, onnxruntime, sys; sys.exit(not (onnx.__version__ == "1.23.2" and onnxruntime.__version__ == "1.30.0"))' 2>/dev/null; then
  echo "oracle ready in $venv"; exit 0
fi
python3 -m venv "$venv"
"$venv/bin/pip" install -q $want
echo "oracle installed in $venv"
