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
