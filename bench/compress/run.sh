#!/usr/bin/env bash
# Model compression benchmark (issue 20; docs/compression.md): quality and speed side by side, one run.
#
#   bench/compress/run.sh [INFERA] [WORK_DIR]      (defaults: build/infera, build/bench-compress)
#
# 1. make_data.py: fraud train/calibration/test data from examples/fraud's generator and the tabular MLP
#    (12 -> 256 -> 256 -> 128 -> 2, scikit-learn); cached in WORK_DIR.
# 2. infera prune: structured 50 % with least-squares refit on calib.csv, the same without calibration
#    (magnitude only), unstructured 90 %.  infera distill: the XGBoost fraud trees -> mlp:64,32.
#    infera quantize: static per-channel INT8 (QDQ, minmax) of the MLP calibrated on calib.csv.
# 3. infera evaluate --json of every model on test.csv (100,000 unseen rows) against its source.
# 4. Speed, interleaved (A B C ... A B C ...) ROUNDS times: `infera bench --batch 64` and, where
#    onnxruntime-node is installed, bench/ort_bench.js on the same files, 1 thread; then Infera's CPU time
#    per batch (bench/quant/cpu_time_env.py, CPU_ROUNDS interleaved rounds, default 5; 0 skips it), which
#    the other jobs of a shared machine do not skew.
# 5. summarize.py -> WORK_DIR/RESULTS.md (copied to bench/compress/RESULTS.md by hand after review).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
infera=$(realpath "${1:-$root/build/infera}")
work=$(realpath -m "${2:-$root/build/bench-compress}")
rounds=${ROUNDS:-5}
iters=${ITERS:-3000}
mkdir -p "$work"
cd "$work"
[ -f fraud_mlp.onnx ] && [ -f test.csv ] || /usr/bin/python3 "$here/make_data.py" "$work"
teacher=$root/examples/fraud/fraud_xgb.onnx

"$infera" prune fraud_mlp.onnx -o mlp_s50.onnx --sparsity 0.5 --structured --calibration csv:calib.csv | tee prune.txt
"$infera" prune fraud_mlp.onnx -o mlp_s50_magnitude.onnx --sparsity 0.5 --structured >/dev/null
"$infera" prune fraud_mlp.onnx -o mlp_u90.onnx --sparsity 0.9 >/dev/null
"$infera" distill --teacher "$teacher" --data csv:train.csv --label is_fraud --student mlp:64,32 --seed 1 \
    -o student.onnx --quiet | tee distill.txt
"$infera" quantize fraud_mlp.onnx -o mlp_int8.onnx --calibration csv:calib.csv --per-channel | tee quantize.txt

for m in mlp_s50 mlp_s50_magnitude mlp_u90 mlp_int8; do
    "$infera" evaluate $m.onnx --data csv:test.csv --label is_fraud --baseline fraud_mlp.onnx --json >eval_$m.json
done
"$infera" evaluate student.onnx --data csv:test.csv --label is_fraud --baseline "$teacher" --json >eval_student.json

have_ort=0
node -e "require('$root/bench/ort_common').loadOrt('probe')" >/dev/null 2>&1 && have_ort=1
: >speed.jsonl
for r in $(seq "$rounds"); do
    for m in fraud_mlp mlp_s50 mlp_s50_magnitude mlp_u90 mlp_int8 student; do
        "$infera" bench $m.onnx --batch 64 --iters "$iters" --warmup 200 --json | sed "s/^{/{\"engine\":\"infera\",\"name\":\"$m\",/" >>speed.jsonl
        [ $have_ort = 1 ] && node "$root/bench/ort_bench.js" $m.onnx --batch 64 --iters "$iters" --warmup 200 |
            sed "s/^{/{\"engine_name\":\"ort\",\"name\":\"$m\",/" >>speed.jsonl
    done
    "$infera" bench "$teacher" --batch 64 --iters "$iters" --warmup 200 --json | sed 's/^{/{"engine":"infera","name":"fraud_xgb",/' >>speed.jsonl
    [ $have_ort = 1 ] && node "$root/bench/ort_bench.js" "$teacher" --batch 64 --iters "$iters" --warmup 200 |
        sed 's/^{/{"engine_name":"ort","name":"fraud_xgb",/' >>speed.jsonl
done
: >cpu.jsonl
if [ "${CPU_ROUNDS:-5}" -gt 0 ]; then
    runs=()
    for m in fraud_mlp mlp_s50 mlp_int8 student; do runs+=("$m@@$infera@$m.onnx@200@4000"); done
    runs+=("fraud_xgb@@$infera@$teacher@200@4000")
    /usr/bin/python3 "$root/bench/quant/cpu_time_env.py" --rounds "${CPU_ROUNDS:-5}" --out cpu.jsonl "${runs[@]}"
fi
/usr/bin/python3 "$here/summarize.py" "$work" >RESULTS.md
cat RESULTS.md
