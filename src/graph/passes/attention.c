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
 *     Ks = Kt | Div(Kt, c) | Mul(Kt, c) | Mul(c, Kt)           (torch's SDPA: sqrt(scale) on Q and K^T)
 *     S  = MatMul(Qs, Ks)
 *     Ss = S | Div(S, c) | Mul(S, c) | Mul(c, S)              (BERT scales the scores)
 *     Sm = Ss | Add(Ss, mask) | Add(mask, Ss)
 *     Sp = Softmax(Sm, axis = r - 1)
 *     P  = Sp | Where(IsNaN(Sp), 0, Sp)                        (torch's SDPA, FP32 form only)
 *     Y  = Transpose(MatMul(P, Vt), SWAP)
 *        | Transpose(Reshape(MatMul(P, Vt), s), SWAP4)          (torch's SDPA: P V "reshaped" to
 *                                                               the shape it rebuilt from Shape nodes)
 * ->  Y  = Attention(q, k, v [, mask]; scale = product of the c's (1/c for Div),
 *   1 when there are none: T5 does not scale its scores, and the dynamo
 *   exporter drops SDPA's Mul by sqrt(1)); nan_to_zero = 1 when P is the Where
 *   (the kernel then gives zeros for a row whose softmax is NaN, as the
 *   Where does: a fully masked row).  With the Reshape: when its shape is
 *   provably P V's own (shape_is_own: a Concat of P V's, Q's rows' and V's
 *   columns' dimensions read through Shape -> Gather, constants static
 *   shape inference knows to be those, one -1) it is dropped; otherwise s
 *   becomes Attention's input 4 and the kernel checks at run time that it
 *   is P V's shape (an error naming both if not: a Reshape that moves
 *   elements cannot be fused).
 *   Chain values that Shape nodes read besides the chain (torch's SDPA
 *   export reads Q's, V's and P V's shapes to build s) are allowed: the
 *   rewrite then removes nothing and leaves the chain to the dead-node sweep
 *   that follows this pass (graph/optimize.c), which drops it once those
 *   Shapes have died with s -- or keeps what is still read, correct either
 *   way.  The Reshapes that make q, k, v from
 *   the [b, s, h*d] projections, and the one after Y, stay: they are free
 *   (they alias their input), and keeping them means the pass never has to
 *   prove anything about the shape subgraphs (Shape -> Gather -> Concat)
 *   that feed them.
 *
 * DECODER FORM (FP32, r = 4: transformers' Llama / Qwen2 / Mistral
 * attention, both exporters): Q and K come from rotary embeddings applied
 * after the head transposes, and K, V are repeated for the query heads
 * (repeat_kv):
 *     Qs = scale(Qr)                     Qr any rank-4 value [b, h, s, d] (static shapes)
 *     Ks = scale(Transpose(Kr, [0, 1, 3, 2]))
 *     Kr = kr | repeat_kv(kr),  Vt = Transpose(v, SWAP) | repeat_kv(Transpose(v, SWAP))
 *     repeat_kv(x) = Reshape(Expand(Unsqueeze(x, [2]), e), r)   (proved: see repeat_kv)
 * ->  Attention(Qr, kr, v [, mask]; bhsd = Q and K read as [b, h, s, d],
 *   kv_heads = kr's heads, q_heads = the heads they were repeated to).
 *   Rotary stays before the op; a Q that is Transpose(q, SWAP) but also read
 *   elsewhere is read in place the same way.  The causal mask stays the
 *   additive mask the graph computes (Where(mask, 0, -inf), the padding
 *   folded in): exact, though the kernel then scores keys the causal flag
 *   would skip (proving the Where's mask is the causal one is not done).
 *
 * INT8 FORM (what `infera quantize` and ONNX Runtime's quantize_static
 * write when attention's two MatMuls are quantized): each operand of both
 * MatMuls is DequantizeLinear(QuantizeLinear(x, s, z), s, z) -- per tensor,
 * constant s (float32) and z (uint8 or absent), each link read once:
 *     S = MatMul(QDQ(Qs), QDQ(Kt)),  ctx = MatMul(QDQ(Softmax(Sm)), QDQ(Vt))
 * ->  Y  = QAttention(q, k, v [, mask]; scale = the scores' constants,
 *          q_scale = Q's constants (they act before Q's quantization),
 *          quant = the four (s, z)) (ops/qattention.h): both products in
 *   integers, P quantized as the QuantizeLinear says.  All four operands are
 *   quantized or none (a mix, e.g. one MatMul excluded, stays unfused and
 *   runs as the generic ops).  The kernel's integer sums are exact and its
 *   quantization of q, k, v and P is QuantizeLinear's arithmetic on the same
 *   floats (transposes move no value), so it differs from the graph by float
 *   rounding of the sums (within a quantization step of Y).
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
#include "graph/shape_infer.h"
#include "ops/attention_geom.h"
#include "ops/ops.h"

enum { MAX_REMOVED = 32 };

typedef struct att_match {
    int q, k, v, mask;   /* value indices; mask -1 when absent */
    float scale, pre;    /* on the scores; on Q (before its quantization, INT8 form) */
    bool scaled;         /* at least one scale constant seen (the INT8 form requires one) */
    bool nan_to_zero;    /* P = Where(IsNaN(Softmax), 0, Softmax) (torch's SDPA export) */
    int out_shape;       /* the shape input of a Reshape of P V before the last Transpose, or -1 */
    bool allowzero;      /* that Reshape's allowzero */
    bool keep_all;       /* a chain value is also read by Shape nodes: remove nothing, the sweep does */
    int qt, vt, pv;      /* the values Transpose(q), Transpose(v) and P V */
    int bhsd;            /* Attention's bhsd: Q, K read as [B, H, S, D] (decoder form) */
    int64_t kv_heads;    /* K's heads when repeat_kv repeats them (0: none) */
    int64_t v_kv_heads;  /* V's likewise */
    int64_t heads;       /* the query heads repeat_kv made (kv_heads * its repeat) */
    const inf__shape_infer *si; /* static shapes (the decoder form's proofs), or NULL */
    int n_quant;         /* operands seen as Q -> DQ (0 or 4 for a match) */
    float quant[8];      /* (scale, zero point) of Q, K, P, V */
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

/* Is value v read n times in the chain and otherwise only by Shape nodes
 * (torch's SDPA export reads Q, V and P V's shapes to rebuild P V's)?  Such
 * readers keep the chain's nodes alive: m->keep_all, and the rewrite leaves
 * them to the optimizer's dead-node sweep (which drops them once those
 * Shapes die with the Reshape they fed). */
static bool reads_ok(const inf__pass_ctx *pc, int v, int n, att_match *m) {
    if (inf__pass_uses(pc, v, n)) return true;
    if (v < 0 || pc->g->values[v].n_consumers < n) return false;
    int shapes = 0;
    for (int i = 0; i < pc->g->n_nodes; i++) {
        const inf__node *node = &pc->g->nodes[i];
        if (!pc->dead[i] && node->n_inputs >= 1 && node->inputs[0] == v && inf__pass_node_is(pc, i, "Shape")) shapes++;
    }
    if (pc->g->values[v].n_consumers != n + shapes) return false;
    m->keep_all = true;
    return true;
}

static const int64_t SWAP4[4] = {0, 2, 1, 3}, KT4[4] = {0, 2, 3, 1}, SWAP3[3] = {1, 0, 2}, KT3[3] = {1, 2, 0};
static const int64_t LAST2[4] = {0, 1, 3, 2};

/* Unsqueeze node ui inserts axis 2 of a rank-5 result only (axes [2] or [-3], input or attribute). */
static bool unsqueeze_axis2(const inf__pass_ctx *pc, int ui) {
    const inf__node *u = &pc->g->nodes[ui];
    int64_t axis;
    if (u->n_inputs >= 2) {
        const inf_tensor *a = inf__pass_const_of(pc, u->inputs[1], INF_DTYPE_I64);
        if (!a || inf_tensor_numel(a) != 1 || a->ndim > 1) return false;
        axis = *(const int64_t *)a->data;
    } else {
        int n;
        const int64_t *axes = inf__attr_ints(u, "axes", &n);
        if (!axes || n != 1) return false;
        axis = axes[0];
    }
    return axis == 2 || axis == -3;
}

/* x = Reshape(Expand(Unsqueeze(src, axes = [2]), e), r) -- transformers'
 * repeat_kv -- each link read once, proved by static shape inference to
 * repeat each of src's heads n times in place: the Expand's output
 * [b, h, n, s, d] with b, s, d src's own dimensions 0, 2, 3 (the same
 * numbers or symbols: nothing broadcast there), h and n numbers, src's
 * heads h or a symbol (then 1 or h at run time, or the Expand fails: the
 * kernel broadcasts a single key/value head as the Expand does), and the
 * Reshape's output [b, h * n, s, d] (a view merging h and n).  Query head j
 * then reads src's head j / n: the kernel's kv_heads = h.  src in *src, h
 * in *kv, h * n in *heads. */
static bool repeat_kv(const inf__pass_ctx *pc, int x, int *src, int64_t *kv, int64_t *heads, att_match *m) {
    int ri = inf__pass_producer(pc, x, "Reshape");
    if (ri < 0 || !m->si || !reads_ok(pc, x, 1, m) || pc->g->nodes[ri].n_inputs != 2) return false;
    int e = pc->g->nodes[ri].inputs[0], ei = inf__pass_producer(pc, e, "Expand");
    if (ei < 0 || !reads_ok(pc, e, 1, m)) return false;
    int u = pc->g->nodes[ei].inputs[0], ui = inf__pass_producer(pc, u, "Unsqueeze");
    if (ui < 0 || !reads_ok(pc, u, 1, m) || !unsqueeze_axis2(pc, ui)) return false;
    int s = pc->g->nodes[ui].inputs[0];
    int64_t ds[INF_MAX_DIMS], de[INF_MAX_DIMS], dr[INF_MAX_DIMS];
    if (inf__shape_infer_dims(m->si, s, ds) != 4 || inf__shape_infer_dims(m->si, e, de) != 5 ||
        inf__shape_infer_dims(m->si, x, dr) != 4)
        return false;
    int64_t h = de[1], n = de[2];
    if (h < 1 || n < 1 || (ds[1] >= 0 && ds[1] != h) || de[0] != ds[0] || de[3] != ds[2] || de[4] != ds[3] ||
        dr[0] != ds[0] || dr[1] != h * n || dr[2] != ds[2] || dr[3] != ds[3])
        return false;
    m->removed[m->n_removed++] = ri, m->removed[m->n_removed++] = ei, m->removed[m->n_removed++] = ui;
    *src = s, *kv = h, *heads = h * n;
    return true;
}

/* x = Transpose(src, perm) with x read once: src in *src. */
static bool transposed(const inf__pass_ctx *pc, int x, int r, const int64_t *perm, int *src, att_match *m) {
    int ti = inf__pass_producer(pc, x, "Transpose");
    if (ti < 0 || !reads_ok(pc, x, 1, m) || !perm_is(&pc->g->nodes[ti], r, perm)) return false;
    *src = pc->g->nodes[ti].inputs[0];
    m->removed[m->n_removed++] = ti;
    return true;
}

/* A float32 scalar constant of rank <= r: its value in *c. */
static bool scale_const(const inf__pass_ctx *pc, int v, int r, float *c) {
    const inf_tensor *t = inf__pass_const_of(pc, v, INF_DTYPE_F32);
    return t && t->ndim <= r && inf__pass_scalar(pc, v, c);
}

/* x = DequantizeLinear(QuantizeLinear(src, s, z), s, z) (per tensor, the
 * same constants, z uint8 or absent, each link read once): src, with (s, z)
 * as operand `slot` of m->quant; else x itself (nothing recorded). */
static int dequantized(const inf__pass_ctx *pc, int x, int slot, att_match *m) {
    int di = inf__pass_producer(pc, x, "DequantizeLinear");
    if (di < 0 || !inf__pass_uses(pc, x, 1))
        return x;
    const inf__node *dq = &pc->g->nodes[di];
    int qi = inf__pass_producer(pc, dq->inputs[0], "QuantizeLinear");
    if (qi < 0 || !inf__pass_uses(pc, dq->inputs[0], 1))
        return x;
    const inf__node *qn = &pc->g->nodes[qi];
    float s, s2;
    if (qn->n_inputs < 2 || dq->n_inputs != qn->n_inputs || !inf__pass_scalar(pc, qn->inputs[1], &s) ||
        !inf__pass_scalar(pc, dq->inputs[1], &s2) || s != s2 || !(s > 0))
        return x;
    int32_t z = 0;
    if (qn->n_inputs > 2) {
        const inf_tensor *z1 = inf__pass_const_of(pc, qn->inputs[2], INF_DTYPE_U8),
                         *z2 = inf__pass_const_of(pc, dq->inputs[2], INF_DTYPE_U8);
        if (!z1 || !z2 || inf_tensor_numel(z1) != 1 || inf_tensor_numel(z2) != 1 ||
            *(const uint8_t *)z1->data != *(const uint8_t *)z2->data)
            return x;
        z = *(const uint8_t *)z1->data;
    }
    if (inf__node_attr(qn, "saturate") || inf__node_attr(qn, "output_dtype") || inf__node_attr(dq, "block_size") ||
        inf__node_attr(qn, "block_size"))
        return x; /* opset 19+ float8 / blocked forms: not the uint8 arithmetic */
    m->quant[2 * slot] = s, m->quant[2 * slot + 1] = (float)z, m->n_quant++;
    m->removed[m->n_removed++] = di, m->removed[m->n_removed++] = qi;
    return qn->inputs[0];
}

/* Strips an optional Div(x, c) / Mul(x, c) / Mul(c, x) off value x (read
 * once), folding c into *into; returns the unscaled value. */
static int unscale(const inf__pass_ctx *pc, int x, int r, att_match *m, float *into) {
    if (!reads_ok(pc, x, 1, m)) return x;
    float c;
    int di = inf__pass_producer(pc, x, "Div");
    if (di >= 0) {
        const inf__node *d = &pc->g->nodes[di];
        if (d->n_inputs != 2 || !scale_const(pc, d->inputs[1], r, &c) || c == 0.0f) return x;
        *into /= c, m->scaled = true, m->removed[m->n_removed++] = di;
        return d->inputs[0];
    }
    int mi = inf__pass_producer(pc, x, "Mul");
    if (mi < 0 || pc->g->nodes[mi].n_inputs != 2) return x;
    const inf__node *mul = &pc->g->nodes[mi];
    for (int o = 0; o < 2; o++)
        if (scale_const(pc, mul->inputs[o], r, &c)) {
            *into *= c, m->scaled = true, m->removed[m->n_removed++] = mi;
            return mul->inputs[1 - o];
        }
    return x;
}

/* Where node wi is Where(IsNaN(x), c, x) with c a float32 zero of rank <=
 * r and the IsNaN read once: x in *p. */
static bool nan_where(const inf__pass_ctx *pc, int wi, int r, int *p, att_match *m) {
    const inf__node *w = &pc->g->nodes[wi];
    float c;
    if (w->n_inputs != 3 || !scale_const(pc, w->inputs[1], r, &c) || c != 0.0f) return false;
    int ni = inf__pass_producer(pc, w->inputs[0], "IsNaN");
    if (ni < 0 || !reads_ok(pc, w->inputs[0], 1, m) || pc->g->nodes[ni].inputs[0] != w->inputs[2]) return false;
    *p = w->inputs[2];
    m->nan_to_zero = true;
    m->removed[m->n_removed++] = wi, m->removed[m->n_removed++] = ni;
    return true;
}

/* Q: Transpose(q, SWAP); or (FP32, rank 4: a decoder's Q after rotary
 * embeddings) any value static shape inference knows to be rank 4, read as
 * [B, H, S, D] in place. */
static bool q_source(const inf__pass_ctx *pc, int qs, int r, att_match *m) {
    if (transposed(pc, qs, r, r == 4 ? SWAP4 : SWAP3, &m->q, m)) return true;
    int64_t d[INF_MAX_DIMS];
    if (r != 4 || m->n_quant || !m->si || inf__shape_infer_dims(m->si, qs, d) != 4) return false;
    m->q = qs, m->bhsd |= INF_ATT_BHSD_Q;
    return true;
}

/* K^T: Transpose(k, KT); or (FP32, rank 4) Transpose(x, [0, 1, 3, 2]) of a
 * [B, H, S, D] x -- a decoder's K after rotary embeddings, or repeat_kv of
 * it (its heads then K's kv_heads) -- read in place. */
static bool k_source(const inf__pass_ctx *pc, int kt, int r, att_match *m) {
    if (transposed(pc, kt, r, r == 4 ? KT4 : KT3, &m->k, m)) return true;
    int x, src;
    if (r != 4 || m->n_quant || !transposed(pc, kt, 4, LAST2, &x, m)) return false;
    m->k = repeat_kv(pc, x, &src, &m->kv_heads, &m->heads, m) ? src : x;
    m->bhsd |= INF_ATT_BHSD_K;
    return true;
}

/* K's and V's repeat_kv agree (both repeat to the same heads, or neither),
 * and Q has the heads they were repeated to, or a symbol (then that many or
 * 1 at run time, or the MatMul fails: the kernel, told the heads, broadcasts
 * a single query head as the MatMul does). */
static bool heads_agree(const att_match *m) {
    if (m->kv_heads != m->v_kv_heads) return false;
    if (!m->kv_heads) return true;
    int64_t d[INF_MAX_DIMS];
    if (!m->si || inf__shape_infer_dims(m->si, m->q, d) != 4) return false;
    int64_t hq = m->bhsd & INF_ATT_BHSD_Q ? d[1] : d[2]; /* q [B, H, S, D] or [B, S, H, D] */
    return hq < 0 || hq == m->heads;
}

/* Sm = [Add(] [scale(] MatMul(Qs, Kt) [)] [, mask)] down to q and k. */
static bool scores(const inf__pass_ctx *pc, int sm, int r, att_match *m) {
    int start = m->n_removed;
    int ai = inf__pass_producer(pc, sm, "Add");
    int n_try = ai >= 0 && reads_ok(pc, sm, 1, m) && pc->g->nodes[ai].n_inputs == 2 ? 2 : 0;
    int n_quant = m->n_quant;
    for (int o = 0; o <= n_try; o++) {
        m->n_removed = start, m->scale = 1.0f, m->pre = 1.0f, m->scaled = false, m->mask = -1, m->n_quant = n_quant;
        int s = sm;
        if (o < n_try) { /* the scores are operand o of the Add, the mask the other */
            s = pc->g->nodes[ai].inputs[o];
            m->mask = pc->g->nodes[ai].inputs[1 - o];
            m->removed[m->n_removed++] = ai;
        }
        s = unscale(pc, s, r, m, &m->scale);
        int mm = inf__pass_producer(pc, s, "MatMul");
        if (mm < 0 || !reads_ok(pc, s, 1, m)) continue;
        m->removed[m->n_removed++] = mm;
        int before = m->n_quant, qd = dequantized(pc, pc->g->nodes[mm].inputs[0], 0, m);
        int qs = unscale(pc, qd, r, m, m->n_quant > before ? &m->pre : &m->scale); /* FP32: one product, as before */
        int kt = dequantized(pc, pc->g->nodes[mm].inputs[1], 1, m);
        if (m->n_quant == before)
            kt = unscale(pc, kt, r, m, &m->scale); /* FP32: torch's SDPA scales Q and K^T by sqrt(scale) each */
        m->qt = qs;
        m->bhsd = 0, m->kv_heads = 0;
        if ((m->n_quant == 0 || (m->n_quant == 4 && m->scaled)) && q_source(pc, qs, r, m) && k_source(pc, kt, r, m) &&
            heads_agree(m))
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
    m->n_removed = 0, m->n_quant = 0, m->out_shape = -1, m->allowzero = false, m->keep_all = false;
    int ctx = y->inputs[0];
    int ri = r == 4 ? inf__pass_producer(pc, ctx, "Reshape") : -1;
    if (ri >= 0) { /* Y = Transpose(Reshape(P V, s)): the kernel checks at run time that s is P V's shape */
        const inf__node *rs = &pc->g->nodes[ri];
        if (rs->n_inputs != 2 || rs->inputs[1] < 0 || !reads_ok(pc, ctx, 1, m)) return false;
        m->out_shape = rs->inputs[1];
        m->allowzero = inf__attr_int(rs, "allowzero", 0) != 0;
        m->removed[m->n_removed++] = ri;
        ctx = rs->inputs[0];
    }
    int mi = inf__pass_producer(pc, ctx, "MatMul");
    if (mi < 0 || !reads_ok(pc, ctx, 1, m) || pc->g->nodes[mi].n_inputs != 2) return false;
    m->pv = ctx;
    m->removed[m->n_removed++] = mi;
    int p = dequantized(pc, pc->g->nodes[mi].inputs[0], 2, m);
    int vt = dequantized(pc, pc->g->nodes[mi].inputs[1], 3, m);
    if (m->n_quant == 1)
        return false; /* one operand of P V quantized, the other not */
    m->nan_to_zero = false;
    int wi = inf__pass_producer(pc, p, "Where");
    if (wi >= 0) { /* P = Where(IsNaN(Sp), 0, Sp): FP32 only (QAttention has no such rows) */
        if (m->n_quant || !reads_ok(pc, p, 1, m) || !nan_where(pc, wi, r, &p, m)) return false;
    }
    if (m->n_quant && m->out_shape >= 0) return false; /* QAttention takes no output shape */
    int si = inf__pass_producer(pc, p, "Softmax");
    if (si < 0 || !reads_ok(pc, p, m->nan_to_zero ? 2 : 1, m)) return false;
    const inf__node *sm = &pc->g->nodes[si];
    int64_t axis = inf__attr_int(sm, "axis", sm->opset >= 13 ? -1 : 1);
    if (axis != r - 1 && axis != -1) return false;
    m->removed[m->n_removed++] = si;
    m->vt = vt;
    m->v_kv_heads = 0;
    int64_t v_heads = 0;
    if (!transposed(pc, vt, r, r == 4 ? SWAP4 : SWAP3, &m->v, m)) {
        int src; /* a decoder's V: repeat_kv(Transpose(v, SWAP)) */
        if (r != 4 || m->n_quant || !repeat_kv(pc, vt, &src, &m->v_kv_heads, &v_heads, m) ||
            !transposed(pc, src, 4, SWAP4, &m->v, m))
            return false;
    }
    if (!scores(pc, sm->inputs[0], r, m)) return false;
    return !m->v_kv_heads || v_heads == m->heads;
}

/* One-element int64 value e is Gather(Shape(x), j) (j a constant scalar,
 * axis 0), or that Unsqueeze'd to [1] (TorchScript's spelling): x in *x,
 * j (counted from 0 of a rank-4 x) in *j. */
static bool dim_source(const inf__pass_ctx *pc, int e, int *x, int64_t *j) {
    int ui = inf__pass_producer(pc, e, "Unsqueeze");
    if (ui >= 0) e = pc->g->nodes[ui].inputs[0];
    int gi = inf__pass_producer(pc, e, "Gather");
    if (gi < 0 || pc->g->nodes[gi].n_inputs != 2 || inf__attr_int(&pc->g->nodes[gi], "axis", 0) != 0) return false;
    const inf_tensor *idx = inf__pass_const_of(pc, pc->g->nodes[gi].inputs[1], INF_DTYPE_I64);
    int si = inf__pass_producer(pc, pc->g->nodes[gi].inputs[0], "Shape");
    if (!idx || idx->ndim != 0 || si < 0 || inf__node_attr(&pc->g->nodes[si], "start") ||
        inf__node_attr(&pc->g->nodes[si], "end"))
        return false;
    *j = *(const int64_t *)idx->data;
    if (*j < 0) *j += 4;
    *x = pc->g->nodes[si].inputs[0];
    return true;
}

/* Is constant c, at position i of P V's shape, the dimension static shape
 * inference knows there: i = 2 Q's rows, i = 3 V's columns (a number), i =
 * 0 or 1 the same number (not 1) for Q and V (which P V's batch or heads
 * then are, or the run fails in the unfused graph too)? */
static bool const_dim_ok(const inf__shape_infer *si, const att_match *m, int i, int64_t c) {
    int64_t dq[INF_MAX_DIMS], dv[INF_MAX_DIMS];
    if (!si || inf__shape_infer_dims(si, m->qt, dq) != 4 || inf__shape_infer_dims(si, m->vt, dv) != 4 || c < 0)
        return false;
    if (i == 2) return dq[2] == c;
    if (i == 3) return dv[3] == c;
    return c != 1 && dq[i] == c && dv[i] == c;
}

/* Is the matched Reshape's shape provably P V's own: a Concat of four
 * elements, each P V's dimension i, Q's rows (i = 2, P V's rows), V's head
 * size (i = 3, P V's columns) -- read through Shape -> Gather, or a constant
 * shape inference knows to be that (const_dim_ok) -- or one -1 (which then
 * takes what remains: P V's dimension)?  Then the Reshape is the identity
 * and the fused op needs no run-time check of it. */
static bool shape_is_own(const inf__pass_ctx *pc, const inf__shape_infer *si, const att_match *m) {
    int ci = inf__pass_producer(pc, m->out_shape, "Concat");
    if (ci < 0 || pc->g->nodes[ci].n_inputs != 4 || inf__attr_int(&pc->g->nodes[ci], "axis", 0) != 0) return false;
    int minus = 0;
    for (int i = 0; i < 4; i++) {
        int e = pc->g->nodes[ci].inputs[i], x;
        int64_t j;
        const inf_tensor *c = inf__pass_const_of(pc, e, INF_DTYPE_I64);
        if (c) {
            if (inf_tensor_numel(c) != 1 || c->ndim != 1) return false;
            int64_t v = *(const int64_t *)c->data;
            if (v == -1 ? minus++ != 0 : !const_dim_ok(si, m, i, v)) return false;
        } else if (!dim_source(pc, e, &x, &j) ||
                   !((x == m->pv && j == i) || (i == 2 && x == m->qt && j == 2) || (i == 3 && x == m->vt && j == 3))) {
            return false;
        }
    }
    return true;
}

inf_status inf__pass_attention(inf__pass_ctx *pc, int *n_rewritten, inf_error *err) {
    *n_rewritten = 0;
    inf__shape_infer *si = NULL; /* for the constants of a Reshape's shape (shape_is_own) */
    for (int n = pc->g->n_nodes - 1; n >= 0; n--) {
        const inf__node *node = &pc->g->nodes[n];
        if (!inf__pass_node_is(pc, n, "Transpose") || node->n_inputs != 1)
            continue;
        if (!si) { /* built once, before the first match: upstream values are as they were */
            if (!(si = inf__shape_infer_new(pc->g)))
                return inf_error_set(err, INF_ENOMEM, "out of memory optimising the graph");
            for (int i = 0; i < pc->g->n_nodes; i++)
                if (!pc->dead[i]) inf__shape_infer_node(si, &pc->g->nodes[i]);
        }
        att_match m = {.si = si};
        if (!match(pc, n, &m)) continue;
        if (m.out_shape >= 0 && shape_is_own(pc, si, &m)) m.out_shape = -1;
        int inputs[5] = {m.q, m.k, m.v, m.mask, m.out_shape};
        bool quant = m.n_quant == 4;
        float *qp = quant ? inf__arena_alloc(&pc->model->arena, sizeof m.quant) : NULL;
        if (quant && !qp) {
            inf__shape_infer_free(si);
            return inf_error_set(err, INF_ENOMEM, "out of memory optimising the graph");
        }
        if (qp)
            memcpy(qp, m.quant, sizeof m.quant);
        inf__attr attrs[6] = {{.name = "scale", .type = INF_ATTR_FLOAT, .f = m.scale},
                              {.name = "q_scale", .type = INF_ATTR_FLOAT, .f = m.pre},
                              {.name = "quant", .type = INF_ATTR_FLOATS, .n = 8, .floats = qp}};
        int n_attrs = quant ? 3 : 1;
        if (!quant) { /* FP32: Attention's scale, then what applies of these */
            if (m.nan_to_zero) attrs[n_attrs++] = (inf__attr){.name = "nan_to_zero", .type = INF_ATTR_INT, .i = 1};
            if (m.allowzero)
                attrs[n_attrs++] = (inf__attr){.name = "out_shape_allowzero", .type = INF_ATTR_INT, .i = 1};
            if (m.bhsd) attrs[n_attrs++] = (inf__attr){.name = "bhsd", .type = INF_ATTR_INT, .i = m.bhsd};
            if (m.kv_heads) {
                attrs[n_attrs++] = (inf__attr){.name = "kv_heads", .type = INF_ATTR_INT, .i = m.kv_heads};
                attrs[n_attrs++] = (inf__attr){.name = "q_heads", .type = INF_ATTR_INT, .i = m.heads};
            }
        }
        int n_inputs = m.out_shape >= 0 ? 5 : m.mask >= 0 ? 4 : 3;
        inf_status st = inf__pass_rewrite(pc, n, "ai.infera", quant ? "QAttention" : "Attention", 1, n_inputs, inputs,
                                          n_attrs, attrs, m.removed, m.keep_all ? 0 : m.n_removed, err);
        if (st != INF_OK) {
            inf__shape_infer_free(si);
            return st;
        }
        (*n_rewritten)++;
    }
    inf__shape_infer_free(si);
    return INF_OK;
}
