/*
 * test_pool.c -- the AVX2 2-D pooling (ops/x86/pool_avx2.c) against its
 * reference twin inf__ops_pool2d_f32_ref (the window loop of ops/ref/pool.c).
 *
 * Random shapes: planes 1..5 (batch 1 included), input 1..70 x 1..70 (odd
 * widths, widths around the 8-float vectors), kernel 1..5 per dim, strides
 * 1..3 down and 1..6 across (1, 2 and > 2 are three vector paths: loads,
 * shuffled loads, gathers), asymmetric pads below the kernel
 * size, floor and ceil rounding of the output size, max and average (with
 * and without count_include_pad); one case in four is the 2x2, stride-2,
 * unpadded window of the dedicated path (pool2x2_planes).  Inputs hold some NaNs, -0 and +0, and
 * repeated values.  Max must be bit-identical; the average within
 * 1e-6 * (sum of |x| / count) + 1e-30 (the reference sums in double).
 * On the avx512 path every case runs the AVX-512 sibling
 * (ops/x86/pool_avx512.c) too, held to the AVX2 kernel's bits.  And
 * GlobalAveragePool's double sum (inf__sum_f32_as_f64_avx2) against its
 * documented order, bit for bit (check_sum).
 * Prints "N passed, M failed"; skips on a CPU without AVX2/FMA.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/core.h"
#include "core/cpu.h"
#include "ops/ops.h"

static int n_passed, n_failed, n_wide __attribute__((unused)); /* n_wide: x86 only */
#define KERNEL_TEST_SEED 0x853C49E6748FEA9Bull
#include "test_rng.h"

#if defined(__x86_64__) /* the x86-64 kernels under test are built on x86 only (CMakeLists.txt) */

static float value(void) {
    switch (next_u64() % 40) {
    case 0: return NAN;
    case 1: return -0.0f;
    case 2: return 0.0f;
    case 3: return 1.0f;
    default: return uniform();
    }
}

/* Output size of one dim; -1 when the window does not fit. */
static int64_t out_size(int64_t in, int64_t k, int64_t s, int64_t pb, int64_t pe, bool ceil_mode) {
    int64_t span = in + pb + pe - k;
    if (span < 0) return -1;
    if (!ceil_mode) return span / s + 1;
    int64_t out = (span + s - 1) / s + 1;
    if ((out - 1) * s >= in + pb) out--;
    return out;
}

static void check_one(void) {
    inf__pool2d q = {0}; /* xplane, yplane 0: dense planes */
    int64_t planes = rand_in(1, 5);
    q.ih = rand_in(1, 70), q.iw = next_u64() % 3 ? rand_in(1, 40) : rand_in(1, 70);
    q.kh = rand_in(1, 5), q.kw = rand_in(1, 5);
    q.sh = rand_in(1, 3), q.sw = next_u64() % 4 ? rand_in(1, 2) : rand_in(3, 6);
    q.pt = rand_in(0, q.kh - 1), q.pb = rand_in(0, q.kh - 1), q.pl = rand_in(0, q.kw - 1), q.pr = rand_in(0, q.kw - 1);
    bool ceil_mode = next_u64() % 2;
    if (next_u64() % 4 == 0) q.kh = q.kw = q.sh = q.sw = 2, q.pt = q.pl = q.pb = q.pr = 0;
    q.max = next_u64() % 2;
    q.count_include_pad = next_u64() % 2;
    q.oh = out_size(q.ih, q.kh, q.sh, q.pt, q.pb, ceil_mode);
    q.ow = out_size(q.iw, q.kw, q.sw, q.pl, q.pr, ceil_mode);
    if (q.oh < 1 || q.ow < 1) return;
    size_t nx = (size_t)(planes * q.ih * q.iw), ny = (size_t)(planes * q.oh * q.ow);
    float *x = malloc(nx * sizeof *x), *yr = malloc(ny * sizeof *yr), *ya = malloc(ny * sizeof *ya);
    if (!x || !yr || !ya) {
        n_failed++;
        free(x), free(yr), free(ya);
        return;
    }
    for (size_t i = 0; i < nx; i++) x[i] = q.max ? value() : (float)((double)(next_u64() >> 11) / 9007199254740992.0 * 2.0 - 1.0);
    inf__ops_pool2d_f32_ref(&q, x, yr, planes);
    inf__ops_pool2d_f32_avx2(&q, x, ya, planes);
    bool ok = true;
    if (inf__cpu_has_avx512()) { /* the AVX-512 sibling: the AVX2 kernel's bits */
        float *yw = malloc(ny * sizeof *yw);
        if (yw) inf__ops_pool2d_f32_avx512(&q, x, yw, planes);
        ok = yw && memcmp(yw, ya, ny * sizeof *yw) == 0;
        if (!ok) fprintf(stderr, "  the AVX-512 kernel differs from the AVX2 kernel\n");
        free(yw);
        n_wide++;
    }
    for (size_t i = 0; i < ny && ok; i++) {
        if (q.max) {
            ok = memcmp(&yr[i], &ya[i], sizeof(float)) == 0;
        } else {
            double tol = 1e-6 * (fabs(yr[i]) + 1.0) * (double)(q.kh * q.kw);
            ok = fabs((double)yr[i] - (double)ya[i]) <= tol;
        }
        if (!ok)
            fprintf(stderr, "  y[%zu]: avx2 %.9g, ref %.9g\n", i, ya[i], yr[i]);
    }
    if (ok) {
        n_passed++;
    } else {
        n_failed++;
        fprintf(stderr,
                "FAIL %s planes=%lld in=%lldx%lld k=%lldx%lld s=%lldx%lld pads=%lld,%lld,%lld,%lld ceil=%d incl_pad=%d\n",
                q.max ? "max" : "avg", (long long)planes, (long long)q.ih, (long long)q.iw, (long long)q.kh,
                (long long)q.kw, (long long)q.sh, (long long)q.sw, (long long)q.pt, (long long)q.pl, (long long)q.pb,
                (long long)q.pr, ceil_mode, q.count_include_pad);
    }
    free(x), free(yr), free(ya);
}

/* GlobalAveragePool's sum (inf__sum_f32_as_f64_avx2) against the order
 * ops/ref/pool.c documents, written out here (16 chains, j adding x[j],
 * x[j + 16], ..., then (a[j] + a[4 + j]) + (a[8 + j] + a[12 + j]) and the
 * four of those pairwise) -- bit for bit -- and against a long double sum
 * (within 1e-14 of the sum of |x|), on values of wide-ranging exponents
 * (sums that round, so that another order gives other bits); lengths 0..70 (every tail) and up to
 * 12544 (112 x 112, EfficientNet-B0's largest squeeze). */
static void check_sum(int64_t n) {
    float *x = malloc((size_t)(n + 1) * sizeof *x);
    if (!x) {
        n_failed++;
        return;
    }
    long double exact = 0, mag = 0;
    for (int64_t i = 0; i < n; i++) {
        float v = value();
        /* no NaN: the order is what is checked; exponents over 2^-20..2^19, so
         * that the double sums round and a different order gives other bits */
        x[i] = ldexpf(v != v ? 0.5f : v, (int)(next_u64() % 40) - 20);
        exact += x[i], mag += fabsl((long double)x[i]);
    }
    double a[16] = {0}, v[4];
    for (int64_t i = 0; i < n; i++) a[i % 16] += x[i];
    for (int j = 0; j < 4; j++) v[j] = (a[j] + a[4 + j]) + (a[8 + j] + a[12 + j]);
    double want = (v[0] + v[1]) + (v[2] + v[3]), got = inf__sum_f32_as_f64_avx2(x, n);
    if (memcmp(&got, &want, sizeof got) || fabsl(got - exact) > 1e-14L * mag) {
        n_failed++;
        fprintf(stderr, "FAIL sum n=%lld: %.17g, the documented order %.17g, exact %.17Lg\n", (long long)n, got, want,
                exact);
    } else {
        n_passed++;
    }
    free(x);
}

int main(void) {
    if (!inf__cpu_has_avx2_fma()) {
        printf("pool2d avx2: CPU without AVX2/FMA, skipped\n0 passed, 0 failed\n");
        return 77 /* ctest SKIP_RETURN_CODE: nothing ran */;
    }
    for (int i = 0; i < 3000; i++) check_one();
    for (int64_t n = 0; n <= 70; n++) check_sum(n);
    for (int i = 0; i < 30; i++) check_sum((int64_t)(next_u64() % 12545));
    printf("pool2d avx2 vs ref: %s\n", n_failed ? "FAILED" : "ok");
    printf("%d passed, %d failed (%d also on the AVX-512 kernel, held to the AVX2 kernel's bits)\n", n_passed, n_failed,
           n_wide);
    return n_failed ? 1 : 0;
}
#else
int main(void) {
    (void)n_passed, (void)n_failed;
    printf("pool2d: the x86-64 kernels are not built on this architecture, skipped\n");
    return 77;
}
#endif
