/*
 * attention_sum8.h -- 1 / the sum of the softmax numerator's 8 float lanes,
 * reduced as ops/ref/attention_exp.c does: ((l0 + l4) + (l1 + l5)) +
 * ((l2 + l6) + (l3 + l7)).  Shared by the AVX2 and AVX-512 rows
 * (ops/x86/attention_avx2.c, attention_avx512.c), which keep 8 lanes.
 */
#ifndef INF_OPS_X86_ATTENTION_SUM8_H
#define INF_OPS_X86_ATTENTION_SUM8_H

#include <immintrin.h>

static inline float inf__attention_inv_sum8(__m256 s) {
    __m128 h = _mm_add_ps(_mm256_castps256_ps128(s), _mm256_extractf128_ps(s, 1)); /* l0+l4, l1+l5, l2+l6, l3+l7 */
    float a = _mm_cvtss_f32(h) + _mm_cvtss_f32(_mm_shuffle_ps(h, h, 1));
    float b = _mm_cvtss_f32(_mm_shuffle_ps(h, h, 2)) + _mm_cvtss_f32(_mm_shuffle_ps(h, h, 3));
    return 1.0f / (a + b);
}

#endif /* INF_OPS_X86_ATTENTION_SUM8_H */
