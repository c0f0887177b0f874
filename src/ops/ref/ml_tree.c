/*
 * ml_tree.c -- ai.onnx.ml TreeEnsembleClassifier and TreeEnsembleRegressor,
 * opsets 1-3 (the opset-3 *_as_tensor attributes included), and the opset-5
 * TreeEnsemble's kernel (ml_tree_v5.c rewrites its attributes into the
 * regressor's lists; the types shared with it are in ml_tree.h).
 *
 * X: float32, float64, int64 or int32, [N, F] (or [F], one row).
 * Classifier outputs Y (int64 or string labels) [N] and Z float32 [N, C];
 * regressor output Y float32 [N, n_targets].
 *
 * DESIGN.  init validates the attributes and compiles the ensemble into a
 * flat node array (ml_forest): each tree's reachable nodes are laid out in
 * depth-first preorder, so a node's true child is the next node and only the
 * false child's index is stored; a node is 16 bytes {float threshold,
 * int32 feature, int32 false child, mode, missing-goes-true}.  Leaves keep
 * their weights as a (first, count) range of one weight array.  Thresholds
 * also exist in double (thr64) for float64 inputs.  run splits rows into
 * blocks that the session's threads pull from one counter (forest_pull);
 * inside a block the trees are the outer loop, so a tree's nodes stay in
 * cache across rows.
 * Forests of depth-limited, single-voting trees with one split mode (LT or
 * LEQ: XGBoost, LightGBM, scikit-learn) and float32 inputs take the fast
 * path instead (see "fast layout" below): complete trees of one depth,
 * branch-free traversal of 8 rows (or, for a lone row, 8 trees) at a time,
 * NaN routing folded into the comparison; when the thresholds allow, its
 * inner nodes shrink to 4 bytes (a threshold rank and the row's rank slot,
 * the rows mapped once to ranks per feature by a branch-free search: see
 * "compact nodes").  It gives
 * bit-identical scores, and a row's score never depends on the batch, block
 * or thread it is in.
 *
 * Validation (init, errors name the attribute): nodes_* and class_* /
 * target_* lists of equal length, known modes, (tree, node) ids unique,
 * children that exist in the same tree, no cycles or shared subtrees, weights
 * only on LEAF nodes, class/target ids in range, base_values of length 0 or
 * C, feature ids >= 0.  run checks that X has every feature a tree reads.
 *
 * Semantics follow ONNX Runtime (de facto reference of ai.onnx.ml):
 *  - the root of a tree is its first node in attribute order;
 *  - a NaN feature goes to the true child when the node's
 *    nodes_missing_value_tracks_true is set, else wherever the comparison
 *    says (false for every mode but BRANCH_NEQ);
 *  - scores accumulate in float32 for float32/int inputs, float64 for
 *    float64 inputs, in tree order; base values are added at the end;
 *  - the two-class cases (binary_case when every weight is for one class,
 *    all-positive weights read as probabilities, labels by the sign or 0.5),
 *    and a single-target regressor applying only PROBIT, as in ORT.
 * TreeEnsemble follows the ONNX spec (onnx.reference) where ORT 1.30
 * differs: post_transform 1 is SOFTMAX and 2 LOGISTIC (ORT swaps them).
 * Float16 X is not supported by TreeEnsemble (float and double are).
 * nodes_hitrates is ignored (it does not change results).
 */
#include <stdatomic.h>
#include <stdlib.h>

#include "ops/ref/ml_tree.h"

enum { MODE_LEQ, MODE_LT, MODE_GTE, MODE_GT, MODE_EQ, MODE_NEQ, MODE_LEAF };

/* ---------------------------------------------------------------- compile */

typedef struct node_key {
    int64_t tree, node;
    int32_t index; /* position in the attribute lists */
} node_key;

static int key_cmp(const void *a, const void *b) {
    const node_key *x = a, *y = b;
    if (x->tree != y->tree) return x->tree < y->tree ? -1 : 1;
    if (x->node != y->node) return x->node < y->node ? -1 : 1;
    return x->index - y->index;
}

static int32_t key_find(const node_key *keys, int n, int64_t tree, int64_t node) {
    int lo = 0, hi = n - 1;
    while (lo <= hi) {
        int mid = (lo + hi) / 2;
        if (keys[mid].tree == tree && keys[mid].node == node) return keys[mid].index;
        if (keys[mid].tree < tree || (keys[mid].tree == tree && keys[mid].node < node)) lo = mid + 1;
        else hi = mid - 1;
    }
    return -1;
}

static int parse_mode(const char *s) {
    static const char *const names[] = {"BRANCH_LEQ", "BRANCH_LT", "BRANCH_GTE", "BRANCH_GT",
                                        "BRANCH_EQ",  "BRANCH_NEQ", "LEAF"};
    for (int i = 0; i < 7; i++)
        if (!strcmp(s, names[i])) return i;
    return -1;
}

static const int64_t *ints_of(const inf__node *node, const char *name, int *n) {
    return inf__attr_ints(node, name, n);
}

/* Reads the node lists; checks that every list has the same length. */
static inf_status read_node_attrs(const inf__node *node, inf__arena *arena, tree_attrs *a, inf_error *err) {
    int n[8];
    inf_status st;
    a->treeids = ints_of(node, "nodes_treeids", &n[0]);
    a->nodeids = ints_of(node, "nodes_nodeids", &n[1]);
    a->featureids = ints_of(node, "nodes_featureids", &n[2]);
    a->truenodeids = ints_of(node, "nodes_truenodeids", &n[3]);
    a->falsenodeids = ints_of(node, "nodes_falsenodeids", &n[4]);
    a->values = ml_attr_doubles(node, arena, "nodes_values", &n[5], &st, err);
    if (st != INF_OK) return st;
    const inf__attr *modes = inf__node_attr(node, "nodes_modes");
    if (!modes || modes->type != INF_ATTR_STRINGS)
        return inf__node_error(node, err, INF_EMODEL, "attribute nodes_modes is missing");
    a->modes = modes->strings;
    n[6] = modes->n;
    a->missing = ints_of(node, "nodes_missing_value_tracks_true", &n[7]);
    static const char *const names[] = {"nodes_treeids",     "nodes_nodeids", "nodes_featureids",
                                        "nodes_truenodeids", "nodes_falsenodeids", "nodes_values",
                                        "nodes_modes",       "nodes_missing_value_tracks_true"};
    a->n_nodes = n[0];
    if (a->n_nodes == 0) return inf__node_error(node, err, INF_EMODEL, "attribute nodes_treeids is missing or empty");
    for (int i = 1; i < 8; i++) {
        if (i == 7 && n[7] == 0) continue; /* optional */
        if (n[i] != a->n_nodes)
            return inf__node_error(node, err, INF_EMODEL, "attribute %s has %d values, nodes_treeids has %d",
                                   names[i], n[i], a->n_nodes);
    }
    return INF_OK;
}

static inf_status read_weight_attrs(const inf__node *node, inf__arena *arena, tree_attrs *a, inf_error *err) {
    char name[4][64];
    int n[4];
    inf_status st;
    snprintf(name[0], 64, "%s_treeids", a->wp);
    snprintf(name[1], 64, "%s_nodeids", a->wp);
    snprintf(name[2], 64, "%s_ids", a->wp);
    snprintf(name[3], 64, "%s_weights", a->wp);
    a->w_treeids = ints_of(node, name[0], &n[0]);
    a->w_nodeids = ints_of(node, name[1], &n[1]);
    a->w_ids = ints_of(node, name[2], &n[2]);
    a->w_values = ml_attr_doubles(node, arena, name[3], &n[3], &st, err);
    if (st != INF_OK) return st;
    a->n_weights = n[0];
    for (int i = 1; i < 4; i++)
        if (n[i] != a->n_weights)
            return inf__node_error(node, err, INF_EMODEL, "attribute %s has %d values, %s has %d", name[i], n[i],
                                   name[0], a->n_weights);
    return INF_OK;
}

/* Lays out the tree rooted at attribute index `root` in preorder at
 * f->nodes[*next...]; new_index[] maps attribute index -> node index. */
static inf_status layout_tree(const inf__node *node, const tree_attrs *a, const int32_t *true_idx,
                              const int32_t *false_idx, int32_t root, int32_t *new_index, int32_t *stack,
                              ml_forest *f, int32_t *next, inf_error *err) {
    /* stack holds pairs (attribute index, node index of the parent whose false link it fills, or -1) */
    int sp = 0;
    stack[sp++] = root;
    stack[sp++] = -1;
    while (sp > 0) {
        int32_t parent = stack[--sp];
        int32_t i = stack[--sp];
        if (new_index[i] >= 0)
            return inf__node_error(node, err, INF_EMODEL,
                                   "nodes: tree %lld, node %lld is reached twice (a cycle or a shared subtree)",
                                   (long long)a->treeids[i], (long long)a->nodeids[i]);
        int32_t k = (*next)++;
        new_index[i] = k;
        if (parent >= 0) f->nodes[parent].false_next = k;
        ml_tree_node *nd = &f->nodes[k];
        nd->mode = (uint8_t)parse_mode(a->modes[i]);
        nd->missing_true = a->missing && a->missing[i] ? 1 : 0;
        f->thr64[k] = a->values[i];
        nd->threshold = (float)a->values[i];
        if (nd->mode == MODE_LEAF) continue;
        nd->feature = (int32_t)a->featureids[i];
        if (a->featureids[i] + 1 > f->n_features) f->n_features = a->featureids[i] + 1;
        /* false child first on the stack so that the true child comes next */
        stack[sp++] = false_idx[i];
        stack[sp++] = k;
        stack[sp++] = true_idx[i];
        stack[sp++] = -1;
    }
    return INF_OK;
}

/* Resolves children, lays the trees out and attaches the leaf weights. */
static inf_status compile_forest(const inf__node *node, inf__arena *arena, const tree_attrs *a, ml_forest *f,
                                 inf_error *err) {
    int m = a->n_nodes;
    inf_status st = INF_OK;
    node_key *keys = inf__malloc((size_t)m * sizeof *keys);
    int32_t *work = inf__malloc((size_t)m * 4 * sizeof(int32_t) + (size_t)m * 4 * sizeof(int32_t) + 16);
    int32_t *wcount = NULL;
    if (!keys || !work) {
        st = INF_ENOMEM;
        goto done;
    }
    int32_t *true_idx = work, *false_idx = work + m, *new_index = work + 2 * m, *roots = work + 3 * m;
    int32_t *stack = work + 4 * m; /* 4 entries per node at most */
    for (int i = 0; i < m; i++) {
        if (parse_mode(a->modes[i]) < 0) {
            st = inf__node_error(node, err, INF_EMODEL, "attribute nodes_modes[%d]: unknown mode '%s'", i, a->modes[i]);
            goto done;
        }
        if (parse_mode(a->modes[i]) != MODE_LEAF && (a->featureids[i] < 0 || a->featureids[i] >= INT32_MAX)) {
            st = inf__node_error(node, err, INF_EMODEL, "attribute nodes_featureids[%d] = %lld is not a valid feature index",
                                 i, (long long)a->featureids[i]);
            goto done;
        }
        keys[i] = (node_key){a->treeids[i], a->nodeids[i], i};
        new_index[i] = -1;
    }
    qsort(keys, (size_t)m, sizeof *keys, key_cmp);
    for (int i = 1; i < m; i++)
        if (keys[i].tree == keys[i - 1].tree && keys[i].node == keys[i - 1].node) {
            st = inf__node_error(node, err, INF_EMODEL, "attribute nodes_nodeids: tree %lld has node %lld twice",
                                 (long long)keys[i].tree, (long long)keys[i].node);
            goto done;
        }
    /* roots: the first node of each tree in attribute order */
    int n_trees = 0;
    for (int i = 0; i < m; i++)
        if (i == 0 || keys[i].tree != keys[i - 1].tree) {
            int32_t first = keys[i].index;
            for (int j = i + 1; j < m && keys[j].tree == keys[i].tree; j++)
                if (keys[j].index < first) first = keys[j].index;
            roots[n_trees++] = first;
        }
    for (int i = 1; i < n_trees; i++) /* insertion sort by attribute position */
        for (int j = i; j > 0 && roots[j] < roots[j - 1]; j--) {
            int32_t t = roots[j];
            roots[j] = roots[j - 1];
            roots[j - 1] = t;
        }
    for (int i = 0; i < m; i++) {
        true_idx[i] = false_idx[i] = -1;
        if (parse_mode(a->modes[i]) == MODE_LEAF) continue;
        true_idx[i] = key_find(keys, m, a->treeids[i], a->truenodeids[i]);
        false_idx[i] = key_find(keys, m, a->treeids[i], a->falsenodeids[i]);
        if (true_idx[i] < 0 || false_idx[i] < 0) {
            bool t = true_idx[i] < 0;
            st = inf__node_error(node, err, INF_EMODEL,
                                 "attribute %s[%d] = %lld: tree %lld has no such node",
                                 t ? "nodes_truenodeids" : "nodes_falsenodeids", i,
                                 (long long)(t ? a->truenodeids[i] : a->falsenodeids[i]), (long long)a->treeids[i]);
            goto done;
        }
    }
    f->nodes = inf__arena_alloc(arena, (size_t)m * sizeof *f->nodes);
    f->thr64 = inf__arena_alloc(arena, (size_t)m * sizeof *f->thr64);
    f->roots = inf__arena_alloc(arena, (size_t)n_trees * sizeof *f->roots);
    if (!f->nodes || !f->thr64 || !f->roots) {
        st = INF_ENOMEM;
        goto done;
    }
    int32_t next = 0;
    for (int t = 0; t < n_trees; t++) {
        f->roots[t] = next;
        if ((st = layout_tree(node, a, true_idx, false_idx, roots[t], new_index, stack, f, &next, err)) != INF_OK)
            goto done;
    }
    f->n_trees = n_trees;
    f->n_nodes = next;

    /* leaf weights, grouped by leaf in attribute order */
    wcount = inf__calloc((size_t)next + 1, sizeof *wcount);
    f->weights = inf__arena_alloc(arena, ((size_t)a->n_weights + 1) * sizeof *f->weights);
    if (!wcount || !f->weights) {
        st = INF_ENOMEM;
        goto done;
    }
    for (int k = 0; k < a->n_weights; k++) {
        int32_t i = key_find(keys, m, a->w_treeids[k], a->w_nodeids[k]);
        if (i < 0) {
            st = inf__node_error(node, err, INF_EMODEL, "attribute %s_nodeids[%d]: tree %lld has no node %lld", a->wp, k,
                                 (long long)a->w_treeids[k], (long long)a->w_nodeids[k]);
            goto done;
        }
        if (parse_mode(a->modes[i]) != MODE_LEAF) {
            st = inf__node_error(node, err, INF_EMODEL, "attribute %s_nodeids[%d]: node %lld of tree %lld is not a LEAF",
                                 a->wp, k, (long long)a->w_nodeids[k], (long long)a->w_treeids[k]);
            goto done;
        }
        if (a->w_ids[k] < 0 || a->w_ids[k] >= f->n_targets) {
            st = inf__node_error(node, err, INF_EMODEL, "attribute %s_ids[%d] = %lld is outside [0, %d)", a->wp, k,
                                 (long long)a->w_ids[k], f->n_targets);
            goto done;
        }
        if (new_index[i] >= 0) wcount[new_index[i]]++;
    }
    int32_t start = 0;
    for (int32_t k = 0; k < next; k++) {
        ml_tree_node *nd = &f->nodes[k];
        if (nd->mode != MODE_LEAF) continue;
        nd->false_next = start;
        nd->feature = 0;
        start += wcount[k];
    }
    for (int k = 0; k < a->n_weights; k++) {
        int32_t i = new_index[key_find(keys, m, a->w_treeids[k], a->w_nodeids[k])];
        if (i < 0) continue; /* a leaf no root reaches */
        ml_tree_node *nd = &f->nodes[i];
        f->weights[nd->false_next + nd->feature++] = (ml_weight){(int32_t)a->w_ids[k], a->w_values[k]};
    }
done:
    inf__free(keys);
    inf__free(work);
    inf__free(wcount);
    return st == INF_ENOMEM ? inf__node_error(node, err, st, "out of memory compiling the ensemble") : st;
}

/* ---------------------------------------------------------------- fast layout
 * For float32 inputs, init also compiles a forest whose trees are all
 * depth-limited and single-voting into complete binary trees of one common
 * depth D (ml_fast): internal node i has children 2i+1 (true) and 2i+2
 * (false), so traversal is D branch-free steps
 *     i = 2i + 1 + go_false(x[feature[i]], threshold[i])
 * and the leaf is i - (2^D - 1).  A leaf above depth D becomes a padding
 * node whose two subtrees hold copies of that leaf, so either direction gives
 * the same value.  NaN routing is folded into the comparison: go_false =
 * !(x < t) (LT) or !(x <= t) (LEQ) unless x is NaN and the node's
 * missing-goes-true bit (bit 31 of the feature word) is set.
 * Conditions (else the reference walk above runs): every branch node uses
 * the same mode, LT or LEQ; every leaf has exactly one weight, and all the
 * leaves of a tree vote for the same target (XGBoost, LightGBM, sklearn
 * binary/regression and one-tree-per-class forms); aggregate SUM; D <= 10 and
 * the padded size at most 4x the real node count (+ 64 per tree).
 * Scores: leaves hold their weight rounded to float and each row sums them in
 * float in tree order -- bit-identical to the reference path (float32 inputs
 * accumulate in float there too: double rounding of a float sum is exact).
 * A row's score never depends on its block, thread or batch: rows are scored
 * independently, always summing tree 0, 1, 2, ...
 * Blocking: up to FAST_BLOCK rows run through a chunk of trees (about
 * FAST_CHUNK_BYTES of nodes and leaves, so it stays in L1) before the next
 * chunk; before, the whole forest streamed through the cache for every 8
 * rows.  An AVX2 gather variant (8 rows on one tree, or 8 trees for one row,
 * _mm256_i32gather_* on an interleaved layout) was measured and not kept:
 * slower on this machine's Zen 3 (batch 1: 11.6 vs 9.6 us for 300x depth 8,
 * 32 vs 26 us for 1000x depth 6). */
enum { FAST_MAX_DEPTH = 10, FAST_LANES = 8 };

typedef struct ml_fast_node {
    float threshold;
    uint32_t feature; /* bit 31: NaN goes to the true child */
} ml_fast_node;

typedef struct ml_fast {
    int depth;            /* D */
    int leq;              /* 1: BRANCH_LEQ, 0: BRANCH_LT */
    int n_trees;
    int n_inner, n_leaves; /* per tree: 2^D - 1 and 2^D */
    ml_fast_node *nodes;  /* [n_trees][n_inner] */
    float *leaves;        /* [n_trees][n_leaves] */
    int32_t *target;      /* per tree */
    int32_t one_target;   /* the target every tree votes for, or -1 */
    uint8_t *has;         /* per target: some tree votes for it */
    /* compact form (see "compact nodes"), or cnodes == NULL */
    uint32_t *cnodes;     /* [n_trees][n_inner]: rank bound << 16 | byte offset of the rank slot */
    int n_feat;           /* features with a rank (f->n_features) */
    int32_t *coff;        /* [n_feat + 1]: feature j's sorted distinct thresholds are cthr[coff[j] .. coff[j+1]) */
    float *cthr;
} ml_fast;

static void fast_fill(const ml_forest *f, ml_fast *fs, ml_fast_node *nodes, float *leaves, int32_t orig, int32_t pos,
                      int level) {
    const ml_tree_node *nd = &f->nodes[orig];
    if (level == fs->depth) {
        leaves[pos - fs->n_inner] = (float)f->weights[nd->false_next].value;
        return;
    }
    if (nd->mode == MODE_LEAF) { /* padding: both subtrees are this leaf */
        nodes[pos] = (ml_fast_node){0.0f, 0x80000000u};
        fast_fill(f, fs, nodes, leaves, orig, 2 * pos + 1, level + 1);
        fast_fill(f, fs, nodes, leaves, orig, 2 * pos + 2, level + 1);
        return;
    }
    nodes[pos] = (ml_fast_node){nd->threshold, (uint32_t)nd->feature | (nd->missing_true ? 0x80000000u : 0)};
    fast_fill(f, fs, nodes, leaves, orig + 1, 2 * pos + 1, level + 1);
    fast_fill(f, fs, nodes, leaves, nd->false_next, 2 * pos + 2, level + 1);
}

static inf_status compact_compile(inf__arena *arena, const ml_forest *f, ml_fast *fs);

/* Builds f->fast when the forest qualifies; leaves it NULL otherwise (only
 * an allocation failure is an error). */
static inf_status fast_compile(const inf__node *node, inf__arena *arena, ml_forest *f, inf_error *err) {
    f->fast = NULL;
    if (f->aggregate != AGG_SUM || f->n_trees == 0 || f->n_features >= 0x7fffffff) return INF_OK;
    int mode = -1;
    for (int32_t k = 0; k < f->n_nodes; k++) {
        const ml_tree_node *nd = &f->nodes[k];
        if (nd->mode == MODE_LEAF) {
            if (nd->feature != 1) return INF_OK;
            continue;
        }
        if (nd->mode != MODE_LT && nd->mode != MODE_LEQ) return INF_OK;
        if (mode >= 0 && nd->mode != mode) return INF_OK;
        mode = nd->mode;
    }
    /* depth and per-tree target: an explicit stack of (node, level) */
    int32_t *stack = inf__malloc((size_t)(f->n_nodes + 1) * 2 * sizeof(int32_t));
    int32_t *target = inf__arena_alloc(arena, (size_t)f->n_trees * sizeof(int32_t));
    uint8_t *has = inf__arena_alloc(arena, (size_t)f->n_targets + 1);
    if (!stack || !target || !has) {
        inf__free(stack);
        return inf__node_error(node, err, INF_ENOMEM, "out of memory compiling the ensemble");
    }
    memset(has, 0, (size_t)f->n_targets + 1);
    int depth = 0;
    bool ok = true;
    for (int t = 0; t < f->n_trees && ok; t++) {
        int sp = 0;
        target[t] = -1;
        stack[sp++] = f->roots[t];
        stack[sp++] = 0;
        while (sp > 0 && ok) {
            int level = stack[--sp];
            int32_t i = stack[--sp];
            const ml_tree_node *nd = &f->nodes[i];
            if (level > FAST_MAX_DEPTH) {
                ok = false;
            } else if (nd->mode == MODE_LEAF) {
                int32_t c = f->weights[nd->false_next].target;
                if (target[t] >= 0 && target[t] != c) ok = false;
                target[t] = c;
                if (level > depth) depth = level;
            } else {
                stack[sp++] = nd->false_next;
                stack[sp++] = level + 1;
                stack[sp++] = i + 1;
                stack[sp++] = level + 1;
            }
        }
        if (ok) has[target[t]] = 1;
    }
    inf__free(stack);
    if (!ok) return INF_OK;
    int64_t per_tree = (int64_t)1 << depth;
    if ((int64_t)f->n_trees * per_tree * 2 > 4 * (int64_t)f->n_nodes + 64 * (int64_t)f->n_trees) return INF_OK;
    ml_fast *fs = inf__arena_alloc(arena, sizeof *fs);
    if (!fs) return inf__node_error(node, err, INF_ENOMEM, "out of memory compiling the ensemble");
    fs->depth = depth;
    fs->leq = mode == MODE_LEQ;
    fs->n_trees = f->n_trees;
    fs->n_inner = (int)per_tree - 1;
    fs->n_leaves = (int)per_tree;
    fs->target = target;
    fs->one_target = target[0];
    for (int t = 1; t < f->n_trees; t++)
        if (target[t] != target[0]) fs->one_target = -1;
    fs->has = has;
    fs->nodes = inf__arena_alloc(arena, ((size_t)f->n_trees * (size_t)fs->n_inner + 1) * sizeof *fs->nodes);
    fs->leaves = inf__arena_alloc(arena, (size_t)f->n_trees * (size_t)fs->n_leaves * sizeof *fs->leaves);
    if (!fs->nodes || !fs->leaves) return inf__node_error(node, err, INF_ENOMEM, "out of memory compiling the ensemble");
    for (int t = 0; t < f->n_trees; t++)
        fast_fill(f, fs, fs->nodes + (size_t)t * fs->n_inner, fs->leaves + (size_t)t * fs->n_leaves, f->roots[t], 0, 0);
    if (compact_compile(arena, f, fs) != INF_OK)
        return inf__node_error(node, err, INF_ENOMEM, "out of memory compiling the ensemble");
    f->fast = fs;
    return INF_OK;
}

/* ---- compact nodes
 * The fast layout's 8-byte nodes put t1000d6 (1000 trees of depth 6) at
 * 760 KB, more than this machine's 512 KB L2.  The compact form stores an
 * inner node in 4 bytes: which rank of the row to read (below) and a 16-bit
 * bound k, the position of the node's threshold among its feature's sorted
 * distinct thresholds T_0 < T_1 < ... < T_{m-1}.  Each row is first mapped,
 * once per feature, to a rank by binary search:
 *     LEQ: r = #{j : T_j < x}     (x <= T_k  <=>  r <= k)
 *     LT:  r = #{j : T_j <= x}    (x <  T_k  <=>  r <= k)
 * so the node goes false when r > k, exactly as the float comparison.  The
 * search is branch-free (a fixed number of halvings per feature, the select
 * a conditional move): with branches, half its steps mispredicted and it
 * took 30% of t300d8's time.  Every feature has two rank slots per row,
 * 2j (a NaN x ranks 0xffff: every node goes false) and 2j + 1 (a NaN x ranks
 * 0: every node goes true); a node reads the slot of its missing-goes-true
 * bit, so NaN routing costs nothing at traversal.  A node word is
 *     k << 16 | byte offset of its slot in a group's ranks
 * (slot * FAST_LANES * 2 bytes < 2^16), and r > k  <=>  (r << 16) > word:
 * one load, one shift and one compare per step (with the 17-bit feature
 * and NaN bit it was 12 instructions a step, now 9).  Leaves and the summation
 * order are the fast layout's, so scores are bit-identical.  Used when every
 * feature has at most 65534 distinct thresholds, no threshold is NaN and
 * there are at most COMPACT_MAX_FEAT features (the ranks of a sub-block of
 * rows live on the stack); otherwise the 8-byte nodes run. */
/* COMPACT_RANKS: rank slots on the stack (one group of FAST_LANES rows at
 * COMPACT_MAX_FEAT features); a sub-block holds about COMPACT_SUB_SLOTS (16 KB
 * of ranks, which stay in L1 beside a chunk of trees). */
enum { COMPACT_MAX_FEAT = 1024, COMPACT_MAX_THR = 65534, COMPACT_RANKS = 2 * COMPACT_MAX_FEAT * FAST_LANES,
       COMPACT_SUB_SLOTS = 8192 };
_Static_assert(2 * COMPACT_MAX_FEAT * FAST_LANES * 2 <= 65536, "a rank slot's byte offset fits 16 bits");

static int float_cmp(const void *a, const void *b) {
    float x = *(const float *)a, y = *(const float *)b;
    return x < y ? -1 : x > y ? 1 : 0;
}

/* Index of v in the sorted list t[0..m) (v is present). */
static int thr_find(const float *t, int m, float v) {
    int lo = 0, hi = m - 1;
    while (lo < hi) {
        int mid = (lo + hi) / 2;
        if (t[mid] < v) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

/* Adds fs->cnodes when the forest qualifies (only allocation failure is an error). */
static inf_status compact_compile(inf__arena *arena, const ml_forest *f, ml_fast *fs) {
    fs->cnodes = NULL;
    if (f->n_features > COMPACT_MAX_FEAT) return INF_OK;
    int nf = (int)(f->n_features > 0 ? f->n_features : 1);
    size_t n = (size_t)fs->n_trees * (size_t)fs->n_inner;
    if (n == 0) return INF_OK; /* single-leaf trees: nothing to compact */
    for (size_t i = 0; i < n; i++)
        if (isnan(fs->nodes[i].threshold)) return INF_OK;
    int32_t *off = inf__arena_alloc(arena, ((size_t)nf + 1) * sizeof *off);
    int32_t *fill = inf__calloc((size_t)nf + 1, sizeof *fill);
    float *thr = inf__malloc((n + 1) * sizeof *thr);
    if (!off || !fill || !thr) goto nomem;
    for (size_t i = 0; i < n; i++) fill[(fs->nodes[i].feature & 0x7fffffffu)]++;
    off[0] = 0;
    for (int j = 0; j < nf; j++) off[j + 1] = off[j] + fill[j];
    memset(fill, 0, ((size_t)nf + 1) * sizeof *fill);
    for (size_t i = 0; i < n; i++) {
        uint32_t j = fs->nodes[i].feature & 0x7fffffffu;
        thr[off[j] + fill[j]++] = fs->nodes[i].threshold;
    }
    /* sort and deduplicate each feature's list in place, compacting the lists */
    int32_t out = 0;
    for (int j = 0; j < nf; j++) {
        int32_t b = off[j], e = off[j + 1];
        qsort(thr + b, (size_t)(e - b), sizeof *thr, float_cmp);
        off[j] = out;
        for (int32_t i = b; i < e; i++)
            if (i == b || thr[i] != thr[out - 1]) thr[out++] = thr[i];
        if (out - off[j] > COMPACT_MAX_THR) {
            inf__free(fill);
            inf__free(thr);
            return INF_OK;
        }
    }
    off[nf] = out;
    float *cthr = inf__arena_alloc(arena, ((size_t)out + 1) * sizeof *cthr);
    uint32_t *cn = inf__arena_alloc(arena, (n + 1) * sizeof *cn);
    if (!cthr || !cn) goto nomem;
    memcpy(cthr, thr, (size_t)out * sizeof *cthr);
    for (size_t i = 0; i < n; i++) {
        uint32_t j = fs->nodes[i].feature & 0x7fffffffu, mt = fs->nodes[i].feature >> 31;
        uint32_t k = (uint32_t)thr_find(cthr + off[j], off[j + 1] - off[j], fs->nodes[i].threshold);
        cn[i] = k << 16 | (2 * j + mt) * FAST_LANES * (uint32_t)sizeof(uint16_t);
    }
    inf__free(fill);
    inf__free(thr);
    fs->n_feat = nf;
    fs->coff = off;
    fs->cthr = cthr;
    fs->cnodes = cn;
    return INF_OK;
nomem:
    inf__free(fill);
    inf__free(thr);
    return INF_ENOMEM;
}

inf_status inf__ml_forest_build(const inf__node *node, inf__arena *arena, const tree_attrs *a, ml_forest *f,
                                inf_error *err) {
    inf_status st = compile_forest(node, arena, a, f, err);
    return st == INF_OK ? fast_compile(node, arena, f, err) : st;
}

static inf_status read_base(const inf__node *node, inf__arena *arena, ml_forest *f, inf_error *err) {
    inf_status st;
    f->base = ml_attr_doubles(node, arena, "base_values", &f->n_base, &st, err);
    if (st != INF_OK) return st;
    /* a binary classifier may give one base value (for class 0's margin, as ORT) */
    bool one_ok = f->classifier && f->n_targets == 2 && f->n_base == 1;
    if (f->n_base != 0 && f->n_base != f->n_targets && !one_ok)
        return inf__node_error(node, err, INF_EMODEL, "attribute base_values has %d values, expected 0 or %d", f->n_base,
                               f->n_targets);
    return INF_OK;
}

static inf_status classifier_init(inf__node *node, inf__arena *arena, inf_error *err) {
    ml_forest *f = inf__op_params(arena, ml_forest);
    if (!f) return INF_ENOMEM;
    f->classifier = true;
    int n_int = 0;
    f->labels_i64 = inf__attr_ints(node, "classlabels_int64s", &n_int);
    const inf__attr *ls = inf__node_attr(node, "classlabels_strings");
    if (ls && ls->type == INF_ATTR_STRINGS && ls->n > 0) {
        if (n_int > 0)
            return inf__node_error(node, err, INF_EMODEL,
                                   "attributes classlabels_int64s and classlabels_strings are both set");
        f->labels_str = ls->strings;
        f->labels_i64 = NULL;
        f->n_targets = ls->n;
    } else {
        f->n_targets = n_int;
    }
    if (f->n_targets == 0)
        return inf__node_error(node, err, INF_EMODEL, "one of classlabels_int64s or classlabels_strings must be set");
    inf_status st;
    if ((st = ml_parse_post(node, err, &f->post)) != INF_OK) return st;
    if ((st = read_base(node, arena, f, err)) != INF_OK) return st;
    tree_attrs a = {.wp = "class"};
    if ((st = read_node_attrs(node, arena, &a, err)) != INF_OK) return st;
    if ((st = read_weight_attrs(node, arena, &a, err)) != INF_OK) return st;
    if ((st = inf__ml_forest_build(node, arena, &a, f, err)) != INF_OK) return st;
    f->all_positive = true;
    bool one_class = a.n_weights > 0;
    for (int k = 0; k < a.n_weights; k++) {
        if (a.w_values[k] < 0) f->all_positive = false;
        if (a.w_ids[k] != a.w_ids[0]) one_class = false;
    }
    f->binary_case = f->n_targets == 2 && one_class;
    node->params = f;
    return INF_OK;
}

static inf_status regressor_init(inf__node *node, inf__arena *arena, inf_error *err) {
    ml_forest *f = inf__op_params(arena, ml_forest);
    if (!f) return INF_ENOMEM;
    int64_t nt = inf__attr_int(node, "n_targets", 1);
    if (nt < 1 || nt > INT32_MAX)
        return inf__node_error(node, err, INF_EMODEL, "attribute n_targets = %lld must be >= 1", (long long)nt);
    f->n_targets = (int)nt;
    const char *agg = inf__attr_string(node, "aggregate_function", "SUM");
    static const char *const aggs[] = {"SUM", "AVERAGE", "MIN", "MAX"};
    f->aggregate = -1;
    for (int i = 0; i < 4; i++)
        if (!strcmp(agg, aggs[i])) f->aggregate = i;
    if (f->aggregate < 0)
        return inf__node_error(node, err, INF_EMODEL,
                               "attribute aggregate_function: unknown value '%s' (expected SUM, AVERAGE, MIN or MAX)", agg);
    inf_status st;
    if ((st = ml_parse_post(node, err, &f->post)) != INF_OK) return st;
    if ((st = read_base(node, arena, f, err)) != INF_OK) return st;
    tree_attrs a = {.wp = "target"};
    if ((st = read_node_attrs(node, arena, &a, err)) != INF_OK) return st;
    if ((st = read_weight_attrs(node, arena, &a, err)) != INF_OK) return st;
    if ((st = inf__ml_forest_build(node, arena, &a, f, err)) != INF_OK) return st;
    node->params = f;
    return INF_OK;
}

/* ---------------------------------------------------------------- evaluate */

static inline bool branch_f32(int mode, float v, float t) {
    switch (mode) {
    case MODE_LEQ: return v <= t;
    case MODE_LT: return v < t;
    case MODE_GTE: return v >= t;
    case MODE_GT: return v > t;
    case MODE_EQ: return v == t;
    default: return v != t;
    }
}

static inline bool branch_f64(int mode, double v, double t) {
    switch (mode) {
    case MODE_LEQ: return v <= t;
    case MODE_LT: return v < t;
    case MODE_GTE: return v >= t;
    case MODE_GT: return v > t;
    case MODE_EQ: return v == t;
    default: return v != t;
    }
}

static inline const ml_tree_node *leaf_f32(const ml_tree_node *nodes, int32_t i, const float *x) {
    for (;;) {
        const ml_tree_node *nd = &nodes[i];
        if (nd->mode == MODE_LEAF) return nd;
        float v = x[nd->feature];
        bool go = branch_f32(nd->mode, v, nd->threshold) || (nd->missing_true && isnan(v));
        i = go ? i + 1 : nd->false_next;
    }
}

static inline const ml_tree_node *leaf_f64(const ml_tree_node *nodes, const double *thr, int32_t i,
                                           const double *x) {
    for (;;) {
        const ml_tree_node *nd = &nodes[i];
        if (nd->mode == MODE_LEAF) return nd;
        double v = x[nd->feature];
        bool go = branch_f64(nd->mode, v, thr[i]) || (nd->missing_true && isnan(v));
        i = go ? i + 1 : nd->false_next;
    }
}

typedef struct forest_task {
    const ml_forest *f;
    int64_t n_cols;
    const float *x32;     /* float32 rows, or */
    const double *x64;    /* float64 rows */
    bool round32;         /* accumulate in float32 */
    double *acc;          /* [N, C] scores */
    uint8_t *has;         /* [N, C] */
    float *z;             /* [N, C] output scores */
    double *z64;          /* TreeEnsemble with float64 X: [N, C] output, else NULL */
    int64_t *label;       /* classifier: label value (int labels) or index (string labels) */
} forest_task;

static inline double round_to(bool f32, double v) { return f32 ? (double)(float)v : v; }

static void add_leaf(const forest_task *t, const ml_tree_node *leaf, double *acc, uint8_t *has) {
    const ml_weight *w = &t->f->weights[leaf->false_next];
    for (int32_t k = 0; k < leaf->feature; k++) {
        int c = w[k].target;
        double v = round_to(t->round32, w[k].value);
        switch (t->f->aggregate) {
        case AGG_MIN: acc[c] = has[c] && acc[c] <= v ? acc[c] : v; break;
        case AGG_MAX: acc[c] = has[c] && acc[c] >= v ? acc[c] : v; break;
        default: acc[c] = round_to(t->round32, acc[c] + v); break;
        }
        has[c] = 1;
    }
}

static void finalize_classifier(const forest_task *t, double *s, uint8_t *h, float *z, int64_t *label) {
    const ml_forest *f = t->f;
    int c = f->n_targets;
    bool r = t->round32;
    if (c != 2) {
        for (int k = 0; k < f->n_base; k++) {
            s[k] = h[k] ? round_to(r, s[k] + round_to(r, f->base[k])) : round_to(r, f->base[k]);
            h[k] = 1;
        }
        int best = -1;
        for (int k = 0; k < c; k++)
            if (h[k] && (best < 0 || s[k] > s[best])) best = k;
        if (best < 0) best = 0;
        *label = f->labels_i64 ? f->labels_i64[best] : best;
        ml_post_apply(f->post, s, c);
        for (int k = 0; k < c; k++) z[k] = (float)s[k];
        return;
    }
    int n = 2, mode = -1;
    if (f->n_base == 2) {
        if (h[1]) {
            s[1] = round_to(r, f->base[1] + s[0]); /* as ORT: base_values[0] unused */
            s[0] = -s[1];
            h[1] = 1;
        } else {
            s[1] = round_to(r, s[1] + f->base[1]);
            s[0] = round_to(r, s[0] + f->base[0]);
        }
    } else if (f->n_base == 1) {
        s[0] = round_to(r, s[0] + round_to(r, f->base[0]));
        if (!h[1]) n = 1;
    } else {
        mode = 3;
        if (!h[1]) n = 1;
    }
    double pos = n == 2 && h[1] ? s[1] : h[0] ? s[0] : 0;
    int which; /* 1 positive, 0 negative */
    if (f->binary_case) {
        if (f->all_positive) {
            which = pos > 0.5;
            mode = which ? 0 : 1;
        } else {
            which = pos > 0;
            mode = which ? 2 : 3;
        }
        *label = f->labels_i64 ? f->labels_i64[which] : which;
    } else {
        which = pos > 0;
        *label = which; /* ORT: positive label 1, negative 0 (an index for string labels) */
    }
    if (n == 2) {
        ml_post_apply(f->post, s, 2);
        z[0] = (float)s[0];
        z[1] = (float)s[1];
    } else {
        z[0] = z[1] = 0;
        ml_write_binary(f->post, mode, s[0], z);
    }
}

static void finalize_regressor(const forest_task *t, double *s, uint8_t *h, float *z) {
    const ml_forest *f = t->f;
    int c = f->n_targets;
    bool r = t->round32;
    for (int k = 0; k < c; k++) {
        double v = h[k] ? s[k] : 0;
        if (f->aggregate == AGG_AVERAGE) v = round_to(r, v / f->n_trees);
        if (f->n_base) v = round_to(r, v + round_to(r, f->base[k]));
        s[k] = v;
    }
    if (c == 1) { /* as ORT: a single target only knows PROBIT */
        if (f->post == ML_POST_PROBIT) s[0] = ml_probit(s[0]);
        z[0] = (float)s[0];
        return;
    }
    ml_post_apply(f->post, s, c);
    for (int k = 0; k < c; k++) z[k] = (float)s[k];
}

/* ---- fast path (ml_fast): complete trees, branch-free, lanes interleaved */

static inline uint32_t fast_go_false(float v, ml_fast_node q, int leq) {
    uint32_t cmp = leq ? !(v <= q.threshold) : !(v < q.threshold);
    uint32_t nan_true = (q.feature >> 31) & (uint32_t)(v != v);
    return cmp & (nan_true ^ 1u);
}

/* FAST_LANES rows (x: row-major, ld floats apart) through trees [t0, t1). */
static inline __attribute__((always_inline)) void fast_rows(const ml_fast *fs, int t0, int t1, const float *x,
                                                             int64_t ld, float *acc, int c, int leq, const int D) {
    const int inner = fs->n_inner;
    for (int t = t0; t < t1; t++) {
        const ml_fast_node *nd = fs->nodes + (size_t)t * inner;
        const float *lv = fs->leaves + (size_t)t * fs->n_leaves - inner;
        uint32_t i[FAST_LANES] = {0};
        for (int d = 0; d < D; d++) {
#pragma GCC unroll 8
            for (int k = 0; k < FAST_LANES; k++) {
                ml_fast_node q = nd[i[k]];
                float v = x[k * ld + (q.feature & 0x7fffffffu)];
                i[k] = 2 * i[k] + 1 + fast_go_false(v, q, leq);
            }
        }
        int32_t tg = fs->target[t];
        for (int k = 0; k < FAST_LANES; k++) acc[k * c + tg] += lv[i[k]];
    }
}

/* One row, FAST_LANES trees at a time (the batch-1 path); sums in tree order. */
static inline void fast_one_row(const ml_fast *fs, const float *x, float *acc, int leq) {
    const int D = fs->depth, inner = fs->n_inner;
    int t = 0;
    for (; t + FAST_LANES <= fs->n_trees; t += FAST_LANES) {
        const ml_fast_node *nd = fs->nodes + (size_t)t * inner;
        uint32_t i[FAST_LANES] = {0};
        for (int d = 0; d < D; d++) {
#pragma GCC unroll 8
            for (int k = 0; k < FAST_LANES; k++) {
                ml_fast_node q = nd[(size_t)k * inner + i[k]];
                float v = x[q.feature & 0x7fffffffu];
                i[k] = 2 * i[k] + 1 + fast_go_false(v, q, leq);
            }
        }
        for (int k = 0; k < FAST_LANES; k++)
            acc[fs->target[t + k]] += fs->leaves[(size_t)(t + k) * fs->n_leaves + i[k] - inner];
    }
    for (; t < fs->n_trees; t++) {
        const ml_fast_node *nd = fs->nodes + (size_t)t * inner;
        uint32_t i = 0;
        for (int d = 0; d < D; d++) {
            ml_fast_node q = nd[i];
            i = 2 * i + 1 + fast_go_false(x[q.feature & 0x7fffffffu], q, leq);
        }
        acc[fs->target[t]] += fs->leaves[(size_t)t * fs->n_leaves + i - inner];
    }
}

/* ---- compact path: the rows' ranks, then the 4-byte nodes (see "compact nodes") */

/* #{T in t[0..m) : T < v[q]} (leq) or #{T : T <= v[q]} (LT) for W values
 * at once (0 for a NaN v[q]).  Branch-free: the loop count depends on m
 * only, the halving is a select; the W searches share the loop and overlap
 * their load-compare-select chains. */
static inline __attribute__((always_inline)) void rank_of(const float *t, uint32_t m, const float *v, uint32_t *k,
                                                          const int W, const int leq) {
    const float *b[4];
    for (int q = 0; q < W; q++) b[q] = t;
    if (m == 0) {
        for (int q = 0; q < W; q++) k[q] = 0;
        return;
    }
    while (m > 1) {
        uint32_t h = m / 2;
        for (int q = 0; q < W; q++) b[q] = (leq ? b[q][h] < v[q] : b[q][h] <= v[q]) ? b[q] + h : b[q];
        m -= h;
    }
    for (int q = 0; q < W; q++) k[q] = (uint32_t)(b[q] - t) + (leq ? *b[q] < v[q] : *b[q] <= v[q]);
}

/* The rank slots of W rows from row r (x: row r's features) into rk. */
static inline __attribute__((always_inline)) void ranks_rows(const ml_fast *fs, const float *x, int64_t ld, int r,
                                                             uint16_t *rk, const int W, const int leq) {
    const size_t group = (size_t)2 * fs->n_feat * FAST_LANES;
    for (int j = 0; j < fs->n_feat; j++) {
        float v[4];
        uint32_t k[4];
        for (int q = 0; q < W; q++) v[q] = x[q * ld + j];
        rank_of(fs->cthr + fs->coff[j], (uint32_t)(fs->coff[j + 1] - fs->coff[j]), v, k, W, leq);
        for (int q = 0; q < W; q++) {
            uint16_t *o = rk + (size_t)((r + q) / FAST_LANES) * group + (r + q) % FAST_LANES;
            o[2 * j * FAST_LANES] = (uint16_t)(k[q] | (v[q] != v[q] ? 0xffffu : 0));
            o[(2 * j + 1) * FAST_LANES] = (uint16_t)k[q];
        }
    }
}

/* Ranks of `n` rows (x: ld floats apart), in groups of FAST_LANES rows:
 * row r's slots 2j (NaN -> 0xffff) and 2j + 1 (NaN -> 0) of feature j are
 * at rk[(r / FAST_LANES * 2 * n_feat + 2j (+1)) * FAST_LANES + r % FAST_LANES]. */
static inline __attribute__((always_inline)) void ranks_of(const ml_fast *fs, const float *x, int64_t ld, int n,
                                                           uint16_t *rk, const int leq) {
    int r = 0;
    for (; r + 4 <= n; r += 4) ranks_rows(fs, x + r * ld, ld, r, rk, 4, leq);
    for (; r < n; r++) ranks_rows(fs, x + r * ld, ld, r, rk, 1, leq);
}

static void compact_ranks(const ml_fast *fs, const float *x, int64_t ld, int n, uint16_t *rk) {
    if (fs->leq) ranks_of(fs, x, ld, n, rk, 1);
    else ranks_of(fs, x, ld, n, rk, 0);
}

/* The node word q's rank slot for lane k (rk: a group's ranks) goes false? */
static inline uint32_t compact_go_false(const uint16_t *rk, int k, uint32_t q) {
    uint32_t r = *(const uint16_t *)((const char *)(rk + k) + (q & 0xffffu));
    return (r << 16) > q;
}

/* The leaf (index - inner) of FAST_LANES rows (their ranks) in one tree. */
static inline __attribute__((always_inline)) void compact_walk(const uint32_t *nd, const uint16_t *rk, uint32_t *i,
                                                                const int D) {
    for (int k = 0; k < FAST_LANES; k++) i[k] = 0;
    for (int d = 0; d < D; d++) {
#pragma GCC unroll 8
        for (int k = 0; k < FAST_LANES; k++) i[k] = 2 * i[k] + 1 + compact_go_false(rk, k, nd[i[k]]);
    }
}

/* A group of FAST_LANES rows (their ranks) through trees [t0, t1).  When
 * every tree votes for one target the rows' sums stay in registers across
 * the trees (the same adds in the same order: bit-identical); a
 * store-to-load chain through acc was a fifth of t300d8's time. */
static inline __attribute__((always_inline)) void compact_rows(const ml_fast *fs, int t0, int t1, const uint16_t *rk,
                                                                float *acc, int c, const int D) {
    const int inner = fs->n_inner;
    uint32_t i[FAST_LANES];
    if (fs->one_target >= 0) {
        float s[FAST_LANES];
        acc += fs->one_target;
        for (int k = 0; k < FAST_LANES; k++) s[k] = acc[k * c];
        for (int t = t0; t < t1; t++) {
            compact_walk(fs->cnodes + (size_t)t * inner, rk, i, D);
            const float *lv = fs->leaves + (size_t)t * fs->n_leaves - inner;
            for (int k = 0; k < FAST_LANES; k++) s[k] += lv[i[k]];
        }
        for (int k = 0; k < FAST_LANES; k++) acc[k * c] = s[k];
        return;
    }
    for (int t = t0; t < t1; t++) {
        compact_walk(fs->cnodes + (size_t)t * inner, rk, i, D);
        const float *lv = fs->leaves + (size_t)t * fs->n_leaves - inner;
        int32_t tg = fs->target[t];
        for (int k = 0; k < FAST_LANES; k++) acc[k * c + tg] += lv[i[k]];
    }
}

/* Trees t .. t + FAST_LANES - 1 for one row (lane 0 of its ranks): leaf
 * indices into i.  With D a constant, tree k's nodes are at a constant
 * offset k * (2^D - 1) from the first tree's. */
static inline __attribute__((always_inline)) void compact_walk8(const ml_fast *fs, int t, const uint16_t *rk,
                                                                 uint32_t *i, const int D) {
    const int inner = (1 << D) - 1;
    const uint32_t *nd = fs->cnodes + (size_t)t * inner;
    for (int k = 0; k < FAST_LANES; k++) i[k] = 0;
    for (int d = 0; d < D; d++) {
#pragma GCC unroll 8
        for (int k = 0; k < FAST_LANES; k++) i[k] = 2 * i[k] + 1 + compact_go_false(rk, 0, nd[k * inner + i[k]]);
    }
}

/* One row (lane 0 of its group's ranks), FAST_LANES trees at a time; sums
 * in tree order (in a register when every tree votes for one target). */
static inline __attribute__((always_inline)) void compact_one_row_d(const ml_fast *fs, const uint16_t *rk, float *acc,
                                                                     const int D) {
    const int inner = (1 << D) - 1, nl = 1 << D;
    const float *lv = fs->leaves - inner;
    uint32_t i[FAST_LANES];
    int t = 0;
    if (fs->one_target >= 0) {
        float s = acc[fs->one_target];
        for (; t + FAST_LANES <= fs->n_trees; t += FAST_LANES) {
            compact_walk8(fs, t, rk, i, D);
            for (int k = 0; k < FAST_LANES; k++) s += lv[(size_t)(t + k) * nl + i[k]];
        }
        acc[fs->one_target] = s;
    } else {
        for (; t + FAST_LANES <= fs->n_trees; t += FAST_LANES) {
            compact_walk8(fs, t, rk, i, D);
            for (int k = 0; k < FAST_LANES; k++) acc[fs->target[t + k]] += lv[(size_t)(t + k) * nl + i[k]];
        }
    }
    for (; t < fs->n_trees; t++) {
        const uint32_t *nd = fs->cnodes + (size_t)t * inner;
        uint32_t j = 0;
        for (int d = 0; d < D; d++) j = 2 * j + 1 + compact_go_false(rk, 0, nd[j]);
        acc[fs->target[t]] += lv[(size_t)t * nl + j];
    }
}

static void compact_one_row(const ml_fast *fs, const uint16_t *rk, float *acc) {
    switch (fs->depth) { /* fast_compile: 1 <= depth <= FAST_MAX_DEPTH when there are inner nodes */
    case 1: compact_one_row_d(fs, rk, acc, 1); break;
    case 2: compact_one_row_d(fs, rk, acc, 2); break;
    case 3: compact_one_row_d(fs, rk, acc, 3); break;
    case 4: compact_one_row_d(fs, rk, acc, 4); break;
    case 5: compact_one_row_d(fs, rk, acc, 5); break;
    case 6: compact_one_row_d(fs, rk, acc, 6); break;
    case 7: compact_one_row_d(fs, rk, acc, 7); break;
    case 8: compact_one_row_d(fs, rk, acc, 8); break;
    case 9: compact_one_row_d(fs, rk, acc, 9); break;
    default: compact_one_row_d(fs, rk, acc, fs->depth); break;
    }
}

#define COMPACT_CHUNK_BYTES (16u << 10)

/* n rows (x, acc as in fast_block) through the compact nodes, in sub-blocks
 * whose ranks fit COMPACT_RANKS. */
static void compact_block(const forest_task *t, const float *x, int n, float *acc) {
    const ml_fast *fs = t->f->fast;
    int c = t->f->n_targets, nf = fs->n_feat;
    uint16_t rk[COMPACT_RANKS];
    int sub = COMPACT_SUB_SLOTS / (2 * nf);
    sub = sub < FAST_LANES ? FAST_LANES : sub - sub % FAST_LANES; /* whole groups; one fits COMPACT_RANKS */
    int chunk = (int)(COMPACT_CHUNK_BYTES / ((size_t)fs->n_inner * sizeof(uint32_t) + (size_t)fs->n_leaves * sizeof(float)));
    if (chunk < 1) chunk = 1;
    for (int s0 = 0; s0 < n; s0 += sub) {
        int m = n - s0 < sub ? n - s0 : sub, r = 0;
        compact_ranks(fs, x + s0 * t->n_cols, t->n_cols, m, rk);
        float *a = acc + (size_t)s0 * c;
#define COMPACT_ROWS(D)                                                                \
    for (int t0 = 0, t1; t0 < fs->n_trees; t0 = t1) {                                  \
        t1 = t0 + chunk < fs->n_trees ? t0 + chunk : fs->n_trees;                      \
        for (r = 0; r + FAST_LANES <= m; r += FAST_LANES)                              \
            compact_rows(fs, t0, t1, rk + (size_t)r * 2 * nf, a + r * c, c, D);        \
    }
        switch (fs->depth) {
        case 1: COMPACT_ROWS(1); break;
        case 2: COMPACT_ROWS(2); break;
        case 3: COMPACT_ROWS(3); break;
        case 4: COMPACT_ROWS(4); break;
        case 5: COMPACT_ROWS(5); break;
        case 6: COMPACT_ROWS(6); break;
        case 7: COMPACT_ROWS(7); break;
        case 8: COMPACT_ROWS(8); break;
        case 9: COMPACT_ROWS(9); break;
        default: COMPACT_ROWS(fs->depth); break;
        }
#undef COMPACT_ROWS
        for (; r < m; r++)
            compact_one_row(fs, rk + (size_t)(r / FAST_LANES) * 2 * nf * FAST_LANES + r % FAST_LANES, a + r * c);
    }
}

enum { FAST_MAX_ACC = 4096, FAST_BLOCK = 256 }; /* floats of block accumulators on the stack; rows per block */
#define FAST_CHUNK_BYTES (24u << 10)

/* Scores rows [b0, b1) (at most ROW_BLOCK) into t->acc / t->has. */
static void fast_block(const forest_task *t, int64_t b0, int64_t b1) {
    const ml_fast *fs = t->f->fast;
    int c = t->f->n_targets;
    float acc[FAST_MAX_ACC];
    int n = (int)(b1 - b0);
    memset(acc, 0, (size_t)n * (size_t)c * sizeof(float));
    const float *x = t->x32 + b0 * t->n_cols;
    int r = 0;
    if (fs->cnodes) {
        compact_block(t, x, n, acc);
        goto out;
    }
    /* trees in chunks of about FAST_CHUNK_BYTES: a chunk stays in L1 while every row of the block runs through it */
    int chunk = (int)(FAST_CHUNK_BYTES / ((size_t)fs->n_inner * sizeof(ml_fast_node) + (size_t)fs->n_leaves * sizeof(float)));
    if (chunk < 1) chunk = 1;
    /* the depth and the mode as constants: the level loop unrolls */
#define FAST_ROWS(leq, D)                                                                          \
    for (int t0 = 0, t1; t0 < fs->n_trees; t0 = t1) {                                                \
        t1 = t0 + chunk < fs->n_trees ? t0 + chunk : fs->n_trees;                                    \
        for (r = 0; r + FAST_LANES <= n; r += FAST_LANES)                                            \
            fast_rows(fs, t0, t1, x + r * t->n_cols, t->n_cols, acc + r * c, c, leq, D);              \
    }
#define FAST_DEPTHS(leq)                                                                                    \
    switch (fs->depth) {                                                                                    \
    case 1: FAST_ROWS(leq, 1); break;                                                                       \
    case 2: FAST_ROWS(leq, 2); break;                                                                       \
    case 3: FAST_ROWS(leq, 3); break;                                                                       \
    case 4: FAST_ROWS(leq, 4); break;                                                                       \
    case 5: FAST_ROWS(leq, 5); break;                                                                       \
    case 6: FAST_ROWS(leq, 6); break;                                                                       \
    case 7: FAST_ROWS(leq, 7); break;                                                                       \
    case 8: FAST_ROWS(leq, 8); break;                                                                       \
    case 9: FAST_ROWS(leq, 9); break;                                                                       \
    default: FAST_ROWS(leq, fs->depth); break;                                                              \
    }
    if (fs->leq) {
        FAST_DEPTHS(1)
        for (; r < n; r++) fast_one_row(fs, x + r * t->n_cols, acc + r * c, 1);
    } else {
        FAST_DEPTHS(0)
        for (; r < n; r++) fast_one_row(fs, x + r * t->n_cols, acc + r * c, 0);
    }
#undef FAST_DEPTHS
#undef FAST_ROWS
out:
    for (int k = 0; k < n * c; k++) {
        t->acc[b0 * c + k] = acc[k];
        t->has[b0 * c + k] = fs->has[k % c];
    }
}

enum { ROW_BLOCK = 64 };

/* Whether rows take the fast path, and the rows of one block. */
static bool forest_fast(const forest_task *t) {
    return t->x32 && t->f->fast && (int64_t)t->f->n_targets * FAST_LANES <= FAST_MAX_ACC;
}

static int64_t forest_block(const forest_task *t) {
    int64_t c = t->f->n_targets;
    return !forest_fast(t) ? ROW_BLOCK : FAST_MAX_ACC / c < FAST_BLOCK ? FAST_MAX_ACC / c : FAST_BLOCK;
}

static void forest_rows(const forest_task *t, int64_t begin, int64_t end) {
    const ml_forest *f = t->f;
    int64_t c = f->n_targets;
    bool fast = forest_fast(t);
    int64_t block = forest_block(t);
    for (int64_t b0 = begin, b1; b0 < end; b0 = b1) {
        b1 = b0 + block < end ? b0 + block : end;
        if (fast) {
            fast_block(t, b0, b1);
            goto finalize;
        }
        memset(t->acc + b0 * c, 0, (size_t)((b1 - b0) * c) * sizeof(double));
        memset(t->has + b0 * c, 0, (size_t)((b1 - b0) * c));
        for (int tr = 0; tr < f->n_trees; tr++) {
            for (int64_t row = b0; row < b1; row++) {
                const ml_tree_node *leaf =
                    t->x32 ? leaf_f32(f->nodes, f->roots[tr], t->x32 + row * t->n_cols)
                           : leaf_f64(f->nodes, f->thr64, f->roots[tr], t->x64 + row * t->n_cols);
                add_leaf(t, leaf, t->acc + row * c, t->has + row * c);
            }
        }
    finalize:
        for (int64_t row = b0; row < b1; row++) {
            if (f->classifier)
                finalize_classifier(t, t->acc + row * c, t->has + row * c, t->z + row * c, &t->label[row]);
            else
                finalize_regressor(t, t->acc + row * c, t->has + row * c, t->z + row * c);
            if (t->z64) /* TreeEnsemble on float64: the scores as computed, in double */
                memcpy(t->z64 + row * c, t->acc + row * c, (size_t)c * sizeof(double));
        }
    }
}

/* Threads pull blocks of rows from one counter: a thread that falls behind
 * (the machine's other load, a late wake-up) leaves at most one block
 * (FAST_BLOCK rows, a few ms) to the end, where inf__pool_range's chunks of
 * n / (4 * threads) rows could leave an eighth of the work to one thread. */
typedef struct forest_job {
    const forest_task *t;
    int64_t n, block;
    _Atomic int64_t next;
} forest_job;

static void forest_pull(void *arg, int64_t begin, int64_t end) {
    forest_job *j = arg;
    (void)begin, (void)end;
    for (int64_t b0; (b0 = atomic_fetch_add(&j->next, j->block)) < j->n;)
        forest_rows(j->t, b0, b0 + j->block < j->n ? b0 + j->block : j->n);
}

static void forest_run_rows(inf__pool *pool, const forest_task *t, int64_t n) {
    forest_job job = {.t = t, .n = n, .block = forest_block(t)};
    atomic_init(&job.next, 0);
    int threads = inf__pool_size(pool);
    if (threads == 1 || n <= job.block) forest_rows(t, 0, n);
    else inf__pool_range(pool, threads, 1, forest_pull, &job);
}

inf_status inf__ml_forest_run(inf__kernel_ctx *ctx) {
    const ml_forest *f = ctx->node->params;
    const inf_tensor *x = ctx->in[0];
    int64_t n = 0, cols = 0;
    inf_status st = ml_input_matrix(ctx, x, &n, &cols);
    if (st != INF_OK) return st;
    if (cols < f->n_features)
        return inf__kernel_error(ctx, INF_ESHAPE, "input X: the trees read feature %lld, X has %lld features",
                                 (long long)f->n_features - 1, (long long)cols);
    int64_t c = f->n_targets;
    forest_task t = {.f = f, .n_cols = cols, .round32 = x->dtype != INF_DTYPE_F64};
    /* one scratch block: scores, flags, converted rows, labels */
    size_t acc_b = (size_t)(n * c) * sizeof(double), has_b = ((size_t)(n * c) + 7) & ~(size_t)7;
    size_t conv_b = x->dtype == INF_DTYPE_I64 || x->dtype == INF_DTYPE_I32 ? (size_t)(n * cols) * sizeof(double) : 0;
    size_t lab_b = f->classifier ? (size_t)n * sizeof(int64_t) : 0;
    bool out64 = f->v5 && x->dtype == INF_DTYPE_F64; /* TreeEnsemble: Y has X's type */
    if (f->v5 && x->dtype != INF_DTYPE_F32 && x->dtype != INF_DTYPE_F64)
        return inf__kernel_error(ctx, INF_ETYPE, "input X: TreeEnsemble takes float or double, got %s",
                                 inf_dtype_name(x->dtype));
    size_t z32_b = out64 ? (size_t)(n * c) * sizeof(float) : 0;
    uint8_t *scratch = inf__kernel_scratch(ctx, acc_b + has_b + conv_b + lab_b + z32_b + 64);
    if (!scratch) return INF_ENOMEM;
    t.acc = (double *)scratch;
    t.has = scratch + acc_b;
    t.label = (int64_t *)(scratch + acc_b + has_b + conv_b);
    if (x->dtype == INF_DTYPE_F32) {
        t.x32 = x->data;
    } else if (x->dtype == INF_DTYPE_F64) {
        t.x64 = x->data;
    } else {
        double *conv = (double *)(scratch + acc_b + has_b);
        for (int64_t i = 0; i < n * cols; i++) conv[i] = ml_get(x, i);
        t.x64 = conv;
    }
    inf_tensor *y, *z;
    int64_t zdims[2] = {n, c};
    if (f->classifier) {
        int64_t ydims[1] = {n};
        if ((st = inf__kernel_output(ctx, 0, f->labels_str ? INF_DTYPE_STRING : INF_DTYPE_I64, 1, ydims, &y)) != INF_OK ||
            (st = inf__kernel_output(ctx, 1, INF_DTYPE_F32, 2, zdims, &z)) != INF_OK)
            return st;
    } else {
        if ((st = inf__kernel_output(ctx, 0, out64 ? INF_DTYPE_F64 : INF_DTYPE_F32, 2, zdims, &z)) != INF_OK) return st;
        y = NULL;
    }
    t.z = z->data;
    if (out64) {
        t.z64 = z->data;
        t.z = (float *)(scratch + acc_b + has_b + conv_b + lab_b);
    }
    /* thresholds of float64 models are exact only in thr64; float32 X compares in float */
    forest_run_rows(ctx->pool, &t, n);
    if (!f->classifier) return INF_OK;
    if (!f->labels_str) {
        memcpy(y->data, t.label, (size_t)n * sizeof(int64_t));
        return INF_OK;
    }
    for (int64_t i = 0; i < n; i++) {
        const char *s = f->labels_str[t.label[i]];
        if ((st = inf_tensor_set_string(y, i, s, strlen(s))) != INF_OK)
            return inf__kernel_error(ctx, st, "out of memory writing the labels");
    }
    return INF_OK;
}

const inf__op_impl op_ml_tree_classifier = {classifier_init, inf__ml_forest_run};
const inf__op_impl op_ml_tree_regressor = {regressor_init, inf__ml_forest_run};
