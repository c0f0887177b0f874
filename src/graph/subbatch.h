/*
 * subbatch.h -- sub-batch execution: the contract between the executor
 * (graph/session.c) and the splitter (graph/subbatch.c).  Private to
 * src/graph/.
 *
 * A batch-separable graph (every node treats axis 0 of its batch-carrying
 * inputs independently; inf__graph_batch_separable proves it from an op
 * whitelist and the ranks) gives for rows [b0, b1) of its inputs exactly
 * rows [b0, b1) of its outputs, bit for bit (every kernel is
 * batch-invariant, DESIGN.md section 1).  A large batch then runs as
 * sub-batches small enough for their activations to stay in L2, each on a
 * frame of its own (its own buffer pool and single-threaded kernels), one
 * frame per thread, writing rows of the full-batch outputs.
 */
#ifndef INF_SUBBATCH_H
#define INF_SUBBATCH_H

#include "graph/graph.h"
#include "infera/session.h"

/* ---- frames (graph/session.c) ----
 * A frame runs the session's main graph with its own buffer pool and its
 * own one-thread kernel pool (for the GEMM workspace); frames of one
 * session may run at the same time on different threads. */
typedef struct inf__frame inf__frame;
inf_status inf__frame_new(inf_session *s, inf__frame **out, inf_error *err);
void inf__frame_free(inf__frame *f);
/* Runs the graph on inputs (borrowed); *outputs are the frame's until its
 * next run. */
inf_status inf__frame_run(inf__frame *f, inf_tensor *const *inputs, inf_tensor *const **outputs, inf_error *err);
/* The frame's activation footprint: the most bytes its buffer pool held
 * (the first run at a shape is served by the pool, before any memory plan). */
size_t inf__frame_bytes(const inf__frame *f);
/* Gives graph output i of the session a buffer of dtype [dims] from the
 * session's pool (released by the next run); *out is what the run returns. */
inf_status inf__session_output(inf_session *s, int i, inf_dtype dtype, int ndim, const int64_t *dims, inf_tensor **out,
                               inf_error *err);
/* Drops every value the session's main frame holds (before a split run). */
void inf__session_release(inf_session *s);
inf__pool *inf__session_threads(inf_session *s);

/* ---- the splitter (graph/subbatch.c) ---- */
/* Is g batch-separable?  When not, why names the first node (or input or
 * output) that prevents it. */
bool inf__graph_batch_separable(const inf__graph *g, char *why, size_t why_size);

typedef struct inf__subbatch inf__subbatch;
/* *out = NULL (and INF_OK) when the graph is not separable or rows < 0 (off).
 * rows: rows per sub-batch, 0 = chosen from the measured footprint. */
inf_status inf__subbatch_new(inf_session *s, int n_threads, int rows, inf__subbatch **out, inf_error *err);
void inf__subbatch_free(inf__subbatch *sb);
/* Runs inputs as sub-batches when that pays (*done = true: the session's
 * outputs hold the results), else leaves them to the caller (*done =
 * false).  Inputs were checked by the caller. */
inf_status inf__subbatch_run(inf__subbatch *sb, const inf_tensor *const *inputs, bool *done, inf_error *err);

/* For tests: the session's splitter (NULL when off or not separable), the
 * runs it split so far, and the rows per sub-batch of the last one. */
inf__subbatch *inf__session_subbatch(inf_session *s);
int64_t inf__subbatch_runs(const inf__subbatch *sb);
int64_t inf__subbatch_rows(const inf__subbatch *sb);

#endif /* INF_SUBBATCH_H */
