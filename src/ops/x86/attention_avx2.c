/*
 * attention_avx2.c -- the AVX2 part of the fused Attention kernel
 * (ops/ref/attention.c): K_bh scaled and transposed into [D, Sk] for the
 * scores product.  8x8 blocks are loaded as rows of K, multiplied by the
 * scale, turned in registers (transpose_avx2.h) and stored as rows of K^T;
 * edges (Sk or D not a multiple of 8) go element by element.  Each element
 * is one float multiply, scale * k, as in the portable loop, so the bits are
 * the same (tests/kernels/test_attention.c checks it).  Replaces a scalar
 * loop of strided stores (~0.8% of the bench encoder at batch 1).
 */
#if defined(__x86_64__) && defined(__AVX2__) && defined(__FMA__)

#include <immintrin.h>

#include "ops/ops.h"
#include "ops/x86/transpose_avx2.h"

void inf__attention_kt_avx2(const float *k, int64_t ldk, int64_t sk, int64_t d, float scale, float *kt) {
    const __m256 s = _mm256_set1_ps(scale);
    int64_t t0 = 0;
    for (; t0 + 8 <= sk; t0 += 8) {
        int64_t p0 = 0;
        for (; p0 + 8 <= d; p0 += 8) {
            __m256 r[8];
            for (int i = 0; i < 8; i++)
                r[i] = _mm256_mul_ps(s, _mm256_loadu_ps(k + (t0 + i) * ldk + p0));
            inf__avx2_transpose8(r);
            for (int i = 0; i < 8; i++)
                _mm256_storeu_ps(kt + (p0 + i) * sk + t0, r[i]);
        }
        for (; p0 < d; p0++)
            for (int64_t t = t0; t < t0 + 8; t++)
                kt[p0 * sk + t] = scale * k[t * ldk + p0];
    }
    for (; t0 < sk; t0++)
        for (int64_t p = 0; p < d; p++)
            kt[p * sk + t0] = scale * k[t0 * ldk + p];
}

#endif
