/*
 * ml_tree_v5.c -- ai.onnx.ml TreeEnsemble (opset 5): init rewrites its
 * attributes into the opset-3 regressor lists and builds the same compiled
 * forest as ml_tree.c, whose kernel then runs it.
 */
#include <stdlib.h>
#include <string.h>
#include "ops/ref/ml_tree.h"

/* ---------------------------------------------------------------- opset 5
 * ai.onnx.ml TreeEnsemble (opset 5): interior nodes and leaves in separate
 * lists; a child is a node index or, when nodes_trueleafs/falseleafs says
 * so, a leaf index; trees start at tree_roots; nodes_modes is a uint8
 * tensor (0 LEQ, 1 LT, 2 GTE, 3 GT, 4 EQ, 5 NEQ, 6 MEMBER); nodes_splits,
 * leaf_weights and membership_values are tensors of X's type; aggregate and
 * post transform are ints.  init rewrites it into the opset-3 regressor
 * lists (as ONNX Runtime does): tree = position in tree_roots, node id =
 * its index (leaf j's copy under parent p: a fresh id), a BRANCH_MEMBER node
 * with members m1..mk becomes a chain of BRANCH_EQ nodes (true -> its true
 * child, false -> the next member, the last -> its false child), each with
 * the node's missing-value flag.  Then the same validation, compilation and
 * kernels as TreeEnsembleRegressor, without base values. */

typedef struct v5_lists { /* the opset-3 form being built */
    int n, cap;
    int64_t *tree, *id, *feat, *tru, *fal, *miss;
    const char **mode;
    double *value;
    int nw, wcap;
    int64_t *w_tree, *w_node, *w_target;
    double *w_value;
} v5_lists;

typedef struct v5_src { /* the opset-5 attributes */
    int n_int, n_leaf;
    const int64_t *feat, *tru, *fal, *tleaf, *fleaf, *miss, *leaf_target;
    const uint8_t *modes;
    const double *splits, *leaf_w, *members;
    int n_members;
    int64_t *member_at; /* per interior node: first member index, or -1 */
    int64_t *seen;      /* per interior node: 1 while on the path being emitted */
} v5_src;

static const char *const v5_mode_names[] = {"BRANCH_LEQ", "BRANCH_LT", "BRANCH_GTE", "BRANCH_GT",
                                             "BRANCH_EQ",  "BRANCH_NEQ", "BRANCH_EQ"};

enum { V5_MAX_NODES = 1 << 22 }; /* 4M opset-3 nodes (~40x the largest usual forests) */

/* Appends an opset-3 node; returns its id (= position), -1 when out of
 * memory, -2 past V5_MAX_NODES. */
static int64_t v5_push(v5_lists *l, int64_t tree, int64_t feat, const char *mode, double value, int64_t miss) {
    if (l->n >= V5_MAX_NODES) return -2;
    if (l->n == l->cap) {
        int cap = l->cap ? 2 * l->cap : 256;
        int64_t **iv[] = {&l->tree, &l->id, &l->feat, &l->tru, &l->fal, &l->miss};
        for (int k = 0; k < 6; k++) {
            int64_t *p = inf__realloc(*iv[k], (size_t)cap * sizeof(int64_t));
            if (!p) return -1;
            *iv[k] = p;
        }
        const char **m = inf__realloc(l->mode, (size_t)cap * sizeof *m);
        if (!m) return -1;
        l->mode = m;
        double *v = inf__realloc(l->value, (size_t)cap * sizeof *v);
        if (!v) return -1;
        l->value = v;
        l->cap = cap;
    }
    int k = l->n++;
    l->tree[k] = tree;
    l->id[k] = k;
    l->feat[k] = feat;
    l->mode[k] = mode;
    l->value[k] = value;
    l->miss[k] = miss;
    l->tru[k] = l->fal[k] = 0;
    return k;
}

static void v5_lists_free(v5_lists *l) {
    inf__free(l->tree); inf__free(l->id); inf__free(l->feat); inf__free(l->tru); inf__free(l->fal);
    inf__free(l->miss); inf__free(l->mode); inf__free(l->value);
    inf__free(l->w_tree); inf__free(l->w_node); inf__free(l->w_target); inf__free(l->w_value);
}

/* Emits the child (node or leaf `idx`) of a node of tree t; *out = its id. */
static inf_status v5_child(const inf__node *node, const v5_src *s, v5_lists *l, int64_t t, bool leaf, int64_t idx,
                           const char *what, int64_t from, int64_t *out, inf_error *err) {
    if (!leaf) {
        if (idx < 0 || idx >= s->n_int)
            return inf__node_error(node, err, INF_EMODEL, "attribute %snodeids[%lld] = %lld is outside [0, %d)", what,
                                   (long long)from, (long long)idx, s->n_int);
        *out = idx; /* resolved by the caller's walk */
        return INF_OK;
    }
    if (idx < 0 || idx >= s->n_leaf)
        return inf__node_error(node, err, INF_EMODEL, "attribute %snodeids[%lld] = %lld is outside the %d leaves", what,
                               (long long)from, (long long)idx, s->n_leaf);
    int64_t k = v5_push(l, t, 0, "LEAF", 0, 0);
    if (k < 0) return k == -1 ? INF_ENOMEM : inf__node_error(node, err, INF_EMODEL, "nodes: more than %d nodes after "
                                                             "expanding shared subtrees and sets", V5_MAX_NODES);
    if (l->nw == l->wcap) {
        int cap = l->wcap ? 2 * l->wcap : 256;
        int64_t *a = inf__realloc(l->w_tree, (size_t)cap * sizeof(int64_t));
        if (a) l->w_tree = a;
        int64_t *b = a ? inf__realloc(l->w_node, (size_t)cap * sizeof(int64_t)) : NULL;
        if (b) l->w_node = b;
        int64_t *c = b ? inf__realloc(l->w_target, (size_t)cap * sizeof(int64_t)) : NULL;
        if (c) l->w_target = c;
        double *d = c ? inf__realloc(l->w_value, (size_t)cap * sizeof(double)) : NULL;
        if (!d) return INF_ENOMEM;
        l->w_value = d;
        l->wcap = cap;
    }
    int w = l->nw++;
    l->w_tree[w] = t;
    l->w_node[w] = k;
    l->w_target[w] = s->leaf_target[idx];
    l->w_value[w] = s->leaf_w[idx];
    *out = k;
    return INF_OK;
}

/* Emits interior node i of tree t and its subtree; *out = its id.  seen[]
 * marks the nodes on the current path (a cycle); a subtree reached twice
 * (a BRANCH_MEMBER chain's true child, or a shared subtree) is copied,
 * up to V5_MAX_NODES nodes in all. */
static inf_status v5_emit(const inf__node *node, const v5_src *s, v5_lists *l, int64_t t, int64_t i, int depth,
                          int64_t *out, inf_error *err) {
    if (s->seen[i])
        return inf__node_error(node, err, INF_EMODEL, "nodes: node %lld is its own descendant (a cycle)", (long long)i);
    if (depth > 4096) return inf__node_error(node, err, INF_EMODEL, "nodes: tree %lld is deeper than 4096", (long long)t);
    int mode = s->modes[i];
    int64_t miss = s->miss ? s->miss[i] != 0 : 0;
    int64_t first = -1;
    int n_eq = 1;
    if (mode == 6) { /* BRANCH_MEMBER: one EQ node per member */
        if (s->member_at[i] < 0)
            return inf__node_error(node, err, INF_EMODEL, "nodes_modes[%lld] is BRANCH_MEMBER but membership_values "
                                   "has no set for it", (long long)i);
        n_eq = 0;
        for (int64_t k = s->member_at[i]; k < s->n_members && !isnan(s->members[k]); k++) n_eq++;
        if (n_eq == 0)
            return inf__node_error(node, err, INF_EMODEL, "membership_values: the set of node %lld is empty", (long long)i);
    }
    for (int e = 0; e < n_eq; e++) {
        double v = mode == 6 ? s->members[s->member_at[i] + e] : s->splits[i];
        int64_t k = v5_push(l, t, s->feat[i], v5_mode_names[mode], v, miss);
        if (k < 0) return k == -1 ? INF_ENOMEM : inf__node_error(node, err, INF_EMODEL, "nodes: more than %d nodes after "
                                                                 "expanding shared subtrees and sets", V5_MAX_NODES);
        if (first >= 0) l->fal[k - 1] = k;
        else first = k;
    }
    s->seen[i] = 1;
    inf_status st = INF_OK;
    for (int e = 0; e < n_eq && st == INF_OK; e++) { /* each EQ node gets its own copy of the true subtree */
        int64_t tc;
        st = v5_child(node, s, l, t, s->tleaf[i] != 0, s->tru[i], "nodes_true", i, &tc, err);
        if (st == INF_OK && !s->tleaf[i]) st = v5_emit(node, s, l, t, tc, depth + 1, &tc, err);
        if (st == INF_OK) l->tru[first + e] = tc;
    }
    int64_t fc;
    if (st == INF_OK) st = v5_child(node, s, l, t, s->fleaf[i] != 0, s->fal[i], "nodes_false", i, &fc, err);
    if (st == INF_OK && !s->fleaf[i]) st = v5_emit(node, s, l, t, fc, depth + 1, &fc, err);
    if (st == INF_OK) l->fal[first + n_eq - 1] = fc;
    s->seen[i] = 0;
    *out = first;
    return st;
}

/* A tensor attribute as doubles (float32 or float64) in the arena; *n its length. */
static const double *v5_doubles(const inf__node *node, inf__arena *arena, const char *name, bool required, int *n,
                                inf_status *st, inf_error *err) {
    const inf_tensor *t = inf__attr_tensor(node, name);
    *n = 0;
    *st = INF_OK;
    if (!t) {
        if (required) *st = inf__node_error(node, err, INF_EMODEL, "attribute %s is missing", name);
        return NULL;
    }
    if (t->dtype != INF_DTYPE_F32 && t->dtype != INF_DTYPE_F64) {
        *st = inf__node_error(node, err, INF_EMODEL, "attribute %s: expected a float or double tensor, got %s", name,
                              inf_dtype_name(t->dtype));
        return NULL;
    }
    int64_t count = inf_tensor_numel(t);
    if (count > INT32_MAX) {
        *st = inf__node_error(node, err, INF_EMODEL, "attribute %s: too many values", name);
        return NULL;
    }
    double *out = inf__arena_alloc(arena, ((size_t)count + 1) * sizeof(double));
    if (!out) {
        *st = inf__node_error(node, err, INF_ENOMEM, "out of memory reading attribute %s", name);
        return NULL;
    }
    for (int64_t i = 0; i < count; i++)
        out[i] = t->dtype == INF_DTYPE_F64 ? ((const double *)t->data)[i] : ((const float *)t->data)[i];
    *n = (int)count;
    return out;
}

/* Reads and checks the opset-5 lists into s (arena copies). */
static inf_status v5_read(const inf__node *node, inf__arena *arena, v5_src *s, int64_t n_targets, inf_error *err) {
    int n[8];
    inf_status st;
    s->feat = inf__attr_ints(node, "nodes_featureids", &n[0]);
    s->tru = inf__attr_ints(node, "nodes_truenodeids", &n[1]);
    s->fal = inf__attr_ints(node, "nodes_falsenodeids", &n[2]);
    s->tleaf = inf__attr_ints(node, "nodes_trueleafs", &n[3]);
    s->fleaf = inf__attr_ints(node, "nodes_falseleafs", &n[4]);
    s->miss = inf__attr_ints(node, "nodes_missing_value_tracks_true", &n[5]);
    s->splits = v5_doubles(node, arena, "nodes_splits", true, &n[6], &st, err);
    if (st != INF_OK) return st;
    const inf_tensor *modes = inf__attr_tensor(node, "nodes_modes");
    if (!modes || modes->dtype != INF_DTYPE_U8)
        return inf__node_error(node, err, INF_EMODEL, "attribute nodes_modes must be a uint8 tensor");
    s->modes = modes->data;
    n[7] = (int)inf_tensor_numel(modes);
    static const char *const names[] = {"nodes_featureids", "nodes_truenodeids", "nodes_falsenodeids",
                                        "nodes_trueleafs",  "nodes_falseleafs",  "nodes_missing_value_tracks_true",
                                        "nodes_splits",     "nodes_modes"};
    s->n_int = n[0];
    if (s->n_int == 0) return inf__node_error(node, err, INF_EMODEL, "attribute nodes_featureids is missing or empty");
    for (int i = 1; i < 8; i++)
        if (n[i] != s->n_int && !(i == 5 && n[5] == 0))
            return inf__node_error(node, err, INF_EMODEL, "attribute %s has %d values, nodes_featureids has %d",
                                   names[i], n[i], s->n_int);
    int nt = 0, nw = 0;
    s->leaf_target = inf__attr_ints(node, "leaf_targetids", &nt);
    s->leaf_w = v5_doubles(node, arena, "leaf_weights", true, &nw, &st, err);
    if (st != INF_OK) return st;
    if (nt != nw || nt == 0)
        return inf__node_error(node, err, INF_EMODEL, "attribute leaf_targetids has %d values, leaf_weights has %d", nt, nw);
    s->n_leaf = nt;
    for (int j = 0; j < nt; j++)
        if (s->leaf_target[j] < 0 || s->leaf_target[j] >= n_targets)
            return inf__node_error(node, err, INF_EMODEL, "attribute leaf_targetids[%d] = %lld is outside [0, %lld)", j,
                                   (long long)s->leaf_target[j], (long long)n_targets);
    s->members = v5_doubles(node, arena, "membership_values", false, &s->n_members, &st, err);
    if (st != INF_OK) return st;
    s->member_at = inf__arena_alloc(arena, (size_t)s->n_int * sizeof(int64_t));
    s->seen = inf__arena_alloc(arena, (size_t)s->n_int * sizeof(int64_t));
    if (!s->member_at || !s->seen) return inf__node_error(node, err, INF_ENOMEM, "out of memory compiling the ensemble");
    int64_t next_set = 0;
    for (int i = 0; i < s->n_int; i++) {
        s->seen[i] = 0;
        s->member_at[i] = -1;
        if (s->modes[i] > 6)
            return inf__node_error(node, err, INF_EMODEL, "attribute nodes_modes[%d] = %d is not a mode (0-6)", i, s->modes[i]);
        if (s->feat[i] < 0 || s->feat[i] >= INT32_MAX)
            return inf__node_error(node, err, INF_EMODEL, "attribute nodes_featureids[%d] = %lld is not a valid feature index",
                                   i, (long long)s->feat[i]);
        if (s->modes[i] != 6) continue;
        if (next_set >= s->n_members) continue; /* reported when the node is reached */
        s->member_at[i] = next_set; /* sets follow the BRANCH_MEMBER nodes in order, NaN-separated */
        while (next_set < s->n_members && !isnan(s->members[next_set])) next_set++;
        next_set++;
    }
    return INF_OK;
}

static inf_status v5_init(inf__node *node, inf__arena *arena, inf_error *err) {
    ml_forest *f = inf__op_params(arena, ml_forest);
    if (!f) return INF_ENOMEM;
    f->v5 = true;
    int64_t nt = inf__attr_int(node, "n_targets", 0);
    if (nt < 1 || nt > INT32_MAX)
        return inf__node_error(node, err, INF_EMODEL, "attribute n_targets = %lld must be >= 1", (long long)nt);
    f->n_targets = (int)nt;
    static const int aggs[] = {AGG_AVERAGE, AGG_SUM, AGG_MIN, AGG_MAX};
    int64_t agg = inf__attr_int(node, "aggregate_function", 1), post = inf__attr_int(node, "post_transform", 0);
    if (agg < 0 || agg > 3)
        return inf__node_error(node, err, INF_EMODEL,
                               "attribute aggregate_function = %lld (expected 0 AVERAGE, 1 SUM, 2 MIN or 3 MAX)", (long long)agg);
    if (post < 0 || post > 4)
        return inf__node_error(node, err, INF_EMODEL, "attribute post_transform = %lld (expected 0-4: NONE, SOFTMAX, "
                               "LOGISTIC, SOFTMAX_ZERO, PROBIT)", (long long)post);
    f->aggregate = aggs[agg];
    f->post = (ml_post)post;
    v5_src s;
    memset(&s, 0, sizeof s);
    inf_status st = v5_read(node, arena, &s, nt, err);
    if (st != INF_OK) return st;
    int n_roots = 0;
    const int64_t *roots = inf__attr_ints(node, "tree_roots", &n_roots);
    if (n_roots == 0) return inf__node_error(node, err, INF_EMODEL, "attribute tree_roots is missing or empty");
    v5_lists l;
    memset(&l, 0, sizeof l);
    for (int t = 0; t < n_roots && st == INF_OK; t++) {
        int64_t id;
        if (roots[t] < 0 || roots[t] >= s.n_int)
            st = inf__node_error(node, err, INF_EMODEL, "attribute tree_roots[%d] = %lld is outside [0, %d)", t,
                                 (long long)roots[t], s.n_int);
        else
            st = v5_emit(node, &s, &l, t, roots[t], 0, &id, err);
    }
    if (st == INF_OK) {
        tree_attrs a = {.n_nodes = l.n, .treeids = l.tree, .nodeids = l.id, .featureids = l.feat, .truenodeids = l.tru,
                        .falsenodeids = l.fal, .missing = l.miss, .modes = l.mode, .values = l.value,
                        .n_weights = l.nw, .w_treeids = l.w_tree, .w_nodeids = l.w_node, .w_ids = l.w_target,
                        .w_values = l.w_value, .wp = "leaf_target"};
        st = inf__ml_forest_build(node, arena, &a, f, err);
    }
    v5_lists_free(&l);
    if (st == INF_ENOMEM) return inf__node_error(node, err, st, "out of memory compiling the ensemble");
    if (st != INF_OK) return st;
    node->params = f;
    return INF_OK;
}

const inf__op_impl op_ml_tree_ensemble = {v5_init, inf__ml_forest_run};
