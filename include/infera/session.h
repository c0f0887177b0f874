/*
 * session.h -- a model compiled for running: the place where inference happens.
 *
 * A session is created once from a model (kernels prepared, thread pool
 * started) and run many times.  It owns the memory of intermediate values and
 * outputs and reuses it: once warm (inputs of the same shapes as a previous
 * run), inf_session_run allocates nothing.  A session is used by one thread
 * at a time; run several sessions (they may share one model) for concurrency.
 */
#ifndef INFERA_SESSION_H
#define INFERA_SESSION_H

#include "infera/infera.h"
#include "infera/model.h"
#include "infera/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct inf_session inf_session;

typedef struct inf_session_options {
    int n_threads; /* threads the kernels may use, including the caller; 0 or 1 = one */
    int max_batch; /* largest batch expected (a hint for planning); 0 = unknown */
    int sub_batch; /* large batches of a batch-separable graph run as sub-batches of this many rows,
                      in parallel over the threads: 0 = automatic (sized to stay in cache),
                      < 0 = never split (the whole batch at once, kernels threaded) */
    int mem_plan;  /* 0 = plan intermediates into one arena and run element-wise ops in place
                      (default); < 0 = the buffer pool only, no in-place execution */
    int profile;   /* non-zero: count calls and time per node (inf_session_profile); 0 = off (default) */
    int64_t max_subgraph_runs; /* the most If/Loop/Scan body runs one inf_session_run may make, nested ones
                                  included; past it the run fails with INF_ERANGE.  A guard for servers and
                                  fuzzers against a Loop whose trip count is huge or comes from the data.
                                  0 = no limit (default) */
    int64_t max_run_ms;        /* time budget of one inf_session_run, in milliseconds: checked before each node
                                  and before each If/Loop/Scan body run (every Loop/Scan iteration); past it the
                                  run fails with INF_ETIMEDOUT naming the node.  A single kernel is not
                                  interrupted.  A guard against a Loop of 2^62 iterations in a run or a warm-up.
                                  0 = no limit (default); `infera run`/`bench` default to 60000 */
    int precision;             /* inf_precision: INF_PRECISION_FP32 (0, the default) computes in float32 as the
                                  model says.  INF_PRECISION_BF16, on request only: the constant float32 weights
                                  of MatMul/Gemm are rounded to bfloat16 at session creation and multiplied with
                                  activations rounded to bfloat16, accumulating in float32 (AVX512_BF16); other
                                  ops stay float32.  Outputs then differ from float32's (docs/sessions.md gives
                                  the measured change); inf_session_new fails with INF_EUNSUPPORTED on a CPU
                                  without AVX512_BF16 -- never a silent fallback */
    int64_t max_memory_bytes;  /* the most bytes the session's buffers (values, scratch, the planned arena) may
                                  hold at once, per frame; a request past it fails with INF_ENOMEM before it
                                  reaches the allocator, so a corrupt or hostile shape asking for terabytes is
                                  refused cleanly.  0 = the machine's physical memory (default) */
} inf_session_options;

/* Session precision (inf_session_options.precision). */
typedef enum inf_precision { INF_PRECISION_FP32 = 0, INF_PRECISION_BF16 = 1 } inf_precision;
/* "fp32" / "bf16" -> inf_precision; -1 when unknown.  inf_precision_name: the reverse ("?" if unknown). */
INF_API int inf_precision_from_name(const char *name);
INF_API const char *inf_precision_name(int precision);

INF_API void inf_session_options_init(inf_session_options *opts);

/* Compiles model into a session.  The model must outlive the session. */
INF_API inf_status inf_session_new(const inf_model *model, const inf_session_options *opts,
                                   inf_session **out, inf_error *err);
INF_API void inf_session_free(inf_session *session);

/* Runs the model.  inputs[i] is bound to inf_model_input(model, i); it is
 * borrowed for the call only, and may be NULL for an optional input.  On
 * success *outputs points at inf_model_n_outputs(model) values owned by the
 * session, valid until the next run or free.  Errors name the input or the
 * node that failed (INF_ESHAPE, INF_ETYPE, INF_EINVAL, ...). */
INF_API inf_status inf_session_run(inf_session *session, const inf_tensor *const *inputs,
                                   inf_tensor *const **outputs, inf_error *err);

/* ---- per-node profile (options.profile) ----
 * With options.profile set, every run times each node it executes (wall
 * time on the calling thread, from before its kernel to after its fused
 * activation; threaded kernels included) with CLOCK_MONOTONIC, into
 * counters allocated with the session: a profiled run allocates nothing
 * more than a plain one.  Nodes are those of the optimised graph, so op
 * types are the fused ones (FusedMatMul, ConvAdd, "Conv" + activation
 * "Clip").  Nodes inside If/Loop/Scan bodies have entries of their own
 * (parent >= 0); their time is also part of their parent's.  A batch run
 * as sub-batches (docs/sessions.md) counts one call per sub-batch, and the
 * sub-batches' times add up across threads. */
typedef struct inf_node_profile {
    const char *name;       /* node name (owned by the model) */
    const char *op_type;    /* op after load-time optimisation */
    const char *activation; /* activation fused into output 0 ("Relu", "LeakyRelu", "Clip"), or NULL */
    int parent;             /* entry of the If/Loop/Scan node whose subgraph holds this node; -1: main graph */
    const char *graph;      /* name of the graph holding the node (a body's own name: "then_body", "body", ...) */
    int64_t calls;          /* calls since the session was created or its profile reset */
    uint64_t total_ns, min_ns, max_ns; /* per call: sum, least, most (0 when never called) */
    int64_t last_run;       /* the run (1, 2, ... since creation or reset) of the last call; -1: never */
    int ndim;               /* output 0 at the last call: rank, or -1 (absent, not a tensor, never called) */
    inf_dtype dtype;
    int64_t dims[INF_MAX_DIMS];
} inf_node_profile;

typedef struct inf_profile_totals {
    int64_t runs;           /* inf_session_run calls since creation or reset */
    uint64_t run_ns;        /* their wall time, input checks and sub-batching included */
} inf_profile_totals;

/* Fills nodes[0, capacity) with the profile in graph order (each node
 * followed by the nodes of its subgraphs) and *totals (may be NULL); returns
 * the number of entries (call with capacity 0 to size the array).  0 when
 * the session does not profile.  Not while a run is in progress. */
INF_API int inf_session_profile(const inf_session *session, inf_node_profile *nodes, int capacity,
                                inf_profile_totals *totals);
/* Zeroes every counter (a no-op when the session does not profile). */
INF_API void inf_session_profile_reset(inf_session *session);

INF_API const inf_model *inf_session_model(const inf_session *session);
INF_API int inf_session_n_threads(const inf_session *session);

#ifdef __cplusplus
}
#endif

#endif /* INFERA_SESSION_H */
