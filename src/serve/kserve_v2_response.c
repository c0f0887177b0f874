/*
 * kserve_v2_response.c -- the KServe V2 / Open Inference Protocol codec's
 * response side: inference responses out (shared/reference/kserve-v2.md
 * §2.3); requests are decoded by kserve_v2.c.
 *
 * ENCODING.  Outputs (all, or the requested ones in request order) are
 * written as JSON data arrays, or as binary blobs when asked for per output
 * ("binary_data") or per request ("binary_data_output"); a BYTES output
 * that is not UTF-8 can only be binary.  A sequence of
 * maps (ZipMap, as skl2onnx classifiers end) is sent as one [N, n_classes]
 * tensor of the maps' values with its keys in parameters.class_labels
 * (section "sequences of maps" below).
 */
#include <stdint.h>
#include <string.h>

#include "serve/serve.h"

/* ---- response ----------------------------------------------------------------- */

/* Appends the n elements of t as JSON values, comma-separated, without
 * brackets; with continuing, a comma first (the list goes on from before). */
static void write_elems(srv_buf *b, const inf_tensor *t, int continuing) {
    int64_t n = inf_tensor_numel(t);
    inf__serve_buf_reserve(b, (size_t)n * 4 + 2);
    for (int64_t i = 0; i < n; i++) {
        if (i || continuing) inf__serve_buf_put(b, ",", 1);
        const void *d = t->data;
        switch (t->dtype) {
        case INF_DTYPE_F32:
            inf__serve_buf_f32(b, ((const float *)d)[i]);
            break;
        case INF_DTYPE_F64:
            inf__serve_buf_f64(b, ((const double *)d)[i]);
            break;
        case INF_DTYPE_F16:
            inf__serve_buf_f32(b, inf_f16_to_f32(((const uint16_t *)d)[i]));
            break;
        case INF_DTYPE_BF16:
            inf__serve_buf_f32(b, inf_bf16_to_f32(((const uint16_t *)d)[i]));
            break;
        case INF_DTYPE_BOOL:
            inf__serve_buf_puts(b, ((const uint8_t *)d)[i] ? "true" : "false");
            break;
        case INF_DTYPE_I8:
            inf__serve_buf_i64(b, ((const int8_t *)d)[i]);
            break;
        case INF_DTYPE_U8:
            inf__serve_buf_i64(b, ((const uint8_t *)d)[i]);
            break;
        case INF_DTYPE_I16:
            inf__serve_buf_i64(b, ((const int16_t *)d)[i]);
            break;
        case INF_DTYPE_U16:
            inf__serve_buf_i64(b, ((const uint16_t *)d)[i]);
            break;
        case INF_DTYPE_I32:
            inf__serve_buf_i64(b, ((const int32_t *)d)[i]);
            break;
        case INF_DTYPE_U32:
            inf__serve_buf_i64(b, ((const uint32_t *)d)[i]);
            break;
        case INF_DTYPE_I64:
            inf__serve_buf_i64(b, ((const int64_t *)d)[i]);
            break;
        case INF_DTYPE_U64:
            inf__serve_buf_u64(b, ((const uint64_t *)d)[i]);
            break;
        case INF_DTYPE_STRING: {
            const char *s = ((char *const *)d)[i];
            if (!s) s = "";
            inf__serve_buf_json_str(b, s, strlen(s));
            break;
        }
        default:
            inf__serve_buf_put(b, "null", 4);
        }
    }
}

static void write_data(srv_buf *b, const inf_tensor *t) {
    inf__serve_buf_put(b, "[", 1);
    write_elems(b, t, 0);
    inf__serve_buf_put(b, "]", 1);
}

static size_t write_binary(srv_buf *bin, const inf_tensor *t) {
    size_t before = bin->n;
    if (t->dtype == INF_DTYPE_STRING) {
        int64_t n = inf_tensor_numel(t);
        for (int64_t i = 0; i < n; i++) {
            const char *s = ((char *const *)t->data)[i];
            if (!s) s = "";
            uint32_t len = (uint32_t)strlen(s);
            uint8_t le[4] = {(uint8_t)len, (uint8_t)(len >> 8), (uint8_t)(len >> 16), (uint8_t)(len >> 24)};
            inf__serve_buf_put(bin, le, 4);
            inf__serve_buf_put(bin, s, len);
        }
    } else {
        inf__serve_buf_put(bin, t->data, inf_tensor_nbytes(t));
    }
    return bin->n - before;
}

/* ---- sequences of maps (ZipMap) as one tensor ------------------------------------
 *
 * skl2onnx classifiers return their probabilities as a sequence of maps
 * {class label -> probability}, one map per row, every map with the class
 * labels in the same order.  KServe V2 has no map type, and KServe's own
 * scikit-learn server, MLServer's sklearn runtime and (after converting with
 * zipmap=False) Triton all answer predict_proba as a plain [N, n_classes]
 * tensor, so that is what such an output becomes here: the maps' values, row
 * by row, in key order, with the keys in the output's parameters as
 * "class_labels" (docs/serving.md, "Classifier outputs"). */

static int map_fail(inf_error *err, const char *name, int row, const char *why) {
    inf_error_set(err, INF_EUNSUPPORTED,
                  "output '%s' (a sequence of maps) cannot be sent as one tensor: map %d %s; request other outputs",
                  name, row, why);
    return -1;
}

/* 1 when a and b hold the same keys in the same order. */
static int same_key_tensor(const inf_tensor *a, const inf_tensor *b) {
    if (a->dtype != b->dtype || inf_tensor_numel(a) != inf_tensor_numel(b)) return 0;
    if (a->dtype != INF_DTYPE_STRING) return !memcmp(a->data, b->data, inf_tensor_nbytes(a));
    for (int64_t j = 0; j < inf_tensor_numel(a); j++) {
        const char *x = ((char *const *)a->data)[j], *y = ((char *const *)b->data)[j];
        if (strcmp(x ? x : "", y ? y : "")) return 0;
    }
    return 1;
}

static int integer_dtype(inf_dtype d) {
    return d == INF_DTYPE_I8 || d == INF_DTYPE_I16 || d == INF_DTYPE_I32 || d == INF_DTYPE_I64 || d == INF_DTYPE_U8 ||
           d == INF_DTYPE_U16 || d == INF_DTYPE_U32 || d == INF_DTYPE_U64;
}

int inf__serve_map_seq(const inf_tensor *t, const char *name, srv_map_seq *ms, inf_error *err) {
    if (!t || t->kind != INF_KIND_SEQUENCE) return 0;
    for (int r = 0; r < t->n_items; r++)
        if (!t->items[r] || t->items[r]->kind != INF_KIND_MAP) return 0;
    memset(ms, 0, sizeof *ms);
    ms->rows = t->n_items;
    ms->dtype = inf__serve_kserve_dtype(t->dtype) ? t->dtype : INF_DTYPE_F32;
    for (int r = 0; r < t->n_items; r++) {
        const inf_tensor *m = t->items[r];
        const inf_tensor *k = m->n_items == 2 ? m->items[0] : NULL, *v = m->n_items == 2 ? m->items[1] : NULL;
        if (!k || !v || k->kind != INF_KIND_TENSOR || v->kind != INF_KIND_TENSOR)
            return map_fail(err, name, r, "is not a map of key and value tensors");
        if (k->dtype != INF_DTYPE_STRING && !integer_dtype(k->dtype))
            return map_fail(err, name, r, "has keys that are neither strings nor integers");
        if (inf_tensor_numel(k) != inf_tensor_numel(v)) return map_fail(err, name, r, "has more keys than values");
        if (!inf__serve_kserve_dtype(v->dtype) || v->dtype == INF_DTYPE_F16 || v->dtype == INF_DTYPE_BF16)
            return map_fail(err, name, r, "has values of a type KServe cannot express");
        if (r == 0) {
            ms->keys = k;
            ms->dtype = v->dtype;
            ms->n_classes = inf_tensor_numel(k);
        } else if (!same_key_tensor(ms->keys, k)) {
            return map_fail(err, name, r, "has other keys than map 0");
        } else if (v->dtype != ms->dtype) {
            return map_fail(err, name, r, "has values of another type than map 0");
        }
    }
    return 1;
}

void inf__serve_map_seq_labels(srv_buf *b, const srv_map_seq *ms) {
    if (ms->keys)
        write_data(b, ms->keys);
    else
        inf__serve_buf_puts(b, "[]");
}

/* ---- response body ------------------------------------------------------------- */

/* Writes {"name","datatype","shape"[,"parameters"][,"data"]} of one output:
 * t (a tensor, or a sequence of maps described by ms when is_map). */
static void encode_output(srv_buf *json, srv_buf *bin, const char *name, const inf_tensor *t, const srv_map_seq *ms,
                          int is_map, int binary) {
    inf__serve_buf_puts(json, "{\"name\":");
    inf__serve_buf_json_str(json, name, strlen(name));
    inf__serve_buf_puts(json, ",\"datatype\":\"");
    inf__serve_buf_puts(json, inf__serve_kserve_dtype(is_map ? ms->dtype : t->dtype));
    inf__serve_buf_puts(json, "\",\"shape\":[");
    if (is_map) {
        inf__serve_buf_i64(json, ms->rows);
        inf__serve_buf_put(json, ",", 1);
        inf__serve_buf_i64(json, ms->n_classes);
    }
    for (int d = 0; !is_map && d < t->ndim; d++) {
        if (d) inf__serve_buf_put(json, ",", 1);
        inf__serve_buf_i64(json, t->dims[d]);
    }
    inf__serve_buf_put(json, "]", 1);
    if (is_map || binary) inf__serve_buf_puts(json, ",\"parameters\":{");
    if (is_map) {
        srv_buf labels = {0};
        inf__serve_map_seq_labels(&labels, ms);
        inf__serve_buf_puts(json, "\"class_labels\":");
        inf__serve_buf_json_str(json, labels.p ? labels.p : "[]", labels.n);
        if (labels.oom) json->oom = 1;
        inf__serve_buf_free(&labels);
        if (binary) inf__serve_buf_put(json, ",", 1);
    }
    if (binary) {
        size_t sz = 0;
        for (int r = 0; is_map && r < t->n_items; r++)
            sz += write_binary(bin, t->items[r]->items[1]);
        if (!is_map) sz = write_binary(bin, t);
        inf__serve_buf_puts(json, "\"binary_data_size\":");
        inf__serve_buf_u64(json, sz);
    }
    if (is_map || binary) inf__serve_buf_put(json, "}", 1);
    if (!binary) {
        inf__serve_buf_puts(json, ",\"data\":");
        if (is_map) {
            inf__serve_buf_put(json, "[", 1);
            for (int r = 0; r < t->n_items; r++)
                write_elems(json, t->items[r]->items[1], r > 0);
            inf__serve_buf_put(json, "]", 1);
        } else {
            write_data(json, t);
        }
    }
    inf__serve_buf_put(json, "}", 1);
}

/* A BYTES output sent as JSON must be text: an element that is not UTF-8
 * would make the response invalid JSON, so it is refused with a pointer to
 * the binary form, which carries any bytes. */
static inf_status check_json_strings(const char *name, const inf_tensor *t, inf_error *err) {
    int64_t n = inf_tensor_numel(t);
    for (int64_t i = 0; i < n; i++) {
        const char *e = ((char *const *)t->data)[i];
        if (!e || inf__serve_utf8_valid(e, strlen(e))) continue;
        inf_error_set(err, INF_EUNSUPPORTED,
                      "output '%s': BYTES element %lld is not UTF-8 text, which a JSON string cannot carry; ask for "
                      "the output as binary data (\"parameters\":{\"binary_data\":true})",
                      name, (long long)i);
        return INF_EUNSUPPORTED;
    }
    return INF_OK;
}

inf_status inf__serve_unsupported_output(const char *name, const inf_tensor *t, inf_error *err) {
    inf_error_set(err, INF_EUNSUPPORTED, "output '%s' is a %s, which KServe V2 cannot express; request other outputs",
                  name,
                  !t                             ? "missing value"
                  : t->kind == INF_KIND_SEQUENCE ? "sequence of tensors"
                  : t->kind == INF_KIND_MAP      ? "map"
                  : t->kind == INF_KIND_NONE     ? "empty optional"
                                                 : "tensor of an unsupported type");
    return INF_EUNSUPPORTED;
}

inf_status inf__serve_encode_infer(const srv_infer_request *req, const inf_model *model, const char *model_name,
                                   const char *model_version, inf_tensor *const *outputs, srv_buf *json, srv_buf *bin,
                                   inf_error *err) {
    inf__serve_buf_puts(json, "{\"model_name\":");
    inf__serve_buf_json_str(json, model_name, strlen(model_name));
    if (model_version && model_version[0]) {
        inf__serve_buf_puts(json, ",\"model_version\":");
        inf__serve_buf_json_str(json, model_version, strlen(model_version));
    }
    if (req->id) {
        inf__serve_buf_puts(json, ",\"id\":");
        inf__serve_buf_json_str(json, req->id, strlen(req->id));
    }
    inf__serve_buf_puts(json, ",\"outputs\":[");
    int n = req->n_outputs ? req->n_outputs : inf_model_n_outputs(model);
    for (int i = 0; i < n; i++) {
        int idx = req->n_outputs ? req->outputs[i].model_index : i;
        int binary = req->binary_default;
        if (req->n_outputs && req->outputs[i].binary >= 0) binary = req->outputs[i].binary;
        const inf_tensor *t = outputs[idx];
        const char *name = inf_model_output(model, idx)->name;
        srv_map_seq ms;
        int is_map = t && t->kind == INF_KIND_SEQUENCE ? inf__serve_map_seq(t, name, &ms, err) : 0;
        if (is_map < 0) return INF_EUNSUPPORTED;
        if (!is_map && (!t || t->kind != INF_KIND_TENSOR || !inf__serve_kserve_dtype(t->dtype)))
            return inf__serve_unsupported_output(name, t, err);
        if (!is_map && !binary && t->dtype == INF_DTYPE_STRING && check_json_strings(name, t, err) != INF_OK)
            return INF_EUNSUPPORTED;
        if (i) inf__serve_buf_put(json, ",", 1);
        encode_output(json, bin, name, t, &ms, is_map, binary);
    }
    inf__serve_buf_puts(json, "]}");
    if (json->oom || bin->oom) {
        inf_error_set(err, INF_ENOMEM, "out of memory encoding the response");
        return INF_ENOMEM;
    }
    return INF_OK;
}
