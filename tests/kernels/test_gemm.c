/*
 * test_gemm.c -- the AVX2/FMA sgemm (ops/x86/gemm_avx2.c) against its
 * reference twin inf__ops_sgemm_ref (ops/ref/gemm.c).
 *
 * Shapes: a fixed list around the blocking edges (m = 1..7 and MR/MC
 * multiples +-1, n around the 16-column panels and the 128-column tasks, k
 * around the 256-deep blocks, a product wide enough to be done in slabs),
 * then random shapes; every combination of transposes, alpha in {1, 0.5, -2},
 * beta in {0, 1, 0.7}, padded leading dimensions; on pools of 1 and 2
 * threads.  C starts as NaN when beta = 0 (must not be read), and the
 * padding columns of C must come back untouched.  Tolerance per element:
 * 2e-6 * (|alpha| sum_p |A_ip B_pj| + |beta C_ij|) + 1e-6, from a double
 * product.  Prints one line per failure and "N passed, M failed".
 * Skips (0 passed, 0 failed) on a CPU without AVX2/FMA.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/core.h"
#include "ops/ops.h"

static int n_passed, n_failed;
static uint64_t rng = 0x2545F4914F6CDD1Dull;

static uint64_t next_u64(void) {
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}
static float uniform(void) { return (float)((double)(next_u64() >> 11) / 9007199254740992.0 * 2.0 - 1.0); }
static int64_t rand_in(int64_t lo, int64_t hi) { return lo + (int64_t)(next_u64() % (uint64_t)(hi - lo + 1)); }

#define SENTINEL 12345.0f

/* Runs one case; returns true when it passes. */
static bool check(inf__pool *pool, bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, float beta) {
    int64_t lda = (ta ? m : k) + (next_u64() % 2 ? 3 : 0);
    int64_t ldb = (tb ? k : n) + (next_u64() % 2 ? 5 : 0);
    int64_t ldc = n + (next_u64() % 2 ? 2 : 0);
    int64_t a_rows = ta ? k : m, b_rows = tb ? n : k;
    size_t na = (size_t)(a_rows * lda + 1), nb = (size_t)(b_rows * ldb + 1), nc = (size_t)(m * ldc);
    float *a = malloc(na * sizeof *a), *b = malloc(nb * sizeof *b);
    float *c0 = malloc(nc * sizeof *c0), *c_ref = malloc(nc * sizeof *c_ref), *c_avx = malloc(nc * sizeof *c_avx);
    bool ok = a && b && c0 && c_ref && c_avx;
    if (!ok) {
        fprintf(stderr, "  out of memory for m=%lld n=%lld k=%lld\n", (long long)m, (long long)n, (long long)k);
        goto done;
    }
    for (size_t i = 0; i < na; i++) a[i] = uniform();
    for (size_t i = 0; i < nb; i++) b[i] = uniform();
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < ldc; j++) c0[i * ldc + j] = j >= n ? SENTINEL : beta == 0.0f ? NAN : uniform();
    memcpy(c_ref, c0, nc * sizeof *c0);
    memcpy(c_avx, c0, nc * sizeof *c0);
    inf__ops_sgemm_ref(pool, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c_ref, ldc);
    if (!inf__ops_sgemm_avx2(pool, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c_avx, ldc)) {
        if (pool) {
            fprintf(stderr, "  avx2 path refused m=%lld n=%lld k=%lld with a pool\n", (long long)m, (long long)n,
                    (long long)k);
            ok = false;
        } else {
            ok = memcmp(c_avx, c0, nc * sizeof *c0) == 0; /* refused: C untouched */
        }
        goto done;
    }
    for (int64_t i = 0; i < m && ok; i++) {
        for (int64_t j = 0; j < ldc && ok; j++) {
            float got = c_avx[i * ldc + j], want = c_ref[i * ldc + j];
            if (j >= n) {
                if (got != SENTINEL) {
                    fprintf(stderr, "  padding C[%lld][%lld] overwritten\n", (long long)i, (long long)j);
                    ok = false;
                }
                continue;
            }
            double mag = 0.0;
            for (int64_t p = 0; p < k; p++) {
                double av = ta ? a[p * lda + i] : a[i * lda + p], bv = tb ? b[j * ldb + p] : b[p * ldb + j];
                mag += fabs(av * bv);
            }
            double tol = 2e-6 * (fabs(alpha) * mag + (beta != 0.0f ? fabs(beta * c0[i * ldc + j]) : 0.0)) + 1e-6;
            if (!(fabs((double)got - (double)want) <= tol)) {
                fprintf(stderr, "  C[%lld][%lld]: avx2 %.9g, ref %.9g (tol %.3g)\n", (long long)i, (long long)j,
                        got, want, tol);
                ok = false;
            }
        }
    }
done:
    if (ok) {
        n_passed++;
    } else {
        n_failed++;
        fprintf(stderr, "FAIL sgemm threads=%d transA=%d transB=%d m=%lld n=%lld k=%lld alpha=%g beta=%g\n",
                inf__pool_size(pool), ta, tb, (long long)m, (long long)n, (long long)k, alpha, beta);
    }
    free(a), free(b), free(c0), free(c_ref), free(c_avx);
    return ok;
}

static const float ALPHAS[] = {1.0f, 0.5f, -2.0f}, BETAS[] = {0.0f, 1.0f, 0.7f};

static void fixed_cases(inf__pool *pool) {
    static const int64_t M[] = {1, 2, 3, 4, 5, 6, 7, 13, 71, 72, 73, 150};
    static const int64_t N[] = {1, 7, 15, 16, 17, 33, 64, 65, 127, 129, 300};
    static const int64_t K[] = {1, 5, 8, 9, 255, 256, 257, 600};
    /* every m and n with a few depths, all transposes; alpha/beta rotate */
    int t = 0;
    for (size_t im = 0; im < sizeof M / sizeof *M; im++)
        for (size_t in = 0; in < sizeof N / sizeof *N; in++)
            for (size_t ik = 0; ik < sizeof K / sizeof *K; ik += 3, t++)
                for (int tr = 0; tr < 4; tr++)
                    check(pool, tr & 1, tr >> 1, M[im], N[in], K[(ik + im) % (sizeof K / sizeof *K)],
                          ALPHAS[(t + tr) % 3], BETAS[(t / 3 + tr) % 3]);
    /* k = 0 (C = beta * C) and a product wide enough to be done in slabs */
    for (int tr = 0; tr < 4; tr++) {
        check(pool, tr & 1, tr >> 1, 9, 20, 0, 1.0f, 0.5f);
        check(pool, tr & 1, tr >> 1, 1, 20, 0, 1.0f, 0.0f);
    }
    check(pool, false, false, 7, 4200, 1100, 1.0f, 0.0f);
    check(pool, false, true, 13, 4200, 1100, 0.5f, 1.0f);
}

static void random_cases(inf__pool *pool, int count) {
    for (int i = 0; i < count; i++) {
        int64_t m = next_u64() % 4 == 0 ? rand_in(1, 6) : rand_in(1, 200);
        int64_t n = rand_in(1, 400), k = rand_in(1, 700);
        check(pool, next_u64() % 2, next_u64() % 2, m, n, k, ALPHAS[next_u64() % 3], BETAS[next_u64() % 3]);
    }
}

int main(void) {
    if (!inf__cpu_has_avx2_fma()) {
        printf("sgemm avx2: CPU without AVX2/FMA, skipped\n0 passed, 0 failed\n");
        return 0;
    }
    for (int threads = 1; threads <= 2; threads++) {
        inf__pool *pool = NULL;
        if (inf__pool_new(threads, &pool) != INF_OK) {
            fprintf(stderr, "cannot create a pool of %d threads\n", threads);
            return 1;
        }
        int before = n_failed;
        fixed_cases(pool);
        random_cases(pool, 300);
        printf("sgemm avx2 vs ref, %d thread%s: %s\n", threads, threads > 1 ? "s" : "",
               n_failed == before ? "ok" : "FAILED");
        inf__pool_free(pool);
    }
    /* no pool: small m runs without a workspace; packed shapes are refused, C untouched */
    int before = n_failed;
    for (int tr = 0; tr < 4; tr++) {
        check(NULL, tr & 1, tr >> 1, 1, 40, 30, 1.0f, 0.0f);
        check(NULL, tr & 1, tr >> 1, 20, 40, 30, 1.0f, 1.0f);
    }
    printf("sgemm avx2 without a pool: %s\n", n_failed == before ? "ok" : "FAILED");
    printf("%d passed, %d failed\n", n_passed, n_failed);
    return n_failed ? 1 : 0;
}
