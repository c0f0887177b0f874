#!/usr/bin/env bash
# Does a sparse kernel pay for unstructured pruning?  A 256x256 Gemm at batch 64 (the benchmark MLP's
# middle layer): Infera's dense Gemm (`infera bench`) against a plain compressed-rows kernel
# (sparse_probe.c, transposes included) at decreasing density, interleaved, ROUNDS times.
#   bench/compress/sparse_run.sh [INFERA] [WORK_DIR]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
infera=$(realpath "${1:-$root/build/infera}")
work=$(realpath -m "${2:-$root/build/bench-compress}")
rounds=${ROUNDS:-3}
mkdir -p "$work"
cd "$work"
cc -O3 -march=native -o sparse_probe "$here/sparse_probe.c"
/usr/bin/python3 - <<'PY'
import numpy as np
from onnx import TensorProto, helper, numpy_helper
W = (np.random.default_rng(0).random((256, 256)) * 2 - 1).astype(np.float32)
g = helper.make_graph([helper.make_node("Gemm", ["x", "W", "b"], ["y"])], "g",
                      [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 256])],
                      [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 256])],
                      [numpy_helper.from_array(W, "W"), numpy_helper.from_array(np.zeros(256, np.float32), "b")])
m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
m.ir_version = 8
open("gemm256.onnx", "wb").write(m.SerializeToString())
PY
echo "| round | Infera dense Gemm p50 (us) | sparse, density 0.5 | 0.3 | 0.2 | 0.1 | 0.05 |"
echo "|---|---|---|---|---|---|---|"
for r in $(seq "$rounds"); do
    dense=$("$infera" bench gemm256.onnx --batch 64 --iters 3000 --warmup 200 --json | sed 's/.*"p50":\([0-9.]*\).*/\1/')
    row="| $r | $dense |"
    for d in 0.5 0.3 0.2 0.1 0.05; do
        us=$(./sparse_probe 256 256 64 $d 3000 | sed 's/.*"median_us":\([0-9.]*\).*/\1/')
        row="$row $us ($(awk -v a="$dense" -v b="$us" 'BEGIN{printf "%.2fx", a/b}')) |"
    done
    echo "$row"
done
