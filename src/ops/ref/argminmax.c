/*
 * argminmax.c -- ops that rank elements along an axis:
 *
 *   ArgMax, ArgMin  opsets 1-17  T: float and integer types -> int64
 *                   axis (default 0; negative from opset 11), keepdims
 *                   (default 1), select_last_index (opset 12+, default 0).
 *   Hardmax         opsets 1-17  T: float types
 *                   opsets 1-12: the input is read as 2-D [prod(dims[:axis]),
 *                   prod(dims[axis:])] (axis default 1) and each row gets a
 *                   one-hot of its maximum; 13+: along `axis` (default -1).
 *   TopK            opsets 1-17  T: float and integer types; indices int64
 *                   opsets 1-9: k is an attribute; 10+: input K (one int64).
 *                   axis default -1; largest/sorted (opset 11+) default 1.
 *
 * Order: NaN ranks above every number (numpy's sort order), so ArgMax and
 * Hardmax pick a NaN, ArgMin avoids it.  Ties go to the lowest index
 * (ArgMax/ArgMin: the highest with select_last_index), and TopK orders equal
 * values by increasing index, as the spec asks.  TopK always returns its
 * values sorted (sorted=0 allows any order).
 *
 * TopK sorts the indices of each slice with a stable merge sort (scratch:
 * two int64 arrays of the axis length), then keeps the first k.
 */
#include <string.h>

#include "ops/ref/math_util.h"

/* ==================== ArgMax / ArgMin ==================== */

typedef struct arg_params {
    bool is_max;
    bool keepdims;
    bool last;
    int64_t axis;
} arg_params;

static inf_status arg_init(inf__node *node, inf__arena *arena, inf_error *err) {
    (void)err;
    arg_params *p = inf__op_params(arena, arg_params);
    if (!p) return INF_ENOMEM;
    p->is_max = strcmp(node->op_type, "ArgMax") == 0;
    p->axis = inf__attr_int(node, "axis", 0);
    p->keepdims = inf__attr_int(node, "keepdims", 1) != 0;
    p->last = inf__attr_int(node, "select_last_index", 0) != 0;
    node->params = p;
    return INF_OK;
}

/* Index (0..n-1) of the extreme of the n elements at base + i * stride. */
static int64_t arg_extreme(const inf_tensor *x, int64_t base, int64_t stride, int64_t n,
                           bool is_max, bool last) {
    int64_t best = 0;
    for (int64_t i = 1; i < n; i++) {
        int c = math_cmp(x, base + i * stride, base + best * stride);
        if (!is_max) c = -c;
        if (c > 0 || (c == 0 && last)) best = i;
    }
    return best;
}

static inf_status arg_run(inf__kernel_ctx *ctx) {
    const arg_params *p = ctx->node->params;
    const inf_tensor *x;
    inf_status st = math_input(ctx, 0, "data", true, &x);
    if (st != INF_OK) return st;
    if (!math_is_numeric(x->dtype))
        return inf__kernel_error(ctx, INF_ETYPE, "input data: expected a numeric type, got %s",
                                 inf_dtype_name(x->dtype));
    int axis;
    st = inf__normalize_axis(ctx, p->axis, x->ndim, &axis);
    if (st != INF_OK) return st;
    if (x->dims[axis] == 0)
        return inf__kernel_error(ctx, INF_ESHAPE, "input data: dimension %d (the axis) is 0", axis);
    int64_t dims[INF_MAX_DIMS];
    int nd = 0;
    for (int k = 0; k < x->ndim; k++) {
        if (k != axis) dims[nd++] = x->dims[k];
        else if (p->keepdims) dims[nd++] = 1;
    }
    inf_tensor *y;
    st = inf__kernel_output(ctx, 0, INF_DTYPE_I64, nd, dims, &y);
    if (st != INF_OK) return st;
    int64_t outer, n, inner;
    math_split_axis(x, axis, &outer, &n, &inner);
    int64_t *out = y->data;
    for (int64_t o = 0; o < outer; o++)
        for (int64_t i = 0; i < inner; i++)
            out[o * inner + i] = arg_extreme(x, o * n * inner + i, inner, n, p->is_max, p->last);
    return INF_OK;
}

const inf__op_impl op_argminmax = {arg_init, arg_run};

/* ==================== Hardmax ==================== */

typedef struct hardmax_params {
    int64_t axis;
} hardmax_params;

static inf_status hardmax_init(inf__node *node, inf__arena *arena, inf_error *err) {
    (void)err;
    hardmax_params *p = inf__op_params(arena, hardmax_params);
    if (!p) return INF_ENOMEM;
    p->axis = inf__attr_int(node, "axis", node->opset < 13 ? 1 : -1);
    node->params = p;
    return INF_OK;
}

static inf_status hardmax_run(inf__kernel_ctx *ctx) {
    const hardmax_params *p = ctx->node->params;
    const inf_tensor *x;
    inf_status st = math_input(ctx, 0, "input", true, &x);
    if (st != INF_OK) return st;
    if (!inf__dtype_is_float(x->dtype))
        return inf__kernel_error(ctx, INF_ETYPE, "input: expected a float type, got %s",
                                 inf_dtype_name(x->dtype));
    bool coerce_2d = ctx->node->opset < 13;
    int axis;
    /* opsets 1-12 accept axis == rank (the whole tensor is one column) */
    if (coerce_2d && p->axis == x->ndim) axis = x->ndim;
    else if ((st = inf__normalize_axis(ctx, p->axis, x->ndim, &axis)) != INF_OK) return st;
    inf_tensor *y;
    st = inf__kernel_output(ctx, 0, x->dtype, x->ndim, x->dims, &y);
    if (st != INF_OK) return st;
    int64_t total = inf_tensor_numel(x);
    memset(y->data, 0, (size_t)total * inf_dtype_size(x->dtype));
    if (total == 0) return INF_OK;
    int64_t outer = 1, n = 1, inner = 1;
    if (coerce_2d) {
        for (int k = 0; k < axis; k++) outer *= x->dims[k];
        n = outer ? total / outer : 0;
    } else {
        math_split_axis(x, axis, &outer, &n, &inner);
    }
    for (int64_t o = 0; o < outer; o++)
        for (int64_t i = 0; i < inner; i++) {
            int64_t base = o * n * inner + i;
            int64_t best = arg_extreme(x, base, inner, n, true, false);
            inf__tensor_set_f64(y, base + best * inner, 1.0);
        }
    return INF_OK;
}

const inf__op_impl op_hardmax = {hardmax_init, hardmax_run};

/* ==================== TopK ==================== */

typedef struct topk_params {
    int64_t axis;
    int64_t k; /* opsets 1-9 */
    bool largest;
} topk_params;

static inf_status topk_init(inf__node *node, inf__arena *arena, inf_error *err) {
    topk_params *p = inf__op_params(arena, topk_params);
    if (!p) return INF_ENOMEM;
    p->axis = inf__attr_int(node, "axis", -1);
    p->largest = inf__attr_int(node, "largest", 1) != 0;
    if (node->opset < 10) {
        p->k = inf__attr_int(node, "k", -1);
        if (p->k < 0)
            return inf__node_error(node, err, INF_EMODEL, "attribute k is required and must be >= 0");
    }
    node->params = p;
    return INF_OK;
}

/* Stable merge sort of idx[0..n) (positions along the axis) by the values
 * at base + idx * stride, descending when `largest`.  tmp has n entries. */
static void topk_sort(const inf_tensor *x, int64_t base, int64_t stride, bool largest,
                      int64_t *idx, int64_t *tmp, int64_t n) {
    int64_t *src = idx, *dst = tmp;
    for (int64_t width = 1; width < n; width *= 2) {
        for (int64_t lo = 0; lo < n; lo += 2 * width) {
            int64_t mid = lo + width < n ? lo + width : n;
            int64_t hi = lo + 2 * width < n ? lo + 2 * width : n;
            int64_t i = lo, j = mid, o = lo;
            while (i < mid && j < hi) {
                int c = math_cmp(x, base + src[j] * stride, base + src[i] * stride);
                if (largest) c = -c;
                dst[o++] = c < 0 ? src[j++] : src[i++]; /* equal: the left run first */
            }
            while (i < mid) dst[o++] = src[i++];
            while (j < hi) dst[o++] = src[j++];
        }
        int64_t *t = src;
        src = dst;
        dst = t;
    }
    if (src != idx) memcpy(idx, src, (size_t)n * sizeof *idx);
}

static inf_status topk_get_k(inf__kernel_ctx *ctx, const topk_params *p, int64_t *k) {
    if (ctx->node->opset < 10) {
        *k = p->k;
        return INF_OK;
    }
    const inf_tensor *kt;
    inf_status st = math_input(ctx, 1, "K", true, &kt);
    if (st != INF_OK) return st;
    if (kt->dtype != INF_DTYPE_I64 || inf_tensor_numel(kt) != 1 || kt->ndim > 1)
        return inf__kernel_error(ctx, INF_EINVAL, "input K: expected one int64 value, got %s with %lld elements",
                                 inf_dtype_name(kt->dtype), (long long)inf_tensor_numel(kt));
    *k = ((const int64_t *)kt->data)[0];
    return INF_OK;
}

static inf_status topk_run(inf__kernel_ctx *ctx) {
    const topk_params *p = ctx->node->params;
    const inf_tensor *x;
    inf_status st = math_input(ctx, 0, "X", true, &x);
    if (st != INF_OK) return st;
    if (!math_is_numeric(x->dtype))
        return inf__kernel_error(ctx, INF_ETYPE, "input X: expected a numeric type, got %s",
                                 inf_dtype_name(x->dtype));
    int axis = 0;
    int64_t k = 0;
    if ((st = inf__normalize_axis(ctx, p->axis, x->ndim, &axis)) != INF_OK) return st;
    if ((st = topk_get_k(ctx, p, &k)) != INF_OK) return st;
    if (k < 0 || k > x->dims[axis])
        return inf__kernel_error(ctx, INF_ERANGE, "k = %lld is out of range [0, %lld] (dimension %d of X)",
                                 (long long)k, (long long)x->dims[axis], axis);
    int64_t dims[INF_MAX_DIMS];
    memcpy(dims, x->dims, sizeof dims);
    dims[axis] = k;
    inf_tensor *values, *indices;
    if ((st = inf__kernel_output(ctx, 0, x->dtype, x->ndim, dims, &values)) != INF_OK) return st;
    if (ctx->n_out > 1 &&
        (st = inf__kernel_output(ctx, 1, INF_DTYPE_I64, x->ndim, dims, &indices)) != INF_OK)
        return st;
    int64_t outer, n, inner;
    math_split_axis(x, axis, &outer, &n, &inner);
    if (k == 0 || outer * inner == 0) return INF_OK;
    int64_t *idx = inf__kernel_scratch(ctx, 2 * (size_t)n * sizeof(int64_t));
    if (!idx) return INF_ENOMEM;
    size_t es = inf_dtype_size(x->dtype);
    for (int64_t o = 0; o < outer; o++)
        for (int64_t i = 0; i < inner; i++) {
            int64_t base = o * n * inner + i, obase = o * k * inner + i;
            for (int64_t j = 0; j < n; j++) idx[j] = j;
            topk_sort(x, base, inner, p->largest, idx, idx + n, n);
            for (int64_t j = 0; j < k; j++) {
                int64_t to = obase + j * inner, from = base + idx[j] * inner;
                memcpy((char *)values->data + (size_t)to * es,
                       (const char *)x->data + (size_t)from * es, es);
                if (ctx->n_out > 1) ((int64_t *)indices->data)[to] = idx[j];
            }
        }
    return INF_OK;
}

const inf__op_impl op_topk = {topk_init, topk_run};
