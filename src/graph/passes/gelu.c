/*
 * gelu.c -- PyTorch's exact (erf) GELU, exported as five nodes, becomes the
 * internal fused op Gelu (ai.infera; ops/ref/gelu.c).
 *
 * PATTERN (commutative operands in either order; c, h constants):
 *     u = Div(x, c)  with c = sqrt 2     or  Mul(x, c) with c = 1/sqrt 2   (+-1e-6)
 *     e = Erf(u)
 *     t = Add(e, 1.0)
 *   and one of
 *     y = Mul(Mul(x, t), 0.5)     (torch.nn.functional.gelu's export)
 *     y = Mul(Mul(x, 0.5), t)     (x * 0.5 * (1 + erf(...)), HF BERT)
 *     y = Mul(x, Mul(t, 0.5))
 * ->  y = Gelu(x)
 *
 * WHY IT IS SAFE: each form is 0.5 x (1 + erf(x / sqrt 2)) with the
 * operations reassociated, which only moves float32 rounding; the constants
 * being float32 scalars forces x to be float32 (or the graph fails at run
 * time either way).  The intermediates u, e, t and the inner product have
 * no reader outside the chain.  The kernel is at least as accurate as the
 * chain (test_vmath.c: <= 20 ulp against double; the chain's 1 + erf loses
 * every digit of the negative tail).
 */
#include <string.h>

#include "graph/passes/passes.h"
#include "ops/ops.h"

#define SQRT2 1.41421356237f
#define SQRT1_2 0.70710678118f

/* t = Add(Erf(x / sqrt 2), 1): x in *x, the three nodes in nodes[]. */
static bool erf_term(const inf__pass_ctx *pc, int t, int *x, int *nodes) {
    const inf__graph *g = pc->g;
    int ai = inf__pass_producer(pc, t, "Add");
    if (ai < 0 || !inf__pass_uses(pc, t, 1)) return false;
    const inf__node *a = &g->nodes[ai];
    int e;
    if (inf__pass_scalar_is(pc, a->inputs[1], 1.0f, 0)) e = a->inputs[0];
    else if (inf__pass_scalar_is(pc, a->inputs[0], 1.0f, 0)) e = a->inputs[1];
    else return false;
    int ei = inf__pass_producer(pc, e, "Erf");
    if (ei < 0 || !inf__pass_uses(pc, e, 1)) return false;
    int u = g->nodes[ei].inputs[0], ui;
    if (!inf__pass_uses(pc, u, 1)) return false;
    if ((ui = inf__pass_producer(pc, u, "Div")) >= 0) {
        if (!inf__pass_scalar_is(pc, g->nodes[ui].inputs[1], SQRT2, 1e-6f)) return false;
        *x = g->nodes[ui].inputs[0];
    } else if ((ui = inf__pass_producer(pc, u, "Mul")) >= 0) {
        const inf__node *m = &g->nodes[ui];
        if (inf__pass_scalar_is(pc, m->inputs[1], SQRT1_2, 1e-6f)) *x = m->inputs[0];
        else if (inf__pass_scalar_is(pc, m->inputs[0], SQRT1_2, 1e-6f)) *x = m->inputs[1];
        else return false;
    } else {
        return false;
    }
    nodes[0] = ui, nodes[1] = ei, nodes[2] = ai;
    return true;
}

/* Mul node mi reads {a, b} with b the scalar 0.5: a in *a. */
static bool half_of(const inf__pass_ctx *pc, int mi, int *a) {
    const inf__node *m = &pc->g->nodes[mi];
    if (inf__pass_scalar_is(pc, m->inputs[1], 0.5f, 0)) *a = m->inputs[0];
    else if (inf__pass_scalar_is(pc, m->inputs[0], 0.5f, 0)) *a = m->inputs[1];
    else return false;
    return true;
}

/* The x of y = Gelu(x) if node yi ends the pattern; the other nodes in removed[4]. */
static int match(const inf__pass_ctx *pc, int yi, int *removed) {
    const inf__node *y = &pc->g->nodes[yi];
    for (int o = 0; o < 2; o++) {
        int a = y->inputs[o], b = y->inputs[1 - o], x, inner, v;
        /* Mul(Mul(x, t), 0.5) */
        if (inf__pass_scalar_is(pc, b, 0.5f, 0) && (inner = inf__pass_producer(pc, a, "Mul")) >= 0 &&
            inf__pass_uses(pc, a, 1)) {
            const inf__node *m = &pc->g->nodes[inner];
            for (int p = 0; p < 2; p++)
                if (erf_term(pc, m->inputs[1 - p], &x, removed) && m->inputs[p] == x) {
                    removed[3] = inner;
                    return x;
                }
        }
        /* Mul(Mul(x, 0.5), t) */
        if ((inner = inf__pass_producer(pc, a, "Mul")) >= 0 && inf__pass_uses(pc, a, 1) && half_of(pc, inner, &v) &&
            erf_term(pc, b, &x, removed) && v == x) {
            removed[3] = inner;
            return x;
        }
        /* Mul(x, Mul(t, 0.5)) */
        if ((inner = inf__pass_producer(pc, b, "Mul")) >= 0 && inf__pass_uses(pc, b, 1) && half_of(pc, inner, &v) &&
            erf_term(pc, v, &x, removed) && a == x) {
            removed[3] = inner;
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
    *n_rewritten = 0;
    for (int n = pc->g->n_nodes - 1; n >= 0; n--) {
        const inf__node *node = &pc->g->nodes[n];
        if (!inf__pass_node_is(pc, n, "Mul") || node->n_inputs != 2)
            continue;
        int removed[5], x = match(pc, n, removed);
        removed[4] = n;
        if (x < 0 || !constants_fit(pc, removed, 5, x)) continue;
        inf_status st = inf__pass_rewrite(pc, n, "ai.infera", "Gelu", 1, 1, &x, 0, NULL, removed, 4, err);
        if (st != INF_OK) return st;
        (*n_rewritten)++;
    }
    return INF_OK;
}
