/*
 * op_table.c -- the operator table generated from ops.def, its lookup, and
 * the binding of a loaded graph's nodes to their kernels.
 *
 * The table is a sorted constant array: lookup is a bisection on
 * (domain, op type), done once per node at load time.
 */
#include <stdio.h>
#include <string.h>

#include "ops/ops.h"

/* Weak, so that the library links while a kernel family is being written;
 * a unit test (ops_table_complete) fails while any row lacks its kernel. */
/* A row is OP(domain, name, first, last, impl[, min_in, max_in, min_out,
 * max_out, required]); rows without the arity columns get -1 (unchecked)
 * through the padding arguments below. */
#define OP_EXTERN(domain, name, first, last, impl, ...) extern const inf__op_impl impl __attribute__((weak));
#define OP(...) OP_EXTERN(__VA_ARGS__, -1, -1, -1, -1, 0)
#include "ops/ops.def"
#undef OP

#define OP_ROW(domain, name, first, last, impl, min_in, max_in, min_out, max_out, required, ...) \
    {INF_DOMAIN_##domain, name, first, last, &impl, min_in, max_in, min_out, max_out, required},
const inf__op inf__op_table[] = {
#define OP(...) OP_ROW(__VA_ARGS__, -1, -1, -1, -1, 0)
#include "ops/ops.def"
#undef OP
};

const int inf__op_count = (int)(sizeof inf__op_table / sizeof inf__op_table[0]);

/* The kernel symbol of each row ("inf__op_gemm"): `infera compile --c-source`
 * names the kernels a model uses, so that a program linking the static
 * libinfera_edge.a pulls those in (the table's references are weak). */
#define OP_SYMBOL(domain, name, first, last, impl, ...) #impl,
const char *const inf__op_impl_symbol[] = {
#define OP(...) OP_SYMBOL(__VA_ARGS__, -1, -1, -1, -1, 0)
#include "ops/ops.def"
#undef OP
};

/* ONNX's schema history (schema_versions.def): the since-versions of every
 * operator, for the effective version a model's opset selects. */
#define SCHEMA(domain, name, ...) {INF_DOMAIN_##domain, name, {__VA_ARGS__}},
const inf__op_schema inf__op_schemas[] = {
#include "ops/schema_versions.def"
};
#undef SCHEMA

const int inf__op_schema_count = (int)(sizeof inf__op_schemas / sizeof inf__op_schemas[0]);

/* The newest opset of each domain Infera knows (what ONNX Runtime 1.30 loads). */
static const int k_domain_max_opset[INF_DOMAIN_COUNT] = {INF_OPSET_MAX_ONNX, INF_OPSET_MAX_ML, 1, 1, 1};

int inf__domain_max_opset(inf__domain domain) { return k_domain_max_opset[domain]; }

const inf__op_schema *inf__op_schema_find(inf__domain domain, const char *name) {
    int lo = 0, hi = inf__op_schema_count - 1;
    while (lo <= hi) {
        int mid = (lo + hi) / 2;
        const inf__op_schema *s = &inf__op_schemas[mid];
        int c = domain != s->domain ? (domain < s->domain ? -1 : 1) : strcmp(name, s->name);
        if (c == 0) return s;
        if (c < 0) hi = mid - 1;
        else lo = mid + 1;
    }
    return NULL;
}

int inf__op_schema_effective(const inf__op_schema *schema, int opset) {
    int v = 0;
    for (int i = 0; i < INF_SCHEMA_MAX_VERSIONS && schema->since[i]; i++)
        if (schema->since[i] <= opset) v = schema->since[i];
    return v;
}

int inf__domain_from_string(const char *domain) {
    if (!domain || !*domain || !strcmp(domain, "ai.onnx")) return INF_DOMAIN_ONNX;
    if (!strcmp(domain, "ai.onnx.ml")) return INF_DOMAIN_ML;
    if (!strcmp(domain, "ai.onnx.preview.training")) return INF_DOMAIN_TRAINING;
    if (!strcmp(domain, "com.microsoft")) return INF_DOMAIN_MS;
    return -1;
}

static int op_cmp(inf__domain domain, const char *name, const inf__op *op) {
    if (domain != op->domain) return domain < op->domain ? -1 : 1;
    return strcmp(name, op->name);
}

const inf__op *inf__op_find(inf__domain domain, const char *name) {
    int lo = 0, hi = inf__op_count - 1;
    while (lo <= hi) {
        int mid = (lo + hi) / 2;
        int c = op_cmp(domain, name, &inf__op_table[mid]);
        if (c == 0) return &inf__op_table[mid];
        if (c < 0) hi = mid - 1;
        else lo = mid + 1;
    }
    return NULL;
}

static inf_status check_arity(const inf__op *op, const inf__node *node, inf_error *err) {
    if (op->min_inputs >= 0 && (node->n_inputs < op->min_inputs || (op->max_inputs >= 0 && node->n_inputs > op->max_inputs)))
        return inf__node_error(node, err, INF_EMODEL, "has %d inputs; %s takes %d to %s", node->n_inputs, op->name,
                               op->min_inputs, op->max_inputs < 0 ? "any number" : (char[12]){0});
    if (op->min_outputs >= 0 &&
        (node->n_outputs < op->min_outputs || (op->max_outputs >= 0 && node->n_outputs > op->max_outputs)))
        return inf__node_error(node, err, INF_EMODEL, "has %d outputs; %s produces %d to %d", node->n_outputs, op->name,
                               op->min_outputs, op->max_outputs);
    for (int i = 0; i < 32 && i < node->n_inputs; i++)
        if ((op->required_inputs >> i & 1) && node->inputs[i] < 0)
            return inf__node_error(node, err, INF_EMODEL, "required input %d of %s is empty", i, op->name);
    return INF_OK;
}

/* Why a node's opset is outside its row: the domain's opset is newer than
 * any Infera knows, or the schema version that opset selects is not
 * implemented (naming the version, when ONNX's history knows it). */
static inf_status opset_error(const inf__op *op, const inf__node *node, inf_error *err) {
    int max = inf__domain_max_opset(op->domain);
    if (node->opset > max)
        return inf__node_error(node, err, INF_EUNSUPPORTED,
                               "the model imports opset %d of domain '%s'; Infera knows opsets up to %d",
                               node->opset, node->domain, max);
    const inf__op_schema *schema = inf__op_schema_find(op->domain, op->name);
    int version = schema ? inf__op_schema_effective(schema, node->opset) : 0;
    if (version > 0)
        return inf__node_error(node, err, INF_EUNSUPPORTED,
                               "the model imports opset %d, which selects version %d of %s's schema; Infera "
                               "implements %s at opsets %d-%d only",
                               node->opset, version, op->name, op->name, op->first_opset, op->last_opset);
    return inf__node_error(node, err, INF_EUNSUPPORTED,
                           "operator %s (domain '%s') is supported at opsets %d-%d, the model imports opset %d",
                           node->op_type, node->domain, op->first_opset, op->last_opset, node->opset);
}

static inf_status bind_node(struct inf_model *model, inf__node *node, inf_error *err) {
    int domain = inf__domain_from_string(node->domain);
    const inf__op *op = domain < 0 ? NULL : inf__op_find((inf__domain)domain, node->op_type);
    if (!op)
        return inf__node_error(node, err, INF_EUNSUPPORTED,
                               "unsupported operator %s (domain '%s', opset %d)", node->op_type,
                               node->domain, node->opset);
    if (node->opset < op->first_opset || node->opset > op->last_opset) return opset_error(op, node, err);
    if (!op->impl)
        return inf__node_error(node, err, INF_EUNSUPPORTED, "operator %s has no kernel in this build", node->op_type);
    inf_status st = check_arity(op, node, err);
    if (st != INF_OK) return st;
    node->op = op;
    if (op->impl->init) return op->impl->init(node, &model->arena, err);
    return INF_OK;
}

inf_status inf__graph_bind_ops(struct inf_model *model, inf__graph *g, inf_error *err) {
    for (int n = 0; n < g->n_nodes; n++) {
        inf__node *node = &g->nodes[n];
        inf_status st = bind_node(model, node, err);
        if (st != INF_OK) return st;
        for (int a = 0; a < node->n_attrs; a++) {
            const inf__attr *attr = &node->attrs[a];
            if (attr->type == INF_ATTR_GRAPH && attr->g &&
                (st = inf__graph_bind_ops(model, attr->g, err)) != INF_OK)
                return st;
            for (int k = 0; attr->type == INF_ATTR_GRAPHS && k < attr->n; k++)
                if ((st = inf__graph_bind_ops(model, attr->graphs[k], err)) != INF_OK) return st;
        }
    }
    return INF_OK;
}

inf_status inf__node_error(const inf__node *node, inf_error *err, inf_status status,
                           const char *fmt, ...) {
    if (!err) return status;
    char msg[INF_ERROR_MESSAGE_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return inf_error_set(err, status, "node '%s' (%s): %s", node->name, node->op_type, msg);
}

/* The internal ops (ai.infera) sort last and are not listed: models cannot use them. */
int inf_supported_op_count(void) {
    int n = inf__op_count;
    while (n > 0 && inf__op_table[n - 1].domain == INF_DOMAIN_INFERA) n--;
    return n;
}

int inf_supported_op_schema_versions(int i, int *versions, int max_versions) {
    const inf__op *op = &inf__op_table[i];
    const inf__op_schema *schema = inf__op_schema_find(op->domain, op->name);
    int n = 0;
    if (!schema && op->domain == INF_DOMAIN_MS && max_versions > 0) versions[n++] = 1; /* contrib ops: version 1 only */
    for (int k = 0; schema && k < INF_SCHEMA_MAX_VERSIONS && schema->since[k]; k++) {
        int v = schema->since[k];
        bool selected = v <= op->last_opset && (k + 1 == INF_SCHEMA_MAX_VERSIONS || !schema->since[k + 1] ||
                                                 schema->since[k + 1] > op->first_opset);
        if (selected && n < max_versions) versions[n++] = v;
    }
    return n;
}

void inf_supported_op(int i, const char **domain, const char **op_type, int *first_opset, int *last_opset) {
    static const char *const domains[INF_DOMAIN_COUNT] = {"ai.onnx", "ai.onnx.ml", "ai.onnx.preview.training",
                                                          "com.microsoft", "ai.infera"};
    const inf__op *op = &inf__op_table[i];
    *domain = domains[op->domain];
    *op_type = op->name;
    *first_opset = op->first_opset;
    *last_opset = op->last_opset;
}
