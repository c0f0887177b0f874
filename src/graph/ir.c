/*
 * ir.c -- helpers over the graph IR: attribute lookup and the final checks
 * that make a decoded graph runnable (topological order, single writers,
 * every read value defined).
 */
#include <string.h>

#include "graph/graph.h"

/* ---- attributes ---- */

const inf__attr *inf__node_attr(const inf__node *node, const char *name) {
    for (int i = 0; i < node->n_attrs; i++)
        if (!strcmp(node->attrs[i].name, name)) return &node->attrs[i];
    return NULL;
}

int64_t inf__attr_int(const inf__node *node, const char *name, int64_t dflt) {
    const inf__attr *a = inf__node_attr(node, name);
    return a && a->type == INF_ATTR_INT ? a->i : dflt;
}

float inf__attr_float(const inf__node *node, const char *name, float dflt) {
    const inf__attr *a = inf__node_attr(node, name);
    if (a && a->type == INF_ATTR_FLOAT) return a->f;
    if (a && a->type == INF_ATTR_INT) return (float)a->i;
    return dflt;
}

const char *inf__attr_string(const inf__node *node, const char *name, const char *dflt) {
    const inf__attr *a = inf__node_attr(node, name);
    return a && a->type == INF_ATTR_STRING ? a->s : dflt;
}

const int64_t *inf__attr_ints(const inf__node *node, const char *name, int *n) {
    const inf__attr *a = inf__node_attr(node, name);
    if (!a || a->type != INF_ATTR_INTS) {
        *n = 0;
        return NULL;
    }
    *n = a->n;
    return a->ints;
}

const float *inf__attr_floats(const inf__node *node, const char *name, int *n) {
    const inf__attr *a = inf__node_attr(node, name);
    if (!a || a->type != INF_ATTR_FLOATS) {
        *n = 0;
        return NULL;
    }
    *n = a->n;
    return a->floats;
}

const inf_tensor *inf__attr_tensor(const inf__node *node, const char *name) {
    const inf__attr *a = inf__node_attr(node, name);
    return a && a->type == INF_ATTR_TENSOR ? a->t : NULL;
}

struct inf__graph *inf__attr_graph(const inf__node *node, const char *name) {
    const inf__attr *a = inf__node_attr(node, name);
    return a && a->type == INF_ATTR_GRAPH ? a->g : NULL;
}

const inf_tensor *inf__node_constant_input(const inf__node *node, int i) {
    if (i < 0 || i >= node->n_inputs || node->inputs[i] < 0 || !node->graph) return NULL;
    const inf__value *v = &node->graph->values[node->inputs[i]];
    return v->role == INF_VALUE_INITIALIZER ? v->constant : NULL;
}

int inf__graph_find_value(const inf__graph *g, const char *name) {
    for (int i = 0; i < g->n_values; i++)
        if (!strcmp(g->values[i].name, name)) return i;
    return -1;
}

/* ---- finalize ---- */

static bool value_is_defined(const inf__value *v) {
    return v->producer >= 0 || v->role != INF_VALUE_INTERMEDIATE;
}

/* Kahn's algorithm over value producers; stable (keeps the model's order
 * where it is already valid). */
static inf_status sort_nodes(inf__graph *g, inf_error *err) {
    int n = g->n_nodes;
    if (n == 0) return INF_OK;
    int *pending = inf__calloc((size_t)n, sizeof(int)); /* unmet inputs per node */
    int *order = inf__calloc((size_t)n, sizeof(int));
    bool *done_value = inf__calloc((size_t)g->n_values, sizeof(bool));
    inf__node *sorted = inf__calloc((size_t)n, sizeof(inf__node));
    int *new_index = inf__calloc((size_t)n, sizeof(int));
    inf_status st = INF_OK;
    if (!pending || !order || !done_value || !sorted || !new_index) {
        st = inf_error_set(err, INF_ENOMEM, "out of memory sorting the graph");
        goto out;
    }
    for (int v = 0; v < g->n_values; v++) done_value[v] = g->values[v].producer < 0;
    int n_done = 0;
    bool progress = true;
    /* repeated passes keep the original order stable; graphs are usually
     * already sorted, making this a single pass */
    bool *placed = (bool *)pending;
    memset(placed, 0, (size_t)n * sizeof(int));
    while (n_done < n && progress) {
        progress = false;
        for (int i = 0; i < n; i++) {
            if (placed[i]) continue;
            const inf__node *node = &g->nodes[i];
            bool ready = true;
            for (int k = 0; k < node->n_inputs && ready; k++)
                if (node->inputs[k] >= 0 && !done_value[node->inputs[k]]) ready = false;
            for (int k = 0; k < node->n_implicit && ready; k++)
                if (!done_value[node->implicit[k]]) ready = false;
            if (!ready) continue;
            placed[i] = true;
            order[n_done++] = i;
            for (int k = 0; k < node->n_outputs; k++)
                if (node->outputs[k] >= 0) done_value[node->outputs[k]] = true;
            progress = true;
        }
    }
    if (n_done < n) {
        for (int i = 0; i < n; i++)
            if (!placed[i]) {
                st = inf_error_set(err, INF_EMODEL, "node '%s' (%s) is part of a cycle", g->nodes[i].name, g->nodes[i].op_type);
                break;
            }
        goto out;
    }
    for (int i = 0; i < n; i++) {
        sorted[i] = g->nodes[order[i]];
        new_index[order[i]] = i;
    }
    memcpy(g->nodes, sorted, (size_t)n * sizeof(inf__node));
    for (int v = 0; v < g->n_values; v++)
        if (g->values[v].producer >= 0) g->values[v].producer = new_index[g->values[v].producer];
out:
    inf__free(pending);
    inf__free(order);
    inf__free(done_value);
    inf__free(sorted);
    inf__free(new_index);
    return st;
}

inf_status inf__graph_finalize(inf__graph *g, inf_error *err) {
    for (int i = 0; i < g->n_nodes; i++) {
        const inf__node *node = &g->nodes[i];
        for (int k = 0; k < node->n_inputs; k++) {
            int v = node->inputs[k];
            if (v < 0) continue;
            if (!value_is_defined(&g->values[v]))
                return inf_error_set(err, INF_EMODEL, "node '%s' (%s) reads '%s', which no node, input or initializer defines",
                                  node->name, node->op_type, g->values[v].name);
            g->values[v].n_consumers++;
        }
        for (int k = 0; k < node->n_implicit; k++) {
            int v = node->implicit[k];
            if (!value_is_defined(&g->values[v]))
                return inf_error_set(err, INF_EMODEL, "a subgraph of node '%s' (%s) reads '%s', which is not defined",
                                  node->name, node->op_type, g->values[v].name);
            g->values[v].n_consumers++;
        }
    }
    for (int i = 0; i < g->n_outputs; i++) {
        inf__value *v = &g->values[g->outputs[i]];
        if (!value_is_defined(v))
            return inf_error_set(err, INF_EMODEL, "graph output '%s' is not computed by any node", v->name);
        v->n_consumers++;
    }
    return sort_nodes(g, err);
}

/* ---- the tensors a graph owns (initializers, attribute tensors) ---- */

void inf__node_free_tensors(inf__node *node) {
    for (int a = 0; node->attrs && a < node->n_attrs; a++) {
        inf__attr *attr = &node->attrs[a];
        if (attr->type == INF_ATTR_TENSOR) inf_tensor_free(attr->t);
        if (attr->type == INF_ATTR_GRAPH) inf__graph_free_tensors(attr->g);
        for (int k = 0; k < attr->n; k++) {
            if (attr->type == INF_ATTR_TENSORS && attr->tensors) inf_tensor_free(attr->tensors[k]);
            if (attr->type == INF_ATTR_GRAPHS && attr->graphs) inf__graph_free_tensors(attr->graphs[k]);
        }
        attr->t = NULL;
        attr->n = attr->type == INF_ATTR_TENSORS || attr->type == INF_ATTR_GRAPHS ? 0 : attr->n;
        if (attr->type == INF_ATTR_GRAPH) attr->g = NULL;
    }
}

void inf__graph_free_tensors(inf__graph *g) {
    if (!g) return;
    for (int i = 0; i < g->n_values; i++) inf_tensor_free(g->values[i].constant);
    for (int n = 0; g->nodes && n < g->n_nodes; n++) inf__node_free_tensors(&g->nodes[n]);
}
