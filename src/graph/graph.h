/*
 * graph.h -- the engine's intermediate representation of a model.
 *
 * DESIGN: onnx/decode.c turns a ModelProto into an inf__graph; after that no
 * code sees protobuf.  A graph is a table of values (named edges: graph
 * inputs, initializers, node outputs) and a table of nodes in topological
 * order, each node naming its inputs and outputs by value index.  All of it
 * lives in the model's arena and is immutable once loaded, so one model can
 * back any number of sessions.
 *
 * Subgraphs (attributes of If, Loop, Scan) are inf__graphs with `parent` set;
 * a value they use from an enclosing scope is a value of their own with
 * `outer` = the index of that value in the parent graph.
 *
 * Who uses it: onnx/ builds it, graph/session.c runs it, ops/ read nodes
 * and attributes through the helpers below.
 */
#ifndef INF_GRAPH_H
#define INF_GRAPH_H

#include "core/core.h"
#include "infera/model.h"

struct inf__op;
struct inf__graph;

/* Attribute types: the numbers are ONNX's AttributeProto.AttributeType. */
typedef enum inf__attr_type {
    INF_ATTR_UNDEFINED = 0,
    INF_ATTR_FLOAT = 1,
    INF_ATTR_INT = 2,
    INF_ATTR_STRING = 3,
    INF_ATTR_TENSOR = 4,
    INF_ATTR_GRAPH = 5,
    INF_ATTR_FLOATS = 6,
    INF_ATTR_INTS = 7,
    INF_ATTR_STRINGS = 8,
    INF_ATTR_TENSORS = 9,
    INF_ATTR_GRAPHS = 10,
    INF_ATTR_SPARSE_TENSOR = 11,
    INF_ATTR_SPARSE_TENSORS = 12,
    INF_ATTR_TYPE_PROTO = 13,
    INF_ATTR_TYPE_PROTOS = 14,
} inf__attr_type;

typedef struct inf__attr {
    const char *name;
    inf__attr_type type;
    float f;
    int64_t i;
    const char *s;          /* STRING: NUL-terminated copy */
    size_t s_len;
    inf_tensor *t;          /* TENSOR (owned by the graph) */
    struct inf__graph *g;   /* GRAPH */
    int n;                  /* element count of the list kinds */
    float *floats;
    int64_t *ints;
    const char **strings;
    inf_tensor **tensors;
    struct inf__graph **graphs;
    inf_value_info *type_protos; /* TYPE_PROTO(S): n entries (1 for TYPE_PROTO) */
} inf__attr;

/* An element-wise activation applied to a node's output 0 right after its
 * kernel, in place, while the data is still in cache (fused by optimize.c
 * from a following Relu/LeakyRelu/Clip node; SiLU by passes/silu.c from a
 * Conv's Sigmoid + Mul). */
typedef enum inf__epilogue_kind {
    INF_EPILOGUE_NONE = 0,
    INF_EPILOGUE_RELU,
    INF_EPILOGUE_LEAKY_RELU, /* alpha */
    INF_EPILOGUE_CLIP,       /* [lo, hi] */
    INF_EPILOGUE_SILU,       /* x * Sigmoid(x), float32 only (the Sigmoid kernel's, then a multiply) */
} inf__epilogue_kind;

typedef struct inf__epilogue {
    inf__epilogue_kind kind;
    float alpha, lo, hi;
} inf__epilogue;

typedef struct inf__node {
    const char *name;       /* node name, or "<op_type>_<index>" if the model had none */
    const char *op_type;
    const char *domain;     /* "" for ai.onnx */
    int opset;              /* version of domain imported by the model */
    const struct inf__op *op;
    int n_inputs;
    int *inputs;            /* value indices; -1 for an omitted optional input */
    int n_outputs;
    int *outputs;           /* value indices; -1 for an omitted optional output */
    int n_attrs;
    inf__attr *attrs;
    int n_implicit;
    int *implicit;          /* values of this graph that the node's subgraphs read */
    void *params;           /* the op's parsed attributes (op->init), in the model arena */
    const void *prev_params;  /* during init after inf__pass_rewrite: the params of the node of the same op it
                               * replaces (init may reuse what they hold, e.g. packed weights), else NULL */
    struct inf__graph *graph; /* the graph the node belongs to */
    inf__epilogue epilogue; /* an activation fused into this node (optimize.c) */
} inf__node;

typedef enum inf__value_role {
    INF_VALUE_INTERMEDIATE = 0,
    INF_VALUE_INPUT,        /* graph input supplied by the caller */
    INF_VALUE_INITIALIZER,  /* constant weight (may also be an overridable input) */
    INF_VALUE_OUTER,        /* taken from the enclosing graph (subgraphs only) */
} inf__value_role;

typedef struct inf__value {
    const char *name;
    inf__value_role role;
    inf_value_info info;    /* declared type, where the model gives one */
    int has_info;
    inf_tensor *constant;   /* initializer data (owned by the model), or NULL */
    int producer;           /* index of the node writing it, or -1 */
    int outer;              /* ROLE_OUTER: index in parent->values */
    int n_consumers;        /* node inputs reading it (+1 per graph output) */
} inf__value;

typedef struct inf__graph {
    const char *name;
    struct inf__graph *parent;
    int n_values;
    inf__value *values;
    int n_nodes;
    inf__node *nodes;       /* topological order */
    int n_inputs;
    int *inputs;            /* value indices of caller-supplied inputs (graph input order) */
    int n_outputs;
    int *outputs;           /* value indices */
    struct inf_model *model;
} inf__graph;

/* The model: arena, main graph, and load-time facts for inf_model_get_summary. */
struct inf_model {
    inf__arena arena;
    inf__graph *graph;
    const char *path;
    const char *producer_name, *producer_version, *doc_string;
    int64_t ir_version, model_version;
    int n_opsets;
    inf_opset *opsets;
    int n_metadata;
    const char **metadata_keys, **metadata_values;
    uint64_t file_bytes;
    int n_op_types;
    int n_nodes_written;           /* main-graph nodes before optimisation */
    struct { const char *domain, *op_type; int count; } *op_types;
    inf_value_info *input_infos;   /* per graph->inputs */
    inf_value_info *output_infos;  /* per graph->outputs */
    bool qdq_exact;                /* inf_model_options.qdq_exact or INFERA_QDQ=exact (graph/optimize.c) */
    void *bundle;                  /* facts of a model loaded from a bundle (bundle/bundle_int.h), or NULL */
    void (*on_free)(struct inf_model *m); /* called by inf_model_free before the arena goes, or NULL */
};

/* ---- attribute access (graph/ir.c) ----
 * Lookups by name; they return the default when the attribute is absent. */
const inf__attr *inf__node_attr(const inf__node *node, const char *name);
int64_t inf__attr_int(const inf__node *node, const char *name, int64_t dflt);
float inf__attr_float(const inf__node *node, const char *name, float dflt);
const char *inf__attr_string(const inf__node *node, const char *name, const char *dflt);
/* INTS attribute: sets *n and returns the array, or NULL (n = 0) if absent. */
const int64_t *inf__attr_ints(const inf__node *node, const char *name, int *n);
const float *inf__attr_floats(const inf__node *node, const char *name, int *n);
const inf_tensor *inf__attr_tensor(const inf__node *node, const char *name);
struct inf__graph *inf__attr_graph(const inf__node *node, const char *name);

/* The constant (initializer) behind input i of node, or NULL when the input
 * is absent or computed at run time.  Lets init prepare weights once at load
 * time (packing, transposing, quantizing), kept in node->params. */
const inf_tensor *inf__node_constant_input(const inf__node *node, int i);

/* ---- graph building and checks (graph/ir.c) ---- */
/* Sorts nodes topologically, fills producers/consumers, and rejects cycles,
 * values written twice and inputs nobody produces (err names the node). */
inf_status inf__graph_finalize(inf__graph *g, inf_error *err);
/* Index of the value called name in g, or -1. */
int inf__graph_find_value(const inf__graph *g, const char *name);

/* Frees the tensors a graph owns: initializers and attribute tensors, through
 * subgraphs (the rest lives in the model arena).  Node by node for the
 * optimizer, which drops nodes. */
void inf__graph_free_tensors(inf__graph *g);
void inf__node_free_tensors(inf__node *node);

/* Resolves every node's op and runs its init (attribute checks), recursively
 * through subgraphs (ops/op_table.c uses this; see ops.h). */
inf_status inf__graph_bind_ops(struct inf_model *model, inf__graph *g, inf_error *err);

/* ---- load-time optimisation (graph/optimize.c) ----
 * Rewrites the graph in place after its ops are bound: folds nodes whose
 * inputs are all constants into initializers, then removes nodes whose
 * outputs nobody reads.  Outputs are unchanged; errors only for lack of
 * memory (a node that fails to fold is kept, and fails at run time). */
inf_status inf__graph_optimize(struct inf_model *model, inf__graph *g, inf_error *err);

/* Runs single nodes outside a session run (graph/session.c), for folding. */
typedef struct inf__evaluator inf__evaluator;
inf_status inf__evaluator_new(const struct inf_model *model, const inf__graph *g, inf__evaluator **out, inf_error *err);
/* outputs[k] receive owned copies (NULL for omitted outputs).  An output past
 * the memory limit (memplan.c's guard) gives INF_ERANGE: not folded. */
inf_status inf__evaluator_run_node(inf__evaluator *ev, const inf__node *node, inf_tensor *const *inputs,
                                   inf_tensor **outputs, inf_error *err);
void inf__evaluator_free(inf__evaluator *ev);

#endif /* INF_GRAPH_H */
