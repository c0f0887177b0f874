#!/bin/sh
# run.sh -- Infera vs ONNX Runtime, side by side on the benchmark models.
#
#   bench/run.sh [--infera PATH] [--rounds N] [--models "mlp cnn bert"] [--threads "1 2"]
#                [--quick] [--out DIR]
#
# For every model x threads {1,2} x batch {1, 64, large} it runs
# `infera bench --json` and bench/ort_bench.js (onnxruntime-node) one after the
# other, alternating which goes first, for N rounds (default 3).  Raw JSON
# lines go to DIR/raw.jsonl (default bench/results/<date>), and
# bench/summarize.py prints the medians and the Infera/ORT ratio table
# (also written to DIR/table.md).  Missing models are generated with
# bench/gen_bench_models.py.  --quick: 1 round, fewer iterations.
# On a shared machine each measurement first waits (up to 20 s) for the
# CPUs to be idle (BENCH_MAX_BUSY percent, default 10); the busy share seen
# is kept in raw.jsonl as "busy", and the CPUs' cache-line round trip
# (bench/bench_core_rtt) as "rtt_ns".
set -eu

HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(dirname "$HERE")
. "$HERE/lib.sh"
MODELS="mlp cnn bert"
bench_start "infera rounds models threads quick out" "$@"

bench_gen_models gen_bench_models.py

# large batch and iterations per (model, batch): "batch iters warmup"
configs() {
    case $1 in
    mlp) echo "1 3000 300" "64 1000 100" "4096 60 5" ;;
    cnn) echo "1 200 20" "64 8 1" "256 3 1" ;;
    bert) echo "1 40 4" "64 3 1" "128 2 1" ;;
    esac
}

{
    echo "machine: $(bench_cpu_name), $(nproc) CPUs, $(uname -r)"
    echo "date:    $(date -u '+%Y-%m-%d %H:%M UTC')"
    bench_infera_line
} | tee "$OUT/machine.txt" >&2

# The machine may be shared: before each measurement wait (up to 20 s)
# until the CPUs are idle; the busy share seen last is recorded as "busy".
cpu_busy() { # percent of CPU time busy over half a second, from /proc/stat
    read -r _ u1 n1 s1 i1 w1 q1 r1 t1 _ </proc/stat
    sleep 0.5
    read -r _ u2 n2 s2 i2 w2 q2 r2 t2 _ </proc/stat
    tot=$(( (u2 + n2 + s2 + i2 + w2 + q2 + r2 + t2) - (u1 + n1 + s1 + i1 + w1 + q1 + r1 + t1) ))
    idle=$(( (i2 + w2) - (i1 + w1) ))
    [ "$tot" -gt 0 ] && echo $(( 100 * (tot - idle) / tot )) || echo 0
}
wait_quiet() {
    tries=0
    BUSY=$(cpu_busy)
    while [ "$BUSY" -gt "${BENCH_MAX_BUSY:-10}" ] && [ "$tries" -lt 40 ]; do
        tries=$((tries + 1))
        BUSY=$(cpu_busy)
    done
    [ "$BUSY" -gt "${BENCH_MAX_BUSY:-10}" ] && echo "run.sh: machine still ${BUSY}% busy, measuring anyway" >&2
    return 0
}

# The round trip of a cache line between the first two CPUs, ns (-1: no
# tool or one CPU): on a VM it moves as the hypervisor places the vCPUs
# (bench/bench_core_rtt.c), and 2-thread figures move with it.
RTT_TOOL=$(dirname "$INFERA")/bench/bench_core_rtt
core_rtt() {
    RTT=-1
    [ -x "$RTT_TOOL" ] && RTT=$("$RTT_TOOL" 2>/dev/null || echo -1)
    return 0
}

# one measurement of each engine (bench_loop sets round m t b it wu)
run_infera() {
    wait_quiet
    core_rtt
    "$INFERA" bench "$HERE/models/$m.onnx" --threads "$t" --batch "$b" --iters "$it" \
        --warmup "$wu" --json |
        sed "s/^{/{\"engine\":\"infera\",\"name\":\"$m\",\"round\":$round,\"busy\":$BUSY,\"rtt_ns\":$RTT,/" >>"$RAW"
}
run_ort() {
    wait_quiet
    core_rtt
    node "$HERE/ort_bench.js" "$HERE/models/$m.onnx" --threads "$t" --batch "$b" --iters "$it" \
        --warmup "$wu" |
        sed "s/^{/{\"name\":\"$m\",\"round\":$round,\"busy\":$BUSY,\"rtt_ns\":$RTT,/" >>"$RAW"
}
bench_one() {
    if [ "$QUICK" = 1 ]; then
        it=$(( (it + 4) / 5 ))
        wu=$(( (wu + 4) / 5 ))
    fi
    bench_alternate run_infera run_ort
}
bench_loop

/usr/bin/python3 "$HERE/summarize.py" "$RAW" "$OUT/machine.txt" | tee "$OUT/table.md"
