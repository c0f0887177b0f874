#!/usr/bin/env bash
# test_stream.sh -- `infera stream` against real services on loopback
# (redis-server, mosquitto, PostgreSQL when it can start): DESIGN.md §1 (the
# same raw record gives bit-identical predictions in every mode), §4 (the
# stream contract) and §6 (at-least-once, idempotent outputs, malformed events
# rejected while the rest go on).
#
# The 5,000 raw fraud transactions (examples/fraud, model fraud_xgb.onnx with
# its spec registered as fraud@1) are scored by `infera batch` (the reference)
# and by `infera stream` from stdin, from a Redis stream (JSON `data` entries,
# and flat entries of the CSV cells) and from MQTT, into stdout, a Redis
# stream, SQLite, PostgreSQL and MQTT.  Every prediction field and the lineage
# stamp is compared exactly (pred_bits: floats as the bits of their double).
# Crash tests kill -9 the consumer mid-stream, restart it and check that each
# event has exactly one output and that nothing is left pending; the pending
# list, XAUTOCLAIM and replays (XGROUP SETID 0) are driven deterministically
# with redis-cli.  Events are produced with redis-cli (RESP written by awk), so
# the Redis source is not tested against our own sink.
#
#   usage: test_stream.sh INFERA PRED_BITS SOURCE_DIR
# Prints one line per check and closes with "N passed, M failed".
set -u
. "$(dirname "$0")/../check.sh"
INFERA=$1
BITS=$2
SRC=$3
EX=$SRC/examples/fraud
RAW=$EX/transactions_raw.csv
N=5000
T=$(mktemp -d /tmp/infera-stream.XXXXXX)
. "$SRC/tests/integration/services.sh"
PIDS=()
cleanup() {
    for p in "${PIDS[@]}"; do kill -9 "$p" 2>/dev/null; done
    wait 2>/dev/null
    stop_redis
    stop_mosquitto
    stop_postgres
    if [ "$FAIL" = 0 ] || [ -n "${INFERA_TEST_CLEAN:-}" ]; then rm -rf "$T"; else echo "(kept $T for inspection)"; fi
}
trap cleanup EXIT
cd "$T" || exit 1
export INFERA_HOME=$T/home LC_ALL=C
unset INFERA_REGISTRY INFERA_TOKEN
FIELDS=(transaction_id fraud_score is_fraud decision model_name model_version pipeline_hash)
canon() { "$BITS" "${FIELDS[@]}" 2>>bits.err | sort; }
same() { # NAME FILE: FILE (canonical) has the N reference predictions, bit for bit
    local n
    n=$(wc -l <"$2")
    if [ "$n" = "$N" ] && cmp -s "$2" ref.txt; then
        ok "$1: $N predictions bit-identical to infera batch"
    else
        bad "$1: predictions differ from infera batch ($n rows)" "$(diff ref.txt "$2" | head -4 | tr '\n' ' ')"
    fi
}
once() { # NAME FILE: each transaction of the input has exactly one prediction in FILE (canonical)
    local n u
    n=$(wc -l <"$2")
    u=$(cut -f1 "$2" | sort -u | wc -l)
    if [ "$n" = "$N" ] && [ "$u" = "$N" ]; then ok "$1: every event has exactly one output"; else bad "$1: $n outputs for $u events (want $N)"; fi
}
SC_CMD=("$INFERA" stream --model fraud@1 --progress-ms 0) # background jobs run it directly: $! is infera
S() { # a foreground run: one still going after 180 s is a hang (a FAIL that names it)
    timeout -k 10 180 "${SC_CMD[@]}" "$@"
    local rc=$?
    [ $rc = 124 ] && bad "infera stream $* did not finish within 180 s"
    return $rc
}

# ---- setup -------------------------------------------------------------------------------
cp "$EX/card_features.db" card_features.db
sed "s#\"sqlite:card_features.db?#\"sqlite:$T/card_features.db?#" "$EX/fraud_spec.json" >fraud_spec.json
"$INFERA" registry register fraud "$EX/fraud_xgb.onnx" --pipeline fraud_spec.json >reg.out 2>&1
check "fraud@1 registered with its spec" 'grep -q "registered fraud@1" reg.out' "$(cat reg.out)"
"$INFERA" batch --model fraud@1 --input "csv:$RAW" --output jsonl:batch.jsonl --progress none >batch.out 2>&1
canon <batch.jsonl >ref.txt
check "reference: infera batch scored $N rows" '[ "$(wc -l <ref.txt)" = $N ] && grep -q "scored 5,000" batch.out' "$(cat batch.out)"
# the raw CSV rows as JSON objects (numbers keep their CSV spelling, empty cells are null)
awk -F, '{ sub(/\r$/, "") } NR == 1 { for (i = 1; i <= NF; i++) h[i] = $i; next }
    { s = "{"; for (i = 1; i <= NF; i++) { v = $i
          if (v == "") v = "null"; else if (v !~ /^-?[0-9]+(\.[0-9]+)?([eE][-+]?[0-9]+)?$/) v = "\"" v "\""
          s = s (i > 1 ? "," : "") "\"" h[i] "\":" v }
      print s "}" }' "$RAW" >raw.json

# ---- stdin -> stdout -------------------------------------------------------------------------
S --input jsonl:- --output jsonl:- <raw.json >stdin.jsonl 2>stdin.err
rc=$?
check "jsonl:- -> jsonl:-: exits 0 at the end of stdin" '[ $rc = 0 ]' "$(tail -2 stdin.err)"
canon <stdin.jsonl >stdin.txt
same "jsonl:- -> jsonl:-" stdin.txt
check "output records: key, event_id (= line number), predictions, lineage, scored_at" \
    'head -1 stdin.jsonl | grep -q "^{\"transaction_id\":\"t050000\",\"event_id\":\"1\",\"fraud_score\":.*\"pipeline_hash\":\"[0-9a-f]\{64\}\",\"scored_at\":\"20"'
{ head -2 raw.json; printf '{"a":"'; head -c 20000000 /dev/zero | tr '\0' x; echo '"}'; sed -n 3p raw.json; } |
    S --input jsonl:- --output jsonl:long.jsonl --errors jsonl:long_err.jsonl 2>long.err
rc=$?
check "a 20 MB line: a dead letter (longer than 16 MiB), the lines after it go on" \
    '[ $rc = 0 ] && [ "$(wc -l <long.jsonl)" = 3 ] && grep -q "\"event_id\":\"4\"" long.jsonl && grep -q "line 3: longer than 16777216 bytes" long_err.jsonl' \
    "$(tail -n 2 long.err)"
S --input jsonl:raw.json --output jsonl:small.jsonl --max-batch 7 --threads 2 --max-delay-ms 0 2>small.err
canon <small.jsonl >small.txt
same "jsonl:PATH, --max-batch 7 --threads 2" small.txt
check "summary line on stderr counts the micro-batches" 'grep -q "\"events\":5000,\"batches\":715," small.err' "$(tail -1 small.err)"

# ---- Redis ------------------------------------------------------------------------------------
if ! start_redis; then
    bad "redis-server could not be started"
    check_done
fi
R() { redis-cli -p "$REDIS_PORT" "$@"; }
pending() { R XPENDING "$1" "$2" | head -1; }
redis_preds() { R --raw XRANGE "$1" - + | grep '^{' | canon; } # the data fields of an output stream, canonical
# XADD every line of stdin as the `data` field of an entry of stream $1 (RESP built by awk)
xadd_json() { awk -v k="$1" '{ printf "*5\r\n$4\r\nXADD\r\n$%d\r\n%s\r\n$1\r\n*\r\n$4\r\ndata\r\n$%d\r\n%s\r\n", length(k), k, length($0), $0 }' | R --pipe >/dev/null; }
xadd_json tx <raw.json
# the CSV rows as flat entries: one field per column (empty cells as empty values)
awk -F, -v k=txf '{ sub(/\r$/, "") } NR == 1 { for (i = 1; i <= NF; i++) h[i] = $i; next }
    { printf "*%d\r\n$4\r\nXADD\r\n$%d\r\n%s\r\n$1\r\n*\r\n", 3 + 2 * NF, length(k), k
      for (i = 1; i <= NF; i++) printf "$%d\r\n%s\r\n$%d\r\n%s\r\n", length(h[i]), h[i], length($i), $i }' "$RAW" | R --pipe >/dev/null
check "$N JSON entries in stream tx and $N flat entries in txf" '[ "$(R XLEN tx)" = $N ] && [ "$(R XLEN txf)" = $N ]'

S --input "$REDIS_URL/tx?group=g1" --output "$REDIS_URL/scored" --max-events $N 2>r2r.err
rc=$?
check "redis -> redis: exits 0 after --max-events" '[ $rc = 0 ]' "$(tail -3 r2r.err)"
redis_preds scored >r2r.txt
same "redis stream (group) -> redis stream" r2r.txt
check "redis -> redis: all $N entries acknowledged, none pending" '[ "$(pending tx g1)" = 0 ] && grep -q "$N acknowledged" r2r.err' "$(tail -1 r2r.err)"
check "output entries carry the key and the event id (the input entry id)" \
    'R --raw XRANGE scored - + COUNT 1 | sed -n 2p | grep -qx transaction_id && R --raw XRANGE scored - + COUNT 1 | grep -q "\"event_id\":\"$(R --raw XRANGE tx - + COUNT 1 | head -1)\""'
R XGROUP SETID tx g1 0 >/dev/null
S --input "$REDIS_URL/tx?group=g1" --output "$REDIS_URL/scored" --max-events $N 2>replay.err
check "replay of all $N events (XGROUP SETID 0): no entry added twice" '[ "$(R XLEN scored)" = $N ] && [ "$(pending tx g1)" = 0 ]' \
    "$(R XLEN scored) entries; $(tail -2 replay.err)"

S --input "$REDIS_URL/txf?group=g1" --output "sqlite:out.db?table=scored" --max-events $N 2>flat.err
"$INFERA" batch --no-score --input "sqlite:out.db?table=scored" --output jsonl:flat.jsonl --progress none >/dev/null 2>&1
canon <flat.jsonl >flat.txt
same "redis flat entries (CSV cells) -> sqlite table" flat.txt
R XGROUP SETID txf g1 0 >/dev/null
S --input "$REDIS_URL/txf?group=g1" --output "sqlite:out.db?table=scored" --max-events $N 2>flat2.err
check "replay into sqlite: upserts by key, still $N rows" '[ "$(sqlite3 out.db "SELECT count(*) FROM scored")" = $N ]'

# ---- at-least-once: kill -9 mid-stream, restart ---------------------------------------------------------
# A slow consumer (micro-batches of 5) into a Redis stream, killed twice with
# SIGKILL while it works, restarted with the same consumer name each time.
start_consumer() {
    "${SC_CMD[@]}" --input "$REDIS_URL/tx?group=gk&consumer=c1" --output "$REDIS_URL/killed" --max-batch 5 --max-delay-ms 0 2>>kill.err &
    CPID=$!
    PIDS+=("$CPID")
}
kills=""
for at in 1000 2500; do
    start_consumer
    for _ in $(seq 1200); do [ "$(R XLEN killed)" -ge $at ] && break; sleep 0.05; done
    kill -9 "$CPID"
    wait "$CPID" 2>/dev/null
    kills="$kills $(R XLEN killed) written/$(pending tx gk) pending;"
done
start_consumer
for _ in $(seq 1200); do [ "$(R XLEN killed)" -ge $N ] && [ "$(pending tx gk)" = 0 ] && break; sleep 0.1; done
stop_child "$CPID"
rc=$?
check "after kill -9 at:$kills the restarted consumer drains and exits 0 on SIGTERM" '[ $rc = 0 ]' "$(tail -2 kill.err)"
redis_preds killed >killed.txt
once "kill -9 twice + restart -> redis stream" killed.txt
same "kill -9 twice + restart -> redis stream" killed.txt
check "kill -9 + restart: nothing left pending" '[ "$(pending tx gk)" = 0 ]'

# the same against a SQLite table, killed once
"${SC_CMD[@]}" --input "$REDIS_URL/tx?group=gs&consumer=c1" --output "sqlite:killed.db?table=t" --max-batch 5 --max-delay-ms 0 2>kills.err &
CPID=$!
PIDS+=("$CPID")
for _ in $(seq 1200); do [ "$(sqlite3 -cmd ".timeout 5000" killed.db "SELECT count(*) FROM t" 2>/dev/null || echo 0)" -ge 1500 ] && break; sleep 0.05; done
kill -9 "$CPID"
wait "$CPID" 2>/dev/null
"${SC_CMD[@]}" --input "$REDIS_URL/tx?group=gs&consumer=c1" --output "sqlite:killed.db?table=t" --max-events $N 2>kills2.err &
CPID=$!
PIDS+=("$CPID")
for _ in $(seq 1200); do [ "$(pending tx gs)" = 0 ] && [ "$(sqlite3 -cmd ".timeout 5000" killed.db "SELECT count(*) FROM t")" = $N ] && break; sleep 0.1; done
stop_child "$CPID"
"$INFERA" batch --no-score --input "sqlite:killed.db?table=t" --output jsonl:killeds.jsonl --progress none >/dev/null 2>&1
canon <killeds.jsonl >killeds.txt
same "kill -9 + restart -> sqlite table" killeds.txt
check "kill -9 + restart -> sqlite: nothing pending" '[ "$(pending tx gs)" = 0 ]'

# the pending list after a crash, deterministically: c1 read 300 entries and died
R XGROUP CREATE tx gp 0 >/dev/null
R XREADGROUP GROUP gp c1 COUNT 300 STREAMS tx '>' >/dev/null
check "300 entries pending for consumer c1 (read, never acknowledged)" '[ "$(pending tx gp)" = 300 ]'
S --input "$REDIS_URL/tx?group=gp" --consumer c1 --output "sqlite:pel.db?table=t" --max-events $N 2>pel.err
check "restarted c1 reads its 300 pending entries first, then the 4700 new ones" \
    'grep -q "4700 new, 300 redelivered from the pending list" pel.err && [ "$(pending tx gp)" = 0 ]' "$(tail -1 pel.err)"
check "pending + new: $N rows in the table" '[ "$(sqlite3 pel.db "SELECT count(DISTINCT transaction_id) FROM t")" = $N ]'

# a dead consumer's entries, claimed with XAUTOCLAIM
R XGROUP CREATE tx gc 0 >/dev/null
R XREADGROUP GROUP gc dead COUNT 200 STREAMS tx '>' >/dev/null
sleep 0.3
S --input "$REDIS_URL/tx?group=gc&consumer=c2&claim_idle_ms=100" --output "sqlite:claim.db?table=t" --max-events $N 2>claim.err
check "claim_idle_ms: c2 claims the 200 entries the dead consumer left pending" \
    'grep -q "4800 new, 0 redelivered from the pending list, 200 claimed" claim.err && [ "$(pending tx gc)" = 0 ]' \
    "$(tail -1 claim.err)"
check "claimed + new: $N rows" '[ "$(sqlite3 claim.db "SELECT count(DISTINCT transaction_id) FROM t")" = $N ]'

# the consumer's connection killed by the server (CLIENT KILL) while it waits: it reconnects
head -2500 raw.json | xadd_json txr
"${SC_CMD[@]}" --input "$REDIS_URL/txr?group=g" --output "$REDIS_URL/recon" 2>recon.err &
CPID=$!
PIDS+=("$CPID")
for _ in $(seq 1200); do [ "$(R XLEN recon)" -ge 2500 ] && break; sleep 0.05; done
sleep 0.3
cid=$(R CLIENT LIST | awk '/cmd=xreadgroup/ { sub("id=", "", $1); print $1; exit }')
R CLIENT KILL ID "$cid" >/dev/null
tail -n +2501 raw.json | xadd_json txr
for _ in $(seq 1200); do [ "$(R XLEN recon)" -ge $N ] && [ "$(pending txr g)" = 0 ] && break; sleep 0.05; done
stop_child "$CPID"
rc=$?
check "redis connection killed mid-run: the consumer reconnects and goes on (exit 0 on SIGTERM)" \
    '[ -n "$cid" ] && [ $rc = 0 ] && grep -q "reconnected" recon.err && grep -q "1 reconnects" recon.err' "$(tail -n 4 recon.err)"
redis_preds recon >recon.txt
same "redis connection killed mid-run" recon.txt

# ---- malformed and rejected events -------------------------------------------------------------------
{
    head -20 raw.json
    echo '{"transaction_id": "bad1", "amount": '
    echo '[1, 2, 3]'
    echo '{"transaction_id":"neg1","card_id":"card00001","ts":"2024-03-10T16:09:25Z","amount":-5,"merchant_category":5,"card_present":1}'
    sed -n 21,40p raw.json
} | xadd_json txbad
R XADD txbad '*' colour blue >/dev/null
S --input "$REDIS_URL/txbad?group=g" --output "$REDIS_URL/outbad" --errors jsonl:errors.jsonl --max-events 44 2>bad.err
check "malformed events: the other 40 are scored" '[ "$(R XLEN outbad)" = 40 ] && [ $(pending txbad g) = 0 ]' "$(tail -2 bad.err)"
check "4 dead letters, each with its event id and reason" '[ "$(wc -l <errors.jsonl)" = 4 ] && [ "$(grep -c "\"event_id\":\"[0-9]*-[0-9]*\"" errors.jsonl)" = 4 ]' \
    "$(cat errors.jsonl)"
check "bad JSON: reason names the entry and the parse error" 'grep -q "\"reason\":\"entry [0-9-]*: .*JSON" errors.jsonl' "$(head -1 errors.jsonl)"
check "JSON that is not an object is rejected" 'grep -q "\"record\":\"\[1, 2, 3\]\"" errors.jsonl'
check "out-of-range amount: field and reason, the record without its sensitive card_id" \
    'grep "\"id\":\"neg1\"" errors.jsonl | grep "\"field\":\"amount\"" | grep -v card00001 | grep -q minimum' "$(grep neg1 errors.jsonl)"
check "a flat entry missing the required fields is rejected with a reason" 'grep colour errors.jsonl | grep -q "\"reason\":\"[^\"]"' "$(cat errors.jsonl)"
check "summary counts 40 scored, 2 rejected, 2 malformed" 'grep -q "\"scored\":40,\"written\":40,\"rejected\":2,\"malformed\":2" bad.err' "$(grep summary bad.err)"

# ---- events the engine cannot take ---------------------------------------------------------------------
# embed.onnx (gen_embed_model.py) looks ids up in a 5-row table: an id out of range fails the engine run of
# the whole micro-batch.  Only that event may become a dead letter; were the error fatal, the restarted
# consumer would meet the same events in its pending list again, for ever.
EMBED=$SRC/tests/stream/data/embed.onnx
printf '%s\n' '{"inputs": {"id": {"type": "string", "id": true}, "k": {"type": "int", "required": true}},' \
    ' "model_inputs": {"k": {"dtype": "int64", "order": ["k"]}}}' >embed_spec.json
printf '%s\n' '{"id":"a","k":1}' '{"id":"b","k":7}' '{"id":"c","k":4}' '{"id":"d","k":-9}' '{"id":"e","k":0}' | xadd_json txe
"$INFERA" stream --model "$EMBED" --pipeline embed_spec.json --progress-ms 0 --input "$REDIS_URL/txe?group=g" \
    --output "sqlite:embed.db?table=t" --errors jsonl:embed_err.jsonl --max-events 5 2>embed.err
rc=$?
check "engine error on a micro-batch: the other 3 events are scored, exit 0" \
    '[ $rc = 0 ] && [ "$(sqlite3 embed.db "SELECT group_concat(id) FROM (SELECT id FROM t ORDER BY id)")" = "a,c,e" ]' \
    "rc $rc; $(tail -n 2 embed.err)"
check "... k=4 scored as table row 4 (2, 2.25)" '[ "$(sqlite3 embed.db "SELECT score_0, score_1 FROM t WHERE id = '"'c'"'")" = "2.0|2.25" ]'
check "... the 2 ids out of range are dead letters with the engine's error; nothing pending" \
    '[ "$(wc -l <embed_err.jsonl)" = 2 ] && grep "\"id\":\"b\"" embed_err.jsonl | grep -q "Gather.*7, outside" &&
     grep -q "\"id\":\"d\"" embed_err.jsonl && [ "$(pending txe g)" = 0 ] && grep -q "\"scored\":3,\"written\":3,\"rejected\":2" embed.err' \
    "$(cat embed_err.jsonl; tail -n 2 embed.err)"
# no spec: the default pipeline finds no numeric field in a micro-batch of one junk event
printf '%s\n' '{"colour":"blue"}' | "$INFERA" stream --model "$EMBED" --progress-ms 0 --input jsonl:- --output jsonl:junk.jsonl \
    --errors jsonl:junk_err.jsonl 2>junk.err
rc=$?
check "default pipeline, an event without numeric fields: a dead letter, exit 0" \
    '[ $rc = 0 ] && [ ! -s junk.jsonl ] && grep -q "0 numeric fields" junk_err.jsonl' "rc $rc; $(cat junk_err.jsonl; tail -n 2 junk.err)"

# no spec, more numeric fields than the model takes: the first ones are scored and the stream says so once
printf '%s\n' '{"id":"a","k":1,"x":5}' '{"id":"b","k":2,"x":6}' | "$INFERA" stream --model "$EMBED" --progress-ms 0 \
    --id-column id --input jsonl:- --output jsonl:extra.jsonl 2>extra.err
rc=$?
check "default pipeline, a numeric field past the model's width: reported once, the events scored" \
    '[ $rc = 0 ] && [ "$(wc -l <extra.jsonl)" = 2 ] && [ "$(grep -c "scoring .k.; 1 more ignored" extra.err)" = 1 ]' \
    "rc $rc; $(cat extra.err)"

# ---- bytes that are not UTF-8 text ------------------------------------------------------------------------------
# JSON is UTF-8; a text sink (PostgreSQL) refuses other bytes, and would refuse them again on every redelivery.
# An entry whose JSON, or a flat entry whose value, is not UTF-8 is a malformed event; its dead letter's payload
# is cleaned ('?' for the bad bytes), so the dead letter itself can be written anywhere.
good=$(sed -n 1p raw.json)
bad_json=$(sed -n 2p raw.json | sed 's/"t050001"/"t050001\xff"/')
{ printf '*5\r\n$4\r\nXADD\r\n$4\r\ntxu8\r\n$1\r\n*\r\n$4\r\ndata\r\n$%d\r\n%s\r\n' "${#good}" "$good"
  printf '*5\r\n$4\r\nXADD\r\n$4\r\ntxu8\r\n$1\r\n*\r\n$4\r\ndata\r\n$%d\r\n%s\r\n' "$(printf '%s' "$bad_json" | wc -c)" "$bad_json"
  printf '*7\r\n$4\r\nXADD\r\n$4\r\ntxu8\r\n$1\r\n*\r\n$14\r\ntransaction_id\r\n$3\r\nu3\xfe\r\n$6\r\namount\r\n$1\r\n1\r\n'
} | R --pipe >/dev/null
S --input "$REDIS_URL/txu8?group=g" --output "sqlite:u8.db?table=t" --errors jsonl:u8_err.jsonl --max-events 3 2>u8.err
rc=$?
check "entries that are not UTF-8: dead letters ('not UTF-8 text'), the good one scored, exit 0" \
    '[ $rc = 0 ] && [ "$(sqlite3 u8.db "SELECT group_concat(transaction_id) FROM t")" = t050000 ] &&
     [ "$(grep -c "not UTF-8 text" u8_err.jsonl)" = 2 ] && grep -q "the value of field .transaction_id." u8_err.jsonl' \
    "rc $rc; $(cat u8_err.jsonl | head -c 600; tail -n 2 u8.err)"
check "... the dead letters are valid UTF-8 (bad bytes shown as '?')" \
    'iconv -f UTF-8 -t UTF-8 u8_err.jsonl >/dev/null && grep -q "t050001?" u8_err.jsonl'

# ---- Redis sink: keys of any length ------------------------------------------------------------------------
# two ids that share their first 5000 bytes are two keys: both get an entry (the seen-key holds the whole key)
long=$(head -c 5000 /dev/zero | tr '\0' k)
printf '{"id":"%sA","k":1}\n{"id":"%sB","k":2}\n{"id":"%sA","k":3}\n' "$long" "$long" "$long" |
    "$INFERA" stream --model "$EMBED" --pipeline embed_spec.json --progress-ms 0 --input jsonl:- \
        --output "$REDIS_URL/longkeys" 2>longkeys.err
rc=$?
check "redis sink, 5001-byte keys: one entry per key (the repeated key deduplicated)" \
    '[ $rc = 0 ] && [ "$(R XLEN longkeys)" = 2 ]' "rc $rc, $(R XLEN longkeys) entries; $(tail -n 2 longkeys.err)"

# ---- ids the source types as numbers ------------------------------------------------------------------------
# flat entries type their cells like CSV: "12345" is an int.  The spec declares transaction_id a string, so the
# output key is the string "12345": the table's key column is not made an integer by the first micro-batch, to
# refuse "t777" (and fail the consumer on every restart) afterwards.
for id in 12345 t777; do
    R XADD txid '*' transaction_id "$id" card_id card00001 ts 2024-03-10T16:09:25Z amount 3 merchant_category 2 \
        card_present 1 >/dev/null
done
S --input "$REDIS_URL/txid?group=g" --output "sqlite:ids.db?table=t" --max-batch 1 --max-events 2 2>ids.err
rc=$?
check "ids 12345 then t777 (flat entries, micro-batches of 1) -> sqlite: both scored, both text keys" \
    '[ $rc = 0 ] && [ "$(sqlite3 ids.db "SELECT group_concat(typeof(transaction_id) || '"':'"' || transaction_id) FROM (SELECT transaction_id FROM t ORDER BY transaction_id)")" = "text:12345,text:t777" ]' \
    "rc $rc; $(tail -n 2 ids.err)"

# ---- SIGTERM drain ---------------------------------------------------------------------------------------
mkfifo in.fifo
"${SC_CMD[@]}" --input jsonl:in.fifo --output jsonl:drain.jsonl --max-delay-ms 0 2>drain.err &
CPID=$!
PIDS+=("$CPID")
exec 3<>in.fifo # read-write: never blocks, even if infera failed to open its end
head -100 raw.json >&3
for _ in $(seq 1200); do [ "$( (wc -l <drain.jsonl) 2>/dev/null || echo 0)" -ge 100 ] && break; sleep 0.05; done
stop_child "$CPID"
rc=$?
exec 3>&-
check "SIGTERM with stdin still open: exit 0, the 100 events written" '[ $rc = 0 ] && [ "$(wc -l <drain.jsonl)" = 100 ] && grep -q "\"state\":\"stopped\"" drain.err' \
    "rc $rc, $(wc -l <drain.jsonl) lines; $(tail -1 drain.err)"
"${SC_CMD[@]}" --input "$REDIS_URL/tx?group=gt" --output "$REDIS_URL/drained" 2>drainr.err &
CPID=$!
PIDS+=("$CPID")
for _ in $(seq 3000); do [ "$(R XLEN drained)" -ge 2000 ] && break; sleep 0.02; done
stop_child "$CPID" INT
rc=$?
check "SIGINT mid-stream: exit 0, every event read was written and acknowledged" \
    '[ $rc = 0 ] && [ "$(pending tx gt)" = 0 ] && [ "$(R XLEN drained)" = "$(R XINFO GROUPS tx | awk "/^gt\$/ { f = 1 } f && /entries-read/ { getline; print; exit }")" ]' \
    "rc $rc; $(R XLEN drained) written; $(tail -1 drainr.err)"

# ---- MQTT ---------------------------------------------------------------------------------------------------
if start_mosquitto; then
    M_CMD=("$INFERA" stream --no-score --progress-ms 0)
    M() { timeout -k 10 180 "${M_CMD[@]}" "$@" || bad "infera stream $* failed or did not finish within 180 s"; }
    ready() { for _ in $(seq 600); do grep -q ready "$1" && return 0; sleep 0.1; done; return 1; }
    "${M_CMD[@]}" --input "$MQTT_URL/scored?client_id=collector" --output jsonl:mqtt.jsonl --max-events $N 2>col.err &
    COL=$!
    PIDS+=("$COL")
    "${SC_CMD[@]}" --input "$MQTT_URL/tx?client_id=scorer" --output "$MQTT_URL/scored" 2>sc1.err &
    SC=$!
    PIDS+=("$SC")
    ready col.err && ready sc1.err
    rc=$?
    check "mqtt: collector and scorer subscribed" '[ $rc = 0 ]' "$(cat col.err sc1.err)"
    head -4000 raw.json >first.json
    tail -n +4001 raw.json >rest.json
    M --input jsonl:first.json --output "$MQTT_URL/tx" 2>pub1.err
    for _ in $(seq 1200); do [ "$(wc -l <mqtt.jsonl 2>/dev/null || echo 0)" -ge 4000 ] && break; sleep 0.1; done
    stop_child "$SC"
    rc=$?
    check "mqtt: scorer drains on SIGTERM (exit 0)" '[ $rc = 0 ]' "$(tail -2 sc1.err)"
    # published while the scorer is down: the broker keeps them for its persistent session
    M --input jsonl:rest.json --output "$MQTT_URL/tx" 2>pub2.err
    "${SC_CMD[@]}" --input "$MQTT_URL/tx?client_id=scorer" --output "$MQTT_URL/scored" 2>sc2.err &
    SC=$!
    PIDS+=("$SC")
    wait_child "$COL" 120
    rc=$?
    check "mqtt: collector got $N messages and exited 0 (--max-events)" '[ $rc = 0 ] && [ "$(wc -l <mqtt.jsonl)" = $N ]' "$(tail -2 col.err)"
    stop_child "$SC"
    check "mqtt: the restarted scorer received the 1000 messages published while it was down" \
        'grep -q "1000 messages received" sc2.err' "$(tail -1 sc2.err)"
    canon <mqtt.jsonl >mqtt.txt
    same "mqtt topic -> mqtt topic (restart in the middle)" mqtt.txt
    # SIGTERM while messages wait in the consumer's queue (libmosquitto acknowledged them on
    # receipt): they are scored before it exits, the unread rest comes to the restarted consumer.
    # The consumer is stopped (SIGSTOP) mid-stream, signalled, then continued.
    head -2000 raw.json >slow.json
    lines() { (wc -l <"$1") 2>/dev/null || echo 0; }
    "${SC_CMD[@]}" --input "$MQTT_URL/tx2?client_id=slow" --output jsonl:slow1.jsonl --max-batch 1 --max-delay-ms 0 \
        2>slow1.err &
    SC=$!
    PIDS+=("$SC")
    ready slow1.err
    "${M_CMD[@]}" --input jsonl:slow.json --output "$MQTT_URL/tx2" 2>pub3.err &
    PUB=$!
    PIDS+=("$PUB")
    for _ in $(seq 6000); do [ "$(lines slow1.jsonl)" -ge 50 ] && break; sleep 0.005; done
    kill -STOP "$SC"
    n_stop=$(lines slow1.jsonl)
    kill -TERM "$SC"
    kill -CONT "$SC"
    wait_child "$SC"
    rc1=$?
    wait_child "$PUB"
    "${SC_CMD[@]}" --input "$MQTT_URL/tx2?client_id=slow" --output jsonl:slow2.jsonl 2>slow2.err &
    SC=$!
    PIDS+=("$SC")
    ready slow2.err
    slow_ids() { cat slow1.jsonl slow2.jsonl 2>/dev/null | grep -o '"transaction_id":"[^"]*"' | sort -u | wc -l; }
    for _ in $(seq 1200); do [ "$(slow_ids)" -ge 2000 ] && break; sleep 0.05; done
    stop_child "$SC"
    rc2=$?
    check "mqtt: SIGTERM with messages queued in the consumer: none lost (2000 ids over the stop and restart)" \
        '[ $rc1 = 0 ] && [ $rc2 = 0 ] && [ "$(slow_ids)" = 2000 ]' \
        "rc $rc1/$rc2, $(slow_ids) ids, $n_stop written when stopped, $(lines slow1.jsonl) by the first run; $(tail -n 1 slow1.err)"
    stop_mosquitto
else
    bad "mosquitto could not be started"
fi

# ---- PostgreSQL sink ----------------------------------------------------------------------------------------
if start_postgres; then
    S --input "$REDIS_URL/tx?group=gpg" --output "$PG_URL?table=scored" --max-events $N 2>pg.err
    R XGROUP SETID tx gpg 0 >/dev/null
    S --input "$REDIS_URL/tx?group=gpg" --output "$PG_URL?table=scored" --max-events $N 2>pg2.err
    check "redis -> postgresql, replayed: $N rows (upsert by key)" \
        '[ "$(psql -X -t -A "$PG_URL" -c "SELECT count(*) FROM scored")" = $N ]' "$(tail -n 2 pg.err pg2.err)"
    "$INFERA" batch --no-score --input "$PG_URL?table=scored" --output jsonl:pg.jsonl --progress none >/dev/null 2>&1
    canon <pg.jsonl >pg.txt
    same "redis -> postgresql table" pg.txt
else
    skip_or_fail "PostgreSQL sink: the server could not be started" || FAIL=$((FAIL + 1))
fi

# ---- the Redis server restarts under a Redis -> Redis consumer -----------------------------------------------
# (last of the Redis parts: the server restarts empty)
head -1000 raw.json | xadd_json txrs
"${SC_CMD[@]}" --input "$REDIS_URL/txrs?group=g" --output "$REDIS_URL/restarted" 2>restart.err &
CPID=$!
PIDS+=("$CPID")
for _ in $(seq 1200); do [ "$(R XLEN restarted)" -ge 1000 ] && [ "$(pending txrs g)" = 0 ] && break; sleep 0.05; done
n_before=$(R XLEN restarted)
R SHUTDOWN NOSAVE >/dev/null 2>&1
sleep 1
redis-server --bind 127.0.0.1 --port "$REDIS_PORT" --dir "$REDIS_DIR" --save '' --appendonly no \
    --daemonize yes --pidfile "$REDIS_DIR/redis.pid" --logfile "$REDIS_DIR/redis.log" >/dev/null 2>&1
for _ in $(seq 50); do R ping >/dev/null 2>&1 && break; sleep 0.1; done
# the server kept nothing (--save ''): the consumer re-creates its group, the sink connects again
for _ in $(seq 100); do [ "$(R XINFO GROUPS txrs 2>/dev/null | grep -c '^g$')" = 1 ] && break; sleep 0.1; done
sed -n 1001,1500p raw.json | xadd_json txrs
for _ in $(seq 1200); do [ "$(R XLEN restarted)" -ge 500 ] && [ "$(pending txrs g)" = 0 ] && break; sleep 0.05; done
stop_child "$CPID"
rc=$?
check "redis restarted under the consumer: source and sink reconnect, the 500 new events are written, exit 0" \
    '[ "$n_before" = 1000 ] && [ $rc = 0 ] && [ "$(R XLEN restarted)" = 500 ] && [ "$(pending txrs g)" = 0 ]' \
    "$n_before before; rc $rc, $(R XLEN restarted) after; $(tail -n 3 restart.err)"
R --raw XRANGE restarted - + | grep '^{' | canon >restarted.txt
check "... and its 500 predictions are those of infera batch, bit for bit" \
    '[ "$(wc -l <restarted.txt)" = 500 ] && [ "$(grep -cFxf restarted.txt ref.txt)" = 500 ]'

# ---- errors and lineage --------------------------------------------------------------------------------------
"$INFERA" stream --model fraud@1 --input "kafka://x/y" --output jsonl:- >e1.out 2>&1
rc=$?
check "unknown input scheme: usage error (exit 2), one line" '[ $rc = 2 ] && [ "$(wc -l <e1.out)" = 1 ]' "$(cat e1.out)"
"$INFERA" stream --model fraud@1 --input "redis://127.0.0.1:1/s" --output jsonl:- >e2.out 2>&1
rc=$?
check "redis source without ?group=: names the URI and what is missing" '[ $rc = 1 ] && grep -q "needs a stream and a group" e2.out' "$(cat e2.out)"
"$INFERA" stream --model fraud@1 --input "redis://127.0.0.1:1/s?group=g" --output jsonl:- >e3.out 2>&1
rc=$?
check "unreachable redis: exit 1, 'cannot connect'" '[ $rc = 1 ] && grep -q "cannot connect" e3.out' "$(cat e3.out)"
"$INFERA" registry lineage fraud >lineage.out 2>&1
check "registry lineage lists the stream runs" 'grep -q "used by stream redis://127.0.0.1:$REDIS_PORT/tx?group=g1 -> redis://127.0.0.1:$REDIS_PORT/scored" lineage.out' \
    "$(head -5 lineage.out)"
"$INFERA" registry audit --model fraud --limit 200 >audit.out 2>&1
check "registry audit has the stream's prediction counts" 'grep -q "\"mode\":\"stream\".*\"rows\":5000" audit.out'

[ -s bits.err ] && grep -v '^pred_bits: [0-9]* predictions' bits.err | head -5 | sed 's/^/    /'
check_done
