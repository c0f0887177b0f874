/*
 * online.c -- rolling drift windows (online.h): one mutex per served model
 * version, held to add a request's rows or to compute a drift.
 */
#include <pthread.h>
#include <stdlib.h>

#include "monitor/online.h"

#define REFRESH_US 1000000 /* the current window's drift is recomputed at most once a second */

struct inf__mon_online {
    pthread_mutex_t mu;
    inf__mon_profile *base;
    inf__mon_profile *cur;   /* the current window's profile */
    int64_t window_us, start_us;
    int max_rows;
    uint64_t window_rows, total_rows;
    cJSON *last;             /* drift of the last complete window, or NULL */
    cJSON *cached;           /* drift of the current window as of cached_at_us */
    int64_t cached_at_us;
    uint64_t cached_rows;
};

inf_status inf__mon_online_new(inf__mon_profile *baseline, int64_t window_us, int max_rows, inf__mon_online **out) {
    *out = NULL;
    inf__mon_online *o = calloc(1, sizeof *o);
    if (!o || inf__mon_profile_new(&o->cur)) {
        free(o);
        inf__mon_profile_free(baseline);
        return INF_ENOMEM;
    }
    pthread_mutex_init(&o->mu, NULL);
    o->base = baseline;
    o->window_us = window_us > 0 ? window_us : 60000000;
    o->max_rows = max_rows > 0 ? max_rows : INF__MON_SAMPLE_MAX;
    *out = o;
    return INF_OK;
}

void inf__mon_online_free(inf__mon_online *o) {
    if (!o) return;
    pthread_mutex_destroy(&o->mu);
    inf__mon_profile_free(o->base);
    inf__mon_profile_free(o->cur);
    cJSON_Delete(o->last);
    cJSON_Delete(o->cached);
    free(o);
}

static int64_t window_start(const inf__mon_online *o, int64_t t) {
    int64_t q = t / o->window_us;
    if (t % o->window_us && t < 0) q--;
    return q * o->window_us;
}

static cJSON *drift_of(inf__mon_online *o, int64_t start, int complete, const char *model, const char *version) {
    cJSON *j = inf__mon_drift_json(o->base, o->cur, model, version);
    if (!j) return NULL;
    cJSON_AddNumberToObject(j, "start", (double)start / 1e6);
    cJSON_AddNumberToObject(j, "end", (double)(start + o->window_us) / 1e6);
    cJSON_AddBoolToObject(j, "complete", complete);
    cJSON_AddNumberToObject(j, "rows_observed", (double)o->window_rows);
    return j;
}

/* Closes the current window when now is past it (lock held). */
static void roll(inf__mon_online *o, int64_t now_us, const char *model, const char *version) {
    int64_t start = window_start(o, now_us);
    if (start == o->start_us) return;
    if (inf__mon_profile_rows(o->cur) > 0) {
        cJSON *j = drift_of(o, o->start_us, 1, model, version);
        if (j) {
            cJSON_Delete(o->last);
            o->last = j;
        }
    }
    inf__mon_profile *fresh;
    if (inf__mon_profile_new(&fresh) == INF_OK) {
        inf__mon_profile_free(o->cur);
        o->cur = fresh;
    }
    o->start_us = start;
    o->window_rows = 0;
    cJSON_Delete(o->cached);
    o->cached = NULL;
}

inf_status inf__mon_online_add(inf__mon_online *o, const inf_record_batch *rows, int64_t now_us) {
    inf_status st = INF_OK;
    int n = inf_record_batch_n_rows(rows);
    pthread_mutex_lock(&o->mu);
    /* the model/version of a closing window come from its rows' stamps */
    const char *model = NULL, *version = NULL;
    int fm = inf_record_batch_find_field(rows, "model_name"), fv = inf_record_batch_find_field(rows, "model_version");
    if (n > 0 && fm >= 0 && inf_record_batch_get(rows, 0, fm)->type == INF_FIELD_STRING)
        model = inf_record_batch_get(rows, 0, fm)->u.s.ptr;
    if (n > 0 && fv >= 0 && inf_record_batch_get(rows, 0, fv)->type == INF_FIELD_STRING)
        version = inf_record_batch_get(rows, 0, fv)->u.s.ptr;
    roll(o, now_us, model, version);
    o->window_rows += (uint64_t)n;
    o->total_rows += (uint64_t)n;
    for (int r = 0; r < n && st == INF_OK && inf__mon_profile_rows(o->cur) < (uint64_t)o->max_rows; r++)
        st = inf__mon_profile_add_row(o->cur, rows, r);
    pthread_mutex_unlock(&o->mu);
    return st;
}

cJSON *inf__mon_online_drift(inf__mon_online *o, int64_t now_us, const char *model, const char *version, int min_rows) {
    cJSON *out = NULL;
    pthread_mutex_lock(&o->mu);
    roll(o, now_us, model, version);
    uint64_t rows = inf__mon_profile_rows(o->cur);
    if (rows > 0 && rows >= (uint64_t)(min_rows > 0 ? min_rows : 1)) {
        if (!o->cached || (now_us - o->cached_at_us >= REFRESH_US && rows != o->cached_rows)) {
            cJSON *j = drift_of(o, o->start_us, 0, model, version);
            if (j) {
                cJSON_Delete(o->cached);
                o->cached = j;
                o->cached_at_us = now_us;
                o->cached_rows = rows;
            }
        }
        if (o->cached) out = cJSON_Duplicate(o->cached, 1);
    } else if (o->last) {
        out = cJSON_Duplicate(o->last, 1);
    }
    pthread_mutex_unlock(&o->mu);
    return out;
}

void inf__mon_online_counts(inf__mon_online *o, uint64_t *window_rows, uint64_t *total_rows) {
    pthread_mutex_lock(&o->mu);
    *window_rows = o->window_rows;
    *total_rows = o->total_rows;
    pthread_mutex_unlock(&o->mu);
}
