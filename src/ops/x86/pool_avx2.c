/*
 * pool_avx2.c -- 2-D float32 MaxPool and AveragePool with AVX2, the fast
 * twin of the reference window loop in ops/ref/pool.c (pool_planes).
 *
 * Covers: 2-D, float32, no dilation, no Indices output, input rows up to
 * INF_POOL2D_MAX_W wide (ops/ref/pool.c checks; everything else stays on
 * the reference).  Built with -mavx2 -mfma; called only when
 * inf__cpu_has_avx2_fma().
 *
 * DESIGN: separable.  For each output row, the valid input rows of its
 * window are reduced into one row (tmp, vertical pass: contiguous 8-float
 * loads), then each output column reduces kw neighbours of tmp (horizontal
 * pass): 8 outputs per ymm -- contiguous loads for stride 1, the even lanes
 * of two loads for stride 2, a gather for larger strides (MaxPool1d(4) of
 * audio nets), a row's last interior outputs as its last 8 again -- and one
 * at a time for the windows that overlap the left or right padding (and
 * rows of fewer than 8 interior outputs).
 *
 * The common 2x2, stride-2, unpadded window whose windows all lie inside
 * the input (pool2x2_planes) skips the tmp row: per 8 outputs, two 16-float
 * loads from each of the two input rows, a vertical reduction, then the
 * even and odd lanes reduced -- the same operations in the same order as
 * the general path, so the same bits; a row's last outputs are its last 8
 * again (scalar only in rows of fewer than 8).
 *
 * Max is bit-exact with the reference, NaNs and signed zeros included,
 * because the reference's maximum is order-independent (ref/pool.c): any
 * NaN gives the canonical NaN, and +0 beats an equal -0 (here: the AND of
 * two equal values).  An empty window (padding only) gives NaN for max and
 * 0 for the average, as the reference does.
 * Average sums in float (rows, then columns) where the reference sums in
 * double: within a few ulp (tests/kernels/test_pool.c).
 */
#if defined(__x86_64__) && defined(__AVX2__) && defined(__FMA__)

#include <immintrin.h>
#include <math.h>

#include "ops/ops.h"

static inline int64_t max64(int64_t a, int64_t b) { return a > b ? a : b; }
static inline int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }

/* Divisor of the average at one dim: valid taps, or taps inside the padded extent. */
static inline int64_t taps(int64_t start, int64_t k, int64_t in, int64_t pb, int64_t pe, bool include_pad) {
    if (include_pad) return max64(0, min64(in + pe, start + k) - max64(-pb, start));
    return max64(0, min64(in, start + k) - max64(0, start));
}

/* Order-independent maximum (see above); NaNs are tracked apart, in *nan. */
static inline __m256 vmax(__m256 v, __m256 acc, __m256 *nan) {
    *nan = _mm256_or_ps(*nan, _mm256_cmp_ps(v, v, _CMP_UNORD_Q));
    __m256 m = _mm256_max_ps(v, acc);
    return _mm256_blendv_ps(m, _mm256_and_ps(v, acc), _mm256_cmp_ps(v, acc, _CMP_EQ_OQ));
}
static inline __m256 vmax_done(__m256 acc, __m256 nan) { return _mm256_blendv_ps(acc, _mm256_set1_ps(NAN), nan); }

static inline float smax(float v, float acc, bool *nan) {
    if (v != v) {
        *nan = true;
        return acc;
    }
    if (v == acc) return signbit(acc) && !signbit(v) ? v : acc;
    return v > acc || acc != acc ? v : acc;
}

/* Even lanes of [lo, hi]: lo[0,2,4,6], hi[0,2,4,6]. */
static inline __m256 even_lanes(__m256 lo, __m256 hi) {
    __m256 s = _mm256_shuffle_ps(lo, hi, _MM_SHUFFLE(2, 0, 2, 0)); /* lo0 lo2 hi0 hi2 | lo4 lo6 hi4 hi6 */
    return _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(s), _MM_SHUFFLE(3, 1, 2, 0)));
}

/* 8 tmp values at stride s from t; gather_idx holds 0, s, .., 7s (used for
 * s > 2, which reads exactly those 8 values). */
static inline __m256 load_strided(const float *t, int64_t s, __m256i gather_idx) {
    if (s == 1) return _mm256_loadu_ps(t);
    if (s == 2) return even_lanes(_mm256_loadu_ps(t), _mm256_loadu_ps(t + 8));
    return _mm256_i32gather_ps(t, gather_idx, 4);
}

/* The odd lanes of [lo, hi]: lo[1,3,5,7], hi[1,3,5,7]. */
static inline __m256 odd_lanes(__m256 lo, __m256 hi) {
    __m256 s = _mm256_shuffle_ps(lo, hi, _MM_SHUFFLE(3, 1, 3, 1));
    return _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(s), _MM_SHUFFLE(3, 1, 2, 0)));
}

/* 2x2 windows, stride 2, no padding, 2 * oh <= ih and 2 * ow <= iw. */
static bool is_2x2(const inf__pool2d *g) {
    return g->kh == 2 && g->kw == 2 && g->sh == 2 && g->sw == 2 && g->pt == 0 && g->pl == 0 && 2 * g->oh <= g->ih &&
           2 * g->ow <= g->iw;
}

/* Outputs ox .. ox + 7 of the row pair r0, r1 (vertical, then horizontal:
 * the general path's order). */
static inline __m256 pool2x2_vec(const float *r0, const float *r1, int64_t ox, bool max) {
    __m256 a0 = _mm256_loadu_ps(r0 + 2 * ox), a1 = _mm256_loadu_ps(r0 + 2 * ox + 8);
    __m256 b0 = _mm256_loadu_ps(r1 + 2 * ox), b1 = _mm256_loadu_ps(r1 + 2 * ox + 8);
    if (!max) {
        __m256 v0 = _mm256_add_ps(a0, b0), v1 = _mm256_add_ps(a1, b1);
        return _mm256_div_ps(_mm256_add_ps(even_lanes(v0, v1), odd_lanes(v0, v1)), _mm256_set1_ps(4.0f));
    }
    __m256 n0 = _mm256_cmp_ps(a0, a0, _CMP_UNORD_Q), n1 = _mm256_cmp_ps(a1, a1, _CMP_UNORD_Q);
    __m256 v0 = vmax(b0, a0, &n0), v1 = vmax(b1, a1, &n1);
    __m256 nan = _mm256_or_ps(even_lanes(n0, n1), odd_lanes(n0, n1));
    return vmax_done(vmax(odd_lanes(v0, v1), even_lanes(v0, v1), &nan), nan);
}

/* One output of the row pair (rows of fewer than 8 outputs). */
static inline float pool2x2_one(const float *r0, const float *r1, int64_t ox, bool max) {
    int64_t c = 2 * ox;
    if (!max) return ((r0[c] + r1[c]) + (r0[c + 1] + r1[c + 1])) / 4.0f;
    bool nan = r0[c] != r0[c];
    float acc = smax(r1[c], r0[c], &nan), right = r0[c + 1];
    nan = nan || right != right;
    right = smax(r1[c + 1], right, &nan);
    acc = smax(right, acc, &nan);
    return nan ? NAN : acc;
}

static void pool2x2_planes(const inf__pool2d *g, const float *x, float *y, int64_t n_planes) {
    for (int64_t pl = 0; pl < n_planes; pl++, x += inf__pool2d_xplane(g), y += inf__pool2d_yplane(g))
        for (int64_t oy = 0; oy < g->oh; oy++) {
            const float *r0 = x + 2 * oy * g->iw, *r1 = r0 + g->iw;
            float *yr = y + oy * g->ow;
            int64_t ox = 0;
            for (; ox + 8 <= g->ow; ox += 8) /* reads columns up to 2 * ox + 15 < 2 * ow <= iw */
                _mm256_storeu_ps(yr + ox, pool2x2_vec(r0, r1, ox, g->max));
            if (ox < g->ow && g->ow >= 8) /* the last 8 again (overlapping: the same values) */
                _mm256_storeu_ps(yr + g->ow - 8, pool2x2_vec(r0, r1, g->ow - 8, g->max));
            else
                for (; ox < g->ow; ox++)
                    yr[ox] = pool2x2_one(r0, r1, ox, g->max);
        }
}

void inf__ops_pool2d_f32_avx2(const inf__pool2d *g, const float *x, float *y, int64_t n_planes) {
    if (is_2x2(g)) {
        pool2x2_planes(g, x, y, n_planes);
        return;
    }
    float tmp[INF_POOL2D_MAX_W + 16];
    const int64_t ih = g->ih, iw = g->iw, oh = g->oh, ow = g->ow, kh = g->kh, kw = g->kw;
    const int64_t sh = g->sh, sw = g->sw;
    /* A stride above the row width leaves fewer than 8 interior outputs: the clamp only keeps the int in range. */
    const __m256i gather_idx =
        _mm256_mullo_epi32(_mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7), _mm256_set1_epi32((int)min64(sw, INF_POOL2D_MAX_W)));
    /* output columns whose window lies inside [0, iw): [ox_lo, ox_hi) */
    int64_t ox_lo = (g->pl + sw - 1) / sw, ox_hi = iw - kw + g->pl < 0 ? 0 : (iw - kw + g->pl) / sw + 1;
    if (ox_hi > ow) ox_hi = ow;
    if (ox_lo > ox_hi) ox_lo = ox_hi;
    for (int64_t pl = 0; pl < n_planes; pl++, x += inf__pool2d_xplane(g), y += inf__pool2d_yplane(g)) {
        for (int64_t oy = 0; oy < oh; oy++) {
            float *yrow = y + oy * ow;
            int64_t y0 = oy * sh - g->pt, ylo = max64(0, y0), yhi = min64(ih, y0 + kh);
            if (ylo >= yhi) {
                for (int64_t ox = 0; ox < ow; ox++) yrow[ox] = g->max ? NAN : 0.0f;
                continue;
            }
            /* vertical pass */
            const float *r0 = x + ylo * iw;
            int64_t j = 0;
            for (; j + 8 <= iw; j += 8) {
                __m256 acc = _mm256_loadu_ps(r0 + j);
                if (g->max) {
                    __m256 nan = _mm256_cmp_ps(acc, acc, _CMP_UNORD_Q);
                    for (int64_t r = ylo + 1; r < yhi; r++) acc = vmax(_mm256_loadu_ps(x + r * iw + j), acc, &nan);
                    acc = vmax_done(acc, nan);
                } else {
                    for (int64_t r = ylo + 1; r < yhi; r++) acc = _mm256_add_ps(acc, _mm256_loadu_ps(x + r * iw + j));
                }
                _mm256_storeu_ps(tmp + j, acc);
            }
            for (; j < iw; j++) {
                float acc = r0[j];
                bool nan = acc != acc;
                for (int64_t r = ylo + 1; r < yhi; r++) {
                    float v = x[r * iw + j];
                    acc = g->max ? smax(v, acc, &nan) : acc + v;
                }
                tmp[j] = g->max && nan ? NAN : acc;
            }
            for (j = iw; j < iw + 16; j++) tmp[j] = 0.0f; /* read (not used) by the stride-2 loads */
            float rows_div = (float)taps(y0, kh, ih, g->pt, g->pb, g->count_include_pad);
            /* horizontal pass */
            int64_t ox = 0;
            for (; ox < ow; ox++) {
                if (ox >= ox_lo && ox < ox_hi) {
                    /* interior, 8 at a time; the last 8 interior outputs again for a
                     * remainder (same operations, same bits), not one at a time */
                    for (; ox < ox_hi && ox_hi - ox_lo >= 8; ox += 8) {
                        if (ox + 8 > ox_hi) ox = ox_hi - 8;
                        const float *t = tmp + ox * sw - g->pl;
                        __m256 acc = load_strided(t, sw, gather_idx);
                        if (g->max) {
                            __m256 nan = _mm256_cmp_ps(acc, acc, _CMP_UNORD_Q);
                            for (int64_t kx = 1; kx < kw; kx++) acc = vmax(load_strided(t + kx, sw, gather_idx), acc, &nan);
                            acc = vmax_done(acc, nan);
                        } else {
                            for (int64_t kx = 1; kx < kw; kx++) acc = _mm256_add_ps(acc, load_strided(t + kx, sw, gather_idx));
                        }
                        if (!g->max) {
                            __m256 div = _mm256_set1_ps(rows_div * (float)kw);
                            acc = _mm256_div_ps(acc, div);
                        }
                        _mm256_storeu_ps(yrow + ox, acc);
                    }
                    if (ox >= ow) break;
                }
                int64_t x0 = ox * sw - g->pl, xlo = max64(0, x0), xhi = min64(iw, x0 + kw);
                if (xlo >= xhi) {
                    yrow[ox] = g->max ? NAN : 0.0f;
                    continue;
                }
                float acc = tmp[xlo];
                bool nan = acc != acc;
                for (int64_t c = xlo + 1; c < xhi; c++) acc = g->max ? smax(tmp[c], acc, &nan) : acc + tmp[c];
                if (g->max && nan) acc = NAN;
                if (!g->max) {
                    float div = rows_div * (float)taps(x0, kw, iw, g->pl, g->pr, g->count_include_pad);
                    acc = div > 0.0f ? acc / div : 0.0f;
                }
                yrow[ox] = acc;
            }
        }
    }
}

/* GlobalAveragePool's sum (ops/ref/pool.c, sum_f32_as_f64: the order it
 * documents): four chains of 4 doubles, lane j of chain c adding
 * x[16 i + 4 c + j]; the tail's missing floats are +0 (a masked load). */
double inf__sum_f32_as_f64_avx2(const float *x, int64_t n) {
    __m256d a[4] = {_mm256_setzero_pd(), _mm256_setzero_pd(), _mm256_setzero_pd(), _mm256_setzero_pd()};
    int64_t i = 0;
    for (; i + 16 <= n; i += 16)
        for (int c = 0; c < 4; c++) a[c] = _mm256_add_pd(a[c], _mm256_cvtps_pd(_mm_loadu_ps(x + i + 4 * c)));
    for (int c = 0; i + 4 * c < n; c++) {
        int64_t left = n - i - 4 * c;
        __m128i mask = _mm_cmpgt_epi32(_mm_set1_epi32((int)(left < 4 ? left : 4)), _mm_setr_epi32(0, 1, 2, 3));
        a[c] = _mm256_add_pd(a[c], _mm256_cvtps_pd(_mm_maskload_ps(x + i + 4 * c, mask)));
    }
    __m256d v = _mm256_add_pd(_mm256_add_pd(a[0], a[1]), _mm256_add_pd(a[2], a[3]));
    double l[4];
    _mm256_storeu_pd(l, v);
    return (l[0] + l[1]) + (l[2] + l[3]);
}

#endif /* x86-64 with AVX2 and FMA */
