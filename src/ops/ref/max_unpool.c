/*
 * max_unpool.c -- ONNX MaxUnpool, opsets 9-17: the partial inverse of
 * MaxPool.  X [N, C, D1...] (any numeric type), I (int64 indices, X's
 * shape) and optional output_shape (int64, the full output shape).
 *
 * The output is zero except at the positions I names: I holds MaxPool's
 * flat indices into the whole tensor (n*C*D... + c*D... + spatial), so
 * output.flat[I[i]] = X[i].  Without output_shape the spatial dims are
 * (in - 1) * stride + kernel - pad_begin - pad_end.  A later duplicate
 * index overwrites an earlier one.
 *
 * Deviations: node/test_maxunpool_export_with_output_shape expects the
 * indices to address the inferred shape and the result to be re-framed into
 * output_shape; like onnxruntime (see onnx/onnx#2398) we follow the spec,
 * which indexes the output tensor directly, so that test fails.
 */
#include "ops/ref/data_move.h"

static inf_status unpool_shape(inf__kernel_ctx *ctx, const inf_tensor *x, int64_t *dims) {
    int ns = x->ndim - 2, nk, np, nt;
    const int64_t *k = inf__attr_ints(ctx->node, "kernel_shape", &nk);
    const int64_t *pads = inf__attr_ints(ctx->node, "pads", &np);
    const int64_t *strides = inf__attr_ints(ctx->node, "strides", &nt);
    if (!k || nk != ns)
        return inf__kernel_error(ctx, INF_EINVAL, "attribute kernel_shape: expected %d values", ns);
    if ((pads && np != 2 * ns) || (strides && nt != ns))
        return inf__kernel_error(ctx, INF_EINVAL, "attributes pads/strides: expected %d/%d values",
                                 2 * ns, ns);
    dims[0] = x->dims[0];
    dims[1] = x->dims[1];
    for (int a = 0; a < ns; a++) {
        int64_t s = strides ? strides[a] : 1, d;
        if (s < 1 || __builtin_mul_overflow(x->dims[a + 2] - 1, s, &d) || __builtin_add_overflow(d, k[a], &d) ||
            __builtin_sub_overflow(d, pads ? pads[a] : 0, &d) ||
            __builtin_sub_overflow(d, pads ? pads[ns + a] : 0, &d) || d < 0)
            return inf__kernel_error(ctx, INF_EINVAL,
                                     "spatial axis %d: stride %lld gives an invalid or too large output size", a,
                                     (long long)s);
        dims[a + 2] = d;
    }
    return INF_OK;
}

static inf_status max_unpool_run(inf__kernel_ctx *ctx) {
    const inf_tensor *x, *ind, *os;
    inf_status st;
    if ((st = move_input(ctx, 0, "X", true, &x)) != INF_OK ||
        (st = move_input(ctx, 1, "I", true, &ind)) != INF_OK ||
        (st = move_input(ctx, 2, "output_shape", false, &os)) != INF_OK)
        return st;
    if (x->ndim < 3 || !(inf__dtype_is_float(x->dtype) || inf__dtype_is_int(x->dtype)))
        return inf__kernel_error(ctx, INF_ESHAPE,
                                 "input X: expected a numeric tensor of rank >= 3");
    if (ind->dtype != INF_DTYPE_I64 || ind->ndim != x->ndim ||
        memcmp(ind->dims, x->dims, sizeof(int64_t) * x->ndim))
        return inf__kernel_error(ctx, INF_ESHAPE, "input I: expected int64 with the shape of X");
    int64_t dims[INF_MAX_DIMS];
    if (os) {
        int n;
        if ((st = move_read_ints(ctx, os, "output_shape", false, INF_MAX_DIMS, dims, &n)) != INF_OK)
            return st;
        if (n != x->ndim || dims[0] != x->dims[0] || dims[1] != x->dims[1])
            return inf__kernel_error(
                ctx, INF_ESHAPE, "input output_shape: expected %d values starting with N, C of X",
                x->ndim);
        for (int a = 2; a < n; a++)
            if (dims[a] < 0)
                return inf__kernel_error(ctx, INF_ESHAPE, "input output_shape: negative dimension");
    } else if ((st = unpool_shape(ctx, x, dims)) != INF_OK) {
        return st;
    }
    inf_tensor *y;
    if ((st = inf__kernel_output(ctx, 0, x->dtype, x->ndim, dims, &y)) != INF_OK) return st;
    int64_t total = inf_tensor_numel(y);
    if (total) memset(y->data, 0, inf_tensor_nbytes(y));
    const int64_t *iv = ind->data;
    for (int64_t i = 0, n = inf_tensor_numel(x); i < n; i++) {
        if (iv[i] < 0 || iv[i] >= total)
            return inf__kernel_error(ctx, INF_ERANGE,
                                     "input I: element %lld is %lld, outside [0, %lld)",
                                     (long long)i, (long long)iv[i], (long long)total);
        if ((st = move_copy(ctx, y, iv[i], x, i, 1)) != INF_OK) return st;
    }
    return INF_OK;
}

const inf__op_impl op_max_unpool = {NULL, max_unpool_run};
