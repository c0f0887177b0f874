/*
 * rmsnorm.c -- the RMSNorm that Hugging Face's Llama, T5 (and their many
 * relatives) write in PyTorch, as torch.onnx.export spells it, becomes one
 * RMSNormalization node (ONNX opset-23 semantics, the existing kernel,
 * ops/ref/norm_group_rms.c, bound directly whatever opset the model
 * imports).
 *
 * PATTERN (k >= 1 trailing axes; commutative operands in either order):
 *     q = Pow(x, 2.0)            or Mul(x, x)
 *     v = ReduceMean(q, axes = [-k .. -1], keepdims = 1)
 *     e = Add(v, eps)            eps a float32 one-element constant of rank 0
 *                                or at most x's known rank
 *     s = Sqrt(e)
 *     n = Mul(x, r), r = Reciprocal(s) or Div(1.0, s)     (torch.rsqrt:
 *                                dynamo exporter, TorchScript exporter)
 *       | Div(x, s)
 *     y = Mul(n, w)              w a float32 constant of rank <= k
 * ->  y = RMSNormalization(x, w, axis = -k, epsilon = eps)
 *   (the TorchScript exporter's hidden_states.to(float32) Casts around the
 *   chain are gone by now: export_noops.c drops a Cast to the type its
 *   input has.)
 *
 * WHY IT IS SAFE: this is RMSNormalization's definition term by term
 * (mean of the squares over the trailing axes, eps inside the square root,
 * x times its reciprocal, then the scale).  Every intermediate has no
 * reader outside the chain (x may have any number: it is the fused op's
 * input), so nothing else sees them vanish.  eps being float32 forces x to
 * be float32 (Add's operands share a type).  The axes are negative, so they
 * name the same trailing axes at any rank.  The kernel sums the squares in
 * double and rounds 1/sqrt once, so results differ from the float32 chain
 * by rounding only (a few ulp; tests/integration/test_hf_arch.sh holds the
 * fused exports to ONNX Runtime within 1e-4 / 1e-5).  A w that would
 * broadcast x's trailing dims up (x's dim 1 against w's n) is rejected by
 * the kernel at run time rather than silently computed differently, as in
 * layernorm.c.
 */
#include <string.h>

#include "graph/passes/passes.h"
#include "ops/ops.h"

/* s = Sqrt(Add(ReduceMean(Pow(x, 2) | Mul(x, x)), eps)), each link read
 * once: k, eps and the nodes (appended to removed) out; x must be the
 * squared value. */
static bool mean_square(const inf__pass_ctx *pc, int sv, int x, int *k, float *eps, int *removed, int *n_removed) {
    const inf__graph *g = pc->g;
    int si = inf__pass_producer(pc, sv, "Sqrt");
    if (si < 0 || !inf__pass_uses(pc, sv, 1)) return false;
    int ev = g->nodes[si].inputs[0], ei = inf__pass_producer(pc, ev, "Add"), eps_v, vv;
    if (ei < 0 || !inf__pass_uses(pc, ev, 1) || g->nodes[ei].n_inputs != 2) return false;
    eps_v = g->nodes[ei].inputs[1], vv = g->nodes[ei].inputs[0];
    if (!inf__pass_scalar(pc, eps_v, eps)) eps_v = g->nodes[ei].inputs[0], vv = g->nodes[ei].inputs[1];
    if (!inf__pass_const_of(pc, eps_v, INF_DTYPE_F32) || !inf__pass_scalar(pc, eps_v, eps) || !(*eps >= 0) ||
        !inf__pass_const_fits(pc, eps_v, x))
        return false;
    int vi = inf__pass_producer(pc, vv, "ReduceMean");
    if (vi < 0 || !inf__pass_uses(pc, vv, 1) || !(*k = inf__pass_trailing_axes(pc, &g->nodes[vi]))) return false;
    int qv = g->nodes[vi].inputs[0], qi = inf__pass_producer(pc, qv, "Pow");
    if (qi >= 0) {
        const inf__node *p = &g->nodes[qi];
        if (p->n_inputs != 2 || p->inputs[0] != x || !inf__pass_scalar_is(pc, p->inputs[1], 2.0f, 0) ||
            !inf__pass_const_fits(pc, p->inputs[1], x))
            return false;
    } else if ((qi = inf__pass_producer(pc, qv, "Mul")) >= 0) {
        if (g->nodes[qi].n_inputs != 2 || g->nodes[qi].inputs[0] != x || g->nodes[qi].inputs[1] != x) return false;
    } else {
        return false;
    }
    if (!inf__pass_uses(pc, qv, 1)) return false;
    removed[(*n_removed)++] = qi, removed[(*n_removed)++] = vi, removed[(*n_removed)++] = ei;
    removed[(*n_removed)++] = si;
    return true;
}

/* n = Mul(x, Reciprocal(s)) | Mul(x, Div(1, s)) | Div(x, s) (node ni), the
 * reciprocal read once: x in *x, s in *sv, the reciprocal's node appended. */
static bool normalised(const inf__pass_ctx *pc, int ni, int *x, int *sv, int *removed, int *n_removed) {
    const inf__graph *g = pc->g;
    const inf__node *n = &g->nodes[ni];
    if (n->n_inputs != 2) return false;
    if (inf__pass_node_is(pc, ni, "Div")) {
        *x = n->inputs[0], *sv = n->inputs[1];
        return true;
    }
    for (int o = 0; o < 2; o++) {
        int rv = n->inputs[o], ri = inf__pass_producer(pc, rv, "Reciprocal");
        if (ri < 0) {
            ri = inf__pass_producer(pc, rv, "Div");
            if (ri < 0 || g->nodes[ri].n_inputs != 2 || !inf__pass_scalar_is(pc, g->nodes[ri].inputs[0], 1.0f, 0) ||
                !inf__pass_const_fits(pc, g->nodes[ri].inputs[0], n->inputs[1 - o]))
                continue;
            *sv = g->nodes[ri].inputs[1];
        } else {
            *sv = g->nodes[ri].inputs[0];
        }
        if (!inf__pass_uses(pc, rv, 1)) continue;
        *x = n->inputs[1 - o];
        removed[(*n_removed)++] = ri;
        return true;
    }
    return false;
}

static inf_status try_match(inf__pass_ctx *pc, int yi, bool *done, inf_error *err) {
    const inf__graph *g = pc->g;
    const inf__node *y = &g->nodes[yi];
    *done = false;
    if (y->n_inputs != 2) return INF_OK;
    for (int o = 0; o < 2; o++) { /* y = Mul(n, w) or Mul(w, n) */
        int w = y->inputs[1 - o], nv = y->inputs[o], k, x, sv;
        const inf_tensor *wt = inf__pass_const_of(pc, w, INF_DTYPE_F32);
        int ni = inf__pass_producer(pc, nv, "Mul");
        if (ni < 0) ni = inf__pass_producer(pc, nv, "Div");
        if (!wt || ni < 0 || !inf__pass_uses(pc, nv, 1)) continue;
        int removed[8], n_removed = 0;
        float eps;
        if (!normalised(pc, ni, &x, &sv, removed, &n_removed) ||
            !mean_square(pc, sv, x, &k, &eps, removed, &n_removed) || wt->ndim > k)
            continue;
        removed[n_removed++] = ni;
        int inputs[2] = {x, w};
        inf__attr attrs[2] = {{.name = "axis", .type = INF_ATTR_INT, .i = -k},
                              {.name = "epsilon", .type = INF_ATTR_FLOAT, .f = eps}};
        *done = true;
        return inf__pass_rewrite(pc, yi, "", "RMSNormalization", 23, 2, inputs, 2, attrs, removed, n_removed, err);
    }
    return INF_OK;
}

inf_status inf__pass_rmsnorm(inf__pass_ctx *pc, int *n_rewritten, inf_error *err) {
    *n_rewritten = 0;
    for (int n = pc->g->n_nodes - 1; n >= 0; n--) { /* last nodes first: y before the n it reads */
        const inf__node *node = &pc->g->nodes[n];
        if (!inf__pass_node_is(pc, n, "Mul") || node->n_outputs != 1) continue;
        bool done;
        inf_status st = try_match(pc, n, &done, err);
        if (st != INF_OK) return st;
        *n_rewritten += done;
    }
    return INF_OK;
}
