/*
 * decode.c -- ModelProto -> inf_model (graph/graph.h).
 *
 * DESIGN: the protobuf message is unpacked with protobuf-c, converted into
 * the IR in the model's arena, then released: nothing after this file sees
 * protobuf.  The file is mapped, not copied; the message is unpacked with
 * 64-byte-aligned allocations so each large initializer adopts its raw_data
 * buffer as its tensor data (inf__onnx_tensor_take_proto): one copy of the
 * weights in memory, none made twice.  Each graph (and each subgraph of
 * If/Loop/Scan) gets a value table built through a name map; a name a node reads before any node writes
 * it becomes a placeholder that a later writer fills (ONNX does not require
 * nodes in order), or, in a subgraph, a reference to the enclosing scope.
 * inf__graph_finalize then sorts nodes and rejects what cannot run.
 * Every error names the model file and the node or value concerned.
 */
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#ifdef INF_WITH_XGBOOST
#include "import/import.h"
#endif
#include "onnx/onnx.h"
#include "bundle/bundle_int.h"
#include "ops/ops.h"

/* ---- name -> value index map (open addressing, grows) ---- */

typedef struct name_map {
    const char **keys;
    int *vals;
    int cap, count;
} name_map;

static uint64_t hash_str(const char *s) {
    uint64_t h = 1469598103934665603ull;
    while (*s) h = (h ^ (uint8_t)*s++) * 1099511628211ull;
    return h;
}

static int map_get(const name_map *m, const char *key) {
    if (!m->cap) return -1;
    for (uint64_t i = hash_str(key) & (uint64_t)(m->cap - 1);; i = (i + 1) & (uint64_t)(m->cap - 1)) {
        if (!m->keys[i]) return -1;
        if (!strcmp(m->keys[i], key)) return m->vals[i];
    }
}

static inf_status map_put(name_map *m, const char *key, int val) {
    if ((m->count + 1) * 2 > m->cap) {
        int ncap = m->cap ? m->cap * 2 : 64;
        const char **nk = inf__calloc((size_t)ncap, sizeof *nk);
        int *nv = inf__calloc((size_t)ncap, sizeof *nv);
        if (!nk || !nv) {
            inf__free(nk);
            inf__free(nv);
            return INF_ENOMEM;
        }
        for (int i = 0; i < m->cap; i++) {
            if (!m->keys[i]) continue;
            uint64_t j = hash_str(m->keys[i]) & (uint64_t)(ncap - 1);
            while (nk[j]) j = (j + 1) & (uint64_t)(ncap - 1);
            nk[j] = m->keys[i];
            nv[j] = m->vals[i];
        }
        inf__free(m->keys);
        inf__free(m->vals);
        m->keys = nk;
        m->vals = nv;
        m->cap = ncap;
    }
    uint64_t i = hash_str(key) & (uint64_t)(m->cap - 1);
    while (m->keys[i] && strcmp(m->keys[i], key)) i = (i + 1) & (uint64_t)(m->cap - 1);
    if (!m->keys[i]) m->count++;
    m->keys[i] = key;
    m->vals[i] = val;
    return INF_OK;
}

static void map_free(name_map *m) {
    inf__free(m->keys);
    inf__free(m->vals);
}

/* ---- the decoding context ---- */

typedef struct graph_builder {
    struct graph_builder *parent;
    inf__graph *g;
    name_map names;
    inf__value *values; /* heap array while building; moved to the arena at the end */
    int n_values, cap_values;
} graph_builder;

typedef struct decoder {
    inf_model *model;
    const char *base_dir;
    const char *path;
    inf_error *err;
    const Onnx__ModelProto *mp;
} decoder;

#define OOM(d) inf_error_set((d)->err, INF_ENOMEM, "%s: out of memory while loading", (d)->path)

static inf_status decode_graph(decoder *d, const Onnx__GraphProto *gp, graph_builder *parent, inf__graph **out);

static int opset_of(const decoder *d, const char *domain) {
    int want = inf__domain_from_string(domain);
    for (int i = 0; i < d->model->n_opsets; i++) {
        const char *dom = d->model->opsets[i].domain;
        if (want >= 0 ? inf__domain_from_string(dom) == want : !strcmp(dom, domain))
            return (int)d->model->opsets[i].version;
    }
    return 0;
}

static inf_status add_value(decoder *d, graph_builder *b, const char *name, int *out) {
    if (inf__array_reserve((void **)&b->values, &b->cap_values, b->n_values + 1, sizeof *b->values) != INF_OK)
        return OOM(d);
    inf__value *v = &b->values[b->n_values];
    memset(v, 0, sizeof *v);
    v->name = inf__arena_strdup(&d->model->arena, name);
    if (!v->name || map_put(&b->names, v->name, b->n_values) != INF_OK) return OOM(d);
    v->producer = -1;
    v->outer = -1;
    v->info.ndim = -1;
    *out = b->n_values++;
    return INF_OK;
}

/* A value read by a node: known here, from an enclosing graph, or not yet written. */
static inf_status resolve_input(decoder *d, graph_builder *b, const char *name, int *out) {
    int idx = map_get(&b->names, name);
    if (idx >= 0) {
        *out = idx;
        return INF_OK;
    }
    int outer = b->parent ? map_get(&b->parent->names, name) : -1;
    for (graph_builder *p = b->parent; p && outer < 0 && p->parent; p = p->parent)
        if (map_get(&p->parent->names, name) >= 0) {
            /* defined further out: thread it through the intermediate scope */
            inf_status st = resolve_input(d, p, name, &outer);
            if (st != INF_OK) return st;
            break;
        }
    inf_status st = add_value(d, b, name, out);
    if (st != INF_OK) return st;
    if (outer >= 0) {
        b->values[*out].role = INF_VALUE_OUTER;
        b->values[*out].outer = outer;
    }
    return INF_OK;
}

/* ---- types ---- */

static void decode_type(decoder *d, const Onnx__TypeProto *tp, inf_value_info *info) {
    info->ndim = -1;
    if (!tp) return;
    switch (tp->value_case) {
    case ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE: {
        const Onnx__TypeProto__Tensor *tt = tp->tensor_type;
        info->kind = INF_KIND_TENSOR;
        info->dtype = tt->has_elem_type && tt->elem_type > 0 && tt->elem_type < INF_DTYPE_COUNT ? (inf_dtype)tt->elem_type : INF_DTYPE_UNDEFINED;
        if (tt->shape && tt->shape->n_dim <= INF_MAX_DIMS) {
            info->ndim = (int)tt->shape->n_dim;
            for (size_t i = 0; i < tt->shape->n_dim; i++) {
                const Onnx__TensorShapeProto__Dimension *dim = tt->shape->dim[i];
                info->dims[i] = -1;
                if (dim->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE)
                    info->dims[i] = dim->dim_value;
                else if (dim->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM)
                    info->dim_names[i] = inf__arena_strdup(&d->model->arena, dim->dim_param);
            }
        }
        break;
    }
    case ONNX__TYPE_PROTO__VALUE_SEQUENCE_TYPE: {
        inf_value_info elem;
        memset(&elem, 0, sizeof elem);
        decode_type(d, tp->sequence_type->elem_type, &elem);
        info->kind = INF_KIND_SEQUENCE;
        info->dtype = elem.dtype;
        break;
    }
    case ONNX__TYPE_PROTO__VALUE_MAP_TYPE: {
        inf_value_info val;
        memset(&val, 0, sizeof val);
        decode_type(d, tp->map_type->value_type, &val);
        info->kind = INF_KIND_MAP;
        info->dtype = val.dtype;
        break;
    }
    case ONNX__TYPE_PROTO__VALUE_OPTIONAL_TYPE:
        decode_type(d, tp->optional_type->elem_type, info);
        info->is_optional = 1;
        break;
    default: break;
    }
}

/* The element type a declared tensor (also inside an optional or a
 * sequence) names when Infera does not implement it (float8, int4...); 0 otherwise. */
static int unimplemented_elem_type(const Onnx__TypeProto *tp) {
    for (int depth = 0; tp && depth < 8; depth++) {
        if (tp->value_case == ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE)
            return tp->tensor_type->has_elem_type && tp->tensor_type->elem_type >= INF_DTYPE_COUNT
                       ? tp->tensor_type->elem_type
                       : 0;
        if (tp->value_case == ONNX__TYPE_PROTO__VALUE_SEQUENCE_TYPE) tp = tp->sequence_type->elem_type;
        else if (tp->value_case == ONNX__TYPE_PROTO__VALUE_OPTIONAL_TYPE) tp = tp->optional_type->elem_type;
        else return 0;
    }
    return 0;
}

static inf_status set_value_info(decoder *d, inf__value *v, const Onnx__ValueInfoProto *vi) {
    const char *name = v->name;
    int newer = unimplemented_elem_type(vi->type);
    if (newer)
        return inf_error_set(d->err, INF_EUNSUPPORTED, "value '%s': element type %s (ONNX type %d) is not implemented",
                          name, inf__onnx_type_name(newer), newer);
    decode_type(d, vi->type, &v->info);
    v->info.name = name;
    v->has_info = vi->type != NULL;
    return INF_OK;
}

/* ---- attributes ---- */

static inf_status decode_attr(decoder *d, graph_builder *b, const inf__node *node, const Onnx__AttributeProto *ap,
                              inf__attr *a) {
    inf__arena *ar = &d->model->arena;
    char what[256];
    snprintf(what, sizeof what, "%s: node '%s' attribute '%s'", d->path, node->name, ap->name ? ap->name : "");
    a->name = inf__arena_strdup(ar, ap->name ? ap->name : "");
    if (!a->name) return OOM(d);
    if (ap->ref_attr_name && *ap->ref_attr_name)
        return inf_error_set(d->err, INF_EUNSUPPORTED, "%s refers to a function attribute", what);
    a->type = ap->has_type ? (inf__attr_type)ap->type : INF_ATTR_UNDEFINED;
    if (a->type == INF_ATTR_UNDEFINED) { /* IR < 3 models may omit the type: infer it */
        if (ap->has_f) a->type = INF_ATTR_FLOAT;
        else if (ap->has_i) a->type = INF_ATTR_INT;
        else if (ap->has_s) a->type = INF_ATTR_STRING;
        else if (ap->t) a->type = INF_ATTR_TENSOR;
        else if (ap->g) a->type = INF_ATTR_GRAPH;
        else if (ap->n_floats) a->type = INF_ATTR_FLOATS;
        else if (ap->n_ints) a->type = INF_ATTR_INTS;
        else if (ap->n_strings) a->type = INF_ATTR_STRINGS;
    }
    a->f = ap->f;
    a->i = ap->i;
    inf_status st;
    switch (a->type) {
    case INF_ATTR_STRING:
        a->s = inf__arena_strndup(ar, (const char *)ap->s.data, ap->s.len);
        a->s_len = ap->s.len;
        if (!a->s) return OOM(d);
        break;
    case INF_ATTR_TENSOR:
        if (!ap->t) return inf_error_set(d->err, INF_EMODEL, "%s has no tensor", what);
        if ((st = inf__onnx_tensor_from_proto(ap->t, d->base_dir, what, &a->t, d->err)) != INF_OK) return st;
        /* owned by the model: inf_model_free walks the attributes */
        break;
    case INF_ATTR_GRAPH:
        if (!ap->g) return inf_error_set(d->err, INF_EMODEL, "%s has no graph", what);
        if ((st = decode_graph(d, ap->g, b, &a->g)) != INF_OK) return st;
        break;
    case INF_ATTR_FLOATS:
        a->n = (int)ap->n_floats;
        a->floats = inf__arena_alloc(ar, ap->n_floats * sizeof(float) + 1);
        if (!a->floats) return OOM(d);
        if (ap->n_floats) memcpy(a->floats, ap->floats, ap->n_floats * sizeof(float));
        break;
    case INF_ATTR_INTS:
        a->n = (int)ap->n_ints;
        a->ints = inf__arena_alloc(ar, ap->n_ints * sizeof(int64_t) + 1);
        if (!a->ints) return OOM(d);
        if (ap->n_ints) memcpy(a->ints, ap->ints, ap->n_ints * sizeof(int64_t));
        break;
    case INF_ATTR_STRINGS:
        a->n = (int)ap->n_strings;
        a->strings = inf__arena_alloc(ar, (ap->n_strings + 1) * sizeof(char *));
        if (!a->strings) return OOM(d);
        for (size_t i = 0; i < ap->n_strings; i++)
            if (!(a->strings[i] = inf__arena_strndup(ar, (const char *)ap->strings[i].data, ap->strings[i].len))) return OOM(d);
        break;
    case INF_ATTR_TENSORS:
        a->n = (int)ap->n_tensors;
        a->tensors = inf__arena_alloc(ar, (ap->n_tensors + 1) * sizeof(inf_tensor *));
        if (!a->tensors) return OOM(d);
        for (size_t i = 0; i < ap->n_tensors; i++)
            if ((st = inf__onnx_tensor_from_proto(ap->tensors[i], d->base_dir, what, &a->tensors[i], d->err)) != INF_OK) return st;
        break;
    case INF_ATTR_GRAPHS:
        a->n = (int)ap->n_graphs;
        a->graphs = inf__arena_alloc(ar, (ap->n_graphs + 1) * sizeof(inf__graph *));
        if (!a->graphs) return OOM(d);
        for (size_t i = 0; i < ap->n_graphs; i++)
            if ((st = decode_graph(d, ap->graphs[i], b, &a->graphs[i])) != INF_OK) return st;
        break;
    case INF_ATTR_TYPE_PROTO:
    case INF_ATTR_TYPE_PROTOS: {
        size_t n = a->type == INF_ATTR_TYPE_PROTO ? 1 : ap->n_type_protos;
        a->n = (int)n;
        a->type_protos = inf__arena_alloc(ar, (n + 1) * sizeof(inf_value_info));
        if (!a->type_protos) return OOM(d);
        for (size_t i = 0; i < n; i++)
            decode_type(d, a->type == INF_ATTR_TYPE_PROTO ? ap->tp : ap->type_protos[i], &a->type_protos[i]);
        break;
    }
    case INF_ATTR_SPARSE_TENSOR:
    case INF_ATTR_SPARSE_TENSORS:
        return inf_error_set(d->err, INF_EUNSUPPORTED, "%s: sparse tensor attributes are not supported", what);
    default: break;
    }
    return INF_OK;
}

/* ---- nodes ---- */

static void add_implicit(inf__node *node, int v) {
    for (int k = 0; k < node->n_implicit; k++)
        if (node->implicit[k] == v) return;
    node->implicit[node->n_implicit++] = v;
}

/* The enclosing-scope values a node's subgraphs read become implicit inputs
 * of the node: they must be computed before it and live until it is done. */
static inf_status collect_implicit_inputs(decoder *d, inf__node *node) {
    int total = 0;
    for (int a = 0; a < node->n_attrs; a++) {
        const inf__attr *attr = &node->attrs[a];
        if (attr->type == INF_ATTR_GRAPH && attr->g) total += attr->g->n_values;
        for (int k = 0; attr->type == INF_ATTR_GRAPHS && k < attr->n; k++) total += attr->graphs[k]->n_values;
    }
    if (!total) return INF_OK;
    node->implicit = inf__arena_alloc(&d->model->arena, (size_t)total * sizeof(int));
    if (!node->implicit) return OOM(d);
    for (int a = 0; a < node->n_attrs; a++) {
        const inf__attr *attr = &node->attrs[a];
        int n_graphs = attr->type == INF_ATTR_GRAPH ? 1 : attr->type == INF_ATTR_GRAPHS ? attr->n : 0;
        for (int k = 0; k < n_graphs; k++) {
            const inf__graph *sub = attr->type == INF_ATTR_GRAPH ? attr->g : attr->graphs[k];
            for (int v = 0; sub && v < sub->n_values; v++)
                if (sub->values[v].role == INF_VALUE_OUTER) add_implicit(node, sub->values[v].outer);
        }
    }
    return INF_OK;
}

static inf_status decode_node(decoder *d, graph_builder *b, const Onnx__NodeProto *np, int index, inf__node *node) {
    inf__arena *ar = &d->model->arena;
    node->op_type = inf__arena_strdup(ar, np->op_type ? np->op_type : "");
    node->domain = inf__arena_strdup(ar, np->domain ? np->domain : "");
    char fallback[160];
    snprintf(fallback, sizeof fallback, "%s_%d", np->op_type ? np->op_type : "node", index);
    node->name = inf__arena_strdup(ar, np->name && *np->name ? np->name : fallback);
    if (!node->op_type || !node->domain || !node->name) return OOM(d);
    if (!*node->op_type) return inf_error_set(d->err, INF_EMODEL, "%s: node '%s' has no op_type", d->path, node->name);
    node->opset = opset_of(d, node->domain);
    if (node->opset == 0)
        return inf_error_set(d->err, INF_EMODEL, "%s: node '%s' (%s) uses domain '%s', which the model does not import",
                          d->path, node->name, node->op_type, node->domain);
    node->n_inputs = (int)np->n_input;
    node->n_outputs = (int)np->n_output;
    node->inputs = inf__arena_alloc(ar, (np->n_input + 1) * sizeof(int));
    node->outputs = inf__arena_alloc(ar, (np->n_output + 1) * sizeof(int));
    node->attrs = inf__arena_alloc(ar, (np->n_attribute + 1) * sizeof(inf__attr));
    if (!node->inputs || !node->outputs || !node->attrs) return OOM(d);
    inf_status st;
    for (size_t i = 0; i < np->n_input; i++) {
        node->inputs[i] = -1;
        if (np->input[i] && *np->input[i] && (st = resolve_input(d, b, np->input[i], &node->inputs[i])) != INF_OK)
            return st;
    }
    /* attributes (subgraphs) are decoded before outputs are declared, so that a
     * subgraph cannot see the values its own node writes */
    node->n_attrs = (int)np->n_attribute;
    for (size_t i = 0; i < np->n_attribute; i++)
        if ((st = decode_attr(d, b, node, np->attribute[i], &node->attrs[i])) != INF_OK) return st;
    if ((st = collect_implicit_inputs(d, node)) != INF_OK) return st;
    for (size_t i = 0; i < np->n_output; i++) {
        node->outputs[i] = -1;
        const char *name = np->output[i];
        if (!name || !*name) continue;
        int idx = map_get(&b->names, name);
        if (idx >= 0 && (b->values[idx].producer >= 0 || b->values[idx].role != INF_VALUE_INTERMEDIATE))
            return inf_error_set(d->err, INF_EMODEL, "%s: node '%s' writes '%s', which is already %s", d->path, node->name, name,
                              b->values[idx].producer >= 0 ? "written by another node" : "a graph input or initializer");
        if (idx < 0 && (st = add_value(d, b, name, &idx)) != INF_OK) return st;
        b->values[idx].producer = index;
        node->outputs[i] = idx;
    }
    return INF_OK;
}

/* ---- graphs ---- */

static inf_status decode_graph_body(decoder *d, const Onnx__GraphProto *gp, graph_builder *b) {
    inf__graph *g = b->g;
    inf_status st;
    int idx;
    for (size_t i = 0; i < gp->n_initializer; i++) {
        Onnx__TensorProto *tp = gp->initializer[i];
        const char *name = tp->name ? tp->name : "";
        if (map_get(&b->names, name) >= 0)
            return inf_error_set(d->err, INF_EMODEL, "%s: initializer '%s' is defined twice", d->path, name);
        if ((st = add_value(d, b, name, &idx)) != INF_OK) return st;
        char what[300];
        snprintf(what, sizeof what, "%s: initializer '%s'", d->path, name);
        inf__value *v = &b->values[idx];
        v->role = INF_VALUE_INITIALIZER;
        if ((st = inf__onnx_tensor_take_proto(tp, d->base_dir, what, &v->constant, d->err)) != INF_OK) return st;
    }
    if (gp->n_sparse_initializer)
        return inf_error_set(d->err, INF_EUNSUPPORTED, "%s: sparse initializers are not supported", d->path);
    g->inputs = inf__arena_alloc(&d->model->arena, (gp->n_input + 1) * sizeof(int));
    if (!g->inputs) return OOM(d);
    for (size_t i = 0; i < gp->n_input; i++) {
        const char *name = gp->input[i]->name ? gp->input[i]->name : "";
        idx = map_get(&b->names, name);
        if (idx < 0) {
            if ((st = add_value(d, b, name, &idx)) != INF_OK) return st;
            b->values[idx].role = INF_VALUE_INPUT;
            g->inputs[g->n_inputs++] = idx;
        } else if (b->values[idx].role != INF_VALUE_INITIALIZER) {
            return inf_error_set(d->err, INF_EMODEL, "%s: graph input '%s' is declared twice", d->path, name);
        }
        if ((st = set_value_info(d, &b->values[idx], gp->input[i])) != INF_OK) return st;
    }
    g->n_nodes = (int)gp->n_node;
    g->nodes = inf__arena_alloc(&d->model->arena, (gp->n_node + 1) * sizeof(inf__node));
    if (!g->nodes) return OOM(d);
    for (size_t i = 0; i < gp->n_node; i++) {
        g->nodes[i].graph = g;
        if ((st = decode_node(d, b, gp->node[i], (int)i, &g->nodes[i])) != INF_OK) return st;
    }
    g->outputs = inf__arena_alloc(&d->model->arena, (gp->n_output + 1) * sizeof(int));
    if (!g->outputs) return OOM(d);
    for (size_t i = 0; i < gp->n_output; i++) {
        const char *name = gp->output[i]->name ? gp->output[i]->name : "";
        if ((st = resolve_input(d, b, name, &idx)) != INF_OK) return st;
        if ((st = set_value_info(d, &b->values[idx], gp->output[i])) != INF_OK) return st;
        g->outputs[g->n_outputs++] = idx;
    }
    for (size_t i = 0; i < gp->n_value_info; i++) {
        idx = map_get(&b->names, gp->value_info[i]->name ? gp->value_info[i]->name : "");
        if (idx >= 0 && !b->values[idx].has_info && (st = set_value_info(d, &b->values[idx], gp->value_info[i])) != INF_OK)
            return st;
    }
    return INF_OK;
}

static inf_status decode_graph(decoder *d, const Onnx__GraphProto *gp, graph_builder *parent, inf__graph **out) {
    graph_builder b;
    memset(&b, 0, sizeof b);
    b.parent = parent;
    b.g = inf__arena_alloc(&d->model->arena, sizeof(inf__graph));
    if (!b.g) return OOM(d);
    b.g->parent = parent ? parent->g : NULL;
    b.g->model = d->model;
    b.g->name = inf__arena_strdup(&d->model->arena, gp->name ? gp->name : "");
    inf_status st = decode_graph_body(d, gp, &b);
    /* the value table moves to the arena, also on failure, so that constants
     * decoded so far are freed with the model */
    b.g->values = inf__arena_alloc(&d->model->arena, ((size_t)b.n_values + 1) * sizeof(inf__value));
    if (b.g->values) {
        if (b.n_values) memcpy(b.g->values, b.values, (size_t)b.n_values * sizeof(inf__value));
        b.g->n_values = b.n_values;
    } else {
        for (int i = 0; i < b.n_values; i++) inf_tensor_free(b.values[i].constant);
        if (st == INF_OK) st = OOM(d);
    }
    for (int i = 0; i < b.g->n_values; i++) b.g->values[i].info.name = b.g->values[i].name;
    inf__free(b.values);
    map_free(&b.names);
    *out = b.g;
    if (st == INF_OK) {
        st = inf__graph_finalize(b.g, d->err);
        if (st != INF_OK) inf__error_prefix(d->err, "%s", d->path);
    }
    return st;
}

/* ---- model ---- */

static inf_status decode_model_header(decoder *d) {
    const Onnx__ModelProto *mp = d->mp;
    inf_model *m = d->model;
    inf__arena *ar = &m->arena;
    m->ir_version = mp->has_ir_version ? mp->ir_version : 0;
    m->model_version = mp->has_model_version ? mp->model_version : 0;
    m->producer_name = inf__arena_strdup(ar, mp->producer_name);
    m->producer_version = inf__arena_strdup(ar, mp->producer_version);
    m->doc_string = inf__arena_strdup(ar, mp->doc_string);
    m->opsets = inf__arena_alloc(ar, (mp->n_opset_import + 1) * sizeof(inf_opset));
    m->metadata_keys = inf__arena_alloc(ar, (mp->n_metadata_props + 1) * sizeof(char *));
    m->metadata_values = inf__arena_alloc(ar, (mp->n_metadata_props + 1) * sizeof(char *));
    if (!m->producer_name || !m->producer_version || !m->doc_string || !m->opsets || !m->metadata_keys || !m->metadata_values)
        return OOM(d);
    for (size_t i = 0; i < mp->n_opset_import; i++) {
        m->opsets[i].domain = inf__arena_strdup(ar, mp->opset_import[i]->domain);
        m->opsets[i].version = mp->opset_import[i]->version;
        if (!m->opsets[i].domain) return OOM(d);
    }
    m->n_opsets = (int)mp->n_opset_import;
    if (m->n_opsets == 0 && m->ir_version < 3) { /* very old models: ai.onnx opset 1 */
        m->opsets[0].domain = "";
        m->opsets[0].version = 1;
        m->n_opsets = 1;
    }
    for (size_t i = 0; i < mp->n_metadata_props; i++) {
        m->metadata_keys[i] = inf__arena_strdup(ar, mp->metadata_props[i]->key);
        m->metadata_values[i] = inf__arena_strdup(ar, mp->metadata_props[i]->value);
        if (!m->metadata_keys[i] || !m->metadata_values[i]) return OOM(d);
    }
    m->n_metadata = (int)mp->n_metadata_props;
    if (!mp->graph) return inf_error_set(d->err, INF_EMODEL, "%s: the model has no graph", d->path);
    if (mp->n_functions)
        inf__log(INF_LOG_DEBUG, "%s: %zu model-local functions are not expanded", d->path, mp->n_functions);
    return INF_OK;
}

static inf_status count_op_types(decoder *d) {
    inf_model *m = d->model;
    const inf__graph *g = m->graph;
    m->n_nodes_written = g->n_nodes;
    m->op_types = inf__arena_alloc(&m->arena, ((size_t)g->n_nodes + 1) * sizeof *m->op_types);
    if (!m->op_types) return OOM(d);
    for (int i = 0; i < g->n_nodes; i++) {
        int k = 0;
        while (k < m->n_op_types && (strcmp(m->op_types[k].op_type, g->nodes[i].op_type) ||
                                     strcmp(m->op_types[k].domain, g->nodes[i].domain)))
            k++;
        if (k == m->n_op_types) {
            m->op_types[k].op_type = g->nodes[i].op_type;
            m->op_types[k].domain = g->nodes[i].domain;
            m->n_op_types++;
        }
        m->op_types[k].count++;
    }
    return INF_OK;
}

static inf_status collect_io_infos(decoder *d) {
    inf_model *m = d->model;
    inf__graph *g = m->graph;
    m->input_infos = inf__arena_alloc(&m->arena, ((size_t)g->n_inputs + 1) * sizeof(inf_value_info));
    m->output_infos = inf__arena_alloc(&m->arena, ((size_t)g->n_outputs + 1) * sizeof(inf_value_info));
    if (!m->input_infos || !m->output_infos) return OOM(d);
    for (int i = 0; i < g->n_inputs; i++) m->input_infos[i] = g->values[g->inputs[i]].info;
    for (int i = 0; i < g->n_outputs; i++) m->output_infos[i] = g->values[g->outputs[i]].info;
    return INF_OK;
}

inf_status inf_model_load_buffer(const void *data, size_t size, const char *base_dir,
                                 const inf_model_options *opts, inf_model **out, inf_error *err) {
    (void)opts;
    *out = NULL;
#ifdef INF_WITH_XGBOOST
    /* Not ONNX: an XGBoost JSON model becomes the same IR (import/xgboost.c). */
    if (inf__import_is_xgboost_json(data, size)) return inf__import_xgboost_json(data, size, out, err);
#endif
    if (inf_bundle_is_bundle(data, size)) return inf__bundle_load_copy(data, size, "<memory>", out, err);
    inf_model *m = inf__calloc(1, sizeof *m);
    if (!m) return inf_error_set(err, INF_ENOMEM, "out of memory loading a model");
    inf__arena_init(&m->arena, 1 << 16);
    m->path = "<memory>";
    m->file_bytes = size;
    decoder d = {m, base_dir, m->path, err, NULL};
    inf_status st = INF_OK;
    inf_alloc_stats before, after;
    inf_alloc_get_stats(&before);
    Onnx__ModelProto *mp = NULL;
    /* protobuf-c recurses without a limit: bound the nesting first */
    if ((st = inf__onnx_wire_check_model(data, size, d.path, err)) != INF_OK) goto done;
    /* aligned: initializers adopt their raw_data buffers (inf__onnx_tensor_take_proto) */
    mp = onnx__model_proto__unpack(&inf__protobuf_aligned_allocator, size, data);
    if (!mp) {
        inf_alloc_get_stats(&after);
        if (after.n_failed != before.n_failed) /* protobuf-c says NULL for both */
            st = inf_error_set(err, INF_ENOMEM, "%s: out of memory decoding the model (%zu bytes)", d.path, size);
        else
            st = inf_error_set(err, INF_EFORMAT, "%s: not a valid ONNX model (protobuf decoding failed on %zu bytes)", d.path, size);
        goto done;
    }
    d.mp = mp;
    if ((st = decode_model_header(&d)) != INF_OK) goto done;
    if ((st = decode_graph(&d, mp->graph, NULL, &m->graph)) != INF_OK) goto done;
    if ((st = inf__graph_bind_ops(m, m->graph, err)) != INF_OK) {
        inf__error_prefix(err, "%s", d.path);
        goto done;
    }
    if ((st = count_op_types(&d)) != INF_OK) goto done; /* `info` describes the model as written */
    const char *qdq_env = getenv("INFERA_QDQ");
    m->qdq_exact = (opts && opts->qdq_exact) || (qdq_env && !strcmp(qdq_env, "exact"));
    if (!(opts && opts->no_optimize) && (st = inf__graph_optimize(m, m->graph, err)) != INF_OK) goto done;
    st = collect_io_infos(&d);
done:
    if (mp) onnx__model_proto__free_unpacked(mp, &inf__protobuf_aligned_allocator);
    if (st != INF_OK) {
        inf_model_free(m);
        return st;
    }
    *out = m;
    return INF_OK;
}

/* Maps a model file read-only (the page cache, no copy: the decoder reads
 * it once).  Only a regular file within the size limit is opened, and the
 * open never blocks (core/file.c: a FIFO or /dev/zero is refused).  *mapped
 * is 0 when the file had to be read into memory instead (empty, or mmap
 * failed); release with unmap_model. */
static inf_status map_model(const char *path, uint8_t **data, size_t *size, int *mapped, inf_error *err) {
    int fd;
    uint64_t n;
    *mapped = 0;
    inf_status st = inf_file_open(path, "model", INF_FILE_MAX_MODEL_BYTES, &fd, &n, err);
    if (st != INF_OK) return st;
    void *p = n > 0 && n <= SIZE_MAX ? mmap(NULL, (size_t)n, PROT_READ, MAP_PRIVATE, fd, 0) : MAP_FAILED;
    close(fd);
    if (p != MAP_FAILED) {
        *data = p;
        *size = (size_t)n;
        *mapped = 1;
        return INF_OK;
    }
    void *buf;
    st = inf_file_read(path, "model", INF_FILE_MAX_MODEL_BYTES, &buf, size, err);
    *data = buf;
    return st;
}

static void unmap_model(uint8_t *data, size_t size, int mapped) {
    if (mapped) munmap(data, size);
    else inf_file_free(data);
}

inf_status inf_model_load(const char *path, const inf_model_options *opts, inf_model **out, inf_error *err) {
    *out = NULL;
    uint8_t *data = NULL;
    size_t size = 0;
    int mapped;
    inf_status st = map_model(path, &data, &size, &mapped, err);
    if (st != INF_OK) return st;
    if (inf_bundle_is_bundle(data, size)) { /* a compiled bundle (bundle/load.c): the mapping is kept */
        if (!mapped) {
            unmap_model(data, size, mapped);
            return inf_bundle_load(path, out, err);
        }
        st = inf__bundle_load_mapped(data, size, path, out, err);
        if (st != INF_OK) unmap_model(data, size, mapped);
        return st;
    }
    char *dir_copy = inf__strdup(path);
    if (!dir_copy) {
        unmap_model(data, size, mapped);
        return inf_error_set(err, INF_ENOMEM, "out of memory loading '%s'", path);
    }
    const char *base_dir = dirname(dir_copy);
    st = inf_model_load_buffer(data, size, base_dir, opts, out, err);
    unmap_model(data, size, mapped);
    inf__free(dir_copy);
    if (st != INF_OK) {
        /* the buffer loader names the model "<memory>": name the file instead */
        if (err && !strncmp(err->message, "<memory>", 8)) {
            char rest[INF_ERROR_MESSAGE_MAX];
            snprintf(rest, sizeof rest, "%s", err->message + 8);
            snprintf(err->message, sizeof err->message, "%s%s", path, rest);
        }
        return st;
    }
    (*out)->path = inf__arena_strdup(&(*out)->arena, path);
    if (!(*out)->path) (*out)->path = "<model>";
    return INF_OK;
}


