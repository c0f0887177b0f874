#!/usr/bin/env bash
# test_sql.sh -- the SQLite and PostgreSQL extensions (label: integration).
#   usage: test_sql.sh INFERA SOURCE_DIR SQLITE_EXT PG_EXT_DIR
# SQLITE_EXT: build/infera_sqlite.so; PG_EXT_DIR: build/pg (infera.so,
# infera.control, infera--0.1.sql), or "" when the PostgreSQL extension was
# not built.  Predictions in SQL must be bit-identical to `infera batch` for
# the same rows, and bad arguments must raise SQL errors (the backend lives on).
# The PostgreSQL part installs the extension into the server's directories
# (pg_config --pkglibdir / --sharedir), so it needs to run as root (CI does).
set -u
. "$(dirname "$0")/../check.sh"
INFERA=$1
SRC=$2
SQLITE_EXT=$3
PG_EXT=${4:-}
EX=$SRC/examples/fraud
MODEL=$EX/fraud_xgb.onnx
T=$(mktemp -d /tmp/infera-sql-test.XXXXXX)
. "$SRC/tests/integration/services.sh"
trap 'stop_postgres; rm -rf "$T"' EXIT
cd "$T" || exit 1
chmod 755 "$T"
export INFERA_HOME=$T/home
strip() { awk -F, 'NR>1 { NF--; print }' OFS=, "$1" | sort; }
B=( "$INFERA" batch --progress none --id-column transaction_id )
EXT=${SQLITE_EXT%.so}

# reference: infera batch over the same rows
"${B[@]}" --model "$MODEL" --input "csv:$EX/transactions.csv" --output csv:ref.csv >/dev/null 2>&1
"${B[@]}" --no-score --input "csv:$EX/transactions.csv" --output "sqlite:tx.db?table=tx" >/dev/null 2>&1
FEATURES="'amount', amount, 'log_amount_ratio', log_amount_ratio, 'merchant_category', merchant_category, 'hour', hour, 'is_weekend', is_weekend, 'distance_from_home_km', distance_from_home_km, 'distance_from_last_txn_km', distance_from_last_txn_km, 'card_present', card_present, 'txn_count_1h', txn_count_1h, 'txn_count_24h', txn_count_24h, 'avg_amount_30d', avg_amount_30d, 'days_since_last_txn', days_since_last_txn"

# ---- SQLite ------------------------------------------------------------------------
sqlite3 tx.db >sq.out 2>sq.err <<EOF
.load $EXT
CREATE TABLE sqlscores AS
  SELECT transaction_id,
         infera_predict('$MODEL', json_object($FEATURES)) AS label,
         json_extract(infera_predict_json('$MODEL', json_object($FEATURES)), '\$.probabilities_0') AS probabilities_0,
         json_extract(infera_predict_json('$MODEL', json_object($FEATURES)), '\$.probabilities_1') AS probabilities_1,
         json_extract(infera_predict_json('$MODEL', json_object($FEATURES)), '\$.model_name') AS model_name,
         json_extract(infera_predict_json('$MODEL', json_object($FEATURES)), '\$.model_version') AS model_version,
         json_extract(infera_predict_json('$MODEL', json_object($FEATURES)), '\$.pipeline_hash') AS pipeline_hash,
         'x' AS scored_at
  FROM tx;
SELECT count(*) FROM sqlscores;
EOF
check "sqlite: .load and score 5000 rows" '[ "$(cat sq.out)" = 5000 ] && [ ! -s sq.err ]' "$(cat sq.out sq.err)"
"${B[@]}" --no-score --input "sqlite:tx.db?query=SELECT%20*%20FROM%20sqlscores" --output csv:sq.csv >/dev/null 2>&1
check "sqlite: infera_predict / _json bit-identical to infera batch" 'diff -q <(strip sq.csv) <(strip ref.csv) >/dev/null' \
    "$(diff <(strip sq.csv) <(strip ref.csv) | head -3)"
sqlerr() { sqlite3 tx.db ".load $EXT" "$1" 2>&1 >/dev/null; }
check "sqlite: unknown model -> SQL error" 'sqlerr "SELECT infera_predict('"'nosuch@1'"', '"'{}'"')" | grep -q "infera: model .nosuch@1."'
check "sqlite: missing model file -> SQL error" 'sqlerr "SELECT infera_predict('"'/no/such.onnx'"', '"'{}'"')" | grep -q "no/such.onnx"'
check "sqlite: malformed JSON -> SQL error" 'sqlerr "SELECT infera_predict('"'$MODEL'"', '"'{nope'"')" | grep -q "not a JSON object"'
FEW="SELECT infera_predict_json('$MODEL', '{\"a\":1}')"
check "sqlite: too few features -> SQL error" 'sqlerr "$FEW" | grep -q "needs 12"' "$(sqlerr "$FEW")"
# a spec-less model maps each call's record by its own keys, also after other keys on the connection
# (tests/batch/gen_models.py: Y = a + 10 b + 100 c)
SUM3=$SRC/tests/batch/data/sum3.onnx
cat >shape.sql <<EOF
.load $EXT
SELECT infera_predict('$SUM3', json_object('a', 1, 'b', 2, 'c', 3));
SELECT infera_predict('$SUM3', json_object('x', 4, 'y', 5, 'z', 6));
SELECT infera_predict('$SUM3', json_object('a', 7, 'b', 8, 'c', 9));
EOF
SHAPE=$(sqlite3 :memory: <shape.sql 2>&1 | tr '\n' ' ')
check "sqlite: records with other keys on one connection are mapped by their own keys" '[ "$SHAPE" = "321.0 654.0 987.0 " ]' "$SHAPE"
JUNK="SELECT infera_predict('$SUM3', '{\"a\":1,\"b\":2,\"c\":3} junk')"
check "sqlite: text after the JSON object -> SQL error" 'sqlerr "$JUNK" | grep -q "text after the record"' "$(sqlerr "$JUNK")"
check "sqlite: NULL record -> NULL" '[ "$(sqlite3 tx.db ".load $EXT" "SELECT coalesce(infera_predict('"'$MODEL'"', NULL), '"'null'"')")" = null ]'
# a spec with a lookup, a rejected record, a registry reference
cp "$EX/card_features.db" .
"$INFERA" registry register fraud "$MODEL" >/dev/null 2>&1
check "sqlite: registry reference (INFERA_HOME)" \
    '[ "$(sqlite3 tx.db ".load $EXT" "SELECT json_extract(infera_predict_json('"'fraud@1'"', json_object($FEATURES)), '"'\$.model_version'"') FROM tx LIMIT 1")" = 1 ]'

# a required lookup that finds nothing: an SQL error with the reason (the key is sensitive: not named)
mkdir -p specdir
sed 's#"event_time": "ts",#"event_time": "ts", "required": true,#' "$EX/fraud_spec.json" >specdir/req_spec.json
cp "$EX/card_features.db" specdir/
"$INFERA" registry register fraudreq "$MODEL" --pipeline specdir/req_spec.json >/dev/null 2>&1
REC="json_object('transaction_id', 't1', 'card_id', '%s', 'ts', '2024-03-10T16:09:25Z', 'amount', 3.05, 'merchant_category', 5, 'distance_from_home_km', 12.2, 'distance_from_last_txn_km', 4.4, 'card_present', 1)"
NOCARD="SELECT infera_predict('fraudreq@1', $(printf "$REC" card_nobody))"
check "sqlite: required lookup without the key -> SQL error with the reason" \
    'sqlerr "$NOCARD" | grep -q "record rejected: card_id: lookup card_history: key not found (field .card_id. is sensitive)" && ! sqlerr "$NOCARD" | grep -q card_nobody' \
    "$(sqlerr "$NOCARD")"
KNOWN="SELECT typeof(infera_predict('fraudreq@1', $(printf "$REC" card00000)))"
check "sqlite: required lookup with a known key scores (from another cwd: absolute store path)" \
    '[ "$(cd / && sqlite3 "$T/tx.db" ".load $EXT" "$KNOWN" 2>&1)" = real ]' "$(cd / && sqlite3 "$T/tx.db" ".load $EXT" "$KNOWN" 2>&1)"

# ---- PostgreSQL ----------------------------------------------------------------------
if [ -z "$PG_EXT" ] || [ ! -f "$PG_EXT/infera.so" ]; then
    bad "PostgreSQL extension not built (postgresql-server-dev-15 missing?)"
    check_done
fi
LIBDIR=$(pg_config --pkglibdir)
SHAREDIR=$(pg_config --sharedir)/extension
if ! install_pg_extension "$PG_EXT"; then
    bad "cannot install the extension into $LIBDIR and $SHAREDIR (run as root)"
    check_done
fi
if ! start_postgres; then
    bad "PostgreSQL could not be started"
    check_done
fi
P() { psql -X -q -t -A "$PG_URL" -c "$1" 2>&1; }
"${B[@]}" --no-score --input "csv:$EX/transactions.csv" --output "$PG_URL?table=tx" >/dev/null 2>&1
P "CREATE EXTENSION infera" >ce.txt
check "CREATE EXTENSION infera" '[ "$(P "SELECT extversion FROM pg_extension WHERE extname = '"'infera'"'")" = 0.1 ]' "$(cat ce.txt)"
PAR=$(P "SELECT string_agg(p.proname || ':' || p.proparallel::text, ' ' ORDER BY p.proname, p.oid) FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace WHERE n.nspname = 'infera' AND p.proname LIKE 'predict%'")
check "predict and predict_json are PARALLEL SAFE" '[ "$PAR" = "predict:s predict:s predict_json:s predict_json:s predict_query:u" ]' "$PAR"
P "CREATE TABLE sqlscores AS SELECT transaction_id,
      infera.predict('$MODEL', json_build_object($FEATURES))::bigint AS label,
      (infera.predict_json('$MODEL', json_build_object($FEATURES)) ->> 'probabilities_0')::float8 AS probabilities_0,
      (infera.predict_json('$MODEL', json_build_object($FEATURES)) ->> 'probabilities_1')::float8 AS probabilities_1,
      infera.predict_json('$MODEL', json_build_object($FEATURES)) ->> 'model_name' AS model_name,
      infera.predict_json('$MODEL', json_build_object($FEATURES)) ->> 'model_version' AS model_version,
      infera.predict_json('$MODEL', json_build_object($FEATURES)) ->> 'pipeline_hash' AS pipeline_hash,
      'x' AS scored_at FROM tx" >pg.err
check "postgresql: infera.predict over 5000 rows" '[ "$(P "SELECT count(*) FROM sqlscores")" = 5000 ]' "$(cat pg.err)"
"${B[@]}" --no-score --input "$PG_URL?query=SELECT%20*%20FROM%20sqlscores" --output csv:pg.csv >/dev/null 2>&1
check "postgresql: predictions bit-identical to infera batch" 'diff -q <(strip pg.csv) <(strip ref.csv) >/dev/null' \
    "$(diff <(strip pg.csv) <(strip ref.csv) | head -3)"
P "CREATE TABLE qscores AS SELECT id AS transaction_id, (prediction->>'label')::bigint AS label,
      (prediction->>'probabilities_0')::float8 AS probabilities_0, (prediction->>'probabilities_1')::float8 AS probabilities_1,
      prediction->>'model_name' AS model_name, prediction->>'model_version' AS model_version,
      prediction->>'pipeline_hash' AS pipeline_hash, 'x' AS scored_at
    FROM infera.predict_query('$MODEL', 'SELECT transaction_id, $(echo "$FEATURES" | sed "s/'[a-z0-9_]*', //g") FROM tx', 'transaction_id', 700)" >pgq.err
"${B[@]}" --no-score --input "$PG_URL?query=SELECT%20*%20FROM%20qscores" --output csv:pgq.csv >/dev/null 2>&1
check "postgresql: predict_query (batches of 700) bit-identical too" 'diff -q <(strip pgq.csv) <(strip ref.csv) >/dev/null' \
    "$(cat pgq.err; diff <(strip pgq.csv) <(strip ref.csv) | head -3)"
# PARALLEL SAFE in a real parallel query: a forced parallel plan (2 workers launched, the
# functions evaluated in the workers' scans under the Gather) gives the serial results: the
# same count and the same order-independent digest of (id, predict, predict_json) per row
PQ="SELECT count(*), sum(hashtext(transaction_id || ':' || infera.predict('$MODEL', json_build_object($FEATURES))::text
       || ':' || infera.predict_json('$MODEL', json_build_object($FEATURES))::text)::numeric) FROM tx"
PARALLEL="SET parallel_setup_cost = 0; SET parallel_tuple_cost = 0; SET min_parallel_table_scan_size = 0;
          SET max_parallel_workers_per_gather = 2; SET force_parallel_mode = on; SET parallel_leader_participation = off;"
PLAN=$(P "$PARALLEL EXPLAIN (ANALYZE, VERBOSE, COSTS OFF, TIMING OFF, SUMMARY OFF) $PQ")
PAR=$(P "$PARALLEL $PQ")
SER=$(P "SET max_parallel_workers_per_gather = 0; $PQ")
check "postgresql: PARALLEL SAFE functions run in 2 parallel workers" \
    'echo "$PLAN" | grep -q "Workers Launched: 2" && echo "$PLAN" | grep -A2 "Partial Aggregate" | grep -q "infera.predict("' \
    "$(echo "$PLAN" | cut -c1-160 | head -12)"
check "postgresql: parallel results equal the serial ones (5000 rows, same digest)" \
    '[ "$PAR" = "$SER" ] && [ "${SER%%|*}" = 5000 ]' "$PAR vs $SER"
# errors: SQL errors, and the same backend answers the next statement
check "postgresql: unknown model -> SQL error, backend alive" \
    'psql -X -q -t -A "$PG_URL" -c "SELECT infera.predict('"'nosuch@1'"', '"'{}'"'::jsonb)" -c "SELECT 41 + 1" 2>&1 | tr "\n" " " | grep -q "ERROR:  infera: model \"nosuch@1\".*42"'
check "postgresql: not an object -> SQL error" 'P "SELECT infera.predict('"'$MODEL'"', '"'[1,2]'"'::jsonb)" | grep -q "must be a JSON object"'
check "postgresql: jsonb for a spec-less model -> SQL error with a hint" \
    'P "SELECT infera.predict('"'$MODEL'"', to_jsonb(t)) FROM tx t LIMIT 1" | grep -q "jsonb does not keep the order"'
NOFILE="SELECT infera.predict_json('/no/such.onnx', '{\"a\":1}'::json)"
check "postgresql: missing model file -> SQL error" 'P "$NOFILE" | grep -q "ERROR:  infera: model \"/no/such.onnx\""' "$(P "$NOFILE")"
# predict_query's id column is not a feature of a spec-less model (an integer id would be taken for one)
cp "$SRC/tests/batch/data/sum3.onnx" "$T/sum3.onnx"
SUM3PG=$T/sum3.onnx
P "CREATE TABLE ids AS SELECT g AS id, (g % 7)::float8 AS a, 1.0::float8 AS b, 2.0::float8 AS c FROM generate_series(1, 50) g" >/dev/null
PQID=$(P "SELECT count(*), sum(((prediction->>'Y')::float8 = (id::int % 7) + 210)::int) FROM infera.predict_query('$SUM3PG', 'SELECT id, a, b, c FROM ids', 'id', 16)")
check "postgresql: predict_query's integer id column is not a feature" '[ "$PQID" = "50|50" ]' "$PQID"
PSHAPE=$(P "SELECT infera.predict('$SUM3PG', json_build_object('a', 1, 'b', 2, 'c', 3)), infera.predict('$SUM3PG', json_build_object('x', 4, 'y', 5, 'z', 6))")
check "postgresql: records with other keys in one backend are mapped by their own keys" '[ "$PSHAPE" = "321|654" ]' "$PSHAPE"
check "postgresql: NULL record -> NULL (STRICT)" '[ -z "$(P "SELECT infera.predict('"'$MODEL'"', NULL::jsonb)")" ]'
check "postgresql: server still up after the errors" '[ "$(P "SELECT 1")" = 1 ]'

check_done
