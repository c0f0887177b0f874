/*
 * external.c -- which external-data files an ONNX model refers to.
 *
 * Large models keep their weights beside the .onnx file (TensorProto
 * data_location = EXTERNAL, external_data {location, offset, length}).  The
 * registry stores those files with the model so that a registered version is
 * complete; it asks this file for their names.  Every tensor is visited:
 * graph initializers, sparse initializers, attribute tensors and subgraphs
 * (If/Loop/Scan bodies) and local functions.  Locations are validated the
 * way the loader validates them (relative, never leaving the model's folder).
 */
#include <string.h>

#include "onnx/onnx.h"
#include "import/import.h"

typedef struct file_list {
    char **names;
    int n, cap;
    inf_error *err;
} file_list;

static inf_status add_location(file_list *l, const char *location) {
    if (!location || !*location)
        return inf_error_set(l->err, INF_EMODEL, "external data without a location");
    if (location[0] == '/' || strstr(location, ".."))
        return inf_error_set(l->err, INF_EMODEL, "external data path '%s' leaves the model's folder", location);
    for (int i = 0; i < l->n; i++)
        if (!strcmp(l->names[i], location)) return INF_OK;
    if (l->n == l->cap) {
        int cap = l->cap ? 2 * l->cap : 8;
        char **grown = inf__realloc(l->names, (size_t)cap * sizeof *grown);
        if (!grown) return inf_error_set(l->err, INF_ENOMEM, "out of memory listing external data files");
        l->names = grown;
        l->cap = cap;
    }
    if (!(l->names[l->n] = inf__strdup(location)))
        return inf_error_set(l->err, INF_ENOMEM, "out of memory listing external data files");
    l->n++;
    return INF_OK;
}

static inf_status visit_tensor(file_list *l, const Onnx__TensorProto *tp) {
    if (!tp || !tp->has_data_location || tp->data_location != ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL)
        return INF_OK;
    const char *location = NULL;
    for (size_t i = 0; i < tp->n_external_data; i++) {
        const Onnx__StringStringEntryProto *kv = tp->external_data[i];
        if (kv->key && kv->value && !strcmp(kv->key, "location")) location = kv->value;
    }
    return add_location(l, location);
}

static inf_status visit_sparse(file_list *l, const Onnx__SparseTensorProto *sp) {
    if (!sp) return INF_OK;
    inf_status st = visit_tensor(l, sp->values);
    return st ? st : visit_tensor(l, sp->indices);
}

static inf_status visit_graph(file_list *l, const Onnx__GraphProto *g, int depth);

static inf_status visit_nodes(file_list *l, size_t n_node, Onnx__NodeProto *const *nodes, int depth) {
    inf_status st = INF_OK;
    for (size_t i = 0; i < n_node && !st; i++) {
        for (size_t j = 0; j < nodes[i]->n_attribute && !st; j++) {
            const Onnx__AttributeProto *a = nodes[i]->attribute[j];
            if ((st = visit_tensor(l, a->t)) || (st = visit_sparse(l, a->sparse_tensor)) ||
                (st = visit_graph(l, a->g, depth + 1)))
                break;
            for (size_t k = 0; k < a->n_tensors && !st; k++) st = visit_tensor(l, a->tensors[k]);
            for (size_t k = 0; k < a->n_graphs && !st; k++) st = visit_graph(l, a->graphs[k], depth + 1);
        }
    }
    return st;
}

static inf_status visit_graph(file_list *l, const Onnx__GraphProto *g, int depth) {
    if (!g) return INF_OK;
    if (depth > INF_ONNX_MAX_SUBGRAPH_DEPTH)
        return inf_error_set(l->err, INF_EMODEL, "subgraphs nested more than %d levels deep", INF_ONNX_MAX_SUBGRAPH_DEPTH);
    inf_status st = INF_OK;
    for (size_t i = 0; i < g->n_initializer && !st; i++) st = visit_tensor(l, g->initializer[i]);
    for (size_t i = 0; i < g->n_sparse_initializer && !st; i++) st = visit_sparse(l, g->sparse_initializer[i]);
    return st ? st : visit_nodes(l, g->n_node, g->node, depth);
}

void inf_model_external_files_free(char **files, int n_files) {
    for (int i = 0; i < n_files; i++) inf__free(files[i]);
    inf__free(files);
}

inf_status inf_model_external_files(const void *data, size_t size, char ***files, int *n_files, inf_error *err) {
    *files = NULL;
    *n_files = 0;
#ifdef INF_WITH_XGBOOST
    if (inf__import_is_xgboost_json(data, size)) return INF_OK; /* self-contained */
#endif
    inf_status st = inf__onnx_wire_check_model(data, size, "model", err); /* protobuf-c recurses */
    if (st) return st;
    Onnx__ModelProto *mp = onnx__model_proto__unpack(&inf__protobuf_allocator, size, data);
    if (!mp)
        return inf_error_set(err, INF_EFORMAT, "not a valid ONNX model (protobuf decoding failed on %zu bytes)", size);
    file_list l = {NULL, 0, 0, err};
    st = visit_graph(&l, mp->graph, 0);
    for (size_t i = 0; i < mp->n_functions && !st; i++)
        st = visit_nodes(&l, mp->functions[i]->n_node, mp->functions[i]->node, 1);
    onnx__model_proto__free_unpacked(mp, &inf__protobuf_allocator);
    if (st) {
        inf_model_external_files_free(l.names, l.n);
        return st;
    }
    *files = l.names;
    *n_files = l.n;
    return INF_OK;
}
