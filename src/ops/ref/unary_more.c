/*
 * unary_more.c -- element-wise math and activation ops of one input:
 *
 *   Cos, Sin, Tan, Acos, Asin, Atan         opsets 7-17   T: float16/32/64, bfloat16
 *   Cosh, Sinh, Asinh, Acosh, Atanh         opsets 9-17   T: float types
 *   Floor, Ceil                             opsets 1-17   T: float types
 *   Round (half to even)                    opsets 11-17  T: float types
 *   Elu (alpha 1), Selu (alpha, gamma),     opsets 1-17   T: float types
 *   HardSigmoid (alpha 0.2, beta 0.5),
 *   Softplus, Softsign
 *   ThresholdedRelu (alpha 1)               opsets 10-17  T: float types
 *   Celu (alpha 1, must not be 0)           opsets 12-17  T: float types (spec: float32)
 *   HardSwish                               opsets 14-17  T: float types
 *   Sign                                    opsets 9-17   T: float and integer types
 *   Shrink (lambd 0.5, bias 0)              opsets 9-17   T: float and integer types
 *   IsNaN                                   opsets 9-17   T: float types -> bool
 *   IsInf (detect_positive/negative 1)      opsets 10-17  T: float types -> bool
 *
 * Float values are computed in double and rounded once to the element type
 * (float16 and bfloat16 included); float32 tensors are split across the
 * session's threads when large.  Sign keeps NaN; Sign on integers is exact.
 * Shrink on integers computes in double and truncates the result to the
 * type (as a cast would).  The legacy attributes of opsets 1-5
 * (consumed_inputs) are ignored.
 *   Mish  x * tanh(softplus(x))               opsets 18-26  T: float types
 *   Swish x * sigmoid(alpha * x) (alpha 1)    opset 24-26   T: float types
 */
#include <math.h>
#include <string.h>

#include "ops/ref/math_util.h"

typedef enum mop {
    M_ACOS, M_ACOSH, M_ASIN, M_ASINH, M_ATAN, M_ATANH, M_COS, M_COSH, M_SIN, M_SINH, M_TAN,
    M_FLOOR, M_CEIL, M_ROUND, M_ELU, M_SELU, M_CELU, M_HARD_SIGMOID, M_HARD_SWISH, M_SOFTPLUS,
    M_SOFTSIGN, M_THRESHOLDED_RELU, M_SIGN, M_SHRINK, M_ISNAN, M_ISINF, M_MISH, M_SWISH,
} mop;

enum { TAKES_FLOAT = 1, TAKES_INT = 2 };

static const struct {
    const char *name;
    mop op;
    int takes;
    float alpha, beta; /* attribute defaults (Selu: beta is gamma) */
} mop_table[] = {
    {"Acos", M_ACOS, TAKES_FLOAT, 0, 0},
    {"Acosh", M_ACOSH, TAKES_FLOAT, 0, 0},
    {"Asin", M_ASIN, TAKES_FLOAT, 0, 0},
    {"Asinh", M_ASINH, TAKES_FLOAT, 0, 0},
    {"Atan", M_ATAN, TAKES_FLOAT, 0, 0},
    {"Atanh", M_ATANH, TAKES_FLOAT, 0, 0},
    {"Cos", M_COS, TAKES_FLOAT, 0, 0},
    {"Cosh", M_COSH, TAKES_FLOAT, 0, 0},
    {"Sin", M_SIN, TAKES_FLOAT, 0, 0},
    {"Sinh", M_SINH, TAKES_FLOAT, 0, 0},
    {"Tan", M_TAN, TAKES_FLOAT, 0, 0},
    {"Floor", M_FLOOR, TAKES_FLOAT, 0, 0},
    {"Ceil", M_CEIL, TAKES_FLOAT, 0, 0},
    {"Round", M_ROUND, TAKES_FLOAT, 0, 0},
    {"Elu", M_ELU, TAKES_FLOAT, 1.0f, 0},
    {"Selu", M_SELU, TAKES_FLOAT, 1.67326319217681884765625f, 1.05070102214813232421875f},
    {"Celu", M_CELU, TAKES_FLOAT, 1.0f, 0},
    {"HardSigmoid", M_HARD_SIGMOID, TAKES_FLOAT, 0.2f, 0.5f},
    {"HardSwish", M_HARD_SWISH, TAKES_FLOAT, 0, 0},
    {"Softplus", M_SOFTPLUS, TAKES_FLOAT, 0, 0},
    {"Softsign", M_SOFTSIGN, TAKES_FLOAT, 0, 0},
    {"ThresholdedRelu", M_THRESHOLDED_RELU, TAKES_FLOAT, 1.0f, 0},
    {"Sign", M_SIGN, TAKES_FLOAT | TAKES_INT, 0, 0},
    {"Shrink", M_SHRINK, TAKES_FLOAT | TAKES_INT, 0.5f, 0.0f}, /* lambd, bias */
    {"IsNaN", M_ISNAN, TAKES_FLOAT, 0, 0},
    {"IsInf", M_ISINF, TAKES_FLOAT, 0, 0},
    {"Mish", M_MISH, TAKES_FLOAT, 0, 0},
    {"Swish", M_SWISH, TAKES_FLOAT, 1.0f, 0},
};

typedef struct mop_params {
    mop op;
    int takes;
    double alpha, beta;
    bool detect_pos, detect_neg; /* IsInf */
} mop_params;

static inf_status mop_init(inf__node *node, inf__arena *arena, inf_error *err) {
    mop_params *p = inf__op_params(arena, mop_params);
    if (!p) return INF_ENOMEM;
    size_t k = 0, n = sizeof mop_table / sizeof mop_table[0];
    while (k < n && strcmp(mop_table[k].name, node->op_type) != 0) k++;
    if (k == n)
        return inf__node_error(node, err, INF_EINTERNAL, "op_unary_math does not implement %s",
                               node->op_type);
    p->op = mop_table[k].op;
    p->takes = mop_table[k].takes;
    if (p->op == M_SHRINK) {
        p->alpha = inf__attr_float(node, "lambd", mop_table[k].alpha);
        p->beta = inf__attr_float(node, "bias", mop_table[k].beta);
    } else if (p->op == M_SELU) {
        p->alpha = inf__attr_float(node, "alpha", mop_table[k].alpha);
        p->beta = inf__attr_float(node, "gamma", mop_table[k].beta);
    } else {
        p->alpha = inf__attr_float(node, "alpha", mop_table[k].alpha);
        p->beta = inf__attr_float(node, "beta", mop_table[k].beta);
    }
    if (p->op == M_CELU && p->alpha == 0)
        return inf__node_error(node, err, INF_EMODEL, "attribute alpha must not be 0");
    p->detect_pos = inf__attr_int(node, "detect_positive", 1) != 0;
    p->detect_neg = inf__attr_int(node, "detect_negative", 1) != 0;
    node->params = p;
    return INF_OK;
}

static double softplus(double x) {
    return x > 0 ? x + log1p(exp(-x)) : log1p(exp(x));
}

static double clamp01(double v) { return v < 0 ? 0 : v > 1 ? 1 : v; }

static double mop_f64(const mop_params *p, double x) {
    double a = p->alpha, b = p->beta;
    switch (p->op) {
    case M_ACOS: return acos(x);
    case M_ACOSH: return acosh(x);
    case M_ASIN: return asin(x);
    case M_ASINH: return asinh(x);
    case M_ATAN: return atan(x);
    case M_ATANH: return atanh(x);
    case M_COS: return cos(x);
    case M_COSH: return cosh(x);
    case M_SIN: return sin(x);
    case M_SINH: return sinh(x);
    case M_TAN: return tan(x);
    case M_FLOOR: return floor(x);
    case M_CEIL: return ceil(x);
    case M_ROUND: return nearbyint(x); /* default rounding mode: half to even */
    case M_ELU: return x < 0 ? a * expm1(x) : x;
    case M_SELU: return x > 0 ? b * x : b * a * expm1(x);
    case M_CELU: return (x > 0 ? x : 0) + fmin(0, a * expm1(x / a));
    case M_HARD_SIGMOID: return clamp01(a * x + b);
    case M_HARD_SWISH: return x * clamp01(x / 6 + 0.5);
    case M_SOFTPLUS: return softplus(x);
    case M_SOFTSIGN: return x / (1 + fabs(x));
    case M_MISH: return x * tanh(softplus(x));
    case M_SWISH: return x / (1 + exp(-a * x));
    case M_THRESHOLDED_RELU: return x > a ? x : 0;
    case M_SIGN: return isnan(x) ? x : (x > 0) - (x < 0);
    case M_SHRINK: return x < -a ? x + b : x > a ? x - b : 0;
    case M_ISNAN: return isnan(x);
    case M_ISINF: return isinf(x) && (x > 0 ? p->detect_pos : p->detect_neg);
    }
    return x;
}

typedef struct mop_job {
    const mop_params *p;
    const inf_tensor *x;
    inf_tensor *y;
} mop_job;

static void mop_range(void *arg, int64_t begin, int64_t end) {
    const mop_job *job = arg;
    const mop_params *p = job->p;
    if (job->y->dtype == INF_DTYPE_BOOL && job->x->dtype == INF_DTYPE_F32 && p->op == M_ISNAN) {
        /* torch's SDPA export runs IsNaN over every attention probability: a loop that vectorises
         * (x != x is true exactly for NaN) instead of a double and a switch per element */
        const float *x = job->x->data;
        uint8_t *y = job->y->data;
        for (int64_t i = begin; i < end; i++) y[i] = x[i] != x[i];
    } else if (job->y->dtype == INF_DTYPE_BOOL) { /* IsNaN, IsInf */
        uint8_t *y = job->y->data;
        for (int64_t i = begin; i < end; i++) y[i] = mop_f64(p, inf__tensor_get_f64(job->x, i)) != 0;
    } else if (job->x->dtype == INF_DTYPE_F32) {
        const float *x = job->x->data;
        float *y = job->y->data;
        for (int64_t i = begin; i < end; i++) y[i] = (float)mop_f64(p, x[i]);
    } else if (job->x->dtype == INF_DTYPE_F64) {
        const double *x = job->x->data;
        double *y = job->y->data;
        for (int64_t i = begin; i < end; i++) y[i] = mop_f64(p, x[i]);
    } else { /* float16, bfloat16 */
        for (int64_t i = begin; i < end; i++)
            inf__tensor_set_f64(job->y, i, mop_f64(p, inf__tensor_get_f64(job->x, i)));
    }
}

/* Sign and Shrink on integer tensors. */
static void mop_int(const mop_params *p, const inf_tensor *x, inf_tensor *y, int64_t n) {
    bool u = math_is_unsigned(x->dtype);
    for (int64_t i = 0; i < n; i++) {
        int64_t v = inf__tensor_get_i64(x, i);
        if (p->op == M_SIGN)
            math_set_i64(y, i, u ? v != 0 : (v > 0) - (v < 0));
        else
            inf__tensor_set_f64(y, i, mop_f64(p, u ? (double)(uint64_t)v : (double)v));
    }
}

static inf_status mop_run(inf__kernel_ctx *ctx) {
    const mop_params *p = ctx->node->params;
    const inf_tensor *x;
    inf_status st = math_input(ctx, 0, "X", true, &x);
    if (st != INF_OK) return st;
    bool ok = inf__dtype_is_float(x->dtype) ? (p->takes & TAKES_FLOAT)
              : inf__dtype_is_int(x->dtype) ? (p->takes & TAKES_INT)
                                            : false;
    if (!ok)
        return inf__kernel_error(ctx, INF_ETYPE, "input X: expected %s, got %s",
                                 p->takes & TAKES_INT ? "a float or integer type" : "a float type",
                                 inf_dtype_name(x->dtype));
    bool to_bool = p->op == M_ISNAN || p->op == M_ISINF;
    inf_tensor *y;
    st = inf__kernel_output(ctx, 0, to_bool ? INF_DTYPE_BOOL : x->dtype, x->ndim, x->dims, &y);
    if (st != INF_OK) return st;
    int64_t n = inf_tensor_numel(x);
    if (inf__dtype_is_int(x->dtype)) {
        mop_int(p, x, y, n);
        return INF_OK;
    }
    mop_job job = {p, x, y};
    if (ctx->pool && n >= 32768)
        inf__pool_range(ctx->pool, n, 16384, mop_range, &job);
    else
        mop_range(&job, 0, n);
    return INF_OK;
}

const inf__op_impl op_unary_math = {mop_init, mop_run};
