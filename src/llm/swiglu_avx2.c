/*
 * swiglu_avx2.c -- the SwiGLU and GeGLU gates of swiglu.h, 8 lanes at a time with the
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

/* GELU(x) u as x / (1 + e^-2z) u, z = sqrt(2/pi) (x + 0.044715 x^3): 0.5 (1 + tanh z) = 1 / (1 + e^-2z).
 * Large |x| saturate as the reference does (e^-2z -> 0 or the exp's upper clamp: x or -0). */
void inf__llm_geglu_avx2(float *g, const float *u, size_t n) {
    const __m256 one = _mm256_set1_ps(1.0f), m2c = _mm256_set1_ps(-2.0f * 0.79788456080286535588f),
                 a = _mm256_set1_ps(0.044715f);
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256 x = _mm256_loadu_ps(g + i);
        __m256 z = _mm256_mul_ps(m2c, _mm256_fmadd_ps(_mm256_mul_ps(a, x), _mm256_mul_ps(x, x), x));
        __m256 e = inf__exp_ps(z);
        _mm256_storeu_ps(g + i, _mm256_mul_ps(_mm256_div_ps(x, _mm256_add_ps(one, e)), _mm256_loadu_ps(u + i)));
    }
    inf__llm_geglu_ref(g + i, u + i, n - i);
}
