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

/* The block, Add activation Relu (relu) or none: one branch-free loop per case. */
static inline __attribute__((always_inline)) void res_rows(const inf__qout *o, const int32_t *c, int64_t ldc,
                                                           int64_t rows, int64_t j0, int64_t n, const uint8_t *r,
                                                           uint8_t *y, int64_t ldy, const bool relu) {
    const inf__qout *pre = o->pre;
    const bool requant = pre->requant, percol = pre->mult_per_col;
    const float *mult = pre->mult + (percol ? j0 : 0), *bias = pre->bias_f32 ? pre->bias_f32 + j0 : NULL;
    const __m256 ps = _mm256_set1_ps(pre->rq_scale), pz = _mm256_set1_ps((float)pre->rq_zp);
    const __m256 plo_z = _mm256_sub_ps(_mm256_set1_ps(pre->rq_dtype == INF_DTYPE_U8 ? 0.0f : -128.0f), pz);
    const __m256 phi_z = _mm256_sub_ps(_mm256_set1_ps(pre->rq_dtype == INF_DTYPE_U8 ? 255.0f : 127.0f), pz);
    const __m256 rs = _mm256_set1_ps(o->res_scale), s = _mm256_set1_ps(o->rq_scale);
    const __m256 nz = _mm256_set1_ps(-(float)o->rq_zp), lim = _mm256_set1_ps(512.0f), zero = _mm256_setzero_ps();
    const __m256i rz = _mm256_set1_epi32(o->res_zp), iz = _mm256_set1_epi32(o->rq_zp);
    for (int64_t j = 0; j < n; j += 8) {
        const __m256 m = percol ? _mm256_loadu_ps(mult + j) : _mm256_set1_ps(mult[0]);
        const __m256 b = bias ? _mm256_loadu_ps(bias + j) : zero;
        for (int64_t i = 0; i < rows; i++) {
            __m256 v = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_loadu_si256((const __m256i *)(c + i * ldc + j))), m);
            if (bias) v = _mm256_add_ps(v, b);
            if (requant) { /* Q -> DQ: clamp(nearbyint(v / s), lo - zp, hi - zp) * s */
                __m256 d = _mm256_min_ps(_mm256_max_ps(_mm256_div_ps(v, ps), plo_z), phi_z);
                v = _mm256_mul_ps(_mm256_round_ps(d, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC), ps);
            }
            __m128i rb = _mm_loadl_epi64((const __m128i *)(r + i * ldy + j));
            __m256i ri = _mm256_sub_epi32(_mm256_cvtepu8_epi32(rb), rz);
            v = _mm256_add_ps(v, _mm256_mul_ps(_mm256_cvtepi32_ps(ri), rs));
            if (relu) v = _mm256_max_ps(v, zero); /* NaN and -0 -> +0, as v > 0 ? v : 0 */
            __m256 d = _mm256_min_ps(_mm256_max_ps(_mm256_div_ps(v, s), nz), lim);
            __m256i q = _mm256_add_epi32(
                _mm256_cvtps_epi32(_mm256_round_ps(d, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)), iz);
            __m128i w = _mm_packus_epi32(_mm256_castsi256_si128(q), _mm256_extracti128_si256(q, 1));
            _mm_storel_epi64((__m128i *)(y + i * ldy + j), _mm_packus_epi16(w, w)); /* [0, 767] -> 255 saturated */
        }
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
    if (act)
        res_rows(o, c, ldc, rows, j0, n, r, y, ldy, true);
    else
        res_rows(o, c, ldc, rows, j0, n, r, y, ldy, false);
    return true;
}

/* The plain block, activation kind k, per-column multipliers pc, bias hb (one branch-free loop per case). */
static inline __attribute__((always_inline)) void plain_rows(const inf__qout *o, const int32_t *c, int64_t ldc,
                                                             int64_t rows, int64_t j0, int64_t n, uint8_t *y,
                                                             int64_t ldy, const int k, const bool pc, const bool hb) {
    const float *mult = o->mult + (pc ? j0 : 0), *bias = hb ? o->bias_f32 + j0 : NULL;
    const __m256 alpha = _mm256_set1_ps(o->act ? o->act->alpha : 0), lo = _mm256_set1_ps(o->act ? o->act->lo : 0);
    const __m256 hi = _mm256_set1_ps(o->act ? o->act->hi : 0), s = _mm256_set1_ps(o->rq_scale);
    const __m256 nz = _mm256_set1_ps(-(float)o->rq_zp), lim = _mm256_set1_ps(512.0f), zero = _mm256_setzero_ps();
    const __m256i iz = _mm256_set1_epi32(o->rq_zp);
    for (int64_t j = 0; j < n; j += 8) {
        const __m256 m = pc ? _mm256_loadu_ps(mult + j) : _mm256_set1_ps(mult[0]);
        const __m256 b = hb ? _mm256_loadu_ps(bias + j) : zero;
        for (int64_t i = 0; i < rows; i++) {
            __m256 v = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_loadu_si256((const __m256i *)(c + i * ldc + j))), m);
            if (hb) v = _mm256_add_ps(v, b);
            switch (k) { /* x86/qgemm_avx2.c lean_act8's operations */
            case INF_EPILOGUE_RELU:
                v = _mm256_max_ps(v, zero);
                break;
            case INF_EPILOGUE_LEAKY_RELU:
                v = _mm256_blendv_ps(v, _mm256_mul_ps(alpha, v), _mm256_cmp_ps(v, zero, _CMP_LT_OQ));
                break;
            case INF_EPILOGUE_CLIP:
                v = _mm256_min_ps(hi, _mm256_max_ps(lo, v));
                break;
            default:
                break;
            }
            __m256 d = _mm256_min_ps(_mm256_max_ps(_mm256_div_ps(v, s), nz), lim);
            __m256i q = _mm256_add_epi32(
                _mm256_cvtps_epi32(_mm256_round_ps(d, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)), iz);
            __m128i w = _mm_packus_epi32(_mm256_castsi256_si128(q), _mm256_extracti128_si256(q, 1));
            _mm_storel_epi64((__m128i *)(y + i * ldy + j), _mm_packus_epi16(w, w)); /* [0, 767] -> 255 saturated */
        }
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
