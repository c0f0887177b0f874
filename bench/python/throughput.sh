#!/bin/sh
# Rows per second of the Python package at scale, next to the CLI on the same
# machine in one run (issue 24 targets):
#   1. Pipeline.features on a pandas DataFrame of ROWS rows (default 1,000,000,
#      the fraud example's raw rows repeated; read by pandas with its own types,
#      and as strings typed like CSV cells) vs `infera features` on the same
#      rows as CSV (target: Python >= 0.8x the CLI);
#   2. infera.dask.score with one and with two worker processes on those rows
#      (target on a 2-core machine: two >= 1.6x one).
# Usage: bench/python/throughput.sh [BUILD_DIR]  (needs the extension built in
#   python/: `cd python && /usr/bin/python3 setup.py build_ext --inplace`)
set -eu
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${1:-$ROOT/build}
ROWS=${ROWS:-1000000}
TMP=$(mktemp -d); trap 'rm -rf "$TMP"' EXIT
grep -m1 'model name' /proc/cpuinfo; nproc; grep -m1 'cache size' /proc/cpuinfo || true
SRC=$ROOT/examples/fraud/transactions_raw.csv
SPEC=$ROOT/examples/fraud/fraud_spec.json
MODEL=$ROOT/examples/fraud/fraud_xgb.onnx
/usr/bin/python3 - "$SRC" "$TMP/big.csv" "$ROWS" <<'PY'
import sys
src, dst, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
lines = open(src).read().splitlines()
head, body = lines[0], lines[1:]
with open(dst, "w") as f:
    f.write(head + "\n")
    for i in range(n):
        r = body[i % len(body)].split(",", 1)
        f.write("t%07d,%s\n" % (i, r[1]))
PY
t0=$(date +%s%N)
"$BUILD/infera" features --spec "$SPEC" --input "csv:$TMP/big.csv" --output "npy:$TMP/cli.npy" >/dev/null
cli_ms=$(( ($(date +%s%N) - t0) / 1000000 ))
PYTHONPATH=$ROOT/python /usr/bin/python3 "$ROOT/bench/python/throughput.py" "$TMP/big.csv" "$SPEC" "$MODEL" "$cli_ms" "$ROWS"
