/*
 * qgemm_avx2.c -- the AVX2 kernels of the 8-bit integer GEMM (ops/qgemm.h):
 * the raw u8 x s8 sum, activation quantization and min/max.
 *
 * DESIGN: B is packed (ops/ref/qgemm.c) as panels of 8 columns, K in pairs,
 * each value widened to int16.  A is read as zero-extended uint16 values: a
 * block of GEMM rows is widened once (vpmovzxbw), a convolution's image is
 * widened once per image by the driver and read in place (implicit GEMM,
 * inf__qconv_raw_avx2: a tap's channel pairs are contiguous, K runs over
 * (tap, channel) as W is packed).  A pair's two values are broadcast to
 * every 32-bit lane with one load (vpbroadcastd), and vpmaddwd multiplies
 * and adds the pair into int32 lanes exactly (255 * 128 * 2 is far from
 * int32's limit).  vpmaddubsw, which saturates the pair sum to int16, is
 * deliberately not used (qgemm.h): on Zen 3 it runs on the same two
 * multiply pipes as vpmaddwd and needs a second multiply (vpmaddwd by ones)
 * to widen its int16 sums, so the exact form costs no multiply throughput.
 * The micro-kernel holds 6 rows x 16 columns of int32 sums in 12 registers,
 * panels outer and row groups inner (a panel's B stays in L1).
 * Results equal inf__qgemm_raw_ref's bit for bit (int32 sums wrap the same).
 *
 * inf__quantize_u8_avx2 is QuantizeLinear's arithmetic (divide, round half
 * to even, add the zero point, clamp, NaN -> zero point) 8 lanes at a time:
 * the same IEEE operations as the scalar reference, so the same bytes.
 * The uint8 row store of a fused QGemm / QConv (inf__qstore_u8_row_avx2)
 * runs a lean form of it where no quotient is NaN (below), 16 columns per
 * store, the same bytes.
 */
#include <immintrin.h>
#include <math.h>
#include <string.h>

#include "ops/qgemm.h"
#include "ops/x86/quantize8_avx2.h"

enum { MR = 6, PANEL = 8, KC = 1024, RC = 24 };

/* K pair g of row r: its two uint16 values broadcast to every 32-bit lane
 * (one load: vpbroadcastd from memory). */
static inline __m256i pair16(const uint16_t *row, int64_t g) {
    int32_t v;
    memcpy(&v, row + 2 * g, 4);
    return _mm256_set1_epi32(v);
}

/* The full 6 x 16 tile, its twelve sums named so they stay in registers:
 * per K pair 2 loads of B, 6 broadcasts, 12 vpmaddwd and 12 vpaddd. */
static void tile_6x16(const int16_t *w0p, const int16_t *w1p, const uint16_t *const *rows, const int64_t *tapoff,
                      int64_t ntaps, int64_t npair, const int32_t *start, int64_t lds, int32_t *c, int64_t ldc) {
    __m256i c00 = _mm256_loadu_si256((const __m256i *)start), c01 = _mm256_loadu_si256((const __m256i *)(start + PANEL));
    __m256i c10 = c00, c11 = c01, c20 = c00, c21 = c01, c30 = c00, c31 = c01, c40 = c00, c41 = c01, c50 = c00, c51 = c01;
    if (lds) { /* continuing a K block: each row's own sums */
        c10 = _mm256_loadu_si256((const __m256i *)(start + lds)), c11 = _mm256_loadu_si256((const __m256i *)(start + lds + PANEL));
        c20 = _mm256_loadu_si256((const __m256i *)(start + 2 * lds)), c21 = _mm256_loadu_si256((const __m256i *)(start + 2 * lds + PANEL));
        c30 = _mm256_loadu_si256((const __m256i *)(start + 3 * lds)), c31 = _mm256_loadu_si256((const __m256i *)(start + 3 * lds + PANEL));
        c40 = _mm256_loadu_si256((const __m256i *)(start + 4 * lds)), c41 = _mm256_loadu_si256((const __m256i *)(start + 4 * lds + PANEL));
        c50 = _mm256_loadu_si256((const __m256i *)(start + 5 * lds)), c51 = _mm256_loadu_si256((const __m256i *)(start + 5 * lds + PANEL));
    }
    for (int64_t t = 0; t < ntaps; t++) {
        const uint16_t *a0 = rows[0] + tapoff[t], *a1 = rows[1] + tapoff[t], *a2 = rows[2] + tapoff[t];
        const uint16_t *a3 = rows[3] + tapoff[t], *a4 = rows[4] + tapoff[t], *a5 = rows[5] + tapoff[t];
        const int16_t *b0 = w0p + t * npair * 2 * PANEL, *b1 = w1p + t * npair * 2 * PANEL;
        for (int64_t g = 0; g < npair; g++) {
            __m256i w0 = _mm256_loadu_si256((const __m256i *)(b0 + g * 2 * PANEL));
            __m256i w1 = _mm256_loadu_si256((const __m256i *)(b1 + g * 2 * PANEL)), av;
            av = pair16(a0, g), c00 = _mm256_add_epi32(c00, _mm256_madd_epi16(av, w0)), c01 = _mm256_add_epi32(c01, _mm256_madd_epi16(av, w1));
            av = pair16(a1, g), c10 = _mm256_add_epi32(c10, _mm256_madd_epi16(av, w0)), c11 = _mm256_add_epi32(c11, _mm256_madd_epi16(av, w1));
            av = pair16(a2, g), c20 = _mm256_add_epi32(c20, _mm256_madd_epi16(av, w0)), c21 = _mm256_add_epi32(c21, _mm256_madd_epi16(av, w1));
            av = pair16(a3, g), c30 = _mm256_add_epi32(c30, _mm256_madd_epi16(av, w0)), c31 = _mm256_add_epi32(c31, _mm256_madd_epi16(av, w1));
            av = pair16(a4, g), c40 = _mm256_add_epi32(c40, _mm256_madd_epi16(av, w0)), c41 = _mm256_add_epi32(c41, _mm256_madd_epi16(av, w1));
            av = pair16(a5, g), c50 = _mm256_add_epi32(c50, _mm256_madd_epi16(av, w0)), c51 = _mm256_add_epi32(c51, _mm256_madd_epi16(av, w1));
        }
    }
    _mm256_storeu_si256((__m256i *)c, c00), _mm256_storeu_si256((__m256i *)(c + PANEL), c01);
    _mm256_storeu_si256((__m256i *)(c + ldc), c10), _mm256_storeu_si256((__m256i *)(c + ldc + PANEL), c11);
    _mm256_storeu_si256((__m256i *)(c + 2 * ldc), c20), _mm256_storeu_si256((__m256i *)(c + 2 * ldc + PANEL), c21);
    _mm256_storeu_si256((__m256i *)(c + 3 * ldc), c30), _mm256_storeu_si256((__m256i *)(c + 3 * ldc + PANEL), c31);
    _mm256_storeu_si256((__m256i *)(c + 4 * ldc), c40), _mm256_storeu_si256((__m256i *)(c + 4 * ldc + PANEL), c41);
    _mm256_storeu_si256((__m256i *)(c + 5 * ldc), c50), _mm256_storeu_si256((__m256i *)(c + 5 * ldc + PANEL), c51);
}

/* Any tile of mr <= 6 rows and one or two panels (the tails). */
static inline __attribute__((always_inline)) void tile(const int16_t *w0p, const int16_t *w1p,
                                                      const uint16_t *const *rows, const int64_t *tapoff,
                                                      int64_t ntaps, int64_t npair, const int32_t *start,
                                                      int64_t lds, const int mr, const int two, int32_t *c,
                                                      int64_t ldc) {
    __m256i acc[MR][2];
    for (int r = 0; r < mr; r++) {
        acc[r][0] = _mm256_loadu_si256((const __m256i *)(start + r * lds));
        acc[r][1] = two ? _mm256_loadu_si256((const __m256i *)(start + r * lds + PANEL)) : acc[r][0];
    }
    for (int64_t t = 0; t < ntaps; t++) {
        const int16_t *b0 = w0p + t * npair * 2 * PANEL, *b1 = w1p + t * npair * 2 * PANEL;
        for (int64_t g = 0; g < npair; g++) {
            __m256i w0 = _mm256_loadu_si256((const __m256i *)(b0 + g * 2 * PANEL));
            __m256i w1 = two ? _mm256_loadu_si256((const __m256i *)(b1 + g * 2 * PANEL)) : w0;
            for (int r = 0; r < mr; r++) {
                __m256i av = pair16(rows[r] + tapoff[t], g);
                acc[r][0] = _mm256_add_epi32(acc[r][0], _mm256_madd_epi16(av, w0));
                if (two) acc[r][1] = _mm256_add_epi32(acc[r][1], _mm256_madd_epi16(av, w1));
            }
        }
    }
    for (int r = 0; r < mr; r++) {
        _mm256_storeu_si256((__m256i *)(c + r * ldc), acc[r][0]);
        if (two) _mm256_storeu_si256((__m256i *)(c + r * ldc + PANEL), acc[r][1]);
    }
}

#define TILE_CASES(two)                                                                                                \
    switch (mr) {                                                                                                      \
    case 5: tile(w0p, w1p, rows, tapoff, ntaps, npair, start, lds, 5, two, c, ldc); return;                            \
    case 4: tile(w0p, w1p, rows, tapoff, ntaps, npair, start, lds, 4, two, c, ldc); return;                            \
    case 3: tile(w0p, w1p, rows, tapoff, ntaps, npair, start, lds, 3, two, c, ldc); return;                            \
    case 2: tile(w0p, w1p, rows, tapoff, ntaps, npair, start, lds, 2, two, c, ldc); return;                            \
    case 1: tile(w0p, w1p, rows, tapoff, ntaps, npair, start, lds, 1, two, c, ldc); return;                            \
    default: tile(w0p, w1p, rows, tapoff, ntaps, npair, start, lds, 6, two, c, ldc); return;                           \
    }

/* Sums of mr rows x one or two panels starting at packed pair k0 (start:
 * the per-column start values, lds 0; or the sums so far, lds = ldc). */
static inline __attribute__((always_inline)) void tile_mr(const inf__qgemm_b *b, int64_t p, int64_t k0pair,
                                                          const uint16_t *const *rows, const int64_t *tapoff,
                                                          int64_t ntaps, int64_t npair, const int32_t *start,
                                                          int64_t lds, int mr, int two, int32_t *c, int64_t ldc) {
    const int16_t *w0p = (const int16_t *)b->data + p * b->kp * PANEL + k0pair * 2 * PANEL, *w1p = w0p + b->kp * PANEL;
    if (two && mr == MR) {
        tile_6x16(w0p, w1p, rows, tapoff, ntaps, npair, start, lds, c, ldc);
        return;
    }
    if (two) TILE_CASES(1)
    TILE_CASES(0)
}

/* Every panel of the m rows (uint16, read in place through rows/tapoff):
 * panel pair outer, row groups inner, so a panel's B stays in L1. */
static void panels(const inf__qgemm_b *b, int64_t k0pair, int64_t m, const uint16_t *const *rows, const int64_t *tapoff,
                   int64_t ntaps, int64_t npair, const int32_t *init, bool cont, int32_t *c, int64_t ldc) {
    static const int32_t zeros[2 * PANEL];
    int64_t np = b->np / PANEL;
    for (int64_t p = 0; p < np; p += 2) {
        int two = p + 2 <= np;
        for (int64_t i = 0; i < m; i += MR) {
            int mr = (int)(m - i < MR ? m - i : MR);
            int32_t *ci = c + i * ldc + p * PANEL;
            const int32_t *start = cont ? ci : init ? init + p * PANEL : zeros;
            tile_mr(b, p, k0pair, rows + i, tapoff, ntaps, npair, start, cont ? ldc : 0, mr, two, ci, ldc);
        }
    }
}

void inf__qconv_raw_avx2(const inf__qgemm_b *b, int64_t m, const uint16_t *const *rows, const int64_t *tapoff,
                         int64_t ntaps, int64_t cq, const int32_t *init, int32_t *c, int64_t ldc) {
    panels(b, 0, m, rows, tapoff, ntaps, cq / 2, init, false, c, ldc);
}

/* n bytes zero-extended to uint16. */
static void widen(const uint8_t *src, int64_t n, uint16_t *dst) {
    int64_t i = 0;
    for (; i + 16 <= n; i += 16)
        _mm256_storeu_si256((__m256i *)(dst + i), _mm256_cvtepu8_epi16(_mm_loadu_si128((const __m128i *)(src + i))));
    for (; i < n; i++) dst[i] = src[i];
}

void inf__widen_u8_avx2(const uint8_t *src, int64_t n, uint16_t *dst) { widen(src, n, dst); }

/* The GEMM: blocks of RC rows and KC values of K, each block's A widened
 * to uint16 once (a vpmovzxbw pass) and then read by every panel. */
void inf__qgemm_raw_avx2(const inf__qgemm_b *b, int64_t m, const uint8_t *a, int64_t lda, const int32_t *init,
                         int32_t *c, int64_t ldc) {
    uint16_t wide[RC * KC] __attribute__((aligned(32)));
    const uint16_t *rows[RC];
    const int64_t tap0 = 0;
    for (int64_t i0 = 0; i0 < m; i0 += RC) {
        int64_t mr = m - i0 < RC ? m - i0 : RC;
        for (int64_t k0 = 0; k0 < b->kp; k0 += KC) {
            int64_t kc = b->kp - k0 < KC ? b->kp - k0 : KC;
            for (int64_t r = 0; r < mr; r++) {
                widen(a + (i0 + r) * lda + k0, kc, wide + r * kc);
                rows[r] = wide + r * kc;
            }
            panels(b, k0 / 2, mr, rows, &tap0, 1, kc / 2, init, k0 > 0, c + i0 * ldc, ldc);
        }
    }
}

void inf__minmax_f32_avx2(const float *x, int64_t n, float *lo, float *hi) {
    __m256 a = _mm256_set1_ps(INFINITY), b = _mm256_set1_ps(-INFINITY);
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256 v = _mm256_loadu_ps(x + i);
        a = _mm256_min_ps(v, a); /* a NaN in v leaves the running value (second operand) */
        b = _mm256_max_ps(v, b);
    }
    float la[8], hb[8], tl, th;
    _mm256_storeu_ps(la, a);
    _mm256_storeu_ps(hb, b);
    inf__minmax_f32_ref(x + i, n - i, &tl, &th);
    for (int k = 0; k < 8; k++) {
        if (la[k] < tl) tl = la[k];
        if (hb[k] > th) th = hb[k];
    }
    *lo = tl, *hi = th;
}

/* ---- the float32 store of the fused QGemm / QConv ---- */

static inline __m256 act8(const inf__epilogue *ep, __m256 v) {
    if (!ep) return v;
    const __m256 zero = _mm256_setzero_ps();
    switch (ep->kind) {
    case INF_EPILOGUE_RELU: return _mm256_max_ps(v, zero); /* NaN and -0 -> +0, as v > 0 ? v : 0 */
    case INF_EPILOGUE_LEAKY_RELU:
        return _mm256_blendv_ps(v, _mm256_mul_ps(_mm256_set1_ps(ep->alpha), v), _mm256_cmp_ps(v, zero, _CMP_LT_OQ));
    case INF_EPILOGUE_CLIP: {
        __m256 lo = _mm256_set1_ps(ep->lo), hi = _mm256_set1_ps(ep->hi);
        v = _mm256_blendv_ps(v, lo, _mm256_cmp_ps(v, lo, _CMP_LT_OQ));
        return _mm256_blendv_ps(v, hi, _mm256_cmp_ps(v, hi, _CMP_GT_OQ));
    }
    default: return v;
    }
}

static inline __m256 fake_quant8(const inf__qout *o, __m256 v) {
    const __m256 s = _mm256_set1_ps(o->rq_scale), z = _mm256_set1_ps((float)o->rq_zp);
    const __m256 lo = _mm256_set1_ps(o->rq_dtype == INF_DTYPE_U8 ? 0.0f : -128.0f);
    const __m256 hi = _mm256_set1_ps(o->rq_dtype == INF_DTYPE_U8 ? 255.0f : 127.0f);
    __m256 r = _mm256_add_ps(_mm256_round_ps(_mm256_div_ps(v, s), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC), z);
    __m256 nan = _mm256_cmp_ps(r, r, _CMP_UNORD_Q);
    r = _mm256_blendv_ps(r, lo, _mm256_cmp_ps(r, lo, _CMP_LT_OQ));
    r = _mm256_blendv_ps(r, hi, _mm256_cmp_ps(r, hi, _CMP_GT_OQ));
    r = _mm256_blendv_ps(r, z, nan);
    return _mm256_mul_ps(_mm256_sub_ps(r, z), s);
}

static inline __m256 scaled8(const inf__qout *o, __m256i acc, __m256 mult, __m256 bias) {
    __m256 v = _mm256_mul_ps(_mm256_cvtepi32_ps(acc), mult);
    if (o->bias_f32) v = _mm256_add_ps(v, bias);
    return act8(o->act, v);
}

static inline __m256 finish8(const inf__qout *o, __m256i acc, __m256 mult, __m256 bias) {
    __m256 v = scaled8(o, acc, mult, bias);
    return o->requant ? fake_quant8(o, v) : v;
}

/* QuantizeLinear's arithmetic on 8 lanes (inf__quantize_u8_avx2's steps,
 * in its order): the 8 bytes in the low half of the result. */
static inline __m128i quantize8(__m256 x, __m256 vs, __m256 vz) {
    __m256i v = quantize8_i32(x, vs, vz);
    __m128i w = _mm_packus_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    return _mm_packus_epi16(w, w);
}

static void quantize_u8_full(const float *x, int64_t n, float scale, int32_t zp, uint8_t *q) {
    const __m256 vs = _mm256_set1_ps(scale), vz = _mm256_set1_ps((float)zp);
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm_storel_epi64((__m128i *)(q + i), quantize8(_mm256_loadu_ps(x + i), vs, vz));
    inf__quantize_u8_ref(x + i, n - i, scale, zp, q + i);
}

/* The F32 value of 8 columns at a time, quantized in registers with
 * QuantizeLinear's vector arithmetic (quantize8): the bytes the next conv's
 * input quantization would make of it, in one pass (no float tile). */
static void qstore_u8_row_full(const inf__qout *o, const int32_t *c, int64_t j0, int64_t n, uint8_t *y) {
    const __m256 vs = _mm256_set1_ps(o->rq_scale), vz = _mm256_set1_ps((float)o->rq_zp);
    int64_t j = 0;
    for (; j + 8 <= n; j += 8) {
        __m256 mult = o->mult_per_col ? _mm256_loadu_ps(o->mult + j0 + j) : _mm256_set1_ps(o->mult[0]);
        __m256 bias = o->bias_f32 ? _mm256_loadu_ps(o->bias_f32 + j0 + j) : _mm256_setzero_ps();
        __m256 v = scaled8(o, _mm256_loadu_si256((const __m256i *)(c + j)), mult, bias);
        _mm_storel_epi64((__m128i *)(y + j), quantize8(v, vs, vz));
    }
    if (j < n) { /* the tail through an 8-lane pass over a padded copy */
        int32_t ct[8] = {0};
        float mt[8] = {0}, bt[8] = {0};
        uint8_t yt[16];
        for (int64_t k = 0; k < n - j; k++) {
            ct[k] = c[j + k];
            mt[k] = o->mult[o->mult_per_col ? j0 + j + k : 0];
            if (o->bias_f32) bt[k] = o->bias_f32[j0 + j + k];
        }
        __m256 v = scaled8(o, _mm256_loadu_si256((const __m256i *)ct), _mm256_loadu_ps(mt), _mm256_loadu_ps(bt));
        _mm_storeu_si128((__m128i *)yt, quantize8(v, vs, vz));
        memcpy(y + j, yt, (size_t)(n - j));
    }
}

/* ---- the lean uint8 store (x86/qstore_avx512.c's, 8 lanes) ----
 * QuantizeLinear's NaN compare and blend are not needed where no quotient
 * d = v / s is NaN: clamping d to [-zp, 512] before rounding half to even,
 * then + zp and the unsigned saturation of vpackusdw + vpackuswb, gives
 * clamp(nearbyint(d) + zp, 0, 255) exactly for any other d, infinities
 * included (-zp is an integer, so rounding the clamped quotient is clamping
 * the rounded one; 512 + zp saturates as any larger value does), with the
 * output zero point in [0, 255].  A row store has no rows to amortize a
 * check of the multipliers and biases over, so the quotients themselves are
 * checked: one vcmpunordps of two chunks' d, or-ed up over the row; a row
 * that met a NaN is stored again by the full sequence (qstore_u8_row_full,
 * which overwrites every byte). */

/* The activation of kind k (a constant in each instantiation below) with act8's results, NaN included:
 * Clip as vmaxps(lo, v), vminps(hi, v) -- lo > v ? lo : v and hi < v ? hi : v, a NaN v returned as act8's
 * compares and blends return it. */
static inline __attribute__((always_inline)) __m256 lean_act8(__m256 v, const int k, __m256 alpha, __m256 lo,
                                                              __m256 hi) {
    const __m256 zero = _mm256_setzero_ps();
    switch (k) {
    case INF_EPILOGUE_RELU:
        return _mm256_max_ps(v, zero);
    case INF_EPILOGUE_LEAKY_RELU:
        return _mm256_blendv_ps(v, _mm256_mul_ps(alpha, v), _mm256_cmp_ps(v, zero, _CMP_LT_OQ));
    case INF_EPILOGUE_CLIP:
        return _mm256_min_ps(hi, _mm256_max_ps(lo, v));
    default:
        return v;
    }
}

/* QuantizeLinear of a non-NaN quotient d into int32 lanes in [0, 767] (nz = -zp as float, iz = zp) */
static inline __m256i lean_q8(__m256 d, __m256 nz, __m256i iz) {
    d = _mm256_min_ps(_mm256_max_ps(d, nz), _mm256_set1_ps(512.0f));
    return _mm256_add_epi32(_mm256_cvtps_epi32(_mm256_round_ps(d, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)), iz);
}

/* 16 int32 lanes in [0, 767] (a: columns 0-7, b: 8-15) to 16 bytes, saturated to 255: vpackusdw interleaves
 * the 128-bit lanes (a0-3 b0-3 | a4-7 b4-7), vpermq puts a's and b's halves together, vpackuswb narrows */
static inline __m128i lean_narrow16(__m256i a, __m256i b) {
    __m256i w = _mm256_permute4x64_epi64(_mm256_packus_epi32(a, b), 0xD8);
    return _mm_packus_epi16(_mm256_castsi256_si128(w), _mm256_extracti128_si256(w, 1));
}

/* ---- the lean input quantization: QuantizeLinear of arbitrary floats by the same lean sequence ----
 * 16 values per step, the quotients' NaN check or-ed up over the call; a
 * call that met a NaN (or a zero point outside [0, 255]) is quantized again
 * by the full sequence, which overwrites every byte (x and q are distinct:
 * floats in, bytes out).  The last n % 16 values take the reference. */
static bool quantize_u8_lean(const float *x, int64_t n, float scale, int32_t zp, uint8_t *q) {
    const __m256 vs = _mm256_set1_ps(scale), nz = _mm256_set1_ps(-(float)zp);
    const __m256i iz = _mm256_set1_epi32(zp);
    __m256 nan = _mm256_setzero_ps();
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        __m256 d0 = _mm256_div_ps(_mm256_loadu_ps(x + i), vs), d1 = _mm256_div_ps(_mm256_loadu_ps(x + i + 8), vs);
        nan = _mm256_or_ps(nan, _mm256_cmp_ps(d0, d1, _CMP_UNORD_Q));
        _mm_storeu_si128((__m128i *)(q + i), lean_narrow16(lean_q8(d0, nz, iz), lean_q8(d1, nz, iz)));
    }
    if (_mm256_movemask_ps(nan)) return false;
    inf__quantize_u8_ref(x + i, n - i, scale, zp, q + i);
    return true;
}

void inf__quantize_u8_avx2(const float *x, int64_t n, float scale, int32_t zp, uint8_t *q) {
    if (zp >= 0 && zp <= 255 && quantize_u8_lean(x, n, scale, zp, q)) return;
    quantize_u8_full(x, n, scale, zp, q);
}

/* The row by the lean sequence, its activation kind k, per-column multipliers pc and bias hb constants (one
 * branch-free loop per combination); false when a quotient was NaN (the bytes then wrong). */
static inline __attribute__((always_inline)) bool lean_row(const inf__qout *o, const int32_t *c, int64_t j0, int64_t n,
                                                           uint8_t *y, const int k, const bool pc, const bool hb) {
    const float *mult = o->mult + (pc ? j0 : 0), *bias = hb ? o->bias_f32 + j0 : NULL;
    const __m256 alpha = _mm256_set1_ps(o->act ? o->act->alpha : 0), lo = _mm256_set1_ps(o->act ? o->act->lo : 0);
    const __m256 hi = _mm256_set1_ps(o->act ? o->act->hi : 0), m0 = _mm256_set1_ps(o->mult[0]);
    const __m256 vs = _mm256_set1_ps(o->rq_scale), nz = _mm256_set1_ps(-(float)o->rq_zp);
    const __m256i iz = _mm256_set1_epi32(o->rq_zp);
    __m256 nan = _mm256_setzero_ps();
    int64_t j = 0;
    for (; j + 16 <= n; j += 16) {
        __m256 v0 = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_loadu_si256((const __m256i *)(c + j))),
                                  pc ? _mm256_loadu_ps(mult + j) : m0);
        __m256 v1 = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_loadu_si256((const __m256i *)(c + j + 8))),
                                  pc ? _mm256_loadu_ps(mult + j + 8) : m0);
        if (hb)
            v0 = _mm256_add_ps(v0, _mm256_loadu_ps(bias + j)), v1 = _mm256_add_ps(v1, _mm256_loadu_ps(bias + j + 8));
        __m256 d0 = _mm256_div_ps(lean_act8(v0, k, alpha, lo, hi), vs);
        __m256 d1 = _mm256_div_ps(lean_act8(v1, k, alpha, lo, hi), vs);
        nan = _mm256_or_ps(nan, _mm256_cmp_ps(d0, d1, _CMP_UNORD_Q));
        _mm_storeu_si128((__m128i *)(y + j), lean_narrow16(lean_q8(d0, nz, iz), lean_q8(d1, nz, iz)));
    }
    if (j < n) { /* the last 1-15 columns through a 16-lane pass over a padded copy (padding: 0 * 0 + 0) */
        int32_t ct[16] = {0};
        float mt[16] = {0}, bt[16] = {0};
        uint8_t yt[16];
        for (int64_t t = 0; t < n - j; t++) {
            ct[t] = c[j + t];
            mt[t] = mult[pc ? j + t : 0];
            if (hb) bt[t] = bias[j + t];
        }
        __m256 v0 = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_loadu_si256((const __m256i *)ct)), _mm256_loadu_ps(mt));
        __m256 v1 =
            _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_loadu_si256((const __m256i *)(ct + 8))), _mm256_loadu_ps(mt + 8));
        if (hb) v0 = _mm256_add_ps(v0, _mm256_loadu_ps(bt)), v1 = _mm256_add_ps(v1, _mm256_loadu_ps(bt + 8));
        __m256 d0 = _mm256_div_ps(lean_act8(v0, k, alpha, lo, hi), vs);
        __m256 d1 = _mm256_div_ps(lean_act8(v1, k, alpha, lo, hi), vs);
        nan = _mm256_or_ps(nan, _mm256_cmp_ps(d0, d1, _CMP_UNORD_Q));
        _mm_storeu_si128((__m128i *)yt, lean_narrow16(lean_q8(d0, nz, iz), lean_q8(d1, nz, iz)));
        memcpy(y + j, yt, (size_t)(n - j));
    }
    return _mm256_movemask_ps(nan) == 0;
}

#define LEAN_ROW(k)                                                                                                    \
    (pc ? (hb ? lean_row(o, c, j0, n, y, k, true, true) : lean_row(o, c, j0, n, y, k, true, false))                    \
        : (hb ? lean_row(o, c, j0, n, y, k, false, true) : lean_row(o, c, j0, n, y, k, false, false)))

static bool qstore_u8_row_lean(const inf__qout *o, const int32_t *c, int64_t j0, int64_t n, uint8_t *y) {
    const bool pc = o->mult_per_col, hb = o->bias_f32 != NULL;
    switch (o->act ? (int)o->act->kind : (int)INF_EPILOGUE_NONE) {
    case INF_EPILOGUE_RELU:
        return LEAN_ROW(INF_EPILOGUE_RELU);
    case INF_EPILOGUE_LEAKY_RELU:
        return LEAN_ROW(INF_EPILOGUE_LEAKY_RELU);
    case INF_EPILOGUE_CLIP:
        return LEAN_ROW(INF_EPILOGUE_CLIP);
    default:
        return LEAN_ROW(INF_EPILOGUE_NONE);
    }
}
#undef LEAN_ROW

/* INF_QOUT_Q8's row store without an int32 bias (QLinearMatMul's int8 /
 * uint8 output): the scalar store_q8 of (float)c * mult (ops/ref/
 * qgemm_drive.c) on 8 lanes -- nearbyint, + zero point, clamp by compares,
 * NaN -> zero point, then the low byte of each lane (values in the type's
 * range: the saturating packs keep them); the last n % 8 columns scalar. */
void inf__qstore_q8_row_avx2(const inf__qout *o, const int32_t *c, int64_t j0, int64_t n, void *y) {
    const bool u8 = o->y_dtype == INF_DTYPE_U8;
    const __m256 z = _mm256_set1_ps((float)o->y_zp);
    const __m256 lo = _mm256_set1_ps(u8 ? 0.0f : -128.0f), hi = _mm256_set1_ps(u8 ? 255.0f : 127.0f);
    int64_t j = 0;
    for (; j + 8 <= n; j += 8) {
        __m256 mult = o->mult_per_col ? _mm256_loadu_ps(o->mult + j0 + j) : _mm256_set1_ps(o->mult[0]);
        __m256 v = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_loadu_si256((const __m256i *)(c + j))), mult);
        __m256 r = _mm256_add_ps(_mm256_round_ps(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC), z);
        __m256 nan = _mm256_cmp_ps(r, r, _CMP_UNORD_Q);
        r = _mm256_blendv_ps(r, lo, _mm256_cmp_ps(r, lo, _CMP_LT_OQ));
        r = _mm256_blendv_ps(r, hi, _mm256_cmp_ps(r, hi, _CMP_GT_OQ));
        __m256i q = _mm256_cvtps_epi32(_mm256_blendv_ps(r, z, nan));
        __m128i w = _mm_packs_epi32(_mm256_castsi256_si128(q), _mm256_extracti128_si256(q, 1));
        w = u8 ? _mm_packus_epi16(w, w) : _mm_packs_epi16(w, w);
        _mm_storel_epi64((__m128i *)((uint8_t *)y + j), w);
    }
    for (; j < n; j++) { /* store_q8's steps */
        float r = nearbyintf((float)c[j] * o->mult[o->mult_per_col ? j0 + j : 0]) + (float)o->y_zp;
        float l = u8 ? 0.0f : -128.0f, h = u8 ? 255.0f : 127.0f;
        r = r < l ? l : r > h ? h : r;
        if (r != r) r = (float)o->y_zp;
        if (u8) ((uint8_t *)y)[j] = (uint8_t)r;
        else ((int8_t *)y)[j] = (int8_t)r;
    }
}

void inf__qstore_u8_row_avx2(const inf__qout *o, const int32_t *c, int64_t j0, int64_t n, uint8_t *y) {
    if (o->rq_zp >= 0 && o->rq_zp <= 255 && qstore_u8_row_lean(o, c, j0, n, y)) return;
    qstore_u8_row_full(o, c, j0, n, y);
}

/* ---- the lean float row store (every row; below, its Q -> DQ) ----
 * fake_quant8's compares and blends are not needed: with nlo = lo - zp and
 * nhi = hi - zp (exact: small integers), clamping the quotient d = v / s to
 * [nlo, nhi] before rounding half to even gives the clamped r - zp of
 * fake_quant8 for any d that is not NaN (rounding is monotone and keeps the
 * integer bounds; a quotient past the bounds saturates as r does, infinities
 * included); + 0 turns a rounded -0 into fake_quant8's +0 ((r + zp) - zp).
 * A NaN quotient is zeroed first (an and with its ordered compare): then
 * 0 * s, fake_quant8's (zp - zp) * s.  No fallback pass: the store may run
 * in place (y over c), so every lane is final when written. */
static inline __m256 lean_fq8(__m256 v, __m256 vs, __m256 nlo, __m256 nhi) {
    __m256 d = _mm256_div_ps(v, vs);
    d = _mm256_and_ps(d, _mm256_cmp_ps(d, d, _CMP_ORD_Q));
    d = _mm256_min_ps(_mm256_max_ps(d, nlo), nhi);
    __m256 r = _mm256_round_ps(d, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    return _mm256_mul_ps(_mm256_add_ps(r, _mm256_setzero_ps()), vs);
}

/* The row with activation kind k, per-column multipliers pc, bias hb and Q -> DQ rq constants (one branch-free
 * loop per combination, as lean_row: GCC otherwise reloads the flags and the kind every 8 columns, since y may
 * alias *o). */
static inline __attribute__((always_inline)) void lean_f32_row(const inf__qout *o, const int32_t *c, int64_t j0,
                                                               int64_t n, float *y, const int k, const bool pc,
                                                               const bool hb, const bool rq) {
    const float *mult = o->mult + (pc ? j0 : 0), *bias = hb ? o->bias_f32 + j0 : NULL;
    const __m256 alpha = _mm256_set1_ps(o->act ? o->act->alpha : 0), lo = _mm256_set1_ps(o->act ? o->act->lo : 0);
    const __m256 hi = _mm256_set1_ps(o->act ? o->act->hi : 0), m0 = _mm256_set1_ps(o->mult[0]);
    const bool u8 = o->rq_dtype == INF_DTYPE_U8;
    const __m256 vs = _mm256_set1_ps(o->rq_scale), nlo = _mm256_set1_ps((float)((u8 ? 0 : -128) - o->rq_zp));
    const __m256 nhi = _mm256_set1_ps((float)((u8 ? 255 : 127) - o->rq_zp));
    int64_t j = 0;
    for (; j + 8 <= n; j += 8) {
        __m256 v = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_loadu_si256((const __m256i *)(c + j))),
                                 pc ? _mm256_loadu_ps(mult + j) : m0);
        if (hb) v = _mm256_add_ps(v, _mm256_loadu_ps(bias + j));
        v = lean_act8(v, k, alpha, lo, hi);
        _mm256_storeu_ps(y + j, rq ? lean_fq8(v, vs, nlo, nhi) : v);
    }
    if (j < n) { /* the last 1-7 columns through an 8-lane pass over a padded copy */
        int32_t ct[8] = {0};
        float mt[8] = {0}, bt[8] = {0}, yt[8];
        for (int64_t t = 0; t < n - j; t++) {
            ct[t] = c[j + t];
            mt[t] = mult[pc ? j + t : 0];
            if (hb) bt[t] = bias[j + t];
        }
        __m256 v = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_loadu_si256((const __m256i *)ct)), _mm256_loadu_ps(mt));
        if (hb) v = _mm256_add_ps(v, _mm256_loadu_ps(bt));
        v = lean_act8(v, k, alpha, lo, hi);
        _mm256_storeu_ps(yt, rq ? lean_fq8(v, vs, nlo, nhi) : v);
        memcpy(y + j, yt, (size_t)(n - j) * sizeof *yt);
    }
}

#define LEAN_F32_ROW_RQ(k, rq)                                                                                         \
    (pc ? (hb ? lean_f32_row(o, c, j0, n, y, k, true, true, rq) : lean_f32_row(o, c, j0, n, y, k, true, false, rq))    \
        : (hb ? lean_f32_row(o, c, j0, n, y, k, false, true, rq) : lean_f32_row(o, c, j0, n, y, k, false, false, rq)))
#define LEAN_F32_ROW(k) (rq ? LEAN_F32_ROW_RQ(k, true) : LEAN_F32_ROW_RQ(k, false))

/* Every float row store but Q -> DQ with a zero point beyond +-65536 (finish8's sequence, below). */
static void qstore_f32_row_lean(const inf__qout *o, const int32_t *c, int64_t j0, int64_t n, float *y) {
    const bool pc = o->mult_per_col, hb = o->bias_f32 != NULL, rq = o->requant;
    switch (o->act ? (int)o->act->kind : (int)INF_EPILOGUE_NONE) {
    case INF_EPILOGUE_RELU:
        LEAN_F32_ROW(INF_EPILOGUE_RELU);
        return;
    case INF_EPILOGUE_LEAKY_RELU:
        LEAN_F32_ROW(INF_EPILOGUE_LEAKY_RELU);
        return;
    case INF_EPILOGUE_CLIP:
        LEAN_F32_ROW(INF_EPILOGUE_CLIP);
        return;
    default:
        LEAN_F32_ROW(INF_EPILOGUE_NONE);
        return;
    }
}
#undef LEAN_F32_ROW
#undef LEAN_F32_ROW_RQ

void inf__qstore_f32_row_avx2(const inf__qout *o, const int32_t *c, int64_t j0, int64_t n, float *y) {
    if (!o->requant || (o->rq_zp >= -65536 && o->rq_zp <= 65536)) {
        qstore_f32_row_lean(o, c, j0, n, y);
        return;
    }
    int64_t j = 0;
    for (; j + 8 <= n; j += 8) {
        __m256 mult = o->mult_per_col ? _mm256_loadu_ps(o->mult + j0 + j) : _mm256_set1_ps(o->mult[0]);
        __m256 bias = o->bias_f32 ? _mm256_loadu_ps(o->bias_f32 + j0 + j) : _mm256_setzero_ps();
        _mm256_storeu_ps(y + j, finish8(o, _mm256_loadu_si256((const __m256i *)(c + j)), mult, bias));
    }
    if (j < n) { /* the tail through an 8-lane pass over a padded copy */
        int32_t ct[8] = {0};
        float mt[8] = {0}, bt[8] = {0}, yt[8];
        int64_t t = n - j;
        for (int64_t k = 0; k < t; k++) {
            ct[k] = c[j + k];
            mt[k] = o->mult[o->mult_per_col ? j0 + j + k : 0];
            if (o->bias_f32) bt[k] = o->bias_f32[j0 + j + k];
        }
        _mm256_storeu_ps(yt, finish8(o, _mm256_loadu_si256((const __m256i *)ct), _mm256_loadu_ps(mt), _mm256_loadu_ps(bt)));
        memcpy(y + j, yt, (size_t)t * sizeof *yt);
    }
}

void inf__qstore_f32_col_avx2(const inf__qout *o, const int32_t *c, int64_t ldc, int64_t rows, int64_t j, float *y) {
    __m256 mult = _mm256_set1_ps(o->mult[o->mult_per_col ? j : 0]);
    __m256 bias = _mm256_set1_ps(o->bias_f32 ? o->bias_f32[j] : 0.0f);
    const __m256i idx = _mm256_mullo_epi32(_mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7), _mm256_set1_epi32((int)ldc));
    int64_t p = 0;
    for (; p + 8 <= rows; p += 8)
        _mm256_storeu_ps(y + p, finish8(o, _mm256_i32gather_epi32((const int *)(c + p * ldc), idx, 4), mult, bias));
    if (p < rows) {
        int32_t ct[8] = {0};
        float yt[8];
        for (int64_t k = 0; k < rows - p; k++) ct[k] = c[(p + k) * ldc];
        _mm256_storeu_ps(yt, finish8(o, _mm256_loadu_si256((const __m256i *)ct), mult, bias));
        memcpy(y + p, yt, (size_t)(rows - p) * sizeof *yt);
    }
}

/* 8 x 8 int32 transpose of r[0..7] in place. */
static inline void transpose8(__m256i r[8]) {
    __m256i t[8], u[8];
    for (int k = 0; k < 8; k += 2) {
        t[k] = _mm256_unpacklo_epi32(r[k], r[k + 1]);
        t[k + 1] = _mm256_unpackhi_epi32(r[k], r[k + 1]);
    }
    for (int k = 0; k < 8; k += 4) {
        u[k] = _mm256_unpacklo_epi64(t[k], t[k + 2]);
        u[k + 1] = _mm256_unpackhi_epi64(t[k], t[k + 2]);
        u[k + 2] = _mm256_unpacklo_epi64(t[k + 1], t[k + 3]);
        u[k + 3] = _mm256_unpackhi_epi64(t[k + 1], t[k + 3]);
    }
    for (int k = 0; k < 4; k++) {
        r[k] = _mm256_permute2x128_si256(u[k], u[k + 4], 0x20);
        r[k + 4] = _mm256_permute2x128_si256(u[k], u[k + 4], 0x31);
    }
}

void inf__qstore_f32_block_t_avx2(const inf__qout *o, const int32_t *c, int64_t ldc, int64_t rows, int64_t j0,
                                  int64_t n, float *y, int64_t ldy) {
    int64_t j = 0;
    for (; j + 8 <= n; j += 8) {
        int64_t p = 0;
        for (; p + 8 <= rows; p += 8) {
            __m256i r[8];
            for (int k = 0; k < 8; k++) r[k] = _mm256_loadu_si256((const __m256i *)(c + (p + k) * ldc + j));
            transpose8(r); /* r[k]: column j + k, positions p .. p + 7 */
            for (int k = 0; k < 8; k++) {
                int64_t ch = j0 + j + k;
                __m256 mult = _mm256_set1_ps(o->mult[o->mult_per_col ? ch : 0]);
                __m256 bias = _mm256_set1_ps(o->bias_f32 ? o->bias_f32[ch] : 0.0f);
                _mm256_storeu_ps(y + (j + k) * ldy + p, finish8(o, r[k], mult, bias));
            }
        }
        for (int k = 0; k < 8 && p < rows; k++)
            inf__qstore_f32_col_avx2(o, c + p * ldc + j + k, ldc, rows - p, j0 + j + k, y + (j + k) * ldy + p);
    }
    for (; j < n; j++) inf__qstore_f32_col_avx2(o, c + j, ldc, rows, j0 + j, y + j * ldy);
}

/* ---- byte transposes (channels-last input of the convolutions) ---- */

/* 16 x 16 bytes: four rounds of interleaving row k with row k + 8 (epi8
 * unpacks) give the transpose. */
static inline void transpose16(const uint8_t *src, int64_t ls, uint8_t *dst, int64_t ld) {
    __m128i x[16], y[16];
    for (int i = 0; i < 16; i++) x[i] = _mm_loadu_si128((const __m128i *)(src + i * ls));
    for (int round = 0; round < 4; round++) {
        for (int k = 0; k < 8; k++) {
            y[2 * k] = _mm_unpacklo_epi8(x[k], x[k + 8]);
            y[2 * k + 1] = _mm_unpackhi_epi8(x[k], x[k + 8]);
        }
        memcpy(x, y, sizeof x);
    }
    for (int i = 0; i < 16; i++) _mm_storeu_si128((__m128i *)(dst + i * ld), x[i]);
}

void inf__transpose_u8_avx2(const uint8_t *src, int64_t ls, int64_t rows, int64_t cols, uint8_t *dst, int64_t ld) {
    int64_t r0 = 0;
    for (; r0 + 16 <= rows; r0 += 16) {
        int64_t c0 = 0;
        for (; c0 + 16 <= cols; c0 += 16) transpose16(src + r0 * ls + c0, ls, dst + c0 * ld + r0, ld);
        for (; c0 < cols; c0++)
            for (int64_t r = r0; r < r0 + 16; r++) dst[c0 * ld + r] = src[r * ls + c0];
    }
    for (int64_t c = 0; c < cols && r0 < rows; c++)
        for (int64_t r = r0; r < rows; r++) dst[c * ld + r] = src[r * ls + c];
}

/* ---- the fused MaxPool of a QConv (ops/ref/qgemm_drive.c) ---- */

/* m[j] = v[j] > m[j] ? v[j] : m[j] (vmaxps returns its second operand unless
 * the first is greater: the same comparison). */
void inf__max_f32_avx2(float *m, const float *v, int64_t n) {
    int64_t j = 0;
    for (; j + 8 <= n; j += 8) _mm256_storeu_ps(m + j, _mm256_max_ps(_mm256_loadu_ps(v + j), _mm256_loadu_ps(m + j)));
    for (; j < n; j++) m[j] = v[j] > m[j] ? v[j] : m[j];
}

void inf__max_i32_avx2(int32_t *m, const int32_t *v, int64_t n) {
    int64_t j = 0;
    for (; j + 8 <= n; j += 8)
        _mm256_storeu_si256((__m256i *)(m + j), _mm256_max_epi32(_mm256_loadu_si256((const __m256i *)(v + j)),
                                                                 _mm256_loadu_si256((const __m256i *)(m + j))));
    for (; j < n; j++) m[j] = v[j] > m[j] ? v[j] : m[j];
}

/* dst[c * ld + r] = src[r * ls + c] for r < rows, c < cols (floats, 8 x 8 blocks). */
void inf__transpose_f32_avx2(const float *src, int64_t ls, int64_t rows, int64_t cols, float *dst, int64_t ld) {
    int64_t r0 = 0;
    for (; r0 + 8 <= rows; r0 += 8) {
        int64_t c0 = 0;
        for (; c0 + 8 <= cols; c0 += 8) {
            __m256i x[8];
            for (int k = 0; k < 8; k++) x[k] = _mm256_loadu_si256((const __m256i *)(src + (r0 + k) * ls + c0));
            transpose8(x);
            for (int k = 0; k < 8; k++) _mm256_storeu_si256((__m256i *)(dst + (c0 + k) * ld + r0), x[k]);
        }
        for (; c0 < cols; c0++)
            for (int64_t r = r0; r < r0 + 8; r++) dst[c0 * ld + r] = src[r * ls + c0];
    }
    for (int64_t c = 0; c < cols && r0 < rows; c++)
        for (int64_t r = r0; r < rows; r++) dst[c * ld + r] = src[r * ls + c];
}

void inf__add_act_f32_avx2(float *y, const float *r, int64_t n, const inf__epilogue *act) {
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(y + i, act8(act, _mm256_add_ps(_mm256_loadu_ps(y + i), _mm256_loadu_ps(r + i))));
    if (i < n) {
        float yt[8] = {0}, rt[8] = {0};
        memcpy(yt, y + i, (size_t)(n - i) * sizeof *yt);
        memcpy(rt, r + i, (size_t)(n - i) * sizeof *rt);
        _mm256_storeu_ps(yt, act8(act, _mm256_add_ps(_mm256_loadu_ps(yt), _mm256_loadu_ps(rt))));
        memcpy(y + i, yt, (size_t)(n - i) * sizeof *yt);
    }
}
