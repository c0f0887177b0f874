/*
 * quota.c -- per-caller limits of `infera serve`: token buckets of requests
 * and rows per principal, checked before a request reaches a batcher.
 *
 * Limits come from the configuration (`--quota PRINCIPAL=RPS[:ROWS_PER_S
 * [:BURST_S]]`, repeatable) and from the registry (`infera registry quota
 * set`), re-read every poll period; a principal named in the registry takes
 * the registry's limits.  "*" limits every principal without a quota of its
 * own (each gets its own bucket); "anonymous" is every caller without a
 * token while auth is off.  A caller over either rate gets 429 with
 * Retry-After (whole seconds until both buckets hold the request's cost);
 * nothing is queued.
 *
 * Design: one table of at most QUOTA_SLOTS buckets, found by the principal's
 * hash (open addressing), under one mutex: a check is a hash, a probe and a
 * refill -- well under a microsecond.  Counters per principal feed /metrics.
 */
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "serve/serve.h"

#define QUOTA_SLOTS 1024 /* principals with a bucket; beyond it the "*" limits are shared by the rest */
#define QUOTA_LIMITS 256 /* distinct configured limits */

typedef struct quota_limit {
    char principal[129];
    double rps, rows_per_s, burst_s;
    int from_registry;
} quota_limit;

typedef struct quota_bucket {
    char principal[129];       /* "" = free slot */
    const quota_limit *limit;  /* NULL = unlimited (counted only) */
    double req_tokens, row_tokens;
    uint64_t last_ns;
    uint64_t allowed, limited, rows;
} quota_bucket;

struct srv_quotas {
    pthread_mutex_t lock;
    quota_limit limits[QUOTA_LIMITS];
    int n_limits;
    int n_config;              /* limits[0..n_config) came from the configuration */
    quota_bucket buckets[QUOTA_SLOTS];
    quota_bucket overflow;     /* principals beyond QUOTA_SLOTS */
    int n_buckets;
};

srv_quotas *inf__serve_quotas_new(void) {
    srv_quotas *q = calloc(1, sizeof *q);
    if (q) pthread_mutex_init(&q->lock, NULL);
    if (q) snprintf(q->overflow.principal, sizeof q->overflow.principal, "*other*");
    return q;
}

void inf__serve_quotas_free(srv_quotas *q) {
    if (!q) return;
    pthread_mutex_destroy(&q->lock);
    free(q);
}

/* "PRINCIPAL=RPS[:ROWS_PER_S[:BURST_S]]" -> out; 0 or -1 with err filled. */
int inf__serve_quota_parse(const char *spec, inf_registry_quota *out, inf_error *err) {
    memset(out, 0, sizeof *out);
    const char *eq = strchr(spec, '=');
    if (!eq || eq == spec || (size_t)(eq - spec) >= sizeof out->principal) {
        inf_error_set(err, INF_EINVAL, "quota '%s': expected PRINCIPAL=RPS[:ROWS_PER_S[:BURST_S]]", spec);
        return -1;
    }
    memcpy(out->principal, spec, (size_t)(eq - spec));
    double *v[3] = {&out->requests_per_s, &out->rows_per_s, &out->burst_s};
    const char *p = eq + 1;
    for (int i = 0; i < 3 && *p; i++) {
        char *end;
        *v[i] = strtod(p, &end);
        if (end == p || !(*v[i] >= 0) || *v[i] > 1e12 || (*end && *end != ':')) {
            inf_error_set(err, INF_EINVAL, "quota '%s': rates must be numbers >= 0 (0 = no limit), e.g. alice=100:5000:2",
                          spec);
            return -1;
        }
        p = *end ? end + 1 : end;
    }
    if (*p) {
        inf_error_set(err, INF_EINVAL, "quota '%s': at most three numbers RPS:ROWS_PER_S:BURST_S", spec);
        return -1;
    }
    if (out->requests_per_s == 0 && out->rows_per_s == 0) {
        inf_error_set(err, INF_EINVAL, "quota '%s': give a request or a row rate", spec);
        return -1;
    }
    return 0;
}

static const quota_limit *find_limit(const srv_quotas *q, const char *principal) {
    const quota_limit *any = NULL, *own = NULL;
    for (int i = 0; i < q->n_limits; i++) {
        const quota_limit *l = &q->limits[i];
        if (!strcmp(l->principal, principal) && (!own || l->from_registry)) own = l;
        else if (!strcmp(l->principal, "*") && (!any || l->from_registry)) any = l;
    }
    return own ? own : any;
}

/* Points every bucket at its current limit (after the limits changed). */
static void relink(srv_quotas *q) {
    for (int i = 0; i < QUOTA_SLOTS; i++)
        if (q->buckets[i].principal[0]) q->buckets[i].limit = find_limit(q, q->buckets[i].principal);
    q->overflow.limit = find_limit(q, "*");
}

static int add_limit(srv_quotas *q, const inf_registry_quota *in, int from_registry) {
    if (q->n_limits >= QUOTA_LIMITS) return -1;
    quota_limit *l = &q->limits[q->n_limits++];
    snprintf(l->principal, sizeof l->principal, "%s", in->principal);
    l->rps = in->requests_per_s, l->rows_per_s = in->rows_per_s;
    l->burst_s = in->burst_s > 0 ? in->burst_s : 1.0;
    l->from_registry = from_registry;
    return 0;
}

inf_status inf__serve_quotas_configure(srv_quotas *q, const inf_registry_quota *list, int n, inf_error *err) {
    pthread_mutex_lock(&q->lock);
    q->n_limits = 0;
    for (int i = 0; i < n; i++)
        if (add_limit(q, &list[i], 0)) {
            pthread_mutex_unlock(&q->lock);
            return inf_error_set(err, INF_EINVAL, "more than %d quotas", QUOTA_LIMITS);
        }
    q->n_config = q->n_limits;
    relink(q);
    pthread_mutex_unlock(&q->lock);
    return INF_OK;
}

void inf__serve_quotas_sync_registry(srv_quotas *q, inf_registry *reg) {
    inf_registry_quota *list = NULL;
    int n = 0;
    inf_error e = {0};
    if (inf_registry_quotas(reg, &list, &n, &e) != INF_OK) {
        static _Atomic int warned; /* once per process: a registry without read access keeps the configured ones */
        if (!atomic_exchange(&warned, 1)) fprintf(stderr, "infera serve: quotas not read from the registry: %s\n", e.message);
        return;
    }
    pthread_mutex_lock(&q->lock);
    q->n_limits = q->n_config;
    for (int i = 0; i < n; i++)
        if (add_limit(q, &list[i], 1)) break;
    relink(q);
    pthread_mutex_unlock(&q->lock);
    inf_registry_quotas_free(list);
}

static uint64_t hash_name(const char *s) {
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

static quota_bucket *bucket_of(srv_quotas *q, const char *principal) {
    uint64_t h = hash_name(principal);
    for (int probe = 0; probe < QUOTA_SLOTS; probe++) {
        quota_bucket *b = &q->buckets[(h + (uint64_t)probe) % QUOTA_SLOTS];
        if (!strcmp(b->principal, principal)) return b;
        if (!b->principal[0]) {
            if (q->n_buckets >= QUOTA_SLOTS * 3 / 4) break;
            snprintf(b->principal, sizeof b->principal, "%s", principal);
            b->limit = find_limit(q, principal);
            b->req_tokens = b->limit ? b->limit->rps * b->limit->burst_s : 0;
            b->row_tokens = b->limit ? b->limit->rows_per_s * b->limit->burst_s : 0;
            b->last_ns = inf__serve_now_ns();
            q->n_buckets++;
            return b;
        }
    }
    return &q->overflow;
}

/* Tokens a rate's bucket holds after refilling; the wait until it holds cost. */
static double refill(double tokens, double rate, double burst_s, double dt_s) {
    double cap = rate * burst_s, t = tokens + rate * dt_s;
    return t > cap ? cap : t;
}

double inf__serve_quotas_take(srv_quotas *q, const char *principal, int64_t rows) {
    if (!q || q->n_limits == 0) return 0; /* no quotas: nothing to count or limit */
    if (rows < 1) rows = 1;
    pthread_mutex_lock(&q->lock);
    quota_bucket *b = bucket_of(q, principal && *principal ? principal : "anonymous");
    const quota_limit *l = b->limit;
    double wait = 0;
    if (l) {
        uint64_t now = inf__serve_now_ns();
        double dt = (double)(now - b->last_ns) / 1e9;
        b->last_ns = now;
        if (l->rps > 0) b->req_tokens = refill(b->req_tokens, l->rps, l->burst_s, dt);
        if (l->rows_per_s > 0) b->row_tokens = refill(b->row_tokens, l->rows_per_s, l->burst_s, dt);
        if (l->rows_per_s > 0 && (double)rows > l->rows_per_s * l->burst_s) {
            wait = -1; /* more rows than the bucket ever holds */
        } else {
            if (l->rps > 0 && b->req_tokens < 1) wait = (1 - b->req_tokens) / l->rps;
            if (l->rows_per_s > 0 && b->row_tokens < (double)rows)
                wait = fmax(wait, ((double)rows - b->row_tokens) / l->rows_per_s);
        }
    }
    if (wait == 0) {
        if (l && l->rps > 0) b->req_tokens -= 1;
        if (l && l->rows_per_s > 0) b->row_tokens -= (double)rows;
        b->allowed++;
        b->rows += (uint64_t)rows;
    } else {
        b->limited++;
    }
    pthread_mutex_unlock(&q->lock);
    return wait;
}

void inf__serve_quotas_metrics(srv_quotas *q, srv_buf *o) {
    if (!q) return;
    pthread_mutex_lock(&q->lock);
    if (q->n_buckets == 0 && q->overflow.allowed + q->overflow.limited == 0) {
        pthread_mutex_unlock(&q->lock);
        return;
    }
    inf__serve_buf_puts(o, "# HELP infera_quota_requests_total Requests checked against a caller's quota, by outcome.\n"
                           "# TYPE infera_quota_requests_total counter\n");
    for (int i = 0; i <= QUOTA_SLOTS; i++) {
        const quota_bucket *b = i < QUOTA_SLOTS ? &q->buckets[i] : &q->overflow;
        if (!b->principal[0] || b->allowed + b->limited == 0) continue;
        inf__serve_buf_printf(o, "infera_quota_requests_total{principal=\"%s\",outcome=\"allowed\"} %llu\n",
                              b->principal, (unsigned long long)b->allowed);
        inf__serve_buf_printf(o, "infera_quota_requests_total{principal=\"%s\",outcome=\"limited\"} %llu\n",
                              b->principal, (unsigned long long)b->limited);
    }
    inf__serve_buf_puts(o, "# HELP infera_quota_rows_total Rows admitted under a caller's quota.\n"
                           "# TYPE infera_quota_rows_total counter\n");
    for (int i = 0; i <= QUOTA_SLOTS; i++) {
        const quota_bucket *b = i < QUOTA_SLOTS ? &q->buckets[i] : &q->overflow;
        if (!b->principal[0] || b->allowed + b->limited == 0) continue;
        inf__serve_buf_printf(o, "infera_quota_rows_total{principal=\"%s\"} %llu\n", b->principal,
                              (unsigned long long)b->rows);
    }
    pthread_mutex_unlock(&q->lock);
}
