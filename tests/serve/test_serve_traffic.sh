#!/usr/bin/env bash
# test_serve_traffic.sh -- canary routes and shadow copies in `infera serve`
# (issue 25), on real servers on loopback with a registry: weights observed
# within binomial bounds over 20,000 requests; sticky routing by a header (one
# user, one version); weights changed at run time through the repository
# API, audited; a route name that is also a served model refused; a shadow's
# agreement and mean absolute difference on /metrics equal what the test
# computes from the primary's own answers; the primary's answers are the
# same with and without a shadow; a slow shadow (138 ms a call) does not slow
# the primary, and a failing one (wrong input shape) fails nothing.
#   test_serve_traffic.sh INFERA SOURCE_DIR
set -u
. "$(dirname "$0")/../check.sh"
INFERA=$1
SRC=$2
PY=/usr/bin/python3
. "$SRC/scripts/serve_port.sh"
MODEL=$SRC/examples/fraud/fraud_xgb.onnx
T=$(mktemp -d /tmp/infera-traffic.XXXXXX)
SERVER_PID=
stop_server() { [ -n "$SERVER_PID" ] && kill "$SERVER_PID" 2>/dev/null && wait "$SERVER_PID" 2>/dev/null; SERVER_PID=; }
cleanup() { stop_server; rm -rf "$T"; }
trap cleanup EXIT
start_server() {
    "$INFERA" serve --port 0 --poll-secs 0 "$@" 2>"$T/server.log" &
    SERVER_PID=$!
    PORT=$(serve_port "$T/server.log") || { echo "FAIL server did not start: $(tail -3 "$T/server.log")"; exit 1; }
    URL=http://127.0.0.1:$PORT
}
"$PY" -c 'import onnx, numpy' 2>/dev/null || { echo "SKIP python3-onnx/numpy missing"; exit 77; }
"$PY" "$SRC/tests/serve/gen_traffic_models.py" "$T" || { bad "generating the test models"; check_done; }
export INFERA_HOME=$T/home
unset INFERA_REGISTRY INFERA_TOKEN
"$INFERA" registry register fraud "$MODEL" >/dev/null
"$INFERA" registry register fraud "$MODEL" >/dev/null
"$INFERA" registry register fraud "$T/const.onnx" >/dev/null
"$INFERA" registry alias fraud@1 production >/dev/null
"$INFERA" registry alias fraud@2 canary >/dev/null
"$INFERA" registry alias fraud@3 candidate >/dev/null

# client.py PORT N [HEADER_PREFIX]: N requests (random rows, seeded), one JSON line per answer
cat >"$T/client.py" <<'PYEOF'
import http.client, json, random, sys, time
port, n = int(sys.argv[1]), int(sys.argv[2])
user_header = sys.argv[3] if len(sys.argv) > 3 else None
rng = random.Random(7)
conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
for i in range(n):
    row = [round(rng.uniform(0, 50), 3) for _ in range(12)]
    body = json.dumps({"inputs": [{"name": "input", "shape": [1, 12], "datatype": "FP32", "data": row}]})
    headers = {"Content-Type": "application/json"}
    if user_header:
        headers[user_header] = "user%d" % (i % 50)
    t = time.perf_counter()
    conn.request("POST", "/v2/models/fraud/infer", body, headers)
    r = conn.getresponse()
    data = json.loads(r.read())
    ms = (time.perf_counter() - t) * 1000
    out = {o["name"]: o["data"] for o in data.get("outputs", [])}
    print(json.dumps({"status": r.status, "version": data.get("model_version"), "name": data.get("model_name"),
                      "user": headers.get(user_header), "ms": ms, **out}))
PYEOF

# 1. weights
start_server --route fraud=fraud@production:80,fraud@canary:20
"$PY" "$T/client.py" "$PORT" 20000 >"$T/split.jsonl"
read -r n1 n2 bad <<<"$("$PY" -c "
import json
rs = [json.loads(l) for l in open('$T/split.jsonl')]
print(sum(r['version'] == '1' for r in rs), sum(r['version'] == '2' for r in rs), sum(r['status'] != 200 for r in rs))")"
echo "  (20000 requests at 80:20: version 1 $n1, version 2 $n2, failed $bad)"
# binomial(20000, 0.8): mean 16000, sd 56.6; 4.5 sd either side
check_run "80:20 route: every request answered" test "$bad" = 0 -a $((n1 + n2)) = 20000
check_run "  the 80% target within binomial bounds (16000 +- 255)" test "$n1" -ge 15745 -a "$n1" -le 16255
curl -s "$URL/metrics" >"$T/metrics"
check_run "  /metrics counts requests per route target" \
    grep -q "infera_route_requests_total{route=\"fraud\",target=\"fraud@canary\"} $n2" "$T/metrics"
check_run "  each target has its own per-version metrics" grep -q 'model="fraud@canary"' "$T/metrics"
code=$(curl -s -o "$T/out" -w '%{http_code}' -X POST "$URL/v2/repository/models/fraud/load" \
    -d '{"parameters":{"route":"fraud@production:0,fraud@canary:100"}}')
check_run "weights change at run time through the repository API (200)" test "$code" = 200
"$PY" "$T/client.py" "$PORT" 200 >"$T/after.jsonl"
check_run "  then every request goes to the canary" test "$(grep -c '"version": "2"' "$T/after.jsonl")" = 200
check_run "  the change is audited in the registry" sh -c "'$INFERA' registry audit --json | grep -q 'serve-route'"
code=$(curl -s -o "$T/out" -w '%{http_code}' -X POST "$URL/v2/repository/models/fraud/load" \
    -d '{"parameters":{"route":"fraud@production:abc"}}')
check_run "  a malformed route is a 400" test "$code" = 400
stop_server

# 2. sticky by header
start_server --route fraud=fraud@production:50,fraud@canary:50 --route-sticky header:X-User
"$PY" "$T/client.py" "$PORT" 1000 X-User >"$T/sticky.jsonl"
read -r users mixed <<<"$("$PY" -c "
import json, collections
seen = collections.defaultdict(set)
for l in open('$T/sticky.jsonl'):
    r = json.loads(l); seen[r['user']].add(r['version'])
print(len(seen), sum(len(v) > 1 for v in seen.values()))")"
check_run "sticky by header: each of $users users always gets one version" test "$mixed" = 0 -a "$users" = 50
check_run "  and both versions have users" test "$(grep -c '"version": "1"' "$T/sticky.jsonl")" -gt 0 -a \
    "$(grep -c '"version": "2"' "$T/sticky.jsonl")" -gt 0
stop_server
check_run "a route named like a served model is refused at start" \
    sh -c "! '$INFERA' serve --port 0 --model fraud --route fraud=fraud@canary:1 2>'$T/conflict.log'"

# 3. a shadow that answers differently: agreement and mean absolute difference from the primary's answers
start_server --model fraud=fraud@production --shadow fraud=fraud@candidate:1.0
"$PY" "$T/client.py" "$PORT" 300 >"$T/shadow.jsonl"
for _ in $(seq 50); do
    curl -s "$URL/metrics" >"$T/metrics"
    grep -q 'infera_shadow_requests_total{model="fraud",shadow="fraud@candidate",outcome="compared"} 300' "$T/metrics" && break
    sleep 0.1
done
check_run "shadow: all 300 copies compared" \
    grep -q 'infera_shadow_requests_total{model="fraud",shadow="fraud@candidate",outcome="compared"} 300' "$T/metrics"
read -r want_agree want_mad <<<"$("$PY" -c "
import json
rs = [json.loads(l) for l in open('$T/shadow.jsonl')]
agree = sum(r['label'][0] == 1 for r in rs) / len(rs)
mad = sum(abs(r['probabilities'][0] - 0.3) + abs(r['probabilities'][1] - 0.7) for r in rs) / (2 * len(rs))
print(agree, mad)")"
got_agree=$(sed -nE 's/^infera_shadow_agreement_ratio\{model="fraud",shadow="fraud@candidate"\} (.*)/\1/p' "$T/metrics")
got_mad=$(sed -nE 's/^infera_shadow_mean_abs_diff\{model="fraud",shadow="fraud@candidate"\} (.*)/\1/p' "$T/metrics")
echo "  (agreement: metrics $got_agree, from the answers $want_agree; MAD: metrics $got_mad, from the answers $want_mad)"
close() { "$PY" -c "import sys; sys.exit(0 if abs(float('$1') - float('$2')) <= 1e-4 else 1)" 2>/dev/null; }
check_run "  agreement rate equals the primary's label-1 share" close "$got_agree" "$want_agree"
check_run "  mean absolute difference equals the one from the answers" close "$got_mad" "$want_mad"
check_run "  the primary answered everything itself (version 1)" test "$(grep -c '"version": "1"' "$T/shadow.jsonl")" = 300
stop_server
start_server --model fraud=fraud@production
"$PY" "$T/client.py" "$PORT" 300 >"$T/plain.jsonl"
stop_server
check_run "the primary's answers are identical with and without the shadow" \
    "$PY" -c "
import json, sys
a = [json.loads(l) for l in open('$T/shadow.jsonl')]; b = [json.loads(l) for l in open('$T/plain.jsonl')]
sys.exit(0 if [(r['label'], r['probabilities']) for r in a] == [(r['label'], r['probabilities']) for r in b] else 1)"

# 4. a slow shadow and a failing shadow
start_server --model fraud=fraud@production --shadow "fraud=$T/slow.onnx:1.0"
"$PY" "$T/client.py" "$PORT" 30 >"$T/slow.jsonl"
slowest=$("$PY" -c "import json; print(int(max(json.loads(l)['ms'] for l in open('$T/slow.jsonl'))))")
echo "  (slowest primary answer with a 138 ms shadow on every request: $slowest ms)"
check_run "a slow shadow (138 ms a call, on every request) never makes the primary wait for it (< 100 ms)" \
    test "$slowest" -lt 100
check_run "  and every primary request succeeded" test "$(grep -c '"status": 200' "$T/slow.jsonl")" = 30
stop_server
start_server --model fraud=fraud@production --shadow "fraud=$SRC/tests/models/mlp.onnx:1.0"
"$PY" "$T/client.py" "$PORT" 50 >"$T/failing.jsonl"
sleep 0.5
curl -s "$URL/metrics" >"$T/metrics"
check_run "a failing shadow (wrong input shape): every primary request succeeded" \
    test "$(grep -c '"status": 200' "$T/failing.jsonl")" = 50
check_run "  its failures are counted" \
    grep -qE 'infera_shadow_requests_total\{model="fraud",shadow=".*mlp.onnx",outcome="failed"\} [1-9]' "$T/metrics"
stop_server
check_done
