/*
 * misc_math.c -- small math ops on whole tensors:
 *
 *   Det      opsets 11-17  T: float16/32/64, bfloat16; X [*, M, M] -> [*]
 *            LU factorisation with partial pivoting, in double.
 *   Size     opsets 1-17   any tensor -> int64 scalar (number of elements)
 *   Trilu    opsets 14-17  any tensor type of rank >= 2; k: optional input,
 *            one int64 value (default 0); upper (default 1) keeps the
 *            elements with col - row >= k, lower those with col - row <= k,
 *            the rest become 0 ("" for strings).
 *   EyeLike  opsets 9-17   input 2-D of a numeric or bool type; the output
 *            has its shape and the type of attribute dtype (default: the
 *            input's), with 1 at (i, i + k) and 0 elsewhere.
 */
#include <math.h>
#include <string.h>

#include "ops/ref/math_util.h"

/* ==================== Det ==================== */

/* Determinant of the m x m row-major matrix a (overwritten). */
static double det_lu(double *a, int64_t m) {
    double det = 1;
    for (int64_t c = 0; c < m; c++) {
        int64_t piv = c;
        for (int64_t r = c + 1; r < m; r++)
            if (fabs(a[r * m + c]) > fabs(a[piv * m + c])) piv = r;
        if (a[piv * m + c] == 0) return 0;
        if (piv != c) {
            for (int64_t j = 0; j < m; j++) {
                double t = a[c * m + j];
                a[c * m + j] = a[piv * m + j];
                a[piv * m + j] = t;
            }
            det = -det;
        }
        double d = a[c * m + c];
        det *= d;
        for (int64_t r = c + 1; r < m; r++) {
            double f = a[r * m + c] / d;
            if (f == 0) continue;
            for (int64_t j = c + 1; j < m; j++) a[r * m + j] -= f * a[c * m + j];
        }
    }
    return det;
}

static inf_status det_run(inf__kernel_ctx *ctx) {
    const inf_tensor *x;
    inf_status st = math_input(ctx, 0, "X", true, &x);
    if (st != INF_OK) return st;
    if (!inf__dtype_is_float(x->dtype))
        return inf__kernel_error(ctx, INF_ETYPE, "input X: expected a float type, got %s",
                                 inf_dtype_name(x->dtype));
    char s[96];
    if (x->ndim < 2 || x->dims[x->ndim - 1] != x->dims[x->ndim - 2])
        return inf__kernel_error(ctx, INF_ESHAPE, "input X: expected [*, M, M], got %s",
                                 inf__shape_str(x->ndim, x->dims, s, sizeof s));
    inf_tensor *y;
    if ((st = inf__kernel_output(ctx, 0, x->dtype, x->ndim - 2, x->dims, &y)) != INF_OK) return st;
    int64_t m = x->dims[x->ndim - 1], mm = m * m, batch = inf_tensor_numel(y);
    double *a = inf__kernel_scratch(ctx, (size_t)(mm ? mm : 1) * sizeof(double));
    if (!a) return INF_ENOMEM;
    for (int64_t b = 0; b < batch; b++) {
        for (int64_t i = 0; i < mm; i++) a[i] = inf__tensor_get_f64(x, b * mm + i);
        inf__tensor_set_f64(y, b, det_lu(a, m));
    }
    return INF_OK;
}

const inf__op_impl op_det = {NULL, det_run};

/* ==================== Size ==================== */

static inf_status size_run(inf__kernel_ctx *ctx) {
    const inf_tensor *x;
    inf_status st = math_input(ctx, 0, "data", true, &x);
    if (st != INF_OK) return st;
    inf_tensor *y;
    if ((st = inf__kernel_output(ctx, 0, INF_DTYPE_I64, 0, NULL, &y)) != INF_OK) return st;
    *(int64_t *)y->data = inf_tensor_numel(x);
    return INF_OK;
}

const inf__op_impl op_size = {NULL, size_run};

/* ==================== Trilu ==================== */

typedef struct trilu_params {
    bool upper;
} trilu_params;

static inf_status trilu_init(inf__node *node, inf__arena *arena, inf_error *err) {
    (void)err;
    trilu_params *p = inf__op_params(arena, trilu_params);
    if (!p) return INF_ENOMEM;
    p->upper = inf__attr_int(node, "upper", 1) != 0;
    node->params = p;
    return INF_OK;
}

static inf_status trilu_run(inf__kernel_ctx *ctx) {
    const trilu_params *p = ctx->node->params;
    const inf_tensor *x, *kt;
    inf_status st = math_input(ctx, 0, "input", true, &x);
    if (st == INF_OK) st = math_input(ctx, 1, "k", false, &kt);
    if (st != INF_OK) return st;
    size_t es = inf_dtype_size(x->dtype);
    char s[96];
    if (es == 0)
        return inf__kernel_error(ctx, INF_ETYPE, "input: unsupported type %s", inf_dtype_name(x->dtype));
    if (x->ndim < 2)
        return inf__kernel_error(ctx, INF_ESHAPE, "input: expected rank >= 2, got %s",
                                 inf__shape_str(x->ndim, x->dims, s, sizeof s));
    int64_t k = 0;
    if (kt) {
        if (kt->dtype != INF_DTYPE_I64 || kt->ndim > 1 || inf_tensor_numel(kt) != 1)
            return inf__kernel_error(ctx, INF_EINVAL, "input k: expected one int64 value, got %s with %lld elements",
                                     inf_dtype_name(kt->dtype), (long long)inf_tensor_numel(kt));
        k = *(const int64_t *)kt->data;
    }
    inf_tensor *y;
    if ((st = inf__kernel_output(ctx, 0, x->dtype, x->ndim, x->dims, &y)) != INF_OK) return st;
    int64_t rows = x->dims[x->ndim - 2], cols = x->dims[x->ndim - 1];
    int64_t n = inf_tensor_numel(x), mat = rows * cols;
    bool strings = x->dtype == INF_DTYPE_STRING;
    if (!strings) memset(y->data, 0, (size_t)n * es);
    for (int64_t at = 0; at < n; at++) {
        int64_t r = (at % mat) / cols, c = at % cols;
        bool keep = p->upper ? c - r >= k : c - r <= k;
        if (!keep) continue;
        if (strings) {
            const char *v = ((char *const *)x->data)[at];
            if (!v) v = "";
            if ((st = inf_tensor_set_string(y, at, v, strlen(v))) != INF_OK)
                return inf__kernel_error(ctx, st, "out of memory copying string element %lld",
                                         (long long)at);
        } else {
            memcpy((char *)y->data + (size_t)at * es, (const char *)x->data + (size_t)at * es, es);
        }
    }
    return INF_OK;
}

const inf__op_impl op_trilu = {trilu_init, trilu_run};

/* ==================== EyeLike ==================== */

typedef struct eyelike_params {
    inf_dtype dtype; /* UNDEFINED: the input's */
    int64_t k;
} eyelike_params;

static bool eyelike_dtype_ok(inf_dtype t) { return math_is_numeric(t) || t == INF_DTYPE_BOOL; }

static inf_status eyelike_init(inf__node *node, inf__arena *arena, inf_error *err) {
    eyelike_params *p = inf__op_params(arena, eyelike_params);
    if (!p) return INF_ENOMEM;
    p->k = inf__attr_int(node, "k", 0);
    int64_t dt = inf__attr_int(node, "dtype", 0);
    p->dtype = dt > 0 && dt < INF_DTYPE_COUNT ? (inf_dtype)dt : INF_DTYPE_UNDEFINED;
    if (inf__node_attr(node, "dtype") && !eyelike_dtype_ok(p->dtype))
        return inf__node_error(node, err, INF_EMODEL,
                               "attribute dtype %lld is not a numeric or bool type", (long long)dt);
    node->params = p;
    return INF_OK;
}

static inf_status eyelike_run(inf__kernel_ctx *ctx) {
    const eyelike_params *p = ctx->node->params;
    const inf_tensor *x;
    inf_status st = math_input(ctx, 0, "input", true, &x);
    if (st != INF_OK) return st;
    inf_dtype dt = p->dtype != INF_DTYPE_UNDEFINED ? p->dtype : x->dtype;
    if (!eyelike_dtype_ok(dt))
        return inf__kernel_error(ctx, INF_ETYPE, "input: expected a numeric or bool type, got %s",
                                 inf_dtype_name(dt));
    char s[96];
    if (x->ndim != 2)
        return inf__kernel_error(ctx, INF_ESHAPE, "input: expected a 2-D tensor, got %s",
                                 inf__shape_str(x->ndim, x->dims, s, sizeof s));
    inf_tensor *y;
    if ((st = inf__kernel_output(ctx, 0, dt, 2, x->dims, &y)) != INF_OK) return st;
    int64_t rows = x->dims[0], cols = x->dims[1];
    memset(y->data, 0, (size_t)(rows * cols) * inf_dtype_size(dt));
    /* the diagonal misses the matrix (so r + k below cannot overflow) */
    if (p->k <= -rows || p->k >= cols) return INF_OK;
    for (int64_t r = 0; r < rows; r++) {
        int64_t c = r + p->k;
        if (c >= 0 && c < cols) inf__tensor_set_f64(y, r * cols + c, 1.0);
    }
    return INF_OK;
}

const inf__op_impl op_eyelike = {eyelike_init, eyelike_run};
