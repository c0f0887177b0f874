/*
 * unary.c -- element-wise ops of one input, and Clip:
 *
 *   Sqrt, Exp, Log, Tanh, Sigmoid, Reciprocal  opsets 1-17  T: float16/32/64, bfloat16
 *   LeakyRelu (alpha, default 0.01)            opsets 1-17  T: float16/32/64, bfloat16
 *   Erf                                        opsets 9-17  T: float types and every integer type
 *   Relu                                       opsets 1-17  T: float types, int8..int64 (spec: 14+)
 *   Neg                                        opsets 1-17  T: float types, int8..int64
 *   Abs                                        opsets 1-17  T: float types, every integer type
 *   Not                                        opsets 1-17  T: bool
 *   BitwiseNot                                 opsets 18-26 T: int8..int64, uint8..uint64
 *   Clip  opsets 1-10: attributes min/max (float types);
 *         opsets 11-17: optional scalar inputs min/max of the input's type
 *         (integer types from opset 12).  y = min(max(x, min), max), so
 *         min > max gives max everywhere, and NaN stays NaN.
 *
 * float32 and float64 run as plain loops, split across the session's threads
 * when large; float32 Exp, Tanh, Sigmoid and Erf use the vectorised
 * functions of ops/vmath.h (AVX2 when the CPU has it; error bounds there and
 * in tests/kernels/test_vmath.c), the rest the float libm functions; float16 and
 * bfloat16 are computed in float32, one element at a time.  Integer inputs
 * go through int64 (Erf through double); Neg and Abs wrap for INT_MIN like
 * C's two's complement.  The legacy attributes of opsets 1-5 (consumed_inputs,
 * is_test) are ignored.
 */
#include <float.h>
#include <math.h>
#include <string.h>

#include "ops/ops.h"
#include "ops/vmath.h"

typedef enum unop {
    UN_SQRT, UN_EXP, UN_LOG, UN_TANH, UN_SIGMOID, UN_RECIPROCAL, UN_LEAKY_RELU,
    UN_ERF, UN_RELU, UN_NEG, UN_ABS, UN_NOT, UN_BITWISE_NOT,
} unop;

/* Which dtypes each op accepts besides the float types. */
enum { ACCEPT_FLOAT = 1, ACCEPT_SIGNED = 2, ACCEPT_UNSIGNED = 4, ACCEPT_BOOL = 8 };

static const struct {
    const char *name;
    unop op;
    int accept;
} unop_table[] = {
    {"Sqrt", UN_SQRT, ACCEPT_FLOAT},
    {"Exp", UN_EXP, ACCEPT_FLOAT},
    {"Log", UN_LOG, ACCEPT_FLOAT},
    {"Tanh", UN_TANH, ACCEPT_FLOAT},
    {"Sigmoid", UN_SIGMOID, ACCEPT_FLOAT},
    {"Reciprocal", UN_RECIPROCAL, ACCEPT_FLOAT},
    {"LeakyRelu", UN_LEAKY_RELU, ACCEPT_FLOAT},
    {"Erf", UN_ERF, ACCEPT_FLOAT | ACCEPT_SIGNED | ACCEPT_UNSIGNED},
    {"Relu", UN_RELU, ACCEPT_FLOAT | ACCEPT_SIGNED},
    {"Neg", UN_NEG, ACCEPT_FLOAT | ACCEPT_SIGNED},
    {"Abs", UN_ABS, ACCEPT_FLOAT | ACCEPT_SIGNED | ACCEPT_UNSIGNED},
    {"Not", UN_NOT, ACCEPT_BOOL},
    {"BitwiseNot", UN_BITWISE_NOT, ACCEPT_SIGNED | ACCEPT_UNSIGNED},
};

typedef struct unary_params {
    unop op;
    int accept;
    float alpha;
} unary_params;

static inf_status unary_init(inf__node *node, inf__arena *arena, inf_error *err) {
    unary_params *p = inf__op_params(arena, unary_params);
    if (!p) return INF_ENOMEM;
    size_t k = 0, n = sizeof unop_table / sizeof unop_table[0];
    while (k < n && strcmp(unop_table[k].name, node->op_type) != 0) k++;
    if (k == n)
        return inf__node_error(node, err, INF_EINTERNAL, "op_unary does not implement %s",
                               node->op_type);
    p->op = unop_table[k].op;
    p->accept = unop_table[k].accept;
    p->alpha = inf__attr_float(node, "alpha", 0.01f);
    node->params = p;
    return INF_OK;
}

/* ---- float ---- */

static float sigmoid_f32(float x) {
    if (x >= 0) return 1.0f / (1.0f + expf(-x));
    float e = expf(x);
    return e / (1.0f + e);
}

static double sigmoid_f64(double x) {
    if (x >= 0) return 1.0 / (1.0 + exp(-x));
    double e = exp(x);
    return e / (1.0 + e);
}

static float unary_f32_scalar(unop op, float alpha, float x) {
    switch (op) {
    case UN_SQRT: return sqrtf(x);
    case UN_EXP: return expf(x);
    case UN_LOG: return logf(x);
    case UN_TANH: return tanhf(x);
    case UN_SIGMOID: return sigmoid_f32(x);
    case UN_RECIPROCAL: return 1.0f / x;
    case UN_LEAKY_RELU: return x < 0 ? alpha * x : x;
    case UN_ERF: return erff(x);
    case UN_RELU: return x > 0 ? x : 0.0f;
    case UN_NEG: return -x;
    case UN_ABS: return fabsf(x);
    default: return x;
    }
}

static double unary_f64_scalar(unop op, double alpha, double x) {
    switch (op) {
    case UN_SQRT: return sqrt(x);
    case UN_EXP: return exp(x);
    case UN_LOG: return log(x);
    case UN_TANH: return tanh(x);
    case UN_SIGMOID: return sigmoid_f64(x);
    case UN_RECIPROCAL: return 1.0 / x;
    case UN_LEAKY_RELU: return x < 0 ? alpha * x : x;
    case UN_ERF: return erf(x);
    case UN_RELU: return x > 0 ? x : 0.0;
    case UN_NEG: return -x;
    case UN_ABS: return fabs(x);
    default: return x;
    }
}

/* The common ops as separate loops so that the simple ones vectorise.  x
 * and y may be the same array (in-place execution, graph/memplan.c): every
 * loop reads x[i] before it writes y[i], so no restrict. */
static void unary_f32(unop op, float alpha, const float *x, float *y, int64_t n) {
    int64_t i;
    switch (op) {
    case UN_RELU: for (i = 0; i < n; i++) y[i] = x[i] > 0 ? x[i] : 0.0f; break;
    case UN_NEG: for (i = 0; i < n; i++) y[i] = -x[i]; break;
    case UN_ABS: for (i = 0; i < n; i++) y[i] = fabsf(x[i]); break;
    case UN_RECIPROCAL: for (i = 0; i < n; i++) y[i] = 1.0f / x[i]; break;
    case UN_SQRT: for (i = 0; i < n; i++) y[i] = sqrtf(x[i]); break;
    case UN_LEAKY_RELU: for (i = 0; i < n; i++) y[i] = x[i] < 0 ? alpha * x[i] : x[i]; break;
    case UN_EXP: inf__vmath_best()->exp(x, y, n); break;
    case UN_TANH: inf__vmath_best()->tanh(x, y, n); break;
    case UN_SIGMOID: inf__vmath_best()->sigmoid(x, y, n); break;
    case UN_ERF: inf__vmath_best()->erf(x, y, n); break;
    default: for (i = 0; i < n; i++) y[i] = unary_f32_scalar(op, alpha, x[i]); break;
    }
}

typedef struct unary_job {
    const unary_params *p;
    const inf_tensor *x;
    inf_tensor *y;
} unary_job;

static void unary_job_range(void *arg, int64_t begin, int64_t end) {
    const unary_job *job = arg;
    unop op = job->p->op;
    float alpha = job->p->alpha;
    int64_t n = end - begin;
    switch (job->x->dtype) {
    case INF_DTYPE_F32:
        unary_f32(op, alpha, (const float *)job->x->data + begin, (float *)job->y->data + begin, n);
        break;
    case INF_DTYPE_F64: {
        const double *x = (const double *)job->x->data + begin;
        double *y = (double *)job->y->data + begin;
        for (int64_t i = 0; i < n; i++) y[i] = unary_f64_scalar(op, alpha, x[i]);
        break;
    }
    case INF_DTYPE_F16: {
        const uint16_t *x = (const uint16_t *)job->x->data + begin;
        uint16_t *y = (uint16_t *)job->y->data + begin;
        for (int64_t i = 0; i < n; i++)
            y[i] = inf_f32_to_f16(unary_f32_scalar(op, alpha, inf_f16_to_f32(x[i])));
        break;
    }
    case INF_DTYPE_BF16: {
        const uint16_t *x = (const uint16_t *)job->x->data + begin;
        uint16_t *y = (uint16_t *)job->y->data + begin;
        for (int64_t i = 0; i < n; i++)
            y[i] = inf_f32_to_bf16(unary_f32_scalar(op, alpha, inf_bf16_to_f32(x[i])));
        break;
    }
    default: break;
    }
}

/* ---- integers and bool ---- */

/* Writes v to integer element i, truncated to the type's width. */
static void store_int(inf_tensor *t, int64_t i, int64_t v) {
    void *d = t->data;
    switch (t->dtype) {
    case INF_DTYPE_I8: ((int8_t *)d)[i] = (int8_t)(uint8_t)(uint64_t)v; break;
    case INF_DTYPE_I16: ((int16_t *)d)[i] = (int16_t)(uint16_t)(uint64_t)v; break;
    case INF_DTYPE_I32: ((int32_t *)d)[i] = (int32_t)(uint32_t)(uint64_t)v; break;
    case INF_DTYPE_I64: ((int64_t *)d)[i] = v; break;
    case INF_DTYPE_U8: ((uint8_t *)d)[i] = (uint8_t)v; break;
    case INF_DTYPE_U16: ((uint16_t *)d)[i] = (uint16_t)v; break;
    case INF_DTYPE_U32: ((uint32_t *)d)[i] = (uint32_t)v; break;
    case INF_DTYPE_U64: ((uint64_t *)d)[i] = (uint64_t)v; break;
    case INF_DTYPE_BOOL: ((uint8_t *)d)[i] = v != 0; break;
    default: break;
    }
}

static void unary_int(unop op, const inf_tensor *x, inf_tensor *y, int64_t n) {
    bool is_signed = inf__dtype_is_signed(x->dtype);
    for (int64_t i = 0; i < n; i++) {
        if (op == UN_ERF) {
            inf__tensor_set_f64(y, i, erf(inf__tensor_get_f64(x, i)));
            continue;
        }
        int64_t v = inf__tensor_get_i64(x, i);
        uint64_t neg = 0 - (uint64_t)v; /* wraps for INT64_MIN */
        switch (op) {
        case UN_RELU: v = v > 0 ? v : 0; break;
        case UN_NEG: v = (int64_t)neg; break;
        case UN_ABS: v = is_signed && v < 0 ? (int64_t)neg : v; break;
        case UN_BITWISE_NOT: v = (int64_t)~(uint64_t)v; break; /* store_int keeps the type's width */
        default: break;
        }
        store_int(y, i, v);
    }
}

static bool unary_accepts(int accept, inf_dtype t) {
    if (inf__dtype_is_float(t)) return accept & ACCEPT_FLOAT;
    if (inf__dtype_is_signed(t)) return accept & ACCEPT_SIGNED;
    if (inf__dtype_is_int(t)) return accept & ACCEPT_UNSIGNED;
    if (t == INF_DTYPE_BOOL) return accept & ACCEPT_BOOL;
    return false;
}

static const char *unary_accept_str(int accept) {
    switch (accept) {
    case ACCEPT_FLOAT: return "a float type";
    case ACCEPT_FLOAT | ACCEPT_SIGNED: return "a float or signed integer type";
    case ACCEPT_BOOL: return "bool";
    case ACCEPT_SIGNED | ACCEPT_UNSIGNED: return "an integer type";
    default: return "a numeric type";
    }
}

static inf_status unary_run(inf__kernel_ctx *ctx) {
    const unary_params *p = ctx->node->params;
    const inf_tensor *x = ctx->n_in > 0 ? ctx->in[0] : NULL;
    if (!x) return inf__kernel_error(ctx, INF_EINVAL, "input X is missing");
    if (!unary_accepts(p->accept, x->dtype))
        return inf__kernel_error(ctx, INF_ETYPE, "input X: expected %s, got %s",
                                 unary_accept_str(p->accept), inf_dtype_name(x->dtype));
    inf_tensor *y;
    inf_status st = inf__kernel_output(ctx, 0, x->dtype, x->ndim, x->dims, &y);
    if (st != INF_OK) return st;
    int64_t n = inf_tensor_numel(x);
    if (x->dtype == INF_DTYPE_BOOL) { /* Not */
        const uint8_t *a = x->data;
        uint8_t *b = y->data;
        for (int64_t i = 0; i < n; i++) b[i] = !a[i];
    } else if (inf__dtype_is_float(x->dtype)) {
        unary_job job = {p, x, y};
        if (ctx->pool && n >= 32768)
            inf__pool_range(ctx->pool, n, 16384, unary_job_range, &job);
        else
            unary_job_range(&job, 0, n);
    } else {
        unary_int(p->op, x, y, n);
    }
    return INF_OK;
}

const inf__op_impl op_unary = {unary_init, unary_run};

/* ==================== Clip ==================== */

typedef struct clip_params {
    float min, max; /* opsets 1-10 */
} clip_params;

static inf_status clip_init(inf__node *node, inf__arena *arena, inf_error *err) {
    (void)err;
    clip_params *p = inf__op_params(arena, clip_params);
    if (!p) return INF_ENOMEM;
    p->min = inf__attr_float(node, "min", -FLT_MAX);
    p->max = inf__attr_float(node, "max", FLT_MAX);
    node->params = p;
    return INF_OK;
}

/* Input i (min or max) if present: checks it is a one-element tensor of x's type. */
static inf_status clip_bound(inf__kernel_ctx *ctx, int i, const inf_tensor **out) {
    const char *name = i == 1 ? "min" : "max";
    const inf_tensor *x = ctx->in[0], *b = i < ctx->n_in ? ctx->in[i] : NULL;
    *out = NULL;
    if (!b || b->kind == INF_KIND_NONE) return INF_OK;
    if (b->dtype != x->dtype)
        return inf__kernel_error(ctx, INF_ETYPE, "input %s: expected %s (the type of input), got %s",
                                 name, inf_dtype_name(x->dtype), inf_dtype_name(b->dtype));
    if (inf_tensor_numel(b) != 1) {
        char s[96];
        return inf__kernel_error(ctx, INF_ESHAPE, "input %s: expected a scalar, got shape %s", name,
                                 inf__shape_str(b->ndim, b->dims, s, sizeof s));
    }
    *out = b;
    return INF_OK;
}

static void clip_float(const inf_tensor *x, inf_tensor *y, int64_t n, double lo, double hi) {
    if (x->dtype == INF_DTYPE_F32) {
        const float *a = x->data;
        float *b = y->data, flo = (float)lo, fhi = (float)hi;
        for (int64_t i = 0; i < n; i++) {
            float v = a[i] < flo ? flo : a[i];
            b[i] = v > fhi ? fhi : v;
        }
        return;
    }
    for (int64_t i = 0; i < n; i++) {
        double v = inf__tensor_get_f64(x, i);
        v = v < lo ? lo : v;
        inf__tensor_set_f64(y, i, v > hi ? hi : v);
    }
}

static void clip_signed(const inf_tensor *x, inf_tensor *y, int64_t n, int64_t lo, int64_t hi) {
    for (int64_t i = 0; i < n; i++) {
        int64_t v = inf__tensor_get_i64(x, i);
        v = v < lo ? lo : v;
        store_int(y, i, v > hi ? hi : v);
    }
}

static void clip_unsigned(const inf_tensor *x, inf_tensor *y, int64_t n, uint64_t lo,
                          uint64_t hi) {
    for (int64_t i = 0; i < n; i++) {
        uint64_t v = (uint64_t)inf__tensor_get_i64(x, i);
        v = v < lo ? lo : v;
        store_int(y, i, (int64_t)(v > hi ? hi : v));
    }
}

static inf_status clip_run(inf__kernel_ctx *ctx) {
    const clip_params *p = ctx->node->params;
    const inf_tensor *x = ctx->n_in > 0 ? ctx->in[0] : NULL;
    if (!x) return inf__kernel_error(ctx, INF_EINVAL, "input is missing");
    if (!inf__dtype_is_float(x->dtype) && !inf__dtype_is_int(x->dtype))
        return inf__kernel_error(ctx, INF_ETYPE, "input: expected a numeric type, got %s",
                                 inf_dtype_name(x->dtype));
    const inf_tensor *lo = NULL, *hi = NULL;
    if (ctx->node->opset >= 11) {
        inf_status st = clip_bound(ctx, 1, &lo);
        if (st == INF_OK) st = clip_bound(ctx, 2, &hi);
        if (st != INF_OK) return st;
    }
    inf_tensor *y;
    inf_status st = inf__kernel_output(ctx, 0, x->dtype, x->ndim, x->dims, &y);
    if (st != INF_OK) return st;
    int64_t n = inf_tensor_numel(x);
    if (inf__dtype_is_float(x->dtype)) {
        double dlo = ctx->node->opset >= 11 ? -INFINITY : p->min;
        double dhi = ctx->node->opset >= 11 ? INFINITY : p->max;
        if (lo) dlo = inf__tensor_get_f64(lo, 0);
        if (hi) dhi = inf__tensor_get_f64(hi, 0);
        clip_float(x, y, n, dlo, dhi);
    } else if (inf__dtype_is_signed(x->dtype)) {
        clip_signed(x, y, n, lo ? inf__tensor_get_i64(lo, 0) : INT64_MIN,
                    hi ? inf__tensor_get_i64(hi, 0) : INT64_MAX);
    } else {
        clip_unsigned(x, y, n, lo ? (uint64_t)inf__tensor_get_i64(lo, 0) : 0,
                      hi ? (uint64_t)inf__tensor_get_i64(hi, 0) : UINT64_MAX);
    }
    return INF_OK;
}

const inf__op_impl op_clip = {clip_init, clip_run};
