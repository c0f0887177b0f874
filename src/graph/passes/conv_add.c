/*
 * conv_add.c -- a Conv whose only reader is an Add (a ResNet block's
 * residual connection) becomes the internal fused op ConvAdd (ai.infera;
 * ops/ref/conv.c), so the residual is added in the convolution's store
 * instead of in a second pass over memory, and a Relu after the Add then
 * fuses into it as an epilogue (optimize.c's activation fusion).
 *
 * PATTERN (the Add's operands in either order):
 *     c = Conv(x, w [, b])      c read only by the Add, no epilogue
 *     y = Add(c, z)             z any other value (z != c), no epilogue
 * ->  y = ConvAdd(x, w, b or empty, z)   with the Conv's attributes
 *
 * WHY IT IS SAFE: every element of y is still the Conv's value (its sum,
 * then + bias) plus z's element, one float add in the same order, so the
 * result is bit-identical to the two nodes and batch-invariant as the Conv
 * is; when z only broadcasts to c (or c to z) the kernel falls back to a
 * separate Add with ONNX broadcasting.  Types are checked at run time (the
 * Add required equal types; ConvAdd reports the same mismatch).  The
 * rewritten node sits where the Add was, after z's producer and the
 * Conv's inputs, so the order stays topological.  The ConvAdd keeps the
 * Conv's packed W (inf__ops_conv_add_take_packing) instead of packing it
 * again in the model arena.
 */
#include <string.h>

#include "graph/passes/passes.h"
#include "ops/ops.h"

/* The Conv node feeding input o of Add node `add` alone, or -1. */
static int conv_operand(const inf__pass_ctx *pc, const inf__node *add, int o) {
    int c = add->inputs[o], z = add->inputs[1 - o];
    int ci = inf__pass_producer(pc, c, "Conv");
    if (ci < 0 || c == z || !inf__pass_uses(pc, c, 1)) return -1;
    const inf__node *conv = &pc->g->nodes[ci];
    if (conv->epilogue.kind != INF_EPILOGUE_NONE || conv->n_outputs != 1 || conv->n_inputs < 2 ||
        conv->n_inputs > 3)
        return -1;
    return ci;
}

inf_status inf__pass_conv_add(inf__pass_ctx *pc, int *n_rewritten, inf_error *err) {
    *n_rewritten = 0;
    for (int n = 0; n < pc->g->n_nodes; n++) {
        const inf__node *add = &pc->g->nodes[n];
        if (!inf__pass_node_is(pc, n, "Add") || add->n_inputs != 2 || add->inputs[0] < 0 || add->inputs[1] < 0)
            continue;
        int o = 0, ci = conv_operand(pc, add, 0);
        if (ci < 0) ci = conv_operand(pc, add, o = 1);
        if (ci < 0) continue;
        const inf__node *conv = &pc->g->nodes[ci];
        int ins[4] = {conv->inputs[0], conv->inputs[1], conv->n_inputs > 2 ? conv->inputs[2] : -1, add->inputs[1 - o]};
        inf__ops_conv_add_packing_follows(true);
        inf_status st = inf__pass_rewrite(pc, n, "ai.infera", "ConvAdd", 1, 4, ins, conv->n_attrs, conv->attrs, &ci,
                                          1, err);
        inf__ops_conv_add_packing_follows(false);
        if (st != INF_OK) return st;
        inf__ops_conv_add_take_packing(&pc->g->nodes[n], &pc->g->nodes[ci]); /* W packed once */
        (*n_rewritten)++;
    }
    return INF_OK;
}
