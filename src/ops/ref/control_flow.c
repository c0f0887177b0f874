/*
 * control_flow.c -- the ONNX ops that run subgraphs, any value type:
 *
 *   If    opsets 1-17  bool scalar `cond` picks then_branch or else_branch;
 *         the outputs are copies of the branch's outputs (tensors,
 *         sequences, optionals).
 *   Loop  opsets 1-17  inputs M (int64 scalar, optional), cond (bool scalar,
 *         optional) and N loop-carried values (tensors, sequences or
 *         optionals, opsets 13/16); body(iteration, cond, carried...) ->
 *         (cond, carried..., K scan outputs).  Runs while i < M and cond
 *         (each test only when its input is given).  Outputs: the final
 *         carried values, then each scan output stacked over the iterations
 *         on a new axis 0.
 *   Scan  opset 8      input 0 is the optional sequence_lens, every other
 *         input has a leading batch axis and scans its axis 1; `directions`.
 *         opsets 9-17  no batch axis; scan_input_axes/directions and
 *         scan_output_axes/directions (negative axes from opset 11).
 *         body(states..., slices...) -> (states..., scan outputs...).
 *
 * Subgraphs run through inf__kernel_run_subgraph; what the body returns
 * lives in the body's frame only until its next run, and may alias the
 * inputs we passed (a body output can be a body input, or an Identity or
 * Reshape view of one), an outer-scope value or a constant.  So every value
 * kept across iterations is copied out first:
 *   - Loop keeps each carried value in the node's own output slot (a session
 *     buffer for a tensor, a heap value otherwise), so its size may change
 *     from one iteration to the next.  A body output that is a view of the
 *     very value it replaces only takes the new shape; a body output that
 *     aliases another carried value about to be replaced is first cloned to
 *     the heap (rare: a body that permutes its carried values).
 *   - Scan states keep their shape (it is checked), so they are
 *     double-buffered in scratch memory: a warm Scan allocates nothing.
 *   - The scan outputs of Scan have a known length and are written into the
 *     node's outputs directly.  Those of Loop too when M is given (M rows are
 *     allocated, the unused ones dropped from the shape if cond ends the loop
 *     early), up to LOOP_PREALLOC_MAX_BYTES; otherwise they grow by doubling
 *     in heap tensors that become the outputs.
 *
 * Deviations: Scan's state variables must be numeric or bool tensors whose
 * shape and type the body keeps (string states are rejected); with opset 8,
 * sequence_lens must equal the full sequence length for every batch entry
 * (shorter sequences are not supported).  When a loop runs zero times, the
 * scan outputs take the type and shape the body declares (unknown
 * dimensions become 0; float32 [0] if nothing is declared).
 */
#include "ops/ref/values.h"

/* Returns the graph attribute `name`, checking it exists. */
static inf_status need_graph(inf__node *node, const char *name, inf_error *err, const inf__graph **out) {
    *out = inf__attr_graph(node, name);
    if (!*out) return inf__node_error(node, err, INF_EMODEL, "attribute '%s' (a graph) is required", name);
    return INF_OK;
}

/* Reads a one-element tensor of dtype `want` as int64 (bool: 0/1). */
static inf_status read_scalar(inf__kernel_ctx *ctx, int i, const char *name, inf_dtype want, int64_t *out) {
    const inf_tensor *t = ctx->in[i];
    if (t->kind != INF_KIND_TENSOR || t->dtype != want || inf_tensor_numel(t) != 1)
        return inf__kernel_error(ctx, INF_ETYPE, "input %d (%s): expected a %s scalar", i, name, inf_dtype_name(want));
    *out = inf__tensor_get_i64(t, 0);
    return INF_OK;
}

/* Output i for a scan output of a loop that ran zero times: body output v's
 * declared type and shape, after the n_lead dimensions `lead` (0 in place of
 * unknown dimensions). */
static inf_status empty_scan_output(inf__kernel_ctx *ctx, int i, const inf__value *v, int n_lead, const int64_t *lead) {
    int64_t dims[INF_MAX_DIMS];
    int ndim = 0;
    for (int k = 0; k < n_lead; k++) dims[ndim++] = lead[k];
    for (int k = 0; v->has_info && k < v->info.ndim && ndim < INF_MAX_DIMS; k++)
        dims[ndim++] = v->info.dims[k] < 0 ? 0 : v->info.dims[k];
    inf_dtype dtype = v->has_info && inf_dtype_size(v->info.dtype) ? v->info.dtype : INF_DTYPE_F32;
    return inf__kernel_output(ctx, i, dtype, ndim, dims, NULL);
}

/* ======================================================================== */
/*  If                                                                      */
/* ======================================================================== */

typedef struct if_params {
    const inf__graph *then_branch, *else_branch;
} if_params;

static inf_status if_init(inf__node *node, inf__arena *arena, inf_error *err) {
    if_params *p = inf__op_params(arena, if_params);
    if (!p) return INF_ENOMEM;
    inf_status st = need_graph(node, "then_branch", err, &p->then_branch);
    if (st == INF_OK) st = need_graph(node, "else_branch", err, &p->else_branch);
    if (st != INF_OK) return st;
    const inf__graph *branches[2] = {p->then_branch, p->else_branch};
    for (int b = 0; b < 2; b++)
        if (branches[b]->n_outputs < node->n_outputs || branches[b]->n_inputs != 0)
            return inf__node_error(node, err, INF_EMODEL, "%s has %d inputs and %d outputs; expected 0 and %d",
                                   b ? "else_branch" : "then_branch", branches[b]->n_inputs, branches[b]->n_outputs,
                                   node->n_outputs);
    node->params = p;
    return INF_OK;
}

static inf_status if_run(inf__kernel_ctx *ctx) {
    const if_params *p = ctx->node->params;
    if (ctx->n_in < 1 || !ctx->in[0]) return inf__kernel_error(ctx, INF_EINVAL, "input 0 (cond) is missing");
    int64_t cond = 0;
    inf_status st = read_scalar(ctx, 0, "cond", INF_DTYPE_BOOL, &cond);
    if (st != INF_OK) return st;
    inf_tensor *const *res;
    st = inf__kernel_run_subgraph(ctx, cond ? p->then_branch : p->else_branch, 0, NULL, &res);
    for (int i = 0; i < ctx->n_out && st == INF_OK; i++)
        if (ctx->node->outputs[i] >= 0) st = value_output_copy(ctx, i, res[i]);
    return st;
}

/* ======================================================================== */
/*  Loop                                                                    */
/* ======================================================================== */

typedef struct loop_params {
    const inf__graph *body;
    int n_carried, n_scan;
} loop_params;

static inf_status loop_init(inf__node *node, inf__arena *arena, inf_error *err) {
    loop_params *p = inf__op_params(arena, loop_params);
    if (!p) return INF_ENOMEM;
    inf_status st = need_graph(node, "body", err, &p->body);
    if (st != INF_OK) return st;
    p->n_carried = node->n_inputs - 2;
    p->n_scan = p->body->n_outputs - 1 - p->n_carried;
    if (p->n_carried < 0 || p->body->n_inputs != node->n_inputs || p->n_scan < 0)
        return inf__node_error(node, err, INF_EMODEL,
                               "the node has %d inputs (M, cond, %d carried values), so the body needs %d inputs "
                               "and at least %d outputs; it has %d and %d",
                               node->n_inputs, p->n_carried, node->n_inputs, p->n_carried + 1, p->body->n_inputs,
                               p->body->n_outputs);
    if (node->n_outputs < p->n_carried || node->n_outputs > p->n_carried + p->n_scan)
        return inf__node_error(node, err, INF_EMODEL, "has %d outputs; expected %d carried values and up to %d scan outputs",
                               node->n_outputs, p->n_carried, p->n_scan);
    node->params = p;
    return INF_OK;
}

/* What one Loop run keeps between iterations (in one scratch block). */
typedef struct loop_state {
    inf_tensor **args;   /* body inputs: iteration number, cond, carried values */
    inf_tensor **temp;   /* per carried value: its next value, cloned before outputs change */
    inf_tensor **scan;   /* tensors stacking the scan outputs (dims[0] = rows allocated) */
    bool *owned;         /* carried value k lives in output k (else it is input 2 + k) */
    bool *unchanged;     /* per carried value: the body returned it (or a view of it) */
    bool *scan_pooled;   /* scan[j] is output n_carried + j itself (else a heap tensor) */
    int64_t trip;        /* M, or -1 when not given */
    int64_t n_iter;
} loop_state;

/* Scan outputs of a loop with a trip count M are allocated for M rows at
 * once in a session buffer when that takes at most this many bytes; other
 * ones grow on the heap. */
#define LOOP_PREALLOC_MAX_BYTES ((int64_t)1 << 28)

static inf_status loop_state_init(inf__kernel_ctx *ctx, const loop_params *p, loop_state *ls) {
    int nc = p->n_carried, ns = p->n_scan;
    size_t n_ptrs = (size_t)(2 + nc) + (size_t)nc + (size_t)ns;
    char *mem = inf__kernel_scratch(ctx, n_ptrs * sizeof(inf_tensor *) + 2 * (size_t)nc + (size_t)ns + 1);
    if (!mem) return INF_ENOMEM;
    ls->args = (inf_tensor **)mem;
    ls->temp = ls->args + 2 + nc;
    ls->scan = ls->temp + nc;
    ls->owned = (bool *)(ls->scan + ns);
    ls->unchanged = ls->owned + nc;
    ls->scan_pooled = ls->unchanged + nc;
    for (int k = 0; k < nc; k++) {
        ls->args[2 + k] = ctx->in[2 + k];
        ls->temp[k] = NULL;
        ls->owned[k] = false;
    }
    for (int j = 0; j < ns; j++) {
        ls->scan[j] = NULL;
        ls->scan_pooled[j] = false;
    }
    ls->n_iter = 0;
    ls->trip = -1;
    return INF_OK;
}

static void loop_state_free(const loop_params *p, loop_state *ls) {
    for (int k = 0; k < p->n_carried; k++) inf_tensor_free(ls->temp[k]);
    for (int j = 0; j < p->n_scan; j++)
        if (!ls->scan_pooled[j]) inf_tensor_free(ls->scan[j]);
}

/* Does value a read memory that value b owns? */
static bool value_overlaps(const inf_tensor *a, const inf_tensor *b) {
    if (a == b) return true;
    if (a->kind != INF_KIND_TENSOR || b->kind != INF_KIND_TENSOR) return false;
    const char *pa = a->data, *pb = b->data;
    size_t na = inf_tensor_nbytes(a), nb = inf_tensor_nbytes(b);
    return na && nb && pa < pb + nb && pb < pa + na;
}

/* Is src the current value of carried k itself (a view of it)? */
static bool carried_unchanged(const inf__kernel_ctx *ctx, const loop_state *ls, int k, const inf_tensor *src) {
    const inf_tensor *cur = ls->owned[k] ? ctx->out[k] : NULL;
    if (!cur) return false;
    if (src == cur) return true;
    return src->kind == INF_KIND_TENSOR && cur->kind == INF_KIND_TENSOR && src->dtype == cur->dtype &&
           src->data == cur->data && inf_tensor_numel(src) == inf_tensor_numel(cur);
}

/* Makes the body's carried outputs res[0..n_carried) the new carried values. */
static inf_status loop_update_carried(inf__kernel_ctx *ctx, const loop_params *p, loop_state *ls,
                                      inf_tensor *const *res) {
    int nc = p->n_carried;
    for (int k = 0; k < nc; k++)
        if (!res[k]) return inf__kernel_error(ctx, INF_EINVAL, "body output %d (carried value %d) was not computed", 1 + k, k);
    /* pass 1: decide, and clone what the second pass would otherwise free
     * before reading it (nothing is released until pass 2) */
    for (int k = 0; k < nc; k++) ls->unchanged[k] = carried_unchanged(ctx, ls, k, res[k]);
    for (int k = 0; k < nc; k++) {
        const inf_tensor *src = res[k];
        if (ls->unchanged[k]) continue;
        bool hazard = src->kind != INF_KIND_TENSOR; /* heap values are cloned anyway */
        for (int j = 0; j < nc && !hazard; j++)
            hazard = ls->owned[j] && !ls->unchanged[j] && value_overlaps(src, ctx->out[j]);
        if (hazard && inf_tensor_clone(src, &ls->temp[k]) != INF_OK)
            return inf__kernel_error(ctx, INF_ENOMEM, "out of memory copying carried value %d", k);
    }
    /* pass 2: replace */
    for (int k = 0; k < nc; k++) {
        const inf_tensor *src = res[k];
        inf_status st = INF_OK;
        if (ls->unchanged[k]) {
            if (src->kind == INF_KIND_TENSOR) inf__tensor_set_shape(ctx->out[k], src->dtype, src->ndim, src->dims);
        } else if (ls->temp[k]) {
            st = inf__kernel_output_value(ctx, k, ls->temp[k]);
            ls->temp[k] = NULL;
        } else {
            st = value_output_copy(ctx, k, src);
        }
        if (st != INF_OK) return st;
        ls->owned[k] = true;
        ls->args[2 + k] = ctx->out[k];
    }
    return INF_OK;
}

/* First row of scan output j: output n_carried + j itself when the trip
 * count is known and small enough, else a heap tensor of 8 rows. */
static inf_status loop_scan_start(inf__kernel_ctx *ctx, const loop_params *p, loop_state *ls, int j,
                                  const inf_tensor *src) {
    int64_t dims[INF_MAX_DIMS];
    memcpy(dims + 1, src->dims, (size_t)src->ndim * sizeof(int64_t));
    int64_t row_bytes = (int64_t)inf_tensor_nbytes(src);
    if (ls->trip >= 0 && (row_bytes == 0 || ls->trip <= LOOP_PREALLOC_MAX_BYTES / row_bytes)) {
        dims[0] = ls->trip;
        inf_status st = inf__kernel_output(ctx, p->n_carried + j, src->dtype, src->ndim + 1, dims, &ls->scan[j]);
        ls->scan_pooled[j] = st == INF_OK;
        return st;
    }
    dims[0] = 8;
    if (inf_tensor_new(src->dtype, src->ndim + 1, dims, &ls->scan[j]) != INF_OK)
        return inf__kernel_error(ctx, INF_ENOMEM, "out of memory stacking scan output %d", j);
    return INF_OK;
}

/* Doubles the rows of the heap tensor *acc, keeping the first `rows`. */
static inf_status loop_scan_grow(inf__kernel_ctx *ctx, int j, inf_tensor **acc, int64_t rows) {
    inf_tensor *cur = *acc, *grown;
    int64_t dims[INF_MAX_DIMS];
    memcpy(dims, cur->dims, (size_t)cur->ndim * sizeof(int64_t));
    dims[0] *= 2;
    if (inf_tensor_new(cur->dtype, cur->ndim, dims, &grown) != INF_OK)
        return inf__kernel_error(ctx, INF_ENOMEM, "out of memory stacking scan output %d", j);
    inf_status st = move_copy(ctx, grown, 0, cur, 0, rows * (inf_tensor_numel(cur) / cur->dims[0]));
    if (st != INF_OK) {
        inf_tensor_free(grown);
        return st;
    }
    inf_tensor_free(cur);
    *acc = grown;
    return INF_OK;
}

/* Stores body scan output src as row `row` of scan output j. */
static inf_status loop_append_scan(inf__kernel_ctx *ctx, const loop_params *p, loop_state *ls, int j,
                                   const inf_tensor *src, int64_t row) {
    char a[160], b[160];
    if (p->n_carried + j >= ctx->n_out) return INF_OK; /* not among the node's outputs */
    if (!src || src->kind != INF_KIND_TENSOR)
        return inf__kernel_error(ctx, INF_ETYPE, "scan output %d: the body returned a %s, expected a tensor", j,
                                 value_kind_name(src));
    if (src->ndim + 1 > INF_MAX_DIMS) return inf__kernel_error(ctx, INF_EUNSUPPORTED, "scan output %d: rank too large", j);
    inf_status st = ls->scan[j] ? INF_OK : loop_scan_start(ctx, p, ls, j, src);
    if (st != INF_OK) return st;
    const inf_tensor *cur = ls->scan[j];
    if (cur->dtype != src->dtype || !inf__shape_equal(cur->ndim - 1, cur->dims + 1, src->ndim, src->dims))
        return inf__kernel_error(ctx, INF_ESHAPE, "scan output %d: iteration %lld gave %s %s, earlier ones %s %s", j,
                                 (long long)row, inf_dtype_name(src->dtype), inf__shape_str(src->ndim, src->dims, a, sizeof a),
                                 inf_dtype_name(cur->dtype), inf__shape_str(cur->ndim - 1, cur->dims + 1, b, sizeof b));
    if (row == cur->dims[0] && (st = loop_scan_grow(ctx, j, &ls->scan[j], row)) != INF_OK) return st;
    int64_t row_numel = inf_tensor_numel(src);
    return move_copy(ctx, ls->scan[j], row * row_numel, src, 0, row_numel);
}

/* Runs iteration i; *cond receives the body's condition (when cond_used). */
static inf_status loop_iteration(inf__kernel_ctx *ctx, const loop_params *p, loop_state *ls, int64_t i, bool cond_used,
                                 bool *cond) {
    int64_t iter_value = i;
    uint8_t cond_value = 1;
    inf_tensor iter_t, cond_t;
    inf_tensor_init_view(&iter_t, INF_DTYPE_I64, 0, NULL, &iter_value);
    inf_tensor_init_view(&cond_t, INF_DTYPE_BOOL, 0, NULL, &cond_value);
    ls->args[0] = &iter_t;
    ls->args[1] = &cond_t;
    inf_tensor *const *res;
    inf_status st = inf__kernel_run_subgraph(ctx, p->body, 2 + p->n_carried, ls->args, &res);
    if (st != INF_OK) return st;
    const inf_tensor *c = res[0];
    if (!c || c->kind != INF_KIND_TENSOR || c->dtype != INF_DTYPE_BOOL || inf_tensor_numel(c) != 1)
        return inf__kernel_error(ctx, INF_ETYPE, "body output 0 (cond) must be a bool scalar");
    if (cond_used) *cond = *(const uint8_t *)c->data != 0;
    for (int j = 0; j < p->n_scan && st == INF_OK; j++)
        st = loop_append_scan(ctx, p, ls, j, res[1 + p->n_carried + j], i);
    if (st == INF_OK) st = loop_update_carried(ctx, p, ls, res + 1);
    return st;
}

/* Sets the outputs: carried values never replaced, and the scan outputs. */
static inf_status loop_finish(inf__kernel_ctx *ctx, const loop_params *p, loop_state *ls) {
    inf_status st = INF_OK;
    for (int k = 0; k < p->n_carried && st == INF_OK; k++) {
        const inf_tensor *x = ctx->in[2 + k];
        if (ls->owned[k]) continue;
        st = x && x->kind == INF_KIND_TENSOR ? inf__kernel_output_alias(ctx, k, 2 + k, x->ndim, x->dims, NULL)
                                             : value_output_copy(ctx, k, x);
    }
    for (int j = 0; j < p->n_scan && st == INF_OK; j++) {
        int out = p->n_carried + j;
        if (out >= ctx->n_out) break;
        if (!ls->scan[j]) {
            int64_t zero = 0;
            st = empty_scan_output(ctx, out, &p->body->values[p->body->outputs[1 + out]], 1, &zero);
            continue;
        }
        ls->scan[j]->dims[0] = ls->n_iter; /* rows past n_iter were allocated but not used */
        if (ls->scan_pooled[j]) continue;
        st = inf__kernel_output_value(ctx, out, ls->scan[j]);
        ls->scan[j] = NULL;
    }
    return st;
}

static inf_status loop_run(inf__kernel_ctx *ctx) {
    const loop_params *p = ctx->node->params;
    int64_t trip = INT64_MAX, cond_in = 1;
    inf_status st = INF_OK;
    if (ctx->in[0]) st = read_scalar(ctx, 0, "M", INF_DTYPE_I64, &trip);
    if (st == INF_OK && ctx->in[1]) st = read_scalar(ctx, 1, "cond", INF_DTYPE_BOOL, &cond_in);
    if (st != INF_OK) return st;
    loop_state ls;
    if ((st = loop_state_init(ctx, p, &ls)) != INF_OK) return st;
    if (ctx->in[0]) ls.trip = trip < 0 ? 0 : trip;
    bool cond = cond_in != 0;
    for (int64_t i = 0; i < trip && cond && st == INF_OK; i++) {
        st = loop_iteration(ctx, p, &ls, i, ctx->in[1] != NULL, &cond);
        ls.n_iter = i + 1;
    }
    if (st == INF_OK) st = loop_finish(ctx, p, &ls);
    loop_state_free(p, &ls);
    return st;
}

/* ======================================================================== */
/*  Scan                                                                    */
/* ======================================================================== */

typedef struct scan_params {
    const inf__graph *body;
    bool batched;            /* opset 8: leading batch axis; input 0 is sequence_lens */
    int first;               /* index of the first state input (1 when batched) */
    int n_state, n_scan_in, n_scan_out;
    const int64_t *in_axes, *in_dirs, *out_axes, *out_dirs; /* NULL: all 0 */
} scan_params;

/* Reads the INTS attribute `name` of `want` 0/1 flags or axes (NULL if absent). */
static inf_status scan_attr_ints(inf__node *node, const char *name, int want, bool flags, inf_error *err,
                                 const int64_t **out) {
    int n;
    *out = inf__attr_ints(node, name, &n);
    if (!*out) return INF_OK;
    if (n != want)
        return inf__node_error(node, err, INF_EMODEL, "attribute %s has %d values, expected %d", name, n, want);
    for (int k = 0; flags && k < n; k++)
        if ((*out)[k] != 0 && (*out)[k] != 1)
            return inf__node_error(node, err, INF_EMODEL, "attribute %s: values must be 0 or 1", name);
    return INF_OK;
}

static inf_status scan_init(inf__node *node, inf__arena *arena, inf_error *err) {
    scan_params *p = inf__op_params(arena, scan_params);
    if (!p) return INF_ENOMEM;
    inf_status st = need_graph(node, "body", err, &p->body);
    if (st != INF_OK) return st;
    int64_t n_scan_in = inf__attr_int(node, "num_scan_inputs", 0);
    p->batched = node->opset < 9;
    p->first = p->batched ? 1 : 0;
    if (n_scan_in < 1 || n_scan_in > node->n_inputs - p->first)
        return inf__node_error(node, err, INF_EMODEL, "attribute num_scan_inputs = %lld is out of range [1, %d]",
                               (long long)n_scan_in, node->n_inputs - p->first);
    p->n_scan_in = (int)n_scan_in;
    p->n_state = node->n_inputs - p->first - p->n_scan_in;
    p->n_scan_out = p->body->n_outputs - p->n_state;
    if (p->body->n_inputs != p->n_state + p->n_scan_in || p->n_scan_out < 0)
        return inf__node_error(node, err, INF_EMODEL,
                               "%d states and %d scan inputs need a body of %d inputs and at least %d outputs; it has %d and %d",
                               p->n_state, p->n_scan_in, p->n_state + p->n_scan_in, p->n_state, p->body->n_inputs,
                               p->body->n_outputs);
    if (node->n_outputs < p->n_state || node->n_outputs > p->n_state + p->n_scan_out)
        return inf__node_error(node, err, INF_EMODEL, "has %d outputs; expected %d states and up to %d scan outputs",
                               node->n_outputs, p->n_state, p->n_scan_out);
    if (p->batched) {
        st = scan_attr_ints(node, "directions", p->n_scan_in, true, err, &p->in_dirs);
    } else {
        st = scan_attr_ints(node, "scan_input_directions", p->n_scan_in, true, err, &p->in_dirs);
        if (st == INF_OK) st = scan_attr_ints(node, "scan_input_axes", p->n_scan_in, false, err, &p->in_axes);
        if (st == INF_OK) st = scan_attr_ints(node, "scan_output_directions", p->n_scan_out, true, err, &p->out_dirs);
        if (st == INF_OK) st = scan_attr_ints(node, "scan_output_axes", p->n_scan_out, false, err, &p->out_axes);
    }
    if (st != INF_OK) return st;
    node->params = p;
    return INF_OK;
}

/* One Scan run: views of the current batch entry, buffers, positions. */
typedef struct scan_state {
    int64_t batch;           /* B (1 without a batch axis) */
    int64_t len;             /* sequence length L */
    inf_tensor **args;       /* body inputs: states, then slices */
    inf_tensor *init;        /* n_state: initial states of the current batch entry */
    inf_tensor *state;       /* n_state: current states (views of buf) */
    char **buf;              /* n_state x 2 state buffers */
    int *cur;                /* n_state: which of the two buffers is current */
    inf_tensor *seq;         /* n_scan_in: scan inputs of the current batch entry */
    inf_tensor *slice;       /* n_scan_in: the current iteration's slices */
    int *in_axis;            /* n_scan_in: scanned axis of seq[m] */
    char *gather;            /* slices of inputs not scanned along axis 0 */
    bool *out_ready;         /* n_scan_out: output allocated */
} scan_state;

/* View of entry b of t along its batch axis (t itself without one). */
static void batch_view(const scan_params *p, const inf_tensor *t, int64_t b, inf_tensor *view) {
    if (!p->batched) {
        inf_tensor_init_view(view, t->dtype, t->ndim, t->dims, t->data);
        return;
    }
    int64_t entry = t->dims[0] ? inf_tensor_numel(t) / t->dims[0] : 0;
    inf_tensor_init_view(view, t->dtype, t->ndim - 1, t->dims + 1,
                         (char *)t->data + (size_t)(b * entry) * inf_dtype_size(t->dtype));
}

/* Checks the inputs; finds B and L. */
static inf_status scan_check_inputs(inf__kernel_ctx *ctx, const scan_params *p, int64_t *batch, int64_t *len) {
    int lead = p->batched;
    for (int i = p->first; i < ctx->n_in; i++) {
        const inf_tensor *t = ctx->in[i];
        bool is_state = i < p->first + p->n_state;
        if (!t || t->kind != INF_KIND_TENSOR || t->ndim < lead + !is_state)
            return inf__kernel_error(ctx, INF_ETYPE, "input %d: expected a tensor of rank >= %d, got a %s", i,
                                     lead + !is_state, value_kind_name(t));
        if (is_state && t->dtype == INF_DTYPE_STRING)
            return inf__kernel_error(ctx, INF_EUNSUPPORTED, "input %d: string state variables are not supported", i);
        if (p->batched && t->dims[0] != ctx->in[p->first]->dims[0])
            return inf__kernel_error(ctx, INF_ESHAPE, "input %d has batch size %lld, input %d %lld", i,
                                     (long long)t->dims[0], p->first, (long long)ctx->in[p->first]->dims[0]);
    }
    *batch = p->batched ? ctx->in[p->first]->dims[0] : 1;
    *len = -1;
    for (int m = 0; m < p->n_scan_in; m++) {
        const inf_tensor *t = ctx->in[p->first + p->n_state + m];
        int axis;
        inf_status st = inf__normalize_axis(ctx, p->in_axes ? p->in_axes[m] : 0, t->ndim - lead, &axis);
        if (st != INF_OK) return st;
        int64_t l = t->dims[lead + axis];
        if (*len >= 0 && l != *len)
            return inf__kernel_error(ctx, INF_ESHAPE, "scan input %d has sequence length %lld, scan input 0 %lld", m,
                                     (long long)l, (long long)*len);
        *len = l;
    }
    const inf_tensor *lens = p->batched && ctx->in[0] ? ctx->in[0] : NULL;
    for (int64_t b = 0; lens && b < *batch; b++) {
        if (lens->kind != INF_KIND_TENSOR || (lens->dtype != INF_DTYPE_I32 && lens->dtype != INF_DTYPE_I64) ||
            inf_tensor_numel(lens) != *batch)
            return inf__kernel_error(ctx, INF_ETYPE, "input 0 (sequence_lens): expected %lld int32 values", (long long)*batch);
        if (inf__tensor_get_i64(lens, b) != *len)
            return inf__kernel_error(ctx, INF_EUNSUPPORTED, "sequence_lens[%lld] = %lld: only full-length sequences (%lld) are supported",
                                     (long long)b, (long long)inf__tensor_get_i64(lens, b), (long long)*len);
    }
    return INF_OK;
}

static size_t align64(size_t n) { return (n + 63) & ~(size_t)63; }

/* Carves the bookkeeping and the buffers out of scratch memory. */
static inf_status scan_state_init(inf__kernel_ctx *ctx, const scan_params *p, scan_state *ss) {
    int ns = p->n_state, nm = p->n_scan_in, no = p->n_scan_out;
    size_t size = align64((size_t)(ns + nm) * sizeof(inf_tensor *)) + align64((size_t)(2 * ns + 2 * nm) * sizeof(inf_tensor)) +
                  align64((size_t)(2 * ns) * sizeof(char *)) + align64((size_t)(ns + nm) * sizeof(int)) + (size_t)no + 1;
    char *mem = inf__kernel_scratch(ctx, size);
    if (!mem) return INF_ENOMEM;
    ss->args = (inf_tensor **)mem;
    mem += align64((size_t)(ns + nm) * sizeof(inf_tensor *));
    ss->init = (inf_tensor *)mem;
    ss->state = ss->init + ns;
    ss->seq = ss->state + ns;
    ss->slice = ss->seq + nm;
    mem += align64((size_t)(2 * ns + 2 * nm) * sizeof(inf_tensor));
    ss->buf = (char **)mem;
    mem += align64((size_t)(2 * ns) * sizeof(char *));
    ss->cur = (int *)mem;
    ss->in_axis = ss->cur + ns;
    mem += align64((size_t)(ns + nm) * sizeof(int));
    ss->out_ready = (bool *)mem;
    for (int j = 0; j < no; j++) ss->out_ready[j] = false;

    /* state buffers: two per state, one batch entry each */
    size_t state_bytes = 1, gather_bytes = 1;
    for (int s = 0; s < ns; s++) {
        batch_view(p, ctx->in[p->first + s], 0, &ss->init[s]);
        state_bytes += 2 * align64(inf_tensor_nbytes(&ss->init[s]));
    }
    for (int m = 0; m < nm; m++) {
        const inf_tensor *t = ctx->in[p->first + ns + m];
        batch_view(p, t, 0, &ss->seq[m]);
        inf__normalize_axis(ctx, p->in_axes ? p->in_axes[m] : 0, ss->seq[m].ndim, &ss->in_axis[m]);
        if (ss->in_axis[m] != 0 && ss->len > 0)
            gather_bytes += align64(inf_tensor_nbytes(&ss->seq[m]) / (size_t)ss->len);
    }
    char *sbuf = inf__kernel_scratch(ctx, state_bytes);
    ss->gather = inf__kernel_scratch(ctx, gather_bytes);
    if (!sbuf || !ss->gather) return INF_ENOMEM;
    for (int s = 0; s < ns; s++) {
        size_t bytes = align64(inf_tensor_nbytes(&ss->init[s]));
        ss->buf[2 * s] = sbuf;
        ss->buf[2 * s + 1] = sbuf + bytes;
        sbuf += 2 * bytes;
    }
    return INF_OK;
}

/* Points slice m at step idx of seq[m] (copying it out when not on axis 0). */
static void scan_make_slice(scan_state *ss, int m, int64_t idx, char **gather) {
    const inf_tensor *t = &ss->seq[m];
    int axis = ss->in_axis[m];
    int64_t dims[INF_MAX_DIMS];
    int ndim = 0;
    for (int k = 0; k < t->ndim; k++)
        if (k != axis) dims[ndim++] = t->dims[k];
    size_t es = inf_dtype_size(t->dtype);
    int64_t inner = inf__shape_numel(t->ndim - axis - 1, t->dims + axis + 1);
    int64_t outer = inf__shape_numel(axis, t->dims);
    if (axis == 0) {
        inf_tensor_init_view(&ss->slice[m], t->dtype, ndim, dims, (char *)t->data + (size_t)(idx * inner) * es);
        return;
    }
    char *dst = *gather;
    for (int64_t o = 0; o < outer; o++)
        memcpy(dst + (size_t)(o * inner) * es, (const char *)t->data + (size_t)((o * ss->len + idx) * inner) * es,
               (size_t)inner * es);
    inf_tensor_init_view(&ss->slice[m], t->dtype, ndim, dims, dst);
    *gather += align64((size_t)(outer * inner) * es);
}

/* Output n_state + j for scan output j, whose iterations have shape `per`. */
static inf_status scan_alloc_output(inf__kernel_ctx *ctx, const scan_params *p, scan_state *ss, int j, const inf_tensor *per) {
    int64_t dims[INF_MAX_DIMS];
    int ndim = 0, axis;
    if (per->ndim + 1 + p->batched > INF_MAX_DIMS)
        return inf__kernel_error(ctx, INF_EUNSUPPORTED, "scan output %d: rank too large", j);
    inf_status st = inf__normalize_axis(ctx, p->out_axes ? p->out_axes[j] : 0, per->ndim + 1, &axis);
    if (st != INF_OK) return st;
    if (p->batched) dims[ndim++] = ss->batch;
    for (int k = 0; k <= per->ndim; k++) dims[ndim++] = k == axis ? ss->len : per->dims[k - (k > axis)];
    ss->out_ready[j] = true;
    return inf__kernel_output(ctx, p->n_state + j, per->dtype, ndim, dims, NULL);
}

/* Writes body scan output j of step t (batch entry b) into its output. */
static inf_status scan_store_output(inf__kernel_ctx *ctx, const scan_params *p, scan_state *ss, int j, int64_t b,
                                    int64_t t, const inf_tensor *src) {
    int o = p->n_state + j;
    char a[160], c[160];
    if (!src || src->kind != INF_KIND_TENSOR)
        return inf__kernel_error(ctx, INF_ETYPE, "scan output %d: the body returned a %s, expected a tensor", j,
                                 value_kind_name(src));
    if (!ss->out_ready[j]) {
        inf_status st = scan_alloc_output(ctx, p, ss, j, src);
        if (st != INF_OK) return st;
    }
    inf_tensor *y = ctx->out[o];
    int axis;
    inf__normalize_axis(ctx, p->out_axes ? p->out_axes[j] : 0, y->ndim - p->batched, &axis);
    const int64_t *ydims = y->dims + p->batched;
    bool ok = y->dtype == src->dtype && src->ndim == y->ndim - p->batched - 1;
    for (int k = 0; ok && k < src->ndim; k++) ok = src->dims[k] == ydims[k + (k >= axis)];
    if (!ok)
        return inf__kernel_error(ctx, INF_ESHAPE, "scan output %d: step %lld gave %s %s, the output is %s %s", j,
                                 (long long)t, inf_dtype_name(src->dtype), inf__shape_str(src->ndim, src->dims, a, sizeof a),
                                 inf_dtype_name(y->dtype), inf__shape_str(y->ndim, y->dims, c, sizeof c));
    int64_t pos = p->out_dirs && p->out_dirs[j] ? ss->len - 1 - t : t;
    int64_t inner = inf__shape_numel(src->ndim - axis, src->dims + axis);
    int64_t outer = inf__shape_numel(axis, src->dims);
    int64_t base = b * ss->len * outer * inner;
    inf_status st = INF_OK;
    for (int64_t i = 0; i < outer && st == INF_OK; i++)
        st = move_copy(ctx, y, base + (i * ss->len + pos) * inner, src, i * inner, inner);
    return st;
}

/* Copies body state output src into the spare buffer of state s. */
static inf_status scan_store_state(inf__kernel_ctx *ctx, scan_state *ss, int s, const inf_tensor *src) {
    const inf_tensor *want = &ss->init[s];
    char a[160], c[160];
    if (!src || src->kind != INF_KIND_TENSOR || src->dtype != want->dtype ||
        !inf__shape_equal(src->ndim, src->dims, want->ndim, want->dims))
        return inf__kernel_error(ctx, INF_ESHAPE, "body output %d (state): got %s, expected %s%s (states keep their shape)", s,
                                 src ? inf_tensor_describe(src, a, sizeof a) : "nothing", inf_dtype_name(want->dtype),
                                 inf__shape_str(want->ndim, want->dims, c, sizeof c));
    int next = 1 - ss->cur[s];
    memcpy(ss->buf[2 * s + next], src->data, inf_tensor_nbytes(src));
    ss->cur[s] = next;
    inf_tensor_init_view(&ss->state[s], src->dtype, src->ndim, src->dims, ss->buf[2 * s + next]);
    return INF_OK;
}

/* Runs the whole sequence of batch entry b. */
static inf_status scan_batch_entry(inf__kernel_ctx *ctx, const scan_params *p, scan_state *ss, int64_t b) {
    int ns = p->n_state, nm = p->n_scan_in;
    for (int s = 0; s < ns; s++) {
        batch_view(p, ctx->in[p->first + s], b, &ss->init[s]);
        ss->args[s] = &ss->init[s];
        ss->cur[s] = 1; /* the first step writes buffer 0 */
    }
    for (int m = 0; m < nm; m++) batch_view(p, ctx->in[p->first + ns + m], b, &ss->seq[m]);
    inf_status st = INF_OK;
    for (int64_t t = 0; t < ss->len && st == INF_OK; t++) {
        char *gather = ss->gather;
        for (int m = 0; m < nm; m++) {
            scan_make_slice(ss, m, p->in_dirs && p->in_dirs[m] ? ss->len - 1 - t : t, &gather);
            ss->args[ns + m] = &ss->slice[m];
        }
        inf_tensor *const *res;
        st = inf__kernel_run_subgraph(ctx, p->body, ns + nm, ss->args, &res);
        for (int j = 0; j < p->n_scan_out && ns + j < ctx->n_out && st == INF_OK; j++)
            st = scan_store_output(ctx, p, ss, j, b, t, res[ns + j]);
        for (int s = 0; s < ns && st == INF_OK; s++) {
            st = scan_store_state(ctx, ss, s, res[s]);
            ss->args[s] = &ss->state[s];
        }
    }
    /* the final states of this entry go to the state outputs */
    for (int s = 0; s < ns && st == INF_OK; s++) {
        size_t bytes = inf_tensor_nbytes(ss->args[s]);
        memcpy((char *)ctx->out[s]->data + (size_t)b * bytes, ss->args[s]->data, bytes);
    }
    return st;
}

static inf_status scan_run(inf__kernel_ctx *ctx) {
    const scan_params *p = ctx->node->params;
    scan_state ss = {0};
    inf_status st = scan_check_inputs(ctx, p, &ss.batch, &ss.len);
    if (st == INF_OK) st = scan_state_init(ctx, p, &ss);
    for (int s = 0; s < p->n_state && st == INF_OK; s++) {
        const inf_tensor *x = ctx->in[p->first + s];
        st = inf__kernel_output(ctx, s, x->dtype, x->ndim, x->dims, NULL);
    }
    for (int64_t b = 0; b < ss.batch && st == INF_OK; b++) st = scan_batch_entry(ctx, p, &ss, b);
    /* scan outputs never written (zero steps): the body's declared shape */
    for (int j = 0; j < p->n_scan_out && p->n_state + j < ctx->n_out && st == INF_OK; j++) {
        if (ss.out_ready[j]) continue;
        int64_t lead[2] = {ss.batch, 0};
        st = empty_scan_output(ctx, p->n_state + j, &p->body->values[p->body->outputs[p->n_state + j]],
                               p->batched ? 2 : 1, p->batched ? lead : lead + 1);
    }
    return st;
}

const inf__op_impl op_if = {if_init, if_run};
const inf__op_impl op_loop = {loop_init, loop_run};
const inf__op_impl op_scan = {scan_init, scan_run};
