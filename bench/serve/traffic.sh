#!/usr/bin/env bash
# bench/serve/traffic.sh -- the cost of shadow traffic and of quota checks in
# `infera serve` (issue 25 targets), one run on this machine, loopback:
#   1. throughput of single-row fraud requests at 64 connections (wrk) with no
#      shadow and with --shadow copying 20 % of requests to a second version
#      (target: shadowing costs <= 25 % of the primary's throughput);
#   2. p99 of the primary at a fixed open-loop rate (loadgen.c, Poisson, half
#      of the no-shadow maximum) with and without the shadow (target: <= +50 us);
#   3. the same throughput with a quota every request passes (--quota
#      anonymous=<huge>) against none (target: <= 1 us per request).
# ROUNDS (default 3) alternate the order; medians are printed, with the
# server's CPU time per request (user + system, /proc) beside each req/s.
#   bench/serve/traffic.sh [BUILD_DIR] [SECONDS_PER_RUN]
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
. "$ROOT/scripts/serve_port.sh"
BUILD=${1:-$ROOT/build}
SECS=${2:-8}
ROUNDS=${ROUNDS:-3}
INFERA=$BUILD/infera
command -v wrk >/dev/null || apt-get install -y wrk >/dev/null
TMP=$(mktemp -d)
PID=
trap '[ -n "$PID" ] && kill $PID 2>/dev/null; rm -rf "$TMP"' EXIT
cc -O2 -o "$TMP/loadgen" "$HERE/loadgen.c" -lpthread -lm
export INFERA_HOME=$TMP/home
unset INFERA_REGISTRY INFERA_TOKEN
for _ in 1 2; do "$INFERA" registry register fraud "$ROOT/examples/fraud/fraud_xgb.onnx" >/dev/null; done
"$INFERA" registry alias fraud@1 production >/dev/null
"$INFERA" registry alias fraud@2 candidate >/dev/null
printf '%s' '{"inputs":[{"name":"input","shape":[1,12],"datatype":"FP32","data":[0.5,1.25,3,0.1,2,7,0.3,1,0,12.5,3.3,0.9]}]}' >"$TMP/fraud.json"
cat >"$TMP/post.lua" <<LUA
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
local f = io.open("$TMP/fraud.json", "rb")
wrk.body = f:read("*a")
f:close()
LUA
rps() { sed -nE 's/^Requests\/sec: +([0-9.]+).*/\1/p'; }
median() { sort -n | awk '{a[NR]=$1} END{print a[int((NR+1)/2)]}'; }
start() {
    "$INFERA" serve --port 0 --poll-secs 0 --model fraud=fraud@production "$@" 2>"$TMP/server.log" &
    PID=$!
    PORT=$(serve_port "$TMP/server.log")
    curl -sf -X POST "http://127.0.0.1:$PORT/v2/models/fraud/infer" -d @"$TMP/fraud.json" >/dev/null
}
stop() { kill "$PID"; wait "$PID" 2>/dev/null || true; PID=; }
ticks() { awk '{print $14 + $15}' "/proc/$PID/stat"; }
HZ=$(getconf CLK_TCK)
measure() { # measure NAME ARGS...: "NAME rps server_cpu_us_per_request"
    local name=$1 t0 out n
    shift
    start "$@"
    t0=$(ticks)
    out=$(wrk -t2 -c64 -d"${SECS}s" -s "$TMP/post.lua" "http://127.0.0.1:$PORT/v2/models/fraud/infer")
    n=$(awk '/requests in/{print $1}' <<<"$out")
    echo "$name $(rps <<<"$out") $(awk -v d=$(($(ticks) - t0)) -v n="$n" -v hz="$HZ" 'BEGIN{printf "%.2f", d * 1e6 / hz / n}')"
    stop
}
p99() { # p99 NAME RATE ARGS...
    local name=$1 rate=$2
    shift 2
    start "$@"
    echo "$name $("$TMP/loadgen" "$PORT" /v2/models/fraud/infer "$TMP/fraud.json" "$rate" "$SECS" 64 | sed -nE 's/.*"p99_us":([0-9]+).*/\1/p')"
    stop
}
: >"$TMP/res"
for r in $(seq "$ROUNDS"); do
    if [ $((r % 2)) = 1 ]; then order="plain shadow quota"; else order="quota shadow plain"; fi
    for what in $order; do
        case $what in
        plain) measure plain >>"$TMP/res" ;;
        shadow) measure shadow --shadow fraud=fraud@candidate:0.2 >>"$TMP/res" ;;
        quota) measure quota --quota anonymous=1000000000 >>"$TMP/res" ;;
        esac
    done
done
get() { awk -v n="$1" -v f="${2:-2}" '$1==n{print $f}' "$TMP/res" | median; }
PLAIN=$(get plain) SHADOW=$(get shadow) QUOTA=$(get quota)
CPU_PLAIN=$(get plain 3) CPU_SHADOW=$(get shadow 3) CPU_QUOTA=$(get quota 3)
HALF=$(awk -v a="$PLAIN" 'BEGIN{printf "%.0f", a/2}')
: >"$TMP/p99"
for r in $(seq "$ROUNDS"); do
    p99 plain "$HALF" >>"$TMP/p99"
    p99 shadow "$HALF" --shadow fraud=fraud@candidate:0.2 >>"$TMP/p99"
done
P99_PLAIN=$(awk '$1=="plain"{print $2}' "$TMP/p99" | median)
P99_SHADOW=$(awk '$1=="shadow"{print $2}' "$TMP/p99" | median)
echo "infera serve traffic bench, $(date -u +%Y-%m-%dT%H:%MZ), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg), ${SECS}s x $ROUNDS rounds"
printf '%-52s %10s %10s %10s\n' measure plain with ratio/delta
printf '%-52s %10.0f %10.0f %9.2fx\n' "req/s, 64 conns, shadow 20% (target >= 0.75x)" "$PLAIN" "$SHADOW" "$(awk -v a="$SHADOW" -v b="$PLAIN" 'BEGIN{print a/b}')"
printf '%-52s %10s %10s %+9d\n' "p99 us at $HALF/s, shadow 20% (target <= +50 us)" "$P99_PLAIN" "$P99_SHADOW" $((P99_SHADOW - P99_PLAIN))
printf '%-52s %10.0f %10.0f %+9.2f\n' "req/s, 64 conns, a quota check each (us/request)" "$PLAIN" "$QUOTA" "$(awk -v a="$QUOTA" -v b="$PLAIN" 'BEGIN{print 1e6/a - 1e6/b}')"
printf '%-52s %10s %10s %9.2fx\n' "server CPU us/request, shadow 20% (plain/shadow)" "$CPU_PLAIN" "$CPU_SHADOW" "$(awk -v a="$CPU_SHADOW" -v b="$CPU_PLAIN" 'BEGIN{print b/a}')"
printf '%-52s %10s %10s %+9.2f\n' "server CPU us/request, a quota check each (delta)" "$CPU_PLAIN" "$CPU_QUOTA" "$(awk -v a="$CPU_QUOTA" -v b="$CPU_PLAIN" 'BEGIN{print a-b}')"
