/*
 * gelu.c -- the internal op Gelu (domain ai.infera, made by the optimizer's
 * GELU pass, src/graph/passes/gelu.c, from PyTorch's exact-erf export
 * x * 0.5 * (1 + Erf(x / sqrt 2)), or with approximate = "tanh" from the
 * tanh form):
 *
 *   Y = 0.5 X (1 + erf(X / sqrt 2))      one input, one output, same shape
 *
 * dtypes: float32 through ops/vmath.h's gelu (AVX2 when the CPU has it;
 * error bound there and in tests/kernels/test_vmath.c), split across the
 * session's threads when large (element-wise, so results do not depend on
 * the split); float64 with libm's erfc; float16 and bfloat16 in float32.
 * Deviation from the decomposed graph: x / sqrt 2 uses the exact constant
 * and the negative tail keeps its relative precision (the graph's
 * 1 + erf(u) cancels there); differences are within float32 rounding of the
 * graph's own result.
 *
 * The same kernel runs ONNX's Gelu (opsets 20-26): approximate "none" is the
 * function above (so a native Gelu gets the fused kernel's vectorised path),
 * "tanh" is 0.5 X (1 + tanh(sqrt(2/pi) (X + 0.044715 X^3))): float32
 * through ops/vmath.h's inf__vmath_gelu_tanh (vectorised, as X sigmoid(2
 * sqrt(2/pi) (...)), error bound there), the other float types in double.
 * The optimizer's GELU pass also makes the internal Gelu with approximate
 * = "tanh" from GPT-2's decomposed tanh GELU.
 */
#include <math.h>
#include <string.h>

#include "ops/ops.h"
#include "ops/vmath.h"

typedef struct gelu_params {
    bool tanh_form; /* approximate = "tanh" */
} gelu_params;

typedef struct gelu_job {
    const inf_tensor *x;
    inf_tensor *y;
} gelu_job;

static double gelu_f64(double x) { return 0.5 * x * erfc(-x * 0.70710678118654752440); }

static double gelu_tanh_f64(double x) {
    return 0.5 * x * (1 + tanh(0.79788456080286535588 * (x + 0.044715 * x * x * x)));
}

static inf_status gelu_init(inf__node *node, inf__arena *arena, inf_error *err) {
    gelu_params *p = inf__op_params(arena, gelu_params);
    if (!p) return INF_ENOMEM;
    const char *a = inf__attr_string(node, "approximate", "none");
    if (strcmp(a, "none") != 0 && strcmp(a, "tanh") != 0)
        return inf__node_error(node, err, INF_EMODEL, "attribute approximate: expected none or tanh, got '%s'", a);
    p->tanh_form = strcmp(a, "tanh") == 0;
    node->params = p;
    return INF_OK;
}

static void gelu_tanh_range(void *arg, int64_t begin, int64_t end) {
    const gelu_job *job = arg;
    if (job->x->dtype == INF_DTYPE_F32) {
        inf__vmath_gelu_tanh_best((const float *)job->x->data + begin, (float *)job->y->data + begin, end - begin);
        return;
    }
    for (int64_t i = begin; i < end; i++) inf__tensor_set_f64(job->y, i, gelu_tanh_f64(inf__tensor_get_f64(job->x, i)));
}

static void gelu_range(void *arg, int64_t begin, int64_t end) {
    const gelu_job *job = arg;
    int64_t n = end - begin;
    switch (job->x->dtype) {
    case INF_DTYPE_F32:
        inf__vmath_best()->gelu((const float *)job->x->data + begin, (float *)job->y->data + begin, n);
        break;
    case INF_DTYPE_F64: {
        const double *x = (const double *)job->x->data + begin;
        double *y = (double *)job->y->data + begin;
        for (int64_t i = 0; i < n; i++) y[i] = gelu_f64(x[i]);
        break;
    }
    default: /* float16, bfloat16 */
        for (int64_t i = begin; i < end; i++) inf__tensor_set_f64(job->y, i, gelu_f64(inf__tensor_get_f64(job->x, i)));
        break;
    }
}

static inf_status gelu_run(inf__kernel_ctx *ctx) {
    const inf_tensor *x = ctx->in[0];
    inf_dtype dt = x->dtype;
    if (dt != INF_DTYPE_F32 && dt != INF_DTYPE_F64 && dt != INF_DTYPE_F16 && dt != INF_DTYPE_BF16)
        return inf__kernel_error(ctx, INF_ETYPE, "input X: expected a float type, got %s", inf_dtype_name(dt));
    inf_tensor *y;
    inf_status st = inf__kernel_output(ctx, 0, dt, x->ndim, x->dims, &y);
    if (st != INF_OK) return st;
    gelu_job job = {x, y};
    const gelu_params *p = ctx->node->params;
    inf__pool_range(ctx->pool, inf_tensor_numel(x), 16384, p && p->tanh_form ? gelu_tanh_range : gelu_range, &job);
    return INF_OK;
}

const inf__op_impl op_gelu = {gelu_init, gelu_run};
