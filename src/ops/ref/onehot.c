/*
 * onehot.c -- ONNX OneHot, opsets 9-17.
 *
 * Inputs: indices (any numeric type; float values are truncated toward
 * zero), depth (a scalar or one-element tensor of any numeric type, > 0 once
 * truncated), values ([off, on], any dtype: the output's).  Attribute axis
 * (default -1) in [-rank-1, rank] places the new depth axis.
 *
 * Negative indices count from the end (index + depth, opset 11 text; also
 * done at opset 9); indices still outside [0, depth) give an all-off row.
 *
 * Deviations: none known.
 */
#include "ops/ref/data_move.h"

static inf_status onehot_check_numeric(inf__kernel_ctx *ctx, const inf_tensor *t,
                                       const char *name) {
    if (t->dtype == INF_DTYPE_BOOL || inf__dtype_is_int(t->dtype) || inf__dtype_is_float(t->dtype))
        return INF_OK;
    return inf__kernel_error(ctx, INF_ETYPE, "input %s: expected a numeric type, got %s", name,
                             inf_dtype_name(t->dtype));
}

static inf_status onehot_depth(inf__kernel_ctx *ctx, const inf_tensor *dt, int64_t *depth) {
    inf_status st = onehot_check_numeric(ctx, dt, "depth");
    if (st != INF_OK) return st;
    if (inf_tensor_numel(dt) != 1 || dt->ndim > 1)
        return inf__kernel_error(ctx, INF_ESHAPE, "input depth must hold exactly one value");
    *depth = inf__tensor_get_i64(dt, 0);
    if (*depth <= 0)
        return inf__kernel_error(ctx, INF_EINVAL, "input depth must be positive, got %lld",
                                 (long long)*depth);
    return INF_OK;
}

static inf_status onehot_run(inf__kernel_ctx *ctx) {
    const inf_tensor *ind, *dt, *vals;
    inf_status st;
    int64_t depth = 0;
    if ((st = move_input(ctx, 0, "indices", true, &ind)) != INF_OK ||
        (st = move_input(ctx, 1, "depth", true, &dt)) != INF_OK ||
        (st = move_input(ctx, 2, "values", true, &vals)) != INF_OK ||
        (st = onehot_check_numeric(ctx, ind, "indices")) != INF_OK ||
        (st = onehot_depth(ctx, dt, &depth)) != INF_OK)
        return st;
    if (vals->ndim != 1 || vals->dims[0] != 2)
        return inf__kernel_error(ctx, INF_ESHAPE, "input values must be a 1-D tensor [off, on]");
    int r = ind->ndim + 1, axis = 0;
    if (r > INF_MAX_DIMS)
        return inf__kernel_error(ctx, INF_ESHAPE, "output rank %d exceeds the maximum %d", r,
                                 INF_MAX_DIMS);
    if ((st = move_axis(ctx, "attribute axis", inf__attr_int(ctx->node, "axis", -1), r, &axis)) !=
        INF_OK)
        return st;
    int64_t dims[INF_MAX_DIMS];
    for (int a = 0, k = 0; a < r; a++) dims[a] = a == axis ? depth : ind->dims[k++];
    inf_tensor *y;
    if ((st = inf__kernel_output(ctx, 0, vals->dtype, r, dims, &y)) != INF_OK) return st;
    /* every element written once (strings must not be overwritten) */
    int64_t outer = move_prod(ind->dims, 0, axis), inner = move_prod(ind->dims, axis, ind->ndim);
    int64_t dst = 0;
    for (int64_t o = 0; o < outer; o++)
        for (int64_t d = 0; d < depth; d++)
            for (int64_t i = 0; i < inner; i++, dst++) {
                int64_t v = inf__tensor_get_i64(ind, o * inner + i);
                if (v < 0) v += depth;
                if ((st = move_copy(ctx, y, dst, vals, v == d, 1)) != INF_OK) return st;
            }
    return INF_OK;
}

const inf__op_impl op_onehot = {NULL, onehot_run};
