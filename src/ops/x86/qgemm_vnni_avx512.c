/*
 * qgemm_vnni_avx512.c -- the AVX-512 VNNI kernel of the 8-bit integer GEMM
 * (ops/qgemm.h): the raw u8 x s8 sum with vpdpbusd.
 *
 * DESIGN: B is packed (ops/ref/qgemm.c) as panels of 16 columns, K in
 * quads: 64 bytes hold one quad of every column of the panel.  Four bytes of
 * an A row (one quad) are broadcast to all sixteen 32-bit lanes, and
 * vpdpbusd adds the four u8 x s8 products of each lane to its int32 sum
 * with no intermediate saturation (unlike vpmaddubsw) -- exact, wrapping
 * like the reference.  The micro-kernel keeps 6 rows x 32 columns of sums
 * in 12 zmm registers: per quad 2 loads of B, 6 broadcasts, 12 vpdpbusd.
 * Compiled with -mavx512f -mavx512bw -mavx512vl -mavx512vnni; called only
 * when inf__cpu_has_avx512_vnni().
 */
#include <immintrin.h>
#include <string.h>

#include "ops/qgemm.h"

enum { MR = 6, PANEL = 16 };

static inline __attribute__((always_inline)) void tile(const inf__qgemm_b *b, const uint8_t *a, int64_t lda,
                                                      const int32_t *init, const int mr, const int two, int64_t p,
                                                      int32_t *c, int64_t ldc) {
    const int8_t *b0 = (const int8_t *)b->data + p * b->kp * PANEL, *b1 = b0 + b->kp * PANEL;
    __m512i acc[MR][2];
    __m512i i0 = init ? _mm512_loadu_si512(init + p * PANEL) : _mm512_setzero_si512();
    __m512i i1 = init && two ? _mm512_loadu_si512(init + (p + 1) * PANEL) : _mm512_setzero_si512();
    for (int r = 0; r < MR; r++) acc[r][0] = i0, acc[r][1] = i1;
    for (int64_t g = 0; g < b->kp / 4; g++) {
        __m512i w0 = _mm512_loadu_si512(b0 + g * 4 * PANEL);
        __m512i w1 = two ? _mm512_loadu_si512(b1 + g * 4 * PANEL) : w0;
        for (int r = 0; r < mr; r++) {
            int32_t quad;
            memcpy(&quad, a + r * lda + 4 * g, 4);
            __m512i av = _mm512_set1_epi32(quad);
            acc[r][0] = _mm512_dpbusd_epi32(acc[r][0], av, w0);
            if (two) acc[r][1] = _mm512_dpbusd_epi32(acc[r][1], av, w1);
        }
    }
    for (int r = 0; r < mr; r++) {
        _mm512_storeu_si512(c + r * ldc + p * PANEL, acc[r][0]);
        if (two) _mm512_storeu_si512(c + r * ldc + (p + 1) * PANEL, acc[r][1]);
    }
}

/* The full 6 x 32 tile with its twelve accumulators named, so the
 * compiler keeps them in registers without shuffling copies between
 * iterations (what the generic tile() gets for this case). */
static void tile_6x32(const inf__qgemm_b *b, const uint8_t *a, int64_t lda, const int32_t *init, int64_t p, int32_t *c,
                      int64_t ldc) {
    const int8_t *b0 = (const int8_t *)b->data + p * b->kp * PANEL, *b1 = b0 + b->kp * PANEL;
    __m512i c00 = init ? _mm512_loadu_si512(init + p * PANEL) : _mm512_setzero_si512();
    __m512i c01 = init ? _mm512_loadu_si512(init + (p + 1) * PANEL) : _mm512_setzero_si512();
    __m512i c10 = c00, c11 = c01, c20 = c00, c21 = c01, c30 = c00, c31 = c01, c40 = c00, c41 = c01, c50 = c00, c51 = c01;
    const uint8_t *a0 = a, *a1 = a + lda, *a2 = a + 2 * lda, *a3 = a + 3 * lda, *a4 = a + 4 * lda, *a5 = a + 5 * lda;
    for (int64_t g = 0, n = b->kp / 4; g < n; g++) {
        __m512i w0 = _mm512_loadu_si512(b0 + g * 4 * PANEL), w1 = _mm512_loadu_si512(b1 + g * 4 * PANEL);
        int32_t q;
        __m512i av;
        memcpy(&q, a0 + 4 * g, 4), av = _mm512_set1_epi32(q);
        c00 = _mm512_dpbusd_epi32(c00, av, w0), c01 = _mm512_dpbusd_epi32(c01, av, w1);
        memcpy(&q, a1 + 4 * g, 4), av = _mm512_set1_epi32(q);
        c10 = _mm512_dpbusd_epi32(c10, av, w0), c11 = _mm512_dpbusd_epi32(c11, av, w1);
        memcpy(&q, a2 + 4 * g, 4), av = _mm512_set1_epi32(q);
        c20 = _mm512_dpbusd_epi32(c20, av, w0), c21 = _mm512_dpbusd_epi32(c21, av, w1);
        memcpy(&q, a3 + 4 * g, 4), av = _mm512_set1_epi32(q);
        c30 = _mm512_dpbusd_epi32(c30, av, w0), c31 = _mm512_dpbusd_epi32(c31, av, w1);
        memcpy(&q, a4 + 4 * g, 4), av = _mm512_set1_epi32(q);
        c40 = _mm512_dpbusd_epi32(c40, av, w0), c41 = _mm512_dpbusd_epi32(c41, av, w1);
        memcpy(&q, a5 + 4 * g, 4), av = _mm512_set1_epi32(q);
        c50 = _mm512_dpbusd_epi32(c50, av, w0), c51 = _mm512_dpbusd_epi32(c51, av, w1);
    }
    int32_t *o = c + p * PANEL;
    _mm512_storeu_si512(o, c00), _mm512_storeu_si512(o + PANEL, c01);
    _mm512_storeu_si512(o + ldc, c10), _mm512_storeu_si512(o + ldc + PANEL, c11);
    _mm512_storeu_si512(o + 2 * ldc, c20), _mm512_storeu_si512(o + 2 * ldc + PANEL, c21);
    _mm512_storeu_si512(o + 3 * ldc, c30), _mm512_storeu_si512(o + 3 * ldc + PANEL, c31);
    _mm512_storeu_si512(o + 4 * ldc, c40), _mm512_storeu_si512(o + 4 * ldc + PANEL, c41);
    _mm512_storeu_si512(o + 5 * ldc, c50), _mm512_storeu_si512(o + 5 * ldc + PANEL, c51);
}

/* tile() with mr and two as constants, so the accumulators stay in registers. */
static void tile_mr(const inf__qgemm_b *b, const uint8_t *a, int64_t lda, const int32_t *init, int mr, int two,
                    int64_t p, int32_t *c, int64_t ldc) {
    if (two) switch (mr) {
        case 6: tile_6x32(b, a, lda, init, p, c, ldc); return;
        case 5: tile(b, a, lda, init, 5, 1, p, c, ldc); return;
        case 4: tile(b, a, lda, init, 4, 1, p, c, ldc); return;
        case 3: tile(b, a, lda, init, 3, 1, p, c, ldc); return;
        case 2: tile(b, a, lda, init, 2, 1, p, c, ldc); return;
        default: tile(b, a, lda, init, 1, 1, p, c, ldc); return;
        }
    switch (mr) {
    case 6: tile(b, a, lda, init, 6, 0, p, c, ldc); return;
    case 5: tile(b, a, lda, init, 5, 0, p, c, ldc); return;
    case 4: tile(b, a, lda, init, 4, 0, p, c, ldc); return;
    case 3: tile(b, a, lda, init, 3, 0, p, c, ldc); return;
    case 2: tile(b, a, lda, init, 2, 0, p, c, ldc); return;
    default: tile(b, a, lda, init, 1, 0, p, c, ldc); return;
    }
}

static void rows(const inf__qgemm_b *b, const uint8_t *a, int64_t lda, const int32_t *init, int mr, int32_t *c,
                 int64_t ldc) {
    int64_t panels = b->np / PANEL, p = 0;
    for (; p + 2 <= panels; p += 2) tile_mr(b, a, lda, init, mr, 1, p, c, ldc);
    if (p < panels) tile_mr(b, a, lda, init, mr, 0, p, c, ldc);
}

void inf__qgemm_raw_vnni512(const inf__qgemm_b *b, int64_t m, const uint8_t *a, int64_t lda, const int32_t *init,
                            int32_t *c, int64_t ldc) {
    for (int64_t i = 0; i < m; i += MR)
        rows(b, a + i * lda, lda, init, (int)(m - i < MR ? m - i : MR), c + i * ldc, ldc);
}
