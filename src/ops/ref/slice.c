/*
 * slice.c -- ONNX Slice, every dtype.
 *
 *   opsets 1-9   attributes starts, ends (required) and axes (optional);
 *   opsets 10-17 inputs starts, ends, axes (optional), steps (optional),
 *                int32 or int64; negative steps from opset 10, negative
 *                axes accepted at every opset.
 *
 * Indices follow the spec (opset 13 text): a negative start or end has the
 * axis length added; then for step > 0 both are clamped to [0, dim], for
 * step < 0 start to [0, dim-1] and end to [-1, dim-1].  Out-of-range values
 * (INT64_MAX / INT64_MIN as "to the end") are fine.
 *
 * Data moves as contiguous runs: the trailing axes that are not sliced are
 * merged with the innermost sliced one (if its step is 1) into one memcpy.
 * Strings are copied element by element with inf_tensor_set_string.
 *
 * Deviations: an axis listed twice is rejected (the spec says undefined).
 * With a negative step, a start still negative after adding dim is clamped
 * to 0 as the spec text and onnxruntime do (numpy, and so ONNX's Python
 * reference, would clamp it to -1 and return an empty slice).
 */
#include "ops/ref/data_move.h"

typedef struct slice_spec {
    int n;
    int64_t starts[INF_MAX_DIMS], ends[INF_MAX_DIMS], axes[INF_MAX_DIMS], steps[INF_MAX_DIMS];
} slice_spec;

/* Reads an attribute list of at most INF_MAX_DIMS entries; *n = -1 if absent. */
static inf_status slice_attr(inf__kernel_ctx *ctx, const char *name, int64_t *vals, int *n) {
    int na;
    const int64_t *a = inf__attr_ints(ctx->node, name, &na);
    *n = -1;
    if (!a && !inf__node_attr(ctx->node, name)) return INF_OK;
    if (na > INF_MAX_DIMS)
        return inf__kernel_error(ctx, INF_ESHAPE, "attribute %s has %d entries, at most %d", name,
                                 na, INF_MAX_DIMS);
    for (int k = 0; k < na; k++) vals[k] = a[k];
    *n = na;
    return INF_OK;
}

/* Reads optional input i into vals; *n = -1 if absent.  starts, ends, axes
 * and steps must share one dtype (int32 or int64). */
static inf_status slice_input(inf__kernel_ctx *ctx, int i, const char *name, int64_t *vals, int *n) {
    const inf_tensor *t;
    *n = -1;
    inf_status st = move_input(ctx, i, name, i <= 2, &t);
    if (st != INF_OK || !t) return st;
    if ((st = move_read_ints(ctx, t, name, true, INF_MAX_DIMS, vals, n)) != INF_OK) return st;
    if (t->dtype != ctx->in[1]->dtype)
        return inf__kernel_error(ctx, INF_ETYPE, "input %s is %s but input starts is %s", name,
                                 inf_dtype_name(t->dtype), inf_dtype_name(ctx->in[1]->dtype));
    return INF_OK;
}

static inf_status slice_read(inf__kernel_ctx *ctx, slice_spec *sp) {
    int ns, ne, na, nt;
    inf_status st;
    const char *src = ctx->node->opset < 10 ? "attribute" : "input";
    if (ctx->node->opset < 10) {
        if ((st = slice_attr(ctx, "starts", sp->starts, &ns)) != INF_OK ||
            (st = slice_attr(ctx, "ends", sp->ends, &ne)) != INF_OK ||
            (st = slice_attr(ctx, "axes", sp->axes, &na)) != INF_OK)
            return st;
        if (ns < 0 || ne < 0)
            return inf__kernel_error(ctx, INF_EMODEL, "attributes starts and ends are required");
        nt = -1;
    } else {
        if ((st = slice_input(ctx, 1, "starts", sp->starts, &ns)) != INF_OK ||
            (st = slice_input(ctx, 2, "ends", sp->ends, &ne)) != INF_OK ||
            (st = slice_input(ctx, 3, "axes", sp->axes, &na)) != INF_OK ||
            (st = slice_input(ctx, 4, "steps", sp->steps, &nt)) != INF_OK)
            return st;
    }
    if (ne != ns || (na >= 0 && na != ns) || (nt >= 0 && nt != ns))
        return inf__kernel_error(ctx, INF_ESHAPE,
                                 "%s starts, ends, axes, steps must have the same length; got "
                                 "%d, %d, %d, %d",
                                 src, ns, ne, na, nt);
    sp->n = ns;
    for (int k = 0; k < ns; k++) {
        if (na < 0) sp->axes[k] = k;
        if (nt < 0) sp->steps[k] = 1;
    }
    return INF_OK;
}

/* Per-axis start, step and count of the output. */
typedef struct slice_plan {
    int64_t start[INF_MAX_DIMS], step[INF_MAX_DIMS], count[INF_MAX_DIMS];
} slice_plan;

static int64_t clamp64(int64_t v, int64_t lo, int64_t hi) { return v < lo ? lo : v > hi ? hi : v; }

static inf_status slice_plan_build(inf__kernel_ctx *ctx, const inf_tensor *x, const slice_spec *sp,
                                   slice_plan *pl) {
    bool seen[INF_MAX_DIMS] = {false};
    for (int a = 0; a < x->ndim; a++) {
        pl->start[a] = 0;
        pl->step[a] = 1;
        pl->count[a] = x->dims[a];
    }
    for (int k = 0; k < sp->n; k++) {
        int a = 0;
        inf_status st = move_axis(ctx, "axes entry", sp->axes[k], x->ndim, &a);
        if (st != INF_OK) return st;
        if (seen[a]) return inf__kernel_error(ctx, INF_ERANGE, "axes: axis %d is listed twice", a);
        seen[a] = true;
        int64_t dim = x->dims[a], s = sp->starts[k], e = sp->ends[k], t = sp->steps[k];
        if (t == 0) return inf__kernel_error(ctx, INF_ERANGE, "steps: entry %d is 0", k);
        if (s < 0) s += dim;
        if (e < 0) e += dim;
        int64_t n;
        if (dim == 0) {
            n = 0;
        } else if (t > 0) {
            s = clamp64(s, 0, dim);
            e = clamp64(e, 0, dim);
            n = e > s ? 1 + (e - s - 1) / t : 0;
        } else {
            s = clamp64(s, 0, dim - 1);
            e = clamp64(e, -1, dim - 1);
            int64_t nt = t == INT64_MIN ? INT64_MAX : -t;
            n = s > e ? 1 + (s - e - 1) / nt : 0;
        }
        pl->start[a] = n ? s : 0;
        pl->step[a] = t;
        pl->count[a] = n;
    }
    return INF_OK;
}

static inf_status slice_copy(inf__kernel_ctx *ctx, const inf_tensor *x, const slice_plan *pl,
                             inf_tensor *y) {
    int r = x->ndim;
    int64_t in_stride[INF_MAX_DIMS];
    for (int a = r - 1; a >= 0; a--)
        in_stride[a] = a == r - 1 ? 1 : in_stride[a + 1] * x->dims[a + 1];
    /* m: innermost axis that is sliced; the axes after it are whole */
    int m = r - 1;
    while (m >= 0 && pl->start[m] == 0 && pl->step[m] == 1 && pl->count[m] == x->dims[m]) m--;
    if (m < 0) return move_copy(ctx, y, 0, x, 0, inf_tensor_numel(x));
    int64_t inner = move_prod(x->dims, m + 1, r);
    int n_it = pl->step[m] == 1 ? m : m + 1;    /* axes iterated one by one */
    int64_t block = pl->step[m] == 1 ? pl->count[m] * inner : inner;
    int64_t base = pl->step[m] == 1 ? pl->start[m] * in_stride[m] : 0;
    int64_t n_blocks = inf_tensor_numel(y) / block;
    int64_t idx[INF_MAX_DIMS] = {0};
    for (int64_t b = 0; b < n_blocks; b++) {
        int64_t off = base;
        for (int a = 0; a < n_it; a++) off += (pl->start[a] + idx[a] * pl->step[a]) * in_stride[a];
        inf_status st = move_copy(ctx, y, b * block, x, off, block);
        if (st != INF_OK) return st;
        for (int a = n_it - 1; a >= 0; a--) {   /* odometer */
            if (++idx[a] < pl->count[a]) break;
            idx[a] = 0;
        }
    }
    return INF_OK;
}

static inf_status slice_run(inf__kernel_ctx *ctx) {
    const inf_tensor *x;
    inf_status st = move_input(ctx, 0, "data", true, &x);
    if (st != INF_OK) return st;
    slice_spec sp;
    slice_plan pl;
    if ((st = slice_read(ctx, &sp)) != INF_OK) return st;
    if ((st = slice_plan_build(ctx, x, &sp, &pl)) != INF_OK) return st;
    inf_tensor *y;
    if ((st = inf__kernel_output(ctx, 0, x->dtype, x->ndim, pl.count, &y)) != INF_OK) return st;
    if (inf_tensor_numel(y) == 0) return INF_OK;
    return slice_copy(ctx, x, &pl, y);
}

const inf__op_impl op_slice = {NULL, slice_run};
