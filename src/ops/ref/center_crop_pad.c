/*
 * center_crop_pad.c -- ONNX CenterCropPad (opsets 18-26): each named axis
 * (attribute axes, default all; negative from the end) becomes shape[k]
 * long, cropped around the centre (the window starts at floor((in - out) /
 * 2)) or padded with zeros (floor((out - in) / 2) before, the rest after).
 * dtypes: every tensor type (strings pad with "").
 * Deviations: none known.
 */
#include <string.h>

#include "ops/ref/data_move.h"

static inf_status ccp_run(inf__kernel_ctx *ctx) {
    const inf_tensor *x = ctx->in[0], *shape = ctx->in[1];
    int r = x->ndim, n, na = 0;
    int64_t want[INF_MAX_DIMS], dims[INF_MAX_DIMS], shift[INF_MAX_DIMS];
    inf_status st = move_read_ints(ctx, shape, "shape", true, INF_MAX_DIMS, want, &n);
    if (st != INF_OK) return st;
    const int64_t *axes = inf__attr_ints(ctx->node, "axes", &na);
    if ((axes ? na : r) != n)
        return inf__kernel_error(ctx, INF_ESHAPE, "input shape has %d values for %d axes", n, axes ? na : r);
    for (int d = 0; d < r; d++) dims[d] = x->dims[d], shift[d] = 0;
    bool seen[INF_MAX_DIMS] = {false};
    for (int k = 0; k < n; k++) {
        int a = k;
        if (axes && (st = move_axis(ctx, "attribute axes", axes[k], r, &a)) != INF_OK) return st;
        if (seen[a]) return inf__kernel_error(ctx, INF_EINVAL, "attribute axes names axis %d twice", a);
        seen[a] = true;
        if (want[k] < 0) return inf__kernel_error(ctx, INF_ESHAPE, "input shape[%d] = %lld is negative", k, (long long)want[k]);
        dims[a] = want[k];
        /* source index = output index + shift (crop: > 0, pad: < 0) */
        shift[a] = want[k] <= x->dims[a] ? (x->dims[a] - want[k]) / 2 : -((want[k] - x->dims[a]) / 2);
    }
    inf_tensor *y;
    if ((st = inf__kernel_output(ctx, 0, x->dtype, r, dims, &y)) != INF_OK) return st;
    int64_t total = inf_tensor_numel(y), c[INF_MAX_DIMS] = {0};
    for (int64_t i = 0; i < total && st == INF_OK; i++) {
        int64_t src = 0;
        bool inside = true;
        for (int d = 0; d < r; d++) {
            int64_t s = c[d] + shift[d];
            inside &= s >= 0 && s < x->dims[d];
            if (inside) src = src * x->dims[d] + s; /* outside, it may overflow (an empty X of [0, 2^47]) */
        }
        if (inside) st = move_copy(ctx, y, i, x, src, 1);
        else if (x->dtype == INF_DTYPE_STRING) st = inf_tensor_set_string(y, i, "", 0);
        else memset((char *)y->data + i * (int64_t)inf_dtype_size(y->dtype), 0, inf_dtype_size(y->dtype));
        for (int d = r - 1; d >= 0 && ++c[d] == dims[d]; d--) c[d] = 0;
    }
    return st;
}

const inf__op_impl op_center_crop_pad = {NULL, ccp_run};
