/*
 * reshape.c -- the ops that only change a tensor's shape, and Shape.
 *
 *   Reshape    opsets 1-4 (`shape` attribute), 5-13 (`shape` input),
 *              14+ (`allowzero` attribute).  0 copies the input dimension
 *              (unless allowzero), one -1 is inferred.
 *   Flatten    opsets 1-17, axis in [-r, r] (negative from opset 11).
 *   Squeeze    opsets 1-12 (`axes` attribute), 13+ (`axes` input); without
 *              axes every dimension of size 1 is removed.
 *   Unsqueeze  opsets 1-12 (`axes` attribute), 13+ (`axes` input).
 *   Shape      opsets 1-14, 15+ (`start` / `end` attributes, clamped).
 *
 * Dtypes: all (the data is not touched: the output aliases the input through
 * inf__kernel_output_alias).  Shape outputs int64.
 *
 * Deviations: Reshape with allowzero = 1 and both a 0 and a -1 is rejected
 * (the spec calls it invalid); a -1 whose size cannot be inferred because the
 * known dimensions multiply to 0 is rejected (numpy does the same).  Axes
 * listed twice in Squeeze / Unsqueeze are rejected.
 */
#include "ops/ref/data_move.h"

/* ======================================================================== */
/*  Reshape                                                                 */
/* ======================================================================== */

typedef struct reshape_params {
    bool allowzero;
    int n_shape;              /* opset < 5: the `shape` attribute */
    const int64_t *shape;
} reshape_params;

static inf_status reshape_init(inf__node *node, inf__arena *arena, inf_error *err) {
    reshape_params *p = inf__op_params(arena, reshape_params);
    if (!p) return INF_ENOMEM;
    p->allowzero = inf__attr_int(node, "allowzero", 0) != 0;
    if (node->opset < 5) {
        p->shape = inf__attr_ints(node, "shape", &p->n_shape);
        if (!p->shape && !inf__node_attr(node, "shape"))
            return inf__node_error(node, err, INF_EMODEL, "attribute 'shape' is required before opset 5");
        if (p->n_shape > INF_MAX_DIMS)
            return inf__node_error(node, err, INF_EUNSUPPORTED,
                                   "attribute 'shape' has %d dimensions, at most %d are supported",
                                   p->n_shape, INF_MAX_DIMS);
    }
    node->params = p;
    return INF_OK;
}

/* Resolves the requested shape (0 and -1 entries) against input x. */
static inf_status reshape_resolve(inf__kernel_ctx *ctx, const inf_tensor *x, bool allowzero,
                                  int n, int64_t *dims) {
    int infer = -1;
    bool has_zero = false;
    int64_t known = 1;
    for (int k = 0; k < n; k++) {
        int64_t d = dims[k];
        if (d == -1) {
            if (infer >= 0)
                return inf__kernel_error(ctx, INF_ESHAPE,
                                         "input shape: more than one -1 (at %d and %d)", infer, k);
            infer = k;
            continue;
        }
        if (d < -1)
            return inf__kernel_error(ctx, INF_ESHAPE, "input shape: dimension %d is %lld (< -1)", k,
                                     (long long)d);
        if (d == 0 && !allowzero) {
            if (k >= x->ndim)
                return inf__kernel_error(ctx, INF_ESHAPE,
                                         "input shape: dimension %d is 0 (copy from the input), "
                                         "but input data has rank %d",
                                         k, x->ndim);
            d = dims[k] = x->dims[k];
        }
        if (d == 0) has_zero = true;
        else if (known > INT64_MAX / d)
            return inf__kernel_error(ctx, INF_ESHAPE, "input shape: size overflows int64");
        known *= d;
    }
    int64_t numel = inf_tensor_numel(x);
    char a[160], b[160];
    if (infer >= 0) {
        if (has_zero)
            return inf__kernel_error(ctx, INF_ESHAPE,
                                     "input shape %s: -1 cannot be inferred when another "
                                     "dimension is 0",
                                     inf__shape_str(n, dims, a, sizeof a));
        if (numel % known != 0)
            return inf__kernel_error(ctx, INF_ESHAPE,
                                     "input shape %s: %lld elements of input data %s do not divide "
                                     "into it",
                                     inf__shape_str(n, dims, a, sizeof a), (long long)numel,
                                     inf__shape_str(x->ndim, x->dims, b, sizeof b));
        dims[infer] = numel / known;
    } else if ((has_zero ? 0 : known) != numel) {
        return inf__kernel_error(ctx, INF_ESHAPE,
                                 "input shape %s has %lld elements, input data %s has %lld",
                                 inf__shape_str(n, dims, a, sizeof a),
                                 (long long)(has_zero ? 0 : known),
                                 inf__shape_str(x->ndim, x->dims, b, sizeof b), (long long)numel);
    }
    return INF_OK;
}

static inf_status reshape_run(inf__kernel_ctx *ctx) {
    const reshape_params *p = ctx->node->params;
    const inf_tensor *x, *s;
    inf_status st = move_input(ctx, 0, "data", true, &x);
    if (st != INF_OK) return st;
    int64_t dims[INF_MAX_DIMS];
    int n = p->n_shape;
    if (ctx->node->opset < 5) {
        for (int k = 0; k < n; k++) dims[k] = p->shape[k];
    } else {
        if ((st = move_input(ctx, 1, "shape", true, &s)) != INF_OK) return st;
        if ((st = move_read_ints(ctx, s, "shape", false, INF_MAX_DIMS, dims, &n)) != INF_OK) return st;
    }
    if ((st = reshape_resolve(ctx, x, p->allowzero, n, dims)) != INF_OK) return st;
    inf_tensor *y;
    return inf__kernel_output_alias(ctx, 0, 0, n, dims, &y);
}

const inf__op_impl op_reshape = {reshape_init, reshape_run};

/* ======================================================================== */
/*  Flatten                                                                 */
/* ======================================================================== */

static inf_status flatten_run(inf__kernel_ctx *ctx) {
    const inf_tensor *x;
    inf_status st = move_input(ctx, 0, "input", true, &x);
    if (st != INF_OK) return st;
    int64_t axis = inf__attr_int(ctx->node, "axis", 1);
    int r = x->ndim;
    if (axis < -(int64_t)r || axis > r)
        return inf__kernel_error(ctx, INF_ERANGE,
                                 "attribute axis = %lld is out of range [%d, %d] for input of rank %d",
                                 (long long)axis, -r, r, r);
    if (axis < 0) axis += r;
    int64_t dims[2] = {move_prod(x->dims, 0, (int)axis), move_prod(x->dims, (int)axis, r)};
    inf_tensor *y;
    return inf__kernel_output_alias(ctx, 0, 0, 2, dims, &y);
}

const inf__op_impl op_flatten = {NULL, flatten_run};

/* ======================================================================== */
/*  Squeeze / Unsqueeze                                                     */
/* ======================================================================== */

/* The axes list: attribute before opset 13, optional input 1 from 13.
 * *n = -1 when none was given. */
static inf_status read_axes(inf__kernel_ctx *ctx, int64_t *axes, int *n) {
    *n = -1;
    if (ctx->node->opset < 13) {
        int na;
        const int64_t *a = inf__attr_ints(ctx->node, "axes", &na);
        if (!a && !inf__node_attr(ctx->node, "axes")) return INF_OK;
        if (na > INF_MAX_DIMS)
            return inf__kernel_error(ctx, INF_ESHAPE, "attribute axes has %d entries, at most %d",
                                     na, INF_MAX_DIMS);
        for (int k = 0; k < na; k++) axes[k] = a[k];
        *n = na;
        return INF_OK;
    }
    const inf_tensor *t;
    inf_status st = move_input(ctx, 1, "axes", false, &t);
    if (st != INF_OK || !t) return st;
    return move_read_ints(ctx, t, "axes", false, INF_MAX_DIMS, axes, n);
}

/* Normalises axes against rank into a membership mask; rejects repeats. */
static inf_status axes_mask(inf__kernel_ctx *ctx, const int64_t *axes, int n, int rank,
                            bool *mask) {
    for (int k = 0; k < rank; k++) mask[k] = false;
    for (int k = 0; k < n; k++) {
        int a = 0;
        inf_status st = move_axis(ctx, "axes entry", axes[k], rank, &a);
        if (st != INF_OK) return st;
        if (mask[a])
            return inf__kernel_error(ctx, INF_ERANGE, "axes: axis %d is listed twice", a);
        mask[a] = true;
    }
    return INF_OK;
}

static inf_status squeeze_run(inf__kernel_ctx *ctx) {
    const inf_tensor *x;
    inf_status st = move_input(ctx, 0, "data", true, &x);
    if (st != INF_OK) return st;
    int64_t axes[INF_MAX_DIMS], dims[INF_MAX_DIMS];
    bool mask[INF_MAX_DIMS];
    int n;
    if ((st = read_axes(ctx, axes, &n)) != INF_OK) return st;
    if (n < 0) {
        for (int k = 0; k < x->ndim; k++) mask[k] = x->dims[k] == 1;
    } else {
        if ((st = axes_mask(ctx, axes, n, x->ndim, mask)) != INF_OK) return st;
        for (int k = 0; k < x->ndim; k++)
            if (mask[k] && x->dims[k] != 1)
                return inf__kernel_error(ctx, INF_ESHAPE,
                                         "axes: dimension %d of input data has size %lld, "
                                         "not 1",
                                         k, (long long)x->dims[k]);
    }
    int r = 0;
    for (int k = 0; k < x->ndim; k++)
        if (!mask[k]) dims[r++] = x->dims[k];
    inf_tensor *y;
    return inf__kernel_output_alias(ctx, 0, 0, r, dims, &y);
}

const inf__op_impl op_squeeze = {NULL, squeeze_run};

static inf_status unsqueeze_run(inf__kernel_ctx *ctx) {
    const inf_tensor *x;
    inf_status st = move_input(ctx, 0, "data", true, &x);
    if (st != INF_OK) return st;
    int64_t axes[INF_MAX_DIMS], dims[INF_MAX_DIMS];
    bool mask[INF_MAX_DIMS];
    int n;
    if ((st = read_axes(ctx, axes, &n)) != INF_OK) return st;
    if (n < 0)
        return inf__kernel_error(ctx, INF_EINVAL, "%s 'axes' is required",
                                 ctx->node->opset < 13 ? "attribute" : "input");
    int r = x->ndim + n;
    if (r > INF_MAX_DIMS)
        return inf__kernel_error(ctx, INF_ESHAPE, "output rank %d exceeds the maximum %d", r,
                                 INF_MAX_DIMS);
    if ((st = axes_mask(ctx, axes, n, r, mask)) != INF_OK) return st;
    for (int k = 0, j = 0; k < r; k++) dims[k] = mask[k] ? 1 : x->dims[j++];
    inf_tensor *y;
    return inf__kernel_output_alias(ctx, 0, 0, r, dims, &y);
}

const inf__op_impl op_unsqueeze = {NULL, unsqueeze_run};

/* ======================================================================== */
/*  Shape                                                                   */
/* ======================================================================== */

static int64_t clamp_dim_index(int64_t v, int rank) {
    if (v < 0) v += rank;
    return v < 0 ? 0 : v > rank ? rank : v;
}

static inf_status shape_run(inf__kernel_ctx *ctx) {
    const inf_tensor *x;
    inf_status st = move_input(ctx, 0, "data", true, &x);
    if (st != INF_OK) return st;
    int r = x->ndim;
    int64_t start = 0, end = r;
    if (ctx->node->opset >= 15) {
        start = clamp_dim_index(inf__attr_int(ctx->node, "start", 0), r);
        end = clamp_dim_index(inf__attr_int(ctx->node, "end", r), r);
    }
    int64_t n = end > start ? end - start : 0;
    inf_tensor *y;
    if ((st = inf__kernel_output(ctx, 0, INF_DTYPE_I64, 1, &n, &y)) != INF_OK) return st;
    for (int64_t k = 0; k < n; k++) ((int64_t *)y->data)[k] = x->dims[start + k];
    return INF_OK;
}

const inf__op_impl op_shape = {NULL, shape_run};
