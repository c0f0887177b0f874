/*
 * winograd_geom.h -- what the Winograd convolution kernels share
 * (conv_winograd_avx2.c, conv_winograd_avx512.c): the tile and block
 * geometry, the scratch layout of a slot, and the job.  Both widths use
 * the same geometry (so inf__conv2d_winograd_scratch_floats sizes either)
 * and the same U packing (the GEMM's B panels).
 *
 * Tiles: 2 and 4 are F(2x2,3x3) and F(4x4,3x3) at stride 1;
 * INF_WINOGRAD_S2 is F(2x2,3x3) at stride 2, the sum of the four stride-1
 * convolutions over the input's even/odd row and column phases (2x2, 2x1,
 * 1x2 and 1x1 sub-kernels): per dimension F(2,2) on the taps 0 and 2 and
 * F(2,1) on the tap 1, 5 input points from a 5-wide tile (step 4), of
 * which the tap 1's two share A^T's columns with F(2,2)'s outer points, so
 * their products are summed inside the GEMM (S2 below): 25 input points,
 * 9 output points, 25 / 36 of the direct kernel's multiply-adds.
 */
#ifndef INF_OPS_X86_WINOGRAD_GEOM_H
#define INF_OPS_X86_WINOGRAD_GEOM_H

#include <math.h>
#include <stdint.h>

#include "ops/ops.h"

enum {
    MAX_A = 6,              /* input tile side for F(4x4) */
    MAX_NE = MAX_A * MAX_A, /* transform points */
    MAX_TILES = 144,        /* the GEMM reads A (V) in place up to 144 rows */
    GEMM_NR = 16,           /* the GEMM's packed panel width */
};

static inline int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }
static inline int64_t max64(int64_t a, int64_t b) { return a > b ? a : b; }
static inline int64_t round_up(int64_t v, int64_t q) { return (v + q - 1) / q * q; }

/* ---- geometry ---- */

typedef struct wino_geom {
    int m, a, ne, s, nm;            /* output tile side, input tile side, points of V, stride, points of M */
    int64_t cp, kp, ldv;            /* C and K rounded up to 8; V's row stride */
    int64_t tiles_x, tiles_y, rows; /* tiles per row and column; tile rows in all images */
    int64_t rpb, tmax;              /* tile rows and tiles per block */
    int64_t n_blocks, n_slots;
    int64_t pw, wo; /* staged input width, staged output width */
    int64_t xs_floats, v_floats, m_floats, o_floats, slot_floats;
} wino_geom;

/* Tiles per block: as many as keep V and M in L2 (inf__blocking's
 * winograd_block_bytes: 256 KiB from 512 KiB of L2 up), but at
 * least 2 sqrt(U / (V + M per tile)): U is streamed once per block, so with
 * many channels (512 x 512: U 16 MiB for F(2x2), V + M 64 KiB a tile) a
 * block of a few tiles moves far more U than the V and M it would spill.
 * 512 x 512 on 7x7, F(2x2), batch 1: 4 tiles a block ran 2.8-3x the direct
 * kernel's time, 16 tiles (the whole image) 1.0x; batch 8: 32 tiles 0.7x
 * (bench/bench_conv.c).  Up to 128 x 128 channels (the bench CNN) the L2
 * term is the larger one.  The GEMM's sum per element does not depend on
 * the block, so neither do the results. */
static inline int64_t block_tiles(int ne, int nm, int64_t c, int64_t k, int64_t cp) {
    double vm = ((double)ne * (double)cp + (double)nm * (double)k) * 4,
           u = (double)ne * (double)c * (double)round_up(k, GEMM_NR) * 4;
    inf__blocking bl;
    inf__blocking_get(&bl);
    int64_t l2 = (int64_t)((double)bl.winograd_block_bytes / vm), stream = (int64_t)(2 * sqrt(u / vm));
    return max64(1, max64(l2, stream));
}

/* ---- stride 2 (INF_WINOGRAD_S2): V's and M's layout ----
 * One dimension: input point p of the 5-wide tile d becomes
 *     p:      0        1     2        3     4
 *     V:   d0 - d2     d2    d4 - d2  d1    d3
 *     U:   g0       g0 + g2  g2       g1    g1
 *     goes to output point  0  1  2  0  2   (S2_OUT: y0 = o0 + o1,
 *                                            y1 = o1 + o2)
 * so output point 0 sums the products of input points 0 and 3, point 2
 * those of 2 and 4.  In 2-D each of the 9 output points P = (pi, pj) is
 * one GEMM whose inner dimension stacks its input points' channels
 * (S2_MULT[pi] x S2_MULT[pj] blocks of cp: 4, 2 or 1): M[P] = [V of its
 * points] x [their U stacked]. */
enum { S2_A = 5, S2_P = 9, S2_U1 = 4 };
static const int8_t S2_OUT[S2_A] = {0, 1, 2, 0, 2};  /* output point of input point p */
static const int8_t S2_SUB[S2_A] = {0, 0, 0, 1, 1};  /* its block among that point's */
static const int8_t S2_MULT[3] = {2, 1, 2};          /* input points per output point */
static const int8_t S2_UROW[S2_A] = {0, 1, 2, 3, 3}; /* its row of GS2 (conv_winograd_avx2.c) */

/* Blocks of cp channels in output point P's inner dimension. */
static inline int s2_blocks(int P) {
    return S2_MULT[P / 3] * S2_MULT[P % 3];
}

/* V's row stride for output point P (rows 4 KiB apart would be packed by the GEMM). */
static inline int64_t s2_ld(int64_t cp, int P) {
    int64_t n = s2_blocks(P) * cp;
    return n % 1024 ? n : n + 8;
}

/* Where input point (i, j) of tile t of T goes in V: v + pos[i*5+j] + t * ld[i*5+j]. */
static inline void s2_v_layout(int64_t cp, int64_t T, int64_t pos[S2_A * S2_A], int64_t ld[S2_A * S2_A]) {
    int64_t base[S2_P], b = 0;
    for (int P = 0; P < S2_P; P++)
        base[P] = b, b += T * s2_ld(cp, P);
    for (int i = 0; i < S2_A; i++)
        for (int j = 0; j < S2_A; j++) {
            int P = S2_OUT[i] * 3 + S2_OUT[j];
            pos[i * S2_A + j] = base[P] + (S2_SUB[i] * S2_MULT[S2_OUT[j]] + S2_SUB[j]) * cp;
            ld[i * S2_A + j] = s2_ld(cp, P);
        }
}

/* Packed U floats (the GEMM's B) of output point P, and of all 9. */
static inline int64_t s2_u_floats(int64_t cp, int64_t k, int P) {
    return inf__ops_sgemm_packed_floats(s2_blocks(P) * cp, k);
}
static inline int64_t s2_u_total(int64_t cp, int64_t k) {
    int64_t n = 0;
    for (int P = 0; P < S2_P; P++)
        n += s2_u_floats(cp, k, P);
    return n;
}

static inline wino_geom wino_geometry(int tile, const inf__conv2d *g, int threads) {
    wino_geom G;
    bool s2 = tile == INF_WINOGRAD_S2;
    G.m = s2 ? 2 : tile, G.s = s2 ? 2 : 1, G.a = s2 ? S2_A : tile + 2, G.ne = G.a * G.a, G.nm = s2 ? S2_P : G.ne;
    G.cp = round_up(g->c, 8), G.kp = round_up(g->m, 8);
    G.ldv = G.cp * 4 % 4096 ? G.cp : G.cp + 8; /* rows 4 KiB apart would be packed by the GEMM */
    G.tiles_x = (g->ow + G.m - 1) / G.m, G.tiles_y = (g->oh + G.m - 1) / G.m;
    G.rows = g->n * G.tiles_y;
    int64_t budget = min64(MAX_TILES, block_tiles(G.ne, G.nm, g->c, g->m, G.cp));
    G.rpb = max64(1, budget / G.tiles_x);
    if (threads > 1) G.rpb = min64(G.rpb, (G.rows + threads - 1) / threads);
    G.rpb = max64(1, min64(G.rpb, G.rows));
    G.n_blocks = (G.rows + G.rpb - 1) / G.rpb;
    /* a whole number of blocks per thread: the bench CNN's 32x32 layer at
     * batch 1 (8 tile rows, 3 a block) gave one thread 5 rows, the other 3 */
    if (threads > 1 && G.n_blocks % threads) G.n_blocks = min64(G.rows, round_up(G.n_blocks, threads));
    G.rpb = (G.rows + G.n_blocks - 1) / G.n_blocks; /* blocks of even size: no short last one */
    G.n_blocks = (G.rows + G.rpb - 1) / G.rpb;
    G.tmax = G.rpb * G.tiles_x;
    G.n_slots = max64(1, min64(threads, G.n_blocks));
    G.wo = G.tiles_x * G.m, G.pw = G.wo * G.s + G.a - G.m * G.s; /* staged: every tile's a columns */
    G.xs_floats = round_up(G.a * G.pw * G.cp, 16);
    G.v_floats = round_up(G.tmax * (s2 ? (G.ne * G.cp + S2_P * 8) : G.ne * G.ldv), 16); /* s2: s2_ld's slack */
    G.m_floats = round_up(G.nm * G.tmax * g->m + 8, 16); /* + 8: the last 8-channel group reads past K */
    G.o_floats = round_up(G.m * G.wo * G.kp, 16);
    G.slot_floats = G.xs_floats + G.v_floats + G.m_floats + G.o_floats;
    return G;
}

/* Slot s runs blocks [wino_slot_block(G, s), wino_slot_block(G, s + 1)):
 * a contiguous band of tile rows, so with the pool's claim order
 * (threadpool.c: the caller takes the first slots, the workers the last)
 * each thread keeps the same rows of the image from layer to layer, as the
 * row-split stem, pooling and direct kernels do -- dealt round-robin, a
 * thread's rows alternated with the other's and half of each layer's
 * input came from the other core. */
static inline int64_t wino_slot_block(const wino_geom *G, int64_t s) { return s * G->n_blocks / G->n_slots; }

typedef struct wino_job {
    const inf__conv2d *g;
    wino_geom G;
    const float *x, *up, *bias, *res;
    float *y, *scratch;
    inf__pool *pool;  /* the slots' persistent scratch (inf__pool_slot_workspace) */
    int64_t u_floats; /* packed U floats per point */
    bool prefetch;    /* X's and Y's rows ahead (winograd_block.h: X or Y beyond L2) */
} wino_job;

/* The stride-2 block's GEMMs: per output point P, M's T rows = V's rows
 * (its input points' channels side by side) x their U stacked. */
static inline void wino_s2_gemms(const wino_job *J, const float *v, float *mm, int64_t T) {
    const inf__conv2d *g = J->g;
    int64_t cp = J->G.cp;
    const float *up = J->up;
    for (int P = 0; P < S2_P; P++) {
        inf__ops_sgemm_packed_avx2(NULL, false, T, g->m, s2_blocks(P) * cp, 1.0f, v, s2_ld(cp, P), up, 0.0f,
                                   mm + P * T * g->m, g->m);
        v += T * s2_ld(cp, P), up += s2_u_floats(cp, g->m, P);
    }
}

#endif /* INF_OPS_X86_WINOGRAD_GEOM_H */
