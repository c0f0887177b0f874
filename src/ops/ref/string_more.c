/*
 * string_more.c -- the string operators of opset 20:
 *
 *   StringConcat  opsets 20-26: Z = X + Y element-wise, numpy broadcasting.
 *   StringSplit   opsets 20-26: Y [..., m] the substrings of each element,
 *       split on `delimiter` (consecutive delimiters give empty strings), or,
 *       when it is unset or "", on runs of ASCII whitespace (leading and
 *       trailing whitespace dropped); at most `maxsplit` splits, the rest of
 *       the string as the last part; an empty element has no parts (also
 *       with a delimiter, as onnxruntime); m = the most parts of any element, the
 *       others padded with ""; Z (int64, X's shape) = each element's count.
 * Strings are bytes (UTF-8 passes through unchanged); NULL elements read as "".
 * Deviations: none known.
 */
#include <string.h>

#include "ops/ref/data_move.h"

static const char *str_at(const inf_tensor *t, int64_t i) {
    const char *s = ((char *const *)t->data)[i];
    return s ? s : "";
}

/* ---- StringConcat ---- */

static inf_status concat_run(inf__kernel_ctx *ctx) {
    const inf_tensor *a = ctx->in[0], *b = ctx->in[1];
    if (a->dtype != INF_DTYPE_STRING || b->dtype != INF_DTYPE_STRING)
        return inf__kernel_error(ctx, INF_ETYPE, "inputs X and Y must be strings, got %s and %s",
                                 inf_dtype_name(a->dtype), inf_dtype_name(b->dtype));
    int nd;
    int64_t dims[INF_MAX_DIMS], sa[INF_MAX_DIMS], sb[INF_MAX_DIMS];
    if (inf__broadcast_shape(a->ndim, a->dims, b->ndim, b->dims, &nd, dims) != INF_OK)
        return inf__kernel_error(ctx, INF_ESHAPE, "inputs X and Y cannot be broadcast together");
    inf__broadcast_strides(a->ndim, a->dims, nd, dims, sa);
    inf__broadcast_strides(b->ndim, b->dims, nd, dims, sb);
    inf_tensor *z;
    inf_status st = inf__kernel_output(ctx, 0, INF_DTYPE_STRING, nd, dims, &z);
    if (st != INF_OK) return st;
    int64_t c[INF_MAX_DIMS] = {0};
    for (int64_t i = 0, n = inf_tensor_numel(z); i < n && st == INF_OK; i++) {
        int64_t ia = 0, ib = 0;
        for (int d = 0; d < nd; d++) ia += c[d] * sa[d], ib += c[d] * sb[d];
        const char *x = str_at(a, ia), *y = str_at(b, ib);
        size_t lx = strlen(x), ly = strlen(y);
        char *buf = inf__kernel_scratch(ctx, lx + ly + 1);
        if (!buf) return INF_ENOMEM;
        memcpy(buf, x, lx);
        memcpy(buf + lx, y, ly);
        st = inf_tensor_set_string(z, i, buf, lx + ly);
        for (int d = nd - 1; d >= 0 && ++c[d] == dims[d]; d--) c[d] = 0;
    }
    return st;
}

const inf__op_impl op_string_concat = {NULL, concat_run};

/* ---- StringSplit ---- */

typedef struct split_params {
    const char *delim; /* NULL: whitespace */
    int64_t maxsplit;  /* < 0: unlimited */
} split_params;

static inf_status split_init(inf__node *node, inf__arena *arena, inf_error *err) {
    (void)err;
    split_params *p = inf__op_params(arena, split_params);
    if (!p) return INF_ENOMEM;
    const char *d = inf__attr_string(node, "delimiter", "");
    p->delim = *d ? d : NULL;
    p->maxsplit = inf__node_attr(node, "maxsplit") ? inf__attr_int(node, "maxsplit", -1) : -1;
    node->params = p;
    return INF_OK;
}

static bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'; }

/* Calls emit(part) for each part of s; returns the number of parts. */
typedef inf_status (*emit_fn)(void *arg, int64_t k, const char *s, size_t len);

static inf_status split_one(const split_params *p, const char *s, emit_fn emit, void *arg, int64_t *count) {
    int64_t k = 0, splits = 0;
    inf_status st = INF_OK;
    if (p->delim) {
        if (!*s) { /* no parts, as onnxruntime (Python's "".split(",") would give one) */
            *count = 0;
            return INF_OK;
        }
        size_t dl = strlen(p->delim);
        const char *at;
        while ((p->maxsplit < 0 || splits < p->maxsplit) && (at = strstr(s, p->delim)) != NULL) {
            if (emit && (st = emit(arg, k, s, (size_t)(at - s))) != INF_OK) return st;
            k++, splits++;
            s = at + dl;
        }
        if (emit && (st = emit(arg, k, s, strlen(s))) != INF_OK) return st;
        *count = k + 1;
        return INF_OK;
    }
    while (*s && is_space(*s)) s++;
    while (*s) {
        const char *e = s;
        if (p->maxsplit >= 0 && splits == p->maxsplit) { /* the rest, without trailing whitespace */
            e = s + strlen(s);
            while (e > s && is_space(e[-1])) e--;
        } else {
            while (*e && !is_space(*e)) e++;
        }
        if (emit && (st = emit(arg, k, s, (size_t)(e - s))) != INF_OK) return st;
        k++, splits++;
        s = e;
        while (*s && is_space(*s)) s++;
    }
    *count = k;
    return INF_OK;
}

typedef struct emit_state {
    inf_tensor *y;
    int64_t base;
} emit_state;

static inf_status emit_part(void *arg, int64_t k, const char *s, size_t len) {
    emit_state *e = arg;
    return inf_tensor_set_string(e->y, e->base + k, s, len);
}

static inf_status split_run(inf__kernel_ctx *ctx) {
    const split_params *p = ctx->node->params;
    const inf_tensor *x = ctx->in[0];
    if (x->dtype != INF_DTYPE_STRING)
        return inf__kernel_error(ctx, INF_ETYPE, "input X must be strings, got %s", inf_dtype_name(x->dtype));
    if (x->ndim >= INF_MAX_DIMS) return inf__kernel_error(ctx, INF_ESHAPE, "input X: rank %d is too large", x->ndim);
    int64_t n = inf_tensor_numel(x), most = 0, count;
    inf_tensor *z = NULL, *y;
    inf_status st = inf__kernel_output(ctx, 1, INF_DTYPE_I64, x->ndim, x->dims, &z);
    if (st != INF_OK) return st;
    for (int64_t i = 0; i < n; i++) {
        split_one(p, str_at(x, i), NULL, NULL, &count);
        ((int64_t *)z->data)[i] = count;
        if (count > most) most = count;
    }
    int64_t dims[INF_MAX_DIMS];
    memcpy(dims, x->dims, sizeof(int64_t) * (size_t)x->ndim);
    dims[x->ndim] = most;
    if ((st = inf__kernel_output(ctx, 0, INF_DTYPE_STRING, x->ndim + 1, dims, &y)) != INF_OK) return st;
    for (int64_t i = 0; i < n && st == INF_OK; i++) {
        emit_state e = {y, i * most};
        st = split_one(p, str_at(x, i), emit_part, &e, &count);
        for (int64_t k = count; k < most && st == INF_OK; k++) st = inf_tensor_set_string(y, i * most + k, "", 0);
    }
    return st;
}

const inf__op_impl op_string_split = {split_init, split_run};
