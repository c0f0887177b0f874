/*
 * reduce.c -- reference kernel for the Reduce* family.
 *
 * ONNX ops (opsets 1-26): ReduceSum, ReduceMean, ReduceMax, ReduceMin,
 *   ReduceProd; the same code also implements ReduceL1, ReduceL2,
 *   ReduceLogSum, ReduceLogSumExp and ReduceSumSquare (dispatch on
 *   node->op_type in init) should ops.def list them.
 *   axes: an attribute, except ReduceSum from opset 13 where it is the
 *   optional second input; no axes means all axes unless
 *   noop_with_empty_axes = 1 (then nothing is reduced: each element is
 *   the reduction of itself, |x| for L1, x^2 for SumSquare...).
 *   From opset 18 every Reduce* takes axes as its optional second input.
 *   keepdims (default 1).
 * dtypes: float32, float64, float16, bfloat16 (accumulated in double);
 *   int32, int64, uint32, uint64 (accumulated in 64-bit integers, wrapping;
 *   Mean truncates; L2/LogSum/LogSumExp go through double); ReduceMax and
 *   ReduceMin also int8 and uint8.
 * Empty reductions give the identity: 0 for sums, 1 for Prod, -inf / +inf
 *   (integers: the type's lowest / highest value) for Max / Min, NaN for a
 *   float Mean.
 * Deviations: none known.
 *
 * Each output element is one pool task unit; the reduced sub-space is walked
 * with a small odometer over the reduced dims (offsets add their strides).
 */
#include <math.h>
#include <string.h>

#include "ops/ops.h"

typedef enum reduce_mode {
    R_SUM, R_MEAN, R_MAX, R_MIN, R_PROD, R_L1, R_L2, R_LOGSUM, R_LOGSUMEXP, R_SUMSQUARE
} reduce_mode;

static const struct {
    const char *name;
    reduce_mode mode;
} reduce_ops[] = {
    {"ReduceL1", R_L1},         {"ReduceL2", R_L2},     {"ReduceLogSum", R_LOGSUM},
    {"ReduceLogSumExp", R_LOGSUMEXP}, {"ReduceMax", R_MAX}, {"ReduceMean", R_MEAN},
    {"ReduceMin", R_MIN},       {"ReduceProd", R_PROD}, {"ReduceSum", R_SUM},
    {"ReduceSumSquare", R_SUMSQUARE},
};

typedef struct reduce_params {
    reduce_mode mode;
    bool keepdims, noop_empty, axes_input;
    int n_axes;
    const int64_t *axes;
} reduce_params;

static inf_status reduce_init(inf__node *node, inf__arena *arena, inf_error *err) {
    reduce_params *p = inf__op_params(arena, reduce_params);
    if (!p) return INF_ENOMEM;
    size_t i, n = sizeof reduce_ops / sizeof reduce_ops[0];
    for (i = 0; i < n && strcmp(reduce_ops[i].name, node->op_type); i++) {}
    if (i == n) return inf__node_error(node, err, INF_EUNSUPPORTED, "not a Reduce operator");
    p->mode = reduce_ops[i].mode;
    p->keepdims = inf__attr_int(node, "keepdims", 1) != 0;
    p->noop_empty = inf__attr_int(node, "noop_with_empty_axes", 0) != 0;
    p->axes_input = p->mode == R_SUM ? node->opset >= 13 : node->opset >= 18;
    p->axes = inf__attr_ints(node, "axes", &p->n_axes);
    if (p->axes_input && p->n_axes)
        return inf__node_error(node, err, INF_EMODEL, "axes is an input at opset %d, not an attribute",
                               node->opset);
    node->params = p;
    return INF_OK;
}

/* ---- the walk over one output element's inputs ---- */

typedef struct reduce_plan {
    int n_keep, n_red;
    int64_t keep_dims[INF_MAX_DIMS], keep_strides[INF_MAX_DIMS];
    int64_t red_dims[INF_MAX_DIMS], red_strides[INF_MAX_DIMS];
    int64_t count; /* elements per output */
} reduce_plan;

typedef struct odo {
    int64_t idx[INF_MAX_DIMS];
    int64_t off;
} odo;

static inline void odo_step(const reduce_plan *pl, odo *o) {
    for (int d = pl->n_red - 1; d >= 0; d--) {
        o->off += pl->red_strides[d];
        if (++o->idx[d] < pl->red_dims[d]) return;
        o->off -= pl->red_strides[d] * pl->red_dims[d];
        o->idx[d] = 0;
    }
}

static inline double load_f(const inf_tensor *t, int64_t i) {
    switch (t->dtype) {
    case INF_DTYPE_F32: return ((const float *)t->data)[i];
    case INF_DTYPE_F64: return ((const double *)t->data)[i];
    default: return inf__tensor_get_f64(t, i);
    }
}

/* Integers as 64-bit: signed types sign-extended, unsigned zero-extended. */
static inline uint64_t load_u(const inf_tensor *t, int64_t i) {
    switch (t->dtype) {
    case INF_DTYPE_I32: return (uint64_t)(int64_t)((const int32_t *)t->data)[i];
    case INF_DTYPE_I64: return (uint64_t)((const int64_t *)t->data)[i];
    case INF_DTYPE_U32: return ((const uint32_t *)t->data)[i];
    case INF_DTYPE_U64: return ((const uint64_t *)t->data)[i];
    case INF_DTYPE_I8: return (uint64_t)(int64_t)((const int8_t *)t->data)[i];
    case INF_DTYPE_U8: return ((const uint8_t *)t->data)[i];
    default: return 0;
    }
}

static void store_u(inf_tensor *t, int64_t i, uint64_t v) {
    switch (t->dtype) {
    case INF_DTYPE_I32: case INF_DTYPE_U32: ((uint32_t *)t->data)[i] = (uint32_t)v; break;
    case INF_DTYPE_I64: case INF_DTYPE_U64: ((uint64_t *)t->data)[i] = v; break;
    case INF_DTYPE_I8: case INF_DTYPE_U8: ((uint8_t *)t->data)[i] = (uint8_t)v; break;
    default: break;
    }
}

static double reduce_float(const reduce_plan *pl, reduce_mode mode, const inf_tensor *x,
                           int64_t base) {
    odo o = {{0}, 0};
    double acc = mode == R_PROD ? 1.0 : mode == R_MAX ? -INFINITY : mode == R_MIN ? INFINITY : 0.0;
    if (mode == R_LOGSUMEXP) {
        double mx = -INFINITY;
        for (int64_t r = 0; r < pl->count; r++, odo_step(pl, &o)) {
            double v = load_f(x, base + o.off);
            mx = v > mx ? v : mx;
        }
        if (mx == -INFINITY || mx == INFINITY) return mx;
        memset(&o, 0, sizeof o);
        for (int64_t r = 0; r < pl->count; r++, odo_step(pl, &o)) acc += exp(load_f(x, base + o.off) - mx);
        return mx + log(acc);
    }
    for (int64_t r = 0; r < pl->count; r++, odo_step(pl, &o)) {
        double v = load_f(x, base + o.off);
        switch (mode) {
        case R_MAX: acc = v > acc || v != v ? v : acc; break;
        case R_MIN: acc = v < acc || v != v ? v : acc; break;
        case R_PROD: acc *= v; break;
        case R_L1: acc += fabs(v); break;
        case R_L2: case R_SUMSQUARE: acc += v * v; break;
        default: acc += v; break; /* SUM, MEAN, LOGSUM */
        }
    }
    switch (mode) {
    case R_MEAN: return pl->count ? acc / (double)pl->count : NAN;
    case R_L2: return sqrt(acc);
    case R_LOGSUM: return log(acc);
    default: return acc;
    }
}

static bool is_signed_int(inf_dtype t) {
    return t == INF_DTYPE_I8 || t == INF_DTYPE_I32 || t == INF_DTYPE_I64;
}

/* Lowest / highest value of an integer type, as 64-bit bits. */
static uint64_t int_limit(inf_dtype t, bool highest) {
    switch (t) {
    case INF_DTYPE_I8: return highest ? (uint64_t)INT8_MAX : (uint64_t)(int64_t)INT8_MIN;
    case INF_DTYPE_U8: return highest ? UINT8_MAX : 0;
    case INF_DTYPE_I32: return highest ? (uint64_t)INT32_MAX : (uint64_t)(int64_t)INT32_MIN;
    case INF_DTYPE_U32: return highest ? UINT32_MAX : 0;
    case INF_DTYPE_I64: return highest ? (uint64_t)INT64_MAX : (uint64_t)INT64_MIN;
    default: return highest ? UINT64_MAX : 0;
    }
}

static uint64_t reduce_int(const reduce_plan *pl, reduce_mode mode, const inf_tensor *x,
                           int64_t base) {
    odo o = {{0}, 0};
    bool sgn = is_signed_int(x->dtype);
    uint64_t acc = mode == R_PROD ? 1 : mode == R_MAX ? int_limit(x->dtype, false)
                                      : mode == R_MIN ? int_limit(x->dtype, true) : 0;
    for (int64_t r = 0; r < pl->count; r++, odo_step(pl, &o)) {
        uint64_t v = load_u(x, base + o.off);
        switch (mode) {
        case R_MAX:
            if (sgn ? (int64_t)v > (int64_t)acc : v > acc) acc = v;
            break;
        case R_MIN:
            if (sgn ? (int64_t)v < (int64_t)acc : v < acc) acc = v;
            break;
        case R_PROD: acc *= v; break;
        case R_L1: acc += sgn && (int64_t)v < 0 ? 0 - v : v; break;
        case R_SUMSQUARE: acc += v * v; break;
        default: acc += v; break;
        }
    }
    if (mode == R_MEAN && pl->count)
        acc = sgn ? (uint64_t)((int64_t)acc / pl->count) : acc / (uint64_t)pl->count;
    return acc;
}

typedef struct reduce_task {
    const reduce_plan *pl;
    reduce_mode mode;
    const inf_tensor *x;
    inf_tensor *y;
} reduce_task;

static void reduce_outputs(void *arg, int64_t begin, int64_t end) {
    const reduce_task *t = arg;
    const reduce_plan *pl = t->pl;
    bool as_float = inf__dtype_is_float(t->x->dtype) || t->mode == R_L2 || t->mode == R_LOGSUM ||
                    t->mode == R_LOGSUMEXP;
    for (int64_t o = begin; o < end; o++) {
        int64_t base = 0, rest = o;
        for (int d = pl->n_keep - 1; d >= 0; d--) {
            base += (rest % pl->keep_dims[d]) * pl->keep_strides[d];
            rest /= pl->keep_dims[d];
        }
        if (!as_float) {
            store_u(t->y, o, reduce_int(pl, t->mode, t->x, base));
            continue;
        }
        double v = reduce_float(pl, t->mode, t->x, base);
        if (t->y->dtype == INF_DTYPE_F32) ((float *)t->y->data)[o] = (float)v;
        else inf__tensor_set_f64(t->y, o, v);
    }
}

static bool reduce_dtype_ok(reduce_mode mode, inf_dtype t) {
    switch (t) {
    case INF_DTYPE_F32: case INF_DTYPE_F64: case INF_DTYPE_F16: case INF_DTYPE_BF16:
    case INF_DTYPE_I32: case INF_DTYPE_I64: case INF_DTYPE_U32: case INF_DTYPE_U64:
        return true;
    case INF_DTYPE_I8: case INF_DTYPE_U8:
        return mode == R_MAX || mode == R_MIN;
    default:
        return false;
    }
}

/* Marks the reduced axes in red[]; *n_axes = how many were named. */
static inf_status reduce_axes(inf__kernel_ctx *ctx, const reduce_params *p, int rank, bool *red,
                              int *n_axes) {
    const inf_tensor *ax = p->axes_input && ctx->n_in > 1 ? ctx->in[1] : NULL;
    int64_t n = p->n_axes;
    if (ax) {
        if (ax->dtype != INF_DTYPE_I64 || ax->ndim != 1)
            return inf__kernel_error(ctx, INF_ETYPE, "input axes: expected a 1-D int64 tensor, got %s rank %d",
                                     inf_dtype_name(ax->dtype), ax->ndim);
        n = ax->dims[0];
    }
    memset(red, 0, (size_t)INF_MAX_DIMS * sizeof(bool));
    for (int64_t i = 0; i < n; i++) {
        int64_t a = ax ? ((const int64_t *)ax->data)[i] : p->axes[i];
        int k;
        inf_status st = inf__normalize_axis(ctx, a, rank, &k);
        if (st != INF_OK) return st;
        if (red[k])
            return inf__kernel_error(ctx, INF_EINVAL, "axes: axis %lld appears twice", (long long)a);
        red[k] = true;
    }
    *n_axes = (int)n;
    return INF_OK;
}

static inf_status reduce_run(inf__kernel_ctx *ctx) {
    const reduce_params *p = ctx->node->params;
    const inf_tensor *x = ctx->in[0];
    if (!reduce_dtype_ok(p->mode, x->dtype))
        return inf__kernel_error(ctx, INF_ETYPE, "input data: unsupported dtype %s",
                                 inf_dtype_name(x->dtype));
    bool red[INF_MAX_DIMS];
    int n_axes = 0;
    inf_status st = reduce_axes(ctx, p, x->ndim, red, &n_axes);
    if (st != INF_OK) return st;
    inf_tensor *y;
    /* noop_with_empty_axes: nothing is reduced, but each element still goes
     * through the op's own map (L1 |x|, SumSquare x^2, LogSum log x), as
     * ONNX's reference and onnxruntime compute it */
    bool noop = n_axes == 0 && p->noop_empty;
    reduce_plan pl = {0};
    pl.count = 1;
    int64_t out_dims[INF_MAX_DIMS], stride = 1, strides[INF_MAX_DIMS];
    int out_nd = 0;
    for (int d = x->ndim - 1; d >= 0; d--) strides[d] = stride, stride *= x->dims[d];
    for (int d = 0; d < x->ndim; d++) {
        bool r = !noop && (n_axes == 0 || red[d]);
        if (r) {
            pl.red_dims[pl.n_red] = x->dims[d], pl.red_strides[pl.n_red++] = strides[d];
            pl.count *= x->dims[d];
            if (p->keepdims) out_dims[out_nd++] = 1;
        } else {
            pl.keep_dims[pl.n_keep] = x->dims[d], pl.keep_strides[pl.n_keep++] = strides[d];
            out_dims[out_nd++] = x->dims[d];
        }
    }
    if ((st = inf__kernel_output(ctx, 0, x->dtype, out_nd, out_dims, &y)) != INF_OK) return st;
    reduce_task t = {&pl, p->mode, x, y};
    inf__pool_range(ctx->pool, inf_tensor_numel(y), 16384 / (pl.count + 1) + 1, reduce_outputs, &t);
    return INF_OK;
}

const inf__op_impl op_reduce = {reduce_init, reduce_run};
