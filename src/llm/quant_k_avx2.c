/*
 * quant_k_avx2.c -- AVX2 twins of the K-quant dot products of quant_k.c
 * (built with -mavx2 -mfma -mf16c; quant_k_avx512.c builds the same code
 * with VNNI, where vpdpwssd fuses the scale multiply and the add).
 *
 * Per super-block: 32 weights are unpacked to unsigned bytes, maddubs with
 * the activation bytes gives 16-bit pair sums (at most 2 x 63 x 128, no
 * saturation), madd (or vpdpwssd) with the sub-block scales gives 32-bit
 * sums; the minimums (q4_K) and the -32 offset (q6_K) come from the
 * activation's 16-element sums.  The integer totals are exact, so the
 * float steps after them -- the reference's fmaf sequence -- give the
 * reference's result bit for bit.
 */
#include <immintrin.h>
#include <math.h>
#include <string.h>

#include "llm/quant.h"

#ifndef KN
#define KN(name) inf__llm_##name##_avx2
#endif

static inline int32_t hsum_i32(__m256i v) {
    __m128i q = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    q = _mm_add_epi32(q, _mm_shuffle_epi32(q, _MM_SHUFFLE(1, 0, 3, 2)));
    q = _mm_add_epi32(q, _mm_shuffle_epi32(q, _MM_SHUFFLE(2, 3, 0, 1)));
    return _mm_cvtsi128_si32(q);
}

/* acc += pairs(u x y) * scale (scale: 16-bit lanes) */
static inline __m256i scaled_dot(__m256i acc, __m256i u, __m256i y, __m256i scale) {
    __m256i p = _mm256_maddubs_epi16(u, y);
#ifdef INF_LLM_VNNI
    return _mm256_dpwssd_epi32(acc, p, scale);
#else
    return _mm256_add_epi32(acc, _mm256_madd_epi16(p, scale));
#endif
}

static inline float h2f(uint16_t h) { return _cvtsh_ss(h); }

/* scales[12] -> 8 scales and 8 mins, 6 bits each (ggml's utmp shuffle) */
static inline void q4_K_scales(const uint8_t *s12, uint8_t sc[8], uint8_t mn[8]) {
    uint32_t u[4];
    memcpy(u, s12, 12);
    const uint32_t k1 = 0x3f3f3f3f, k2 = 0x0f0f0f0f, k3 = 0x03030303;
    u[3] = ((u[2] >> 4) & k2) | (((u[1] >> 6) & k3) << 4);
    uint32_t uaux = u[1] & k1;
    u[1] = (u[2] & k2) | (((u[0] >> 6) & k3) << 4);
    u[2] = uaux;
    u[0] &= k1;
    memcpy(sc, u, 8);
    memcpy(mn, u + 2, 8);
}

/* Weight row against nt <= 4 activation rows (x, x + xs, ...): each super-block
 * unpacked once for all of them; per row the same integers and the same fmaf
 * sequence as the reference, so out[t] is bit for bit dot(w, x_t). */
static inline void q4_K_rows(int64_t k, const void *w, const void *x, size_t xs, int nt, float *out) {
    const inf__blk_q4_K *a = w;
    const __m256i m4 = _mm256_set1_epi8(0x0f);
    float acc[4] = {0}, accm[4] = {0};
    for (int64_t i = 0; i < k / QK_K; i++) {
        uint8_t sc[8], mn[8];
        q4_K_scales(a[i].scales, sc, mn);
        __m256i sumi[4];
        for (int t = 0; t < nt; t++) sumi[t] = _mm256_setzero_si256();
        for (int c = 0; c < 4; c++) {
            __m256i q = _mm256_loadu_si256((const __m256i *)(a[i].qs + 32 * c));
            __m256i lo = _mm256_and_si256(q, m4), hi = _mm256_and_si256(_mm256_srli_epi16(q, 4), m4);
            __m256i slo = _mm256_set1_epi16(sc[2 * c]), shi = _mm256_set1_epi16(sc[2 * c + 1]);
            for (int t = 0; t < nt; t++) {
                const inf__blk_q8_Ka *b = (const inf__blk_q8_Ka *)((const uint8_t *)x + (size_t)t * xs) + i;
                sumi[t] = scaled_dot(sumi[t], lo, _mm256_loadu_si256((const __m256i *)(b->qs + 64 * c)), slo);
                sumi[t] = scaled_dot(sumi[t], hi, _mm256_loadu_si256((const __m256i *)(b->qs + 64 * c + 32)), shi);
            }
        }
        /* minimums: m_j * (bsums[2j] + bsums[2j+1]) */
        int64_t mn8;
        memcpy(&mn8, mn, 8);
        __m256i mins = _mm256_cvtepu8_epi32(_mm_cvtsi64_si128(mn8));
        float dw = h2f(a[i].d), dmw = h2f(a[i].dmin);
        for (int t = 0; t < nt; t++) {
            const inf__blk_q8_Ka *b = (const inf__blk_q8_Ka *)((const uint8_t *)x + (size_t)t * xs) + i;
            __m256i bs = _mm256_madd_epi16(_mm256_loadu_si256((const __m256i *)b->bsums), _mm256_set1_epi16(1));
            int32_t isum = hsum_i32(sumi[t]), imin = hsum_i32(_mm256_mullo_epi32(bs, mins));
            acc[t] = fmaf((float)isum, dw * b->d, acc[t]);
            accm[t] = fmaf((float)imin, dmw * b->d, accm[t]);
        }
    }
    for (int t = 0; t < nt; t++) out[t] = acc[t] - accm[t];
}

float KN(dot_q4_K)(int64_t k, const void *w, const void *x) {
    float o;
    q4_K_rows(k, w, x, 0, 1, &o);
    return o;
}
void KN(dot4_q4_K)(int64_t k, const void *w, const void *x, size_t xs, float out[4]) { q4_K_rows(k, w, x, xs, 4, out); }

static inline void q6_K_rows(int64_t k, const void *w, const void *x, size_t xs, int nt, float *out) {
    const inf__blk_q6_K *a = w;
    const __m256i m4 = _mm256_set1_epi8(0x0f), m2 = _mm256_set1_epi8(0x30);
    float acc[4] = {0};
    for (int64_t i = 0; i < k / QK_K; i++) {
        __m256i sumi[4];
        for (int t = 0; t < nt; t++) sumi[t] = _mm256_setzero_si256();
        for (int h = 0; h < 2; h++) {
            const uint8_t *ql = a[i].ql + 64 * h, *qh = a[i].qh + 32 * h;
            const int8_t *sc = a[i].scales + 8 * h;
            __m256i q0 = _mm256_loadu_si256((const __m256i *)ql), q1 = _mm256_loadu_si256((const __m256i *)(ql + 32));
            __m256i hb = _mm256_loadu_si256((const __m256i *)qh);
            __m256i u[4] = {
                _mm256_or_si256(_mm256_and_si256(q0, m4), _mm256_and_si256(_mm256_slli_epi16(hb, 4), m2)),
                _mm256_or_si256(_mm256_and_si256(q1, m4), _mm256_and_si256(_mm256_slli_epi16(hb, 2), m2)),
                _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(q0, 4), m4), _mm256_and_si256(hb, m2)),
                _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(q1, 4), m4),
                                _mm256_and_si256(_mm256_srli_epi16(hb, 2), m2)),
            };
            for (int g = 0; g < 4; g++) {
                /* 32 elements = sub-blocks 2g (low 128 bits) and 2g + 1 (high) */
                __m256i s = _mm256_set_m128i(_mm_set1_epi16(sc[2 * g + 1]), _mm_set1_epi16(sc[2 * g]));
                for (int t = 0; t < nt; t++) {
                    const inf__blk_q8_Ka *b = (const inf__blk_q8_Ka *)((const uint8_t *)x + (size_t)t * xs) + i;
                    sumi[t] = scaled_dot(sumi[t], u[g], _mm256_loadu_si256((const __m256i *)(b->qs + 128 * h + 32 * g)), s);
                }
            }
        }
        /* the -32 offset: 32 * sum_j sc_j * bsums_j */
        __m256i sc16 = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)a[i].scales));
        float dw = h2f(a[i].d);
        for (int t = 0; t < nt; t++) {
            const inf__blk_q8_Ka *b = (const inf__blk_q8_Ka *)((const uint8_t *)x + (size_t)t * xs) + i;
            int32_t off = hsum_i32(_mm256_madd_epi16(sc16, _mm256_loadu_si256((const __m256i *)b->bsums)));
            int32_t isum = hsum_i32(sumi[t]) - 32 * off;
            acc[t] = fmaf((float)isum, dw * b->d, acc[t]);
        }
    }
    for (int t = 0; t < nt; t++) out[t] = acc[t];
}

float KN(dot_q6_K)(int64_t k, const void *w, const void *x) {
    float o;
    q6_K_rows(k, w, x, 0, 1, &o);
    return o;
}
void KN(dot4_q6_K)(int64_t k, const void *w, const void *x, size_t xs, float out[4]) { q6_K_rows(k, w, x, xs, 4, out); }
