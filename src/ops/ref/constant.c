/*
 * constant.c -- the ops that make tensors from attributes or scalars.
 *
 *   Constant         opsets 1-17: exactly one of value (any dtype; the
 *                    loader has decoded it into an inf_tensor), value_float,
 *                    value_floats, value_int, value_ints, value_string,
 *                    value_strings (the value_* forms from opset 12).
 *                    sparse_value is not supported (rejected at load).
 *   ConstantOfShape  opsets 9-17: int64 1-D `input` gives the shape; every
 *                    element is the one-element `value` attribute (default
 *                    float32 0).  Any dtype of value, strings included.
 *   Range            opsets 11-17: start, limit, delta scalars of one
 *                    numeric dtype (float16/bfloat16/float/double and all
 *                    integer widths); n = max(ceil((limit - start) / delta), 0),
 *                    out[i] = start + i * delta.
 *
 * Outputs are fresh tensors from inf__kernel_output (no input to alias);
 * numeric data is memcpy'd, strings copied with inf_tensor_set_string.
 *
 * Deviations: Range also accepts one-element 1-D operands; integer Range
 * computes in 64-bit arithmetic and wraps to the output width, float Range
 * computes start + i * delta in double and rounds once to the output dtype.
 * Range refuses more than 2^40 elements (INF_ERANGE) rather than trying to
 * allocate them.
 */
#include <math.h>

#include "ops/ref/data_move.h"

/* ======================================================================== */
/*  Constant                                                                */
/* ======================================================================== */

typedef struct constant_params {
    inf_tensor value;           /* view over the attribute's data (model arena) */
    const inf__attr *string;    /* value_string: single string with its length */
} constant_params;

static const char *const constant_attrs[] = {"value",        "value_float",  "value_floats",
                                             "value_int",    "value_ints",   "value_string",
                                             "value_strings", "sparse_value"};

static inf_status constant_init(inf__node *node, inf__arena *arena, inf_error *err) {
    constant_params *p = inf__op_params(arena, constant_params);
    if (!p) return INF_ENOMEM;
    const inf__attr *a = NULL;
    for (size_t k = 0; k < sizeof constant_attrs / sizeof constant_attrs[0]; k++) {
        const inf__attr *b = inf__node_attr(node, constant_attrs[k]);
        if (!b) continue;
        if (a)
            return inf__node_error(node, err, INF_EMODEL,
                                   "has both attribute '%s' and '%s'; exactly one is allowed",
                                   a->name, b->name);
        a = b;
    }
    if (!a) return inf__node_error(node, err, INF_EMODEL, "has no value attribute");
    int64_t n = a->n;
    inf_tensor *v = &p->value;
    switch (a->type) {
    case INF_ATTR_TENSOR:
        if (!a->t || a->t->kind != INF_KIND_TENSOR)
            return inf__node_error(node, err, INF_EMODEL, "attribute '%s' is not a tensor", a->name);
        inf_tensor_init_view(v, a->t->dtype, a->t->ndim, a->t->dims, a->t->data);
        break;
    case INF_ATTR_FLOAT: inf_tensor_init_view(v, INF_DTYPE_F32, 0, NULL, (void *)&a->f); break;
    case INF_ATTR_INT: inf_tensor_init_view(v, INF_DTYPE_I64, 0, NULL, (void *)&a->i); break;
    case INF_ATTR_FLOATS: inf_tensor_init_view(v, INF_DTYPE_F32, 1, &n, a->floats); break;
    case INF_ATTR_INTS: inf_tensor_init_view(v, INF_DTYPE_I64, 1, &n, a->ints); break;
    case INF_ATTR_STRINGS: inf_tensor_init_view(v, INF_DTYPE_STRING, 1, &n, (void *)a->strings); break;
    case INF_ATTR_STRING:
        inf_tensor_init_view(v, INF_DTYPE_STRING, 0, NULL, (void *)&a->s);
        p->string = a;
        break;
    default:
        return inf__node_error(node, err, INF_EUNSUPPORTED,
                               "attribute '%s' (type %d) is not supported", a->name, (int)a->type);
    }
    node->params = p;
    return INF_OK;
}

static inf_status constant_run(inf__kernel_ctx *ctx) {
    const constant_params *p = ctx->node->params;
    const inf_tensor *v = &p->value;
    inf_tensor *y;
    inf_status st = inf__kernel_output(ctx, 0, v->dtype, v->ndim, v->dims, &y);
    if (st != INF_OK) return st;
    if (p->string) {   /* may hold NUL bytes: copy by length */
        if (inf_tensor_set_string(y, 0, p->string->s, p->string->s_len) != INF_OK)
            return inf__kernel_error(ctx, INF_ENOMEM, "out of memory copying a string");
        return INF_OK;
    }
    return move_copy(ctx, y, 0, v, 0, inf_tensor_numel(v));
}

const inf__op_impl op_constant = {constant_init, constant_run};

/* ======================================================================== */
/*  ConstantOfShape                                                         */
/* ======================================================================== */

typedef struct cos_params {
    inf_tensor value;   /* one element */
    float zero;         /* backs the default value */
} cos_params;

static inf_status cos_init(inf__node *node, inf__arena *arena, inf_error *err) {
    cos_params *p = inf__op_params(arena, cos_params);
    if (!p) return INF_ENOMEM;
    const inf_tensor *t = inf__attr_tensor(node, "value");
    if (t) {
        if (t->kind != INF_KIND_TENSOR || inf_tensor_numel(t) != 1)
            return inf__node_error(node, err, INF_EMODEL,
                                   "attribute 'value' must hold exactly one element");
        inf_tensor_init_view(&p->value, t->dtype, 0, NULL, t->data);
    } else {
        inf_tensor_init_view(&p->value, INF_DTYPE_F32, 0, NULL, &p->zero);
    }
    node->params = p;
    return INF_OK;
}

static inf_status cos_run(inf__kernel_ctx *ctx) {
    const cos_params *p = ctx->node->params;
    const inf_tensor *s;
    inf_status st = move_input(ctx, 0, "input", true, &s);
    if (st != INF_OK) return st;
    int64_t dims[INF_MAX_DIMS];
    int n = 0;
    if ((st = move_read_ints(ctx, s, "input", false, INF_MAX_DIMS, dims, &n)) != INF_OK) return st;
    for (int k = 0; k < n; k++)
        if (dims[k] < 0)
            return inf__kernel_error(ctx, INF_ESHAPE, "input: dimension %d is %lld (< 0)", k,
                                     (long long)dims[k]);
    if (inf__shape_numel(n, dims) < 0)
        return inf__kernel_error(ctx, INF_ESHAPE, "input: the shape's size overflows");
    inf_tensor *y;
    if ((st = inf__kernel_output(ctx, 0, p->value.dtype, n, dims, &y)) != INF_OK) return st;
    return move_fill(ctx, y, 0, &p->value, 0, inf_tensor_numel(y));
}

const inf__op_impl op_constant_of_shape = {cos_init, cos_run};

/* ======================================================================== */
/*  Range                                                                   */
/* ======================================================================== */

#define RANGE_MAX_ELEMS ((int64_t)1 << 40)

static const char *const range_names[3] = {"start", "limit", "delta"};

static inf_status range_inputs(inf__kernel_ctx *ctx, const inf_tensor **t) {
    for (int i = 0; i < 3; i++) {
        inf_status st = move_input(ctx, i, range_names[i], true, &t[i]);
        if (st != INF_OK) return st;
        if (!inf__dtype_is_float(t[i]->dtype) && !inf__dtype_is_int(t[i]->dtype))
            return inf__kernel_error(ctx, INF_ETYPE, "input %s: expected a numeric type, got %s",
                                     range_names[i], inf_dtype_name(t[i]->dtype));
        if (t[i]->dtype != t[0]->dtype)
            return inf__kernel_error(ctx, INF_ETYPE, "input %s is %s but input start is %s",
                                     range_names[i], inf_dtype_name(t[i]->dtype),
                                     inf_dtype_name(t[0]->dtype));
        if (t[i]->ndim > 1 || inf_tensor_numel(t[i]) != 1)
            return inf__kernel_error(ctx, INF_ESHAPE, "input %s: expected a scalar", range_names[i]);
    }
    return INF_OK;
}

/* Element count of an integer range, without overflow. */
static int64_t range_count_int(int64_t s, int64_t l, int64_t d) {
    uint64_t span, step;
    if (d > 0) {
        if (l <= s) return 0;
        span = (uint64_t)l - (uint64_t)s;
        step = (uint64_t)d;
    } else {
        if (s <= l) return 0;
        span = (uint64_t)s - (uint64_t)l;
        step = d == INT64_MIN ? (uint64_t)1 << 63 : (uint64_t)-d;
    }
    uint64_t n = 1 + (span - 1) / step;
    return n > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)n;
}

static void range_fill_int(inf_tensor *y, int64_t s, int64_t d, int64_t n) {
    uint64_t v = (uint64_t)s;
    void *p = y->data;
    for (int64_t i = 0; i < n; i++, v += (uint64_t)d) {
        switch (y->dtype) {
        case INF_DTYPE_I8:
        case INF_DTYPE_U8: ((uint8_t *)p)[i] = (uint8_t)v; break;
        case INF_DTYPE_I16:
        case INF_DTYPE_U16: ((uint16_t *)p)[i] = (uint16_t)v; break;
        case INF_DTYPE_I32:
        case INF_DTYPE_U32: ((uint32_t *)p)[i] = (uint32_t)v; break;
        default: ((uint64_t *)p)[i] = v; break;
        }
    }
}

static inf_status range_run(inf__kernel_ctx *ctx) {
    const inf_tensor *t[3];
    inf_status st = range_inputs(ctx, t);
    if (st != INF_OK) return st;
    inf_dtype dt = t[0]->dtype;
    bool is_float = inf__dtype_is_float(dt);
    int64_t n;
    double fs = 0, fd = 0;
    int64_t is = 0, id = 0;
    if (is_float) {
        fs = inf__tensor_get_f64(t[0], 0);
        double fl = inf__tensor_get_f64(t[1], 0);
        fd = inf__tensor_get_f64(t[2], 0);
        if (fd == 0 || isnan(fd) || isnan(fs) || isnan(fl))
            return inf__kernel_error(ctx, INF_ERANGE, "input delta is 0 or an operand is NaN");
        double c = ceil((fl - fs) / fd);
        if (!(c <= (double)RANGE_MAX_ELEMS))
            return inf__kernel_error(ctx, INF_ERANGE, "Range would have %g elements (limit 2^40)", c);
        n = c > 0 ? (int64_t)c : 0;
    } else {
        is = inf__tensor_get_i64(t[0], 0);
        id = inf__tensor_get_i64(t[2], 0);
        if (id == 0) return inf__kernel_error(ctx, INF_ERANGE, "input delta is 0");
        n = range_count_int(is, inf__tensor_get_i64(t[1], 0), id);
        if (n > RANGE_MAX_ELEMS)
            return inf__kernel_error(ctx, INF_ERANGE, "Range would have %lld elements (limit 2^40)",
                                     (long long)n);
    }
    inf_tensor *y;
    if ((st = inf__kernel_output(ctx, 0, dt, 1, &n, &y)) != INF_OK) return st;
    if (!is_float) {
        range_fill_int(y, is, id, n);
        return INF_OK;
    }
    for (int64_t i = 0; i < n; i++) inf__tensor_set_f64(y, i, fs + (double)i * fd);
    return INF_OK;
}

const inf__op_impl op_range = {NULL, range_run};
