/*
 * binary_more.c -- element-wise ops of two inputs that binary.c does not
 * cover, with numpy broadcasting:
 *
 *   Mod       opsets 10-17  T: float16/32/64, bfloat16, int8..int64, uint8..uint64
 *             fmod=0: the result takes the sign of the divisor (numpy.mod),
 *             also for float types (the spec requires fmod=1 there; we
 *             accept both).  fmod=1: the sign of the dividend (C fmod and
 *             truncating %).  Integer division by zero is INF_ERANGE.
 *   BitShift  opsets 11-17  T: uint8..uint64; direction "LEFT" or "RIGHT"
 *             (required).  A shift by the type's width or more gives 0.
 *   PRelu     opsets 1-17   T: float types, int8..int64, uint8..uint64
 *             y = x < 0 ? slope * x : x.  Opsets 7+: slope broadcasts to
 *             X's shape (unidirectional).  Opsets 1-6: a 1-D slope whose
 *             length is X's dimension 1 (and is not 1) applies per channel,
 *             the form PyTorch exported; otherwise it broadcasts as in 7+.
 *
 * Values are read and written through the dtype (double for float types,
 * int64 for integers), the output walked in order with bcast_iter.
 */
#include <math.h>
#include <string.h>

#include "ops/ref/math_util.h"

/* Checks two inputs of the same numeric type; *y_ndim / y_dims receive the
 * broadcast shape. */
static inf_status pair_check(inf__kernel_ctx *ctx, const char *na, const char *nb,
                             const inf_tensor **a, const inf_tensor **b, int *y_ndim,
                             int64_t *y_dims) {
    inf_status st = math_input(ctx, 0, na, true, a);
    if (st == INF_OK) st = math_input(ctx, 1, nb, true, b);
    if (st != INF_OK) return st;
    if (!math_is_numeric((*a)->dtype))
        return inf__kernel_error(ctx, INF_ETYPE, "input %s: expected a numeric type, got %s", na,
                                 inf_dtype_name((*a)->dtype));
    if ((*b)->dtype != (*a)->dtype)
        return inf__kernel_error(ctx, INF_ETYPE, "input %s: expected %s (the type of %s), got %s",
                                 nb, inf_dtype_name((*a)->dtype), na, inf_dtype_name((*b)->dtype));
    if (inf__broadcast_shape((*a)->ndim, (*a)->dims, (*b)->ndim, (*b)->dims, y_ndim, y_dims) !=
        INF_OK) {
        char s1[96], s2[96];
        return inf__kernel_error(ctx, INF_ESHAPE, "inputs %s %s and %s %s cannot be broadcast together",
                                 na, inf__shape_str((*a)->ndim, (*a)->dims, s1, sizeof s1), nb,
                                 inf__shape_str((*b)->ndim, (*b)->dims, s2, sizeof s2));
    }
    return INF_OK;
}

/* ==================== Mod ==================== */

typedef struct mod_params {
    bool fmod;
} mod_params;

static inf_status mod_init(inf__node *node, inf__arena *arena, inf_error *err) {
    mod_params *p = inf__op_params(arena, mod_params);
    if (!p) return INF_ENOMEM;
    int64_t f = inf__attr_int(node, "fmod", 0);
    if (f != 0 && f != 1)
        return inf__node_error(node, err, INF_EMODEL, "attribute fmod must be 0 or 1, got %lld",
                               (long long)f);
    p->fmod = f == 1;
    node->params = p;
    return INF_OK;
}

static double mod_f64(bool c_fmod, double a, double b) {
    double r = fmod(a, b);
    if (!c_fmod && r != 0 && (r < 0) != (b < 0)) r += b;
    return r;
}

/* b != 0. */
static int64_t mod_i64(bool c_fmod, bool u, int64_t a, int64_t b) {
    if (u) return (int64_t)((uint64_t)a % (uint64_t)b);
    if (b == -1) return 0; /* also INT64_MIN % -1, which C leaves undefined */
    int64_t r = a % b;
    if (!c_fmod && r != 0 && (r < 0) != (b < 0)) r += b;
    return r;
}

static inf_status mod_run(inf__kernel_ctx *ctx) {
    const mod_params *p = ctx->node->params;
    const inf_tensor *a, *b;
    int nd;
    int64_t dims[INF_MAX_DIMS];
    inf_status st = pair_check(ctx, "A", "B", &a, &b, &nd, dims);
    if (st != INF_OK) return st;
    inf_tensor *y;
    st = inf__kernel_output(ctx, 0, a->dtype, nd, dims, &y);
    if (st != INF_OK) return st;
    int64_t n = inf_tensor_numel(y);
    bcast_iter ia, ib;
    bcast_init(&ia, a->ndim, a->dims, nd, dims);
    bcast_init(&ib, b->ndim, b->dims, nd, dims);
    bool is_float = inf__dtype_is_float(a->dtype), u = math_is_unsigned(a->dtype);
    for (int64_t i = 0; i < n; i++, bcast_next(&ia), bcast_next(&ib)) {
        if (is_float) {
            inf__tensor_set_f64(y, i, mod_f64(p->fmod, inf__tensor_get_f64(a, ia.off),
                                              inf__tensor_get_f64(b, ib.off)));
            continue;
        }
        int64_t d = inf__tensor_get_i64(b, ib.off);
        if (d == 0) return inf__kernel_error(ctx, INF_ERANGE, "input B: integer division by zero");
        math_set_i64(y, i, mod_i64(p->fmod, u, inf__tensor_get_i64(a, ia.off), d));
    }
    return INF_OK;
}

const inf__op_impl op_mod = {mod_init, mod_run};

/* ==================== BitShift ==================== */

typedef struct bitshift_params {
    bool left;
} bitshift_params;

static inf_status bitshift_init(inf__node *node, inf__arena *arena, inf_error *err) {
    bitshift_params *p = inf__op_params(arena, bitshift_params);
    if (!p) return INF_ENOMEM;
    const char *dir = inf__attr_string(node, "direction", NULL);
    if (!dir || (strcmp(dir, "LEFT") != 0 && strcmp(dir, "RIGHT") != 0))
        return inf__node_error(node, err, INF_EMODEL,
                               "attribute direction must be \"LEFT\" or \"RIGHT\", got %s%s%s",
                               dir ? "\"" : "", dir ? dir : "none", dir ? "\"" : "");
    p->left = strcmp(dir, "LEFT") == 0;
    node->params = p;
    return INF_OK;
}

static inf_status bitshift_run(inf__kernel_ctx *ctx) {
    const bitshift_params *p = ctx->node->params;
    const inf_tensor *a, *b;
    int nd;
    int64_t dims[INF_MAX_DIMS];
    inf_status st = pair_check(ctx, "X", "Y", &a, &b, &nd, dims);
    if (st != INF_OK) return st;
    if (!math_is_unsigned(a->dtype))
        return inf__kernel_error(ctx, INF_ETYPE, "input X: expected an unsigned integer type, got %s",
                                 inf_dtype_name(a->dtype));
    inf_tensor *y;
    st = inf__kernel_output(ctx, 0, a->dtype, nd, dims, &y);
    if (st != INF_OK) return st;
    int64_t n = inf_tensor_numel(y);
    uint64_t bits = 8 * inf_dtype_size(a->dtype);
    bcast_iter ia, ib;
    bcast_init(&ia, a->ndim, a->dims, nd, dims);
    bcast_init(&ib, b->ndim, b->dims, nd, dims);
    for (int64_t i = 0; i < n; i++, bcast_next(&ia), bcast_next(&ib)) {
        uint64_t x = (uint64_t)inf__tensor_get_i64(a, ia.off);
        uint64_t s = (uint64_t)inf__tensor_get_i64(b, ib.off);
        uint64_t r = s >= bits ? 0 : p->left ? x << s : x >> s;
        math_set_i64(y, i, (int64_t)r);
    }
    return INF_OK;
}

const inf__op_impl op_bitshift = {bitshift_init, bitshift_run};

/* ==================== PRelu ==================== */

/* Slope's shape as read against X (rank of X); INF_ESHAPE if it does not
 * broadcast to X. */
static inf_status prelu_slope_dims(inf__kernel_ctx *ctx, const inf_tensor *x,
                                   const inf_tensor *s, int64_t *dims) {
    char sx[96], ss[96];
    if (ctx->node->opset < 7 && s->ndim == 1 && s->dims[0] != 1 && x->ndim >= 2 &&
        s->dims[0] == x->dims[1]) {
        for (int k = 0; k < x->ndim; k++) dims[k] = k == 1 ? s->dims[0] : 1;
        return INF_OK;
    }
    int lead = x->ndim - s->ndim;
    bool ok = lead >= 0;
    for (int k = 0; k < x->ndim && ok; k++) {
        dims[k] = k < lead ? 1 : s->dims[k - lead];
        ok = dims[k] == 1 || dims[k] == x->dims[k];
    }
    if (!ok)
        return inf__kernel_error(ctx, INF_ESHAPE, "input slope %s does not broadcast to X %s",
                                 inf__shape_str(s->ndim, s->dims, ss, sizeof ss),
                                 inf__shape_str(x->ndim, x->dims, sx, sizeof sx));
    return INF_OK;
}

static inf_status prelu_run(inf__kernel_ctx *ctx) {
    const inf_tensor *x, *s;
    inf_status st = math_input(ctx, 0, "X", true, &x);
    if (st == INF_OK) st = math_input(ctx, 1, "slope", true, &s);
    if (st != INF_OK) return st;
    if (!math_is_numeric(x->dtype))
        return inf__kernel_error(ctx, INF_ETYPE, "input X: expected a numeric type, got %s",
                                 inf_dtype_name(x->dtype));
    if (s->dtype != x->dtype)
        return inf__kernel_error(ctx, INF_ETYPE, "input slope: expected %s (the type of X), got %s",
                                 inf_dtype_name(x->dtype), inf_dtype_name(s->dtype));
    int64_t sdims[INF_MAX_DIMS];
    st = prelu_slope_dims(ctx, x, s, sdims);
    if (st != INF_OK) return st;
    inf_tensor *y;
    st = inf__kernel_output(ctx, 0, x->dtype, x->ndim, x->dims, &y);
    if (st != INF_OK) return st;
    int64_t n = inf_tensor_numel(x);
    bcast_iter is;
    bcast_init(&is, x->ndim, sdims, x->ndim, x->dims);
    if (x->dtype == INF_DTYPE_F32) {
        const float *a = x->data, *b = s->data;
        float *c = y->data;
        for (int64_t i = 0; i < n; i++, bcast_next(&is)) c[i] = a[i] < 0 ? a[i] * b[is.off] : a[i];
    } else if (inf__dtype_is_float(x->dtype)) {
        for (int64_t i = 0; i < n; i++, bcast_next(&is)) {
            double v = inf__tensor_get_f64(x, i);
            inf__tensor_set_f64(y, i, v < 0 ? v * inf__tensor_get_f64(s, is.off) : v);
        }
    } else {
        bool u = math_is_unsigned(x->dtype);
        for (int64_t i = 0; i < n; i++, bcast_next(&is)) {
            int64_t v = inf__tensor_get_i64(x, i);
            if (!u && v < 0)
                v = (int64_t)((uint64_t)v * (uint64_t)inf__tensor_get_i64(s, is.off));
            math_set_i64(y, i, v);
        }
    }
    return INF_OK;
}

const inf__op_impl op_prelu = {NULL, prelu_run};
