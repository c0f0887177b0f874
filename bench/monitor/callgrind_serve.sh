#!/usr/bin/env bash
# bench/monitor/callgrind_serve.sh -- instructions per record (row) of `infera serve`'s records endpoint
# (ENDPOINT=records, the default) or tensor endpoint (ENDPOINT=infer: POST /v2/models/NAME/infer) with
# monitoring off and on (issue 23: a 10 % prediction log costs <= 5 %, a drift window <= 1 us per record),
# counted by callgrind over every thread (the log's writer included): load-independent, for a shared
# machine.  valgrind hides AVX-512: this counts the AVX2 path.
#
#   [ENDPOINT=records|infer] [FORMAT=json|binary] [WARMUP=N] bench/monitor/callgrind_serve.sh INFERA_BINARY [REQUESTS] [CONFIGS...]
#
# Fraud example served with its spec (its SQLite lookup; for /infer the 12 input columns take the spec's
# names), --http-threads 1, requests of 50 records (records) or 50 rows x 12 FP32 features (infer: JSON,
# FORMAT=binary for the binary tensor extension).  Per
# configuration: one warm-up request, counters zeroed (callgrind_control -z), REQUESTS requests
# (default 200), 1.5 s for the log's writer to flush, a dump; instructions / (REQUESTS x 50).
# CONFIGS: off jsonl sqlite sqlite_wal pg window (default: off jsonl sqlite window); sqlite_wal: the SQLite log
# with ?journal=wal&synchronous=normal; pg: to PostgreSQL at $PG_URL (COPY per batch; the server's own CPU
# is not counted); the log at --log-sample 0.1, the window with the
# training baseline of the first 2,500 rows.  WARMUP=N (default 1): N warm-up requests and 1.5 s
# before counting, so the count is the steady state (the prediction log's batches already made and
# recycled by its writer: a short run otherwise counts their first allocation).
set -euo pipefail
INFERA=$(realpath "$1")
REQS=${2:-200}
shift $(($# > 1 ? 2 : 1))
CONFIGS=${*:-off jsonl sqlite window}
HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
. "$REPO/scripts/serve_port.sh"
TMP=$(mktemp -d)
VPID=
trap '[ -n "$VPID" ] && kill "$VPID" 2>/dev/null; rm -rf "$TMP"' EXIT
cp "$REPO"/examples/fraud/{fraud_spec.json,fraud_xgb.onnx,card_features.db,transactions_raw.csv} "$TMP"/
cd "$TMP"
cp fraud_spec.json fraud_xgb.pipeline.json # the served model's spec
/usr/bin/python3 - <<'PY'
import csv, json
rows = list(csv.DictReader(open("transactions_raw.csv")))
def num(v):
    try: return float(v) if "." in v or "e" in v.lower() else int(v)
    except ValueError: return v if v != "" else None
json.dump({"records": [{k: num(v) for k, v in r.items()} for r in rows[:50]]}, open("records.json", "w"))
w = csv.DictWriter(open("train.csv", "w", newline=""), fieldnames=list(rows[0].keys()))
w.writeheader(); w.writerows(rows[:2500])
PY
"$INFERA" monitor baseline fraud_xgb.onnx --pipeline fraud_spec.json --data csv:train.csv -o base.json 2>/dev/null
ENDPOINT=${ENDPOINT:-records}
WARMUP=${WARMUP:-1}
FORMAT=${FORMAT:-json}
if [ "$ENDPOINT" = infer ]; then
# the tensor request: the features of 50 production rows, as a client that computes them sends them
head -51 transactions_raw.csv | sed 1d | (head -1 transactions_raw.csv; cat) >prod.csv
"$INFERA" features --spec fraud_spec.json --input csv:prod.csv --output npy:x.npy 2>/dev/null
/usr/bin/python3 - "$FORMAT" <<'PY'
import json, struct, sys
import numpy as np
x = np.load("x.npy").astype(np.float32)
if sys.argv[1] == "binary":
    hdr = json.dumps({"inputs": [{"name": "input", "shape": list(x.shape), "datatype": "FP32",
                                  "parameters": {"binary_data_size": x.nbytes}}]}).encode()
    open("req.bin", "wb").write(hdr + x.tobytes())
    open("hdr.len", "w").write(str(len(hdr)))
else:
    json.dump({"inputs": [{"name": "input", "shape": list(x.shape), "datatype": "FP32", "data": x.ravel().tolist()}]},
              open("req.bin", "w"))
PY
if [ "$FORMAT" = binary ]; then HDRS=(-H "Inference-Header-Content-Length: $(cat hdr.len)" -H 'Content-Type: application/octet-stream')
else HDRS=(-H 'Content-Type: application/json'); fi
UNIT=row
else
cp records.json req.bin
HDRS=(-H 'Content-Type: application/json')
UNIT=record
fi
args_of() {
    case $1 in
    off) ;;
    jsonl) echo "--log-predictions jsonl:log.jsonl --log-sample 0.1" ;;
    sqlite) echo "--log-predictions sqlite:log.db?table=log --log-sample 0.1" ;;
    sqlite_wal) echo "--log-predictions sqlite:log.db?table=log&journal=wal&synchronous=normal --log-sample 0.1" ;;
    pg) echo "--log-predictions ${PG_URL:?pg: set PG_URL (a PostgreSQL server)}?table=log_$$ --log-sample 0.1" ;;
    window) echo "--baseline fraud=base.json" ;;
    esac
}
echo "infera serve /$ENDPOINT, $REQS requests x 50 ${UNIT}s, instructions per $UNIT (callgrind; $(cut -d' ' -f1-3 /proc/loadavg) load)"
base=
for c in $CONFIGS; do
    rm -f log.* cg.out*
    : >s.log # emptied: serve_port must not read the previous server's port (the new server truncates it only once started)
    # shellcheck disable=SC2046
    valgrind --tool=callgrind --callgrind-out-file=cg.out --separate-threads=no "$INFERA" serve --port 0 \
        --model fraud=fraud_xgb.onnx --http-threads 1 $(args_of "$c") 2>s.log &
    VPID=$!
    PORT=$(serve_port s.log 1200) || { cat s.log; exit 1; }
    URL=http://127.0.0.1:$PORT/v2/models/fraud/$ENDPOINT
    for _ in $(seq 600); do # warm-up: the first answered request (a loaded machine: valgrind starts slowly)
        curl -sf -o /dev/null "${HDRS[@]}" --data-binary @req.bin "$URL" && break
        sleep 0.2
    done
    if [ "$WARMUP" -gt 1 ]; then # steady state: the log's batches recycled once (the writer's 1 s flush)
        for _ in $(seq $((WARMUP - 1))); do curl -sf -o /dev/null "${HDRS[@]}" --data-binary @req.bin "$URL"; done
        sleep 1.5
    fi
    callgrind_control -z "$VPID" >/dev/null 2>&1
    for _ in $(seq "$REQS"); do
        curl -sf -o /dev/null "${HDRS[@]}" --data-binary @req.bin "$URL" ||
            { echo "$c: a request failed"; cat s.log; exit 1; }
    done
    sleep 1.5
    callgrind_control -d "$VPID" >/dev/null 2>&1
    kill "$VPID"; wait "$VPID" 2>/dev/null || true; VPID=
    DUMP=$(ls -1 cg.out.* | head -1)
    TOTAL=$(awk '/^summary:/ {print $2}' "$DUMP")
    [ -n "${KEEP:-}" ] && cp "$DUMP" "$KEEP.$c" # for callgrind_annotate
    per=$(awk -v t="$TOTAL" -v n="$REQS" 'BEGIN{printf "%.1f", t / (n * 50)}')
    [ -z "$base" ] && base=$per
    echo "$c: $per instr/$UNIT ($(awk -v p="$per" -v b="$base" 'BEGIN{printf "%+.2f %%", (p / b - 1) * 100}') vs $(echo "$CONFIGS" | cut -d' ' -f1))"
done
