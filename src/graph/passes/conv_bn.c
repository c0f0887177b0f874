/*
 * conv_bn.c -- a Conv followed by an inference-mode BatchNormalization with
 * constant parameters becomes one Conv with the normalisation folded into
 * its weights and bias, so the per-channel scale and shift cost nothing at
 * run time.  Eval-mode PyTorch exports fold this themselves; models from
 * other exporters and from the ONNX model zoo (ResNet-50 v1, MobileNet v2)
 * keep BatchNormalization nodes after every Conv.
 *
 * PATTERN:
 *     c = Conv(x, w [, b])                  w constant float32 [M, C/g, k...],
 *                                           b constant [M] if present, c read
 *                                           only by the BatchNormalization
 *     y = BatchNormalization(c, scale, bn_b, mean, var)
 *                                           all four constant float32 [M],
 *                                           inference mode (no training_mode,
 *                                           no `spatial` = 0), one output
 * ->  y = Conv(x, w', bn_b')   with the Conv's attributes, where per output
 *     channel m:  s = scale[m] / sqrt(var[m] + epsilon)
 *                 w'[m, ...] = w[m, ...] * s
 *                 bn_b'[m]   = (b[m] - mean[m]) * s + bn_b[m]
 *
 * WHY IT IS SAFE: BatchNormalization is affine per channel, and so is the
 * Conv in its weights, so the composition is exact in real arithmetic; in
 * float32 the result differs from the two nodes by rounding only (s and the
 * new bias are computed in double, then rounded once).  w and bn_b get new
 * constant tensors only when nothing else reads them (one consumer, not a
 * graph input the caller could override); the rewritten Conv sits where the
 * BatchNormalization was, so the order stays topological.  The old Conv's W
 * packing stays in the model arena unused (the arena frees nothing before
 * the model).
 */
#include <math.h>
#include <string.h>

#include "graph/passes/passes.h"
#include "ops/ops.h"

/* Is value v a constant float32 tensor of exactly m elements? */
static bool const_vector(const inf__pass_ctx *pc, int v, int64_t m) {
    const inf_tensor *t = inf__pass_const_of(pc, v, INF_DTYPE_F32);
    return t && inf_tensor_numel(t) == m;
}

/* The data of value v, a float32 constant foldable_conv has checked. */
static const float *const_data(const inf__pass_ctx *pc, int v) {
    return inf__pass_const_of(pc, v, INF_DTYPE_F32)->data;
}

/* Is value v a constant float32 tensor of exactly m elements that only one
 * node reads and the caller cannot override? */
static bool private_vector(const inf__pass_ctx *pc, int v, int64_t m) {
    if (!const_vector(pc, v, m) || !inf__pass_uses(pc, v, 1))
        return false;
    for (int i = 0; i < pc->g->n_inputs; i++)
        if (pc->g->inputs[i] == v) return false;
    return true;
}

static bool inference_mode(const inf__node *bn) {
    if (bn->n_inputs != 5 || bn->n_outputs < 1) return false;
    for (int k = 1; k < bn->n_outputs; k++)
        if (bn->outputs[k] >= 0) return false;
    if (bn->opset >= 14 && inf__attr_int(bn, "training_mode", 0) != 0) return false;
    return bn->opset >= 9 || inf__attr_int(bn, "spatial", 1) != 0;
}

/* The Conv feeding BatchNormalization node `bn` that can absorb it, or -1. */
static int foldable_conv(const inf__pass_ctx *pc, const inf__node *bn) {
    if (!inference_mode(bn)) return -1;
    int ci = inf__pass_producer(pc, bn->inputs[0], "Conv");
    if (ci < 0 || !inf__pass_uses(pc, bn->inputs[0], 1)) return -1;
    const inf__node *conv = &pc->g->nodes[ci];
    if (conv->n_outputs != 1 || conv->n_inputs < 2 || conv->n_inputs > 3) return -1;
    const inf_tensor *w = inf__pass_const_of(pc, conv->inputs[1], INF_DTYPE_F32);
    if (!w || w->ndim < 3 || !private_vector(pc, conv->inputs[1], inf_tensor_numel(w))) return -1;
    int64_t m = w->dims[0];
    if (conv->n_inputs == 3 && conv->inputs[2] >= 0 && !const_vector(pc, conv->inputs[2], m))
        return -1;
    if (!private_vector(pc, bn->inputs[2], m)) return -1; /* bn_b becomes the new bias */
    for (int i = 1; i < 5; i++)
        if (i != 2 && !const_vector(pc, bn->inputs[i], m))
            return -1;
    return ci;
}

/* Replaces value v's constant with t (the model owns it from here). */
static void replace_constant(inf__pass_ctx *pc, int v, inf_tensor *t) {
    inf_tensor_free(pc->g->values[v].constant);
    pc->g->values[v].constant = t;
}

/* Computes w' and bn_b' (see the header) into new tensors and installs them. */
static inf_status fold_weights(inf__pass_ctx *pc, const inf__node *conv, const inf__node *bn) {
    const inf_tensor *w = inf__pass_const_of(pc, conv->inputs[1], INF_DTYPE_F32);
    const inf_tensor *b =
        conv->n_inputs == 3 && conv->inputs[2] >= 0 ? inf__pass_const_of(pc, conv->inputs[2], INF_DTYPE_F32) : NULL;
    const float *scale = const_data(pc, bn->inputs[1]), *shift = const_data(pc, bn->inputs[2]);
    const float *mean = const_data(pc, bn->inputs[3]), *var = const_data(pc, bn->inputs[4]);
    double eps = inf__attr_float(bn, "epsilon", 1e-5f);
    int64_t m = w->dims[0], per = inf_tensor_numel(w) / (m ? m : 1);
    inf_tensor *nw = NULL, *nb = NULL;
    if (inf_tensor_new(INF_DTYPE_F32, w->ndim, w->dims, &nw) != INF_OK ||
        inf_tensor_new(INF_DTYPE_F32, 1, &m, &nb) != INF_OK) {
        inf_tensor_free(nw);
        return INF_ENOMEM;
    }
    const float *src = w->data;
    float *dst = nw->data, *bias = nb->data;
    for (int64_t k = 0; k < m; k++) {
        double s = scale[k] / sqrt((double)var[k] + eps);
        for (int64_t j = 0; j < per; j++) dst[k * per + j] = (float)(src[k * per + j] * s);
        bias[k] = (float)(((b ? ((const float *)b->data)[k] : 0.0) - mean[k]) * s + shift[k]);
    }
    replace_constant(pc, conv->inputs[1], nw);
    replace_constant(pc, bn->inputs[2], nb);
    return INF_OK;
}

inf_status inf__pass_conv_bn(inf__pass_ctx *pc, int *n_rewritten, inf_error *err) {
    *n_rewritten = 0;
    for (int n = 0; n < pc->g->n_nodes; n++) {
        const inf__node *bn = &pc->g->nodes[n];
        if (!inf__pass_node_is(pc, n, "BatchNormalization"))
            continue;
        int ci = foldable_conv(pc, bn);
        if (ci < 0) continue;
        const inf__node *conv = &pc->g->nodes[ci];
        if (fold_weights(pc, conv, bn) != INF_OK)
            return inf_error_set(err, INF_ENOMEM, "out of memory folding BatchNormalization '%s' into Conv '%s'",
                              bn->name, conv->name);
        int ins[3] = {conv->inputs[0], conv->inputs[1], bn->inputs[2]};
        inf_status st = inf__pass_rewrite(pc, n, "", "Conv", conv->opset, 3, ins, conv->n_attrs, conv->attrs, &ci, 1, err);
        if (st != INF_OK) return st;
        (*n_rewritten)++;
    }
    return INF_OK;
}
