/*
 * softmax.c -- reference kernels for Softmax and LogSoftmax.
 *
 * ONNX ops: Softmax, LogSoftmax, opsets 1-17.
 *   opset < 13: the input is coerced to 2-D [prod(dims[:axis]),
 *               prod(dims[axis:])] (axis default 1) and each row normalised.
 *   opset >= 13: normalised along the one dimension `axis` (default -1).
 * dtypes: float32 (fast path), float64, float16, bfloat16 (through double).
 * Numerically stable: the maximum of each line is subtracted before exp, and
 * LogSoftmax is x - max - log(sum(exp(x - max))).  Sums accumulate in double.
 * float32 Softmax over the last (contiguous) axis runs the vectorised row of
 * ops/vmath.h (AVX2 exp); lines are split across the session's threads, each
 * line computed whole by one thread in a fixed order (deterministic).
 * Deviations: none known.
 */
#include <math.h>
#include <string.h>

#include "ops/ops.h"
#include "ops/vmath.h"

typedef struct softmax_params {
    int64_t axis;
    bool log;
} softmax_params;

static inf_status softmax_init(inf__node *node, inf__arena *arena, inf_error *err) {
    (void)err;
    softmax_params *p = inf__op_params(arena, softmax_params);
    if (!p) return INF_ENOMEM;
    p->axis = inf__attr_int(node, "axis", node->opset >= 13 ? -1 : 1);
    p->log = !strcmp(node->op_type, "LogSoftmax");
    node->params = p;
    return INF_OK;
}

typedef struct softmax_task {
    const inf_tensor *x;
    inf_tensor *y;
    int64_t n, inner; /* line length and stride */
    bool log;
} softmax_task;

static void line_f32(const float *x, float *y, int64_t n, int64_t st, bool log_out) {
    if (st == 1 && !log_out) {
        inf__vmath_best()->softmax_row(x, y, n);
        return;
    }
    float mx = -INFINITY;
    for (int64_t i = 0; i < n; i++) mx = x[i * st] > mx ? x[i * st] : mx;
    if (mx == -INFINITY) mx = 0; /* all -inf: keep exp finite (gives NaN/−inf as numpy does) */
    double sum = 0;
    if (log_out) {
        for (int64_t i = 0; i < n; i++) sum += expf(x[i * st] - mx);
        float lse = (float)log(sum) + mx;
        for (int64_t i = 0; i < n; i++) y[i * st] = x[i * st] - lse;
    } else {
        for (int64_t i = 0; i < n; i++) {
            float e = expf(x[i * st] - mx);
            y[i * st] = e;
            sum += e;
        }
        float inv = (float)(1.0 / sum);
        for (int64_t i = 0; i < n; i++) y[i * st] *= inv;
    }
}

static void line_any(const inf_tensor *x, inf_tensor *y, int64_t base, int64_t n, int64_t st,
                     bool log_out) {
    double mx = -INFINITY;
    for (int64_t i = 0; i < n; i++) {
        double v = inf__tensor_get_f64(x, base + i * st);
        mx = v > mx ? v : mx;
    }
    if (mx == -INFINITY) mx = 0;
    double sum = 0;
    for (int64_t i = 0; i < n; i++) sum += exp(inf__tensor_get_f64(x, base + i * st) - mx);
    double lse = log(sum) + mx;
    for (int64_t i = 0; i < n; i++) {
        double v = inf__tensor_get_f64(x, base + i * st);
        inf__tensor_set_f64(y, base + i * st, log_out ? v - lse : exp(v - lse));
    }
}

/* Lines l = (outer o, inner i) start at o * n * inner + i. */
static void softmax_lines(void *arg, int64_t begin, int64_t end) {
    const softmax_task *t = arg;
    for (int64_t l = begin; l < end; l++) {
        int64_t base = (l / t->inner) * t->n * t->inner + l % t->inner;
        if (t->x->dtype == INF_DTYPE_F32)
            line_f32((const float *)t->x->data + base, (float *)t->y->data + base, t->n, t->inner,
                     t->log);
        else
            line_any(t->x, t->y, base, t->n, t->inner, t->log);
    }
}

static inf_status softmax_run(inf__kernel_ctx *ctx) {
    const softmax_params *p = ctx->node->params;
    const inf_tensor *x = ctx->in[0];
    inf_dtype dt = x->dtype;
    if (dt != INF_DTYPE_F32 && dt != INF_DTYPE_F64 && dt != INF_DTYPE_F16 && dt != INF_DTYPE_BF16)
        return inf__kernel_error(ctx, INF_ETYPE, "input: expected float32, float64, float16 or bfloat16, got %s",
                                 inf_dtype_name(dt));
    if (x->ndim < 1)
        return inf__kernel_error(ctx, INF_ESHAPE, "input: expected rank >= 1, got a scalar");
    int axis;
    inf_status st = inf__normalize_axis(ctx, p->axis, x->ndim, &axis);
    if (st != INF_OK) return st;
    int64_t outer = 1, n = 1, inner = 1;
    for (int i = 0; i < x->ndim; i++) {
        if (i < axis) outer *= x->dims[i];
        else if (i == axis || ctx->node->opset < 13) n *= x->dims[i];
        else inner *= x->dims[i];
    }
    inf_tensor *y;
    if ((st = inf__kernel_output(ctx, 0, dt, x->ndim, x->dims, &y)) != INF_OK) return st;
    if (n == 0 || outer == 0 || inner == 0) return INF_OK;
    softmax_task t = {x, y, n, inner, p->log};
    inf__pool_range(ctx->pool, outer * inner, 8192 / (n + 1) + 1, softmax_lines, &t);
    return INF_OK;
}

const inf__op_impl op_softmax = {softmax_init, softmax_run};
