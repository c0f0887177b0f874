/*
 * attention_avx512.c -- the AVX-512 part of the fused Attention kernel
 * (ops/ref/attention.c): the softmax numerator of a row of scores, 16 lanes
 * at a time, with the arithmetic of ops/ref/attention_exp.c (its header) --
 * the same bits as it and as the AVX2 row (ops/x86/attention_avx2.c): each
 * 16-float block's terms are added to the 8 float lanes as two 8-float
 * halves in turn, the AVX2 order; a ragged tail is a masked load (-inf in
 * the other lanes, whose terms are 0 and add nothing) and a masked store.
 */
#if defined(__x86_64__) && defined(__AVX512F__)

#include <immintrin.h>
#include <math.h>

#include "ops/attention_exp.h"
#include "ops/x86/attention_exp_x86.h"

#define SET1(c) _mm512_set1_ps(c)

static inline __m512 exp_le0(__m512 x) {
    __mmask16 keep = _mm512_cmp_ps_mask(x, SET1(INF__ATT_EXP_LO), _CMP_NLT_UQ);
    __m512 c = _mm512_max_ps(SET1(INF__ATT_EXP_LO), x), t, p; /* a NaN x stays */
    INF__ATT_EXP_POLY(_mm512, __m512, c, t, p);
    __m512i k = _mm512_slli_epi32(_mm512_add_epi32(_mm512_castps_si512(t), _mm512_set1_epi32(INF__ATT_POW2_BIAS)), 23);
    return _mm512_maskz_mul_ps(keep, p, _mm512_castsi512_ps(k));
}

/* lanes [0, k) of 16, k < 16 */
static inline __mmask16 tail_mask(int64_t k) {
    return (__mmask16)((1u << k) - 1);
}

static inline __m256 add_halves(__m256 s, __m512 e) {
    s = _mm256_add_ps(s, _mm512_castps512_ps256(e));
    return _mm256_add_ps(s, _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(e), 1)));
}

static float row_max(const float *x, int64_t n) {
    __m512 v0 = SET1(-INFINITY), v1 = v0;
    int64_t i = 0;
    for (; i + 32 <= n; i += 32) {
        v0 = _mm512_max_ps(v0, _mm512_loadu_ps(x + i));
        v1 = _mm512_max_ps(v1, _mm512_loadu_ps(x + i + 16));
    }
    for (; i + 16 <= n; i += 16)
        v0 = _mm512_max_ps(v0, _mm512_loadu_ps(x + i));
    if (i < n)
        v1 = _mm512_max_ps(v1, _mm512_mask_loadu_ps(SET1(-INFINITY), tail_mask(n - i), x + i));
    float mx = _mm512_reduce_max_ps(_mm512_max_ps(v0, v1));
    return mx == -INFINITY ? 0.0f : mx;
}

/* e = exp(x - mx) in place, 1 / sum e returned */
static float exp_row(float *x, int64_t n, float mx) {
    __m512 m = SET1(mx);
    __m256 s = _mm256_setzero_ps();
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        __m512 e = exp_le0(_mm512_sub_ps(_mm512_loadu_ps(x + i), m));
        _mm512_storeu_ps(x + i, e);
        s = add_halves(s, e);
    }
    if (i < n) {
        __mmask16 tail = tail_mask(n - i);
        __m512 e = exp_le0(_mm512_sub_ps(_mm512_mask_loadu_ps(SET1(-INFINITY), tail, x + i), m));
        _mm512_mask_storeu_ps(x + i, tail, e);
        s = add_halves(s, e);
    }
    return inf__attention_inv_sum8(s);
}

void inf__attention_exp_rows_avx512(float *s, int64_t m, int64_t n, float *inv) {
    inf__attention_exp_rows_by(s, m, n, inv, row_max, exp_row);
}

#endif
