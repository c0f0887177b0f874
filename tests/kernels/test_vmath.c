/*
 * test_vmath.c -- the vectorised float32 math (ops/vmath.h: the portable
 * table, and the AVX2 and AVX-512 ones when the CPU has them) against
 * double-precision libm, with maximum errors asserted.
 *
 * Inputs (~11 M per function and table): every 397th float bit pattern
 * (both signs, every exponent: denormals, huge values, +-inf, NaNs), 2 M
 * values evenly over [-30, 30], and a list of edge cases (+-0, +-inf, NaN,
 * the smallest denormals, FLT_MAX, the branch points of each function).
 * Error in ulps of the exact result (1 ulp = the float spacing at the exact
 * value; below FLT_MIN the denormal spacing 2^-149).  Results whose exact
 * value overflows must be +-inf; NaN in must give NaN out.  The bounds:
 *     exp 2, tanh 3, sigmoid 3, erf 3, gelu 20 ulp
 * (gelu's worst case is x just above -sqrt 2, where 1 + erf(x / sqrt 2)
 * cancels to 0.16 and magnifies erf's error ~6x; elsewhere it is a few
 * ulps, and in the negative tail, where the decomposed graph's 1 + erff()
 * loses every digit, it stays relative)
 * and the float libm path the kernels replaced (expf, tanhf, erff, and
 * 0.5 x (1 + erff(x / 1.4142135)) for the decomposed GELU) is measured the
 * same way and printed for comparison.  Also checked: an element's result
 * does not depend on its position in the array (vector body vs tail), and
 * the Softmax / LayerNormalization rows match a double reference.
 * The AVX-512 table (when the path allows it) is checked the same way and
 * must also give the AVX2 table's bits everywhere (same_as_avx2).
 * Prints one line per check and "N passed, M failed".
 */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/core.h"
#include "core/cpu.h"
#include "ops/vmath.h"

static int n_passed, n_failed;

static double ref_exp(double x) { return exp(x); }
static double ref_tanh(double x) { return tanh(x); }
static double ref_erf(double x) { return erf(x); }
static double ref_sigmoid(double x) { return 1.0 / (1.0 + exp(-x)); }
static double ref_gelu(double x) { return 0.5 * x * erfc(-x / sqrt(2.0)); }

static float libm_exp(float x) { return expf(x); }
static float libm_tanh(float x) { return tanhf(x); }
static float libm_erf(float x) { return erff(x); }
static float libm_sigmoid(float x) { return x >= 0 ? 1.0f / (1.0f + expf(-x)) : expf(x) / (1.0f + expf(x)); }
static float libm_gelu(float x) { return x * 0.5f * (1.0f + erff(x / 1.41421354f)); }

typedef struct fn_case {
    const char *name;
    size_t offset; /* of the inf__vmath_fn in inf__vmath */
    double (*ref)(double);
    float (*libm)(float);
    double bound; /* ulps */
} fn_case;

static const fn_case cases[] = {
    {"exp", offsetof(inf__vmath, exp), ref_exp, libm_exp, 2},
    {"tanh", offsetof(inf__vmath, tanh), ref_tanh, libm_tanh, 3},
    {"erf", offsetof(inf__vmath, erf), ref_erf, libm_erf, 3},
    {"sigmoid", offsetof(inf__vmath, sigmoid), ref_sigmoid, libm_sigmoid, 3},
    {"gelu", offsetof(inf__vmath, gelu), ref_gelu, libm_gelu, 20},
};

static float from_bits(uint32_t b) {
    float f;
    memcpy(&f, &b, sizeof f);
    return f;
}

/* Error of y in ulps of the exact value r; INFINITY for a wrong inf/NaN. */
static double ulp_error(float y, double r) {
    if (isnan(r)) return isnan(y) ? 0 : INFINITY;
    if (fabs(r) > FLT_MAX) { /* overflows: must round to inf, or to FLT_MAX within half an ulp */
        if (isinf(y) && (y > 0) == (r > 0)) return 0;
        return fabs(r) < (double)FLT_MAX + ldexp(1, 103) ? fabs(y - r) / ldexp(1, 104) : INFINITY;
    }
    if (isnan(y) || isinf(y)) return INFINITY;
    double a = fabs(r), ulp = ldexp(1, -149);
    if (a >= FLT_MIN) {
        int e;
        frexp(a, &e);
        ulp = ldexp(1, e - 24);
    }
    return fabs((double)y - r) / ulp;
}

static float *make_inputs(size_t *n_out) {
    static const float edges[] = {0.0f, -0.0f, INFINITY, -INFINITY, NAN, -NAN, 1e-45f, -1e-45f, 1e-40f, -1e-38f,
                                  FLT_MIN, FLT_MAX, -FLT_MAX, 88.72f, 88.7228f, 89.0f, -87.3f, -103.9f, -104.0f,
                                  -110.0f, 0.625f, -0.625f, 0.62499f, 9.1f, 1.0f, -1.0f, 0.99999f, 1.41421354f,
                                  -1.41421354f, 20.0f, 28.0f, -28.0f, 28.3f, -13.0f, -14.0f, -19.0f, 3.92f, -5.0f};
    size_t n_edges = sizeof edges / sizeof edges[0], n_sweep = (1ull << 32) / 397 + 1, n_dense = 2000000;
    size_t n = n_edges + n_sweep + n_dense;
    float *x = malloc(n * sizeof *x);
    if (!x) return NULL;
    size_t k = 0;
    for (size_t i = 0; i < n_edges; i++) x[k++] = edges[i];
    for (uint64_t b = 0; b < (1ull << 32); b += 397) x[k++] = from_bits((uint32_t)b);
    for (size_t i = 0; i < n_dense; i++) x[k++] = (float)(-30.0 + 60.0 * (double)i / (double)n_dense);
    *n_out = k;
    return x;
}

static void check(bool ok, const char *fmt, const char *a, const char *b, double v, double bound) {
    printf("%s %s %s: max error %.3g ulp (bound %g)\n", ok ? "ok  " : "FAIL", a, b, v, bound);
    ok ? n_passed++ : n_failed++;
    (void)fmt;
}

static void test_table(const inf__vmath *vm, const float *x, size_t n, float *y) {
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        inf__vmath_fn fn = *(const inf__vmath_fn *)((const char *)vm + cases[c].offset);
        fn(x, y, (int64_t)n);
        double worst = 0, worst_libm = 0;
        float at = 0;
        for (size_t i = 0; i < n; i++) {
            double r = cases[c].ref((double)x[i]);
            double e = ulp_error(y[i], r);
            if (e > worst) worst = e, at = x[i];
            if (vm == &inf__vmath_portable) {
                double el = ulp_error(cases[c].libm(x[i]), r);
                if (el > worst_libm) worst_libm = el;
            }
        }
        check(worst <= cases[c].bound, "", vm->name, cases[c].name, worst, cases[c].bound);
        if (worst > cases[c].bound) printf("     worst at x = %.9g\n", at);
        if (vm == &inf__vmath_portable) printf("     (float libm path: max error %.3g ulp)\n", worst_libm);
        /* position independence: the same values at every offset mod 8, lengths 1..19 */
        bool same = true;
        float a[32], b[32];
        for (int off = 0; off < 8 && same; off++)
            for (int len = 1; len < 20 && same; len++) {
                float src[32];
                for (int i = 0; i < len; i++) src[i] = x[1000 + i * 7919 % 100000 + off];
                fn(src, a, len);
                for (int i = 0; i < len; i++) {
                    fn(src + i, b, 1);
                    if (memcmp(&a[i], &b[0], sizeof(float)) != 0) same = false;
                }
            }
        printf("%s %s %s: results independent of position\n", same ? "ok  " : "FAIL", vm->name, cases[c].name);
        same ? n_passed++ : n_failed++;
    }
}

static void test_rows(const inf__vmath *vm) {
    static float x[1100], y[1100], sc[1100], bi[1100];
    uint64_t s = 88172645463325252ull;
    double worst_sm = 0, worst_ln = 0, worst_rms = 0;
    for (int n = 1; n <= 1030; n += (n < 40 ? 1 : 37)) {
        for (int i = 0; i < n; i++) {
            s ^= s << 13, s ^= s >> 7, s ^= s << 17;
            x[i] = (float)((double)(s >> 11) / 9007199254740992.0 * 20 - 10);
            sc[i] = 0.5f + (float)(i % 7) * 0.25f;
            bi[i] = (float)(i % 5) - 2.0f;
        }
        vm->softmax_row(x, y, n);
        double mx = -INFINITY, sum = 0;
        for (int i = 0; i < n; i++) mx = x[i] > mx ? x[i] : mx;
        for (int i = 0; i < n; i++) sum += exp(x[i] - mx);
        for (int i = 0; i < n; i++) {
            double r = exp(x[i] - mx) / sum, e = fabs(y[i] - r) / r; /* x - max rounds: ~1 ulp of 20 */
            if (e > worst_sm) worst_sm = e;
        }
        double mean_, inv_;
        vm->layernorm_row(x, y, n, sc, n % 2 ? bi : NULL, 1e-5, &mean_, &inv_);
        double m = 0, v = 0;
        for (int i = 0; i < n; i++) m += x[i];
        m /= n;
        for (int i = 0; i < n; i++) v += (x[i] - m) * (x[i] - m);
        double inv = 1 / sqrt(v / n + 1e-5);
        for (int i = 0; i < n; i++) {
            double r = (x[i] - m) * inv * sc[i] + (n % 2 ? bi[i] : 0), e = fabs(y[i] - r) / (1 + fabs(r));
            if (e > worst_ln) worst_ln = e;
        }
        vm->rmsnorm_row(x, y, n, sc, 1e-6);
        double q = 0;
        for (int i = 0; i < n; i++) q += (double)x[i] * x[i];
        double rinv = 1 / sqrt(q / n + 1e-6);
        for (int i = 0; i < n; i++) {
            double r = x[i] * rinv * sc[i], e = fabs(y[i] - r) / (1 + fabs(r));
            if (e > worst_rms) worst_rms = e;
        }
    }
    printf("%s %s softmax rows: max relative error %.3g (bound 2e-6)\n", worst_sm <= 2e-6 ? "ok  " : "FAIL", vm->name,
           worst_sm);
    worst_sm <= 2e-6 ? n_passed++ : n_failed++;
    printf("%s %s layernorm rows: max error %.3g (bound 2e-6 (1 + |y|))\n", worst_ln <= 2e-6 ? "ok  " : "FAIL", vm->name,
           worst_ln);
    worst_ln <= 2e-6 ? n_passed++ : n_failed++;
    printf("%s %s rmsnorm rows: max error %.3g (bound 2e-6 (1 + |y|))\n", worst_rms <= 2e-6 ? "ok  " : "FAIL", vm->name,
           worst_rms);
    worst_rms <= 2e-6 ? n_passed++ : n_failed++;
    float ninf[5] = {-INFINITY, -INFINITY, -INFINITY, -INFINITY, -INFINITY}, out[5];
    vm->softmax_row(ninf, out, 5); /* as the reference kernel: 0 / 0 */
    bool nan_ok = isnan(out[0]) && isnan(out[4]);
    printf("%s %s softmax of an all -inf row is NaN\n", nan_ok ? "ok  " : "FAIL", vm->name);
    nan_ok ? n_passed++ : n_failed++;
}

/* The AVX-512 table gives the AVX2 table's bits: every function on all the
 * inputs (lengths with every tail 0..15), Softmax and LayerNorm rows of
 * lengths 1..300 (each 16-block, 8-block and scalar tail mix). */
static void same_as_avx2(const inf__vmath *w, const inf__vmath *v, const float *x, size_t n, float *y) {
    float *z = malloc(n * sizeof *z);
    if (!z) {
        printf("FAIL out of memory\n");
        n_failed++;
        return;
    }
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        inf__vmath_fn fw = *(const inf__vmath_fn *)((const char *)w + cases[c].offset);
        inf__vmath_fn fv = *(const inf__vmath_fn *)((const char *)v + cases[c].offset);
        fw(x, y, (int64_t)n), fv(x, z, (int64_t)n);
        bool same = !memcmp(y, z, n * sizeof(float));
        for (size_t len = 1; len <= 33 && same; len++) /* every tail length, at several offsets */
            for (size_t off = 0; off < n - 64 && same; off += n / 7) {
                fw(x + off, y, (int64_t)len), fv(x + off, z, (int64_t)len);
                same = !memcmp(y, z, len * sizeof(float));
            }
        printf("%s %s %s: bit for bit %s\n", same ? "ok  " : "FAIL", w->name, cases[c].name, v->name);
        same ? n_passed++ : n_failed++;
    }
    static float sc[300], bi[300], yw[300], yv[300];
    for (int i = 0; i < 300; i++)
        sc[i] = 0.5f + (float)(i % 7) * 0.25f, bi[i] = (float)(i % 5) - 2.0f;
    bool sm = true, ln = true, rms = true;
    for (int len = 1; len <= 300; len++) {
        const float *row = x + 1000 + (size_t)len * 4099 % (n - 1300); /* finite and non-finite inputs */
        w->softmax_row(row, yw, len), v->softmax_row(row, yv, len);
        for (int i = 0; i < len; i++)
            if (memcmp(&yw[i], &yv[i], sizeof(float)) && !(isnan(yw[i]) && isnan(yv[i]))) sm = false;
        double mw, iw, mv, iv;
        w->layernorm_row(row, yw, len, sc, len % 2 ? bi : NULL, 1e-5, &mw, &iw);
        v->layernorm_row(row, yv, len, sc, len % 2 ? bi : NULL, 1e-5, &mv, &iv);
        for (int i = 0; i < len; i++)
            if (memcmp(&yw[i], &yv[i], sizeof(float)) && !(isnan(yw[i]) && isnan(yv[i]))) ln = false;
        if (memcmp(&mw, &mv, sizeof mw) && !(isnan(mw) && isnan(mv))) ln = false;
        w->rmsnorm_row(row, yw, len, sc, 1e-6), v->rmsnorm_row(row, yv, len, sc, 1e-6);
        for (int i = 0; i < len; i++)
            if (memcmp(&yw[i], &yv[i], sizeof(float)) && !(isnan(yw[i]) && isnan(yv[i]))) rms = false;
    }
    printf("%s %s softmax rows: bit for bit %s\n", sm ? "ok  " : "FAIL", w->name, v->name);
    printf("%s %s layernorm rows: bit for bit %s\n", ln ? "ok  " : "FAIL", w->name, v->name);
    printf("%s %s rmsnorm rows: bit for bit %s\n", rms ? "ok  " : "FAIL", w->name, v->name);
    sm ? n_passed++ : n_failed++;
    ln ? n_passed++ : n_failed++;
    rms ? n_passed++ : n_failed++;
    free(z);
}

/* The AVX-512 GELU packs the lanes that need its erfc tail (|x| >= sqrt 2,
 * NaN) into full vectors and runs the small half elsewhere, per block of
 * 1024, unless more than half of a block needs the tail.  Mixes of both
 * kinds at every share around that switch, the special values among them,
 * lengths across the block and vector edges, in place and not: the AVX2
 * table's bits everywhere. */
static void gelu_split_lanes(const inf__vmath *w, const inf__vmath *v) {
    enum { N = 4200 };
    static float x[N], yw[N], yv[N], xi[N];
    static const float special[] = {
        NAN,         INFINITY,     -INFINITY,           28.0f, -28.0f, 27.99f, 1.41421354f, -1.41421354f,
        1.41421366f, -1.41421342f, 20.0f * 1.41421354f, -9.5f, -0.0f,  1e30f,  -1e30f};
    static const int shares[] = {0, 3, 10, 33, 49, 50, 51, 70, 100}; /* percent of lanes in the tail */
    static const int lens[] = {1, 15, 16, 17, 100, 1023, 1024, 1025, 2048, 2100, N};
    unsigned seed = 12345;
    bool same = true;
    for (size_t s = 0; s < sizeof shares / sizeof shares[0]; s++) {
        for (int i = 0; i < N; i++) {
            seed = seed * 1103515245u + 12345u;
            float u = (float)((seed >> 8) & 0xFFFF) / 65536.0f; /* [0, 1) */
            bool tail = (int)((seed >> 24) % 100) < shares[s];
            x[i] = tail ? (u < 0.5f ? -1.5f - 12.0f * u : 1.42f + 6.0f * u) : 2.8f * u - 1.4f;
            if (tail && (seed >> 4) % 37 == 0) x[i] = special[(seed >> 12) % (sizeof special / sizeof special[0])];
        }
        for (size_t l = 0; l < sizeof lens / sizeof lens[0]; l++) {
            int len = lens[l];
            w->gelu(x, yw, len), v->gelu(x, yv, len);
            same = same && !memcmp(yw, yv, (size_t)len * sizeof(float));
            memcpy(xi, x, (size_t)len * sizeof(float));
            w->gelu(xi, xi, len); /* in place */
            same = same && !memcmp(xi, yv, (size_t)len * sizeof(float));
        }
    }
    printf("%s %s gelu, tail lanes packed (0-100%% of them): bit for bit %s\n", same ? "ok  " : "FAIL", w->name,
           v->name);
    same ? n_passed++ : n_failed++;
}

/* inf__vmath_gelu_tanh (composed on vm's sigmoid) against its twin in double,
 * 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) (as x / (1 + exp(-u)): 1 + tanh
 * cancels in double too): error <= 8 ulp where
 * |u| <= 1 (u = 2 sqrt(2/pi) (x + 0.044715 x^3)), else <= 8 |u| ulp (the
 * float u's rounding magnified by the sigmoid), and one element's result
 * the same at every array position.  The decomposed graph's float path is
 * measured the same way and printed. */
/* (as x / (1 + exp(-u)): the same function, and 1 + tanh cancels even in double) */
static double ref_gelu_tanh(double x) {
    double u = 1.59576912160573071 * (x + 0.044715 * x * x * x);
    return isinf(x) ? (x > 0 ? x : NAN) : x / (1 + exp(-u));
}

static void test_gelu_tanh(const inf__vmath *vm, const float *x, size_t n, float *y) {
    inf__vmath_gelu_tanh(vm, x, y, (int64_t)n);
    double worst = 0, worst_graph = 0;
    float at = 0;
    for (size_t i = 0; i < n; i++) {
        double xd = x[i], r = ref_gelu_tanh(xd), u = fabs(1.59576912160573071 * (xd + 0.044715 * xd * xd * xd));
        double scale = isfinite(u) && u > 1 ? u : 1, e = ulp_error(y[i], r) / scale;
        if (isnan(e) || e > worst) worst = isnan(e) ? INFINITY : e, at = x[i];
        float xf = x[i], g = 0.5f * xf * (1.0f + tanhf(0.797884583f * (xf + 0.044715f * (xf * xf * xf))));
        double eg = ulp_error(g, r) / scale;
        if (eg > worst_graph) worst_graph = eg;
    }
    check(worst <= 8, "", vm->name, "gelu_tanh (ulp / max(1, |u|))", worst, 8);
    if (worst > 8) printf("     worst at x = %.9g\n", at);
    printf("     (float graph path: max %.3g)\n", worst_graph);
    /* position independence: 1000 values at offsets 0..300 of a padded array */
    float in[1301], out[1301], base[1000];
    inf__vmath_gelu_tanh(vm, x + n - 1000, base, 1000);
    bool same = true;
    for (int off = 0; off <= 300 && same; off += 7) {
        memcpy(in + off, x + n - 1000, 1000 * sizeof *in);
        inf__vmath_gelu_tanh(vm, in + off, out + off, 1000);
        same = !memcmp(out + off, base, sizeof base);
        inf__vmath_gelu_tanh(vm, in + off, in + off, 1000); /* in place */
        same = same && !memcmp(in + off, base, sizeof base);
    }
    printf("%s %s gelu_tanh: same bits at every array offset and in place\n", same ? "ok  " : "FAIL", vm->name);
    same ? n_passed++ : n_failed++;
}

int main(void) {
    size_t n;
    float *x = make_inputs(&n), *y = x ? malloc(n * sizeof *y) : NULL;
    if (!x || !y) {
        printf("out of memory\n0 passed, 1 failed\n");
        return 1;
    }
    printf("%zu inputs per function\n", n);
    const inf__vmath *tables[3] = {&inf__vmath_portable, NULL, NULL};
#if defined(__x86_64__)
    if (inf__cpu_has_avx2_fma()) tables[1] = &inf__vmath_avx2;
    else printf("(no AVX2/FMA on this CPU: the AVX2 table is not tested)\n");
    if (inf__cpu_has_avx512())
        tables[2] = &inf__vmath_avx512;
    else
        printf("(path %s: the AVX-512 table is not tested)\n", inf_cpu_get_info()->path);
#elif defined(__aarch64__)
    if (inf__cpu_has_neon()) tables[1] = &inf__vmath_neon;
    else printf("(INFERA_CPU=generic: the NEON table is not tested)\n");
#endif
    for (int t = 0; t < 3; t++)
        if (tables[t]) {
            test_table(tables[t], x, n, y);
            test_gelu_tanh(tables[t], x, n, y);
            test_rows(tables[t]);
        }
    if (tables[1] && tables[2]) same_as_avx2(tables[2], tables[1], x, n, y), gelu_split_lanes(tables[2], tables[1]);
    free(x);
    free(y);
    printf("%d passed, %d failed\n", n_passed, n_failed);
    return n_failed ? 1 : 0;
}
