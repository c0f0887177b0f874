/*
 * test_conv_pool.c -- the rows kernels' pooled store (ConvMaxPool:
 * ops/x86/conv_pool_bands.c behind conv_rows_avx2.c and conv_rows_avx512.c,
 * g->pool set) against its reference twin: the convolution computed here as
 * the rows kernel documents it (per output one fmaf chain from zero over k in
 * (c, ky, kx) order, a padding tap a product with 0, then + bias and the
 * activation, all in float), then a max over each window written here --
 * bit for bit.  The same case is also run unpooled through the kernel and
 * pooled by the MaxPool's reference twin (inf__ops_pool2d_f32_ref), the
 * unfused graph's two nodes, and must give the same bits.
 *
 * Cases: the bench CNN's stem (3 -> 32 @64x64 pad 1, ReLU) with a 2x2/2 and a
 * 3x3/2 pool (several bands a task, overlapping windows kept across bands),
 * odd sizes (floor drops the last row / column), a 3x3/1 pool, channels not
 * a multiple of the 4-channel block, two groups, batch 1 to 3, no bias, Clip,
 * no activation, a NaN in X (every case without Relu, a third with: Relu
 * makes it 0); pools of 1, 2 and 3 threads; inf__conv2d_pooled_fits's answer
 * for each and for a row too wide for the task's buffer.  The 2x2/2 cases
 * (which the AVX-512 kernel pools in the tile's registers) add a pooled row
 * of 16 + 16 + 7 outputs, one of 6 (the tile's right half empty), Clip and
 * no activation (NaN and -0 through the exact max), and conv row strides 2
 * and 3.
 * AVX2 kernel always; the AVX-512 one on the avx512 path (ctest runs the test
 * again with INFERA_CPU=avx2: kernels_test_conv_pool_avx2path).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conv_test_main.h"
#include "core/core.h"
#include "core/cpu.h"
#include "kernel_paths.h"
#include "ops/ops.h"

#if defined(__x86_64__)

static int n_passed, n_failed, n_wide, n_last;
#define KERNEL_TEST_SEED 0x2545F4914F6CDD1Dull
#include "test_rng.h"

typedef struct pool_case {
    int64_t n, group, cg, mg, ih, iw, kh, kw, pad, pk, ps;
    int act;
    bool bias;
    int64_t sh; /* the conv's row stride */
} pool_case;

/* The convolution as the rows kernel computes it (conv_rows_avx2.c, "Bits"). */
static void conv_ref(const inf__conv2d *g, const float *x, const float *w, const float *b, float *y) {
    for (int64_t n = 0; n < g->n; n++)
        for (int64_t o = 0; o < g->m; o++) {
            int64_t gi = o / g->mg;
            for (int64_t oy = 0; oy < g->oh; oy++)
                for (int64_t ox = 0; ox < g->ow; ox++) {
                    float s = 0.0f;
                    for (int64_t c = 0; c < g->cg; c++)
                        for (int64_t ky = 0; ky < g->kh; ky++)
                            for (int64_t kx = 0; kx < g->kw; kx++) {
                                int64_t iy = oy * g->sh - g->pt + ky * g->dh, ix = ox * g->sw - g->pl + kx * g->dw;
                                bool in = iy >= 0 && iy < g->ih && ix >= 0 && ix < g->iw;
                                float xv = in ? x[((n * g->c + gi * g->cg + c) * g->ih + iy) * g->iw + ix] : 0.0f;
                                s = fmaf(w[((o * g->cg + c) * g->kh + ky) * g->kw + kx], xv, s);
                            }
                    if (b)
                        s += b[o];
                    y[((n * g->m + o) * g->oh + oy) * g->ow + ox] = conv_test_act(g, s);
                }
        }
}

/* The max over each window of y: NaN when any element is (MaxPool's rule). */
static void pool_ref(const inf__conv2d *g, const inf__conv2d_maxpool *p, const float *y, float *out) {
    for (int64_t pl = 0; pl < g->n * g->m; pl++)
        for (int64_t py = 0; py < p->oh; py++)
            for (int64_t px = 0; px < p->ow; px++) {
                float m = -INFINITY;
                bool nan = false;
                for (int64_t i = 0; i < p->kh; i++)
                    for (int64_t j = 0; j < p->kw; j++) {
                        float v = y[(pl * g->oh + py * p->sh + i) * g->ow + px * p->sw + j];
                        nan = nan || v != v;
                        m = v > m ? v : m;
                    }
                out[(pl * p->oh + py) * p->ow + px] = nan ? NAN : m;
            }
}

static bool same_bits(const char *what, const pool_case *c, const float *a, const float *b, int64_t n) {
    for (int64_t i = 0; i < n; i++)
        if (memcmp(a + i, b + i, sizeof *a)) {
            printf(
                "FAIL %s: n %lld g %lld %lldx%lld @%lldx%lld k%lld pool %lld/%lld act %d: element %lld %.9g vs %.9g\n",
                what, (long long)c->n, (long long)c->group, (long long)c->cg, (long long)c->mg, (long long)c->ih,
                (long long)c->iw, (long long)c->kh, (long long)c->pk, (long long)c->ps, c->act, (long long)i, a[i],
                b[i]);
            return false;
        }
    return true;
}

static void run_case(inf__pool *pool, const pool_case *c) {
    inf__conv2d g = {.n = c->n,
                     .group = c->group,
                     .cg = c->cg,
                     .mg = c->mg,
                     .c = c->group * c->cg,
                     .m = c->group * c->mg,
                     .ih = c->ih,
                     .iw = c->iw,
                     .kh = c->kh,
                     .kw = c->kw,
                     .sh = c->sh,
                     .sw = 1,
                     .dh = 1,
                     .dw = 1,
                     .pt = c->pad,
                     .pl = c->pad,
                     .act = c->act,
                     .lo = -0.25f,
                     .hi = 0.5f};
    if (!conv_test_out_size(&g, c->pad, c->pad) || g.oh < c->pk || g.ow < c->pk)
        return;
    inf__conv2d_maxpool p = {c->pk, c->pk, c->ps, c->ps, (g.oh - c->pk) / c->ps + 1, (g.ow - c->pk) / c->ps + 1};
    int64_t kdim = g.cg * g.kh * g.kw, nx = g.n * g.c * g.ih * g.iw, ny = g.n * g.m * g.oh * g.ow;
    int64_t np = g.n * g.m * p.oh * p.ow;
    if (!inf__conv2d_rows_fits(g.mg, kdim, g.sw)) {
        printf("FAIL case not in the rows kernel's range\n");
        n_failed++;
        return;
    }
    float *x = malloc((size_t)nx * sizeof *x), *w = malloc((size_t)(g.m * kdim) * sizeof *w);
    float *b = malloc((size_t)g.m * sizeof *b), *y = malloc((size_t)ny * sizeof *y);
    float *want = malloc((size_t)np * sizeof *want), *got = malloc((size_t)np * sizeof *got);
    float *twin = malloc((size_t)np * sizeof *twin), *yk = malloc((size_t)ny * sizeof *yk);
    float *wp = malloc((size_t)inf__conv2d_rows_w_floats(g.m, g.group, kdim) * sizeof *wp);
    int64_t sf = inf__conv2d_direct_scratch_floats(&g);
    float *scratch = sf > 0 ? malloc((size_t)sf * sizeof *scratch) : NULL;
    if (!x || !w || !b || !y || !want || !got || !twin || !yk || !wp || (sf > 0 && !scratch)) {
        printf("FAIL out of memory\n");
        n_failed++;
        goto done;
    }
    for (int64_t i = 0; i < nx; i++)
        x[i] = uniform();
    for (int64_t i = 0; i < g.m * kdim; i++)
        w[i] = uniform();
    for (int64_t i = 0; i < g.m; i++)
        b[i] = 0.25f * uniform();
    if (c->act != INF_EPILOGUE_RELU || next_u64() % 3 == 0) /* Relu makes it 0, Clip and none keep it */
        x[rand_in(0, nx - 1)] = NAN;
    const float *bias = c->bias ? b : NULL;
    conv_ref(&g, x, w, bias, y);
    pool_ref(&g, &p, y, want);
    inf__conv2d_rows_pack_w(g.m, g.group, kdim, w, wp);
    for (int wide = 0; wide < 2; wide++) {
        if (wide && !inf__cpu_has_avx512())
            break;
        void (*kernel)(inf__pool *, const inf__conv2d *, const float *, const float *, const float *, const float *,
                       float *, float *) = wide ? inf__conv2d_rows_f32_avx512 : inf__conv2d_rows_f32_avx2;
        const char *name = wide ? "rows avx512 pooled" : "rows avx2 pooled";
        inf__conv2d gp = g;
        gp.pool = &p;
        if (!inf__conv2d_pooled_fits(&gp)) {
            printf("FAIL %s: pooled_fits refused a case that fits\n", name);
            n_failed++;
            continue;
        }
        memset(got, 0xFF, (size_t)np * sizeof *got);
        kernel(pool, &gp, x, wp, bias, NULL, scratch, got);
        kernel(pool, &g, x, wp, bias, NULL, scratch, yk); /* the unfused graph: Conv, then MaxPool */
        inf__pool2d q = {.ih = g.oh,
                         .iw = g.ow,
                         .oh = p.oh,
                         .ow = p.ow,
                         .kh = p.kh,
                         .kw = p.kw,
                         .sh = p.sh,
                         .sw = p.sw,
                         .max = true};
        inf__ops_pool2d_f32_ref(&q, yk, twin, g.n * g.m);
        bool ok = same_bits(name, c, got, want, np) && same_bits("unfused twin", c, twin, want, np);
        if (ok && wide && g.group == 1 && p.kh == 2 && p.sh == 2 && g.m <= INF_CONV2D_POOL_LAST_MAX_M) {
            gp.nhwc = INF_NHWC_Y; /* the in-register pool storing Y channels-last: the same values, moved */
            memset(yk, 0xFF, (size_t)np * sizeof *yk);
            kernel(pool, &gp, x, wp, bias, NULL, scratch, yk);
            int64_t pp = p.oh * p.ow;
            for (int64_t i = 0; i < g.n; i++)
                for (int64_t k = 0; k < g.m; k++)
                    for (int64_t j = 0; j < pp; j++) twin[(i * g.m + k) * pp + j] = yk[(i * pp + j) * g.m + k];
            ok = same_bits("rows avx512 pooled, Y channels-last", c, twin, want, np);
            n_last++;
        }
        ok ? n_passed++ : n_failed++;
        n_wide += wide;
    }
done:
    free(x), free(w), free(b), free(y), free(want), free(got), free(twin), free(yk), free(wp), free(scratch);
}

static void fits_cases(void) {
    inf__conv2d_maxpool p = {2, 2, 2, 2, 1, 1000};
    inf__conv2d g = {.n = 1,
                     .c = 3,
                     .m = 32,
                     .group = 1,
                     .cg = 3,
                     .mg = 32,
                     .ih = 4,
                     .iw = 2002,
                     .oh = 4,
                     .ow = 2000,
                     .kh = 3,
                     .kw = 3,
                     .sh = 1,
                     .sw = 1,
                     .dh = 1,
                     .dw = 1,
                     .pool = &p};
    bool ok = !inf__conv2d_pooled_fits(&g); /* 32 channels x 2 rows x 2000 columns: over the task's buffer */
    g.mg = g.m = 2;
    ok = ok && inf__conv2d_pooled_fits(&g);
    p.oh = 3; /* windows past the conv's rows */
    ok = ok && !inf__conv2d_pooled_fits(&g);
    if (!ok)
        printf("FAIL inf__conv2d_pooled_fits\n");
    ok ? n_passed++ : n_failed++;
}

static void cases(inf__pool *pool) {
    static const pool_case fixed[] = {
        {1, 1, 3, 32, 64, 64, 3, 3, 1, 2, 2, INF_EPILOGUE_RELU, true, 1},  /* the bench CNN's stem + MaxPool(2) */
        {2, 1, 3, 32, 64, 64, 3, 3, 1, 3, 2, INF_EPILOGUE_RELU, true, 1},  /* ResNet's 3x3/2 pool: overlapping */
        {1, 1, 3, 32, 63, 65, 3, 3, 1, 2, 2, INF_EPILOGUE_RELU, true, 1},  /* odd: floor drops a row */
        {3, 1, 3, 16, 29, 31, 3, 3, 1, 3, 2, INF_EPILOGUE_CLIP, false, 1}, /* odd, Clip, no bias */
        {2, 1, 4, 6, 17, 23, 3, 3, 0, 2, 2, INF_EPILOGUE_NONE, true, 1},   /* 6 channels: a 2-channel block */
        {1, 2, 3, 8, 20, 21, 3, 3, 1, 3, 1, INF_EPILOGUE_RELU, true, 1},   /* two groups, stride-1 pool */
        {1, 1, 1, 32, 96, 96, 5, 5, 2, 2, 2, INF_EPILOGUE_RELU, true, 1},  /* 2 rows of 32 x 96: a band a task */
        {2, 1, 2, 13, 9, 40, 3, 3, 1, 2, 3, INF_EPILOGUE_RELU, true, 1},   /* windows with gaps (stride > kernel) */
        /* 2x2/2 (the AVX-512 kernel pools in registers): */
        {1, 1, 3, 7, 12, 78, 3, 3, 1, 2, 2, INF_EPILOGUE_CLIP, true, 1},  /* 39 pooled columns: 16 + 16 + 7, Clip */
        {2, 1, 2, 5, 11, 13, 3, 3, 1, 2, 2, INF_EPILOGUE_NONE, false, 1}, /* 6 pooled columns (one half empty) */
        {1, 1, 3, 9, 21, 34, 3, 3, 1, 2, 2, INF_EPILOGUE_RELU, true, 2},  /* conv row stride 2 */
        {2, 2, 1, 5, 10, 20, 1, 2, 0, 2, 2, INF_EPILOGUE_CLIP, true, 3},  /* 1x2 taps, two groups, stride 3 */
    };
    for (size_t i = 0; i < sizeof fixed / sizeof *fixed; i++)
        run_case(pool, &fixed[i]);
    for (int i = 0; i < 40; i++) { /* random shapes */
        pool_case c = {
            rand_in(1, 3),      rand_in(1, 2),  rand_in(1, 4),
            rand_in(4, 40),     rand_in(4, 40), rand_in(4, 70),
            rand_in(1, 3),      rand_in(1, 5),  rand_in(0, 2),
            rand_in(2, 3),      rand_in(1, 3),  (int)rand_in(0, 2) == 2 ? INF_EPILOGUE_CLIP : (int)rand_in(0, 1),
            rand_in(0, 1) == 1, rand_in(1, 2)};
        if (c.pad >= c.kh || c.pad >= c.kw || c.ih + 2 * c.pad - c.kh + 1 < c.pk || c.iw + 2 * c.pad - c.kw + 1 < c.pk)
            continue;
        if (c.mg * (c.iw + 2 * c.pad - c.kw + 1) * c.pk > 8192)
            continue; /* beyond the buffer: conv.c pools after */
        run_case(pool, &c);
    }
    fits_cases();
}

int main(int argc, char **argv) {
    int skip = kernel_paths_begin(argc, argv, "test_conv_pool");
    if (skip)
        return skip;
    int st = conv_test_on_pools(cases);
    if (st)
        return st < 0 ? 77 : st;
    printf("%d passed, %d failed (%d with the AVX-512 kernel, %d of them also storing Y channels-last)\n", n_passed,
           n_failed, n_wide, n_last);
    return n_failed ? 1 : 0;
}

#else

CONV_TEST_NOT_X86_MAIN

#endif
