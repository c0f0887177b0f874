#!/bin/sh
# Python Model.run overhead per call at batch 1 against the C call it wraps
# (inf_session_run, c_run_loop.c), interleaved rounds on one machine.
# Usage: bench/python/overhead.sh [BUILD_DIR]   (needs the extension built in python/,
#   e.g. `cd python && /usr/bin/python3 setup.py build_ext --inplace`)
set -eu
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${1:-$ROOT/build}
TMP=$(mktemp -d); trap 'rm -rf "$TMP"' EXIT
gcc -O2 -std=c11 -Wall -Wextra -I"$ROOT/include" "$ROOT/bench/python/c_run_loop.c" -L"$BUILD" -Wl,-rpath,"$BUILD" \
    -linfera -o "$TMP/c_run_loop"
N=${N:-20000}
grep -m1 'model name' /proc/cpuinfo
for spec in "tests/models/mlp.onnx 32" "examples/fraud/fraud_xgb.onnx 12"; do
    set -- $spec
    /usr/bin/python3 -c "import numpy as np; np.save('$TMP/x.npy', np.random.default_rng(1).standard_normal((1,$2)).astype(np.float32))"
    for round in 1 2 3; do
        c=$("$TMP/c_run_loop" "$ROOT/$1" "$TMP/x.npy" "$N")
        py=$(PYTHONPATH="$ROOT/python" /usr/bin/python3 -c "
import time, numpy as np, infera
m = infera.Model('$ROOT/$1'); x = {m.inputs[0]['name']: np.load('$TMP/x.npy')}
for _ in range(200): m.run(x)
t = time.perf_counter_ns()
for _ in range($N): m.run(x)
print('%.1f' % ((time.perf_counter_ns() - t) / $N))")
        echo "$1 round $round: C ${c} ns/call, Python ${py} ns/call, overhead $(echo "$py - $c" | bc) ns"
    done
done

# Against onnxruntime-node's call overhead (issue 24: Python's overhead <= 0.3x node's): a one-node
# model (Add of a [1,4] float input and a constant) where compute is next to nothing, so a call's
# time is its binding's overhead.  node's time still includes ORT's own run of the Add (not
# separable from outside), so the ratio printed is a lower bound of node's overhead ratio's inverse:
# it favours neither side by more than that kernel's cost.
ORT_DIR=$ROOT/bench/node_modules/onnxruntime-node
[ -d "$ORT_DIR" ] || ORT_DIR=$ROOT/tests/models/ort/node_modules/onnxruntime-node
if [ ! -d "$ORT_DIR" ] || ! command -v node >/dev/null; then
    echo "onnxruntime-node not installed: (cd bench && npm install --ignore-scripts onnxruntime-node@1.30.0)"
    exit 0
fi
/usr/bin/python3 - "$TMP/add.onnx" <<'PY'
import sys, onnx, numpy as np
from onnx import helper, TensorProto, numpy_helper
g = helper.make_graph([helper.make_node("Add", ["x", "one"], ["y"])], "add1",
                      [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
                      [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])],
                      [numpy_helper.from_array(np.ones((1, 4), np.float32), "one")])
onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8), sys.argv[1])
PY
/usr/bin/python3 -c "import numpy as np; np.save('$TMP/x4.npy', np.ones((1,4), np.float32))"
for round in 1 2 3; do
    c=$("$TMP/c_run_loop" "$TMP/add.onnx" "$TMP/x4.npy" "$N")
    py=$(PYTHONPATH="$ROOT/python" /usr/bin/python3 -c "
import time, numpy as np, infera
m = infera.Model('$TMP/add.onnx'); x = {'x': np.load('$TMP/x4.npy')}
for _ in range(200): m.run(x)
t = time.perf_counter_ns()
for _ in range($N): m.run(x)
print('%.1f' % ((time.perf_counter_ns() - t) / $N))")
    ort=$(node "$ROOT/bench/ort_bench.js" "$TMP/add.onnx" --iters "$N" --warmup 200 | /usr/bin/python3 -c "
import json, sys; print('%.1f' % (json.load(sys.stdin)['latency_us']['mean'] * 1000))")
    echo "add1 round $round: C ${c} ns/call, Python ${py} ns/call (overhead $(echo "$py - $c" | bc) ns), onnxruntime-node ${ort} ns/call: Python overhead / node call = $(echo "scale=3; ($py - $c) / $ort" | bc)"
done
