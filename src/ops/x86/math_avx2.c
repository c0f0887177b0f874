/*
 * math_avx2.c -- the AVX2/FMA twin of ops/ref/vmath.c (inf__vmath_avx2):
 * float32 exp, tanh, erf, sigmoid, GELU, 8 lanes at a time, and the
 * Softmax and LayerNormalization row loops.
 *
 * Same algorithms and constants as the portable file (its header gives
 * them and their error bounds), with fused multiply-adds.  Branches become
 * blends: both sides of a piecewise function are computed for all 8 lanes.
 * A ragged tail (n % 8) is copied to a padded block and run through the same
 * vector code, so an element's result never depends on its position --
 * the results are independent of how kernels split their work.
 * Built with -mavx2 -mfma (CMake: *_avx2.c); chosen by inf__vmath_best() when
 * inf__cpu_has_avx2_fma().
 */
#if defined(__x86_64__)
#include <immintrin.h>
#include <math.h>
#include <string.h>

#include "ops/vmath.h"

#include "ops/x86/math_avx2.h"

static inline __m256 erf_small8(__m256 x) {
    __m256 s = _mm256_mul_ps(x, x), p = SET1(7.853857824e-05f);
    p = _mm256_fmadd_ps(p, s, SET1(-8.010192541e-04f));
    p = _mm256_fmadd_ps(p, s, SET1(5.188327748e-03f));
    p = _mm256_fmadd_ps(p, s, SET1(-2.685381100e-02f));
    p = _mm256_fmadd_ps(p, s, SET1(1.128358543e-01f));
    p = _mm256_fmadd_ps(p, s, SET1(-3.761262596e-01f));
    p = _mm256_fmadd_ps(p, s, SET1(1.128379107e+00f));
    return _mm256_mul_ps(p, x);
}

/* erfc(t), t in [1, 20], t^2 = hi + lo */
static inline __m256 erfc_tail8(__m256 t, __m256 hi, __m256 lo) {
    __m256 z = _mm256_div_ps(SET1(1.0f), t);
    __m256 w = _mm256_mul_ps(_mm256_sub_ps(z, SET1(0.525f)), SET1(1.0f / 0.475f));
    __m256 g = SET1(-1.328706276e-05f);
    g = _mm256_fmadd_ps(g, w, SET1(9.320284153e-05f));
    g = _mm256_fmadd_ps(g, w, SET1(-1.262326550e-04f));
    g = _mm256_fmadd_ps(g, w, SET1(-1.135670827e-04f));
    g = _mm256_fmadd_ps(g, w, SET1(7.306715706e-04f));
    g = _mm256_fmadd_ps(g, w, SET1(-1.887279330e-03f));
    g = _mm256_fmadd_ps(g, w, SET1(2.748135943e-03f));
    g = _mm256_fmadd_ps(g, w, SET1(3.082996933e-03f));
    g = _mm256_fmadd_ps(g, w, SET1(-4.142003134e-02f));
    g = _mm256_fmadd_ps(g, w, SET1(1.985292882e-01f));
    g = _mm256_fmadd_ps(g, w, SET1(2.659597397e-01f));
    __m256 e = exp8(_mm256_xor_ps(hi, SET1(-0.0f)));
    return _mm256_mul_ps(_mm256_mul_ps(e, _mm256_sub_ps(SET1(1.0f), lo)), g);
}

static inline __m256 erf8(__m256 x) {
    __m256 t = abs_ps(x);
    __m256 small = erf_small8(x);
    __m256 tc = _mm256_min_ps(_mm256_max_ps(t, SET1(1.0f)), SET1(20.0f));
    __m256 hi = _mm256_mul_ps(tc, tc), lo = _mm256_fmsub_ps(tc, tc, hi);
    __m256 big = _mm256_or_ps(_mm256_sub_ps(SET1(1.0f), erfc_tail8(tc, hi, lo)), sign_of(x));
    __m256 y = _mm256_blendv_ps(big, small, _mm256_cmp_ps(t, SET1(1.0f), _CMP_LT_OQ));
    return _mm256_blendv_ps(y, x, is_nan(x));
}

static inline __m256 gelu8(__m256 x) {
    __m256 u = _mm256_mul_ps(x, SET1(0.707106781186547524f)), t = abs_ps(u), h = _mm256_mul_ps(SET1(0.5f), x);
    __m256 small = _mm256_fmadd_ps(h, erf_small8(u), h);
    __m256 tc = _mm256_min_ps(_mm256_max_ps(t, SET1(1.0f)), SET1(20.0f));
    __m256 xc = _mm256_min_ps(abs_ps(x), SET1(28.0f));
    __m256 hi = _mm256_mul_ps(xc, xc), lo = _mm256_fmsub_ps(xc, xc, hi);
    __m256 c = erfc_tail8(tc, _mm256_mul_ps(SET1(0.5f), hi), _mm256_mul_ps(SET1(0.5f), lo));
    __m256 pos = _mm256_fnmadd_ps(h, c, x), neg = _mm256_mul_ps(h, c);
    __m256 big = _mm256_blendv_ps(neg, pos, _mm256_cmp_ps(x, _mm256_setzero_ps(), _CMP_GT_OQ));
    __m256 y = _mm256_blendv_ps(big, small, _mm256_cmp_ps(t, SET1(1.0f), _CMP_LT_OQ));
    y = _mm256_blendv_ps(y, x, _mm256_cmp_ps(x, SET1(28.0f), _CMP_GE_OQ));
    return _mm256_blendv_ps(y, x, is_nan(x));
}

#define ELEMENTWISE(name, f8) \
    static void name(const float *x, float *y, int64_t n) { \
        int64_t i = 0; \
        for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, f8(_mm256_loadu_ps(x + i))); \
        if (i < n) { \
            float buf[8] = {0}; \
            memcpy(buf, x + i, (size_t)(n - i) * sizeof(float)); \
            _mm256_storeu_ps(buf, f8(_mm256_loadu_ps(buf))); \
            memcpy(y + i, buf, (size_t)(n - i) * sizeof(float)); \
        } \
    }
ELEMENTWISE(vexp, exp8)
ELEMENTWISE(vtanh, tanh8)
ELEMENTWISE(verf, erf8)
ELEMENTWISE(vsigmoid, sigmoid8)
ELEMENTWISE(vgelu, gelu8)

static inline float hmax8(__m256 v) {
    __m128 m = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    m = _mm_max_ps(m, _mm_movehl_ps(m, m));
    m = _mm_max_ss(m, _mm_shuffle_ps(m, m, 1));
    return _mm_cvtss_f32(m);
}

/* sum of two 4-double accumulators, in a fixed order */
static inline double hsum_pd(__m256d a, __m256d b) {
    __m256d s = _mm256_add_pd(a, b);
    __m128d h = _mm_add_pd(_mm256_castpd256_pd128(s), _mm256_extractf128_pd(s, 1));
    return _mm_cvtsd_f64(_mm_add_sd(h, _mm_unpackhi_pd(h, h)));
}

/* v with lanes >= k replaced by fill */
static inline __m256 load_part(const float *x, int64_t k, float fill) {
    float buf[8];
    for (int i = 0; i < 8; i++) buf[i] = i < k ? x[i] : fill;
    return _mm256_loadu_ps(buf);
}

static void softmax_row(const float *x, float *y, int64_t n) {
    __m256 vm = SET1(-INFINITY);
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) vm = _mm256_max_ps(vm, _mm256_loadu_ps(x + i));
    if (i < n) vm = _mm256_max_ps(vm, load_part(x + i, n - i, -INFINITY));
    float mx = hmax8(vm);
    /* (a NaN anywhere makes the whole row NaN, whatever mx is) */
    if (mx == -INFINITY) mx = 0;
    __m256 m = SET1(mx);
    __m256d s0 = _mm256_setzero_pd(), s1 = _mm256_setzero_pd();
    for (i = 0; i + 8 <= n; i += 8) {
        __m256 e = exp8(_mm256_sub_ps(_mm256_loadu_ps(x + i), m));
        _mm256_storeu_ps(y + i, e);
        s0 = _mm256_add_pd(s0, _mm256_cvtps_pd(_mm256_castps256_ps128(e)));
        s1 = _mm256_add_pd(s1, _mm256_cvtps_pd(_mm256_extractf128_ps(e, 1)));
    }
    if (i < n) {
        float buf[8];
        _mm256_storeu_ps(buf, exp8(_mm256_sub_ps(load_part(x + i, n - i, -INFINITY), m)));
        __m256 e = load_part(buf, n - i, 0.0f);
        memcpy(y + i, buf, (size_t)(n - i) * sizeof(float));
        s0 = _mm256_add_pd(s0, _mm256_cvtps_pd(_mm256_castps256_ps128(e)));
        s1 = _mm256_add_pd(s1, _mm256_cvtps_pd(_mm256_extractf128_ps(e, 1)));
    }
    __m256 inv = SET1((float)(1.0 / hsum_pd(s0, s1)));
    for (i = 0; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, _mm256_mul_ps(_mm256_loadu_ps(y + i), inv));
    for (; i < n; i++) y[i] *= _mm256_cvtss_f32(inv);
}

static void layernorm_row(const float *x, float *y, int64_t n, const float *scale, const float *bias, double eps,
                          double *mean_out, double *inv_out) {
    __m256d s0 = _mm256_setzero_pd(), s1 = _mm256_setzero_pd();
    int64_t j = 0;
    for (; j + 8 <= n; j += 8) {
        __m256 v = _mm256_loadu_ps(x + j);
        s0 = _mm256_add_pd(s0, _mm256_cvtps_pd(_mm256_castps256_ps128(v)));
        s1 = _mm256_add_pd(s1, _mm256_cvtps_pd(_mm256_extractf128_ps(v, 1)));
    }
    double s = hsum_pd(s0, s1);
    for (int64_t k = j; k < n; k++) s += x[k];
    double mean = n ? s / (double)n : 0;
    __m256d md = _mm256_set1_pd(mean);
    s0 = s1 = _mm256_setzero_pd();
    for (j = 0; j + 8 <= n; j += 8) {
        __m256 v = _mm256_loadu_ps(x + j);
        __m256d d0 = _mm256_sub_pd(_mm256_cvtps_pd(_mm256_castps256_ps128(v)), md);
        __m256d d1 = _mm256_sub_pd(_mm256_cvtps_pd(_mm256_extractf128_ps(v, 1)), md);
        s0 = _mm256_add_pd(s0, _mm256_mul_pd(d0, d0));
        s1 = _mm256_add_pd(s1, _mm256_mul_pd(d1, d1));
    }
    double ss = hsum_pd(s0, s1);
    for (int64_t k = j; k < n; k++) ss += (x[k] - mean) * (x[k] - mean);
    double inv = 1.0 / sqrt((n ? ss / (double)n : 0) + eps);
    float fm = (float)mean, fi = (float)inv;
    __m256 vm = SET1(fm), vi = SET1(fi);
    for (j = 0; j + 8 <= n; j += 8) {
        __m256 v = _mm256_mul_ps(_mm256_mul_ps(_mm256_sub_ps(_mm256_loadu_ps(x + j), vm), vi), _mm256_loadu_ps(scale + j));
        if (bias) v = _mm256_add_ps(v, _mm256_loadu_ps(bias + j));
        _mm256_storeu_ps(y + j, v);
    }
    for (; j < n; j++) {
        float v = (x[j] - fm) * fi * scale[j];
        y[j] = bias ? v + bias[j] : v;
    }
    *mean_out = mean;
    *inv_out = inv;
}

#ifndef INF_EDGE
void inf__rmsnorm_row_avx2(const float *x, float *y, int64_t n, const float *scale, double eps) {
    __m256d s0 = _mm256_setzero_pd(), s1 = _mm256_setzero_pd();
    int64_t j = 0;
    for (; j + 8 <= n; j += 8) {
        __m256 v = _mm256_loadu_ps(x + j);
        __m256d d0 = _mm256_cvtps_pd(_mm256_castps256_ps128(v)), d1 = _mm256_cvtps_pd(_mm256_extractf128_ps(v, 1));
        s0 = _mm256_add_pd(s0, _mm256_mul_pd(d0, d0));
        s1 = _mm256_add_pd(s1, _mm256_mul_pd(d1, d1));
    }
    double ss = hsum_pd(s0, s1);
    for (int64_t k = j; k < n; k++) ss += (double)x[k] * x[k];
    float fi = (float)(1.0 / sqrt((n ? ss / (double)n : 0) + eps));
    __m256 vi = SET1(fi);
    for (j = 0; j + 8 <= n; j += 8)
        _mm256_storeu_ps(y + j, _mm256_mul_ps(_mm256_mul_ps(_mm256_loadu_ps(x + j), vi), _mm256_loadu_ps(scale + j)));
    for (; j < n; j++) y[j] = x[j] * fi * scale[j];
}
#endif

const inf__vmath inf__vmath_avx2 = {
    "avx2", vexp, vtanh, verf, vsigmoid, vgelu, softmax_row, layernorm_row, INF__VMATH_RMSNORM(inf__rmsnorm_row_avx2)};

#endif /* __x86_64__ */
