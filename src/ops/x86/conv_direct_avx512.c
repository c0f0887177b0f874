/*
 * conv_direct_avx512.c -- the direct float32 1-D/2-D convolution of
 * conv_direct_avx2.c with AVX-512: 8 output positions x 32 output channels
 * (two of its 16-channel W blocks, one zmm each) accumulated in registers.
 *
 * Called from Conv / ConvAdd (ops/ref/conv.c) instead of
 * inf__conv2d_direct_f32_avx2 when inf__cpu_has_avx512() (path avx512;
 * INFERA_CPU=avx2 keeps the AVX2 kernel), for the shapes that kernel takes.
 * Built with -mavx512f -mavx512bw -mavx512vl (CMake: *_avx512.c).
 *
 * DESIGN: the AVX2 kernel's data and arithmetic, twice the width:
 *   - W as packed for it (inf__conv2d_direct_pack_w: [group][block][K][16]),
 *     so a load-time packing, a bundle's stored packing and the variant
 *     rule are shared; a pair of adjacent blocks makes one 32-channel
 *     tile (a group with an odd number of blocks ends on a 16-channel one).
 *   - X read in place, borders included, when every tile lies in one output
 *     row and only rows above the image (first output row) or the left
 *     columns of a row's first position fall outside it
 *     (inf__conv2d_direct_avx512_in_place:
 *     the ResNet 3x3/2 pad-1 downsampling on an even input); such border
 *     tiles take each tap's offset and a zeroing mask from a small per-tap
 *     table each task builds (masked broadcasts: the padding's zero enters
 *     the FMA exactly as the padded copy's).  No padded copy and no pad job
 *     (one fork/join fewer at 2+ threads).  Other padded shapes read the
 *     padded copy of inf__conv2d_input_pass.
 *   - A tile is 8 consecutive output positions x 32 channels: 16 zmm
 *     accumulators; per k, 2 W loads, 8 broadcasts and 16 FMAs (the AVX2
 *     tile: 2 loads, 6 broadcasts, 12 FMAs of half the width).
 *   - Tasks own (image, group, channel pair, chunk of positions); K in
 *     KC = 256 blocks, each block's sums added into a [position][32]
 *     buffer; then 8x8 transposes to Y's rows with the bias, the residual
 *     and the ReLU/Clip, masked stores at the ends.
 *   - Bits: every Y element is the AVX2 kernel's (per KC block acc = 0,
 *     acc = fma(w, x, acc) in k order, later blocks added to the first,
 *     then + bias, + res, activation), so both widths equal the im2col
 *     path bit for bit (tests/kernels/test_conv_avx2.c) and a model's
 *     result does not depend on the path, the batch or the threads.
 */
#if defined(__x86_64__) && defined(__AVX512F__)

#include <immintrin.h>

#include "ops/ops.h"
#include "ops/x86/math_avx2.h"
#include "ops/x86/transpose_avx2.h"

enum {
    MAX_TAPS = 64, /* kh * kw of a Conv whose padded X is read in place */
    CB = 16,       /* channels per packed W block */
    CW = 32,     /* channels per tile: two blocks */
    TW = 8,      /* output positions per tile */
    KC = 256,    /* depth of one block of K (as the AVX2 kernel) */
    CHUNK = 192, /* positions per task at most: a multiple of 8 and 24 */
};

static inline int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }

/* ---- the tile ---- */

/* s[j][0:16*NB] = (first ? 0 : s[j]) + sum_k w_b[k][0:16] * x0[off[k] + d_j]
 * for the NB (1 or 2) blocks w0, w1; d_j = j * SW when SW > 0, else d[j]. */
static inline __attribute__((always_inline)) void tile(int SW, int NB, const float *x0, const int64_t *d,
                                                       const int64_t *off, int64_t kc, const float *restrict w0,
                                                       const float *restrict w1, float *s, bool first) {
    __m512 acc[TW][2];
    for (int j = 0; j < TW; j++)
        acc[j][0] = acc[j][1] = _mm512_setzero_ps();
    const float *xb[TW];
    for (int j = 0; j < TW; j++) {
        xb[j] = x0 + (SW > 0 ? j * SW : d[j]);
        if (SW == 0) __asm__("" : "+r"(xb[j])); /* keep each base in a register */
    }
#pragma GCC unroll 2
    for (int64_t k = 0; k < kc; k++, w0 += CB, w1 += CB) {
        int64_t o = off[k];
        __m512 v0 = _mm512_loadu_ps(w0), v1 = NB == 2 ? _mm512_loadu_ps(w1) : v0;
        for (int j = 0; j < TW; j++) {
            __m512 xv = _mm512_set1_ps(SW > 0 ? x0[o + j * SW] : xb[j][o]);
            acc[j][0] = _mm512_fmadd_ps(v0, xv, acc[j][0]);
            if (NB == 2) acc[j][1] = _mm512_fmadd_ps(v1, xv, acc[j][1]);
        }
    }
    for (int j = 0; j < TW; j++)
        for (int h = 0; h < NB; h++) {
            __m512 v = acc[j][h];
            if (!first) v = _mm512_add_ps(v, _mm512_load_ps(s + j * CW + CB * h));
            _mm512_store_ps(s + j * CW + CB * h, v);
        }
}

/* ---- edge tiles of an X read in place ---- */

/* The taps of one kind of edge tile (dy rows above the image, dx columns
 * left of it at its first position: LEFT, TOP, CORNER), within a channel
 * plane and relative to p = the image at the tile's first in-image row and
 * column: position 0 reads p[oa[t]] zeroed by mask ma[t], position j >= 1
 * p[ob[t] + j * SW], zeroed by mb[t] (TOP, CORNER).  A tap outside the
 * image reads an in-image float (row or column 0) that the mask zeroes, so
 * every address is inside X; positions j >= 1 are never left of it (pl <=
 * sw) and no tap is right of or below it.  Per tap, not per k: a task
 * builds its three kinds in a few dozen steps, in its own cache. */
typedef struct edge_kind {
    int64_t oa[MAX_TAPS], ob[MAX_TAPS];
    __mmask16 ma[MAX_TAPS], mb[MAX_TAPS];
} edge_kind;

typedef struct edge_taps {
    int64_t ntaps, plane;
    edge_kind left, top, corner;
} edge_taps;

static void edge_kind_build(const inf__conv2d *g, int64_t dy, int64_t dx, edge_kind *E) {
    for (int64_t t = 0; t < g->kh * g->kw; t++) {
        int64_t row = t / g->kw * g->dh - dy, col = t % g->kw * g->dw - dx, r = row >= 0 ? row : 0;
        E->ob[t] = r * g->iw + col;
        E->oa[t] = r * g->iw + (col >= 0 ? col : 0);
        E->mb[t] = row >= 0 ? 0xFFFF : 0;
        E->ma[t] = row >= 0 && col >= 0 ? 0xFFFF : 0;
    }
}

static void edge_taps_build(const inf__conv2d *g, edge_taps *T) {
    T->ntaps = g->kh * g->kw, T->plane = g->ih * g->iw;
    edge_kind_build(g, 0, g->pl, &T->left);
    edge_kind_build(g, g->pt, 0, &T->top);
    edge_kind_build(g, g->pt, g->pl, &T->corner);
}

/* tile() for an edge tile: taps [k0, k0 + kc) as E says; ROWS: some taps
 * above the image (positions j >= 1 masked too). */
static inline __attribute__((always_inline)) void tile_edge(int SW, int NB, bool ROWS, const float *p,
                                                            const edge_kind *E, int64_t ntaps, int64_t plane,
                                                            int64_t k0, int64_t kc, const float *restrict w0,
                                                            const float *restrict w1, float *s, bool first) {
    __m512 acc[TW][2];
    for (int j = 0; j < TW; j++)
        acc[j][0] = acc[j][1] = _mm512_setzero_ps();
    int64_t t = k0 % ntaps;
    const float *xc = p + k0 / ntaps * plane;
    for (int64_t k = 0; k < kc; k++, w0 += CB, w1 += CB) {
        __m512 v0 = _mm512_loadu_ps(w0), v1 = NB == 2 ? _mm512_loadu_ps(w1) : v0;
        const float *xr = xc + E->ob[t];
        __mmask16 mb = E->mb[t];
        for (int j = 0; j < TW; j++) {
            __m512 xv = j == 0 ? _mm512_maskz_mov_ps(E->ma[t], _mm512_set1_ps(xc[E->oa[t]]))
                        : ROWS ? _mm512_maskz_mov_ps(mb, _mm512_set1_ps(xr[j * SW]))
                               : _mm512_set1_ps(xr[j * SW]);
            acc[j][0] = _mm512_fmadd_ps(v0, xv, acc[j][0]);
            if (NB == 2) acc[j][1] = _mm512_fmadd_ps(v1, xv, acc[j][1]);
        }
        if (++t == ntaps) t = 0, xc += plane;
    }
    for (int j = 0; j < TW; j++)
        for (int h = 0; h < NB; h++) {
            __m512 v = acc[j][h];
            if (!first) v = _mm512_add_ps(v, _mm512_load_ps(s + j * CW + CB * h));
            _mm512_store_ps(s + j * CW + CB * h, v);
        }
}

typedef struct tile_args {
    const int64_t *off;
    const edge_taps *E; /* in place only */
    int64_t k0, kc;
    const float *w0, *w1;
    int nb;
    bool first;
} tile_args;

#define TILE_NB(SW, x0, d, A, s)                                                                                       \
    do {                                                                                                               \
        if ((A)->nb == 2)                                                                                              \
            tile(SW, 2, x0, d, (A)->off, (A)->kc, (A)->w0, (A)->w1, s, (A)->first);                                    \
        else                                                                                                           \
            tile(SW, 1, x0, d, (A)->off, (A)->kc, (A)->w0, (A)->w0, s, (A)->first);                                    \
    } while (0)

#define EDGE_NB(SW, ROWS, p, K, A, s)                                                                                  \
    do {                                                                                                               \
        if ((A)->nb == 2)                                                                                              \
            tile_edge(SW, 2, ROWS, p, K, (A)->E->ntaps, (A)->E->plane, (A)->k0, (A)->kc, (A)->w0, (A)->w1, s,          \
                      (A)->first);                                                                                     \
        else                                                                                                           \
            tile_edge(SW, 1, ROWS, p, K, (A)->E->ntaps, (A)->E->plane, (A)->k0, (A)->kc, (A)->w0, (A)->w0, s,          \
                      (A)->first);                                                                                     \
    } while (0)

/* A tile of the in-place mode (inf__conv2d_direct_avx512_in_place): whole,
 * in one output row, X unpadded (xg's rows iw floats apart). */
static void run_tile_in_place(const inf__conv2d *g, const float *xg, int64_t p, const tile_args *A, float *s) {
    int64_t oy = p / g->ow, ox = p % g->ow, iy0 = oy * g->sh - g->pt, ix0 = ox * g->sw - g->pl;
    const float *x0 = xg + (iy0 > 0 ? iy0 : 0) * g->iw + (ix0 > 0 ? ix0 : 0);
    bool top = iy0 < 0;
    const edge_kind *K = ix0 >= 0 ? &A->E->top : top ? &A->E->corner : &A->E->left;
    if (!top && ix0 >= 0) {
        if (g->sw == 1)
            TILE_NB(1, x0, NULL, A, s);
        else
            TILE_NB(2, x0, NULL, A, s);
    } else if (g->sw == 1) {
        if (top)
            EDGE_NB(1, true, x0, K, A, s);
        else
            EDGE_NB(1, false, x0, K, A, s);
    } else {
        if (top)
            EDGE_NB(2, true, x0, K, A, s);
        else
            EDGE_NB(2, false, x0, K, A, s);
    }
}

/* One tile at positions p .. p + 7 (past the last, the last again). */
static void run_tile(const inf__conv2d *g, int64_t pw, const float *xg, int64_t p, int64_t last, const tile_args *A,
                     float *s) {
    int64_t oy = p / g->ow, ox = p % g->ow;
    const float *x0 = xg + oy * g->sh * pw + ox * g->sw;
    if (p + TW - 1 <= last && ox + TW <= g->ow && (g->sw == 1 || g->sw == 2)) {
        if (g->sw == 1)
            TILE_NB(1, x0, NULL, A, s);
        else
            TILE_NB(2, x0, NULL, A, s);
        return;
    }
    int64_t d[TW];
    for (int j = 0; j < TW; j++) {
        int64_t q = min64(p + j, last), qy = q / g->ow, qx = q % g->ow;
        d[j] = (qy - oy) * g->sh * pw + (qx - ox) * g->sw;
    }
    TILE_NB(0, x0, d, A, s);
}

/* ---- the store: [position][32] sums -> Y rows ---- */

typedef struct store_ctx {
    const inf__conv2d *g;
    int64_t npos, rows; /* positions per channel in Y; valid channels of the tile */
    const float *bias;  /* the tile's first channel, or NULL */
    const float *res;   /* the tile's first channel row, or NULL */
    float *y;           /* the tile's first channel row */
} store_ctx;

/* Positions [p, p + cnt) (cnt <= 8) of channels [c0, c0 + 8) from the sums
 * s ([position][32], s at position p): v = sum + bias, + res, activation. */
static void store8(const store_ctx *S, const float *s, int64_t p, int64_t cnt, int c0) {
    __m256 r[8];
    for (int i = 0; i < 8; i++)
        r[i] = i < cnt ? _mm256_load_ps(s + i * CW + c0) : _mm256_setzero_ps();
    inf__avx2_transpose8(r);
    const inf__conv2d *g = S->g;
    __mmask8 k = (__mmask8)((1u << cnt) - 1u);
    __m256 zero = _mm256_setzero_ps(), vlo = _mm256_set1_ps(g->lo), vhi = _mm256_set1_ps(g->hi);
    for (int j = 0; j < 8 && c0 + j < S->rows; j++) {
        int64_t row = (c0 + j) * S->npos + p;
        __m256 v = r[j];
        if (S->bias) v = _mm256_add_ps(v, _mm256_broadcast_ss(S->bias + c0 + j));
        if (S->res) v = _mm256_add_ps(v, _mm256_maskz_loadu_ps(k, S->res + row));
        if (g->act == INF_EPILOGUE_RELU)
            v = _mm256_max_ps(v, zero); /* NaN -> 0, as Relu */
        else if (g->act == INF_EPILOGUE_CLIP)
            v = _mm256_min_ps(vhi, _mm256_max_ps(vlo, v)); /* NaN kept */
        else if (g->act == INF_EPILOGUE_SILU)
            v = _mm256_mul_ps(v, sigmoid8(v)); /* math_avx2.h: the 16-lane sigmoid's bits */
        _mm256_mask_storeu_ps(S->y + row, k, v);
    }
}

/* ---- tasks ---- */

typedef struct direct_job {
    const inf__conv2d *g;
    inf__conv2d_input xg;
    const float *x; /* the pass's first image: padded buffer or X */
    const float *wp, *bias, *res;
    float *y;                                      /* the pass's first image */
    bool in_place;                                 /* X unpadded, borders masked */
    int64_t kdim, npos, ncb, ntp, chunk, n_chunks; /* ncb: 16-channel blocks, ntp: 32-channel tiles per group */
    int64_t w_floats;
} direct_job;

/* off[k] for k in [k0, k0 + kc): the tap's offset in a (padded) image of the group. */
static void tap_offsets(const direct_job *J, int64_t k0, int64_t kc, int64_t *off) {
    const inf__conv2d *g = J->g;
    int64_t khw = g->kh * g->kw, plane = J->xg.ph * J->xg.pw;
    int64_t c = k0 / khw, ky = k0 % khw / g->kw, kx = k0 % g->kw;
    for (int64_t k = 0; k < kc; k++) {
        off[k] = c * plane + ky * g->dh * J->xg.pw + kx * g->dw;
        if (++kx == g->kw) {
            kx = 0;
            if (++ky == g->kh) ky = 0, c++;
        }
    }
}

/* One task: positions [p0, p0 + cnt) of channel pair tp of image-group ng. */
static void direct_chunk(const direct_job *J, int64_t ng, int64_t tp, int64_t p0, int64_t cnt) {
    const inf__conv2d *g = J->g;
    _Alignas(64) float sums[CHUNK * CW];
    int64_t off[KC];
    edge_taps edges;
    if (J->in_place) edge_taps_build(g, &edges);
    int64_t n = ng / g->group, gi = ng % g->group, plane = J->xg.ph * J->xg.pw, cb = 2 * tp;
    const float *xg = J->x + (n * g->c + gi * g->cg) * plane;
    const float *w = J->wp + (gi * J->ncb + cb) * J->kdim * CB;
    int nb = cb + 1 < J->ncb ? 2 : 1;
    const float *w_end = J->wp + J->w_floats;
    for (int64_t k0 = 0; k0 < J->kdim; k0 += KC) {
        int64_t kc = min64(KC, J->kdim - k0), ntiles = (cnt + TW - 1) / TW;
        tap_offsets(J, k0, kc, off);
        /* the next KC block of both W blocks (past the last, the next
         * pair's first) is fetched while this one runs, a share per tile */
        const float *next[2] = {w + (k0 + KC) * CB, w + (J->kdim + k0 + KC) * CB};
        if (k0 + KC >= J->kdim) next[0] = w + nb * J->kdim * CB, next[1] = next[0] + J->kdim * CB;
        int64_t lines[2], per_tile[2];
        for (int h = 0; h < 2; h++) {
            lines[h] = next[h] < w_end ? min64(KC, (w_end - next[h]) / CB) : 0;
            per_tile[h] = (lines[h] + ntiles - 1) / ntiles;
        }
        tile_args A = {off, &edges, k0, kc, w + k0 * CB, w + (J->kdim + k0) * CB, nb, k0 == 0};
        for (int64_t t = 0, i = 0; t < cnt; t += TW, i++) {
            for (int h = 0; h < 2; h++)
                for (int64_t l = i * per_tile[h]; l < min64(lines[h], (i + 1) * per_tile[h]); l++)
                    _mm_prefetch((const char *)(next[h] + l * CB), _MM_HINT_T0);
            if (J->in_place)
                run_tile_in_place(g, xg, p0 + t, &A, sums + t * CW);
            else
                run_tile(g, J->xg.pw, xg, p0 + t, p0 + cnt - 1, &A, sums + t * CW);
        }
    }
    int64_t row0 = gi * g->mg + cb * CB, ybase = (n * g->m + row0) * J->npos;
    store_ctx S = {g,
                   J->npos,
                   min64(CW, g->mg - cb * CB),
                   J->bias ? J->bias + row0 : NULL,
                   J->res ? J->res + ybase : NULL,
                   J->y + ybase};
    for (int64_t t = 0; t < cnt; t += 8)
        for (int c0 = 0; c0 < CW && c0 < S.rows; c0 += 8)
            store8(&S, sums + t * CW, p0 + t, min64(8, cnt - t), c0);
}

/* Tasks [begin, end), position-major: task t is channel pair t % ntp of
 * position chunk (t / ntp) % n_chunks.  With the pool's claim order (the
 * caller takes the first tasks, a worker the last) each thread computes a
 * band of output rows for every channel, as the Winograd, rows and pooling
 * kernels split theirs, so the next layer reads its rows from its own
 * core; chunk-major, the bench CNN's 64 -> 128 layer at batch 1 gave each
 * thread half the channels of every row (vCPUs sharing no L3: cnn b1 p50
 * 2-5% lower this way; sharing one, unchanged). */
static void direct_tasks(void *arg, int64_t begin, int64_t end) {
    const direct_job *J = arg;
    for (int64_t t = begin; t < end; t++) {
        int64_t tp = t % J->ntp, rest = t / J->ntp, chunk = rest % J->n_chunks;
        int64_t p0 = chunk * J->chunk;
        direct_chunk(J, rest / J->n_chunks, tp, p0, min64(J->chunk, J->npos - p0));
    }
}

/* Positions per task: CHUNK, or when the threads would otherwise idle
 * fewer -- a multiple of TW, the positions cut in equal chunks (the bench
 * CNN's 3x3/2 layers at batch 1: 256 positions as 4 x 64, not 3 x 72 + 40;
 * 64 as 2 x 32, not 48 + 16). */
static int64_t chunk_positions(const inf__conv2d *g, int64_t images, int64_t ntp, int64_t npos, int threads) {
    int64_t want = 4 * threads, per = images * g->group * ntp;
    if (threads == 1 || per * ((npos + CHUNK - 1) / CHUNK) >= want) return CHUNK;
    int64_t n_chunks = (want + per - 1) / per, chunk = (npos + n_chunks - 1) / n_chunks;
    return min64(CHUNK, (chunk + TW - 1) / TW * TW);
}

/* Padding needed, but read in place: one thread, stride 1 or 2 along the
 * row, rows of whole tiles (ow a multiple of 8; chunks are too), no tap
 * right of or below the image, left of it only at a row's first position
 * (pl <= sw), above it only in the first output row (pt <= sh).
 * At 2+ threads only when a row holds more than one tile (ow >= 16), so
 * that most tiles are interior ones: bench CNN, batch 1, 2 threads,
 * in-process A/B against the padded copy (bench/bench_ab, both orders,
 * session 21): the 32 -> 64 layer (ow = 16) in place 0.97-0.98 of the
 * whole model's p50 with the vCPUs sharing an L3 or not; the 64 -> 128
 * layer too (ow = 8: every tile a row's first, masked) took that gain back
 * (both: 0.98-1.01 with a shared L3, 1.02-1.03 without; session 20: the
 * 64 -> 128 node 48.2 -> 54.0 us without one). */
bool inf__conv2d_direct_avx512_in_place(const inf__conv2d *g, int threads) {
    return (threads == 1 || g->ow >= 2 * TW) && inf__conv2d_input_geom(g).pad && (g->sw == 1 || g->sw == 2) &&
           g->ow % TW == 0 && g->oh > 0 && g->pl <= g->sw && g->pt <= g->sh && g->kh * g->kw <= MAX_TAPS &&
           (g->ow - 1) * g->sw - g->pl + (g->kw - 1) * g->dw < g->iw &&
           (g->oh - 1) * g->sh - g->pt + (g->kh - 1) * g->dh < g->ih;
}

void inf__conv2d_direct_f32_avx512(inf__pool *pool, const inf__conv2d *g, const float *x, const float *wp,
                                   const float *bias, const float *res, float *scratch, float *y) {
    direct_job J = {.g = g,
                    .xg = inf__conv2d_input_geom(g),
                    .wp = wp,
                    .bias = bias,
                    .kdim = g->cg * g->kh * g->kw,
                    .npos = g->oh * g->ow,
                    .ncb = (g->mg + CB - 1) / CB,
                    .w_floats = inf__conv2d_direct_w_floats(g->m, g->group, g->cg * g->kh * g->kw)};
    if (J.kdim <= 0 || J.npos <= 0 || g->mg <= 0) return;
    J.ntp = (J.ncb + 1) / 2;
    J.in_place = inf__conv2d_direct_avx512_in_place(g, inf__pool_size(pool));
    if (J.in_place) J.xg = (inf__conv2d_input){.ph = g->ih, .pw = g->iw, .per_pass = g->n, .pad = false};
    int64_t per_pass = J.xg.per_pass;
    J.chunk = chunk_positions(g, per_pass, J.ntp, J.npos, inf__pool_size(pool));
    J.n_chunks = (J.npos + J.chunk - 1) / J.chunk;
    int64_t work = J.chunk * CW * J.kdim; /* multiply-adds per task */
    for (int64_t n0 = 0; n0 < g->n; n0 += per_pass) {
        int64_t imgs = min64(per_pass, g->n - n0);
        J.x = J.in_place ? x + n0 * g->c * g->ih * g->iw : inf__conv2d_input_pass(pool, g, &J.xg, x, n0, imgs, scratch);
        J.y = y + n0 * g->m * J.npos;
        J.res = res ? res + n0 * g->m * J.npos : NULL;
        inf__pool_range(pool, imgs * g->group * J.ntp * J.n_chunks, work >= 65536 ? 1 : 65536 / (work + 1) + 1,
                        direct_tasks, &J);
    }
}

#endif /* x86-64 with AVX-512 */
