/*
 * silu.c -- SiLU (Swish) after a convolution, as PyTorch exports nn.SiLU
 * (EfficientNet, MobileNetV3's heads, YOLO's CSP blocks): a Sigmoid and a
 * Mul reading the same Conv output become the Conv's INF_EPILOGUE_SILU
 * (graph.h), applied in place on its output right after the kernel
 * (graph/session.c's epilogue pass, ops/util.c): one node instead of three,
 * one pass over the activation instead of two, and neither the Sigmoid's
 * output nor a second read of the Conv's.
 *
 * PATTERN (the Mul's operands in either order):
 *     c = Conv(x, w [, b]) or ConvAdd(...)   w a float32 constant, no
 *                                            epilogue, c read by exactly
 *                                            the two nodes below
 *     s = Sigmoid(c)                         s read only by the Mul
 *     y = Mul(c, s)
 * ->  y = Conv(x, w [, b]) with epilogue SILU (the Sigmoid and Mul dead)
 *
 * WHY IT IS SAFE: the epilogue computes each element as the Sigmoid kernel
 * does for float32 (the vectorised sigmoid of ops/vmath.h, the same
 * instructions for every element wherever it sits) and then one float
 * multiply, as the Mul kernel does: bit-identical to the three nodes, at
 * any batch size, sub-batch split or thread count.  Conv's X and W share
 * one type, so a float32 constant W makes c float32; other types (float16
 * Sigmoid rounds s to half before the Mul) keep the three nodes.  c and s
 * have no reader outside the chain (graph outputs count as readers), so
 * nothing else sees the removed values.  The Conv is before the Sigmoid
 * and the Mul in the node list and now writes y, whose readers all come
 * after the Mul: the order stays topological.
 */
#include <string.h>

#include "graph/passes/passes.h"
#include "ops/ops.h"

/* The live Conv or ConvAdd producing v with a float32 constant W and no epilogue, or -1. */
static int conv_of(const inf__pass_ctx *pc, int v) {
    int p = v >= 0 ? pc->g->values[v].producer : -1;
    if (p < 0 || pc->dead[p]) return -1;
    const inf__node *c = &pc->g->nodes[p];
    bool conv = inf__pass_node_is(pc, p, "Conv") ||
                (c->op && c->op->domain == INF_DOMAIN_INFERA && !strcmp(c->op_type, "ConvAdd"));
    if (!conv || c->epilogue.kind != INF_EPILOGUE_NONE || c->n_outputs != 1 || c->outputs[0] != v || c->n_inputs < 2 ||
        !inf__pass_const_of(pc, c->inputs[1], INF_DTYPE_F32))
        return -1;
    return p;
}

inf_status inf__pass_silu(inf__pass_ctx *pc, int *n_rewritten, inf_error *err) {
    (void)err;
    *n_rewritten = 0;
    inf__graph *g = pc->g;
    for (int n = 0; n < g->n_nodes; n++) {
        inf__node *mul = &g->nodes[n];
        if (!inf__pass_node_is(pc, n, "Mul") || mul->n_inputs != 2 || mul->n_outputs != 1 || mul->outputs[0] < 0)
            continue;
        for (int o = 0; o < 2; o++) {
            int c = mul->inputs[o], s = mul->inputs[1 - o];
            int si = inf__pass_producer(pc, s, "Sigmoid");
            if (si < 0 || c < 0 || c == s || !inf__pass_uses(pc, s, 1) || !inf__pass_uses(pc, c, 2)) continue;
            const inf__node *sig = &g->nodes[si];
            if (sig->n_inputs != 1 || sig->inputs[0] != c || sig->n_outputs != 1) continue;
            int ci = conv_of(pc, c);
            if (ci < 0) continue;
            inf__node *conv = &g->nodes[ci];
            int y = mul->outputs[0];
            conv->epilogue = (inf__epilogue){.kind = INF_EPILOGUE_SILU};
            conv->outputs[0] = y; /* the Conv now writes the Mul's output */
            g->values[y].producer = ci;
            g->values[c].producer = -1;
            g->values[c].n_consumers = 0; /* its two readers are gone */
            g->values[s].producer = -1;
            g->values[s].n_consumers = 0;
            pc->dead[si] = pc->dead[n] = true;
            (*n_rewritten)++;
            break;
        }
    }
    return INF_OK;
}
