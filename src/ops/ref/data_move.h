/*
 * data_move.h -- private helpers of the shape and data-movement kernels
 * (reshape.c, transpose.c, concat_split.c, slice.c, gather.c, expand.c,
 * constant.c).  Not a public header: static functions only, no state.
 *
 * The data-movement ops move elements without looking at them, so one code
 * path serves every dtype: numeric and bool elements are moved as bytes
 * (memcpy of contiguous runs of elem_size bytes); string elements are char *
 * owned by their tensor, so they are copied one by one with
 * inf_tensor_set_string and never shared between tensors.
 *
 * Every check of model or request data returns inf__kernel_error naming the
 * input (or attribute) and what was expected.
 */
#ifndef INF_OPS_REF_DATA_MOVE_H
#define INF_OPS_REF_DATA_MOVE_H

#include <string.h>

#include "ops/ops.h"

/* Input i as a dense tensor; NULL in *out when it is absent and optional.
 * A missing required input, or a sequence/map/none value, is an error. */
static inline inf_status move_input(inf__kernel_ctx *ctx, int i, const char *name, bool required,
                                    const inf_tensor **out) {
    const inf_tensor *t = i < ctx->n_in ? ctx->in[i] : NULL;
    *out = t;
    if (!t) {
        if (!required) return INF_OK;
        return inf__kernel_error(ctx, INF_EINVAL, "input %d (%s) is required but missing", i, name);
    }
    if (t->kind != INF_KIND_TENSOR)
        return inf__kernel_error(ctx, INF_ETYPE, "input %d (%s): expected a tensor, got a %s", i,
                                 name, t->kind == INF_KIND_SEQUENCE ? "sequence"
                                       : t->kind == INF_KIND_MAP    ? "map"
                                                                    : "none value");
    if (inf_dtype_size(t->dtype) == 0)
        return inf__kernel_error(ctx, INF_ETYPE, "input %d (%s) has invalid element type %d", i,
                                 name, (int)t->dtype);
    return INF_OK;
}

/* Reads a 1-D (or scalar) int64 tensor -- int32 too when allow_i32 -- of at
 * most max_n values into vals.  Shape operands of ONNX are int64. */
static inline inf_status move_read_ints(inf__kernel_ctx *ctx, const inf_tensor *t, const char *name,
                                        bool allow_i32, int max_n, int64_t *vals, int *n) {
    *n = 0;
    if (t->dtype != INF_DTYPE_I64 && !(allow_i32 && t->dtype == INF_DTYPE_I32))
        return inf__kernel_error(ctx, INF_ETYPE, "input %s: expected %s, got %s", name,
                                 allow_i32 ? "int32 or int64" : "int64", inf_dtype_name(t->dtype));
    if (t->ndim > 1)
        return inf__kernel_error(ctx, INF_ESHAPE, "input %s: expected a 1-D tensor, got rank %d",
                                 name, t->ndim);
    int64_t count = inf_tensor_numel(t);
    if (count > max_n)
        return inf__kernel_error(ctx, INF_ESHAPE,
                                 "input %s: has %lld values, at most %d are supported", name,
                                 (long long)count, max_n);
    for (int64_t k = 0; k < count; k++)
        vals[k] = t->dtype == INF_DTYPE_I64 ? ((const int64_t *)t->data)[k]
                                            : ((const int32_t *)t->data)[k];
    *n = (int)count;
    return INF_OK;
}

/* Normalises axis (of attribute or input `what`) into [0, rank). */
static inline inf_status move_axis(inf__kernel_ctx *ctx, const char *what, int64_t axis, int rank,
                                   int *out) {
    if (axis < -(int64_t)rank || axis >= (int64_t)rank)
        return inf__kernel_error(ctx, INF_ERANGE,
                                 "%s = %lld is out of range [%d, %d) for a tensor of rank %d", what,
                                 (long long)axis, -rank, rank, rank);
    *out = (int)(axis < 0 ? axis + rank : axis);
    return INF_OK;
}

/* Product of dims[from..to); the caller's shape is valid (no overflow). */
static inline int64_t move_prod(const int64_t *dims, int from, int to) {
    int64_t p = 1;
    for (int k = from; k < to; k++) p *= dims[k];
    return p;
}

/* Copies n elements from src[si..] to dst[di..] (element indices). */
static inline inf_status move_copy(inf__kernel_ctx *ctx, inf_tensor *dst, int64_t di,
                                   const inf_tensor *src, int64_t si, int64_t n) {
    if (n <= 0) return INF_OK;
    if (dst->dtype != INF_DTYPE_STRING) {
        size_t es = inf_dtype_size(dst->dtype);
        memcpy((char *)dst->data + (size_t)di * es, (const char *)src->data + (size_t)si * es,
               (size_t)n * es);
        return INF_OK;
    }
    char *const *s = src->data;
    for (int64_t k = 0; k < n; k++) {
        const char *e = s[si + k] ? s[si + k] : "";
        if (inf_tensor_set_string(dst, di + k, e, strlen(e)) != INF_OK)
            return inf__kernel_error(ctx, INF_ENOMEM, "out of memory copying strings");
    }
    return INF_OK;
}

/* Fills dst[di .. di+n) with copies of element si of src. */
static inline inf_status move_fill(inf__kernel_ctx *ctx, inf_tensor *dst, int64_t di,
                                   const inf_tensor *src, int64_t si, int64_t n) {
    if (n <= 0) return INF_OK;
    if (dst->dtype == INF_DTYPE_STRING) {
        for (int64_t k = 0; k < n; k++) {
            inf_status st = move_copy(ctx, dst, di + k, src, si, 1);
            if (st != INF_OK) return st;
        }
        return INF_OK;
    }
    size_t es = inf_dtype_size(dst->dtype);
    char *d = (char *)dst->data + (size_t)di * es;
    const char *s = (const char *)src->data + (size_t)si * es;
    switch (es) {
    case 1: memset(d, *s, (size_t)n); return INF_OK;
    case 2: {
        uint16_t v;
        memcpy(&v, s, 2);
        for (int64_t k = 0; k < n; k++) ((uint16_t *)d)[k] = v;
        return INF_OK;
    }
    case 4: {
        uint32_t v;
        memcpy(&v, s, 4);
        for (int64_t k = 0; k < n; k++) ((uint32_t *)d)[k] = v;
        return INF_OK;
    }
    case 8: {
        uint64_t v;
        memcpy(&v, s, 8);
        for (int64_t k = 0; k < n; k++) ((uint64_t *)d)[k] = v;
        return INF_OK;
    }
    default:
        /* doubling copies: log2(n) memcpy calls */
        memcpy(d, s, es);
        for (int64_t done = 1; done < n;) {
            int64_t m = done < n - done ? done : n - done;
            memcpy(d + (size_t)done * es, d, (size_t)m * es);
            done += m;
        }
        return INF_OK;
    }
}

#endif /* INF_OPS_REF_DATA_MOVE_H */
