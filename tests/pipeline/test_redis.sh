#!/bin/bash
# Redis lookups against a real redis-server on loopback (tests/integration/services.sh):
# test_pipeline with REDIS_URL set, which must then run its Redis part.
# No redis-server: ctest's skip (77), or a failure under INFERA_REQUIRE_SERVICES=1.
# usage: test_redis.sh TEST_PIPELINE SOURCE_DIR
TEST=$1 SRC=$2
. "$SRC/tests/check.sh"
. "$SRC/tests/integration/services.sh"
if ! start_redis; then
    skip_or_fail "Redis lookups: redis-server could not be started" || FAIL=$((FAIL + 1))
    check_done # 77 when skipped, 1 under INFERA_REQUIRE_SERVICES=1
fi
trap stop_redis EXIT
out=$(mktemp)
"$TEST" "$SRC" | tee "$out"
rc=${PIPESTATUS[0]}
# the Redis checks ran (not silently left out)
if ! grep -q "Redis lookup executor" "$out"; then
    bad "the Redis lookup checks did not run"
    rc=1
fi
rm -f "$out"
exit "$rc"
