/*
 * math_avx512.c -- the AVX-512 twin of ops/x86/math_avx2.c
 * (inf__vmath_avx512): float32 exp, tanh, erf, sigmoid, GELU, 16 lanes at
 * a time, and the Softmax and LayerNormalization row loops.
 *
 * DESIGN: the same algorithms, constants and instruction sequence per
 * element as the AVX2 file (whose header refers to ops/ref/vmath.c for
 * them and their error bounds), with mask registers for the blends and
 * masked loads/stores for a ragged tail instead of a padded copy.  One
 * step differs in instructions, not in result: exp's final p * 2^n is one
 * vscalefps (exact scaling, one rounding, denormal results included) where
 * AVX2 multiplies by 2^(n/2) and 2^(n - n/2) built from the exponent bits
 * (the first product exact and normal, so also one rounding) -- 10 fewer
 * instructions per exp, in GELU's erfc tail, Softmax, sigmoid and tanh.
 * So every element gets the AVX2 table's bits.  The row loops keep the AVX2 order of
 * their double sums too: each 16-float block is added as two 8-float blocks
 * in turn into the same 2 x 4 double accumulators (one zmm of doubles here),
 * reduced in the same order, with the same scalar tail in LayerNorm -- so
 * Softmax and LayerNorm rows are bit-identical across the two widths as
 * well, and switching width never changes a model's output (batch
 * invariance across machines, DESIGN.md section 1).  The gain is in the
 * element-wise part: 16 lanes per instruction on Zen 5 and Intel.  GELU
 * also splits its lanes: the erfc tail runs only on the lanes that need it,
 * packed into full vectors (vgelu; same bits, less work).
 * Built with the AVX-512 flags (CMake: *_avx512.c); chosen by
 * inf__vmath_best() when inf__cpu_has_avx512() (INFERA_CPU=avx2 keeps AVX2).
 */
#if defined(__x86_64__) && defined(__AVX512F__)
#include <immintrin.h>
#include <math.h>
#include <stdbool.h>

#include "ops/vmath.h"

#include "ops/x86/math_avx512.h"

static inline __m512 erf_small16(__m512 x) {
    __m512 s = _mm512_mul_ps(x, x), p = SET1(7.853857824e-05f);
    p = _mm512_fmadd_ps(p, s, SET1(-8.010192541e-04f));
    p = _mm512_fmadd_ps(p, s, SET1(5.188327748e-03f));
    p = _mm512_fmadd_ps(p, s, SET1(-2.685381100e-02f));
    p = _mm512_fmadd_ps(p, s, SET1(1.128358543e-01f));
    p = _mm512_fmadd_ps(p, s, SET1(-3.761262596e-01f));
    p = _mm512_fmadd_ps(p, s, SET1(1.128379107e+00f));
    return _mm512_mul_ps(p, x);
}

/* erfc(t), t in [1, 20], t^2 = hi + lo (hi never NaN: exp(-hi) needs only
 * the lower clamp of exp16, and no NaN blend) */
static inline __m512 erfc_tail16(__m512 t, __m512 hi, __m512 lo) {
    __m512 z = _mm512_div_ps(SET1(1.0f), t);
    __m512 w = _mm512_mul_ps(_mm512_sub_ps(z, SET1(0.525f)), SET1(1.0f / 0.475f));
    __m512 g = SET1(-1.328706276e-05f);
    g = _mm512_fmadd_ps(g, w, SET1(9.320284153e-05f));
    g = _mm512_fmadd_ps(g, w, SET1(-1.262326550e-04f));
    g = _mm512_fmadd_ps(g, w, SET1(-1.135670827e-04f));
    g = _mm512_fmadd_ps(g, w, SET1(7.306715706e-04f));
    g = _mm512_fmadd_ps(g, w, SET1(-1.887279330e-03f));
    g = _mm512_fmadd_ps(g, w, SET1(2.748135943e-03f));
    g = _mm512_fmadd_ps(g, w, SET1(3.082996933e-03f));
    g = _mm512_fmadd_ps(g, w, SET1(-4.142003134e-02f));
    g = _mm512_fmadd_ps(g, w, SET1(1.985292882e-01f));
    g = _mm512_fmadd_ps(g, w, SET1(2.659597397e-01f));
    __m512 e = exp16_clamped(_mm512_max_ps(xor_ps(hi, SET1(-0.0f)), SET1(-104.0f)));
    return _mm512_mul_ps(_mm512_mul_ps(e, _mm512_sub_ps(SET1(1.0f), lo)), g);
}

static inline __m512 erf16(__m512 x) {
    __m512 t = abs_ps(x);
    __m512 small = erf_small16(x);
    __m512 tc = _mm512_min_ps(_mm512_max_ps(t, SET1(1.0f)), SET1(20.0f));
    __m512 hi = _mm512_mul_ps(tc, tc), lo = _mm512_fmsub_ps(tc, tc, hi);
    __m512 big = or_ps(_mm512_sub_ps(SET1(1.0f), erfc_tail16(tc, hi, lo)), sign_of(x));
    __m512 y = blend(big, small, _mm512_cmp_ps_mask(t, SET1(1.0f), _CMP_LT_OQ));
    return blend(y, x, is_nan(x));
}

/* GELU's two halves, each exactly gelu16's operations for its lanes:
 * gelu_small16 for |x / sqrt 2| < 1, gelu_big16 for the rest (the erfc
 * tail; x >= 28 or NaN: x). */
static inline __m512 gelu_small16(__m512 x) {
    __m512 u = _mm512_mul_ps(x, SET1(0.707106781186547524f)), h = _mm512_mul_ps(SET1(0.5f), x);
    return _mm512_fmadd_ps(h, erf_small16(u), h);
}
static inline __mmask16 gelu_is_big(__m512 x) {
    __m512 t = abs_ps(_mm512_mul_ps(x, SET1(0.707106781186547524f)));
    return _mm512_cmp_ps_mask(t, SET1(1.0f), _CMP_NLT_UQ); /* not (t < 1): NaN too */
}
static inline __m512 gelu_big16(__m512 x) {
    __m512 u = _mm512_mul_ps(x, SET1(0.707106781186547524f)), t = abs_ps(u), h = _mm512_mul_ps(SET1(0.5f), x);
    __m512 tc = _mm512_min_ps(_mm512_max_ps(t, SET1(1.0f)), SET1(20.0f));
    __m512 xc = _mm512_min_ps(abs_ps(x), SET1(28.0f));
    __m512 hi = _mm512_mul_ps(xc, xc), lo = _mm512_fmsub_ps(xc, xc, hi);
    __m512 c = erfc_tail16(tc, _mm512_mul_ps(SET1(0.5f), hi), _mm512_mul_ps(SET1(0.5f), lo));
    __m512 pos = _mm512_fnmadd_ps(h, c, x), neg = _mm512_mul_ps(h, c);
    __m512 big = blend(neg, pos, _mm512_cmp_ps_mask(x, _mm512_setzero_ps(), _CMP_GT_OQ));
    return blend(big, x, _mm512_cmp_ps_mask(x, SET1(28.0f), _CMP_NLT_UQ)); /* x >= 28 or NaN: x */
}

/* GELU on every lane: the small half where |x / sqrt 2| < 1, else the tail. */
static inline __m512 gelu16(__m512 x) {
    __m512 t = abs_ps(_mm512_mul_ps(x, SET1(0.707106781186547524f)));
    return blend(gelu_big16(x), gelu_small16(x), _mm512_cmp_ps_mask(t, SET1(1.0f), _CMP_LT_OQ));
}

/* Lanes [0, k) of a 16-lane block, k in 0..16. */
static inline __mmask16 lanes(int64_t k) { return k >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << k) - 1u); }

/* (the tail's missing lanes compute f(0), as the AVX2 file's zero-padded copy) */
#define ELEMENTWISE(name, f16)                                                                                         \
    static void name(const float *x, float *y, int64_t n) {                                                            \
        int64_t i = 0;                                                                                                 \
        for (; i + 16 <= n; i += 16)                                                                                   \
            _mm512_storeu_ps(y + i, f16(_mm512_loadu_ps(x + i)));                                                      \
        if (i < n) {                                                                                                   \
            __mmask16 k = lanes(n - i);                                                                                \
            _mm512_mask_storeu_ps(y + i, k, f16(_mm512_maskz_loadu_ps(k, x + i)));                                     \
        }                                                                                                              \
    }
ELEMENTWISE(vexp, exp16)
ELEMENTWISE(vtanh, tanh16)
ELEMENTWISE(verf, erf16)
ELEMENTWISE(vsigmoid, sigmoid16)

ELEMENTWISE(gelu_every_lane, gelu16)

/* Lanes per block of the split GELU (vgelu): an FFN row of 1024. */
enum { GELU_BLOCK = 1024 };

/* More than half of x[0:nb] needs the erfc tail: then packing would cost
 * more than it saves, and the block runs gelu16 on every vector. */
static bool mostly_big(const float *x, int64_t nb) {
    int big = 0;
    int64_t i = 0;
    for (; i + 16 <= nb; i += 16)
        big += __builtin_popcount(gelu_is_big(_mm512_loadu_ps(x + i)));
    if (i < nb) big += __builtin_popcount(gelu_is_big(_mm512_maskz_loadu_ps(lanes(nb - i), x + i)) & lanes(nb - i));
    return 2 * big > nb;
}

/* GELU over x[0:n] (y may be x) in blocks of GELU_BLOCK: each 16-lane
 * vector gets its small half in place, and its lanes that need the erfc
 * tail are packed (vcompressps) into a buffer; the tail then runs on full
 * vectors of those lanes only and is unpacked (vexpandps) into place.
 * Every element gets gelu16's bits (the same operations on the same
 * value), but the tail -- four fifths of the work, needed by about a third
 * of an encoder's FFN activations -- runs once per packed vector instead
 * of on every one (bench/RESULTS.md, session 19: 131072 floats, a third
 * of them in the tail, 64 -> 52 us on Zen 5). */
static void vgelu(const float *x, float *y, int64_t n) {
    _Alignas(64) float buf[GELU_BLOCK + 16];
    __mmask16 big[GELU_BLOCK / 16];
    int pos[GELU_BLOCK / 16];
    for (int64_t i0 = 0; i0 < n; i0 += GELU_BLOCK) {
        int64_t nb = n - i0 < GELU_BLOCK ? n - i0 : GELU_BLOCK;
        int nv = (int)((nb + 15) / 16), cnt = 0;
        if (mostly_big(x + i0, nb)) {
            gelu_every_lane(x + i0, y + i0, nb);
            continue;
        }
        for (int v = 0; v < nv; v++) {
            __mmask16 k = lanes(nb - 16 * v);
            __m512 xv = _mm512_maskz_loadu_ps(k, x + i0 + 16 * v);
            big[v] = gelu_is_big(xv) & k, pos[v] = cnt;
            if (k == 0xFFFF)
                _mm512_storeu_ps(y + i0 + 16 * v, gelu_small16(xv));
            else
                _mm512_mask_storeu_ps(y + i0 + 16 * v, k, gelu_small16(xv));
            _mm512_storeu_ps(buf + cnt, _mm512_maskz_compress_ps(big[v], xv));
            cnt += __builtin_popcount(big[v]);
        }
        for (int q = 0; q < cnt; q += 16) /* lanes past cnt compute gelu(0), never unpacked */
            _mm512_store_ps(buf + q, gelu_big16(_mm512_maskz_load_ps(lanes(cnt - q), buf + q)));
        for (int v = 0; v < nv; v++) {
            if (!big[v]) continue;
            float *yv = y + i0 + 16 * v;
            __mmask16 k = lanes(nb - 16 * v);
            __m512 tail = _mm512_maskz_loadu_ps(lanes(__builtin_popcount(big[v])), buf + pos[v]);
            __m512 r = _mm512_mask_expand_ps(_mm512_maskz_loadu_ps(k, yv), big[v], tail);
            _mm512_mask_storeu_ps(yv, k, r);
        }
    }
}

/* The AVX2 file's final reduction of its accumulators s0 (lanes 0-3 of s)
 * and s1 (lanes 4-7): (s0 + s1), then halves, then the two doubles. */
static inline double hsum_pd(__m512d s) {
    __m256d t = _mm256_add_pd(_mm512_castpd512_pd256(s), _mm512_extractf64x4_pd(s, 1));
    __m128d h = _mm_add_pd(_mm256_castpd256_pd128(t), _mm256_extractf128_pd(t, 1));
    return _mm_cvtsd_f64(_mm_add_sd(h, _mm_unpackhi_pd(h, h)));
}

/* s += the 16 floats of v as two 8-float blocks in turn (the AVX2 order) */
static inline __m512d add_halves(__m512d s, __m512 v) {
    s = _mm512_add_pd(s, _mm512_cvtps_pd(_mm512_castps512_ps256(v)));
    return _mm512_add_pd(s, _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1))));
}

static void softmax_row(const float *x, float *y, int64_t n) {
    __m512 vm = SET1(-INFINITY);
    int64_t i = 0;
    for (; i + 16 <= n; i += 16)
        vm = _mm512_max_ps(vm, _mm512_loadu_ps(x + i));
    if (i < n) vm = _mm512_max_ps(vm, _mm512_mask_loadu_ps(SET1(-INFINITY), lanes(n - i), x + i));
    float mx = _mm512_reduce_max_ps(vm); /* max is exact: any order gives the AVX2 value */
    /* (a NaN anywhere makes the whole row NaN, whatever mx is) */
    if (mx == -INFINITY) mx = 0;
    __m512 m = SET1(mx);
    __m512d s = _mm512_setzero_pd();
    for (i = 0; i + 16 <= n; i += 16) {
        __m512 e = exp16(_mm512_sub_ps(_mm512_loadu_ps(x + i), m));
        _mm512_storeu_ps(y + i, e);
        s = add_halves(s, e);
    }
    if (i < n) {
        /* a partial 8-float block adds zeros past n, as in AVX2; an all-zero
         * block adds +0 to sums that are >= +0: no change */
        __mmask16 k = lanes(n - i);
        __m512 e = _mm512_maskz_mov_ps(k, exp16(_mm512_sub_ps(_mm512_mask_loadu_ps(SET1(-INFINITY), k, x + i), m)));
        _mm512_mask_storeu_ps(y + i, k, e);
        s = add_halves(s, e);
    }
    __m512 inv = SET1((float)(1.0 / hsum_pd(s)));
    for (i = 0; i + 16 <= n; i += 16)
        _mm512_storeu_ps(y + i, _mm512_mul_ps(_mm512_loadu_ps(y + i), inv));
    if (i < n) {
        __mmask16 k = lanes(n - i);
        _mm512_mask_storeu_ps(y + i, k, _mm512_mul_ps(_mm512_maskz_loadu_ps(k, y + i), inv));
    }
}

static void layernorm_row(const float *x, float *y, int64_t n, const float *scale, const float *bias, double eps,
                          double *mean_out, double *inv_out) {
    /* sums over the whole 8-float blocks in AVX2's order, the rest (n % 8) scalar as there */
    int64_t n8 = n / 8 * 8, j = 0;
    __m512d acc = _mm512_setzero_pd();
    for (; j + 16 <= n8; j += 16)
        acc = add_halves(acc, _mm512_loadu_ps(x + j));
    if (j < n8) acc = _mm512_add_pd(acc, _mm512_cvtps_pd(_mm256_loadu_ps(x + j)));
    double s = hsum_pd(acc);
    for (int64_t k = n8; k < n; k++)
        s += x[k];
    double mean = n ? s / (double)n : 0;
    __m512d md = _mm512_set1_pd(mean);
    acc = _mm512_setzero_pd();
    for (j = 0; j + 8 <= n8; j += 8) {
        __m512d d = _mm512_sub_pd(_mm512_cvtps_pd(_mm256_loadu_ps(x + j)), md);
        acc = _mm512_add_pd(acc, _mm512_mul_pd(d, d));
    }
    double ss = hsum_pd(acc);
    for (int64_t k = n8; k < n; k++)
        ss += (x[k] - mean) * (x[k] - mean);
    double inv = 1.0 / sqrt((n ? ss / (double)n : 0) + eps);
    float fm = (float)mean, fi = (float)inv;
    __m512 vm = SET1(fm), vi = SET1(fi);
    for (j = 0; j < n; j += 16) {
        __mmask16 k = lanes(n - j);
        __m512 v = _mm512_mul_ps(_mm512_mul_ps(_mm512_sub_ps(_mm512_maskz_loadu_ps(k, x + j), vm), vi),
                                 _mm512_maskz_loadu_ps(k, scale + j));
        if (bias) v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(k, bias + j));
        _mm512_mask_storeu_ps(y + j, k, v);
    }
    *mean_out = mean;
    *inv_out = inv;
}

/* RMSNorm's row is AVX2's: one pass over memory-bound rows, where 16 lanes
 * would gain little over 8 (and the same bits for free) */
const inf__vmath inf__vmath_avx512 = {"avx512",    vexp,          vtanh,
                                      verf,        vsigmoid,      vgelu,
                                      softmax_row, layernorm_row, INF__VMATH_RMSNORM(inf__rmsnorm_row_avx2)};

#endif /* x86-64 with AVX-512 */
