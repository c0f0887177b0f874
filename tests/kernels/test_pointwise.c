/*
 * test_pointwise.c -- the 1x1 convolutions (inf__conv2d_pointwise_f32_avx2,
 * ops/x86/pointwise_avx2.c, and on an AVX-512 CPU its sibling
 * inf__conv2d_pointwise_f32_avx512, pointwise_avx512.c) against
 *   - the panel variant it replaces for these shapes (inf__conv2d_f32_avx2,
 *     ops/x86/conv_avx2.c: im2col fused into its own packing, documented as
 *     the im2col + GEMM path's bits) -- bit for bit, so the dispatch change
 *     in ops/ref/conv.c changes no result;
 *   - a double-precision convolution (tolerance 1e-5 * sum |w x| + 1e-6),
 *     which a mistake shared by both (an index, a missed bias) would fail.
 * Random shapes: batch 1..3, input channels 1..300 (past the GEMM's
 * 256-deep blocks), output channels 1..70 and sometimes up to 300, planes
 * 1..20 x 1..40 (widths not multiples of 8, planes smaller than a vector),
 * with and without bias and residual, no activation / ReLU / Clip / SiLU (the
 * panel variant's output through the vector table's sigmoid and a multiply:
 * the epilogue pass's bits, ops/util.c); pools of
 * 1, 2 and 3 threads (conv_test_main.h).  Then bench/extra mobile's six
 * pointwise shapes (P = 2304 .. 36: X read in place and through the strip
 * copy, the one-vector tail tiles, blocks of W) at batch 1 and 2, and a
 * few shapes on a pool of 3 threads (other unit splits), each against the
 * panel variant bit for bit; and every combination of bias, residual,
 * activation and masked last vector on full tiles (store_kinds).  A batch's images are also run one at a time
 * and must give the same bits (batch invariance: the unit split differs).  Y is filled with NaN first, so every
 * output must be written.  Also checks inf__conv2d_pointwise_fits rejects
 * padded, strided, grouped and larger kernels.  Prints one line per failure
 * and "N passed, M failed"; skips on a CPU without AVX2/FMA.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/core.h"
#include "core/cpu.h"
#include "ops/ops.h"
#include "ops/vmath.h"
#include "conv_test_main.h"
#include "test_allocs.h"

#if defined(__x86_64__)

static int n_passed, n_failed;
#define KERNEL_TEST_SEED 0x5EED1234ABCDull
#include "test_rng.h"

typedef struct bufs {
    float *x, *w, *wp, *b, *res, *y, *yr;
    double *yd, *mag;
} bufs;

/* Y in double and the bound sum |w x| per element. */
static void pw_double(const inf__conv2d *g, const bufs *B, const float *b, const float *res) {
    int64_t np = g->oh * g->ow;
    for (int64_t n = 0; n < g->n; n++)
        for (int64_t m = 0; m < g->m; m++)
            for (int64_t p = 0; p < np; p++) {
                int64_t i = (n * g->m + m) * np + p;
                double s = b ? b[m] : 0, a = b ? fabs(b[m]) : 0;
                for (int64_t c = 0; c < g->c; c++) {
                    double t = (double)B->w[m * g->c + c] * B->x[(n * g->c + c) * np + p];
                    s += t, a += fabs(t);
                }
                if (res) s += res[i], a += fabs(res[i]);
                B->yd[i] = conv_test_act(g, (float)s), B->mag[i] = a;
            }
}

static int compare(const inf__conv2d *g, const bufs *B, int idx) {
    size_t ny = (size_t)(g->n * g->m * g->oh * g->ow);
    int bad = 0;
    for (size_t i = 0; i < ny && bad < 3; i++) {
        bool same = memcmp(&B->y[i], &B->yr[i], sizeof(float)) == 0;
        bool close = fabs(B->y[i] - B->yd[i]) <= 1e-5 * B->mag[i] + 1e-6;
        if (!same || !close) {
            printf("case %d (n%lld c%lld m%lld %lldx%lld act%d): y[%zu] = %.9g, panel %.9g, double %.9g\n", idx,
                   (long long)g->n, (long long)g->c, (long long)g->m, (long long)g->oh, (long long)g->ow, g->act, i,
                   B->y[i], B->yr[i], B->yd[i]);
            bad++;
        }
    }
    return bad;
}

typedef void (*pw_variant)(inf__pool *pool, const inf__conv2d *g, const float *x, const float *w, const float *bias,
                           const float *res, float *y);

/* The variants this CPU runs: AVX2, and AVX-512 where it has it. */
static int variants(pw_variant v[2]) {
    v[0] = inf__conv2d_pointwise_f32_avx2;
    if (!inf__cpu_has_avx512()) return 1;
    v[1] = inf__conv2d_pointwise_f32_avx512;
    return 2;
}

/* y = y * sigmoid(y) as the session's epilogue pass computes a fused SiLU. */
static void silu_pass(float *y, size_t n) {
    const inf__vmath *vm = inf__vmath_best();
    float s[64];
    for (size_t i = 0; i < n; i += 64) {
        size_t m = n - i < 64 ? n - i : 64;
        vm->sigmoid(y + i, s, (int64_t)m);
        for (size_t k = 0; k < m; k++) y[i + k] *= s[k];
    }
}

/* Batch invariance: each image of the batch run alone (n = 1) gives Y's
 * rows of that image bit for bit. */
static int check_images_alone(inf__pool *pool, pw_variant run, const inf__conv2d *g, const bufs *B, const float *b,
                              const float *res, int idx) {
    int64_t np = g->oh * g->ow, ny1 = g->m * np;
    inf__conv2d one = *g;
    one.n = 1;
    float *y1 = malloc((size_t)ny1 * sizeof(float));
    if (!y1) return printf("case %d: out of memory\n", idx), 1;
    int bad = 0;
    for (int64_t i = 0; i < g->n && !bad; i++) {
        run(pool, &one, B->x + i * g->c * np, B->w, b, res ? res + i * ny1 : NULL, y1);
        if (memcmp(y1, B->y + i * ny1, (size_t)ny1 * sizeof(float))) {
            printf("case %d: image %lld alone differs from its rows in the batch of %lld\n", idx, (long long)i,
                   (long long)g->n);
            bad = 1;
        }
    }
    free(y1);
    return bad;
}

static void check_shape(inf__pool *pool, const inf__conv2d *g, bool bias, bool has_res, int idx) {
    size_t nx = (size_t)(g->n * g->c * g->ih * g->iw), nw = (size_t)(g->m * g->c);
    size_t ny = (size_t)(g->n * g->m * g->oh * g->ow);
    size_t npk = (size_t)inf__conv2d_packed_w_floats(g->m, 1, g->c);
    test_allocs A = {0};
    bufs B = {
        .x = test_alloc(&A, nx * sizeof(float)), .w = test_alloc(&A, nw * sizeof(float)),
        .wp = test_alloc_aligned(&A, 32, (npk * sizeof(float) + 31) / 32 * 32),
        .b = test_alloc(&A, (size_t)g->m * sizeof(float)), .res = test_alloc(&A, ny * sizeof(float)),
        .y = test_alloc(&A, ny * sizeof(float)), .yr = test_alloc(&A, ny * sizeof(float)),
        .yd = test_alloc(&A, ny * sizeof(double)), .mag = test_alloc(&A, ny * sizeof(double)),
    };
    if (test_allocs_failed(&A, idx)) {
        n_failed++;
        goto done;
    }
    for (size_t i = 0; i < nx; i++) B.x[i] = uniform();
    for (size_t i = 0; i < nw; i++) B.w[i] = uniform();
    for (int64_t i = 0; i < g->m; i++) B.b[i] = uniform();
    for (size_t i = 0; i < ny; i++) B.res[i] = uniform(), B.yr[i] = NAN;
    const float *b = bias ? B.b : NULL, *r = has_res ? B.res : NULL;
    inf__conv2d_pack_w(g->m, 1, g->c, B.w, B.wp);
    inf__conv2d panel = *g; /* the panel variant has no SiLU: the epilogue pass after it */
    if (g->act == INF_EPILOGUE_SILU) panel.act = INF_EPILOGUE_NONE;
    inf__conv2d_f32_avx2(pool, &panel, B.x, B.wp, b, r, B.yr);
    if (g->act == INF_EPILOGUE_SILU) silu_pass(B.yr, ny);
    pw_double(g, &B, b, r);
    pw_variant run[2];
    for (int v = 0, nv = variants(run); v < nv; v++) {
        for (size_t i = 0; i < ny; i++) B.y[i] = NAN;
        run[v](pool, g, B.x, B.w, b, r, B.y);
        if (compare(g, &B, idx) || (g->n > 1 && check_images_alone(pool, run[v], g, &B, b, r, idx))) {
            printf("case %d: the %s variant\n", idx, v ? "AVX-512" : "AVX2");
            n_failed++;
        } else {
            n_passed++;
        }
    }
done:
    test_allocs_free(&A);
}

static void one_case(inf__pool *pool, int idx) {
    inf__conv2d g;
    memset(&g, 0, sizeof g);
    g.n = rand_in(1, 3), g.c = rand_in(0, 3) ? rand_in(1, 80) : rand_in(200, 300);
    g.m = rand_in(0, 3) ? rand_in(1, 70) : rand_in(100, 300);
    g.group = 1, g.cg = g.c, g.mg = g.m;
    g.kh = g.kw = g.sh = g.sw = g.dh = g.dw = 1;
    g.ih = g.oh = rand_in(1, 20), g.iw = g.ow = rand_in(1, 40);
    static const int ACTS[4] = {INF_EPILOGUE_NONE, INF_EPILOGUE_RELU, INF_EPILOGUE_CLIP, INF_EPILOGUE_SILU};
    g.act = ACTS[next_u64() % 4];
    g.lo = -0.3f, g.hi = 0.4f;
    if (!inf__conv2d_pointwise_fits(&g)) {
        printf("case %d: a 1x1 unpadded stride-1 conv is not taken\n", idx);
        n_failed++;
        return;
    }
    check_shape(pool, &g, next_u64() % 3 != 0, next_u64() % 3 == 0, idx);
}

/* Shapes the variant must leave to the others. */
static void rejects(void) {
    inf__conv2d base = {.n = 1, .c = 8, .m = 8, .group = 1, .cg = 8, .mg = 8, .ih = 5, .iw = 5, .oh = 5, .ow = 5,
                        .kh = 1, .kw = 1, .sh = 1, .sw = 1, .dh = 1, .dw = 1};
    inf__conv2d g[5];
    for (int i = 0; i < 5; i++) g[i] = base;
    g[0].pt = 1, g[0].oh = 7;                         /* padded */
    g[1].sw = 2, g[1].ow = 3;                         /* strided */
    g[2].group = 2, g[2].cg = 4, g[2].mg = 4;         /* grouped */
    g[3].kh = g[3].kw = 3, g[3].oh = g[3].ow = 3;     /* 3x3 */
    g[4].oh = 6;                                      /* padded at the end */
    for (int i = 0; i < 5; i++) {
        if (inf__conv2d_pointwise_fits(&g[i])) {
            printf("reject %d: taken by the pointwise variant\n", i);
            n_failed++;
        } else {
            n_passed++;
        }
    }
}

/* A fixed shape: c -> m channels on an h x w plane, batch n, Clip(0, 6)
 * (ReLU6) with a bias; a residual when res. */
static void fixed_case(inf__pool *pool, int64_t n, int64_t c, int64_t m, int64_t h, int64_t w, bool res, int idx) {
    inf__conv2d g = {.n = n, .c = c, .m = m, .group = 1, .cg = c, .mg = m, .ih = h, .iw = w, .oh = h, .ow = w,
                     .kh = 1, .kw = 1, .sh = 1, .sw = 1, .dh = 1, .dw = 1, .act = INF_EPILOGUE_CLIP, .lo = 0.0f,
                     .hi = 6.0f};
    check_shape(pool, &g, true, res, idx);
}

/* bench/extra mobile's pointwise convolutions. */
static const int64_t MOBILE[6][4] = {{32, 64, 48, 48},   {64, 128, 24, 24},  {128, 128, 24, 24},
                                     {128, 256, 12, 12}, {256, 256, 12, 12}, {256, 512, 6, 6}};

/* Every store of a one-block pass (K <= 256), which has straight-line code
 * per combination (pointwise_avx2.c store_one_block): bias or not x
 * residual or not x none / ReLU / Clip(-0.5, 0.5) / SiLU, on 36 = 24 + 12
 * positions (a full strip, then a masked 2-vector one), 20 (3 vectors,
 * the last masked), 8 (1 vector) and 5 (1 vector, masked), 24 output channels (full tiles of every
 * width), batch 1. */
static void store_kinds(inf__pool *pool) {
    static const int ACTS[4] = {INF_EPILOGUE_NONE, INF_EPILOGUE_RELU, INF_EPILOGUE_CLIP, INF_EPILOGUE_SILU};
    static const int64_t PLANES[4][2] = {{6, 6}, {4, 5}, {2, 4}, {1, 5}};
    int idx = 3000;
    for (int p = 0; p < 4; p++)
        for (int a = 0; a < 4; a++)
            for (int kind = 0; kind < 4; kind++, idx++) {
                inf__conv2d g = {.n = 1, .c = 37, .m = 24, .group = 1, .cg = 37, .mg = 24, .ih = PLANES[p][0],
                                 .iw = PLANES[p][1], .oh = PLANES[p][0], .ow = PLANES[p][1], .kh = 1, .kw = 1,
                                 .sh = 1, .sw = 1, .dh = 1, .dw = 1, .act = ACTS[a], .lo = -0.5f, .hi = 0.5f};
                check_shape(pool, &g, kind & 1, kind & 2, idx);
            }
}

static void cases(inf__pool *pool) {
    store_kinds(pool);
    for (int i = 0; i < 150; i++) one_case(pool, i);
    for (int i = 0; i < 6; i++) {
        const int64_t *s = MOBILE[i];
        fixed_case(pool, 1, s[0], s[1], s[2], s[3], i == 2, 1000 + i);
        if (s[2] <= 12) fixed_case(pool, 2, s[0], s[1], s[2], s[3], i == 5, 1100 + i);
    }
}

/* Unit splits a pool of 3 threads makes: position groups and narrower
 * channel blocks on few images, whole images on more. */
static void three_threads(void) {
    inf__pool *pool = NULL;
    if (inf__pool_new(3, &pool) != INF_OK) {
        printf("cannot create a pool of 3 threads\n");
        n_failed++;
        return;
    }
    fixed_case(pool, 1, 256, 512, 6, 6, false, 2000);
    fixed_case(pool, 1, 300, 70, 5, 7, true, 2001);
    fixed_case(pool, 1, 32, 64, 48, 48, false, 2002);
    fixed_case(pool, 5, 40, 30, 3, 11, false, 2003);
    inf__pool_free(pool);
}

int main(void) {
    rejects();
    if (inf__cpu_has_avx2_fma()) three_threads();
    return conv_test_main(cases, &n_passed, &n_failed);
}

#else /* not x86-64: no AVX2 kernels */

CONV_TEST_NOT_X86_MAIN

#endif
