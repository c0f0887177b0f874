/*
 * qquant_planes_avx2.c -- a stem's float input planes (c <= 4 channels)
 * quantized straight into 4-byte channels-last positions on AVX2: the image
 * the direct INT8 convolutions of a CPU without VNNI read, in one pass
 * (no uint8 planes, no transpose).
 *
 * DESIGN: the AVX2 twin of inf__quantize_planes4_u8_avx512
 * (x86/qstore_avx512.c).  Each channel is QuantizeLinear's arithmetic as
 * the full AVX2 sequence makes it (x86/qgemm_avx2.c quantize8; scalar twin
 * inf__quantize_u8_ref): the true quotient x / scale rounded half to even,
 * + zero point, NaN -> zero point, clamped to [0, 255]; the byte of channel
 * k lands in bits 8k of its position's 32-bit lane, channels c..3 hold the
 * zero point (what the padded channels of the image hold).  The last n % 8
 * positions take the scalar reference.  The same bytes as quantizing each
 * plane and interleaving (tests/kernels/test_qgemm.c).
 */
#include <immintrin.h>

#include "ops/qgemm.h"
#include "ops/x86/quantize8_avx2.h"

void inf__quantize_planes4_u8_avx2(const float *x, int64_t plane, int64_t c, int64_t n, float scale, int32_t zp,
                                   uint8_t *q) {
    const __m256 vs = _mm256_set1_ps(scale), vz = _mm256_set1_ps((float)zp);
    uint32_t padw = 0;
    for (int64_t k = c; k < 4; k++)
        padw |= ((uint32_t)zp & 0xFF) << (8 * k);
    const __m256i pad = _mm256_set1_epi32((int32_t)padw);
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256i w = pad;
        for (int64_t k = 0; k < c; k++)
            w = _mm256_or_si256(
                w, _mm256_slli_epi32(quantize8_i32(_mm256_loadu_ps(x + k * plane + i), vs, vz), (int)(8 * k)));
        _mm256_storeu_si256((__m256i *)(q + 4 * i), w);
    }
    for (; i < n; i++)
        for (int64_t k = 0; k < 4; k++) {
            if (k < c)
                inf__quantize_u8_ref(x + k * plane + i, 1, scale, zp, q + 4 * i + k);
            else
                q[4 * i + k] = (uint8_t)zp;
        }
}
