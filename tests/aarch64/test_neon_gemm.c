/*
 * test_neon_gemm.c -- the NEON sgemm (ops/arm/gemm_neon.c) against the
 * portable one (inf__ops_sgemm_ref), within the tolerance the AVX2 kernel
 * meets (tests/kernels/test_gemm.c: 2e-6 of the sum of |products| plus
 * 1e-6), on every transpose, alpha and beta, ragged m/n/k, 1 and 2 threads
 * and without a pool; C's padding columns untouched; and batch invariance
 * bit for bit (ops.h): each row computed alone (m = 1, one thread) equals
 * the same row of the whole product on two threads.  aarch64 only
 * (tests/aarch64/tests.cmake); INFERA_CPU=generic is reported, not failed.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/core.h"
#include "core/cpu.h"
#include "ops/arm/neon.h"
#include "ops/ops.h"

static int n_passed, n_failed;
#define KERNEL_TEST_SEED 0xD1B54A32D192ED03ull
#include "test_rng.h"

#define SENTINEL 12345.0f

typedef struct gemm_case {
    bool ta, tb;
    int64_t m, n, k, lda, ldb, ldc;
    float alpha, beta;
    float *a, *b, *c0;
} gemm_case;

static bool case_new(gemm_case *g, bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, float beta) {
    *g = (gemm_case){ta, tb, m, n, k, (ta ? m : k) + (int64_t)(next_u64() % 2) * 3,
                     (tb ? k : n) + (int64_t)(next_u64() % 2) * 5, n + (int64_t)(next_u64() % 2) * 2, alpha, beta,
                     NULL, NULL, NULL};
    size_t na = (size_t)((ta ? k : m) * g->lda + 1), nb = (size_t)((tb ? n : k) * g->ldb + 1);
    g->a = malloc(na * sizeof(float)), g->b = malloc(nb * sizeof(float));
    g->c0 = malloc((size_t)(m * g->ldc) * sizeof(float));
    if (!g->a || !g->b || !g->c0) return false;
    for (size_t i = 0; i < na; i++) g->a[i] = uniform();
    for (size_t i = 0; i < nb; i++) g->b[i] = uniform();
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < g->ldc; j++) g->c0[i * g->ldc + j] = j >= n ? SENTINEL : beta == 0.0f ? NAN : uniform();
    return true;
}

static void case_free(gemm_case *g) { free(g->a), free(g->b), free(g->c0); }

static void report(bool ok, const gemm_case *g, inf__pool *pool, const char *what) {
    if (ok) {
        n_passed++;
        return;
    }
    n_failed++;
    fprintf(stderr, "FAIL %s threads=%d transA=%d transB=%d m=%lld n=%lld k=%lld alpha=%g beta=%g\n", what,
            inf__pool_size(pool), g->ta, g->tb, (long long)g->m, (long long)g->n, (long long)g->k, g->alpha,
            g->beta);
}

static bool close_to_ref(const gemm_case *g, const float *got, const float *want) {
    for (int64_t i = 0; i < g->m; i++)
        for (int64_t j = 0; j < g->ldc; j++) {
            float v = got[i * g->ldc + j], w = want[i * g->ldc + j];
            if (j >= g->n) {
                if (v != SENTINEL) return fprintf(stderr, "  padding C[%lld][%lld] overwritten\n", (long long)i, (long long)j), false;
                continue;
            }
            double mag = 0.0;
            for (int64_t p = 0; p < g->k; p++) {
                double av = g->ta ? g->a[p * g->lda + i] : g->a[i * g->lda + p];
                double bv = g->tb ? g->b[j * g->ldb + p] : g->b[p * g->ldb + j];
                mag += fabs(av * bv);
            }
            double tol = 2e-6 * (fabs(g->alpha) * mag + (g->beta != 0.0f ? fabs(g->beta * g->c0[i * g->ldc + j]) : 0.0)) + 1e-6;
            if (!(fabs((double)v - (double)w) <= tol)) {
                fprintf(stderr, "  C[%lld][%lld]: neon %.9g, ref %.9g (tol %.3g)\n", (long long)i, (long long)j, v, w, tol);
                return false;
            }
        }
    return true;
}

static void check(inf__pool *pool, bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, float beta) {
    gemm_case g;
    size_t nc = (size_t)(m * (n + 2));
    float *c_ref = malloc(nc * sizeof(float)), *c_neon = malloc(nc * sizeof(float));
    bool ok = case_new(&g, ta, tb, m, n, k, alpha, beta) && c_ref && c_neon;
    if (ok) {
        size_t bytes = (size_t)(m * g.ldc) * sizeof(float);
        memcpy(c_ref, g.c0, bytes), memcpy(c_neon, g.c0, bytes);
        inf__ops_sgemm_ref(pool, ta, tb, m, n, k, alpha, g.a, g.lda, g.b, g.ldb, beta, c_ref, g.ldc);
        ok = inf__ops_sgemm_neon(pool, ta, tb, m, n, k, alpha, g.a, g.lda, g.b, g.ldb, beta, c_neon, g.ldc) &&
             close_to_ref(&g, c_neon, c_ref);
    }
    report(ok, &g, pool, "sgemm neon vs ref");
    case_free(&g), free(c_ref), free(c_neon);
}

/* Each row alone on one thread == that row of the whole product on two. */
static void check_invariance(inf__pool *p1, inf__pool *p2, bool ta, bool tb, int64_t m, int64_t n, int64_t k,
                             float alpha, float beta) {
    gemm_case g;
    float *full = malloc((size_t)(m * (n + 2)) * sizeof(float)), *row = malloc((size_t)(n + 2) * sizeof(float));
    bool ok = case_new(&g, ta, tb, m, n, k, alpha, beta) && full && row;
    if (ok) {
        memcpy(full, g.c0, (size_t)(m * g.ldc) * sizeof(float));
        ok = inf__ops_sgemm_neon(p2, ta, tb, m, n, k, alpha, g.a, g.lda, g.b, g.ldb, beta, full, g.ldc);
        for (int64_t i = 0; i < m && ok; i++) {
            memcpy(row, g.c0 + i * g.ldc, (size_t)g.ldc * sizeof(float));
            const float *ai = ta ? g.a + i : g.a + i * g.lda;
            ok = inf__ops_sgemm_neon(p1, ta, tb, 1, n, k, alpha, ai, g.lda, g.b, g.ldb, beta, row, g.ldc) &&
                 memcmp(row, full + i * g.ldc, (size_t)n * sizeof(float)) == 0;
            if (!ok) fprintf(stderr, "  row %lld alone differs from the batch\n", (long long)i);
        }
    }
    report(ok, &g, p2, "sgemm neon batch invariance");
    case_free(&g), free(full), free(row);
}

static const float ALPHAS[] = {1.0f, 0.5f, -2.0f}, BETAS[] = {0.0f, 1.0f, 0.7f};

static void fixed_cases(inf__pool *pool) {
    static const int64_t M[] = {1, 2, 3, 4, 5, 7, 8, 9, 15, 17, 33};
    static const int64_t N[] = {1, 7, 8, 9, 16, 17, 63, 64, 65, 130};
    static const int64_t K[] = {1, 3, 4, 5, 8, 37, 130};
    int t = 0;
    for (size_t im = 0; im < sizeof M / sizeof *M; im++)
        for (size_t in = 0; in < sizeof N / sizeof *N; in++, t++)
            for (int tr = 0; tr < 4; tr++)
                check(pool, tr & 1, tr >> 1, M[im], N[in], K[(im + in + (size_t)tr) % (sizeof K / sizeof *K)],
                      ALPHAS[(t + tr) % 3], BETAS[(t / 3 + tr) % 3]);
    for (int tr = 0; tr < 4; tr++) check(pool, tr & 1, tr >> 1, 9, 20, 0, 1.0f, 0.5f); /* k = 0: C = beta C */
}

int main(void) {
    if (!inf__cpu_has_neon()) {
        printf("sgemm neon: path %s (INFERA_CPU): the NEON kernel is not selected; tested anyway\n",
               inf_cpu_get_info()->path);
    }
    /* INFERA_TEST_THREADS=1 (tests.cmake, under qemu-user): no second thread */
    const char *tt = getenv("INFERA_TEST_THREADS");
    int threads2 = tt && atoi(tt) == 1 ? 1 : 2;
    inf__pool *p1 = NULL, *p2 = NULL;
    if (inf__pool_new(1, &p1) != INF_OK || inf__pool_new(threads2, &p2) != INF_OK) {
        fprintf(stderr, "cannot create the pools\n");
        return 1;
    }
    int before = n_failed;
    fixed_cases(p1);
    printf("sgemm neon vs ref, 1 thread: %s\n", n_failed == before ? "ok" : "FAILED");
    before = n_failed;
    for (int i = 0; i < 16; i++)
        check(p2, next_u64() % 2, next_u64() % 2, rand_in(1, 40), rand_in(1, 100), rand_in(1, 150),
              ALPHAS[next_u64() % 3], BETAS[next_u64() % 3]);
    printf("sgemm neon vs ref, %d thread(s) (random shapes): %s\n", threads2, n_failed == before ? "ok" : "FAILED");
    before = n_failed;
    for (int tr = 0; tr < 4; tr++) check(NULL, tr & 1, tr >> 1, 11, 40, 30, 0.5f, 1.0f);
    printf("sgemm neon without a pool: %s\n", n_failed == before ? "ok" : "FAILED");
    before = n_failed;
    for (int tr = 0; tr < 4; tr++) {
        check_invariance(p1, p2, tr & 1, tr >> 1, 19, 77, 67, ALPHAS[tr % 3], BETAS[tr % 3]);
        check_invariance(p1, p2, tr & 1, tr >> 1, 24, 70, 150, 1.0f, 0.0f);
    }
    printf("sgemm neon batch invariance (row alone == row in batch, bit for bit): %s\n",
           n_failed == before ? "ok" : "FAILED");
    inf__pool_free(p1), inf__pool_free(p2);
    printf("%d passed, %d failed\n", n_passed, n_failed);
    return n_failed ? 1 : 0;
}
