/*
 * optional.c -- the ONNX optional-value ops, any element type:
 *
 *   Optional            opsets 15-26  input present: the output is that value
 *                       (a tensor aliases it; a sequence is deep-copied);
 *                       input absent: an empty optional.  The `type`
 *                       attribute only matters to type inference.
 *   OptionalHasElement  opsets 15-26  bool scalar: does the input hold a value?
 *                       An omitted input (allowed from opset 18) reads false.
 *   OptionalGetElement  opsets 15-26  the held value (tensor aliased, sequence
 *                       copied); an empty optional is an error.
 *
 * Representation: Infera has no wrapper for a non-empty optional.  An optional
 * holding a value is the value itself (tensor or sequence); an empty one is a
 * value of kind INF_KIND_NONE, or NULL for an omitted input.  So these ops
 * also accept plain tensors and sequences, as opset 18 allows.
 */
#include "ops/ref/values.h"

static bool has_element(const inf_tensor *t) { return t && t->kind != INF_KIND_NONE; }

/* Output 0 carries the value x: a tensor view, or a copy of a non-tensor. */
static inf_status forward_value(inf__kernel_ctx *ctx, const inf_tensor *x) {
    if (x->kind == INF_KIND_TENSOR) return inf__kernel_output_alias(ctx, 0, 0, x->ndim, x->dims, NULL);
    return value_output_copy(ctx, 0, x);
}

static inf_status optional_run(inf__kernel_ctx *ctx) {
    const inf_tensor *x = ctx->n_in > 0 ? ctx->in[0] : NULL;
    if (!has_element(x)) return value_output_copy(ctx, 0, NULL);
    return forward_value(ctx, x);
}

static inf_status optional_has_element_run(inf__kernel_ctx *ctx) {
    const inf_tensor *x = ctx->n_in > 0 ? ctx->in[0] : NULL;
    inf_tensor *y;
    inf_status st = inf__kernel_output(ctx, 0, INF_DTYPE_BOOL, 0, NULL, &y);
    if (st != INF_OK) return st;
    *(uint8_t *)y->data = has_element(x);
    return INF_OK;
}

static inf_status optional_get_element_run(inf__kernel_ctx *ctx) {
    const inf_tensor *x = ctx->n_in > 0 ? ctx->in[0] : NULL;
    if (!has_element(x))
        return inf__kernel_error(ctx, INF_EINVAL, "input 0 (input) is an empty optional: it has no element to get");
    return forward_value(ctx, x);
}

const inf__op_impl op_optional = {NULL, optional_run};
const inf__op_impl op_optional_has_element = {NULL, optional_has_element_run};
const inf__op_impl op_optional_get_element = {NULL, optional_get_element_run};
