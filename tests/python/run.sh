#!/bin/sh
# The Python package tests (ctest `python`, label integration): builds the
# extension from python/ against this build's libinfera.so and
# libinfera_runtime.so into a temporary directory and runs pytest on
# tests/python/.  Exits 77 (skip) when python3-dev, numpy or pytest are
# missing, except on CI (CI or INFERA_REQUIRE_SERVICES=1 set), where that fails.
# Usage: run.sh INFERA_CLI SOURCE_DIR BUILD_DIR
set -u
CLI=$1 SRC=$2 BUILD=$3
PY=/usr/bin/python3
missing=""
[ -x "$PY" ] || missing="python3"
[ -z "$missing" ] && ! "$PY" -c 'import numpy, pytest, setuptools' 2>/dev/null && missing="python3-numpy/python3-pytest/python3-setuptools"
[ -z "$missing" ] && ! [ -f "$("$PY" -c 'import sysconfig; print(sysconfig.get_paths()["include"])')/Python.h" ] && missing="python3-dev"
if [ -n "$missing" ]; then
    if [ -n "${CI:-}" ] || [ "${INFERA_REQUIRE_SERVICES:-0}" = 1 ]; then
        echo "FAIL $missing missing (scripts/install-deps.sh installs it)"; exit 1
    fi
    echo "SKIP $missing missing (scripts/install-deps.sh installs it)"; exit 77
fi
TMP=$(mktemp -d) || exit 1
trap 'rm -rf "$TMP"' EXIT
cd "$SRC/python" || exit 1
if ! INFERA_BUILD_DIR=$BUILD INFERA_INCLUDE_DIR=$SRC/include "$PY" setup.py -q build_ext \
        --build-lib "$TMP/lib" --build-temp "$TMP/obj" >"$TMP/build.log" 2>&1; then
    cat "$TMP/build.log"; echo "FAIL building the extension"; exit 1
fi
cp infera/*.py infera/*.pyi infera/py.typed "$TMP/lib/infera/" || exit 1
# An ASan build of the libraries needs the ASan runtime loaded first.
if ldd "$BUILD/libinfera.so" 2>/dev/null | grep -q libasan; then
    LD_PRELOAD=$(gcc -print-file-name=libasan.so); export LD_PRELOAD
    ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0; export ASAN_OPTIONS  # last wins: CI sets detect_leaks=1
    INFERA_PY_SANITIZED=1; export INFERA_PY_SANITIZED
fi
cd "$SRC" || exit 1
INFERA_PY_PATH=$TMP/lib INFERA_CLI=$CLI "$PY" -m pytest -q -rs -p no:cacheprovider tests/python
