/*
 * ml_maps.c -- the ai.onnx.ml operators that turn a map into a tensor,
 * opset 1 (ai.onnx.ml 1-5), as ONNX Runtime 1.30 computes them:
 *
 *   CastMap         map(int64 -> string | float) -> [1, N] float, int64 or
 *       string (cast_to TO_FLOAT, TO_INT64, TO_STRING), the values in key
 *       order.  map_form DENSE: N = the map's size; SPARSE: N = max_map, the
 *       value of key k at column k (keys >= max_map dropped, a negative key
 *       refused), the others padded with 0 (strings: "0.f", as ORT).
 *       Casts as ORT's: string -> float/int64 parse the leading number
 *       (std::stof/stoll: leading spaces skipped, trailing text ignored, no
 *       number or out of range is an error), float -> string is "%f",
 *       float -> int64 truncates (NaN or out of int64's range: an error here,
 *       undefined in ORT).
 *   DictVectorizer  map(string | int64 -> int64 | float | double | string)
 *       -> [1, V]: column i holds the value of string_vocabulary[i] (or
 *       int64_vocabulary[i]), 0 or "" when the map lacks that key.
 *
 * A map value is INF_KIND_MAP with items[0] its keys and items[1] its values
 * (include/infera/tensor.h).  A map with a key twice is refused (ONNX maps,
 * like ORT's std::map, have unique keys).
 * Deviations: none known beyond the NaN/range refusal above.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops/ops.h"

/* ---- a map's entries sorted by key ---- */

typedef struct map_entry {
    int64_t key;
    const char *skey; /* string keys */
    int64_t index;    /* into the map's values */
} map_entry;

static int compare_int_keys(const void *a, const void *b) {
    int64_t x = ((const map_entry *)a)->key, y = ((const map_entry *)b)->key;
    return (x > y) - (x < y);
}

static int compare_string_keys(const void *a, const void *b) {
    return strcmp(((const map_entry *)a)->skey, ((const map_entry *)b)->skey);
}

/* Checks that input 0 is a map with keys of type key_dtype (INF_DTYPE_UNDEFINED: string or int64)
 * and sorts its entries (kernel scratch) by key; refuses a repeated key. */
static inf_status map_entries(inf__kernel_ctx *ctx, inf_dtype key_dtype, map_entry **out, int64_t *n_out) {
    const inf_tensor *m = ctx->in[0];
    if (m->kind != INF_KIND_MAP || m->n_items != 2 || !m->items[0] || !m->items[1])
        return inf__kernel_error(ctx, INF_ETYPE, "input X must be a map");
    const inf_tensor *keys = m->items[0];
    int64_t n = inf_tensor_numel(keys);
    bool strings = keys->dtype == INF_DTYPE_STRING;
    if ((!strings && keys->dtype != INF_DTYPE_I64) || (key_dtype != INF_DTYPE_UNDEFINED && keys->dtype != key_dtype))
        return inf__kernel_error(ctx, INF_ETYPE, "input X: map keys of type %s are not accepted here (expected %s)",
                                 inf_dtype_name(keys->dtype),
                                 key_dtype == INF_DTYPE_UNDEFINED ? "string or int64" : inf_dtype_name(key_dtype));
    if (inf_tensor_numel(m->items[1]) != n)
        return inf__kernel_error(ctx, INF_ESHAPE, "input X: the map has %lld keys and %lld values", (long long)n,
                                 (long long)inf_tensor_numel(m->items[1]));
    map_entry *e = inf__kernel_scratch(ctx, (size_t)(n ? n : 1) * sizeof *e);
    if (!e) return INF_ENOMEM;
    for (int64_t i = 0; i < n; i++) {
        const char *s = strings ? ((char *const *)keys->data)[i] : NULL;
        e[i] = (map_entry){strings ? 0 : ((const int64_t *)keys->data)[i], s ? s : "", i};
    }
    int (*compare)(const void *, const void *) = strings ? compare_string_keys : compare_int_keys;
    qsort(e, (size_t)n, sizeof *e, compare);
    for (int64_t i = 1; i < n; i++)
        if (!compare(&e[i - 1], &e[i]))
            return strings ? inf__kernel_error(ctx, INF_EINVAL, "input X: the map has key '%.60s' twice", e[i].skey)
                           : inf__kernel_error(ctx, INF_EINVAL, "input X: the map has key %lld twice", (long long)e[i].key);
    *out = e;
    *n_out = n;
    return INF_OK;
}

/* ---- CastMap ---- */

typedef struct cast_map_params {
    inf_dtype to; /* F32, I64 or STRING */
    bool sparse;
    int64_t max_map;
} cast_map_params;

static inf_status cast_map_init(inf__node *node, inf__arena *arena, inf_error *err) {
    cast_map_params *p = inf__op_params(arena, cast_map_params);
    if (!p) return INF_ENOMEM;
    const char *to = inf__attr_string(node, "cast_to", "TO_FLOAT");
    const char *form = inf__attr_string(node, "map_form", "DENSE");
    if (!strcmp(to, "TO_FLOAT")) p->to = INF_DTYPE_F32;
    else if (!strcmp(to, "TO_INT64")) p->to = INF_DTYPE_I64;
    else if (!strcmp(to, "TO_STRING")) p->to = INF_DTYPE_STRING;
    else return inf__node_error(node, err, INF_EMODEL, "attribute cast_to: expected TO_FLOAT, TO_INT64 or TO_STRING, got '%s'", to);
    if (strcmp(form, "DENSE") && strcmp(form, "SPARSE"))
        return inf__node_error(node, err, INF_EMODEL, "attribute map_form: expected DENSE or SPARSE, got '%s'", form);
    p->sparse = !strcmp(form, "SPARSE");
    p->max_map = inf__attr_int(node, "max_map", 1);
    if (p->sparse && p->max_map <= 0)
        return inf__node_error(node, err, INF_EMODEL, "attribute max_map must be > 0 with map_form SPARSE, got %lld",
                               (long long)p->max_map);
    node->params = p;
    return INF_OK;
}

/* Value i of the map (float or string) cast into element j of y. */
static inf_status cast_map_value(inf__kernel_ctx *ctx, const inf_tensor *values, int64_t i, inf_tensor *y, int64_t j) {
    if (values->dtype == INF_DTYPE_STRING) {
        const char *s = ((char *const *)values->data)[i];
        if (!s) s = "";
        if (y->dtype == INF_DTYPE_STRING) return inf_tensor_set_string(y, j, s, strlen(s));
        char *end;
        errno = 0;
        if (y->dtype == INF_DTYPE_F32) ((float *)y->data)[j] = strtof(s, &end);
        else ((int64_t *)y->data)[j] = strtoll(s, &end, 10);
        if (end == s || errno == ERANGE)
            return inf__kernel_error(ctx, INF_EINVAL, "map value '%.40s' is not a %s", s,
                                     end == s ? (y->dtype == INF_DTYPE_F32 ? "number" : "base-10 integer")
                                              : "number in the output type's range");
        return INF_OK;
    }
    float v = ((const float *)values->data)[i];
    if (y->dtype == INF_DTYPE_F32) {
        ((float *)y->data)[j] = v;
    } else if (y->dtype == INF_DTYPE_I64) {
        if (!(v >= -9223372036854775808.0f && v < 9223372036854775808.0f))
            return inf__kernel_error(ctx, INF_ERANGE, "map value %g does not fit int64", (double)v);
        ((int64_t *)y->data)[j] = (int64_t)v;
    } else {
        char buf[64];
        int len = snprintf(buf, sizeof buf, "%f", (double)v);
        return inf_tensor_set_string(y, j, buf, (size_t)len < sizeof buf ? (size_t)len : sizeof buf - 1);
    }
    return INF_OK;
}

static inf_status cast_map_pad(inf_tensor *y, int64_t j) {
    if (y->dtype == INF_DTYPE_STRING) return inf_tensor_set_string(y, j, "0.f", 3);
    if (y->dtype == INF_DTYPE_F32) ((float *)y->data)[j] = 0.0f;
    else ((int64_t *)y->data)[j] = 0;
    return INF_OK;
}

static inf_status cast_map_run(inf__kernel_ctx *ctx) {
    const cast_map_params *p = ctx->node->params;
    map_entry *e;
    int64_t n;
    inf_status st = map_entries(ctx, INF_DTYPE_I64, &e, &n);
    if (st != INF_OK) return st;
    const inf_tensor *values = ctx->in[0]->items[1];
    if (values->dtype != INF_DTYPE_F32 && values->dtype != INF_DTYPE_STRING)
        return inf__kernel_error(ctx, INF_ETYPE, "input X: map values must be float32 or string, got %s",
                                 inf_dtype_name(values->dtype));
    if (p->sparse && n && e[0].key < 0)
        return inf__kernel_error(ctx, INF_EINVAL, "input X: key %lld is negative (map_form SPARSE)", (long long)e[0].key);
    int64_t dims[2] = {1, p->sparse ? p->max_map : n};
    inf_tensor *y;
    if ((st = inf__kernel_output(ctx, 0, p->to, 2, dims, &y)) != INF_OK) return st;
    for (int64_t j = 0, next = 0; j < dims[1] && st == INF_OK; j++) {
        if (!p->sparse || (next < n && e[next].key == j)) st = cast_map_value(ctx, values, e[next++].index, y, j);
        else st = cast_map_pad(y, j);
    }
    return st;
}

const inf__op_impl op_ml_cast_map = {cast_map_init, cast_map_run};

/* ---- DictVectorizer ---- */

typedef struct dict_vectorizer_params {
    int n;
    const int64_t *int_vocabulary; /* or */
    const char *const *string_vocabulary;
} dict_vectorizer_params;

static inf_status dict_vectorizer_init(inf__node *node, inf__arena *arena, inf_error *err) {
    dict_vectorizer_params *p = inf__op_params(arena, dict_vectorizer_params);
    if (!p) return INF_ENOMEM;
    int ni = 0;
    p->int_vocabulary = inf__attr_ints(node, "int64_vocabulary", &ni);
    const inf__attr *s = inf__node_attr(node, "string_vocabulary");
    int ns = s && s->type == INF_ATTR_STRINGS ? s->n : 0;
    if ((ni > 0) == (ns > 0))
        return inf__node_error(node, err, INF_EMODEL, "exactly one of string_vocabulary or int64_vocabulary must be set");
    p->n = ni ? ni : ns;
    p->string_vocabulary = ns ? s->strings : NULL;
    node->params = p;
    return INF_OK;
}

/* The entry of key (vocabulary word i) among the sorted entries, or NULL. */
static const map_entry *find_entry(const dict_vectorizer_params *p, int i, const map_entry *e, int64_t n) {
    map_entry probe = {p->int_vocabulary ? p->int_vocabulary[i] : 0, p->string_vocabulary ? p->string_vocabulary[i] : NULL, 0};
    return bsearch(&probe, e, (size_t)n, sizeof *e, p->string_vocabulary ? compare_string_keys : compare_int_keys);
}

static inf_status dict_vectorizer_run(inf__kernel_ctx *ctx) {
    const dict_vectorizer_params *p = ctx->node->params;
    map_entry *e;
    int64_t n;
    inf_status st = map_entries(ctx, p->string_vocabulary ? INF_DTYPE_STRING : INF_DTYPE_I64, &e, &n);
    if (st != INF_OK) return st;
    const inf_tensor *values = ctx->in[0]->items[1];
    inf_dtype dt = values->dtype;
    if (dt != INF_DTYPE_I64 && dt != INF_DTYPE_F32 && dt != INF_DTYPE_F64 && dt != INF_DTYPE_STRING)
        return inf__kernel_error(ctx, INF_ETYPE, "input X: map values must be int64, float32, float64 or string, got %s",
                                 inf_dtype_name(dt));
    int64_t dims[2] = {1, p->n};
    inf_tensor *y;
    if ((st = inf__kernel_output(ctx, 0, dt, 2, dims, &y)) != INF_OK) return st;
    size_t size = inf_dtype_size(dt);
    for (int i = 0; i < p->n && st == INF_OK; i++) {
        const map_entry *hit = find_entry(p, i, e, n);
        if (dt == INF_DTYPE_STRING) {
            const char *s = hit ? ((char *const *)values->data)[hit->index] : NULL;
            st = inf_tensor_set_string(y, i, s ? s : "", s ? strlen(s) : 0);
        } else if (hit) {
            memcpy((char *)y->data + (size_t)i * size, (const char *)values->data + (size_t)hit->index * size, size);
        } else {
            memset((char *)y->data + (size_t)i * size, 0, size);
        }
    }
    return st;
}

const inf__op_impl op_ml_dict_vectorizer = {dict_vectorizer_init, dict_vectorizer_run};
