/*
 * qstore_avx512.c -- the 16-lane (AVX-512) forms of the INT8 graph's
 * per-element passes: quantizing float activations to uint8
 * (QuantizeLinear; a stem's few channel planes straight into channels-last
 * positions), the range of DynamicQuantizeLinear, the uint8 store of a fused QConv / QGemm
 * (INF_QOUT_F32_U8: scale, bias, activation, then QuantizeLinear) and its
 * float store (INF_QOUT_F32, with the optional Q -> DQ of the output).
 *
 * DESIGN: the same values as the scalar twins (ops/ref/qgemm.c
 * inf__quantize_u8_ref, ops/ref/qgemm_drive.c store_one / store_u8) and the
 * AVX2 forms (x86/qgemm_avx2.c): round half to even of the true quotient
 * x / scale, + zero point, clamp by compares, NaN -> zero point; a separate
 * multiply and add (the build does not contract them into FMAs: ISO C,
 * -ffp-contract=off).  So the bytes are identical (tests/kernels/
 * test_qgemm.c).  Masks replace the blends, vpmovdb packs 16 lanes into 16
 * bytes, and tails use masked loads and stores (no scalar remainder).
 *
 * The true division stays: a reciprocal multiply with an exactness check
 * (round(x * fl(1/s)) equals round(fl(x / s)) unless x * fl(1/s) lies within
 * ~2^-12 of a half-integer) was tried and made the INT8 MLP 12 % slower on
 * Zen 5, whose 512-bit vdivps is cheap.  Compiled with
 * AVX-512 F/BW/VL; called only when inf__qgemm_best_isa() is
 * INF_QGEMM_VNNI512.
 */
#include <immintrin.h>
#include <math.h>

#include "ops/qgemm.h"

/* nearbyint(v / s) + z clamped to [lo, hi], NaN -> z (QuantizeLinear's arithmetic) */
static inline __m512 qround16(__m512 v, __m512 s, __m512 z, __m512 lo, __m512 hi) {
    __m512 q =
        _mm512_add_ps(_mm512_roundscale_ps(_mm512_div_ps(v, s), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC), z);
    __mmask16 nan = _mm512_cmp_ps_mask(q, q, _CMP_UNORD_Q);
    q = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(q, lo, _CMP_LT_OQ), q, lo);
    q = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(q, hi, _CMP_GT_OQ), q, hi);
    return _mm512_mask_blend_ps(nan, q, z);
}

static inline __m512i quantize16(__m512 v, __m512 s, __m512 z) {
    return _mm512_cvtps_epi32(qround16(v, s, z, _mm512_setzero_ps(), _mm512_set1_ps(255.0f)));
    /* an integer in [0, 255]: exact */
}

void inf__quantize_u8_avx512(const float *x, int64_t n, float scale, int32_t zp, uint8_t *q) {
    const __m512 s = _mm512_set1_ps(scale), z = _mm512_set1_ps((float)zp);
    int64_t i = 0;
    for (; i + 16 <= n; i += 16)
        _mm_storeu_si128((__m128i *)(q + i), _mm512_cvtepi32_epi8(quantize16(_mm512_loadu_ps(x + i), s, z)));
    if (i < n) {
        __mmask16 m = (__mmask16)((1u << (n - i)) - 1);
        _mm_mask_storeu_epi8(q + i, m, _mm512_cvtepi32_epi8(quantize16(_mm512_maskz_loadu_ps(m, x + i), s, z)));
    }
}

/* n positions of c <= 4 float planes (plane values apart) quantized into
 * 4-byte channels-last positions (channels c..3 the zero point): the stem's
 * input in one pass -- each channel as inf__quantize_u8_avx512 makes it,
 * the four bytes of a position assembled in its 32-bit lane. */
void inf__quantize_planes4_u8_avx512(const float *x, int64_t plane, int64_t c, int64_t n, float scale, int32_t zp,
                                     uint8_t *q) {
    const __m512 s = _mm512_set1_ps(scale), z = _mm512_set1_ps((float)zp);
    __m512i pad = _mm512_setzero_si512();
    for (int64_t k = c; k < 4; k++)
        pad = _mm512_or_si512(pad, _mm512_set1_epi32((int32_t)((uint32_t)zp << (8 * k))));
    for (int64_t i = 0; i < n; i += 16) {
        __mmask16 m = n - i >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << (n - i)) - 1);
        __m512i w = pad;
        for (int64_t k = 0; k < c; k++) {
            __m512i v = quantize16(_mm512_maskz_loadu_ps(m, x + k * plane + i), s, z);
            w = _mm512_or_si512(w, _mm512_slli_epi32(v, (unsigned)(8 * k)));
        }
        _mm512_mask_storeu_epi32(q + 4 * i, m, w);
    }
}

/* min and max of x, NaN ignored (vminps returns its second operand, the
 * running value, when either is NaN), the tail through a mask: the range of
 * DynamicQuantizeLinear (inf__minmax_f32_ref's result). */
void inf__minmax_f32_avx512(const float *x, int64_t n, float *lo, float *hi) {
    __m512 a = _mm512_set1_ps(INFINITY), b = _mm512_set1_ps(-INFINITY);
    for (int64_t i = 0; i < n; i += 16) {
        __mmask16 m = n - i >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << (n - i)) - 1);
        __m512 v = _mm512_maskz_loadu_ps(m, x + i);
        a = _mm512_mask_min_ps(a, m, v, a);
        b = _mm512_mask_max_ps(b, m, v, b);
    }
    *lo = _mm512_reduce_min_ps(a), *hi = _mm512_reduce_max_ps(b);
}

/* The fused activation, as act8 (x86/qgemm_avx2.c) and act (the scalar store). */
static inline __m512 act16(const inf__epilogue *ep, __m512 v) {
    if (!ep) return v;
    const __m512 zero = _mm512_setzero_ps();
    switch (ep->kind) {
    case INF_EPILOGUE_RELU: return _mm512_max_ps(v, zero); /* NaN and -0 -> +0, as v > 0 ? v : 0 */
    case INF_EPILOGUE_LEAKY_RELU:
        return _mm512_mask_blend_ps(_mm512_cmp_ps_mask(v, zero, _CMP_LT_OQ), v, _mm512_mul_ps(_mm512_set1_ps(ep->alpha), v));
    case INF_EPILOGUE_CLIP: {
        __m512 lo = _mm512_set1_ps(ep->lo), hi = _mm512_set1_ps(ep->hi);
        v = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(v, lo, _CMP_LT_OQ), v, lo);
        return _mm512_mask_blend_ps(_mm512_cmp_ps_mask(v, hi, _CMP_GT_OQ), v, hi);
    }
    default: return v;
    }
}

static inline __mmask16 lanes(int64_t left) { return left >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << left) - 1); }

/* A column chunk's per-column multipliers and biases (from column at), loaded once for all its rows. */
typedef struct chunk_scale {
    __m512 mult, bias;
} chunk_scale;

static inline chunk_scale chunk_scale_load(const inf__qout *o, int64_t at, __mmask16 m) {
    return (chunk_scale){o->mult_per_col ? _mm512_maskz_loadu_ps(m, o->mult + at) : _mm512_set1_ps(o->mult[0]),
                         o->bias_f32 ? _mm512_maskz_loadu_ps(m, o->bias_f32 + at) : _mm512_setzero_ps()};
}

/* (float)acc * mult + bias of 16 sums with a loaded chunk_scale (before any activation) */
static inline __m512 chunk_value16(const inf__qout *o, const chunk_scale *k, const int32_t *c, __mmask16 m) {
    __m512 v = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_maskz_loadu_epi32(m, c)), k->mult);
    return o->bias_f32 ? _mm512_add_ps(v, k->bias) : v;
}

/* 16 bytes (m's lanes) to y: the plain store when every lane is written */
static inline void store16_u8(uint8_t *y, __mmask16 m, __m128i q) {
    if (m == 0xFFFF)
        _mm_storeu_si128((__m128i *)y, q);
    else
        _mm_mask_storeu_epi8(y, m, q);
}

/* ---- the lean uint8 store ----
 * Where no value can be NaN or infinite, QuantizeLinear's compares and
 * blends are not needed: with d = v / s finite, clamping d to
 * [-zp, 512] before a round-to-nearest-even conversion, then + zp and
 * vpmovusdb's unsigned saturation to 255, gives clamp(nearbyint(d) + zp,
 * 0, 255) exactly (-zp is an integer, so rounding the clamped quotient is
 * clamping the rounded one; 512 + zp saturates as any larger value does).
 * Likewise a Q -> DQ (pre's requant) is (clamp(nearbyint(d), lo - zp,
 * hi - zp)) * s.  "No NaN or infinity" is checked, not assumed: every
 * multiplier, bias and residual scale below 2^64 in magnitude (|acc| <
 * 2^31, so |v| < 2^96), activation constants within [-256, 256] (a
 * LeakyRelu's product stays finite, so alpha * v is never 0 * inf), the
 * scales finite and > 0, the output zero point in [0, 255] -- else the
 * full sequence above runs.  Only a division v / s may overflow to an
 * infinity, which the clamps handle as the full sequence does. */
static const float LEAN_LIM = 18446744073709551616.0f; /* 2^64 */

static inline bool lean_num(float v) { return v > -LEAN_LIM && v < LEAN_LIM; }
static inline bool lean_scale(float s) { return s > 0 && s < LEAN_LIM; }

/* activation constants within [-256, 256]: two activations (pre's and the Add's) keep |v| < 2^113 */
static inline bool lean_act(const inf__epilogue *ep) {
    return !ep || (fabsf(ep->alpha) <= 256.0f && fabsf(ep->lo) <= 256.0f && fabsf(ep->hi) <= 256.0f);
}

/* the uint8 output's QuantizeLinear (scale, zero point) */
static inline bool lean_u8_out(const inf__qout *o) {
    return lean_scale(o->rq_scale) && o->rq_zp >= 0 && o->rq_zp <= 255;
}

/* every lane of m within (-2^64, 2^64) (NaN is not) */
static inline bool lean_lanes(__m512 v, __mmask16 m) {
    __m512 a = _mm512_abs_ps(v);
    return (_mm512_cmp_ps_mask(a, _mm512_set1_ps(LEAN_LIM), _CMP_LT_OQ) & m) == m;
}

/* QuantizeLinear of finite v into int32 lanes in [0, 767] (nz = -zp as float, iz = zp) */
static inline __m512i lean_q16(__m512 v, __m512 s, __m512 nz, __m512i iz) {
    __m512 d = _mm512_min_ps(_mm512_max_ps(_mm512_div_ps(v, s), nz), _mm512_set1_ps(512.0f));
    return _mm512_add_epi32(_mm512_cvt_roundps_epi32(d, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC), iz);
}

/* (float)acc * mult + bias, then the activation: the F32 value of 16 columns from j0 + j */
static inline __m512 scaled16(const inf__qout *o, const int32_t *c, int64_t at, __mmask16 m) {
    __m512 mult = o->mult_per_col ? _mm512_maskz_loadu_ps(m, o->mult + at) : _mm512_set1_ps(o->mult[0]);
    __m512 v = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_maskz_loadu_epi32(m, c)), mult);
    if (o->bias_f32) v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(m, o->bias_f32 + at));
    return act16(o->act, v);
}

void inf__qstore_u8_row_avx512(const inf__qout *o, const int32_t *c, int64_t j0, int64_t n, uint8_t *y) {
    const __m512 s = _mm512_set1_ps(o->rq_scale);
    const __m512 z = _mm512_set1_ps((float)o->rq_zp);
    for (int64_t j = 0; j < n; j += 16) {
        __mmask16 m = lanes(n - j);
        __m128i q = _mm512_cvtepi32_epi8(
            quantize16(scaled16(o, c + j, j0 + j, m), s, z)); /* register
                                                               * form: the memory form of vpmovdb is slow on Zen 4 */
        store16_u8(y + j, m, q);
    }
}

/* INF_QOUT_Q8's row store without an int32 bias (QLinearMatMul's int8 / uint8
 * output; inf__qstore_q8_row_avx2's 16-lane form): store_q8 of (float)c *
 * mult -- nearbyint, + zero point, clamp by compares, NaN -> zero point
 * (qround16 with a scale of 1: v / 1 is v), then the low byte of each lane. */
void inf__qstore_q8_row_avx512(const inf__qout *o, const int32_t *c, int64_t j0, int64_t n, void *y) {
    const __m512 one = _mm512_set1_ps(1.0f), z = _mm512_set1_ps((float)o->y_zp);
    const __m512 lo = _mm512_set1_ps(o->y_dtype == INF_DTYPE_U8 ? 0.0f : -128.0f);
    const __m512 hi = _mm512_set1_ps(o->y_dtype == INF_DTYPE_U8 ? 255.0f : 127.0f);
    for (int64_t j = 0; j < n; j += 16) {
        __mmask16 m = lanes(n - j);
        __m512 mult = o->mult_per_col ? _mm512_maskz_loadu_ps(m, o->mult + j0 + j) : _mm512_set1_ps(o->mult[0]);
        __m512 v = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_maskz_loadu_epi32(m, c + j)), mult);
        __m128i q = _mm512_cvtepi32_epi8(_mm512_cvtps_epi32(qround16(v, one, z, lo, hi)));
        store16_u8((uint8_t *)y + j, m, q);
    }
}

/* INF_QOUT_F32's row store (inf__qstore_f32_row_avx2's 16-lane form):
 * the value, then with o->requant DequantizeLinear(QuantizeLinear(v)). */
void inf__qstore_f32_row_avx512(const inf__qout *o, const int32_t *c, int64_t j0, int64_t n, float *y) {
    const __m512 s = _mm512_set1_ps(o->rq_scale);
    const __m512 z = _mm512_set1_ps((float)o->rq_zp);
    const __m512 lo = _mm512_set1_ps(o->rq_dtype == INF_DTYPE_U8 ? 0.0f : -128.0f);
    const __m512 hi = _mm512_set1_ps(o->rq_dtype == INF_DTYPE_U8 ? 255.0f : 127.0f);
    for (int64_t j = 0; j < n; j += 16) {
        __mmask16 m = lanes(n - j);
        __m512 v = scaled16(o, c + j, j0 + j, m);
        if (o->requant) v = _mm512_mul_ps(_mm512_sub_ps(qround16(v, s, z, lo, hi), z), s);
        _mm512_mask_storeu_ps(y + j, m, v);
    }
}

/* INF_QOUT_F32_U8 with a uint8 residual (o->pre, ops/ref/qgemm_drive.c
 * store_rows_residual_u8's rows, fused; sums ldc apart, residual and
 * output bytes ldy apart): pre's value (scale, bias, its Q -> DQ), +
 * (r - res_zp) * res_scale, the activation act, then QuantizeLinear with
 * o's rq_scale / rq_zp -- one pass, the same operations in the same order. */
void inf__qstore_u8_res_rows_avx512(const inf__qout *o, const int32_t *c, int64_t ldc, int64_t rows, int64_t j0,
                                    int64_t n, const uint8_t *r, const inf__epilogue *act, uint8_t *y, int64_t ldy) {
    const inf__qout *pre = o->pre;
    const __m512 ps = _mm512_set1_ps(pre->rq_scale), pz = _mm512_set1_ps((float)pre->rq_zp);
    const __m512 plo = _mm512_set1_ps(pre->rq_dtype == INF_DTYPE_U8 ? 0.0f : -128.0f);
    const __m512 phi = _mm512_set1_ps(pre->rq_dtype == INF_DTYPE_U8 ? 255.0f : 127.0f);
    const __m512 rs = _mm512_set1_ps(o->res_scale), s = _mm512_set1_ps(o->rq_scale);
    const __m512 z = _mm512_set1_ps((float)o->rq_zp);
    const __m512i rz = _mm512_set1_epi32(o->res_zp);
    const __m512 nz = _mm512_set1_ps(-(float)o->rq_zp), plo_z = _mm512_sub_ps(plo, pz), phi_z = _mm512_sub_ps(phi, pz);
    const __m512i iz = _mm512_set1_epi32(o->rq_zp);
    bool lean = lean_u8_out(o) && lean_act(act) && lean_act(pre->act) && lean_num(o->res_scale) &&
                (!pre->requant || lean_scale(pre->rq_scale));
    for (int64_t j = 0; j < n; j += 16) { /* a column chunk: its multipliers and biases loaded once */
        __mmask16 m = lanes(n - j);
        chunk_scale k = chunk_scale_load(pre, j0 + j, m);
        if (lean && lean_lanes(k.mult, m) && lean_lanes(k.bias, m)) {
            /* what the loop reads through o, pre and act in locals: the byte stores could alias them */
            const bool bias = pre->bias_f32 != NULL, requant = pre->requant;
            const inf__epilogue a0 = pre->act ? *pre->act : (inf__epilogue){0}, a1 = act ? *act : (inf__epilogue){0};
            for (int64_t i = 0; i < rows; i++) {
                __m512 v = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_maskz_loadu_epi32(m, c + i * ldc + j)), k.mult);
                v = act16(&a0, bias ? _mm512_add_ps(v, k.bias) : v);
                if (requant) { /* Q -> DQ: (clamp(nearbyint(v / s), lo - zp, hi - zp)) * s */
                    __m512 d = _mm512_min_ps(_mm512_max_ps(_mm512_div_ps(v, ps), plo_z), phi_z);
                    v = _mm512_mul_ps(_mm512_roundscale_ps(d, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC), ps);
                }
                __m512i ri = _mm512_sub_epi32(_mm512_cvtepu8_epi32(_mm_maskz_loadu_epi8(m, r + i * ldy + j)), rz);
                v = act16(&a1, _mm512_add_ps(v, _mm512_mul_ps(_mm512_cvtepi32_ps(ri), rs)));
                store16_u8(y + i * ldy + j, m, _mm512_cvtusepi32_epi8(lean_q16(v, s, nz, iz)));
            }
            continue;
        }
        for (int64_t i = 0; i < rows; i++) {
            __m512 v = chunk_value16(pre, &k, c + i * ldc + j, m);
            v = act16(pre->act, v); /* pre's own (none in the driver's use): scaled16's value */
            if (pre->requant) v = _mm512_mul_ps(_mm512_sub_ps(qround16(v, ps, pz, plo, phi), pz), ps);
            __m512i ri = _mm512_sub_epi32(_mm512_cvtepu8_epi32(_mm_maskz_loadu_epi8(m, r + i * ldy + j)), rz);
            v = act16(act, _mm512_add_ps(v, _mm512_mul_ps(_mm512_cvtepi32_ps(ri), rs)));
            store16_u8(y + i * ldy + j, m, _mm512_cvtepi32_epi8(quantize16(v, s, z)));
        }
    }
}

/* inf__qstore_u8_row_avx512 over `rows` rows (sums ldc apart, bytes ldy
 * apart), column chunk by column chunk: each chunk's multipliers and biases
 * loaded once for all the rows.  The same operations per element. */
void inf__qstore_u8_rows_avx512(const inf__qout *o, const int32_t *c, int64_t ldc, int64_t rows, int64_t j0, int64_t n,
                                uint8_t *y, int64_t ldy) {
    const __m512 s = _mm512_set1_ps(o->rq_scale);
    const __m512 z = _mm512_set1_ps((float)o->rq_zp), nz = _mm512_set1_ps(-(float)o->rq_zp);
    const __m512i iz = _mm512_set1_epi32(o->rq_zp);
    bool lean = lean_u8_out(o) && lean_act(o->act);
    for (int64_t j = 0; j < n; j += 16) {
        __mmask16 m = lanes(n - j);
        chunk_scale k = chunk_scale_load(o, j0 + j, m);
        if (lean && lean_lanes(k.mult, m) && lean_lanes(k.bias, m)) {
            const bool bias = o->bias_f32 != NULL; /* locals: the byte stores could alias o */
            const inf__epilogue a = o->act ? *o->act : (inf__epilogue){0};
            for (int64_t r = 0; r < rows; r++) {
                __m512 v = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_maskz_loadu_epi32(m, c + r * ldc + j)), k.mult);
                v = act16(&a, bias ? _mm512_add_ps(v, k.bias) : v);
                store16_u8(y + r * ldy + j, m, _mm512_cvtusepi32_epi8(lean_q16(v, s, nz, iz)));
            }
            continue;
        }
        for (int64_t r = 0; r < rows; r++) {
            __m512 v = act16(o->act, chunk_value16(o, &k, c + r * ldc + j, m));
            store16_u8(y + r * ldy + j, m, _mm512_cvtepi32_epi8(quantize16(v, s, z)));
        }
    }
}

/* The fused MaxPool of int32 sums in place (ops/ref/qgemm_drive.c's
 * monotonic path, one pooled row): window px of the conv rows under it (c,
 * positions np apart, ow per row) into slot px, for px < pw. */
void inf__pool_max_i32_avx512(int32_t *c, int64_t np, int64_t n, int64_t ow, int64_t pkh, int64_t pkw, int64_t psw,
                              int64_t pw) {
    for (int64_t px = 0; px < pw; px++)
        for (int64_t j = 0; j < n; j += 16) {
            __mmask16 m = lanes(n - j);
            __m512i v = _mm512_maskz_loadu_epi32(m, c + px * psw * np + j);
            for (int64_t ky = 0; ky < pkh; ky++)
                for (int64_t kx = 0; kx < pkw; kx++)
                    if (ky || kx)
                        v = _mm512_max_epi32(v, _mm512_maskz_loadu_epi32(m, c + (ky * ow + px * psw + kx) * np + j));
            _mm512_mask_storeu_epi32(c + px * np + j, m, v);
        }
}
