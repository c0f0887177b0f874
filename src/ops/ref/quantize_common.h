/*
 * quantize_common.h -- helpers shared by the reference quantized ops
 * (quantize.c, quantize_matmul.c, quantize_conv.c, quantize_fused.c):
 * optional inputs, reading 8/16/32-bit integer elements, the rounding and
 * saturating store, and the checks and accessors of scale / zero-point
 * parameters (a scalar, or 1-D per axis / row / column / channel).
 */
#ifndef INF_OPS_REF_QUANTIZE_COMMON_H
#define INF_OPS_REF_QUANTIZE_COMMON_H

#include <math.h>

#include "ops/ops.h"

static inline const inf_tensor *opt_input(const inf__kernel_ctx *ctx, int i) {
    return i < ctx->n_in ? ctx->in[i] : NULL;
}

static inline bool is_q8(inf_dtype t) { return t == INF_DTYPE_U8 || t == INF_DTYPE_I8; }

/* Element i of an int8/uint8/int16/uint16/int32 tensor. */
static inline int32_t q_at(const inf_tensor *t, int64_t i) {
    switch (t->dtype) {
    case INF_DTYPE_U8:
        return ((const uint8_t *)t->data)[i];
    case INF_DTYPE_I8:
        return ((const int8_t *)t->data)[i];
    case INF_DTYPE_U16:
        return ((const uint16_t *)t->data)[i];
    case INF_DTYPE_I16:
        return ((const int16_t *)t->data)[i];
    case INF_DTYPE_I32:
        return ((const int32_t *)t->data)[i];
    default:
        return 0;
    }
}

/* Rounds half to even, adds zp and saturates to dtype's range (8 or
 * 16 bits); stores at i. */
static inline void q_store(inf_tensor *y, int64_t i, float v, int32_t zp) {
    float r = nearbyintf(v) + (float)zp;
    float lo, hi;
    switch (y->dtype) {
    case INF_DTYPE_U8:
        lo = 0.0f, hi = 255.0f;
        break;
    case INF_DTYPE_U16:
        lo = 0.0f, hi = 65535.0f;
        break;
    case INF_DTYPE_I16:
        lo = -32768.0f, hi = 32767.0f;
        break;
    default:
        lo = -128.0f, hi = 127.0f;
        break;
    }
    r = r < lo ? lo : r > hi ? hi : r;
    if (r != r) r = (float)zp; /* NaN */
    switch (y->dtype) {
    case INF_DTYPE_U8:
        ((uint8_t *)y->data)[i] = (uint8_t)r;
        break;
    case INF_DTYPE_U16:
        ((uint16_t *)y->data)[i] = (uint16_t)r;
        break;
    case INF_DTYPE_I16:
        ((int16_t *)y->data)[i] = (int16_t)r;
        break;
    default:
        ((int8_t *)y->data)[i] = (int8_t)r;
        break;
    }
}

/* A quantization parameter: scalar, or 1-D of `len` (per axis / row / column). */
static inline inf_status check_param(inf__kernel_ctx *ctx, const char *name, const inf_tensor *t, int64_t len,
                                     const char *what) {
    char buf[96];
    if (!t) return INF_OK;
    int64_t n = inf_tensor_numel(t);
    if (t->ndim == 0 || (t->ndim == 1 && (n == 1 || n == len))) return INF_OK;
    return inf__kernel_error(ctx, INF_ESHAPE, "input %s: expected a scalar or shape [%lld] (%s), got %s", name,
                             (long long)len, what, inf__shape_str(t->ndim, t->dims, buf, sizeof buf));
}

static inline inf_status check_scale(inf__kernel_ctx *ctx, const char *name, const inf_tensor *t) {
    if (!t) return inf__kernel_error(ctx, INF_EINVAL, "input %s is required", name);
    if (t->dtype != INF_DTYPE_F32)
        return inf__kernel_error(ctx, INF_ETYPE, "input %s: expected float32, got %s", name, inf_dtype_name(t->dtype));
    return INF_OK;
}

static inline inf_status check_zero_point(inf__kernel_ctx *ctx, const char *name, const inf_tensor *t, inf_dtype want) {
    if (t && t->dtype != want)
        return inf__kernel_error(ctx, INF_ETYPE, "input %s: expected %s, got %s", name, inf_dtype_name(want),
                                 inf_dtype_name(t->dtype));
    return INF_OK;
}

/* Index into a scalar-or-vector parameter. */
static inline int64_t param_index(const inf_tensor *t, int64_t i) { return inf_tensor_numel(t) == 1 ? 0 : i; }

static inline float scale_at(const inf_tensor *t, int64_t i) { return ((const float *)t->data)[param_index(t, i)]; }

static inline int32_t zp_at(const inf_tensor *t, int64_t i) { return t ? q_at(t, param_index(t, i)) : 0; }

static inline inf_status check_q8(inf__kernel_ctx *ctx, const char *name, const inf_tensor *t) {
    if (!t) return inf__kernel_error(ctx, INF_EINVAL, "input %s is required", name);
    if (!is_q8(t->dtype))
        return inf__kernel_error(ctx, INF_ETYPE, "input %s: expected uint8 or int8, got %s", name,
                                 inf_dtype_name(t->dtype));
    return INF_OK;
}

#endif
