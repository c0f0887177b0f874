#!/usr/bin/env bash
# sweep.sh -- `infera quantize` over every model of a directory written by gen_sweep_models.py, in every
# configuration; runs each quantized file in Infera and ONNX Runtime on the same inputs and prints one line per
# output (compare.js: Infera vs ORT in quantization steps, ORT INT8 vs FP32).  A survey tool, not a test:
#
#   tests/quant/sweep.sh INFERA DIR [MODEL...]
set -u
INFERA=$1 DIR=$2
shift 2
HERE=$(cd "$(dirname "$0")" && pwd)
models=${*:-$(cd "$DIR" && ls *.onnx | sed 's/\.onnx$//' | grep -v '\.q\.')}
W=$DIR/work
mkdir -p "$W"
for m in $models; do
    ins=() ort_ins=()
    for f in "$DIR/$m".*.npy; do
        n=${f#"$DIR/$m".}; n=${n%.npy}
        ins+=(--input "$n=$f"); ort_ins+=("$n=$f")
    done
    cal=${ins[1]#*=} # the first input's rows
    mkdir -p "$W/$m/fp32"
    node "$HERE/ort_run.js" "$DIR/$m.onnx" "$W/$m/fp32" "${ort_ins[@]}" 2>"$W/$m/fp32.err" ||
        { echo "$m: ORT FP32 FAILED: $(head -c 300 "$W/$m/fp32.err")"; continue; }
    calarg=(--calibration "$cal")
    [ ${#ort_ins[@]} -gt 1 ] && calarg=() # several inputs: a .npy calibrates one input only
    for cfg in "qdq" "qdq-pc:--per-channel --method percentile" "qdq-ent:--method entropy" "qop:--format qoperator" \
               "qop-pc:--format qoperator --per-channel" "dyn:--mode dynamic" "dyn-qop:--mode dynamic --format qoperator"; do
        tag=${cfg%%:*}; args=${cfg#*:}; [ "$args" = "$cfg" ] && args=
        case $tag in dyn*) ca=() ;; *) ca=("${calarg[@]}"); [ ${#ca[@]} -eq 0 ] && { echo "$m $tag: SKIP (several inputs)"; continue; } ;; esac
        q=$W/$m/$tag.onnx o=$W/$m/$tag
        mkdir -p "$o/inf" "$o/ort"
        if ! "$INFERA" quantize "$DIR/$m.onnx" -o "$q" "${ca[@]}" $args >"$o/q.txt" 2>&1; then
            echo "$m $tag: QUANTIZE FAILED: $(tr '\n' ' ' <"$o/q.txt" | head -c 300)"; continue
        fi
        if ! "$INFERA" run "$q" "${ins[@]}" --output-dir "$o/inf" >/dev/null 2>"$o/inf.err"; then
            echo "$m $tag: INFERA RUN FAILED: $(head -c 300 "$o/inf.err")"; continue
        fi
        if ! node "$HERE/ort_run.js" "$q" "$o/ort" "${ort_ins[@]}" 2>"$o/ort.err"; then
            echo "$m $tag: ORT RUN FAILED: $(head -c 300 "$o/ort.err")"; continue
        fi
        for f in "$o/ort"/*.npy; do
            b=$(basename "$f")
            r=$(node "$HERE/compare.js" "$o/inf/$b" "$f" "$W/$m/fp32/$b" 1 2>&1); rc=$?
            echo "$m $tag ${b%.npy}: $([ $rc = 0 ] && echo ok || echo MISMATCH) $r | $(grep 'nodes quantized' "$o/q.txt")"
        done
    done
done
