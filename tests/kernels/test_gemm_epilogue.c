/*
 * test_gemm_epilogue.c -- the AVX2 GEMM's fused epilogue
 * (inf__ops_sgemm_packed_ep_avx2, ops/x86/gemm_avx2.c: bias, residual and
 * activation applied in the store, used by FusedMatMul) and its in-place A
 * path (alpha 1, A not transposed: the kernel broadcasts A from its rows).
 *
 * Epilogue: bit for bit against the unfused computation -- the packed
 * product (inf__ops_sgemm_packed_avx2), then c + bias[j], then + res, then
 * the activation (ops/vmath.h's GELU) over each row -- for every
 * combination of bias / residual / GELU or Relu (done in the tiles' stores,
 * with a NaN bias and a -0 residual), over fixed shapes around the
 * blocking edges (m = 1..8, 13, 14 and 128 -- ragged ends of 6 + 1 and
 * 6 + 2 rows, run as 4 + 3 and 4 + 4 in place --, 71-73, 144 and 150:
 * one row block on one thread up to 144 rows; n around the 16-column panels;
 * k around the 256-deep blocks) and random ones, A plain and transposed,
 * alpha 1 and not, padded leading dimensions, on 1, 2 and 3 threads.  C's
 * padding columns must come back untouched.
 * Runs of column units (A in place on several threads, each thread its own
 * run, the others' units taken from the back when done): on 2 and 3
 * threads bit for bit the 1-thread result, bias + residual + GELU, over
 * batch-1 encoder shapes and ragged ones (units not a multiple of the
 * threads, a partial last unit, as many units as threads).
 * In-place A: the product with plain A (read in place) equals, bit for bit,
 * the product with the same A stored transposed (packed per block), alpha 1.
 * Prints one line per failure and "N passed, M failed"; skips on a CPU
 * without AVX2/FMA.  Runs the AVX-512 tile when the path is avx512 and the
 * AVX2 one under INFERA_CPU=avx2 (kernels_test_gemm_epilogue_avx2path).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/core.h"
#include "ops/ops.h"
#include "kernel_paths.h"
#include "ops/vmath.h"

static int n_passed, n_failed;
#define KERNEL_TEST_SEED 0x9E3779B97F4A7C15ull
#include "test_rng.h"

#if defined(__x86_64__) /* the x86-64 kernels under test are built on x86 only (CMakeLists.txt) */

#define SENTINEL 12345.0f

typedef struct operands {
    int64_t m, n, k, lda, ldc, ldr;
    float *a, *b, *bp, *bias, *res, *c_ep, *c_ref;
} operands;

static void operands_free(operands *o) {
    free(o->a), free(o->b), free(o->bp), free(o->bias), free(o->res), free(o->c_ep), free(o->c_ref);
}

static bool operands_make(operands *o, bool ta, int64_t m, int64_t n, int64_t k) {
    memset(o, 0, sizeof *o);
    o->m = m, o->n = n, o->k = k;
    o->lda = (ta ? m : k) + (next_u64() % 2 ? 3 : 0);
    o->ldc = n + (next_u64() % 2 ? 2 : 0);
    o->ldr = n + (next_u64() % 2 ? 5 : 0);
    size_t na = (size_t)((ta ? k : m) * o->lda + 1), nb = (size_t)(k * n + 1), nc = (size_t)(m * o->ldc);
    size_t nbp = (size_t)inf__ops_sgemm_packed_floats(k > 0 ? k : 1, n);
    o->a = malloc(na * sizeof(float)), o->b = malloc(nb * sizeof(float));
    o->bp = aligned_alloc(64, (nbp * sizeof(float) + 63) / 64 * 64);
    o->bias = malloc((size_t)n * sizeof(float)), o->res = malloc((size_t)(m * o->ldr) * sizeof(float));
    o->c_ep = malloc(nc * sizeof(float)), o->c_ref = malloc(nc * sizeof(float));
    if (!o->a || !o->b || !o->bp || !o->bias || !o->res || !o->c_ep || !o->c_ref) return false;
    for (size_t i = 0; i < na; i++) o->a[i] = 3.0f * uniform();
    for (size_t i = 0; i < nb; i++) o->b[i] = uniform();
    for (int64_t i = 0; i < n; i++) o->bias[i] = uniform();
    for (int64_t i = 0; i < m * o->ldr; i++) o->res[i] = uniform();
    for (size_t i = 0; i < nc; i++) o->c_ep[i] = o->c_ref[i] = (int64_t)(i % (size_t)o->ldc) >= n ? SENTINEL : NAN;
    if (k > 0) inf__ops_sgemm_pack_b(false, k, n, o->b, n, o->bp);
    return true;
}

/* The unfused epilogue on c_ref: + bias, + res, then act per row. */
static void epilogue_ref(const operands *o, const inf__gemm_epilogue *ep) {
    for (int64_t i = 0; i < o->m; i++) {
        float *c = o->c_ref + i * o->ldc;
        for (int64_t j = 0; ep->bias && j < o->n; j++) c[j] = c[j] + ep->bias[j];
        for (int64_t j = 0; ep->res && j < o->n; j++) c[j] = c[j] + ep->res[i * ep->ldr + j];
        if (ep->act) ep->act(c, c, o->n);
    }
}

/* The Relu of a Gemm+Relu node (ops/ref/gemm.c), the reference for the
 * kernels' in-store max(v, 0) (relu set): NaN -> 0, -0 -> 0. */
static void relu_row(const float *x, float *y, int64_t n) {
    for (int64_t i = 0; i < n; i++)
        y[i] = x[i] > 0 ? x[i] : 0;
}

/* variant: 1 bias, 2 res, 4 GELU, 8 Relu applied in the store (bias[0] NaN
 * and res[0] -0.0f then, so the NaN and signed-zero cases are met). */
static void check_ep(inf__pool *pool, bool ta, int64_t m, int64_t n, int64_t k, float alpha, int variant) {
    operands o;
    bool ok = operands_make(&o, ta, m, n, k);
    if (ok) {
        bool relu = variant & 8;
        if (relu) o.bias[0] = NAN, o.res[0] = -0.0f;
        inf__gemm_epilogue ep = {variant & 1 ? o.bias : NULL, variant & 2 ? o.res : NULL, o.ldr,
                                 relu          ? relu_row
                                 : variant & 4 ? inf__vmath_best()->gelu
                                               : NULL,
                                 relu};
        inf__ops_sgemm_packed_ep_avx2(pool, ta, m, n, k, alpha, o.a, o.lda, o.bp, 0.0f, o.c_ep, o.ldc, &ep);
        inf__ops_sgemm_packed_avx2(pool, ta, m, n, k, alpha, o.a, o.lda, o.bp, 0.0f, o.c_ref, o.ldc);
        epilogue_ref(&o, &ep);
        ok = memcmp(o.c_ep, o.c_ref, (size_t)(m * o.ldc) * sizeof(float)) == 0;
    }
    if (ok) {
        n_passed++;
    } else {
        n_failed++;
        fprintf(stderr, "  epilogue %d: ta=%d m=%lld n=%lld k=%lld alpha=%g differs from the unfused result\n", variant,
                ta, (long long)m, (long long)n, (long long)k, alpha);
    }
    operands_free(&o);
}

/* Plain A (read in place) and the same A transposed (packed) give the same bits. */
static void check_direct_a(inf__pool *pool, int64_t m, int64_t n, int64_t k) {
    operands o = {0};
    float *at = malloc((size_t)(k * m + 1) * sizeof(float));
    bool ok = at && k > 0 && operands_make(&o, false, m, n, k);
    if (ok) {
        for (int64_t i = 0; i < m; i++)
            for (int64_t p = 0; p < k; p++) at[p * m + i] = o.a[i * o.lda + p];
        inf__ops_sgemm_packed_avx2(pool, false, m, n, k, 1.0f, o.a, o.lda, o.bp, 0.0f, o.c_ep, o.ldc);
        inf__ops_sgemm_packed_avx2(pool, true, m, n, k, 1.0f, at, m, o.bp, 0.0f, o.c_ref, o.ldc);
        ok = memcmp(o.c_ep, o.c_ref, (size_t)(m * o.ldc) * sizeof(float)) == 0;
    }
    if (ok) {
        n_passed++;
    } else {
        n_failed++;
        fprintf(stderr, "  in-place A: m=%lld n=%lld k=%lld differs from packed A\n", (long long)m, (long long)n,
                (long long)k);
    }
    operands_free(&o);
    free(at);
}

static void cases(inf__pool *pool) {
    static const int64_t M[] = {1, 2, 3, 4, 5, 6, 7, 8, 13, 14, 71, 72, 73, 128, 144, 150};
    static const int64_t N[] = {1, 7, 16, 17, 40, 129};
    static const int64_t K[] = {1, 9, 256, 257, 600};
    static const float ALPHAS[] = {1.0f, 0.5f};
    int t = 0;
    for (size_t im = 0; im < sizeof M / sizeof *M; im++)
        for (size_t in = 0; in < sizeof N / sizeof *N; in++, t++) {
            int64_t k = K[t % (sizeof K / sizeof *K)];
            for (int variant = 1; variant < 12; variant++)
                if (variant != 8) check_ep(pool, variant == 3, M[im], N[in], k, ALPHAS[(t + variant) % 2], variant);
            check_direct_a(pool, M[im], N[in], k);
        }
    check_ep(pool, false, 9, 20, 0, 1.0f, 7); /* k = 0: act(0 + bias + res) */
    for (int i = 0; i < 60; i++) {
        int64_t m = rand_in(1, 200), n = rand_in(1, 300), k = rand_in(1, 1100);
        int variant = (int)rand_in(1, 7);
        if (variant & 4 && next_u64() % 2) variant += 4; /* Relu in place of GELU */
        check_ep(pool, next_u64() % 4 == 0, m, n, k, next_u64() % 2 ? 1.0f : -2.0f, variant);
        check_direct_a(pool, m, n, k);
    }
}

/* The product + bias + res + GELU on `pool` equals the one on `one` (1 thread), bit for bit. */
static void check_runs(inf__pool *one, inf__pool *pool, int64_t m, int64_t n, int64_t k) {
    operands o;
    bool ok = operands_make(&o, false, m, n, k);
    if (ok) {
        inf__gemm_epilogue ep = {o.bias, o.res, o.ldr, inf__vmath_best()->gelu, false};
        for (int rep = 0; rep < 3 && ok; rep++) { /* who steals which unit changes from run to run */
            inf__ops_sgemm_packed_ep_avx2(one, false, m, n, k, 1.0f, o.a, o.lda, o.bp, 0.0f, o.c_ref, o.ldc, &ep);
            inf__ops_sgemm_packed_ep_avx2(pool, false, m, n, k, 1.0f, o.a, o.lda, o.bp, 0.0f, o.c_ep, o.ldc, &ep);
            ok = memcmp(o.c_ep, o.c_ref, (size_t)(m * o.ldc) * sizeof(float)) == 0;
        }
    }
    if (ok) {
        n_passed++;
    } else {
        n_failed++;
        fprintf(stderr, "  runs of units, %d threads: m=%lld n=%lld k=%lld differs from 1 thread\n",
                inf__pool_size(pool), (long long)m, (long long)n, (long long)k);
    }
    operands_free(&o);
}

static void runs_cases(inf__pool *one, inf__pool *pool) {
    static const int64_t SHAPES[][3] = {{128, 256, 256}, {128, 1024, 256}, {128, 256, 1024}, {128, 64, 256},
                                        {128, 96, 256},  {128, 100, 64},   {144, 1000, 300}, {7, 160, 257},
                                        {5, 48, 9},      {128, 33, 256},   {64, 520, 128}};
    for (size_t i = 0; i < sizeof SHAPES / sizeof *SHAPES; i++)
        check_runs(one, pool, SHAPES[i][0], SHAPES[i][1], SHAPES[i][2]);
    for (int i = 0; i < 20; i++)
        check_runs(one, pool, rand_in(5, 144), rand_in(1, 700), rand_in(1, 600));
}

int main(int argc, char **argv) {
    int skip = kernel_paths_begin(argc, argv, "sgemm epilogue");
    if (skip) return skip;
    if (!inf__cpu_has_avx2_fma()) {
        printf("sgemm epilogue: CPU without AVX2/FMA, skipped\n0 passed, 0 failed\n");
        return 77 /* ctest SKIP_RETURN_CODE: nothing ran */;
    }
    inf__pool *one = NULL;
    if (inf__pool_new(1, &one) != INF_OK) {
        fprintf(stderr, "cannot create a pool of 1 thread\n");
        return 1;
    }
    for (int threads = 1; threads <= 3; threads++) {
        inf__pool *pool = NULL;
        if (inf__pool_new(threads, &pool) != INF_OK) {
            fprintf(stderr, "cannot create a pool of %d threads\n", threads);
            return 1;
        }
        int before = n_failed;
        cases(pool);
        if (threads > 1) runs_cases(one, pool);
        printf("sgemm epilogue and in-place A, %d thread%s: %s\n", threads, threads > 1 ? "s" : "",
               n_failed == before ? "ok" : "FAILED");
        inf__pool_free(pool);
    }
    inf__pool_free(one);
    printf("%d passed, %d failed\n", n_passed, n_failed);
    return n_failed ? 1 : 0;
}
#else
int main(void) {
    (void)n_passed, (void)n_failed, (void)kernel_paths_begin;
    printf("sgemm epilogue: the x86-64 kernels are not built on this architecture, skipped\n");
    return 77;
}
#endif
