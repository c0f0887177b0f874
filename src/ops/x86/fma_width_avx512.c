/*
 * fma_width_avx512.c -- whether this core runs a 512-bit FMA at full width
 * (one zmm FMA per pipe per cycle: Zen 5 server/desktop, Intel Xeon) or in
 * two 256-bit halves (Zen 4, Zen 5 mobile), measured once at first use.
 *
 * DESIGN: CPUID has no bit for the datapath width, and a family/model table
 * goes stale with every new part, so this measures it: the same number of
 * FMAs in 12 independent chains (enough to cover a 4-5 cycle latency on two
 * pipes) with ymm and with zmm registers, timed with the TSC, best of a few
 * interleaved tries (a preempted try is just slower, never faster).  Full
 * width: zmm takes about as long as ymm (ratio ~1); split: about twice as
 * long (ratio ~2); the cut is 1.5.  It costs some 20 microseconds, once.
 * The packed SGEMM (gemm_avx2.c) runs its 6x32 AVX-512 tile with A packed
 * only on full-width cores: there it has twice the AVX2 tile's FLOP/s; on a
 * split core it only saves issue slots (bench/RESULTS.md, Zen 4 and Zen 5).
 * INFERA_FMA512=full|split overrides the measurement (for tests and for
 * checking a decision on a given machine).
 */
#if defined(__x86_64__) && defined(__AVX512F__)

#include <immintrin.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <x86intrin.h>

#include "ops/x86/gemm_avx512.h"

enum { CHAINS = 12, STEPS = 256, TRIES = 5 };

static volatile float g_seed = 1.0f; /* keeps the compiler from folding the chains */
static volatile float g_sink;
static bool g_full;
static double g_ratio;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

static __attribute__((noinline)) uint64_t time_ymm(void) {
    __m256 m = _mm256_set1_ps(0.999f), a = _mm256_set1_ps(1e-3f), acc[CHAINS];
    for (int i = 0; i < CHAINS; i++)
        acc[i] = _mm256_set1_ps(g_seed + (float)i);
    uint64_t t0 = __rdtsc();
    for (int s = 0; s < STEPS; s++)
#pragma GCC unroll 12
        for (int i = 0; i < CHAINS; i++)
            acc[i] = _mm256_fmadd_ps(acc[i], m, a);
    uint64_t t = __rdtsc() - t0;
    float sum = 0.0f;
    for (int i = 0; i < CHAINS; i++)
        sum += _mm256_cvtss_f32(acc[i]);
    g_sink = sum;
    return t;
}

static __attribute__((noinline)) uint64_t time_zmm(void) {
    __m512 m = _mm512_set1_ps(0.999f), a = _mm512_set1_ps(1e-3f), acc[CHAINS];
    for (int i = 0; i < CHAINS; i++)
        acc[i] = _mm512_set1_ps(g_seed + (float)i);
    uint64_t t0 = __rdtsc();
    for (int s = 0; s < STEPS; s++)
#pragma GCC unroll 12
        for (int i = 0; i < CHAINS; i++)
            acc[i] = _mm512_fmadd_ps(acc[i], m, a);
    uint64_t t = __rdtsc() - t0;
    float sum = 0.0f;
    for (int i = 0; i < CHAINS; i++)
        sum += _mm512_cvtss_f32(acc[i]);
    g_sink = sum;
    return t;
}

static void measure_once(void) {
    const char *env = getenv("INFERA_FMA512");
    if (env && (!strcmp(env, "full") || !strcmp(env, "split"))) {
        g_full = !strcmp(env, "full");
        g_ratio = 0.0;
        return;
    }
    (void)time_ymm(), (void)time_zmm(); /* warm up: code in cache, upper lanes powered */
    uint64_t ymm = UINT64_MAX, zmm = UINT64_MAX;
    for (int t = 0; t < TRIES; t++) {
        uint64_t y = time_ymm(), z = time_zmm();
        if (y < ymm) ymm = y;
        if (z < zmm) zmm = z;
    }
    g_ratio = ymm ? (double)zmm / (double)ymm : 2.0;
    g_full = g_ratio < 1.5;
}

bool inf__avx512_fma_full_width(double *ratio) {
    pthread_once(&g_once, measure_once);
    if (ratio) *ratio = g_ratio;
    return g_full;
}

#endif /* x86-64 with AVX-512 */
