#!/bin/bash
# Redis lookups against a real redis-server on loopback (tests/integration/services.sh):
# test_pipeline with REDIS_URL set, which must then run its Redis part.
# No redis-server: ctest's skip (77), or a failure under INFERA_REQUIRE_SERVICES=1.
# usage: test_redis.sh TEST_PIPELINE SOURCE_DIR
TEST=$1 SRC=$2
. "$SRC/tests/integration/services.sh"
if ! start_redis; then
    skip_or_fail "Redis lookups: redis-server could not be started" && { echo "0 passed, 0 failed"; exit 77; }
    echo "0 passed, 1 failed"
    exit 1
fi
trap stop_redis EXIT
out=$(mktemp)
"$TEST" "$SRC" | tee "$out"
rc=${PIPESTATUS[0]}
# the Redis checks ran (not silently left out)
if ! grep -q "Redis lookup executor" "$out"; then
    echo "FAIL the Redis lookup checks did not run"
    rc=1
fi
rm -f "$out"
exit "$rc"
