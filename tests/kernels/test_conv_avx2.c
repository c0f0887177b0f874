/*
 * test_conv_avx2.c -- the fused AVX2/FMA convolutions (the panel kernel of
 * ops/x86/conv_avx2.c, the direct kernel of ops/x86/conv_direct_avx2.c and
 * the rows kernel of ops/x86/conv_rows_avx2.c, the last on every case with
 * stride 1 along the row and K <= 256, 4 channels or more per group)
 * against the path they replace: a plain im2col written here, the AVX2
 * sgemm (inf__ops_sgemm_avx2) per image and group, then + bias in float and
 * the activation -- bit for bit, as conv_avx2.c promises -- and against a
 * double-precision convolution (tolerance 1e-5 * sum |w x| + 1e-6), so a
 * shared mistake in the im2col indexing would still be caught.
 *
 * Random shapes: batch 1..3, groups 1..3, channels per group 1..20, output
 * channels per group 1..40 (around the 6-row panels) or 12..80 (around the
 * direct kernel's 16-channel blocks), input 1..19 x 1..37,
 * kernels 1..5 x 1..7, strides 1..3, dilations 1..2, asymmetric pads, 1-D
 * (ih = kh = 1), K over several 256-deep blocks, with and without bias,
 * no activation / ReLU / Clip / SiLU (direct kernels only), with and without a residual (ConvAdd: the
 * unfused Add after the Conv, before the activation); pools of 1, 2 and 3
 * threads; one larger case whose padded input takes several passes of the
 * direct kernel; the bench CNN's stem and an odd-sized variant of it;
 * two strided 1-D front ends (kernel 80 stride 16; kernel 9 stride 5);
 * two strided stems (3x3/2 3 -> 32, 5x5/2 1 -> 16) and the variant rule's
 * choice for them; padded shapes the AVX-512 direct kernel reads in place
 * (border taps masked), the bench CNN's 3x3/2 layers among them.
 * Batch invariance:
 * each image run alone gives the same bits as inside the batch.
 * On the avx512 path the AVX-512 siblings of the direct and rows kernels
 * (conv_direct_avx512.c, conv_rows_avx512.c) run every case too, held to
 * the same bits; ctest runs the test again with INFERA_CPU=avx2
 * (kernels_test_conv_avx2_avx2path) so the AVX2 dispatch is tested there.
 * Prints one line per failure and "N passed, M failed".  Skips (0 passed,
 * 0 failed) on a CPU without AVX2/FMA.
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
#include "test_allocs.h"

#if defined(__x86_64__)

static int n_passed, n_failed, n_rows, n_wide;
#define KERNEL_TEST_SEED 0x9E3779B97F4A7C15ull
#include "test_rng.h"

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
                    yg[o * np + j] = conv_test_act(g, v);
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
                    y[i] = conv_test_act(g, (float)s), mag[i] = a;
                }
        }
}

enum { PANEL, DIRECT, ROWS, DIRECT512, ROWS512 };
static const char *const kernel_names[] = {"panel", "direct", "rows", "direct avx512", "rows avx512"};

/* Runs the panel, direct or rows kernel (or the AVX-512 direct / rows
 * sibling, on the same packing) on W packed for it. */
static void run_kernel(inf__pool *pool, int kind, const inf__conv2d *g, const float *x, const float *wp,
                       const float *b, const float *res, float *scratch, float *y) {
    if (kind == DIRECT) inf__conv2d_direct_f32_avx2(pool, g, x, wp, b, res, scratch, y);
    else if (kind == ROWS) inf__conv2d_rows_f32_avx2(pool, g, x, wp, b, res, scratch, y);
    else if (kind == DIRECT512)
        inf__conv2d_direct_f32_avx512(pool, g, x, wp, b, res, scratch, y);
    else if (kind == ROWS512)
        inf__conv2d_rows_f32_avx512(pool, g, x, wp, b, res, scratch, y);
    else inf__conv2d_f32_avx2(pool, g, x, wp, b, res, y);
}

/* Buffers of one case. */
typedef struct bufs {
    float *x, *w, *b, *wp, *wd, *wr, *scratch, *col, *y, *yr, *y1, *res;
    double *yd, *mag;
} bufs;

/* The kernel's y against the im2col path yr (bits) and the double
 * convolution; then each image alone against the batch.  Returns failures. */
static int check_kernel(inf__pool *pool, int kind, const inf__conv2d *g, const bufs *B, bool bias,
                        const float *r, int idx) {
    size_t ny = (size_t)(g->n * g->m * g->oh * g->ow);
    const float *wp = kind == DIRECT || kind == DIRECT512 ? B->wd : kind == ROWS || kind == ROWS512 ? B->wr : B->wp;
    const float *b = bias ? B->b : NULL;
    for (size_t i = 0; i < ny; i++) B->y[i] = NAN; /* every element must be written */
    run_kernel(pool, kind, g, B->x, wp, b, r, B->scratch, B->y);
    int bad = 0;
    for (size_t i = 0; i < ny && bad < 3; i++) {
        bool same = memcmp(&B->y[i], &B->yr[i], sizeof(float)) == 0;
        bool close = fabs(B->y[i] - B->yd[i]) <= 1e-5 * B->mag[i] + 1e-6;
        if (!same || !close) {
            printf("case %d, %s kernel (n%lld c%lld m%lld g%lld %lldx%lld k%lldx%lld s%lld,%lld d%lld,%lld p%lld,%lld "
                   "act%d res%d): y[%zu] = %.9g, im2col path %.9g, double %.9g\n",
                   idx, kernel_names[kind], (long long)g->n, (long long)g->c, (long long)g->m,
                   (long long)g->group, (long long)g->ih, (long long)g->iw, (long long)g->kh, (long long)g->kw,
                   (long long)g->sh, (long long)g->sw, (long long)g->dh, (long long)g->dw, (long long)g->pt,
                   (long long)g->pl, g->act, r != NULL, i, B->y[i], B->yr[i], B->yd[i]);
            bad++;
        }
    }
    inf__conv2d g1 = *g;
    g1.n = 1;
    size_t xi = (size_t)(g->c * g->ih * g->iw), yi = (size_t)(g->m * g->oh * g->ow);
    for (int64_t n = 0; n < g->n && !bad; n++) {
        run_kernel(pool, kind, &g1, B->x + n * xi, wp, b, r ? r + n * yi : NULL, B->scratch, B->y1);
        if (memcmp(B->y1, B->y + n * yi, yi * sizeof(float))) {
            printf("case %d, %s kernel: image %lld alone differs from the batch\n", idx, kernel_names[kind],
                   (long long)n);
            bad++;
        }
    }
    return bad;
}

/* Both kernels on g (oh, ow set) with random data. */
static void check_shape(inf__pool *pool, const inf__conv2d *g, bool bias, bool has_res, int idx) {
    int64_t kdim = g->cg * g->kh * g->kw, np = g->oh * g->ow;
    size_t nx = (size_t)(g->n * g->c * g->ih * g->iw), nw = (size_t)(g->m * kdim), ny = (size_t)(g->n * g->m * np);
    int64_t nscr = inf__conv2d_direct_scratch_floats(g);
    test_allocs A = {0};
    bufs B = {
        .x = test_alloc(&A, nx * sizeof(float)), .w = test_alloc(&A, nw * sizeof(float)),
        .b = test_alloc(&A, (size_t)g->m * sizeof(float)),
        .wp = test_alloc(&A, (size_t)inf__conv2d_packed_w_floats(g->m, g->group, kdim) * sizeof(float)),
        .wd = test_alloc_aligned(&A, 32, (size_t)(inf__conv2d_direct_w_floats(g->m, g->group, kdim) + 8) / 8 * 32),
        .wr = test_alloc(&A, (size_t)inf__conv2d_rows_w_floats(g->m, g->group, kdim) * sizeof(float)),
        .scratch = test_alloc_aligned(&A, 32, (size_t)(nscr + 8) / 8 * 32),
        .col = test_alloc(&A, (size_t)(kdim * np) * sizeof(float)), .y = test_alloc(&A, ny * sizeof(float)),
        .yr = test_alloc(&A, ny * sizeof(float)), .y1 = test_alloc(&A, ny * sizeof(float)),
        .res = test_alloc(&A, ny * sizeof(float)), .yd = test_alloc(&A, ny * sizeof(double)),
        .mag = test_alloc(&A, ny * sizeof(double)),
    };
    if (test_allocs_failed(&A, idx)) {
        n_failed++;
        goto done;
    }
    for (size_t i = 0; i < nx; i++) B.x[i] = uniform();
    for (size_t i = 0; i < nw; i++) B.w[i] = uniform();
    for (int64_t i = 0; i < g->m; i++) B.b[i] = uniform();
    for (size_t i = 0; i < ny; i++) B.res[i] = uniform();
    const float *r = has_res ? B.res : NULL;
    inf__conv2d_pack_w(g->m, g->group, kdim, B.w, B.wp);
    inf__conv2d_direct_pack_w(g->m, g->group, kdim, B.w, B.wd);
    inf__conv2d_rows_pack_w(g->m, g->group, kdim, B.w, B.wr);
    conv_im2col(pool, g, B.x, B.w, bias ? B.b : NULL, r, B.col, B.yr);
    conv_double(g, B.x, B.w, bias ? B.b : NULL, r, B.yd, B.mag);
    /* SiLU is in the direct kernels' stores only (the session's epilogue pass after the others) */
    bool silu = g->act == INF_EPILOGUE_SILU;
    int bad = silu ? 0 : check_kernel(pool, PANEL, g, &B, bias, r, idx);
    bad += check_kernel(pool, DIRECT, g, &B, bias, r, idx);
    if (inf__cpu_has_avx512()) bad += check_kernel(pool, DIRECT512, g, &B, bias, r, idx), n_wide++;
    if (!silu && g->sw == 1 && kdim <= 256 && g->mg >= 4) { /* the rows kernel's range, inside or not of its fits rule */
        bad += check_kernel(pool, ROWS, g, &B, bias, r, idx);
        if (inf__cpu_has_avx512()) bad += check_kernel(pool, ROWS512, g, &B, bias, r, idx);
        n_rows++;
    }
    if (bad) n_failed++;
    else n_passed++;
done:
    test_allocs_free(&A);
}

static void one_case(inf__pool *pool, int idx) {
    inf__conv2d g;
    memset(&g, 0, sizeof g);
    bool one_d = next_u64() % 5 == 0, deep = next_u64() % 6 == 0, wide = next_u64() % 3 == 0;
    g.n = rand_in(1, 3), g.group = rand_in(1, 3), g.cg = deep ? rand_in(30, 70) : rand_in(1, 20);
    g.mg = wide ? rand_in(12, 80) : rand_in(1, 40), g.c = g.group * g.cg, g.m = g.group * g.mg;
    g.kh = one_d ? 1 : rand_in(1, 5), g.kw = rand_in(1, 7);
    g.sh = one_d ? 1 : rand_in(1, 3), g.sw = rand_in(1, 3);
    g.dh = one_d ? 1 : rand_in(1, 2), g.dw = rand_in(1, 2);
    g.ih = one_d ? 1 : rand_in(1, 19), g.iw = rand_in(1, 37);
    g.pt = one_d ? 0 : rand_in(0, g.kh - 1), g.pl = rand_in(0, g.kw - 1);
    int64_t pb = one_d ? 0 : rand_in(0, g.kh - 1), pr = rand_in(0, g.kw - 1);
    if (!conv_test_out_size(&g, pb, pr)) { /* kernel larger than the padded input */
        one_case(pool, idx);
        return;
    }
    static const int ACTS[4] = {INF_EPILOGUE_NONE, INF_EPILOGUE_RELU, INF_EPILOGUE_CLIP, INF_EPILOGUE_SILU};
    g.act = ACTS[next_u64() % 4];
    g.lo = -0.3f, g.hi = 0.4f;
    bool bias = next_u64() % 3 != 0, has_res = next_u64() % 2 == 0;
    check_shape(pool, &g, bias, has_res, idx);
}

/* A batch whose padded input is more than one pass of the direct kernel
 * (about 1 MiB each): 9 images of 256 x 20 x 20, 1x1 with pad 1 (a border of
 * bias-only outputs), ReLU, residual. */
static void multi_pass_case(inf__pool *pool) {
    inf__conv2d g = {.n = 9, .c = 256, .m = 16, .group = 1, .cg = 256, .mg = 16, .ih = 20, .iw = 20, .oh = 22,
                     .ow = 22, .kh = 1, .kw = 1, .sh = 1, .sw = 1, .dh = 1, .dw = 1, .pt = 1, .pl = 1,
                     .act = INF_EPILOGUE_RELU};
    if (inf__conv2d_direct_scratch_floats(&g) >= g.n * g.c * 22 * 22) {
        printf("multi-pass case: the padded batch fits one pass; make it larger\n");
        n_failed++;
        return;
    }
    check_shape(pool, &g, true, true, -1);
}

/* The bench CNN's stem (the rows kernel's target): 3 -> 32 channels, 3x3,
 * pad 1, on 64 x 64 (ow 64 = 24 + 24 + 16: full and short tiles), ReLU,
 * batch 2; and the same on 61 x 13 (masked last vectors), no bias. */
static void stem_cases(inf__pool *pool) {
    inf__conv2d g = {.n = 2, .c = 3, .m = 32, .group = 1, .cg = 3, .mg = 32, .ih = 64, .iw = 64, .oh = 64, .ow = 64,
                     .kh = 3, .kw = 3, .sh = 1, .sw = 1, .dh = 1, .dw = 1, .pt = 1, .pl = 1,
                     .act = INF_EPILOGUE_RELU};
    check_shape(pool, &g, true, false, -2);
    g.ih = g.oh = 61, g.iw = g.ow = 13, g.m = g.mg = 30;
    check_shape(pool, &g, false, true, -3);
}

/* Strided 1-D front ends (the direct kernel's sw > 2 range, where the
 * panel kernel gathers): an M5-style kernel 80, stride 16, 1 -> 32
 * channels on 1000 samples, batch 2, ReLU; and kernel 9, stride 5, pad 3,
 * 3 -> 48 channels on 301, residual, no bias. */
static void front_end_cases(inf__pool *pool) {
    inf__conv2d g = {.n = 2, .c = 1, .m = 32, .group = 1, .cg = 1, .mg = 32, .ih = 1, .iw = 1000, .oh = 1,
                     .ow = (1000 - 80) / 16 + 1, .kh = 1, .kw = 80, .sh = 1, .sw = 16, .dh = 1, .dw = 1,
                     .act = INF_EPILOGUE_RELU};
    if (!inf__conv2d_direct_fits(g.mg, g.kw, g.sw)) {
        printf("front-end case: the direct kernel's rule does not take kernel 80 stride 16\n");
        n_failed++;
    }
    check_shape(pool, &g, true, false, -4);
    g.c = g.cg = 3, g.m = g.mg = 48, g.iw = 301, g.kw = 9, g.sw = 5, g.pl = 3, g.ow = (301 + 6 - 9) / 5 + 1;
    g.act = INF_EPILOGUE_NONE;
    check_shape(pool, &g, false, true, -5);
}

/* Strided stems (inf__conv2d_avx2_variant's strided_stem: the direct
 * kernel): bench/extra mobile's 3x3/2 3 -> 32 on 96 x 96, Clip, batch 2;
 * a 5x5/2 1 -> 16 on 37 x 29 (odd sizes, short last tiles), residual, no
 * bias.  The rule must pick the direct kernel for both and keep the panel
 * kernel at 64 output channels. */
static void strided_stem_cases(inf__pool *pool) {
    inf__conv2d g = {.n = 2, .c = 3, .m = 32, .group = 1, .cg = 3, .mg = 32, .ih = 96, .iw = 96, .oh = 48, .ow = 48,
                     .kh = 3, .kw = 3, .sh = 2, .sw = 2, .dh = 1, .dw = 1, .pt = 1, .pl = 1,
                     .act = INF_EPILOGUE_CLIP, .lo = 0.0f, .hi = 6.0f};
    bool rule = inf__conv2d_avx2_variant(&g) == INF_CONV2D_DIRECT;
    check_shape(pool, &g, true, false, -6);
    g.c = g.cg = 1, g.m = g.mg = 16, g.ih = 37, g.iw = 29, g.kh = g.kw = 5, g.pt = g.pl = 2;
    g.oh = (37 + 4 - 5) / 2 + 1, g.ow = (29 + 4 - 5) / 2 + 1, g.act = INF_EPILOGUE_NONE;
    rule = rule && inf__conv2d_avx2_variant(&g) == INF_CONV2D_DIRECT;
    check_shape(pool, &g, false, true, -7);
    g.m = g.mg = 64;
    if (!rule || inf__conv2d_avx2_variant(&g) != INF_CONV2D_PANEL) {
        printf("strided stems: the variant rule does not pick direct for 16/32 channels and panel for 64\n");
        n_failed++;
    }
}

/* 1x1 Convs on the avx512 path's rule (inf__conv2d_direct_wide: the direct
 * kernel's AVX-512 sibling instead of the pointwise / panel kernels): a
 * pointwise 32 -> 64 on 9 x 13 (ragged tiles), batch 2, residual, ReLU, and
 * a 1x1/2 64 -> 128; the rule must take both on path avx512 only, and never
 * 48 output channels or K = 16. */
static void wide_rule_cases(inf__pool *pool) {
    inf__conv2d g = {.n = 2,
                     .c = 32,
                     .m = 64,
                     .group = 1,
                     .cg = 32,
                     .mg = 64,
                     .ih = 9,
                     .iw = 13,
                     .oh = 9,
                     .ow = 13,
                     .kh = 1,
                     .kw = 1,
                     .sh = 1,
                     .sw = 1,
                     .dh = 1,
                     .dw = 1,
                     .act = INF_EPILOGUE_RELU};
    bool wide = inf__cpu_has_avx512(), ok = inf__conv2d_direct_wide(&g) == wide;
    check_shape(pool, &g, true, true, -8);
    g.c = g.cg = 64, g.m = g.mg = 128, g.sh = g.sw = 2, g.oh = 5, g.ow = 7, g.act = INF_EPILOGUE_NONE;
    ok = ok && inf__conv2d_direct_wide(&g) == wide && (inf__conv2d_avx2_variant(&g) == INF_CONV2D_DIRECT) == wide;
    check_shape(pool, &g, false, false, -9);
    g.m = g.mg = 48;
    ok = ok && !inf__conv2d_direct_wide(&g);
    g.m = g.mg = 64, g.c = g.cg = 16;
    ok = ok && !inf__conv2d_direct_wide(&g);
    if (!ok) {
        printf("1x1 rule: inf__conv2d_direct_wide does not follow the path (avx512 %d)\n", wide);
        n_failed++;
    }
}

/* Padded shapes the AVX-512 direct kernel reads in place, borders masked
 * (inf__conv2d_direct_avx512_in_place): the bench CNN's two 3x3/2 pad-1
 * layers (32 -> 64 on 32 x 32, ReLU; 64 -> 128 on 16 x 16, K = 576 over
 * three 256-deep blocks, residual); batch 2 with 2 groups of 48 output
 * channels (a 16-channel last tile); a stride-1 3x3 padded top and left
 * only; a 5x5/2 with two rows and two columns of padding (taps of a tile's
 * first position outside the image in two columns, two rows above it); a
 * dilated 3x3 (rows 2 apart, the first above the image).  The rule must
 * hold for each (on the avx512 path) and not for a 3x3/1 padded on every
 * side; at 2+ threads only where a row holds more than one tile (ow >= 16:
 * every shape but the second runs in place on the pools of 2 and 3 threads
 * too; the 64 -> 128 layer, ow = 8, on the padded copy).
 * The first two run without a pool too. */
typedef struct in_place_shape {
    int64_t n, group, cg, mg, ih, iw, kh, kw, sh, sw, dh, dw, pt, pl, pb, pr;
    int act;
    bool bias, res;
} in_place_shape;

static void in_place_cases(inf__pool *pool) {
    static const in_place_shape S[] = {
        {1, 1, 32, 64, 32, 32, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, INF_EPILOGUE_RELU, true, false},
        {1, 1, 64, 128, 16, 16, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, INF_EPILOGUE_RELU, true, true},
        {2, 2, 20, 48, 17, 32, 3, 3, 2, 2, 1, 1, 1, 1, 0, 1, INF_EPILOGUE_NONE, false, true},
        {1, 1, 24, 32, 10, 17, 3, 3, 1, 1, 1, 1, 1, 1, 0, 0, INF_EPILOGUE_CLIP, true, false},
        {1, 1, 20, 32, 20, 33, 5, 5, 2, 2, 1, 1, 2, 2, 0, 1, INF_EPILOGUE_NONE, true, true},
        {2, 1, 12, 64, 12, 34, 3, 3, 1, 2, 2, 2, 1, 2, 0, 0, INF_EPILOGUE_RELU, false, false},
    };
    bool wide = inf__cpu_has_avx512(), ok = true;
    for (int i = 0; i < (int)(sizeof S / sizeof S[0]); i++) {
        const in_place_shape *s = &S[i];
        inf__conv2d g = {.n = s->n, .group = s->group, .cg = s->cg, .mg = s->mg, .c = s->group * s->cg,
                         .m = s->group * s->mg, .ih = s->ih, .iw = s->iw, .kh = s->kh, .kw = s->kw, .sh = s->sh,
                         .sw = s->sw, .dh = s->dh, .dw = s->dw, .pt = s->pt, .pl = s->pl, .act = s->act,
                         .lo = -0.3f, .hi = 0.4f};
        conv_test_out_size(&g, s->pb, s->pr);
        if (wide && !inf__conv2d_direct_avx512_in_place(&g, 1)) {
            printf("in-place case %d: the rule does not read it in place\n", i);
            ok = false;
        }
        check_shape(pool, &g, s->bias, s->res, -20 - i);
        if (i < 2) check_shape(NULL, &g, s->bias, s->res, -30 - i); /* no pool: the taps' tables per task */
    }
    inf__conv2d g = {.n = 1, .group = 1, .cg = 32, .mg = 32, .c = 32, .m = 32, .ih = 16, .iw = 16, .oh = 16,
                     .ow = 16, .kh = 3, .kw = 3, .sh = 1, .sw = 1, .dh = 1, .dw = 1, .pt = 1, .pl = 1};
    if (wide && inf__conv2d_direct_avx512_in_place(&g, 1)) {
        printf("in-place rule: takes a 3x3/1 padded on the right and below\n");
        ok = false;
    }
    g.ih = g.iw = 32, g.sh = g.sw = 2, g.m = g.mg = 64, g.oh = g.ow = 16; /* the bench CNN's 32 -> 64 3x3/2 */
    if (wide && (!inf__conv2d_direct_avx512_in_place(&g, 1) || !inf__conv2d_direct_avx512_in_place(&g, 2))) {
        printf("in-place rule: the 32 -> 64 layer (ow 16) not in place at 1 and 2 threads\n");
        ok = false;
    }
    g.c = g.cg = 64, g.m = g.mg = 128, g.ih = g.iw = 16, g.oh = g.ow = 8; /* its 64 -> 128 one: at 1 thread only */
    if (wide && (!inf__conv2d_direct_avx512_in_place(&g, 1) || inf__conv2d_direct_avx512_in_place(&g, 2))) {
        printf("in-place rule: the 64 -> 128 layer (ow 8) not in place at 1 thread only\n");
        ok = false;
    }
    if (!ok) n_failed++;
}

static void cases(inf__pool *pool) {
    for (int i = 0; i < 150; i++) one_case(pool, i);
    front_end_cases(pool);
    multi_pass_case(pool);
    stem_cases(pool);
    strided_stem_cases(pool);
    wide_rule_cases(pool);
    in_place_cases(pool);
}

int main(int argc, char **argv) {
    int skip = kernel_paths_begin(argc, argv, "test_conv_avx2");
    if (skip) return skip;
    int st = conv_test_on_pools(cases);
    if (st) return st < 0 ? 77 : st; /* 77: no AVX2/FMA, nothing ran (ctest SKIP_RETURN_CODE) */
    printf("%d passed, %d failed (%d with the rows kernel, %d with the AVX-512 siblings)\n", n_passed, n_failed, n_rows,
           n_wide);
    if (n_rows < 40) {
        printf("too few cases in the rows kernel's range (%d)\n", n_rows);
        return 1;
    }
    return n_failed ? 1 : 0;
}

#else /* not x86-64: no AVX2 kernels */

CONV_TEST_NOT_X86_MAIN

#endif
