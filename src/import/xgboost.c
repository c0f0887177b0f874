/*
 * xgboost.c -- native import of XGBoost JSON models (the format of
 * Booster.save_model("model.json"), XGBoost 1.x/2.x, gbtree and dart), and
 * of UBJSON ones (save_model("model.ubj"), XGBoost >= 1.6: read by ubjson.c
 * into the same cJSON tree, then the same code).
 *
 * DESIGN: the booster becomes the model an ONNX-ML converter would write:
 * one ai.onnx.ml node (opset 3) reading input "input" float32 [N, F]:
 *   binary:logistic            TreeEnsembleClassifier, LOGISTIC, labels {0, 1},
 *                              base_values = [logit(base_score)]
 *                              -> label int64 [N], probabilities float32 [N, 2]
 *   multi:softprob/softmax     TreeEnsembleClassifier, SOFTMAX, labels 0..K-1, tree i
 *                              votes for class tree_info[i], base_values = base_score
 *                              -> label [N], probabilities [N, K]
 *   reg:squarederror and the other identity-link regressions, binary:logitraw
 *                              TreeEnsembleRegressor -> variable float32 [N, 1]
 * Splits are BRANCH_LT (XGBoost sends x < threshold left) with
 * missing_value_tracks_true = default_left, so NaN follows the default
 * branch.  Only nodes reachable from each root are emitted (pruned nodes
 * stay in the arrays of a saved tree).  Dart tree weights scale the leaves.
 * The node then goes through the same init (validation, compilation) as an
 * ONNX model's node, so both formats run the same kernel.
 *
 * Unsupported (INF_EUNSUPPORTED, named): categorical splits, multi-target
 * trees, objectives with a non-identity/logistic link (reg:logistic,
 * count:poisson, reg:gamma, reg:tweedie, survival:*, rank:*), gblinear.
 * A binary model whose leaves are all >= 0 is read by the ONNX-ML classifier
 * as probabilities (ONNX Runtime's rule); such a model is refused rather than
 * mis-scored.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "graph/graph.h"
#include "import/import.h"
#include "ops/ops.h"

#define FAIL(st, ...) inf_error_set(err, st, "<memory>: XGBoost model: " __VA_ARGS__)

bool inf__import_is_xgboost_json(const void *data, size_t size) {
    const char *p = data;
    if (inf__import_is_ubjson_object(data, size)) /* UBJSON: keys are stored bare, after their length */
        return memmem(p, size < 4096 ? size : 4096, "learner", 7) != NULL;
    size_t i = 0;
    while (i < size && (p[i] == ' ' || p[i] == '\n' || p[i] == '\r' || p[i] == '\t')) i++;
    if (i >= size || p[i] != '{') return false;
    size_t window = size - i < 4096 ? size - i : 4096;
    return memmem(p + i, window, "\"learner\"", 9) != NULL;
}

/* ---- growing attribute lists ---- */

typedef struct ivec {
    int64_t *v;
    int n, cap;
} ivec;

typedef struct fvec {
    float *v;
    int n, cap;
} fvec;

/* The array v (n elements of elem bytes used, *cap allocated) with room
 * for one more: v itself when it has room, else a copy of twice the
 * capacity (256 at first; *cap updated, v freed).  NULL when out of memory,
 * v and *cap then unchanged. */
static void *room_for_one(void *v, int n, int *cap, size_t elem) {
    if (n < *cap) return v;
    int grown = *cap ? *cap * 2 : 256;
    void *nv = inf__malloc((size_t)grown * elem);
    if (!nv) return NULL;
    if (n) memcpy(nv, v, (size_t)n * elem);
    inf__free(v);
    *cap = grown;
    return nv;
}

static bool ivec_push(ivec *a, int64_t x) {
    int64_t *v = room_for_one(a->v, a->n, &a->cap, sizeof *v);
    if (!v) return false;
    a->v = v;
    a->v[a->n++] = x;
    return true;
}

static bool fvec_push(fvec *a, float x) {
    float *v = room_for_one(a->v, a->n, &a->cap, sizeof *v);
    if (!v) return false;
    a->v = v;
    a->v[a->n++] = x;
    return true;
}

typedef struct forest_lists {
    ivec treeids, nodeids, featureids, truenodeids, falsenodeids, missing, leaf_mode;
    fvec values;
    ivec w_treeids, w_nodeids, w_ids;
    fvec w_values;
    bool any_negative;
} forest_lists;

static void lists_free(forest_lists *l) {
    ivec *iv[] = {&l->treeids, &l->nodeids, &l->featureids, &l->truenodeids, &l->falsenodeids,
                  &l->missing, &l->leaf_mode, &l->w_treeids, &l->w_nodeids, &l->w_ids};
    for (size_t i = 0; i < sizeof iv / sizeof iv[0]; i++) inf__free(iv[i]->v);
    inf__free(l->values.v);
    inf__free(l->w_values.v);
}

/* ---- JSON helpers ---- */

static const cJSON *member(const cJSON *obj, const char *name) {
    return obj ? cJSON_GetObjectItemCaseSensitive(obj, name) : NULL;
}

/* XGBoost writes most parameters as strings ("5E-1", "[5E-1]" in 2.x). */
static bool number_of(const cJSON *j, double *out) {
    if (cJSON_IsNumber(j)) {
        *out = j->valuedouble;
        return true;
    }
    if (!cJSON_IsString(j)) return false;
    const char *s = j->valuestring;
    while (*s == '[' || *s == ' ') s++;
    char *end;
    *out = strtod(s, &end);
    return end != s;
}

static bool array_number(const cJSON *arr, int i, double *out) {
    const cJSON *e = cJSON_GetArrayItem(arr, i);
    if (cJSON_IsBool(e)) {
        *out = cJSON_IsTrue(e);
        return true;
    }
    return number_of(e, out);
}

/* The n numbers of a JSON array into out (walks the list once: indexing a
 * cJSON array is linear, so per-node lookups made big trees quadratic);
 * false if an element is not a number. */
static bool array_numbers(const cJSON *arr, int n, double *out) {
    int i = 0;
    for (const cJSON *e = arr->child; e && i < n; e = e->next, i++) {
        if (cJSON_IsBool(e)) out[i] = cJSON_IsTrue(e);
        else if (!number_of(e, &out[i])) return false;
    }
    return i == n;
}

/* A child reference: an integer node index in [0, n) (NaN and huge values fail). */
static bool child_index_ok(double c, int n) {
    return c >= 0 && c < (double)n && c == (double)(int)c;
}

/* Adds tree `t` (a JSON tree object) as tree id t voting for `target`. */
static inf_status add_tree(const cJSON *tree, int t, int target, double weight, int64_t n_features, forest_lists *l,
                           inf_error *err) {
    const cJSON *left = member(tree, "left_children"), *right = member(tree, "right_children");
    const cJSON *ind = member(tree, "split_indices"), *cond = member(tree, "split_conditions");
    const cJSON *dflt = member(tree, "default_left"), *stype = member(tree, "split_type");
    if (!cJSON_IsArray(left) || !cJSON_IsArray(right) || !cJSON_IsArray(ind) || !cJSON_IsArray(cond) ||
        !cJSON_IsArray(dflt))
        return FAIL(INF_EFORMAT, "tree %d lacks left_children, right_children, split_indices, split_conditions or default_left", t);
    int n = cJSON_GetArraySize(left);
    if (n < 1 || cJSON_GetArraySize(right) != n || cJSON_GetArraySize(ind) != n || cJSON_GetArraySize(cond) != n ||
        cJSON_GetArraySize(dflt) != n)
        return FAIL(INF_EFORMAT, "tree %d: node arrays of different lengths", t);
    /* depth-first from the root; pruned nodes are never reached */
    int *stack = inf__malloc((size_t)n * sizeof(int) + sizeof(int));
    char *seen = inf__calloc((size_t)n, 1);
    double *num = inf__malloc((size_t)n * 6 * sizeof(double));
    inf_status st = INF_OK;
    if (!stack || !seen || !num) {
        st = FAIL(INF_ENOMEM, "out of memory");
        goto done;
    }
    double *lcs = num, *rcs = num + n, *fis = num + 2 * n, *ths = num + 3 * n, *dls = num + 4 * n, *tys = num + 5 * n;
    if (!array_numbers(left, n, lcs) || !array_numbers(right, n, rcs) || !array_numbers(ind, n, fis) ||
        !array_numbers(cond, n, ths) || !array_numbers(dflt, n, dls)) {
        st = FAIL(INF_EFORMAT, "tree %d: a node value is not a number", t);
        goto done;
    }
    bool typed = cJSON_IsArray(stype) && cJSON_GetArraySize(stype) == n && array_numbers(stype, n, tys);
    int sp = 0;
    stack[sp++] = 0;
    while (sp > 0 && st == INF_OK) {
        int i = stack[--sp];
        if (i < 0 || i >= n || seen[i]) {
            st = FAIL(INF_EMODEL, "tree %d: child index %d is out of range or reached twice", t, i);
            break;
        }
        seen[i] = 1;
        double lc = lcs[i], rc = rcs[i], fi = fis[i], th = ths[i], dl = dls[i];
        if (typed && tys[i] != 0) {
            st = FAIL(INF_EUNSUPPORTED, "tree %d uses categorical splits (not supported)", t);
            break;
        }
        bool leaf = lc < 0;
        if (!leaf && !(fi >= 0 && fi < (double)n_features && fi == (double)(int64_t)fi)) {
            st = FAIL(INF_EMODEL, "tree %d, node %d: feature %g is not an index in [0, %lld)", t, i, fi, (long long)n_features);
            break;
        }
        if (!leaf && !(child_index_ok(lc, n) && child_index_ok(rc, n))) {
            st = FAIL(INF_EMODEL, "tree %d, node %d: children %g and %g are not node indices in [0, %d)", t, i, lc, rc, n);
            break;
        }
        bool ok = ivec_push(&l->treeids, t) && ivec_push(&l->nodeids, i) && ivec_push(&l->featureids, leaf ? 0 : (int64_t)fi) &&
                  ivec_push(&l->truenodeids, leaf ? 0 : (int64_t)lc) && ivec_push(&l->falsenodeids, leaf ? 0 : (int64_t)rc) &&
                  ivec_push(&l->missing, leaf ? 0 : dl != 0) && ivec_push(&l->leaf_mode, leaf) &&
                  fvec_push(&l->values, leaf ? 0.0f : (float)th);
        if (ok && leaf) {
            float w = (float)(th * weight);
            if (w < 0) l->any_negative = true;
            ok = ivec_push(&l->w_treeids, t) && ivec_push(&l->w_nodeids, i) && ivec_push(&l->w_ids, target) &&
                 fvec_push(&l->w_values, w);
        }
        if (!ok) {
            st = FAIL(INF_ENOMEM, "out of memory");
            break;
        }
        if (!leaf) {
            if (sp + 2 > n + 1) {
                st = FAIL(INF_EMODEL, "tree %d is not a tree", t);
                break;
            }
            stack[sp++] = (int)rc;
            stack[sp++] = (int)lc;
        }
    }
done:
    inf__free(stack);
    inf__free(seen);
    inf__free(num);
    return st;
}

/* ---- the IR ---- */

typedef struct builder {
    inf_model *m;
    inf__node *node;
    int n_attrs;
} builder;

static inf__attr *attr_new(builder *b, const char *name, inf__attr_type type) {
    inf__attr *a = &b->node->attrs[b->n_attrs++];
    a->name = name;
    a->type = type;
    return a;
}

static bool attr_ints(builder *b, const char *name, const int64_t *v, int n) {
    inf__attr *a = attr_new(b, name, INF_ATTR_INTS);
    a->ints = inf__arena_alloc(&b->m->arena, ((size_t)n + 1) * sizeof(int64_t));
    if (!a->ints) return false;
    if (n) memcpy(a->ints, v, (size_t)n * sizeof(int64_t));
    a->n = n;
    return true;
}

static bool attr_floats(builder *b, const char *name, const float *v, int n) {
    inf__attr *a = attr_new(b, name, INF_ATTR_FLOATS);
    a->floats = inf__arena_alloc(&b->m->arena, ((size_t)n + 1) * sizeof(float));
    if (!a->floats) return false;
    if (n) memcpy(a->floats, v, (size_t)n * sizeof(float));
    a->n = n;
    return true;
}

static bool attr_string(builder *b, const char *name, const char *s) {
    inf__attr *a = attr_new(b, name, INF_ATTR_STRING);
    a->s = s;
    a->s_len = strlen(s);
    return true;
}

static bool attr_modes(builder *b, const ivec *leaf) {
    inf__attr *a = attr_new(b, "nodes_modes", INF_ATTR_STRINGS);
    a->strings = inf__arena_alloc(&b->m->arena, ((size_t)leaf->n + 1) * sizeof(char *));
    if (!a->strings) return false;
    for (int i = 0; i < leaf->n; i++) a->strings[i] = leaf->v[i] ? "LEAF" : "BRANCH_LT";
    a->n = leaf->n;
    return true;
}

static void set_info(inf__value *v, const char *name, inf_dtype dt, int ndim, int64_t d1) {
    v->name = name;
    v->has_info = 1;
    v->info.name = name;
    v->info.kind = INF_KIND_TENSOR;
    v->info.dtype = dt;
    v->info.ndim = ndim;
    v->info.dims[0] = -1;
    v->info.dim_names[0] = "N";
    if (ndim > 1) v->info.dims[1] = d1;
}

typedef struct booster_desc {
    bool classifier;
    int n_classes;      /* classifier: 2 for binary */
    int64_t n_features;
    int n_base;
    float base[1];      /* margin added to every class/target (replicated) */
    const char *post;
    const char *version;
} booster_desc;

static inf_status build_model(const booster_desc *d, forest_lists *l, inf_model *m, inf_error *err) {
    inf__arena *ar = &m->arena;
    inf__graph *g = inf__arena_alloc(ar, sizeof *g);
    if (!g) return FAIL(INF_ENOMEM, "out of memory");
    m->graph = g;
    g->model = m;
    g->name = "xgboost";
    int n_out = d->classifier ? 2 : 1;
    g->n_values = 1 + n_out;
    g->values = inf__arena_alloc(ar, (size_t)g->n_values * sizeof *g->values);
    g->nodes = inf__arena_alloc(ar, sizeof *g->nodes);
    g->inputs = inf__arena_alloc(ar, sizeof(int));
    g->outputs = inf__arena_alloc(ar, 2 * sizeof(int));
    inf__node *node = g->nodes;
    if (!g->values || !node || !g->inputs || !g->outputs) return FAIL(INF_ENOMEM, "out of memory");
    set_info(&g->values[0], "input", INF_DTYPE_F32, 2, d->n_features);
    g->values[0].role = INF_VALUE_INPUT;
    g->values[0].producer = -1;
    if (d->classifier) {
        set_info(&g->values[1], "label", INF_DTYPE_I64, 1, 0);
        set_info(&g->values[2], "probabilities", INF_DTYPE_F32, 2, d->n_classes);
    } else {
        set_info(&g->values[1], "variable", INF_DTYPE_F32, 2, 1);
    }
    for (int i = 1; i <= n_out; i++) g->values[i].producer = 0;
    g->n_inputs = 1;
    g->inputs[0] = 0;
    g->n_outputs = n_out;
    g->outputs[0] = 1;
    g->outputs[1] = 2;

    g->n_nodes = 1;
    node->name = "xgboost";
    node->op_type = d->classifier ? "TreeEnsembleClassifier" : "TreeEnsembleRegressor";
    node->domain = "ai.onnx.ml";
    node->opset = 3;
    node->graph = g;
    node->n_inputs = 1;
    node->inputs = g->inputs;
    node->n_outputs = n_out;
    node->outputs = inf__arena_alloc(ar, 2 * sizeof(int));
    node->attrs = inf__arena_alloc(ar, 20 * sizeof(inf__attr));
    if (!node->outputs || !node->attrs) return FAIL(INF_ENOMEM, "out of memory");
    node->outputs[0] = 1;
    node->outputs[1] = 2;

    builder b = {m, node, 0};
    const char *wp = d->classifier ? "class" : "target";
    char names[4][32];
    snprintf(names[0], 32, "%s_treeids", wp);
    snprintf(names[1], 32, "%s_nodeids", wp);
    snprintf(names[2], 32, "%s_ids", wp);
    snprintf(names[3], 32, "%s_weights", wp);
    char *nm[4];
    for (int i = 0; i < 4; i++)
        if (!(nm[i] = inf__arena_strdup(ar, names[i]))) return FAIL(INF_ENOMEM, "out of memory");
    int64_t labels[1024];
    int n_targets = d->classifier ? d->n_classes : 1;
    float base[1024];
    for (int k = 0; k < n_targets && k < 1024; k++) labels[k] = k, base[k] = d->base[0];
    int n_base = d->classifier && d->n_classes == 2 ? 1 : n_targets;
    bool ok = attr_ints(&b, "nodes_treeids", l->treeids.v, l->treeids.n) &&
              attr_ints(&b, "nodes_nodeids", l->nodeids.v, l->nodeids.n) &&
              attr_ints(&b, "nodes_featureids", l->featureids.v, l->featureids.n) &&
              attr_ints(&b, "nodes_truenodeids", l->truenodeids.v, l->truenodeids.n) &&
              attr_ints(&b, "nodes_falsenodeids", l->falsenodeids.v, l->falsenodeids.n) &&
              attr_ints(&b, "nodes_missing_value_tracks_true", l->missing.v, l->missing.n) &&
              attr_floats(&b, "nodes_values", l->values.v, l->values.n) && attr_modes(&b, &l->leaf_mode) &&
              attr_ints(&b, nm[0], l->w_treeids.v, l->w_treeids.n) && attr_ints(&b, nm[1], l->w_nodeids.v, l->w_nodeids.n) &&
              attr_ints(&b, nm[2], l->w_ids.v, l->w_ids.n) && attr_floats(&b, nm[3], l->w_values.v, l->w_values.n) &&
              attr_floats(&b, "base_values", base, n_base) && attr_string(&b, "post_transform", d->post);
    if (ok && d->classifier) ok = attr_ints(&b, "classlabels_int64s", labels, n_targets);
    if (ok && !d->classifier) {
        inf__attr *a = attr_new(&b, "n_targets", INF_ATTR_INT);
        a->i = 1;
    }
    if (!ok) return FAIL(INF_ENOMEM, "out of memory");
    node->n_attrs = b.n_attrs;

    /* model facts, as onnx/decode.c fills them */
    m->producer_name = "xgboost";
    m->producer_version = d->version;
    m->doc_string = "imported from an XGBoost JSON model";
    m->opsets = inf__arena_alloc(ar, 2 * sizeof(inf_opset));
    m->op_types = inf__arena_alloc(ar, sizeof *m->op_types);
    m->input_infos = inf__arena_alloc(ar, sizeof(inf_value_info));
    m->output_infos = inf__arena_alloc(ar, 2 * sizeof(inf_value_info));
    if (!m->opsets || !m->op_types || !m->input_infos || !m->output_infos) return FAIL(INF_ENOMEM, "out of memory");
    m->opsets[0] = (inf_opset){"", 17};
    m->opsets[1] = (inf_opset){"ai.onnx.ml", 3};
    m->n_opsets = 2;
    m->op_types[0].domain = node->domain;
    m->op_types[0].op_type = node->op_type;
    m->op_types[0].count = 1;
    m->n_op_types = 1;
    inf_status st = inf__graph_finalize(g, err);
    if (st == INF_OK) st = inf__graph_bind_ops(m, g, err);
    if (st != INF_OK) {
        inf__error_prefix(err, "<memory>: XGBoost model");
        return st;
    }
    m->input_infos[0] = g->values[0].info;
    for (int i = 0; i < n_out; i++) m->output_infos[i] = g->values[g->outputs[i]].info;
    return INF_OK;
}

/* Reads the learner: objective, classes, features, base score, trees. */
static inf_status read_learner(const cJSON *root, booster_desc *d, forest_lists *l, char *version, inf_error *err) {
    const cJSON *learner = member(root, "learner");
    const cJSON *ver = member(root, "version");
    snprintf(version, 32, "%d.%d.%d", cJSON_GetArrayItem(ver, 0) ? cJSON_GetArrayItem(ver, 0)->valueint : 0,
             cJSON_GetArrayItem(ver, 1) ? cJSON_GetArrayItem(ver, 1)->valueint : 0,
             cJSON_GetArrayItem(ver, 2) ? cJSON_GetArrayItem(ver, 2)->valueint : 0);
    d->version = version;
    const cJSON *param = member(learner, "learner_model_param");
    const cJSON *objective = member(member(learner, "objective"), "name");
    const cJSON *booster = member(learner, "gradient_booster");
    if (!cJSON_IsObject(learner) || !cJSON_IsObject(param) || !cJSON_IsString(objective) || !cJSON_IsObject(booster))
        return FAIL(INF_EFORMAT, "missing learner, learner_model_param, objective or gradient_booster");
    double base_score = 0.5, num_class = 0, num_feature = 0, num_target = 1;
    number_of(member(param, "base_score"), &base_score);
    number_of(member(param, "num_class"), &num_class);
    number_of(member(param, "num_target"), &num_target);
    if (!number_of(member(param, "num_feature"), &num_feature) || num_feature < 1 || num_feature > INT32_MAX)
        return FAIL(INF_EFORMAT, "learner_model_param.num_feature is missing or invalid");
    if (num_target > 1) return FAIL(INF_EUNSUPPORTED, "multi-target models (num_target %g) are not supported", num_target);
    d->n_features = (int64_t)num_feature;
    const char *obj = objective->valuestring;
    if (!strcmp(obj, "binary:logistic")) {
        if (!(base_score > 0 && base_score < 1))
            return FAIL(INF_EMODEL, "base_score %g is not a probability", base_score);
        d->classifier = true;
        d->n_classes = 2;
        d->base[0] = (float)-log(1.0 / base_score - 1.0);
        d->post = "LOGISTIC";
    } else if (!strcmp(obj, "multi:softprob") || !strcmp(obj, "multi:softmax")) {
        if (num_class < 2 || num_class > 1024) return FAIL(INF_EMODEL, "num_class %g is not in [2, 1024]", num_class);
        d->classifier = true;
        d->n_classes = (int)num_class;
        d->base[0] = (float)base_score;
        d->post = "SOFTMAX";
    } else if (!strcmp(obj, "binary:logitraw")) {
        d->base[0] = base_score > 0 && base_score < 1 ? (float)-log(1.0 / base_score - 1.0) : (float)base_score;
        d->post = "NONE";
    } else if (!strncmp(obj, "reg:squarederror", 16) || !strcmp(obj, "reg:linear") ||
               !strcmp(obj, "reg:pseudohubererror") || !strcmp(obj, "reg:absoluteerror") ||
               !strcmp(obj, "reg:squaredlogerror") || !strcmp(obj, "reg:quantileerror")) {
        d->base[0] = (float)base_score;
        d->post = "NONE";
    } else {
        return FAIL(INF_EUNSUPPORTED, "objective '%s' is not supported (binary:logistic, binary:logitraw, multi:softprob, "
                                      "multi:softmax and identity-link reg:* objectives are)", obj);
    }
    const cJSON *bname = member(booster, "name");
    const cJSON *model = member(booster, "model"), *drop = NULL;
    if (cJSON_IsString(bname) && !strcmp(bname->valuestring, "dart")) {
        model = member(member(booster, "gbtree"), "model");
        drop = member(booster, "weight_drop");
    } else if (!cJSON_IsString(bname) || strcmp(bname->valuestring, "gbtree")) {
        return FAIL(INF_EUNSUPPORTED, "booster '%s' is not supported (gbtree and dart are)",
                    cJSON_IsString(bname) ? bname->valuestring : "?");
    }
    const cJSON *trees = member(model, "trees"), *info = member(model, "tree_info");
    if (!cJSON_IsArray(trees) || !cJSON_IsArray(info) || cJSON_GetArraySize(info) != cJSON_GetArraySize(trees))
        return FAIL(INF_EFORMAT, "gradient_booster model lacks trees/tree_info of the same length");
    int n_trees = cJSON_GetArraySize(trees);
    if (n_trees == 0) return FAIL(INF_EMODEL, "the booster has no trees");
    int t = 0;
    for (const cJSON *tree = trees->child; tree; tree = tree->next, t++) {
        double cls = 0, w = 1;
        array_number(info, t, &cls);
        if (drop && !array_number(drop, t, &w)) w = 1;
        int target = d->classifier && d->n_classes > 2 ? (int)cls : 0;
        if (target < 0 || (d->classifier && target >= d->n_classes))
            return FAIL(INF_EMODEL, "tree_info[%d] = %g is not a class", t, cls);
        inf_status st = add_tree(tree, t, target, w, d->n_features, l, err);
        if (st != INF_OK) return st;
    }
    if (d->classifier && d->n_classes == 2 && !l->any_negative)
        return FAIL(INF_EUNSUPPORTED, "every leaf value is >= 0: the ONNX-ML binary classifier would read them as "
                                      "probabilities, not margins");
    return INF_OK;
}

inf_status inf__import_xgboost_json(const void *data, size_t size, inf_model **out, inf_error *err) {
    *out = NULL;
    cJSON *root;
    if (inf__import_is_ubjson_object(data, size)) {
        char why[160] = "";
        root = inf__ubjson_parse(data, size, why, sizeof why);
        if (!root) return FAIL(INF_EFORMAT, "not valid UBJSON (%s)", why);
    } else {
        root = cJSON_ParseWithLength(data, size);
        if (!root)
            return FAIL(INF_EFORMAT, "not valid JSON (near byte %ld)",
                        (long)(cJSON_GetErrorPtr() ? cJSON_GetErrorPtr() - (const char *)data : 0));
    }
    inf_model *m = inf__calloc(1, sizeof *m);
    forest_lists l;
    memset(&l, 0, sizeof l);
    inf_status st = INF_OK;
    if (!m) {
        st = FAIL(INF_ENOMEM, "out of memory");
        goto done;
    }
    inf__arena_init(&m->arena, 1 << 16);
    m->path = "<memory>";
    m->file_bytes = size;
    booster_desc d;
    memset(&d, 0, sizeof d);
    char *version = inf__arena_alloc(&m->arena, 32);
    if (!version) {
        st = FAIL(INF_ENOMEM, "out of memory");
        goto done;
    }
    if ((st = read_learner(root, &d, &l, version, err)) != INF_OK) goto done;
    st = build_model(&d, &l, m, err);
done:
    cJSON_Delete(root);
    lists_free(&l);
    if (st != INF_OK) {
        inf_model_free(m);
        return st;
    }
    *out = m;
    return INF_OK;
}
