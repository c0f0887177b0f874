/*
 * edit.h -- read, change and write an ONNX model without seeing protobuf.
 *
 * DESIGN: the model tools (src/tools/: quantize) rewrite ONNX files: they
 * add initializers and nodes, retype nodes, add graph outputs.  protobuf-c
 * types stay inside src/onnx/ (DESIGN.md §2), so this is a small editor over
 * an opaque handle: the ModelProto is unpacked once, edited in place through
 * the calls below (every string and array copied in with inf__malloc, so one
 * free_unpacked frees it all) and packed again to a file or a buffer.
 * Everything else in the model (metadata, value infos, opsets, doc strings,
 * other nodes' attributes) is kept as it was.
 *
 * Nodes are addressed by their index in the main graph's node list; an insert
 * shifts the indices after it.  Names and tensors passed in are copied; the
 * views returned are borrowed from the editor, valid until the next change.
 * Errors return an inf_status and fill err naming the model and the item.
 */
#ifndef INF_ONNX_EDIT_H
#define INF_ONNX_EDIT_H

#include <stdbool.h>
#include <stddef.h>

#include "infera/tensor.h"

typedef struct inf__onnx_edit inf__onnx_edit;

/* A node as the tools see it (borrowed strings; "" for an absent input). */
typedef struct inf__onnx_node_view {
    const char *name, *op_type, *domain;
    int n_inputs, n_outputs;
    const char *const *inputs;
    const char *const *outputs;
} inf__onnx_node_view;

/* An attribute to set on a new node: an int, a float, or a list of ints. */
typedef struct inf__onnx_attr_arg {
    const char *name;
    char kind; /* 'i' int, 'f' float, 'I' ints */
    int64_t i;
    float f;
    const int64_t *ints;
    int n_ints;
} inf__onnx_attr_arg;

/* Opens the model file at path (external data is refused: INF_EUNSUPPORTED). */
inf_status inf__onnx_edit_open(const char *path, inf__onnx_edit **out, inf_error *err);
void inf__onnx_edit_free(inf__onnx_edit *ed);

int inf__onnx_edit_n_nodes(const inf__onnx_edit *ed);
void inf__onnx_edit_node(const inf__onnx_edit *ed, int i, inf__onnx_node_view *out);
/* Node i's INT attribute, or dflt when absent. */
int64_t inf__onnx_edit_attr_int(const inf__onnx_edit *ed, int i, const char *name, int64_t dflt);
float inf__onnx_edit_attr_float(const inf__onnx_edit *ed, int i, const char *name, float dflt);
/* The opset imported for domain ("" = ai.onnx), 0 when none. */
int64_t inf__onnx_edit_opset(const inf__onnx_edit *ed, const char *domain);
/* Imports domain at version (raising an older import to it). */
inf_status inf__onnx_edit_set_opset(inf__onnx_edit *ed, const char *domain, int64_t version, inf_error *err);

/* Graph inputs / outputs by name. */
int inf__onnx_edit_n_inputs(const inf__onnx_edit *ed);
const char *inf__onnx_edit_input(const inf__onnx_edit *ed, int i);
bool inf__onnx_edit_is_output(const inf__onnx_edit *ed, const char *name);

/* Is name an initializer (and not a graph input a caller may override)? */
bool inf__onnx_edit_is_constant(const inf__onnx_edit *ed, const char *name);
/* An owned copy of initializer name (*out NULL when there is none). */
inf_status inf__onnx_edit_get_initializer(const inf__onnx_edit *ed, const char *name, inf_tensor **out,
                                          inf_error *err);
/* Adds initializer name = t (a copy), replacing one of that name. */
inf_status inf__onnx_edit_set_initializer(inf__onnx_edit *ed, const char *name, const inf_tensor *t,
                                          inf_error *err);
/* Drops the initializer called name if no node and no graph output reads it. */
void inf__onnx_edit_drop_unused_initializer(inf__onnx_edit *ed, const char *name);
/* Total bytes of the initializers' data. */
size_t inf__onnx_edit_weight_bytes(const inf__onnx_edit *ed);

/* Inserts a node before index `before` (n_nodes: at the end).  Empty input
 * names stand for omitted optional inputs. */
inf_status inf__onnx_edit_insert_node(inf__onnx_edit *ed, int before, const char *op_type, const char *domain,
                                      const char *name, int n_inputs, const char *const *inputs, int n_outputs,
                                      const char *const *outputs, int n_attrs, const inf__onnx_attr_arg *attrs,
                                      inf_error *err);
/* Turns node i into op_type (domain "" ) with new inputs and outputs; its
 * attributes are kept when keep_attrs (Conv's, for QLinearConv), else
 * replaced by attrs. */
inf_status inf__onnx_edit_retype_node(inf__onnx_edit *ed, int i, const char *op_type, int n_inputs,
                                      const char *const *inputs, int n_outputs, const char *const *outputs,
                                      bool keep_attrs, int n_attrs, const inf__onnx_attr_arg *attrs,
                                      inf_error *err);
/* Node i's input k now reads value name. */
inf_status inf__onnx_edit_set_node_input(inf__onnx_edit *ed, int i, int k, const char *name, inf_error *err);
/* Makes value name a graph output (float32, shape unknown) -- for reading
 * intermediate values during calibration. */
inf_status inf__onnx_edit_add_output(inf__onnx_edit *ed, const char *name, inf_error *err);
/* Appends "text" to the model's doc string and sets producer metadata. */
inf_status inf__onnx_edit_set_metadata(inf__onnx_edit *ed, const char *key, const char *value, inf_error *err);

/* Serialises the model: to a new inf__malloc'd buffer, or to a file. */
inf_status inf__onnx_edit_to_buffer(const inf__onnx_edit *ed, void **data, size_t *size, inf_error *err);
void inf__onnx_edit_buffer_free(void *data);
inf_status inf__onnx_edit_save(const inf__onnx_edit *ed, const char *path, size_t *size, inf_error *err);

#endif /* INF_ONNX_EDIT_H */
