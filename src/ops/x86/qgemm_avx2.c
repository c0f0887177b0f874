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
                                                      const int mr, const int two, int64_t p, int32_t *c,
                                                      int64_t ldc) {
    const int16_t *b0 = (const int16_t *)b->data + p * b->kp * PANEL, *b1 = b0 + b->kp * PANEL;
    __m256i acc[MR][2];
    for (int r = 0; r < MR; r++) acc[r][0] = acc[r][1] = _mm256_setzero_si256();
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

static void rows(const inf__qgemm_b *b, const uint8_t *a, int64_t lda, int mr, int32_t *c, int64_t ldc) {
    int64_t panels = b->np / PANEL, p = 0;
    for (; p + 2 <= panels; p += 2) switch (mr) {
        case 4: tile(b, a, lda, 4, 1, p, c, ldc); break;
        case 3: tile(b, a, lda, 3, 1, p, c, ldc); break;
        case 2: tile(b, a, lda, 2, 1, p, c, ldc); break;
        default: tile(b, a, lda, 1, 1, p, c, ldc); break;
        }
    if (p < panels) switch (mr) {
        case 4: tile(b, a, lda, 4, 0, p, c, ldc); break;
        case 3: tile(b, a, lda, 3, 0, p, c, ldc); break;
        case 2: tile(b, a, lda, 2, 0, p, c, ldc); break;
        default: tile(b, a, lda, 1, 0, p, c, ldc); break;
        }
}

void inf__qgemm_raw_avx2(const inf__qgemm_b *b, int64_t m, const uint8_t *a, int64_t lda, int32_t *c, int64_t ldc) {
    for (int64_t i = 0; i < m; i += MR) rows(b, a + i * lda, lda, (int)(m - i < MR ? m - i : MR), c + i * ldc, ldc);
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
