#!/usr/bin/env bash
# bench/serve/grpc_floor.sh -- where the instructions of a gRPC unary call go,
# by callgrind (load-independent): the server's user-space instructions per
# request for
#   http    infera serve, HTTP JSON (wrk, 8 connections)
#   grpc    infera serve, gRPC ModelInfer typed (grpc_load, 8 in flight, 1 connection)
#   floor   bench/serve/minimal/grpc_floor.c: gRPC C core answering the same
#           calls with a fixed message and no work (the same registered
#           method, payload-read flag, one queue and thread, batches per call)
# each run under valgrind for SECONDS (default 8), minus an idle run of the
# same server (start-up and idle polling), divided by the requests served.
# Then splits infera's gRPC figure by callgrind_annotate's inclusive costs
# into gRPC core's own (its API functions called by Infera, the completion
# queue wait, gRPC's threads) and Infera's (everything else: decode, the
# inference path, encode, the call bookkeeping), and prints the top
# functions of each.  Output files stay in OUT_DIR (default a temp folder).
#
#   bench/serve/grpc_floor.sh [BUILD_DIR] [SECONDS]
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
. "$ROOT/scripts/serve_port.sh"
. "$HERE/bench_lib.sh"
BUILD=${1:-$ROOT/build}
SECS=${2:-8}
INFERA=$BUILD/infera LOAD=$BUILD/tests/grpc_load FLOOR=$BUILD/tests/grpc_floor
for x in "$INFERA" "$LOAD" "$FLOOR"; do [ -x "$x" ] || { echo "build $x first"; exit 1; }; done
OUT_DIR=${OUT_DIR:-$(mktemp -d /tmp/infera-grpc-floor-XXXXXX)}
write_fraud_post_lua "$OUT_DIR/post.lua"
MODEL=$ROOT/examples/fraud/fraud_xgb.onnx

# cg NAME SERVER KIND -> "instructions requests"; SERVER infera|floor, KIND idle|http|grpc
cg() {
    local out=$OUT_DIR/$1.cg log=$OUT_DIR/$1.log gp hp p n
    gp=$(free_port)
    if [ "$2" = infera ]; then
        valgrind --tool=callgrind --callgrind-out-file="$out" --dump-instr=no "$INFERA" serve --port 0 --grpc-port "$gp" \
            --http-threads 1 --model fraud="$MODEL" 2>"$log" &
        p=$!; hp=$(serve_port "$log" 600)
    else
        valgrind --tool=callgrind --callgrind-out-file="$out" --dump-instr=no "$FLOOR" "$gp" 1 2>"$log" &
        p=$!; until grep -q listening "$log"; do sleep 0.2; done
    fi
    sleep 1
    case $3 in
        idle) sleep "$SECS"; n=0;;
        http) n=$(wrk -t1 -c8 -d"${SECS}s" -s "$OUT_DIR/post.lua" "http://127.0.0.1:$hp/v2/models/fraud/infer" | awk '/requests in/{print $1}');;
        grpc) n=$("$LOAD" 127.0.0.1:"$gp" fraud "$SECS" 8 unary | sed -E 's/.*total=([0-9]+).*/\1/');;
    esac
    kill "$p"; wait "$p" 2>/dev/null || true
    echo "$(awk '/^totals:/{print $2}' "$out") $n"
}
echo "== $(date -u +%Y-%m-%dT%H:%MZ), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), load average $(cut -d' ' -f1-3 /proc/loadavg)"
read -r ib _ <<<"$(cg infera-idle infera idle)"
read -r fb _ <<<"$(cg floor-idle floor idle)"
declare -A PER
for run in http:infera:http grpc:infera:grpc floor:floor:grpc; do
    IFS=: read -r name srv kind <<<"$run"
    read -r ir n <<<"$(cg "$name" "$srv" "$kind")"
    base=$([ "$srv" = infera ] && echo "$ib" || echo "$fb")
    PER[$name]=$(awk -v ir="$ir" -v b="$base" -v n="$n" 'BEGIN{printf "%.0f", (ir-b)/n}')
    printf '%-6s %8s instructions per request (%d requests; idle run subtracted)\n' "$name" "${PER[$name]}" "$n"
done

# Infera's gRPC run split: gRPC core = inclusive cost of the gRPC functions
# Infera calls (grpc_*, gpr_*) + gRPC's own threads; the rest is Infera's.
ann=$OUT_DIR/grpc.inclusive.txt
callgrind_annotate --inclusive=yes --threshold=100 "$OUT_DIR/grpc.cg" > "$ann" 2>/dev/null
callgrind_annotate --inclusive=no --threshold=99 "$OUT_DIR/grpc.cg" > "$OUT_DIR/grpc.self.txt" 2>/dev/null
echo "== top functions by inclusive cost (infera gRPC run; $ann)"
grep -E '^ *[0-9,]+ ' "$ann" | head -45
echo "== the floor's top functions by self cost ($OUT_DIR/floor.self.txt)"
callgrind_annotate --inclusive=no --threshold=95 "$OUT_DIR/floor.cg" > "$OUT_DIR/floor.self.txt" 2>/dev/null
grep -E '^ *[0-9,]+ ' "$OUT_DIR/floor.self.txt" | head -25
awk -v h="${PER[http]}" -v g="${PER[grpc]}" -v f="${PER[floor]}" 'BEGIN{
  printf "floor / HTTP whole request = %.2f; infera gRPC - floor = %d instructions (Infera-side cost above an empty gRPC server)\n", f/h, g-f }'
echo "(files in $OUT_DIR)"
