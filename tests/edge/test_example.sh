#!/usr/bin/env bash
# test_example.sh INFERA EDGE_LIB [CFLAGS] -- builds examples/edge/ with its plain
# Makefile (the model compiled in with `infera compile --c-source`, linked
# with libinfera_edge.a), runs it on the sample windows and compares the
# scores with PyTorch's (examples/edge/sample_scores.txt, written by
# train.py: the oracle), within 1e-5.  Prints the stripped program's size and
# guards it (issue 22's target): the stripped program, bundle included, must
# stay within 300 KiB plus the model's weights (its FP32 parameters x 4 bytes,
# from `infera info`); an optimised build that grows past that fails.
set -euo pipefail
. "$(dirname "$0")/../check.sh"
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
abs() { echo "$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"; }
infera=$(abs "$1")
edge_lib=$(abs "$2")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# the minimal runtime needs neither protobuf-c nor cJSON
if nm -u "$edge_lib" 2>/dev/null | grep -E ' (protobuf_c_|cJSON_)' | head -3 | grep -q .; then
  bad "libinfera_edge.a refers to protobuf-c or cJSON"
  check_done
fi
ok "libinfera_edge.a has no protobuf-c or cJSON references"
make -s -C "$root/examples/edge" O="$tmp" INFERA="$infera" EDGE_LIB="$edge_lib" CFLAGS="${3:--O2}" all strip >/dev/null
"$tmp/anomaly_demo" --scores "$root/examples/edge/sample_windows.csv" > "$tmp/scores.txt"
"$tmp/anomaly_demo" "$root/examples/edge/sample_windows.csv" | tail -1
if /usr/bin/python3 - "$tmp/scores.txt" "$root/examples/edge/sample_scores.txt" "$root/examples/edge/sample_windows.csv" >"$tmp/cmp.txt" 2>&1 <<'PY'
import sys
got = [float(x) for x in open(sys.argv[1])]
want = [float(x) for x in open(sys.argv[2])]
labels = [int(l.split(",")[0]) for l in open(sys.argv[3])]
assert len(got) == len(want) == len(labels), "window counts differ: %d %d %d" % (len(got), len(want), len(labels))
worst = max(abs(g - w) for g, w in zip(got, want))
agree = sum((g > 0.5) == bool(l) for g, l in zip(got, labels))
print("%d scores vs PyTorch: max abs diff %.3g; %d of %d windows classified as labelled" % (len(got), worst, agree, len(got)))
sys.exit(0 if worst <= 1e-5 else 1)
PY
then ok "$(cat "$tmp/cmp.txt")"; else bad "scores vs PyTorch" "$(cat "$tmp/cmp.txt")"; fi
stripped=$(stat -c %s "$tmp/anomaly_demo.stripped")
bundle=$(grep -o 'unsigned char bundle_data\[[0-9]*\]' "$tmp/anomaly_model.c" | grep -o '[0-9]*')
ok "stripped anomaly_demo: $stripped bytes, of which the bundle is $bundle bytes ($(( (stripped - bundle) / 1024 )) KiB + the bundle)"
params=$("$infera" info "$root/examples/edge/anomaly.onnx" | awk '/^parameters:/{print $2}')
limit=$(( 300 * 1024 + 4 * params ))
case "${3:--O2}" in
  *-fsanitize*|*-O0*) ok "size guard not applied to an instrumented or unoptimised build (${3})" ;;
  *) if [ -n "$params" ] && [ "$stripped" -le "$limit" ]; then
       ok "size guard: $stripped <= $limit bytes (300 KiB + $params FP32 weights)"
     else
       bad "size guard: the stripped program (bundle included) is $stripped bytes, more than $limit" \
           "300 KiB + ${params:-?} FP32 weights x 4 bytes; issue 22's target"
     fi ;;
esac
check_done
