/*
 * winograd_geom.h -- what the Winograd convolution kernels share
 * (conv_winograd_avx2.c, conv_winograd_avx512.c): the tile and block
 * geometry, the scratch layout of a slot, and the job.  Both widths use
 * the same geometry (so inf__conv2d_winograd_scratch_floats sizes either)
 * and the same U packing (the GEMM's B panels).
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
    int m, a, ne;                   /* output tile side, input tile side, points */
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
static inline int64_t block_tiles(int ne, int64_t c, int64_t k, int64_t cp) {
    double vm = (double)ne * (double)(cp + k) * 4, u = (double)ne * (double)c * (double)round_up(k, GEMM_NR) * 4;
    inf__blocking bl;
    inf__blocking_get(&bl);
    int64_t l2 = (int64_t)((double)bl.winograd_block_bytes / vm), stream = (int64_t)(2 * sqrt(u / vm));
    return max64(1, max64(l2, stream));
}

static inline wino_geom wino_geometry(int tile, const inf__conv2d *g, int threads) {
    wino_geom G;
    G.m = tile, G.a = tile + 2, G.ne = G.a * G.a;
    G.cp = round_up(g->c, 8), G.kp = round_up(g->m, 8);
    G.ldv = G.cp * 4 % 4096 ? G.cp : G.cp + 8; /* rows 4 KiB apart would be packed by the GEMM */
    G.tiles_x = (g->ow + tile - 1) / tile, G.tiles_y = (g->oh + tile - 1) / tile;
    G.rows = g->n * G.tiles_y;
    int64_t budget = min64(MAX_TILES, block_tiles(G.ne, g->c, g->m, G.cp));
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
    G.wo = G.tiles_x * tile, G.pw = G.wo + 2;
    G.xs_floats = round_up(G.a * G.pw * G.cp, 16);
    G.v_floats = round_up(G.ne * G.tmax * G.ldv, 16);
    G.m_floats = round_up(G.ne * G.tmax * g->m + 8, 16); /* + 8: the last 8-channel group reads past K */
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
} wino_job;

#endif /* INF_OPS_X86_WINOGRAD_GEOM_H */
