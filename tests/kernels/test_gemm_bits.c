/*
 * test_gemm_bits.c -- the x86 SGEMM (ops/x86/gemm_avx2.c with, on the
 * avx512 path, the 6x32 tile of gemm_avx512.c) bit for bit against a scalar
 * emulation of its documented arithmetic, built on libm's fmaf (the
 * oracle: one correctly rounded fused multiply-add):
 *   per 256-deep block of k: acc = 0; acc = fmaf(alpha * a[i][p], b[p][j], acc)
 *   for p in order; first block stored as acc (beta 0), acc + C (beta 1) or
 *   fmaf(beta, C, acc); later blocks as acc + C.
 * Since both kernel widths must give exactly these bits, this also proves
 * the AVX-512 and AVX2 kernels interchangeable (batch invariance across
 * machines).  Shapes around the 32-column tile pairs (n = 16, 31, 32, 33,
 * 48, 64, 100), the 6-row tiles and ragged 6+1 / 6+2 ends, k across blocks,
 * plain/transposed A and B, alpha 1 (A read in place) and not, beta
 * {0, 1, 0.7}, 1 and 2 threads, B packed per call and ahead of time, A's
 * rows 4 KiB apart (read in place on the avx512 path with 48 KiB L1d); then
 * the tile function directly for rows 1..6, packed and in-place A, and 8
 * rows in place.
 * ctest runs it on the widest path and again with INFERA_CPU=avx2
 * (kernels_test_gemm_bits_avx2path).  Exit 77 without AVX2/FMA.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/core.h"
#include "core/cpu.h"
#include "ops/ops.h"
#include "kernel_paths.h"
#if defined(__x86_64__)
#include "ops/x86/gemm_avx512.h"
#endif

#define KERNEL_TEST_SEED 0x9E3779B97F4A7C15ull
#include "test_rng.h"

#if defined(__x86_64__) /* the x86-64 kernels under test are built on x86 only (CMakeLists.txt) */

enum { KC = 256 }; /* the driver's k block (gemm_avx2.c) */

static int n_passed, n_failed;

static float rnd(void) { return (float)((int64_t)(next_u64() % 2001) - 1000) / 997.0f; }

/* The oracle: C (ldc) per the arithmetic above. */
static void emulate(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const float *a, int64_t lda,
                    const float *b, int64_t ldb, float beta, float *c, int64_t ldc) {
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++) {
            float *cij = c + i * ldc + j;
            for (int64_t p0 = 0; p0 < k; p0 += KC) {
                float acc = 0.0f;
                for (int64_t p = p0; p < k && p < p0 + KC; p++) {
                    float av = ta ? a[p * lda + i] : a[i * lda + p], bv = tb ? b[j * ldb + p] : b[p * ldb + j];
                    acc = fmaf(alpha * av, bv, acc);
                }
                if (p0 > 0 || beta == 1.0f) *cij = acc + *cij;
                else if (beta == 0.0f) *cij = acc;
                else *cij = fmaf(beta, *cij, acc);
            }
        }
}

static bool same_bits(const float *x, const float *y, int64_t m, int64_t n, int64_t ld, const char *what) {
    for (int64_t i = 0; i < m; i++)
        if (memcmp(x + i * ld, y + i * ld, (size_t)n * sizeof(float))) {
            for (int64_t j = 0; j < n; j++)
                if (memcmp(&x[i * ld + j], &y[i * ld + j], sizeof(float))) {
                    fprintf(stderr, "  %s: C[%lld][%lld] = %.9g, oracle %.9g\n", what, (long long)i, (long long)j,
                            x[i * ld + j], y[i * ld + j]);
                    break;
                }
            return false;
        }
    return true;
}

/* lda_4k: A's rows 4 KiB apart (lda 1024, k <= 1024, plain A), which the
 * avx512 path with a 48 KiB L1d reads in place too. */
static void check_lda(inf__pool *pool, bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, float beta,
                      bool packed, bool lda_4k) {
    int64_t lda = lda_4k ? 1024 : (ta ? m : k) + 1, ldb = (tb ? k : n) + 3, ldc = n + 2;
    float *a = malloc(sizeof(float) * (size_t)(ta ? k : m) * (size_t)lda);
    float *b = malloc(sizeof(float) * (size_t)(tb ? n : k) * (size_t)ldb);
    float *c = malloc(sizeof(float) * (size_t)(m * ldc)), *want = malloc(sizeof(float) * (size_t)(m * ldc));
    size_t bp_bytes = (sizeof(float) * (size_t)inf__ops_sgemm_packed_floats(k, n) + 63) / 64 * 64;
    float *bp = packed ? aligned_alloc(64, bp_bytes) : NULL; /* packed panels are stored aligned */
    if (!a || !b || !c || !want || (packed && !bp)) {
        fprintf(stderr, "out of memory\n");
        exit(1);
    }
    for (int64_t i = 0; i < (ta ? k : m) * lda; i++) a[i] = rnd();
    for (int64_t i = 0; i < (tb ? n : k) * ldb; i++) b[i] = rnd();
    for (int64_t i = 0; i < m * ldc; i++) c[i] = want[i] = rnd();
    emulate(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, want, ldc);
    if (packed) {
        inf__ops_sgemm_pack_b(tb, k, n, b, ldb, bp);
        inf__ops_sgemm_packed_avx2(pool, ta, m, n, k, alpha, a, lda, bp, beta, c, ldc);
    } else {
        (void)inf__ops_sgemm_avx2(pool, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
    }
    char what[160];
    snprintf(what, sizeof what, "m=%lld n=%lld k=%lld ta=%d tb=%d alpha=%g beta=%g%s%s", (long long)m, (long long)n,
             (long long)k, ta, tb, alpha, beta, packed ? " packed B" : "", lda_4k ? " lda 1024" : "");
    if (same_bits(c, want, m, n, ldc, what)) n_passed++;
    else n_failed++;
    free(a), free(b), free(c), free(want), free(bp);
}

static void check(inf__pool *pool, bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, float beta,
                  bool packed) {
    check_lda(pool, ta, tb, m, n, k, alpha, beta, packed, false);
}

#if defined(__x86_64__)
/* The 6x32 tile alone: rows 1..6, packed ([k][6]) and in-place A; and
 * 8 rows, in-place A only (the driver's 8-row blocks). */
static void check_tile(int rows, bool in_place, int mode) {
    enum { K = 37, LDB = 40, LDC = 35, R = 8 };
    float a[R * K], apk[K * 6], b[K * LDB], c[R * LDC], want[R * LDC];
    for (int i = 0; i < R * K; i++) a[i] = rnd();
    for (int p = 0; p < K; p++)
        for (int r = 0; r < 6; r++) apk[p * 6 + r] = r < rows ? a[r * K + p] : NAN; /* rows past `rows`: never used */
    for (int i = 0; i < K * LDB; i++) b[i] = rnd();
    for (int i = 0; i < R * LDC; i++) c[i] = want[i] = rnd();
    const float beta = 0.7f;
    for (int r = 0; r < rows; r++)
        for (int j = 0; j < 32; j++) {
            float acc = 0.0f;
            for (int p = 0; p < K; p++) acc = fmaf(a[r * K + p], b[p * LDB + (j < 16 ? j : j - 16 + 20)], acc);
            float *w = &want[r * LDC + j];
            *w = mode == INF__GEMM_STORE_BETA0 ? acc : mode == INF__GEMM_STORE_ADD ? acc + *w : fmaf(beta, *w, acc);
        }
    /* panels: columns 0..15 and 20..35 of b (not adjacent, to test both pointers) */
    if (rows == 8) inf__gemm_tile_x32_8rows_avx512(K, a, K, b, b + 20, LDB, c, LDC, mode, beta, NULL);
    else
        inf__gemm_tile_x32_avx512(rows, K, in_place ? a : apk, in_place ? K : 0, b, b + 20, LDB, c, LDC, mode, beta,
                                  NULL);
    char what[96];
    snprintf(what, sizeof what, "tile rows=%d %s mode=%d", rows, in_place ? "in-place A" : "packed A", mode);
    bool ok = same_bits(c, want, R, LDC, LDC, what); /* rows past `rows` and columns 32.. untouched too */
    if (ok) n_passed++;
    else n_failed++;
}
#endif

int main(int argc, char **argv) {
    int skip = kernel_paths_begin(argc, argv, "sgemm bits");
    if (skip) return skip;
    if (!inf__cpu_has_avx2_fma()) {
        printf("sgemm bits: CPU without AVX2/FMA, nothing to test, skipped\n");
        return 77;
    }
    static const int64_t M[] = {1, 5, 6, 7, 8, 13, 14, 16, 40, 150}; /* 8: one 8-row tile with A in place */
    static const int64_t N[] = {16, 31, 32, 33, 48, 64, 100};
    static const int64_t K[] = {1, 7, 256, 300};
    static const float ALPHA[] = {1.0f, 0.5f}, BETA[] = {0.0f, 1.0f, 0.7f};
    for (int threads = 1; threads <= 2; threads++) {
        inf__pool *pool = NULL;
        if (inf__pool_new(threads, &pool) != INF_OK) {
            fprintf(stderr, "cannot create a pool of %d threads\n", threads);
            return 1;
        }
        int before = n_failed, t = 0;
        for (size_t im = 0; im < sizeof M / sizeof *M; im++)
            for (size_t in = 0; in < sizeof N / sizeof *N; in++, t++) {
                int tr = t % 4;
                check(pool, tr & 1, tr >> 1, M[im], N[in], K[t % 4], ALPHA[t % 2], BETA[t % 3], false);
                check(pool, tr & 1, false, M[im], N[in], K[(t + 1) % 4], ALPHA[(t + 1) % 2], BETA[(t + 1) % 3], true);
            }
        /* rows 4 KiB apart: the encoder's FFN output projection (128 x 256 x 1024) and around it */
        static const int64_t M4K[] = {7, 128, 144}, K4K[] = {300, 1024};
        for (size_t im = 0; im < sizeof M4K / sizeof *M4K; im++)
            for (size_t ik = 0; ik < sizeof K4K / sizeof *K4K; ik++) {
                check_lda(pool, false, false, M4K[im], 100, K4K[ik], 1.0f, BETA[(im + ik) % 3], true, true);
                check_lda(pool, false, false, M4K[im], 64, K4K[ik], 1.0f, BETA[(im + ik + 1) % 3], false, true);
            }
        printf("sgemm bits vs fmaf emulation, %d thread%s: %s\n", threads, threads > 1 ? "s" : "",
               n_failed == before ? "ok" : "FAILED");
        inf__pool_free(pool);
    }
#if defined(__x86_64__)
    if (inf__cpu_has_avx512()) {
        int before = n_failed;
        for (int rows = 1; rows <= 6; rows++)
            for (int mode = 0; mode < 3; mode++) check_tile(rows, rows % 2, mode), check_tile(rows, !(rows % 2), mode);
        for (int mode = 0; mode < 3; mode++) check_tile(8, true, mode);
        printf("sgemm avx512 6x32 and 8x32 tiles vs fmaf: %s\n", n_failed == before ? "ok" : "FAILED");
    } else {
        printf("sgemm avx512 6x32 tile: skipped (path %s)\n", inf_cpu_get_info()->path);
    }
#endif
    printf("%d passed, %d failed\n", n_passed, n_failed);
    return n_failed ? 1 : 0;
}
#else
int main(void) {
    (void)kernel_paths_begin;
    printf("sgemm bits: the x86-64 kernels are not built on this architecture, skipped\n");
    return 77;
}
#endif
