/*
 * channels_last.c -- the activations that pass only between convolutions
 * whose kernels take channels-last operands are held channels-last
 * ([n][h][w][c]) instead of ONNX's [n][c][h][w]: a ResNet block's insides.
 *
 * WHY: with channels first, the two threads that split a layer by rows
 * write every channel plane half each, so their output lines interleave in
 * memory every half plane (2 KiB on a 32x32 plane).  Two cores that do not
 * share an L3 (a cloud VM's vCPUs on two CCDs) then lose most of the second
 * thread to the lines and prefetches that cross at every boundary: the
 * bench CNN's 2-thread run took 1.3x its shared-L3 time, a layer's store
 * phase 2-3x (bench/RESULTS.md, session 31).  Channels last, a thread's
 * rows are one span of memory.  The Winograd kernels also stage their input
 * and store their output channels-last, so the transposes at both ends go.
 *
 * PATTERN: a float32 value v written by a Conv / ConvAdd (its only output)
 * whose every reader is a Conv's X or a ConvAdd's X or residual (no graph
 * output, no subgraph reads it), where each of these nodes' kernel takes
 * the operands channels-last (inf__ops_conv_channels_last_native: the
 * Winograd variants; 1x1 Convs without padding with X and Y both
 * channels-last).  Values are dropped until every node's set of
 * channels-last operands is one its kernel takes (a fixpoint: dropping only
 * removes bits).  Each node then gets the attribute channels_last = its
 * INF_NHWC_* bits (ops/ops.h); the values keep their [n, c, h, w] shapes,
 * so memory planning and sub-batching (rows of axis 0) are unchanged.
 *
 * WHY IT IS SAFE: only the writer and the readers of such a value see its
 * memory, and each reads and writes it in the same layout.  The Winograd
 * kernels' channels-last stores do the channels-first store's operations per
 * element, so those bits do not change; a 1x1 Conv becomes one GEMM per
 * output row (its own sums, independent of the batch and the threads).  A
 * kernel that does not take a layout at run time after all (another CPU
 * running a bundle) computes channels-first between transposes (conv.c):
 * the layout never changes a result, only its speed.  Runs last, after
 * ConvAdd, activation and MaxPool fusion.
 */
#include <string.h>

#include "graph/passes/passes.h"
#include "ops/ops.h"

enum { MAX_ATTRS = 24 };

/* Is node n a live Conv, ConvAdd or ConvMaxPool this pass may give layouts? */
static bool layout_conv(const inf__pass_ctx *pc, int n) {
    const inf__node *node = &pc->g->nodes[n];
    if (pc->dead[n] || !node->op || node->n_outputs != 1 || node->n_inputs < 2 || node->n_attrs + 1 > MAX_ATTRS)
        return false;
    bool conv = node->op->domain == INF_DOMAIN_ONNX && !strcmp(node->op_type, "Conv");
    bool infera = node->op->domain == INF_DOMAIN_INFERA;
    bool conv_add = infera && !strcmp(node->op_type, "ConvAdd") && node->n_inputs == 4;
    bool conv_pool = infera && !strcmp(node->op_type, "ConvMaxPool");
    return (conv || conv_add || conv_pool) && inf__attr_int(node, "channels_last", 0) == 0;
}

/* The INF_NHWC_* bits node n would get from the values marked in last[]. */
static int node_bits(const inf__pass_ctx *pc, int n, const bool *last) {
    const inf__node *node = &pc->g->nodes[n];
    int bits = 0;
    if (node->inputs[0] >= 0 && last[node->inputs[0]]) bits |= INF_NHWC_X;
    if (node->outputs[0] >= 0 && last[node->outputs[0]]) bits |= INF_NHWC_Y;
    if (node->n_inputs == 4 && node->inputs[3] >= 0 && last[node->inputs[3]]) bits |= INF_NHWC_RES;
    return bits;
}

/* last[v]: v's writer and readers are layout Convs that read it as X or
 * residual, every read counted (so no graph output or subgraph sees it). */
static void candidates(const inf__pass_ctx *pc, const bool *is_conv, bool *last) {
    const inf__graph *g = pc->g;
    int *reads = inf__calloc((size_t)g->n_values, sizeof *reads);
    for (int v = 0; v < g->n_values; v++) {
        int p = g->values[v].producer;
        last[v] = reads && p >= 0 && is_conv[p] && g->nodes[p].outputs[0] == v;
    }
    for (int n = 0; n < g->n_nodes; n++) {
        if (pc->dead[n]) continue;
        const inf__node *node = &g->nodes[n];
        for (int k = 0; k < node->n_inputs; k++) {
            int v = node->inputs[k];
            if (v < 0 || !last[v]) continue;
            if (is_conv[n] && (k == 0 || k == 3)) reads[v]++;
            else last[v] = false;
        }
    }
    for (int v = 0; v < g->n_values; v++)
        if (last[v] && (reads[v] == 0 || !inf__pass_uses(pc, v, reads[v]))) last[v] = false;
    inf__free(reads);
}

/* Node n again, with channels_last = bits (its W packing kept: conv.c). */
static inf_status set_bits(inf__pass_ctx *pc, int n, int bits, inf_error *err) {
    const inf__node *node = &pc->g->nodes[n];
    inf__attr attrs[MAX_ATTRS];
    memcpy(attrs, node->attrs, (size_t)node->n_attrs * sizeof *attrs);
    attrs[node->n_attrs] = (inf__attr){.name = "channels_last", .type = INF_ATTR_INT, .i = bits};
    const char *domain = node->op->domain == INF_DOMAIN_INFERA ? "ai.infera" : "ai.onnx";
    return inf__pass_rewrite(pc, n, domain, node->op_type, node->opset, node->n_inputs, node->inputs, node->n_attrs + 1,
                             attrs, NULL, 0, err);
}

inf_status inf__pass_channels_last(inf__pass_ctx *pc, int *n_rewritten, inf_error *err) {
    *n_rewritten = 0;
    inf__graph *g = pc->g;
    bool *is_conv = inf__calloc((size_t)g->n_nodes + 1, sizeof *is_conv);
    bool *last = inf__calloc((size_t)g->n_values + 1, sizeof *last);
    if (!is_conv || !last) {
        inf__free(is_conv), inf__free(last);
        return inf_error_set(err, INF_ENOMEM, "out of memory optimising the graph");
    }
    for (int n = 0; n < g->n_nodes; n++) is_conv[n] = layout_conv(pc, n);
    candidates(pc, is_conv, last);
    for (bool changed = true; changed;) { /* drop a node's values until its kernel takes what is left */
        changed = false;
        for (int n = 0; n < g->n_nodes; n++) {
            int bits = is_conv[n] ? node_bits(pc, n, last) : 0;
            if (!bits || inf__ops_conv_channels_last_native(&g->nodes[n], bits)) continue;
            const inf__node *node = &g->nodes[n];
            if (node->inputs[0] >= 0) last[node->inputs[0]] = false;
            last[node->outputs[0]] = false;
            if (node->n_inputs == 4 && node->inputs[3] >= 0) last[node->inputs[3]] = false;
            changed = true;
        }
    }
    inf_status st = INF_OK;
    for (int n = 0; n < g->n_nodes && st == INF_OK; n++) {
        int bits = is_conv[n] ? node_bits(pc, n, last) : 0;
        if (!bits) continue;
        inf__epilogue ep = g->nodes[n].epilogue;
        st = set_bits(pc, n, bits, err);
        g->nodes[n].epilogue = ep;
        (*n_rewritten)++;
    }
    inf__free(is_conv), inf__free(last);
    return st;
}
