#!/usr/bin/env bash
# The main job on a fresh machine: installs dependencies, builds Infera, and
# runs the example models end to end (describe, predict, benchmark).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh release
infera=build/infera
m=tests/models
echo "== infera info $m/mlp.onnx"
$infera info $m/mlp.onnx
echo
echo "== infera run $m/mlp.onnx --input input=$m/mlp_input.npy"
$infera run $m/mlp.onnx --input input=$m/mlp_input.npy
echo
echo "== infera run $m/cnn.onnx (output written to ./example-output)"
$infera run $m/cnn.onnx --input input=$m/cnn_input.npy --output-dir example-output
ls -l example-output
echo
for model in mlp cnn transformer; do
  echo "== infera bench $m/$model.onnx --json"
  $infera bench $m/$model.onnx --iters 200 --json
done
