/*
 * TEMPLATE.c -- how to add an operator (copy to ops/ref/<family>.c; this file
 * is not compiled).
 *
 * 1. Add a line to ops/ops.def, keeping the byte order of op names:
 *        OP(ONNX, "MyOp", 13, 17, op_my_op)
 * 2. Define `const inf__op_impl op_my_op` in a family file under ops/ref/.
 *    Open the file with the ONNX op(s) it implements, the opsets and dtypes,
 *    and any deviation from the spec.
 * 3. init (optional): read attributes once at load time, validate them and
 *    keep them in node->params.  Errors go through inf__node_error so the
 *    message names the node.
 * 4. run: check the inputs (dtype, rank, shape: a model or a request can be
 *    wrong, never assert on them), create the outputs with
 *    inf__kernel_output, compute.  Errors through inf__kernel_error.
 * 5. Test it: `infera conformance --filter my_op` runs the ONNX node tests
 *    for it; add a unit test in tests/kernels/ for cases those miss.
 *    Optimised variants (ops/x86/<family>_avx2.c) must match this kernel.
 */
#include "ops/ops.h"

typedef struct my_op_params {
    float alpha;
} my_op_params;

static inf_status my_op_init(inf__node *node, inf__arena *arena, inf_error *err) {
    my_op_params *p = inf__op_params(arena, my_op_params);
    if (!p) return INF_ENOMEM;
    p->alpha = inf__attr_float(node, "alpha", 1.0f);
    if (p->alpha < 0) return inf__node_error(node, err, INF_EMODEL, "alpha must be >= 0, got %g", p->alpha);
    node->params = p;
    return INF_OK;
}

static inf_status my_op_run(inf__kernel_ctx *ctx) {
    const my_op_params *p = ctx->node->params;
    const inf_tensor *x = ctx->in[0];
    if (x->dtype != INF_DTYPE_F32)
        return inf__kernel_error(ctx, INF_ETYPE, "input X: expected float32, got %s",
                                 inf_dtype_name(x->dtype));
    inf_tensor *y;
    inf_status st = inf__kernel_output(ctx, 0, x->dtype, x->ndim, x->dims, &y);
    if (st != INF_OK) return st;
    const float *src = x->data;
    float *dst = y->data;
    for (int64_t i = 0, n = inf_tensor_numel(x); i < n; i++) dst[i] = p->alpha * src[i];
    return INF_OK;
}

const inf__op_impl op_my_op = {my_op_init, my_op_run};
