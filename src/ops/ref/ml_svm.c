/*
 * ml_svm.c -- ai.onnx.ml SVMClassifier and SVMRegressor, opset 1.
 *
 * X: float32, float64, int64 or int32, [N, F] (or [F], one row).
 * SVMClassifier outputs Y (int64 from classlabels_ints, or strings) [N] and
 * Z float32 [N, S]; SVMRegressor outputs Y float32 [N, 1].
 *
 * DESIGN.  init reads and validates the attributes into svm_params (all
 * numbers widened to double).  Two modes, as libsvm/liblinear and ONNX
 * Runtime:
 *   SVC     support vectors present (vectors_per_class / n_supports > 0):
 *           k_v = K(x, sv_v) for every support vector, with K one of
 *           LINEAR x.sv, POLY (gamma x.sv + coef0)^degree,
 *           RBF exp(-gamma |x - sv|^2), SIGMOID tanh(gamma x.sv + coef0)
 *           (kernel_params = [gamma, coef0, degree]).
 *   LINEAR  no support vectors: scores are x . coefficients[c] + rho[0]
 *           (the kernel is forced to LINEAR).
 * Classifier, SVC: one-vs-one, classifier (i, j) for i < j in order
 *   s_ij = sum_{v in i} coef[j-1][v] k_v + sum_{v in j} coef[i][v] k_v + rho_ij
 *   (coefficients laid out [C-1, n_vectors], libsvm's dual_coef); s_ij > 0
 *   votes for i, else j; the label is the first class with the most votes.
 *   Without prob_a/prob_b, Z holds the C(C-1)/2 scores s_ij (two classes:
 *   [-s, s] with post_transform NONE, [1 - s, s] otherwise, as ORT's
 *   write_additional_scores).  With prob_a/prob_b, r_ij = 1/(1 + exp(s_ij a_ij
 *   + b_ij)) clamped to [1e-7, 1 - 1e-7] (Platt scaling) and Z holds the C
 *   class probabilities from libsvm's pairwise coupling (Wu, Lin and Weng's
 *   method 2, 100 iterations at most, eps 0.005/C).
 * Classifier, LINEAR: Z holds the C scores; the label is their first
 *   argmax, except for two labels without probabilities, where a maximum
 *   score > 0 (>= 0.5 when every coefficient is >= 0) picks labels[1].
 * post_transform then applies to Z as in the other ai.onnx.ml classifiers.
 * Regressor: y = sum_v coef[v] k_v + rho[0] (SVC) or x . coef + rho[0]
 *   (LINEAR); one_class = 1 maps y to +1 (y > 0) or -1.
 * run splits the rows over the session's threads, one contiguous range per
 * thread, each with its own kernel-value buffer (scratch, slot = range).
 *
 * Validation (init, errors name the attribute): kernel_type and
 * post_transform known, kernel_params of 0 or 3 values, class labels present,
 * vectors_per_class of length C with values >= 0, support_vectors a multiple
 * of the vector count, coefficients of length (C-1) x n_vectors (SVC) or a
 * multiple of C (LINEAR), rho of length >= C(C-1)/2 (SVC) or >= 1, prob_a
 * and prob_b of equal length >= C(C-1)/2 when present.  run checks X's
 * feature count.
 *
 * Deviations from ONNX Runtime: arithmetic in float64 (ORT: float32 kernels
 * and GEMMs), so scores differ within float rounding; the regressor ignores
 * post_transform as ORT does (the spec lists it, no runtime applies it).
 */
#include "ops/ref/ml_common.h"

enum { K_LINEAR, K_POLY, K_RBF, K_SIGMOID };

typedef struct svm_params {
    bool classifier, svc;
    int kernel;
    double gamma, coef0, degree;
    int n_features;
    int n_vectors;        /* support vectors (SVC) */
    double *sv;           /* [n_vectors, n_features] */
    double *coef;         /* SVC classifier [C-1, n_vectors]; regressor [n_vectors]; LINEAR [C, n_features] */
    double *rho;
    int n_rho;
    /* classifier */
    int n_classes;
    int32_t *start, *count; /* per class: first support vector and count */
    double *prob_a, *prob_b;
    bool have_proba, all_positive;
    ml_post post;
    const int64_t *labels_i64;
    const char *const *labels_str;
    /* regressor */
    bool one_class;
} svm_params;

static inf_status svm_common(inf__node *node, inf__arena *arena, svm_params *p, inf_error *err) {
    static const char *const kernels[] = {"LINEAR", "POLY", "RBF", "SIGMOID"};
    const char *k = inf__attr_string(node, "kernel_type", "LINEAR");
    p->kernel = -1;
    for (int i = 0; i < 4; i++)
        if (!strcmp(k, kernels[i])) p->kernel = i;
    if (p->kernel < 0)
        return inf__node_error(node, err, INF_EMODEL,
                               "attribute kernel_type: unknown value '%s' (expected LINEAR, POLY, RBF or SIGMOID)", k);
    int n = 0;
    const float *kp = inf__attr_floats(node, "kernel_params", &n);
    if (n != 0 && n != 3)
        return inf__node_error(node, err, INF_EMODEL, "attribute kernel_params has %d values, expected 3 (gamma, coef0, degree)", n);
    if (n == 3) {
        p->gamma = kp[0];
        p->coef0 = kp[1];
        p->degree = kp[2];
    }
    inf_status st;
    int n_coef = 0;
    p->coef = ml_attr_doubles(node, arena, "coefficients", &n_coef, &st, err);
    if (st != INF_OK) return st;
    if (n_coef == 0) return inf__node_error(node, err, INF_EMODEL, "attribute coefficients is missing or empty");
    p->rho = ml_attr_doubles(node, arena, "rho", &p->n_rho, &st, err);
    if (st != INF_OK) return st;
    if (p->n_rho == 0) return inf__node_error(node, err, INF_EMODEL, "attribute rho is missing or empty");
    int n_sv = 0;
    p->sv = ml_attr_doubles(node, arena, "support_vectors", &n_sv, &st, err);
    if (st != INF_OK) return st;
    if (p->n_vectors > 0) {
        if (n_sv == 0 || n_sv % p->n_vectors)
            return inf__node_error(node, err, INF_EMODEL,
                                   "attribute support_vectors has %d values, not a multiple of the %d support vectors",
                                   n_sv, p->n_vectors);
        p->n_features = n_sv / p->n_vectors;
        p->svc = true;
    } else {
        p->kernel = K_LINEAR;
    }
    return INF_OK;
}

static inf_status classifier_init(inf__node *node, inf__arena *arena, inf_error *err) {
    svm_params *p = inf__op_params(arena, svm_params);
    if (!p) return INF_ENOMEM;
    p->classifier = true;
    int n_int = 0;
    p->labels_i64 = inf__attr_ints(node, "classlabels_ints", &n_int);
    const inf__attr *ls = inf__node_attr(node, "classlabels_strings");
    if (ls && ls->type == INF_ATTR_STRINGS && ls->n > 0) {
        if (n_int > 0)
            return inf__node_error(node, err, INF_EMODEL, "attributes classlabels_ints and classlabels_strings are both set");
        p->labels_str = ls->strings;
        p->labels_i64 = NULL;
        p->n_classes = ls->n;
    } else {
        p->n_classes = n_int;
    }
    if (p->n_classes == 0)
        return inf__node_error(node, err, INF_EMODEL, "one of classlabels_ints or classlabels_strings must be set");
    int c = p->n_classes;
    int n_vpc = 0;
    const int64_t *vpc = inf__attr_ints(node, "vectors_per_class", &n_vpc);
    int64_t total = 0;
    for (int i = 0; i < n_vpc; i++) {
        if (vpc[i] < 0 || vpc[i] > INT32_MAX)
            return inf__node_error(node, err, INF_EMODEL, "attribute vectors_per_class[%d] = %lld is invalid", i,
                                   (long long)vpc[i]);
        total += vpc[i];
    }
    if (total > INT32_MAX) return inf__node_error(node, err, INF_EMODEL, "attribute vectors_per_class: too many vectors");
    p->n_vectors = (int)total;
    if (total > 0 && n_vpc != c)
        return inf__node_error(node, err, INF_EMODEL, "attribute vectors_per_class has %d values for %d classes", n_vpc, c);
    inf_status st = svm_common(node, arena, p, err);
    if (st != INF_OK) return st;
    int n_coef = 0;
    (void)ml_attr_doubles(node, arena, "coefficients", &n_coef, &st, err); /* length only */
    if (st != INF_OK) return st;
    int64_t n_pairs = (int64_t)c * (c - 1) / 2;
    if (p->svc) {
        p->start = inf__arena_alloc(arena, (size_t)c * sizeof(int32_t));
        p->count = inf__arena_alloc(arena, (size_t)c * sizeof(int32_t));
        if (!p->start || !p->count) return INF_ENOMEM;
        int32_t s = 0;
        for (int i = 0; i < c; i++) {
            p->start[i] = s;
            p->count[i] = (int32_t)vpc[i];
            s += (int32_t)vpc[i];
        }
        if ((int64_t)n_coef != (int64_t)(c - 1) * p->n_vectors)
            return inf__node_error(node, err, INF_EMODEL,
                                   "attribute coefficients has %d values, expected %lld ((classes - 1) x support vectors)",
                                   n_coef, (long long)(c - 1) * p->n_vectors);
        if (p->n_rho < n_pairs)
            return inf__node_error(node, err, INF_EMODEL, "attribute rho has %d values, expected %lld (one per class pair)",
                                   p->n_rho, (long long)n_pairs);
    } else {
        if (n_coef % c)
            return inf__node_error(node, err, INF_EMODEL, "attribute coefficients has %d values, not a multiple of %d classes",
                                   n_coef, c);
        p->n_features = n_coef / c;
    }
    int na = 0, nb = 0;
    p->prob_a = ml_attr_doubles(node, arena, "prob_a", &na, &st, err);
    if (st != INF_OK) return st;
    p->prob_b = ml_attr_doubles(node, arena, "prob_b", &nb, &st, err);
    if (st != INF_OK) return st;
    if (na != nb) return inf__node_error(node, err, INF_EMODEL, "attributes prob_a (%d values) and prob_b (%d) differ in length", na, nb);
    p->have_proba = na > 0;
    if (p->have_proba && p->svc && na < n_pairs)
        return inf__node_error(node, err, INF_EMODEL, "attribute prob_a has %d values, expected %lld (one per class pair)", na,
                               (long long)n_pairs);
    p->all_positive = true;
    for (int i = 0; i < n_coef; i++)
        if (p->coef[i] < 0) p->all_positive = false;
    if ((st = ml_parse_post(node, err, &p->post)) != INF_OK) return st;
    node->params = p;
    return INF_OK;
}

static inf_status regressor_init(inf__node *node, inf__arena *arena, inf_error *err) {
    svm_params *p = inf__op_params(arena, svm_params);
    if (!p) return INF_ENOMEM;
    int64_t ns = inf__attr_int(node, "n_supports", 0);
    if (ns < 0 || ns > INT32_MAX)
        return inf__node_error(node, err, INF_EMODEL, "attribute n_supports = %lld is invalid", (long long)ns);
    p->n_vectors = (int)ns;
    p->one_class = inf__attr_int(node, "one_class", 0) != 0;
    inf_status st = svm_common(node, arena, p, err);
    if (st != INF_OK) return st;
    int n_coef = 0;
    (void)ml_attr_doubles(node, arena, "coefficients", &n_coef, &st, err);
    if (st != INF_OK) return st;
    if (p->svc && n_coef != p->n_vectors)
        return inf__node_error(node, err, INF_EMODEL, "attribute coefficients has %d values, expected %d (n_supports)", n_coef,
                               p->n_vectors);
    if (!p->svc) p->n_features = n_coef;
    if ((st = ml_parse_post(node, err, &p->post)) != INF_OK) return st;
    node->params = p;
    return INF_OK;
}

/* ---------------------------------------------------------------- evaluate */

static double kernel_value(const svm_params *p, const double *x, const double *sv) {
    int f = p->n_features;
    double s = 0;
    if (p->kernel == K_RBF) {
        for (int i = 0; i < f; i++) {
            double d = x[i] - sv[i];
            s += d * d;
        }
        return exp(-p->gamma * s);
    }
    for (int i = 0; i < f; i++) s += x[i] * sv[i];
    switch (p->kernel) {
    case K_POLY: return pow(p->gamma * s + p->coef0, p->degree);
    case K_SIGMOID: return tanh(p->gamma * s + p->coef0);
    default: return s;
    }
}

/* libsvm's multiclass_probability: r[i*c + j] pairwise, p[c] out; q is c*c + c scratch. */
static void coupling(int c, const double *r, double *p, double *q) {
    double *qp = q + (size_t)c * c;
    double eps = 0.005 / c;
    for (int t = 0; t < c; t++) {
        p[t] = 1.0 / c;
        q[t * c + t] = 0;
        for (int j = 0; j < t; j++) {
            q[t * c + t] += r[j * c + t] * r[j * c + t];
            q[t * c + j] = q[j * c + t];
        }
        for (int j = t + 1; j < c; j++) {
            q[t * c + t] += r[j * c + t] * r[j * c + t];
            q[t * c + j] = -r[j * c + t] * r[t * c + j];
        }
    }
    int max_iter = c > 100 ? c : 100;
    for (int it = 0; it < max_iter; it++) {
        double pqp = 0;
        for (int t = 0; t < c; t++) {
            qp[t] = 0;
            for (int j = 0; j < c; j++) qp[t] += q[t * c + j] * p[j];
            pqp += p[t] * qp[t];
        }
        double max_error = 0;
        for (int t = 0; t < c; t++) {
            double e = fabs(qp[t] - pqp);
            if (e > max_error) max_error = e;
        }
        if (max_error < eps) break;
        for (int t = 0; t < c; t++) {
            double diff = (-qp[t] + pqp) / q[t * c + t];
            p[t] += diff;
            pqp = (pqp + diff * (diff * q[t * c + t] + 2 * qp[t])) / (1 + diff) / (1 + diff);
            for (int j = 0; j < c; j++) {
                qp[j] = (qp[j] + diff * q[t * c + j]) / (1 + diff);
                p[j] /= 1 + diff;
            }
        }
    }
}

typedef struct svm_task {
    const svm_params *p;
    const inf_tensor *x;
    int64_t n_rows;
    int n_slots;
    double *work;       /* n_slots x slot_len doubles */
    size_t slot_len;
    float *z;
    int64_t zcols;
    int32_t *label;     /* class index per row */
} svm_task;

static void classify_row(const svm_params *p, const double *x, double *w, float *z, int32_t *label) {
    int c = p->n_classes;
    int nv = p->n_vectors;
    double *kv = w, *sc = kv + nv, *r = sc + (c > 2 ? (size_t)c * c : 4), *prob = r + (size_t)c * c,
           *q = prob + c;
    int32_t *votes = (int32_t *)(q + (size_t)c * c + c);
    if (!p->svc) { /* LINEAR: one score per class */
        for (int k = 0; k < c; k++) {
            const double *cf = p->coef + (size_t)k * p->n_features;
            double s = p->rho[0];
            for (int i = 0; i < p->n_features; i++) s += x[i] * cf[i];
            sc[k] = s;
        }
        int best = 0;
        for (int k = 1; k < c; k++)
            if (sc[k] > sc[best]) best = k;
        double mx = sc[best];
        if (c == 2 && !p->have_proba && ((p->all_positive && mx >= 0.5) || (!p->all_positive && mx > 0))) best = 1;
        *label = best;
        if (c == 1) {
            ml_write_binary(p->post, -1, sc[0], z);
            return;
        }
        ml_post_apply(p->post, sc, c);
        for (int k = 0; k < c; k++) z[k] = (float)sc[k];
        return;
    }
    for (int v = 0; v < nv; v++) kv[v] = kernel_value(p, x, p->sv + (size_t)v * p->n_features);
    for (int k = 0; k < c; k++) votes[k] = 0;
    int idx = 0;
    for (int i = 0; i < c - 1; i++) {
        for (int j = i + 1; j < c; j++, idx++) {
            double s = 0;
            const double *c1 = p->coef + (size_t)(j - 1) * nv + p->start[i];
            const double *k1 = kv + p->start[i];
            for (int m = 0; m < p->count[i]; m++) s += c1[m] * k1[m];
            const double *c2 = p->coef + (size_t)i * nv + p->start[j];
            const double *k2 = kv + p->start[j];
            for (int m = 0; m < p->count[j]; m++) s += c2[m] * k2[m];
            s += p->rho[idx];
            sc[idx] = s;
            votes[s > 0 ? i : j]++;
        }
    }
    int best = 0;
    for (int k = 1; k < c; k++)
        if (votes[k] > votes[best]) best = k;
    *label = best;
    if (p->have_proba) {
        for (int k = 0; k < c * c; k++) r[k] = 0;
        idx = 0;
        for (int i = 0; i < c - 1; i++)
            for (int j = i + 1; j < c; j++, idx++) {
                double v = 1 - ml_logistic(sc[idx] * p->prob_a[idx] + p->prob_b[idx]);
                v = v < 1e-7 ? 1e-7 : v > 1 - 1e-7 ? 1 - 1e-7 : v;
                r[i * c + j] = v;
                r[j * c + i] = 1 - v;
            }
        coupling(c, r, prob, q);
        ml_post_apply(p->post, prob, c);
        for (int k = 0; k < c; k++) z[k] = (float)prob[k];
        return;
    }
    if (c == 2) {
        ml_write_binary(p->post, p->post == ML_POST_NONE ? 2 : 0, sc[0], z);
        if (p->post == ML_POST_PROBIT) z[1] = 0;
        return;
    }
    int n_pairs = c * (c - 1) / 2;
    ml_post_apply(p->post, sc, n_pairs);
    for (int k = 0; k < n_pairs; k++) z[k] = (float)sc[k];
}

static void svm_rows(void *arg, int64_t slot_begin, int64_t slot_end) {
    const svm_task *t = arg;
    const svm_params *p = t->p;
    for (int64_t slot = slot_begin; slot < slot_end; slot++) {
        int64_t r0 = t->n_rows * slot / t->n_slots, r1 = t->n_rows * (slot + 1) / t->n_slots;
        double *w = t->work + slot * t->slot_len;
        double *x = w; /* the row in double */
        double *rest = w + p->n_features;
        for (int64_t row = r0; row < r1; row++) {
            for (int i = 0; i < p->n_features; i++) x[i] = ml_get(t->x, row * p->n_features + i);
            if (p->classifier) {
                classify_row(p, x, rest, t->z + row * t->zcols, &t->label[row]);
                continue;
            }
            double y = p->rho[0];
            if (p->svc) {
                for (int v = 0; v < p->n_vectors; v++)
                    y += p->coef[v] * kernel_value(p, x, p->sv + (size_t)v * p->n_features);
            } else {
                for (int i = 0; i < p->n_features; i++) y += x[i] * p->coef[i];
            }
            if (p->one_class) y = y > 0 ? 1 : -1;
            t->z[row] = (float)y;
        }
    }
}

static inf_status svm_run(inf__kernel_ctx *ctx) {
    const svm_params *p = ctx->node->params;
    const inf_tensor *x = ctx->in[0];
    int64_t n = 0, f = 0;
    inf_status st = ml_input_matrix(ctx, x, &n, &f);
    if (st != INF_OK) return st;
    if (f != p->n_features)
        return inf__kernel_error(ctx, INF_ESHAPE, "input X: expected %d features, got %lld", p->n_features, (long long)f);
    int c = p->n_classes;
    int64_t zcols = 1;
    if (p->classifier) zcols = p->svc && !p->have_proba ? (c > 2 ? (int64_t)c * (c - 1) / 2 : 2) : c;
    inf_tensor *y = NULL, *z;
    int64_t ydims[1] = {n}, zdims[2] = {n, zcols};
    if (p->classifier) {
        if ((st = inf__kernel_output(ctx, 0, p->labels_str ? INF_DTYPE_STRING : INF_DTYPE_I64, 1, ydims, &y)) != INF_OK ||
            (st = inf__kernel_output(ctx, 1, INF_DTYPE_F32, 2, zdims, &z)) != INF_OK)
            return st;
    } else if ((st = inf__kernel_output(ctx, 0, INF_DTYPE_F32, 2, zdims, &z)) != INF_OK) {
        return st;
    }
    if (n == 0) return INF_OK;
    int slots = inf__pool_size(ctx->pool);
    if (slots < 1) slots = 1;
    if (slots > n) slots = (int)n;
    /* per slot: row, kernel values, scores, r, probabilities, Q, Qp, votes */
    size_t cc = (size_t)(c > 2 ? c : 2);
    size_t slot_len = (size_t)p->n_features + (size_t)p->n_vectors + cc * cc + 4 + 2 * cc * cc + 2 * cc + cc + 8;
    svm_task t = {.p = p, .x = x, .n_rows = n, .n_slots = slots, .slot_len = slot_len, .z = z->data, .zcols = zcols};
    t.work = inf__kernel_scratch(ctx, (size_t)slots * slot_len * sizeof(double) + (size_t)n * sizeof(int32_t));
    if (!t.work) return INF_ENOMEM;
    t.label = (int32_t *)(t.work + (size_t)slots * slot_len);
    inf__pool_range(ctx->pool, slots, 1, svm_rows, &t);
    if (!p->classifier) return INF_OK;
    for (int64_t i = 0; i < n; i++) {
        if (!p->labels_str) {
            ((int64_t *)y->data)[i] = p->labels_i64[t.label[i]];
            continue;
        }
        const char *s = p->labels_str[t.label[i]];
        if ((st = inf_tensor_set_string(y, i, s, strlen(s))) != INF_OK)
            return inf__kernel_error(ctx, st, "out of memory writing the labels");
    }
    return INF_OK;
}

const inf__op_impl op_ml_svm_classifier = {classifier_init, svm_run};
const inf__op_impl op_ml_svm_regressor = {regressor_init, svm_run};
