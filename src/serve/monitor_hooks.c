/*
 * monitor_hooks.c -- model monitoring inside `infera serve` (issue 23,
 * docs/monitoring.md "Online monitoring"): the prediction log of the
 * records endpoint, rolling drift windows per served (model, version)
 * against the model's baseline as infera_feature_drift gauges on /metrics,
 * and the alert rules of --monitor with their actions.
 *
 * DESIGN.  One server-wide prediction log (src/monitor/predlog.c: bounded
 * queue, one writer thread; a full queue drops and counts, never waits).
 * The request path (complete_records in routes.c) calls
 * inf__serve_monitor_records once per scored request: every record goes
 * into the version's drift window column by column (a short mutex,
 * src/monitor/online.c), and the sampled records' log rows are built with
 * the version's pipeline (sensitive fields left out by its row plan,
 * src/monitor/logrow.c) and queued to the log.  Entries (one per served
 * model version seen) live for the server's life, like the metrics entries,
 * in a list that only grows (its lock is held to find or add one).  The rule
 * thread wakes every --monitor-interval seconds, checks every rule against
 * every entry's window and, when a rule starts firing, writes a log line,
 * POSTs the alert to its webhook and rolls the registry alias back
 * (src/monitor/actions.c) -- off the request path, one alert at a time.
 * QUALITY.  When the rules file has a "labels" section (monitor/rules.h
 * LABELS), the rule thread also joins, at every wake-up and per entry, the
 * labels source with the prediction log (the one join and metrics of
 * `infera monitor labels`: src/tools/quality.c), stores the quality per
 * window (src/monitor/quality_store.c: the console's history), keeps the
 * newest window for the infera_model_quality gauges and steps the quality
 * rules with it -- the same actions, once per breach.  The log on disk lags
 * the requests by the log writer's flush (about a second).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include <cjson/cJSON.h>

#include "infera/io.h"
#include "infera/pipeline.h"
#include "infera/registry.h"
#include "monitor/actions.h"
#include "monitor/baseline_store.h"
#include "monitor/online.h"
#include "monitor/predlog.h"
#include "monitor/quality_store.h"
#include "monitor/rules.h"
#include "monitor/tensorrow.h"
#include "serve/serve.h"
#include "tools/quality.h"

#define MAX_BASELINES 32
#define MAX_TENSOR_PLANS 8 /* tensor layouts kept per model version; requests of further layouts are not monitored */
#define MAX_TENSORS 64     /* a model with more inputs + outputs than this is not monitored on /infer */

typedef struct rule_state {
    inf__mon_rule_state s;   /* rules.h: breach, firing, last value */
    int64_t rolled_to;       /* the version a rollback moved the alias to (0: none) */
} rule_state;

/* A tensor layout's row plan (tensorrow.h); the list only grows. */
typedef struct tplan_node {
    inf__mon_tplan *plan;
    struct tplan_node *next;
} tplan_node;

typedef struct mon_entry {
    char name[129], version[32], registry_name[129];
    int64_t registry_version;
    inf__mon_online *online; /* NULL without a baseline */
    _Atomic uint64_t records, sampled, build_failures;
    rule_state *rules;       /* one per rule (rule thread only, read under mu for state) */
    _Atomic(tplan_node *) tplans; /* the /infer endpoint's row plans (added under the monitor's mu) */
    int n_tplans;
    _Atomic uint64_t tensor_unmonitored; /* /infer rows not monitored: a layout beyond MAX_TENSOR_PLANS, OOM */
    char **skip;             /* the pipeline's feature columns (NULL-terminated; never the judged prediction) */
    char preferred[256];     /* the default pipeline's score column ("": none; tools/quality.h) */
    cJSON *quality;          /* the newest quality window (under mu; NULL: none yet) */
    char quality_error[256]; /* the last join error reported (rule thread only): reported once */
    struct mon_entry *next;
} mon_entry;

typedef struct srv_monitor {
    srv_server *srv;
    inf__mon_log *log;
    double sample;
    struct {
        char name[129];      /* "" = every model */
        const char *path;
    } baselines[MAX_BASELINES];
    int n_baselines;
    pthread_mutex_t mu;      /* entries list, rule states */
    mon_entry *entries;
    inf__mon_rules rules;
    inf_registry *registry;  /* for rollbacks; NULL when no rule rolls back */
    pthread_t thread;
    int thread_started, stopping;
    pthread_cond_t cv;
    _Atomic uint64_t alerts_fired, webhooks_ok, webhooks_failed, rollbacks;
    char *baseline_copy;     /* the --baseline option, split in place */
    pthread_mutex_t console_mu;     /* the console's registry handle: one view at a time */
    inf_registry *console_registry; /* opened at the first registry view, kept (NULL: not yet) */
} srv_monitor;

static int64_t now_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* ---- cost per prediction ------------------------------------------------------ */

static double cpu_seconds(void) {
    struct rusage ru;
    if (getrusage(RUSAGE_SELF, &ru)) return 0;
    return (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + (double)ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
}

static uint64_t predictions(srv_server *srv) {
    uint64_t n = 0;
    pthread_mutex_lock(&srv->metrics.lock);
    for (srv_model_metrics *e = srv->metrics.head; e; e = e->next) n += atomic_load(&e->inference_count);
    pthread_mutex_unlock(&srv->metrics.lock);
    return n;
}

/* The price of a CPU-hour (--cpu-price-per-hour), NAN when not given or not a number. */
static double cpu_price(const srv_server *srv) {
    if (!srv->opt.cpu_price) return NAN;
    char *end;
    double v = strtod(srv->opt.cpu_price, &end);
    return *end || !(v >= 0) ? NAN : v;
}

/* ---- start / stop ---------------------------------------------------------- */

static inf_status parse_baselines(srv_monitor *m, const char *spec, inf_error *err) {
    if (!spec || !*spec) return INF_OK;
    if (!(m->baseline_copy = strdup(spec))) return inf_error_set(err, INF_ENOMEM, "--baseline: out of memory");
    for (char *save = NULL, *tok = strtok_r(m->baseline_copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        if (m->n_baselines == MAX_BASELINES)
            return inf_error_set(err, INF_EINVAL, "--baseline: more than %d baselines", MAX_BASELINES);
        char *eq = strchr(tok, '=');
        const char *path = eq ? eq + 1 : tok;
        if (eq && (size_t)(eq - tok) >= sizeof m->baselines[0].name)
            return inf_error_set(err, INF_EINVAL, "--baseline: model name too long in '%s'", tok);
        if (eq) *eq = 0;
        snprintf(m->baselines[m->n_baselines].name, sizeof m->baselines[0].name, "%s", eq ? tok : "");
        m->baselines[m->n_baselines++].path = path;
        /* read once now: a bad file is a start-up error, not a silent gap */
        inf__mon_profile *p;
        inf_status st = inf__mon_profile_load(path, &p, err);
        if (st) return st;
        inf__mon_profile_free(p);
    }
    return INF_OK;
}

static void *rule_thread(void *arg);

inf_status inf__serve_monitor_start(srv_server *srv, inf_error *err) {
    const srv_options *o = &srv->opt;
    srv->monitor = NULL;
    if (o->log_sample && !o->log_predictions)
        return inf_error_set(err, INF_EINVAL, "--log-sample needs --log-predictions DST");
    if (!o->log_predictions && !o->baseline && !o->monitor_rules && !o->ui) return INF_OK;
    srv_monitor *m = calloc(1, sizeof *m);
    if (!m) return inf_error_set(err, INF_ENOMEM, "monitor: out of memory");
    m->srv = srv;
    pthread_mutex_init(&m->mu, NULL);
    pthread_cond_init(&m->cv, NULL);
    pthread_mutex_init(&m->console_mu, NULL);
    srv->monitor = m;
    m->sample = 1;
    if (o->log_sample) {
        char *end;
        m->sample = strtod(o->log_sample, &end);
        if (*end || !(m->sample > 0 && m->sample <= 1))
            return inf_error_set(err, INF_EINVAL, "--log-sample must be in (0, 1] (got '%s')", o->log_sample);
    }
    inf_status st;
    if ((st = parse_baselines(m, o->baseline, err))) return st;
    if (o->log_predictions && (st = inf__mon_log_open(o->log_predictions, NULL, m->sample, 0, &m->log, err)))
        return st;
    if (o->monitor_rules) {
        if ((st = inf__mon_rules_load(o->monitor_rules, &m->rules, err))) return st;
        int rollback = 0;
        for (int i = 0; i < m->rules.n; i++) rollback |= m->rules.rules[i].actions & INF__MON_ACT_ROLLBACK;
        if (rollback) {
            inf_registry_options ro;
            inf_registry_options_from_env(&ro);
            if (o->home) ro.home = o->home;
            if (o->registry) ro.url = o->registry;
            inf_error re;
            if (inf_registry_open(&ro, &m->registry, &re))
                return inf_error_set(err, re.status, "--monitor %s: a rule rolls back an alias, but the registry "
                                     "cannot be opened: %s", o->monitor_rules, re.message);
        }
        if (m->rules.labels.has && !m->rules.labels.log[0] && !o->log_predictions)
            return inf_error_set(err, INF_EINVAL,
                                 "--monitor %s: its labels are joined with the prediction log: give "
                                 "--log-predictions DST (or labels.log)",
                                 o->monitor_rules);
        for (int i = 0; i < m->rules.n; i++)
            if (m->rules.rules[i].quality && !m->rules.labels.has)
                fprintf(stderr,
                        "infera serve: rule '%s': a quality rule needs labels: a \"labels\" section in %s "
                        "(docs/monitoring.md)\n",
                        m->rules.rules[i].name, o->monitor_rules);
        int n_drift = 0;
        for (int i = 0; i < m->rules.n; i++)
            n_drift += !m->rules.rules[i].quality;
        if (!m->n_baselines && n_drift)
            fprintf(stderr, "infera serve: --monitor without --baseline: drift rules have no window to check\n");
        if (pthread_create(&m->thread, NULL, rule_thread, m))
            return inf_error_set(err, INF_ENOMEM, "monitor: cannot start the rule thread");
        m->thread_started = 1;
    }
    return INF_OK;
}

void inf__serve_monitor_stop(srv_server *srv) {
    srv_monitor *m = srv->monitor;
    uint64_t n = srv->models ? predictions(srv) : 0;
    if (n) {
        double cpu = cpu_seconds(), price = cpu_price(srv);
        fprintf(stderr, "infera serve: cost: %llu predictions, cpu %.2f s, %.1f cpu-s per million predictions", (unsigned long long)n,
                cpu, cpu / (double)n * 1e6);
        if (isfinite(price)) fprintf(stderr, ", %.4g per million at %g per CPU-hour", cpu / 3600.0 * price / (double)n * 1e6, price);
        fputc('\n', stderr);
    }
    if (!m) return;
    if (m->thread_started) {
        pthread_mutex_lock(&m->mu);
        m->stopping = 1;
        pthread_cond_broadcast(&m->cv);
        pthread_mutex_unlock(&m->mu);
        pthread_join(m->thread, NULL);
    }
    if (m->log) {
        inf__mon_log_stats s;
        inf_error e = {0};
        if (inf__mon_log_close(m->log, &s, &e) != INF_OK)
            fprintf(stderr, "infera serve: prediction log: %s\n", e.message);
        fprintf(stderr, "infera serve: prediction log: %llu records, %llu sampled, %llu logged, %llu dropped\n",
                (unsigned long long)s.n_seen, (unsigned long long)s.n_sampled, (unsigned long long)s.n_written,
                (unsigned long long)s.n_dropped);
    }
    for (mon_entry *e = m->entries, *next; e; e = next) {
        next = e->next;
        for (tplan_node *n = atomic_load(&e->tplans), *nn; n; n = nn) {
            nn = n->next;
            inf__mon_tplan_free(n->plan);
            free(n);
        }
        inf__mon_online_free(e->online);
        inf__quality_skip_free(e->skip);
        cJSON_Delete(e->quality);
        free(e->rules);
        free(e);
    }
    inf__mon_rules_free(&m->rules);
    if (m->registry) inf_registry_free(m->registry);
    if (m->console_registry) inf_registry_free(m->console_registry);
    pthread_mutex_destroy(&m->console_mu);
    pthread_mutex_destroy(&m->mu);
    pthread_cond_destroy(&m->cv);
    free(m->baseline_copy);
    free(m);
    srv->monitor = NULL;
}

/* ---- entries ---------------------------------------------------------------- */

static const char *baseline_of(const srv_monitor *m, const char *name) {
    const char *any = NULL;
    for (int i = 0; i < m->n_baselines; i++) {
        if (!strcmp(m->baselines[i].name, name)) return m->baselines[i].path;
        if (!m->baselines[i].name[0]) any = m->baselines[i].path;
    }
    return any;
}

static mon_entry *entry_new(srv_monitor *m, const srv_version *v) {
    mon_entry *e = calloc(1, sizeof *e);
    if (!e) return NULL;
    snprintf(e->name, sizeof e->name, "%s", v->name);
    snprintf(e->version, sizeof e->version, "%s", v->version);
    snprintf(e->registry_name, sizeof e->registry_name, "%s", v->registry_name);
    e->registry_version = v->registry_version;
    e->rules = calloc((size_t)(m->rules.n ? m->rules.n : 1), sizeof *e->rules);
    if (m->rules.labels.has) {
        e->skip = inf__quality_skip_new(v->pipeline);
        if (!inf__quality_default_prediction(v->model, v->pipeline, e->preferred, sizeof e->preferred))
            e->preferred[0] = 0;
    }
    const char *path = baseline_of(m, v->name);
    inf__mon_profile *base = NULL;
    inf_error err;
    if (path && inf__mon_profile_load(path, &base, &err) != INF_OK)
        fprintf(stderr, "infera serve: model '%s': %s (no drift window)\n", v->name, err.message);
    /* a registry version's stored baseline (monitor baseline ... --register) */
    if (!path && v->registry_version > 0 &&
        inf__mon_baseline_find(m->srv->opt.home, v->registry_name, v->registry_version, &base, &err) == INF_OK)
        fprintf(stderr, "infera serve: model '%s' version %s: drift against the baseline stored with %s@%lld\n", v->name,
                v->version, v->registry_name, (long long)v->registry_version);
    if (base && inf__mon_online_new(base, (int64_t)m->srv->opt.monitor_window_s * 1000000, 0,
                                    v->registry_name[0] ? v->registry_name : v->name, v->version, &e->online) != INF_OK)
        e->online = NULL;
    if (!e->rules || (m->rules.labels.has && !e->skip)) {
        inf__mon_online_free(e->online);
        inf__quality_skip_free(e->skip);
        free(e->rules);
        free(e);
        return NULL;
    }
    return e;
}

static mon_entry *entry_get(srv_monitor *m, const srv_version *v) {
    pthread_mutex_lock(&m->mu);
    mon_entry *e = m->entries, *last = NULL;
    for (; e; last = e, e = e->next)
        if (!strcmp(e->name, v->name) && !strcmp(e->version, v->version)) break;
    if (!e && (e = entry_new(m, v)) != NULL) {
        if (last) last->next = e;
        else m->entries = e;
    }
    pthread_mutex_unlock(&m->mu);
    return e;
}

/* ---- the request path ------------------------------------------------------- */

void inf__serve_monitor_records(srv_server *srv, srv_version *v, void *exec, const void *in, const void *pred) {
    srv_monitor *m = srv->monitor;
    if (!m || !v->pipeline) return;
    mon_entry *e = entry_get(m, v);
    if (!e) return;
    const inf_pipeline_exec *ex = exec;
    int n = inf_pipeline_n_accepted(ex);
    atomic_fetch_add(&e->records, (uint64_t)n);
    int64_t t = now_us();
    /* every record into the drift window, column by column (no log row) */
    if (e->online && inf__mon_online_add_scored(e->online, ex, pred, t) != INF_OK) atomic_fetch_add(&e->build_failures, 1);
    /* the sampled records' log rows, named by the registry's name of a registry model (the served
     * name may be another) so `infera monitor drift NAME@VERSION` finds them */
    if (m->log)
        atomic_fetch_add(&e->sampled,
                         (uint64_t)inf__mon_log_add_at(m->log, v->pipeline,
                                                       e->registry_name[0] ? e->registry_name : NULL, ex, in, pred, t));
}

/* ---- the tensor endpoint (/infer, HTTP and gRPC) ------------------------------ */

/* The entry's plan for requests like t, or a new one (kept).  NULL when out
 * of memory or MAX_TENSOR_PLANS layouts were seen already. */
static const inf__mon_tplan *tplan_for(srv_monitor *m, mon_entry *e, const inf__mon_tensors *t, const srv_version *v) {
    for (tplan_node *n = atomic_load(&e->tplans); n; n = n->next)
        if (inf__mon_tplan_matches(n->plan, t)) return n->plan;
    pthread_mutex_lock(&m->mu);
    const inf__mon_tplan *found = NULL;
    for (tplan_node *n = atomic_load(&e->tplans); n && !found; n = n->next) /* another thread may have added it */
        if (inf__mon_tplan_matches(n->plan, t)) found = n->plan;
    tplan_node *node = NULL;
    if (!found && e->n_tplans < MAX_TENSOR_PLANS && (node = calloc(1, sizeof *node)) != NULL) {
        if (inf__mon_tplan_new(t, v->pipeline, &node->plan) == INF_OK) {
            node->next = atomic_load(&e->tplans);
            atomic_store(&e->tplans, node);
            e->n_tplans++;
            found = node->plan;
        } else {
            free(node);
        }
    }
    pthread_mutex_unlock(&m->mu);
    return found;
}

typedef struct tensor_rows {
    const inf__mon_tplan *plan;
    const inf__mon_tensors *t;
    const char *id, *model, *version;
    int64_t t_us;
} tensor_rows;

static inf_status tensor_row(void *user, int k, const int *map, inf_record_batch *out) {
    const tensor_rows *r = user;
    return inf__mon_tplan_row(r->plan, map, r->t, k, r->id, r->t_us, r->model, r->version, out);
}

/* Every row's input columns (as doubles) and spec outputs (tensorrow.h) into the drift window. */
static void tensor_window(mon_entry *e, const inf__mon_tplan *plan, const inf__mon_tensors *t, int64_t t_us) {
    int nf = inf__mon_tplan_n_features(plan), ny = inf__mon_tplan_n_outputs(plan);
    double small[512];
    inf_value small_y[128];
    size_t need = (size_t)t->rows * (size_t)(nf ? nf : 1), need_y = (size_t)t->rows * (size_t)ny;
    double *x = need <= sizeof small / sizeof small[0] ? small : malloc(need * sizeof *x);
    inf_value *y = need_y <= sizeof small_y / sizeof small_y[0] ? small_y : malloc(need_y * sizeof *y);
    if (x && y) {
        for (int64_t k = 0; k < t->rows; k++) {
            inf__mon_tplan_features(plan, t, k, x + (size_t)k * (size_t)nf);
            inf__mon_tplan_outputs(plan, t, k, y + (size_t)k * (size_t)ny);
        }
    }
    if (!x || !y ||
        inf__mon_online_add_matrix(e->online, x, (int)t->rows, nf, inf__mon_tplan_feature_names(plan), y, ny,
                                   inf__mon_tplan_output_names(plan), t_us) != INF_OK)
        atomic_fetch_add(&e->build_failures, 1);
    if (x != small) free(x);
    if (y != small_y) free(y);
}

void inf__serve_monitor_tensors(srv_server *srv, srv_version *v, const inf_tensor *const *inputs,
                                inf_tensor *const *outputs, int64_t rows, const char *request_id) {
    srv_monitor *m = srv->monitor;
    if (!m || rows <= 0 || rows > INT32_MAX) return;
    int n_in = inf_model_n_inputs(v->model), n_out = inf_model_n_outputs(v->model);
    if (n_in + n_out > MAX_TENSORS) return;
    mon_entry *e = entry_get(m, v);
    if (!e) return;
    atomic_fetch_add(&e->records, (uint64_t)rows);
    if (!m->log && !e->online) return;
    const char *names[MAX_TENSORS];
    for (int i = 0; i < n_in; i++)
        names[i] = inf_model_input(v->model, i)->name;
    for (int i = 0; i < n_out; i++)
        names[n_in + i] = inf_model_output(v->model, i)->name;
    inf__mon_tensors t = {n_in, n_out, inputs, (const inf_tensor *const *)outputs, names, names + n_in, rows};
    const inf__mon_tplan *plan = tplan_for(m, e, &t, v);
    if (!plan) {
        atomic_fetch_add(&e->tensor_unmonitored, (uint64_t)rows);
        return;
    }
    int64_t t_us = now_us();
    if (e->online && (inf__mon_tplan_n_features(plan) || inf__mon_tplan_n_outputs(plan)))
        tensor_window(e, plan, &t, t_us);
    if (m->log) {
        tensor_rows r = {plan, &t, request_id, e->registry_name[0] ? e->registry_name : e->name, e->version, t_us};
        atomic_fetch_add(&e->sampled,
                         (uint64_t)inf__mon_log_add_built(m->log, (int)rows, plan, inf__mon_tplan_n_fields(plan),
                                                          inf__mon_tplan_field_names(plan), tensor_row, &r));
    }
}

/* ---- rules ------------------------------------------------------------------ */

static void fire(srv_monitor *m, mon_entry *e, const inf__mon_rule *r, rule_state *rs, const cJSON *drift) {
    cJSON *a = inf__mon_alert_json(r, drift, rs->s.value, rs->s.column[0] ? rs->s.column : NULL);
    if (!a) return;
    atomic_fetch_add(&m->alerts_fired, 1);
    cJSON_AddStringToObject(a, "status", "firing");
    cJSON_AddStringToObject(a, "served_as", e->name);
    if (e->registry_name[0]) { /* the alert names the registry model */
        cJSON_ReplaceItemInObjectCaseSensitive(a, "model", cJSON_CreateString(e->registry_name));
    }
    inf__mon_act_result res;
    inf__mon_alert_act(r, a, m->registry, e->registry_name[0] ? e->registry_name : e->name, e->registry_version,
                       "infera serve", &res);
    if (res.rolled_to) {
        rs->rolled_to = res.rolled_to;
        atomic_fetch_add(&m->rollbacks, 1);
    }
    atomic_fetch_add(res.webhook_ok ? &m->webhooks_ok : &m->webhooks_failed, (uint64_t)(res.webhook_ok | res.webhook_failed));
    cJSON_Delete(a);
}

static void evaluate_entry(srv_monitor *m, mon_entry *e, int64_t t) {
    if (!e->online) return;
    cJSON *drift = inf__mon_online_drift(e->online, t, 1);
    if (!drift) return;
    for (int i = 0; i < m->rules.n; i++) {
        const inf__mon_rule *r = &m->rules.rules[i];
        rule_state *rs = &e->rules[i];
        if (r->quality) continue; /* check_quality's */
        pthread_mutex_lock(&m->mu);
        int step = inf__mon_rule_step(r, &rs->s, drift, t, t); /* rules.c: the same steps as stream's */
        pthread_mutex_unlock(&m->mu);
        if (step < 0)
            fprintf(stderr, "infera serve: alert '%s' resolved: model '%s' version %s\n", r->name, e->name, e->version);
        if (step > 0) fire(m, e, r, rs, drift);
    }
    cJSON_Delete(drift);
}

/* The entry's quality from the labels that have arrived (QUALITY above). */
static void check_quality(srv_monitor *m, mon_entry *e) {
    const inf__mon_labels_src *lab = &m->rules.labels;
    const char *model = e->registry_name[0] ? e->registry_name : e->name;
    inf__mon_join jn;
    inf_error err;
    if (inf__quality_join(lab, m->srv->opt.log_predictions, model, e->version, (const char *const *)e->skip,
                          e->preferred[0] ? e->preferred : NULL, &jn, &err)) {
        if (strcmp(e->quality_error, err.message)) /* once per distinct error: labels may not have arrived yet */
            fprintf(stderr, "infera serve: quality of '%s' version %s: %s\n", e->name, e->version, err.message);
        snprintf(e->quality_error, sizeof e->quality_error, "%s", err.message);
        return;
    }
    e->quality_error[0] = 0;
    cJSON *doc = jn.rows_joined ? inf__quality_doc(&jn, lab->window_us, model, e->version) : NULL;
    if (doc && inf__mon_quality_store(m->srv->opt.home, model, e->version, doc, &err))
        fprintf(stderr, "infera serve: quality of '%s' version %s: %s\n", e->name, e->version, err.message);
    cJSON *windows = cJSON_GetObjectItemCaseSensitive(doc, "windows");
    int n = cJSON_GetArraySize(windows);
    cJSON *newest = n ? cJSON_DetachItemFromArray(windows, n - 1) : NULL;
    pthread_mutex_lock(&m->mu);
    if (newest) {
        cJSON_Delete(e->quality);
        e->quality = newest;
    }
    pthread_mutex_unlock(&m->mu);
    cJSON_Delete(doc);
    for (int i = 0; i < m->rules.n; i++) {
        const inf__mon_rule *r = &m->rules.rules[i];
        if (!r->quality) continue;
        cJSON *w;
        pthread_mutex_lock(&m->mu); /* states are read under mu; only this thread writes them */
        inf__mon_rule_state st = e->rules[i].s;
        pthread_mutex_unlock(&m->mu);
        int step = inf__quality_rule_step(r, &st, &jn, model, e->version, &w); /* windows computed unlocked */
        pthread_mutex_lock(&m->mu);
        e->rules[i].s = st;
        pthread_mutex_unlock(&m->mu);
        if (step < 0)
            fprintf(stderr, "infera serve: alert '%s' resolved: model '%s' version %s\n", r->name, e->name, e->version);
        if (step > 0) fire(m, e, r, &e->rules[i], w);
        cJSON_Delete(w);
    }
    inf__mon_join_free(&jn);
}

static void *rule_thread(void *arg) {
    srv_monitor *m = arg;
    int period = m->srv->opt.monitor_interval_s > 0 ? m->srv->opt.monitor_interval_s : 10;
    pthread_mutex_lock(&m->mu);
    while (!m->stopping) {
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_sec += period;
        while (!m->stopping && pthread_cond_timedwait(&m->cv, &m->mu, &until) == 0) {
        }
        if (m->stopping) break;
        mon_entry *head = m->entries;
        pthread_mutex_unlock(&m->mu);
        int64_t t = now_us();
        for (mon_entry *e = head; e; e = e->next) {
            evaluate_entry(m, e, t);
            if (m->rules.labels.has) check_quality(m, e);
        }
        pthread_mutex_lock(&m->mu);
    }
    pthread_mutex_unlock(&m->mu);
    return NULL;
}

/* ---- the console's registry handle ------------------------------------------ */

inf_status inf__serve_monitor_registry(srv_server *srv, inf_registry **out, inf_error *err) {
    srv_monitor *m = srv->monitor;
    *out = NULL;
    if (!m) return inf_error_set(err, INF_EINVAL, "no console: start the server with --ui");
    pthread_mutex_lock(&m->console_mu);
    if (!m->console_registry) {
        inf_registry_options o;
        inf_registry_options_from_env(&o);
        if (srv->opt.home) o.home = srv->opt.home;
        if (srv->opt.registry) o.url = srv->opt.registry;
        o.create = 0;
        inf_status st = inf_registry_open(&o, &m->console_registry, err);
        if (st) {
            m->console_registry = NULL;
            pthread_mutex_unlock(&m->console_mu);
            return st;
        }
    }
    *out = m->console_registry;
    return INF_OK;
}

void inf__serve_monitor_registry_done(srv_server *srv, int failed) {
    srv_monitor *m = srv->monitor;
    if (failed && m->console_registry) {
        inf_registry_free(m->console_registry);
        m->console_registry = NULL;
    }
    pthread_mutex_unlock(&m->console_mu);
}

/* ---- /metrics and the console's state --------------------------------------- */

static void label(srv_buf *o, const char *key, const char *v, int first) {
    inf__serve_buf_printf(o, "%s%s=\"", first ? "" : ",", key);
    for (const char *p = v; *p; p++) {
        if (*p == '"' || *p == '\\') inf__serve_buf_put(o, "\\", 1);
        if (*p == '\n') inf__serve_buf_puts(o, "\\n");
        else inf__serve_buf_put(o, p, 1);
    }
    inf__serve_buf_put(o, "\"", 1);
}

static void entry_labels(srv_buf *o, const mon_entry *e) {
    label(o, "model", e->name, 1);
    label(o, "version", e->version, 0);
}

static void drift_gauges(srv_buf *o, const mon_entry *e, const cJSON *drift) {
    static const char *const sections[] = {"features", "outputs"};
    for (int s = 0; s < 2; s++) {
        const cJSON *c, *v;
        cJSON_ArrayForEach(c, cJSON_GetObjectItemCaseSensitive(drift, sections[s])) cJSON_ArrayForEach(v, c) {
            if (!cJSON_IsNumber(v)) continue;
            inf__serve_buf_puts(o, "infera_feature_drift{");
            entry_labels(o, e);
            label(o, "feature", c->string, 0);
            label(o, "metric", v->string, 0);
            inf__serve_buf_printf(o, "} %.6g\n", v->valuedouble);
        }
    }
}

/* The server's CPU time (every thread: HTTP, batchers, monitoring) per
 * million rows predicted, as `infera batch` reports it in its summary. */
static void cost_metrics(srv_server *srv, srv_buf *o) {
    double cpu = cpu_seconds(), price = cpu_price(srv);
    uint64_t n = predictions(srv);
    inf__serve_buf_printf(o, "# HELP infera_process_cpu_seconds_total CPU time of the server process (user + system).\n"
                             "# TYPE infera_process_cpu_seconds_total counter\ninfera_process_cpu_seconds_total %.3f\n"
                             "# HELP infera_predictions_total Rows predicted, every model.\n"
                             "# TYPE infera_predictions_total counter\ninfera_predictions_total %llu\n",
                          cpu, (unsigned long long)n);
    if (!n) return;
    inf__serve_buf_printf(o, "# HELP infera_cpu_seconds_per_million_predictions Process CPU time per million rows predicted.\n"
                             "# TYPE infera_cpu_seconds_per_million_predictions gauge\n"
                             "infera_cpu_seconds_per_million_predictions %.6g\n", cpu / (double)n * 1e6);
    if (isfinite(price))
        inf__serve_buf_printf(o, "# HELP infera_cost_per_million_predictions CPU cost per million rows predicted at --cpu-price-per-hour.\n"
                                 "# TYPE infera_cost_per_million_predictions gauge\n"
                                 "infera_cost_per_million_predictions %.6g\n", cpu / 3600.0 * price / (double)n * 1e6);
}

void inf__serve_monitor_metrics(srv_server *srv, srv_buf *o) {
    srv_monitor *m = srv->monitor;
    cost_metrics(srv, o);
    if (!m) return;
    pthread_mutex_lock(&m->mu);
    mon_entry *head = m->entries;
    pthread_mutex_unlock(&m->mu);
    int64_t t = now_us();
    inf__serve_buf_puts(o, "# HELP infera_monitor_records_total Records (rows) scored through the records and /infer "
                           "endpoints, seen by monitoring.\n"
                           "# TYPE infera_monitor_records_total counter\n");
    for (mon_entry *e = head; e; e = e->next) {
        inf__serve_buf_puts(o, "infera_monitor_records_total{");
        entry_labels(o, e);
        inf__serve_buf_printf(o, "} %llu\n", (unsigned long long)atomic_load(&e->records));
    }
    inf__serve_buf_puts(o, "# HELP infera_monitor_sampled_total Records sampled into the prediction log.\n"
                           "# TYPE infera_monitor_sampled_total counter\n");
    for (mon_entry *e = head; e; e = e->next) {
        inf__serve_buf_puts(o, "infera_monitor_sampled_total{");
        entry_labels(o, e);
        inf__serve_buf_printf(o, "} %llu\n", (unsigned long long)atomic_load(&e->sampled));
    }
    inf__serve_buf_puts(o, "# HELP infera_monitor_window_rows Rows in the current drift window.\n"
                           "# TYPE infera_monitor_window_rows gauge\n");
    for (mon_entry *e = head; e; e = e->next) {
        if (!e->online) continue;
        uint64_t w, total;
        inf__mon_online_counts(e->online, &w, &total);
        inf__serve_buf_puts(o, "infera_monitor_window_rows{");
        entry_labels(o, e);
        inf__serve_buf_printf(o, "} %llu\n", (unsigned long long)w);
    }
    inf__serve_buf_puts(o, "# HELP infera_feature_drift Drift of a feature or output against the baseline (current window, else the last complete one).\n"
                           "# TYPE infera_feature_drift gauge\n");
    for (mon_entry *e = head; e; e = e->next) {
        cJSON *d = e->online ? inf__mon_online_drift(e->online, t, 1) : NULL;
        if (d) drift_gauges(o, e, d);
        cJSON_Delete(d);
    }
    if (m->rules.labels.has) {
        inf__serve_buf_puts(o, "# HELP infera_model_quality Quality of the newest window with labelled predictions "
                               "(labels joined by id, docs/monitoring.md).\n"
                               "# TYPE infera_model_quality gauge\n");
        pthread_mutex_lock(&m->mu);
        for (mon_entry *e = head; e; e = e->next) {
            const cJSON *v;
            cJSON_ArrayForEach(v, cJSON_GetObjectItemCaseSensitive(e->quality, "metrics")) {
                if (!cJSON_IsNumber(v)) continue;
                inf__serve_buf_puts(o, "infera_model_quality{");
                entry_labels(o, e);
                label(o, "metric", v->string, 0);
                inf__serve_buf_printf(o, "} %.17g\n", v->valuedouble);
            }
        }
        inf__serve_buf_puts(o, "# HELP infera_model_quality_rows Labelled predictions in that window.\n"
                               "# TYPE infera_model_quality_rows gauge\n");
        for (mon_entry *e = head; e; e = e->next) {
            const cJSON *rows = cJSON_GetObjectItemCaseSensitive(e->quality, "rows");
            if (!cJSON_IsNumber(rows)) continue;
            inf__serve_buf_puts(o, "infera_model_quality_rows{");
            entry_labels(o, e);
            inf__serve_buf_printf(o, "} %.0f\n", rows->valuedouble);
        }
        pthread_mutex_unlock(&m->mu);
    }
    if (m->log) {
        inf__mon_log_stats s;
        inf__mon_log_stats_get(m->log, &s);
        inf__serve_buf_printf(o, "# HELP infera_prediction_log_rows_total Prediction log rows by state.\n"
                                 "# TYPE infera_prediction_log_rows_total counter\n"
                                 "infera_prediction_log_rows_total{state=\"seen\"} %llu\n"
                                 "infera_prediction_log_rows_total{state=\"sampled\"} %llu\n"
                                 "infera_prediction_log_rows_total{state=\"written\"} %llu\n"
                                 "infera_prediction_log_rows_total{state=\"dropped\"} %llu\n",
                              (unsigned long long)s.n_seen, (unsigned long long)s.n_sampled,
                              (unsigned long long)s.n_written, (unsigned long long)s.n_dropped);
    }
    if (m->rules.n) {
        inf__serve_buf_puts(o, "# HELP infera_alert_firing 1 while an alert rule fires for a model version.\n"
                               "# TYPE infera_alert_firing gauge\n");
        pthread_mutex_lock(&m->mu);
        for (mon_entry *e = head; e; e = e->next)
            for (int i = 0; i < m->rules.n; i++) {
                inf__serve_buf_puts(o, "infera_alert_firing{");
                label(o, "rule", m->rules.rules[i].name, 1);
                label(o, "model", e->name, 0);
                label(o, "version", e->version, 0);
                inf__serve_buf_printf(o, "} %d\n", e->rules[i].s.firing);
            }
        pthread_mutex_unlock(&m->mu);
        inf__serve_buf_printf(o, "# TYPE infera_monitor_alerts_total counter\ninfera_monitor_alerts_total %llu\n"
                                 "# TYPE infera_monitor_webhooks_total counter\n"
                                 "infera_monitor_webhooks_total{outcome=\"ok\"} %llu\n"
                                 "infera_monitor_webhooks_total{outcome=\"failed\"} %llu\n"
                                 "# TYPE infera_monitor_rollbacks_total counter\ninfera_monitor_rollbacks_total %llu\n",
                              (unsigned long long)atomic_load(&m->alerts_fired), (unsigned long long)atomic_load(&m->webhooks_ok),
                              (unsigned long long)atomic_load(&m->webhooks_failed), (unsigned long long)atomic_load(&m->rollbacks));
    }
}

void inf__serve_monitor_state_json(srv_server *srv, srv_buf *o) {
    srv_monitor *m = srv->monitor;
    inf__serve_buf_puts(o, "[");
    if (!m) {
        inf__serve_buf_puts(o, "]");
        return;
    }
    pthread_mutex_lock(&m->mu);
    mon_entry *head = m->entries;
    pthread_mutex_unlock(&m->mu);
    int64_t t = now_us();
    for (mon_entry *e = head; e; e = e->next) {
        if (e != head) inf__serve_buf_put(o, ",", 1);
        inf__serve_buf_puts(o, "{\"model\":");
        inf__serve_buf_json_str(o, e->name, strlen(e->name));
        inf__serve_buf_puts(o, ",\"version\":");
        inf__serve_buf_json_str(o, e->version, strlen(e->version));
        inf__serve_buf_printf(o, ",\"records\":%llu,\"sampled\":%llu,\"drift\":", (unsigned long long)atomic_load(&e->records),
                              (unsigned long long)atomic_load(&e->sampled));
        cJSON *d = e->online ? inf__mon_online_drift(e->online, t, 1) : NULL;
        char *text = d ? cJSON_PrintUnformatted(d) : NULL;
        inf__serve_buf_puts(o, text ? text : "null");
        free(text);
        cJSON_Delete(d);
        inf__serve_buf_puts(o, ",\"alerts\":[");
        pthread_mutex_lock(&m->mu);
        for (int i = 0; i < m->rules.n; i++) {
            if (i) inf__serve_buf_put(o, ",", 1);
            inf__serve_buf_puts(o, "{\"rule\":");
            inf__serve_buf_json_str(o, m->rules.rules[i].name, strlen(m->rules.rules[i].name));
            const inf__mon_rule_state *rs = &e->rules[i].s;
            inf__serve_buf_printf(o, ",\"firing\":%s,\"value\":", rs->firing ? "true" : "false");
            if (isfinite(rs->value) && rs->column[0])
                inf__serve_buf_f64(o, rs->value);
            else inf__serve_buf_puts(o, "null");
            inf__serve_buf_printf(o, ",\"threshold\":%.6g}", m->rules.rules[i].threshold);
        }
        pthread_mutex_unlock(&m->mu);
        inf__serve_buf_puts(o, "]}");
    }
    inf__serve_buf_puts(o, "]");
}
