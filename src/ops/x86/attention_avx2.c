/*
 * attention_avx2.c -- the AVX2 part of the fused Attention kernel
 * (ops/ref/attention.c): K_bh scaled and transposed into [D, Sk] for the
 * scores product.  8x8 blocks are loaded as rows of K, multiplied by the
 * scale, turned in registers (transpose_avx2.h) and stored as rows of K^T;
 * edges (Sk or D not a multiple of 8) go element by element.  Each element
 * is one float multiply, scale * k, as in the portable loop, so the bits are
 * the same (tests/kernels/test_attention.c checks it).  Replaces a scalar
 * loop of strided stores (~0.8% of the bench encoder at batch 1).
 * Also the softmax numerator of a row of scores, 8 lanes at a time: the
 * arithmetic of ops/ref/attention_exp.c (its header), same bits; a ragged
 * tail is loaded with -inf, whose terms are 0 and add nothing.
 */
#if defined(__x86_64__) && defined(__AVX2__) && defined(__FMA__)

#include <immintrin.h>
#include <math.h>

#include "ops/attention_exp.h"
#include "ops/ops.h"
#include "ops/x86/attention_exp_x86.h"
#include "ops/x86/transpose_avx2.h"

#define SET1(c) _mm256_set1_ps(c)

void inf__attention_kt_avx2(const float *k, int64_t ldk, int64_t sk, int64_t d, float scale, float *kt) {
    const __m256 s = _mm256_set1_ps(scale);
    int64_t t0 = 0;
    for (; t0 + 8 <= sk; t0 += 8) {
        int64_t p0 = 0;
        for (; p0 + 8 <= d; p0 += 8) {
            __m256 r[8];
            for (int i = 0; i < 8; i++)
                r[i] = _mm256_mul_ps(s, _mm256_loadu_ps(k + (t0 + i) * ldk + p0));
            inf__avx2_transpose8(r);
            for (int i = 0; i < 8; i++)
                _mm256_storeu_ps(kt + (p0 + i) * sk + t0, r[i]);
        }
        for (; p0 < d; p0++)
            for (int64_t t = t0; t < t0 + 8; t++)
                kt[p0 * sk + t] = scale * k[t * ldk + p0];
    }
    for (; t0 < sk; t0++)
        for (int64_t p = 0; p < d; p++)
            kt[p * sk + t0] = scale * k[t0 * ldk + p];
}

/* all ones in lanes [0, k) of 8, k < 8 */
static inline __m256i tail_mask(int64_t k) {
    return _mm256_cmpgt_epi32(_mm256_set1_epi32((int)k), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

/* lanes [0, k) of x, the rest -inf */
static inline __m256 load_tail(const float *x, int64_t k) {
    __m256i m = tail_mask(k);
    return _mm256_blendv_ps(SET1(-INFINITY), _mm256_maskload_ps(x, m), _mm256_castsi256_ps(m));
}

static inline __m256 exp_le0(__m256 x) {
    __m256 keep = _mm256_cmp_ps(x, SET1(INF__ATT_EXP_LO), _CMP_NLT_UQ);
    __m256 c = _mm256_max_ps(SET1(INF__ATT_EXP_LO), x), t, p; /* a NaN x stays */
    INF__ATT_EXP_POLY(_mm256, __m256, c, t, p);
    __m256i k = _mm256_slli_epi32(_mm256_add_epi32(_mm256_castps_si256(t), _mm256_set1_epi32(INF__ATT_POW2_BIAS)), 23);
    return _mm256_and_ps(keep, _mm256_mul_ps(p, _mm256_castsi256_ps(k)));
}

static inline float hmax8(__m256 v) {
    __m128 m = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    m = _mm_max_ps(m, _mm_movehl_ps(m, m));
    m = _mm_max_ss(m, _mm_shuffle_ps(m, m, 1));
    return _mm_cvtss_f32(m);
}

static float row_max(const float *x, int64_t n) {
    __m256 v0 = SET1(-INFINITY), v1 = v0;
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        v0 = _mm256_max_ps(v0, _mm256_loadu_ps(x + i));
        v1 = _mm256_max_ps(v1, _mm256_loadu_ps(x + i + 8));
    }
    for (; i + 8 <= n; i += 8)
        v0 = _mm256_max_ps(v0, _mm256_loadu_ps(x + i));
    if (i < n)
        v1 = _mm256_max_ps(v1, load_tail(x + i, n - i));
    float mx = hmax8(_mm256_max_ps(v0, v1));
    return mx == -INFINITY ? 0.0f : mx;
}

/* e = exp(x - mx) in place, 1 / sum e returned */
static float exp_row(float *x, int64_t n, float mx) {
    __m256 m = SET1(mx), s = _mm256_setzero_ps();
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256 e = exp_le0(_mm256_sub_ps(_mm256_loadu_ps(x + i), m));
        _mm256_storeu_ps(x + i, e);
        s = _mm256_add_ps(s, e);
    }
    if (i < n) {
        __m256 e = exp_le0(_mm256_sub_ps(load_tail(x + i, n - i), m));
        _mm256_maskstore_ps(x + i, tail_mask(n - i), e);
        s = _mm256_add_ps(s, e);
    }
    return inf__attention_inv_sum8(s);
}

void inf__attention_exp_rows_avx2(float *s, int64_t m, int64_t n, float *inv) {
    inf__attention_exp_rows_by(s, m, n, inv, row_max, exp_row);
}

#endif
