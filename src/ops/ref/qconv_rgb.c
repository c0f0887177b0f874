/*
 * qconv_rgb.c -- the RGB stem's im2col rows, plain C: the reference twin of
 * inf__qconv_rgb_pairs_avx2 (x86/qconv_pool_ubs_avx2.c; ops/qgemm.h).
 *
 * A 3 x 3 convolution of a 3-channel image held in 4-byte channels-last
 * positions (the fourth byte padding) reads, per kernel row, 12 bytes of
 * which 9 count: packed for the AVX2 kernels that read A in place, its K is
 * 36 (9 quads).  Copying a position's 27 values into a 28-byte row (W's
 * dense K order: ky, kx, channel; then a 0) lets the pair-safe kernel
 * multiply 7 quads instead (the driver's pooled stem, ops/ref/qgemm_drive.c).
 */
#include "ops/qgemm.h"

void inf__qconv_rgb_pairs_ref(const uint8_t *const *first, int64_t npairs, int64_t rowb, uint8_t *dst) {
    for (int64_t i = 0; i < 2 * npairs; i++) {
        const uint8_t *x = first[i / 2] + 4 * (i % 2);
        uint8_t *d = dst + i * INF_QCONV_RGB_ROW;
        for (int ky = 0; ky < 3; ky++)
            for (int kx = 0; kx < 3; kx++)
                for (int c = 0; c < 3; c++)
                    d[(ky * 3 + kx) * 3 + c] = x[ky * rowb + kx * 4 + c];
        d[27] = 0;
    }
}
