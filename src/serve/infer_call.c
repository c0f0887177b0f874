/*
 * infer_call.c -- the protocol-neutral inference path: a decoded request
 * (srv_infer_request) for a model slot goes to the version's batcher and
 * comes back as outputs, with the metrics, deadlines and audit accounting
 * every protocol shares.  The gRPC transport (grpc_server.c) drives one
 * srv_infer_call per ModelInfer / stream message; routing, shadowing and
 * quotas hook in here, in one place, for every protocol: acquire picks the
 * version, run is where a request's cost is counted before the batcher.
 *
 * LIFE OF A CALL.  acquire (a reference on the serving version) -> the
 * protocol's codec fills call->infer against call->version->model -> run:
 * either it completes at once (an inline run on the calling thread, see
 * batcher.c INLINE RUNS; the outputs may be the held session's own tensors
 * until release) or it is queued and call->done runs later on the batcher's
 * scheduler thread -> result (deadline check, failure accounting) -> the
 * protocol encodes the outputs -> succeeded (metrics, audit, monitoring:
 * the prediction log's rows and the drift window take the tensors here,
 * before release frees them; monitor_hooks.c) -> release.
 * Messages are the HTTP endpoint's, word for word.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "serve/serve.h"

void inf__serve_infer_call_init(srv_infer_call *c, srv_server *srv) {
    memset(c, 0, sizeof *c);
    c->srv = srv;
    c->caller = -1;
    c->t_start_ns = inf__serve_now_ns();
}

/* ---- the two hooks every protocol passes through ----------------------------------
 * ROUTING: which version answers a request for (name, version) from caller;
 * today the one serving name (or the version asked for).  Traffic splitting
 * and shadowing (issue 25) decide here, for HTTP and gRPC alike.
 * ADMISSION: a request's cost (one request, rows) is counted here, after
 * decoding and before the batcher; per-caller quotas refuse here. */
inf_status inf__serve_resolve_version(srv_server *srv, const char *name, const char *version, int caller,
                                      const char *sticky_key, srv_version **out, inf_error *err) {
    char slot[129], principal[129];
    if (!sticky_key && inf__serve_traffic_sticky_principal(srv->traffic)) {
        inf__serve_models_caller_name(srv->models, caller, principal, sizeof principal);
        sticky_key = principal;
    }
    if (inf__serve_traffic_pick(srv->traffic, name, sticky_key, slot, sizeof slot)) name = slot; /* traffic.c */
    inf_status st = inf__serve_models_acquire(srv->models, name, version, out, err);
    if (st == INF_ENOENT && inf__serve_llm_ready(srv, name, NULL)) /* a GGUF model of that name */
        return inf_error_set(err, INF_EINVAL,
                             "model '%s' is a GGUF language model: it answers the OpenAI routes (/v1/completions, "
                             "/v1/chat/completions), not KServe V2 tensor inference",
                             name);
    return st;
}

inf_status inf__serve_admit(srv_server *srv, srv_version *v, int caller, int64_t rows, int *retry_after_s,
                            inf_error *err) {
    (void)v;
    char principal[129];
    inf__serve_models_caller_name(srv->models, caller, principal, sizeof principal);
    double wait = inf__serve_quotas_take(srv->quotas, principal, rows); /* quota.c */
    if (retry_after_s) *retry_after_s = wait > 0 ? (int)ceil(wait) : 0;
    if (wait == 0) return INF_OK;
    if (wait < 0)
        return inf_error_set(err, INF_EBUSY,
                             "caller '%s': %lld rows in one request exceed its quota's row burst; send fewer rows",
                             principal, (long long)rows);
    return inf_error_set(err, INF_EBUSY, "caller '%s' is over its quota; retry after %d s", principal,
                         (int)ceil(wait) > 0 ? (int)ceil(wait) : 1);
}

inf_status inf__serve_infer_call_acquire(srv_infer_call *c, const char *name, const char *version, inf_error *err) {
    inf__serve_copy_str(c->requested, sizeof c->requested, name);
    return inf__serve_resolve_version(c->srv, name, version, c->caller, NULL, &c->version, err);
}

void inf__serve_infer_call_count_failure(srv_infer_call *c, int reason) {
    if (c->version && c->version->metrics)
        atomic_fetch_add_explicit(&c->version->metrics->failure[reason], 1, memory_order_relaxed);
}

int inf__serve_infer_failure_reason(inf_status st) {
    switch (st) {
    case INF_EBUSY: return SRV_FAIL_QUEUE_FULL;
    case INF_ETIMEDOUT: return SRV_FAIL_TIMEOUT;
    case INF_EINVAL: case INF_EFORMAT: case INF_ESHAPE: case INF_ETYPE: case INF_ERANGE: return SRV_FAIL_BAD_REQUEST;
    default: return SRV_FAIL_COMPUTE;
    }
}

static void job_done(srv_job *job, void *user) {
    (void)job;
    srv_infer_call *c = user;
    c->done(c);
}

/* The job's pointer arrays: the call's own slots for small models. */
static inf_status alloc_job_arrays(srv_infer_call *c, inf_error *err) {
    const inf_model *m = c->version->model;
    size_t n_in = (size_t)inf_model_n_inputs(m) + 1, n_out = (size_t)inf_model_n_outputs(m) + 1;
    memset(c->job_in_buf, 0, sizeof c->job_in_buf);
    memset(c->job_out_buf, 0, sizeof c->job_out_buf);
    c->job_inputs = n_in <= SRV_INLINE_IO ? c->job_in_buf : calloc(n_in, sizeof *c->job_inputs);
    c->job_outputs = n_out <= SRV_INLINE_IO ? c->job_out_buf : calloc(n_out, sizeof *c->job_outputs);
    if (!c->job_inputs || !c->job_outputs) return inf_error_set(err, INF_ENOMEM, "out of memory");
    return INF_OK;
}

static int reserve_store(srv_infer_call *c, size_t need) {
    if (need <= c->out_store_cap) return 1;
    free(c->out_store);
    c->out_store = malloc(need);
    c->out_store_cap = c->out_store ? need : 0;
    return c->out_store != NULL;
}

int inf__serve_infer_call_run(srv_infer_call *c, inf_error *err) {
    srv_version *v = c->version;
    srv_job *job = &c->job;
    memset(job, 0, sizeof *job);
    if (alloc_job_arrays(c, err) != INF_OK) return -1;
    int64_t rows = -1;
    for (int i = 0; i < c->infer.n_inputs; i++) {
        srv_input *in = &c->infer.inputs[i];
        c->job_inputs[in->model_index] = &in->t;
        int64_t r = in->ndim >= 1 ? in->dims[0] : 1;
        if (rows < 0) rows = r;
        if (r != rows && inf__serve_batcher_batchable(v->batcher)) {
            inf__serve_infer_call_count_failure(c, SRV_FAIL_BAD_REQUEST);
            inf_error_set(err, INF_EINVAL, "input '%s': batch size %lld differs from the other inputs' %lld", in->name,
                          (long long)r, (long long)rows);
            return -1;
        }
    }
    job->rows = rows < 0 ? 1 : rows;
    inf_status ast = inf__serve_admit(c->srv, v, c->caller, job->rows, NULL, err);
    if (ast != INF_OK) { /* over the caller's quota: RESOURCE_EXHAUSTED */
        inf__serve_infer_call_count_failure(c, SRV_FAIL_QUOTA);
        return -1;
    }
    job->inputs = c->job_inputs;
    job->outputs = c->job_outputs;
    job->done = job_done;
    job->done_user = c;
    int64_t t_us = c->infer.timeout_us > 0 ? c->infer.timeout_us : c->srv->opt.request_timeout_ms * 1000;
    job->deadline_ns = t_us > 0 ? inf__serve_now_ns() + (uint64_t)t_us * 1000u : 0;
    job->timeout_us = t_us;
    job->hold = 1; /* an inline run answers from the session's outputs, then releases it */
    if (inf__serve_batcher_try_inline(v->batcher, job)) return 0;
    job->hold = 0;
    size_t store = inf__serve_batcher_store_bytes(v->batcher, job->rows);
    if (store && reserve_store(c, store)) {
        job->out_store = c->out_store;
        job->out_store_cap = c->out_store_cap;
        job->out_views = c->out_views;
    }
    inf_status st = inf__serve_batcher_submit(v->batcher, job);
    if (st == INF_OK) return 1;
    inf__serve_infer_call_count_failure(c, SRV_FAIL_QUEUE_FULL);
    if (st == INF_EBUSY)
        inf_error_set(err, INF_EBUSY, "model '%s' version %s: queue full (%d requests waiting); retry later", v->name,
                      v->version, c->srv->opt.max_queue);
    else
        inf_error_set(err, INF_ENOENT, "model '%s' version %s is being unloaded; retry", v->name, v->version);
    return -1;
}

/* A job that finished after its deadline is refused and its result dropped
 * (routes.c past_deadline: the same rule and message for HTTP). */
static void past_deadline(srv_infer_call *c) {
    srv_job *j = &c->job;
    if (j->err.status != INF_OK || !j->deadline_ns) return;
    uint64_t now = inf__serve_now_ns();
    if (now <= j->deadline_ns) return;
    j->err.status = INF_ETIMEDOUT;
    uint64_t q = j->t_start_ns > j->t_enqueue_ns ? j->t_start_ns - j->t_enqueue_ns : 0;
    uint64_t cu = j->t_end_ns > j->t_start_ns ? j->t_end_ns - j->t_start_ns : 0;
    snprintf(j->err.message, sizeof j->err.message,
             "request timed out: %llu us in the queue and %llu us computing exceed its timeout of %llu us; "
             "result dropped",
             (unsigned long long)(q / 1000), (unsigned long long)(cu / 1000), (unsigned long long)j->timeout_us);
}

inf_status inf__serve_infer_call_result(srv_infer_call *c, inf_error *err) {
    past_deadline(c);
    srv_version *v = c->version;
    if (c->job.err.status == INF_OK) return INF_OK;
    inf__serve_infer_call_count_failure(c, inf__serve_infer_failure_reason(c->job.err.status));
    return inf_error_set(err, c->job.err.status, "model '%s' version %s: %s", v->name, v->version, c->job.err.message);
}

void inf__serve_infer_call_succeeded(srv_infer_call *c) {
    srv_model_metrics *m = c->version->metrics;
    if (m) {
        uint64_t us = (inf__serve_now_ns() - c->t_start_ns) / 1000;
        atomic_fetch_add_explicit(&m->success, 1, memory_order_relaxed);
        atomic_fetch_add_explicit(&m->request_us, us, memory_order_relaxed);
        inf__serve_hist_observe(&m->request_hist, (double)us);
    }
    inf__serve_models_note_prediction(c->srv->models, c->version, c->caller, c->job.rows);
    /* monitoring (monitor_hooks.c): log rows and drift window from the tensors, before release frees them */
    inf__serve_monitor_tensors(c->srv, c->version, (const inf_tensor *const *)c->job_inputs, c->job_outputs,
                               c->job.rows, c->infer.id);
    /* answered: a shadow copy (traffic.c) runs after, on copies of the inputs and outputs */
    inf__serve_traffic_shadow(c->srv, c->requested, c->version->model, c->job_inputs, c->job_outputs, c->job.rows);
}

void inf__serve_infer_call_release(srv_infer_call *c) {
    if (c->version) {
        inf__serve_batcher_release(c->version->batcher, &c->job); /* no-op unless an inline run holds a session */
        if (c->job_outputs && !c->job.outputs_borrowed) {
            int n = inf_model_n_outputs(c->version->model);
            for (int i = 0; i < n; i++) inf_tensor_free(c->job_outputs[i]);
        }
    }
    if (c->job_outputs != c->job_out_buf) free(c->job_outputs);
    if (c->job_inputs != c->job_in_buf) free(c->job_inputs);
    c->job_outputs = NULL;
    c->job_inputs = NULL;
    inf__serve_infer_request_clear(&c->infer);
    if (c->version) inf__serve_version_release(c->version);
    c->version = NULL;
    memset(&c->job, 0, sizeof c->job);
}

void inf__serve_infer_call_free(srv_infer_call *c) {
    inf__serve_infer_call_release(c);
    free(c->out_store);
    c->out_store = NULL;
    c->out_store_cap = 0;
}
