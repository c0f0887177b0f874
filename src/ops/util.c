/*
 * util.c -- helpers shared by kernels (declared at the bottom of ops/ops.h):
 * numpy broadcasting of shapes and strides, element access by index for any
 * numeric or bool tensor, axis normalisation and dtype classes.
 *
 * Callers: every kernel family under ops/ref/.  Nothing here allocates.
 *
 * Element access converts through double (or int64): float16 and bfloat16
 * go through float32, bool reads as 0/1 and is written as v != 0.  Writing a
 * double to an integer type never invokes undefined behaviour: NaN becomes 0,
 * values inside the int64 range are truncated toward zero and then wrapped to
 * the target width (what numpy's astype does on x86), values outside saturate.
 * Strings, complex numbers and non-tensor values read as 0 and ignore writes;
 * kernels check dtypes before they get here.
 */
#include <math.h>
#include <string.h>

#include "ops/ops.h"
#include "ops/vmath.h"

/* ---- shapes ---- */

inf_status inf__broadcast_shape(int na, const int64_t *a, int nb, const int64_t *b, int *nout,
                                int64_t *out) {
    int n = na > nb ? na : nb;
    if (n > INF_MAX_DIMS) return INF_ESHAPE;
    for (int k = 0; k < n; k++) {
        /* align from the right: k counts dimensions from the last one */
        int ia = na - 1 - k, ib = nb - 1 - k;
        int64_t da = ia >= 0 ? a[ia] : 1;
        int64_t db = ib >= 0 ? b[ib] : 1;
        int64_t d;
        if (da == db) d = da;
        else if (da == 1) d = db;
        else if (db == 1) d = da;
        else return INF_ESHAPE;
        out[n - 1 - k] = d;
    }
    *nout = n;
    return INF_OK;
}

void inf__broadcast_strides(int in_ndim, const int64_t *in_dims, int out_ndim,
                            const int64_t *out_dims, int64_t *strides) {
    (void)out_dims; /* a size-1 input dimension reads index 0 whatever the output size */
    int64_t stride = 1;
    int lead = out_ndim - in_ndim;
    for (int k = out_ndim - 1; k >= 0; k--) {
        int ik = k - lead;
        if (ik < 0) {
            strides[k] = 0;
            continue;
        }
        int64_t d = in_dims[ik];
        strides[k] = d == 1 ? 0 : stride;
        stride *= d;
    }
}

/* ---- element access ---- */

double inf__tensor_get_f64(const inf_tensor *t, int64_t i) {
    const void *p = t->data;
    switch (t->dtype) {
    case INF_DTYPE_F32: return ((const float *)p)[i];
    case INF_DTYPE_F64: return ((const double *)p)[i];
    case INF_DTYPE_F16: return inf_f16_to_f32(((const uint16_t *)p)[i]);
    case INF_DTYPE_BF16: return inf_bf16_to_f32(((const uint16_t *)p)[i]);
    case INF_DTYPE_I8: return ((const int8_t *)p)[i];
    case INF_DTYPE_I16: return ((const int16_t *)p)[i];
    case INF_DTYPE_I32: return ((const int32_t *)p)[i];
    case INF_DTYPE_I64: return (double)((const int64_t *)p)[i];
    case INF_DTYPE_U8: return ((const uint8_t *)p)[i];
    case INF_DTYPE_U16: return ((const uint16_t *)p)[i];
    case INF_DTYPE_U32: return ((const uint32_t *)p)[i];
    case INF_DTYPE_U64: return (double)((const uint64_t *)p)[i];
    case INF_DTYPE_BOOL: return ((const uint8_t *)p)[i] ? 1.0 : 0.0;
    default: return 0.0;
    }
}

/* double -> int64 without undefined behaviour (NaN -> 0, saturating). */
static int64_t f64_to_i64(double v) {
    if (isnan(v)) return 0;
    if (v >= 9223372036854775807.0) return INT64_MAX;
    if (v <= -9223372036854775808.0) return INT64_MIN;
    return (int64_t)v;
}

int64_t inf__tensor_get_i64(const inf_tensor *t, int64_t i) {
    const void *p = t->data;
    switch (t->dtype) {
    case INF_DTYPE_I8: return ((const int8_t *)p)[i];
    case INF_DTYPE_I16: return ((const int16_t *)p)[i];
    case INF_DTYPE_I32: return ((const int32_t *)p)[i];
    case INF_DTYPE_I64: return ((const int64_t *)p)[i];
    case INF_DTYPE_U8: return ((const uint8_t *)p)[i];
    case INF_DTYPE_U16: return ((const uint16_t *)p)[i];
    case INF_DTYPE_U32: return ((const uint32_t *)p)[i];
    case INF_DTYPE_U64: return (int64_t)((const uint64_t *)p)[i];
    case INF_DTYPE_BOOL: return ((const uint8_t *)p)[i] ? 1 : 0;
    case INF_DTYPE_F32:
    case INF_DTYPE_F64:
    case INF_DTYPE_F16:
    case INF_DTYPE_BF16: return f64_to_i64(inf__tensor_get_f64(t, i));
    default: return 0;
    }
}

/* double -> uint64: values in [2^63, 2^64) kept exactly, the rest as int64
 * wrapped (so -1.0 becomes UINT64_MAX, as numpy does). */
static uint64_t f64_to_u64(double v) {
    if (isnan(v)) return 0;
    if (v >= 18446744073709551616.0) return UINT64_MAX;
    if (v >= 9223372036854775808.0) return (uint64_t)v;
    return (uint64_t)f64_to_i64(v);
}

void inf__tensor_set_f64(inf_tensor *t, int64_t i, double v) {
    void *p = t->data;
    switch (t->dtype) {
    case INF_DTYPE_F32: ((float *)p)[i] = (float)v; break;
    case INF_DTYPE_F64: ((double *)p)[i] = v; break;
    case INF_DTYPE_F16: ((uint16_t *)p)[i] = inf_f32_to_f16((float)v); break;
    case INF_DTYPE_BF16: ((uint16_t *)p)[i] = inf_f32_to_bf16((float)v); break;
    case INF_DTYPE_I8: ((int8_t *)p)[i] = (int8_t)(uint8_t)f64_to_i64(v); break;
    case INF_DTYPE_I16: ((int16_t *)p)[i] = (int16_t)(uint16_t)f64_to_i64(v); break;
    case INF_DTYPE_I32: ((int32_t *)p)[i] = (int32_t)(uint32_t)f64_to_i64(v); break;
    case INF_DTYPE_I64: ((int64_t *)p)[i] = f64_to_i64(v); break;
    case INF_DTYPE_U8: ((uint8_t *)p)[i] = (uint8_t)f64_to_i64(v); break;
    case INF_DTYPE_U16: ((uint16_t *)p)[i] = (uint16_t)f64_to_i64(v); break;
    case INF_DTYPE_U32: ((uint32_t *)p)[i] = (uint32_t)f64_to_i64(v); break;
    case INF_DTYPE_U64: ((uint64_t *)p)[i] = f64_to_u64(v); break;
    case INF_DTYPE_BOOL: ((uint8_t *)p)[i] = v != 0.0; break; /* NaN != 0: true */
    default: break;
    }
}

/* ---- fused activations (a node's epilogue) ---- */

/* y = y * Sigmoid(y), the bits of the Sigmoid node (the vectorised sigmoid,
 * whose every element is the same instructions wherever it sits: vmath.h)
 * then the Mul node (one float multiply), 256 floats at a time through a
 * stack buffer. */
static void silu_f32(float *y, int64_t n) {
    const inf__vmath *vm = inf__vmath_best();
    float s[256];
    for (int64_t i = 0; i < n; i += 256) {
        int64_t m = n - i < 256 ? n - i : 256;
        vm->sigmoid(y + i, s, m);
        for (int64_t k = 0; k < m; k++) y[i + k] *= s[k];
    }
}

static void epilogue_f32(const inf__epilogue *ep, float *y, int64_t n) {
    switch (ep->kind) {
    case INF_EPILOGUE_RELU:
        for (int64_t i = 0; i < n; i++)
            y[i] = y[i] > 0 ? y[i] : 0;
        break;
    case INF_EPILOGUE_LEAKY_RELU:
        for (int64_t i = 0; i < n; i++)
            y[i] = y[i] < 0 ? ep->alpha * y[i] : y[i];
        break;
    case INF_EPILOGUE_CLIP:
        for (int64_t i = 0; i < n; i++)
            y[i] = y[i] < ep->lo ? ep->lo : y[i] > ep->hi ? ep->hi : y[i];
        break;
    case INF_EPILOGUE_SILU: silu_f32(y, n); break;
    default:
        break;
    }
}

static double epilogue_scalar(const inf__epilogue *ep, double x) {
    switch (ep->kind) {
    case INF_EPILOGUE_RELU:
        return x > 0 ? x : 0; /* as the Relu kernel: NaN -> 0 */
    case INF_EPILOGUE_LEAKY_RELU:
        return x < 0 ? ep->alpha * x : x;
    case INF_EPILOGUE_CLIP:
        return x < ep->lo ? ep->lo : x > ep->hi ? ep->hi : x;
    case INF_EPILOGUE_SILU: /* passes/silu.c fuses float32 only; this keeps the values for any other */
        return x / (1.0 + exp(-x));
    default:
        return x;
    }
}

void inf__epilogue_apply(const inf__epilogue *ep, inf_tensor *t, int64_t begin, int64_t end) {
    if (t->dtype == INF_DTYPE_F32) {
        epilogue_f32(ep, (float *)t->data + begin, end - begin);
        return;
    }
    for (int64_t i = begin; i < end; i++)
        inf__tensor_set_f64(t, i, epilogue_scalar(ep, inf__tensor_get_f64(t, i)));
}

/* ---- axes and dtype classes ---- */

inf_status inf__normalize_axis(inf__kernel_ctx *ctx, int64_t axis, int rank, int *out) {
    if (axis < -(int64_t)rank || axis >= (int64_t)rank) {
        if (!ctx) return INF_EINVAL;
        return inf__kernel_error(ctx, INF_EINVAL, "axis %lld is out of range [%d, %d) for rank %d",
                                 (long long)axis, -rank, rank, rank);
    }
    *out = (int)(axis < 0 ? axis + rank : axis);
    return INF_OK;
}

inf_status inf__check_window_attrs(const inf__node *node, inf_error *err, bool negative_pads) {
    static const struct { const char *name; int64_t min; } window[] = {
        {"kernel_shape", 1}, {"strides", 1}, {"dilations", 1}, {"pads", 0}, {"output_padding", 0}, {"output_shape", 0},
    };
    for (size_t a = 0; a < sizeof window / sizeof window[0]; a++) {
        int n = 0;
        const int64_t *v = inf__attr_ints(node, window[a].name, &n);
        int64_t min = negative_pads && !strcmp(window[a].name, "pads") ? -INF_WINDOW_ATTR_MAX : window[a].min;
        for (int i = 0; i < n; i++)
            if (v[i] < min || v[i] > INF_WINDOW_ATTR_MAX)
                return inf__node_error(node, err, INF_EMODEL, "attribute %s[%d] = %lld, must be in [%lld, %lld]",
                                       window[a].name, i, (long long)v[i], (long long)min,
                                       (long long)INF_WINDOW_ATTR_MAX);
    }
    return INF_OK;
}

bool inf__dtype_is_float(inf_dtype t) {
    return t == INF_DTYPE_F32 || t == INF_DTYPE_F64 || t == INF_DTYPE_F16 || t == INF_DTYPE_BF16;
}

bool inf__dtype_is_int(inf_dtype t) {
    switch (t) {
    case INF_DTYPE_I8:
    case INF_DTYPE_I16:
    case INF_DTYPE_I32:
    case INF_DTYPE_I64:
    case INF_DTYPE_U8:
    case INF_DTYPE_U16:
    case INF_DTYPE_U32:
    case INF_DTYPE_U64: return true;
    default: return false;
    }
}

/* Signed integer types only (int8..int64); floats are not "signed" here. */
bool inf__dtype_is_signed(inf_dtype t) {
    return t == INF_DTYPE_I8 || t == INF_DTYPE_I16 || t == INF_DTYPE_I32 || t == INF_DTYPE_I64;
}
