#!/usr/bin/env bash
# ONNX Runtime's quantize_static QDQ files (Q -> DQ pairs around nearly every op) run fused (session 31,
# h22/qdqfuse; graph/passes/qdq_activations.c): tests/models/hf_arch/*.ort_qdq.onnx, made by
# tests/models/gen_hf_arch_int8_models.py --static (ONNX Runtime 1.31.1) from the Llama (TorchScript), fixed-shape
# RoBERTa and GPT-2 (dynamo) exports.  Checks, at 1 and 2 threads:
#   - fused like Infera's own INT8 files (`infera info --json`): one Attention a layer and no Softmax, QGemm for
#     every product, RMSNormalization / LayerNormalization x5, GPT-2's tanh Gelu x2, at most one DequantizeLinear
#     (the graph output's own pair);
#   - accuracy: the error against PyTorch's FP32 output (committed, tests/models/hf_arch/*_a.torch.npy) is at most
#     ONNX Runtime's own error on the same INT8 file (ORT optimised, onnxruntime-node run live): dropping the
#     activation pairs removes roundings the FP32 model never had;
#   - INFERA_QDQ=exact (the file's own arithmetic: only the bit-exact pairs after data-movement ops go) equals
#     ONNX Runtime with its graph optimisations disabled (ORT_OPT=disabled) within 1e-5.
set -u
. "$(dirname "$0")/../check.sh"
infera=$1
compare=$2
root=$(cd "$(dirname "$0")/../.." && pwd)
fix=$root/tests/models/hf_arch
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
CHECK_DIR=$work
have_ort "$root" "fusions only"
args=(--input "input_ids=$fix/input_ids_a.npy" --input "attention_mask=$fix/attention_mask_a.npy")
for tag in llama.torchscript roberta.dynamo_static gpt2.dynamo; do
    arch=${tag%%.*}
    model=$fix/$tag.ort_qdq.onnx
    if "$infera" info "$model" --json >"$work/info.json"; then
        check_lines python3 - "$work/info.json" "$arch" <<'PY'
import json, sys
ops, arch = json.load(open(sys.argv[1]))["ops_optimized"], sys.argv[2]
def want(name, ok):
    print(("ok " if ok else "FAIL ") + "%s ort_qdq: %s" % (arch, name) + ("" if ok else " (ops_optimized %s)" % ops))
want("Attention x2, no Softmax / MatMul", ops.get("Attention") == 2 and "Softmax" not in ops and "MatMul" not in ops)
want("QGemm for every product", ops.get("QGemm") == {"llama": 14, "roberta": 12, "gpt2": 8}[arch])
want("at most the output's DequantizeLinear", ops.get("DequantizeLinear", 0) <= 1)
if arch == "llama":
    want("RMSNormalization x5, no Pow", ops.get("RMSNormalization") == 5 and "Pow" not in ops)
else:
    want("LayerNormalization x5", ops.get("LayerNormalization") == 5)
if arch == "gpt2":
    want("Gelu x2 (tanh form), no Tanh", ops.get("Gelu") == 2 and "Tanh" not in ops)
PY
    else
        bad "$tag: infera info failed"
    fi
    [ "$have_ort" = 1 ] || continue
    for opt in all disabled; do
        mkdir -p "$work/ort-$opt"
        ORT_OPT=$opt node "$root/tests/quant/ort_run.js" "$model" "$work/ort-$opt" "input_ids=$fix/input_ids_a.npy" \
            "attention_mask=$fix/attention_mask_a.npy" >/dev/null || bad "$tag: onnxruntime ($opt) failed"
    done
    for threads in 1 2; do
        out=$work/$tag-$threads ex=$work/$tag-exact-$threads
        if ! "$infera" run "$model" "${args[@]}" --threads "$threads" --output-dir "$out" ||
            ! INFERA_QDQ=exact "$infera" run "$model" "${args[@]}" --threads "$threads" --output-dir "$ex"; then
            bad "$tag threads=$threads: infera run failed"
            continue
        fi
        check_run "$tag threads=$threads INFERA_QDQ=exact vs onnxruntime (optimisations disabled)" \
            "$compare" "$ex/last_hidden_state.npy" "$work/ort-disabled/last_hidden_state.npy" 1e-5 0
        check_lines python3 - "$out/last_hidden_state.npy" "$work/ort-all/last_hidden_state.npy" \
            "$fix/${arch}_a.torch.npy" "$tag threads=$threads" <<'PY'
import ast, struct, sys
def load(path):  # a C-order little-endian float32 .npy (no numpy in CI's python3)
    b = open(path, "rb").read()
    n = struct.unpack("<H", b[8:10])[0]
    h = ast.literal_eval(b[10:10 + n].decode())
    assert h["descr"] == "<f4" and not h["fortran_order"]
    count = 1
    for d in h["shape"]:
        count *= d
    return struct.unpack("<%df" % count, b[10 + n:10 + n + 4 * count])
y, o, t = (load(p) for p in sys.argv[1:4])
err = max(abs(a - b) for a, b in zip(y, t))
ort_err = max(abs(a - b) for a, b in zip(o, t))
ok = len(y) == len(t) == len(o) and err <= ort_err
print(("ok " if ok else "FAIL ") + "%s: |infera - fp32| %.4f <= |onnxruntime int8 - fp32| %.4f" % (sys.argv[4], err, ort_err))
PY
    done
done
# The same quantizer's file of the residual CNN (tests/models/ort_qdq/cnn.ort_qdq.onnx): ORT removed the Relu after each
# residual Add and lets the Add's pair (a grid starting at 0) clamp in its place -- a pair the pass must keep (a
# first version dropped it: 8x ORT's error).  Only the exact pairs go; the output equals ONNX Runtime's.
cnn=$root/tests/models/ort_qdq/cnn.ort_qdq.onnx
if "$infera" info "$cnn" --json >"$work/cnn.json"; then
    check_lines python3 - "$work/cnn.json" <<'PY'
import json, sys
ops = json.load(open(sys.argv[1]))["ops_optimized"]
ok = ops.get("QConv") == 6 and ops.get("QGemm") == 1 and ops.get("DequantizeLinear", 0) <= 1
print(("ok " if ok else "FAIL ") + "cnn ort_qdq: QConv x6, QGemm, at most the output's DequantizeLinear (%s)" % ops)
PY
else
    bad "cnn ort_qdq: infera info failed"
fi
if [ "$have_ort" = 1 ]; then
    mkdir -p "$work/cnn-ort"
    ORT_OPT=disabled node "$root/tests/quant/ort_run.js" "$cnn" "$work/cnn-ort" "input=$root/tests/models/cnn_input.npy" \
        >/dev/null || bad "cnn ort_qdq: onnxruntime failed"
    for threads in 1 2; do
        if "$infera" run "$cnn" --input "input=$root/tests/models/cnn_input.npy" --threads "$threads" \
            --output-dir "$work/cnn-$threads"; then
            check_run "cnn ort_qdq threads=$threads vs onnxruntime (the Relus' clamps kept)" \
                "$compare" "$work/cnn-$threads/logits.npy" "$work/cnn-ort/logits.npy" 1e-5 0
        else
            bad "cnn ort_qdq threads=$threads: infera run failed"
        fi
    done
fi
# the output's own Q -> DQ pair does not turn sub-batches off (a per-tensor DequantizeLinear keeps rows apart,
# graph/subbatch.c), and row 1 of a batch of 3 is row 1 alone, bit for bit
/usr/bin/python3 -c 'import numpy as np, sys; np.save(sys.argv[1], np.random.RandomState(3).uniform(-1, 1, (3, 3, 32, 32)).astype(np.float32)); np.save(sys.argv[2], np.load(sys.argv[1])[1:2])' \
    "$work/b3.npy" "$work/b1.npy"
log=$(INFERA_LOG=debug "$infera" run "$cnn" --input "input=$work/b3.npy" --output-dir "$work/b3" 2>&1 >/dev/null)
"$infera" run "$cnn" --input "input=$work/b1.npy" --output-dir "$work/b1" >/dev/null
if grep -q "sub-batches off" <<<"$log"; then bad "cnn ort_qdq: $(grep "sub-batches off" <<<"$log")"
elif /usr/bin/python3 -c 'import numpy as np, sys; sys.exit(0 if np.load(sys.argv[1])[1:2].tobytes() == np.load(sys.argv[2]).tobytes() else 1)' \
    "$work/b3/logits.npy" "$work/b1/logits.npy"; then ok "cnn ort_qdq: sub-batches on, row 1 of 3 == row 1 alone (bytes)"
else bad "cnn ort_qdq: row 1 of a batch of 3 differs from row 1 alone"; fi
check_done
