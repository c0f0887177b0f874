/*
 * qgemm_ubs2_avx2.c -- the routed AVX2 kernel of the 8-bit integer GEMM and
 * of the implicit-GEMM convolution (ops/qgemm.h) for pair-safe weights
 * (INF_QGEMM_AVX2_UBS with a route): per 8-K group of a 16-column tile,
 * "ubs2" where the packer proved it exact, "ubs" elsewhere.
 *
 * DESIGN: a K quad of a row is broadcast to the eight 32-bit lanes (one per
 * column of the panel) and vpmaddubsw multiplies it by the column's four
 * int8 weights, adding neighbours into two int16 slots per lane.
 *   ubs:  vpmaddwd by ones widens those into int32 and vpaddd adds them to
 *         the sums: 2 multiplies per 32 products (qgemm_maddubs_avx2.c),
 *         exact for pair-safe weights (|b0| + |b1| <= 128).
 *   ubs2: two quads' vpmaddubsw results are first added in int16 (vpaddw),
 *         then one vpmaddwd by ones + vpaddd: 3 multiplies per 64 products,
 *         ~1.45x ubs's rate in register-only loops and ~1.2x as this kernel
 *         on Zen 5's 256-bit path (bench/quant/RESULTS.md, session 18).  An int16 slot then sums four u8 x s8 products;
 *         it cannot leave int16 when its four weights' positive sum is <= 128
 *         and negative sum >= -128, which the packer checks per (panel, group)
 *         (ops/ref/qgemm.c, group_ubs2).
 * The route lists each tile's groups by class -- ubs2 on both panels, on the
 * first only, on the second only, on neither -- so each class runs its own
 * branch-free loop, the two quads' A offsets 8g and 8g + 4 (the GEMM) or
 * from a per-call table (a convolution: tap offset + channel, K running
 * over taps of cq values as W is packed; a group may straddle two taps).
 * A trailing quad (kp % 8 == 4) takes ubs.  The sums are exact in every
 * step, so the result equals the reference's bit for bit (int32 sums wrap
 * the same), whatever the route.  The micro-kernel keeps 3 rows x 16
 * columns (below); tiles outer, rows inner, so a tile's B stays in L1.
 * Compiled for AVX2 only (never -mavxvnni).
 */
#include <immintrin.h>
#include <string.h>

#include "ops/qgemm.h"
#include "ops/x86/qubs_steps_avx2.h"

enum { MR = 3, PANEL = 8, MAXQ = INF_QGEMM_ROUTE_MAX_KP / 4 };

/* One quad by ubs. */
static inline __m256i step_q(__m256i acc, __m256i a, __m256i w, __m256i ones) {
    return _mm256_add_epi32(acc, _mm256_madd_epi16(_mm256_maddubs_epi16(a, w), ones));
}

static inline __m256i init_of(const int32_t *init, int64_t p) {
    return init ? _mm256_loadu_si256((const __m256i *)(init + p * PANEL)) : _mm256_setzero_si256();
}

/* The full tile, 3 rows x 16 columns: six sums, B's four vectors of a group
 * in registers (loaded once for the three rows), the two broadcasts and two
 * temporaries -- 15 of the 16 ymm registers.  (Six rows with B read per row
 * from memory ran slower than ubs: loads, not multiplies, bound it.) */
#define ROW3(R, S0, S1)                                                                                                \
    do {                                                                                                               \
        __m256i q0 = bcast4(a##R + o0), q1 = bcast4(a##R + o1);                                                        \
        c##R##0 = S0(c##R##0, q0, q1, w00, w01, ones), c##R##1 = S1(c##R##1, q0, q1, w10, w11, ones);                  \
    } while (0)

#define LOOP3(count, S0, S1)                                                                                           \
    for (int32_t n_ = (count); n_ > 0; n_--) {                                                                         \
        int64_t g = *gl++, o0 = qoff ? qoff[2 * g] : 8 * g, o1 = qoff ? qoff[2 * g + 1] : o0 + 4;                      \
        __m256i w00 = ld(w0p + g * 64), w01 = ld(w0p + g * 64 + 32), w10 = ld(w1p + g * 64),                           \
                w11 = ld(w1p + g * 64 + 32);                                                                           \
        ROW3(0, S0, S1);                                                                                               \
        ROW3(1, S0, S1);                                                                                               \
        ROW3(2, S0, S1);                                                                                               \
    }

#define ST(r, acc) _mm256_storeu_si256((__m256i *)(o + (r)*ldc), acc)

/* The full tile: panels p, p + 1, three rows, the tile's route rt (qoff NULL: the GEMM's A, quad q at 4q). */
static inline __attribute__((always_inline)) void tile_3x16(const inf__qgemm_b *b, const uint8_t *const *rows,
                                                            const int64_t *qoff, const int32_t *rt, const int32_t *init,
                                                            int64_t p, int32_t *c, int64_t ldc) {
    const int8_t *w0p = (const int8_t *)b->data + p * b->kp * PANEL, *w1p = w0p + b->kp * PANEL;
    const __m256i ones = _mm256_set1_epi16(1);
    const uint8_t *a0 = rows[0], *a1 = rows[1], *a2 = rows[2];
    __m256i c00 = init_of(init, p), c01 = init_of(init, p + 1);
    __m256i c10 = c00, c11 = c01, c20 = c00, c21 = c01;
    const int32_t *gl = rt + INF_QGEMM_ROUTE_HDR;
    LOOP3(rt[0], step2, step2)
    LOOP3(rt[1], step2, step1)
    LOOP3(rt[2], step1, step2)
    LOOP3(rt[3], step1, step1)
    if (b->kp % 8) { /* the trailing quad */
        int64_t q = b->kp / 4 - 1, o0 = qoff ? qoff[q] : 4 * q;
        __m256i x0 = ld(w0p + q * 32), x1 = ld(w1p + q * 32);
#define ROWQ(R)                                                                                                        \
    do {                                                                                                               \
        __m256i qa = bcast4(a##R + o0);                                                                                \
        c##R##0 = step_q(c##R##0, qa, x0, ones), c##R##1 = step_q(c##R##1, qa, x1, ones);                              \
    } while (0)
        ROWQ(0);
        ROWQ(1);
        ROWQ(2);
#undef ROWQ
    }
    int32_t *o = c + p * PANEL;
    ST(0, c00), ST(1, c10), ST(2, c20);
    o += PANEL;
    ST(0, c01), ST(1, c11), ST(2, c21);
}

/* The tails: mr < 3 rows, one or two panels. */
#define LOOPN(count, S0, S1)                                                                                           \
    for (int32_t n_ = (count); n_ > 0; n_--) {                                                                         \
        int64_t g = *gl++, o0 = qoff ? qoff[2 * g] : 8 * g, o1 = qoff ? qoff[2 * g + 1] : o0 + 4;                      \
        __m256i w00 = ld(w0p + g * 64), w01 = ld(w0p + g * 64 + 32);                                                   \
        __m256i w10 = two ? ld(w1p + g * 64) : w00, w11 = two ? ld(w1p + g * 64 + 32) : w01;                           \
        for (int r = 0; r < mr; r++) {                                                                                 \
            __m256i q0 = bcast4(rows[r] + o0), q1 = bcast4(rows[r] + o1);                                              \
            acc[r][0] = S0(acc[r][0], q0, q1, w00, w01, ones);                                                         \
            if (two) acc[r][1] = S1(acc[r][1], q0, q1, w10, w11, ones);                                                \
        }                                                                                                              \
    }

static inline __attribute__((always_inline)) void tile(const inf__qgemm_b *b, const uint8_t *const *rows,
                                                       const int64_t *qoff, const int32_t *rt, const int32_t *init,
                                                       const int mr, const int two, int64_t p, int32_t *c,
                                                       int64_t ldc) {
    const int8_t *w0p = (const int8_t *)b->data + p * b->kp * PANEL, *w1p = w0p + b->kp * PANEL;
    const __m256i ones = _mm256_set1_epi16(1);
    __m256i acc[MR][2];
    __m256i i0 = init_of(init, p), i1 = two ? init_of(init, p + 1) : i0;
    for (int r = 0; r < MR; r++)
        acc[r][0] = i0, acc[r][1] = i1;
    const int32_t *gl = rt + INF_QGEMM_ROUTE_HDR;
    LOOPN(rt[0], step2, step2)
    LOOPN(rt[1], step2, step1)
    LOOPN(rt[2], step1, step2)
    LOOPN(rt[3], step1, step1)
    if (b->kp % 8) {
        int64_t q = b->kp / 4 - 1;
        for (int r = 0; r < mr; r++) {
            __m256i qa = bcast4(rows[r] + (qoff ? qoff[q] : 4 * q));
            acc[r][0] = step_q(acc[r][0], qa, ld(w0p + q * 32), ones);
            if (two) acc[r][1] = step_q(acc[r][1], qa, ld(w1p + q * 32), ones);
        }
    }
    for (int r = 0; r < mr; r++) {
        _mm256_storeu_si256((__m256i *)(c + r * ldc + p * PANEL), acc[r][0]);
        if (two) _mm256_storeu_si256((__m256i *)(c + r * ldc + (p + 1) * PANEL), acc[r][1]);
    }
}

#define TILE_CASES(two)                                                                                                \
    switch (mr) {                                                                                                      \
    case 2:                                                                                                            \
        tile(b, rows, qoff, rt, init, 2, two, p, c, ldc);                                                              \
        return;                                                                                                        \
    case 1:                                                                                                            \
        tile(b, rows, qoff, rt, init, 1, two, p, c, ldc);                                                              \
        return;                                                                                                        \
    default:                                                                                                           \
        tile(b, rows, qoff, rt, init, 3, two, p, c, ldc);                                                              \
        return;                                                                                                        \
    }

static inline __attribute__((always_inline)) void tile_mr(const inf__qgemm_b *b, const uint8_t *const *rows,
                                                          const int64_t *qoff, const int32_t *rt, const int32_t *init,
                                                          int mr, int two, int64_t p, int32_t *c, int64_t ldc) {
    if (two && mr == MR) {
        tile_3x16(b, rows, qoff, rt, init, p, c, ldc);
        return;
    }
    if (two) TILE_CASES(1)
    TILE_CASES(0)
}

/* The m rows (from row pointers, quad q of K at rows[i] + qoff[q]) against every tile: tiles outer, rows
 * inner, so a tile's B (kp x 16 bytes) stays in L1 while the rows pass. */
static inline __attribute__((always_inline)) void routed(const inf__qgemm_b *b, int64_t m, const uint8_t *const *rows,
                                                         const int64_t *qoff, const int32_t *init, int32_t *c,
                                                         int64_t ldc) {
    int64_t panels = b->np / PANEL, stride = INF_QGEMM_ROUTE_HDR + b->kp / 8;
    for (int64_t p = 0; p < panels; p += 2)
        for (int64_t i = 0; i < m; i += MR) {
            int mr = (int)(m - i < MR ? m - i : MR);
            tile_mr(b, rows + i, qoff, b->route + p / 2 * stride, init, mr, p + 1 < panels, p, c + i * ldc, ldc);
        }
}

/* The two instances: a convolution's quads through its offset table, the GEMM's at 4q (no table loads). */
static void routed_conv(const inf__qgemm_b *b, int64_t m, const uint8_t *const *rows, const int64_t *qoff,
                        const int32_t *init, int32_t *c, int64_t ldc) {
    routed(b, m, rows, qoff, init, c, ldc);
}

static void routed_gemm(const inf__qgemm_b *b, int64_t m, const uint8_t *const *rows, const int32_t *init, int32_t *c,
                        int64_t ldc) {
    routed(b, m, rows, NULL, init, c, ldc);
}

void inf__qconv_raw_avx2ubs(const inf__qgemm_b *b, int64_t m, const uint8_t *const *rows, const int64_t *tapoff,
                            int64_t ntaps, int64_t cq, const int32_t *init, int32_t *c, int64_t ldc) {
    int64_t nq = ntaps * cq / 4;
    if (!b->route || ntaps * cq != b->kp || nq > MAXQ) {
        inf__qconv_raw_avx2ubs1(b, m, rows, tapoff, ntaps, cq, init, c, ldc);
        return;
    }
    int64_t qoff[MAXQ];
    for (int64_t t = 0, q = 0; t < ntaps; t++)
        for (int64_t ch = 0; ch < cq; ch += 4)
            qoff[q++] = tapoff[t] + ch;
    routed_conv(b, m, rows, qoff, init, c, ldc);
}

void inf__qgemm_raw_avx2ubs(const inf__qgemm_b *b, int64_t m, const uint8_t *a, int64_t lda, const int32_t *init,
                            int32_t *c, int64_t ldc) {
    if (!b->route) {
        inf__qgemm_raw_avx2ubs1(b, m, a, lda, init, c, ldc);
        return;
    }
    enum { RB = 48 }; /* rows per pass over B */
    for (int64_t i0 = 0; i0 < m; i0 += RB) {
        const uint8_t *rows[RB];
        int64_t mr = m - i0 < RB ? m - i0 : RB;
        for (int64_t r = 0; r < mr; r++)
            rows[r] = a + (i0 + r) * lda;
        routed_gemm(b, mr, rows, init, c + i0 * ldc, ldc);
    }
}
