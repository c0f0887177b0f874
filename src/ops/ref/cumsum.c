/*
 * cumsum.c -- CumSum (opsets 11-26) and CumProd (26), one scan.
 *
 *   T: float16/32/64, bfloat16, int32, int64, uint32, uint64 (we take every
 *   integer type).  axis: input 1, one int32 or int64 value (0-D or 1-D),
 *   negative counts from the end.  exclusive=1 sums the elements before each
 *   one (the first gets 0); reverse=1 sums from the end of the axis.
 *
 * CumProd multiplies instead (exclusive: the first gets 1).
 *
 * Floats accumulate in double and are rounded to the element type at each
 * output; integers accumulate in int64 with wrap-around, stored truncated to
 * the type's width.
 */
#include <string.h>

#include "ops/ref/math_util.h"

typedef struct cumsum_params {
    bool exclusive, reverse, product;
} cumsum_params;

static inf_status cumsum_init(inf__node *node, inf__arena *arena, inf_error *err) {
    (void)err;
    cumsum_params *p = inf__op_params(arena, cumsum_params);
    if (!p) return INF_ENOMEM;
    p->exclusive = inf__attr_int(node, "exclusive", 0) != 0;
    p->reverse = inf__attr_int(node, "reverse", 0) != 0;
    p->product = strcmp(node->op_type, "CumProd") == 0;
    node->params = p;
    return INF_OK;
}

static inf_status cumsum_axis(inf__kernel_ctx *ctx, const inf_tensor *x, int *axis) {
    const inf_tensor *a;
    inf_status st = math_input(ctx, 1, "axis", true, &a);
    if (st != INF_OK) return st;
    if ((a->dtype != INF_DTYPE_I32 && a->dtype != INF_DTYPE_I64) || a->ndim > 1 ||
        inf_tensor_numel(a) != 1)
        return inf__kernel_error(ctx, INF_EINVAL, "input axis: expected one int32 or int64 value, got %s with %lld elements",
                                 inf_dtype_name(a->dtype), (long long)inf_tensor_numel(a));
    return inf__normalize_axis(ctx, inf__tensor_get_i64(a, 0), x->ndim, axis);
}

static inf_status cumsum_run(inf__kernel_ctx *ctx) {
    const cumsum_params *p = ctx->node->params;
    const inf_tensor *x;
    inf_status st = math_input(ctx, 0, "x", true, &x);
    if (st != INF_OK) return st;
    if (!math_is_numeric(x->dtype))
        return inf__kernel_error(ctx, INF_ETYPE, "input x: expected a numeric type, got %s",
                                 inf_dtype_name(x->dtype));
    int axis;
    if ((st = cumsum_axis(ctx, x, &axis)) != INF_OK) return st;
    inf_tensor *y;
    if ((st = inf__kernel_output(ctx, 0, x->dtype, x->ndim, x->dims, &y)) != INF_OK) return st;
    int64_t outer, n, inner;
    math_split_axis(x, axis, &outer, &n, &inner);
    bool is_float = inf__dtype_is_float(x->dtype);
    for (int64_t o = 0; o < outer; o++)
        for (int64_t i = 0; i < inner; i++) {
            double fsum = p->product ? 1 : 0;
            uint64_t isum = p->product ? 1 : 0;
            for (int64_t s = 0; s < n; s++) {
                int64_t j = p->reverse ? n - 1 - s : s;
                int64_t at = (o * n + j) * inner + i;
                if (is_float) {
                    double v = inf__tensor_get_f64(x, at);
                    if (!p->exclusive) fsum = p->product ? fsum * v : fsum + v;
                    inf__tensor_set_f64(y, at, fsum);
                    if (p->exclusive) fsum = p->product ? fsum * v : fsum + v;
                } else {
                    uint64_t v = (uint64_t)inf__tensor_get_i64(x, at);
                    if (!p->exclusive) isum = p->product ? isum * v : isum + v;
                    math_set_i64(y, at, (int64_t)isum);
                    if (p->exclusive) isum = p->product ? isum * v : isum + v;
                }
            }
        }
    return INF_OK;
}

const inf__op_impl op_cumsum = {cumsum_init, cumsum_run};
