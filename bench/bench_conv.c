/*
 * bench_conv.c -- the AVX2 convolution variants side by side, per shape: the
 * data behind avx2_variant's selection rule (src/ops/ref/conv.c,
 * docs/convolutions.md).
 *
 *   bench_conv [--batch N] [--threads N] [--rounds N] [--shape I] [--variant NAME] [--iters N]
 *              [--quantile Q]
 *
 * Shapes: the benchmark CNN's convolutions (bench/models/cnn.onnx), those
 * of bench/extra's Conv1d networks (gen_conv1d_models.py) and stride-1 3x3s
 * across the Winograd rule's range (--shape picks one, by its row number
 * from 0).  Variants: panel
 * (conv_avx2.c), direct (conv_direct_avx2.c), rows (conv_rows_avx2.c, stride
 * 1 along the row, K <= 256), wino4 / wino2 (conv_winograd_avx2.c, 3x3
 * stride 1 only), winos2 (its F(2x2,3x3) at stride 2, 3x3/2 only),
 * pointwise (pointwise_avx2.c, 1x1 stride 1 unpadded
 * only, W as given), and on an AVX-512 CPU the AVX-512 siblings direct512,
 * rows512, wino4/512, wino2/512, winos2/512 (conv_*_avx512.c, same packing); "*" marks
 * the one Conv picks (pointwise when it fits, else avx2_variant's, on
 * path avx512 its sibling).  Each round times
 * every variant of a shape once (the order rotating per round); the table
 * shows the median microseconds per call and the ratio to the picked one
 * (--quantile Q: the Q-quantile over the rounds instead, e.g. 0.1 on a
 * machine shared with other jobs, where the low rounds are the ones no
 * other process interrupted -- what 2 threads need to be compared).
 * With --variant (and --shape) it runs just that, --iters times, for
 * valgrind --tool=callgrind instruction counts.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_timing.h"
#include "core/core.h"
#include "core/cpu.h"
#include "ops/ops.h"

#if defined(__x86_64__)

typedef struct conv_shape {
    const char *what;
    int64_t c, m, ih, iw, kh, kw, s, pad, dil;
} conv_shape;

static const conv_shape SHAPES[] = {
    {"cnn stem 3x3 3->32 @64x64", 3, 32, 64, 64, 3, 3, 1, 1, 1},
    {"cnn 3x3 32->32 @32x32", 32, 32, 32, 32, 3, 3, 1, 1, 1},
    {"cnn 3x3/2 32->64 @32x32", 32, 64, 32, 32, 3, 3, 2, 1, 1},
    {"cnn 1x1/2 32->64 @32x32", 32, 64, 32, 32, 1, 1, 2, 0, 1},
    {"cnn 3x3 64->64 @16x16", 64, 64, 16, 16, 3, 3, 1, 1, 1},
    {"cnn 3x3/2 64->128 @16x16", 64, 128, 16, 16, 3, 3, 2, 1, 1},
    {"cnn 1x1/2 64->128 @16x16", 64, 128, 16, 16, 1, 1, 2, 0, 1},
    {"cnn 3x3 128->128 @8x8", 128, 128, 8, 8, 3, 3, 1, 1, 1},
    {"text k5 40->64 L256", 40, 64, 1, 256, 1, 5, 1, 2, 1},
    {"text k3 64->64 L256", 64, 64, 1, 256, 1, 3, 1, 1, 1},
    {"text k3/2 64->128 L256", 64, 128, 1, 256, 1, 3, 2, 1, 1},
    {"text k3 d2 128->128 L128", 128, 128, 1, 128, 1, 3, 1, 2, 2},
    {"text k3 128->128 L128", 128, 128, 1, 128, 1, 3, 1, 1, 1},
    {"m5 k80/16 1->32 L8000", 1, 32, 1, 8000, 1, 80, 16, 0, 1},
    {"m5 k3 32->32 L124", 32, 32, 1, 124, 1, 3, 1, 0, 1},
    {"m5 k3 32->64 L30", 32, 64, 1, 30, 1, 3, 1, 0, 1},
    /* the Winograd rule's range (ResNet-18/34 stages, edges of the rule) */
    {"3x3 16->16 @32x32", 16, 16, 32, 32, 3, 3, 1, 1, 1},
    {"3x3 16->64 @32x32", 16, 64, 32, 32, 3, 3, 1, 1, 1},
    {"3x3 64->64 @56x56", 64, 64, 56, 56, 3, 3, 1, 1, 1},
    {"3x3 96->96 @16x16", 96, 96, 16, 16, 3, 3, 1, 1, 1},
    {"3x3 128->128 @28x28", 128, 128, 28, 28, 3, 3, 1, 1, 1},
    {"3x3 256->256 @14x14", 256, 256, 14, 14, 3, 3, 1, 1, 1},
    {"3x3 512->512 @7x7", 512, 512, 7, 7, 3, 3, 1, 1, 1},
    {"3x3 64->64 @4x4", 64, 64, 4, 4, 3, 3, 1, 1, 1},
    /* bench/extra mobile: its stem and its six pointwise 1x1s */
    {"mobile stem 3x3/2 3->32 @96x96", 3, 32, 96, 96, 3, 3, 2, 1, 1},
    {"mobile pw 32->64 @48x48", 32, 64, 48, 48, 1, 1, 1, 0, 1},
    {"mobile pw 64->128 @24x24", 64, 128, 24, 24, 1, 1, 1, 0, 1},
    {"mobile pw 128->128 @24x24", 128, 128, 24, 24, 1, 1, 1, 0, 1},
    {"mobile pw 128->256 @12x12", 128, 256, 12, 12, 1, 1, 1, 0, 1},
    {"mobile pw 256->256 @12x12", 256, 256, 12, 12, 1, 1, 1, 0, 1},
    {"mobile pw 256->512 @6x6", 256, 512, 6, 6, 1, 1, 1, 0, 1},
    {"3x3 256->256 @2x2", 256, 256, 2, 2, 3, 3, 1, 1, 1},
    /* ResNet-18/34's 3x3/2 downsampling layers (the stride-2 Winograd's rule) */
    {"3x3/2 64->128 @56x56", 64, 128, 56, 56, 3, 3, 2, 1, 1},
    {"3x3/2 128->256 @28x28", 128, 256, 28, 28, 3, 3, 2, 1, 1},
    {"3x3/2 256->512 @14x14", 256, 512, 14, 14, 3, 3, 2, 1, 1},
    {"3x3/2 16->32 @32x32", 16, 32, 32, 32, 3, 3, 2, 1, 1},
};
enum { N_SHAPES = sizeof SHAPES / sizeof SHAPES[0] };

enum {
    V_PANEL,
    V_DIRECT,
    V_ROWS,
    V_WINO4,
    V_WINO2,
    V_POINTWISE,
    V_DIRECT512,
    V_ROWS512,
    V_WINO4_512,
    V_WINO2_512,
    V_WINOS2,
    V_WINOS2_512,
    N_VARIANTS
};
static const char *const VNAMES[N_VARIANTS] = {"panel",     "direct",    "rows",      "wino4",
                                               "wino2",     "pointwise", "direct512", "rows512",
                                               "wino4/512", "wino2/512", "winos2",    "winos2/512"};

typedef struct variant_buf {
    float *wp, *scratch;
} variant_buf;

typedef struct conv_case {
    inf__conv2d g;
    inf__pool *pool;
    float *x, *w, *b, *y;
    variant_buf v[N_VARIANTS];
    bool ok[N_VARIANTS];
} conv_case;

static inf__conv2d geometry(const conv_shape *s, int64_t batch) {
    inf__conv2d g = {.n = batch, .c = s->c, .m = s->m, .group = 1, .cg = s->c, .mg = s->m, .ih = s->ih,
                     .iw = s->iw, .kh = s->kh, .kw = s->kw, .sh = s->kh > 1 ? s->s : 1, .sw = s->s,
                     .dh = s->kh > 1 ? s->dil : 1, .dw = s->dil, .pt = s->kh > 1 ? s->pad : 0, .pl = s->pad,
                     .act = INF_EPILOGUE_RELU};
    g.oh = (g.ih + 2 * g.pt - (g.kh - 1) * g.dh - 1) / g.sh + 1;
    g.ow = (g.iw + 2 * g.pl - (g.kw - 1) * g.dw - 1) / g.sw + 1;
    return g;
}

static void *alloc32(int64_t floats) { return aligned_alloc(32, (size_t)(floats + 8) / 8 * 32); }

/* The Winograd tile of variant v, 0 for the others. */
static int wino_tile_of(int v) {
    if (v == V_WINO4 || v == V_WINO4_512)
        return 4;
    if (v == V_WINO2 || v == V_WINO2_512)
        return 2;
    return v == V_WINOS2 || v == V_WINOS2_512 ? INF_WINOGRAD_S2 : 0;
}

/* Packs W and sizes the scratch of variant v; false when v does not take g. */
static bool prepare_variant(conv_case *cc, int v, int threads) {
    const inf__conv2d *g = &cc->g;
    int64_t kdim = g->cg * g->kh * g->kw, wf, sf;
    int tile = wino_tile_of(v);
    if ((v == V_WINO4_512 || v == V_WINO2_512 || v == V_WINOS2_512) && !inf__cpu_has_avx512())
        return false;
    if (tile == INF_WINOGRAD_S2 ? !inf__conv2d_winograd_s2_fits(g)
                                : tile && (g->sh != 1 || !inf__conv2d_winograd_tile(g)))
        return false;
    if (v == V_POINTWISE) return inf__conv2d_pointwise_fits(g); /* W as given */
    if ((v == V_DIRECT512 || v == V_ROWS512) && !inf__cpu_has_avx512()) return false;
    int kind = v == V_DIRECT512 ? V_DIRECT : v == V_ROWS512 ? V_ROWS : v; /* the same packing and scratch */
    if (kind == V_ROWS && (g->sw != 1 || kdim > 256)) return false;
    if (tile) wf = inf__conv2d_winograd_w_floats(tile, g->cg, g->m), sf = inf__conv2d_winograd_scratch_floats(tile, g, threads);
    else if (kind == V_DIRECT)
        wf = inf__conv2d_direct_w_floats(g->m, 1, kdim), sf = inf__conv2d_direct_scratch_floats(g);
    else if (kind == V_ROWS)
        wf = inf__conv2d_rows_w_floats(g->m, 1, kdim), sf = inf__conv2d_direct_scratch_floats(g);
    else wf = inf__conv2d_packed_w_floats(g->m, 1, kdim), sf = 0;
    cc->v[v].wp = alloc32(wf), cc->v[v].scratch = alloc32(sf);
    if (!cc->v[v].wp || !cc->v[v].scratch) return false;
    if (tile) inf__conv2d_winograd_pack_w(tile, g->cg, g->m, cc->w, cc->v[v].wp);
    else if (kind == V_DIRECT)
        inf__conv2d_direct_pack_w(g->m, 1, kdim, cc->w, cc->v[v].wp);
    else if (kind == V_ROWS)
        inf__conv2d_rows_pack_w(g->m, 1, kdim, cc->w, cc->v[v].wp);
    else inf__conv2d_pack_w(g->m, 1, kdim, cc->w, cc->v[v].wp);
    return true;
}

static void run_variant(const void *ctx, int v) {
    const conv_case *cc = ctx;
    const inf__conv2d *g = &cc->g;
    const variant_buf *b = &cc->v[v];
    if (v == V_PANEL) inf__conv2d_f32_avx2(cc->pool, g, cc->x, b->wp, cc->b, NULL, cc->y);
    else if (v == V_DIRECT) inf__conv2d_direct_f32_avx2(cc->pool, g, cc->x, b->wp, cc->b, NULL, b->scratch, cc->y);
    else if (v == V_ROWS) inf__conv2d_rows_f32_avx2(cc->pool, g, cc->x, b->wp, cc->b, NULL, b->scratch, cc->y);
    else if (v == V_DIRECT512)
        inf__conv2d_direct_f32_avx512(cc->pool, g, cc->x, b->wp, cc->b, NULL, b->scratch, cc->y);
    else if (v == V_ROWS512)
        inf__conv2d_rows_f32_avx512(cc->pool, g, cc->x, b->wp, cc->b, NULL, b->scratch, cc->y);
    else if (v == V_POINTWISE) inf__conv2d_pointwise_f32_avx2(cc->pool, g, cc->x, cc->w, cc->b, NULL, cc->y);
    else if (v == V_WINO4_512 || v == V_WINO2_512 || v == V_WINOS2_512)
        inf__conv2d_winograd_f32_avx512(cc->pool, wino_tile_of(v), g, cc->x, b->wp, cc->b, NULL, b->scratch, cc->y);
    else
        inf__conv2d_winograd_f32_avx2(cc->pool, wino_tile_of(v), g, cc->x, b->wp, cc->b, NULL, b->scratch, cc->y);
}

/* The variant Conv picks for g (ops/ref/conv.c: pointwise when it fits,
 * else inf__conv2d_avx2_variant), as this file numbers them. */
static int picked(const inf__conv2d *g) {
    if (inf__conv2d_pointwise_fits(g) && !inf__conv2d_direct_wide(g)) return V_POINTWISE;
    switch (inf__conv2d_avx2_variant(g)) {
    case INF_CONV2D_WINO4:
        return inf__cpu_has_avx512() ? V_WINO4_512 : V_WINO4;
    case INF_CONV2D_WINO2:
        return inf__cpu_has_avx512() ? V_WINO2_512 : V_WINO2;
    case INF_CONV2D_WINO2S2:
        return inf__cpu_has_avx512() ? V_WINOS2_512 : V_WINOS2;
    case INF_CONV2D_DIRECT:
        return inf__cpu_has_avx512() ? V_DIRECT512 : V_DIRECT;
    case INF_CONV2D_ROWS:
        return inf__cpu_has_avx512() ? V_ROWS512 : V_ROWS;
    default: return V_PANEL;
    }
}

static bool case_new(conv_case *cc, const conv_shape *s, int64_t batch, inf__pool *pool, int threads) {
    memset(cc, 0, sizeof *cc);
    cc->g = geometry(s, batch), cc->pool = pool;
    const inf__conv2d *g = &cc->g;
    int64_t nx = g->n * g->c * g->ih * g->iw, nw = g->m * g->cg * g->kh * g->kw, ny = g->n * g->m * g->oh * g->ow;
    cc->x = alloc32(nx), cc->w = alloc32(nw), cc->b = alloc32(g->m), cc->y = alloc32(ny);
    if (!cc->x || !cc->w || !cc->b || !cc->y) return false;
    uint32_t r = 12345;
    for (int64_t i = 0; i < nx; i++) cc->x[i] = (float)((r = r * 1664525u + 1013904223u) >> 8) / 16777216.0f - 0.5f;
    for (int64_t i = 0; i < nw; i++) cc->w[i] = (float)((r = r * 1664525u + 1013904223u) >> 8) / 16777216.0f - 0.5f;
    for (int64_t i = 0; i < g->m; i++) cc->b[i] = 0.1f;
    for (int v = 0; v < N_VARIANTS; v++) cc->ok[v] = prepare_variant(cc, v, threads);
    return true;
}

static void case_free(conv_case *cc) {
    free(cc->x), free(cc->w), free(cc->b), free(cc->y);
    for (int v = 0; v < N_VARIANTS; v++) free(cc->v[v].wp), free(cc->v[v].scratch);
}

/* One table row: the q-quantile (median: 0.5) of the us per call of each
 * variant over `rounds` rounds. */
static void bench_shape(const conv_shape *s, int64_t batch, inf__pool *pool, int threads, int rounds, double q) {
    conv_case cc;
    if (!case_new(&cc, s, batch, pool, threads)) {
        printf("%-28s out of memory\n", s->what);
        case_free(&cc);
        return;
    }
    double flop = 2.0 * cc.g.n * cc.g.m * cc.g.oh * cc.g.ow * cc.g.cg * cc.g.kh * cc.g.kw;
    double t[N_VARIANTS][BENCH_MAX_ROUNDS];
    rounds = bench_rounds(N_VARIANTS, cc.ok, rounds, bench_inner_calls(flop), run_variant, &cc, t);
    int pick = picked(&cc.g), at = q == 0.5 ? rounds / 2 : (int)(q * (rounds - 1) + 0.5);
    double base = t[pick][at];
    printf("%-28s", s->what);
    for (int v = 0; v < N_VARIANTS; v++) {
        if (!cc.ok[v]) {
            printf(" %18s ", "-");
            continue;
        }
        double us = t[v][at];
        printf(" %9.1f (%4.2f)%c", us, us / base, v == pick ? '*' : ' ');
    }
    printf("\n");
    case_free(&cc);
}

static int find_variant(const char *name) {
    for (int v = 0; v < N_VARIANTS; v++)
        if (!strcmp(name, VNAMES[v])) return v;
    return -1;
}

int main(int argc, char **argv) {
    int64_t batch = 1;
    int threads = 1, rounds = 9, shape = -1, iters = 10;
    double quantile = 0.5;
    const char *variant = NULL;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--batch")) batch = atoll(argv[i + 1]);
        else if (!strcmp(argv[i], "--threads")) threads = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--rounds")) rounds = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--shape")) shape = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--variant")) variant = argv[i + 1];
        else if (!strcmp(argv[i], "--iters")) iters = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--quantile"))
            quantile = atof(argv[i + 1]);
        else {
            fprintf(stderr, "bench_conv: unknown option %s\n", argv[i]);
            return 2;
        }
    }
    if (!inf__cpu_has_avx2_fma()) {
        printf("bench_conv: no AVX2/FMA on this CPU\n");
        return 0;
    }
    inf__pool *pool = NULL;
    if (batch < 1 || threads < 1 || rounds < 1 || shape >= N_SHAPES || !(quantile >= 0 && quantile <= 1) ||
        inf__pool_new(threads, &pool) != INF_OK) {
        fprintf(stderr, "bench_conv: bad --batch/--threads/--rounds/--shape or no thread pool\n");
        return 2;
    }
    int rc = 0;
    if (variant) { /* one variant of one shape, for callgrind */
        int v = find_variant(variant);
        conv_case cc;
        if (v < 0 || shape < 0 || !case_new(&cc, &SHAPES[shape], batch, pool, threads) || !cc.ok[v]) {
            fprintf(stderr, "bench_conv: --variant %s does not run shape %d\n", variant, shape);
            rc = 2;
        } else {
            for (int i = 0; i < iters; i++) run_variant(&cc, v);
            case_free(&cc);
        }
    } else {
        printf("batch %lld, %d thread(s), %s us per call (ratio to the picked *) over %d rounds\n%-28s",
               (long long)batch, threads, quantile == 0.5 ? "median" : "quantile", rounds, "shape");
        for (int v = 0; v < N_VARIANTS; v++) printf(" %18s ", VNAMES[v]);
        printf("\n");
        for (int s = 0; s < N_SHAPES; s++)
            if (shape < 0 || s == shape) bench_shape(&SHAPES[s], batch, pool, threads, rounds, quantile);
    }
    inf__pool_free(pool);
    return rc;
}

#else

int main(void) {
    printf("bench_conv: x86-64 only\n");
    return 0;
}

#endif
