/*
 * ml_tree.h -- what the tree-ensemble kernels share (ml_tree.c: the opset 1-3
 * TreeEnsembleClassifier/Regressor, their compilation and evaluation;
 * ml_tree_v5.c: the opset-5 TreeEnsemble, rewritten at init into the same
 * lists): the compiled forest and the attribute lists it is built from.
 */
#ifndef INF_OPS_REF_ML_TREE_H
#define INF_OPS_REF_ML_TREE_H

#include "ops/ref/ml_common.h"

enum { AGG_SUM, AGG_AVERAGE, AGG_MIN, AGG_MAX };

typedef struct ml_tree_node {
    float threshold;
    int32_t feature;    /* LEAF: number of weights */
    int32_t false_next; /* branch: index of the false child (true child is this + 1); LEAF: first weight */
    uint8_t mode;
    uint8_t missing_true;
    uint16_t reserved;
} ml_tree_node;

typedef struct ml_weight {
    int32_t target; /* class or target index */
    double value;
} ml_weight;

typedef struct ml_forest {
    int n_trees;
    int32_t *roots;
    int n_nodes;
    ml_tree_node *nodes;
    double *thr64;         /* per node: threshold in double */
    ml_weight *weights;
    int n_targets;         /* classes (classifier) or n_targets (regressor) */
    int64_t n_features;    /* max feature index read + 1 */
    double *base;          /* n_base values, 0 or n_targets */
    int n_base;
    ml_post post;
    int aggregate;
    struct ml_fast *fast;  /* complete-tree layout for float32 inputs, or NULL */
    bool v5;               /* opset-5 TreeEnsemble: Y has X's type (float or double) */
    /* classifier only */
    bool classifier, binary_case, all_positive;
    const int64_t *labels_i64;
    const char *const *labels_str;
} ml_forest;

typedef struct tree_attrs { /* the nodes_* and leaf-weight lists of the node */
    int n_nodes;
    const int64_t *treeids, *nodeids, *featureids, *truenodeids, *falsenodeids, *missing;
    const char *const *modes;
    double *values;
    int n_weights;
    const int64_t *w_treeids, *w_nodeids, *w_ids;
    double *w_values;
    const char *wp; /* "class" or "target" */
} tree_attrs;

/* Validates the lists in a and compiles them into f (and its fast layout
 * when the ensemble allows); errors name the node and the attribute. */
inf_status inf__ml_forest_build(const inf__node *node, inf__arena *arena, const tree_attrs *a, ml_forest *f,
                                inf_error *err);
/* The kernel of every tree-ensemble op (node->params is an ml_forest). */
inf_status inf__ml_forest_run(inf__kernel_ctx *ctx);

#endif /* INF_OPS_REF_ML_TREE_H */
