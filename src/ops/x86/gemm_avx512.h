/*
 * gemm_avx512.h -- the AVX-512 micro-kernel behind the packed SGEMM of
 * gemm_avx2.c (one driver, two kernel widths).  Call only when
 * inf__cpu_has_avx512() (core/cpu.h).
 */
#ifndef INF_OPS_X86_GEMM_AVX512_H
#define INF_OPS_X86_GEMM_AVX512_H

#include <stdbool.h>
#include <stdint.h>

/* How the tile is stored: C = acc, C = acc + C, C = fma(beta, C, acc). */
enum { INF__GEMM_STORE_BETA0, INF__GEMM_STORE_ADD, INF__GEMM_STORE_BETA };

/* A fused epilogue done in a tile's store, after the sum: + bias[j], then
 * + res[r * ldr + j] (each may be NULL), then max(v, 0) when relu (NaN ->
 * 0, as the Relu node) -- one float rounding per add, the order of the
 * separate nodes. */
typedef struct inf__gemm_tile_ep {
    const float *bias, *res; /* at the tile's first column / first element */
    int64_t ldr;
    bool relu;
} inf__gemm_tile_ep;

/* C[0:rows, 0:32] (ldc) = acc {+ C | fma(beta, C, .)}, then ep (may be NULL), where
 * acc[r][j] = sum over p in order of fma(A(r,p), B(p,j), acc) from 0, with
 * columns 0..15 from panel b0 and 16..31 from panel b1 (both kc rows, ldbk
 * apart).  A: lda > 0, rows[r * lda + p] in place; lda == 0, a packed
 * 6-row panel a[p * 6 + r].  rows in 1..6.  Every element gets the bits of
 * the AVX2 6x16 kernel (same fma chain), so the two widths are
 * interchangeable under batch invariance. */
void inf__gemm_tile_x32_avx512(int rows, int64_t kc, const float *a, int64_t lda, const float *b0, const float *b1,
                               int64_t ldbk, float *c, int64_t ldc, int mode, float beta, const inf__gemm_tile_ep *ep);

/* The same for 8 rows of A in place (rows lda apart; 16 accumulators): the
 * GEMM driver's blocks of exactly 8 rows (gemm_avx2.c's pair_rows). */
void inf__gemm_tile_x32_8rows_avx512(int64_t kc, const float *a, int64_t lda, const float *b0, const float *b1,
                                     int64_t ldbk, float *c, int64_t ldc, int mode, float beta,
                                     const inf__gemm_tile_ep *ep);

/* An edge tile of one 16-column panel: rows in 1..6, the first `cols`
 * (1..16) columns of C stored with masks instead of a buffer and scalar
 * loops: C = acc {+ C | fma(beta, C, .)}, then ep (may be NULL) -- the
 * element-wise arithmetic of the AVX2 path's partial store, so the bits are
 * the same.  b: kc rows of 16 floats
 * (zero-padded past cols), ldbk apart; A as for the x32 tile. */
void inf__gemm_tile_x16_masked_avx512(int rows, int cols, int64_t kc, const float *a, int64_t lda, const float *b,
                                      int64_t ldbk, float *c, int64_t ldc, int mode, float beta,
                                      const inf__gemm_tile_ep *ep);

/* True when this core runs a zmm FMA at full width (twice the ymm FLOP/s),
 * false when in two 256-bit halves; measured once (fma_width_avx512.c).
 * ratio (may be NULL): zmm / ymm time of the measurement, 0 when set by
 * INFERA_FMA512=full|split. */
bool inf__avx512_fma_full_width(double *ratio);

#endif /* INF_OPS_X86_GEMM_AVX512_H */
