/*
 * map_outputs.c -- model outputs that are a sequence of maps, as columns.
 *
 * Classifiers exported from scikit-learn (skl2onnx) and the ONNX-ML
 * converters end in ZipMap: the probabilities come out as one
 * {class label -> score} map per record rather than an [N, C] tensor.  The
 * pipeline's output mapping works on tensors, so inf_pipeline_finish sees
 * such an output through an inf__map_columns: a dense [N, C] float32 view
 * whose column j holds the j-th key's score, with the keys kept as text for
 * column names (`output_probability_<key>`) and argmax/top-k labels.
 *
 * Every map of the output must have the same keys in the same order (ZipMap
 * guarantees it); anything else is an error naming the output and the row.
 * Buffers grow to the largest batch and key names are rebuilt only when the
 * keys change, so a warm executor allocates nothing here.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pipeline/pipeline_int.h"

int inf__is_map_sequence(const inf_tensor *t) {
    if (!t || t->kind != INF_KIND_SEQUENCE) return 0;
    for (int i = 0; i < t->n_items; i++)
        if (!t->items[i] || t->items[i]->kind != INF_KIND_MAP) return 0;
    return 1;
}

static void free_keys(inf__map_columns *mc) {
    if (mc->key_names)
        for (int j = 0; j < mc->n_keys; j++) free(mc->key_names[j]);
    free(mc->key_names);
    free(mc->int_keys);
    mc->key_names = NULL;
    mc->int_keys = NULL;
    mc->n_keys = 0;
}

void inf__map_columns_free(inf__map_columns *mc) {
    if (!mc) return;
    free_keys(mc);
    free(mc->values);
    memset(mc, 0, sizeof *mc);
}

/* The j-th key of a map's key tensor, as text (an int64 key in decimal). */
static const char *key_text(const inf_tensor *keys, int64_t j, char buf[24]) {
    if (keys->dtype == INF_DTYPE_STRING) {
        const char *s = ((char *const *)keys->data)[j];
        return s ? s : "";
    }
    snprintf(buf, 24, "%" PRId64, ((const int64_t *)keys->data)[j]);
    return buf;
}

/* 1 when keys are exactly the remembered ones. */
static int same_keys(const inf__map_columns *mc, const inf_tensor *keys) {
    int is_str = keys->dtype == INF_DTYPE_STRING;
    if (!mc->key_names || inf_tensor_numel(keys) != mc->n_keys || is_str != mc->string_keys) return 0;
    char buf[24];
    for (int j = 0; j < mc->n_keys; j++) {
        if (!is_str && ((const int64_t *)keys->data)[j] != mc->int_keys[j]) return 0;
        if (is_str && strcmp(key_text(keys, j, buf), mc->key_names[j])) return 0;
    }
    return 1;
}

static inf_status remember_keys(inf__map_columns *mc, const inf_tensor *keys, const char *what, inf_error *err) {
    free_keys(mc);
    int64_t c = inf_tensor_numel(keys);
    if (c > 1 << 20) return inf_error_set(err, INF_EUNSUPPORTED, "output '%s': a map with %lld keys", what, (long long)c);
    mc->key_names = calloc((size_t)(c ? c : 1), sizeof *mc->key_names);
    mc->int_keys = calloc((size_t)(c ? c : 1), sizeof *mc->int_keys);
    if (!mc->key_names || !mc->int_keys) return inf_error_set(err, INF_ENOMEM, "output '%s': out of memory", what);
    mc->n_keys = (int)c;
    mc->string_keys = keys->dtype == INF_DTYPE_STRING;
    char buf[24];
    for (int j = 0; j < mc->n_keys; j++) {
        if (!mc->string_keys) mc->int_keys[j] = ((const int64_t *)keys->data)[j];
        if (!(mc->key_names[j] = strdup(key_text(keys, j, buf))))
            return inf_error_set(err, INF_ENOMEM, "output '%s': out of memory", what);
    }
    return INF_OK;
}

/* The keys and values of map r, checked. */
static inf_status map_parts(const inf_tensor *map, int r, const char *what, const inf_tensor **keys,
                            const inf_tensor **values, inf_error *err) {
    *keys = map->n_items == 2 ? map->items[0] : NULL;
    *values = map->n_items == 2 ? map->items[1] : NULL;
    if (!*keys || !*values || (*keys)->kind != INF_KIND_TENSOR || (*values)->kind != INF_KIND_TENSOR)
        return inf_error_set(err, INF_ETYPE, "output '%s': record %d: not a map of keys to values", what, r);
    if ((*keys)->dtype != INF_DTYPE_STRING && (*keys)->dtype != INF_DTYPE_I64)
        return inf_error_set(err, INF_ETYPE, "output '%s': record %d: map keys are %s (string or int64 expected)", what, r,
                    inf_dtype_name((*keys)->dtype));
    if (inf_tensor_numel(*keys) != inf_tensor_numel(*values))
        return inf_error_set(err, INF_ESHAPE, "output '%s': record %d: %lld keys but %lld values", what, r,
                    (long long)inf_tensor_numel(*keys), (long long)inf_tensor_numel(*values));
    return INF_OK;
}

static inf_status copy_values(float *dst, const inf_tensor *v, int64_t c, const char *what, int r, inf_error *err) {
    for (int64_t j = 0; j < c; j++) {
        switch (v->dtype) {
        case INF_DTYPE_F32: dst[j] = ((const float *)v->data)[j]; break;
        case INF_DTYPE_F64: dst[j] = (float)((const double *)v->data)[j]; break;
        case INF_DTYPE_I64: dst[j] = (float)((const int64_t *)v->data)[j]; break;
        default:
            return inf_error_set(err, INF_ETYPE, "output '%s': record %d: map values are %s (numbers expected)", what, r,
                        inf_dtype_name(v->dtype));
        }
    }
    return INF_OK;
}

static inf_status reserve_values(inf__map_columns *mc, size_t n, const char *what, inf_error *err) {
    if (n <= mc->cap) return INF_OK;
    float *v = realloc(mc->values, (n ? n : 1) * sizeof *v);
    if (!v) return inf_error_set(err, INF_ENOMEM, "output '%s': out of memory for %zu scores", what, n);
    mc->values = v;
    mc->cap = n;
    return INF_OK;
}

inf_status inf__map_columns_fill(inf__map_columns *mc, const inf_tensor *seq, int n_rows, const char *what,
                                 inf_error *err) {
    if (!inf__is_map_sequence(seq)) return inf_error_set(err, INF_ETYPE, "output '%s': not a sequence of maps", what);
    if (seq->n_items != n_rows)
        return inf_error_set(err, INF_ESHAPE, "output '%s': %d maps for %d records", what, seq->n_items, n_rows);
    const inf_tensor *keys, *values;
    inf_status st;
    if (n_rows > 0) {
        if ((st = map_parts(seq->items[0], 0, what, &keys, &values, err))) return st;
        if (!same_keys(mc, keys) && (st = remember_keys(mc, keys, what, err))) return st;
    }
    int64_t c = mc->n_keys;
    if ((st = reserve_values(mc, (size_t)n_rows * (size_t)c, what, err))) return st;
    for (int r = 0; r < n_rows; r++) {
        if ((st = map_parts(seq->items[r], r, what, &keys, &values, err))) return st;
        if (r > 0 && !same_keys(mc, keys))
            return inf_error_set(err, INF_ESHAPE, "output '%s': record %d: its map has other keys than record 0's", what, r);
        if ((st = copy_values(mc->values + (size_t)r * (size_t)c, values, c, what, r, err))) return st;
    }
    int64_t dims[2] = {n_rows, c};
    inf_tensor_init_view(&mc->dense, INF_DTYPE_F32, 2, dims, mc->values);
    return INF_OK;
}
