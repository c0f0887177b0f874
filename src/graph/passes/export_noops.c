/*
 * export_noops.c -- what torch.onnx.export writes between the ops of the
 * patterns the later passes fuse, and that computes nothing (or only a
 * transpose): removed first, so the attention pass sees its chain.
 *
 * PATTERNS (dims from static shape inference, graph/shape_infer.c, run
 * here on the folded graph: a dimension is a number or a symbol, and equal
 * symbols are the same run-time quantity):
 *   y = Dropout(x)  (output `mask` unread)            -> readers of y read x
 *   y = Reshape(x, s) with y's dims equal to x's       -> readers of y read x
 *       (torch's scaled_dot_product_attention, TorchScript exporter: a
 *        Reshape of P V to [b, h, s, d] built from Shape/Gather/Concat)
 *   y = Cast(x, to) with x known to be of type `to`    -> readers of y read x
 *       (the TorchScript exporter's hidden_states.to(torch.float32) in
 *        Llama's and T5's RMSNorm)
 *   y = Reshape(Transpose(Reshape(t, s1), [0, 2, 1]), s2)
 *       t [a, b, c, d], Reshape(t, s1) [*, c, d], y [a, b, d, c]
 *                                                      -> y = Transpose(t, [0, 1, 3, 2])
 *       (the same function, dynamo exporter: K^T as [a*b, c, d] -> [a*b, d, c]);
 *       when t = Transpose(k, p), y = Transpose(k, p then [0, 1, 3, 2]).
 *
 * WHY IT IS SAFE: Dropout at inference is the identity (ops/ref/identity.c:
 * training_mode does not change what Infera computes).  A Reshape that
 * keeps every dimension keeps every element where it was (row-major), so
 * y and x are the same tensor.  A Cast to the type its input already has
 * copies every element unchanged (the input's type is its declared or
 * constant type carried by shape inference's rules).  In the last,
 * Reshape(t, s1) keeps t's last two dimensions, so it only merges a and b
 * (its first dimension is a*b, the element count being kept); the
 * Transpose swaps the last two of each [c, d] matrix; the last Reshape splits a*b into a, b again (its dims are
 * exactly [a, b, d, c]): element (i, j, q, p) of y is t's (i, j, p, q).
 * A bypassed value that is a graph output, or is read inside a subgraph,
 * keeps its node (its readers still read it; only explicit inputs move).
 * The shape subgraphs that fed the removed Reshapes lose their readers and
 * the optimizer's dead-node sweep drops them (graph/optimize.c runs one
 * right after this pass).
 */
#include <string.h>

#include "graph/passes/passes.h"
#include "graph/shape_infer.h"
#include "ops/ops.h"

static bool same_dims(const int64_t *a, const int64_t *b, int rank) {
    for (int i = 0; i < rank; i++)
        if (a[i] != b[i]) return false;
    return true;
}

/* Live nodes' explicit reads of value y now read x; node yi (y's producer)
 * is marked dead when nothing reads y any more. */
static void bypass(inf__pass_ctx *pc, int yi, int y, int x) {
    inf__pass_redirect_reads(pc, yi, y, x);
    if (pc->g->values[y].n_consumers > 0) return; /* a graph output, or read by a subgraph */
    inf__pass_remove_node(pc, yi);
}

static bool is_dropout_alias(const inf__pass_ctx *pc, int n) {
    const inf__node *d = &pc->g->nodes[n];
    return inf__pass_node_is(pc, n, "Dropout") && d->n_inputs >= 1 && d->inputs[0] >= 0 && d->outputs[0] >= 0 &&
           (d->n_outputs < 2 || d->outputs[1] < 0 || pc->g->values[d->outputs[1]].n_consumers == 0);
}

static bool is_noop_reshape(const inf__pass_ctx *pc, const inf__shape_infer *si, int n) {
    const inf__node *r = &pc->g->nodes[n];
    if (!inf__pass_node_is(pc, n, "Reshape") || r->n_inputs != 2 || r->inputs[0] < 0 || r->outputs[0] < 0) return false;
    int64_t dx[INF_MAX_DIMS], dy[INF_MAX_DIMS];
    int rx = inf__shape_infer_dims(si, r->inputs[0], dx), ry = inf__shape_infer_dims(si, r->outputs[0], dy);
    return rx >= 0 && rx == ry && same_dims(dx, dy, rx);
}

/* y = Cast(x, to) where x is known to be of type `to` already (the
 * TorchScript exporter's hidden_states.to(torch.float32) in RMSNorm). */
static bool is_noop_cast(const inf__pass_ctx *pc, const inf__shape_infer *si, int n) {
    const inf__node *c = &pc->g->nodes[n];
    if (!inf__pass_node_is(pc, n, "Cast") || c->n_inputs != 1 || c->inputs[0] < 0 || c->outputs[0] < 0) return false;
    inf_dtype t = inf__shape_infer_dtype(si, c->inputs[0]);
    return t != INF_DTYPE_UNDEFINED && (int64_t)t == inf__attr_int(c, "to", -1);
}

static const int64_t SWAP_LAST[4] = {0, 1, 3, 2};

/* Node n is the last Reshape of the K^T chain: t (its source) in *t and
 * the two nodes before it in removed[0..1]. */
static bool reshape_kt_chain(const inf__pass_ctx *pc, const inf__shape_infer *si, int n, int *t, int *removed) {
    const inf__node *y = &pc->g->nodes[n];
    if (!inf__pass_node_is(pc, n, "Reshape") || y->n_inputs != 2 || y->outputs[0] < 0) return false;
    int ui = inf__pass_producer(pc, y->inputs[0], "Transpose");
    if (ui < 0 || !inf__pass_uses(pc, y->inputs[0], 1)) return false;
    int np;
    const int64_t *perm = inf__attr_ints(&pc->g->nodes[ui], "perm", &np);
    if (!perm || np != 3 || perm[0] != 0 || perm[1] != 2 || perm[2] != 1) return false;
    int u_in = pc->g->nodes[ui].inputs[0];
    int r1 = inf__pass_producer(pc, u_in, "Reshape");
    if (r1 < 0 || !inf__pass_uses(pc, u_in, 1)) return false;
    *t = pc->g->nodes[r1].inputs[0];
    int64_t dt[INF_MAX_DIMS], d1[INF_MAX_DIMS], dy[INF_MAX_DIMS];
    if (inf__shape_infer_dims(si, *t, dt) != 4 || inf__shape_infer_dims(si, u_in, d1) != 3 ||
        inf__shape_infer_dims(si, y->outputs[0], dy) != 4)
        return false;
    if (d1[1] != dt[2] || d1[2] != dt[3] || dy[0] != dt[0] || dy[1] != dt[1] || dy[2] != dt[3] || dy[3] != dt[2])
        return false;
    removed[0] = ui, removed[1] = r1;
    return true;
}

/* Rewrites node n into Transpose(t, [0, 1, 3, 2]) -- Transpose(k, p then
 * that) when t = Transpose(k, p) -- removing the two nodes in removed. */
static inf_status to_transpose(inf__pass_ctx *pc, int n, int t, const int *removed, inf_error *err) {
    int64_t *perm = inf__arena_alloc(&pc->model->arena, 4 * sizeof *perm);
    if (!perm) return inf_error_set(err, INF_ENOMEM, "out of memory optimising the graph");
    memcpy(perm, SWAP_LAST, sizeof SWAP_LAST);
    int ti = inf__pass_producer(pc, t, "Transpose"), np;
    const int64_t *p = ti >= 0 ? inf__attr_ints(&pc->g->nodes[ti], "perm", &np) : NULL;
    if (p && np == 4) { /* y[i] = t[..SWAP_LAST[i]..] = k[..p[SWAP_LAST[i]]..] */
        for (int i = 0; i < 4; i++) perm[i] = p[SWAP_LAST[i]];
        t = pc->g->nodes[ti].inputs[0];
    }
    inf__attr attr = {.name = "perm", .type = INF_ATTR_INTS, .n = 4, .ints = perm};
    return inf__pass_rewrite(pc, n, "", "Transpose", 13, 1, &t, 1, &attr, removed, 2, err);
}

inf_status inf__pass_export_noops(inf__pass_ctx *pc, int *n_rewritten, inf_error *err) {
    *n_rewritten = 0;
    inf__graph *g = pc->g;
    inf__shape_infer *si = inf__shape_infer_new(g);
    if (!si) return inf_error_set(err, INF_ENOMEM, "out of memory optimising the graph");
    for (int n = 0; n < g->n_nodes; n++)
        if (!pc->dead[n]) inf__shape_infer_node(si, &g->nodes[n]);
    inf_status st = INF_OK;
    for (int n = 0; n < g->n_nodes && st == INF_OK; n++) {
        const inf__node *node = &g->nodes[n];
        int t, removed[2];
        if (is_dropout_alias(pc, n) || is_noop_reshape(pc, si, n) || is_noop_cast(pc, si, n)) {
            bypass(pc, n, node->outputs[0], node->inputs[0]);
            (*n_rewritten)++;
        } else if (reshape_kt_chain(pc, si, n, &t, removed)) {
            st = to_transpose(pc, n, t, removed, err);
            (*n_rewritten)++;
        }
    }
    inf__shape_infer_free(si);
    return st;
}
