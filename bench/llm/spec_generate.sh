#!/usr/bin/env bash
# bench/llm/spec_generate.sh -- speculative decoding measured in one process (bench/spec_trace --generate): per
# target of the Austen pair, inf_llm_generate of TOKENS greedy tokens (no stop token) alone and with the Q8_0
# draft at each entry of KS (K fixed, or "aK": the adaptive draft length of src/llm/generate.c, at most K), the
# runs interleaved, ROUNDS rounds, thread CPU time (loading and the prompt excluded), on the four reference
# prompts.  Prints per (target, K) the sums over the prompts of the minimum alone / speculative times, the
# speed-up (alone / speculative), the median round's speed-up and the acceptance, with the load average.
# The F32 target and the Q4_0 draft come from make_models.py into the cache, as in speculative.sh.
# Usage: bench/llm/spec_generate.sh [BUILD_DIR]   TARGETS="f32 q8_0 q4_0" KS="2,3,4,5,a8" TOKENS=256 ROUNDS=5
set -euo pipefail
cd "$(dirname "$0")/../.."
BUILD=${1:-build}
TARGETS=${TARGETS:-"f32 q8_0 q4_0"}
KS=${KS:-"2,3,4,5,a8"}
TOKENS=${TOKENS:-256}
ROUNDS=${ROUNDS:-5}
DRAFT=${DRAFT:-q8_0}
. bench/llm/austen_pair.sh # M, F32_DIR (the F32 target, the Q4_0 draft), PROMPTS
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
echo "CPU: $("$BUILD/infera" info --cpu 2>/dev/null | head -3 | tr '\n' ' ')"
echo "$TOKENS tokens x ${#PROMPTS[@]} prompts, $ROUNDS rounds interleaved, thread CPU time; load at start: $(cut -d' ' -f1-3 /proc/loadavg)"
for tt in $TARGETS; do
  T=$M/austen-target-$tt.gguf
  [ "$tt" = f32 ] && T=$F32_DIR/austen-target-f32.gguf
  : >"$TMP/$tt.jsonl"
  for p in "${PROMPTS[@]}"; do
    "$BUILD/bench/spec_trace" "$T" "$M/austen-draft-$DRAFT.gguf" --prompt "$p" --tokens "$TOKENS" --generate "$KS" \
      --rounds "$ROUNDS" >>"$TMP/$tt.jsonl"
  done
  python3 - "$TMP/$tt.jsonl" "$tt" "$(cut -d' ' -f1-3 /proc/loadavg)" <<'PY'
import json, sys
rows = [json.loads(l)["generate"] for l in open(sys.argv[1]) if l.strip()]
by = {}
for r in rows:
    by.setdefault(r["k"], []).append(r)
print("target %-5s (load at end %s)" % (sys.argv[2], sys.argv[3]))
print("  %-4s %10s %10s %8s %14s %11s  per prompt" % ("K", "alone ms", "spec ms", "speed-up", "median speedup", "acceptance"))
for k, rs in by.items():
    a = sum(r["alone_ms"] for r in rs); s = sum(r["spec_ms"] for r in rs)
    med = sum(r["median_speedup"] for r in rs) / len(rs); acc = sum(r["acceptance"] for r in rs) / len(rs)
    print("  %-4s %10.1f %10.1f %7.2fx %13.2fx %11.3f  %s" % (k, a, s, a / s, med, acc,
          " ".join("%.2f" % r["speedup"] for r in rs)))
PY
done
