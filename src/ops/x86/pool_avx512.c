/*
 * pool_avx512.c -- the 2-D float32 pooling of pool_avx2.c with AVX-512 for
 * its common case, the 2x2, stride-2, unpadded window (MaxPool2d(2),
 * AvgPool2d(2)): 16 outputs per zmm from two 32-float reads of each input
 * row, a row's last outputs masked (no scalar tail).  Other windows run
 * the AVX2 kernel (inf__ops_pool2d_f32_avx2).
 *
 * Called from MaxPool / AveragePool (ops/ref/pool.c) instead of the AVX2
 * kernel when inf__cpu_has_avx512() (path avx512; INFERA_CPU=avx2 keeps it).
 * Built with -mavx512f -mavx512bw -mavx512vl (CMake: *_avx512.c).
 *
 * Bits: the AVX2 kernel's operations lane by lane -- per output the two
 * vertical pairs reduced first (max: the order-independent maximum with
 * NaNs tracked apart, +0 over an equal -0; average: two adds), then the
 * even and odd columns, the average divided by 4 -- so max is bit-exact
 * with the reference and the average gives the AVX2 kernel's bits
 * (tests/kernels/test_pool.c checks both).
 */
#if defined(__x86_64__) && defined(__AVX512F__)

#include <immintrin.h>
#include <math.h>

#include "ops/ops.h"

static inline __mmask16 lanes16(int64_t n) {
    return n >= 16 ? (__mmask16)0xFFFF : n <= 0 ? (__mmask16)0 : (__mmask16)((1u << n) - 1u);
}

/* pool_avx2.c's vmax: max(v, acc), the AND of two equal values (+0 over
 * -0); NaN lanes collected in *nan. */
static inline __m512 vmax(__m512 v, __m512 acc, __mmask16 *nan) {
    *nan |= _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
    __m512 m = _mm512_max_ps(v, acc);
    __m512i a = _mm512_and_si512(_mm512_castps_si512(v), _mm512_castps_si512(acc));
    return _mm512_mask_blend_ps(_mm512_cmp_ps_mask(v, acc, _CMP_EQ_OQ), m, _mm512_castsi512_ps(a));
}

/* Outputs ox .. ox + 15 (the first cnt) of the row pair r0, r1. */
static inline __m512 pool2x2_vec(const float *r0, const float *r1, int64_t ox, int64_t cnt, bool max) {
    const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    const __m512i odd = _mm512_setr_epi32(1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31);
    __mmask16 k0 = lanes16(2 * cnt), k1 = lanes16(2 * cnt - 16);
    __m512 a0 = _mm512_maskz_loadu_ps(k0, r0 + 2 * ox), a1 = _mm512_maskz_loadu_ps(k1, r0 + 2 * ox + 16);
    __m512 b0 = _mm512_maskz_loadu_ps(k0, r1 + 2 * ox), b1 = _mm512_maskz_loadu_ps(k1, r1 + 2 * ox + 16);
    __m512 ae = _mm512_permutex2var_ps(a0, even, a1), ao = _mm512_permutex2var_ps(a0, odd, a1);
    __m512 be = _mm512_permutex2var_ps(b0, even, b1), bo = _mm512_permutex2var_ps(b0, odd, b1);
    if (!max) return _mm512_div_ps(_mm512_add_ps(_mm512_add_ps(ae, be), _mm512_add_ps(ao, bo)), _mm512_set1_ps(4.0f));
    __mmask16 nan = _mm512_cmp_ps_mask(ae, ae, _CMP_UNORD_Q) | _mm512_cmp_ps_mask(ao, ao, _CMP_UNORD_Q);
    __m512 ve = vmax(be, ae, &nan), vo = vmax(bo, ao, &nan);
    __m512 r = vmax(vo, ve, &nan);
    return _mm512_mask_blend_ps(nan, r, _mm512_set1_ps(NAN));
}

/* 2x2 windows, stride 2, no padding, 2 * oh <= ih and 2 * ow <= iw. */
static bool is_2x2(const inf__pool2d *g) {
    return g->kh == 2 && g->kw == 2 && g->sh == 2 && g->sw == 2 && g->pt == 0 && g->pl == 0 && 2 * g->oh <= g->ih &&
           2 * g->ow <= g->iw;
}

void inf__ops_pool2d_f32_avx512(const inf__pool2d *g, const float *x, float *y, int64_t n_planes) {
    if (!is_2x2(g)) {
        inf__ops_pool2d_f32_avx2(g, x, y, n_planes);
        return;
    }
    for (int64_t pl = 0; pl < n_planes; pl++, x += g->ih * g->iw)
        for (int64_t oy = 0; oy < g->oh; oy++, y += g->ow) {
            const float *r0 = x + 2 * oy * g->iw, *r1 = r0 + g->iw;
            for (int64_t ox = 0; ox < g->ow; ox += 16) {
                int64_t cnt = g->ow - ox < 16 ? g->ow - ox : 16;
                _mm512_mask_storeu_ps(y + ox, lanes16(cnt), pool2x2_vec(r0, r1, ox, cnt, g->max));
            }
        }
}

#endif /* x86-64 with AVX-512 */
