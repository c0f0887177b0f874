#!/usr/bin/env bash
# test_modes.sh -- DESIGN.md §1: the same raw record gives bit-identical
# predictions in every mode (issue 6, "Consistency", runners part; the
# features + run + C API part is test_consistency.sh).
#
# The 5,000 raw fraud transactions (examples/fraud/transactions_raw.csv, spec
# fraud_spec.json with its card-history lookup in card_features.db, model
# fraud_xgb.onnx registered as fraud@1 in a throwaway registry) go through:
#   batch   infera batch csv -> jsonl, default chunks (the reference); 7-row
#           chunks on 2 threads; 1-row chunks on 1 thread
#   serve   infera serve, POST /v2/models/fraud/records with dynamic batching
#           (--max-batch 64 --max-queue-delay-us 2000): one record per request
#           from 16 concurrent connections, and groups of 50 from 4 more, both
#           at once, so rows share engine batches with other requests' rows
#   sqlite  infera_predict_json over a SQLite table holding the raw rows
#   pg      infera.predict_json over a PostgreSQL table holding the raw rows
#           (a throwaway cluster on loopback; the extension is installed into
#           the server's directories, so this part needs root, as CI runs)
# Every prediction field (fraud_score, is_fraud, decision) and the lineage
# stamp (model_name, model_version, pipeline hash) is compared exactly: floats
# as the bits of their double (pred_bits), never with a tolerance.
#
# Lookup store path: the registered spec is a temporary copy of fraud_spec.json
# whose store is the ABSOLUTE path of a copy of card_features.db (a relative
# store path resolves against the current directory of whichever process
# scores, which differs between infera, sqlite3 and the PostgreSQL backend).
#
#   usage: test_modes.sh INFERA PRED_BITS SOURCE_DIR SQLITE_EXT [PG_EXT_DIR]
# Prints one line per check and closes with "N passed, M failed".
set -u
INFERA=$1
BITS=$2
SRC=$3
SQLITE_EXT=$4
PG_EXT=${5:-}
EX=$SRC/examples/fraud
MODEL=$EX/fraud_xgb.onnx
RAW=$EX/transactions_raw.csv
N=5000
T=$(mktemp -d /tmp/infera-modes.XXXXXX)
. "$SRC/tests/integration/services.sh"
SERVER_PID=
cleanup() {
    [ -n "$SERVER_PID" ] && kill "$SERVER_PID" 2>/dev/null && wait "$SERVER_PID" 2>/dev/null
    stop_postgres
    if [ "$FAIL" = 0 ] || [ -n "${INFERA_TEST_CLEAN:-}" ]; then rm -rf "$T"; else echo "(kept $T for inspection)"; fi
}
trap cleanup EXIT
cd "$T" || exit 1
chmod 755 "$T" # the PostgreSQL backend (user postgres) reads the registry and the store here
export INFERA_HOME=$T/home
unset INFERA_REGISTRY INFERA_TOKEN
PASS=0
FAIL=0
ok() { echo "PASS $1"; PASS=$((PASS + 1)); }
bad() { echo "FAIL $1${2:+: $2}"; FAIL=$((FAIL + 1)); }
check() { if eval "$2"; then ok "$1"; else bad "$1" "${3:-}"; fi; }
FIELDS=(transaction_id fraud_score is_fraud decision model_name model_version pipeline_hash)
canon() { "$BITS" "${FIELDS[@]}" 2>>bits.err | sort; } # JSON lines on stdin -> sorted canonical lines
# same MODE FILE: FILE has the N predictions of the reference, bit for bit
same() {
    local name=$1 file=$2
    local n
    n=$(wc -l <"$file")
    if [ "$n" = "$N" ] && cmp -s "$file" ref.txt; then
        ok "$name: $N predictions bit-identical to the reference"
    else
        bad "$name: predictions differ from the reference ($n rows)" \
            "$(diff ref.txt "$file" | head -6 | tr '\n' ' ')"
    fi
}

# ---- setup: the spec with an absolute store path, a registry version --------------
cp "$EX/card_features.db" card_features.db
chmod 644 card_features.db
sed "s#\"sqlite:card_features.db?#\"sqlite:$T/card_features.db?#" "$EX/fraud_spec.json" >fraud_spec.json
check "spec copy points at the absolute store path" 'grep -q "\"sqlite:$T/card_features.db?table=card_features\"" fraud_spec.json'
"$INFERA" registry register fraud "$MODEL" --pipeline fraud_spec.json >reg.out 2>&1
check "fraud@1 registered with the spec" 'grep -q "registered fraud@1" reg.out' "$(cat reg.out)"

# ---- batch ------------------------------------------------------------------------
B=("$INFERA" batch --model fraud@1 --input "csv:$RAW" --progress none)
"${B[@]}" --output jsonl:batch.jsonl >batch.out 2>&1
check "batch (default chunks): $N rows scored, none rejected" 'grep -q "scored 5,000  written 5,000  rejected 0" batch.out' "$(cat batch.out)"
canon <batch.jsonl >ref.txt
check "reference has $N predictions, each with a float fraud_score" \
    '[ "$(wc -l <ref.txt)" = $N ] && [ "$(cut -f2 ref.txt | grep -c "^0x[0-9a-f]\{16\}$")" = $N ]' "$(head -2 ref.txt)"
check "the reference is not degenerate (more than 1000 distinct scores)" '[ "$(cut -f2 ref.txt | sort -u | wc -l)" -gt 1000 ]'
"${B[@]}" --output jsonl:batch7.jsonl --chunk-rows 7 --threads 2 >batch7.out 2>&1
check "batch --chunk-rows 7 --threads 2 runs" 'grep -q "rejected 0" batch7.out' "$(cat batch7.out)"
canon <batch7.jsonl >batch7.txt
same "batch --chunk-rows 7 --threads 2" batch7.txt
"${B[@]}" --output jsonl:batch1.jsonl --chunk-rows 1 --threads 1 >batch1.out 2>&1
canon <batch1.jsonl >batch1.txt
same "batch --chunk-rows 1 --threads 1" batch1.txt

# The raw records as JSON objects, built from the CSV text itself (numbers keep
# their CSV spelling, empty cells are null): what an online client would send.
awk -F, '{ sub(/\r$/, "") }
    NR == 1 { for (i = 1; i <= NF; i++) h[i] = $i; next }
    { s = "{"
      for (i = 1; i <= NF; i++) {
          v = $i
          if (v == "") v = "null"
          else if (v !~ /^-?[0-9]+(\.[0-9]+)?([eE][-+]?[0-9]+)?$/) v = "\"" v "\""
          s = s (i > 1 ? "," : "") "\"" h[i] "\":" v
      }
      print s "}" }' "$RAW" >raw.json
check "raw CSV turned into $N JSON records" '[ "$(wc -l <raw.json)" = $N ]'

# ---- serve: the records endpoint, dynamic batching, concurrent clients ------------
"$INFERA" serve --port 0 --model fraud=fraud@1 --max-batch 64 --max-queue-delay-us 2000 --max-queue 100000 \
    2>server.log &
SERVER_PID=$!
PORT=
for _ in $(seq 100); do
    PORT=$(sed -nE 's/.*listening on http:\/\/127\.0\.0\.1:([0-9]+).*/\1/p' server.log)
    [ -n "$PORT" ] && break
    sleep 0.1
done
URL=http://127.0.0.1:$PORT
for _ in $(seq 100); do curl -sf "$URL/v2/health/ready" >/dev/null 2>&1 && break; sleep 0.1; done
check "serve: fraud@1 loaded and ready" 'curl -sf "$URL/v2/health/ready" >/dev/null' "$(cat server.log)"
# curl config files: one transfer per request body, run --parallel
mkdir -p one group
curl_cfg() { # DIR: DIR/req*.json -> curl config on stdout
    local f sep=
    for f in "$1"/req*.json; do
        [ -n "$sep" ] && echo next
        sep=1
        printf 'url = "%s"\ndata-binary = "@%s"\noutput = "%s"\nheader = "Content-Type: application/json"\nwrite-out = "%%{http_code}\\n"\n' \
            "$URL/v2/models/fraud/records" "$f" "${f/req/resp}"
    done
}
awk -v d=one '{ f = sprintf("%s/req%05d.json", d, NR); print "{\"records\":[" $0 "]}" > f; close(f) }' raw.json
awk -v d=group '{ g = int((NR - 1) / 50); body[g] = ((NR - 1) % 50 ? body[g] "," : "") $0 }
    END { for (g in body) { f = sprintf("%s/req%05d.json", d, g); print "{\"records\":[" body[g] "]}" > f; close(f) } }' raw.json
curl_cfg one >one.cfg
curl_cfg group >group.cfg
check "serve: $N single-record bodies and $((N / 50)) bodies of 50 records" \
    '[ "$(ls one/req*.json | wc -l)" = $N ] && [ "$(ls group/req*.json | wc -l)" = $((N / 50)) ]'
metric() { curl -s "$URL/metrics" | awk -v m="$1" '$1 ~ "^"m"[{]" && $1 ~ /model="fraud"/ { s += $2 } END { print s + 0 }'; }
rows0=$(metric nv_inference_count)
runs0=$(metric nv_inference_exec_count)
curl -s -S --no-progress-meter --parallel --parallel-max 16 -K one.cfg >one.codes 2>one.err &
P1=$!
curl -s -S --no-progress-meter --parallel --parallel-max 4 -K group.cfg >group.codes 2>group.err &
P2=$!
wait $P1 $P2
rows=$(( $(metric nv_inference_count) - rows0 ))
runs=$(( $(metric nv_inference_exec_count) - runs0 ))
check "serve: every request answered 200" \
    '[ "$(grep -c "^200$" one.codes)" = $N ] && [ "$(grep -c "^200$" group.codes)" = $((N / 50)) ]' \
    "$(sort one.codes group.codes | uniq -c | tr '\n' ' ') $(head -3 one.err group.err)"
check "serve: rows were batched with other requests' rows ($rows rows in $runs engine runs)" \
    '[ "$rows" = $((2 * N)) ] && [ "$runs" -lt $(((N + N / 50) / 2)) ]'
awk 1 one/resp*.json | canon >serve_one.txt
same "serve records, 1 per request, batched" serve_one.txt
awk 1 group/resp*.json | canon >serve_group.txt
same "serve records, 50 per request, batched" serve_group.txt
kill "$SERVER_PID" 2>/dev/null && wait "$SERVER_PID" 2>/dev/null
SERVER_PID=

# ---- the raw rows in a table ---------------------------------------------------------
"$INFERA" batch --no-score --id-column transaction_id --input "csv:$RAW" --output "sqlite:raw.db?table=tx" \
    --progress none >load.out 2>&1
check "raw rows loaded into SQLite (infera batch --no-score)" '[ "$(sqlite3 raw.db "SELECT count(*) FROM tx")" = $N ]' "$(cat load.out)"
COLS=$(head -1 "$RAW" | tr -d '\r' | tr ',' ' ')
SQ_OBJ=$(for c in $COLS; do printf "'%s', %s, " "$c" "$c"; done | sed 's/, $//')

if [ -n "${INFERA_SKIP_SQL_EXTENSIONS:-}" ]; then
    echo "skip SQLite and PostgreSQL modes: sanitizer build (its extensions cannot load into sqlite3/postgres)"
    echo "$PASS passed, $FAIL failed"
    [ "$FAIL" -eq 0 ]
    exit
fi
# ---- SQLite: infera_predict_json ------------------------------------------------------
sqlite3 -batch raw.db ".load ${SQLITE_EXT%.so}" \
    "SELECT transaction_id || char(9) || infera_predict_json('fraud@1', json_object($SQ_OBJ)) FROM tx ORDER BY rowid" \
    >sqlite.jsonl 2>sqlite.err
check "sqlite: infera_predict_json over the table" '[ ! -s sqlite.err ] && [ "$(wc -l <sqlite.jsonl)" = $N ]' \
    "$(head -3 sqlite.err)"
canon <sqlite.jsonl >sqlite.txt
same "sqlite infera_predict_json" sqlite.txt

# ---- PostgreSQL: infera.predict_json -------------------------------------------------
pg_part() {
    if [ -z "$PG_EXT" ] || [ ! -f "$PG_EXT/infera.so" ]; then
        bad "postgresql: extension not built (postgresql-server-dev-15 missing?)"
        return
    fi
    if ! command -v pg_config >/dev/null ||
       ! install -m 755 "$PG_EXT/infera.so" "$(pg_config --pkglibdir)/infera.so" 2>/dev/null ||
       ! install -m 644 "$PG_EXT/infera.control" "$PG_EXT/infera--0.1.sql" "$(pg_config --sharedir)/extension/" 2>/dev/null; then
        bad "postgresql: cannot install the extension into the server's directories (run as root)"
        return
    fi
    if ! start_postgres; then
        bad "postgresql: the server could not be started"
        return
    fi
    # the backend runs as postgres: it reads the registry (and may write its lineage) there
    [ "$(id -u)" = 0 ] && chown -R postgres "$T/home"
    P() { psql -X -q -t -A "$PG_URL" -c "SET infera.home = '$T/home'" -c "$1" 2>&1; }
    "$INFERA" batch --no-score --id-column transaction_id --input "csv:$RAW" --output "$PG_URL?table=tx" \
        --progress none >pgload.out 2>&1
    check "postgresql: raw rows loaded (infera batch --no-score)" '[ "$(P "SELECT count(*) FROM tx")" = $N ]' \
        "$(cat pgload.out)"
    P "CREATE EXTENSION infera" >ce.out
    check "postgresql: CREATE EXTENSION infera" '[ "$(P "SELECT extversion FROM pg_extension WHERE extname = '"'infera'"'")" = 0.1 ]' \
        "$(cat ce.out)"
    local PG_OBJ
    PG_OBJ=$(for c in $COLS; do printf "'%s', %s, " "$c" "$c"; done | sed 's/, $//')
    P "SELECT transaction_id || E'\\t' || infera.predict_json('fraud@1', json_build_object($PG_OBJ))::text FROM tx" >pg.jsonl
    check "postgresql: infera.predict_json (json records) over the table" '[ "$(wc -l <pg.jsonl)" = $N ] && ! grep -q ERROR pg.jsonl' \
        "$(grep -m3 ERROR pg.jsonl)"
    canon <pg.jsonl >pg.txt
    same "postgresql infera.predict_json (json)" pg.txt
    P "SELECT transaction_id || E'\\t' || infera.predict_json('fraud@1', to_jsonb(t))::text FROM tx t" >pgb.jsonl
    canon <pgb.jsonl >pgb.txt
    same "postgresql infera.predict_json (jsonb rows)" pgb.txt
}
pg_part

[ -s bits.err ] && grep -v '^pred_bits: [0-9]* predictions' bits.err | head -5 | sed 's/^/    /'
echo "$PASS passed, $FAIL failed"
[ "$FAIL" -eq 0 ]
