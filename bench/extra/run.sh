#!/bin/sh
# run.sh -- Infera vs ONNX Runtime on the "other models" of bench/extra/ (models
# the fast paths were not tuned on), so that generalisation stays measured.
#
#   bench/extra/run.sh [--infera PATH] [--rounds N] [--models "mobile cnn_gray enc17 mlp_odd"]
#                      [--threads "1 2"] [--out DIR]
#
# Missing models are generated with gen_extra_models.py.  Outputs are first
# checked once against ONNX Runtime (check.py, batch 2).  Then for N rounds
# (default 3) every model x threads x batch (1 for all; 64 for mobile,
# cnn_gray and mlp_odd) runs `infera bench --json` and bench/ort_bench.js one
# after the other, alternating which goes first.  Raw JSON lines go to
# DIR/raw.jsonl (default bench/extra/results/<date>); summarize.py prints
# the medians and the Infera/ORT ratio table (also DIR/table.md).
# About 3-4 minutes on 2 cores.
set -eu

HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(dirname "$(dirname "$HERE")")
INFERA=$ROOT/build/infera
ROUNDS=3
MODELS="mobile cnn_gray enc17 mlp_odd"
THREADS="1 2"
OUT=$HERE/results/$(date +%Y%m%d-%H%M%S)
while [ $# -gt 0 ]; do
    case $1 in
    --infera) INFERA=$2; shift 2 ;;
    --rounds) ROUNDS=$2; shift 2 ;;
    --models) MODELS=$2; shift 2 ;;
    --threads) THREADS=$2; shift 2 ;;
    --out) OUT=$2; shift 2 ;;
    *) echo "run.sh: unknown argument $1" >&2; exit 2 ;;
    esac
done
[ -x "$INFERA" ] || { echo "run.sh: no infera binary at $INFERA (build first or pass --infera)" >&2; exit 2; }
mkdir -p "$OUT"
RAW=$OUT/raw.jsonl
: >"$RAW"

for m in $MODELS; do
    [ -f "$HERE/models/$m.onnx" ] || /usr/bin/python3 "$HERE/gen_extra_models.py" >&2
done
{
    echo "machine: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) CPUs, $(uname -r)"
    echo "date:    $(date -u '+%Y-%m-%d %H:%M UTC'), load average $(cut -d' ' -f1-3 /proc/loadavg)"
    echo "infera:  $INFERA ($(cd "$ROOT" && git rev-parse --short HEAD 2>/dev/null)$(cd "$ROOT" && git diff --quiet 2>/dev/null || echo '+dirty'))"
} | tee "$OUT/machine.txt" >&2
# shellcheck disable=SC2086
/usr/bin/python3 "$HERE/check.py" "$INFERA" "$HERE/models" $MODELS | tee "$OUT/check.txt" >&2

# "batch iters warmup" per model
configs() {
    case $1 in
    mobile) echo "1 100 10" "64 5 1" ;;
    cnn_gray) echo "1 300 30" "64 20 2" ;;
    enc17) echo "1 30 3" ;;
    mlp_odd) echo "1 2000 200" "64 1000 100" ;;
    *) echo "run.sh: no configuration for model $1" >&2; exit 2 ;;
    esac
}

round=1
while [ "$round" -le "$ROUNDS" ]; do
    for m in $MODELS; do
        for t in $THREADS; do
            configs "$m" | tr ' ' '\n' | paste - - - | while read -r b it wu; do
                run_infera() {
                    "$INFERA" bench "$HERE/models/$m.onnx" --threads "$t" --batch "$b" --iters "$it" \
                        --warmup "$wu" --json |
                        sed "s/^{/{\"engine\":\"infera\",\"name\":\"$m\",\"round\":$round,/" >>"$RAW"
                }
                run_ort() {
                    node "$ROOT/bench/ort_bench.js" "$HERE/models/$m.onnx" --threads "$t" --batch "$b" \
                        --iters "$it" --warmup "$wu" | sed "s/^{/{\"name\":\"$m\",\"round\":$round,/" >>"$RAW"
                }
                echo "round $round: $m threads $t batch $b" >&2
                if [ $((round % 2)) = 1 ]; then run_infera; run_ort; else run_ort; run_infera; fi
            done
        done
    done
    round=$((round + 1))
done

/usr/bin/python3 "$HERE/summarize.py" "$RAW" "$OUT/machine.txt" "$OUT/check.txt" | tee "$OUT/table.md"
