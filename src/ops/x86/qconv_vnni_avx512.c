/*
 * qconv_vnni_avx512.c -- the implicit-GEMM (direct) kernel of the 8-bit
 * convolutions on AVX-512 VNNI: the raw u8 x s8 sums of a block of output
 * positions, read straight from the channels-last input image instead of
 * from an im2col copy.
 *
 * DESIGN: the convolution's K runs over (tap, channel) -- the order W is
 * packed in (ops/ref/quantize_conv.c, ops/qgemm.h panels of 16 columns, K in
 * quads).  With the input uint8, channels last and zero-point padded
 * (ops/ref/qgemm_drive.c), the K values of output position p for tap t are
 * the cq contiguous bytes at rows[p] + tapoff[t]: no copy is needed when cq
 * is a multiple of 4 (a quad never straddles two taps, so the packed B is
 * walked contiguously).  The micro-kernel is the GEMM's (qgemm_vnni_avx512.c):
 * 6 positions x 32 channels in 12 zmm sums, vpdpbusd (exact, no
 * saturation), plus the per-column start value init (the folded zero-point
 * term).  The caller applies no other correction: it uses this kernel only
 * when W has no zero point (any_b_zp false).  Compiled with -mavx512vnni;
 * called only when inf__qgemm_best_isa() is INF_QGEMM_VNNI512.
 */
#include <immintrin.h>
#include <string.h>

#include "ops/qgemm.h"

enum { MR = 6, PANEL = 16 };

static inline __m512i bcast4(const uint8_t *p) {
    int32_t q;
    memcpy(&q, p, 4);
    return _mm512_set1_epi32(q);
}

/* The full 6 x 32 tile, accumulators named so they stay in registers. */
static void tile_6x32(const inf__qgemm_b *b, const uint8_t *const *rows, const int64_t *tapoff, int64_t ntaps,
                      int64_t cq, const int32_t *init, int64_t p, int32_t *c, int64_t ldc) {
    const int8_t *w0p = (const int8_t *)b->data + p * b->kp * PANEL, *w1p = w0p + b->kp * PANEL;
    __m512i c00 = _mm512_loadu_si512(init + p * PANEL), c01 = _mm512_loadu_si512(init + (p + 1) * PANEL);
    __m512i c10 = c00, c11 = c01, c20 = c00, c21 = c01, c30 = c00, c31 = c01, c40 = c00, c41 = c01, c50 = c00, c51 = c01;
    int64_t nq = cq / 4;
    for (int64_t t = 0; t < ntaps; t++) {
        const uint8_t *a0 = rows[0] + tapoff[t], *a1 = rows[1] + tapoff[t], *a2 = rows[2] + tapoff[t];
        const uint8_t *a3 = rows[3] + tapoff[t], *a4 = rows[4] + tapoff[t], *a5 = rows[5] + tapoff[t];
        const int8_t *b0 = w0p + t * nq * 4 * PANEL, *b1 = w1p + t * nq * 4 * PANEL;
        for (int64_t g = 0; g < nq; g++) {
            __m512i w0 = _mm512_loadu_si512(b0 + g * 4 * PANEL), w1 = _mm512_loadu_si512(b1 + g * 4 * PANEL), av;
            av = bcast4(a0 + 4 * g), c00 = _mm512_dpbusd_epi32(c00, av, w0), c01 = _mm512_dpbusd_epi32(c01, av, w1);
            av = bcast4(a1 + 4 * g), c10 = _mm512_dpbusd_epi32(c10, av, w0), c11 = _mm512_dpbusd_epi32(c11, av, w1);
            av = bcast4(a2 + 4 * g), c20 = _mm512_dpbusd_epi32(c20, av, w0), c21 = _mm512_dpbusd_epi32(c21, av, w1);
            av = bcast4(a3 + 4 * g), c30 = _mm512_dpbusd_epi32(c30, av, w0), c31 = _mm512_dpbusd_epi32(c31, av, w1);
            av = bcast4(a4 + 4 * g), c40 = _mm512_dpbusd_epi32(c40, av, w0), c41 = _mm512_dpbusd_epi32(c41, av, w1);
            av = bcast4(a5 + 4 * g), c50 = _mm512_dpbusd_epi32(c50, av, w0), c51 = _mm512_dpbusd_epi32(c51, av, w1);
        }
    }
    int32_t *o = c + p * PANEL;
    _mm512_storeu_si512(o, c00), _mm512_storeu_si512(o + PANEL, c01);
    _mm512_storeu_si512(o + ldc, c10), _mm512_storeu_si512(o + ldc + PANEL, c11);
    _mm512_storeu_si512(o + 2 * ldc, c20), _mm512_storeu_si512(o + 2 * ldc + PANEL, c21);
    _mm512_storeu_si512(o + 3 * ldc, c30), _mm512_storeu_si512(o + 3 * ldc + PANEL, c31);
    _mm512_storeu_si512(o + 4 * ldc, c40), _mm512_storeu_si512(o + 4 * ldc + PANEL, c41);
    _mm512_storeu_si512(o + 5 * ldc, c50), _mm512_storeu_si512(o + 5 * ldc + PANEL, c51);
}

/* Any tile of mr <= 6 rows and one or two panels (the tails). */
static inline __attribute__((always_inline)) void tile(const inf__qgemm_b *b, const uint8_t *const *rows,
                                                      const int64_t *tapoff, int64_t ntaps, int64_t cq,
                                                      const int32_t *init, const int mr, const int two, int64_t p,
                                                      int32_t *c, int64_t ldc) {
    const int8_t *w0p = (const int8_t *)b->data + p * b->kp * PANEL, *w1p = w0p + b->kp * PANEL;
    __m512i acc[MR][2];
    __m512i i0 = _mm512_loadu_si512(init + p * PANEL);
    __m512i i1 = two ? _mm512_loadu_si512(init + (p + 1) * PANEL) : i0;
    for (int r = 0; r < MR; r++) acc[r][0] = i0, acc[r][1] = i1;
    int64_t nq = cq / 4;
    for (int64_t t = 0; t < ntaps; t++) {
        const int8_t *b0 = w0p + t * nq * 4 * PANEL, *b1 = w1p + t * nq * 4 * PANEL;
        for (int64_t g = 0; g < nq; g++) {
            __m512i w0 = _mm512_loadu_si512(b0 + g * 4 * PANEL);
            __m512i w1 = two ? _mm512_loadu_si512(b1 + g * 4 * PANEL) : w0;
            for (int r = 0; r < mr; r++) {
                __m512i av = bcast4(rows[r] + tapoff[t] + 4 * g);
                acc[r][0] = _mm512_dpbusd_epi32(acc[r][0], av, w0);
                if (two) acc[r][1] = _mm512_dpbusd_epi32(acc[r][1], av, w1);
            }
        }
    }
    for (int r = 0; r < mr; r++) {
        _mm512_storeu_si512(c + r * ldc + p * PANEL, acc[r][0]);
        if (two) _mm512_storeu_si512(c + r * ldc + (p + 1) * PANEL, acc[r][1]);
    }
}

#define TILE_CASES(two)                                                                                                \
    switch (mr) {                                                                                                      \
    case 5: tile(b, rows, tapoff, ntaps, cq, init, 5, two, p, c, ldc); return;                                         \
    case 4: tile(b, rows, tapoff, ntaps, cq, init, 4, two, p, c, ldc); return;                                         \
    case 3: tile(b, rows, tapoff, ntaps, cq, init, 3, two, p, c, ldc); return;                                         \
    case 2: tile(b, rows, tapoff, ntaps, cq, init, 2, two, p, c, ldc); return;                                         \
    case 1: tile(b, rows, tapoff, ntaps, cq, init, 1, two, p, c, ldc); return;                                         \
    default: tile(b, rows, tapoff, ntaps, cq, init, 6, two, p, c, ldc); return;                                        \
    }

static void tile_mr(const inf__qgemm_b *b, const uint8_t *const *rows, const int64_t *tapoff, int64_t ntaps,
                    int64_t cq, const int32_t *init, int mr, int two, int64_t p, int32_t *c, int64_t ldc) {
    if (two && mr == MR) {
        tile_6x32(b, rows, tapoff, ntaps, cq, init, p, c, ldc);
        return;
    }
    if (two) TILE_CASES(1)
    TILE_CASES(0)
}

void inf__qconv_raw_vnni512(const inf__qgemm_b *b, int64_t m, const uint8_t *const *rows, const int64_t *tapoff,
                            int64_t ntaps, int64_t cq, const int32_t *init, int32_t *c, int64_t ldc) {
    int64_t panels = b->np / PANEL;
    for (int64_t i = 0; i < m; i += MR) {
        int mr = (int)(m - i < MR ? m - i : MR);
        if (mr < MR && m >= MR) /* a short last tile: the full tile ending at row m (rows before it again, same sums) */
            i = m - MR, mr = MR;
        int64_t p = 0;
        for (; p + 2 <= panels; p += 2) tile_mr(b, rows + i, tapoff, ntaps, cq, init, mr, 1, p, c + i * ldc, ldc);
        if (p < panels) tile_mr(b, rows + i, tapoff, ntaps, cq, init, mr, 0, p, c + i * ldc, ldc);
    }
}

/* ---- a conv with a fused 2 x 2 MaxPool (the stem) ----
 * The windows' sums pooled in registers: a tile of two windows (8
 * positions, rows[4 w + k] window w's k-th) x 32 channels in 16 zmm sums,
 * each window's four maxed into one row of c -- no int32 store of the
 * unpooled positions, no pooling pass, and no row tails (the stem's
 * pooled rows are whole tiles).  The caller stores the pooled rows. */
static inline __m512i max4(__m512i a, __m512i b, __m512i c, __m512i d) {
    return _mm512_max_epi32(_mm512_max_epi32(a, b), _mm512_max_epi32(c, d));
}

/* nw (1 or 2) windows x (two ? 32 : 16) channels from panel p */
static inline __attribute__((always_inline)) void pool_tile(const inf__qgemm_b *b, const uint8_t *const *rows,
                                                            const int64_t *tapoff, int64_t ntaps, int64_t cq,
                                                            const int32_t *init, const int nw, const int two, int64_t p,
                                                            int32_t *c, int64_t ldc) {
    const int8_t *w0p = (const int8_t *)b->data + p * b->kp * PANEL, *w1p = w0p + b->kp * PANEL;
    __m512i acc[8][2];
    __m512i i0 = _mm512_loadu_si512(init + p * PANEL), i1 = two ? _mm512_loadu_si512(init + (p + 1) * PANEL) : i0;
    for (int r = 0; r < 8; r++)
        acc[r][0] = i0, acc[r][1] = i1;
    int64_t nq = cq / 4;
    for (int64_t t = 0; t < ntaps; t++) {
        const int8_t *b0 = w0p + t * nq * 4 * PANEL, *b1 = w1p + t * nq * 4 * PANEL;
        const uint8_t *a[8];
        for (int r = 0; r < 4 * nw; r++)
            a[r] = rows[r] + tapoff[t];
        for (int64_t g = 0; g < nq; g++) {
            __m512i w0 = _mm512_loadu_si512(b0 + g * 4 * PANEL);
            __m512i w1 = two ? _mm512_loadu_si512(b1 + g * 4 * PANEL) : w0;
            for (int r = 0; r < 4 * nw; r++) {
                __m512i av = bcast4(a[r] + 4 * g);
                acc[r][0] = _mm512_dpbusd_epi32(acc[r][0], av, w0);
                if (two) acc[r][1] = _mm512_dpbusd_epi32(acc[r][1], av, w1);
            }
        }
    }
    for (int w = 0; w < nw; w++) {
        __m512i(*q)[2] = acc + 4 * w;
        _mm512_storeu_si512(c + w * ldc + p * PANEL, max4(q[0][0], q[1][0], q[2][0], q[3][0]));
        if (two) _mm512_storeu_si512(c + w * ldc + (p + 1) * PANEL, max4(q[0][1], q[1][1], q[2][1], q[3][1]));
    }
}

/* The full pooled tile, two windows x 32 channels (the stem's), its 16 sums named so they stay in registers as
 * tile_6x32's do, and one loop over the K quads (tap t, quad g of cq / 4; the stem's cq is 4, one quad a tap).
 * pool_tile made gcc 12 copy every sum to another register, some through the stack, on every quad (32 moves
 * beside 16 vpdpbusd): the max4 after the loop pairs the sums in a way its register allocator answered with
 * copies in the loop; an empty asm holding the 16 sums in registers at the loop's exit (POOL_PIN) leaves the loop
 * with no move. */
#define POOL_DECL(r) __m512i c##r##0 = _mm512_setzero_si512(), c##r##1 = _mm512_setzero_si512();
#define POOL_STEP(r)                                                                                                   \
    av = bcast4(rows[r] + o), c##r##0 = _mm512_dpbusd_epi32(c##r##0, av, w0),                                          \
    c##r##1 = _mm512_dpbusd_epi32(c##r##1, av, w1);
#define POOL_PIN(r)  __asm__("" : "+v"(c##r##0), "+v"(c##r##1));
#define POOL_ROWS(M) M(0) M(1) M(2) M(3) M(4) M(5) M(6) M(7)
static __attribute__((noinline)) void pool_tile_2x32(const inf__qgemm_b *b, const uint8_t *const *rows,
                                                     const int64_t *tapoff, int64_t ntaps, int64_t cq,
                                                     const int32_t *init, int64_t p, int32_t *c, int64_t ldc) {
    const int8_t *w0p = (const int8_t *)b->data + p * b->kp * PANEL, *w1p = w0p + b->kp * PANEL;
    POOL_ROWS(POOL_DECL)
    int64_t nq = cq / 4, t = 0, g = 0;
    for (int64_t k = 0; k < ntaps * nq; k++) { /* K quad k = t * nq + g: packed B's row of quads k */
        int64_t o = tapoff[t] + 4 * g;
        __m512i w0 = _mm512_loadu_si512(w0p + k * 4 * PANEL), w1 = _mm512_loadu_si512(w1p + k * 4 * PANEL), av;
        POOL_ROWS(POOL_STEP)
        if (++g == nq) g = 0, t++;
    }
    POOL_ROWS(POOL_PIN)
    /* + init after the max: the same int32 values (the sums are exact), one add per window instead of four */
    __m512i i0 = _mm512_loadu_si512(init + p * PANEL), i1 = _mm512_loadu_si512(init + (p + 1) * PANEL);
    int32_t *o0 = c + p * PANEL, *o1 = o0 + ldc;
    _mm512_storeu_si512(o0, _mm512_add_epi32(max4(c00, c10, c20, c30), i0));
    _mm512_storeu_si512(o0 + PANEL, _mm512_add_epi32(max4(c01, c11, c21, c31), i1));
    _mm512_storeu_si512(o1, _mm512_add_epi32(max4(c40, c50, c60, c70), i0));
    _mm512_storeu_si512(o1 + PANEL, _mm512_add_epi32(max4(c41, c51, c61, c71), i1));
}

void inf__qconv_pool4_vnni512(const inf__qgemm_b *b, int64_t nwin, const uint8_t *const *rows, const int64_t *tapoff,
                              int64_t ntaps, int64_t cq, const int32_t *init, int32_t *c, int64_t ldc) {
    int64_t panels = b->np / PANEL;
    for (int64_t w = 0; w < nwin; w += 2) {
        const uint8_t *const *rw = rows + 4 * w;
        int32_t *cw = c + w * ldc;
        int64_t p = 0;
        if (nwin - w >= 2) {
            for (; p + 2 <= panels; p += 2) pool_tile_2x32(b, rw, tapoff, ntaps, cq, init, p, cw, ldc);
            if (p < panels) pool_tile(b, rw, tapoff, ntaps, cq, init, 2, 0, p, cw, ldc);
        } else {
            for (; p + 2 <= panels; p += 2)
                pool_tile(b, rw, tapoff, ntaps, cq, init, 1, 1, p, cw, ldc);
            if (p < panels) pool_tile(b, rw, tapoff, ntaps, cq, init, 1, 0, p, cw, ldc);
        }
    }
}
