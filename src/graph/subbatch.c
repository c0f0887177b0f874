/*
 * subbatch.c -- running a large batch as cache-sized sub-batches, in
 * parallel over the session's threads (see subbatch.h for the contract).
 *
 * DESIGN
 *   Proof (at session creation).  Every value of the main graph gets a
 *   state: CONST (an initializer: the same for every row), BATCH of rank r
 *   (axis 0 is the batch axis; the other axes do not depend on the batch
 *   size) or unknown.  Graph inputs of known rank are BATCH; each node's
 *   operator must have a sub-batch rule in the operator facts
 *   (ops/op_facts.c .batch and .batch_check, checked below), which says which inputs must be
 *   batched, which constant (and, for broadcasting ops, that the constant
 *   does not vary along axis 0), which attributes keep axis 0 apart (a
 *   Softmax, Concat or Reduce axis other than 0, Reshape keeping dim 0,
 *   Transpose with perm[0] == 0, Pad leaving axis 0 alone, ...) and the
 *   rank of the outputs.  The batch-size chains of dynamic reshapes (Shape
 *   -> Gather 0 -> Unsqueeze -> Concat with constants -> Reshape) have
 *   states of their own (VS_BSIZE, VS_BSHAPE): a sub-batch reshapes to its
 *   own row count, which is what the whole batch does row by row.  Any other op, the batch size
 *   used as a value, a subgraph, or an output that is not BATCH makes the
 *   graph not separable, and the session runs every batch whole.
 *
 *   Size.  The first split run at a given input shape runs one row alone on
 *   frame 0 (the probe): it gives the outputs' shapes (so the full-batch
 *   outputs exist before the frames run) and, the first time, the frame's
 *   footprint per row.  The rows per sub-batch are then the L2 budget
 *   (ops/blocking.c: half of L2, at most 256 KiB) / that
 *   footprint, at least MIN_ROWS (GEMMs stay efficient), rounded so every
 *   thread gets the same number of sub-batches.  The probe's buffers stay
 *   in frame 0's pool, so later runs at that shape allocate nothing.
 *
 *   Run.  Frame w (one per thread, each with its own buffer pool and a
 *   one-thread kernel pool) claims the next sub-batch from a shared counter
 *   until none is left, so a thread that starts late (its vCPU was busy
 *   with another process) still takes its share of what remains.  With a
 *   fixed assignment (frame w: sub-batches w, w + n, ...) a pool chunk is a
 *   frame's whole share, and when the worker had not claimed its chunk by
 *   the time the caller finished its own, the caller ran both halves one
 *   after the other: 2 threads at 1-thread speed for that run.
 *   Every sub-batch has `per` rows but the last, which is shorter: a frame
 *   whose memory plan was made for `per` rows runs the short one in it, so
 *   once every frame has run `per` rows (warm_rows) no frame allocates,
 *   whichever sub-batches it claims.  Until then (the first run at a shape,
 *   or when a frame's only sub-batch is the short one) the fixed assignment
 *   runs, which warms every frame with the same shapes on every run.
 *   Inputs are views of the caller's rows; each frame copies its output rows
 *   into the full-batch outputs, which live in the session's pool.
 *
 * INVARIANTS: a split run gives the bits of the whole run (kernels are
 * batch-invariant; tests/unit/test_subbatch.c checks it); a one-thread
 * session uses only the calling thread.
 */
#include <assert.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph/subbatch.h"
#include "ops/ops.h"

/* ---- the proof ---- */

/* VS_BSIZE: an int64 scalar equal to the batch size (Gather(Shape(x), 0));
 * VS_BSHAPE: a 1-D int64 shape whose element 0 is the batch size and whose
 * other elements do not depend on it (Shape of a batched value, or
 * Concat(Unsqueeze(batch size), constants)), `rank` elements long.  A
 * Reshape to a VS_BSHAPE keeps axis 0 the batch axis.  Exporters write
 * these chains for every reshape of a dynamic batch (BERT's heads). */
enum { VS_UNKNOWN = 0, VS_CONST, VS_BATCH, VS_BSIZE, VS_BSHAPE };

typedef struct vstate {
    int8_t kind;
    int8_t rank; /* VS_BATCH: the value's rank; VS_BSHAPE: its length */
} vstate;

typedef struct proof {
    const inf__graph *g;
    vstate *st;
} proof;

/* Input rules, one letter per input (the last repeats for more inputs):
 *   B  batched (every batched input has the node's rank R)
 *   C  constant or absent (weights: their shape is the kernel's business)
 *   F  constant or absent, not varying along axis 0 of a rank-R broadcast
 *   E  batched of rank R, or F (broadcasting operands)
 *   A  batched of rank R or constant (the check looks closer)
 * At least one input is batched (the letters are the facts' .batch).  A
 * check (.batch_check; none for most) tests the attributes and returns the
 * outputs' rank, or -1 when axis 0 is not kept apart. */
typedef int (*rank_fn)(const proof *p, const inf__node *n, int rank);


static const inf_tensor *constant_of(const proof *p, int v) {
    return v >= 0 && p->st[v].kind == VS_CONST ? p->g->values[v].constant : NULL;
}

static bool const_fits(const inf_tensor *t, int rank) {
    return !t || t->ndim < rank || (t->ndim == rank && t->dims[0] == 1);
}

/* Normalised axis, or -1 when out of [-rank, rank). */
static int norm_axis(int64_t axis, int rank) {
    if (axis < 0) axis += rank;
    return axis >= 0 && axis < rank ? (int)axis : -1;
}

static int axis_not_0(const inf__node *n, int64_t dflt, int rank) {
    int a = norm_axis(inf__attr_int(n, "axis", dflt), rank);
    return a >= 1 ? rank : -1;
}

static int check_softmax(const proof *p, const inf__node *n, int rank) {
    (void)p;
    return axis_not_0(n, n->opset < 13 ? 1 : -1, rank);
}

static int check_axis_m1(const proof *p, const inf__node *n, int rank) {
    (void)p;
    return axis_not_0(n, -1, rank);
}

static int check_concat(const proof *p, const inf__node *n, int rank) {
    (void)p;
    return axis_not_0(n, 0, rank);
}

/* QuantizeLinear, DequantizeLinear: one scale, or scales along (or blocked on) an axis other than 0. */
static int check_quantize(const proof *p, const inf__node *n, int rank) {
    const inf_tensor *scale = n->n_inputs > 1 ? constant_of(p, n->inputs[1]) : NULL;
    if (scale && inf_tensor_numel(scale) == 1 && scale->ndim <= 1 && !inf__attr_int(n, "block_size", 0))
        return rank;
    return axis_not_0(n, 1, rank);
}

static int check_flatten(const proof *p, const inf__node *n, int rank) {
    (void)p;
    int64_t a = inf__attr_int(n, "axis", 1);
    if (a < 0) a += rank;
    return a == 1 ? 2 : -1; /* a larger axis folds other axes into dim 0 */
}

static int check_reshape(const proof *p, const inf__node *n, int rank) {
    (void)rank;
    const inf_tensor *shape = n->n_inputs > 1 ? constant_of(p, n->inputs[1]) : NULL;
    if (!shape || shape->dtype != INF_DTYPE_I64 || shape->ndim != 1 || shape->dims[0] < 1 ||
        shape->dims[0] > INF_MAX_DIMS || inf__attr_int(n, "allowzero", 0))
        return -1;
    return ((const int64_t *)shape->data)[0] == 0 ? (int)shape->dims[0] : -1; /* 0: dim 0 copied */
}

static int check_transpose(const proof *p, const inf__node *n, int rank) {
    (void)p;
    int np;
    const int64_t *perm = inf__attr_ints(n, "perm", &np);
    if (!perm) return rank == 1 ? rank : -1; /* the default reverses the axes */
    return np == rank && perm[0] == 0 ? rank : -1;
}

/* The axes of Squeeze/Unsqueeze/Reduce*: the attribute, or input 1 from
 * opset `input_since` on.  *n = -1 when absent or not constant. */
static const int64_t *axes_of(const proof *p, const inf__node *node, int input_since, int *n) {
    if (node->opset < input_since) {
        const int64_t *a = inf__attr_ints(node, "axes", n);
        if (!a) *n = -1;
        return a;
    }
    const inf_tensor *t = node->n_inputs > 1 ? constant_of(p, node->inputs[1]) : NULL;
    *n = t && t->dtype == INF_DTYPE_I64 && t->ndim == 1 ? (int)t->dims[0] : -1;
    return t ? t->data : NULL;
}

static bool axes_avoid_0(const int64_t *axes, int n, int rank) {
    for (int i = 0; i < n; i++)
        if (norm_axis(axes[i], rank) < 1) return false;
    return n > 0;
}

static int check_squeeze(const proof *p, const inf__node *n, int rank) {
    int na;
    const int64_t *axes = axes_of(p, n, 13, &na);
    return na > 0 && axes_avoid_0(axes, na, rank) ? rank - na : -1; /* no axes: every 1, maybe dim 0 */
}

static int check_unsqueeze(const proof *p, const inf__node *n, int rank) {
    int na;
    const int64_t *axes = axes_of(p, n, 13, &na);
    return na > 0 && rank + na <= INF_MAX_DIMS && axes_avoid_0(axes, na, rank + na) ? rank + na : -1;
}

static int check_reduce(const proof *p, const inf__node *n, int rank) {
    int na;
    int since = !strcmp(n->op_type, "ReduceSum") ? 13 : 18;
    const int64_t *axes = axes_of(p, n, since, &na);
    if (na <= 0 || !axes_avoid_0(axes, na, rank)) return -1; /* none: all axes (or a no-op), dim 0 included */
    return inf__attr_int(n, "keepdims", 1) ? rank : rank - na;
}

static int check_gemm(const proof *p, const inf__node *n, int rank) {
    (void)p;
    return rank == 2 && !inf__attr_int(n, "transA", 0) ? 2 : -1;
}

static int check_rows(const proof *p, const inf__node *n, int rank) {
    (void)p;
    (void)n;
    return rank >= 2 ? rank : -1; /* rank 1: the only axis is the product's K */
}

/* A @ B: B constant with no batch axes of its own (rank <= 2, or
 * broadcasting from 1 below A's), or batched like A with batch axes (R >= 3). */
static int check_matmul(const proof *p, const inf__node *n, int rank) {
    if (rank < 2) return -1;
    int v = n->inputs[1];
    if (p->st[v].kind == VS_BATCH) return rank >= 3 ? rank : -1;
    const inf_tensor *b = constant_of(p, v);
    if (!b || b->ndim < 1) return -1;
    if (b->ndim == 1) return rank - 1;
    return b->ndim == 2 || const_fits(b, rank) ? rank : -1;
}

static int check_rank4(const proof *p, const inf__node *n, int rank) {
    (void)p;
    (void)n;
    return rank == 4 ? rank : -1; /* Attention's rank 3 has no batch axis */
}

static int check_no_extra_outputs(const proof *p, const inf__node *n, int rank) {
    (void)p;
    for (int k = 1; k < n->n_outputs; k++)
        if (n->outputs[k] >= 0) return -1; /* MaxPool's indices count the batch; BN's training stats mix rows */
    return inf__attr_int(n, "training_mode", 0) ? -1 : rank;
}

static int check_gather(const proof *p, const inf__node *n, int rank) {
    const inf_tensor *idx = constant_of(p, n->inputs[1]);
    int a = norm_axis(inf__attr_int(n, "axis", 0), rank);
    if (!idx || a < 1) return -1;
    int out = rank - 1 + idx->ndim;
    return out <= INF_MAX_DIMS ? out : -1;
}

/* Pad with constant pads (the attribute before opset 11) that leave axis 0
 * alone, on every axis (no `axes` input). */
static int check_pad(const proof *p, const inf__node *n, int rank) {
    int np = 0;
    const int64_t *pads = NULL;
    if (n->opset < 11) {
        pads = inf__attr_ints(n, "pads", &np);
    } else {
        const inf_tensor *t = n->n_inputs > 1 ? constant_of(p, n->inputs[1]) : NULL;
        if (t && t->dtype == INF_DTYPE_I64 && t->ndim == 1) pads = t->data, np = (int)t->dims[0];
    }
    if (!pads || np != 2 * rank || (n->n_inputs > 3 && n->inputs[3] >= 0)) return -1;
    return pads[0] == 0 && pads[rank] == 0 ? rank : -1;
}

/* The rules themselves are operator facts (ops/op_facts.c: .batch, the
 * input letters; .batch_check, which check_* function below applies). */
static const rank_fn checks[INF_BATCH_CHECK_COUNT] = {
    [INF_BATCH_AXIS_M1] = check_axis_m1,
    [INF_BATCH_CONCAT] = check_concat,
    [INF_BATCH_FLATTEN] = check_flatten,
    [INF_BATCH_GATHER] = check_gather,
    [INF_BATCH_GEMM] = check_gemm,
    [INF_BATCH_MATMUL] = check_matmul,
    [INF_BATCH_NO_EXTRA_OUTPUTS] = check_no_extra_outputs,
    [INF_BATCH_PAD] = check_pad,
    [INF_BATCH_QUANTIZE] = check_quantize,
    [INF_BATCH_RANK4] = check_rank4,
    [INF_BATCH_REDUCE] = check_reduce,
    [INF_BATCH_RESHAPE] = check_reshape,
    [INF_BATCH_ROWS] = check_rows,
    [INF_BATCH_SOFTMAX] = check_softmax,
    [INF_BATCH_SQUEEZE] = check_squeeze,
    [INF_BATCH_TRANSPOSE] = check_transpose,
    [INF_BATCH_UNSQUEEZE] = check_unsqueeze,
};

/* The node's sub-batch rule, or NULL: it may mix rows. */
static const inf__op_facts *find_rule(const inf__node *n) {
    const inf__op_facts *f = inf__op_facts_of(n->op);
    return f->batch ? f : NULL;
}

/* The node's rank R (of its batched inputs), or -1 when an input breaks the rule. */
static int inputs_rank(const proof *p, const inf__node *n, const char *spec) {
    int rank = -1;
    for (int i = 0; i < n->n_inputs; i++) { /* the batched inputs fix R */
        int v = n->inputs[i];
        if (v >= 0 && p->st[v].kind == VS_BATCH) {
            if (rank >= 0 && p->st[v].rank != rank) return -1;
            rank = p->st[v].rank;
        }
    }
    if (rank < 1) return -1;
    size_t len = strlen(spec);
    for (int i = 0; i < n->n_inputs; i++) {
        char want = spec[(size_t)i < len ? (size_t)i : len - 1];
        int v = n->inputs[i];
        int kind = v >= 0 ? p->st[v].kind : VS_CONST;
        if (kind == VS_UNKNOWN || kind == VS_BSIZE || kind == VS_BSHAPE || (want == 'B' && kind != VS_BATCH))
            return -1; /* the batch size itself differs between a sub-batch and the whole */
        if ((want == 'C' || want == 'F') && kind != VS_CONST) return -1;
        if ((want == 'F' || want == 'E') && kind == VS_CONST && !const_fits(constant_of(p, v), rank)) return -1;
    }
    return rank;
}

/* ---- shape chains of the batch size (VS_BSIZE, VS_BSHAPE) ---- */

static int state_of(const proof *p, int v) { return v >= 0 ? p->st[v].kind : VS_UNKNOWN; }

static const inf_tensor *const_ints(const proof *p, int v) {
    const inf_tensor *t = constant_of(p, v);
    return t && t->dtype == INF_DTYPE_I64 && t->ndim <= 1 && inf_tensor_numel(t) <= INF_MAX_DIMS ? t : NULL;
}

static bool is_scalar_int(const proof *p, int v, int64_t want) {
    const inf_tensor *t = const_ints(p, v);
    return t && inf_tensor_numel(t) == 1 && ((const int64_t *)t->data)[0] == want;
}

/* Concat on axis 0 of a VS_BSHAPE (first) and constant int64 vectors:
 * the result's length, or -1. */
static int concat_shape_len(const proof *p, const inf__node *n) {
    if (n->n_inputs < 1 || state_of(p, n->inputs[0]) != VS_BSHAPE || inf__attr_int(n, "axis", 0) != 0) return -1;
    int len = p->st[n->inputs[0]].rank;
    for (int i = 1; i < n->n_inputs; i++) {
        const inf_tensor *t = const_ints(p, n->inputs[i]);
        if (!t || t->ndim != 1) return -1;
        len += (int)t->dims[0];
    }
    return len <= INF_MAX_DIMS ? len : -1;
}

/* The state a shape-chain node gives its output, or VS_UNKNOWN (the node is
 * then proved by the op rules, or not at all). */
static vstate prove_shape_chain(const proof *p, const inf__node *n) {
    vstate none = {VS_UNKNOWN, 0};
    if (n->op->domain != INF_DOMAIN_ONNX || n->n_inputs < 1 || n->n_outputs != 1) return none;
    int x = n->inputs[0], kind = state_of(p, x);
    if (!strcmp(n->op_type, "Shape") && kind == VS_BATCH && inf__attr_int(n, "start", 0) == 0 &&
        inf__attr_int(n, "end", p->st[x].rank) == p->st[x].rank)
        return (vstate){VS_BSHAPE, p->st[x].rank};
    if (!strcmp(n->op_type, "Gather") && kind == VS_BSHAPE && n->n_inputs == 2 && inf__attr_int(n, "axis", 0) == 0 &&
        is_scalar_int(p, n->inputs[1], 0) && const_ints(p, n->inputs[1])->ndim == 0)
        return (vstate){VS_BSIZE, 0};
    if (!strcmp(n->op_type, "Unsqueeze") && kind == VS_BSIZE) {
        int na;
        const int64_t *axes = axes_of(p, n, 13, &na);
        return na == 1 && (axes[0] == 0 || axes[0] == -1) ? (vstate){VS_BSHAPE, 1} : none;
    }
    if (!strcmp(n->op_type, "Concat")) {
        int len = concat_shape_len(p, n);
        return len > 0 ? (vstate){VS_BSHAPE, (int8_t)len} : none;
    }
    if (!strcmp(n->op_type, "Reshape") && kind == VS_BATCH && n->n_inputs == 2 &&
        state_of(p, n->inputs[1]) == VS_BSHAPE && !inf__attr_int(n, "allowzero", 0))
        return (vstate){VS_BATCH, p->st[n->inputs[1]].rank};
    return none;
}

static bool prove_node(proof *p, const inf__node *n) {
    vstate chain = prove_shape_chain(p, n);
    if (chain.kind != VS_UNKNOWN) {
        p->st[n->outputs[0]] = chain;
        return chain.kind != VS_BATCH || chain.rank >= 1;
    }
    const inf__op_facts *r = find_rule(n);
    if (!r || n->n_implicit) return false;
    int rank = inputs_rank(p, n, r->batch);
    if (rank >= 0 && r->batch_check) rank = checks[r->batch_check] ? checks[r->batch_check](p, n, rank) : -1;
    if (rank < 1 || rank > INF_MAX_DIMS) return false;
    for (int k = 0; k < n->n_outputs; k++)
        if (n->outputs[k] >= 0) p->st[n->outputs[k]] = (vstate){VS_BATCH, (int8_t)rank};
    return true;
}

static bool prove_inputs(proof *p, char *why, size_t why_size) {
    const inf__graph *g = p->g;
    for (int v = 0; v < g->n_values; v++)
        if (g->values[v].role == INF_VALUE_INITIALIZER && g->values[v].constant) p->st[v].kind = VS_CONST;
    for (int i = 0; i < g->n_inputs; i++) {
        const inf__value *val = &g->values[g->inputs[i]];
        if (!val->has_info || val->info.kind != INF_KIND_TENSOR || val->info.ndim < 1 ||
            val->info.dtype == INF_DTYPE_STRING) {
            snprintf(why, why_size, "input '%s' is not a tensor of known rank", val->name);
            return false;
        }
        p->st[g->inputs[i]] = (vstate){VS_BATCH, (int8_t)val->info.ndim};
    }
    return true;
}

bool inf__graph_batch_separable(const inf__graph *g, char *why, size_t why_size) {
    proof p = {g, inf__calloc((size_t)g->n_values + 1, sizeof(vstate))};
    bool ok = p.st && g->n_inputs > 0 && g->n_outputs > 0;
    if (!ok) snprintf(why, why_size, p.st ? "no inputs or outputs" : "out of memory");
    if (ok) ok = prove_inputs(&p, why, why_size);
    for (int n = 0; ok && n < g->n_nodes; n++)
        if (!(ok = prove_node(&p, &g->nodes[n])))
            snprintf(why, why_size, "node '%s' (%s) may mix rows", g->nodes[n].name, g->nodes[n].op_type);
    for (int i = 0; ok && i < g->n_outputs; i++) {
        const inf__value *val = &g->values[g->outputs[i]];
        if (!(ok = p.st[g->outputs[i]].kind == VS_BATCH && !(val->has_info && val->info.dtype == INF_DTYPE_STRING)))
            snprintf(why, why_size, "output '%s' is not batched", val->name);
    }
    inf__free(p.st);
    return ok;
}

/* ---- running ---- */

/* Fewer rows than this starve the GEMMs (row panels of 6, B reuse). */
#define MIN_ROWS 1

typedef struct worker {
    inf__frame *frame;
    inf_tensor *views;      /* n_inputs views of the caller's rows */
    inf_tensor **view_ptrs;
    inf_error err;
    inf_status st;
    int64_t warm_rows;      /* most rows the frame ran at the current input shape (its plan holds them) */
} worker;

struct inf__subbatch {
    inf_session *s;
    const inf__graph *g;
    int n_workers;
    int fixed_rows;         /* the option: rows per sub-batch, 0 = automatic */
    int64_t row_bytes;      /* frame footprint per row (the first probe); 0 before */
    bool broken;            /* a probe disagreed with the proof: never split again */
    int64_t (*in_shape)[INF_MAX_DIMS]; /* input shapes of the last probe (dim 0 ignored) */
    int *in_ndim;
    inf_tensor *out_like;   /* n_outputs: dtype and shape (dim 0 = 1) of the probe's outputs */
    worker *w;
    /* the current run */
    const inf_tensor *const *inputs;
    inf_tensor **full;      /* n_outputs full-batch outputs */
    int64_t n, per, n_sub;
    _Atomic int64_t next_sub; /* the next sub-batch to claim (claimed runs) */
    bool claimed;           /* this run: frames claim sub-batches (else the fixed assignment) */
    int n_active;
    int64_t n_runs;         /* split runs so far */
};

int64_t inf__subbatch_runs(const inf__subbatch *sb) { return sb ? sb->n_runs : 0; }
int64_t inf__subbatch_rows(const inf__subbatch *sb) { return sb ? sb->per : 0; }

static void worker_deinit(worker *w) {
    inf__frame_free(w->frame);
    inf__free(w->views);
    inf__free(w->view_ptrs);
}

void inf__subbatch_free(inf__subbatch *sb) {
    if (!sb) return;
    for (int i = 0; sb->w && i < sb->n_workers; i++) worker_deinit(&sb->w[i]);
    inf__free(sb->w);
    inf__free(sb->in_shape);
    inf__free(sb->in_ndim);
    inf__free(sb->out_like);
    inf__free(sb->full);
    inf__free(sb);
}

static inf_status subbatch_alloc(inf__subbatch *sb, inf_error *err) {
    const inf__graph *g = sb->g;
    sb->w = inf__calloc((size_t)sb->n_workers, sizeof *sb->w);
    sb->in_shape = inf__calloc((size_t)g->n_inputs, sizeof *sb->in_shape);
    sb->in_ndim = inf__calloc((size_t)g->n_inputs, sizeof *sb->in_ndim);
    sb->out_like = inf__calloc((size_t)g->n_outputs, sizeof *sb->out_like);
    sb->full = inf__calloc((size_t)g->n_outputs, sizeof *sb->full);
    if (!sb->w || !sb->in_shape || !sb->in_ndim || !sb->out_like || !sb->full)
        return inf_error_set(err, INF_ENOMEM, "out of memory creating a session");
    for (int i = 0; i < sb->n_workers; i++) {
        worker *w = &sb->w[i];
        w->views = inf__calloc((size_t)g->n_inputs, sizeof *w->views);
        w->view_ptrs = inf__calloc((size_t)g->n_inputs, sizeof *w->view_ptrs);
        if (!w->views || !w->view_ptrs) return inf_error_set(err, INF_ENOMEM, "out of memory creating a session");
        for (int k = 0; k < g->n_inputs; k++) w->view_ptrs[k] = &w->views[k];
        inf_status st = inf__frame_new(sb->s, &w->frame, err);
        if (st != INF_OK) return st;
    }
    return INF_OK;
}

inf_status inf__subbatch_new(inf_session *s, int n_threads, int rows, inf__subbatch **out, inf_error *err) {
    *out = NULL;
    const inf__graph *g = inf_session_model(s)->graph;
    char why[256];
    if (rows < 0) return INF_OK;
    if (!inf__graph_batch_separable(g, why, sizeof why)) {
        inf__log(INF_LOG_DEBUG, "sub-batches off: %s", why);
        return INF_OK;
    }
    inf__subbatch *sb = inf__calloc(1, sizeof *sb);
    if (!sb) return inf_error_set(err, INF_ENOMEM, "out of memory creating a session");
    sb->s = s;
    sb->g = g;
    sb->n_workers = n_threads > 1 ? n_threads : 1;
    sb->fixed_rows = rows;
    inf_status st = subbatch_alloc(sb, err);
    if (st != INF_OK) {
        inf__subbatch_free(sb);
        return st;
    }
    *out = sb;
    return INF_OK;
}

/* The batch size, or -1 when the inputs are not all tensors with one dim 0. */
static int64_t batch_of(const inf__subbatch *sb, const inf_tensor *const *inputs) {
    int64_t n = -1;
    for (int i = 0; i < sb->g->n_inputs; i++) {
        const inf_tensor *t = inputs[i];
        if (!t || t->kind != INF_KIND_TENSOR || t->ndim < 1 || (n >= 0 && t->dims[0] != n)) return -1;
        n = t->dims[0];
    }
    return n;
}

static size_t row_bytes(const inf_tensor *t) {
    return t->dims[0] ? inf_tensor_nbytes(t) / (size_t)t->dims[0] : 0;
}

/* Runs rows [b0, b1) of the caller's inputs on w's frame; *outs = its outputs. */
static inf_status run_rows(inf__subbatch *sb, worker *w, int64_t b0, int64_t b1, inf_tensor *const **outs) {
    for (int i = 0; i < sb->g->n_inputs; i++) {
        const inf_tensor *t = sb->inputs[i];
        int64_t dims[INF_MAX_DIMS];
        memcpy(dims, t->dims, sizeof dims);
        dims[0] = b1 - b0;
        inf_tensor_init_view(&w->views[i], t->dtype, t->ndim, dims, (char *)t->data + (size_t)b0 * row_bytes(t));
    }
    return inf__frame_run(w->frame, w->view_ptrs, outs, &w->err);
}

static bool same_rows(const inf_tensor *o, const inf_tensor *like, int64_t rows) {
    if (!o || o->kind != INF_KIND_TENSOR || o->dtype != like->dtype || o->ndim != like->ndim || o->dims[0] != rows)
        return false;
    return !memcmp(o->dims + 1, like->dims + 1, (size_t)(o->ndim - 1) * sizeof o->dims[0]);
}

static inf_status copy_rows(inf__subbatch *sb, worker *w, inf_tensor *const *outs, int64_t b0, int64_t b1) {
    for (int i = 0; i < sb->g->n_outputs; i++) {
        if (!same_rows(outs[i], &sb->out_like[i], b1 - b0))
            return w->st = inf_error_set(&w->err, INF_EINTERNAL, "output '%s' of rows %lld-%lld has another shape than the probe's",
                                      sb->g->values[sb->g->outputs[i]].name, (long long)b0, (long long)b1);
        size_t rb = row_bytes(outs[i]);
        if (rb) memcpy((char *)sb->full[i]->data + (size_t)b0 * rb, outs[i]->data, (size_t)(b1 - b0) * rb);
    }
    return INF_OK;
}

/* The next sub-batch frame `first` runs: claimed from the shared counter,
 * or the next of its fixed share (first, first + n_active, ...) after k. */
static int64_t next_sub(inf__subbatch *sb, int64_t first, int64_t k) {
    if (sb->claimed) return atomic_fetch_add(&sb->next_sub, 1);
    return k < 0 ? first : k + sb->n_active;
}

/* Runs sub-batches on frame `first`'s worker until none is left for it. */
static void run_worker(inf__subbatch *sb, int64_t first) {
    worker *w = &sb->w[first];
    w->st = INF_OK;
    for (int64_t k = next_sub(sb, first, -1); w->st == INF_OK && k < sb->n_sub; k = next_sub(sb, first, k)) {
        int64_t b0 = k * sb->per, b1 = b0 + sb->per < sb->n ? b0 + sb->per : sb->n;
        inf_tensor *const *outs;
        w->st = run_rows(sb, w, b0, b1, &outs);
        if (w->st == INF_OK) w->st = copy_rows(sb, w, outs, b0, b1);
        if (w->st == INF_OK && b1 - b0 > w->warm_rows) w->warm_rows = b1 - b0;
    }
}

static void workers_range(void *arg, int64_t begin, int64_t end) {
    inf__subbatch *sb = arg;
    for (int64_t i = begin; i < end; i++) run_worker(sb, i);
}

static bool probe_current(const inf__subbatch *sb, const inf_tensor *const *inputs) {
    if (!sb->row_bytes) return false;
    for (int i = 0; i < sb->g->n_inputs; i++)
        if (inputs[i]->ndim != sb->in_ndim[i] ||
            memcmp(inputs[i]->dims + 1, sb->in_shape[i] + 1, (size_t)(inputs[i]->ndim - 1) * sizeof(int64_t)))
            return false;
    return true;
}

/* Runs row 0 alone on frame 0: the outputs' shapes, and the footprint per row. */
static inf_status probe(inf__subbatch *sb, const inf_tensor *const *inputs, inf_error *err) {
    worker *w = &sb->w[0];
    inf_tensor *const *outs;
    sb->inputs = inputs;
    inf_status st = run_rows(sb, w, 0, 1, &outs);
    if (st != INF_OK) {
        if (err) *err = w->err;
        return st;
    }
    for (int i = 0; i < sb->g->n_outputs; i++) {
        if (!outs[i] || outs[i]->kind != INF_KIND_TENSOR || outs[i]->ndim < 1 || outs[i]->dims[0] != 1) {
            sb->broken = true; /* the proof was wrong: run whole batches from now on */
            inf__log(INF_LOG_WARN, "sub-batches: output '%s' does not keep the batch axis; running whole batches",
                     sb->g->values[sb->g->outputs[i]].name);
            return INF_OK;
        }
        sb->out_like[i] = *outs[i];
    }
    for (int i = 0; i < sb->g->n_inputs; i++) {
        sb->in_ndim[i] = inputs[i]->ndim;
        memcpy(sb->in_shape[i], inputs[i]->dims, sizeof sb->in_shape[i]);
    }
    if (!sb->row_bytes) sb->row_bytes = (int64_t)inf__frame_bytes(w->frame) + 1;
    for (int i = 0; i < sb->n_workers; i++) sb->w[i].warm_rows = 0; /* a new shape: plans to make again */
    return INF_OK;
}

/* Rows per sub-batch and their number; n_sub < 2: do not split. */
static void plan(inf__subbatch *sb, int64_t n) {
    inf__blocking bl; /* activation bytes per sub-batch: half of L2, at most 256 KiB (ops/blocking.c) */
    inf__blocking_get(&bl);
    int64_t per = sb->fixed_rows > 0 ? sb->fixed_rows : bl.subbatch_bytes / sb->row_bytes;
    if (per < MIN_ROWS) per = MIN_ROWS;
    int64_t n_sub = (n + per - 1) / per;
    if (sb->n_workers > 1 && n_sub > 1) n_sub = (n_sub + sb->n_workers - 1) / sb->n_workers * sb->n_workers;
    else if (sb->n_workers > 1 && sb->fixed_rows <= 0 && n >= 2 * MIN_ROWS) n_sub = sb->n_workers;
    if (n_sub > n) n_sub = n;
    sb->per = n_sub > 0 ? (n + n_sub - 1) / n_sub : n;
    sb->n_sub = sb->per > 0 ? (n + sb->per - 1) / sb->per : 0;
    sb->n = n;
    sb->n_active = sb->n_sub < sb->n_workers ? (int)sb->n_sub : sb->n_workers;
}

static inf_status make_outputs(inf__subbatch *sb, int64_t n, inf_error *err) {
    inf__session_release(sb->s);
    for (int i = 0; i < sb->g->n_outputs; i++) {
        const inf_tensor *like = &sb->out_like[i];
        int64_t dims[INF_MAX_DIMS];
        memcpy(dims, like->dims, sizeof dims);
        dims[0] = n;
        inf_status st = inf__session_output(sb->s, i, like->dtype, like->ndim, dims, &sb->full[i], err);
        if (st != INF_OK) return st;
    }
    return INF_OK;
}

static inf_status run_split(inf__subbatch *sb, const inf_tensor *const *inputs, inf_error *err) {
    sb->inputs = inputs;
    inf_status st = make_outputs(sb, sb->n, err);
    if (st != INF_OK) return st;
    atomic_store(&sb->next_sub, 0);
    sb->claimed = true; /* once every frame holds a full sub-batch */
    for (int i = 0; i < sb->n_active; i++) sb->claimed = sb->claimed && sb->w[i].warm_rows >= sb->per;
    if (sb->n_active > 1) inf__pool_range(inf__session_threads(sb->s), sb->n_active, 1, workers_range, sb);
    else run_worker(sb, 0);
    for (int i = 0; i < sb->n_active; i++)
        if (sb->w[i].st != INF_OK) {
            if (err) *err = sb->w[i].err;
            inf__session_release(sb->s);
            return sb->w[i].st;
        }
    return INF_OK;
}

inf_status inf__subbatch_run(inf__subbatch *sb, const inf_tensor *const *inputs, bool *done, inf_error *err) {
    *done = false;
    int64_t n = sb->broken ? -1 : batch_of(sb, inputs);
    if (n < 2 || (sb->fixed_rows > 0 && n <= sb->fixed_rows) || (sb->n_workers == 1 && sb->fixed_rows <= 0 && n < 2 * MIN_ROWS))
        return INF_OK;
    if (!probe_current(sb, inputs)) {
        inf_status st = probe(sb, inputs, err);
        if (st != INF_OK || sb->broken) return st;
    }
    plan(sb, n);
    if (sb->n_sub < 2) return INF_OK;
    inf_status st = run_split(sb, inputs, err);
    *done = st == INF_OK;
    sb->n_runs += *done;
    return st;
}
