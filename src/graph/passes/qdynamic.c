/*
 * qdynamic.c -- a dynamically quantized MatMul (what `infera quantize --mode
 * dynamic` and ONNX Runtime's quantize_dynamic write) becomes the internal
 * QGemm (ai.infera; ops/ref/quantize_fused.c) reading the
 * DynamicQuantizeLinear's bytes: one integer product on weights packed at
 * load whose store scales, biases and activates each row in cache, instead
 * of MatMulInteger's int32 tensor, a Cast, a Mul and an Add over it.
 *
 * PATTERN (both writers spell it so; the scale product's and the Mul's
 * operands in either order):
 *     xq, xs, xz = DynamicQuantizeLinear(x)
 *     acc = MatMulInteger(xq, Wq[, xz[, wz]])  Wq a constant 2-D 8-bit tensor [K, N]; wz constant, 1 or N values
 *                                              (the a_zero_point must be xz itself)
 *     f   = Cast(acc, to = FLOAT)
 *     s   = Mul(xs, ws)                        ws a float32 constant: a scalar or [N]
 *     y   = Mul(f, s)
 *   then, each optional, every link the only reader of the one before:
 *     y = Add(y, bias)                         bias a float32 constant [N]
 *     y = Relu(y)                              -> the QGemm's epilogue
 * ->  y = QGemm(xq, xs, xz, Wq, ws, wz, bias)  u8_in = 1, trans_b = 0
 *   The DynamicQuantizeLinear stays, one per activation (an encoder's Q, K
 *   and V projections share it, as ORT's files do; share_quantizations
 *   merges the copies Infera's quantizer writes); the scale Mul goes when
 *   the chain's Mul was its only reader.  Later passes treat the QGemm as any
 *   other: a GELU (passes/qdq.c) and a residual Add (passes/qdq_chain.c) go
 *   into its store.
 *
 * WHY IT IS BIT-IDENTICAL: the QGemm's integer sum is MatMulInteger's
 * (exact, zero points applied the same way), its store computes
 * (float)acc * (xs * ws[j]) + bias[j] with one float multiply for the scale
 * product (xs * ws[j], as the Mul node), the int32 -> float conversion
 * rounding to nearest as Cast does, then one multiply and one add, not
 * contracted into an FMA (-ffp-contract=off; the vector stores use separate
 * multiply and add instructions) -- the unfused chain's operations in its
 * order.  Relu is applied per element as the node would.  (The sign of an
 * exact zero may differ when there is no bias: the store adds +0.)
 */
#include <string.h>

#include "graph/passes/passes.h"
#include "ops/ops.h"

enum { MAX_REMOVED = 5 };

typedef struct dyn_match {
    int ins[7];
    int removed[MAX_REMOVED], n_removed;
    int target;
    bool relu;
} dyn_match;

static int input(const inf__node *n, int k) { return k < n->n_inputs ? n->inputs[k] : -1; }

static bool is_q8(const inf_tensor *t) { return t && (t->dtype == INF_DTYPE_U8 || t->dtype == INF_DTYPE_I8); }

/* The only node reading v (read once, not a graph output, live, no epilogue), or -1. */
static int sole_reader(const inf__pass_ctx *pc, int v) {
    if (v < 0 || pc->g->values[v].n_consumers != 1) return -1;
    for (int n = 0; n < pc->g->n_nodes; n++) {
        const inf__node *node = &pc->g->nodes[n];
        if (pc->dead[n]) continue;
        for (int k = 0; k < node->n_inputs; k++)
            if (node->inputs[k] == v) return node->epilogue.kind == INF_EPILOGUE_NONE ? n : -1;
    }
    return -1;
}

/* Is node r a live ONNX op_type with two inputs, one of them v?  *other: the other one. */
static bool binary_reads(const inf__pass_ctx *pc, int r, const char *op_type, int v, int *other) {
    const inf__node *n = &pc->g->nodes[r];
    if (!inf__pass_node_is(pc, r, op_type) || n->n_inputs != 2 || n->n_outputs != 1 || n->opset < 7) return false;
    *other = n->inputs[0] == v ? n->inputs[1] : n->inputs[0];
    return *other != v && (n->inputs[0] == v || n->inputs[1] == v);
}

/* A float32 constant of 1 value (rank <= 1) or of shape [n]. */
static bool per_column(const inf_tensor *t, int64_t n, bool scalar_ok) {
    if (!t || t->dtype != INF_DTYPE_F32 || t->ndim > 1) return false;
    return (scalar_ok && inf_tensor_numel(t) == 1) || (t->ndim == 1 && t->dims[0] == n);
}

/* The weight operand: Wq [K, N] constant 8-bit, wz absent or constant of W's type, 1 or N values. */
static bool match_weight(const inf__pass_ctx *pc, const inf__node *mm, int64_t *n) {
    const inf_tensor *w = inf__pass_const_tensor(pc, mm->inputs[1]);
    if (!is_q8(w) || w->ndim != 2 || !w->data) return false;
    *n = w->dims[1];
    int wzv = input(mm, 3);
    if (wzv < 0) return true;
    const inf_tensor *wz = inf__pass_const_tensor(pc, wzv);
    return wz && wz->dtype == w->dtype && wz->ndim <= 1 && (inf_tensor_numel(wz) == 1 || inf_tensor_numel(wz) == *n);
}

/* The scale: s = Mul(xs, ws) with ws a constant scalar or [n]; fills ins[4], removes the Mul if f's Mul alone reads s.
 */
static bool match_scale(const inf__pass_ctx *pc, int s, int xs, int64_t n, dyn_match *m) {
    int sm = inf__pass_producer(pc, s, "Mul"), ws;
    if (sm < 0 || !binary_reads(pc, sm, "Mul", xs, &ws) || !per_column(inf__pass_const_tensor(pc, ws), n, true))
        return false;
    m->ins[4] = ws;
    if (inf__pass_uses(pc, s, 1)) m->removed[m->n_removed++] = sm;
    return true;
}

/* MatMulInteger node i and the chain after it; fills m. */
static bool match_chain(const inf__pass_ctx *pc, int i, dyn_match *m) {
    const inf__node *mm = &pc->g->nodes[i];
    if (!inf__pass_node_is(pc, i, "MatMulInteger") || mm->n_inputs < 3 || mm->n_outputs != 1) return false;
    int dq = inf__pass_producer(pc, mm->inputs[0], "DynamicQuantizeLinear");
    if (dq < 0) return false;
    const inf__node *d = &pc->g->nodes[dq];
    if (d->n_outputs != 3 || d->outputs[0] != mm->inputs[0] || d->outputs[2] != mm->inputs[2] || d->outputs[1] < 0)
        return false;
    int64_t n;
    if (!match_weight(pc, mm, &n)) return false;
    for (int k = 0; k < 7; k++) m->ins[k] = -1;
    m->n_removed = 0, m->relu = false;
    m->ins[0] = d->outputs[0], m->ins[1] = d->outputs[1], m->ins[2] = d->outputs[2];
    m->ins[3] = mm->inputs[1], m->ins[5] = input(mm, 3);
    int c = sole_reader(pc, mm->outputs[0]), s;
    if (c < 0 || !inf__pass_node_is(pc, c, "Cast") || inf__attr_int(&pc->g->nodes[c], "to", 0) != INF_DTYPE_F32)
        return false;
    int f = pc->g->nodes[c].outputs[0], y = sole_reader(pc, f);
    if (y < 0 || !binary_reads(pc, y, "Mul", f, &s) || !match_scale(pc, s, d->outputs[1], n, m)) return false;
    m->removed[m->n_removed++] = i, m->removed[m->n_removed++] = c;
    m->target = y;
    int v = pc->g->nodes[y].outputs[0], r = sole_reader(pc, v), b;
    if (r >= 0 && binary_reads(pc, r, "Add", v, &b) && per_column(inf__pass_const_tensor(pc, b), n, false)) {
        m->removed[m->n_removed++] = m->target;
        m->ins[6] = b, m->target = r, v = pc->g->nodes[r].outputs[0];
        r = sole_reader(pc, v);
    }
    if (r >= 0 && inf__pass_node_is(pc, r, "Relu")) {
        m->removed[m->n_removed++] = m->target;
        m->relu = true, m->target = r;
    }
    return true;
}

/* SHARED QUANTIZATION: DynamicQuantizeLinear nodes of the same x (Infera's quantizer writes one per MatMul: an
 * encoder's Q, K and V projections quantize their input three times; ORT's writes one) give the same bytes, scale
 * and zero point: the later one's readers read the first one's outputs, and it goes when nothing else reads it (a
 * graph output or a subgraph's read keeps it).  Nodes are in topological order, so its readers follow it. */
static int share_quantizations(inf__pass_ctx *pc) {
    inf__graph *g = pc->g;
    int n_shared = 0;
    for (int j = 0; j < g->n_nodes; j++) {
        const inf__node *dj = &g->nodes[j];
        if (!inf__pass_node_is(pc, j, "DynamicQuantizeLinear") || dj->n_inputs != 1 || dj->n_outputs != 3) continue;
        int i = 0;
        for (; i < j; i++)
            if (inf__pass_node_is(pc, i, "DynamicQuantizeLinear") && g->nodes[i].n_inputs == 1 &&
                g->nodes[i].n_outputs == 3 && g->nodes[i].inputs[0] == dj->inputs[0])
                break;
        if (i == j) continue;
        bool any = false;
        for (int k = 0; k < 3; k++) {
            int from = dj->outputs[k], to = g->nodes[i].outputs[k];
            if (from >= 0 && to >= 0 && inf__pass_redirect_reads(pc, j, from, to) > 0) any = true;
        }
        bool unread = true;
        for (int k = 0; k < 3; k++)
            if (dj->outputs[k] >= 0 && g->values[dj->outputs[k]].n_consumers > 0) unread = false;
        if (unread) inf__pass_remove_node(pc, j);
        n_shared += any;
    }
    return n_shared;
}

inf_status inf__pass_qdynamic(inf__pass_ctx *pc, int *n_rewritten, inf_error *err) {
    static const inf__attr attrs[2] = {{.name = "trans_b", .type = INF_ATTR_INT, .i = 0},
                                       {.name = "u8_in", .type = INF_ATTR_INT, .i = 1}};
    *n_rewritten = share_quantizations(pc);
    for (int i = 0; i < pc->g->n_nodes; i++) {
        dyn_match m;
        if (!match_chain(pc, i, &m)) continue;
        inf_status st =
            inf__pass_rewrite(pc, m.target, "ai.infera", "QGemm", 1, 7, m.ins, 2, attrs, m.removed, m.n_removed, err);
        if (st != INF_OK) return st;
        if (m.relu) pc->g->nodes[m.target].epilogue.kind = INF_EPILOGUE_RELU;
        (*n_rewritten)++;
    }
    return INF_OK;
}
