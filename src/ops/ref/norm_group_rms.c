/*
 * norm_group_rms.c -- the normalisations added after opset 17.
 *
 * ONNX ops:
 *   RMSNormalization    opsets 23-26: axis (default -1), epsilon (1e-5),
 *       stash_type (1: float32; float64 statistics are kept too).  Over the
 *       axes [axis, rank) of X: Y = X / sqrt(mean(X^2) + epsilon) * scale.
 *       scale has the shape X.shape[axis:] or broadcasts to it from one
 *       element (other broadcasts are refused by name).
 *   GroupNormalization  opsets 18-26: X [N, C, D...], num_groups (required,
 *       dividing C), epsilon (1e-5); per (n, group) over its C/num_groups
 *       channels and all of D: Y = (X - mean) / sqrt(var + epsilon) (population
 *       variance) * scale + bias.  Opsets 18-20: scale and bias have one value
 *       per group; 21+: one per channel (stash_type accepted, statistics are
 *       always in double).
 * dtypes: float32, float64, float16, bfloat16; statistics accumulated in
 *   double, each output rounded once to X's type -- except float32 X with
 *   a float32 scale of X.shape[axis:]'s size (RMSNormalization as the
 *   optimizer fuses it, graph/passes/rmsnorm.c): ops/vmath.h's
 *   vectorised row, 1 / sqrt rounded to float32 and two float32 products
 *   (within 2 ulp of the double form; not in the edge runtime, for size).
 * Deviations: none known.
 *
 * Each normalised row (RMS: one index of X.shape[:axis]; Group: one
 * (n, group)) is a pool task unit: a row's result never depends on the
 * others, so batch rows give the same bits at any batch size.
 */
#include <math.h>
#include <string.h>

#include "ops/ops.h"
#include "ops/vmath.h"

static bool norm_float(inf_dtype t) {
    return t == INF_DTYPE_F32 || t == INF_DTYPE_F64 || t == INF_DTYPE_F16 || t == INF_DTYPE_BF16;
}

static inf_status check_param(inf__kernel_ctx *ctx, const char *name, const inf_tensor *t, const inf_tensor *x,
                              int64_t want) {
    if (t->dtype != x->dtype)
        return inf__kernel_error(ctx, INF_ETYPE, "input %s: expected %s (the type of X), got %s", name,
                                 inf_dtype_name(x->dtype), inf_dtype_name(t->dtype));
    int64_t n = inf_tensor_numel(t);
    if (n != want && n != 1)
        return inf__kernel_error(ctx, INF_ESHAPE, "input %s has %lld elements; expected %lld (or 1)", name,
                                 (long long)n, (long long)want);
    return INF_OK;
}

static double param_at(const inf_tensor *t, int64_t i) {
    return inf__tensor_get_f64(t, inf_tensor_numel(t) == 1 ? 0 : i);
}

/* ======================================================================== */
/*  RMSNormalization                                                        */
/* ======================================================================== */

typedef struct rms_params {
    int64_t axis;
    double epsilon;
} rms_params;

static inf_status rms_init(inf__node *node, inf__arena *arena, inf_error *err) {
    rms_params *p = inf__op_params(arena, rms_params);
    if (!p) return INF_ENOMEM;
    p->axis = inf__attr_int(node, "axis", -1);
    p->epsilon = inf__attr_float(node, "epsilon", 1e-5f);
    int64_t stash = inf__attr_int(node, "stash_type", 1);
    if (stash != INF_DTYPE_F32 && stash != INF_DTYPE_F64)
        return inf__node_error(node, err, INF_EUNSUPPORTED, "attribute stash_type: %s is not implemented "
                               "(float32 or float64)", inf__onnx_type_name((int)(stash > 0 && stash < 1000 ? stash : -1)));
    node->params = p;
    return INF_OK;
}

typedef struct rms_job {
    const inf_tensor *x, *scale;
    inf_tensor *y;
    int64_t inner;
    double epsilon;
} rms_job;

static void rms_rows(void *arg, int64_t begin, int64_t end) {
    const rms_job *j = arg;
    const inf__vmath *vm = inf__vmath_best();
    if (vm->rmsnorm_row && j->x->dtype == INF_DTYPE_F32 && j->scale->dtype == INF_DTYPE_F32 &&
        inf_tensor_numel(j->scale) == j->inner) { /* float32, one scale per element: the vectorised row */
        for (int64_t r = begin; r < end; r++)
            vm->rmsnorm_row((const float *)j->x->data + r * j->inner, (float *)j->y->data + r * j->inner, j->inner,
                            j->scale->data, j->epsilon);
        return;
    }
    for (int64_t r = begin; r < end; r++) {
        int64_t base = r * j->inner;
        double ss = 0;
        for (int64_t i = 0; i < j->inner; i++) {
            double v = inf__tensor_get_f64(j->x, base + i);
            ss += v * v;
        }
        double inv = 1.0 / sqrt(ss / (double)j->inner + j->epsilon);
        for (int64_t i = 0; i < j->inner; i++)
            inf__tensor_set_f64(j->y, base + i, inf__tensor_get_f64(j->x, base + i) * inv * param_at(j->scale, i));
    }
}

static inf_status rms_run(inf__kernel_ctx *ctx) {
    const rms_params *p = ctx->node->params;
    const inf_tensor *x = ctx->in[0], *scale = ctx->in[1];
    if (!norm_float(x->dtype))
        return inf__kernel_error(ctx, INF_ETYPE, "input X: expected a float type, got %s", inf_dtype_name(x->dtype));
    int axis;
    inf_status st = inf__normalize_axis(ctx, p->axis, x->ndim, &axis);
    if (st != INF_OK) return st;
    int64_t inner = 1;
    for (int d = axis; d < x->ndim; d++) inner *= x->dims[d];
    if ((st = check_param(ctx, "scale", scale, x, inner)) != INF_OK) return st;
    inf_tensor *y;
    if ((st = inf__kernel_output(ctx, 0, x->dtype, x->ndim, x->dims, &y)) != INF_OK) return st;
    if (inner == 0) return INF_OK;
    rms_job job = {x, scale, y, inner, p->epsilon};
    inf__pool_range(ctx->pool, inf_tensor_numel(x) / inner, 16384 / inner + 1, rms_rows, &job);
    return INF_OK;
}

const inf__op_impl op_rms_norm = {rms_init, rms_run};

/* ======================================================================== */
/*  GroupNormalization                                                      */
/* ======================================================================== */

typedef struct group_params {
    int64_t groups;
    double epsilon;
    bool per_channel; /* opset 21+: scale and bias per channel, else per group */
} group_params;

static inf_status group_init(inf__node *node, inf__arena *arena, inf_error *err) {
    group_params *p = inf__op_params(arena, group_params);
    if (!p) return INF_ENOMEM;
    if (!inf__node_attr(node, "num_groups"))
        return inf__node_error(node, err, INF_EMODEL, "attribute num_groups is missing");
    p->groups = inf__attr_int(node, "num_groups", 1);
    if (p->groups < 1)
        return inf__node_error(node, err, INF_EMODEL, "attribute num_groups must be >= 1, got %lld",
                               (long long)p->groups);
    p->epsilon = inf__attr_float(node, "epsilon", 1e-5f);
    p->per_channel = node->opset >= 21;
    int64_t stash = inf__attr_int(node, "stash_type", 1);
    if (stash != INF_DTYPE_F32 && stash != INF_DTYPE_F64)
        return inf__node_error(node, err, INF_EUNSUPPORTED, "attribute stash_type: %s is not implemented "
                               "(float32 or float64)", inf__onnx_type_name((int)(stash > 0 && stash < 1000 ? stash : -1)));
    node->params = p;
    return INF_OK;
}

typedef struct group_job {
    const group_params *p;
    const inf_tensor *x, *scale, *bias;
    inf_tensor *y;
    int64_t channels, spatial; /* C, prod(D...) */
} group_job;

static void group_rows(void *arg, int64_t begin, int64_t end) {
    const group_job *j = arg;
    int64_t cg = j->channels / j->p->groups, len = cg * j->spatial;
    for (int64_t r = begin; r < end; r++) {
        int64_t g = r % j->p->groups, base = r * len;
        double sum = 0, sq = 0;
        for (int64_t i = 0; i < len; i++) sum += inf__tensor_get_f64(j->x, base + i);
        double mean = sum / (double)len;
        for (int64_t i = 0; i < len; i++) {
            double d = inf__tensor_get_f64(j->x, base + i) - mean;
            sq += d * d;
        }
        double inv = 1.0 / sqrt(sq / (double)len + j->p->epsilon);
        for (int64_t i = 0; i < len; i++) {
            int64_t k = j->p->per_channel ? g * cg + i / j->spatial : g;
            double v = (inf__tensor_get_f64(j->x, base + i) - mean) * inv;
            inf__tensor_set_f64(j->y, base + i, v * param_at(j->scale, k) + param_at(j->bias, k));
        }
    }
}

static inf_status group_run(inf__kernel_ctx *ctx) {
    const group_params *p = ctx->node->params;
    const inf_tensor *x = ctx->in[0], *scale = ctx->in[1], *bias = ctx->in[2];
    if (!norm_float(x->dtype))
        return inf__kernel_error(ctx, INF_ETYPE, "input X: expected a float type, got %s", inf_dtype_name(x->dtype));
    if (x->ndim < 2) return inf__kernel_error(ctx, INF_ESHAPE, "input X: expected rank >= 2 [N, C, ...], got %d", x->ndim);
    int64_t channels = x->dims[1], spatial = 1;
    for (int d = 2; d < x->ndim; d++) spatial *= x->dims[d];
    if (channels % p->groups != 0)
        return inf__kernel_error(ctx, INF_ESHAPE, "num_groups %lld does not divide the %lld channels",
                                 (long long)p->groups, (long long)channels);
    int64_t want = p->per_channel ? channels : p->groups;
    inf_status st = check_param(ctx, "scale", scale, x, want);
    if (st == INF_OK) st = check_param(ctx, "bias", bias, x, want);
    if (st != INF_OK) return st;
    inf_tensor *y;
    if ((st = inf__kernel_output(ctx, 0, x->dtype, x->ndim, x->dims, &y)) != INF_OK) return st;
    int64_t rows = x->dims[0] * p->groups;
    if (rows == 0 || channels == 0 || spatial == 0) return INF_OK;
    group_job job = {p, x, scale, bias, y, channels, spatial};
    inf__pool_range(ctx->pool, rows, 1, group_rows, &job);
    return INF_OK;
}

const inf__op_impl op_group_norm = {group_init, group_run};
