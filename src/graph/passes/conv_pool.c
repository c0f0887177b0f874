/*
 * conv_pool.c -- a float Conv (+ its fused Relu/Clip) whose only reader is a
 * plain 2-D MaxPool (a network's stem) becomes the internal fused op
 * ConvMaxPool (ai.infera; ops/ref/conv.c): the rows kernel pools the conv
 * rows in its store (ops/x86/conv_pool_bands.c), so the full-size output
 * is never written and read back, and the MaxPool's own job (a fork/join
 * at 2+ threads) is gone.  Runs after activation fusion; QConv chains have
 * their own pool fusion (passes/qdq_chain.c), this pass matches ai.onnx
 * Conv nodes only.
 *
 * PATTERN:
 *     c = Conv(x, w [, b])   2-D (W a constant of rank 4), epilogue none,
 *                            Relu or Clip; c read only by the MaxPool
 *     y = MaxPool(c)         one output (no Indices), kernel_shape of 2,
 *                            no padding, dilation 1, floor mode (windows may
 *                            overlap: 3x3/2)
 * ->  y = ConvMaxPool(x, w [, b])  with the Conv's attributes, pool_kernel,
 *                                  pool_strides and the Conv's epilogue
 *
 * WHY IT IS SAFE: every element of y is the max over its window of the
 * Conv's values after the activation, computed with the same operations as
 * the two nodes (the activation before the max, as the graph had it; max is
 * exact and order-free), so the result is bit-identical, and batch- and
 * thread-invariant as the Conv is.  The node sits where the MaxPool was,
 * after the Conv's inputs, so the order stays topological, and it keeps the
 * Conv's packed W (inf__ops_conv_add_take_packing).
 */
#include <string.h>

#include "graph/passes/passes.h"
#include "ops/ops.h"

enum { MAX_ATTRS = 16 };

/* The Conv node writing MaxPool mp's input, read by it alone, when it can take the pool; else -1. */
static int pooled_conv(const inf__pass_ctx *pc, int mp) {
    int v = pc->g->nodes[mp].inputs[0], ci = v >= 0 ? pc->g->values[v].producer : -1;
    if (ci < 0 || pc->dead[ci] || !inf__pass_uses(pc, v, 1))
        return -1;
    const inf__node *conv = &pc->g->nodes[ci];
    inf__epilogue_kind ek = conv->epilogue.kind;
    const inf_tensor *w = conv->n_inputs > 1 ? inf__pass_const_of(pc, conv->inputs[1], INF_DTYPE_F32) : NULL;
    if (!conv->op || conv->op->domain != INF_DOMAIN_ONNX || strcmp(conv->op_type, "Conv") || conv->n_outputs != 1 ||
        conv->outputs[0] != v || conv->n_inputs < 2 || conv->n_inputs > 3 || !w || w->ndim != 4 ||
        conv->n_attrs + 2 > MAX_ATTRS ||
        !(ek == INF_EPILOGUE_NONE || ek == INF_EPILOGUE_RELU || ek == INF_EPILOGUE_CLIP))
        return -1;
    return ci;
}

inf_status inf__pass_conv_pool(inf__pass_ctx *pc, int *n_rewritten, inf_error *err) {
    *n_rewritten = 0;
    for (int mp = 0; mp < pc->g->n_nodes; mp++) {
        int64_t pool[4];
        if (!inf__pass_plain_maxpool(pc, mp, true, pool))
            continue;
        int ci = pooled_conv(pc, mp);
        if (ci < 0)
            continue;
        const inf__node *conv = &pc->g->nodes[ci];
        inf__attr attrs[MAX_ATTRS];
        if (!inf__pass_pool_attrs(pc, conv, pool, attrs))
            return inf_error_set(err, INF_ENOMEM, "out of memory optimising the graph");
        inf__epilogue ep = conv->epilogue;
        inf__ops_conv_add_packing_follows(true);
        inf_status st = inf__pass_rewrite(pc, mp, "ai.infera", "ConvMaxPool", 1, conv->n_inputs, conv->inputs,
                                          conv->n_attrs + 2, attrs, &ci, 1, err);
        inf__ops_conv_add_packing_follows(false);
        if (st != INF_OK)
            return st;
        pc->g->nodes[mp].epilogue = ep;
        inf__ops_conv_add_take_packing(&pc->g->nodes[mp], &pc->g->nodes[ci]); /* W packed once */
        (*n_rewritten)++;
    }
    return INF_OK;
}
