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

typedef struct rows_job {
    const inf__conv2d *g;
    inf__conv2d_input xg;
    const float *x; /* the pass's first image: padded buffer or X */
    const float *wp, *bias, *res;
    float *y; /* the pass's first image */
    int64_t kdim, npos, nblk;
    int64_t off[KMAX]; /* tap k's offset in a (padded) image of the group */
} rows_job;

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

/* Conv row oy of image-group ng, every channel of the group: channel c at
 * y + c * ys (res, when not NULL, at the same position of Y's layout). */
static void conv_row(const rows_job *J, int64_t ng, int64_t oy, float *y, int64_t ys) {
    const inf__conv2d *g = J->g;
    int64_t n = ng / g->group, gi = ng % g->group;
    const float *xrow = J->x + (n * g->c + gi * g->cg) * J->xg.ph * J->xg.pw + oy * g->sh * J->xg.pw;
    int64_t row0 = gi * g->mg, rbase = (n * g->m + row0) * J->npos + oy * g->ow;
    for (int64_t b = 0; b < J->nblk; b++) {
        int R = (int)min64(RB, g->mg - b * RB);
        const float *w = J->wp + (gi * J->nblk + b) * J->kdim * RB;
        const float *bias = J->bias ? J->bias + row0 + b * RB : NULL;
        const float *res = J->res ? J->res + rbase + b * RB * J->npos : NULL;
        float *yb = y + b * RB * ys;
        for (int64_t ox = 0; ox < g->ow; ox += 16 * VB) {
            int64_t cnt = min64(16 * VB, g->ow - ox);
            int V = (int)((cnt + 15) / 16), tail = (int)(cnt - 16 * (V - 1));
            tile_any(R, V, J, xrow + ox, w, bias, res ? res + ox : NULL, yb + ox, ys, tail);
        }
    }
}

/* The row function of the pooled store (inf__conv2d_pooled_rows). */
static void pooled_row(const void *job, int64_t ng, int64_t oy, float *dst, int64_t cstride) {
    conv_row(job, ng, oy, dst, cstride);
}

/* Tasks: output rows (image-group, oy). */
static void rows_tasks(void *arg, int64_t begin, int64_t end) {
    const rows_job *J = arg;
    const inf__conv2d *g = J->g;
    for (int64_t t = begin; t < end; t++) {
        int64_t ng = t / g->oh, oy = t % g->oh, n = ng / g->group, gi = ng % g->group;
        conv_row(J, ng, oy, J->y + (n * g->m + gi * g->mg) * J->npos + oy * g->ow, J->npos);
    }
}

void inf__conv2d_rows_f32_avx512(inf__pool *pool, const inf__conv2d *g, const float *x, const float *wp,
                                 const float *bias, const float *res, float *scratch, float *y) {
    rows_job J = {.g = g,
                  .xg = inf__conv2d_input_geom(g),
                  .wp = wp,
                  .bias = bias,
                  .kdim = g->cg * g->kh * g->kw,
                  .npos = g->oh * g->ow,
                  .nblk = (g->mg + RB - 1) / RB};
    if (J.kdim <= 0 || J.kdim > KMAX || J.npos <= 0 || g->mg <= 0 || g->sw != 1) return;
    int64_t khw = g->kh * g->kw, plane = J.xg.ph * J.xg.pw;
    for (int64_t k = 0; k < J.kdim; k++)
        J.off[k] = k / khw * plane + k % khw / g->kw * g->dh * J.xg.pw + k % g->kw * g->dw;
    int64_t work = g->ow * g->mg * J.kdim; /* multiply-adds per task (a row) */
    bool pooled = g->pool != NULL;         /* res is NULL then; conv.c checked inf__conv2d_pooled_fits */
    int64_t ystep = pooled ? g->m * g->pool->oh * g->pool->ow : g->m * J.npos;
    for (int64_t n0 = 0; n0 < g->n; n0 += J.xg.per_pass) {
        int64_t imgs = min64(J.xg.per_pass, g->n - n0);
        J.x = inf__conv2d_input_pass(pool, g, &J.xg, x, n0, imgs, scratch);
        J.y = y + n0 * ystep;
        J.res = res ? res + n0 * g->m * J.npos : NULL;
        if (pooled)
            inf__conv2d_pooled_rows(pool, g, imgs, &J, pooled_row, inf__ops_pool2d_f32_avx512, J.y);
        else
            inf__pool_range(pool, imgs * g->group * g->oh, work >= 32768 ? 1 : 32768 / (work + 1) + 1, rows_tasks, &J);
    }
}

#endif /* x86-64 with AVX-512 */
