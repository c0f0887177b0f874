/*
 * grpc_encode.c -- the common ModelInferResponse written straight to bytes:
 * outputs that are plain tensors, sent as typed FP32/FP64/INT32/INT64/
 * UINT32/UINT64 contents or as raw_output_contents (any fixed-size type).
 * Everything else (sequences of maps with their class_labels parameter,
 * BOOL and narrow integers widened, strings) goes through protobuf-c
 * (grpc_codec.c), which this file must match byte for byte: proto3 rules
 * as protobuf-c applies them -- empty strings and empty repeated fields
 * left out, repeated numbers packed, submessages and every repeated bytes
 * element written even when empty, fields in number order.  tests/serve/
 * test_grpc_encode.c and fuzz_grpc_msg compare the two encoders.
 *
 * Why: protobuf-c builds the response as a tree of structs (a calloc per
 * output and per contents) and walks its descriptors twice (size, then
 * pack): 6.4 k instructions of a gRPC call's ~72 k for a one-row fraud
 * answer (callgrind, bench/serve/grpc_floor.sh).  Here: one size pass, one
 * malloc, one write pass.
 */
#include <stdlib.h>
#include <string.h>

#include "serve/serve.h"

/* Typed contents field (InferTensorContents) of a dtype, 0 if not sent
 * as is; *fixed: bytes per element when the field is fixed-width. */
static int contents_field(inf_dtype d, size_t *fixed) {
    *fixed = 0;
    switch (d) {
    case INF_DTYPE_I32:
        return 2;
    case INF_DTYPE_I64:
        return 3;
    case INF_DTYPE_U32:
        return 4;
    case INF_DTYPE_U64:
        return 5;
    case INF_DTYPE_F32:
        *fixed = 4;
        return 6;
    case INF_DTYPE_F64:
        *fixed = 8;
        return 7;
    default:
        return 0;
    }
}

static size_t varint_len(uint64_t v) {
    size_t n = 1;
    while (v >= 0x80)
        v >>= 7, n++;
    return n;
}

/* Writes v at p (when p is not NULL); returns the bytes it takes. */
static size_t put_varint(uint8_t *p, uint64_t v) {
    size_t n = 0;
    for (; v >= 0x80; v >>= 7) {
        if (p) p[n] = (uint8_t)(v | 0x80);
        n++;
    }
    if (p) p[n] = (uint8_t)v;
    return n + 1;
}

/* An element of a varint-packed field, as protobuf-c encodes it (int32 sign-extended). */
static uint64_t element(const inf_tensor *t, size_t i) {
    switch (t->dtype) {
    case INF_DTYPE_I32:
        return (uint64_t)(int64_t)((const int32_t *)t->data)[i];
    case INF_DTYPE_I64:
        return (uint64_t)((const int64_t *)t->data)[i];
    case INF_DTYPE_U32:
        return ((const uint32_t *)t->data)[i];
    default:
        return ((const uint64_t *)t->data)[i];
    }
}

/* A length-delimited field: tag, length, and (when body) the bytes. */
static size_t put_bytes(uint8_t *p, int field, const void *body, size_t n) {
    size_t k = put_varint(p, (uint64_t)field << 3 | 2);
    k += put_varint(p ? p + k : NULL, n);
    if (p && n) memcpy(p + k, body, n);
    return k + n;
}

static size_t put_string(uint8_t *p, int field, const char *s) {
    return s && *s ? put_bytes(p, field, s, strlen(s)) : 0;
}

/* The InferTensorContents of t (typed), or its size when p is NULL. */
static size_t put_contents(uint8_t *p, const inf_tensor *t) {
    size_t fixed, n = (size_t)inf_tensor_numel(t);
    int field = contents_field(t->dtype, &fixed);
    if (n == 0) return 0;
    if (fixed) return put_bytes(p, field, t->data, n * fixed);
    size_t body = 0;
    for (size_t i = 0; i < n; i++)
        body += varint_len(element(t, i));
    size_t k = put_varint(p, (uint64_t)field << 3 | 2);
    k += put_varint(p ? p + k : NULL, body);
    for (size_t i = 0; i < n; i++)
        k += put_varint(p ? p + k : NULL, element(t, i));
    return k;
}

/* One InferOutputTensor (name, datatype, shape, contents unless raw). */
static size_t put_output(uint8_t *p, const char *name, const inf_tensor *t, int raw) {
    size_t k = put_string(p, 1, name);
    k += put_string(p ? p + k : NULL, 2, inf__serve_kserve_dtype(t->dtype));
    if (t->ndim > 0) {
        size_t body = 0;
        for (int d = 0; d < t->ndim; d++)
            body += varint_len((uint64_t)t->dims[d]);
        k += put_varint(p ? p + k : NULL, 3 << 3 | 2);
        k += put_varint(p ? p + k : NULL, body);
        for (int d = 0; d < t->ndim; d++)
            k += put_varint(p ? p + k : NULL, (uint64_t)t->dims[d]);
    }
    if (!raw) {
        size_t c = put_contents(NULL, t);
        k += put_varint(p ? p + k : NULL, 5 << 3 | 2);
        k += put_varint(p ? p + k : NULL, c);
        if (p) put_contents(p + k, t);
        k += c;
    }
    return k;
}

/* The whole response, or its size when p is NULL. */
static size_t put_response(uint8_t *p, const srv_infer_request *req, const inf_model *model, const char *model_name,
                           const char *model_version, inf_tensor *const *outputs, int n, int raw) {
    size_t k = put_string(p, 1, model_name);
    k += put_string(p ? p + k : NULL, 2, model_version);
    k += put_string(p ? p + k : NULL, 3, req->id);
    for (int i = 0; i < n; i++) {
        int idx = req->n_outputs ? req->outputs[i].model_index : i;
        const char *name = inf_model_output(model, idx)->name;
        size_t o = put_output(NULL, name, outputs[idx], raw);
        k += put_varint(p ? p + k : NULL, 5 << 3 | 2);
        k += put_varint(p ? p + k : NULL, o);
        if (p) put_output(p + k, name, outputs[idx], raw);
        k += o;
    }
    for (int i = 0; raw && i < n; i++) {
        const inf_tensor *t = outputs[req->n_outputs ? req->outputs[i].model_index : i];
        k += put_bytes(p ? p + k : NULL, 6, t->data, inf_tensor_nbytes(t));
    }
    return k;
}

int inf__serve_grpc_encode_plain(const srv_infer_request *req, const inf_model *model, const char *model_name,
                                 const char *model_version, inf_tensor *const *outputs, int raw, uint8_t **out,
                                 size_t *out_n) {
    int n = req->n_outputs ? req->n_outputs : inf_model_n_outputs(model);
    for (int i = 0; i < n; i++) {
        const inf_tensor *t = outputs[req->n_outputs ? req->outputs[i].model_index : i];
        size_t fixed;
        if (!t || t->kind != INF_KIND_TENSOR || !inf__serve_kserve_dtype(t->dtype) || t->dtype == INF_DTYPE_STRING ||
            (!raw && !contents_field(t->dtype, &fixed)))
            return 0;
    }
    size_t size = put_response(NULL, req, model, model_name, model_version, outputs, n, raw);
    uint8_t *buf = malloc(size ? size : 1);
    if (!buf) return -1;
    put_response(buf, req, model, model_name, model_version, outputs, n, raw);
    *out = buf;
    *out_n = size;
    return 1;
}
