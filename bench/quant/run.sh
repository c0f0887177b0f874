#!/bin/sh
# run.sh -- INT8 benchmark: `infera quantize` (static, QDQ, per-channel, minmax)
# on the tabular MLP, the CNN and the encoder of bench/, then side by side in
# one interleaved run:
#   - throughput at batch 64: Infera FP32, Infera INT8, ONNX Runtime INT8 (same
#     quantized file), ONNX Runtime FP32;
#   - encoder batch-1 latency: Infera FP32 vs INT8;
#   - quality on held-out inputs: top-1 agreement of INT8 with FP32 (Infera);
#   - the same batch-64 throughputs from CPU time (bench/quant/cpu_time.py):
#     on a machine shared with other jobs the wall clock measures them too.
#
#   bench/quant/run.sh [--rounds N] [--threads "1 2"] [--infera PATH] [--out DIR] [--quick]
#                      [--cpu-rounds N]   (0: no CPU-time table; default 3, 1 thread)
#                      [--reduce-range auto|on|off]
#
# --reduce-range (default auto): quantize the weights to 7 bits, the file one
# makes for x86 CPUs without VNNI (ONNX Runtime's advice for them: its
# vpmaddubsw kernels saturate on 8-bit weights, and Infera's pair-safe AVX2
# kernels need them -- docs/compression.md).  auto = on when Infera's INT8
# GEMM here has no vpdpbusd (`infera info --cpu`: "int8 gemm avx2 ...", also
# under INFERA_CPU=avx2 INFERA_QGEMM=avx2), else off.  The quality columns
# measure the file the table times, so the 7 bits' cost shows there.
#
# Models: bench/models/*.onnx (made by bench/gen_bench_models.py when missing);
# data: bench/quant/gen_data.py.  Writes OUT/raw.jsonl, OUT/quality.jsonl,
# OUT/machine.txt and prints the table (bench/quant/summarize.py).  Rounds
# alternate the engines' order; the table takes medians.
set -eu
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
INFERA=$ROOT/build/infera
ROUNDS=3
THREADS="1"
QUICK=0
CPU_ROUNDS=3
REDUCE_RANGE=auto
OUT=$HERE/results/$(date +%Y%m%d-%H%M%S)
while [ $# -gt 0 ]; do
    case $1 in
    --rounds) ROUNDS=$2; shift 2 ;;
    --threads) THREADS=$2; shift 2 ;;
    --infera) INFERA=$2; shift 2 ;;
    --out) OUT=$2; shift 2 ;;
    --quick) QUICK=1; ROUNDS=1; CPU_ROUNDS=1; shift ;;
    --cpu-rounds) CPU_ROUNDS=$2; shift 2 ;;
    --reduce-range) REDUCE_RANGE=$2; shift 2 ;;
    *) sed -n '2,/^set/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 2 ;;
    esac
done
[ -x "$INFERA" ] || { echo "run.sh: no infera at $INFERA" >&2; exit 2; }
case $REDUCE_RANGE in
auto) if "$INFERA" info --cpu 2>/dev/null | grep -q '^int8 gemm *avx2 '; then REDUCE_RANGE=on; else REDUCE_RANGE=off; fi ;;
on | off) ;;
*) echo "run.sh: --reduce-range wants auto, on or off, not '$REDUCE_RANGE'" >&2; exit 2 ;;
esac
QFLAGS=--per-channel
[ "$REDUCE_RANGE" = on ] && QFLAGS="$QFLAGS --reduce-range"
mkdir -p "$OUT" "$OUT/data"
RAW=$OUT/raw.jsonl
: >"$RAW"
: >"$OUT/quality.jsonl"
MODELS=$ROOT/bench/models
[ -f "$MODELS/bert.onnx" ] || /usr/bin/python3 "$ROOT/bench/gen_bench_models.py"
/usr/bin/python3 "$HERE/gen_data.py" "$OUT/data"

{   grep -m1 'model name' /proc/cpuinfo
    echo "flags: $(grep -m1 '^flags' /proc/cpuinfo | tr ' ' '\n' | grep -E '^(avx2|fma|avx512f|avx512bw|avx512vl|avx512_vnni|avx_vnni|avx512_bf16)$' | tr '\n' ' ')"
    lscpu | grep -E '^(L1d|L2|L3) cache|^CPU\(s\)' || true
    "$INFERA" info --cpu 2>/dev/null || true
    echo "Infera INT8 GEMM: AVX-512 VNNI when avx512_vnni is listed above, else AVX-VNNI when avx_vnni is, else AVX2 (ops/qgemm.h)"
    echo "quantized files: static QDQ, minmax, $QFLAGS (--reduce-range $REDUCE_RANGE)"
    echo "onnxruntime-node: $(node -e "console.log(require('$ROOT/tests/models/ort/node_modules/onnxruntime-node/package.json').version)" 2>/dev/null)"
} >"$OUT/machine.txt"

# quantize: the MLP from CSV records (default mapping), the others from tensor files
"$INFERA" quantize "$MODELS/mlp.onnx" -o "$OUT/mlp_int8.onnx" --calibration "csv:$OUT/data/mlp_calib.csv" $QFLAGS
"$INFERA" quantize "$MODELS/cnn.onnx" -o "$OUT/cnn_int8.onnx" --calibration "$OUT/data/cnn_calib.npy" $QFLAGS
"$INFERA" quantize "$MODELS/bert.onnx" -o "$OUT/bert_int8.onnx" --calibration "$OUT/data/bert_calib.npy" $QFLAGS

# quality: top-1 agreement on held-out inputs (Infera FP32 vs Infera INT8, and ORT INT8)
for m in mlp cnn bert; do
    mkdir -p "$OUT/q/$m/fp32" "$OUT/q/$m/int8" "$OUT/q/$m/ort8"
    "$INFERA" run "$MODELS/$m.onnx" --input "$OUT/data/${m}_heldout.npy" --output-dir "$OUT/q/$m/fp32" --threads 2
    "$INFERA" run "$OUT/${m}_int8.onnx" --input "$OUT/data/${m}_heldout.npy" --output-dir "$OUT/q/$m/int8" --threads 2
    out=$(ls "$OUT/q/$m/fp32" | head -1)
    printf '{"name":"%s","engine":"infera",' "$m" >>"$OUT/quality.jsonl"
    /usr/bin/python3 "$HERE/agreement.py" "$OUT/q/$m/fp32/$out" "$OUT/q/$m/int8/$out" | sed 's/^{//' >>"$OUT/quality.jsonl"
done

wait_quiet() { :; }
bench_infera() { # model-file tag batch iters
    "$INFERA" bench "$1" --threads "$t" --batch "$3" --iters "$4" --warmup 2 --json |
        sed "s/^{/{\"engine\":\"infera\",\"tag\":\"$2\",\"round\":$round,/" >>"$RAW"
}
bench_ort() {
    node "$ROOT/bench/ort_bench.js" "$1" --threads "$t" --batch "$3" --iters "$4" --warmup 2 2>/dev/null |
        sed "s/^{/{\"engine\":\"ort\",\"tag\":\"$2\",\"round\":$round,/" >>"$RAW"
}
iters() { # model -> iterations at batch 64
    case $1 in mlp) echo 200 ;; cnn) echo 8 ;; *) echo 4 ;; esac
}
round=1
while [ "$round" -le "$ROUNDS" ]; do
    for t in $THREADS; do
        for m in mlp cnn bert; do
            it=$(iters $m)
            [ "$QUICK" = 1 ] && it=$(( (it + 1) / 2 ))
            if [ $((round % 2)) = 1 ]; then
                bench_infera "$MODELS/$m.onnx" "$m fp32" 64 "$it"; bench_infera "$OUT/${m}_int8.onnx" "$m int8" 64 "$it"
                bench_ort "$OUT/${m}_int8.onnx" "$m int8" 64 "$it"; bench_ort "$MODELS/$m.onnx" "$m fp32" 64 "$it"
            else
                bench_ort "$MODELS/$m.onnx" "$m fp32" 64 "$it"; bench_ort "$OUT/${m}_int8.onnx" "$m int8" 64 "$it"
                bench_infera "$OUT/${m}_int8.onnx" "$m int8" 64 "$it"; bench_infera "$MODELS/$m.onnx" "$m fp32" 64 "$it"
            fi
        done
        bench_infera "$MODELS/bert.onnx" "bert fp32 b1" 1 20
        bench_infera "$OUT/bert_int8.onnx" "bert int8 b1" 1 20
        bench_ort "$OUT/bert_int8.onnx" "bert int8 b1" 1 20
    done
    round=$((round + 1))
done
: >"$OUT/cpu.jsonl"
if [ "$CPU_ROUNDS" -gt 0 ]; then # iterations LO:HI per model: HI - LO batches take about a CPU second or more
    /usr/bin/python3 "$HERE/cpu_time.py" --infera "$INFERA" --ort-bench "$ROOT/bench/ort_bench.js" \
        --rounds "$CPU_ROUNDS" --threads 1 --out "$OUT/cpu.jsonl" \
        "mlp fp32:$MODELS/mlp.onnx:20:12000" "mlp int8:$OUT/mlp_int8.onnx:20:12000" \
        "cnn fp32:$MODELS/cnn.onnx:2:20" "cnn int8:$OUT/cnn_int8.onnx:2:20" \
        "bert fp32:$MODELS/bert.onnx:1:3" "bert int8:$OUT/bert_int8.onnx:1:3"
fi
/usr/bin/python3 "$HERE/summarize.py" "$RAW" "$OUT/quality.jsonl" "$OUT/machine.txt" "$OUT/cpu.jsonl" | tee "$OUT/table.md"
