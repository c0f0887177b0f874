/*
 * serve.h -- internal header of `infera serve` (src/serve/): the objects the
 * files of the online runner share.  Nothing here is public API.
 *
 * FILES (one concept each):
 *   main.c      options (flags, INFERA_SERVE_* environment, --config file),
 *               start-up, SIGTERM drain, shutdown
 *   http.c      transport: libmicrohttpd daemon, per-connection context, body
 *               accumulation and limits, suspend/resume around the batcher
 *   routes.c    the route table (one line per route) and the handlers
 *   kserve_v2.c KServe V2 request decoding (JSON + binary), records bodies
 *   kserve_v2_response.c  KServe V2 response encoding (JSON + binary)
 *   infer_bind.c  input binding and checks shared by the HTTP and gRPC codecs
 *   infer_call.c  the protocol-neutral inference path (routing and admission hooks)
 *   grpc_codec.c  KServe V2 gRPC messages <-> requests and outputs (protobuf-c)
 *   grpc_server.c the gRPC endpoint (--grpc-port): calls, ModelInfer, streams;
 *   grpc_methods.c its other methods (health, metadata, config, repository)
 *   json_num.c  fast, exact JSON number parsing for tensor data
 *   batcher.c   per model version: bounded queue + one scheduler thread
 *   models.c    served models, refcounted versions, atomic swap, loading
 *   models_repository.c  the repository API: load, unload, index, --all-aliases
 *   models_access.c      auth, per-caller audit, registry alias polling
 *   notify.c    LISTEN for alias moves of a PostgreSQL registry
 *   metrics.c   Prometheus counters, gauges and histograms
 *   util.c      growable buffers, JSON string escaping, clocks, access log
 *
 * THREADS.  libmicrohttpd runs a pool of HTTP threads (one epoll loop each).
 * They decode and validate requests, then post jobs to the batcher of the
 * model version they resolved (which they hold a reference on) and suspend
 * the connection -- unless the job is short and a session is idle, in which
 * case it runs inline on the HTTP thread (batcher.c, INLINE RUNS).  Each batcher's one scheduler thread forms batches,
 * runs the version's session and completes the jobs, which resumes connections. A loader (repository API and the alias
 * poller) builds and warms new versions off to the side and swaps a pointer under the models lock.
 */
#ifndef INF_SERVE_H
#define INF_SERVE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <string.h>

#include "infera/registry.h"
#include "infera/session.h"

/* ---- util.c: buffers, JSON text, clocks ------------------------------------ */

typedef struct srv_buf {
    char *p;
    size_t n, cap;
    int oom; /* an append failed: the content is incomplete */
} srv_buf;

void inf__serve_buf_free(srv_buf *b);
/* Room for extra more bytes (and a NUL); -1 (and oom set) when it cannot grow. */
int inf__serve_buf_reserve(srv_buf *b, size_t extra);
/* Appends (inline: encoders call these a few dozen times per response). */
static inline void inf__serve_buf_put(srv_buf *b, const void *data, size_t n) {
    if (b->n + n + 1 > b->cap && inf__serve_buf_reserve(b, n)) return;
    if (b->oom) return;
    memcpy(b->p + b->n, data, n);
    b->n += n;
    b->p[b->n] = 0;
}
static inline void inf__serve_buf_puts(srv_buf *b, const char *s) { inf__serve_buf_put(b, s, strlen(s)); }
void inf__serve_buf_printf(srv_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Appends s (n bytes) as a quoted, escaped JSON string (bytes that are not
 * UTF-8 become U+FFFD: the output is always valid JSON). */
void inf__serve_buf_json_str(srv_buf *b, const char *s, size_t n);
/* 1 when s[0..n) is well-formed UTF-8. */
int inf__serve_utf8_valid(const char *s, size_t n);
void inf__serve_buf_i64(srv_buf *b, int64_t v);
void inf__serve_buf_u64(srv_buf *b, uint64_t v);
/* strlcpy: src (NULL as "") into dst of size bytes, cut and NUL-terminated. */
void inf__serve_copy_str(char *dst, size_t size, const char *src);
/* float32 / float64 as JSON numbers (non-finite as NaN, Infinity, -Infinity). */
void inf__serve_buf_f32(srv_buf *b, float v);
void inf__serve_buf_f64(srv_buf *b, double v);
/* Takes the buffer's memory (NUL-terminated, malloc'd); b is left empty. */
char *inf__serve_buf_take(srv_buf *b, size_t *len);

uint64_t inf__serve_now_ns(void);

/* ---- json_num.c ------------------------------------------------------------ */

/* Parses one JSON number (RFC 8259 grammar) starting at s, not reading at or
 * past end.  Returns the number of bytes consumed, 0 if s does not start a
 * JSON number.  The result equals strtod's (correctly rounded) for every
 * input: a fast exact path (Clinger) covers up to 19 significant digits and
 * moderate exponents, the rest falls back to strtod on a bounded copy. */
size_t inf__serve_parse_double(const char *s, const char *end, double *out);
/* The length of the JSON number starting at s (the grammar parse_double
 * accepts, without converting it), 0 if s does not start one. */
size_t inf__serve_number_len(const char *s, const char *end);
/* Parses a JSON integer (no fraction or exponent) that fits int64 / uint64. */
size_t inf__serve_parse_i64(const char *s, const char *end, int64_t *out);
size_t inf__serve_parse_u64(const char *s, const char *end, uint64_t *out);
/* Finite float v as JSON text (integral values as integers, else the first of
 * %.7g/%.8g/%.9g that reads back exactly); returns the length, no NUL. */
#define INF__SERVE_F32_MAX 32
size_t inf__serve_format_f32(float v, char out[INF__SERVE_F32_MAX]);

/* ---- kserve_v2.c, kserve_v2_response.c ------------------------------------- */

/* KServe datatype <-> engine dtype. */
const char *inf__serve_kserve_dtype(inf_dtype d); /* NULL when not expressible */
inf_dtype inf__serve_dtype_from_kserve(const char *s, size_t n);

typedef struct srv_input {
    char *name;
    inf_dtype dtype;
    int ndim;
    int64_t dims[INF_MAX_DIMS];
    int model_index;   /* which model input it binds */
    inf_tensor t;      /* view over data */
    void *data;        /* owned (malloc) unless borrowed_data */
    int borrowed_data; /* data points into the request body (binary, aligned) */
    char **strings;    /* BYTES: owned element copies */
    int64_t n_strings;
} srv_input;

typedef struct srv_output_req {
    char *name;
    int model_index;
    int binary;        /* -1 = default */
} srv_output_req;

typedef struct srv_infer_request {
    char *id;            /* echoed; NULL when not given */
    int n_inputs;
    srv_input *inputs;
    int n_outputs;       /* 0 = all outputs */
    srv_output_req *outputs;
    int binary_default;  /* request parameter binary_data_output */
    int64_t timeout_us;  /* request parameter "timeout" (0 = server default) */
} srv_infer_request;

/* Decodes a KServe V2 inference request.  body[0..json_len) is the JSON
 * header; body[json_len..body_len) holds the binary blobs (json_len ==
 * body_len when there are none).  Validates names, datatypes and shapes
 * against model and fills req (release with inf__serve_infer_request_clear).
 * Errors (INF_EFORMAT / INF_EINVAL / INF_ETYPE / INF_ESHAPE) name the field
 * and why; err->message is suitable for the {"error": ...} body. */
inf_status inf__serve_decode_infer(const char *body, size_t body_len, size_t json_len, const inf_model *model,
                                   srv_infer_request *req, inf_error *err);
void inf__serve_infer_request_clear(srv_infer_request *req);

/* Encodes the response for req from outputs (indexed by model output).
 * json gets the JSON header; bin (may stay empty) the binary blobs, in the
 * order they are declared.  INF_ENOMEM, INF_EUNSUPPORTED (an output kind
 * KServe cannot express). */
inf_status inf__serve_encode_infer(const srv_infer_request *req, const inf_model *model, const char *model_name,
                                   const char *model_version, inf_tensor *const *outputs, srv_buf *json, srv_buf *bin,
                                   inf_error *err);

/* ---- infer_bind.c: protocol-neutral input binding (HTTP and gRPC codecs) --- */

#define INF__SERVE_NUL_MSG "input '%s': BYTES element %lld contains a NUL byte, which the engine's strings cannot hold"
/* "[2,3]" */
void inf__serve_shape_str(char *buf, size_t size, int ndim, const int64_t *dims);
/* Binds a decoded input (name, ndim/dims set; dtype_name NULL = missing,
 * has_shape 0 = missing) to the model input of its name: sets model_index
 * and dtype; seen[] marks model inputs already given. */
inf_status inf__serve_bind_input(const inf_model *model, srv_input *in, const char *dtype_name, int has_shape,
                                 const uint8_t *seen, inf_error *err);
/* prod(dims), refused beyond 2^40 elements. */
inf_status inf__serve_input_numel(const srv_input *in, int64_t *numel, inf_error *err);
/* in's data from a raw blob (little-endian, row-major; BYTES: 4-byte length +
 * bytes per element).  A fixed-size blob that is aligned is used in place
 * (borrowed_data: it must outlive the request).  size_what names the blob's
 * size field in messages ("binary_data_size", "raw_input_contents"). */
inf_status inf__serve_input_from_blob(srv_input *in, const uint8_t *blob, size_t bs, int64_t numel,
                                      const char *dtype_name, const char *size_what, inf_error *err);
/* Every required model input given; requested outputs named and known
 * (sets their model_index). */
inf_status inf__serve_infer_check_complete(const inf_model *model, srv_infer_request *req, const uint8_t *seen,
                                           inf_error *err);

/* INF_EUNSUPPORTED: output name holds t, which KServe V2 cannot express. */
inf_status inf__serve_unsupported_output(const char *name, const inf_tensor *t, inf_error *err);

/* A sequence of maps {class label -> score} (ZipMap: what skl2onnx
 * classifiers return as output_probability), sent as one [rows, n_classes]
 * tensor of the maps' values with the keys as parameters.class_labels. */
typedef struct srv_map_seq {
    int64_t rows, n_classes;
    const inf_tensor *keys; /* map 0's keys, borrowed from the value (NULL when rows == 0) */
    inf_dtype dtype;        /* the values' dtype */
} srv_map_seq;
/* 1 with *ms filled when t is a sequence of maps that forms one tensor (the
 * same keys, string or integer, in every map; values of one KServe type);
 * 0 when t is not a sequence of maps; -1 with err (INF_EUNSUPPORTED: the
 * output, the map and why) when its maps do not form one tensor. */
int inf__serve_map_seq(const inf_tensor *t, const char *name, srv_map_seq *ms, inf_error *err);
/* Appends the keys as the text of a JSON array: ["cat","dog"] or [10,20]. */
void inf__serve_map_seq_labels(srv_buf *b, const srv_map_seq *ms);

/* ---- metrics.c ------------------------------------------------------------- */

#define SRV_HIST_MAX_BUCKETS 24
typedef struct srv_hist {
    int n_bounds;
    const double *bounds;
    _Atomic uint64_t counts[SRV_HIST_MAX_BUCKETS + 1];
    _Atomic uint64_t sum; /* in the histogram's unit, rounded */
    _Atomic uint64_t count;
} srv_hist;

enum {
    SRV_FAIL_BAD_REQUEST,
    SRV_FAIL_QUEUE_FULL,
    SRV_FAIL_TIMEOUT,
    SRV_FAIL_COMPUTE,
    SRV_FAIL_AUTH,
    SRV_FAIL_OTHER,
    SRV_FAIL_QUOTA,
    SRV_FAIL_COUNT
};

/* Per (model, version): created at load, kept for the server's life so
 * counters survive swaps and unloads. */
typedef struct srv_model_metrics {
    char model[129];
    char version[32];
    _Atomic uint64_t success, failure[SRV_FAIL_COUNT];
    _Atomic uint64_t inference_count, exec_count;
    _Atomic uint64_t inline_exec_count; /* executions run on an HTTP thread (batcher.c INLINE RUNS) */
    _Atomic uint64_t request_us, queue_us, compute_us;
    _Atomic int64_t queue_depth;
    _Atomic int loaded;
    double load_seconds, warmup_seconds;
    double row_us_1, row_us_batch;  /* engine us per row at 1 and gain_rows rows (batcher.c) */
    int gain_rows;                  /* 0: not measured (not batchable) */
    int batch_pays;                 /* 1: every request queues for a batch (no inline runs) */
    int64_t registry_version;       /* > 0: predictions are audited */
    char registry_name[129];        /* the registry model (audit), when registry_version > 0 */
    _Atomic int64_t audit_rows;     /* rows served since the last audit record */
    srv_hist request_hist, queue_hist, compute_hist, batch_hist;
    struct srv_model_metrics *next;
} srv_model_metrics;

typedef struct srv_metrics {
    pthread_mutex_t lock;
    srv_model_metrics *head;
    _Atomic uint64_t http_by_class[6]; /* 1xx..5xx by first digit */
    _Atomic uint64_t load_failures;
    _Atomic uint64_t swaps;
    _Atomic uint64_t conns_cut_deadline; /* conn_guard.c: past the read deadline */
    _Atomic uint64_t conns_cut_reserve;  /* conn_guard.c: oldest reader cut to keep the reserve free */
    uint64_t start_ns;
} srv_metrics;

void inf__serve_metrics_init(srv_metrics *m);
void inf__serve_metrics_deinit(srv_metrics *m);
/* The entry of (model, version), created when missing; NULL when out of memory. */
srv_model_metrics *inf__serve_metrics_get(srv_metrics *m, const char *model, const char *version);
void inf__serve_hist_observe(srv_hist *h, double v);
/* Renders the Prometheus text exposition. */
void inf__serve_metrics_render(srv_metrics *m, srv_buf *out, int n_loaded_models);

/* ---- batcher.c ------------------------------------------------------------- */

typedef struct srv_job srv_job;
typedef void (*srv_job_done_fn)(srv_job *job, void *user);

struct srv_job {
    const inf_tensor **inputs;  /* n_model_inputs, borrowed until done */
    inf_tensor **outputs;       /* n_model_outputs slots, filled with owned tensors */
    int64_t rows;               /* leading dimension (1 for unbatchable inputs) */
    uint64_t t_enqueue_ns, t_start_ns, t_end_ns, deadline_ns;
    int64_t timeout_us;         /* the budget deadline_ns was set from (for messages) */
    int batch_rows;             /* rows of the engine call that served it */
    int hold;                   /* set by the caller of try_inline: keep the session for the caller (below) */
    int held;                   /* set by try_inline: 1 + which session is held (0 = none) */
    int outputs_borrowed;       /* outputs[] are not owned by the job (never freed): 1 = the held session's own
                                   tensors, 2 = views into out_store */
    void *out_store;            /* caller's buffer for a queued job's outputs, or NULL (tensors are allocated) */
    size_t out_store_cap;
    inf_tensor *out_views;      /* caller's n_model_outputs tensor headers for the views into out_store */
    inf_error err;              /* status INF_OK or the failure */
    srv_job_done_fn done;       /* called once, from the scheduler thread */
    void *done_user;
    srv_job *next;
};

typedef struct srv_batcher srv_batcher;

typedef struct srv_batch_options {
    int max_batch;            /* rows per engine call; 1 = no batching */
    int64_t max_queue_delay_us;
    int max_queue;            /* queued jobs before EBUSY */
    int n_threads;            /* session threads */
    int n_preferred;
    int preferred[8];         /* preferred batch sizes (rows) */
    int n_spare;              /* spare sessions for inline runs (<= SRV_MAX_SPARE) */
    int max_run_ms;           /* engine time budget per run (0 = none) */
    int precision;            /* session option precision (inf_precision) */
} srv_batch_options;
#define SRV_MAX_SPARE 7

/* Compiles a session of model (borrowed, must outlive the batcher), warms it
 * (zero inputs at 1 and max_batch rows) and starts the scheduler thread. */
inf_status inf__serve_batcher_new(const inf_model *model, const srv_batch_options *opts, srv_model_metrics *metrics,
                                  srv_batcher **out, double *warmup_seconds, inf_error *err);
/* Queues job.  INF_EBUSY when the queue is full (job not taken, done not
 * called), INF_EINVAL when the batcher is stopping. */
inf_status inf__serve_batcher_submit(srv_batcher *b, srv_job *job);
/* Runs job at once on the calling thread when nothing is queued or running
 * (and no queue delay is configured, and batching does not pay for the
 * model: batcher.c DOES BATCHING PAY): returns 1 with the job complete (done
 * is not called), 0 when the job must be submitted instead.  With job->hold
 * set, a job that ran keeps its session: its outputs are the session's own
 * tensors (outputs_borrowed, no copy), valid until the caller -- which must,
 * soon -- calls inf__serve_batcher_release. */
int inf__serve_batcher_try_inline(srv_batcher *b, srv_job *job);
/* Gives back the session a held inline job kept (no-op when none is held);
 * borrowed outputs[] are set to NULL. */
void inf__serve_batcher_release(srv_batcher *b, srv_job *job);
int inf__serve_batcher_depth(srv_batcher *b);
int inf__serve_batcher_batchable(const srv_batcher *b);
/* Bytes a queued job of `rows` rows needs in job->out_store for all its
 * outputs (batcher.c OUTPUT STORE); 0 when the model's outputs cannot be
 * stored so (not batchable, strings, or per-row sizes unknown until run). */
size_t inf__serve_batcher_store_bytes(const srv_batcher *b, int64_t rows);
/* What the warm-up run showed of output i when it is a sequence of maps
 * (srv_map_seq): NULL otherwise, or when the warm-up could not run. */
typedef struct srv_map_output {
    inf_dtype dtype;   /* the values' dtype */
    int64_t n_classes;
    char *labels;      /* JSON array text of the keys (inf__serve_map_seq_labels) */
} srv_map_output;
const srv_map_output *inf__serve_batcher_map_output(const srv_batcher *b, int i);
/* Runs every queued job, stops the scheduler and frees. */
void inf__serve_batcher_free(srv_batcher *b);

/* ---- models.c, models_repository.c, models_access.c ------------------------- */

typedef struct srv_models srv_models;
typedef struct srv_server srv_server;

typedef struct srv_version {
    _Atomic int refs;
    char name[129];
    char version[32];
    int64_t registry_version; /* 0 for a file */
    char registry_name[129];  /* the registry model's name ("" for a file) */
    inf_model *model;
    srv_batcher *batcher;
    void *pipeline;           /* inf_pipeline * or NULL (see pipeline_error) */
    char pipeline_error[300];
    pthread_mutex_t exec_lock;
    void *exec_pool[64];      /* idle inf_pipeline_exec * */
    int n_exec_pool;
    srv_model_metrics *metrics;
    srv_models *owner;
} srv_version;

srv_models *inf__serve_models_new(srv_server *srv);
void inf__serve_models_free(srv_models *ms);
/* Adds a model slot from "[NAME=]REF" and loads it; errors name the ref. */
inf_status inf__serve_models_add(srv_models *ms, const char *spec, inf_error *err);
/* A reference to the version serving name (version NULL or "" = current). */
inf_status inf__serve_models_acquire(srv_models *ms, const char *name, const char *version, srv_version **out,
                                     inf_error *err);
void inf__serve_version_release(srv_version *v);
/* Repository API: (re)load name (ref NULL = its configured ref), unload;
 * who is the caller's authorize index (-1: none) for the audit record.
 * Refusals (models_repository.c REPOSITORY API RULES): INF_EDENIED (file paths off),
 * INF_ENOENT (not found or not allowed), INF_EBUSY (--max-models). */
inf_status inf__serve_models_load(srv_models *ms, const char *name, const char *ref, int who, inf_error *err);
inf_status inf__serve_models_unload(srv_models *ms, const char *name, int who, inf_error *err);
void inf__serve_models_index_json(srv_models *ms, int ready_only, srv_buf *out);
int inf__serve_models_n_loaded(srv_models *ms);
int inf__serve_models_all_ready(srv_models *ms);
/* --all-aliases: serves every NAME@ALIAS of the registry under that name
 * (the poller then adds new aliases and drops removed ones). */
inf_status inf__serve_models_add_all_aliases(srv_models *ms, inf_error *err);
/* The registry model name behind a served name (for grants). */
void inf__serve_models_registry_name(srv_models *ms, const char *served, char *out, size_t size);
/* Starts the registry poller / auditor thread when a registry is in use. */
inf_status inf__serve_models_start_poller(srv_models *ms, inf_error *err);
/* Auth: INF_OK, INF_EAUTH (no/bad token), INF_EDENIED (no predictor role;
 * admin 1: no publisher role, admin 2: not an admin).
 * *who receives the caller's index for the audit (-1: the server itself,
 * when auth is off). */
inf_status inf__serve_models_authorize(srv_models *ms, const char *bearer, const char *model, int admin, int *who,
                                       inf_error *err);
int inf__serve_models_auth_enabled(srv_models *ms);
/* One audit record of a traffic change (e.g. "serve-route") by who, as for repository loads. */
void inf__serve_models_audit(srv_models *ms, int who, const char *action, const char *served, const char *detail,
                             const char *outcome, const char *message);
/* Adds a slot named by ref itself ("fraud@canary", a path) -- a route target or shadow. */
inf_status inf__serve_models_add_ref(srv_models *ms, const char *ref, inf_error *err);
/* 1 when a slot serves name (loaded or not). */
int inf__serve_models_has(srv_models *ms, const char *name);
/* The principal behind an authorize index (who >= 0), else "anonymous". */
void inf__serve_models_caller_name(srv_models *ms, int who, char *out, size_t size);
/* Pipeline executors for the records endpoint. */
inf_status inf__serve_version_pipeline(srv_version *v, void **exec, inf_error *err);
void inf__serve_version_pipeline_put(srv_version *v, void *exec);
/* Accounts rows predicted for who (an authorize index, -1 = the server's
 * own principal) for the periodic audit records: one per (model, version,
 * caller) and period. */
void inf__serve_models_note_prediction(srv_models *ms, srv_version *v, int who, int64_t rows);
/* The same for a metrics entry (generative models: one row per generation). */
void inf__serve_models_note_rows(srv_models *ms, srv_model_metrics *metrics, int who, int64_t rows);

/* ---- infer_call.c: the protocol-neutral inference path --------------------- */

typedef struct srv_infer_call srv_infer_call;
typedef void (*srv_infer_done_fn)(srv_infer_call *c);
#define SRV_INLINE_IO 8 /* models with fewer inputs / outputs need no job arrays allocated */
struct srv_infer_call {
    srv_server *srv;
    srv_version *version;            /* held reference (acquire .. release) */
    char requested[129];             /* the model name the client asked for (a route's or a shadow's key) */
    srv_infer_request infer;         /* filled by the protocol's codec against version->model */
    int caller;                      /* authorize's index (-1 = none): audit */
    uint64_t t_start_ns;
    srv_job job;
    const inf_tensor **job_inputs;   /* job_in_buf or calloc'd */
    inf_tensor **job_outputs;        /* job_out_buf or calloc'd; by model output after a run */
    const inf_tensor *job_in_buf[SRV_INLINE_IO];
    inf_tensor *job_out_buf[SRV_INLINE_IO];
    void *out_store;                 /* a queued job's outputs land here (kept across calls until free) */
    size_t out_store_cap;
    inf_tensor out_views[SRV_INLINE_IO];
    srv_infer_done_fn done;          /* a queued run finished (batcher's scheduler thread) */
    void *user;
};
/* The hooks of every protocol's inference (infer_call.c): the version that
 * answers (routing), and admission of a request's cost before the batcher
 * (quotas).  HTTP (routes.c) and gRPC (through srv_infer_call) call both. */
/* sticky_key: the request's value of --route-sticky header:NAME, or NULL (the
 * caller's principal is used for --route-sticky principal). */
inf_status inf__serve_resolve_version(srv_server *srv, const char *name, const char *version, int caller,
                                      const char *sticky_key, srv_version **out, inf_error *err);
/* INF_EBUSY over the caller's quota (*retry_after_s: whole seconds until it
 * would pass, 0 when waiting cannot help; retry_after_s may be NULL). */
inf_status inf__serve_admit(srv_server *srv, srv_version *v, int caller, int64_t rows, int *retry_after_s,
                            inf_error *err);
void inf__serve_infer_call_init(srv_infer_call *c, srv_server *srv);
/* A reference on the version serving name (404-style INF_ENOENT otherwise). */
inf_status inf__serve_infer_call_acquire(srv_infer_call *c, const char *name, const char *version, inf_error *err);
/* Runs c->infer: 0 = done now (outputs in job_outputs), 1 = queued (c->done
 * is called later), -1 = refused with err (failure already counted). */
int inf__serve_infer_call_run(srv_infer_call *c, inf_error *err);
/* After the run: INF_OK, or the job's failure (deadline passed included) as
 * "model 'M' version V: why", counted. */
inf_status inf__serve_infer_call_result(srv_infer_call *c, inf_error *err);
/* The response was encoded: success metrics and the audit's row count. */
void inf__serve_infer_call_succeeded(srv_infer_call *c);
void inf__serve_infer_call_count_failure(srv_infer_call *c, int reason);
int inf__serve_infer_failure_reason(inf_status st);
/* Drops outputs, request and version (the out_store stays for reuse). */
void inf__serve_infer_call_release(srv_infer_call *c);
void inf__serve_infer_call_free(srv_infer_call *c);

/* ---- grpc_codec.c / grpc_server.c: KServe V2 over gRPC ------------------- */

/* Decodes a serialized inference.ModelInferRequest: the model name and
 * version (malloc'd, free them) without a model.  INF_EFORMAT when the bytes
 * are not one. */
struct Inference__ModelInferRequest;
inf_status inf__serve_grpc_unpack_infer(const uint8_t *buf, size_t n, struct Inference__ModelInferRequest **out,
                                        inf_error *err);
void inf__serve_grpc_free_infer(struct Inference__ModelInferRequest *m);
/* Fills req from the unpacked message against model (typed contents or
 * raw_input_contents; raw data may be borrowed from m: keep m until req is
 * cleared).  *raw_out: the response should use raw_output_contents. */
inf_status inf__serve_grpc_decode_infer(const struct Inference__ModelInferRequest *m, const inf_model *model,
                                        srv_infer_request *req, int *raw_out, inf_error *err);
/* Serializes the ModelInferResponse (malloc'd bytes in *out, *n). */
inf_status inf__serve_grpc_encode_infer(const srv_infer_request *req, const inf_model *model, const char *model_name,
                                        const char *model_version, inf_tensor *const *outputs, int raw,
                                        uint8_t **out, size_t *n, inf_error *err);
/* The same written directly (grpc_encode.c) when every output is a plain
 * tensor sent as typed FP32/FP64/INT32/INT64/UINT32/UINT64 contents or raw:
 * 1 done, 0 not such a response (use protobuf-c), -1 out of memory. */
int inf__serve_grpc_encode_plain(const srv_infer_request *req, const inf_model *model, const char *model_name,
                                 const char *model_version, inf_tensor *const *outputs, int raw, uint8_t **out,
                                 size_t *n);
/* gRPC status code (grpc_status_code values) for an engine status. */
int inf__serve_grpc_status_of(inf_status st);

/* ---- notify.c -------------------------------------------------------------- */

typedef struct srv_listener srv_listener;
/* A LISTEN connection to the PostgreSQL registry at url; *out stays NULL
 * (INF_OK) when url is not PostgreSQL.  A failed connection is reported and
 * retried on each wait. */
inf_status inf__serve_listen_open(const char *url, srv_listener **out, inf_error *err);
/* Waits up to timeout_ms: 1 when an alias changed, 0 on timeout or wake,
 * -1 when the connection was lost. */
int inf__serve_listen_wait(srv_listener *l, int timeout_ms);
void inf__serve_listen_wake(srv_listener *l);
void inf__serve_listen_close(srv_listener *l);

/* ---- llm_scheduler.c: generative (GGUF) models, continuous batching ------- */

typedef struct srv_llm srv_llm;         /* one served GGUF model: weights, tokenizer, slots, scheduler */
typedef struct srv_llm_req srv_llm_req; /* one generation (refcounted: HTTP side + scheduler) */

/* What a finished or running generation shows its HTTP side (llm_scheduler.c). */
typedef struct srv_llm_params {
    int max_tokens;
    float temperature, top_p;
    int top_k;
    uint64_t seed;
    const char *stop[4];   /* stop strings (borrowed until submit returns: copied) */
    int n_stop;
    int stream;
} srv_llm_params;

/* Called (scheduler thread, request lock held) with new completion text that
 * is safe to send (no partial UTF-8, no possible stop-string prefix), and
 * once more with finish != NULL ("stop" or "length") and the last text. */
typedef void (*srv_llm_emit_fn)(srv_llm_req *r, void *user, const char *text, size_t n, const char *finish);

/* Adds a generative model served as name from a GGUF file (registry_name and
 * registry_version for the audit when it came from the registry). */
inf_status inf__serve_llm_add(srv_server *srv, const char *name, const char *path, const char *registry_name,
                              int64_t registry_version, inf_error *err);
srv_llm *inf__serve_llm_find(srv_server *srv, const char *name); /* no reference taken: load_lock paths only */
/* The model of that name with a reference (NULL: none), for an HTTP request's
 * life; _ref adds one, _release drops one (the last frees the model). */
srv_llm *inf__serve_llm_acquire(srv_server *srv, const char *name);
void inf__serve_llm_ref(srv_llm *l);
void inf__serve_llm_release(srv_llm *l);
/* The reference it was loaded from (a file or NAME[@VERSION|@ALIAS]; the file until set). */
const char *inf__serve_llm_ref_of(const srv_llm *l);
void inf__serve_llm_set_ref(srv_llm *l, const char *ref);
/* Repository unload: off the list at once (404 for new requests), then waits
 * for its queued and running generations to finish and stops it. */
inf_status inf__serve_llm_remove(srv_server *srv, const char *name, inf_error *err);
int inf__serve_llm_count(srv_server *srv);
/* Is a generative model served as name (of registry version `version` when
 * that is given: NULL or "" for any)?  The KServe ready endpoints' answer for it. */
int inf__serve_llm_ready(srv_server *srv, const char *name, const char *version);
/* The server is ready (GET /v2/health/ready, gRPC ServerReady): not draining,
 * every configured ONNX model loaded, and at least one model (ONNX or GGUF) served. */
int inf__serve_ready(srv_server *srv);
/* Appends the generative models to a repository index array ({name, version, state READY, reason, kind gguf}). */
void inf__serve_llm_index_json(srv_server *srv, srv_buf *out, int *first);
const char *inf__serve_llm_name(const srv_llm *l);
const char *inf__serve_llm_chat_template(const srv_llm *l); /* tokenizer.chat_template or "" */
int inf__serve_llm_n_ctx(const srv_llm *l);
int64_t inf__serve_llm_registry_version(const srv_llm *l); /* 0: loaded from a file */
struct inf_tokenizer;
const struct inf_tokenizer *inf__serve_llm_tokenizer(const srv_llm *l);
/* The audit entry of a model from the registry (NULL for a file). */
srv_model_metrics *inf__serve_llm_audit_metrics(const srv_llm *l);
const char *inf__serve_llm_registry_name(const srv_llm *l); /* "" for a file */
/* Queues a generation of prompt (copied); INF_EBUSY when the queue is full.
 * The returned request holds two references: release yours with
 * inf__serve_llm_req_release (the scheduler drops its own when done). */
inf_status inf__serve_llm_submit(srv_llm *l, const int32_t *prompt, int n_prompt, const srv_llm_params *p,
                                 srv_llm_emit_fn emit, void *user, srv_llm_req **out, inf_error *err);
/* Final facts of a generation (valid once finished). */
void inf__serve_llm_req_usage(srv_llm_req *r, int *prompt_tokens, int *completion_tokens);
/* The client went away: the scheduler frees its slot at the next step. */
void inf__serve_llm_req_cancel(srv_llm_req *r);
void inf__serve_llm_req_release(srv_llm_req *r);
pthread_mutex_t *inf__serve_llm_req_lock(srv_llm_req *r);
/* Mean-pooled, L2-normalised final hidden state of text's tokens (runs on
 * the scheduler thread between decode steps). */
inf_status inf__serve_llm_embed(srv_llm *l, const int32_t *tokens, int n, float **out, int *dim, inf_error *err);
/* Prometheus text of every generative model (vLLM's names). */
void inf__serve_llm_metrics_render(srv_server *srv, srv_buf *out);
/* Ends every generation (streams end, suspended connections resume) and
 * stops the schedulers; then free. */
void inf__serve_llm_shutdown(srv_server *srv);
void inf__serve_llm_free_all(srv_server *srv);
/* The model objects of GET /v1/models: only NULL: every generative model, as objects separated by commas; else
 * the one named so.  Returns how many were written (0 or more). */
int inf__serve_llm_list_json(srv_server *srv, const char *only, srv_buf *out);

/* ---- per-caller quotas (quota.c) ---------------------------------------------- */
typedef struct srv_quotas srv_quotas;
srv_quotas *inf__serve_quotas_new(void);
void inf__serve_quotas_free(srv_quotas *q);
/* "PRINCIPAL=RPS[:ROWS_PER_S[:BURST_S]]" (--quota) -> out; 0, or -1 with err. */
int inf__serve_quota_parse(const char *spec, inf_registry_quota *out, inf_error *err);
/* The configured limits (replacing earlier configured ones). */
inf_status inf__serve_quotas_configure(srv_quotas *q, const inf_registry_quota *list, int n, inf_error *err);
/* Re-reads the registry's quotas (they win over configured ones for a principal). */
void inf__serve_quotas_sync_registry(srv_quotas *q, inf_registry *reg);
/* Charges one request of rows rows to principal (NULL/"" = anonymous): 0 when
 * allowed, else the seconds until it would be (> 0), or -1 when rows exceed
 * what the caller's row bucket ever holds. */
double inf__serve_quotas_take(srv_quotas *q, const char *principal, int64_t rows);
/* Prometheus counters per principal (nothing when no quota was ever checked). */
void inf__serve_quotas_metrics(srv_quotas *q, srv_buf *out);

/* ---- traffic splitting: canary routes and shadow copies (traffic.c) ------------ */
typedef struct srv_traffic srv_traffic;
srv_traffic *inf__serve_traffic_new(void);
void inf__serve_traffic_free(srv_traffic *t);
/* "NAME=REF:W[,REF:W]..." (--route) / "NAME=REF:FRACTION" (--shadow); 0, or -1 with err. */
int inf__serve_traffic_parse_route(const char *spec, char name[129], char refs[][129], double *weights, int *n,
                                   inf_error *err);
int inf__serve_traffic_parse_shadow(const char *spec, char name[129], char ref[129], double *fraction,
                                    inf_error *err);
/* "none" | "principal" | "header:NAME" (--route-sticky). */
int inf__serve_traffic_set_sticky(srv_traffic *t, const char *how, inf_error *err);
const char *inf__serve_traffic_sticky_header(srv_traffic *t); /* the header, or NULL */
int inf__serve_traffic_sticky_principal(srv_traffic *t);
/* Loads the route targets refs[0..n) that are not served yet (each gets its
 * model slot), in order; on a failure *failed is its index (the targets
 * before it stay loaded) and err says why. */
inf_status inf__serve_traffic_load_targets(srv_models *ms, char refs[][129], int n, int *failed, inf_error *err);
/* Creates or replaces name's targets and weights (runtime changes keep the counts). */
inf_status inf__serve_traffic_set_route(srv_traffic *t, const char *name, char refs[][129], const double *weights,
                                        int n, inf_error *err);
inf_status inf__serve_traffic_add_shadow(srv_traffic *t, const char *name, const char *ref, double fraction,
                                         inf_error *err);
int inf__serve_traffic_is_route(srv_traffic *t, const char *name);
/* 1 and the chosen target's slot name when name is a route (key: the sticky
 * key, or NULL for a random choice), else 0. */
int inf__serve_traffic_pick(srv_traffic *t, const char *name, const char *key, char *slot, size_t size);
/* After a request to name was answered: maybe runs a copy on name's shadow
 * (never blocks; inputs and primary outputs are copied). */
void inf__serve_traffic_shadow(srv_server *srv, const char *name, const inf_model *primary_model,
                               const inf_tensor *const *inputs, inf_tensor *const *primary, int64_t rows);
void inf__serve_traffic_metrics(srv_traffic *t, srv_buf *out);
/* The target and shadow slot names (for start-up); returns how many. */
int inf__serve_traffic_slots(srv_traffic *t, char out[][129], int max);

/* ---- the server ------------------------------------------------------------ */

typedef struct srv_options {
    const char *host;
    int port;
    const char *models[64];
    int n_models;
    int max_batch;
    int64_t max_queue_delay_us;
    int max_queue;
    int threads;           /* session threads per model */
    int http_threads;      /* 0 = number of cores */
    int64_t max_body_bytes;
    int conn_memory_bytes; /* libmicrohttpd per-connection pool (headers); cleared per request */
    int conn_limit;
    int conn_timeout_s;
    int read_deadline_s;   /* a request's line, headers and body within this of its first byte (conn_guard.c) */
    int64_t request_timeout_ms;
    int max_run_ms;        /* engine time budget per run, warm-up included (0 = none) */
    int precision;         /* session option precision of every model's sessions (inf_precision) */
    int drain_timeout_s;
    int poll_secs;         /* registry alias polling; 0 = off */
    int all_aliases;       /* serve every NAME@ALIAS of the registry */
    int auth_cache_secs;
    int auth_metrics;      /* 1: /metrics needs a token too */
    int auth_health;       /* 1: health/metadata need a token too */
    const char *access_log;/* path, "-" = stderr, NULL = off */
    const char *home;      /* registry */
    const char *registry;
    const char *model_root;     /* repository API: path references must resolve under it */
    int allow_repository_paths; /* repository API: loads by file path allowed (needs model_root) */
    int max_models;             /* repository API: no new name beyond this many served models */
    int preferred[8];
    int n_preferred;
    inf_registry_quota quotas[64]; /* --quota PRINCIPAL=RPS[:ROWS_PER_S[:BURST_S]] */
    int n_quotas;
    const char *routes[16];        /* --route NAME=REF:W,... */
    int n_routes;
    const char *shadows[16];       /* --shadow NAME=REF:FRACTION */
    int n_shadows;
    const char *route_sticky;      /* none | principal | header:NAME */
    int llm_slots;              /* generative models: sequences decoded together (continuous batching) */
    int llm_ctx;                /* generative models: KV-cache positions per sequence (0 = model's, <= 4096) */
    int llm_queue;              /* generative models: requests waiting for a slot before 429 */
    /* model monitoring (monitor_hooks.c, docs/monitoring.md) */
    const char *log_predictions;  /* prediction log sink URI, or NULL */
    const char *log_sample;       /* fraction of records logged / profiled ("1" default) */
    const char *baseline;         /* [NAME=]FILE[,NAME=FILE...]: drift baselines */
    int monitor_window_s;         /* rolling drift window (default 60) */
    const char *monitor_rules;    /* --monitor FILE: alert rules */
    int monitor_interval_s;       /* rule evaluation period (default 10) */
    int ui;                       /* --ui: the read-only console at /ui */
    int console_only;             /* `infera ui`: the console and health routes only (no flag) */
    const char *cpu_price;        /* --cpu-price-per-hour: money per CPU-hour for the cost gauges, or NULL */
    int grpc_port;              /* KServe V2 over gRPC on host:grpc_port; 0 = off (grpc_server.c) */
    int grpc_max_in_flight;     /* gRPC calls being served at once before RESOURCE_EXHAUSTED */
} srv_options;

/* ---- conn_guard.c: read deadline and connection reserve -------------------- */

typedef struct srv_guard srv_guard;
/* Per open connection (inside http.c's srv_conn). */
typedef struct srv_guarded {
    int fd;
    int cut;                       /* shut down by the sweeper (lock held) */
    int listed;
    _Atomic uint64_t deadline_ns;  /* 0: not reading a request (being computed / answered) */
    _Atomic uint64_t since_ns;     /* when its read phase began (oldest first under pressure) */
    struct srv_guarded *prev, *next;
} srv_guarded;
/* Starts the sweeper thread; NULL when out of memory or threads. */
srv_guard *inf__serve_guard_new(srv_server *srv);
void inf__serve_guard_free(srv_guard *g);
/* A connection opened on fd (reading its first request) / closed. */
void inf__serve_guard_add(srv_guard *g, srv_guarded *c, int fd);
void inf__serve_guard_remove(srv_guard *g, srv_guarded *c);
/* Its request line arrived: the deadline becomes at most now + read deadline. */
void inf__serve_guard_request_line(srv_guard *g, srv_guarded *c);
/* Its request was read in full: no deadline until it is answered. */
void inf__serve_guard_received(srv_guarded *c);
/* Its response was sent: reading the next request from now. */
void inf__serve_guard_answered(srv_guard *g, srv_guarded *c);

/* ---- gate.c: the listening socket and the first request's framing ---------- */

typedef struct srv_gate srv_gate;
/* Binds and listens on addr (the thread starts with inf__serve_gate_start,
 * once the daemon exists).  On failure err says why. */
inf_status inf__serve_gate_new(srv_server *srv, const struct sockaddr *addr, socklen_t addr_len, srv_gate **out,
                               inf_error *err);
int inf__serve_gate_port(srv_gate *g);
inf_status inf__serve_gate_start(srv_gate *g, inf_error *err);
/* A connection handed to libmicrohttpd closed (below the limit again). */
void inf__serve_gate_closed(srv_gate *g);
/* Closes the listening socket (drain); pending connections still go on. */
void inf__serve_gate_quiesce(srv_gate *g);
/* Stops the thread and closes what it holds (before the daemon stops);
 * free after the daemon stopped (its closes still call gate_closed). */
void inf__serve_gate_stop(srv_gate *g);
void inf__serve_gate_free(srv_gate *g);
/* ---- http_framing.c: HTTP/1.1 request framing, pure functions ----------- */
/* How a sound header block frames its body. */
typedef struct srv_body_framing {
    uint64_t length;           /* Content-Length, when has_length */
    int has_length;
    int has_transfer_encoding; /* a body of chunks (or one libmicrohttpd refuses) */
    int is_chunked;            /* Transfer-Encoding is exactly "chunked" (one header, one coding) */
} srv_body_framing;
/* 0 when the header block head[0..n) frames its body soundly as far as
 * Content-Length goes (and then *body, when not NULL, says how), else 1
 * with the reason in msg. */
int inf__serve_gate_check_framing(const char *head, size_t n, srv_body_framing *body, char *msg, size_t cap);
/* The offset just past the empty line that ends the header block in
 * p[0..n) (CRLF or bare LF lines), or 0 when it is not complete. */
size_t inf__serve_gate_head_end(const char *p, size_t n);
/* A chunked body followed chunk by chunk (size line with ;extensions, the
 * data and its line end, after the 0 chunk the trailer to its empty line). */
typedef enum {
    CHUNKS_SIZE,
    CHUNKS_DATA,
    CHUNKS_DATA_END,
    CHUNKS_TRAILER,
    CHUNKS_DONE,
    CHUNKS_UNREADABLE
} srv_chunks_state;
typedef struct srv_chunks {
    srv_chunks_state state;
    uint64_t size, left; /* the chunk's size (read so far) / its data bytes still to come */
    size_t line_n;       /* bytes of the current size or trailer line (no CR) */
    int digits, in_ext;  /* hex digits of the size read; past the size (an extension) */
} srv_chunks;
void inf__serve_chunks_start(srv_chunks *c);
/* Follows the next bytes p[0..n) of the body; returns how many belong to
 * it (fewer than n once it ends: state CHUNKS_DONE).  CHUNKS_UNREADABLE: a
 * size line that is not hex or over 16 digits, a line over max_line bytes,
 * data not ended by a line end; nothing more is followed. */
size_t inf__serve_chunks_follow(srv_chunks *c, const char *p, size_t n, size_t max_line);
/* Sends fd the 400 {"error": why} of a bad framing, Connection: close, and
 * shuts it for writing. */
void inf__serve_gate_send_refusal(srv_server *srv, int fd, const char *why);
/* The same answer with another status: "HTTP/1.1 <status> <reason>", {"error": why}, Connection: close. */
void inf__serve_gate_send_error(srv_server *srv, int fd, int status, const char *reason, const char *why);
/* Takes fd (a refused connection's, shut for writing) and closes it once
 * the client stops sending (at most 2 s), so the answer is not lost to a reset. */
void inf__serve_gate_linger(srv_gate *g, int fd);

/* ---- gate_stream.c: the framing of a kept-alive connection's later requests -- */

typedef struct srv_stream srv_stream;
/* Vets fd's requests from now on (the gate, before MHD_add_connection). */
void inf__serve_stream_watch(srv_server *srv, int fd);
/* fd's current request was answered (http.c, on_completed). */
void inf__serve_stream_answered(int fd);
/* fd is about to be closed (http.c, on the close notification). */
void inf__serve_stream_forget(int fd);

struct srv_server {
    srv_options opt;
    srv_guard *guard;
    srv_gate *gate;              /* accepts connections (gate.c) */
    char *model_root_real;       /* --model-root, resolved (malloc'd), or NULL */
    srv_metrics metrics;
    srv_models *models;
    struct MHD_Daemon *daemon;
    FILE *access_log;
    pthread_mutex_t log_lock;
    _Atomic int64_t in_flight;   /* requests accepted and not yet answered */
    _Atomic uint64_t next_request_id;
    _Atomic int draining;
    char listen_url[160];
    pthread_mutex_t llm_lock;    /* guards the llms list */
    srv_llm *llms;               /* generative models (llm_scheduler.c) */
    srv_quotas *quotas;          /* per-caller limits (quota.c) */
    srv_traffic *traffic;        /* canary routes and shadows (traffic.c) */
    struct srv_monitor *monitor; /* monitor_hooks.c, NULL when monitoring is off */
    struct srv_grpc *grpc;       /* the gRPC endpoint (grpc_server.c), NULL when off */
};

/* grpc_server.c */
inf_status inf__serve_grpc_start(srv_server *srv, inf_error *err);
void inf__serve_grpc_stop(srv_server *srv);
/* Prometheus text of the gRPC endpoint (calls by method and status code). */
void inf__serve_grpc_metrics_render(srv_server *srv, srv_buf *out);

/* http.c */
inf_status inf__serve_http_start(srv_server *srv, inf_error *err);
void inf__serve_http_quiesce(srv_server *srv);
void inf__serve_http_stop(srv_server *srv);

/* routes.c: the handlers see one of these per request.  http.c keeps one
 * per connection and reuses it (and its body and response buffers) for
 * the connection's next request (owner != NULL); see http.c PER CONNECTION. */
typedef struct srv_request srv_request;
typedef struct srv_route srv_route;
/* A request's life: answered in its handler, or suspended while its job is
 * queued and resumed when the batcher is done; http.c answers once. */
typedef enum srv_request_state {
    SRV_RQ_NEW = 0,    /* being handled */
    SRV_RQ_SUSPENDED,  /* its job is queued; the connection waits */
    SRV_RQ_COMPLETED,  /* answered before (or instead of) queuing a job */
    SRV_RQ_RESPONDED   /* the response is queued on the connection */
} srv_request_state;

struct srv_request {
    void *owner;                  /* http.c's per-connection context, NULL when allocated alone */
    srv_server *srv;
    struct MHD_Connection *conn;
    const srv_route *route;
    const char *method;
    const char *url;
    char params[2][160];          /* {name}, {version} */
    char *body;
    size_t body_len, body_cap;
    int body_too_large;
    int headers_checked;          /* http.c: framing headers and the raw path checked */
    int close_conn;               /* send "Connection: close" (a request whose framing cannot be trusted) */
    uint64_t t_start_ns;
    uint64_t request_no;
    int caller;                   /* authorize's index of the caller (-1 = none) */
    /* response */
    int status;
    srv_buf resp;
    srv_buf resp_bin;
    size_t json_header_len;       /* > 0: binary response */
    const char *content_type;
    char allow[64];               /* 405: the path's methods, sent as the Allow header */
    int retry_after_s;            /* 429 over a quota: sent as the Retry-After header (0 = none) */
    /* async state (infer / records) */
    srv_request_state state;      /* where the request is in its life (below) */
    srv_version *version;
    srv_job job;
    srv_infer_request infer;
    const inf_tensor **job_inputs;   /* job_in_buf or calloc'd */
    inf_tensor **job_outputs;        /* job_out_buf or calloc'd */
    const inf_tensor *job_in_buf[SRV_INLINE_IO];
    inf_tensor *job_out_buf[SRV_INLINE_IO];
    void *out_store;              /* a queued job's outputs are copied here (kept per connection, like body) */
    size_t out_store_cap;
    inf_tensor out_views[SRV_INLINE_IO];
    void *records_exec;           /* inf_pipeline_exec * */
    void *records_batch;          /* inf_record_batch * */
    void *records_call;           /* routes.c records_call: the scoring core's state (runtime/score.h) */
    char log_model[129];
    char log_version[32];
    /* generative requests (openai.c) */
    void *llm;                    /* openai.c's per-request state, or NULL */
    /* a streamed response (Server-Sent Events): http.c sends it through this reader */
    ssize_t (*stream_read)(void *cls, uint64_t pos, char *buf, size_t max);
    void (*stream_free)(void *cls);
    void *stream_cls;
};

/* Dispatches a complete request: fills status/resp, or starts a job and
 * returns 1 (the connection must be suspended until job completion). */
int inf__serve_route_dispatch(srv_request *rq);
/* Finishes an async request after its job completed. */
void inf__serve_route_complete(srv_request *rq);
/* Releases what the request holds (version, job, tensors). */
void inf__serve_request_release(srv_request *rq);
/* Sets an {"error": msg} body with status. */
void inf__serve_error(srv_request *rq, int status, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* http.c: suspend/resume rq's connection; a request header (or NULL). */
void inf__serve_http_suspend(srv_request *rq);
void inf__serve_http_resume(srv_request *rq);
const char *inf__serve_http_header(srv_request *rq, const char *name);
/* A query argument of rq's URL (decoded), or NULL. */
const char *inf__serve_http_query(srv_request *rq, const char *name);
/* kserve_v2.c: walks {"records": [{...}, ...]} calling each() with every
 * record object's JSON text; errors name the offset. */
inf_status inf__serve_decode_records(const char *body, size_t len,
                                     int (*each)(const char *obj, size_t n, void *user, inf_error *err), void *user,
                                     inf_error *err);
/* Called by the batcher when a job of rq completes (scheduler thread). */
void inf__serve_http_job_done(srv_job *job, void *user);

/* ---- openai.c: the OpenAI-compatible endpoints ----------------------------- */
int inf__serve_openai_completions(srv_request *rq);
int inf__serve_openai_chat(srv_request *rq);
int inf__serve_openai_models(srv_request *rq);
int inf__serve_openai_model(srv_request *rq); /* GET /v1/models/{name} */
int inf__serve_openai_embeddings(srv_request *rq);
/* a resumed non-streaming generation: writes the response */
void inf__serve_openai_complete(srv_request *rq);
void inf__serve_openai_release(srv_request *rq);

/* ---- monitor_hooks.c: prediction log, drift windows, alert rules ---------- */
/* Starts monitoring when an option asks for it (srv->monitor stays NULL
 * otherwise): opens the log, reads the rules, starts the rule thread. */
inf_status inf__serve_monitor_start(srv_server *srv, inf_error *err);
void inf__serve_monitor_stop(srv_server *srv);
/* The records endpoint scored a request: exec (inf_pipeline_exec *), its
 * records in (inf_record_batch *) and prediction rows pred.  Never fails,
 * never waits on the log's sink. */
void inf__serve_monitor_records(srv_server *srv, srv_version *v, void *exec, const void *in, const void *pred);
/* The tensor endpoint (/infer, HTTP and gRPC) answered a request of rows
 * rows: its model inputs / outputs (model order, NULL = absent), valid for
 * the call (before release).  Sampled log rows and the drift window's input
 * columns and spec outputs (src/monitor/tensorrow.h).  Never fails, never waits on the sink. */
void inf__serve_monitor_tensors(srv_server *srv, srv_version *v, const inf_tensor *const *inputs,
                                inf_tensor *const *outputs, int64_t rows, const char *request_id);
/* Appends the monitoring metrics (Prometheus text) / the console's JSON state. */
void inf__serve_monitor_metrics(srv_server *srv, srv_buf *out);
void inf__serve_monitor_state_json(srv_server *srv, srv_buf *out);
/* The console's registry handle (--home / --registry, else the environment's), opened
 * once per server at the first view and kept: *out is locked for the caller until
 * inf__serve_monitor_registry_done (one view at a time; a handle is not thread-safe).
 * Returns the open error (nothing to release) when it cannot be opened.  done(failed = 1)
 * closes the handle after a view failed (the next view reopens it: a PostgreSQL
 * connection that broke, a registry.db that was replaced). */
inf_status inf__serve_monitor_registry(srv_server *srv, inf_registry **out, inf_error *err);
void inf__serve_monitor_registry_done(srv_server *srv, int failed);

/* ---- ui.c: the read-only console of --ui (GET /ui, GET /ui/state) ---------- */
int inf__serve_ui_page(srv_request *rq);
int inf__serve_ui_state(srv_request *rq);
/* The console's registry views (ui.c): GET /ui/registry (models, versions, aliases), /ui/audit
 * (?model=NAME&limit=N&page=P: the newest N by default 50, page P of them; newest first), /ui/lineage?ref=NAME
 * (training data -> versions -> uses). */
int inf__serve_ui_registry(srv_request *rq);
int inf__serve_ui_audit(srv_request *rq);
int inf__serve_ui_lineage(srv_request *rq);
/* GET /ui/quality[?model=NAME]: {"models":[names with a stored quality history],"model":NAME|null,
 * "versions":[the stored documents of NAME's versions]} (monitor/quality_store.h; the first model
 * without ?model=). */
int inf__serve_ui_quality(srv_request *rq);

/* util.c */
void inf__serve_access_log(srv_server *srv, const srv_request *rq);

#endif /* INF_SERVE_H */
