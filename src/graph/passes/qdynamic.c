/*
 * qdynamic.c -- a dynamically quantized MatMul or Conv (what `infera quantize
 * --mode dynamic` and ONNX Runtime's quantize_dynamic write) becomes the
 * internal QGemm / QConv (ai.infera; ops/ref/quantize_fused.c) reading the
 * DynamicQuantizeLinear's bytes: one integer product on weights packed at
 * load whose store scales, biases and activates each row (each block of a
 * conv's output) in cache, instead of MatMulInteger's / ConvInteger's int32
 * tensor, a Cast, a Mul and an Add over it.
 *
 * PATTERN (both writers spell it so; the scale product's and the Mul's
 * operands in either order):
 *     xq, xs, xz = DynamicQuantizeLinear(x)
 *     acc = MatMulInteger(xq, Wq[, xz[, wz]])  Wq a constant 2-D 8-bit tensor [K, N]; wz constant, 1 or N values
 *                                              (the a_zero_point must be xz itself)
 *         | ConvInteger(xq, Wq, xz[, wz])      Wq a constant 3-D/4-D 8-bit tensor [N, C/group, k...] (1-D/2-D
 *                                              conv), wz constant, 1 or N values; the Conv attributes
 *     f   = Cast(acc, to = FLOAT)
 *     s   = Mul(xs, ws)                        ws a float32 constant: a scalar or one value per output channel
 *     y   = Mul(f, s)                          ([N] for MatMul; for Conv a shape broadcasting along the output's
 *                                              axis 1: [1, N, 1, 1] or [N, 1, 1])
 *   then, each optional, every link the only reader of the one before:
 *     y = Add(y, bias)                         bias a float32 constant, one value per output channel (as ws)
 *     y = Relu(y)                              -> the node's epilogue
 * ->  y = QGemm(xq, xs, xz, Wq, ws, wz, bias)  u8_in = 1, trans_b = 0
 *       | QConv(xq, xs, xz, Wq, ws, wz, bias)  the ConvInteger's attributes; x 8-bit [n, c, h, w] as written
 *   The DynamicQuantizeLinear stays, one per activation (an encoder's Q, K
 *   and V projections share it, as ORT's files do; share_quantizations
 *   merges the copies Infera's quantizer writes -- a downsampling block's
 *   conv and shortcut too); the scale Mul goes when the chain's Mul was its
 *   only reader.  Later passes treat the QGemm / QConv as any other: a GELU
 *   (passes/qdq.c) and a residual Add (passes/qdq_chain.c) go into its
 *   store, a MaxPool after a QConv into its pooled store.
 *   The MatMul form runs with passes/qdq.c, before constant folding; the Conv
 *   form after it (inf__pass_qdynamic_conv): ONNX Runtime writes the conv's
 *   bias as Reshape(bias, [1, N, 1, 1]), a constant only once folded.
 *
 * WHY IT IS BIT-IDENTICAL: the fused integer sum is MatMulInteger's /
 * ConvInteger's (exact, zero points applied the same way), its store
 * computes (float)acc * (xs * ws[j]) + bias[j] with one float multiply for
 * the scale product (xs * ws[j], as the Mul node), the int32 -> float
 * conversion rounding to nearest as Cast does, then one multiply and one
 * add, not contracted into an FMA (-ffp-contract=off; the vector stores use
 * separate multiply and add instructions) -- the unfused chain's operations
 * in its order.  Relu is applied per element as the node would.  (The sign
 * of an exact zero may differ when there is no bias: the store adds +0.)
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

/* One value per output channel of a product of output rank `rank` (0: a MatMul, whose channels are the last
 * axis), or 1 value when scalar_ok: a float32 constant of 1 value (rank <= 1; a Conv's: any rank up to its
 * output's), or of shape [n] (MatMul), or of n values along the output's axis 1 (Conv: [1, n, 1, 1], [n, 1, 1]). */
static bool per_channel(const inf_tensor *t, int64_t n, int rank, bool scalar_ok) {
    if (!t || t->dtype != INF_DTYPE_F32 || t->ndim > (rank ? rank : 1)) return false;
    if (scalar_ok && inf_tensor_numel(t) == 1) return true;
    if (!rank) return t->ndim == 1 && t->dims[0] == n;
    int at = t->ndim - rank + 1; /* t's axis under the output's axis 1 (right-aligned broadcasting) */
    if (at < 0) return false;
    for (int d = 0; d < t->ndim; d++)
        if (t->dims[d] != (d == at ? n : 1)) return false;
    return true;
}

/* The weight operand of product node mm: Wq constant 8-bit, [K, N] (MatMulInteger) or [N, C/group, k...]
 * (ConvInteger, 1-D/2-D); wz absent or a constant of W's type, 1 or N values (rank <= 1).  *n: N, *rank: the
 * output's rank for a conv, 0 for a MatMul. */
static bool match_weight(const inf__pass_ctx *pc, const inf__node *mm, bool conv, int64_t *n, int *rank) {
    const inf_tensor *w = inf__pass_const_tensor(pc, mm->inputs[1]);
    if (!is_q8(w) || !w->data || (conv ? w->ndim != 3 && w->ndim != 4 : w->ndim != 2)) return false;
    *n = w->dims[conv ? 0 : 1], *rank = conv ? w->ndim : 0;
    int wzv = input(mm, 3);
    if (wzv < 0) return true;
    const inf_tensor *wz = inf__pass_const_tensor(pc, wzv);
    return wz && wz->dtype == w->dtype && wz->ndim <= 1 && (inf_tensor_numel(wz) == 1 || inf_tensor_numel(wz) == *n);
}

/* The scale: s = Mul(xs, ws) with ws a constant scalar or per channel; fills ins[4], removes the Mul if f's Mul
 * alone reads s. */
static bool match_scale(const inf__pass_ctx *pc, int s, int xs, int64_t n, int rank, dyn_match *m) {
    int sm = inf__pass_producer(pc, s, "Mul"), ws;
    if (sm < 0 || !binary_reads(pc, sm, "Mul", xs, &ws) || !per_channel(inf__pass_const_tensor(pc, ws), n, rank, true))
        return false;
    m->ins[4] = ws;
    if (inf__pass_uses(pc, s, 1)) m->removed[m->n_removed++] = sm;
    return true;
}

/* MatMulInteger (conv: ConvInteger) node i and the chain after it; fills m. */
static bool match_chain(const inf__pass_ctx *pc, int i, bool conv, dyn_match *m) {
    const inf__node *mm = &pc->g->nodes[i];
    if (!inf__pass_node_is(pc, i, conv ? "ConvInteger" : "MatMulInteger") || mm->n_inputs < 3 || mm->n_outputs != 1)
        return false;
    int dq = inf__pass_producer(pc, mm->inputs[0], "DynamicQuantizeLinear");
    if (dq < 0) return false;
    const inf__node *d = &pc->g->nodes[dq];
    if (d->n_outputs != 3 || d->outputs[0] != mm->inputs[0] || d->outputs[2] != mm->inputs[2] || d->outputs[1] < 0)
        return false;
    int64_t n;
    int rank;
    if (!match_weight(pc, mm, conv, &n, &rank)) return false;
    for (int k = 0; k < 7; k++) m->ins[k] = -1;
    m->n_removed = 0, m->relu = false;
    m->ins[0] = d->outputs[0], m->ins[1] = d->outputs[1], m->ins[2] = d->outputs[2];
    m->ins[3] = mm->inputs[1], m->ins[5] = input(mm, 3);
    int c = sole_reader(pc, mm->outputs[0]), s;
    if (c < 0 || !inf__pass_node_is(pc, c, "Cast") || inf__attr_int(&pc->g->nodes[c], "to", 0) != INF_DTYPE_F32)
        return false;
    int f = pc->g->nodes[c].outputs[0], y = sole_reader(pc, f);
    if (y < 0 || !binary_reads(pc, y, "Mul", f, &s) || !match_scale(pc, s, d->outputs[1], n, rank, m)) return false;
    m->removed[m->n_removed++] = i, m->removed[m->n_removed++] = c;
    m->target = y;
    int v = pc->g->nodes[y].outputs[0], r = sole_reader(pc, v), b;
    if (r >= 0 && binary_reads(pc, r, "Add", v, &b) && per_channel(inf__pass_const_tensor(pc, b), n, rank, false)) {
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
        if (!match_chain(pc, i, false, &m)) continue;
        inf_status st =
            inf__pass_rewrite(pc, m.target, "ai.infera", "QGemm", 1, 7, m.ins, 2, attrs, m.removed, m.n_removed, err);
        if (st != INF_OK) return st;
        if (m.relu) pc->g->nodes[m.target].epilogue.kind = INF_EPILOGUE_RELU;
        (*n_rewritten)++;
    }
    return INF_OK;
}

inf_status inf__pass_qdynamic_conv(inf__pass_ctx *pc, int *n_rewritten, inf_error *err) {
    *n_rewritten = 0; /* the DynamicQuantizeLinear copies were merged by inf__pass_qdynamic */
    for (int i = 0; i < pc->g->n_nodes; i++) {
        dyn_match m;
        if (!match_chain(pc, i, true, &m)) continue;
        /* the ConvInteger's attributes (arena memory) outlive it: the rewrite copies the array */
        const inf__node *ci = &pc->g->nodes[i];
        inf_status st = inf__pass_rewrite(pc, m.target, "ai.infera", "QConv", 1, 7, m.ins, ci->n_attrs, ci->attrs,
                                          m.removed, m.n_removed, err);
        if (st != INF_OK) return st;
        if (m.relu) pc->g->nodes[m.target].epilogue.kind = INF_EPILOGUE_RELU;
        (*n_rewritten)++;
    }
    return INF_OK;
}
