/*
 * gelu.c -- the GELU of PyTorch exports, decomposed into element-wise nodes,
 * becomes the internal fused op Gelu (ai.infera; ops/ref/gelu.c): the exact
 * (erf) form, and GPT-2's tanh form as Gelu with approximate = "tanh".
 *
 * PATTERN (commutative operands in either order; c, h, k, p constants):
 *   the erf term
 *     u = Div(x, c)  with c = sqrt 2     or  Mul(x, c) with c = 1/sqrt 2   (+-1e-6)
 *     e = Erf(u)
 *   or the tanh term (HF's NewGELUActivation, gelu_new, both exporters)
 *     p3 = Pow(x, 3)  or  Mul(Mul(x, x), x)
 *     a  = Add(x, Mul(p3, h))  with h = 0.044715                        (+-1e-7)
 *     e  = Tanh(Mul(a, k))     with k = sqrt(2/pi)                      (+-1e-6)
 *   then
 *     t = Add(e, 1.0)
 *   and one of
 *     y = Mul(Mul(x, t), 0.5)     (torch.nn.functional.gelu's export)
 *     y = Mul(Mul(x, 0.5), t)     (x * 0.5 * (1 + erf(...)), HF BERT; GPT-2)
 *     y = Mul(x, Mul(t, 0.5))
 * ->  y = Gelu(x)  [approximate = "tanh" for the tanh term]
 *
 * WHY IT IS SAFE: each form is its GELU with the operations reassociated,
 * which only moves float32 rounding; the constants being float32 scalars
 * forces x to be float32 (or the graph fails at run time either way).  The
 * intermediates have no reader outside the chain.  The kernels are at least
 * as accurate as the chains (test_vmath.c: erf form <= 20 ulp against
 * double, tanh form <= 8 ulp near 0 and relative in the tails; the chains'
 * 1 + erf / 1 + tanh lose every digit of the negative tail).
 */
#include <string.h>

#include "graph/passes/passes.h"
#include "ops/ops.h"

#define SQRT2 1.41421356237f
#define SQRT1_2 0.70710678118f

#define SQRT_2_PI   0.79788456080f /* sqrt(2 / pi) */
#define GELU_TANH_C 0.044715f

/* Mul node mi reads {v, c} with c the scalar want (+-tol): v in *v. */
static bool mul_by(const inf__pass_ctx *pc, int mi, float want, float tol, int *v) {
    const inf__node *m = &pc->g->nodes[mi];
    if (inf__pass_scalar_is(pc, m->inputs[1], want, tol)) *v = m->inputs[0];
    else if (inf__pass_scalar_is(pc, m->inputs[0], want, tol)) *v = m->inputs[1];
    else return false;
    return true;
}

/* e = Erf(x / sqrt 2): x in *x, the two nodes appended to nodes[]. */
static bool erf_term(const inf__pass_ctx *pc, int e, int *x, int *nodes, int *n_nodes) {
    const inf__graph *g = pc->g;
    int ei = inf__pass_producer(pc, e, "Erf");
    if (ei < 0 || !inf__pass_uses(pc, e, 1)) return false;
    int u = g->nodes[ei].inputs[0], ui;
    if (!inf__pass_uses(pc, u, 1)) return false;
    if ((ui = inf__pass_producer(pc, u, "Div")) >= 0) {
        if (!inf__pass_scalar_is(pc, g->nodes[ui].inputs[1], SQRT2, 1e-6f)) return false;
        *x = g->nodes[ui].inputs[0];
    } else if ((ui = inf__pass_producer(pc, u, "Mul")) >= 0) {
        if (!mul_by(pc, ui, SQRT1_2, 1e-6f, x)) return false;
    } else {
        return false;
    }
    nodes[(*n_nodes)++] = ui, nodes[(*n_nodes)++] = ei;
    return true;
}

/* Is p3 x^3: Pow(x, 3) or Mul(Mul(x, x), x), read only by the chain?  Its
 * nodes appended to nodes[]. */
static bool cube_of(const inf__pass_ctx *pc, int p3, int x, int *nodes, int *n_nodes) {
    const inf__graph *g = pc->g;
    if (!inf__pass_uses(pc, p3, 1)) return false;
    int pi = inf__pass_producer(pc, p3, "Pow");
    if (pi >= 0) {
        if (g->nodes[pi].n_inputs != 2 || g->nodes[pi].inputs[0] != x ||
            !inf__pass_scalar_is(pc, g->nodes[pi].inputs[1], 3.0f, 0))
            return false;
        nodes[(*n_nodes)++] = pi;
        return true;
    }
    if ((pi = inf__pass_producer(pc, p3, "Mul")) < 0) return false;
    const inf__node *m = &g->nodes[pi];
    for (int o = 0; o < 2; o++) {
        int q = m->inputs[1 - o], qi;
        if (m->inputs[o] != x || (qi = inf__pass_producer(pc, q, "Mul")) < 0 || !inf__pass_uses(pc, q, 1)) continue;
        if (g->nodes[qi].inputs[0] == x && g->nodes[qi].inputs[1] == x) {
            nodes[(*n_nodes)++] = qi, nodes[(*n_nodes)++] = pi;
            return true;
        }
    }
    return false;
}

/* e = Tanh(k (x + h x^3)): x in *x, the nodes appended to nodes[]. */
static bool tanh_term(const inf__pass_ctx *pc, int e, int *x, int *nodes, int *n_nodes) {
    const inf__graph *g = pc->g;
    int ti = inf__pass_producer(pc, e, "Tanh"), w = ti >= 0 ? g->nodes[ti].inputs[0] : -1, wi, a, ai;
    if (ti < 0 || !inf__pass_uses(pc, e, 1) || !inf__pass_uses(pc, w, 1)) return false;
    if ((wi = inf__pass_producer(pc, w, "Mul")) < 0 || !mul_by(pc, wi, SQRT_2_PI, 1e-6f, &a)) return false;
    if ((ai = inf__pass_producer(pc, a, "Add")) < 0 || !inf__pass_uses(pc, a, 1)) return false;
    int start = *n_nodes;
    for (int o = 0; o < 2; o++) {
        int xc = g->nodes[ai].inputs[o], c = g->nodes[ai].inputs[1 - o], ci, p3;
        *n_nodes = start;
        if ((ci = inf__pass_producer(pc, c, "Mul")) < 0 || !inf__pass_uses(pc, c, 1) ||
            !mul_by(pc, ci, GELU_TANH_C, 1e-7f, &p3) || !cube_of(pc, p3, xc, nodes, n_nodes))
            continue;
        nodes[(*n_nodes)++] = ci, nodes[(*n_nodes)++] = ai, nodes[(*n_nodes)++] = wi, nodes[(*n_nodes)++] = ti;
        *x = xc;
        return true;
    }
    *n_nodes = start;
    return false;
}

/* t = Add(e, 1) with e an erf or a tanh term: x in *x, *tanh_form, the
 * nodes in nodes[] (count in *n_nodes). */
static bool gelu_term(const inf__pass_ctx *pc, int t, int *x, int *nodes, int *n_nodes, bool *tanh_form) {
    const inf__graph *g = pc->g;
    int ai = inf__pass_producer(pc, t, "Add");
    if (ai < 0 || !inf__pass_uses(pc, t, 1)) return false;
    const inf__node *a = &g->nodes[ai];
    int e;
    if (inf__pass_scalar_is(pc, a->inputs[1], 1.0f, 0)) e = a->inputs[0];
    else if (inf__pass_scalar_is(pc, a->inputs[0], 1.0f, 0)) e = a->inputs[1];
    else return false;
    *n_nodes = 0;
    if (erf_term(pc, e, x, nodes, n_nodes)) *tanh_form = false;
    else if (tanh_term(pc, e, x, nodes, n_nodes)) *tanh_form = true;
    else return false;
    nodes[(*n_nodes)++] = ai;
    return true;
}

/* The x of y = Gelu(x) if node yi ends the pattern; the other nodes in
 * removed[] (count in *n_removed), the form in *tanh_form. */
static int match(const inf__pass_ctx *pc, int yi, int *removed, int *n_removed, bool *tanh_form) {
    const inf__node *y = &pc->g->nodes[yi];
    for (int o = 0; o < 2; o++) {
        int a = y->inputs[o], b = y->inputs[1 - o], x, inner, v;
        /* Mul(Mul(x, t), 0.5) */
        if (inf__pass_scalar_is(pc, b, 0.5f, 0) && (inner = inf__pass_producer(pc, a, "Mul")) >= 0 &&
            inf__pass_uses(pc, a, 1)) {
            const inf__node *m = &pc->g->nodes[inner];
            for (int p = 0; p < 2; p++)
                if (gelu_term(pc, m->inputs[1 - p], &x, removed, n_removed, tanh_form) && m->inputs[p] == x) {
                    removed[(*n_removed)++] = inner;
                    return x;
                }
        }
        /* Mul(Mul(x, 0.5), t) */
        if ((inner = inf__pass_producer(pc, a, "Mul")) >= 0 && inf__pass_uses(pc, a, 1) &&
            mul_by(pc, inner, 0.5f, 0, &v) && gelu_term(pc, b, &x, removed, n_removed, tanh_form) && v == x) {
            removed[(*n_removed)++] = inner;
            return x;
        }
        /* Mul(x, Mul(t, 0.5)) */
        if ((inner = inf__pass_producer(pc, b, "Mul")) >= 0 && inf__pass_uses(pc, b, 1) &&
            mul_by(pc, inner, 0.5f, 0, &v) && gelu_term(pc, v, &x, removed, n_removed, tanh_form) && a == x) {
            removed[(*n_removed)++] = inner;
            return x;
        }
    }
    return -1;
}

/* Do the constant inputs of the chain's nodes keep x's shape? */
static bool constants_fit(const inf__pass_ctx *pc, const int *nodes, int n_nodes, int x) {
    for (int i = 0; i < n_nodes; i++) {
        const inf__node *node = &pc->g->nodes[nodes[i]];
        for (int k = 0; k < node->n_inputs; k++) {
            int v = node->inputs[k];
            if (v >= 0 && v != x && pc->g->values[v].role == INF_VALUE_INITIALIZER && !inf__pass_const_fits(pc, v, x))
                return false;
        }
    }
    return true;
}

inf_status inf__pass_gelu(inf__pass_ctx *pc, int *n_rewritten, inf_error *err) {
    static const inf__attr tanh_attr = {.name = "approximate", .type = INF_ATTR_STRING, .s = "tanh", .s_len = 4};
    *n_rewritten = 0;
    for (int n = pc->g->n_nodes - 1; n >= 0; n--) {
        const inf__node *node = &pc->g->nodes[n];
        if (!inf__pass_node_is(pc, n, "Mul") || node->n_inputs != 2)
            continue;
        int removed[10], n_removed = 0;
        bool tanh_form = false;
        int x = match(pc, n, removed, &n_removed, &tanh_form);
        if (x < 0) continue;
        removed[n_removed] = n;
        if (!constants_fit(pc, removed, n_removed + 1, x)) continue;
        inf_status st = inf__pass_rewrite(pc, n, "ai.infera", "Gelu", 1, 1, &x, tanh_form ? 1 : 0,
                                          tanh_form ? &tanh_attr : NULL, removed, n_removed, err);
        if (st != INF_OK) return st;
        (*n_rewritten)++;
    }
    return INF_OK;
}
