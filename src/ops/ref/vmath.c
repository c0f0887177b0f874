/*
 * vmath.c -- portable float32 exp, tanh, erf, sigmoid, GELU and the Softmax
 * and LayerNormalization row loops (the inf__vmath_portable table), and the
 * run-time choice between it and the AVX2 twin (ops/x86/math_avx2.c).
 *
 * ALGORITHMS (identical in both twins; the AVX2 one fuses multiply-adds,
 * so the two differ in the last bit now and then, each within the bounds
 * below, asserted by tests/kernels/test_vmath.c against double libm):
 *   exp(x)   x clamped to [-104, 89]; n = round(x log2 e) (the 1.5 * 2^23
 *            trick); r = x - n ln2 with ln2 split in two (Cody-Waite);
 *            e^r by Cephes' degree-7 polynomial; times 2^n as 2^(n/2) *
 *            2^(n - n/2) so that denormal results are rounded once (the
 *            AVX-512 twin: one vscalefps, the same single rounding).
 *            Error <= 2 ulp (denormal results: <= 1 ulp of 2^-149 extra).
 *   tanh(x)  |x| < 0.625: Cephes' odd polynomial x + x z P(z), z = x^2;
 *            else sign(x) (1 - 2 / (exp(2|x|) + 1)), |x| clamped to 9.1
 *            (tanh rounds to 1 beyond).  Error <= 3 ulp.
 *   sigmoid  e = exp(-|x|), r = 1 / (1 + e): r for x >= 0, e r for x < 0
 *            (no cancellation, tiny results keep their precision).
 *            Error <= 3 ulp (plus denormal rounding).
 *   erf(x)   |x| < 1: x P(x^2), degree-6 fit (rel. error 1.2e-9);
 *            |x| >= 1: 1 - erfc(|x|), signed, with
 *            erfc(t) = exp(-t^2) g(1/t), t clamped to 20: t^2 kept exact as
 *            hi + lo (fma / double), g a degree-10 fit in z = 1/t on
 *            [0.05, 1] (rel. error 1.0e-7).  Error <= 3 ulp.
 *   gelu(x)  0.5 x (1 + erf(x / sqrt 2)) with u = x / sqrt 2:
 *            |u| < 1: h + h erf(u), h = 0.5 x;
 *            |u| >= 1: x - h erfc(|u|) for x > 0, h erfc(|u|) for x < 0 --
 *            erfc straight from the tail formula with u^2 = x^2 / 2 exact,
 *            so the negative tail keeps its relative precision (the
 *            decomposed graph loses it all in 1 + erf).  x >= 28: x.
 *            gelu(-inf) = NaN, as -inf * 0.5 * (1 + erf(-inf)) is.
 *            Error <= 20 ulp, the worst just above x = -sqrt 2 where
 *            1 + erf(u) cancels to 0.16 (a few ulp elsewhere).
 *   gelu_tanh(x)  (not a table entry: composed on a table's sigmoid)
 *            0.5 x (1 + tanh(k (x + 0.044715 x^3))), k = sqrt(2/pi), as
 *            x sigmoid(u), u = 2k (x + 0.044715 x^3) in float (the cube as
 *            x * x * x, three roundings): no 1 + tanh cancellation, so
 *            the negative tail keeps its relative precision (the graph's
 *            1 + tanh(...) loses it).  u's few-ulp rounding is magnified
 *            |u| (1 - sigmoid(u)) times by sigmoid: error <= 8 ulp for
 *            |u| <= 1, else <= 8 |u| ulp (tests/kernels/test_vmath.c);
 *            x beyond +-2^42 makes x^3 overflow: u = +-inf, y = x or -0
 *            (x * 0 for x = -inf: NaN, as the graph).
 *   Softmax row: max, then exp(x - max) stored and summed in double (the
 *            AVX2 twin keeps four double lanes per half, added in a fixed
 *            order), then times 1 / sum.
 *   LayerNorm row: mean and sum of squared deviations in double (as
 *            ops/ref/normalization.c), y = (x - mean) * inv * scale + bias
 *            in float with separate multiplies and adds, like the
 *            reference loop.
 */
#include <math.h>
#include <string.h>

#include "core/core.h"
#include "core/cpu.h"
#include "ops/vmath.h"

/* ---- constants shared with ops/x86/math_avx2.c (keep in sync) ---- */
#define EXP_HI 89.0f
#define EXP_LO -104.0f
#define LOG2E 1.44269504088896341f
#define LN2_HI 0.693359375f
#define LN2_LO -2.12194440e-4f
#define ROUND_MAGIC 12582912.0f /* 1.5 * 2^23 */

static const float exp_p[6] = {1.9875691500e-4f, 1.3981999507e-3f, 8.3334519073e-3f,
                               4.1665795894e-2f, 1.6666665459e-1f, 5.0000001201e-1f};
static const float tanh_p[5] = {-5.70498872745e-3f, 2.06390887954e-2f, -5.37397155531e-2f,
                                1.33314422036e-1f, -3.33332819422e-1f};
/* erf(x) / x = P(x^2) on [0, 1], highest degree first */
static const float erf_p[7] = {7.853857824e-05f, -8.010192541e-04f, 5.188327748e-03f, -2.685381100e-02f,
                               1.128358543e-01f, -3.761262596e-01f, 1.128379107e+00f};
/* erfc(t) exp(t^2) = G((z - 0.525) / 0.475), z = 1/t in [0.05, 1], highest first */
static const float erfc_g[11] = {-1.328706276e-05f, 9.320284153e-05f, -1.262326550e-04f, -1.135670827e-04f,
                                 7.306715706e-04f,  -1.887279330e-03f, 2.748135943e-03f, 3.082996933e-03f,
                                 -4.142003134e-02f, 1.985292882e-01f,  2.659597397e-01f};

static float pow2i(int k) { /* 2^k for k in [-126, 127] */
    uint32_t b = (uint32_t)(k + 127) << 23;
    float f;
    memcpy(&f, &b, sizeof f);
    return f;
}

static float exp1(float x) {
    if (x != x) return x;
    float c = x > EXP_HI ? EXP_HI : x < EXP_LO ? EXP_LO : x;
    float n = (c * LOG2E + ROUND_MAGIC) - ROUND_MAGIC;
    float r = c - n * LN2_HI;
    r = r - n * LN2_LO;
    float p = exp_p[0];
    for (int i = 1; i < 6; i++) p = p * r + exp_p[i];
    p = p * (r * r) + r + 1.0f;
    int ni = (int)n, n1 = ni >> 1;
    return p * pow2i(n1) * pow2i(ni - n1);
}

static float tanh1(float x) {
    if (x != x) return x;
    float a = fabsf(x), y;
    if (a < 0.625f) {
        float z = x * x, p = tanh_p[0];
        for (int i = 1; i < 5; i++) p = p * z + tanh_p[i];
        y = p * z * a + a;
    } else {
        float e = exp1(2.0f * (a < 9.1f ? a : 9.1f));
        y = 1.0f - 2.0f / (e + 1.0f);
    }
    return copysignf(y, x);
}

static float sigmoid1(float x) {
    if (x != x) return x;
    float e = exp1(-fabsf(x)), r = 1.0f / (1.0f + e);
    return x >= 0 ? r : e * r;
}

/* x P(x^2), |x| < 1 */
static float erf_small(float x) {
    float s = x * x, p = erf_p[0];
    for (int i = 1; i < 7; i++) p = p * s + erf_p[i];
    return p * x;
}

/* erfc(t) for t >= 1 given t^2 = hi + lo exactly (t clamped to 20 by the caller) */
static float erfc_tail(float t, float hi, float lo) {
    float z = 1.0f / t, w = (z - 0.525f) * (1.0f / 0.475f), g = erfc_g[0];
    for (int i = 1; i < 11; i++) g = g * w + erfc_g[i];
    return exp1(-hi) * (1.0f - lo) * g;
}

static void square_split(float t, float *hi, float *lo) {
    double d = (double)t * t; /* exact: the fma of the AVX2 twin */
    *hi = (float)d;
    *lo = (float)(d - *hi);
}

static float erf1(float x) {
    if (x != x) return x;
    float t = fabsf(x);
    if (t < 1.0f) return erf_small(x);
    if (t > 20.0f) t = 20.0f;
    float hi, lo;
    square_split(t, &hi, &lo);
    return copysignf(1.0f - erfc_tail(t, hi, lo), x);
}

#define GELU_ID 28.0f /* gelu(x) == x in float beyond */

static float gelu1(float x) {
    if (x != x) return x;
    if (x >= GELU_ID) return x;
    float u = x * 0.707106781186547524f, t = fabsf(u), h = 0.5f * x;
    if (t < 1.0f) return h * erf_small(u) + h;
    if (t > 20.0f) t = 20.0f;
    float hi, lo;
    square_split(fabsf(x) < GELU_ID ? x : GELU_ID, &hi, &lo); /* x^2; u^2 = x^2 / 2 exactly */
    float c = erfc_tail(t, 0.5f * hi, 0.5f * lo);
    return x > 0 ? x - h * c : h * c;
}

#define ELEMENTWISE(name, f1) \
    static void name(const float *x, float *y, int64_t n) { \
        for (int64_t i = 0; i < n; i++) y[i] = f1(x[i]); \
    }
ELEMENTWISE(vexp, exp1)
ELEMENTWISE(vtanh, tanh1)
ELEMENTWISE(verf, erf1)
ELEMENTWISE(vsigmoid, sigmoid1)
ELEMENTWISE(vgelu, gelu1)

static void softmax_row(const float *x, float *y, int64_t n) {
    float mx = -INFINITY;
    for (int64_t i = 0; i < n; i++) mx = x[i] > mx ? x[i] : mx;
    if (mx == -INFINITY) mx = 0;
    double sum = 0;
    for (int64_t i = 0; i < n; i++) {
        y[i] = exp1(x[i] - mx);
        sum += y[i];
    }
    float inv = (float)(1.0 / sum);
    for (int64_t i = 0; i < n; i++) y[i] *= inv;
}

static void layernorm_row(const float *x, float *y, int64_t n, const float *scale, const float *bias, double eps,
                          double *mean_out, double *inv_out) {
    double s = 0, ss = 0;
    for (int64_t j = 0; j < n; j++) s += x[j];
    double mean = n ? s / (double)n : 0;
    for (int64_t j = 0; j < n; j++) ss += (x[j] - mean) * (x[j] - mean);
    double inv = 1.0 / sqrt((n ? ss / (double)n : 0) + eps);
    float fm = (float)mean, fi = (float)inv;
    if (bias)
        for (int64_t j = 0; j < n; j++) y[j] = (x[j] - fm) * fi * scale[j] + bias[j];
    else
        for (int64_t j = 0; j < n; j++) y[j] = (x[j] - fm) * fi * scale[j];
    *mean_out = mean;
    *inv_out = inv;
}

#ifndef INF_EDGE
static void rmsnorm_row(const float *x, float *y, int64_t n, const float *scale, double eps) {
    double ss = 0;
    for (int64_t j = 0; j < n; j++) ss += (double)x[j] * x[j];
    float fi = (float)(1.0 / sqrt((n ? ss / (double)n : 0) + eps));
    for (int64_t j = 0; j < n; j++) y[j] = x[j] * fi * scale[j];
}
#endif

const inf__vmath inf__vmath_portable = {
    "portable", vexp, vtanh, verf, vsigmoid, vgelu, softmax_row, layernorm_row, INF__VMATH_RMSNORM(rmsnorm_row)};

#define GELU_TANH_2K    1.59576912161f /* 2 sqrt(2 / pi) */
#define GELU_TANH_C     0.044715f
#define GELU_TANH_BLOCK 256

#ifdef INF_EDGE
/* the edge runtime's size budget (docs/edge.md): element by element in
 * double, no vector table (the Gelu kernel's path for the other float types) */
void inf__vmath_gelu_tanh_best(const float *x, float *y, int64_t n) {
    for (int64_t i = 0; i < n; i++) {
        double v = x[i];
        y[i] = (float)(0.5 * v * (1 + tanh(0.79788456080286535588 * (v + 0.044715 * v * v * v))));
    }
}
#else
void inf__vmath_gelu_tanh(const inf__vmath *vm, const float *x, float *y, int64_t n) {
    float u[GELU_TANH_BLOCK];
    for (int64_t i = 0; i < n; i += GELU_TANH_BLOCK) {
        int64_t m = n - i < GELU_TANH_BLOCK ? n - i : GELU_TANH_BLOCK;
        for (int64_t j = 0; j < m; j++) {
            float v = x[i + j];
            u[j] = GELU_TANH_2K * (v + GELU_TANH_C * (v * v * v));
        }
        vm->sigmoid(u, u, m);
        for (int64_t j = 0; j < m; j++) y[i + j] = x[i + j] * u[j];
    }
}

void inf__vmath_gelu_tanh_best(const float *x, float *y, int64_t n) {
    inf__vmath_gelu_tanh(inf__vmath_best(), x, y, n);
}
#endif

const inf__vmath *inf__vmath_best(void) {
#if defined(__x86_64__)
    if (inf__cpu_has_avx512()) return &inf__vmath_avx512;
    if (inf__cpu_has_avx2_fma()) return &inf__vmath_avx2;
#elif defined(__aarch64__)
    if (inf__cpu_has_neon()) return &inf__vmath_neon;
#endif
    return &inf__vmath_portable;
}
