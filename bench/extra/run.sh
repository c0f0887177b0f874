#!/bin/sh
# run.sh -- Infera vs ONNX Runtime on the "other models" of bench/extra/ (models
# the fast paths were not tuned on), so that generalisation stays measured.
#
#   bench/extra/run.sh [--infera PATH] [--rounds N]
#                      [--models "mobile cnn_gray enc17 mlp_odd resnet18 resnet50 mobilenetv2 effnetb0"]
#                      [--threads "1 2"] [--out DIR]
#
# Missing models are generated with gen_extra_models.py; the torchvision ones
# (resnet18 resnet50 mobilenetv2 effnetb0, 224x224) with gen_vision_models.py
# run by $TORCH_PYTHON (default python3; it needs torch and torchvision), and
# left out with a message when that fails.  Outputs are first checked once
# against ONNX Runtime (check.py, batch 2).  Then for N rounds (default 3)
# every model x threads x batch (1 for all; 64 for mobile, cnn_gray and
# mlp_odd, 8 for the 224x224 ones) runs `infera bench --json` and
# bench/ort_bench.js one after the other, alternating which goes first.  Raw
# JSON lines go to DIR/raw.jsonl (default bench/extra/results/<date>);
# summarize.py prints the medians and the Infera/ORT ratio table (also
# DIR/table.md).  About 6-8 minutes on 2 cores.
set -eu

HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(dirname "$(dirname "$HERE")")
. "$ROOT/bench/lib.sh"
MODELS="mobile cnn_gray enc17 mlp_odd resnet18 resnet50 mobilenetv2 effnetb0"
VISION="resnet18 resnet50 mobilenetv2 effnetb0"
bench_start "infera rounds models threads out" "$@"

# The torchvision models: generated when missing, else left out of MODELS.
keep=
for m in $MODELS; do
    case " $VISION " in
    *" $m "*)
        [ -f "$HERE/models/$m.onnx" ] || "${TORCH_PYTHON:-python3}" "$HERE/gen_vision_models.py" >&2 || true
        if [ ! -f "$HERE/models/$m.onnx" ]; then
            echo "run.sh: leaving out $m (gen_vision_models.py needs torch + torchvision: set TORCH_PYTHON)" >&2
            continue
        fi ;;
    esac
    keep="$keep $m"
done
MODELS=${keep# }

bench_gen_models gen_extra_models.py
bench_gen_models gen_conv1d_models.py  # conv1d_text, conv1d_m5 (not in the default list)
{
    echo "machine: $(bench_cpu_name), $(nproc) CPUs, $(uname -r)"
    echo "date:    $(date -u '+%Y-%m-%d %H:%M UTC'), load average $(cut -d' ' -f1-3 /proc/loadavg)"
    bench_infera_line
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
    conv1d_text) echo "1 300 30" "64 10 1" ;;
    conv1d_m5) echo "1 1000 100" "64 50 5" ;;
    resnet18) echo "1 40 4" "8 8 1" ;;
    resnet50) echo "1 20 2" "8 4 1" ;;
    mobilenetv2) echo "1 60 6" "8 12 1" ;;
    effnetb0) echo "1 40 4" "8 8 1" ;;
    *) echo "run.sh: no configuration for model $1" >&2; exit 2 ;;
    esac
}

# one measurement of each engine (bench_loop sets round m t b it wu)
run_infera() {
    "$INFERA" bench "$HERE/models/$m.onnx" --threads "$t" --batch "$b" --iters "$it" --warmup "$wu" --json |
        sed "s/^{/{\"engine\":\"infera\",\"name\":\"$m\",\"round\":$round,/" >>"$RAW"
}
run_ort() {
    node "$ROOT/bench/ort_bench.js" "$HERE/models/$m.onnx" --threads "$t" --batch "$b" \
        --iters "$it" --warmup "$wu" | sed "s/^{/{\"name\":\"$m\",\"round\":$round,/" >>"$RAW"
}
bench_one() { bench_alternate run_infera run_ort; }
bench_loop

/usr/bin/python3 "$HERE/summarize.py" "$RAW" "$OUT/machine.txt" "$OUT/check.txt" | tee "$OUT/table.md"
