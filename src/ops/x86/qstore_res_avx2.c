/*
 * qstore_res_avx2.c -- the lean uint8 block stores of the AVX2 path:
 * the residual store of a fused QConv + Add (INF_QOUT_F32_U8 with o->pre
 * and a uint8 channels-last residual): pre's value (scale, bias, its Q -> DQ),
 * + DQ(residual), the Add's activation, then QuantizeLinear -- a block of
 * rows in one pass; and the plain one (no pre: scale, bias, activation,
 * QuantizeLinear), the block form of x86/qgemm_avx2.c's lean row store.
 *
 * DESIGN: the 8-lane form of inf__qstore_u8_res_rows_avx512's lean path
 * (x86/qstore_avx512.c, which argues the arithmetic): the same IEEE
 * operations in the same order as ops/ref/qgemm_drive.c's row-by-row
 * sequence (qstore_f32_row, add_u8_act, inf__quantize_u8), so the same
 * bytes.  It runs only where no value can be NaN or infinite (checked per
 * call: multipliers, biases and the residual scale below 2^64 in magnitude,
 * the scales finite and > 0, the output zero point in [0, 255], no
 * activation of pre's own, the Add's activation none or Relu, whole
 * 8-column chunks); then QuantizeLinear's compares and blends reduce to a
 * clamp of the quotient before the rounding conversion, and the Q -> DQ of
 * pre to clamp(nearbyint(v / s), lo - zp, hi - zp) * s.  Otherwise it
 * returns false and the caller runs the row-by-row sequence.  Columns are
 * the outer loop (a chunk's multipliers and biases loaded once), rows inner.
 * The plain store checks the same per call (its activation's parameters
 * within 2^64 too) instead of the row store's per-row NaN compare: the same
 * operations in the same order as the row store's lean sequence (scale,
 * bias, activation, quotient clamped to [-zp, 512], rounded, + zp,
 * saturated), so the same bytes.
 */
#include <immintrin.h>
#include <math.h>
#include <stdbool.h>

#include "ops/qgemm.h"

static const float LEAN_LIM = 18446744073709551616.0f; /* 2^64 */

static inline bool lean_num(float v) { return v > -LEAN_LIM && v < LEAN_LIM; }
static inline bool lean_scale(float s) { return s > 0 && s < LEAN_LIM; }

/* every value of v[0..n) within (-2^64, 2^64) (NaN is not) */
static bool lean_all(const float *v, int64_t n) {
    for (int64_t j = 0; j < n; j++)
        if (!lean_num(v[j])) return false;
    return true;
}

/* QuantizeLinear's lean tail of 8 values v (no NaN): the quotient clamped to at most 512, rounded half to even by
 * vcvtps2dq itself (the default MXCSR mode, nearbyint's), + zp: int32 at most 767.  No lower clamp: a quotient
 * below -zp rounds to at most -zp, and one below -2^31 converts to INT_MIN, so + zp stays <= 0 and the saturating
 * packs (store8, store16) make it the 0 that clamping to -zp would. */
static inline __m256i quant8(__m256 v, __m256 s, __m256 lim, __m256i iz) {
    return _mm256_add_epi32(_mm256_cvtps_epi32(_mm256_min_ps(_mm256_div_ps(v, s), lim)), iz);
}

/* 8 such values saturated into y[0..8). */
static inline void store8(uint8_t *y, __m256i q) {
    __m128i w = _mm_packus_epi32(_mm256_castsi256_si128(q), _mm256_extracti128_si256(q, 1));
    _mm_storel_epi64((__m128i *)y, _mm_packus_epi16(w, w)); /* [0, 767] -> 255 saturated */
}

/* 16 (q0 then q1) into y[0..16): one pack chain and one store for both (vpackusdw interleaves the lanes, vpermq
 * 0xD8 restores the order). */
static inline void store16(uint8_t *y, __m256i q0, __m256i q1) {
    __m256i w = _mm256_permute4x64_epi64(_mm256_packus_epi32(q0, q1), 0xD8);
    _mm_storeu_si128((__m128i *)y, _mm_packus_epi16(_mm256_castsi256_si128(w), _mm256_extracti128_si256(w, 1)));
}

/* The block, Add activation Relu (relu) or none: one branch-free loop per case. */
/* A column chunk's multipliers and biases (bias NULL: zeros): columns j.. j + 7 in m0, b0 and, when wide, j + 8 ..
 * j + 15 in m1, b1; one multiplier for all when not percol. */
typedef struct col_chunk {
    __m256 m0, m1, b0, b1;
} col_chunk;

static inline col_chunk chunk_at(const float *mult, bool percol, const float *bias, int64_t j, bool wide) {
    col_chunk k = {.b0 = _mm256_setzero_ps(), .b1 = _mm256_setzero_ps()};
    k.m0 = percol ? _mm256_loadu_ps(mult + j) : _mm256_set1_ps(mult[0]);
    k.m1 = percol && wide ? _mm256_loadu_ps(mult + j + 8) : k.m0;
    if (bias)
        k.b0 = _mm256_loadu_ps(bias + j);
    if (bias && wide)
        k.b1 = _mm256_loadu_ps(bias + j + 8);
    return k;
}

/* The residual store's constants (pre's requant, the residual's and the output's quantization). */
typedef struct res_k {
    __m256 ps, plo_z, phi_z, rs, s, lim, zero;
    __m256i rz, iz;
} res_k;

/* 8 values of a row: pre's value (multipliers m, bias b), its Q -> DQ when requant, + DQ(8 residual bytes at r),
 * the Add's Relu when relu, then quant8. */
static inline __m256i res8(const res_k *k, const int32_t *c, __m256 m, __m256 b, const uint8_t *r, const bool bias,
                           const bool requant, const bool relu) {
    __m256 v = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_loadu_si256((const __m256i *)c)), m);
    if (bias)
        v = _mm256_add_ps(v, b);
    if (requant) { /* Q -> DQ: clamp(nearbyint(v / s), lo - zp, hi - zp) * s */
        __m256 d = _mm256_min_ps(_mm256_max_ps(_mm256_div_ps(v, k->ps), k->plo_z), k->phi_z);
        v = _mm256_mul_ps(_mm256_round_ps(d, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC), k->ps);
    }
    __m128i rb = _mm_loadl_epi64((const __m128i *)r);
    __m256i ri = _mm256_sub_epi32(_mm256_cvtepu8_epi32(rb), k->rz);
    v = _mm256_add_ps(v, _mm256_mul_ps(_mm256_cvtepi32_ps(ri), k->rs));
    if (relu)
        v = _mm256_max_ps(v, k->zero); /* NaN and -0 -> +0, as v > 0 ? v : 0 */
    return quant8(v, k->s, k->lim, k->iz);
}

/* The block, Add activation Relu (relu) or none, pre's Q -> DQ (requant) and bias or not: one branch-free loop
 * per case, 16 columns at a time, then 8. */
static inline __attribute__((always_inline)) void res_rows(const inf__qout *o, const int32_t *c, int64_t ldc,
                                                           int64_t rows, int64_t j0, int64_t n, const uint8_t *r,
                                                           uint8_t *y, int64_t ldy, const bool relu, const bool requant,
                                                           const bool bias) {
    const inf__qout *pre = o->pre;
    const bool percol = pre->mult_per_col;
    const float *mult = pre->mult + (percol ? j0 : 0), *bv = bias ? pre->bias_f32 + j0 : NULL;
    const __m256 pz = _mm256_set1_ps((float)pre->rq_zp);
    const res_k k = {
        .ps = _mm256_set1_ps(pre->rq_scale),
        .plo_z = _mm256_sub_ps(_mm256_set1_ps(pre->rq_dtype == INF_DTYPE_U8 ? 0.0f : -128.0f), pz),
        .phi_z = _mm256_sub_ps(_mm256_set1_ps(pre->rq_dtype == INF_DTYPE_U8 ? 255.0f : 127.0f), pz),
        .rs = _mm256_set1_ps(o->res_scale),
        .s = _mm256_set1_ps(o->rq_scale),
        .lim = _mm256_set1_ps(512.0f),
        .zero = _mm256_setzero_ps(),
        .rz = _mm256_set1_epi32(o->res_zp),
        .iz = _mm256_set1_epi32(o->rq_zp),
    };
    int64_t j = 0;
    for (; j + 16 <= n; j += 16) {
        const col_chunk w = chunk_at(mult, percol, bv, j, true);
        for (int64_t i = 0; i < rows; i++) {
            const int32_t *ci = c + i * ldc + j;
            const uint8_t *ri = r + i * ldy + j;
            store16(y + i * ldy + j, res8(&k, ci, w.m0, w.b0, ri, bias, requant, relu),
                    res8(&k, ci + 8, w.m1, w.b1, ri + 8, bias, requant, relu));
        }
    }
    for (; j < n; j += 8) {
        const col_chunk w = chunk_at(mult, percol, bv, j, false);
        for (int64_t i = 0; i < rows; i++)
            store8(y + i * ldy + j, res8(&k, c + i * ldc + j, w.m0, w.b0, r + i * ldy + j, bias, requant, relu));
    }
}

bool inf__qstore_u8_res_rows_avx2(const inf__qout *o, const int32_t *c, int64_t ldc, int64_t rows, int64_t j0,
                                  int64_t n, const uint8_t *r, const inf__epilogue *act, uint8_t *y, int64_t ldy) {
    const inf__qout *pre = o->pre;
    if (n % 8 || pre->act || (act && act->kind != INF_EPILOGUE_RELU)) return false;
    if (!lean_scale(o->rq_scale) || o->rq_zp < 0 || o->rq_zp > 255 || !lean_num(o->res_scale)) return false;
    if (pre->requant && !lean_scale(pre->rq_scale)) return false;
    if (!lean_all(pre->mult + (pre->mult_per_col ? j0 : 0), pre->mult_per_col ? n : 1)) return false;
    if (pre->bias_f32 && !lean_all(pre->bias_f32 + j0, n)) return false;
    const bool rq = pre->requant, hb = pre->bias_f32 != NULL;
#define RES_ROWS(relu)                                                                                                 \
    (rq ? (hb ? res_rows(o, c, ldc, rows, j0, n, r, y, ldy, relu, true, true)                                          \
              : res_rows(o, c, ldc, rows, j0, n, r, y, ldy, relu, true, false))                                        \
        : (hb ? res_rows(o, c, ldc, rows, j0, n, r, y, ldy, relu, false, true)                                         \
              : res_rows(o, c, ldc, rows, j0, n, r, y, ldy, relu, false, false)))
    if (act)
        RES_ROWS(true);
    else
        RES_ROWS(false);
#undef RES_ROWS
    return true;
}

/* The plain store's constants. */
typedef struct plain_k {
    __m256 alpha, lo, hi, s, lim, zero;
    __m256i iz;
} plain_k;

/* 8 values of a row: scale (multipliers m), bias b when hb, activation kind ak (x86/qgemm_avx2.c lean_act8's
 * operations), then quant8. */
static inline __m256i plain8(const plain_k *k, const int32_t *c, __m256 m, __m256 b, const int ak, const bool hb) {
    __m256 v = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_loadu_si256((const __m256i *)c)), m);
    if (hb)
        v = _mm256_add_ps(v, b);
    switch (ak) {
    case INF_EPILOGUE_RELU:
        v = _mm256_max_ps(v, k->zero);
        break;
    case INF_EPILOGUE_LEAKY_RELU:
        v = _mm256_blendv_ps(v, _mm256_mul_ps(k->alpha, v), _mm256_cmp_ps(v, k->zero, _CMP_LT_OQ));
        break;
    case INF_EPILOGUE_CLIP:
        v = _mm256_min_ps(k->hi, _mm256_max_ps(k->lo, v));
        break;
    default:
        break;
    }
    return quant8(v, k->s, k->lim, k->iz);
}

/* The plain block, activation kind ak, per-column multipliers pc, bias hb (one branch-free loop per case), 16
 * columns at a time, then 8. */
static inline __attribute__((always_inline)) void plain_rows(const inf__qout *o, const int32_t *c, int64_t ldc,
                                                             int64_t rows, int64_t j0, int64_t n, uint8_t *y,
                                                             int64_t ldy, const int ak, const bool pc, const bool hb) {
    const float *mult = o->mult + (pc ? j0 : 0), *bias = hb ? o->bias_f32 + j0 : NULL;
    const plain_k k = {
        .alpha = _mm256_set1_ps(o->act ? o->act->alpha : 0),
        .lo = _mm256_set1_ps(o->act ? o->act->lo : 0),
        .hi = _mm256_set1_ps(o->act ? o->act->hi : 0),
        .s = _mm256_set1_ps(o->rq_scale),
        .lim = _mm256_set1_ps(512.0f),
        .zero = _mm256_setzero_ps(),
        .iz = _mm256_set1_epi32(o->rq_zp),
    };
    int64_t j = 0;
    for (; j + 16 <= n; j += 16) {
        const col_chunk w = chunk_at(mult, pc, bias, j, true);
        for (int64_t i = 0; i < rows; i++) {
            const int32_t *ci = c + i * ldc + j;
            store16(y + i * ldy + j, plain8(&k, ci, w.m0, w.b0, ak, hb), plain8(&k, ci + 8, w.m1, w.b1, ak, hb));
        }
    }
    for (; j < n; j += 8) {
        const col_chunk w = chunk_at(mult, pc, bias, j, false);
        for (int64_t i = 0; i < rows; i++)
            store8(y + i * ldy + j, plain8(&k, c + i * ldc + j, w.m0, w.b0, ak, hb));
    }
}

#define PLAIN_ROWS(k)                                                                                                  \
    (pc ? (hb ? plain_rows(o, c, ldc, rows, j0, n, y, ldy, k, true, true)                                              \
              : plain_rows(o, c, ldc, rows, j0, n, y, ldy, k, true, false))                                            \
        : (hb ? plain_rows(o, c, ldc, rows, j0, n, y, ldy, k, false, true)                                             \
              : plain_rows(o, c, ldc, rows, j0, n, y, ldy, k, false, false)))

bool inf__qstore_u8_rows_avx2(const inf__qout *o, const int32_t *c, int64_t ldc, int64_t rows, int64_t j0, int64_t n,
                              uint8_t *y, int64_t ldy) {
    if (n % 8 || o->pre || !lean_scale(o->rq_scale) || o->rq_zp < 0 || o->rq_zp > 255) return false;
    if (!lean_all(o->mult + (o->mult_per_col ? j0 : 0), o->mult_per_col ? n : 1)) return false;
    if (o->bias_f32 && !lean_all(o->bias_f32 + j0, n)) return false;
    const bool pc = o->mult_per_col, hb = o->bias_f32 != NULL;
    switch (o->act ? (int)o->act->kind : (int)INF_EPILOGUE_NONE) {
    case INF_EPILOGUE_NONE:
        PLAIN_ROWS(INF_EPILOGUE_NONE);
        return true;
    case INF_EPILOGUE_RELU:
        PLAIN_ROWS(INF_EPILOGUE_RELU);
        return true;
    case INF_EPILOGUE_LEAKY_RELU:
        if (!lean_num(o->act->alpha)) return false;
        PLAIN_ROWS(INF_EPILOGUE_LEAKY_RELU);
        return true;
    case INF_EPILOGUE_CLIP:
        if (!lean_num(o->act->lo) || !lean_num(o->act->hi)) return false;
        PLAIN_ROWS(INF_EPILOGUE_CLIP);
        return true;
    default:
        return false;
    }
}
#undef PLAIN_ROWS
