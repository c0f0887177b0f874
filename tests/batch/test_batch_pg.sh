#!/usr/bin/env bash
# test_batch_pg.sh -- `infera batch` against a real PostgreSQL (label: integration).
#   usage: test_batch_pg.sh INFERA SOURCE_DIR
# Starts a throwaway cluster on loopback (tests/integration/services.sh):
# PostgreSQL -> PostgreSQL round trip with typed output columns, values
# bit-identical to the CSV path, existing tables without a key, --shard K/N
# with two workers running at once into one table (every row scored exactly
# once), kill -9 + --resume.
set -u
. "$(dirname "$0")/../check.sh"
INFERA=$1
SRC=$2
EX=$SRC/examples/fraud
MODEL=$EX/fraud_xgb.onnx
T=$(mktemp -d /tmp/infera-batch-pg.XXXXXX)
. "$SRC/tests/integration/services.sh"
trap 'stop_postgres; rm -rf "$T"' EXIT
cd "$T" || exit 1
export INFERA_HOME=$T/home
strip() { awk -F, 'NR>1 { NF--; print }' OFS=, "$1" | sort; }
if ! start_postgres; then
    bad "PostgreSQL could not be started"
    check_done
fi
P() { psql -X -q -t -A "$PG_URL" -c "$1"; }
B=( "$INFERA" batch --progress none --id-column transaction_id )

"${B[@]}" --no-score --input "csv:$EX/transactions.csv" --output "$PG_URL?table=tx" >/dev/null 2>err.txt; rc=$?
check "csv -> postgresql copy" '[ $rc -eq 0 ] && [ "$(P "SELECT count(*) FROM tx")" = 5000 ]' "$(cat err.txt)"
cols() { P "SELECT string_agg(column_name || ':' || data_type, ' ' ORDER BY ordinal_position) FROM information_schema.columns WHERE table_name = '$1'"; }
TXCOLS=$(cols tx)
TXPK=$(P "SELECT count(*) FROM pg_indexes WHERE tablename = 'tx' AND indexdef LIKE '%UNIQUE%transaction_id%'")
check "postgresql sink: typed columns, primary key on the id" \
    '[[ "$TXCOLS" == "transaction_id:text amount:double precision log_amount_ratio:double precision merchant_category:bigint"* ]] && [ "$TXPK" = 1 ]' "$TXCOLS / pk $TXPK"

"${B[@]}" --model "$MODEL" --input "$PG_URL?table=tx" --output "$PG_URL?table=scores" --threads 2 >sum.txt 2>err.txt; rc=$?
check "postgresql -> postgresql exits 0" '[ $rc -eq 0 ]' "$(cat err.txt)"
check "5000 rows, distinct ids" '[ "$(P "SELECT count(*), count(DISTINCT transaction_id) FROM scores")" = "5000|5000" ]'
SCOLS=$(cols scores)
check "output column types (bigint label, double probabilities, timestamptz scored_at)" \
    '[ "$SCOLS" = "transaction_id:text label:bigint probabilities_0:double precision probabilities_1:double precision model_name:text model_version:text pipeline_hash:text scored_at:timestamp with time zone" ]' "$SCOLS"
"${B[@]}" --model "$MODEL" --input "csv:$EX/transactions.csv" --output csv:ref.csv >/dev/null 2>&1
"${B[@]}" --no-score --input "$PG_URL?query=SELECT%20*%20FROM%20scores" --output csv:pg.csv >/dev/null 2>&1
check "values bit-identical to the csv path" 'diff -q <(strip pg.csv) <(strip ref.csv) >/dev/null' "$(diff <(strip pg.csv) <(strip ref.csv) | head -3)"
"${B[@]}" --model "$MODEL" --input "$PG_URL?table=tx" --output "$PG_URL?table=scores" >/dev/null 2>&1
check "re-run upserts: still 5000 rows" '[ "$(P "SELECT count(*) FROM scores")" = 5000 ]'
"${B[@]}" --model "$MODEL" --input "postgresql://postgres:secret@127.0.0.1:1/nodb?table=tx" --output csv:x.csv >/dev/null 2>err.txt; rc=$?
check "unreachable server: one-line error without the password" '[ $rc -ne 0 ] && grep -q "cannot connect" err.txt && ! grep -q secret err.txt' "$(cat err.txt)"

# an existing output table made without a key (and without our columns): refused unless --mode append;
# with it, the table gets the columns and a unique index, re-runs replace rows
P "CREATE TABLE keyless (transaction_id text, label bigint)"
KEYLESS="'keyless'"
"${B[@]}" --model "$MODEL" --input "$PG_URL?table=tx" --output "$PG_URL?table=keyless" >/dev/null 2>err.txt; rc=$?
check "existing unrelated table without --mode append: refused, left unchanged" \
    '[ $rc -ne 0 ] && grep -q "is not the output of an earlier run" err.txt && [ "$(P "SELECT count(*) FROM information_schema.columns WHERE table_name = $KEYLESS")" = 2 ]' "$(cat err.txt)"
for i in 1 2; do
    "${B[@]}" --model "$MODEL" --input "$PG_URL?table=tx" --output "$PG_URL?table=keyless" --mode append >/dev/null 2>err.txt; rc=$?
done
check "existing table without a key: re-runs upsert (5000 rows, none twice)" \
    '[ $rc -eq 0 ] && [ "$(P "SELECT count(*), count(DISTINCT transaction_id) FROM keyless")" = "5000|5000" ]' "$(cat err.txt)"
P "CREATE TABLE dupkeys (transaction_id text, label bigint); INSERT INTO dupkeys VALUES ('x', 1), ('x', 2)"
"${B[@]}" --model "$MODEL" --input "$PG_URL?table=tx" --output "$PG_URL?table=dupkeys" --mode append >/dev/null 2>err.txt; rc=$?
check "existing table holding an id twice: one-line error naming the key" \
    '[ $rc -ne 0 ] && tail -1 err.txt | grep -q "keyed by .transaction_id. but it is neither the table.s primary key nor unique"' "$(cat err.txt)"

# ---- two shard workers at once into one table -------------------------------
for k in 0 1; do
    "${B[@]}" --model "$MODEL" --input "$PG_URL?table=tx" --output "$PG_URL?table=sharded" --shard $k/2 \
        --chunk-rows 200 >shard$k.txt 2>&1 &
    eval "pid$k=\$!"
done
wait $pid0; rc0=$?
wait $pid1; rc1=$?
check "two shard workers ran at once and both succeeded" '[ $rc0 -eq 0 ] && [ $rc1 -eq 0 ]' "$(cat shard0.txt shard1.txt)"
n0=$(sed -n 's/.*written \([0-9,]*\).*/\1/p' shard0.txt | tr -d ,)
n1=$(sed -n 's/.*written \([0-9,]*\).*/\1/p' shard1.txt | tr -d ,)
check "each shard scored a part ($n0 + $n1)" '[ "${n0:-0}" -gt 0 ] && [ "${n1:-0}" -gt 0 ] && [ $((n0 + n1)) -eq 5000 ]'
check "every row scored exactly once" '[ "$(P "SELECT count(*), count(DISTINCT transaction_id) FROM sharded")" = "5000|5000" ]'
check "sharded scores = unsharded scores" \
    '[ "$(P "SELECT count(*) FROM sharded s JOIN scores c USING (transaction_id) WHERE s.probabilities_1 = c.probabilities_1 AND s.label = c.label")" = 5000 ]'

# ---- kill -9 and resume ------------------------------------------------------------
P "CREATE TABLE big AS SELECT k || '_' || transaction_id AS transaction_id, amount, log_amount_ratio, merchant_category, hour, is_weekend, distance_from_home_km, distance_from_last_txn_km, card_present, txn_count_1h, txn_count_24h, avg_amount_30d, days_since_last_txn FROM tx, generate_series(1, 20) k" >/dev/null
R=( "${B[@]}" --model "$MODEL" --input "$PG_URL?table=big" --threads 2 --chunk-rows 500 --checkpoint-ms 0 )
"${R[@]}" --output "$PG_URL?table=big_ref" --job-id ref >/dev/null 2>&1
for seed in 1 2; do
    "${R[@]}" --output "$PG_URL?table=big_$seed" --job-id crash$seed >/dev/null 2>&1 &
    pid=$!
    # the random point is within the job: wait for its first checkpoint file (a slow, loaded
    # start must not turn the test into "killed before it began")
    for _ in $(seq 200); do [ -f home/jobs/crash$seed.json ] && break; sleep 0.1; done
    sleep "$(awk -v s=$seed 'BEGIN { srand(s * 11); printf "%.2f", 0.3 + rand() * 0.8 }')"
    kill -9 $pid 2>/dev/null
    wait $pid 2>/dev/null
    at=$(grep -o '"source_done":[0-9]*' home/jobs/crash$seed.json | cut -d: -f2)
    "${R[@]}" --output "$PG_URL?table=big_$seed" --job-id crash$seed --resume >/dev/null 2>err.txt; rc=$?
    check "kill -9 (seed $seed, at row $at) + --resume: same 100000 rows, none twice" \
        '[ $rc -eq 0 ] && [ "$(P "SELECT count(*), count(DISTINCT transaction_id) FROM big_$seed")" = "100000|100000" ] && [ "$(P "SELECT count(*) FROM big_$seed s JOIN big_ref r USING (transaction_id) WHERE s.probabilities_1 = r.probabilities_1")" = 100000 ]' \
        "rc=$rc $(cat err.txt)"
done

check_done
