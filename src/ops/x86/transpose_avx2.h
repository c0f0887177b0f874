/*
 * transpose_avx2.h -- the 8x8 float transpose in ymm registers shared by the
 * AVX2 convolution kernels that turn [position][channel] sums into NCHW rows
 * (conv_direct_avx2.c) and NCHW rows into [position][channel] vectors and
 * back (conv_winograd_avx2.c).  Include only from files built with -mavx2.
 */
#ifndef INF_TRANSPOSE_AVX2_H
#define INF_TRANSPOSE_AVX2_H

#include <immintrin.h>

/* r[q] becomes column q of the 8x8 block whose rows were r[0..7]. */
static inline void inf__avx2_transpose8(__m256 r[8]) {
    __m256 t[8], u[8];
    for (int i = 0; i < 4; i++) {
        t[2 * i] = _mm256_unpacklo_ps(r[2 * i], r[2 * i + 1]);
        t[2 * i + 1] = _mm256_unpackhi_ps(r[2 * i], r[2 * i + 1]);
    }
    for (int i = 0; i < 2; i++) {
        u[4 * i + 0] = _mm256_shuffle_ps(t[4 * i], t[4 * i + 2], _MM_SHUFFLE(1, 0, 1, 0));
        u[4 * i + 1] = _mm256_shuffle_ps(t[4 * i], t[4 * i + 2], _MM_SHUFFLE(3, 2, 3, 2));
        u[4 * i + 2] = _mm256_shuffle_ps(t[4 * i + 1], t[4 * i + 3], _MM_SHUFFLE(1, 0, 1, 0));
        u[4 * i + 3] = _mm256_shuffle_ps(t[4 * i + 1], t[4 * i + 3], _MM_SHUFFLE(3, 2, 3, 2));
    }
    for (int i = 0; i < 4; i++) {
        r[i] = _mm256_permute2f128_ps(u[i], u[i + 4], 0x20);
        r[i + 4] = _mm256_permute2f128_ps(u[i], u[i + 4], 0x31);
    }
}

/* Lanes [0, n) set (n clamped to 0..8), for masked loads and stores. */
static inline __m256i inf__avx2_lanes(int64_t n) {
    if (n > 8) n = 8;
    if (n < 0) n = 0;
    return _mm256_cmpgt_epi32(_mm256_set1_epi32((int32_t)n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

/* The 8 floats of a row of n floats from column j >= 0, +0 past its end. */
static inline __m256 inf__avx2_row_load(const float *row, int64_t j, int64_t n) {
    if (j + 8 <= n) return _mm256_loadu_ps(row + j);
    return _mm256_maskload_ps(row + j, inf__avx2_lanes(n - j));
}

#endif
