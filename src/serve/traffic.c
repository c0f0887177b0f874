/*
 * traffic.c -- traffic splitting between model versions in `infera serve`:
 * canary routes and shadow copies.
 *
 *   --route fraud=fraud@production:95,fraud@canary:5
 *       requests for the served name "fraud" go to the slot of one of the
 *       targets, chosen by weight: at random, or sticky per caller
 *       (--route-sticky principal) or per a request header (--route-sticky
 *       header:X-User) so one user always sees one version.
 *   --shadow fraud=fraud@candidate:0.2
 *       after a request to "fraud" is answered, a copy of 20 % of them runs on
 *       fraud@candidate in the background; its outputs are compared with the
 *       primary's (agreement of the per-row argmax / value, mean absolute
 *       difference of the first floating output) and counted on /metrics.
 *       The copy never delays nor fails the primary answer: it is submitted
 *       after the answer is encoded, dropped when its queue is full, and its
 *       failures are only counted.
 *
 * Every target and shadow reference is a slot of its own (served also under
 * its reference, e.g. "fraud@canary", with its own per-version metrics);
 * alias moves in the registry move them as for any slot.  A route's weights
 * change at run time through the repository API (POST /v2/repository/
 * models/fraud/load with {"parameters": {"route": "fraud@production:50,
 * fraud@canary:50"}}), audited like other loads.
 *
 * Design: one table (routes and shadows, bounded) under one mutex; a pick
 * copies the chosen slot name out.  Random choices use a per-thread
 * xorshift generator (thread-local state, no shared mutable RNG).
 */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "serve/serve.h"

#define MAX_ROUTES 16
#define MAX_TARGETS 8

typedef struct route_target {
    char slot[129];
    double weight;
    _Atomic uint64_t requests;
} route_target;

typedef struct route {
    char name[129];
    route_target targets[MAX_TARGETS];
    int n_targets;
} route;

typedef struct shadow {
    char name[129];
    char slot[129];
    double fraction;
    _Atomic uint64_t sent, compared, failed, dropped, rows, rows_agree;
    _Atomic uint64_t abs_diff_nano; /* sum of |primary - shadow| over compared values, x 1e9 */
    _Atomic uint64_t values;        /* values in that sum */
} shadow;

struct srv_traffic {
    pthread_mutex_t lock;
    route routes[MAX_ROUTES];
    int n_routes;
    shadow shadows[MAX_ROUTES];
    int n_shadows;
    int sticky;              /* 0 random, 1 principal, 2 header */
    char sticky_header[64];
};

srv_traffic *inf__serve_traffic_new(void) {
    srv_traffic *t = calloc(1, sizeof *t);
    if (t) pthread_mutex_init(&t->lock, NULL);
    return t;
}

void inf__serve_traffic_free(srv_traffic *t) {
    if (!t) return;
    pthread_mutex_destroy(&t->lock);
    free(t);
}

/* ---- parsing ------------------------------------------------------------- */

/* "NAME=REST" -> name; *rest points after '='. */
static int split_name(const char *spec, const char *what, char name[129], const char **rest, inf_error *err) {
    const char *eq = strchr(spec, '=');
    if (!eq || eq == spec || (size_t)(eq - spec) > 128 || !eq[1]) {
        inf_error_set(err, INF_EINVAL, "%s '%s': expected NAME=%s", what, spec,
                      !strcmp(what, "--route") ? "REF:WEIGHT[,REF:WEIGHT]..." : "REF:FRACTION");
        return -1;
    }
    snprintf(name, 129, "%.*s", (int)(eq - spec), spec);
    *rest = eq + 1;
    return 0;
}

/* "REF:NUMBER" -> ref, number (the last ':' separates them). */
static int ref_and_number(const char *item, size_t n, char ref[129], double *num) {
    const char *colon = NULL;
    for (size_t i = 0; i < n; i++)
        if (item[i] == ':') colon = item + i;
    if (!colon || colon == item || (size_t)(colon - item) > 128) return -1;
    char buf[64];
    size_t k = n - (size_t)(colon + 1 - item);
    if (k == 0 || k >= sizeof buf) return -1;
    memcpy(buf, colon + 1, k);
    buf[k] = 0;
    char *end;
    *num = strtod(buf, &end);
    if (*end || !isfinite(*num) || *num < 0) return -1;
    snprintf(ref, 129, "%.*s", (int)(colon - item), item);
    return 0;
}

int inf__serve_traffic_parse_route(const char *spec, char name[129], char refs[][129], double *weights, int *n,
                                   inf_error *err) {
    const char *rest;
    if (split_name(spec, "--route", name, &rest, err)) return -1;
    *n = 0;
    double total = 0;
    while (*rest) {
        const char *comma = strchr(rest, ',');
        size_t len = comma ? (size_t)(comma - rest) : strlen(rest);
        if (*n >= MAX_TARGETS || ref_and_number(rest, len, refs[*n], &weights[*n])) {
            inf_error_set(err, INF_EINVAL, "--route '%s': each target is REF:WEIGHT (a number >= 0), at most %d",
                          spec, MAX_TARGETS);
            return -1;
        }
        total += weights[(*n)++];
        rest = comma ? comma + 1 : rest + len;
    }
    if (*n == 0 || !(total > 0)) {
        inf_error_set(err, INF_EINVAL, "--route '%s': needs at least one target with a weight > 0", spec);
        return -1;
    }
    return 0;
}

int inf__serve_traffic_parse_shadow(const char *spec, char name[129], char ref[129], double *fraction,
                                    inf_error *err) {
    const char *rest;
    if (split_name(spec, "--shadow", name, &rest, err)) return -1;
    if (ref_and_number(rest, strlen(rest), ref, fraction) || *fraction > 1) {
        inf_error_set(err, INF_EINVAL, "--shadow '%s': expected NAME=REF:FRACTION with 0 <= FRACTION <= 1", spec);
        return -1;
    }
    return 0;
}

int inf__serve_traffic_set_sticky(srv_traffic *t, const char *how, inf_error *err) {
    if (!how || !*how || !strcmp(how, "none")) t->sticky = 0;
    else if (!strcmp(how, "principal")) t->sticky = 1;
    else if (!strncmp(how, "header:", 7) && how[7] && strlen(how + 7) < sizeof t->sticky_header) {
        t->sticky = 2;
        snprintf(t->sticky_header, sizeof t->sticky_header, "%s", how + 7);
    } else {
        inf_error_set(err, INF_EINVAL, "--route-sticky '%s': expected none, principal or header:NAME", how);
        return -1;
    }
    return 0;
}

/* ---- routes -------------------------------------------------------------- */

static route *find_route(srv_traffic *t, const char *name) {
    for (int i = 0; i < t->n_routes; i++)
        if (!strcmp(t->routes[i].name, name)) return &t->routes[i];
    return NULL;
}

inf_status inf__serve_traffic_load_targets(srv_models *ms, char refs[][129], int n, int *failed, inf_error *err) {
    for (int i = 0; i < n; i++) {
        if (inf__serve_models_has(ms, refs[i])) continue;
        inf_status st = inf__serve_models_add_ref(ms, refs[i], err);
        if (st != INF_OK) {
            *failed = i;
            return st;
        }
    }
    return INF_OK;
}

inf_status inf__serve_traffic_set_route(srv_traffic *t, const char *name, char refs[][129], const double *weights,
                                        int n, inf_error *err) {
    pthread_mutex_lock(&t->lock);
    route *r = find_route(t, name);
    if (!r) {
        if (t->n_routes >= MAX_ROUTES) {
            pthread_mutex_unlock(&t->lock);
            return inf_error_set(err, INF_EBUSY, "route '%s': more than %d routes", name, MAX_ROUTES);
        }
        r = &t->routes[t->n_routes++];
        memset(r, 0, sizeof *r);
        snprintf(r->name, sizeof r->name, "%s", name);
    }
    route_target old[MAX_TARGETS];
    int n_old = r->n_targets;
    memcpy(old, r->targets, sizeof old);
    memset(r->targets, 0, sizeof r->targets);
    r->n_targets = n;
    for (int i = 0; i < n; i++) {
        snprintf(r->targets[i].slot, sizeof r->targets[i].slot, "%s", refs[i]);
        r->targets[i].weight = weights[i];
        for (int k = 0; k < n_old; k++) /* a target kept keeps its count */
            if (!strcmp(old[k].slot, refs[i])) atomic_store(&r->targets[i].requests, atomic_load(&old[k].requests));
    }
    pthread_mutex_unlock(&t->lock);
    return INF_OK;
}

int inf__serve_traffic_is_route(srv_traffic *t, const char *name) {
    if (!t) return 0;
    pthread_mutex_lock(&t->lock);
    int is = find_route(t, name) != NULL;
    pthread_mutex_unlock(&t->lock);
    return is;
}

static uint64_t mix(uint64_t h) {
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdull;
    h ^= h >> 33;
    h *= 0xc4ceb9fe1a85ec53ull;
    return h ^ (h >> 33);
}

/* A uniform double in [0, 1) from a per-thread xorshift64* generator. */
static double uniform01(void) {
    static _Thread_local uint64_t state;
    if (!state) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        state = mix((uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 20) ^ (uint64_t)(uintptr_t)&state) | 1;
    }
    state ^= state >> 12;
    state ^= state << 25;
    state ^= state >> 27;
    return (double)((state * 0x2545F4914F6CDD1Dull) >> 11) / 9007199254740992.0;
}

static double key_unit(const char *key) {
    uint64_t h = 1469598103934665603ull;
    for (; *key; key++) h = (h ^ (unsigned char)*key) * 1099511628211ull;
    return (double)(mix(h) >> 11) / 9007199254740992.0;
}

const char *inf__serve_traffic_sticky_header(srv_traffic *t) { return t && t->sticky == 2 ? t->sticky_header : NULL; }
int inf__serve_traffic_sticky_principal(srv_traffic *t) { return t && t->sticky == 1; }

int inf__serve_traffic_pick(srv_traffic *t, const char *name, const char *key, char *slot, size_t size) {
    if (!t) return 0;
    pthread_mutex_lock(&t->lock);
    route *r = find_route(t, name);
    if (!r) {
        pthread_mutex_unlock(&t->lock);
        return 0;
    }
    double total = 0;
    for (int i = 0; i < r->n_targets; i++) total += r->targets[i].weight;
    double u = (key && *key ? key_unit(key) : uniform01()) * total;
    int pick = r->n_targets - 1;
    for (int i = 0; i < r->n_targets; i++) {
        if (r->targets[i].weight > 0 && u < r->targets[i].weight) {
            pick = i;
            break;
        }
        u -= r->targets[i].weight;
    }
    while (pick > 0 && r->targets[pick].weight <= 0) pick--;
    atomic_fetch_add_explicit(&r->targets[pick].requests, 1, memory_order_relaxed);
    snprintf(slot, size, "%s", r->targets[pick].slot);
    pthread_mutex_unlock(&t->lock);
    return 1;
}

/* ---- shadows ------------------------------------------------------------- */

inf_status inf__serve_traffic_add_shadow(srv_traffic *t, const char *name, const char *ref, double fraction,
                                         inf_error *err) {
    pthread_mutex_lock(&t->lock);
    if (t->n_shadows >= MAX_ROUTES) {
        pthread_mutex_unlock(&t->lock);
        return inf_error_set(err, INF_EBUSY, "--shadow %s: more than %d shadows", name, MAX_ROUTES);
    }
    shadow *s = &t->shadows[t->n_shadows++];
    snprintf(s->name, sizeof s->name, "%s", name);
    snprintf(s->slot, sizeof s->slot, "%s", ref);
    s->fraction = fraction;
    pthread_mutex_unlock(&t->lock);
    return INF_OK;
}

/* A shadow run in flight: copies of the inputs and of the primary's
 * outputs; the shadow version is held until the run is done. */
typedef struct shadow_run {
    srv_job job;
    shadow *sh;
    srv_version *v;
    int n_in, n_out, n_primary; /* the shadow model's inputs and outputs; the primary's outputs */
    inf_tensor **inputs;
    const inf_tensor **input_ptrs;
    inf_tensor **outputs;
    inf_tensor **primary;
} shadow_run;

static void run_free(shadow_run *r) {
    for (int i = 0; i < r->n_in; i++) inf_tensor_free(r->inputs[i]);
    for (int i = 0; i < r->n_out; i++)
        if (!r->job.outputs_borrowed) inf_tensor_free(r->outputs[i]);
    for (int i = 0; i < r->n_primary; i++) inf_tensor_free(r->primary[i]);
    free(r->inputs);
    free(r->input_ptrs);
    free(r->outputs);
    free(r->primary);
    if (r->v) inf__serve_version_release(r->v);
    free(r);
}

static double value_at(const inf_tensor *t, int64_t i) {
    switch (t->dtype) {
    case INF_DTYPE_F32: return ((const float *)t->data)[i];
    case INF_DTYPE_F64: return ((const double *)t->data)[i];
    case INF_DTYPE_I64: return (double)((const int64_t *)t->data)[i];
    case INF_DTYPE_I32: return ((const int32_t *)t->data)[i];
    default: return NAN;
    }
}

static int comparable(const inf_tensor *a, const inf_tensor *b) {
    if (!a || !b || a->kind != INF_KIND_TENSOR || b->kind != INF_KIND_TENSOR || a->dtype != b->dtype) return 0;
    if (a->ndim != b->ndim) return 0;
    for (int d = 0; d < a->ndim; d++)
        if (a->dims[d] != b->dims[d]) return 0;
    return a->dtype == INF_DTYPE_F32 || a->dtype == INF_DTYPE_F64 || a->dtype == INF_DTYPE_I64 ||
           a->dtype == INF_DTYPE_I32;
}

/* Row agreement (on the first output both models have alike): the same
 * argmax over a row of several values, or the same value (within 1e-6
 * relative) for one value per row. */
static void agree_rows(shadow *sh, const inf_tensor *p, const inf_tensor *s) {
    int64_t n = inf_tensor_numel(p);
    int64_t rows = p->ndim >= 1 && p->dims[0] > 0 ? p->dims[0] : 1;
    int64_t per = rows > 0 ? n / rows : n;
    uint64_t agree = 0;
    for (int64_t r = 0; r < rows && per > 0; r++) {
        if (per == 1) {
            double a = value_at(p, r), b = value_at(s, r);
            agree += fabs(a - b) <= 1e-6 * fmax(1.0, fabs(a));
        } else {
            int64_t ia = 0, ib = 0;
            for (int64_t k = 1; k < per; k++) {
                if (value_at(p, r * per + k) > value_at(p, r * per + ia)) ia = k;
                if (value_at(s, r * per + k) > value_at(s, r * per + ib)) ib = k;
            }
            agree += ia == ib;
        }
    }
    atomic_fetch_add(&sh->rows, (uint64_t)rows);
    atomic_fetch_add(&sh->rows_agree, agree);
}

/* Mean absolute difference of scores: over the first floating output both have alike. */
static void abs_diff(shadow *sh, const inf_tensor *p, const inf_tensor *s) {
    int64_t n = inf_tensor_numel(p);
    double sum = 0;
    for (int64_t i = 0; i < n; i++) sum += fabs(value_at(p, i) - value_at(s, i));
    atomic_fetch_add(&sh->abs_diff_nano, (uint64_t)llround(sum * 1e9));
    atomic_fetch_add(&sh->values, (uint64_t)n);
}

static void shadow_done(srv_job *job, void *user) {
    (void)job;
    shadow_run *r = user;
    if (r->job.err.status != INF_OK) {
        atomic_fetch_add(&r->sh->failed, 1);
    } else {
        int agreed = 0, diffed = 0;
        for (int o = 0; o < r->n_out && o < r->n_primary; o++) {
            if (!comparable(r->primary[o], r->outputs[o])) continue;
            int fp = r->primary[o]->dtype == INF_DTYPE_F32 || r->primary[o]->dtype == INF_DTYPE_F64;
            if (!agreed) agree_rows(r->sh, r->primary[o], r->outputs[o]), agreed = 1;
            if (fp && !diffed) abs_diff(r->sh, r->primary[o], r->outputs[o]), diffed = 1;
        }
        atomic_fetch_add(&r->sh->compared, 1);
    }
    run_free(r);
}

static shadow *find_shadow(srv_traffic *t, const char *name) {
    for (int i = 0; i < t->n_shadows; i++)
        if (!strcmp(t->shadows[i].name, name)) return &t->shadows[i];
    return NULL;
}

void inf__serve_traffic_shadow(srv_server *srv, const char *name, const inf_model *primary_model,
                               const inf_tensor *const *inputs, inf_tensor *const *primary, int64_t rows) {
    srv_traffic *t = srv->traffic;
    if (!t || t->n_shadows == 0) return;
    pthread_mutex_lock(&t->lock);
    shadow *sh = find_shadow(t, name);
    pthread_mutex_unlock(&t->lock);
    if (!sh || uniform01() >= sh->fraction) return;
    atomic_fetch_add(&sh->sent, 1);
    srv_version *v = NULL;
    if (inf__serve_models_acquire(srv->models, sh->slot, NULL, &v, NULL) != INF_OK) {
        atomic_fetch_add(&sh->failed, 1);
        return;
    }
    shadow_run *r = calloc(1, sizeof *r);
    int n_in = inf_model_n_inputs(v->model), n_out = inf_model_n_outputs(v->model);
    int n_primary = inf_model_n_outputs(primary_model);
    int ok = r && n_in == inf_model_n_inputs(primary_model); /* inputs go across by position */
    if (r) {
        r->sh = sh, r->v = v, r->n_in = n_in, r->n_out = n_out, r->n_primary = n_primary;
        r->inputs = calloc((size_t)n_in + 1, sizeof *r->inputs);
        r->input_ptrs = calloc((size_t)n_in + 1, sizeof *r->input_ptrs);
        r->outputs = calloc((size_t)n_out + 1, sizeof *r->outputs);
        r->primary = calloc((size_t)n_primary + 1, sizeof *r->primary);
        ok = ok && r->inputs && r->input_ptrs && r->outputs && r->primary;
    }
    for (int i = 0; ok && i < n_in; i++) {
        ok = inputs[i] && inf_tensor_clone(inputs[i], &r->inputs[i]) == INF_OK;
        if (ok) r->input_ptrs[i] = r->inputs[i];
    }
    for (int o = 0; ok && o < n_primary; o++)
        if (primary[o]) ok = inf_tensor_clone(primary[o], &r->primary[o]) == INF_OK;
    if (!ok) { /* out of memory, or a model with other inputs: counted, the primary is untouched */
        atomic_fetch_add(&sh->failed, 1);
        if (r) run_free(r);
        else inf__serve_version_release(v);
        return;
    }
    r->job.inputs = r->input_ptrs;
    r->job.outputs = r->outputs;
    r->job.rows = rows;
    r->job.done = shadow_done;
    r->job.done_user = r;
    if (inf__serve_batcher_submit(v->batcher, &r->job) != INF_OK) {
        atomic_fetch_add(&sh->dropped, 1);
        run_free(r);
    }
}

/* ---- metrics ------------------------------------------------------------- */

void inf__serve_traffic_metrics(srv_traffic *t, srv_buf *o) {
    if (!t) return;
    pthread_mutex_lock(&t->lock);
    if (t->n_routes) {
        inf__serve_buf_puts(o, "# HELP infera_route_requests_total Requests a route sent to each target.\n"
                               "# TYPE infera_route_requests_total counter\n");
        for (int i = 0; i < t->n_routes; i++)
            for (int k = 0; k < t->routes[i].n_targets; k++)
                inf__serve_buf_printf(o, "infera_route_requests_total{route=\"%s\",target=\"%s\"} %llu\n",
                                      t->routes[i].name, t->routes[i].targets[k].slot,
                                      (unsigned long long)atomic_load(&t->routes[i].targets[k].requests));
        inf__serve_buf_puts(o, "# HELP infera_route_weight A route's current weight of each target.\n"
                               "# TYPE infera_route_weight gauge\n");
        for (int i = 0; i < t->n_routes; i++)
            for (int k = 0; k < t->routes[i].n_targets; k++)
                inf__serve_buf_printf(o, "infera_route_weight{route=\"%s\",target=\"%s\"} %g\n", t->routes[i].name,
                                      t->routes[i].targets[k].slot, t->routes[i].targets[k].weight);
    }
    if (t->n_shadows) {
        inf__serve_buf_puts(o, "# HELP infera_shadow_requests_total Shadow copies by outcome (sent = chosen; "
                               "compared, failed, dropped = queue full).\n# TYPE infera_shadow_requests_total counter\n");
        for (int i = 0; i < t->n_shadows; i++) {
            shadow *s = &t->shadows[i];
            const char *names[4] = {"sent", "compared", "failed", "dropped"};
            uint64_t vals[4] = {atomic_load(&s->sent), atomic_load(&s->compared), atomic_load(&s->failed),
                                atomic_load(&s->dropped)};
            for (int k = 0; k < 4; k++)
                inf__serve_buf_printf(o, "infera_shadow_requests_total{model=\"%s\",shadow=\"%s\",outcome=\"%s\"} %llu\n",
                                      s->name, s->slot, names[k], (unsigned long long)vals[k]);
        }
        inf__serve_buf_puts(o, "# HELP infera_shadow_agreement_ratio Rows where the shadow agreed with the primary "
                               "(same argmax, or the same value).\n# TYPE infera_shadow_agreement_ratio gauge\n");
        for (int i = 0; i < t->n_shadows; i++) {
            shadow *s = &t->shadows[i];
            uint64_t rows = atomic_load(&s->rows);
            inf__serve_buf_printf(o, "infera_shadow_agreement_ratio{model=\"%s\",shadow=\"%s\"} %.6g\n", s->name,
                                  s->slot, rows ? (double)atomic_load(&s->rows_agree) / (double)rows : NAN);
        }
        inf__serve_buf_puts(o, "# HELP infera_shadow_mean_abs_diff Mean absolute difference of the first floating "
                               "output, shadow vs primary.\n# TYPE infera_shadow_mean_abs_diff gauge\n");
        for (int i = 0; i < t->n_shadows; i++) {
            shadow *s = &t->shadows[i];
            uint64_t n = atomic_load(&s->values);
            inf__serve_buf_printf(o, "infera_shadow_mean_abs_diff{model=\"%s\",shadow=\"%s\"} %.6g\n", s->name, s->slot,
                                  n ? (double)atomic_load(&s->abs_diff_nano) / 1e9 / (double)n : NAN);
        }
    }
    pthread_mutex_unlock(&t->lock);
}

/* Every target and shadow slot named by the routes and shadows, for start-up. */
int inf__serve_traffic_slots(srv_traffic *t, char out[][129], int max) {
    int n = 0;
    pthread_mutex_lock(&t->lock);
    for (int i = 0; i < t->n_routes; i++)
        for (int k = 0; k < t->routes[i].n_targets && n < max; k++) snprintf(out[n++], 129, "%s", t->routes[i].targets[k].slot);
    for (int i = 0; i < t->n_shadows && n < max; i++) snprintf(out[n++], 129, "%s", t->shadows[i].slot);
    pthread_mutex_unlock(&t->lock);
    return n;
}
