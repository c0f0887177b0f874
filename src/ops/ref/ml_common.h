/*
 * ml_common.h -- helpers shared by the ai.onnx.ml kernels (ml_tree.c,
 * ml_linear.c, ml_svm.c, ml_preprocess.c, ml_zipmap.c): post transforms,
 * reading float/double attribute pairs (x / x_as_tensor) and the feature
 * matrix of a classifier or regressor input.
 *
 * Post transforms follow ONNX Runtime (the de facto reference of the
 * ai.onnx.ml domain, mirrored by onnx.reference in later ONNX releases):
 * LOGISTIC 1/(1+e^-x), SOFTMAX, SOFTMAX_ZERO (softmax over the non-zero
 * scores, zeros stay zero), PROBIT sqrt(2)*erfinv(2x-1) with the Winitzki
 * erfinv approximation ORT and onnx.reference use (exact to ~2e-3, so that
 * models give the same numbers as there), in float as ORT computes it.
 */
#ifndef INF_OPS_REF_ML_COMMON_H
#define INF_OPS_REF_ML_COMMON_H

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "ops/ops.h"

typedef enum ml_post {
    ML_POST_NONE = 0,
    ML_POST_SOFTMAX,
    ML_POST_LOGISTIC,
    ML_POST_SOFTMAX_ZERO,
    ML_POST_PROBIT,
} ml_post;

/* Parses the post_transform attribute; INF_EMODEL naming it if unknown. */
static inline inf_status ml_parse_post(const inf__node *node, inf_error *err, ml_post *out) {
    static const char *const names[] = {"NONE", "SOFTMAX", "LOGISTIC", "SOFTMAX_ZERO", "PROBIT"};
    const char *s = inf__attr_string(node, "post_transform", "NONE");
    for (int i = 0; i < 5; i++)
        if (!strcmp(s, names[i])) {
            *out = (ml_post)i;
            return INF_OK;
        }
    return inf__node_error(node, err, INF_EMODEL,
                           "attribute post_transform: unknown value '%s' (expected NONE, SOFTMAX, "
                           "LOGISTIC, SOFTMAX_ZERO or PROBIT)", s);
}

static inline double ml_logistic(double x) {
    return x >= 0 ? 1.0 / (1.0 + exp(-x)) : exp(x) / (1.0 + exp(x));
}

/* erfinv by Winitzki's approximation (a = 0.147), computed in float as ONNX
 * Runtime's ErfInv (ml_common.h): with t = 2/(pi a) + ln(1-x^2)/2,
 * erfinv(x) = sgn(x) sqrt(sqrt(t^2 - ln(1-x^2)/a) - t).  Outside [-1, 1]
 * the log is NaN and so is the result, as in ORT. */
static inline float ml_erfinv(float x) {
    float sgn = x < 0 ? -1.0f : 1.0f;
    float y = (1 - x) * (1 + x);
    float lg = logf(y);
    float t = 2 / (3.14159265f * 0.147f) + 0.5f * lg;
    float lg_a = 1 / 0.147f * lg;
    float root = -t + sqrtf(t * t - lg_a);
    return sgn * sqrtf(root);
}

/* PROBIT: sqrt(2) erfinv(2x - 1), in float as ORT's ComputeProbit. */
static inline double ml_probit(double x) { return (double)(1.41421356f * ml_erfinv(2 * (float)x - 1)); }

static inline void ml_softmax(double *v, int n, bool zero_mode) {
    double mx = -INFINITY, sum = 0;
    for (int i = 0; i < n; i++)
        if (v[i] > mx) mx = v[i];
    for (int i = 0; i < n; i++) {
        if (zero_mode && fabs(v[i]) <= 1e-7) {
            v[i] = 0;
            continue;
        }
        v[i] = exp(v[i] - mx);
        sum += v[i];
    }
    for (int i = 0; i < n && sum > 0; i++) v[i] /= sum;
}

/* Applies the transform to n scores in place. */
static inline void ml_post_apply(ml_post post, double *v, int n) {
    switch (post) {
    case ML_POST_SOFTMAX: ml_softmax(v, n, false); break;
    case ML_POST_SOFTMAX_ZERO: ml_softmax(v, n, true); break;
    case ML_POST_LOGISTIC:
        for (int i = 0; i < n; i++) v[i] = ml_logistic(v[i]);
        break;
    case ML_POST_PROBIT:
        for (int i = 0; i < n; i++) v[i] = ml_probit(v[i]);
        break;
    case ML_POST_NONE: break;
    }
}

/* Two-class scores written by ORT's write_binary_scores; `mode` is its
 * add_second_class (0/1 probabilities, 2/3 margins, -1 score only). */
static inline void ml_write_binary(ml_post post, int mode, double s, float *z) {
    if (post == ML_POST_PROBIT) {
        z[0] = (float)ml_probit(s);
        return;
    }
    switch (mode) {
    case 0:
    case 1:
        z[0] = (float)(1 - s);
        z[1] = (float)s;
        break;
    case 2:
    case 3:
        if (post == ML_POST_LOGISTIC) {
            z[0] = (float)ml_logistic(-s);
            z[1] = (float)ml_logistic(s);
        } else if (mode == 2) {
            z[0] = (float)-s;
            z[1] = (float)s;
        } else {
            z[0] = (float)s;
            z[1] = (float)-s;
        }
        break;
    default: z[0] = (float)s;
    }
}

/* A float list attribute `name`, or its double form `name`_as_tensor (which
 * wins when both are present).  Returns a model-arena array of *n doubles, or
 * NULL with *n = 0 when neither is present.  *bad is set on an allocation
 * failure or a non-float tensor. */
static inline double *ml_attr_doubles(const inf__node *node, inf__arena *arena, const char *name,
                                      int *n, inf_status *st, inf_error *err) {
    char tname[96];
    snprintf(tname, sizeof tname, "%s_as_tensor", name);
    *n = 0;
    *st = INF_OK;
    const inf_tensor *t = inf__attr_tensor(node, tname);
    int nf = 0;
    const float *f = inf__attr_floats(node, name, &nf);
    int64_t count = t ? inf_tensor_numel(t) : nf;
    if (t && t->dtype != INF_DTYPE_F64 && t->dtype != INF_DTYPE_F32) {
        *st = inf__node_error(node, err, INF_EMODEL, "attribute %s: expected a double tensor, got %s",
                              tname, inf_dtype_name(t->dtype));
        return NULL;
    }
    if (!t && !f) return NULL;
    if (count > INT32_MAX) {
        *st = inf__node_error(node, err, INF_EMODEL, "attribute %s: too many values", t ? tname : name);
        return NULL;
    }
    double *out = inf__arena_alloc(arena, ((size_t)count + 1) * sizeof(double));
    if (!out) {
        *st = INF_ENOMEM;
        return NULL;
    }
    for (int64_t i = 0; i < count; i++)
        out[i] = !t ? f[i] : t->dtype == INF_DTYPE_F64 ? ((const double *)t->data)[i] : ((const float *)t->data)[i];
    *n = (int)count;
    return out;
}

/* The [N, C] feature matrix of input X (a 1-D X is one row).  Accepts
 * float32, float64, int64 and int32. */
static inline inf_status ml_input_matrix(inf__kernel_ctx *ctx, const inf_tensor *x, int64_t *n, int64_t *c) {
    if (!x || x->kind != INF_KIND_TENSOR)
        return inf__kernel_error(ctx, INF_ETYPE, "input X: expected a tensor");
    if (x->dtype != INF_DTYPE_F32 && x->dtype != INF_DTYPE_F64 && x->dtype != INF_DTYPE_I64 &&
        x->dtype != INF_DTYPE_I32)
        return inf__kernel_error(ctx, INF_ETYPE, "input X: expected float, double, int64 or int32, got %s",
                                 inf_dtype_name(x->dtype));
    if (x->ndim == 1) {
        *n = 1;
        *c = x->dims[0];
    } else if (x->ndim == 2) {
        *n = x->dims[0];
        *c = x->dims[1];
    } else {
        return inf__kernel_error(ctx, INF_ESHAPE, "input X: expected rank 1 or 2, got rank %d", x->ndim);
    }
    return INF_OK;
}

/* Element i of a numeric tensor as double (float32, float64, int64, int32). */
static inline double ml_get(const inf_tensor *x, int64_t i) {
    switch (x->dtype) {
    case INF_DTYPE_F32: return ((const float *)x->data)[i];
    case INF_DTYPE_F64: return ((const double *)x->data)[i];
    case INF_DTYPE_I64: return (double)((const int64_t *)x->data)[i];
    case INF_DTYPE_I32: return ((const int32_t *)x->data)[i];
    default: return inf__tensor_get_f64(x, i);
    }
}

#endif /* INF_OPS_REF_ML_COMMON_H */
