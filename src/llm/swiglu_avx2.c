/*
 * swiglu_avx2.c -- the SwiGLU gate of swiglu.h, 8 lanes at a time with the
 * vector exp of vmath_avx2.h (within a few ulp of the reference; the tail
 * through the reference).
 */
#include <immintrin.h>

#include "llm/swiglu.h"
#include "llm/vmath_avx2.h"

void inf__llm_swiglu_avx2(float *g, const float *u, size_t n) {
    const __m256 one = _mm256_set1_ps(1.0f), sign = _mm256_set1_ps(-0.0f);
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256 x = _mm256_loadu_ps(g + i);
        __m256 e = inf__exp_ps(_mm256_xor_ps(x, sign));
        _mm256_storeu_ps(g + i, _mm256_mul_ps(_mm256_div_ps(x, _mm256_add_ps(one, e)), _mm256_loadu_ps(u + i)));
    }
    inf__llm_swiglu_ref(g + i, u + i, n - i);
}
