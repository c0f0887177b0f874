/*
 * qgemm_avx2.c -- the AVX2 kernels of the 8-bit integer GEMM (ops/qgemm.h):
 * the raw u8 x s8 sum, activation quantization and min/max.
 *
 * DESIGN: B is packed (ops/ref/qgemm.c) as panels of 8 columns, K in pairs,
 * each value widened to int16; A's two bytes of a pair are broadcast to
 * every 32-bit lane as two zero-extended int16s (vpbroadcastw +
 * vpmovzxbw), and vpmaddwd multiplies and adds the pair into int32 lanes
 * exactly (255 * 128 * 2 is far from int32's limit).  vpmaddubsw, which
 * saturates the pair sum to int16, is deliberately not used (qgemm.h).  The
 * micro-kernel holds up to 4 rows x 16 columns of int32 sums in 8 registers.
 * Results equal inf__qgemm_raw_ref's bit for bit (int32 sums wrap the same).
 *
 * inf__quantize_u8_avx2 is QuantizeLinear's arithmetic (divide, round half
 * to even, add the zero point, clamp, NaN -> zero point) 8 lanes at a time:
 * the same IEEE operations as the scalar reference, so the same bytes.
 */
#include <immintrin.h>
#include <math.h>
#include <string.h>

#include "ops/qgemm.h"

enum { MR = 4, PANEL = 8 };

static inline __attribute__((always_inline)) void tile(const inf__qgemm_b *b, const uint8_t *a, int64_t lda,
                                                      const int32_t *init, const int mr, const int two, int64_t p,
                                                      int32_t *c, int64_t ldc) {
    const int16_t *b0 = (const int16_t *)b->data + p * b->kp * PANEL, *b1 = b0 + b->kp * PANEL;
    __m256i acc[MR][2];
    __m256i i0 = init ? _mm256_loadu_si256((const __m256i *)(init + p * PANEL)) : _mm256_setzero_si256();
    __m256i i1 = init && two ? _mm256_loadu_si256((const __m256i *)(init + (p + 1) * PANEL)) : _mm256_setzero_si256();
    for (int r = 0; r < MR; r++) acc[r][0] = i0, acc[r][1] = i1;
    for (int64_t g = 0; g < b->kp / 2; g++) {
        __m256i w0 = _mm256_loadu_si256((const __m256i *)(b0 + g * 2 * PANEL));
        __m256i w1 = two ? _mm256_loadu_si256((const __m256i *)(b1 + g * 2 * PANEL)) : w0;
        for (int r = 0; r < mr; r++) {
            uint16_t pair;
            memcpy(&pair, a + r * lda + 2 * g, 2);
            __m256i av = _mm256_cvtepu8_epi16(_mm_set1_epi16((short)pair));
            acc[r][0] = _mm256_add_epi32(acc[r][0], _mm256_madd_epi16(av, w0));
            if (two) acc[r][1] = _mm256_add_epi32(acc[r][1], _mm256_madd_epi16(av, w1));
        }
    }
    for (int r = 0; r < mr; r++) {
        _mm256_storeu_si256((__m256i *)(c + r * ldc + p * PANEL), acc[r][0]);
        if (two) _mm256_storeu_si256((__m256i *)(c + r * ldc + (p + 1) * PANEL), acc[r][1]);
    }
}

static void rows(const inf__qgemm_b *b, const uint8_t *a, int64_t lda, const int32_t *init, int mr, int32_t *c,
                 int64_t ldc) {
    int64_t panels = b->np / PANEL, p = 0;
    for (; p + 2 <= panels; p += 2) switch (mr) {
        case 4: tile(b, a, lda, init, 4, 1, p, c, ldc); break;
        case 3: tile(b, a, lda, init, 3, 1, p, c, ldc); break;
        case 2: tile(b, a, lda, init, 2, 1, p, c, ldc); break;
        default: tile(b, a, lda, init, 1, 1, p, c, ldc); break;
        }
    if (p < panels) switch (mr) {
        case 4: tile(b, a, lda, init, 4, 0, p, c, ldc); break;
        case 3: tile(b, a, lda, init, 3, 0, p, c, ldc); break;
        case 2: tile(b, a, lda, init, 2, 0, p, c, ldc); break;
        default: tile(b, a, lda, init, 1, 0, p, c, ldc); break;
        }
}

void inf__qgemm_raw_avx2(const inf__qgemm_b *b, int64_t m, const uint8_t *a, int64_t lda, const int32_t *init,
                         int32_t *c, int64_t ldc) {
    for (int64_t i = 0; i < m; i += MR) rows(b, a + i * lda, lda, init, (int)(m - i < MR ? m - i : MR), c + i * ldc, ldc);
}

void inf__quantize_u8_avx2(const float *x, int64_t n, float scale, int32_t zp, uint8_t *q) {
    const __m256 vs = _mm256_set1_ps(scale), vz = _mm256_set1_ps((float)zp);
    const __m256 lo = _mm256_setzero_ps(), hi = _mm256_set1_ps(255.0f);
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256 r = _mm256_round_ps(_mm256_div_ps(_mm256_loadu_ps(x + i), vs), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
        r = _mm256_add_ps(r, vz);
        __m256 nan = _mm256_cmp_ps(r, r, _CMP_UNORD_Q);
        r = _mm256_blendv_ps(_mm256_min_ps(_mm256_max_ps(r, lo), hi), vz, nan);
        __m256i v = _mm256_cvtps_epi32(r);
        __m128i w = _mm_packus_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
        _mm_storel_epi64((__m128i *)(q + i), _mm_packus_epi16(w, w));
    }
    inf__quantize_u8_ref(x + i, n - i, scale, zp, q + i);
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

/* The F32 value of 8 columns at a time into a float tile, then
 * QuantizeLinear's vector arithmetic over the tile (inf__quantize_u8_avx2):
 * the bytes the next conv's input quantization would make of it. */
void inf__qstore_u8_row_avx2(const inf__qout *o, const int32_t *c, int64_t j0, int64_t n, uint8_t *y) {
    enum { TILE = 64 };
    float v[TILE];
    for (int64_t t0 = 0; t0 < n; t0 += TILE) {
        int64_t cnt = n - t0 < TILE ? n - t0 : TILE, j = 0;
        for (; j + 8 <= cnt; j += 8) {
            int64_t at = j0 + t0 + j;
            __m256 mult = o->mult_per_col ? _mm256_loadu_ps(o->mult + at) : _mm256_set1_ps(o->mult[0]);
            __m256 bias = o->bias_f32 ? _mm256_loadu_ps(o->bias_f32 + at) : _mm256_setzero_ps();
            _mm256_storeu_ps(v + j, scaled8(o, _mm256_loadu_si256((const __m256i *)(c + t0 + j)), mult, bias));
        }
        if (j < cnt) {
            int32_t ct[8] = {0};
            float mt[8] = {0}, bt[8] = {0}, yt[8];
            for (int64_t k = 0; k < cnt - j; k++) {
                ct[k] = c[t0 + j + k];
                mt[k] = o->mult[o->mult_per_col ? j0 + t0 + j + k : 0];
                if (o->bias_f32) bt[k] = o->bias_f32[j0 + t0 + j + k];
            }
            _mm256_storeu_ps(yt, scaled8(o, _mm256_loadu_si256((const __m256i *)ct), _mm256_loadu_ps(mt), _mm256_loadu_ps(bt)));
            memcpy(v + j, yt, (size_t)(cnt - j) * sizeof *yt);
        }
        inf__quantize_u8_avx2(v, cnt, o->rq_scale, o->rq_zp, y + t0);
    }
}

void inf__qstore_f32_row_avx2(const inf__qout *o, const int32_t *c, int64_t j0, int64_t n, float *y) {
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
