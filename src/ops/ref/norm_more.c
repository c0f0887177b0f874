/*
 * norm_more.c -- reference kernels for the remaining normalisation and
 * Lp-pooling operators.
 *
 * ONNX ops:
 *   InstanceNormalization  opsets 1-17: per (n, c) plane of X [N, C, D...]
 *       y = scale[c] * (x - mean) / sqrt(var + epsilon) + B[c] (population
 *       variance, epsilon default 1e-5).
 *   LRN                    opsets 1-17: y = x / (bias + alpha / size * sum of
 *       x^2 over channels [c - floor((size-1)/2), c + ceil((size-1)/2)])^beta.
 *   MeanVarianceNormalization  opsets 9-17: axes (default [0, 2, 3]),
 *       y = (x - mean) / (sqrt(mean(x^2) - mean^2) + 1e-9).
 *   LpNormalization        opsets 1-17: axis (default -1), p 1 or 2,
 *       y = x / ||x||_p along the axis (0 where the norm is 0).
 *   LpPool                 opsets 1-26: kernel_shape, strides, pads,
 *       auto_pad, p (float in opset 1, int later; default 2),
 *       y = (sum over the window of |x|^p)^(1/p); padding adds nothing.
 *   GlobalLpPool           opsets 1-17: the same over all spatial dims.
 * dtypes: float32, float64, float16 (statistics and sums in double).
 *       From opset 18 also dilations and ceil_mode (the output size
 *       rounds up, but a last window that would start in the end padding
 *       is dropped, as onnxruntime and PyTorch do).
 * Deviations: none known.
 */
#include <math.h>
#include <string.h>

#include "ops/ops.h"

/* ---- shared helpers ---- */

static inf_status check_float(inf__kernel_ctx *ctx, const char *name, const inf_tensor *t) {
    inf_dtype dt = t->dtype;
    if (dt != INF_DTYPE_F32 && dt != INF_DTYPE_F64 && dt != INF_DTYPE_F16)
        return inf__kernel_error(ctx, INF_ETYPE, "input %s: expected float32, float64 or float16, got %s",
                                 name, inf_dtype_name(dt));
    return INF_OK;
}

static inline double load(const inf_tensor *t, int64_t i) {
    if (t->dtype == INF_DTYPE_F32) return ((const float *)t->data)[i];
    return inf__tensor_get_f64(t, i);
}

static inline void store(inf_tensor *t, int64_t i, double v) {
    if (t->dtype == INF_DTYPE_F32) ((float *)t->data)[i] = (float)v;
    else inf__tensor_set_f64(t, i, v);
}

/* X must be [N, C, ...] with at least min_rank dims. */
static inf_status check_nc(inf__kernel_ctx *ctx, const inf_tensor *x, int min_rank) {
    char buf[96];
    inf_status st = check_float(ctx, "X", x);
    if (st != INF_OK) return st;
    if (x->ndim < min_rank)
        return inf__kernel_error(ctx, INF_ESHAPE, "input X: expected rank >= %d [N, C, ...], got %s",
                                 min_rank, inf__shape_str(x->ndim, x->dims, buf, sizeof buf));
    return INF_OK;
}

static int64_t spatial_size(const inf_tensor *x) {
    int64_t n = 1;
    for (int i = 2; i < x->ndim; i++) n *= x->dims[i];
    return n;
}

/* ======================================================================== */
/*  InstanceNormalization                                                    */
/* ======================================================================== */

typedef struct eps_params {
    double epsilon;
} eps_params;

static inf_status instnorm_init(inf__node *node, inf__arena *arena, inf_error *err) {
    eps_params *p = inf__op_params(arena, eps_params);
    if (!p) return INF_ENOMEM;
    p->epsilon = inf__attr_float(node, "epsilon", 1e-5f);
    if (!(p->epsilon >= 0))
        return inf__node_error(node, err, INF_EMODEL, "epsilon = %g, must be >= 0", p->epsilon);
    node->params = p;
    return INF_OK;
}

static inf_status check_channel_vec(inf__kernel_ctx *ctx, const char *name, const inf_tensor *t,
                                    const inf_tensor *x) {
    char buf[96];
    if (!t) return inf__kernel_error(ctx, INF_EINVAL, "input %s is required", name);
    if (t->dtype != x->dtype)
        return inf__kernel_error(ctx, INF_ETYPE, "input %s: expected X's dtype %s, got %s", name,
                                 inf_dtype_name(x->dtype), inf_dtype_name(t->dtype));
    if (t->ndim != 1 || t->dims[0] != x->dims[1])
        return inf__kernel_error(ctx, INF_ESHAPE, "input %s: expected shape [%lld] (X's channels), got %s",
                                 name, (long long)x->dims[1],
                                 inf__shape_str(t->ndim, t->dims, buf, sizeof buf));
    return INF_OK;
}

static inf_status instnorm_run(inf__kernel_ctx *ctx) {
    const eps_params *p = ctx->node->params;
    const inf_tensor *x = ctx->in[0];
    const inf_tensor *scale = ctx->n_in > 1 ? ctx->in[1] : NULL, *bias = ctx->n_in > 2 ? ctx->in[2] : NULL;
    inf_status st = check_nc(ctx, x, 3);
    if (st == INF_OK) st = check_channel_vec(ctx, "scale", scale, x);
    if (st == INF_OK) st = check_channel_vec(ctx, "B", bias, x);
    if (st != INF_OK) return st;
    inf_tensor *y;
    if ((st = inf__kernel_output(ctx, 0, x->dtype, x->ndim, x->dims, &y)) != INF_OK) return st;
    int64_t c = x->dims[1], inner = spatial_size(x), planes = x->dims[0] * c;
    for (int64_t pl = 0; pl < planes; pl++) {
        int64_t base = pl * inner;
        double sum = 0, sq = 0;
        for (int64_t j = 0; j < inner; j++) sum += load(x, base + j);
        double mean = inner ? sum / (double)inner : 0;
        for (int64_t j = 0; j < inner; j++) {
            double d = load(x, base + j) - mean;
            sq += d * d;
        }
        double var = inner ? sq / (double)inner : 0;
        double k = load(scale, pl % c) / sqrt(var + p->epsilon), b = load(bias, pl % c);
        for (int64_t j = 0; j < inner; j++) store(y, base + j, (load(x, base + j) - mean) * k + b);
    }
    return INF_OK;
}

const inf__op_impl op_instance_norm = {instnorm_init, instnorm_run};

/* ======================================================================== */
/*  LRN                                                                      */
/* ======================================================================== */

typedef struct lrn_params {
    double alpha, beta, bias;
    int64_t size;
} lrn_params;

static inf_status lrn_init(inf__node *node, inf__arena *arena, inf_error *err) {
    lrn_params *p = inf__op_params(arena, lrn_params);
    if (!p) return INF_ENOMEM;
    p->alpha = inf__attr_float(node, "alpha", 1e-4f);
    p->beta = inf__attr_float(node, "beta", 0.75f);
    p->bias = inf__attr_float(node, "bias", 1.0f);
    p->size = inf__attr_int(node, "size", 0);
    if (p->size < 1)
        return inf__node_error(node, err, INF_EMODEL, "attribute size is required and must be >= 1, got %lld",
                               (long long)p->size);
    node->params = p;
    return INF_OK;
}

static inf_status lrn_run(inf__kernel_ctx *ctx) {
    const lrn_params *p = ctx->node->params;
    const inf_tensor *x = ctx->in[0];
    inf_status st = check_nc(ctx, x, 2);
    if (st != INF_OK) return st;
    inf_tensor *y;
    if ((st = inf__kernel_output(ctx, 0, x->dtype, x->ndim, x->dims, &y)) != INF_OK) return st;
    int64_t n = x->dims[0], c = x->dims[1], inner = spatial_size(x);
    int64_t before = (p->size - 1) / 2, after = p->size / 2; /* floor and ceil of (size-1)/2 */
    for (int64_t b = 0; b < n; b++)
        for (int64_t ch = 0; ch < c; ch++) {
            int64_t lo = ch - before < 0 ? 0 : ch - before;
            int64_t hi = ch + after >= c ? c - 1 : ch + after;
            for (int64_t j = 0; j < inner; j++) {
                double sq = 0;
                for (int64_t k = lo; k <= hi; k++) {
                    double v = load(x, (b * c + k) * inner + j);
                    sq += v * v;
                }
                int64_t at = (b * c + ch) * inner + j;
                store(y, at, load(x, at) / pow(p->bias + p->alpha / (double)p->size * sq, p->beta));
            }
        }
    return INF_OK;
}

const inf__op_impl op_lrn = {lrn_init, lrn_run};

/* ======================================================================== */
/*  MeanVarianceNormalization                                                */
/* ======================================================================== */

typedef struct mvn_params {
    int n_axes;
    const int64_t *axes; /* NULL: [0, 2, 3] */
} mvn_params;

static inf_status mvn_init(inf__node *node, inf__arena *arena, inf_error *err) {
    (void)err;
    mvn_params *p = inf__op_params(arena, mvn_params);
    if (!p) return INF_ENOMEM;
    p->axes = inf__attr_ints(node, "axes", &p->n_axes);
    node->params = p;
    return INF_OK;
}

static inf_status mvn_run(inf__kernel_ctx *ctx) {
    static const int64_t default_axes[3] = {0, 2, 3};
    const mvn_params *p = ctx->node->params;
    const inf_tensor *x = ctx->in[0];
    inf_status st = check_float(ctx, "X", x);
    if (st != INF_OK) return st;
    const int64_t *axes = p->axes ? p->axes : default_axes;
    int n_axes = p->axes ? p->n_axes : 3;
    bool reduced[INF_MAX_DIMS] = {false};
    for (int i = 0; i < n_axes; i++) {
        int a;
        if ((st = inf__normalize_axis(ctx, axes[i], x->ndim, &a)) != INF_OK) return st;
        reduced[a] = true;
    }
    /* group index of an element: its position with the reduced axes dropped */
    int64_t groups = 1, count = 1;
    for (int i = 0; i < x->ndim; i++) {
        if (reduced[i]) count *= x->dims[i];
        else groups *= x->dims[i];
    }
    inf_tensor *y;
    if ((st = inf__kernel_output(ctx, 0, x->dtype, x->ndim, x->dims, &y)) != INF_OK) return st;
    int64_t n = inf_tensor_numel(x);
    if (n == 0) return INF_OK;
    double *sum = inf__kernel_scratch(ctx, (size_t)(2 * groups) * sizeof(double));
    if (!sum) return INF_ENOMEM;
    double *sq = sum + groups;
    memset(sum, 0, (size_t)(2 * groups) * sizeof(double));
    int64_t idx[INF_MAX_DIMS] = {0};
    for (int pass = 0; pass < 2; pass++) {
        memset(idx, 0, sizeof idx);
        for (int64_t i = 0; i < n; i++) {
            int64_t g = 0;
            for (int d = 0; d < x->ndim; d++)
                if (!reduced[d]) g = g * x->dims[d] + idx[d];
            double v = load(x, i);
            if (pass == 0) {
                sum[g] += v, sq[g] += v * v;
            } else {
                double mean = sum[g] / (double)count, var = sq[g] / (double)count - mean * mean;
                store(y, i, (v - mean) / (sqrt(var > 0 ? var : 0) + 1e-9));
            }
            for (int d = x->ndim - 1; d >= 0 && ++idx[d] == x->dims[d]; d--) idx[d] = 0;
        }
    }
    return INF_OK;
}

const inf__op_impl op_mvn = {mvn_init, mvn_run};

/* ======================================================================== */
/*  LpNormalization                                                          */
/* ======================================================================== */

typedef struct lpnorm_params {
    int64_t axis, p;
} lpnorm_params;

static inf_status lpnorm_init(inf__node *node, inf__arena *arena, inf_error *err) {
    lpnorm_params *p = inf__op_params(arena, lpnorm_params);
    if (!p) return INF_ENOMEM;
    p->axis = inf__attr_int(node, "axis", -1);
    p->p = inf__attr_int(node, "p", 2);
    if (p->p != 1 && p->p != 2)
        return inf__node_error(node, err, INF_EMODEL, "p = %lld, must be 1 or 2", (long long)p->p);
    node->params = p;
    return INF_OK;
}

static inf_status lpnorm_run(inf__kernel_ctx *ctx) {
    const lpnorm_params *p = ctx->node->params;
    const inf_tensor *x = ctx->in[0];
    inf_status st = check_float(ctx, "input", x);
    if (st != INF_OK) return st;
    int axis;
    if ((st = inf__normalize_axis(ctx, p->axis, x->ndim > 0 ? x->ndim : 1, &axis)) != INF_OK) return st;
    inf_tensor *y;
    if ((st = inf__kernel_output(ctx, 0, x->dtype, x->ndim, x->dims, &y)) != INF_OK) return st;
    int64_t outer = 1, len = x->ndim ? x->dims[axis] : 1, inner = 1;
    for (int i = 0; i < axis; i++) outer *= x->dims[i];
    for (int i = axis + 1; i < x->ndim; i++) inner *= x->dims[i];
    for (int64_t o = 0; o < outer; o++)
        for (int64_t j = 0; j < inner; j++) {
            int64_t base = o * len * inner + j;
            double norm = 0;
            for (int64_t k = 0; k < len; k++) {
                double v = load(x, base + k * inner);
                norm += p->p == 1 ? fabs(v) : v * v;
            }
            if (p->p == 2) norm = sqrt(norm);
            for (int64_t k = 0; k < len; k++)
                store(y, base + k * inner, norm > 0 ? load(x, base + k * inner) / norm : 0);
        }
    return INF_OK;
}

const inf__op_impl op_lp_norm = {lpnorm_init, lpnorm_run};

/* ======================================================================== */
/*  LpPool, GlobalLpPool                                                     */
/* ======================================================================== */

enum { AUTO_NOTSET, AUTO_SAME_UPPER, AUTO_SAME_LOWER, AUTO_VALID };
#define MAX_SP (INF_MAX_DIMS - 2)

typedef struct lppool_params {
    double p;
    bool global;
    int auto_pad;
    bool ceil_mode;
    int n_kernel, n_strides, n_pads, n_dilations;
    const int64_t *kernel, *strides, *pads, *dilations;
} lppool_params;

static inf_status lppool_init(inf__node *node, inf__arena *arena, inf_error *err) {
    lppool_params *p = inf__op_params(arena, lppool_params);
    if (!p) return INF_ENOMEM;
    p->global = !strcmp(node->op_type, "GlobalLpPool");
    p->p = inf__attr_float(node, "p", 2.0f);
    if (!(p->p > 0))
        return inf__node_error(node, err, INF_EMODEL, "p = %g, must be > 0", p->p);
    node->params = p;
    if (p->global) return INF_OK;
    const char *ap = inf__attr_string(node, "auto_pad", "NOTSET");
    if (!strcmp(ap, "NOTSET")) p->auto_pad = AUTO_NOTSET;
    else if (!strcmp(ap, "SAME_UPPER")) p->auto_pad = AUTO_SAME_UPPER;
    else if (!strcmp(ap, "SAME_LOWER")) p->auto_pad = AUTO_SAME_LOWER;
    else if (!strcmp(ap, "VALID")) p->auto_pad = AUTO_VALID;
    else return inf__node_error(node, err, INF_EMODEL, "unknown auto_pad '%s'", ap);
    p->kernel = inf__attr_ints(node, "kernel_shape", &p->n_kernel);
    p->strides = inf__attr_ints(node, "strides", &p->n_strides);
    p->pads = inf__attr_ints(node, "pads", &p->n_pads);
    p->dilations = inf__attr_ints(node, "dilations", &p->n_dilations);
    p->ceil_mode = inf__attr_int(node, "ceil_mode", 0) != 0;
    if ((p->dilations || p->ceil_mode) && node->opset < 18)
        return inf__node_error(node, err, INF_EMODEL, "dilations and ceil_mode are attributes of opset 18+, the model "
                               "imports %d", node->opset);
    if (p->n_dilations && p->n_dilations != p->n_kernel)
        return inf__node_error(node, err, INF_EMODEL, "dilations need %d values (kernel_shape has %d)", p->n_kernel,
                               p->n_kernel);
    if (p->n_kernel < 1 || p->n_kernel > MAX_SP)
        return inf__node_error(node, err, INF_EMODEL, "attribute kernel_shape is required (1 to %d values)",
                               MAX_SP);
    if ((p->n_strides && p->n_strides != p->n_kernel) || (p->n_pads && p->n_pads != 2 * p->n_kernel))
        return inf__node_error(node, err, INF_EMODEL, "strides need %d values and pads %d (kernel_shape has %d)",
                               p->n_kernel, 2 * p->n_kernel, p->n_kernel);
    inf_status st;
    if ((st = inf__check_window_attrs(node, err, false)) != INF_OK) return st;
    return INF_OK;
}

typedef struct lp_geom {
    int nd;
    int64_t in[MAX_SP], out[MAX_SP], k[MAX_SP], s[MAX_SP], pb[MAX_SP], d[MAX_SP];
    int64_t in_total, out_total;
} lp_geom;

static inf_status lppool_geometry(inf__kernel_ctx *ctx, const lppool_params *p, const inf_tensor *x,
                                  lp_geom *g) {
    char buf[96];
    g->nd = x->ndim - 2;
    if (!p->global && g->nd != p->n_kernel)
        return inf__kernel_error(ctx, INF_ESHAPE, "input X %s: expected rank %d (kernel_shape has %d values)",
                                 inf__shape_str(x->ndim, x->dims, buf, sizeof buf), p->n_kernel + 2,
                                 p->n_kernel);
    g->in_total = g->out_total = 1;
    for (int i = 0; i < g->nd; i++) {
        int64_t in = x->dims[2 + i];
        int64_t k = p->global ? in : p->kernel[i], s = !p->global && p->n_strides ? p->strides[i] : 1;
        int64_t d = !p->global && p->n_dilations ? p->dilations[i] : 1, span_k = (k - 1) * d + 1;
        int64_t pb = 0, pe = 0, out;
        if (p->auto_pad == AUTO_SAME_UPPER || p->auto_pad == AUTO_SAME_LOWER) {
            out = (in + s - 1) / s;
            int64_t total = (out - 1) * s + span_k - in;
            if (total < 0) total = 0;
            pb = p->auto_pad == AUTO_SAME_UPPER ? total / 2 : total - total / 2;
        } else {
            if (p->auto_pad == AUTO_NOTSET && p->n_pads) pb = p->pads[i], pe = p->pads[g->nd + i];
            int64_t span = in + pb + pe - span_k;
            out = span < 0 ? 0 : (p->ceil_mode ? (span + s - 1) / s : span / s) + 1;
            if (p->ceil_mode && out > 1 && (out - 1) * s >= in + pb) out--; /* window starting in the end pad */
        }
        if (out < 1 && !p->global)
            return inf__kernel_error(ctx, INF_ESHAPE, "input X %s: spatial dim %d is smaller than the kernel (%lld)",
                                     inf__shape_str(x->ndim, x->dims, buf, sizeof buf), i, (long long)k);
        if (p->global) out = 1;
        g->in[i] = in, g->out[i] = out, g->k[i] = k, g->s[i] = s, g->pb[i] = pb, g->d[i] = d;
        g->in_total *= in, g->out_total *= out;
    }
    return INF_OK;
}

/* (sum over the window at output position opos of |x|^p)^(1/p) for one plane */
static double lp_window(const lp_geom *g, double pw, const inf_tensor *x, int64_t plane_off,
                        const int64_t *opos) {
    /* kernel taps j in [lo, hi) whose input index start + j * d is inside */
    int64_t lo[MAX_SP], hi[MAX_SP], kk[MAX_SP], start[MAX_SP];
    for (int i = 0; i < g->nd; i++) {
        int64_t d = g->d[i];
        start[i] = opos[i] * g->s[i] - g->pb[i];
        lo[i] = start[i] < 0 ? (-start[i] + d - 1) / d : 0;
        hi[i] = start[i] >= g->in[i] ? 0 : (g->in[i] - 1 - start[i]) / d + 1;
        if (hi[i] > g->k[i]) hi[i] = g->k[i];
        if (lo[i] >= hi[i]) return 0;
        kk[i] = lo[i];
    }
    double sum = 0;
    for (;;) {
        int64_t off = 0;
        for (int i = 0; i < g->nd; i++) off = off * g->in[i] + start[i] + kk[i] * g->d[i];
        double v = fabs(load(x, plane_off + off));
        sum += pw == 2 ? v * v : pow(v, pw);
        int d = g->nd - 1;
        for (; d >= 0 && ++kk[d] == hi[d]; d--) kk[d] = lo[d];
        if (d < 0) break;
    }
    return pw == 2 ? sqrt(sum) : pow(sum, 1.0 / pw);
}

static inf_status lppool_run(inf__kernel_ctx *ctx) {
    const lppool_params *p = ctx->node->params;
    const inf_tensor *x = ctx->in[0];
    inf_status st = check_nc(ctx, x, 3);
    if (st != INF_OK) return st;
    lp_geom g = {0};
    for (int i = 0; i < MAX_SP; i++) g.d[i] = 1;
    if ((st = lppool_geometry(ctx, p, x, &g)) != INF_OK) return st;
    int64_t dims[INF_MAX_DIMS] = {x->dims[0], x->dims[1]};
    for (int i = 0; i < g.nd; i++) dims[2 + i] = g.out[i];
    inf_tensor *y;
    if ((st = inf__kernel_output(ctx, 0, x->dtype, x->ndim, dims, &y)) != INF_OK) return st;
    int64_t planes = x->dims[0] * x->dims[1];
    for (int64_t pl = 0; pl < planes; pl++) {
        int64_t opos[MAX_SP] = {0};
        for (int64_t o = 0; o < g.out_total; o++) {
            store(y, pl * g.out_total + o, lp_window(&g, p->p, x, pl * g.in_total, opos));
            for (int d = g.nd - 1; d >= 0 && ++opos[d] == g.out[d]; d--) opos[d] = 0;
        }
    }
    return INF_OK;
}

const inf__op_impl op_lp_pool = {lppool_init, lppool_run};
