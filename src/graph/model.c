/*
 * model.c -- the public accessors of a loaded model (include/infera/model.h).
 * Loading itself is onnx/decode.c (ONNX) or bundle/load.c (bundles); a model
 * is immutable after load.  Freeing lives here, not with a loader, so that
 * the edge runtime (no ONNX decoder) has it too.
 */
#include <string.h>

#include "graph/graph.h"

int inf_model_n_inputs(const inf_model *m) { return m->graph->n_inputs; }
int inf_model_n_outputs(const inf_model *m) { return m->graph->n_outputs; }

const inf_value_info *inf_model_input(const inf_model *m, int i) {
    return i >= 0 && i < m->graph->n_inputs ? &m->input_infos[i] : NULL;
}

const inf_value_info *inf_model_output(const inf_model *m, int i) {
    return i >= 0 && i < m->graph->n_outputs ? &m->output_infos[i] : NULL;
}

int inf_model_find_input(const inf_model *m, const char *name) {
    for (int i = 0; i < m->graph->n_inputs; i++)
        if (!strcmp(m->input_infos[i].name, name)) return i;
    return -1;
}

int inf_model_find_output(const inf_model *m, const char *name) {
    for (int i = 0; i < m->graph->n_outputs; i++)
        if (!strcmp(m->output_infos[i].name, name)) return i;
    return -1;
}

static void add_parameters(const inf__graph *g, int64_t *n, uint64_t *bytes) {
    for (int i = 0; i < g->n_values; i++) {
        const inf_tensor *c = g->values[i].constant;
        if (!c) continue;
        *n += inf_tensor_numel(c);
        *bytes += inf_tensor_nbytes(c);
    }
}

void inf_model_get_summary(const inf_model *m, inf_model_summary *out) {
    memset(out, 0, sizeof *out);
    out->path = m->path;
    out->graph_name = m->graph->name;
    out->producer_name = m->producer_name;
    out->producer_version = m->producer_version;
    out->doc_string = m->doc_string;
    out->ir_version = m->ir_version;
    out->model_version = m->model_version;
    out->n_opsets = m->n_opsets;
    out->opsets = m->opsets;
    out->n_nodes = m->n_nodes_written;
    out->n_nodes_optimized = m->graph->n_nodes;
    out->file_bytes = m->file_bytes;
    add_parameters(m->graph, &out->n_parameters, &out->parameter_bytes);
}

int inf_model_n_op_types(const inf_model *m) { return m->n_op_types; }

void inf_model_op_type(const inf_model *m, int i, const char **domain, const char **op_type, int *count) {
    *domain = m->op_types[i].domain;
    *op_type = m->op_types[i].op_type;
    *count = m->op_types[i].count;
}

void inf_model_optimized_node(const inf_model *m, int i, const char **op_type, const char **activation) {
    static const char *const names[] = {[INF_EPILOGUE_RELU] = "Relu",
                                        [INF_EPILOGUE_LEAKY_RELU] = "LeakyRelu",
                                        [INF_EPILOGUE_CLIP] = "Clip",
                                        [INF_EPILOGUE_SILU] = "Silu"};
    const inf__node *n = i >= 0 && i < m->graph->n_nodes ? &m->graph->nodes[i] : NULL;
    *op_type = n ? n->op_type : NULL;
    *activation = n && n->epilogue.kind != INF_EPILOGUE_NONE ? names[n->epilogue.kind] : NULL;
}

int inf_model_n_metadata(const inf_model *m) { return m->n_metadata; }

void inf_model_metadata(const inf_model *m, int i, const char **key, const char **value) {
    *key = m->metadata_keys[i];
    *value = m->metadata_values[i];
}

void inf_model_free(inf_model *m) {
    if (!m) return;
    inf__graph_free_tensors(m->graph); /* initializers and attribute tensors */
    if (m->on_free) m->on_free(m);     /* a bundle's image, after the views into it are gone */
    inf__arena_deinit(&m->arena);
    inf__free(m);
}
