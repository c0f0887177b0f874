/*
 * qwinograd_avx2.c -- the AVX2 transforms of the INT8 Winograd F(2x2, 3x3)
 * (ops/qgemm.h, ops/ref/qwinograd.c): channels as vector lanes.
 *
 * Input: per tile and 16 channels, the 16 positions' bytes zero-extended
 * to int16 (vpmovzxbw), the zero point subtracted, then B^T d B in 32
 * vpaddw/vpsubw (|values| <= 1020: no int16 wrap); a tail of fewer than 16
 * channels runs the scalar steps.  Output: per tile and 8 columns, A^T M A
 * in 24 vpaddd/vpsubd (wrapping, as the twin's uint32 sums) and an
 * arithmetic shift by 2 (exact: the sums are 4 * the direct ones).
 * The per-point GEMM between them is inf__qconv_raw_avx2 (x86/qgemm_avx2.c).
 */
#include <immintrin.h>

#include "ops/qgemm.h"

/* one channel (scalar), as the twin computes it */
static void in_channel(const uint8_t *x, int64_t rowb, int64_t cs, bool live, int32_t zp, int16_t *vi, int64_t ldxi) {
    int32_t d[4][4], t[4][4];
    for (int a = 0; a < 4; a++)
        for (int b = 0; b < 4; b++) d[a][b] = live ? (int32_t)x[a * rowb + b * cs] - zp : 0;
    for (int b = 0; b < 4; b++) {
        t[0][b] = d[0][b] - d[2][b], t[1][b] = d[1][b] + d[2][b];
        t[2][b] = d[2][b] - d[1][b], t[3][b] = d[1][b] - d[3][b];
    }
    for (int a = 0; a < 4; a++) {
        vi[(a * 4 + 0) * ldxi] = (int16_t)(t[a][0] - t[a][2]);
        vi[(a * 4 + 1) * ldxi] = (int16_t)(t[a][1] + t[a][2]);
        vi[(a * 4 + 2) * ldxi] = (int16_t)(t[a][2] - t[a][1]);
        vi[(a * 4 + 3) * ldxi] = (int16_t)(t[a][1] - t[a][3]);
    }
}

static inline __m256i ld16(const uint8_t *p, __m256i vz) {
    return _mm256_sub_epi16(_mm256_cvtepu8_epi16(_mm_loadu_si128((const __m128i *)p)), vz);
}

static inline void st16(int16_t *p, __m256i v) { _mm256_storeu_si256((__m256i *)p, v); }

/* 16 channels of one tile: row a of d, then B^T along rows, B along columns. */
static inline void in_16(const uint8_t *x, int64_t rowb, int64_t cs, __m256i vz, int16_t *vi, int64_t ldxi) {
    __m256i t[4][4];
    for (int b = 0; b < 4; b++) {
        __m256i d0 = ld16(x + b * cs, vz), d1 = ld16(x + rowb + b * cs, vz);
        __m256i d2 = ld16(x + 2 * rowb + b * cs, vz), d3 = ld16(x + 3 * rowb + b * cs, vz);
        t[0][b] = _mm256_sub_epi16(d0, d2), t[1][b] = _mm256_add_epi16(d1, d2);
        t[2][b] = _mm256_sub_epi16(d2, d1), t[3][b] = _mm256_sub_epi16(d1, d3);
    }
    for (int a = 0; a < 4; a++) {
        st16(vi + (a * 4 + 0) * ldxi, _mm256_sub_epi16(t[a][0], t[a][2]));
        st16(vi + (a * 4 + 1) * ldxi, _mm256_add_epi16(t[a][1], t[a][2]));
        st16(vi + (a * 4 + 2) * ldxi, _mm256_sub_epi16(t[a][2], t[a][1]));
        st16(vi + (a * 4 + 3) * ldxi, _mm256_sub_epi16(t[a][1], t[a][3]));
    }
}

void inf__qwino_in_avx2(const uint8_t *x0, int64_t rowb, int64_t cs, int64_t c, int64_t cp, int32_t zp,
                        int64_t trows, int64_t tw, int16_t *v, int64_t ldxi) {
    __m256i vz = _mm256_set1_epi16((int16_t)zp);
    for (int64_t r = 0; r < trows; r++)
        for (int64_t tx = 0; tx < tw; tx++) {
            const uint8_t *x = x0 + 2 * r * rowb + 2 * tx * cs;
            int16_t *vi = v + (r * tw + tx) * cp;
            int64_t ch = 0;
            for (; ch + 16 <= c; ch += 16) in_16(x + ch, rowb, cs, vz, vi + ch, ldxi);
            for (; ch < cp; ch++) in_channel(x + ch, rowb, cs, ch < c, zp, vi + ch, ldxi);
        }
}

static inline __m256i ld32(const int32_t *p) { return _mm256_loadu_si256((const __m256i *)p); }

void inf__qwino_out_avx2(const int32_t *mm, int64_t ldxi, int64_t ldm, int64_t trows, int64_t tw, int64_t orows,
                         int64_t ow, int64_t ncols, int32_t *c, int64_t ldc) {
    for (int64_t r = 0; r < trows; r++)
        for (int64_t tx = 0; tx < tw; tx++) {
            bool down = 2 * r + 1 < orows, right = 2 * tx + 1 < ow;
            int32_t *y = c + (2 * r * ow + 2 * tx) * ldc;
            for (int64_t j = 0; j < ncols; j += 8) {
                const int32_t *m = mm + (r * tw + tx) * ldm + j;
                __m256i t0[4], t1[4];
                for (int b = 0; b < 4; b++) {
                    __m256i m0 = ld32(m + b * ldxi), m1 = ld32(m + (4 + b) * ldxi);
                    __m256i m2 = ld32(m + (8 + b) * ldxi), m3 = ld32(m + (12 + b) * ldxi);
                    t0[b] = _mm256_add_epi32(_mm256_add_epi32(m0, m1), m2);
                    t1[b] = _mm256_sub_epi32(_mm256_sub_epi32(m1, m2), m3);
                }
                __m256i y00 = _mm256_add_epi32(_mm256_add_epi32(t0[0], t0[1]), t0[2]);
                __m256i y01 = _mm256_sub_epi32(_mm256_sub_epi32(t0[1], t0[2]), t0[3]);
                __m256i y10 = _mm256_add_epi32(_mm256_add_epi32(t1[0], t1[1]), t1[2]);
                __m256i y11 = _mm256_sub_epi32(_mm256_sub_epi32(t1[1], t1[2]), t1[3]);
                _mm256_storeu_si256((__m256i *)(y + j), _mm256_srai_epi32(y00, 2));
                if (right) _mm256_storeu_si256((__m256i *)(y + ldc + j), _mm256_srai_epi32(y01, 2));
                if (down) {
                    _mm256_storeu_si256((__m256i *)(y + ow * ldc + j), _mm256_srai_epi32(y10, 2));
                    if (right) _mm256_storeu_si256((__m256i *)(y + (ow + 1) * ldc + j), _mm256_srai_epi32(y11, 2));
                }
            }
        }
}
