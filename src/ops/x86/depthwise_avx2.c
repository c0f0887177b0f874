/*
 * depthwise_avx2.c -- AVX2 depthwise 2-D convolution (ONNX Conv with
 * group == C == M, one kh x kw filter per channel), float32, NCHW.
 *
 * Called from ops/ref/conv.c (conv_avx2) in place of its scalar
 * depthwise_planes when the CPU has AVX2/FMA; the float16 Conv reaches it
 * through conv.c's float32 copies.  Any kernel size, stride, dilation and
 * padding.  Same bits as depthwise_planes followed by the separate ConvAdd
 * residual add and the session's activation pass, for finite weights: each
 * output is 0 + w*x summed over the in-range taps in (ky, kx) order (a
 * multiply then an add, never an FMA: the file is compiled as ISO C11, so
 * no contraction), then + bias, + res, then ReLU / Clip.  A tap that falls
 * in the padding adds +0 (its product is masked), which leaves any sum
 * unchanged, since a sum that starts at +0 is never -0.
 *
 * Design: one pool task per range of (image, channel) planes, so results
 * do not depend on N or on the thread split.  Within a plane, DW_ROWS
 * output rows are computed together (independent accumulators hide the
 * add latency), 8 output columns a vector:
 *   - interior columns (every tap inside the row): stride 1 reads each tap
 *     with one unaligned load; stride 2 loads 16 floats and keeps the even
 *     ones (two loads, two shuffles);
 *   - blocks touching the padding or the row's end: the same loads masked
 *     to the in-row floats (other strides: a masked gather per tap), the
 *     product masked to +0 where the tap is in the padding.
 * Input rows outside the image are skipped, as in the reference.
 * Invariants: the caller (conv_avx2) keeps iw and ih*iw below
 * INF_CONV2D_MAX_SPAN, so in-row indices fit 32-bit gathers.
 */
#if defined(__x86_64__)
#include <immintrin.h>

#include "ops/ops.h"

#define DW_ROWS 4

enum { LOAD_S1, LOAD_S2, LOAD_ANY };

/* One plane's operands. */
typedef struct dw_plane {
    const inf__conv2d *g;
    const float *x, *w, *res; /* x: ih x iw; w: kh x kw; res: oh x ow or NULL */
    float *y;
    float bias;
    bool has_bias;
} dw_plane;

typedef struct dw_task {
    const inf__conv2d *g;
    const float *x, *w, *b, *res;
    float *y;
} dw_task;

/* The even lanes of a then b: a0 a2 a4 a6 b0 b2 b4 b6. */
static inline __m256 even_lanes(__m256 a, __m256 b) {
    __m256 e = _mm256_shuffle_ps(a, b, _MM_SHUFFLE(2, 0, 2, 0));
    return _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(e), _MM_SHUFFLE(3, 1, 2, 0)));
}

/* Lanes whose index is inside a row of iw floats. */
static inline __m256i in_row(__m256i idx, int64_t iw) {
    return _mm256_and_si256(_mm256_cmpgt_epi32(idx, _mm256_set1_epi32(-1)),
                            _mm256_cmpgt_epi32(_mm256_set1_epi32((int)iw), idx));
}

/* Tap (row, off) for the 8 output columns from ox0: mode LOAD_S1 / LOAD_S2
 * read contiguous floats (masked: only the in-row ones, the others 0),
 * LOAD_ANY gathers the valid lanes.  m1, m2: LOAD_S2's in-row masks of the
 * 16 floats from 2 * ox0 + off. */
static inline __m256 tap_load(const float *row, int64_t ox0, int64_t off, int mode, bool masked, __m256i idx,
                              __m256i valid, __m256i m1, __m256i m2) {
    if (mode == LOAD_S1) return masked ? _mm256_maskload_ps(row + ox0 + off, valid) : _mm256_loadu_ps(row + ox0 + off);
    if (mode == LOAD_S2) {
        const float *q = row + 2 * ox0 + off;
        if (!masked) return even_lanes(_mm256_loadu_ps(q), _mm256_loadu_ps(q + 8));
        return even_lanes(_mm256_maskload_ps(q, m1), _mm256_maskload_ps(q + 8, m2));
    }
    return _mm256_mask_i32gather_ps(_mm256_setzero_ps(), row, idx, _mm256_castsi256_ps(valid), 4);
}

/* v + bias, + res, then the activation; stored to the n_act first lanes. */
static inline void store_out(const dw_plane *p, __m256 v, int64_t off, int64_t n_act, __m256i act) {
    const inf__conv2d *g = p->g;
    if (p->has_bias) v = _mm256_add_ps(v, _mm256_set1_ps(p->bias));
    if (p->res) v = _mm256_add_ps(v, n_act == 8 ? _mm256_loadu_ps(p->res + off) : _mm256_maskload_ps(p->res + off, act));
    if (g->act == INF_EPILOGUE_RELU) v = _mm256_max_ps(v, _mm256_setzero_ps()); /* NaN -> 0, as Relu */
    else if (g->act == INF_EPILOGUE_CLIP)
        v = _mm256_min_ps(_mm256_set1_ps(g->hi), _mm256_max_ps(_mm256_set1_ps(g->lo), v)); /* NaN kept */
    if (n_act == 8) _mm256_storeu_ps(p->y + off, v);
    else _mm256_maskstore_ps(p->y + off, act, v);
}

/* Output rows oy..oy+R-1, columns ox0..ox0+n_act-1 (n_act <= 8).
 * Unmasked (LOAD_S1 / LOAD_S2 only) where every tap of every lane is
 * inside the row; masked: taps in the padding add +0. */
static inline __attribute__((always_inline)) void dw_block(const dw_plane *p, int64_t oy, int R, int64_t ox0,
                                                           int64_t n_act, int mode, bool masked, int64_t KW) {
    const inf__conv2d *g = p->g;
    __m256 acc[DW_ROWS];
    for (int r = 0; r < R; r++) acc[r] = _mm256_setzero_ps();
    __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    __m256i act = _mm256_cmpgt_epi32(_mm256_set1_epi32((int)n_act), lane);
    __m256i col = _mm256_mullo_epi32(_mm256_add_epi32(_mm256_set1_epi32((int)ox0), lane), _mm256_set1_epi32((int)g->sw));
    for (int64_t ky = 0; ky < g->kh; ky++) {
        const float *rows[DW_ROWS];
        for (int r = 0; r < R; r++) {
            int64_t iy = (oy + r) * g->sh - g->pt + ky * g->dh;
            rows[r] = iy >= 0 && iy < g->ih ? p->x + iy * g->iw : NULL;
        }
        for (int64_t kx = 0; kx < KW; kx++) {
            int64_t off = kx * g->dw - g->pl;
            __m256 wv = _mm256_set1_ps(p->w[ky * KW + kx]);
            __m256i idx = _mm256_add_epi32(col, _mm256_set1_epi32((int)off)), valid = act, m1 = act, m2 = act;
            if (masked) valid = _mm256_and_si256(act, in_row(idx, g->iw));
            if (masked && mode == LOAD_S2) {
                m1 = in_row(_mm256_add_epi32(_mm256_set1_epi32((int)(2 * ox0 + off)), lane), g->iw);
                m2 = in_row(_mm256_add_epi32(_mm256_set1_epi32((int)(2 * ox0 + off + 8)), lane), g->iw);
            }
            for (int r = 0; r < R; r++) {
                if (!rows[r]) continue;
                __m256 prod = _mm256_mul_ps(wv, tap_load(rows[r], ox0, off, mode, masked, idx, valid, m1, m2));
                if (masked) prod = _mm256_and_ps(prod, _mm256_castsi256_ps(valid));
                acc[r] = _mm256_add_ps(acc[r], prod);
            }
        }
    }
    for (int r = 0; r < R; r++) store_out(p, acc[r], (oy + r) * g->ow + ox0, n_act, act);
}

/* Output rows oy..oy+R-1 in blocks of 8 columns: unmasked where the block
 * lies in the interior columns [a, b) and the stride is 1 or 2. */
static inline __attribute__((always_inline)) void dw_rows_k(const dw_plane *p, int64_t oy, int R, int64_t a,
                                                          int64_t b, int64_t KW) {
    const inf__conv2d *g = p->g;
    for (int64_t ox = 0; ox < g->ow; ox += 8) {
        int64_t n = g->ow - ox < 8 ? g->ow - ox : 8;
        bool inner = ox >= a && ox + 8 <= b;
        if (g->sw == 1) {
            if (inner) dw_block(p, oy, R, ox, 8, LOAD_S1, false, KW);
            else dw_block(p, oy, R, ox, n, LOAD_S1, true, KW);
        } else if (g->sw == 2) {
            if (inner) dw_block(p, oy, R, ox, 8, LOAD_S2, false, KW);
            else dw_block(p, oy, R, ox, n, LOAD_S2, true, KW);
        } else {
            dw_block(p, oy, R, ox, n, LOAD_ANY, true, KW);
        }
    }
}

/* dw_rows_k with the kernel width a constant for the common 3 (the tap
 * loop unrolled). */
static inline __attribute__((always_inline)) void dw_rows(const dw_plane *p, int64_t oy, int R, int64_t a,
                                                          int64_t b) {
    if (p->g->kw == 3) dw_rows_k(p, oy, R, a, b, 3);
    else dw_rows_k(p, oy, R, a, b, p->g->kw);
}

/* The interior columns [a, b) of g: every tap of ox in range (stride 2
 * also reads one float past its last tap). */
static void interior(const inf__conv2d *g, int64_t *a, int64_t *b) {
    int64_t last = g->iw - 1 - (g->kw - 1) * g->dw + g->pl - (g->sw == 2);
    *a = (g->pl + g->sw - 1) / g->sw;
    *b = last < 0 ? 0 : last / g->sw + 1;
    if (*b > g->ow) *b = g->ow;
}

static void dw_plane_run(const dw_plane *p) {
    const inf__conv2d *g = p->g;
    int64_t a, b, oy = 0;
    interior(g, &a, &b);
    for (; oy + DW_ROWS <= g->oh; oy += DW_ROWS) dw_rows(p, oy, DW_ROWS, a, b);
    for (; oy < g->oh; oy++) dw_rows(p, oy, 1, a, b);
}

static void dw_planes(void *arg, int64_t begin, int64_t end) {
    const dw_task *t = arg;
    const inf__conv2d *g = t->g;
    int64_t in = g->ih * g->iw, out = g->oh * g->ow;
    for (int64_t pl = begin; pl < end; pl++) {
        int64_t c = pl % g->c;
        dw_plane p = {
            .g = g, .x = t->x + pl * in, .w = t->w + c * g->kh * g->kw, .res = t->res ? t->res + pl * out : NULL,
            .y = t->y + pl * out, .bias = t->b ? t->b[c] : 0.0f, .has_bias = t->b != NULL,
        };
        dw_plane_run(&p);
    }
}

void inf__conv2d_depthwise_f32_avx2(inf__pool *pool, const inf__conv2d *g, const float *x, const float *w,
                                    const float *bias, const float *res, float *y) {
    dw_task t = {g, x, w, bias, res, y};
    int64_t work = g->oh * g->ow * g->kh * g->kw;
    inf__pool_range(pool, g->n * g->c, work >= 16384 ? 1 : 16384 / (work + 1) + 1, dw_planes, &t);
}

#endif /* __x86_64__ */
