/*
 * test_depthwise.c -- the AVX2 depthwise convolution
 * (inf__conv2d_depthwise_f32_avx2, ops/x86/depthwise_avx2.c) against the
 * scalar kernel it replaces: the loop of ops/ref/conv.c's depthwise_planes
 * (written out here, per plane: 0, fmaf(w, x, sum) over the in-range taps in (ky, kx)
 * order, + bias) followed by the unfused residual add and the activation --
 * bit for bit -- and against a double-precision convolution (tolerance
 * 1e-5 * sum |w x| + 1e-6), so a mistake shared with the transcription
 * (an index, a skipped tap) would still be caught.
 *
 * Random shapes: batch 1..3, channels 1..37 (mostly not multiples of 8),
 * input 1..23 x 1..70 (rows shorter and longer than the 8-column vectors,
 * with and without interior blocks), kernels 1..5 x 1..5 with 3x3 and 5x5
 * drawn often, strides 1..3 (1 and 2 often), dilations 1..2, asymmetric
 * pads 0..k, with and without bias and residual, no activation / ReLU /
 * Clip / SiLU; rows of 1500 columns at strides 1 and 2; MobileNet's 3x3s on
 * planes 5..24 wide and 1..11 high (every leftover row count of the
 * multi-row kernel); EfficientNet's 5x5 and 7x7 at stride 1 (channel
 * blocks), planes 5..24 wide and 1..13 high; pools of 1, 2 and 3
 * threads (conv_test_main.h).  Every output must be written (Y is filled
 * with NaN first).  Prints one line per failure and "N passed, M failed";
 * skips on a CPU without AVX2/FMA.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/core.h"
#include "ops/ops.h"
#include "conv_test_main.h"
#include "test_allocs.h"

#if defined(__x86_64__)

static int n_passed, n_failed;
#define KERNEL_TEST_SEED 0xD1B54A32D192ED03ull
#include "test_rng.h"

/* depthwise_planes (ops/ref/conv.c), then + res and the activation. */
static void dw_reference(const inf__conv2d *g, const float *x, const float *w, const float *b, const float *res,
                         float *y) {
    for (int64_t pl = 0; pl < g->n * g->c; pl++) {
        int64_t c = pl % g->c;
        const float *xp = x + pl * g->ih * g->iw, *wp = w + c * g->kh * g->kw;
        float *yp = y + pl * g->oh * g->ow;
        for (int64_t oy = 0; oy < g->oh; oy++) {
            float *yrow = yp + oy * g->ow;
            for (int64_t ox = 0; ox < g->ow; ox++) yrow[ox] = 0.0f;
            for (int64_t ky = 0; ky < g->kh; ky++) {
                int64_t iy = oy * g->sh - g->pt + ky * g->dh;
                if (iy < 0 || iy >= g->ih) continue;
                for (int64_t kx = 0; kx < g->kw; kx++)
                    for (int64_t ox = 0; ox < g->ow; ox++) {
                        int64_t ix = ox * g->sw - g->pl + kx * g->dw;
                        if (ix >= 0 && ix < g->iw) yrow[ox] = fmaf(wp[ky * g->kw + kx], xp[iy * g->iw + ix], yrow[ox]);
                    }
            }
            if (b)
                for (int64_t ox = 0; ox < g->ow; ox++) yrow[ox] += b[c];
        }
    }
    size_t ny = (size_t)(g->n * g->c * g->oh * g->ow);
    for (size_t i = 0; i < ny; i++) y[i] = conv_test_act(g, res ? y[i] + res[i] : y[i]);
}

/* Y in double and the bound sum |w x| per element. */
static void dw_double(const inf__conv2d *g, const float *x, const float *w, const float *b, const float *res,
                      double *y, double *mag) {
    for (int64_t pl = 0; pl < g->n * g->c; pl++) {
        int64_t c = pl % g->c;
        for (int64_t oy = 0; oy < g->oh; oy++)
            for (int64_t ox = 0; ox < g->ow; ox++) {
                int64_t i = (pl * g->oh + oy) * g->ow + ox;
                double s = b ? b[c] : 0, a = b ? fabs(b[c]) : 0;
                for (int64_t ky = 0; ky < g->kh; ky++)
                    for (int64_t kx = 0; kx < g->kw; kx++) {
                        int64_t iy = oy * g->sh - g->pt + ky * g->dh, ix = ox * g->sw - g->pl + kx * g->dw;
                        if (iy < 0 || iy >= g->ih || ix < 0 || ix >= g->iw) continue;
                        double p = (double)w[(c * g->kh + ky) * g->kw + kx] * x[(pl * g->ih + iy) * g->iw + ix];
                        s += p, a += fabs(p);
                    }
                if (res) s += res[i], a += fabs(res[i]);
                y[i] = conv_test_act(g, (float)s), mag[i] = a;
            }
    }
}

typedef struct bufs {
    float *x, *w, *b, *res, *y, *yr;
    double *yd, *mag;
} bufs;

static void describe(const inf__conv2d *g, int idx, bool bias, bool res) {
    printf("case %d (n%lld c%lld %lldx%lld k%lldx%lld s%lld,%lld d%lld,%lld p%lld,%lld -> %lldx%lld act%d bias%d "
           "res%d)",
           idx, (long long)g->n, (long long)g->c, (long long)g->ih, (long long)g->iw, (long long)g->kh,
           (long long)g->kw, (long long)g->sh, (long long)g->sw, (long long)g->dh, (long long)g->dw,
           (long long)g->pt, (long long)g->pl, (long long)g->oh, (long long)g->ow, g->act, bias, res);
}

/* The kernel's Y against the reference (bits) and the double convolution. */
static int compare(const inf__conv2d *g, const bufs *B, bool bias, bool res, int idx) {
    size_t ny = (size_t)(g->n * g->c * g->oh * g->ow);
    int bad = 0;
    for (size_t i = 0; i < ny && bad < 3; i++) {
        bool same = memcmp(&B->y[i], &B->yr[i], sizeof(float)) == 0;
        bool close = fabs(B->y[i] - B->yd[i]) <= 1e-5 * B->mag[i] + 1e-6;
        if (!same || !close) {
            describe(g, idx, bias, res);
            printf(": y[%zu] = %.9g, reference %.9g, double %.9g\n", i, B->y[i], B->yr[i], B->yd[i]);
            bad++;
        }
    }
    return bad;
}

static void check_shape(inf__pool *pool, const inf__conv2d *g, bool bias, bool has_res, int idx) {
    size_t nx = (size_t)(g->n * g->c * g->ih * g->iw), nw = (size_t)(g->c * g->kh * g->kw);
    size_t ny = (size_t)(g->n * g->c * g->oh * g->ow);
    int64_t floats = inf__conv2d_depthwise_scratch_floats(g, inf__pool_size(pool));
    test_allocs A = {0};
    bufs B = {
        .x = test_alloc(&A, nx * sizeof(float)), .w = test_alloc(&A, nw * sizeof(float)),
        .b = test_alloc(&A, (size_t)g->c * sizeof(float)), .res = test_alloc(&A, ny * sizeof(float)),
        .y = test_alloc(&A, ny * sizeof(float)), .yr = test_alloc(&A, ny * sizeof(float)),
        .yd = test_alloc(&A, ny * sizeof(double)), .mag = test_alloc(&A, ny * sizeof(double)),
    };
    float *scratch = floats > 0 ? test_alloc(&A, (size_t)floats * sizeof(float)) : NULL; /* optional */
    if (test_allocs_failed(&A, idx)) {
        n_failed++;
        goto done;
    }
    for (size_t i = 0; i < nx; i++) B.x[i] = uniform();
    for (size_t i = 0; i < nw; i++) B.w[i] = uniform();
    for (int64_t i = 0; i < g->c; i++) B.b[i] = uniform();
    for (size_t i = 0; i < ny; i++) B.res[i] = uniform();
    const float *b = bias ? B.b : NULL, *r = has_res ? B.res : NULL;
    dw_reference(g, B.x, B.w, b, r, B.yr);
    dw_double(g, B.x, B.w, b, r, B.yd, B.mag);
    for (int path = 0; path < 2; path++) { /* the buffered path (padded-plane or channel-blocked), the general one */
        for (size_t i = 0; i < ny; i++) B.y[i] = NAN;
        inf__conv2d_depthwise_f32_avx2(pool, g, B.x, B.w, b, r, path ? NULL : scratch, B.y);
        if (compare(g, &B, bias, has_res, idx)) n_failed++;
        else n_passed++;
    }
done:
    test_allocs_free(&A);
}

/* 3x3 and 5x5 half the time, else 1..5 x 1..5. */
static int64_t kernel_size(void) {
    int64_t r = rand_in(0, 3);
    return r == 0 ? 3 : r == 1 ? 5 : rand_in(1, 5);
}

static void one_case(inf__pool *pool, int idx) {
    inf__conv2d g;
    memset(&g, 0, sizeof g);
    g.n = rand_in(1, 3), g.c = rand_in(1, 37), g.m = g.group = g.c, g.cg = g.mg = 1;
    g.kh = kernel_size(), g.kw = next_u64() % 2 ? g.kh : kernel_size();
    g.sh = rand_in(0, 3) ? rand_in(1, 2) : 3, g.sw = rand_in(0, 3) ? rand_in(1, 2) : 3;
    g.dh = next_u64() % 4 ? 1 : 2, g.dw = next_u64() % 4 ? 1 : 2;
    g.ih = rand_in(1, 23), g.iw = rand_in(1, 70);
    g.pt = rand_in(0, g.kh), g.pl = rand_in(0, g.kw);
    int64_t pb = rand_in(0, g.kh), pr = rand_in(0, g.kw);
    if (!conv_test_out_size(&g, pb, pr)) { /* kernel larger than the padded input */
        one_case(pool, idx);
        return;
    }
    static const int ACTS[4] = {INF_EPILOGUE_NONE, INF_EPILOGUE_RELU, INF_EPILOGUE_CLIP, INF_EPILOGUE_SILU};
    g.act = ACTS[next_u64() % 4];
    g.lo = -0.3f, g.hi = 0.4f;
    bool bias = next_u64() % 3 != 0, has_res = next_u64() % 3 == 0;
    check_shape(pool, &g, bias, has_res, idx);
}

/* Rows far wider than the random ones (1500 columns), stride 1 and 2. */
static void wide_rows_case(inf__pool *pool) {
    for (int64_t s = 1; s <= 2; s++) {
        inf__conv2d g = {.n = 2, .c = 3, .m = 3, .group = 3, .cg = 1, .mg = 1, .ih = 5, .iw = 1500, .kh = 3, .kw = 3,
                         .sh = s, .sw = s, .dh = 1, .dw = 1, .pt = 1, .pl = 1, .act = INF_EPILOGUE_CLIP, .lo = -0.3f,
                         .hi = 0.4f};
        g.oh = (g.ih + 2 - 3) / s + 1, g.ow = (g.iw + 2 - 3) / s + 1;
        check_shape(pool, &g, true, s == 2, -(int)s);
    }
}

/* MobileNet's 3x3, pad 1 at strides 1 and 2 (the padded-plane path's
 * multi-row 3x3 kernel at stride 1): plane widths of one block (5, 8) and
 * more (12, 13, 24), heights 1..11 (every count of leftover rows), 11
 * channels, batch 2, Clip(0, 6), bias; every other one with a residual. */
static void mobile_cases(inf__pool *pool) {
    static const int64_t widths[] = {5, 8, 12, 13, 24};
    int idx = -10;
    for (int64_t s = 1; s <= 2; s++)
        for (int wi = 0; wi < 5; wi++)
            for (int64_t ih = 1; ih <= 11; ih += 2) {
                inf__conv2d g = {.n = 2, .c = 11, .m = 11, .group = 11, .cg = 1, .mg = 1, .ih = ih, .iw = widths[wi],
                                 .kh = 3, .kw = 3, .sh = s, .sw = s, .dh = 1, .dw = 1, .pt = 1, .pl = 1,
                                 .act = INF_EPILOGUE_CLIP, .lo = 0.0f, .hi = 6.0f};
                g.oh = (g.ih - 1) / s + 1, g.ow = (g.iw - 1) / s + 1;
                check_shape(pool, &g, true, idx % 2 == 0, idx);
                idx--;
            }
}

/* EfficientNet's 5x5 (pad 2) and ConvNeXt's 7x7 (pad 3) at stride 1, which
 * take the channel-blocked path (the 5x5 with its taps unrolled) since
 * session 28: plane widths of one block (5, 7, 8) and more (12, 14, 24),
 * heights 1..13, 9 channels (a full block and one of 1), batch 2, bias; no
 * activation, ReLU, Clip or SiLU in turn, every third one with a residual. */
static void efficientnet_cases(inf__pool *pool) {
    static const int64_t widths[] = {5, 7, 8, 12, 14, 24};
    int idx = -100;
    for (int64_t k = 5; k <= 7; k += 2)
        for (int wi = 0; wi < 6; wi++)
            for (int64_t ih = 1; ih <= 13; ih++) {
                int acts[] = {INF_EPILOGUE_NONE, INF_EPILOGUE_RELU, INF_EPILOGUE_CLIP, INF_EPILOGUE_SILU};
                inf__conv2d g = {.n = 2,
                                 .c = 9,
                                 .m = 9,
                                 .group = 9,
                                 .cg = 1,
                                 .mg = 1,
                                 .ih = ih,
                                 .iw = widths[wi],
                                 .kh = k,
                                 .kw = k,
                                 .sh = 1,
                                 .sw = 1,
                                 .dh = 1,
                                 .dw = 1,
                                 .pt = k / 2,
                                 .pl = k / 2,
                                 .act = acts[-idx % 4],
                                 .lo = -0.3f,
                                 .hi = 0.4f};
                g.oh = g.ih, g.ow = g.iw;
                check_shape(pool, &g, true, idx % 3 == 0, idx);
                idx--;
            }
}

static void cases(inf__pool *pool) {
    for (int i = 0; i < 300; i++) one_case(pool, i);
    wide_rows_case(pool);
    mobile_cases(pool);
    efficientnet_cases(pool);
}

int main(void) {
    return conv_test_main(cases, &n_passed, &n_failed);
}

#else /* not x86-64: no AVX2 kernels */

CONV_TEST_NOT_X86_MAIN

#endif
