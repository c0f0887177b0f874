/*
 * matmul_add.c -- a MatMul by constant weights followed by its bias Add,
 * optionally a residual Add and a GELU, becomes the internal fused op
 * FusedMatMul (ai.infera; ops/ref/gemm.c), whose adds and activation run in
 * the GEMM's store while each tile is in cache (the linear layers of a
 * transformer: the Q/K/V/output projections, bias + residual; the FFN,
 * bias + GELU) instead of one pass over memory per node.
 *
 * PATTERN (Add operands in either order):
 *     m  = MatMul(a, W)       W a float32 constant [K, N]; m read only by the Add
 *     y1 = Add(m, bias)       bias a float32 constant [N]
 *   then optionally
 *     y2 = Add(y1, z)         y1 read only by this Add; z any other value
 *   then optionally
 *     y3 = Gelu(y2 or y1)     the internal Gelu (passes/gelu.c) or ONNX's, exact or tanh
 *                             form; its input read only by it
 * ->  y  = FusedMatMul(a, W, bias [, z]; activation = "Gelu" / "GeluTanh" when there was one)
 *   W and bias must not be graph inputs (a caller could replace them), every
 *   Add is opset >= 7 (numpy broadcasting) and no node carries an epilogue.
 *
 * WHY IT IS SAFE: each element of y is the MatMul's value, + bias[j], + z's
 * element, then the activation -- the same float operations in the same
 * order as the separate nodes (a + b == b + a in IEEE arithmetic), so the
 * result is bit-identical and as batch-invariant as the MatMul.  A bias of
 * exactly [N] cannot change the shape of the MatMul's result [..., N]; a
 * residual z that only broadcasts is handled by the kernel with numpy
 * broadcasting.  Intermediates m, y1 (and y2 under a Gelu) have no reader
 * outside the chain.  The rewritten node sits where the chain's last node
 * was, after z's producer and a's, so the order stays topological.  Types are
 * checked by the kernel at run time (the MatMul and Adds required float32
 * here anyway, W being float32).
 */
#include <string.h>

#include "graph/passes/passes.h"
#include "ops/ops.h"

enum { MAX_REMOVED = 3 };

typedef struct mm_match {
    int ins[4], n_ins;
    int removed[MAX_REMOVED], n_removed;
} mm_match;

static bool is_graph_input(const inf__graph *g, int v) {
    for (int i = 0; i < g->n_inputs; i++)
        if (g->inputs[i] == v) return true;
    return false;
}

/* A float32 constant of value v with the given rank that no caller can replace. */
static const inf_tensor *fixed_const(const inf__pass_ctx *pc, int v, int ndim) {
    const inf_tensor *t = inf__pass_const_of(pc, v, INF_DTYPE_F32);
    return t && t->ndim == ndim && t->data && !is_graph_input(pc->g, v) ? t : NULL;
}

/* Is node i a live ai.onnx Add (opset >= 7) of two present inputs without an epilogue? */
static bool is_add(const inf__pass_ctx *pc, int i) {
    const inf__node *n = &pc->g->nodes[i];
    return !pc->dead[i] && n->op && n->op->domain == INF_DOMAIN_ONNX && !strcmp(n->op_type, "Add") &&
           n->opset >= 7 && n->n_inputs == 2 && n->inputs[0] >= 0 && n->inputs[1] >= 0 && n->n_outputs == 1 &&
           n->epilogue.kind == INF_EPILOGUE_NONE;
}

/* Node ai = Add(MatMul(a, W), bias): fills ins[0..2] and removes the MatMul. */
static bool match_bias(const inf__pass_ctx *pc, int ai, mm_match *mt) {
    if (!is_add(pc, ai)) return false;
    const inf__node *add = &pc->g->nodes[ai];
    for (int o = 0; o < 2; o++) {
        int m = add->inputs[o], bias = add->inputs[1 - o];
        int mi = inf__pass_producer(pc, m, "MatMul");
        if (mi < 0 || !inf__pass_uses(pc, m, 1) || pc->g->nodes[mi].n_inputs != 2) continue;
        const inf__node *mm = &pc->g->nodes[mi];
        const inf_tensor *w = fixed_const(pc, mm->inputs[1], 2), *b = fixed_const(pc, bias, 1);
        if (!w || !b || b->dims[0] != w->dims[1] || mm->inputs[0] < 0) continue;
        mt->ins[0] = mm->inputs[0], mt->ins[1] = mm->inputs[1], mt->ins[2] = bias, mt->n_ins = 3;
        mt->removed[mt->n_removed++] = mi;
        return true;
    }
    return false;
}

/* Node ai = Add(y1, z) with y1 a bias Add of a MatMul read only here, or
 * itself the bias Add. */
static bool match_adds(const inf__pass_ctx *pc, int ai, mm_match *mt) {
    if (!is_add(pc, ai)) return false;
    const inf__node *add = &pc->g->nodes[ai];
    for (int o = 0; o < 2; o++) {
        int y1 = add->inputs[o], z = add->inputs[1 - o], bi = pc->g->values[y1].producer;
        if (y1 == z || bi < 0 || !inf__pass_uses(pc, y1, 1) || !match_bias(pc, bi, mt)) continue;
        mt->ins[3] = z, mt->n_ins = 4;
        mt->removed[mt->n_removed++] = bi;
        return true;
    }
    return match_bias(pc, ai, mt);
}

inf_status inf__pass_matmul_add(inf__pass_ctx *pc, int *n_rewritten, inf_error *err) {
    static const inf__attr gelu_attrs[2] = {
        {.name = "activation", .type = INF_ATTR_STRING, .s = "Gelu", .s_len = 4},
        {.name = "activation", .type = INF_ATTR_STRING, .s = "GeluTanh", .s_len = 8}};
    *n_rewritten = 0;
    /* from the last node back: a chain is met at its end (the Gelu or the
     * outer Add) before its inner Adds */
    for (int n = pc->g->n_nodes - 1; n >= 0; n--) {
        mm_match mt = {.n_removed = 0};
        int form = inf__pass_gelu_form(pc, n);
        bool gelu = form != 0;
        if (gelu) {
            int x = pc->g->nodes[n].inputs[0], xi = x >= 0 ? pc->g->values[x].producer : -1;
            if (xi < 0 || !inf__pass_uses(pc, x, 1) || !match_adds(pc, xi, &mt)) continue;
            mt.removed[mt.n_removed++] = xi;
        } else if (!match_adds(pc, n, &mt)) {
            continue;
        }
        inf_status st = inf__pass_rewrite(pc, n, "ai.infera", "FusedMatMul", 1, mt.n_ins, mt.ins, gelu ? 1 : 0,
                                          gelu ? &gelu_attrs[form - 1] : NULL, mt.removed, mt.n_removed, err);
        if (st != INF_OK) return st;
        inf__ops_fused_matmul_take_packing(&pc->g->nodes[n], &pc->g->nodes[mt.removed[0]]);
        (*n_rewritten)++;
    }
    return INF_OK;
}
