/*
 * ml_zipmap.c -- ai.onnx.ml ZipMap, opset 1.
 *
 * X float32 [N, C] (or [C]: one row) -> a sequence of N maps, each mapping
 * the C class labels (classlabels_int64s or classlabels_strings) to the
 * row's scores.  A map value is INF_KIND_MAP with items[0] the keys (int64
 * or string, [C]) and items[1] the values (float32, [C]); see
 * include/infera/tensor.h.  The values are heap objects (the one place an
 * ML kernel allocates at run time: sequences cannot come from the pool).
 * Deviations: none.
 */
#include "ops/ref/ml_common.h"

static inf_status zipmap_init(inf__node *node, inf__arena *arena, inf_error *err) {
    int ni = 0;
    inf__attr_ints(node, "classlabels_int64s", &ni);
    const inf__attr *ls = inf__node_attr(node, "classlabels_strings");
    int ns = ls && ls->type == INF_ATTR_STRINGS ? ls->n : 0;
    if ((ni > 0) == (ns > 0))
        return inf__node_error(node, err, INF_EMODEL, "exactly one of classlabels_int64s or classlabels_strings must be set");
    return INF_OK;
}

/* One map: labels -> row. */
static inf_status make_map(const inf__node *node, const float *row, int64_t c, inf_tensor **out) {
    int ni = 0;
    const int64_t *li = inf__attr_ints(node, "classlabels_int64s", &ni);
    const inf__attr *ls = inf__node_attr(node, "classlabels_strings");
    inf_tensor *map = NULL, *keys = NULL, *values = NULL;
    inf_status st = inf_tensor_new_sequence(INF_DTYPE_F32, &map);
    if (st != INF_OK) return st;
    map->kind = INF_KIND_MAP;
    st = inf_tensor_new(ni ? INF_DTYPE_I64 : INF_DTYPE_STRING, 1, &c, &keys);
    for (int64_t k = 0; st == INF_OK && k < c; k++) {
        if (ni) ((int64_t *)keys->data)[k] = li[k];
        else st = inf_tensor_set_string(keys, k, ls->strings[k], strlen(ls->strings[k]));
    }
    if (st == INF_OK) st = inf_tensor_new(INF_DTYPE_F32, 1, &c, &values);
    if (st == INF_OK) memcpy(values->data, row, (size_t)c * sizeof(float));
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
        return st;
    }
    *out = map;
    return INF_OK;
}

static inf_status zipmap_run(inf__kernel_ctx *ctx) {
    const inf_tensor *x = ctx->in[0];
    if (!x || x->kind != INF_KIND_TENSOR || x->dtype != INF_DTYPE_F32)
        return inf__kernel_error(ctx, INF_ETYPE, "input X: expected float32, got %s", x ? inf_dtype_name(x->dtype) : "nothing");
    if (x->ndim != 1 && x->ndim != 2)
        return inf__kernel_error(ctx, INF_ESHAPE, "input X: expected rank 1 or 2, got %d", x->ndim);
    int ni = 0;
    inf__attr_ints(ctx->node, "classlabels_int64s", &ni);
    const inf__attr *ls = inf__node_attr(ctx->node, "classlabels_strings");
    int64_t n_labels = ni ? ni : ls->n;
    int64_t n = x->ndim == 1 ? 1 : x->dims[0], c = x->dims[x->ndim - 1];
    if (c != n_labels)
        return inf__kernel_error(ctx, INF_ESHAPE, "input X: %lld columns for %lld class labels", (long long)c,
                                 (long long)n_labels);
    inf_tensor *seq;
    inf_status st = inf_tensor_new_sequence(INF_DTYPE_F32, &seq);
    if (st != INF_OK) return inf__kernel_error(ctx, st, "out of memory");
    for (int64_t r = 0; r < n && st == INF_OK; r++) {
        inf_tensor *map;
        st = make_map(ctx->node, (const float *)x->data + r * c, c, &map);
        if (st == INF_OK) st = inf_tensor_sequence_append(seq, map);
    }
    if (st != INF_OK) {
        inf_tensor_free(seq);
        return inf__kernel_error(ctx, st, "out of memory building %lld maps", (long long)n);
    }
    return inf__kernel_output_value(ctx, 0, seq);
}

const inf__op_impl op_ml_zipmap = {zipmap_init, zipmap_run};
