/*
 * pointwise_avx2.c -- float32 1x1 convolutions (ONNX Conv with a 1x1
 * kernel, stride 1, no padding, one group: the pointwise half of a
 * depthwise-separable block) with AVX2/FMA, by a micro-kernel of their own.
 *
 * Called from ops/ref/conv.c (conv_avx2) when inf__conv2d_pointwise_fits(g)
 * and the CPU has AVX2/FMA, before the panel / direct / rows variants.
 * Built with -mavx2 -mfma (CMake: *_avx2.c).
 *
 * DESIGN: per image, Y[m, P] = W[m, c] * X[c, P] with P = oh * ow, and X
 * already the column matrix -- a GEMM with a long N, so it has a
 * micro-kernel of its own rather than inf__ops_sgemm_avx2 (which packed all
 * of X per call into the pool's workspace, and left bias / residual /
 * activation to a second pass over Y):
 *   - A tile is 4 output channels x 24 positions (three ymm), 12
 *     accumulators: per input channel c three loads of the strip's X row
 *     and 4 broadcasts of W[m, c] read from W's rows as given, 12 FMAs
 *     (7 loads per 12 FMAs; the GEMM's 6x16 has 8; measured 2-8% faster than
 *     6 x 16 tiles here).  The ragged last strip of an image (P % 24
 *     positions) runs 4 x 24 (17..23 positions), 6 x 16 (9..16) or 12 x 8
 *     (1..8) tiles, always 12 accumulators, its last vector masked in the
 *     store.  A ragged end of rows between one and two tiles runs
 *     as two near halves (a 1- or 2-row tile has too few FMA chains).
 *   - X's strip (kc rows x 24 positions) is copied into a contiguous buffer
 *     on the task's stack (24 KiB at most, in L1) once per channel block,
 *     then read by every tile of the block: X read in place has its rows
 *     P floats apart, and for P = 2304 / 576 all of a strip's rows fall in
 *     4 / 16 of L1's 64 sets and evict each other (measured: in place was
 *     0-8% slower on mobile's shapes, never faster).  Zero-padded, so the
 *     ragged strip's loads are plain.
 *   - c is walked in KC = 256-deep blocks (the GEMM's); on the last block
 *     the store adds the bias and the residual and applies ReLU / Clip /
 *     SiLU to the accumulators (no second pass over Y; SiLU as y *
 *     sigmoid(y) through math_avx2.h's sigmoid: the epilogue pass's bits).
 *   - Work is cut into units: (image, channel block of inf__blocking.pointwise_w_floats floats of W
 *     -- 128 KiB, stays in L2 while the strips go by --, group of
 *     positions), one inf__pool_range over all the images (the GEMM path
 *     made two pool calls per image and chunk).  A unit runs strip after
 *     strip, each through all the tiles of its channel block.  With more
 *     than one thread and fewer than 8 units a thread (batch 1), the
 *     positions are cut into groups of whole strips, then the channel
 *     blocks narrowed (multiples of 12 rows).
 *   - No packing of W: W's rows are read in place (4 streams a tile, the
 *     block in L2).  Packing W at load into 4-row panels would make it one
 *     stream; not done (the kernel is FMA-bound on these shapes).
 *   - The store of a full tile (R = MAX_ROWS) on a one-block pass (K <=
 *     256: all of mobile's layers) is straight-line code per combination
 *     of bias / residual / masked last vector / activation
 *     (store_one_block, 24 kinds picked by one switch a tile); store_vec's
 *     tests a vector and the accumulator spills they caused were ~15 of
 *     ~20 instructions a stored vector.  Ragged-row tiles and K > 256 keep
 *     store_vec.
 * FMA peak (issue 4): this host does 6.2 G ymm FMAs/s on one core (12
 * independent chains, best of 5), so a 4.72 M-MAC layer takes >= 95 us.
 * Before the straight-line store, mobile's six layers (below, medians) ran
 * at 67 / 82 / 86 / 85 / 88 / 77 % of it: the K = 32 layer worst (a tile
 * is 32 x 12 FMAs, so its store weighs most), the 6x6 one capped at 90 %
 * by its lanes.  The store change (bench_conv --shape 25..30, 8 rounds
 * alternating old/new binaries, loaded host): median time new/old 0.92,
 * 0.96, 0.96, 0.96, 0.85, 0.90 (per-round ratios' medians 0.89, 0.95,
 * 0.96, 0.96, 0.89, 0.98; single rounds 0.48-2.0 under load); callgrind,
 * whole mobile model: 10.46 M -> 9.74 M pointwise instructions a run
 * (-6.8 %); mobile end to end, 1 thread, batch 1, 12 rotated rounds:
 * new/old 0.86 (0.68-0.95), new/ORT 0.94 (0.77-1.39), old/ORT 1.06.  Tried and reverted: prefetching the next strip's 96 bytes of
 * each Y row at a tile's start (t0, 3 touches a row): 1.02-1.15x the time
 * on all six shapes (two sets of 5 alternating rounds) -- the lines land in
 * L1 and push the strip buffer out.
 * Measured (bench/bench_conv --shape 25..30, bench/extra mobile's six
 * shapes, bias + ReLU, 1 thread, batch 1, loaded 2-core host: min / median
 * of 25 alternating runs, us; GEMM path = this file before):
 *   M,K,P         GEMM path       this kernel
 *   64,32,2304    128 / 154       136 / 158
 *   128,64,576    109 / 135       110 / 116
 *   128,128,576   215 / 237       210 / 233
 *   256,128,144   109 / 120       103 / 120
 *   256,256,144   220 / 260       208 / 253
 *   512,256,36    158 / 192       116 / 129   (36 = 24 + 12: 90% of lanes, was 75%)
 * Level on five shapes, 0.70-0.74x on the 6x6 one; at 2 threads the
 * medians are 0.16-0.76x (one pool call a layer, not two per image and
 * chunk).  In mobile at 1 thread, batch 1, the pointwise share of a run
 * went 74.2% -> 73.6% (perf; ~3% faster): the 4 x 24 loop is FMA-bound
 * like the GEMM's 6 x 16.  More in docs/convolutions.md.
 * Bits: each Y element is, per 256-deep block of c, an FMA chain from zero
 * (acc = fma(w[m][c], x[c][p], acc), c in order), the first block stored,
 * later blocks added to it in order (y = acc + y), then + bias, + res, then
 * the activation as float operations: exactly inf__ops_sgemm_avx2's sum
 * followed by the former epilogue pass, which is the im2col + GEMM path's
 * and the other AVX2 variants' -- and independent of the tile a row lands
 * in, the unit split, the batch and the thread count
 * (tests/kernels/test_pointwise.c checks it against the panel variant bit
 * for bit, and each image of a batch against its run alone).
 * Allocates nothing: scratch is the strip buffer on each task's stack.
 */
#if defined(__x86_64__) && defined(__AVX2__) && defined(__FMA__)

#include <immintrin.h>

#include "ops/ops.h"
#include "ops/x86/math_avx2.h"
#include "ops/x86/pointwise_plan.h"
#include "ops/x86/transpose_avx2.h"

enum {
    NV_MAX = 3,     /* vectors (of 8 positions) in the widest tile */
    SW = 8 * NV_MAX, /* positions in a full strip */
    KC = 256,       /* input channels summed in one FMA chain (the GEMM's block) */
};
/* Most rows of a tile of nv vectors: 12 accumulators (+ nv loads + a
 * broadcast <= 16 ymm registers) -- 12 FMA chains hide the FMA latency. */
#define MAX_ROWS(nv) ((nv) == 1 ? 12 : (nv) == 2 ? 6 : 4)

bool inf__conv2d_pointwise_fits(const inf__conv2d *g) {
    return g->group == 1 && g->kh == 1 && g->kw == 1 && g->sh == 1 && g->sw == 1 && g->pt == 0 && g->pl == 0 &&
           g->oh == g->ih && g->ow == g->iw;
}


/* How a tile is stored: into y (rows npos apart), the columns of the last
 * vector limited by mask when masked; acc + y unless first; on the last
 * block + bias[row] (bias not NULL), + res (not NULL, same layout as y),
 * then the activation. */
typedef struct tile_out {
    float *y;
    const float *bias, *res;
    int64_t ld;
    bool first, last, masked;
    int one_block_kind; /* first && last: bias | res << 1 | masked << 2 | act << 3 (act 0 none, 1 ReLU, 2 Clip, 3 SiLU);
                           else -1 */
    __m256i mask;
    int act;
    __m256 lo, hi;
} tile_out;

/* One vector of the store: v (+ y) (+ bias + res, act on the last block). */
static inline __attribute__((always_inline)) void store_vec(const tile_out *o, __m256 v, float *y, __m256 b,
                                                            const float *res, bool part) {
    if (!o->first) v = _mm256_add_ps(v, part ? _mm256_maskload_ps(y, o->mask) : _mm256_loadu_ps(y));
    if (o->last) {
        if (o->bias) v = _mm256_add_ps(v, b);
        if (res) v = _mm256_add_ps(v, part ? _mm256_maskload_ps(res, o->mask) : _mm256_loadu_ps(res));
        if (o->act == INF_EPILOGUE_RELU) v = _mm256_max_ps(v, _mm256_setzero_ps()); /* NaN -> 0, as Relu */
        else if (o->act == INF_EPILOGUE_CLIP) v = _mm256_min_ps(o->hi, _mm256_max_ps(o->lo, v)); /* NaN kept */
        else if (o->act == INF_EPILOGUE_SILU) v = _mm256_mul_ps(v, sigmoid8(v)); /* the epilogue pass's bits */
    }
    if (part) _mm256_maskstore_ps(y, o->mask, v);
    else _mm256_storeu_ps(y, v);
}

/* The store of a whole tile on a one-block (k0 == 0, last) pass, with
 * what varies made compile-time constants: BIAS, RES, MASKED (the last
 * vector's columns limited by o->mask) and ACT (0 none, 1 ReLU, 2 Clip,
 * 3 SiLU: y * sigmoid(y) with math_avx2.h's sigmoid, the vector table's).
 * The same operations in the same order as store_vec, so the same bits;
 * store_vec's tests a vector (and the spills they caused) cost ~15 of the
 * ~20 instructions a vector. */
static inline __attribute__((always_inline)) void store_one_block(const int R, const int NV,
                                                                  __m256 acc[][NV_MAX], const tile_out *o,
                                                                  const bool BIAS, const bool RES,
                                                                  const bool MASKED, const int ACT) {
#pragma GCC unroll 12
    for (int r = 0; r < R; r++) {
        float *y = o->y + r * o->ld;
        const float *res = RES ? o->res + r * o->ld : NULL;
        __m256 b = BIAS ? _mm256_set1_ps(o->bias[r]) : _mm256_setzero_ps();
#pragma GCC unroll 3
        for (int v = 0; v < NV; v++) {
            bool part = MASKED && v == NV - 1;
            __m256 a = acc[r][v];
            if (BIAS) a = _mm256_add_ps(a, b);
            if (RES) a = _mm256_add_ps(a, part ? _mm256_maskload_ps(res + 8 * v, o->mask)
                                               : _mm256_loadu_ps(res + 8 * v));
            if (ACT == 1) a = _mm256_max_ps(a, _mm256_setzero_ps());
            else if (ACT == 2) a = _mm256_min_ps(o->hi, _mm256_max_ps(o->lo, a));
            else if (ACT == 3) a = _mm256_mul_ps(a, sigmoid8(a));
            if (part) _mm256_maskstore_ps(y + 8 * v, o->mask, a);
            else _mm256_storeu_ps(y + 8 * v, a);
        }
    }
}

/* store_one_block for o->one_block_kind (bias | res << 1 | masked << 2 |
 * act << 3), each combination its own straight-line code. */
static inline __attribute__((always_inline)) void store_one_block_any(const int R, const int NV,
                                                                      __m256 acc[][NV_MAX], const tile_out *o) {
#define K(B, RS, M, A)                                                                                             \
    case (B) | (RS) << 1 | (M) << 2 | (A) << 3: store_one_block(R, NV, acc, o, B, RS, M, A); return
    switch (o->one_block_kind) {
        K(0, 0, 0, 0); K(1, 0, 0, 0); K(0, 1, 0, 0); K(1, 1, 0, 0);
        K(0, 0, 1, 0); K(1, 0, 1, 0); K(0, 1, 1, 0); K(1, 1, 1, 0);
        K(0, 0, 0, 1); K(1, 0, 0, 1); K(0, 1, 0, 1); K(1, 1, 0, 1);
        K(0, 0, 1, 1); K(1, 0, 1, 1); K(0, 1, 1, 1); K(1, 1, 1, 1);
        K(0, 0, 0, 2); K(1, 0, 0, 2); K(0, 1, 0, 2); K(1, 1, 0, 2);
        K(0, 0, 1, 2); K(1, 0, 1, 2); K(0, 1, 1, 2); K(1, 1, 1, 2);
        K(0, 0, 0, 3); K(1, 0, 0, 3); K(0, 1, 0, 3); K(1, 1, 0, 3);
        K(0, 0, 1, 3); K(1, 0, 1, 3); K(0, 1, 1, 3); K(1, 1, 1, 3);
    default: return;
    }
#undef K
}

/* R rows x NV vectors: acc[r][v] = sum_c w[r * ldw + c] * x[c * ldx + 8 v]
 * over kc input channels, then stored through o. */
static inline __attribute__((always_inline)) void tile(const int R, const int NV, int64_t kc,
                                                       const float *restrict w, int64_t ldw,
                                                       const float *restrict x, int64_t ldx, const tile_out *o) {
    __m256 acc[12][NV_MAX];
#pragma GCC unroll 12
    for (int r = 0; r < R; r++)
#pragma GCC unroll 3
        for (int v = 0; v < NV; v++) acc[r][v] = _mm256_setzero_ps();
#pragma GCC unroll 4
    for (int64_t c = 0; c < kc; c++, w++, x += ldx) {
        __m256 xv[NV_MAX];
#pragma GCC unroll 3
        for (int v = 0; v < NV; v++) xv[v] = _mm256_loadu_ps(x + 8 * v);
#pragma GCC unroll 12
        for (int r = 0; r < R; r++) {
            __m256 wv = _mm256_broadcast_ss(w + r * ldw);
#pragma GCC unroll 3
            for (int v = 0; v < NV; v++) acc[r][v] = _mm256_fmadd_ps(wv, xv[v], acc[r][v]);
        }
    }
    if (R == MAX_ROWS(NV) && o->one_block_kind >= 0) { /* full tiles of a one-block pass: the bulk */
        store_one_block_any(R, NV, acc, o);
        return;
    }
#pragma GCC unroll 12
    for (int r = 0; r < R; r++) {
        float *y = o->y + r * o->ld;
        const float *res = o->last && o->res ? o->res + r * o->ld : NULL;
        __m256 b = _mm256_set1_ps(o->last && o->bias ? o->bias[r] : 0.0f);
#pragma GCC unroll 3
        for (int v = 0; v < NV; v++)
            store_vec(o, acc[r][v], y + 8 * v, b, res ? res + 8 * v : NULL, o->masked && v == NV - 1);
    }
}

/* tile() for a run-time row count (up to MAX_ROWS(nv)) and nv (1..3). */
static void tile_any(int64_t rows, int nv, int64_t kc, const float *w, int64_t ldw, const float *x, int64_t ldx,
                     const tile_out *o) {
#define T(R, NV)                                                                                                   \
    case R: tile(R, NV, kc, w, ldw, x, ldx, o); return
    if (nv == 3) switch (rows) {
        T(4, 3); T(3, 3); T(2, 3);
        default: tile(1, 3, kc, w, ldw, x, ldx, o); return;
        }
    if (nv == 2) switch (rows) {
        T(6, 2); T(5, 2); T(4, 2); T(3, 2); T(2, 2);
        default: tile(1, 2, kc, w, ldw, x, ldx, o); return;
        }
    switch (rows) {
        T(12, 1); T(11, 1); T(10, 1); T(9, 1); T(8, 1); T(7, 1); T(6, 1); T(5, 1); T(4, 1); T(3, 1); T(2, 1);
    default: tile(1, 1, kc, w, ldw, x, ldx, o); return;
    }
#undef T
}

/* Rows of the next tile of nv vectors when `left` rows remain: the most,
 * but a ragged end of between one and two tiles as two near halves (a
 * tile of one or two rows has too few FMA chains to hide their latency). */
static inline int64_t tile_rows(int64_t left, int nv) {
    int64_t most = MAX_ROWS(nv);
    if (left <= most) return left;
    return left < 2 * most ? (left + 1) / 2 : most;
}

/* Copies kc rows (ld apart) of cols <= 8 nv positions into buf[kc][8 nv],
 * zero-padded: the strip, contiguous and in L1 for all the tiles that read
 * it (read in place, X's rows can fall in a few L1 sets: 32 rows of
 * P = 2304 in 4, 128 of P = 576 in 16 -- and evict each other). */
#if defined(__clang__) /* GCC's option; clang ignored the attribute with a warning */
#define NOT_MEMCPY
#else
#define NOT_MEMCPY __attribute__((optimize("no-tree-loop-distribute-patterns"))) /* not a memcpy call a row */
#endif
NOT_MEMCPY static void copy_strip(const float *x, int64_t ld, int64_t kc, int64_t cols, int nv, float *buf) {
    if (cols == 8 * nv) {
        for (int64_t c = 0; c < kc; c++, x += ld, buf += 8 * nv)
            for (int v = 0; v < nv; v++) _mm256_storeu_ps(buf + 8 * v, _mm256_loadu_ps(x + 8 * v));
        return;
    }
    __m256i lanes[NV_MAX];
    for (int v = 0; v < nv; v++) lanes[v] = inf__avx2_lanes(cols - 8 * v);
    for (int64_t c = 0; c < kc; c++, x += ld, buf += 8 * nv)
        for (int v = 0; v < nv; v++) _mm256_storeu_ps(buf + 8 * v, _mm256_maskload_ps(x + 8 * v, lanes[v]));
}

/* The tiles of rows [m0, m1) x positions [j, j + cols) of image n, input
 * channels [k0, k0 + kc). */
static void strip_tiles(const inf__pw_job *J, int64_t n, int64_t m0, int64_t m1, int64_t j, int64_t cols, int64_t k0,
                        int64_t kc, float *buf) {
    const inf__conv2d *g = J->g;
    int64_t npos = J->npos;
    int nv = (int)((cols + 7) / 8);
    copy_strip(J->x + (n * g->c + k0) * npos + j, npos, kc, cols, nv, buf);
    tile_out o = {.ld = npos, .first = k0 == 0, .last = k0 + kc >= g->c, .masked = cols < 8 * nv,
                  .mask = inf__avx2_lanes(cols - 8 * (nv - 1)), .act = g->act, .lo = _mm256_set1_ps(g->lo),
                  .hi = _mm256_set1_ps(g->hi)};
    int act_kind = g->act == INF_EPILOGUE_RELU ? 1 : g->act == INF_EPILOGUE_CLIP ? 2 : g->act == INF_EPILOGUE_SILU ? 3 : 0;
    for (int64_t m = m0; m < m1;) {
        int64_t rows = tile_rows(m1 - m, nv), at = (n * g->m + m) * npos + j;
        o.y = J->y + at;
        o.bias = J->bias ? J->bias + m : NULL;
        o.res = J->res ? J->res + at : NULL;
        o.one_block_kind = o.first && o.last ? (o.bias != NULL) | (o.res != NULL) << 1 | o.masked << 2 | act_kind << 3
                                             : -1;
        tile_any(rows, nv, kc, J->w + m * g->c + k0, g->c, buf, 8 * nv, &o);
        m += rows;
    }
}

/* Units [begin, end) of the plan (ops/x86/pointwise_plan.h). */
static void pw_units(void *arg, int64_t begin, int64_t end) {
    _Alignas(32) float buf[KC * SW];
    inf__pw_walk(arg, begin, end, SW, KC, strip_tiles, buf);
}

void inf__conv2d_pointwise_f32_avx2(inf__pool *pool, const inf__conv2d *g, const float *x, const float *w,
                                    const float *bias, const float *res, float *y) {
    inf__pw_run(pool, g, x, w, bias, res, y, SW, pw_units);
}

#endif /* x86-64 with AVX2 and FMA */
