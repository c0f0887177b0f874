#!/usr/bin/env bash
# bench/monitor/callgrind_serve_pg.sh -- callgrind_serve.sh with a PostgreSQL log: starts a throwaway
# server (tests/integration/services.sh), runs the given configurations (default: off pg) and stops it.
#
#   [ENDPOINT=...] [WARMUP=N] bench/monitor/callgrind_serve_pg.sh INFERA_BINARY [REQUESTS] [CONFIGS...]
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/../../tests/integration/services.sh"
start_postgres || exit 77
trap stop_postgres EXIT
BIN=$1
REQS=${2:-200}
shift $(($# > 1 ? 2 : 1))
"$HERE/callgrind_serve.sh" "$BIN" "$REQS" ${*:-off pg}
