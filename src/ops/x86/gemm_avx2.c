/*
 * gemm_avx2.c -- float32 matrix multiply with AVX2/FMA, the fast twin of
 * inf__ops_sgemm_ref (ops/ref/gemm.c).
 *
 * C[m,n] = alpha * op(A)[m,k] @ op(B)[k,n] + beta * C, row-major, leading
 * dimensions in elements.  Built with -mavx2 -mfma (CMake: *_avx2.c) and
 * called only from inf__ops_sgemm when inf__cpu_has_avx2_fma() says so.
 *
 * DESIGN (the Goto/BLIS scheme, sized for a Zen 3 / Skylake-class core:
 * 32 KiB L1d, 512 KiB-1 MiB L2):
 *   - op(B) is packed once per call into the pool's workspace
 *     (inf__pool_workspace), in NR = 16-column panels laid out [k][16], all
 *     threads packing disjoint panels.  A transposed B is turned here (8x8
 *     blocks in registers), so the compute loop never sees a transpose.
 *     Columns past n are zero.  When k*n is very large B is processed in
 *     slabs of columns.
 *   - Except for plain, narrow B with few rows of A (m <= 144, ldb <= 320:
 *     conv layers deep in a CNN, attention heads): packing would cost up to
 *     a third of the product, so the kernel reads B in place (a 16-column
 *     strip of KC rows stays in L1; rows 4 KiB or more apart would alias in
 *     L1 and the TLB, hence the stride bound).  Ragged last columns go
 *     through a zero-padded copy on the stack.
 *   - The tasks are tiles of C: MC rows x all the slab's columns, or
 *     narrower (>= 64) when there are too few row blocks for the threads
 *     (never on one thread); with A read in place (below), all rows x
 *     one column unit (a pair of panels), in one run a thread from which
 *     the others take units from the back when done (run_units).  MC (72 on Zen 3 and Zen 4, fewer with less
 *     than 512 KiB of L2) and the slab width come from the cache sizes
 *     (ops/blocking.c); KC is fixed, it decides the bits.
 *     A task walks k in KC = 256 steps; for each it packs its MC x KC block
 *     of op(A) (alpha folded in, MR = 6-row panels laid out [k][6], rows past
 *     m zero; plain rows turned 8x8 in registers) on its own stack (72 KiB,
 *     stays in L2), then for each 16-column B micro-panel (16 KiB, stays in
 *     L1) runs the 6x16 micro-kernel over the A panels: 12 ymm accumulators,
 *     2 B loads and 6 broadcasts per k step.
 *   - Plain A with alpha = 1 and at most 144 rows (a batch-1 transformer's
 *     MatMuls, the attention products) is not packed: the kernel
 *     broadcasts straight from A's rows (alpha * a would
 *     be a anyway, so the bits are the packed path's), and an edge tile of
 *     r < 6 rows runs an r-row kernel instead of a zero-padded 6-row one;
 *     a ragged end of 6 + 1 or 6 + 2 rows runs as 4 + 3 or 4 + 4 (a 2-row
 *     tile has 4 FMA chains, too few to hide the FMA latency), and on the
 *     avx512 path a block of exactly 8 rows as one 8x32 tile (pair_rows;
 *     not in the edge runtime).  On one thread all its rows are one task,
 *     so each B panel is fetched once.
 *     Rows a multiple of 4 KiB apart would all fall in the same L1 sets, so
 *     those are still packed -- except on the avx512 path with a 48 KiB
 *     (12-way) L1d, where the 6 rows fit in a set's ways.
 *   - On the avx512 path pairs of full panels run the 6x32 AVX-512 tile
 *     (gemm_avx512.c; same bits): with A in place always, with A packed when
 *     the L1d holds the pair's 32 KiB B block (48 KiB, ops/blocking.c) and
 *     zmm FMAs run full width (fma_width_avx512.c).
 *   - With B packed, each tile of a panel prefetches a slice of the next
 *     panel, so the panel is in L1 when its first tile starts; each tile
 *     of an AVX-512 pair, a slice of the next pair's 32 KiB block into L2
 *     (a batch-1 encoder's weights come from L3 on every run: bert b1 at
 *     1 thread 5-8% less CPU time on Zen 5).
 *   - A fused epilogue (inf__gemm_epilogue, for FusedMatMul): after a
 *     tile's last k block, + bias[j], + a residual right after the tile's
 *     store (still in L1), then an activation over each row segment of the
 *     task -- the float operations of the separate Add/Add/Gelu nodes, in
 *     their order.
 *   - beta is applied when the first k block is stored (beta = 0 writes
 *     without reading C, so garbage or NaN in C never leaks in); later k
 *     blocks accumulate.  Partial edge tiles go through a 6x16 buffer.
 *   - Few rows (m <= SMALL_M: a vector or a handful of rows times a matrix)
 *     skip packing, which would cost as much as the product: plain (or
 *     pre-packed) B is streamed row by row into up to 8 ymm accumulators,
 *     transposed B is turned 8x8 in registers on the way; columns are split
 *     across the threads only from SMALL_TASK multiply-adds a task (a
 *     hand-off costs more than a 256x256 matrix-vector product).
 *   - Batch invariance (DESIGN.md section 1): every path -- the 6x16
 *     kernel, its edge tiles, the few-rows paths, with or without the
 *     workspace, B packed per call or at load -- computes each C element
 *     the same way: per KC block of k, acc = 0 then
 *     acc = fma(alpha * a[i][p], b[p][j], acc) for p in order, stored as
 *     acc (first block, beta 0), acc + C (beta 1, later blocks) or
 *     fma(beta, C, acc).  No dot products with horizontal sums, no k split
 *     across threads.  So a row's bits depend only on its own data, never
 *     on m, the tile it lands in or the thread count.
 * Measured against OpenBLAS 0.3 (bench/bench_gemm, bench/RESULTS.md): on
 * par over the benchmark models' shapes, ahead at batch 1 (OpenBLAS has no
 * fast matrix-vector path in sgemm) and with two threads; so no OpenBLAS.
 * Constant weights (Gemm/MatMul B) are packed once at load
 * (inf__ops_sgemm_pack_b from their init, ops/ref/gemm.c) and run through
 * inf__ops_sgemm_packed_avx2 (or _packed_ep_avx2 with an epilogue), which
 * skips the packing pass and the workspace; other B are packed per call.
 *
 * Without a workspace (NULL pool or out of memory) each task copies its B
 * blocks on the stack: slower, same bits; so it always returns true.
 * Not to be called from inside a pool task.
 */
#if defined(__x86_64__) && defined(__AVX2__) && defined(__FMA__)

#include <immintrin.h>
#include <math.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>

#include "core/cpu.h"
#include "ops/ops.h"
#include "ops/x86/gemm_avx512.h"

enum {
    MR = 6,                   /* micro-tile rows */
    NR = 16,                  /* micro-tile columns (two ymm) */
    MC_MAX = 72,              /* most rows of A packed per task (the stack block; inf__blocking.gemm_mc) */
    KC = 256,                 /* depth of one packed block */
    NT_MIN = 64,              /* fewest columns of C per task when splitting columns */
    SMALL_M = 4,              /* up to this many rows: no packing */
    COL_TASKS_PER_THREAD = 4, /* column panels a thread with A read in place (col_split) */
};
_Static_assert(NR == INF__SGEMM_PANEL_COLS, "bundles store panels of NR columns (inf__ops_sgemm_unpack_b)");

/* Up to this many rows (and this row stride) plain B is read in place
 * rather than packed (measured with bench/bench_gemm). */
#define DIRECT_B_MAX_M 144
#define DIRECT_B_MAX_LDB 320
/* Up to this many rows, plain A with alpha 1 is read in place rather than
 * packed (measured on the BERT shapes: 5-15% faster at 128 rows; from 256
 * rows with wide B, packing -- which streams each A block into L2 ahead of
 * the kernel -- is up to 10% faster). */
#define DIRECT_A_MAX_M 144
/* Rows of A this far apart (a multiple of 4 KiB) alias in L1 when read in
 * place: those are packed. */
#ifndef A_DIRECT_OK
#define A_DIRECT_OK(lda) (((lda) * 4) % 4096 != 0)
#endif
/* Floats pack_a may write past its panels. */
#define PACK_A_SLACK 8
/* Multiply-adds of the few-rows path worth a task of their own. */
#define SMALL_TASK 65536

typedef struct gemm_job {
    bool trans_a, trans_b;
    int64_t m, n, k;
    float alpha, beta;
    const float *a, *b;
    int64_t lda, ldb, ldc;
    float *c;
    /* packed slab of op(B): columns [j0, j0 + nc) */
    float *bp;
    int64_t j0, nc;
    int64_t mb;            /* rows of C per task (gemm_mc, or all m when A is read in place on one thread) */
    int64_t nt;            /* columns of C per task (multiple of NR) */
    int64_t n_col_tasks;
    bool a_direct;         /* A read in place by the kernel (alpha 1, not transposed) */
    const inf__gemm_epilogue *ep; /* applied after the last k block, or NULL */
    bool wide;             /* AVX-512 (gemm_avx512.c): 6x32 tiles for pairs of full panels, masked edge tiles */
} gemm_job;

static inline int64_t min64(int64_t x, int64_t y) { return x < y ? x : y; }

/* ---- packing ---- */

/* r[q] = column q of the 8x8 block whose rows were r[0..7]. */
static inline void transpose_8x8(__m256 r[8]) {
    __m256 t0 = _mm256_unpacklo_ps(r[0], r[1]), t1 = _mm256_unpackhi_ps(r[0], r[1]);
    __m256 t2 = _mm256_unpacklo_ps(r[2], r[3]), t3 = _mm256_unpackhi_ps(r[2], r[3]);
    __m256 t4 = _mm256_unpacklo_ps(r[4], r[5]), t5 = _mm256_unpackhi_ps(r[4], r[5]);
    __m256 t6 = _mm256_unpacklo_ps(r[6], r[7]), t7 = _mm256_unpackhi_ps(r[6], r[7]);
    __m256 s0 = _mm256_shuffle_ps(t0, t2, _MM_SHUFFLE(1, 0, 1, 0));
    __m256 s1 = _mm256_shuffle_ps(t0, t2, _MM_SHUFFLE(3, 2, 3, 2));
    __m256 s2 = _mm256_shuffle_ps(t1, t3, _MM_SHUFFLE(1, 0, 1, 0));
    __m256 s3 = _mm256_shuffle_ps(t1, t3, _MM_SHUFFLE(3, 2, 3, 2));
    __m256 s4 = _mm256_shuffle_ps(t4, t6, _MM_SHUFFLE(1, 0, 1, 0));
    __m256 s5 = _mm256_shuffle_ps(t4, t6, _MM_SHUFFLE(3, 2, 3, 2));
    __m256 s6 = _mm256_shuffle_ps(t5, t7, _MM_SHUFFLE(1, 0, 1, 0));
    __m256 s7 = _mm256_shuffle_ps(t5, t7, _MM_SHUFFLE(3, 2, 3, 2));
    r[0] = _mm256_permute2f128_ps(s0, s4, 0x20), r[1] = _mm256_permute2f128_ps(s1, s5, 0x20);
    r[2] = _mm256_permute2f128_ps(s2, s6, 0x20), r[3] = _mm256_permute2f128_ps(s3, s7, 0x20);
    r[4] = _mm256_permute2f128_ps(s0, s4, 0x31), r[5] = _mm256_permute2f128_ps(s1, s5, 0x31);
    r[6] = _mm256_permute2f128_ps(s2, s6, 0x31), r[7] = _mm256_permute2f128_ps(s3, s7, 0x31);
}

/* Panels [begin, end) of the slab: op(B)[0:k, j0 + 16*panel ...] as [k][16]. */
static void pack_b_task(void *arg, int64_t begin, int64_t end) {
    const gemm_job *g = arg;
    const int64_t k = g->k;
    for (int64_t pnl = begin; pnl < end; pnl++) {
        float *dst = g->bp + pnl * k * NR;
        int64_t j = g->j0 + pnl * NR;
        int64_t cols = min64(NR, g->n - j);
        if (!g->trans_b) {
            const float *src = g->b + j;
            if (cols == NR) {
                for (int64_t p = 0; p < k; p++, src += g->ldb, dst += NR) {
                    _mm256_store_ps(dst, _mm256_loadu_ps(src));
                    _mm256_store_ps(dst + 8, _mm256_loadu_ps(src + 8));
                }
            } else {
                for (int64_t p = 0; p < k; p++, src += g->ldb, dst += NR) {
                    int64_t c = 0;
                    for (; c < cols; c++) dst[c] = src[c];
                    for (; c < NR; c++) dst[c] = 0.0f;
                }
            }
        } else if (cols == NR) {
            /* op(B)[p, j + c] = b[(j + c) * ldb + p]: 8x8 blocks of b transposed in registers */
            int64_t p = 0;
            for (; p + 8 <= k; p += 8) {
                for (int h = 0; h < 2; h++) {
                    const float *src = g->b + (j + 8 * h) * g->ldb + p;
                    __m256 r[8];
                    for (int q = 0; q < 8; q++) r[q] = _mm256_loadu_ps(src + q * g->ldb);
                    transpose_8x8(r);
                    for (int q = 0; q < 8; q++) _mm256_store_ps(dst + (p + q) * NR + 8 * h, r[q]);
                }
            }
            for (; p < k; p++)
                for (int64_t c = 0; c < NR; c++) dst[p * NR + c] = g->b[(j + c) * g->ldb + p];
        } else {
            /* ragged last panel: read rows of b, write columns of the panel */
            for (int64_t c = 0; c < NR; c++) {
                if (c < cols) {
                    const float *src = g->b + (j + c) * g->ldb;
                    for (int64_t p = 0; p < k; p++) dst[p * NR + c] = src[p];
                } else {
                    for (int64_t p = 0; p < k; p++) dst[p * NR + c] = 0.0f;
                }
            }
        }
    }
}

/* Six rows r[0..5] of plain A, times alpha, as [p][6] for p in steps of 8:
 * 8x8 blocks (two rows zero) turned in registers, each column stored as 8
 * floats of which the next store overwrites the last 2 -- so up to 2 floats
 * past dst + 6 * p are written (the caller's buffer has PACK_A_SLACK).
 * Returns the p reached (a multiple of 8). */
static int64_t pack_a_rows8(const float *const *r, int64_t kc, float alpha, float *dst) {
    __m256 va = _mm256_set1_ps(alpha);
    int64_t p = 0;
    for (; p + 8 <= kc; p += 8, dst += 8 * MR) {
        __m256 t[8];
        for (int q = 0; q < MR; q++) t[q] = _mm256_mul_ps(va, _mm256_loadu_ps(r[q] + p));
        t[6] = t[7] = _mm256_setzero_ps();
        transpose_8x8(t);
        for (int c = 0; c < 8; c++) _mm256_storeu_ps(dst + c * MR, t[c]);
    }
    return p;
}

/* op(A)[i0:i0+mc, p0:p0+kc] * alpha as MR-row panels [kc][MR]; rows past mc
 * zero.  dst holds mc * kc + PACK_A_SLACK floats. */
static void pack_a(const gemm_job *g, int64_t i0, int64_t mc, int64_t p0, int64_t kc,
                   float *restrict dst) {
    const float alpha = g->alpha;
    for (int64_t ip = 0; ip < mc; ip += MR) {
        int64_t rows = min64(MR, mc - ip);
        if (!g->trans_a) {
            const float *r[MR];
            for (int64_t q = 0; q < MR; q++) r[q] = g->a + (i0 + ip + (q < rows ? q : 0)) * g->lda + p0;
            if (rows == MR) {
                int64_t p = pack_a_rows8(r, kc, alpha, dst);
                for (dst += p * MR; p < kc; p++, dst += MR)
                    for (int q = 0; q < MR; q++) dst[q] = alpha * r[q][p];
            } else {
                for (int64_t p = 0; p < kc; p++, dst += MR)
                    for (int q = 0; q < MR; q++) dst[q] = q < rows ? alpha * r[q][p] : 0.0f;
            }
        } else {
            const float *src = g->a + p0 * g->lda + i0 + ip;
            for (int64_t p = 0; p < kc; p++, src += g->lda, dst += MR)
                for (int q = 0; q < MR; q++) dst[q] = q < rows ? alpha * src[q] : 0.0f;
        }
    }
}

/* ---- the fused epilogue (bias, residual, activation) ---- */

/* C[i0:i0+rows, j:j+cols] (at c, row stride ldc) += bias[j], then
 * += res[i][j]: two float adds in that order, as separate Add nodes do
 * (a 16-column tile in registers; other widths element by element, which
 * rounds the same). */
static void epilogue_adds(const inf__gemm_epilogue *ep, float *c, int64_t ldc, int64_t i0, int64_t rows, int64_t j,
                          int64_t cols) {
    const float *bias = ep->bias ? ep->bias + j : NULL;
    for (int64_t r = 0; r < rows; r++, c += ldc) {
        const float *res = ep->res ? ep->res + (i0 + r) * ep->ldr + j : NULL;
        if (cols == NR) {
            __m256 v0 = _mm256_loadu_ps(c), v1 = _mm256_loadu_ps(c + 8);
            if (bias) v0 = _mm256_add_ps(v0, _mm256_loadu_ps(bias)), v1 = _mm256_add_ps(v1, _mm256_loadu_ps(bias + 8));
            if (res) v0 = _mm256_add_ps(v0, _mm256_loadu_ps(res)), v1 = _mm256_add_ps(v1, _mm256_loadu_ps(res + 8));
            _mm256_storeu_ps(c, v0), _mm256_storeu_ps(c + 8, v1);
            continue;
        }
        for (int64_t q = 0; bias && q < cols; q++) c[q] = c[q] + bias[q];
        for (int64_t q = 0; res && q < cols; q++) c[q] = c[q] + res[q];
    }
}

/* The whole epilogue on C[i0:i0+rows, j:j+cols]: the adds, then the
 * activation over each row's segment (one call per row: the element-wise
 * function gives every element the same bits wherever it sits). */
static void epilogue_rows(const inf__gemm_epilogue *ep, float *c, int64_t ldc, int64_t i0, int64_t rows, int64_t j,
                          int64_t cols) {
    if (ep->bias || ep->res) epilogue_adds(ep, c, ldc, i0, rows, j, cols);
    for (int64_t r = 0; ep->act && r < rows; r++) ep->act(c + r * ldc, c + r * ldc, cols);
}

/* ---- the 6x16 micro-kernel ---- */

enum { STORE_BETA0, STORE_ADD, STORE_BETA };

/* The epilogue's adds for one micro-tile: bias at the tile's first
 * column, res at its first element (rows ldr apart); either may be NULL.
 * A NULL tile_adds pointer: none (not the last k block, or no epilogue). */
typedef struct tile_adds {
    const float *bias, *res;
    int64_t ldr;
    bool relu; /* then max(v, 0) (the epilogue's act is a Relu) */
} tile_adds;

/* C[0:rows, 0:16] += bias, then += res: one float rounding each, in the
 * order of the separate Add nodes, then the Relu, right after the tile's
 * store while it is in L1 (out of line, so the kernels keep their
 * accumulators in registers). */
static __attribute__((noinline)) void tile_add(const tile_adds *ta, float *c, int64_t ldc, int rows) {
    for (int r = 0; r < rows; r++, c += ldc)
        for (int h = 0; h < 2; h++) {
            __m256 v = _mm256_loadu_ps(c + 8 * h);
            if (ta->bias) v = _mm256_add_ps(v, _mm256_loadu_ps(ta->bias + 8 * h));
            if (ta->res) v = _mm256_add_ps(v, _mm256_loadu_ps(ta->res + r * ta->ldr + 8 * h));
            if (ta->relu) v = _mm256_max_ps(v, _mm256_setzero_ps()); /* NaN -> 0, as Relu */
            _mm256_storeu_ps(c + 8 * h, v);
        }
}

/* The epilogue's part a tile does in its store (bias and res at the tile's
 * column j and first row i), or none: not the last k block (ep NULL). */
static inline tile_adds tile_adds_at(const inf__gemm_epilogue *ep, int64_t i, int64_t j) {
    tile_adds ta = {NULL, NULL, 0, false};
    if (!ep) return ta;
    ta.bias = ep->bias ? ep->bias + j : NULL;
    ta.res = ep->res ? ep->res + i * ep->ldr + j : NULL;
    ta.ldr = ep->ldr;
    ta.relu = ep->relu && ep->act;
    return ta;
}

/* C[0:R, 0:16] (ldc) = acc + {0, C, beta*C}, then the adds (ta, may be
 * NULL): the store of the micro-kernels. */
static inline __attribute__((always_inline)) void store_rows(const int R, __m256 acc[][2], float *c, int64_t ldc,
                                                             int mode, float beta, const tile_adds *ta) {
    __m256 vb = _mm256_set1_ps(beta);
    float *c0 = c;
    for (int r = 0; r < R; r++, c += ldc) {
        for (int h = 0; h < 2; h++) {
            __m256 v = acc[r][h];
            if (mode == STORE_ADD)
                v = _mm256_add_ps(v, _mm256_loadu_ps(c + 8 * h));
            else if (mode == STORE_BETA)
                v = _mm256_fmadd_ps(vb, _mm256_loadu_ps(c + 8 * h), v);
            _mm256_storeu_ps(c + 8 * h, v);
        }
    }
    if (ta) tile_add(ta, c0, ldc, R);
}

/* C[0:6, 0:16] (ldc) = acc + {0, C, beta*C}, acc = sum_p a[p][0:6] (x) b[p][0:16]. */
static inline __attribute__((always_inline)) void
kernel_6x16(int64_t kc, const float *restrict a, const float *restrict b, int64_t ldbk, float *c,
            int64_t ldc, int mode, float beta, const tile_adds *ta) {
    __m256 c00 = _mm256_setzero_ps(), c01 = _mm256_setzero_ps();
    __m256 c10 = _mm256_setzero_ps(), c11 = _mm256_setzero_ps();
    __m256 c20 = _mm256_setzero_ps(), c21 = _mm256_setzero_ps();
    __m256 c30 = _mm256_setzero_ps(), c31 = _mm256_setzero_ps();
    __m256 c40 = _mm256_setzero_ps(), c41 = _mm256_setzero_ps();
    __m256 c50 = _mm256_setzero_ps(), c51 = _mm256_setzero_ps();
#pragma GCC unroll 4
    for (int64_t p = 0; p < kc; p++, a += MR, b += ldbk) {
        __m256 b0 = _mm256_loadu_ps(b), b1 = _mm256_loadu_ps(b + 8), av;
        av = _mm256_broadcast_ss(a + 0);
        c00 = _mm256_fmadd_ps(av, b0, c00), c01 = _mm256_fmadd_ps(av, b1, c01);
        av = _mm256_broadcast_ss(a + 1);
        c10 = _mm256_fmadd_ps(av, b0, c10), c11 = _mm256_fmadd_ps(av, b1, c11);
        av = _mm256_broadcast_ss(a + 2);
        c20 = _mm256_fmadd_ps(av, b0, c20), c21 = _mm256_fmadd_ps(av, b1, c21);
        av = _mm256_broadcast_ss(a + 3);
        c30 = _mm256_fmadd_ps(av, b0, c30), c31 = _mm256_fmadd_ps(av, b1, c31);
        av = _mm256_broadcast_ss(a + 4);
        c40 = _mm256_fmadd_ps(av, b0, c40), c41 = _mm256_fmadd_ps(av, b1, c41);
        av = _mm256_broadcast_ss(a + 5);
        c50 = _mm256_fmadd_ps(av, b0, c50), c51 = _mm256_fmadd_ps(av, b1, c51);
    }
    __m256 acc[MR][2] = {{c00, c01}, {c10, c11}, {c20, c21}, {c30, c31}, {c40, c41}, {c50, c51}};
    store_rows(MR, acc, c, ldc, mode, beta, ta);
}

/* The same accumulation with R rows of A read in place (alpha = 1, A not
 * transposed): a[r * lda + p].  Rows past the valid ones are never read, so
 * an edge tile computes only its own rows.  Stores as kernel_6x16. */
static inline __attribute__((always_inline)) void
kernel_direct(const int R, int64_t kc, const float *restrict a, int64_t lda, const float *restrict b, int64_t ldbk,
              float *c, int64_t ldc, int mode, float beta, const tile_adds *ta) {
    __m256 acc[MR][2];
    for (int r = 0; r < R; r++) acc[r][0] = _mm256_setzero_ps(), acc[r][1] = _mm256_setzero_ps();
#pragma GCC unroll 4
    for (int64_t p = 0; p < kc; p++, a++, b += ldbk) {
        __m256 b0 = _mm256_loadu_ps(b), b1 = _mm256_loadu_ps(b + 8);
#pragma GCC unroll 6
        for (int r = 0; r < R; r++) {
            __m256 av = _mm256_broadcast_ss(a + r * lda);
            acc[r][0] = _mm256_fmadd_ps(av, b0, acc[r][0]);
            acc[r][1] = _mm256_fmadd_ps(av, b1, acc[r][1]);
        }
    }
    store_rows(R, acc, c, ldc, mode, beta, ta);
}

static void kernel_direct_rows(int64_t rows, int64_t kc, const float *a, int64_t lda, const float *b, int64_t ldbk,
                               float *c, int64_t ldc, int mode, float beta, const tile_adds *ta) {
    switch (rows) {
    case 6: kernel_direct(6, kc, a, lda, b, ldbk, c, ldc, mode, beta, ta); break;
    case 5: kernel_direct(5, kc, a, lda, b, ldbk, c, ldc, mode, beta, ta); break;
    case 4: kernel_direct(4, kc, a, lda, b, ldbk, c, ldc, mode, beta, ta); break;
    case 3: kernel_direct(3, kc, a, lda, b, ldbk, c, ldc, mode, beta, ta); break;
    case 2: kernel_direct(2, kc, a, lda, b, ldbk, c, ldc, mode, beta, ta); break;
    default: kernel_direct(1, kc, a, lda, b, ldbk, c, ldc, mode, beta, ta); break;
    }
}

/* Stores the tile t[rows][NR] (first `cols` columns) into C with the same
 * arithmetic as the kernels' store (acc + C, or fma(beta, C, acc): one
 * rounding; then the adds), so a row gets identical bits whether its tile
 * is full or not. */
static void store_partial(const float *t, float *c, int64_t ldc, int64_t rows, int64_t cols, int mode, float beta,
                          const tile_adds *ta) {
    for (int64_t r = 0; r < rows; r++, c += ldc)
        for (int64_t j = 0; j < cols; j++) {
            float v = t[r * NR + j];
            if (mode == STORE_ADD) v = v + c[j];
            else if (mode == STORE_BETA) v = fmaf(beta, c[j], v);
            if (ta && ta->bias) v = v + ta->bias[j];
            if (ta && ta->res) v = v + ta->res[r * ta->ldr + j];
            if (ta && ta->relu) v = v > 0 ? v : 0;
            c[j] = v;
        }
}

/* One micro-tile of C at (i, j), rows x cols valid; B's rows are ldbk
 * apart (NR when packed; a partial tile always comes from a packed panel).
 * lda > 0: A read in place (rows lda apart); lda == 0: a is a packed panel.
 * ta: the epilogue's adds (last k block), or NULL. */
static void micro_tile(int64_t kc, const float *a, int64_t lda, const float *b, int64_t ldbk, float *c, int64_t ldc,
                       int64_t rows, int64_t cols, int mode, float beta, const tile_adds *ta) {
    _Alignas(32) float t[MR * NR];
    if (lda > 0) {
        if (cols == NR) {
            kernel_direct_rows(rows, kc, a, lda, b, ldbk, c, ldc, mode, beta, ta);
        } else {
            kernel_direct_rows(rows, kc, a, lda, b, ldbk, t, NR, STORE_BETA0, 0.0f, NULL);
            store_partial(t, c, ldc, rows, cols, mode, beta, ta);
        }
        return;
    }
    if (rows == MR && cols == NR) {
        switch (mode) {
        case STORE_BETA0: kernel_6x16(kc, a, b, ldbk, c, ldc, STORE_BETA0, beta, ta); break;
        case STORE_ADD: kernel_6x16(kc, a, b, ldbk, c, ldc, STORE_ADD, beta, ta); break;
        default: kernel_6x16(kc, a, b, ldbk, c, ldc, STORE_BETA, beta, ta); break;
        }
        return;
    }
    kernel_6x16(kc, a, b, ldbk, t, NR, STORE_BETA0, 0.0f, NULL);
    store_partial(t, c, ldc, rows, cols, mode, beta, ta);
}

/* The B micro-panel for columns [j, j + cols) of k block p0 (kc rows):
 * packed, plain B in place, or a zero-padded / transposed copy in btail.
 * *ldbk receives its row stride. */
static const float *b_panel(const gemm_job *g, int64_t jt, int64_t jr, int64_t p0, int64_t kc, int64_t cols,
                            float *btail, int64_t *ldbk) {
    int64_t j = g->j0 + jt + jr;
    *ldbk = NR;
    if (g->bp) return g->bp + ((jt + jr) / NR) * g->k * NR + p0 * NR;
    if (!g->trans_b && cols == NR) {
        *ldbk = g->ldb;
        return g->b + p0 * g->ldb + j; /* plain B read in place */
    }
    if (!g->trans_b) {
        /* the ragged last columns: zero-padded copy */
        const float *src = g->b + p0 * g->ldb + j;
        for (int64_t p = 0; p < kc; p++, src += g->ldb)
            for (int64_t q = 0; q < NR; q++) btail[p * NR + q] = q < cols ? src[q] : 0.0f;
        return btail;
    }
    /* transposed B without a workspace (no pool): this block's panel,
     * transposed on the stack */
    for (int64_t q = 0; q < NR; q++) {
        const float *src = g->b + (j + (q < cols ? q : 0)) * g->ldb + p0;
        for (int64_t p = 0; p < kc; p++) btail[p * NR + q] = q < cols ? src[p] : 0.0f;
    }
    return btail;
}

/* Rows of the micro-tile at row ir of an mc-row block.  With A read in
 * place the kernel takes any height, so a ragged end of 6 + 1 or 6 + 2
 * rows runs as 4 + 3 or 4 + 4 (a 1- or 2-row tile keeps too few FMAs in
 * flight to hide their latency); a row's bits never depend on its tile. */
static inline int64_t tile_rows(int64_t mc, int64_t ir, bool direct) {
    int64_t left = mc - ir;
    if (direct && (left == MR + 1 || left == MR + 2)) return 4;
    return min64(MR, left);
}

/* Rows of the AVX-512 pair tile (gemm_avx512.c) at row ir: with A in place
 * a block of exactly 8 rows runs as one 8-row tile (16 accumulators, each
 * B load used 8 times) instead of 4 + 4 -- a 2-thread Winograd block of
 * 8 tiles (the bench CNN's 8x8 and 16x16 layers at batch 1) ran its
 * GEMMs ~12 % slower per row than a 16-row one; the bits do not depend on
 * the tile. */
#ifdef INF_EDGE
enum { PAIR_ROWS_8 = 0 }; /* the edge runtime leaves the 8-row tile out: size (issue 22's guard) */
#else
enum { PAIR_ROWS_8 = 1 };
#endif
static inline int64_t pair_rows(int64_t mc, int64_t ir, bool direct) {
    if (PAIR_ROWS_8 && direct && mc - ir == 8) return 8;
    return tile_rows(mc, ir, direct);
}

/* Loads the lines of [p, p + bytes) into the cache ahead of their use. */
static inline void prefetch_lines(const float *p, int64_t bytes) {
    for (int64_t o = 0; o < bytes; o += 64) _mm_prefetch((const char *)p + o, _MM_HINT_T0);
}

/* The micro-tiles of one 16-column panel over rows [i0, i0 + mc) of the
 * task, k block p0 (kc deep).  next: the next packed panel (prefetched a
 * slice per tile, so it is in cache when its first tile starts), or NULL. */
static void panel_tiles(const gemm_job *g, const float *ap, const float *bpanel, int64_t ldbk, const float *next,
                        int64_t i0, int64_t mc, int64_t j, int64_t cols, int64_t p0, int64_t kc, int mode, bool last) {
    float *cblk = g->c + i0 * g->ldc + j;
    const inf__gemm_epilogue *ep = last ? g->ep : NULL;
    int64_t n_tiles = (mc + MR - 1) / MR, slice = (kc * NR * 4 / n_tiles + 63) / 64 * 64;
    for (int64_t ir = 0, tile = 0; ir < mc; tile++) {
        int64_t rows = tile_rows(mc, ir, g->a_direct);
        const float *a = g->a_direct ? g->a + (i0 + ir) * g->lda + p0 : ap + ir * kc;
        tile_adds ta = tile_adds_at(ep, i0 + ir, j);
        bool any = ta.bias || ta.res || ta.relu;
        if (next && tile * slice < kc * NR * 4)
            prefetch_lines((const float *)((const char *)next + tile * slice), min64(slice, kc * NR * 4 - tile * slice));
        if (g->wide && (cols < NR || (!g->a_direct && rows < MR))) { /* edge tile: masked AVX-512 stores */
            inf__gemm_tile_ep te = {ta.bias, ta.res, ta.ldr, ta.relu};
            inf__gemm_tile_x16_masked_avx512((int)rows, (int)cols, kc, a, g->a_direct ? g->lda : 0, bpanel, ldbk,
                                             cblk + ir * g->ldc, g->ldc, mode, g->beta, any ? &te : NULL);
        } else {
            micro_tile(kc, a, g->a_direct ? g->lda : 0, bpanel, ldbk, cblk + ir * g->ldc, g->ldc, rows, cols, mode,
                       g->beta, any ? &ta : NULL);
        }
        ir += rows;
    }
}

/* Bytes [o, o + slice) of the next pair's packed block (its two panels,
 * panel_bytes each, g->k * NR floats apart) into L2.  Kept out of line: it
 * runs once a tile, and inlined it made the edge example's code larger. */
static __attribute__((noinline)) void prefetch_pair_slice(const gemm_job *g, const float *next, int64_t panel_bytes,
                                                          int64_t o, int64_t slice) {
    int64_t len = min64(slice, 2 * panel_bytes - o);
    for (int64_t q = o; q < o + len; q += 64) {
        const char *pl = q < panel_bytes ? (const char *)next + q : (const char *)(next + g->k * NR) + (q - panel_bytes);
        _mm_prefetch(pl, _MM_HINT_T1);
    }
}

/* Two adjacent full 16-column panels at once (columns [j, j + 32)) with
 * the AVX-512 kernel: same tiles, same bits as two panel_tiles calls; the
 * epilogue's adds (and a Relu) are done in the tile's store, on the sums
 * still in registers.  next: the next
 * pair's packed block (two panels of kc rows, one after the other at
 * g->k * NR apart), or NULL: each tile prefetches a slice of it into L2,
 * so a batch-1 layer's weights -- which come from L3 on every run, each
 * pair's 32 KiB used once -- are on their way while this pair computes. */
static void panel_pair_tiles(const gemm_job *g, const float *ap, const float *b0, const float *b1, int64_t ldbk,
                             const float *next, int64_t i0, int64_t mc, int64_t j, int64_t p0, int64_t kc, int mode,
                             bool last) {
    float *cblk = g->c + i0 * g->ldc + j;
    const inf__gemm_epilogue *ep = last ? g->ep : NULL;
    int64_t panel_bytes = kc * NR * 4, n_tiles = 0;
    for (int64_t ir = 0; ir < mc; ir += pair_rows(mc, ir, g->a_direct)) n_tiles++;
    int64_t slice = (2 * panel_bytes / n_tiles + 63) / 64 * 64;
    for (int64_t ir = 0, tile = 0; ir < mc; tile++) {
        if (next && tile * slice < 2 * panel_bytes) prefetch_pair_slice(g, next, panel_bytes, tile * slice, slice);
        int64_t rows = pair_rows(mc, ir, g->a_direct);
        const float *a = g->a_direct ? g->a + (i0 + ir) * g->lda + p0 : ap + ir * kc;
        float *c = cblk + ir * g->ldc;
        tile_adds ta = tile_adds_at(ep, i0 + ir, j);
        inf__gemm_tile_ep te = {ta.bias, ta.res, ta.ldr, ta.relu};
        if (PAIR_ROWS_8 && rows == 8) /* A in place (pair_rows) */
            inf__gemm_tile_x32_8rows_avx512(kc, a, g->lda, b0, b1, ldbk, c, g->ldc, mode, g->beta,
                                            ta.bias || ta.res || ta.relu ? &te : NULL);
        else
            inf__gemm_tile_x32_avx512((int)rows, kc, a, g->a_direct ? g->lda : 0, b0, b1, ldbk, c, g->ldc, mode,
                                      g->beta, ta.bias || ta.res || ta.relu ? &te : NULL);
        ir += rows;
    }
}

/* Rows [i0, i0 + mc) x columns [jt, jt + nt) of the slab, all of k: A
 * packed per k block into ap (or read in place, g->a_direct).  after: the
 * slab column of the block the thread runs next (its first pair or panel
 * is prefetched during this block's last one), or -1.  act: the
 * epilogue's activation over the block's rows here (else the caller's). */
static void col_block(const gemm_job *g, int64_t i0, int64_t mc, int64_t jt, int64_t nt, int64_t after, bool act,
                      float *ap, float *btail) {
    int first_mode = g->beta == 0.0f ? STORE_BETA0 : g->beta == 1.0f ? STORE_ADD : STORE_BETA;
    for (int64_t p0 = 0; p0 < g->k; p0 += KC) {
        int64_t kc = min64(KC, g->k - p0);
        int mode = p0 == 0 ? first_mode : STORE_ADD;
        bool last = p0 + kc >= g->k;
        const float *after_panel = g->bp && after >= 0 ? g->bp + (after / NR) * g->k * NR + p0 * NR : NULL;
        if (!g->a_direct) pack_a(g, i0, mc, p0, kc, ap);
        for (int64_t jr = 0; jr < nt; jr += NR) {
            int64_t cols = min64(NR, nt - jr), ldbk;
            if (g->wide && nt - jr >= 2 * NR && (g->bp || !g->trans_b)) { /* two full panels, no copies */
                const float *b0 = b_panel(g, jt, jr, p0, kc, NR, btail, &ldbk);
                const float *b1 = b_panel(g, jt, jr + NR, p0, kc, NR, btail, &ldbk);
                const float *next = g->bp && nt - jr >= 4 * NR ? b0 + 2 * g->k * NR
                                    : nt - jr == 2 * NR        ? after_panel
                                                               : NULL;
                panel_pair_tiles(g, ap, b0, b1, ldbk, next, i0, mc, g->j0 + jt + jr, p0, kc, mode, last);
                jr += NR;
                continue;
            }
            const float *bpanel = b_panel(g, jt, jr, p0, kc, cols, btail, &ldbk);
            const float *next = g->bp && jr + NR < nt ? bpanel + g->k * NR : after_panel;
            panel_tiles(g, ap, bpanel, ldbk, next, i0, mc, g->j0 + jt + jr, cols, p0, kc, mode, last);
        }
        /* after the adds, on the block's whole rows (one call each); a Relu was done in the stores */
        if (last && act && g->ep && g->ep->act && !g->ep->relu)
            epilogue_rows(&(inf__gemm_epilogue){NULL, NULL, 0, g->ep->act, false}, g->c + i0 * g->ldc + g->j0 + jt,
                          g->ldc, i0, mc, 0, nt);
    }
}

/* Tasks [begin, end) of the slab: tile t covers rows (t / n_col_tasks) * mb
 * and columns j0 + (t % n_col_tasks) * NT. */
static void compute_task(void *arg, int64_t begin, int64_t end) {
    const gemm_job *g = arg;
    _Alignas(64) float ap[MC_MAX * KC + PACK_A_SLACK];
    _Alignas(64) float btail[KC * NR];
    for (int64_t t = begin; t < end; t++) {
        int64_t i0 = (t / g->n_col_tasks) * g->mb, jt = (t % g->n_col_tasks) * g->nt;
        col_block(g, i0, min64(g->mb, g->m - i0), jt, min64(g->nt, g->nc - jt), -1, true, ap, btail);
    }
}

/* ---- runs of column units (A in place, several threads) ----
 * The slab's columns are cut into units (one AVX-512 pair, 32 columns, or
 * wider when a pair is too little work) and the units into one run a
 * thread, in order.  A part takes its own run's units from the front and
 * prefetches the next one's weights during the last pair of the current
 * one, so each thread streams its half of the packed weights as one
 * sequence (as one thread streams all of them); a part that is done takes
 * the other runs' units from their back, one at a time, so the threads
 * finish within one unit of each other.  (Pool chunks of about four a
 * thread cut a batch-1 encoder's wide products into 4-pair tasks: the
 * first pair of each came without a prefetch, and a thread that was ahead
 * waited for a whole task at the end.)  The pool gives part 0 to the
 * caller and the last to a worker, as before; an element's bits do not
 * depend on which thread computes its unit. */
enum { MAX_RUNS = 64, ACT_UNITS = 4 /* units per activation pass (128 columns x all rows, ~64 KiB) */ };

/* A run's units [front, back) still to do, in one word: front low, back high. */
typedef struct unit_run {
    _Alignas(64) _Atomic uint64_t fb;
} unit_run;

typedef struct run_job {
    const gemm_job *g;
    int64_t unit, n_units; /* columns a unit, units in the slab */
    int n_runs;
    unit_run *runs;
} run_job;

/* Claims the front (own run) or back (another's) unit of r into *u. */
static bool run_claim(unit_run *r, bool front, int64_t *u) {
    uint64_t w = atomic_load_explicit(&r->fb, memory_order_relaxed);
    for (;;) {
        uint32_t f = (uint32_t)w, b = (uint32_t)(w >> 32);
        if (f >= b) return false;
        uint64_t nw = front ? w + 1 : w - ((uint64_t)1 << 32);
        if (atomic_compare_exchange_weak(&r->fb, &w, nw)) {
            *u = front ? f : (int64_t)b - 1;
            return true;
        }
    }
}

/* The unit the same claim would take next, or -1 (a hint for the prefetch). */
static int64_t run_peek(unit_run *r, bool front) {
    uint64_t w = atomic_load_explicit(&r->fb, memory_order_relaxed);
    uint32_t f = (uint32_t)w, b = (uint32_t)(w >> 32);
    return f >= b ? -1 : front ? (int64_t)f : (int64_t)b - 1;
}

/* The activation over units [u0, u1) of all rows (element-wise: any grouping gives the same bits). */
static void run_act(const run_job *rj, int64_t u0, int64_t u1) {
    const gemm_job *g = rj->g;
    if (u0 >= u1 || !g->ep || !g->ep->act || g->ep->relu) return;
    int64_t jt = u0 * rj->unit, nt = min64(u1 * rj->unit, g->nc) - jt;
    epilogue_rows(&(inf__gemm_epilogue){NULL, NULL, 0, g->ep->act, false}, g->c + g->j0 + jt, g->ldc, 0, g->m, 0, nt);
}

static void run_task(void *arg, int64_t begin, int64_t end) {
    const run_job *rj = arg;
    const gemm_job *g = rj->g;
    _Alignas(64) float btail[KC * NR];
    for (int64_t part = begin; part < end; part++)
        for (int i = 0; i < rj->n_runs; i++) {
            unit_run *r = &rj->runs[(part + i) % rj->n_runs];
            bool own = i == 0;
            int64_t u, u0 = 0, u1 = 0; /* units done and not yet activated: [u0, u1) */
            while (run_claim(r, own, &u)) {
                int64_t next = run_peek(r, own), jt = u * rj->unit;
                col_block(g, 0, g->m, jt, min64(rj->unit, g->nc - jt), next < 0 ? -1 : next * rj->unit, false, NULL,
                          btail);
                if (u1 - u0 < ACT_UNITS && (u == u1 || u + 1 == u0) && u0 < u1) {
                    u0 = u < u0 ? u : u0, u1 = u + 1 > u1 ? u + 1 : u1;
                    continue;
                }
                run_act(rj, u0, u1);
                u0 = u, u1 = u + 1;
            }
            run_act(rj, u0, u1);
        }
}

/* The slab (all rows, A in place) on threads > 1 as runs of column units;
 * false (nothing done) when there are fewer units than threads. */
static bool run_units(inf__pool *pool, const gemm_job *g, int threads) {
    int64_t unit = g->wide ? 2 * NR : NR;
    int64_t min_cols = (SMALL_TASK / (g->m * g->k) + unit - 1) / unit * unit;
    if (unit < min_cols) unit = min_cols;
    int64_t n_units = (g->nc + unit - 1) / unit;
    if (threads < 2 || threads > MAX_RUNS || n_units < threads || n_units > UINT32_MAX) return false;
    unit_run runs[MAX_RUNS];
    for (int t = 0; t < threads; t++)
        atomic_init(&runs[t].fb, (uint64_t)(t * n_units / threads) | (uint64_t)((t + 1) * n_units / threads) << 32);
    run_job rj = {g, unit, n_units, threads, runs};
    inf__pool_range(pool, threads, 1, run_task, &rj);
    return true;
}

/* ---- few rows: no packing ----
 * Every C element is summed exactly as in the 6x16 kernel: per KC block of
 * k, acc = 0, then acc = fma(alpha * A[i][p], op(B)[p][j], acc) for p in
 * order, stored as acc (first block, beta 0), acc + C, or fma(beta, C, acc)
 * (first block, other beta), later blocks acc + C.  So a row's result does
 * not depend on m, on the path or on the thread split (batch invariance,
 * DESIGN.md section 1; tests/kernels/test_gemm.c checks it bit for bit). */

/* Lanes [0, cols) set, for masked loads and stores of a partial ymm. */
static inline __m256i tail_mask(int64_t cols) {
    static const int32_t ramp[8] = {0, 1, 2, 3, 4, 5, 6, 7};
    if (cols > 8) cols = 8;
    if (cols < 0) cols = 0;
    return _mm256_cmpgt_epi32(_mm256_set1_epi32((int)cols), _mm256_loadu_si256((const __m256i *)ramp));
}

static inline float a_at(const gemm_job *g, int64_t i, int64_t p) {
    return g->trans_a ? g->a[p * g->lda + i] : g->a[i * g->lda + p];
}

static inline int first_store_mode(float beta) {
    return beta == 0.0f ? STORE_BETA0 : beta == 1.0f ? STORE_ADD : STORE_BETA;
}

/* Stores acc into C's 8 columns at c (mask: valid lanes; full: all 8). */
static inline __attribute__((always_inline)) void
store_acc(float *c, __m256 v, int mode, __m256 vb, bool full, __m256i mask) {
    if (full) {
        if (mode == STORE_ADD) v = _mm256_add_ps(v, _mm256_loadu_ps(c));
        else if (mode == STORE_BETA) v = _mm256_fmadd_ps(vb, _mm256_loadu_ps(c), v);
        _mm256_storeu_ps(c, v);
    } else {
        if (mode == STORE_ADD) v = _mm256_add_ps(v, _mm256_maskload_ps(c, mask));
        else if (mode == STORE_BETA) v = _mm256_fmadd_ps(vb, _mm256_maskload_ps(c, mask), v);
        _mm256_maskstore_ps(c, mask, v);
    }
}

/* C[i0:i0+R, j:j+8W], `cols` valid columns, from plain B read in place or
 * from packed panels (g->bp: the whole of op(B), [k][16] panels). */
static inline __attribute__((always_inline)) void
small_block(const gemm_job *g, int64_t i0, int R, int64_t j, int W, int64_t cols) {
    __m256 acc[SMALL_M][8];
    __m256i mask[8];
    const float *bw[8];
    int64_t bstride;
    bool full = cols >= 8 * W;
    for (int w = 0; w < W; w++) {
        mask[w] = tail_mask(cols - 8 * w);
        int64_t jj = j + (8 * w < cols ? 8 * w : 0);
        bw[w] = g->bp ? g->bp + (jj / NR) * g->k * NR + jj % NR : g->b + jj;
    }
    bstride = g->bp ? NR : g->ldb;
    bool masked_loads = !g->bp && !full;
    __m256 vb = _mm256_set1_ps(g->beta);
    int first_mode = first_store_mode(g->beta);
    for (int64_t p0 = 0; p0 < g->k; p0 += KC) {
        int64_t pend = min64(g->k, p0 + KC);
        for (int r = 0; r < R; r++)
            for (int w = 0; w < W; w++) acc[r][w] = _mm256_setzero_ps();
        for (int64_t p = p0; p < pend; p++) {
            __m256 bv[8];
            for (int w = 0; w < W; w++)
                bv[w] = masked_loads ? _mm256_maskload_ps(bw[w] + p * bstride, mask[w])
                                     : _mm256_loadu_ps(bw[w] + p * bstride);
            for (int r = 0; r < R; r++) {
                __m256 av = _mm256_set1_ps(g->alpha * a_at(g, i0 + r, p));
                for (int w = 0; w < W; w++) acc[r][w] = _mm256_fmadd_ps(av, bv[w], acc[r][w]);
            }
        }
        int mode = p0 == 0 ? first_mode : STORE_ADD;
        for (int r = 0; r < R; r++) {
            float *c = g->c + (i0 + r) * g->ldc + j;
            for (int w = 0; w < W; w++)
                if (8 * w < cols) store_acc(c + 8 * w, acc[r][w], mode, vb, full, mask[w]);
        }
    }
}

/* Columns [begin*64, end*64) of C for plain or packed B, m <= SMALL_M: one
 * row block with 8 ymm accumulators (fewer rows, wider columns). */
static void small_m_task(void *arg, int64_t begin, int64_t end) {
    const gemm_job *g = arg;
    int64_t j0 = begin * 64, j_end = min64(end * 64, g->n);
    switch (g->m) {
    case 4:
        for (int64_t j = j0; j < j_end; j += 16) small_block(g, 0, 4, j, 2, min64(16, j_end - j));
        break;
    case 3:
        for (int64_t j = j0; j < j_end; j += 16) small_block(g, 0, 3, j, 2, min64(16, j_end - j));
        break;
    case 2:
        for (int64_t j = j0; j < j_end; j += 32) small_block(g, 0, 2, j, 4, min64(32, j_end - j));
        break;
    default:
        for (int64_t j = j0; j < j_end; j += 64) small_block(g, 0, 1, j, 8, min64(64, j_end - j));
        break;
    }
}

/* C[i0:i0+R, j:j+8G] for transposed B (rows of b are columns of op(B)),
 * `cols` valid: 8x8 blocks of b transposed in registers, so the sums run
 * along k one FMA at a time, as in the packed kernel. */
static inline __attribute__((always_inline)) void
small_tb_block(const gemm_job *g, int64_t i0, int R, int64_t j, int G, int64_t cols) {
    __m256 acc[SMALL_M][4];
    __m256i mask[4];
    const float *br[4][8];
    for (int h = 0; h < G; h++) {
        mask[h] = tail_mask(cols - 8 * h);
        for (int q = 0; q < 8; q++) {
            int64_t cq = 8 * h + q < cols ? 8 * h + q : 0;
            br[h][q] = g->b + (j + cq) * g->ldb;
        }
    }
    bool full = cols >= 8 * G;
    __m256 vb = _mm256_set1_ps(g->beta);
    int first_mode = first_store_mode(g->beta);
    for (int64_t p0 = 0; p0 < g->k; p0 += KC) {
        int64_t pend = min64(g->k, p0 + KC), p = p0;
        for (int r = 0; r < R; r++)
            for (int h = 0; h < G; h++) acc[r][h] = _mm256_setzero_ps();
        for (; p + 8 <= pend; p += 8) {
            float av[SMALL_M][8];
            for (int r = 0; r < R; r++)
                for (int q = 0; q < 8; q++) av[r][q] = g->alpha * a_at(g, i0 + r, p + q);
            for (int h = 0; h < G; h++) {
                __m256 t[8];
                for (int q = 0; q < 8; q++) t[q] = _mm256_loadu_ps(br[h][q] + p);
                transpose_8x8(t);
                for (int q = 0; q < 8; q++)
                    for (int r = 0; r < R; r++)
                        acc[r][h] = _mm256_fmadd_ps(_mm256_set1_ps(av[r][q]), t[q], acc[r][h]);
            }
        }
        for (; p < pend; p++) {
            for (int h = 0; h < G; h++) {
                const float *const *b8 = br[h];
                __m256 bv = _mm256_setr_ps(b8[0][p], b8[1][p], b8[2][p], b8[3][p], b8[4][p], b8[5][p],
                                           b8[6][p], b8[7][p]);
                for (int r = 0; r < R; r++)
                    acc[r][h] = _mm256_fmadd_ps(_mm256_set1_ps(g->alpha * a_at(g, i0 + r, p)), bv, acc[r][h]);
            }
        }
        int mode = p0 == 0 ? first_mode : STORE_ADD;
        for (int r = 0; r < R; r++) {
            float *c = g->c + (i0 + r) * g->ldc + j;
            for (int h = 0; h < G; h++)
                if (8 * h < cols) store_acc(c + 8 * h, acc[r][h], mode, vb, full, mask[h]);
        }
    }
}

/* Columns [begin*32, end*32) of C for transposed B, m <= SMALL_M. */
static void small_m_tb_task(void *arg, int64_t begin, int64_t end) {
    const gemm_job *g = arg;
    int64_t j0 = begin * 32, j_end = min64(end * 32, g->n);
    for (int64_t j = j0; j < j_end; j += 32) {
        int64_t cols = min64(32, j_end - j);
        switch (g->m) {
        case 4: small_tb_block(g, 0, 2, j, 4, cols), small_tb_block(g, 2, 2, j, 4, cols); break;
        case 3: small_tb_block(g, 0, 3, j, 4, cols); break;
        case 2: small_tb_block(g, 0, 2, j, 4, cols); break;
        default: small_tb_block(g, 0, 1, j, 4, cols); break;
        }
    }
}

/* ---- entry ---- */

/* A read in place (m <= DIRECT_A_MAX_M) where run_units declines (one
 * thread, or fewer units than threads): every task takes all the rows
 * and a panel of columns, so each B micro-panel is fetched by one task
 * only and A (at most 144 rows, kept in L2) is read by all.  One thread:
 * one task.  More: about COL_TASKS_PER_THREAD panels a thread (claimed
 * from the pool's counter, so a late thread takes fewer), each a whole
 * number of the kernel's column unit (32 with the AVX-512 pairs, 16 with
 * AVX2) and at least SMALL_TASK multiply-adds.  Replaces the split into
 * 72-row blocks x thirds of the columns, whose halves of unequal height
 * (72 + 56 rows at m = 128) left one thread idle at the end of each of a
 * batch-1 encoder's MatMuls and fetched every B panel twice.  False (g
 * untouched) when that gives fewer panels than threads (narrow C): the
 * row blocks then keep the threads busy. */
static bool col_split(gemm_job *g, int threads) {
    int64_t unit = g->wide ? 2 * NR : NR;
    int64_t tasks = threads > 1 ? COL_TASKS_PER_THREAD * (int64_t)threads : 1;
    int64_t nt = ((g->nc + tasks - 1) / tasks + unit - 1) / unit * unit;
    int64_t min_nt = (SMALL_TASK / (g->m * g->k) + unit - 1) / unit * unit;
    if (nt < min_nt) nt = min_nt;
    if (nt < unit) nt = unit;
    int64_t n_col_tasks = (g->nc + nt - 1) / nt;
    if (threads > 1 && n_col_tasks < threads) return false;
    g->mb = g->m;
    g->nt = nt;
    g->n_col_tasks = n_col_tasks;
    return true;
}

/* Runs compute_task over the slab in g (columns [j0, j0 + nc)).  Whole rows
 * of the slab per task (A packed once per k block) unless there are too few
 * row blocks to keep the threads busy; then the columns are split too, at
 * least NT_MIN wide.  With A read in place on several threads (a batch-1
 * transformer's MatMuls) every task takes all the rows and a column panel
 * (see col_split). */
static void compute_tasks(inf__pool *pool, gemm_job *g) {
    int threads = inf__pool_size(pool);
    int64_t want = threads > 1 ? 3 * (int64_t)threads : 1;
    inf__blocking bl;
    inf__blocking_get(&bl);
    /* alpha 1, plain A: the kernel broadcasts A from its rows in place (no
     * packing pass; alpha * a would be a anyway).  Rows 4 KiB apart too on
     * the avx512 path with a 48 KiB (12-way) L1d: the 6 rows' lines share a
     * set but fit in its ways (Zen 5, bert b1 ffn2 128x256x1024: 0.92x the
     * time with A packed, whose 72-row blocks also fetch B twice) */
    bool a_lda_ok = A_DIRECT_OK(g->lda) || (bl.gemm_wide_packed && inf__cpu_has_avx512());
    g->a_direct = !g->trans_a && g->alpha == 1.0f && g->lda > 0 && g->m <= DIRECT_A_MAX_M && a_lda_ok;
    /* the AVX-512 6x32 tiles where they measured faster: with A read in
     * place everywhere (bench_gemm: 1.0-1.1x on Zen 4, ~2x on Zen 5); with A
     * packed (large m, alpha != 1, rows 4 KiB apart) only when L1d holds the
     * pair's 32 KiB B block beside the A panels and the core runs zmm FMAs
     * at full width (Zen 5: 1.5-1.8x; Zen 4, 32 KiB L1d and split: 0.7-0.9x) */
    g->wide = inf__cpu_has_avx512() && (g->a_direct || (bl.gemm_wide_packed && inf__avx512_fma_full_width(NULL)));
    if (g->a_direct && run_units(pool, g, threads)) return;
    if (!g->a_direct || !col_split(g, threads)) {
        g->mb = bl.gemm_mc < MC_MAX ? bl.gemm_mc : MC_MAX;
        int64_t row_blocks = (g->m + g->mb - 1) / g->mb;
        int64_t splits = row_blocks >= want ? 1 : (want + row_blocks - 1) / row_blocks;
        g->nt = ((g->nc + splits - 1) / splits + NR - 1) / NR * NR;
        if (g->nt < NT_MIN) g->nt = NT_MIN;
        g->n_col_tasks = (g->nc + g->nt - 1) / g->nt;
    }
    int64_t row_blocks = (g->m + g->mb - 1) / g->mb;
    inf__pool_range(pool, row_blocks * g->n_col_tasks, 1, compute_task, g);
}

/* C = beta * C for k = 0. */
static void scale_only(int64_t m, int64_t n, float beta, float *c, int64_t ldc) {
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++) c[i * ldc + j] = beta == 0.0f ? 0.0f : beta * c[i * ldc + j];
}

/* m <= SMALL_M: columns split across the threads only from SMALL_TASK
 * multiply-adds a task (a hand-off costs more than a 256x256
 * matrix-vector product).  g->bp: op(B) packed whole, or NULL. */
static void small_m(inf__pool *pool, gemm_job *g) {
    if (g->bp || !g->trans_b) {
        int64_t min_blocks = SMALL_TASK / (g->m * g->k * 64) + 1; /* tasks of 64 columns */
        inf__pool_range(pool, (g->n + 63) / 64, min_blocks, small_m_task, g);
    } else {
        int64_t min_blocks = SMALL_TASK / (g->m * g->k * 32) + 1; /* tasks of 32 columns */
        inf__pool_range(pool, (g->n + 31) / 32, min_blocks, small_m_tb_task, g);
    }
}

bool inf__ops_sgemm_avx2(inf__pool *pool, bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k,
                         float alpha, const float *a, int64_t lda, const float *b, int64_t ldb,
                         float beta, float *c, int64_t ldc) {
    if (m <= 0 || n <= 0) return true;
    gemm_job g = {trans_a, trans_b, m, n, k, alpha, beta, a, b, lda, ldb, ldc, c, NULL, 0, 0, 0, 0, 0, false, NULL, false};
    if (k <= 0) {
        scale_only(m, n, beta, c, ldc);
        return true;
    }
    if (m <= SMALL_M) {
        small_m(pool, &g);
        return true;
    }
    g.j0 = 0;
    g.nc = n;
    if (!trans_b && m <= DIRECT_B_MAX_M && ldb <= DIRECT_B_MAX_LDB) {
        /* few row blocks: packing B would cost up to a third of the product;
         * the kernel reads plain, narrow B in place (a 16-column strip, KC
         * rows, stays in L1 when rows are close; wide rows -- 4 KiB apart
         * and more -- alias in L1 and the TLB, so those are packed) */
        compute_tasks(pool, &g);
        return true;
    }
    inf__blocking bl;
    inf__blocking_get(&bl);
    int64_t slab = bl.gemm_slab_floats / k / NR * NR;
    if (slab < NR) slab = NR;
    int64_t max_nc = min64(slab, (n + NR - 1) / NR * NR);
    g.bp = inf__pool_workspace(pool, (size_t)(max_nc * k) * sizeof(float));
    if (!g.bp) {
        /* no workspace (no pool, or out of memory): the same kernel, with
         * each task copying its B blocks on the stack -- slower, same bits */
        compute_tasks(pool, &g);
        return true;
    }
    for (int64_t j0 = 0; j0 < n; j0 += slab) {
        g.j0 = j0;
        g.nc = min64(slab, n - j0);
        int64_t n_panels = (g.nc + NR - 1) / NR;
        inf__pool_range(pool, n_panels, 8192 / k + 1, pack_b_task, &g);
        compute_tasks(pool, &g);
    }
    return true;
}

/* ---- op(B) packed ahead of time (constant weights) ---- */

int64_t inf__ops_sgemm_packed_floats(int64_t k, int64_t n) { return (n + NR - 1) / NR * NR * k; }

void inf__ops_sgemm_pack_b(bool trans_b, int64_t k, int64_t n, const float *b, int64_t ldb, float *dst) {
    gemm_job g = {false, trans_b, 0, n, k, 1.0f, 0.0f, NULL, b, 0, ldb, 0, NULL, dst, 0, n, 0, 0, 0, false, NULL, false};
    pack_b_task(&g, 0, (n + NR - 1) / NR);
}

void inf__ops_sgemm_packed_avx2(inf__pool *pool, bool trans_a, int64_t m, int64_t n, int64_t k, float alpha,
                                const float *a, int64_t lda, const float *bp, float beta, float *c,
                                int64_t ldc) {
    inf__ops_sgemm_packed_ep_avx2(pool, trans_a, m, n, k, alpha, a, lda, bp, beta, c, ldc, NULL);
}

void inf__ops_sgemm_packed_ep_avx2(inf__pool *pool, bool trans_a, int64_t m, int64_t n, int64_t k, float alpha,
                                   const float *a, int64_t lda, const float *bp, float beta, float *c, int64_t ldc,
                                   const inf__gemm_epilogue *ep) {
    if (m <= 0 || n <= 0) return;
    gemm_job g = {trans_a, false, m, n, k, alpha, beta, a, NULL, lda, 0, ldc, c, (float *)bp, 0, n, 0, 0, 0, false, ep, false};
    if (k <= 0 || m <= SMALL_M) {
        /* few rows (or none to sum): the product, then the epilogue in a
         * pass over the rows, still in cache */
        if (k <= 0) scale_only(m, n, beta, c, ldc);
        else small_m(pool, &g);
        if (ep) epilogue_rows(ep, c, ldc, 0, m, 0, n);
        return;
    }
    compute_tasks(pool, &g);
}

#endif /* x86-64 with AVX2 and FMA */
