/*
 * test_gemm.c -- the AVX2/FMA sgemm (ops/x86/gemm_avx2.c) against its
 * reference twin inf__ops_sgemm_ref (ops/ref/gemm.c).  On a CPU whose path
 * is avx512 (core/cpu.c) the driver runs the 6x32 AVX-512 tile
 * (gemm_avx512.c) for pairs of full panels; ctest runs the test again with
 * INFERA_CPU=avx2 (kernels_test_gemm_avx2path, skipped -- exit 77 -- when
 * AVX2 already is the widest path), so both widths are checked.
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
 *
 * Batch invariance (DESIGN.md section 1), bit for bit, for both kernels:
 * the full C computed on 2 threads equals each row computed alone (m = 1)
 * on 1 thread, a contiguous row range, a scattered subset of rows gathered
 * into a new A, the product without a pool (no workspace), and -- AVX2 --
 * the product with B packed ahead of time; transposed and plain A and B,
 * k over several k blocks, alpha != 1, beta in {0, 1, 0.7}.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/core.h"
#include "ops/ops.h"
#include "kernel_paths.h"

static int n_passed, n_failed;
#define KERNEL_TEST_SEED 0x2545F4914F6CDD1Dull
#include "test_rng.h"

#if defined(__x86_64__) /* the x86-64 kernels under test are built on x86 only (CMakeLists.txt) */

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

/* ---- batch invariance ---- */

typedef void (*sgemm_fn)(inf__pool *pool, bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha,
                         const float *a, int64_t lda, const float *b, int64_t ldb, float beta, float *c,
                         int64_t ldc);

static void avx2_fn(inf__pool *pool, bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha,
                    const float *a, int64_t lda, const float *b, int64_t ldb, float beta, float *c, int64_t ldc) {
    (void)inf__ops_sgemm_avx2(pool, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

/* Rows `rows[0..nr)` of op(A), as a new matrix in the same layout (ta or not). */
static float *gather_rows(bool ta, const float *a, int64_t lda, int64_t k, const int64_t *rows, int64_t nr,
                          int64_t *lda_out) {
    int64_t ld = ta ? nr : k;
    float *g = malloc((size_t)(nr * k) * sizeof *g);
    if (!g) return NULL;
    for (int64_t r = 0; r < nr; r++)
        for (int64_t p = 0; p < k; p++) {
            float v = ta ? a[p * lda + rows[r]] : a[rows[r] * lda + p];
            if (ta) g[p * ld + r] = v;
            else g[r * ld + p] = v;
        }
    *lda_out = ld;
    return g;
}

/* Compares C rows rows[0..nr) of `full` with rows 0..nr of `part`. */
static bool same_rows(const float *full, const float *part, const int64_t *rows, int64_t nr, int64_t n,
                      int64_t ldc, const char *what) {
    for (int64_t r = 0; r < nr; r++)
        if (memcmp(full + rows[r] * ldc, part + r * ldc, (size_t)n * sizeof(float))) {
            for (int64_t j = 0; j < n; j++)
                if (memcmp(&full[rows[r] * ldc + j], &part[r * ldc + j], sizeof(float))) {
                    fprintf(stderr, "  %s: row %lld col %lld: %.9g vs %.9g\n", what, (long long)rows[r],
                            (long long)j, full[rows[r] * ldc + j], part[r * ldc + j]);
                    break;
                }
            return false;
        }
    return true;
}

static bool check_invariance(const char *name, sgemm_fn fn, bool avx2, inf__pool *p1, inf__pool *p2, bool ta,
                             bool tb, int64_t m, int64_t n, int64_t k, float alpha, float beta) {
    int64_t lda = ta ? m : k, ldb = tb ? k : n, ldc = n;
    size_t na = (size_t)(m * k), nb = (size_t)(n * k), nc = (size_t)(m * n);
    float *a = malloc(na * sizeof *a), *b = malloc(nb * sizeof *b), *c0 = malloc(nc * sizeof *c0);
    float *full = malloc(nc * sizeof *full), *part = malloc(nc * sizeof *part);
    int64_t *rows = malloc((size_t)m * sizeof *rows);
    float *bp = NULL, *ag = NULL;
    bool ok = a && b && c0 && full && part && rows;
    if (!ok) goto done;
    for (size_t i = 0; i < na; i++) a[i] = uniform();
    for (size_t i = 0; i < nb; i++) b[i] = uniform();
    for (size_t i = 0; i < nc; i++) c0[i] = uniform();
    memcpy(full, c0, nc * sizeof *c0);
    fn(p2, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, full, ldc);
    /* each row alone, one thread */
    for (int64_t i = 0; i < m && ok; i++) {
        memcpy(part, c0 + i * ldc, (size_t)n * sizeof *part);
        fn(p1, ta, tb, 1, n, k, alpha, ta ? a + i : a + i * lda, lda, b, ldb, beta, part, ldc);
        ok = same_rows(full, part, &i, 1, n, ldc, "row alone");
    }
    /* a contiguous range [r0, r0 + nr) */
    int64_t r0 = m / 3, nr = m - m / 3 - m / 5;
    for (int64_t r = 0; r < nr; r++) rows[r] = r0 + r;
    if (ok && nr > 0) {
        memcpy(part, c0 + r0 * ldc, (size_t)(nr * ldc) * sizeof *part);
        fn(p1, ta, tb, nr, n, k, alpha, ta ? a + r0 : a + r0 * lda, lda, b, ldb, beta, part, ldc);
        ok = same_rows(full, part, rows, nr, n, ldc, "row range");
    }
    /* a scattered subset (every third row, from the second) */
    nr = 0;
    for (int64_t i = 1; i < m; i += 3) rows[nr++] = i;
    int64_t ldg = 0;
    if (ok && nr > 0 && (ag = gather_rows(ta, a, lda, k, rows, nr, &ldg))) {
        for (int64_t r = 0; r < nr; r++) memcpy(part + r * ldc, c0 + rows[r] * ldc, (size_t)n * sizeof *part);
        fn(p2, ta, tb, nr, n, k, alpha, ag, ldg, b, ldb, beta, part, ldc);
        ok = same_rows(full, part, rows, nr, n, ldc, "row subset");
    }
    for (int64_t i = 0; i < m; i++) rows[i] = i;
    /* no pool: no workspace */
    if (ok) {
        memcpy(part, c0, nc * sizeof *c0);
        fn(NULL, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, part, ldc);
        ok = same_rows(full, part, rows, m, n, ldc, "no pool");
    }
#if defined(__x86_64__)
    /* B packed ahead of time, all rows and row 0 alone */
    if (ok && avx2) {
        bp = aligned_alloc(32, ((size_t)inf__ops_sgemm_packed_floats(k, n) * sizeof(float) + 31) / 32 * 32);
        ok = bp != NULL;
        if (ok) {
            inf__ops_sgemm_pack_b(tb, k, n, b, ldb, bp);
            memcpy(part, c0, nc * sizeof *c0);
            inf__ops_sgemm_packed_avx2(p2, ta, m, n, k, alpha, a, lda, bp, beta, part, ldc);
            ok = same_rows(full, part, rows, m, n, ldc, "packed B");
        }
        for (int64_t i = 0; i < m && ok; i += 5) {
            memcpy(part, c0 + i * ldc, (size_t)n * sizeof *part);
            inf__ops_sgemm_packed_avx2(p1, ta, 1, n, k, alpha, ta ? a + i : a + i * lda, lda, bp, beta, part, ldc);
            ok = same_rows(full, part, &rows[i], 1, n, ldc, "packed B, row alone");
        }
    }
#endif
done:
    if (ok) {
        n_passed++;
    } else {
        n_failed++;
        fprintf(stderr, "FAIL %s batch invariance transA=%d transB=%d m=%lld n=%lld k=%lld alpha=%g beta=%g\n",
                name, ta, tb, (long long)m, (long long)n, (long long)k, alpha, beta);
    }
    free(a), free(b), free(c0), free(full), free(part), free(rows), free(bp), free(ag);
    return ok;
}

static void invariance_cases(const char *name, sgemm_fn fn, bool avx2, inf__pool *p1, inf__pool *p2) {
    static const int64_t M[] = {5, 7, 13, 37, 150};
    static const int64_t N[] = {1, 17, 64, 100, 300};
    static const int64_t K[] = {3, 300, 600, 1100};
    static const float A[] = {0.5f, -2.0f, 1.0f}, B[] = {0.0f, 1.0f, 0.7f};
    int t = 0, before = n_failed;
    for (size_t im = 0; im < sizeof M / sizeof *M; im++)
        for (size_t in = 0; in < sizeof N / sizeof *N; in++, t++)
            for (int tr = 0; tr < 4; tr++)
                check_invariance(name, fn, avx2, p1, p2, tr & 1, tr >> 1, M[im], N[in], K[(t + tr) % 4],
                                 A[(t + tr) % 3], B[(t / 2 + tr) % 3]);
    printf("sgemm %s batch invariance (rows alone, ranges, subsets, 1 vs 2 threads, no pool%s): %s\n", name,
           avx2 ? ", packed B" : "", n_failed == before ? "ok" : "FAILED");
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

int main(int argc, char **argv) {
    int skip = kernel_paths_begin(argc, argv, "sgemm");
    if (skip) return skip;
    {
        inf__pool *p1 = NULL, *p2 = NULL;
        if (inf__pool_new(1, &p1) != INF_OK || inf__pool_new(2, &p2) != INF_OK) {
            fprintf(stderr, "cannot create the pools\n");
            return 1;
        }
        invariance_cases("ref", inf__ops_sgemm_ref, false, p1, p2);
        if (inf__cpu_has_avx2_fma()) invariance_cases("avx2", avx2_fn, true, p1, p2);
        inf__pool_free(p1);
        inf__pool_free(p2);
    }
    if (!inf__cpu_has_avx2_fma()) {
        printf("sgemm avx2: CPU without AVX2/FMA, skipped\n%d passed, %d failed\n", n_passed, n_failed);
        return n_failed ? 1 : 0;
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
    /* no pool: no workspace, the kernel copies B blocks on the stack */
    int before = n_failed;
    for (int tr = 0; tr < 4; tr++) {
        check(NULL, tr & 1, tr >> 1, 1, 40, 30, 1.0f, 0.0f);
        check(NULL, tr & 1, tr >> 1, 20, 40, 30, 1.0f, 1.0f);
    }
    printf("sgemm avx2 without a pool: %s\n", n_failed == before ? "ok" : "FAILED");
    printf("%d passed, %d failed\n", n_passed, n_failed);
    return n_failed ? 1 : 0;
}
#else
int main(void) {
    (void)n_passed, (void)n_failed, (void)kernel_paths_begin;
    printf("sgemm: the x86-64 kernels are not built on this architecture, skipped\n");
    return 77;
}
#endif
