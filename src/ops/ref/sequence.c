/*
 * sequence.c -- the ONNX tensor-sequence ops, every element type (strings
 * included):
 *
 *   SequenceEmpty       opsets 11-17  `dtype` attribute (default float32).
 *   SequenceConstruct   opsets 11-17  one or more tensors of one dtype.
 *   SequenceInsert      opsets 11-17  optional int32/int64 scalar `position`
 *                       in [-n, n] (default: append).
 *   SequenceAt          opsets 11-17  `position` in [-n, n-1].
 *   SequenceErase       opsets 11-17  optional `position` in [-n, n-1]
 *                       (default: the last element).
 *   SequenceLength      opsets 11-17  int64 scalar.
 *   SplitToSequence     opsets 11-17  `axis` (default 0), `keepdims` (default
 *                       1, only used without `split`); optional input `split`:
 *                       a scalar chunk length (the last chunk may be shorter)
 *                       or a 1-D list of lengths summing to the axis length.
 *   ConcatFromSequence  opsets 11-17  `axis` (required), `new_axis` (0:
 *                       concatenate along axis, 1: stack on a new axis).
 *   SequenceMap         opset 17      runs `body` once per element; each other
 *                       input is either a sequence of the same length (its
 *                       element i is passed) or a tensor (passed every time).
 *
 * Sequences are heap values (the kernel builds them with inf_tensor_new_*
 * and hands them over with inf__kernel_output_value); every op that returns a
 * sequence returns a new deep copy, so no two values share elements.  A
 * tensor taken out of a sequence (SequenceAt, ConcatFromSequence) goes into a
 * session buffer.
 *
 * Deviation: an empty sequence read from a file has no element type; inserting
 * into a sequence with no elements adopts the tensor's type rather than
 * reporting a mismatch with the declared one.
 */
#include "ops/ref/values.h"

/* ---- argument checks ---- */

static inf_status seq_input(inf__kernel_ctx *ctx, int i, const char *name, const inf_tensor **out) {
    const inf_tensor *s = i < ctx->n_in ? ctx->in[i] : NULL;
    *out = s;
    if (!s || s->kind != INF_KIND_SEQUENCE)
        return inf__kernel_error(ctx, INF_ETYPE, "input %d (%s): expected a sequence, got a %s", i, name,
                                 value_kind_name(s));
    return INF_OK;
}

static inf_status tensor_input(inf__kernel_ctx *ctx, int i, const char *name, const inf_tensor **out) {
    const inf_tensor *t = i < ctx->n_in ? ctx->in[i] : NULL;
    *out = t;
    if (!t || t->kind != INF_KIND_TENSOR)
        return inf__kernel_error(ctx, INF_ETYPE, "input %d (%s): expected a tensor, got a %s", i, name,
                                 value_kind_name(t));
    return INF_OK;
}

/* Reads the int32/int64 scalar `position` (input i) and maps it into
 * [0, n_items + extra): extra is 1 where one past the end is allowed. */
static inf_status read_position(inf__kernel_ctx *ctx, int i, int n_items, int extra, int *out) {
    const inf_tensor *p;
    inf_status st = tensor_input(ctx, i, "position", &p);
    if (st != INF_OK) return st;
    if ((p->dtype != INF_DTYPE_I64 && p->dtype != INF_DTYPE_I32) || inf_tensor_numel(p) != 1)
        return inf__kernel_error(ctx, INF_ETYPE, "input %d (position): expected an int32 or int64 scalar", i);
    int64_t pos = p->dtype == INF_DTYPE_I64 ? *(const int64_t *)p->data : *(const int32_t *)p->data;
    int64_t hi = (int64_t)n_items - 1 + extra;
    if (pos < -(int64_t)n_items || pos > hi)
        return inf__kernel_error(ctx, INF_ERANGE, "position %lld is out of range [%d, %lld] for a sequence of %d",
                                 (long long)pos, -n_items, (long long)hi, n_items);
    *out = (int)(pos < 0 ? pos + n_items : pos);
    return INF_OK;
}

/* Hands a sequence the kernel built to output i (freed on failure). */
static inf_status output_sequence(inf__kernel_ctx *ctx, int i, inf_tensor *seq, inf_status st) {
    if (st != INF_OK) {
        inf_tensor_free(seq);
        return st == INF_ENOMEM ? inf__kernel_error(ctx, st, "out of memory building the sequence") : st;
    }
    return inf__kernel_output_value(ctx, i, seq);
}

/* Appends a deep copy of t to seq. */
static inf_status append_copy(inf_tensor *seq, const inf_tensor *t) {
    inf_tensor *copy;
    inf_status st = inf_tensor_clone(t, &copy);
    return st != INF_OK ? st : inf_tensor_sequence_append(seq, copy);
}

/* ======================================================================== */
/*  SequenceEmpty, SequenceConstruct, SequenceLength                        */
/* ======================================================================== */

static inf_status sequence_empty_init(inf__node *node, inf__arena *arena, inf_error *err) {
    inf_dtype *p = inf__op_params(arena, inf_dtype);
    if (!p) return INF_ENOMEM;
    int64_t dtype = inf__attr_int(node, "dtype", INF_DTYPE_F32);
    if (dtype <= 0 || dtype >= INF_DTYPE_COUNT || inf_dtype_size((inf_dtype)dtype) == 0)
        return inf__node_error(node, err, INF_EMODEL, "attribute dtype = %lld is not a tensor element type",
                               (long long)dtype);
    *p = (inf_dtype)dtype;
    node->params = p;
    return INF_OK;
}

static inf_status sequence_empty_run(inf__kernel_ctx *ctx) {
    const inf_dtype *dtype = ctx->node->params;
    inf_tensor *seq;
    if (inf_tensor_new_sequence(*dtype, &seq) != INF_OK)
        return inf__kernel_error(ctx, INF_ENOMEM, "out of memory");
    return inf__kernel_output_value(ctx, 0, seq);
}

static inf_status sequence_construct_run(inf__kernel_ctx *ctx) {
    if (ctx->n_in < 1) return inf__kernel_error(ctx, INF_EINVAL, "needs at least one input");
    const inf_tensor *first;
    inf_status st = tensor_input(ctx, 0, "inputs", &first);
    for (int i = 1; i < ctx->n_in && st == INF_OK; i++) {
        const inf_tensor *t;
        st = tensor_input(ctx, i, "inputs", &t);
        if (st == INF_OK && t->dtype != first->dtype)
            st = inf__kernel_error(ctx, INF_ETYPE, "input %d is %s, input 0 is %s: all must have one type", i,
                                   inf_dtype_name(t->dtype), inf_dtype_name(first->dtype));
    }
    if (st != INF_OK) return st;
    inf_tensor *seq;
    if (inf_tensor_new_sequence(first->dtype, &seq) != INF_OK)
        return inf__kernel_error(ctx, INF_ENOMEM, "out of memory");
    for (int i = 0; i < ctx->n_in && st == INF_OK; i++) st = append_copy(seq, ctx->in[i]);
    return output_sequence(ctx, 0, seq, st);
}

static inf_status sequence_length_run(inf__kernel_ctx *ctx) {
    const inf_tensor *s;
    inf_status st = seq_input(ctx, 0, "input_sequence", &s);
    if (st != INF_OK) return st;
    inf_tensor *y;
    if ((st = inf__kernel_output(ctx, 0, INF_DTYPE_I64, 0, NULL, &y)) != INF_OK) return st;
    *(int64_t *)y->data = s->n_items;
    return INF_OK;
}

/* ======================================================================== */
/*  SequenceInsert, SequenceAt, SequenceErase                               */
/* ======================================================================== */

static inf_status sequence_insert_run(inf__kernel_ctx *ctx) {
    const inf_tensor *s, *t;
    inf_status st = seq_input(ctx, 0, "input_sequence", &s);
    if (st == INF_OK) st = tensor_input(ctx, 1, "tensor", &t);
    if (st != INF_OK) return st;
    if (s->n_items > 0 && t->dtype != s->dtype)
        return inf__kernel_error(ctx, INF_ETYPE, "input tensor is %s, the sequence holds %s", inf_dtype_name(t->dtype),
                                 inf_dtype_name(s->dtype));
    int pos = s->n_items;
    if (ctx->n_in > 2 && ctx->in[2] && (st = read_position(ctx, 2, s->n_items, 1, &pos)) != INF_OK) return st;

    inf_tensor *seq;
    if (inf_tensor_new_sequence(t->dtype, &seq) != INF_OK) return inf__kernel_error(ctx, INF_ENOMEM, "out of memory");
    for (int i = 0; i <= s->n_items && st == INF_OK; i++) {
        if (i == pos) st = append_copy(seq, t);
        if (st == INF_OK && i < s->n_items) st = append_copy(seq, s->items[i]);
    }
    return output_sequence(ctx, 0, seq, st);
}

static inf_status sequence_at_run(inf__kernel_ctx *ctx) {
    const inf_tensor *s;
    inf_status st = seq_input(ctx, 0, "input_sequence", &s);
    int pos;
    if (st == INF_OK) st = read_position(ctx, 1, s->n_items, 0, &pos);
    if (st != INF_OK) return st;
    return value_output_copy(ctx, 0, s->items[pos]);
}

static inf_status sequence_erase_run(inf__kernel_ctx *ctx) {
    const inf_tensor *s;
    inf_status st = seq_input(ctx, 0, "input_sequence", &s);
    if (st != INF_OK) return st;
    if (s->n_items == 0) return inf__kernel_error(ctx, INF_ERANGE, "cannot erase from an empty sequence");
    int pos = s->n_items - 1;
    if (ctx->n_in > 1 && ctx->in[1] && (st = read_position(ctx, 1, s->n_items, 0, &pos)) != INF_OK) return st;
    inf_tensor *seq;
    if (inf_tensor_new_sequence(s->dtype, &seq) != INF_OK) return inf__kernel_error(ctx, INF_ENOMEM, "out of memory");
    for (int i = 0; i < s->n_items && st == INF_OK; i++)
        if (i != pos) st = append_copy(seq, s->items[i]);
    return output_sequence(ctx, 0, seq, st);
}

/* ======================================================================== */
/*  SplitToSequence                                                         */
/* ======================================================================== */

typedef struct split_params {
    int64_t axis;
    bool keepdims;
} split_params;

static inf_status split_init(inf__node *node, inf__arena *arena, inf_error *err) {
    split_params *p = inf__op_params(arena, split_params);
    if (!p) return INF_ENOMEM;
    p->axis = inf__attr_int(node, "axis", 0);
    int64_t keepdims = inf__attr_int(node, "keepdims", 1);
    if (keepdims != 0 && keepdims != 1)
        return inf__node_error(node, err, INF_EMODEL, "attribute keepdims must be 0 or 1, got %lld", (long long)keepdims);
    p->keepdims = keepdims == 1;
    node->params = p;
    return INF_OK;
}

/* Element k of the int32/int64 tensor t. */
static int64_t int_at(const inf_tensor *t, int64_t k) {
    return t->dtype == INF_DTYPE_I64 ? ((const int64_t *)t->data)[k] : ((const int32_t *)t->data)[k];
}

/* Appends to seq the chunk [start, start + len) of x along axis. */
static inf_status split_append_chunk(inf__kernel_ctx *ctx, inf_tensor *seq, const inf_tensor *x, int axis,
                                     int64_t start, int64_t len, bool drop_axis) {
    int64_t dims[INF_MAX_DIMS];
    int ndim = 0;
    for (int k = 0; k < x->ndim; k++) {
        if (k != axis) dims[ndim++] = x->dims[k];
        else if (!drop_axis) dims[ndim++] = len;
    }
    inf_tensor *item;
    inf_status st = inf_tensor_new(x->dtype, ndim, dims, &item);
    if (st != INF_OK) return st;
    if ((st = inf_tensor_sequence_append(seq, item)) != INF_OK) return st;
    int64_t outer = 1, inner = 1;
    for (int k = 0; k < axis; k++) outer *= x->dims[k];
    for (int k = axis + 1; k < x->ndim; k++) inner *= x->dims[k];
    for (int64_t o = 0; o < outer && st == INF_OK; o++)
        st = move_copy(ctx, item, o * len * inner, x, (o * x->dims[axis] + start) * inner, len * inner);
    return st;
}

/* Fills lens[0..*n) with the chunk lengths the `split` input asks for (lens
 * holds split's length, or dim for a scalar chunk length). */
static inf_status split_lengths(inf__kernel_ctx *ctx, const inf_tensor *split, int64_t dim, int64_t *lens,
                                int64_t *n) {
    if (split->dtype != INF_DTYPE_I64 && split->dtype != INF_DTYPE_I32)
        return inf__kernel_error(ctx, INF_ETYPE, "input split: expected int32 or int64, got %s",
                                 inf_dtype_name(split->dtype));
    if (split->ndim == 0) {
        int64_t chunk = int_at(split, 0);
        if (chunk <= 0) return inf__kernel_error(ctx, INF_ERANGE, "input split: chunk length %lld must be > 0", (long long)chunk);
        *n = dim / chunk + (dim % chunk != 0); /* dim + chunk - 1 overflowed for chunk = 2^63-1 */
        for (int64_t i = 0; i < *n; i++) lens[i] = i < *n - 1 ? chunk : dim - chunk * (*n - 1);
        return INF_OK;
    }
    if (split->ndim != 1) return inf__kernel_error(ctx, INF_ESHAPE, "input split: expected a scalar or a 1-D tensor");
    int64_t sum = 0;
    *n = split->dims[0];
    for (int64_t i = 0; i < *n; i++) {
        lens[i] = int_at(split, i);
        if (lens[i] < 0 || lens[i] > dim)
            return inf__kernel_error(ctx, INF_ERANGE, "input split: length %lld is out of range [0, %lld]",
                                     (long long)lens[i], (long long)dim);
        sum += lens[i];
    }
    if (sum != dim)
        return inf__kernel_error(ctx, INF_ESHAPE, "input split: lengths sum to %lld, the axis has %lld", (long long)sum,
                                 (long long)dim);
    return INF_OK;
}

static inf_status split_to_sequence_run(inf__kernel_ctx *ctx) {
    const split_params *p = ctx->node->params;
    const inf_tensor *x, *split = ctx->n_in > 1 ? ctx->in[1] : NULL;
    inf_status st = tensor_input(ctx, 0, "input", &x);
    if (st == INF_OK && split) st = tensor_input(ctx, 1, "split", &split);
    int axis;
    if (st == INF_OK) st = inf__normalize_axis(ctx, p->axis, x->ndim, &axis);
    if (st != INF_OK) return st;
    int64_t dim = x->dims[axis], n = dim;
    /* a list of lengths gives the chunk count; else at most dim chunks */
    int64_t max_n = (split && split->ndim == 1 ? split->dims[0] : dim) + 1;
    int64_t *lens = inf__kernel_scratch(ctx, (size_t)max_n * sizeof(int64_t));
    if (!lens) return INF_ENOMEM;
    if (split) {
        if ((st = split_lengths(ctx, split, dim, lens, &n)) != INF_OK) return st;
    } else {
        for (int64_t i = 0; i < n; i++) lens[i] = 1;
    }
    inf_tensor *seq;
    if (inf_tensor_new_sequence(x->dtype, &seq) != INF_OK) return inf__kernel_error(ctx, INF_ENOMEM, "out of memory");
    for (int64_t i = 0, start = 0; i < n && st == INF_OK; start += lens[i], i++)
        st = split_append_chunk(ctx, seq, x, axis, start, lens[i], !split && !p->keepdims);
    return output_sequence(ctx, 0, seq, st);
}

/* ======================================================================== */
/*  ConcatFromSequence                                                      */
/* ======================================================================== */

typedef struct concat_params {
    int64_t axis;
    bool new_axis;
} concat_params;

static inf_status concat_init(inf__node *node, inf__arena *arena, inf_error *err) {
    concat_params *p = inf__op_params(arena, concat_params);
    if (!p) return INF_ENOMEM;
    if (!inf__node_attr(node, "axis")) return inf__node_error(node, err, INF_EMODEL, "attribute 'axis' is required");
    p->axis = inf__attr_int(node, "axis", 0);
    int64_t new_axis = inf__attr_int(node, "new_axis", 0);
    if (new_axis != 0 && new_axis != 1)
        return inf__node_error(node, err, INF_EMODEL, "attribute new_axis must be 0 or 1, got %lld", (long long)new_axis);
    p->new_axis = new_axis == 1;
    node->params = p;
    return INF_OK;
}

/* Checks every element against the first and computes the output shape. */
static inf_status concat_shape(inf__kernel_ctx *ctx, const inf_tensor *s, int axis, bool new_axis, int *ndim,
                               int64_t *dims) {
    const inf_tensor *first = s->items[0];
    char a[160], b[160];
    *ndim = first->ndim + new_axis;
    if (*ndim > INF_MAX_DIMS) return inf__kernel_error(ctx, INF_EUNSUPPORTED, "output rank %d is too large", *ndim);
    int64_t total = 0;
    for (int i = 0; i < s->n_items; i++) {
        const inf_tensor *t = s->items[i];
        bool ok = t->kind == INF_KIND_TENSOR && t->dtype == first->dtype && t->ndim == first->ndim;
        for (int k = 0; ok && k < t->ndim; k++) ok = (k == axis && !new_axis) || t->dims[k] == first->dims[k];
        if (!ok)
            return inf__kernel_error(ctx, INF_ESHAPE, "element %d is %s %s, element 0 is %s %s: they must agree%s", i,
                                     inf_dtype_name(t->dtype), inf__shape_str(t->ndim, t->dims, a, sizeof a),
                                     inf_dtype_name(first->dtype), inf__shape_str(first->ndim, first->dims, b, sizeof b),
                                     new_axis ? "" : " on every dimension but axis");
        total += new_axis ? 1 : t->dims[axis];
    }
    if (new_axis)
        for (int k = 0, j = 0; k < *ndim; k++) dims[k] = k == axis ? total : first->dims[j++];
    else
        for (int k = 0; k < *ndim; k++) dims[k] = k == axis ? total : first->dims[k];
    return INF_OK;
}

static inf_status concat_from_sequence_run(inf__kernel_ctx *ctx) {
    const concat_params *p = ctx->node->params;
    const inf_tensor *s;
    inf_status st = seq_input(ctx, 0, "input_sequence", &s);
    if (st != INF_OK) return st;
    if (s->n_items == 0) return inf__kernel_error(ctx, INF_EINVAL, "input_sequence is empty: nothing to concatenate");
    int axis, ndim;
    int64_t dims[INF_MAX_DIMS];
    if ((st = inf__normalize_axis(ctx, p->axis, s->items[0]->ndim + p->new_axis, &axis)) != INF_OK) return st;
    if ((st = concat_shape(ctx, s, axis, p->new_axis, &ndim, dims)) != INF_OK) return st;
    inf_tensor *y;
    if ((st = inf__kernel_output(ctx, 0, s->items[0]->dtype, ndim, dims, &y)) != INF_OK) return st;
    int64_t outer = 1;
    for (int k = 0; k < axis; k++) outer *= dims[k];
    for (int64_t o = 0, di = 0; o < outer && st == INF_OK; o++)
        for (int i = 0; i < s->n_items && st == INF_OK; i++) {
            const inf_tensor *t = s->items[i];
            int64_t chunk = outer ? inf_tensor_numel(t) / outer : 0;
            st = move_copy(ctx, y, di, t, o * chunk, chunk);
            di += chunk;
        }
    return st;
}

/* ======================================================================== */
/*  SequenceMap                                                             */
/* ======================================================================== */

static inf_status sequence_map_init(inf__node *node, inf__arena *arena, inf_error *err) {
    (void)arena;
    const inf__graph *body = inf__attr_graph(node, "body");
    if (!body) return inf__node_error(node, err, INF_EMODEL, "attribute 'body' (a graph) is required");
    if (node->n_inputs < 1 || body->n_inputs != node->n_inputs)
        return inf__node_error(node, err, INF_EMODEL, "body takes %d inputs, the node has %d", body->n_inputs,
                               node->n_inputs);
    if (body->n_outputs != node->n_outputs)
        return inf__node_error(node, err, INF_EMODEL, "body has %d outputs, the node %d", body->n_outputs,
                               node->n_outputs);
    node->params = (void *)body;
    return INF_OK;
}

/* Runs the body on element i; appends a copy of each body output to outs[]. */
static inf_status sequence_map_step(inf__kernel_ctx *ctx, const inf__graph *body, int i, inf_tensor **args,
                                    inf_tensor **outs) {
    for (int j = 0; j < ctx->n_in; j++)
        args[j] = ctx->in[j]->kind == INF_KIND_SEQUENCE ? ctx->in[j]->items[i] : ctx->in[j];
    inf_tensor *const *res;
    inf_status st = inf__kernel_run_subgraph(ctx, body, ctx->n_in, args, &res);
    for (int j = 0; j < ctx->n_out && st == INF_OK; j++) {
        if (!res[j]) return inf__kernel_error(ctx, INF_EINTERNAL, "body output %d was not computed", j);
        if (outs[j]->n_items == 0 && res[j]->kind == INF_KIND_TENSOR) outs[j]->dtype = res[j]->dtype;
        if ((st = append_copy(outs[j], res[j])) != INF_OK) return inf__kernel_error(ctx, st, "out of memory");
    }
    return st;
}

static inf_status sequence_map_run(inf__kernel_ctx *ctx) {
    const inf__graph *body = ctx->node->params;
    const inf_tensor *s;
    inf_status st = seq_input(ctx, 0, "input_sequence", &s);
    for (int j = 1; j < ctx->n_in && st == INF_OK; j++) {
        const inf_tensor *t = ctx->in[j];
        if (!t) st = inf__kernel_error(ctx, INF_EINVAL, "input %d (additional_inputs) is missing", j);
        else if (t->kind == INF_KIND_SEQUENCE && t->n_items != s->n_items)
            st = inf__kernel_error(ctx, INF_ESHAPE, "input %d has %d elements, input_sequence %d", j, t->n_items,
                                   s->n_items);
    }
    if (st != INF_OK) return st;
    inf_tensor **args = inf__kernel_scratch(ctx, (size_t)(ctx->n_in + ctx->n_out) * sizeof(inf_tensor *));
    if (!args) return INF_ENOMEM;
    inf_tensor **outs = args + ctx->n_in;
    for (int j = 0; j < ctx->n_out; j++) {
        const inf__value *v = &body->values[body->outputs[j]];
        if (inf_tensor_new_sequence(v->info.dtype, &outs[j]) != INF_OK) {
            while (j-- > 0) inf_tensor_free(outs[j]);
            return inf__kernel_error(ctx, INF_ENOMEM, "out of memory");
        }
    }
    for (int i = 0; i < s->n_items && st == INF_OK; i++) st = sequence_map_step(ctx, body, i, args, outs);
    for (int j = 0; j < ctx->n_out; j++) {
        if (st == INF_OK) st = inf__kernel_output_value(ctx, j, outs[j]);
        else inf_tensor_free(outs[j]);
    }
    return st;
}

const inf__op_impl op_sequence_empty = {sequence_empty_init, sequence_empty_run};
const inf__op_impl op_sequence_construct = {NULL, sequence_construct_run};
const inf__op_impl op_sequence_length = {NULL, sequence_length_run};
const inf__op_impl op_sequence_insert = {NULL, sequence_insert_run};
const inf__op_impl op_sequence_at = {NULL, sequence_at_run};
const inf__op_impl op_sequence_erase = {NULL, sequence_erase_run};
const inf__op_impl op_split_to_sequence = {split_init, split_to_sequence_run};
const inf__op_impl op_concat_from_sequence = {concat_init, concat_from_sequence_run};
const inf__op_impl op_sequence_map = {sequence_map_init, sequence_map_run};
