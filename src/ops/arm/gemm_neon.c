/*
 * gemm_neon.c -- float32 matrix multiply with AArch64 NEON (Advanced SIMD),
 * the aarch64 twin of ops/x86/gemm_avx2.c behind inf__ops_sgemm.
 *
 * C[m,n] = alpha * op(A)[m,k] @ op(B)[k,n] + beta * C, row-major, leading
 * dimensions in elements.  Built only on aarch64 (CMake: src/ops/arm/) and
 * called from inf__ops_sgemm when inf__cpu_has_neon() (INFERA_CPU=generic
 * turns it off).
 *
 * DESIGN (sized for small in-order and mid-size out-of-order ARM cores):
 *   - A micro-tile is R rows x 8 columns of C (R = 8, 4, 2 or 1), held in
 *     2R q-registers.  The k loop is unrolled by 4: one q-load brings 4
 *     consecutive k values of a row of A, and `fmla v.4s, b.4s, a.s[lane]`
 *     multiplies them into the accumulators, so A is read in place (no
 *     packing) when it is plain and alpha = 1; a transposed A, or alpha != 1,
 *     is first copied row-major with alpha folded in.
 *   - op(B) is read in place, 8 floats of a row per k step, when it is
 *     plain; a transposed B too when A has at most 16 rows (4x4 blocks
 *     transposed in registers: packing would cost as much as the product),
 *     else it is packed into [k][8] panels before the tasks start, like the
 *     ragged last 8-column strip (zero-padded).
 *   - The thread pool's tasks are tiles of 8 rows x 64 columns of C.
 *   - Batch invariance (ops.h): every element of C is one fused
 *     multiply-add chain over k, in order, from 0, then times 1 (alpha is in
 *     A) plus beta * C -- whatever R, the tile, the thread split or the
 *     packing, so a row computed alone equals the same row in a batch, bit
 *     for bit (tests/aarch64/test_neon_gemm.c).
 * Returns false (nothing done) when it cannot get its packing buffers; the
 * caller then runs the portable kernel.
 */
#if defined(__aarch64__)
#include <arm_neon.h>
#include <math.h>
#include <string.h>

#include "core/core.h"
#include "ops/ops.h"
#include "ops/arm/neon.h"

enum { NR = 8, TILE_ROWS = 8, TILE_COLS = 64 };

typedef struct sgemm_neon_args {
    int64_t m, n, k;
    const float *a; /* row-major [m][k] (in place or the alpha-folded copy) */
    int64_t lda;
    const float *b;  /* B in place (ldb) for the strips before first_packed_strip */
    int64_t ldb;
    bool trans_b;
    const float *bp; /* packed strips [n_strips][k][8] (all, or only the ragged last one) */
    int64_t first_packed_strip;
    float beta;
    float *c;
    int64_t ldc;
} sgemm_neon_args;

/* acc[R][8] += A[R rows][k] x B[k][8] (B rows `ldb` apart), k in order. */
#define DEFINE_TILE(R)                                                                                      \
    static void tile_##R(const float *a, int64_t lda, const float *b, int64_t ldb, int64_t k, float *out) { \
        float32x4_t lo[R], hi[R];                                                                           \
        for (int r = 0; r < R; r++) lo[r] = hi[r] = vdupq_n_f32(0.0f);                                      \
        int64_t p = 0;                                                                                      \
        for (; p + 4 <= k; p += 4) {                                                                        \
            float32x4_t av[R];                                                                              \
            for (int r = 0; r < R; r++) av[r] = vld1q_f32(a + r * lda + p);                                 \
            const float *bq = b + p * ldb;                                                                  \
            float32x4_t b0 = vld1q_f32(bq), b1 = vld1q_f32(bq + 4);                                         \
            for (int r = 0; r < R; r++)                                                                     \
                lo[r] = vfmaq_laneq_f32(lo[r], b0, av[r], 0), hi[r] = vfmaq_laneq_f32(hi[r], b1, av[r], 0); \
            b0 = vld1q_f32(bq + ldb), b1 = vld1q_f32(bq + ldb + 4);                                         \
            for (int r = 0; r < R; r++)                                                                     \
                lo[r] = vfmaq_laneq_f32(lo[r], b0, av[r], 1), hi[r] = vfmaq_laneq_f32(hi[r], b1, av[r], 1); \
            b0 = vld1q_f32(bq + 2 * ldb), b1 = vld1q_f32(bq + 2 * ldb + 4);                                 \
            for (int r = 0; r < R; r++)                                                                     \
                lo[r] = vfmaq_laneq_f32(lo[r], b0, av[r], 2), hi[r] = vfmaq_laneq_f32(hi[r], b1, av[r], 2); \
            b0 = vld1q_f32(bq + 3 * ldb), b1 = vld1q_f32(bq + 3 * ldb + 4);                                 \
            for (int r = 0; r < R; r++)                                                                     \
                lo[r] = vfmaq_laneq_f32(lo[r], b0, av[r], 3), hi[r] = vfmaq_laneq_f32(hi[r], b1, av[r], 3); \
        }                                                                                                   \
        for (; p < k; p++) {                                                                                \
            float32x4_t b0 = vld1q_f32(b + p * ldb), b1 = vld1q_f32(b + p * ldb + 4);                       \
            for (int r = 0; r < R; r++) {                                                                   \
                float32x4_t av = vdupq_n_f32(a[r * lda + p]);                                               \
                lo[r] = vfmaq_f32(lo[r], b0, av), hi[r] = vfmaq_f32(hi[r], b1, av);                         \
            }                                                                                               \
        }                                                                                                   \
        for (int r = 0; r < R; r++) vst1q_f32(out + r * NR, lo[r]), vst1q_f32(out + r * NR + 4, hi[r]);     \
    }
DEFINE_TILE(8)
DEFINE_TILE(4)
DEFINE_TILE(2)
DEFINE_TILE(1)

/* Columns p..p+3 of four rows of B^T (rows `ldb` apart) as four vectors of
 * op(B) rows: a 4x4 transpose in registers. */
static inline void load_t4(const float *bt, int64_t ldb, float32x4_t out[4]) {
    float32x4_t r0 = vld1q_f32(bt), r1 = vld1q_f32(bt + ldb), r2 = vld1q_f32(bt + 2 * ldb), r3 = vld1q_f32(bt + 3 * ldb);
    float64x2_t t0 = vreinterpretq_f64_f32(vtrn1q_f32(r0, r1)), t1 = vreinterpretq_f64_f32(vtrn2q_f32(r0, r1));
    float64x2_t t2 = vreinterpretq_f64_f32(vtrn1q_f32(r2, r3)), t3 = vreinterpretq_f64_f32(vtrn2q_f32(r2, r3));
    out[0] = vreinterpretq_f32_f64(vtrn1q_f64(t0, t2)), out[1] = vreinterpretq_f32_f64(vtrn1q_f64(t1, t3));
    out[2] = vreinterpretq_f32_f64(vtrn2q_f64(t0, t2)), out[3] = vreinterpretq_f32_f64(vtrn2q_f64(t1, t3));
}

/* As tile_R with op(B) = B^T read in place: bt points at the strip's first
 * column of op(B), i.e. row j of B; the same fma chains as the packed path
 * (few rows of A: packing B would cost as much as the product). */
#define DEFINE_TILE_T(R)                                                                                      \
    static void tile_t_##R(const float *a, int64_t lda, const float *bt, int64_t ldb, int64_t k, float *out) { \
        float32x4_t lo[R], hi[R];                                                                             \
        for (int r = 0; r < R; r++) lo[r] = hi[r] = vdupq_n_f32(0.0f);                                        \
        int64_t p = 0;                                                                                        \
        for (; p + 4 <= k; p += 4) {                                                                          \
            float32x4_t bl[4], bh[4], av[R];                                                                  \
            load_t4(bt + p, ldb, bl), load_t4(bt + 4 * ldb + p, ldb, bh);                                     \
            for (int r = 0; r < R; r++) av[r] = vld1q_f32(a + r * lda + p);                                   \
            for (int r = 0; r < R; r++)                                                                       \
                lo[r] = vfmaq_laneq_f32(lo[r], bl[0], av[r], 0), hi[r] = vfmaq_laneq_f32(hi[r], bh[0], av[r], 0); \
            for (int r = 0; r < R; r++)                                                                       \
                lo[r] = vfmaq_laneq_f32(lo[r], bl[1], av[r], 1), hi[r] = vfmaq_laneq_f32(hi[r], bh[1], av[r], 1); \
            for (int r = 0; r < R; r++)                                                                       \
                lo[r] = vfmaq_laneq_f32(lo[r], bl[2], av[r], 2), hi[r] = vfmaq_laneq_f32(hi[r], bh[2], av[r], 2); \
            for (int r = 0; r < R; r++)                                                                       \
                lo[r] = vfmaq_laneq_f32(lo[r], bl[3], av[r], 3), hi[r] = vfmaq_laneq_f32(hi[r], bh[3], av[r], 3); \
        }                                                                                                     \
        for (; p < k; p++) {                                                                                  \
            float col[NR];                                                                                    \
            for (int q = 0; q < NR; q++) col[q] = bt[q * ldb + p];                                            \
            float32x4_t b0 = vld1q_f32(col), b1 = vld1q_f32(col + 4);                                         \
            for (int r = 0; r < R; r++) {                                                                     \
                float32x4_t av = vdupq_n_f32(a[r * lda + p]);                                                 \
                lo[r] = vfmaq_f32(lo[r], b0, av), hi[r] = vfmaq_f32(hi[r], b1, av);                           \
            }                                                                                                 \
        }                                                                                                     \
        for (int r = 0; r < R; r++) vst1q_f32(out + r * NR, lo[r]), vst1q_f32(out + r * NR + 4, hi[r]);       \
    }
DEFINE_TILE_T(8)
DEFINE_TILE_T(4)
DEFINE_TILE_T(2)
DEFINE_TILE_T(1)

typedef void (*tile_fn)(const float *a, int64_t lda, const float *b, int64_t ldb, int64_t k, float *out);
static const tile_fn TILES[2][4] = {{tile_8, tile_4, tile_2, tile_1}, {tile_t_8, tile_t_4, tile_t_2, tile_t_1}};

/* C rows [i0, i0+rows) x columns [j, j+cols) of the strip from acc. */
static void store(const sgemm_neon_args *g, int64_t i0, int rows, int64_t j, int64_t cols, const float *acc) {
    for (int r = 0; r < rows; r++) {
        float *c = g->c + (i0 + r) * g->ldc + j;
        const float *s = acc + r * NR;
        if (cols == NR) {
            float32x4_t v0 = vld1q_f32(s), v1 = vld1q_f32(s + 4);
            if (g->beta != 0.0f) {
                float32x4_t vb = vdupq_n_f32(g->beta);
                v0 = vfmaq_f32(v0, vb, vld1q_f32(c)), v1 = vfmaq_f32(v1, vb, vld1q_f32(c + 4));
            }
            vst1q_f32(c, v0), vst1q_f32(c + 4, v1);
        } else {
            for (int64_t q = 0; q < cols; q++) c[q] = g->beta != 0.0f ? fmaf(g->beta, c[q], s[q]) : s[q];
        }
    }
}

static void strip(const sgemm_neon_args *g, int64_t i0, int64_t rows, int64_t s) {
    int64_t j = s * NR, cols = g->n - j < NR ? g->n - j : NR;
    bool packed = s >= g->first_packed_strip;
    const float *b = packed ? g->bp + (s - g->first_packed_strip) * g->k * NR
                     : g->trans_b ? g->b + j * g->ldb : g->b + j;
    int64_t ldb = packed ? NR : g->ldb;
    const tile_fn *tiles = TILES[!packed && g->trans_b];
    float acc[TILE_ROWS * NR];
    const float *a = g->a + i0 * g->lda;
    /* rows in groups of 8, then 4 + 2 + 1: every element is the same chain */
    static const int GROUP[4] = {8, 4, 2, 1};
    for (int64_t i = 0, t = 0; i < rows; i += GROUP[t]) {
        while (rows - i < GROUP[t]) t++;
        tiles[t](a + i * g->lda, g->lda, b, ldb, g->k, acc);
        store(g, i0 + i, GROUP[t], j, cols, acc);
    }
}

static void sgemm_tiles(void *arg, int64_t begin, int64_t end) {
    const sgemm_neon_args *g = arg;
    int64_t col_tiles = (g->n + TILE_COLS - 1) / TILE_COLS;
    for (int64_t t = begin; t < end; t++) {
        int64_t i0 = (t / col_tiles) * TILE_ROWS, j0 = (t % col_tiles) * TILE_COLS;
        int64_t rows = g->m - i0 < TILE_ROWS ? g->m - i0 : TILE_ROWS;
        int64_t j1 = j0 + TILE_COLS < g->n ? j0 + TILE_COLS : g->n;
        for (int64_t s = j0 / NR; s * NR < j1; s++) strip(g, i0, rows, s);
    }
}

/* [k][8] panel of op(B) columns [j, j+8), zero past n. */
static void pack_strip(bool trans_b, int64_t k, int64_t n, const float *b, int64_t ldb, int64_t j, float *dst) {
    int64_t cols = n - j < NR ? n - j : NR;
    for (int64_t p = 0; p < k; p++) {
        float *d = dst + p * NR;
        for (int64_t q = 0; q < cols; q++) d[q] = trans_b ? b[(j + q) * ldb + p] : b[p * ldb + j + q];
        for (int64_t q = cols; q < NR; q++) d[q] = 0.0f;
    }
}

static void scale_c(int64_t m, int64_t n, float beta, float *c, int64_t ldc) {
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++) c[i * ldc + j] = beta == 0.0f ? 0.0f : beta * c[i * ldc + j];
}

bool inf__ops_sgemm_neon(inf__pool *pool, bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha,
                         const float *a, int64_t lda, const float *b, int64_t ldb, float beta, float *c,
                         int64_t ldc) {
    if (m <= 0 || n <= 0) return true;
    if (k <= 0) {
        scale_c(m, n, beta, c, ldc);
        return true;
    }
    int64_t strips = (n + NR - 1) / NR;
    /* B in place but for a ragged last strip; a transposed B with many rows
     * of A is packed (its cost is spread over the row blocks) */
    int64_t first_packed = trans_b && m > 2 * TILE_ROWS ? 0 : n / NR;
    bool copy_a = trans_a || alpha != 1.0f;
    size_t b_floats = (size_t)((strips - first_packed) * k * NR), a_floats = copy_a ? (size_t)(m * k) : 0;
    /* the packed operands in the pool's workspace (kept across calls: a warm
     * run allocates nothing); a heap block only without a pool (a caller
     * inside another job's task) */
    float *buf = NULL;
    bool owned = false;
    if (a_floats + b_floats > 0) {
        size_t bytes = (a_floats + b_floats) * sizeof(float);
        buf = inf__pool_workspace(pool, bytes);
        if (!buf) {
            buf = inf__malloc(bytes);
            owned = true;
        }
        if (!buf) return false;
    }
    float *bp = buf, *ap = buf + b_floats;
    for (int64_t s = first_packed; s < strips; s++)
        pack_strip(trans_b, k, n, b, ldb, s * NR, bp + (s - first_packed) * k * NR);
    if (copy_a)
        for (int64_t i = 0; i < m; i++)
            for (int64_t p = 0; p < k; p++) ap[i * k + p] = alpha * (trans_a ? a[p * lda + i] : a[i * lda + p]);
    sgemm_neon_args g = {m, n, k, copy_a ? ap : a, copy_a ? k : lda, b, ldb, trans_b, bp, first_packed,
                         beta, c, ldc};
    int64_t tiles = ((m + TILE_ROWS - 1) / TILE_ROWS) * ((n + TILE_COLS - 1) / TILE_COLS);
    int64_t min_tiles = (int64_t)TILE_ROWS * TILE_COLS * k >= 32768 ? 1 : 32768 / (TILE_ROWS * TILE_COLS * k) + 1;
    inf__pool_range(pool, tiles, min_tiles, sgemm_tiles, &g);
    if (owned) inf__free(buf);
    return true;
}

#endif /* __aarch64__ */
