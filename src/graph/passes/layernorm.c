/*
 * layernorm.c -- the decomposed LayerNorm that PyTorch exports below opset
 * 17 (BERT's hand-written LayerNorm, nn.LayerNorm) becomes one
 * LayerNormalization node (opset-17 semantics, the existing kernel, bound
 * directly whatever opset the model imports).
 *
 * PATTERN (k >= 1 trailing axes; commutative operands in either order):
 *     m = ReduceMean(x, axes = [-k .. -1], keepdims = 1)
 *     d = Sub(x, m)
 *     q = Pow(d, 2.0)            or Mul(d, d)
 *     v = ReduceMean(q, axes = [-k .. -1], keepdims = 1)
 *     e = Add(v, eps)            eps a float32 one-element constant of rank 0
 *                                or at most x's known rank
 *     s = Sqrt(e)
 *     n = Div(d, s)
 *     g = Mul(n, gamma)          gamma a float32 constant of rank <= k
 *     y = Add(g, beta)           beta likewise; optional (then y = g)
 * ->  y = LayerNormalization(x, gamma, beta, axis = -k, epsilon = eps)
 *
 * WHY IT IS SAFE: this is LayerNormalization's definition term by term
 * (population variance, eps inside the square root, scale then shift).
 * Every intermediate has no reader outside the chain (d exactly its two or
 * three), so nothing else sees them vanish.  eps being float32 forces x to
 * be float32.  The axes are negative, so they name the same trailing axes
 * at any rank.  The fused kernel accumulates the statistics in double, so
 * results differ from the float32 chain by rounding only (tested within
 * 1e-5 relative).  A gamma or beta that broadcasts x's trailing dims up
 * (x's dim 1 against gamma's n) is rejected by the kernel at run time
 * rather than silently computed differently.
 */
#include <string.h>

#include "graph/passes/passes.h"
#include "ops/ops.h"

/* One of node's two inputs is a constant accepted by ok(); the other's index in *other. */
static bool split_const(const inf__pass_ctx *pc, const inf__node *node, int *cst, int *other) {
    if (node->n_inputs != 2) return false;
    for (int i = 0; i < 2; i++)
        if (inf__pass_const_of(pc, node->inputs[i], INF_DTYPE_F32)) {
            *cst = node->inputs[i];
            *other = node->inputs[1 - i];
            return true;
        }
    return false;
}

static bool param_fits(const inf__pass_ctx *pc, int v, int k) {
    const inf_tensor *t = inf__pass_const_of(pc, v, INF_DTYPE_F32);
    return t && t->ndim <= k;
}

static inf_status try_match(inf__pass_ctx *pc, int yi, bool *done, inf_error *err) {
    const inf__graph *g = pc->g;
    const inf__node *y = &g->nodes[yi];
    int beta = -1, gv, gi = yi, k;
    *done = false;
    if (!strcmp(y->op_type, "Add")) {
        if (!split_const(pc, y, &beta, &gv) || (gi = inf__pass_producer(pc, gv, "Mul")) < 0 || !inf__pass_uses(pc, gv, 1))
            return INF_OK;
    }
    int gamma, nv, ev, vv, qv, sv, dv, mv, x;
    const inf__node *gn = &g->nodes[gi];
    if (!split_const(pc, gn, &gamma, &nv) || !inf__pass_uses(pc, nv, 1)) return INF_OK;
    int ni = inf__pass_producer(pc, nv, "Div");
    if (ni < 0) return INF_OK;
    dv = g->nodes[ni].inputs[0], sv = g->nodes[ni].inputs[1];
    int si = inf__pass_producer(pc, sv, "Sqrt");
    if (si < 0 || !inf__pass_uses(pc, sv, 1)) return INF_OK;
    ev = g->nodes[si].inputs[0];
    int ei = inf__pass_producer(pc, ev, "Add"), eps_v;
    float eps;
    if (ei < 0 || !inf__pass_uses(pc, ev, 1) || !split_const(pc, &g->nodes[ei], &eps_v, &vv) ||
        !inf__pass_scalar(pc, eps_v, &eps) || !(eps >= 0))
        return INF_OK;
    int vi = inf__pass_producer(pc, vv, "ReduceMean");
    if (vi < 0 || !inf__pass_uses(pc, vv, 1) || !(k = inf__pass_trailing_axes(pc, &g->nodes[vi]))) return INF_OK;
    qv = g->nodes[vi].inputs[0];
    int qi = inf__pass_producer(pc, qv, "Pow"), d_reads = 2;
    if (qi >= 0) {
        if (g->nodes[qi].inputs[0] != dv || !inf__pass_scalar_is(pc, g->nodes[qi].inputs[1], 2.0f, 0)) return INF_OK;
    } else if ((qi = inf__pass_producer(pc, qv, "Mul")) >= 0) {
        if (g->nodes[qi].inputs[0] != dv || g->nodes[qi].inputs[1] != dv) return INF_OK;
        d_reads = 3;
    } else {
        return INF_OK;
    }
    if (!inf__pass_uses(pc, qv, 1)) return INF_OK;
    int di = inf__pass_producer(pc, dv, "Sub");
    if (di < 0 || !inf__pass_uses(pc, dv, d_reads)) return INF_OK;
    x = g->nodes[di].inputs[0], mv = g->nodes[di].inputs[1];
    int mi = inf__pass_producer(pc, mv, "ReduceMean");
    if (mi < 0 || !inf__pass_uses(pc, mv, 1) || g->nodes[mi].inputs[0] != x ||
        inf__pass_trailing_axes(pc, &g->nodes[mi]) != k)
        return INF_OK;
    if (!param_fits(pc, gamma, k) || (beta >= 0 && !param_fits(pc, beta, k))) return INF_OK;
    if (!inf__pass_const_fits(pc, eps_v, x) || (d_reads == 2 && !inf__pass_const_fits(pc, g->nodes[qi].inputs[1], x)))
        return INF_OK; /* a [1, 1, ...] eps or exponent would raise the chain's rank */

    int removed[9] = {mi, di, qi, vi, ei, si, ni}, n_removed = 7;
    if (gi != yi) removed[n_removed++] = gi;
    int inputs[3] = {x, gamma, beta};
    inf__attr attrs[2] = {{.name = "axis", .type = INF_ATTR_INT, .i = -k},
                          {.name = "epsilon", .type = INF_ATTR_FLOAT, .f = eps}};
    *done = true;
    return inf__pass_rewrite(pc, yi, "", "LayerNormalization", 17, beta >= 0 ? 3 : 2, inputs, 2, attrs, removed,
                             n_removed, err);
}

inf_status inf__pass_layernorm(inf__pass_ctx *pc, int *n_rewritten, inf_error *err) {
    *n_rewritten = 0;
    for (int n = pc->g->n_nodes - 1; n >= 0; n--) { /* last nodes first: y before the g it reads */
        const inf__node *node = &pc->g->nodes[n];
        if (!(inf__pass_node_is(pc, n, "Add") || inf__pass_node_is(pc, n, "Mul")) || node->n_outputs != 1)
            continue;
        bool done;
        inf_status st = try_match(pc, n, &done, err);
        if (st != INF_OK) return st;
        *n_rewritten += done;
    }
    return INF_OK;
}
