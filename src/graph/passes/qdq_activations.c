/*
 * qdq_activations.c -- the activation Q -> DQ pairs of a QDQ file that no
 * integer kernel takes are dropped, so the FP32 fusions (attention,
 * LayerNorm / RMSNorm, GELU, a product's bias and residual) see the chains
 * they know.  ONNX Runtime's quantize_static (QDQ) writes a pair after
 * nearly every op -- Add, Mul, Softmax, Transpose, Reshape, Where, Gather,
 * the norms' pieces -- 60-120 in a 2-layer transformer; Infera's own
 * quantizer writes them only where an integer product reads them.
 *
 * PATTERN (every link per tensor, constant scale float32, zero point 8-bit
 * or absent):
 *     xq = QuantizeLinear(x, s, z)      x computed at run time (a pair on a
 *                                       constant is left to constant folding:
 *                                       the file's rounded constant)
 *     xd = DequantizeLinear(xq, s, z)   the same s and z
 * ->  every reader of xd reads x instead, except the readers that keep it:
 *       - a weight product reading xd as its x: MatMul / Gemm / Conv whose
 *         input 1 is DequantizeLinear(constant) -- passes/qdq.c makes it a
 *         QGemm / QConv that quantizes x with (s, z) itself;
 *       - with keep_act: a MatMul both of whose operands are such pairs
 *         (attention's Q K^T and P V: passes/attention.c's INT8 form makes
 *         them a QAttention).  When the first run dropped pairs of the
 *         bounded kind (the file quantizes beyond its products: ONNX
 *         Runtime's form), the optimizer runs this pass a second time, after
 *         the attention pass, without keep_act: an attention the INT8 form
 *         did not take (Llama's bhsd / kv_heads form, torch's SDPA
 *         Where(IsNaN)) then becomes the FP32 Attention.  A file whose pairs
 *         are all on products (Infera's own, an attention MatMul excluded
 *         from quantization) keeps them: the author chose each one.
 *   A pair on a quantized Conv's output (a Conv on a QDQ weight, or its
 *   Relu / Clip / LeakyRelu) stays whole: it is the QConv's re-quantization,
 *   which its store applies and the uint8 links between convolutions carry
 *   (passes/qdq_chain.c; Infera's quantizer writes it for every reader).
 *   xq and xd go when nothing reads them any more (graph outputs and
 *   subgraphs' reads by name stay on xd).
 *
 * WHY, AND WHAT IT CHANGES (the rule; docs/optimizer.md "QDQ files"):
 *   EXACT (counted apart, and the only drops made when the user asks for the
 *   file's own arithmetic, INFERA_QDQ=exact / inf_model_options.qdq_exact):
 *   x = M(DQ(Q0(y, s, z), s, z)) with M a pure data-movement op (Transpose,
 *   Reshape, Squeeze, Unsqueeze, Flatten, Identity, Slice, Gather or
 *   GatherElements of data input 0, Expand, SpaceToDepth/DepthToSpace,
 *   MaxPool) and Q0 writing the same type as xq: every element of x is
 *   (k - z) * s for a byte k of that type, and Q(DQ(k)) = k for every k
 *   (|k - z| <= 255: the quotient ((k - z) * s) / s is within a few ulp of
 *   an integer), so DQ(Q(x)) = x bit for bit -- ONNX Runtime's "QDQ
 *   propagation" (it drops those pairs the same way).
 *   BOUNDED (the default for every other pair, but the two kept below): a pair rounds x to the grid
 *   of s (at most s / 2 per element) and clamps it to the 8-bit range; x
 *   itself is the FP32 graph's value computed from the file's quantized
 *   inputs, so dropping it removes one rounding the FP32 model never had --
 *   the result moves toward the FP32 model's, not away (measured on
 *   RoBERTa, GPT-2 and Llama against ONNX Runtime optimised and FP32:
 *   bench/RESULTS.md "Session 31 (h22/qdqfuse)").  The clamp matters for
 *   the attention mask: Where(mask, 0, -inf) + scores quantized to a
 *   calibrated [-20, 10] gives masked keys weight; without the pair they get
 *   none, as in FP32.  The products keep their input quantization (QGemm),
 *   so the INT8 speed stays.
 *   KEPT although not read by a product: a pair whose clamp may be an op the
 *   quantizer removed -- ONNX Runtime drops a Relu / Clip after a quantized
 *   tensor (asymmetric activations, its default) and lets the pair's grid,
 *   starting at 0, clamp in its place -- unless x is provably >= 0 (nonneg:
 *   x^2, softmax, sigmoid, 1 + tanh, ...: then the clamp is the identity);
 *   and a quantized Conv's output pair (above).  A pair with an infinite
 *   scale (ORT's calibration of a tensor holding -inf, the attention mask)
 *   is NaN for every finite value: it is dropped, clamp or not.
 */
#include <math.h>
#include <string.h>

#include "graph/passes/passes.h"
#include "graph/shape_infer.h"
#include "ops/ops.h"

static int input(const inf__node *n, int k) { return k < n->n_inputs ? n->inputs[k] : -1; }

static bool is_q8(const inf_tensor *t) { return t && (t->dtype == INF_DTYPE_U8 || t->dtype == INF_DTYPE_I8); }

/* (scale, zero point) of a Q or DQ node: one float32 constant and one 8-bit constant (or none). */
static bool params(const inf__pass_ctx *pc, const inf__node *n, float *s, int *z, inf_dtype *zt) {
    const inf_tensor *st = inf__pass_const_tensor(pc, input(n, 1));
    const inf_tensor *zp = input(n, 2) >= 0 ? inf__pass_const_tensor(pc, input(n, 2)) : NULL;
    if (!st || st->dtype != INF_DTYPE_F32 || inf_tensor_numel(st) != 1) return false;
    if (input(n, 2) >= 0 && (!is_q8(zp) || inf_tensor_numel(zp) != 1)) return false;
    *s = *(const float *)st->data;
    *z = !zp ? 0 : zp->dtype == INF_DTYPE_U8 ? ((const uint8_t *)zp->data)[0] : ((const int8_t *)zp->data)[0];
    *zt = zp ? zp->dtype : INF_DTYPE_UNDEFINED;
    return true;
}

/* The type a QuantizeLinear node writes (its zero point's, or output_dtype, or uint8). */
static inf_dtype q_type(const inf__pass_ctx *pc, const inf__node *q) {
    const inf_tensor *zp = input(q, 2) >= 0 ? inf__pass_const_tensor(pc, input(q, 2)) : NULL;
    return inf__quantize_linear_out_type(zp != NULL, zp ? zp->dtype : INF_DTYPE_UNDEFINED,
                                         inf__attr_int(q, "output_dtype", 0));
}

typedef struct qpair {
    int q, d; /* the QuantizeLinear and DequantizeLinear nodes */
    int x;    /* the value quantized */
    float s;
    int z;
    inf_dtype type; /* what the Q writes */
} qpair;

/* Is node d (a DequantizeLinear) the second half of a pair as in the PATTERN, x float32 (static types, si)? */
static bool pair_at(const inf__pass_ctx *pc, const inf__shape_infer *si, int d, qpair *p) {
    const inf__node *dn = &pc->g->nodes[d];
    if (!inf__pass_node_is(pc, d, "DequantizeLinear") || dn->n_outputs != 1 || dn->outputs[0] < 0 ||
        inf__attr_int(dn, "block_size", 0))
        return false;
    int q = inf__pass_producer(pc, input(dn, 0), "QuantizeLinear");
    if (q < 0) return false;
    const inf__node *qn = &pc->g->nodes[q];
    float s2;
    int z2;
    inf_dtype t1, t2;
    if (qn->n_inputs < 1 || inf__attr_int(qn, "block_size", 0) || !params(pc, qn, &p->s, &p->z, &t1) ||
        !params(pc, dn, &s2, &z2, &t2) || s2 != p->s || z2 != p->z || t1 != t2 || !(p->s > 0))
        return false; /* a scale <= 0 or NaN stays for the kernel to report */
    int x = qn->inputs[0];
    const inf__value *xv = x >= 0 ? &pc->g->values[x] : NULL;
    if (!xv || xv->role == INF_VALUE_INITIALIZER) return false;
    if (xv->producer >= 0 && inf__pass_node_is(pc, xv->producer, "Constant")) return false;
    /* the readers must see the type they saw: float32 (scale and x share it from opset 19; below, x may also be
     * int32, which static inference knows from the graph input's declaration or the producer) */
    inf_dtype xt = inf__shape_infer_dtype(si, x);
    if (xt != INF_DTYPE_F32 && xt != INF_DTYPE_UNDEFINED) return false;
    p->q = q, p->d = d, p->x = x, p->type = q_type(pc, qn);
    return true;
}

/* Ops that only move, drop or repeat elements of their input 0 (a max of grid values is one of them). */
static bool data_movement(const inf__pass_ctx *pc, int n) {
    static const char *const ops[] = {"Transpose",    "Reshape",      "Squeeze", "Unsqueeze",      "Flatten",
                                      "Identity",     "Slice",        "Gather",  "GatherElements", "Expand",
                                      "SpaceToDepth", "DepthToSpace", "MaxPool"};
    const inf__node *node = &pc->g->nodes[n];
    for (size_t i = 0; i < sizeof ops / sizeof *ops; i++)
        if (inf__pass_node_is(pc, n, ops[i]))
            return strcmp(ops[i], "MaxPool") || node->n_outputs == 1 || node->outputs[1] < 0;
    return false;
}

/* EXACT: is p's x a data-movement op of a value already on p's grid (a pair of the same parameters and type)? */
static bool exact(const inf__pass_ctx *pc, const inf__shape_infer *si, const qpair *p) {
    int m = pc->g->values[p->x].producer;
    if (m < 0 || !data_movement(pc, m)) return false;
    int d0 = inf__pass_producer(pc, input(&pc->g->nodes[m], 0), "DequantizeLinear");
    qpair p0;
    return d0 >= 0 && pair_at(pc, si, d0, &p0) && p0.s == p->s && p0.z == p->z && p0.type == p->type;
}

/* Is input 1 of node r the DequantizeLinear of a constant 8-bit tensor (a QDQ weight)? */
static bool qdq_weight(const inf__pass_ctx *pc, const inf__node *r) {
    int d = inf__pass_producer(pc, input(r, 1), "DequantizeLinear");
    return d >= 0 && is_q8(inf__pass_const_tensor(pc, input(&pc->g->nodes[d], 0)));
}

/* Is value v the output of a pair? */
static bool paired(const inf__pass_ctx *pc, const inf__shape_infer *si, int v) {
    qpair p;
    int d = inf__pass_producer(pc, v, "DequantizeLinear");
    return d >= 0 && pair_at(pc, si, d, &p);
}

/* Does node r keep reading the pair's output at input k (the readers of the PATTERN)? */
static bool keeps(const inf__pass_ctx *pc, const inf__shape_infer *si, int r, int k, bool keep_act) {
    const inf__node *node = &pc->g->nodes[r];
    bool mm = inf__pass_node_is(pc, r, "MatMul");
    if (k == 0 && (mm || inf__pass_node_is(pc, r, "Gemm") || inf__pass_node_is(pc, r, "Conv")) && qdq_weight(pc, node))
        return true;
    return keep_act && mm && k < 2 && node->n_inputs == 2 && paired(pc, si, node->inputs[0]) &&
           paired(pc, si, node->inputs[1]);
}

/* Is value x a quantized convolution's output (a Conv on a QDQ weight, or its Relu / Clip / LeakyRelu)? */
static bool conv_output(const inf__pass_ctx *pc, int x) {
    int p = pc->g->values[x].producer;
    if (p >= 0 &&
        (inf__pass_node_is(pc, p, "Relu") || inf__pass_node_is(pc, p, "Clip") || inf__pass_node_is(pc, p, "LeakyRelu")))
        p = pc->g->nodes[p].n_inputs ? pc->g->values[pc->g->nodes[p].inputs[0]].producer : -1;
    if (p < 0 || pc->dead[p]) return false;
    const inf__node *n = &pc->g->nodes[p]; /* the second run: the Conv is a QConv by then */
    if (n->op && n->op->domain == INF_DOMAIN_INFERA && !strcmp(n->op_type, "QConv")) return true;
    return inf__pass_node_is(pc, p, "Conv") && qdq_weight(pc, n);
}

/* ---- a pair that may stand for a removed Relu / Clip ----
 * ONNX Runtime's quantizer removes a Relu or Clip after a quantized tensor when activations are asymmetric (its
 * default): the pair after the producer then clamps at 0 in its place (zero point = the type's lowest byte, so the
 * grid starts at 0).  Such a pair is dropped only when x is provably >= 0 anyway (nonneg), else kept whole. */

/* Does the pair's grid start at 0 (zero point = the lowest byte)? */
static bool clamps_at_zero(const qpair *p) {
    return (p->type == INF_DTYPE_U8 && p->z == 0) || (p->type == INF_DTYPE_I8 && p->z == -128);
}

/* The float32 constant behind value v before folding: an initializer, a Constant node's value, or either
 * through a Q -> DQ pair (the value before the pair's rounding, which moves it by at most half a step); or NULL. */
static const inf_tensor *const_f32(const inf__pass_ctx *pc, int v, int depth) {
    const inf_tensor *t = inf__pass_const_of(pc, v, INF_DTYPE_F32);
    int p = v >= 0 ? pc->g->values[v].producer : -1;
    if (t || p < 0 || depth > 2) return t;
    const inf__node *n = &pc->g->nodes[p];
    if (inf__pass_node_is(pc, p, "Constant")) {
        const inf__attr *a = inf__node_attr(n, "value");
        return a && a->type == INF_ATTR_TENSOR && a->t && a->t->kind == INF_KIND_TENSOR && a->t->dtype == INF_DTYPE_F32
                   ? a->t
                   : NULL;
    }
    int q = inf__pass_node_is(pc, p, "DequantizeLinear") ? inf__pass_producer(pc, input(n, 0), "QuantizeLinear") : -1;
    return q >= 0 ? const_f32(pc, input(&pc->g->nodes[q], 0), depth + 1) : NULL;
}

/* Element i of an 8-bit tensor. */
static int q8_at(const inf_tensor *t, int64_t i) {
    return t->dtype == INF_DTYPE_U8 ? ((const uint8_t *)t->data)[i] : ((const int8_t *)t->data)[i];
}

/* v = DequantizeLinear(constant 8-bit tensor, s, z) per tensor (ONNX Runtime's quantized constants): the
 * tensor in *t, s and z. */
static bool dq_const(const inf__pass_ctx *pc, int v, const inf_tensor **t, float *s, int *z) {
    int d = inf__pass_producer(pc, v, "DequantizeLinear");
    inf_dtype zt;
    if (d < 0 || !params(pc, &pc->g->nodes[d], s, z, &zt)) return false;
    *t = inf__pass_const_tensor(pc, input(&pc->g->nodes[d], 0));
    return is_q8(*t) && *s > 0;
}

/* The one-element float32 constant behind v (const_f32, or a dequantized 8-bit constant) in *e. */
static bool const_scalar(const inf__pass_ctx *pc, int v, float *e) {
    const inf_tensor *t = const_f32(pc, v, 0);
    float s;
    int z;
    if (!t && dq_const(pc, v, &t, &s, &z) && inf_tensor_numel(t) == 1) {
        *e = (float)(q8_at(t, 0) - z) * s;
        return true;
    }
    if (!t || inf_tensor_numel(t) != 1) return false;
    *e = *(const float *)t->data;
    return true;
}

/* v itself, or x when v is the output of a Q -> DQ pair on x. */
static int through_pair(const inf__pass_ctx *pc, int v) {
    int d = inf__pass_producer(pc, v, "DequantizeLinear");
    int q = d >= 0 ? inf__pass_producer(pc, input(&pc->g->nodes[d], 0), "QuantizeLinear") : -1;
    return q >= 0 ? input(&pc->g->nodes[q], 0) : v;
}

/* Is v a float32 constant (const_f32) with every element >= 0 (no NaN)? */
static bool nonneg_const(const inf__pass_ctx *pc, int v) {
    const inf_tensor *t = const_f32(pc, v, 0);
    float s;
    int z;
    if (!t && dq_const(pc, v, &t, &s, &z)) {
        for (int64_t i = 0, n = inf_tensor_numel(t); i < n; i++)
            if (q8_at(t, i) < z) return false;
        return true;
    }
    if (!t) { /* an int64 / int32 constant (Range's start and step for the rotary positions) */
        int p = v >= 0 ? pc->g->values[v].producer : -1;
        const inf__attr *a =
            p >= 0 && inf__pass_node_is(pc, p, "Constant") ? inf__node_attr(&pc->g->nodes[p], "value") : NULL;
        t = a && a->type == INF_ATTR_TENSOR ? a->t : inf__pass_const_tensor(pc, v);
        if (!t || t->kind != INF_KIND_TENSOR || (t->dtype != INF_DTYPE_I64 && t->dtype != INF_DTYPE_I32)) return false;
        for (int64_t i = 0, n = inf_tensor_numel(t); i < n; i++)
            if (t->dtype == INF_DTYPE_I64 ? ((const int64_t *)t->data)[i] < 0 : ((const int32_t *)t->data)[i] < 0)
                return false;
        return true;
    }
    const float *f = t->data;
    for (int64_t i = 0, n = inf_tensor_numel(t); i < n; i++)
        if (!(f[i] >= 0)) return false;
    return true;
}

static bool any_of(const inf__pass_ctx *pc, int n, const char *const *ops, int count) {
    for (int i = 0; i < count; i++)
        if (inf__pass_node_is(pc, n, ops[i])) return true;
    return false;
}

/* Is value v >= 0 wherever it is defined, by its producers (depth-limited): the transformer's statistics (x^2,
 * their mean, + eps, sqrt, 1 / .), softmax, sigmoid, 1 + tanh / erf, pairs on a grid starting at 0, and what only
 * moves, pools or combines such values. */
static bool nonneg(const inf__pass_ctx *pc, int v, int depth) {
    static const char *const always[] = {"Softmax", "Relu", "Sigmoid", "Exp", "Abs", "Sqrt", "Softplus"};
    static const char *const first[] = {
        "Transpose",  "Reshape",   "Squeeze",   "Unsqueeze",  "Flatten",     "Identity",
        "Slice",      "Gather",    "Expand",    "MaxPool",    "AveragePool", "GlobalAveragePool",
        "ReduceMean", "ReduceSum", "ReduceMax", "Reciprocal", "Cast",        "Pow"};
    static const char *const both[] = {"Add", "Mul", "Div", "Concat", "Min"};
    if (v < 0 || depth > 12) return false;
    if (nonneg_const(pc, v)) return true;
    int p = pc->g->values[v].producer;
    if (p < 0 || pc->dead[p]) return false;
    const inf__node *n = &pc->g->nodes[p];
    float e;
    if (any_of(pc, p, always, (int)(sizeof always / sizeof *always))) return true;
    if (inf__pass_node_is(pc, p, "Pow") && n->n_inputs == 2 && const_scalar(pc, n->inputs[1], &e) && e == 2)
        return true;
    if (inf__pass_node_is(pc, p, "Mul") && n->n_inputs == 2 && n->inputs[0] == n->inputs[1]) return true;
    if (inf__pass_node_is(pc, p, "Add") && n->n_inputs == 2) /* 1 + tanh(.) or 1 + erf(.) (the GELUs) */
        for (int k = 0; k < 2; k++) {
            int tv = through_pair(pc, n->inputs[k]), t = tv >= 0 ? pc->g->values[tv].producer : -1;
            if (t >= 0 && (inf__pass_node_is(pc, t, "Tanh") || inf__pass_node_is(pc, t, "Erf")) &&
                const_scalar(pc, n->inputs[1 - k], &e) && e >= 1)
                return true;
        }
    if (inf__pass_node_is(pc, p, "DequantizeLinear")) {
        qpair q;
        float s;
        int z;
        inf_dtype zt;
        const inf__node *qn = &pc->g->nodes[p];
        int qp = inf__pass_producer(pc, input(qn, 0), "QuantizeLinear");
        if (qp < 0 || !params(pc, qn, &s, &z, &zt)) return false;
        q.type = q_type(pc, &pc->g->nodes[qp]), q.z = z;
        return clamps_at_zero(&q);
    }
    if (inf__pass_node_is(pc, p, "Range") && n->n_inputs == 3) /* start >= 0, step >= 0 */
        return nonneg(pc, n->inputs[0], depth + 1) && nonneg(pc, n->inputs[2], depth + 1);
    if (any_of(pc, p, first, (int)(sizeof first / sizeof *first)))
        return n->n_inputs >= 1 && nonneg(pc, n->inputs[0], depth + 1);
    if (any_of(pc, p, both, (int)(sizeof both / sizeof *both)) || inf__pass_node_is(pc, p, "Where")) {
        for (int k = inf__pass_node_is(pc, p, "Where") ? 1 : 0; k < n->n_inputs; k++)
            if (!nonneg(pc, n->inputs[k], depth + 1)) return false;
        return n->n_inputs >= 1;
    }
    return false;
}

/* Readers of p's output other than the kept ones read x; the pair goes when nothing reads it. */
static int drop(inf__pass_ctx *pc, const inf__shape_infer *si, const qpair *p, bool keep_act) {
    inf__graph *g = pc->g;
    int xd = g->nodes[p->d].outputs[0], moved = 0;
    for (int r = 0; r < g->n_nodes; r++) {
        inf__node *node = &g->nodes[r];
        if (pc->dead[r]) continue;
        for (int k = 0; k < node->n_inputs; k++)
            if (node->inputs[k] == xd && !keeps(pc, si, r, k, keep_act)) {
                node->inputs[k] = p->x;
                g->values[xd].n_consumers--;
                g->values[p->x].n_consumers++;
                moved++;
            }
    }
    if (moved && g->values[xd].n_consumers == 0) {
        inf__pass_remove_node(pc, p->d);
        if (g->values[g->nodes[p->q].outputs[0]].n_consumers == 0) inf__pass_remove_node(pc, p->q);
    }
    return moved;
}

inf_status inf__pass_qdq_activations(inf__pass_ctx *pc, bool exact_only, bool keep_act, int *n_exact, int *n_bounded,
                                     inf_error *err) {
    *n_exact = *n_bounded = 0;
    inf__shape_infer *si = inf__shape_infer_new(pc->g); /* element types: only float32 x are taken */
    if (!si) return inf_error_set(err, INF_ENOMEM, "out of memory optimising the graph");
    for (int n = 0; n < pc->g->n_nodes; n++)
        if (!pc->dead[n]) inf__shape_infer_node(si, &pc->g->nodes[n]);
    /* from the last pair back: an exact pair's test reads the pair before it, which must still be there */
    for (int d = pc->g->n_nodes - 1; d >= 0; d--) {
        qpair p;
        if (!pair_at(pc, si, d, &p)) continue;
        bool ex = exact(pc, si, &p);
        /* a scale of infinity (ONNX Runtime's calibration of a tensor holding -inf: the attention mask) makes the
         * pair NaN for every finite value: no clamp to keep */
        bool degenerate = isinf(p.s);
        if (!ex && (exact_only || conv_output(pc, p.x) || (clamps_at_zero(&p) && !degenerate && !nonneg(pc, p.x, 0))))
            continue;
        if (drop(pc, si, &p, keep_act)) (*(ex ? n_exact : n_bounded))++;
    }
    inf__shape_infer_free(si);
    return INF_OK;
}
