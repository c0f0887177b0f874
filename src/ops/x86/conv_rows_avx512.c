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
 *
 * A fused 2x2, stride-2 MaxPool (ConvMaxPool: the bench CNN's stem) is done
 * in registers (pool_tile): a tile is 4 channels x a conv row pair x 32
 * columns -- the same 16 accumulators, 4 loads and 4 broadcasts per k as
 * the plain tile -- whose bias, activation and window max are taken before
 * the only store, 16 pooled outputs a channel; a task is one pooled row.
 * The conv output is never stored, not even to the band buffer the other
 * windows use (conv_pool_bands.c).  Same bits as Conv then MaxPool
 * (tests/kernels/test_conv_pool.c).
 */
#if defined(__x86_64__) && defined(__AVX512F__)

#include <immintrin.h>

#include "ops/ops.h"
#include "ops/x86/max_avx512.h"
#include "ops/x86/transpose_avx512.h"

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

/* M(4), M(3), M(2) or M(1) for R channels: a tile instantiated per channel count. */
#define BY_CHANNELS(R, M)                                                                                              \
    do {                                                                                                               \
        if ((R) == 4)                                                                                                  \
            M(4);                                                                                                      \
        else if ((R) == 3)                                                                                             \
            M(3);                                                                                                      \
        else if ((R) == 2)                                                                                             \
            M(2);                                                                                                      \
        else                                                                                                           \
            M(1);                                                                                                      \
    } while (0)

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
    BY_CHANNELS(R, TILE_V);
#undef TILE_V
}

/* ---- ConvMaxPool with a 2x2, stride-2 window: the pooling in registers ---- */

/* Does the fused MaxPool run in the tile's registers (pool_tasks)? Each window is a conv row pair and a column pair. */
static bool pools_in_registers(const inf__conv2d *g) {
    const inf__conv2d_maxpool *p = g->pool;
    return p && p->kh == 2 && p->kw == 2 && p->sh == 2 && p->sw == 2;
}

/* Bias and activation of one conv vector, as tile's store. */
static inline __m512 conv_store_value(const inf__conv2d *g, __m512 s, __m512 b) {
    s = _mm512_add_ps(s, b);
    if (g->act == INF_EPILOGUE_RELU)
        return _mm512_max_ps(s, _mm512_setzero_ps()); /* NaN -> 0, as Relu */
    if (g->act == INF_EPILOGUE_CLIP)
        return _mm512_min_ps(_mm512_set1_ps(g->hi), _mm512_max_ps(_mm512_set1_ps(g->lo), s)); /* NaN kept */
    return s;
}

/* R channels of cnt (<= 16) pooled outputs of one pooled row: the conv rows
 * at x0 and x0 + rstep (the row pair), 2 * cnt columns of each as two
 * 16-lane halves -- per k, 4 loads of X, R broadcasts of W, 4R FMAs (the
 * rows tile's rates); then bias and activation per conv value and the
 * window's max (vertical pairs, then even and odd columns), stored to
 * y + r * ys.  A Relu'd value is never NaN nor -0, so plain vmaxps is the
 * MaxPool's exact max there. */
__attribute__((target("avx512dq"))) static inline __attribute__((always_inline)) void
pool_tile(int R, bool full, const rows_job *J, const float *x0, int64_t rstep, const float *restrict w,
          const float *bias, float *y, int64_t ys, int cnt) {
    __m512 acc[RB][4]; /* [channel][row 0 left, row 0 right, row 1 left, row 1 right] */
#pragma GCC unroll 4
    for (int r = 0; r < RB; r++)
#pragma GCC unroll 4
        for (int v = 0; v < 4; v++)
            acc[r][v] = _mm512_setzero_ps();
    const __mmask16 k0 = full ? (__mmask16)0xFFFF : inf__lanes16(2 * cnt),
                    k1 = full ? (__mmask16)0xFFFF : inf__lanes16(2 * cnt - 16);
    const int64_t kdim = J->kdim, *off = J->off;
    for (int64_t k = 0; k < kdim; k++, w += RB) {
        const float *xk = x0 + off[k];
        __m512 xv[4];
        xv[0] = full ? _mm512_loadu_ps(xk) : _mm512_maskz_loadu_ps(k0, xk);
        xv[1] = full ? _mm512_loadu_ps(xk + 16) : _mm512_maskz_loadu_ps(k1, xk + 16);
        xv[2] = full ? _mm512_loadu_ps(xk + rstep) : _mm512_maskz_loadu_ps(k0, xk + rstep);
        xv[3] = full ? _mm512_loadu_ps(xk + rstep + 16) : _mm512_maskz_loadu_ps(k1, xk + rstep + 16);
#pragma GCC unroll 4
        for (int r = 0; r < R; r++) {
            __m512 wv = _mm512_set1_ps(w[r]);
#pragma GCC unroll 4
            for (int v = 0; v < 4; v++)
                acc[r][v] = _mm512_fmadd_ps(wv, xv[v], acc[r][v]);
        }
    }
    const inf__conv2d *g = J->g;
    const bool relu = g->act == INF_EPILOGUE_RELU;
#pragma GCC unroll 4
    for (int r = 0; r < R; r++) {
        __m512 b = bias ? _mm512_set1_ps(bias[r]) : _mm512_setzero_ps(), v[4];
#pragma GCC unroll 4
        for (int i = 0; i < 4; i++)
            v[i] = conv_store_value(g, acc[r][i], b);
        __m512 left = relu ? _mm512_max_ps(v[0], v[2]) : inf__max2_avx512(v[0], v[2]);
        __m512 right = relu ? _mm512_max_ps(v[1], v[3]) : inf__max2_avx512(v[1], v[3]);
        __m512 e = inf__even_lanes_avx512(left, right), o = inf__odd_lanes_avx512(left, right);
        __m512 m = relu ? _mm512_max_ps(e, o) : inf__max2_avx512(e, o);
        if (full)
            _mm512_storeu_ps(y + r * ys, m);
        else
            _mm512_mask_storeu_ps(y + r * ys, inf__lanes16(cnt), m);
    }
}

/* Dispatch on the tile's channels (1..4) and a full 16-output vector. */
__attribute__((target("avx512dq"))) static void pool_tile_any(int R, const rows_job *J, const float *x0, int64_t rstep,
                                                              const float *w, const float *bias, float *y, int64_t ys,
                                                              int cnt) {
#define POOL_TILE(RR)                                                                                                  \
    do {                                                                                                               \
        if (cnt == 16)                                                                                                 \
            pool_tile(RR, true, J, x0, rstep, w, bias, y, ys, 16);                                                     \
        else                                                                                                           \
            pool_tile(RR, false, J, x0, rstep, w, bias, y, ys, cnt);                                                   \
    } while (0)
    BY_CHANNELS(R, POOL_TILE);
#undef POOL_TILE
}

/* Tasks: pooled rows (image-group, py) of the pass, every channel of the group. */
static void pool_tasks(void *arg, int64_t begin, int64_t end) {
    const rows_job *J = arg;
    const inf__conv2d *g = J->g;
    const inf__conv2d_maxpool *p = g->pool;
    int64_t plane = J->xg.ph * J->xg.pw, rstep = g->sh * J->xg.pw, ys = p->oh * p->ow;
    for (int64_t t = begin; t < end; t++) {
        int64_t ng = t / p->oh, py = t % p->oh, n = ng / g->group, gi = ng % g->group;
        const float *xrow = J->x + (n * g->c + gi * g->cg) * plane + 2 * py * rstep;
        int64_t row0 = gi * g->mg;
        float *yrow = J->y + (n * g->m + row0) * ys + py * p->ow;
        for (int64_t b = 0; b < J->nblk; b++) {
            int R = (int)min64(RB, g->mg - b * RB);
            const float *w = J->wp + (gi * J->nblk + b) * J->kdim * RB;
            const float *bias = J->bias ? J->bias + row0 + b * RB : NULL;
            for (int64_t px = 0; px < p->ow; px += 16)
                pool_tile_any(R, J, xrow + 2 * px, rstep, w, bias, yrow + b * RB * ys + px, ys,
                              (int)min64(16, p->ow - px));
        }
    }
}

/* pool_tasks for a channels-last Y (g->nhwc, one group; conv.c takes it only
 * then): per 16 pooled outputs, every channel block's tile into a
 * [channel][16] buffer on the stack, then 16x16 transposes into Y's
 * [position][channel] rows -- the same values, moved. */
__attribute__((target("avx512dq"))) static void pool_tasks_last(void *arg, int64_t begin, int64_t end) {
    const rows_job *J = arg;
    const inf__conv2d *g = J->g;
    const inf__conv2d_maxpool *p = g->pool;
    int64_t plane = J->xg.ph * J->xg.pw, rstep = g->sh * J->xg.pw, m = g->m;
    _Alignas(64) float buf[INF_CONV2D_POOL_LAST_MAX_M * 16];
    for (int64_t t = begin; t < end; t++) {
        int64_t n = t / p->oh, py = t % p->oh;
        const float *xrow = J->x + n * g->c * plane + 2 * py * rstep;
        float *yrow = J->y + (n * p->oh + py) * p->ow * m;
        for (int64_t px = 0; px < p->ow; px += 16) {
            int cnt = (int)min64(16, p->ow - px);
            for (int64_t b = 0; b < J->nblk; b++)
                pool_tile_any((int)min64(RB, m - b * RB), J, xrow + 2 * px, rstep, J->wp + b * J->kdim * RB,
                              J->bias ? J->bias + b * RB : NULL, buf + b * RB * 16, 16, cnt);
            for (int64_t c0 = 0; c0 < m; c0 += 16) {
                __m512 r[16];
                for (int q = 0; q < 16; q++)
                    r[q] = c0 + q < m ? _mm512_load_ps(buf + (c0 + q) * 16) : _mm512_setzero_ps();
                inf__avx512_transpose16(r);
                __mmask16 km = inf__lanes16(m - c0);
                for (int q = 0; q < cnt; q++) _mm512_mask_storeu_ps(yrow + (px + q) * m + c0, km, r[q]);
            }
        }
    }
}

void inf__conv2d_rows_f32_avx512(inf__pool *pool, const inf__conv2d *g, const float *x, const float *wp,
                                 const float *bias, const float *res, float *scratch, float *y) {
    rows_run(pool, g, x, wp, bias, res, scratch, y, inf__ops_pool2d_f32_avx512,
             !pools_in_registers(g) ? NULL
             : g->nhwc & INF_NHWC_Y ? pool_tasks_last
                                    : pool_tasks);
}

#endif /* x86-64 with AVX-512 */
