/*
 * layout.c -- transpose and reshape elimination: chains that only move or
 * relabel data collapse into one node, or into none.  Exporters write such
 * chains when they convert between layouts (a TensorFlow model's NHWC ->
 * NCHW -> NHWC transposes around each op), and when they flatten and then
 * reshape a tensor again.
 *
 * PATTERNS (the first node's output read only by the second, no epilogue):
 *     t = Transpose(x, perm = p1);  y = Transpose(t, perm = p2)
 *         -> y = Transpose(x, perm = p) with p[i] = p1[p2[i]],
 *            or y = Identity(x) when p is the identity
 *     y = Transpose(x, perm = identity)          -> y = Identity(x)
 *     r = Reshape | Flatten | Squeeze | Unsqueeze (x, ...);  y = Reshape(r, s)
 *         with s a constant int64 shape without 0 entries
 *         -> y = Reshape(x, s)
 *
 * WHY IT IS SAFE: a transpose of a transpose moves every element where the
 * composed permutation moves it (y[i...] = x at the composed index), so the
 * values are the same bits; Identity shares its input's buffer.  A Reshape
 * to a shape without 0 entries depends only on its input's element count
 * (a -1 is inferred from it), which the first node kept, and the row-major
 * order of the elements, which no reshape changes.  Only explicit `perm`
 * attributes are composed (the default, reversed axes, needs the rank).
 */
#include <string.h>

#include "graph/passes/passes.h"
#include "ops/ops.h"

static bool is_identity(const int64_t *p, int n) {
    for (int i = 0; i < n; i++)
        if (p[i] != i) return false;
    return true;
}

/* The live, epilogue-free node of one of the given types producing v and
 * read only once (by the node being matched), or -1. */
static int single_use_producer(const inf__pass_ctx *pc, int v, const char *const *types, int n_types) {
    if (!inf__pass_uses(pc, v, 1)) return -1;
    for (int t = 0; t < n_types; t++) {
        int p = inf__pass_producer(pc, v, types[t]);
        if (p >= 0) return pc->g->nodes[p].n_outputs == 1 ? p : -1;
    }
    return -1;
}

static inf_status make_identity(inf__pass_ctx *pc, int n, int x, const int *removed, int n_removed, inf_error *err) {
    return inf__pass_rewrite(pc, n, "", "Identity", pc->g->nodes[n].opset, 1, &x, 0, NULL, removed, n_removed, err);
}

/* Transpose node n: merged with the Transpose before it, or dropped. */
static inf_status transpose_chain(inf__pass_ctx *pc, int n, int *n_rewritten, inf_error *err) {
    const inf__node *outer = &pc->g->nodes[n];
    int n2 = 0, n1 = 0;
    const int64_t *p2 = inf__attr_ints(outer, "perm", &n2);
    if (!p2 || outer->n_inputs != 1) return INF_OK;
    static const char *const transpose[] = {"Transpose"};
    int ti = single_use_producer(pc, outer->inputs[0], transpose, 1);
    const int64_t *p1 = ti >= 0 ? inf__attr_ints(&pc->g->nodes[ti], "perm", &n1) : NULL;
    if (!p1 || n1 != n2) {
        if (!is_identity(p2, n2)) return INF_OK;
        (*n_rewritten)++;
        return make_identity(pc, n, outer->inputs[0], NULL, 0, err);
    }
    int x = pc->g->nodes[ti].inputs[0];
    int64_t *p = inf__arena_alloc(&pc->model->arena, (size_t)n2 * sizeof *p);
    inf__attr *perm = inf__arena_alloc(&pc->model->arena, sizeof *perm);
    if (!p || !perm) return inf_error_set(err, INF_ENOMEM, "out of memory optimising the graph");
    for (int i = 0; i < n2; i++) {
        if (p2[i] < 0 || p2[i] >= n1) return INF_OK; /* not a permutation: the kernel reports it */
        p[i] = p1[p2[i]];
    }
    (*n_rewritten)++;
    if (is_identity(p, n2)) return make_identity(pc, n, x, &ti, 1, err);
    *perm = (inf__attr){.name = "perm", .type = INF_ATTR_INTS, .n = n2, .ints = p};
    return inf__pass_rewrite(pc, n, "", "Transpose", outer->opset, 1, &x, 1, perm, &ti, 1, err);
}

/* Is value v a constant int64 shape without 0 entries? */
static bool fixed_shape(const inf__pass_ctx *pc, int v) {
    const inf_tensor *t = v >= 0 && pc->g->values[v].role == INF_VALUE_INITIALIZER ? pc->g->values[v].constant : NULL;
    if (!t || t->kind != INF_KIND_TENSOR || t->dtype != INF_DTYPE_I64 || t->ndim != 1) return false;
    for (int64_t i = 0; i < t->dims[0]; i++)
        if (((const int64_t *)t->data)[i] == 0) return false;
    return true;
}

/* Reshape node n: reads what the reshape-like node before it read. */
static inf_status reshape_chain(inf__pass_ctx *pc, int n, int *n_rewritten, inf_error *err) {
    const inf__node *outer = &pc->g->nodes[n];
    if (outer->n_inputs != 2 || !fixed_shape(pc, outer->inputs[1])) return INF_OK;
    static const char *const reshapes[] = {"Reshape", "Flatten", "Squeeze", "Unsqueeze"};
    int ri = single_use_producer(pc, outer->inputs[0], reshapes, 4);
    if (ri < 0 || pc->g->nodes[ri].inputs[0] < 0) return INF_OK;
    int ins[2] = {pc->g->nodes[ri].inputs[0], outer->inputs[1]};
    (*n_rewritten)++;
    return inf__pass_rewrite(pc, n, "", "Reshape", outer->opset, 2, ins, outer->n_attrs, outer->attrs, &ri, 1, err);
}

inf_status inf__pass_layout(inf__pass_ctx *pc, int *n_rewritten, inf_error *err) {
    *n_rewritten = 0;
    inf_status st = INF_OK;
    for (int n = 0; n < pc->g->n_nodes && st == INF_OK; n++) {
        const inf__node *node = &pc->g->nodes[n];
        if (pc->dead[n] || !node->op || node->op->domain != INF_DOMAIN_ONNX || node->epilogue.kind != INF_EPILOGUE_NONE)
            continue;
        if (!strcmp(node->op_type, "Transpose")) st = transpose_chain(pc, n, n_rewritten, err);
        else if (!strcmp(node->op_type, "Reshape")) /* again while it absorbs one: Reshape(Unsqueeze(Reshape)) */
            for (int before = -1; st == INF_OK && before != *n_rewritten;) {
                before = *n_rewritten;
                st = reshape_chain(pc, n, n_rewritten, err);
            }
    }
    return st;
}
