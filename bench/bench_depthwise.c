/*
 * bench_depthwise.c -- the AVX2 depthwise convolution
 * (inf__conv2d_depthwise_f32_avx2, ops/x86/depthwise_avx2.c) per shape:
 * the six depthwise layers of bench/extra's mobile model (3x3, bias,
 * ReLU6 fused as Clip), a few other MobileNet shapes, and small ones whose
 * X and Y stay in L2 (the kernel's own speed, without cache misses).
 *
 *   bench_depthwise [--batch N] [--threads N] [--rounds N] [--shape I] [--iters N] [--general]
 *
 * Prints per shape the median microseconds per call over --rounds rounds
 * (min and max too), and GMAC/s.  With --iters it runs --shape that many
 * times and prints nothing (for valgrind --tool=callgrind).  --general
 * passes no scratch (the kernel's unbuffered plane-at-a-time path).  To
 * compare two builds of the kernel, link this file against each and run
 * the binaries alternately.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/core.h"
#include "ops/ops.h"
#include "bench_timing.h"

#if defined(__x86_64__)

typedef struct dw_shape {
    const char *what;
    int64_t c, ih, iw, s, k; /* k: the kernel's size (pad k / 2); 0 means 3 */
} dw_shape;

static const dw_shape SHAPES[] = {
    {"mobile dw 32 @48x48 s1", 32, 48, 48, 1, 3},
    {"mobile dw 64 @48x48 s2", 64, 48, 48, 2, 3},
    {"mobile dw 128 @24x24 s1", 128, 24, 24, 1, 3},
    {"mobile dw 128 @24x24 s2", 128, 24, 24, 2, 3},
    {"mobile dw 256 @12x12 s1", 256, 12, 12, 1, 3},
    {"mobile dw 256 @12x12 s2", 256, 12, 12, 2, 3},
    {"mbv1 dw 32 @112x112 s1", 32, 112, 112, 1, 3},
    {"mbv1 dw 512 @14x14 s1", 512, 14, 14, 1, 3},
    {"mbv1 dw 1024 @7x7 s1", 1024, 7, 7, 1, 3},
    /* L2-resident (X and Y under 200 KB): the kernel without the misses */
    {"hot dw 8 @48x48 s1", 8, 48, 48, 1, 3},
    {"hot dw 32 @24x24 s2", 32, 24, 24, 2, 3},
    {"hot dw 64 @12x12 s1", 64, 12, 12, 1, 3},
    /* EfficientNet-B0's 5x5s at stride 1 (bench/extra effnetb0, 224x224) */
    {"effb0 dw5 240 @28x28 s1", 240, 28, 28, 1, 5},
    {"effb0 dw5 672 @14x14 s1", 672, 14, 14, 1, 5},
    {"effb0 dw5 1152 @7x7 s1", 1152, 7, 7, 1, 5},
    {"effb0 dw5 240 @28x28 s2", 240, 28, 28, 2, 5},
    {"effb0 dw3 144 @56x56 s1", 144, 56, 56, 1, 3},
    /* torchvision MobileNetV2's strided 3x3s and its 7x7 one, EfficientNet-B0's strided 5x5 (224x224) */
    {"mnv2 dw 96 @112x112 s2", 96, 112, 112, 2, 3},
    {"mnv2 dw 144 @56x56 s2", 144, 56, 56, 2, 3},
    {"mnv2 dw 192 @28x28 s2", 192, 28, 28, 2, 3},
    {"mnv2 dw 576 @14x14 s2", 576, 14, 14, 2, 3},
    {"mnv2 dw 960 @7x7 s1", 960, 7, 7, 1, 3},
    {"effb0 dw5 144 @56x56 s2", 144, 56, 56, 2, 5},
    {"effb0 dw5 672 @14x14 s2", 672, 14, 14, 2, 5},
};
enum { N_SHAPES = sizeof SHAPES / sizeof SHAPES[0] };

typedef struct dw_case {
    inf__conv2d g;
    float *x, *w, *b, *y, *scratch;
} dw_case;

static void *alloc32(int64_t floats) { return aligned_alloc(32, (size_t)(floats + 8) / 8 * 32); }

static float rnd(uint32_t *r) { return (float)((*r = *r * 1664525u + 1013904223u) >> 8) / 16777216.0f - 0.5f; }

static bool case_new(dw_case *dc, const dw_shape *s, int64_t batch, int threads, bool general) {
    memset(dc, 0, sizeof *dc);
    int64_t k = s->k ? s->k : 3, kk = k * k;
    inf__conv2d g = {.n = batch,
                     .c = s->c,
                     .m = s->c,
                     .group = s->c,
                     .cg = 1,
                     .mg = 1,
                     .ih = s->ih,
                     .iw = s->iw,
                     .kh = k,
                     .kw = k,
                     .sh = s->s,
                     .sw = s->s,
                     .dh = 1,
                     .dw = 1,
                     .pt = k / 2,
                     .pl = k / 2,
                     .act = INF_EPILOGUE_CLIP,
                     .lo = 0.0f,
                     .hi = 6.0f};
    g.oh = (g.ih - 1) / g.sh + 1, g.ow = (g.iw - 1) / g.sw + 1;
    dc->g = g;
    int64_t nx = g.n * g.c * g.ih * g.iw, ny = g.n * g.c * g.oh * g.ow;
    int64_t sf = general ? 0 : inf__conv2d_depthwise_scratch_floats(&g, threads);
    dc->x = alloc32(nx), dc->w = alloc32(g.c * kk), dc->b = alloc32(g.c), dc->y = alloc32(ny);
    dc->scratch = sf > 0 ? alloc32(sf) : NULL;
    if (!dc->x || !dc->w || !dc->b || !dc->y || (sf > 0 && !dc->scratch)) return false;
    uint32_t r = 12345;
    for (int64_t i = 0; i < nx; i++) dc->x[i] = rnd(&r);
    for (int64_t i = 0; i < g.c * kk; i++) dc->w[i] = rnd(&r);
    for (int64_t i = 0; i < g.c; i++) dc->b[i] = 0.1f;
    return true;
}

static void case_free(dw_case *dc) { free(dc->x), free(dc->w), free(dc->b), free(dc->y), free(dc->scratch); }

static void run_case(const dw_case *dc, inf__pool *pool) {
    inf__conv2d_depthwise_f32_avx2(pool, &dc->g, dc->x, dc->w, dc->b, NULL, dc->scratch, dc->y);
}

/* One row: median (min, max) us per call over `rounds` rounds. */
static void bench_shape(const dw_shape *s, int64_t batch, inf__pool *pool, int threads, int rounds, bool general) {
    dw_case dc;
    if (!case_new(&dc, s, batch, threads, general)) {
        printf("%-26s out of memory\n", s->what);
        case_free(&dc);
        return;
    }
    double macs = (double)dc.g.kh * dc.g.kw * dc.g.n * dc.g.c * dc.g.oh * dc.g.ow, t[64];
    int inner = macs < 4e6 ? (int)(4e6 / macs) + 1 : 1;
    if (rounds > 64) rounds = 64;
    run_case(&dc, pool); /* warm */
    for (int r = 0; r < rounds; r++) {
        double t0 = bench_now_us();
        for (int k = 0; k < inner; k++) run_case(&dc, pool);
        t[r] = (bench_now_us() - t0) / inner;
    }
    qsort(t, (size_t)rounds, sizeof(double), bench_cmp_double);
    double med = t[rounds / 2];
    printf("%-26s %9.1f us  (%.1f-%.1f)  %5.1f GMAC/s\n", s->what, med, t[0], t[rounds - 1], macs / med * 1e-3);
    case_free(&dc);
}

int main(int argc, char **argv) {
    int64_t batch = 1;
    int threads = 1, rounds = 9, shape = -1, iters = 0;
    bool general = false;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--general")) {
            general = true;
            continue;
        }
        if (i + 1 >= argc) {
            fprintf(stderr, "bench_depthwise: %s needs a value\n", argv[i]);
            return 2;
        }
        if (!strcmp(argv[i], "--batch")) batch = atoll(argv[++i]);
        else if (!strcmp(argv[i], "--threads")) threads = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--rounds")) rounds = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--shape")) shape = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--iters")) iters = atoi(argv[++i]);
        else {
            fprintf(stderr, "bench_depthwise: unknown option %s\n", argv[i]);
            return 2;
        }
    }
    if (!inf__cpu_has_avx2_fma()) {
        printf("bench_depthwise: no AVX2/FMA on this CPU\n");
        return 0;
    }
    inf__pool *pool = NULL;
    if (batch < 1 || threads < 1 || rounds < 1 || shape >= N_SHAPES || (iters > 0 && shape < 0) ||
        inf__pool_new(threads, &pool) != INF_OK) {
        fprintf(stderr, "bench_depthwise: bad --batch/--threads/--rounds/--shape/--iters or no thread pool\n");
        return 2;
    }
    int rc = 0;
    if (iters > 0) { /* one shape, for callgrind */
        dw_case dc;
        if (!case_new(&dc, &SHAPES[shape], batch, threads, general)) rc = 2;
        else
            for (int i = 0; i < iters; i++) run_case(&dc, pool);
        case_free(&dc);
    } else {
        printf("batch %lld, %d thread(s), %s path, median (min-max) us per call over %d rounds\n", (long long)batch,
               threads, general ? "general" : "buffered", rounds);
        for (int s = 0; s < N_SHAPES; s++)
            if (shape < 0 || s == shape) bench_shape(&SHAPES[s], batch, pool, threads, rounds, general);
    }
    inf__pool_free(pool);
    return rc;
}

#else

int main(void) {
    printf("bench_depthwise: x86-64 only\n");
    return 0;
}

#endif
