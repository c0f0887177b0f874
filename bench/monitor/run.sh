#!/usr/bin/env bash
# bench/monitor/run.sh -- the cost of monitoring (issue 23: a 10 % prediction log costs <= 5 % of serve
# throughput and of batch rows/s; drift windows add <= 1 us per record), logging off and on side by side.
#
#   bench/monitor/run.sh INFERA_BINARY [ROUNDS] [BATCH_ROWS] [SERVE_SECS] [SERVE_RATE]
#
# Fraud example (examples/fraud: spec with its SQLite lookup, XGBoost trees, 12 features, 3 outputs).
# CPU time (user + sys of the whole process, every thread: the log's writer included) per record is the
# measure -- wall clock is noise on a shared machine.  Configurations run interleaved, ROUNDS times each:
#   batch: `infera batch --threads 1` over BATCH_ROWS CSV rows to CSV, CPU from /proc (getrusage of the child);
#   serve: `infera serve` records endpoint, 50-record requests at SERVE_RATE req/s for SERVE_SECS
#          (bench/serve/loadgen.c), CPU = the server's /proc/PID/stat utime+stime delta over the load.
# ENDPOINT=infer: serve's tensor endpoint instead (/v2/models/fraud/infer, 50 rows x the 12 features of
# `infera features` as FP32 JSON; the spec names the columns), and no batch runs.
# Prints one line per run and the medians; RESULTS.md has the numbers and the machine.
set -euo pipefail
INFERA=$(realpath "$1")
ROUNDS=${2:-5} ROWS=${3:-100000} SECS=${4:-8} RATE=${5:-100}
HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
. "$REPO/scripts/serve_port.sh"
TMP=$(mktemp -d)
SERVER=
trap '[ -n "$SERVER" ] && kill "$SERVER" 2>/dev/null; rm -rf "$TMP"' EXIT
cp "$REPO"/examples/fraud/{fraud_spec.json,fraud_xgb.onnx,card_features.db,transactions_raw.csv} "$TMP"/
cd "$TMP"
cp fraud_spec.json fraud_xgb.pipeline.json # the served model's spec
cc -O2 -o loadgen "$REPO/bench/serve/loadgen.c" -lpthread -lm
/usr/bin/python3 - "$ROWS" <<'PY'
import csv, json, sys
rows = list(csv.DictReader(open("transactions_raw.csv")))
n = int(sys.argv[1])
w = csv.DictWriter(open("big.csv", "w", newline=""), fieldnames=list(rows[0].keys()))
w.writeheader()
for i in range(n):
    r = dict(rows[i % len(rows)]); r["transaction_id"] = "t%07d" % i; w.writerow(r)
def num(v):
    try: return float(v) if "." in v or "e" in v.lower() else int(v)
    except ValueError: return v if v != "" else None
recs = [{k: num(v) for k, v in r.items()} for r in rows[:50]]
json.dump({"records": recs}, open("req.json", "w"))
w = csv.DictWriter(open("train.csv", "w", newline=""), fieldnames=list(rows[0].keys()))
w.writeheader(); w.writerows(rows[:2500])
PY
"$INFERA" monitor baseline fraud_xgb.onnx --pipeline fraud_spec.json --data csv:train.csv -o base.json 2>/dev/null
ENDPOINT=${ENDPOINT:-records}
if [ "$ENDPOINT" = infer ]; then
    head -51 transactions_raw.csv >prod.csv
    "$INFERA" features --spec fraud_spec.json --input csv:prod.csv --output npy:x.npy 2>/dev/null
    /usr/bin/python3 -c '
import json, numpy as np
x = np.load("x.npy").astype(np.float32)
json.dump({"inputs": [{"name": "input", "shape": list(x.shape), "datatype": "FP32", "data": x.ravel().tolist()}]},
          open("req.json", "w"))'
fi
TCK=$(getconf CLK_TCK)

batch_cpu() { # extra args -> CPU seconds of one batch run
    rm -f log.* out.csv
    /usr/bin/time -f "%U %S" -o t.txt "$INFERA" batch --model fraud_xgb.onnx --pipeline fraud_spec.json \
        --input csv:big.csv --output csv:out.csv --progress none --threads 1 "$@" >/dev/null 2>b.log
    awk '{printf "%.3f", $1 + $2}' t.txt
}
proc_cpu() { awk -v t="$TCK" '{printf "%.4f", ($14 + $15) / t}' "/proc/$1/stat"; }
serve_cpu() { # extra args -> "CPU seconds, requests ok"
    rm -f log.*
    "$INFERA" serve --port 0 --model fraud=fraud_xgb.onnx --http-threads 1 "$@" 2>s.log &
    SERVER=$!
    local port
    port=$(serve_port s.log) || { cat s.log; exit 1; }
    ./loadgen "$port" "/v2/models/fraud/$ENDPOINT" req.json "$RATE" 1 4 >/dev/null   # warm-up
    local c0 out c1
    c0=$(proc_cpu "$SERVER")
    out=$(./loadgen "$port" "/v2/models/fraud/$ENDPOINT" req.json "$RATE" "$SECS" 4)
    c1=$(proc_cpu "$SERVER")
    kill "$SERVER"; wait "$SERVER" 2>/dev/null || true; SERVER=
    echo "$(awk -v a="$c0" -v b="$c1" 'BEGIN{printf "%.3f", b - a}') $(echo "$out" | sed -nE 's/.*"ok":([0-9]+).*/\1/p')"
}

declare -A B S
BATCH_CFGS="off jsonl sqlite"
SERVE_CFGS=${SERVE_CFGS:-"off jsonl sqlite window window+jsonl"}
[ "$ENDPOINT" = infer ] && BATCH_CFGS=""
args_of() {
    case $1 in
    off) ;;
    jsonl) echo "--log-predictions jsonl:log.jsonl --log-sample 0.1" ;;
    sqlite) echo "--log-predictions sqlite:log.db?table=log --log-sample 0.1" ;;
    window) echo "--baseline fraud=base.json" ;;
    window+jsonl) echo "--baseline fraud=base.json --log-predictions jsonl:log.jsonl --log-sample 0.1" ;;
    esac
}
for r in $(seq "$ROUNDS"); do
    for c in $BATCH_CFGS; do
        # shellcheck disable=SC2046
        cpu=$(batch_cpu $(args_of "$c"))
        us=$(awk -v c="$cpu" -v n="$ROWS" 'BEGIN{printf "%.3f", c / n * 1e6}')
        echo "round $r batch  $c: cpu ${cpu} s for $ROWS rows = ${us} us/row"
        B[$c]+="$us "
    done
    for c in $SERVE_CFGS; do
        # shellcheck disable=SC2046
        read -r cpu ok < <(serve_cpu $(args_of "$c"))
        us=$(awk -v c="$cpu" -v n="$ok" 'BEGIN{printf "%.3f", c / (n * 50) * 1e6}')
        echo "round $r serve  $c: cpu ${cpu} s for $ok requests x 50 records = ${us} us/record"
        S[$c]+="$us "
    done
done
median() { tr ' ' '\n' | grep -v '^$' | sort -g | awk '{a[NR]=$1} END{print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }
echo "medians (CPU us per record; + vs off):"
for kind in batch serve; do
    if [ $kind = batch ]; then cfgs=$BATCH_CFGS; else cfgs=$SERVE_CFGS; fi
    base=
    for c in $cfgs; do
        if [ $kind = batch ]; then m=$(echo "${B[$c]}" | median); else m=$(echo "${S[$c]}" | median); fi
        [ -z "$base" ] && base=$m
        echo "  $kind $c: $m us  ($(awk -v m="$m" -v b="$base" 'BEGIN{printf "%+.1f %%", (m / b - 1) * 100}'))"
    done
done
