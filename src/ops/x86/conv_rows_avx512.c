/*
 * conv_rows_avx512.c -- the rows convolution of conv_rows_avx2.c (shallow K,
 * stride 1 along the row: a network's stem) with AVX-512: 16 output
 * positions per vector, a tile of 4 channels x up to 64 positions of one
 * output row (16 zmm accumulators; per k, 4 loads of X, 4 broadcasts of W,
 * 16 FMAs), the row's last vector masked.
 *
 * Called from Conv / ConvAdd (ops/ref/conv.c) instead of
 * inf__conv2d_rows_f32_avx2 when inf__cpu_has_avx512() (path avx512;
 * INFERA_CPU=avx2 keeps the AVX2 kernel), for the shapes that kernel takes
 * (inf__conv2d_rows_fits).  Built with -mavx512f -mavx512bw -mavx512vl
 * (CMake: *_avx512.c).
 *
 * DESIGN: as conv_rows_avx2.c -- the same packed W (4-channel blocks,
 * inf__conv2d_rows_pack_w), the same (padded) input and tasks (one output
 * row of one image and group); only the vector width and the tile differ.
 * Bits: each Y element is one FMA chain from zero over k in order, then
 * + bias, + res, the activation, as in the AVX2 kernel and the im2col path
 * (tests/kernels/test_conv_avx2.c checks all three bit for bit).
 */
#if defined(__x86_64__) && defined(__AVX512F__)

#include <immintrin.h>

#include "ops/ops.h"

enum {
    RB = 4,     /* output channels per tile (and per packed block) */
    VB = 4,     /* 16-position vectors per tile */
    KMAX = 256, /* deepest K: one KC block of gemm_avx2.c */
};

static inline int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }

#define ROWS_LANES 16 /* floats per vector */
#include "ops/x86/conv_rows_drive.h"

/* R channels x V vectors (the last with `tail` valid lanes) at x0 (the
 * tile's first position in the input), W block w ([K][RB]); then the
 * store: + bias, + res, the activation.  (One function, so the
 * accumulators stay in registers.) */
static inline __attribute__((always_inline)) void tile(int R, int V, const rows_job *J, const float *x0,
                                                       const float *restrict w, const float *bias, const float *res,
                                                       float *y, int64_t ys, int tail) {
    __m512 acc[RB][VB]; /* the loops over r and v are unrolled, so these stay in registers */
#pragma GCC unroll 4
    for (int r = 0; r < RB; r++)
#pragma GCC unroll 4
        for (int v = 0; v < VB; v++)
            acc[r][v] = _mm512_setzero_ps();
    const __mmask16 mask = (__mmask16)((1u << tail) - 1u);
    const int64_t kdim = J->kdim, *off = J->off;
    for (int64_t k = 0; k < kdim; k++, w += RB) {
        const float *xk = x0 + off[k];
        __m512 xv[VB];
#pragma GCC unroll 4
        for (int v = 0; v < V; v++)
            xv[v] = v == V - 1 && tail < 16 ? _mm512_maskz_loadu_ps(mask, xk + 16 * v) : _mm512_loadu_ps(xk + 16 * v);
#pragma GCC unroll 4
        for (int r = 0; r < R; r++) {
            __m512 wv = _mm512_set1_ps(w[r]);
#pragma GCC unroll 4
            for (int v = 0; v < V; v++)
                acc[r][v] = _mm512_fmadd_ps(wv, xv[v], acc[r][v]);
        }
    }
    const inf__conv2d *g = J->g;
    const int64_t npos = J->npos;
    const __m512 zero = _mm512_setzero_ps(), vlo = _mm512_set1_ps(g->lo), vhi = _mm512_set1_ps(g->hi);
#pragma GCC unroll 4
    for (int r = 0; r < R; r++)
#pragma GCC unroll 4
        for (int v = 0; v < V; v++) {
            __m512 s = acc[r][v];
            const float *rp = res ? res + r * npos + 16 * v : NULL;
            bool part = v == V - 1 && tail < 16;
            if (bias) s = _mm512_add_ps(s, _mm512_set1_ps(bias[r]));
            if (rp) s = _mm512_add_ps(s, part ? _mm512_maskz_loadu_ps(mask, rp) : _mm512_loadu_ps(rp));
            if (g->act == INF_EPILOGUE_RELU)
                s = _mm512_max_ps(s, zero); /* NaN -> 0, as Relu */
            else if (g->act == INF_EPILOGUE_CLIP)
                s = _mm512_min_ps(vhi, _mm512_max_ps(vlo, s)); /* NaN kept */
            if (part)
                _mm512_mask_storeu_ps(y + r * ys + 16 * v, mask, s);
            else
                _mm512_storeu_ps(y + r * ys + 16 * v, s);
        }
}

/* Dispatch on the tile's channels (1..4), vectors (1..4) and a full last vector. */
static void tile_any(int R, int V, const rows_job *J, const float *x0, const float *w, const float *bias,
                     const float *res, float *y, int64_t ys, int tail) {
#define TILE_V(RR)                                                                                                     \
    do {                                                                                                               \
        if (V == 4 && tail == 16)                                                                                      \
            tile(RR, 4, J, x0, w, bias, res, y, ys, 16); /* the common case: no masks */                               \
        else if (V == 4)                                                                                               \
            tile(RR, 4, J, x0, w, bias, res, y, ys, tail);                                                             \
        else if (V == 3)                                                                                               \
            tile(RR, 3, J, x0, w, bias, res, y, ys, tail);                                                             \
        else if (V == 2)                                                                                               \
            tile(RR, 2, J, x0, w, bias, res, y, ys, tail);                                                             \
        else                                                                                                           \
            tile(RR, 1, J, x0, w, bias, res, y, ys, tail);                                                             \
    } while (0)
    if (R == 4)
        TILE_V(4);
    else if (R == 3)
        TILE_V(3);
    else if (R == 2)
        TILE_V(2);
    else
        TILE_V(1);
#undef TILE_V
}

void inf__conv2d_rows_f32_avx512(inf__pool *pool, const inf__conv2d *g, const float *x, const float *wp,
                                 const float *bias, const float *res, float *scratch, float *y) {
    rows_run(pool, g, x, wp, bias, res, scratch, y, inf__ops_pool2d_f32_avx512);
}

#endif /* x86-64 with AVX-512 */
