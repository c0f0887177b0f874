#!/bin/bash
# Redis lookups against a real redis-server on loopback (tests/integration/services.sh).
# usage: test_redis.sh TEST_PIPELINE SOURCE_DIR
TEST=$1 SRC=$2
. "$SRC/tests/integration/services.sh"
if ! start_redis; then echo "FAIL: cannot start redis-server"; echo "0 passed, 1 failed"; exit 1; fi
trap stop_redis EXIT
"$TEST" "$SRC"
