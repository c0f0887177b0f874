/*
 * concat_split.c -- ONNX Concat and Split, every dtype.
 *
 *   Concat  opsets 1-26: `axis` (default 1 before opset 4, required after;
 *           negative from opset 11).  All inputs have the same dtype and
 *           rank and agree on every dimension but axis.
 *   Split   opsets 1-26: `axis` (default 0); part lengths from the `split`
 *           attribute (opsets 1-12; opset 1 also takes them as input 2) or
 *           the optional int64 input `split` (13+).  Without lengths the
 *           axis is split into n_outputs equal parts.  From opset 18
 *           exactly one of input `split` and attribute `num_outputs` (which
 *           must equal the number of outputs) is given.
 *
 * Data moves as contiguous runs: for each index of the axes before `axis`,
 * one memcpy per input (Concat) or output (Split).  Strings are copied
 * element by element with inf_tensor_set_string.
 *
 * Deviations: when the axis does not divide evenly and no lengths are given,
 * the spec before opset 18 leaves the result undefined; we follow opset 18:
 * parts of ceil(dim / n) elements, the last one smaller (an error if even
 * that leaves a part with a negative length).  Omitted Split outputs are
 * not computed.
 */
#include "ops/ref/data_move.h"

/* ======================================================================== */
/*  Concat                                                                  */
/* ======================================================================== */

static inf_status concat_init(inf__node *node, inf__arena *arena, inf_error *err) {
    (void)arena;
    if (node->opset >= 4 && !inf__node_attr(node, "axis"))
        return inf__node_error(node, err, INF_EMODEL, "attribute 'axis' is required");
    if (node->n_inputs < 1)
        return inf__node_error(node, err, INF_EMODEL, "needs at least one input");
    return INF_OK;
}

/* Checks input i against the first input; adds its axis length to *total. */
static inf_status concat_check(inf__kernel_ctx *ctx, const inf_tensor *first, int i, int axis,
                               int64_t *total) {
    const inf_tensor *x;
    inf_status st = move_input(ctx, i, "inputs", true, &x);
    if (st != INF_OK) return st;
    if (x->dtype != first->dtype)
        return inf__kernel_error(ctx, INF_ETYPE, "input %d is %s, input 0 is %s", i,
                                 inf_dtype_name(x->dtype), inf_dtype_name(first->dtype));
    char a[160], b[160];
    bool ok = x->ndim == first->ndim;
    for (int k = 0; ok && k < x->ndim; k++)
        if (k != axis && x->dims[k] != first->dims[k]) ok = false;
    if (!ok)
        return inf__kernel_error(ctx, INF_ESHAPE,
                                 "input %d has shape %s, input 0 has %s: all dimensions but "
                                 "axis %d must match",
                                 i, inf__shape_str(x->ndim, x->dims, a, sizeof a),
                                 inf__shape_str(first->ndim, first->dims, b, sizeof b), axis);
    *total += x->dims[axis];
    return INF_OK;
}

static inf_status concat_run(inf__kernel_ctx *ctx) {
    const inf_tensor *x0;
    inf_status st = move_input(ctx, 0, "inputs", true, &x0);
    if (st != INF_OK) return st;
    if (x0->ndim == 0)
        return inf__kernel_error(ctx, INF_ESHAPE, "input 0 is a scalar; Concat needs rank >= 1");
    int axis = 0;
    int64_t attr = inf__attr_int(ctx->node, "axis", 1);
    if ((st = move_axis(ctx, "attribute axis", attr, x0->ndim, &axis)) != INF_OK) return st;
    int64_t total = 0;
    for (int i = 0; i < ctx->n_in; i++)
        if ((st = concat_check(ctx, x0, i, axis, &total)) != INF_OK) return st;

    int64_t dims[INF_MAX_DIMS];
    for (int k = 0; k < x0->ndim; k++) dims[k] = x0->dims[k];
    dims[axis] = total;
    inf_tensor *y;
    if ((st = inf__kernel_output(ctx, 0, x0->dtype, x0->ndim, dims, &y)) != INF_OK) return st;
    int64_t outer = move_prod(dims, 0, axis), inner = move_prod(dims, axis + 1, x0->ndim);
    if (inf_tensor_numel(y) == 0) return INF_OK;
    int64_t off = 0;
    for (int64_t o = 0; o < outer; o++) {
        for (int i = 0; i < ctx->n_in; i++) {
            const inf_tensor *x = ctx->in[i];
            int64_t block = x->dims[axis] * inner;
            if ((st = move_copy(ctx, y, off, x, o * block, block)) != INF_OK) return st;
            off += block;
        }
    }
    return INF_OK;
}

const inf__op_impl op_concat = {concat_init, concat_run};

/* ======================================================================== */
/*  Split                                                                   */
/* ======================================================================== */

/* Where the part lengths come from: attribute, tensor, or equal parts. */
typedef struct split_lengths {
    const int64_t *attr;
    const inf_tensor *tensor;
    int64_t chunk;              /* equal parts: ceil(dim / n) */
    int64_t dim;
} split_lengths;

static int64_t split_len(const split_lengths *sl, int i, int n) {
    if (sl->attr) return sl->attr[i];
    if (sl->tensor) return inf__tensor_get_i64(sl->tensor, i);
    int64_t rest = sl->dim - (int64_t)i * sl->chunk;
    return i == n - 1 ? rest : sl->chunk;
}

static inf_status split_lengths_get(inf__kernel_ctx *ctx, int64_t dim, split_lengths *sl) {
    int n = ctx->n_out;
    memset(sl, 0, sizeof *sl);
    sl->dim = dim;
    int n_attr = 0;
    const char *what = "attribute split";
    if (ctx->node->opset < 13) sl->attr = inf__attr_ints(ctx->node, "split", &n_attr);
    int64_t count = n_attr;
    if (!sl->attr && (ctx->node->opset >= 13 || ctx->node->opset == 1)) {
        const inf_tensor *t;
        inf_status st = move_input(ctx, 1, "split", false, &t);
        if (st != INF_OK) return st;
        if (t) {
            if (t->dtype != INF_DTYPE_I64)
                return inf__kernel_error(ctx, INF_ETYPE, "input split: expected int64, got %s",
                                         inf_dtype_name(t->dtype));
            if (t->ndim != 1)
                return inf__kernel_error(ctx, INF_ESHAPE, "input split: expected 1-D, got rank %d",
                                         t->ndim);
            sl->tensor = t;
            count = inf_tensor_numel(t);
            what = "input split";
        }
    }
    if (ctx->node->opset >= 18) { /* exactly one of input split and num_outputs (= the outputs) */
        const inf__attr *num = inf__node_attr(ctx->node, "num_outputs");
        if (num && sl->tensor)
            return inf__kernel_error(ctx, INF_EMODEL, "input split and attribute num_outputs are both given");
        if (!num && !sl->tensor)
            return inf__kernel_error(ctx, INF_EMODEL, "opset %d needs input split or attribute num_outputs",
                                     ctx->node->opset);
        if (num && num->i != n)
            return inf__kernel_error(ctx, INF_EMODEL, "attribute num_outputs is %lld, the node has %d outputs",
                                     (long long)num->i, n);
    }
    if (sl->attr || sl->tensor) {
        if (count != n)
            return inf__kernel_error(ctx, INF_ESHAPE, "%s has %lld entries, the node has %d outputs",
                                     what, (long long)count, n);
        int64_t sum = 0;
        for (int i = 0; i < n; i++) {
            int64_t len = split_len(sl, i, n);
            if (len < 0 || len > dim)
                return inf__kernel_error(ctx, INF_ERANGE, "%s: entry %d is %lld, outside [0, %lld]",
                                         what, i, (long long)len, (long long)dim);
            sum += len;
        }
        if (sum != dim)
            return inf__kernel_error(ctx, INF_ESHAPE,
                                     "%s sums to %lld, the split axis has length %lld", what,
                                     (long long)sum, (long long)dim);
        return INF_OK;
    }
    sl->chunk = (dim + n - 1) / n;
    if (dim - (int64_t)(n - 1) * sl->chunk < 0)
        return inf__kernel_error(ctx, INF_ESHAPE,
                                 "cannot split an axis of length %lld into %d parts", (long long)dim,
                                 n);
    return INF_OK;
}

static inf_status split_run(inf__kernel_ctx *ctx) {
    const inf_tensor *x;
    inf_status st = move_input(ctx, 0, "input", true, &x);
    if (st != INF_OK) return st;
    if (ctx->n_out < 1) return inf__kernel_error(ctx, INF_EMODEL, "Split has no outputs");
    int axis = 0;
    if ((st = move_axis(ctx, "attribute axis", inf__attr_int(ctx->node, "axis", 0), x->ndim,
                        &axis)) != INF_OK)
        return st;
    split_lengths sl;
    if ((st = split_lengths_get(ctx, x->dims[axis], &sl)) != INF_OK) return st;

    int64_t dims[INF_MAX_DIMS];
    for (int k = 0; k < x->ndim; k++) dims[k] = x->dims[k];
    int64_t outer = move_prod(dims, 0, axis), inner = move_prod(dims, axis + 1, x->ndim);
    int64_t in_block = x->dims[axis] * inner, start = 0;
    for (int i = 0; i < ctx->n_out; i++) {
        int64_t len = split_len(&sl, i, ctx->n_out);
        int64_t first = start;
        start += len;
        if (ctx->node->outputs[i] < 0) continue;   /* omitted output */
        dims[axis] = len;
        inf_tensor *y;
        if ((st = inf__kernel_output(ctx, i, x->dtype, x->ndim, dims, &y)) != INF_OK) return st;
        int64_t block = len * inner;
        for (int64_t o = 0; o < outer; o++)
            if ((st = move_copy(ctx, y, o * block, x, o * in_block + first * inner, block)) != INF_OK)
                return st;
    }
    return INF_OK;
}

const inf__op_impl op_split = {NULL, split_run};
