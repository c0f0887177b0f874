/*
 * test_qgelu.c -- GELU straight into uint8 (ops/qgemm.h: x86/qgelu_avx2.c and
 * its twin inf__gelu_quantize_u8_ref) against QuantizeLinear of the AVX2
 * vmath GELU's floats, the quantization written here (round half to even,
 * + zp, clamp to [0, 255], NaN -> zp), bit for bit:
 *   - the cheap GELU's bound: |a(x) - gelu(x)| <= INF_GELU_Q_ERR for every
 *     finite float x with finite results (every 13th bit pattern; all 2^32 with
 *     INFERA_TEST_FULL=1), a non-finite a(x) only for |x| >= 2^127 (the kernel
 *     then takes the exact GELU: its comparisons fail);
 *   - random rows (the encoder's scales, wider ones, zero points 0..255),
 *     inputs placed on bin boundaries (x found here by bisection so that
 *     gelu(x) / scale is at k + 0.5, and its 16 float neighbours: where the
 *     cheap GELU must defer to the exact one), NaN, +-inf, +-3e30, denormals,
 *     zero points -7 / 300 and scales 1e-30 / 3e30 (the reference path);
 *     ragged lengths; bytes past n untouched;
 *   - the matrix-product driver's GELU-into-uint8 store (INF_QOUT_F32_U8 with a
 *     row GELU: the INT8 FFN's first QGemm linked to the second) on the ISA
 *     the CPU runs (INFERA_CPU / INFERA_QGEMM) against the reference ISA's
 *     scalar store, and against the float store + GELU + QuantizeLinear here.
 * Skips (77) without AVX2 + FMA or off x86-64.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/core.h"
#include "core/cpu.h"
#include "ops/qgemm.h"
#include "ops/vmath.h"

#define KERNEL_TEST_SEED 0x6E1C0DE5EEDull
#include "test_rng.h"

static int n_passed, n_failed;

static __attribute__((unused)) void check(bool ok, const char *what, int case_no) {
    if (ok)
        n_passed++;
    else if (n_failed++ < 20)
        printf("FAIL %s (case %d)\n", what, case_no);
}

#if defined(__x86_64__)
/* QuantizeLinear of the exact GELU, written here. */
static void twin(const float *x, int64_t n, float scale, int32_t zp, uint8_t *q) {
    for (int64_t i = 0; i < n; i++) {
        float g;
        inf__vmath_avx2.gelu(x + i, &g, 1);
        float r = nearbyintf(g / scale) + (float)zp;
        r = r < 0.0f ? 0.0f : r > 255.0f ? 255.0f : r;
        q[i] = r != r ? (uint8_t)zp : (uint8_t)r;
    }
}

static float exact_gelu(float x) {
    float g;
    inf__vmath_avx2.gelu(&x, &g, 1);
    return g;
}

static void bound_check(void) {
    enum { B = 1 << 16 };
    static float x[B], a[B], g[B];
    uint64_t step = getenv("INFERA_TEST_FULL") ? 1 : 13, bad = 0, odd = 0;
    double worst = 0;
    for (uint64_t base = 0; base < (1ull << 32); base += (uint64_t)B * step) {
        for (uint64_t j = 0; j < B; j++) {
            uint32_t u = (uint32_t)(base + j * step);
            memcpy(&x[j], &u, 4);
        }
        inf__gelu_approx_avx2(x, a, B);
        inf__vmath_avx2.gelu(x, g, B);
        for (int j = 0; j < B; j++) {
            if (!isfinite(x[j])) continue;
            if (!isfinite(a[j]) || !isfinite(g[j])) {
                odd += fabsf(x[j]) < 0x1p127f;
                continue;
            }
            double d = fabs((double)a[j] - (double)g[j]);
            if (d > worst) worst = d;
            bad += d > INF_GELU_Q_ERR;
        }
    }
    printf("cheap GELU: worst |a - gelu| %.3g (bound %.3g), every %llu-th float\n", worst, INF_GELU_Q_ERR,
           (unsigned long long)step);
    check(bad == 0, "cheap GELU within INF_GELU_Q_ERR", 0);
    check(odd == 0, "cheap GELU finite below 2^127", 0);
}

/* x in [lo, hi] with gelu(x) / scale closest to target (gelu increasing there). */
static float on_boundary(float lo, float hi, float scale, float target) {
    for (int it = 0; it < 60; it++) {
        float mid = 0.5f * (lo + hi);
        if (mid == lo || mid == hi) break;
        if (exact_gelu(mid) / scale < target)
            lo = mid;
        else
            hi = mid;
    }
    return lo;
}

static void row_cases(void) {
    enum { N = 1100 };
    static float x[N];
    static uint8_t want[N], got[N + 16], got_ref[N + 16];
    static const float odd[] = {NAN, INFINITY, -INFINITY, 3e30f, -3e30f, 1e-40f, -1e-40f, 0.0f, -0.0f, 6.0f, -6.0f};
    for (int c = 0; c < 700; c++) {
        int kind = c < 100 ? 0 : (int)rand_in(0, 4);
        float scale = kind == 0 ? 0.02f + 0.02f * (uniform() + 1.0f) : powf(10.0f, 2.5f * uniform() - 1.5f);
        int32_t zp = (int32_t)rand_in(0, 255);
        int64_t n = rand_in(1, N);
        for (int64_t i = 0; i < n; i++)
            x[i] = 2.5f * uniform() + 1.5f * uniform() - 0.3f;
        if (kind == 1) /* bin boundaries of the increasing part and their neighbours */
            for (int64_t i = 0; i + 17 <= n; i += 17) {
                float gmax = exact_gelu(8.0f) / scale, gmin = exact_gelu(-0.75f) / scale;
                float k = floorf(gmin + (gmax - gmin) * 0.5f * (uniform() + 1.0f)) + 0.5f;
                float b = on_boundary(-0.75f, 8.0f, scale, k);
                for (int t = 0; t < 8; t++)
                    b = nextafterf(b, -INFINITY);
                for (int t = 0; t < 17; t++)
                    x[i + t] = b, b = nextafterf(b, INFINITY);
            }
        if (kind == 2)
            for (int t = 0; t < 6; t++)
                x[rand_in(0, n - 1)] = odd[rand_in(0, 10)];
        if (kind == 3) zp = rand_in(0, 1) ? -7 : 300;
        if (kind == 4) scale = rand_in(0, 1) ? 1e-30f : 3e30f;
        twin(x, n, scale, zp, want);
        memset(got, 0xA5, sizeof got);
        memset(got_ref, 0xA5, sizeof got_ref);
        inf__gelu_quantize_u8_avx2(x, n, scale, zp, got);
        inf__gelu_quantize_u8_ref(x, n, scale, zp, got_ref, inf__vmath_avx2.gelu);
        bool untouched = true;
        for (int64_t i = n; i < n + 16; i++)
            untouched = untouched && got[i] == 0xA5 && got_ref[i] == 0xA5;
        char what[96];
        snprintf(what, sizeof what, "gelu_quantize_u8 avx2 n=%lld kind=%d scale=%g zp=%d", (long long)n, kind, scale,
                 zp);
        check(!memcmp(want, got, (size_t)n) && untouched, what, c);
        snprintf(what, sizeof what, "gelu_quantize_u8 ref n=%lld kind=%d", (long long)n, kind);
        check(!memcmp(want, got_ref, (size_t)n), what, c);
    }
}

static void driver_cases(void) {
    inf__qgemm_isa best = inf__qgemm_best_isa();
    for (int c = 0; c < 60; c++) {
        int64_t m = rand_in(1, 80), k = rand_in(1, 120), n = rand_in(1, 90);
        float *a = malloc((size_t)(m * k) * 4), *mult = malloc((size_t)n * 4), *bias = malloc((size_t)n * 4);
        float *ref = malloc((size_t)(m * n) * 4);
        int8_t *w = malloc((size_t)(k * n));
        uint8_t *y[2] = {malloc((size_t)(m * n)), malloc((size_t)(m * n))}, *want = malloc((size_t)(m * n));
        for (int64_t i = 0; i < m * k; i++)
            a[i] = uniform() * 2;
        for (int64_t i = 0; i < k * n; i++)
            w[i] = (int8_t)rand_in(-64, 64); /* pair-safe: every AVX2 kernel */
        for (int64_t j = 0; j < n; j++)
            mult[j] = (float)rand_in(1, 1000) * 1e-4f, bias[j] = uniform();
        inf__qsrc src = {.data = a,
                         .dtype = INF_DTYPE_F32,
                         .ld = k,
                         .scale = 0.01f,
                         .zp = (int32_t)rand_in(0, 255),
                         .q_dtype = INF_DTYPE_U8};
        inf__qout out = {.kind = INF_QOUT_F32_U8,
                         .mult = mult,
                         .mult_per_col = rand_in(0, 1),
                         .bias_f32 = rand_in(0, 3) ? bias : NULL,
                         .rq_scale = 0.01f + 0.05f * (uniform() + 1),
                         .rq_zp = (int32_t)rand_in(0, 255),
                         .row_act = inf__vmath_avx2.gelu};
        inf__qgemm_isa isa = inf__qgemm_pack_isa(best, k, n, w, INF_DTYPE_I8, n, false);
        for (int v = 0; v < 2; v++) {
            inf__qgemm_isa which = v ? INF_QGEMM_REF : isa;
            inf__qgemm_b pb;
            void *mem = inf__aligned_alloc(inf__qgemm_pack_b_bytes(which, k, n));
            inf__qgemm_pack_b_into(mem, which, k, n, w, INF_DTYPE_I8, n, false, NULL, 1, &pb);
            void *scratch = inf__aligned_alloc(inf__qmatmul_scratch_bytes(&pb, m));
            inf__qmatmul_drive(NULL, &pb, m, &src, &out, y[v], n, scratch);
            inf__aligned_free(scratch);
            inf__aligned_free(mem);
        }
        /* here: QuantizeLinear of x, the integer sums, (float)acc * mult + bias, then twin() */
        for (int64_t i = 0; i < m; i++)
            for (int64_t j = 0; j < n; j++) {
                int64_t acc = 0;
                for (int64_t p = 0; p < k; p++) {
                    float r = nearbyintf(a[i * k + p] / src.scale) + (float)src.zp;
                    acc += ((int64_t)(r < 0 ? 0 : r > 255 ? 255 : r) - src.zp) * w[p * n + j];
                }
                float v = (float)acc * mult[out.mult_per_col ? j : 0];
                ref[i * n + j] = out.bias_f32 ? v + bias[j] : v;
            }
        twin(ref, m * n, out.rq_scale, out.rq_zp, want);
        char what[96];
        snprintf(what, sizeof what, "%s driver GELU -> uint8 m=%lld k=%lld n=%lld vs reference ISA",
                 inf__qgemm_isa_name(isa), (long long)m, (long long)k, (long long)n);
        check(!memcmp(y[0], y[1], (size_t)(m * n)), what, c);
        check(!memcmp(y[1], want, (size_t)(m * n)), "driver GELU -> uint8, reference ISA vs here", c);
        free(a), free(mult), free(bias), free(ref), free(w), free(y[0]), free(y[1]), free(want);
    }
}
#endif

int main(void) {
#if defined(__x86_64__)
    if (!inf__cpu_has_avx2_fma()) {
        printf("skipped: the CPU lacks AVX2 + FMA\n");
        return 77;
    }
    bound_check();
    row_cases();
    driver_cases();
    printf("%d passed, %d failed\n", n_passed, n_failed);
    return n_failed ? 1 : 0;
#else
    printf("skipped: x86-64 only\n");
    return 77;
#endif
}
