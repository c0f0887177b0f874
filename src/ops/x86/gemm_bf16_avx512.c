/*
 * gemm_bf16_avx512.c -- the bf16 GEMM of a session of precision bf16
 * (ops/gemm_bf16.h): activations rounded to bf16 row by row (vcvtne2ps2bf16),
 * times weights packed as bf16 panels at session creation, summed in FP32
 * with vdpbf16ps (32 multiply-adds per instruction, twice an FP32 FMA's).
 *
 * DESIGN
 *   A is packed into the scratch as bf16 rows (pairs of k as 32-bit words,
 *   an odd k padded with a zero).  The tile is up to 8 rows x 3 panels of
 *   16 columns (24 accumulators; up to 6 panels when there are one or two
 *   rows, so a batch-1 product still has 6 independent chains): per k pair,
 *   one 64-byte load per panel and one 32-bit broadcast per row feed
 *   rows x panels vdpbf16ps.  Each accumulator runs the whole k in order, so a
 *   C element's bits depend on its row, its column and k only (the twin,
 *   inf__bf16_gemm_ref, gives the same).  Tasks are (row block, column
 *   tile) pairs over the pool; the epilogue is applied in the store.
 */
#include <immintrin.h>
#include <string.h>

#include "ops/gemm_bf16.h"

#define BF16_TARGET __attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16")))
#define MR 8  /* rows per tile */
#define MC 64 /* rows per task */

typedef struct bf16_job {
    int64_t m, n, k, k2, lda, ldc, aps;
    int64_t n16, np_tile, n_ct, n_rb;
    const float *a;
    const uint16_t *bp;
    float *c;
    const inf__bf16_epilogue *ep;
    uint32_t *ap; /* A as bf16 pairs, row stride aps words */
} bf16_job;

static int64_t pairs_stride(int64_t k) { return ((k + 1) / 2 + 15) / 16 * 16; }

size_t inf__bf16_ws_bytes(int64_t m, int64_t k) { return (size_t)(m * pairs_stride(k)) * 4 + 64; }

/* Rows [begin, end) of A to bf16 pairs, 32 floats at a time (the zero of a
 * masked load pads an odd k). */
BF16_TARGET static void pack_rows(void *arg, int64_t begin, int64_t end) {
    const bf16_job *jb = arg;
    for (int64_t i = begin; i < end; i++) {
        const float *src = jb->a + i * jb->lda;
        uint16_t *dst = (uint16_t *)(jb->ap + i * jb->aps);
        for (int64_t p = 0; p < jb->k; p += 32) {
            int64_t rem = jb->k - p, lo_n = rem < 16 ? rem : 16;
            int64_t hi_n = rem - lo_n < 16 ? rem - lo_n : 16;
            __m512 lo = _mm512_maskz_loadu_ps((__mmask16)((1u << lo_n) - 1), src + p);
            __m512 hi = _mm512_maskz_loadu_ps((__mmask16)((1u << hi_n) - 1), src + p + 16);
            __m512i v = (__m512i)_mm512_cvtne2ps_pbh(hi, lo);
            int64_t nst = rem >= 32 ? 32 : (rem + 1) / 2 * 2;
            _mm512_mask_storeu_epi16(dst + p, nst == 32 ? ~(__mmask32)0 : (__mmask32)((1u << nst) - 1), v);
        }
    }
}

/* The store of one tile row segment: v = alpha acc [+ c] [+ bias] [+ res]. */
BF16_TARGET static inline __attribute__((always_inline)) void store16(const bf16_job *jb, int64_t i, int64_t j,
                                                                      __m512 v) {
    const inf__bf16_epilogue *ep = jb->ep;
    int64_t valid = jb->n - j < 16 ? jb->n - j : 16;
    __mmask16 mk = (__mmask16)(valid == 16 ? 0xffffu : (1u << valid) - 1);
    float *c = jb->c + i * jb->ldc + j;
    if (ep->alpha != 1.0f) v = _mm512_mul_ps(_mm512_set1_ps(ep->alpha), v);
    if (ep->accumulate) v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(mk, c));
    if (ep->bias) v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(mk, ep->bias + j));
    if (ep->res) v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(mk, ep->res + i * ep->ldr + j));
    _mm512_mask_storeu_ps(c, mk, v);
}

/* C[i0 .. i0+R, panels p0 .. p0+P) over the whole k. */
BF16_TARGET static inline __attribute__((always_inline)) void tile(const bf16_job *jb, int64_t i0, int64_t p0,
                                                                   const int R, const int P) {
    __m512 acc[MR][6];
    const uint32_t *ar[MR];
    const uint16_t *b[6];
    for (int r = 0; r < R; r++)
        ar[r] = jb->ap + (i0 + r) * jb->aps;
    for (int p = 0; p < P; p++)
        b[p] = jb->bp + (p0 + p) * jb->k2 * 32;
    for (int r = 0; r < R; r++)
        for (int p = 0; p < P; p++)
            acc[r][p] = _mm512_setzero_ps();
    for (int64_t kp = 0; kp < jb->k2; kp++) {
        __m512bh bv[6];
        for (int p = 0; p < P; p++)
            bv[p] = (__m512bh)_mm512_loadu_si512(b[p] + kp * 32);
        for (int r = 0; r < R; r++) {
            __m512bh av = (__m512bh)_mm512_set1_epi32((int)ar[r][kp]);
            for (int p = 0; p < P; p++)
                acc[r][p] = _mm512_dpbf16_ps(acc[r][p], bv[p], av);
        }
    }
    for (int r = 0; r < R; r++) {
        for (int p = 0; p < P; p++)
            store16(jb, i0 + r, (p0 + p) * 16, acc[r][p]);
        if (jb->ep->act) {
            int64_t j = p0 * 16, w = jb->n - j < P * 16 ? jb->n - j : P * 16;
            float *c = jb->c + (i0 + r) * jb->ldc + j;
            jb->ep->act(c, c, w);
        }
    }
}

#define TILE_CASE(R, P)                                                                                                \
    case (R)*8 + (P):                                                                                                  \
        tile(jb, i0, p0, R, P);                                                                                        \
        break;
#define TILE_ROW(R) TILE_CASE(R, 1) TILE_CASE(R, 2) TILE_CASE(R, 3)

BF16_TARGET static void tile_any(const bf16_job *jb, int64_t i0, int64_t p0, int r, int p) {
    switch (r * 8 + p) {
        TILE_ROW(1)
        TILE_ROW(2) TILE_ROW(3) TILE_ROW(4) TILE_ROW(5) TILE_ROW(6) TILE_ROW(7) TILE_ROW(8) TILE_CASE(1, 4)
            TILE_CASE(1, 5) TILE_CASE(1, 6) TILE_CASE(2, 4) TILE_CASE(2, 5) TILE_CASE(2, 6) default : break;
    }
}

/* Tasks [begin, end): task t is row block t / n_ct, column tile t % n_ct. */
BF16_TARGET static void compute_tasks(void *arg, int64_t begin, int64_t end) {
    const bf16_job *jb = arg;
    for (int64_t t = begin; t < end; t++) {
        int64_t rb = t / jb->n_ct, ct = t % jb->n_ct;
        int64_t p0 = ct * jb->np_tile, np = jb->n16 - p0 < jb->np_tile ? jb->n16 - p0 : jb->np_tile;
        int64_t i_end = (rb + 1) * MC < jb->m ? (rb + 1) * MC : jb->m;
        for (int64_t i0 = rb * MC; i0 < i_end; i0 += MR)
            tile_any(jb, i0, p0, (int)(i_end - i0 < MR ? i_end - i0 : MR), (int)np);
    }
}

void inf__bf16_gemm_avx512(inf__pool *pool, int64_t m, int64_t n, int64_t k, const float *a, int64_t lda,
                           const uint16_t *bp, float *c, int64_t ldc, const inf__bf16_epilogue *ep, void *ws) {
    if (m <= 0 || n <= 0) return;
    bf16_job jb = {.m = m,
                   .n = n,
                   .k = k,
                   .k2 = (k + 1) / 2,
                   .lda = lda,
                   .ldc = ldc,
                   .aps = pairs_stride(k),
                   .a = a,
                   .bp = bp,
                   .c = c,
                   .ep = ep};
    jb.ap = (uint32_t *)(((uintptr_t)ws + 63) & ~(uintptr_t)63);
    jb.n16 = (n + 15) / 16;
    jb.np_tile = m <= 2 ? 6 : 3;
    jb.n_ct = (jb.n16 + jb.np_tile - 1) / jb.np_tile;
    jb.n_rb = (m + MC - 1) / MC;
    inf__pool_range(m * k >= 65536 ? pool : NULL, m, 16, pack_rows, &jb);
    int64_t tasks = jb.n_rb * jb.n_ct;
    /* about a microsecond of multiply-adds per task before threads pay */
    inf__pool_range(m * n * k >= 262144 ? pool : NULL, tasks, 1, compute_tasks, &jb);
}
