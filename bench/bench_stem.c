/*
 * bench_stem.c -- the AVX2 convolution variants side by side on network
 * stems (1-4 input channels, 3x3 / 5x5 / 7x7, stride 1 and 2): the data
 * behind the shallow-K part of inf__conv2d_avx2_variant's rule
 * (src/ops/ref/conv.c, docs/convolutions.md).  bench_conv does the same
 * for the other layers of its networks.
 *
 *   bench_stem [--batch N] [--threads N] [--rounds N] [--shape I] [--variant NAME] [--iters N]
 *
 * Variants: panel (conv_avx2.c), direct (conv_direct_avx2.c), rows
 * (conv_rows_avx2.c, stride 1 along the row only); "*" marks the one the
 * rule picks.  Each round times every variant of a shape once, the order
 * rotating per round; the table shows the median microseconds per call and
 * the ratio to the picked one.  With --variant and --shape it runs just
 * that, --iters times (for valgrind --tool=callgrind).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/core.h"
#include "ops/ops.h"
#include "bench_timing.h"

#if defined(__x86_64__)

typedef struct stem_shape {
    const char *what;
    int64_t c, m, ih, iw, k, s, pad;
} stem_shape;

static const stem_shape SHAPES[] = {
    {"mobile 3x3/2 3->32 @96", 3, 32, 96, 96, 3, 2, 1},
    {"mbnet 3x3/2 3->32 @224", 3, 32, 224, 224, 3, 2, 1},
    {"3x3/2 3->16 @128", 3, 16, 128, 128, 3, 2, 1},
    {"3x3/2 1->32 @96", 1, 32, 96, 96, 3, 2, 1},
    {"3x3/2 4->32 @96", 4, 32, 96, 96, 3, 2, 1},
    {"3x3/2 3->64 @64", 3, 64, 64, 64, 3, 2, 1},
    {"5x5/2 3->32 @96", 3, 32, 96, 96, 5, 2, 2},
    {"5x5/2 1->16 @64", 1, 16, 64, 64, 5, 2, 2},
    {"resnet 7x7/2 3->64 @224", 3, 64, 224, 224, 7, 2, 3},
    {"7x7/2 1->32 @128", 1, 32, 128, 128, 7, 2, 3},
    {"cnn 3x3 3->32 @64", 3, 32, 64, 64, 3, 1, 1},
    {"gray 3x3 1->32 @64", 1, 32, 64, 64, 3, 1, 1},
    {"3x3 4->16 @64", 4, 16, 64, 64, 3, 1, 1},
    {"5x5 1->32 @28", 1, 32, 28, 28, 5, 1, 2},
    {"5x5 3->32 @64", 3, 32, 64, 64, 5, 1, 2},
    {"7x7 3->64 @112", 3, 64, 112, 112, 7, 1, 3},
};
enum { N_SHAPES = sizeof SHAPES / sizeof SHAPES[0] };

enum { V_PANEL, V_DIRECT, V_ROWS, N_VARIANTS };
static const char *const VNAMES[N_VARIANTS] = {"panel", "direct", "rows"};

typedef struct stem_case {
    inf__conv2d g;
    inf__pool *pool;
    float *x, *w, *b, *y, *wp[N_VARIANTS], *scratch;
    bool ok[N_VARIANTS];
} stem_case;

static void *alloc32(int64_t floats) { return aligned_alloc(32, (size_t)(floats + 8) / 8 * 32); }

static float rnd(uint32_t *r) { return (float)((*r = *r * 1664525u + 1013904223u) >> 8) / 16777216.0f - 0.5f; }

/* Packs W for variant v; false when v does not take g (rows: stride 1 along the row, K <= 256). */
static bool prepare(stem_case *sc, int v) {
    const inf__conv2d *g = &sc->g;
    int64_t kdim = g->cg * g->kh * g->kw;
    if (v == V_ROWS && (g->sw != 1 || kdim > 256)) return false;
    int64_t wf = v == V_DIRECT ? inf__conv2d_direct_w_floats(g->m, 1, kdim)
                 : v == V_ROWS ? inf__conv2d_rows_w_floats(g->m, 1, kdim)
                               : inf__conv2d_packed_w_floats(g->m, 1, kdim);
    if (!(sc->wp[v] = alloc32(wf))) return false;
    if (v == V_DIRECT) inf__conv2d_direct_pack_w(g->m, 1, kdim, sc->w, sc->wp[v]);
    else if (v == V_ROWS) inf__conv2d_rows_pack_w(g->m, 1, kdim, sc->w, sc->wp[v]);
    else inf__conv2d_pack_w(g->m, 1, kdim, sc->w, sc->wp[v]);
    return true;
}

static bool case_new(stem_case *sc, const stem_shape *s, int64_t batch, inf__pool *pool) {
    memset(sc, 0, sizeof *sc);
    inf__conv2d g = {.n = batch, .c = s->c, .m = s->m, .group = 1, .cg = s->c, .mg = s->m, .ih = s->ih,
                     .iw = s->iw, .kh = s->k, .kw = s->k, .sh = s->s, .sw = s->s, .dh = 1, .dw = 1, .pt = s->pad,
                     .pl = s->pad, .act = INF_EPILOGUE_CLIP, .lo = 0.0f, .hi = 6.0f};
    g.oh = (g.ih + 2 * g.pt - g.kh) / g.sh + 1, g.ow = (g.iw + 2 * g.pl - g.kw) / g.sw + 1;
    sc->g = g, sc->pool = pool;
    int64_t nx = g.n * g.c * g.ih * g.iw, nw = g.m * g.c * g.kh * g.kw, ny = g.n * g.m * g.oh * g.ow;
    int64_t sf = inf__conv2d_direct_scratch_floats(&g);
    sc->x = alloc32(nx), sc->w = alloc32(nw), sc->b = alloc32(g.m), sc->y = alloc32(ny), sc->scratch = alloc32(sf);
    if (!sc->x || !sc->w || !sc->b || !sc->y || !sc->scratch) return false;
    uint32_t r = 12345;
    for (int64_t i = 0; i < nx; i++) sc->x[i] = rnd(&r);
    for (int64_t i = 0; i < nw; i++) sc->w[i] = rnd(&r);
    for (int64_t i = 0; i < g.m; i++) sc->b[i] = 0.1f;
    for (int v = 0; v < N_VARIANTS; v++) sc->ok[v] = prepare(sc, v);
    return true;
}

static void case_free(stem_case *sc) {
    free(sc->x), free(sc->w), free(sc->b), free(sc->y), free(sc->scratch);
    for (int v = 0; v < N_VARIANTS; v++) free(sc->wp[v]);
}

static void run_variant(const void *ctx, int v) {
    const stem_case *sc = ctx;
    const inf__conv2d *g = &sc->g;
    if (v == V_PANEL) inf__conv2d_f32_avx2(sc->pool, g, sc->x, sc->wp[v], sc->b, NULL, sc->y);
    else if (v == V_DIRECT) inf__conv2d_direct_f32_avx2(sc->pool, g, sc->x, sc->wp[v], sc->b, NULL, sc->scratch, sc->y);
    else inf__conv2d_rows_f32_avx2(sc->pool, g, sc->x, sc->wp[v], sc->b, NULL, sc->scratch, sc->y);
}

/* The variant Conv picks for g, as this file numbers them (Winograd never takes a stem). */
static int picked(const inf__conv2d *g) {
    int v = inf__conv2d_avx2_variant(g);
    return v == INF_CONV2D_DIRECT ? V_DIRECT : v == INF_CONV2D_ROWS ? V_ROWS : V_PANEL;
}

static void bench_shape(const stem_shape *s, int64_t batch, inf__pool *pool, int rounds) {
    stem_case sc;
    if (!case_new(&sc, s, batch, pool)) {
        printf("%-26s out of memory\n", s->what);
        case_free(&sc);
        return;
    }
    double flop = 2.0 * sc.g.n * sc.g.m * sc.g.oh * sc.g.ow * sc.g.cg * sc.g.kh * sc.g.kw;
    double t[N_VARIANTS][BENCH_MAX_ROUNDS];
    rounds = bench_rounds(N_VARIANTS, sc.ok, rounds, bench_inner_calls(flop), run_variant, &sc, t);
    int pick = picked(&sc.g);
    double base = t[pick][rounds / 2];
    printf("%-26s", s->what);
    for (int v = 0; v < N_VARIANTS; v++) {
        if (!sc.ok[v]) printf(" %18s ", "-");
        else printf(" %9.1f (%4.2f)%c", t[v][rounds / 2], t[v][rounds / 2] / base, v == pick ? '*' : ' ');
    }
    printf("\n");
    case_free(&sc);
}

int main(int argc, char **argv) {
    int64_t batch = 1;
    int threads = 1, rounds = 9, shape = -1, iters = 10, variant = -1;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--batch")) batch = atoll(argv[i + 1]);
        else if (!strcmp(argv[i], "--threads")) threads = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--rounds")) rounds = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--shape")) shape = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--iters")) iters = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--variant")) {
            for (int v = 0; v < N_VARIANTS; v++)
                if (!strcmp(argv[i + 1], VNAMES[v])) variant = v;
            if (variant < 0) fprintf(stderr, "bench_stem: unknown variant %s\n", argv[i + 1]);
            if (variant < 0) return 2;
        } else {
            fprintf(stderr, "bench_stem: unknown option %s\n", argv[i]);
            return 2;
        }
    }
    if (!inf__cpu_has_avx2_fma()) {
        printf("bench_stem: no AVX2/FMA on this CPU\n");
        return 0;
    }
    inf__pool *pool = NULL;
    if (batch < 1 || threads < 1 || rounds < 1 || shape >= N_SHAPES || (variant >= 0 && shape < 0) ||
        inf__pool_new(threads, &pool) != INF_OK) {
        fprintf(stderr, "bench_stem: bad --batch/--threads/--rounds/--shape or no thread pool\n");
        return 2;
    }
    int rc = 0;
    if (variant >= 0) { /* one variant of one shape, for callgrind */
        stem_case sc;
        if (!case_new(&sc, &SHAPES[shape], batch, pool) || !sc.ok[variant]) {
            fprintf(stderr, "bench_stem: --variant %s does not run shape %d\n", VNAMES[variant], shape);
            rc = 2;
        } else {
            for (int i = 0; i < iters; i++) run_variant(&sc, variant);
        }
        case_free(&sc);
    } else {
        printf("batch %lld, %d thread(s), median us per call (ratio to the picked *) over %d rounds\n%-26s",
               (long long)batch, threads, rounds, "shape");
        for (int v = 0; v < N_VARIANTS; v++) printf(" %18s ", VNAMES[v]);
        printf("\n");
        for (int s = 0; s < N_SHAPES; s++)
            if (shape < 0 || s == shape) bench_shape(&SHAPES[s], batch, pool, rounds);
    }
    inf__pool_free(pool);
    return rc;
}

#else

int main(void) {
    printf("bench_stem: x86-64 only\n");
    return 0;
}

#endif
