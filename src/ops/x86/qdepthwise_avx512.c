/*
 * qdepthwise_avx512.c -- the AVX-512 VNNI kernel of the depthwise 8-bit
 * convolution (ops/ref/qdepthwise.c has the design and the reference twin;
 * x86/qdepthwise_avx2.c the AVX2 form).
 *
 * DESIGN: 16 channels are the 16 int32 lanes of a zmm.  Per pair of taps
 * (t, t + 1) the 16 channel bytes of each tap are interleaved (punpcklbw /
 * punpckhbw) and zero-extended to 32 int16 values, so lane ch holds the
 * pair (x[t][ch], x[t + 1][ch]); VNNI's vpdpwssd multiplies it by the packed
 * weight pair (w'[t][ch], w'[t + 1][ch]) and adds both products to the
 * int32 sum in one instruction (AVX2: vpmaddwd + vpaddd).  Exact: the
 * operands are at most 255 and |w - w_zp| <= 255 in magnitude, so no pair
 * sum nears int32's limit.  vpdpbusd (u8 x s8 quads) is not used: w - w_zp
 * of an 8-bit W with a zero point need not fit in int8, and forming quads
 * of four taps per lane costs more shuffles than it saves multiplies.  Four
 * positions at a time share each weight load and give four independent
 * chains of vpdpwssd.  Same sums as inf__qdw_raw_ref (tests/kernels/
 * test_qgemm.c).  Compiled with -mavx512vnni; called only when
 * inf__qgemm_best_isa() is INF_QGEMM_VNNI512.
 */
#include <immintrin.h>

#include "ops/qgemm.h"

enum { MP = 4 }; /* positions per step */

/* The taps t0, t1 of 16 channels at x, interleaved and widened: lane ch = (x[t0][ch], x[t1][ch]). */
static inline __m512i pair16(const uint8_t *x, int64_t t0, int64_t t1) {
    __m128i a = _mm_loadu_si128((const __m128i *)(x + t0)), b = _mm_loadu_si128((const __m128i *)(x + t1));
    __m256i ab = _mm256_inserti128_si256(_mm256_castsi128_si256(_mm_unpacklo_epi8(a, b)), _mm_unpackhi_epi8(a, b), 1);
    return _mm512_cvtepu8_epi16(ab);
}

static inline __attribute__((always_inline)) void block(const inf__qdw_w *w, const int mp, const uint8_t *const *rows,
                                                       const int64_t *tapoff, const int32_t *init, int64_t ch,
                                                       int32_t *c, int64_t ldc) {
    int64_t tp = (w->taps + 1) / 2;
    __m512i acc[MP];
    for (int r = 0; r < MP; r++) acc[r] = _mm512_loadu_si512(init + ch);
    for (int64_t p = 0; p < tp; p++) {
        int64_t t0 = tapoff[2 * p], t1 = 2 * p + 1 < w->taps ? tapoff[2 * p + 1] : t0;
        __m512i wp = _mm512_loadu_si512(w->w + (p * w->cp + ch) * 2);
        for (int r = 0; r < mp; r++) acc[r] = _mm512_dpwssd_epi32(acc[r], pair16(rows[r] + ch, t0, t1), wp);
    }
    for (int r = 0; r < mp; r++) _mm512_storeu_si512(c + r * ldc + ch, acc[r]);
}

void inf__qdw_raw_vnni512(const inf__qdw_w *w, int64_t m, const uint8_t *const *rows, const int64_t *tapoff,
                          const int32_t *init, int32_t *c, int64_t ldc) {
    for (int64_t i = 0; i < m; i += MP) {
        int mp = (int)(m - i < MP ? m - i : MP);
        for (int64_t ch = 0; ch < w->cp; ch += 16) switch (mp) {
            case 4: block(w, 4, rows + i, tapoff, init, ch, c + i * ldc, ldc); break;
            case 3: block(w, 3, rows + i, tapoff, init, ch, c + i * ldc, ldc); break;
            case 2: block(w, 2, rows + i, tapoff, init, ch, c + i * ldc, ldc); break;
            default: block(w, 1, rows + i, tapoff, init, ch, c + i * ldc, ldc); break;
            }
    }
}
