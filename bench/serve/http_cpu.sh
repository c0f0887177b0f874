#!/usr/bin/env bash
# bench/serve/http_cpu.sh -- `infera serve` next to nginx configured for speed
# (reuseport, multi_accept on, access_log off, one worker per core; a fixed
# 150-byte JSON body from memory), and optionally a second infera build, with
# the measure that survives a shared machine: the servers' CPU time per
# request (user + system of every server process over the run, /proc),
# beside req/s.  Loopback, wrk, 64 connections, single-row fraud requests
# (the body of run.sh); ROUNDS rounds run the servers in turn, the order
# reversed every other round; medians with ranges.  Not part of CI.
#
#   bench/serve/http_cpu.sh [BUILD_DIR] [SECONDS] [ROUNDS] [OTHER_BUILD_DIR]
#
# Prints, per server: req/s (median, range) and server us per request
# (median, range), then infera's share of nginx by req/s and by CPU per
# request (nginx us/req / infera us/req: the throughput share a CPU-bound
# server would reach on idle cores).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
. "$ROOT/scripts/serve_port.sh"
BUILD=${1:-$ROOT/build}
SECS=${2:-5}
ROUNDS=${3:-3}
OTHER=${4:-}
command -v wrk >/dev/null || apt-get install -y wrk >/dev/null
command -v nginx >/dev/null || apt-get install -y nginx-light >/dev/null
TMP=$(mktemp -d /tmp/infera-http-cpu-XXXXXX)
chmod 755 "$TMP"
PIDS=()
cleanup() {
    for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
    [ -f "$TMP/nginx.pid" ] && kill "$(cat "$TMP/nginx.pid")" 2>/dev/null || true
    rm -rf "$TMP"
}
trap cleanup EXIT
. "$HERE/bench_lib.sh"
write_fraud_post_lua "$TMP/post.lua"

NGINX_PORT=$(free_port)
. "$HERE/nginx_fast.sh"
start_nginx_fast "$TMP" "$NGINX_PORT" 2>/dev/null
sleep 0.5
NGINX_PIDS=$(pgrep -P "$(cat "$TMP/nginx.pid")" | tr '\n' ' ')" $(cat "$TMP/nginx.pid")"

declare -A URL SPIDS
URL[nginx]=http://127.0.0.1:$NGINX_PORT/
SPIDS[nginx]=$NGINX_PIDS
start_infera() { # start_infera NAME INFERA_BINARY
    "$2" serve --port 0 --model fraud="$ROOT/examples/fraud/fraud_xgb.onnx" 2>"$TMP/$1.log" &
    PIDS+=($!)
    SPIDS[$1]=$!
    URL[$1]=http://127.0.0.1:$(serve_port "$TMP/$1.log")/v2/models/fraud/infer
}
start_infera infera "$BUILD/infera"
SERVERS=(infera nginx)
[ -n "$OTHER" ] && start_infera other "$OTHER/infera" && SERVERS=(infera other nginx)
for s in "${SERVERS[@]}"; do wrk -t1 -c8 -d1s -s "$TMP/post.lua" "${URL[$s]}" >/dev/null; done # warm-up

ticks() { local t=0; for p in $1; do t=$((t + $(awk '{print $14 + $15}' "/proc/$p/stat"))); done; echo $t; }
HZ=$(getconf CLK_TCK)
declare -A RPS CPU
for r in $(seq "$ROUNDS"); do
    order=("${SERVERS[@]}")
    [ $((r % 2)) = 0 ] && order=($(printf '%s\n' "${SERVERS[@]}" | tac))
    for s in "${order[@]}"; do
        t0=$(ticks "${SPIDS[$s]}")
        out=$(wrk -t1 -c64 -d"${SECS}s" -s "$TMP/post.lua" "${URL[$s]}")
        t1=$(ticks "${SPIDS[$s]}")
        rps=$(awk '/Requests\/sec/{print $2}' <<<"$out"); n=$(awk '/requests in/{print $1}' <<<"$out")
        RPS[$s]+="$rps "
        CPU[$s]+="$(awk -v d=$((t1 - t0)) -v n="$n" -v hz="$HZ" 'BEGIN{printf "%.2f", d * 1e6 / hz / n}') "
    done
done
med() { tr ' ' '\n' <<<"$1" | grep -v '^$' | sort -g | awk '{v[NR]=$1} END{print v[int((NR+1)/2)]}'; }
rng() { tr ' ' '\n' <<<"$1" | grep -v '^$' | sort -g | awk 'NR==1{lo=$1} {hi=$1} END{printf "%s-%s", lo, hi}'; }
echo "infera serve vs nginx (fast config), $(date -u +%Y-%m-%dT%H:%MZ), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) cores, wrk 64 connections, ${SECS}s x $ROUNDS rounds, load average $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-10s %10s %20s %14s %14s\n' server req/s range "server us/req" range
for s in "${SERVERS[@]}"; do
    printf '%-10s %10s %20s %14s %14s\n' "$s" "$(med "${RPS[$s]}")" "$(rng "${RPS[$s]}")" "$(med "${CPU[$s]}")" "$(rng "${CPU[$s]}")"
done
for s in "${SERVERS[@]}"; do
    [ "$s" = nginx ] && continue
    awk -v s="$s" -v r="$(med "${RPS[$s]}")" -v rn="$(med "${RPS[nginx]}")" -v c="$(med "${CPU[$s]}")" -v cn="$(med "${CPU[nginx]}")" \
        'BEGIN{printf "%s / nginx: %.2fx by req/s, %.2fx by CPU per request (target >= 0.6)\n", s, r/rn, cn/c}'
done
