/*
 * qubs_steps_avx2.h -- the steps shared by the routed AVX2 kernels for
 * pair-safe weights (x86/qgemm_ubs2_avx2.c: the GEMM and implicit-GEMM
 * convolution; x86/qconv_pool_ubs_avx2.c: the stem with its 2x2 MaxPool):
 * a K quad of a row broadcast to the eight 32-bit lanes, and the two ways
 * of adding the products of two quads into int32 sums ("ubs2": the int16
 * vpmaddubsw results added before one widening; "ubs": each widened).
 * Included only by files compiled for AVX2.
 */
#ifndef INFERA_OPS_X86_QUBS_STEPS_AVX2_H
#define INFERA_OPS_X86_QUBS_STEPS_AVX2_H

#include <immintrin.h>
#include <stdint.h>
#include <string.h>

static inline __m256i bcast4(const uint8_t *p) {
    int32_t q;
    memcpy(&q, p, 4);
    return _mm256_set1_epi32(q);
}

static inline __m256i ld(const int8_t *w) { return _mm256_loadu_si256((const __m256i *)w); }

/* acc += the 8 products per lane of quads a0 and a1 with w0, w1 (32 bytes each):
 * ubs2 (the int16 sums added before widening, exact where the packer proved it). */
static inline __m256i step2(__m256i acc, __m256i a0, __m256i a1, __m256i w0, __m256i w1, __m256i ones) {
    __m256i s = _mm256_add_epi16(_mm256_maddubs_epi16(a0, w0), _mm256_maddubs_epi16(a1, w1));
    return _mm256_add_epi32(acc, _mm256_madd_epi16(s, ones));
}

/* The same by ubs: each quad's int16 sums widened on their own (exact for pair-safe weights). */
static inline __m256i step1(__m256i acc, __m256i a0, __m256i a1, __m256i w0, __m256i w1, __m256i ones) {
    acc = _mm256_add_epi32(acc, _mm256_madd_epi16(_mm256_maddubs_epi16(a0, w0), ones));
    return _mm256_add_epi32(acc, _mm256_madd_epi16(_mm256_maddubs_epi16(a1, w1), ones));
}

#endif
