#!/usr/bin/env bash
# test_serve_quota.sh -- per-caller quotas of `infera serve` (issue 25), on a
# real server on loopback with curl: a request-rate quota from --quota lets a
# burst through and answers the rest 429 with Retry-After, then refills; a
# row-rate quota counts rows, and refuses a request larger than its burst
# without Retry-After; with auth on, quotas set in the registry (`infera
# registry quota set`) limit one principal while another, concurrently, is
# untouched, a change in the registry reaches the server within a poll
# period, and /metrics counts allowed/limited per principal; quota commands
# need admin and are audited.
#   test_serve_quota.sh INFERA SOURCE_DIR
set -u
. "$(dirname "$0")/../check.sh"
INFERA=$1
SRC=$2
. "$SRC/scripts/serve_port.sh"
MODEL=$SRC/examples/fraud/fraud_xgb.onnx
T=$(mktemp -d /tmp/infera-quota.XXXXXX)
SERVER_PID=
stop_server() { [ -n "$SERVER_PID" ] && kill "$SERVER_PID" 2>/dev/null && wait "$SERVER_PID" 2>/dev/null; SERVER_PID=; }
cleanup() { stop_server; rm -rf "$T"; }
trap cleanup EXIT
start_server() { # start_server ARGS...: sets URL (the model: --model, or the fraud file)
    case " $* " in *" --model "*) ;; *) set -- --model "fraud=$MODEL" "$@" ;; esac
    "$INFERA" serve --port 0 "$@" 2>"$T/server.log" &
    SERVER_PID=$!
    URL=http://127.0.0.1:$(serve_port "$T/server.log")
}
row() { printf '0.5,1.25,3,0.1,2,7,0.3,1,0,12.5,3.3,0.9'; }
body() { # body ROWS
    local d="" i
    for ((i = 0; i < $1; i++)); do d="$d${d:+,}$(row)"; done
    printf '{"inputs":[{"name":"input","shape":[%d,12],"datatype":"FP32","data":[%s]}]}' "$1" "$d"
}
infer() { # infer ROWS [TOKEN] -> status code; headers in $T/h
    curl -s -o "$T/out" -D "$T/h" -w '%{http_code}' -X POST "$URL/v2/models/fraud/infer" \
        ${2:+-H "Authorization: Bearer $2"} -d "$(body "$1")"
}
# burst N ROWS [TOKEN] -> "allowed limited elapsed_ms": N requests back to back on one keep-alive
# connection (a Python client: milliseconds apart, so the bucket barely refills during a burst)
cat >"$T/burst.py" <<'PYEOF'
import http.client, sys, time
port, n, rows, token = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), sys.argv[4] if len(sys.argv) > 4 else ""
row = "0.5,1.25,3,0.1,2,7,0.3,1,0,12.5,3.3,0.9"
body = '{"inputs":[{"name":"input","shape":[%d,12],"datatype":"FP32","data":[%s]}]}' % (rows, ",".join([row] * rows))
headers = {"Content-Type": "application/json", **({"Authorization": "Bearer " + token} if token else {})}
conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
a = l = 0
t = time.perf_counter()
for _ in range(n):
    conn.request("POST", "/v2/models/fraud/infer", body, headers)
    r = conn.getresponse(); r.read()
    a += r.status == 200; l += r.status == 429
print(a, l, int((time.perf_counter() - t) * 1000))
PYEOF
burst() { /usr/bin/python3 "$T/burst.py" "${URL##*:}" "$1" "$2" "${3:-}"; }
# the most a RATE/s bucket of BURST tokens admits over MS milliseconds
most() { echo $(( $2 + ($1 * $3 + 999) / 1000 )); }
unset INFERA_REGISTRY INFERA_TOKEN
export INFERA_HOME=$T/home

# 1. --quota: 1 request/s with a 4 s burst (4 tokens): slow enough that a curl process started under load
#    (hundreds of ms) still finds the bucket empty
start_server --quota anonymous=1:0:4
read -r a l ms <<<"$(burst 12 1)"
echo "  (12 requests in $ms ms under 1/s with a burst of 4: $a allowed, $l limited)"
check_run "a burst of 12 under a 1/s quota with a 4 s burst: the 4 tokens plus the refill, no more" \
    test "$a" -ge 4 -a "$a" -le "$(most 1 4 "$ms")"
check_run "the rest answered 429" test "$l" = $((12 - a))
c=$(infer 1)
check_run "an over-quota request gets 429" test "$c" = 429
check_run "with Retry-After: 1 (whole seconds until a token)" grep -qi '^Retry-After: 1' "$T/h"
check_run "and a JSON error naming the caller" grep -q '"error":"caller .anonymous. is over its quota' "$T/out"
sleep 1.2
check_run "after a second the bucket refilled a token: 200" test "$(infer 1)" = 200
curl -s "$URL/metrics" >"$T/metrics"
check_run "/metrics counts limited requests per principal" \
    grep -qE '^infera_quota_requests_total\{principal="anonymous",outcome="limited"\} [1-9]' "$T/metrics"
check_run "and the failures as reason quota" grep -q 'reason="quota"' "$T/metrics"
stop_server

# 2. rows: 2 rows/s with a 5 s burst (10 rows)
start_server --quota 'anonymous=0:2:5'
check_run "8 rows within a 10-row burst: 200" test "$(infer 8)" = 200
check_run "8 more rows at once: 429" test "$(infer 8)" = 429
check_run "  with Retry-After (about 3 s until 8 rows at 2/s)" grep -qiE '^Retry-After: [234]' "$T/h"
check_run "11 rows can never fit a 10-row burst: 429" test "$(infer 11)" = 429
check_run "  without Retry-After, saying why" sh -c "! grep -qi '^Retry-After' '$T/h' && grep -q 'exceed' '$T/out'"
stop_server
check_run "a malformed --quota is refused at start" sh -c "! '$INFERA' serve --port 0 --model 'fraud=$MODEL' --quota 'alice=fast' 2>'$T/bad.log'"
check_run "  naming the option" grep -q "quota 'alice=fast'" "$T/bad.log"

# 3. the registry's quotas, with auth: per principal, independent, picked up at run time
"$INFERA" registry register fraud "$MODEL" >/dev/null
ADMIN=$("$INFERA" registry token create root --role admin | tail -1)
export INFERA_TOKEN=$ADMIN
ALICE=$("$INFERA" registry token create alice --role predictor --model fraud | tail -1)
BOB=$("$INFERA" registry token create bob --role predictor --model fraud | tail -1)
check_run "quota set needs admin" sh -c "! INFERA_TOKEN='$BOB' '$INFERA' registry quota set bob --rps 1000 2>/dev/null"
"$INFERA" registry quota set alice --rps 3 >/dev/null
check_run "quota list shows it" sh -c "'$INFERA' registry quota list --json | grep -q '\"principal\": \"alice\", \"requests_per_s\": 3'"
check_run "quota set is audited" sh -c "'$INFERA' registry audit --json | grep -q 'quota-set'"
start_server --model fraud --poll-secs 1
burst 10 1 "$ALICE" >"$T/alice" &
ap=$!
read -r ba bl bms <<<"$(burst 10 1 "$BOB")"
wait "$ap"
read -r aa al ams <<<"$(cat "$T/alice")"
echo "  (concurrently: alice $aa allowed / $al limited in $ams ms, bob $ba allowed / $bl limited)"
check_run "alice (3/s in the registry) is limited" test "$al" -gt 0 -a "$aa" -le "$(most 3 3 "$ams")"
check_run "bob, at the same time, is not" test "$ba" = 10
"$INFERA" registry quota set bob --rps 2 >/dev/null
sleep 2.5
read -r ba bl bms <<<"$(burst 8 1 "$BOB")"
check_run "a quota set while serving reaches the server within a poll period" test "$bl" -gt 0 -a "$ba" -le "$(most 2 2 "$bms")"
"$INFERA" registry quota remove alice >/dev/null
sleep 2.5
read -r aa al ams <<<"$(burst 8 1 "$ALICE")"
check_run "a removed quota no longer limits" test "$aa" = 8
curl -s "$URL/metrics" >"$T/metrics"
check_run "/metrics counts per principal" grep -q 'infera_quota_requests_total{principal="alice",outcome="allowed"}' "$T/metrics"
check_run "  both principals" grep -q 'infera_quota_requests_total{principal="bob",outcome="limited"}' "$T/metrics"
stop_server
check_done
