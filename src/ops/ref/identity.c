/*
 * identity.c -- ops whose inference output is their input:
 *
 *   Identity  opsets 1-17  any tensor type; from opset 14 sequences, from
 *             opset 16 optionals too.  A tensor output aliases the input; a
 *             sequence, map or empty optional is deep-copied into a new value
 *             (a heap allocation, the only way to hand over a non-tensor).
 *   Dropout   opsets 1-17  T: float16/32/64, bfloat16.  Output `output`
 *             aliases the input; the optional `mask` is all true (bool from
 *             opset 10, of type T with value 1 before).  The inputs ratio and
 *             training_mode (opset 12+) and the attributes ratio, is_test and
 *             seed are checked for type but do not change the result.
 *
 * Deviation: Dropout with training_mode = true still runs in inference mode
 * (y = x, mask all true); an inference engine does not train, and random
 * masks would make results irreproducible.  With ratio 0 this is exact.
 */
#include "ops/ops.h"

/* ---- Identity ---- */

static inf_status identity_run(inf__kernel_ctx *ctx) {
    const inf_tensor *x = ctx->n_in > 0 ? ctx->in[0] : NULL;
    if (!x) return inf__kernel_error(ctx, INF_EINVAL, "input is missing");
    inf_tensor *y;
    if (x->kind == INF_KIND_TENSOR) return inf__kernel_output_alias(ctx, 0, 0, x->ndim, x->dims, &y);
    inf_status st = inf_tensor_clone(x, &y);
    if (st != INF_OK) return inf__kernel_error(ctx, st, "cannot copy the input value");
    return inf__kernel_output_value(ctx, 0, y);
}

const inf__op_impl op_identity = {NULL, identity_run};

/* ---- Dropout ---- */

static bool output_wanted(const inf__kernel_ctx *ctx, int i) {
    return i < ctx->n_out && i < ctx->node->n_outputs && ctx->node->outputs[i] >= 0;
}

static inf_status dropout_check_inputs(inf__kernel_ctx *ctx) {
    const inf_tensor *ratio = ctx->n_in > 1 ? ctx->in[1] : NULL;
    const inf_tensor *mode = ctx->n_in > 2 ? ctx->in[2] : NULL;
    if (ratio && (!inf__dtype_is_float(ratio->dtype) || inf_tensor_numel(ratio) != 1))
        return inf__kernel_error(ctx, INF_ETYPE, "input ratio: expected a float scalar, got %s",
                                 inf_dtype_name(ratio->dtype));
    if (mode && (mode->dtype != INF_DTYPE_BOOL || inf_tensor_numel(mode) != 1))
        return inf__kernel_error(ctx, INF_ETYPE, "input training_mode: expected a bool scalar, got %s",
                                 inf_dtype_name(mode->dtype));
    return INF_OK;
}

static inf_status dropout_run(inf__kernel_ctx *ctx) {
    const inf_tensor *x = ctx->n_in > 0 ? ctx->in[0] : NULL;
    if (!x) return inf__kernel_error(ctx, INF_EINVAL, "input data is missing");
    if (!inf__dtype_is_float(x->dtype))
        return inf__kernel_error(ctx, INF_ETYPE, "input data: expected a float type, got %s",
                                 inf_dtype_name(x->dtype));
    inf_status st = dropout_check_inputs(ctx);
    if (st != INF_OK) return st;
    inf_tensor *y;
    st = inf__kernel_output_alias(ctx, 0, 0, x->ndim, x->dims, &y);
    if (st != INF_OK || !output_wanted(ctx, 1)) return st;

    bool bool_mask = ctx->node->opset >= 10;
    inf_tensor *mask;
    st = inf__kernel_output(ctx, 1, bool_mask ? INF_DTYPE_BOOL : x->dtype, x->ndim, x->dims, &mask);
    if (st != INF_OK) return st;
    int64_t n = inf_tensor_numel(x);
    if (bool_mask) {
        uint8_t *m = mask->data;
        for (int64_t i = 0; i < n; i++) m[i] = 1;
    } else {
        for (int64_t i = 0; i < n; i++) inf__tensor_set_f64(mask, i, 1.0);
    }
    return INF_OK;
}

const inf__op_impl op_dropout = {NULL, dropout_run};
