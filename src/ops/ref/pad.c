/*
 * pad.c -- ONNX Pad, opsets 1-26, every dtype (strings too).
 *
 *   opset 1      attributes paddings, mode, value (float);
 *   opsets 2-10  attributes pads, mode, value (float);
 *   opsets 11-17 inputs pads (int64, 2*rank values: all begins, then all
 *                ends) and constant_value (optional scalar of the data
 *                type; absent or empty means 0, or "" for strings).
 *   opsets 18-26 add the optional `axes` input (4th; also accepted
 *   earlier): pads then has 2*len(axes) values for those axes.
 *
 * Modes: constant, reflect (mirror without repeating the edge; pads wider
 * than the axis keep reflecting, as numpy does), edge (repeat the border),
 * wrap (opset 19+: the axis repeats periodically, numpy's wrap; with a
 * negative pad the period is the part kept).
 * Negative pads crop.  reflect and edge need a non-empty axis to pad.
 *
 * Each output row (the last axis) is built from the source row of its outer
 * coordinates: the part inside the input moves with one copy, the padding
 * element by element.  When every pad is zero the output shares the input's
 * buffer (PyTorch exports AvgPool2d as such a Pad before the pool).
 *
 * Deviations: none known.
 */
#include "ops/ref/data_move.h"

typedef enum pad_mode { PAD_CONSTANT, PAD_REFLECT, PAD_EDGE, PAD_WRAP } pad_mode;

static const char *const k_pad_mode_names[] = {"constant", "reflect", "edge", "wrap"};

typedef struct pad_spec {
    pad_mode mode;
    int64_t begin[INF_MAX_DIMS], end[INF_MAX_DIMS];
    inf_tensor value;      /* one element of the output dtype */
    uint64_t value_buf[2]; /* storage of `value` when it comes from an attribute */
} pad_spec;

static inf_status pad_parse_mode(inf__kernel_ctx *ctx, pad_mode *out) {
    const char *m = inf__attr_string(ctx->node, "mode", "constant");
    if (!strcmp(m, "constant"))
        *out = PAD_CONSTANT;
    else if (!strcmp(m, "reflect"))
        *out = PAD_REFLECT;
    else if (!strcmp(m, "edge"))
        *out = PAD_EDGE;
    else if (!strcmp(m, "wrap") && ctx->node->opset >= 19)
        *out = PAD_WRAP;
    else
        return inf__kernel_error(ctx, INF_EINVAL, "attribute mode: expected constant, reflect, edge%s, got '%s'",
                                 ctx->node->opset >= 19 ? " or wrap" : " (wrap from opset 19)", m);
    return INF_OK;
}

/* Opsets 1-10: pads and value from attributes. */
static inf_status pad_from_attrs(inf__kernel_ctx *ctx, const inf_tensor *x, pad_spec *p) {
    const char *name = ctx->node->opset < 2 ? "paddings" : "pads";
    int n;
    const int64_t *pads = inf__attr_ints(ctx->node, name, &n);
    if (!pads && x->ndim > 0)
        return inf__kernel_error(ctx, INF_EINVAL, "attribute %s is required", name);
    if (n != 2 * x->ndim)
        return inf__kernel_error(ctx, INF_ESHAPE, "attribute %s has %d values, expected %d", name,
                                 n, 2 * x->ndim);
    for (int a = 0; a < x->ndim; a++) {
        p->begin[a] = pads[a];
        p->end[a] = pads[x->ndim + a];
    }
    int64_t one = 1;
    inf_tensor_init_view(&p->value, x->dtype, 0, &one, p->value_buf);
    memset(p->value_buf, 0, sizeof p->value_buf);
    inf__tensor_set_f64(&p->value, 0, inf__attr_float(ctx->node, "value", 0.0f));
    return INF_OK;
}

/* Opsets 11-17: pads, constant_value and (opset 18 style) axes inputs. */
static inf_status pad_from_inputs(inf__kernel_ctx *ctx, const inf_tensor *x, pad_spec *p) {
    const inf_tensor *pt, *vt, *at;
    inf_status st;
    if ((st = move_input(ctx, 1, "pads", true, &pt)) != INF_OK ||
        (st = move_input(ctx, 2, "constant_value", false, &vt)) != INF_OK ||
        (st = move_input(ctx, 3, "axes", false, &at)) != INF_OK)
        return st;
    int64_t axes_v[INF_MAX_DIMS], pads[2 * INF_MAX_DIMS];
    int n_axes = x->ndim, n_pads;
    for (int a = 0; a < x->ndim; a++) axes_v[a] = a;
    if (at && (st = move_read_ints(ctx, at, "axes", true, INF_MAX_DIMS, axes_v, &n_axes)) != INF_OK)
        return st;
    if ((st = move_read_ints(ctx, pt, "pads", false, 2 * INF_MAX_DIMS, pads, &n_pads)) != INF_OK)
        return st;
    if (n_pads != 2 * n_axes)
        return inf__kernel_error(ctx, INF_ESHAPE, "input pads has %d values, expected %d", n_pads,
                                 2 * n_axes);
    for (int k = 0; k < n_axes; k++) {
        int a = 0;
        if ((st = move_axis(ctx, "input axes", axes_v[k], x->ndim, &a)) != INF_OK) return st;
        p->begin[a] = pads[k];
        p->end[a] = pads[n_axes + k];
    }
    int64_t one = 1;
    inf_tensor_init_view(&p->value, x->dtype, 0, &one, p->value_buf);
    memset(p->value_buf, 0, sizeof p->value_buf);
    if (vt && inf_tensor_numel(vt) > 0) {
        if (vt->dtype != x->dtype)
            return inf__kernel_error(ctx, INF_ETYPE, "input constant_value is %s, expected %s",
                                     inf_dtype_name(vt->dtype), inf_dtype_name(x->dtype));
        p->value = *vt;
    }
    return INF_OK;
}

/* The largest axis a Pad may produce: numel and byte counts of any tensor
 * stay far from int64 overflow. */
#define INF_PAD_MAX_DIM ((int64_t)1 << 40)

/* Source index along an axis of n elements for output index o, or -1 for
 * the constant value. */
static int64_t pad_source(int64_t o, int64_t n, int64_t before, int64_t after, pad_mode mode) {
    int64_t i = o - before;
    if (i >= 0 && i < n) return i;
    if (mode == PAD_CONSTANT) return -1;
    if (mode == PAD_EDGE) return i < 0 ? 0 : n - 1;
    if (mode == PAD_WRAP) { /* the period is what the negative pads keep (crop first, as onnxruntime) */
        int64_t lo = before < 0 ? -before : 0, len = n - lo - (after < 0 ? -after : 0);
        if (len <= 0) return 0; /* nothing kept: the output axis is empty too */
        return lo + ((i - lo) % len + len) % len;
    }
    if (n == 1) return 0;
    int64_t period = 2 * (n - 1);
    i %= period;
    if (i < 0) i += period;
    return i < n ? i : period - i;
}

static inf_status pad_row(inf__kernel_ctx *ctx, const pad_spec *p, const inf_tensor *x, int64_t src,
                          inf_tensor *y, int64_t dst, int axis, int64_t width) {
    int64_t n = x->dims[axis], before = p->begin[axis];
    int64_t lo = before > 0 ? before : 0;                 /* first output inside the input */
    int64_t hi = before + n < width ? before + n : width; /* one past the last */
    inf_status st = INF_OK;
    if (p->mode == PAD_CONSTANT) { /* the pads as two fills, the inside as one copy */
        if (hi <= lo) return move_fill(ctx, y, dst, &p->value, 0, width);
        if (lo > 0) st = move_fill(ctx, y, dst, &p->value, 0, lo);
        if (st == INF_OK) st = move_copy(ctx, y, dst + lo, x, src + (lo - before), hi - lo);
        if (st == INF_OK && hi < width) st = move_fill(ctx, y, dst + hi, &p->value, 0, width - hi);
        return st;
    }
    for (int64_t j = 0; j < width && st == INF_OK; j++) {
        if (j == lo && hi > lo) {
            st = move_copy(ctx, y, dst + j, x, src + (j - before), hi - lo);
            j = hi - 1;
            continue;
        }
        int64_t s = pad_source(j, n, before, p->end[axis], p->mode);
        st = s < 0 ? move_fill(ctx, y, dst + j, &p->value, 0, 1)
                   : move_copy(ctx, y, dst + j, x, src + s, 1);
    }
    return st;
}

/* Every pad is zero: the output is the input, shared without a copy. */
static bool pads_none(const pad_spec *p, int r) {
    for (int a = 0; a < r; a++)
        if (p->begin[a] || p->end[a]) return false;
    return true;
}

static inf_status pad_run(inf__kernel_ctx *ctx) {
    const inf_tensor *x;
    pad_spec p;
    memset(&p, 0, sizeof p);
    inf_status st;
    if ((st = move_input(ctx, 0, "data", true, &x)) != INF_OK ||
        (st = pad_parse_mode(ctx, &p.mode)) != INF_OK)
        return st;
    st = ctx->node->opset < 11 ? pad_from_attrs(ctx, x, &p) : pad_from_inputs(ctx, x, &p);
    if (st != INF_OK) return st;
    int r = x->ndim;
    int64_t dims[INF_MAX_DIMS];
    for (int a = 0; a < r; a++) {
        if (__builtin_add_overflow(x->dims[a], p.begin[a], &dims[a]) ||
            __builtin_add_overflow(dims[a], p.end[a], &dims[a]) || dims[a] > INF_PAD_MAX_DIM)
            return inf__kernel_error(ctx, INF_ESHAPE, "pads %lld and %lld on axis %d (size %lld) give a size out of range",
                                     (long long)p.begin[a], (long long)p.end[a], a, (long long)x->dims[a]);
        if (dims[a] < 0)
            return inf__kernel_error(ctx, INF_ESHAPE, "pads crop axis %d (size %lld) below zero", a,
                                     (long long)x->dims[a]);
        if (p.mode != PAD_CONSTANT && x->dims[a] == 0 && dims[a] > 0)
            return inf__kernel_error(ctx, INF_ESHAPE, "mode %s cannot pad the empty axis %d",
                                     k_pad_mode_names[p.mode], a);
    }
    inf_tensor *y;
    if (pads_none(&p, r)) /* PyTorch's AvgPool2d export: Pad(0, ...) then AveragePool */
        return inf__kernel_output_alias(ctx, 0, 0, r, x->dims, &y);
    if ((st = inf__kernel_output(ctx, 0, x->dtype, r, dims, &y)) != INF_OK) return st;
    if (r == 0) return move_copy(ctx, y, 0, x, 0, 1);
    int64_t n_rows = move_prod(dims, 0, r - 1), width = dims[r - 1];
    if (width == 0) return INF_OK;
    int64_t c[INF_MAX_DIMS] = {0}, xs[INF_MAX_DIMS], s = 1;
    for (int a = r - 1; a >= 0; a--) {
        xs[a] = s;
        s *= x->dims[a];
    }
    for (int64_t row = 0; row < n_rows && st == INF_OK; row++) {
        int64_t src = 0;
        bool constant = false;
        for (int a = 0; a < r - 1; a++) {
            int64_t i = pad_source(c[a], x->dims[a], p.begin[a], p.end[a], p.mode);
            if (i < 0) constant = true;
            src += i * xs[a];
        }
        st = constant ? move_fill(ctx, y, row * width, &p.value, 0, width)
                      : pad_row(ctx, &p, x, src, y, row * width, r - 1, width);
        for (int a = r - 2; a >= 0; a--) { /* next row */
            if (++c[a] < dims[a]) break;
            c[a] = 0;
        }
    }
    return st;
}

const inf__op_impl op_pad = {NULL, pad_run};
