/*
 * bench_gemm.c -- GFLOP/s of the float32 GEMM paths on the shapes the
 * benchmark models produce: the reference loops (inf__ops_sgemm_ref), the
 * AVX2/FMA kernel (inf__ops_sgemm_avx2) and, when a libopenblas is
 * installed (Debian libopenblas0-pthread / -openmp / -serial), OpenBLAS's
 * cblas_sgemm loaded with dlopen, so nothing links against it.
 *
 *   bench_gemm [--threads N] [--openblas PATH] [--cpu-time]
 *
 * --cpu-time times with the calling thread's CPU clock (use with
 * --threads 1 on a shared machine).
 *
 * Then the benchmark CNN's convolutions at batch 1 through the fused
 * AVX2 conv kernel (inf__conv2d_f32_avx2, W packed as at load); compare
 * with the "cnn" GEMM rows above (the im2col + sgemm path without im2col).
 *
 * Each cell is the best of several timed repetitions after a warm-up.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/core.h"
#include "core/cpu.h"
#include "ops/ops.h"
#include "ops/x86/gemm_avx512.h"

typedef struct shape {
    const char *what;
    bool ta, tb;
    int64_t m, n, k;
} shape;

static const shape SHAPES[] = {
    {"mlp b1 fc2 (Gemm transB)", false, true, 1, 256, 256},
    {"mlp b64 fc1 (Gemm transB)", false, true, 64, 256, 64},
    {"mlp b64 fc2 (Gemm transB)", false, true, 64, 256, 256},
    {"mlp b64 fc3 (Gemm transB)", false, true, 64, 128, 256},
    {"mlp b64 fc4 (Gemm transB)", false, true, 64, 8, 128},
    {"mlp b4096 fc2 (Gemm transB)", false, true, 4096, 256, 256},
    {"cnn stem conv 3->32 @64x64", false, false, 32, 4096, 27},
    {"cnn block1 conv 32->32 @32x32", false, false, 32, 1024, 288},
    {"cnn block2 conv 64->64 @16x16", false, false, 64, 256, 576},
    {"cnn block3 conv 128->128 @8x8", false, false, 128, 64, 1152},
    {"bert b1 qkv/o proj", false, false, 128, 256, 256},
    {"bert b1 ffn1", false, false, 128, 1024, 256},
    {"bert b1 ffn2", false, false, 128, 256, 1024},
    {"bert b64 ffn1", false, false, 8192, 1024, 256},
    {"bert attention q.kT (per head)", false, false, 128, 128, 64},
    {"bert attention p.v (per head)", false, false, 128, 64, 128},
};

static double time_best(int reps, void (*fn)(void *), void *arg);

typedef struct conv_shape {
    const char *what;
    int64_t c, m, hw, k, s, pad;
} conv_shape;

static const conv_shape CONVS[] = {
    {"cnn stem 3x3 3->32 @64x64", 3, 32, 64, 3, 1, 1},
    {"cnn block1 3x3 32->32 @32x32", 32, 32, 32, 3, 1, 1},
    {"cnn down 3x3/2 32->64 @32x32", 32, 64, 32, 3, 2, 1},
    {"cnn block2 3x3 64->64 @16x16", 64, 64, 16, 3, 1, 1},
    {"cnn skip 1x1/2 32->64 @32x32", 32, 64, 32, 1, 2, 0},
    {"cnn down 3x3/2 64->128 @16x16", 64, 128, 16, 3, 2, 1},
    {"cnn block3 3x3 128->128 @8x8", 128, 128, 8, 3, 1, 1},
};

typedef struct conv_call {
    const inf__conv2d *g;
    inf__pool *pool;
    const float *x, *wp, *b;
    float *y;
    int inner;
} conv_call;

static void run_conv(void *arg) {
    conv_call *c = arg;
    for (int i = 0; i < c->inner; i++) inf__conv2d_f32_avx2(c->pool, c->g, c->x, c->wp, c->b, NULL, c->y);
}

static int bench_convs(inf__pool *pool) {
    printf("\n%-32s %10s\n", "conv (batch 1, fused kernel)", "GFLOP/s");
    for (size_t si = 0; si < sizeof CONVS / sizeof *CONVS; si++) {
        const conv_shape *s = &CONVS[si];
        int64_t o = (s->hw + 2 * s->pad - s->k) / s->s + 1, kdim = s->c * s->k * s->k;
        inf__conv2d g = {.n = 1, .c = s->c, .m = s->m, .group = 1, .cg = s->c, .mg = s->m, .ih = s->hw,
                         .iw = s->hw, .oh = o, .ow = o, .kh = s->k, .kw = s->k, .sh = s->s, .sw = s->s, .dh = 1,
                         .dw = 1, .pt = s->pad, .pl = s->pad, .act = INF_EPILOGUE_RELU};
        size_t nx = (size_t)(s->c * s->hw * s->hw), nw = (size_t)(s->m * kdim), ny = (size_t)(s->m * o * o);
        size_t nwp = (size_t)inf__conv2d_packed_w_floats(s->m, 1, kdim);
        float *x = malloc(nx * sizeof *x), *w = malloc(nw * sizeof *w), *wp = malloc(nwp * sizeof *wp);
        float *b = malloc((size_t)s->m * sizeof *b), *y = malloc(ny * sizeof *y);
        if (!x || !w || !wp || !b || !y) return 1;
        for (size_t i = 0; i < nx; i++) x[i] = (float)((i * 7919) % 1000) / 1000.0f - 0.5f;
        for (size_t i = 0; i < nw; i++) w[i] = (float)((i * 104729) % 1000) / 1000.0f - 0.5f;
        for (int64_t i = 0; i < s->m; i++) b[i] = 0.01f * (float)i;
        inf__conv2d_pack_w(s->m, 1, kdim, w, wp);
        double flop = 2.0 * (double)ny * (double)kdim;
        conv_call cl = {&g, pool, x, wp, b, y, flop < 1e7 ? (int)(1e7 / flop) + 1 : 1};
        double t = time_best(10, run_conv, &cl);
        printf("%-32s %10.1f\n", s->what, flop * cl.inner / t * 1e-9);
        free(x), free(w), free(wp), free(b), free(y);
    }
    return 0;
}

/* cblas_sgemm(order, transA, transB, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc) */
typedef void (*cblas_sgemm_fn)(int, int, int, int, int, int, float, const float *, int, const float *, int, float,
                               float *, int);
typedef void (*set_threads_fn)(int);

/* The core clock in GHz: a chain of dependent integer adds (one cycle
 * each on every x86-64 core since the Pentium Pro), best of 50 runs of 4 M (a run
 * that was preempted only reads slower),
 * so the FLOP/s can be set against the peak. */
static double clock_ghz(void) {
    double best = 0.0;
    for (int r = 0; r < 50; r++) {
        uint64_t x = 0;
        double t0 = inf__now_seconds();
        for (int i = 0; i < 1000000; i++)
            __asm__ volatile("add $1, %0\n\tadd $1, %0\n\tadd $1, %0\n\tadd $1, %0" : "+r"(x));
        double ghz = 4e6 / (inf__now_seconds() - t0) * 1e-9;
        if (ghz > best) best = ghz;
    }
    return best;
}

/* --cpu-time: the calling thread's CPU time instead of the wall clock
 * (with --threads 1 the whole product runs on it), so a machine shared with
 * other jobs reads close to a quiet one: time spent descheduled is not
 * counted (cache and SMT-sibling interference still are). */
static bool g_cpu_time;

static double now(void) {
    if (!g_cpu_time) return inf__now_seconds();
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static double time_best(int reps, void (*fn)(void *), void *arg) {
    fn(arg);
    double best = 1e30;
    for (int r = 0; r < reps; r++) {
        double t0 = now();
        fn(arg);
        double dt = now() - t0;
        if (dt < best) best = dt;
    }
    return best;
}

typedef struct call {
    const shape *s;
    inf__pool *pool;
    const float *a, *b;
    float *c;
    int path; /* 0 ref, 1 avx2, 2 openblas */
    cblas_sgemm_fn blas;
    int inner; /* calls per timing */
} call;

static void run_call(void *arg) {
    call *c = arg;
    const shape *s = c->s;
    int64_t lda = s->ta ? s->m : s->k, ldb = s->tb ? s->k : s->n;
    for (int i = 0; i < c->inner; i++) {
        if (c->path == 0)
            inf__ops_sgemm_ref(c->pool, s->ta, s->tb, s->m, s->n, s->k, 1.0f, c->a, lda, c->b, ldb, 0.0f, c->c, s->n);
        else if (c->path == 1)
            inf__ops_sgemm_avx2(c->pool, s->ta, s->tb, s->m, s->n, s->k, 1.0f, c->a, lda, c->b, ldb, 0.0f, c->c,
                                s->n);
        else
            c->blas(101 /* row major */, s->ta ? 112 : 111, s->tb ? 112 : 111, (int)s->m, (int)s->n, (int)s->k, 1.0f,
                    c->a, (int)lda, c->b, (int)ldb, 0.0f, c->c, (int)s->n);
    }
}

int main(int argc, char **argv) {
    int threads = 1;
    const char *blas_path = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--threads") && i + 1 < argc) threads = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--openblas") && i + 1 < argc) blas_path = argv[++i];
        else if (!strcmp(argv[i], "--cpu-time"))
            g_cpu_time = true;
        else {
            fprintf(stderr, "usage: bench_gemm [--threads N] [--openblas PATH] [--cpu-time]\n");
            return 2;
        }
    }
    if (!inf__cpu_has_avx2_fma()) {
        fprintf(stderr, "bench_gemm: CPU without AVX2/FMA\n");
        return 1;
    }
    cblas_sgemm_fn blas = NULL;
    static const char *const candidates[] = {"libopenblas.so.0", "libopenblas.so"};
    void *lib = NULL;
    if (blas_path) lib = dlopen(blas_path, RTLD_NOW | RTLD_LOCAL);
    for (size_t i = 0; !lib && !blas_path && i < sizeof candidates / sizeof *candidates; i++)
        lib = dlopen(candidates[i], RTLD_NOW | RTLD_LOCAL);
    if (lib) {
        blas = (cblas_sgemm_fn)dlsym(lib, "cblas_sgemm");
        set_threads_fn set = (set_threads_fn)dlsym(lib, "openblas_set_num_threads");
        if (set) set(threads);
    }
    inf__pool *pool = NULL;
    if (inf__pool_new(threads, &pool) != INF_OK) return 1;
    printf("threads %d; GFLOP/s (best of runs, %s); kernel path %s\n", threads,
           g_cpu_time ? "thread CPU time" : "wall clock", inf_cpu_get_info()->path);
    double ghz = clock_ghz();
    printf("core clock ~%.2f GHz (dependent adds); FMA peak per core: AVX2 %.0f GFLOP/s (2 FMA x 8 lanes x 2)", ghz,
           32.0 * ghz);
    if (inf__cpu_has_avx512()) printf(", AVX-512 %.0f if zmm FMAs run full width", 64.0 * ghz);
    printf("\n");
    if (inf__cpu_has_avx512()) {
        double ratio = 0.0;
        bool full = inf__avx512_fma_full_width(&ratio);
        inf__blocking bl;
        inf__blocking_get(&bl);
        char how[48] = "set by INFERA_FMA512";
        if (ratio > 0.0) snprintf(how, sizeof how, "zmm/ymm time %.2f", ratio);
        printf("512-bit FMA datapath: %s (%s); 6x32 tile with A packed: %s\n", full ? "full width" : "split", how,
               full && bl.gemm_wide_packed ? "yes" : "no (A in place only)");
    }
    printf("%-32s %6s %6s %6s | %8s %8s %8s\n", "shape", "m", "n", "k", "ref", "x86", blas ? "openblas" : "-");
    for (size_t si = 0; si < sizeof SHAPES / sizeof *SHAPES; si++) {
        const shape *s = &SHAPES[si];
        size_t na = (size_t)(s->m * s->k), nb = (size_t)(s->k * s->n), nc = (size_t)(s->m * s->n);
        float *a = malloc(na * sizeof *a), *b = malloc(nb * sizeof *b), *c = malloc(nc * sizeof *c);
        if (!a || !b || !c) return 1;
        for (size_t i = 0; i < na; i++) a[i] = (float)((i * 7919) % 1000) / 1000.0f - 0.5f;
        for (size_t i = 0; i < nb; i++) b[i] = (float)((i * 104729) % 1000) / 1000.0f - 0.5f;
        double flop = 2.0 * (double)s->m * (double)s->n * (double)s->k;
        int inner = flop < 1e7 ? (int)(1e7 / flop) + 1 : 1;
        double gf[3] = {0, 0, 0};
        for (int path = 0; path < 3; path++) {
            if (path == 2 && !blas) continue;
            call cl = {s, pool, a, b, c, path, blas, inner};
            double t = time_best(flop * inner > 1e9 ? 3 : 10, run_call, &cl);
            gf[path] = flop * inner / t * 1e-9;
        }
        printf("%-32s %6lld %6lld %6lld | %8.1f %8.1f %8.1f\n", s->what, (long long)s->m, (long long)s->n,
               (long long)s->k, gf[0], gf[1], gf[2]);
        free(a), free(b), free(c);
    }
    int rc = bench_convs(pool);
    inf__pool_free(pool);
    if (lib) dlclose(lib);
    return rc;
}
