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
have_ort=1
if ! command -v node >/dev/null || [ ! -d "$root/tests/models/ort/node_modules/onnxruntime-node" ]; then
    have_ort=0
    echo "note: onnxruntime-node not installed (cd tests/models/ort && npm ci --ignore-scripts): PyTorch only"
    SKIPPED_PARTS=$((${SKIPPED_PARTS:-0} + 1))
fi
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
check_done
