/*
 * online.c -- rolling drift windows (online.h): one mutex per served model
 * version, held to add a request's rows or to compute a drift.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "monitor/online.h"

#define REFRESH_US 1000000 /* the current window's drift is recomputed at most once a second */

struct inf__mon_online {
    pthread_mutex_t mu;
    char model[160], version[64];
    inf__mon_profile *base;
    inf__mon_profile *cur;   /* the current window's profile */
    int64_t window_us, start_us;
    int max_rows;
    uint64_t window_rows, total_rows;
    cJSON *last;             /* drift of the last complete window, or NULL */
    inf__mon_profile *prev;  /* the last complete window, until its drift is asked for (never on the request path) */
    int64_t prev_start_us;
    uint64_t prev_rows;
    int64_t taken_start_us;  /* the complete window take_complete last answered (INT64_MIN: none) */
    cJSON *cached;           /* drift of the current window as of cached_at_us */
    int64_t cached_at_us;
    uint64_t cached_rows;
    /* add_scored's map from a feature / prediction field (by name, as last
     * seen) to a baseline column index (-1: not profiled) */
    char **feat_names, **pred_names;
    int *feat_idx, *pred_idx;
    int n_feat, n_pred;
    /* add_matrix's map (the tensor endpoint's columns), kept apart from add_scored's */
    char **mat_names;
    int *mat_idx, n_mat;
    char **maty_names; /* ... and of its spec outputs */
    int *maty_idx, n_maty;
};

inf_status inf__mon_online_new(inf__mon_profile *baseline, int64_t window_us, int max_rows, const char *model,
                               const char *version, inf__mon_online **out) {
    *out = NULL;
    inf__mon_online *o = calloc(1, sizeof *o);
    if (!o || inf__mon_profile_new_like(baseline, &o->cur)) {
        free(o);
        inf__mon_profile_free(baseline);
        return INF_ENOMEM;
    }
    pthread_mutex_init(&o->mu, NULL);
    snprintf(o->model, sizeof o->model, "%s", model ? model : "");
    snprintf(o->version, sizeof o->version, "%s", version ? version : "");
    o->base = baseline;
    o->window_us = window_us > 0 ? window_us : 60000000;
    o->max_rows = max_rows > 0 ? max_rows : INF__MON_SAMPLE_MAX;
    o->taken_start_us = INT64_MIN;
    *out = o;
    return INF_OK;
}

void inf__mon_online_free(inf__mon_online *o) {
    if (!o) return;
    pthread_mutex_destroy(&o->mu);
    inf__mon_profile_free(o->base);
    inf__mon_profile_free(o->cur);
    cJSON_Delete(o->last);
    inf__mon_profile_free(o->prev);
    cJSON_Delete(o->cached);
    for (int i = 0; i < o->n_feat; i++) free(o->feat_names[i]);
    for (int i = 0; i < o->n_pred; i++) free(o->pred_names[i]);
    free(o->feat_names);
    free(o->pred_names);
    for (int i = 0; i < o->n_mat; i++)
        free(o->mat_names[i]);
    free(o->feat_idx);
    free(o->pred_idx);
    free(o->mat_names);
    free(o->mat_idx);
    for (int i = 0; i < o->n_maty; i++)
        free(o->maty_names[i]);
    free(o->maty_names);
    free(o->maty_idx);
    free(o);
}

static int64_t window_start(const inf__mon_online *o, int64_t t) {
    int64_t q = t / o->window_us;
    if (t % o->window_us && t < 0) q--;
    return q * o->window_us;
}

static cJSON *drift_of(inf__mon_online *o, inf__mon_profile *p, int64_t start, uint64_t observed, int complete) {
    cJSON *j = inf__mon_drift_json(o->base, p, o->model, o->version);
    if (!j) return NULL;
    cJSON_AddNumberToObject(j, "start", (double)start / 1e6);
    cJSON_AddNumberToObject(j, "end", (double)(start + o->window_us) / 1e6);
    cJSON_AddBoolToObject(j, "complete", complete);
    cJSON_AddNumberToObject(j, "rows_observed", (double)observed);
    return j;
}

/* Closes the current window when now is past it (lock held). */
static void roll(inf__mon_online *o, int64_t now_us) {
    int64_t start = window_start(o, now_us);
    if (start == o->start_us) return;
    inf__mon_profile *fresh;
    if (inf__mon_profile_new_like(o->base, &fresh) == INF_OK) {
        if (inf__mon_profile_rows(o->cur) > 0) { /* keep it; its drift is computed when asked for */
            inf__mon_profile_free(o->prev);
            cJSON_Delete(o->last);
            o->last = NULL;
            o->prev = o->cur;
            o->prev_start_us = o->start_us;
            o->prev_rows = o->window_rows;
        } else {
            inf__mon_profile_free(o->cur);
        }
        o->cur = fresh;
    }
    o->start_us = start;
    o->window_rows = 0;
    cJSON_Delete(o->cached);
    o->cached = NULL;
}

/* The last complete window's drift, computed once (lock held). */
static cJSON *last_complete(inf__mon_online *o) {
    if (!o->last && o->prev && (o->last = drift_of(o, o->prev, o->prev_start_us, o->prev_rows, 1)) != NULL) {
        inf__mon_profile_free(o->prev);
        o->prev = NULL;
    }
    return o->last;
}

cJSON *inf__mon_online_take_complete(inf__mon_online *o, int64_t now_us) {
    cJSON *out = NULL;
    pthread_mutex_lock(&o->mu);
    roll(o, now_us);
    if ((o->prev || o->last) && o->prev_start_us != o->taken_start_us && last_complete(o)) {
        out = cJSON_Duplicate(o->last, 1);
        if (out) o->taken_start_us = o->prev_start_us;
    }
    pthread_mutex_unlock(&o->mu);
    return out;
}

cJSON *inf__mon_online_drift(inf__mon_online *o, int64_t now_us, int min_rows) {
    cJSON *out = NULL;
    pthread_mutex_lock(&o->mu);
    roll(o, now_us);
    uint64_t rows = inf__mon_profile_rows(o->cur);
    if (rows > 0 && rows >= (uint64_t)(min_rows > 0 ? min_rows : 1)) {
        if (!o->cached || (now_us - o->cached_at_us >= REFRESH_US && rows != o->cached_rows)) {
            cJSON *j = drift_of(o, o->cur, o->start_us, o->window_rows, 0);
            if (j) {
                cJSON_Delete(o->cached);
                o->cached = j;
                o->cached_at_us = now_us;
                o->cached_rows = rows;
            }
        }
        if (o->cached) out = cJSON_Duplicate(o->cached, 1);
    } else if (last_complete(o)) {
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

/* Keeps *names / *idx mapping n names (name_of(ctx, i)) to baseline
 * columns: rebuilt only when a name differs from the last call's (lock held). */
static inf_status remap(inf__mon_online *o, int n, const char *(*name_of)(const void *, int), const void *ctx,
                        char ***names, int **idx, int *n_cached) {
    int same = n == *n_cached;
    for (int i = 0; same && i < n; i++) {
        const char *nm = name_of(ctx, i);
        same = nm && !strcmp(nm, (*names)[i]);
    }
    if (same) return INF_OK;
    for (int i = 0; i < *n_cached; i++) free((*names)[i]);
    free(*names);
    free(*idx);
    *n_cached = 0;
    *names = calloc((size_t)(n ? n : 1), sizeof **names);
    *idx = calloc((size_t)(n ? n : 1), sizeof **idx);
    if (!*names || !*idx) return INF_ENOMEM;
    for (int i = 0; i < n; i++) {
        const char *nm = name_of(ctx, i);
        if (!((*names)[i] = strdup(nm ? nm : ""))) {
            *n_cached = i;
            return INF_ENOMEM;
        }
        *n_cached = i + 1;
        (*idx)[i] = nm ? inf__mon_profile_find(o->base, nm) : -1;
    }
    return INF_OK;
}

static const char *feat_name(const void *ex, int j) { return inf_pipeline_exec_feature_column(ex, j); }
static const char *pred_name(const void *pred, int j) { return inf_record_batch_field_name(pred, j); }

inf_status inf__mon_online_add_scored(inf__mon_online *o, const inf_pipeline_exec *ex, const inf_record_batch *pred,
                                      int64_t now_us) {
    int nr = 0, nc = 0, n = inf_pipeline_n_accepted(ex), nf = inf_record_batch_n_fields(pred);
    const double *x = inf_pipeline_features(ex, &nr, &nc);
    if (n > inf_record_batch_n_rows(pred)) n = inf_record_batch_n_rows(pred);
    if (!x) nc = 0;
    inf_status st;
    pthread_mutex_lock(&o->mu);
    roll(o, now_us);
    o->window_rows += (uint64_t)n;
    o->total_rows += (uint64_t)n;
    if ((st = remap(o, nc, feat_name, ex, &o->feat_names, &o->feat_idx, &o->n_feat)) ||
        (st = remap(o, nf, pred_name, pred, &o->pred_names, &o->pred_idx, &o->n_pred))) {
        pthread_mutex_unlock(&o->mu);
        return st;
    }
    for (int k = 0; k < n && k < nr && st == INF_OK && inf__mon_profile_rows(o->cur) < (uint64_t)o->max_rows; k++) {
        const double *row = x + (size_t)k * (size_t)nc;
        for (int j = 0; j < nc && st == INF_OK; j++)
            if (o->feat_idx[j] >= 0) st = inf__mon_profile_add_number(o->cur, o->feat_idx[j], row[j]);
        for (int j = 0; j < nf && st == INF_OK; j++)
            if (o->pred_idx[j] >= 0) st = inf__mon_profile_add_value(o->cur, o->pred_idx[j], inf_record_batch_get(pred, k, j));
        inf__mon_profile_end_row(o->cur);
    }
    pthread_mutex_unlock(&o->mu);
    return st;
}

static const char *mat_name(const void *names, int j) { return ((const char *const *)names)[j]; }

inf_status inf__mon_online_add_matrix(inf__mon_online *o, const double *x, int n_rows, int n_cols,
                                      const char *const *names, const inf_value *y, int n_y, const char *const *y_names,
                                      int64_t now_us) {
    inf_status st;
    if (!y) n_y = 0;
    pthread_mutex_lock(&o->mu);
    roll(o, now_us);
    o->window_rows += (uint64_t)n_rows;
    o->total_rows += (uint64_t)n_rows;
    if ((st = remap(o, n_cols, mat_name, names, &o->mat_names, &o->mat_idx, &o->n_mat)) ||
        (st = remap(o, n_y, mat_name, y_names, &o->maty_names, &o->maty_idx, &o->n_maty))) {
        pthread_mutex_unlock(&o->mu);
        return st;
    }
    for (int k = 0; k < n_rows && st == INF_OK && inf__mon_profile_rows(o->cur) < (uint64_t)o->max_rows; k++) {
        const double *row = x + (size_t)k * (size_t)n_cols;
        for (int j = 0; j < n_cols && st == INF_OK; j++)
            if (o->mat_idx[j] >= 0) st = inf__mon_profile_add_number(o->cur, o->mat_idx[j], row[j]);
        const inf_value *yr = n_y ? y + (size_t)k * (size_t)n_y : NULL;
        for (int j = 0; j < n_y && st == INF_OK; j++)
            if (o->maty_idx[j] >= 0) st = inf__mon_profile_add_value(o->cur, o->maty_idx[j], &yr[j]);
        inf__mon_profile_end_row(o->cur);
    }
    pthread_mutex_unlock(&o->mu);
    return st;
}
