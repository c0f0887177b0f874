#!/usr/bin/env bash
# bench/edge/run.sh -- edge inference numbers for docs/edge.md (issue 22):
#   1. load to first result, in process: ONNX vs bundle (bench_edge_load.c), bench MLP, CNN, encoder;
#      the bundles' load to first result by phase (bench_edge_phases.c)
#   2. cold start, process start -> first prediction: `infera run` on ONNX vs bundle
#   3. cold start to ready: `infera serve --model X` until /v2/health/ready answers 200
#   4. peak RSS of `infera bench --iters 1` on each form
#   5. the stripped size of examples/edge's program (libinfera_edge.a + the compiled model)
# Usage: bench/edge/run.sh [REPS]   (needs build/ with infera, libinfera.a, libinfera_edge.a)
set -euo pipefail
cd "$(dirname "$0")/../.."
reps=${1:-21}
infera=$PWD/build/infera
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"; [ -n "${srv:-}" ] && kill "$srv" 2>/dev/null || true' EXIT
echo "== machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'), $(nproc) cores;" \
     "flags: $(grep -m1 '^flags' /proc/cpuinfo | grep -o 'avx2\|avx512f\|avx512vnni' | sort -u | tr '\n' ' ')"
[ -f bench/models/mlp.onnx ] || /usr/bin/python3 bench/gen_bench_models.py >/dev/null
for m in mlp cnn bert; do "$infera" compile "bench/models/$m.onnx" -o "$tmp/$m.bundle" >/dev/null; done
ls -l bench/models/{mlp,cnn,bert}.onnx "$tmp"/*.bundle | awk '{print "   ", $5, $9}'

echo "== 1. load to first result, in process (median of $reps, interleaved; wall and CPU time)"
cc -O2 -Iinclude bench/edge/bench_edge_load.c -Wl,--whole-archive build/libinfera.a -Wl,--no-whole-archive \
   -lprotobuf-c -lcjson -lpcre2-8 -lpthread -lm -o "$tmp/bench_edge_load"
# wall time; CPU time (user + system: page faults included, waits not); CPU time of the first load of a
# fresh process (--fork: no earlier load has warmed the allocator or the one-time set-up)
for how in "" --cpu-time "--cpu-time --fork"; do
  "$tmp/bench_edge_load" --reps "$reps" $how bench/models/mlp.onnx "$tmp/mlp.bundle" bench/models/cnn.onnx \
     "$tmp/cnn.bundle" bench/models/bert.onnx "$tmp/bert.bundle"
done
cc -O2 -Iinclude bench/edge/bench_edge_phases.c -Wl,--whole-archive build/libinfera.a -Wl,--no-whole-archive \
   -lprotobuf-c -lcjson -lpcre2-8 -lpthread -lm -o "$tmp/bench_edge_phases"
for m in mlp cnn bert; do "$tmp/bench_edge_phases" --reps "$reps" "$tmp/$m.bundle" "bench/models/$m.onnx"; done

echo "== 2. cold start: process start -> first prediction (infera run, median of $reps, interleaved)"
/usr/bin/python3 - "$tmp" <<'PY'
import sys, numpy as np
d = sys.argv[1]
for name, shape in (("mlp", (1, 64)), ("cnn", (1, 3, 64, 64)), ("bert", (1, 128, 256))):
    np.save("%s/%s_in.npy" % (d, name), np.random.default_rng(0).standard_normal(shape).astype(np.float32))
PY
ms() { local t0 t1; t0=$(date +%s%N); "$@" >/dev/null 2>&1; t1=$(date +%s%N); echo $(( (t1 - t0) / 1000 )); }
median() { sort -n | awk '{a[NR]=$1} END {printf "%.2f", a[int((NR+1)/2)]/1000}'; }
for m in mlp cnn bert; do
  input=$("$infera" info "bench/models/$m.onnx" | awk '/^inputs:/{getline; print $1}')
  : > "$tmp/o"; : > "$tmp/b"
  for r in $(seq "$reps"); do
    ms "$infera" run "bench/models/$m.onnx" --input "$input=$tmp/${m}_in.npy" >> "$tmp/o"
    ms "$infera" run "$tmp/$m.bundle" --input "$input=$tmp/${m}_in.npy" >> "$tmp/b"
  done
  o=$(median < "$tmp/o"); b=$(median < "$tmp/b")
  echo "   $m: onnx $o ms, bundle $b ms, ratio $(awk -v a="$b" -v b="$o" 'BEGIN{printf "%.2f", a/b}')"
done

echo "== 3. cold start to ready: infera serve (median of 5, interleaved)"
port=$(( 20000 + RANDOM % 20000 ))
serve_ready() {
  local t0 t1; t0=$(date +%s%N)
  "$infera" serve --port "$port" --model "m=$1" >/dev/null 2>&1 & srv=$!
  until curl -sf "http://127.0.0.1:$port/v2/health/ready" >/dev/null 2>&1; do sleep 0.002; done
  t1=$(date +%s%N); kill "$srv"; wait "$srv" 2>/dev/null || true; srv=
  echo $(( (t1 - t0) / 1000 ))
}
for m in mlp cnn bert; do
  : > "$tmp/o"; : > "$tmp/b"
  for r in 1 2 3 4 5; do serve_ready "bench/models/$m.onnx" >> "$tmp/o"; serve_ready "$tmp/$m.bundle" >> "$tmp/b"; done
  echo "   $m: onnx $(median < "$tmp/o") ms, bundle $(median < "$tmp/b") ms"
done

echo "== 4. peak RSS (infera bench --iters 1 --warmup 0)"
for m in mlp cnn bert; do
  o=$("$infera" bench "bench/models/$m.onnx" --iters 1 --warmup 0 --json | grep -o '"peak_rss_mb":[0-9.]*' | cut -d: -f2)
  b=$("$infera" bench "$tmp/$m.bundle" --iters 1 --warmup 0 --json | grep -o '"peak_rss_mb":[0-9.]*' | cut -d: -f2)
  echo "   $m: onnx $o MB, bundle $b MB"
done

echo "== 5. examples/edge program size"
tests/edge/test_example.sh "$infera" build/libinfera_edge.a | tail -1
