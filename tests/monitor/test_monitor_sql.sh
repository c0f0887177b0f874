#!/usr/bin/env bash
# test_monitor_sql.sh -- the prediction log of the SQL functions (issue 23; label: integration).
#   usage: test_monitor_sql.sh INFERA SOURCE_DIR SQLITE_EXT PG_EXT_DIR
# SQLite: infera_log_predictions(sink [, sample]) per connection; PostgreSQL: the GUCs
# infera.log_predictions / infera.log_sample.  What was logged is read back with Python's
# sqlite3/json and psql, and checked against independent sources: the raw input rows (the
# spec's raw fields), `infera features` (the model-input columns, to float32), the values the
# SQL functions returned (outputs, lineage), a binomial bound on the sample size; the spec's
# sensitive card_id never appears.  The PostgreSQL part loads build/pg/infera.so by its
# absolute path (CREATE FUNCTION ... AS '/path/infera.so'): nothing is installed into the
# server's directories.
set -u
. "$(dirname "$0")/../check.sh"
INFERA=$1
SRC=$2
SQLITE_EXT=$3
PG_EXT=${4:-}
EX=$SRC/examples/fraud
T=$(mktemp -d /tmp/infera-monsql-test.XXXXXX)
. "$SRC/tests/integration/services.sh"
trap 'stop_postgres; rm -rf "$T"' EXIT
cd "$T" || exit 1
chmod 755 "$T"
export INFERA_HOME=$T/home
EXT=${SQLITE_EXT%.so}
PY=/usr/bin/python3 # Debian's python3-numpy
$PY -c "import numpy" 2>/dev/null || skip "needs python3-numpy (scripts/install-deps.sh)"

cp "$EX"/{fraud_spec.json,fraud_xgb.onnx,card_features.db,transactions_raw.csv} .
"$INFERA" registry register fraud fraud_xgb.onnx --pipeline fraud_spec.json >/dev/null || { bad "setup: $LINENO"; check_done; }
"$INFERA" batch --progress none --no-score --input csv:transactions_raw.csv --output "sqlite:tx.db?table=tx" >/dev/null 2>&1
"$INFERA" features --spec fraud_spec.json --input csv:transactions_raw.csv --output csv:feat.csv >/dev/null 2>&1
REC="json_object('transaction_id', transaction_id, 'card_id', card_id, 'ts', ts, 'amount', amount,
     'merchant_category', merchant_category, 'distance_from_home_km', distance_from_home_km,
     'distance_from_last_txn_km', distance_from_last_txn_km, 'card_present', card_present)"

# the oracle: every logged row against the raw rows, `infera features` and what SQL returned
# usage: verify.py LOG_KIND LOG_PATH_OR_SQL SQL_RESULTS_CSV N_SEEN SAMPLE [EXPECT_ROWS]
cat >verify.py <<'PY'
import csv, json, math, sqlite3, subprocess, sys
kind, where, results, n_seen, sample = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), float(sys.argv[5])
import numpy as np
if kind == "jsonl":
    text = open(where).read()
    rows = [json.loads(l) for l in text.splitlines()]
elif kind == "sqlite":
    con = sqlite3.connect(where.split("?")[0]); con.row_factory = sqlite3.Row
    rows = [dict(r) for r in con.execute("SELECT * FROM predictions")]
    text = json.dumps(rows)
else:  # psql output of row_to_json
    text = open(where).read()
    rows = [json.loads(l) for l in text.splitlines() if l.strip()]
raw = {r["transaction_id"]: r for r in csv.DictReader(open("transactions_raw.csv"))}
feat = {r["transaction_id"]: r for r in csv.DictReader(open("feat.csv"))}
got = {}
for r in csv.DictReader(open(results)):
    got[r["transaction_id"]] = json.loads(r["prediction"])
errors = []
def err(m):
    if len(errors) < 5: errors.append(m)
n = len(rows)
if len(sys.argv) > 6:
    if n != int(sys.argv[6]): err("rows %d, expected %s" % (n, sys.argv[6]))
else:  # the sample: within 4.5 sd of a binomial(n_seen, sample)
    mean, sd = n_seen * sample, math.sqrt(n_seen * sample * (1 - sample))
    if abs(n - mean) > 4.5 * sd: err("%d rows logged of %d at %g" % (n, n_seen, sample))
if "card_id" in text or "card0" in text: err("the sensitive card_id is in the log")
ids = set()
for r in rows:
    i = r["record_id"]
    if i in ids: err("record %s logged twice" % i)
    ids.add(i)
    if i not in raw or i not in got: err("record %s is not an input row" % i); continue
    p = got[i]
    for k in ("model_name", "model_version", "pipeline_hash"):
        if str(r[k]) != str(p[k]): err("%s %s: %r != %r" % (i, k, r[k], p[k]))
    for k in ("fraud_score", "is_fraud", "decision"):  # the outputs SQL returned, exactly
        if r[k] != p[k]: err("%s %s: logged %r, returned %r" % (i, k, r[k], p[k]))
    def num(v):  # a missing value: null in the log, an empty cell or nan in the CSVs
        return None if v is None or v == "" or (isinstance(v, str) and v.lower() == "nan") else float(v)
    for k in ("amount", "distance_from_home_km", "distance_from_last_txn_km"):  # raw fields, exactly
        if num(r[k]) != num(raw[i][k]): err("%s %s: logged %r, raw %r" % (i, k, r[k], raw[i][k]))
    for k, v in feat[i].items():  # every model input, as the model got it (float32)
        if k == "transaction_id": continue
        a, b = num(r[k]), num(v)
        if (a is None) != (b is None) or (a is not None and np.float32(a) != np.float32(b)):
            err("%s %s: logged %r, features %r" % (i, k, r[k], v))
print("OK %d" % n if not errors else "; ".join(errors))
PY

# ---- SQLite ---------------------------------------------------------------------------
sqlite3 -csv -header tx.db >sq.csv 2>sq.err <<EOF
.load $EXT
.headers off
SELECT infera_log_predictions('jsonl:$T/sq_log.jsonl', 0.3);
.headers on
SELECT transaction_id, infera_predict_json('fraud@1', $REC) AS prediction FROM tx;
.headers off
.output sq_counts.json
SELECT infera_log_predictions(NULL);
.output stdout
SELECT count(infera_predict('fraud@1', $REC)) FROM tx WHERE rowid <= 100;
EOF
sed -i '/^$/d; /^100$/d' sq.csv
check "sqlite: scored 5000 records with logging on" '[ "$(grep -c "^t0" sq.csv)" = 5000 ] && [ ! -s sq.err ]' "$(head -3 sq.err)"
COUNTS=$(tr -d '"' <sq_counts.json)
N=$(wc -l <sq_log.jsonl)
check "sqlite: infera_log_predictions(NULL) drains the log and returns its counts" \
    '[ "$COUNTS" = "{seen:5000,sampled:$N,written:$N,dropped:0}" ]' "$COUNTS vs $N lines"
V=$($PY verify.py jsonl sq_log.jsonl sq.csv 5000 0.3)
check "sqlite: 30 % sample, rows = raw fields, features, returned outputs; no card_id" '[ "${V%% *}" = OK ]' "$V"
check "sqlite: nothing logged after the log is closed" '[ "$(wc -l <sq_log.jsonl)" = "$N" ]'
sqlite3 -csv -header tx.db >sq2.csv 2>sq2.err <<EOF
.load $EXT
.headers off
.output /dev/null
SELECT infera_log_predictions('sqlite:$T/log.db?table=predictions');
.output stdout
.headers on
SELECT transaction_id, infera_predict_json('fraud@1', $REC) AS prediction FROM tx WHERE rowid <= 400;
EOF
V=$($PY verify.py sqlite "$T/log.db" sq2.csv 400 1 400)
check "sqlite: a SQLite log table, every row (sample 1), drained when the connection closes" '[ "${V%% *}" = OK ]' "$V $(head -2 sq2.err)"
ERR=$(sqlite3 tx.db ".load $EXT" "SELECT infera_log_predictions('jsonl:$T/x.jsonl', 1.5)" 2>&1)
check "sqlite: a sample outside (0, 1] is an SQL error" 'echo "$ERR" | grep -q "must be in (0, 1]"' "$ERR"
ERR=$(sqlite3 tx.db ".load $EXT" "CREATE VIEW v AS SELECT infera_log_predictions('jsonl:$T/x.jsonl')" "SELECT * FROM v" 2>&1)
check "sqlite: infera_log_predictions is refused inside a view (SQLITE_DIRECTONLY)" \
    'echo "$ERR" | grep -q "unsafe use of infera_log_predictions" && [ ! -e x.jsonl ]' "$ERR"
# the monitor tools read the SQL log as they read batch's
DRIFT=$("$INFERA" monitor drift fraud@1 --log "jsonl:$T/sq_log.jsonl" --data csv:transactions_raw.csv --json 2>&1)
check "sqlite: monitor drift reads the SQL log (rows = logged rows)" \
    '[ "$(echo "$DRIFT" | $PY -c "import json,sys; print(json.load(sys.stdin)[\"rows\"])")" = "$N" ]' "$(echo "$DRIFT" | head -c 300)"

# ---- PostgreSQL -----------------------------------------------------------------------
if [ -z "$PG_EXT" ] || [ ! -f "$PG_EXT/infera.so" ]; then
    skip_or_fail "PostgreSQL extension not built" || bad "PostgreSQL extension not built"
    check_done
fi
if ! start_postgres; then
    skip_or_fail "PostgreSQL could not be started" || bad "PostgreSQL could not be started"
    check_done
fi
cp "$PG_EXT/infera.so" "$T/infera.so"
chmod -R a+rX "$T"
chmod -R a+w "$T" # the server's backends write the registry's files and the logs
P() { psql -X -q -t -A "$PG_URL" -c "$1" 2>&1; }
REC=${REC//json_object/json_build_object}
"$INFERA" batch --progress none --no-score --id-column transaction_id --input csv:transactions_raw.csv --output "$PG_URL?table=tx" >pgtx.out 2>&1 || cat pgtx.out
{
    echo "CREATE SCHEMA infera;"
    grep -v '^\\echo' "$PG_EXT/infera--0.1.sql" | sed "s|MODULE_PATHNAME|$T/infera.so|; s/^CREATE FUNCTION /CREATE FUNCTION infera./"
} >ext.sql
psql -X -q "$PG_URL" -f ext.sql >ext.err 2>&1
SETS="SET infera.home = '$INFERA_HOME'; SET infera.log_predictions = '$PG_URL?table=predlog'; SET infera.log_sample = 1;"
P "$SETS
   COPY (SELECT transaction_id, infera.predict_json('fraud@1', $REC)::text AS prediction FROM tx WHERE transaction_id < 't050300')
     TO STDOUT WITH (FORMAT csv, HEADER)" >pg.csv
P "$SETS SET infera.log_sample = 0.5;
   COPY (SELECT id AS transaction_id, prediction::text AS prediction
         FROM infera.predict_query('fraud@1', 'SELECT transaction_id, card_id, ts, amount, merchant_category,
              distance_from_home_km, distance_from_last_txn_km, card_present FROM tx WHERE transaction_id >= ''t050300''',
              'transaction_id', 500)) TO STDOUT WITH (FORMAT csv, HEADER)" >pgq.csv
check "postgresql: scored with logging on (predict_json 300, predict_query 4700)" \
    '[ "$(grep -c "^t0" pg.csv)" = 300 ] && [ "$(grep -c "^t0" pgq.csv)" = 4700 ]' "$(cat ext.err; head -3 pg.csv pgq.csv)"
# each backend drains its log when it exits: wait for the rows
for _ in $(seq 100); do
    [ "$(P "SELECT count(*) FROM predlog WHERE record_id < 't050300'")" = 300 ] &&
        grep -q "prediction log: 4700 records" "$PG_DIR/server.log" 2>/dev/null && break
    sleep 0.1
done
P "COPY (SELECT row_to_json(p) FROM predlog p WHERE record_id < 't050300') TO STDOUT" >pg_log.jsonl
V=$($PY verify.py psql pg_log.jsonl pg.csv 300 1 300)
check "postgresql: infera.log_predictions to a PostgreSQL table, every row; rows verified; no card_id" '[ "${V%% *}" = OK ]' "$V"
P "COPY (SELECT row_to_json(p) FROM predlog p WHERE record_id >= 't050300') TO STDOUT" >pgq_log.jsonl
V=$($PY verify.py psql pgq_log.jsonl pgq.csv 4700 0.5)
check "postgresql: predict_query at infera.log_sample = 0.5 (binomial bound); rows verified" '[ "${V%% *}" = OK ]' "$V"
SUMLINE=$(grep -o "prediction log: 4700 records, [0-9]* sampled, [0-9]* logged, 0 dropped" "$PG_DIR/server.log" | head -1)
check "postgresql: the backend's counts in the server log at exit" \
    '[ -n "$SUMLINE" ] && echo "$SUMLINE" | grep -q " $(wc -l <pgq_log.jsonl) logged"' "$SUMLINE"
P "SET infera.home = '$INFERA_HOME'; SET infera.log_predictions = 'jsonl:/nonexistent-dir/x.jsonl';
   SELECT infera.predict('fraud@1', $REC) FROM tx LIMIT 3" >bad.txt
check "postgresql: a log that cannot open warns once and scoring goes on" \
    '[ "$(grep -c WARNING bad.txt)" = 1 ] && [ "$(grep -c "^0\." bad.txt)" = 3 ]' "$(cat bad.txt)"
ERR=$(P "LOAD '$T/infera.so'; SET infera.log_sample = 0")
check "postgresql: infera.log_sample = 0 refused" 'echo "$ERR" | grep -q "outside the valid range"' "$ERR"
check "postgresql: server still up" '[ "$(P "SELECT 1")" = 1 ]'

check_done
