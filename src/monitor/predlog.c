/*
 * predlog.c -- the prediction log (predlog.h): sampled rows built from row
 * plans (logrow.h) into one OPEN BATCH per layout (a request's few sampled
 * rows are appended to the rows of the requests before it, under the
 * layout's own lock), queued into a ring under a short lock when it holds
 * OPEN_ROWS rows, written by one writer thread that also takes the open
 * batches every FLUSH_MS and commits many batches at once.
 */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "io/record_int.h"
#include "monitor/logrow.h"
#include "monitor/predlog.h"

#define RING_BATCHES 4096 /* queued batches at most (and max_rows rows) */
#define SPARE_BATCHES 64  /* written batches kept for reuse (a batch of a few rows is small) */
#define MAX_PLANS 64      /* row plans kept; rows of more layouts than this are dropped (counted) */
#define FLUSH_ROWS 4096   /* the writer is woken when this many rows wait ... */
#define FLUSH_MS 1000     /* ... or after this long (one SQLite commit a second at most) */
#define TAKE_BATCHES 256  /* ... or when this many batches wait: what the writer takes at once */
#define OPEN_ROWS 64      /* an open batch is queued once it holds this many rows (a new batch's room) */
#define MAX_OPEN 64       /* layouts with an open batch; further layouts get a batch per call (as before) */

/* A kept row plan; the list only grows (nodes are immutable once published). */
typedef struct plan_node {
    inf__mon_row_plan *plan;
    struct plan_node *next;
} plan_node;

/* A batch of log rows and the plan its fields were bound for (reused as is
 * while the plan is the same: no field setup). */
typedef struct log_batch {
    inf_record_batch *rows;
    const void *plan; /* a row plan, or the layout key of prebuilt rows (add_built) */
    int *map;
    int map_cap;
} log_batch;

/* The open batch of one layout (key): requests append their sampled rows
 * to it under mu.  A slot's key is set once (under the log's mu) and then
 * never changes; slots are published by n_open. */
typedef struct open_slot {
    pthread_mutex_t mu;
    const void *key;
    log_batch *b; /* NULL: none open */
} open_slot;

struct inf__mon_log {
    inf_sink *sink;
    const inf_pipeline *pipeline;
    double sample;
    uint64_t sample_below; /* a record is sampled when its hash's top 53 bits are below this */
    int max_rows;
    atomic_uint_fast64_t n_seen, n_sampled, n_written, n_dropped;
    _Atomic(plan_node *) plans;
    atomic_int n_plans;
    pthread_mutex_t mu;  /* ring, spares, plan list writers */
    pthread_cond_t cv;
    log_batch *ring[RING_BATCHES];
    int ring_head, ring_n, ring_rows;
    log_batch *spare[SPARE_BATCHES];
    int n_spare;
    int closing;
    pthread_t writer;
    inf_error sink_error; /* the first one (status 0 = none); written by the writer only */
    open_slot open[MAX_OPEN];
    atomic_int n_open;
};

int inf__mon_log_is_meta_field(const char *name) {
    static const char *const meta[] = {"record_id", "logged_at", "model_name", "model_version", "pipeline_hash"};
    for (size_t i = 0; i < sizeof meta / sizeof meta[0]; i++)
        if (!strcmp(name, meta[i])) return 1;
    return 0;
}

static uint64_t splitmix64(uint64_t x) {
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

/* Whether record number k of the log's stream is sampled: (hash >> 11) * 2^-53 < sample, as
 * integers (hash >> 11 < ceil(sample * 2^53): the same records, without a conversion per record). */
static int sampled(const inf__mon_log *l, uint64_t k) { return (splitmix64(k) >> 11) < l->sample_below; }

static void drop(inf__mon_log *l, uint64_t n) { atomic_fetch_add(&l->n_dropped, n); }

int64_t inf__mon_now_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* ---- row plans ---------------------------------------------------------------- */

/* The kept plan for this batch, or a new one (kept).  NULL when out of
 * memory or when MAX_PLANS layouts were seen already. */
static const inf__mon_row_plan *plan_for(inf__mon_log *l, const inf_pipeline *p, const inf_pipeline_exec *ex,
                                         const inf_record_batch *in, const inf_record_batch *pred) {
    for (plan_node *n = atomic_load(&l->plans); n; n = n->next)
        if (inf__mon_plan_matches(n->plan, p, ex, in, pred)) return n->plan;
    if (atomic_load(&l->n_plans) >= MAX_PLANS) return NULL;
    inf__mon_row_plan *plan;
    plan_node *node = malloc(sizeof *node);
    if (!node || inf__mon_plan_new(p, ex, in, pred, &plan)) {
        free(node);
        return NULL;
    }
    node->plan = plan;
    pthread_mutex_lock(&l->mu);
    node->next = atomic_load(&l->plans);
    atomic_store(&l->plans, node);
    atomic_fetch_add(&l->n_plans, 1);
    pthread_mutex_unlock(&l->mu);
    return plan;
}

/* ---- batches ------------------------------------------------------------------ */

static void batch_free(log_batch *b) {
    if (!b) return;
    inf_record_batch_free(b->rows);
    free(b->map);
    free(b);
}

/* How a batch's fields are added: a row plan's, or the names of add_built. */
typedef struct binder {
    const void *key;
    int n_fields;
    const inf__mon_row_plan *plan; /* NULL: names */
    const char *const *names;
} binder;

static inf_status bind_fields(const binder *bd, inf_record_batch *rows, int *map) {
    if (bd->plan) return inf__mon_plan_bind(bd->plan, rows, map);
    for (int i = 0; i < bd->n_fields; i++) {
        inf_status st = inf_record_batch_add_field(rows, bd->names[i], &map[i]);
        if (st) return st;
    }
    return INF_OK;
}

/* A batch bound to bd's layout: a spare one (the same layout's first: its
 * fields are kept), else a new one.  NULL when out of memory. */
static log_batch *batch_get(inf__mon_log *l, const binder *bd) {
    log_batch *b = NULL;
    pthread_mutex_lock(&l->mu);
    for (int i = l->n_spare - 1; i >= 0 && !b; i--)
        if (l->spare[i]->plan == bd->key) {
            b = l->spare[i];
            l->spare[i] = l->spare[--l->n_spare];
        }
    if (!b && l->n_spare) b = l->spare[--l->n_spare];
    pthread_mutex_unlock(&l->mu);
    if (b && b->plan == bd->key) {
        if (bd->plan)
            inf_record_batch_clear(b->rows);
        else
            inf__record_batch_clear_unzeroed(b->rows); /* add_built's rows set every field */
        return b;
    }
    if (!b && (!(b = calloc(1, sizeof *b)) || inf_record_batch_new(&b->rows))) {
        free(b);
        return NULL;
    }
    int n = bd->n_fields;
    inf_record_batch_reset(b->rows);
    b->plan = NULL;
    if (n > b->map_cap) {
        int *map = realloc(b->map, (size_t)n * sizeof *map);
        if (!map) {
            batch_free(b);
            return NULL;
        }
        b->map = map;
        b->map_cap = n;
    }
    if (bind_fields(bd, b->rows, b->map)) {
        batch_free(b);
        return NULL;
    }
    b->plan = bd->key;
    return b;
}

/* Back to the spares after writing (freed when there are enough). */
static void batch_put(inf__mon_log *l, log_batch *b) {
    pthread_mutex_lock(&l->mu);
    int kept = l->n_spare < SPARE_BATCHES;
    if (kept) l->spare[l->n_spare++] = b;
    pthread_mutex_unlock(&l->mu);
    if (!kept) batch_free(b);
}

/* Queues b, or drops and counts its rows when the ring is full. */
static void queue(inf__mon_log *l, log_batch *b) {
    int n_rows = inf_record_batch_n_rows(b->rows);
    pthread_mutex_lock(&l->mu);
    int full = l->ring_n == RING_BATCHES || l->ring_rows + n_rows > l->max_rows;
    if (!full) {
        l->ring[(l->ring_head + l->ring_n++) % RING_BATCHES] = b;
        int was = l->ring_rows;
        l->ring_rows += n_rows;
        if ((was < FLUSH_ROWS && l->ring_rows >= FLUSH_ROWS) || l->ring_n == TAKE_BATCHES) pthread_cond_signal(&l->cv);
    }
    pthread_mutex_unlock(&l->mu);
    if (full) {
        drop(l, (uint64_t)n_rows);
        batch_put(l, b);
    }
}

/* ---- adding ------------------------------------------------------------------- */

int inf__mon_log_add(inf__mon_log *l, const inf_pipeline *p, const char *model_name, const inf_pipeline_exec *ex,
                     const inf_record_batch *in, const inf_record_batch *pred) {
    return l ? inf__mon_log_add_at(l, p, model_name, ex, in, pred, inf__mon_now_us()) : 0;
}

#define PICKS_KEPT 64 /* sampled records of a call listed (more: add_rows hashes again) */

/* The sample decision for a call's n records: records k0 .. k0 + n - 1 of the stream. */
typedef struct picks {
    uint64_t k0;
    int n, n_sampled;
    int first;         /* the first sampled record (index in the call) */
    int k[PICKS_KEPT]; /* the sampled records, when n_sampled <= PICKS_KEPT */
} picks;

/* Decides a call's sample: one atomic add on the record counter, one hash per record;
 * returns how many are sampled (counted). */
static int sample_batch(inf__mon_log *l, int n, picks *pk) {
    int n_sampled = 0;
    pk->first = -1;
    pk->n = n;
    pk->k0 = atomic_fetch_add(&l->n_seen, (uint64_t)n);
    for (int k = 0; k < n; k++)
        if (sampled(l, pk->k0 + (uint64_t)k)) {
            if (n_sampled < PICKS_KEPT) pk->k[n_sampled] = k;
            n_sampled++;
        }
    if (n_sampled) pk->first = pk->k[0];
    if (n_sampled) atomic_fetch_add(&l->n_sampled, (uint64_t)n_sampled);
    return pk->n_sampled = n_sampled;
}

/* The open slot of layout key, claimed for it when new; NULL when MAX_OPEN
 * layouts have one (that layout's rows go in a batch per call). */
static open_slot *slot_for(inf__mon_log *l, const void *key) {
    int n = atomic_load_explicit(&l->n_open, memory_order_acquire);
    for (int i = 0; i < n; i++)
        if (l->open[i].key == key) return &l->open[i];
    open_slot *s = NULL;
    pthread_mutex_lock(&l->mu);
    n = atomic_load(&l->n_open);
    for (int i = 0; i < n && !s; i++) /* another thread may have claimed it */
        if (l->open[i].key == key) s = &l->open[i];
    if (!s && n < MAX_OPEN) {
        s = &l->open[n];
        s->key = key;
        atomic_store_explicit(&l->n_open, n + 1, memory_order_release);
    }
    pthread_mutex_unlock(&l->mu);
    return s;
}

/* Appends the sampled records of a call (pk) with row() to the layout's open
 * batch (or to a batch of their own), and queues the batch when it is full.
 * A row that fails drops the batch's rows (counted). */
static void add_rows(inf__mon_log *l, const binder *bd, const picks *pk, inf__mon_build_row_fn row, void *user) {
    int n = pk->n, n_sampled = pk->n_sampled, listed = n_sampled <= PICKS_KEPT;
    open_slot *s = slot_for(l, bd->key);
    if (s) pthread_mutex_lock(&s->mu);
    log_batch *b = s ? s->b : NULL;
    if (!b && (b = batch_get(l, bd)) != NULL && !s && inf__record_batch_reserve_rows(b->rows, n_sampled)) {
        /* a batch of its own gets room for these rows only (the default 64 would be cleared for a few) */
        b->plan = NULL;
        batch_put(l, b);
        b = NULL;
    }
    int before = b ? inf_record_batch_n_rows(b->rows) : 0;
    for (int i = 0, k = pk->first; b && (listed ? i < n_sampled : k < n); i++, k++) {
        if (listed)
            k = pk->k[i];
        else if (!sampled(l, pk->k0 + (uint64_t)k))
            continue;
        if (row(user, k, b->map, b->rows)) {
            drop(l, (uint64_t)before); /* the earlier calls' rows in it (this call's are counted below) */
            b->plan = NULL;            /* half-built: rebind on reuse */
            batch_put(l, b);
            b = NULL;
        }
    }
    if (!b) drop(l, (uint64_t)n_sampled); /* out of memory (or of plans): log rows are lost, not the scoring */
    log_batch *full = b;
    if (s) {
        if (b && inf_record_batch_n_rows(b->rows) < OPEN_ROWS) full = NULL;
        s->b = full ? NULL : b;
        pthread_mutex_unlock(&s->mu);
    }
    if (full) queue(l, full);
}

/* A row of the records' log (add_at): the row plan's. */
typedef struct plan_rows {
    const inf__mon_row_plan *plan;
    const inf_pipeline_exec *ex;
    const inf_record_batch *in, *pred;
    int id_f;
    int64_t t;
    const char *model_name;
} plan_rows;

static inf_status plan_row(void *user, int k, const int *map, inf_record_batch *out) {
    const plan_rows *r = user;
    return inf__mon_plan_row(r->plan, map, r->ex, r->in, r->id_f, r->pred, k, r->t, r->model_name, out);
}

int inf__mon_log_add_at(inf__mon_log *l, const inf_pipeline *p, const char *model_name, const inf_pipeline_exec *ex,
                        const inf_record_batch *in, const inf_record_batch *pred, int64_t t) {
    if (!l) return 0;
    int n = inf_pipeline_n_accepted(ex);
    if (n > inf_record_batch_n_rows(pred)) n = inf_record_batch_n_rows(pred);
    if (n <= 0) return 0;
    picks pk;
    int n_sampled = sample_batch(l, n, &pk);
    if (!n_sampled) return 0;
    if (!p) p = l->pipeline;
    const inf__mon_row_plan *plan = p ? plan_for(l, p, ex, in, pred) : NULL;
    if (!plan) { /* out of memory or of plans */
        drop(l, (uint64_t)n_sampled);
        return n_sampled;
    }
    binder bd = {plan, inf__mon_plan_n_fields(plan), plan, NULL};
    plan_rows r = {plan, ex, in, pred, inf__mon_plan_id_field(plan, in), t, model_name};
    add_rows(l, &bd, &pk, plan_row, &r);
    return n_sampled;
}

int inf__mon_log_add_built(inf__mon_log *l, int n, const void *layout, int n_fields, const char *const *names,
                           inf__mon_build_row_fn row, void *user) {
    if (!l || n <= 0) return 0;
    picks pk;
    int n_sampled = sample_batch(l, n, &pk);
    if (!n_sampled) return 0;
    binder bd = {layout, n_fields, NULL, names};
    add_rows(l, &bd, &pk, row, user);
    return n_sampled;
}

inf_status inf__mon_log_rows(const inf_pipeline *p, const inf_pipeline_exec *ex, const inf_record_batch *in,
                             const inf_record_batch *pred, int n, int64_t t, inf_record_batch *out) {
    inf__mon_row_plan *plan;
    inf_status st = inf__mon_plan_new(p, ex, in, pred, &plan);
    if (st) return st;
    int *map = malloc((size_t)inf__mon_plan_n_fields(plan) * sizeof *map);
    if (!map) st = INF_ENOMEM;
    if (!st) st = inf__mon_plan_bind(plan, out, map);
    int id_f = inf__mon_plan_id_field(plan, in);
    for (int k = 0; !st && k < n; k++) st = inf__mon_plan_row(plan, map, ex, in, id_f, pred, k, t, NULL, out);
    free(map);
    inf__mon_plan_free(plan);
    return st;
}

/* ---- the writer --------------------------------------------------------------- */

/* Takes up to max queued batches (lock held). */
static int take(inf__mon_log *l, log_batch **out, int max) {
    int n = 0;
    while (l->ring_n && n < max) {
        log_batch *b = l->ring[l->ring_head];
        l->ring_head = (l->ring_head + 1) % RING_BATCHES;
        l->ring_n--;
        l->ring_rows -= inf_record_batch_n_rows(b->rows);
        out[n++] = b;
    }
    return n;
}

/* CLOCK_REALTIME now + FLUSH_MS (pthread_cond_timedwait's clock). */
static struct timespec flush_deadline(void) {
    struct timespec t;
    clock_gettime(CLOCK_REALTIME, &t);
    t.tv_sec += FLUSH_MS / 1000;
    t.tv_nsec += (FLUSH_MS % 1000) * 1000000L;
    if (t.tv_nsec >= 1000000000L) t.tv_sec++, t.tv_nsec -= 1000000000L;
    return t;
}

/* Takes the open batches that hold rows (at most MAX_OPEN). */
static int take_open(inf__mon_log *l, log_batch **out) {
    int n = 0, n_open = atomic_load_explicit(&l->n_open, memory_order_acquire);
    for (int i = 0; i < n_open; i++) {
        open_slot *s = &l->open[i];
        pthread_mutex_lock(&s->mu);
        if (s->b && inf_record_batch_n_rows(s->b->rows)) {
            out[n++] = s->b;
            s->b = NULL;
        }
        pthread_mutex_unlock(&s->mu);
    }
    return n;
}

static void *writer_main(void *arg) {
    inf__mon_log *l = arg;
    log_batch *got[TAKE_BATCHES + MAX_OPEN];
    int64_t open_taken = inf__mon_now_us();
    for (;;) {
        pthread_mutex_lock(&l->mu);
        struct timespec until = flush_deadline();
        /* wait for FLUSH_ROWS rows or TAKE_BATCHES batches, or FLUSH_MS */
        int timed_out = 0;
        while (!l->closing && l->ring_rows < FLUSH_ROWS && l->ring_n < TAKE_BATCHES && !timed_out)
            timed_out = pthread_cond_timedwait(&l->cv, &l->mu, &until) == ETIMEDOUT;
        int closing = l->closing;
        int n = take(l, got, TAKE_BATCHES);
        /* the sink is the writer's alone: written with the lock released */
        pthread_mutex_unlock(&l->mu);
        /* the open batches: every FLUSH_MS (a layout's few rows wait no longer than a queued batch) */
        int64_t now = inf__mon_now_us();
        if (closing || timed_out || now - open_taken >= (int64_t)FLUSH_MS * 1000) {
            n += take_open(l, got + n);
            open_taken = now;
        }
        if (closing && !n) return NULL;
        uint64_t rows = 0;
        int ok = l->sink_error.status == INF_OK;
        inf_error e;
        for (int i = 0; i < n; i++) {
            uint64_t r = (uint64_t)inf_record_batch_n_rows(got[i]->rows);
            if (ok && inf_sink_write(l->sink, got[i]->rows, &e) != INF_OK) {
                l->sink_error = e;
                ok = 0;
            }
            if (ok) rows += r;
            else drop(l, r);
        }
        if (rows && inf_sink_commit(l->sink, &e) != INF_OK) { /* one commit for every batch taken */
            if (l->sink_error.status == INF_OK) l->sink_error = e;
            drop(l, rows);
            rows = 0;
        }
        atomic_fetch_add(&l->n_written, rows);
        for (int i = 0; i < n; i++) batch_put(l, got[i]);
    }
}

/* ---- open / close ------------------------------------------------------------- */

inf_status inf__mon_log_open(const char *sink_uri, const inf_pipeline *p, double sample, int max_rows,
                             inf__mon_log **out, inf_error *err) {
    *out = NULL;
    if (!(sample > 0 && sample <= 1))
        return inf_error_set(err, INF_EINVAL, "prediction log: --log-sample must be in (0, 1] (got %g)", sample);
    inf__mon_log *l = calloc(1, sizeof *l);
    if (!l) return inf_error_set(err, INF_ENOMEM, "prediction log: out of memory");
    l->pipeline = p;
    l->sample = sample;
    l->sample_below = sample >= 1 ? UINT64_MAX : (uint64_t)ceil(sample * 0x1.0p53);
    l->max_rows = max_rows > 0 ? max_rows : 65536;
    inf_sink_options so = {0};
    so.append = 1;
    inf_status st = inf_sink_open(sink_uri, &so, &l->sink, err);
    if (st) {
        char red[1024];
        char msg[INF_ERROR_MESSAGE_MAX];
        snprintf(msg, sizeof msg, "%s", err->message);
        free(l);
        return inf_error_set(err, st, "prediction log %s: %s", inf_io_redact_uri(sink_uri, red, sizeof red), msg);
    }
    pthread_mutex_init(&l->mu, NULL);
    pthread_cond_init(&l->cv, NULL);
    for (int i = 0; i < MAX_OPEN; i++)
        pthread_mutex_init(&l->open[i].mu, NULL);
    /* the writer blocks every signal: the host's handlers (a PostgreSQL
     * backend's, serve's) run on the host's threads, never on the log's */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int failed = pthread_create(&l->writer, NULL, writer_main, l);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (failed) {
        inf_sink_close(l->sink, err);
        for (int i = 0; i < MAX_OPEN; i++)
            pthread_mutex_destroy(&l->open[i].mu);
        pthread_mutex_destroy(&l->mu);
        pthread_cond_destroy(&l->cv);
        free(l);
        return inf_error_set(err, INF_ENOMEM, "prediction log: cannot start the writer thread");
    }
    *out = l;
    return INF_OK;
}

void inf__mon_log_stats_get(inf__mon_log *l, inf__mon_log_stats *stats) {
    stats->n_seen = atomic_load(&l->n_seen);
    stats->n_sampled = atomic_load(&l->n_sampled);
    stats->n_written = atomic_load(&l->n_written);
    stats->n_dropped = atomic_load(&l->n_dropped);
}

inf_status inf__mon_log_close(inf__mon_log *l, inf__mon_log_stats *stats, inf_error *err) {
    if (!l) return INF_OK;
    pthread_mutex_lock(&l->mu);
    l->closing = 1;
    pthread_cond_broadcast(&l->cv);
    pthread_mutex_unlock(&l->mu);
    pthread_join(l->writer, NULL);
    inf_error ce;
    inf_status st = inf_sink_close(l->sink, &ce);
    if (l->sink_error.status) {
        *err = l->sink_error;
        st = err->status;
    } else if (st) {
        *err = ce;
    }
    if (stats) inf__mon_log_stats_get(l, stats);
    for (int i = 0; i < l->n_spare; i++) batch_free(l->spare[i]);
    for (int i = 0; i < MAX_OPEN; i++) { /* the writer took every open batch with rows; an empty one may remain */
        batch_free(l->open[i].b);
        pthread_mutex_destroy(&l->open[i].mu);
    }
    for (plan_node *n = atomic_load(&l->plans), *next; n; n = next) {
        next = n->next;
        inf__mon_plan_free(n->plan);
        free(n);
    }
    pthread_mutex_destroy(&l->mu);
    pthread_cond_destroy(&l->cv);
    free(l);
    return st;
}
