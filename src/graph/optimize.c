/*
 * optimize.c -- load-time rewrites of the graph IR.
 *
 * DESIGN: passes run once per model, after every node is bound to its
 * kernel, and never change what the graph computes:
 *   1. constant folding: a deterministic node whose inputs are all constants
 *      (initializers, or outputs of nodes folded before it) runs once, here,
 *      through its own kernel (graph/session.c's evaluator), and its outputs
 *      become initializers.  PyTorch exports are full of these (Constant
 *      nodes, shape arithmetic on weights, and Identity nodes where the
 *      exporter shared equal weights between layers).  A node that reads a
 *      value folded this way is bound again (its op's init), so what init
 *      prepares from constant inputs -- packed GEMM/conv weights -- is
 *      prepared for it too, as if the value had been an initializer.
 *      Shape-subgraph folding (graph/shape_infer.c) goes further: a node
 *      whose int64 output is the same on every run although its inputs are
 *      not constants -- the Shape of a tensor with fixed dimensions, a
 *      Gather of a fixed dimension, arithmetic on those -- becomes that
 *      constant too, so exporters' shape chains shrink to their truly
 *      dynamic parts (the batch size).
 *   0. QDQ files, before folding: activation Q -> DQ pairs no integer
 *      kernel reads are dropped (passes/qdq_activations.c: ONNX Runtime's
 *      quantize_static writes one after nearly every op; exact ones only
 *      with INFERA_QDQ=exact), then QDQ fusion (passes/qdq.c): a QuantizeLinear ->
 *      DequantizeLinear -> MatMul/Gemm/Conv on DequantizeLinear'd 8-bit
 *      weights -> the internal QGemm/QConv, an INT8 product on weights
 *      packed at load.
 *   2. pattern passes (graph/passes/, one file each, with the exact pattern
 *      and why it is safe): first what exporters write that computes
 *      nothing (inference Dropout, Reshapes that keep the shape, K^T spelled
 *      Reshape/Transpose/Reshape; passes/export_noops.c), then a dead-node
 *      sweep (the Shape chains that fed those Reshapes); then the decomposed LayerNorm PyTorch exports below
 *      opset 17 -> LayerNormalization; exact-erf and tanh-form GELU -> the internal fused
 *      Gelu (ai.infera, approximate = "tanh" for the latter); Pow(x, 2) -> Mul(x, x); scaled-dot-product
 *      attention (Transpose/MatMul/Div/Softmax/MatMul/Transpose) -> the
 *      internal fused Attention (ai.infera); Conv -> BatchNormalization
 *      (constant, inference mode) -> one Conv with folded weights; Conv ->
 *      Add (a residual) -> the internal ConvAdd (ai.infera); MatMul by
 *      constant weights -> its bias Add (-> a residual Add) (-> Gelu) -> the
 *      internal FusedMatMul (ai.infera); a Conv's Sigmoid + Mul (SiLU) ->
 *      the Conv's SiLU epilogue; Transpose -> Transpose and
 *      Reshape-like -> Reshape chains -> one node (or an Identity, which
 *      shares its input).  Each rewrites the chain's last node in place and
 *      marks the rest dead.
 *   3. activation fusion: a Relu, LeakyRelu or Clip (constant bounds) that is
 *      the only reader of a Conv/ConvTranspose/Gemm/MatMul/Add/
 *      BatchNormalization/ConvAdd output becomes that node's epilogue,
 *      applied in place right after its kernel (graph/session.c), or by
 *      the kernel itself in its store (inf__kernel_ctx.epilogue_done): one
 *      node and one pass over memory less, bit-identical results (same
 *      comparisons).  After it: QConv chains kept uint8 (passes/qdq_chain.c)
 *      and a float Conv (+ Relu/Clip) -> MaxPool -> the internal
 *      ConvMaxPool (passes/conv_pool.c).
 *   4. dead-node elimination: nodes whose outputs nobody reads are dropped.
 * Then the node list is compacted and producers/consumers recounted.
 * A node that fails to fold is kept, so its error surfaces at run time with
 * the usual context.  Subgraphs are optimised first, innermost out.
 */
#include <math.h>
#include <string.h>

#include "graph/graph.h"
#include "graph/passes/passes.h"
#include "graph/shape_infer.h"
#include "ops/ops.h"

/* Ops whose outputs differ from run to run, or that must not run early (ops/op_facts.c). */
static bool is_nondeterministic(const inf__node *node) { return inf__op_facts_of(node->op)->nondeterministic; }

static bool has_subgraph(const inf__node *node) {
    for (int a = 0; a < node->n_attrs; a++)
        if (node->attrs[a].type == INF_ATTR_GRAPH || node->attrs[a].type == INF_ATTR_GRAPHS) return true;
    return false;
}

static bool is_foldable(const inf__graph *g, const inf__node *node) {
    if (is_nondeterministic(node) || has_subgraph(node) || node->n_implicit) return false;
    for (int k = 0; k < node->n_inputs; k++) {
        int v = node->inputs[k];
        if (v < 0) continue;
        const inf__value *val = &g->values[v];
        if (val->role != INF_VALUE_INITIALIZER || !val->constant || val->constant->kind != INF_KIND_TENSOR) return false;
    }
    return true;
}

/* Folded outputs larger than this stay computed at run time: a Tile or
 * Expand of a small constant should not bloat the model's memory. */
#define FOLD_MAX_BYTES ((size_t)16 << 20)

static bool outputs_fit(const inf__node *node, inf_tensor *const *outs) {
    size_t total = 0;
    for (int k = 0; k < node->n_outputs; k++) {
        if (!outs[k]) continue;
        if (outs[k]->kind != INF_KIND_TENSOR) return false;
        total += inf_tensor_nbytes(outs[k]);
    }
    return total <= FOLD_MAX_BYTES;
}

static inf_status fold_node(inf__evaluator *ev, inf__graph *g, inf__node *node, bool *dead, bool *folded,
                            inf_error *err) {
    inf_tensor *ins[64], *outs[64];
    if (node->n_inputs > 64 || node->n_outputs > 64) return INF_OK;
    for (int k = 0; k < node->n_inputs; k++) ins[k] = node->inputs[k] >= 0 ? g->values[node->inputs[k]].constant : NULL;
    inf_error ignored;
    inf_status st = inf__evaluator_run_node(ev, node, ins, outs, &ignored);
    if (st == INF_ENOMEM) return inf_error_set(err, st, "out of memory folding node '%s'", node->name);
    if (st != INF_OK) return INF_OK; /* keep it: it will report at run time */
    bool fits = outputs_fit(node, outs);
    for (int k = 0; k < node->n_outputs; k++) {
        int v = node->outputs[k];
        if (!fits || v < 0 || !outs[k]) {
            inf_tensor_free(outs[k]);
            continue;
        }
        g->values[v].role = INF_VALUE_INITIALIZER;
        g->values[v].constant = outs[k]; /* the model owns it from here */
        g->values[v].producer = -1;
        folded[v] = true;
    }
    if (fits) *dead = true;
    return INF_OK;
}

/* Shape-subgraph folding: a node that cannot be folded, but whose int64
 * output static shape inference knows for every run (the Shape of a tensor
 * whose dimensions are fixed, a Gather of a fixed dimension, arithmetic on
 * those), becomes that constant. */
static inf_status fold_known_shape(inf__shape_infer *si, inf__graph *g, inf__node *node, bool *dead, bool *folded,
                                   inf_error *err) {
    inf__shape_infer_node(si, node);
    if (node->n_outputs != 1 || node->outputs[0] < 0 || has_subgraph(node) || is_nondeterministic(node)) return INF_OK;
    inf_tensor *t;
    if (inf__shape_infer_constant(si, node->outputs[0], &t) != INF_OK)
        return inf_error_set(err, INF_ENOMEM, "out of memory folding node '%s'", node->name);
    if (!t) return INF_OK;
    inf__value *val = &g->values[node->outputs[0]];
    val->role = INF_VALUE_INITIALIZER;
    val->constant = t; /* the model owns it from here */
    val->producer = -1;
    folded[node->outputs[0]] = true;
    *dead = true;
    return INF_OK;
}

/* Binds again every live node that reads a value folded into a constant
 * (folded[v]), so its op's init sees the constant. */
static inf_status rebind_readers(struct inf_model *model, inf__graph *g, const bool *dead, const bool *folded,
                                 inf_error *err) {
    for (int n = 0; n < g->n_nodes; n++) {
        inf__node *node = &g->nodes[n];
        bool reads = false;
        for (int k = 0; k < node->n_inputs && !reads; k++) reads = node->inputs[k] >= 0 && folded[node->inputs[k]];
        if (dead[n] || !reads || !node->op->impl->init) continue;
        inf_status st = node->op->impl->init(node, &model->arena, err);
        if (st != INF_OK) return st;
    }
    return INF_OK;
}

/* ---- activation fusion ---- */

/* The scalar float32 constant behind input i, or dflt when absent; false
 * when the input is computed at run time or not a float32 scalar. */
static bool constant_bound(const inf__node *node, int i, float dflt, float *out) {
    if (i >= node->n_inputs || node->inputs[i] < 0) {
        *out = dflt;
        return true;
    }
    const inf_tensor *c = inf__node_constant_input(node, i);
    if (!c || c->kind != INF_KIND_TENSOR || c->dtype != INF_DTYPE_F32 || inf_tensor_numel(c) != 1) return false;
    *out = *(const float *)c->data;
    return true;
}

/* The epilogue equivalent to activation node a, if it has one. */
static bool epilogue_of(const inf__node *a, inf__epilogue *ep) {
    if (!inf__op_facts_of(a->op)->activation) return false; /* Relu, LeakyRelu, Clip (ops/op_facts.c) */
    memset(ep, 0, sizeof *ep);
    if (!strcmp(a->op_type, "Relu")) {
        ep->kind = INF_EPILOGUE_RELU;
    } else if (!strcmp(a->op_type, "LeakyRelu")) {
        ep->kind = INF_EPILOGUE_LEAKY_RELU;
        ep->alpha = inf__attr_float(a, "alpha", 0.01f);
    } else if (a->opset < 11) {
        ep->kind = INF_EPILOGUE_CLIP;
        ep->lo = inf__attr_float(a, "min", -3.402823466e+38f);
        ep->hi = inf__attr_float(a, "max", 3.402823466e+38f);
    } else {
        ep->kind = INF_EPILOGUE_CLIP;
        if (!constant_bound(a, 1, -INFINITY, &ep->lo) || !constant_bound(a, 2, INFINITY, &ep->hi)) return false;
    }
    return true;
}

static void fuse_activations(inf__graph *g, bool *dead) {
    for (int n = 0; n < g->n_nodes; n++) {
        inf__node *a = &g->nodes[n];
        inf__epilogue ep;
        if (dead[n] || a->n_inputs < 1 || a->inputs[0] < 0 || a->n_outputs != 1 || a->outputs[0] < 0) continue;
        if (!epilogue_of(a, &ep)) continue;
        int v = a->inputs[0], w = a->outputs[0], p = g->values[v].producer;
        if (p < 0 || dead[p] || g->values[v].n_consumers != 1) continue;
        inf__node *prod = &g->nodes[p];
        /* a QGemm/QConv whose store ends in Q -> DQ, or in a GELU, must not take an activation after it */
        bool quantized = prod->op->domain == INF_DOMAIN_INFERA &&
                         (!strcmp(prod->op_type, "QGemm") || !strcmp(prod->op_type, "QConv"));
        if (quantized && ((prod->n_inputs > 7 && prod->inputs[7] >= 0) || *inf__attr_string(prod, "activation", "")))
            continue;
        if (!inf__op_facts_of(prod->op)->takes_activation || prod->epilogue.kind != INF_EPILOGUE_NONE ||
            prod->outputs[0] != v)
            continue;
        prod->epilogue = ep;
        prod->outputs[0] = w; /* the producer now writes the activation's output */
        g->values[w].producer = p;
        g->values[v].producer = -1;
        g->values[v].n_consumers = 0;
        for (int k = 1; k < a->n_inputs; k++) /* Clip's constant bounds lose a reader */
            if (a->inputs[k] >= 0) g->values[a->inputs[k]].n_consumers--;
        dead[n] = true;
    }
}

static void forget_reads(inf__graph *g, const inf__node *node) {
    for (int k = 0; k < node->n_inputs; k++)
        if (node->inputs[k] >= 0) g->values[node->inputs[k]].n_consumers--;
    for (int k = 0; k < node->n_implicit; k++) g->values[node->implicit[k]].n_consumers--;
}

static bool is_unused(const inf__graph *g, const inf__node *node) {
    for (int k = 0; k < node->n_outputs; k++)
        if (node->outputs[k] >= 0 && g->values[node->outputs[k]].n_consumers > 0) return false;
    return true;
}

/* Dead-node elimination: marks every node whose outputs nobody reads dead;
 * reverse order removes whole dead chains. */
static void sweep_unused(inf__graph *g, bool *dead) {
    for (int n = g->n_nodes - 1; n >= 0; n--)
        if (!dead[n] && is_unused(g, &g->nodes[n])) {
            dead[n] = true;
            forget_reads(g, &g->nodes[n]);
        }
}

/* Drops dead nodes, keeping order, and renumbers the producers. */
static void compact(inf__graph *g, const bool *dead) {
    int kept = 0;
    for (int n = 0; n < g->n_nodes; n++) {
        if (dead[n]) {
            inf__node_free_tensors(&g->nodes[n]);
            continue;
        }
        g->nodes[kept] = g->nodes[n];
        for (int k = 0; k < g->nodes[kept].n_outputs; k++)
            if (g->nodes[kept].outputs[k] >= 0) g->values[g->nodes[kept].outputs[k]].producer = kept;
        kept++;
    }
    g->n_nodes = kept;
}

inf_status inf__graph_optimize(struct inf_model *model, inf__graph *g, inf_error *err) {
    inf_status st = INF_OK;
    for (int n = 0; n < g->n_nodes && st == INF_OK; n++)
        for (int a = 0; a < g->nodes[n].n_attrs && st == INF_OK; a++) {
            inf__attr *attr = &g->nodes[n].attrs[a];
            if (attr->type == INF_ATTR_GRAPH) st = inf__graph_optimize(model, attr->g, err);
            for (int k = 0; attr->type == INF_ATTR_GRAPHS && k < attr->n && st == INF_OK; k++)
                st = inf__graph_optimize(model, attr->graphs[k], err);
        }
    if (st != INF_OK || g->n_nodes == 0) return st;
    bool *dead = inf__calloc((size_t)g->n_nodes, sizeof(bool));
    bool *folded = inf__calloc((size_t)g->n_values + 1, sizeof(bool));
    inf__evaluator *ev = NULL;
    inf__shape_infer *si = inf__shape_infer_new(g);
    if (!dead || !folded || !si) {
        inf__free(dead);
        inf__free(folded);
        inf__shape_infer_free(si);
        return inf_error_set(err, INF_ENOMEM, "out of memory optimising the graph");
    }
    int n_qdq = 0, n_exact = 0, n_bounded = 0; /* before folding, which would turn the weights' DQ into FP32 */
    inf__pass_ctx qpc = {model, g, dead};
    st = inf__pass_qdq_activations(&qpc, model->qdq_exact, true, &n_exact, &n_bounded, err);
    if (n_exact + n_bounded)
        inf__log(INF_LOG_DEBUG, "optimizer: %d activation Q->DQ pairs dropped exactly, %d more (bounded)%s", n_exact,
                 n_bounded, model->qdq_exact ? " (INFERA_QDQ=exact: the exact ones only)" : "");
    if (st == INF_OK) st = inf__pass_qdq(&qpc, &n_qdq, err);
    if (n_qdq) inf__log(INF_LOG_DEBUG, "optimizer: %d QDQ MatMul/Gemm/Conv -> QGemm/QConv", n_qdq);
    int n_dyn = 0;
    if (st == INF_OK) st = inf__pass_qdynamic(&qpc, &n_dyn, err);
    if (n_dyn)
        inf__log(INF_LOG_DEBUG,
                 "optimizer: %d dynamic MatMulInteger chains -> QGemm, DynamicQuantizeLinear copies shared", n_dyn);
    for (int n = 0; n < g->n_nodes && st == INF_OK; n++) {
        if (dead[n]) continue;
        if (!is_foldable(g, &g->nodes[n])) {
            st = fold_known_shape(si, g, &g->nodes[n], &dead[n], folded, err);
        } else if (ev || (st = inf__evaluator_new(model, g, &ev, err)) == INF_OK) {
            st = fold_node(ev, g, &g->nodes[n], &dead[n], folded, err);
        }
        if (dead[n]) forget_reads(g, &g->nodes[n]);
    }
    inf__shape_infer_free(si);
    if (st == INF_OK) st = rebind_readers(model, g, dead, folded, err);
    inf__free(folded);
    if (st == INF_OK) { /* after folding: ORT's conv bias is Reshape(constant) until then */
        st = inf__pass_qdynamic_conv(&qpc, &n_dyn, err);
        if (n_dyn) inf__log(INF_LOG_DEBUG, "optimizer: %d dynamic ConvInteger chains -> QConv", n_dyn);
    }
    if (st == INF_OK) { /* exporters' no-ops first: the Shape chains they kept alive die before Attention looks */
        inf__pass_ctx pc = {model, g, dead};
        int n_noop = 0;
        st = inf__pass_export_noops(&pc, &n_noop, err);
        if (n_noop) {
            inf__log(INF_LOG_DEBUG, "optimizer: %d Dropout/Reshape no-ops bypassed or K^T chains made Transposes",
                     n_noop);
            sweep_unused(g, dead);
        }
    }
    if (st == INF_OK) { /* LayerNorm before Pow: its chain holds a Pow(d, 2) */
        inf__pass_ctx pc = {model, g, dead};
        int n_ln = 0, n_gelu = 0, n_pow = 0, n_att = 0, n_bn = 0, n_ca = 0, n_mm = 0, n_lay = 0;
        st = inf__pass_layernorm(&pc, &n_ln, err);
        int n_rms = 0;
        if (st == INF_OK) st = inf__pass_rmsnorm(&pc, &n_rms, err); /* before Pow: its chain may hold Pow(x, 2) */
        if (n_rms) inf__log(INF_LOG_DEBUG, "optimizer: %d RMSNorm -> RMSNormalization", n_rms);
        if (st == INF_OK) st = inf__pass_gelu(&pc, &n_gelu, err);
        if (st == INF_OK) st = inf__pass_pow_square(&pc, &n_pow, err);
        if (st == INF_OK) st = inf__pass_attention(&pc, &n_att, err);
        if (st == INF_OK && n_bounded) { /* ORT's form: an attention the INT8 form did not take goes FP32 */
            int n_ex = 0, n_b = 0, n_att2 = 0;
            st = inf__pass_qdq_activations(&pc, false, false, &n_ex, &n_b, err);
            if (st == INF_OK && n_ex + n_b) st = inf__pass_attention(&pc, &n_att2, err);
            if (n_ex + n_b) inf__log(INF_LOG_DEBUG, "optimizer: %d attention Q->DQ pairs dropped", n_ex + n_b);
            n_att += n_att2;
        }
        if (n_att) sweep_unused(g, dead); /* a match whose chain Shape nodes also read left it to this */
        if (st == INF_OK) st = inf__pass_conv_bn(&pc, &n_bn, err); /* before ConvAdd: Conv -> BN -> Add */
        if (st == INF_OK) st = inf__pass_conv_add(&pc, &n_ca, err);
        int n_silu = 0;
        if (st == INF_OK) st = inf__pass_silu(&pc, &n_silu, err); /* after ConvAdd: its Conv may be one */
        if (n_silu) inf__log(INF_LOG_DEBUG, "optimizer: %d Conv+Sigmoid+Mul -> Conv with SiLU", n_silu);
        if (st == INF_OK) st = inf__pass_matmul_add(&pc, &n_mm, err); /* after Gelu: it fuses the Gelu */
        int n_qgelu = 0;
        if (st == INF_OK) st = inf__pass_qdq_gelu(&pc, &n_qgelu, err); /* after Gelu, likewise */
        n_mm += n_qgelu;
        if (st == INF_OK) st = inf__pass_layout(&pc, &n_lay, err); /* last: Attention matches Transposes */
        if (n_ln + n_gelu + n_pow + n_att + n_bn + n_ca + n_mm + n_lay)
            inf__log(INF_LOG_DEBUG,
                     "optimizer: %d LayerNorm, %d Gelu, %d Pow(x,2), %d Attention, %d Conv+BatchNorm, %d ConvAdd, "
                     "%d FusedMatMul, %d Transpose/Reshape rewrites",
                     n_ln, n_gelu, n_pow, n_att, n_bn, n_ca, n_mm, n_lay);
    }
    if (st == INF_OK) fuse_activations(g, dead);
    if (st == INF_OK) { /* after activation fusion: a QConv's Relu is applied before its uint8 store */
        inf__pass_ctx pc = {model, g, dead};
        int n_chain = 0, n_pool = 0;
        st = inf__pass_qdq_chain(&pc, &n_chain, err);
        if (n_chain) inf__log(INF_LOG_DEBUG, "optimizer: %d QConv+MaxPool, QConv+Add fused, QConv->QConv or QGemm->QGemm kept uint8", n_chain);
        if (st == INF_OK)
            st = inf__pass_conv_pool(&pc, &n_pool, err); /* the Conv's Relu is its epilogue by now */
        if (n_pool)
            inf__log(INF_LOG_DEBUG, "optimizer: %d Conv+MaxPool -> ConvMaxPool", n_pool);
        int n_last = 0;
        if (st == INF_OK) st = inf__pass_channels_last(&pc, &n_last, err); /* last: after every Conv fusion */
        if (n_last) inf__log(INF_LOG_DEBUG, "optimizer: %d Convs with channels-last operands", n_last);
    }
    if (st == INF_OK) sweep_unused(g, dead);
    inf__evaluator_free(ev);
    if (st == INF_OK) compact(g, dead);
    inf__free(dead);
    return st;
}
