/*
 * training.c -- reference kernels for the optimizers of the
 * ai.onnx.preview.training domain (opset 1).
 *
 * Each op takes R (learning rate, float scalar) and T (update count, int64
 * scalar), then n groups of tensors, and updates every group alike
 * (elementwise, in double):
 *   Adagrad   X.., G.., H..      -> X_new.., H_new..
 *       r = R / (1 + T * decay_factor); g = norm_coefficient * X + G;
 *       H_new = H + g^2; X_new = X - r * g / (sqrt(H_new) + epsilon)
 *       (defaults: decay_factor 0, epsilon 1e-6, norm_coefficient 0)
 *   Adam      X.., G.., V.., H.. -> X_new.., V_new.., H_new..
 *       g = norm_coefficient * X + G; V_new = alpha * V + (1 - alpha) * g;
 *       H_new = beta * H + (1 - beta) * g^2;
 *       r = T > 0 ? R * sqrt(1 - beta^T) / (1 - alpha^T) : R;
 *       X_new = (1 - norm_coefficient_post) * (X - r * V_new / (sqrt(H_new) + epsilon))
 *       (defaults: alpha 0.9, beta 0.999, epsilon 1e-6, norms 0)
 *   Momentum  X.., G.., V..      -> X_new.., V_new..
 *       g = norm_coefficient * X + G; b = T > 0 ? beta : 1;
 *       V_new = alpha * V + b * g;
 *       standard: X_new = X - R * V_new; nesterov: X_new = X - R * (g + alpha * V_new)
 *       (alpha, beta, mode, norm_coefficient required)
 * dtypes: X, G, V, H float32 or float64 (each group's tensors share a
 *   shape and dtype); R float32/float64; T int64.
 * Deviations: none known.  Gradient (the autodiff op of this domain) is
 *   not implemented.
 */
#include <math.h>
#include <string.h>

#include "ops/ops.h"

enum { OPT_ADAGRAD, OPT_ADAM, OPT_MOMENTUM };

typedef struct optim_params {
    int kind;
    int n_state;  /* state tensors per group besides X and G: 1 (H or V) or 2 (V, H) */
    double alpha, beta, epsilon, decay, norm, norm_post;
    bool nesterov;
} optim_params;

static inf_status optim_init(inf__node *node, inf__arena *arena, inf_error *err) {
    optim_params *p = inf__op_params(arena, optim_params);
    if (!p) return INF_ENOMEM;
    const char *op = node->op_type;
    p->kind = !strcmp(op, "Adagrad") ? OPT_ADAGRAD : !strcmp(op, "Adam") ? OPT_ADAM : OPT_MOMENTUM;
    p->n_state = p->kind == OPT_ADAM ? 2 : 1;
    p->norm = inf__attr_float(node, "norm_coefficient", 0);
    p->epsilon = inf__attr_float(node, "epsilon", 1e-6f);
    if (p->kind == OPT_ADAGRAD) {
        p->decay = inf__attr_float(node, "decay_factor", 0);
    } else if (p->kind == OPT_ADAM) {
        p->alpha = inf__attr_float(node, "alpha", 0.9f);
        p->beta = inf__attr_float(node, "beta", 0.999f);
        p->norm_post = inf__attr_float(node, "norm_coefficient_post", 0);
    } else {
        const char *need[3] = {"alpha", "beta", "norm_coefficient"};
        for (int i = 0; i < 3; i++)
            if (!inf__node_attr(node, need[i]))
                return inf__node_error(node, err, INF_EMODEL, "attribute %s is required", need[i]);
        p->alpha = inf__attr_float(node, "alpha", 0);
        p->beta = inf__attr_float(node, "beta", 0);
        const char *mode = inf__attr_string(node, "mode", "");
        if (!strcmp(mode, "nesterov")) p->nesterov = true;
        else if (strcmp(mode, "standard"))
            return inf__node_error(node, err, INF_EMODEL, "mode '%s' must be standard or nesterov", mode);
    }
    node->params = p;
    return INF_OK;
}

/* Groups: inputs 2.. are X[n], G[n], then n_state arrays of n. */
static inf_status check_inputs(inf__kernel_ctx *ctx, const optim_params *p, int *n_out) {
    char b1[96], b2[96];
    int per = 2 + p->n_state, n_t = ctx->n_in - 2;
    if (n_t < per || n_t % per)
        return inf__kernel_error(ctx, INF_EINVAL, "expected R, T and %d tensors per group, got %d inputs",
                                 per, ctx->n_in);
    int n = n_t / per;
    const inf_tensor *r = ctx->in[0], *t = ctx->in[1];
    if (!r || (r->dtype != INF_DTYPE_F32 && r->dtype != INF_DTYPE_F64) || inf_tensor_numel(r) != 1)
        return inf__kernel_error(ctx, INF_EINVAL, "input R: expected a float scalar");
    if (!t || t->dtype != INF_DTYPE_I64 || inf_tensor_numel(t) != 1)
        return inf__kernel_error(ctx, INF_EINVAL, "input T: expected an int64 scalar");
    for (int g = 0; g < n; g++) {
        const inf_tensor *x = ctx->in[2 + g];
        if (!x || (x->dtype != INF_DTYPE_F32 && x->dtype != INF_DTYPE_F64))
            return inf__kernel_error(ctx, INF_ETYPE, "input %d (X): expected float32 or float64", 2 + g);
        for (int k = 1; k < per; k++) {
            const inf_tensor *o = ctx->in[2 + k * n + g];
            bool same = o && o->dtype == x->dtype && o->ndim == x->ndim;
            for (int d = 0; same && d < x->ndim; d++) same = o->dims[d] == x->dims[d];
            if (!same)
                return inf__kernel_error(ctx, INF_ESHAPE, "input %d: expected %s %s like its X (input %d), got %s",
                                         2 + k * n + g, inf_dtype_name(x->dtype),
                                         inf__shape_str(x->ndim, x->dims, b1, sizeof b1), 2 + g,
                                         o ? inf__shape_str(o->ndim, o->dims, b2, sizeof b2) : "nothing");
        }
    }
    if (ctx->n_out != n * (1 + p->n_state))
        return inf__kernel_error(ctx, INF_EINVAL, "expected %d outputs for %d groups, got %d",
                                 n * (1 + p->n_state), n, ctx->n_out);
    *n_out = n;
    return INF_OK;
}

static inline double ld(const inf_tensor *t, int64_t i) {
    return t->dtype == INF_DTYPE_F32 ? ((const float *)t->data)[i] : ((const double *)t->data)[i];
}

static inline void st(inf_tensor *t, int64_t i, double v) {
    if (t->dtype == INF_DTYPE_F32) ((float *)t->data)[i] = (float)v;
    else ((double *)t->data)[i] = v;
}

static inf_status optim_run(inf__kernel_ctx *ctx) {
    const optim_params *p = ctx->node->params;
    int n = 0;
    inf_status s = check_inputs(ctx, p, &n);
    if (s != INF_OK) return s;
    double r = inf__tensor_get_f64(ctx->in[0], 0);
    int64_t t = inf__tensor_get_i64(ctx->in[1], 0);
    if (p->kind == OPT_ADAGRAD) r /= 1 + (double)t * p->decay;
    if (p->kind == OPT_ADAM && t > 0) r *= sqrt(1 - pow(p->beta, (double)t)) / (1 - pow(p->alpha, (double)t));
    double b = t > 0 ? p->beta : 1;
    for (int g = 0; g < n; g++) {
        const inf_tensor *x = ctx->in[2 + g], *gr = ctx->in[2 + n + g], *s1 = ctx->in[2 + 2 * n + g];
        const inf_tensor *s2 = p->n_state == 2 ? ctx->in[2 + 3 * n + g] : NULL;
        inf_tensor *xo, *s1o, *s2o = NULL;
        if ((s = inf__kernel_output(ctx, g, x->dtype, x->ndim, x->dims, &xo)) != INF_OK) return s;
        if ((s = inf__kernel_output(ctx, n + g, x->dtype, x->ndim, x->dims, &s1o)) != INF_OK) return s;
        if (s2 && (s = inf__kernel_output(ctx, 2 * n + g, x->dtype, x->ndim, x->dims, &s2o)) != INF_OK)
            return s;
        for (int64_t i = 0, m = inf_tensor_numel(x); i < m; i++) {
            double xv = ld(x, i), gv = p->norm * xv + ld(gr, i);
            if (p->kind == OPT_ADAGRAD) {
                double h = ld(s1, i) + gv * gv;
                st(s1o, i, h);
                st(xo, i, xv - r * gv / (sqrt(h) + p->epsilon));
            } else if (p->kind == OPT_ADAM) {
                double v = p->alpha * ld(s1, i) + (1 - p->alpha) * gv;
                double h = p->beta * ld(s2, i) + (1 - p->beta) * gv * gv;
                st(s1o, i, v);
                st(s2o, i, h);
                st(xo, i, (1 - p->norm_post) * (xv - r * v / (sqrt(h) + p->epsilon)));
            } else {
                double v = p->alpha * ld(s1, i) + b * gv;
                st(s1o, i, v);
                st(xo, i, p->nesterov ? xv - r * (gv + p->alpha * v) : xv - r * v);
            }
        }
    }
    return INF_OK;
}

const inf__op_impl op_optimizer = {optim_init, optim_run};
