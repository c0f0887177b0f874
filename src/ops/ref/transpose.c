/*
 * transpose.c -- ONNX Transpose, opsets 1-17, every dtype.
 *
 * perm defaults to the reversed axes.  The kernel first simplifies the
 * problem: size-1 axes are dropped and output axes that stay adjacent in the
 * input are merged, so NCHW -> NHWC becomes a batched 2-D transpose and an
 * identity permutation a single memcpy.  Then:
 *   - the last output axis is contiguous in the input: rows are memcpy'd;
 *   - otherwise a tiled copy over the two axes that are contiguous in the
 *     output (the last) and in the input (stride 1), so that both sides are
 *     read and written a cache line at a time.
 * Work is split across the session's threads for large tensors.  Numeric
 * dtypes move by element size (1, 2, 4, 8 or 16 bytes); strings are copied
 * one by one with inf_tensor_set_string (single-threaded).
 *
 * Deviations: none.  A perm that is not a permutation of the input's axes is
 * rejected (at load time when invalid for any rank, at run time when its
 * length differs from the input's rank).
 */
#include "ops/ref/data_move.h"

#define TP_TILE 32               /* tile edge (elements) of the 2-D case */
#define TP_TASK_ELEMS 16384      /* least elements per thread chunk */

typedef struct transpose_params {
    int n_perm;                  /* 0: reverse */
    int64_t perm[INF_MAX_DIMS];
} transpose_params;

static inf_status transpose_init(inf__node *node, inf__arena *arena, inf_error *err) {
    transpose_params *p = inf__op_params(arena, transpose_params);
    if (!p) return INF_ENOMEM;
    int n;
    const int64_t *perm = inf__attr_ints(node, "perm", &n);
    if (perm) {
        if (n > INF_MAX_DIMS)
            return inf__node_error(node, err, INF_EUNSUPPORTED,
                                   "attribute perm has %d entries, at most %d are supported", n,
                                   INF_MAX_DIMS);
        bool seen[INF_MAX_DIMS] = {false};
        for (int k = 0; k < n; k++) {
            if (perm[k] < 0 || perm[k] >= n || seen[perm[k]])
                return inf__node_error(node, err, INF_EMODEL,
                                       "attribute perm is not a permutation of 0..%d (entry %d "
                                       "is %lld)",
                                       n - 1, k, (long long)perm[k]);
            seen[perm[k]] = true;
            p->perm[k] = perm[k];
        }
        p->n_perm = n;
    }
    node->params = p;
    return INF_OK;
}

/* The simplified copy: output is dense over size[0..m); element (i0..im-1)
 * comes from input offset sum(i_k * sstride[k]). */
typedef struct tp_plan {
    int m;
    int64_t size[INF_MAX_DIMS];
    int64_t sstride[INF_MAX_DIMS];   /* input strides, elements */
    int64_t dstride[INF_MAX_DIMS];   /* output strides, elements */
    int p;                           /* output axis with input stride 1 */
    size_t es;
    const char *src;
    char *dst;
} tp_plan;

static void tp_plan_build(tp_plan *pl, const inf_tensor *x, const int64_t *perm) {
    int64_t in_stride[INF_MAX_DIMS];
    int r = x->ndim;
    int64_t s = 1;
    for (int a = r - 1; a >= 0; a--) {
        in_stride[a] = s;
        s *= x->dims[a];
    }
    int m = 0;
    for (int k = 0; k < r; k++) {
        int64_t d = x->dims[perm[k]], st = in_stride[perm[k]];
        if (d == 1) continue;
        if (m > 0 && pl->sstride[m - 1] == st * d) {
            pl->size[m - 1] *= d;    /* adjacent in the input too: merge */
            pl->sstride[m - 1] = st;
            continue;
        }
        pl->size[m] = d;
        pl->sstride[m] = st;
        m++;
    }
    pl->m = m;
    int64_t ds = 1;
    pl->p = -1;
    for (int k = m - 1; k >= 0; k--) {
        pl->dstride[k] = ds;
        ds *= pl->size[k];
        if (pl->sstride[k] == 1) pl->p = k;
    }
}

/* Input offset of the output position given by linear index `lin` over the
 * axes in ax[0..n) (row-major among themselves). */
static int64_t tp_offset(const tp_plan *pl, const int *ax, int n, int64_t lin, int64_t *dst_off) {
    int64_t so = 0, dof = 0;
    for (int k = n - 1; k >= 0; k--) {
        int a = ax[k];
        int64_t i = lin % pl->size[a];
        lin /= pl->size[a];
        so += i * pl->sstride[a];
        dof += i * pl->dstride[a];
    }
    *dst_off = dof;
    return so;
}

/* ---- case 1: last output axis contiguous in the input: memcpy rows ---- */

static void tp_rows(void *arg, int64_t begin, int64_t end) {
    const tp_plan *pl = arg;
    int ax[INF_MAX_DIMS];
    for (int k = 0; k < pl->m - 1; k++) ax[k] = k;
    size_t row = (size_t)pl->size[pl->m - 1] * pl->es;
    for (int64_t r = begin; r < end; r++) {
        int64_t doff;
        int64_t soff = tp_offset(pl, ax, pl->m - 1, r, &doff);
        memcpy(pl->dst + (size_t)doff * pl->es, pl->src + (size_t)soff * pl->es, row);
    }
}

/* ---- case 2: tiled copy over axes p (input-contiguous) and m-1 ---- */

#define TP_TILE_COPY(T)                                                                   \
    do {                                                                                  \
        const T *s_ = (const T *)src;                                                     \
        T *d_ = (T *)dst;                                                                 \
        for (int64_t i = 0; i < ni; i++)                                                  \
            for (int64_t j = 0; j < nj; j++) d_[i * dsi + j] = s_[i + j * ssj];           \
    } while (0)

static void tp_tile(const char *src, char *dst, size_t es, int64_t ni, int64_t nj, int64_t dsi,
                    int64_t ssj) {
    switch (es) {
    case 1: TP_TILE_COPY(uint8_t); break;
    case 2: TP_TILE_COPY(uint16_t); break;
    case 4: TP_TILE_COPY(uint32_t); break;
    case 8: TP_TILE_COPY(uint64_t); break;
    default:
        for (int64_t i = 0; i < ni; i++)
            for (int64_t j = 0; j < nj; j++)
                memcpy(dst + (size_t)(i * dsi + j) * es, src + (size_t)(i + j * ssj) * es, es);
    }
}

/* Task t: outer position t / n_itiles, tile row t % n_itiles. */
static void tp_tiles(void *arg, int64_t begin, int64_t end) {
    const tp_plan *pl = arg;
    int ax[INF_MAX_DIMS], n_outer = 0, p = pl->p, q = pl->m - 1;
    for (int k = 0; k < pl->m; k++)
        if (k != p && k != q) ax[n_outer++] = k;
    int64_t n_itiles = (pl->size[p] + TP_TILE - 1) / TP_TILE;
    int64_t dsi = pl->dstride[p], ssj = pl->sstride[q];
    for (int64_t t = begin; t < end; t++) {
        int64_t doff;
        int64_t soff = tp_offset(pl, ax, n_outer, t / n_itiles, &doff);
        int64_t i0 = (t % n_itiles) * TP_TILE;
        int64_t ni = pl->size[p] - i0 < TP_TILE ? pl->size[p] - i0 : TP_TILE;
        for (int64_t j0 = 0; j0 < pl->size[q]; j0 += TP_TILE) {
            int64_t nj = pl->size[q] - j0 < TP_TILE ? pl->size[q] - j0 : TP_TILE;
            const char *s = pl->src + (size_t)(soff + i0 + j0 * ssj) * pl->es;
            char *d = pl->dst + (size_t)(doff + i0 * dsi + j0) * pl->es;
            tp_tile(s, d, pl->es, ni, nj, dsi, ssj);
        }
    }
}

/* ---- strings: element by element ---- */

static inf_status tp_strings(inf__kernel_ctx *ctx, const tp_plan *pl, const inf_tensor *x,
                             inf_tensor *y) {
    int ax[INF_MAX_DIMS];
    for (int k = 0; k < pl->m; k++) ax[k] = k;
    int64_t n = inf_tensor_numel(y);
    for (int64_t e = 0; e < n; e++) {
        int64_t doff;
        int64_t soff = tp_offset(pl, ax, pl->m, e, &doff);
        inf_status st = move_copy(ctx, y, doff, x, soff, 1);
        if (st != INF_OK) return st;
    }
    return INF_OK;
}

static inf_status transpose_run(inf__kernel_ctx *ctx) {
    const transpose_params *tp = ctx->node->params;
    const inf_tensor *x;
    inf_status st = move_input(ctx, 0, "data", true, &x);
    if (st != INF_OK) return st;
    int r = x->ndim;
    int64_t perm[INF_MAX_DIMS], dims[INF_MAX_DIMS];
    if (tp && tp->n_perm) {
        if (tp->n_perm != r)
            return inf__kernel_error(ctx, INF_ESHAPE,
                                     "attribute perm has %d entries, input data has rank %d",
                                     tp->n_perm, r);
        for (int k = 0; k < r; k++) perm[k] = tp->perm[k];
    } else {
        for (int k = 0; k < r; k++) perm[k] = r - 1 - k;
    }
    for (int k = 0; k < r; k++) dims[k] = x->dims[perm[k]];
    inf_tensor *y;
    if ((st = inf__kernel_output(ctx, 0, x->dtype, r, dims, &y)) != INF_OK) return st;
    int64_t n = inf_tensor_numel(x);
    if (n == 0) return INF_OK;

    tp_plan pl;
    tp_plan_build(&pl, x, perm);
    pl.es = inf_dtype_size(x->dtype);
    pl.src = x->data;
    pl.dst = y->data;
    if (x->dtype == INF_DTYPE_STRING) return tp_strings(ctx, &pl, x, y);
    if (pl.m == 0 || (pl.m == 1 && pl.sstride[0] == 1)) {
        memcpy(y->data, x->data, (size_t)n * pl.es);
        return INF_OK;
    }
    if (pl.sstride[pl.m - 1] == 1) {
        int64_t row = pl.size[pl.m - 1];
        int64_t min_rows = TP_TASK_ELEMS / row > 0 ? TP_TASK_ELEMS / row : 1;
        inf__pool_range(ctx->pool, n / row, min_rows, tp_rows, &pl);
        return INF_OK;
    }
    if (INF_NEVER(pl.p < 0)) return inf__kernel_error(ctx, INF_EINTERNAL, "no contiguous axis");
    int64_t n_itiles = (pl.size[pl.p] + TP_TILE - 1) / TP_TILE;
    int64_t n_tasks = n / (pl.size[pl.p] * pl.size[pl.m - 1]) * n_itiles;
    int64_t per_task = TP_TILE * pl.size[pl.m - 1];
    int64_t min_tasks = TP_TASK_ELEMS / per_task > 0 ? TP_TASK_ELEMS / per_task : 1;
    inf__pool_range(ctx->pool, n_tasks, min_tasks, tp_tiles, &pl);
    return INF_OK;
}

const inf__op_impl op_transpose = {transpose_init, transpose_run};
