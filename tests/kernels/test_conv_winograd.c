/*
 * test_conv_winograd.c -- the Winograd convolution (ops/x86/conv_winograd_avx2.c,
 * F(2x2,3x3) and F(4x4,3x3), and F(2x2,3x3) at stride 2) against a float64
 * convolution written here.
 *
 * Winograd is not bit-exact with a direct sum: each term passes through
 * the input transform B^T d B, the product with U = G g G^T (rounded once)
 * and the output transform A^T M A, every step rounded in float32, and the
 * transforms' coefficients amplify those roundings.  With the infinity
 * norms of the 1-D transforms (|B^T| 2, |A^T| 3 for F(2x2); |B^T| 10,
 * |A^T| 19 for F(4x4)) squared for 2-D, the worst case is about 36 eps
 * (F(2x2)) and 36000 eps (F(4x4)) times sum |w||x| (+ |bias| + |res|), eps
 * = 6e-8; random signs cancel most of it.  Observed maxima (printed at the
 * end): 8.4e-7 and 2.0e-5 of the bound.  Allowed: 4e-6 (67 eps) for F(2x2)
 * and 1e-4 (1700 eps) for F(4x4), plus 1e-6 absolute.  A wrong transform
 * coefficient gives errors of the size of the terms themselves (~1e-1 of
 * the bound), far outside.
 *
 * Random shapes: batch 1..3, input channels 1..40 and output channels
 * 1..40 (mostly not multiples of 8), now and then 60..130 (several GEMM
 * panels and k blocks of the 6x16 kernel), H and W 1..33 (odd sizes:
 * partial tiles at the right and bottom), pads 0 / 1 / 2 on each side
 * (asymmetric too), with and without bias, residual (ConvAdd) and
 * ReLU / Clip; both tile sizes; pools of 1, 2 and 3 threads; the bench CNN's
 * layers; 200 x 200 channels (blocks larger than the L2 budget, spanning
 * images).  Every output
 * must be written (Y starts as NaN); each image run alone must give the
 * batch's bits; 2 and 3 threads must give 1 thread's bits (each thread
 * runs one band of tile rows: bands of unequal length at 3 threads).
 * Stride 2 (INF_WINOGRAD_S2): 120 random 3x3/2 shapes of the same kinds
 * (pads 0-2 on each side, odd sizes), the bench CNN's two 3x3/2 layers,
 * 200 -> 200 and 256 -> 48 channels, held to F(2x2)'s tolerance (its
 * transforms only add: observed 4e-7).
 * On the avx512 path every case runs the AVX-512 kernel
 * (conv_winograd_avx512.c, what Conv picks there), held also to the AVX2
 * kernel's bits; ctest runs the test again with INFERA_CPU=avx2.
 * Channels-last operands (inf__conv2d.nhwc, graph/passes/channels_last.c):
 * every case runs once more with a random set of X, Y and the residual
 * channels-last (the fixed cases with all seven sets), on the other pool,
 * and must give the channels-first bits.
 * Prints one line per failure and "N passed, M failed".  Skips (0 passed,
 * 0 failed) on a CPU without AVX2/FMA.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/core.h"
#include "core/cpu.h"
#include "kernel_paths.h"
#include "ops/ops.h"
#include "test_allocs.h"

#if defined(__x86_64__)

static int n_passed, n_failed, n_wide, n_layouts;
static double worst[5]; /* largest |y - ref| / bound seen, per tile size (3: INF_WINOGRAD_S2) */
#define KERNEL_TEST_SEED 0x2545F4914F6CDD1Dull
#include "test_rng.h"

static double activate(const inf__conv2d *g, double v) {
    if (g->act == INF_EPILOGUE_RELU) return v > 0 ? v : 0;
    if (g->act == INF_EPILOGUE_CLIP) return v < g->lo ? g->lo : v > g->hi ? g->hi : v;
    return v;
}

/* One output of the 3x3 convolution (stride g->sh, g->sw) in double;
 * *bound = sum of the absolute terms. */
static double ref_at(const inf__conv2d *g, const float *x, const float *w, int64_t n, int64_t k, int64_t oy,
                     int64_t ox, double *bound) {
    double s = 0, a = 0;
    for (int64_t c = 0; c < g->c; c++)
        for (int64_t ky = 0; ky < 3; ky++) {
            int64_t iy = oy * g->sh - g->pt + ky;
            if (iy < 0 || iy >= g->ih) continue;
            for (int64_t kx = 0; kx < 3; kx++) {
                int64_t ix = ox * g->sw - g->pl + kx;
                if (ix < 0 || ix >= g->iw) continue;
                double t = (double)w[(k * g->c + c) * 9 + ky * 3 + kx] * x[((n * g->c + c) * g->ih + iy) * g->iw + ix];
                s += t, a += fabs(t);
            }
        }
    *bound = a;
    return s;
}

typedef struct bufs {
    float *x, *w, *b, *res, *up, *scratch, *y, *y1;
} bufs;

/* floats floats, 64-byte aligned (the size rounded up to 64 bytes), owned by a. */
static void *alloc64(test_allocs *a, size_t floats) {
    return test_alloc_aligned(a, 64, (floats * sizeof(float) + 63) / 64 * 64);
}

/* On the avx512 path the AVX-512 kernel (what Conv runs there), else the AVX2 one. */
static bool wide;

static void run(inf__pool *pool, int tile, const inf__conv2d *g, const bufs *B, const float *x, const float *b,
                const float *res, float *y) {
    if (wide)
        inf__conv2d_winograd_f32_avx512(pool, tile, g, x, B->up, b, res, B->scratch, y);
    else
        inf__conv2d_winograd_f32_avx2(pool, tile, g, x, B->up, b, res, B->scratch, y);
}

/* The AVX-512 kernel's y against the AVX2 kernel's: the same bits. */
static int check_widths(inf__pool *pool, int tile, const inf__conv2d *g, const bufs *B, const float *b,
                        const float *res, int idx) {
    size_t ny = (size_t)(g->n * g->m * g->oh * g->ow);
    inf__conv2d_winograd_f32_avx2(pool, tile, g, B->x, B->up, b, res, B->scratch, B->y1);
    if (!memcmp(B->y1, B->y, ny * sizeof(float))) return 0;
    printf("case %d F(%dx%d): the AVX-512 kernel differs from the AVX2 kernel\n", idx, tile, tile);
    return 1;
}

/* y against the double convolution; returns the failures printed. */
static int check_values(const inf__conv2d *g, int tile, const bufs *B, const float *b, const float *res, int idx) {
    double tol = tile == 4 ? 1e-4 : 4e-6; /* F(2x2) at stride 1 or 2 */
    int bad = 0;
    for (int64_t n = 0; n < g->n; n++)
        for (int64_t k = 0; k < g->m; k++)
            for (int64_t oy = 0; oy < g->oh; oy++)
                for (int64_t ox = 0; ox < g->ow && bad < 3; ox++) {
                    int64_t i = ((n * g->m + k) * g->oh + oy) * g->ow + ox;
                    double bound, s = ref_at(g, B->x, B->w, n, k, oy, ox, &bound);
                    if (b) s += b[k], bound += fabs(b[k]);
                    if (res) s += res[i], bound += fabs(res[i]);
                    double want = activate(g, s), err = fabs(B->y[i] - want);
                    if (bound > 0 && err / bound > worst[tile]) worst[tile] = err / bound;
                    if (!(err <= tol * bound + 1e-6)) {
                        printf("case %d F(%dx%d): n%lld c%lld k%lld %lldx%lld pads %lld,%lld act%d bias%d res%d: "
                               "y[%lld,%lld,%lld,%lld] = %.9g, want %.9g (bound %.3g)\n",
                               idx, tile, tile, (long long)g->n, (long long)g->c, (long long)g->m, (long long)g->ih,
                               (long long)g->iw, (long long)g->pt, (long long)g->pl, g->act, b != NULL, res != NULL,
                               (long long)n, (long long)k, (long long)oy, (long long)ox, B->y[i], want, bound);
                        bad++;
                    }
                }
    return bad;
}

/* Each image alone gives the batch's bits; so does the other pool. */
static int check_bits(inf__pool *pool, inf__pool *other, int tile, const inf__conv2d *g, const bufs *B,
                      const float *b, const float *res, int idx) {
    inf__conv2d g1 = *g;
    g1.n = 1;
    size_t xi = (size_t)(g->c * g->ih * g->iw), yi = (size_t)(g->m * g->oh * g->ow);
    for (int64_t n = 0; n < g->n; n++) {
        run(pool, tile, &g1, B, B->x + n * xi, b, res ? res + n * yi : NULL, B->y1);
        if (memcmp(B->y1, B->y + n * yi, yi * sizeof(float))) {
            printf("case %d F(%dx%d): image %lld alone differs from the batch\n", idx, tile, tile, (long long)n);
            return 1;
        }
    }
    run(other, tile, g, B, B->x, b, res, B->y1);
    if (memcmp(B->y1, B->y, (size_t)g->n * yi * sizeof(float))) {
        printf("case %d F(%dx%d): %d threads differ from %d\n", idx, tile, tile, inf__pool_size(other),
               inf__pool_size(pool));
        return 1;
    }
    return 0;
}

/* dst[i][p][c] = src[i][c][p] (n images, c planes of p floats), and back. */
static void to_last(const float *src, float *dst, int64_t n, int64_t c, int64_t p) {
    for (int64_t i = 0; i < n; i++)
        for (int64_t k = 0; k < c; k++)
            for (int64_t j = 0; j < p; j++) dst[(i * p + j) * c + k] = src[(i * c + k) * p + j];
}

static void to_first(const float *src, float *dst, int64_t n, int64_t c, int64_t p) {
    for (int64_t i = 0; i < n; i++)
        for (int64_t k = 0; k < c; k++)
            for (int64_t j = 0; j < p; j++) dst[(i * c + k) * p + j] = src[(i * p + j) * c + k];
}

/* Channels-last operands (g.nhwc = bits: X, Y and the residual each either
 * way) give the channels-first run's B->y bit for bit, Y fully written. */
static int check_layouts(inf__pool *pool, int tile, const inf__conv2d *g, const bufs *B, const float *b,
                         const float *res, int bits, int idx) {
    size_t nx = (size_t)(g->n * g->c * g->ih * g->iw), ny = (size_t)(g->n * g->m * g->oh * g->ow);
    test_allocs A = {0};
    float *xt = alloc64(&A, nx), *rt = alloc64(&A, ny), *yt = alloc64(&A, ny);
    if (test_allocs_failed(&A, idx)) {
        test_allocs_free(&A);
        return 1;
    }
    inf__conv2d gl = *g;
    gl.nhwc = bits;
    to_last(B->x, xt, g->n, g->c, g->ih * g->iw);
    if (res) to_last(res, rt, g->n, g->m, g->oh * g->ow);
    for (size_t i = 0; i < ny; i++) yt[i] = NAN;
    run(pool, tile, &gl, B, bits & INF_NHWC_X ? xt : B->x, b, res && (bits & INF_NHWC_RES) ? rt : res, yt);
    if (bits & INF_NHWC_Y) to_first(yt, B->y1, g->n, g->m, g->oh * g->ow);
    else memcpy(B->y1, yt, ny * sizeof(float));
    int bad = memcmp(B->y1, B->y, ny * sizeof(float)) != 0;
    if (bad) printf("case %d F(%dx%d): channels-last operands %d differ from channels-first\n", idx, tile, tile, bits);
    test_allocs_free(&A);
    return bad;
}

/* g (oh, ow set) with random data through one tile size. */
static void check_shape(inf__pool *pool, inf__pool *other, int tile, const inf__conv2d *g, bool bias, bool has_res,
                        int idx) {
    size_t nx = (size_t)(g->n * g->c * g->ih * g->iw), nw = (size_t)(g->m * g->c * 9);
    size_t ny = (size_t)(g->n * g->m * g->oh * g->ow);
    int64_t ns = inf__conv2d_winograd_scratch_floats(tile, g, inf__pool_size(pool));
    int64_t ns2 = inf__conv2d_winograd_scratch_floats(tile, g, inf__pool_size(other));
    test_allocs A = {0};
    bufs B = {alloc64(&A, nx), alloc64(&A, nw), alloc64(&A, (size_t)g->m), alloc64(&A, ny),
              alloc64(&A, (size_t)inf__conv2d_winograd_w_floats(tile, g->c, g->m)),
              alloc64(&A, (size_t)(ns > ns2 ? ns : ns2)), alloc64(&A, ny), alloc64(&A, ny)};
    if (test_allocs_failed(&A, idx)) {
        n_failed++;
        test_allocs_free(&A);
        return;
    }
    for (size_t i = 0; i < nx; i++) B.x[i] = uniform();
    for (size_t i = 0; i < nw; i++) B.w[i] = uniform();
    for (int64_t i = 0; i < g->m; i++) B.b[i] = uniform();
    for (size_t i = 0; i < ny; i++) B.res[i] = uniform(), B.y[i] = NAN; /* every element must be written */
    const float *b = bias ? B.b : NULL, *res = has_res ? B.res : NULL;
    inf__conv2d_winograd_pack_w(tile, g->c, g->m, B.w, B.up);
    run(pool, tile, g, &B, B.x, b, res, B.y);
    int bad = check_values(g, tile, &B, b, res, idx);
    if (!bad) bad = check_bits(pool, other, tile, g, &B, b, res, idx);
    if (!bad && wide) bad = check_widths(pool, tile, g, &B, b, res, idx), n_wide++;
    for (int bits = idx < 0 ? 1 : 1 + (int)(next_u64() % 7); !bad && bits <= 7;
         bits += idx < 0 ? 1 : 8) /* fixed: all */
        bad = check_layouts(other, tile, g, &B, b, res, bits, idx), n_layouts++;
    if (bad) n_failed++;
    else n_passed++;
    test_allocs_free(&A);
}

static void one_case(inf__pool *pool, inf__pool *other, int idx) {
    bool deep = next_u64() % 5 == 0;
    inf__conv2d g = {.group = 1, .kh = 3, .kw = 3, .sh = 1, .sw = 1, .dh = 1, .dw = 1, .lo = -0.3f, .hi = 0.4f};
    g.n = rand_in(1, 3);
    g.c = g.cg = deep ? rand_in(60, 130) : rand_in(1, 40);
    g.m = g.mg = deep ? rand_in(60, 130) : rand_in(1, 40);
    g.ih = rand_in(1, deep ? 12 : 33), g.iw = rand_in(1, deep ? 12 : 33);
    int64_t pads[3] = {0, 1, 2}, pb, pr;
    g.pt = pads[next_u64() % 3], g.pl = pads[next_u64() % 3];
    pb = next_u64() % 4 ? g.pt : pads[next_u64() % 3], pr = next_u64() % 4 ? g.pl : pads[next_u64() % 3];
    g.oh = g.ih + g.pt + pb - 2, g.ow = g.iw + g.pl + pr - 2;
    if (g.oh < 1 || g.ow < 1) { /* the kernel does not fit the padded input */
        one_case(pool, other, idx);
        return;
    }
    g.act = next_u64() % 3 == 0 ? INF_EPILOGUE_NONE : next_u64() % 2 ? INF_EPILOGUE_RELU : INF_EPILOGUE_CLIP;
    bool bias = next_u64() % 3 != 0, has_res = next_u64() % 2 == 0;
    check_shape(pool, other, idx % 2 ? 4 : 2, &g, bias, has_res, idx);
}

/* The bench CNN's stride-1 3x3s: 32 ch at 32x32, 64 at 16x16, 128 at 8x8,
 * pad 1, batch 2, bias, ReLU; the first with a residual. */
static void bench_cases(inf__pool *pool, inf__pool *other) {
    for (int tile = 2; tile <= 4; tile += 2)
        for (int i = 0; i < 3; i++) {
            int64_t ch = 32 << i, hw = 32 >> i;
            inf__conv2d g = {.n = 2, .c = ch, .m = ch, .group = 1, .cg = ch, .mg = ch, .ih = hw, .iw = hw, .oh = hw,
                             .ow = hw, .kh = 3, .kw = 3, .sh = 1, .sw = 1, .dh = 1, .dw = 1, .pt = 1, .pl = 1,
                             .act = INF_EPILOGUE_RELU};
            check_shape(pool, other, tile, &g, true, i == 0, -1 - i);
        }
}

/* Wide layers, where a block holds more tiles than L2 keeps (the U
 * streaming term of block_tiles: 15 and 9-18 tiles a block where L2 alone
 * gives 10 and 4): 200 -> 200 channels on 5 x 9, batch 3 (F(4x4)'s blocks
 * span images); both tile sizes, bias, residual, ReLU. */
static void wide_cases(inf__pool *pool, inf__pool *other) {
    for (int tile = 2; tile <= 4; tile += 2) {
        inf__conv2d g = {.n = 3, .c = 200, .m = 200, .group = 1, .cg = 200, .mg = 200, .ih = 5, .iw = 9, .oh = 5,
                         .ow = 9, .kh = 3, .kw = 3, .sh = 1, .sw = 1, .dh = 1, .dw = 1, .pt = 1, .pl = 1,
                         .act = INF_EPILOGUE_RELU};
        check_shape(pool, other, tile, &g, true, true, -10 - tile);
    }
}

/* A random 3x3/2 Conv through INF_WINOGRAD_S2: shapes as one_case's
 * (pads 0-2 on each side, odd sizes: partial tiles), redrawn until the
 * kernel takes them (inf__conv2d_winograd_s2_fits). */
static void s2_case(inf__pool *pool, inf__pool *other, int idx) {
    bool deep = next_u64() % 5 == 0;
    inf__conv2d g = {.group = 1, .kh = 3, .kw = 3, .sh = 2, .sw = 2, .dh = 1, .dw = 1, .lo = -0.3f, .hi = 0.4f};
    g.n = rand_in(1, 3);
    g.c = g.cg = deep ? rand_in(60, 130) : rand_in(1, 40);
    g.m = g.mg = deep ? rand_in(60, 130) : rand_in(1, 40);
    g.ih = rand_in(1, deep ? 16 : 35), g.iw = rand_in(1, deep ? 16 : 35);
    int64_t pads[3] = {0, 1, 2}, pb = pads[next_u64() % 3], pr = pads[next_u64() % 3];
    g.pt = pads[next_u64() % 3], g.pl = pads[next_u64() % 3];
    g.oh = (g.ih + g.pt + pb - 3) / 2 + 1, g.ow = (g.iw + g.pl + pr - 3) / 2 + 1;
    if (g.ih + g.pt + pb < 3 || g.iw + g.pl + pr < 3 || !inf__conv2d_winograd_s2_fits(&g)) {
        s2_case(pool, other, idx);
        return;
    }
    g.act = next_u64() % 3 == 0 ? INF_EPILOGUE_NONE : next_u64() % 2 ? INF_EPILOGUE_RELU : INF_EPILOGUE_CLIP;
    bool bias = next_u64() % 3 != 0, has_res = next_u64() % 2 == 0;
    check_shape(pool, other, INF_WINOGRAD_S2, &g, bias, has_res, idx);
}

/* Fixed 3x3/2 pad-1 shapes through INF_WINOGRAD_S2, bias and residual as
 * listed: the bench CNN's two (batch 2, ReLU), 200 -> 200 on 9 x 17, batch
 * 3 (blocks spanning images), 256 -> 48 on 7 x 9 (V's 4-block rows 1024
 * floats: s2_ld's slack). */
static void s2_fixed_cases(inf__pool *pool, inf__pool *other) {
    static const struct {
        int64_t n, c, m, h, w;
        int act;
        bool res;
    } cases[] = {{2, 32, 64, 32, 32, INF_EPILOGUE_RELU, false},
                 {2, 64, 128, 16, 16, INF_EPILOGUE_RELU, false},
                 {3, 200, 200, 9, 17, INF_EPILOGUE_RELU, true},
                 {2, 256, 48, 7, 9, INF_EPILOGUE_NONE, true}};
    for (int i = 0; i < (int)(sizeof cases / sizeof cases[0]); i++) {
        inf__conv2d g = {.group = 1, .kh = 3, .kw = 3, .sh = 2, .sw = 2, .dh = 1, .dw = 1, .pt = 1, .pl = 1};
        g.n = cases[i].n, g.c = g.cg = cases[i].c, g.m = g.mg = cases[i].m, g.act = cases[i].act;
        g.ih = cases[i].h, g.iw = cases[i].w, g.oh = (g.ih - 1) / 2 + 1, g.ow = (g.iw - 1) / 2 + 1;
        check_shape(pool, other, INF_WINOGRAD_S2, &g, true, cases[i].res, -20 - i);
    }
}

int main(int argc, char **argv) {
    int skip = kernel_paths_begin(argc, argv, "winograd conv");
    if (skip) return skip;
    if (!inf__cpu_has_avx2_fma()) {
        printf("0 passed, 0 failed (no AVX2/FMA)\n");
        return 77 /* ctest SKIP_RETURN_CODE: nothing ran */;
    }
    wide = inf__cpu_has_avx512();
    inf__pool *pools[3] = {NULL, NULL, NULL};
    for (int t = 0; t < 3; t++)
        if (inf__pool_new(t + 1, &pools[t]) != INF_OK) {
            printf("cannot create a pool of %d threads\n", t + 1);
            return 1;
        }
    for (int i = 0; i < 240; i++) one_case(pools[i % 4 < 2], pools[i % 4 >= 2], i);
    bench_cases(pools[0], pools[1]);
    bench_cases(pools[1], pools[0]);
    wide_cases(pools[0], pools[1]);
    for (int i = 240; i < 300; i++)
        one_case(pools[i % 2 ? 2 : 0], pools[i % 2 ? 0 : 2], i);
    bench_cases(pools[2], pools[0]);
    wide_cases(pools[2], pools[0]);
    for (int i = 300; i < 420; i++)
        s2_case(pools[i % 3], pools[(i + 1) % 3], i);
    s2_fixed_cases(pools[0], pools[1]);
    s2_fixed_cases(pools[2], pools[0]);
    inf__pool_free(pools[0]), inf__pool_free(pools[1]), inf__pool_free(pools[2]);
    printf("largest error / sum|w||x|: F(2x2) %.3g, F(4x4) %.3g, F(2x2) stride 2 %.3g\n", worst[2], worst[4],
           worst[INF_WINOGRAD_S2]);
    printf("%d passed, %d failed (%d on the AVX-512 kernel, held to the AVX2 kernel's bits; %d channels-last "
           "runs held to the channels-first bits)\n",
           n_passed, n_failed, n_wide, n_layouts);
    return n_failed ? 1 : 0;
}

#else /* not x86-64: no AVX2 kernels */

int main(void) {
    (void)kernel_paths_begin;
    printf("0 passed, 0 failed (not x86-64)\n");
    return 77 /* ctest SKIP_RETURN_CODE: nothing ran */;
}

#endif
