/*
 * qgemm_quad_tile.h -- the body shared by the two 256-bit kernels that read
 * B packed in quads (panels of 8 columns, K in groups of 4 int8 values:
 * ops/qgemm.h) and A as uint8 in place: AVX-VNNI (x86/qgemm_avxvnni.c,
 * vpdpbusd) and AVX2 vpmaddubsw for pair-safe weights
 * (x86/qgemm_maddubs_avx2.c).  Each includes this file once after defining
 *   DP(acc, a, w)   acc += the four u8 x s8 products of each 32-bit lane
 *   QUAD_CONV_FN    the name of its implicit-GEMM convolution entry
 *   QUAD_GEMM_FN    the name of its GEMM entry
 * (and DP_SETUP: declarations DP needs, e.g. a constant, in each tile).
 *
 * A row's quad is broadcast to the eight 32-bit lanes; the micro-kernel
 * keeps 6 rows x 16 columns in 12 ymm sums (+ 2 B registers + 1
 * broadcast).  One kernel serves both entries: it walks `ntaps` taps of cq
 * values from row pointers (the convolution's in-place rows); the GEMM is
 * the one-tap case with rows a + i * lda and cq = kp.
 */
#include <immintrin.h>
#include <string.h>

#include "ops/qgemm.h"

#ifndef DP_SETUP
#define DP_SETUP
#endif

enum { MR = 6, PANEL = 8 };

static inline __m256i bcast4(const uint8_t *p) {
    int32_t q;
    memcpy(&q, p, 4);
    return _mm256_set1_epi32(q);
}

static inline __m256i init_of(const int32_t *init, int64_t p) {
    return init ? _mm256_loadu_si256((const __m256i *)(init + p * PANEL)) : _mm256_setzero_si256();
}

#define ST(r, acc) _mm256_storeu_si256((__m256i *)(o + (r)*ldc), acc)

/* The full 6 x 16 tile (panels p, p + 1), sums named so they stay in registers. */
static void tile_6x16(const inf__qgemm_b *b, const uint8_t *const *rows, const int64_t *tapoff, int64_t ntaps,
                      int64_t cq, const int32_t *init, int64_t p, int32_t *c, int64_t ldc) {
    const int8_t *w0p = (const int8_t *)b->data + p * b->kp * PANEL, *w1p = w0p + b->kp * PANEL;
    DP_SETUP;
    __m256i c00 = init_of(init, p), c01 = init_of(init, p + 1);
    __m256i c10 = c00, c11 = c01, c20 = c00, c21 = c01, c30 = c00, c31 = c01, c40 = c00, c41 = c01, c50 = c00,
            c51 = c01;
    int64_t nq = cq / 4;
    for (int64_t t = 0; t < ntaps; t++) {
        const uint8_t *a0 = rows[0] + tapoff[t], *a1 = rows[1] + tapoff[t], *a2 = rows[2] + tapoff[t];
        const uint8_t *a3 = rows[3] + tapoff[t], *a4 = rows[4] + tapoff[t], *a5 = rows[5] + tapoff[t];
        const int8_t *b0 = w0p + t * nq * 4 * PANEL, *b1 = w1p + t * nq * 4 * PANEL;
        for (int64_t g = 0; g < nq; g++) {
            __m256i w0 = _mm256_loadu_si256((const __m256i *)(b0 + g * 4 * PANEL));
            __m256i w1 = _mm256_loadu_si256((const __m256i *)(b1 + g * 4 * PANEL)), av;
            av = bcast4(a0 + 4 * g), DP(c00, av, w0), DP(c01, av, w1);
            av = bcast4(a1 + 4 * g), DP(c10, av, w0), DP(c11, av, w1);
            av = bcast4(a2 + 4 * g), DP(c20, av, w0), DP(c21, av, w1);
            av = bcast4(a3 + 4 * g), DP(c30, av, w0), DP(c31, av, w1);
            av = bcast4(a4 + 4 * g), DP(c40, av, w0), DP(c41, av, w1);
            av = bcast4(a5 + 4 * g), DP(c50, av, w0), DP(c51, av, w1);
        }
    }
    int32_t *o = c + p * PANEL;
    ST(0, c00), ST(1, c10), ST(2, c20), ST(3, c30), ST(4, c40), ST(5, c50);
    o += PANEL;
    ST(0, c01), ST(1, c11), ST(2, c21), ST(3, c31), ST(4, c41), ST(5, c51);
}

/* Any tile of mr <= 6 rows and one or two panels (the tails). */
static inline __attribute__((always_inline)) void tile(const inf__qgemm_b *b, const uint8_t *const *rows,
                                                       const int64_t *tapoff, int64_t ntaps, int64_t cq,
                                                       const int32_t *init, const int mr, const int two, int64_t p,
                                                       int32_t *c, int64_t ldc) {
    const int8_t *w0p = (const int8_t *)b->data + p * b->kp * PANEL, *w1p = w0p + b->kp * PANEL;
    DP_SETUP;
    __m256i acc[MR][2];
    __m256i i0 = init_of(init, p), i1 = two ? init_of(init, p + 1) : i0;
    for (int r = 0; r < MR; r++)
        acc[r][0] = i0, acc[r][1] = i1;
    int64_t nq = cq / 4;
    for (int64_t t = 0; t < ntaps; t++) {
        const int8_t *b0 = w0p + t * nq * 4 * PANEL, *b1 = w1p + t * nq * 4 * PANEL;
        for (int64_t g = 0; g < nq; g++) {
            __m256i w0 = _mm256_loadu_si256((const __m256i *)(b0 + g * 4 * PANEL));
            __m256i w1 = two ? _mm256_loadu_si256((const __m256i *)(b1 + g * 4 * PANEL)) : w0;
            for (int r = 0; r < mr; r++) {
                __m256i av = bcast4(rows[r] + tapoff[t] + 4 * g);
                DP(acc[r][0], av, w0);
                if (two) DP(acc[r][1], av, w1);
            }
        }
    }
    for (int r = 0; r < mr; r++) {
        _mm256_storeu_si256((__m256i *)(c + r * ldc + p * PANEL), acc[r][0]);
        if (two) _mm256_storeu_si256((__m256i *)(c + r * ldc + (p + 1) * PANEL), acc[r][1]);
    }
}

#define TILE_CASES(two)                                                                                                \
    switch (mr) {                                                                                                      \
    case 5:                                                                                                            \
        tile(b, rows, tapoff, ntaps, cq, init, 5, two, p, c, ldc);                                                     \
        return;                                                                                                        \
    case 4:                                                                                                            \
        tile(b, rows, tapoff, ntaps, cq, init, 4, two, p, c, ldc);                                                     \
        return;                                                                                                        \
    case 3:                                                                                                            \
        tile(b, rows, tapoff, ntaps, cq, init, 3, two, p, c, ldc);                                                     \
        return;                                                                                                        \
    case 2:                                                                                                            \
        tile(b, rows, tapoff, ntaps, cq, init, 2, two, p, c, ldc);                                                     \
        return;                                                                                                        \
    case 1:                                                                                                            \
        tile(b, rows, tapoff, ntaps, cq, init, 1, two, p, c, ldc);                                                     \
        return;                                                                                                        \
    default:                                                                                                           \
        tile(b, rows, tapoff, ntaps, cq, init, 6, two, p, c, ldc);                                                     \
        return;                                                                                                        \
    }

static void tile_mr(const inf__qgemm_b *b, const uint8_t *const *rows, const int64_t *tapoff, int64_t ntaps, int64_t cq,
                    const int32_t *init, int mr, int two, int64_t p, int32_t *c, int64_t ldc) {
    if (two && mr == MR) {
        tile_6x16(b, rows, tapoff, ntaps, cq, init, p, c, ldc);
        return;
    }
    if (two) TILE_CASES(1)
    TILE_CASES(0)
}

void QUAD_CONV_FN(const inf__qgemm_b *b, int64_t m, const uint8_t *const *rows, const int64_t *tapoff, int64_t ntaps,
                  int64_t cq, const int32_t *init, int32_t *c, int64_t ldc) {
    int64_t panels = b->np / PANEL;
    for (int64_t i = 0; i < m; i += MR) {
        int mr = (int)(m - i < MR ? m - i : MR);
        int64_t p = 0;
        for (; p + 2 <= panels; p += 2)
            tile_mr(b, rows + i, tapoff, ntaps, cq, init, mr, 1, p, c + i * ldc, ldc);
        if (p < panels) tile_mr(b, rows + i, tapoff, ntaps, cq, init, mr, 0, p, c + i * ldc, ldc);
    }
}

void QUAD_GEMM_FN(const inf__qgemm_b *b, int64_t m, const uint8_t *a, int64_t lda, const int32_t *init, int32_t *c,
                  int64_t ldc) {
    static const int64_t tap0[1] = {0};
    for (int64_t i = 0; i < m; i += MR) {
        const uint8_t *rows[MR];
        int mr = (int)(m - i < MR ? m - i : MR);
        for (int r = 0; r < mr; r++)
            rows[r] = a + (i + r) * lda;
        QUAD_CONV_FN(b, mr, rows, tap0, 1, b->kp, init, c + i * ldc, ldc);
    }
}
