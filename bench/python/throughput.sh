#!/bin/sh
# Rows per second of the Python package at scale, next to the CLI on the same
# machine in one run (issue 24 targets):
#   1. Pipeline.features on a pandas DataFrame of ROWS rows (default 1,000,000,
#      the fraud example's raw rows repeated) vs `infera features` on the same
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
PYTHONPATH=$ROOT/python /usr/bin/python3 - "$TMP/big.csv" "$SPEC" "$MODEL" "$cli_ms" "$ROWS" <<'PY'
import sys, time
import pandas, infera
csv_path, spec, model, cli_ms, rows = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
frame = pandas.read_csv(csv_path, dtype=str, keep_default_na=False)
p = infera.Pipeline(spec)
t = time.perf_counter(); x = p.features(frame, text=True); py_s = time.perf_counter() - t
print("features, %d rows: CLI %.0f rows/s (csv file -> npy), Python %.0f rows/s (DataFrame -> ndarray): %.2fx"
      % (rows, rows / (cli_ms / 1000), rows / py_s, (rows / py_s) / (rows / (cli_ms / 1000))))
try:
    import dask.dataframe as dd, distributed, infera.dask
except ImportError:
    print("dask: not installed (python3-dask, python3-distributed)"); sys.exit(0)
ddf = dd.from_pandas(frame, npartitions=16)
res = {}
for workers in (1, 2, 1, 2):
    cluster = distributed.LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                                       dashboard_address=None, silence_logs=40)
    with distributed.Client(cluster):
        infera.dask.score(ddf.partitions[0:workers], model, spec=spec, text=True, record_lineage=False).compute()
        t = time.perf_counter()
        n = len(infera.dask.score(ddf, model, spec=spec, text=True, record_lineage=False).compute())
        res.setdefault(workers, []).append(n / (time.perf_counter() - t))
    cluster.close()
one, two = max(res[1]), max(res[2])
print("dask score, %d rows: 1 worker process %.0f rows/s, 2 worker processes %.0f rows/s: %.2fx" % (rows, one, two, two / one))
PY
