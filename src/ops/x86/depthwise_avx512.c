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
 * Bits: each output is the AVX2 kernel's -- 0, then w * x added in (ky, kx)
 * order (a multiply then an add, no FMA: the file is ISO C11, no
 * contraction), then + bias (+0 without one: a sum is never -0), + res,
 * ReLU (max with 0: NaN -> 0) or Clip (NaN kept) -- the same operations per
 * lane (tests/kernels/test_depthwise.c holds both paths to the reference's
 * bits).  Measurements: bench/RESULTS.md, "Session 28 (h19/vision)".
 */
#if defined(__x86_64__)
#include <immintrin.h>

#include "ops/ops.h"
#include "ops/x86/math_avx512.h"

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
            acc[j] = _mm512_add_ps(acc[j], _mm512_mul_ps(wv[3 * ky], v0));
            acc[j] = _mm512_add_ps(acc[j], _mm512_mul_ps(wv[3 * ky + 1], v1));
            acc[j] = _mm512_add_ps(acc[j], _mm512_mul_ps(wv[3 * ky + 2], v2));
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

#endif /* __x86_64__ */
