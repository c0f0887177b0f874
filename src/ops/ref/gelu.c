/*
 * gelu.c -- the internal op Gelu (domain ai.infera, made by the optimizer's
 * GELU pass, src/graph/passes/gelu.c, from PyTorch's exact-erf export
 * x * 0.5 * (1 + Erf(x / sqrt 2))):
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
 */
#include <math.h>

#include "ops/ops.h"
#include "ops/vmath.h"

typedef struct gelu_job {
    const inf_tensor *x;
    inf_tensor *y;
} gelu_job;

static double gelu_f64(double x) { return 0.5 * x * erfc(-x * 0.70710678118654752440); }

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
    inf__pool_range(ctx->pool, inf_tensor_numel(x), 16384, gelu_range, &job);
    return INF_OK;
}

const inf__op_impl op_gelu = {NULL, gelu_run};
