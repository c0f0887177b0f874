/*
 * attention.c -- the internal op Attention (domain ai.infera, made by the
 * optimizer's attention pass, src/graph/passes/attention.c, from the
 * scaled-dot-product attention PyTorch exports as Reshape/Transpose/MatMul/
 * Div/Softmax/MatMul/Transpose):
 *
 *   Y = Attention(Q, K, V [, mask]; scale)
 *   rank 4:  Q [B, Sq, H, D], K [B, Sk, H, D], V [B, Sk, H, Dv] -> Y [B, Sq, H, Dv]
 *   rank 3:  Q [Sq, H, D],    K [Sk, H, D],    V [Sk, H, Dv]    -> Y [Sq, H, Dv]
 *   for every (b, h):  Y[b, :, h, :] = softmax_rows(scale * Q_bh K_bh^T + M_bh) V_bh
 *   Optional input 4 (torch's SDPA export reshapes P V to the shape it
 *   rebuilt from Shape nodes before the last Transpose): int64 [4], checked
 *   at run time to be P V's shape [B, H, Sq, Dv] (an error otherwise).
 *   nan_to_zero = 1 (torch's scaled_dot_product_attention as exported:
 *   P = Where(IsNaN(softmax), 0, softmax)): a row whose softmax is NaN --
 *   all its scores -inf (a fully masked row), or one NaN or +inf -- gives
 *   zeros.  With the exp/sum kernels that is a row whose sum is not finite
 *   (1 / sum is inf or NaN): every entry of such a row is NaN in the graph's
 *   Softmax, and no entry of any other row is.
 *
 * i.e. the inputs are the projections before the head transposes and the
 * output is the context before the transpose back: the kernel reads and
 * writes them in place, with strides, so the four Transposes of the
 * unfused graph never run.  The optional mask broadcasts (numpy rules,
 * rank at most Q's) to the scores [B, H, Sq, Sk] ([H, Sq, Sk] at rank 3).
 * B and H of Q, K and V broadcast from 1 as the unfused MatMuls do.
 *
 * dtypes: float32 only (the pass fuses only chains whose scale is a float32
 * constant, which makes every tensor of the chain float32).
 *
 * DESIGN: one pool task per thread (a part), each with its own scratch
 * (on several threads the pool's slot workspace, which stays on the core
 * that runs the part; attention_task).
 * The (batch, head) units are cut into equal runs, one a part, in order:
 * part t takes its own run's units first, then what the other parts have
 * not yet started (each run has an atomic counter), so a late thread's
 * units still get done.  The pool gives part 0 to the caller and the last
 * to a worker (threadpool.c), as it gives a column-split GEMM's first and
 * last column panels, so at batch 1 each thread reads the heads of Q, K
 * and V its own projections wrote (taken in arrival order, the caller
 * would start heads 0 and 2 and a worker heads 1 and 3).  A unit copies
 * K_bh transposed and scaled into the part's scratch ([D, Sk]), then for
 * blocks of query rows computes
 * S = Q (scale K^T) with
 * inf__ops_sgemm (no pool: it runs inside the task), adds the mask, turns
 * each row into its softmax numerator exp(s - max s) and keeps 1 / its sum
 * (ops/attention_exp.h: AVX2 and AVX-512 rows, same bits), multiplies S V
 * straight into Y and scales each row of Y by its 1 / sum (Dv multiplies a
 * row, where normalising P took Sk and a pass over it).  Without AVX2 the
 * vectorised softmax row (ops/vmath.h) normalises P instead: its portable
 * and NEON tables are cheaper there than the scalar twin's fmaf.
 * Batch invariance (DESIGN.md section 1): a unit's rows depend only on
 * its own (b, h) data -- sgemm's row bits never depend on m or the split --
 * so batch rows give the same bits at any batch size and thread count.
 * The scaled K^T copy runs 8x8 blocks in ymm registers on AVX2 CPUs
 * (ops/x86/attention_avx2.c, same bits).
 * Deviation from the unfused graph: the scale multiplies K (as it is
 * copied transposed) instead of the scores in a separate Div, which moves
 * float32 rounding only (none for a power-of-two scale, 1/sqrt(D) with D
 * = 64 or 16).
 */
#include <math.h>
#include <stdatomic.h>
#include <string.h>

#include "core/cpu.h"
#include "ops/attention_exp.h"
#include "ops/attention.h"
#include "ops/ops.h"
#include "ops/vmath.h"

typedef struct attention_params {
    inf__attention_opts opts;
    inf__attention_layout layout;
    bool out_shape_allowzero;
} attention_params;

/* Query rows per block: the scores block [rows, Sk] stays at most this many floats. */
#define SCORE_BLOCK_FLOATS 32768

/* A part's next unit, on a cache line of its own. */
typedef struct unit_counter {
    _Alignas(64) atomic_int_fast64_t next;
} unit_counter;

typedef struct attention_job {
    const float *q, *k, *v, *mask;
    float *y;
    int64_t b, h, sq, sk, d, dv;             /* output batch and heads */
    int64_t qb, qh, kb, kh, vb, vh;          /* element strides of batch and head (0: broadcast) */
    int64_t ldq, ldk, ldv, ldy;              /* row strides (H*D, H*Dv of each input) */
    int64_t mb, mh, mi, mj;                  /* mask strides over [B, H, Sq, Sk] (0: broadcast) */
    int64_t yb, yh;                          /* Y's batch and head strides */
    int64_t group;                           /* query heads a key/value head */
    float scale;
    bool nan_to_zero;                        /* a row whose softmax is NaN gives zeros (attribute nan_to_zero) */
    bool masked_to_zero;                     /* a row whose every score is -inf gives zeros (ONNX's Attention) */
    bool causal;                             /* query i sees keys t <= i + off only */
    int64_t off;                             /* (Sk - Sq, or inf__attention_opts' causal_offset) */
    int64_t rows;                            /* query rows per block */
    float *scratch;                          /* per part: kt [D*Sk], scores [rows*Sk], 1/sums [rows] */
    int64_t scratch_floats;                  /* per part, rounded to 16 */
    inf__pool *pool;                         /* the parts' persistent scratch (inf__pool_slot_workspace), or NULL */
    int64_t n_parts;                         /* pool tasks, one a thread */
    unit_counter *next;                      /* per part: the next unit of its run */
    /* the softmax numerators of a block's rows and 1 / their sums (AVX2, AVX-512), or NULL: vm's
     * softmax rows (P normalised, the products' portable twins) */
    void (*exp_rows)(float *s, int64_t m, int64_t n, float *inv);
    const inf__vmath *vm;
    bool kt_avx2; /* the scaled K^T copy with AVX2 */
} attention_job;

/* Units [first_unit(j, t), first_unit(j, t + 1)) are part t's run. */
static int64_t first_unit(const attention_job *j, int64_t t) { return t * (j->b * j->h) / j->n_parts; }

/* kt[p * sk + t] = scale * k[t * ldk + p]: K_bh scaled, as [D, Sk]. */
static void copy_kt(const attention_job *j, const float *k, float *kt) {
#if defined(__x86_64__)
    if (j->kt_avx2) {
        inf__attention_kt_avx2(k, j->ldk, j->sk, j->d, j->scale, kt);
        return;
    }
#endif
    for (int64_t t = 0; t < j->sk; t++)
        for (int64_t p = 0; p < j->d; p++)
            kt[p * j->sk + t] = j->scale * k[t * j->ldk + p];
}

/* Keys a block of query rows [i0, i0 + m) needs: all, or (causal) up to
 * the last row's i + off (at least 1: a row that sees no key is then
 * all -inf, as a fully masked row). */
static int64_t block_keys(const attention_job *j, int64_t i0, int64_t m) {
    if (!j->causal) return j->sk;
    int64_t n = i0 + m + j->off;
    return n < 1 ? 1 : n > j->sk ? j->sk : n;
}

/* Adds the mask and the causal -inf to the block's scores [m, n]. */
static void add_bias(const attention_job *j, int64_t b, int64_t h, int64_t i0, int64_t m, int64_t n, float *s) {
    for (int64_t i = 0; i < m; i++) {
        float *row = s + i * n;
        if (j->mask) {
            const float *mr = j->mask + b * j->mb + h * j->mh + (i0 + i) * j->mi;
            for (int64_t t = 0; t < n; t++) row[t] += mr[t * j->mj];
        }
        int64_t first = j->causal ? i0 + i + j->off + 1 : n; /* the first key the row must not see */
        for (int64_t t = first < 0 ? 0 : first; t < n; t++) row[t] = -INFINITY;
    }
}

/* Whether the block's row of scores is -inf throughout. */
static bool all_masked(const float *row, int64_t n) {
    for (int64_t t = 0; t < n; t++)
        if (!(row[t] == -INFINITY)) return false;
    return true;
}

static void attention_unit(const attention_job *j, int64_t unit, float *kt, float *s, float *inv) {
    int64_t b = unit / j->h, h = unit % j->h, hk = h / j->group;
    const float *q = j->q + b * j->qb + h * j->qh;
    const float *k = j->k + b * j->kb + hk * j->kh;
    const float *v = j->v + b * j->vb + hk * j->vh;
    float *y = j->y + b * j->yb + h * j->yh;
    /* scale * K_bh^T: [D, Sk], read in place by sgemm; with the scale here,
     * alpha is 1 and sgemm reads Q in place too (no packing pass) */
    copy_kt(j, k, kt);
    for (int64_t i0 = 0; i0 < j->sq; i0 += j->rows) {
        int64_t m = j->sq - i0 < j->rows ? j->sq - i0 : j->rows, n = block_keys(j, i0, m);
        inf__ops_sgemm(NULL, false, false, m, n, j->d, 1.0f, q + i0 * j->ldq, j->ldq, kt, j->sk, 0.0f, s, n);
        if (j->mask || j->causal) add_bias(j, b, h, i0, m, n, s);
        for (int64_t i = 0; !j->exp_rows && i < m; i++) {
            float *row = s + i * n;
            if (j->masked_to_zero && all_masked(row, n)) memset(row, 0, (size_t)n * sizeof(float));
            else j->vm->softmax_row(row, row, n);
        }
        if (j->exp_rows) j->exp_rows(s, m, n, inv);
        for (int64_t i = 0; j->nan_to_zero && !j->exp_rows && i < m * n; i++)
            if (isnan(s[i])) s[i] = 0.0f; /* Where(IsNaN(P), 0, P), element by element */
        float *yb = y + i0 * j->ldy;
        inf__ops_sgemm(NULL, false, false, m, j->dv, n, 1.0f, s, n, v, j->ldv, 0.0f, yb, j->ldy);
        for (int64_t i = 0; j->exp_rows && i < m; i++) {
            float f = inv[i], *yr = yb + i * j->ldy; /* (f a local: the loop vectorises) */
            /* no finite sum: the row's softmax is all NaN, P' all 0; a sum
             * of 0 (1 / sum = +inf): every score -inf */
            if ((j->nan_to_zero && !isfinite(f)) || (j->masked_to_zero && f == INFINITY)) {
                memset(yr, 0, (size_t)j->dv * sizeof(float));
                continue;
            }
            for (int64_t c = 0; c < j->dv; c++)
                yr[c] *= f;
        }
    }
}

/* Parts [begin, end): each runs its own units, then the ones the other
 * parts have not started, in its own scratch: the pool's persistent one for
 * the part (slot), which stays in the cache of the core that runs the part
 * from layer to layer, else its share of the session's (from the buffer
 * pool: last written by whichever core used it). */
static void attention_task(void *arg, int64_t begin, int64_t end) {
    attention_job *j = arg;
    for (int64_t part = begin; part < end; part++) {
        float *kt = inf__pool_slot_workspace(j->pool, (int)part, (size_t)j->scratch_floats * sizeof(float));
        if (!kt)
            kt = j->scratch + part * j->scratch_floats;
        float *s = kt + (j->d * j->sk + 15) / 16 * 16;
        float *inv = s + (j->rows * j->sk + 15) / 16 * 16;
        for (int64_t i = 0; i < j->n_parts; i++) {
            int64_t t = (part + i) % j->n_parts, stop = first_unit(j, t + 1);
            for (int64_t u; (u = atomic_fetch_add(&j->next[t].next, 1)) < stop;)
                attention_unit(j, u, kt, s, inv);
        }
    }
}

/* The size of dimension `axis` (0 B, 1 S, 2 H, 3 D) of an input of the
 * given rank read as [B, S, H, D], or as [B, H, S, D] when bhsd (rank 3:
 * B = 1 and dropped). */
static int64_t dim4(const inf_tensor *t, int axis, bool bhsd) {
    static const int swap[4] = {0, 2, 1, 3};
    int a = bhsd ? swap[axis] : axis;
    if (t->ndim == 3) return a == 0 ? 1 : t->dims[a - 1];
    return t->dims[a];
}

/* Strides of batch, head and row of a [B, S, H, D] (or bhsd [B, H, S, D])
 * tensor of nb batches, s rows, nh heads of d; 0 for a broadcast batch or head. */
static void strides(bool bhsd, int64_t nb, int64_t s, int64_t nh, int64_t d, int64_t *sb, int64_t *sh, int64_t *ld) {
    *ld = bhsd ? d : nh * d;
    *sb = nb == 1 ? 0 : s * nh * d;
    *sh = nh == 1 ? 0 : bhsd ? s * d : d;
}

/* Broadcast of one of B or H: a and b are 1 or equal; the result in *out. */
static bool bcast(int64_t a, int64_t b, int64_t *out) {
    if (a != b && a != 1 && b != 1) return false;
    *out = a == 1 ? b : a;
    return true;
}

static inf_status shape_error(inf__kernel_ctx *ctx, const char *why) {
    char a[96], b[96], c[96];
    return inf__kernel_error(ctx, INF_ESHAPE, "Q %s, K %s, V %s: %s", inf_tensor_describe(ctx->in[0], a, sizeof a),
                             inf_tensor_describe(ctx->in[1], b, sizeof b), inf_tensor_describe(ctx->in[2], c, sizeof c),
                             why);
}

static inf_status check_inputs(inf__kernel_ctx *ctx) {
    static const char *const names[3] = {"Q", "K", "V"};
    int rank = ctx->in[0]->ndim;
    for (int i = 0; i < ctx->n_in && i < 4; i++) { /* input 4, the output shape: check_out_shape */
        const inf_tensor *t = ctx->in[i];
        if (!t) continue;
        if (t->dtype != INF_DTYPE_F32)
            return inf__kernel_error(ctx, INF_ETYPE, "input %s: expected float32, got %s", i < 3 ? names[i] : "mask",
                                     inf_dtype_name(t->dtype));
        if (i < 3 && (t->ndim != rank || (rank != 3 && rank != 4)))
            return inf__kernel_error(ctx, INF_ESHAPE, "input %s: expected rank %d (3 or 4, as Q), got %d", names[i],
                                     rank == 3 || rank == 4 ? rank : 4, t->ndim);
    }
    return INF_OK;
}

/* Mask strides over the scores [B, H, Sq, Sk] (numpy broadcasting, rank <= Q's). */
static inf_status mask_strides(inf__kernel_ctx *ctx, const inf_tensor *m, const int64_t *sdims, int srank,
                               inf__attention_geom *j) {
    int64_t st[4] = {0, 0, 0, 0}, stride = 1;
    if (m->ndim > srank)
        return inf__kernel_error(ctx, INF_ESHAPE, "mask: rank %d exceeds the scores' rank %d", m->ndim, srank);
    for (int a = m->ndim - 1; a >= 0; a--) {
        int sa = srank - m->ndim + a; /* axis of the scores */
        int64_t want = sdims[4 - srank + sa];
        if (m->dims[a] != want && m->dims[a] != 1)
            return inf__kernel_error(ctx, INF_ESHAPE, "mask: dimension %d is %lld, the scores' is %lld", a,
                                     (long long)m->dims[a], (long long)want);
        st[4 - srank + sa] = m->dims[a] == 1 ? 0 : stride;
        stride *= m->dims[a];
    }
    j->mb = st[0], j->mh = st[1], j->mi = st[2], j->mj = st[3];
    return INF_OK;
}

/* The heads: H and the group of query heads a key/value head serves;
 * kv_heads 0: Q's, K's and V's heads broadcast (numpy rules); else
 * inf__attention_layout's rule (a single head of any of them broadcast). */
static bool heads(const inf_tensor *q, const inf_tensor *k, const inf_tensor *v, int bhsd, int64_t kv_heads,
                  int64_t q_heads, inf__attention_geom *g) {
    int64_t hq = dim4(q, 2, bhsd & INF_ATT_BHSD_Q), hk = dim4(k, 2, bhsd & INF_ATT_BHSD_K),
            hv = dim4(v, 2, bhsd & INF_ATT_BHSD_V), h;
    g->group = 1;
    if (!kv_heads) {
        if (!bcast(hq, hk, &h) || !bcast(h, hv, &g->h)) return false;
        return true;
    }
    int64_t hout = q_heads ? q_heads : hq;
    if ((hk != kv_heads && hk != 1) || (hv != kv_heads && hv != 1) || (hq != hout && hq != 1) || hout % kv_heads)
        return false;
    g->h = hout, g->group = hout / kv_heads;
    return true;
}

inf_status inf__attention_geometry(inf__kernel_ctx *ctx, const inf__attention_layout *layout, inf__attention_geom *g,
                                   inf_tensor **y_out) {
    inf_status st = check_inputs(ctx);
    if (st != INF_OK) return st;
    const inf_tensor *q = ctx->in[0], *k = ctx->in[1], *v = ctx->in[2], *mask = ctx->n_in > 3 ? ctx->in[3] : NULL;
    int lay = layout ? layout->bhsd : 0;
    bool lq = lay & INF_ATT_BHSD_Q, lk = lay & INF_ATT_BHSD_K, lv = lay & INF_ATT_BHSD_V, ly = lay & INF_ATT_BHSD_Y;
    memset(g, 0, sizeof *g);
    int64_t bk;
    if (!bcast(dim4(q, 0, lq), dim4(k, 0, lk), &bk) || !bcast(bk, dim4(v, 0, lv), &g->b))
        return shape_error(ctx, "batch dimensions do not broadcast");
    if (!heads(q, k, v, lay, layout ? layout->kv_heads : 0, layout ? layout->q_heads : 0, g))
        return shape_error(ctx, layout && layout->kv_heads ? "K and V must have kv_heads heads (or 1), Q q_heads (or 1)"
                                                           : "head dimensions do not broadcast");
    g->sq = dim4(q, 1, lq), g->sk = dim4(k, 1, lk), g->d = dim4(q, 3, lq), g->dv = dim4(v, 3, lv);
    if (dim4(k, 3, lk) != g->d || dim4(v, 1, lv) != g->sk) return shape_error(ctx, "head sizes or key lengths differ");
    int64_t sdims[4] = {g->b, g->h, g->sq, g->sk};
    if (mask && (st = mask_strides(ctx, mask, sdims, q->ndim, g)) != INF_OK)
        return st;
    int64_t ydims[4] = {g->b, g->sq, g->h, g->dv};
    if (ly) ydims[1] = g->h, ydims[2] = g->sq;
    inf_tensor *y;
    st = inf__kernel_output(ctx, 0, INF_DTYPE_F32, q->ndim, q->ndim == 4 ? ydims : ydims + 1, &y);
    if (st != INF_OK)
        return st;
    *y_out = y;
    strides(lq, dim4(q, 0, lq), g->sq, dim4(q, 2, lq), g->d, &g->qb, &g->qh, &g->ldq);
    strides(lk, dim4(k, 0, lk), g->sk, dim4(k, 2, lk), g->d, &g->kb, &g->kh, &g->ldk);
    strides(lv, dim4(v, 0, lv), g->sk, dim4(v, 2, lv), g->dv, &g->vb, &g->vh, &g->ldv);
    strides(ly, g->b, g->sq, g->h, g->dv, &g->yb, &g->yh, &g->ldy);
    g->q = q->data, g->k = k->data, g->v = v->data, g->y = y->data, g->mask = mask ? mask->data : NULL;
    return INF_OK;
}

/* Input 4, when present: the shape a Reshape of P V ([B, H, Sq, Dv]) asked
 * for in the unfused graph, resolved as Reshape does (0 copies the
 * dimension unless allowzero, one -1 takes the rest); it must be P V's own
 * shape -- the fusion replaced that Reshape by nothing. */
static inf_status check_out_shape(inf__kernel_ctx *ctx, const inf__attention_geom *g, bool allowzero) {
    const inf_tensor *t = ctx->in[4];
    int64_t want[4] = {g->b, g->h, g->sq, g->dv}, got[4], known = 1;
    if (t->dtype != INF_DTYPE_I64 || t->ndim != 1 || t->dims[0] != 4 || ctx->in[0]->ndim != 4)
        return inf__kernel_error(ctx, INF_ESHAPE, "output shape (input 4): expected int64[4] for rank-4 Q");
    int minus = -1;
    for (int i = 0; i < 4; i++) {
        got[i] = ((const int64_t *)t->data)[i];
        if (got[i] == 0 && !allowzero) got[i] = want[i];
        if (got[i] == -1 && minus < 0) minus = i;
        else if (got[i] < 0)
            return inf__kernel_error(ctx, INF_ESHAPE, "output shape: element %d is %lld", i, (long long)got[i]);
        else known *= got[i];
    }
    if (minus >= 0) got[minus] = known ? want[0] * want[1] * want[2] * want[3] / known : 0;
    for (int i = 0; i < 4; i++)
        if (got[i] != want[i])
            return inf__kernel_error(
                ctx, INF_ESHAPE,
                "the graph reshapes attention's P V [%lld, %lld, %lld, %lld] to [%lld, %lld, %lld, "
                "%lld] before its last Transpose; the fused Attention keeps P V's shape only",
                (long long)want[0], (long long)want[1], (long long)want[2], (long long)want[3], (long long)got[0],
                (long long)got[1], (long long)got[2], (long long)got[3]);
    return INF_OK;
}

/* The job of g and o, without its scratch; *threads parts (at most the
 * pool's threads, at most one a unit). */
static void make_job(const inf__attention_geom *g, const inf__attention_opts *o, inf__pool *pool, attention_job *j,
                     int *threads) {
    *j = (attention_job){.q = g->q,
                         .k = g->k,
                         .v = g->v,
                         .mask = g->mask,
                         .y = g->y,
                         .b = g->b,
                         .h = g->h,
                         .sq = g->sq,
                         .sk = g->sk,
                         .d = g->d,
                         .dv = g->dv,
                         .qb = g->qb,
                         .qh = g->qh,
                         .kb = g->kb,
                         .kh = g->kh,
                         .vb = g->vb,
                         .vh = g->vh,
                         .ldq = g->ldq,
                         .ldk = g->ldk,
                         .ldv = g->ldv,
                         .ldy = g->ldy,
                         .mb = g->mb,
                         .mh = g->mh,
                         .mi = g->mi,
                         .mj = g->mj,
                         .yb = g->yb,
                         .yh = g->yh,
                         .group = g->group > 0 ? g->group : 1};
    j->scale = o->scale;
    j->nan_to_zero = o->nan_to_zero;
    j->masked_to_zero = o->masked_to_zero;
    j->causal = o->causal;
    j->off = o->causal_at ? o->causal_offset : j->sk - j->sq;
    j->rows = j->sk > 0 ? SCORE_BLOCK_FLOATS / j->sk : 1;
    if (j->rows < 1) j->rows = 1;
    if (j->rows > j->sq) j->rows = j->sq;
    j->vm = inf__vmath_best();
#if defined(__x86_64__)
    j->kt_avx2 = inf__cpu_has_avx2_fma();
    if (inf__cpu_has_avx512()) j->exp_rows = inf__attention_exp_rows_avx512;
    else if (j->kt_avx2) j->exp_rows = inf__attention_exp_rows_avx2;
#endif
    int64_t n_units = j->b * j->h;
    int t = inf__pool_size(pool);
    if (t > n_units) t = (int)n_units;
    if (t < 1) t = 1;
    *threads = t;
    j->n_parts = t;
    j->scratch_floats = (j->d * j->sk + 15) / 16 * 16 + (j->rows * j->sk + 15) / 16 * 16 + (j->rows + 15) / 16 * 16;
}

size_t inf__attention_scratch_bytes(const inf__attention_geom *g, const inf__attention_opts *o, inf__pool *pool) {
    attention_job j;
    int threads;
    make_job(g, o, pool, &j, &threads);
    /* the parts' counters, then their float scratch (both 64-byte aligned) */
    return (size_t)threads * sizeof(unit_counter) + (size_t)(threads * j.scratch_floats) * sizeof(float);
}

void inf__attention_compute(const inf__attention_geom *g, const inf__attention_opts *o, inf__pool *pool,
                            void *scratch) {
    size_t n_y = (size_t)(g->b * g->h * g->sq * g->dv);
    if (n_y == 0) return;
    if (g->sk == 0) { /* no keys: P V sums nothing (the unfused MatMul gives zeros) */
        for (int64_t b = 0; b < g->b; b++)
            for (int64_t h = 0; h < g->h; h++)
                for (int64_t i = 0; i < g->sq; i++)
                    memset(g->y + b * g->yb + h * g->yh + i * g->ldy, 0, (size_t)g->dv * sizeof(float));
        return;
    }
    attention_job j;
    int threads;
    make_job(g, o, pool, &j, &threads);
    j.next = scratch;
    j.scratch = (float *)((char *)scratch + (size_t)threads * sizeof(unit_counter));
    j.pool = threads > 1 ? pool : NULL;
    for (int t = 0; t < threads; t++)
        atomic_init(&j.next[t].next, first_unit(&j, t));
    inf__pool_range(j.pool, threads, 1, attention_task, &j);
}

static inf_status attention_run(inf__kernel_ctx *ctx) {
    const attention_params *p = ctx->node->params;
    inf__attention_geom g;
    inf_tensor *y;
    inf_status st = inf__attention_geometry(ctx, &p->layout, &g, &y);
    if (st == INF_OK && ctx->n_in > 4 && ctx->in[4]) st = check_out_shape(ctx, &g, p->out_shape_allowzero);
    if (st != INF_OK || inf_tensor_numel(y) == 0) return st;
    void *mem = inf__kernel_scratch(ctx, inf__attention_scratch_bytes(&g, &p->opts, ctx->pool));
    if (!mem) return INF_ENOMEM;
    inf__attention_compute(&g, &p->opts, ctx->pool, mem);
    return INF_OK;
}

static inf_status attention_init(inf__node *node, inf__arena *arena, inf_error *err) {
    attention_params *p = inf__op_params(arena, attention_params);
    if (!p) return inf__node_error(node, err, INF_ENOMEM, "out of memory");
    const inf__attr *a = inf__node_attr(node, "scale");
    if (!a || a->type != INF_ATTR_FLOAT)
        return inf__node_error(node, err, INF_EINVAL, "attribute scale: expected a float");
    p->opts.scale = a->f;
    p->opts.nan_to_zero = inf__attr_int(node, "nan_to_zero", 0) != 0;
    p->opts.causal = inf__attr_int(node, "causal", 0) != 0;
    p->out_shape_allowzero = inf__attr_int(node, "out_shape_allowzero", 0) != 0;
    int64_t bhsd = inf__attr_int(node, "bhsd", 0), kv_heads = inf__attr_int(node, "kv_heads", 0),
            q_heads = inf__attr_int(node, "q_heads", 0);
    if (bhsd < 0 || bhsd > 15 || kv_heads < 0 || q_heads < 0 || kv_heads > 65536 || q_heads > 65536 ||
        (q_heads && !kv_heads) || (kv_heads && q_heads % kv_heads))
        return inf__node_error(node, err, INF_EINVAL,
                               "attributes bhsd %lld (0-15), kv_heads %lld, q_heads %lld (0-65536, q_heads a multiple "
                               "of kv_heads and only with it)",
                               (long long)bhsd, (long long)kv_heads, (long long)q_heads);
    p->layout.bhsd = (int)bhsd, p->layout.kv_heads = kv_heads, p->layout.q_heads = q_heads;
    node->params = p;
    return INF_OK;
}

const inf__op_impl op_attention = {attention_init, attention_run};
