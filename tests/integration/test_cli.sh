#!/usr/bin/env bash
# CLI tests: the `infera` command as users run it.  Bad input of every kind
# (corrupt or truncated model, unknown op, cycle, short initializer, missing
# input, wrong dtype, wrong shape, bad .npy header, bad flags) must give a
# one-line error naming the problem and a non-zero exit -- never a crash.
set -u
. "$(dirname "$0")/../check.sh"
infera=$1
models=$(cd "$(dirname "$0")/../models" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# expect_error (check.sh): exit status 1..125, one stderr line matching PATTERN.
CHECK_DIR=$work CHECK_ONE_LINE=1

# make_npy FILE DESCR SHAPE NBYTES: a valid .npy header followed by NBYTES zero bytes.
make_npy() {
    local header="{'descr': '$2', 'fortran_order': False, 'shape': $3, }"
    local len=$(( ${#header} + 1 ))
    local pad=$(( (64 - (10 + len) % 64) % 64 ))
    header="$header$(printf '%*s' "$pad" '')"
    len=$(( ${#header} + 1 ))
    { printf '\x93NUMPY\x01\x00'; printf "\\x$(printf '%02x' $((len % 256)))\\x$(printf '%02x' $((len / 256)))";
      printf '%s\n' "$header"; head -c "$4" /dev/zero; } >"$1"
}

mlp=$models/mlp.onnx
head -c 5000 "$mlp" >"$work/truncated.onnx"
head -c 4096 /dev/urandom >"$work/random.onnx"
: >"$work/empty.onnx"
make_npy "$work/f64.npy" '<f8' '(4, 32)' 1024
make_npy "$work/wrong_shape.npy" '<f4' '(4, 31)' 496
make_npy "$work/short.npy" '<f4' '(4, 32)' 100
make_npy "$work/x23.npy" '<f4' '(2, 3)' 24
make_npy "$work/x1411.npy" '<f4' '(1, 4, 1, 1)' 16
make_npy "$work/x131.npy" '<f4' '(1, 3, 1)' 12
make_npy "$work/x1111.npy" '<f4' '(1, 1, 1, 1)' 4
make_npy "$work/x1114.npy" '<f4' '(1, 1, 1, 4)' 16
printf 'not a numpy file at all' >"$work/garbage.npy"
{ echo "id,$(seq -s, -f 'f%g' 32)"; for r in 1 2 3; do echo "r$r,$(seq -s, 32)"; done; } >"$work/cal.csv"

expect_error "truncated model" "truncated.onnx.*(not a valid ONNX model|protobuf)" "$infera" run "$work/truncated.onnx"
expect_error "random bytes as model" "random.onnx" "$infera" info "$work/random.onnx"
expect_error "missing model file" "cannot open.*nope.onnx" "$infera" run "$work/nope.onnx"
expect_error "empty model file" "empty.onnx" "$infera" run "$work/empty.onnx"
expect_error "unknown operator" "unsupported operator FrobnicateTensor.*opset 13" "$infera" info "$models/bad_unknown_op.onnx"
expect_error "cycle" "cycle" "$infera" info "$models/bad_cycle.onnx"
expect_error "short initializer" "initializer 'w'.*raw_data" "$infera" info "$models/bad_short_initializer.onnx"
expect_error "conv stride past 2^31" "node 'huge_stride' \(Conv\): attribute strides\[1\] = 1099511627776, must be in \[1, 2147483647\]" "$infera" info "$models/bad_conv_huge_stride.onnx"
expect_error "tile past int64" "node 'huge_tile' \(Tile\): input repeats: value 1 \(4611686018427387904\) times dimension 3 overflows int64" "$infera" run "$models/bad_tile_huge_repeats.onnx" --input "x=$work/x23.npy"
expect_error "resize aspect past int64" "node 'huge_aspect' \(Resize\): input sizes: axis 0 would have 9.22337e\+18 elements" "$infera" run "$models/bad_resize_huge_aspect.onnx" --input "x=$work/x23.npy"
expect_error "blocksize past 2^31" "node 'huge_block' \(DepthToSpace\): attribute blocksize = 4294967296, must be in \[1, 2147483647\]" "$infera" run "$models/bad_depth_to_space_huge_block.onnx" --input "x=$work/x1411.npy"
expect_error "empty tensor with huge dimensions" "initializer 'R': shape is too large" "$infera" info "$models/bad_lstm_empty_huge_r.onnx"
expect_error "col2im dilation past 2^31" "node 'huge_dilation' \(Col2Im\): axis 0: strides, dilations, pads, image and block must be at most 2147483647" "$infera" run "$models/bad_col2im_huge_dilation.onnx" --input "x=$work/x131.npy"
expect_error "deform conv dilation past 2^31" "node 'huge_dilation' \(DeformConv\): strides, dilations and pads must be at most 2147483647, got 4611686018427387904" "$infera" run "$models/bad_deform_conv_huge_dilation.onnx" --input "x=$work/x1111.npy"
expect_error "max unpool stride past int64" "node 'huge_stride' \(MaxUnpool\): spatial axis 1: stride 4611686018427387904 gives an invalid or too large output size" "$infera" run "$models/bad_max_unpool_huge_stride.onnx" --input "x=$work/x1114.npy"
expect_error "missing input" "input 'input' is missing" "$infera" run "$mlp"
expect_error "unknown input name" "no input 'nosuch'" "$infera" run "$mlp" --input "nosuch=$models/mlp_input.npy"
expect_error "wrong dtype" "input 'input': expected float32\[batch,32\], got float64\[4,32\]" "$infera" run "$mlp" --input "input=$work/f64.npy"
expect_error "wrong shape" "expected float32\[batch,32\], got float32\[4,31\]" "$infera" run "$mlp" --input "input=$work/wrong_shape.npy"
expect_error "npy shorter than its shape" "short.npy.*shape needs 512 bytes of data but the file holds 100" "$infera" run "$mlp" --input "input=$work/short.npy"
expect_error "npy with a bad header" "garbage.npy.*not a .npy file" "$infera" run "$mlp" --input "input=$work/garbage.npy"
expect_error "shape mismatch inside the graph" "node 'mismatched_gemm' \(Gemm\)" "$infera" run "$models/bad_shape_mismatch.onnx" --input "x=$work/x23.npy"
# the model editor (quantize, prune, distill) checks the wire format before protobuf-c, as the loader does:
# subgraphs nested 100 deep are refused (60000 deep crashed protobuf-c's recursion)
python3 -c '
import sys
def varint(n):
    out = b""
    while True:
        b, n = n & 0x7f, n >> 7
        if not n: return out + bytes([b])
        out += bytes([b | 0x80])
ld = lambda f, p: varint(f << 3 | 2) + varint(len(p)) + p
g = b""
for _ in range(100): g = ld(1, ld(5, ld(6, g)))  # GraphProto.node -> NodeProto.attribute -> AttributeProto.g
open(sys.argv[1], "wb").write(varint(8) + varint(8) + ld(7, g))' "$work/deep.onnx"
expect_error "quantize: subgraphs nested too deep" "deep.onnx: subgraphs .* nested more than 64 levels deep" \
    "$infera" quantize "$work/deep.onnx" -o "$work/dq.onnx"
expect_error "prune: subgraphs nested too deep" "deep.onnx: subgraphs .* nested more than 64 levels deep" \
    "$infera" prune "$work/deep.onnx" -o "$work/dp.onnx" --sparsity 0.5
# files mistaken for ONNX models are named for what they are
expect_error "a GGUF file as a model" "austen-draft-q8_0.gguf: not an ONNX model but a GGUF file" \
    "$infera" run "$models/../llm/models/austen-draft-q8_0.gguf"
"$infera" compile "$mlp" -o "$work/m.infb" >/dev/null
expect_error "a bundle to quantize" "m.infb: not an ONNX model but a compiled bundle" "$infera" quantize "$work/m.infb" -o "$work/q.onnx"
expect_error "unknown command" "unknown command 'frobnicate'" "$infera" frobnicate
expect_error "unknown option" "unknown option '--bogus'" "$infera" run "$mlp" --bogus
# a stray word is an unexpected argument, not an "unknown option", in every command (cli_unexpected)
expect_error "batch: stray argument" "unexpected argument 'extra'" "$infera" batch extra --input a.csv --output b.csv
expect_error "stream: stray argument" "unexpected argument 'extra'" "$infera" stream extra
expect_error "features: stray argument" "unexpected argument 'extra'" "$infera" features --spec s.json extra
expect_error "monitor: second model" "unexpected argument 'extra'" "$infera" monitor drift "$mlp" extra
expect_error "serve: unknown option" "unknown option '--bogus'" "$infera" serve --bogus
expect_error "bad thread count" "--threads expects a whole number" "$infera" run "$mlp" --threads zero
expect_error "bad output format" "--output-format must be npy or pb" "$infera" run "$mlp" --output-format csv
expect_error "bad conformance suite" "--suite must be" "$infera" conformance --suite nosuch
# an output that cannot be written: the error says why (DESIGN.md §4: "naming what failed and why")
expect_error "compile to a missing folder" "cannot write '$work/no/dir/m.infb': No such file or directory" \
    "$infera" compile "$mlp" -o "$work/no/dir/m.infb"
expect_error "quantize to a missing folder" "cannot write $work/no/dir/q.onnx: No such file or directory" \
    "$infera" quantize "$mlp" -o "$work/no/dir/q.onnx"
expect_error "prune to a missing folder: the path once" "^infera prune: cannot write $work/no/dir/p.onnx: No such file or directory$" \
    "$infera" prune "$mlp" -o "$work/no/dir/p.onnx" --sparsity 0.5
expect_error "prune without --sparsity names it" "missing --sparsity S" "$infera" prune "$mlp" -o "$work/p.onnx"
expect_error "distill without --data names it" "missing --data SRC" "$infera" distill --teacher "$mlp" --student mlp:4 -o "$work/d.onnx"
expect_error "monitor baseline to a missing folder" "cannot write $work/no/dir/b.json: No such file or directory" \
    "$infera" monitor baseline "$mlp" --data "csv:$work/cal.csv" -o "$work/no/dir/b.json"

# EyeLike's k = 2^63 - 1 puts the diagonal outside the matrix: all zeros (row + k overflowed)
if "$infera" run "$models/eyelike_huge_k.onnx" --input "x=$work/x23.npy" >"$work/out" 2>&1 &&
    grep -qxF 'y: float32[2,3] [0, 0, 0, 0, 0, 0]' "$work/out"; then
    ok "EyeLike far diagonal"
else
    bad "EyeLike far diagonal: $(head -c 300 "$work/out")"
fi
# Resize tf_crop_and_resize with a roi of 1e30: all extrapolated (the source coordinate's int64 conversion was UB)
if "$infera" run "$models/resize_far_roi.onnx" --input "x=$work/x23.npy" >"$work/out" 2>&1 &&
    grep -qxF 'y: float32[4,6] [7, 7, 7, 7, 7, 7, 7, 7, 7, 7, ...]' "$work/out"; then
    ok "Resize roi far outside"
else
    bad "Resize roi far outside: $(head -c 300 "$work/out")"
fi
# SplitToSequence with a chunk of 2^63 - 1: one chunk, the whole input (dim + chunk - 1 overflowed)
if "$infera" run "$models/split_to_sequence_huge_chunk.onnx" --input "x=$work/x23.npy" >"$work/out" 2>&1 &&
    grep -qxF 'y: seq(float32) of 1 [float32[2,3]]' "$work/out"; then
    ok "SplitToSequence huge chunk"
else
    bad "SplitToSequence huge chunk: $(head -c 300 "$work/out")"
fi
# CenterCropPad padding an empty [0, 2^47] input to [2^20, 1]: zeros (a padded element's source offset overflowed)
make_npy "$work/empty_wide.npy" '<f4' '(0, 140737488355328)' 0
if "$infera" run "$models/center_crop_pad_empty_huge.onnx" --input "x=$work/empty_wide.npy" >"$work/out" 2>&1 &&
    grep -qxF 'y: float32[1048576,1] [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, ...]' "$work/out"; then
    ok "CenterCropPad of an empty input"
else
    bad "CenterCropPad of an empty input: $(head -c 300 "$work/out")"
fi
# TfIdfVectorizer's max_skip_count = 2^62 counts as any gap wider than the row (it looped for ever);
# expected: ONNX's node test tfidfvectorizer_tf_batch_onlybigrams_skip5
if timeout 60 "$infera" run "$models/tfidf_huge_skip.onnx" --input "x=$models/tfidf_huge_skip_input.pb" --output-dir "$work/tfidf" >/dev/null 2>"$work/err" &&
    [ "$(tail -c 56 "$work/tfidf/y.npy" | od -An -tf4 -v | xargs echo)" = "0 0 0 0 0 0 0 0 0 0 0 1 1 1" ]; then
    ok "TfIdfVectorizer huge max_skip_count"
else
    bad "TfIdfVectorizer huge max_skip_count: $(head -c 300 "$work/err")"
fi
# ... and a row of 50,000 with such gaps is quadratic work (seconds): it stops at the run's time budget
make_npy "$work/tfidf_long.npy" '<i4' '(1, 50000)' 200000
expect_error "TfIdfVectorizer stops at the time budget" "node 'wide_skip': the run exceeded its time budget of 100 ms" timeout 60 "$infera" run "$models/tfidf_huge_skip.onnx" --input "x=$work/tfidf_long.npy" --max-run-ms 100
# run prints each output's name, dtype, shape and leading values
if "$infera" run "$mlp" --input "$models/mlp_input.npy" >"$work/out" 2>&1 &&
    grep -qE '^logits: float32\[4,2\] \[-?[0-9]' "$work/out" && grep -qE '^probabilities: float32\[4,2\]' "$work/out"; then
    ok "run prints outputs"
else
    bad "run prints outputs: $(cat "$work/out")"
fi
# .pb output format writes TensorProto files that read back as the same values
if "$infera" run "$mlp" --input "$models/mlp_input.pb" --output-dir "$work/pb" --output-format pb &&
    [ -s "$work/pb/logits.pb" ] && [ -s "$work/pb/probabilities.pb" ] &&
    "$infera" run "$mlp" --input "$models/mlp_input.pb" --output-dir "$work/npy" &&
    [ -s "$work/npy/logits.npy" ]; then
    ok "run writes .pb and .npy outputs"
else
    bad "run writes .pb and .npy outputs"
fi
# info names inputs, outputs, opsets, ops and parameters
if "$infera" info "$mlp" >"$work/out" && grep -q 'input .*float32\[batch,32\]' "$work/out" &&
    grep -q 'ai.onnx=13' "$work/out" && grep -qE 'Gemm +3' "$work/out" && grep -q 'parameters: 6402' "$work/out"; then
    ok "info"
else
    bad "info: $(cat "$work/out")"
fi
if "$infera" info "$mlp" --json | grep -q '"parameters":6402'; then ok "info --json"; else bad "info --json"; fi
# info shows the graph after optimisation: Conv + Relu fused, residual Adds folded into ConvAdd, the stem's
# Conv + Relu + MaxPool one ConvMaxPool
if "$infera" info "$models/cnn.onnx" >"$work/out" && grep -qE '^  Conv\+Relu +2$' "$work/out" &&
    grep -qE '^  ConvAdd\+Relu +2$' "$work/out" && grep -qE '^  ConvMaxPool\+Relu +1$' "$work/out" &&
    ! sed -n '/after optimisation/,$p' "$work/out" | grep -qE '^  (Relu|Add|MaxPool) ' &&
    "$infera" info "$models/cnn.onnx" --json | grep -q '"ops_optimized":{"ConvMaxPool+Relu":1,"Conv+Relu":2,"ConvAdd+Relu":2'; then
    ok "info lists the optimised ops"
else
    bad "info optimised ops: $(cat "$work/out")"
fi
# bench --json prints every field of the contract
if "$infera" bench "$mlp" --iters 20 --warmup 2 --json >"$work/out"; then
    missing=""
    for key in model threads batch iters load_ms first_run_ms latency_us mean p50 p90 p99 throughput_rows_per_s peak_rss_mb; do
        grep -q "\"$key\"" "$work/out" || missing="$missing $key"
    done
    if [ -z "$missing" ]; then ok "bench --json fields"; else bad "bench --json lacks:$missing"; fi
else
    bad "bench --json failed"
fi
if "$infera" bench "$mlp" --iters 5 --threads 2 --input "input=$models/mlp_input.npy" | grep -q 'batch        4'; then
    ok "bench with an input file"
else
    bad "bench with an input file"
fi
# bench --profile: per-node table (Loop body nodes as PARENT/BODY/NAME, called 4 times a run), op summary, JSON array
loop_model="$models/profile_loop.onnx"
if "$infera" bench "$loop_model" --iters 7 --warmup 1 --profile >"$work/out" &&
    grep -q '^profile      7 runs' "$work/out" && grep -qE '^  loop/body/body_add +Add +2x3 +28 ' "$work/out" &&
    grep -qE '^  mul +Mul +2x3 +7 ' "$work/out" && grep -qE '^  Loop +1 +7 ' "$work/out"; then
    ok "bench --profile table"
else
    bad "bench --profile table: $(head -c 1500 "$work/out")"
fi
if "$infera" bench "$loop_model" --iters 7 --warmup 1 --json --profile >"$work/out" &&
    grep -q '"node":"body_add","op":"Add","parent":"loop","graph":"body","shape":\[2,3\],"calls":28,' "$work/out" &&
    grep -q '"peak_rss_mb":[0-9.]*,"profile":\[' "$work/out" &&
    python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert len(d["profile"]) == 4 and d["latency_us"]["mean"] > 0' "$work/out" &&
    "$infera" bench "$loop_model" --iters 2 --json | grep -qv '"profile"'; then
    ok "bench --json --profile"
else
    bad "bench --json --profile: $(head -c 1500 "$work/out")"
fi
if "$infera" help run | grep -q -- '--output-dir' && "$infera" run --help | grep -q -- '--output-format'; then
    ok "help"
else
    bad "help"
fi
# docs/operators.md is generated from the op table and must be current
doc=$(dirname "$0")/../../docs/operators.md
if "$infera" ops --markdown | cmp -s - "$doc"; then
    ok "docs/operators.md matches the op table"
else
    bad "docs/operators.md is stale: run scripts/gen-operators-doc.sh"
fi
check_done
