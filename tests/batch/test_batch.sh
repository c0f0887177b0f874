#!/usr/bin/env bash
# test_batch.sh -- `infera batch` end to end with the fraud example (label: integration).
#   usage: test_batch.sh INFERA SOURCE_DIR
# CSV / JSON lines / SQLite round trips, output types and lineage columns,
# modes, bad rows of every kind to the error sink, --max-error-rate, inputs
# from the wild (BOM, CRLF, malformed quotes, 1500 columns, two JSON objects on
# a line, input and output in one SQLite file, existing keyless tables),
# registry lineage, progress lines, and crash-resume: kill -9 at several
# points, --resume, compare with an uninterrupted run (same rows, none twice).
set -u
. "$(dirname "$0")/../check.sh"
INFERA=$1
SRC=$2
EX=$SRC/examples/fraud
MODEL=$EX/fraud_xgb.onnx
SPEC=$EX/fraud_spec.json
T=$(mktemp -d /tmp/infera-batch-test.XXXXXX)
trap 'rm -rf "$T"' EXIT
cd "$T" || exit 1
export INFERA_HOME=$T/home
q() { sqlite3 "$@"; }
# rows without scored_at (the last column), sorted
strip() { awk -F, 'NR>1 { NF--; print }' OFS=, "$1" | sort; }

B=( "$INFERA" batch --progress none )

# ---- CSV -> CSV ------------------------------------------------------------
"${B[@]}" --model "$MODEL" --input "csv:$EX/transactions.csv" --output csv:out.csv --id-column transaction_id \
    --threads 2 >sum.txt 2>err.txt; rc=$?
check "csv->csv exits 0" '[ $rc -eq 0 ]' "$(cat err.txt)"
check "csv->csv writes 5000 rows + header" '[ "$(wc -l <out.csv)" -eq 5001 ]'
check "csv->csv header: id, predictions, lineage" \
    '[ "$(head -1 out.csv)" = "transaction_id,label,probabilities_0,probabilities_1,model_name,model_version,pipeline_hash,scored_at" ]' \
    "$(head -1 out.csv)"
check "csv->csv keeps source order" '[ "$(cut -d, -f1 out.csv | sed -n 2p)" = t050000 ] && [ "$(cut -d, -f1 out.csv | tail -1)" = t054999 ]'
check "lineage columns: model, version, 64-hex pipeline hash, ISO scored_at" \
    'awk -F, "NR>1 && !(\$5==\"fraud_xgb\" && \$6 ~ /^sha256:[0-9a-f]+\$/ && length(\$6) == 19 && \$7 ~ /^[0-9a-f]+\$/ && length(\$7) == 64 && \$8 ~ /^20[0-9][0-9]-[0-9][0-9]-[0-9][0-9]T.*Z\$/) {bad=1} END {exit bad}" out.csv'
check "summary counts" 'grep -q "read 5,000  scored 5,000  written 5,000  rejected 0" sum.txt' "$(cat sum.txt)"
check "summary has cpu-s per million predictions" 'grep -Eq "cpu [0-9.]+ s  [0-9.]+ cpu-s per million predictions" sum.txt'
check "lineage in the job log (file model)" 'grep -q "job log" sum.txt && [ -s home/jobs/jobs.jsonl ]'
# probabilities agree with XGBoost's own (examples/fraud/sample_probabilities.npy, made by
# examples/fraud/gen_fraud.py with xgboost; row i = transactions.csv row i; 1e-6: float32 sums)
xgb_probs() { # the float32 [N, 2] .npy as "p0 p1" lines (npy v1: 10-byte preamble + header)
    local hl; hl=$(od -An -j8 -N2 -t u2 "$1" | tr -d ' ')
    od -An -v -t f4 -w8 -j $((10 + hl)) "$1"
}
xgb_probs "$EX/sample_probabilities.npy" >xgb.txt
check "probabilities = XGBoost's (5000 rows, 1e-6)" \
    '[ "$(wc -l <xgb.txt)" -eq 5000 ] && awk -F, "NR>1 {print \$3, \$4}" out.csv | paste -d" " - xgb.txt |
     awk "function abs(x) { return x < 0 ? -x : x }
          NF != 4 || abs(\$1 - \$3) > 1e-6 || abs(\$2 - \$4) > 1e-6 { bad = 1 } END { exit bad || NR != 5000 }"' \
    "$(awk -F, 'NR>1 {print $3, $4}' out.csv | paste -d' ' - xgb.txt | awk 'function abs(x) { return x < 0 ? -x : x } abs($1 - $3) > 1e-6 || abs($2 - $4) > 1e-6 { print "row " NR ": infera " $1 " " $2 ", xgboost " $3 " " $4; exit }')"

# ---- JSON lines round trip ---------------------------------------------------
"${B[@]}" --no-score --input "csv:$EX/transactions.csv" --output jsonl:tx.jsonl >/dev/null 2>&1
check "no-score copy csv->jsonl" '[ "$(wc -l <tx.jsonl)" -eq 5000 ]'
"${B[@]}" --model "$MODEL" --input jsonl:tx.jsonl --output jsonl:out.jsonl --id-column transaction_id >/dev/null 2>err.txt; rc=$?
check "jsonl->jsonl exits 0" '[ $rc -eq 0 ]' "$(cat err.txt)"
"${B[@]}" --model "$MODEL" --input jsonl:tx.jsonl --output csv:out_j.csv --id-column transaction_id >/dev/null 2>&1
check "jsonl input scores bit-identically to csv input" 'diff -q <(strip out.csv) <(strip out_j.csv) >/dev/null'
check "jsonl output has the lineage fields" \
    'head -1 out.jsonl | grep -q "\"model_name\":\"fraud_xgb\"" && head -1 out.jsonl | grep -Eq "\"pipeline_hash\":\"[0-9a-f]{64}\"" && head -1 out.jsonl | grep -q "\"scored_at\":\"20"'
"$INFERA" batch --progress none --model "$MODEL" --input jsonl:- --output jsonl:- --id-column transaction_id \
    <tx.jsonl >stdout.jsonl 2>stderr.txt
check "jsonl:- stdin -> stdout, summary on stderr" \
    '[ "$(wc -l <stdout.jsonl)" -eq 5000 ] && grep -q "written 5,000" stderr.txt'

# ---- SQLite -> SQLite -------------------------------------------------------------
"${B[@]}" --no-score --input "csv:$EX/transactions.csv" --output "sqlite:tx.db?table=tx" --id-column transaction_id >/dev/null 2>&1
"${B[@]}" --model "$MODEL" --input "sqlite:tx.db?table=tx" --output "sqlite:scores.db?table=scores" \
    --id-column transaction_id --threads 2 >/dev/null 2>err.txt; rc=$?
check "sqlite->sqlite exits 0" '[ $rc -eq 0 ]' "$(cat err.txt)"
check "sqlite output: 5000 rows, distinct ids" '[ "$(q scores.db "SELECT count(*), count(DISTINCT transaction_id) FROM scores")" = "5000|5000" ]'
check "sqlite output column types" \
    '[ "$(q scores.db "SELECT group_concat(name || \":\" || type || \":\" || pk, \" \") FROM pragma_table_info(\"scores\")")" = "transaction_id:TEXT:1 label:INTEGER:0 probabilities_0:REAL:0 probabilities_1:REAL:0 model_name:TEXT:0 model_version:TEXT:0 pipeline_hash:TEXT:0 scored_at:TEXT:0" ]' \
    "$(q scores.db 'SELECT group_concat(name || ":" || type, " ") FROM pragma_table_info("scores")')"
# exported through the csv sink (%.17g, exact) to compare doubles bit for bit
export_sqlite() { "${B[@]}" --no-score --input "sqlite:$1?query=SELECT%20*%20FROM%20$2" --output csv:"$3" >/dev/null 2>&1; }
export_sqlite scores.db scores sq.csv
check "sqlite values bit-identical to csv" 'diff -q <(strip sq.csv) <(strip out.csv | awk -F, "{print}" | sort) >/dev/null' "$(diff <(strip sq.csv) <(strip out.csv) | head -3)"
"${B[@]}" --model "$MODEL" --input "sqlite:tx.db?query=SELECT%20*%20FROM%20tx%20WHERE%20amount%20%3E%20100" \
    --output "sqlite:scores.db?table=big" --id-column transaction_id >/dev/null 2>&1
check "sqlite ?query= source" '[ "$(q scores.db "SELECT count(*) FROM big")" = "$(q tx.db "SELECT count(*) FROM tx WHERE amount > 100")" ]'

# ---- modes -------------------------------------------------------------------------
"${B[@]}" --model "$MODEL" --input "sqlite:tx.db?table=tx" --output "sqlite:scores.db?table=scores" --id-column transaction_id >/dev/null 2>&1
check "upsert (tables' default) re-run: still 5000 rows" '[ "$(q scores.db "SELECT count(*) FROM scores")" = 5000 ]'
q scores.db "INSERT INTO scores (transaction_id) VALUES ('zzz')"
"${B[@]}" --mode replace --model "$MODEL" --input "sqlite:tx.db?table=tx" --output "sqlite:scores.db?table=scores" --id-column transaction_id >/dev/null 2>&1
check "replace drops what was there" '[ "$(q scores.db "SELECT count(*) FROM scores WHERE transaction_id = '"'zzz'"'")" = 0 ] && [ "$(q scores.db "SELECT count(*) FROM scores")" = 5000 ]'
for i in 1 2; do "${B[@]}" --mode append --model "$MODEL" --input "csv:$EX/transactions.csv" --output csv:app.csv --id-column transaction_id >/dev/null 2>&1; done
check "append to a file: two runs, one header, 10000 rows" '[ "$(wc -l <app.csv)" = 10001 ] && [ "$(grep -c transaction_id app.csv)" = 1 ]'
{ head -1 "$EX/transactions.csv"; sed -n 2,101p "$EX/transactions.csv"; } >first.csv
{ head -1 "$EX/transactions.csv"; sed -n 102,201p "$EX/transactions.csv"; } >second.csv
"${B[@]}" --mode append --model "$MODEL" --input csv:first.csv --output "sqlite:app.db?table=s" --id-column transaction_id >/dev/null 2>&1
"${B[@]}" --mode append --model "$MODEL" --input csv:second.csv --output "sqlite:app.db?table=s" --id-column transaction_id >/dev/null 2>&1
check "append to a table: rows of both runs" '[ "$(q app.db "SELECT count(*), count(DISTINCT transaction_id) FROM s")" = "200|200" ]'
"${B[@]}" --mode upsert --model "$MODEL" --input "csv:$EX/transactions.csv" --output csv:x.csv >/dev/null 2>err.txt; rc=$?
check "upsert into a file is a usage error" '[ $rc -eq 2 ] && grep -q "upsert needs a table" err.txt' "$(cat err.txt)"
"${B[@]}" --model "$MODEL" --input "csv:$EX/transactions.csv" --output csv:rn.csv >/dev/null 2>&1
check "without an id column: row_number" '[ "$(head -1 rn.csv | cut -d, -f1)" = row_number ] && [ "$(sed -n 3p rn.csv | cut -d, -f1)" = 2 ]'
"${B[@]}" --model "$MODEL" --input "csv:$EX/transactions.csv" --output csv:x.csv --id-column nope >/dev/null 2>err.txt; rc=$?
check "unknown id column: one-line error" '[ $rc -ne 0 ] && grep -q "no column .nope." err.txt' "$(cat err.txt)"
"${B[@]}" --model missing.onnx --input "csv:$EX/transactions.csv" --output csv:x.csv >/dev/null 2>err.txt; rc=$?
check "missing model: one-line error" '[ $rc -ne 0 ] && [ "$(wc -l <err.txt)" -eq 1 ] && grep -q "missing.onnx" err.txt' "$(cat err.txt)"

# ---- bad rows ------------------------------------------------------------------------
RAW=$EX/transactions_raw.csv
head -1 "$RAW" >bad.csv
sed -n 2,6p "$RAW" >>bad.csv
cat >>bad.csv <<'EOF'
tbad_type,card00001,2024-03-11T11:04:52Z,abc,6,7.4658,7.2843,1,0
tbad_range,card00001,2024-03-11T11:04:52Z,10.5,42,7.4658,7.2843,1,0
tbad_ts,card00001,not-a-time,10.5,4,7.4658,7.2843,1,0
tbad_min,card00001,2024-03-11T11:04:52Z,-3,4,7.4658,7.2843,1,0
tbad_cells,card00001,2024-03-11T11:04:52Z,10.5,4,7.4658,7.2843,1,0,extra
,card00001,2024-03-11T11:04:52Z,10.5,4,7.4658,7.2843,1,0
tbad_card,,2024-03-11T11:04:52Z,10.5,4,7.4658,7.2843,1,0
EOF
sed -n 7,11p "$RAW" >>bad.csv
cp "$EX/card_features.db" .
"${B[@]}" --model "$MODEL" --pipeline "$SPEC" --input csv:bad.csv --output csv:good.csv --errors jsonl:errors.jsonl >sum.txt 2>err.txt; rc=$?
check "job with bad rows exits 0" '[ $rc -eq 0 ]' "$(cat err.txt)"
check "bad rows: 10 written, 7 rejected" 'grep -q "read 17  scored 10  written 10  rejected 7" sum.txt' "$(grep rows sum.txt)"
reason() { grep "\"source_row\":$1," errors.jsonl; }
check "wrong type -> error sink with reason" 'reason 6 | grep -q "\"field\":\"amount\",\"reason\":\"field .amount. is not a number\""' "$(reason 6)"
check "schema violation (max) -> reason" 'reason 7 | grep -q "merchant_category.*above its maximum"' "$(reason 7)"
check "bad timestamp -> reason" 'reason 8 | grep -q "\"field\":\"ts\""' "$(reason 8)"
check "schema violation (min) -> reason" 'reason 9 | grep -q "amount.*below its minimum"' "$(reason 9)"
check "malformed record -> reason with file and line" 'reason 10 | grep -q "csv:bad.csv: line 11: more cells"' "$(reason 10)"
check "missing required id -> reason" 'reason 11 | grep -q "transaction_id.*missing"' "$(reason 11)"
check "missing required field -> reason" 'reason 12 | grep -q "card_id.*missing"' "$(reason 12)"
check "sensitive fields never in the error record" '! grep -q "card00001" errors.jsonl'
"${B[@]}" --model "$MODEL" --pipeline "$SPEC" --input "csv:$RAW" --output csv:all.csv >/dev/null 2>&1
check "other rows unaffected by the bad ones" \
    'diff <(strip good.csv) <(strip all.csv | grep -E "^t05000[0-9]," ) >/dev/null' "$(diff <(strip good.csv) <(strip all.csv | grep -E '^t05000[0-9],'))"
# a spec beside a file model (<model>.pipeline.json, as infera serve reads it) is the model's pipeline in batch too
mkdir -p beside
cp "$MODEL" beside/fraud_xgb.onnx
cp "$SPEC" beside/fraud_xgb.pipeline.json
cp "$EX/card_features.db" beside/
"${B[@]}" --model beside/fraud_xgb.onnx --input "csv:$RAW" --output csv:beside.csv >/dev/null 2>err.txt
check "a spec beside the model file is used without --pipeline (same rows as with it)" \
    'diff <(strip beside.csv) <(strip all.csv) >/dev/null' "$(head -c 300 err.txt; diff <(strip beside.csv) <(strip all.csv) | head -3)"
# a required lookup: an unknown card is rejected (card_id is sensitive: not named)
mkdir -p specdir
sed 's#"event_time": "ts",#"event_time": "ts", "required": true,#' "$SPEC" >specdir/req_spec.json
cp "$EX/card_features.db" specdir/
{ head -1 "$RAW"; sed -n 2,6p "$RAW"; sed -n 2p "$RAW" | sed 's/^\([^,]*\),[^,]*,/tnocard,card_nobody,/'; } >nocard.csv
"${B[@]}" --model "$MODEL" --pipeline specdir/req_spec.json --input csv:nocard.csv --output csv:req.csv --errors jsonl:req_err.jsonl >sum.txt 2>err.txt; rc=$?
check "required lookup: unknown key -> 5 written, 1 rejected" '[ $rc -eq 0 ] && grep -q "read 6  scored 5  written 5  rejected 1" sum.txt' "$(cat sum.txt err.txt)"
check "required lookup: reason in the error sink, key not named (sensitive)" \
    'grep -q "\"id\":\"tnocard\".*\"field\":\"card_id\",\"reason\":\"lookup card_history: key not found (field .card_id. is sensitive)\"" req_err.jsonl && ! grep -q card_nobody req_err.jsonl' "$(cat req_err.jsonl)"
"${B[@]}" --model "$MODEL" --pipeline "$SPEC" --input csv:nocard.csv --output csv:noreq.csv >sum.txt 2>&1
check "lookup without required: the unknown key is scored with the defaults" 'grep -q "written 6  rejected 0" sum.txt' "$(cat sum.txt)"
# a registered spec's relative store path is resolved against the spec's folder, not the cwd
"$INFERA" registry register fraudreq "$MODEL" --pipeline specdir/req_spec.json >reg.txt 2>&1
mkdir -p elsewhere
(cd elsewhere && "${B[@]}" --model fraudreq@1 --input "csv:../nocard.csv" --output csv:reg_req.csv --errors jsonl:reg_err.jsonl) >sum.txt 2>err.txt; rc=$?
check "registered spec: relative lookup store found from another cwd" '[ $rc -eq 0 ] && grep -q "written 5  rejected 1" sum.txt' "$(cat reg.txt sum.txt err.txt)"
check "registered spec stores the absolute store path" \
    'q home/registry.db "SELECT pipeline FROM reg_versions WHERE name = '"'fraudreq'"'" | grep -q "\"store\":\"sqlite:$(cd specdir && pwd -P)/card_features.db?table=card_features\""' \
    "$(q home/registry.db "SELECT pipeline FROM reg_versions WHERE name = 'fraudreq'" | grep -o '"store":"[^"]*"')"

{ head -1 "$RAW"; for i in $(seq 40); do echo "x$i,card1,bad,abc,1,1,1,1,0"; done; sed -n 2,11p "$RAW"; } >mostly_bad.csv
"${B[@]}" --model "$MODEL" --pipeline "$SPEC" --input csv:mostly_bad.csv --output csv:mb.csv --max-error-rate 0.5 >/dev/null 2>err.txt; rc=$?
check "--max-error-rate stops a mostly bad job" '[ $rc -ne 0 ] && grep -q "above --max-error-rate 0.5" err.txt' "$(cat err.txt)"
"${B[@]}" --model "$MODEL" --pipeline "$SPEC" --input csv:mostly_bad.csv --output csv:mb.csv --max-error-rate 0.9 >/dev/null 2>err.txt; rc=$?
check "--max-error-rate above the rate lets it finish" '[ $rc -eq 0 ]' "$(cat err.txt)"
# DESIGN.md §4: a failed command's stderr is one line naming what failed; the summary of a failed
# job goes where a finished job's goes (stdout, unless stdout is a sink)
"${B[@]}" --model "$MODEL" --pipeline "$SPEC" --input csv:mostly_bad.csv --output csv:mb.csv --errors csv:mb_err.csv \
    --max-error-rate 0.5 >sum.txt 2>err.txt; rc=$?
check "failed job: one stderr line, the summary on stdout" \
    '[ $rc -ne 0 ] && [ "$(wc -l <err.txt)" -eq 1 ] && grep -q "above --max-error-rate" err.txt && grep -q "failed (resume with --resume)" sum.txt' \
    "$(cat err.txt sum.txt)"

# ---- inputs from the wild (tests/batch/gen_models.py: Y = a + 10 b + 100 c) -------------------------
SUM3=$SRC/tests/batch/data/sum3.onnx
ycol() { awk -F, 'NR>1 { print $1 ":" $2 }' "$1" | tr '\n' ' '; }
# a UTF-8 byte order mark before a quoted header (Excel's "CSV UTF-8"), CRLF, no final newline
printf '\xef\xbb\xbf"id","a","b","c"\r\n1,1,2,3\r\n2,"4",5,6' >bom.csv
"${B[@]}" --model "$SUM3" --input csv:bom.csv --output csv:bom_out.csv --id-column id >/dev/null 2>err.txt; rc=$?
check "csv: BOM + quoted header + CRLF + no final newline" '[ $rc -eq 0 ] && [ "$(ycol bom_out.csv)" = "1:321 2:654 " ]' \
    "rc=$rc $(cat err.txt) $(head -3 bom_out.csv)"
# a quoted cell with text after its closing quote: that record is rejected, the next one is whole
printf 'id,a,b,c\n1,1,2,3\n2,"4"x,5,6\n3,7,8,9\n' >badq.csv
"${B[@]}" --model "$SUM3" --input csv:badq.csv --output csv:badq_out.csv --id-column id --errors jsonl:badq_err.jsonl >sum.txt 2>err.txt; rc=$?
check "csv: a malformed quoted cell rejects its record only (no phantom record from its tail)" \
    '[ $rc -eq 0 ] && grep -q "read 3  scored 2  written 2  rejected 1" sum.txt && [ "$(ycol badq_out.csv)" = "1:321 3:987 " ] && grep -q "line 3: malformed quoted cell in column 2" badq_err.jsonl' \
    "$(cat sum.txt err.txt badq_err.jsonl)"
# a quote never closed swallows the rest of the file (RFC 4180: newlines may be quoted): the records before it
# are scored, and the error says that every line after it was read as that cell
printf 'id,a,b,c\n1,1,2,3\n2,"4,5,6\n3,7,8,9\n4,1,1,1\n' >openq.csv
"${B[@]}" --model "$SUM3" --input csv:openq.csv --output csv:openq_out.csv --id-column id --errors jsonl:openq_err.jsonl >sum.txt 2>err.txt; rc=$?
check "csv: an unclosed quote: the records before it scored, the error names the lines it took" \
    '[ $rc -eq 0 ] && [ "$(ycol openq_out.csv)" = "1:321 " ] && grep -q "line 3: malformed quoted cell in column 2: its quote is not closed before the end of the file (every line from 3 on is inside it)" openq_err.jsonl' \
    "$(cat sum.txt err.txt openq_err.jsonl)"
# without a spec, one text cell in a numeric column rejects its row; the column stays a feature
printf 'id,a,b,c\n1,1,2,3\n4,abc,1,1\n3,7,8,9\n' >badcell.csv
"${B[@]}" --model "$SUM3" --input csv:badcell.csv --output csv:badcell_out.csv --id-column id --errors jsonl:badcell_err.jsonl >sum.txt 2>err.txt; rc=$?
check "csv: a text cell in a numeric column of the first chunk rejects its row only" \
    '[ $rc -eq 0 ] && [ "$(ycol badcell_out.csv)" = "1:321 3:987 " ] && grep -q "field .a. is not a number" badcell_err.jsonl' \
    "rc=$rc $(cat sum.txt err.txt badcell_err.jsonl)"
# an integer written with leading zeros is a code: kept as written (as JSON keeps "007"), still a number to the model
printf 'id,a,b,c\n007,1,2,3\n12,04,5,6\n' >zeros.csv
"${B[@]}" --model "$SUM3" --input csv:zeros.csv --output csv:zeros_out.csv --id-column id >/dev/null 2>err.txt; rc=$?
check "csv: ids with leading zeros keep them; '04' is still the number 4" '[ $rc -eq 0 ] && [ "$(ycol zeros_out.csv)" = "007:321 12:654 " ]' \
    "rc=$rc $(cat err.txt zeros_out.csv)"
# without a spec, more numeric fields than the model takes: the first 3 are scored and the job says so, once
# (docs/pipeline-spec.md: "the count of ignored fields is reported")
{ echo id,a,b,c,extra; for i in $(seq 40); do echo "$i,1,2,3,9"; done; } >extra.csv
"${B[@]}" --model "$SUM3" --input csv:extra.csv --output csv:extra_out.csv --id-column id --threads 2 --chunk-rows 8 >/dev/null 2>err.txt; rc=$?
check "csv: a numeric field past the model's width is reported once, and the first 3 are scored" \
    '[ $rc -eq 0 ] && [ "$(grep -c "scoring .a., .b., .c.; 1 more ignored" err.txt)" -eq 1 ] && [ "$(wc -l <err.txt)" -eq 1 ] &&
     [ "$(awk -F, "NR>1 && \$2 != 321" extra_out.csv | wc -l)" -eq 0 ] && [ "$(wc -l <extra_out.csv)" -eq 41 ]' \
    "rc=$rc $(cat err.txt)"
"${B[@]}" --model "$SUM3" --input csv:zeros.csv --output csv:zeros_out.csv --id-column id >/dev/null 2>err.txt
check "csv: exactly the model's width: nothing reported" '[ ! -s err.txt ]' "$(cat err.txt)"
# a value the engine cannot take (an id outside the 5-row table of tests/stream/data/embed.onnx) fails the run of
# its whole chunk: the chunk is scored again record by record and only those records are rejected, with the
# engine's error; a model that takes none of a chunk's records still fails the job
EMBED=$SRC/tests/stream/data/embed.onnx
printf '%s\n' '{"inputs": {"id": {"type": "string", "id": true}, "k": {"type": "int", "required": true}},' \
    ' "model_inputs": {"k": {"dtype": "int64", "order": ["k"]}}}' >embed_spec.json
printf '%s\n' '{"id":"a","k":1}' '{"id":"b","k":7}' '{"id":"c","k":4}' '{"id":"d","k":-9}' '{"id":"e","k":0}' >embed.jsonl
"${B[@]}" --model "$EMBED" --pipeline embed_spec.json --input jsonl:embed.jsonl --output csv:embed_out.csv \
    --errors jsonl:embed_err.jsonl >sum.txt 2>err.txt; rc=$?
check "engine error in a chunk: the other records are scored, the two bad ones rejected with the engine's error" \
    '[ $rc -eq 0 ] && [ "$(ycol embed_out.csv)" = "a:0.5 c:2 e:0 " ] && [ "$(wc -l <embed_err.jsonl)" -eq 2 ] &&
     grep "\"id\":\"b\"" embed_err.jsonl | grep -q "Gather" && grep -q "\"source_row\":4" embed_err.jsonl' \
    "rc=$rc $(cat sum.txt err.txt embed_err.jsonl embed_out.csv)"
printf '%s\n' '{"id":"x","k":9}' '{"id":"y","k":70}' >embed_bad.jsonl
"${B[@]}" --model "$EMBED" --pipeline embed_spec.json --input jsonl:embed_bad.jsonl --output csv:embed_bad.csv >/dev/null 2>err.txt; rc=$?
check "... a chunk whose every record fails alone fails the job with the engine's error" \
    '[ $rc -ne 0 ] && grep -q "Gather" err.txt' "rc=$rc $(cat err.txt)"
# more than 1024 columns (a copy, and a model with 1500 inputs)
awk 'BEGIN { h = "id"; r = ""; for (i = 0; i < 1500; i++) { h = h ",f" i; r = r ",1" } print h; for (k = 1; k <= 3; k++) print k r }' >wide.csv
"${B[@]}" --no-score --input csv:wide.csv --output csv:wide_copy.csv >/dev/null 2>err.txt; rc=$?
check "csv: 1501 columns copied" '[ $rc -eq 0 ] && cmp -s wide.csv wide_copy.csv' "$(cat err.txt)"
"${B[@]}" --model "$SRC/tests/batch/data/wide1500.onnx" --input csv:wide.csv --output csv:wide_out.csv --id-column id >/dev/null 2>err.txt; rc=$?
check "csv: a 1500-feature model scores 1501-column rows" '[ $rc -eq 0 ] && [ "$(ycol wide_out.csv)" = "1:1500 2:1500 3:1500 " ]' "$(cat err.txt)"
# JSON lines: two objects on one line (a lost newline) is a malformed line, reported with its number
printf '{"id":1,"a":1,"b":2,"c":3}\n{"id":2,"a":1,"b":2,"c":3}{"id":3,"a":1,"b":2,"c":3}\n{"id":4,"a":4,"b":5,"c":6} x\n{"id":5,"a":4,"b":5,"c":6}\n' >two.jsonl
"${B[@]}" --model "$SUM3" --input jsonl:two.jsonl --output csv:two_out.csv --id-column id --errors jsonl:two_err.jsonl >sum.txt 2>err.txt; rc=$?
check "jsonl: text after the object rejects the line, with its number" \
    '[ $rc -eq 0 ] && [ "$(ycol two_out.csv)" = "1:321 5:654 " ] && grep -q "line 2: malformed JSON near byte 26: text after the record" two_err.jsonl && grep -q "line 3: " two_err.jsonl' \
    "$(cat sum.txt err.txt two_err.jsonl; cat two_out.csv)"
# a table output with a file error sink: each takes its own kind's default mode
"${B[@]}" --model "$SUM3" --input csv:badq.csv --output "sqlite:mix.db?table=s" --id-column id --errors csv:mix_err.csv >/dev/null 2>err.txt; rc=$?
check "table output + csv error file (no --mode)" '[ $rc -eq 0 ] && [ "$(q mix.db "SELECT count(*) FROM s")" = 2 ] && [ "$(wc -l <mix_err.csv)" -eq 2 ]' \
    "rc=$rc $(cat err.txt)"
# input and output tables in one SQLite file, more rows than the chunks in flight
q same.db "CREATE TABLE tx (id INTEGER PRIMARY KEY, a REAL, b REAL, c REAL);
           WITH RECURSIVE g(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM g WHERE i < 30000)
           INSERT INTO tx SELECT i, i % 7, 1, 2 FROM g;"
"${B[@]}" --model "$SUM3" --input "sqlite:same.db?table=tx" --output "sqlite:same.db?table=scores" --id-column id \
    --threads 2 --chunk-rows 1000 >/dev/null 2>err.txt; rc=$?
check "sqlite: input and output in the same database file" \
    '[ $rc -eq 0 ] && [ "$(q same.db "SELECT count(*), sum(Y = (id % 7) + 210) FROM scores")" = "30000|30000" ]' "rc=$rc $(cat err.txt)"
# an existing output table made without a key: re-runs replace rows, never add them
q keyless.db "CREATE TABLE s (id INTEGER, Y REAL, model_name TEXT, model_version TEXT, pipeline_hash TEXT, scored_at TEXT)"
for i in 1 2; do "${B[@]}" --model "$SUM3" --input csv:bom.csv --output "sqlite:keyless.db?table=s" --id-column id >/dev/null 2>err.txt; done
check "sqlite: an existing table without a key gets one, a re-run does not duplicate" \
    '[ "$(q keyless.db "SELECT count(*), count(DISTINCT id) FROM s")" = "2|2" ]' "$(cat err.txt; q keyless.db "SELECT * FROM s")"
q dups.db "CREATE TABLE s (id INTEGER, Y REAL); INSERT INTO s VALUES (1, 0), (1, 0);"
"${B[@]}" --model "$SUM3" --input csv:bom.csv --output "sqlite:dups.db?table=s" --id-column id --mode append >/dev/null 2>err.txt; rc=$?
check "sqlite: an existing table holding an id twice: one-line error naming the key" \
    '[ $rc -ne 0 ] && tail -1 err.txt | grep -q "keyed by .id. but it is neither the table.s primary key nor unique"' "$(cat err.txt)"

# ---- progress lines -------------------------------------------------------------------------
"$INFERA" batch --model "$MODEL" --input "csv:$EX/transactions.csv" --output csv:p.csv --progress json >psum.txt 2>prog.txt
check "json progress lines with total and eta" 'grep -q "\"event\":\"progress\".*\"total\":5000,\"eta_s\":" prog.txt' "$(head -2 prog.txt)"
check "json summary line" 'grep -q "\"event\":\"summary\".*\"rows_written\":5000.*\"cpu_s_per_million\"" psum.txt' "$(cat psum.txt)"

# ---- lineage in the registry -------------------------------------------------------------------
"$INFERA" registry register fraud "$MODEL" >/dev/null 2>&1
"${B[@]}" --model fraud@1 --input "csv:$EX/transactions.csv" --output "sqlite:reg.db?table=s" --id-column transaction_id >sum.txt 2>err.txt
check "registry model: lineage recorded in the registry" 'grep -q "lineage   registry" sum.txt' "$(cat sum.txt err.txt)"
JOB=$(awk '/^job/ {print $2}' sum.txt)
check "registry lineage lists the job" '"$INFERA" registry lineage fraud 2>&1 | grep -q "job $JOB"'
check "registry model stamps name and version" '[ "$(q reg.db "SELECT DISTINCT model_name || \"@\" || model_version FROM s")" = "fraud@1" ]'

# ---- crash-resume: kill -9 at several points --------------------------------------------------
# 100,000 rows (the example 20 times, unique ids); small chunks, a checkpoint per chunk
awk -F, 'NR==1 { print; next } { lines[NR] = $0 } END { for (k = 0; k < 20; k++) for (i = 2; i <= NR; i++) { l = lines[i]; sub(/^t/, "t" k "_", l); print l } }' \
    "$EX/transactions.csv" >big.csv
R=( "$INFERA" batch --progress none --model "$MODEL" --id-column transaction_id --threads 2 --chunk-rows 500 --checkpoint-ms 0 )
"${R[@]}" --input csv:big.csv --output csv:ref.csv --job-id ref >/dev/null 2>&1
strip ref.csv >ref.sorted
check "uninterrupted reference run" '[ "$(wc -l <ref.sorted)" -eq 100000 ]'
for kind in csv sqlite; do
    for seed in 1 2 3; do
        out="$kind:crash_${kind}_$seed.csv"
        [ $kind = sqlite ] && out="sqlite:crash_$seed.db?table=s"
        job=crash-$kind-$seed
        "${R[@]}" --input csv:big.csv --output "$out" --job-id $job >/dev/null 2>&1 &
        pid=$!
        # the random point is within the job: wait for its first checkpoint file (a slow, loaded
        # start must not turn the test into "killed before it began")
        for _ in $(seq 200); do [ -f home/jobs/$job.json ] && break; sleep 0.1; done
        delay=$(awk -v s=$seed -v k=${#kind} 'BEGIN { srand(s * 7 + k); printf "%.2f", 0.15 + rand() * 0.9 }')
        sleep "$delay"
        kill -9 $pid 2>/dev/null
        wait $pid 2>/dev/null
        at=$(grep -o '"source_done":[0-9]*' home/jobs/$job.json | cut -d: -f2)
        state=$(grep -o '"state":"[a-z]*"' home/jobs/$job.json | cut -d'"' -f4)
        "${R[@]}" --input csv:big.csv --output "$out" --job-id $job --resume >/dev/null 2>err.txt
        rc=$?
        if [ $kind = csv ]; then
            strip crash_${kind}_$seed.csv >got.sorted
            dups=$(cut -d, -f1 got.sorted | uniq -d | wc -l)
        else
            export_sqlite crash_$seed.db s got.csv
            strip got.csv >got.sorted
            dups=$(q crash_$seed.db "SELECT count(*) - count(DISTINCT transaction_id) FROM s")
        fi
        want=ref.sorted
        check "kill -9 after ${delay}s ($kind, seed $seed, killed at row $at, state $state): resume = uninterrupted, no duplicates" \
            '[ $rc -eq 0 ] && [ "$dups" = 0 ] && diff -q got.sorted $want >/dev/null' \
            "rc=$rc dups=$dups $(diff got.sorted $want | head -3) $(cat err.txt)"
    done
done
"${R[@]}" --input csv:big.csv --output csv:crash_csv_1.csv --job-id crash-csv-1 --resume >out.txt 2>err.txt; rc=$?
check "resuming a finished job does nothing (and says so)" '[ $rc -eq 0 ] && grep -q "already finished" out.txt'
"${R[@]}" --input csv:big.csv --output csv:none.csv --job-id never --resume >/dev/null 2>err.txt; rc=$?
check "resume without a checkpoint: one-line error" '[ $rc -ne 0 ] && grep -q "no checkpoint" err.txt' "$(cat err.txt)"

check_done
