/*
 * conv_rows_avx2.c -- float32 1-D/2-D convolution with AVX2/FMA for a
 * shallow K and stride 1 along the row: output positions in the lanes,
 * read straight from the (zero-padded) input rows; no im2col panels.
 *
 * Called from Conv / ConvAdd (ops/ref/conv.c) when inf__cpu_has_avx2_fma()
 * and inf__conv2d_rows_fits(mg, kdim, sw): a network's stem (3 -> 32
 * channels, 3x3: K = 27), where the panel kernel of conv_avx2.c spends a
 * large share building its 27-row panels and the direct kernel's
 * transposing store costs more than its 27 FMAs per output.  Built with
 * -mavx2 -mfma (CMake: *_avx2.c).
 *
 * DESIGN: per image and group, Y_g[mg, P] = W_g[mg, K] * col[K, P], K =
 * cg*kh*kw in (c, ky, kx) order, as the im2col path.
 *   - The input is X itself or a zero-padded copy (inf__conv2d_input_pass,
 *     shared with conv_direct_avx2.c), so tap k of output column ox of a row
 *     is at row_base + off[k] + ox: 8 consecutive outputs are one load.
 *   - W is packed in blocks of RB = 4 output channels, [group][block][K][4]
 *     (inf__conv2d_pack_w_blocked), channels past mg zero.
 *   - A tile is RB channels x up to VB*8 = 24 consecutive positions of one
 *     output row: 12 ymm accumulators; per k, VB loads of X, RB broadcasts
 *     of W and 12 FMAs.  The last vector of a row may be partial (masked
 *     loads and stores); the last block of channels may have fewer rows.
 *   - A task is one output row of one image and group, all its channels.
 *   - Bits: K <= KMAX (one block of the GEMM's KC = 256), so each Y element
 *     is one FMA chain from zero over k in order -- exactly what
 *     inf__ops_sgemm_avx2 and conv_avx2.c compute for it (a padding zero is
 *     a real product there too) -- then + bias, + res, the activation, as
 *     float operations.  Bit-identical to the im2col path
 *     (tests/kernels/test_conv_avx2.c), batch- and thread-invariant.
 */
#if defined(__x86_64__) && defined(__AVX2__) && defined(__FMA__)

#include <immintrin.h>

#include "ops/ops.h"

enum {
    RB = 4,     /* output channels per tile (and per packed block) */
    VB = 3,     /* 8-position vectors per tile */
    KMAX = 256, /* deepest K: one KC block of gemm_avx2.c */
};

static inline int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }

/* Stride 1 along the row, K within one block, enough channels for a tile
 * (fewer go to the panel kernel), and below the direct kernel's range. */
bool inf__conv2d_rows_fits(int64_t mg, int64_t kdim, int64_t sw) {
    return sw == 1 && kdim <= KMAX && mg >= RB && !inf__conv2d_direct_fits(mg, kdim, sw);
}

int64_t inf__conv2d_rows_w_floats(int64_t m, int64_t group, int64_t kdim) {
    return inf__conv2d_blocked_w_floats(m, group, kdim, RB);
}

void inf__conv2d_rows_pack_w(int64_t m, int64_t group, int64_t kdim, const float *w, float *dst) {
    inf__conv2d_pack_w_blocked(m, group, kdim, RB, w, dst);
}

#define ROWS_LANES 8 /* floats per vector */
#include "ops/x86/conv_rows_drive.h"

/* R channels x V vectors (the last with `tail` valid lanes) at x0 (the
 * tile's first position in the input), W block w ([K][RB]); then the
 * store: + bias, + res, the activation.  (One function, so the
 * accumulators stay in registers.) */
static inline __attribute__((always_inline)) void tile(int R, int V, const rows_job *J, const float *x0,
                                                       const float *restrict w, const float *bias, const float *res,
                                                       float *y, int64_t ys, int tail) {
    __m256 acc[RB][VB]; /* the loops over r and v are unrolled, so these stay in registers */
#pragma GCC unroll 4
    for (int r = 0; r < RB; r++)
#pragma GCC unroll 3
        for (int v = 0; v < VB; v++) acc[r][v] = _mm256_setzero_ps();
    const __m256i mask = _mm256_cmpgt_epi32(_mm256_set1_epi32(tail), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
    const int64_t kdim = J->kdim, *off = J->off;
    for (int64_t k = 0; k < kdim; k++, w += RB) {
        const float *xk = x0 + off[k];
        __m256 xv[VB];
#pragma GCC unroll 3
        for (int v = 0; v < V; v++)
            xv[v] = v == V - 1 && tail < 8 ? _mm256_maskload_ps(xk + 8 * v, mask) : _mm256_loadu_ps(xk + 8 * v);
#pragma GCC unroll 4
        for (int r = 0; r < R; r++) {
            __m256 wv = _mm256_broadcast_ss(w + r);
#pragma GCC unroll 3
            for (int v = 0; v < V; v++) acc[r][v] = _mm256_fmadd_ps(wv, xv[v], acc[r][v]);
        }
    }
    const inf__conv2d *g = J->g;
    const int64_t npos = J->npos;
    const __m256 zero = _mm256_setzero_ps(), vlo = _mm256_set1_ps(g->lo), vhi = _mm256_set1_ps(g->hi);
#pragma GCC unroll 4
    for (int r = 0; r < R; r++)
#pragma GCC unroll 3
        for (int v = 0; v < V; v++) {
            __m256 s = acc[r][v];
            const float *rp = res ? res + r * npos + 8 * v : NULL;
            bool part = v == V - 1 && tail < 8;
            if (bias) s = _mm256_add_ps(s, _mm256_broadcast_ss(bias + r));
            if (rp) s = _mm256_add_ps(s, part ? _mm256_maskload_ps(rp, mask) : _mm256_loadu_ps(rp));
            if (g->act == INF_EPILOGUE_RELU) s = _mm256_max_ps(s, zero); /* NaN -> 0, as Relu */
            else if (g->act == INF_EPILOGUE_CLIP) s = _mm256_min_ps(vhi, _mm256_max_ps(vlo, s)); /* NaN kept */
            if (part)
                _mm256_maskstore_ps(y + r * ys + 8 * v, mask, s);
            else
                _mm256_storeu_ps(y + r * ys + 8 * v, s);
        }
}

/* Dispatch on the tile's channels (1..4), vectors (1..3) and a full last vector. */
static void tile_any(int R, int V, const rows_job *J, const float *x0, const float *w, const float *bias,
                     const float *res, float *y, int64_t ys, int tail) {
#define TILE_V(RR)                                                                                                     \
    do {                                                                                                               \
        if (V == 3 && tail == 8)                                                                                       \
            tile(RR, 3, J, x0, w, bias, res, y, ys, 8); /* the common case: no masks */                                \
        else if (V == 3)                                                                                               \
            tile(RR, 3, J, x0, w, bias, res, y, ys, tail);                                                             \
        else if (V == 2)                                                                                               \
            tile(RR, 2, J, x0, w, bias, res, y, ys, tail);                                                             \
        else                                                                                                           \
            tile(RR, 1, J, x0, w, bias, res, y, ys, tail);                                                             \
    } while (0)
    if (R == 4) TILE_V(4);
    else if (R == 3) TILE_V(3);
    else if (R == 2) TILE_V(2);
    else TILE_V(1);
#undef TILE_V
}

void inf__conv2d_rows_f32_avx2(inf__pool *pool, const inf__conv2d *g, const float *x, const float *wp,
                               const float *bias, const float *res, float *scratch, float *y) {
    rows_run(pool, g, x, wp, bias, res, scratch, y, inf__ops_pool2d_f32_avx2, NULL);
}

#endif /* x86-64 with AVX2 and FMA */
