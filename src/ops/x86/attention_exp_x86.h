/*
 * attention_exp_x86.h -- what the AVX2 and AVX-512 softmax numerator rows
 * (ops/x86/attention_avx2.c, attention_avx512.c) share, written once so the
 * two widths cannot drift apart: the exp's arithmetic between the clamp
 * and 2^n (ops/ref/attention_exp.c, its header) for either vector type, and
 * 1 / the sum of the 8 float lanes, reduced as the portable twin does:
 * ((l0 + l4) + (l1 + l5)) + ((l2 + l6) + (l3 + l7)).
 */
#ifndef INF_OPS_X86_ATTENTION_EXP_X86_H
#define INF_OPS_X86_ATTENTION_EXP_X86_H

#include <immintrin.h>

#include "ops/attention_exp.h"

/* From c = max(LO, x) (type T, intrinsics prefix V: _mm256 or _mm512), the
 * rounding sum t (n + 127 sits in its low bits) and the polynomial p, with
 * exp(x) = p * 2^n. */
#define INF__ATT_EXP_POLY(V, T, c, t, p)                                                                               \
    do {                                                                                                               \
        t = V##_fmadd_ps(c, V##_set1_ps(INF__ATT_LOG2E), V##_set1_ps(INF__ATT_ROUND));                                 \
        T n_ = V##_sub_ps(t, V##_set1_ps(INF__ATT_ROUND));                                                             \
        T r_ = V##_fnmadd_ps(n_, V##_set1_ps(INF__ATT_LN2_HI), c);                                                     \
        r_ = V##_fnmadd_ps(n_, V##_set1_ps(INF__ATT_LN2_LO), r_);                                                      \
        p = V##_fmadd_ps(V##_set1_ps(INF__ATT_P0), r_, V##_set1_ps(INF__ATT_P1));                                      \
        p = V##_fmadd_ps(p, r_, V##_set1_ps(INF__ATT_P2));                                                             \
        p = V##_fmadd_ps(p, r_, V##_set1_ps(INF__ATT_P3));                                                             \
        p = V##_fmadd_ps(p, r_, V##_set1_ps(INF__ATT_P4));                                                             \
        p = V##_fmadd_ps(p, r_, V##_set1_ps(INF__ATT_P5));                                                             \
        p = V##_fmadd_ps(p, V##_mul_ps(r_, r_), V##_add_ps(r_, V##_set1_ps(1.0f)));                                    \
    } while (0)

static inline float inf__attention_inv_sum8(__m256 s) {
    __m128 h = _mm_add_ps(_mm256_castps256_ps128(s), _mm256_extractf128_ps(s, 1)); /* l0+l4, l1+l5, l2+l6, l3+l7 */
    float a = _mm_cvtss_f32(h) + _mm_cvtss_f32(_mm_shuffle_ps(h, h, 1));
    float b = _mm_cvtss_f32(_mm_shuffle_ps(h, h, 2)) + _mm_cvtss_f32(_mm_shuffle_ps(h, h, 3));
    return 1.0f / (a + b);
}

#endif /* INF_OPS_X86_ATTENTION_EXP_X86_H */
