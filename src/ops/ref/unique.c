/*
 * unique.c -- ONNX Unique, opsets 11-17, every numeric dtype, bool and
 * string.
 *
 * Items are the elements of the flattened input (no axis attribute) or the
 * slices along `axis`, compared lexicographically in row-major order of the
 * remaining axes (numpy.unique(..., axis=)).  Outputs:
 *   Y                unique items, ascending (sorted=1, the default) or in
 *                    order of first occurrence (sorted=0);
 *   indices          int64, first occurrence of each Y item in the input;
 *   inverse_indices  int64, for each input item its position in Y;
 *   counts           int64, occurrences of each Y item.
 * Optional outputs the node omits are still computed (they are cheap).
 *
 * Order: numbers by value (unsigned 64-bit compared as unsigned), NaN after
 * every number and equal to every NaN (numpy >= 1.21), strings by strcmp.
 * A stable merge sort of the item numbers gives groups whose first member is
 * the first occurrence.
 *
 * Memory: one scratch block of 5 int64 arrays of n items.
 *
 * Deviations: none known.
 */
#include <math.h>

#include "ops/ref/data_move.h"

typedef struct uq_items {
    const inf_tensor *x;
    int64_t n;     /* items */
    int64_t dim;   /* axis length (n), or numel without axis */
    int64_t outer; /* slices: each item has outer*inner elements */
    int64_t inner;
} uq_items;

static int uq_cmp_elem(const inf_tensor *x, int64_t i, int64_t j) {
    switch (x->dtype) {
    case INF_DTYPE_STRING: {
        const char *a = ((char *const *)x->data)[i], *b = ((char *const *)x->data)[j];
        return strcmp(a ? a : "", b ? b : "");
    }
    case INF_DTYPE_U64: {
        uint64_t a = ((const uint64_t *)x->data)[i], b = ((const uint64_t *)x->data)[j];
        return (a > b) - (a < b);
    }
    case INF_DTYPE_F32:
    case INF_DTYPE_F64:
    case INF_DTYPE_F16:
    case INF_DTYPE_BF16: {
        double a = inf__tensor_get_f64(x, i), b = inf__tensor_get_f64(x, j);
        if (isnan(a) || isnan(b)) return isnan(a) - isnan(b);
        return (a > b) - (a < b);
    }
    default: {
        int64_t a = inf__tensor_get_i64(x, i), b = inf__tensor_get_i64(x, j);
        return (a > b) - (a < b);
    }
    }
}

/* Compares items p and q. */
static int uq_cmp(const uq_items *it, int64_t p, int64_t q) {
    for (int64_t o = 0; o < it->outer; o++) {
        for (int64_t e = 0; e < it->inner; e++) {
            int64_t base = o * it->dim * it->inner + e;
            int c = uq_cmp_elem(it->x, base + p * it->inner, base + q * it->inner);
            if (c) return c;
        }
    }
    return 0;
}

/* Stable bottom-up merge sort of perm[0..n) by item, using tmp[0..n). */
static void uq_sort(const uq_items *it, int64_t *perm, int64_t *tmp) {
    int64_t n = it->n;
    for (int64_t w = 1; w < n; w *= 2) {
        for (int64_t lo = 0; lo < n; lo += 2 * w) {
            int64_t mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n;
            int64_t a = lo, b = mid, k = lo;
            while (a < mid && b < hi)
                tmp[k++] = uq_cmp(it, perm[b], perm[a]) < 0 ? perm[b++] : perm[a++];
            while (a < mid) tmp[k++] = perm[a++];
            while (b < hi) tmp[k++] = perm[b++];
        }
        memcpy(perm, tmp, sizeof(int64_t) * (size_t)n);
    }
}

static inf_status uq_outputs(inf__kernel_ctx *ctx, const uq_items *it, bool has_axis, int axis,
                             int64_t n_groups, const int64_t *first, const int64_t *count,
                             const int64_t *group_of) {
    const inf_tensor *x = it->x;
    int64_t dims[INF_MAX_DIMS];
    int r = has_axis ? x->ndim : 1;
    if (has_axis) memcpy(dims, x->dims, sizeof(int64_t) * x->ndim);
    dims[has_axis ? axis : 0] = n_groups;
    inf_tensor *y, *t;
    inf_status st = inf__kernel_output(ctx, 0, x->dtype, r, dims, &y);
    if (st != INF_OK) return st;
    for (int64_t o = 0; o < it->outer; o++)
        for (int64_t g = 0; g < n_groups; g++)
            if ((st = move_copy(ctx, y, (o * n_groups + g) * it->inner, x,
                                (o * it->dim + first[g]) * it->inner, it->inner)) != INF_OK)
                return st;
    const int64_t *src[3] = {first, group_of, count};
    int64_t len[3] = {n_groups, it->n, n_groups};
    for (int k = 0; k < 3 && k + 1 < ctx->n_out; k++) {
        if ((st = inf__kernel_output(ctx, k + 1, INF_DTYPE_I64, 1, &len[k], &t)) != INF_OK)
            return st;
        if (len[k]) memcpy(t->data, src[k], sizeof(int64_t) * (size_t)len[k]);
    }
    return INF_OK;
}

/* Renumbers the groups by first occurrence (Unique with sorted=0), updating
 * group_of, first and count; perm and tmp (n entries) are free scratch. */
static void uq_renumber(int64_t n, int64_t n_groups, int64_t *group_of, int64_t *first,
                        int64_t *count, int64_t *perm, int64_t *tmp) {
    int64_t next = 0;
    for (int64_t g = 0; g < n_groups; g++) tmp[g] = -1; /* tmp[g]: new number of group g */
    for (int64_t i = 0; i < n; i++) {
        int64_t g = group_of[i];
        if (tmp[g] < 0) {
            tmp[g] = next;
            first[next++] = i; /* the old first[] is no longer needed */
        }
        group_of[i] = tmp[g];
    }
    for (int64_t g = 0; g < n_groups; g++) perm[tmp[g]] = count[g];
    memcpy(count, perm, sizeof(int64_t) * (size_t)n_groups);
}

static inf_status unique_run(inf__kernel_ctx *ctx) {
    const inf_tensor *x;
    inf_status st;
    if ((st = move_input(ctx, 0, "X", true, &x)) != INF_OK) return st;
    if (x->dtype == INF_DTYPE_C64 || x->dtype == INF_DTYPE_C128)
        return inf__kernel_error(ctx, INF_ETYPE, "input X: %s is not supported",
                                 inf_dtype_name(x->dtype));
    bool has_axis = inf__node_attr(ctx->node, "axis") != NULL;
    int axis = 0;
    if (has_axis && (st = move_axis(ctx, "attribute axis", inf__attr_int(ctx->node, "axis", 0),
                                    x->ndim, &axis)) != INF_OK)
        return st;
    uq_items it = {x, inf_tensor_numel(x), inf_tensor_numel(x), 1, 1};
    if (has_axis) {
        it.n = it.dim = x->dims[axis];
        it.outer = move_prod(x->dims, 0, axis);
        it.inner = move_prod(x->dims, axis + 1, x->ndim);
    }
    /* perm, tmp, group_of, first, count: n entries each */
    int64_t n = it.n, *perm = NULL;
    if (n > 0 && !(perm = inf__kernel_scratch(ctx, sizeof(int64_t) * 5 * (size_t)n)))
        return INF_ENOMEM;
    int64_t *tmp = perm + n, *group_of = tmp + n, *first = group_of + n, *count = first + n;
    for (int64_t i = 0; i < n; i++) perm[i] = i;
    uq_sort(&it, perm, tmp);

    /* groups in sorted order: first member (the first occurrence, as the
     * sort is stable) and size */
    int64_t n_groups = 0;
    for (int64_t k = 0; k < n; k++) {
        if (k == 0 || uq_cmp(&it, perm[k - 1], perm[k]) != 0) {
            first[n_groups] = perm[k];
            count[n_groups++] = 0;
        }
        group_of[perm[k]] = n_groups - 1;
        count[n_groups - 1]++;
    }
    if (!inf__attr_int(ctx->node, "sorted", 1))
        uq_renumber(n, n_groups, group_of, first, count, perm, tmp);
    return uq_outputs(ctx, &it, has_axis, axis, n_groups, first, count, group_of);
}

const inf__op_impl op_unique = {NULL, unique_run};
