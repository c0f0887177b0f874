/*
 * qwinograd_avx2.c -- the AVX2 transforms of the INT8 Winograd convolutions
 * F(4x4, 3x3) and F(2x2, 3x3) (ops/qgemm.h, ops/ref/qwinograd.c): channels
 * as vector lanes.
 *
 * Input: per tile and 16 channels, the tile's bytes zero-extended to int16
 * (vpmovzxbw), the zero point subtracted (F(4x4): once, at the one point
 * it reaches, in_16x4), then B^T d B with adds, subtracts and shifts (the
 * result fits int16: any wrap of a partial sum cancels, the arithmetic being
 * mod 2^16); a tail of fewer than 16 channels runs the scalar steps.
 * Output: per tile and 8 columns, A'^T M A' with adds and shifts in wrapping
 * int32, the odd factor of the scale undone by a multiply (vpmulld by 9's
 * inverse mod 2^32, F(4x4)), then an arithmetic shift (exact: the sums are
 * the scale times the direct ones).  F(4x4) runs both a column of the tile
 * at a time, the half-transformed tile in a small array, so that the
 * compiler keeps the working set in registers (the whole tile as values
 * spilled every one of them).  The per-point GEMM between them is
 * inf__qconv_raw_avx2 (x86/qgemm_avx2.c).
 */
#include <immintrin.h>

#include "ops/qgemm.h"

/* one channel of a 2x2 tile (scalar), as the twin computes it */
static void in_channel2(const uint8_t *x, int64_t rowb, int64_t cs, bool live, int32_t zp, int16_t *vi, int64_t ldxi) {
    int32_t d[4][4], t[4][4];
    for (int a = 0; a < 4; a++)
        for (int b = 0; b < 4; b++)
            d[a][b] = live ? (int32_t)x[a * rowb + b * cs] - zp : 0;
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
static inline void in_16x2(const uint8_t *x, int64_t rowb, int64_t cs, __m256i vz, int16_t *vi, int64_t ldxi) {
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

static void in_tiles2(const uint8_t *x0, int64_t rowb, int64_t cs, int64_t c, int64_t cp, int32_t zp, int64_t trows,
                      int64_t tw, int16_t *v, int64_t ldxi) {
    __m256i vz = _mm256_set1_epi16((int16_t)zp);
    for (int64_t r = 0; r < trows; r++)
        for (int64_t tx = 0; tx < tw; tx++) {
            const uint8_t *x = x0 + 2 * r * rowb + 2 * tx * cs;
            int16_t *vi = v + (r * tw + tx) * cp;
            int64_t ch = 0;
            for (; ch + 16 <= c; ch += 16)
                in_16x2(x + ch, rowb, cs, vz, vi + ch, ldxi);
            for (; ch < cp; ch++)
                in_channel2(x + ch, rowb, cs, ch < c, zp, vi + ch, ldxi);
        }
}

static inline __m256i ld32(const int32_t *p) { return _mm256_loadu_si256((const __m256i *)p); }

static void out_tiles2(const int32_t *mm, int64_t ldxi, int64_t ldm, int64_t trows, int64_t tw, int64_t orows,
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

/* ---- F(4x4, 3x3) ---- */

/* B^T's rows applied to d[0..5] at stride sd, into r[0..5] at stride sr (int16). */
static inline void bt4(const __m256i *d, int sd, __m256i *r, int sr) {
    __m256i d0 = d[0], d1 = d[sd], d2 = d[2 * sd], d3 = d[3 * sd], d4 = d[4 * sd], d5 = d[5 * sd];
    __m256i s12 = _mm256_add_epi16(d1, d2), s34 = _mm256_add_epi16(d3, d4), q12 = _mm256_sub_epi16(d1, d2);
    __m256i q43 = _mm256_sub_epi16(d4, d3), q42 = _mm256_sub_epi16(d4, d2), q31 = _mm256_sub_epi16(d3, d1);
    __m256i q31x2 = _mm256_add_epi16(q31, q31);
    r[0] = _mm256_add_epi16(_mm256_sub_epi16(_mm256_slli_epi16(_mm256_sub_epi16(d0, d2), 2), d2), d4);
    r[sr] = _mm256_sub_epi16(s34, _mm256_slli_epi16(s12, 2));
    r[2 * sr] = _mm256_add_epi16(q43, _mm256_slli_epi16(q12, 2));
    r[3 * sr] = _mm256_add_epi16(q42, q31x2);
    r[4 * sr] = _mm256_sub_epi16(q42, q31x2);
    r[5 * sr] = _mm256_add_epi16(_mm256_sub_epi16(_mm256_slli_epi16(_mm256_sub_epi16(d1, d3), 2), d3), d5);
}

/* 16 channels of one 6x6 tile, a column at a time: B^T x down each column
 * (t, kept in L1), then B along each row of t, stored as it is made.  The
 * zero point is not subtracted from the 36 inputs: B^T's rows sum to
 * (0, -6, 0, 0, 0, 0), so B^T (x - zp) B = B^T x B - 36 zp at (1, 1) only,
 * the same value mod 2^16 (vz36 = 36 zp). */
static inline void in_16x4(const uint8_t *x, int64_t rowb, int64_t cs, __m256i vz36, int16_t *vi, int64_t ldxi) {
    __m256i t[36]; /* t[i * 6 + j] = (B^T x)[i][j] */
    for (int j = 0; j < 6; j++) {
        __m256i d[6];
        for (int i = 0; i < 6; i++)
            d[i] = _mm256_cvtepu8_epi16(_mm_loadu_si128((const __m128i *)(x + i * rowb + j * cs)));
        bt4(d, 1, t + j, 6);
    }
    for (int i = 0; i < 6; i++) {
        __m256i v[6];
        bt4(t + i * 6, 1, v, 1);
        if (i == 1)
            v[1] = _mm256_sub_epi16(v[1], vz36);
        for (int j = 0; j < 6; j++)
            st16(vi + (i * 6 + j) * ldxi, v[j]);
    }
}

/* one channel of a 6x6 tile (scalar, the twin's steps) */
static void in_channel4(const uint8_t *x, int64_t rowb, int64_t cs, bool live, int32_t zp, int16_t *vi, int64_t ldxi) {
    static const int32_t bt[6][6] = {{4, 0, -5, 0, 1, 0},  {0, -4, -4, 1, 1, 0}, {0, 4, -4, -1, 1, 0},
                                     {0, -2, -1, 2, 1, 0}, {0, 2, -1, -2, 1, 0}, {0, 4, 0, -5, 0, 1}};
    int32_t d[6][6], t[6][6];
    for (int i = 0; i < 6; i++)
        for (int j = 0; j < 6; j++)
            d[i][j] = live ? (int32_t)x[i * rowb + j * cs] - zp : 0;
    for (int i = 0; i < 6; i++)
        for (int j = 0; j < 6; j++) {
            t[i][j] = 0;
            for (int k = 0; k < 6; k++)
                t[i][j] += bt[i][k] * d[k][j];
        }
    for (int i = 0; i < 6; i++)
        for (int j = 0; j < 6; j++) {
            int32_t acc = 0;
            for (int k = 0; k < 6; k++)
                acc += t[i][k] * bt[j][k];
            vi[(i * 6 + j) * ldxi] = (int16_t)acc;
        }
}

static void in_tiles4(const uint8_t *x0, int64_t rowb, int64_t cs, int64_t c, int64_t cp, int32_t zp, int64_t trows,
                      int64_t tw, int16_t *v, int64_t ldxi) {
    __m256i vz36 = _mm256_set1_epi16((int16_t)(36 * zp));
    for (int64_t r = 0; r < trows; r++)
        for (int64_t tx = 0; tx < tw; tx++) {
            const uint8_t *x = x0 + 4 * r * rowb + 4 * tx * cs;
            int16_t *vi = v + (r * tw + tx) * cp;
            int64_t ch = 0;
            for (; ch + 16 <= c; ch += 16)
                in_16x4(x + ch, rowb, cs, vz36, vi + ch, ldxi);
            for (; ch < cp; ch++)
                in_channel4(x + ch, rowb, cs, ch < c, zp, vi + ch, ldxi);
        }
}

/* A'^T's rows applied to m[0..5] at stride sm, into y[0..3] at stride sy (int32, wrapping):
 * A'^T = [1 1 1 1 1 0; 0 1 -1 2 -2 0; 0 1 1 4 4 0; 0 1 -1 8 -8 2] (ops/ref/qwinograd.c). */
static inline void at4(const __m256i *m, int sm, __m256i *y, int sy) {
    __m256i p = _mm256_add_epi32(m[sm], m[2 * sm]), q = _mm256_sub_epi32(m[sm], m[2 * sm]);
    __m256i r = _mm256_add_epi32(m[3 * sm], m[4 * sm]), s = _mm256_sub_epi32(m[3 * sm], m[4 * sm]);
    y[0] = _mm256_add_epi32(_mm256_add_epi32(m[0], p), r);
    y[sy] = _mm256_add_epi32(q, _mm256_add_epi32(s, s));
    y[2 * sy] = _mm256_add_epi32(p, _mm256_slli_epi32(r, 2));
    y[3 * sy] = _mm256_add_epi32(_mm256_add_epi32(q, _mm256_slli_epi32(s, 3)), _mm256_add_epi32(m[5 * sm], m[5 * sm]));
}

/* One tile's 8 columns: A'^T down each column of M (t, kept in L1), then A'
 * along each row of t, each output row stored as it is made. */
static inline void out_tile4(const int32_t *m, int64_t ldxi, int64_t rows, int64_t cols, int32_t *y, int64_t ow,
                             int64_t ldc) {
    const __m256i inv9 = _mm256_set1_epi32(954437177); /* 9 * this = 1 mod 2^32 */
    __m256i t[24];                                     /* t[i * 6 + k] = (A'^T M)[i][k] */
    for (int k = 0; k < 6; k++) {
        __m256i mk[6];
        for (int i = 0; i < 6; i++)
            mk[i] = ld32(m + (i * 6 + k) * ldxi);
        at4(mk, 1, t + k, 6);
    }
    for (int64_t i = 0; i < rows; i++) {
        __m256i o[4];
        at4(t + i * 6, 1, o, 1);
        for (int64_t k = 0; k < cols; k++)
            _mm256_storeu_si256((__m256i *)(y + (i * ow + k) * ldc),
                                _mm256_srai_epi32(_mm256_mullo_epi32(o[k], inv9), 6));
    }
}

static void out_tiles4(const int32_t *mm, int64_t ldxi, int64_t ldm, int64_t trows, int64_t tw, int64_t orows,
                       int64_t ow, int64_t ncols, int32_t *c, int64_t ldc) {
    for (int64_t r = 0; r < trows; r++)
        for (int64_t tx = 0; tx < tw; tx++) {
            int64_t rows = orows - 4 * r < 4 ? orows - 4 * r : 4, cols = ow - 4 * tx < 4 ? ow - 4 * tx : 4;
            int32_t *y = c + (4 * r * ow + 4 * tx) * ldc;
            for (int64_t j = 0; j < ncols; j += 8)
                out_tile4(mm + (r * tw + tx) * ldm + j, ldxi, rows, cols, y + j, ow, ldc);
        }
}

void inf__qwino_in_avx2(int tile, const uint8_t *x0, int64_t rowb, int64_t cs, int64_t c, int64_t cp, int32_t zp,
                        int64_t trows, int64_t tw, int16_t *v, int64_t ldxi) {
    if (tile == 4)
        in_tiles4(x0, rowb, cs, c, cp, zp, trows, tw, v, ldxi);
    else
        in_tiles2(x0, rowb, cs, c, cp, zp, trows, tw, v, ldxi);
}

void inf__qwino_out_avx2(int tile, const int32_t *mm, int64_t ldxi, int64_t ldm, int64_t trows, int64_t tw,
                         int64_t orows, int64_t ow, int64_t ncols, int32_t *c, int64_t ldc) {
    if (tile == 4)
        out_tiles4(mm, ldxi, ldm, trows, tw, orows, ow, ncols, c, ldc);
    else
        out_tiles2(mm, ldxi, ldm, trows, tw, orows, ow, ncols, c, ldc);
}
