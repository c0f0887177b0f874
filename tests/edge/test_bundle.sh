#!/usr/bin/env bash
# test_bundle.sh TEST_BUNDLE INFERA -- bundles vs their ONNX models, bit for bit
# (tests/edge/test_bundle.c), on the test models and the bench MLP/CNN/encoder,
# then the CLI path: `infera compile` + `infera run` on a bundle against the
# ONNX Runtime outputs committed beside the test models.
set -euo pipefail
. "$(dirname "$0")/../check.sh"
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
test_bundle=$1
infera=$(cd "$(dirname "$2")" && pwd)/$(basename "$2")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

models=()
for m in "$root"/tests/models/*.onnx "$root"/tests/models/{memplan,unseen,subbatch,ort_qdq}/*.onnx \
         "$root"/tests/ml/data/*.onnx "$root"/tests/pipeline/data/*.onnx; do
  case "$(basename "$m")" in bad_*) continue ;; esac
  models+=("$m")
done
# subgraphs (If, Loop, Scan, SequenceMap) and sequence/optional values, from the ONNX backend test data
node=/usr/share/libonnx-testdata/data/node
for t in test_if test_if_seq test_if_opt test_loop11 test_loop13_seq test_scan9_sum test_scan_sum \
         test_sequence_map_add_2_sequences test_optional_has_element test_range_float_type_positive_delta_expanded; do
  [ -f "$node/$t/model.onnx" ] && models+=("$node/$t/model.onnx")
done
if [ ! -f "$root/bench/models/mlp.onnx" ] && /usr/bin/python3 -c 'import torch' 2>/dev/null; then
  /usr/bin/python3 "$root/bench/gen_bench_models.py" >/dev/null
fi
for b in mlp cnn bert; do
  [ -f "$root/bench/models/$b.onnx" ] && models+=("$root/bench/models/$b.onnx")
done
"$test_bundle" "${models[@]}"

# CLI: compile, run the bundle, compare with ONNX Runtime's outputs (the oracle) and with the ONNX run.
for m in mlp cnn; do
  "$infera" compile "$root/tests/models/$m.onnx" -o "$tmp/$m.bundle" >/dev/null
  "$infera" run "$tmp/$m.bundle" --input "input=$root/tests/models/${m}_input.npy" --output-dir "$tmp/b_$m" >/dev/null
  "$infera" run "$root/tests/models/$m.onnx" --input "input=$root/tests/models/${m}_input.npy" --output-dir "$tmp/o_$m" >/dev/null
  for ref in "$root"/tests/models/${m}_*.ort.npy; do
    out=$(basename "$ref" .ort.npy); out=${out#${m}_}
    if /usr/bin/python3 "$root/tests/models/check_outputs.py" "$tmp/b_$m/$out.npy" "$ref"; then
      ok "$m bundle $out vs ONNX Runtime"
    else bad "$m bundle $out vs ONNX Runtime"; fi
    if cmp -s "$tmp/b_$m/$out.npy" "$tmp/o_$m/$out.npy"; then
      ok "$m bundle $out == ONNX model (bytes)"
    else bad "$m bundle $out differs from the ONNX model"; fi
  done
done
# format 2 keeps GEMM weights as their packed panels only: a CPU without AVX2 (INFERA_CPU=generic) gets the matrix
# back at load, one with AVX2 but not AVX-512 uses the panels, bf16 precision unpacks them to pack its own; each
# must equal the ONNX model's bytes on the same path.  Recompiling the bundle writes the panels again (x86) or the
# plain matrix (aarch64: the same bundle as from the ONNX model but for the checksums and the source size).
for b in mlp anomaly; do
  src=$root/tests/models/mlp.onnx in=input=$root/tests/models/mlp_input.npy
  if [ $b = anomaly ]; then
    src=$root/examples/edge/anomaly.onnx in=window=$tmp/anomaly_in.npy
    /usr/bin/python3 -c 'import numpy as np, sys; np.save(sys.argv[1], np.linspace(-1, 1, 64 * 5, dtype=np.float32).reshape(5, 64))' "${in#window=}"
  fi
  "$infera" compile "$src" -o "$tmp/p_$b.bundle" >/dev/null
  "$infera" compile "$tmp/p_$b.bundle" -o "$tmp/p2_$b.bundle" >/dev/null
  sole=$("$infera" info "$tmp/p_$b.bundle" | sed -n 's/.*(\([0-9]*\) as panels only).*/\1/p')
  want_sole=1; [ "$(uname -m)" = aarch64 ] && want_sole=0
  if [ "$want_sole" = 1 ] && ! grep -q avx2 /proc/cpuinfo; then want_sole=0; fi
  if [ "$want_sole" = 0 ] || [ "${sole:-0}" -gt 0 ]; then ok "$b bundle: ${sole:-0} weight matrices as panels only"
  else bad "$b bundle stores no weight matrix as panels only"; fi
  for cpu in "" generic avx2 bf16; do
    env=(); opt=()
    [ -n "$cpu" ] && [ "$cpu" != bf16 ] && env=(INFERA_CPU=$cpu)
    if [ "$cpu" = bf16 ]; then
      opt=(--precision bf16)
      "$infera" run "$src" "${opt[@]}" --input "$in" >/dev/null 2>&1 || continue # no AVX512_BF16 here
    fi
    for f in "$src" "$tmp/p_$b.bundle" "$tmp/p2_$b.bundle"; do
      rm -rf "$tmp/r_$(basename "$f")"
      env "${env[@]}" "$infera" run "$f" "${opt[@]}" --input "$in" --output-dir "$tmp/r_$(basename "$f")" >/dev/null
    done
    same=1
    for o in "$tmp/r_$(basename "$src")"/*.npy; do
      for f in "p_$b.bundle" "p2_$b.bundle"; do cmp -s "$o" "$tmp/r_$f/$(basename "$o")" || same=0; done
    done
    if [ "$same" = 1 ]; then ok "$b panels-only bundle and its recompile == ONNX model (bytes) on ${cpu:-this CPU}"
    else bad "$b panels-only bundle differs from the ONNX model on ${cpu:-this CPU}"; fi
  done
  other=aarch64; [ "$(uname -m)" = aarch64 ] && other=x86_64
  "$infera" compile "$src" -o "$tmp/a1_$b.bundle" --target $other >/dev/null
  "$infera" compile "$tmp/p_$b.bundle" -o "$tmp/a2_$b.bundle" --target $other >/dev/null
  ndiff=$(cmp -l "$tmp/a1_$b.bundle" "$tmp/a2_$b.bundle" | awk '$1 > 64 {n++} END {print n + 0}') || true
  if [ "$(stat -c %s "$tmp/a1_$b.bundle")" = "$(stat -c %s "$tmp/a2_$b.bundle")" ] && [ "$ndiff" -le 8 ]; then
    ok "$b: the $other bundle from the panels-only bundle == the one from the ONNX model ($ndiff bytes of source size)"
  else bad "$b: the $other bundle from the bundle differs ($ndiff bytes)"; fi
done
# channels-last Convs (graph/passes/channels_last.c) are an x86 CPU's choice: the bundle keeps them and runs on every
# x86 path -- a kernel that does not take a layout computes between transposes -- with the ONNX model's bytes on each
# path; a bundle for aarch64 leaves them out (its graph stays channels-first throughout)
if [ "$(uname -m)" = x86_64 ] && grep -q avx2 /proc/cpuinfo; then
  cl=$root/tests/models/channels_last.onnx
  "$infera" compile "$cl" -o "$tmp/cl.bundle" --max-batch 2 >/dev/null
  "$infera" compile "$cl" -o "$tmp/cl_a64.bundle" --target aarch64 >/dev/null
  # the attribute's name, standalone (the graph is named channels_last too: one more)
  count='import re, sys; print(len(re.findall(rb"(?<![_/])channels_last(?![_.])", open(sys.argv[1], "rb").read())))'
  n86=$(/usr/bin/python3 -c "$count" "$tmp/cl.bundle") na64=$(/usr/bin/python3 -c "$count" "$tmp/cl_a64.bundle")
  if [ "$n86" -gt 2 ] && [ "$na64" = 1 ]; then
    ok "channels-last Convs kept in the x86-64 bundle ($((n86 - 1))), left out of the aarch64 one"
  else bad "channels_last attributes: x86-64 bundle $n86 names, aarch64 $na64 (the graph's name: 1)"; fi
  /usr/bin/python3 -c 'import numpy as np, sys; np.save(sys.argv[1], np.random.RandomState(6).uniform(-2, 2, (2, 3, 24, 26)).astype(np.float32))' "$tmp/cl_in.npy"
  for cpu in "" avx2 generic; do
    env=(); [ -n "$cpu" ] && env=(INFERA_CPU=$cpu)
    rm -rf "$tmp/cl_o" "$tmp/cl_b"
    env "${env[@]}" "$infera" run "$cl" --input "x=$tmp/cl_in.npy" --output-dir "$tmp/cl_o" >/dev/null
    env "${env[@]}" "$infera" run "$tmp/cl.bundle" --input "x=$tmp/cl_in.npy" --output-dir "$tmp/cl_b" >/dev/null
    same=1
    for o in "$tmp/cl_o"/*.npy; do cmp -s "$o" "$tmp/cl_b/$(basename "$o")" || same=0; done
    if [ "$same" = 1 ]; then ok "channels-last bundle == ONNX model (bytes) on ${cpu:-this CPU}"
    else bad "channels-last bundle differs from the ONNX model on ${cpu:-this CPU}"; fi
  done
fi
# batch: the same rows, predictions and lineage stamp (model_version = the source's SHA-256) from the bundle
/usr/bin/python3 - "$tmp/in.csv" <<'PY'
import random, sys
random.seed(7)
with open(sys.argv[1], "w") as f:
    f.write("id," + ",".join("f%d" % i for i in range(32)) + "\n")
    for r in range(50):
        f.write(str(r) + "," + ",".join("%.5f" % random.uniform(-2, 2) for _ in range(32)) + "\n")
PY
(cd "$tmp" && "$infera" batch --model "$root/tests/models/mlp.onnx" --input csv:in.csv --output csv:onnx.csv --id-column id >/dev/null 2>&1 &&
  "$infera" batch --model mlp.bundle --input csv:in.csv --output csv:bundle.csv --id-column id >/dev/null 2>&1)
if [ -s "$tmp/onnx.csv" ] && diff <(cut -d, -f1-8 "$tmp/onnx.csv") <(cut -d, -f1-8 "$tmp/bundle.csv") >/dev/null; then
  ok "batch on the bundle == batch on the ONNX model (predictions and model_version)"
else bad "batch outputs differ"; fi
# a pipeline spec travels inside the bundle: the fraud example (spec with a SQLite lookup), scored from raw records
mkdir -p "$tmp/fraud" && cp "$root"/examples/fraud/{fraud_xgb.onnx,fraud_spec.json,card_features.db,transactions_raw.csv} "$tmp/fraud/"
cp "$tmp/fraud/fraud_spec.json" "$tmp/fraud/fraud_xgb.pipeline.json"
(cd "$tmp/fraud" && "$infera" compile fraud_xgb.onnx -o fraud_xgb.bundle | grep -q "with pipeline spec" &&
  rm fraud_xgb.pipeline.json && mv fraud_xgb.onnx plain.onnx && cp fraud_spec.json plain.pipeline.json &&
  "$infera" batch --model plain.onnx --input csv:transactions_raw.csv --output csv:onnx.csv >/dev/null 2>&1 &&
  "$infera" batch --model fraud_xgb.bundle --input csv:transactions_raw.csv --output csv:bundle.csv >/dev/null 2>&1) || true
if [ -s "$tmp/fraud/bundle.csv" ] && diff <(cut -d, -f1-4,6-7 "$tmp/fraud/onnx.csv") <(cut -d, -f1-4,6-7 "$tmp/fraud/bundle.csv") >/dev/null; then
  ok "the bundle's own pipeline spec scores raw records as the spec beside the ONNX model does ($(($(wc -l < "$tmp/fraud/bundle.csv") - 1)) rows)"
else bad "bundle with pipeline spec: outputs differ or missing"; fi
# evaluate: the same metrics from the bundle (the example's anomaly model on its labelled sample windows)
(echo "label,$(seq -s, -f 'f%g' 0 63)"; cat "$root/examples/edge/sample_windows.csv") > "$tmp/ev.csv"
"$infera" compile "$root/examples/edge/anomaly.onnx" -o "$tmp/anomaly.bundle" >/dev/null
mo=$("$infera" evaluate "$root/examples/edge/anomaly.onnx" --data "csv:$tmp/ev.csv" --label label --json | grep -o '"metrics":{[^}]*}')
mb=$("$infera" evaluate "$tmp/anomaly.bundle" --data "csv:$tmp/ev.csv" --label label --json | grep -o '"metrics":{[^}]*}')
if [ -n "$mo" ] && [ "$mo" = "$mb" ]; then ok "evaluate on the bundle == on the ONNX model: $mb"
else bad "evaluate differs: '$mo' vs '$mb'"; fi
# a bundle for another target is refused by the CLI with the file named
other=aarch64; [ "$(uname -m)" = aarch64 ] && other=x86_64
"$infera" compile "$root/tests/models/mlp.onnx" -o "$tmp/other.bundle" --target $other >/dev/null
if msg=$("$infera" info "$tmp/other.bundle" 2>&1); then bad "info accepted a $other bundle"
elif [[ $msg == *other.bundle*"compiled for target $other"* ]]; then ok "$other bundle refused: $msg"
else bad "unclear refusal: $msg"; fi
# --c-source writes a C array + accessor that compiles
"$infera" compile "$root/tests/models/mlp.onnx" -o "$tmp/mlp_model.c" --c-source >/dev/null
if cc -std=c11 -Wall -Wextra -Werror -c "$tmp/mlp_model.c" -o "$tmp/mlp_model.o" && nm "$tmp/mlp_model.o" | grep -q ' T infera_bundle_mlp_model$'; then
  ok "--c-source compiles and exports infera_bundle_mlp_model"
else bad "--c-source output"; fi
# a bundle whose ConstantOfShape asks for 16 TiB (fuzz_bundle finding): a clean error from the memory guard, also
# when ASan would abort instead of returning NULL from malloc (allocator_may_return_null=0 for this run)
huge=$root/tests/fuzz/regressions/memplan-huge-output.bundle
printf '\x93NUMPY\x01\x00\x76\x00{"descr": "<f4", "fortran_order": False, "shape": (1,), }%*s\n\x00\x00\x80\x3f' 60 '' > "$tmp/one.npy"
msg=$(ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}allocator_may_return_null=0 "$infera" run "$huge" --input "x=$tmp/one.npy" 2>&1 >/dev/null) && rc=0 || rc=$?
if [ "$rc" = 1 ] && grep -q "more than the session's memory limit" <<<"$msg"; then
  ok "a 16 TiB output is refused before malloc: $msg"
else bad "huge output: rc $rc: $msg"; fi
check_done
