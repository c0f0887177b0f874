/*
 * cast.c -- Cast (opsets 1-17) and CastLike (opsets 15-17).
 *
 * Cast-1 names the target type with a string attribute `to` ("FLOAT",
 * "INT64"...); Cast-6 and later with the TensorProto.DataType number.
 * CastLike takes the target type from its second input.  Every pair of
 * float16/32/64, bfloat16, int8..int64, uint8..uint64, bool and string is
 * supported (opset 13 semantics: bfloat16 and string included):
 *
 *   float -> integer   truncation toward zero; NaN gives 0 and values out of
 *                      the int64 range saturate, others wrap to the width
 *                      (the spec leaves out-of-range results undefined).
 *   integer -> integer two's complement truncation to the target width.
 *   any -> bool        x != 0 (NaN is true).
 *   float -> float     rounded to nearest even (float64 -> float16 rounds
 *                      through float32), except that the conversion to
 *                      bfloat16 truncates the float32 value, as ONNX's
 *                      reference implementation and test data do up to
 *                      opset 18 (opset 19 specifies rounding).  NaN stays NaN.
 *   number -> string   integers in decimal; bool as "1"/"0"; floats as the
 *                      shortest text that reads back to the same value, in
 *                      numpy's style ("0.5", "1.0", "1e-05"), and "NaN",
 *                      "INF", "-INF".
 *   string -> number   decimal or scientific text, "inf"/"INF"/"+INF",
 *                      "NaN" (any case), surrounding blanks allowed; for
 *                      bool also "true"/"false".  Any other text is an
 *                      error (INF_EINVAL naming the element): the spec
 *                      leaves it undefined.
 *
 * Casting to the input's own type aliases the input.
 */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "ops/ops.h"

typedef struct cast_params {
    inf_dtype to; /* UNDEFINED for CastLike */
} cast_params;

static bool cast_dtype_supported(inf_dtype t) {
    return inf__dtype_is_float(t) || inf__dtype_is_int(t) || t == INF_DTYPE_BOOL ||
           t == INF_DTYPE_STRING;
}

static inf_status cast_init(inf__node *node, inf__arena *arena, inf_error *err) {
    cast_params *p = inf__op_params(arena, cast_params);
    if (!p) return INF_ENOMEM;
    node->params = p;
    p->to = INF_DTYPE_UNDEFINED;
    if (strcmp(node->op_type, "CastLike") == 0) return INF_OK;
    const inf__attr *a = inf__node_attr(node, "to");
    if (!a) return inf__node_error(node, err, INF_EMODEL, "attribute 'to' is missing");
    if (a->type == INF_ATTR_STRING)
        p->to = inf_dtype_from_name(a->s);
    else if (a->type == INF_ATTR_INT && a->i > 0 && a->i < INF_DTYPE_COUNT)
        p->to = (inf_dtype)a->i;
    if (!cast_dtype_supported(p->to)) {
        if (a->type == INF_ATTR_STRING)
            return inf__node_error(node, err, INF_EUNSUPPORTED, "attribute 'to': unsupported type '%s'",
                                   a->s ? a->s : "");
        return inf__node_error(node, err, INF_EUNSUPPORTED,
                               "attribute 'to': element type %s (ONNX type %lld) is not implemented",
                               inf__onnx_type_name((int)(a->i > 0 && a->i < 1000 ? a->i : -1)), (long long)a->i);
    }
    return INF_OK;
}

/* ---- numbers to numbers ---- */

/* Integer (or bool) element i of t, as int64 bits; unsigned keeps its bits. */
static void store_int_bits(inf_tensor *t, int64_t i, uint64_t v) {
    void *d = t->data;
    switch (t->dtype) {
    case INF_DTYPE_I8: ((int8_t *)d)[i] = (int8_t)(uint8_t)v; break;
    case INF_DTYPE_I16: ((int16_t *)d)[i] = (int16_t)(uint16_t)v; break;
    case INF_DTYPE_I32: ((int32_t *)d)[i] = (int32_t)(uint32_t)v; break;
    case INF_DTYPE_I64: ((int64_t *)d)[i] = (int64_t)v; break;
    case INF_DTYPE_U8: ((uint8_t *)d)[i] = (uint8_t)v; break;
    case INF_DTYPE_U16: ((uint16_t *)d)[i] = (uint16_t)v; break;
    case INF_DTYPE_U32: ((uint32_t *)d)[i] = (uint32_t)v; break;
    case INF_DTYPE_U64: ((uint64_t *)d)[i] = v; break;
    case INF_DTYPE_BOOL: ((uint8_t *)d)[i] = v != 0; break;
    default: break;
    }
}

/* Integer -> float without going through double where float32 is the target
 * (one rounding). */
static void store_int_as_float(inf_tensor *y, int64_t i, int64_t v, bool is_unsigned) {
    if (y->dtype == INF_DTYPE_F32) {
        ((float *)y->data)[i] = is_unsigned ? (float)(uint64_t)v : (float)v;
        return;
    }
    double d = is_unsigned ? (double)(uint64_t)v : (double)v;
    inf__tensor_set_f64(y, i, d);
}

/* float32 -> bfloat16 by truncation (ONNX's reference up to opset 18; see
 * the file comment); NaN stays a quiet NaN. */
static uint16_t f32_to_bf16_trunc(float f) {
    uint32_t bits;
    memcpy(&bits, &f, sizeof bits);
    if (isnan(f)) return (uint16_t)((bits >> 16) | 0x0040);
    return (uint16_t)(bits >> 16);
}

static void cast_numeric(const inf_tensor *x, inf_tensor *y, int64_t n) {
    if (y->dtype == INF_DTYPE_BF16) {
        uint16_t *b = y->data;
        for (int64_t i = 0; i < n; i++) {
            float f = inf__dtype_is_float(x->dtype) ? (float)inf__tensor_get_f64(x, i)
                      : inf__dtype_is_signed(x->dtype) ? (float)inf__tensor_get_i64(x, i)
                      : (float)(uint64_t)inf__tensor_get_i64(x, i);
            b[i] = f32_to_bf16_trunc(f);
        }
    } else if (x->dtype == INF_DTYPE_F32 && y->dtype == INF_DTYPE_F64) {
        const float *a = x->data;
        double *b = y->data;
        for (int64_t i = 0; i < n; i++) b[i] = a[i];
    } else if (x->dtype == INF_DTYPE_I32 && y->dtype == INF_DTYPE_F32) {
        /* MatMulInteger's sums in a dynamically quantized model, on every run: a loop that vectorises
         * (the same rounding as through int64: every int32 is exact there) */
        const int32_t *a = x->data;
        float *b = y->data;
        for (int64_t i = 0; i < n; i++) b[i] = (float)a[i];
    } else if (x->dtype == INF_DTYPE_F64 && y->dtype == INF_DTYPE_F32) {
        const double *a = x->data;
        float *b = y->data;
        for (int64_t i = 0; i < n; i++) b[i] = (float)a[i];
    } else if (inf__dtype_is_float(x->dtype)) {
        for (int64_t i = 0; i < n; i++) inf__tensor_set_f64(y, i, inf__tensor_get_f64(x, i));
    } else if (inf__dtype_is_float(y->dtype)) {
        bool u = inf__dtype_is_int(x->dtype) && !inf__dtype_is_signed(x->dtype);
        for (int64_t i = 0; i < n; i++) store_int_as_float(y, i, inf__tensor_get_i64(x, i), u);
    } else {
        for (int64_t i = 0; i < n; i++) store_int_bits(y, i, (uint64_t)inf__tensor_get_i64(x, i));
    }
}

/* ---- numbers to strings ---- */

/* Does text read back as exactly the value v of dtype t? */
static bool float_text_roundtrips(const char *text, inf_dtype t, double v) {
    switch (t) {
    case INF_DTYPE_F32: return strtof(text, NULL) == (float)v;
    case INF_DTYPE_F16: return inf_f16_to_f32(inf_f32_to_f16(strtof(text, NULL))) == (float)v;
    case INF_DTYPE_BF16: return inf_bf16_to_f32(inf_f32_to_bf16(strtof(text, NULL))) == (float)v;
    default: return strtod(text, NULL) == v;
    }
}

/* Shortest round-trip text of v (a value of float dtype t), numpy style. */
static void format_float(double v, inf_dtype t, char *buf, size_t size) {
    if (isnan(v)) {
        snprintf(buf, size, "NaN");
        return;
    }
    if (isinf(v)) {
        snprintf(buf, size, v > 0 ? "INF" : "-INF");
        return;
    }
    int prec = 1;
    char sci[64];
    for (; prec < 17; prec++) {
        snprintf(sci, sizeof sci, "%.*e", prec - 1, v);
        if (float_text_roundtrips(sci, t, v)) break;
    }
    snprintf(sci, sizeof sci, "%.*e", prec - 1, v);
    const char *e = strchr(sci, 'e');
    int exp10 = e ? atoi(e + 1) : 0;
    if (v == 0 || (exp10 >= -4 && exp10 < 16)) {
        int decimals = prec - 1 - exp10;
        snprintf(buf, size, "%.*f", decimals > 0 ? decimals : 0, v);
        if (!strchr(buf, '.') && strlen(buf) + 2 < size) strcat(buf, ".0");
    } else {
        snprintf(buf, size, "%s", sci);
    }
}

static void format_number(const inf_tensor *x, int64_t i, char *buf, size_t size) {
    if (inf__dtype_is_float(x->dtype))
        format_float(inf__tensor_get_f64(x, i), x->dtype, buf, size);
    else if (x->dtype == INF_DTYPE_BOOL)
        snprintf(buf, size, "%d", ((const uint8_t *)x->data)[i] ? 1 : 0);
    else if (inf__dtype_is_signed(x->dtype))
        snprintf(buf, size, "%lld", (long long)inf__tensor_get_i64(x, i));
    else
        snprintf(buf, size, "%llu", (unsigned long long)(uint64_t)inf__tensor_get_i64(x, i));
}

static inf_status cast_to_string(inf__kernel_ctx *ctx, const inf_tensor *x, inf_tensor *y,
                                 int64_t n) {
    char buf[64];
    for (int64_t i = 0; i < n; i++) {
        format_number(x, i, buf, sizeof buf);
        inf_status st = inf_tensor_set_string(y, i, buf, strlen(buf));
        if (st != INF_OK) return inf__kernel_error(ctx, st, "output: cannot store a string");
    }
    return INF_OK;
}

/* ---- strings to numbers ---- */

static bool rest_is_blank(const char *end) {
    while (*end && isspace((unsigned char)*end)) end++;
    return *end == '\0';
}

/* Parses s into element i of y; false if s is not a number of that kind. */
static bool parse_into(const char *s, inf_tensor *y, int64_t i) {
    char *end;
    while (isspace((unsigned char)*s)) s++;
    if (*s == '\0') return false;
    if (y->dtype == INF_DTYPE_BOOL) {
        if (strncasecmp(s, "true", 4) == 0 && rest_is_blank(s + 4)) {
            ((uint8_t *)y->data)[i] = 1;
            return true;
        }
        if (strncasecmp(s, "false", 5) == 0 && rest_is_blank(s + 5)) {
            ((uint8_t *)y->data)[i] = 0;
            return true;
        }
    }
    if (inf__dtype_is_int(y->dtype) || y->dtype == INF_DTYPE_BOOL) {
        errno = 0;
        if (inf__dtype_is_signed(y->dtype) || y->dtype == INF_DTYPE_BOOL) {
            long long v = strtoll(s, &end, 10);
            if (end != s && errno == 0 && rest_is_blank(end)) {
                store_int_bits(y, i, (uint64_t)v);
                return true;
            }
        } else if (*s != '-') {
            unsigned long long v = strtoull(s, &end, 10);
            if (end != s && errno == 0 && rest_is_blank(end)) {
                store_int_bits(y, i, (uint64_t)v);
                return true;
            }
        }
    }
    if (y->dtype == INF_DTYPE_F32 || y->dtype == INF_DTYPE_F16 || y->dtype == INF_DTYPE_BF16) {
        float f = strtof(s, &end);
        if (end == s || !rest_is_blank(end)) return false;
        if (y->dtype == INF_DTYPE_F32) ((float *)y->data)[i] = f;
        else inf__tensor_set_f64(y, i, f);
        return true;
    }
    double d = strtod(s, &end); /* float64, and integers written as "3.0" or "1e3" */
    if (end == s || !rest_is_blank(end)) return false;
    inf__tensor_set_f64(y, i, d);
    return true;
}

static inf_status cast_from_string(inf__kernel_ctx *ctx, const inf_tensor *x, inf_tensor *y,
                                   int64_t n) {
    char *const *s = x->data;
    for (int64_t i = 0; i < n; i++) {
        const char *text = s[i] ? s[i] : "";
        if (!parse_into(text, y, i))
            return inf__kernel_error(ctx, INF_EINVAL, "input element %lld: '%.40s' is not a valid %s",
                                     (long long)i, text, inf_dtype_name(y->dtype));
    }
    return INF_OK;
}

/* ---- run ---- */

static inf_status cast_run(inf__kernel_ctx *ctx) {
    const cast_params *p = ctx->node->params;
    const inf_tensor *x = ctx->n_in > 0 ? ctx->in[0] : NULL;
    if (!x) return inf__kernel_error(ctx, INF_EINVAL, "input is missing");
    inf_dtype to = p->to;
    if (to == INF_DTYPE_UNDEFINED) { /* CastLike */
        const inf_tensor *like = ctx->n_in > 1 ? ctx->in[1] : NULL;
        if (!like) return inf__kernel_error(ctx, INF_EINVAL, "input target_type is missing");
        to = like->dtype;
        if (!cast_dtype_supported(to))
            return inf__kernel_error(ctx, INF_ETYPE, "input target_type: unsupported type %s",
                                     inf_dtype_name(to));
    }
    if (!cast_dtype_supported(x->dtype))
        return inf__kernel_error(ctx, INF_ETYPE, "input: unsupported type %s",
                                 inf_dtype_name(x->dtype));
    inf_tensor *y;
    if (x->dtype == to) return inf__kernel_output_alias(ctx, 0, 0, x->ndim, x->dims, &y);
    inf_status st = inf__kernel_output(ctx, 0, to, x->ndim, x->dims, &y);
    if (st != INF_OK) return st;
    int64_t n = inf_tensor_numel(x);
    if (to == INF_DTYPE_STRING) return cast_to_string(ctx, x, y, n);
    if (x->dtype == INF_DTYPE_STRING) return cast_from_string(ctx, x, y, n);
    cast_numeric(x, y, n);
    return INF_OK;
}

const inf__op_impl op_cast = {cast_init, cast_run};

/* ---- BitCast (opset 26): the same bytes read as another type of the same
 * width (`to`); every implemented type but string, and not to bool (a byte
 * other than 0 or 1 is no bool Infera's kernels expect). ---- */

static inf_status bitcast_init(inf__node *node, inf__arena *arena, inf_error *err) {
    cast_params *p = inf__op_params(arena, cast_params);
    if (!p) return INF_ENOMEM;
    const inf__attr *a = inf__node_attr(node, "to");
    if (!a || a->type != INF_ATTR_INT) return inf__node_error(node, err, INF_EMODEL, "attribute 'to' is missing");
    if (a->i <= 0 || a->i >= INF_DTYPE_COUNT || a->i == INF_DTYPE_STRING || a->i == INF_DTYPE_BOOL)
        return inf__node_error(node, err, INF_EUNSUPPORTED, "attribute 'to': element type %s (ONNX type %lld) is not "
                               "implemented for BitCast", inf__onnx_type_name((int)(a->i > 0 && a->i < 1000 ? a->i : -1)),
                               (long long)a->i);
    p->to = (inf_dtype)a->i;
    node->params = p;
    return INF_OK;
}

static inf_status bitcast_run(inf__kernel_ctx *ctx) {
    const cast_params *p = ctx->node->params;
    const inf_tensor *x = ctx->in[0];
    if (x->dtype == INF_DTYPE_STRING || inf_dtype_size(x->dtype) != inf_dtype_size(p->to))
        return inf__kernel_error(ctx, INF_ETYPE, "input %s and 'to' %s differ in width", inf_dtype_name(x->dtype),
                                 inf_dtype_name(p->to));
    inf_tensor *y;
    inf_status st = inf__kernel_output(ctx, 0, p->to, x->ndim, x->dims, &y);
    if (st != INF_OK) return st;
    memcpy(y->data, x->data, inf_tensor_nbytes(x)); /* x86-64 is little endian, as BitCast specifies */
    return INF_OK;
}

const inf__op_impl op_bitcast = {bitcast_init, bitcast_run};
