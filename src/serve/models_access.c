/*
 * models_access.c -- who may call a served model, what they called, and
 * following registry aliases.
 *
 * REGISTRY.  When a model comes from the registry (or --home/--registry is
 * given) the loader keeps one registry handle (the server's own token from
 * INFERA_TOKEN).  A poller thread re-resolves alias references every
 * poll_secs (or at once when a PostgreSQL registry NOTIFYs an alias write,
 * notify.c) and reloads on a move; with --all-aliases it also serves every
 * NAME@ALIAS of the registry under that name, adding new aliases and
 * dropping removed ones.  It writes one "predict" audit record per (version,
 * calling principal) and poll period with the rows served (counts only,
 * never inputs), through a registry handle acting as that caller.
 * Auth: when the registry has auth on, each request's bearer token is
 * checked for the predictor role on the model through a registry handle
 * opened with that token; decisions are cached for auth_cache_secs by the
 * token's SHA-256 (the token itself is never stored or logged).
 */
#include <cjson/cJSON.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "infera/bundle.h"
#include "infera/llm.h"
#include "infera/pipeline.h"
#include "infera/registry.h"
#include "runtime/model.h"
#include "serve/models_internal.h"
#include "serve/serve.h"

/* ---- auth ----------------------------------------------------------------- */

int inf__serve_models_auth_enabled(srv_models *ms) { return ms->auth_on; }

/* The index of principal in callers[] (added with a copy of its token when
 * new), -1 when the table is full or out of memory (audit_lock held). */
static int caller_index(srv_models *ms, const char *principal, const char *token) {
    for (int i = 0; i < ms->n_callers; i++)
        if (!strcmp(ms->callers[i].principal, principal)) {
            if (strcmp(ms->callers[i].token, token)) { /* a newer token of the same principal */
                char *t = strdup(token);
                if (t) {
                    explicit_bzero(ms->callers[i].token, strlen(ms->callers[i].token));
                    free(ms->callers[i].token);
                    ms->callers[i].token = t;
                }
            }
            return i;
        }
    if (ms->n_callers >= MAX_CALLERS) return -1;
    caller *c = &ms->callers[ms->n_callers];
    c->token = strdup(token);
    if (!c->token) return -1;
    snprintf(c->principal, sizeof c->principal, "%s", principal);
    return ms->n_callers++;
}

inf_status inf__serve_models_authorize(srv_models *ms, const char *bearer, const char *model, int admin, int *who,
                                       inf_error *err) {
    if (who) *who = -1;
    if (!ms->auth_on) return INF_OK;
    if (!bearer || !*bearer) {
        inf__serve_models_set_err(err, INF_EAUTH, "authentication required: send 'Authorization: Bearer <token>'%s%s",
                                  "", "");
        return INF_EAUTH;
    }
    char key[sizeof((auth_entry *)0)->key];
    char hex[65];
    inf_sha256_hex(bearer, strlen(bearer), hex);
    snprintf(key, sizeof key, "%s|%s|%d", hex, model ? model : "", admin);
    uint64_t now = inf__serve_now_ns();
    pthread_mutex_lock(&ms->auth_lock);
    for (int i = 0; i < AUTH_CACHE; i++) {
        auth_entry *a = &ms->auth[i];
        if (a->expires_ns > now && !strcmp(a->key, key)) {
            inf_status st = a->status;
            if (st != INF_OK) inf__serve_models_set_err(err, st, "%s%s", a->message, "");
            if (who) *who = a->caller;
            pthread_mutex_unlock(&ms->auth_lock);
            return st;
        }
    }
    inf_registry *r = NULL;
    inf_error e = {0};
    int idx = -1;
    inf_status st = inf__serve_models_open_registry(ms, bearer, &r, &e);
    if (st == INF_OK) {
        st = inf_registry_check(r, model,
                                admin >= 2 ? INF_REGISTRY_ADMIN
                                : admin    ? INF_REGISTRY_PUBLISH
                                           : INF_REGISTRY_PREDICT,
                                "serve", &e);
        const char *principal = inf_registry_principal(r);
        if (st == INF_OK && principal) {
            pthread_mutex_lock(&ms->audit_lock);
            idx = caller_index(ms, principal, bearer);
            pthread_mutex_unlock(&ms->audit_lock);
        }
        inf_registry_free(r);
    } else {
        st = INF_EIO;
    }
    if (who) *who = idx;
    auth_entry *a = &ms->auth[ms->auth_next++ % AUTH_CACHE];
    snprintf(a->key, sizeof a->key, "%s", key);
    a->caller = idx;
    a->status = st;
    snprintf(a->message, sizeof a->message, "%s", e.message);
    /* failures of the store itself are not cached */
    a->expires_ns =
        st == INF_EIO
            ? 0
            : now + (uint64_t)(ms->srv->opt.auth_cache_secs > 0 ? ms->srv->opt.auth_cache_secs : 0) * 1000000000ull;
    pthread_mutex_unlock(&ms->auth_lock);
    if (st != INF_OK) inf__serve_models_set_err(err, st, "%s%s", e.message, "");
    return st;
}

void inf__serve_models_audit(srv_models *ms, int who, const char *action, const char *served, const char *detail,
                             const char *outcome, const char *message) {
    pthread_mutex_lock(&ms->load_lock);
    inf__serve_models_audit_repository(ms, who, action, served, detail, outcome, message);
    pthread_mutex_unlock(&ms->load_lock);
}

int inf__serve_models_has(srv_models *ms, const char *name) {
    pthread_mutex_lock(&ms->lock);
    int has = inf__serve_models_find_slot(ms, name) != NULL;
    pthread_mutex_unlock(&ms->lock);
    return has;
}

void inf__serve_models_caller_name(srv_models *ms, int who, char *out, size_t size) {
    pthread_mutex_lock(&ms->audit_lock);
    snprintf(out, size, "%s", who >= 0 && who < ms->n_callers ? ms->callers[who].principal : "anonymous");
    pthread_mutex_unlock(&ms->audit_lock);
}

/* ---- audit and alias polling ---------------------------------------------- */

void inf__serve_models_note_prediction(srv_models *ms, srv_version *v, int who, int64_t rows) {
    inf__serve_models_note_rows(ms, v->metrics, who, rows);
}

void inf__serve_models_note_rows(srv_models *ms, srv_model_metrics *metrics, int who, int64_t rows) {
    if (!metrics || !metrics->registry_version) return;
    if (who >= 0) {
        pthread_mutex_lock(&ms->audit_lock);
        int i = 0;
        while (i < ms->n_audit && (ms->audit[i].m != metrics || ms->audit[i].caller != who))
            i++;
        if (i == ms->n_audit && ms->n_audit < MAX_AUDIT_ROWS) ms->audit[ms->n_audit++] = (audit_rows){metrics, who, 0};
        if (i < ms->n_audit) {
            ms->audit[i].rows += rows;
            pthread_mutex_unlock(&ms->audit_lock);
            return;
        }
        pthread_mutex_unlock(&ms->audit_lock); /* table full: counted as the server's own below */
    }
    atomic_fetch_add_explicit(&metrics->audit_rows, rows, memory_order_relaxed);
}

static void audit_flush_callers(srv_models *ms);

/* The audit record of rows predicted by this server for name@version. */
static inf_registry_prediction serve_prediction(const srv_models *ms, const char *name, int64_t version, int64_t rows) {
    inf_registry_prediction p = {0};
    p.name = name;
    p.version = version;
    p.mode = "serve";
    p.source = ms->srv->listen_url;
    p.n_rows = rows;
    return p;
}
/* One "predict" record per (model, version) with the rows served since the
 * last one; counts live in the metrics entries, which outlive versions, so
 * requests finishing on a swapped-out version are audited too (load_lock held). */
static void audit_flush(srv_models *ms) {
    if (!ms->reg) return;
    audit_flush_callers(ms);
    srv_metrics *m = &ms->srv->metrics;
    for (;;) {
        char name[129];
        int64_t version = 0, rows = 0;
        pthread_mutex_lock(&m->lock);
        for (srv_model_metrics *e = m->head; e; e = e->next) {
            if (e->registry_version > 0 && atomic_load(&e->audit_rows) > 0) {
                rows = atomic_exchange(&e->audit_rows, 0);
                version = e->registry_version;
                snprintf(name, sizeof name, "%s", e->registry_name);
                break;
            }
        }
        pthread_mutex_unlock(&m->lock);
        if (rows <= 0) return;
        inf_registry_prediction p = serve_prediction(ms, name, version, rows);
        inf_error e = {0};
        if (inf_registry_audit_prediction(ms->reg, &p, &e) != INF_OK) {
            fprintf(stderr, "infera serve: audit of %s version %lld failed: %s\n", name, (long long)version, e.message);
            return;
        }
    }
}

/* One "predict" record per (model, version, calling principal), written by a
 * registry handle acting as that principal, so the audit log says who asked
 * for the predictions.  When that fails (token revoked since), the rows are
 * recorded by the server's own handle with the caller named in "job". */
static void audit_flush_callers(srv_models *ms) {
    for (;;) {
        char name[129], principal[129];
        char *token = NULL;
        int64_t version = 0, rows = 0;
        pthread_mutex_lock(&ms->audit_lock);
        for (int i = 0; i < ms->n_audit; i++) {
            audit_rows *a = &ms->audit[i];
            if (a->rows <= 0) continue;
            rows = a->rows;
            a->rows = 0;
            version = a->m->registry_version;
            snprintf(name, sizeof name, "%s", a->m->registry_name);
            snprintf(principal, sizeof principal, "%s", ms->callers[a->caller].principal);
            token = strdup(ms->callers[a->caller].token);
            break;
        }
        pthread_mutex_unlock(&ms->audit_lock);
        if (rows <= 0) return;
        inf_registry_prediction p = serve_prediction(ms, name, version, rows);
        inf_error e = {0};
        inf_registry *r = NULL;
        inf_status st = token ? inf__serve_models_open_registry(ms, token, &r, &e) : INF_ENOMEM;
        if (st == INF_OK) st = inf_registry_audit_prediction(r, &p, &e);
        if (r) inf_registry_free(r);
        if (token) {
            explicit_bzero(token, strlen(token));
            free(token);
        }
        if (st != INF_OK) {
            char job[160];
            snprintf(job, sizeof job, "caller:%s", principal);
            p.job_id = job;
            inf_error e2 = {0};
            if (inf_registry_audit_prediction(ms->reg, &p, &e2) != INF_OK)
                fprintf(stderr, "infera serve: audit of %s version %lld for %s failed: %s\n", name, (long long)version,
                        principal, e2.message);
        }
    }
}

static void poll_aliases(srv_models *ms) {
    for (int i = 0; i < MAX_SLOTS; i++) {
        srv_slot *s = &ms->slots[i];
        char ref[1024];
        int64_t cur = 0;
        pthread_mutex_lock(&ms->lock);
        int take = s->used && s->from_registry && s->current;
        if (take) {
            snprintf(ref, sizeof ref, "%s", s->ref);
            cur = s->current->registry_version;
        }
        pthread_mutex_unlock(&ms->lock);
        if (!take) continue;
        inf_registry_resolved res;
        memset(&res, 0, sizeof res);
        inf_error e = {0};
        if (inf_registry_resolve(ms->reg, ref, &res, &e) != INF_OK) {
            fprintf(stderr, "infera serve: cannot resolve %s: %s\n", ref, e.message);
            continue;
        }
        int64_t now_v = res.version;
        inf_registry_resolved_clear(&res);
        if (now_v != cur) {
            fprintf(stderr, "infera serve: %s moved from version %lld to %lld; loading\n", ref, (long long)cur,
                    (long long)now_v);
            inf__serve_models_reload(ms, s, NULL, 0, NULL);
        }
    }
}

/* Every poll period (or at once when the PostgreSQL registry announces an
 * alias move): follow alias moves, pick up new/removed aliases
 * (--all-aliases), refresh the auth switch, write the audit records. */
void *inf__serve_models_poller(void *arg) {
    srv_models *ms = arg;
    int secs = ms->srv->opt.poll_secs > 0 ? ms->srv->opt.poll_secs : 5;
    pthread_mutex_lock(&ms->load_lock);
    while (!ms->stop) {
        int moved = 0;
        if (ms->listener) {
            pthread_mutex_unlock(&ms->load_lock);
            moved = inf__serve_listen_wait(ms->listener, secs * 1000) > 0;
            pthread_mutex_lock(&ms->load_lock);
        } else {
            struct timespec ts;
            clock_gettime(CLOCK_REALTIME, &ts);
            ts.tv_sec += secs;
            pthread_cond_timedwait(&ms->stop_cond, &ms->load_lock, &ts);
        }
        if (ms->stop) break;
        if (ms->srv->opt.all_aliases && (ms->srv->opt.poll_secs > 0 || moved))
            inf__serve_models_sync_aliases(ms, 0, NULL);
        if (ms->srv->opt.poll_secs > 0 || moved) poll_aliases(ms);
        ms->auth_on = inf_registry_auth_enabled(ms->reg);
        inf__serve_quotas_sync_registry(ms->srv->quotas, ms->reg);
        audit_flush(ms);
    }
    audit_flush(ms);
    pthread_mutex_unlock(&ms->load_lock);
    return NULL;
}

inf_status inf__serve_models_start_poller(srv_models *ms, inf_error *err) {
    pthread_mutex_lock(&ms->load_lock);
    if (!ms->reg && (ms->srv->opt.home || ms->srv->opt.registry)) {
        inf_status st = inf__serve_models_loader_registry(ms, err);
        if (st != INF_OK) {
            pthread_mutex_unlock(&ms->load_lock);
            return st;
        }
    }
    int need = ms->reg != NULL;
    if (need) inf__serve_quotas_sync_registry(ms->srv->quotas, ms->reg); /* then every poll period */
    pthread_mutex_unlock(&ms->load_lock);
    if (!need) return INF_OK;
    const char *url = ms->srv->opt.registry ? ms->srv->opt.registry : getenv("INFERA_REGISTRY");
    inf_status lst = inf__serve_listen_open(url, &ms->listener, err);
    if (lst != INF_OK) return lst;
    if (pthread_create(&ms->poller, NULL, inf__serve_models_poller, ms) == 0) ms->poller_started = 1;
    return INF_OK;
}
