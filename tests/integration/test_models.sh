#!/usr/bin/env bash
# Model tests: `infera run` on the example models (tests/models) must match
# ONNX Runtime's and PyTorch's outputs within rtol 1e-4 / atol 1e-5, at 1 and
# 2 threads, from .npy and from .pb inputs; likewise the models of
# tests/models/unseen (gen_unseen_models.py: RNNs, transposed/grouped convs,
# pools, norms, attention with masks, resize, quantized ops, fusion edges).
# INFERA_TEST_THREADS (default "1 2"): the thread counts to run at.
set -u
. "$(dirname "$0")/../check.sh"
infera=$1
compare=$2
models=$(cd "$(dirname "$0")/../models" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for model in mlp cnn transformer; do
    for threads in ${INFERA_TEST_THREADS:-1 2}; do
        for fmt in npy pb; do
            out="$work/$model-$threads-$fmt"
            if ! "$infera" run "$models/$model.onnx" --input "input=$models/${model}_input.$fmt" \
                --output-dir "$out" --threads "$threads"; then
                bad "$model threads=$threads input=.$fmt: infera run failed"
                continue
            fi
            for ref in "$models/${model}"_*.ort.npy; do
                output=$(basename "$ref" .ort.npy)
                output=${output#"${model}_"}
                check_run "$model/$output threads=$threads input=.$fmt vs onnxruntime" \
                    "$compare" "$out/$output.npy" "$ref" 1e-4 1e-5
                check_run "$model/$output threads=$threads input=.$fmt vs pytorch" \
                    "$compare" "$out/$output.npy" "$models/${model}_$output.torch.npy" 1e-4 1e-5
            done
        done
    done
done
# unseen/NAME.onnx: inputs NAME_x<i>.npy bound to x<i>; every NAME_y<j>.{ort,torch}.npy checked
for onnx in "$models"/unseen/*.onnx; do
    name=$(basename "$onnx" .onnx)
    args=()
    for x in "$models/unseen/${name}"_x*.npy; do
        input=$(basename "$x" .npy)
        args+=(--input "${input#"${name}_"}=$x")
    done
    for threads in ${INFERA_TEST_THREADS:-1 2}; do
        out="$work/unseen-$name-$threads"
        if ! "$infera" run "$onnx" "${args[@]}" --output-dir "$out" --threads "$threads"; then
            bad "unseen/$name threads=$threads: infera run failed"
            continue
        fi
        for ref in "$models/unseen/${name}"_y*.npy; do
            tag=$(basename "$ref" .npy)       # NAME_yJ.ort or NAME_yJ.torch
            output=${tag%.*}
            output=${output#"${name}_"}
            check_run "unseen/$name/$output threads=$threads vs ${tag##*.}" "$compare" "$out/$output.npy" "$ref" 1e-4 1e-5
        done
    done
done
# initializers stored as external data beside the model (location/offset/length)
ext=$models/external
if "$infera" run "$ext/linear.onnx" --input "x=$ext/linear_input.npy" --output-dir "$work/ext"; then
    check_run "external data: Gemm weights read from linear.weights" "$compare" "$work/ext/y.npy" "$ext/linear_expected.npy" 1e-5 1e-5
else
    bad "external data model does not run"
fi
# a missing external file is an error naming it; a path escaping the folder is refused
mkdir -p "$work/moved" && cp "$ext/linear.onnx" "$work/moved/"
if ! "$infera" info "$work/moved/linear.onnx" 2>"$work/err" && grep -q "linear.weights" "$work/err"; then
    ok "external data: missing file named in the error"
else
    bad "external data: missing file not reported ($(cat "$work/err"))"
fi
if ! "$infera" info "$ext/escape.onnx" 2>"$work/err" && grep -q "leaves the model's folder" "$work/err"; then
    ok "external data: a path leaving the model's folder is refused"
else
    bad "external data: escaping path not refused ($(cat "$work/err"))"
fi
check_done
