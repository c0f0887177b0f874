/*
 * qdiv_check.c -- can the INT8 stores' vdivps (QuantizeLinear's x / s) be
 * replaced by a reciprocal multiply without changing a byte?  For a set of
 * scales s, over all 2^32 float bit patterns x, against vdivps's quotient d:
 *   mul     q = x * y with y = RN(1/s) (scalar, once per scale)
 *   mark    Markstein's correction: q clamped to [-2^20, 2^20] (NaN kept: it
 *           is vminps' / vmaxps' second operand), r = fma(-q, s, x),
 *           q' = fma(r, y, q)
 * and counts the x whose rounded integer differs (nearbyint of the value
 * clamped to [-1024, 1024], as every store clamps before or after rounding;
 * -0 equal to +0, NaN to NaN), and for mark also the bit patterns that differ
 * where |x| >= 2^-100 and 2^-126 <= |d| < 2^20 (for smaller x, r = x - q s
 * may underflow and be inexact, so q' may be off; such quotients round to 0).
 * Without the clamp, q = x * y overflows for |x| near FLT_MAX / (s y) and
 * fma(-inf, s, x) makes q' NaN (and x = +-inf gives NaN): a wrong byte in the
 * stores that read NaN as the zero point.  Scales outside [2^-100, 2^100]
 * (1/s subnormal or infinite) would keep the division.
 * Session 25 (h16/qdiv): the stores were not changed -- dropping the division
 * entirely (plain multiply, inexact) gained nothing measurable on Zen 5
 * (bench/quant/RESULTS.md).  Kept for a CPU whose divider bounds the stores.
 *
 *   gcc -O2 -mavx2 -mfma -ffp-contract=off bench/quant/qdiv_check.c -o /tmp/qdiv_check -lm
 *   /tmp/qdiv_check            # the built-in scales (about 2 s each)
 *   /tmp/qdiv_check 0.0235 3   # these scales
 */
#include <immintrin.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct counts {
    uint64_t mul_int, mark_int, mark_bits;
} counts;

/* lanes where a and b are bit-equal (bits) or equal in value (-0 == +0), or both NaN */
static int same(__m256 a, __m256 b, int bits) {
    __m256 eq = bits ? _mm256_castsi256_ps(_mm256_cmpeq_epi32(_mm256_castps_si256(a), _mm256_castps_si256(b)))
                     : _mm256_cmp_ps(a, b, _CMP_EQ_OQ);
    __m256 nan = _mm256_and_ps(_mm256_cmp_ps(a, a, _CMP_UNORD_Q), _mm256_cmp_ps(b, b, _CMP_UNORD_Q));
    return _mm256_movemask_ps(_mm256_or_ps(eq, nan));
}

/* nearbyint of v clamped to [-1024, 1024] (NaN kept) */
static __m256 rint_clamped(__m256 v) {
    v = _mm256_max_ps(_mm256_set1_ps(-1024.0f), _mm256_min_ps(_mm256_set1_ps(1024.0f), v));
    return _mm256_round_ps(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
}

static counts check(float s) {
    const __m256 vs = _mm256_set1_ps(s), vy = _mm256_set1_ps(1.0f / s);
    const __m256 big = _mm256_set1_ps(0x1p20f), nbig = _mm256_set1_ps(-0x1p20f), tiny = _mm256_set1_ps(0x1p-126f);
    __m256i bits = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    counts n = {0, 0, 0};
    for (uint64_t u = 0; u < (1ull << 32); u += 8) {
        __m256 x = _mm256_castsi256_ps(bits);
        bits = _mm256_add_epi32(bits, _mm256_set1_epi32(8));
        __m256 d = _mm256_div_ps(x, vs), q0 = _mm256_mul_ps(x, vy);
        __m256 q = _mm256_max_ps(nbig, _mm256_min_ps(big, q0));
        __m256 q1 = _mm256_fmadd_ps(_mm256_fnmadd_ps(q, vs, x), vy, q);
        __m256 rd = rint_clamped(d);
        n.mul_int += 8 - (uint64_t)__builtin_popcount(same(rd, rint_clamped(q0), 0));
        n.mark_int += 8 - (uint64_t)__builtin_popcount(same(rd, rint_clamped(q1), 0));
        __m256 ad = _mm256_andnot_ps(_mm256_set1_ps(-0.0f), d), ax = _mm256_andnot_ps(_mm256_set1_ps(-0.0f), x);
        __m256 out = _mm256_or_ps(_mm256_cmp_ps(ad, tiny, _CMP_LT_OQ), _mm256_cmp_ps(ad, big, _CMP_GE_OQ));
        out = _mm256_or_ps(out, _mm256_cmp_ps(ax, _mm256_set1_ps(0x1p-100f), _CMP_LT_OQ));
        n.mark_bits += 8 - (uint64_t)__builtin_popcount(same(d, q1, 1) | _mm256_movemask_ps(out));
    }
    return n;
}

/* the significand in [1, 2) whose reciprocal's rounding error is largest in ulps (after `after`) */
static float worst_reciprocal(float after) {
    float best = 1.0f;
    double err = 0;
    for (float s = nextafterf(after, 2.0f); s < 2.0f; s = nextafterf(s, 2.0f)) {
        double e = fabs((double)(1.0f / s) - 1.0 / s) / ldexp(1.0, ilogb(1.0f / s) - 23);
        if (e > err)
            err = e, best = s;
    }
    return best;
}

int main(int argc, char **argv) {
    float scales[32];
    int k = 0;
    if (argc > 1) {
        for (int i = 1; i < argc && k < 32; i++)
            scales[k++] = strtof(argv[i], NULL);
    } else {
        const float fixed[] = {1.0f, 0x1p-10f, 0x1p10f, 0x1p-100f,     0x1p100f,     1.0f / 3.0f,
                               3.0f, 0.1f,     0.0235f, 0x1.fffffep0f, 0x1.000002p0f};
        for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++)
            scales[k++] = fixed[i];
        scales[k++] = worst_reciprocal(1.0f);
        scales[k++] = worst_reciprocal(1.5f) * 0x1p-7f;
        uint32_t lcg = 12345; /* random scales in [2^-12, 2^4) */
        for (int i = 0; i < 6; i++) {
            lcg = lcg * 1664525u + 1013904223u;
            scales[k++] = ldexpf(1.0f + (float)(lcg >> 9) * 0x1p-23f, (int)(lcg % 16) - 12);
        }
    }
    uint64_t bad = 0;
    for (int i = 0; i < k; i++) {
        counts n = check(scales[i]);
        printf("s = %-15a 1/s = %-15a  integer differs: mul %8llu  mark %llu;  mark bits differ (|x| >= 2^-100, 2^-126 "
               "<= |d| < 2^20) "
               "%llu\n",
               scales[i], 1.0f / scales[i], (unsigned long long)n.mul_int, (unsigned long long)n.mark_int,
               (unsigned long long)n.mark_bits);
        fflush(stdout);
        bad += n.mark_int;
    }
    return bad != 0;
}
