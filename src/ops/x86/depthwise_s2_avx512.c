/*
 * depthwise_s2_avx512.c -- the AVX-512 depthwise convolution at stride 2
 * (both axes), dilation 1, kernels up to 5x5, read in place in NCHW: no
 * copy of the input, no transposes (MobileNetV2's and EfficientNet-B0's
 * downsampling 3x3 and 5x5 layers).
 *
 * Called by depthwise_avx2.c (inf__conv2d_depthwise_f32_avx2) when
 * inf__cpu_has_avx512() and inf__conv2d_dw_s2_fits(g), one pool task per
 * range of (image, channel) planes.  Per plane, 16 output columns a zmm and
 * DWS2_ROWS output rows a pass: each input row the pass reads is loaded
 * once per pair of tap columns kx, kx + 1 -- 32 floats from column
 * 2 * ox0 - pl + kx, their even lanes tap kx and their odd lanes tap
 * kx + 1 (a vpermt2ps each) -- and feeds every output row it is a
 * tap row of (row 2 * oy - pt + ky: a row feeds one or two of them at
 * stride 2).  The loads are masked to the row's columns [0, iw): a tap in
 * the left or right padding loads 0; input rows outside the image are
 * skipped (as in the reference).
 * Bits: the other depthwise paths' -- per output 0, then sum = fma(w, x,
 * sum) over the taps in (ky, kx) order (a padding tap adds w * 0 = +-0,
 * which leaves a sum that started at +0 unchanged, for finite weights),
 * then + bias, + res, then ReLU (max with 0: NaN -> 0), Clip (NaN kept) or
 * SiLU (x * sigmoid16(x), as the epilogue pass).  Results do not depend on
 * N or the thread count (a plane's sums do not depend on where it runs).
 * Measurements: bench/RESULTS.md "Session 31 (h22/dwfma)".
 */
#if defined(__x86_64__)
#include <immintrin.h>

#include "ops/ops.h"
#include "ops/x86/math_avx512.h"

#define DWS2_ROWS 4 /* output rows a pass: 2 * 4 + kh - 2 input rows, each loaded once */
/* kh and kw the path takes.  A 5x5 (EfficientNet-B0's 144 @56x56 and 240
 * @28x28 at stride 2, bench_depthwise) is level with the channel blocks at
 * 1 thread (1.25-1.35x their time with a window load per tap, before the
 * even/odd pairs) and 0.75-0.85x at 2 (planes split finer than blocks of
 * 16 channels). */
#define DWS2_KMAX 5

/* ow >= 8: on narrower outputs (a 14x14 -> 7x7 plane) most lanes idle and
 * the channel blocks ran 0.65-0.7x this kernel's time (bench_depthwise). */
bool inf__conv2d_dw_s2_fits(const inf__conv2d *g) {
    return g->sh == 2 && g->sw == 2 && g->dh == 1 && g->dw == 1 && g->kh <= DWS2_KMAX && g->kw <= DWS2_KMAX &&
           g->ow >= 8;
}

/* Lanes i < 16 with 0 <= c + i < iw. */
static inline __mmask16 in_row(int64_t c, int64_t iw) {
    int64_t lo = c < 0 ? -c : 0, hi = iw - c;
    if (hi > 16) hi = 16;
    if (lo >= hi) return 0;
    return (__mmask16)(((1u << hi) - 1u) & ~((1u << lo) - 1u));
}

typedef struct s2_plane {
    const inf__conv2d *g;
    const float *x, *w, *res; /* x: ih x iw; w: kh x kw; res: oh x ow or NULL */
    float *y;
    __m512 bias, lo, hi;
} s2_plane;

/* acc[j] (+ bias, + res, activation) to output row oy + j, the n <= 16
 * columns from ox. */
static inline __attribute__((always_inline)) void s2_store(const s2_plane *p, __m512 *acc, int R, int64_t oy,
                                                           int64_t ox, int64_t n) {
    const inf__conv2d *g = p->g;
    __mmask16 m = n >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << n) - 1u);
    int64_t off = oy * g->ow + ox;
    for (int j = 0; j < R; j++) acc[j] = _mm512_add_ps(acc[j], p->bias);
    if (p->res)
        for (int j = 0; j < R; j++) acc[j] = _mm512_add_ps(acc[j], _mm512_maskz_loadu_ps(m, p->res + off + j * g->ow));
    if (g->act == INF_EPILOGUE_RELU)
        for (int j = 0; j < R; j++) acc[j] = _mm512_max_ps(acc[j], _mm512_setzero_ps()); /* NaN -> 0, as Relu */
    else if (g->act == INF_EPILOGUE_CLIP)
        for (int j = 0; j < R; j++) acc[j] = _mm512_min_ps(p->hi, _mm512_max_ps(p->lo, acc[j])); /* NaN kept */
    else if (g->act == INF_EPILOGUE_SILU)
        for (int j = 0; j < R; j++) acc[j] = _mm512_mul_ps(acc[j], sigmoid16(acc[j]));
    for (int j = 0; j < R; j++) _mm512_mask_storeu_ps(p->y + off + j * g->ow, m, acc[j]);
}

/* Output rows oy..oy+R-1, columns ox..ox+15 (n stored); KH, KW constants
 * where inlined. */
static inline __attribute__((always_inline)) void s2_block(const s2_plane *p, int64_t oy, int R, int64_t ox, int64_t n,
                                                           int KH, int KW) {
    const inf__conv2d *g = p->g;
    const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    const __m512i odd = _mm512_setr_epi32(1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31);
    __mmask16 m0[DWS2_KMAX], m1[DWS2_KMAX];
    int64_t c0 = 2 * ox - g->pl;
    for (int kx = 0; kx < KW; kx += 2) m0[kx] = in_row(c0 + kx, g->iw), m1[kx] = in_row(c0 + kx + 16, g->iw);
    __m512 acc[DWS2_ROWS];
    for (int j = 0; j < R; j++) acc[j] = _mm512_setzero_ps();
    int64_t iy0 = 2 * oy - g->pt;
#pragma GCC unroll 12
    for (int r = 0; r < 2 * (R - 1) + KH; r++) {
        int64_t iy = iy0 + r;
        if (iy < 0 || iy >= g->ih) continue;
        const float *row = p->x + iy * g->iw + c0;
        __m512 t[DWS2_KMAX];
        for (int kx = 0; kx < KW; kx += 2) { /* taps kx and kx + 1: the even and odd lanes of one window */
            __m512 a = _mm512_maskz_loadu_ps(m0[kx], row + kx), b = _mm512_maskz_loadu_ps(m1[kx], row + kx + 16);
            t[kx] = _mm512_permutex2var_ps(a, even, b);
            if (kx + 1 < KW) t[kx + 1] = _mm512_permutex2var_ps(a, odd, b);
        }
#pragma GCC unroll 8
        for (int j = 0; j < R; j++) {
            int ky = r - 2 * j;
            if (ky < 0 || ky >= KH) continue;
            for (int kx = 0; kx < KW; kx++) acc[j] = _mm512_fmadd_ps(_mm512_set1_ps(p->w[ky * KW + kx]), t[kx], acc[j]);
        }
    }
    s2_store(p, acc, R, oy, ox, n);
}

/* Output rows oy..oy+R-1 in blocks of 16 columns. */
static inline __attribute__((always_inline)) void s2_rows(const s2_plane *p, int64_t oy, int R, int KH, int KW) {
    int64_t ow = p->g->ow;
    for (int64_t ox = 0; ox < ow; ox += 16) s2_block(p, oy, R, ox, ow - ox < 16 ? ow - ox : 16, KH, KW);
}

/* A plane, DWS2_ROWS rows a pass, the rest together. */
static inline __attribute__((always_inline)) void s2_plane_k(const s2_plane *p, int KH, int KW) {
    int64_t oh = p->g->oh, oy = 0;
    for (; oy + DWS2_ROWS <= oh; oy += DWS2_ROWS) s2_rows(p, oy, DWS2_ROWS, KH, KW);
    switch (oh - oy) {
    case 3: s2_rows(p, oy, 3, KH, KW); break;
    case 2: s2_rows(p, oy, 2, KH, KW); break;
    case 1: s2_rows(p, oy, 1, KH, KW); break;
    default: break;
    }
}

static void s2_plane_run(const s2_plane *p) {
    const inf__conv2d *g = p->g;
    if (g->kh == 3 && g->kw == 3) s2_plane_k(p, 3, 3);
    else if (g->kh == 5 && g->kw == 5) s2_plane_k(p, 5, 5);
    else s2_plane_k(p, (int)g->kh, (int)g->kw);
}

typedef struct s2_task {
    const inf__conv2d *g;
    const float *x, *w, *b, *res;
    float *y;
} s2_task;

static void s2_planes(void *arg, int64_t begin, int64_t end) {
    const s2_task *t = arg;
    const inf__conv2d *g = t->g;
    int64_t in = g->ih * g->iw, out = g->oh * g->ow;
    for (int64_t pl = begin; pl < end; pl++) {
        int64_t c = pl % g->c;
        s2_plane p = {.g = g,
                      .x = t->x + pl * in,
                      .w = t->w + c * g->kh * g->kw,
                      .res = t->res ? t->res + pl * out : NULL,
                      .y = t->y + pl * out,
                      .bias = _mm512_set1_ps(t->b ? t->b[c] : 0.0f), /* +0: a sum is never -0 */
                      .lo = _mm512_set1_ps(g->lo),
                      .hi = _mm512_set1_ps(g->hi)};
        s2_plane_run(&p);
    }
}

void inf__conv2d_dw_s2_avx512(inf__pool *pool, const inf__conv2d *g, const float *x, const float *w, const float *bias,
                              const float *res, float *y) {
    s2_task t = {g, x, w, bias, res, y};
    int64_t work = g->oh * g->ow * g->kh * g->kw;
    inf__pool_range(pool, g->n * g->c, work >= 16384 ? 1 : 16384 / (work + 1) + 1, s2_planes, &t);
}

#endif /* __x86_64__ */
