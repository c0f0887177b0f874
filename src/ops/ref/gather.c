/*
 * gather.c -- ONNX Gather, opsets 1-17, every data dtype; indices int32 or
 * int64.
 *
 * out[i_0..i_{axis-1}, j..., k...] = data[i_0.., indices[j...], k...].
 * Negative indices count from the end of the axis (opset 11 text; accepted
 * at every opset).  Every index is checked before anything is copied; an
 * index outside [-dim, dim) is INF_ERANGE naming its position.
 *
 * Data moves as one memcpy per (outer index, index) of the trailing
 * `inner` elements; strings are copied with inf_tensor_set_string.
 *
 * Deviations: none.
 */
#include "ops/ref/data_move.h"

static int64_t gather_index(const inf_tensor *ind, int64_t j) {
    return ind->dtype == INF_DTYPE_I64 ? ((const int64_t *)ind->data)[j]
                                       : ((const int32_t *)ind->data)[j];
}

static inf_status gather_check_indices(inf__kernel_ctx *ctx, const inf_tensor *ind, int64_t dim,
                                       int axis) {
    int64_t n = inf_tensor_numel(ind);
    for (int64_t j = 0; j < n; j++) {
        int64_t v = gather_index(ind, j);
        if (v < -dim || v >= dim)
            return inf__kernel_error(ctx, INF_ERANGE,
                                     "input indices: element %lld is %lld, outside [%lld, %lld) "
                                     "(axis %d of input data)",
                                     (long long)j, (long long)v, (long long)-dim, (long long)dim,
                                     axis);
    }
    return INF_OK;
}

static inf_status gather_run(inf__kernel_ctx *ctx) {
    const inf_tensor *x, *ind;
    inf_status st;
    if ((st = move_input(ctx, 0, "data", true, &x)) != INF_OK ||
        (st = move_input(ctx, 1, "indices", true, &ind)) != INF_OK)
        return st;
    if (ind->dtype != INF_DTYPE_I64 && ind->dtype != INF_DTYPE_I32)
        return inf__kernel_error(ctx, INF_ETYPE, "input indices: expected int32 or int64, got %s",
                                 inf_dtype_name(ind->dtype));
    int axis = 0;
    if ((st = move_axis(ctx, "attribute axis", inf__attr_int(ctx->node, "axis", 0), x->ndim,
                        &axis)) != INF_OK)
        return st;
    int r = x->ndim - 1 + ind->ndim;
    if (r > INF_MAX_DIMS)
        return inf__kernel_error(ctx, INF_ESHAPE, "output rank %d exceeds the maximum %d", r,
                                 INF_MAX_DIMS);
    int64_t dim = x->dims[axis];
    if ((st = gather_check_indices(ctx, ind, dim, axis)) != INF_OK) return st;

    int64_t dims[INF_MAX_DIMS];
    int k = 0;
    for (int a = 0; a < axis; a++) dims[k++] = x->dims[a];
    for (int a = 0; a < ind->ndim; a++) dims[k++] = ind->dims[a];
    for (int a = axis + 1; a < x->ndim; a++) dims[k++] = x->dims[a];
    inf_tensor *y;
    if ((st = inf__kernel_output(ctx, 0, x->dtype, r, dims, &y)) != INF_OK) return st;
    if (inf_tensor_numel(y) == 0) return INF_OK;

    int64_t outer = move_prod(x->dims, 0, axis), inner = move_prod(x->dims, axis + 1, x->ndim);
    int64_t n_ind = inf_tensor_numel(ind), off = 0;
    for (int64_t o = 0; o < outer; o++) {
        for (int64_t j = 0; j < n_ind; j++, off += inner) {
            int64_t v = gather_index(ind, j);
            if (v < 0) v += dim;
            if ((st = move_copy(ctx, y, off, x, (o * dim + v) * inner, inner)) != INF_OK) return st;
        }
    }
    return INF_OK;
}

const inf__op_impl op_gather = {NULL, gather_run};
