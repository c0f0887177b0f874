/*
 * max_avx512.h -- the exact lane-by-lane maximum the AVX-512 MaxPools share
 * (pool_avx512.c, the in-register pooling of conv_rows_avx512.c): +0 over an
 * equal -0, NaN where either input is NaN, order-free -- so a 2x2 window's
 * four values give the same bits whichever pairs are taken first.  Included
 * by *_avx512.c files only.
 */
#ifndef INF_OPS_X86_MAX_AVX512_H
#define INF_OPS_X86_MAX_AVX512_H

#include <immintrin.h>
#include <math.h>

/* vrangeps (AVX512DQ: part of the avx512 path, core/cpu.c) and a NaN blend:
 * vmax's value in two instructions and a blend instead of five. */
__attribute__((target("avx512dq"))) static inline __m512 inf__max2_avx512(__m512 a, __m512 b) {
    __m512 m = _mm512_range_ps(a, b, 0x05); /* max; sign from the comparison: max(-0, +0) = +0 */
    return _mm512_mask_blend_ps(_mm512_cmp_ps_mask(a, b, _CMP_UNORD_Q), m, _mm512_set1_ps(NAN));
}

/* The even and the odd lanes of the 32 floats (a, b): the column pairs of a 2-wide, stride-2 window. */
static inline __m512 inf__even_lanes_avx512(__m512 a, __m512 b) {
    return _mm512_permutex2var_ps(a, _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30), b);
}
static inline __m512 inf__odd_lanes_avx512(__m512 a, __m512 b) {
    return _mm512_permutex2var_ps(a, _mm512_setr_epi32(1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31), b);
}

/* The first n of 16 lanes (none for n <= 0). */
static inline __mmask16 inf__lanes16(int64_t n) {
    return n >= 16 ? (__mmask16)0xFFFF : n <= 0 ? (__mmask16)0 : (__mmask16)((1u << n) - 1u);
}

#endif /* INF_OPS_X86_MAX_AVX512_H */
