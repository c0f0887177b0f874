/*
 * ml_preprocess.c -- ai.onnx.ml feature preprocessing, opset 1 (LabelEncoder
 * opsets 1-4):
 *   Normalizer         X float/double/int64/int32 [N, C] or [C] -> float32, norm MAX | L1 | L2
 *                      (MAX divides by the row's maximum value, as ORT; a zero norm leaves the row)
 *   Scaler             (X - offset) * scale -> float32; offset/scale of length 1 or C
 *   Binarizer          X > threshold ? 1 : 0, X's dtype (float, double, int64, int32)
 *   Imputer            float32 or int64 X: replaced_value (NaN matches NaN) -> imputed value
 *                      (one value, or one per column of the last axis)
 *   ArrayFeatureExtractor  X[..., Y] along the last axis; Y int64 indices; a 1-D X gives [1, len(Y)]
 *   FeatureVectorizer  concatenates inputs [N, C_i] column-wise into float32 [N, sum(inputdimensions)],
 *                      truncating or zero-padding each to its inputdimensions entry
 *   OneHotEncoder      int64/int32/float/double or string X -> float32 [..., n_cats];
 *                      an unknown value is an error when zeros = 0, else all zeros
 *   LabelEncoder       opset 1: classes_strings (string <-> int64 index, default_int64/default_string);
 *                      opsets 2-3: keys_* / values_* (strings, int64s, floats) and default_*;
 *                      opset 4: keys_tensor / values_tensor / default_tensor (also double)
 *   CategoryMapper     cats_strings <-> cats_int64s, default_string / default_int64
 * Deviations: none known.
 */
#include <stdlib.h>

#include "ops/ref/ml_common.h"

static inf_status out_like(inf__kernel_ctx *ctx, int i, inf_dtype dt, const inf_tensor *x, inf_tensor **y) {
    return inf__kernel_output(ctx, i, dt, x->ndim, x->dims, y);
}

static int64_t last_dim(const inf_tensor *x) { return x->ndim ? x->dims[x->ndim - 1] : 1; }

static inf_status numeric_input(inf__kernel_ctx *ctx, const inf_tensor *x) {
    if (!x || x->kind != INF_KIND_TENSOR ||
        (x->dtype != INF_DTYPE_F32 && x->dtype != INF_DTYPE_F64 && x->dtype != INF_DTYPE_I64 && x->dtype != INF_DTYPE_I32))
        return inf__kernel_error(ctx, INF_ETYPE, "input X: expected float, double, int64 or int32, got %s",
                                 x ? inf_dtype_name(x->dtype) : "nothing");
    return INF_OK;
}

/* ---------------------------------------------------------------- Normalizer */

static inf_status normalizer_init(inf__node *node, inf__arena *arena, inf_error *err) {
    const char *norm = inf__attr_string(node, "norm", "MAX");
    if (strcmp(norm, "MAX") && strcmp(norm, "L1") && strcmp(norm, "L2"))
        return inf__node_error(node, err, INF_EMODEL, "attribute norm: unknown value '%s' (expected MAX, L1 or L2)", norm);
    return INF_OK;
}

static inf_status normalizer_run(inf__kernel_ctx *ctx) {
    const inf_tensor *x = ctx->in[0];
    inf_status st = numeric_input(ctx, x);
    if (st != INF_OK) return st;
    if (x->ndim != 1 && x->ndim != 2)
        return inf__kernel_error(ctx, INF_ESHAPE, "input X: expected rank 1 or 2, got %d", x->ndim);
    inf_tensor *y;
    if ((st = out_like(ctx, 0, INF_DTYPE_F32, x, &y)) != INF_OK) return st;
    const char *norm = inf__attr_string(ctx->node, "norm", "MAX");
    int64_t c = last_dim(x), rows = c ? inf_tensor_numel(x) / c : 0;
    float *out = y->data;
    for (int64_t r = 0; r < rows; r++) {
        double d = 0;
        if (!strcmp(norm, "MAX")) {
            d = -INFINITY;
            for (int64_t j = 0; j < c; j++) d = fmax(d, ml_get(x, r * c + j));
        } else if (!strcmp(norm, "L1")) {
            for (int64_t j = 0; j < c; j++) d += fabs(ml_get(x, r * c + j));
        } else {
            for (int64_t j = 0; j < c; j++) d += ml_get(x, r * c + j) * ml_get(x, r * c + j);
            d = sqrt(d);
        }
        for (int64_t j = 0; j < c; j++) {
            double v = ml_get(x, r * c + j);
            out[r * c + j] = (float)(d != 0 ? v / d : v);
        }
    }
    return INF_OK;
}

/* ---------------------------------------------------------------- Scaler */

static inf_status scaler_run(inf__kernel_ctx *ctx) {
    const inf_tensor *x = ctx->in[0];
    inf_status st = numeric_input(ctx, x);
    if (st != INF_OK) return st;
    int no = 0, ns = 0;
    const float *off = inf__attr_floats(ctx->node, "offset", &no);
    const float *sc = inf__attr_floats(ctx->node, "scale", &ns);
    int64_t c = last_dim(x);
    if ((no > 1 && no != c) || (ns > 1 && ns != c))
        return inf__kernel_error(ctx, INF_ESHAPE, "attributes offset (%d) and scale (%d) must have 1 or %lld values",
                                 no, ns, (long long)c);
    inf_tensor *y;
    if ((st = out_like(ctx, 0, INF_DTYPE_F32, x, &y)) != INF_OK) return st;
    float *out = y->data;
    for (int64_t i = 0, n = inf_tensor_numel(x); i < n; i++) {
        int64_t j = c ? i % c : 0;
        double o = no == 0 ? 0 : off[no == 1 ? 0 : j], s = ns == 0 ? 1 : sc[ns == 1 ? 0 : j];
        out[i] = (float)((ml_get(x, i) - o) * s);
    }
    return INF_OK;
}

/* ---------------------------------------------------------------- Binarizer */

static inf_status binarizer_run(inf__kernel_ctx *ctx) {
    const inf_tensor *x = ctx->in[0];
    inf_status st = numeric_input(ctx, x);
    if (st != INF_OK) return st;
    double t = inf__attr_float(ctx->node, "threshold", 0.0f);
    inf_tensor *y;
    if ((st = out_like(ctx, 0, x->dtype, x, &y)) != INF_OK) return st;
    for (int64_t i = 0, n = inf_tensor_numel(x); i < n; i++) inf__tensor_set_f64(y, i, ml_get(x, i) > t ? 1 : 0);
    return INF_OK;
}

/* ---------------------------------------------------------------- Imputer */

static inf_status imputer_run(inf__kernel_ctx *ctx) {
    const inf_tensor *x = ctx->in[0];
    const inf__node *node = ctx->node;
    if (!x || (x->dtype != INF_DTYPE_F32 && x->dtype != INF_DTYPE_I64))
        return inf__kernel_error(ctx, INF_ETYPE, "input X: expected float or int64, got %s",
                                 x ? inf_dtype_name(x->dtype) : "nothing");
    int nf = 0, ni = 0;
    const float *vf = inf__attr_floats(node, "imputed_value_floats", &nf);
    const int64_t *vi = inf__attr_ints(node, "imputed_value_int64s", &ni);
    int nv = x->dtype == INF_DTYPE_F32 ? nf : ni;
    int64_t c = last_dim(x);
    if (nv != 1 && nv != c)
        return inf__kernel_error(ctx, INF_ESHAPE, "attribute imputed_value_%s has %d values, expected 1 or %lld",
                                 x->dtype == INF_DTYPE_F32 ? "floats" : "int64s", nv, (long long)c);
    inf_tensor *y;
    inf_status st = out_like(ctx, 0, x->dtype, x, &y);
    if (st != INF_OK) return st;
    int64_t n = inf_tensor_numel(x);
    if (x->dtype == INF_DTYPE_F32) {
        float rep = inf__attr_float(node, "replaced_value_float", 0.0f);
        const float *in = x->data;
        float *out = y->data;
        for (int64_t i = 0; i < n; i++) {
            bool hit = isnan(rep) ? isnan(in[i]) : in[i] == rep;
            out[i] = hit ? vf[nv == 1 ? 0 : i % c] : in[i];
        }
    } else {
        int64_t rep = inf__attr_int(node, "replaced_value_int64", 0);
        const int64_t *in = x->data;
        int64_t *out = y->data;
        for (int64_t i = 0; i < n; i++) out[i] = in[i] == rep ? vi[nv == 1 ? 0 : i % c] : in[i];
    }
    return INF_OK;
}

/* ---------------------------------------------------------------- ArrayFeatureExtractor */

static inf_status afe_run(inf__kernel_ctx *ctx) {
    const inf_tensor *x = ctx->in[0], *ind = ctx->in[1];
    if (!x || !ind || ind->dtype != INF_DTYPE_I64)
        return inf__kernel_error(ctx, INF_ETYPE, "inputs X and Y (int64 indices) are required");
    if (x->ndim < 1) return inf__kernel_error(ctx, INF_ESHAPE, "input X: expected rank >= 1, got a scalar");
    int64_t c = last_dim(x), k = inf_tensor_numel(ind);
    const int64_t *idx = ind->data;
    for (int64_t j = 0; j < k; j++)
        if (idx[j] < 0 || idx[j] >= c)
            return inf__kernel_error(ctx, INF_ERANGE, "input Y: index %lld is outside [0, %lld)", (long long)idx[j],
                                     (long long)c);
    int64_t dims[INF_MAX_DIMS];
    int nd = x->ndim;
    memcpy(dims, x->dims, sizeof(int64_t) * (size_t)nd);
    if (nd == 1) {
        dims[0] = 1;
        nd = 2;
    }
    dims[nd - 1] = k;
    inf_tensor *y;
    inf_status st = inf__kernel_output(ctx, 0, x->dtype, nd, dims, &y);
    if (st != INF_OK) return st;
    int64_t rows = c ? inf_tensor_numel(x) / c : 0;
    size_t es = inf_dtype_size(x->dtype);
    for (int64_t r = 0; r < rows; r++)
        for (int64_t j = 0; j < k; j++) {
            int64_t src = r * c + idx[j], dst = r * k + j;
            if (x->dtype == INF_DTYPE_STRING) {
                const char *s = ((char *const *)x->data)[src];
                if ((st = inf_tensor_set_string(y, dst, s ? s : "", s ? strlen(s) : 0)) != INF_OK) return st;
            } else {
                memcpy((char *)y->data + dst * es, (const char *)x->data + src * es, es);
            }
        }
    return INF_OK;
}

/* ---------------------------------------------------------------- FeatureVectorizer */

static inf_status fv_run(inf__kernel_ctx *ctx) {
    int nd = 0;
    const int64_t *dims_in = inf__attr_ints(ctx->node, "inputdimensions", &nd);
    if (nd != ctx->n_in)
        return inf__kernel_error(ctx, INF_EINVAL, "attribute inputdimensions has %d values for %d inputs", nd, ctx->n_in);
    int64_t n = -1, total = 0;
    for (int i = 0; i < ctx->n_in; i++) {
        const inf_tensor *x = ctx->in[i];
        inf_status st = numeric_input(ctx, x);
        if (st != INF_OK) return st;
        int64_t rows = x->ndim == 0 ? 1 : x->dims[0];
        if (n >= 0 && rows != n)
            return inf__kernel_error(ctx, INF_ESHAPE, "input %d has %lld rows, input 0 has %lld", i, (long long)rows,
                                     (long long)n);
        n = rows;
        if (dims_in[i] < 0) return inf__kernel_error(ctx, INF_EINVAL, "attribute inputdimensions[%d] is negative", i);
        total += dims_in[i];
    }
    int64_t odims[2] = {n < 0 ? 0 : n, total};
    inf_tensor *y;
    inf_status st = inf__kernel_output(ctx, 0, INF_DTYPE_F32, 2, odims, &y);
    if (st != INF_OK) return st;
    float *out = y->data;
    memset(out, 0, (size_t)(odims[0] * total) * sizeof(float));
    int64_t col = 0;
    for (int i = 0; i < ctx->n_in; i++) {
        const inf_tensor *x = ctx->in[i];
        int64_t stride = odims[0] ? inf_tensor_numel(x) / odims[0] : 0, take = stride < dims_in[i] ? stride : dims_in[i];
        for (int64_t r = 0; r < odims[0]; r++)
            for (int64_t j = 0; j < take; j++) out[r * total + col + j] = (float)ml_get(x, r * stride + j);
        col += dims_in[i];
    }
    return INF_OK;
}

/* ---------------------------------------------------------------- lookup tables */

/* A key -> position table: int64, double or string keys, sorted once at init. */
typedef struct ml_keys {
    int n;
    int kind;               /* 0 int64, 1 double, 2 string */
    const int64_t *i64;
    const double *f64;
    const char *const *str;
    int32_t *order;         /* positions sorted by key */
} ml_keys;

static int key_compare_at(const ml_keys *k, int32_t a, int64_t bi, double bf, const char *bs) {
    switch (k->kind) {
    case 0: return k->i64[a] < bi ? -1 : k->i64[a] > bi;
    case 1: {
        double x = k->f64[a];
        if (isnan(x) || isnan(bf)) return isnan(x) && isnan(bf) ? 0 : isnan(x) ? 1 : -1; /* NaN sorts last, matches NaN */
        return x < bf ? -1 : x > bf;
    }
    default: return strcmp(k->str[a], bs);
    }
}

static int sort_cmp(const void *pa, const void *pb, void *arg) {
    const ml_keys *k = arg;
    int32_t b = *(const int32_t *)pb;
    int c = key_compare_at(k, *(const int32_t *)pa, k->kind == 0 ? k->i64[b] : 0, k->kind == 1 ? k->f64[b] : 0,
                           k->kind == 2 ? k->str[b] : "");
    return c ? c : *(const int32_t *)pa - b;
}

/* Builds the sorted order (in the arena); the first of equal keys wins. */
static inf_status keys_build(ml_keys *k, inf__arena *arena) {
    k->order = inf__arena_alloc(arena, ((size_t)k->n + 1) * sizeof(int32_t));
    if (!k->order) return INF_ENOMEM;
    for (int i = 0; i < k->n; i++) k->order[i] = i;
    qsort_r(k->order, (size_t)k->n, sizeof(int32_t), sort_cmp, k);
    return INF_OK;
}

static int keys_find(const ml_keys *k, int64_t bi, double bf, const char *bs) {
    int lo = 0, hi = k->n - 1, found = -1;
    while (lo <= hi) {
        int mid = (lo + hi) / 2;
        int c = key_compare_at(k, k->order[mid], bi, bf, bs);
        if (c == 0) {
            found = k->order[mid];
            hi = mid - 1;
        } else if (c < 0) {
            lo = mid + 1;
        } else {
            hi = mid - 1;
        }
    }
    return found;
}

/* ---------------------------------------------------------------- OneHotEncoder */

typedef struct onehot_params {
    ml_keys keys;
} onehot_params;

static inf_status onehot_init(inf__node *node, inf__arena *arena, inf_error *err) {
    onehot_params *p = inf__op_params(arena, onehot_params);
    if (!p) return INF_ENOMEM;
    int ni = 0;
    p->keys.i64 = inf__attr_ints(node, "cats_int64s", &ni);
    const inf__attr *cs = inf__node_attr(node, "cats_strings");
    if (cs && cs->type == INF_ATTR_STRINGS && cs->n) {
        p->keys.kind = 2;
        p->keys.str = cs->strings;
        p->keys.n = cs->n;
    } else {
        p->keys.n = ni;
    }
    if (!p->keys.n)
        return inf__node_error(node, err, INF_EMODEL, "one of cats_int64s or cats_strings must be set");
    if (keys_build(&p->keys, arena) != INF_OK) return INF_ENOMEM;
    node->params = p;
    return INF_OK;
}

static inf_status onehot_run(inf__kernel_ctx *ctx) {
    const onehot_params *p = ctx->node->params;
    const inf_tensor *x = ctx->in[0];
    bool strings = p->keys.kind == 2;
    if (!x || (strings ? x->dtype != INF_DTYPE_STRING : numeric_input(ctx, x) != INF_OK))
        return inf__kernel_error(ctx, INF_ETYPE, "input X: expected %s", strings ? "strings (cats_strings is set)" : "numbers (cats_int64s is set)");
    if (x->ndim >= INF_MAX_DIMS) return inf__kernel_error(ctx, INF_ESHAPE, "input X: rank %d is too large", x->ndim);
    int64_t dims[INF_MAX_DIMS];
    memcpy(dims, x->dims, sizeof(int64_t) * (size_t)x->ndim);
    dims[x->ndim] = p->keys.n;
    inf_tensor *y;
    inf_status st = inf__kernel_output(ctx, 0, INF_DTYPE_F32, x->ndim + 1, dims, &y);
    if (st != INF_OK) return st;
    bool zeros = inf__attr_int(ctx->node, "zeros", 1) != 0;
    int64_t n = inf_tensor_numel(x);
    float *out = y->data;
    memset(out, 0, (size_t)(n * p->keys.n) * sizeof(float));
    for (int64_t i = 0; i < n; i++) {
        int pos;
        if (strings) {
            const char *s = ((char *const *)x->data)[i];
            pos = keys_find(&p->keys, 0, 0, s ? s : "");
        } else {
            double v = ml_get(x, i);
            pos = v == (double)(int64_t)v ? keys_find(&p->keys, (int64_t)v, 0, "") : -1;
        }
        if (pos < 0 && !zeros)
            return inf__kernel_error(ctx, INF_EINVAL, "input X: element %lld is not a known category (zeros = 0)",
                                     (long long)i);
        if (pos >= 0) out[i * p->keys.n + pos] = 1;
    }
    return INF_OK;
}

/* ---------------------------------------------------------------- LabelEncoder, CategoryMapper */

typedef struct encoder_params {
    ml_keys keys;
    int value_kind;             /* 0 int64, 1 double (float output), 2 string, 3 double (double output) */
    int key_dtype;              /* expected input dtype */
    const int64_t *v_i64;
    const double *v_f64;
    const char *const *v_str;
    int64_t d_i64;
    double d_f64;
    const char *d_str;
    bool index_values;          /* opset-1 LabelEncoder / string keys: value = position */
} encoder_params;

/* Reads a keys_/values_ list in its opset-2 attribute forms or opset-4 tensor. */
static inf_status read_list(const inf__node *node, inf__arena *arena, const char *prefix, int *kind, int *n,
                            const int64_t **i64, const double **f64, const char *const **str, inf_dtype *dt,
                            inf_error *err) {
    char name[64];
    const inf__attr *a;
    snprintf(name, sizeof name, "%s_strings", prefix);
    if ((a = inf__node_attr(node, name)) && a->type == INF_ATTR_STRINGS) {
        *kind = 2, *n = a->n, *str = a->strings, *dt = INF_DTYPE_STRING;
        return INF_OK;
    }
    snprintf(name, sizeof name, "%s_int64s", prefix);
    if ((a = inf__node_attr(node, name)) && a->type == INF_ATTR_INTS) {
        *kind = 0, *n = a->n, *i64 = a->ints, *dt = INF_DTYPE_I64;
        return INF_OK;
    }
    snprintf(name, sizeof name, "%s_floats", prefix);
    if ((a = inf__node_attr(node, name)) && a->type == INF_ATTR_FLOATS) {
        double *d = inf__arena_alloc(arena, ((size_t)a->n + 1) * sizeof(double));
        if (!d) return INF_ENOMEM;
        for (int i = 0; i < a->n; i++) d[i] = a->floats[i];
        *kind = 1, *n = a->n, *f64 = d, *dt = INF_DTYPE_F32;
        return INF_OK;
    }
    snprintf(name, sizeof name, "%s_tensor", prefix);
    const inf_tensor *t = inf__attr_tensor(node, name);
    if (t) {
        int64_t cnt = inf_tensor_numel(t);
        *n = (int)cnt;
        *dt = t->dtype;
        if (t->dtype == INF_DTYPE_STRING) {
            *kind = 2, *str = (const char *const *)t->data;
        } else if (t->dtype == INF_DTYPE_I64) {
            *kind = 0, *i64 = t->data;
        } else if (t->dtype == INF_DTYPE_F32 || t->dtype == INF_DTYPE_F64) {
            double *d = inf__arena_alloc(arena, ((size_t)cnt + 1) * sizeof(double));
            if (!d) return INF_ENOMEM;
            for (int64_t i = 0; i < cnt; i++) d[i] = ml_get(t, i);
            *kind = 1, *f64 = d;
        } else {
            return inf__node_error(node, err, INF_EMODEL, "attribute %s: unsupported type %s", name,
                                   inf_dtype_name(t->dtype));
        }
        return INF_OK;
    }
    return inf__node_error(node, err, INF_EMODEL, "attribute %s_strings, %s_int64s, %s_floats or %s_tensor is missing",
                           prefix, prefix, prefix, prefix);
}

static inf_status label_encoder_init(inf__node *node, inf__arena *arena, inf_error *err) {
    encoder_params *p = inf__op_params(arena, encoder_params);
    if (!p) return INF_ENOMEM;
    p->d_i64 = inf__attr_int(node, "default_int64", -1);
    p->d_str = inf__attr_string(node, "default_string", "_Unused");
    p->d_f64 = inf__attr_float(node, "default_float", -0.0f);
    inf_status st;
    if (node->opset < 2) {
        const inf__attr *cs = inf__node_attr(node, "classes_strings");
        if (!cs || cs->type != INF_ATTR_STRINGS)
            return inf__node_error(node, err, INF_EMODEL, "attribute classes_strings is missing");
        p->keys.kind = 2;
        p->keys.str = cs->strings;
        p->keys.n = cs->n;
        p->index_values = true;
        p->key_dtype = INF_DTYPE_UNDEFINED; /* either direction: chosen by the input */
    } else {
        int nv = 0;
        inf_dtype kd, vd;
        if ((st = read_list(node, arena, "keys", &p->keys.kind, &p->keys.n, &p->keys.i64, &p->keys.f64, &p->keys.str,
                            &kd, err)) != INF_OK)
            return st;
        if ((st = read_list(node, arena, "values", &p->value_kind, &nv, &p->v_i64, &p->v_f64, &p->v_str, &vd, err)) !=
            INF_OK)
            return st;
        if (nv != p->keys.n)
            return inf__node_error(node, err, INF_EMODEL, "%d keys but %d values", p->keys.n, nv);
        if (vd == INF_DTYPE_F64) p->value_kind = 3;
        p->key_dtype = kd;
        const inf_tensor *dt = inf__attr_tensor(node, "default_tensor");
        if (dt && inf_tensor_numel(dt) >= 1) {
            if (dt->dtype == INF_DTYPE_STRING) p->d_str = ((char *const *)dt->data)[0];
            else if (dt->dtype == INF_DTYPE_I64) p->d_i64 = ((const int64_t *)dt->data)[0];
            else p->d_f64 = ml_get(dt, 0);
        }
    }
    if ((st = keys_build(&p->keys, arena)) != INF_OK) return st;
    node->params = p;
    return INF_OK;
}

static inf_status category_mapper_init(inf__node *node, inf__arena *arena, inf_error *err) {
    encoder_params *p = inf__op_params(arena, encoder_params);
    if (!p) return INF_ENOMEM;
    int ni = 0;
    const inf__attr *cs = inf__node_attr(node, "cats_strings");
    const int64_t *ci = inf__attr_ints(node, "cats_int64s", &ni);
    if (!cs || cs->type != INF_ATTR_STRINGS || cs->n != ni)
        return inf__node_error(node, err, INF_EMODEL, "attributes cats_strings and cats_int64s must have the same length");
    p->keys.kind = 2;
    p->keys.str = cs->strings;
    p->keys.n = cs->n;
    p->v_i64 = ci;
    p->d_i64 = inf__attr_int(node, "default_int64", -1);
    p->d_str = inf__attr_string(node, "default_string", "_Unused");
    p->key_dtype = INF_DTYPE_UNDEFINED;
    if (keys_build(&p->keys, arena) != INF_OK) return INF_ENOMEM;
    node->params = p;
    return INF_OK;
}

/* string <-> int64 in both directions over string keys (LabelEncoder-1 with
 * positions as values, CategoryMapper with cats_int64s). */
static inf_status map_bidirectional(inf__kernel_ctx *ctx, const encoder_params *p, const inf_tensor *x) {
    inf_tensor *y;
    inf_status st;
    int64_t n = inf_tensor_numel(x);
    if (x->dtype == INF_DTYPE_STRING) {
        if ((st = out_like(ctx, 0, INF_DTYPE_I64, x, &y)) != INF_OK) return st;
        for (int64_t i = 0; i < n; i++) {
            const char *s = ((char *const *)x->data)[i];
            int pos = keys_find(&p->keys, 0, 0, s ? s : "");
            ((int64_t *)y->data)[i] = pos < 0 ? p->d_i64 : p->index_values ? pos : p->v_i64[pos];
        }
        return INF_OK;
    }
    if (x->dtype != INF_DTYPE_I64)
        return inf__kernel_error(ctx, INF_ETYPE, "input X: expected string or int64, got %s", inf_dtype_name(x->dtype));
    if ((st = out_like(ctx, 0, INF_DTYPE_STRING, x, &y)) != INF_OK) return st;
    for (int64_t i = 0; i < n; i++) {
        int64_t v = ((const int64_t *)x->data)[i];
        const char *s = p->d_str;
        if (p->index_values) {
            if (v >= 0 && v < p->keys.n) s = p->keys.str[v];
        } else {
            for (int k = 0; k < p->keys.n; k++)
                if (p->v_i64[k] == v) {
                    s = p->keys.str[k];
                    break;
                }
        }
        if ((st = inf_tensor_set_string(y, i, s, strlen(s))) != INF_OK) return st;
    }
    return INF_OK;
}

static inf_status encoder_run(inf__kernel_ctx *ctx) {
    const encoder_params *p = ctx->node->params;
    const inf_tensor *x = ctx->in[0];
    if (!x || x->kind != INF_KIND_TENSOR) return inf__kernel_error(ctx, INF_ETYPE, "input X: expected a tensor");
    if (p->key_dtype == INF_DTYPE_UNDEFINED) return map_bidirectional(ctx, p, x);
    bool ok = p->keys.kind == 2 ? x->dtype == INF_DTYPE_STRING
              : p->keys.kind == 0 ? x->dtype == INF_DTYPE_I64
                                  : x->dtype == INF_DTYPE_F32 || x->dtype == INF_DTYPE_F64;
    if (!ok)
        return inf__kernel_error(ctx, INF_ETYPE, "input X: %s does not match the keys' type", inf_dtype_name(x->dtype));
    static const inf_dtype out_dt[] = {INF_DTYPE_I64, INF_DTYPE_F32, INF_DTYPE_STRING, INF_DTYPE_F64};
    inf_tensor *y;
    inf_status st = out_like(ctx, 0, out_dt[p->value_kind], x, &y);
    if (st != INF_OK) return st;
    for (int64_t i = 0, n = inf_tensor_numel(x); i < n; i++) {
        int pos;
        if (p->keys.kind == 2) {
            const char *s = ((char *const *)x->data)[i];
            pos = keys_find(&p->keys, 0, 0, s ? s : "");
        } else if (p->keys.kind == 0) {
            pos = keys_find(&p->keys, ((const int64_t *)x->data)[i], 0, "");
        } else {
            pos = keys_find(&p->keys, 0, ml_get(x, i), "");
        }
        switch (p->value_kind) {
        case 0: ((int64_t *)y->data)[i] = pos < 0 ? p->d_i64 : p->v_i64[pos]; break;
        case 1: ((float *)y->data)[i] = (float)(pos < 0 ? p->d_f64 : p->v_f64[pos]); break;
        case 3: ((double *)y->data)[i] = pos < 0 ? p->d_f64 : p->v_f64[pos]; break;
        default: {
            const char *s = pos < 0 ? p->d_str : p->v_str[pos];
            if ((st = inf_tensor_set_string(y, i, s, strlen(s))) != INF_OK) return st;
        }
        }
    }
    return INF_OK;
}

const inf__op_impl op_ml_normalizer = {normalizer_init, normalizer_run};
const inf__op_impl op_ml_scaler = {NULL, scaler_run};
const inf__op_impl op_ml_binarizer = {NULL, binarizer_run};
const inf__op_impl op_ml_imputer = {NULL, imputer_run};
const inf__op_impl op_ml_array_feature_extractor = {NULL, afe_run};
const inf__op_impl op_ml_feature_vectorizer = {NULL, fv_run};
const inf__op_impl op_ml_one_hot_encoder = {onehot_init, onehot_run};
const inf__op_impl op_ml_label_encoder = {label_encoder_init, encoder_run};
const inf__op_impl op_ml_category_mapper = {category_mapper_init, encoder_run};
