#!/usr/bin/env bash
# test_grpc_tritonclient.sh INFERA SOURCE_DIR -- runs test_grpc_tritonclient.py
# with PyPI tritonclient[grpc] (pinned below) from a venv under
# ~/.cache/infera, made once (scripts/install-deps.sh makes it too).  Exits
# 77 (skip) when the venv cannot be made (no python3-venv, no PyPI).
set -u
. "$(dirname "$0")/../check.sh"
PIN='tritonclient[grpc]==2.73.0'
VENV=${INFERA_CACHE:-$HOME/.cache/infera}/venv-tritonclient
if ! "$VENV/bin/python" -c 'import tritonclient.grpc' 2>/dev/null; then
    mkdir -p "$(dirname "$VENV")"
    { /usr/bin/python3 -m venv "$VENV" && "$VENV/bin/pip" install -q "$PIN"; } >/dev/null 2>&1 ||
        skip "cannot install $PIN into $VENV"
fi
exec "$VENV/bin/python" "$(dirname "$0")/test_grpc_tritonclient.py" "$@"
