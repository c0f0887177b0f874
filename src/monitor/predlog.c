/*
 * predlog.c -- the prediction log (predlog.h): sampled rows built by the
 * scoring threads, queued under a short lock, written by one writer thread.
 */
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cjson/cJSON.h>

#include "monitor/predlog.h"

typedef struct queued {
    inf_record_batch *rows;
    struct queued *next;
} queued;

struct inf__mon_log {
    inf_sink *sink;
    const inf_pipeline *pipeline;
    char **passthrough; /* the spec's passthrough fields: not outputs */
    double sample;
    int max_rows;
    atomic_uint_fast64_t n_seen, n_sampled, n_written, n_dropped;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    queued *head, *tail;
    int n_queued_rows;
    int closing;
    pthread_t writer;
    inf_error sink_error; /* the first one (status 0 = none); written by the writer only */
};

static const char *const STAMP_FIELDS[] = {"model_name", "model_version", "pipeline_hash"};

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

static int sampled(inf__mon_log *l) {
    uint64_t k = atomic_fetch_add(&l->n_seen, 1);
    if (l->sample >= 1.0) return 1;
    return (double)(splitmix64(k) >> 11) * 0x1.0p-53 < l->sample;
}

int inf__mon_log_sample_next(inf__mon_log *l) {
    if (!sampled(l)) return 0;
    atomic_fetch_add(&l->n_sampled, 1);
    return 1;
}


/* A feature column of a sensitive input ("ssn", or one-hot "ssn=..."). */
static int column_is_sensitive(const inf_pipeline *p, const char *col) {
    if (inf_pipeline_is_sensitive(p, col)) return 1;
    const char *eq = strchr(col, '=');
    if (!eq) return 0;
    char base[256];
    size_t n = (size_t)(eq - col);
    if (n >= sizeof base) return 0;
    memcpy(base, col, n);
    base[n] = 0;
    return inf_pipeline_is_sensitive(p, base);
}

/* A prediction field that is a model output (see predlog.h LOG ROWS). */
char **inf__mon_passthrough_new(const inf_pipeline *p) {
    cJSON *spec = cJSON_Parse(inf_pipeline_canonical(p) ? inf_pipeline_canonical(p) : "{}");
    const cJSON *pt = cJSON_GetObjectItemCaseSensitive(spec, "passthrough"), *x;
    int n = cJSON_IsArray(pt) ? cJSON_GetArraySize(pt) : 0, k = 0;
    char **list = calloc((size_t)n + 1, sizeof *list);
    if (list)
        cJSON_ArrayForEach(x, pt) if (cJSON_IsString(x) && k < n && !(list[k++] = strdup(x->valuestring))) {
            inf__mon_passthrough_free(list);
            list = NULL;
            break;
        }
    cJSON_Delete(spec);
    return list;
}

void inf__mon_passthrough_free(char **list) {
    for (int i = 0; list && list[i]; i++) free(list[i]);
    free(list);
}

static int is_output_field(const inf_pipeline *p, const char *const *passthrough, const char *name, const char *id) {
    for (size_t i = 0; i < sizeof STAMP_FIELDS / sizeof STAMP_FIELDS[0]; i++)
        if (!strcmp(name, STAMP_FIELDS[i])) return 0;
    if (id && !strcmp(name, id)) return 0;
    for (int i = 0; passthrough && passthrough[i]; i++)
        if (!strcmp(name, passthrough[i])) return 0;
    return !inf_pipeline_is_sensitive(p, name);
}

static inf_status copy_stamp(inf_record_batch *out, int row, const inf_record_batch *pred, int k) {
    inf_status st = INF_OK;
    for (size_t i = 0; !st && i < sizeof STAMP_FIELDS / sizeof STAMP_FIELDS[0]; i++) {
        int src = inf_record_batch_find_field(pred, STAMP_FIELDS[i]), dst;
        if (src < 0) continue;
        if (!(st = inf_record_batch_add_field(out, STAMP_FIELDS[i], &dst)))
            st = inf_record_batch_set(out, row, dst, inf_record_batch_get(pred, k, src));
    }
    return st;
}

inf_status inf__mon_log_row(const inf_pipeline *p, const char *const *passthrough, const inf_pipeline_exec *ex,
                            const inf_record_batch *in, const inf_record_batch *pred, int k, int64_t now_us,
                            inf_record_batch *out) {
    const char *id = inf_pipeline_id_column(p);
    if (!id) id = inf_record_batch_id_field(in);
    int row, f;
    inf_status st;
    if ((st = inf_record_batch_add_row(out, &row))) return st;
    if ((st = inf_record_batch_add_field(out, "record_id", &f))) return st;
    int id_f = id ? inf_record_batch_find_field(in, id) : -1;
    if (id_f >= 0) {
        const inf_value *v = inf_record_batch_get(in, inf_pipeline_accepted_row(ex, k), id_f);
        char num[64];
        if (v->type == INF_FIELD_STRING) st = inf_record_batch_set(out, row, f, v);
        else if (v->type == INF_FIELD_INT) {
            int n = snprintf(num, sizeof num, "%lld", (long long)v->u.i);
            st = inf_record_batch_set_string(out, row, f, num, (size_t)n);
        } else if (v->type != INF_FIELD_NULL) {
            double d = 0;
            inf_value_to_double(v, &d);
            int n = snprintf(num, sizeof num, "%.17g", d);
            st = inf_record_batch_set_string(out, row, f, num, (size_t)n);
        }
        if (st) return st;
    }
    if ((st = inf_record_batch_add_field(out, "logged_at", &f)) || (st = inf_record_batch_set_timestamp(out, row, f, now_us)))
        return st;
    if ((st = copy_stamp(out, row, pred, k))) return st;
    int nr = 0, nc = 0;
    const double *x = inf_pipeline_features(ex, &nr, &nc);
    for (int j = 0; x && k < nr && j < nc; j++) {
        const char *col = inf_pipeline_exec_feature_column(ex, j);
        if (!col || column_is_sensitive(p, col)) continue;
        if ((st = inf_record_batch_add_field(out, col, &f))) return st;
        double v = x[(size_t)k * (size_t)nc + (size_t)j];
        if (isfinite(v) && (st = inf_record_batch_set_float(out, row, f, v))) return st;
    }
    for (int j = 0, n = inf_record_batch_n_fields(pred); j < n; j++) {
        const char *name = inf_record_batch_field_name(pred, j);
        if (!is_output_field(p, passthrough, name, id)) continue;
        if ((st = inf_record_batch_add_field(out, name, &f)) || (st = inf_record_batch_set(out, row, f, inf_record_batch_get(pred, k, j))))
            return st;
    }
    return INF_OK;
}

static void drop(inf__mon_log *l, uint64_t n) { atomic_fetch_add(&l->n_dropped, n); }

void inf__mon_log_add(inf__mon_log *l, const inf_pipeline_exec *ex, const inf_record_batch *in,
                      const inf_record_batch *pred) {
    if (!l) return;
    int n = inf_pipeline_n_accepted(ex), n_rows = 0;
    inf_record_batch *out = NULL;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    int64_t now_us = (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
    for (int k = 0; k < n; k++) {
        if (!sampled(l)) continue;
        atomic_fetch_add(&l->n_sampled, 1);
        if (!out && inf_record_batch_new(&out)) {
            drop(l, 1);
            continue;
        }
        if (inf__mon_log_row(l->pipeline, (const char *const *)l->passthrough, ex, in, pred, k, now_us, out)) {
            /* out of memory mid-batch: this batch of log rows is lost, not the scoring */
            drop(l, (uint64_t)n_rows + 1);
            inf_record_batch_free(out);
            out = NULL;
            n_rows = 0;
            continue;
        }
        n_rows++;
    }
    if (!out) return;
    inf__mon_log_queue(l, out);
}

void inf__mon_log_queue(inf__mon_log *l, inf_record_batch *out) {
    int n_rows = inf_record_batch_n_rows(out);
    queued *q = malloc(sizeof *q);
    pthread_mutex_lock(&l->mu);
    int full = !q || l->n_queued_rows + n_rows > l->max_rows;
    if (!full) {
        q->rows = out;
        q->next = NULL;
        if (l->tail) l->tail->next = q;
        else l->head = q;
        l->tail = q;
        l->n_queued_rows += n_rows;
        pthread_cond_signal(&l->cv);
    }
    pthread_mutex_unlock(&l->mu);
    if (full) {
        drop(l, (uint64_t)n_rows);
        inf_record_batch_free(out);
        free(q);
    }
}

static void *writer_main(void *arg) {
    inf__mon_log *l = arg;
    for (;;) {
        pthread_mutex_lock(&l->mu);
        while (!l->head && !l->closing) pthread_cond_wait(&l->cv, &l->mu);
        queued *q = l->head;
        if (!q) {
            pthread_mutex_unlock(&l->mu);
            return NULL;
        }
        l->head = q->next;
        if (!l->head) l->tail = NULL;
        int n = inf_record_batch_n_rows(q->rows);
        l->n_queued_rows -= n;
        pthread_mutex_unlock(&l->mu);
        inf_error e;
        if (l->sink_error.status == INF_OK && inf_sink_write(l->sink, q->rows, &e) == INF_OK &&
            inf_sink_commit(l->sink, &e) == INF_OK) {
            atomic_fetch_add(&l->n_written, (uint64_t)n);
        } else {
            if (l->sink_error.status == INF_OK) l->sink_error = e;
            drop(l, (uint64_t)n);
        }
        inf_record_batch_free(q->rows);
        free(q);
    }
}

inf_status inf__mon_log_open(const char *sink_uri, const inf_pipeline *p, double sample, int max_rows,
                             inf__mon_log **out, inf_error *err) {
    *out = NULL;
    if (!(sample > 0 && sample <= 1))
        return inf_error_set(err, INF_EINVAL, "prediction log: --log-sample must be in (0, 1] (got %g)", sample);
    inf__mon_log *l = calloc(1, sizeof *l);
    if (!l) return inf_error_set(err, INF_ENOMEM, "prediction log: out of memory");
    l->pipeline = p;
    if (!(l->passthrough = p ? inf__mon_passthrough_new(p) : calloc(1, sizeof(char *)))) {
        free(l);
        return inf_error_set(err, INF_ENOMEM, "prediction log: out of memory");
    }
    l->sample = sample;
    l->max_rows = max_rows > 0 ? max_rows : 65536;
    inf_sink_options so = {0};
    so.append = 1;
    inf_status st = inf_sink_open(sink_uri, &so, &l->sink, err);
    if (st) {
        char red[1024];
        char msg[INF_ERROR_MESSAGE_MAX];
        snprintf(msg, sizeof msg, "%s", err->message);
        inf__mon_passthrough_free(l->passthrough);
        free(l);
        return inf_error_set(err, st, "prediction log %s: %s", inf_io_redact_uri(sink_uri, red, sizeof red), msg);
    }
    pthread_mutex_init(&l->mu, NULL);
    pthread_cond_init(&l->cv, NULL);
    if (pthread_create(&l->writer, NULL, writer_main, l)) {
        inf_sink_close(l->sink, err);
        pthread_mutex_destroy(&l->mu);
        pthread_cond_destroy(&l->cv);
        inf__mon_passthrough_free(l->passthrough);
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
    if (stats) {
        stats->n_seen = atomic_load(&l->n_seen);
        stats->n_sampled = atomic_load(&l->n_sampled);
        stats->n_written = atomic_load(&l->n_written);
        stats->n_dropped = atomic_load(&l->n_dropped);
    }
    pthread_mutex_destroy(&l->mu);
    pthread_cond_destroy(&l->cv);
    inf__mon_passthrough_free(l->passthrough);
    free(l);
    return st;
}
