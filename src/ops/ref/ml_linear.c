/*
 * ml_linear.c -- ai.onnx.ml LinearClassifier and LinearRegressor, opset 1.
 *
 * X: float32, float64, int64 or int32, [N, F] (or [F]).  Scores are
 * X . coefficients^T + intercepts, computed in float64 and rounded to
 * float32 (ORT computes in float32: differences stay within float rounding).
 *
 * LinearClassifier: Y labels (int64 from classlabels_ints, or strings) [N],
 * Z float32 [N, C] with C = len(intercepts).  With one score column and two
 * labels (a binary model), Y is labels[1] when the score is > 0 and Z is
 * [1 - s, s] with s the score after LOGISTIC (if set), as ONNX Runtime; a
 * single column otherwise only knows PROBIT.
 * LinearRegressor: Y float32 [N, targets]; post_transform applies to
 * multi-target outputs, and PROBIT only to a single target (as ORT).
 * Deviations: none known beyond float64 accumulation.
 */
#include "ops/ref/ml_common.h"

typedef struct linear_params {
    int n_targets;     /* score columns */
    int n_features;    /* coefficients per column */
    double *coef;      /* [n_targets, n_features] */
    double *intercept; /* n_targets, or NULL */
    ml_post post;
    bool classifier;
    int n_labels;
    const int64_t *labels_i64;
    const char *const *labels_str;
} linear_params;

static inf_status linear_read(inf__node *node, inf__arena *arena, linear_params *p, int n_targets, inf_error *err) {
    inf_status st;
    int n_coef = 0, n_int = 0;
    p->coef = ml_attr_doubles(node, arena, "coefficients", &n_coef, &st, err);
    if (st != INF_OK) return st;
    p->intercept = ml_attr_doubles(node, arena, "intercepts", &n_int, &st, err);
    if (st != INF_OK) return st;
    if (n_targets <= 0) n_targets = n_int;
    if (n_targets <= 0) return inf__node_error(node, err, INF_EMODEL, "attribute intercepts is missing or empty");
    if (n_coef == 0 || n_coef % n_targets)
        return inf__node_error(node, err, INF_EMODEL, "attribute coefficients has %d values, not a multiple of %d",
                               n_coef, n_targets);
    if (n_int && n_int != n_targets)
        return inf__node_error(node, err, INF_EMODEL, "attribute intercepts has %d values, expected %d", n_int,
                               n_targets);
    p->n_targets = n_targets;
    p->n_features = n_coef / n_targets;
    return ml_parse_post(node, err, &p->post);
}

static inf_status classifier_init(inf__node *node, inf__arena *arena, inf_error *err) {
    linear_params *p = inf__op_params(arena, linear_params);
    if (!p) return INF_ENOMEM;
    p->classifier = true;
    p->labels_i64 = inf__attr_ints(node, "classlabels_ints", &p->n_labels);
    const inf__attr *ls = inf__node_attr(node, "classlabels_strings");
    if (ls && ls->type == INF_ATTR_STRINGS && ls->n > 0) {
        p->labels_str = ls->strings;
        p->labels_i64 = NULL;
        p->n_labels = ls->n;
    }
    inf_status st = linear_read(node, arena, p, 0, err);
    if (st != INF_OK) return st;
    if (p->n_targets > 1 && p->n_labels != p->n_targets)
        return inf__node_error(node, err, INF_EMODEL, "%d class labels for %d score columns (intercepts)", p->n_labels,
                               p->n_targets);
    node->params = p;
    return INF_OK;
}

static inf_status regressor_init(inf__node *node, inf__arena *arena, inf_error *err) {
    linear_params *p = inf__op_params(arena, linear_params);
    if (!p) return INF_ENOMEM;
    int64_t t = inf__attr_int(node, "targets", 1);
    if (t < 1 || t > INT32_MAX)
        return inf__node_error(node, err, INF_EMODEL, "attribute targets = %lld must be >= 1", (long long)t);
    inf_status st = linear_read(node, arena, p, (int)t, err);
    if (st != INF_OK) return st;
    node->params = p;
    return INF_OK;
}

static inf_status linear_run(inf__kernel_ctx *ctx) {
    const linear_params *p = ctx->node->params;
    const inf_tensor *x = ctx->in[0];
    int64_t n = 0, f = 0;
    inf_status st = ml_input_matrix(ctx, x, &n, &f);
    if (st != INF_OK) return st;
    if (f != p->n_features)
        return inf__kernel_error(ctx, INF_ESHAPE, "input X: expected %d features, got %lld", p->n_features,
                                 (long long)f);
    int t = p->n_targets;
    bool second = p->classifier && t == 1 && p->n_labels == 2;
    int64_t zdims[2] = {n, second ? 2 : t}, ydims[1] = {n};
    inf_tensor *y = NULL, *z;
    if (p->classifier) {
        if ((st = inf__kernel_output(ctx, 0, p->labels_str ? INF_DTYPE_STRING : INF_DTYPE_I64, 1, ydims, &y)) != INF_OK ||
            (st = inf__kernel_output(ctx, 1, INF_DTYPE_F32, 2, zdims, &z)) != INF_OK)
            return st;
    } else if ((st = inf__kernel_output(ctx, 0, INF_DTYPE_F32, 2, zdims, &z)) != INF_OK) {
        return st;
    }
    double *s = inf__kernel_scratch(ctx, (size_t)t * sizeof(double));
    if (!s) return INF_ENOMEM;
    float *zo = z->data;
    for (int64_t r = 0; r < n; r++) {
        for (int k = 0; k < t; k++) {
            double acc = p->intercept ? p->intercept[k] : 0;
            for (int64_t j = 0; j < f; j++) acc += ml_get(x, r * f + j) * p->coef[(int64_t)k * f + j];
            s[k] = (float)acc;
        }
        int64_t label_index = 0, label_value = 0;
        if (p->classifier) {
            if (t == 1) {
                bool pos = s[0] > 0;
                label_index = pos;
                label_value = p->n_labels == 2 && p->labels_i64 ? p->labels_i64[pos] : pos;
            } else {
                for (int k = 1; k < t; k++)
                    if (s[k] > s[label_index]) label_index = k;
                label_value = p->labels_i64 ? p->labels_i64[label_index] : label_index;
            }
            if (p->labels_str) {
                const char *lab = t > 1 || p->n_labels == 2 ? p->labels_str[label_index] : label_index ? "1" : "0";
                if ((st = inf_tensor_set_string(y, r, lab, strlen(lab))) != INF_OK)
                    return inf__kernel_error(ctx, st, "out of memory writing the labels");
            } else {
                ((int64_t *)y->data)[r] = label_value;
            }
        }
        float *zr = zo + r * zdims[1];
        if (t > 1) {
            ml_post_apply(p->post, s, t);
            for (int k = 0; k < t; k++) zr[k] = (float)s[k];
        } else if (second) {
            if (p->post == ML_POST_LOGISTIC) s[0] = ml_logistic(s[0]); /* as ORT: then [1 - p, p] */
            ml_write_binary(p->post, 1, s[0], zr);
            if (p->post == ML_POST_PROBIT) zr[1] = 0;
        } else {
            zr[0] = (float)(p->post == ML_POST_PROBIT ? ml_probit(s[0]) : s[0]);
        }
    }
    return INF_OK;
}

const inf__op_impl op_ml_linear_classifier = {classifier_init, linear_run};
const inf__op_impl op_ml_linear_regressor = {regressor_init, linear_run};
