#!/usr/bin/env bash
# bench/monitor/callgrind_batch.sh -- instructions per row of `infera batch` with the prediction log off
# and on (issue 23's <= 5 % target), counted by callgrind over every thread (the log's writer included):
# load-independent, for a shared machine.  valgrind hides AVX-512: this counts the AVX2 path.
#
#   bench/monitor/callgrind_batch.sh INFERA_BINARY [ROWS] [CONFIGS...]
#
# Fraud example (spec with its SQLite lookup, XGBoost trees, 12 features, 3 outputs), CSV in and out,
# --threads 1.  Per configuration: a ROWS-row run minus a 1-row run (start-up and model load removed),
# divided by ROWS - 1.  CONFIGS: off jsonl sqlite (default all three); the log at --log-sample 0.1.
set -euo pipefail
INFERA=$(realpath "$1")
ROWS=${2:-20000}
shift $(($# > 1 ? 2 : 1))
CONFIGS=${*:-off jsonl sqlite}
HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
cp "$REPO"/examples/fraud/{fraud_spec.json,fraud_xgb.onnx,card_features.db,transactions_raw.csv} "$TMP"/
cd "$TMP"
/usr/bin/python3 - "$ROWS" <<'PY'
import csv, sys
rows = list(csv.DictReader(open("transactions_raw.csv")))
n = int(sys.argv[1])
for name, count in (("big.csv", n), ("one.csv", 1)):
    w = csv.DictWriter(open(name, "w", newline=""), fieldnames=list(rows[0].keys()))
    w.writeheader()
    for i in range(count):
        r = dict(rows[i % len(rows)]); r["transaction_id"] = "t%07d" % i; w.writerow(r)
PY
args_of() {
    case $1 in
    off) ;;
    jsonl) echo "--log-predictions jsonl:log.jsonl --log-sample 0.1" ;;
    sqlite) echo "--log-predictions sqlite:log.db?table=log --log-sample 0.1" ;;
    esac
}
instr() { # input, config -> instructions of the whole run (every thread)
    rm -f log.* out.csv cg.out*
    # shellcheck disable=SC2046
    valgrind --tool=callgrind --callgrind-out-file=cg.out.%p --separate-threads=no "$INFERA" batch \
        --model fraud_xgb.onnx --pipeline fraud_spec.json --input "csv:$1" --output csv:out.csv --progress none \
        --threads 1 $(args_of "$2") >/dev/null 2>cg.log
    cat cg.out.* | awk '/^summary:/ {s += $2} END {print s}'
}
echo "infera batch, $ROWS rows, instructions per row (callgrind; $(cut -d' ' -f1-3 /proc/loadavg) load)"
base=
for c in $CONFIGS; do
    big=$(instr big.csv "$c")
    one=$(instr one.csv "$c")
    per=$(awk -v a="$big" -v b="$one" -v n="$ROWS" 'BEGIN{printf "%.1f", (a - b) / (n - 1)}')
    [ -z "$base" ] && base=$per
    echo "$c: $per instr/row ($(awk -v p="$per" -v b="$base" 'BEGIN{printf "%+.2f %%", (p / b - 1) * 100}') vs $(echo "$CONFIGS" | cut -d' ' -f1))"
done
