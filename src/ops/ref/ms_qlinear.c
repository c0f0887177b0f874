/*
 * ms_qlinear.c -- the com.microsoft (ONNX Runtime contrib, version 1)
 * quantized operators that ONNX Runtime's quantizer writes in QOperator
 * format: QLinearAdd, QLinearMul, QLinearAveragePool, QLinearGlobalAveragePool,
 * QLinearLeakyRelu, QLinearSigmoid, QLinearSoftmax, QLinearConcat and QGemm, for uint8 and
 * int8 tensors, as ContribOperators.md defines them and ORT 1.20 computes
 * them:
 *   - scales are float scalars (one element), zero points scalars of the
 *     quantized type; an omitted optional zero point is 0; QGemm's b_scale /
 *     b_zero_point may be per column (N elements);
 *   - results round half to even (nearbyint in the default rounding mode)
 *     and saturate to the type's range;
 *   - QLinearAdd: y = rne(a_s/y_s * (a - a_zp) + b_s/y_s * (b - b_zp)) + y_zp
 *     (numpy broadcasting); QLinearMul: y = rne((a - a_zp)(b - b_zp) *
 *     (a_s * b_s / y_s)) + y_zp;
 *   - QLinearGlobalAveragePool: y = rne((sum(x) - n x_zp) * x_s / (y_s n))
 *     + y_zp over the spatial dims (channels_last: NHWC...);
 *   - QLinearAveragePool (2-D, NCHW or channels_last; auto_pad, pads,
 *     strides, ceil_mode, count_include_pad; dilations 1): the float mean of
 *     the dequantized window, quantized (ORT sums in another order: within
 *     one step);
 *   - QLinearLeakyRelu / QLinearSigmoid: a 256-entry table, each entry the
 *     float function of the dequantized value, quantized as rne(f / y_s)
 *     + y_zp (ORT's sigmoid is a polynomial: within one step of this one);
 *   - QLinearSoftmax (attributes axis, opset: the replaced Softmax's, < 13
 *     flattens from the axis on): rne(softmax((x - x_zp) x_s) / y_s) + y_zp
 *     in float (ORT sums truncated integer exponentials: within one step);
 *   - QLinearConcat(Y_scale, Y_zp, X0, X0_scale, X0_zp, ...): each input
 *     requantized to the output's parameters (a table per input), axis
 *     required;
 *   - QGemm: int32 sums of (A - a_zp)(B - b_zp) (transA / transB), plus the
 *     int32 C (scale alpha a_s b_s, broadcast to [M, N]); with y_scale the
 *     output is rne(acc * alpha a_s b_s[n] / y_s) + y_zp (type of y_zp,
 *     uint8 when that is omitted), without it float acc * alpha a_s b_s[n].
 */
#include <math.h>
#include <string.h>

#include "ops/ops.h"
#include "ops/ref/math_util.h"

static bool is_q8(inf_dtype t) { return t == INF_DTYPE_U8 || t == INF_DTYPE_I8; }

static int q_lo(inf_dtype t) { return t == INF_DTYPE_U8 ? 0 : -128; }
static int q_hi(inf_dtype t) { return t == INF_DTYPE_U8 ? 255 : 127; }

static int q_get(inf_dtype t, const void *data, int64_t i) {
    return t == INF_DTYPE_U8 ? ((const uint8_t *)data)[i] : ((const int8_t *)data)[i];
}

static void q_set(inf_dtype t, void *data, int64_t i, int v) {
    if (t == INF_DTYPE_U8)
        ((uint8_t *)data)[i] = (uint8_t)v;
    else
        ((int8_t *)data)[i] = (int8_t)v;
}

/* rne(v) + zp, saturated to t's range (the float is clamped first, so huge
 * values and infinities saturate; NaN gives zp). */
static int q_round(inf_dtype t, float v, int zp) {
    float lo = (float)(q_lo(t) - zp), hi = (float)(q_hi(t) - zp);
    if (!(v >= lo)) v = isnan(v) ? 0.0f : lo;
    if (v > hi) v = hi;
    return (int)nearbyintf(v) + zp;
}

/* Input i, a float scale of one element (any rank). */
static inf_status get_scale(inf__kernel_ctx *ctx, int i, const char *name, float *out) {
    const inf_tensor *s = ctx->in[i];
    if (s->dtype != INF_DTYPE_F32)
        return inf__kernel_error(ctx, INF_ETYPE, "%s (input %d): expected a float32 scale, got %s", name, i,
                                 inf_dtype_name(s->dtype));
    if (inf_tensor_numel(s) != 1)
        return inf__kernel_error(ctx, INF_ESHAPE, "%s (input %d): expected a scalar scale, got %lld elements", name, i,
                                 (long long)inf_tensor_numel(s));
    *out = ((const float *)s->data)[0];
    if (!(*out > 0) || isinf(*out))
        return inf__kernel_error(ctx, INF_EINVAL, "%s (input %d): the scale must be positive and finite, got %g", name,
                                 i, (double)*out);
    return INF_OK;
}

/* Input i, a zero point of type t and one element; 0 when omitted. */
static inf_status get_zp(inf__kernel_ctx *ctx, int i, const char *name, inf_dtype t, int *out) {
    *out = 0;
    const inf_tensor *z = i < ctx->n_in ? ctx->in[i] : NULL;
    if (!z) return INF_OK;
    if (z->dtype != t)
        return inf__kernel_error(ctx, INF_ETYPE, "%s (input %d): expected a zero point of type %s, got %s", name, i,
                                 inf_dtype_name(t), inf_dtype_name(z->dtype));
    if (inf_tensor_numel(z) != 1)
        return inf__kernel_error(ctx, INF_ESHAPE, "%s (input %d): expected a scalar zero point, got %lld elements",
                                 name, i, (long long)inf_tensor_numel(z));
    *out = q_get(t, z->data, 0);
    return INF_OK;
}

/* The quantization of a one-input op, inputs 1-4: x's scale and zero point,
 * then y's (spelled as the op's schema spells them, for the errors). */
typedef struct unary_q {
    float xs, ys;
    int xzp, yzp;
} unary_q;

static inf_status get_unary_q(inf__kernel_ctx *ctx, inf_dtype t, const char *x_scale, const char *x_zp,
                              const char *y_scale, const char *y_zp, unary_q *q) {
    inf_status st;
    if ((st = get_scale(ctx, 1, x_scale, &q->xs)) != INF_OK || (st = get_zp(ctx, 2, x_zp, t, &q->xzp)) != INF_OK ||
        (st = get_scale(ctx, 3, y_scale, &q->ys)) != INF_OK || (st = get_zp(ctx, 4, y_zp, t, &q->yzp)) != INF_OK)
        return st;
    return INF_OK;
}

static inf_status check_q8(inf__kernel_ctx *ctx, int i, const char *name) {
    if (!is_q8(ctx->in[i]->dtype))
        return inf__kernel_error(ctx, INF_ETYPE, "%s (input %d): expected uint8 or int8, got %s", name, i,
                                 inf_dtype_name(ctx->in[i]->dtype));
    return INF_OK;
}

/* ---- QLinearAdd, QLinearMul ---- */

/* QLinearAdd's sum as ORT's MLAS forms it: the zero points folded into one
 * float bias, y = rne(ra a + (rb b + bias)) with fused multiply-adds,
 * saturated. */
static int add_round(inf_dtype t, float ra, int a, float rb, int b, float bias) {
    float v = fmaf(ra, (float)a, fmaf(rb, (float)b, bias));
    if (!(v >= (float)q_lo(t))) v = (float)q_lo(t);
    if (v > (float)q_hi(t)) v = (float)q_hi(t);
    return (int)nearbyintf(v);
}

static inf_status binary_run(inf__kernel_ctx *ctx) {
    bool mul = !strcmp(ctx->node->op_type, "QLinearMul");
    const inf_tensor *a = ctx->in[0], *b = ctx->in[3];
    inf_status st = check_q8(ctx, 0, "A");
    if (st != INF_OK) return st;
    inf_dtype t = a->dtype;
    if (b->dtype != t)
        return inf__kernel_error(ctx, INF_ETYPE, "B is %s, A is %s: both must have one type", inf_dtype_name(b->dtype),
                                 inf_dtype_name(t));
    float as, bs, ys;
    int azp, bzp, yzp;
    if ((st = get_scale(ctx, 1, "A_scale", &as)) != INF_OK ||
        (st = get_zp(ctx, 2, "A_zero_point", t, &azp)) != INF_OK ||
        (st = get_scale(ctx, 4, "B_scale", &bs)) != INF_OK ||
        (st = get_zp(ctx, 5, "B_zero_point", t, &bzp)) != INF_OK ||
        (st = get_scale(ctx, 6, "C_scale", &ys)) != INF_OK || (st = get_zp(ctx, 7, "C_zero_point", t, &yzp)) != INF_OK)
        return st;
    int nd;
    int64_t dims[INF_MAX_DIMS];
    if (inf__broadcast_shape(a->ndim, a->dims, b->ndim, b->dims, &nd, dims) != INF_OK)
        return inf__kernel_error(ctx, INF_ESHAPE, "A and B do not broadcast");
    inf_tensor *y;
    if ((st = inf__kernel_output(ctx, 0, t, nd, dims, &y)) != INF_OK) return st;
    float ra = as / ys, rb = bs / ys, rm = as * bs / ys;
    float add_bias = (float)yzp - ra * (float)azp - rb * (float)bzp;
    bcast_iter ia, ib;
    bcast_init(&ia, a->ndim, a->dims, nd, dims);
    bcast_init(&ib, b->ndim, b->dims, nd, dims);
    for (int64_t i = 0, n = inf_tensor_numel(y); i < n; i++) {
        int qa = q_get(t, a->data, ia.off) - azp, qb = q_get(t, b->data, ib.off) - bzp;
        q_set(t, y->data, i,
              mul ? q_round(t, (float)(qa * qb) * rm, yzp) : add_round(t, ra, qa + azp, rb, qb + bzp, add_bias));
        bcast_next(&ia);
        bcast_next(&ib);
    }
    return INF_OK;
}

const inf__op_impl op_ms_qlinear_binary = {NULL, binary_run};

/* ---- QLinearGlobalAveragePool ---- */

static inf_status gap_init(inf__node *node, inf__arena *arena, inf_error *err) {
    (void)arena;
    int64_t cl = inf__attr_int(node, "channels_last", 0);
    if (cl != 0 && cl != 1)
        return inf__node_error(node, err, INF_EMODEL, "channels_last must be 0 or 1, got %lld", (long long)cl);
    return INF_OK;
}

static inf_status gap_run(inf__kernel_ctx *ctx) {
    const inf_tensor *x = ctx->in[0];
    inf_status st = check_q8(ctx, 0, "X");
    if (st != INF_OK) return st;
    inf_dtype t = x->dtype;
    bool last = inf__attr_int(ctx->node, "channels_last", 0) != 0;
    if (x->ndim < 3)
        return inf__kernel_error(ctx, INF_ESHAPE, "X has rank %d; expected N, C and at least one spatial dim", x->ndim);
    unary_q qp;
    if ((st = get_unary_q(ctx, t, "x_scale", "x_zero_point", "y_scale", "y_zero_point", &qp)) != INF_OK) return st;
    const float xs = qp.xs, ys = qp.ys;
    const int xzp = qp.xzp, yzp = qp.yzp;
    int64_t dims[INF_MAX_DIMS], n = x->dims[0], c = x->dims[last ? x->ndim - 1 : 1], img = 1;
    for (int k = 0; k < x->ndim; k++) {
        bool spatial = last ? (k > 0 && k < x->ndim - 1) : k > 1;
        dims[k] = spatial ? 1 : x->dims[k];
        if (spatial) img *= x->dims[k];
    }
    inf_tensor *y;
    if ((st = inf__kernel_output(ctx, 0, t, x->ndim, dims, &y)) != INF_OK) return st;
    if (img == 0) return inf__kernel_error(ctx, INF_ESHAPE, "X has an empty spatial dim");
    float scale = xs / (ys * (float)img);
    for (int64_t b = 0; b < n; b++)
        for (int64_t ch = 0; ch < c; ch++) {
            int64_t sum = -(int64_t)xzp * img;
            for (int64_t p = 0; p < img; p++)
                sum += q_get(t, x->data, last ? (b * img + p) * c + ch : (b * c + ch) * img + p);
            q_set(t, y->data, b * c + ch, q_round(t, (float)sum * scale, yzp));
        }
    return INF_OK;
}

const inf__op_impl op_ms_qlinear_global_avgpool = {gap_init, gap_run};

/* ---- QLinearAveragePool (2-D) ---- */

typedef struct avgpool_geom {
    int64_t k[2], s[2], pb[2], pe[2], out[2];
} avgpool_geom;

static inf_status avgpool_init(inf__node *node, inf__arena *arena, inf_error *err) {
    (void)arena;
    int nk, ns, np, nd;
    inf__attr_ints(node, "kernel_shape", &nk);
    inf__attr_ints(node, "strides", &ns);
    inf__attr_ints(node, "pads", &np);
    const int64_t *d = inf__attr_ints(node, "dilations", &nd);
    if (nk != 2) return inf__node_error(node, err, INF_EUNSUPPORTED, "kernel_shape has %d dims; 2-D pooling only", nk);
    if ((ns && ns != 2) || (np && np != 4))
        return inf__node_error(node, err, INF_EMODEL, "strides / pads do not match the 2-D kernel_shape");
    for (int i = 0; i < nd; i++)
        if (d[i] != 1) return inf__node_error(node, err, INF_EUNSUPPORTED, "dilations other than 1");
    const char *ap = inf__attr_string(node, "auto_pad", "NOTSET");
    if (strcmp(ap, "NOTSET") && strcmp(ap, "VALID") && strcmp(ap, "SAME_UPPER") && strcmp(ap, "SAME_LOWER"))
        return inf__node_error(node, err, INF_EMODEL, "unknown auto_pad '%s'", ap);
    int64_t cl = inf__attr_int(node, "channels_last", 0);
    if (cl != 0 && cl != 1)
        return inf__node_error(node, err, INF_EMODEL, "channels_last must be 0 or 1, got %lld", (long long)cl);
    return inf__check_window_attrs(node, err, false);
}

/* The window geometry, as ONNX AveragePool defines it (auto_pad, ceil_mode). */
static inf_status avgpool_geometry(inf__kernel_ctx *ctx, const int64_t *hw, avgpool_geom *g) {
    const inf__node *node = ctx->node;
    int nk, ns, np;
    const int64_t *k = inf__attr_ints(node, "kernel_shape", &nk), *s = inf__attr_ints(node, "strides", &ns);
    const int64_t *p = inf__attr_ints(node, "pads", &np);
    const char *ap = inf__attr_string(node, "auto_pad", "NOTSET");
    bool ceil_mode = inf__attr_int(node, "ceil_mode", 0) != 0;
    for (int i = 0; i < 2; i++) {
        g->k[i] = k[i];
        g->s[i] = ns ? s[i] : 1;
        g->pb[i] = np ? p[i] : 0;
        g->pe[i] = np ? p[i + 2] : 0;
        if (g->k[i] < 1 || g->s[i] < 1)
            return inf__kernel_error(ctx, INF_EINVAL, "kernel_shape / strides must be >= 1");
        if (!strcmp(ap, "VALID")) {
            g->pb[i] = g->pe[i] = 0;
        } else if (strncmp(ap, "SAME", 4) == 0) {
            int64_t out = (hw[i] + g->s[i] - 1) / g->s[i], total = (out - 1) * g->s[i] + g->k[i] - hw[i];
            if (total < 0) total = 0;
            g->pb[i] = !strcmp(ap, "SAME_UPPER") ? total / 2 : total - total / 2;
            g->pe[i] = total - g->pb[i];
        }
        int64_t span = hw[i] + g->pb[i] + g->pe[i] - g->k[i];
        if (span < 0) return inf__kernel_error(ctx, INF_ESHAPE, "the window is larger than the padded input");
        g->out[i] = (ceil_mode ? (span + g->s[i] - 1) / g->s[i] : span / g->s[i]) + 1;
        if (ceil_mode && (g->out[i] - 1) * g->s[i] >= hw[i] + g->pb[i]) g->out[i]--;
    }
    return INF_OK;
}

/* Each window's dequantized values summed in float, divided by the count
 * (count_include_pad: the whole kernel, as ORT does also for a ceil_mode
 * window that runs past the end padding; else the window's elements inside
 * the input), quantized: ORT's arithmetic up to the float summation order. */
static inf_status avgpool_run(inf__kernel_ctx *ctx) {
    const inf_tensor *x = ctx->in[0];
    inf_status st = check_q8(ctx, 0, "X");
    if (st != INF_OK) return st;
    inf_dtype t = x->dtype;
    bool last = inf__attr_int(ctx->node, "channels_last", 0) != 0;
    bool incl = inf__attr_int(ctx->node, "count_include_pad", 0) != 0;
    if (x->ndim != 4) return inf__kernel_error(ctx, INF_ESHAPE, "X has rank %d; 2-D pooling takes rank 4", x->ndim);
    unary_q qp;
    if ((st = get_unary_q(ctx, t, "x_scale", "x_zero_point", "y_scale", "y_zero_point", &qp)) != INF_OK) return st;
    const float xs = qp.xs, ys = qp.ys;
    const int xzp = qp.xzp, yzp = qp.yzp;
    int64_t n = x->dims[0], c = x->dims[last ? 3 : 1], hw[2] = {x->dims[last ? 1 : 2], x->dims[last ? 2 : 3]};
    avgpool_geom g;
    if ((st = avgpool_geometry(ctx, hw, &g)) != INF_OK) return st;
    int64_t dims[4] = {n, c, g.out[0], g.out[1]};
    if (last) dims[1] = g.out[0], dims[2] = g.out[1], dims[3] = c;
    inf_tensor *y;
    if ((st = inf__kernel_output(ctx, 0, t, 4, dims, &y)) != INF_OK) return st;
    float deq[256];
    for (int q = q_lo(t); q <= q_hi(t); q++)
        deq[(uint8_t)q] = (float)(q - xzp) * xs;
    const uint8_t *src = x->data;
    for (int64_t b = 0; b < n; b++)
        for (int64_t ch = 0; ch < c; ch++)
            for (int64_t oh = 0; oh < g.out[0]; oh++)
                for (int64_t ow = 0; ow < g.out[1]; ow++) {
                    int64_t h0 = oh * g.s[0] - g.pb[0], w0 = ow * g.s[1] - g.pb[1];
                    int64_t h1 = h0 + g.k[0], w1 = w0 + g.k[1];
                    int64_t count = incl ? g.k[0] * g.k[1] : 0;
                    float sum = 0;
                    for (int64_t h = h0 < 0 ? 0 : h0; h < h1 && h < hw[0]; h++)
                        for (int64_t w = w0 < 0 ? 0 : w0; w < w1 && w < hw[1]; w++) {
                            sum += deq[src[last ? ((b * hw[0] + h) * hw[1] + w) * c + ch
                                                : ((b * c + ch) * hw[0] + h) * hw[1] + w]];
                            if (!incl) count++;
                        }
                    int64_t o = last ? ((b * g.out[0] + oh) * g.out[1] + ow) * c + ch
                                     : ((b * c + ch) * g.out[0] + oh) * g.out[1] + ow;
                    q_set(t, y->data, o, q_round(t, count ? sum / (float)count / ys : 0.0f, yzp));
                }
    return INF_OK;
}

const inf__op_impl op_ms_qlinear_avgpool = {avgpool_init, avgpool_run};

/* ---- QLinearLeakyRelu, QLinearSigmoid: a table of the 256 values ---- */

static inf_status lut_run(inf__kernel_ctx *ctx) {
    bool sigmoid = !strcmp(ctx->node->op_type, "QLinearSigmoid");
    float alpha = inf__attr_float(ctx->node, "alpha", 0.01f);
    const inf_tensor *x = ctx->in[0];
    inf_status st = check_q8(ctx, 0, "X");
    if (st != INF_OK) return st;
    inf_dtype t = x->dtype;
    unary_q qp;
    if ((st = get_unary_q(ctx, t, "X_scale", "X_zero_point", "Y_scale", "Y_zero_point", &qp)) != INF_OK) return st;
    const float xs = qp.xs, ys = qp.ys;
    const int xzp = qp.xzp, yzp = qp.yzp;
    uint8_t lut[256]; /* indexed by the byte */
    for (int q = q_lo(t); q <= q_hi(t); q++) {
        float v = (float)(q - xzp) * xs;
        v = sigmoid ? 1.0f / (1.0f + expf(-v)) : (v >= 0 ? v : v * alpha);
        lut[(uint8_t)q] = (uint8_t)q_round(t, v / ys, yzp);
    }
    inf_tensor *y;
    if ((st = inf__kernel_output(ctx, 0, t, x->ndim, x->dims, &y)) != INF_OK) return st;
    const uint8_t *src = x->data;
    uint8_t *dst = y->data;
    for (int64_t i = 0, n = inf_tensor_numel(x); i < n; i++)
        dst[i] = lut[src[i]];
    return INF_OK;
}

const inf__op_impl op_ms_qlinear_lut = {NULL, lut_run};

/* ---- QLinearSoftmax ---- */

static inf_status softmax_init(inf__node *node, inf__arena *arena, inf_error *err) {
    (void)arena;
    if (!inf__node_attr(node, "opset"))
        return inf__node_error(node, err, INF_EMODEL, "attribute 'opset' (the Softmax opset it replaces) is required");
    return INF_OK;
}

/* The float softmax of the dequantized values along the axis (opset < 13:
 * the axis and every one after it, as one), quantized; ORT sums a table of
 * truncated integer exponentials: within one step of this. */
static inf_status softmax_run(inf__kernel_ctx *ctx) {
    const inf_tensor *x = ctx->in[0];
    inf_status st = check_q8(ctx, 0, "X");
    if (st != INF_OK) return st;
    inf_dtype t = x->dtype;
    int axis;
    unary_q qp;
    if ((st = get_unary_q(ctx, t, "X_scale", "x_zero_point", "y_scale", "y_zero_point", &qp)) != INF_OK) return st;
    const float xs = qp.xs, ys = qp.ys;
    const int yzp = qp.yzp; /* x's zero point shifts every value alike: softmax cancels it */
    if (x->ndim < 1) return inf__kernel_error(ctx, INF_ESHAPE, "X is a scalar");
    if ((st = inf__normalize_axis(ctx, inf__attr_int(ctx->node, "axis", -1), x->ndim, &axis)) != INF_OK) return st;
    bool coerce = inf__attr_int(ctx->node, "opset", 13) < 13;
    int64_t outer = 1, n = 1, inner = 1;
    for (int k = 0; k < x->ndim; k++) {
        if (k < axis)
            outer *= x->dims[k];
        else if (k == axis || coerce)
            n *= x->dims[k];
        else
            inner *= x->dims[k];
    }
    inf_tensor *y;
    if ((st = inf__kernel_output(ctx, 0, t, x->ndim, x->dims, &y)) != INF_OK) return st;
    float e[256]; /* exp((q - max) xs) by q - max + 255 */
    for (int d = 0; d < 256; d++)
        e[d] = expf((float)(d - 255) * xs);
    for (int64_t o = 0; o < outer; o++)
        for (int64_t in = 0; in < inner; in++) {
            int64_t base = o * n * inner + in;
            int mx = q_lo(t);
            for (int64_t i = 0; i < n; i++) {
                int v = q_get(t, x->data, base + i * inner);
                if (v > mx) mx = v;
            }
            double sum = 0;
            for (int64_t i = 0; i < n; i++)
                sum += e[q_get(t, x->data, base + i * inner) - mx + 255];
            for (int64_t i = 0; i < n; i++) {
                float p = (float)(e[q_get(t, x->data, base + i * inner) - mx + 255] / sum);
                q_set(t, y->data, base + i * inner, q_round(t, p / ys, yzp));
            }
        }
    return INF_OK;
}

const inf__op_impl op_ms_qlinear_softmax = {softmax_init, softmax_run};

/* ---- QLinearConcat ---- */

static inf_status concat_init(inf__node *node, inf__arena *arena, inf_error *err) {
    (void)arena;
    if (!inf__node_attr(node, "axis")) return inf__node_error(node, err, INF_EMODEL, "attribute 'axis' is required");
    if ((node->n_inputs - 2) % 3 != 0 || node->n_inputs < 5)
        return inf__node_error(node, err, INF_EMODEL,
                               "has %d inputs; expected Y_scale, Y_zero_point, then (X, X_scale, X_zero_point) triples",
                               node->n_inputs);
    return INF_OK;
}

static inf_status concat_run(inf__kernel_ctx *ctx) {
    int n_x = (ctx->n_in - 2) / 3, axis;
    const inf_tensor *x0 = ctx->in[2];
    inf_status st;
    for (int k = 0; k < n_x; k++) {
        if (!ctx->in[2 + 3 * k] || !ctx->in[3 + 3 * k] || !ctx->in[4 + 3 * k])
            return inf__kernel_error(ctx, INF_EMODEL, "input triple %d (X, X_scale, X_zero_point) is incomplete", k);
        if ((st = check_q8(ctx, 2 + 3 * k, "X")) != INF_OK) return st;
    }
    inf_dtype t = x0->dtype;
    float ys;
    int yzp;
    if ((st = get_scale(ctx, 0, "Y_scale", &ys)) != INF_OK || (st = get_zp(ctx, 1, "Y_zero_point", t, &yzp)) != INF_OK)
        return st;
    if ((st = inf__normalize_axis(ctx, inf__attr_int(ctx->node, "axis", 0), x0->ndim, &axis)) != INF_OK) return st;
    int64_t dims[INF_MAX_DIMS];
    memcpy(dims, x0->dims, sizeof(int64_t) * (size_t)x0->ndim);
    dims[axis] = 0;
    for (int k = 0; k < n_x; k++) {
        const inf_tensor *x = ctx->in[2 + 3 * k];
        if (x->dtype != t)
            return inf__kernel_error(ctx, INF_ETYPE, "input %d is %s, the first X is %s", 2 + 3 * k,
                                     inf_dtype_name(x->dtype), inf_dtype_name(t));
        if (x->ndim != x0->ndim) return inf__kernel_error(ctx, INF_ESHAPE, "input %d has another rank", 2 + 3 * k);
        for (int d = 0; d < x->ndim; d++)
            if (d != axis && x->dims[d] != x0->dims[d])
                return inf__kernel_error(ctx, INF_ESHAPE, "input %d differs from the first X in dim %d", 2 + 3 * k, d);
        dims[axis] += x->dims[axis];
    }
    inf_tensor *y;
    if ((st = inf__kernel_output(ctx, 0, t, x0->ndim, dims, &y)) != INF_OK) return st;
    int64_t outer = 1, inner = 1, off = 0;
    for (int d = 0; d < axis; d++)
        outer *= dims[d];
    for (int d = axis + 1; d < x0->ndim; d++)
        inner *= dims[d];
    for (int k = 0; k < n_x; k++) {
        const inf_tensor *x = ctx->in[2 + 3 * k];
        float xs;
        int xzp;
        if ((st = get_scale(ctx, 3 + 3 * k, "X_scale", &xs)) != INF_OK ||
            (st = get_zp(ctx, 4 + 3 * k, "X_zero_point", t, &xzp)) != INF_OK)
            return st;
        uint8_t lut[256];
        for (int q = q_lo(t); q <= q_hi(t); q++)
            lut[(uint8_t)q] =
                xs == ys && xzp == yzp ? (uint8_t)q : (uint8_t)q_round(t, (float)(q - xzp) * xs / ys, yzp);
        int64_t row = x->dims[axis] * inner;
        const uint8_t *src = x->data;
        uint8_t *dst = y->data;
        for (int64_t o = 0; o < outer; o++)
            for (int64_t i = 0; i < row; i++)
                dst[o * dims[axis] * inner + off + i] = lut[src[o * row + i]];
        off += row;
    }
    return INF_OK;
}

const inf__op_impl op_ms_qlinear_concat = {concat_init, concat_run};

/* ---- QGemm ---- */

static inf_status qgemm_init(inf__node *node, inf__arena *arena, inf_error *err) {
    (void)arena;
    int64_t ta = inf__attr_int(node, "transA", 0), tb = inf__attr_int(node, "transB", 0);
    if ((ta != 0 && ta != 1) || (tb != 0 && tb != 1))
        return inf__node_error(node, err, INF_EMODEL, "transA / transB must be 0 or 1, got %lld / %lld", (long long)ta,
                               (long long)tb);
    if (node->n_inputs == 9 && node->inputs[8] >= 0 && node->inputs[7] < 0)
        return inf__node_error(node, err, INF_EMODEL, "y_zero_point without y_scale");
    return INF_OK;
}

/* b_scale / b_zero_point: one element or one per column of the output. */
static inf_status per_col(inf__kernel_ctx *ctx, int i, const char *name, int64_t n_cols) {
    int64_t k = inf_tensor_numel(ctx->in[i]);
    if (ctx->in[i]->ndim > 1 || (k != 1 && k != n_cols))
        return inf__kernel_error(ctx, INF_ESHAPE,
                                 "%s (input %d): expected a scalar or %lld values (one per column), "
                                 "got %lld",
                                 name, i, (long long)n_cols, (long long)k);
    return INF_OK;
}

static inf_status qgemm_run(inf__kernel_ctx *ctx) {
    const inf__node *node = ctx->node;
    bool ta = inf__attr_int(node, "transA", 0), tb = inf__attr_int(node, "transB", 0);
    float alpha = inf__attr_float(node, "alpha", 1.0f);
    const inf_tensor *a = ctx->in[0], *b = ctx->in[3], *c = ctx->n_in > 6 ? ctx->in[6] : NULL;
    const inf_tensor *ysc = ctx->n_in > 7 ? ctx->in[7] : NULL, *yzt = ctx->n_in > 8 ? ctx->in[8] : NULL;
    inf_status st;
    if ((st = check_q8(ctx, 0, "A")) != INF_OK || (st = check_q8(ctx, 3, "B")) != INF_OK) return st;
    if (a->ndim != 2 || b->ndim != 2)
        return inf__kernel_error(ctx, INF_ESHAPE, "A and B must be 2-D, got ranks %d and %d", a->ndim, b->ndim);
    int64_t m = a->dims[ta ? 1 : 0], k = a->dims[ta ? 0 : 1], n = b->dims[tb ? 0 : 1];
    if (b->dims[tb ? 1 : 0] != k)
        return inf__kernel_error(ctx, INF_ESHAPE, "A's K (%lld) differs from B's (%lld)", (long long)k,
                                 (long long)b->dims[tb ? 1 : 0]);
    float as;
    int azp;
    if ((st = get_scale(ctx, 1, "a_scale", &as)) != INF_OK ||
        (st = get_zp(ctx, 2, "a_zero_point", a->dtype, &azp)) != INF_OK)
        return st;
    const inf_tensor *bsc = ctx->in[4], *bzt = ctx->in[5];
    if (bsc->dtype != INF_DTYPE_F32)
        return inf__kernel_error(ctx, INF_ETYPE, "b_scale: expected float32, got %s", inf_dtype_name(bsc->dtype));
    if ((st = per_col(ctx, 4, "b_scale", n)) != INF_OK) return st;
    if (bzt) {
        if (bzt->dtype != b->dtype)
            return inf__kernel_error(ctx, INF_ETYPE, "b_zero_point: expected %s (B's type), got %s",
                                     inf_dtype_name(b->dtype), inf_dtype_name(bzt->dtype));
        if ((st = per_col(ctx, 5, "b_zero_point", n)) != INF_OK) return st;
    }
    int64_t n_bs = inf_tensor_numel(bsc), n_bz = bzt ? inf_tensor_numel(bzt) : 0;
    if (c) {
        int nd;
        int64_t d[INF_MAX_DIMS], mn[2] = {m, n};
        if (c->dtype != INF_DTYPE_I32)
            return inf__kernel_error(ctx, INF_ETYPE, "C: expected int32, got %s", inf_dtype_name(c->dtype));
        if (c->ndim > 2 || inf__broadcast_shape(c->ndim, c->dims, 2, mn, &nd, d) != INF_OK || d[0] != m || d[1] != n)
            return inf__kernel_error(ctx, INF_ESHAPE, "C does not broadcast to [%lld, %lld]", (long long)m,
                                     (long long)n);
    }
    float ys = 0;
    int yzp = 0;
    inf_dtype yt = INF_DTYPE_F32;
    if (ysc) {
        yt = yzt ? yzt->dtype : INF_DTYPE_U8;
        if (!is_q8(yt))
            return inf__kernel_error(ctx, INF_ETYPE, "y_zero_point: expected uint8 or int8, got %s",
                                     inf_dtype_name(yt));
        if ((st = get_scale(ctx, 7, "y_scale", &ys)) != INF_OK ||
            (st = get_zp(ctx, 8, "y_zero_point", yt, &yzp)) != INF_OK)
            return st;
    } else if (yzt) {
        return inf__kernel_error(ctx, INF_EMODEL, "y_zero_point without y_scale");
    }
    int64_t dims[2] = {m, n};
    inf_tensor *y;
    if ((st = inf__kernel_output(ctx, 0, yt, 2, dims, &y)) != INF_OK) return st;
    bcast_iter ic;
    if (c) bcast_init(&ic, c->ndim, c->dims, 2, dims);
    const float *bs = bsc->data;
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++) {
            int bzp = n_bz ? q_get(b->dtype, bzt->data, n_bz == 1 ? 0 : j) : 0;
            int32_t acc = 0;
            for (int64_t p = 0; p < k; p++)
                acc += (q_get(a->dtype, a->data, ta ? p * m + i : i * k + p) - azp) *
                       (q_get(b->dtype, b->data, tb ? j * k + p : p * n + j) - bzp);
            if (c) {
                acc += ((const int32_t *)c->data)[ic.off];
                bcast_next(&ic);
            }
            float scale = as * bs[n_bs == 1 ? 0 : j] * alpha;
            if (ysc)
                q_set(yt, y->data, i * n + j, q_round(yt, (float)acc * (scale / ys), yzp));
            else
                ((float *)y->data)[i * n + j] = (float)acc * scale;
        }
    return INF_OK;
}

const inf__op_impl op_ms_qgemm = {qgemm_init, qgemm_run};
