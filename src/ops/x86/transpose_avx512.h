/*
 * transpose_avx512.h -- the 16x16 float transpose in zmm registers shared by
 * the AVX-512 kernels that turn NCHW rows into [position][channel] vectors
 * and back (conv_winograd_avx512.c) and a pooled stem's channel rows into
 * channels-last positions (conv_rows_avx512.c).  The AVX2 kernels' 8x8 is
 * transpose_avx2.h.  Include only from files built with -mavx512f.
 */
#ifndef INF_TRANSPOSE_AVX512_H
#define INF_TRANSPOSE_AVX512_H

#include <immintrin.h>

/* r[q] becomes column q of the 16x16 block whose rows were r[0..15]. */
static inline void inf__avx512_transpose16(__m512 r[16]) {
    __m512 t[16];
    for (int i = 0; i < 8; i++) {
        t[2 * i] = _mm512_unpacklo_ps(r[2 * i], r[2 * i + 1]);
        t[2 * i + 1] = _mm512_unpackhi_ps(r[2 * i], r[2 * i + 1]);
    }
    for (int i = 0; i < 4; i++) { /* r[4i + j], 128-bit lane L: column 4L + j of rows 4i .. 4i + 3 */
        r[4 * i + 0] = _mm512_shuffle_ps(t[4 * i], t[4 * i + 2], _MM_SHUFFLE(1, 0, 1, 0));
        r[4 * i + 1] = _mm512_shuffle_ps(t[4 * i], t[4 * i + 2], _MM_SHUFFLE(3, 2, 3, 2));
        r[4 * i + 2] = _mm512_shuffle_ps(t[4 * i + 1], t[4 * i + 3], _MM_SHUFFLE(1, 0, 1, 0));
        r[4 * i + 3] = _mm512_shuffle_ps(t[4 * i + 1], t[4 * i + 3], _MM_SHUFFLE(3, 2, 3, 2));
    }
    for (int j = 0; j < 4; j++) {
        __m512 ab_lo = _mm512_shuffle_f32x4(r[j], r[4 + j], 0x44), ab_hi = _mm512_shuffle_f32x4(r[j], r[4 + j], 0xEE);
        __m512 cd_lo = _mm512_shuffle_f32x4(r[8 + j], r[12 + j], 0x44);
        __m512 cd_hi = _mm512_shuffle_f32x4(r[8 + j], r[12 + j], 0xEE);
        t[j] = _mm512_shuffle_f32x4(ab_lo, cd_lo, 0x88);
        t[4 + j] = _mm512_shuffle_f32x4(ab_lo, cd_lo, 0xDD);
        t[8 + j] = _mm512_shuffle_f32x4(ab_hi, cd_hi, 0x88);
        t[12 + j] = _mm512_shuffle_f32x4(ab_hi, cd_hi, 0xDD);
    }
    for (int i = 0; i < 16; i++)
        r[i] = t[i];
}

#endif /* INF_TRANSPOSE_AVX512_H */
