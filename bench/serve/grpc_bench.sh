#!/usr/bin/env bash
# bench/serve/grpc_bench.sh -- KServe V2 over gRPC next to HTTP on the same
# `infera serve` process and the same fraud model, in one run (issue 25
# targets: gRPC unary ModelInfer at 64 concurrent streams >= the HTTP
# endpoint; ModelStreamInfer >= 1.5x unary).  Loopback only, not part of CI.
#
#   bench/serve/grpc_bench.sh [BUILD_DIR] [SECONDS_PER_RUN] [ROUNDS]
#
# Clients: Debian's wrk (64 connections, the single-row JSON body of
# bench/serve/run.sh) and bench/serve/grpc_load.c on gRPC C core (no gRPC load
# tool is packaged in Debian; ghz is Go, not in the archive): 64 ModelInfer
# calls in flight over one HTTP/2 connection (typed fp32_contents, and
# raw_input_contents), the same over 8 connections, and 64 ModelStreamInfer
# streams with one request in flight each.  ROUNDS (default 3) rounds run the
# clients in turn against one server; medians are reported with the range.
# Each row also gives the server's CPU per request (user + system from
# /proc/PID/stat over the run) and the client's CPU.  With CALLGRIND=1 a
# second pass counts the server's instructions per request for each protocol
# under valgrind (8 concurrent requests, --http-threads 1; noise-free, the
# server's idle and start-up instructions subtracted via a run without load).
# The last row is the floor: bench/serve/minimal/grpc_floor.c (gRPC C core
# answering the same unary calls at once with a fixed message, no work; its
# own process) driven the same way, its CPU per call from its /proc entry --
# what gRPC core alone costs per call next to HTTP's whole request.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
. "$ROOT/scripts/serve_port.sh"
BUILD=${1:-$ROOT/build}
SECS=${2:-5}
ROUNDS=${3:-3}
INFERA=$BUILD/infera
LOAD=$BUILD/tests/grpc_load
FLOOR=$BUILD/tests/grpc_floor
[ -x "$INFERA" ] && [ -x "$LOAD" ] || { echo "build infera and grpc_load first (cmake --build $BUILD --target infera grpc_load)"; exit 1; }
command -v wrk >/dev/null || apt-get install -y wrk >/dev/null

TMP=$(mktemp -d /tmp/infera-grpc-bench-XXXXXX)
PID= FPID=
cleanup() { [ -n "$PID" ] && kill "$PID" 2>/dev/null; [ -n "$FPID" ] && kill "$FPID" 2>/dev/null; rm -rf "$TMP"; }
trap cleanup EXIT
. "$HERE/bench_lib.sh"
write_fraud_post_lua "$TMP/post.lua"

GPORT=$(free_port)
"$INFERA" serve --port 0 --grpc-port "$GPORT" --model fraud="$ROOT/examples/fraud/fraud_xgb.onnx" 2>"$TMP/server.log" &
PID=$!
PORT=$(serve_port "$TMP/server.log")
URL=http://127.0.0.1:$PORT/v2/models/fraud/infer
for _ in $(seq 50); do "$LOAD" 127.0.0.1:"$GPORT" fraud 0.2 1 unary >/dev/null 2>&1 && break; sleep 0.1; done
FPORT=$(free_port)
"$FLOOR" "$FPORT" 1 2>"$TMP/floor.log" &
FPID=$!
ticks() { awk '{print $14 + $15}' "/proc/${1:-$PID}/stat"; }
HZ=$(getconf CLK_TCK)

# run KIND -> "rps cpu_us_per_request client_cpu_pct"
run() {
    local t0 t1 out rps n cli pid=$PID
    [ "$1" = floor ] && pid=$FPID
    t0=$(ticks "$pid")
    case $1 in
        floor) out=$("$LOAD" 127.0.0.1:"$FPORT" fraud "$SECS" 64 unary)
               rps=$(sed -E 's/.*rps=([0-9.]+).*/\1/' <<<"$out"); n=$(sed -E 's/.*total=([0-9]+).*/\1/' <<<"$out")
               cli=$(sed -E 's/.*client_cpu_pct=([0-9]+).*/\1/' <<<"$out");;
        http) out=$(wrk -t1 -c64 -d"${SECS}s" -s "$TMP/post.lua" "$URL")
              rps=$(awk '/Requests\/sec/{print $2}' <<<"$out"); n=$(awk '/requests in/{print $1}' <<<"$out"); cli=-;;
        *) read -r mode enc ch <<<"$(tr _ ' ' <<<"$1")"
           out=$("$LOAD" 127.0.0.1:"$GPORT" fraud "$SECS" 64 "$mode" "$enc" "$ch")
           rps=$(sed -E 's/.*rps=([0-9.]+).*/\1/' <<<"$out"); n=$(sed -E 's/.*total=([0-9]+).*/\1/' <<<"$out")
           cli=$(sed -E 's/.*client_cpu_pct=([0-9]+).*/\1/' <<<"$out")
           grep -q 'errors=0' <<<"$out" || { echo "errors in $1: $out" >&2; };;
    esac
    t1=$(ticks "$pid")
    echo "$rps $(awk -v d=$((t1 - t0)) -v n="$n" -v hz="$HZ" 'BEGIN{printf "%.1f", n ? d * 1e6 / hz / n : 0}') $cli"
}

KINDS=(http unary_typed_1 unary_raw_1 unary_typed_8 stream_typed_1 floor)
declare -A RPS CPU CLI
for r in $(seq "$ROUNDS"); do
    for k in "${KINDS[@]}"; do
        read -r a b c <<<"$(run "$k")"
        RPS[$k]+="$a "; CPU[$k]+="$b "; CLI[$k]+="$c "
    done
done
med() { tr ' ' '\n' <<<"$1" | grep -v '^$' | sort -g | awk '{v[NR]=$1} END{print v[int((NR+1)/2)]}'; }
rng() { tr ' ' '\n' <<<"$1" | grep -v '^$' | sort -g | awk 'NR==1{lo=$1} {hi=$1} END{printf "%s-%s", lo, hi}'; }

OUT=$HERE/grpc-results-$(date -u +%Y%m%dT%H%MZ).txt
{
echo "infera serve gRPC vs HTTP, $(date -u +%Y-%m-%dT%H:%MZ), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) cores, ${SECS}s x $ROUNDS rounds, load average $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-44s %10s %16s %14s %12s\n' "client (64 in flight, fraud, 1 row)" "req/s" "range" "server us/req" "client CPU%"
label() { case $1 in
    http) echo "HTTP JSON, wrk 64 connections";;
    unary_typed_1) echo "gRPC ModelInfer typed, 1 connection";;
    unary_raw_1) echo "gRPC ModelInfer raw, 1 connection";;
    unary_typed_8) echo "gRPC ModelInfer typed, 8 connections";;
    stream_typed_1) echo "gRPC ModelStreamInfer, 64 streams";;
    floor) echo "floor: empty gRPC C-core server, 1 conn.";;
esac; }
for k in "${KINDS[@]}"; do
    printf '%-44s %10s %16s %14s %12s\n' "$(label "$k")" "$(med "${RPS[$k]}")" "$(rng "${RPS[$k]}")" "$(med "${CPU[$k]}")" "$(med "${CLI[$k]}")"
done
H=$(med "${RPS[http]}"); U=$(med "${RPS[unary_typed_1]}"); S=$(med "${RPS[stream_typed_1]}")
awk -v h="$H" -v u="$U" -v s="$S" 'BEGIN{printf "gRPC unary / HTTP = %.2fx (target >= 1)   stream / unary = %.2fx (target >= 1.5)\n", u/h, s/u}'
HC=$(med "${CPU[http]}"); UC=$(med "${CPU[unary_typed_1]}"); FC=$(med "${CPU[floor]}")
awk -v h="$HC" -v u="$UC" -v f="$FC" 'BEGIN{printf "by server CPU per request: gRPC unary / HTTP = %.2fx; the empty gRPC server alone costs %.2fx an HTTP request\n", h/u, f/h}'
} | tee "$OUT"
kill "$PID"; wait "$PID" 2>/dev/null || true; PID=

if [ "${CALLGRIND:-0}" = 1 ] && command -v valgrind >/dev/null; then
    cg() { # cg KIND -> instructions of the server, requests
        local log=$TMP/cg.log out=$TMP/cg.out gp n
        gp=$(free_port)
        valgrind --tool=callgrind --callgrind-out-file="$out" --dump-instr=no "$INFERA" serve --port 0 --grpc-port "$gp" \
            --http-threads 1 --model fraud="$ROOT/examples/fraud/fraud_xgb.onnx" 2>"$log" &
        local p=$!
        local hp; hp=$(serve_port "$log" 600); sleep 1
        case $1 in
            base) sleep 2; n=0;;
            http) n=$(wrk -t1 -c8 -d8s -s "$TMP/post.lua" "http://127.0.0.1:$hp/v2/models/fraud/infer" | awk '/requests in/{print $1}');;
            *) n=$("$LOAD" 127.0.0.1:"$gp" fraud 8 8 "$1" | sed -E 's/.*total=([0-9]+).*/\1/');;
        esac
        kill "$p"; wait "$p" 2>/dev/null || true
        echo "$(awk '/^totals:/{print $2}' "$out") $n"
    }
    read -r base _ <<<"$(cg base)"
    for k in http unary stream; do
        read -r ir n <<<"$(cg "$k")"
        awk -v k="$k" -v ir="$ir" -v b="$base" -v n="$n" 'BEGIN{printf "callgrind: %-7s %8.0f instructions per request (%d requests)\n", k, (ir-b)/n, n}'
    done | tee -a "$OUT"
fi
