/*
 * quantize8_avx2.h -- QuantizeLinear's arithmetic to uint8 on 8 float lanes
 * (inf__quantize_u8_avx2's steps, in its order: round-to-nearest-even of
 * x / scale, + zero point, clamp to [0, 255], NaN to the zero point), the
 * result as eight int32 lanes.  Shared by the AVX2 input quantization
 * (x86/qgemm_avx2.c) and the stem's plane quantizer
 * (x86/qquant_planes_avx2.c).  Included only by files compiled for AVX2.
 */
#ifndef INFERA_OPS_X86_QUANTIZE8_AVX2_H
#define INFERA_OPS_X86_QUANTIZE8_AVX2_H

#include <immintrin.h>

static inline __m256i quantize8_i32(__m256 x, __m256 vs, __m256 vz) {
    const __m256 lo = _mm256_setzero_ps(), hi = _mm256_set1_ps(255.0f);
    __m256 r = _mm256_round_ps(_mm256_div_ps(x, vs), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    r = _mm256_add_ps(r, vz);
    __m256 nan = _mm256_cmp_ps(r, r, _CMP_UNORD_Q);
    r = _mm256_blendv_ps(_mm256_min_ps(_mm256_max_ps(r, lo), hi), vz, nan);
    return _mm256_cvtps_epi32(r); /* an integer in [0, 255]: exact */
}

#endif
