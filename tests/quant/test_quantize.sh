#!/usr/bin/env bash
# test_quantize.sh -- `infera quantize` end to end, with ONNX Runtime as the oracle.
#
#   tests/quant/test_quantize.sh INFERA NPY_COMPARE
#
# For the MLP, CNN, encoder and depthwise-conv net (dwconv) of tests/models: quantizes each (static QDQ
# minmax; static QDQ per-channel percentile; static QOperator; dynamic; static QDQ entropy for the MLP and CNN),
# runs the quantized file in Infera and in ONNX Runtime (onnxruntime-node
# 1.30.0, tests/models/ort/) on the same inputs, and checks Infera's outputs
# are within one quantization step of ORT's (the step of a uint8
# quantization of the output's FP32 range; two steps for the encoder, where
# one activation rounding the other way -- FP32 LayerNorm/softmax round
# differently in the two runtimes -- moves the logits by up to ~1.5 steps:
# measured, see docs/compression.md).  On x86 CPUs without VNNI the files are
# made with --reduce-range: ORT's vpmaddubsw kernels saturate with 8-bit weights
# there (main's code failed 14 of these checks on an AVX2-only Zen 3 for that
# reason, ORT 11-37 steps from FP32).  The integer kernels are checked bit for
# bit against the reference loops (INFERA_CPU=generic) on the QOperator and
# dynamic files.  Then: calibration from csv:, jsonl: and sqlite: records
# through the default mapping and a spec; --exclude; the report; and the
# errors (a model without MatMul/Gemm/Conv, an empty calibration source, a
# spec field the records lack, bad options).
# Exits 77 (skip) when ONNX Runtime (node) is not installed.
set -u
INFERA=$1
NPYCMP=$2
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/../check.sh"
MODELS=$HERE/../models
if ! command -v node >/dev/null || [ ! -d "$MODELS/ort/node_modules/onnxruntime-node" ]; then
    skip "onnxruntime-node not installed (cd tests/models/ort && npm ci --ignore-scripts)"
fi
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

ort_run() { node "$HERE/ort_run.js" "$@" 2>/dev/null; }
# ONNX Runtime's u8 x s8 kernels on x86 CPUs without VNNI use vpmaddubsw, whose int16 pair sums saturate with
# full-range 8-bit weights (255 * 127 * 2 > 32767): there ORT's own INT8 results stray many steps from FP32 and it
# is no oracle.  Such CPUs quantize with --reduce-range (weights in [-64, 64]: no saturation, both exact).
RR=
if grep -q '^flags.* avx2' /proc/cpuinfo 2>/dev/null && ! grep -qE '^flags.* (avx512_vnni|avx_vnni)' /proc/cpuinfo; then
    RR=--reduce-range
    echo "note: x86 without VNNI: quantizing with --reduce-range (ONNX Runtime's vpmaddubsw would saturate)"
elif [ "${INFERA_TEST_REDUCE_RANGE:-0}" = 1 ]; then # e.g. with INFERA_CPU=avx2 INFERA_QGEMM=avx2: the AVX2
    RR=--reduce-range                               # vpmaddubsw kernel (pair-safe weights) end to end
    echo "note: INFERA_TEST_REDUCE_RANGE=1: quantizing with --reduce-range"
fi

# ---- Infera vs ONNX Runtime on the same quantized file ----
check_model() { # model max_steps args...
    local m=$1 steps=$2 tag=$3
    shift 3
    local q=$TMP/$m.$tag.onnx out=$TMP/$m.$tag
    mkdir -p "$out/infera" "$out/ort" "$out/generic"
    if ! "$INFERA" quantize "$MODELS/$m.onnx" -o "$q" "$@" $RR >"$out/report.txt" 2>&1; then
        bad "$m $tag: quantize failed: $(cat "$out/report.txt")"
        return
    fi
    "$INFERA" run "$q" --input "$MODELS/${m}_input.npy" --output-dir "$out/infera" >/dev/null 2>"$out/err" ||
        { bad "$m $tag: infera run: $(cat "$out/err")"; return; }
    # the encoder's QOperator file with --quantize-attention quantizes attention's softmax input and output (QLinearMatMul scores ->
    # DequantizeLinear -> Softmax -> QuantizeLinear): ORT's "extended" level replaces that chain by its contrib
    # QLinearSoftmax (a lookup-table softmax, another arithmetic than the file's: measured 3.9 vs 3.0 steps from
    # FP32), so the oracle for that file is ORT at level "basic", which runs the file's own ops
    local ort_opt=${ORT_OPT:-all}
    [ "$m.$tag" = transformer.qoperator-att ] && ort_opt=basic
    ORT_OPT=$ort_opt ort_run "$q" "$out/ort" "$MODELS/${m}_input.npy" ||
        { bad "$m $tag: ONNX Runtime cannot run the file"; return; }
    for f in "$out/ort"/*.npy; do
        local o
        o=$(basename "$f" .npy)
        if line=$(node "$HERE/compare.js" "$out/infera/$o.npy" "$f" "$TMP/fp32/$m/$o.npy" "$steps"); then
            ok "$m $tag $o: $line"
        else
            bad "$m $tag $o: $line"
        fi
    done
    if [ "${tag%-att}" = qoperator ] || [ "$tag" = dynamic ]; then # integer kernels: bit for bit with the loops
        INFERA_CPU=generic "$INFERA" run "$q" --input "$MODELS/${m}_input.npy" --output-dir "$out/generic" >/dev/null
        for f in "$out/generic"/*.npy; do
            # the integer kernels' outputs bit for bit; an output behind an FP32 op (the MLP's Softmax) within
            # that op's generic-vs-AVX2 difference (its exp differs in the last bit)
            tol="0 0"
            [ "$(basename "$f")" = probabilities.npy ] && tol="0 1e-6"
            if "$NPYCMP" "$out/infera/$(basename "$f")" "$f" $tol >/dev/null 2>&1; then
                ok "$m $tag $(basename "$f"): fast INT8 kernels == reference loops ($([ "$tol" = "0 0" ] && echo "bit for bit" || echo "Softmax after: rtol 1e-6"))"
            else
                bad "$m $tag $(basename "$f"): fast INT8 kernels differ from the reference loops"
            fi
        done
    fi
}

for m in mlp cnn transformer dwconv; do # dwconv: depthwise convolutions (tests/models/gen_dwconv_model.py)
    mkdir -p "$TMP/fp32/$m"
    ort_run "$MODELS/$m.onnx" "$TMP/fp32/$m" "$MODELS/${m}_input.npy" || { bad "$m: ORT FP32 run"; continue; }
    steps=1
    [ $m = transformer ] && steps=2
    cal=$MODELS/${m}_input.npy
    check_model $m $steps qdq --calibration "$cal"
    check_model $m $steps qdq-pc --calibration "$cal" --per-channel --method percentile
    [ $m = mlp ] || [ $m = cnn ] && check_model $m $steps qdq-entropy --calibration "$cal" --method entropy
    check_model $m $steps qoperator --calibration "$cal" --format qoperator
    if [ $m = transformer ]; then # attention's activation MatMuls too (QAttention; QLinearMatMul)
        check_model $m $steps qdq-att --calibration "$cal" --quantize-attention
        check_model $m $steps qoperator-att --calibration "$cal" --format qoperator --quantize-attention
    fi
    check_model $m $steps dynamic --mode dynamic
done
# a QDQ graph runs fused in INT8 (no QuantizeLinear/DequantizeLinear left after optimisation)
for mk in "mlp QGemm" "cnn QConv" "transformer QGemm" "dwconv QConv"; do
    set -- $mk
    opt=$("$INFERA" info "$TMP/$1.qdq.onnx" | sed -n '/after optimisation/,/parameters/p')
    if echo "$opt" | grep -q "$2" && ! echo "$opt" | grep -q "QuantizeLinear"; then
        ok "$1 qdq: fused into $2, no Q/DQ left"
    else
        bad "$1 qdq: the QDQ pattern was not fused: $opt"
    fi
done
# a dynamic file's MatMuls run as QGemm, its convolutions as QConv (graph/passes/qdynamic.c: DynamicQuantizeLinear
# -> MatMulInteger / ConvInteger -> Cast -> Mul [-> Add] [-> Relu] -> QGemm / QConv reading the
# DynamicQuantizeLinear's bytes; bit for bit the chain, whose ORT comparison is above): no MatMulInteger /
# ConvInteger left in `infera info --json`'s optimised ops
dyn_fused() { # tag file [fused-op integer-op]
    local ops fused=${3:-QGemm} int=${4:-MatMulInteger}
    ops=$("$INFERA" info --json "$2" | sed 's/.*"ops_optimized":{\([^}]*\)}.*/\1/')
    if echo "$ops" | grep -q "\"$fused" && ! echo "$ops" | grep -q "\"$int"; then
        ok "$1: dynamic ${int%Integer}s fused into $fused ($ops)"
    else
        bad "$1: the dynamic ${int%Integer} chain was not fused: $ops"
    fi
}
dyn_fused "mlp dynamic" "$TMP/mlp.dynamic.onnx"
dyn_fused "transformer dynamic" "$TMP/transformer.dynamic.onnx"
dyn_fused "cnn dynamic" "$TMP/cnn.dynamic.onnx" QConv ConvInteger
dyn_fused "dwconv dynamic" "$TMP/dwconv.dynamic.onnx" QConv ConvInteger
# ONNX Runtime's own quantize_dynamic files (tests/quant/gen_ort_dynamic_models.py: the MLP, CNN and dwconv per
# tensor, the encoder per channel, 7-bit weights): its spelling fuses too (the conv bias a Reshape, folded first),
# and Infera matches ORT on them (one step, two for the encoder as above)
for m in mlp transformer cnn dwconv; do
    f=$MODELS/${m}_ort_dynamic.onnx out=$TMP/$m.ortdyn
    case $m in
    cnn | dwconv) dyn_fused "$m ORT quantize_dynamic" "$f" QConv ConvInteger ;;
    *) dyn_fused "$m ORT quantize_dynamic" "$f" ;;
    esac
    mkdir -p "$out/infera" "$out/ort"
    steps=1
    [ $m = transformer ] && steps=2
    "$INFERA" run "$f" --input "$MODELS/${m}_input.npy" --output-dir "$out/infera" >/dev/null 2>"$out/err" ||
        { bad "$m ORT quantize_dynamic: infera run: $(cat "$out/err")"; continue; }
    ort_run "$f" "$out/ort" "$MODELS/${m}_input.npy" || { bad "$m ORT quantize_dynamic: ONNX Runtime run"; continue; }
    for g in "$out/ort"/*.npy; do
        o=$(basename "$g" .npy)
        if line=$(node "$HERE/compare.js" "$out/infera/$o.npy" "$g" "$TMP/fp32/$m/$o.npy" "$steps"); then
            ok "$m ORT quantize_dynamic $o: $line"
        else
            bad "$m ORT quantize_dynamic $o: $line"
        fi
    done
done
# the dynamic conv chains of tests/models/qdynamic_conv.onnx (gen_qdynamic_conv_model.py: both spellings, uint8 W
# with zero point 128 -- packed as its int8 shift, ops/ref/quantize_conv.c -- int8 W with and without one, a pool and
# a residual after) fused into QConv against ONNX Runtime running the chains node by node: equal to 1e-6
mkdir -p "$TMP/qdc/infera" "$TMP/qdc/ort"
if "$INFERA" run "$MODELS/qdynamic_conv.onnx" --input "$MODELS/qdynamic_conv_input.npy" --output-dir "$TMP/qdc/infera" \
    >/dev/null 2>"$TMP/qdc/err" && ort_run "$MODELS/qdynamic_conv.onnx" "$TMP/qdc/ort" "$MODELS/qdynamic_conv_input.npy"; then
    for f in "$TMP/qdc/ort"/*.npy; do
        o=$(basename "$f")
        if "$NPYCMP" "$TMP/qdc/infera/$o" "$f" 1e-6 1e-6 >/dev/null 2>&1; then
            ok "qdynamic_conv $o: fused dynamic conv == ONNX Runtime (1e-6)"
        else
            bad "qdynamic_conv $o: fused dynamic conv differs from ONNX Runtime: $("$NPYCMP" "$TMP/qdc/infera/$o" "$f" 1e-6 1e-6 2>&1 | tail -1)"
        fi
    done
else
    bad "qdynamic_conv: run failed: $(cat "$TMP/qdc/err")"
fi
# the encoder's residual Adds after a float QGemm (its feed-forward output) run in the QGemm's store
# (graph/passes/qdq_chain.c fuse_residuals, QGemm input 9): 3 Adds left of 6 (4 before
# graph/passes/export_noops.c bypassed Reshapes that keep their input's shape, one of which stood between
# an Add and the QGemm it joins now; two are shape arithmetic); outputs checked against ORT above
adds=$("$INFERA" info "$TMP/transformer.qdq.onnx" | sed -n '/after optimisation/,/parameters/p' | awk '$1 == "Add" {print $2}')
if [ "${adds:-0}" = 3 ]; then
    ok "transformer qdq: the feed-forward residual Adds fused into their QGemm ($adds Adds left)"
else
    bad "transformer qdq: ${adds:-no} Adds left after optimisation (want 3: the residual joins fused)"
fi
# the CNN's residual joins, pooled stem and shortcut stay uint8 channels last (graph/passes/qdq_chain.c
# link_shared: 7 links, main's single-reader links made 5), and those fused stores are the reference's
# arithmetic: the reference loops' logits bit for bit (the comparison with ORT is above)
links=$(INFERA_LOG=debug "$INFERA" run "$TMP/cnn.qdq.onnx" --input "$MODELS/cnn_input.npy" --output-dir "$TMP/cnn.qdq.links" 2>&1 |
    sed -n 's/.*optimizer: \([0-9]*\) QConv+MaxPool.*/\1/p')
mkdir -p "$TMP/cnn.qdq.gen"
INFERA_CPU=generic "$INFERA" run "$TMP/cnn.qdq.onnx" --input "$MODELS/cnn_input.npy" --output-dir "$TMP/cnn.qdq.gen" >/dev/null 2>&1
if [ "${links:-0}" -ge 7 ] && "$NPYCMP" "$TMP/cnn.qdq.links/logits.npy" "$TMP/cnn.qdq.gen/logits.npy" 0 0 >/dev/null 2>&1; then
    ok "cnn qdq: $links uint8 links (residual joins, pooled stem, shortcuts); fast == reference loops bit for bit"
else
    bad "cnn qdq: ${links:-no} uint8 links (want >= 7), or the fast kernels differ from the reference loops"
fi
# a QGemm's output shape is known to the optimizer's shape folding (src/graph/shape_infer.c), so the
# Shape -> Gather -> Unsqueeze -> Concat chains that size the attention heads fold away as in the FP32 graph
# (tests/models/attention.onnx: BERT-export chains behind each projection) -- left in, they kept a
# quantized encoder out of cache-sized sub-batches (src/graph/subbatch.c)
node -e "const fs = require('fs'), n = 2 * 5 * 24, h = \"{'descr': '<f4', 'fortran_order': False, 'shape': (2, 5, 24), }\";
    const hdr = Buffer.from(h + ' '.repeat(118 - h.length - 1) + '\\n'), d = Buffer.alloc(4 * n);
    for (let i = 0; i < n; i++) d.writeFloatLE(Math.sin(i * 0.7) * 2, 4 * i);
    fs.writeFileSync('$TMP/att_cal.npy', Buffer.concat([Buffer.from([0x93]), Buffer.from('NUMPY'), Buffer.from([1, 0, 118, 0]), hdr, d]));"
if "$INFERA" quantize "$MODELS/attention.onnx" -o "$TMP/att.qdq.onnx" --calibration "$TMP/att_cal.npy" >"$TMP/att.txt" 2>&1; then
    opt=$("$INFERA" info "$TMP/att.qdq.onnx" | sed -n '/after optimisation/,/parameters/p')
    if echo "$opt" | grep -q QGemm && ! echo "$opt" | grep -qE "^ *(Shape|Gather|Unsqueeze) "; then
        pass "attention qdq: QGemm shapes inferred, head-size Shape chains folded"
    else
        fail "attention qdq: Shape chains left after QGemm: $opt"
    fi
    # x feeds all 15 projections through one Q -> DQ pair: quantized once (graph/passes/qdq.c, shared input), its
    # QuantizeLinear kept and read as uint8 by every QGemm; outputs within one step of ORT on the file, and the
    # fast kernels (vector QuantizeLinear, QGemm) within the FP32 parts' rounding (rtol 1e-5) of the loops'
    mkdir -p "$TMP/att/fp32" "$TMP/att/infera" "$TMP/att/ort" "$TMP/att/generic"
    "$INFERA" run "$TMP/att.qdq.onnx" --input "$TMP/att_cal.npy" --output-dir "$TMP/att/infera" >/dev/null 2>&1
    INFERA_CPU=generic "$INFERA" run "$TMP/att.qdq.onnx" --input "$TMP/att_cal.npy" --output-dir "$TMP/att/generic" \
        >/dev/null 2>&1
    if [ "$(echo "$opt" | awk '$1 == "QuantizeLinear" {print $2}')" = 1 ] && [ "$(echo "$opt" | awk '$1 == "QGemm" {print $2}')" = 15 ] &&
        ort_run "$MODELS/attention.onnx" "$TMP/att/fp32" "$TMP/att_cal.npy" && ort_run "$TMP/att.qdq.onnx" "$TMP/att/ort" "$TMP/att_cal.npy"; then
        for f in "$TMP/att/ort"/*.npy; do
            o=$(basename "$f")
            if line=$(node "$HERE/compare.js" "$TMP/att/infera/$o" "$f" "$TMP/att/fp32/$o" 1) &&
                "$NPYCMP" "$TMP/att/infera/$o" "$TMP/att/generic/$o" 1e-5 1e-6 >/dev/null 2>&1; then
                ok "attention qdq, x quantized once for 15 QGemms, $o: $line; fast ~ reference loops (rtol 1e-5)"
            else
                bad "attention qdq, x quantized once, $o: $line (or fast != reference loops)"
            fi
        done
    else
        bad "attention qdq: want 1 QuantizeLinear shared by 15 QGemms (and ORT runs): $opt"
    fi
else
    fail "attention qdq: quantize failed: $(cat "$TMP/att.txt")"
fi
grep -q "nodes quantized: 3 of 3" "$TMP/mlp.qdq/report.txt" && grep -q "file size: 26420 -> " "$TMP/mlp.qdq/report.txt" &&
    ok "report: nodes and sizes" || bad "report: $(cat "$TMP/mlp.qdq/report.txt")"

# ---- calibration records from batch sources (default mapping and a spec) ----
awk 'BEGIN { srand(7); printf "id"; for (j = 0; j < 32; j++) printf ",f%d", j; print "";
             for (i = 0; i < 50; i++) { printf "r%d", i; for (j = 0; j < 32; j++) printf ",%.5f", rand() * 2 - 1; print "" } }' \
    >"$TMP/cal.csv"
awk -F, 'NR == 1 { for (j = 1; j <= NF; j++) h[j] = $j; next }
         { printf "{"; for (j = 1; j <= NF; j++) printf "%s\"%s\":%s", (j > 1 ? "," : ""), h[j], (j == 1 ? "\"" $j "\"" : $j); print "}" }' \
    "$TMP/cal.csv" >"$TMP/cal.jsonl"
cols=$(head -1 "$TMP/cal.csv" | cut -d, -f2- | sed 's/,/ REAL, /g; s/$/ REAL/')
if command -v sqlite3 >/dev/null; then
    sqlite3 "$TMP/cal.db" "CREATE TABLE cal (id TEXT, $cols);" ".mode csv" ".import --skip 1 $TMP/cal.csv cal" 2>/dev/null
fi
for src in "csv:$TMP/cal.csv" "jsonl:$TMP/cal.jsonl" "sqlite:$TMP/cal.db?table=cal"; do
    if out=$("$INFERA" quantize "$MODELS/mlp.onnx" -o "$TMP/mlp.src.onnx" --calibration "$src" --calibration-rows 40 2>&1) &&
       echo "$out" | grep -q "calibration: 40 records"; then
        ok "calibration from ${src%%:*}: 40 records (default mapping)"
    else
        bad "calibration from ${src%%:*}: $out"
    fi
done
{
    printf '{"spec_version": 1, "name": "mlp", "inputs": {"id": {"type": "string", "id": true}'
    for j in $(seq 0 31); do printf ', "f%d": {"type": "float", "required": true}' "$j"; done
    printf '}, "model_inputs": {"input": {"dtype": "float32", "order": ['
    for j in $(seq 0 31); do printf '%s"f%d"' "$([ "$j" -gt 0 ] && echo ,)" "$j"; done
    printf ']}}}\n'
} >"$TMP/spec.json"
"$INFERA" quantize "$MODELS/mlp.onnx" -o "$TMP/mlp.spec.onnx" --calibration "csv:$TMP/cal.csv" --spec "$TMP/spec.json" \
    --method entropy >/dev/null 2>"$TMP/err" && ok "calibration through a spec (entropy)" ||
    bad "calibration through a spec: $(cat "$TMP/err")"
cut -d, -f1-32 "$TMP/cal.csv" >"$TMP/cal_missing.csv" # no f31
if "$INFERA" quantize "$MODELS/mlp.onnx" -o "$TMP/x.onnx" --calibration "csv:$TMP/cal_missing.csv" --spec "$TMP/spec.json" \
    >/dev/null 2>"$TMP/err"; then
    bad "a spec field the records lack: accepted"
elif grep -q "f31" "$TMP/err"; then
    ok "a spec field the records lack: $(cat "$TMP/err")"
else
    bad "a spec field the records lack: unclear error: $(cat "$TMP/err")"
fi

# ---- --exclude ----
out=$("$INFERA" quantize "$MODELS/mlp.onnx" -o "$TMP/mlp.ex.onnx" --calibration "$MODELS/mlp_input.npy" \
      --exclude /fc3/Gemm 2>&1)
if echo "$out" | grep -q "nodes quantized: 2 of 3 .* (1 excluded)" &&
   "$INFERA" info "$TMP/mlp.ex.onnx" | sed -n '/after optimisation/,/parameters/p' | grep -q "^  Gemm "; then
    ok "--exclude keeps the node in FP32"
else
    bad "--exclude: $out"
fi

# attention's two activation MatMuls (--quantize-attention): quantized and counted, fused into the INT8 QAttention (QDQ); one excluded
# stays FP32 (the layer then runs unfused, through the generic Q/DQ/MatMul ops) and the file still matches ORT
if grep -q "activation MatMuls quantized (attention scores): 4 of 4 (0 excluded)" "$TMP/transformer.qdq-att/report.txt" &&
   ! grep -q "activation MatMuls" "$TMP/transformer.qdq/report.txt" &&
   [ "$("$INFERA" info "$TMP/transformer.qdq-att.onnx" | sed -n 's/^  QAttention  *\([0-9]*\)$/\1/p')" = 2 ]; then
    ok "encoder --quantize-attention: 4 attention MatMuls quantized (none without it), 2 QAttention after optimisation"
else
    bad "encoder --quantize-attention: $(cat "$TMP/transformer.qdq-att/report.txt")"
fi
mkdir -p "$TMP/fp32/transformer"
check_model transformer 2 qdq-ex --calibration "$MODELS/transformer_input.npy" --quantize-attention \
    --exclude /encoder/layers.0/self_attn/MatMul_1
opt=$("$INFERA" info "$TMP/transformer.qdq-ex.onnx" | sed -n '/after optimisation/,/parameters/p')
if grep -q "attention scores): 3 of 4 (1 excluded)" "$TMP/transformer.qdq-ex/report.txt" &&
   echo "$opt" | grep -qE "^  MatMul  *2$" && echo "$opt" | grep -qE "^  QAttention  *1$"; then
    ok "--exclude of a score MatMul keeps it FP32 (that layer unfused: its 2 MatMuls, P V through Q/DQ; the other layer QAttention)"
else
    bad "--exclude of a score MatMul: $(cat "$TMP/transformer.qdq-ex/report.txt") $opt"
fi

# ---- errors ----
expect_quantize_error() { # what pattern args...: `infera quantize ARGS` refused with PATTERN
    local what=$1 pattern=$2
    shift 2
    if "$INFERA" quantize "$@" >/dev/null 2>"$TMP/err"; then
        bad "$what: accepted"
    elif grep -q -- "$pattern" "$TMP/err"; then
        ok "$what: $(head -1 "$TMP/err")"
    else
        bad "$what: unexpected error: $(cat "$TMP/err")"
    fi
}
head -1 "$TMP/cal.csv" >"$TMP/empty.csv"
expect_quantize_error "no MatMul/Gemm/Conv" "nothing to quantize" "$MODELS/pad_zero.onnx" -o "$TMP/x.onnx" --mode dynamic
expect_quantize_error "empty calibration source" "empty" "$MODELS/mlp.onnx" -o "$TMP/x.onnx" --calibration "csv:$TMP/empty.csv"
expect_quantize_error "missing calibration file" "$TMP/none.csv" "$MODELS/mlp.onnx" -o "$TMP/x.onnx" --calibration "csv:$TMP/none.csv"
expect_quantize_error "tensor file of the wrong shape" "calibration" "$MODELS/mlp.onnx" -o "$TMP/x.onnx" --calibration "$MODELS/cnn_input.npy"
expect_quantize_error "static without calibration" "needs --calibration" "$MODELS/mlp.onnx" -o "$TMP/x.onnx" --mode static
expect_quantize_error "--quantize-attention in dynamic mode" "needs static mode" "$MODELS/transformer.onnx" -o "$TMP/x.onnx" \
    --mode dynamic --quantize-attention
expect_quantize_error "bad method" "^infera quantize: --method must be minmax, percentile or entropy, got 'magic'$" \
    "$MODELS/mlp.onnx" -o "$TMP/x.onnx" --method magic
expect_quantize_error "bad format" "^infera quantize: --format must be qdq or qoperator, got 'qlinear'$" \
    "$MODELS/mlp.onnx" -o "$TMP/x.onnx" --format qlinear
expect_quantize_error "bad mode" "^infera quantize: --mode must be dynamic or static, got 'fast'$" \
    "$MODELS/mlp.onnx" -o "$TMP/x.onnx" --mode fast
expect_quantize_error "everything excluded" "excluded" "$MODELS/mlp.onnx" -o "$TMP/x.onnx" --mode dynamic \
    --exclude /fc1/Gemm --exclude /fc2/Gemm --exclude /fc3/Gemm
expect_quantize_error "not a model" "cal.csv: not a valid ONNX model (protobuf decoding failed" "$TMP/cal.csv" -o "$TMP/x.onnx" --mode dynamic
expect_quantize_error "no output" "-o OUT" "$MODELS/mlp.onnx"

check_done
