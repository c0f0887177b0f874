/*
 * match.c -- helpers shared by the pattern passes (passes.h): finding a
 * chain's producers and constants, and rewriting its last node in place.
 */
#include <math.h>
#include <string.h>

#include "graph/passes/passes.h"
#include "ops/ops.h"

bool inf__pass_node_is(const inf__pass_ctx *pc, int n, const char *op_type) {
    const inf__node *node = &pc->g->nodes[n];
    return !pc->dead[n] && node->op && node->op->domain == INF_DOMAIN_ONNX && !strcmp(node->op_type, op_type) &&
           node->epilogue.kind == INF_EPILOGUE_NONE;
}

int inf__pass_producer(const inf__pass_ctx *pc, int v, const char *op_type) {
    if (v < 0) return -1;
    int p = pc->g->values[v].producer;
    return p >= 0 && inf__pass_node_is(pc, p, op_type) ? p : -1;
}

bool inf__pass_uses(const inf__pass_ctx *pc, int v, int n) { return v >= 0 && pc->g->values[v].n_consumers == n; }

const inf_tensor *inf__pass_const_of(const inf__pass_ctx *pc, int v, inf_dtype dtype) {
    if (v < 0) return NULL;
    const inf__value *val = &pc->g->values[v];
    if (val->role != INF_VALUE_INITIALIZER || !val->constant) return NULL;
    const inf_tensor *t = val->constant;
    return t->kind == INF_KIND_TENSOR && t->dtype == dtype ? t : NULL;
}

const inf_tensor *inf__pass_const_tensor(const inf__pass_ctx *pc, int v) {
    if (v < 0) return NULL;
    const inf__value *val = &pc->g->values[v];
    if (val->role != INF_VALUE_INITIALIZER || !val->constant || val->constant->kind != INF_KIND_TENSOR) return NULL;
    for (int i = 0; i < pc->g->n_inputs; i++)
        if (pc->g->inputs[i] == v) return NULL;
    return val->constant;
}

bool inf__pass_scalar(const inf__pass_ctx *pc, int v, float *out) {
    const inf_tensor *t = inf__pass_const_of(pc, v, INF_DTYPE_F32);
    if (!t || inf_tensor_numel(t) != 1) return false;
    *out = *(const float *)t->data;
    return true;
}

bool inf__pass_scalar_is(const inf__pass_ctx *pc, int v, float want, float tol) {
    float f;
    return inf__pass_scalar(pc, v, &f) && fabsf(f - want) <= tol;
}

bool inf__pass_const_fits(const inf__pass_ctx *pc, int c, int x) {
    const inf__value *cv = c >= 0 ? &pc->g->values[c] : NULL;
    if (!cv || cv->role != INF_VALUE_INITIALIZER || !cv->constant || cv->constant->kind != INF_KIND_TENSOR) return false;
    int rank = cv->constant->ndim;
    if (rank == 0) return true;
    if (x < 0) return false;
    const inf__value *xv = &pc->g->values[x];
    if (xv->role == INF_VALUE_INITIALIZER && xv->constant) return xv->constant->ndim >= rank;
    return xv->has_info && xv->info.kind == INF_KIND_TENSOR && xv->info.ndim >= rank;
}

int inf__pass_trailing_axes(const inf__pass_ctx *pc, const inf__node *node) {
    if (inf__attr_int(node, "keepdims", 1) != 1) return 0;
    int n = 0;
    const int64_t *axes = NULL;
    if (node->opset < 18 && node->n_inputs == 1) {
        axes = inf__attr_ints(node, "axes", &n);
    } else if (node->opset >= 18 && node->n_inputs == 2) {
        const inf_tensor *t = inf__pass_const_of(pc, node->inputs[1], INF_DTYPE_I64);
        if (!t || t->ndim != 1 || t->dims[0] > 8) return 0;
        axes = t->data;
        n = (int)t->dims[0];
    }
    if (!axes || n < 1 || n > 8) return 0;
    unsigned seen = 0;
    for (int i = 0; i < n; i++) {
        if (axes[i] >= 0 || axes[i] < -n) return 0;
        seen |= 1u << (-axes[i] - 1);
    }
    return seen == (1u << n) - 1 ? n : 0;
}

bool inf__pass_plain_maxpool(const inf__pass_ctx *pc, int mp, bool overlap, int64_t *pool) {
    const inf__node *n = &pc->g->nodes[mp];
    if (!inf__pass_node_is(pc, mp, "MaxPool") || n->n_inputs != 1 || (n->n_outputs > 1 && n->outputs[1] >= 0))
        return false;
    const char *ap = inf__attr_string(n, "auto_pad", "NOTSET");
    if ((strcmp(ap, "NOTSET") && strcmp(ap, "VALID")) || inf__attr_int(n, "ceil_mode", 0))
        return false;
    int nk = 0, ns = 0, np = 0, nd = 0;
    const int64_t *k = inf__attr_ints(n, "kernel_shape", &nk), *st = inf__attr_ints(n, "strides", &ns);
    const int64_t *pads = inf__attr_ints(n, "pads", &np), *dil = inf__attr_ints(n, "dilations", &nd);
    if (nk != 2 || (ns && ns != 2) || (np && np != 4) || (nd && nd != 2))
        return false;
    for (int i = 0; i < np; i++)
        if (pads[i])
            return false;
    for (int i = 0; i < nd; i++)
        if (dil[i] != 1)
            return false;
    for (int i = 0; i < 2; i++) {
        pool[i] = k[i], pool[2 + i] = ns ? st[i] : 1;
        if (pool[i] < 1 || pool[2 + i] < 1 || (!overlap && pool[2 + i] < pool[i]))
            return false;
    }
    return true;
}

bool inf__pass_pool_attrs(inf__pass_ctx *pc, const inf__node *node, const int64_t *pool, inf__attr *attrs) {
    int64_t *ints = inf__arena_alloc(&pc->model->arena, 4 * sizeof *ints);
    if (!ints)
        return false;
    memcpy(ints, pool, 4 * sizeof *ints);
    memcpy(attrs, node->attrs, (size_t)node->n_attrs * sizeof *attrs);
    attrs[node->n_attrs] = (inf__attr){.name = "pool_kernel", .type = INF_ATTR_INTS, .n = 2, .ints = ints};
    attrs[node->n_attrs + 1] = (inf__attr){.name = "pool_strides", .type = INF_ATTR_INTS, .n = 2, .ints = ints + 2};
    return true;
}

static void forget_reads(inf__graph *g, const inf__node *node) {
    for (int k = 0; k < node->n_inputs; k++)
        if (node->inputs[k] >= 0) g->values[node->inputs[k]].n_consumers--;
}

int inf__pass_redirect_reads(inf__pass_ctx *pc, int after, int from, int to) {
    inf__graph *g = pc->g;
    int moved = 0;
    for (int n = after + 1; n < g->n_nodes; n++) {
        inf__node *node = &g->nodes[n];
        for (int k = 0; !pc->dead[n] && k < node->n_inputs; k++)
            if (node->inputs[k] == from) {
                node->inputs[k] = to;
                g->values[from].n_consumers--;
                g->values[to].n_consumers++;
                moved++;
            }
    }
    return moved;
}

void inf__pass_remove_node(inf__pass_ctx *pc, int n) {
    inf__node *r = &pc->g->nodes[n];
    forget_reads(pc->g, r);
    for (int k = 0; k < r->n_outputs; k++)
        if (r->outputs[k] >= 0) pc->g->values[r->outputs[k]].producer = -1;
    pc->dead[n] = true;
}

inf_status inf__pass_rewrite(inf__pass_ctx *pc, int target, const char *domain, const char *op_type, int opset,
                             int n_inputs, const int *inputs, int n_attrs, const inf__attr *attrs,
                             const int *removed, int n_removed, inf_error *err) {
    inf__graph *g = pc->g;
    inf__arena *arena = &pc->model->arena;
    inf__node *node = &g->nodes[target];
    int dom = !strcmp(domain, "ai.infera") ? INF_DOMAIN_INFERA : inf__domain_from_string(domain);
    const inf__op *op = dom < 0 ? NULL : inf__op_find((inf__domain)dom, op_type);
    if (INF_NEVER(!op || !op->impl)) return inf_error_set(err, INF_EINTERNAL, "optimizer: no kernel for %s", op_type);
    int *ins = inf__arena_alloc(arena, (size_t)n_inputs * sizeof *ins);
    /* never NULL, also without attributes (a dynamic QConv of an attribute-less ConvInteger): later passes copy a
     * node's attributes with memcpy, which must not be given NULL even for 0 bytes */
    inf__attr *at = inf__arena_alloc(arena, (size_t)(n_attrs ? n_attrs : 1) * sizeof *at);
    if (!ins || !at) return inf_error_set(err, INF_ENOMEM, "out of memory optimising the graph");
    /* the params of the node this one replaces, when of the same op: the target's, or a removed node's
     * (a QGemm whose Gelu becomes its activation) -- init may reuse what they hold (packed weights) */
    const void *prev = node->op == op ? node->params : NULL;
    for (int i = 0; i < n_removed && !prev; i++)
        if (g->nodes[removed[i]].op == op) prev = g->nodes[removed[i]].params;
    for (int i = 0; i < n_removed; i++) inf__pass_remove_node(pc, removed[i]);
    forget_reads(g, node);
    inf__node_free_tensors(node); /* its old attributes' tensors, if any */
    memcpy(ins, inputs, (size_t)n_inputs * sizeof *ins);
    for (int k = 0; k < n_inputs; k++)
        if (ins[k] >= 0) g->values[ins[k]].n_consumers++;
    if (n_attrs) memcpy(at, attrs, (size_t)n_attrs * sizeof *at);
    node->inputs = ins;
    node->n_inputs = n_inputs;
    node->attrs = at;
    node->n_attrs = n_attrs;
    node->op = op;
    node->op_type = op->name;
    node->domain = domain;
    node->opset = opset;
    node->params = NULL;
    node->prev_params = prev;
    inf_status st = op->impl->init ? op->impl->init(node, arena, err) : INF_OK;
    node->prev_params = NULL;
    return st;
}

int inf__pass_gelu_form(const inf__pass_ctx *pc, int i) {
    const inf__node *n = &pc->g->nodes[i];
    if (pc->dead[i] || !n->op || (n->op->domain != INF_DOMAIN_INFERA && n->op->domain != INF_DOMAIN_ONNX) ||
        strcmp(n->op_type, "Gelu") != 0 || n->n_inputs != 1 || n->epilogue.kind != INF_EPILOGUE_NONE)
        return 0;
    const char *a = inf__attr_string(n, "approximate", "none");
    return !strcmp(a, "none") ? 1 : !strcmp(a, "tanh") ? 2 : 0;
}

bool inf__pass_exact_gelu(const inf__pass_ctx *pc, int i) { return inf__pass_gelu_form(pc, i) == 1; }
