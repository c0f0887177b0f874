/*
 * gemm_avx512.c -- the AVX-512 micro-kernel of the float32 GEMM: a tile of
 * up to 6 rows x 32 columns (two adjacent 16-column B panels, one zmm
 * each), 12 zmm accumulators, 2 B loads and one broadcast per row per k
 * step -- half the instructions of two AVX2 6x16 tiles.  With A read in
 * place a block of exactly 8 rows runs as one 8-row tile (16 accumulators;
 * gemm_avx2.c's pair_rows).
 *
 * DESIGN: the driver (blocking, packing, threads, epilogues) is the one of
 * gemm_avx2.c, so the packed layouts ([k][16] B panels, [k][6] A panels,
 * B packed at load) are shared and nothing is packed twice.  The driver
 * pairs full adjacent panels and calls this kernel when the CPU's path is
 * avx512 (core/cpu.c; INFERA_CPU=avx2 keeps the AVX2 kernel) and A is read
 * in place (alpha 1, m <= 144), or also with A packed when the L1d has
 * 48 KiB and zmm FMAs run at full width (fma_width_avx512.c; Zen 5: 1.5-1.8x
 * the AVX2 tile there): on Zen 4 (32 KiB L1d, split) the pairs ran 0.7-0.9x
 * with A packed -- a pair's 32 KiB B block fills that L1d.  Each C
 * element is the same chain acc = fma(a, b, acc) from 0 over p in order,
 * stored with the same rounding, so both widths give identical bits and
 * batch invariance (DESIGN.md section 1) holds across them.
 * Edge tiles (fewer than 16 columns, or a packed A panel with fewer than
 * 6 rows) run a one-panel tile with masked loads and stores instead of the
 * AVX2 path's buffer and scalar loops; same element-wise arithmetic.
 * On Zen 4 a zmm FMA is two 256-bit halves (double-pumped), so peak FLOP/s
 * are the AVX2 kernel's; the gain is in issue slots and loads.  Zen 5 runs
 * it full width: twice the AVX2 peak.
 * Built with -mavx512f -mavx512bw -mavx512vl -mavx512dq -mfma (CMake:
 * *_avx512.c).
 */
#if defined(__x86_64__) && defined(__AVX512F__)

#include <immintrin.h>

#include "ops/x86/gemm_avx512.h"

enum {
    MR = 6,          /* rows of a packed A panel */
    MR_IN_PLACE = 8, /* most rows of a tile whose A is read in place (16 accumulators) */
};

/* c[0:16] = v {+ c | fma(beta, c, v)}, then the epilogue (bias, res: this
 * row's 16 columns, or NULL) */
static inline __attribute__((always_inline)) void store_row(__m512 v, float *c, int mode, __m512 vb, const float *bias,
                                                            const float *res, bool relu) {
    if (mode == INF__GEMM_STORE_ADD) v = _mm512_add_ps(v, _mm512_loadu_ps(c));
    else if (mode == INF__GEMM_STORE_BETA) v = _mm512_fmadd_ps(vb, _mm512_loadu_ps(c), v);
    if (bias) v = _mm512_add_ps(v, _mm512_loadu_ps(bias));
    if (res) v = _mm512_add_ps(v, _mm512_loadu_ps(res));
    if (relu) v = _mm512_max_ps(v, _mm512_setzero_ps()); /* NaN -> 0, as Relu */
    _mm512_storeu_ps(c, v);
}

/* R rows (compile-time after inlining); a_step: floats between row r's
 * elements of consecutive p (1 in place, MR packed); r_step: between rows. */
static inline __attribute__((always_inline)) void tile(const int R, int64_t kc, const float *restrict a, int64_t a_step,
                                                       int64_t r_step, const float *restrict b0,
                                                       const float *restrict b1, int64_t ldbk, float *c, int64_t ldc,
                                                       int mode, float beta, const inf__gemm_tile_ep *ep) {
    __m512 acc[MR][2];
    for (int r = 0; r < R; r++) acc[r][0] = _mm512_setzero_ps(), acc[r][1] = _mm512_setzero_ps();
#pragma GCC unroll 4
    for (int64_t p = 0; p < kc; p++, a += a_step, b0 += ldbk, b1 += ldbk) {
        __m512 v0 = _mm512_loadu_ps(b0), v1 = _mm512_loadu_ps(b1);
#pragma GCC unroll 6
        for (int r = 0; r < R; r++) {
            __m512 av = _mm512_set1_ps(a[r * r_step]);
            acc[r][0] = _mm512_fmadd_ps(av, v0, acc[r][0]);
            acc[r][1] = _mm512_fmadd_ps(av, v1, acc[r][1]);
        }
    }
    __m512 vb = _mm512_set1_ps(beta);
    if (!ep) {
        for (int r = 0; r < R; r++, c += ldc)
            store_row(acc[r][0], c, mode, vb, NULL, NULL, false),
                store_row(acc[r][1], c + 16, mode, vb, NULL, NULL, false);
        return;
    }
    const float *bias = ep->bias, *res = ep->res;
    for (int r = 0; r < R; r++, c += ldc, res = res ? res + ep->ldr : NULL) {
        store_row(acc[r][0], c, mode, vb, bias, res, ep->relu);
        store_row(acc[r][1], c + 16, mode, vb, bias ? bias + 16 : NULL, res ? res + 16 : NULL, ep->relu);
    }
}

/* The 8-row tile (A in place) is a function of its own: as a case of
 * inf__gemm_tile_x32_avx512's switch it changed the code GCC made for the
 * other cases (the CNN's 32-channel Winograd layers +3 us by node minimum
 * at 2 threads), so it is written out here: tile()'s loop and stores with
 * 8 rows of A in place. */
void inf__gemm_tile_x32_8rows_avx512(int64_t kc, const float *a, int64_t lda, const float *b0, const float *b1,
                                     int64_t ldbk, float *c, int64_t ldc, int mode, float beta,
                                     const inf__gemm_tile_ep *ep) {
    enum { R = MR_IN_PLACE };
    __m512 acc[R][2];
    for (int r = 0; r < R; r++) acc[r][0] = _mm512_setzero_ps(), acc[r][1] = _mm512_setzero_ps();
#pragma GCC unroll 1 /* 16 FMAs a step are work enough: unrolled 4 times, same node times, twice the code */
    for (int64_t p = 0; p < kc; p++, a++, b0 += ldbk, b1 += ldbk) {
        __m512 v0 = _mm512_loadu_ps(b0), v1 = _mm512_loadu_ps(b1);
#pragma GCC unroll 8
        for (int r = 0; r < R; r++) {
            __m512 av = _mm512_set1_ps(a[r * lda]);
            acc[r][0] = _mm512_fmadd_ps(av, v0, acc[r][0]);
            acc[r][1] = _mm512_fmadd_ps(av, v1, acc[r][1]);
        }
    }
    __m512 vb = _mm512_set1_ps(beta);
    const float *bias = ep ? ep->bias : NULL, *res = ep ? ep->res : NULL;
    bool relu = ep && ep->relu;
#pragma GCC unroll 1
    for (int r = 0; r < R; r++, c += ldc, res = res ? res + ep->ldr : NULL) {
        store_row(acc[r][0], c, mode, vb, bias, res, relu);
        store_row(acc[r][1], c + 16, mode, vb, bias ? bias + 16 : NULL, res ? res + 16 : NULL, relu);
    }
}

#define TILE_CASE(R)                                                                                                   \
    case R:                                                                                                            \
        if (lda > 0)                                                                                                   \
            tile(R, kc, a, 1, lda, b0, b1, ldbk, c, ldc, mode, beta, ep);                                              \
        else                                                                                                           \
            tile(R, kc, a, MR, 1, b0, b1, ldbk, c, ldc, mode, beta, ep);                                               \
        break;

void inf__gemm_tile_x32_avx512(int rows, int64_t kc, const float *a, int64_t lda, const float *b0, const float *b1,
                               int64_t ldbk, float *c, int64_t ldc, int mode, float beta, const inf__gemm_tile_ep *ep) {
    switch (rows) {
        TILE_CASE(6)
        TILE_CASE(5)
        TILE_CASE(4)
        TILE_CASE(3)
        TILE_CASE(2)
    default:
        tile(1, kc, a, lda > 0 ? 1 : MR, lda > 0 ? lda : 1, b0, b1, ldbk, c, ldc, mode, beta, ep);
        break;
    }
}

/* ---- edge tiles: masked stores ---- */

static inline __attribute__((always_inline)) void tile_masked(const int R, __mmask16 k, int64_t kc,
                                                              const float *restrict a, int64_t a_step, int64_t r_step,
                                                              const float *restrict b, int64_t ldbk, float *c,
                                                              int64_t ldc, int mode, float beta,
                                                              const inf__gemm_tile_ep *ep) {
    __m512 acc[MR];
    for (int r = 0; r < R; r++) acc[r] = _mm512_setzero_ps();
#pragma GCC unroll 4
    for (int64_t p = 0; p < kc; p++, a += a_step, b += ldbk) {
        __m512 v = _mm512_loadu_ps(b);
#pragma GCC unroll 6
        for (int r = 0; r < R; r++) acc[r] = _mm512_fmadd_ps(_mm512_set1_ps(a[r * r_step]), v, acc[r]);
    }
    __m512 vb = _mm512_set1_ps(beta);
    const float *bias = ep ? ep->bias : NULL, *res = ep ? ep->res : NULL;
    int64_t ldr = ep ? ep->ldr : 0;
    bool relu = ep && ep->relu;
    __m512 vbias = bias ? _mm512_maskz_loadu_ps(k, bias) : _mm512_setzero_ps();
    for (int r = 0; r < R; r++, c += ldc) {
        __m512 v = acc[r];
        if (mode == INF__GEMM_STORE_ADD) v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(k, c));
        else if (mode == INF__GEMM_STORE_BETA) v = _mm512_fmadd_ps(vb, _mm512_maskz_loadu_ps(k, c), v);
        if (bias) v = _mm512_add_ps(v, vbias);
        if (res) v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(k, res + r * ldr));
        if (relu) v = _mm512_max_ps(v, _mm512_setzero_ps());
        _mm512_mask_storeu_ps(c, k, v);
    }
}

#define MASKED_CASE(R)                                                                                                 \
    case R:                                                                                                            \
        if (lda > 0)                                                                                                   \
            tile_masked(R, k, kc, a, 1, lda, b, ldbk, c, ldc, mode, beta, ep);                                         \
        else                                                                                                           \
            tile_masked(R, k, kc, a, MR, 1, b, ldbk, c, ldc, mode, beta, ep);                                          \
        break;

void inf__gemm_tile_x16_masked_avx512(int rows, int cols, int64_t kc, const float *a, int64_t lda, const float *b,
                                      int64_t ldbk, float *c, int64_t ldc, int mode, float beta,
                                      const inf__gemm_tile_ep *ep) {
    __mmask16 k = (__mmask16)((1u << cols) - 1u);
    switch (rows) {
        MASKED_CASE(6)
        MASKED_CASE(5)
        MASKED_CASE(4)
        MASKED_CASE(3)
        MASKED_CASE(2)
    default:
        tile_masked(1, k, kc, a, lda > 0 ? 1 : MR, lda > 0 ? lda : 1, b, ldbk, c, ldc, mode, beta, ep);
        break;
    }
}

#endif /* x86-64 with AVX-512 */
