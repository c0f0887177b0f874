#!/usr/bin/env bash
# bench/llm/speculative.sh -- speculative decoding on the committed Austen pair (tests/llm/models, trained by
# make_models.py): greedy `infera generate TARGET` alone vs `--draft DRAFT --draft-tokens K`, on the four
# reference prompts, MAX_TOKENS tokens each, interleaved (alone, speculative, alone, ...; the machine is
# shared, so each side keeps its best round per prompt).  Prints per (target, draft, K) the acceptance rate
# (accepted / proposed), the decode tokens/s of both and the speed-up, plus the cost ratio of one draft step
# to one target step (their decode tokens/s when each runs alone) -- the number that decides what
# speculation can gain: speed-up <= E[tokens per step] / (1 + K * cost ratio) for a target whose batched
# verification of K+1 tokens costs what one token costs (bandwidth-bound), less when it does not.
# The F32 target is regenerated from the Q8_0 file into the cache (make_models.py --f32-from-q8).
# Usage: bench/llm/speculative.sh [BUILD_DIR]   MAX_TOKENS=128 ROUNDS=3 THREADS=1 KS="2 4"
set -euo pipefail
cd "$(dirname "$0")/../.."
BUILD=${1:-build}
MAX_TOKENS=${MAX_TOKENS:-128}
ROUNDS=${ROUNDS:-3}
THREADS=${THREADS:-1}
KS=${KS:-"2 4"}
M=tests/llm/models
CACHE="${INFERA_CACHE:-$HOME/.cache/infera}"
F32_DIR="$CACHE/models/$(sha256sum "$M/austen-target-q8_0.gguf" | cut -c1-16)"
if [ ! -f "$F32_DIR/austen-target-f32.gguf" ]; then
  mkdir -p "$F32_DIR" && cp "$M/austen-target-q8_0.gguf" "$F32_DIR/"
  /usr/bin/python3 "$M/make_models.py" --f32-from-q8 --out "$F32_DIR" >/dev/null
fi
mapfile -t PROMPTS < <(python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); [print(v["prompt"]) for v in r["target"].values()]' "$M/ref/reference.json")
run() { # MODEL [ARGS...] -> "completion_tokens tokens_per_s proposed accepted"
  "$BUILD/infera" generate "$@" --max-tokens "$MAX_TOKENS" --temperature 0 --threads "$THREADS" --json |
    python3 -c 'import json,sys; d=json.load(sys.stdin); s=d["draft"] or {"proposed":0,"accepted":0}
print(d["completion_tokens"], d["tokens_per_s"], s["proposed"], s["accepted"])'
}
echo "CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'); L2 $(lscpu | awk -F: '/L2/{print $2}' | xargs), L3 $(lscpu | awk -F: '/L3/{print $2}' | xargs); $THREADS thread(s), $MAX_TOKENS tokens, best of $ROUNDS"
printf '%-18s %-16s %2s %10s %11s %11s %8s %12s\n' target draft K acceptance "alone tok/s" "spec tok/s" speed-up "draft/target"
for pair in "$F32_DIR/austen-target-f32.gguf $M/austen-draft-q8_0.gguf" \
            "$M/austen-target-q8_0.gguf $M/austen-draft-q8_0.gguf" \
            "$M/austen-target-q8_0.gguf $M/austen-draft-f32.gguf"; do
  set -- $pair
  T=$1 D=$2
  for K in $KS; do
    stats=$(for p in "${PROMPTS[@]}"; do
      ba=0 bs=0 bd=0 prop=0 acc=0
      for _ in $(seq "$ROUNDS"); do
        read -r _ a _ _ < <(run "$T" --prompt "$p")
        read -r _ s prop acc < <(run "$T" --draft "$D" --draft-tokens "$K" --prompt "$p")
        read -r _ d _ _ < <(run "$D" --prompt "$p")
        ba=$(python3 -c "print(max($ba, $a))"); bs=$(python3 -c "print(max($bs, $s))"); bd=$(python3 -c "print(max($bd, $d))")
      done
      echo "$ba $bs $bd $prop $acc"
    done | python3 -c '
import sys
rows = [list(map(float, l.split())) for l in sys.stdin if l.strip()]
n = len(rows)
alone = sum(r[0] for r in rows) / n; spec = sum(r[1] for r in rows) / n; draft = sum(r[2] for r in rows) / n
prop = sum(r[3] for r in rows); acc = sum(r[4] for r in rows)
print("%.3f %.1f %.1f %.2f %.3f" % (acc / prop if prop else 0, alone, spec, spec / alone, alone / draft))')
    read -r rate alone spec up cost <<<"$stats"
    printf '%-18s %-16s %2s %10s %11s %11s %7sx %12s\n' "$(basename "$T" .gguf | sed 's/austen-//')" \
      "$(basename "$D" .gguf | sed 's/austen-//')" "$K" "$rate" "$alone" "$spec" "$up" "$cost"
  done
done
