/*
 * normalization.c -- reference kernels for BatchNormalization and
 * LayerNormalization.
 *
 * ONNX ops:
 *   BatchNormalization  opsets 1-17, inference form
 *       Y = (X - mean) / sqrt(var + epsilon) * scale + B per channel (dim 1).
 *       Before opset 9 `spatial` = 0 allows per-element parameters of shape
 *       [C, D1, ...]; this kernel accepts them whenever their element count
 *       is C * D1 * ...  With training_mode = 1 (opset 14+) the batch
 *       statistics (population variance over N and the spatial dims) are
 *       used and the optional outputs running_mean/running_var are
 *       input * momentum + batch * (1 - momentum).
 *   LayerNormalization  opset 17: axis, epsilon, stash_type (float32 or
 *       float64 statistics), Scale and optional B broadcast to X.shape[axis:],
 *       optional outputs Mean and InvStdDev of shape X.shape[:axis] + [1...].
 * dtypes: X float32 (fast path: ops/vmath.h's vectorised row when Scale and
 *         B are dense float32; rows split across threads, one row per thread
 *         in a fixed order), float64, float16, bfloat16 (others through
 *         double); BatchNormalization's parameters may be any float type
 *         (opset 15 T1/T2).  Statistics are accumulated in double.
 * Deviations: the extra outputs of BatchNormalization before opset 14 (mean,
 *         var, saved_mean, saved_var; training only) are filled in inference
 *         form when a model asks for them: running statistics are copies of
 *         the inputs, saved_mean is mean and saved_var is 1/sqrt(var + eps).
 */
#include <math.h>
#include <string.h>

#include "ops/ops.h"
#include "ops/vmath.h"

static bool is_float(inf_dtype t) {
    return t == INF_DTYPE_F32 || t == INF_DTYPE_F64 || t == INF_DTYPE_F16 || t == INF_DTYPE_BF16;
}

/* Wants output i: the node names it. */
static bool wants_output(const inf__kernel_ctx *ctx, int i) {
    return i < ctx->n_out && i < ctx->node->n_outputs && ctx->node->outputs[i] >= 0;
}

/* ======================================================================== */
/*  BatchNormalization                                                       */
/* ======================================================================== */

typedef struct bn_task {
    const inf_tensor *x, *scale, *bias, *mean, *var;
    const double *bmean, *bvar; /* batch statistics (training), else NULL */
    const float *fa, *fb;       /* float32 X, per channel: y = x * fa[c] + fb[c] */
    inf_tensor *y;
    int64_t c, inner;
    bool per_elem; /* parameters of shape [C, D1, ...] */
    double eps;
} bn_task;

/* Channel c's factor and offset, in double: a = scale / sqrt(var + eps),
 * b = B - mean * a. */
static void bn_coefficients(const bn_task *t, int64_t c, double *a, double *b) {
    double mean = t->bmean ? t->bmean[c] : inf__tensor_get_f64(t->mean, c);
    double var = t->bvar ? t->bvar[c] : inf__tensor_get_f64(t->var, c);
    *a = inf__tensor_get_f64(t->scale, c) / sqrt(var + t->eps);
    *b = inf__tensor_get_f64(t->bias, c) - mean * *a;
}

/* With constant parameters (the usual inference model), the per-channel
 * coefficients are computed once at load; a run uses them while its
 * parameter inputs are still those constants (same data). */
typedef struct bn_params {
    float epsilon, momentum;
    bool training;
    const float *fa, *fb; /* NULL: computed per run */
    const void *src[4];   /* scale, B, mean, var data the coefficients came from */
    int64_t n_channels;
} bn_params;

static void bn_fill_coefficients(const bn_task *t, int64_t c, float *fa, float *fb) {
    for (int64_t ch = 0; ch < c; ch++) {
        double a, b;
        bn_coefficients(t, ch, &a, &b);
        fa[ch] = (float)a, fb[ch] = (float)b;
    }
}

static inf_status bn_precompute(inf__node *node, inf__arena *arena, bn_params *p) {
    const inf_tensor *in[4];
    for (int i = 0; i < 4; i++) {
        in[i] = inf__node_constant_input(node, i + 1);
        if (!in[i] || in[i]->kind != INF_KIND_TENSOR || !is_float(in[i]->dtype) || !in[i]->data ||
            inf_tensor_numel(in[i]) != inf_tensor_numel(in[0]))
            return INF_OK; /* computed per run */
        p->src[i] = in[i]->data;
    }
    int64_t c = inf_tensor_numel(in[0]);
    float *ab = inf__arena_alloc(arena, (size_t)(c > 0 ? 2 * c : 1) * sizeof(float));
    if (!ab) return INF_ENOMEM;
    bn_task t = {.scale = in[0], .bias = in[1], .mean = in[2], .var = in[3], .eps = p->epsilon};
    bn_fill_coefficients(&t, c, ab, ab + c);
    p->fa = ab, p->fb = ab + c, p->n_channels = c;
    return INF_OK;
}

static inf_status bn_init(inf__node *node, inf__arena *arena, inf_error *err) {
    bn_params *p = inf__op_params(arena, bn_params);
    if (!p) return INF_ENOMEM;
    p->epsilon = inf__attr_float(node, "epsilon", 1e-5f);
    p->momentum = inf__attr_float(node, "momentum", 0.9f);
    p->training = node->opset >= 14 && inf__attr_int(node, "training_mode", 0) != 0;
    if (!(p->epsilon >= 0))
        return inf__node_error(node, err, INF_EMODEL, "epsilon = %g, must be >= 0", p->epsilon);
    if (!p->training && bn_precompute(node, arena, p) != INF_OK)
        return inf__node_error(node, err, INF_ENOMEM, "out of memory");
    node->params = p;
    return INF_OK;
}

/* float32 X with per-channel coefficients computed once per run (fa, fb):
 * the same float arithmetic as bn_planes, without its per-plane sqrt and
 * parameter reads, which dominate when planes are short ([N, C] input). */
static void bn_affine_planes(void *arg, int64_t begin, int64_t end) {
    const bn_task *t = arg;
    const float *x = t->x->data;
    float *y = t->y->data;
    int64_t c = begin % t->c, inner = t->inner;
    for (int64_t pl = begin; pl < end; pl++) {
        const float *xp = x + pl * inner;
        float *yp = y + pl * inner, fa = t->fa[c], fb = t->fb[c];
        for (int64_t j = 0; j < inner; j++) yp[j] = xp[j] * fa + fb;
        if (++c == t->c) c = 0;
    }
}

static void bn_planes(void *arg, int64_t begin, int64_t end) {
    const bn_task *t = arg;
    for (int64_t pl = begin; pl < end; pl++) {
        int64_t c = pl % t->c, base = pl * t->inner;
        if (t->per_elem) {
            for (int64_t j = 0; j < t->inner; j++) {
                int64_t q = c * t->inner + j;
                double a = inf__tensor_get_f64(t->scale, q) /
                           sqrt(inf__tensor_get_f64(t->var, q) + t->eps);
                double v = (inf__tensor_get_f64(t->x, base + j) - inf__tensor_get_f64(t->mean, q)) * a +
                           inf__tensor_get_f64(t->bias, q);
                inf__tensor_set_f64(t->y, base + j, v);
            }
            continue;
        }
        double a, b;
        bn_coefficients(t, c, &a, &b);
        if (t->x->dtype == INF_DTYPE_F32) {
            const float *x = (const float *)t->x->data + base;
            float *y = (float *)t->y->data + base, fa = (float)a, fb = (float)b;
            for (int64_t j = 0; j < t->inner; j++) y[j] = x[j] * fa + fb;
        } else {
            for (int64_t j = 0; j < t->inner; j++)
                inf__tensor_set_f64(t->y, base + j, inf__tensor_get_f64(t->x, base + j) * a + b);
        }
    }
}

/* Copies a per-channel parameter into a new output of its own dtype,
 * optionally transformed: out = src * k + add[c] (add may be NULL). */
static inf_status bn_stat_output(inf__kernel_ctx *ctx, int i, const inf_tensor *src, double k,
                                 const double *add, double add_k, bool inv_std, double eps) {
    inf_tensor *o;
    inf_status st = inf__kernel_output(ctx, i, src->dtype, src->ndim, src->dims, &o);
    if (st != INF_OK) return st;
    for (int64_t c = 0, n = inf_tensor_numel(src); c < n; c++) {
        double v = inf__tensor_get_f64(src, c) * k + (add ? add[c] * add_k : 0.0);
        if (inv_std) v = 1.0 / sqrt(v + eps);
        inf__tensor_set_f64(o, c, v);
    }
    return INF_OK;
}

/* The load-time coefficients apply: the run's parameters are those constants. */
static bool bn_precomputed_for(const bn_params *p, const inf__kernel_ctx *ctx, int64_t c) {
    if (!p->fa || p->training || p->n_channels != c) return false;
    for (int i = 0; i < 4; i++)
        if (ctx->in[i + 1]->data != p->src[i]) return false;
    return true;
}

static inf_status bn_run(inf__kernel_ctx *ctx) {
    const bn_params *p = ctx->node->params;
    const inf_tensor *x = ctx->in[0];
    static const char *const names[5] = {"X", "scale", "B", "input_mean", "input_var"};
    char buf[96];
    if (ctx->n_in < 5)
        return inf__kernel_error(ctx, INF_EMODEL, "expected 5 inputs, got %d", ctx->n_in);
    for (int i = 0; i < 5; i++) {
        if (!ctx->in[i])
            return inf__kernel_error(ctx, INF_EMODEL, "input %s is required", names[i]);
        if (!is_float(ctx->in[i]->dtype))
            return inf__kernel_error(ctx, INF_ETYPE, "input %s: expected a float type, got %s",
                                     names[i], inf_dtype_name(ctx->in[i]->dtype));
    }
    if (x->ndim < 2)
        return inf__kernel_error(ctx, INF_ESHAPE, "input X: expected rank >= 2 [N,C,...], got %s",
                                 inf__shape_str(x->ndim, x->dims, buf, sizeof buf));
    int64_t c = x->dims[1], inner = 1;
    for (int i = 2; i < x->ndim; i++) inner *= x->dims[i];
    int64_t n_scale = inf_tensor_numel(ctx->in[1]);
    bool per_elem = n_scale != c && n_scale == c * inner && !p->training;
    int64_t want = per_elem ? c * inner : c;
    for (int i = 1; i < 5; i++)
        if (inf_tensor_numel(ctx->in[i]) != want)
            return inf__kernel_error(ctx, INF_ESHAPE,
                                     "input %s %s: expected %lld elements (X's channels, X is %s)",
                                     names[i],
                                     inf__shape_str(ctx->in[i]->ndim, ctx->in[i]->dims, buf, 48),
                                     (long long)want, inf__shape_str(x->ndim, x->dims, buf + 48, 48));
    inf_tensor *y;
    inf_status st = inf__kernel_output(ctx, 0, x->dtype, x->ndim, x->dims, &y);
    if (st != INF_OK) return st;

    bn_task t = {.x = x, .scale = ctx->in[1], .bias = ctx->in[2], .mean = ctx->in[3], .var = ctx->in[4],
                 .y = y, .c = c, .inner = inner, .per_elem = per_elem, .eps = p->epsilon};
    double *stats = NULL;
    if (p->training) {
        stats = inf__kernel_scratch(ctx, (size_t)(c > 0 ? 2 * c : 1) * sizeof(double));
        if (!stats) return INF_ENOMEM;
        int64_t n = x->dims[0], count = n * inner;
        for (int64_t ch = 0; ch < c; ch++) {
            double s = 0, ss = 0;
            for (int64_t b = 0; b < n; b++)
                for (int64_t j = 0; j < inner; j++) s += inf__tensor_get_f64(x, (b * c + ch) * inner + j);
            double mean = count ? s / (double)count : 0;
            for (int64_t b = 0; b < n; b++)
                for (int64_t j = 0; j < inner; j++) {
                    double d = inf__tensor_get_f64(x, (b * c + ch) * inner + j) - mean;
                    ss += d * d;
                }
            stats[ch] = mean, stats[c + ch] = count ? ss / (double)count : 0;
        }
        t.bmean = stats, t.bvar = stats + c;
    }
    if (x->dtype == INF_DTYPE_F32 && !per_elem) {
        if (bn_precomputed_for(p, ctx, c)) {
            t.fa = p->fa, t.fb = p->fb;
        } else {
            float *ab = inf__kernel_scratch(ctx, (size_t)(c > 0 ? 2 * c : 1) * sizeof(float));
            if (!ab) return INF_ENOMEM;
            bn_fill_coefficients(&t, c, ab, ab + c);
            t.fa = ab, t.fb = ab + c;
        }
        inf__pool_range(ctx->pool, x->dims[0] * c, 16384 / (inner + 1) + 1, bn_affine_planes, &t);
    } else {
        inf__pool_range(ctx->pool, x->dims[0] * c, 16384 / (inner + 1) + 1, bn_planes, &t);
    }

    /* optional outputs */
    if (p->training) {
        double mom = p->momentum;
        if (st == INF_OK && wants_output(ctx, 1))
            st = bn_stat_output(ctx, 1, ctx->in[3], mom, t.bmean, 1 - mom, false, 0);
        if (st == INF_OK && wants_output(ctx, 2))
            st = bn_stat_output(ctx, 2, ctx->in[4], mom, t.bvar, 1 - mom, false, 0);
    } else {
        if (st == INF_OK && wants_output(ctx, 1))
            st = bn_stat_output(ctx, 1, ctx->in[3], 1, NULL, 0, false, 0);
        if (st == INF_OK && wants_output(ctx, 2))
            st = bn_stat_output(ctx, 2, ctx->in[4], 1, NULL, 0, false, 0);
        if (st == INF_OK && wants_output(ctx, 3))
            st = bn_stat_output(ctx, 3, ctx->in[3], 1, NULL, 0, false, 0);
        if (st == INF_OK && wants_output(ctx, 4))
            st = bn_stat_output(ctx, 4, ctx->in[4], 1, NULL, 0, true, p->epsilon);
    }
    return st;
}

const inf__op_impl op_batchnorm = {bn_init, bn_run};

/* ======================================================================== */
/*  LayerNormalization                                                       */
/* ======================================================================== */

typedef struct ln_params {
    int64_t axis;
    float epsilon;
    inf_dtype stash;
} ln_params;

static inf_status ln_init(inf__node *node, inf__arena *arena, inf_error *err) {
    ln_params *p = inf__op_params(arena, ln_params);
    if (!p) return INF_ENOMEM;
    p->axis = inf__attr_int(node, "axis", -1);
    p->epsilon = inf__attr_float(node, "epsilon", 1e-5f);
    int64_t stash = inf__attr_int(node, "stash_type", 1);
    if (stash != INF_DTYPE_F32 && stash != INF_DTYPE_F64 && stash != INF_DTYPE_F16 &&
        stash != INF_DTYPE_BF16)
        return inf__node_error(node, err, INF_EMODEL, "stash_type %lld is not a float type",
                               (long long)stash);
    p->stash = (inf_dtype)stash;
    node->params = p;
    return INF_OK;
}

/* A parameter (Scale or B) broadcast to the normalised shape. */
typedef struct ln_param_view {
    const inf_tensor *t;
    bool dense;     /* numel == inner: index j directly */
    int nd;
    int64_t dims[INF_MAX_DIMS], strides[INF_MAX_DIMS];
} ln_param_view;

static inf_status ln_view(inf__kernel_ctx *ctx, const char *name, const inf_tensor *t,
                          const inf_tensor *x, int axis, int64_t inner, ln_param_view *v) {
    char b1[96], b2[96];
    v->t = t;
    if (!t) return INF_OK;
    if (!is_float(t->dtype))
        return inf__kernel_error(ctx, INF_ETYPE, "input %s: expected a float type, got %s", name,
                                 inf_dtype_name(t->dtype));
    int nd = x->ndim - axis;
    bool ok = t->ndim <= nd;
    for (int i = 0; ok && i < t->ndim; i++) {
        int64_t d = t->dims[t->ndim - 1 - i], xd = x->dims[x->ndim - 1 - i];
        ok = d == xd || d == 1;
    }
    if (!ok)
        return inf__kernel_error(ctx, INF_ESHAPE, "input %s %s does not broadcast to X %s from axis %d",
                                 name, inf__shape_str(t->ndim, t->dims, b1, sizeof b1),
                                 inf__shape_str(x->ndim, x->dims, b2, sizeof b2), axis);
    v->dense = inf_tensor_numel(t) == inner;
    v->nd = nd;
    memcpy(v->dims, x->dims + axis, (size_t)nd * sizeof(int64_t));
    inf__broadcast_strides(t->ndim, t->dims, nd, v->dims, v->strides);
    return INF_OK;
}

static double ln_get(const ln_param_view *v, int64_t j, double dflt) {
    if (!v->t) return dflt;
    if (v->dense) return inf__tensor_get_f64(v->t, j);
    int64_t off = 0;
    for (int d = v->nd - 1; d >= 0; d--) {
        off += (j % v->dims[d]) * v->strides[d];
        j /= v->dims[d];
    }
    return inf__tensor_get_f64(v->t, off);
}

typedef struct ln_task {
    const inf_tensor *x;
    inf_tensor *y, *mean, *inv;
    ln_param_view scale, bias;
    int64_t inner;
    double eps;
} ln_task;

static void ln_rows(void *arg, int64_t begin, int64_t end) {
    const ln_task *t = arg;
    bool fast = t->x->dtype == INF_DTYPE_F32 && t->scale.t && t->scale.dense &&
                t->scale.t->dtype == INF_DTYPE_F32 &&
                (!t->bias.t || (t->bias.dense && t->bias.t->dtype == INF_DTYPE_F32));
    const inf__vmath *vm = inf__vmath_best();
    for (int64_t r = begin; r < end; r++) {
        int64_t base = r * t->inner;
        if (fast) {
            double mean, inv;
            vm->layernorm_row((const float *)t->x->data + base, (float *)t->y->data + base, t->inner,
                              t->scale.t->data, t->bias.t ? t->bias.t->data : NULL, t->eps, &mean, &inv);
            if (t->mean) inf__tensor_set_f64(t->mean, r, mean);
            if (t->inv) inf__tensor_set_f64(t->inv, r, inv);
            continue;
        }
        double s = 0, ss = 0;
        if (t->x->dtype == INF_DTYPE_F32) {
            const float *x = (const float *)t->x->data + base;
            for (int64_t j = 0; j < t->inner; j++) s += x[j];
            double mean = t->inner ? s / (double)t->inner : 0;
            for (int64_t j = 0; j < t->inner; j++) ss += (x[j] - mean) * (x[j] - mean);
        } else {
            for (int64_t j = 0; j < t->inner; j++) s += inf__tensor_get_f64(t->x, base + j);
            double mean = t->inner ? s / (double)t->inner : 0;
            for (int64_t j = 0; j < t->inner; j++) {
                double d = inf__tensor_get_f64(t->x, base + j) - mean;
                ss += d * d;
            }
        }
        double mean = t->inner ? s / (double)t->inner : 0;
        double inv = 1.0 / sqrt((t->inner ? ss / (double)t->inner : 0) + t->eps);
        for (int64_t j = 0; j < t->inner; j++) {
            double v = (inf__tensor_get_f64(t->x, base + j) - mean) * inv;
            v = v * ln_get(&t->scale, j, 1.0) + ln_get(&t->bias, j, 0.0);
            inf__tensor_set_f64(t->y, base + j, v);
        }
        if (t->mean) inf__tensor_set_f64(t->mean, r, mean);
        if (t->inv) inf__tensor_set_f64(t->inv, r, inv);
    }
}

static inf_status ln_run(inf__kernel_ctx *ctx) {
    const ln_params *p = ctx->node->params;
    const inf_tensor *x = ctx->in[0];
    const inf_tensor *scale = ctx->n_in > 1 ? ctx->in[1] : NULL;
    const inf_tensor *bias = ctx->n_in > 2 ? ctx->in[2] : NULL;
    if (!is_float(x->dtype))
        return inf__kernel_error(ctx, INF_ETYPE, "input X: expected a float type, got %s",
                                 inf_dtype_name(x->dtype));
    if (!scale) return inf__kernel_error(ctx, INF_EMODEL, "input Scale is required");
    int axis;
    inf_status st = inf__normalize_axis(ctx, p->axis, x->ndim, &axis);
    if (st != INF_OK) return st;
    int64_t outer = 1, inner = 1;
    for (int i = 0; i < x->ndim; i++) *(i < axis ? &outer : &inner) *= x->dims[i];
    ln_task t = {x, NULL, NULL, NULL, {0}, {0}, inner, p->epsilon};
    if ((st = ln_view(ctx, "Scale", scale, x, axis, inner, &t.scale)) != INF_OK) return st;
    if ((st = ln_view(ctx, "B", bias, x, axis, inner, &t.bias)) != INF_OK) return st;
    if ((st = inf__kernel_output(ctx, 0, x->dtype, x->ndim, x->dims, &t.y)) != INF_OK) return st;
    int64_t sdims[INF_MAX_DIMS];
    for (int i = 0; i < x->ndim; i++) sdims[i] = i < axis ? x->dims[i] : 1;
    if (wants_output(ctx, 1) &&
        (st = inf__kernel_output(ctx, 1, p->stash, x->ndim, sdims, &t.mean)) != INF_OK)
        return st;
    if (wants_output(ctx, 2) &&
        (st = inf__kernel_output(ctx, 2, p->stash, x->ndim, sdims, &t.inv)) != INF_OK)
        return st;
    inf__pool_range(ctx->pool, outer, 4096 / (inner + 1) + 1, ln_rows, &t);
    return INF_OK;
}

const inf__op_impl op_layernorm = {ln_init, ln_run};
