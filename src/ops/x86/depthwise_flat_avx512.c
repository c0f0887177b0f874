/*
 * depthwise_flat_avx512.c -- the AVX-512 depthwise convolution of small
 * "same" planes (stride 1, ow == iw, up to DWF_VECS * 16 outputs, up to
 * DWF_TAPS taps), read in place in NCHW: MobileNetV2's and
 * EfficientNet-B0's 7x7 3x3 layers.
 *
 * Called by depthwise_avx2.c (inf__conv2d_depthwise_f32_avx2) when
 * inf__cpu_has_avx512() and inf__conv2d_dw_flat_fits(g).  With ow == iw
 * and stride 1, output o = oy * ow + ox reads its tap (ky, kx) at input
 * o + (ky * dh - pt) * iw + kx * dw - pl: the plane is one flat row of
 * oh * ow outputs, 16 a zmm whatever the row width (a 7x7 plane is 4
 * vectors, not 7 rows of 7 lanes), and every tap of a vector is one load
 * masked to the lanes whose tap lies in the image (the masks, per vector
 * and tap, are the same for every plane: made once per call).  A plane's
 * vectors are all summed together (taps outer, one sum in a register per
 * vector), so its chains of kh * kw dependent FMAs run side by side.  No
 * copy of the input, no transposes, no scratch.
 * Bits: the other depthwise paths' -- per output 0, then sum = fma(w, x,
 * sum) over the taps in (ky, kx) order (a tap in the padding loads 0 and
 * adds w * 0 = +-0, which leaves a sum that started at +0 unchanged, for
 * finite weights), then + bias, + res, then ReLU (NaN -> 0), Clip (NaN
 * kept) or SiLU (x * sigmoid16(x)).  Results do not depend on N or the
 * thread count.  Measurements: bench/RESULTS.md "Session 31 (h22/dwfma)".
 */
#if defined(__x86_64__)
#include <immintrin.h>

#include "ops/ops.h"
#include "ops/x86/math_avx512.h"

/* Output vectors a plane (64 outputs: an 8x8 plane) and taps (kh * kw: up
 * to 3x3) the path takes.  bench_depthwise, 1 thread, against the padded
 * planes (3x3) and the channel blocks (5x5): 960 @7x7 3x3 0.70-0.77x the
 * time, but 256 @12x12 3x3 1.7-1.9x, 512 @14x14 3x3 1.35-1.4x, 672 @14x14
 * 5x5 1.6-1.9x, 1152 @7x7 5x5 1.45x: every tap a masked load (a load and a
 * mask read per FMA), where those paths read most taps unmasked or, at
 * 14x14, waste only 2 of 16 lanes. */
#define DWF_VECS 4
#define DWF_TAPS 9

bool inf__conv2d_dw_flat_fits(const inf__conv2d *g) {
    return g->sh == 1 && g->sw == 1 && g->ow == g->iw && g->kh * g->kw <= DWF_TAPS && g->oh * g->ow <= DWF_VECS * 16 &&
           g->iw <= INT32_MAX / 4;
}

typedef struct flat_geom {
    int nvec;                        /* output vectors a plane */
    int64_t off[DWF_TAPS];           /* tap t's input offset from its output */
    __mmask16 m[DWF_VECS][DWF_TAPS]; /* lanes of vector v whose tap t lies in the image (and o < oh * ow) */
} flat_geom;

static void flat_geometry(const inf__conv2d *g, flat_geom *F) {
    int64_t np = g->oh * g->ow;
    F->nvec = (int)((np + 15) / 16);
    for (int64_t ky = 0; ky < g->kh; ky++)
        for (int64_t kx = 0; kx < g->kw; kx++) {
            int64_t t = ky * g->kw + kx, dy = ky * g->dh - g->pt, dx = kx * g->dw - g->pl;
            F->off[t] = dy * g->iw + dx;
            for (int v = 0; v < F->nvec; v++) {
                unsigned m = 0;
                for (int l = 0; l < 16; l++) {
                    int64_t o = v * 16 + l, oy = o / g->ow, ox = o % g->ow;
                    if (o < np && oy + dy >= 0 && oy + dy < g->ih && ox + dx >= 0 && ox + dx < g->iw) m |= 1u << l;
                }
                F->m[v][t] = (__mmask16)m;
            }
        }
}

typedef struct flat_task {
    const inf__conv2d *g;
    const flat_geom *F;
    const float *x, *w, *b, *res;
    float *y;
} flat_task;

/* The store of plane pl's sums acc: + bias, + res, the activation. */
static inline __attribute__((always_inline)) void flat_store(const flat_task *t, int64_t pl, __m512 *acc, int NV) {
    const inf__conv2d *g = t->g;
    int64_t c = pl % g->c, np = g->oh * g->ow;
    const float *res = t->res ? t->res + pl * np : NULL;
    float *y = t->y + pl * np;
    __m512 bias = _mm512_set1_ps(t->b ? t->b[c] : 0.0f); /* +0: a sum is never -0 */
    __m512 lo = _mm512_set1_ps(g->lo), hi = _mm512_set1_ps(g->hi);
    for (int v = 0; v < NV; v++) {
        __mmask16 m = np - v * 16 >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << (np - v * 16)) - 1u);
        __m512 s = _mm512_add_ps(acc[v], bias);
        if (res) s = _mm512_add_ps(s, _mm512_maskz_loadu_ps(m, res + v * 16));
        if (g->act == INF_EPILOGUE_RELU) s = _mm512_max_ps(s, _mm512_setzero_ps());        /* NaN -> 0, as Relu */
        else if (g->act == INF_EPILOGUE_CLIP) s = _mm512_min_ps(hi, _mm512_max_ps(lo, s)); /* NaN kept */
        else if (g->act == INF_EPILOGUE_SILU) s = _mm512_mul_ps(s, sigmoid16(s));
        _mm512_mask_storeu_ps(y + v * 16, m, s);
    }
}

/* Planes pl..pl+P-1 (P = 1 or 2: two planes keep twice the chains in
 * flight), NV vectors, TAPS taps (constants where inlined). */
static inline __attribute__((always_inline)) void flat_plane(const flat_task *t, int64_t pl, int P, int NV, int TAPS) {
    const inf__conv2d *g = t->g;
    const flat_geom *F = t->F;
    const float *x[2], *w[2];
    __m512 acc[2][DWF_VECS];
    for (int q = 0; q < P; q++) {
        x[q] = t->x + (pl + q) * g->ih * g->iw, w[q] = t->w + (pl + q) % g->c * TAPS;
        for (int v = 0; v < NV; v++) acc[q][v] = _mm512_setzero_ps();
    }
    for (int k = 0; k < TAPS; k++)
        for (int q = 0; q < P; q++) {
            __m512 wk = _mm512_set1_ps(w[q][k]);
            const float *xk = x[q] + F->off[k];
            for (int v = 0; v < NV; v++)
                acc[q][v] = _mm512_fmadd_ps(wk, _mm512_maskz_loadu_ps(F->m[v][k], xk + v * 16), acc[q][v]);
        }
    for (int q = 0; q < P; q++) flat_store(t, pl + q, acc[q], NV);
}

/* Planes [begin, end): a 7x7 3x3 (4 vectors, 9 taps) two at a time, with
 * constants. */
static void flat_planes(void *arg, int64_t begin, int64_t end) {
    const flat_task *t = arg;
    bool k77 = t->F->nvec == 4 && t->g->kh * t->g->kw == 9;
    int64_t pl = begin;
    for (; k77 && pl + 2 <= end; pl += 2) flat_plane(t, pl, 2, 4, 9);
    for (; pl < end; pl++) flat_plane(t, pl, 1, t->F->nvec, (int)(t->g->kh * t->g->kw));
}

void inf__conv2d_dw_flat_avx512(inf__pool *pool, const inf__conv2d *g, const float *x, const float *w,
                                const float *bias, const float *res, float *y) {
    flat_geom F;
    flat_geometry(g, &F);
    flat_task t = {g, &F, x, w, bias, res, y};
    int64_t work = g->oh * g->ow * g->kh * g->kw;
    inf__pool_range(pool, g->n * g->c, work >= 16384 ? 1 : 16384 / (work + 1) + 1, flat_planes, &t);
}

#endif /* __x86_64__ */
