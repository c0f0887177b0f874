/*
 * tensor_proto.c -- ONNX TensorProto <-> inf_tensor, and the .pb tensor files.
 *
 * A TensorProto carries its data either in raw_data (little-endian bytes) or
 * in a typed repeated field chosen by data type (float_data, int32_data for
 * all types of 32 bits or less, int64_data, double_data, uint64_data,
 * string_data), or in an external file beside the model.  Sizes are checked
 * against the shape: a short or long payload is an error, never a read past
 * the end.  External paths must stay inside the model's folder.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "onnx/onnx.h"

static void *pb_alloc(void *ud, size_t size) {
    (void)ud;
    return inf__malloc(size);
}
static void pb_free(void *ud, void *p) {
    (void)ud;
    inf__free(p);
}
ProtobufCAllocator inf__protobuf_allocator = {pb_alloc, pb_free, NULL};

/* Blocks from this size on (a weight's raw_data, which protobuf-c copies
 * in next) are faulted in by one madvise call instead of a page fault per
 * 4 KiB during the copy: a third of the load's page faults.  A hint only;
 * an old kernel (before Linux 5.14) ignores it. */
#define PREFAULT_BYTES ((size_t)256 << 10)

static void *pb_aligned_alloc(void *ud, size_t size) {
    (void)ud;
    void *p = inf__aligned_alloc(size);
    if (p && size >= PREFAULT_BYTES) inf__prefault(p, size);
    return p;
}
static void pb_aligned_free(void *ud, void *p) {
    (void)ud;
    inf__aligned_free(p);
}
ProtobufCAllocator inf__protobuf_aligned_allocator = {pb_aligned_alloc, pb_aligned_free, NULL};

inf_status inf__read_file(const char *path, uint8_t **data, size_t *size, inf_error *err) {
    void *p = NULL;
    inf_status st = inf_file_read(path, "file", 0, &p, size, err); /* regular files only (core/file.c) */
    *data = p;
    return st;
}

/* ---- external data ---- */

/* A decimal offset or length of external data: digits only, no sign, no
 * overflow (atoll took "0x10" as 0 and clamped 2^70). */
static int parse_extent(const char *text, long long *out) {
    if (!*text) return 0;
    long long v = 0;
    for (const char *p = text; *p; p++) {
        if (*p < '0' || *p > '9' || v > (LLONG_MAX - (*p - '0')) / 10) return 0;
        v = v * 10 + (*p - '0');
    }
    *out = v;
    return 1;
}

/* Validates an external-data reference before anything is allocated and
 * opens its file: the location stays inside the model's folder once
 * symlinks are resolved and names a regular file (core/file.c), the length
 * matches the shape, and the file holds offset + nbytes bytes.  On success
 * *fd is open (the caller closes it) and *offset_out set. */
static inf_status open_external(const Onnx__TensorProto *tp, const char *base_dir, const char *what, size_t nbytes,
                                int *fd, long long *offset_out, inf_error *err) {
    const char *location = NULL;
    long long offset = 0, length = -1;
    *fd = -1;
    for (size_t i = 0; i < tp->n_external_data; i++) {
        const Onnx__StringStringEntryProto *kv = tp->external_data[i];
        if (!kv->key || !kv->value) continue;
        if (!strcmp(kv->key, "location")) location = kv->value;
        else if ((!strcmp(kv->key, "offset") && !parse_extent(kv->value, &offset)) ||
                 (!strcmp(kv->key, "length") && !parse_extent(kv->value, &length)))
            return inf_error_set(err, INF_EMODEL, "%s: external data %s '%s' is not a decimal integer in [0, 2^63)", what,
                              kv->key, kv->value);
    }
    if (!location || !*location)
        return inf_error_set(err, INF_EMODEL, "%s: external data without a location", what);
    if (!base_dir)
        return inf_error_set(err, INF_EMODEL, "%s: external data '%s' but the model was not loaded from a file", what, location);
    if (length >= 0 && (uint64_t)length != (uint64_t)nbytes)
        return inf_error_set(err, INF_EMODEL, "%s: external data length %lld does not match the shape (%zu bytes)", what, length, nbytes);
    uint64_t size;
    inf_status st = inf_file_open_within(base_dir, location, "external data", 0, fd, &size, err);
    if (st != INF_OK) {
        inf__error_prefix(err, "%s", what);
        return st;
    }
    if ((uint64_t)offset > size || size - (uint64_t)offset < (uint64_t)nbytes) {
        close(*fd);
        *fd = -1;
        return inf_error_set(err, INF_EIO, "%s: external data '%s' is shorter than offset %lld + %zu bytes", what, location,
                          offset, nbytes);
    }
    *offset_out = offset;
    return INF_OK;
}

static inf_status read_external(const Onnx__TensorProto *tp, const char *base_dir, const char *what,
                                void *dst, size_t nbytes, inf_error *err) {
    int fd;
    long long offset;
    inf_status st = open_external(tp, base_dir, what, nbytes, &fd, &offset, err);
    if (st != INF_OK) return st;
    size_t got = 0;
    while (got < nbytes) {
        ssize_t r = pread(fd, (char *)dst + got, nbytes - got, (off_t)offset + (off_t)got);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) {
            st = inf_error_set(err, INF_EIO, "%s: external data is shorter than offset %lld + %zu bytes", what, offset, nbytes);
            break;
        }
        got += (size_t)r;
    }
    close(fd);
    return st;
}

/* ---- typed fields ---- */

static inf_status typed_count_error(inf_error *err, const char *what, size_t got, int64_t want) {
    return inf_error_set(err, INF_EFORMAT, "%s: %zu values stored but the shape holds %lld", what, got, (long long)want);
}

static inf_status copy_typed(const Onnx__TensorProto *tp, inf_tensor *t, const char *what, inf_error *err) {
    int64_t n = inf_tensor_numel(t);
    void *d = t->data;
    if (n == 0) return INF_OK; /* empty typed fields may be NULL */
    switch (t->dtype) {
    case INF_DTYPE_F32:
        if ((int64_t)tp->n_float_data != n) return typed_count_error(err, what, tp->n_float_data, n);
        memcpy(d, tp->float_data, (size_t)n * 4);
        return INF_OK;
    case INF_DTYPE_C64:
        if ((int64_t)tp->n_float_data != 2 * n) return typed_count_error(err, what, tp->n_float_data, 2 * n);
        memcpy(d, tp->float_data, (size_t)n * 8);
        return INF_OK;
    case INF_DTYPE_F64:
        if ((int64_t)tp->n_double_data != n) return typed_count_error(err, what, tp->n_double_data, n);
        memcpy(d, tp->double_data, (size_t)n * 8);
        return INF_OK;
    case INF_DTYPE_C128:
        if ((int64_t)tp->n_double_data != 2 * n) return typed_count_error(err, what, tp->n_double_data, 2 * n);
        memcpy(d, tp->double_data, (size_t)n * 16);
        return INF_OK;
    case INF_DTYPE_I64:
        if ((int64_t)tp->n_int64_data != n) return typed_count_error(err, what, tp->n_int64_data, n);
        memcpy(d, tp->int64_data, (size_t)n * 8);
        return INF_OK;
    case INF_DTYPE_U32:
    case INF_DTYPE_U64:
        if ((int64_t)tp->n_uint64_data != n) return typed_count_error(err, what, tp->n_uint64_data, n);
        for (int64_t i = 0; i < n; i++) {
            if (t->dtype == INF_DTYPE_U32) ((uint32_t *)d)[i] = (uint32_t)tp->uint64_data[i];
            else ((uint64_t *)d)[i] = tp->uint64_data[i];
        }
        return INF_OK;
    case INF_DTYPE_STRING:
        if ((int64_t)tp->n_string_data != n) return typed_count_error(err, what, tp->n_string_data, n);
        for (int64_t i = 0; i < n; i++) {
            const ProtobufCBinaryData *s = &tp->string_data[i];
            if (inf_tensor_set_string(t, i, (const char *)s->data, s->len) != INF_OK)
                return inf_error_set(err, INF_ENOMEM, "%s: out of memory", what);
        }
        return INF_OK;
    default: /* every type of 32 bits or less travels in int32_data */
        if ((int64_t)tp->n_int32_data != n) return typed_count_error(err, what, tp->n_int32_data, n);
        for (int64_t i = 0; i < n; i++) {
            int32_t v = tp->int32_data[i];
            switch (t->dtype) {
            case INF_DTYPE_I32: ((int32_t *)d)[i] = v; break;
            case INF_DTYPE_I16: ((int16_t *)d)[i] = (int16_t)v; break;
            case INF_DTYPE_U16:
            case INF_DTYPE_F16:
            case INF_DTYPE_BF16: ((uint16_t *)d)[i] = (uint16_t)v; break;
            case INF_DTYPE_I8: ((int8_t *)d)[i] = (int8_t)v; break;
            case INF_DTYPE_U8: ((uint8_t *)d)[i] = (uint8_t)v; break;
            case INF_DTYPE_BOOL: ((uint8_t *)d)[i] = v != 0; break;
            default: return inf_error_set(err, INF_EFORMAT, "%s: data type %d cannot be stored in int32_data", what, t->dtype);
            }
        }
        return INF_OK;
    }
}

/* How many values the payload of tp holds, in the units the shape counts
 * (elements; complex numbers count two floats each in typed fields). */
static inf_status check_payload_size(const Onnx__TensorProto *tp, const char *base_dir, inf_dtype dtype, int64_t numel,
                                     const char *what, inf_error *err) {
    if (tp->has_data_location && tp->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL) {
        if (dtype == INF_DTYPE_STRING) return inf_error_set(err, INF_EUNSUPPORTED, "%s: external string data", what);
        int fd;
        long long offset;
        inf_status st = open_external(tp, base_dir, what, (size_t)numel * inf_dtype_size(dtype), &fd, &offset, err);
        if (st == INF_OK) close(fd);
        return st;
    }
    if (tp->has_raw_data && dtype != INF_DTYPE_STRING) {
        if ((uint64_t)tp->raw_data.len != (uint64_t)numel * inf_dtype_size(dtype))
            return inf_error_set(err, INF_EFORMAT, "%s: raw_data has %zu bytes, the shape needs %llu", what, tp->raw_data.len,
                              (unsigned long long)numel * inf_dtype_size(dtype));
        return INF_OK;
    }
    size_t stored;
    int per = dtype == INF_DTYPE_C64 || dtype == INF_DTYPE_C128 ? 2 : 1;
    switch (dtype) {
    case INF_DTYPE_F32:
    case INF_DTYPE_C64: stored = tp->n_float_data; break;
    case INF_DTYPE_F64:
    case INF_DTYPE_C128: stored = tp->n_double_data; break;
    case INF_DTYPE_I64: stored = tp->n_int64_data; break;
    case INF_DTYPE_U32:
    case INF_DTYPE_U64: stored = tp->n_uint64_data; break;
    case INF_DTYPE_STRING: stored = tp->n_string_data; break;
    default: stored = tp->n_int32_data; break;
    }
    if ((uint64_t)stored != (uint64_t)numel * (uint64_t)per) return typed_count_error(err, what, stored, numel * per);
    return INF_OK;
}

/* A tensor adopting tp's raw_data buffer (allocated by
 * inf__protobuf_aligned_allocator, so 64-byte aligned from
 * inf__aligned_alloc, as inf_tensor_new's data): no copy, no second
 * buffer.  tp loses the buffer.  INF_ENOMEM when the struct cannot be made. */
static inf_status adopt_raw_data(Onnx__TensorProto *tp, inf_dtype dtype, int ndim, const int64_t *dims,
                                 inf_tensor **out) {
    inf_tensor *t;
    inf_status st = inf_tensor_new(dtype, 0, NULL, &t); /* the struct, and one element freed just below */
    if (st != INF_OK) return st;
    inf__aligned_free(t->data);
    inf__tensor_set_shape(t, dtype, ndim, dims);
    t->data = tp->raw_data.data;
    t->capacity = tp->raw_data.len;
    tp->raw_data.data = NULL; /* free_unpacked skips a NULL bytes field */
    tp->raw_data.len = 0;
    tp->has_raw_data = 0;
    *out = t;
    return INF_OK;
}

/* Adopting only pays for buffers worth a page or more. */
#define ADOPT_MIN_BYTES 4096

static inf_status tensor_from_proto(const Onnx__TensorProto *tp, Onnx__TensorProto *take, const char *base_dir,
                                    const char *what, inf_tensor **out, inf_error *err) {
    *out = NULL;
    int dtype = tp->has_data_type ? tp->data_type : 0;
    if (dtype >= INF_DTYPE_COUNT && strcmp(inf__onnx_type_name(dtype), "unknown") != 0)
        return inf_error_set(err, INF_EUNSUPPORTED, "%s: element type %s (ONNX type %d) is not implemented", what,
                          inf__onnx_type_name(dtype), dtype);
    if (dtype <= 0 || dtype >= INF_DTYPE_COUNT)
        return inf_error_set(err, INF_EFORMAT, "%s: unknown tensor data type %d", what, dtype);
    if (tp->n_dims > INF_MAX_DIMS)
        return inf_error_set(err, INF_EUNSUPPORTED, "%s: rank %zu exceeds the supported %d", what, tp->n_dims, INF_MAX_DIMS);
    if (tp->segment)
        return inf_error_set(err, INF_EUNSUPPORTED, "%s: segmented tensors are not supported", what);
    int64_t dims[INF_MAX_DIMS];
    for (size_t i = 0; i < tp->n_dims; i++) {
        if (tp->dims[i] < 0) return inf_error_set(err, INF_EFORMAT, "%s: negative dimension %lld", what, (long long)tp->dims[i]);
        dims[i] = tp->dims[i];
    }
    int64_t numel = inf__shape_numel((int)tp->n_dims, dims);
    if (numel < 0 || (uint64_t)numel > ((uint64_t)1 << 40))
        return inf_error_set(err, INF_EFORMAT, "%s: shape is too large", what);
    inf_status st = check_payload_size(tp, base_dir, (inf_dtype)dtype, numel, what, err);
    if (st != INF_OK) return st; /* before allocating: a header must not make us allocate what the data lacks */
    inf_tensor *t;
    bool external = tp->has_data_location && tp->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL;
    if (take && !external && tp->has_raw_data && dtype != INF_DTYPE_STRING && tp->raw_data.len >= ADOPT_MIN_BYTES &&
        (uint64_t)tp->raw_data.len == (uint64_t)numel * inf_dtype_size((inf_dtype)dtype) &&
        ((uintptr_t)tp->raw_data.data & 63) == 0) {
        st = adopt_raw_data(take, (inf_dtype)dtype, (int)tp->n_dims, dims, out);
        return st == INF_OK ? st : inf_error_set(err, st, "%s: out of memory", what);
    }
    st = inf_tensor_new((inf_dtype)dtype, (int)tp->n_dims, dims, &t);
    if (st != INF_OK) return inf_error_set(err, st, "%s: cannot allocate %lld elements", what, (long long)numel);
    size_t nbytes = inf_tensor_nbytes(t);
    if (tp->has_data_location && tp->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL) {
        if (t->dtype == INF_DTYPE_STRING) st = inf_error_set(err, INF_EUNSUPPORTED, "%s: external string data", what);
        else st = read_external(tp, base_dir, what, t->data, nbytes, err);
    } else if (tp->has_raw_data && t->dtype != INF_DTYPE_STRING) {
        if (tp->raw_data.len != nbytes)
            st = inf_error_set(err, INF_EFORMAT, "%s: raw_data has %zu bytes, the shape %s needs %zu", what,
                            tp->raw_data.len, inf_tensor_describe(t, (char[96]){0}, 96), nbytes);
        else if (nbytes) memcpy(t->data, tp->raw_data.data, nbytes);
    } else {
        st = copy_typed(tp, t, what, err);
    }
    if (st != INF_OK) {
        inf_tensor_free(t);
        return st;
    }
    *out = t;
    return INF_OK;
}

inf_status inf__onnx_tensor_from_proto(const Onnx__TensorProto *tp, const char *base_dir, const char *what,
                                       inf_tensor **out, inf_error *err) {
    return tensor_from_proto(tp, NULL, base_dir, what, out, err);
}

inf_status inf__onnx_tensor_take_proto(Onnx__TensorProto *tp, const char *base_dir, const char *what,
                                       inf_tensor **out, inf_error *err) {
    return tensor_from_proto(tp, tp, base_dir, what, out, err);
}

/* ---- to proto (raw_data for numbers, string_data for strings) ---- */

inf_status inf__onnx_tensor_to_proto(const inf_tensor *t, const char *name, Onnx__TensorProto **out) {
    *out = NULL;
    Onnx__TensorProto *tp = inf__calloc(1, sizeof *tp);
    if (!tp) return INF_ENOMEM;
    onnx__tensor_proto__init(tp);
    tp->has_data_type = 1;
    tp->data_type = t->dtype;
    tp->n_dims = (size_t)t->ndim;
    tp->dims = inf__calloc((size_t)t->ndim + 1, sizeof(int64_t));
    tp->name = name ? inf__strdup(name) : NULL;
    if (!tp->dims || (name && !tp->name)) goto nomem;
    for (int i = 0; i < t->ndim; i++) tp->dims[i] = t->dims[i];
    int64_t n = inf_tensor_numel(t);
    if (t->dtype == INF_DTYPE_STRING) {
        tp->string_data = inf__calloc((size_t)n + 1, sizeof *tp->string_data);
        if (!tp->string_data) goto nomem;
        tp->n_string_data = (size_t)n;
        char *const *s = t->data;
        for (int64_t i = 0; i < n; i++) {
            const char *e = s[i] ? s[i] : "";
            tp->string_data[i].len = strlen(e);
            tp->string_data[i].data = (uint8_t *)inf__strdup(e);
            if (!tp->string_data[i].data) goto nomem;
        }
    } else {
        size_t nbytes = inf_tensor_nbytes(t);
        tp->has_raw_data = 1;
        tp->raw_data.len = nbytes;
        tp->raw_data.data = inf__malloc(nbytes ? nbytes : 1);
        if (!tp->raw_data.data) goto nomem;
        if (nbytes) memcpy(tp->raw_data.data, t->data, nbytes);
    }
    *out = tp;
    return INF_OK;
nomem:
    inf__onnx_tensor_proto_free(tp);
    return INF_ENOMEM;
}

void inf__onnx_tensor_proto_free(Onnx__TensorProto *tp) {
    if (!tp) return;
    for (size_t i = 0; tp->string_data && i < tp->n_string_data; i++) inf__free(tp->string_data[i].data);
    inf__free(tp->string_data);
    inf__free(tp->raw_data.data);
    inf__free(tp->dims);
    inf__free(tp->name);
    inf__free(tp);
}

/* ---- .pb files: TensorProto, SequenceProto, OptionalProto, MapProto ---- */

static inf_status value_from_sequence(const Onnx__SequenceProto *sp, const char *what, inf_tensor **out, inf_error *err);
static inf_status value_from_map(const Onnx__MapProto *mp, const char *what, inf_tensor **out, inf_error *err);

static inf_status value_from_optional(const Onnx__OptionalProto *op, const char *what, inf_tensor **out, inf_error *err) {
    if (op->tensor_value) return inf__onnx_tensor_from_proto(op->tensor_value, NULL, what, out, err);
    if (op->sequence_value) return value_from_sequence(op->sequence_value, what, out, err);
    if (op->map_value) return value_from_map(op->map_value, what, out, err);
    if (op->optional_value) return value_from_optional(op->optional_value, what, out, err);
    if (op->sparse_tensor_value) return inf_error_set(err, INF_EUNSUPPORTED, "%s: sparse tensors are not supported", what);
    if (inf_tensor_new_none(out) != INF_OK) return inf_error_set(err, INF_ENOMEM, "%s: out of memory", what);
    return INF_OK;
}

static inf_status value_from_sequence(const Onnx__SequenceProto *sp, const char *what, inf_tensor **out, inf_error *err) {
    inf_tensor *seq;
    inf_dtype elem = sp->n_tensor_values ? (inf_dtype)sp->tensor_values[0]->data_type : INF_DTYPE_UNDEFINED;
    if (inf_tensor_new_sequence(elem, &seq) != INF_OK) return inf_error_set(err, INF_ENOMEM, "%s: out of memory", what);
    inf_status st = INF_OK;
    for (size_t i = 0; i < sp->n_tensor_values && st == INF_OK; i++) {
        inf_tensor *item;
        st = inf__onnx_tensor_from_proto(sp->tensor_values[i], NULL, what, &item, err);
        if (st == INF_OK) st = inf_tensor_sequence_append(seq, item);
    }
    for (size_t i = 0; i < sp->n_sequence_values && st == INF_OK; i++) {
        inf_tensor *item;
        st = value_from_sequence(sp->sequence_values[i], what, &item, err);
        if (st == INF_OK) st = inf_tensor_sequence_append(seq, item);
    }
    for (size_t i = 0; i < sp->n_map_values && st == INF_OK; i++) {
        inf_tensor *item;
        st = value_from_map(sp->map_values[i], what, &item, err);
        if (st == INF_OK) st = inf_tensor_sequence_append(seq, item);
    }
    for (size_t i = 0; i < sp->n_optional_values && st == INF_OK; i++) {
        inf_tensor *item;
        st = value_from_optional(sp->optional_values[i], what, &item, err);
        if (st == INF_OK) st = inf_tensor_sequence_append(seq, item);
    }
    if (st == INF_OK && sp->n_sparse_tensor_values)
        st = inf_error_set(err, INF_EUNSUPPORTED, "%s: sparse tensors are not supported", what);
    if (st != INF_OK) {
        if (err && err->status != st) inf_error_set(err, st, "%s: %s", what, inf_strerror(st));
        inf_tensor_free(seq);
        return st;
    }
    *out = seq;
    return INF_OK;
}

/* A map's n values: one tensor holding them all, or (as onnx.numpy_helper.from_dict writes them) n
 * one-element tensors of one type, gathered into a 1-D tensor. */
static inf_status map_values_from_sequence(const Onnx__SequenceProto *sp, int64_t n, const char *what, inf_tensor **out,
                                           inf_error *err) {
    size_t count = sp ? sp->n_tensor_values : 0;
    if (count == 1) return inf__onnx_tensor_from_proto(sp->tensor_values[0], NULL, what, out, err);
    if ((int64_t)count != n)
        return inf_error_set(err, INF_EFORMAT, "%s: a map of %lld keys has %zu value tensors (expected one tensor of "
                             "all values, or one per key)", what, (long long)n, count);
    inf_tensor *values = NULL;
    inf_status st = INF_OK;
    for (size_t i = 0; i < count && st == INF_OK; i++) {
        inf_tensor *v;
        if ((st = inf__onnx_tensor_from_proto(sp->tensor_values[i], NULL, what, &v, err)) != INF_OK) break;
        if (!values) st = inf_tensor_new(v->dtype, 1, &n, &values);
        if (st == INF_OK && (inf_tensor_numel(v) != 1 || v->dtype != values->dtype))
            st = inf_error_set(err, INF_EFORMAT, "%s: map value %zu is not one element of type %s", what, i,
                               inf_dtype_name(values->dtype));
        else if (st == INF_OK && v->dtype == INF_DTYPE_STRING) {
            const char *str = ((char *const *)v->data)[0];
            st = inf_tensor_set_string(values, (int64_t)i, str ? str : "", str ? strlen(str) : 0);
        }
        else if (st == INF_OK)
            memcpy((char *)values->data + i * inf_dtype_size(v->dtype), v->data, inf_dtype_size(v->dtype));
        inf_tensor_free(v);
    }
    if (st == INF_OK && !values) st = inf_tensor_new(INF_DTYPE_F32, 1, &n, &values); /* an empty map */
    if (st != INF_OK) {
        inf_tensor_free(values);
        return err && err->status == st ? st : inf_error_set(err, st, "%s: map values: %s", what, inf_strerror(st));
    }
    *out = values;
    return INF_OK;
}

static inf_status value_from_map(const Onnx__MapProto *mp, const char *what, inf_tensor **out, inf_error *err) {
    inf_tensor *map, *keys = NULL, *values = NULL;
    if (inf_tensor_new_sequence(INF_DTYPE_UNDEFINED, &map) != INF_OK) return inf_error_set(err, INF_ENOMEM, "%s: out of memory", what);
    map->kind = INF_KIND_MAP;
    int64_t n = mp->key_type == INF_DTYPE_STRING ? (int64_t)mp->n_string_keys : (int64_t)mp->n_keys;
    inf_status st = inf_tensor_new(mp->key_type == INF_DTYPE_STRING ? INF_DTYPE_STRING : INF_DTYPE_I64, 1, &n, &keys);
    for (int64_t i = 0; st == INF_OK && i < n; i++) {
        if (mp->key_type == INF_DTYPE_STRING) st = inf_tensor_set_string(keys, i, (const char *)mp->string_keys[i].data, mp->string_keys[i].len);
        else ((int64_t *)keys->data)[i] = mp->keys[i];
    }
    if (st == INF_OK) st = map_values_from_sequence(mp->values, n, what, &values, err);
    if (st == INF_OK) {
        st = inf_tensor_sequence_append(map, keys);
        keys = NULL;
        if (st == INF_OK) st = inf_tensor_sequence_append(map, values);
        values = NULL;
    }
    inf_tensor_free(keys);
    inf_tensor_free(values);
    if (st != INF_OK) {
        inf_tensor_free(map);
        return st == INF_ENOMEM ? inf_error_set(err, st, "%s: out of memory", what) : st;
    }
    map->dtype = map->items[1]->dtype;
    *out = map;
    return INF_OK;
}

inf_status inf_tensor_decode_pb(const void *data, size_t size, inf_tensor **out, inf_error *err) {
    *out = NULL;
    Onnx__TensorProto *tp = onnx__tensor_proto__unpack(&inf__protobuf_allocator, size, data);
    if (!tp) return inf_error_set(err, INF_EFORMAT, "not a valid TensorProto (%zu bytes)", size);
    inf_status st = inf__onnx_tensor_from_proto(tp, NULL, "tensor", out, err);
    onnx__tensor_proto__free_unpacked(tp, &inf__protobuf_allocator);
    return st;
}

inf_status inf_tensor_load_pb(const char *path, int kind_hint, inf_tensor **out, inf_error *err) {
    *out = NULL;
    uint8_t *data;
    size_t size;
    inf_status st = inf__read_file(path, &data, &size, err);
    if (st != INF_OK) return st;
    if ((st = inf__onnx_wire_check_value(data, size, kind_hint, path, err)) != INF_OK) { /* protobuf-c recurses */
        inf__free(data);
        return st;
    }
    st = INF_EFORMAT;
    if (kind_hint == INF_KIND_SEQUENCE) {
        Onnx__SequenceProto *sp = onnx__sequence_proto__unpack(&inf__protobuf_allocator, size, data);
        if (sp) {
            st = value_from_sequence(sp, path, out, err);
            onnx__sequence_proto__free_unpacked(sp, &inf__protobuf_allocator);
        }
    } else if (kind_hint == INF_KIND_NONE) {
        Onnx__OptionalProto *op = onnx__optional_proto__unpack(&inf__protobuf_allocator, size, data);
        if (op) {
            st = value_from_optional(op, path, out, err);
            onnx__optional_proto__free_unpacked(op, &inf__protobuf_allocator);
        }
    } else if (kind_hint == INF_KIND_MAP) {
        Onnx__MapProto *mp = onnx__map_proto__unpack(&inf__protobuf_allocator, size, data);
        if (mp) {
            st = value_from_map(mp, path, out, err);
            onnx__map_proto__free_unpacked(mp, &inf__protobuf_allocator);
        }
    } else {
        Onnx__TensorProto *tp = onnx__tensor_proto__unpack(&inf__protobuf_allocator, size, data);
        if (tp) {
            st = inf__onnx_tensor_from_proto(tp, NULL, path, out, err);
            onnx__tensor_proto__free_unpacked(tp, &inf__protobuf_allocator);
        }
    }
    inf__free(data);
    if (st == INF_EFORMAT && !*out && (!err || err->status != INF_EFORMAT))
        inf_error_set(err, INF_EFORMAT, "'%s' is not a valid ONNX protobuf value file", path);
    return st;
}

/* Serialises value into a protobuf message tree; each builder allocates with
 * inf__malloc and is released by free_value_proto. */
static void free_sequence_proto(Onnx__SequenceProto *sp);

static void free_optional_proto(Onnx__OptionalProto *op) {
    if (!op) return;
    inf__onnx_tensor_proto_free(op->tensor_value);
    free_sequence_proto(op->sequence_value);
    inf__free(op);
}

/* A MapProto built by map_to_proto (sequences of maps: ZipMap outputs). */
static void free_map_proto(Onnx__MapProto *mp) {
    if (!mp) return;
    for (size_t i = 0; i < mp->n_string_keys; i++) inf__free(mp->string_keys[i].data);
    inf__free(mp->string_keys);
    inf__free(mp->keys);
    free_sequence_proto(mp->values);
    inf__free(mp);
}

static void free_sequence_proto(Onnx__SequenceProto *sp) {
    if (!sp) return;
    for (size_t i = 0; i < sp->n_map_values; i++) free_map_proto(sp->map_values[i]);
    inf__free(sp->map_values);
    for (size_t i = 0; i < sp->n_tensor_values; i++) inf__onnx_tensor_proto_free(sp->tensor_values[i]);
    for (size_t i = 0; i < sp->n_sequence_values; i++) free_sequence_proto(sp->sequence_values[i]);
    for (size_t i = 0; i < sp->n_optional_values; i++) free_optional_proto(sp->optional_values[i]);
    inf__free(sp->tensor_values);
    inf__free(sp->sequence_values);
    inf__free(sp->optional_values);
    inf__free(sp);
}

static inf_status sequence_to_proto(const inf_tensor *seq, Onnx__SequenceProto **out);

/* A map value (items[0] int64 or string keys, items[1] values) as a MapProto
 * whose values are a SequenceProto holding one tensor, the form the reader
 * above (value_from_map) accepts. */
static inf_status map_to_proto(const inf_tensor *map, Onnx__MapProto **out) {
    Onnx__MapProto *mp = inf__calloc(1, sizeof *mp);
    if (!mp) return INF_ENOMEM;
    onnx__map_proto__init(mp);
    *out = mp;
    if (map->n_items != 2) return INF_EUNSUPPORTED;
    const inf_tensor *keys = map->items[0];
    size_t n = (size_t)inf_tensor_numel(keys);
    mp->has_key_type = 1;
    mp->key_type = keys->dtype;
    if (keys->dtype == INF_DTYPE_STRING) {
        mp->string_keys = inf__calloc(n + 1, sizeof *mp->string_keys);
        if (!mp->string_keys) return INF_ENOMEM;
        for (size_t i = 0; i < n; i++) {
            const char *k = ((char *const *)keys->data)[i];
            mp->string_keys[i].data = (uint8_t *)inf__strdup(k ? k : "");
            if (!mp->string_keys[i].data) return INF_ENOMEM;
            mp->string_keys[i].len = strlen((const char *)mp->string_keys[i].data);
            mp->n_string_keys = i + 1;
        }
    } else if (keys->dtype == INF_DTYPE_I64) {
        mp->keys = inf__calloc(n + 1, sizeof *mp->keys);
        if (!mp->keys) return INF_ENOMEM;
        if (n) memcpy(mp->keys, keys->data, n * sizeof *mp->keys);
        mp->n_keys = n;
    } else {
        return INF_EUNSUPPORTED;
    }
    inf_tensor one = {.dtype = map->items[1]->dtype, .kind = INF_KIND_SEQUENCE, .n_items = 1};
    inf_tensor *items[1] = {map->items[1]};
    one.items = items;
    return sequence_to_proto(&one, &mp->values);
}

static inf_status sequence_to_proto(const inf_tensor *seq, Onnx__SequenceProto **out) {
    Onnx__SequenceProto *sp = inf__calloc(1, sizeof *sp);
    if (!sp) return INF_ENOMEM;
    onnx__sequence_proto__init(sp);
    *out = sp;
    sp->has_elem_type = 1;
    sp->elem_type = 1;
    size_t n = (size_t)seq->n_items;
    if (n && seq->items[0]->kind == INF_KIND_SEQUENCE) {
        sp->elem_type = 3;
        sp->sequence_values = inf__calloc(n, sizeof *sp->sequence_values);
        if (!sp->sequence_values) return INF_ENOMEM;
        for (size_t i = 0; i < n; i++) {
            inf_status st = sequence_to_proto(seq->items[i], &sp->sequence_values[i]);
            sp->n_sequence_values = i + 1;
            if (st != INF_OK) return st;
        }
        return INF_OK;
    }
    if (n && seq->items[0]->kind == INF_KIND_MAP) { /* sequence of maps (ZipMap) */
        sp->elem_type = 4;
        sp->map_values = inf__calloc(n, sizeof *sp->map_values);
        if (!sp->map_values) return INF_ENOMEM;
        for (size_t i = 0; i < n; i++) {
            if (seq->items[i]->kind != INF_KIND_MAP) return INF_EUNSUPPORTED;
            inf_status st = map_to_proto(seq->items[i], &sp->map_values[i]);
            sp->n_map_values = i + 1;
            if (st != INF_OK) return st;
        }
        return INF_OK;
    }
    sp->tensor_values = inf__calloc(n + 1, sizeof *sp->tensor_values);
    if (!sp->tensor_values) return INF_ENOMEM;
    for (size_t i = 0; i < n; i++) {
        if (seq->items[i]->kind != INF_KIND_TENSOR) return INF_EUNSUPPORTED;
        inf_status st = inf__onnx_tensor_to_proto(seq->items[i], NULL, &sp->tensor_values[i]);
        if (st != INF_OK) return st;
        sp->n_tensor_values = i + 1;
    }
    return INF_OK;
}

static inf_status write_packed(const char *path, const ProtobufCMessage *msg, inf_error *err) {
    size_t size = protobuf_c_message_get_packed_size(msg);
    uint8_t *buf = inf__malloc(size ? size : 1);
    if (!buf) return inf_error_set(err, INF_ENOMEM, "out of memory writing '%s'", path);
    protobuf_c_message_pack(msg, buf);
    FILE *f = fopen(path, "wb");
    inf_status st = INF_OK;
    if (!f || fwrite(buf, 1, size, f) != size) st = inf_error_set(err, INF_EIO, "cannot write '%s': %s", path, strerror(errno));
    if (f && fclose(f) != 0 && st == INF_OK) st = inf_error_set(err, INF_EIO, "cannot write '%s': %s", path, strerror(errno));
    inf__free(buf);
    return st;
}

inf_status inf_tensor_save_pb(const char *path, const char *name, const inf_tensor *t, int as_optional,
                              inf_error *err) {
    inf_status st;
    if (as_optional) {
        Onnx__OptionalProto *op = inf__calloc(1, sizeof *op);
        if (!op) return inf_error_set(err, INF_ENOMEM, "out of memory writing '%s'", path);
        onnx__optional_proto__init(op);
        op->name = (char *)name;
        op->has_elem_type = 1;
        if (t->kind == INF_KIND_NONE) {
            op->elem_type = 0;
            st = INF_OK;
        } else if (t->kind == INF_KIND_SEQUENCE) {
            op->elem_type = 3;
            st = sequence_to_proto(t, &op->sequence_value);
        } else {
            op->elem_type = 1;
            st = inf__onnx_tensor_to_proto(t, NULL, &op->tensor_value);
        }
        if (st == INF_OK) st = write_packed(path, &op->base, err);
        else inf_error_set(err, st, "cannot encode optional value for '%s'", path);
        op->name = NULL;
        free_optional_proto(op);
        return st;
    }
    if (t->kind == INF_KIND_SEQUENCE) {
        Onnx__SequenceProto *sp = NULL;
        st = sequence_to_proto(t, &sp);
        if (st == INF_OK) {
            sp->name = (char *)name;
            st = write_packed(path, &sp->base, err);
            sp->name = NULL;
        } else {
            inf_error_set(err, st, "cannot encode sequence for '%s'", path);
        }
        free_sequence_proto(sp);
        return st;
    }
    if (t->kind != INF_KIND_TENSOR)
        return inf_error_set(err, INF_EUNSUPPORTED, "cannot write a %s value to '%s'", t->kind == INF_KIND_MAP ? "map" : "empty", path);
    Onnx__TensorProto *tp;
    if ((st = inf__onnx_tensor_to_proto(t, name, &tp)) != INF_OK) return inf_error_set(err, st, "cannot encode tensor for '%s'", path);
    st = write_packed(path, &tp->base, err);
    inf__onnx_tensor_proto_free(tp);
    return st;
}
