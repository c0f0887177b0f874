/*
 * nonzero_compress.c -- selection by a condition: ONNX NonZero (9-17) and
 * Compress (9-17).
 *
 * NonZero: every numeric dtype, bool and string (non-empty is true); NaN
 * counts as non-zero.  Output int64 [rank, count] of the coordinates in
 * row-major order; a scalar input gives [1, count] with coordinate 0, as
 * onnxruntime does.
 *
 * Compress: every dtype; condition is a 1-D bool tensor.  Without axis the
 * input is read flattened and the output is 1-D.  A condition shorter than
 * the axis leaves the rest unselected; a longer one may only hold false past
 * the end (a true there is INF_ERANGE).
 *
 * Deviations: none known.
 */
#include "ops/ref/data_move.h"

static bool nz_is_true(const inf_tensor *t, int64_t i) {
    if (t->dtype == INF_DTYPE_STRING) {
        const char *s = ((char *const *)t->data)[i];
        return s && *s;
    }
    if (inf__dtype_is_float(t->dtype)) return inf__tensor_get_f64(t, i) != 0.0;
    return inf__tensor_get_i64(t, i) != 0;
}

static inf_status nonzero_run(inf__kernel_ctx *ctx) {
    const inf_tensor *x;
    inf_status st;
    if ((st = move_input(ctx, 0, "X", true, &x)) != INF_OK) return st;
    if (x->dtype == INF_DTYPE_C64 || x->dtype == INF_DTYPE_C128)
        return inf__kernel_error(ctx, INF_ETYPE, "input X: %s is not supported",
                                 inf_dtype_name(x->dtype));
    int64_t n = inf_tensor_numel(x), count = 0;
    for (int64_t i = 0; i < n; i++) count += nz_is_true(x, i);
    int r = x->ndim > 0 ? x->ndim : 1;
    int64_t dims[2] = {r, count};
    inf_tensor *y;
    if ((st = inf__kernel_output(ctx, 0, INF_DTYPE_I64, 2, dims, &y)) != INF_OK) return st;
    int64_t *out = y->data, c[INF_MAX_DIMS] = {0}, k = 0;
    for (int64_t i = 0; i < n; i++) {
        if (nz_is_true(x, i)) {
            for (int a = 0; a < r; a++) out[a * count + k] = x->ndim ? c[a] : 0;
            k++;
        }
        for (int a = x->ndim - 1; a >= 0; a--) {
            if (++c[a] < x->dims[a]) break;
            c[a] = 0;
        }
    }
    return INF_OK;
}

static inf_status compress_run(inf__kernel_ctx *ctx) {
    const inf_tensor *x, *cond;
    inf_status st;
    if ((st = move_input(ctx, 0, "input", true, &x)) != INF_OK ||
        (st = move_input(ctx, 1, "condition", true, &cond)) != INF_OK)
        return st;
    if (cond->dtype != INF_DTYPE_BOOL || cond->ndim != 1)
        return inf__kernel_error(ctx, INF_ETYPE, "input condition: expected a 1-D bool tensor");
    bool has_axis = inf__node_attr(ctx->node, "axis") != NULL;
    int axis = 0;
    if (has_axis && (st = move_axis(ctx, "attribute axis", inf__attr_int(ctx->node, "axis", 0),
                                    x->ndim, &axis)) != INF_OK)
        return st;
    int64_t dim = has_axis ? x->dims[axis] : inf_tensor_numel(x);
    const uint8_t *cv = cond->data;
    int64_t count = 0;
    for (int64_t i = 0; i < cond->dims[0]; i++) {
        if (!cv[i]) continue;
        if (i >= dim)
            return inf__kernel_error(ctx, INF_ERANGE,
                                     "input condition: element %lld is true but the axis has %lld "
                                     "elements",
                                     (long long)i, (long long)dim);
        count++;
    }
    int64_t dims[INF_MAX_DIMS];
    int r = has_axis ? x->ndim : 1;
    if (has_axis) memcpy(dims, x->dims, sizeof(int64_t) * x->ndim);
    dims[has_axis ? axis : 0] = count;
    inf_tensor *y;
    if ((st = inf__kernel_output(ctx, 0, x->dtype, r, dims, &y)) != INF_OK) return st;
    int64_t outer = has_axis ? move_prod(x->dims, 0, axis) : 1;
    int64_t inner = has_axis ? move_prod(x->dims, axis + 1, x->ndim) : 1;
    int64_t n_cond = cond->dims[0] < dim ? cond->dims[0] : dim, dst = 0;
    for (int64_t o = 0; o < outer; o++) {
        for (int64_t i = 0; i < n_cond; i++) {
            if (!cv[i]) continue;
            if ((st = move_copy(ctx, y, dst, x, (o * dim + i) * inner, inner)) != INF_OK) return st;
            dst += inner;
        }
    }
    return INF_OK;
}

const inf__op_impl op_nonzero = {NULL, nonzero_run};
const inf__op_impl op_compress = {NULL, compress_run};
