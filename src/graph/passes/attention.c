/*
 * attention.c -- scaled-dot-product attention, as PyTorch exports it,
 * becomes the internal fused op Attention (ai.infera; ops/ref/attention.c).
 *
 * PATTERN (r = 4: hand-written BERT-style heads, x.view(b, s, h, d).permute(0, 2, 1, 3);
 *          r = 3: nn.MultiheadAttention, which folds batch into heads: [s, b*h, d]):
 *     Qt = Transpose(q, SWAP)            SWAP = [0, 2, 1, 3] (r = 4) or [1, 0, 2] (r = 3)
 *     Kt = Transpose(k, KT)              KT   = [0, 2, 3, 1] (r = 4) or [1, 2, 0] (r = 3)
 *     Vt = Transpose(v, SWAP)
 *     Qs = Qt | Div(Qt, c) | Mul(Qt, c) | Mul(c, Qt)           (MultiheadAttention scales Q)
 *     S  = MatMul(Qs, Kt)
 *     Ss = S | Div(S, c) | Mul(S, c) | Mul(c, S)              (BERT scales the scores)
 *     Sm = Ss | Add(Ss, mask) | Add(mask, Ss)
 *     P  = Softmax(Sm, axis = r - 1)
 *     Y  = Transpose(MatMul(P, Vt), SWAP)
 * ->  Y  = Attention(q, k, v [, mask]; scale = product of the c's (1/c for Div))
 *   with at least one scale constant.  The Reshapes that make q, k, v from
 *   the [b, s, h*d] projections, and the one after Y, stay: they are free
 *   (they alias their input), and keeping them means the pass never has to
 *   prove anything about the shape subgraphs (Shape -> Gather -> Concat)
 *   that feed them.
 *
 * WHY IT IS SAFE: the fused kernel computes exactly the chain's
 * mathematics on the same tensors, reading q, k, v through strides instead
 * of transposed copies; the scale moves from a separate Div/Mul into the
 * product, which only moves float32 rounding.  The constants c are float32
 * scalars of rank <= r (so they neither change the chain's shapes nor
 * allow any dtype but float32, the kernel's only one).  Every intermediate
 * (Qt, Kt, Vt, Qs, S, Ss, Sm, P, MatMul(P, Vt)) has exactly one reader, in
 * the chain, so nothing outside sees a removed value.  Softmax's axis is
 * the last one (at opsets below 13 its flattening is then the same).  A
 * mask that would broadcast the scores to a larger shape, or batch/head
 * dimensions that do not broadcast, are reported by the kernel at run time.
 */
#include <string.h>

#include "graph/passes/passes.h"
#include "ops/ops.h"

enum { MAX_REMOVED = 9 };

typedef struct att_match {
    int q, k, v, mask;   /* value indices; mask -1 when absent */
    float scale;
    bool scaled;         /* at least one scale constant seen */
    int removed[MAX_REMOVED], n_removed;
} att_match;

static bool perm_is(const inf__node *t, int r, const int64_t *want) {
    int n;
    const int64_t *perm = inf__attr_ints(t, "perm", &n);
    if (!perm || n != r) return false;
    for (int i = 0; i < r; i++)
        if (perm[i] != want[i]) return false;
    return true;
}

static const int64_t SWAP4[4] = {0, 2, 1, 3}, KT4[4] = {0, 2, 3, 1}, SWAP3[3] = {1, 0, 2}, KT3[3] = {1, 2, 0};

/* x = Transpose(src, perm) with x read once: src in *src. */
static bool transposed(const inf__pass_ctx *pc, int x, int r, const int64_t *perm, int *src, att_match *m) {
    int ti = inf__pass_producer(pc, x, "Transpose");
    if (ti < 0 || !inf__pass_uses(pc, x, 1) || !perm_is(&pc->g->nodes[ti], r, perm)) return false;
    *src = pc->g->nodes[ti].inputs[0];
    m->removed[m->n_removed++] = ti;
    return true;
}

/* A float32 scalar constant of rank <= r: its value in *c. */
static bool scale_const(const inf__pass_ctx *pc, int v, int r, float *c) {
    const inf_tensor *t = inf__pass_const_f32(pc, v);
    return t && t->ndim <= r && inf__pass_scalar(pc, v, c);
}

/* Strips an optional Div(x, c) / Mul(x, c) / Mul(c, x) off value x (read
 * once), folding c into m->scale; returns the unscaled value. */
static int unscale(const inf__pass_ctx *pc, int x, int r, att_match *m) {
    if (!inf__pass_uses(pc, x, 1)) return x;
    float c;
    int di = inf__pass_producer(pc, x, "Div");
    if (di >= 0) {
        const inf__node *d = &pc->g->nodes[di];
        if (d->n_inputs != 2 || !scale_const(pc, d->inputs[1], r, &c) || c == 0.0f) return x;
        m->scale /= c, m->scaled = true, m->removed[m->n_removed++] = di;
        return d->inputs[0];
    }
    int mi = inf__pass_producer(pc, x, "Mul");
    if (mi < 0 || pc->g->nodes[mi].n_inputs != 2) return x;
    const inf__node *mul = &pc->g->nodes[mi];
    for (int o = 0; o < 2; o++)
        if (scale_const(pc, mul->inputs[o], r, &c)) {
            m->scale *= c, m->scaled = true, m->removed[m->n_removed++] = mi;
            return mul->inputs[1 - o];
        }
    return x;
}

/* Sm = [Add(] [scale(] MatMul(Qs, Kt) [)] [, mask)] down to q and k. */
static bool scores(const inf__pass_ctx *pc, int sm, int r, att_match *m) {
    int start = m->n_removed;
    int ai = inf__pass_producer(pc, sm, "Add");
    int n_try = ai >= 0 && inf__pass_uses(pc, sm, 1) && pc->g->nodes[ai].n_inputs == 2 ? 2 : 0;
    for (int o = 0; o <= n_try; o++) {
        m->n_removed = start, m->scale = 1.0f, m->scaled = false, m->mask = -1;
        int s = sm;
        if (o < n_try) { /* the scores are operand o of the Add, the mask the other */
            s = pc->g->nodes[ai].inputs[o];
            m->mask = pc->g->nodes[ai].inputs[1 - o];
            m->removed[m->n_removed++] = ai;
        }
        s = unscale(pc, s, r, m);
        int mm = inf__pass_producer(pc, s, "MatMul");
        if (mm < 0 || !inf__pass_uses(pc, s, 1)) continue;
        m->removed[m->n_removed++] = mm;
        int qs = unscale(pc, pc->g->nodes[mm].inputs[0], r, m);
        if (m->scaled && transposed(pc, qs, r, r == 4 ? SWAP4 : SWAP3, &m->q, m) &&
            transposed(pc, pc->g->nodes[mm].inputs[1], r, r == 4 ? KT4 : KT3, &m->k, m))
            return true;
    }
    return false;
}

/* Y = Transpose(MatMul(Softmax(Sm), Vt), SWAP) ending at node yi. */
static bool match(const inf__pass_ctx *pc, int yi, att_match *m) {
    const inf__node *y = &pc->g->nodes[yi];
    int r;
    if (perm_is(y, 4, SWAP4)) r = 4;
    else if (perm_is(y, 3, SWAP3)) r = 3;
    else return false;
    m->n_removed = 0;
    int ctx = y->inputs[0];
    int mi = inf__pass_producer(pc, ctx, "MatMul");
    if (mi < 0 || !inf__pass_uses(pc, ctx, 1) || pc->g->nodes[mi].n_inputs != 2) return false;
    m->removed[m->n_removed++] = mi;
    int p = pc->g->nodes[mi].inputs[0];
    int si = inf__pass_producer(pc, p, "Softmax");
    if (si < 0 || !inf__pass_uses(pc, p, 1)) return false;
    const inf__node *sm = &pc->g->nodes[si];
    int64_t axis = inf__attr_int(sm, "axis", sm->opset >= 13 ? -1 : 1);
    if (axis != r - 1 && axis != -1) return false;
    m->removed[m->n_removed++] = si;
    if (!transposed(pc, pc->g->nodes[mi].inputs[1], r, r == 4 ? SWAP4 : SWAP3, &m->v, m)) return false;
    return scores(pc, sm->inputs[0], r, m);
}

inf_status inf__pass_attention(inf__pass_ctx *pc, int *n_rewritten, inf_error *err) {
    *n_rewritten = 0;
    for (int n = pc->g->n_nodes - 1; n >= 0; n--) {
        const inf__node *node = &pc->g->nodes[n];
        if (pc->dead[n] || !node->op || node->op->domain != INF_DOMAIN_ONNX || strcmp(node->op_type, "Transpose") ||
            node->n_inputs != 1 || node->epilogue.kind != INF_EPILOGUE_NONE)
            continue;
        att_match m;
        if (!match(pc, n, &m)) continue;
        int inputs[4] = {m.q, m.k, m.v, m.mask};
        inf__attr attr = {.name = "scale", .type = INF_ATTR_FLOAT, .f = m.scale};
        inf_status st = inf__pass_rewrite(pc, n, "ai.infera", "Attention", 1, m.mask >= 0 ? 4 : 3, inputs, 1, &attr,
                                          m.removed, m.n_removed, err);
        if (st != INF_OK) return st;
        (*n_rewritten)++;
    }
    return INF_OK;
}
