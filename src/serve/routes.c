/*
 * routes.c -- every HTTP route of `infera serve` in one table, and the
 * handlers (shared/DESIGN.md §5, shared/reference/kserve-v2.md §2.1).
 *
 * A route is (method, path pattern, handler, access).  Patterns are matched
 * segment by segment; "{name}" and "{version}" capture one segment each.  A
 * path that matches with another method answers 405, none 404.  Access:
 *   OPEN_HEALTH   health, readiness and metadata: open unless --auth-health
 *   OPEN_METRICS  /metrics: open unless --auth-metrics
 *   PREDICT       needs the predictor role on {name} (when auth is on)
 *   ADMIN         repository control: publisher on {name} (index: global)
 * Handlers return 0 with rq->status/resp filled, or 1 after suspending the
 * connection for a batcher job (inf__serve_route_complete answers then).
 */
#include <cjson/cJSON.h>
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "infera/io.h"
#include "infera/pipeline.h"
#include "infera/registry.h"
#include "runtime/score.h"
#include "serve/serve.h"

enum { OPEN_HEALTH = 1, OPEN_METRICS = 2, PREDICT = 4, ADMIN = 8, CONSOLE = 16 /* answered by `infera ui` too */ };

typedef int (*route_fn)(srv_request *rq);
struct srv_route {
    const char *method;
    const char *pattern;
    route_fn fn;
    int access;
    const char *what; /* for errors and docs */
};

static int h_live(srv_request *rq);
static int h_ready(srv_request *rq);
static int h_server_meta(srv_request *rq);
static int h_model_meta(srv_request *rq);
static int h_model_ready(srv_request *rq);
static int h_infer(srv_request *rq);
static int h_records(srv_request *rq);
static int h_repo_index(srv_request *rq);
static int h_repo_load(srv_request *rq);
static int h_repo_unload(srv_request *rq);
static int h_metrics(srv_request *rq);

static const srv_route routes[] = {
    {"GET", "/v2/health/live", h_live, OPEN_HEALTH | CONSOLE, "server live"},
    {"GET", "/v2/health/ready", h_ready, OPEN_HEALTH, "server ready"},
    {"GET", "/v2", h_server_meta, OPEN_HEALTH, "server metadata"},
    {"GET", "/v2/models/{name}", h_model_meta, OPEN_HEALTH, "model metadata"},
    {"GET", "/v2/models/{name}/versions/{version}", h_model_meta, OPEN_HEALTH, "model metadata"},
    {"GET", "/v2/models/{name}/ready", h_model_ready, OPEN_HEALTH, "model ready"},
    {"GET", "/v2/models/{name}/versions/{version}/ready", h_model_ready, OPEN_HEALTH, "model ready"},
    {"POST", "/v2/models/{name}/infer", h_infer, PREDICT, "inference"},
    {"POST", "/v2/models/{name}/versions/{version}/infer", h_infer, PREDICT, "inference"},
    {"POST", "/v2/models/{name}/records", h_records, PREDICT, "records"},
    {"POST", "/v2/models/{name}/versions/{version}/records", h_records, PREDICT, "records"},
    {"POST", "/v2/repository/index", h_repo_index, ADMIN, "repository index"},
    {"POST", "/v2/repository/models/{name}/load", h_repo_load, ADMIN, "repository load"},
    {"POST", "/v2/repository/models/{name}/unload", h_repo_unload, ADMIN, "repository unload"},
    {"GET", "/metrics", h_metrics, OPEN_METRICS | CONSOLE, "metrics"},
    /* the read-only console (ui.c, --ui): the page holds no data; its state is guarded like /metrics */
    {"GET", "/ui", inf__serve_ui_page, CONSOLE, "console"},
    {"GET", "/ui/state", inf__serve_ui_state, OPEN_METRICS | CONSOLE, "console state"},
    {"GET", "/ui/registry", inf__serve_ui_registry, OPEN_METRICS | CONSOLE, "console registry"},
    {"GET", "/ui/audit", inf__serve_ui_audit, OPEN_METRICS | CONSOLE, "console audit log"},
    {"GET", "/ui/lineage", inf__serve_ui_lineage, OPEN_METRICS | CONSOLE, "console lineage"},
    {"GET", "/ui/quality", inf__serve_ui_quality, OPEN_METRICS | CONSOLE, "console quality history"},
    /* OpenAI-compatible generative endpoints (openai.c); access 0: the body
     * names the model, so openai.c checks the predictor role once parsed */
    {"POST", "/v1/completions", inf__serve_openai_completions, 0, "completions"},
    {"POST", "/v1/chat/completions", inf__serve_openai_chat, 0, "chat completions"},
    {"POST", "/v1/embeddings", inf__serve_openai_embeddings, 0, "embeddings"},
    {"GET", "/v1/models", inf__serve_openai_models, OPEN_HEALTH, "models"},
    {"GET", "/v1/models/{name}", inf__serve_openai_model, OPEN_HEALTH, "model"},
};
#define N_ROUTES ((int)(sizeof routes / sizeof routes[0]))

/* ---- matching ----------------------------------------------------------------- */

/* 1 when path matches pattern; captures into params[0] ({name}), params[1] ({version}). */
static int match(const char *pattern, const char *path, char params[2][160]) {
    const char *p = pattern, *s = path;
    while (*p && *s) {
        if (*p == '{') {
            int slot = !strncmp(p, "{version}", 9);
            const char *close = strchr(p, '}');
            const char *seg_end = strchr(s, '/');
            size_t n = seg_end ? (size_t)(seg_end - s) : strlen(s);
            if (n == 0 || n >= 160) return 0;
            memcpy(params[slot], s, n);
            params[slot][n] = 0;
            p = close + 1;
            s += n;
            continue;
        }
        if (*p != *s) return 0;
        p++, s++;
    }
    return !*p && !*s;
}

static int status_of(inf_status st) { return inf_status_http_code(st); }

int inf__serve_route_dispatch(srv_request *rq) {
    srv_server *srv = rq->srv;
    int path_matched = 0;
    char allowed[64] = "";
    for (int i = 0; i < N_ROUTES; i++) {
        char params[2][160];
        params[0][0] = params[1][0] = 0;
        if (!match(routes[i].pattern, rq->url, params)) continue;
        path_matched = 1;
        if (strcmp(routes[i].method, rq->method)) {
            if (!strstr(allowed, routes[i].method))
                snprintf(allowed + strlen(allowed), sizeof allowed - strlen(allowed), "%s%s", allowed[0] ? ", " : "",
                         routes[i].method);
            continue;
        }
        if (srv->opt.console_only && !(routes[i].access & CONSOLE)) { /* `infera ui`: the console only */
            path_matched = 0;
            break;
        }
        rq->route = &routes[i];
        inf__serve_copy_str(rq->params[0], sizeof rq->params[0], params[0]);
        inf__serve_copy_str(rq->params[1], sizeof rq->params[1], params[1]);
        int acc = routes[i].access;
        int need_auth = (acc & (PREDICT | ADMIN)) || ((acc & OPEN_HEALTH) && srv->opt.auth_health) ||
                        ((acc & OPEN_METRICS) && srv->opt.auth_metrics);
        if (need_auth && inf__serve_models_auth_enabled(srv->models)) {
            const char *h = inf__serve_http_header(rq, "Authorization");
            const char *tok = NULL;
            if (h && !strncasecmp(h, "Bearer ", 7)) tok = h + 7;
            inf_error e = {0};
            char reg_name[160];
            const char *model = NULL;
            if (rq->params[0][0]) {
                inf__serve_models_registry_name(srv->models, rq->params[0], reg_name, sizeof reg_name);
                model = reg_name;
            }
            inf_status st = inf__serve_models_authorize(srv->models, tok, model, (acc & ADMIN) != 0, &rq->caller, &e);
            if (st != INF_OK) {
                inf__serve_copy_str(rq->log_model, sizeof rq->log_model, model ? model : "");
                inf__serve_error(rq, st == INF_EAUTH ? 401 : st == INF_EDENIED ? 403 : 503, "%s: %s",
                                 routes[i].what, e.message);
                return 0;
            }
        }
        return routes[i].fn(rq);
    }
    if (path_matched) {
        inf__serve_error(rq, 405, "method %s not allowed on %s (allowed: %s)", rq->method, rq->url, allowed);
        inf__serve_copy_str(rq->allow, sizeof rq->allow, allowed); /* RFC 9110 §15.5.6: a 405 names them */
    } else
        inf__serve_error(rq, 404, "no route for %s %s", rq->method, rq->url);
    return 0;
}

/* ---- health and metadata ----------------------------------------------------- */

static void json_body(srv_request *rq, int status, const char *s) {
    rq->status = status;
    inf__serve_buf_puts(&rq->resp, s);
    rq->content_type = "application/json";
}

static int h_live(srv_request *rq) {
    json_body(rq, 200, "{\"live\":true}");
    return 0;
}

static int h_ready(srv_request *rq) {
    int ready = inf__serve_ready(rq->srv);
    json_body(rq, ready ? 200 : 400, ready ? "{\"ready\":true}" : "{\"ready\":false}");
    return 0;
}

static int h_server_meta(srv_request *rq) {
    json_body(rq, 200, "{\"name\":\"infera\",\"version\":\"");
    inf__serve_buf_puts(&rq->resp, inf_version());
    inf__serve_buf_puts(&rq->resp, "\",\"extensions\":[\"binary_tensor_data\",\"model_repository\",\"parameters\","
                                   "\"metrics\",\"records\"]}");
    return 0;
}

/* A sequence-of-maps output as /infer sends it: [-1, n_classes] of the
 * values' type, with the class labels (kserve_v2.c, srv_map_seq). */
static void map_output_meta(srv_buf *b, const char *name, const srv_map_output *mo) {
    inf__serve_buf_puts(b, "{\"name\":");
    inf__serve_buf_json_str(b, name, strlen(name));
    inf__serve_buf_printf(b, ",\"datatype\":\"%s\",\"shape\":[-1,%lld],\"parameters\":{\"class_labels\":",
                          inf__serve_kserve_dtype(mo->dtype), (long long)mo->n_classes);
    inf__serve_buf_json_str(b, mo->labels, strlen(mo->labels));
    inf__serve_buf_puts(b, "}}");
}

static void tensor_meta(srv_buf *b, const inf_value_info *vi) {
    inf__serve_buf_puts(b, "{\"name\":");
    inf__serve_buf_json_str(b, vi->name, strlen(vi->name));
    const char *dt = vi->kind == INF_KIND_TENSOR ? inf__serve_kserve_dtype(vi->dtype) : NULL;
    inf__serve_buf_puts(b, ",\"datatype\":");
    if (dt) {
        inf__serve_buf_json_str(b, dt, strlen(dt));
    } else {
        char tmp[64];
        snprintf(tmp, sizeof tmp, "%s(%s)",
                 vi->kind == INF_KIND_SEQUENCE ? "SEQUENCE" : vi->kind == INF_KIND_MAP ? "MAP" : "TENSOR",
                 inf_dtype_name(vi->dtype));
        inf__serve_buf_json_str(b, tmp, strlen(tmp));
    }
    inf__serve_buf_puts(b, ",\"shape\":[");
    for (int d = 0; d < vi->ndim; d++) {
        if (d) inf__serve_buf_put(b, ",", 1);
        inf__serve_buf_i64(b, vi->dims[d] >= 0 ? vi->dims[d] : -1);
    }
    inf__serve_buf_puts(b, "]}");
}

/* The request header a route is sticky on (--route-sticky header:NAME), or NULL. */
static const char *route_header(srv_request *rq) {
    const char *header = inf__serve_traffic_sticky_header(rq->srv->traffic);
    return header ? inf__serve_http_header(rq, header) : NULL;
}

/* The version serving the request's model: a route's target (chosen by
 * weight, or the target serving the version asked for), else the slot. */
static int acquire(srv_request *rq, srv_version **v) {
    inf_error e = {0};
    if (inf__serve_resolve_version(rq->srv, rq->params[0], rq->params[1], rq->caller, route_header(rq), v, &e) !=
        INF_OK) {
        inf__serve_error(rq, e.status == INF_EINVAL ? 400 : 404, "%s", e.message);
        return -1;
    }
    inf__serve_copy_str(rq->log_model, sizeof rq->log_model, (*v)->name);
    inf__serve_copy_str(rq->log_version, sizeof rq->log_version, (*v)->version);
    return 0;
}

/* A GGUF language model's metadata: no tensors (it answers the OpenAI routes), its context length. */
static int llm_meta(srv_request *rq) {
    srv_llm *l = inf__serve_llm_acquire(rq->srv, rq->params[0]);
    if (!l) return 0;
    srv_buf *b = &rq->resp;
    rq->status = 200;
    inf__serve_buf_puts(b, "{\"name\":");
    inf__serve_buf_json_str(b, rq->params[0], strlen(rq->params[0]));
    int64_t version = inf__serve_llm_registry_version(l);
    inf__serve_buf_printf(b,
                          ",\"versions\":[\"%lld\"],\"platform\":\"gguf\",\"inputs\":[],\"outputs\":[],\"parameters\":{"
                          "\"max_model_len\":%d,\"endpoints\":[\"/v1/completions\",\"/v1/chat/completions\"]}}",
                          (long long)(version > 0 ? version : 1), inf__serve_llm_n_ctx(l));
    inf__serve_llm_release(l);
    return 1;
}

static int h_model_meta(srv_request *rq) {
    srv_version *v;
    if (inf__serve_llm_ready(rq->srv, rq->params[0], rq->params[1]) && llm_meta(rq)) return 0;
    if (acquire(rq, &v)) return 0;
    srv_buf *b = &rq->resp;
    rq->status = 200;
    inf__serve_buf_puts(b, "{\"name\":");
    inf__serve_buf_json_str(b, v->name, strlen(v->name));
    inf__serve_buf_puts(b, ",\"versions\":[");
    inf__serve_buf_json_str(b, v->version, strlen(v->version));
    inf__serve_buf_puts(b, "],\"platform\":\"onnx_onnxv1\",\"inputs\":[");
    for (int i = 0; i < inf_model_n_inputs(v->model); i++) {
        if (i) inf__serve_buf_put(b, ",", 1);
        tensor_meta(b, inf_model_input(v->model, i));
    }
    inf__serve_buf_puts(b, "],\"outputs\":[");
    for (int i = 0; i < inf_model_n_outputs(v->model); i++) {
        if (i) inf__serve_buf_put(b, ",", 1);
        const srv_map_output *mo = inf__serve_batcher_map_output(v->batcher, i);
        if (mo) map_output_meta(b, inf_model_output(v->model, i)->name, mo);
        else tensor_meta(b, inf_model_output(v->model, i));
    }
    inf__serve_buf_printf(b, "],\"parameters\":{\"max_batch_size\":%d,\"dynamic_batching\":%s,\"records\":%s}}",
                          rq->srv->opt.max_batch, inf__serve_batcher_batchable(v->batcher) ? "true" : "false",
                          v->pipeline ? "true" : "false");
    inf__serve_version_release(v);
    return 0;
}

static int h_model_ready(srv_request *rq) {
    srv_version *v;
    inf_error e = {0};
    inf_status st = inf__serve_models_acquire(rq->srv->models, rq->params[0], rq->params[1], &v, &e);
    int llm = st != INF_OK && inf__serve_llm_ready(rq->srv, rq->params[0], rq->params[1]); /* a GGUF model */
    if (llm)
        st = INF_OK, v = NULL;
    rq->status = st == INF_OK ? 200 : 400;
    inf__serve_buf_puts(&rq->resp, "{\"name\":");
    inf__serve_buf_json_str(&rq->resp, rq->params[0], strlen(rq->params[0]));
    inf__serve_buf_puts(&rq->resp, st == INF_OK ? ",\"ready\":true}" : ",\"ready\":false,\"error\":");
    if (st != INF_OK) {
        inf__serve_buf_json_str(&rq->resp, e.message, strlen(e.message));
        inf__serve_buf_puts(&rq->resp, "}");
    } else if (v) {
        inf__serve_version_release(v);
    }
    return 0;
}

static int h_metrics(srv_request *rq) {
    rq->status = 200;
    rq->content_type = "text/plain; version=0.0.4; charset=utf-8";
    inf__serve_metrics_render(&rq->srv->metrics, &rq->resp, inf__serve_models_n_loaded(rq->srv->models));
    inf__serve_llm_metrics_render(rq->srv, &rq->resp);
    inf__serve_quotas_metrics(rq->srv->quotas, &rq->resp);
    inf__serve_traffic_metrics(rq->srv->traffic, &rq->resp);
    inf__serve_monitor_metrics(rq->srv, &rq->resp);
    inf__serve_grpc_metrics_render(rq->srv, &rq->resp);
    return 0;
}

/* ---- inference ------------------------------------------------------------------ */

static void count_failure(srv_request *rq, int reason) {
    if (rq->version && rq->version->metrics)
        atomic_fetch_add_explicit(&rq->version->metrics->failure[reason], 1, memory_order_relaxed);
}

static int reason_of(inf_status st) {
    switch (st) {
    case INF_EBUSY: return SRV_FAIL_QUEUE_FULL;
    case INF_ETIMEDOUT: return SRV_FAIL_TIMEOUT;
    case INF_EINVAL: case INF_EFORMAT: case INF_ESHAPE: case INF_ETYPE: case INF_ERANGE: return SRV_FAIL_BAD_REQUEST;
    default: return SRV_FAIL_COMPUTE;
    }
}

/* Grows rq->out_store to at least need bytes (batcher.c OUTPUT STORE);
 * 0 when out of memory (the job's outputs are then allocated). */
static int reserve_store(srv_request *rq, size_t need) {
    if (need <= rq->out_store_cap) return 1;
    free(rq->out_store);
    rq->out_store = malloc(need);
    rq->out_store_cap = rq->out_store ? need : 0;
    return rq->out_store != NULL;
}

/* Queues rq->job on the version's batcher, suspending the connection first. */
static int submit(srv_request *rq, int64_t timeout_us) {
    srv_server *srv = rq->srv;
    srv_job *job = &rq->job;
    job->inputs = rq->job_inputs;
    job->outputs = rq->job_outputs;
    job->done = inf__serve_http_job_done;
    job->done_user = rq;
    int64_t t_us = timeout_us > 0 ? timeout_us : srv->opt.request_timeout_ms * 1000;
    job->deadline_ns = t_us > 0 ? inf__serve_now_ns() + (uint64_t)t_us * 1000u : 0;
    job->timeout_us = t_us;
    inf_error ae = {0};
    int retry_after_s = 0;
    inf_status ast = inf__serve_admit(srv, rq->version, rq->caller, job->rows, &retry_after_s, &ae);
    if (ast != INF_OK) { /* over the caller's quota: 429, with Retry-After when waiting helps */
        count_failure(rq, SRV_FAIL_QUOTA);
        rq->retry_after_s = retry_after_s;
        inf__serve_error(rq, 429, "%s", ae.message);
        return 0;
    }
    job->hold = 1; /* an inline run answers from the session's outputs, then releases it */
    if (inf__serve_batcher_try_inline(rq->version->batcher, job)) {
        inf__serve_route_complete(rq);
        inf__serve_batcher_release(rq->version->batcher, job);
        return 0;
    }
    job->hold = 0;
    size_t store = inf__serve_batcher_store_bytes(rq->version->batcher, job->rows);
    if (store && reserve_store(rq, store)) { /* the outputs come back in the connection's buffer */
        job->out_store = rq->out_store;
        job->out_store_cap = rq->out_store_cap;
        job->out_views = rq->out_views;
    }
    rq->state = SRV_RQ_SUSPENDED;
    inf__serve_http_suspend(rq);
    inf_status st = inf__serve_batcher_submit(rq->version->batcher, job);
    if (st != INF_OK) {
        rq->state = SRV_RQ_COMPLETED;
        count_failure(rq, SRV_FAIL_QUEUE_FULL);
        if (st == INF_EBUSY)
            inf__serve_error(rq, 503, "model '%s' version %s: queue full (%d requests waiting); retry later",
                             rq->version->name, rq->version->version, srv->opt.max_queue);
        else
            inf__serve_error(rq, 503, "model '%s' version %s is being unloaded; retry", rq->version->name,
                             rq->version->version);
        inf__serve_http_resume(rq);
    }
    return 1;
}

/* The job's input / output pointer arrays: the request's own slots when the
 * model has few enough (the common case, no allocation), else calloc'd. */
static int alloc_job_arrays(srv_request *rq) {
    const inf_model *m = rq->version->model;
    size_t n_in = (size_t)inf_model_n_inputs(m) + 1, n_out = (size_t)inf_model_n_outputs(m) + 1;
    memset(rq->job_in_buf, 0, sizeof rq->job_in_buf);
    memset(rq->job_out_buf, 0, sizeof rq->job_out_buf);
    rq->job_inputs = n_in <= SRV_INLINE_IO ? rq->job_in_buf : calloc(n_in, sizeof *rq->job_inputs);
    rq->job_outputs = n_out <= SRV_INLINE_IO ? rq->job_out_buf : calloc(n_out, sizeof *rq->job_outputs);
    if (!rq->job_inputs || !rq->job_outputs) {
        inf__serve_error(rq, 503, "out of memory");
        return -1;
    }
    return 0;
}

static int h_infer(srv_request *rq) {
    srv_version *v;
    if (acquire(rq, &v)) return 0;
    rq->version = v;
    size_t json_len = rq->body_len;
    const char *h = inf__serve_http_header(rq, "Inference-Header-Content-Length");
    if (h) {
        char *end;
        unsigned long long n = strtoull(h, &end, 10);
        if (!*h || *end || n > rq->body_len) {
            count_failure(rq, SRV_FAIL_BAD_REQUEST);
            inf__serve_error(rq, 400,
                             "Inference-Header-Content-Length '%s' is not a length within the body of %zu bytes", h,
                             rq->body_len);
            return 0;
        }
        json_len = (size_t)n;
    }
    inf_error e = {0};
    inf_status st = inf__serve_decode_infer(rq->body ? rq->body : "", rq->body_len, json_len, v->model, &rq->infer, &e);
    if (st != INF_OK) {
        count_failure(rq, SRV_FAIL_BAD_REQUEST);
        inf__serve_error(rq, status_of(st), "%s", e.message);
        return 0;
    }
    if (alloc_job_arrays(rq)) return 0;
    int64_t rows = -1;
    for (int i = 0; i < rq->infer.n_inputs; i++) {
        srv_input *in = &rq->infer.inputs[i];
        rq->job_inputs[in->model_index] = &in->t;
        int64_t r = in->ndim >= 1 ? in->dims[0] : 1;
        if (rows < 0) rows = r;
        if (r != rows && inf__serve_batcher_batchable(v->batcher)) {
            count_failure(rq, SRV_FAIL_BAD_REQUEST);
            inf__serve_error(rq, 400, "input '%s': batch size %lld differs from the other inputs' %lld", in->name,
                             (long long)r, (long long)rows);
            return 0;
        }
    }
    rq->job.rows = rows < 0 ? 1 : rows;
    return submit(rq, rq->infer.timeout_us);
}

static void observe_success(srv_request *rq) {
    srv_model_metrics *m = rq->version->metrics;
    if (!m) return;
    uint64_t us = (inf__serve_now_ns() - rq->t_start_ns) / 1000;
    atomic_fetch_add_explicit(&m->success, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&m->request_us, us, memory_order_relaxed);
    inf__serve_hist_observe(&m->request_hist, (double)us);
}

/* A job that finished after its deadline (it waited in the queue behind
 * other batches, or its own compute ran long) is answered 504 and its
 * result dropped: the client has been told its budget, and a late answer
 * could be mistaken for a timely one. */
static int past_deadline(srv_request *rq) {
    srv_job *j = &rq->job;
    if (j->err.status != INF_OK || !j->deadline_ns) return 0;
    uint64_t now = inf__serve_now_ns();
    if (now <= j->deadline_ns) return 0;
    j->err.status = INF_ETIMEDOUT;
    uint64_t q = j->t_start_ns > j->t_enqueue_ns ? j->t_start_ns - j->t_enqueue_ns : 0;
    uint64_t c = j->t_end_ns > j->t_start_ns ? j->t_end_ns - j->t_start_ns : 0;
    snprintf(j->err.message, sizeof j->err.message,
             "request timed out: %llu us in the queue and %llu us computing exceed its timeout of %llu us; "
             "result dropped",
             (unsigned long long)(q / 1000), (unsigned long long)(c / 1000), (unsigned long long)j->timeout_us);
    for (int o = 0; rq->job_outputs && o < inf_model_n_outputs(rq->version->model); o++) {
        if (!j->outputs_borrowed) inf_tensor_free(rq->job_outputs[o]);
        rq->job_outputs[o] = NULL;
    }
    return 1;
}

static void complete_infer(srv_request *rq) {
    srv_version *v = rq->version;
    past_deadline(rq);
    if (rq->job.err.status != INF_OK) {
        count_failure(rq, reason_of(rq->job.err.status));
        inf__serve_error(rq, status_of(rq->job.err.status), "model '%s' version %s: %s", v->name, v->version,
                         rq->job.err.message);
        return;
    }
    inf_error e = {0};
    inf__serve_buf_reserve(&rq->resp, 512);
    inf_status st = inf__serve_encode_infer(&rq->infer, v->model, v->name, v->version, rq->job_outputs, &rq->resp,
                                            &rq->resp_bin, &e);
    if (st != INF_OK) {
        count_failure(rq, SRV_FAIL_OTHER);
        inf__serve_error(rq, status_of(st), "%s", e.message);
        return;
    }
    /* monitoring (monitor_hooks.c): sampled log rows and the drift window, while the outputs are held */
    inf__serve_monitor_tensors(rq->srv, v, (const inf_tensor *const *)rq->job_inputs, rq->job_outputs, rq->job.rows,
                               rq->infer.id);
    /* answered: a shadow copy (if any) runs after, on copies, never on this request's time */
    inf__serve_traffic_shadow(rq->srv, rq->params[0], v->model, (const inf_tensor *const *)rq->job_inputs,
                              rq->job_outputs, rq->job.rows);
    rq->status = 200;
    rq->content_type = "application/json";
    if (rq->resp_bin.n || rq->infer.binary_default) {
        rq->json_header_len = rq->resp.n;
        rq->content_type = "application/octet-stream";
    } else {
        for (int i = 0; i < rq->infer.n_outputs; i++)
            if (rq->infer.outputs[i].binary > 0) {
                rq->json_header_len = rq->resp.n;
                rq->content_type = "application/octet-stream";
            }
    }
    observe_success(rq);
    inf__serve_models_note_prediction(rq->srv->models, v, rq->caller, rq->job.rows);
}

/* ---- records ------------------------------------------------------------------- */

static int add_record(const char *obj, size_t n, void *user, inf_error *err) {
    return inf_record_batch_add_json((inf_record_batch *)user, obj, n, err) != INF_OK;
}

static int write_cb(const char *bytes, size_t n, void *user) {
    inf__serve_buf_put((srv_buf *)user, bytes, n);
    return 0;
}

/* RECORDS THROUGH THE SCORING CORE (runtime/score.h, issue 19).  The
 * endpoint is an adapter of the one scoring core batch, stream and SQL use:
 * the core prepares the records (pipeline, spec rejections), the accepted
 * records' inputs go to the batcher as any /infer job (batched with other
 * requests), and the core finishes and delivers the predictions and
 * rejections.  After a data error (a value the model cannot take) the core
 * scores each record alone -- through records_run_sync, one-record runs on
 * the batcher from this HTTP thread -- so the records the model takes get
 * predictions and the others a rejection naming the engine's error; when
 * every record fails alone the request fails with the batch's error
 * (INF__RT_ALL_FAILED_FATAL, as `infera batch`). */
typedef struct records_call {
    inf__rt_scorer scorer;
    srv_request *rq;
    srv_buf preds, rejects; /* the JSON arrays' contents */
    int n_preds, n_rejects;
    inf_tensor **sync_out;  /* outputs of the last one-record run (owned) */
} records_call;

static inf_status records_scored(void *user, const inf_record_batch *pred, const int *in_rows, int n) {
    records_call *rc = user;
    (void)in_rows;
    for (int k = 0; k < n; k++) {
        if (rc->n_preds++) inf__serve_buf_put(&rc->preds, ",", 1);
        inf_record_batch_row_to_json(pred, k, NULL, write_cb, &rc->preds);
    }
    /* monitoring (monitor_hooks.c): the drift window and the prediction log take the scored records while
     * the executor holds exactly them (a whole batch; the record-by-record fallback is not monitored) */
    srv_request *rq = rc->rq;
    if (inf_pipeline_n_accepted(rc->scorer.exec) == n)
        inf__serve_monitor_records(rq->srv, rq->version, rc->scorer.exec, rq->records_batch, pred);
    return rc->preds.oom ? INF_ENOMEM : INF_OK;
}

static inf_status records_rejected(void *user, int in_row, const char *field, const char *reason) {
    records_call *rc = user;
    srv_buf *b = &rc->rejects;
    if (rc->n_rejects++) inf__serve_buf_put(b, ",", 1);
    inf__serve_buf_printf(b, "{\"row\":%d,\"field\":", in_row);
    inf__serve_buf_json_str(b, field ? field : "", field ? strlen(field) : 0);
    inf__serve_buf_puts(b, ",\"error\":");
    inf__serve_buf_json_str(b, reason, strlen(reason));
    inf__serve_buf_put(b, "}", 1);
    return b->oom ? INF_ENOMEM : INF_OK;
}

static void records_restart(void *user) {
    records_call *rc = user;
    rc->preds.n = rc->rejects.n = 0;
    rc->preds.oom = rc->rejects.oom = 0;
    rc->n_preds = rc->n_rejects = 0;
}

static void free_sync_outputs(records_call *rc, const inf_model *m) {
    for (int o = 0; rc->sync_out && o < inf_model_n_outputs(m); o++) {
        inf_tensor_free(rc->sync_out[o]);
        rc->sync_out[o] = NULL;
    }
}

typedef struct sync_wait {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    int done;
} sync_wait;

static void sync_done(srv_job *job, void *user) {
    sync_wait *w = user;
    (void)job;
    pthread_mutex_lock(&w->lock);
    w->done = 1;
    pthread_cond_signal(&w->cond);
    pthread_mutex_unlock(&w->lock);
}

/* The core's run hook for the record-by-record fallback: one run on the
 * version's batcher, inline when the session is free, else queued and
 * waited for (this HTTP thread blocks; the fallback is the rare path). */
static inf_status records_run_sync(void *user, const inf_tensor *const *x, int rows, inf_tensor *const **y,
                                   inf_error *e) {
    records_call *rc = user;
    srv_request *rq = rc->rq;
    srv_version *v = rq->version;
    int n_out = inf_model_n_outputs(v->model);
    if (!rc->sync_out && !(rc->sync_out = calloc((size_t)(n_out ? n_out : 1), sizeof *rc->sync_out)))
        return inf_error_set(e, INF_ENOMEM, "model '%s': out of memory", v->name);
    free_sync_outputs(rc, v->model);
    srv_job job;
    memset(&job, 0, sizeof job);
    job.inputs = (const inf_tensor **)x;
    job.outputs = rc->sync_out;
    job.rows = rows;
    job.deadline_ns = rq->job.deadline_ns;
    job.timeout_us = rq->job.timeout_us;
    sync_wait w = {.done = 0};
    pthread_mutex_init(&w.lock, NULL);
    pthread_cond_init(&w.cond, NULL);
    job.done = sync_done;
    job.done_user = &w;
    if (!inf__serve_batcher_try_inline(v->batcher, &job)) {
        inf_status st = inf__serve_batcher_submit(v->batcher, &job);
        if (st != INF_OK) {
            job.err.status = st == INF_EBUSY ? INF_EBUSY : INF_EINVAL;
            snprintf(job.err.message, sizeof job.err.message, "model '%s' version %s: %s", v->name, v->version,
                     st == INF_EBUSY ? "queue full; retry later" : "being unloaded; retry");
        } else {
            pthread_mutex_lock(&w.lock);
            while (!w.done) pthread_cond_wait(&w.cond, &w.lock);
            pthread_mutex_unlock(&w.lock);
        }
    }
    pthread_mutex_destroy(&w.lock);
    pthread_cond_destroy(&w.cond);
    if (job.err.status != INF_OK) {
        *e = job.err;
        return e->status;
    }
    *y = rc->sync_out;
    return INF_OK;
}

static void records_head(srv_request *rq) {
    srv_version *v = rq->version;
    rq->status = 200;
    rq->content_type = "application/json";
    inf__serve_buf_puts(&rq->resp, "{\"model_name\":");
    inf__serve_buf_json_str(&rq->resp, v->name, strlen(v->name));
    inf__serve_buf_puts(&rq->resp, ",\"model_version\":");
    inf__serve_buf_json_str(&rq->resp, v->version, strlen(v->version));
}

/* Hands the outcome of prepare (from_job 0) or of the engine job (from_job
 * 1) to the core and answers: the predictions and rejections, or the error
 * the core returns. */
static void records_answer(srv_request *rq, inf_status st, inf_tensor *const *y, inf_error *e, int from_job) {
    records_call *rc = rq->records_call;
    srv_version *v = rq->version;
    inf__rt_results res = {rc, records_scored, records_rejected, records_restart};
    int had_error = st != INF_OK;
    st = inf__rt_score_complete(&rc->scorer, rq->records_batch, st, y, &res, e);
    free_sync_outputs(rc, v->model);
    if (st != INF_OK) {
        count_failure(rq, had_error ? reason_of(st) : SRV_FAIL_COMPUTE);
        if (from_job && had_error)
            inf__serve_error(rq, status_of(st), "model '%s' version %s: %s", v->name, v->version, e->message);
        else
            inf__serve_error(rq, status_of(st), "model '%s': %s", v->name, e->message[0] ? e->message : inf_strerror(st));
        return;
    }
    records_head(rq);
    inf__serve_buf_puts(&rq->resp, ",\"predictions\":[");
    inf__serve_buf_put(&rq->resp, rc->preds.p ? rc->preds.p : "", rc->preds.n);
    inf__serve_buf_puts(&rq->resp, "],\"rejected\":[");
    inf__serve_buf_put(&rq->resp, rc->rejects.p ? rc->rejects.p : "", rc->rejects.n);
    inf__serve_buf_puts(&rq->resp, "]}");
    if (rc->n_preds) {
        observe_success(rq);
        inf__serve_models_note_prediction(rq->srv->models, v, rq->caller, rc->n_preds);
    }
}

static void records_call_free(srv_request *rq) {
    records_call *rc = rq->records_call;
    if (!rc) return;
    if (rq->version) free_sync_outputs(rc, rq->version->model);
    free(rc->sync_out);
    inf__rt_scorer_deinit(&rc->scorer);
    inf__serve_buf_free(&rc->preds);
    inf__serve_buf_free(&rc->rejects);
    free(rc);
    rq->records_call = NULL;
}

/* /infer refuses a finite FP32 value beyond FLT_MAX (1e39) instead of
 * sending an infinity; so do records feeding a model of one FP32 input:
 * 1 (and a 400 naming the record and field) when one does. */
static int records_out_of_fp32(srv_request *rq, srv_version *v) {
    const inf_model *m = v->model;
    if (inf_model_n_inputs(m) != 1 || inf_model_input(m, 0)->dtype != INF_DTYPE_F32)
        return 0;
    int rows = 0, cols = 0;
    const double *f = inf_pipeline_features(rq->records_exec, &rows, &cols);
    for (int r = 0; f && r < rows; r++)
        for (int c = 0; c < cols; c++) {
            double x = f[(size_t)r * (size_t)cols + (size_t)c];
            if (!isfinite(x) || fabs(x) <= FLT_MAX) continue;
            const char *col = inf_pipeline_exec_feature_column(rq->records_exec, c);
            count_failure(rq, SRV_FAIL_BAD_REQUEST);
            inf__serve_error(rq, 400, "records[%d]: '%s' = %g is out of range for FP32 (model input '%s')",
                             inf_pipeline_accepted_row(rq->records_exec, r), col ? col : "?", x,
                             inf_model_input(m, 0)->name);
            return 1;
        }
    return 0;
}

static int h_records(srv_request *rq) {
    srv_version *v;
    if (acquire(rq, &v)) return 0;
    rq->version = v;
    inf_error e = {0};
    inf_status st = inf__serve_version_pipeline(v, &rq->records_exec, &e);
    if (st != INF_OK) {
        count_failure(rq, SRV_FAIL_OTHER);
        inf__serve_error(rq, status_of(st), "%s", e.message);
        return 0;
    }
    inf_record_batch *batch = NULL;
    if (inf_record_batch_new(&batch) != INF_OK) {
        inf__serve_error(rq, 503, "out of memory");
        return 0;
    }
    rq->records_batch = batch;
    st = inf__serve_decode_records(rq->body ? rq->body : "", rq->body_len, add_record, batch, &e);
    if (st != INF_OK) {
        count_failure(rq, SRV_FAIL_BAD_REQUEST);
        inf__serve_error(rq, status_of(st), "%s", e.message);
        return 0;
    }
    if (inf_record_batch_n_rows(batch) == 0) { /* {"records": []}: nothing to prepare or run */
        records_head(rq);
        inf__serve_buf_puts(&rq->resp, ",\"predictions\":[],\"rejected\":[]}");
        return 0;
    }
    records_call *rc = calloc(1, sizeof *rc);
    if (!rc || inf__rt_scorer_init(&rc->scorer, NULL, rq->records_exec, INF__RT_ALL_FAILED_FATAL) != INF_OK) {
        free(rc);
        inf__serve_error(rq, 503, "out of memory");
        return 0;
    }
    rc->rq = rq;
    rc->scorer.run = records_run_sync;
    rc->scorer.run_user = rc;
    rq->records_call = rc;
    const inf_tensor *const *x = NULL;
    int n_acc = 0;
    st = inf__rt_score_prepare(&rc->scorer, batch, &x, &n_acc, &e);
    if (st != INF_OK) {
        records_answer(rq, st, NULL, &e, 0);
        return 0;
    }
    /* the default mapping takes the first K numeric fields of a model input
     * [N, K]: more numeric fields than that are a request error here (the
     * batch runner reports the count; a request has no one to report to) */
    int ignored = inf_pipeline_n_ignored_fields(rq->records_exec);
    if (ignored > 0) {
        int used = inf_pipeline_exec_n_feature_columns(rq->records_exec);
        count_failure(rq, SRV_FAIL_BAD_REQUEST);
        inf__serve_error(rq, 400,
                         "model '%s': the records have %d numeric fields but the model input '%s' takes %d (default "
                         "mapping, no pipeline spec): send exactly %d, or give the model a pipeline spec",
                         v->name, used + ignored, inf_model_input(v->model, 0)->name, used, used);
        return 0;
    }
    if (records_out_of_fp32(rq, v)) return 0;
    if (n_acc == 0) { /* every record rejected by the spec: nothing to run */
        records_answer(rq, INF_OK, NULL, &e, 0);
        return 0;
    }
    if (alloc_job_arrays(rq)) return 0;
    for (int i = 0; i < inf_model_n_inputs(v->model); i++) rq->job_inputs[i] = x[i];
    rq->job.rows = n_acc;
    return submit(rq, 0);
}

static void complete_records(srv_request *rq) {
    past_deadline(rq);
    inf_error e = rq->job.err;
    inf_status st = e.status;
    if (st != INF_OK && !inf_status_is_data_error(st)) { /* timed out, queue full, unloaded: the request's */
        srv_version *v = rq->version;
        count_failure(rq, reason_of(st));
        inf__serve_error(rq, status_of(st), "model '%s' version %s: %s", v->name, v->version, e.message);
        return;
    }
    /* an inline run holds the session: the fallback's runs need it */
    if (st != INF_OK) inf__serve_batcher_release(rq->version->batcher, &rq->job);
    records_answer(rq, st, st == INF_OK ? rq->job_outputs : NULL, &e, 1);
}

void inf__serve_route_complete(srv_request *rq) {
    if (rq->llm)
        inf__serve_openai_complete(rq);
    else if (rq->route && rq->route->fn == h_records)
        complete_records(rq);
    else
        complete_infer(rq);
}

void inf__serve_request_release(srv_request *rq) {
    if (rq->llm) inf__serve_openai_release(rq);
    if (rq->job_outputs && rq->version && !rq->job.outputs_borrowed) {
        int n = inf_model_n_outputs(rq->version->model);
        for (int i = 0; i < n; i++) inf_tensor_free(rq->job_outputs[i]);
    }
    if (rq->job_outputs != rq->job_out_buf) free(rq->job_outputs);
    if (rq->job_inputs != rq->job_in_buf) free(rq->job_inputs);
    rq->job_outputs = NULL;
    rq->job_inputs = NULL;
    inf__serve_infer_request_clear(&rq->infer);
    records_call_free(rq);
    if (rq->records_batch) inf_record_batch_free(rq->records_batch);
    rq->records_batch = NULL;
    if (rq->records_exec) inf__serve_version_pipeline_put(rq->version, rq->records_exec);
    rq->records_exec = NULL;
    if (rq->version) inf__serve_version_release(rq->version);
    rq->version = NULL;
}

/* ---- repository ---------------------------------------------------------------- */

static cJSON *body_json(srv_request *rq, int *bad) {
    *bad = 0;
    if (!rq->body_len) return NULL;
    cJSON *j = cJSON_ParseWithLength(rq->body, rq->body_len);
    if (!j || !cJSON_IsObject(j)) {
        cJSON_Delete(j);
        *bad = 1;
        inf__serve_error(rq, 400, "malformed JSON request body");
    }
    return j;
}

static int h_repo_index(srv_request *rq) {
    int bad;
    cJSON *j = body_json(rq, &bad);
    if (bad) return 0;
    int ready = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(j, "ready"));
    cJSON_Delete(j);
    rq->status = 200;
    inf__serve_models_index_json(rq->srv->models, ready, &rq->resp);
    return 0;
}

/* parameters.route of a repository load: new weights (and targets) for a
 * route, e.g. "fraud@production:50,fraud@canary:50"; audited as serve-route. */
static int load_route(srv_request *rq, const char *spec_tail) {
    char full[1200], name[129], refs[8][129];
    double weights[8];
    int n = 0;
    inf_error e = {0};
    snprintf(full, sizeof full, "%s=%s", rq->params[0], spec_tail);
    if (inf__serve_traffic_parse_route(full, name, refs, weights, &n, &e)) {
        inf__serve_error(rq, 400, "parameters.route: %s", e.message);
        return 0;
    }
    if (inf__serve_models_has(rq->srv->models, name) && !inf__serve_traffic_is_route(rq->srv->traffic, name)) {
        inf__serve_error(rq, 409, "parameters.route: '%s' is a served model, not a route", name);
        return 0;
    }
    int failed; /* new targets are loaded first; a failed load leaves the route as it was */
    if (inf__serve_traffic_load_targets(rq->srv->models, refs, n, &failed, &e) != INF_OK) {
        inf__serve_models_audit(rq->srv->models, rq->caller, "serve-route", name, spec_tail, "failed", e.message);
        inf__serve_error(rq, 400, "parameters.route: target %s: %s", refs[failed], e.message);
        return 0;
    }
    inf__serve_traffic_set_route(rq->srv->traffic, name, refs, weights, n, &e);
    inf__serve_models_audit(rq->srv->models, rq->caller, "serve-route", name, spec_tail, "ok", NULL);
    rq->status = 200;
    return 0;
}

static int h_repo_load(srv_request *rq) {
    int bad;
    cJSON *j = body_json(rq, &bad);
    if (bad) return 0;
    const cJSON *params = cJSON_GetObjectItemCaseSensitive(j, "parameters");
    const cJSON *route = cJSON_GetObjectItemCaseSensitive(params, "route");
    if (route) {
        int rc = cJSON_IsString(route) ? load_route(rq, route->valuestring)
                                       : (inf__serve_error(rq, 400, "parameters.route must be a string like "
                                                                    "\"NAME@A:95,NAME@B:5\""), 0);
        cJSON_Delete(j);
        return rc;
    }
    const cJSON *ref = cJSON_GetObjectItemCaseSensitive(params, "ref");
    if (!ref) ref = cJSON_GetObjectItemCaseSensitive(params, "path");
    if (ref && !cJSON_IsString(ref)) {
        cJSON_Delete(j);
        inf__serve_error(rq, 400, "parameters.ref must be a string (an .onnx path or a registry reference)");
        return 0;
    }
    if (cJSON_GetObjectItemCaseSensitive(params, "config"))
        fprintf(stderr, "infera serve: load %s: parameters.config is ignored (no Triton model configs)\n",
                rq->params[0]);
    inf_error e = {0};
    inf__serve_copy_str(rq->log_model, sizeof rq->log_model, rq->params[0]);
    /* a file path brings a file of the server's onto it: with auth on, only an admin may */
    if (ref && inf_registry_ref_is_path(ref->valuestring) && inf__serve_models_auth_enabled(rq->srv->models)) {
        const char *h = inf__serve_http_header(rq, "Authorization");
        const char *tok = h && !strncasecmp(h, "Bearer ", 7) ? h + 7 : NULL;
        inf_status ast = inf__serve_models_authorize(rq->srv->models, tok, NULL, 2, &rq->caller, &e);
        if (ast != INF_OK) {
            cJSON_Delete(j);
            inf__serve_error(rq, ast == INF_EAUTH ? 401 : ast == INF_EDENIED ? 403 : 503,
                             "repository load by file path needs the admin role: %s", e.message);
            return 0;
        }
    }
    inf_status st = inf__serve_models_load(rq->srv->models, rq->params[0], ref ? ref->valuestring : NULL, rq->caller, &e);
    cJSON_Delete(j);
    if (st != INF_OK) {
        static const struct {
            inf_status st;
            int http;
        } codes[] = {{INF_ENOENT, 404}, {INF_ENOMEM, 503}, {INF_EDENIED, 403}, {INF_EBUSY, 409}};
        int http = 400;
        for (size_t i = 0; i < sizeof codes / sizeof codes[0]; i++)
            if (codes[i].st == st) http = codes[i].http;
        inf__serve_error(rq, http, "%s", e.message);
        return 0;
    }
    rq->status = 200;
    return 0;
}

static int h_repo_unload(srv_request *rq) {
    inf_error e = {0};
    inf__serve_copy_str(rq->log_model, sizeof rq->log_model, rq->params[0]);
    if (inf__serve_models_unload(rq->srv->models, rq->params[0], rq->caller, &e) != INF_OK) {
        inf__serve_error(rq, 404, "%s", e.message);
        return 0;
    }
    rq->status = 200;
    return 0;
}
