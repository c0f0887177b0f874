/*
 * main.c -- `infera serve`: options, start-up, SIGTERM drain, shutdown.
 *
 * OPTIONS come from one table (key, type, field).  The same key is a flag
 * (--max-batch 8), an environment variable (INFERA_SERVE_MAX_BATCH=8) and a
 * line of the --config file (max-batch = 8); later sources win: defaults <
 * config file < environment < flags.  `model` repeats (in the environment:
 * a comma-separated list).
 *
 * LIFE.  SIGTERM/SIGINT are blocked in every thread and taken by sigwait in
 * the main thread: the server stops accepting (quiesce), answers what is in
 * flight (responses carry Connection: close) until nothing is left or
 * drain-timeout-s passes, then stops the HTTP threads and the models (each
 * batcher runs what is queued before its thread ends) and exits 0.
 */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/cli.h"
#include "serve/serve.h"

typedef enum { T_STR, T_INT, T_I64, T_BOOL, T_PRECISION, T_MODEL, T_PREFERRED, T_QUOTA, T_ROUTE, T_SHADOW } opt_type;

typedef struct opt_row {
    const char *key;
    opt_type type;
    size_t offset;
    int64_t min, max;
    const char *help;
} opt_row;

#define O(f) offsetof(srv_options, f)
static const opt_row opt_table[] = {
    {"host", T_STR, O(host), 0, 0, "address to listen on (default 127.0.0.1)"},
    {"port", T_INT, O(port), 0, 65535, "TCP port (default 8000; 0 = any free port)"},
    {"grpc-port", T_INT, O(grpc_port), 0, 65535,
     "also serve KServe V2 over gRPC (inference.GRPCInferenceService) on --host at this port (default off)"},
    {"grpc-max-in-flight", T_INT, O(grpc_max_in_flight), 1, 1000000,
     "gRPC calls served at once before RESOURCE_EXHAUSTED (default 1024)"},
    {"model", T_MODEL, 0, 0, 0, "[NAME=]REF to serve; repeatable"},
    {"max-batch", T_INT, O(max_batch), 1, 65536, "rows per engine call (1 = no batching; default 64)"},
    {"max-queue-delay-us", T_I64, O(max_queue_delay_us), 0, 10000000, "how long a batch may wait to fill (default 0)"},
    {"preferred-batch", T_PREFERRED, 0, 0, 0, "preferred batch sizes, e.g. 8,16"},
    {"max-queue", T_INT, O(max_queue), 1, 1000000, "queued requests per model before 503 (default 1024)"},
    {"threads", T_INT, O(threads), 1, 256, "engine threads per model session (default 1)"},
    {"http-threads", T_INT, O(http_threads), 0, 256, "HTTP event-loop threads (default: one per core)"},
    {"max-body-bytes", T_I64, O(max_body_bytes), 1024, INT64_C(1) << 40, "largest request body (default 64 MiB)"},
    {"conn-memory-bytes", T_INT, O(conn_memory_bytes), 2048, 1 << 20,
     "per-connection memory for request headers; larger headers get 431 (default 8192)"},
    {"max-connections", T_INT, O(conn_limit), 1, 1000000, "concurrent connections (default 1000)"},
    {"timeout-s", T_INT, O(conn_timeout_s), 0, 86400, "idle / header / body timeout per connection (default 30)"},
    {"read-deadline-s", T_INT, O(read_deadline_s), 0, 86400,
     "a request's line, headers and body must arrive within N s of its first byte (default 30; 0 = off)"},
    {"request-timeout-ms", T_I64, O(request_timeout_ms), 0, 86400000,
     "per-request queue timeout (default 0 = none; request parameter \"timeout\" in us overrides)"},
    {"max-run-ms", T_INT, O(max_run_ms), 0, 2147483647,
     "engine time budget per run, warm-up included: a Loop that would run for ever fails (default 60000; 0 = none)"},
    {"precision", T_PRECISION, O(precision), 0, 0,
     "session precision: fp32 (default) or bf16 (MatMul/Gemm in bfloat16 with float32 sums; AVX512_BF16 CPUs only)"},
    {"drain-timeout-s", T_INT, O(drain_timeout_s), 0, 3600, "SIGTERM: wait this long for requests in flight (30)"},
    {"poll-secs", T_INT, O(poll_secs), 0, 86400,
     "re-resolve registry aliases every N seconds (default 5; 0 = off; a PostgreSQL registry also notifies at once)"},
    {"all-aliases", T_BOOL, O(all_aliases), 0, 1, "serve every NAME@ALIAS of the registry under that name"},
    {"auth-cache-secs", T_INT, O(auth_cache_secs), 0, 86400, "cache token decisions this long (default 10)"},
    {"auth-metrics", T_BOOL, O(auth_metrics), 0, 1, "require a token for /metrics"},
    {"auth-health", T_BOOL, O(auth_health), 0, 1, "require a token for health and metadata"},
    {"access-log", T_STR, O(access_log), 0, 0, "JSON-lines access log file ('-' = stderr; default off)"},
    {"home", T_STR, O(home), 0, 0, "registry home (default $INFERA_HOME or ./infera-data)"},
    {"registry", T_STR, O(registry), 0, 0, "registry URL (postgresql://...; default the SQLite one in home)"},
    {"model-root", T_STR, O(model_root), 0, 0, "repository API: file references must resolve under DIR"},
    {"allow-repository-paths", T_BOOL, O(allow_repository_paths), 0, 1,
     "repository API: allow loading by file path (under --model-root)"},
    {"max-models", T_INT, O(max_models), 1, 64, "repository API: load no new name beyond N served models (16)"},
    {"quota", T_QUOTA, 0, 0, 0,
     "PRINCIPAL=RPS[:ROWS_PER_S[:BURST_S]] per-caller limit, repeatable ('anonymous', '*' = everyone else); "
     "the registry's quotas win"},
    {"route", T_ROUTE, 0, 0, 0, "NAME=REF:WEIGHT[,REF:WEIGHT]... split NAME's traffic by weight; repeatable"},
    {"shadow", T_SHADOW, 0, 0, 0, "NAME=REF:FRACTION copy that share of NAME's requests to REF after answering"},
    {"route-sticky", T_STR, O(route_sticky), 0, 0, "none | principal | header:NAME (one caller, one target)"},
    {"llm-slots", T_INT, O(llm_slots), 1, 256,
     "generative (GGUF) models: sequences decoded together, one KV cache each (default 4)"},
    {"llm-ctx", T_INT, O(llm_ctx), 0, 1 << 20,
     "generative models: context positions per sequence (default 2048; 0 = the model's, at most 4096)"},
    {"llm-queue", T_INT, O(llm_queue), 1, 1000000,
     "generative models: requests waiting for a slot before 429 (default 64)"},
    {"log-predictions", T_STR, O(log_predictions), 0, 0,
     "prediction log of the records endpoint: a sink URI (jsonl:, csv:, sqlite:, postgresql://; docs/monitoring.md)"},
    {"log-sample", T_STR, O(log_sample), 0, 0,
     "fraction of records logged, in (0, 1] (default 1; drift windows see every record)"},
    {"baseline", T_STR, O(baseline), 0, 0,
     "[NAME=]FILE[,...]: baselines (infera monitor baseline) for the drift windows and infera_feature_drift"},
    {"monitor-window", T_INT, O(monitor_window_s), 1, 86400 * 7, "drift window in seconds (default 60)"},
    {"monitor", T_STR, O(monitor_rules), 0, 0, "alert rule file (docs/monitoring.md): evaluated continuously"},
    {"monitor-interval", T_INT, O(monitor_interval_s), 1, 86400, "seconds between rule evaluations (default 10)"},
    {"ui", T_BOOL, O(ui), 0, 1, "serve the read-only web console at /ui"},
    {"cpu-price-per-hour", T_STR, O(cpu_price), 0, 0,
     "price of one CPU-hour: /metrics adds infera_cost_per_million_predictions (default: CPU-seconds only)"},
};
#define N_OPTS ((int)(sizeof opt_table / sizeof opt_table[0]))

/* Strings given on the command line or in the environment are borrowed;
 * config-file strings live in this arena for the process's life. */
typedef struct strings {
    char *items[256];
    int n;
} strings;

static const char *keep(strings *s, const char *v) {
    if (s->n >= 256) return NULL;
    s->items[s->n] = strdup(v);
    return s->items[s->n] ? s->items[s->n++] : NULL;
}

static int set_option(srv_options *o, const opt_row *r, const char *value, const char *where, int replace_models) {
    char *end;
    switch (r->type) {
    case T_STR: *(const char **)((char *)o + r->offset) = value; return 0;
    case T_PRECISION:
        if ((*(int *)((char *)o + r->offset) = inf_precision_from_name(value)) < 0)
            return cli_usage("serve", "%s: %s expects fp32 or bf16, got '%s'", where, r->key, value), -1;
        return 0;
    case T_BOOL:
        if (!strcmp(value, "1") || !strcasecmp(value, "true") || !strcasecmp(value, "yes") || !strcasecmp(value, "on"))
            *(int *)((char *)o + r->offset) = 1;
        else if (!strcmp(value, "0") || !strcasecmp(value, "false") || !strcasecmp(value, "no") ||
                 !strcasecmp(value, "off"))
            *(int *)((char *)o + r->offset) = 0;
        else
            return cli_usage("serve", "%s: %s expects true or false, got '%s'", where, r->key, value), -1;
        return 0;
    case T_INT:
    case T_I64: {
        errno = 0;
        long long v = strtoll(value, &end, 10);
        if (!*value || *end || errno || v < r->min || v > r->max) {
            cli_usage("serve", "%s: %s expects an integer in [%lld, %lld], got '%s'", where, r->key, (long long)r->min,
                      (long long)r->max, value);
            return -1;
        }
        if (r->type == T_INT)
            *(int *)((char *)o + r->offset) = (int)v;
        else
            *(int64_t *)((char *)o + r->offset) = v;
        return 0;
    }
    case T_MODEL:
        if (replace_models) o->n_models = 0;
        if (o->n_models >= 64) return cli_usage("serve", "%s: more than 64 models", where), -1;
        o->models[o->n_models++] = value;
        return 0;
    case T_QUOTA: {
        inf_error qe = {0};
        if (o->n_quotas >= 64) return cli_usage("serve", "%s: more than 64 quotas", where), -1;
        if (inf__serve_quota_parse(value, &o->quotas[o->n_quotas], &qe)) return cli_usage("serve", "%s: %s", where, qe.message), -1;
        o->n_quotas++;
        return 0;
    }
    case T_ROUTE:
    case T_SHADOW: {
        int *n = r->type == T_ROUTE ? &o->n_routes : &o->n_shadows;
        if (*n >= 16) return cli_usage("serve", "%s: more than 16 %ss", where, r->key), -1;
        (r->type == T_ROUTE ? o->routes : o->shadows)[(*n)++] = value;
        return 0;
    }
    case T_PREFERRED: {
        o->n_preferred = 0;
        const char *p = value;
        while (*p) {
            long v = strtol(p, &end, 10);
            if (end == p || v < 1 || o->n_preferred >= 8)
                return cli_usage("serve", "%s: preferred-batch expects up to 8 sizes like 4,8,16, got '%s'", where,
                                 value),
                       -1;
            o->preferred[o->n_preferred++] = (int)v;
            p = *end == ',' ? end + 1 : end;
            if (*end && *end != ',') return cli_usage("serve", "%s: bad preferred-batch '%s'", where, value), -1;
        }
        return 0;
    }
    }
    return -1;
}

static const opt_row *find_opt(const char *key, size_t n) {
    for (int i = 0; i < N_OPTS; i++)
        if (strlen(opt_table[i].key) == n && !strncmp(opt_table[i].key, key, n)) return &opt_table[i];
    return NULL;
}

static char *trim(char *s) {
    while (*s == ' ' || *s == '\t') s++;
    size_t n = strlen(s);
    while (n && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\r' || s[n - 1] == '\n')) s[--n] = 0;
    return s;
}

static int load_config(srv_options *o, const char *path, strings *arena) {
    FILE *f = fopen(path, "r");
    if (!f) return cli_fail("serve", "--config %s: %s", path, strerror(errno)), -1;
    char line[4096];
    int lineno = 0;
    while (fgets(line, sizeof line, f)) {
        lineno++;
        char *s = trim(line);
        if (!*s || *s == '#') continue;
        char *eq = strchr(s, '=');
        char *sp = strpbrk(s, " \t");
        char *sep = eq ? eq : sp;
        if (!sep) {
            fclose(f);
            return cli_usage("serve", "%s:%d: expected 'key = value'", path, lineno), -1;
        }
        *sep = 0;
        char *key = trim(s), *val = trim(sep + 1);
        if (*key == '-' && key[1] == '-') key += 2;
        const opt_row *r = find_opt(key, strlen(key));
        char where[300];
        snprintf(where, sizeof where, "%s:%d", path, lineno);
        if (!r) {
            fclose(f);
            return cli_usage("serve", "%s: unknown key '%s'", where, key), -1;
        }
        const char *v = keep(arena, val);
        if (!v || set_option(o, r, v, where, 0)) {
            fclose(f);
            return -1;
        }
    }
    fclose(f);
    return 0;
}

/* --route / --shadow / --route-sticky: each target and shadow reference is
 * loaded as a slot of its own (served under the reference) unless a slot
 * already has that name; a route's name must not be a served model's. */
static inf_status configure_traffic(srv_server *srv, const srv_options *o, inf_error *err) {
    if (inf__serve_traffic_set_sticky(srv->traffic, o->route_sticky, err)) return INF_EINVAL;
    for (int i = 0; i < o->n_routes + o->n_shadows; i++) {
        char name[129], refs[8][129];
        double w[8];
        int n = 1;
        if (i < o->n_routes) {
            if (inf__serve_traffic_parse_route(o->routes[i], name, refs, w, &n, err)) return INF_EINVAL;
            if (inf__serve_models_has(srv->models, name))
                return inf_error_set(err, INF_EINVAL, "--route %s: '%s' is also a served model's name", o->routes[i],
                                     name);
        } else if (inf__serve_traffic_parse_shadow(o->shadows[i - o->n_routes], name, refs[0], &w[0], err)) {
            return INF_EINVAL;
        }
        int failed;
        if (inf__serve_traffic_load_targets(srv->models, refs, n, &failed, err) != INF_OK) return err->status;
        inf_status st = i < o->n_routes ? inf__serve_traffic_set_route(srv->traffic, name, refs, w, n, err)
                                        : inf__serve_traffic_add_shadow(srv->traffic, name, refs[0], w[0], err);
        if (st != INF_OK) return st;
    }
    return INF_OK;
}

static int load_env(srv_options *o, strings *arena) {
    for (int i = 0; i < N_OPTS; i++) {
        char name[80] = "INFERA_SERVE_";
        size_t k = strlen(name);
        for (const char *p = opt_table[i].key; *p && k < sizeof name - 1; p++)
            name[k++] = *p == '-' ? '_' : (char)(*p >= 'a' && *p <= 'z' ? *p - 32 : *p);
        name[k] = 0;
        const char *v = getenv(name);
        if (!v) continue;
        if (opt_table[i].type == T_MODEL || opt_table[i].type == T_QUOTA || opt_table[i].type == T_ROUTE ||
            opt_table[i].type == T_SHADOW) {
            if (opt_table[i].type == T_MODEL) o->n_models = 0;
            char *copy = (char *)keep(arena, v);
            if (!copy) return -1;
            for (char *tok = strtok(copy, ","); tok; tok = strtok(NULL, ","))
                if (set_option(o, &opt_table[i], trim(tok), name, 0)) return -1;
            continue;
        }
        if (set_option(o, &opt_table[i], v, name, 0)) return -1;
    }
    return 0;
}

static void defaults(srv_options *o) {
    memset(o, 0, sizeof *o);
    o->host = "127.0.0.1";
    o->port = 8000;
    o->max_batch = 64;
    o->max_queue = 1024;
    o->threads = 1;
    o->max_body_bytes = INT64_C(64) << 20;
    o->conn_memory_bytes = 8 * 1024;
    o->conn_limit = 1000;
    o->conn_timeout_s = 30;
    o->read_deadline_s = 30;
    o->max_models = 16;
    o->max_run_ms = 60000;
    o->drain_timeout_s = 30;
    o->poll_secs = 5;
    o->auth_cache_secs = 10;
    o->llm_slots = 4;
    o->llm_ctx = 2048;
    o->llm_queue = 64;
    o->monitor_window_s = 60;
    o->monitor_interval_s = 10;
    o->grpc_max_in_flight = 1024;
}

/* cmd_serve, and `infera ui` (console_only: the console and health routes only, no models). */
static int serve_main(int argc, char **argv, int console_only) {
    srv_server *srv = calloc(1, sizeof *srv);
    strings arena = {0};
    int rc = 1;
    if (!srv) return cli_fail("serve", "out of memory");
    srv_options *o = &srv->opt;
    defaults(o);
    o->console_only = console_only;
    /* --config first (flags override it), then the environment, then flags */
    for (int i = 1; i < argc; i++) {
        bool missing = false;
        const char *v = cli_flag_value(argc, argv, &i, "--config", &missing);
        if (missing) {
            rc = cli_usage("serve", "--config needs a file");
            goto out;
        }
        if (v && load_config(o, v, &arena)) goto out;
    }
    if (load_env(o, &arena)) goto out;
    int flag_models = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strncmp(a, "--", 2)) {
            rc = cli_usage("serve", "unexpected argument '%s' (models are given with --model [NAME=]REF)", a);
            goto out;
        }
        const char *key = a + 2;
        const char *eq = strchr(key, '=');
        size_t klen = eq ? (size_t)(eq - key) : strlen(key);
        if (klen == 6 && !strncmp(key, "config", 6)) {
            if (!eq) i++;
            continue;
        }
        const opt_row *r = find_opt(key, klen);
        if (!r) {
            rc = cli_unexpected("serve", a);
            goto out;
        }
        const char *v;
        if (eq) {
            v = eq + 1;
        } else if (r->type == T_BOOL && (i + 1 >= argc || !strncmp(argv[i + 1], "--", 2))) {
            v = "true";
        } else {
            if (i + 1 >= argc) {
                rc = cli_usage("serve", "%s needs a value", a);
                goto out;
            }
            v = argv[++i];
        }
        if (set_option(o, r, v, a, r->type == T_MODEL && !flag_models++)) goto out;
    }
    if (o->allow_repository_paths && (!o->model_root || !*o->model_root)) {
        rc = cli_usage("serve", "--allow-repository-paths needs --model-root DIR: the folder file references must "
                                "resolve into");
        goto out;
    }
    if (o->model_root && !*o->model_root) {
        rc = cli_usage("serve", "--model-root needs a folder");
        goto out;
    }
    if (o->model_root) {
        struct stat st;
        srv->model_root_real = realpath(o->model_root, NULL);
        if (!srv->model_root_real || stat(srv->model_root_real, &st) || !S_ISDIR(st.st_mode)) {
            rc = cli_usage("serve", "--model-root %s: not a folder", o->model_root);
            goto out;
        }
    }
    if (o->n_models == 0 && o->n_routes == 0 && !o->home && !o->registry && !o->all_aliases) {
        rc = cli_usage("serve", "no model to serve: give --model [NAME=]REF (or load models later with --home and the "
                                "repository API)");
        goto out;
    }

    /* signals: blocked everywhere, taken by sigwait below */
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    pthread_sigmask(SIG_BLOCK, &set, NULL);
    signal(SIGPIPE, SIG_IGN);

    inf__serve_metrics_init(&srv->metrics);
    pthread_mutex_init(&srv->log_lock, NULL);
    pthread_mutex_init(&srv->llm_lock, NULL);
    if (o->access_log) {
        srv->access_log = !strcmp(o->access_log, "-") ? stderr : fopen(o->access_log, "a");
        if (!srv->access_log) {
            rc = cli_fail("serve", "--access-log %s: %s", o->access_log, strerror(errno));
            goto out_metrics;
        }
    }
    srv->models = inf__serve_models_new(srv);
    srv->quotas = inf__serve_quotas_new();
    srv->traffic = inf__serve_traffic_new();
    if (!srv->models || !srv->quotas || !srv->traffic) {
        rc = cli_fail("serve", "out of memory");
        goto out_models;
    }
    inf_error err = {0};
    if (inf__serve_quotas_configure(srv->quotas, o->quotas, o->n_quotas, &err) != INF_OK) {
        rc = cli_fail("serve", "%s", err.message);
        goto out_models;
    }
    for (int i = 0; i < o->n_models; i++) {
        if (inf__serve_models_add(srv->models, o->models[i], &err) != INF_OK) {
            rc = cli_fail("serve", "%s", err.message);
            goto out_models;
        }
    }
    if (o->all_aliases && inf__serve_models_add_all_aliases(srv->models, &err) != INF_OK) {
        rc = cli_fail("serve", "%s", err.message);
        goto out_models;
    }
    if (configure_traffic(srv, o, &err) != INF_OK) {
        rc = cli_fail("serve", "%s", err.message);
        goto out_models;
    }
    if (inf__serve_monitor_start(srv, &err) != INF_OK) {
        rc = cli_fail("serve", "%s", err.message);
        goto out_models;
    }
    if (inf__serve_http_start(srv, &err) != INF_OK) {
        rc = cli_fail("serve", "%s", err.message);
        goto out_models;
    }
    if (inf__serve_grpc_start(srv, &err) != INF_OK) {
        rc = cli_fail("serve", "%s", err.message);
        goto out_http;
    }
    if (srv->grpc) fprintf(stderr, "infera serve: gRPC (KServe V2) on port %d\n", o->grpc_port);
    if (inf__serve_models_start_poller(srv->models, &err) != INF_OK) {
        rc = cli_fail("serve", "registry: %s", err.message);
        goto out_http;
    }
    fprintf(stderr,
            "infera serve: listening on %s (%d model%s, max batch %d, queue delay %lld us, %d engine thread%s per "
            "model)\n",
            srv->listen_url, o->n_models, o->n_models == 1 ? "" : "s", o->max_batch, (long long)o->max_queue_delay_us,
            o->threads, o->threads == 1 ? "" : "s");
    fflush(stderr);

    int sig = 0;
    sigwait(&set, &sig);
    fprintf(stderr, "infera serve: %s received; draining %lld request(s) in flight\n",
            sig == SIGTERM ? "SIGTERM" : "SIGINT", (long long)atomic_load(&srv->in_flight));
    atomic_store(&srv->draining, 1);
    inf__serve_http_quiesce(srv);
    uint64_t deadline = inf__serve_now_ns() + (uint64_t)o->drain_timeout_s * 1000000000ull;
    while (atomic_load(&srv->in_flight) > 0 && inf__serve_now_ns() < deadline) usleep(2000);
    if (atomic_load(&srv->in_flight) > 0)
        fprintf(stderr, "infera serve: drain timeout: %lld request(s) still in flight\n",
                (long long)atomic_load(&srv->in_flight));
    rc = 0;
out_http:
    inf__serve_grpc_stop(srv);
    inf__serve_llm_shutdown(srv); /* generations end: suspended streams resume before the daemon stops */
    inf__serve_http_stop(srv);
out_models:
    inf__serve_monitor_stop(srv);
    inf__serve_llm_free_all(srv);
    inf__serve_models_free(srv->models);
    inf__serve_quotas_free(srv->quotas);
    inf__serve_traffic_free(srv->traffic);
    if (srv->access_log && srv->access_log != stderr) fclose(srv->access_log);
out_metrics:
    if (rc == 0) fprintf(stderr, "infera serve: stopped\n");
    inf__serve_metrics_deinit(&srv->metrics);
    pthread_mutex_destroy(&srv->log_lock);
    pthread_mutex_destroy(&srv->llm_lock);
out:
    for (int i = 0; i < arena.n; i++) free(arena.items[i]);
    free(srv->model_root_real);
    free(srv);
    return rc;
}

int cmd_serve(int argc, char **argv) { return serve_main(argc, argv, 0); }

/* `infera ui --home DIR | --registry URL [--host H] [--port P] [--auth-metrics]`: the read-only
 * console on its own -- serve's console (ui.c) with no model: the registry's models, versions and
 * aliases, the lineage graph and the audit log; every model and repository route answers 404. */
int cmd_ui(int argc, char **argv) {
    static const char *const pass[] = {"--home", "--registry", "--host", "--port"};
    const char *args[16] = {"serve", "--ui", "--max-models", "1"};
    int n = 4, has_reg = 0;
    for (int i = 1; i < argc; i++) {
        int matched = 0;
        for (size_t k = 0; k < sizeof pass / sizeof pass[0] && !matched; k++) {
            bool missing = false;
            int j = i;
            const char *v = cli_flag_value(argc, argv, &j, pass[k], &missing);
            if (!v && !missing) continue;
            if (missing) return cli_usage("ui", "%s needs a value", pass[k]);
            if (n + 2 > (int)(sizeof args / sizeof args[0])) return cli_usage("ui", "too many options");
            args[n++] = pass[k];
            args[n++] = v;
            has_reg |= k < 2;
            i = j;
            matched = 1;
        }
        if (matched) continue;
        if (!strcmp(argv[i], "--auth-metrics") && n < (int)(sizeof args / sizeof args[0])) {
            args[n++] = "--auth-metrics";
            continue;
        }
        return cli_unexpected("ui", argv[i]);
    }
    /* main.c moves the global --home / --registry into INFERA_HOME / INFERA_REGISTRY */
    const char *env_home = getenv("INFERA_HOME"), *env_reg = getenv("INFERA_REGISTRY");
    if (!has_reg && ((env_home && *env_home) || (env_reg && *env_reg))) {
        args[n++] = env_reg && *env_reg ? "--registry" : "--home";
        args[n++] = env_reg && *env_reg ? env_reg : env_home;
        has_reg = 1;
    }
    if (!has_reg) return cli_usage("ui", "give the registry: --home DIR or --registry URL (or $INFERA_HOME)");
    return serve_main(n, (char **)args, 1);
}
