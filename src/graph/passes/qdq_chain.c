/*
 * qdq_chain.c -- keeps the activation 8-bit between two fused quantized
 * products (passes/qdq.c's QConv / QGemm), and fuses a MaxPool into the
 * QConv before it: the INT8 graph writes fewer, smaller tensors.
 *
 * uint8 LINKS: QConv (QGemm) A whose only reader is QConv (QGemm) B, as B's
 * x, stores its output already quantized with B's input parameters -- uint8,
 * channels last for a conv -- and B reads those bytes as they are: no float
 * tensor, no second quantization pass, no NCHW <-> channels-last transposes.
 *
 * PATTERN (after activation fusion, so A's Relu/Clip is its epilogue):
 *     v = A(x, ...)        7 inputs (no output Q -> DQ of its own); a QConv 2-D
 *                          and without a fused pool, a QGemm (a GELU of A's
 *                          rows is applied before the quantization)
 *     y = B(v, s, z, ...)  the same op; s a float32 constant, z absent or a uint8 constant
 *   v read by B only (not a graph output).
 * ->  A gets inputs 7, 8 = B's (s, z) and u8_out = 1: its store computes
 *     the same float value (scale, bias, activation) and quantizes it with
 *     QuantizeLinear's arithmetic into uint8 ([n, oh, ow, m] for a QConv,
 *     x's shape with N columns for a QGemm);
 *     B gets u8_in = 1: it reads those uint8 values with zero point z.
 *
 * WHY IT IS SAFE: B quantized A's float output with (s, z) as its first step
 * (ops/ref/quantize.c, QuantizeLinear's arithmetic); A now does exactly that
 * in its store, so B sees the same bytes: bit-identical results.  Only the
 * layout of v changes, and v has no other reader.
 */
#include <string.h>

#include "graph/passes/passes.h"
#include "ops/ops.h"

enum { MAX_ATTRS = 16 };

static bool is_fused(const inf__pass_ctx *pc, int n, const char *op_type) {
    const inf__node *node = &pc->g->nodes[n];
    return !pc->dead[n] && node->op && node->op->domain == INF_DOMAIN_INFERA && !strcmp(node->op_type, op_type) &&
           node->n_outputs == 1;
}

/* A 2-D QConv (4-D constant W, input 3) without the flag `flag` set. */
static bool plain_2d(const inf__pass_ctx *pc, int n, const char *flag) {
    const inf__node *node = &pc->g->nodes[n];
    const inf_tensor *w = node->n_inputs > 3 ? inf__pass_const_tensor(pc, node->inputs[3]) : NULL;
    return is_fused(pc, n, "QConv") && w && w->ndim == 4 && !inf__attr_int(node, flag, 0);
}

/* A QGemm without the flag `flag` set; with a row activation (GELU) only as
 * the writer: its store then quantizes the GELU's row (ops/ref/qgemm_drive.c). */
static bool plain_gemm(const inf__pass_ctx *pc, int n, const char *flag) {
    const inf__node *node = &pc->g->nodes[n];
    return is_fused(pc, n, "QGemm") && !inf__attr_int(node, flag, 0) &&
           (!strcmp(flag, "u8_out") || !inf__node_attr(node, "activation"));
}

/* Can node n take part in a uint8 link, as the reader (flag "u8_in") or
 * the writer ("u8_out"); both ends must be the same op. */
static bool linkable(const inf__pass_ctx *pc, int n, const char *flag, bool conv) {
    return conv ? plain_2d(pc, n, flag) && !inf__node_attr(&pc->g->nodes[n], "pool_kernel") : plain_gemm(pc, n, flag);
}

/* Node n again as op with `inputs` and its attributes plus flag = 1. */
static inf_status rewrite_with(inf__pass_ctx *pc, int n, const char *op, int n_inputs, const int *inputs,
                               const char *flag, inf_error *err) {
    const inf__node *node = &pc->g->nodes[n];
    inf__attr attrs[MAX_ATTRS];
    memcpy(attrs, node->attrs, (size_t)node->n_attrs * sizeof *attrs);
    attrs[node->n_attrs] = (inf__attr){.name = flag, .type = INF_ATTR_INT, .i = 1};
    return inf__pass_rewrite(pc, n, "ai.infera", op, 1, n_inputs, inputs, node->n_attrs + 1, attrs, NULL, 0, err);
}

/* QConv A -> MaxPool (its only reader) -> one QConv with pool_kernel and
 * pool_strides: the pooling is applied to the conv's float rows while they
 * are in cache (ops/ref/qgemm_drive.c), and the full-size output is never
 * written.  Safe: A's store (scale, bias, activation, Q -> DQ) is
 * non-decreasing in the integer sum, so pooling after it is MaxPool. */
static inf_status fuse_pools(inf__pass_ctx *pc, int *n_rewritten, inf_error *err) {
    for (int mp = 0; mp < pc->g->n_nodes; mp++) {
        int64_t pool[4];
        if (!inf__pass_plain_maxpool(pc, mp, false, pool))
            continue;
        int v = pc->g->nodes[mp].inputs[0], a = v >= 0 ? pc->g->values[v].producer : -1;
        if (a < 0 || !plain_2d(pc, a, "u8_out") || inf__attr_int(&pc->g->nodes[a], "u8_in", 0) ||
            inf__node_attr(&pc->g->nodes[a], "pool_kernel") || !inf__pass_uses(pc, v, 1) ||
            pc->g->nodes[a].n_attrs + 2 > MAX_ATTRS)
            continue;
        const inf__node *na = &pc->g->nodes[a];
        inf__attr attrs[MAX_ATTRS];
        if (!inf__pass_pool_attrs(pc, na, pool, attrs))
            return inf_error_set(err, INF_ENOMEM, "out of memory optimising the graph");
        inf__epilogue ep = na->epilogue;
        int removed[1] = {a};
        inf_status st = inf__pass_rewrite(pc, mp, "ai.infera", "QConv", 1, na->n_inputs, na->inputs, na->n_attrs + 2,
                                          attrs, removed, 1, err);
        if (st != INF_OK) return st;
        pc->g->nodes[mp].epilogue = ep;
        (*n_rewritten)++;
    }
    return INF_OK;
}

/* QConv (QGemm) A -> Add(A's output, r) [-> Relu/Clip/LeakyRelu, the Add's
 * epilogue] -> one QConv (QGemm) with r as input 9: the Add (and its
 * activation) is applied to each block of the conv's float output (each row
 * of the product's) while it is in cache (ops/ref/qgemm_drive.c), instead of
 * a pass over two tensors in memory (an encoder's residual joins).
 * A: no activation of its own (its output Q -> DQ, if any, stays: the Add
 * reads the dequantized value; no GELU), float output (no uint8 link, no pool); r:
 * not a constant; A's output read by the Add only.  Safe: the store computes
 * A's value as before, then value + r and the activation, the Add node's
 * operations in the same order; an r of another (broadcastable) shape is
 * added after the store, as Add does. */
static inf_status fuse_residuals(inf__pass_ctx *pc, int *n_rewritten, inf_error *err) {
    for (int d = 0; d < pc->g->n_nodes; d++) {
        const inf__node *add = &pc->g->nodes[d];
        inf__epilogue_kind ek = add->epilogue.kind;
        if (pc->dead[d] || !add->op || add->op->domain != INF_DOMAIN_ONNX || strcmp(add->op_type, "Add") ||
            add->opset < 7 || add->n_inputs != 2 || add->n_outputs != 1 ||
            !(ek == INF_EPILOGUE_NONE || ek == INF_EPILOGUE_RELU || ek == INF_EPILOGUE_LEAKY_RELU ||
              ek == INF_EPILOGUE_CLIP))
            continue;
        for (int side = 0; side < 2; side++) {
            int v = add->inputs[side], r = add->inputs[1 - side], a = v >= 0 ? pc->g->values[v].producer : -1;
            bool gemm = a >= 0 && is_fused(pc, a, "QGemm");
            if (a < 0 || r < 0 || v == r || !(gemm || is_fused(pc, a, "QConv")) || inf__pass_const_tensor(pc, r) ||
                !inf__pass_uses(pc, v, 1))
                continue;
            const inf__node *na = &pc->g->nodes[a];
            if ((na->n_inputs != 7 && na->n_inputs != 9) || na->epilogue.kind != INF_EPILOGUE_NONE ||
                inf__attr_int(na, "u8_out", 0) || inf__node_attr(na, "activation") ||
                inf__node_attr(na, "pool_kernel") || na->n_attrs > MAX_ATTRS)
                continue;
            int ins[10];
            for (int k = 0; k < 9; k++) ins[k] = k < na->n_inputs ? na->inputs[k] : -1;
            ins[9] = r;
            inf__attr attrs[MAX_ATTRS];
            memcpy(attrs, na->attrs, (size_t)na->n_attrs * sizeof *attrs);
            int removed[1] = {a};
            inf_status st = inf__pass_rewrite(pc, d, "ai.infera", gemm ? "QGemm" : "QConv", 1, 10, ins, na->n_attrs,
                                              attrs, removed, 1, err);
            if (st != INF_OK) return st;
            (*n_rewritten)++;
            break;
        }
    }
    return INF_OK;
}

/* ---- shared uint8 links (after the residual fusion) ----
 * A value v that several QConvs read keeps uint8 channels last when every
 * reader can take those bytes:
 *   - a reader of v as its x (input 0 only), QConv 2-D without a pool,
 *     quantizing with one (s, z) -- the same by value for all of them;
 *   - a fused residual QConv reading v as input 9 that itself writes
 *     uint8 (so its Add runs per position, channels last), when v's
 *     writer A re-quantizes its output (inputs 7, 8 = (s, z)): the bytes
 *     are then worth (q - z) * s, exactly the float A stores today.
 * The writer A is a QConv 2-D (a pooled one included: QuantizeLinear
 * commutes with the max) whose output is not a graph output:
 *   - a residual QConv (10 inputs, its float value quantized by x-readers
 *     only): gets inputs 10, 11 = (s, z) and u8_out -- it stores
 *     Q(act(value + residual)), the bytes each reader computed;
 *   - a QConv re-quantizing its output with (s, z) = inputs 7, 8 (uint8):
 *     gets u8_out (its store is then Q(value) = Q(DQ(Q(value)))); residual
 *     readers get inputs 12, 13 = (s, z) to dequantize it.
 * Readers of x get u8_in.  Outputs are bit-identical: every reader sees
 * the bytes (or the float) it computed before. */

/* s and z (z may be -1) as one float scale and one uint8 zero point (or none). */
static bool q8_params(const inf__pass_ctx *pc, int s, int z, float *sv, int *zv) {
    const inf_tensor *st = inf__pass_const_tensor(pc, s), *zt = inf__pass_const_tensor(pc, z);
    if (!st || st->dtype != INF_DTYPE_F32 || inf_tensor_numel(st) != 1) return false;
    if (z >= 0 && (!zt || zt->dtype != INF_DTYPE_U8 || inf_tensor_numel(zt) != 1)) return false;
    *sv = *(const float *)st->data, *zv = z >= 0 ? *(const uint8_t *)zt->data : 0;
    return true;
}

/* How node r reads v: 1 as its x only, 2 as its residual (input 9) only, 0 otherwise. */
static int read_kind(const inf__pass_ctx *pc, int r, int v) {
    const inf__node *n = &pc->g->nodes[r];
    int at = -1, count = 0;
    for (int k = 0; k < n->n_inputs; k++)
        if (n->inputs[k] == v) at = k, count++;
    if (count != 1 || !is_fused(pc, r, "QConv")) return 0;
    return at == 0 ? 1 : at == 9 ? 2 : 0;
}

enum { MAX_READERS = 16 };

/* The readers of v (all of them, v not a graph output), or -1. */
static int readers_of(const inf__pass_ctx *pc, int v, int *readers) {
    int n = 0, uses = 0;
    for (int r = 0; r < pc->g->n_nodes; r++) {
        if (pc->dead[r]) continue;
        const inf__node *node = &pc->g->nodes[r];
        bool reads = false;
        for (int k = 0; k < node->n_inputs; k++)
            if (node->inputs[k] == v) reads = true, uses++;
        if (reads) {
            if (n == MAX_READERS) return -1;
            readers[n++] = r;
        }
    }
    return n && uses == pc->g->values[v].n_consumers ? n : -1;
}

/* Node n with inputs [0, n_inputs) (absent ones -1) and, when flag, flag = 1 added. */
static inf_status rewrite_inputs(inf__pass_ctx *pc, int n, int n_inputs, const int *inputs, const char *flag,
                                 inf_error *err) {
    const inf__node *node = &pc->g->nodes[n];
    inf__attr attrs[MAX_ATTRS];
    memcpy(attrs, node->attrs, (size_t)node->n_attrs * sizeof *attrs);
    int n_attrs = node->n_attrs;
    if (flag) attrs[n_attrs++] = (inf__attr){.name = flag, .type = INF_ATTR_INT, .i = 1};
    inf__epilogue ep = node->epilogue;
    inf_status st = inf__pass_rewrite(pc, n, "ai.infera", "QConv", 1, n_inputs, inputs, n_attrs, attrs, NULL, 0, err);
    if (st == INF_OK) pc->g->nodes[n].epilogue = ep;
    return st;
}

/* Writer a of v: link it when its readers allow (the rules above); residual: pass 1 (residual writers) or 2. */
static inf_status link_shared(inf__pass_ctx *pc, int a, bool residual, int *n_rewritten, inf_error *err) {
    const inf__node *na = &pc->g->nodes[a];
    if (!is_fused(pc, a, "QConv") || inf__attr_int(na, "u8_out", 0) || na->n_attrs + 1 > MAX_ATTRS) return INF_OK;
    const inf_tensor *w = na->n_inputs > 3 ? inf__pass_const_tensor(pc, na->inputs[3]) : NULL;
    if (!w || w->ndim != 4) return INF_OK;
    bool has_res = na->n_inputs >= 10 && na->inputs[9] >= 0;
    if (residual != has_res || (!residual && (na->n_inputs != 9 || na->inputs[7] < 0))) return INF_OK;
    int v = na->outputs[0], readers[MAX_READERS], nr = v >= 0 ? readers_of(pc, v, readers) : -1;
    if (nr < 1) return INF_OK;
    float s = 0, rs;
    int z = 0, rz, sv = -1, zv = -1;
    if (!residual && !q8_params(pc, na->inputs[7], na->inputs[8], &s, &z)) return INF_OK;
    if (!residual) sv = na->inputs[7], zv = na->inputs[8];
    for (int i = 0; i < nr; i++) {
        const inf__node *nb = &pc->g->nodes[readers[i]];
        int kind = read_kind(pc, readers[i], v);
        if (nb->n_attrs + 1 > MAX_ATTRS) return INF_OK;
        if (kind == 1) {
            if (!linkable(pc, readers[i], "u8_in", true) ||
                !q8_params(pc, nb->inputs[1], nb->n_inputs > 2 ? nb->inputs[2] : -1, &rs, &rz))
                return INF_OK;
            if (sv < 0) s = rs, z = rz, sv = nb->inputs[1], zv = nb->n_inputs > 2 ? nb->inputs[2] : -1;
            if (rs != s || rz != z) return INF_OK;
        } else if (kind != 2 || residual || !inf__attr_int(nb, "u8_out", 0) || nb->n_inputs != 12) {
            return INF_OK;
        }
    }
    int ins[14];
    for (int k = 0; k < 14; k++)
        ins[k] = k < na->n_inputs ? na->inputs[k] : -1;
    if (residual) ins[10] = sv, ins[11] = zv;
    inf_status st = rewrite_inputs(pc, a, residual ? 12 : na->n_inputs, ins, "u8_out", err);
    for (int i = 0; i < nr && st == INF_OK; i++) {
        const inf__node *nb = &pc->g->nodes[readers[i]];
        for (int k = 0; k < 14; k++)
            ins[k] = k < nb->n_inputs ? nb->inputs[k] : -1;
        if (read_kind(pc, readers[i], v) == 1) {
            st = rewrite_inputs(pc, readers[i], nb->n_inputs, ins, "u8_in", err);
        } else {
            ins[12] = na->inputs[7], ins[13] = na->inputs[8];
            st = rewrite_inputs(pc, readers[i], 14, ins, NULL, err);
        }
    }
    if (st == INF_OK) (*n_rewritten)++;
    return st;
}

inf_status inf__pass_qdq_chain(inf__pass_ctx *pc, int *n_rewritten, inf_error *err) {
    *n_rewritten = 0;
    inf_status st = fuse_pools(pc, n_rewritten, err); /* first: a pooled QConv stores float, never uint8 */
    if (st != INF_OK) return st;
    for (int b = 0; b < pc->g->n_nodes; b++) {
        bool conv = is_fused(pc, b, "QConv");
        if (!linkable(pc, b, "u8_in", conv)) continue;
        const inf__node *nb = &pc->g->nodes[b];
        int v = nb->inputs[0], a = v >= 0 ? pc->g->values[v].producer : -1;
        if (a < 0 || !linkable(pc, a, "u8_out", conv) || pc->g->nodes[a].n_inputs != 7 || !inf__pass_uses(pc, v, 1) ||
            pc->g->nodes[a].n_attrs + 1 > MAX_ATTRS || nb->n_attrs + 1 > MAX_ATTRS)
            continue;
        const inf_tensor *s = inf__pass_const_tensor(pc, nb->inputs[1]);
        int zv = nb->n_inputs > 2 ? nb->inputs[2] : -1;
        const inf_tensor *z = inf__pass_const_tensor(pc, zv);
        if (!s || s->dtype != INF_DTYPE_F32 || inf_tensor_numel(s) != 1 ||
            (zv >= 0 && (!z || z->dtype != INF_DTYPE_U8 || inf_tensor_numel(z) != 1)))
            continue;
        int ins_a[9];
        memcpy(ins_a, pc->g->nodes[a].inputs, 7 * sizeof *ins_a);
        ins_a[7] = nb->inputs[1], ins_a[8] = zv;
        const char *op = conv ? "QConv" : "QGemm";
        st = rewrite_with(pc, a, op, 9, ins_a, "u8_out", err);
        if (st == INF_OK) st = rewrite_with(pc, b, op, nb->n_inputs, nb->inputs, "u8_in", err);
        if (st != INF_OK) return st;
        (*n_rewritten)++;
    }
    st = fuse_residuals(pc, n_rewritten, err);
    for (int pass = 0; pass < 2 && st == INF_OK; pass++) /* residual writers first: their residuals may follow */
        for (int a = 0; a < pc->g->n_nodes && st == INF_OK; a++)
            st = link_shared(pc, a, pass == 0, n_rewritten, err);
    return st;
}
