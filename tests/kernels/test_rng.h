/*
 * test_rng.h -- the kernel tests' random source: xorshift64 from the seed the
 * including test defines as KERNEL_TEST_SEED, so every run draws the same
 * cases and a failure reproduces.
 */
#ifndef INF_TEST_RNG_H
#define INF_TEST_RNG_H

#include <stdint.h>

static uint64_t rng = KERNEL_TEST_SEED;

static inline uint64_t next_u64(void) {
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}
/* Uniform integer in [lo, hi]. */
static inline int64_t rand_in(int64_t lo, int64_t hi) { return lo + (int64_t)(next_u64() % (uint64_t)(hi - lo + 1)); }
/* Uniform float in [-1, 1). */
static inline float uniform(void) { return (float)((double)(next_u64() >> 11) / 9007199254740992.0 * 2.0 - 1.0); }

#endif /* INF_TEST_RNG_H */
