/*
 * expand.c -- ONNX Expand, opsets 8-17, every dtype.
 *
 * The output shape is the numpy broadcast of the input's shape and the int64
 * `shape` input (bidirectional: a 1 in `shape` keeps the input's dimension,
 * and `shape` may have a lower rank than the input).
 *
 * Data moves in runs: the longest suffix of axes that is not broadcast is
 * copied with one memcpy per position of the leading axes; when the last
 * axis is broadcast, each output row is filled with one input element.
 * Strings are copied with inf_tensor_set_string.
 *
 * Deviations: none.
 */
#include "ops/ref/data_move.h"

static inf_status expand_run(inf__kernel_ctx *ctx) {
    const inf_tensor *x, *s;
    inf_status st;
    if ((st = move_input(ctx, 0, "input", true, &x)) != INF_OK ||
        (st = move_input(ctx, 1, "shape", true, &s)) != INF_OK)
        return st;
    int64_t shape[INF_MAX_DIMS], dims[INF_MAX_DIMS], strides[INF_MAX_DIMS];
    int ns = 0, r = 0;
    if ((st = move_read_ints(ctx, s, "shape", false, INF_MAX_DIMS, shape, &ns)) != INF_OK) return st;
    for (int k = 0; k < ns; k++)
        if (shape[k] < 0)
            return inf__kernel_error(ctx, INF_ESHAPE, "input shape: dimension %d is %lld (< 0)", k,
                                     (long long)shape[k]);
    if (inf__broadcast_shape(x->ndim, x->dims, ns, shape, &r, dims) != INF_OK) {
        char a[160], b[160];
        return inf__kernel_error(ctx, INF_ESHAPE,
                                 "input shape %s cannot be broadcast with input of shape %s",
                                 inf__shape_str(ns, shape, a, sizeof a),
                                 inf__shape_str(x->ndim, x->dims, b, sizeof b));
    }
    inf_tensor *y;
    if ((st = inf__kernel_output(ctx, 0, x->dtype, r, dims, &y)) != INF_OK) return st;
    int64_t n = inf_tensor_numel(y);
    if (n == 0) return INF_OK;
    if (r == 0) return move_copy(ctx, y, 0, x, 0, 1);
    inf__broadcast_strides(x->ndim, x->dims, r, dims, strides);

    /* k: first axis of the non-broadcast suffix (k == r: the last axis is
     * broadcast, rows are filled) */
    int k = r;
    while (k > 0 && (strides[k - 1] != 0 || dims[k - 1] == 1)) k--;
    bool fill = k == r;
    int n_it = fill ? r - 1 : k;                      /* leading axes, iterated */
    int64_t block = fill ? dims[r - 1] : move_prod(dims, k, r);
    int64_t idx[INF_MAX_DIMS] = {0};
    for (int64_t off = 0; off < n; off += block) {
        int64_t src = 0;
        for (int a = 0; a < n_it; a++) src += idx[a] * strides[a];
        st = fill ? move_fill(ctx, y, off, x, src, block) : move_copy(ctx, y, off, x, src, block);
        if (st != INF_OK) return st;
        for (int a = n_it - 1; a >= 0; a--) {         /* odometer */
            if (++idx[a] < dims[a]) break;
            idx[a] = 0;
        }
    }
    return INF_OK;
}

const inf__op_impl op_expand = {NULL, expand_run};
