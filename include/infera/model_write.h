/*
 * model_write.h -- an ONNX ModelProto opened for editing, and written back.
 *
 * The model-rewriting tools (`infera quantize`, `infera prune`, `infera distill`; src/tools/)
 * change a model's graph and weights and write a standard ONNX file.  Only
 * src/onnx sees protobuf, so this is the small, generic interface they use:
 * open a file (or start an empty model), read and replace initializers,
 * rewire, add or remove nodes, declare graph inputs and outputs, save.
 * Nothing here checks that the result is a valid model: load it back with
 * inf_model_load_buffer (inf_model_edit_serialize) to check it.
 *
 * Node indices are positions in the main graph's node list; removing a node
 * shifts the ones after it.  Strings passed in are copied.
 */
#ifndef INFERA_MODEL_WRITE_H
#define INFERA_MODEL_WRITE_H

#include <stdint.h>

#include "infera/infera.h"
#include "infera/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct inf_model_edit inf_model_edit;

/* Opens an .onnx file for editing.  INF_EIO/INF_ENOENT for the file,
 * INF_EFORMAT when it is not a ModelProto with a graph.  Initializers stored
 * as external data (a file beside the model, as torch.onnx's dynamo exporter
 * writes) are read in, with the loader's checks (inside the model's folder,
 * lengths), so the model is saved as one self-contained file. */
INF_API inf_status inf_model_edit_open(const char *path, inf_model_edit **out, inf_error *err);
/* The same from memory (what names it in errors); external data is refused
 * (INF_EUNSUPPORTED: no folder to read it from). */
INF_API inf_status inf_model_edit_open_buffer(const void *data, size_t size, const char *what, inf_model_edit **out,
                                              inf_error *err);
/* A deep copy. */
INF_API inf_status inf_model_edit_clone(const inf_model_edit *m, inf_model_edit **out, inf_error *err);
/* Drops the graph's value_info (shape hints of intermediate values), which
 * go stale when a rewrite changes the width of a layer. */
INF_API void inf_model_edit_clear_value_info(inf_model_edit *m);
/* An empty model (ir_version 8) importing ai.onnx at `opset`, producer
 * "infera", graph called graph_name. */
INF_API inf_status inf_model_edit_new(int64_t opset, const char *graph_name, inf_model_edit **out,
                                      inf_error *err);
INF_API void inf_model_edit_free(inf_model_edit *m);

/* Serialises to a file / to memory (*data owned: free with inf_model_edit_buffer_free). */
INF_API inf_status inf_model_edit_save(const inf_model_edit *m, const char *path, inf_error *err);
INF_API inf_status inf_model_edit_serialize(const inf_model_edit *m, void **data, size_t *size, inf_error *err);
INF_API void inf_model_edit_buffer_free(void *data);

/* Adds a metadata_props entry (key, value). */
INF_API inf_status inf_model_edit_add_metadata(inf_model_edit *m, const char *key, const char *value, inf_error *err);
/* Sets metadata key to value: replaces the entry with that key, else adds one. */
INF_API inf_status inf_model_edit_set_metadata(inf_model_edit *m, const char *key, const char *value, inf_error *err);
/* The opset version the model imports for domain ("" or "ai.onnx": the default domain); 0 when none. */
INF_API int64_t inf_model_edit_opset(const inf_model_edit *m, const char *domain);
/* Bytes of initializer data (raw or typed fields), the weights' size in the file. */
INF_API size_t inf_model_edit_weight_bytes(const inf_model_edit *m);

/* ---- Nodes ---- */
INF_API int inf_model_edit_n_nodes(const inf_model_edit *m);
INF_API const char *inf_model_edit_node_op(const inf_model_edit *m, int node);
INF_API const char *inf_model_edit_node_domain(const inf_model_edit *m, int node); /* "" = ai.onnx */
INF_API const char *inf_model_edit_node_name(const inf_model_edit *m, int node);  /* "" when unnamed */
INF_API int inf_model_edit_node_n_inputs(const inf_model_edit *m, int node);
INF_API const char *inf_model_edit_node_input(const inf_model_edit *m, int node, int k); /* "" = absent */
INF_API int inf_model_edit_node_n_outputs(const inf_model_edit *m, int node);
INF_API const char *inf_model_edit_node_output(const inf_model_edit *m, int node, int k);
/* An INT / FLOAT attribute of the node, or def when it has none. */
INF_API int64_t inf_model_edit_node_attr_int(const inf_model_edit *m, int node, const char *name, int64_t def);
INF_API double inf_model_edit_node_attr_float(const inf_model_edit *m, int node, const char *name, double def);
/* 1 when the node has a GRAPH attribute (If/Loop/Scan): not rewritable here. */
INF_API int inf_model_edit_node_has_subgraph(const inf_model_edit *m, int node);
/* All of a node at once, borrowed until the node is changed: inputs[k] ""
 * for an absent optional input. */
typedef struct inf_model_edit_node_view {
    const char *name, *op_type, *domain;
    int n_inputs, n_outputs;
    const char *const *inputs;
    const char *const *outputs;
} inf_model_edit_node_view;
INF_API void inf_model_edit_view_node(const inf_model_edit *m, int node, inf_model_edit_node_view *out);
/* Sets input k of node (k == n_inputs appends one). */
INF_API inf_status inf_model_edit_node_set_input(inf_model_edit *m, int node, int k, const char *value,
                                                 inf_error *err);
INF_API void inf_model_edit_remove_node(inf_model_edit *m, int node);

typedef struct inf_model_edit_attr {
    const char *name;
    int is_float;   /* 0: INT attribute (i), 1: FLOAT (f); ignored when ints is set */
    int64_t i;
    double f;
    const int64_t *ints; /* non-NULL: an INTS attribute of n_ints values */
    int n_ints;
} inf_model_edit_attr;

/* Appends a node (op in ai.onnx; inputs "" = absent optional input). */
INF_API inf_status inf_model_edit_add_node(inf_model_edit *m, const char *op, const char *name, int n_inputs,
                                           const char *const *inputs, int n_outputs, const char *const *outputs,
                                           int n_attrs, const inf_model_edit_attr *attrs, inf_error *err);
/* Inserts a node before node index `before` (< 0 or n_nodes: at the end), op
 * in domain ("" = ai.onnx); the nodes from `before` on move up by one. */
INF_API inf_status inf_model_edit_insert_node(inf_model_edit *m, int before, const char *op, const char *domain,
                                              const char *name, int n_inputs, const char *const *inputs,
                                              int n_outputs, const char *const *outputs, int n_attrs,
                                              const inf_model_edit_attr *attrs, inf_error *err);
/* Turns node into op (same domain) with new inputs and outputs; its
 * attributes are kept (keep_attrs) or replaced by attrs. */
INF_API inf_status inf_model_edit_retype_node(inf_model_edit *m, int node, const char *op, int n_inputs,
                                              const char *const *inputs, int n_outputs, const char *const *outputs,
                                              int keep_attrs, int n_attrs, const inf_model_edit_attr *attrs,
                                              inf_error *err);

/* ---- Initializers ---- */
/* 1 when value is an initializer. */
INF_API int inf_model_edit_has_initializer(const inf_model_edit *m, const char *value);
/* A copy of the initializer (owned by the caller).  INF_ENOENT when there is none. */
INF_API inf_status inf_model_edit_get_initializer(const inf_model_edit *m, const char *value, inf_tensor **out,
                                                  inf_error *err);
/* Replaces the initializer called value (or adds it): dtype and shape of t. */
INF_API inf_status inf_model_edit_set_initializer(inf_model_edit *m, const char *value, const inf_tensor *t,
                                                  inf_error *err);
/* 1 when value is an initializer that is not also a graph input (a constant
 * no caller can replace). */
INF_API int inf_model_edit_is_constant(const inf_model_edit *m, const char *value);
/* Removes the initializer called value when nothing reads it any more (no
 * node input, graph output or graph input names it). */
INF_API void inf_model_edit_drop_unused_initializer(inf_model_edit *m, const char *value);
/* Main-graph Identity nodes of a constant (TorchScript exports write one for a weight shared by two layers, as
 * ALBERT's are, and for initializers of equal contents): their readers in the main graph read the constant itself,
 * and the Identity is removed unless it is a graph output or the graph has subgraphs (which may read it by
 * name).  Returns the number of readers rewired; -1 when memory ran out (err set). */
INF_API int inf_model_edit_bypass_constant_identities(inf_model_edit *m, inf_error *err);

/* ---- Graph inputs and outputs ---- */
INF_API int inf_model_edit_n_outputs(const inf_model_edit *m);
INF_API const char *inf_model_edit_output(const inf_model_edit *m, int i);
INF_API int inf_model_edit_is_output(const inf_model_edit *m, const char *value); /* 1 when a graph output */
INF_API int inf_model_edit_n_inputs(const inf_model_edit *m); /* as declared, initializers included */
INF_API const char *inf_model_edit_input(const inf_model_edit *m, int i);
/* Declares a tensor graph input / output: dtype, rank ndim (< 0: unknown
 * shape), dims (< 0 with dim_names[d] (may be NULL) for symbolic ones). */
INF_API inf_status inf_model_edit_add_input(inf_model_edit *m, const char *name, inf_dtype dtype, int ndim,
                                            const int64_t *dims, const char *const *dim_names, inf_error *err);
INF_API inf_status inf_model_edit_add_output(inf_model_edit *m, const char *name, inf_dtype dtype, int ndim,
                                             const int64_t *dims, const char *const *dim_names, inf_error *err);

#ifdef __cplusplus
}
#endif

#endif /* INFERA_MODEL_WRITE_H */
