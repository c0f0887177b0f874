#!/usr/bin/env bash
# test_replicas.sh -- the many-servers recipe of docs/scale-out.md, run for
# real on loopback (label: integration): three `infera serve` replicas on one
# PostgreSQL registry behind nginx configured from deploy/nginx/
# infera-lb.conf.template.  Checks: every replica and the balancer answer; an
# alias move reaches every replica within a second with polling off (NOTIFY);
# killing one replica (SIGKILL) under load loses no request at the balancer.
#   usage: test_replicas.sh INFERA SOURCE_DIR
set -u
. "$(dirname "$0")/../check.sh"
INFERA=$1
SRC=$2
. "$SRC/scripts/serve_port.sh"
. "$SRC/tests/integration/services.sh"
MODEL=$SRC/examples/fraud/fraud_xgb.onnx
PY=/usr/bin/python3
require() { # require WHAT: SKIP (77), or FAIL on CI, when WHAT is missing
    if [ -n "${CI:-}" ] || [ "${INFERA_REQUIRE_SERVICES:-0}" = 1 ]; then echo "FAIL $1 missing"; exit 1; fi
    echo "SKIP $1 missing (scripts/install-deps.sh installs it)"; exit 77
}
command -v nginx >/dev/null || [ -x /usr/sbin/nginx ] || require nginx
NGINX=$(command -v nginx || echo /usr/sbin/nginx)
T=$(mktemp -d /tmp/infera-replicas.XXXXXX)
chmod 755 "$T"
PIDS=()
cleanup() {
    [ -f "$T/nginx.pid" ] && kill "$(cat "$T/nginx.pid")" 2>/dev/null
    for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done
    wait 2>/dev/null
    stop_postgres
    rm -rf "$T"
}
trap cleanup EXIT
start_postgres || { bad "PostgreSQL could not be started"; check_done; }
export INFERA_HOME=$T/home INFERA_REGISTRY=$PG_URL
unset INFERA_TOKEN
for _ in 1 2; do "$INFERA" registry register fraud "$MODEL" >/dev/null || { bad "register"; check_done; }; done
"$INFERA" registry alias fraud@1 production >/dev/null

PORTS=()
for i in 0 1 2; do
    "$INFERA" serve --port 0 --model fraud@production --poll-secs 0 --drain-timeout-s 3 2>"$T/replica$i.log" &
    PIDS+=($!)
    PORTS+=("$(serve_port "$T/replica$i.log")")
done
LB_PORT=$(free_port)
servers=""
for p in "${PORTS[@]}"; do servers="$servers server 127.0.0.1:$p max_fails=1 fail_timeout=2s;"; done
mkdir -m 777 "$T/nginx-tmp"
{
    echo "pid $T/nginx.pid; error_log $T/nginx-error.log; daemon on;"
    [ "$(id -u)" = 0 ] && echo "user root;"
    sed -e "s|@UPSTREAM_SERVERS@|$servers|" -e "s|@LISTEN@|127.0.0.1:$LB_PORT|" \
        -e "s|^http {|http { client_body_temp_path $T/nginx-tmp/body; proxy_temp_path $T/nginx-tmp/proxy;|" \
        "$SRC/deploy/nginx/infera-lb.conf.template"
} >"$T/nginx.conf"
check_run "the recipe's nginx config is valid (nginx -t)" "$NGINX" -t -q -c "$T/nginx.conf" -p "$T"
"$NGINX" -c "$T/nginx.conf" -p "$T" || { echo "FAIL nginx did not start: $(tail -3 "$T/nginx-error.log")"; exit 1; }
LB=http://127.0.0.1:$LB_PORT
BODY='{"inputs":[{"name":"input","shape":[1,12],"datatype":"FP32","data":[0.5,1.25,3,0.1,2,7,0.3,1,0,12.5,3.3,0.9]}]}'
version_at() { curl -s -X POST "http://127.0.0.1:$1/v2/models/fraud/infer" -d "$BODY" | sed -nE 's/.*"model_version":"([0-9]+)".*/\1/p'; }
all_at() { for p in "${PORTS[@]}"; do [ "$(version_at "$p")" = "$1" ] || return 1; done; }
for i in 0 1 2; do check_run "replica $i is ready" curl -sf "http://127.0.0.1:${PORTS[$i]}/v2/health/ready" -o /dev/null; done
check_run "the balancer forwards inference" test "$(version_at "$LB_PORT")" = 1
check_run "every replica serves version 1" all_at 1

# an alias move reaches every replica within a second (polling off: only NOTIFY can do it)
"$INFERA" registry alias fraud@2 production >/dev/null
t0=$(date +%s%N) ok=0
while [ $(( $(date +%s%N) - t0 )) -lt 1000000000 ]; do all_at 2 && { ok=1; break; }; sleep 0.05; done
echo "  (all replicas on version 2 after $(( ($(date +%s%N) - t0) / 1000000 )) ms)"
check_run "an alias move reaches every replica within 1 s" test "$ok" = 1

# load through the balancer while one replica is killed: no request lost.  The load sends at least n requests and
# keeps going until the test says the replica is dead (the file KILLED), so the kill lands mid-load however fast
# the machine is; it writes STARTED after its first thousand answers, when the test kills the replica.
cat >"$T/load.py" <<'PYEOF'
import http.client, itertools, json, os, sys, threading, time
port, n, workers = int(sys.argv[1]), int(sys.argv[2]), 8
body = sys.argv[3].encode()
started, killed = sys.argv[4], sys.argv[5]
codes, lock, done = {}, threading.Lock(), [0]
def worker(k):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    for i in itertools.count(k, workers):
        if i >= n and os.path.exists(killed):
            break
        try:
            conn.request("POST", "/v2/models/fraud/infer", body, {"Content-Type": "application/json"})
            r = conn.getresponse(); data = r.read(); code = r.status
            if code == 200 and "outputs" not in json.loads(data): code = -2
        except Exception as e:
            code = type(e).__name__; conn.close(); conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        with lock:
            codes[code] = codes.get(code, 0) + 1
            done[0] += 1
            if done[0] == 1000:
                open(started, "w").close()
ts = [threading.Thread(target=worker, args=(k,)) for k in range(workers)]
[t.start() for t in ts]; [t.join() for t in ts]
print(json.dumps({"total": sum(codes.values()), "codes": {str(k): v for k, v in codes.items()}}))
PYEOF
"$PY" "$T/load.py" "$LB_PORT" 6000 "$BODY" "$T/load.started" "$T/load.killed" >"$T/load.out" &
LOAD=$!
for _ in $(seq 1 600); do [ -e "$T/load.started" ] || ! kill -0 "$LOAD" 2>/dev/null && break; sleep 0.05; done
check_run "the load is still running when the replica is killed (1000 answers in)" kill -0 "$LOAD"
kill -KILL "${PIDS[1]}"
touch "$T/load.killed"
wait "$LOAD"
echo "  (status counts under load with replica 1 killed: $(cat "$T/load.out"))"
check_run "at least 6000 requests through the balancer, one replica killed mid-way: all 200" \
    "$PY" -c 'import json, sys; r = json.load(open(sys.argv[1])); sys.exit(not (r["total"] >= 6000 and r["codes"] == {"200": r["total"]}))' \
    "$T/load.out"
check_run "replica 0 and 2 answer after the kill" test "$(version_at "${PORTS[0]}")$(version_at "${PORTS[2]}")" = 22
check_done
