/*
 * tensor.c -- element types, tensor descriptors and their memory.
 *
 * Owned data comes from inf__aligned_alloc (64-byte aligned, so AVX kernels
 * can load it whole).  A string tensor owns each of its char * elements too.
 * Sequences and maps own their items.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "core/core.h"

/* ---- element types ---- */

size_t inf_dtype_size(inf_dtype dtype) {
    switch (dtype) {
#define INF_DTYPE_SIZE(name, id, size, str) \
    case INF_DTYPE_##name: return size;
        INF_DTYPE_MAP(INF_DTYPE_SIZE)
#undef INF_DTYPE_SIZE
    default: return 0;
    }
}

const char *inf_dtype_name(inf_dtype dtype) {
    switch (dtype) {
#define INF_DTYPE_STR(name, id, size, str) \
    case INF_DTYPE_##name: return str;
        INF_DTYPE_MAP(INF_DTYPE_STR)
#undef INF_DTYPE_STR
    default: return "invalid";
    }
}

/* ONNX element types newer than the ones Infera implements (ONNX 1.23's
 * TensorProto.DataType numbering, from INF_DTYPE_COUNT on). */
const char *inf__onnx_type_name(int onnx_type) {
    static const char *const newer[] = {"float8e4m3fn", "float8e4m3fnuz", "float8e5m2", "float8e5m2fnuz",
                                        "uint4",        "int4",           "float4e2m1", "float8e8m0",
                                        "uint2",        "int2"};
    if (onnx_type >= 0 && onnx_type < INF_DTYPE_COUNT) return inf_dtype_name((inf_dtype)onnx_type);
    int i = onnx_type - INF_DTYPE_COUNT;
    return i >= 0 && i < (int)(sizeof newer / sizeof newer[0]) ? newer[i] : "unknown";
}

/* KServe V2 datatype names (the protocol's "Tensor Data Types"). */
static const struct {
    const char *name;
    inf_dtype dtype;
} kserve_names[] = {
    {"BOOL", INF_DTYPE_BOOL},   {"UINT8", INF_DTYPE_U8},   {"UINT16", INF_DTYPE_U16}, {"UINT32", INF_DTYPE_U32},
    {"UINT64", INF_DTYPE_U64},  {"INT8", INF_DTYPE_I8},    {"INT16", INF_DTYPE_I16},  {"INT32", INF_DTYPE_I32},
    {"INT64", INF_DTYPE_I64},   {"FP16", INF_DTYPE_F16},   {"FP32", INF_DTYPE_F32},   {"FP64", INF_DTYPE_F64},
    {"BYTES", INF_DTYPE_STRING}, {"BF16", INF_DTYPE_BF16},
};
#define N_KSERVE_NAMES (sizeof kserve_names / sizeof kserve_names[0])

const char *inf_dtype_kserve_name(inf_dtype dtype) {
    for (size_t i = 0; i < N_KSERVE_NAMES; i++)
        if (kserve_names[i].dtype == dtype) return kserve_names[i].name;
    return NULL;
}

inf_dtype inf_dtype_from_kserve_name(const char *s, size_t n) {
    for (size_t i = 0; s && i < N_KSERVE_NAMES; i++)
        if (strlen(kserve_names[i].name) == n && !memcmp(kserve_names[i].name, s, n)) return kserve_names[i].dtype;
    return INF_DTYPE_UNDEFINED;
}

inf_dtype inf_dtype_from_name(const char *name) {
    static const struct {
        const char *alias;
        inf_dtype dtype;
    } aliases[] = {{"float", INF_DTYPE_F32}, {"double", INF_DTYPE_F64}, {"half", INF_DTYPE_F16}};
    if (!name) return INF_DTYPE_UNDEFINED;
    for (int d = 1; d < INF_DTYPE_COUNT; d++)
        if (strcasecmp(name, inf_dtype_name((inf_dtype)d)) == 0) return (inf_dtype)d;
    for (size_t i = 0; i < N_KSERVE_NAMES; i++)
        if (strcasecmp(name, kserve_names[i].name) == 0) return kserve_names[i].dtype;
    for (size_t i = 0; i < sizeof aliases / sizeof aliases[0]; i++)
        if (strcasecmp(name, aliases[i].alias) == 0) return aliases[i].dtype;
    return INF_DTYPE_UNDEFINED;
}

/* ---- shapes ---- */

int64_t inf__shape_numel(int ndim, const int64_t *dims) {
    int64_t n = 1;
    bool empty = false;
    for (int i = 0; i < ndim; i++) {
        if (dims[i] < 0) return -1;
        if (dims[i] == 0) {
            empty = true; /* the other dimensions still count: [0, 2^62] is refused */
            continue;
        }
        if (n > INF_SHAPE_MAX_PRODUCT / dims[i]) return -1;
        n *= dims[i];
    }
    return empty ? 0 : n;
}

bool inf__shape_equal(int na, const int64_t *a, int nb, const int64_t *b) {
    if (na != nb) return false;
    for (int i = 0; i < na; i++)
        if (a[i] != b[i]) return false;
    return true;
}

const char *inf__shape_str(int ndim, const int64_t *dims, char *buf, size_t size) {
    size_t off = 0;
    off += (size_t)snprintf(buf + off, size - off, "[");
    for (int i = 0; i < ndim && off < size; i++)
        off += (size_t)snprintf(buf + off, size - off, i ? ",%lld" : "%lld", (long long)dims[i]);
    if (off < size) snprintf(buf + off, size - off, "]");
    return buf;
}

int64_t inf_tensor_numel(const inf_tensor *t) {
    int64_t n = inf__shape_numel(t->ndim, t->dims);
    return n < 0 ? 0 : n;
}

size_t inf_tensor_nbytes(const inf_tensor *t) {
    return (size_t)inf_tensor_numel(t) * inf_dtype_size(t->dtype);
}

void inf__tensor_set_shape(inf_tensor *t, inf_dtype dtype, int ndim, const int64_t *dims) {
    t->dtype = dtype;
    t->ndim = ndim;
    for (int i = 0; i < ndim; i++) t->dims[i] = dims[i];
}

void inf_tensor_init_view(inf_tensor *t, inf_dtype dtype, int ndim, const int64_t *dims,
                          void *data) {
    memset(t, 0, sizeof *t);
    inf__tensor_set_shape(t, dtype, ndim, dims);
    t->data = data;
}

/* ---- allocation ---- */

static inf_status tensor_struct_new(inf_tensor **out) {
    inf_tensor *t = inf__calloc(1, sizeof *t);
    if (!t) return INF_ENOMEM;
    t->flags = INF_TENSOR_OWNS_STRUCT;
    *out = t;
    return INF_OK;
}

inf_status inf_tensor_new(inf_dtype dtype, int ndim, const int64_t *dims, inf_tensor **out) {
    *out = NULL;
    if (inf_dtype_size(dtype) == 0 || ndim < 0 || ndim > INF_MAX_DIMS) return INF_EINVAL;
    int64_t numel = inf__shape_numel(ndim, dims);
    if (numel < 0 || (uint64_t)numel > SIZE_MAX / 16) return INF_EINVAL;
    inf_tensor *t;
    if (tensor_struct_new(&t) != INF_OK) return INF_ENOMEM;
    inf__tensor_set_shape(t, dtype, ndim, dims);
    size_t nbytes = (size_t)numel * inf_dtype_size(dtype);
    t->data = inf__aligned_alloc(nbytes ? nbytes : 1);
    if (!t->data) {
        inf__free(t);
        return INF_ENOMEM;
    }
    memset(t->data, 0, nbytes);
    t->capacity = nbytes;
    t->flags |= INF_TENSOR_OWNS_DATA;
    *out = t;
    return INF_OK;
}

inf_status inf_tensor_new_sequence(inf_dtype elem_dtype, inf_tensor **out) {
    inf_status st = tensor_struct_new(out);
    if (st != INF_OK) return st;
    (*out)->kind = INF_KIND_SEQUENCE;
    (*out)->dtype = elem_dtype;
    (*out)->flags |= INF_TENSOR_OWNS_DATA;
    return INF_OK;
}

inf_status inf_tensor_new_none(inf_tensor **out) {
    inf_status st = tensor_struct_new(out);
    if (st != INF_OK) return st;
    (*out)->kind = INF_KIND_NONE;
    return INF_OK;
}

inf_status inf_tensor_sequence_append(inf_tensor *seq, inf_tensor *item) {
    inf_tensor **items = inf__realloc(seq->items, (size_t)(seq->n_items + 1) * sizeof *items);
    if (!items) {
        inf_tensor_free(item);
        return INF_ENOMEM;
    }
    items[seq->n_items++] = item;
    seq->items = items;
    return INF_OK;
}

void inf__tensor_deinit(inf_tensor *t) {
    if (t->flags & INF_TENSOR_OWNS_DATA) {
        if (t->kind == INF_KIND_TENSOR && t->dtype == INF_DTYPE_STRING && t->data) {
            char **s = t->data;
            int64_t n = inf_tensor_numel(t);
            for (int64_t i = 0; i < n; i++) inf__free(s[i]);
        }
        inf__aligned_free(t->data);
        for (int i = 0; i < t->n_items; i++) inf_tensor_free(t->items[i]);
        inf__free(t->items);
    }
    t->data = NULL;
    t->items = NULL;
    t->n_items = 0;
    t->capacity = 0;
    t->flags &= (uint8_t)~INF_TENSOR_OWNS_DATA;
}

void inf_tensor_free(inf_tensor *t) {
    if (!t) return;
    inf__tensor_deinit(t);
    if (t->flags & INF_TENSOR_OWNS_STRUCT) inf__free(t);
}

inf_status inf_tensor_set_string(inf_tensor *t, int64_t i, const char *s, size_t len) {
    if (t->dtype != INF_DTYPE_STRING || i < 0 || i >= inf_tensor_numel(t)) return INF_EINVAL;
    char *copy = inf__strndup(s, len);
    if (!copy) return INF_ENOMEM;
    char **elems = t->data;
    if (t->flags & INF_TENSOR_OWNS_DATA) inf__free(elems[i]);
    elems[i] = copy;
    return INF_OK;
}

inf_status inf_tensor_clone(const inf_tensor *src, inf_tensor **out) {
    *out = NULL;
    inf_status st;
    if (src->kind == INF_KIND_NONE) return inf_tensor_new_none(out);
    if (src->kind == INF_KIND_SEQUENCE || src->kind == INF_KIND_MAP) {
        inf_tensor *seq;
        if ((st = inf_tensor_new_sequence(src->dtype, &seq)) != INF_OK) return st;
        seq->kind = src->kind;
        for (int i = 0; i < src->n_items; i++) {
            inf_tensor *item;
            if ((st = inf_tensor_clone(src->items[i], &item)) != INF_OK ||
                (st = inf_tensor_sequence_append(seq, item)) != INF_OK) {
                inf_tensor_free(seq);
                return st;
            }
        }
        *out = seq;
        return INF_OK;
    }
    inf_tensor *t;
    if ((st = inf_tensor_new(src->dtype, src->ndim, src->dims, &t)) != INF_OK) return st;
    if (src->dtype == INF_DTYPE_STRING) {
        char *const *s = src->data;
        int64_t n = inf_tensor_numel(src);
        for (int64_t i = 0; i < n; i++) {
            const char *e = s[i] ? s[i] : "";
            if ((st = inf_tensor_set_string(t, i, e, strlen(e))) != INF_OK) {
                inf_tensor_free(t);
                return st;
            }
        }
    } else if (inf_tensor_nbytes(src)) {
        memcpy(t->data, src->data, inf_tensor_nbytes(src));
    }
    *out = t;
    return INF_OK;
}

const char *inf_tensor_describe(const inf_tensor *t, char *buf, size_t size) {
    char shape[160];
    switch (t->kind) {
    case INF_KIND_NONE: snprintf(buf, size, "none"); break;
    case INF_KIND_SEQUENCE:
        snprintf(buf, size, "seq(%s) of %d", inf_dtype_name(t->dtype), t->n_items);
        break;
    case INF_KIND_MAP: snprintf(buf, size, "map"); break;
    default:
        snprintf(buf, size, "%s%s", inf_dtype_name(t->dtype),
                 inf__shape_str(t->ndim, t->dims, shape, sizeof shape));
    }
    return buf;
}

/* ---- half precision ---- */

float inf_f16_to_f32(uint16_t h) {
    uint32_t sign = (uint32_t)(h >> 15) << 31;
    uint32_t exp = (h >> 10) & 0x1f, mant = h & 0x3ff, bits;
    if (exp == 0) {
        if (mant == 0) {
            bits = sign;
        } else { /* subnormal: normalise */
            int e = -1;
            do {
                e++;
                mant <<= 1;
            } while (!(mant & 0x400));
            bits = sign | ((uint32_t)(127 - 15 - e) << 23) | ((mant & 0x3ff) << 13);
        }
    } else if (exp == 31) {
        bits = sign | 0x7f800000u | (mant << 13);
    } else {
        bits = sign | ((exp + 127 - 15) << 23) | (mant << 13);
    }
    float f;
    memcpy(&f, &bits, 4);
    return f;
}

uint16_t inf_f32_to_f16(float f) {
    uint32_t x;
    memcpy(&x, &f, 4);
    uint32_t sign = (x >> 16) & 0x8000;
    uint32_t exp = (x >> 23) & 0xff, mant = x & 0x7fffff;
    if (exp == 0xff) return (uint16_t)(sign | 0x7c00 | (mant ? 0x200 | (mant >> 13) : 0));
    int e = (int)exp - 127 + 15;
    if (e >= 31) return (uint16_t)(sign | 0x7c00);
    if (e <= 0) {
        if (e < -10) return (uint16_t)sign;
        mant |= 0x800000;
        int shift = 14 - e;
        uint32_t half = mant >> shift;
        uint32_t rem = mant & ((1u << shift) - 1), mid = 1u << (shift - 1);
        if (rem > mid || (rem == mid && (half & 1))) half++;
        return (uint16_t)(sign | half);
    }
    uint32_t half = sign | ((uint32_t)e << 10) | (mant >> 13);
    uint32_t rem = mant & 0x1fff;
    if (rem > 0x1000 || (rem == 0x1000 && (half & 1))) half++;
    return (uint16_t)half;
}

float inf_bf16_to_f32(uint16_t h) {
    uint32_t bits = (uint32_t)h << 16;
    float f;
    memcpy(&f, &bits, 4);
    return f;
}

uint16_t inf_f32_to_bf16(float f) {
    uint32_t x;
    memcpy(&x, &f, 4);
    if (isnan(f)) return (uint16_t)((x >> 16) | 0x40);
    x += 0x7fff + ((x >> 16) & 1);
    return (uint16_t)(x >> 16);
}
