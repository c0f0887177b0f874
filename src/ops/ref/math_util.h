/*
 * math_util.h -- private helpers of the "math extras" kernels
 * (unary_more.c, variadic.c, argminmax.c, cumsum.c, einsum.c, misc_math.c).
 * Not a public header: static functions only, no state.
 *
 * Elements are read and written by index through the dtype, the way
 * ops/util.c does (inf__tensor_get_f64 / _i64 / set_f64); this header adds
 * the exact integer write that util.c lacks (wrap-around to the target
 * width), a total order for ranking elements, and the input checks every
 * kernel here repeats.
 */
#ifndef INF_OPS_REF_MATH_UTIL_H
#define INF_OPS_REF_MATH_UTIL_H

#include <math.h>

#include "ops/ops.h"

/* Input i as a dense tensor.  A missing required input or a non-tensor value
 * is an error; *out is NULL for an absent optional input. */
static inline inf_status math_input(inf__kernel_ctx *ctx, int i, const char *name, bool required,
                                    const inf_tensor **out) {
    const inf_tensor *t = i < ctx->n_in ? ctx->in[i] : NULL;
    *out = NULL;
    if (!t || (t->kind == INF_KIND_NONE && !required)) {
        if (!required) return INF_OK;
        return inf__kernel_error(ctx, INF_EINVAL, "input %s is missing", name);
    }
    if (t->kind != INF_KIND_TENSOR)
        return inf__kernel_error(ctx, INF_ETYPE, "input %s: expected a tensor, got a %s", name,
                                 t->kind == INF_KIND_SEQUENCE ? "sequence"
                                 : t->kind == INF_KIND_MAP    ? "map"
                                                              : "none value");
    *out = t;
    return INF_OK;
}

static inline bool math_is_numeric(inf_dtype t) {
    return inf__dtype_is_float(t) || inf__dtype_is_int(t);
}

static inline bool math_is_unsigned(inf_dtype t) {
    return inf__dtype_is_int(t) && !inf__dtype_is_signed(t);
}

/* Writes v to element i of an integer or bool tensor, truncated to the
 * type's width (two's complement wrap-around); float types get (double)v. */
static inline void math_set_i64(inf_tensor *t, int64_t i, int64_t v) {
    void *d = t->data;
    uint64_t u = (uint64_t)v;
    switch (t->dtype) {
    case INF_DTYPE_I8: ((int8_t *)d)[i] = (int8_t)(uint8_t)u; break;
    case INF_DTYPE_I16: ((int16_t *)d)[i] = (int16_t)(uint16_t)u; break;
    case INF_DTYPE_I32: ((int32_t *)d)[i] = (int32_t)(uint32_t)u; break;
    case INF_DTYPE_I64: ((int64_t *)d)[i] = v; break;
    case INF_DTYPE_U8: ((uint8_t *)d)[i] = (uint8_t)u; break;
    case INF_DTYPE_U16: ((uint16_t *)d)[i] = (uint16_t)u; break;
    case INF_DTYPE_U32: ((uint32_t *)d)[i] = (uint32_t)u; break;
    case INF_DTYPE_U64: ((uint64_t *)d)[i] = u; break;
    case INF_DTYPE_BOOL: ((uint8_t *)d)[i] = u != 0; break;
    default: inf__tensor_set_f64(t, i, (double)v); break;
    }
}

/* Three-way comparison of elements a and b of one numeric or bool tensor:
 * <0, 0, >0.  NaN compares greater than every number and equal to NaN (the
 * order numpy's sort uses); 64-bit integers compare exactly. */
static inline int math_cmp(const inf_tensor *t, int64_t a, int64_t b) {
    if (inf__dtype_is_float(t->dtype)) {
        double x = inf__tensor_get_f64(t, a), y = inf__tensor_get_f64(t, b);
        bool nx = isnan(x), ny = isnan(y);
        if (nx || ny) return (int)nx - (int)ny;
        return (x > y) - (x < y);
    }
    int64_t x = inf__tensor_get_i64(t, a), y = inf__tensor_get_i64(t, b);
    if (math_is_unsigned(t->dtype)) {
        uint64_t ux = (uint64_t)x, uy = (uint64_t)y;
        return (ux > uy) - (ux < uy);
    }
    return (x > y) - (x < y);
}

/* Splits shape at axis: outer = prod(dims[0..axis)), n = dims[axis],
 * inner = prod(dims[axis+1..)). */
static inline void math_split_axis(const inf_tensor *t, int axis, int64_t *outer, int64_t *n,
                                   int64_t *inner) {
    *outer = 1;
    *inner = 1;
    for (int k = 0; k < axis; k++) *outer *= t->dims[k];
    for (int k = axis + 1; k < t->ndim; k++) *inner *= t->dims[k];
    *n = t->dims[axis];
}

/* Walks the elements of an input broadcast to an output shape, in the
 * output's row-major order: `off` is the input element under the current
 * output element.  Usage: bcast_init, then bcast_next after each element. */
typedef struct bcast_iter {
    int ndim;
    int64_t off;
    int64_t dims[INF_MAX_DIMS], strides[INF_MAX_DIMS], idx[INF_MAX_DIMS];
} bcast_iter;

/* in_ndim <= out_ndim, and the input shape broadcasts to the output shape. */
static inline void bcast_init(bcast_iter *it, int in_ndim, const int64_t *in_dims, int out_ndim,
                              const int64_t *out_dims) {
    it->ndim = out_ndim;
    it->off = 0;
    inf__broadcast_strides(in_ndim, in_dims, out_ndim, out_dims, it->strides);
    for (int k = 0; k < out_ndim; k++) {
        it->dims[k] = out_dims[k];
        it->idx[k] = 0;
    }
}

static inline void bcast_next(bcast_iter *it) {
    for (int k = it->ndim - 1; k >= 0; k--) {
        it->off += it->strides[k];
        if (++it->idx[k] < it->dims[k]) return;
        it->off -= it->strides[k] * it->dims[k];
        it->idx[k] = 0;
    }
}

#endif /* INF_OPS_REF_MATH_UTIL_H */
