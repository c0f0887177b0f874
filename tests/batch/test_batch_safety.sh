#!/usr/bin/env bash
# test_batch_safety.sh -- data-loss regressions of `infera batch` (issue 27, findings 2, 3 and 8;
# label: integration).   usage: test_batch_safety.sh INFERA SOURCE_DIR
#  - ids are text: 19+ digit ids, `1e3` vs `1000`, `-0`, leading zeros keep the source's exact characters
#    through CSV, JSON lines (flat and nested records) and SQLite, with and without a spec, into CSV and
#    into a table keyed by the id (no row overwritten; the id column is TEXT, never REAL);
#  - --resume checks the checkpoint: another --input/--output/model is refused with what differs, a file
#    the job did not write (another output, a replaced file) is never truncated, a finished job says so and
#    writes nothing;
#  - an existing unrelated table is refused (left unchanged) unless --mode append.
# Expected values are the input files' own bytes (the ids as written) -- nothing from infera itself.
set -u
. "$(dirname "$0")/../check.sh"
INFERA=$1
SRC=$2
EX=$SRC/examples/fraud
MODEL=$EX/fraud_xgb.onnx
command -v sqlite3 >/dev/null && command -v python3 >/dev/null || skip "needs sqlite3 and python3"
T=$(mktemp -d /tmp/infera-batch-safety.XXXXXX)
trap 'rm -rf "$T"' EXIT
cd "$T" || exit 1
export INFERA_HOME=$T/home
q() { sqlite3 "$@"; }
B=( "$INFERA" batch --progress none )

# ---- ids are text -------------------------------------------------------------------------------
# the first 8 transactions with ids that collapse as doubles (1e18 and 1e18+1; 1e3 and 1000; 2^63+...)
IDS="1000000000000000000 1000000000000000001 1e3 1000 12345678901234567890123 -0 0 007"
python3 - "$EX/transactions.csv" $IDS <<'PY'
import sys, json
src, ids = sys.argv[1], sys.argv[2:]
lines = open(src).read().splitlines()
head = lines[0].split(',')
rows = [l.split(',') for l in lines[1:1 + len(ids)]]
with open('ids.csv', 'w') as f:
    f.write(lines[0] + '\n')
    for i, r in zip(ids, rows):
        f.write(','.join([i] + r[1:]) + '\n')
with open('ids.jsonl', 'w') as f:   # ids as JSON number literals; every other line nested (the full parser)
    for k, (i, r) in enumerate(zip(ids, rows)):
        vals = ','.join('"%s":%s' % (h, v if v else 'null') for h, v in zip(head[1:], r[1:]))
        extra = ',"tags":{"k":[1,2]}' if k % 2 else ''
        lit = i if i != '007' else '7'    # JSON has no leading zeros
        f.write('{"transaction_id":%s,%s%s}\n' % (lit, vals, extra))
PY
# a spec that types the id as a string and feeds the 12 columns to the model as they are
python3 - <<'PY'
import json
cols = "amount log_amount_ratio merchant_category hour is_weekend distance_from_home_km distance_from_last_txn_km card_present txn_count_1h txn_count_24h avg_amount_30d days_since_last_txn".split()
spec = {"inputs": dict([("transaction_id", {"type": "string", "required": True, "id": True})] + [(c, {"type": "float"}) for c in cols]),
        "model_inputs": {"input": {"order": cols}}}
json.dump(spec, open("ids_spec.json", "w"))
PY
SPEC=$T/ids_spec.json
ids_of() { awk -F, 'NR>1 { print $1 }' "$1" | tr '\n' ' '; }
WANT="$(echo $IDS) "
"${B[@]}" --model "$MODEL" --pipeline "$SPEC" --input csv:ids.csv --output csv:ids_out.csv >/dev/null 2>err.txt; rc=$?
check "ids: csv -> csv with the spec (id typed string) keeps every id's characters" \
    '[ $rc -eq 0 ] && [ "$(ids_of ids_out.csv)" = "$WANT" ]' "rc=$rc got '$(ids_of ids_out.csv)' $(cat err.txt)"
"${B[@]}" --model "$MODEL" --input csv:ids.csv --output csv:ids_out2.csv --id-column transaction_id >/dev/null 2>err.txt; rc=$?
check "ids: csv -> csv without a spec keeps every id's characters" \
    '[ $rc -eq 0 ] && [ "$(ids_of ids_out2.csv)" = "$WANT" ]' "rc=$rc got '$(ids_of ids_out2.csv)' $(cat err.txt)"
"${B[@]}" --model "$MODEL" --input csv:ids.csv --output "sqlite:ids.db?table=s" --id-column transaction_id >sum.txt 2>err.txt; rc=$?
check "ids: csv -> table (upsert by id) without a spec: 8 rows read, 8 distinct rows kept" \
    '[ $rc -eq 0 ] && grep -q "read 8  scored 8  written 8" sum.txt && [ "$(q ids.db "SELECT count(*), count(DISTINCT transaction_id) FROM s")" = "8|8" ]' \
    "rc=$rc $(cat sum.txt err.txt; q ids.db "SELECT transaction_id FROM s")"
check "ids: the table's id column is TEXT (not REAL) and holds the exact ids" \
    '[ "$(q ids.db "SELECT type FROM pragma_table_info(\"s\") WHERE name = \"transaction_id\"")" = TEXT ] && [ "$(q ids.db "SELECT transaction_id FROM s ORDER BY rowid" | tr "\n" " ")" = "$WANT" ]' \
    "$(q ids.db .schema; q ids.db "SELECT transaction_id, typeof(transaction_id) FROM s")"
"${B[@]}" --model "$MODEL" --pipeline "$SPEC" --input jsonl:ids.jsonl --output csv:ids_j.csv >/dev/null 2>err.txt; rc=$?
WANTJ="$(echo $IDS | sed 's/007/7/') "
check "ids: JSON lines number literals (flat and nested records) keep their characters" \
    '[ $rc -eq 0 ] && [ "$(ids_of ids_j.csv)" = "$WANTJ" ]' "rc=$rc got '$(ids_of ids_j.csv)' $(cat err.txt)"
"${B[@]}" --model "$MODEL" --input jsonl:ids.jsonl --output "sqlite:idsj.db?table=s" --id-column transaction_id >/dev/null 2>err.txt; rc=$?
check "ids: JSON lines -> table: no row overwritten" \
    '[ $rc -eq 0 ] && [ "$(q idsj.db "SELECT count(DISTINCT transaction_id) FROM s")" = 8 ]' "rc=$rc $(cat err.txt)"
# SQLite source: an INTEGER id column comes out as its exact decimal text
q src.db "CREATE TABLE t (id INTEGER, a REAL); INSERT INTO t VALUES (9223372036854775807, 1), (9223372036854775806, 2), (-9223372036854775808, 3);"
"${B[@]}" --no-score --input "sqlite:src.db?table=t" --output csv:src_out.csv --id-column id >/dev/null 2>err.txt; rc=$?
check "ids: SQLite INTEGER ids as exact decimal text" \
    '[ $rc -eq 0 ] && [ "$(ids_of src_out.csv)" = "9223372036854775807 9223372036854775806 -9223372036854775808 " ]' "$(cat err.txt src_out.csv)"

# ---- --resume checks the checkpoint --------------------------------------------------------------
R=( "${B[@]}" --model "$MODEL" --id-column transaction_id --chunk-rows 500 --checkpoint-ms 0 --job-id J )
head -2001 "$EX/transactions.csv" >a.csv
{ head -1 "$EX/transactions.csv"; tail -2000 "$EX/transactions.csv"; } >b.csv
"${R[@]}" --input csv:a.csv --output csv:out.csv >/dev/null 2>err.txt
cp out.csv out.ref
sum_out=$(md5sum <out.csv)
# make the finished job look interrupted after 1000 records (what kill -9 leaves; its bytes are those of a
# run of the same command over the first 1000 records)
running() {
    python3 - home/jobs/J.json "$1" "$2" <<'PY'
import json, sys
p, done, size = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
j = json.load(open(p)); j.update(state='running', source_done=done, rows_read=done, rows_scored=done, rows_written=done, output_bytes=size)
json.dump(j, open(p, 'w'))
PY
}
SIZE1000=$(head -1001 out.csv | wc -c)
running 1000 "$SIZE1000"
"${R[@]}" --input csv:b.csv --output csv:out.csv --resume >/dev/null 2>err.txt; rc=$?
check "resume with another --input: refused, naming it; the output untouched" \
    '[ $rc -ne 0 ] && grep -q "\-\-input: the job has .csv:a.csv., this command .csv:b.csv." err.txt && [ "$(md5sum <out.csv)" = "$sum_out" ]' \
    "rc=$rc $(cat err.txt)"
head -c 300000 /dev/urandom | base64 >other.txt
sum_other=$(md5sum <other.txt)
"${R[@]}" --input csv:a.csv --output csv:other.txt --resume >/dev/null 2>err.txt; rc=$?
check "resume with another --output: refused; that file is not truncated" \
    '[ $rc -ne 0 ] && grep -q "\-\-output" err.txt && [ "$(md5sum <other.txt)" = "$sum_other" ]' "rc=$rc $(cat err.txt)"
"${R[@]}" --model "$EX/fraud_xgb.json" --input csv:a.csv --output csv:out.csv --resume >/dev/null 2>err.txt; rc=$?
check "resume with another model: refused, naming the version" \
    '[ $rc -ne 0 ] && grep -q "model version" err.txt && [ "$(md5sum <out.csv)" = "$sum_out" ]' "rc=$rc $(cat err.txt)"
# the output file replaced by another one (same size, another inode): never truncated
cp out.csv replaced.tmp && rm out.csv && mv replaced.tmp out.csv
echo "# not the job's file" >>out.csv
sum_repl=$(md5sum <out.csv)
"${R[@]}" --input csv:a.csv --output csv:out.csv --resume >/dev/null 2>err.txt; rc=$?
check "resume onto a replaced output file: refused, the file left as it is" \
    '[ $rc -ne 0 ] && grep -q "is not the file this job wrote" err.txt && [ "$(md5sum <out.csv)" = "$sum_repl" ]' "rc=$rc $(cat err.txt)"
# the same command resumes (a fresh run records the file's identity)
"${R[@]}" --input csv:a.csv --output csv:out.csv >/dev/null 2>&1
running 1000 "$SIZE1000"
"${R[@]}" --input csv:a.csv --output csv:out.csv --resume >/dev/null 2>err.txt; rc=$?
strip() { awk -F, 'NR>1 { NF--; print }' OFS=, "$1" | sort; }
check "resume with the job's own arguments: same rows as the uninterrupted run, none twice" \
    '[ $rc -eq 0 ] && [ "$(wc -l <out.csv)" -eq 2001 ] && diff -q <(strip out.csv) <(strip out.ref) >/dev/null' "rc=$rc $(cat err.txt)"
sum_done=$(md5sum <out.csv)
"${R[@]}" --input csv:a.csv --output csv:out.csv --resume >sum.txt 2>err.txt; rc=$?
check "resume of a finished job: exit 0, says it is finished, writes nothing" \
    '[ $rc -eq 0 ] && grep -q "already finished" sum.txt && grep -q "nothing written" sum.txt && [ "$(md5sum <out.csv)" = "$sum_done" ]' \
    "rc=$rc $(cat sum.txt err.txt)"

# ---- an existing unrelated table is not altered --------------------------------------------------
q cust.db "CREATE TABLE customers (transaction_id TEXT, name TEXT); INSERT INTO customers VALUES ('t050000', 'Ada'), ('t050000', 'Bob');"
schema0=$(q cust.db .schema)
"${B[@]}" --model "$MODEL" --input csv:a.csv --output "sqlite:cust.db?table=customers" --id-column transaction_id >/dev/null 2>err.txt; rc=$?
check "existing unrelated table: refused with the missing columns, schema and rows unchanged" \
    '[ $rc -ne 0 ] && grep -q "is not the output of an earlier run" err.txt && [ "$(q cust.db .schema)" = "$schema0" ] && [ "$(q cust.db "SELECT count(*) FROM customers")" = 2 ]' \
    "rc=$rc $(cat err.txt; q cust.db .schema)"
q cust.db "DELETE FROM customers WHERE name = 'Bob'"
"${B[@]}" --model "$MODEL" --input csv:a.csv --output "sqlite:cust.db?table=customers" --id-column transaction_id --mode append >/dev/null 2>err.txt; rc=$?
check "existing table with --mode append: columns added, rows keyed by id" \
    '[ $rc -eq 0 ] && [ "$(q cust.db "SELECT count(*), count(DISTINCT transaction_id), count(model_version) FROM customers")" = "2000|2000|2000" ]' \
    "rc=$rc $(cat err.txt; q cust.db "SELECT count(*), count(DISTINCT transaction_id), count(model_version) FROM customers")"
"${B[@]}" --model "$MODEL" --input csv:a.csv --output "sqlite:cust.db?table=customers" --id-column transaction_id >/dev/null 2>err.txt; rc=$?
check "a table of an earlier run (all the output's columns): re-run accepted without --mode" '[ $rc -eq 0 ]' "$(cat err.txt)"

check_done
