/*
 * qconv_rgb.c -- the RGB stem's im2col rows (ops/qgemm.h inf__qconv_rgb),
 * plain C: the reference twin of inf__qconv_rgb_pairs_avx2
 * (x86/qconv_pool_ubs_avx2.c), and that form's vpshufb masks.
 *
 * A 3 x 3 convolution of a 3-channel image held in 4-byte channels-last
 * positions (the fourth byte padding) reads, per kernel row, 12 bytes of
 * which 9 count: packed for the AVX2 kernels that read A in place, its K is
 * 36 (9 quads).  Copying a position's 27 values into a 28-byte row (in the
 * packer's order, with one 0) lets the pair-safe kernel multiply 7 quads
 * instead (the driver's pooled stem, ops/ref/qgemm_drive.c).
 */
#include "ops/qgemm.h"

enum { PAD = 27 }; /* order[k] of the row's 0 */

void inf__qconv_rgb_pairs_ref(const inf__qconv_rgb *r, const uint8_t *const *first, int64_t npairs, int64_t rowb,
                              uint8_t *dst) {
    for (int64_t i = 0; i < 2 * npairs; i++) {
        const uint8_t *x = first[i / 2] + 4 * (i % 2);
        uint8_t *d = dst + i * INF_QCONV_RGB_ROW;
        for (int k = 0; k < INF_QCONV_RGB_ROW; k++) {
            int v = r->order[k]; /* ky * 9 + kx * 3 + channel */
            d[k] = v == PAD ? 0 : x[v / 9 * rowb + v % 9 / 3 * 4 + v % 3];
        }
    }
}

/* The AVX2 form broadcasts a kernel row's 16 bytes (positions x .. x + 3) to both 128-bit lanes, lane 1 being
 * the pair's second position (4 bytes on); mask 2 r + h picks, for the row's bytes 16 h .., the values kernel
 * row r holds (-128 elsewhere: vpshufb writes 0 there, and the three rows' picks are or-ed). */
void inf__qconv_rgb_masks(inf__qconv_rgb *r) {
    for (int row = 0; row < 3; row++)
        for (int h = 0; h < 2; h++)
            for (int lane = 0; lane < 2; lane++)
                for (int i = 0; i < 16; i++) {
                    int k = 16 * h + i, v = k < INF_QCONV_RGB_ROW ? r->order[k] : PAD;
                    r->masks[2 * row + h][16 * lane + i] =
                        v != PAD && v / 9 == row ? (int8_t)(4 * lane + v % 9 / 3 * 4 + v % 3) : (int8_t)-128;
                }
}
