#!/usr/bin/env bash
# A Hugging Face BertModel exported as users export it (torch.onnx.export, TorchScript exporter at
# opset 17 and the dynamo exporter; tests/models/hf_bert/, made by tests/models/gen_hf_bert_model.py
# from a tiny random BertModel): `infera run` at 1 and 2 threads on two padded input sets (set b has
# a fully masked row) against ONNX Runtime run live (onnxruntime-node, tests/models/ort; skipped
# without it) and PyTorch's committed outputs (set a; on set b's masked row the dynamo export itself
# departs from PyTorch), and the fusions `infera info --json` must show, so that a change in how the
# optimizer matches these exports fails here: LayerNormalization kept, every Linear a FusedMatMul
# (bias, residual and GELU fused), torch's scaled_dot_product_attention (scale on Q and K^T, the
# Where(IsNaN) after Softmax, the Reshape of P V rebuilt from Shape nodes, dynamo's K^T spelled
# Reshape/Transpose/Reshape) one Attention per layer, no Dropout, Erf, Gelu, Softmax or IsNaN left.
set -u
. "$(dirname "$0")/../check.sh"
infera=$1
compare=$2
root=$(cd "$(dirname "$0")/../.." && pwd)
fix=$root/tests/models/hf_bert
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
CHECK_DIR=$work
have_ort "$root" "PyTorch only"
inputs() { # the --input arguments of set $1
    for n in input_ids attention_mask token_type_ids; do printf -- '--input\n%s=%s\n' "$n" "$fix/${n}_$1.npy"; done
}
for exporter in torchscript dynamo; do
    model=$fix/hf_bert_tiny.$exporter.onnx
    for set in a b; do
        mapfile -t args < <(inputs "$set")
        if [ "$have_ort" = 1 ]; then
            ort_args=()
            for n in input_ids attention_mask token_type_ids; do ort_args+=("$n=$fix/${n}_$set.npy"); done
            mkdir -p "$work/ort-$exporter-$set"
            if ! node "$root/tests/quant/ort_run.js" "$model" "$work/ort-$exporter-$set" "${ort_args[@]}" >/dev/null; then
                bad "$exporter set $set: onnxruntime failed"
            fi
        fi
        for threads in 1 2; do
            out=$work/$exporter-$set-$threads
            if ! "$infera" run "$model" "${args[@]}" --threads "$threads" --output-dir "$out"; then
                bad "$exporter set $set threads=$threads: infera run failed"
                continue
            fi
            for o in last_hidden_state pooler_output; do
                [ "$have_ort" = 1 ] && check_run "$exporter/$o set $set threads=$threads vs onnxruntime" \
                    "$compare" "$out/$o.npy" "$work/ort-$exporter-$set/$o.npy" 1e-4 1e-5
                [ "$set" = a ] && check_run "$exporter/$o set $set threads=$threads vs pytorch" \
                    "$compare" "$out/$o.npy" "$fix/${o}_$set.torch.npy" 1e-4 1e-5
            done
        done
    done
    # the fusions: 2 layers -> 5 LayerNormalization (embeddings + 2 a layer), 12 FusedMatMul
    # (Q, K, V, attention output + residual, FFN up + GELU, FFN down + residual, per layer), 2 Attention
    if "$infera" info "$model" --json >"$work/info.json"; then
        check_lines python3 - "$work/info.json" "$exporter" <<'EOF'
import json, sys
ops = json.load(open(sys.argv[1]))["ops_optimized"]
tag = sys.argv[2]
def want(name, ok, detail):
    print(("ok " if ok else "FAIL ") + f"{tag}: {name}" + ("" if ok else f" ({detail}; ops_optimized {ops})"))
want("LayerNormalization x5", ops.get("LayerNormalization") == 5, ops.get("LayerNormalization"))
want("FusedMatMul x12 (bias, residual, GELU fused)", ops.get("FusedMatMul") == 12, ops.get("FusedMatMul"))
want("Attention x2 (one a layer)", ops.get("Attention") == 2, ops.get("Attention"))
want("no MatMul+Add left outside FusedMatMul: Add <= 4", ops.get("Add", 0) <= 4, ops.get("Add"))
want("no Transpose left (Attention reads Q, K, V in place)", "Transpose" not in ops, ops.get("Transpose"))
for gone in ("Dropout", "Erf", "Gelu", "Div", "Softmax", "IsNaN", "MatMul"):
    want(f"no {gone} left", gone not in ops, ops.get(gone))
EOF
    else
        bad "$exporter: infera info failed"
    fi
done
# INT8: static, per-channel, calibrated on set a through a spec (one CSV column per token position); both exports'
# QDQ files fuse into QGemm (GELU in the FFN's store, also the dynamo exporter's opset-20 Gelu) and Attention,
# and Infera's outputs stay within one output quantization step of ONNX Runtime's on the same file
python3 "$fix/calib_csv.py" "$fix" a "$work/calib.csv" "$work/calib_spec.json"
for exporter in torchscript dynamo; do
    q=$work/$exporter.int8.onnx
    if ! "$infera" quantize "$fix/hf_bert_tiny.$exporter.onnx" -o "$q" --calibration "csv:$work/calib.csv" \
        --spec "$work/calib_spec.json" --per-channel >/dev/null; then
        bad "$exporter: infera quantize failed"
        continue
    fi
    "$infera" info "$q" --json >"$work/q.json"
    check_lines python3 - "$work/q.json" "$exporter" <<'EOF2'
import json, sys
ops = json.load(open(sys.argv[1]))["ops_optimized"]
ok = ops.get("QGemm") == 13 and ops.get("Attention") == 2 and not {"Gelu", "MatMul", "Softmax", "DequantizeLinear"} & set(ops)
print(("ok " if ok else "FAIL ") + f"{sys.argv[2]} INT8: QGemm x13 (GELU fused), Attention x2, no DequantizeLinear ({ops})")
EOF2
    mapfile -t args < <(inputs a)
    if "$infera" run "$q" "${args[@]}" --output-dir "$work/q-$exporter" && [ "$have_ort" = 1 ]; then
        mkdir -p "$work/q-ort-$exporter"
        node "$root/tests/quant/ort_run.js" "$q" "$work/q-ort-$exporter" "input_ids=$fix/input_ids_a.npy" \
            "attention_mask=$fix/attention_mask_a.npy" "token_type_ids=$fix/token_type_ids_a.npy" >/dev/null &&
            check_run "$exporter INT8: last_hidden_state within 1 step of onnxruntime on the same file" \
                node "$root/tests/quant/compare.js" "$work/q-$exporter/last_hidden_state.npy" \
                "$work/q-ort-$exporter/last_hidden_state.npy" "$fix/last_hidden_state_a.torch.npy" 1 ||
            bad "$exporter INT8: onnxruntime failed on the quantized file"
    elif [ "$have_ort" = 1 ]; then
        bad "$exporter INT8: infera run failed"
    fi
done
# torch's SDPA spellings one by one (tests/models/gen_sdpa_edges_model.py): y_a, y_b, y_d fused, y_c kept; a fully
# masked row gives zeros; a pv_shape that is not P V's shape is an error naming both shapes (ONNX Runtime reshapes)
edges=$fix/sdpa_edges.onnx
sargs=(--input "q=$fix/sdpa_q.npy" --input "k=$fix/sdpa_k.npy" --input "v=$fix/sdpa_v.npy")
if "$infera" info "$edges" --json >"$work/edges.json"; then
    check_lines python3 - "$work/edges.json" <<'EOF2'
import json, sys
ops = json.load(open(sys.argv[1]))["ops_optimized"]
ok = ops.get("Attention") == 3 and ops.get("IsNaN") == 1 and ops.get("Softmax") == 1
print(("ok " if ok else "FAIL ") + f"sdpa_edges: y_a, y_b and y_d (Q read in place) fused, y_c kept ({ops})")
EOF2
else
    bad "sdpa_edges: infera info failed"
fi
if [ "$have_ort" = 1 ]; then
    mkdir -p "$work/edges-ort"
    node "$root/tests/quant/ort_run.js" "$edges" "$work/edges-ort" "q=$fix/sdpa_q.npy" "k=$fix/sdpa_k.npy" \
        "v=$fix/sdpa_v.npy" "pv_shape=$fix/sdpa_pv_shape.npy" >/dev/null || bad "sdpa_edges: onnxruntime failed"
fi
for threads in 1 2; do
    out=$work/edges-$threads
    if ! "$infera" run "$edges" "${sargs[@]}" --input "pv_shape=$fix/sdpa_pv_shape.npy" --threads "$threads" \
        --output-dir "$out"; then
        bad "sdpa_edges threads=$threads: infera run failed"
        continue
    fi
    for o in y_a y_b y_c y_d d_qt; do
        [ "$have_ort" = 1 ] && check_run "sdpa_edges/$o threads=$threads vs onnxruntime" \
            "$compare" "$out/$o.npy" "$work/edges-ort/$o.npy" 1e-4 1e-5
    done
    check "sdpa_edges threads=$threads: the fully masked row is 0 (Where(IsNaN(P), 0, P))" \
        'python3 "$root/tests/models/hf_bert/masked_row_zero.py" "$out/y_a.npy"'
done
expect_error "sdpa_edges: P V reshaped to another shape of the same size" \
    "reshapes attention's P V \\[2, 2, 5, 4\\] to \\[2, 5, 2, 4\\]" \
    "$infera" run "$edges" "${sargs[@]}" --input "pv_shape=$fix/sdpa_pv_shape_bad.npy" --output-dir "$work/bad"
check_done
