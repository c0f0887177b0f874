/*
 * pointwise_avx512.c -- the 1x1 convolution micro-kernel of pointwise_avx2.c
 * with AVX-512: 16 positions a vector, masked tails.
 *
 * Called from ops/ref/conv.c (conv_avx2) instead of
 * inf__conv2d_pointwise_f32_avx2 when inf__cpu_has_avx512() (path avx512;
 * INFERA_CPU=avx2 keeps the AVX2 kernel), for the 1x1 shapes the AVX-512
 * direct kernel does not take (inf__conv2d_direct_wide: output channels not
 * a multiple of 32, or K < 32 -- the expand and projection layers of
 * MobileNetV2 / EfficientNet with 16..112 channels or K = 16).
 * Built with -mavx512f -mavx512bw -mavx512vl (CMake: *_avx512.c).
 *
 * DESIGN: the AVX2 kernel's data flow, twice the width:
 *   - A tile is up to 12 output channels x 32 positions (two zmm): 24
 *     accumulators, per input channel c two loads of the strip's X row, 12
 *     broadcasts of W[m, c] read from W's rows as given, 24 FMAs.  The ragged
 *     last strip of an image (P % 32 positions) runs 12 x 32 (17..31
 *     positions) or 12 x 16 (1..16), its last vector masked.  A ragged end of
 *     rows between one and two tiles runs as two near halves.
 *   - X's strip (kc rows x 32 positions, 32 KiB at most: in L1) is copied
 *     into a buffer on the task's stack once per channel block, zero-padded,
 *     then read by every tile of the block (the AVX2 file says why).
 *   - c in KC = 256-deep blocks; on the last block the store adds the bias
 *     and the residual and applies ReLU / Clip / SiLU to the accumulators
 *     (no second pass over Y; SiLU is y * sigmoid(y) through the vector
 *     table's sigmoid, ops/x86/math_avx512.h, so the epilogue pass's bits).
 *   - Units (image, channel block, group of positions) as the AVX2 kernel
 *     plans them, strips of 32.
 * Bits: each Y element is, per 256-deep block of c, an FMA chain from zero
 * in c order, the first block stored, later blocks added in order, then
 * + bias, + res, the activation: the AVX2 kernel's and the im2col + GEMM
 * path's bits, whatever the tile, split, batch or thread count
 * (tests/kernels/test_pointwise.c).  Allocates nothing.
 */
#if defined(__x86_64__) && defined(__AVX512F__)

#include <immintrin.h>

#include "ops/ops.h"
#include "ops/x86/math_avx512.h"
#include "ops/x86/pointwise_plan.h"

enum {
    NV_MAX = 2,      /* vectors (of 16 positions) in the widest tile */
    SW = 16 * NV_MAX, /* positions in a full strip */
    KC = 256,        /* input channels summed in one FMA chain (the GEMM's block) */
    MAX_ROWS = 12,   /* rows of a tile: 24 accumulators + 2 loads + a broadcast <= 32 zmm */
};

static inline __mmask16 lanes(int64_t k) {
    return k >= 16 ? (__mmask16)0xFFFF : k <= 0 ? (__mmask16)0 : (__mmask16)((1u << k) - 1u);
}

/* How a tile is stored: into y (rows ld apart), the last vector's columns
 * limited by mask; acc + y unless first; on the last block + bias[row]
 * (bias not NULL), + res (not NULL, same layout as y), then the activation. */
typedef struct tile_out {
    float *y;
    const float *bias, *res;
    int64_t ld;
    bool first, last;
    __mmask16 mask; /* of the last vector */
    int act;        /* inf__epilogue_kind: NONE, RELU, CLIP or SILU */
    __m512 lo, hi;
} tile_out;

static inline __attribute__((always_inline)) __m512 activate(const tile_out *o, __m512 v) {
    switch (o->act) {
    case INF_EPILOGUE_RELU: return _mm512_max_ps(v, _mm512_setzero_ps()); /* NaN -> 0, as Relu */
    case INF_EPILOGUE_CLIP: return _mm512_min_ps(o->hi, _mm512_max_ps(o->lo, v)); /* NaN kept */
    case INF_EPILOGUE_SILU: return _mm512_mul_ps(v, sigmoid16(v));
    default: return v;
    }
}

/* R rows x NV vectors: acc[r][v] = sum_c w[r * ldw + c] * x[c * ldx + 16 v]
 * over kc input channels, then stored through o. */
static inline __attribute__((always_inline)) void tile(const int R, const int NV, int64_t kc,
                                                       const float *restrict w, int64_t ldw,
                                                       const float *restrict x, int64_t ldx, const tile_out *o) {
    __m512 acc[MAX_ROWS][NV_MAX];
#pragma GCC unroll 12
    for (int r = 0; r < R; r++)
#pragma GCC unroll 2
        for (int v = 0; v < NV; v++) acc[r][v] = _mm512_setzero_ps();
#pragma GCC unroll 2
    for (int64_t c = 0; c < kc; c++, w++, x += ldx) {
        __m512 xv[NV_MAX];
#pragma GCC unroll 2
        for (int v = 0; v < NV; v++) xv[v] = _mm512_loadu_ps(x + 16 * v);
#pragma GCC unroll 12
        for (int r = 0; r < R; r++) {
            __m512 wv = _mm512_set1_ps(w[r * ldw]);
#pragma GCC unroll 2
            for (int v = 0; v < NV; v++) acc[r][v] = _mm512_fmadd_ps(wv, xv[v], acc[r][v]);
        }
    }
#pragma GCC unroll 12
    for (int r = 0; r < R; r++) {
        float *y = o->y + r * o->ld;
        const float *res = o->last && o->res ? o->res + r * o->ld : NULL;
        __m512 b = _mm512_set1_ps(o->last && o->bias ? o->bias[r] : 0.0f);
#pragma GCC unroll 2
        for (int v = 0; v < NV; v++) {
            __mmask16 k = v == NV - 1 ? o->mask : (__mmask16)0xFFFF;
            __m512 a = acc[r][v];
            if (!o->first) a = _mm512_add_ps(a, _mm512_maskz_loadu_ps(k, y + 16 * v));
            if (o->last) {
                if (o->bias) a = _mm512_add_ps(a, b);
                if (res) a = _mm512_add_ps(a, _mm512_maskz_loadu_ps(k, res + 16 * v));
                a = activate(o, a);
            }
            _mm512_mask_storeu_ps(y + 16 * v, k, a);
        }
    }
}

/* tile() for a run-time row count (1..MAX_ROWS) and nv (1 or 2). */
static void tile_any(int64_t rows, int nv, int64_t kc, const float *w, int64_t ldw, const float *x, int64_t ldx,
                     const tile_out *o) {
#define T(R)                                                                                                       \
    case R: nv == 2 ? tile(R, 2, kc, w, ldw, x, ldx, o) : tile(R, 1, kc, w, ldw, x, ldx, o); return
    switch (rows) {
        T(12); T(11); T(10); T(9); T(8); T(7); T(6); T(5); T(4); T(3); T(2);
    default: nv == 2 ? tile(1, 2, kc, w, ldw, x, ldx, o) : tile(1, 1, kc, w, ldw, x, ldx, o); return;
    }
#undef T
}

/* Rows of the next tile when `left` rows remain: the most, but a ragged end
 * of between one and two tiles as two near halves. */
static inline int64_t tile_rows(int64_t left) {
    if (left <= MAX_ROWS) return left;
    return left < 2 * MAX_ROWS ? (left + 1) / 2 : MAX_ROWS;
}

/* Copies kc rows (ld apart) of cols <= 16 nv positions into buf[kc][16 nv],
 * zero-padded. */
static void copy_strip(const float *x, int64_t ld, int64_t kc, int64_t cols, int nv, float *buf) {
    __mmask16 k[NV_MAX];
    for (int v = 0; v < nv; v++) k[v] = lanes(cols - 16 * v);
    for (int64_t c = 0; c < kc; c++, x += ld, buf += 16 * nv)
        for (int v = 0; v < nv; v++) _mm512_storeu_ps(buf + 16 * v, _mm512_maskz_loadu_ps(k[v], x + 16 * v));
}

/* The tiles of rows [m0, m1) x positions [j, j + cols) of image n, input
 * channels [k0, k0 + kc). */
static void strip_tiles(const inf__pw_job *J, int64_t n, int64_t m0, int64_t m1, int64_t j, int64_t cols, int64_t k0,
                        int64_t kc, float *buf) {
    const inf__conv2d *g = J->g;
    int64_t npos = J->npos;
    int nv = (int)((cols + 15) / 16);
    copy_strip(J->x + (n * g->c + k0) * npos + j, npos, kc, cols, nv, buf);
    tile_out o = {.ld = npos, .first = k0 == 0, .last = k0 + kc >= g->c, .mask = lanes(cols - 16 * (nv - 1)),
                  .act = g->act, .lo = _mm512_set1_ps(g->lo), .hi = _mm512_set1_ps(g->hi)};
    for (int64_t m = m0; m < m1;) {
        int64_t rows = tile_rows(m1 - m), at = (n * g->m + m) * npos + j;
        o.y = J->y + at;
        o.bias = J->bias ? J->bias + m : NULL;
        o.res = J->res ? J->res + at : NULL;
        tile_any(rows, nv, kc, J->w + m * g->c + k0, g->c, buf, 16 * nv, &o);
        m += rows;
    }
}

/* Units [begin, end) of the plan (ops/x86/pointwise_plan.h). */
static void pw_units(void *arg, int64_t begin, int64_t end) {
    _Alignas(64) float buf[KC * SW];
    inf__pw_walk(arg, begin, end, SW, KC, strip_tiles, buf);
}

void inf__conv2d_pointwise_f32_avx512(inf__pool *pool, const inf__conv2d *g, const float *x, const float *w,
                                      const float *bias, const float *res, float *y) {
    inf__pw_run(pool, g, x, w, bias, res, y, SW, pw_units);
}

#endif /* x86-64 with AVX-512F */
