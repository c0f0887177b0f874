#!/usr/bin/env bash
# bench/batch/run.sh -- batch scoring and SQL-function throughput (issue 9 targets; not run in CI).
#   usage: bench/batch/run.sh [BUILD_DIR] [ROWS]     (default build, 1000000)
# For the fraud model at 2 threads, side by side in one run:
#   CSV->CSV, SQLite->SQLite, PostgreSQL->PostgreSQL: `infera batch` vs the same
#   source->sink copy without scoring (`--no-score`: same reader, writer, chunks);
#   target >= 50%.
#   SQL: SELECT infera_predict(...) over a table vs the same query returning a
#   constant, in SQLite and PostgreSQL; target >= 50%.
# Prints a Markdown table (paste it into bench/batch/RESULTS.md).
set -eu
SRC=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${1:-$SRC/build}
ROWS=${2:-1000000}
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
secs() { local t0 t1; t0=$(date +%s.%N); "$@" >/dev/null 2>&1; t1=$(date +%s.%N); echo "$t1 - $t0" | bc -l; }
row() { # name copy_s score_s
    printf '| %s | %.0f | %.0f | %.0f%% |\n' "$1" "$(echo "$ROWS / $2" | bc -l)" "$(echo "$ROWS / $3" | bc -l)" \
        "$(echo "100 * $2 / $3" | bc -l)"
}
echo "fraud model, $ROWS rows, 2 threads, $(nproc) CPUs ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'))"
echo
echo "| path | copy rows/s (no scoring) | infera batch rows/s | ratio |"
echo "|---|---|---|---|"
c=$(secs "${B[@]}" --no-score --input csv:tx.csv --output csv:copy.csv)
s=$(secs "${B[@]}" --model "$MODEL" --input csv:tx.csv --output csv:scores.csv)
row "CSV -> CSV" "$c" "$s"
"${B[@]}" --no-score --input csv:tx.csv --output "sqlite:tx.db?table=tx" >/dev/null 2>&1
c=$(secs "${B[@]}" --no-score --input "sqlite:tx.db?table=tx" --output "sqlite:copy.db?table=c")
s=$(secs "${B[@]}" --model "$MODEL" --input "sqlite:tx.db?table=tx" --output "sqlite:scores.db?table=s")
row "SQLite -> SQLite" "$c" "$s"
if start_postgres >/dev/null 2>&1; then
    "${B[@]}" --no-score --input csv:tx.csv --output "$PG_URL?table=tx" >/dev/null 2>&1
    c=$(secs "${B[@]}" --no-score --input "$PG_URL?table=tx" --output "$PG_URL?table=c")
    s=$(secs "${B[@]}" --model "$MODEL" --input "$PG_URL?table=tx" --output "$PG_URL?table=s")
    row "PostgreSQL -> PostgreSQL" "$c" "$s"
fi
F="'amount', amount, 'log_amount_ratio', log_amount_ratio, 'merchant_category', merchant_category, 'hour', hour, 'is_weekend', is_weekend, 'distance_from_home_km', distance_from_home_km, 'distance_from_last_txn_km', distance_from_last_txn_km, 'card_present', card_present, 'txn_count_1h', txn_count_1h, 'txn_count_24h', txn_count_24h, 'avg_amount_30d', avg_amount_30d, 'days_since_last_txn', days_since_last_txn"
echo
echo "| SQL | constant query rows/s | infera_predict rows/s | ratio |"
echo "|---|---|---|---|"
EXT=$BUILD/infera_sqlite
c=$(secs sqlite3 tx.db ".load $EXT" "SELECT sum(length(json_object($F)) * 0 + 1) FROM tx")
s=$(secs sqlite3 tx.db ".load $EXT" "SELECT sum(infera_predict('$MODEL', json_object($F))) FROM tx")
row "SQLite: json_object + constant vs infera_predict" "$c" "$s"
if [ -n "${PG_URL:-}" ] && [ -f "$BUILD/pg/infera.so" ] && [ "$(id -u)" = 0 ]; then
    install -m 755 "$BUILD/pg/infera.so" "$(pg_config --pkglibdir)/"
    install -m 644 "$BUILD/pg/infera.control" "$BUILD/pg/infera--0.1.sql" "$(pg_config --sharedir)/extension/"
    psql -X -q "$PG_URL" -c "CREATE EXTENSION infera" >/dev/null
    Q="SET max_parallel_workers_per_gather = 0;"
    c=$(secs psql -X -q "$PG_URL" -c "$Q SELECT sum(length(json_build_object($F)::text) * 0 + 1) FROM tx")
    s=$(secs psql -X -q "$PG_URL" -c "$Q SELECT sum(infera.predict('$MODEL', json_build_object($F))) FROM tx")
    row "PostgreSQL: json_build_object + constant vs infera.predict (1 backend)" "$c" "$s"
fi
