#!/usr/bin/env bash
# bench/batch/run.sh -- batch scoring and SQL-function throughput (issue 9 targets; not run in CI).
#   usage: bench/batch/run.sh [BUILD_DIR] [ROWS] [ROUNDS]     (default build, 1000000, 3)
# For the fraud model at 2 threads, side by side in one run (the two commands of a
# pair alternate, ROUNDS times; medians):
#   CSV->CSV, SQLite->SQLite, PostgreSQL->PostgreSQL: `infera batch` vs the same
#   source->sink copy without scoring (`--no-score`: same reader, writer, chunks);
#   target >= 50%.
#   SQL: SELECT infera_predict(...) over a table vs the same query returning a
#   constant, in SQLite and PostgreSQL; target >= 50%.
# Each row gives wall-clock rows/s (the target) and the CPU seconds (user+sys) of both,
# which stay meaningful when the machine is shared.  Prints a Markdown table (paste it
# into bench/batch/RESULTS.md) and the load average before and after.
set -eu
SRC=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=$(cd "${1:-$SRC/build}" && pwd) # absolute: the script works in a temp folder
ROWS=${2:-1000000}
ROUNDS=${3:-3}
INFERA=$BUILD/infera
MODEL=$SRC/examples/fraud/fraud_xgb.onnx
T=$(mktemp -d /tmp/infera-bench-batch.XXXXXX)
. "$SRC/tests/integration/services.sh"
trap 'stop_postgres; rm -rf "$T"' EXIT
chmod 755 "$T"
cd "$T"
export INFERA_HOME=$T/home
reps=$(( (ROWS + 4999) / 5000 ))
awk -F, -v reps=$reps -v rows=$ROWS 'NR==1 { print; next } { lines[NR] = $0 } END { n = 0; for (k = 0; k < reps; k++) for (i = 2; i <= NR && n < rows; i++) { l = lines[i]; sub(/^t/, "t" k "_", l); print l; n++ } }' \
    "$SRC/examples/fraud/transactions.csv" >tx.csv
B=( "$INFERA" batch --progress none --id-column transaction_id --threads 2 )
# one timed run: prints "wall cpu" (seconds)
run1() { /usr/bin/time -f "%e %U %S" -o t.out "$@" >/dev/null 2>&1 || true; awk '{ printf "%s %.2f\n", $1, $2 + $3 }' t.out; }
median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
# pair NAME SETUP_FN -- runs "base" then "scored" commands (arrays BASE, SCORED) ROUNDS times
pair() {
    local name=$1 bw=() bc=() sw=() sc=() r
    for _ in $(seq "$ROUNDS"); do
        [ -n "${PREP:-}" ] && eval "$PREP"
        r=$(run1 "${BASE[@]}"); bw+=("${r% *}"); bc+=("${r#* }")
        [ -n "${PREP:-}" ] && eval "$PREP"
        r=$(run1 "${SCORED[@]}"); sw+=("${r% *}"); sc+=("${r#* }")
    done
    local w0 w1 c0 c1
    w0=$(printf '%s\n' "${bw[@]}" | median); w1=$(printf '%s\n' "${sw[@]}" | median)
    c0=$(printf '%s\n' "${bc[@]}" | median); c1=$(printf '%s\n' "${sc[@]}" | median)
    printf '| %s | %.0f | %.0f | **%.0f%%** | %s / %s |\n' "$name" "$(echo "$ROWS / $w0" | bc -l)" \
        "$(echo "$ROWS / $w1" | bc -l)" "$(echo "100 * $w0 / $w1" | bc -l)" "$c0" "$c1"
}
echo "fraud model, $ROWS rows, 2 threads, $ROUNDS rounds (medians), $(nproc) CPUs ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'))"
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
echo
echo "| path | copy rows/s (no scoring) | infera batch rows/s | ratio | CPU s copy / scored |"
echo "|---|---|---|---|---|"
BASE=( "${B[@]}" --no-score --input csv:tx.csv --output csv:copy.csv )
SCORED=( "${B[@]}" --model "$MODEL" --input csv:tx.csv --output csv:scores.csv )
pair "CSV -> CSV"
"${B[@]}" --no-score --input csv:tx.csv --output "sqlite:tx.db?table=tx" >/dev/null 2>&1
PREP='rm -f copy.db scores.db'
BASE=( "${B[@]}" --no-score --input "sqlite:tx.db?table=tx" --output "sqlite:copy.db?table=c" )
SCORED=( "${B[@]}" --model "$MODEL" --input "sqlite:tx.db?table=tx" --output "sqlite:scores.db?table=s" )
pair "SQLite -> SQLite"
if start_postgres >/dev/null 2>&1; then
    "${B[@]}" --no-score --input csv:tx.csv --output "$PG_URL?table=tx" >/dev/null 2>&1
    PREP='psql -X -q "$PG_URL" -c "DROP TABLE IF EXISTS c; DROP TABLE IF EXISTS s" >/dev/null 2>&1'
    BASE=( "${B[@]}" --no-score --input "$PG_URL?table=tx" --output "$PG_URL?table=c" )
    SCORED=( "${B[@]}" --model "$MODEL" --input "$PG_URL?table=tx" --output "$PG_URL?table=s" )
    pair "PostgreSQL -> PostgreSQL"
fi
PREP=
F="'amount', amount, 'log_amount_ratio', log_amount_ratio, 'merchant_category', merchant_category, 'hour', hour, 'is_weekend', is_weekend, 'distance_from_home_km', distance_from_home_km, 'distance_from_last_txn_km', distance_from_last_txn_km, 'card_present', card_present, 'txn_count_1h', txn_count_1h, 'txn_count_24h', txn_count_24h, 'avg_amount_30d', avg_amount_30d, 'days_since_last_txn', days_since_last_txn"
echo
echo "| SQL | constant query rows/s | infera_predict rows/s | ratio | CPU s constant / predict |"
echo "|---|---|---|---|---|"
EXT=$BUILD/infera_sqlite
BASE=( sqlite3 tx.db ".load $EXT" "SELECT sum(length(json_object($F)) * 0 + 1) FROM tx" )
SCORED=( sqlite3 tx.db ".load $EXT" "SELECT sum(infera_predict('$MODEL', json_object($F))) FROM tx" )
pair "SQLite: json_object + constant vs infera_predict"
if [ -n "${PG_URL:-}" ] && [ -f "$BUILD/pg/infera.so" ] && [ "$(id -u)" = 0 ]; then
    install -m 755 "$BUILD/pg/infera.so" "$(pg_config --pkglibdir)/"
    install -m 644 "$BUILD/pg/infera.control" "$BUILD/pg/infera--0.1.sql" "$(pg_config --sharedir)/extension/"
    psql -X -q "$PG_URL" -c "CREATE EXTENSION infera" >/dev/null
    Q="SET max_parallel_workers_per_gather = 0;"
    # the client's CPU is not the server's: these CPU columns are psql's (ignore them)
    BASE=( psql -X -q "$PG_URL" -c "$Q SELECT sum(length(json_build_object($F)::text) * 0 + 1) FROM tx" )
    SCORED=( psql -X -q "$PG_URL" -c "$Q SELECT sum(infera.predict('$MODEL', json_build_object($F))) FROM tx" )
    pair "PostgreSQL: json_build_object + constant vs infera.predict (1 backend)"
fi
echo
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
