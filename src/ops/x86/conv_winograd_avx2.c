/*
 * conv_winograd_avx2.c -- Winograd convolution, F(2x2, 3x3) and F(4x4, 3x3),
 * for float32 2-D Convs with a 3x3 kernel, stride 1, dilation 1 and one
 * group, and F(2x2, 3x3) at stride 2 (INF_WINOGRAD_S2: the input's four
 * even/odd phases, winograd_geom.h), with AVX2/FMA.
 *
 * Called from Conv / ConvAdd (ops/ref/conv.c, the variant selector
 * avx2_variant) when inf__conv2d_winograd_tile(g) names a tile size: the
 * ResNet-style 3x3 convs with enough channels.  Built with -mavx2 -mfma
 * (CMake: *_avx2.c).
 *
 * DESIGN (Lavin & Gray, "Fast Algorithms for Convolutional Neural
 * Networks"): Y is cut into m x m output tiles (m = 2 or 4), each read from
 * an a x a input tile (a = m + 2, overlapping by 2).  Per tile and channel
 * the input becomes V = B^T d B, per output and input channel the kernel
 * U = G g G^T, and Y's tile is A^T M A with
 *     M[e][t][k] = sum_c V[e][t][c] * U[e][c][k]    for each of the a*a points e:
 * a*a GEMMs of [tiles x C] x [C x K] instead of 9 multiply-adds per output.
 *   - U is computed (in double, rounded once) and packed at load, as the
 *     B operand of the AVX2 GEMM (ops/x86/gemm_avx2.c: per point e, C rows
 *     of 16-column panels, [c][16], channels past K zero), so the hot path
 *     runs inf__ops_sgemm_packed_avx2 (its 6x16 micro-kernel, V's rows read
 *     in place) and never touches W.
 *   - Work goes in blocks of whole tile rows (over the flattened image x
 *     tile-row index, so a block may span small images), sized so that V and
 *     M of a block fit in about 256 KiB of L2 -- or larger for wide layers,
 *     where streaming U per block costs more (block_tiles).  A block: per
 *     tile row, its a input rows are staged channel-last ([row][x][c],
 *     zero-padded, 8x8 transposes) and every tile transformed with 8
 *     channels per ymm into V [e][tile][c]; then the a*a GEMMs into M
 *     [e][tile][k]; then per tile
 *     row the output transform (8 output channels per ymm) into a
 *     channel-last row buffer, turned back into Y's rows by 8x8 transposes
 *     that add the bias, the residual (ConvAdd) and apply ReLU/Clip.
 *   - Threads: the blocks are cut into min(threads, blocks) contiguous
 *     bands of tile rows, one a slot (wino_slot_block), each slot with its
 *     own scratch: the pool's persistent buffer for that slot
 *     (inf__pool_slot_workspace: it stays in the cache of the core that
 *     runs the slot), else its part of the caller's scratch
 *     (inf__conv2d_winograd_scratch_floats); one thread runs everything
 *     inline.  The GEMMs run inside the slot with no pool.
 *   - Stride 2 (INF_WINOGRAD_S2): the same blocks, staging and store with
 *     5 x 5 input tiles 4 apart; per dimension the taps 0 and 2 through
 *     F(2,2) (d0 - d2, d2, d4 - d2) and the tap 1 through F(2,1) (d1, d3),
 *     whose products join F(2,2)'s outer points inside the GEMM: 9 GEMMs,
 *     one per output point, of [tiles x (4, 2 or 1) C] x [.. x K] (V's
 *     row holds the point's input points side by side, U the matching
 *     kernels stacked; winograd_geom.h), then A^T M A of F(2,2).  25
 *     multiply-adds per 4 outputs and channel pair instead of 36, U 25/9
 *     of W; the transforms only add.
 *   - Bits: a Y element depends only on its own tile's input, U, the bias
 *     and the residual: the transforms are per tile, and the GEMM sums each
 *     M element over C in a fixed order whatever its row count or the row's
 *     place in it (its batch invariance, DESIGN.md section 1).  So results
 *     do not depend on the batch, the block split or the thread count.  They
 *     differ from the direct kernel's in the last bits: Winograd's error
 *     grows with the tile (about 1e-6 relative to sum |w||x| for F(2x2),
 *     1e-5 for F(4x4); tests/kernels/test_conv_winograd.c bounds it).
 */
#if defined(__x86_64__) && defined(__AVX2__) && defined(__FMA__)

#include <immintrin.h>
#include <math.h>
#include <string.h>

#include "ops/ops.h"
#include "ops/x86/transpose_avx2.h"
#include "ops/x86/winograd_geom.h"

/* Whether INF_WINOGRAD_S2 computes g: 3x3, stride 2, dilation 1, one
 * group, non-negative pads with every input column and row inside the
 * staged tiles (2 ow + 1 and 2 oh + 1 of them; checked when the output
 * size is known). */
bool inf__conv2d_winograd_s2_fits(const inf__conv2d *g) {
    if (g->group != 1 || g->kh != 3 || g->kw != 3 || g->sh != 2 || g->sw != 2 || g->dh != 1 || g->dw != 1)
        return false;
    return g->oh <= 0 || (g->pt >= 0 && g->pl >= 0 && 2 * g->oh + 1 >= g->ih + g->pt && 2 * g->ow + 1 >= g->iw + g->pl);
}

/* Whether it pays against the direct kernel: at least 32 input and output
 * channels (the transforms cost per channel, the multiplies saved per
 * pair: 16 -> 32 on 32x32 ran 1.3x the AVX-512 direct kernel's time, 32 ->
 * 64 0.88-0.96x) and U within L2 (inf__blocking's winograd_s2_u_bytes;
 * streamed once per block).  bench/bench_conv, batch 1, 1 thread, Zen 5;
 * bench/RESULTS.md "Session 23, stride-2 Winograd". */
static bool winograd_s2_pays(const inf__conv2d *g) {
    inf__blocking bl;
    inf__blocking_get(&bl);
    return g->cg >= 32 && g->mg >= 32 &&
           inf__conv2d_winograd_w_floats(INF_WINOGRAD_S2, g->cg, g->mg) * 4 <= bl.winograd_s2_u_bytes;
}

/* Which tile (2 or 4) a Conv takes, 0 when it is not one for Winograd:
 * 3x3, stride 1, dilation 1, one group, non-negative pads (checked when the
 * output size is known) and at least 16 input and output channels (fewer:
 * the transforms cost more than the multiplies saved; 8 -> 16 channels at
 * 56x56 ran 12 % slower than the direct kernel).  F(4x4) up to 64 x 64
 * channels, F(2x2) above: U is (a/3)^2 times W (4x for F(4x4)) and is
 * streamed from L3 once per block of tiles, whose size the L2 budget
 * shrinks as the channels grow.  Measured on the bench CNN (1 thread,
 * whole model, new/base time): every 3x3 at F(2x2) 0.79 (batch 1) and
 * 0.79 (batch 64); F(4x4) for all three layers (32, 64, 128 channels)
 * 0.75 / 0.75; F(4x4) up to 64 channels and F(2x2) for 128: 0.69 / 0.69.
 * Alone, 256 x 256 channels on 7x7 / 14x14 ran F(4x4) at 0.4-0.7x the
 * direct kernel's speed, F(2x2) at 1.0-1.3x. */
int inf__conv2d_winograd_tile(const inf__conv2d *g) {
    if (g->group != 1 || g->kh != 3 || g->kw != 3 || g->dh != 1 || g->dw != 1)
        return 0;
    if (g->sh == 2 && g->sw == 2)
        return inf__conv2d_winograd_s2_fits(g) && winograd_s2_pays(g) ? INF_WINOGRAD_S2 : 0;
    if (g->sh != 1 || g->sw != 1)
        return 0;
    if (g->oh > 0 && (g->pt < 0 || g->pl < 0 || g->oh + 2 < g->ih + g->pt || g->ow + 2 < g->iw + g->pl)) return 0;
    if (g->cg < 16 || g->mg < 16) return 0;
    return g->cg * g->mg <= 64 * 64 ? 4 : 2;
}

/* ---- weights: U = G g G^T, packed as the GEMM's B ---- */

static const double G2[4][3] = {{1, 0, 0}, {0.5, 0.5, 0.5}, {0.5, -0.5, 0.5}, {0, 0, 1}};
static const double GS2[4][3] = {{1, 0, 0}, {1, 0, 1}, {0, 0, 1}, {0, 1, 0}}; /* stride 2: g0, g0 + g2, g2, g1 */
static const double G4[6][3] = {{1.0 / 4, 0, 0},           {-1.0 / 6, -1.0 / 6, -1.0 / 6},
                                {-1.0 / 6, 1.0 / 6, -1.0 / 6}, {1.0 / 24, 1.0 / 12, 1.0 / 6},
                                {1.0 / 24, -1.0 / 12, 1.0 / 6}, {0, 0, 1}};

/* u[i * A + j] = (G g G^T)[i][j] for four 3x3 kernels at once (lane l:
 * the kernel at g + l * 9, row-major), in double. */
static inline __attribute__((always_inline)) void transform_kernels4(const int A, const double (*G)[3], const float *g,
                                                                     __m256d *u) {
    __m256d x[9], t[MAX_A][3];
    for (int r = 0; r < 9; r++) x[r] = _mm256_setr_pd(g[r], g[9 + r], g[18 + r], g[27 + r]);
    for (int i = 0; i < A; i++)
        for (int j = 0; j < 3; j++)
            t[i][j] = _mm256_add_pd(_mm256_add_pd(_mm256_mul_pd(_mm256_set1_pd(G[i][0]), x[j]),
                                                  _mm256_mul_pd(_mm256_set1_pd(G[i][1]), x[3 + j])),
                                    _mm256_mul_pd(_mm256_set1_pd(G[i][2]), x[6 + j]));
    for (int i = 0; i < A; i++)
        for (int j = 0; j < A; j++)
            u[i * A + j] = _mm256_add_pd(_mm256_add_pd(_mm256_mul_pd(t[i][0], _mm256_set1_pd(G[j][0])),
                                                       _mm256_mul_pd(t[i][1], _mm256_set1_pd(G[j][1]))),
                                         _mm256_mul_pd(t[i][2], _mm256_set1_pd(G[j][2])));
}

int64_t inf__conv2d_winograd_w_floats(int tile, int64_t c, int64_t k) {
    if (tile == INF_WINOGRAD_S2)
        return s2_u_total(round_up(c, 8), k);
    return (int64_t)(tile + 2) * (tile + 2) * inf__ops_sgemm_packed_floats(c, k);
}

/* U for output channel ko and input channels [ci, ci + n) (n <= 4) into
 * the packed panels: dst[e * per + ci * 16] (dst at ko's column). */
static void pack_kernels(int tile, const float *w, int64_t n, int64_t per, float *dst) {
    float g[36] = {0};
    memcpy(g, w, (size_t)(n * 9) * sizeof(float));
    __m256d u[MAX_NE];
    if (tile == 2) transform_kernels4(4, G2, g, u);
    else transform_kernels4(6, G4, g, u);
    for (int e = 0; e < (tile + 2) * (tile + 2); e++) {
        float lanes[4];
        _mm_storeu_ps(lanes, _mm256_cvtpd_ps(u[e]));
        for (int64_t l = 0; l < n; l++) dst[e * per + l * GEMM_NR] = lanes[l];
    }
}

/* INF_WINOGRAD_S2's U (winograd_geom.h): per output point P a
 * [blocks x cp] x K B operand, input point (i, j)'s block the 4 x 4
 * transform GS2 g GS2^T at (S2_UROW[i], S2_UROW[j]); rows of channels
 * past C and columns past K zero. */
static void pack_w_s2(int64_t c, int64_t k, const float *w, float *dst) {
    int64_t cp = round_up(c, 8), at[S2_P];
    memset(dst, 0, (size_t)s2_u_total(cp, k) * sizeof(float));
    for (int P = 0, n = 0; P < S2_P; n += (int)s2_u_floats(cp, k, P), P++)
        at[P] = n;
    for (int64_t ko = 0; ko < k; ko++)
        for (int64_t ci = 0; ci < c; ci += 4) {
            float g[36] = {0}, lanes[4];
            memcpy(g, w + (ko * c + ci) * 9, (size_t)(min64(4, c - ci) * 9) * sizeof(float));
            __m256d u[16];
            transform_kernels4(4, GS2, g, u);
            for (int i = 0; i < S2_A; i++)
                for (int j = 0; j < S2_A; j++) {
                    int P = S2_OUT[i] * 3 + S2_OUT[j];
                    int64_t rows = s2_blocks(P) * cp, row = (S2_SUB[i] * S2_MULT[S2_OUT[j]] + S2_SUB[j]) * cp + ci;
                    float *d = dst + at[P] + (ko / GEMM_NR) * rows * GEMM_NR + row * GEMM_NR + ko % GEMM_NR;
                    _mm_storeu_ps(lanes, _mm256_cvtpd_ps(u[S2_UROW[i] * 4 + S2_UROW[j]]));
                    for (int64_t l = 0; l < min64(4, c - ci); l++)
                        d[l * GEMM_NR] = lanes[l];
                }
        }
}

/* dst[e][k / 16][c][k % 16] = U[e] for output channel k < K, zero up to the
 * panel's end: per point e, the [C x K] B operand of
 * inf__ops_sgemm_packed_avx2, per floats apart. */
void inf__conv2d_winograd_pack_w(int tile, int64_t c, int64_t k, const float *w, float *dst) {
    if (tile == INF_WINOGRAD_S2) {
        pack_w_s2(c, k, w, dst);
        return;
    }
    int ne = (tile + 2) * (tile + 2);
    int64_t per = inf__ops_sgemm_packed_floats(c, k), kpad = round_up(k, GEMM_NR);
    for (int64_t ko = 0; ko < kpad; ko++) {
        float *d = dst + (ko / GEMM_NR) * c * GEMM_NR + ko % GEMM_NR;
        if (ko >= k) {
            for (int e = 0; e < ne; e++)
                for (int64_t ci = 0; ci < c; ci++) d[e * per + ci * GEMM_NR] = 0.0f;
            continue;
        }
        for (int64_t ci = 0; ci < c; ci += 4)
            pack_kernels(tile, w + (ko * c + ci) * 9, min64(4, c - ci), per, d + ci * GEMM_NR);
    }
}

int64_t inf__conv2d_winograd_scratch_floats(int tile, const inf__conv2d *g, int threads) {
    wino_geom G = wino_geometry(tile, g, threads);
    return G.n_slots * G.slot_floats;
}

/* ---- input: stage a tile row channel-last, transform its tiles ---- */

/* d[x * ldd + q] = src[q * plane + x] for x < cols, q < 8 (channels past
 * nc zero): 8x8 transposes, a masked tail. */
static void stage_channels(const float *src, int64_t plane, int64_t nc, int64_t cols, float *d, int64_t ldd) {
    for (int64_t x = 0; x < cols; x += 8) {
        int64_t cnt = min64(8, cols - x);
        __m256i mask = inf__avx2_lanes(cnt);
        __m256 r[8];
        for (int q = 0; q < 8; q++)
            r[q] = q >= nc        ? _mm256_setzero_ps()
                   : cnt == 8     ? _mm256_loadu_ps(src + q * plane + x)
                                  : _mm256_maskload_ps(src + q * plane + x, mask);
        inf__avx2_transpose8(r);
        for (int q = 0; q < cnt; q++) _mm256_storeu_ps(d + (x + q) * ldd, r[q]);
    }
}

static void zero_floats(float *d, int64_t n) {
    for (int64_t i = 0; i < n; i += 8) _mm256_storeu_ps(d + i, _mm256_setzero_ps()); /* n: a multiple of 8 */
}

/* d[x * cp + q] = row[x * c + q] for x < cols, q < c, zero for c <= q < cp:
 * a channels-last X row (INF_NHWC_X) is already the staged layout, only
 * its channel stride may differ. */
static void stage_channels_last(const float *row, int64_t c, int64_t cp, int64_t cols, float *d) {
    for (int64_t x = 0; x < cols; x++)
        for (int64_t c0 = 0; c0 < cp; c0 += 8) {
            __m256 v = c - c0 >= 8 ? _mm256_loadu_ps(row + x * c + c0)
                       : c > c0    ? _mm256_maskload_ps(row + x * c + c0, inf__avx2_lanes(c - c0))
                                   : _mm256_setzero_ps();
            _mm256_storeu_ps(d + x * cp + c0, v);
        }
}

/* xs[i][x][c] = X[n][c][ty*m - pt + i][x - pl], zero outside X. */
static void stage_row(const wino_job *J, int64_t n, int64_t ty, float *xs) {
    const inf__conv2d *g = J->g;
    const wino_geom *G = &J->G;
    int64_t cp = G->cp, plane = g->ih * g->iw, x0 = g->pl, x1 = g->pl + g->iw;
    for (int i = 0; i < G->a; i++) {
        float *d = xs + i * G->pw * cp;
        int64_t iy = ty * G->m * G->s - g->pt + i;
        if (iy < 0 || iy >= g->ih) {
            zero_floats(d, G->pw * cp);
            continue;
        }
        zero_floats(d, x0 * cp);
        zero_floats(d + x1 * cp, (G->pw - x1) * cp);
        if (g->nhwc & INF_NHWC_X) {
            stage_channels_last(J->x + (n * g->ih + iy) * g->iw * g->c, g->c, cp, g->iw, d + x0 * cp);
            continue;
        }
        const float *src = J->x + n * g->c * plane + iy * g->iw;
        for (int64_t c0 = 0; c0 < cp; c0 += 8)
            stage_channels(src + c0 * plane, plane, g->c - c0, g->iw, d + x0 * cp + c0, cp);
    }
}

/* One dimension of B^T d: a values s[0], s[ss], ... into o[0], o[os], ... */
static inline __attribute__((always_inline)) void in_1d(const int A, const __m256 *s, int ss, __m256 *o, int os) {
    if (A == 4) {
        __m256 d0 = s[0], d1 = s[ss], d2 = s[2 * ss], d3 = s[3 * ss];
        o[0] = _mm256_sub_ps(d0, d2), o[os] = _mm256_add_ps(d1, d2);
        o[2 * os] = _mm256_sub_ps(d2, d1), o[3 * os] = _mm256_sub_ps(d1, d3);
        return;
    }
    __m256 d0 = s[0], d1 = s[ss], d2 = s[2 * ss], d3 = s[3 * ss], d4 = s[4 * ss], d5 = s[5 * ss];
    __m256 four = _mm256_set1_ps(4.0f), five = _mm256_set1_ps(5.0f), two = _mm256_set1_ps(2.0f);
    __m256 d42 = _mm256_sub_ps(d4, d2);
    o[0] = _mm256_fmadd_ps(four, d0, _mm256_fnmadd_ps(five, d2, d4));
    o[os] = _mm256_fnmadd_ps(four, _mm256_add_ps(d1, d2), _mm256_add_ps(d3, d4));
    o[2 * os] = _mm256_fmadd_ps(four, _mm256_sub_ps(d1, d2), _mm256_sub_ps(d4, d3));
    o[3 * os] = _mm256_fmadd_ps(two, _mm256_sub_ps(d3, d1), d42);
    o[4 * os] = _mm256_fmadd_ps(two, _mm256_sub_ps(d1, d3), d42);
    o[5 * os] = _mm256_fmadd_ps(four, d1, _mm256_fnmadd_ps(five, d3, d5));
}

/* V[e][t][c] for the tile at column tx of the staged row: B^T d B, 8
 * channels at a time. */
static inline __attribute__((always_inline)) void input_tile_a(const int A, const wino_geom *G, const float *xs,
                                                               int64_t tx, float *v, int64_t t) {
    for (int64_t c0 = 0; c0 < G->cp; c0 += 8) {
        __m256 d[MAX_NE], u[MAX_NE];
        const float *p = xs + tx * G->m * G->cp + c0;
        for (int i = 0; i < A; i++)
            for (int j = 0; j < A; j++) d[i * A + j] = _mm256_loadu_ps(p + (i * G->pw + j) * G->cp);
        for (int j = 0; j < A; j++) in_1d(A, d + j, A, u + j, A);
        for (int i = 0; i < A; i++) in_1d(A, u + i * A, 1, d + i * A, 1);
        for (int e = 0; e < A * A; e++) _mm256_storeu_ps(v + (e * G->tmax + t) * G->ldv + c0, d[e]);
    }
}

static void input_tile(const wino_geom *G, const float *xs, int64_t tx, float *v, int64_t t) {
    if (G->a == 4) input_tile_a(4, G, xs, tx, v, t);
    else input_tile_a(6, G, xs, tx, v, t);
}

/* The stride-2 transforms, 8 channels a ymm (cp is a multiple of 8: no mask). */
#define S2_VEC __m256
#define S2_LANES 8
#define S2_MASK_T int
#define S2_LANES_OF(n) ((int)(n))
#define S2_LOAD(k, p) ((void)(k), _mm256_loadu_ps(p))
#define S2_STORE(p, k, v) ((void)(k), _mm256_storeu_ps((p), (v)))
#define S2_ADD _mm256_add_ps
#define S2_SUB _mm256_sub_ps
#include "ops/x86/winograd_s2_tile.h"

/* ---- output: A^T M A per tile, then back to Y's rows ---- */

/* One dimension of A^T m: a values s[0], s[ss], ... into a - 2 values
 * o[0], o[os], ... */
static inline __attribute__((always_inline)) void out_1d(const int A, const __m256 *s, int ss, __m256 *o, int os) {
    if (A == 4) {
        __m256 m12 = _mm256_sub_ps(s[ss], s[2 * ss]);
        o[0] = _mm256_add_ps(_mm256_add_ps(s[0], s[ss]), s[2 * ss]);
        o[os] = _mm256_sub_ps(m12, s[3 * ss]);
        return;
    }
    __m256 p12 = _mm256_add_ps(s[ss], s[2 * ss]), n12 = _mm256_sub_ps(s[ss], s[2 * ss]);
    __m256 p34 = _mm256_add_ps(s[3 * ss], s[4 * ss]), n34 = _mm256_sub_ps(s[3 * ss], s[4 * ss]);
    o[0] = _mm256_add_ps(_mm256_add_ps(s[0], p12), p34);
    o[os] = _mm256_fmadd_ps(_mm256_set1_ps(2.0f), n34, n12);
    o[2 * os] = _mm256_fmadd_ps(_mm256_set1_ps(4.0f), p34, p12);
    o[3 * os] = _mm256_add_ps(_mm256_fmadd_ps(_mm256_set1_ps(8.0f), n34, n12), s[5 * ss]);
}

/* os[i][tx*m + q][k] = (A^T M A)[i][q] for the tile t, 8 channels at a
 * time (the last group reads past K into the next row or M's slack). */
static inline __attribute__((always_inline)) void output_tile_a(const int A, const wino_geom *G, const float *mm,
                                                                int64_t ldm, int64_t t, float *os, int64_t tx) {
    const int M = A - 2;
    for (int64_t k0 = 0; k0 < G->kp; k0 += 8) {
        __m256 d[MAX_NE], u[MAX_NE];
        for (int e = 0; e < A * A; e++) d[e] = _mm256_loadu_ps(mm + (e * G->tmax + t) * ldm + k0);
        for (int j = 0; j < A; j++) out_1d(A, d + j, A, u + j, A);
        for (int i = 0; i < M; i++) out_1d(A, u + i * A, 1, d + i * A, 1);
        for (int i = 0; i < M; i++)
            for (int q = 0; q < M; q++) _mm256_storeu_ps(os + (i * G->wo + tx * M + q) * G->kp + k0, d[i * A + q]);
    }
}

static void output_tile(const wino_geom *G, const float *mm, int64_t ldm, int64_t t, float *os, int64_t tx) {
    if (G->a == 4) output_tile_a(4, G, mm, ldm, t, os, tx);
    else output_tile_a(6, G, mm, ldm, t, os, tx);
}

/* The store's ReLU / Clip. */
static inline __m256 activate(const inf__conv2d *g, __m256 v) {
    if (g->act == INF_EPILOGUE_RELU) return _mm256_max_ps(v, _mm256_setzero_ps()); /* NaN -> 0, as Relu */
    if (g->act == INF_EPILOGUE_CLIP)
        return _mm256_min_ps(_mm256_set1_ps(g->hi), _mm256_max_ps(_mm256_set1_ps(g->lo), v));
    return v;
}

/* Y[off .. off + cnt) = act(v + bias[k] + res[off ...]); the residual's
 * lanes from rv when it is channels-last (transposed). */
static inline void store_out(const wino_job *J, __m256 v, int64_t k, int64_t off, int64_t cnt, __m256i mask,
                             const __m256 *rv) {
    if (J->bias) v = _mm256_add_ps(v, _mm256_broadcast_ss(J->bias + k));
    if (J->res)
        v = _mm256_add_ps(v, rv         ? *rv
                             : cnt == 8 ? _mm256_loadu_ps(J->res + off)
                                        : _mm256_maskload_ps(J->res + off, mask));
    v = activate(J->g, v);
    if (cnt == 8) _mm256_storeu_ps(J->y + off, v);
    else _mm256_maskstore_ps(J->y + off, mask, v);
}

/* 8 lanes of p, the first n (< 8: masked) or all. */
static inline __m256 load_first(const float *p, int64_t n) {
    return n >= 8 ? _mm256_loadu_ps(p) : _mm256_maskload_ps(p, inf__avx2_lanes(n));
}

/* Output row oy of image n into a channels-last Y (INF_NHWC_Y): orow's
 * [x][kp] is Y's row but for the channel stride.  The same operations per
 * element as store_out (+ bias, + residual, activation), so the same bits;
 * a channels-first residual is read 8 positions x 8 channels at a time and
 * transposed. */
static void store_row_channels_last(const wino_job *J, const float *orow, int64_t n, int64_t oy) {
    const inf__conv2d *g = J->g;
    int64_t kp = J->G.kp, m = g->m;
    float *yrow = J->y + (n * g->oh + oy) * g->ow * m;
    bool res_last = J->res && (g->nhwc & INF_NHWC_RES);
    for (int64_t ox0 = 0; ox0 < g->ow; ox0 += 8) {
        int64_t cnt = min64(8, g->ow - ox0);
        for (int64_t k0 = 0; k0 < m; k0 += 8) {
            int64_t nk = min64(8, m - k0);
            __m256 b = J->bias ? load_first(J->bias + k0, nk) : _mm256_setzero_ps(), r[8];
            if (J->res && !res_last) {
                for (int q = 0; q < 8; q++)
                    r[q] = q < nk ? load_first(J->res + ((n * m + k0 + q) * g->oh + oy) * g->ow + ox0, cnt)
                                  : _mm256_setzero_ps();
                inf__avx2_transpose8(r);
            }
            for (int64_t q = 0; q < cnt; q++) {
                int64_t at = (ox0 + q) * m + k0;
                __m256 v = _mm256_loadu_ps(orow + (ox0 + q) * kp + k0);
                if (J->bias) v = _mm256_add_ps(v, b);
                if (J->res)
                    v = _mm256_add_ps(v, res_last ? load_first(J->res + (n * g->oh + oy) * g->ow * m + at, nk) : r[q]);
                v = activate(g, v);
                if (nk == 8) _mm256_storeu_ps(yrow + at, v);
                else _mm256_maskstore_ps(yrow + at, inf__avx2_lanes(nk), v);
            }
        }
    }
}

/* Output row oy of image n from its staged row orow ([x][kp]). */
static void store_row(const wino_job *J, const float *orow, int64_t n, int64_t oy) {
    const inf__conv2d *g = J->g;
    int64_t kp = J->G.kp;
    if (g->nhwc & INF_NHWC_Y) {
        store_row_channels_last(J, orow, n, oy);
        return;
    }
    bool res_last = J->res && (g->nhwc & INF_NHWC_RES);
    for (int64_t ox = 0; ox < g->ow; ox += 8) {
        int64_t cnt = min64(8, g->ow - ox);
        __m256i mask = inf__avx2_lanes(cnt);
        for (int64_t k0 = 0; k0 < g->m; k0 += 8) {
            __m256 r[8], rr[8];
            for (int q = 0; q < 8; q++) r[q] = q < cnt ? _mm256_loadu_ps(orow + (ox + q) * kp + k0) : _mm256_setzero_ps();
            inf__avx2_transpose8(r);
            if (res_last) { /* the residual's 8 positions x 8 channels, to channel rows */
                for (int q = 0; q < 8; q++)
                    rr[q] = q < cnt ? load_first(J->res + ((n * g->oh + oy) * g->ow + ox + q) * g->m + k0, g->m - k0)
                                    : _mm256_setzero_ps();
                inf__avx2_transpose8(rr);
            }
            for (int64_t kk = 0; kk < 8 && k0 + kk < g->m; kk++)
                store_out(J, r[kk], k0 + kk, ((n * g->m + k0 + kk) * g->oh + oy) * g->ow + ox, cnt, mask,
                          res_last ? &rr[kk] : NULL);
        }
    }
}

/* ---- blocks: run_block, slot_tasks ---- */

#include "ops/x86/winograd_block.h"

void inf__conv2d_winograd_f32_avx2(inf__pool *pool, int tile, const inf__conv2d *g, const float *x,
                                   const float *up, const float *bias, const float *res, float *scratch,
                                   float *y) {
    if (g->n <= 0 || g->oh <= 0 || g->ow <= 0 || g->m <= 0 || g->c <= 0) return;
    wino_job J = {.g = g,
                  .G = wino_geometry(tile, g, inf__pool_size(pool)),
                  .x = x,
                  .up = up,
                  .bias = bias,
                  .res = res,
                  .y = y,
                  .scratch = scratch,
                  .pool = pool,
                  .u_floats = inf__ops_sgemm_packed_floats(g->c, g->m),
                  .prefetch = wino_prefetch_pays(g)};
    inf__pool_range(pool, J.G.n_slots, 1, slot_tasks, &J);
}

#endif /* x86-64 with AVX2 and FMA */
