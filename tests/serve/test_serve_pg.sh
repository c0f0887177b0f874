#!/usr/bin/env bash
# test_serve_pg.sh -- `infera serve` with a PostgreSQL registry (label:
# integration): a throwaway cluster on loopback (tests/integration/
# services.sh), alias moves heard through LISTEN/NOTIFY (polling switched
# off with --poll-secs 0, so only the notification can trigger the swap),
# and --all-aliases following a new alias the same way.
#   usage: test_serve_pg.sh INFERA SOURCE_DIR
set -u
. "$(dirname "$0")/../check.sh"
INFERA=$1
SRC=$2
. "$SRC/scripts/serve_port.sh"
MODEL=$SRC/examples/fraud/fraud_xgb.onnx
T=$(mktemp -d /tmp/infera-serve-pg.XXXXXX)
. "$SRC/tests/integration/services.sh"
SERVER_PID=
cleanup() {
    [ -n "$SERVER_PID" ] && kill "$SERVER_PID" 2>/dev/null && wait "$SERVER_PID" 2>/dev/null
    stop_postgres
    rm -rf "$T"
}
trap cleanup EXIT
if ! start_postgres; then
    bad "PostgreSQL could not be started"
    check_done
fi
export INFERA_HOME=$T/home INFERA_REGISTRY=$PG_URL
unset INFERA_TOKEN
for i in 1 2 3; do "$INFERA" registry register fraud "$MODEL" >/dev/null || { bad "register"; check_done; }; done
"$INFERA" registry alias fraud@1 production >/dev/null

"$INFERA" serve --port 0 --model fraud@production --all-aliases --poll-secs 0 2>"$T/server.log" &
SERVER_PID=$!
PORT=$(serve_port "$T/server.log") || true
URL=http://127.0.0.1:$PORT
check_run "server on a PostgreSQL registry is live" curl -sf "$URL/v2/health/ready" -o /dev/null
BODY='{"inputs":[{"name":"input","shape":[1,12],"datatype":"FP32","data":[0.5,1.25,3,0.1,2,7,0.3,1,0,12.5,3.3,0.9]}]}'
version_of() { curl -s -X POST "$URL/v2/models/$1/infer" -d "$BODY" | sed -nE 's/.*"model_version":"([0-9]+)".*/\1/p'; }
wait_version() { # wait_version MODEL VERSION: up to 5 s
    for _ in $(seq 50); do
        [ "$(version_of "$1")" = "$2" ] && return 0
        sleep 0.1
    done
    return 1
}
check_run "fraud serves version 1" test "$(version_of fraud)" = 1
check_run "--all-aliases serves fraud@production too" test "$(version_of fraud@production)" = 1
t0=$(date +%s%N)
"$INFERA" registry alias fraud@2 production >/dev/null
check_run "alias moved to 2 with polling off: NOTIFY triggers the swap" wait_version fraud 2
t1=$(date +%s%N)
echo "  (swap seen $(( (t1 - t0) / 1000000 )) ms after the alias command started)"
check_run "the --all-aliases slot follows the move too" wait_version fraud@production 2
"$INFERA" registry alias fraud@3 canary >/dev/null
check_run "a new alias is served under NAME@ALIAS after the NOTIFY" wait_version fraud@canary 3
"$INFERA" registry unalias fraud canary >/dev/null
gone() {
    for _ in $(seq 50); do
        [ "$(curl -s -o /dev/null -w '%{http_code}' -X POST "$URL/v2/models/fraud@canary/infer" -d "$BODY")" = 404 ] && return 0
        sleep 0.1
    done
    return 1
}
check_run "a removed alias is no longer served (404)" gone
check_run "the server log names the moves" grep -q "moved from version 1 to 2" "$T/server.log"
stop_child "$SERVER_PID"
rc=$?
SERVER_PID=
check_run "server exits 0 on SIGTERM ($rc)" test "$rc" = 0
check_done
