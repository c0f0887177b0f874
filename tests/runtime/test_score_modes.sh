#!/usr/bin/env bash
# test_score_modes.sh -- issue 19: one scoring core (src/runtime/score.h) for
# every runner.  The same records, some of which the model cannot take,
# through `infera batch`, `infera stream` (jsonl) and `infera serve`'s records
# endpoint must give the same predictions, the same rejections (spec
# rejections and the engine's error after the record-by-record fallback) and
# the same lineage stamp (model_name, model_version = sha256:<12 hex> of the
# file, pipeline_hash).
#
# Model: tests/stream/data/embed.onnx, score = table[k] with table =
# arange(10).reshape(5, 2) / 4 (tests/stream/gen_embed_model.py), so the
# expected scores are known without the engine: k -> [k/2, k/2 + 0.25] for k
# in 0..4 (and k + 5 for -5..-1); any other k makes Gather fail for the whole
# batch.  The expected version comes from sha256sum.  Before this test's fix,
# serve answered the whole request with the Gather error (no predictions) and
# stamped version "1".
#
#   usage: test_score_modes.sh INFERA SOURCE_DIR
set -u
. "$(dirname "$0")/../check.sh"
INFERA=$1
SRC=$2
command -v python3 >/dev/null || skip "python3 (the JSON comparisons) missing"
command -v curl >/dev/null || skip "curl missing"
T=$(mktemp -d /tmp/infera-score-modes.XXXXXX)
SERVER_PID=
cleanup() {
    [ -n "$SERVER_PID" ] && kill "$SERVER_PID" 2>/dev/null && wait "$SERVER_PID" 2>/dev/null
    if [ "$FAIL" = 0 ]; then rm -rf "$T"; else echo "(kept $T for inspection)"; fi
}
trap cleanup EXIT
cd "$T" || exit 1
export INFERA_HOME=$T/home

cp "$SRC/tests/stream/data/embed.onnx" embed.onnx
printf '%s\n' '{"inputs": {"id": {"type": "string", "id": true}, "k": {"type": "int", "required": true}},' \
    ' "model_inputs": {"k": {"dtype": "int64", "order": ["k"]}}}' >embed.pipeline.json
# a: scored, b: the engine's error (7 outside the table), c: scored, d: the spec's rejection
# (k missing), e: scored, f: scored (-1 = the last row), g: the engine's error
printf '%s\n' '{"id":"a","k":1}' '{"id":"b","k":7}' '{"id":"c","k":4}' '{"id":"d"}' '{"id":"e","k":0}' \
    '{"id":"f","k":-1}' '{"id":"g","k":-6}' >records.jsonl
VERSION="sha256:$(sha256sum embed.onnx | cut -c1-12)"

# canonical lines from each mode: "P id score_0 score_1 model_name model_version pipeline_hash" for a
# prediction, "R id field reason" for a rejection (field "" = none), sorted
canon() { # MODE FILE...
    python3 - "$@" <<'EOF'
import json, sys
mode, files = sys.argv[1], sys.argv[2:]
ids = [json.loads(l)["id"] for l in open("records.jsonl")]
out = []
def pred(p):
    out.append("P %s %r %r %s %s %s" % (p["id"], float(p["score_0"]), float(p["score_1"]), p["model_name"], p["model_version"],
                                        p["pipeline_hash"]))
def rej(i, field, reason):
    out.append("R %s %s %s" % (i, field or "", reason))
if mode == "serve":
    for f in files:
        r = json.load(open(f))
        for p in r["predictions"]:
            pred(p)
        for x in r["rejected"]:
            rej(ids[x["row"]], x["field"], x["error"])
else:  # batch / stream: prediction rows in the first file, rejection rows in the second
    for l in open(files[0]):
        pred(json.loads(l))
    for l in open(files[1]):
        x = json.loads(l)
        rej(x["id"], x["field"], x["reason"])
print("\n".join(sorted(out)))
EOF
}

# ---- the expected lines, from the model's construction (not from the engine) ----------
HASH=
"$INFERA" batch --model embed.onnx --pipeline embed.pipeline.json --input jsonl:records.jsonl \
    --output jsonl:batch.jsonl --errors jsonl:batch_err.jsonl --progress none >batch.out 2>&1
rc=$?
check "batch: 7 records -> 4 scored, 3 rejected" '[ $rc = 0 ] && grep -q "read 7  scored 4  written 4  rejected 3" batch.out' \
    "rc=$rc $(cat batch.out)"
HASH=$(python3 -c 'import json,sys; print(json.loads(open("batch.jsonl").readline())["pipeline_hash"])' 2>/dev/null)
GATHER="node 'Gather_0' (Gather): input indices: element 0 is"
python3 - "$VERSION" "$HASH" "$GATHER" >expected.txt <<'EOF'
import sys
version, phash, gather = sys.argv[1:]
rows = {k: (k / 2, k / 2 + 0.25) for k in range(5)}  # table = arange(10).reshape(5, 2) / 4
out = []
for i, k in (("a", 1), ("c", 4), ("e", 0), ("f", -1)):
    s0, s1 = rows[k % 5]
    out.append("P %s %r %r embed %s %s" % (i, s0, s1, version, phash))
out.append("R b  %s 7, outside [-5, 5) (axis 0 of input data)" % gather)
out.append("R g  %s -6, outside [-5, 5) (axis 0 of input data)" % gather)
out.append("R d k field 'k' is missing (required)")
print("\n".join(sorted(out)))
EOF
canon batch batch.jsonl batch_err.jsonl >batch.txt
check "batch: the expected predictions (table rows), rejections and lineage stamp ($VERSION)" \
    'cmp -s batch.txt expected.txt' "$(diff expected.txt batch.txt | head -8 | tr '\n' '|')"

# ---- stream: jsonl -> jsonl ------------------------------------------------------------
"$INFERA" stream --model embed.onnx --pipeline embed.pipeline.json --input jsonl:records.jsonl \
    --output jsonl:stream.jsonl --errors jsonl:stream_err.jsonl --progress-ms 0 >stream.out 2>&1
canon stream stream.jsonl stream_err.jsonl >stream.txt
check "stream (jsonl): the same predictions, rejections and stamp as batch" 'cmp -s stream.txt expected.txt' \
    "$(diff expected.txt stream.txt | head -8 | tr '\n' '|') $(tail -2 stream.out)"

# ---- serve: the records endpoint (the spec beside the model: embed.pipeline.json) -------
"$INFERA" serve --port 0 --model embed.onnx 2>server.log &
SERVER_PID=$!
PORT=
for _ in $(seq 100); do
    PORT=$(sed -nE 's/.*listening on http:\/\/127\.0\.0\.1:([0-9]+).*/\1/p' server.log)
    [ -n "$PORT" ] && break
    sleep 0.1
done
URL=http://127.0.0.1:$PORT/v2/models/embed/records
check "serve: started" '[ -n "$PORT" ]' "$(cat server.log)"
printf '{"records":[%s]}' "$(paste -sd, records.jsonl)" >all.json
code=$(curl -s -o serve_all.json -w '%{http_code}' -X POST "$URL" --data-binary @all.json)
canon serve serve_all.json >serve.txt
check "serve records (7 in one request): 200, the same predictions, rejections and stamp as batch" \
    '[ "$code" = 200 ] && cmp -s serve.txt expected.txt' "$code $(diff expected.txt serve.txt | head -8 | tr '\n' '|')"
check "serve: the response names the file's lineage stamp as model_version" \
    'grep -q "^{\"model_name\":\"embed\",\"model_version\":\"$VERSION\"" serve_all.json' "$(head -c 200 serve_all.json)"
# one record per request, concurrently: each answer is its record's line
i=0
while read -r rec; do
    printf '{"records":[%s]}' "$rec" >one$i.json
    i=$((i + 1))
done <records.jsonl
PIDS=()
for j in $(seq 0 $((i - 1))); do
    curl -s -o one$j.out -w '%{http_code}\n' -X POST "$URL" --data-binary @one$j.json >one$j.code &
    PIDS+=($!)
done
wait "${PIDS[@]}"
python3 - $i >serve_one.txt <<'EOF'
import json, sys
ids = [json.loads(l)["id"] for l in open("records.jsonl")]
out = []
for j in range(int(sys.argv[1])):
    code, r = open("one%d.code" % j).read().strip(), json.load(open("one%d.out" % j))
    for p in r.get("predictions", []):
        out.append("P %s %r %r %s %s %s" % (p["id"], float(p["score_0"]), float(p["score_1"]), p["model_name"],
                                            p["model_version"], p["pipeline_hash"]))
    for x in r.get("rejected", []):
        out.append("R %s %s %s" % (ids[j], x["field"] or "", x["error"]))
    if "error" in r:  # every record of the request failed alone: the request's error (as batch fails the job)
        out.append("E %s %s %s" % (ids[j], code, r["error"]))
print("\n".join(sorted(out)))
EOF
# a one-record request whose record fails in the engine is "every record failed": 4xx with the engine's error
python3 - "$GATHER" expected.txt >expected_one.txt <<'EOF'
import sys
gather, exp = sys.argv[1], sys.argv[2]
out = []
for l in open(exp).read().splitlines():
    if l.startswith("R b "):
        out.append("E b 400 model 'embed' version %s 7, outside [-5, 5) (axis 0 of input data)" % "VERSION")
    elif l.startswith("R g "):
        out.append("E g 400 model 'embed' version %s -6, outside [-5, 5) (axis 0 of input data)" % "VERSION")
    else:
        out.append(l)
print("\n".join(sorted(out)))
EOF
sed -i "s/version VERSION /version $VERSION: $GATHER /" expected_one.txt
sort -o expected_one.txt expected_one.txt
check "serve records, one per request: the same predictions and rejections; an engine failure is the request's 400" \
    'cmp -s serve_one.txt expected_one.txt' "$(diff expected_one.txt serve_one.txt | head -8 | tr '\n' '|')"

# ---- every record failing alone: batch stops the job, serve fails the request ---------
printf '%s\n' '{"id":"x","k":9}' '{"id":"y","k":70}' >all_bad.jsonl
"$INFERA" batch --model embed.onnx --pipeline embed.pipeline.json --input jsonl:all_bad.jsonl \
    --output jsonl:bad_out.jsonl --progress none >bad.out 2>&1
rc=$?
code=$(curl -s -o serve_bad.json -w '%{http_code}' -X POST "$URL" \
    --data-binary "{\"records\":[$(paste -sd, all_bad.jsonl)]}")
check "every record failing alone: batch fails the job and serve the request (400), both with the engine's error" \
    '[ $rc != 0 ] && grep -q "Gather" bad.out && [ "$code" = 400 ] && grep -q "Gather" serve_bad.json' \
    "rc=$rc code=$code $(cat bad.out serve_bad.json)"

check_done
