/*
 * test_gemm_bf16.c -- the bf16 GEMM of sessions of precision bf16
 * (ops/gemm_bf16.h, ops/x86/gemm_bf16_avx512.c) against its scalar twin.
 *
 *  - rounding: inf__bf16_from_f32 against the CPU's own vcvtneps2bf16 over
 *    special values (zeros, denormals, infinities, NaNs, ties, the largest
 *    float) and a million random bit patterns;
 *  - the twin against a double-precision product of the same bf16-rounded
 *    operands (within k float32 roundings), so the twin computes a product;
 *  - the AVX512-BF16 kernel against the twin, bit for bit, over shapes
 *    around its tiles (m 1..9, 16, 17, 63..65, 130; n around the 16-column
 *    panels and 3/6-panel tiles; k odd and even, 1 to 769), B plain and
 *    transposed, every epilogue (alpha, accumulate, bias, residual) and the
 *    GELU epilogue (within 1 ulp-scale tolerance: the activation runs over
 *    other segment lengths), on 1 and 2 threads;
 *  - batch invariance: each row of an m-row product equals the same row
 *    computed alone.
 * Skips (77) on a CPU without AVX512_BF16 or when INFERA_CPU lowers the path.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/core.h"
#include "kernel_paths.h"
#include "ops/gemm_bf16.h"
#include "ops/vmath.h"

static int n_passed __attribute__((unused)), n_failed __attribute__((unused)); /* unused where no x86 kernels */
#define KERNEL_TEST_SEED 0x2545F4914F6CDD1Dull
#include "test_rng.h"

#if defined(__x86_64__)
#include <immintrin.h>

static float frand(void) { return (float)((int64_t)(next_u64() % 2000001) - 1000000) / 1000000.0f; }

static void check(bool ok, const char *what) {
    if (ok)
        n_passed++;
    else {
        n_failed++;
        printf("FAIL %s\n", what);
    }
}

__attribute__((target("avx512f,avx512bf16"))) static void hw_round16(const float *x, uint16_t *out) {
    __m256bh h = _mm512_cvtneps_pbh(_mm512_loadu_ps(x));
    memcpy(out, &h, 32);
}

static float from_bits(uint32_t u) {
    float f;
    memcpy(&f, &u, 4);
    return f;
}

static void test_rounding(void) {
    static const uint32_t special[] = {0x00000000, 0x80000000, 0x00000001, 0x807fffff, 0x00800000,
                                       0x7f7fffff, 0xff7fffff, 0x7f800000, 0xff800000, 0x7f800001,
                                       0xffc00000, 0x7fbfffff, 0x3f808000, 0x3f818000, 0x3f807fff,
                                       0x3f80ffff, 0x7f7f8000, 0x00ff8000, 0x3f800000, 0xbf808001};
    int bad = 0;
    float x[16];
    uint16_t hw[16];
    for (int i = 0; i<20; i += 16> 20 - i ? 20 - i : 16) {
        int n = 20 - i < 16 ? 20 - i : 16;
        for (int j = 0; j < 16; j++)
            x[j] = from_bits(special[i + (j < n ? j : 0)]);
        hw_round16(x, hw);
        for (int j = 0; j < n; j++)
            if (inf__bf16_from_f32(x[j]) != hw[j]) {
                printf("  rounding %08x: %04x, vcvtneps2bf16 %04x\n", special[i + j], inf__bf16_from_f32(x[j]), hw[j]);
                bad++;
            }
    }
    for (int it = 0; it < 65536; it++) {
        for (int j = 0; j < 16; j++)
            x[j] = from_bits((uint32_t)next_u64());
        hw_round16(x, hw);
        for (int j = 0; j < 16; j++)
            bad += inf__bf16_from_f32(x[j]) != hw[j];
    }
    check(bad == 0, "rounding: inf__bf16_from_f32 == vcvtneps2bf16");
}

/* Random m x k A, k x n B (or n x k when trans_b), bias, residual. */
typedef struct case_data {
    int64_t m, n, k, lda, ldb, ldc;
    bool trans_b;
    float *a, *b, *bias, *res, *c0;
    uint16_t *bp;
} case_data;

static void case_free(case_data *d) {
    free(d->a), free(d->b), free(d->bias), free(d->res), free(d->c0), inf__aligned_free(d->bp);
}

static bool case_make(case_data *d, int64_t m, int64_t n, int64_t k, bool trans_b) {
    memset(d, 0, sizeof *d);
    d->m = m, d->n = n, d->k = k, d->trans_b = trans_b;
    d->lda = k + (next_u64() % 2 ? 3 : 0);
    d->ldb = (trans_b ? k : n) + (next_u64() % 2 ? 1 : 0);
    d->ldc = n + (next_u64() % 2 ? 2 : 0);
    d->a = malloc((size_t)(m * d->lda + 1) * 4);
    d->b = malloc((size_t)((trans_b ? n : k) * d->ldb + 1) * 4);
    d->bias = malloc((size_t)n * 4);
    d->res = malloc((size_t)(m * d->ldc + 1) * 4);
    d->c0 = malloc((size_t)(m * d->ldc + 1) * 4);
    d->bp = inf__aligned_alloc((size_t)inf__bf16_packed_elems(k, n) * 2 + 64);
    if (!d->a || !d->b || !d->bias || !d->res || !d->c0 || !d->bp) return false;
    for (int64_t i = 0; i < m * d->lda; i++)
        d->a[i] = frand() * 3.0f;
    for (int64_t i = 0; i < (trans_b ? n : k) * d->ldb; i++)
        d->b[i] = frand();
    for (int64_t i = 0; i < n; i++)
        d->bias[i] = frand();
    for (int64_t i = 0; i < m * d->ldc; i++)
        d->res[i] = frand(), d->c0[i] = frand();
    /* the element past C: a canary the kernel must leave alone (left uninitialised, a NaN there once failed the
     * tolerance comparison of the GELU epilogue: NaN is not within any tolerance of itself) */
    d->res[m * d->ldc] = d->c0[m * d->ldc] = 1234.5f;
    inf__bf16_pack_b(trans_b, k, n, d->b, d->ldb, d->bp);
    return true;
}

/* C from the kernel (pool may be NULL) and the twin, same epilogue; 0 = same bits
 * (or within tol when tol > 0), else the number of differing elements. */
static int64_t compare(const case_data *d, inf__pool *pool, const inf__bf16_epilogue *ep, double tol) {
    size_t nc = (size_t)(d->m * d->ldc + 1);
    float *c1 = malloc(nc * 4), *c2 = malloc(nc * 4);
    void *ws = inf__aligned_alloc(inf__bf16_ws_bytes(d->m, d->k));
    int64_t bad = -1;
    if (c1 && c2 && ws) {
        memcpy(c1, d->c0, nc * 4), memcpy(c2, d->c0, nc * 4);
        inf__bf16_gemm_avx512(pool, d->m, d->n, d->k, d->a, d->lda, d->bp, c1, d->ldc, ep, ws);
        inf__bf16_gemm_ref(d->m, d->n, d->k, d->a, d->lda, d->trans_b, d->b, d->ldb, c2, d->ldc, ep);
        bad = 0;
        for (size_t i = 0; i < nc; i++) {
            bool same = memcmp(&c1[i], &c2[i], 4) == 0 ||
                        (tol > 0 && fabs((double)c1[i] - c2[i]) <= tol * (1.0 + fabs((double)c2[i])));
            bad += !same;
        }
    }
    free(c1), free(c2), inf__aligned_free(ws);
    return bad;
}

/* The twin against double precision on the bf16-rounded operands (no epilogue). */
static void test_twin_vs_double(void) {
    case_data d;
    int bad = 0;
    if (!case_make(&d, 5, 37, 301, false)) {
        check(false, "twin vs double: out of memory");
        case_free(&d);
        return;
    }
    inf__bf16_epilogue ep = {1.0f, false, NULL, NULL, 0, NULL};
    float *c = malloc((size_t)(d.m * d.ldc) * 4);
    inf__bf16_gemm_ref(d.m, d.n, d.k, d.a, d.lda, false, d.b, d.ldb, c, d.ldc, &ep);
    for (int64_t i = 0; i < d.m; i++)
        for (int64_t j = 0; j < d.n; j++) {
            double s = 0, mag = 0;
            for (int64_t p = 0; p < d.k; p++) {
                double t = (double)inf__bf16_to_f32(inf__bf16_from_f32(d.a[i * d.lda + p])) *
                           inf__bf16_to_f32(inf__bf16_from_f32(d.b[p * d.ldb + j]));
                s += t, mag += fabs(t);
            }
            bad += fabs(c[i * d.ldc + j] - s) > (double)d.k * 6e-8 * mag + 1e-30;
        }
    check(bad == 0, "twin vs double-precision product of the bf16 operands");
    free(c);
    case_free(&d);
}

static void run_shape(inf__pool *pool2, int64_t m, int64_t n, int64_t k) {
    for (int tb = 0; tb < 2; tb++) {
        case_data d;
        char what[160];
        if (!case_make(&d, m, n, k, tb)) {
            check(false, "out of memory");
            case_free(&d);
            return;
        }
        for (int e = 0; e < 6; e++) {
            inf__bf16_epilogue ep = {e == 1 ? 0.5f : 1.0f,  e == 2, e >= 3 ? d.bias : NULL,
                                     e >= 4 ? d.res : NULL, d.ldc,  e == 5 ? inf__vmath_best()->gelu : NULL};
            double tol = e == 5 ? 1e-6 : 0.0;
            for (int th = 0; th < 2; th++) {
                int64_t bad = compare(&d, th ? pool2 : NULL, &ep, tol);
                snprintf(what, sizeof what, "m=%lld n=%lld k=%lld trans_b=%d epilogue %d threads %d: %lld differ",
                         (long long)m, (long long)n, (long long)k, tb, e, th + 1, (long long)bad);
                check(bad == 0, what);
            }
        }
        case_free(&d);
    }
}

/* Row i of an m-row product == the same row alone. */
static void test_batch_invariance(inf__pool *pool2) {
    case_data d;
    int64_t m = 67, n = 70, k = 129;
    if (!case_make(&d, m, n, k, false)) {
        check(false, "batch invariance: out of memory");
        case_free(&d);
        return;
    }
    inf__bf16_epilogue ep = {1.0f, false, d.bias, NULL, 0, NULL};
    float *all = calloc((size_t)(m * d.ldc), 4), *one = calloc((size_t)d.ldc, 4);
    void *ws = inf__aligned_alloc(inf__bf16_ws_bytes(m, k));
    int bad = 0;
    inf__bf16_gemm_avx512(pool2, m, n, k, d.a, d.lda, d.bp, all, d.ldc, &ep, ws);
    for (int64_t i = 0; i < m; i++) {
        inf__bf16_gemm_avx512(NULL, 1, n, k, d.a + i * d.lda, d.lda, d.bp, one, d.ldc, &ep, ws);
        bad += memcmp(one, all + i * d.ldc, (size_t)n * 4) != 0;
    }
    check(bad == 0, "batch invariance: each row of a 67-row product == the row alone");
    free(all), free(one), inf__aligned_free(ws);
    case_free(&d);
}

int main(int argc, char **argv) {
    int skip = kernel_paths_begin(argc, argv, "test_gemm_bf16");
    if (skip) return skip;
    if (!inf__bf16_supported()) {
        printf("test_gemm_bf16: no AVX512_BF16 on this CPU (or INFERA_CPU lowered the path): skipped\n");
        return 77;
    }
    inf__pool *pool2 = NULL;
    if (inf__pool_new(2, &pool2) != INF_OK) return 1;
    test_rounding();
    test_twin_vs_double();
    static const int64_t ms[] = {1, 2, 3, 5, 7, 8, 9, 16, 17, 63, 64, 65, 130};
    static const int64_t ns[] = {1, 15, 16, 17, 33, 48, 49, 96, 97, 200};
    static const int64_t ks[] = {1, 2, 3, 31, 32, 33, 64, 255, 256, 257, 769};
    for (size_t a = 0; a < sizeof ms / sizeof *ms; a++)
        for (size_t b = 0; b < sizeof ns / sizeof *ns; b++) {
            int64_t k = ks[(a * 7 + b * 3) % (sizeof ks / sizeof *ks)];
            run_shape(pool2, ms[a], ns[b], k);
        }
    for (int r = 0; r < 12; r++)
        run_shape(pool2, 1 + (int64_t)(next_u64() % 80), 1 + (int64_t)(next_u64() % 130),
                  1 + (int64_t)(next_u64() % 400));
    test_batch_invariance(pool2);
    inf__pool_free(pool2);
    printf("%d passed, %d failed\n", n_passed, n_failed);
    return n_failed ? 1 : 0;
}

#else
int main(void) {
    printf("test_gemm_bf16: the bf16 kernel is x86-64 only: skipped\n");
    return 77;
}
#endif
