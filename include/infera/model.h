/*
 * model.h -- loading an ONNX model and asking what it is.
 *
 * A model is decoded, validated (every node's op is known at its opset and its
 * attributes are checked) and kept immutable: one model may be shared by any
 * number of sessions on any threads.  Initializers stored as external data
 * (files beside the model) are read at load time.
 */
#ifndef INFERA_MODEL_H
#define INFERA_MODEL_H

#include "infera/infera.h"
#include "infera/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct inf_model inf_model;

typedef struct inf_model_options {
    int no_optimize; /* skip the load-time graph rewrites (constant folding, dead nodes) */
    int qdq_exact;   /* QDQ files: keep every activation Q -> DQ pair whose removal is not bit-exact (the file's own
                        rounding; docs/optimizer.md "QDQ files"); also set by the environment INFERA_QDQ=exact */
} inf_model_options;

/* The declared type of a graph input or output. */
typedef struct inf_value_info {
    const char *name;
    inf_value_kind kind;   /* TENSOR, SEQUENCE, MAP (tensor inside an optional: TENSOR) */
    int is_optional;       /* declared as optional(...) */
    inf_dtype dtype;       /* element type; UNDEFINED if not declared */
    int ndim;              /* -1 when the rank is unknown */
    int64_t dims[INF_MAX_DIMS];         /* -1 for a symbolic or unknown dimension */
    const char *dim_names[INF_MAX_DIMS]; /* symbolic name ("batch") or NULL */
} inf_value_info;

/* Loads an ONNX model file.  On failure *out is NULL and err says which file,
 * which node and why (INF_EIO, INF_EFORMAT, INF_EMODEL, INF_EUNSUPPORTED, ...). */
INF_API inf_status inf_model_load(const char *path, const inf_model_options *opts,
                                  inf_model **out, inf_error *err);
/* Loads from memory; base_dir (may be NULL) is where external data files live.
 * The bytes are only read during the call. */
INF_API inf_status inf_model_load_buffer(const void *data, size_t size, const char *base_dir,
                                         const inf_model_options *opts, inf_model **out,
                                         inf_error *err);
INF_API void inf_model_free(inf_model *model);

/* The distinct external-data files (locations relative to the model's folder)
 * that the serialized model in data refers to, in first-use order; none for
 * self-contained models and XGBoost models.  Free with
 * inf_model_external_files_free.  Fails on a model that does not decode or
 * names a file outside its folder. */
INF_API inf_status inf_model_external_files(const void *data, size_t size, char ***files, int *n_files,
                                            inf_error *err);
INF_API void inf_model_external_files_free(char **files, int n_files);

/* Graph inputs the caller provides (initializers excluded), and outputs. */
INF_API int inf_model_n_inputs(const inf_model *model);
INF_API const inf_value_info *inf_model_input(const inf_model *model, int i);
INF_API int inf_model_n_outputs(const inf_model *model);
INF_API const inf_value_info *inf_model_output(const inf_model *model, int i);
/* Index of the input (or output) called name, or -1. */
INF_API int inf_model_find_input(const inf_model *model, const char *name);
INF_API int inf_model_find_output(const inf_model *model, const char *name);

typedef struct inf_opset {
    const char *domain; /* "" for ai.onnx */
    int64_t version;
} inf_opset;

typedef struct inf_model_summary {
    const char *path;             /* as given to inf_model_load, or "<memory>" */
    const char *graph_name;
    const char *producer_name;
    const char *producer_version;
    const char *doc_string;
    int64_t ir_version;
    int64_t model_version;
    int n_opsets;
    const inf_opset *opsets;
    int n_nodes;                  /* in the main graph, as written */
    int n_nodes_optimized;        /* left after load-time optimisation */
    int64_t n_parameters;         /* elements in all initializers */
    uint64_t parameter_bytes;
    uint64_t file_bytes;
} inf_model_summary;

INF_API void inf_model_get_summary(const inf_model *model, inf_model_summary *out);

/* Op usage in the main graph: n_op_types distinct (domain, op) pairs. */
INF_API int inf_model_n_op_types(const inf_model *model);
INF_API void inf_model_op_type(const inf_model *model, int i, const char **domain,
                               const char **op_type, int *count);

/* Node i (0 <= i < n_nodes_optimized) of the main graph after load-time
 * optimisation: its op type (fused kernels have their own: FusedMatMul,
 * Attention, ConvAdd, ...) and the activation fused into its output
 * ("Relu", "LeakyRelu", "Clip"; NULL when none).  What `infera info` lists
 * as the optimised ops. */
INF_API void inf_model_optimized_node(const inf_model *model, int i, const char **op_type,
                                      const char **activation);

/* metadata_props of the model: key/value pairs. */
INF_API int inf_model_n_metadata(const inf_model *model);
INF_API void inf_model_metadata(const inf_model *model, int i, const char **key,
                                const char **value);

/* The operators this build implements: n_ops rows of (domain, op type,
 * first and last supported opset of that domain). */
INF_API int inf_supported_op_count(void);
INF_API void inf_supported_op(int i, const char **domain, const char **op_type, int *first_opset,
                              int *last_opset);
/* The ONNX schema versions (since-versions) that operator i's opset range
 * covers, ascending, at most max_versions of them written; returns how many
 * (0 for an operator ONNX does not define). */
INF_API int inf_supported_op_schema_versions(int i, int *versions, int max_versions);

#ifdef __cplusplus
}
#endif

#endif /* INFERA_MODEL_H */
