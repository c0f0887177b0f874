/*
 * gather_scatter.c -- element and slice indexing: ONNX GatherElements (11-17),
 * GatherND (11-17, batch_dims from 12), ScatterElements (11-17, reduction
 * from 16), Scatter (9-10, the older name of ScatterElements without
 * reduction) and ScatterND (11-17, reduction from 16).
 *
 * dtypes: every data dtype (strings too) when elements are only moved;
 * reductions (add, mul, and max/min of opset 18, accepted early) on every
 * numeric type and bool.  Indices are int32 or int64; negative indices count
 * from the end of their axis.  Every index is checked before it is used: one
 * outside [-dim, dim) is INF_ERANGE naming its position.
 *
 * Reductions compute float types in double (exact for a single add or mul of
 * two float32 values, then rounded once) and integer types in 64-bit
 * two's-complement arithmetic, wrapped to the element width as numpy does;
 * bool add is "or", bool mul is "and".
 *
 * Scatters apply duplicate indices in order, so with reduction "none" the
 * last update wins (the spec leaves that case undefined).  String outputs
 * are written once per element (see gs_target).
 *
 * Deviations: none known.
 */
#include <math.h>

#include "ops/ref/data_move.h"

typedef enum gs_reduction { GS_NONE, GS_ADD, GS_MUL, GS_MAX, GS_MIN } gs_reduction;

/* ---- shared helpers ---- */

static inf_status gs_check_indices_dtype(inf__kernel_ctx *ctx, const inf_tensor *ind) {
    if (ind->dtype != INF_DTYPE_I64 && ind->dtype != INF_DTYPE_I32)
        return inf__kernel_error(ctx, INF_ETYPE, "input indices: expected int32 or int64, got %s",
                                 inf_dtype_name(ind->dtype));
    return INF_OK;
}

static int64_t gs_index(const inf_tensor *ind, int64_t j) {
    return ind->dtype == INF_DTYPE_I64 ? ((const int64_t *)ind->data)[j]
                                       : ((const int32_t *)ind->data)[j];
}

/* Index j of `ind` normalised into [0, dim); INF_ERANGE if outside [-dim, dim). */
static inf_status gs_read_index(inf__kernel_ctx *ctx, const inf_tensor *ind, int64_t j, int64_t dim,
                                int axis, int64_t *out) {
    int64_t v = gs_index(ind, j);
    if (v < -dim || v >= dim)
        return inf__kernel_error(
            ctx, INF_ERANGE,
            "input indices: element %lld is %lld, outside [%lld, %lld) for axis "
            "%d of input data",
            (long long)j, (long long)v, (long long)-dim, (long long)dim, axis);
    *out = v < 0 ? v + dim : v;
    return INF_OK;
}

/* Row-major strides of t, in elements. */
static void gs_strides(const inf_tensor *t, int64_t *strides) {
    int64_t s = 1;
    for (int a = t->ndim - 1; a >= 0; a--) {
        strides[a] = s;
        s *= t->dims[a];
    }
}

/* Advances the coordinate c in a shape of `ndim` dims (row-major order). */
static void gs_next(int ndim, const int64_t *dims, int64_t *c) {
    for (int a = ndim - 1; a >= 0; a--) {
        if (++c[a] < dims[a]) return;
        c[a] = 0;
    }
}

static inf_status gs_parse_reduction(inf__kernel_ctx *ctx, gs_reduction *out) {
    const char *s = inf__attr_string(ctx->node, "reduction", "none");
    if (!strcmp(s, "none"))
        *out = GS_NONE;
    else if (!strcmp(s, "add"))
        *out = GS_ADD;
    else if (!strcmp(s, "mul"))
        *out = GS_MUL;
    else if (!strcmp(s, "max"))
        *out = GS_MAX;
    else if (!strcmp(s, "min"))
        *out = GS_MIN;
    else
        return inf__kernel_error(
            ctx, INF_EINVAL, "attribute reduction: expected none, add, mul, max or min, got '%s'",
            s);
    return INF_OK;
}

/* Writes v into element i of an integer or bool tensor, wrapping to its width. */
static void gs_set_i64(inf_tensor *t, int64_t i, int64_t v) {
    void *p = t->data;
    switch (t->dtype) {
    case INF_DTYPE_I8: ((int8_t *)p)[i] = (int8_t)(uint8_t)v; break;
    case INF_DTYPE_I16: ((int16_t *)p)[i] = (int16_t)(uint16_t)v; break;
    case INF_DTYPE_I32: ((int32_t *)p)[i] = (int32_t)(uint32_t)v; break;
    case INF_DTYPE_I64: ((int64_t *)p)[i] = v; break;
    case INF_DTYPE_U8: ((uint8_t *)p)[i] = (uint8_t)v; break;
    case INF_DTYPE_U16: ((uint16_t *)p)[i] = (uint16_t)v; break;
    case INF_DTYPE_U32: ((uint32_t *)p)[i] = (uint32_t)v; break;
    case INF_DTYPE_U64: ((uint64_t *)p)[i] = (uint64_t)v; break;
    case INF_DTYPE_BOOL: ((uint8_t *)p)[i] = v != 0; break;
    default: break;
    }
}

static int64_t gs_reduce_i64(gs_reduction red, int64_t a, int64_t b, bool is_unsigned) {
    switch (red) {
    case GS_ADD: return (int64_t)((uint64_t)a + (uint64_t)b);
    case GS_MUL: return (int64_t)((uint64_t)a * (uint64_t)b);
    case GS_MAX: return is_unsigned ? ((uint64_t)a > (uint64_t)b ? a : b) : (a > b ? a : b);
    case GS_MIN: return is_unsigned ? ((uint64_t)a < (uint64_t)b ? a : b) : (a < b ? a : b);
    default: return b;
    }
}

static double gs_reduce_f64(gs_reduction red, double a, double b) {
    switch (red) {
    case GS_ADD: return a + b;
    case GS_MUL: return a * b;
    case GS_MAX: return a >= b || isnan(a) ? a : b; /* NaN propagates */
    case GS_MIN: return a <= b || isnan(a) ? a : b;
    default: return b;
    }
}

/* y[di .. di+n) (op)= upd[si .. si+n). */
static inf_status gs_apply(inf__kernel_ctx *ctx, inf_tensor *y, int64_t di, const inf_tensor *upd,
                           int64_t si, int64_t n, gs_reduction red) {
    if (red == GS_NONE) return move_copy(ctx, y, di, upd, si, n);
    if (inf__dtype_is_float(y->dtype)) {
        for (int64_t k = 0; k < n; k++)
            inf__tensor_set_f64(y, di + k,
                                gs_reduce_f64(red, inf__tensor_get_f64(y, di + k),
                                              inf__tensor_get_f64(upd, si + k)));
        return INF_OK;
    }
    bool is_unsigned = !inf__dtype_is_signed(y->dtype);
    if (y->dtype == INF_DTYPE_BOOL && red == GS_ADD) red = GS_MAX; /* or */
    if (y->dtype == INF_DTYPE_BOOL && red == GS_MUL) red = GS_MIN; /* and */
    for (int64_t k = 0; k < n; k++)
        gs_set_i64(y, di + k,
                   gs_reduce_i64(red, inf__tensor_get_i64(y, di + k),
                                 inf__tensor_get_i64(upd, si + k), is_unsigned));
    return INF_OK;
}

/* A reduction needs numbers: bool, integers or floats. */
static inf_status gs_check_reducible(inf__kernel_ctx *ctx, const inf_tensor *x, gs_reduction red) {
    if (red == GS_NONE) return INF_OK;
    if (x->dtype == INF_DTYPE_BOOL || inf__dtype_is_int(x->dtype) || inf__dtype_is_float(x->dtype))
        return INF_OK;
    return inf__kernel_error(ctx, INF_ETYPE, "input data: reduction needs a numeric type, got %s",
                             inf_dtype_name(x->dtype));
}

/* The output of a scatter.  Numbers: y starts as a copy of data and each
 * update is applied in place.  Strings: an element must be written once
 * (inf_tensor_set_string does not free what it replaces in a session
 * buffer), so the updates only record in src_map the final source of each
 * element, and gs_target_finish copies every element once. */
typedef struct gs_target {
    const inf_tensor *x, *upd;
    inf_tensor *y;
    gs_reduction red;
    int64_t *src_map; /* strings: update index per element, -1 for data */
} gs_target;

static inf_status gs_target_begin(inf__kernel_ctx *ctx, gs_target *t) {
    inf_status st = inf__kernel_output(ctx, 0, t->x->dtype, t->x->ndim, t->x->dims, &t->y);
    if (st != INF_OK) return st;
    int64_t n = inf_tensor_numel(t->x);
    t->src_map = NULL;
    if (t->x->dtype != INF_DTYPE_STRING) return move_copy(ctx, t->y, 0, t->x, 0, n);
    if (n == 0) return INF_OK;
    if (!(t->src_map = inf__kernel_scratch(ctx, sizeof(int64_t) * (size_t)n))) return INF_ENOMEM;
    for (int64_t i = 0; i < n; i++) t->src_map[i] = -1;
    return INF_OK;
}

/* y[di .. di+n) receives (or is reduced with) upd[si .. si+n). */
static inf_status gs_target_update(inf__kernel_ctx *ctx, gs_target *t, int64_t di, int64_t si,
                                   int64_t n) {
    if (!t->src_map) return gs_apply(ctx, t->y, di, t->upd, si, n, t->red);
    for (int64_t k = 0; k < n; k++) t->src_map[di + k] = si + k;
    return INF_OK;
}

static inf_status gs_target_finish(inf__kernel_ctx *ctx, gs_target *t) {
    if (!t->src_map) return INF_OK;
    inf_status st = INF_OK;
    for (int64_t i = 0, n = inf_tensor_numel(t->y); i < n && st == INF_OK; i++) {
        int64_t s = t->src_map[i];
        st = s < 0 ? move_copy(ctx, t->y, i, t->x, i, 1) : move_copy(ctx, t->y, i, t->upd, s, 1);
    }
    return st;
}

/* ---- GatherElements / ScatterElements ---- */

/* Checks that indices (and updates, if given) fit data for the element ops. */
static inf_status gs_check_elements_shape(inf__kernel_ctx *ctx, const inf_tensor *x,
                                          const inf_tensor *ind, const inf_tensor *upd, int axis) {
    if (ind->ndim != x->ndim)
        return inf__kernel_error(ctx, INF_ESHAPE,
                                 "input indices has rank %d, expected the rank of data (%d)",
                                 ind->ndim, x->ndim);
    for (int a = 0; a < x->ndim; a++) {
        if (a != axis && ind->dims[a] > x->dims[a])
            return inf__kernel_error(ctx, INF_ESHAPE,
                                     "input indices: dimension %d is %lld, larger than data's %lld",
                                     a, (long long)ind->dims[a], (long long)x->dims[a]);
    }
    if (!upd) return INF_OK;
    if (upd->ndim != ind->ndim || memcmp(upd->dims, ind->dims, sizeof(int64_t) * ind->ndim))
        return inf__kernel_error(ctx, INF_ESHAPE, "input updates must have the shape of indices");
    if (upd->dtype != x->dtype)
        return inf__kernel_error(ctx, INF_ETYPE, "input updates is %s, expected %s (data)",
                                 inf_dtype_name(upd->dtype), inf_dtype_name(x->dtype));
    return INF_OK;
}

/* Offset in x of the element at coordinate c of indices, with the axis
 * coordinate replaced by index element j. */
static inf_status gs_element_offset(inf__kernel_ctx *ctx, const inf_tensor *x, const int64_t *xs,
                                    const inf_tensor *ind, int64_t j, const int64_t *c, int axis,
                                    int64_t *off) {
    int64_t v = 0;
    inf_status st = gs_read_index(ctx, ind, j, x->dims[axis], axis, &v);
    if (st != INF_OK) return st;
    int64_t o = 0;
    for (int a = 0; a < x->ndim; a++) o += (a == axis ? v : c[a]) * xs[a];
    *off = o;
    return INF_OK;
}

static inf_status gather_elements_run(inf__kernel_ctx *ctx) {
    const inf_tensor *x, *ind;
    inf_status st;
    if ((st = move_input(ctx, 0, "data", true, &x)) != INF_OK ||
        (st = move_input(ctx, 1, "indices", true, &ind)) != INF_OK ||
        (st = gs_check_indices_dtype(ctx, ind)) != INF_OK)
        return st;
    if (x->ndim < 1) return inf__kernel_error(ctx, INF_ESHAPE, "input data must have rank >= 1");
    int axis = 0;
    if ((st = move_axis(ctx, "attribute axis", inf__attr_int(ctx->node, "axis", 0), x->ndim,
                        &axis)) != INF_OK ||
        (st = gs_check_elements_shape(ctx, x, ind, NULL, axis)) != INF_OK)
        return st;
    inf_tensor *y;
    if ((st = inf__kernel_output(ctx, 0, x->dtype, ind->ndim, ind->dims, &y)) != INF_OK) return st;
    int64_t xs[INF_MAX_DIMS], c[INF_MAX_DIMS] = {0};
    gs_strides(x, xs);
    for (int64_t j = 0, n = inf_tensor_numel(ind); j < n; j++, gs_next(ind->ndim, ind->dims, c)) {
        int64_t off;
        if ((st = gs_element_offset(ctx, x, xs, ind, j, c, axis, &off)) != INF_OK ||
            (st = move_copy(ctx, y, j, x, off, 1)) != INF_OK)
            return st;
    }
    return INF_OK;
}

static inf_status scatter_elements_run(inf__kernel_ctx *ctx) {
    const inf_tensor *x, *ind, *upd;
    inf_status st;
    gs_reduction red = GS_NONE;
    if ((st = move_input(ctx, 0, "data", true, &x)) != INF_OK ||
        (st = move_input(ctx, 1, "indices", true, &ind)) != INF_OK ||
        (st = move_input(ctx, 2, "updates", true, &upd)) != INF_OK ||
        (st = gs_check_indices_dtype(ctx, ind)) != INF_OK ||
        (st = gs_parse_reduction(ctx, &red)) != INF_OK ||
        (st = gs_check_reducible(ctx, x, red)) != INF_OK)
        return st;
    if (x->ndim < 1) return inf__kernel_error(ctx, INF_ESHAPE, "input data must have rank >= 1");
    int axis = 0;
    if ((st = move_axis(ctx, "attribute axis", inf__attr_int(ctx->node, "axis", 0), x->ndim,
                        &axis)) != INF_OK ||
        (st = gs_check_elements_shape(ctx, x, ind, upd, axis)) != INF_OK)
        return st;
    gs_target t = {x, upd, NULL, red, NULL};
    if ((st = gs_target_begin(ctx, &t)) != INF_OK) return st;
    int64_t xs[INF_MAX_DIMS], c[INF_MAX_DIMS] = {0};
    gs_strides(x, xs);
    for (int64_t j = 0, n = inf_tensor_numel(ind); j < n; j++, gs_next(ind->ndim, ind->dims, c)) {
        int64_t off;
        if ((st = gs_element_offset(ctx, x, xs, ind, j, c, axis, &off)) != INF_OK ||
            (st = gs_target_update(ctx, &t, off, j, 1)) != INF_OK)
            return st;
    }
    return gs_target_finish(ctx, &t);
}

/* ---- GatherND / ScatterND ---- */

/* Shape facts of an ND op: indices [batch..., tuples..., k] index the
 * dims b .. b+k of data; each index tuple selects a slice of `slice`
 * elements. */
typedef struct gs_nd {
    int b, k;
    int64_t n_tuples;   /* tuples in indices (all batches) */
    int64_t per_batch;  /* tuples per batch entry */
    int64_t batch_size; /* elements of data per batch entry */
    int64_t slice;      /* elements per tuple */
    int64_t strides[INF_MAX_DIMS];
} gs_nd;

static inf_status gs_nd_plan(inf__kernel_ctx *ctx, const inf_tensor *x, const inf_tensor *ind,
                             int b, gs_nd *nd) {
    int q = ind->ndim, r = x->ndim;
    if (q < 1 || r < 1)
        return inf__kernel_error(ctx, INF_ESHAPE, "inputs data and indices must have rank >= 1");
    if (b < 0 || b >= q || b >= r)
        return inf__kernel_error(ctx, INF_EINVAL,
                                 "attribute batch_dims = %d must be in [0, min(rank(data) %d, "
                                 "rank(indices) %d))",
                                 b, r, q);
    int64_t k = ind->dims[q - 1];
    if (k < 1 || k > r - b)
        return inf__kernel_error(ctx, INF_ESHAPE,
                                 "input indices: last dimension is %lld, expected 1..%d",
                                 (long long)k, r - b);
    for (int a = 0; a < b; a++) {
        if (ind->dims[a] != x->dims[a])
            return inf__kernel_error(ctx, INF_ESHAPE,
                                     "batch dimension %d: indices has %lld, data has %lld", a,
                                     (long long)ind->dims[a], (long long)x->dims[a]);
    }
    nd->b = b;
    nd->k = (int)k;
    nd->n_tuples = move_prod(ind->dims, 0, q - 1);
    int64_t n_batch = move_prod(x->dims, 0, b);
    nd->per_batch = n_batch ? nd->n_tuples / n_batch : 0;
    nd->batch_size = move_prod(x->dims, b, r);
    nd->slice = move_prod(x->dims, b + nd->k, r);
    gs_strides(x, nd->strides);
    return INF_OK;
}

/* Offset in data of the slice selected by tuple t. */
static inf_status gs_nd_offset(inf__kernel_ctx *ctx, const inf_tensor *x, const inf_tensor *ind,
                               const gs_nd *nd, int64_t t, int64_t *off) {
    int64_t o = nd->per_batch ? (t / nd->per_batch) * nd->batch_size : 0;
    for (int m = 0; m < nd->k; m++) {
        int axis = nd->b + m;
        int64_t v = 0;
        inf_status st = gs_read_index(ctx, ind, t * nd->k + m, x->dims[axis], axis, &v);
        if (st != INF_OK) return st;
        o += v * nd->strides[axis];
    }
    *off = o;
    return INF_OK;
}

static inf_status gather_nd_run(inf__kernel_ctx *ctx) {
    const inf_tensor *x, *ind;
    inf_status st;
    gs_nd nd;
    if ((st = move_input(ctx, 0, "data", true, &x)) != INF_OK ||
        (st = move_input(ctx, 1, "indices", true, &ind)) != INF_OK ||
        (st = gs_check_indices_dtype(ctx, ind)) != INF_OK ||
        (st = gs_nd_plan(ctx, x, ind, (int)inf__attr_int(ctx->node, "batch_dims", 0), &nd)) !=
            INF_OK)
        return st;
    int64_t dims[2 * INF_MAX_DIMS];
    int r = 0;
    for (int a = 0; a < ind->ndim - 1; a++) dims[r++] = ind->dims[a];
    for (int a = nd.b + nd.k; a < x->ndim; a++) dims[r++] = x->dims[a];
    if (r > INF_MAX_DIMS)
        return inf__kernel_error(ctx, INF_ESHAPE, "output rank %d exceeds the maximum %d", r,
                                 INF_MAX_DIMS);
    inf_tensor *y;
    if ((st = inf__kernel_output(ctx, 0, x->dtype, r, dims, &y)) != INF_OK) return st;
    for (int64_t t = 0; t < nd.n_tuples; t++) {
        int64_t off;
        if ((st = gs_nd_offset(ctx, x, ind, &nd, t, &off)) != INF_OK ||
            (st = move_copy(ctx, y, t * nd.slice, x, off, nd.slice)) != INF_OK)
            return st;
    }
    return INF_OK;
}

static inf_status scatter_nd_run(inf__kernel_ctx *ctx) {
    const inf_tensor *x, *ind, *upd;
    inf_status st;
    gs_reduction red = GS_NONE;
    gs_nd nd;
    if ((st = move_input(ctx, 0, "data", true, &x)) != INF_OK ||
        (st = move_input(ctx, 1, "indices", true, &ind)) != INF_OK ||
        (st = move_input(ctx, 2, "updates", true, &upd)) != INF_OK ||
        (st = gs_check_indices_dtype(ctx, ind)) != INF_OK ||
        (st = gs_parse_reduction(ctx, &red)) != INF_OK ||
        (st = gs_check_reducible(ctx, x, red)) != INF_OK ||
        (st = gs_nd_plan(ctx, x, ind, 0, &nd)) != INF_OK)
        return st;
    /* updates: indices.shape[:-1] + data.shape[k:] */
    int want = ind->ndim - 1 + x->ndim - nd.k;
    bool ok = upd->ndim == want && upd->dtype == x->dtype;
    for (int a = 0; ok && a < ind->ndim - 1; a++) ok = upd->dims[a] == ind->dims[a];
    for (int a = nd.k; ok && a < x->ndim; a++)
        ok = upd->dims[ind->ndim - 1 + a - nd.k] == x->dims[a];
    if (!ok)
        return inf__kernel_error(ctx, INF_ESHAPE,
                                 "input updates must be %s with shape indices.shape[:-1] + "
                                 "data.shape[%d:]",
                                 inf_dtype_name(x->dtype), nd.k);
    gs_target tg = {x, upd, NULL, red, NULL};
    if ((st = gs_target_begin(ctx, &tg)) != INF_OK) return st;
    for (int64_t t = 0; t < nd.n_tuples; t++) {
        int64_t off;
        if ((st = gs_nd_offset(ctx, x, ind, &nd, t, &off)) != INF_OK ||
            (st = gs_target_update(ctx, &tg, off, t * nd.slice, nd.slice)) != INF_OK)
            return st;
    }
    return gs_target_finish(ctx, &tg);
}

const inf__op_impl op_gather_elements = {NULL, gather_elements_run};
const inf__op_impl op_gather_nd = {NULL, gather_nd_run};
const inf__op_impl op_scatter_elements = {NULL, scatter_elements_run};
const inf__op_impl op_scatter_nd = {NULL, scatter_nd_run};
