/*
 * qdepthwise_avx2.c -- the AVX2 kernel of the depthwise 8-bit convolution
 * (ops/ref/qdepthwise.c has the design and the reference twin).
 *
 * DESIGN: 16 channels at a time, two int32 sums of 8 channels each.  Per
 * pair of taps (t, t + 1) the 16 channel bytes of each tap are interleaved
 * (punpcklbw / punpckhbw), zero-extended to int16 pairs and multiplied by the
 * packed weight pairs with vpmaddwd, which adds the two taps' products into
 * the int32 lane exactly (255 * 255 * 2 < 2^31).  An odd last tap is paired
 * with itself against a zero weight.  Same sums as inf__qdw_raw_ref.
 */
#include <immintrin.h>

#include "ops/qgemm.h"

void inf__qdw_raw_avx2(const inf__qdw_w *w, int64_t m, const uint8_t *const *rows, const int64_t *tapoff,
                       const int32_t *init, int32_t *c, int64_t ldc) {
    int64_t tp = (w->taps + 1) / 2;
    for (int64_t i = 0; i < m; i++) {
        const uint8_t *x = rows[i];
        for (int64_t ch = 0; ch < w->cp; ch += 16) {
            __m256i lo = _mm256_loadu_si256((const __m256i *)(init + ch));
            __m256i hi = _mm256_loadu_si256((const __m256i *)(init + ch + 8));
            for (int64_t p = 0; p < tp; p++) {
                int64_t t0 = tapoff[2 * p], t1 = 2 * p + 1 < w->taps ? tapoff[2 * p + 1] : t0;
                __m128i a = _mm_loadu_si128((const __m128i *)(x + t0 + ch));
                __m128i b = _mm_loadu_si128((const __m128i *)(x + t1 + ch));
                const int16_t *wp = w->w + (p * w->cp + ch) * 2;
                lo = _mm256_add_epi32(lo, _mm256_madd_epi16(_mm256_cvtepu8_epi16(_mm_unpacklo_epi8(a, b)),
                                                            _mm256_loadu_si256((const __m256i *)wp)));
                hi = _mm256_add_epi32(hi, _mm256_madd_epi16(_mm256_cvtepu8_epi16(_mm_unpackhi_epi8(a, b)),
                                                            _mm256_loadu_si256((const __m256i *)(wp + 16))));
            }
            _mm256_storeu_si256((__m256i *)(c + i * ldc + ch), lo);
            _mm256_storeu_si256((__m256i *)(c + i * ldc + ch + 8), hi);
        }
    }
}
