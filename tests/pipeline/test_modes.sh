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
#   infer   infera serve's KServe tensor path, POST /v2/models/fraud/infer with
#           the feature rows of `infera features` (50 per request, FP32):
#           probabilities[:, 1] must be the records modes' fraud_score
#   stream  infera stream jsonl:- -> jsonl:- (the MLP; the fraud model's stream
#           modes are in tests/stream/test_stream.sh)
# A float model, the MLP (tests/models/mlp.onnx: Gemm+Relu, Gemm, Softmax, the
# GEMM path, default pipeline: the 32 numeric columns of a generated CSV),
# goes through every mode as well: batch (default and 7-row chunks), serve
# records, serve /infer (tensor bodies from the same CSV text), stream,
# SQLite and PostgreSQL; logits and probabilities compared bit for bit.
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
. "$(dirname "$0")/../check.sh"
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
FIELDS=(transaction_id fraud_score is_fraud decision model_name model_version pipeline_hash)
canon() { "$BITS" "${FIELDS[@]}" 2>>bits.err | sort; } # JSON lines on stdin -> sorted canonical lines
# same MODE FILE [REF [ROWS]]: FILE has the ROWS (N) predictions of REF (ref.txt), bit for bit
same() {
    local name=$1 file=$2 ref=${3:-ref.txt} rows=${4:-$N}
    local n
    n=$(wc -l <"$file")
    if [ "$n" = "$rows" ] && cmp -s "$file" "$ref"; then
        ok "$name: $rows predictions bit-identical to the reference"
    else
        bad "$name: predictions differ from the reference ($n rows)" \
            "$(diff "$ref" "$file" | head -6 | tr '\n' ' ')"
    fi
}

# ---- setup: the spec with an absolute store path, a registry version --------------
cp "$EX/card_features.db" card_features.db
chmod 644 card_features.db
sed "s#\"sqlite:card_features.db?#\"sqlite:$T/card_features.db?#" "$EX/fraud_spec.json" >fraud_spec.json
check "spec copy points at the absolute store path" 'grep -q "\"sqlite:$T/card_features.db?table=card_features\"" fraud_spec.json'
"$INFERA" registry register fraud "$MODEL" --pipeline fraud_spec.json >reg.out 2>&1
check "fraud@1 registered with the spec" 'grep -q "registered fraud@1" reg.out' "$(cat reg.out)"
# the MLP: 2000 rows of an id and 32 numbers (4 decimals, the same text in every mode), and a
# spec naming the id (the default pipeline carries no id through serve and stream) and the order
MLP_N=2000
MLP_X=$(seq 0 31 | sed 's/^/x/')
{
    printf '{"inputs": {"row_id": {"type": "string", "id": true}'
    for c in $MLP_X; do printf ', "%s": {"type": "float"}' "$c"; done
    printf '}, "model_inputs": {"input": {"order": [%s]}}}\n' "$(printf '"%s", ' $MLP_X | sed 's/, $//')"
} >mlp_spec.json
"$INFERA" registry register mlp "$SRC/tests/models/mlp.onnx" --pipeline mlp_spec.json >mreg.out 2>&1
check "mlp@1 registered with its spec" 'grep -q "registered mlp@1" mreg.out' "$(cat mreg.out)"
awk -v n=$MLP_N 'BEGIN { srand(42); printf "row_id"; for (j = 0; j < 32; j++) printf ",x%d", j; print ""
    for (i = 0; i < n; i++) { printf "r%05d", i; for (j = 0; j < 32; j++) printf ",%.4f", rand() * 4 - 2; print "" } }' >mlp.csv
MFIELDS=(row_id logits_0 logits_1 probabilities_0 probabilities_1 model_name model_version pipeline_hash)
mcanon() { "$BITS" "${MFIELDS[@]}" 2>>bits.err | sort; }

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
MB=("$INFERA" batch --model mlp@1 --input csv:mlp.csv --id-column row_id --progress none)
"${MB[@]}" --output jsonl:mlp_batch.jsonl >mbatch.out 2>&1
check "mlp batch: $MLP_N rows scored" 'grep -q "scored 2,000  written 2,000  rejected 0" mbatch.out' "$(cat mbatch.out)"
mcanon <mlp_batch.jsonl >mref.txt
check "mlp reference: $MLP_N predictions, float logits, not degenerate" \
    '[ "$(wc -l <mref.txt)" = $MLP_N ] && [ "$(cut -f2 mref.txt | sort -u | wc -l)" -gt 1000 ]' "$(head -2 mref.txt)"
"${MB[@]}" --output jsonl:mlp_batch7.jsonl --chunk-rows 7 --threads 2 >/dev/null 2>&1
mcanon <mlp_batch7.jsonl >mlp_batch7.txt
same "mlp batch --chunk-rows 7 --threads 2" mlp_batch7.txt mref.txt $MLP_N
# the MLP's records as JSON objects (numbers in their CSV spelling)
awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) h[i] = $i; next }
    { s = "{\"" h[1] "\":\"" $1 "\""; for (i = 2; i <= NF; i++) s = s ",\"" h[i] "\":" $i; print s "}" }' mlp.csv >mlp.json
# ---- stream: the MLP from stdin to stdout --------------------------------------------
"$INFERA" stream --model mlp@1 --progress-ms 0 --input jsonl:- --output jsonl:- <mlp.json >mlp_stream.jsonl 2>mstream.err
mcanon <mlp_stream.jsonl >mlp_stream.txt
same "mlp stream jsonl:- -> jsonl:-" mlp_stream.txt mref.txt $MLP_N

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
"$INFERA" serve --port 0 --model fraud=fraud@1 --model mlp=mlp@1 --max-batch 64 --max-queue-delay-us 2000 --max-queue 100000 \
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
curl_cfg() { # DIR [PATH]: DIR/req*.json -> curl config on stdout (PATH: /v2/models/fraud/records)
    local f sep=
    for f in "$1"/req*.json; do
        [ -n "$sep" ] && echo next
        sep=1
        printf 'url = "%s"\ndata-binary = "@%s"\noutput = "%s"\nheader = "Content-Type: application/json"\nwrite-out = "%%{http_code}\\n"\n' \
            "$URL${2:-/v2/models/fraud/records}" "$f" "${f/req/resp}"
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

# ---- serve: the KServe tensor path (/infer) -------------------------------------------
# fraud: the feature rows of `infera features` (exact float text) as FP32 tensors of 50 rows;
# rows with a missing feature (NaN: no JSON number spells it) are left out
"$INFERA" features --spec fraud_spec.json --model "$MODEL" --input "csv:$RAW" --output csv:feat.csv >feat.out 2>&1
check "infer: infera features wrote $N feature rows" '[ "$(wc -l <feat.csv)" = $((N + 1)) ]' "$(cat feat.out)"
awk -F, 'NR == 1 || !/(,,|,$)/' feat.csv >feat_full.csv
NI=$(($(wc -l <feat_full.csv) - 1))
check "infer: $NI of the $N feature rows have no missing value" '[ "$NI" -gt 4000 ]'
# tensor_bodies DIR ROWS NAME COLS FILE: FILE's CSV rows (id, then COLS numbers) as /infer bodies of ROWS rows
tensor_bodies() {
    mkdir -p "$1"
    awk -F, -v d="$1" -v k="$2" -v name="$3" -v cols="$4" '
        function flush() { if (r) { f = sprintf("%s/req%05d.json", d, b++)
            printf "{\"inputs\":[{\"name\":\"%s\",\"shape\":[%d,%d],\"datatype\":\"FP32\",\"data\":[%s]}]}\n", name, r, cols, s > f
            close(f); r = 0; s = "" } }
        NR == 1 { next }
        { for (i = 2; i <= NF; i++) s = s (s == "" ? "" : ",") $i; if (++r == k) flush() }
        END { flush() }' "$5"
}
tensor_bodies infer 50 input 12 feat_full.csv
curl_cfg infer /v2/models/fraud/infer >infer.cfg
curl -s -S --no-progress-meter --parallel --parallel-max 8 -K infer.cfg >infer.codes 2>infer.err
check "infer: every /infer request answered 200" '[ "$(grep -c "^200$" infer.codes)" = $(((NI + 49) / 50)) ]' \
    "$(sort infer.codes | uniq -c | tr '\n' ' ') $(head -3 infer.err) $(head -c 300 infer/resp00000.json)"
awk 1 infer/resp*.json | "$BITS" --infer probabilities:1 2>>bits.err >infer_bits.txt
awk -F, 'NR > 1 { print $1 }' feat_full.csv >infer_ids.txt
paste infer_ids.txt infer_bits.txt | sort >infer.txt
awk -F'\t' 'NR == FNR { keep[$1]; next } ($1 in keep) { print $1 "\t" $2 }' infer_ids.txt ref.txt >ref_score.txt
same "serve /infer (features as FP32 tensors): probabilities[:, 1] = fraud_score" infer.txt ref_score.txt $NI
# the MLP: records (25 per request) and tensors (25 rows per request) from the same CSV text
mkdir -p mrec
awk -v d=mrec '{ g = int((NR - 1) / 25); body[g] = ((NR - 1) % 25 ? body[g] "," : "") $0 }
    END { for (g in body) { f = sprintf("%s/req%05d.json", d, g); print "{\"records\":[" body[g] "]}" > f; close(f) } }' mlp.json
curl_cfg mrec /v2/models/mlp/records >mrec.cfg
tensor_bodies minfer 25 input 32 mlp.csv
curl_cfg minfer /v2/models/mlp/infer >minfer.cfg
curl -s -S --no-progress-meter --parallel --parallel-max 4 -K mrec.cfg >mrec.codes 2>mrec.err &
P1=$!
curl -s -S --no-progress-meter --parallel --parallel-max 4 -K minfer.cfg >minfer.codes 2>minfer.err &
P2=$!
wait $P1 $P2
check "mlp serve: every records and /infer request answered 200" \
    '[ "$(grep -c "^200$" mrec.codes)" = $((MLP_N / 25)) ] && [ "$(grep -c "^200$" minfer.codes)" = $((MLP_N / 25)) ]' \
    "$(sort mrec.codes minfer.codes | uniq -c | tr '\n' ' ') $(head -c 300 minfer/resp00000.json)"
awk 1 mrec/resp*.json | mcanon >mlp_serve.txt
same "mlp serve records, 25 per request, batched" mlp_serve.txt mref.txt $MLP_N
awk 1 minfer/resp*.json | "$BITS" --infer logits probabilities 2>>bits.err >minfer_bits.txt
awk -F, 'NR > 1 { print $1 }' mlp.csv | paste - minfer_bits.txt | sort >mlp_infer.txt
cut -f1-5 mref.txt >mref_values.txt
same "mlp serve /infer (FP32 tensors): logits and probabilities" mlp_infer.txt mref_values.txt $MLP_N
kill "$SERVER_PID" 2>/dev/null && wait "$SERVER_PID" 2>/dev/null
SERVER_PID=

# ---- the raw rows in a table ---------------------------------------------------------
"$INFERA" batch --no-score --id-column transaction_id --input "csv:$RAW" --output "sqlite:raw.db?table=tx" \
    --progress none >load.out 2>&1
check "raw rows loaded into SQLite (infera batch --no-score)" '[ "$(sqlite3 raw.db "SELECT count(*) FROM tx")" = $N ]' "$(cat load.out)"
"$INFERA" batch --no-score --id-column row_id --input csv:mlp.csv --output "sqlite:raw.db?table=mlp" \
    --progress none >mload.out 2>&1
check "mlp rows loaded into SQLite" '[ "$(sqlite3 raw.db "SELECT count(*) FROM mlp")" = $MLP_N ]' "$(cat mload.out)"
COLS=$(head -1 "$RAW" | tr -d '\r' | tr ',' ' ')
SQ_OBJ=$(for c in $COLS; do printf "'%s', %s, " "$c" "$c"; done | sed 's/, $//')
MCOLS=$(head -1 mlp.csv | tr ',' ' ')
MSQ_OBJ=$(for c in $MCOLS; do printf "'%s', %s, " "$c" "$c"; done | sed 's/, $//')

# ---- SQLite: infera_predict_json ------------------------------------------------------
# A sanitizer build's extension needs the sanitizer runtimes loaded first into
# the (uninstrumented) sqlite3: tests/CMakeLists.txt passes them in
# INFERA_SANITIZER_PRELOAD (leak checks off: sqlite3's own allocations at exit).
sq() {
    if [ -n "${INFERA_SANITIZER_PRELOAD:-}" ]; then
        LD_PRELOAD="$INFERA_SANITIZER_PRELOAD" ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" \
            sqlite3 -batch raw.db ".load ${SQLITE_EXT%.so}" "$1"
    else
        sqlite3 -batch raw.db ".load ${SQLITE_EXT%.so}" "$1"
    fi
}
sq "SELECT transaction_id || char(9) || infera_predict_json('fraud@1', json_object($SQ_OBJ)) FROM tx ORDER BY rowid" \
    >sqlite.jsonl 2>sqlite.err
check "sqlite: infera_predict_json over the table" '[ ! -s sqlite.err ] && [ "$(wc -l <sqlite.jsonl)" = $N ]' \
    "$(head -3 sqlite.err)"
canon <sqlite.jsonl >sqlite.txt
same "sqlite infera_predict_json" sqlite.txt
sq "SELECT row_id || char(9) || infera_predict_json('mlp@1', json_object($MSQ_OBJ)) FROM mlp ORDER BY rowid" \
    >mlp_sqlite.jsonl 2>mlp_sqlite.err
check "mlp sqlite: infera_predict_json over the table" '[ ! -s mlp_sqlite.err ]' "$(head -3 mlp_sqlite.err)"
mcanon <mlp_sqlite.jsonl >mlp_sqlite.txt
same "mlp sqlite infera_predict_json" mlp_sqlite.txt mref.txt $MLP_N

# ---- PostgreSQL: infera.predict_json -------------------------------------------------
pg_part() {
    if [ -z "$PG_EXT" ] || [ ! -f "$PG_EXT/infera.so" ]; then
        bad "postgresql: extension not built (postgresql-server-dev-15 missing?)"
        return
    fi
    if ! command -v pg_config >/dev/null ||
       ! install_pg_extension "$PG_EXT"; then
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
    "$INFERA" batch --no-score --id-column row_id --input csv:mlp.csv --output "$PG_URL?table=mlp" \
        --progress none >mpgload.out 2>&1
    check "mlp postgresql: rows loaded" '[ "$(P "SELECT count(*) FROM mlp")" = $MLP_N ]' "$(cat mpgload.out)"
    P "SELECT row_id || E'\\t' || infera.predict_json('mlp@1', to_jsonb(t))::text FROM mlp t" >mlp_pg.jsonl
    mcanon <mlp_pg.jsonl >mlp_pg.txt
    same "mlp postgresql infera.predict_json" mlp_pg.txt mref.txt $MLP_N
}
if [ -n "${INFERA_SANITIZER_PRELOAD:-}" ]; then
    # the server is not a sanitizer build and preloading the runtimes into
    # postgres is not attempted: the release build's run covers this mode
    echo "SKIP postgresql modes: sanitizer build (the release build runs them)"
    SKIPPED_PARTS=$((${SKIPPED_PARTS:-0} + 1))
else
    pg_part
fi

[ -s bits.err ] && grep -v '^pred_bits: [0-9]* \(predictions\|rows\)' bits.err | head -5 | sed 's/^/    /'
check_done
