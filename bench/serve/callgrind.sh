#!/usr/bin/env bash
# bench/serve/callgrind.sh -- user-space instructions per request of `infera
# serve`, the load-independent cost (RESULTS.md "instructions per request").
#
#   bench/serve/callgrind.sh INFERA_BINARY MODEL_FILE BODY_FILE [SECONDS] [EXTRA SERVE ARGS...]
#
# Runs the server under valgrind callgrind with one HTTP thread and
# --max-batch 1, warms it up for 2 s of `wrk -c1` POSTs, zeroes the counters,
# runs SECONDS (default 6) more, dumps, and prints total instructions, the
# requests served in the window (from /metrics) and instructions per request,
# then the top functions (inclusive is in the .out file: callgrind_annotate
# --inclusive=yes). The output file stays in $OUT_DIR (default /tmp).
set -euo pipefail
INFERA=$1 MODEL=$2 BODY=$3
. "$(cd "$(dirname "$0")/../.." && pwd)/scripts/serve_port.sh"
SECS=${4:-6}
shift $(($# < 4 ? $# : 4))
OUT_DIR=${OUT_DIR:-/tmp}
TAG=${TAG:-cg}
LOG=$OUT_DIR/$TAG.log
CG=$OUT_DIR/$TAG.callgrind.out
rm -f "$CG"*
valgrind --tool=callgrind --callgrind-out-file="$CG" --dump-instr=no "$INFERA" serve --port 0 --model "m=$MODEL" \
    --http-threads 1 --max-batch 1 "$@" 2>"$LOG" &
VPID=$!
trap 'kill $VPID 2>/dev/null || true' EXIT
PORT=$(serve_port "$LOG" 300) || true
[ -n "$PORT" ] || { cat "$LOG"; exit 1; }
LUA=$OUT_DIR/$TAG.lua
cat >"$LUA" <<EOF
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
local f = io.open("$BODY", "rb")
wrk.body = f:read("*a")
f:close()
EOF
URL=http://127.0.0.1:$PORT/v2/models/m/infer
served() { curl -s "http://127.0.0.1:$PORT/metrics" | awk '/^nv_inference_request_success\{/{n += $2} END{print n + 0}'; }
wrk -t1 -c1 -d2s -s "$LUA" "$URL" >/dev/null
callgrind_control -z "$VPID" >/dev/null
N0=$(served)
wrk -t1 -c1 -d"${SECS}s" -s "$LUA" "$URL" >/dev/null
N1=$(served)
callgrind_control -d "$VPID" >/dev/null
kill $VPID
wait $VPID 2>/dev/null || true
trap - EXIT
# the dump made by -d (the zeroed window); the final one at exit has little
DUMP=$(ls -1 "$CG".* 2>/dev/null | head -1)
[ -n "$DUMP" ] || DUMP=$CG
N=$((N1 - N0 - 1)) # the /metrics request between is not counted by the metric; one served() is inside the window
TOTAL=$(callgrind_annotate "$DUMP" 2>/dev/null | sed -nE 's/^ *([0-9,]+) +\(100.0%\) +PROGRAM TOTALS.*/\1/p' | tr -d ,)
[ -n "$TOTAL" ] || TOTAL=$(callgrind_annotate "$DUMP" | awk '/PROGRAM TOTALS/{gsub(",","",$1); print $1}')
echo "dump $DUMP: $TOTAL instructions, $N requests, $(awk -v t="$TOTAL" -v n="$N" 'BEGIN{printf "%.0f", t / n}') per request"
