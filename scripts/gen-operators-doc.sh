#!/usr/bin/env bash
# Regenerates docs/operators.md from the op table of a release build.
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p docs
build/infera ops --markdown > docs/operators.md
echo "docs/operators.md: $(grep -c '^| \(ai\|com\)' docs/operators.md) operators"
