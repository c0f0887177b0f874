/*
 * math_avx512.h -- the element functions of ops/x86/math_avx512.c (exp,
 * tanh, sigmoid on 16 lanes), inline so that kernels apply them in their
 * stores with the vector table's bits (a fused SiLU: pointwise_avx512.c).
 * Include only from files built with the AVX-512 flags (*_avx512.c).
 */
#ifndef INF_OPS_X86_MATH_AVX512_H
#define INF_OPS_X86_MATH_AVX512_H

#include <immintrin.h>

#define SET1(c) _mm512_set1_ps(c)

/* (the float and/or/xor of AVX-512 need DQ: integer forms here) */
static inline __m512 and_ps(__m512 a, __m512 b) {
    return _mm512_castsi512_ps(_mm512_and_epi32(_mm512_castps_si512(a), _mm512_castps_si512(b)));
}
static inline __m512 or_ps(__m512 a, __m512 b) {
    return _mm512_castsi512_ps(_mm512_or_epi32(_mm512_castps_si512(a), _mm512_castps_si512(b)));
}
static inline __m512 xor_ps(__m512 a, __m512 b) {
    return _mm512_castsi512_ps(_mm512_xor_epi32(_mm512_castps_si512(a), _mm512_castps_si512(b)));
}
static inline __mmask16 is_nan(__m512 x) { return _mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q); }
static inline __m512 abs_ps(__m512 x) {
    return _mm512_castsi512_ps(_mm512_andnot_epi32(_mm512_castps_si512(SET1(-0.0f)), _mm512_castps_si512(x)));
}
static inline __m512 sign_of(__m512 x) { return and_ps(SET1(-0.0f), x); }
/* AVX2's blendv(a, b, m): b where m */
static inline __m512 blend(__m512 a, __m512 b, __mmask16 m) { return _mm512_mask_blend_ps(m, a, b); }

/* exp(c) for c already in [-104, 89] (no NaN) */
static inline __m512 exp16_clamped(__m512 c) {
    __m512 n = _mm512_sub_ps(_mm512_fmadd_ps(c, SET1(1.44269504088896341f), SET1(12582912.0f)), SET1(12582912.0f));
    __m512 r = _mm512_fnmadd_ps(n, SET1(0.693359375f), c);
    r = _mm512_fnmadd_ps(n, SET1(-2.12194440e-4f), r);
    __m512 p = SET1(1.9875691500e-4f);
    p = _mm512_fmadd_ps(p, r, SET1(1.3981999507e-3f));
    p = _mm512_fmadd_ps(p, r, SET1(8.3334519073e-3f));
    p = _mm512_fmadd_ps(p, r, SET1(4.1665795894e-2f));
    p = _mm512_fmadd_ps(p, r, SET1(1.6666665459e-1f));
    p = _mm512_fmadd_ps(p, r, SET1(5.0000001201e-1f));
    p = _mm512_fmadd_ps(p, _mm512_mul_ps(r, r), _mm512_add_ps(r, SET1(1.0f)));
    /* p 2^n rounded once: the AVX2 file's p 2^(n/2) 2^(n - n/2) (the first
     * product exact and normal, the second rounded once) in one instruction */
    return _mm512_scalef_ps(p, n);
}

static inline __m512 exp16(__m512 x) {
    __m512 y = exp16_clamped(_mm512_min_ps(_mm512_max_ps(x, SET1(-104.0f)), SET1(89.0f)));
    return blend(y, x, is_nan(x));
}

static inline __m512 tanh16(__m512 x) {
    __m512 a = abs_ps(x), z = _mm512_mul_ps(x, x);
    __m512 p = SET1(-5.70498872745e-3f);
    p = _mm512_fmadd_ps(p, z, SET1(2.06390887954e-2f));
    p = _mm512_fmadd_ps(p, z, SET1(-5.37397155531e-2f));
    p = _mm512_fmadd_ps(p, z, SET1(1.33314422036e-1f));
    p = _mm512_fmadd_ps(p, z, SET1(-3.33332819422e-1f));
    __m512 small = _mm512_fmadd_ps(_mm512_mul_ps(p, z), a, a);
    __m512 e = exp16(_mm512_mul_ps(SET1(2.0f), _mm512_min_ps(a, SET1(9.1f))));
    __m512 big = _mm512_sub_ps(SET1(1.0f), _mm512_div_ps(SET1(2.0f), _mm512_add_ps(e, SET1(1.0f))));
    __m512 y = blend(big, small, _mm512_cmp_ps_mask(a, SET1(0.625f), _CMP_LT_OQ));
    y = or_ps(y, sign_of(x));
    return blend(y, x, is_nan(x));
}

static inline __m512 sigmoid16(__m512 x) {
    __m512 e = exp16(or_ps(abs_ps(x), SET1(-0.0f))); /* exp(-|x|) */
    __m512 r = _mm512_div_ps(SET1(1.0f), _mm512_add_ps(SET1(1.0f), e));
    __m512 y = blend(_mm512_mul_ps(e, r), r, _mm512_cmp_ps_mask(x, _mm512_setzero_ps(), _CMP_GE_OQ));
    return blend(y, x, is_nan(x));
}

#endif
