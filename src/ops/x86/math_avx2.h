/*
 * math_avx2.h -- the element functions of ops/x86/math_avx2.c (exp, tanh,
 * sigmoid on 8 lanes), inline so that kernels apply them in their stores
 * with the vector table's bits (a fused SiLU: pointwise_avx2.c).
 * Include only from files built with the AVX2/FMA flags (*_avx2.c).
 */
#ifndef INF_OPS_X86_MATH_AVX2_H
#define INF_OPS_X86_MATH_AVX2_H

#include <immintrin.h>

#define SET1(c) _mm256_set1_ps(c)

static inline __m256 is_nan(__m256 x) { return _mm256_cmp_ps(x, x, _CMP_UNORD_Q); }
static inline __m256 abs_ps(__m256 x) { return _mm256_andnot_ps(SET1(-0.0f), x); }
static inline __m256 sign_of(__m256 x) { return _mm256_and_ps(SET1(-0.0f), x); }

/* 2^n for integral n in [-126, 127] held as floats */
static inline __m256 pow2i(__m256 n) {
    __m256i k = _mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127));
    return _mm256_castsi256_ps(_mm256_slli_epi32(k, 23));
}

static inline __m256 exp8(__m256 x) {
    __m256 c = _mm256_min_ps(_mm256_max_ps(x, SET1(-104.0f)), SET1(89.0f));
    __m256 n = _mm256_sub_ps(_mm256_fmadd_ps(c, SET1(1.44269504088896341f), SET1(12582912.0f)), SET1(12582912.0f));
    __m256 r = _mm256_fnmadd_ps(n, SET1(0.693359375f), c);
    r = _mm256_fnmadd_ps(n, SET1(-2.12194440e-4f), r);
    __m256 p = SET1(1.9875691500e-4f);
    p = _mm256_fmadd_ps(p, r, SET1(1.3981999507e-3f));
    p = _mm256_fmadd_ps(p, r, SET1(8.3334519073e-3f));
    p = _mm256_fmadd_ps(p, r, SET1(4.1665795894e-2f));
    p = _mm256_fmadd_ps(p, r, SET1(1.6666665459e-1f));
    p = _mm256_fmadd_ps(p, r, SET1(5.0000001201e-1f));
    p = _mm256_fmadd_ps(p, _mm256_mul_ps(r, r), _mm256_add_ps(r, SET1(1.0f)));
    /* n1 = floor(n / 2) as the portable ni >> 1 */
    __m256 n1 = _mm256_floor_ps(_mm256_mul_ps(n, SET1(0.5f)));
    __m256 y = _mm256_mul_ps(_mm256_mul_ps(p, pow2i(n1)), pow2i(_mm256_sub_ps(n, n1)));
    return _mm256_blendv_ps(y, x, is_nan(x));
}

static inline __m256 tanh8(__m256 x) {
    __m256 a = abs_ps(x), z = _mm256_mul_ps(x, x);
    __m256 p = SET1(-5.70498872745e-3f);
    p = _mm256_fmadd_ps(p, z, SET1(2.06390887954e-2f));
    p = _mm256_fmadd_ps(p, z, SET1(-5.37397155531e-2f));
    p = _mm256_fmadd_ps(p, z, SET1(1.33314422036e-1f));
    p = _mm256_fmadd_ps(p, z, SET1(-3.33332819422e-1f));
    __m256 small = _mm256_fmadd_ps(_mm256_mul_ps(p, z), a, a);
    __m256 e = exp8(_mm256_mul_ps(SET1(2.0f), _mm256_min_ps(a, SET1(9.1f))));
    __m256 big = _mm256_sub_ps(SET1(1.0f), _mm256_div_ps(SET1(2.0f), _mm256_add_ps(e, SET1(1.0f))));
    __m256 y = _mm256_blendv_ps(big, small, _mm256_cmp_ps(a, SET1(0.625f), _CMP_LT_OQ));
    y = _mm256_or_ps(y, sign_of(x));
    return _mm256_blendv_ps(y, x, is_nan(x));
}

static inline __m256 sigmoid8(__m256 x) {
    __m256 e = exp8(_mm256_or_ps(abs_ps(x), SET1(-0.0f))); /* exp(-|x|) */
    __m256 r = _mm256_div_ps(SET1(1.0f), _mm256_add_ps(SET1(1.0f), e));
    __m256 y = _mm256_blendv_ps(_mm256_mul_ps(e, r), r, _mm256_cmp_ps(x, _mm256_setzero_ps(), _CMP_GE_OQ));
    return _mm256_blendv_ps(y, x, is_nan(x));
}

#endif
