/*
 * math_neon.c -- the AArch64 NEON twin of ops/ref/vmath.c (inf__vmath_neon):
 * float32 exp, tanh, erf, sigmoid, GELU, 4 lanes at a time, and the Softmax
 * and LayerNormalization row loops.
 *
 * A line-by-line port of ops/x86/math_avx2.c: the same algorithms and
 * constants as the portable file (its header gives them and their error
 * bounds), with fused multiply-adds; branches become bit selects (both sides
 * of a piecewise function computed for all lanes).  A ragged tail (n % 4)
 * goes through the same vector code on a padded copy, so an element's result
 * never depends on its position.  Chosen by inf__vmath_best() when
 * inf__cpu_has_neon(); tests/kernels/test_vmath.c checks the error bounds.
 */
#if defined(__aarch64__)
#include <arm_neon.h>
#include <math.h>
#include <string.h>

#include "ops/vmath.h"

#define SET1(c) vdupq_n_f32(c)
typedef float32x4_t v4;

static inline uint32x4_t is_nan(v4 x) { return vmvnq_u32(vceqq_f32(x, x)); }
static inline v4 abs_ps(v4 x) { return vabsq_f32(x); }
static inline uint32x4_t sign_of(v4 x) { return vandq_u32(vreinterpretq_u32_f32(x), vdupq_n_u32(0x80000000u)); }
static inline v4 or_sign(v4 y, uint32x4_t s) { return vreinterpretq_f32_u32(vorrq_u32(vreinterpretq_u32_f32(y), s)); }
/* b where mask, else a (AVX's blendv(a, b, mask)) */
static inline v4 blend(v4 a, v4 b, uint32x4_t mask) { return vbslq_f32(mask, b, a); }

/* 2^n for integral n in [-126, 127] held as floats */
static inline v4 pow2i(v4 n) {
    int32x4_t k = vaddq_s32(vcvtq_s32_f32(n), vdupq_n_s32(127));
    return vreinterpretq_f32_s32(vshlq_n_s32(k, 23));
}

static inline v4 exp4(v4 x) {
    v4 c = vminq_f32(vmaxq_f32(x, SET1(-104.0f)), SET1(89.0f));
    v4 n = vsubq_f32(vfmaq_f32(SET1(12582912.0f), c, SET1(1.44269504088896341f)), SET1(12582912.0f));
    v4 r = vfmsq_f32(c, n, SET1(0.693359375f));
    r = vfmsq_f32(r, n, SET1(-2.12194440e-4f));
    v4 p = SET1(1.9875691500e-4f);
    p = vfmaq_f32(SET1(1.3981999507e-3f), p, r);
    p = vfmaq_f32(SET1(8.3334519073e-3f), p, r);
    p = vfmaq_f32(SET1(4.1665795894e-2f), p, r);
    p = vfmaq_f32(SET1(1.6666665459e-1f), p, r);
    p = vfmaq_f32(SET1(5.0000001201e-1f), p, r);
    p = vfmaq_f32(vaddq_f32(r, SET1(1.0f)), p, vmulq_f32(r, r));
    v4 n1 = vrndmq_f32(vmulq_f32(n, SET1(0.5f))); /* floor(n / 2), the portable ni >> 1 */
    v4 y = vmulq_f32(vmulq_f32(p, pow2i(n1)), pow2i(vsubq_f32(n, n1)));
    return blend(y, x, is_nan(x));
}

static inline v4 tanh4(v4 x) {
    v4 a = abs_ps(x), z = vmulq_f32(x, x);
    v4 p = SET1(-5.70498872745e-3f);
    p = vfmaq_f32(SET1(2.06390887954e-2f), p, z);
    p = vfmaq_f32(SET1(-5.37397155531e-2f), p, z);
    p = vfmaq_f32(SET1(1.33314422036e-1f), p, z);
    p = vfmaq_f32(SET1(-3.33332819422e-1f), p, z);
    v4 small = vfmaq_f32(a, vmulq_f32(p, z), a);
    v4 e = exp4(vmulq_f32(SET1(2.0f), vminq_f32(a, SET1(9.1f))));
    v4 big = vsubq_f32(SET1(1.0f), vdivq_f32(SET1(2.0f), vaddq_f32(e, SET1(1.0f))));
    v4 y = blend(big, small, vcltq_f32(a, SET1(0.625f)));
    y = or_sign(y, sign_of(x));
    return blend(y, x, is_nan(x));
}

static inline v4 sigmoid4(v4 x) {
    v4 e = exp4(vnegq_f32(abs_ps(x))); /* exp(-|x|) */
    v4 r = vdivq_f32(SET1(1.0f), vaddq_f32(SET1(1.0f), e));
    v4 y = blend(vmulq_f32(e, r), r, vcgeq_f32(x, SET1(0.0f)));
    return blend(y, x, is_nan(x));
}

static inline v4 erf_small4(v4 x) {
    v4 s = vmulq_f32(x, x), p = SET1(7.853857824e-05f);
    p = vfmaq_f32(SET1(-8.010192541e-04f), p, s);
    p = vfmaq_f32(SET1(5.188327748e-03f), p, s);
    p = vfmaq_f32(SET1(-2.685381100e-02f), p, s);
    p = vfmaq_f32(SET1(1.128358543e-01f), p, s);
    p = vfmaq_f32(SET1(-3.761262596e-01f), p, s);
    p = vfmaq_f32(SET1(1.128379107e+00f), p, s);
    return vmulq_f32(p, x);
}

/* erfc(t), t in [1, 20], t^2 = hi + lo */
static inline v4 erfc_tail4(v4 t, v4 hi, v4 lo) {
    v4 z = vdivq_f32(SET1(1.0f), t);
    v4 w = vmulq_f32(vsubq_f32(z, SET1(0.525f)), SET1(1.0f / 0.475f));
    v4 g = SET1(-1.328706276e-05f);
    g = vfmaq_f32(SET1(9.320284153e-05f), g, w);
    g = vfmaq_f32(SET1(-1.262326550e-04f), g, w);
    g = vfmaq_f32(SET1(-1.135670827e-04f), g, w);
    g = vfmaq_f32(SET1(7.306715706e-04f), g, w);
    g = vfmaq_f32(SET1(-1.887279330e-03f), g, w);
    g = vfmaq_f32(SET1(2.748135943e-03f), g, w);
    g = vfmaq_f32(SET1(3.082996933e-03f), g, w);
    g = vfmaq_f32(SET1(-4.142003134e-02f), g, w);
    g = vfmaq_f32(SET1(1.985292882e-01f), g, w);
    g = vfmaq_f32(SET1(2.659597397e-01f), g, w);
    v4 e = exp4(vnegq_f32(hi));
    return vmulq_f32(vmulq_f32(e, vsubq_f32(SET1(1.0f), lo)), g);
}

/* hi = t * t rounded, lo = the exact rest (fma) */
static inline v4 square_lo(v4 t, v4 hi) { return vfmaq_f32(vnegq_f32(hi), t, t); }

static inline v4 erf4(v4 x) {
    v4 t = abs_ps(x);
    v4 small = erf_small4(x);
    v4 tc = vminq_f32(vmaxq_f32(t, SET1(1.0f)), SET1(20.0f));
    v4 hi = vmulq_f32(tc, tc), lo = square_lo(tc, hi);
    v4 big = or_sign(vsubq_f32(SET1(1.0f), erfc_tail4(tc, hi, lo)), sign_of(x));
    v4 y = blend(big, small, vcltq_f32(t, SET1(1.0f)));
    return blend(y, x, is_nan(x));
}

static inline v4 gelu4(v4 x) {
    v4 u = vmulq_f32(x, SET1(0.707106781186547524f)), t = abs_ps(u), h = vmulq_f32(SET1(0.5f), x);
    v4 small = vfmaq_f32(h, h, erf_small4(u));
    v4 tc = vminq_f32(vmaxq_f32(t, SET1(1.0f)), SET1(20.0f));
    v4 xc = vminq_f32(abs_ps(x), SET1(28.0f));
    v4 hi = vmulq_f32(xc, xc), lo = square_lo(xc, hi);
    v4 c = erfc_tail4(tc, vmulq_f32(SET1(0.5f), hi), vmulq_f32(SET1(0.5f), lo));
    v4 pos = vfmsq_f32(x, h, c), neg = vmulq_f32(h, c);
    v4 big = blend(neg, pos, vcgtq_f32(x, SET1(0.0f)));
    v4 y = blend(big, small, vcltq_f32(t, SET1(1.0f)));
    y = blend(y, x, vcgeq_f32(x, SET1(28.0f)));
    return blend(y, x, is_nan(x));
}

#define ELEMENTWISE(name, f4) \
    static void name(const float *x, float *y, int64_t n) { \
        int64_t i = 0; \
        for (; i + 4 <= n; i += 4) vst1q_f32(y + i, f4(vld1q_f32(x + i))); \
        if (i < n) { \
            float buf[4] = {0}; \
            memcpy(buf, x + i, (size_t)(n - i) * sizeof(float)); \
            vst1q_f32(buf, f4(vld1q_f32(buf))); \
            memcpy(y + i, buf, (size_t)(n - i) * sizeof(float)); \
        } \
    }
ELEMENTWISE(vexp, exp4)
ELEMENTWISE(vtanh, tanh4)
ELEMENTWISE(verf, erf4)
ELEMENTWISE(vsigmoid, sigmoid4)
ELEMENTWISE(vgelu, gelu4)

/* v with lanes >= k replaced by fill */
static inline v4 load_part(const float *x, int64_t k, float fill) {
    float buf[4];
    for (int i = 0; i < 4; i++) buf[i] = i < k ? x[i] : fill;
    return vld1q_f32(buf);
}

/* sum of two 2-double accumulators, in a fixed order */
static inline double hsum_pd(float64x2_t a, float64x2_t b) { return vaddvq_f64(vaddq_f64(a, b)); }

static void softmax_row(const float *x, float *y, int64_t n) {
    v4 vm = SET1(-INFINITY);
    int64_t i = 0;
    for (; i + 4 <= n; i += 4) vm = vmaxq_f32(vm, vld1q_f32(x + i));
    if (i < n) vm = vmaxq_f32(vm, load_part(x + i, n - i, -INFINITY));
    float mx = vmaxvq_f32(vm); /* (a NaN anywhere makes the whole row NaN, whatever mx is) */
    if (mx == -INFINITY) mx = 0;
    v4 m = SET1(mx);
    float64x2_t s0 = vdupq_n_f64(0), s1 = vdupq_n_f64(0);
    for (i = 0; i + 4 <= n; i += 4) {
        v4 e = exp4(vsubq_f32(vld1q_f32(x + i), m));
        vst1q_f32(y + i, e);
        s0 = vaddq_f64(s0, vcvt_f64_f32(vget_low_f32(e)));
        s1 = vaddq_f64(s1, vcvt_high_f64_f32(e));
    }
    if (i < n) {
        float buf[4];
        vst1q_f32(buf, exp4(vsubq_f32(load_part(x + i, n - i, -INFINITY), m)));
        v4 e = load_part(buf, n - i, 0.0f);
        memcpy(y + i, buf, (size_t)(n - i) * sizeof(float));
        s0 = vaddq_f64(s0, vcvt_f64_f32(vget_low_f32(e)));
        s1 = vaddq_f64(s1, vcvt_high_f64_f32(e));
    }
    float inv = (float)(1.0 / hsum_pd(s0, s1));
    v4 vi = SET1(inv);
    for (i = 0; i + 4 <= n; i += 4) vst1q_f32(y + i, vmulq_f32(vld1q_f32(y + i), vi));
    for (; i < n; i++) y[i] *= inv;
}

static void layernorm_row(const float *x, float *y, int64_t n, const float *scale, const float *bias, double eps,
                          double *mean_out, double *inv_out) {
    float64x2_t s0 = vdupq_n_f64(0), s1 = vdupq_n_f64(0);
    int64_t j = 0;
    for (; j + 4 <= n; j += 4) {
        v4 v = vld1q_f32(x + j);
        s0 = vaddq_f64(s0, vcvt_f64_f32(vget_low_f32(v)));
        s1 = vaddq_f64(s1, vcvt_high_f64_f32(v));
    }
    double s = hsum_pd(s0, s1);
    for (int64_t k = j; k < n; k++) s += x[k];
    double mean = n ? s / (double)n : 0;
    float64x2_t md = vdupq_n_f64(mean);
    s0 = s1 = vdupq_n_f64(0);
    for (j = 0; j + 4 <= n; j += 4) {
        v4 v = vld1q_f32(x + j);
        float64x2_t d0 = vsubq_f64(vcvt_f64_f32(vget_low_f32(v)), md), d1 = vsubq_f64(vcvt_high_f64_f32(v), md);
        s0 = vaddq_f64(s0, vmulq_f64(d0, d0));
        s1 = vaddq_f64(s1, vmulq_f64(d1, d1));
    }
    double ss = hsum_pd(s0, s1);
    for (int64_t k = j; k < n; k++) ss += (x[k] - mean) * (x[k] - mean);
    double inv = 1.0 / sqrt((n ? ss / (double)n : 0) + eps);
    float fm = (float)mean, fi = (float)inv;
    v4 vm = SET1(fm), vi = SET1(fi);
    for (j = 0; j + 4 <= n; j += 4) {
        v4 v = vmulq_f32(vmulq_f32(vsubq_f32(vld1q_f32(x + j), vm), vi), vld1q_f32(scale + j));
        if (bias) v = vaddq_f32(v, vld1q_f32(bias + j));
        vst1q_f32(y + j, v);
    }
    for (; j < n; j++) {
        float v = (x[j] - fm) * fi * scale[j];
        y[j] = bias ? v + bias[j] : v;
    }
    *mean_out = mean;
    *inv_out = inv;
}

#ifndef INF_EDGE
static void rmsnorm_row(const float *x, float *y, int64_t n, const float *scale, double eps) {
    float64x2_t s0 = vdupq_n_f64(0), s1 = vdupq_n_f64(0);
    int64_t j = 0;
    for (; j + 4 <= n; j += 4) {
        v4 v = vld1q_f32(x + j);
        float64x2_t d0 = vcvt_f64_f32(vget_low_f32(v)), d1 = vcvt_high_f64_f32(v);
        s0 = vaddq_f64(s0, vmulq_f64(d0, d0));
        s1 = vaddq_f64(s1, vmulq_f64(d1, d1));
    }
    double ss = hsum_pd(s0, s1);
    for (int64_t k = j; k < n; k++) ss += (double)x[k] * x[k];
    float fi = (float)(1.0 / sqrt((n ? ss / (double)n : 0) + eps));
    v4 vi = SET1(fi);
    for (j = 0; j + 4 <= n; j += 4) vst1q_f32(y + j, vmulq_f32(vmulq_f32(vld1q_f32(x + j), vi), vld1q_f32(scale + j)));
    for (; j < n; j++) y[j] = x[j] * fi * scale[j];
}
#endif

const inf__vmath inf__vmath_neon = {
    "neon", vexp, vtanh, verf, vsigmoid, vgelu, softmax_row, layernorm_row, INF__VMATH_RMSNORM(rmsnorm_row)};

#endif /* __aarch64__ */
