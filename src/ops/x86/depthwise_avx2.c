/*
 * depthwise_avx2.c -- AVX2 depthwise 2-D convolution (ONNX Conv with
 * group == C == M, one kh x kw filter per channel), float32, NCHW.
 *
 * Called from ops/ref/conv.c (conv_avx2) in place of its scalar
 * depthwise_planes when the CPU has AVX2/FMA; the float16 Conv reaches it
 * through conv.c's float32 copies.  Any kernel size, stride, dilation and
 * padding.  Same bits as depthwise_planes followed by the separate ConvAdd
 * residual add and the session's activation pass, for finite weights: each
 * output is 0, then sum = fma(w, x, sum) over the in-range taps in (ky, kx)
 * order (one rounding a tap; the reference uses fmaf, since session 31:
 * before, a multiply then an add), then + bias, + res, then ReLU / Clip.
 * A tap that falls in the padding adds w * 0 = +-0 (its x loads as 0),
 * which leaves any sum unchanged, since a sum that starts at +0 is never
 * -0.
 *
 * Three paths, with the same bits:
 *   - padded-plane (stride 1 along the row, given scratch of
 *     inf__conv2d_depthwise_scratch_floats): one plane at a time in NCHW,
 *     copied with its zero padding into the slot's scratch, so every tap
 *     of 8 consecutive outputs is one unmasked unaligned load; a 3x3
 *     computes PR_ROWS (5) output rows per pass (6 when a row is one
 *     block), each padded row's 3 taps loaded once for every output row
 *     it feeds, the 9 weights in registers, no transposes; bias, residual
 *     and ReLU/Clip in the store, tested once per block of rows.  Details
 *     and measurements at the path's code below.
 *     On AVX-512 a 3x3 plane runs depthwise_avx512.c's sibling (16
 *     columns a zmm, same bits).
 *   - channel-blocked (row stride 2 or more, or a kernel wider or taller
 *     than 3 (pr_wide), given scratch):
 *     blocks of 8 channels of one image, the input transposed to
 *     [row][column][8 channels] with its zero padding, 8 output positions
 *     x 8 channels summed per step (one weight vector and 8 aligned loads
 *     per tap, no masks, all lanes used whatever the plane width), then
 *     transposed back to NCHW rows.  The blocks are split into one
 *     contiguous range per thread slot.  A tap in the padding adds
 *     w * 0 = +-0, which leaves the sum unchanged for finite weights.
 *   - general (no scratch, more than 64 taps at a row stride above 1, or a
 *     plane too large for the scratch cap): one pool task per range of
 *     (image, channel) planes.
 *     Within a plane, DW_ROWS output rows are computed together, 8 output
 *     columns a vector: interior columns read each tap with one unaligned
 *     load (stride 2: 16 floats, the even ones kept); blocks touching the
 *     padding or the row's end use the same loads masked to the in-row
 *     floats (other strides: a masked gather per tap), the product masked
 *     to +0 where the tap is in the padding.  Input rows outside the image
 *     are skipped, as in the reference.
 * DESIGN / measurements (bench/bench_depthwise, 1 thread, batch 1, this
 * file against the one before (channel blocks for every stride, masked
 * stores), alternating, 5 x 7 rounds, medians of the per-round ratios;
 * shared 2-vCPU host at load 7-8, so +-15 % per cell):
 *   stride 1 (padded planes): mobile 32 @48x48 0.87, 128 @24x24 0.90,
 *   256 @12x12 0.75; MobileNet-v1 32 @112 0.82, 512 @14 0.72, 1024 @7 0.87;
 *   X and Y in L2 0.79-0.83.  Stride 2 (channel blocks, their store's tests
 *   made once per block, plain stores for short rows): mobile 64 @48x48
 *   0.96, 128 @24x24 0.76, 256 @12x12 0.71.  Stride 2 copied as even/odd
 *   column planes (deinterleaved once) and computed like stride 1 ran
 *   1.05-1.17x the channel-block time, so strided layers keep it.  Whole
 *   mobile model (callgrind, batch 1): the depthwise layers take 2.10M
 *   instructions a run against 2.33M.
 *   What bounded both then: each output a chain of 9 dependent adds (a
 *   multiply then an add per tap, the reference's bits then), 18 FP
 *   instructions per 8 outputs whatever the layout; an FMA version of the
 *   3x3 kernel ran 0.74-0.94x the time.  Since session 31 every path and
 *   the reference use FMA (bench/RESULTS.md "Session 31 (h22/dwfma)").
 *   ONNX Runtime's six NCHWc depthwise nodes took 293 us a run by its
 *   profiler (batch 1, 1 thread, loaded host), these six layers 260-300 us
 *   in bench_depthwise before this path: the gap to ORT on this model is
 *   in the pointwise layers and the stem, not here.
 * On AVX-512, two more paths read X in place (no scratch): stride 2 with
 * kernels up to 5x5 (depthwise_s2_avx512.c) and 3x3 "same" planes of up to
 * 64 outputs (depthwise_flat_avx512.c); same bits.
 * Results do not depend on N, the sub-batch split or the thread count (a
 * plane's or a block's sums do not depend on where it runs).
 * Invariants: the caller (conv_avx2) keeps iw and ih*iw below
 * INF_CONV2D_MAX_SPAN, so in-row indices fit 32-bit gathers.
 */
#if defined(__x86_64__)
#include <immintrin.h>

#include "core/cpu.h"
#include "ops/ops.h"
#include "ops/x86/math_avx2.h"
#include "ops/x86/transpose_avx2.h"

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

/* The n < 8 first lanes of v to y (plain stores of 4, 2 and 1 floats: a
 * masked store is slow on AMD). */
static inline void store_first(float *y, __m256 v, int64_t n) {
    __m128 h = _mm256_castps256_ps128(v);
    if (n & 4) {
        _mm_storeu_ps(y, h);
        h = _mm256_extractf128_ps(v, 1), y += 4;
    }
    if (n & 2) {
        _mm_storel_pi((__m64 *)(void *)y, h);
        h = _mm_movehl_ps(h, h), y += 2;
    }
    if (n & 1) _mm_store_ss(y, h);
}

/* v + *res (res: NULL or at the element), then the activation; stored to
 * y's n_act first lanes. */
static inline void res_act_store(const inf__conv2d *g, __m256 v, const float *res, float *y, int64_t n_act,
                                 __m256i act) {
    if (res) v = _mm256_add_ps(v, n_act == 8 ? _mm256_loadu_ps(res) : _mm256_maskload_ps(res, act));
    if (g->act == INF_EPILOGUE_RELU) v = _mm256_max_ps(v, _mm256_setzero_ps()); /* NaN -> 0, as Relu */
    else if (g->act == INF_EPILOGUE_CLIP)
        v = _mm256_min_ps(_mm256_set1_ps(g->hi), _mm256_max_ps(_mm256_set1_ps(g->lo), v)); /* NaN kept */
    else if (g->act == INF_EPILOGUE_SILU) v = _mm256_mul_ps(v, sigmoid8(v)); /* the epilogue pass's bits */
    if (n_act == 8) _mm256_storeu_ps(y, v);
    else store_first(y, v, n_act);
}

/* v + bias, + res, then the activation; stored to the n_act first lanes. */
static inline void store_out(const dw_plane *p, __m256 v, int64_t off, int64_t n_act, __m256i act) {
    if (p->has_bias) v = _mm256_add_ps(v, _mm256_set1_ps(p->bias));
    res_act_store(p->g, v, p->res ? p->res + off : NULL, p->y + off, n_act, act);
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
    __m256i col =
        _mm256_mullo_epi32(_mm256_add_epi32(_mm256_set1_epi32((int)ox0), lane), _mm256_set1_epi32((int)g->sw));
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
                /* masked: the lanes in the padding load 0, so they add w * 0 = +-0 */
                acc[r] = _mm256_fmadd_ps(wv, tap_load(rows[r], ox0, off, mode, masked, idx, valid, m1, m2), acc[r]);
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

/* Plane pl (image pl / c, channel pl % c) of t's operands. */
static dw_plane plane_of(const dw_task *t, int64_t pl) {
    const inf__conv2d *g = t->g;
    int64_t in = g->ih * g->iw, out = g->oh * g->ow, c = pl % g->c;
    return (dw_plane){
        .g = g, .x = t->x + pl * in, .w = t->w + c * g->kh * g->kw, .res = t->res ? t->res + pl * out : NULL,
        .y = t->y + pl * out, .bias = t->b ? t->b[c] : 0.0f, .has_bias = t->b != NULL,
    };
}

static void dw_planes(void *arg, int64_t begin, int64_t end) {
    const dw_task *t = arg;
    for (int64_t pl = begin; pl < end; pl++) {
        dw_plane p = plane_of(t, pl);
        dw_plane_run(&p);
    }
}

/* ---- the channel-blocked path ----
 * Blocks of 8 channels of one image: the block's input is transposed into
 * the slot's part of the scratch as [ph][pw][8] (zero padding around it,
 * channels in the lanes), so the taps of 8 output positions are 8 aligned
 * loads with no mask whatever the stride, the dilation or the plane size,
 * and the 8 channels' weights of a tap are one vector.  The 8 x 8 sums
 * (positions x channels), plus the bias lanes, are transposed back to NCHW
 * rows and stored through cb_store (the residual and the activation, as
 * store_out).  A padding tap adds w * 0 = +-0, which leaves the sum as it
 * is (finite weights): the bits are the general path's. */

#define CB 8                            /* channels a block holds: one per lane */
#define CB_TAPS_MAX 64                  /* kh * kw the path takes */
#define CB_SLOT_MAX ((int64_t)1 << 21)  /* floats a slot may take; larger planes take the general path */

typedef struct cb_geom {
    int cb;            /* channels a block holds: CB, or 16 on AVX-512 (inf__conv2d_dw_block16_avx512) */
    int64_t ph, pw;    /* padded input rows and columns a block buffers */
    int64_t slot;      /* floats a slot takes: ph * pw * cb, then the bias and the taps' weight vectors */
    int64_t n_cblk;    /* channel blocks per image */
    int64_t n_blocks;  /* n * n_cblk */
    int64_t n_slots;   /* slots the blocks are split over (threads, fewer for small work) */
} cb_geom;

static inline int64_t up8(int64_t v) { return (v + 7) & ~(int64_t)7; }
static inline int64_t up16(int64_t v) { return (v + 15) & ~(int64_t)15; }
static inline int64_t max64(int64_t a, int64_t b) { return a > b ? a : b; }
static inline int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }

/* The channel-blocked geometry of g for `threads` threads; false when g is
 * not one for it.  Columns cover 8-aligned input chunks and the taps of
 * ow rounded up to 8; rows cover the image and every output row's taps. */
static bool cb_geometry(const inf__conv2d *g, int threads, cb_geom *G) {
    int64_t taps = g->kh * g->kw;
    if (taps > CB_TAPS_MAX) return false;
    G->cb = inf__cpu_has_avx512() ? 16 : CB;
    G->pw = max64(g->pl + up8(g->iw), (up8(g->ow) - 1) * g->sw + (g->kw - 1) * g->dw + 1);
    G->ph = max64(g->pt + g->ih, (g->oh - 1) * g->sh + (g->kh - 1) * g->dh + 1);
    if (G->ph > CB_SLOT_MAX / G->pw) return false;
    G->slot = (G->ph * G->pw + 1 + taps) * G->cb;
    if (G->slot > CB_SLOT_MAX) return false;
    G->n_cblk = (g->c + G->cb - 1) / G->cb;
    G->n_blocks = g->n * G->n_cblk;
    int64_t work = g->n * g->c * g->oh * g->ow * taps;
    G->n_slots = min64(min64(threads, G->n_blocks), work / 16384 + 1);
    return true;
}

/* One block: nc channels from plane pl0, their operands and buffers. */
typedef struct cb_block {
    const inf__conv2d *g;
    const cb_geom *G;
    dw_plane pl[CB];
    int nc;
    bool has_bias;
    float *buf, *wv; /* [ph][pw][8] input; [taps][8] weights, the bias lanes at wv - 8 */
} cb_block;

/* The block's input rows transposed into buf (the padding stays as zeroed)
 * and its weights into wv (lanes past nc zero). */
static void cb_fill(const cb_block *B) {
    const inf__conv2d *g = B->g;
    int64_t taps = g->kh * g->kw;
    for (int64_t t = -1; t < taps; t++) { /* t = -1: the bias */
        float lanes[CB] = {0};
        for (int q = 0; q < B->nc; q++) lanes[q] = t < 0 ? B->pl[q].bias : B->pl[q].w[t];
        _mm256_store_ps(B->wv + t * CB, _mm256_loadu_ps(lanes));
    }
    for (int64_t iy = 0; iy < g->ih; iy++) {
        float *dst = B->buf + ((iy + g->pt) * B->G->pw + g->pl) * CB;
        for (int64_t ix = 0; ix < g->iw; ix += 8) {
            __m256 r[CB];
            for (int q = 0; q < CB; q++)
                r[q] = q < B->nc ? inf__avx2_row_load(B->pl[q].x + iy * g->iw, ix, g->iw) : _mm256_setzero_ps();
            inf__avx2_transpose8(r);
            for (int q = 0; q < CB; q++) _mm256_store_ps(dst + (ix + q) * CB, r[q]);
        }
    }
}

/* v[q] (channel q of the block, n <= 8 positions from y offset off, bias
 * added) + res, then the activation, stored to the n first lanes; each
 * test made once for the block's channels. */
static inline void cb_store(const cb_block *B, __m256 *v, int64_t off, int64_t n) {
    const inf__conv2d *g = B->g;
    int nc = B->nc;
    if (B->pl[0].res) /* all the block's planes have one, or none */
        for (int q = 0; q < nc; q++)
            v[q] = _mm256_add_ps(v[q], n == 8 ? _mm256_loadu_ps(B->pl[q].res + off)
                                              : _mm256_maskload_ps(B->pl[q].res + off, inf__avx2_lanes(n)));
    if (g->act == INF_EPILOGUE_RELU)
        for (int q = 0; q < nc; q++) v[q] = _mm256_max_ps(v[q], _mm256_setzero_ps()); /* NaN -> 0, as Relu */
    else if (g->act == INF_EPILOGUE_CLIP)
        for (int q = 0; q < nc; q++) /* NaN kept */
            v[q] = _mm256_min_ps(_mm256_set1_ps(g->hi), _mm256_max_ps(_mm256_set1_ps(g->lo), v[q]));
    else if (g->act == INF_EPILOGUE_SILU)
        for (int q = 0; q < nc; q++) v[q] = _mm256_mul_ps(v[q], sigmoid8(v[q]));
    if (n == 8)
        for (int q = 0; q < nc; q++) _mm256_storeu_ps(B->pl[q].y + off, v[q]);
    else
        for (int q = 0; q < nc; q++) store_first(B->pl[q].y + off, v[q], n);
}

/* Output row oy, positions ox..ox+7 (those below ow stored), all of the
 * block's channels.  KH, KW, SH, SW, DH, DW are constants where inlined for
 * the common 3x3 shapes. */
static inline __attribute__((always_inline)) void cb_octet(const cb_block *B, int64_t oy, int64_t ox, int64_t KH,
                                                           int64_t KW, int64_t SW, int64_t DH, int64_t DW,
                                                           int64_t SH) {
    const inf__conv2d *g = B->g;
    __m256 acc[CB];
    for (int j = 0; j < CB; j++) acc[j] = _mm256_setzero_ps();
    for (int64_t ky = 0; ky < KH; ky++) {
        const float *row = B->buf + ((oy * SH + ky * DH) * B->G->pw + ox * SW) * CB;
        for (int64_t kx = 0; kx < KW; kx++) {
            __m256 wt = _mm256_load_ps(B->wv + (ky * KW + kx) * CB);
            const float *tp = row + kx * DW * CB;
            for (int j = 0; j < CB; j++) acc[j] = _mm256_fmadd_ps(wt, _mm256_load_ps(tp + j * SW * CB), acc[j]);
        }
    }
    if (B->has_bias)
        for (int j = 0; j < CB; j++) acc[j] = _mm256_add_ps(acc[j], _mm256_load_ps(B->wv - CB)); /* bias lanes */
    inf__avx2_transpose8(acc);
    cb_store(B, acc, oy * g->ow + ox, min64(g->ow - ox, 8));
}

/* The block's output, with the taps unrolled for 3x3 and 5x5 at strides 1
 * and 2. */
static void cb_compute(const cb_block *B) {
    const inf__conv2d *g = B->g;
    bool unit = g->dh == 1 && g->dw == 1 && g->sh == g->sw;
    bool k3 = unit && g->kh == 3 && g->kw == 3, k5 = unit && g->kh == 5 && g->kw == 5;
    for (int64_t oy = 0; oy < g->oh; oy++)
        for (int64_t ox = 0; ox < g->ow; ox += 8) {
            if (k3 && g->sw == 1) cb_octet(B, oy, ox, 3, 3, 1, 1, 1, 1);
            else if (k3 && g->sw == 2) cb_octet(B, oy, ox, 3, 3, 2, 1, 1, 2);
            else if (k5 && g->sw == 1) cb_octet(B, oy, ox, 5, 5, 1, 1, 1, 1);
            else if (k5 && g->sw == 2) cb_octet(B, oy, ox, 5, 5, 2, 1, 1, 2);
            else cb_octet(B, oy, ox, g->kh, g->kw, g->sw, g->dh, g->dw, g->sh);
        }
}

typedef struct cb_task {
    const dw_task *t;
    cb_geom G;
    float *scratch; /* 64-byte aligned, n_slots * slot floats */
} cb_task;

/* Block b of slot buffer buf on AVX-512: its 16 planes handed to
 * depthwise_avx512.c. */
static void cb_block16(const cb_task *ct, int64_t b, float *buf) {
    const inf__conv2d *g = ct->t->g;
    const cb_geom *G = &ct->G;
    int64_t c0 = b % G->n_cblk * 16, pl0 = b / G->n_cblk * g->c + c0;
    inf__dw_block16 B = {.g = g, .pw = G->pw, .nc = (int)min64(16, g->c - c0), .has_bias = ct->t->b != NULL,
                         .buf = buf, .wv = buf + (G->ph * G->pw + 1) * 16};
    for (int q = 0; q < B.nc; q++) {
        dw_plane p = plane_of(ct->t, pl0 + q);
        B.x[q] = p.x, B.w[q] = p.w, B.res[q] = p.res, B.y[q] = p.y, B.bias[q] = p.bias;
    }
    inf__conv2d_dw_block16_avx512(&B);
}

/* Slot s: blocks [s * NB / n_slots, (s + 1) * NB / n_slots) (what a block
 * gives does not depend on its slot). */
static void cb_slots(void *arg, int64_t begin, int64_t end) {
    const cb_task *ct = arg;
    const inf__conv2d *g = ct->t->g;
    const cb_geom *G = &ct->G;
    for (int64_t s = begin; s < end; s++) {
        cb_block B = {.g = g, .G = G, .has_bias = ct->t->b != NULL, .buf = ct->scratch + s * G->slot};
        B.wv = B.buf + (G->ph * G->pw + 1) * CB;
        for (int64_t i = 0; i < G->ph * G->pw * G->cb; i += 8) _mm256_store_ps(B.buf + i, _mm256_setzero_ps());
        for (int64_t b = s * G->n_blocks / G->n_slots; b < (s + 1) * G->n_blocks / G->n_slots; b++) {
            if (G->cb == 16) {
                cb_block16(ct, b, B.buf);
                continue;
            }
            int64_t c0 = b % G->n_cblk * CB, pl0 = b / G->n_cblk * g->c + c0;
            B.nc = (int)min64(CB, g->c - c0);
            for (int q = 0; q < B.nc; q++) B.pl[q] = plane_of(ct->t, pl0 + q);
            cb_fill(&B);
            cb_compute(&B);
        }
    }
}

/* ---- the padded-plane path (stride 1 along the row) ----
 * One plane at a time, in NCHW: the plane is copied into the slot's part of
 * the scratch with its zero padding around it, so tap kx of 8 consecutive
 * outputs is one unaligned load of 8 consecutive floats, never masked,
 * whatever the borders.  A 3x3, stride-1 plane computes up to PR_ROWS output
 * rows together: each padded row's three loads feed every output row it is
 * a tap row of (4.5 loads per 8 outputs instead of 9 at 4 rows; the 9
 * weights stay in registers); other kernels take one row at a time.  Sums
 * are 0, then fma(w, x, sum) in (ky, kx) order, then + bias, + res, the
 * activation, stored straight to Y's rows (the last block of a row with
 * plain 4/2/1-float stores): no transposes.  A padding tap adds w * 0 = +-0: the general
 * path's bits.  Each slot has two buffers: plane i + 1 is copied while
 * plane i is computed from the other, so the copy's stores have reached L1
 * before they are read (loads that straddle stores still in flight wait
 * for them: that made small planes 1.5-5x slower).
 * Stride 2 along the row keeps the channel-blocked path (on AVX-512,
 * depthwise_s2_avx512.c's in-place kernel where it fits): copying it as two
 * deinterleaved (even, odd column) planes and computing it so was tried and
 * ran 1.06-1.37x its time (bench_depthwise, mobile's three strided layers). */

#define PR_ROWS 5   /* output rows a pass when a row is over 8 columns */
#define PR_NARROW 6 /* output rows a pass when a row is one block */
#define PR_SUMS 6   /* sums in flight, at most */

typedef struct pr_geom {
    int64_t ph, pw;  /* padded rows; floats of a padded row, a multiple of 8 */
    int64_t slot;    /* floats a buffer takes: ph * pw (a slot holds two) */
    int64_t n_slots; /* slots the planes are split over */
} pr_geom;

/* A kernel wider or taller than 3 (EfficientNet's 5x5, ConvNeXt's 7x7):
 * at stride 1 too it takes the channel-blocked path when cb_geometry
 * takes it (up to CB_TAPS_MAX taps, a plane within CB_SLOT_MAX).  Here it would be pr_plane_any, one output row
 * at a time, a chain of kh * kw dependent adds per sum and a load per tap;
 * the channel blocks keep 8 sums in flight and load each tap's 8 weights
 * once for 8 positions.  bench_depthwise, EfficientNet-B0's 5x5 stride-1
 * layers, 1 thread: 240 @28x28 154 us against 214, 672 @14x14 120 against
 * 163, 1152 @7x7 68 against 89 (session 28; before the 5x5 unrolling of
 * cb_compute).  A multi-row K x K version of pr_block3 (one or two column
 * blocks, the 25 weights read from memory) ran 206 and 223 us on the
 * first: 3x3 keeps this path, whose 9 weights stay in registers. */
static bool pr_wide(const inf__conv2d *g) { return g->kh > 3 || g->kw > 3; }

/* The padded-plane geometry of g; false when g is not one for it (a row
 * stride above 1, a kernel for the channel blocks (pr_wide), or a plane
 * over the scratch cap).  Columns cover the
 * taps of ow rounded up to 8 and the copy's 8-float stores. */
static bool pr_geometry(const inf__conv2d *g, int threads, pr_geom *G) {
    cb_geom C;
    if (g->sw != 1 || (pr_wide(g) && cb_geometry(g, threads, &C))) return false;
    G->pw = up8(max64(up16(g->ow) + (g->kw - 1) * g->dw, g->pl + up8(g->iw))); /* 16: the AVX-512 3x3 */
    G->ph = max64(g->pt + g->ih, (g->oh - 1) * g->sh + (g->kh - 1) * g->dh + 1);
    if (G->ph > CB_SLOT_MAX / G->pw) return false;
    G->slot = G->ph * G->pw;
    int64_t planes = g->n * g->c, work = planes * g->oh * g->ow * g->kh * g->kw;
    G->n_slots = min64(min64(threads, planes), work / 16384 + 1);
    return true;
}

/* A plane's store, set up once per plane: + bias (+0 without one: a sum
 * is never -0, so the bits are those of no add), + res, the activation. */
typedef struct pr_out {
    __m256 bias, lo, hi;
    int act;
    const float *res; /* NULL or the plane's residual */
    float *y;
} pr_out;

static pr_out pr_out_of(const dw_plane *p) {
    return (pr_out){.bias = _mm256_set1_ps(p->has_bias ? p->bias : 0.0f), .lo = _mm256_set1_ps(p->g->lo),
                    .hi = _mm256_set1_ps(p->g->hi), .act = p->g->act, .res = p->res, .y = p->y};
}

/* v to the n <= 8 outputs from y offset off, as res_act_store. */
static inline __attribute__((always_inline)) void pr_store(const pr_out *o, __m256 v, int64_t off, int64_t n) {
    v = _mm256_add_ps(v, o->bias);
    if (o->res)
        v = _mm256_add_ps(v, n == 8 ? _mm256_loadu_ps(o->res + off)
                                    : _mm256_maskload_ps(o->res + off, inf__avx2_lanes(n)));
    if (o->act == INF_EPILOGUE_RELU) v = _mm256_max_ps(v, _mm256_setzero_ps()); /* NaN -> 0, as Relu */
    else if (o->act == INF_EPILOGUE_CLIP) v = _mm256_min_ps(o->hi, _mm256_max_ps(o->lo, v)); /* NaN kept */
    else if (o->act == INF_EPILOGUE_SILU) v = _mm256_mul_ps(v, sigmoid8(v));
    if (n == 8) _mm256_storeu_ps(o->y + off, v);
    else store_first(o->y + off, v, n);
}

/* acc[j] to the n <= 8 outputs from y offset off + j * ow, j < R, as
 * pr_store, each test made once for the R rows. */
static inline __attribute__((always_inline)) void pr_store_rows(const pr_out *o, __m256 *acc, int R, int64_t off,
                                                                int64_t ow, int64_t n) {
    for (int j = 0; j < R; j++) acc[j] = _mm256_add_ps(acc[j], o->bias);
    if (o->res)
        for (int j = 0; j < R; j++)
            acc[j] = _mm256_add_ps(acc[j], n == 8 ? _mm256_loadu_ps(o->res + off + j * ow)
                                                  : _mm256_maskload_ps(o->res + off + j * ow, inf__avx2_lanes(n)));
    if (o->act == INF_EPILOGUE_RELU)
        for (int j = 0; j < R; j++) acc[j] = _mm256_max_ps(acc[j], _mm256_setzero_ps()); /* NaN -> 0, as Relu */
    else if (o->act == INF_EPILOGUE_CLIP)
        for (int j = 0; j < R; j++) acc[j] = _mm256_min_ps(o->hi, _mm256_max_ps(o->lo, acc[j])); /* NaN kept */
    else if (o->act == INF_EPILOGUE_SILU)
        for (int j = 0; j < R; j++) acc[j] = _mm256_mul_ps(acc[j], sigmoid8(acc[j]));
    if (n == 8)
        for (int j = 0; j < R; j++) _mm256_storeu_ps(o->y + off + j * ow, acc[j]);
    else
        for (int j = 0; j < R; j++) store_first(o->y + off + j * ow, acc[j], n);
}

/* The plane's input rows (x) into buf at their padded places.  Only the
 * columns from pl up to pl + iw rounded up to 8 are written (zeros past
 * iw): the padding stays as zeroed. */
static void pr_fill(const inf__conv2d *g, const pr_geom *G, const float *x, float *buf) {
    int64_t iw = g->iw;
    __m256i tail = inf__avx2_lanes(iw % 8);
    float *dst = buf + g->pt * G->pw + g->pl;
    for (int64_t iy = 0; iy < g->ih; iy++, dst += G->pw) {
        const float *xrow = x + iy * iw;
        int64_t ix = 0;
        for (; ix + 8 <= iw; ix += 8) _mm256_storeu_ps(dst + ix, _mm256_loadu_ps(xrow + ix));
        if (ix < iw) _mm256_storeu_ps(dst + ix, _mm256_maskload_ps(xrow + ix, tail));
    }
}

/* Output rows oy..oy+R-1, columns ox..ox+7 (the n first stored) of a 3x3,
 * stride-1, dilation-1 kernel: padded row oy + r is tap row ky = r - j of
 * the output rows j it reaches, its 3 taps loaded once. */
static inline __attribute__((always_inline)) void pr_block3(const pr_out *o, int64_t ow, const pr_geom *G,
                                                            const float *buf, const __m256 *wv, int64_t oy, int R,
                                                            int64_t ox, int64_t n) {
    __m256 acc[PR_SUMS];
    for (int j = 0; j < R; j++) acc[j] = _mm256_setzero_ps();
    const float *row = buf + oy * G->pw + ox;
#pragma GCC unroll 8
    for (int r = 0; r < R + 2; r++, row += G->pw) {
        __m256 v0 = _mm256_loadu_ps(row), v1 = _mm256_loadu_ps(row + 1), v2 = _mm256_loadu_ps(row + 2);
#pragma GCC unroll 8
        for (int j = 0; j < R; j++) {
            int ky = r - j;
            if (ky < 0 || ky > 2) continue;
            acc[j] = _mm256_fmadd_ps(wv[3 * ky], v0, acc[j]);
            acc[j] = _mm256_fmadd_ps(wv[3 * ky + 1], v1, acc[j]);
            acc[j] = _mm256_fmadd_ps(wv[3 * ky + 2], v2, acc[j]);
        }
    }
    pr_store_rows(o, acc, R, oy * ow + ox, ow, n);
}

/* Output rows oy..oy+R-1 of a 3x3 in blocks of 8 columns. */
static inline __attribute__((always_inline)) void pr_rows3(const pr_out *o, int64_t ow, const pr_geom *G,
                                                           const float *buf, const __m256 *wv, int64_t oy, int R) {
    for (int64_t ox = 0; ox < ow; ox += 8) pr_block3(o, ow, G, buf, wv, oy, R, ox, min64(ow - ox, 8));
}

/* Output rows from oy to oh, R at a time (R a constant where inlined),
 * the rest (fewer than R) together. */
static inline __attribute__((always_inline)) void pr_plane3_r(const pr_out *o, int64_t ow, int64_t oh,
                                                              const pr_geom *G, const float *buf, const __m256 *wv,
                                                              int R) {
    int64_t oy = 0;
    for (; oy + R <= oh; oy += R) pr_rows3(o, ow, G, buf, wv, oy, R);
    switch (oh - oy) {
    case 5: pr_rows3(o, ow, G, buf, wv, oy, 5); break;
    case 4: pr_rows3(o, ow, G, buf, wv, oy, 4); break;
    case 3: pr_rows3(o, ow, G, buf, wv, oy, 3); break;
    case 2: pr_rows3(o, ow, G, buf, wv, oy, 2); break;
    case 1: pr_rows3(o, ow, G, buf, wv, oy, 1); break;
    default: break;
    }
}

/* A 3x3, stride-1 plane: PR_ROWS rows a pass, PR_NARROW when a row is one
 * block (more sums in flight: each is a chain of 9 dependent adds). */
static void pr_plane3(const dw_plane *p, const pr_geom *G, const float *buf) {
    __m256 wv[9];
    for (int t = 0; t < 9; t++) wv[t] = _mm256_set1_ps(p->w[t]);
    pr_out o = pr_out_of(p);
    if (p->g->ow > 8) pr_plane3_r(&o, p->g->ow, p->g->oh, G, buf, wv, PR_ROWS);
    else pr_plane3_r(&o, p->g->ow, p->g->oh, G, buf, wv, PR_NARROW);
}

/* Any other kernel: one output row, 8 columns a step, tap (ky, kx) at
 * padded row oy * sh + ky * dh, column ox + kx * dw. */
static void pr_plane_any(const dw_plane *p, const pr_geom *G, const float *buf) {
    const inf__conv2d *g = p->g;
    pr_out o = pr_out_of(p);
    for (int64_t oy = 0; oy < g->oh; oy++)
        for (int64_t ox = 0; ox < g->ow; ox += 8) {
            __m256 acc = _mm256_setzero_ps();
            for (int64_t ky = 0; ky < g->kh; ky++) {
                const float *row = buf + (oy * g->sh + ky * g->dh) * G->pw + ox;
                for (int64_t kx = 0; kx < g->kw; kx++)
                    acc =
                        _mm256_fmadd_ps(_mm256_set1_ps(p->w[ky * g->kw + kx]), _mm256_loadu_ps(row + kx * g->dw), acc);
            }
            pr_store(&o, acc, oy * g->ow + ox, min64(g->ow - ox, 8));
        }
}

static void pr_plane(const dw_plane *p, const pr_geom *G, const float *buf, bool zmm) {
    const inf__conv2d *g = p->g;
    if (zmm && g->kh == 3 && g->kw == 3 && g->dh == 1 && g->dw == 1 && g->sh == 1) { /* 16 columns a vector */
        inf__conv2d_dw3_plane_avx512(buf, G->pw, g->oh, g->ow, p->w, p->has_bias ? p->bias : 0.0f, p->res, p->y, g->act,
                                     g->lo, g->hi);
        return;
    }
    if (g->kh == 3 && g->kw == 3 && g->dh == 1 && g->dw == 1 && g->sh == 1) pr_plane3(p, G, buf);
    else pr_plane_any(p, G, buf);
}

typedef struct pr_task {
    const dw_task *t;
    pr_geom G;
    float *scratch; /* 32-byte aligned, n_slots * 2 * slot floats */
} pr_task;

/* Slot s: planes [s * P / n_slots, (s + 1) * P / n_slots) of the n * c,
 * plane i + 1 copied into one of the slot's two buffers before plane i is
 * computed from the other. */
static void pr_slots(void *arg, int64_t begin, int64_t end) {
    const pr_task *pt = arg;
    const inf__conv2d *g = pt->t->g;
    const pr_geom *G = &pt->G;
    int64_t planes = g->n * g->c, in = g->ih * g->iw;
    bool zmm = inf__cpu_has_avx512();
    for (int64_t s = begin; s < end; s++) {
        float *buf[2] = {pt->scratch + s * 2 * G->slot, pt->scratch + (s * 2 + 1) * G->slot};
        for (int64_t i = 0; i < 2 * G->slot; i += 8) _mm256_store_ps(buf[0] + i, _mm256_setzero_ps());
        int64_t pl0 = s * planes / G->n_slots, pl1 = (s + 1) * planes / G->n_slots;
        if (pl0 < pl1) pr_fill(g, G, pt->t->x + pl0 * in, buf[0]);
        for (int64_t pl = pl0; pl < pl1; pl++) {
            if (pl + 1 < pl1) pr_fill(g, G, pt->t->x + (pl + 1) * in, buf[(pl - pl0 + 1) % 2]);
            dw_plane p = plane_of(pt->t, pl);
            pr_plane(&p, G, buf[(pl - pl0) % 2], zmm);
        }
    }
}

/* Does g take depthwise_s2_avx512.c or depthwise_flat_avx512.c (X in place, no scratch)? */
static bool s2_path(const inf__conv2d *g) { return inf__cpu_has_avx512() && inf__conv2d_dw_s2_fits(g); }
static bool flat_path(const inf__conv2d *g) { return inf__cpu_has_avx512() && inf__conv2d_dw_flat_fits(g); }

int64_t inf__conv2d_depthwise_scratch_floats(const inf__conv2d *g, int threads) {
    pr_geom P;
    cb_geom G;
    if (s2_path(g) || flat_path(g)) return 0;
    if (pr_geometry(g, threads, &P)) return P.n_slots * 2 * P.slot + 8;
    return cb_geometry(g, threads, &G) ? G.n_slots * G.slot + 16 : 0;
}

void inf__conv2d_depthwise_f32_avx2(inf__pool *pool, const inf__conv2d *g, const float *x, const float *w,
                                    const float *bias, const float *res, float *scratch, float *y) {
    dw_task t = {g, x, w, bias, res, y};
    pr_task pt = {.t = &t};
    cb_task ct = {.t = &t};
    if (s2_path(g)) {
        inf__conv2d_dw_s2_avx512(pool, g, x, w, bias, res, y);
        return;
    }
    if (flat_path(g)) {
        inf__conv2d_dw_flat_avx512(pool, g, x, w, bias, res, y);
        return;
    }
    if (scratch && pr_geometry(g, inf__pool_size(pool), &pt.G)) {
        pt.scratch = (float *)(((uintptr_t)scratch + 31) & ~(uintptr_t)31);
        inf__pool_range(pool, pt.G.n_slots, 1, pr_slots, &pt);
        return;
    }
    if (scratch && cb_geometry(g, inf__pool_size(pool), &ct.G)) {
        ct.scratch = (float *)(((uintptr_t)scratch + 63) & ~(uintptr_t)63);
        inf__pool_range(pool, ct.G.n_slots, 1, cb_slots, &ct);
        return;
    }
    int64_t work = g->oh * g->ow * g->kh * g->kw;
    inf__pool_range(pool, g->n * g->c, work >= 16384 ? 1 : 16384 / (work + 1) + 1, dw_planes, &t);
}

#endif /* __x86_64__ */
