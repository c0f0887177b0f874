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
 * Bits: max is the order-independent maximum, +0 over an equal -0, NaN
 * when any input is (vrangeps and a NaN blend: the vertical pairs, then the
 * even and odd columns), bit-exact with the reference; the average is the
 * AVX2 kernel's operations lane by lane (the vertical pairs added first,
 * then the even and odd columns, divided by 4), so its bits
 * (tests/kernels/test_pool.c checks both).
 */
#if defined(__x86_64__) && defined(__AVX512F__)

#include <immintrin.h>
#include <math.h>

#include "ops/ops.h"
#include "ops/x86/max_avx512.h"

/* 2x2 max of outputs ox .. ox + 15 (the first cnt) of the row pair r0, r1:
 * the vertical pairs first, then the even and odd columns of the result. */
__attribute__((target("avx512dq"))) static inline __m512 max2x2_vec(const float *r0, const float *r1, int64_t ox,
                                                                    int64_t cnt) {
    __mmask16 k0 = inf__lanes16(2 * cnt), k1 = inf__lanes16(2 * cnt - 16);
    __m512 v0 = inf__max2_avx512(_mm512_maskz_loadu_ps(k0, r0 + 2 * ox), _mm512_maskz_loadu_ps(k0, r1 + 2 * ox));
    __m512 v1 =
        inf__max2_avx512(_mm512_maskz_loadu_ps(k1, r0 + 2 * ox + 16), _mm512_maskz_loadu_ps(k1, r1 + 2 * ox + 16));
    return inf__max2_avx512(inf__even_lanes_avx512(v0, v1), inf__odd_lanes_avx512(v0, v1));
}

/* 2x2 average of outputs ox .. ox + 15 (the first cnt) of the row pair r0, r1. */
static inline __m512 avg2x2_vec(const float *r0, const float *r1, int64_t ox, int64_t cnt) {
    __mmask16 k0 = inf__lanes16(2 * cnt), k1 = inf__lanes16(2 * cnt - 16);
    __m512 a0 = _mm512_maskz_loadu_ps(k0, r0 + 2 * ox), a1 = _mm512_maskz_loadu_ps(k1, r0 + 2 * ox + 16);
    __m512 b0 = _mm512_maskz_loadu_ps(k0, r1 + 2 * ox), b1 = _mm512_maskz_loadu_ps(k1, r1 + 2 * ox + 16);
    __m512 ae = inf__even_lanes_avx512(a0, a1), ao = inf__odd_lanes_avx512(a0, a1);
    __m512 be = inf__even_lanes_avx512(b0, b1), bo = inf__odd_lanes_avx512(b0, b1);
    return _mm512_div_ps(_mm512_add_ps(_mm512_add_ps(ae, be), _mm512_add_ps(ao, bo)), _mm512_set1_ps(4.0f));
}

/* 2x2 windows, stride 2, no padding, 2 * oh <= ih and 2 * ow <= iw. */
static bool is_2x2(const inf__pool2d *g) {
    return g->kh == 2 && g->kw == 2 && g->sh == 2 && g->sw == 2 && g->pt == 0 && g->pl == 0 && 2 * g->oh <= g->ih &&
           2 * g->ow <= g->iw;
}

__attribute__((target("avx512dq"))) void inf__ops_pool2d_f32_avx512(const inf__pool2d *g, const float *x, float *y,
                                                                     int64_t n_planes) {
    if (!is_2x2(g)) {
        inf__ops_pool2d_f32_avx2(g, x, y, n_planes);
        return;
    }
    for (int64_t pl = 0; pl < n_planes; pl++, x += inf__pool2d_xplane(g), y += inf__pool2d_yplane(g))
        for (int64_t oy = 0; oy < g->oh; oy++) {
            const float *r0 = x + 2 * oy * g->iw, *r1 = r0 + g->iw;
            for (int64_t ox = 0; ox < g->ow; ox += 16) {
                int64_t cnt = g->ow - ox < 16 ? g->ow - ox : 16;
                __m512 v = g->max ? max2x2_vec(r0, r1, ox, cnt) : avg2x2_vec(r0, r1, ox, cnt);
                _mm512_mask_storeu_ps(y + oy * g->ow + ox, inf__lanes16(cnt), v);
            }
        }
}

#endif /* x86-64 with AVX-512 */
