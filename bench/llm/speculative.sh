#!/usr/bin/env bash
# bench/llm/speculative.sh -- speculative decoding on the committed Austen pair (tests/llm/models, trained by
# make_models.py): greedy `infera generate TARGET` alone vs `--draft DRAFT --draft-tokens K`, on the four
# reference prompts, MAX_TOKENS tokens each (the same tokens: greedy speculation reproduces the target).
# Time is the process's CPU time (user + sys, /usr/bin/time), best of ROUNDS: on a machine shared by many jobs
# wall-clock tokens/s mostly measure the run queue, CPU time does not (it still includes loading the model and
# the prompt, the same for both sides).  Prints per (target, draft, K) the acceptance rate (accepted /
# proposed), CPU seconds alone and speculative, the speed-up (alone / speculative), and the cost ratio c of a
# draft token to a target token (CPU time of the draft alone / the target alone).  What speculation can gain:
# with acceptance a and K proposals a step yields E = (1 - a^(K+1)) / (1 - a) tokens for one verification of
# K+1 tokens plus K draft tokens, so speed-up = E / (v + K c), v = the cost of verifying K+1 tokens in units of
# one decode step (1 when decoding is bandwidth-bound, up to K+1 when it is compute-bound).
# The F32 target is regenerated from the Q8_0 file into the cache (make_models.py --f32-from-q8), and a Q4_0
# draft from the F32 draft (--draft-q4-from-f32).  PAIRS lists target:draft types (default f32:q8_0 q8_0:q8_0
# q4_0:q8_0; the draft q4_0 is possible too).
# "gen" columns: the same CPU times less those of runs that stop after the first token (loading both models,
# the prompt: fixed costs that on this small pair are ~half of a 256-token run), i.e. the decoding loop alone.
# K is --draft-tokens; with INFERA_LLM_DRAFT_ADAPTIVE=1 in the environment, the most the adaptive draft length of
# src/llm/generate.c proposes per step.
# bench/llm/spec_generate.sh measures the same in one process, without loading (the figure to quote).
# Usage: bench/llm/speculative.sh [BUILD_DIR]   MAX_TOKENS=384 ROUNDS=2 THREADS=1 KS="2 4" PAIRS="q8_0:q8_0"
set -euo pipefail
cd "$(dirname "$0")/../.."
BUILD=${1:-build}
MAX_TOKENS=${MAX_TOKENS:-384}
ROUNDS=${ROUNDS:-2}
THREADS=${THREADS:-1}
KS=${KS:-"2 4"}
. bench/llm/austen_pair.sh # M, F32_DIR (the F32 target, the Q4_0 draft), PROMPTS
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
run() { # MAX_TOKENS MODEL [ARGS...] -> "cpu_seconds completion_tokens proposed accepted"
  # the children's user + sys time from getrusage (exact to the microsecond; /usr/bin/time prints 10 ms steps)
  local n=$1
  shift
  python3 -c 'import resource, subprocess, sys
subprocess.run(sys.argv[2:], stdout=open(sys.argv[1], "w"), check=True)
r = resource.getrusage(resource.RUSAGE_CHILDREN)
print("%.6f" % (r.ru_utime + r.ru_stime))' "$TMP/out" "$BUILD/infera" generate "$@" --max-tokens "$n" --ctx 512 \
    --temperature 0 --threads "$THREADS" --json >"$TMP/time"
  python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); s=d["draft"] or {"proposed":0,"accepted":0}
print(open(sys.argv[2]).read().split()[-1], d["completion_tokens"], s["proposed"], s["accepted"])' "$TMP/out" "$TMP/time"
}
best() { python3 -c "import sys; print(min(float(x) for x in sys.argv[1:]))" "$@"; }
echo "CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'); L2 $(lscpu | awk -F: '/L2/{print $2}' | xargs), L3 $(lscpu | awk -F: '/L3/{print $2}' | xargs); $THREADS thread(s), $MAX_TOKENS tokens x ${#PROMPTS[@]} prompts, CPU time, best of $ROUNDS"
printf '%-12s %-11s %2s %10s %9s %9s %8s %8s %9s %9s %8s\n' target draft K acceptance "alone s" "spec s" speed-up "c" \
  "gen alone" "gen spec" "gen x"
PAIRS=${PAIRS:-"f32:q8_0 q8_0:q8_0 q4_0:q8_0"}
for pair in $PAIRS; do
  tt=${pair%%:*} dt=${pair##*:}
  T=$M/austen-target-$tt.gguf D=$M/austen-draft-$dt.gguf
  [ "$tt" = f32 ] && T=$F32_DIR/austen-target-f32.gguf
  [ "$dt" = q4_0 ] && D=$F32_DIR/austen-draft-q4_0.gguf
  for K in $KS; do
    ta=0 ts=0 td=0 t1a=0 t1s=0 prop=0 acc=0
    for p in "${PROMPTS[@]}"; do
      a=() s=() d=() a1=() s1=()
      for _ in $(seq "$ROUNDS"); do
        read -r x _ _ _ < <(run "$MAX_TOKENS" "$T" --prompt "$p"); a+=("$x")
        read -r x _ pp aa < <(run "$MAX_TOKENS" "$T" --draft "$D" --draft-tokens "$K" --prompt "$p"); s+=("$x")
        read -r x _ _ _ < <(run "$MAX_TOKENS" "$D" --prompt "$p"); d+=("$x")
        read -r x _ _ _ < <(run 1 "$T" --prompt "$p"); a1+=("$x")
        read -r x _ _ _ < <(run 1 "$T" --draft "$D" --draft-tokens "$K" --prompt "$p"); s1+=("$x")
      done
      ta=$(python3 -c "print($ta + $(best "${a[@]}"))"); ts=$(python3 -c "print($ts + $(best "${s[@]}"))")
      td=$(python3 -c "print($td + $(best "${d[@]}"))"); prop=$((prop + pp)); acc=$((acc + aa))
      t1a=$(python3 -c "print($t1a + $(best "${a1[@]}"))"); t1s=$(python3 -c "print($t1s + $(best "${s1[@]}"))")
    done
    # gen: the CPU time past the first token (loading, the prompt and the first token, measured by runs of
    # --max-tokens 1, subtracted): what the decoding loop costs
    printf '%-12s %-11s %2s %10s %9.3f %9.3f %7sx %8s %9.3f %9.3f %7sx\n' "$(basename "$T" .gguf | sed 's/austen-//')" \
      "$(basename "$D" .gguf | sed 's/austen-//')" "$K" "$(python3 -c "print('%.3f' % ($acc / $prop))")" "$ta" "$ts" \
      "$(python3 -c "print('%.2f' % ($ta / $ts))")" "$(python3 -c "print('%.3f' % ($td / $ta))")" \
      "$(python3 -c "print($ta - $t1a)")" "$(python3 -c "print($ts - $t1s)")" \
      "$(python3 -c "print('%.2f' % (($ta - $t1a) / ($ts - $t1s)))")"
  done
done
