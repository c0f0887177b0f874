/*
 * qgelu_avx2.c -- GELU straight into uint8 (AVX2): q = QuantizeLinear(gelu(x),
 * scale, zp) with gelu the AVX2 vmath GELU (ops/x86/math_avx2.c), bit for bit
 * inf__gelu_quantize_u8_ref with that function -- for the INT8 encoder's
 * FFN, whose GELU output only the next quantized product reads
 * (graph/passes/qdq_chain.c links the two with uint8 rows).
 *
 * WHY IT IS CHEAPER: only the 8-bit bin of gelu(x) is needed, not its float.
 * A cheap approximation a(x) (a degree-5 polynomial per 0.75-wide piece of
 * |x| < 6 for x * erf(x / sqrt 2), no exp, no division) is within
 * INF_GELU_Q_ERR of the exact GELU's float for every float x
 * (tests/kernels/test_qgemm.c `gelu_quantize_*`, over every float);
 * the exact erfc tail (exp, a division, 11 terms) and the quantization's
 * division are skipped.  16 values a step: one check and one branch for
 * both vectors, one 16-byte store through a single pack chain whose
 * unsigned saturation is the clamp at 0 (the one at 255 comes before the
 * conversion, for huge values); fewer than 16 left take the reference.
 *
 * WHY IT IS EXACT: with d = a * (1 / scale) and m >= |fl(g / scale) - d| for the
 * exact GELU's float g (m = INF_GELU_Q_ERR / scale plus the roundings of the
 * multiply, the reciprocal and the reference's division), the reference's
 * quotient fl(g / scale) is within m of d; when d is farther than m from
 * every half-integer (|d - round(d)| < 0.5 - m), it rounds to round(d) too,
 * and + zp and the clamp are then the same.  Vectors where some lane is that
 * close to a bin boundary (about 2 m of a bin, ~0.1 % of the encoder's
 * vectors), and NaN / +-inf (never "less than"), take the exact GELU and the
 * reference quantization (for the step's 16 values).  A zero point outside
 * [0, 255] or a scale outside [2^-100, 2^100] takes the reference for the
 * whole call.
 */
#if defined(__x86_64__)
#include <immintrin.h>
#include <math.h>

#include "ops/qgemm.h"
#include "ops/vmath.h"

#define SET1(c) _mm256_set1_ps(c)

/* e(t) = t * erf(t / sqrt 2) on [0.75 i, 0.75 (i + 1)]: sum_k C[k][i] (t - 0.75 i)^k
 * (Chebyshev-node least squares in double, rounded to float). */
static const float C[6][8] = {
    {-1.205412786e-06f, 4.100584686e-01f, 1.299578309e+00f, 2.194989920e+00f, 2.991900682e+00f, 3.749336958e+00f,
     4.499969482e+00f, 5.249999046e+00f},
    {1.161133914e-04f, 9.983825088e-01f, 1.254927278e+00f, 1.118398547e+00f, 1.023892641e+00f, 1.002466202e+00f,
     1.000136852e+00f, 1.000004172e+00f},
    {7.960556746e-01f, 4.343048036e-01f, -3.210600466e-02f, -9.760665148e-02f, -3.105581552e-02f, -4.222939722e-03f,
     -2.858944645e-04f, -1.016491115e-05f},
    {1.068322547e-02f, -2.674411833e-01f, -1.153587997e-01f, 2.784937806e-02f, 2.240985073e-02f, 4.242111929e-03f,
     3.508194059e-04f, 1.435260856e-05f},
    {-1.618437916e-01f, 1.250591315e-02f, 7.901281863e-02f, 8.426818997e-03f, -9.002503939e-03f, -2.505446784e-03f,
     -2.475993533e-04f, -1.132535908e-05f},
    {3.747719899e-02f, 2.235891297e-02f, -1.709807850e-02f, -5.898266099e-03f, 1.601274824e-03f, 6.801047130e-04f,
     7.728456694e-05f, 3.829134585e-06f},
};

/* 2 a(x) ~ 2 gelu(x) = x + e(|x|); e(t) = t from 6 on (then a = x or 0). */
static inline __m256 gelu2_approx8(__m256 x) {
    __m256 t = _mm256_andnot_ps(SET1(-0.0f), x);
    __m256i i = _mm256_cvttps_epi32(_mm256_mul_ps(_mm256_min_ps(t, SET1(5.999f)), SET1(1.0f / 0.75f)));
    __m256 r = _mm256_fnmadd_ps(_mm256_cvtepi32_ps(i), SET1(0.75f), t);
    __m256 p = _mm256_permutevar8x32_ps(_mm256_loadu_ps(C[5]), i);
    for (int k = 4; k >= 0; k--)
        p = _mm256_fmadd_ps(p, r, _mm256_permutevar8x32_ps(_mm256_loadu_ps(C[k]), i));
    return _mm256_add_ps(x, _mm256_blendv_ps(p, t, _mm256_cmp_ps(t, SET1(6.0f), _CMP_GE_OQ)));
}

/* 16 bytes of q from 2 x 8 integral floats r: clamp(r + zp, 0, 255) -- the
 * upper clamp before the conversion (huge values), the lower one by the
 * unsigned saturation of the first pack. */
static inline void store16(__m256 r0, __m256 r1, __m256 zp, uint8_t *q) {
    __m256i w0 = _mm256_cvtps_epi32(_mm256_min_ps(_mm256_add_ps(r0, zp), SET1(255.0f)));
    __m256i w1 = _mm256_cvtps_epi32(_mm256_min_ps(_mm256_add_ps(r1, zp), SET1(255.0f)));
    __m256i w = _mm256_permute4x64_epi64(_mm256_packus_epi32(w0, w1), 0xD8); /* r0's 8 uint16, then r1's */
    _mm_storeu_si128((__m128i *)q, _mm_packus_epi16(_mm256_castsi256_si128(w), _mm256_extracti128_si256(w, 1)));
}

void inf__gelu_approx_avx2(const float *x, float *y, int64_t n) {
    for (int64_t i = 0; i + 8 <= n; i += 8)
        _mm256_storeu_ps(y + i, _mm256_mul_ps(SET1(0.5f), gelu2_approx8(_mm256_loadu_ps(x + i))));
}

void inf__gelu_quantize_u8_avx2(const float *x, int64_t n, float scale, int32_t zp, uint8_t *q) {
    if (!(scale >= 0x1p-100f && scale <= 0x1p100f) || zp < 0 || zp > 255) { /* NaN too */
        inf__gelu_quantize_u8_ref(x, n, scale, zp, q, inf__vmath_avx2.gelu);
        return;
    }
    /* d = a * fl(1 / scale) (a = fl(x + e) / 2, exact) is within |a / scale| 2^-22.9
     * of a / scale, fl(g / scale) within 2^-24 of g / scale, |g - a| <= INF_GELU_Q_ERR:
     * so m = |d| 2^-21 + INF_GELU_Q_ERR / scale (1 + 2^-20) bounds |fl(g / scale) - d|.
     * When |d - round(d)| < 0.5 - m, every value within m of d rounds to round(d):
     * h = 0.5 - m is computed with 2^-22 to spare for its own rounding (h < 0.5). */
    float es = (float)((double)INF_GELU_Q_ERR / scale * (1.0 + 0x1p-20) + 0x1p-22);
    es = nextafterf(es, INFINITY);
    __m256 half_inv = SET1(0.5f * (1.0f / scale)), vz = SET1((float)zp), h0 = SET1(0.5f - es);
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        __m256 r[2], ok = _mm256_castsi256_ps(_mm256_set1_epi32(-1));
        for (int v = 0; v < 2; v++) {
            __m256 d = _mm256_mul_ps(gelu2_approx8(_mm256_loadu_ps(x + i + 8 * v)), half_inv);
            r[v] = _mm256_round_ps(d, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
            __m256 ad = _mm256_andnot_ps(SET1(-0.0f), d);
            __m256 h = _mm256_fnmadd_ps(ad, SET1(0x1p-21f), h0);
            __m256 f = _mm256_andnot_ps(SET1(-0.0f), _mm256_sub_ps(d, r[v]));
            ok = _mm256_and_ps(ok, _mm256_cmp_ps(f, h, _CMP_LT_OQ)); /* NaN / inf: never less */
        }
        if (_mm256_movemask_ps(ok) == 0xff) {
            store16(r[0], r[1], vz, q + i);
        } else {
            float g[16];
            inf__vmath_avx2.gelu(x + i, g, 16);
            inf__quantize_u8_ref(g, 16, scale, zp, q + i);
        }
    }
    if (i < n) inf__gelu_quantize_u8_ref(x + i, n - i, scale, zp, q + i, inf__vmath_avx2.gelu);
}
#endif
