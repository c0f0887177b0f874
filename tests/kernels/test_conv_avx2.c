/*
 * test_conv_avx2.c -- the fused AVX2/FMA convolution (ops/x86/conv_avx2.c)
 * against the path it replaces: a plain im2col written here, the AVX2
 * sgemm (inf__ops_sgemm_avx2) per image and group, then + bias in float and
 * the activation -- bit for bit, as conv_avx2.c promises -- and against a
 * double-precision convolution (tolerance 1e-5 * sum |w x| + 1e-6), so a
 * shared mistake in the im2col indexing would still be caught.
 *
 * Random shapes: batch 1..3, groups 1..3, channels per group 1..20, output
 * channels per group 1..40 (around the 6-row panels), input 1..19 x 1..37,
 * kernels 1..5 x 1..7, strides 1..3, dilations 1..2, asymmetric pads, 1-D
 * (ih = kh = 1), K over several 256-deep blocks, with and without bias,
 * no activation / ReLU / Clip, with and without a residual (ConvAdd: the
 * unfused Add after the Conv, before the activation); pools of 1 and 2
 * threads.  Batch invariance:
 * each image run alone gives the same bits as inside the batch.
 * Prints one line per failure and "N passed, M failed".  Skips (0 passed,
 * 0 failed) on a CPU without AVX2/FMA.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/core.h"
#include "ops/ops.h"

#if defined(__x86_64__)

static int n_passed, n_failed;
#define KERNEL_TEST_SEED 0x9E3779B97F4A7C15ull
#include "test_rng.h"

static float act(const inf__conv2d *g, float v) {
    if (g->act == INF_EPILOGUE_RELU) return v > 0 ? v : 0;
    if (g->act == INF_EPILOGUE_CLIP) return v < g->lo ? g->lo : v > g->hi ? g->hi : v;
    return v;
}

/* The im2col + sgemm + bias path (ops/ref/conv.c before the fused kernel). */
static void conv_im2col(inf__pool *pool, const inf__conv2d *g, const float *x, const float *w, const float *b,
                        const float *res, float *col, float *y) {
    int64_t kdim = g->cg * g->kh * g->kw, np = g->oh * g->ow;
    for (int64_t n = 0; n < g->n; n++)
        for (int64_t gi = 0; gi < g->group; gi++) {
            const float *xg = x + (n * g->c + gi * g->cg) * g->ih * g->iw;
            for (int64_t r = 0; r < kdim; r++) {
                int64_t c = r / (g->kh * g->kw), ky = r / g->kw % g->kh, kx = r % g->kw;
                for (int64_t oy = 0; oy < g->oh; oy++)
                    for (int64_t ox = 0; ox < g->ow; ox++) {
                        int64_t iy = oy * g->sh - g->pt + ky * g->dh, ix = ox * g->sw - g->pl + kx * g->dw;
                        col[r * np + oy * g->ow + ox] =
                            iy >= 0 && iy < g->ih && ix >= 0 && ix < g->iw ? xg[(c * g->ih + iy) * g->iw + ix] : 0;
                    }
            }
            float *yg = y + (n * g->m + gi * g->mg) * np;
            inf__ops_sgemm_avx2(pool, false, false, g->mg, np, kdim, 1.0f, w + gi * g->mg * kdim, kdim, col, np, 0.0f,
                                yg, np);
            for (int64_t o = 0; o < g->mg; o++)
                for (int64_t j = 0; j < np; j++) {
                    float v = yg[o * np + j];
                    if (b) v += b[gi * g->mg + o];
                    if (res) v += res[(n * g->m + gi * g->mg + o) * np + j];
                    yg[o * np + j] = act(g, v);
                }
        }
}

/* Y in double and the bound sum |w x| per element. */
static void conv_double(const inf__conv2d *g, const float *x, const float *w, const float *b, const float *res,
                        double *y, double *mag) {
    for (int64_t n = 0; n < g->n; n++)
        for (int64_t o = 0; o < g->m; o++) {
            int64_t gi = o / g->mg;
            for (int64_t oy = 0; oy < g->oh; oy++)
                for (int64_t ox = 0; ox < g->ow; ox++) {
                    double s = b ? b[o] : 0, a = b ? fabs(b[o]) : 0;
                    for (int64_t c = 0; c < g->cg; c++)
                        for (int64_t ky = 0; ky < g->kh; ky++)
                            for (int64_t kx = 0; kx < g->kw; kx++) {
                                int64_t iy = oy * g->sh - g->pt + ky * g->dh, ix = ox * g->sw - g->pl + kx * g->dw;
                                if (iy < 0 || iy >= g->ih || ix < 0 || ix >= g->iw) continue;
                                double p = (double)w[((o * g->cg + c) * g->kh + ky) * g->kw + kx] *
                                           x[((n * g->c + gi * g->cg + c) * g->ih + iy) * g->iw + ix];
                                s += p, a += fabs(p);
                            }
                    int64_t i = ((n * g->m + o) * g->oh + oy) * g->ow + ox;
                    if (res) s += res[i], a += fabs(res[i]);
                    y[i] = act(g, (float)s), mag[i] = a;
                }
        }
}

static void one_case(inf__pool *pool, int idx) {
    inf__conv2d g;
    memset(&g, 0, sizeof g);
    bool one_d = next_u64() % 5 == 0, deep = next_u64() % 6 == 0;
    g.n = rand_in(1, 3), g.group = rand_in(1, 3), g.cg = deep ? rand_in(30, 70) : rand_in(1, 20);
    g.mg = rand_in(1, 40), g.c = g.group * g.cg, g.m = g.group * g.mg;
    g.kh = one_d ? 1 : rand_in(1, 5), g.kw = rand_in(1, 7);
    g.sh = one_d ? 1 : rand_in(1, 3), g.sw = rand_in(1, 3);
    g.dh = one_d ? 1 : rand_in(1, 2), g.dw = rand_in(1, 2);
    g.ih = one_d ? 1 : rand_in(1, 19), g.iw = rand_in(1, 37);
    g.pt = one_d ? 0 : rand_in(0, g.kh - 1), g.pl = rand_in(0, g.kw - 1);
    int64_t pb = one_d ? 0 : rand_in(0, g.kh - 1), pr = rand_in(0, g.kw - 1);
    int64_t sh = g.ih + g.pt + pb - ((g.kh - 1) * g.dh + 1), sw = g.iw + g.pl + pr - ((g.kw - 1) * g.dw + 1);
    if (sh < 0 || sw < 0) { /* kernel larger than the padded input */
        one_case(pool, idx);
        return;
    }
    g.oh = sh / g.sh + 1, g.ow = sw / g.sw + 1;
    g.act = (int)(next_u64() % 3) == 0 ? INF_EPILOGUE_NONE : next_u64() % 2 ? INF_EPILOGUE_RELU : INF_EPILOGUE_CLIP;
    g.lo = -0.3f, g.hi = 0.4f;
    bool bias = next_u64() % 3 != 0, has_res = next_u64() % 2 == 0;
    int64_t kdim = g.cg * g.kh * g.kw, np = g.oh * g.ow;
    size_t nx = (size_t)(g.n * g.c * g.ih * g.iw), nw = (size_t)(g.m * kdim), ny = (size_t)(g.n * g.m * np);
    float *x = malloc(nx * sizeof *x), *w = malloc(nw * sizeof *w), *b = malloc((size_t)g.m * sizeof *b);
    float *wp = malloc((size_t)inf__conv2d_packed_w_floats(g.m, g.group, kdim) * sizeof *wp);
    float *col = malloc((size_t)(kdim * np) * sizeof *col), *y = malloc(ny * sizeof *y), *yr = malloc(ny * sizeof *yr);
    float *y1 = malloc(ny * sizeof *y1), *res = malloc(ny * sizeof *res);
    double *yd = malloc(ny * sizeof *yd), *mag = malloc(ny * sizeof *mag);
    if (!x || !w || !b || !wp || !col || !y || !yr || !y1 || !res || !yd || !mag) {
        printf("case %d: out of memory\n", idx);
        n_failed++;
        goto done;
    }
    for (size_t i = 0; i < nx; i++) x[i] = uniform();
    for (size_t i = 0; i < nw; i++) w[i] = uniform();
    for (int64_t i = 0; i < g.m; i++) b[i] = uniform();
    for (size_t i = 0; i < ny; i++) res[i] = uniform();
    const float *r = has_res ? res : NULL;
    inf__conv2d_pack_w(g.m, g.group, kdim, w, wp);
    for (size_t i = 0; i < ny; i++) y[i] = NAN; /* every element must be written */
    inf__conv2d_f32_avx2(pool, &g, x, wp, bias ? b : NULL, r, y);
    conv_im2col(pool, &g, x, w, bias ? b : NULL, r, col, yr);
    conv_double(&g, x, w, bias ? b : NULL, r, yd, mag);
    int bad = 0;
    for (size_t i = 0; i < ny && bad < 3; i++) {
        bool same = memcmp(&y[i], &yr[i], sizeof(float)) == 0;
        bool close = fabs(y[i] - yd[i]) <= 1e-5 * mag[i] + 1e-6;
        if (!same || !close) {
            printf("case %d (n%lld c%lld m%lld g%lld %lldx%lld k%lldx%lld s%lld,%lld d%lld,%lld p%lld,%lld act%d res%d): "
                   "y[%zu] = %.9g, im2col path %.9g, double %.9g\n",
                   idx, (long long)g.n, (long long)g.c, (long long)g.m, (long long)g.group, (long long)g.ih,
                   (long long)g.iw, (long long)g.kh, (long long)g.kw, (long long)g.sh, (long long)g.sw,
                   (long long)g.dh, (long long)g.dw, (long long)g.pt, (long long)g.pl, g.act, has_res, i, y[i], yr[i], yd[i]);
            bad++;
        }
    }
    /* batch invariance: each image alone */
    inf__conv2d g1 = g;
    g1.n = 1;
    size_t xi = (size_t)(g.c * g.ih * g.iw), yi = (size_t)(g.m * np);
    for (int64_t n = 0; n < g.n && !bad; n++) {
        inf__conv2d_f32_avx2(pool, &g1, x + n * xi, wp, bias ? b : NULL, r ? r + n * yi : NULL, y1);
        if (memcmp(y1, y + n * yi, yi * sizeof(float))) {
            printf("case %d: image %lld alone differs from the batch\n", idx, (long long)n);
            bad++;
        }
    }
    if (bad) n_failed++;
    else n_passed++;
done:
    free(x), free(w), free(b), free(wp), free(col), free(y), free(yr), free(y1), free(res), free(yd), free(mag);
}

int main(void) {
    if (!inf__cpu_has_avx2_fma()) {
        printf("0 passed, 0 failed (no AVX2/FMA)\n");
        return 0;
    }
    for (int threads = 1; threads <= 2; threads++) {
        inf__pool *pool = NULL;
        if (inf__pool_new(threads, &pool) != INF_OK) {
            printf("cannot create a pool of %d threads\n", threads);
            return 1;
        }
        for (int i = 0; i < 150; i++) one_case(pool, i);
        inf__pool_free(pool);
    }
    printf("%d passed, %d failed\n", n_passed, n_failed);
    return n_failed ? 1 : 0;
}

#else /* not x86-64: no AVX2 kernels */

int main(void) {
    printf("0 passed, 0 failed (not x86-64)\n");
    return 0;
}

#endif
