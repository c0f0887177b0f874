/*
 * qdq.c -- a QDQ-quantized MatMul / Gemm / Conv (the form `infera quantize`
 * and ONNX Runtime's quantizer write) becomes the internal QGemm / QConv
 * (ai.infera; ops/ref/quantize_fused.c), which quantizes its input, multiplies in
 * 8-bit integers on weights packed at load (ops/qgemm.h: AVX-512 VNNI /
 * AVX2) and scales, biases, activates and re-quantizes in its store --
 * instead of quantize -> dequantize -> FP32 product -> quantize per op.
 *
 * PATTERN (runs before constant folding, so the weight's DequantizeLinear
 * is still there):
 *     xq = QuantizeLinear(x, s, z)          s one float32 constant, z one 8-bit constant (or none)
 *     xd = DequantizeLinear(xq, s', z')     the same s and z
 *     wd = DequantizeLinear(Wq, ws, wz)     Wq a constant 8-bit tensor, ws / wz constant, per tensor
 *                                           or along W's output-channel axis
 *     y  = MatMul(xd, wd) | Gemm(xd, wd[, b]) (transA 0, alpha = beta = 1, b [N]) | Conv(xd, wd[, b]) (1-D/2-D)
 *   then, each optional, in this order, every link the only reader of the one before:
 *     y = Add(y, bias)     (MatMul / Gemm without b; bias a float32 constant [N], or the DequantizeLinear of a
 *                          constant [N]: ONNX Runtime's quantize_static writes one, folded later)
 *     y = Relu(y)          -> the fused node's activation
 *     y = DequantizeLinear(QuantizeLinear(y, ys, yz), ys, yz)  (per tensor) -> re-quantized in the store
 * ->  y = QGemm | QConv(x, s, z, Wq, ws, wz, bias[, ys, yz])  (QGemm: trans_b; QConv: the Conv's attributes)
 *   The rewritten node takes the place of the chain's last node; xq / xd / wd
 *   are removed when nothing else reads them (a Q/DQ pair that also feeds
 *   another op stays for it).  No node of the chain may carry an epilogue.
 *
 * WHY IT IS SAFE: q(x) is QuantizeLinear's byte for every element (the same
 * arithmetic), (q(x) - z) * (Wq - wz) is summed exactly in integers, and
 * s * ws[j] * sum + bias equals the FP32 product of the dequantized values up
 * to float rounding (float sums of exact products, in another order); the
 * Relu and the output Q -> DQ are applied per element as the nodes would.
 * Results therefore match the QDQ graph (and ONNX Runtime's QLinear kernels)
 * within a quantization step, not bit for bit.
 */
#include <stdlib.h>
#include <string.h>

#include "graph/passes/passes.h"
#include "ops/ops.h"

enum { MAX_CHAIN = 8 };

typedef struct qdq_match {
    int ins[9];
    int removed[MAX_CHAIN], n_removed;
    int target;
    bool relu;
    int q_node; /* the activation's QuantizeLinear */
} qdq_match;

static bool is_q8(const inf_tensor *t) { return t && (t->dtype == INF_DTYPE_U8 || t->dtype == INF_DTYPE_I8); }

static int64_t zp_value(const inf_tensor *t) {
    return t->dtype == INF_DTYPE_U8 ? ((const uint8_t *)t->data)[0] : ((const int8_t *)t->data)[0];
}

/* Input k of node, or -1 when absent. */
static int input(const inf__node *n, int k) { return k < n->n_inputs ? n->inputs[k] : -1; }

/* (scale, zero point) inputs 1, 2 of a Q or DQ node: per tensor and constant. */
static bool per_tensor_params(const inf__pass_ctx *pc, const inf__node *n, const inf_tensor **s, const inf_tensor **z) {
    *s = inf__pass_const_tensor(pc, input(n, 1));
    *z = input(n, 2) >= 0 ? inf__pass_const_tensor(pc, input(n, 2)) : NULL;
    if (!*s || (*s)->dtype != INF_DTYPE_F32 || inf_tensor_numel(*s) != 1) return false;
    return input(n, 2) < 0 || (is_q8(*z) && inf_tensor_numel(*z) == 1);
}

static bool same_params(const inf_tensor *s1, const inf_tensor *z1, const inf_tensor *s2, const inf_tensor *z2) {
    if (*(const float *)s1->data != *(const float *)s2->data) return false;
    if (!z1 || !z2) return !z1 && !z2;
    return z1->dtype == z2->dtype && zp_value(z1) == zp_value(z2);
}

/* The only node reading v (v has exactly one reader, not a graph output), or -1. */
static int sole_reader(const inf__pass_ctx *pc, int v) {
    if (v < 0 || pc->g->values[v].n_consumers != 1) return -1;
    for (int n = 0; n < pc->g->n_nodes; n++) {
        const inf__node *node = &pc->g->nodes[n];
        if (pc->dead[n]) continue;
        for (int k = 0; k < node->n_inputs; k++)
            if (node->inputs[k] == v) return node->epilogue.kind == INF_EPILOGUE_NONE ? n : -1;
    }
    return -1; /* read by a graph output */
}

static bool onnx_op(const inf__node *n, const char *type) {
    return n->op && n->op->domain == INF_DOMAIN_ONNX && !strcmp(n->op_type, type);
}

static void remove_if_only_reader(const inf__pass_ctx *pc, int v, int node, qdq_match *m) {
    if (inf__pass_uses(pc, v, 1) && m->n_removed < MAX_CHAIN) m->removed[m->n_removed++] = node;
}

/* The activation input: xd = DQ(Q(x)) with equal per-tensor parameters. */
static bool match_input(const inf__pass_ctx *pc, int xd, qdq_match *m) {
    int d1 = inf__pass_producer(pc, xd, "DequantizeLinear");
    int q1 = d1 >= 0 ? inf__pass_producer(pc, input(&pc->g->nodes[d1], 0), "QuantizeLinear") : -1;
    const inf_tensor *s0, *z0, *s1, *z1;
    if (q1 < 0 || !per_tensor_params(pc, &pc->g->nodes[q1], &s0, &z0) ||
        !per_tensor_params(pc, &pc->g->nodes[d1], &s1, &z1) || !same_params(s0, z0, s1, z1))
        return false;
    const inf__node *q = &pc->g->nodes[q1];
    m->ins[0] = q->inputs[0], m->ins[1] = q->inputs[1], m->ins[2] = input(q, 2);
    m->q_node = q1;
    int xq = pc->g->nodes[d1].inputs[0];
    if (inf__pass_uses(pc, xd, 1)) {
        m->removed[m->n_removed++] = d1;
        remove_if_only_reader(pc, xq, q1, m);
    }
    return true;
}

/* The weight: wd = DQ(Wq, ws, wz), constants, per tensor or along axis `channel_axis` of `rank`. */
static bool match_weight(const inf__pass_ctx *pc, int wd, int rank, int channel_axis, qdq_match *m, int64_t *n_out) {
    int d2 = inf__pass_producer(pc, wd, "DequantizeLinear");
    if (d2 < 0) return false;
    const inf__node *d = &pc->g->nodes[d2];
    const inf_tensor *w = inf__pass_const_tensor(pc, input(d, 0)), *ws = inf__pass_const_tensor(pc, input(d, 1));
    const inf_tensor *wz = input(d, 2) >= 0 ? inf__pass_const_tensor(pc, input(d, 2)) : NULL;
    if (!is_q8(w) || w->ndim != rank || !ws || ws->dtype != INF_DTYPE_F32 || (input(d, 2) >= 0 && !is_q8(wz)))
        return false;
    int64_t ch = w->dims[channel_axis], axis = inf__attr_int(d, "axis", 1);
    if (axis < 0) axis += rank;
    bool per_tensor = inf_tensor_numel(ws) == 1 && (!wz || inf_tensor_numel(wz) == 1);
    bool per_channel = axis == channel_axis && ws->ndim == 1 && ws->dims[0] == ch &&
                       (!wz || (wz->ndim == 1 && wz->dims[0] == ch));
    if (!per_tensor && !per_channel) return false;
    m->ins[3] = d->inputs[0], m->ins[4] = d->inputs[1], m->ins[5] = input(d, 2);
    remove_if_only_reader(pc, wd, d2, m);
    *n_out = ch;
    return true;
}

/* A bias of exactly n float32 values: a constant, or the DequantizeLinear of one
 * (an int32 bias; folded to a constant later). */
static bool bias_fits(const inf__pass_ctx *pc, int b, int64_t n) {
    const inf_tensor *t = inf__pass_const_tensor(pc, b);
    if (t) return t->dtype == INF_DTYPE_F32 && t->ndim == 1 && t->dims[0] == n;
    int d = inf__pass_producer(pc, b, "DequantizeLinear");
    t = d >= 0 ? inf__pass_const_tensor(pc, input(&pc->g->nodes[d], 0)) : NULL;
    return t && t->ndim == 1 && t->dims[0] == n;
}

/* The optional tail after the product: bias Add, Relu, output Q -> DQ. */
static void match_tail(const inf__pass_ctx *pc, int node, bool gemm, int64_t n, qdq_match *m) {
    int v = pc->g->nodes[node].outputs[0], r;
    m->target = node;
    if (gemm && m->ins[6] < 0 && (r = sole_reader(pc, v)) >= 0 && onnx_op(&pc->g->nodes[r], "Add") &&
        pc->g->nodes[r].opset >= 7 && pc->g->nodes[r].n_inputs == 2) {
        const inf__node *add = &pc->g->nodes[r];
        int other = add->inputs[0] == v ? add->inputs[1] : add->inputs[0];
        if (other != v && bias_fits(pc, other, n)) { /* ORT's QDQ bias: DQ(quantized bias), folded later */
            m->removed[m->n_removed++] = m->target;
            m->ins[6] = other, m->target = r, v = add->outputs[0];
        }
    }
    if ((r = sole_reader(pc, v)) >= 0 && onnx_op(&pc->g->nodes[r], "Relu")) {
        m->removed[m->n_removed++] = m->target;
        m->relu = true, m->target = r, v = pc->g->nodes[r].outputs[0];
    }
    int q = sole_reader(pc, v), d = q >= 0 && onnx_op(&pc->g->nodes[q], "QuantizeLinear")
                                         ? sole_reader(pc, pc->g->nodes[q].outputs[0]) : -1;
    const inf_tensor *s0, *z0, *s1, *z1;
    if (d >= 0 && onnx_op(&pc->g->nodes[d], "DequantizeLinear") && per_tensor_params(pc, &pc->g->nodes[q], &s0, &z0) &&
        per_tensor_params(pc, &pc->g->nodes[d], &s1, &z1) && same_params(s0, z0, s1, z1) &&
        m->n_removed + 2 <= MAX_CHAIN) {
        m->removed[m->n_removed++] = m->target;
        m->removed[m->n_removed++] = q;
        m->ins[7] = pc->g->nodes[q].inputs[1], m->ins[8] = input(&pc->g->nodes[q], 2), m->target = d;
    }
}

/* Node i as a MatMul / Gemm / Conv of the pattern; fills m.  *conv, *trans_b. */
static bool match_node(const inf__pass_ctx *pc, int i, qdq_match *m, bool *conv, bool *trans_b) {
    const inf__node *n = &pc->g->nodes[i];
    bool mm = onnx_op(n, "MatMul"), gemm = onnx_op(n, "Gemm");
    *conv = onnx_op(n, "Conv");
    if (pc->dead[i] || n->epilogue.kind != INF_EPILOGUE_NONE || !(mm || gemm || *conv) || n->n_inputs < 2 ||
        n->n_outputs != 1)
        return false;
    *trans_b = gemm && inf__attr_int(n, "transB", 0);
    if (gemm && (inf__attr_int(n, "transA", 0) || inf__attr_float(n, "alpha", 1) != 1 || inf__attr_float(n, "beta", 1) != 1))
        return false;
    for (int k = 0; k < 9; k++) m->ins[k] = -1;
    m->n_removed = 0, m->relu = false;
    int64_t ch = 0;
    const inf_tensor *wq = NULL;
    int d2 = inf__pass_producer(pc, n->inputs[1], "DequantizeLinear");
    if (d2 >= 0) wq = inf__pass_const_tensor(pc, input(&pc->g->nodes[d2], 0));
    int rank = *conv ? (wq ? wq->ndim : 0) : 2;
    if (*conv && rank != 3 && rank != 4) return false;
    int axis = *conv || *trans_b ? 0 : 1;
    if (!match_input(pc, n->inputs[0], m) || !match_weight(pc, n->inputs[1], rank, axis, m, &ch)) return false;
    if (input(n, 2) >= 0) {
        if ((!gemm && !*conv) || !bias_fits(pc, n->inputs[2], ch)) return false;
        m->ins[6] = n->inputs[2];
    }
    match_tail(pc, i, mm || gemm, ch, m);
    return true;
}

/* Does the QuantizeLinear node q write uint8 bytes that a QGemm can read as its x (u8_in: a uint8 zero point,
 * or none and no other output type)? */
static bool uint8_quantize(const inf__pass_ctx *pc, int q) {
    const inf__node *n = &pc->g->nodes[q];
    const inf_tensor *z = input(n, 2) >= 0 ? inf__pass_const_tensor(pc, input(n, 2)) : NULL;
    if (input(n, 2) >= 0 && !z)
        return false; /* a zero point computed at run time */
    return inf__quantize_linear_out_type(z != NULL, z ? z->dtype : INF_DTYPE_UNDEFINED,
                                         inf__attr_int(n, "output_dtype", 0)) == INF_DTYPE_U8;
}

/* SHARED INPUT: an activation whose one Q -> DQ pair feeds several matched MatMul / Gemm (the Q, K and V
 * projections of an encoder's LayerNorm output) is quantized once: the QuantizeLinear node stays, and each
 * QGemm reads its uint8 output as x (u8_in = 1, the Q's zero point) instead of quantizing the float itself.
 * The bytes are the same (QuantizeLinear's arithmetic either way), so results are bit-identical.
 * shared[q] = the number of MatMul / Gemm nodes matching through QuantizeLinear node q. */
static inf_status count_shared(const inf__pass_ctx *pc, int **shared, inf_error *err) {
    *shared = calloc((size_t)pc->g->n_nodes, sizeof **shared);
    if (!*shared)
        return inf_error_set(err, INF_ENOMEM, "out of memory optimising the graph");
    for (int i = 0; i < pc->g->n_nodes; i++) {
        qdq_match m;
        bool conv, trans_b;
        if (match_node(pc, i, &m, &conv, &trans_b) && !conv)
            (*shared)[m.q_node]++;
    }
    return INF_OK;
}

/* m reads the Q's uint8 output xq in place of x: the Q node is kept (no longer removed). */
static void read_shared(const inf__pass_ctx *pc, qdq_match *m) {
    const inf__node *q = &pc->g->nodes[m->q_node];
    m->ins[0] = q->outputs[0];
    int k = 0;
    for (int i = 0; i < m->n_removed; i++)
        if (m->removed[i] != m->q_node)
            m->removed[k++] = m->removed[i];
    m->n_removed = k;
}

inf_status inf__pass_qdq(inf__pass_ctx *pc, int *n_rewritten, inf_error *err) {
    *n_rewritten = 0;
    int *shared;
    inf_status st = count_shared(pc, &shared, err);
    /* from the last node back: a node takes the Q -> DQ pair of its input before
     * the node producing that input could take it as its output's re-quantization */
    for (int i = pc->g->n_nodes - 1; i >= 0 && st == INF_OK; i--) {
        qdq_match m;
        bool conv, trans_b;
        if (!match_node(pc, i, &m, &conv, &trans_b)) continue;
        inf__node *n = &pc->g->nodes[i];
        bool u8_in = !conv && shared[m.q_node] >= 2 && uint8_quantize(pc, m.q_node);
        if (u8_in)
            read_shared(pc, &m);
        inf__attr qgemm_attrs[2] = {{.name = "trans_b", .type = INF_ATTR_INT, .i = trans_b},
                                    {.name = "u8_in", .type = INF_ATTR_INT, .i = 1}};
        int n_ins = m.ins[7] >= 0 ? 9 : 7;
        /* the Conv's attributes (arena memory) outlive it: the rewrite copies the array */
        inf__attr *attrs = conv ? n->attrs : qgemm_attrs; /* trans_b [, u8_in] */
        int n_attrs = conv ? n->n_attrs : u8_in ? 2 : 1;
        st = inf__pass_rewrite(pc, m.target, "ai.infera", conv ? "QConv" : "QGemm", 1, n_ins, m.ins, n_attrs, attrs,
                               m.removed, m.n_removed, err);
        if (st != INF_OK)
            break;
        if (m.relu) pc->g->nodes[m.target].epilogue.kind = INF_EPILOGUE_RELU;
        (*n_rewritten)++;
    }
    free(shared);
    return st;
}

/* QGemm -> Gelu (the internal one, passes/gelu.c, run after this file's
 * first pass, or ONNX's exact opset-20 one) -> QGemm with activation "Gelu", applied to each output row in
 * its store while the row is in cache: the FFN of a transformer.  Only for a
 * QGemm without an epilogue or an output re-quantization (they come before
 * the GELU in the graph), whose output only the Gelu reads. */
inf_status inf__pass_qdq_gelu(inf__pass_ctx *pc, int *n_rewritten, inf_error *err) {
    static const inf__attr gelu_attr = {.name = "activation", .type = INF_ATTR_STRING, .s = "Gelu", .s_len = 4};
    *n_rewritten = 0;
    for (int i = 0; i < pc->g->n_nodes; i++) {
        const inf__node *gl = &pc->g->nodes[i];
        if (!inf__pass_exact_gelu(pc, i)) /* ours, or ONNX's exact one (the dynamo exporter's) */
            continue;
        int v = gl->inputs[0], q = v >= 0 ? pc->g->values[v].producer : -1;
        if (q < 0 || pc->dead[q] || !inf__pass_uses(pc, v, 1)) continue;
        const inf__node *qg = &pc->g->nodes[q];
        if (!qg->op || qg->op->domain != INF_DOMAIN_INFERA || strcmp(qg->op_type, "QGemm") || qg->n_inputs > 7 ||
            qg->epilogue.kind != INF_EPILOGUE_NONE || qg->n_attrs > 2 || inf__node_attr(qg, "activation"))
            continue;
        inf__attr attrs[3]; /* trans_b [, u8_in], activation */
        memcpy(attrs, qg->attrs, (size_t)qg->n_attrs * sizeof *attrs);
        attrs[qg->n_attrs] = gelu_attr;
        int removed[1] = {q};
        inf_status st = inf__pass_rewrite(pc, i, "ai.infera", "QGemm", 1, qg->n_inputs, qg->inputs, qg->n_attrs + 1,
                                          attrs, removed, 1, err);
        if (st != INF_OK) return st;
        (*n_rewritten)++;
    }
    return INF_OK;
}
