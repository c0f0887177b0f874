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
} inf_session_options;

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

INF_API const inf_model *inf_session_model(const inf_session *session);
INF_API int inf_session_n_threads(const inf_session *session);

#ifdef __cplusplus
}
#endif

#endif /* INFERA_SESSION_H */
