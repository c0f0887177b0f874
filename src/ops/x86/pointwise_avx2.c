/*
 * pointwise_avx2.c -- float32 1x1 convolutions (ONNX Conv with a 1x1
 * kernel, stride 1, no padding, one group: the pointwise half of a
 * depthwise-separable block) as one GEMM per image, with AVX2/FMA.
 *
 * Called from ops/ref/conv.c (conv_avx2) when inf__conv2d_pointwise_fits(g)
 * and the CPU has AVX2/FMA, before the panel / direct / rows variants.
 * Built with -mavx2 -mfma (CMake: *_avx2.c).
 *
 * DESIGN: per image, Y[m, P] = W[m, c] * X[c, P] with P = oh * ow: X is
 * already the column matrix, so the product is inf__ops_sgemm_avx2
 * (ops/x86/gemm_avx2.c: B = X packed per call into the pool's workspace,
 * the 6x16 micro-kernel, tiles split across the pool's threads) on W as
 * given, then one pass over the image's Y (still in L2) adds the bias and
 * the residual and applies ReLU / Clip, 8 positions a vector.  On
 * bench/extra's mobile the GEMM runs the six pointwise shapes 1.1-1.4x
 * faster than the conv variants (which read X in place with strided
 * broadcasts, or pack it per channel block).
 * Bits: each Y element is the GEMM's sum (per 256-deep block of c, an FMA
 * chain from zero, blocks added in order), then + bias, + res, then the
 * activation as float operations: exactly the im2col + GEMM path's and the
 * other AVX2 variants', independent of the batch and the thread count
 * (the GEMM's rows do not depend on its tiling).
 * The pool's workspace is kept between runs, so a run at a shape seen
 * before allocates nothing.
 */
#if defined(__x86_64__) && defined(__AVX2__) && defined(__FMA__)

#include <immintrin.h>

#include "ops/ops.h"
#include "ops/x86/transpose_avx2.h"

bool inf__conv2d_pointwise_fits(const inf__conv2d *g) {
    return g->group == 1 && g->kh == 1 && g->kw == 1 && g->sh == 1 && g->sw == 1 && g->pt == 0 && g->pl == 0 &&
           g->oh == g->ih && g->ow == g->iw;
}

/* Positions per GEMM call: Y's chunk (m x chunk floats, about 128 KiB)
 * is still in L2 when the epilogue pass reads it. */
#define CHUNK_FLOATS (32 << 10)

typedef struct ep_job {
    const inf__conv2d *g;
    const float *bias, *res; /* res: the chunk's first element, or NULL */
    float *y;                /* the chunk's first element */
    int64_t npos, cnt;       /* row stride; positions in the chunk */
} ep_job;

/* v + bias (has_bias), + *res (res not NULL), then the activation (act). */
static inline __attribute__((always_inline)) __m256 finish(__m256 v, bool has_bias, __m256 b, const float *res,
                                                           __m256i lanes, bool full, int act, __m256 lo, __m256 hi) {
    if (has_bias) v = _mm256_add_ps(v, b);
    if (res) v = _mm256_add_ps(v, full ? _mm256_loadu_ps(res) : _mm256_maskload_ps(res, lanes));
    if (act == INF_EPILOGUE_RELU) v = _mm256_max_ps(v, _mm256_setzero_ps()); /* NaN -> 0, as Relu */
    else if (act == INF_EPILOGUE_CLIP) v = _mm256_min_ps(hi, _mm256_max_ps(lo, v)); /* NaN kept */
    return v;
}

/* One channel row of the chunk: full vectors, then a masked tail. */
static inline __attribute__((always_inline)) void finish_row(float *y, const float *res, int64_t cnt, bool has_bias,
                                                             __m256 b, int act, __m256 lo, __m256 hi) {
    __m256i all = _mm256_set1_epi32(-1);
    int64_t p = 0;
    for (; p + 8 <= cnt; p += 8)
        _mm256_storeu_ps(y + p, finish(_mm256_loadu_ps(y + p), has_bias, b, res ? res + p : NULL, all, true, act, lo, hi));
    if (p == cnt) return;
    __m256i lanes = inf__avx2_lanes(cnt - p);
    __m256 v = finish(_mm256_maskload_ps(y + p, lanes), has_bias, b, res ? res + p : NULL, lanes, false, act, lo, hi);
    _mm256_maskstore_ps(y + p, lanes, v);
}

/* Channels [begin, end) of the chunk: y = act(y + bias[m] + res), the
 * common Clip / ReLU with a bias and no residual inlined on their own. */
static void epilogue_rows(void *arg, int64_t begin, int64_t end) {
    const ep_job *J = arg;
    const inf__conv2d *g = J->g;
    __m256 lo = _mm256_set1_ps(g->lo), hi = _mm256_set1_ps(g->hi);
    for (int64_t m = begin; m < end; m++) {
        float *y = J->y + m * J->npos;
        const float *res = J->res ? J->res + m * J->npos : NULL;
        __m256 b = _mm256_set1_ps(J->bias ? J->bias[m] : 0.0f);
        if (J->bias && !res && g->act == INF_EPILOGUE_CLIP) finish_row(y, NULL, J->cnt, true, b, INF_EPILOGUE_CLIP, lo, hi);
        else if (J->bias && !res && g->act == INF_EPILOGUE_RELU)
            finish_row(y, NULL, J->cnt, true, b, INF_EPILOGUE_RELU, lo, hi);
        else finish_row(y, res, J->cnt, J->bias != NULL, b, g->act, lo, hi);
    }
}

void inf__conv2d_pointwise_f32_avx2(inf__pool *pool, const inf__conv2d *g, const float *x, const float *w,
                                    const float *bias, const float *res, float *y) {
    int64_t npos = g->oh * g->ow, chunk = (CHUNK_FLOATS / g->m + 15) / 16 * 16;
    bool ep = bias || res || g->act != INF_EPILOGUE_NONE;
    if (chunk < 64) chunk = 64;
    for (int64_t n = 0; n < g->n; n++)
        for (int64_t p0 = 0; p0 < npos; p0 += chunk) {
            int64_t cnt = npos - p0 < chunk ? npos - p0 : chunk, at = n * g->m * npos + p0;
            inf__ops_sgemm_avx2(pool, false, false, g->m, cnt, g->c, 1.0f, w, g->c, x + n * g->c * npos + p0, npos,
                                0.0f, y + at, npos);
            if (!ep) continue;
            ep_job J = {g, bias, res ? res + at : NULL, y + at, npos, cnt};
            inf__pool_range(pool, g->m, 8192 / (cnt + 1) + 1, epilogue_rows, &J);
        }
}

#endif /* x86-64 with AVX2 and FMA */
