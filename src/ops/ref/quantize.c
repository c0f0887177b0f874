/*
 * quantize.c -- reference kernels for linear quantization.
 *
 * ONNX ops:
 *   QuantizeLinear         opsets 10-26: y = saturate(round(x / y_scale) + y_zero_point);
 *                          per tensor (scalar scale) or, from opset 13, per
 *                          axis (1-D scale along `axis`, default 1), or from
 *                          21 blocked (block_size: scale of x's shape with
 *                          ceil(dims[axis] / block_size) on the axis).  x float32
 *                          or int32; y uint8 (default, no zero point), int8,
 *                          and from 21 uint16/int16 (zero point's type or
 *                          output_dtype).
 *   DequantizeLinear       opsets 10-26: y = (x - x_zero_point) * x_scale, float32;
 *                          per tensor, per axis or blocked as above; x uint8,
 *                          int8, uint16, int16 or int32 (zero point 0).
 *                          float8/int4 forms of 19-25 are refused by type.
 *   DynamicQuantizeLinear  opsets 11-17: uint8 quantization of float32 x with
 *                          scale = (max(0, max x) - min(0, min x)) / 255 and
 *                          zero point round(-min / scale).
 * dtypes: uint8 and int8 for the quantized tensors, any mix of the two.
 * Rounding is half to even (nearbyint in the default rounding mode) and the
 * result saturates to the output type's range.  Accumulation is exact
 * (int64) and wraps to int32 for the int32 outputs.
 * Fast path: DynamicQuantizeLinear, and QuantizeLinear of float32 into
 *   uint8 with one (finite, positive) scale, use the vector min/max and
 *   quantization of ops/qgemm.h (same bits as the loops here); DequantizeLinear
 *   of 8-bit x with one scale and zero point a loop without per-element lookups.
 * Deviations: DynamicQuantizeLinear computes the scale and zero point in
 *   double (as the ONNX reference does) before rounding the scale to float32.
 * The integer products live beside this file: quantize_matmul.c
 * (MatMulInteger, QLinearMatMul), quantize_conv.c (ConvInteger,
 * QLinearConv), quantize_fused.c (the optimizer's fused QGemm / QConv);
 * quantize_common.h holds the parameter helpers they share.
 */
#include <float.h>
#include <math.h>
#include <string.h>

#include "ops/ops.h"
#include "ops/qgemm.h"
#include "ops/ref/quantize_common.h"
#include "ops/vmath.h"

/* QuantizeLinear/DequantizeLinear's quantized types: 8-bit, and 16-bit from opset 21. */
static bool is_q16(inf_dtype t) { return is_q8(t) || t == INF_DTYPE_U16 || t == INF_DTYPE_I16; }

/* ======================================================================== */
/*  QuantizeLinear, DequantizeLinear                                         */
/* ======================================================================== */

typedef struct axis_params {
    int64_t axis;
    int64_t block;          /* opset 21+ block_size: 0 = per tensor / per axis */
    inf_dtype output_dtype; /* opset 21+ QuantizeLinear: y's type without a zero point; UNDEFINED = uint8 */
} axis_params;

/* Opsets 19-26 add attributes: block_size (21, blocked quantization,
 * implemented), output_dtype (21; uint8, int8, uint16, int16 for
 * QuantizeLinear, float32 for DequantizeLinear), saturate (19, float8 only)
 * and precision (23, float32): values naming types Infera does not
 * implement (float8, int4...) are refused by name. */
static inf_status axis_init(inf__node *node, inf__arena *arena, inf_error *err) {
    axis_params *p = inf__op_params(arena, axis_params);
    if (!p) return INF_ENOMEM;
    p->axis = inf__attr_int(node, "axis", 1);
    p->block = inf__attr_int(node, "block_size", 0);
    if (p->block < 0)
        return inf__node_error(node, err, INF_EMODEL, "attribute block_size must be >= 0, got %lld", (long long)p->block);
    bool quantize = strcmp(node->op_type, "QuantizeLinear") == 0;
    int64_t out = inf__attr_int(node, "output_dtype", 0);
    bool out_ok = out == 0 || (quantize ? out > 0 && out < INF_DTYPE_COUNT && is_q16((inf_dtype)out) : out == INF_DTYPE_F32);
    if (!out_ok)
        return inf__node_error(node, err, INF_EUNSUPPORTED, "attribute output_dtype: element type %s (ONNX type %lld) "
                               "is not implemented here (%s)", inf__onnx_type_name((int)(out > 0 && out < 1000 ? out : -1)),
                               (long long)out, quantize ? "uint8, int8, uint16 or int16" : "float32");
    int64_t precision = inf__attr_int(node, "precision", 0);
    if (precision != 0 && precision != INF_DTYPE_F32)
        return inf__node_error(node, err, INF_EUNSUPPORTED, "attribute precision: element type %s is not implemented "
                               "(float32)", inf__onnx_type_name((int)(precision > 0 && precision < 1000 ? precision : -1)));
    p->output_dtype = (inf_dtype)out;
    node->params = p;
    return INF_OK;
}

/* Where element i of x finds its scale and zero point: per tensor, per
 * axis (k = the index along the axis) or blocked (the parameters have x's
 * shape with the axis cut into blocks of `block`). */
typedef struct quant_geom {
    int64_t len, inner, block, n_blocks; /* block 0: not blocked */
} quant_geom;

static inline int64_t quant_param(const quant_geom *g, int64_t i) {
    int64_t a = (i / g->inner) % g->len;
    if (!g->block) return a;
    return ((i / (g->inner * g->len)) * g->n_blocks + a / g->block) * g->inner + i % g->inner;
}

/* Blocked parameters (opset 21): scale (and zp) of x's rank, equal dims but
 * ceil(dims[axis] / block) on the axis. */
static inf_status quant_blocks(inf__kernel_ctx *ctx, const inf_tensor *x, const inf_tensor *scale,
                               const inf_tensor *zp, int axis, quant_geom *g) {
    g->n_blocks = (x->dims[axis] + g->block - 1) / g->block;
    for (int k = 0; k < 2; k++) {
        const inf_tensor *t = k ? zp : scale;
        if (!t) continue;
        bool ok = t->ndim == x->ndim;
        for (int d = 0; ok && d < x->ndim; d++) ok = t->dims[d] == (d == axis ? g->n_blocks : x->dims[d]);
        if (!ok)
            return inf__kernel_error(ctx, INF_ESHAPE, "input %s: block_size %lld on axis %d needs x's shape with %lld "
                                     "blocks on the axis", k ? "zero point" : "scale", (long long)g->block, axis,
                                     (long long)g->n_blocks);
    }
    return INF_OK;
}

/* For per-axis parameters: the axis length and the stride of one step
 * along it (inner); per tensor when the scale has one element. */
static inf_status quant_axis(inf__kernel_ctx *ctx, const inf_tensor *x, const inf_tensor *scale,
                             const inf_tensor *zp, quant_geom *g) {
    const axis_params *p = ctx->node->params;
    int64_t *len = &g->len, *inner = &g->inner;
    *len = 1, *inner = 1, g->block = 0, g->n_blocks = 1;
    if (p->block) {
        int axis;
        inf_status st = inf__normalize_axis(ctx, p->axis, x->ndim, &axis);
        if (st != INF_OK) return st;
        *len = x->dims[axis];
        for (int i = axis + 1; i < x->ndim; i++) *inner *= x->dims[i];
        g->block = p->block;
        return quant_blocks(ctx, x, scale, zp, axis, g);
    }
    if (inf_tensor_numel(scale) == 1 && scale->ndim <= 1) {
        if (zp && inf_tensor_numel(zp) != 1)
            return inf__kernel_error(ctx, INF_ESHAPE, "zero point has %lld elements, scale has 1",
                                     (long long)inf_tensor_numel(zp));
        return INF_OK;
    }
    int axis;
    inf_status st = inf__normalize_axis(ctx, p->axis, x->ndim, &axis);
    if (st != INF_OK) return st;
    *len = x->dims[axis];
    for (int i = axis + 1; i < x->ndim; i++) *inner *= x->dims[i];
    if ((st = check_param(ctx, "scale", scale, *len, "per-axis")) != INF_OK) return st;
    if (scale->ndim != 1 || scale->dims[0] != *len)
        return inf__kernel_error(ctx, INF_ESHAPE, "input scale: expected %lld values along axis %d",
                                 (long long)*len, axis);
    if (zp && (zp->ndim != 1 || zp->dims[0] != *len))
        return inf__kernel_error(ctx, INF_ESHAPE, "zero point: expected %lld values along axis %d",
                                 (long long)*len, axis);
    return INF_OK;
}

static inf_status quantize_run(inf__kernel_ctx *ctx) {
    const inf_tensor *x = ctx->in[0], *scale = opt_input(ctx, 1), *zp = opt_input(ctx, 2);
    if (x->dtype != INF_DTYPE_F32 && x->dtype != INF_DTYPE_I32)
        return inf__kernel_error(ctx, INF_ETYPE, "input x: expected float32 or int32, got %s",
                                 inf_dtype_name(x->dtype));
    inf_status st = check_scale(ctx, "y_scale", scale);
    if (st != INF_OK) return st;
    if (zp && !is_q16(zp->dtype))
        return inf__kernel_error(ctx, INF_ETYPE, "input y_zero_point: expected uint8, int8, uint16 or int16, got %s",
                                 inf_dtype_name(zp->dtype));
    quant_geom g;
    if ((st = quant_axis(ctx, x, scale, zp, &g)) != INF_OK) return st;
    inf_tensor *y;
    const axis_params *p = ctx->node->params;
    if (zp && p->output_dtype && zp->dtype != p->output_dtype)
        return inf__kernel_error(ctx, INF_ETYPE, "input y_zero_point is %s, attribute output_dtype says %s",
                                 inf_dtype_name(zp->dtype), inf_dtype_name(p->output_dtype));
    inf_dtype out_type =
        inf__quantize_linear_out_type(zp != NULL, zp ? zp->dtype : INF_DTYPE_UNDEFINED, p->output_dtype);
    st = inf__kernel_output(ctx, 0, out_type, x->ndim, x->dims, &y);
    if (st != INF_OK) return st;
    /* one parameter (g.len 1, not blocked): the scale has exactly one value to read, even when x is empty */
    float s0 = g.len == 1 && !g.block ? ((const float *)scale->data)[0] : 0.0f;
    if (x->dtype == INF_DTYPE_F32 && out_type == INF_DTYPE_U8 && s0 > 0 && s0 <= FLT_MAX) {
        /* per tensor into uint8: the vector quantizer of ops/qgemm.h, the same bits as the loop below */
        inf__quantize_u8(x->data, inf_tensor_numel(x), s0, zp ? ((const uint8_t *)zp->data)[0] : 0, y->data);
        return INF_OK;
    }
    for (int64_t i = 0, n = inf_tensor_numel(x); i < n; i++) {
        int64_t k = quant_param(&g, i);
        float v = x->dtype == INF_DTYPE_F32 ? ((const float *)x->data)[i]
                                            : (float)((const int32_t *)x->data)[i];
        q_store(y, i, v / scale_at(scale, k), zp_at(zp, k));
    }
    return INF_OK;
}

const inf__op_impl op_quantize_linear = {axis_init, quantize_run};

/* One scale and zero point over 8-bit x (ORT's quantized embedding Gathers, a DequantizeLinear not fused
 * into a QGemm): the loop below without the per-element parameter lookup and type switch, which the compiler
 * vectorizes.  The same values: q - z is exact in int32 and converts to float exactly (|q - z| <= 255). */
static void dequantize_q8_per_tensor(const inf_tensor *x, float s, int32_t z, int64_t n, float *out) {
    if (x->dtype == INF_DTYPE_U8) {
        const uint8_t *q = x->data;
        for (int64_t i = 0; i < n; i++) out[i] = (float)((int32_t)q[i] - z) * s;
    } else {
        const int8_t *q = x->data;
        for (int64_t i = 0; i < n; i++) out[i] = (float)((int32_t)q[i] - z) * s;
    }
}

static inf_status dequantize_run(inf__kernel_ctx *ctx) {
    const inf_tensor *x = ctx->in[0], *scale = opt_input(ctx, 1), *zp = opt_input(ctx, 2);
    if (!is_q16(x->dtype) && x->dtype != INF_DTYPE_I32)
        return inf__kernel_error(ctx, INF_ETYPE, "input x: expected uint8, int8, uint16, int16 or int32, got %s",
                                 inf_dtype_name(x->dtype));
    inf_status st = check_scale(ctx, "x_scale", scale);
    if (st == INF_OK) st = check_zero_point(ctx, "x_zero_point", zp, x->dtype);
    if (st != INF_OK) return st;
    quant_geom g;
    if ((st = quant_axis(ctx, x, scale, zp, &g)) != INF_OK) return st;
    inf_tensor *y;
    if ((st = inf__kernel_output(ctx, 0, INF_DTYPE_F32, x->ndim, x->dims, &y)) != INF_OK) return st;
    float *out = y->data;
    int64_t n = inf_tensor_numel(x);
    if (is_q8(x->dtype) && inf_tensor_numel(scale) == 1 && (!zp || inf_tensor_numel(zp) == 1)) {
        dequantize_q8_per_tensor(x, scale_at(scale, 0), zp_at(zp, 0), n, out);
        return INF_OK;
    }
    for (int64_t i = 0; i < n; i++) {
        int64_t k = quant_param(&g, i);
        out[i] = (float)((int64_t)q_at(x, i) - zp_at(zp, k)) * scale_at(scale, k);
    }
    return INF_OK;
}

const inf__op_impl op_dequantize_linear = {axis_init, dequantize_run};

static inf_status dynamic_quantize_run(inf__kernel_ctx *ctx) {
    const inf_tensor *x = ctx->in[0];
    if (x->dtype != INF_DTYPE_F32)
        return inf__kernel_error(ctx, INF_ETYPE, "input x: expected float32, got %s",
                                 inf_dtype_name(x->dtype));
    inf_tensor *y, *ys, *yzp;
    inf_status st = inf__kernel_output(ctx, 0, INF_DTYPE_U8, x->ndim, x->dims, &y);
    if (st == INF_OK) st = inf__kernel_output(ctx, 1, INF_DTYPE_F32, 0, NULL, &ys);
    if (st == INF_OK) st = inf__kernel_output(ctx, 2, INF_DTYPE_U8, 0, NULL, &yzp);
    if (st != INF_OK) return st;
    const float *xs = x->data;
    int64_t n = inf_tensor_numel(x);
    double lo = 0, hi = 0; /* the range always includes 0 */
    bool fast = inf__qgemm_best_isa() != INF_QGEMM_REF;
    if (fast) {
#if defined(__x86_64__)
        float flo, fhi;
        if (inf__qgemm_best_isa() == INF_QGEMM_VNNI512)
            inf__minmax_f32_avx512(xs, n, &flo, &fhi);
        else
            inf__minmax_f32_avx2(xs, n, &flo, &fhi);
        lo = flo < 0 ? flo : 0, hi = fhi > 0 ? fhi : 0;
#endif
    } else {
        for (int64_t i = 0; i < n; i++) {
            if (xs[i] < lo) lo = xs[i];
            if (xs[i] > hi) hi = xs[i];
        }
    }
    float scale = (float)((hi - lo) / 255.0);
    double zpd = scale > 0 ? nearbyint(-lo / (double)scale) : 0;
    uint8_t zp = (uint8_t)(zpd < 0 ? 0 : zpd > 255 ? 255 : zpd);
    *(float *)ys->data = scale;
    *(uint8_t *)yzp->data = zp;
    if (fast && scale > 0) inf__quantize_u8(xs, n, scale, zp, y->data);
    else
        for (int64_t i = 0; i < n; i++) q_store(y, i, scale > 0 ? xs[i] / scale : 0, zp);
    return INF_OK;
}

const inf__op_impl op_dynamic_quantize_linear = {NULL, dynamic_quantize_run};
