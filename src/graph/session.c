/*
 * session.c -- running a graph: the executor, its memory, and the services
 * kernels call (outputs, aliases, errors, subgraphs).
 *
 * DESIGN
 *   A session holds one frame per graph (the main graph and every subgraph of
 *   If/Loop/Scan).  A frame has a slot per value.  A run binds the caller's
 *   inputs and the initializers as borrowed views, then calls each node's
 *   kernel in topological order.  Kernels create their outputs through
 *   inf__kernel_output, which takes a buffer from the frame's memory.
 *
 *   Memory (graph/memplan.c): every value knows how many nodes read it.
 *   When the last reader has run, the value's buffer is released.  The first
 *   run at a shape takes buffers from a pool (best fit) and records each
 *   request with its lifetime; at its end the requests are placed in one
 *   arena (memory plan), and later runs whose requests fit the plan (a
 *   smaller batch does) take their buffers at the planned offsets.  A request
 *   that does not fit goes to the pool and the run replans, so the arena ends
 *   sized for the largest batch.  Either way, from the second run with the
 *   same input shapes on, a run allocates nothing.  Graph outputs stay in
 *   their buffers until the next run.  Only a frame's own graph is planned:
 *   the subgraphs of If/Loop/Scan, strings and heap values use the pool.
 *
 *   Outputs that only reshape an input (Reshape, Squeeze, Identity) share the
 *   input's buffer; buffers are reference-counted for that.  In-place
 *   execution: output 0 of an element-wise node (memplan.c lists them) takes
 *   the buffer of an input it is the last to read, when that input is an
 *   unshared intermediate of the output's type and shape (take_inplace).
 *   options.mem_plan < 0 turns off both (pool only).
 *
 *   Sub-batches (subbatch.c): a large batch of a batch-separable graph runs
 *   on frames of its own (inf__frame: the main graph with its own memory
 *   (pool and plan) and a one-thread kernel pool, so frames run at the
 *   same time on the session's threads); the session's main frame then
 *   holds only the full-batch outputs (inf__session_output).
 *
 *   Profile (options.profile, inf_session_profile): every frame (main graph,
 *   subgraphs, sub-batch frames) then has a counter per node, allocated
 *   here at creation, which its run loop fills (calls, wall time of the
 *   node on the calling thread, output 0's shape).  exec_run chooses the
 *   timed or the plain loop once per run, so a session without a profile
 *   pays one branch a run.  Sub-batch frames run on the session's threads
 *   at once: each writes only its own counters, and inf_session_profile
 *   adds them up when asked.
 *
 * INVARIANTS
 *   - slot.value is what kernels see: &slot.t, a heap value, an outer-scope
 *     value, or the caller's tensor; NULL when the value is absent.
 *   - a pooled or arena buffer is free iff its refs == 0.
 *   - an output written in place shares its input's buffer (refs 2 until
 *     the input is released after the node).
 */
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "graph/memplan.h"
#include "graph/subbatch.h"
#include "infera/session.h"
#include "ops/gemm_bf16.h"
#include "ops/ops.h"

/* ---- frames ---- */

typedef struct slot {
    inf_tensor t;        /* descriptor for pooled or borrowed tensor data */
    inf_tensor *value;   /* what kernels read */
    inf__buf *buf;       /* pooled buffer behind t.data, if any */
    inf_tensor *heap;    /* heap value owned by the slot, if any */
    int refs;            /* readers still to run in this run */
} slot;

typedef struct sub_frame {
    const inf__graph *g;
    inf__exec *exec;
} sub_frame;

/* One node's profile counters in one frame (options.profile). */
typedef struct node_prof {
    int64_t calls;
    uint64_t total_ns, min_ns, max_ns;
    int64_t last_run;      /* the session run of the last call: across frames, the newest shape wins */
    int ndim;              /* output 0 of the last call; -1: absent or not a tensor */
    inf_dtype dtype;
    int64_t dims[INF_MAX_DIMS];
} node_prof;

struct inf__exec {
    inf_session *session;
    inf__mem *mem;         /* where its values live: the session's memory, or a sub-batch frame's */
    bool planned;          /* a frame's top graph: its requests are recorded and planned */
    uint32_t *inplace;     /* per node: inputs output 0 may overwrite (memplan.c); NULL: never */
    inf__pool *threads;    /* what its kernels may use */
    const inf__graph *g;
    inf__exec *parent;
    slot *slots;           /* n_values + max_outputs (hidden slots for omitted outputs) */
    int n_slots;
    int max_io;
    inf_tensor **in_ptrs;  /* scratch for a node's inputs / outputs */
    inf_tensor **out_ptrs;
    inf_tensor **outputs;  /* graph outputs of the last run */
    inf__buf *scratch[INF_KERNEL_MAX_SCRATCH]; /* the running kernel's scratch blocks */
    int n_scratch;
    int n_subs;
    sub_frame *subs;
    node_prof *prof;       /* per node when the session profiles; NULL: off */
    const inf__bf16_plan *bf16; /* precision bf16, main graph (and sub-batch frames of it): bf16 GEMMs; else NULL */
};

struct inf_session {
    const inf_model *model;
    int n_threads;
    inf__pool *threads;
    inf__mem mem;
    bool mem_plan;         /* options.mem_plan >= 0 */
    inf__exec *main;
    inf__subbatch *sb;     /* sub-batch execution (graph/subbatch.c); NULL when off or not separable */
    bool profile;          /* options.profile: frames count calls and time per node */
    int n_profiled;        /* profile entries: main-graph nodes and, recursively, subgraph nodes */
    int64_t prof_runs;     /* runs since creation or reset (profile only) */
    uint64_t prof_run_ns;  /* their wall time in inf_session_run */
    struct inf__frame *frames; /* sub-batch frames, linked for the profile */
    int64_t max_subgraph_runs; /* options.max_subgraph_runs; 0 = no limit */
    _Atomic int64_t subgraph_runs; /* body runs in the current inf_session_run (sub-batch threads add too) */
    int64_t max_run_ms;        /* options.max_run_ms; 0 = no limit */
    _Atomic uint64_t deadline_ns; /* CLOCK_MONOTONIC_COARSE end of the current run's budget; 0 = none */
    inf__bf16_plan *bf16;         /* options.precision bf16: the weights packed as bf16 (ops/gemm_bf16.h); NULL: fp32 */
    size_t max_memory_bytes;      /* options.max_memory_bytes; 0 = the machine's physical memory */
};

/* The tail of an out-of-memory message: why the buffer pool refused, when it
 * was the memory limit rather than the allocator (memplan.c's guard). */
static const char *over_limit(const inf__mem *m) {
    if (!m->over_limit) return "";
    return ": more than the session's memory limit (option max_memory_bytes; default the machine's physical memory)";
}

static void slot_release(inf__mem *p, slot *sl) {
    if (sl->buf) inf__mem_release(p, sl->buf);
    if (sl->heap) inf_tensor_free(sl->heap);
    sl->buf = NULL;
    sl->heap = NULL;
    sl->value = NULL;
}

static inf_status exec_new(inf_session *s, inf__mem *mem, inf__pool *threads, const inf__graph *g, inf__exec *parent,
                           inf__exec **out, inf_error *err);
static int count_profiled(const inf__exec *e);

static void exec_free(inf__exec *e) {
    if (!e) return;
    for (int i = 0; e->slots && i < e->n_slots; i++) slot_release(e->mem, &e->slots[i]);
    for (int i = 0; i < e->n_subs; i++) exec_free(e->subs[i].exec);
    inf__free(e->subs);
    inf__free(e->slots);
    inf__free(e->in_ptrs);
    inf__free(e->out_ptrs);
    inf__free(e->outputs);
    inf__free(e->inplace);
    inf__free(e->prof);
    inf__free(e);
}

static int count_subgraphs(const inf__graph *g) {
    int n = 0;
    for (int i = 0; i < g->n_nodes; i++)
        for (int a = 0; a < g->nodes[i].n_attrs; a++) {
            const inf__attr *attr = &g->nodes[i].attrs[a];
            n += attr->type == INF_ATTR_GRAPH ? 1 : attr->type == INF_ATTR_GRAPHS ? attr->n : 0;
        }
    return n;
}

static inf_status exec_add_subframes(inf_session *s, inf__exec *e, inf_error *err) {
    int n = count_subgraphs(e->g);
    if (!n) return INF_OK;
    e->subs = inf__calloc((size_t)n, sizeof *e->subs);
    if (!e->subs) return inf_error_set(err, INF_ENOMEM, "out of memory creating a session");
    for (int i = 0; i < e->g->n_nodes; i++)
        for (int a = 0; a < e->g->nodes[i].n_attrs; a++) {
            const inf__attr *attr = &e->g->nodes[i].attrs[a];
            int k_max = attr->type == INF_ATTR_GRAPH ? 1 : attr->type == INF_ATTR_GRAPHS ? attr->n : 0;
            for (int k = 0; k < k_max; k++) {
                const inf__graph *sub = attr->type == INF_ATTR_GRAPH ? attr->g : attr->graphs[k];
                e->subs[e->n_subs].g = sub;
                inf_status st = exec_new(s, e->mem, e->threads, sub, e, &e->subs[e->n_subs].exec, err);
                if (st != INF_OK) return st;
                e->n_subs++;
            }
        }
    return INF_OK;
}

/* With a memory plan: which inputs each node may overwrite with its output. */
static inf_status exec_plan_inplace(inf__exec *e, inf_error *err) {
    e->planned = e->mem->planning && !e->parent;
    if (!e->mem->planning || !e->g->n_nodes) return INF_OK;
    e->inplace = inf__calloc((size_t)e->g->n_nodes, sizeof *e->inplace);
    if (!e->inplace) return inf_error_set(err, INF_ENOMEM, "out of memory creating a session");
    for (int i = 0; i < e->g->n_nodes; i++) e->inplace[i] = inf__memplan_inplace_inputs(&e->g->nodes[i]);
    return INF_OK;
}

static inf_status exec_new(inf_session *s, inf__mem *mem, inf__pool *threads, const inf__graph *g, inf__exec *parent,
                           inf__exec **out, inf_error *err) {
    *out = NULL;
    inf__exec *e = inf__calloc(1, sizeof *e);
    if (!e) return inf_error_set(err, INF_ENOMEM, "out of memory creating a session");
    e->session = s;
    e->mem = mem;
    e->threads = threads;
    e->g = g;
    e->parent = parent;
    e->bf16 = g == s->model->graph ? s->bf16 : NULL;
    int max_io = 1;
    for (int i = 0; i < g->n_nodes; i++) {
        if (g->nodes[i].n_inputs > max_io) max_io = g->nodes[i].n_inputs;
        if (g->nodes[i].n_outputs > max_io) max_io = g->nodes[i].n_outputs;
    }
    e->max_io = max_io;
    e->n_slots = g->n_values + max_io;
    e->slots = inf__calloc((size_t)e->n_slots, sizeof(slot));
    e->in_ptrs = inf__calloc((size_t)max_io, sizeof(inf_tensor *));
    e->out_ptrs = inf__calloc((size_t)max_io, sizeof(inf_tensor *));
    e->outputs = inf__calloc((size_t)g->n_outputs + 1, sizeof(inf_tensor *));
    inf_status st = INF_OK;
    if (s->profile && g->n_nodes) e->prof = inf__calloc((size_t)g->n_nodes, sizeof *e->prof);
    if (!e->slots || !e->in_ptrs || !e->out_ptrs || !e->outputs || (s->profile && g->n_nodes && !e->prof))
        st = inf_error_set(err, INF_ENOMEM, "out of memory creating a session");
    if (st == INF_OK) st = exec_plan_inplace(e, err);
    if (st == INF_OK) st = exec_add_subframes(s, e, err);
    if (st != INF_OK) {
        exec_free(e);
        return st;
    }
    *out = e;
    return INF_OK;
}

/* ---- services for kernels ---- */

static slot *output_slot(inf__kernel_ctx *ctx, int i) {
    inf__exec *e = ctx->exec;
    int v = ctx->node->outputs[i];
    return v >= 0 ? &e->slots[v] : &e->slots[e->g->n_values + i];
}

static bool same_shape(const inf_tensor *t, int ndim, const int64_t *dims) {
    if (t->ndim != ndim) return false;
    for (int d = 0; d < ndim; d++)
        if (t->dims[d] != dims[d]) return false;
    return true;
}

/* In-place execution: output 0 of an element-wise node takes the buffer of
 * an input this node is the last to read (an intermediate in a buffer of
 * its own, not aliased, not a graph output, read once by this node, of the
 * output's type and shape).  NULL when no input qualifies. */
static inf__buf *take_inplace(inf__kernel_ctx *ctx, inf_dtype dtype, int ndim, const int64_t *dims) {
    inf__exec *e = ctx->exec;
    const inf__node *node = ctx->node;
    if (!e->inplace || node < e->g->nodes || node >= e->g->nodes + e->g->n_nodes) return NULL;
    uint32_t mask = e->inplace[node - e->g->nodes];
    for (int k = 0; mask && k < node->n_inputs && k < 32; k++) {
        int v = node->inputs[k];
        if (!(mask & (1u << k)) || v < 0 || e->g->values[v].role != INF_VALUE_INTERMEDIATE) continue;
        slot *in = &e->slots[v];
        if (!in->buf || in->value != &in->t || in->buf->refs != 1 || in->refs != 1 || in->buf->n_strings) continue;
        if (in->t.kind != INF_KIND_TENSOR || in->t.dtype != dtype || !same_shape(&in->t, ndim, dims)) continue;
        in->buf->refs++;
        e->mem->n_inplace++;
        return in->buf;
    }
    return NULL;
}

inf_status inf__kernel_output(inf__kernel_ctx *ctx, int i, inf_dtype dtype, int ndim, const int64_t *dims,
                              inf_tensor **out) {
    if (i < 0 || i >= ctx->n_out)
        return inf__kernel_error(ctx, INF_EINTERNAL, "kernel wrote output %d of %d", i, ctx->n_out);
    if (ndim < 0 || ndim > INF_MAX_DIMS)
        return inf__kernel_error(ctx, INF_EUNSUPPORTED, "output %d has rank %d (at most %d supported)", i, ndim, INF_MAX_DIMS);
    int64_t numel = inf__shape_numel(ndim, dims);
    size_t esize = inf_dtype_size(dtype);
    if (numel < 0 || esize == 0 || (uint64_t)numel > (SIZE_MAX / 2) / esize)
        return inf__kernel_error(ctx, INF_ESHAPE, "output %d: invalid shape or type", i);
    slot *sl = output_slot(ctx, i);
    slot_release(ctx->exec->mem, sl);
    size_t nbytes = (size_t)numel * esize;
    sl->buf = i == 0 ? take_inplace(ctx, dtype, ndim, dims) : NULL;
    if (!sl->buf) /* strings free their elements on release: never planned */
        sl->buf = inf__mem_take(ctx->exec->mem, nbytes, ctx->exec->planned && dtype != INF_DTYPE_STRING);
    if (!sl->buf)
        return inf__kernel_error(ctx, INF_ENOMEM, "out of memory for output %d (%zu bytes)%s", i, nbytes,
                                 over_limit(ctx->exec->mem));
    inf_tensor_init_view(&sl->t, dtype, ndim, dims, sl->buf->data);
    sl->t.capacity = sl->buf->cap;
    if (dtype == INF_DTYPE_STRING) {
        memset(sl->buf->data, 0, nbytes);
        sl->buf->n_strings = numel;
        sl->t.flags = INF_TENSOR_OWNS_DATA; /* inf_tensor_set_string frees what it replaces */
    }
    sl->value = &sl->t;
    ctx->out[i] = sl->value;
    if (out) *out = sl->value;
    return INF_OK;
}

inf_status inf__kernel_output_alias(inf__kernel_ctx *ctx, int i, int input, int ndim, const int64_t *dims,
                                    inf_tensor **out) {
    if (input < 0 || input >= ctx->n_in || !ctx->in[input] || ctx->in[input]->kind != INF_KIND_TENSOR)
        return inf__kernel_error(ctx, INF_EINTERNAL, "alias of a missing input %d", input);
    const inf_tensor *src = ctx->in[input];
    if (inf__shape_numel(ndim, dims) != inf_tensor_numel(src))
        return inf__kernel_error(ctx, INF_ESHAPE, "output %d cannot view input %d: element counts differ", i, input);
    if (ndim > INF_MAX_DIMS) return inf__kernel_error(ctx, INF_EUNSUPPORTED, "rank %d", ndim);
    slot *sl = output_slot(ctx, i);
    slot_release(ctx->exec->mem, sl);
    inf_tensor_init_view(&sl->t, src->dtype, ndim, dims, src->data);
    /* share the reader's buffer, if the input lives in one */
    const inf__exec *e = ctx->exec;
    int v = ctx->node->inputs[input];
    if (v >= 0 && e->slots[v].buf && e->slots[v].value == src) {
        sl->buf = e->slots[v].buf;
        sl->buf->refs++;
    } else if (v >= 0 && e->slots[v].heap == src) {
        /* a heap tensor: copy instead of sharing ownership */
        inf_tensor *copy;
        if (inf_tensor_clone(src, &copy) != INF_OK) return inf__kernel_error(ctx, INF_ENOMEM, "out of memory");
        inf__tensor_set_shape(copy, src->dtype, ndim, dims);
        sl->heap = copy;
        sl->value = copy;
        ctx->out[i] = copy;
        if (out) *out = copy;
        return INF_OK;
    }
    sl->value = &sl->t;
    ctx->out[i] = sl->value;
    if (out) *out = sl->value;
    return INF_OK;
}

inf_status inf__kernel_output_value(inf__kernel_ctx *ctx, int i, inf_tensor *value) {
    if (i < 0 || i >= ctx->n_out) {
        inf_tensor_free(value);
        return inf__kernel_error(ctx, INF_EINTERNAL, "kernel wrote output %d of %d", i, ctx->n_out);
    }
    slot *sl = output_slot(ctx, i);
    slot_release(ctx->exec->mem, sl);
    sl->heap = value;
    sl->value = value;
    ctx->out[i] = value;
    return INF_OK;
}

void *inf__kernel_scratch(inf__kernel_ctx *ctx, size_t bytes) {
    inf__exec *e = ctx->exec;
    if (e->n_scratch >= INF_KERNEL_MAX_SCRATCH) {
        inf__kernel_error(ctx, INF_EINTERNAL, "kernel asked for more than %d scratch blocks", INF_KERNEL_MAX_SCRATCH);
        return NULL;
    }
    inf__buf *b = inf__mem_take(e->mem, bytes, e->planned);
    if (!b) {
        inf__kernel_error(ctx, INF_ENOMEM, "out of memory for %zu bytes of scratch%s", bytes, over_limit(e->mem));
        return NULL;
    }
    e->scratch[e->n_scratch++] = b;
    return b->data;
}

static void release_scratch(inf__exec *e) {
    while (e->n_scratch > 0) inf__mem_release(e->mem, e->scratch[--e->n_scratch]);
}

inf_status inf__kernel_error(inf__kernel_ctx *ctx, inf_status status, const char *fmt, ...) {
    if (!ctx->err) return status;
    char msg[INF_ERROR_MESSAGE_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return inf_error_set(ctx->err, status, "node '%s' (%s): %s", ctx->node->name, ctx->node->op_type, msg);
}

/* ---- running a frame ---- */

static void release_all(inf__exec *e) {
    for (int i = 0; i < e->n_slots; i++) slot_release(e->mem, &e->slots[i]);
}

static inf_status bind_values(inf__exec *e, inf_tensor *const *inputs) {
    const inf__graph *g = e->g;
    for (int v = 0; v < g->n_values; v++) {
        slot *sl = &e->slots[v];
        const inf__value *val = &g->values[v];
        sl->refs = val->n_consumers;
        if (val->role == INF_VALUE_INITIALIZER) sl->value = val->constant;
        else if (val->role == INF_VALUE_OUTER) sl->value = e->parent->slots[val->outer].value;
    }
    for (int i = 0; i < g->n_inputs; i++) e->slots[g->inputs[i]].value = inputs[i];
    return INF_OK;
}

static inline __attribute__((always_inline)) void finish_node(inf__exec *e, const inf__node *node) {
    for (int k = 0; k < node->n_inputs; k++) {
        int v = node->inputs[k];
        if (v >= 0 && --e->slots[v].refs == 0) slot_release(e->mem, &e->slots[v]);
    }
    for (int k = 0; k < node->n_implicit; k++) {
        int v = node->implicit[k];
        if (--e->slots[v].refs == 0) slot_release(e->mem, &e->slots[v]);
    }
    for (int k = 0; k < node->n_outputs; k++) {
        int v = node->outputs[k];
        if (v < 0) slot_release(e->mem, &e->slots[e->g->n_values + k]);
        else if (e->slots[v].refs == 0) slot_release(e->mem, &e->slots[v]); /* nobody reads it */
    }
}

/* ---- fused activations (inf__epilogue) ---- */

typedef struct epilogue_task {
    const inf__epilogue *ep;
    inf_tensor *t;
} epilogue_task;

static void epilogue_range(void *arg, int64_t begin, int64_t end) {
    epilogue_task *t = arg;
    inf__epilogue_apply(t->ep, t->t, begin, end);
}

static void apply_epilogue(inf__exec *e, const inf__node *node) {
    inf_tensor *y = e->out_ptrs[0];
    if (!y || y->kind != INF_KIND_TENSOR || !inf__dtype_is_float(y->dtype)) return;
    epilogue_task t = {&node->epilogue, y};
    inf__pool_range(e->threads, inf_tensor_numel(y), 16384, epilogue_range, &t);
}

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The run's time budget (options.max_run_ms), read from the coarse clock
 * (a few ns, millisecond resolution: enough for a budget in ms). */
static uint64_t coarse_now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static inline bool over_budget(const inf_session *s) {
    uint64_t deadline = atomic_load_explicit(&s->deadline_ns, memory_order_relaxed);
    return deadline && coarse_now_ns() > deadline;
}

static inf_status budget_error(const inf_session *s, const inf__node *node, inf_error *err) {
    return inf_error_set(err, INF_ETIMEDOUT, "node '%s': the run exceeded its time budget of %lld ms "
                      "(session option max_run_ms; infera run --max-run-ms)", node->name, (long long)s->max_run_ms);
}

/* Runs node's kernel (and fused activation) and checks its outputs; the
 * caller then releases what it read (finish_node). */
static inline __attribute__((always_inline)) inf_status run_kernel(inf__exec *e, const inf__node *node, inf_error *err) {
    for (int k = 0; k < node->n_inputs; k++)
        e->in_ptrs[k] = node->inputs[k] >= 0 ? e->slots[node->inputs[k]].value : NULL;
    for (int k = 0; k < node->n_outputs; k++) e->out_ptrs[k] = NULL;
    inf__kernel_ctx ctx = {
        .node = node,
        .n_in = node->n_inputs,
        .in = e->in_ptrs,
        .n_out = node->n_outputs,
        .out = e->out_ptrs,
        .pool = e->threads,
        .exec = e,
        .err = err,
    };
    const inf__bf16_node *bn = e->bf16 ? inf__bf16_plan_node(e->bf16, (int)(node - e->g->nodes)) : NULL;
    inf_status st = bn ? inf__bf16_node_run(&ctx, bn) : node->op->impl->run(&ctx);
    release_scratch(e);
    if (st != INF_OK) {
        if (err && err->status != st) inf__kernel_error(&ctx, st, "%s", inf_strerror(st));
        return st;
    }
    if (node->epilogue.kind != INF_EPILOGUE_NONE && !ctx.epilogue_done) apply_epilogue(e, node);
    for (int k = 0; k < node->n_outputs; k++)
        if (node->outputs[k] >= 0 && !e->slots[node->outputs[k]].value)
            return inf__kernel_error(&ctx, INF_EINTERNAL, "kernel did not produce output %d", k);
    return INF_OK;
}


/* Adds one call of the node to its counters: wall time, and the shape of
 * output 0 (still bound: the node's readers have not been released). */
static void prof_record(inf__exec *e, node_prof *p, const inf__node *node, uint64_t ns) {
    if (!p->calls || ns < p->min_ns) p->min_ns = ns;
    if (ns > p->max_ns) p->max_ns = ns;
    p->calls++;
    p->total_ns += ns;
    p->last_run = e->session->prof_runs;
    const inf_tensor *y = e->out_ptrs[0];
    p->ndim = node->n_outputs > 0 && y && y->kind == INF_KIND_TENSOR ? y->ndim : -1;
    if (p->ndim < 0) return;
    p->dtype = y->dtype;
    memcpy(p->dims, y->dims, (size_t)y->ndim * sizeof *y->dims);
}

/* The node loop, inlined at both call sites (exec_run) with `profile` a
 * constant: the plain loop has no timing code at all. */
static inline __attribute__((always_inline)) inf_status run_nodes(inf__exec *e, bool profile, inf_error *err) {
    inf_status st = INF_OK;
    for (int n = 0; n < e->g->n_nodes && st == INF_OK; n++) {
        const inf__node *node = &e->g->nodes[n];
        if (e->session->max_run_ms > 0 && over_budget(e->session)) {
            st = budget_error(e->session, node, err);
            break;
        }
        if (e->planned) inf__mem_step(e->mem, n);
        uint64_t t0 = profile ? now_ns() : 0;
        st = run_kernel(e, node, err);
        if (profile && st == INF_OK) prof_record(e, &e->prof[n], node, now_ns() - t0);
        if (st == INF_OK) finish_node(e, node);
    }
    return st;
}

static inf_status exec_run(inf__exec *e, inf_tensor *const *inputs, inf_error *err) {
    release_all(e);
    bind_values(e, inputs);
    if (e->planned) inf__mem_run_begin(e->mem);
    inf_status st = e->prof ? run_nodes(e, true, err) : run_nodes(e, false, err);
    if (st != INF_OK) release_all(e);
    if (e->planned) inf__mem_run_end(e->mem, e->g->n_nodes, st == INF_OK);
    if (st != INF_OK) return st;
    for (int i = 0; i < e->g->n_outputs; i++) e->outputs[i] = e->slots[e->g->outputs[i]].value;
    return INF_OK;
}

bool inf__kernel_out_of_time(const inf__kernel_ctx *ctx) {
    const inf_session *s = ctx->exec ? ctx->exec->session : NULL;
    return s && s->max_run_ms > 0 && over_budget(s);
}

inf_status inf__kernel_check_time(inf__kernel_ctx *ctx) {
    return inf__kernel_out_of_time(ctx) ? budget_error(ctx->exec->session, ctx->node, ctx->err) : INF_OK;
}

inf_status inf__kernel_run_subgraph(inf__kernel_ctx *ctx, const inf__graph *g, int n_inputs, inf_tensor *const *inputs,
                                    inf_tensor *const **outputs) {
    inf__exec *sub = NULL;
    for (int i = 0; i < ctx->exec->n_subs; i++)
        if (ctx->exec->subs[i].g == g) sub = ctx->exec->subs[i].exec;
    if (!sub) return inf__kernel_error(ctx, INF_EINTERNAL, "unknown subgraph");
    inf_session *s = ctx->exec->session;
    if (s->max_subgraph_runs > 0 &&
        atomic_fetch_add_explicit(&s->subgraph_runs, 1, memory_order_relaxed) >= s->max_subgraph_runs)
        return inf__kernel_error(ctx, INF_ERANGE, "the run exceeded its limit of %lld subgraph runs "
                                 "(session option max_subgraph_runs)", (long long)s->max_subgraph_runs);
    if (s->max_run_ms > 0 && over_budget(s)) /* between If bodies and Loop/Scan iterations */
        return budget_error(s, ctx->node, ctx->err);
    if (n_inputs != g->n_inputs)
        return inf__kernel_error(ctx, INF_EMODEL, "subgraph '%s' takes %d inputs, %d given", g->name, g->n_inputs, n_inputs);
    inf_status st = exec_run(sub, inputs, ctx->err);
    if (st != INF_OK) {
        inf__error_prefix(ctx->err, "in subgraph of node '%s'", ctx->node->name);
        return st;
    }
    *outputs = sub->outputs;
    return INF_OK;
}

/* ---- public API ---- */

void inf_session_options_init(inf_session_options *opts) {
    memset(opts, 0, sizeof *opts);
    opts->n_threads = 1;
}

inf_status inf_session_new(const inf_model *model, const inf_session_options *opts, inf_session **out, inf_error *err) {
    *out = NULL;
    inf_session *s = inf__calloc(1, sizeof *s);
    if (!s) return inf_error_set(err, INF_ENOMEM, "out of memory creating a session");
    s->model = model;
    s->n_threads = opts && opts->n_threads > 1 ? opts->n_threads : 1;
    s->mem_plan = !opts || opts->mem_plan >= 0;
    s->profile = opts && opts->profile;
    s->max_subgraph_runs = opts && opts->max_subgraph_runs > 0 ? opts->max_subgraph_runs : 0;
    s->max_run_ms = opts && opts->max_run_ms > 0 ? opts->max_run_ms : 0;
    s->max_memory_bytes = opts && opts->max_memory_bytes > 0 && (uint64_t)opts->max_memory_bytes <= SIZE_MAX
                              ? (size_t)opts->max_memory_bytes
                              : 0;
    inf__mem_init(&s->mem, s->mem_plan);
    s->mem.limit = s->max_memory_bytes;
    int precision = opts ? opts->precision : INF_PRECISION_FP32;
    if (precision != INF_PRECISION_FP32 && precision != INF_PRECISION_BF16) {
        inf_session_free(s);
        return inf_error_set(err, INF_EINVAL, "session option precision: unknown value %d (fp32 or bf16)", precision);
    }
    inf_status st = precision == INF_PRECISION_BF16 ? inf__bf16_plan_new(model->graph, &s->bf16, err) : INF_OK;
    if (st != INF_OK) {
        inf_session_free(s);
        return st;
    }
    st = inf__pool_new(s->n_threads, &s->threads);
    if (st != INF_OK) {
        inf_error_set(err, st, "cannot start %d threads", s->n_threads);
        inf_session_free(s);
        return st;
    }
    if ((st = exec_new(s, &s->mem, s->threads, model->graph, NULL, &s->main, err)) != INF_OK ||
        (st = inf__subbatch_new(s, s->n_threads, opts ? opts->sub_batch : 0, &s->sb, err)) != INF_OK) {
        inf_session_free(s);
        return st;
    }
    if (s->profile) s->n_profiled = count_profiled(s->main);
    *out = s;
    return INF_OK;
}

void inf_session_free(inf_session *s) {
    if (!s) return;
    inf__subbatch_free(s->sb);
    exec_free(s->main);
    inf__mem_deinit(&s->mem);
    inf__pool_free(s->threads);
    inf__bf16_plan_free(s->bf16);
    inf__free(s);
}

int inf_precision_from_name(const char *name) {
    if (name && !strcmp(name, "fp32")) return INF_PRECISION_FP32;
    if (name && !strcmp(name, "bf16")) return INF_PRECISION_BF16;
    return -1;
}

const char *inf_precision_name(int precision) {
    return precision == INF_PRECISION_FP32 ? "fp32" : precision == INF_PRECISION_BF16 ? "bf16" : "?";
}

const inf_model *inf_session_model(const inf_session *s) { return s->model; }
int inf_session_n_threads(const inf_session *s) { return s->n_threads; }

/* Checks a caller's input against the declared type: kind, dtype, rank and
 * every fixed dimension. */
static inf_status check_input(const inf_value_info *info, const inf_tensor *t, inf_error *err) {
    char got[128], want[160];
    if (!t) {
        if (info->is_optional) return INF_OK;
        return inf_error_set(err, INF_EINVAL, "input '%s' is missing", info->name);
    }
    if (info->kind != INF_KIND_TENSOR || t->kind != INF_KIND_TENSOR) {
        if (t->kind == INF_KIND_NONE && info->is_optional) return INF_OK;
        if ((int)t->kind != (int)info->kind)
            return inf_error_set(err, INF_ETYPE, "input '%s': expected a %s value, got %s", info->name,
                              info->kind == INF_KIND_SEQUENCE ? "sequence" : info->kind == INF_KIND_MAP ? "map" : "tensor",
                              inf_tensor_describe(t, got, sizeof got));
        return INF_OK;
    }
    bool ok = info->dtype == INF_DTYPE_UNDEFINED || info->dtype == t->dtype;
    inf_status st = ok ? INF_OK : INF_ETYPE;
    if (ok && info->ndim >= 0) {
        ok = info->ndim == t->ndim;
        for (int i = 0; ok && i < t->ndim; i++) ok = info->dims[i] < 0 || info->dims[i] == t->dims[i];
        st = ok ? INF_OK : INF_ESHAPE;
    }
    if (ok) return INF_OK;
    size_t off = (size_t)snprintf(want, sizeof want, "%s", inf_dtype_name(info->dtype));
    if (info->ndim >= 0) {
        off += (size_t)snprintf(want + off, sizeof want - off, "[");
        for (int i = 0; i < info->ndim && off < sizeof want; i++) {
            if (info->dims[i] >= 0) off += (size_t)snprintf(want + off, sizeof want - off, i ? ",%lld" : "%lld", (long long)info->dims[i]);
            else off += (size_t)snprintf(want + off, sizeof want - off, i ? ",%s" : "%s", info->dim_names[i] ? info->dim_names[i] : "?");
        }
        if (off < sizeof want) snprintf(want + off, sizeof want - off, "]");
    }
    return inf_error_set(err, st, "input '%s': expected %s, got %s", info->name, want, inf_tensor_describe(t, got, sizeof got));
}

static bool data_within(const inf_tensor *t, const inf_tensor *owner) {
    if (!owner || owner->kind != INF_KIND_TENSOR || !owner->data) return false;
    const char *p = t->data, *base = owner->data;
    return p >= base && p < base + (inf_tensor_nbytes(owner) ? inf_tensor_nbytes(owner) : 1);
}

/* An output that is (or views) a caller's input would dangle once the caller
 * frees that input: give it a buffer of its own. */
static inf_status detach_outputs_from_inputs(inf__exec *e, const inf_tensor *const *inputs, inf_error *err) {
    const inf__graph *g = e->g;
    for (int i = 0; i < g->n_outputs; i++) {
        slot *sl = &e->slots[g->outputs[i]];
        inf_tensor *v = sl->value;
        if (!v || sl->buf || sl->heap) continue;
        bool borrowed = false;
        for (int k = 0; k < g->n_inputs && !borrowed; k++)
            borrowed = inputs[k] && (v == inputs[k] || (v->kind == INF_KIND_TENSOR && data_within(v, inputs[k])));
        if (!borrowed) continue;
        inf_tensor *copy;
        if (inf_tensor_clone(v, &copy) != INF_OK)
            return inf_error_set(err, INF_ENOMEM, "out of memory copying output '%s'", g->values[g->outputs[i]].name);
        sl->heap = copy;
        sl->value = copy;
        e->outputs[i] = copy;
    }
    return INF_OK;
}

static inf_status session_run(inf_session *s, const inf_tensor *const *inputs, inf_tensor *const **outputs,
                              inf_error *err) {
    const inf_model *m = s->model;
    for (int i = 0; i < m->graph->n_inputs; i++) {
        inf_status st = check_input(&m->input_infos[i], inputs ? inputs[i] : NULL, err);
        if (st != INF_OK) return st;
    }
    atomic_store_explicit(&s->subgraph_runs, 0, memory_order_relaxed);
    uint64_t budget_ns = (uint64_t)(s->max_run_ms < INT64_MAX / 1000000 ? s->max_run_ms : INT64_MAX / 1000000) * 1000000u;
    atomic_store_explicit(&s->deadline_ns, s->max_run_ms > 0 ? coarse_now_ns() + budget_ns : 0, memory_order_relaxed);
    bool split = false;
    inf_status st = s->sb ? inf__subbatch_run(s->sb, inputs, &split, err) : INF_OK;
    if (st != INF_OK) return st;
    if (split) {
        *outputs = s->main->outputs;
        return INF_OK;
    }
    st = exec_run(s->main, (inf_tensor *const *)inputs, err);
    if (st == INF_OK) st = detach_outputs_from_inputs(s->main, inputs, err);
    if (st != INF_OK) return st;
    for (int i = 0; i < m->graph->n_outputs; i++)
        if (!s->main->outputs[i] && !m->output_infos[i].is_optional)
            return inf_error_set(err, INF_EINTERNAL, "output '%s' was not computed", m->output_infos[i].name);
    *outputs = s->main->outputs;
    return INF_OK;
}

static __attribute__((noinline)) inf_status session_run_profiled(inf_session *s, const inf_tensor *const *inputs,
                                                                  inf_tensor *const **outputs, inf_error *err) {
    s->prof_runs++;
    uint64_t t0 = now_ns();
    inf_status st = session_run(s, inputs, outputs, err);
    s->prof_run_ns += now_ns() - t0;
    return st;
}

inf_status inf_session_run(inf_session *s, const inf_tensor *const *inputs, inf_tensor *const **outputs, inf_error *err) {
    if (s->profile) return session_run_profiled(s, inputs, outputs, err);
    return session_run(s, inputs, outputs, err);
}

/* ---- frames for sub-batches (graph/subbatch.h) ---- */

struct inf__frame {
    inf__mem mem;
    inf__pool *threads; /* one thread: the frame's kernels run inline, with their own workspace */
    inf__exec *exec;
    inf__frame *next;   /* the session's frames (s->frames), for the profile */
};

inf_status inf__frame_new(inf_session *s, inf__frame **out, inf_error *err) {
    *out = NULL;
    inf__frame *f = inf__calloc(1, sizeof *f);
    if (!f) return inf_error_set(err, INF_ENOMEM, "out of memory creating a sub-batch frame");
    inf__mem_init(&f->mem, s->mem_plan);
    f->mem.limit = s->max_memory_bytes;
    inf_status st = inf__pool_new(1, &f->threads);
    if (st != INF_OK) st = inf_error_set(err, st, "out of memory creating a sub-batch frame");
    else st = exec_new(s, &f->mem, f->threads, s->model->graph, NULL, &f->exec, err);
    if (st != INF_OK) {
        inf__frame_free(f);
        return st;
    }
    f->next = s->frames;
    s->frames = f;
    *out = f;
    return INF_OK;
}

void inf__frame_free(inf__frame *f) {
    if (!f) return;
    inf__frame **link = f->exec ? &f->exec->session->frames : NULL;
    while (link && *link && *link != f) link = &(*link)->next;
    if (link && *link) *link = f->next;
    exec_free(f->exec);
    inf__mem_deinit(&f->mem);
    inf__pool_free(f->threads);
    inf__free(f);
}

inf_status inf__frame_run(inf__frame *f, inf_tensor *const *inputs, inf_tensor *const **outputs, inf_error *err) {
    inf_status st = exec_run(f->exec, inputs, err);
    if (st == INF_OK) *outputs = f->exec->outputs;
    return st;
}

size_t inf__frame_bytes(const inf__frame *f) {
    return f->mem.pool_peak; /* the pool's high-water mark: unchanged by a plan that replaced it */
}

inf_status inf__session_output(inf_session *s, int i, inf_dtype dtype, int ndim, const int64_t *dims, inf_tensor **out,
                               inf_error *err) {
    inf__exec *e = s->main;
    for (int j = 0; j < i; j++)
        if (e->g->outputs[j] == e->g->outputs[i]) { /* the same value twice */
            *out = e->outputs[i] = e->outputs[j];
            return INF_OK;
        }
    slot *sl = &e->slots[e->g->outputs[i]];
    slot_release(e->mem, sl);
    size_t nbytes = (size_t)inf__shape_numel(ndim, dims) * inf_dtype_size(dtype);
    if (!(sl->buf = inf__mem_take(e->mem, nbytes, false)))
        return inf_error_set(err, INF_ENOMEM, "out of memory for output '%s' (%zu bytes)%s",
                             e->g->values[e->g->outputs[i]].name, nbytes, over_limit(e->mem));
    inf_tensor_init_view(&sl->t, dtype, ndim, dims, sl->buf->data);
    sl->t.capacity = sl->buf->cap;
    sl->value = &sl->t;
    *out = e->outputs[i] = sl->value;
    return INF_OK;
}

void inf__session_memstats(const inf_session *s, inf__memstats *out) {
    const inf__mem *m = &s->mem;
    *out = (inf__memstats){m->arena_bytes, m->pool_bytes, m->pool_peak, m->n_plan,
                           m->runs_planned, m->n_plans, m->n_inplace};
}

void inf__session_release(inf_session *s) { release_all(s->main); }
inf__pool *inf__session_threads(inf_session *s) { return s->threads; }
inf__subbatch *inf__session_subbatch(inf_session *s) { return s->sb; }

/* ---- the profile (options.profile) ---- */

/* Profile entries of e: its nodes and, recursively, its subgraphs' nodes. */
static int count_profiled(const inf__exec *e) {
    int n = e->g->n_nodes;
    for (int i = 0; i < e->n_subs; i++) n += count_profiled(e->subs[i].exec);
    return n;
}

static const char *epilogue_name(inf__epilogue_kind kind) {
    switch (kind) {
    case INF_EPILOGUE_RELU: return "Relu";
    case INF_EPILOGUE_LEAKY_RELU: return "LeakyRelu";
    case INF_EPILOGUE_CLIP: return "Clip";
    case INF_EPILOGUE_SILU: return "Silu";
    default: return NULL;
    }
}

static int node_n_subgraphs(const inf__node *node) {
    int n = 0;
    for (int a = 0; a < node->n_attrs; a++)
        n += node->attrs[a].type == INF_ATTR_GRAPH ? 1 : node->attrs[a].type == INF_ATTR_GRAPHS ? node->attrs[a].n : 0;
    return n;
}

/* Adds counters p (one frame's) into entry o; the first frame seen sets it. */
static void prof_merge(inf_node_profile *o, const node_prof *p) {
    if (!p->calls) return;
    if (!o->calls || p->min_ns < o->min_ns) o->min_ns = p->min_ns;
    if (p->max_ns > o->max_ns) o->max_ns = p->max_ns;
    o->calls += p->calls;
    o->total_ns += p->total_ns;
    if (p->last_run < o->last_run) return;
    o->last_run = p->last_run;
    o->ndim = p->ndim;
    o->dtype = p->ndim >= 0 ? p->dtype : INF_DTYPE_UNDEFINED;
    memset(o->dims, 0, sizeof o->dims);
    if (p->ndim > 0) memcpy(o->dims, p->dims, (size_t)p->ndim * sizeof *p->dims);
}

/* Walks e's nodes in profile order (each node, then its subgraphs' nodes)
 * from entry *k on, merging e's counters into out[0, cap); names are set on
 * the first walk (first = the main frame).  parent: the entry of the node
 * owning e's graph, -1 for the main graph. */
static void prof_walk(const inf__exec *e, int parent, bool first, inf_node_profile *out, int cap, int *k) {
    int sub = 0;
    for (int n = 0; n < e->g->n_nodes; n++) {
        const inf__node *node = &e->g->nodes[n];
        int self = (*k)++;
        if (self < cap) {
            if (first)
                out[self] = (inf_node_profile){.name = node->name, .op_type = node->op_type,
                                               .activation = epilogue_name(node->epilogue.kind), .parent = parent,
                                               .graph = e->g->name ? e->g->name : "", .ndim = -1, .last_run = -1};
            prof_merge(&out[self], &e->prof[n]);
        }
        for (int j = node_n_subgraphs(node); j > 0 && sub < e->n_subs; j--)
            prof_walk(e->subs[sub++].exec, self, first, out, cap, k);
    }
}

static void prof_clear(inf__exec *e) {
    memset(e->prof, 0, (size_t)e->g->n_nodes * sizeof *e->prof);
    for (int i = 0; i < e->n_subs; i++) prof_clear(e->subs[i].exec);
}

int inf_session_profile(const inf_session *s, inf_node_profile *nodes, int capacity, inf_profile_totals *totals) {
    if (totals) *totals = (inf_profile_totals){s->prof_runs, s->prof_run_ns};
    if (!s->profile) return 0;
    if (!nodes || capacity < 0) capacity = 0;
    int k = 0;
    prof_walk(s->main, -1, true, nodes, capacity, &k);
    for (const inf__frame *f = s->frames; f; f = f->next) {
        k = 0;
        prof_walk(f->exec, -1, false, nodes, capacity, &k);
    }
    return s->n_profiled;
}

void inf_session_profile_reset(inf_session *s) {
    if (!s->profile) return;
    s->prof_runs = 0;
    s->prof_run_ns = 0;
    prof_clear(s->main);
    for (inf__frame *f = s->frames; f; f = f->next) prof_clear(f->exec);
}

/* ---- evaluating single nodes at load time (graph/optimize.c) ---- */

struct inf__evaluator {
    inf_session session; /* a one-thread session over the graph, never run as a whole */
};

inf_status inf__evaluator_new(const inf_model *model, const inf__graph *g, inf__evaluator **out, inf_error *err) {
    *out = NULL;
    inf__evaluator *ev = inf__calloc(1, sizeof *ev);
    if (!ev) return inf_error_set(err, INF_ENOMEM, "out of memory preparing constant folding");
    ev->session.model = model;
    ev->session.n_threads = 1;
    inf_status st = exec_new(&ev->session, &ev->session.mem, NULL, g, NULL, &ev->session.main, err);
    if (st != INF_OK) {
        inf__evaluator_free(ev);
        return st;
    }
    *out = ev;
    return INF_OK;
}

void inf__evaluator_free(inf__evaluator *ev) {
    if (!ev) return;
    exec_free(ev->session.main);
    inf__mem_deinit(&ev->session.mem);
    inf__free(ev);
}

inf_status inf__evaluator_run_node(inf__evaluator *ev, const inf__node *node, inf_tensor *const *inputs,
                                   inf_tensor **outputs, inf_error *err) {
    inf__exec *e = ev->session.main;
    for (int k = 0; k < node->n_outputs; k++) outputs[k] = NULL;
    for (int k = 0; k < node->n_inputs; k++) e->in_ptrs[k] = inputs[k];
    for (int k = 0; k < node->n_outputs; k++) e->out_ptrs[k] = NULL;
    inf__kernel_ctx ctx = {
        .node = node, .n_in = node->n_inputs, .in = e->in_ptrs, .n_out = node->n_outputs,
        .out = e->out_ptrs, .pool = NULL, .exec = e, .err = err,
    };
    ev->session.mem.over_limit = false;
    inf_status st = node->op->impl->run(&ctx);
    if (st == INF_ENOMEM && ev->session.mem.over_limit) st = INF_ERANGE; /* too big to fold: left to the run */
    release_scratch(e);
    for (int k = 0; k < node->n_outputs && st == INF_OK; k++) {
        if (!e->out_ptrs[k]) continue;
        if (inf_tensor_clone(e->out_ptrs[k], &outputs[k]) != INF_OK)
            st = inf_error_set(err, INF_ENOMEM, "out of memory folding node '%s'", node->name);
    }
    for (int k = 0; k < node->n_outputs; k++) slot_release(&ev->session.mem, output_slot(&ctx, k));
    if (st != INF_OK)
        for (int k = 0; k < node->n_outputs; k++) {
            inf_tensor_free(outputs[k]);
            outputs[k] = NULL;
        }
    return st;
}
