/*
 * variadic.c -- element-wise ops over one or more inputs with numpy
 * (multidirectional) broadcasting:
 *
 *   Max, Min     opsets 1-17   T: float16/32/64, bfloat16, int8..int64, uint8..uint64
 *   Sum, Mean    opsets 1-17   T: float16/32/64, bfloat16
 *
 * Opsets 1-7 required equal shapes; we broadcast there too (a superset).
 * The legacy attribute consumed_inputs (opsets 1-5) is ignored; older
 * opsets' narrower type lists are widened to the newest one.
 *
 * Design: the output starts as input 0 broadcast to the output shape, then
 * each further input is folded into it element by element (read through
 * bcast_iter).  Float types fold in double and round to the element type at
 * every step, which for float32 gives exactly numpy's pairwise float32
 * result; Mean divides the sum once at the end.  Integers fold in int64
 * (uint64 compared as unsigned).  Max and Min propagate NaN like numpy's
 * maximum/minimum.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "ops/ref/math_util.h"

typedef enum varop { VAR_MAX, VAR_MIN, VAR_SUM, VAR_MEAN } varop;

typedef struct var_params {
    varop op;
} var_params;

static inf_status var_init(inf__node *node, inf__arena *arena, inf_error *err) {
    var_params *p = inf__op_params(arena, var_params);
    if (!p) return INF_ENOMEM;
    const char *t = node->op_type;
    if (strcmp(t, "Max") == 0) p->op = VAR_MAX;
    else if (strcmp(t, "Min") == 0) p->op = VAR_MIN;
    else if (strcmp(t, "Sum") == 0) p->op = VAR_SUM;
    else if (strcmp(t, "Mean") == 0) p->op = VAR_MEAN;
    else
        return inf__node_error(node, err, INF_EINTERNAL, "op_variadic does not implement %s", t);
    node->params = p;
    return INF_OK;
}

static double fold_f64(varop op, double acc, double v) {
    if (op == VAR_SUM || op == VAR_MEAN) return acc + v;
    if (isnan(acc) || isnan(v)) return isnan(acc) ? acc : v;
    if (op == VAR_MAX) return v > acc ? v : acc;
    return v < acc ? v : acc;
}

static int64_t fold_i64(varop op, bool u, int64_t acc, int64_t v) {
    if (op == VAR_SUM || op == VAR_MEAN) return (int64_t)((uint64_t)acc + (uint64_t)v);
    bool greater = u ? (uint64_t)v > (uint64_t)acc : v > acc;
    if (op == VAR_MAX) return greater ? v : acc;
    bool less = u ? (uint64_t)v < (uint64_t)acc : v < acc;
    return less ? v : acc;
}

/* y = x broadcast to y's shape (same dtype). */
static void var_copy(const inf_tensor *x, inf_tensor *y, int64_t n) {
    size_t es = inf_dtype_size(x->dtype);
    if (inf_tensor_numel(x) == n) {
        memcpy(y->data, x->data, (size_t)n * es);
        return;
    }
    bcast_iter it;
    bcast_init(&it, x->ndim, x->dims, y->ndim, y->dims);
    for (int64_t i = 0; i < n; i++, bcast_next(&it))
        memcpy((char *)y->data + (size_t)i * es, (const char *)x->data + (size_t)it.off * es, es);
}

/* y = fold(y, x) with x broadcast to y's shape. */
static void var_fold(varop op, const inf_tensor *x, inf_tensor *y, int64_t n) {
    bcast_iter it;
    bcast_init(&it, x->ndim, x->dims, y->ndim, y->dims);
    if (x->dtype == INF_DTYPE_F32) {
        const float *a = x->data;
        float *b = y->data;
        for (int64_t i = 0; i < n; i++, bcast_next(&it))
            b[i] = (float)fold_f64(op, b[i], a[it.off]);
    } else if (inf__dtype_is_float(x->dtype)) {
        for (int64_t i = 0; i < n; i++, bcast_next(&it))
            inf__tensor_set_f64(y, i, fold_f64(op, inf__tensor_get_f64(y, i),
                                               inf__tensor_get_f64(x, it.off)));
    } else {
        bool u = math_is_unsigned(x->dtype);
        for (int64_t i = 0; i < n; i++, bcast_next(&it))
            math_set_i64(y, i, fold_i64(op, u, inf__tensor_get_i64(y, i),
                                        inf__tensor_get_i64(x, it.off)));
    }
}

static inf_status var_check(inf__kernel_ctx *ctx, varop op, int *ndim, int64_t *dims) {
    if (ctx->n_in < 1 || !ctx->in[0])
        return inf__kernel_error(ctx, INF_EINVAL, "expected at least one input");
    *ndim = 0;
    inf_dtype t0 = ctx->in[0]->dtype;
    for (int j = 0; j < ctx->n_in; j++) {
        const inf_tensor *x;
        char name[32];
        snprintf(name, sizeof name, "data_%d", j);
        inf_status st = math_input(ctx, j, name, true, &x);
        if (st != INF_OK) return st;
        bool ok = op == VAR_MAX || op == VAR_MIN ? math_is_numeric(x->dtype)
                                                  : inf__dtype_is_float(x->dtype);
        if (!ok)
            return inf__kernel_error(ctx, INF_ETYPE, "input %s: expected a %s type, got %s", name,
                                     op == VAR_MAX || op == VAR_MIN ? "numeric" : "float",
                                     inf_dtype_name(x->dtype));
        if (x->dtype != t0)
            return inf__kernel_error(ctx, INF_ETYPE, "input %s: expected %s (the type of data_0), got %s",
                                     name, inf_dtype_name(t0), inf_dtype_name(x->dtype));
        int64_t prev[INF_MAX_DIMS];
        int nprev = *ndim;
        memcpy(prev, dims, sizeof prev);
        if (inf__broadcast_shape(nprev, prev, x->ndim, x->dims, ndim, dims) != INF_OK) {
            char s1[96], s2[96];
            return inf__kernel_error(ctx, INF_ESHAPE, "input %s %s cannot be broadcast with shape %s",
                                     name, inf__shape_str(x->ndim, x->dims, s1, sizeof s1),
                                     inf__shape_str(nprev, prev, s2, sizeof s2));
        }
    }
    return INF_OK;
}

static inf_status var_run(inf__kernel_ctx *ctx) {
    const var_params *p = ctx->node->params;
    int ndim;
    int64_t dims[INF_MAX_DIMS] = {0};
    inf_status st = var_check(ctx, p->op, &ndim, dims);
    if (st != INF_OK) return st;
    inf_tensor *y;
    st = inf__kernel_output(ctx, 0, ctx->in[0]->dtype, ndim, dims, &y);
    if (st != INF_OK) return st;
    int64_t n = inf_tensor_numel(y);
    if (n == 0) return INF_OK;
    var_copy(ctx->in[0], y, n);
    for (int j = 1; j < ctx->n_in; j++) var_fold(p->op, ctx->in[j], y, n);
    if (p->op == VAR_MEAN && ctx->n_in > 1) {
        double k = ctx->n_in;
        for (int64_t i = 0; i < n; i++) inf__tensor_set_f64(y, i, inf__tensor_get_f64(y, i) / k);
    }
    return INF_OK;
}

const inf__op_impl op_variadic = {var_init, var_run};
