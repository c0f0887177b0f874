/*
 * loss.c -- the ONNX loss functions, computed directly (not through their
 * function-body expansions):
 *
 *   NegativeLogLikelihoodLoss  opsets 12-17
 *   SoftmaxCrossEntropyLoss    opsets 12-17
 *
 * Inputs: scores/log-probabilities of shape [N, C, d1..dk] (float16, bfloat16,
 * float32, float64), a target of shape [N, d1..dk] (int32 or int64) with
 * values in [0, C) or equal to ignore_index, and optional per-class weights
 * [C] of the input's type.  Attributes: reduction ("mean" default, "sum",
 * "none") and ignore_index (when present, matching targets contribute 0 loss
 * and 0 weight).
 *
 * For each position, loss = -w[target] * logp[n, target, d] (w = 1 without
 * weights).  "none" returns these with the target's shape; "sum" adds them;
 * "mean" divides the sum by the sum of the weights used (the element count
 * without weights and ignore_index), as the ONNX reference does.
 * SoftmaxCrossEntropyLoss first takes logp = log_softmax(scores) along axis
 * 1, and returns it as the optional second output log_prob.
 *
 * Accumulation is in double; results are rounded to the input's type.
 */
#include <math.h>
#include <string.h>

#include "ops/ops.h"

enum { REDUCE_NONE, REDUCE_SUM, REDUCE_MEAN };

typedef struct loss_params {
    int reduction;
    bool has_ignore;
    int64_t ignore_index;
} loss_params;

static inf_status loss_init(inf__node *node, inf__arena *arena, inf_error *err) {
    loss_params *p = inf__op_params(arena, loss_params);
    if (!p) return INF_ENOMEM;
    const char *r = inf__attr_string(node, "reduction", "mean");
    if (!strcmp(r, "none")) p->reduction = REDUCE_NONE;
    else if (!strcmp(r, "sum")) p->reduction = REDUCE_SUM;
    else if (!strcmp(r, "mean")) p->reduction = REDUCE_MEAN;
    else return inf__node_error(node, err, INF_EMODEL, "attribute reduction must be none, sum or mean, got '%s'", r);
    p->has_ignore = inf__node_attr(node, "ignore_index") != NULL;
    p->ignore_index = inf__attr_int(node, "ignore_index", 0);
    node->params = p;
    return INF_OK;
}

/* The input seen as [N, C, D] with D the product of the trailing dims. */
typedef struct loss_shape {
    int64_t n, c, d;
} loss_shape;

/* Checks scores, target and weight (input 2, optional) against each other. */
static inf_status loss_check(inf__kernel_ctx *ctx, loss_shape *sh) {
    const inf_tensor *x = ctx->n_in > 0 ? ctx->in[0] : NULL;
    const inf_tensor *t = ctx->n_in > 1 ? ctx->in[1] : NULL;
    const inf_tensor *w = ctx->n_in > 2 ? ctx->in[2] : NULL;
    char a[160], b[160];
    if (!x || x->kind != INF_KIND_TENSOR || !inf__dtype_is_float(x->dtype) || x->ndim < 2)
        return inf__kernel_error(ctx, INF_ETYPE, "input 0: expected a float tensor of rank >= 2 [N, C, ...]");
    if (!t || t->kind != INF_KIND_TENSOR || (t->dtype != INF_DTYPE_I64 && t->dtype != INF_DTYPE_I32))
        return inf__kernel_error(ctx, INF_ETYPE, "input 1 (target): expected an int32 or int64 tensor");
    bool ok = t->ndim == x->ndim - 1 && t->dims[0] == x->dims[0];
    for (int k = 1; ok && k < t->ndim; k++) ok = t->dims[k] == x->dims[k + 1];
    if (!ok)
        return inf__kernel_error(ctx, INF_ESHAPE, "input 1 (target) has shape %s; input 0 is %s, so expected [N, d1..dk]",
                                 inf__shape_str(t->ndim, t->dims, a, sizeof a), inf__shape_str(x->ndim, x->dims, b, sizeof b));
    if (w && (w->kind != INF_KIND_TENSOR || w->dtype != x->dtype || w->ndim != 1 || w->dims[0] != x->dims[1]))
        return inf__kernel_error(ctx, INF_ESHAPE, "input 2 (weight): expected %s[%lld], got %s", inf_dtype_name(x->dtype),
                                 (long long)x->dims[1], inf_tensor_describe(w, a, sizeof a));
    sh->n = x->dims[0];
    sh->c = x->dims[1];
    sh->d = 1;
    for (int k = 2; k < x->ndim; k++) sh->d *= x->dims[k];
    return INF_OK;
}

/* Log-probabilities: a tensor (NLL's input) or a double array (SCE's). */
typedef struct logp_src {
    const inf_tensor *t;
    const double *v;
} logp_src;

static double logp_at(const logp_src *s, int64_t i) { return s->v ? s->v[i] : inf__tensor_get_f64(s->t, i); }

/* Computes output 0 from the log-probabilities. */
static inf_status loss_compute(inf__kernel_ctx *ctx, const loss_shape *sh, const logp_src *logp) {
    const loss_params *p = ctx->node->params;
    const inf_tensor *x = ctx->in[0], *target = ctx->in[1];
    const inf_tensor *weight = ctx->n_in > 2 ? ctx->in[2] : NULL;
    inf_tensor *y;
    inf_status st = p->reduction == REDUCE_NONE ? inf__kernel_output(ctx, 0, x->dtype, target->ndim, target->dims, &y)
                                                : inf__kernel_output(ctx, 0, x->dtype, 0, NULL, &y);
    if (st != INF_OK) return st;
    double sum = 0, weight_sum = 0;
    for (int64_t n = 0; n < sh->n; n++)
        for (int64_t d = 0; d < sh->d; d++) {
            int64_t i = n * sh->d + d, cls = inf__tensor_get_i64(target, i);
            double w = 0, loss = 0;
            if (!p->has_ignore || cls != p->ignore_index) {
                if (cls < 0 || cls >= sh->c)
                    return inf__kernel_error(ctx, INF_ERANGE, "input 1 (target): element %lld is %lld, outside [0, %lld)",
                                             (long long)i, (long long)cls, (long long)sh->c);
                w = weight ? inf__tensor_get_f64(weight, cls) : 1.0;
                loss = -w * logp_at(logp, (n * sh->c + cls) * sh->d + d);
            }
            if (p->reduction == REDUCE_NONE) inf__tensor_set_f64(y, i, loss);
            sum += loss;
            weight_sum += w;
        }
    if (p->reduction == REDUCE_SUM) inf__tensor_set_f64(y, 0, sum);
    else if (p->reduction == REDUCE_MEAN) inf__tensor_set_f64(y, 0, sum / weight_sum);
    return INF_OK;
}

static inf_status nll_run(inf__kernel_ctx *ctx) {
    loss_shape sh;
    inf_status st = loss_check(ctx, &sh);
    if (st != INF_OK) return st;
    logp_src src = {ctx->in[0], NULL};
    return loss_compute(ctx, &sh, &src);
}

/* logp[n, :, d] = log_softmax(x[n, :, d]); also written to log_prob if given. */
static void log_softmax(const inf_tensor *x, const loss_shape *sh, double *logp, inf_tensor *log_prob) {
    for (int64_t n = 0; n < sh->n; n++)
        for (int64_t d = 0; d < sh->d; d++) {
            int64_t base = n * sh->c * sh->d + d;
            double max = -INFINITY, sum = 0;
            for (int64_t c = 0; c < sh->c; c++) {
                double v = inf__tensor_get_f64(x, base + c * sh->d);
                logp[base + c * sh->d] = v;
                if (v > max) max = v;
            }
            for (int64_t c = 0; c < sh->c; c++) sum += exp(logp[base + c * sh->d] - max);
            double lse = max + log(sum);
            for (int64_t c = 0; c < sh->c; c++) {
                int64_t i = base + c * sh->d;
                logp[i] -= lse;
                if (log_prob) inf__tensor_set_f64(log_prob, i, logp[i]);
            }
        }
}

static inf_status sce_run(inf__kernel_ctx *ctx) {
    loss_shape sh;
    inf_status st = loss_check(ctx, &sh);
    if (st != INF_OK) return st;
    const inf_tensor *x = ctx->in[0];
    inf_tensor *log_prob = NULL;
    if (ctx->n_out > 1 && ctx->node->outputs[1] >= 0 &&
        (st = inf__kernel_output(ctx, 1, x->dtype, x->ndim, x->dims, &log_prob)) != INF_OK)
        return st;
    double *logp = inf__kernel_scratch(ctx, (size_t)inf_tensor_numel(x) * sizeof(double));
    if (!logp) return INF_ENOMEM;
    log_softmax(x, &sh, logp, log_prob);
    logp_src src = {NULL, logp};
    return loss_compute(ctx, &sh, &src);
}

const inf__op_impl op_nll_loss = {loss_init, nll_run};
const inf__op_impl op_sce_loss = {loss_init, sce_run};
