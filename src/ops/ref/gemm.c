/*
 * gemm.c -- reference kernels for Gemm and MatMul, and the float32 matrix
 * multiply (inf__ops_sgemm) that Gemm, MatMul, Conv and ConvTranspose share.
 *
 * ONNX ops:
 *   Gemm    opsets 1-17: Y = alpha * A' * B' + beta * C, A' = transA ? A^T : A,
 *           B' likewise; C optional (required before opset 11) and
 *           unidirectionally broadcast to (M, N).  Before opset 7 the
 *           `broadcast` attribute must be set unless C is exactly (M, N).
 *   MatMul  opsets 1-17: numpy matmul: 1-D operands are promoted (A to
 *           [1, K], B to [K, 1]) and the added dimension removed from the
 *           result; leading (batch) dimensions broadcast.
 * dtypes: float32 (blocked sgemm, threaded), float64, int32, int64, uint32,
 *         uint64 (plain loops; integer products wrap modulo 2^width),
 *         float16 and bfloat16 (converted to float32, computed, rounded back).
 * Deviations: for integer Gemm, alpha and beta are applied in double when
 *         they are not 1 and the result is truncated to the integer type.
 *         float16/bfloat16 are staged through float32 copies in the kernel's
 *         scratch memory (inf__kernel_scratch).
 *
 * The sgemm: C = alpha * op(A) * op(B) + beta * C, row-major with leading
 * dimensions.  C is split into MC x NC tiles that are the thread pool's
 * tasks; each task walks K in KC steps, packs its A block (4-row panels,
 * alpha folded in) and its B block (8-column panels) on the stack so that
 * transposed and plain operands take the same path, and runs a 4x8 register
 * micro-kernel the compiler vectorises.  When M is tiny (a vector times a
 * matrix) packing would waste 3/4 of the work, so rows are computed directly
 * and the columns split across the threads.
 *
 * Callers: op_gemm, op_matmul (here), op_conv and op_conv_transpose
 * (ref/conv.c).  Must not be called from inside a pool task (the pool takes
 * one caller at a time).
 */
#include <math.h>
#include <string.h>

#include "ops/ops.h"
#include "ops/vmath.h"
#include "core/cpu.h"
#include "ops/arm/neon.h"

/* ======================================================================== */
/*  sgemm                                                                    */
/* ======================================================================== */

enum { MR = 4, NR = 8, MC = 32, NC = 64, KC = 128 };

typedef struct sgemm_args {
    bool trans_a, trans_b;
    int64_t m, n, k;
    float alpha, beta;
    const float *a, *b;
    int64_t lda, ldb, ldc;
    float *c;
    int64_t n_col_tiles;
} sgemm_args;

/* Packs rows [i0, i0+mc) x cols [p0, p0+kc) of op(A), times alpha, as
 * MR-row panels laid out [k][MR]; missing rows are zero. */
static void pack_a(const sgemm_args *g, int64_t i0, int64_t mc, int64_t p0, int64_t kc,
                   float *restrict dst) {
    for (int64_t ip = 0; ip < mc; ip += MR) {
        int64_t rows = mc - ip < MR ? mc - ip : MR;
        for (int64_t p = 0; p < kc; p++) {
            for (int64_t r = 0; r < MR; r++) {
                float v = 0.0f;
                if (r < rows) {
                    int64_t i = i0 + ip + r, kk = p0 + p;
                    v = g->trans_a ? g->a[kk * g->lda + i] : g->a[i * g->lda + kk];
                    v *= g->alpha;
                }
                *dst++ = v;
            }
        }
    }
}

/* Packs rows [p0, p0+kc) x cols [j0, j0+nc) of op(B) as NR-column panels
 * laid out [k][NR]; missing columns are zero. */
static void pack_b(const sgemm_args *g, int64_t p0, int64_t kc, int64_t j0, int64_t nc,
                   float *restrict dst) {
    for (int64_t jp = 0; jp < nc; jp += NR) {
        int64_t cols = nc - jp < NR ? nc - jp : NR;
        for (int64_t p = 0; p < kc; p++) {
            int64_t kk = p0 + p;
            if (!g->trans_b && cols == NR) {
                memcpy(dst, g->b + kk * g->ldb + j0 + jp, NR * sizeof(float));
                dst += NR;
                continue;
            }
            for (int64_t j = 0; j < NR; j++) {
                float v = 0.0f;
                if (j < cols) {
                    int64_t jj = j0 + jp + j;
                    v = g->trans_b ? g->b[jj * g->ldb + kk] : g->b[kk * g->ldb + jj];
                }
                *dst++ = v;
            }
        }
    }
}

/* acc[MR][NR] = sum over k of a[k][r] * b[k][j].  With GCC/Clang the 4x8
 * tile is held in eight 4-float vector registers (generic vectors, which the
 * compiler lowers to SSE, AVX or NEON); otherwise plain loops. */
#if defined(__GNUC__)
typedef float v4f __attribute__((vector_size(16)));
static void micro_kernel(int64_t kc, const float *restrict a, const float *restrict b,
                         float acc[MR][NR]) {
    v4f c00 = {0}, c01 = {0}, c10 = {0}, c11 = {0}, c20 = {0}, c21 = {0}, c30 = {0}, c31 = {0};
    for (int64_t p = 0; p < kc; p++) {
        v4f b0, b1;
        memcpy(&b0, b + p * NR, sizeof b0);
        memcpy(&b1, b + p * NR + 4, sizeof b1);
        const float *ap = a + p * MR;
        v4f a0 = {ap[0], ap[0], ap[0], ap[0]}, a1 = {ap[1], ap[1], ap[1], ap[1]};
        v4f a2 = {ap[2], ap[2], ap[2], ap[2]}, a3 = {ap[3], ap[3], ap[3], ap[3]};
        c00 += a0 * b0, c01 += a0 * b1;
        c10 += a1 * b0, c11 += a1 * b1;
        c20 += a2 * b0, c21 += a2 * b1;
        c30 += a3 * b0, c31 += a3 * b1;
    }
    memcpy(&acc[0][0], &c00, 16), memcpy(&acc[0][4], &c01, 16);
    memcpy(&acc[1][0], &c10, 16), memcpy(&acc[1][4], &c11, 16);
    memcpy(&acc[2][0], &c20, 16), memcpy(&acc[2][4], &c21, 16);
    memcpy(&acc[3][0], &c30, 16), memcpy(&acc[3][4], &c31, 16);
}
#else
static void micro_kernel(int64_t kc, const float *restrict a, const float *restrict b,
                         float acc[MR][NR]) {
    float t[MR][NR] = {{0}};
    for (int64_t p = 0; p < kc; p++) {
        const float *ap = a + p * MR, *bp = b + p * NR;
        for (int r = 0; r < MR; r++)
            for (int j = 0; j < NR; j++) t[r][j] += ap[r] * bp[j];
    }
    memcpy(acc, t, sizeof t);
}
#endif

/* C[rows, cols] *= beta (set to 0 when beta is 0, so NaN garbage goes). */
static void scale_c(const sgemm_args *g, int64_t i0, int64_t i1, int64_t j0, int64_t j1) {
    for (int64_t i = i0; i < i1; i++) {
        float *row = g->c + i * g->ldc;
        if (g->beta == 0.0f)
            for (int64_t j = j0; j < j1; j++) row[j] = 0.0f;
        else if (g->beta != 1.0f)
            for (int64_t j = j0; j < j1; j++) row[j] *= g->beta;
    }
}

/* One MC x NC tile of C per task. */
static void sgemm_tiles(void *arg, int64_t begin, int64_t end) {
    const sgemm_args *g = arg;
    float apack[MC * KC], bpack[KC * NC];
    for (int64_t t = begin; t < end; t++) {
        int64_t i0 = (t / g->n_col_tiles) * MC, j0 = (t % g->n_col_tiles) * NC;
        int64_t mc = g->m - i0 < MC ? g->m - i0 : MC;
        int64_t nc = g->n - j0 < NC ? g->n - j0 : NC;
        scale_c(g, i0, i0 + mc, j0, j0 + nc);
        for (int64_t p0 = 0; p0 < g->k; p0 += KC) {
            int64_t kc = g->k - p0 < KC ? g->k - p0 : KC;
            pack_a(g, i0, mc, p0, kc, apack);
            pack_b(g, p0, kc, j0, nc, bpack);
            for (int64_t ip = 0; ip < mc; ip += MR) {
                int64_t rows = mc - ip < MR ? mc - ip : MR;
                for (int64_t jp = 0; jp < nc; jp += NR) {
                    int64_t cols = nc - jp < NR ? nc - jp : NR;
                    float acc[MR][NR];
                    micro_kernel(kc, apack + ip * kc, bpack + jp * kc, acc);
                    for (int64_t r = 0; r < rows; r++) {
                        float *crow = g->c + (i0 + ip + r) * g->ldc + j0 + jp;
                        for (int64_t j = 0; j < cols; j++) crow[j] += acc[r][j];
                    }
                }
            }
        }
    }
}

/* Few rows (m < MR): no packing, but every C element summed exactly as
 * sgemm_tiles sums it -- C scaled by beta, then per KC block of k,
 * acc = sum over p in order of (A(i,p) * alpha) * B(p,j) from 0, C += acc --
 * so a row's result does not depend on m, the path or the thread split
 * (batch invariance, DESIGN.md section 1).  Columns [begin, end). */
static void sgemm_small_m(void *arg, int64_t begin, int64_t end) {
    const sgemm_args *g = arg;
    enum { JB = 64 };
    scale_c(g, 0, g->m, begin, end);
    for (int64_t i = 0; i < g->m; i++) {
        float *restrict crow = g->c + i * g->ldc;
        for (int64_t p0 = 0; p0 < g->k; p0 += KC) {
            int64_t kc = g->k - p0 < KC ? g->k - p0 : KC;
            float av[KC];
            for (int64_t p = 0; p < kc; p++) {
                int64_t kk = p0 + p;
                av[p] = g->trans_a ? g->a[kk * g->lda + i] : g->a[i * g->lda + kk];
                av[p] *= g->alpha;
            }
            if (g->trans_b) {
                /* dot products along contiguous rows of b, one at a time */
                for (int64_t j = begin; j < end; j++) {
                    const float *restrict brow = g->b + j * g->ldb + p0;
                    float acc = 0.0f;
                    for (int64_t p = 0; p < kc; p++) acc += av[p] * brow[p];
                    crow[j] += acc;
                }
                continue;
            }
            for (int64_t j0 = begin; j0 < end; j0 += JB) {
                int64_t jn = end - j0 < JB ? end - j0 : JB;
                float acc[JB] = {0};
                for (int64_t p = 0; p < kc; p++) {
                    const float *restrict brow = g->b + (p0 + p) * g->ldb + j0;
                    for (int64_t j = 0; j < jn; j++) acc[j] += av[p] * brow[j];
                }
                for (int64_t j = 0; j < jn; j++) crow[j0 + j] += acc[j];
            }
        }
    }
}

void inf__ops_sgemm_ref(inf__pool *pool, bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k,
                        float alpha, const float *a, int64_t lda, const float *b, int64_t ldb,
                        float beta, float *c, int64_t ldc) {
    if (m <= 0 || n <= 0) return;
    sgemm_args g = {trans_a, trans_b, m, n, k, alpha, beta, a, b, lda, ldb, ldc, c, 0};
    if (m < MR) {
        /* about 16k multiply-adds per task is worth a thread hand-off */
        int64_t min_cols = 16384 / (m * (k > 0 ? k : 1)) + 1;
        inf__pool_range(pool, n, min_cols, sgemm_small_m, &g);
        return;
    }
    g.n_col_tiles = (n + NC - 1) / NC;
    int64_t n_tiles = ((m + MC - 1) / MC) * g.n_col_tiles;
    int64_t min_tiles = (int64_t)MC * NC * (k > 0 ? k : 1) >= 32768 ? 1 : 4;
    inf__pool_range(pool, n_tiles, min_tiles, sgemm_tiles, &g);
}

/* The shared entry: the AVX2/FMA twin (ops/x86/gemm_avx2.c) or the NEON one
 * (ops/arm/gemm_neon.c) when the CPU has it, else (or when it cannot get its
 * workspace) the portable path. */
void inf__ops_sgemm(inf__pool *pool, bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k,
                    float alpha, const float *a, int64_t lda, const float *b, int64_t ldb,
                    float beta, float *c, int64_t ldc) {
#if defined(__x86_64__)
    if (inf__cpu_has_avx2_fma() &&
        inf__ops_sgemm_avx2(pool, trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc))
        return;
#elif defined(__aarch64__)
    if (inf__cpu_has_neon() &&
        inf__ops_sgemm_neon(pool, trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc))
        return;
#endif
    inf__ops_sgemm_ref(pool, trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

/* The calling thread's prepack log (see ops.h), or NULL: set only for the
 * span of one model load by the bundle compiler or loader. */
static _Thread_local inf__prepack_log *tl_prepack;

void inf__ops_prepack_begin(inf__prepack_log *log) { tl_prepack = log; }
void inf__ops_prepack_end(void) { tl_prepack = NULL; }
inf__prepack_log *inf__ops_prepack_current(void) { return tl_prepack; }

#if defined(__x86_64__) /* packed panels are x86 only (bundles store x86 panels) */
static const float *prepack_supplied(const inf__prepack_log *log, bool trans_b, int64_t k, int64_t n,
                                     const float *b, int64_t ldb) {
    for (int i = 0; i < log->n; i++) {
        const inf__prepack_entry *e = &log->items[i];
        if (e->b == b && e->trans_b == trans_b && e->k == k && e->n == n && e->ldb == ldb &&
            e->floats == inf__ops_sgemm_packed_floats(k, n))
            return e->panels;
    }
    return NULL;
}

static void prepack_record(inf__prepack_log *log, bool trans_b, int64_t k, int64_t n, const float *b, int64_t ldb,
                           const float *panels) {
    if (inf__array_reserve((void **)&log->items, &log->cap, log->n + 1, sizeof *log->items)) {
        log->oom = true;
        return;
    }
    log->items[log->n++] = (inf__prepack_entry){b, trans_b, k, n, ldb, panels, inf__ops_sgemm_packed_floats(k, n)};
}
#endif

inf_status inf__ops_sgemm_prepack(inf__arena *arena, bool trans_b, int64_t k, int64_t n, const float *b,
                                  int64_t ldb, const float **out) {
    *out = NULL;
#if defined(__x86_64__)
    if (!inf__cpu_has_avx2_fma() || k <= 0 || n <= 0) return INF_OK;
    inf__prepack_log *log = tl_prepack;
    if (log && log->supply && (*out = prepack_supplied(log, trans_b, k, n, b, ldb))) return INF_OK;
    size_t bytes = (size_t)inf__ops_sgemm_packed_floats(k, n) * sizeof(float) + 32;
    char *raw = inf__arena_alloc(arena, bytes);
    if (!raw) return INF_ENOMEM;
    float *dst = (float *)(((uintptr_t)raw + 31) & ~(uintptr_t)31);
    inf__ops_sgemm_pack_b(trans_b, k, n, b, ldb, dst);
    *out = dst;
    if (log && !log->supply) prepack_record(log, trans_b, k, n, b, ldb, dst);
#else
    (void)arena, (void)trans_b, (void)k, (void)n, (void)b, (void)ldb;
#endif
    return INF_OK;
}

void inf__ops_sgemm_unpack_b(bool trans_b, int64_t k, int64_t n, const float *panels, float *b) {
    const int64_t nr = INF__SGEMM_PANEL_COLS;
    for (int64_t j0 = 0; j0 < n; j0 += nr) {
        const float *pnl = panels + j0 * k; /* panel j0 / nr: [k][nr] */
        int64_t cols = n - j0 < nr ? n - j0 : nr;
        for (int64_t p = 0; p < k; p++)
            for (int64_t c = 0; c < cols; c++) {
                float v = pnl[p * nr + c];
                if (trans_b)
                    b[(j0 + c) * k + p] = v; /* B [n, k] */
                else
                    b[p * n + j0 + c] = v; /* B [k, n] */
            }
    }
}

/* The kernels below read a constant B only through its panels once they
 * have them: Gemm (sgemm_packed), MatMul with a 2-D B (one folded product)
 * and FusedMatMul (fused_mm_compute); each falls back to the plain matrix
 * only when the run's B is not that constant. */
bool inf__ops_gemm_b_panels_only(const inf__node *node, int input, bool *trans_b) {
    *trans_b = false;
    if (input != 1 || !node->op) return false;
    if (node->op->domain == INF_DOMAIN_INFERA) return !strcmp(node->op_type, "FusedMatMul");
    if (node->op->domain != INF_DOMAIN_ONNX) return false;
    if (!strcmp(node->op_type, "Gemm")) {
        *trans_b = inf__attr_int(node, "transB", 0) != 0;
        return true;
    }
    return !strcmp(node->op_type, "MatMul");
}

/* ======================================================================== */
/*  plain loops for the other dtypes                                         */
/* ======================================================================== */

/* C[m, n] (dense) = A * B with element strides: A(i,p) = a[i*ars + p*acs],
 * B(p,j) = b[p*brs + j*bcs].  Signed integers use the unsigned variant:
 * same bits in two's complement, no overflow UB. */
#define DEFINE_NAIVE_GEMM(NAME, T)                                                              \
    static void NAME(int64_t m, int64_t n, int64_t k, const T *a, int64_t ars, int64_t acs,     \
                     const T *b, int64_t brs, int64_t bcs, T *c) {                              \
        for (int64_t i = 0; i < m; i++) {                                                       \
            T *crow = c + i * n;                                                                \
            for (int64_t j = 0; j < n; j++) crow[j] = 0;                                        \
            for (int64_t p = 0; p < k; p++) {                                                   \
                T av = a[i * ars + p * acs];                                                    \
                const T *bp = b + p * brs;                                                      \
                for (int64_t j = 0; j < n; j++) crow[j] += av * bp[j * bcs];                    \
            }                                                                                   \
        }                                                                                       \
    }
DEFINE_NAIVE_GEMM(gemm_f64, double)
DEFINE_NAIVE_GEMM(gemm_u32, uint32_t)
DEFINE_NAIVE_GEMM(gemm_u64, uint64_t)

static bool is_half(inf_dtype t) { return t == INF_DTYPE_F16 || t == INF_DTYPE_BF16; }

static bool matmul_dtype_ok(inf_dtype t) {
    switch (t) {
    case INF_DTYPE_F32: case INF_DTYPE_F64: case INF_DTYPE_F16: case INF_DTYPE_BF16:
    case INF_DTYPE_I32: case INF_DTYPE_I64: case INF_DTYPE_U32: case INF_DTYPE_U64:
        return true;
    default:
        return false;
    }
}

/* Reads a float16/bfloat16 tensor into a float32 scratch buffer (NULL: no
 * memory, the error is set). */
static float *half_to_f32(inf__kernel_ctx *ctx, const inf_tensor *t) {
    int64_t n = inf_tensor_numel(t);
    float *f = inf__kernel_scratch(ctx, (size_t)(n > 0 ? n : 1) * sizeof(float));
    if (!f) return NULL;
    const uint16_t *h = t->data;
    if (t->dtype == INF_DTYPE_F16)
        for (int64_t i = 0; i < n; i++) f[i] = inf_f16_to_f32(h[i]);
    else
        for (int64_t i = 0; i < n; i++) f[i] = inf_bf16_to_f32(h[i]);
    return f;
}

static void f32_to_half(const float *f, inf_tensor *t) {
    int64_t n = inf_tensor_numel(t);
    uint16_t *h = t->data;
    if (t->dtype == INF_DTYPE_F16)
        for (int64_t i = 0; i < n; i++) h[i] = inf_f32_to_f16(f[i]);
    else
        for (int64_t i = 0; i < n; i++) h[i] = inf_f32_to_bf16(f[i]);
}

/* Generic matrix product for the non-float32 dtypes, dispatching on dtype
 * (signed ints reuse the unsigned loops). */
static void gemm_typed(inf_dtype t, int64_t m, int64_t n, int64_t k, const void *a, int64_t ars,
                       int64_t acs, const void *b, int64_t brs, int64_t bcs, void *c) {
    switch (t) {
    case INF_DTYPE_F64: gemm_f64(m, n, k, a, ars, acs, b, brs, bcs, c); break;
    case INF_DTYPE_I32:
    case INF_DTYPE_U32: gemm_u32(m, n, k, a, ars, acs, b, brs, bcs, c); break;
    case INF_DTYPE_I64:
    case INF_DTYPE_U64: gemm_u64(m, n, k, a, ars, acs, b, brs, bcs, c); break;
    default: break;
    }
}

/* ======================================================================== */
/*  Gemm                                                                     */
/* ======================================================================== */

/* A constant float32 B packed at load for the AVX2 kernel
 * (inf__ops_sgemm_prepack): used while the run's B is still that constant
 * (same data; an initializer the caller overrides takes the unpacked path). */
typedef struct packed_b {
    const float *panels; /* NULL: none */
    const void *src;     /* the constant's data */
    int64_t k, n;
} packed_b;

static inf_status packed_b_make(inf__node *node, inf__arena *arena, int input, bool trans_b, packed_b *pb) {
    const inf_tensor *t = inf__node_constant_input(node, input);
    pb->panels = NULL;
    if (!t || t->dtype != INF_DTYPE_F32 || t->ndim != 2 || !t->data) return INF_OK;
    pb->k = trans_b ? t->dims[1] : t->dims[0];
    pb->n = trans_b ? t->dims[0] : t->dims[1];
    pb->src = t->data;
    return inf__ops_sgemm_prepack(arena, trans_b, pb->k, pb->n, t->data, t->dims[1], &pb->panels);
}

/* C = alpha * op(A) * B + beta * C with B the packed constant, when b is
 * still it; false (nothing done) otherwise. */
static bool sgemm_packed(inf__pool *pool, const packed_b *pb, const inf_tensor *b, bool trans_a, int64_t m,
                         int64_t n, int64_t k, float alpha, const float *a, int64_t lda, float beta, float *c,
                         int64_t ldc) {
    if (!pb->panels || b->data != pb->src || b->dtype != INF_DTYPE_F32 || pb->k != k || pb->n != n) return false;
#if defined(__x86_64__)
    inf__ops_sgemm_packed_avx2(pool, trans_a, m, n, k, alpha, a, lda, pb->panels, beta, c, ldc);
    return true;
#else
    (void)pool, (void)trans_a, (void)m, (void)alpha, (void)a, (void)lda, (void)beta, (void)c, (void)ldc;
    return false;
#endif
}

typedef struct gemm_params {
    float alpha, beta;
    bool trans_a, trans_b;
    bool broadcast; /* opset < 7 */
    packed_b bp;
} gemm_params;

static inf_status gemm_init(inf__node *node, inf__arena *arena, inf_error *err) {
    gemm_params *p = inf__op_params(arena, gemm_params);
    if (!p) return INF_ENOMEM;
    (void)err;
    p->alpha = inf__attr_float(node, "alpha", 1.0f);
    p->beta = inf__attr_float(node, "beta", 1.0f);
    p->trans_a = inf__attr_int(node, "transA", 0) != 0;
    p->trans_b = inf__attr_int(node, "transB", 0) != 0;
    p->broadcast = node->opset >= 7 || inf__attr_int(node, "broadcast", 0) != 0;
    inf_status st = packed_b_make(node, arena, 1, p->trans_b, &p->bp);
    if (st != INF_OK) return st;
    node->params = p;
    return INF_OK;
}

/* Checks C against (M, N) and returns its strides along M and N. */
static inf_status gemm_bias_strides(inf__kernel_ctx *ctx, const gemm_params *p,
                                    const inf_tensor *c, int64_t m, int64_t n, int64_t *rs,
                                    int64_t *cs) {
    char buf[64];
    int nd = c->ndim;
    int64_t dm = nd >= 2 ? c->dims[0] : 1, dn = nd >= 1 ? c->dims[nd - 1] : 1;
    bool ok = nd <= 2 && (dm == m || dm == 1) && (dn == n || dn == 1);
    if (ok && !p->broadcast) ok = nd == 2 && dm == m && dn == n;
    if (!ok)
        return inf__kernel_error(ctx, INF_ESHAPE,
                                 "input C: shape %s is not %sbroadcastable to [%lld,%lld]",
                                 inf__shape_str(c->ndim, c->dims, buf, sizeof buf),
                                 p->broadcast ? "unidirectionally " : "(broadcast=0) ",
                                 (long long)m, (long long)n);
    *rs = dm == 1 ? 0 : dn;
    *cs = dn == 1 ? 0 : 1;
    return INF_OK;
}

#if defined(__x86_64__)
void inf__ops_relu_row(const float *x, float *y, int64_t n) {
    for (int64_t i = 0; i < n; i++)
        y[i] = x[i] > 0 ? x[i] : 0;
}
#endif

/* Y = A'B' + bias [then Relu] with B packed, when C is a row of n biases
 * (alpha 1, beta 1): the bias add and the node's fused Relu run in the
 * GEMM's store while each tile is in cache (inf__gemm_epilogue, as
 * FusedMatMul), not as a pass filling Y with C before the product and a
 * pass for the Relu after it.  Each element is the product's sum, then +
 * bias, then Relu -- a MatMul, an Add and a Relu node's arithmetic (with K
 * over one 256-deep block, the same bits as the C-first order; deeper K
 * adds the bias once at the end instead of into the first block's sums).
 * False (nothing done) when the shape, the scalars or the packing do not fit. */
static bool gemm_bias_epilogue(inf__kernel_ctx *ctx, const gemm_params *p, const inf_tensor *b, int64_t m, int64_t n,
                               int64_t k, const float *a, int64_t lda, const float *bias, int64_t c_rs, int64_t c_cs,
                               float *y) {
#if defined(__x86_64__)
    const inf__epilogue *fused = &ctx->node->epilogue;
    if (!bias || c_rs != 0 || c_cs != 1 || p->alpha != 1.0f || p->beta != 1.0f) return false;
    if (fused->kind != INF_EPILOGUE_NONE && fused->kind != INF_EPILOGUE_RELU) return false;
    const packed_b *pb = &p->bp;
    if (!pb->panels || b->data != pb->src || b->dtype != INF_DTYPE_F32 || pb->k != k || pb->n != n) return false;
    bool relu = fused->kind == INF_EPILOGUE_RELU;
    inf__gemm_epilogue ep = {bias, NULL, 0, relu ? inf__ops_relu_row : NULL, relu};
    inf__ops_sgemm_packed_ep_avx2(ctx->pool, p->trans_a, m, n, k, 1.0f, a, lda, pb->panels, 0.0f, y, n, &ep);
    ctx->epilogue_done = true;
    return true;
#else
    (void)ctx, (void)p, (void)b, (void)m, (void)n, (void)k, (void)a, (void)lda, (void)bias, (void)c_rs, (void)c_cs,
        (void)y;
    return false;
#endif
}

static inf_status gemm_run(inf__kernel_ctx *ctx) {
    const gemm_params *p = ctx->node->params;
    const inf_tensor *a = ctx->in[0], *b = ctx->in[1];
    const inf_tensor *c = ctx->n_in > 2 ? ctx->in[2] : NULL;
    inf_dtype dt = a->dtype;
    if (!matmul_dtype_ok(dt))
        return inf__kernel_error(ctx, INF_ETYPE, "input A: unsupported dtype %s",
                                 inf_dtype_name(dt));
    if (b->dtype != dt || (c && c->dtype != dt))
        return inf__kernel_error(ctx, INF_ETYPE, "inputs B and C must have A's dtype %s, got %s",
                                 inf_dtype_name(dt),
                                 inf_dtype_name(b->dtype != dt ? b->dtype : c->dtype));
    if (a->ndim != 2 || b->ndim != 2)
        return inf__kernel_error(ctx, INF_ESHAPE, "inputs A and B must be 2-D, got rank %d and %d",
                                 a->ndim, b->ndim);
    int64_t m = p->trans_a ? a->dims[1] : a->dims[0], k = p->trans_a ? a->dims[0] : a->dims[1];
    int64_t kb = p->trans_b ? b->dims[1] : b->dims[0], n = p->trans_b ? b->dims[0] : b->dims[1];
    if (k != kb)
        return inf__kernel_error(ctx, INF_ESHAPE,
                                 "inner dimensions differ: A' is [%lld,%lld], B' is [%lld,%lld]",
                                 (long long)m, (long long)k, (long long)kb, (long long)n);
    int64_t c_rs = 0, c_cs = 0;
    bool use_c = c && p->beta != 0.0f;
    if (c) {
        inf_status st = gemm_bias_strides(ctx, p, c, m, n, &c_rs, &c_cs);
        if (st != INF_OK) return st;
    }
    int64_t dims[2] = {m, n};
    inf_tensor *y;
    inf_status st = inf__kernel_output(ctx, 0, dt, 2, dims, &y);
    if (st != INF_OK) return st;
    if (m == 0 || n == 0) return INF_OK;

    int64_t lda = a->dims[1], ldb = b->dims[1];
    if (dt == INF_DTYPE_F32 || is_half(dt)) {
        const float *af = a->data, *bf = b->data, *cf = use_c ? c->data : NULL;
        float *yf = y->data;
        if (is_half(dt)) {
            float *a_tmp = half_to_f32(ctx, a);
            float *b_tmp = a_tmp ? half_to_f32(ctx, b) : NULL;
            float *c_tmp = b_tmp && use_c ? half_to_f32(ctx, c) : NULL;
            float *y_tmp = b_tmp && (!use_c || c_tmp)
                               ? inf__kernel_scratch(ctx, (size_t)(m * n) * sizeof(float))
                               : NULL;
            if (!y_tmp) return INF_ENOMEM;
            af = a_tmp, bf = b_tmp, cf = c_tmp, yf = y_tmp;
        }
        if (!is_half(dt) && gemm_bias_epilogue(ctx, p, b, m, n, k, af, lda, use_c ? cf : NULL, c_rs, c_cs, yf))
            return INF_OK;
        if (use_c)
            for (int64_t i = 0; i < m; i++)
                for (int64_t j = 0; j < n; j++) yf[i * n + j] = p->beta * cf[i * c_rs + j * c_cs];
        if (is_half(dt) || !sgemm_packed(ctx->pool, &p->bp, b, p->trans_a, m, n, k, p->alpha, af, lda,
                                         use_c ? 1.0f : 0.0f, yf, n))
            inf__ops_sgemm(ctx->pool, p->trans_a, p->trans_b, m, n, k, p->alpha, af, lda, bf, ldb,
                           use_c ? 1.0f : 0.0f, yf, n);
        if (is_half(dt)) f32_to_half(yf, y);
        return INF_OK;
    }

    /* float64 and integers: Y = A'B', then alpha and beta*C. */
    int64_t ars = p->trans_a ? 1 : lda, acs = p->trans_a ? lda : 1;
    int64_t brs = p->trans_b ? 1 : ldb, bcs = p->trans_b ? ldb : 1;
    gemm_typed(dt, m, n, k, a->data, ars, acs, b->data, brs, bcs, y->data);
    if (p->alpha == 1.0f && (!use_c || p->beta == 1.0f) && dt != INF_DTYPE_F64) {
        /* exact integer path */
        if (use_c) {
            for (int64_t i = 0; i < m; i++)
                for (int64_t j = 0; j < n; j++) {
                    int64_t o = i * n + j, ci = i * c_rs + j * c_cs;
                    if (inf_dtype_size(dt) == 4)
                        ((uint32_t *)y->data)[o] += ((const uint32_t *)c->data)[ci];
                    else
                        ((uint64_t *)y->data)[o] += ((const uint64_t *)c->data)[ci];
                }
        }
        return INF_OK;
    }
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++) {
            int64_t o = i * n + j;
            double v = (double)p->alpha * inf__tensor_get_f64(y, o);
            if (use_c) v += (double)p->beta * inf__tensor_get_f64(c, i * c_rs + j * c_cs);
            inf__tensor_set_f64(y, o, v);
        }
    return INF_OK;
}

const inf__op_impl op_gemm = {gemm_init, gemm_run};

/* ======================================================================== */
/*  MatMul                                                                   */
/* ======================================================================== */

typedef struct mm_plan {
    int64_t m, n, k;
    int nb;                           /* batch rank */
    int64_t bdims[INF_MAX_DIMS];      /* broadcast batch shape */
    int64_t a_str[INF_MAX_DIMS];      /* matrix-index strides of A per batch dim */
    int64_t b_str[INF_MAX_DIMS];
    int64_t n_batch;
    bool fold;                        /* B shared, A dense: one [batch*M, K] product */
    int out_ndim;
    int64_t out_dims[INF_MAX_DIMS];
} mm_plan;

static inf_status mm_plan_make(inf__kernel_ctx *ctx, const inf_tensor *a, const inf_tensor *b,
                               mm_plan *pl) {
    char bufa[96], bufb[96];
    if (a->ndim < 1 || b->ndim < 1)
        return inf__kernel_error(ctx, INF_ESHAPE, "inputs A and B must have rank >= 1, got %d and %d",
                                 a->ndim, b->ndim);
    /* promote 1-D operands */
    int64_t am = a->ndim == 1 ? 1 : a->dims[a->ndim - 2], ak = a->dims[a->ndim - 1];
    int64_t bk = b->ndim == 1 ? b->dims[0] : b->dims[b->ndim - 2];
    int64_t bn = b->ndim == 1 ? 1 : b->dims[b->ndim - 1];
    if (ak != bk)
        return inf__kernel_error(ctx, INF_ESHAPE, "A %s and B %s: inner dimensions %lld and %lld differ",
                                 inf__shape_str(a->ndim, a->dims, bufa, sizeof bufa),
                                 inf__shape_str(b->ndim, b->dims, bufb, sizeof bufb),
                                 (long long)ak, (long long)bk);
    int anb = a->ndim > 2 ? a->ndim - 2 : 0, bnb = b->ndim > 2 ? b->ndim - 2 : 0;
    if (inf__broadcast_shape(anb, a->dims, bnb, b->dims, &pl->nb, pl->bdims) != INF_OK)
        return inf__kernel_error(ctx, INF_ESHAPE, "A %s and B %s: batch dimensions do not broadcast",
                                 inf__shape_str(a->ndim, a->dims, bufa, sizeof bufa),
                                 inf__shape_str(b->ndim, b->dims, bufb, sizeof bufb));
    pl->m = am, pl->n = bn, pl->k = ak;
    inf__broadcast_strides(anb, a->dims, pl->nb, pl->bdims, pl->a_str);
    inf__broadcast_strides(bnb, b->dims, pl->nb, pl->bdims, pl->b_str);
    pl->n_batch = 1;
    bool b_shared = true, a_dense = anb == pl->nb;
    for (int i = 0; i < pl->nb; i++) {
        pl->n_batch *= pl->bdims[i];
        if (pl->b_str[i] != 0 && pl->bdims[i] != 1) b_shared = false;
        if (anb == pl->nb && a->dims[i] != pl->bdims[i]) a_dense = false;
    }
    pl->fold = pl->nb > 0 && b_shared && a_dense;
    pl->out_ndim = 0;
    for (int i = 0; i < pl->nb; i++) pl->out_dims[pl->out_ndim++] = pl->bdims[i];
    if (a->ndim > 1) pl->out_dims[pl->out_ndim++] = am;
    if (b->ndim > 1) pl->out_dims[pl->out_ndim++] = bn;
    if (pl->out_ndim > INF_MAX_DIMS) return inf__kernel_error(ctx, INF_ESHAPE, "result rank too high");
    return INF_OK;
}

/* Matrix offsets (in matrices) of A and B for batch index t. */
static void mm_batch_offsets(const mm_plan *pl, int64_t t, int64_t *ao, int64_t *bo) {
    int64_t oa = 0, ob = 0;
    for (int d = pl->nb - 1; d >= 0; d--) {
        int64_t i = t % pl->bdims[d];
        t /= pl->bdims[d];
        oa += i * pl->a_str[d];
        ob += i * pl->b_str[d];
    }
    *ao = oa, *bo = ob;
}

static void matmul_f32(inf__pool *pool, const mm_plan *pl, const float *a, const float *b, float *y) {
    int64_t m = pl->m, n = pl->n, k = pl->k;
    if (pl->fold) {
        inf__ops_sgemm(pool, false, false, pl->n_batch * m, n, k, 1.0f, a, k, b, n, 0.0f, y, n);
        return;
    }
    for (int64_t t = 0; t < pl->n_batch; t++) {
        int64_t ao, bo;
        mm_batch_offsets(pl, t, &ao, &bo);
        inf__ops_sgemm(pool, false, false, m, n, k, 1.0f, a + ao * m * k, k, b + bo * k * n, n, 0.0f,
                       y + t * m * n, n);
    }
}

static inf_status matmul_run(inf__kernel_ctx *ctx) {
    const inf_tensor *a = ctx->in[0], *b = ctx->in[1];
    inf_dtype dt = a->dtype;
    if (!matmul_dtype_ok(dt))
        return inf__kernel_error(ctx, INF_ETYPE, "input A: unsupported dtype %s", inf_dtype_name(dt));
    if (b->dtype != dt)
        return inf__kernel_error(ctx, INF_ETYPE, "input B: expected A's dtype %s, got %s",
                                 inf_dtype_name(dt), inf_dtype_name(b->dtype));
    mm_plan pl;
    inf_status st = mm_plan_make(ctx, a, b, &pl);
    if (st != INF_OK) return st;
    inf_tensor *y;
    st = inf__kernel_output(ctx, 0, dt, pl.out_ndim, pl.out_dims, &y);
    if (st != INF_OK) return st;
    if (inf_tensor_numel(y) == 0) return INF_OK;

    if (dt == INF_DTYPE_F32) {
        /* a constant 2-D B, packed at load: the batch is one product */
        const packed_b *pb = ctx->node->params;
        if (pb && b->ndim == 2 && (pl.nb == 0 || pl.fold) &&
            sgemm_packed(ctx->pool, pb, b, false, pl.n_batch * pl.m, pl.n, pl.k, 1.0f, a->data, pl.k, 0.0f,
                         y->data, pl.n))
            return INF_OK;
        matmul_f32(ctx->pool, &pl, a->data, b->data, y->data);
        return INF_OK;
    }
    if (is_half(dt)) {
        float *af = half_to_f32(ctx, a), *bf = af ? half_to_f32(ctx, b) : NULL;
        float *yf = bf ? inf__kernel_scratch(ctx, (size_t)inf_tensor_numel(y) * sizeof(float)) : NULL;
        if (!yf) return INF_ENOMEM;
        matmul_f32(ctx->pool, &pl, af, bf, yf);
        f32_to_half(yf, y);
        return INF_OK;
    }
    size_t es = inf_dtype_size(dt);
    int64_t m = pl.m, n = pl.n, k = pl.k;
    for (int64_t t = 0; t < pl.n_batch; t++) {
        int64_t ao, bo;
        mm_batch_offsets(&pl, t, &ao, &bo);
        gemm_typed(dt, m, n, k, (const char *)a->data + (size_t)(ao * m * k) * es, k, 1,
                   (const char *)b->data + (size_t)(bo * k * n) * es, n, 1,
                   (char *)y->data + (size_t)(t * m * n) * es);
    }
    return INF_OK;
}

/* params: the packed constant B (packed_b), when there is one. */
static inf_status matmul_init(inf__node *node, inf__arena *arena, inf_error *err) {
    (void)err;
    packed_b pb;
    inf_status st = packed_b_make(node, arena, 1, false, &pb);
    if (st != INF_OK || !pb.panels) return st;
    packed_b *p = inf__op_params(arena, packed_b);
    if (!p) return INF_ENOMEM;
    *p = pb;
    node->params = p;
    return INF_OK;
}

const inf__op_impl op_matmul = {matmul_init, matmul_run};

/* ======================================================================== */
/*  FusedMatMul (ai.infera)                                                  */
/* ======================================================================== */

/* Y = act(MatMul(A, W) + bias [+ Z]), made by the optimizer's MatMul pass
 * (graph/passes/matmul_add.c) from MatMul -> Add(bias) [-> Add(Z)]
 * [-> Gelu]:
 *   A    float32 [..., K] (rank >= 1; the leading dimensions are rows)
 *   W    float32 [K, N], a constant (packed at load)
 *   bias float32 [N], a constant
 *   Z    optional, any float32 tensor broadcastable with Y; the residual
 *   attribute activation: "Gelu" (the internal exact-erf Gelu), "GeluTanh"
 *             (its approximate = "tanh" form) or absent.
 * Same bits as the separate nodes: the MatMul's sums, then + bias[j], then
 * + Z, then the activation (ops/vmath.h's, as the Gelu kernel).  With the
 * AVX2 kernel and W packed, the adds and the activation run in the GEMM's
 * store on each tile while it is in cache (inf__gemm_epilogue); otherwise
 * after the product, in one pass.  A Z of another shape goes through
 * scratch and numpy broadcasting (the Add's result may then be larger). */

typedef struct fused_mm_params {
    packed_b bp;
    inf__vmath_fn act; /* NULL: none */
} fused_mm_params;

static inf_status fused_mm_init(inf__node *node, inf__arena *arena, inf_error *err) {
    fused_mm_params *p = inf__op_params(arena, fused_mm_params);
    if (!p) return inf__node_error(node, err, INF_ENOMEM, "out of memory");
    const char *act = inf__attr_string(node, "activation", "");
    if (!strcmp(act, "Gelu")) p->act = inf__vmath_best()->gelu;
    else if (!strcmp(act, "GeluTanh")) p->act = inf__vmath_gelu_tanh_best;
    else if (*act) return inf__node_error(node, err, INF_EINVAL, "attribute activation: unknown '%s'", act);
    node->params = p; /* W's packing: the MatMul's (inf__ops_fused_matmul_take_packing) */
    /* a bundle's load has no MatMul to take it from: the bundle supplies the
     * panels (PREPACK; packed here when it does not) */
    const inf__prepack_log *log = inf__ops_prepack_current();
    if (log && log->supply && packed_b_make(node, arena, 1, false, &p->bp) != INF_OK)
        return inf__node_error(node, err, INF_ENOMEM, "out of memory");
    return INF_OK;
}

void inf__ops_fused_matmul_take_packing(inf__node *fused, const inf__node *matmul) {
    fused_mm_params *p = fused->params;
    const packed_b *pb = matmul->params;
    if (p && pb && pb->panels && !strcmp(fused->op_type, "FusedMatMul") && !strcmp(matmul->op_type, "MatMul"))
        p->bp = *pb;
}

/* C[i][j] = act(C[i][j] + bias[j] + res[i][j]) over rows [begin, end): the
 * epilogue after an unfused product (same arithmetic as the GEMM store's). */
typedef struct fused_mm_rows {
    const inf__gemm_epilogue *ep;
    float *c;
    int64_t n;
} fused_mm_rows;

static void fused_mm_epilogue_task(void *arg, int64_t begin, int64_t end) {
    const fused_mm_rows *t = arg;
    const inf__gemm_epilogue *ep = t->ep;
    for (int64_t i = begin; i < end; i++) {
        float *c = t->c + i * t->n;
        if (ep->bias)
            for (int64_t j = 0; j < t->n; j++) c[j] = c[j] + ep->bias[j];
        if (ep->res)
            for (int64_t j = 0; j < t->n; j++) c[j] = c[j] + ep->res[i * ep->ldr + j];
        if (ep->act) ep->act(c, c, t->n);
    }
}

/* y[rows, n] = epilogue(a[rows, k] W): in the AVX2 store when W is packed. */
static void fused_mm_compute(inf__pool *pool, const fused_mm_params *p, const inf_tensor *w, int64_t rows, int64_t n,
                             int64_t k, const float *a, const inf__gemm_epilogue *ep, float *y) {
#if defined(__x86_64__)
    if (p->bp.panels && w->data == p->bp.src && p->bp.k == k && p->bp.n == n) {
        inf__ops_sgemm_packed_ep_avx2(pool, false, rows, n, k, 1.0f, a, k, p->bp.panels, 0.0f, y, n, ep);
        return;
    }
#endif
    inf__ops_sgemm(pool, false, false, rows, n, k, 1.0f, a, k, w->data, n, 0.0f, y, n);
    fused_mm_rows t = {ep, y, n};
    inf__pool_range(pool, rows, 16384 / (n + 1) + 1, fused_mm_epilogue_task, &t);
}

/* out = t + z with numpy broadcasting (out has the broadcast shape). */
static void add_broadcast_f32(inf_tensor *out, const float *t, int t_ndim, const int64_t *t_dims, const inf_tensor *z) {
    int nd = out->ndim;
    int64_t st[INF_MAX_DIMS], sz[INF_MAX_DIMS], idx[INF_MAX_DIMS] = {0}, ot = 0, oz = 0;
    inf__broadcast_strides(t_ndim, t_dims, nd, out->dims, st);
    inf__broadcast_strides(z->ndim, z->dims, nd, out->dims, sz);
    const float *zf = z->data;
    float *of = out->data;
    for (int64_t i = 0, n = inf_tensor_numel(out); i < n; i++) {
        of[i] = t[ot] + zf[oz];
        for (int d = nd - 1; d >= 0; d--) {
            ot += st[d], oz += sz[d];
            if (++idx[d] < out->dims[d]) break;
            ot -= st[d] * out->dims[d], oz -= sz[d] * out->dims[d], idx[d] = 0;
        }
    }
}

/* The residual Z does not have Y's shape: Y' = A W + bias in scratch, then
 * out = act(Y' + Z) with broadcasting. */
static inf_status fused_mm_broadcast(inf__kernel_ctx *ctx, const fused_mm_params *p, const inf_tensor *w,
                                     int64_t rows, int64_t n, int64_t k, int ydim, const int64_t *ydims,
                                     inf__gemm_epilogue ep) {
    const inf_tensor *z = ctx->in[3];
    int nd;
    int64_t od[INF_MAX_DIMS];
    char bz[96], by[96];
    if (inf__broadcast_shape(ydim, ydims, z->ndim, z->dims, &nd, od) != INF_OK)
        return inf__kernel_error(ctx, INF_ESHAPE, "residual Z %s does not broadcast with the product %s",
                                 inf__shape_str(z->ndim, z->dims, bz, sizeof bz), inf__shape_str(ydim, ydims, by, sizeof by));
    float *t = inf__kernel_scratch(ctx, (size_t)(rows * n > 0 ? rows * n : 1) * sizeof(float));
    if (!t) return INF_ENOMEM;
    inf_tensor *y;
    inf_status st = inf__kernel_output(ctx, 0, INF_DTYPE_F32, nd, od, &y);
    if (st != INF_OK || inf_tensor_numel(y) == 0) return st;
    inf__vmath_fn act = ep.act;
    ep.act = NULL;
    if (rows > 0) fused_mm_compute(ctx->pool, p, w, rows, n, k, ctx->in[0]->data, &ep, t);
    add_broadcast_f32(y, t, ydim, ydims, z);
    if (act) act(y->data, y->data, inf_tensor_numel(y));
    return INF_OK;
}

static inf_status fused_mm_check(inf__kernel_ctx *ctx, const inf_tensor *a, const inf_tensor *w, const inf_tensor *bias,
                                 const inf_tensor *z) {
    char ba[96], bw[96];
    if (a->dtype != INF_DTYPE_F32 || w->dtype != INF_DTYPE_F32 || bias->dtype != INF_DTYPE_F32 ||
        (z && (z->kind != INF_KIND_TENSOR || z->dtype != INF_DTYPE_F32)))
        return inf__kernel_error(ctx, INF_ETYPE, "inputs must be float32 tensors (A is %s)", inf_dtype_name(a->dtype));
    if (w->ndim != 2 || a->ndim < 1 || a->dims[a->ndim - 1] != w->dims[0])
        return inf__kernel_error(ctx, INF_ESHAPE, "A %s and W %s: inner dimensions differ",
                                 inf__shape_str(a->ndim, a->dims, ba, sizeof ba),
                                 inf__shape_str(w->ndim, w->dims, bw, sizeof bw));
    if (bias->ndim != 1 || bias->dims[0] != w->dims[1])
        return inf__kernel_error(ctx, INF_ESHAPE, "bias %s is not [%lld]", inf__shape_str(bias->ndim, bias->dims, ba, sizeof ba),
                                 (long long)w->dims[1]);
    return INF_OK;
}

static inf_status fused_mm_run(inf__kernel_ctx *ctx) {
    const fused_mm_params *p = ctx->node->params;
    const inf_tensor *a = ctx->in[0], *w = ctx->in[1], *bias = ctx->in[2], *z = ctx->n_in > 3 ? ctx->in[3] : NULL;
    inf_status st = fused_mm_check(ctx, a, w, bias, z);
    if (st != INF_OK) return st;
    int64_t k = w->dims[0], n = w->dims[1], ydims[INF_MAX_DIMS];
    int ydim = a->ndim;
    for (int d = 0; d < ydim - 1; d++) ydims[d] = a->dims[d];
    ydims[ydim - 1] = n;
    int64_t rows = 1;
    for (int d = 0; d < ydim - 1; d++) rows *= a->dims[d];
    inf__gemm_epilogue ep = {bias->data, NULL, n, p->act, false};
    bool same = z && z->ndim == ydim;
    for (int d = 0; same && d < ydim; d++) same = z->dims[d] == ydims[d];
    if (z && !same) return fused_mm_broadcast(ctx, p, w, rows, n, k, ydim, ydims, ep);
    if (z) ep.res = z->data;
    inf_tensor *y;
    st = inf__kernel_output(ctx, 0, INF_DTYPE_F32, ydim, ydims, &y);
    if (st != INF_OK || inf_tensor_numel(y) == 0) return st;
    fused_mm_compute(ctx->pool, p, w, rows, n, k, a->data, &ep, y->data);
    return INF_OK;
}

const inf__op_impl op_fused_matmul = {fused_mm_init, fused_mm_run};

#if !(defined(__x86_64__) || defined(_M_X64))
/* No packed-B GEMM kernel on this architecture (the panels are the x86
 * kernels' layout): nothing is ever prepacked here, and a bundle's PREPACK
 * section (written only by x86 targets) never matches. */
int64_t inf__ops_sgemm_packed_floats(int64_t k, int64_t n) {
    (void)k, (void)n;
    return -1;
}

void inf__ops_sgemm_pack_b(bool trans_b, int64_t k, int64_t n, const float *b, int64_t ldb, float *dst) {
    (void)trans_b, (void)k, (void)n, (void)b, (void)ldb, (void)dst;
}
#endif
