/*
 * quantize.c -- reference kernels for linear quantization and the integer
 * matrix products.
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
 *   MatMulInteger          opsets 10-17: int32 Y = (A - a_zero_point) @ (B - b_zero_point),
 *                          numpy matmul shapes; zero points scalar or per
 *                          row of A ([M]) / per column of B ([N]).
 *   QLinearMatMul          opsets 10-17: the same product requantized:
 *                          y = saturate(round(acc * a_scale * b_scale / y_scale) + y_zero_point);
 *                          scales and zero points scalar or per row / column.
 *   ConvInteger            opsets 10-17: int32 convolution of (x - x_zero_point) and
 *                          (w - w_zero_point), w_zero_point scalar or per
 *                          output channel; Conv's attributes (auto_pad,
 *                          dilations, group, kernel_shape, pads, strides).
 *   QLinearConv            opsets 10-17: the same convolution plus int32 bias B,
 *                          requantized like QLinearMatMul (w_scale scalar or
 *                          per output channel).
 * dtypes: uint8 and int8 for the quantized tensors, any mix of the two.
 * Rounding is half to even (nearbyint in the default rounding mode) and the
 * result saturates to the output type's range.  Accumulation is exact
 * (int64) and wraps to int32 for the int32 outputs.
 * Fast paths: with a constant 2-D B (a constant W) the products are packed
 *   at load for the integer GEMM of ops/qgemm.h (AVX-512 VNNI or AVX2,
 *   chosen from CPUID) and run through its drivers (ops/ref/qgemm_drive.c)
 *   when A's zero point (and scale) is per tensor; DynamicQuantizeLinear
 *   uses the vector min/max and quantization.  Same bits as the loops here
 *   (the drivers repeat their arithmetic); on a CPU without AVX2, or with
 *   INFERA_CPU=generic, the loops here run.
 * Deviations: the requantization multiplier and product are computed in
 *   float32, as onnxruntime does.  DynamicQuantizeLinear computes the
 *   scale and zero point in double (as the ONNX reference does) before
 *   rounding the scale to float32.
 */
#include <math.h>
#include <string.h>

#include "ops/ops.h"
#include "ops/qgemm.h"
#include "ops/vmath.h"

/* ---- helpers ---- */

static const inf_tensor *opt_input(const inf__kernel_ctx *ctx, int i) {
    return i < ctx->n_in ? ctx->in[i] : NULL;
}

static bool is_q8(inf_dtype t) { return t == INF_DTYPE_U8 || t == INF_DTYPE_I8; }
/* QuantizeLinear/DequantizeLinear's quantized types: 8-bit, and 16-bit from opset 21. */
static bool is_q16(inf_dtype t) { return is_q8(t) || t == INF_DTYPE_U16 || t == INF_DTYPE_I16; }

/* Element i of an int8/uint8/int16/uint16/int32 tensor. */
static inline int32_t q_at(const inf_tensor *t, int64_t i) {
    switch (t->dtype) {
    case INF_DTYPE_U8: return ((const uint8_t *)t->data)[i];
    case INF_DTYPE_I8: return ((const int8_t *)t->data)[i];
    case INF_DTYPE_U16: return ((const uint16_t *)t->data)[i];
    case INF_DTYPE_I16: return ((const int16_t *)t->data)[i];
    case INF_DTYPE_I32: return ((const int32_t *)t->data)[i];
    default: return 0;
    }
}

/* Rounds half to even, adds zp and saturates to dtype's range (8 or
 * 16 bits); stores at i. */
static inline void q_store(inf_tensor *y, int64_t i, float v, int32_t zp) {
    float r = nearbyintf(v) + (float)zp;
    float lo, hi;
    switch (y->dtype) {
    case INF_DTYPE_U8: lo = 0.0f, hi = 255.0f; break;
    case INF_DTYPE_U16: lo = 0.0f, hi = 65535.0f; break;
    case INF_DTYPE_I16: lo = -32768.0f, hi = 32767.0f; break;
    default: lo = -128.0f, hi = 127.0f; break;
    }
    r = r < lo ? lo : r > hi ? hi : r;
    if (r != r) r = (float)zp; /* NaN */
    switch (y->dtype) {
    case INF_DTYPE_U8: ((uint8_t *)y->data)[i] = (uint8_t)r; break;
    case INF_DTYPE_U16: ((uint16_t *)y->data)[i] = (uint16_t)r; break;
    case INF_DTYPE_I16: ((int16_t *)y->data)[i] = (int16_t)r; break;
    default: ((int8_t *)y->data)[i] = (int8_t)r; break;
    }
}

/* A quantization parameter: scalar, or 1-D of `len` (per axis / row / column). */
static inf_status check_param(inf__kernel_ctx *ctx, const char *name, const inf_tensor *t,
                              int64_t len, const char *what) {
    char buf[96];
    if (!t) return INF_OK;
    int64_t n = inf_tensor_numel(t);
    if (t->ndim == 0 || (t->ndim == 1 && (n == 1 || n == len))) return INF_OK;
    return inf__kernel_error(ctx, INF_ESHAPE, "input %s: expected a scalar or shape [%lld] (%s), got %s",
                             name, (long long)len, what, inf__shape_str(t->ndim, t->dims, buf, sizeof buf));
}

static inf_status check_scale(inf__kernel_ctx *ctx, const char *name, const inf_tensor *t) {
    if (!t) return inf__kernel_error(ctx, INF_EINVAL, "input %s is required", name);
    if (t->dtype != INF_DTYPE_F32)
        return inf__kernel_error(ctx, INF_ETYPE, "input %s: expected float32, got %s", name,
                                 inf_dtype_name(t->dtype));
    return INF_OK;
}

static inf_status check_zero_point(inf__kernel_ctx *ctx, const char *name, const inf_tensor *t,
                                   inf_dtype want) {
    if (t && t->dtype != want)
        return inf__kernel_error(ctx, INF_ETYPE, "input %s: expected %s, got %s", name,
                                 inf_dtype_name(want), inf_dtype_name(t->dtype));
    return INF_OK;
}

/* Index into a scalar-or-vector parameter. */
static inline int64_t param_index(const inf_tensor *t, int64_t i) {
    return inf_tensor_numel(t) == 1 ? 0 : i;
}

static inline float scale_at(const inf_tensor *t, int64_t i) {
    return ((const float *)t->data)[param_index(t, i)];
}

static inline int32_t zp_at(const inf_tensor *t, int64_t i) {
    return t ? q_at(t, param_index(t, i)) : 0;
}

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
    inf_dtype out_type = zp ? zp->dtype : p->output_dtype ? p->output_dtype : INF_DTYPE_U8;
    st = inf__kernel_output(ctx, 0, out_type, x->ndim, x->dims, &y);
    if (st != INF_OK) return st;
    for (int64_t i = 0, n = inf_tensor_numel(x); i < n; i++) {
        int64_t k = quant_param(&g, i);
        float v = x->dtype == INF_DTYPE_F32 ? ((const float *)x->data)[i]
                                            : (float)((const int32_t *)x->data)[i];
        q_store(y, i, v / scale_at(scale, k), zp_at(zp, k));
    }
    return INF_OK;
}

const inf__op_impl op_quantize_linear = {axis_init, quantize_run};

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
    for (int64_t i = 0, n = inf_tensor_numel(x); i < n; i++) {
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

/* ======================================================================== */
/*  MatMulInteger, QLinearMatMul                                             */
/* ======================================================================== */

typedef struct qmm_plan {
    int64_t m, n, k, n_batch;
    int nb;
    int64_t bdims[INF_MAX_DIMS], a_str[INF_MAX_DIMS], b_str[INF_MAX_DIMS];
    int out_ndim;
    int64_t out_dims[INF_MAX_DIMS];
} qmm_plan;

/* numpy matmul shapes: 1-D operands promoted, batch dims broadcast. */
static inf_status qmm_plan_make(inf__kernel_ctx *ctx, const inf_tensor *a, const inf_tensor *b,
                                qmm_plan *pl) {
    char b1[96], b2[96];
    if (a->ndim < 1 || b->ndim < 1)
        return inf__kernel_error(ctx, INF_ESHAPE, "inputs A and B must have rank >= 1");
    int64_t am = a->ndim == 1 ? 1 : a->dims[a->ndim - 2], ak = a->dims[a->ndim - 1];
    int64_t bk = b->ndim == 1 ? b->dims[0] : b->dims[b->ndim - 2];
    int64_t bn = b->ndim == 1 ? 1 : b->dims[b->ndim - 1];
    int anb = a->ndim > 2 ? a->ndim - 2 : 0, bnb = b->ndim > 2 ? b->ndim - 2 : 0;
    if (ak != bk || inf__broadcast_shape(anb, a->dims, bnb, b->dims, &pl->nb, pl->bdims) != INF_OK)
        return inf__kernel_error(ctx, INF_ESHAPE, "A %s and B %s do not multiply",
                                 inf__shape_str(a->ndim, a->dims, b1, sizeof b1),
                                 inf__shape_str(b->ndim, b->dims, b2, sizeof b2));
    pl->m = am, pl->n = bn, pl->k = ak;
    inf__broadcast_strides(anb, a->dims, pl->nb, pl->bdims, pl->a_str);
    inf__broadcast_strides(bnb, b->dims, pl->nb, pl->bdims, pl->b_str);
    pl->n_batch = 1;
    pl->out_ndim = 0;
    for (int i = 0; i < pl->nb; i++) pl->n_batch *= pl->bdims[i], pl->out_dims[pl->out_ndim++] = pl->bdims[i];
    if (a->ndim > 1) pl->out_dims[pl->out_ndim++] = am;
    if (b->ndim > 1) pl->out_dims[pl->out_ndim++] = bn;
    if (pl->out_ndim > INF_MAX_DIMS) return inf__kernel_error(ctx, INF_ESHAPE, "result rank too high");
    return INF_OK;
}

/* Calls emit(i, j, acc, out_index) for every output of the integer product. */
typedef struct qmm_args {
    const inf_tensor *a, *b, *azp, *bzp;
    const inf_tensor *as, *bs, *ys, *yzp; /* QLinearMatMul */
    inf_tensor *y;
} qmm_args;

static void qmm_compute(const qmm_plan *pl, const qmm_args *q) {
    int64_t m = pl->m, n = pl->n, k = pl->k;
    for (int64_t t = 0; t < pl->n_batch; t++) {
        int64_t ao = 0, bo = 0, rem = t;
        for (int d = pl->nb - 1; d >= 0; d--) {
            int64_t i = rem % pl->bdims[d];
            rem /= pl->bdims[d];
            ao += i * pl->a_str[d], bo += i * pl->b_str[d];
        }
        ao *= m * k, bo *= k * n;
        for (int64_t i = 0; i < m; i++)
            for (int64_t j = 0; j < n; j++) {
                int32_t za = zp_at(q->azp, i), zb = zp_at(q->bzp, j);
                int64_t acc = 0;
                for (int64_t p = 0; p < k; p++)
                    acc += (int64_t)(q_at(q->a, ao + i * k + p) - za) * (q_at(q->b, bo + p * n + j) - zb);
                int64_t o = (t * m + i) * n + j;
                if (!q->ys) {
                    ((int32_t *)q->y->data)[o] = (int32_t)(uint32_t)acc;
                } else {
                    float mult = scale_at(q->as, i) * scale_at(q->bs, j) / scale_at(q->ys, 0);
                    q_store(q->y, o, (float)acc * mult, zp_at(q->yzp, 0));
                }
            }
    }
}

static inf_status check_q8(inf__kernel_ctx *ctx, const char *name, const inf_tensor *t) {
    if (!t) return inf__kernel_error(ctx, INF_EINVAL, "input %s is required", name);
    if (!is_q8(t->dtype))
        return inf__kernel_error(ctx, INF_ETYPE, "input %s: expected uint8 or int8, got %s", name,
                                 inf_dtype_name(t->dtype));
    return INF_OK;
}

/* ---- the packed fast path (ops/qgemm.h) ---- */

/* B packed at load: when B (input b_at) is a constant 2-D 8-bit tensor with
 * a constant per-tensor or per-column zero point (input bzp_at), and the
 * CPU has a fast integer GEMM. */
typedef struct qmm_pack {
    bool packed;
    const void *b_src; /* the constant packed, to recognise it at run time */
    inf__qgemm_b b;
} qmm_pack;

static inf_status qmm_pack_init(inf__node *node, inf__arena *arena, int b_at, int bzp_at) {
    qmm_pack *p = inf__op_params(arena, qmm_pack);
    if (!p) return INF_ENOMEM;
    node->params = p;
    inf__qgemm_isa isa = inf__qgemm_best_isa();
    const inf_tensor *b = inf__node_constant_input(node, b_at), *bz = inf__node_constant_input(node, bzp_at);
    bool has_bz = bzp_at < node->n_inputs && node->inputs[bzp_at] >= 0;
    if (isa == INF_QGEMM_REF || !b || b->kind != INF_KIND_TENSOR || !is_q8(b->dtype) || b->ndim != 2 || !b->data)
        return INF_OK;
    if (has_bz && (!bz || bz->dtype != b->dtype ||
                   !(inf_tensor_numel(bz) == 1 || (bz->ndim == 1 && bz->dims[0] == b->dims[1]))))
        return INF_OK;
    isa = inf__qgemm_pack_isa(isa, b->dims[0], b->dims[1], b->data, b->dtype, b->dims[1], false);
    inf_status st = inf__qgemm_pack_b(arena, isa, b->dims[0], b->dims[1], b->data, b->dtype, b->dims[1], false,
                                      bz ? bz->data : NULL, bz ? inf_tensor_numel(bz) : 1, &p->b);
    if (st != INF_OK) return st;
    p->packed = true;
    p->b_src = b->data;
    return INF_OK;
}

static inf_status matmul_integer_init(inf__node *node, inf__arena *arena, inf_error *err) {
    (void)err;
    return qmm_pack_init(node, arena, 1, 3);
}

static inf_status qlinear_matmul_init(inf__node *node, inf__arena *arena, inf_error *err) {
    (void)err;
    return qmm_pack_init(node, arena, 3, 5);
}

/* Runs the product on the packed B when it applies; false to take the loops. */
static bool qmm_fast(inf__kernel_ctx *ctx, const qmm_plan *pl, const qmm_args *q, inf_status *st) {
    const qmm_pack *p = ctx->node->params;
    if (!p || !p->packed || q->b->data != p->b_src || pl->k != p->b.k || pl->n != p->b.n ||
        (q->azp && inf_tensor_numel(q->azp) != 1) || (q->as && inf_tensor_numel(q->as) != 1))
        return false;
    int64_t rows = pl->n_batch * pl->m;
    float *mult = NULL;
    void *scratch = inf__kernel_scratch(ctx, inf__qmatmul_scratch_bytes(&p->b, rows));
    if (q->ys && scratch) mult = inf__kernel_scratch(ctx, (size_t)pl->n * sizeof *mult);
    if (!scratch || (q->ys && !mult)) {
        *st = INF_ENOMEM;
        return true;
    }
    inf__qout out = {.kind = INF_QOUT_I32};
    if (q->ys) {
        for (int64_t j = 0; j < pl->n; j++) mult[j] = scale_at(q->as, 0) * scale_at(q->bs, j) / scale_at(q->ys, 0);
        out = (inf__qout){.kind = INF_QOUT_Q8, .mult = mult, .mult_per_col = true, .y_dtype = q->y->dtype,
                          .y_zp = zp_at(q->yzp, 0)};
    }
    inf__qsrc a = {.data = q->a->data, .dtype = q->a->dtype, .ld = pl->k, .zp = zp_at(q->azp, 0)};
    inf__qmatmul_drive(ctx->pool, &p->b, rows, &a, &out, q->y->data, pl->n, scratch);
    *st = INF_OK;
    return true;
}

static inf_status matmul_integer_run(inf__kernel_ctx *ctx) {
    qmm_args q = {ctx->in[0], opt_input(ctx, 1), opt_input(ctx, 2), opt_input(ctx, 3),
                  NULL, NULL, NULL, NULL, NULL};
    inf_status st = check_q8(ctx, "A", q.a);
    if (st == INF_OK) st = check_q8(ctx, "B", q.b);
    if (st == INF_OK) st = check_zero_point(ctx, "a_zero_point", q.azp, q.a->dtype);
    if (st == INF_OK) st = check_zero_point(ctx, "b_zero_point", q.bzp, q.b->dtype);
    if (st != INF_OK) return st;
    qmm_plan pl;
    if ((st = qmm_plan_make(ctx, q.a, q.b, &pl)) != INF_OK) return st;
    if ((st = check_param(ctx, "a_zero_point", q.azp, pl.m, "per row of A")) != INF_OK ||
        (st = check_param(ctx, "b_zero_point", q.bzp, pl.n, "per column of B")) != INF_OK)
        return st;
    if ((st = inf__kernel_output(ctx, 0, INF_DTYPE_I32, pl.out_ndim, pl.out_dims, &q.y)) != INF_OK)
        return st;
    if (qmm_fast(ctx, &pl, &q, &st)) return st;
    qmm_compute(&pl, &q);
    return INF_OK;
}

const inf__op_impl op_matmul_integer = {matmul_integer_init, matmul_integer_run};

static inf_status qlinear_matmul_run(inf__kernel_ctx *ctx) {
    qmm_args q = {ctx->in[0], opt_input(ctx, 3), opt_input(ctx, 2), opt_input(ctx, 5),
                  opt_input(ctx, 1), opt_input(ctx, 4), opt_input(ctx, 6), opt_input(ctx, 7), NULL};
    inf_status st = check_q8(ctx, "a", q.a);
    if (st == INF_OK) st = check_q8(ctx, "b", q.b);
    if (st == INF_OK) st = check_q8(ctx, "y_zero_point", q.yzp);
    if (st == INF_OK) st = check_zero_point(ctx, "a_zero_point", q.azp, q.a->dtype);
    if (st == INF_OK) st = check_zero_point(ctx, "b_zero_point", q.bzp, q.b->dtype);
    if (st == INF_OK) st = check_scale(ctx, "a_scale", q.as);
    if (st == INF_OK) st = check_scale(ctx, "b_scale", q.bs);
    if (st == INF_OK) st = check_scale(ctx, "y_scale", q.ys);
    if (st != INF_OK) return st;
    qmm_plan pl;
    if ((st = qmm_plan_make(ctx, q.a, q.b, &pl)) != INF_OK) return st;
    if ((st = check_param(ctx, "a_scale", q.as, pl.m, "per row of a")) != INF_OK ||
        (st = check_param(ctx, "a_zero_point", q.azp, pl.m, "per row of a")) != INF_OK ||
        (st = check_param(ctx, "b_scale", q.bs, pl.n, "per column of b")) != INF_OK ||
        (st = check_param(ctx, "b_zero_point", q.bzp, pl.n, "per column of b")) != INF_OK ||
        (st = check_param(ctx, "y_scale", q.ys, 1, "per tensor")) != INF_OK ||
        (st = check_param(ctx, "y_zero_point", q.yzp, 1, "per tensor")) != INF_OK)
        return st;
    if ((st = inf__kernel_output(ctx, 0, q.yzp->dtype, pl.out_ndim, pl.out_dims, &q.y)) != INF_OK)
        return st;
    if (qmm_fast(ctx, &pl, &q, &st)) return st;
    qmm_compute(&pl, &q);
    return INF_OK;
}

const inf__op_impl op_qlinear_matmul = {qlinear_matmul_init, qlinear_matmul_run};

/* ======================================================================== */
/*  ConvInteger, QLinearConv                                                 */
/* ======================================================================== */

enum { AUTO_NOTSET, AUTO_SAME_UPPER, AUTO_SAME_LOWER, AUTO_VALID };
#define MAX_SP (INF_MAX_DIMS - 2)

typedef struct qconv_params {
    int auto_pad;
    int64_t group;
    int n_kernel, n_strides, n_dilations, n_pads;
    const int64_t *kernel, *strides, *dilations, *pads;
    /* W packed at load per group (ops/qgemm.h), for 1-D/2-D convs */
    bool packed;
    const void *w_src;
    int64_t w_dims[INF_MAX_DIMS];
    int w_ndim;
    inf__qgemm_b *bg; /* [group] */
    /* fused QConv (graph/passes/qdq_chain.c): x / y uint8 channels last (u8_in / u8_out) */
    bool nhwc_in, nhwc_out;
    int64_t cgp;      /* W packed with channels padded to cgp (ops/qgemm.h inf__qconv_geom), or 0 */
    int64_t pool[4];  /* fused MaxPool (graph/passes/qdq_chain.c): kernel h, w, strides h, w; or 0s */
    inf__qdw_w dw;    /* a depthwise conv (group == channels, one output each): W packed for it too */
    bool has_dw;
    inf__qwino_w wino; /* a 3x3 stride-1 conv on the AVX2 kernels: W transformed for the INT8 Winograd too */
    bool has_wino;
} qconv_params;

#if defined(__x86_64__) && !defined(INF_EDGE)
/* Does W take an INT8 Winograd (ops/qgemm.h) as well: a 3x3, stride-1,
 * undilated, single-group conv with int8 weights and no zero point, at
 * least 8 channels in and out, packed for the AVX2 kernels (the VNNI ones
 * keep the direct conv)?  The tile (4, or 2 where F(4x4) would not be
 * exact in its integers), or 0. */
static int qwino_tile(const qconv_params *p, const inf_tensor *w, inf__qgemm_isa isa, bool wz_zero, bool padded) {
    int tile = inf__qwino_tile();
    if (!tile || !(isa == INF_QGEMM_AVX2 || isa == INF_QGEMM_AVX2_UBS) || padded || !wz_zero || p->group != 1 ||
        w->ndim != 4 || w->dtype != INF_DTYPE_I8 || w->dims[2] != 3 || w->dims[3] != 3 || w->dims[0] < 8 ||
        w->dims[1] < 8)
        return 0;
    for (int i = 0; i < p->n_strides; i++)
        if (p->strides[i] != 1) return 0;
    for (int i = 0; i < p->n_dilations; i++)
        if (p->dilations[i] != 1) return 0;
    if (tile == 4 && inf__qwino_exact(4, w->dims[1], w->dims[0], w->data)) return 4;
    return inf__qwino_exact(2, w->dims[1], w->dims[0], w->data) ? 2 : 0;
}
#endif

/* Packs a constant W (input w_at; zero point input wzp_at: per tensor or
 * per output channel) per group as B = W_g^T, when isa allows. */
static inf_status qconv_pack(inf__node *node, inf__arena *arena, qconv_params *p, inf__qgemm_isa isa, int w_at,
                             int wzp_at) {
    const inf_tensor *w = inf__node_constant_input(node, w_at), *wz = inf__node_constant_input(node, wzp_at);
    bool has_wz = wzp_at < node->n_inputs && node->inputs[wzp_at] >= 0;
    if (!w || w->kind != INF_KIND_TENSOR || !is_q8(w->dtype) || w->ndim < 3 || w->ndim > 4 || !w->data ||
        w->dims[0] % p->group)
        return INF_OK;
    int64_t m = w->dims[0], mg = m / p->group, k = inf_tensor_numel(w) / (m ? m : 1);
    if (has_wz && (!wz || wz->dtype != w->dtype || !(inf_tensor_numel(wz) == 1 || inf_tensor_numel(wz) == m)))
        return INF_OK;
    int64_t cg = w->dims[1], taps = k / (cg ? cg : 1);
    /* a stem conv (3 channels) on VNNI or AVX2: channels padded to 4 (VNNI's quads) or 2 (AVX2's pairs)
     * with zero weights, so the driver reads the image in place (ops/ref/qgemm_drive.c's implicit-GEMM
     * conditions, which this guarantees) */
    bool wz_zero = !has_wz;
    if (wz) {
        wz_zero = true;
        for (int64_t i = 0; i < inf_tensor_numel(wz); i++) wz_zero = wz_zero && ((const uint8_t *)wz->data)[i] == 0;
    }
    int64_t unit = isa == INF_QGEMM_VNNI512 || isa == INF_QGEMM_AVXVNNI ? 4 : isa == INF_QGEMM_AVX2 ? 2 : 1;
    int64_t cgp = unit > 1 && cg % unit && p->group == 1 && wz_zero && w->dtype == INF_DTYPE_I8 && taps <= 64 &&
                          m <= 4080 ? (cg + unit - 1) / unit * unit : cg;
    k = taps * cgp;
    p->bg = inf__arena_alloc(arena, (size_t)p->group * sizeof *p->bg);
    uint8_t *hwc = inf__calloc((size_t)(m * k), 1); /* W [m][c][taps] -> [m][taps][cgp], the driver's K order */
    if (!p->bg || !hwc) {
        inf__free(hwc);
        return INF_ENOMEM;
    }
    p->cgp = cgp != cg ? cgp : 0;
    for (int64_t o = 0; o < m; o++)
        for (int64_t c = 0; c < cg; c++)
            for (int64_t t = 0; t < taps; t++) hwc[(o * taps + t) * cgp + c] = ((const uint8_t *)w->data)[(o * cg + c) * taps + t];
    inf_status st = INF_OK;
    isa = inf__qgemm_pack_isa(isa, k, m, hwc, w->dtype, k, true); /* one kernel for every group */
    for (int64_t grp = 0; grp < p->group && st == INF_OK; grp++) {
        bool per_ch = wz && inf_tensor_numel(wz) > 1;
        const void *zp = wz ? (const char *)wz->data + (per_ch ? grp * mg : 0) : NULL;
        st = inf__qgemm_pack_b(arena, isa, k, mg, hwc + grp * mg * k, w->dtype, k, true, zp, per_ch ? mg : 1,
                               &p->bg[grp]);
    }
    inf__free(hwc);
#if defined(__x86_64__) && !defined(INF_EDGE)
    int wtile = st == INF_OK ? qwino_tile(p, w, isa, wz_zero, cgp != cg) : 0;
    if (wtile) {
        st = inf__qwino_pack(arena, wtile, cg, m, w->data, &p->wino);
        p->has_wino = st == INF_OK;
    }
#endif
    if (st == INF_OK && cg == 1 && mg == 1 && p->group > 1 && taps <= 64) { /* depthwise: ops/ref/qdepthwise.c */
        bool per_ch = wz && inf_tensor_numel(wz) > 1;
        st = inf__qdw_pack(arena, m, taps, w->data, w->dtype, wz ? wz->data : NULL, per_ch ? m : 1, &p->dw);
        p->has_dw = st == INF_OK;
    }
    if (st != INF_OK) return st;
    p->packed = true;
    p->w_src = w->data;
    p->w_ndim = w->ndim;
    memcpy(p->w_dims, w->dims, sizeof p->w_dims);
    return INF_OK;
}

static inf_status qconv_init(inf__node *node, inf__arena *arena, inf_error *err) {
    qconv_params *p = inf__op_params(arena, qconv_params);
    if (!p) return INF_ENOMEM;
    const char *ap = inf__attr_string(node, "auto_pad", "NOTSET");
    if (!strcmp(ap, "NOTSET")) p->auto_pad = AUTO_NOTSET;
    else if (!strcmp(ap, "SAME_UPPER")) p->auto_pad = AUTO_SAME_UPPER;
    else if (!strcmp(ap, "SAME_LOWER")) p->auto_pad = AUTO_SAME_LOWER;
    else if (!strcmp(ap, "VALID")) p->auto_pad = AUTO_VALID;
    else return inf__node_error(node, err, INF_EMODEL, "unknown auto_pad '%s'", ap);
    p->group = inf__attr_int(node, "group", 1);
    p->kernel = inf__attr_ints(node, "kernel_shape", &p->n_kernel);
    p->strides = inf__attr_ints(node, "strides", &p->n_strides);
    p->dilations = inf__attr_ints(node, "dilations", &p->n_dilations);
    p->pads = inf__attr_ints(node, "pads", &p->n_pads);
    p->nhwc_in = inf__attr_int(node, "u8_in", 0) != 0;
    p->nhwc_out = inf__attr_int(node, "u8_out", 0) != 0;
    int n_pk = 0, n_ps = 0;
    const int64_t *pk = inf__attr_ints(node, "pool_kernel", &n_pk), *ps = inf__attr_ints(node, "pool_strides", &n_ps);
    if (n_pk || n_ps) {
        if (n_pk != 2 || n_ps != 2 || pk[0] < 1 || pk[1] < 1 || ps[0] < pk[0] || ps[1] < pk[1])
            return inf__node_error(node, err, INF_EMODEL, "pool_kernel/pool_strides: expected 2 values each, strides >= kernel");
        p->pool[0] = pk[0], p->pool[1] = pk[1], p->pool[2] = ps[0], p->pool[3] = ps[1];
    }
    if (p->group < 1)
        return inf__node_error(node, err, INF_EMODEL, "group = %lld, must be >= 1", (long long)p->group);
    inf_status st;
    if ((st = inf__check_window_attrs(node, err, false)) != INF_OK) return st;
    node->params = p;
    /* W is input 1 of ConvInteger, input 3 of QLinearConv and the fused QConv
     * (which always packs: it has no loops of its own) */
    bool fused = node->op->domain == INF_DOMAIN_INFERA, qlinear = fused || !strcmp(node->op_type, "QLinearConv");
    inf__qgemm_isa isa = inf__qgemm_best_isa();
    if (isa == INF_QGEMM_REF && !fused) return INF_OK;
    return qconv_pack(node, arena, p, isa, qlinear ? 3 : 1, qlinear ? 5 : 3);
}

typedef struct qconv_geom {
    int nd;
    int64_t n, c, m, cg, mg;
    int64_t in[MAX_SP], out[MAX_SP], k[MAX_SP], s[MAX_SP], d[MAX_SP], pb[MAX_SP];
    int64_t in_total, out_total, k_total;
} qconv_geom;

static inf_status qconv_geometry(inf__kernel_ctx *ctx, const qconv_params *p, const inf_tensor *x,
                                 const inf_tensor *w, qconv_geom *g) {
    char b1[96], b2[96];
    if (x->ndim < 3 || w->ndim != x->ndim)
        return inf__kernel_error(ctx, INF_ESHAPE, "inputs x %s and w %s: expected the same rank >= 3",
                                 inf__shape_str(x->ndim, x->dims, b1, sizeof b1),
                                 inf__shape_str(w->ndim, w->dims, b2, sizeof b2));
    int nd = g->nd = x->ndim - 2;
    if ((p->n_kernel && p->n_kernel != nd) || (p->n_strides && p->n_strides != nd) ||
        (p->n_dilations && p->n_dilations != nd) || (p->n_pads && p->n_pads != 2 * nd))
        return inf__kernel_error(ctx, INF_ESHAPE, "kernel_shape/strides/dilations/pads do not match %d spatial dims",
                                 nd);
    g->n = x->dims[0], g->c = x->dims[1], g->m = w->dims[0];
    if (g->c != w->dims[1] * p->group || g->m % p->group)
        return inf__kernel_error(ctx, INF_ESHAPE, "x %s and w %s do not match with group %lld",
                                 inf__shape_str(x->ndim, x->dims, b1, sizeof b1),
                                 inf__shape_str(w->ndim, w->dims, b2, sizeof b2), (long long)p->group);
    g->cg = g->c / p->group, g->mg = g->m / p->group;
    g->in_total = g->out_total = g->k_total = 1;
    for (int i = 0; i < nd; i++) {
        int64_t in = x->dims[2 + i], k = w->dims[2 + i];
        if (p->n_kernel && p->kernel[i] != k)
            return inf__kernel_error(ctx, INF_ESHAPE, "kernel_shape[%d] = %lld but w is %s", i,
                                     (long long)p->kernel[i], inf__shape_str(w->ndim, w->dims, b1, sizeof b1));
        int64_t s = p->n_strides ? p->strides[i] : 1, d = p->n_dilations ? p->dilations[i] : 1;
        int64_t dk = (k - 1) * d + 1, pb = 0, pe = 0, out;
        if (p->auto_pad == AUTO_SAME_UPPER || p->auto_pad == AUTO_SAME_LOWER) {
            out = (in + s - 1) / s;
            int64_t total = (out - 1) * s + dk - in;
            if (total < 0) total = 0;
            pb = p->auto_pad == AUTO_SAME_UPPER ? total / 2 : total - total / 2;
        } else {
            if (p->auto_pad == AUTO_NOTSET && p->n_pads) pb = p->pads[i], pe = p->pads[nd + i];
            int64_t span = in + pb + pe - dk;
            out = span < 0 ? 0 : span / s + 1;
        }
        if (k < 1 || out < 1)
            return inf__kernel_error(ctx, INF_ESHAPE, "x %s: spatial dim %d is smaller than the kernel",
                                     inf__shape_str(x->ndim, x->dims, b1, sizeof b1), i);
        g->in[i] = in, g->out[i] = out, g->k[i] = k, g->s[i] = s, g->d[i] = d, g->pb[i] = pb;
        g->in_total *= in, g->out_total *= out, g->k_total *= k;
    }
    return INF_OK;
}

typedef struct qconv_args {
    const inf_tensor *x, *w, *xzp, *wzp, *bias;
    const inf_tensor *xs, *ws, *ys, *yzp; /* QLinearConv */
    inf_tensor *y;
} qconv_args;

/* The integer sum for output (n, m) at output position opos. */
static int64_t qconv_point(const qconv_geom *g, const qconv_args *q, int64_t n, int64_t m,
                           const int64_t *opos) {
    int64_t grp = m / g->mg, acc = 0;
    int32_t xz = zp_at(q->xzp, 0), wz = zp_at(q->wzp, m);
    int64_t kpos[MAX_SP] = {0};
    for (int64_t kk = 0; kk < g->k_total; kk++) {
        int64_t off = 0;
        bool inside = true;
        for (int i = 0; i < g->nd && inside; i++) {
            int64_t ip = opos[i] * g->s[i] - g->pb[i] + kpos[i] * g->d[i];
            inside = ip >= 0 && ip < g->in[i];
            off = off * g->in[i] + ip;
        }
        if (inside)
            for (int64_t c = 0; c < g->cg; c++) {
                int64_t xi = (n * g->c + grp * g->cg + c) * g->in_total + off;
                int64_t wi = (m * g->cg + c) * g->k_total + kk;
                acc += (int64_t)(q_at(q->x, xi) - xz) * (q_at(q->w, wi) - wz);
            }
        for (int i = g->nd - 1; i >= 0 && ++kpos[i] == g->k[i]; i--) kpos[i] = 0;
    }
    return acc;
}

static void qconv_compute(const qconv_geom *g, const qconv_args *q) {
    for (int64_t n = 0; n < g->n; n++)
        for (int64_t m = 0; m < g->m; m++) {
            int64_t opos[MAX_SP] = {0};
            float mult = q->ys ? scale_at(q->xs, 0) * scale_at(q->ws, m) / scale_at(q->ys, 0) : 0;
            int64_t bias = q->bias ? ((const int32_t *)q->bias->data)[m] : 0;
            for (int64_t o = 0; o < g->out_total; o++) {
                int64_t acc = qconv_point(g, q, n, m, opos) + bias, at = (n * g->m + m) * g->out_total + o;
                if (!q->ys) ((int32_t *)q->y->data)[at] = (int32_t)(uint32_t)acc;
                else q_store(q->y, at, (float)acc * mult, zp_at(q->yzp, 0));
                for (int i = g->nd - 1; i >= 0 && ++opos[i] == g->out[i]; i--) opos[i] = 0;
            }
        }
}

static inf_status qconv_output(inf__kernel_ctx *ctx, const qconv_geom *g, inf_dtype dt, inf_tensor **y) {
    int64_t dims[INF_MAX_DIMS] = {g->n, g->m};
    for (int i = 0; i < g->nd; i++) dims[2 + i] = g->out[i];
    return inf__kernel_output(ctx, 0, dt, g->nd + 2, dims, y);
}

/* The packed path for a 1-D/2-D conv whose W is the one packed at load and
 * whose x zero point is per tensor: false to take the loops. */
static bool qconv_packed_fits(const inf__kernel_ctx *ctx, const qconv_geom *g, const qconv_args *q) {
    const qconv_params *p = ctx->node->params;
    return p->packed && q->w->data == p->w_src && q->w->ndim == p->w_ndim &&
           !memcmp(q->w->dims, p->w_dims, (size_t)p->w_ndim * sizeof(int64_t)) && g->nd <= 2 &&
           (!q->xzp || inf_tensor_numel(q->xzp) == 1);
}

static inf_status qconv_run_packed(inf__kernel_ctx *ctx, const qconv_geom *g, const qconv_args *q,
                                   const inf__qout *out, void *y) {
    const qconv_params *p = ctx->node->params;
    bool one_d = g->nd == 1;
    inf__qconv_geom qg = {.n = g->n,
                          .c = g->c,
                          .m = g->m,
                          .group = p->group,
                          .cg = g->cg,
                          .mg = g->mg,
                          .ih = one_d ? 1 : g->in[0],
                          .iw = g->in[g->nd - 1],
                          .oh = one_d ? 1 : g->out[0],
                          .ow = g->out[g->nd - 1],
                          .kh = one_d ? 1 : g->k[0],
                          .kw = g->k[g->nd - 1],
                          .sh = one_d ? 1 : g->s[0],
                          .sw = g->s[g->nd - 1],
                          .dh = one_d ? 1 : g->d[0],
                          .dw = g->d[g->nd - 1],
                          .pt = one_d ? 0 : g->pb[0],
                          .pl = g->pb[g->nd - 1],
                          .cgp = p->cgp,
                          .pkh = p->pool[0],
                          .pkw = p->pool[1],
                          .psh = p->pool[2],
                          .psw = p->pool[3],
                          .dwise = p->has_dw ? &p->dw : NULL,
                          .wino = p->has_wino ? &p->wino : NULL};
    void *scratch = inf__kernel_scratch(ctx, inf__qconv_scratch_bytes(&qg, &p->bg[0]));
    if (!scratch) return INF_ENOMEM;
    inf__qsrc x = {.data = q->x->data, .dtype = q->x->dtype, .zp = zp_at(q->xzp, 0), .nhwc = p->nhwc_in};
    if (q->x->dtype == INF_DTYPE_F32) x.scale = scale_at(q->xs, 0), x.q_dtype = q->xzp ? q->xzp->dtype : INF_DTYPE_U8;
    inf__qconv_drive(ctx->pool, &qg, p->bg, &x, out, y, scratch);
    return INF_OK;
}

/* mult[j] = a_scale * w_scale[j] (/ y_scale when ys) for j < n: scale_at's
 * values, with the scalar-or-vector test made once (it counts elements). */
static void scale_products(const inf_tensor *xs, const inf_tensor *ws, const inf_tensor *ys, int64_t n, float *mult) {
    const float *w = ws->data, x = scale_at(xs, 0);
    bool per_channel = inf_tensor_numel(ws) != 1;
    for (int64_t j = 0; j < n; j++) mult[j] = ys ? x * w[per_channel ? j : 0] / scale_at(ys, 0) : x * w[per_channel ? j : 0];
}

/* Per-channel multipliers a_scale * w_scale[m] (/ y_scale), in scratch. */
static float *qconv_mults(inf__kernel_ctx *ctx, const qconv_geom *g, const qconv_args *q) {
    float *mult = inf__kernel_scratch(ctx, (size_t)g->m * sizeof *mult);
    if (mult) scale_products(q->xs, q->ws, q->ys, g->m, mult);
    return mult;
}

static inf_status conv_integer_run(inf__kernel_ctx *ctx) {
    const qconv_params *p = ctx->node->params;
    qconv_args q = {ctx->in[0], opt_input(ctx, 1), opt_input(ctx, 2), opt_input(ctx, 3), NULL,
                    NULL, NULL, NULL, NULL, NULL};
    inf_status st = check_q8(ctx, "x", q.x);
    if (st == INF_OK) st = check_q8(ctx, "w", q.w);
    if (st == INF_OK) st = check_zero_point(ctx, "x_zero_point", q.xzp, q.x->dtype);
    if (st == INF_OK) st = check_zero_point(ctx, "w_zero_point", q.wzp, q.w->dtype);
    if (st != INF_OK) return st;
    qconv_geom g;
    if ((st = qconv_geometry(ctx, p, q.x, q.w, &g)) != INF_OK) return st;
    if ((st = check_param(ctx, "x_zero_point", q.xzp, 1, "per tensor")) != INF_OK ||
        (st = check_param(ctx, "w_zero_point", q.wzp, g.m, "per output channel")) != INF_OK)
        return st;
    if ((st = qconv_output(ctx, &g, INF_DTYPE_I32, &q.y)) != INF_OK) return st;
    if (qconv_packed_fits(ctx, &g, &q)) {
        inf__qout out = {.kind = INF_QOUT_I32};
        return qconv_run_packed(ctx, &g, &q, &out, q.y->data);
    }
    qconv_compute(&g, &q);
    return INF_OK;
}

const inf__op_impl op_conv_integer = {qconv_init, conv_integer_run};

static inf_status qlinear_conv_run(inf__kernel_ctx *ctx) {
    char buf[96];
    const qconv_params *p = ctx->node->params;
    qconv_args q = {ctx->in[0], opt_input(ctx, 3), opt_input(ctx, 2), opt_input(ctx, 5), opt_input(ctx, 8),
                    opt_input(ctx, 1), opt_input(ctx, 4), opt_input(ctx, 6), opt_input(ctx, 7), NULL};
    inf_status st = check_q8(ctx, "x", q.x);
    if (st == INF_OK) st = check_q8(ctx, "w", q.w);
    if (st == INF_OK) st = check_q8(ctx, "y_zero_point", q.yzp);
    if (st == INF_OK) st = check_zero_point(ctx, "x_zero_point", q.xzp, q.x->dtype);
    if (st == INF_OK) st = check_zero_point(ctx, "w_zero_point", q.wzp, q.w->dtype);
    if (st == INF_OK) st = check_scale(ctx, "x_scale", q.xs);
    if (st == INF_OK) st = check_scale(ctx, "w_scale", q.ws);
    if (st == INF_OK) st = check_scale(ctx, "y_scale", q.ys);
    if (st != INF_OK) return st;
    qconv_geom g;
    if ((st = qconv_geometry(ctx, p, q.x, q.w, &g)) != INF_OK) return st;
    if ((st = check_param(ctx, "x_scale", q.xs, 1, "per tensor")) != INF_OK ||
        (st = check_param(ctx, "x_zero_point", q.xzp, 1, "per tensor")) != INF_OK ||
        (st = check_param(ctx, "w_scale", q.ws, g.m, "per output channel")) != INF_OK ||
        (st = check_param(ctx, "w_zero_point", q.wzp, g.m, "per output channel")) != INF_OK ||
        (st = check_param(ctx, "y_scale", q.ys, 1, "per tensor")) != INF_OK ||
        (st = check_param(ctx, "y_zero_point", q.yzp, 1, "per tensor")) != INF_OK)
        return st;
    if (q.bias && (q.bias->dtype != INF_DTYPE_I32 || q.bias->ndim != 1 || q.bias->dims[0] != g.m))
        return inf__kernel_error(ctx, INF_ESHAPE, "input B: expected int32 [%lld], got %s %s",
                                 (long long)g.m, inf_dtype_name(q.bias->dtype),
                                 inf__shape_str(q.bias->ndim, q.bias->dims, buf, sizeof buf));
    if ((st = qconv_output(ctx, &g, q.yzp->dtype, &q.y)) != INF_OK) return st;
    if (qconv_packed_fits(ctx, &g, &q)) {
        float *mult = qconv_mults(ctx, &g, &q);
        if (!mult) return INF_ENOMEM;
        inf__qout out = {.kind = INF_QOUT_Q8, .mult = mult, .mult_per_col = true,
                         .bias_i32 = q.bias ? q.bias->data : NULL, .y_dtype = q.y->dtype, .y_zp = zp_at(q.yzp, 0)};
        return qconv_run_packed(ctx, &g, &q, &out, q.y->data);
    }
    qconv_compute(&g, &q);
    return INF_OK;
}

const inf__op_impl op_qlinear_conv = {qconv_init, qlinear_conv_run};

/* ======================================================================== */
/*  QGemm, QConv (ai.infera): a QDQ-quantized MatMul/Gemm/Conv, fused        */
/* ======================================================================== */
/*
 * Made by graph/passes/qdq.c from
 *     x -> QuantizeLinear(x_scale, x_zp) -> DequantizeLinear -> MatMul / Gemm / Conv
 *          with W = DequantizeLinear(W_q constant, w_scale, w_zp) and an optional bias
 * as  y = QGemm / QConv(x, x_scale, x_zp, W_q, w_scale, w_zp, bias)   (QGemm attr trans_b)
 * computing y = (float)acc * (x_scale * w_scale[j]) + bias[j], acc the exact
 * integer sum of (q(x) - x_zp) * (W_q - w_zp), q(x) QuantizeLinear's bytes: the
 * QDQ graph's value with the products summed in integers instead of float
 * (they differ only by float rounding).  x float32 [..., K] / [N, C, (H,) W];
 * W packed at load; then the node's fused activation.  W must be constant.
 */

typedef struct qgemm_params {
    bool trans_b;
    bool u8_in, u8_out; /* graph/passes/qdq_chain.c: x / y uint8, quantized with x's / inputs 7, 8's parameters */
    inf__vmath_fn gelu; /* activation "Gelu" (passes/qdq.c): over each output row */
    const void *w_src;
    inf__qgemm_b b;
} qgemm_params;

static inf_status qgemm_init(inf__node *node, inf__arena *arena, inf_error *err) {
    qgemm_params *p = inf__op_params(arena, qgemm_params);
    if (!p) return INF_ENOMEM;
    p->trans_b = inf__attr_int(node, "trans_b", 0) != 0;
    p->u8_in = inf__attr_int(node, "u8_in", 0) != 0;
    p->u8_out = inf__attr_int(node, "u8_out", 0) != 0;
    if (p->u8_out && (node->n_inputs < 8 || node->inputs[7] < 0))
        return inf__node_error(node, err, INF_EMODEL, "u8_out needs y_scale (input 7)");
    const char *act = inf__attr_string(node, "activation", "");
    if (*act && strcmp(act, "Gelu"))
        return inf__node_error(node, err, INF_EMODEL, "unknown activation '%s'", act);
    if (*act) p->gelu = inf__vmath_best()->gelu;
    const inf_tensor *w = inf__node_constant_input(node, 3), *wz = inf__node_constant_input(node, 5);
    if (!w || w->kind != INF_KIND_TENSOR || !is_q8(w->dtype) || w->ndim != 2 || !w->data)
        return inf__node_error(node, err, INF_EMODEL, "W (input 3) must be a constant 2-D uint8/int8 tensor");
    int64_t k = w->dims[p->trans_b ? 1 : 0], n = w->dims[p->trans_b ? 0 : 1];
    if (wz && (wz->dtype != w->dtype || !(inf_tensor_numel(wz) == 1 || inf_tensor_numel(wz) == n)))
        return inf__node_error(node, err, INF_EMODEL, "w_zero_point must be a scalar or [%lld] of W's type",
                               (long long)n);
    if (node->n_inputs > 5 && node->inputs[5] >= 0 && !wz)
        return inf__node_error(node, err, INF_EMODEL, "w_zero_point (input 5) must be constant");
    inf__qgemm_isa isa = inf__qgemm_pack_isa(inf__qgemm_best_isa(), k, n, w->data, w->dtype, w->dims[1], p->trans_b);
    inf_status st = inf__qgemm_pack_b(arena, isa, k, n, w->data, w->dtype, w->dims[1], p->trans_b, wz ? wz->data : NULL,
                                      wz ? inf_tensor_numel(wz) : 1, &p->b);
    if (st != INF_OK) return st;
    p->w_src = w->data;
    node->params = p;
    return INF_OK;
}

/* x_scale, x_zp (per tensor), w_scale (scalar or [n]), bias (float32 [n]) */
static inf_status fused_params_check(inf__kernel_ctx *ctx, int64_t n) {
    const inf_tensor *xs = ctx->in[1], *xz = opt_input(ctx, 2), *ws = ctx->in[4], *bias = opt_input(ctx, 6);
    inf_status st = check_scale(ctx, "x_scale", xs);
    if (st == INF_OK) st = check_scale(ctx, "w_scale", ws);
    if (st == INF_OK) st = check_param(ctx, "x_scale", xs, 1, "per tensor");
    if (st == INF_OK) st = check_param(ctx, "w_scale", ws, n, "per output channel");
    if (st == INF_OK && xz && (!is_q8(xz->dtype) || inf_tensor_numel(xz) != 1))
        return inf__kernel_error(ctx, INF_ETYPE, "x_zero_point: expected one uint8 or int8 value");
    if (st == INF_OK && bias && (bias->dtype != INF_DTYPE_F32 || inf_tensor_numel(bias) != n))
        return inf__kernel_error(ctx, INF_ESHAPE, "bias: expected float32 with %lld values", (long long)n);
    const inf_tensor *ys = opt_input(ctx, 7), *yz = opt_input(ctx, 8);
    if (st == INF_OK && ys) st = check_scale(ctx, "y_scale", ys);
    if (st == INF_OK && ys) st = check_param(ctx, "y_scale", ys, 1, "per tensor");
    if (st == INF_OK && yz && (!is_q8(yz->dtype) || inf_tensor_numel(yz) != 1))
        return inf__kernel_error(ctx, INF_ETYPE, "y_zero_point: expected one uint8 or int8 value");
    return st;
}

/* The store of a fused node: scale, bias, its activation, then the output
 * QuantizeLinear -> DequantizeLinear when it took one (inputs 7, 8). */
static inf__qout fused_out(inf__kernel_ctx *ctx, const float *mult) {
    const inf_tensor *bias = opt_input(ctx, 6), *ys = opt_input(ctx, 7), *yz = opt_input(ctx, 8);
    inf__qout out = {.kind = INF_QOUT_F32, .mult = mult, .mult_per_col = true, .bias_f32 = bias ? bias->data : NULL,
                     .act = ctx->node->epilogue.kind != INF_EPILOGUE_NONE ? &ctx->node->epilogue : NULL};
    if (ys) {
        out.requant = true;
        out.rq_scale = scale_at(ys, 0);
        out.rq_zp = zp_at(yz, 0);
        out.rq_dtype = yz ? yz->dtype : INF_DTYPE_U8;
    }
    return out;
}

static inf_status qgemm_run(inf__kernel_ctx *ctx) {
    const qgemm_params *p = ctx->node->params;
    const inf_tensor *x = ctx->in[0], *w = ctx->in[3];
    char buf[96];
    inf_dtype x_dtype = p->u8_in ? INF_DTYPE_U8 : INF_DTYPE_F32;
    const inf_tensor *xz = opt_input(ctx, 2);
    if (x->dtype != x_dtype || x->ndim < 1 || x->dims[x->ndim - 1] != p->b.k)
        return inf__kernel_error(ctx, INF_ESHAPE, "x: expected %s [..., %lld], got %s %s", inf_dtype_name(x_dtype),
                                 (long long)p->b.k, inf_dtype_name(x->dtype),
                                 inf__shape_str(x->ndim, x->dims, buf, sizeof buf));
    if (p->u8_in && xz && xz->dtype != INF_DTYPE_U8)
        return inf__kernel_error(ctx, INF_ETYPE, "x_zero_point: expected uint8 with a uint8 x (u8_in)");
    if (w->data != p->w_src) return inf__kernel_error(ctx, INF_EINVAL, "W was replaced at run time");
    inf_status st = fused_params_check(ctx, p->b.n);
    if (st != INF_OK) return st;
    int64_t dims[INF_MAX_DIMS], rows = p->b.k ? inf_tensor_numel(x) / p->b.k : 0;
    memcpy(dims, x->dims, sizeof dims);
    dims[x->ndim - 1] = p->b.n;
    inf_tensor *y;
    const inf_tensor *yz = opt_input(ctx, 8);
    if (p->u8_out && yz && yz->dtype != INF_DTYPE_U8)
        return inf__kernel_error(ctx, INF_ETYPE, "y_zero_point: expected uint8 (u8_out)");
    if ((st = inf__kernel_output(ctx, 0, p->u8_out ? INF_DTYPE_U8 : INF_DTYPE_F32, x->ndim, dims, &y)) != INF_OK)
        return st;
    float *mult = inf__kernel_scratch(ctx, (size_t)p->b.n * sizeof *mult);
    void *scratch = mult ? inf__kernel_scratch(ctx, inf__qmatmul_scratch_bytes(&p->b, rows)) : NULL;
    if (!scratch) return INF_ENOMEM;
    scale_products(ctx->in[1], ctx->in[4], NULL, p->b.n, mult);
    inf__qsrc a = {.data = x->data, .dtype = x_dtype, .ld = p->b.k, .scale = scale_at(ctx->in[1], 0),
                   .zp = zp_at(xz, 0), .q_dtype = xz ? xz->dtype : INF_DTYPE_U8};
    inf__qout out = fused_out(ctx, mult);
    out.row_act = p->gelu;
    if (p->u8_out) out.kind = INF_QOUT_F32_U8, out.requant = false;
    inf__qmatmul_drive(ctx->pool, &p->b, rows, &a, &out, y->data, p->b.n, scratch);
    ctx->epilogue_done = true;
    return INF_OK;
}

const inf__op_impl op_qgemm = {qgemm_init, qgemm_run};

static inf_status qconv_fused_init(inf__node *node, inf__arena *arena, inf_error *err) {
    inf_status st = qconv_init(node, arena, err);
    if (st == INF_OK && !((qconv_params *)node->params)->packed)
        return inf__node_error(node, err, INF_EMODEL, "W (input 3) must be a constant 3-D/4-D uint8/int8 tensor");
    return st;
}

/* x of a QConv with nhwc_in: uint8 [n, h, w, c], seen as [n, c, h, w] for
 * the geometry (the driver reads it channels last). */
static inf_status nhwc_view(inf__kernel_ctx *ctx, const inf_tensor *x, inf_tensor *view) {
    const inf_tensor *xz = opt_input(ctx, 2);
    if (x->dtype != INF_DTYPE_U8 || x->ndim != 4 || (xz && xz->dtype != INF_DTYPE_U8))
        return inf__kernel_error(ctx, INF_ETYPE, "x (nhwc_in): expected uint8 [n, h, w, c] with a uint8 zero point, "
                                 "got %s of rank %d", inf_dtype_name(x->dtype), x->ndim);
    *view = *x;
    view->dims[1] = x->dims[3], view->dims[2] = x->dims[1], view->dims[3] = x->dims[2];
    return INF_OK;
}

/* A residual r of another shape than y (rank <= y's, each dim 1 or y's,
 * right-aligned): numpy broadcasting as Add does. */
static inf_status check_broadcast(inf__kernel_ctx *ctx, const inf_tensor *r, const inf_tensor *y) {
    char b1[96], b2[96];
    bool ok = r->ndim <= y->ndim;
    for (int d = 0; ok && d < r->ndim; d++) {
        int64_t rd = r->dims[r->ndim - 1 - d], yd = y->dims[y->ndim - 1 - d];
        ok = rd == yd || rd == 1;
    }
    return ok ? INF_OK
              : inf__kernel_error(ctx, INF_ESHAPE, "residual %s does not broadcast to the output %s",
                                  inf__shape_str(r->ndim, r->dims, b1, sizeof b1),
                                  inf__shape_str(y->ndim, y->dims, b2, sizeof b2));
}

static inline float apply_act(const inf__epilogue *ep, float v) {
    if (!ep) return v;
    switch (ep->kind) {
    case INF_EPILOGUE_RELU: return v > 0 ? v : 0;
    case INF_EPILOGUE_LEAKY_RELU: return v < 0 ? ep->alpha * v : v;
    case INF_EPILOGUE_CLIP: return v < ep->lo ? ep->lo : v > ep->hi ? ep->hi : v;
    default: return v;
    }
}

/* y = act(y + r) with r broadcast (check_broadcast): the unfused Add, then the activation. */
static void add_broadcast(const inf_tensor *r, inf_tensor *y, const inf__epilogue *ep) {
    int64_t rstride[INF_MAX_DIMS] = {0}, idx[INF_MAX_DIMS] = {0}, n = inf_tensor_numel(y), s = 1;
    for (int d = r->ndim - 1; d >= 0; d--) {
        rstride[y->ndim - r->ndim + d] = r->dims[d] == 1 ? 0 : s;
        s *= r->dims[d];
    }
    float *yv = y->data;
    const float *rv = r->data;
    for (int64_t i = 0; i < n; i++) {
        int64_t at = 0;
        for (int d = 0; d < y->ndim; d++) at += idx[d] * rstride[d];
        yv[i] = apply_act(ep, yv[i] + rv[at]);
        for (int d = y->ndim - 1; d >= 0 && ++idx[d] == y->dims[d]; d--) idx[d] = 0;
    }
}

static inf_status qconv_fused_run(inf__kernel_ctx *ctx) {
    const qconv_params *p = ctx->node->params;
    qconv_args q = {ctx->in[0], ctx->in[3], opt_input(ctx, 2), opt_input(ctx, 5), NULL,
                    ctx->in[1], ctx->in[4], NULL, NULL, NULL};
    inf_tensor xview;
    inf_status st = INF_OK;
    if (p->nhwc_in) {
        if ((st = nhwc_view(ctx, q.x, &xview)) != INF_OK) return st;
        q.x = &xview;
    } else if (q.x->dtype != INF_DTYPE_F32) {
        return inf__kernel_error(ctx, INF_ETYPE, "x: expected float32, got %s", inf_dtype_name(q.x->dtype));
    }
    qconv_geom g;
    st = qconv_geometry(ctx, p, q.x, q.w, &g);
    if (st == INF_OK) st = fused_params_check(ctx, g.m);
    if (st != INF_OK) return st;
    if (!qconv_packed_fits(ctx, &g, &q) || ((p->nhwc_in || p->nhwc_out) && g.nd != 2))
        return inf__kernel_error(ctx, INF_EUNSUPPORTED, "only 1-D/2-D convolutions with the W given at load");
    const inf_tensor *res = opt_input(ctx, 9);
    int at8 = res ? 10 : 7; /* the uint8 output's (scale, zero point): after a residual, inputs 10, 11 */
    if (p->pool[0] && (g.nd != 2 || g.out[0] < p->pool[0] || g.out[1] < p->pool[1]))
        return inf__kernel_error(ctx, INF_ESHAPE, "fused MaxPool: the conv output is smaller than its kernel");
    int64_t ph = p->pool[0] ? (g.out[0] - p->pool[0]) / p->pool[2] + 1 : 0;
    int64_t pw = p->pool[0] ? (g.out[1] - p->pool[1]) / p->pool[3] + 1 : 0;
    if (p->nhwc_out) {
        const inf_tensor *ys8 = opt_input(ctx, at8), *yz = opt_input(ctx, at8 + 1);
        if (!ys8 || (yz && yz->dtype != INF_DTYPE_U8))
            return inf__kernel_error(ctx, INF_EMODEL, "nhwc_out needs y_scale and a uint8 y_zero_point (inputs %d, %d)",
                                     at8, at8 + 1);
        if (at8 == 10 && (st = check_scale(ctx, "y_scale (input 10)", ys8)) == INF_OK)
            st = check_param(ctx, "y_scale (input 10)", ys8, 1, "per tensor");
        if (st != INF_OK) return st;
        int64_t dims[4] = {g.n, p->pool[0] ? ph : g.out[0], p->pool[0] ? pw : g.out[1], g.m};
        st = inf__kernel_output(ctx, 0, INF_DTYPE_U8, 4, dims, &q.y);
    } else if (p->pool[0]) {
        int64_t dims[4] = {g.n, g.m, ph, pw};
        st = inf__kernel_output(ctx, 0, INF_DTYPE_F32, 4, dims, &q.y);
    } else {
        st = qconv_output(ctx, &g, INF_DTYPE_F32, &q.y);
    }
    if (st != INF_OK) return st;
    float *mult = qconv_mults(ctx, &g, &q);
    if (!mult) return INF_ENOMEM;
    inf__qout out = fused_out(ctx, mult), pre = out;
    if (p->nhwc_out) out.kind = INF_QOUT_F32_U8, out.requant = false;
    bool broadcast = false;
    if (res && p->nhwc_out) { /* graph/passes/qdq_chain.c: Q(act(value + residual)) with inputs 10, 11 */
        pre.act = NULL, out.pre = &pre;
        out.rq_scale = scale_at(opt_input(ctx, 10), 0), out.rq_zp = zp_at(opt_input(ctx, 11), 0);
        out.rq_dtype = INF_DTYPE_U8;
    }
    if (res && res->dtype == INF_DTYPE_U8) { /* uint8 channels last, worth (q - input 13) * input 12 */
        const inf_tensor *rs = opt_input(ctx, 12), *rz = opt_input(ctx, 13);
        if (!p->nhwc_out || p->pool[0] || !rs || (rz && rz->dtype != INF_DTYPE_U8) || res->ndim != 4 ||
            res->dims[0] != g.n || res->dims[1] != g.out[0] || res->dims[2] != g.out[1] || res->dims[3] != g.m)
            return inf__kernel_error(ctx, INF_EMODEL,
                                     "uint8 residual (input 9): needs a uint8 output, its scale and "
                                     "zero point (inputs 12, 13) and the output's channels-last shape");
        if ((st = check_scale(ctx, "residual scale (input 12)", rs)) == INF_OK)
            st = check_param(ctx, "residual scale (input 12)", rs, 1, "per tensor");
        if (st != INF_OK) return st;
        out.residual_u8 = res->data, out.res_scale = scale_at(rs, 0), out.res_zp = zp_at(rz, 0);
    } else if (res) {
        if (res->dtype != INF_DTYPE_F32 || p->pool[0])
            return inf__kernel_error(ctx, INF_EMODEL, "residual (input 9): float32 or uint8, and no pooled output");
        broadcast = res->ndim != q.y->ndim || memcmp(res->dims, q.y->dims, (size_t)res->ndim * sizeof(int64_t));
        if (broadcast && p->nhwc_out)
            return inf__kernel_error(ctx, INF_EMODEL, "residual (input 9): no broadcast with a uint8 output");
        if (broadcast && (st = check_broadcast(ctx, res, q.y)) != INF_OK) return st;
        if (broadcast) out.act = NULL; /* the Add and the activation after the store */
        else out.residual = res->data;
    }
    st = qconv_run_packed(ctx, &g, &q, &out, q.y->data);
    if (st == INF_OK && broadcast) add_broadcast(res, q.y, ctx->node->epilogue.kind != INF_EPILOGUE_NONE ? &ctx->node->epilogue : NULL);
    ctx->epilogue_done = st == INF_OK;
    return st;
}

const inf__op_impl op_qconv = {qconv_fused_init, qconv_fused_run};
