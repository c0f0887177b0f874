/*
 * metrics.c -- what the server is doing, as Prometheus text at GET /metrics.
 *
 * Per (model, version) entries hold Triton-named counters
 * (nv_inference_request_success, _failure{reason}, nv_inference_count,
 * nv_inference_exec_count, nv_inference_request_duration_us,
 * nv_inference_queue_duration_us, nv_inference_compute_infer_duration_us),
 * real histograms (request duration, queue time, compute time, batch size),
 * the queue depth gauge and the load / warm-up seconds.  Entries are created
 * on load and kept for the life of the server, so counters survive swaps and
 * unloads; all updates are relaxed atomics (no lock on the request path).
 * Server-wide: loaded models, HTTP responses by class, load failures, swaps,
 * process memory (RSS from /proc) and the engine allocator's live bytes.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "serve/serve.h"

static const double us_bounds[] = {25,    50,    100,   250,    500,    1000,   2500,    5000,
                                   10000, 25000, 50000, 100000, 250000, 500000, 1000000, 5000000};
static const double batch_bounds[] = {1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024};
#define N_US ((int)(sizeof us_bounds / sizeof us_bounds[0]))
#define N_BATCH ((int)(sizeof batch_bounds / sizeof batch_bounds[0]))

static const char *fail_reason[SRV_FAIL_COUNT] = {"bad_request", "queue_full", "timeout", "compute", "auth", "other",
                                                     "quota"};

void inf__serve_metrics_init(srv_metrics *m) {
    memset(m, 0, sizeof *m);
    pthread_mutex_init(&m->lock, NULL);
    m->start_ns = inf__serve_now_ns();
}

void inf__serve_metrics_deinit(srv_metrics *m) {
    srv_model_metrics *e = m->head;
    while (e) {
        srv_model_metrics *next = e->next;
        free(e);
        e = next;
    }
    m->head = NULL;
    pthread_mutex_destroy(&m->lock);
}

static void hist_init(srv_hist *h, const double *bounds, int n) {
    h->bounds = bounds;
    h->n_bounds = n;
}

srv_model_metrics *inf__serve_metrics_get(srv_metrics *m, const char *model, const char *version) {
    pthread_mutex_lock(&m->lock);
    srv_model_metrics *e = m->head;
    for (; e; e = e->next)
        if (!strcmp(e->model, model) && !strcmp(e->version, version)) break;
    if (!e) {
        e = calloc(1, sizeof *e);
        if (e) {
            snprintf(e->model, sizeof e->model, "%s", model);
            snprintf(e->version, sizeof e->version, "%s", version);
            hist_init(&e->request_hist, us_bounds, N_US);
            hist_init(&e->queue_hist, us_bounds, N_US);
            hist_init(&e->compute_hist, us_bounds, N_US);
            hist_init(&e->batch_hist, batch_bounds, N_BATCH);
            /* append: keeps the exposition in load order */
            srv_model_metrics **tail = &m->head;
            while (*tail) tail = &(*tail)->next;
            *tail = e;
        }
    }
    pthread_mutex_unlock(&m->lock);
    return e;
}

void inf__serve_hist_observe(srv_hist *h, double v) {
    int i = 0;
    while (i < h->n_bounds && v > h->bounds[i]) i++;
    atomic_fetch_add_explicit(&h->counts[i], 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&h->sum, (uint64_t)(v + 0.5), memory_order_relaxed);
    atomic_fetch_add_explicit(&h->count, 1, memory_order_relaxed);
}

static void labels(srv_buf *o, const srv_model_metrics *e) {
    inf__serve_buf_puts(o, "model=");
    inf__serve_buf_json_str(o, e->model, strlen(e->model));
    inf__serve_buf_puts(o, ",version=");
    inf__serve_buf_json_str(o, e->version, strlen(e->version));
}

typedef enum { COUNTER, GAUGE } kind;

static void header(srv_buf *o, const char *name, const char *type, const char *help) {
    inf__serve_buf_printf(o, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* One family over all entries; field picks the value. */
typedef uint64_t (*getter)(const srv_model_metrics *e);
static void family(srv_buf *o, srv_metrics *m, const char *name, const char *type, const char *help, getter get) {
    header(o, name, type, help);
    for (srv_model_metrics *e = m->head; e; e = e->next) {
        inf__serve_buf_printf(o, "%s{", name);
        labels(o, e);
        inf__serve_buf_puts(o, "} ");
        inf__serve_buf_u64(o, get(e));
        inf__serve_buf_puts(o, "\n");
    }
}

#define LOAD(x) atomic_load_explicit(&(x), memory_order_relaxed)
static uint64_t g_success(const srv_model_metrics *e) { return LOAD(((srv_model_metrics *)e)->success); }
static uint64_t g_count(const srv_model_metrics *e) { return LOAD(((srv_model_metrics *)e)->inference_count); }
static uint64_t g_exec(const srv_model_metrics *e) { return LOAD(((srv_model_metrics *)e)->exec_count); }
static uint64_t g_inline(const srv_model_metrics *e) { return LOAD(((srv_model_metrics *)e)->inline_exec_count); }
static uint64_t g_req_us(const srv_model_metrics *e) { return LOAD(((srv_model_metrics *)e)->request_us); }
static uint64_t g_queue_us(const srv_model_metrics *e) { return LOAD(((srv_model_metrics *)e)->queue_us); }
static uint64_t g_comp_us(const srv_model_metrics *e) { return LOAD(((srv_model_metrics *)e)->compute_us); }
static uint64_t g_depth(const srv_model_metrics *e) {
    int64_t d = LOAD(((srv_model_metrics *)e)->queue_depth);
    return d < 0 ? 0 : (uint64_t)d;
}
static uint64_t g_loaded(const srv_model_metrics *e) { return (uint64_t)LOAD(((srv_model_metrics *)e)->loaded); }

static uint64_t g_pays(const srv_model_metrics *e) { return (uint64_t)e->batch_pays; }

/* One gauge family of a double field (at offset) over all entries; extra:
 * NULL, or a label pair added to each series (e.g. rows="1"). */
static void gauge_f(srv_buf *o, srv_metrics *m, const char *name, const char *help, size_t offset,
                    const char *extra) {
    header(o, name, "gauge", help);
    for (srv_model_metrics *e = m->head; e; e = e->next) {
        if (extra && !e->gain_rows) continue; /* row costs: only where measured */
        inf__serve_buf_printf(o, "%s{", name);
        labels(o, e);
        if (extra) inf__serve_buf_printf(o, ",%s", extra);
        inf__serve_buf_printf(o, "} %.6f\n", *(const double *)((const char *)e + offset));
    }
}

/* infera_model_row_compute_us{rows="1"} and {rows="N"}: the start-up timing
 * that decides whether batching pays (batcher.c). */
static void row_costs(srv_buf *o, srv_metrics *m) {
    gauge_f(o, m, "infera_model_row_compute_us",
            "Engine time per row at 1 row and at a batch, timed at load (decides infera_model_batch_pays)",
            offsetof(srv_model_metrics, row_us_1), "rows=\"1\"");
    for (srv_model_metrics *e = m->head; e; e = e->next) {
        if (!e->gain_rows) continue;
        inf__serve_buf_puts(o, "infera_model_row_compute_us{");
        labels(o, e);
        inf__serve_buf_printf(o, ",rows=\"%d\"} %.6f\n", e->gain_rows, e->row_us_batch);
    }
    family(o, m, "infera_model_batch_pays", "gauge",
           "1 when merging saves more engine time per row than a queued request's hand-off costs: every request "
           "queues for a batch; 0: short requests run inline on the HTTP thread",
           g_pays);
}

static void histogram(srv_buf *o, srv_metrics *m, const char *name, const char *help, size_t offset) {
    header(o, name, "histogram", help);
    for (srv_model_metrics *e = m->head; e; e = e->next) {
        srv_hist *h = (srv_hist *)((char *)e + offset);
        uint64_t cum = 0;
        for (int i = 0; i <= h->n_bounds; i++) {
            cum += LOAD(h->counts[i]);
            inf__serve_buf_printf(o, "%s_bucket{", name);
            labels(o, e);
            if (i < h->n_bounds)
                inf__serve_buf_printf(o, ",le=\"%g\"} ", h->bounds[i]);
            else
                inf__serve_buf_puts(o, ",le=\"+Inf\"} ");
            inf__serve_buf_u64(o, cum);
            inf__serve_buf_puts(o, "\n");
        }
        inf__serve_buf_printf(o, "%s_sum{", name);
        labels(o, e);
        inf__serve_buf_puts(o, "} ");
        inf__serve_buf_u64(o, LOAD(h->sum));
        inf__serve_buf_printf(o, "\n%s_count{", name);
        labels(o, e);
        inf__serve_buf_puts(o, "} ");
        inf__serve_buf_u64(o, LOAD(h->count));
        inf__serve_buf_puts(o, "\n");
    }
}

static long rss_bytes(void) {
    FILE *f = fopen("/proc/self/statm", "r");
    if (!f) return 0;
    long pages = 0, rss = 0;
    if (fscanf(f, "%ld %ld", &pages, &rss) != 2) rss = 0;
    fclose(f);
    return rss * sysconf(_SC_PAGESIZE);
}

void inf__serve_metrics_render(srv_metrics *m, srv_buf *o, int n_loaded_models) {
    pthread_mutex_lock(&m->lock);
    family(o, m, "nv_inference_request_success", "counter", "Successful inference requests", g_success);
    header(o, "nv_inference_request_failure", "counter", "Failed inference requests, by reason");
    for (srv_model_metrics *e = m->head; e; e = e->next)
        for (int r = 0; r < SRV_FAIL_COUNT; r++) {
            inf__serve_buf_puts(o, "nv_inference_request_failure{");
            labels(o, e);
            inf__serve_buf_printf(o, ",reason=\"%s\"} ", fail_reason[r]);
            inf__serve_buf_u64(o, LOAD(e->failure[r]));
            inf__serve_buf_puts(o, "\n");
        }
    family(o, m, "nv_inference_count", "counter", "Inferred items (rows), batched requests counted per row", g_count);
    family(o, m, "nv_inference_exec_count", "counter", "Engine executions (batches)", g_exec);
    family(o, m, "infera_inline_exec_count", "counter",
           "Engine executions run on an HTTP thread (a lone short request; not batched)", g_inline);
    family(o, m, "nv_inference_request_duration_us", "counter", "Cumulative request duration (us)", g_req_us);
    family(o, m, "nv_inference_queue_duration_us", "counter", "Cumulative time requests waited in the queue (us)",
           g_queue_us);
    family(o, m, "nv_inference_compute_infer_duration_us", "counter",
           "Cumulative engine time of the batches requests were part of (us)", g_comp_us);
    histogram(o, m, "infera_request_duration_us", "Request duration, HTTP body received to response ready (us)",
              offsetof(srv_model_metrics, request_hist));
    histogram(o, m, "infera_queue_duration_us", "Time a request waited for its batch (us)",
              offsetof(srv_model_metrics, queue_hist));
    histogram(o, m, "infera_compute_duration_us", "Engine time of each batch (us)",
              offsetof(srv_model_metrics, compute_hist));
    histogram(o, m, "infera_batch_size", "Rows per engine execution", offsetof(srv_model_metrics, batch_hist));
    family(o, m, "infera_queue_depth", "gauge", "Requests waiting in the batcher queue", g_depth);
    family(o, m, "infera_model_loaded", "gauge", "1 while this model version serves", g_loaded);
    gauge_f(o, m, "infera_model_load_seconds", "Time to load (cold start) the model version",
            offsetof(srv_model_metrics, load_seconds), NULL);
    gauge_f(o, m, "infera_model_warmup_seconds", "Time to warm the model version up before it served",
            offsetof(srv_model_metrics, warmup_seconds), NULL);
    row_costs(o, m);
    pthread_mutex_unlock(&m->lock);
    header(o, "infera_http_connections_cut_total", "counter",
           "Connections cut while reading a request: past --read-deadline-s, or the oldest reader when the "
           "connection reserve was needed");
    inf__serve_buf_printf(o, "infera_http_connections_cut_total{reason=\"deadline\"} %llu\n",
                          (unsigned long long)LOAD(m->conns_cut_deadline));
    inf__serve_buf_printf(o, "infera_http_connections_cut_total{reason=\"reserve\"} %llu\n",
                          (unsigned long long)LOAD(m->conns_cut_reserve));
    header(o, "infera_models_loaded", "gauge", "Models currently serving");
    inf__serve_buf_printf(o, "infera_models_loaded %d\n", n_loaded_models);
    header(o, "infera_model_load_failures_total", "counter", "Model loads that failed (the old version kept serving)");
    inf__serve_buf_printf(o, "infera_model_load_failures_total %llu\n", (unsigned long long)LOAD(m->load_failures));
    header(o, "infera_model_swaps_total", "counter", "Model versions swapped in while serving");
    inf__serve_buf_printf(o, "infera_model_swaps_total %llu\n", (unsigned long long)LOAD(m->swaps));
    header(o, "infera_http_responses_total", "counter", "HTTP responses by status class");
    for (int c = 1; c <= 5; c++)
        inf__serve_buf_printf(o, "infera_http_responses_total{code=\"%dxx\"} %llu\n", c,
                              (unsigned long long)LOAD(m->http_by_class[c]));
    header(o, "process_resident_memory_bytes", "gauge", "Resident set size of the server process");
    inf__serve_buf_printf(o, "process_resident_memory_bytes %ld\n", rss_bytes());
    inf_alloc_stats st;
    inf_alloc_get_stats(&st);
    header(o, "infera_engine_allocated_bytes", "gauge", "Bytes held by the engine's allocator");
    inf__serve_buf_printf(o, "infera_engine_allocated_bytes %lld\n", (long long)st.bytes_live);
    header(o, "process_uptime_seconds", "gauge", "Seconds since the server started");
    inf__serve_buf_printf(o, "process_uptime_seconds %.3f\n", (double)(inf__serve_now_ns() - m->start_ns) / 1e9);
}
