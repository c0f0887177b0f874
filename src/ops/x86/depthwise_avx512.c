/*
 * depthwise_avx512.c -- the AVX-512 sibling of depthwise_avx2.c's 3x3,
 * stride-1, dilation-1 padded-plane kernel (pr_plane3): 16 output columns
 * a zmm instead of 8 a ymm.
 *
 * Called by depthwise_avx2.c's padded-plane path (pr_plane) for each plane
 * when inf__cpu_has_avx512(): the plane is already copied with its zero
 * padding into buf (pw floats a row, pw >= ow rounded up to 16, plus 2), so
 * tap kx of 16 consecutive outputs is one unmasked unaligned load.  Up to
 * DW5_ROWS (5) output rows a pass (6 when a row is one vector), each padded
 * row's 3 taps loaded once for every output row it feeds, the 9 weights in
 * registers; then + bias, + res, ReLU/Clip, stored (a row's last vector
 * masked).  Lanes past ow read the padding or the next row; they are never
 * stored.
 * Bits: each output is the AVX2 kernel's -- 0, then sum = fma(w, x, sum)
 * in (ky, kx) order, then + bias (+0 without one: a sum is never -0), + res,
 * ReLU (max with 0: NaN -> 0) or Clip (NaN kept) -- the same operations per
 * lane (tests/kernels/test_depthwise.c holds both paths to the reference's
 * bits).  Measurements: bench/RESULTS.md, "Session 28 (h19/vision)".
 */
#if defined(__x86_64__)
#include <immintrin.h>

#include "ops/ops.h"
#include "ops/x86/math_avx512.h"
#include "ops/x86/transpose_avx2.h"

#define DW5_ROWS   5 /* output rows a pass when a row is over one vector */
#define DW5_NARROW 6 /* when a row is one vector */

typedef struct dw5_out {
    __m512 bias, lo, hi;
    int act;
    const float *res;
    float *y;
    int64_t ow;
} dw5_out;

/* acc[j] (+ bias, + res, activation) to output row oy + j, columns ox.. (n <= 16 stored). */
static inline __attribute__((always_inline)) void store_rows(const dw5_out *o, __m512 *acc, int R, int64_t off,
                                                             int64_t n) {
    __mmask16 m = n >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << n) - 1);
    for (int j = 0; j < R; j++) acc[j] = _mm512_add_ps(acc[j], o->bias);
    if (o->res)
        for (int j = 0; j < R; j++) acc[j] = _mm512_add_ps(acc[j], _mm512_maskz_loadu_ps(m, o->res + off + j * o->ow));
    if (o->act == INF_EPILOGUE_RELU)
        for (int j = 0; j < R; j++) acc[j] = _mm512_max_ps(acc[j], _mm512_setzero_ps()); /* NaN -> 0, as Relu */
    else if (o->act == INF_EPILOGUE_CLIP)
        for (int j = 0; j < R; j++) acc[j] = _mm512_min_ps(o->hi, _mm512_max_ps(o->lo, acc[j])); /* NaN kept */
    else if (o->act == INF_EPILOGUE_SILU)
        for (int j = 0; j < R; j++) acc[j] = _mm512_mul_ps(acc[j], sigmoid16(acc[j]));
    for (int j = 0; j < R; j++) _mm512_mask_storeu_ps(o->y + off + j * o->ow, m, acc[j]);
}

/* Output rows oy..oy+R-1, columns ox..ox+15: padded row oy + r is tap row
 * ky = r - j of the output rows j it reaches. */
static inline __attribute__((always_inline)) void block3(const dw5_out *o, const float *buf, int64_t pw,
                                                         const __m512 *wv, int64_t oy, int R, int64_t ox, int64_t n) {
    __m512 acc[DW5_NARROW];
    for (int j = 0; j < R; j++) acc[j] = _mm512_setzero_ps();
    const float *row = buf + oy * pw + ox;
#pragma GCC unroll 8
    for (int r = 0; r < R + 2; r++, row += pw) {
        __m512 v0 = _mm512_loadu_ps(row), v1 = _mm512_loadu_ps(row + 1), v2 = _mm512_loadu_ps(row + 2);
#pragma GCC unroll 8
        for (int j = 0; j < R; j++) {
            int ky = r - j;
            if (ky < 0 || ky > 2) continue;
            acc[j] = _mm512_fmadd_ps(wv[3 * ky], v0, acc[j]);
            acc[j] = _mm512_fmadd_ps(wv[3 * ky + 1], v1, acc[j]);
            acc[j] = _mm512_fmadd_ps(wv[3 * ky + 2], v2, acc[j]);
        }
    }
    store_rows(o, acc, R, oy * o->ow + ox, n);
}

static inline __attribute__((always_inline)) void rows3(const dw5_out *o, const float *buf, int64_t pw,
                                                        const __m512 *wv, int64_t oy, int R) {
    for (int64_t ox = 0; ox < o->ow; ox += 16) block3(o, buf, pw, wv, oy, R, ox, o->ow - ox < 16 ? o->ow - ox : 16);
}

/* Rows R at a time (R a constant where inlined), the rest together. */
static inline __attribute__((always_inline)) void plane3_r(const dw5_out *o, const float *buf, int64_t pw, int64_t oh,
                                                           const __m512 *wv, int R) {
    int64_t oy = 0;
    for (; oy + R <= oh; oy += R) rows3(o, buf, pw, wv, oy, R);
    switch (oh - oy) {
    case 5: rows3(o, buf, pw, wv, oy, 5); break;
    case 4: rows3(o, buf, pw, wv, oy, 4); break;
    case 3: rows3(o, buf, pw, wv, oy, 3); break;
    case 2: rows3(o, buf, pw, wv, oy, 2); break;
    case 1: rows3(o, buf, pw, wv, oy, 1); break;
    default: break;
    }
}

void inf__conv2d_dw3_plane_avx512(const float *buf, int64_t pw, int64_t oh, int64_t ow, const float *w, float bias,
                                  const float *res, float *y, int act, float lo, float hi) {
    __m512 wv[9];
    for (int t = 0; t < 9; t++) wv[t] = _mm512_set1_ps(w[t]);
    dw5_out o = {.bias = _mm512_set1_ps(bias),
                 .lo = _mm512_set1_ps(lo),
                 .hi = _mm512_set1_ps(hi),
                 .act = act,
                 .res = res,
                 .y = y,
                 .ow = ow};
    if (ow > 16) plane3_r(&o, buf, pw, oh, wv, DW5_ROWS);
    else plane3_r(&o, buf, pw, oh, wv, DW5_NARROW);
}

/* ---- the channel-blocked path, 16 channels a block (depthwise_avx2.c's cb_*) ---- */

enum { CB16 = 16 };

/* The block's input rows transposed into buf ([ph][pw][16], channels in the
 * lanes: two 8x8 transposes per 8 columns, channels 0-7 then 8-15) and its
 * weights into wv (lanes past nc zero). */
static void cb16_fill(const inf__dw_block16 *B) {
    const inf__conv2d *g = B->g;
    int64_t taps = g->kh * g->kw;
    for (int64_t t = -1; t < taps; t++) { /* t = -1: the bias */
        float lanes[CB16] = {0};
        for (int q = 0; q < B->nc; q++) lanes[q] = t < 0 ? B->bias[q] : B->w[q][t];
        _mm512_store_ps(B->wv + t * CB16, _mm512_loadu_ps(lanes));
    }
    for (int64_t iy = 0; iy < g->ih; iy++) {
        float *dst = B->buf + ((iy + g->pt) * B->pw + g->pl) * CB16;
        for (int64_t ix = 0; ix < g->iw; ix += 8)
            for (int half = 0; half < 2; half++) {
                __m256 r[8];
                for (int q = 0; q < 8; q++) {
                    int c = 8 * half + q;
                    r[q] = c < B->nc ? inf__avx2_row_load(B->x[c] + iy * g->iw, ix, g->iw) : _mm256_setzero_ps();
                }
                inf__avx2_transpose8(r);
                for (int q = 0; q < 8; q++) _mm256_store_ps(dst + (ix + q) * CB16 + 8 * half, r[q]);
            }
    }
}

/* Channels [c0, c0 + 8) of the block (v[q]: channel c0 + q, n <= 8
 * positions from y offset off, bias added) + res, then the activation,
 * stored to the n first positions: depthwise_avx2.c's cb_store. */
static inline void cb16_store(const inf__dw_block16 *B, __m256 *v, int c0, int64_t off, int64_t n) {
    const inf__conv2d *g = B->g;
    int nc = B->nc - c0 < 8 ? B->nc - c0 : 8;
    __mmask8 k = (__mmask8)((1u << n) - 1u);
    if (B->res[0])
        for (int q = 0; q < nc; q++) v[q] = _mm256_add_ps(v[q], _mm256_maskz_loadu_ps(k, B->res[c0 + q] + off));
    if (g->act == INF_EPILOGUE_RELU)
        for (int q = 0; q < nc; q++) v[q] = _mm256_max_ps(v[q], _mm256_setzero_ps()); /* NaN -> 0, as Relu */
    else if (g->act == INF_EPILOGUE_CLIP)
        for (int q = 0; q < nc; q++) /* NaN kept */
            v[q] = _mm256_min_ps(_mm256_set1_ps(g->hi), _mm256_max_ps(_mm256_set1_ps(g->lo), v[q]));
    else if (g->act == INF_EPILOGUE_SILU)
        for (int q = 0; q < nc; q++) /* the 16-lane sigmoid on 8: the 8-lane one's bits per lane */
            v[q] = _mm256_mul_ps(v[q], _mm512_castps512_ps256(sigmoid16(_mm512_castps256_ps512(v[q]))));
    for (int q = 0; q < nc; q++) _mm256_mask_storeu_ps(B->y[c0 + q] + off, k, v[q]);
}

/* Output row oy, positions ox..ox+7 (those below ow stored), all of the
 * block's channels; KH..SH constants where inlined for the common shapes. */
static inline __attribute__((always_inline)) void cb16_octet(const inf__dw_block16 *B, int64_t oy, int64_t ox,
                                                             int64_t KH, int64_t KW, int64_t SW, int64_t DH,
                                                             int64_t DW, int64_t SH) {
    const inf__conv2d *g = B->g;
    __m512 acc[8];
    for (int j = 0; j < 8; j++) acc[j] = _mm512_setzero_ps();
    for (int64_t ky = 0; ky < KH; ky++) {
        const float *row = B->buf + ((oy * SH + ky * DH) * B->pw + ox * SW) * CB16;
        for (int64_t kx = 0; kx < KW; kx++) {
            __m512 wt = _mm512_load_ps(B->wv + (ky * KW + kx) * CB16);
            const float *tp = row + kx * DW * CB16;
            for (int j = 0; j < 8; j++) acc[j] = _mm512_fmadd_ps(wt, _mm512_load_ps(tp + j * SW * CB16), acc[j]);
        }
    }
    if (B->has_bias)
        for (int j = 0; j < 8; j++) acc[j] = _mm512_add_ps(acc[j], _mm512_load_ps(B->wv - CB16)); /* bias lanes */
    int64_t off = oy * g->ow + ox, n = g->ow - ox < 8 ? g->ow - ox : 8;
    __m256 lo[8], hi[8];
    for (int j = 0; j < 8; j++) {
        lo[j] = _mm512_castps512_ps256(acc[j]);
        hi[j] = _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(acc[j]), 1));
    }
    inf__avx2_transpose8(lo);
    cb16_store(B, lo, 0, off, n);
    if (B->nc > 8) {
        inf__avx2_transpose8(hi);
        cb16_store(B, hi, 8, off, n);
    }
}

void inf__conv2d_dw_block16_avx512(const inf__dw_block16 *B) {
    const inf__conv2d *g = B->g;
    cb16_fill(B);
    bool unit = g->dh == 1 && g->dw == 1 && g->sh == g->sw;
    bool k3 = unit && g->kh == 3 && g->kw == 3, k5 = unit && g->kh == 5 && g->kw == 5;
    for (int64_t oy = 0; oy < g->oh; oy++)
        for (int64_t ox = 0; ox < g->ow; ox += 8) {
            if (k3 && g->sw == 1) cb16_octet(B, oy, ox, 3, 3, 1, 1, 1, 1);
            else if (k3 && g->sw == 2) cb16_octet(B, oy, ox, 3, 3, 2, 1, 1, 2);
            else if (k5 && g->sw == 1) cb16_octet(B, oy, ox, 5, 5, 1, 1, 1, 1);
            else if (k5 && g->sw == 2) cb16_octet(B, oy, ox, 5, 5, 2, 1, 1, 2);
            else cb16_octet(B, oy, ox, g->kh, g->kw, g->sw, g->dh, g->dw, g->sh);
        }
}

#endif /* __x86_64__ */
