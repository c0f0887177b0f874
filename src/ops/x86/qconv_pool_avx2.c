/*
 * qconv_pool_avx2.c -- a direct convolution with its 2 x 2 MaxPool fused
 * in registers on the AVX2 `vpmaddwd` kernel (the CNN stem's conv + pool
 * of a CPU without VNNI): per pooling window, the int32 sums of its four
 * positions are computed side by side and only their maximum is stored.
 *
 * DESIGN: the implicit GEMM of inf__qconv_raw_avx2 (x86/qgemm_avx2.c; B
 * packed by ops/ref/qgemm.c as panels of 8 columns, K in pairs widened to
 * int16; A the image zero-extended to uint16, read in place through per-
 * position row pointers and tap offsets): a tile is one window's 4
 * positions x two panels (8 sums + 2 B vectors + the broadcast: no spill),
 * so per K pair 2 loads, 4 broadcasts, 8 vpmaddwd and 8 vpaddd -- the 6 x 16
 * tile's cost per product -- and the window's max is 3 vpmaxsd per panel
 * instead of storing the four rows and pooling them in a second pass.  The
 * driver uses it when the store is non-decreasing in the sum (ops/ref/
 * qgemm_drive.c store_monotonic), so the max of the stored values is the
 * store of the max sum; the sums are the same int32 values (wrapping as the
 * GEMM's do), so the bytes are the same.
 */
#include <immintrin.h>
#include <string.h>

#include "ops/qgemm.h"

enum { PANEL = 8 };

static inline __m256i pair16(const uint16_t *row, int64_t g) {
    int32_t v;
    memcpy(&v, row + 2 * g, 4);
    return _mm256_set1_epi32(v);
}

static inline __m256i max4(__m256i a, __m256i b, __m256i c, __m256i d) {
    return _mm256_max_epi32(_mm256_max_epi32(a, b), _mm256_max_epi32(c, d));
}

/* One window (rows r[0..3]) x panels p (and p + 1 when two) into c's columns p * PANEL.. */
static inline __attribute__((always_inline)) void pool_tile(const inf__qgemm_b *b, const uint16_t *const *r,
                                                            const int64_t *tapoff, int64_t ntaps, int64_t npair,
                                                            const int32_t *init, int64_t p, const int two, int32_t *c) {
    static const int32_t zeros[2 * PANEL];
    const int32_t *start = init ? init + p * PANEL : zeros;
    const int16_t *w0p = (const int16_t *)b->data + p * b->kp * PANEL, *w1p = w0p + b->kp * PANEL;
    __m256i a00 = _mm256_loadu_si256((const __m256i *)start);
    __m256i a01 = two ? _mm256_loadu_si256((const __m256i *)(start + PANEL)) : a00;
    __m256i a10 = a00, a11 = a01, a20 = a00, a21 = a01, a30 = a00, a31 = a01;
    for (int64_t t = 0; t < ntaps; t++) {
        const uint16_t *x0 = r[0] + tapoff[t], *x1 = r[1] + tapoff[t], *x2 = r[2] + tapoff[t], *x3 = r[3] + tapoff[t];
        const int16_t *b0 = w0p + t * npair * 2 * PANEL, *b1 = w1p + t * npair * 2 * PANEL;
        for (int64_t g = 0; g < npair; g++) {
            __m256i w0 = _mm256_loadu_si256((const __m256i *)(b0 + g * 2 * PANEL)), av;
            __m256i w1 = two ? _mm256_loadu_si256((const __m256i *)(b1 + g * 2 * PANEL)) : w0;
            av = pair16(x0, g), a00 = _mm256_add_epi32(a00, _mm256_madd_epi16(av, w0));
            if (two) a01 = _mm256_add_epi32(a01, _mm256_madd_epi16(av, w1));
            av = pair16(x1, g), a10 = _mm256_add_epi32(a10, _mm256_madd_epi16(av, w0));
            if (two) a11 = _mm256_add_epi32(a11, _mm256_madd_epi16(av, w1));
            av = pair16(x2, g), a20 = _mm256_add_epi32(a20, _mm256_madd_epi16(av, w0));
            if (two) a21 = _mm256_add_epi32(a21, _mm256_madd_epi16(av, w1));
            av = pair16(x3, g), a30 = _mm256_add_epi32(a30, _mm256_madd_epi16(av, w0));
            if (two) a31 = _mm256_add_epi32(a31, _mm256_madd_epi16(av, w1));
        }
    }
    _mm256_storeu_si256((__m256i *)(c + p * PANEL), max4(a00, a10, a20, a30));
    if (two) _mm256_storeu_si256((__m256i *)(c + (p + 1) * PANEL), max4(a01, a11, a21, a31));
}

void inf__qconv_pool4_avx2(const inf__qgemm_b *b, int64_t nwin, const uint16_t *const *rows, const int64_t *tapoff,
                           int64_t ntaps, int64_t cq, const int32_t *init, int32_t *c, int64_t ldc) {
    int64_t panels = b->np / PANEL, npair = cq / 2;
    for (int64_t p = 0; p < panels; p += 2) /* panel pair outer: its B stays in L1 over the windows */
        for (int64_t w = 0; w < nwin; w++) {
            if (p + 2 <= panels)
                pool_tile(b, rows + 4 * w, tapoff, ntaps, npair, init, p, 1, c + w * ldc);
            else
                pool_tile(b, rows + 4 * w, tapoff, ntaps, npair, init, p, 0, c + w * ldc);
        }
}
