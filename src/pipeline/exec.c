/*
 * exec.c -- the per-thread executor: records -> (validate, lookups,
 * transforms) -> model input tensors, and model outputs -> prediction records.
 *
 * Hot path (prepare, no lookups): one pass per declared input over the batch
 * rows converting values into column slots (with schema checks), one call
 * per transform over whole columns, one gather of accepted rows into each
 * tensor.  All buffers belong to the executor and grow to the largest batch
 * seen; string values converted from numbers go to an arena reset per
 * batch, so a warm executor allocates nothing.  Per-batch counters are
 * kept locally and added to the pipeline's atomics once per batch.
 * Callers: runners (batch, serve, stream), `infera features`, fit.c, tests.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "io/record_int.h"
#include "pipeline/pipeline_int.h"

enum { FINISH_CACHE = 16, FINISH_CACHE_COLS = 16 };

typedef struct rejection {
    int row;
    const char *field;
    char msg[200];
} rejection;

/* Lookup state (lookup joins of the spec): connections, per-row keys and
 * their dedup hash, the point-in-time field and history source. */
typedef struct exec_lookups {
    lookup_conn **conns;
    lookup_result *results;
    const char **keys;
    uint32_t *klen;
    double *kt;
    int *row_key;
    int *key_hash;
    int key_hash_size;
    double now_s;
    char *pit_field;
    char *history_uri;
} exec_lookups;

/* What finish learnt of the output batch's layout, reused while it holds
 * (see cached_field), and the model outputs as finish maps them: the
 * tensors, or dense views of sequence-of-map outputs (map_outputs.c). */
typedef struct exec_finish {
    int out_field[FINISH_CACHE];
    int col_field[FINISH_CACHE][FINISH_CACHE_COLS];
    int lineage_field[3];
    int n_model_outputs;
    const inf_tensor **view;
    inf__map_columns *map_cols;
} exec_finish;

/* The default pipeline (no spec): the model's inputs matched by name to the
 * batch's fields. */
typedef struct exec_default {
    int ready, n_def, n_ignored;
    char **names;
    int *batch_field;
} exec_default;

/* Per-field counters of this batch, added to the pipeline's atomics once. */
typedef struct exec_counters {
    uint64_t *f_invalid, *f_rejected, *f_missing;
} exec_counters;

struct inf_pipeline_exec {
    const inf_pipeline *p;
    /* the batch as columns: values, accepted rows, rejections */
    int cap, n_rows;
    double *num;
    const char **str;
    uint32_t *len;
    inf__rarena arena;
    uint8_t *ok;
    int *accepted;
    int n_accepted;
    rejection *rej;
    int n_rej, cap_rej;
    int *batch_field;      /* per input */
    exec_lookups lk;
    /* model inputs */
    double *feat;          /* n_accepted x n_feature_cols, pre-cast */
    size_t feat_cap;
    inf_tensor *tensors;   /* per spec model input */
    const inf_tensor **tensor_ptrs; /* per model input index */
    int n_tensor_ptrs;
    size_t *tensor_caps;
    exec_finish fin;
    exec_counters count;
    exec_default def;
    int map_each_batch; /* inf_pipeline_exec_map_each_batch */
    const inf_record_batch *last_batch;
};

inf_status inf_pipeline_exec_new(const inf_pipeline *p, inf_pipeline_exec **out, inf_error *err) {
    *out = NULL;
    inf_pipeline_exec *e = calloc(1, sizeof *e);
    if (!e) return inf_error_set(err, INF_ENOMEM, "out of memory");
    e->p = p;
    int nf = p->n_field_stats ? p->n_field_stats : 1;
    int n_model = p->model ? inf_model_n_inputs(p->model) : p->n_model_inputs;
    e->n_tensor_ptrs = n_model;
    e->fin.n_model_outputs = p->model ? inf_model_n_outputs(p->model) : 0;
    memset(e->fin.out_field, 0xff, sizeof e->fin.out_field); /* -1: not known */
    memset(e->fin.col_field, 0xff, sizeof e->fin.col_field);
    memset(e->fin.lineage_field, 0xff, sizeof e->fin.lineage_field);
    e->batch_field = calloc((size_t)(p->n_inputs + 1), sizeof *e->batch_field);
    e->lk.conns = calloc((size_t)(p->n_lookups + 1), sizeof *e->lk.conns);
    e->lk.results = calloc((size_t)(p->n_lookups + 1), sizeof *e->lk.results);
    e->tensors = calloc((size_t)(p->n_model_inputs + 1), sizeof *e->tensors);
    e->tensor_caps = calloc((size_t)(p->n_model_inputs + 1), sizeof *e->tensor_caps);
    e->tensor_ptrs = calloc((size_t)(n_model + 1), sizeof *e->tensor_ptrs);
    e->count.f_invalid = calloc((size_t)nf, sizeof *e->count.f_invalid);
    e->count.f_rejected = calloc((size_t)nf, sizeof *e->count.f_rejected);
    e->count.f_missing = calloc((size_t)nf, sizeof *e->count.f_missing);
    e->fin.view = calloc((size_t)(e->fin.n_model_outputs + 1), sizeof *e->fin.view);
    e->fin.map_cols = calloc((size_t)(e->fin.n_model_outputs + 1), sizeof *e->fin.map_cols);
    if (!e->batch_field || !e->lk.conns || !e->lk.results || !e->tensors || !e->tensor_caps || !e->tensor_ptrs ||
        !e->count.f_invalid || !e->count.f_rejected || !e->count.f_missing || !e->fin.view || !e->fin.map_cols) {
        inf_pipeline_exec_free(e);
        return inf_error_set(err, INF_ENOMEM, "out of memory");
    }
    for (int i = 0; i < p->n_lookups; i++) {
        inf_status st = inf__lookup_open(p, &p->lookups[i], NULL, &e->lk.conns[i], err);
        if (st) {
            inf_pipeline_exec_free(e);
            return st;
        }
    }
    *out = e;
    return INF_OK;
}

void inf_pipeline_exec_free(inf_pipeline_exec *e) {
    if (!e) return;
    for (int i = 0; i < e->p->n_lookups; i++) {
        if (e->lk.conns) inf__lookup_close(e->lk.conns[i]);
        if (e->lk.results) inf__lookup_result_free(&e->lk.results[i]);
    }
    free(e->lk.conns);
    free(e->lk.results);
    free(e->num);
    free(e->str);
    free(e->len);
    inf__rarena_deinit(&e->arena);
    free(e->ok);
    free(e->accepted);
    free(e->rej);
    free(e->batch_field);
    free(e->lk.keys);
    free(e->lk.klen);
    free(e->lk.kt);
    free(e->lk.row_key);
    free(e->lk.key_hash);
    free(e->lk.pit_field);
    free(e->lk.history_uri);
    free(e->feat);
    if (e->tensors)
        for (int i = 0; i < e->p->n_model_inputs; i++) free(e->tensors[i].data);
    free(e->tensors);
    free(e->tensor_ptrs);
    free(e->tensor_caps);
    free(e->count.f_invalid);
    free(e->count.f_rejected);
    free(e->count.f_missing);
    if (e->def.names)
        for (int i = 0; i < e->def.n_def; i++) free(e->def.names[i]);
    free(e->def.names);
    free(e->def.batch_field);
    if (e->fin.map_cols)
        for (int i = 0; i < e->fin.n_model_outputs; i++) inf__map_columns_free(&e->fin.map_cols[i]);
    free(e->fin.map_cols);
    free(e->fin.view);
    free(e);
}

void inf_pipeline_exec_set_now(inf_pipeline_exec *e, double now_s) { e->lk.now_s = now_s; }

void inf_pipeline_exec_map_each_batch(inf_pipeline_exec *e, int on) { e->map_each_batch = on != 0; }

inf_status inf_pipeline_exec_set_point_in_time(inf_pipeline_exec *e, const char *as_of_field, const char *history_uri,
                                               inf_error *err) {
    free(e->lk.pit_field);
    free(e->lk.history_uri);
    e->lk.pit_field = as_of_field ? strdup(as_of_field) : NULL;
    e->lk.history_uri = history_uri ? strdup(history_uri) : NULL;
    if ((as_of_field && !e->lk.pit_field) || (history_uri && !e->lk.history_uri)) return inf_error_set(err, INF_ENOMEM, "out of memory");
    for (int i = 0; i < e->p->n_lookups; i++) {
        if (!as_of_field) break;
        if (!e->p->lookups[i].as_of)
            return inf_error_set(err, INF_EINVAL, "lookup '%s': point-in-time lookups need its 'as_of' column", e->p->lookups[i].name);
        inf__lookup_close(e->lk.conns[i]);
        e->lk.conns[i] = NULL;
        inf_status st = inf__lookup_open(e->p, &e->p->lookups[i], history_uri, &e->lk.conns[i], err);
        if (st) return st;
    }
    return INF_OK;
}

/* ---- buffers ---- */

static inf_status reserve(inf_pipeline_exec *e, int n) {
    if (n <= e->cap) return INF_OK;
    const inf_pipeline *p = e->p;
    int cap = e->cap ? e->cap : 64;
    while (cap < n) cap *= 2;
    size_t ns = (size_t)(p->n_num_slots ? p->n_num_slots : 1) * cap;
    size_t ss = (size_t)(p->n_str_slots ? p->n_str_slots : 1) * cap;
    double *num = realloc(e->num, ns * sizeof *num);
    if (num) e->num = num;
    const char **str = realloc(e->str, ss * sizeof *str);
    if (str) e->str = str;
    uint32_t *len = realloc(e->len, ss * sizeof *len);
    if (len) e->len = len;
    uint8_t *ok = realloc(e->ok, (size_t)cap);
    if (ok) e->ok = ok;
    int *acc = realloc(e->accepted, (size_t)cap * sizeof *acc);
    if (acc) e->accepted = acc;
    const char **keys = realloc(e->lk.keys, (size_t)cap * sizeof *keys);
    if (keys) e->lk.keys = keys;
    uint32_t *klen = realloc(e->lk.klen, (size_t)cap * sizeof *klen);
    if (klen) e->lk.klen = klen;
    double *kt = realloc(e->lk.kt, (size_t)cap * sizeof *kt);
    if (kt) e->lk.kt = kt;
    int *rk = realloc(e->lk.row_key, (size_t)cap * sizeof *rk);
    if (rk) e->lk.row_key = rk;
    if (!num || !str || !len || !ok || !acc || !keys || !klen || !kt || !rk) return INF_ENOMEM;
    e->cap = cap;
    return INF_OK;
}

static void reject(inf_pipeline_exec *e, int row, int field_stat, const char *field, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
static void reject(inf_pipeline_exec *e, int row, int field_stat, const char *field, const char *fmt, ...) {
    if (!e->ok[row]) return; /* first reason only */
    e->ok[row] = 0;
    if (field_stat >= 0) e->count.f_rejected[field_stat]++;
    if (e->n_rej == e->cap_rej) {
        int cap = e->cap_rej ? e->cap_rej * 2 : 16;
        rejection *r = realloc(e->rej, (size_t)cap * sizeof *r);
        if (!r) return; /* the row stays rejected; its message is lost */
        e->rej = r;
        e->cap_rej = cap;
    }
    rejection *r = &e->rej[e->n_rej++];
    r->row = row;
    r->field = field;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->msg, sizeof r->msg, fmt, ap);
    va_end(ap);
}

/* ---- inputs ---- */

static const char *value_text(const inf_value *v, char *buf, size_t size, uint32_t *len) {
    switch (v->type) {
    case INF_FIELD_STRING: *len = v->u.s.len; return v->u.s.ptr;
    case INF_FIELD_INT: *len = (uint32_t)snprintf(buf, size, "%lld", (long long)v->u.i); return buf;
    case INF_FIELD_FLOAT: *len = (uint32_t)snprintf(buf, size, "%.17g", v->u.f); return buf;
    case INF_FIELD_BOOL: *len = (uint32_t)snprintf(buf, size, "%s", v->u.b ? "true" : "false"); return buf;
    case INF_FIELD_TIMESTAMP: inf_format_timestamp(v->u.ts, buf, size); *len = (uint32_t)strlen(buf); return buf;
    default: return NULL;
    }
}

static int in_categories(const pinput *in, const char *s, uint32_t len, double num, int numeric) {
    if (numeric) return inf__catset_find_number(&in->cat_set, in->cat_num, num) >= 0;
    return inf__catset_find_text(&in->cat_set, (const char *const *)in->categories, NULL, s, len) >= 0;
}

static inf_status read_input(inf_pipeline_exec *e, const inf_record_batch *b, int i, int r0, int n) {
    const inf_pipeline *p = e->p;
    const pinput *in = &p->inputs[i];
    const pcol *col = &p->cols[in->col];
    int f = e->batch_field[i];
    const char *why = NULL;
    char buf[64];
    if (col->kind == COL_STR) {
        const char **sv = e->str + (size_t)col->slot * e->cap;
        uint32_t *lv = e->len + (size_t)col->slot * e->cap;
        for (int r = r0; r < n; r++) {
            const inf_value *v = f >= 0 ? inf__batch_at(b, r, f) : NULL;
            const char *s = NULL;
            uint32_t len = 0;
            why = NULL;
            if (v && v->type != INF_FIELD_NULL) {
                s = value_text(v, buf, sizeof buf, &len);
                if (s == buf) { /* a number given for a string field: keep its text */
                    char *copy = inf__rarena_alloc(&e->arena, len + 1);
                    if (!copy) return INF_ENOMEM;
                    memcpy(copy, buf, len + 1);
                    s = copy;
                }
                if (in->n_categories && !in_categories(in, s, len, 0, 0)) why = "is not one of the allowed categories";
            } else {
                e->count.f_missing[i]++;
                if (in->required) why = "is missing (required)";
            }
            if (why) {
                e->count.f_invalid[i]++;
                if (in->policy == POLICY_REJECT)
                    reject(e, r, i, in->name, "field '%s' %s", in->name, why);
                s = NULL;
            }
            if (!s && in->has_default) {
                s = in->def_str;
                len = (uint32_t)strlen(s);
            }
            sv[r] = s;
            lv[r] = s ? len : 0;
        }
        return INF_OK;
    }
    double *out = e->num + (size_t)col->slot * e->cap;
    for (int r = r0; r < n; r++) {
        const inf_value *v = f >= 0 ? inf__batch_at(b, r, f) : NULL;
        double x = NAN;
        why = NULL;
        if (!v || v->type == INF_FIELD_NULL) {
            e->count.f_missing[i]++;
            if (in->required) why = "is missing (required)";
        } else if (col->kind == COL_TS) {
            int64_t us;
            if (inf_value_to_timestamp(v, &us)) why = "is not a timestamp (ISO-8601 or epoch seconds)";
            else x = (double)us / 1e6;
        } else if (in->type == INF_FIELD_BOOL) {
            if (v->type == INF_FIELD_BOOL) x = v->u.b;
            else if (v->type == INF_FIELD_INT && (v->u.i == 0 || v->u.i == 1)) x = (double)v->u.i;
            else if (v->type == INF_FIELD_STRING && v->u.s.len == 4 && !memcmp(v->u.s.ptr, "true", 4)) x = 1;
            else if (v->type == INF_FIELD_STRING && v->u.s.len == 5 && !memcmp(v->u.s.ptr, "false", 5)) x = 0;
            else why = "is not a bool";
        } else {
            if (v->type == INF_FIELD_FLOAT) x = v->u.f;
            else if (v->type == INF_FIELD_INT) x = (double)v->u.i;
            else if (v->type == INF_FIELD_BOOL) x = v->u.b;
            else if (v->type == INF_FIELD_TIMESTAMP || inf_value_to_double(v, &x)) why = "is not a number";
            if (!why && in->type == INF_FIELD_INT && x != floor(x)) why = "is not an integer";
            if (!why && x != x && in->required) why = "is missing (NaN, required)";
        }
        if (!why && x == x) {
            if (in->has_min && x < in->min) why = "is below its minimum";
            else if (in->has_max && x > in->max) why = "is above its maximum";
            else if (in->n_categories && !in_categories(in, NULL, 0, x, 1)) why = "is not one of the allowed categories";
        }
        if (why) {
            e->count.f_invalid[i]++;
            if (in->policy == POLICY_REJECT) reject(e, r, i, in->name, "field '%s' %s", in->name, why);
            x = NAN;
        }
        if (x != x && in->has_default) x = in->def_num;
        out[r] = x;
    }
    return INF_OK;
}

/* ---- lookups ---- */

/* A required lookup found nothing usable for row r (key k, -1 when the key
 * field is null; stale: found but older than max_age_s).  The key is named
 * unless its input field is sensitive. */
static void reject_lookup(inf_pipeline_exec *e, int r, int stat, const plookup *lk, int k, int stale) {
    const inf_pipeline *p = e->p;
    const pcol *kc = &p->cols[lk->key_col];
    const char *field = lk->key_input;
    if (k < 0) {
        reject(e, r, stat, field, "lookup %s: key field '%s' is missing", lk->name, field);
        return;
    }
    const char *what = stale ? "is stale (older than max_age_s)" : "not found";
    if (kc->source == SRC_INPUT && p->inputs[kc->index].sensitive)
        reject(e, r, stat, field, "lookup %s: key %s (field '%s' is sensitive)", lk->name, what, field);
    else
        reject(e, r, stat, field, "lookup %s: key %.*s %s", lk->name, (int)(e->lk.klen[k] > 100 ? 100 : e->lk.klen[k]),
               e->lk.keys[k], what);
}

static inf_status run_lookup(inf_pipeline_exec *e, const inf_record_batch *b, int li, int n, inf_error *err) {
    const inf_pipeline *p = e->p;
    const plookup *lk = &p->lookups[li];
    const pcol *kc = &p->cols[lk->key_col];
    int stat = p->n_inputs + li;
    int pit = e->lk.pit_field != NULL;
    /* the record times, in point-in-time mode */
    double *times = NULL;
    if (pit) {
        times = e->lk.kt;
        int tc = -1;
        for (int c = 0; c < p->n_cols; c++)
            if (p->cols[c].source == SRC_INPUT && !strcmp(p->cols[c].name, e->lk.pit_field) && p->cols[c].kind != COL_STR) tc = c;
        int f = tc < 0 ? inf_record_batch_find_field(b, e->lk.pit_field) : -1;
        if (tc < 0 && f < 0) return inf_error_set(err, INF_EINVAL, "--as-of: the records have no field '%s'", e->lk.pit_field);
        for (int r = 0; r < n; r++) {
            if (tc >= 0) {
                times[r] = e->num[(size_t)p->cols[tc].slot * e->cap + r];
            } else {
                int64_t us;
                times[r] = inf_value_to_timestamp(inf__batch_at(b, r, f), &us) ? NAN : (double)us / 1e6;
            }
            if (times[r] != times[r]) reject(e, r, -1, e->lk.pit_field, "field '%s' (the as-of time) is missing or not a timestamp", e->lk.pit_field);
        }
    }
    /* keys of the accepted rows: unique ones (or one per row in point-in-time mode) */
    int n_keys = 0;
    int hsize = 16;
    while (hsize < n * 2) hsize *= 2;
    if (!pit && hsize > e->lk.key_hash_size) {
        int *h = realloc(e->lk.key_hash, (size_t)hsize * sizeof *h);
        if (!h) return inf_error_set(err, INF_ENOMEM, "out of memory");
        e->lk.key_hash = h;
        e->lk.key_hash_size = hsize;
    }
    if (!pit) memset(e->lk.key_hash, 0, (size_t)hsize * sizeof *e->lk.key_hash);
    char buf[64];
    for (int r = 0; r < n; r++) {
        e->lk.row_key[r] = -1;
        if (!e->ok[r]) continue;
        const char *s;
        uint32_t len;
        if (kc->kind == COL_STR) {
            s = e->str[(size_t)kc->slot * e->cap + r];
            len = e->len[(size_t)kc->slot * e->cap + r];
            if (!s) continue;
        } else {
            double v = e->num[(size_t)kc->slot * e->cap + r];
            if (v != v) continue;
            len = (uint32_t)snprintf(buf, sizeof buf, "%.17g", v);
            char *copy = inf__rarena_alloc(&e->arena, len + 1);
            if (!copy) return inf_error_set(err, INF_ENOMEM, "out of memory");
            memcpy(copy, buf, len + 1);
            s = copy;
        }
        int k = -1;
        if (!pit) {
            uint32_t mask = (uint32_t)hsize - 1;
            uint32_t h = (uint32_t)inf_pipeline_hash_string(s, len) & mask;
            for (;; h = (h + 1) & mask) {
                int slot = e->lk.key_hash[h];
                if (!slot) {
                    e->lk.key_hash[h] = n_keys + 1;
                    break;
                }
                if (e->lk.klen[slot - 1] == len && !memcmp(e->lk.keys[slot - 1], s, len)) {
                    k = slot - 1;
                    break;
                }
            }
        }
        if (k < 0) {
            k = n_keys++;
            e->lk.keys[k] = s;
            e->lk.klen[k] = len;
            if (pit) times[k] = times[r]; /* compacted in place: k <= r */
        }
        e->lk.row_key[r] = k;
    }
    lookup_result *res = &e->lk.results[li];
    inf_status st = INF_OK;
    if (n_keys) {
        st = pit ? inf__lookup_fetch_as_of(e->lk.conns[li], e->lk.keys, e->lk.klen, times, n_keys, res, err)
                 : inf__lookup_fetch(e->lk.conns[li], e->lk.keys, e->lk.klen, n_keys, res, err);
        if (st) return st;
        atomic_fetch_add(&((inf_pipeline *)p)->n_lookups_done, 1);
    }
    double now = e->lk.now_s;
    if (now == 0) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        now = (double)ts.tv_sec + ts.tv_nsec / 1e9;
    }
    uint64_t missing = 0;
    for (int r = 0; r < n; r++) {
        int k = e->lk.row_key[r];
        int found = k >= 0 && res->found[k];
        if (found && lk->max_age_s > 0) {
            double t_ref = pit ? times[k]
                         : lk->event_time_col >= 0 ? e->num[(size_t)p->cols[lk->event_time_col].slot * e->cap + r]
                                                   : now;
            if (t_ref != t_ref) t_ref = now; /* the record has no event time: the wall clock, as without event_time */
            double as_of = res->as_of[k];
            if (as_of != as_of || t_ref - as_of > lk->max_age_s) found = 0; /* stale -> missing */
        }
        if (!found && e->ok[r]) {
            missing++;
            if (lk->required) reject_lookup(e, r, stat, lk, k, k >= 0 && res->found[k]);
        }
        for (int j = 0; j < lk->n_features; j++) {
            double v = found ? res->values[(size_t)k * lk->n_features + j] : NAN;
            if (v != v) v = lk->defaults[j];
            e->num[(size_t)p->cols[lk->first_col + j].slot * e->cap + r] = v;
        }
    }
    e->count.f_missing[stat] += missing;
    atomic_fetch_add(&((inf_pipeline *)p)->n_lookup_missing, missing);
    return INF_OK;
}

/* ---- default pipeline ---- */

/* Forgets the fields a failed default_setup chose (it runs again on the next batch). */
static void default_forget(inf_pipeline_exec *e) {
    if (e->def.names)
        for (int i = 0; i < e->def.n_def; i++) free(e->def.names[i]);
    free(e->def.names);
    free(e->def.batch_field);
    e->def.names = NULL;
    e->def.batch_field = NULL;
    e->def.n_def = e->def.n_ignored = 0;
}

/* Is field f a numeric field of these records?  Yes unless more of its
 * non-null values are text (or timestamps) than numbers: one corrupt cell in
 * a numeric column is that row's rejection ("field 'a' is not a number"),
 * not a column dropped from the model's input for the whole job. */
static int field_is_numeric(const inf_record_batch *b, int f) {
    int numbers = 0, others = 0;
    for (int r = 0; r < b->n_rows; r++) {
        const inf_value *v = inf__batch_at(b, r, f);
        double x;
        if (v->type == INF_FIELD_NULL) continue;
        if (v->type == INF_FIELD_TIMESTAMP || (v->type == INF_FIELD_STRING && inf_value_to_double(v, &x)))
            others++;
        else
            numbers++;
    }
    return others <= numbers;
}

static inf_status default_setup(inf_pipeline_exec *e, const inf_record_batch *b, inf_error *err) {
    const inf_pipeline *p = e->p;
    int nf = b->n_fields;
    default_forget(e);
    e->def.names = calloc((size_t)(nf ? nf : 1), sizeof *e->def.names);
    e->def.batch_field = calloc((size_t)(nf ? nf : 1), sizeof *e->def.batch_field);
    if (!e->def.names || !e->def.batch_field) return inf_error_set(err, INF_ENOMEM, "out of memory");
    int n_numeric = 0;
    for (int f = 0; f < nf; f++) {
        if (p->id_column && !strcmp(p->id_column, b->names[f])) continue;
        if (!field_is_numeric(b, f)) continue;
        int want = p->model_inputs[0].width;
        if (want >= 0 && n_numeric >= want) {
            e->def.n_ignored++;
            continue;
        }
        if (!(e->def.names[n_numeric] = strdup(b->names[f]))) return inf_error_set(err, INF_ENOMEM, "out of memory");
        n_numeric++;
        e->def.n_def = n_numeric;
    }
    int want = p->model_inputs[0].width;
    if (want >= 0 && n_numeric < want)
        return inf_error_set(err, INF_ETYPE, "default pipeline: the records have %d numeric fields%s%s%s but the model input '%s' needs %d; write a pipeline spec",
                    n_numeric, p->id_column ? " (besides the id '" : "", p->id_column ? p->id_column : "",
                    p->id_column ? "')" : "", p->model_inputs[0].name, want);
    if (n_numeric == 0) return inf_error_set(err, INF_ETYPE, "default pipeline: the records have no numeric fields");
    e->def.ready = 1;
    return INF_OK;
}

static inf_status default_prepare(inf_pipeline_exec *e, const inf_record_batch *b, int n, inf_error *err) {
    inf_status st;
    if (e->map_each_batch) e->def.ready = 0;
    if (!e->def.ready && (st = default_setup(e, b, err))) return st;
    size_t need = (size_t)n * e->def.n_def;
    if (need > e->feat_cap) {
        double *f = realloc(e->feat, need * sizeof *f);
        if (!f) return inf_error_set(err, INF_ENOMEM, "out of memory");
        e->feat = f;
        e->feat_cap = need;
    }
    for (int c = 0; c < e->def.n_def; c++) { /* the last batch's index first: batches of one source share a shape */
        int f = e->def.batch_field[c];
        if (!(f >= 0 && f < b->n_fields && !strcmp(b->names[f], e->def.names[c])))
            e->def.batch_field[c] = inf_record_batch_find_field(b, e->def.names[c]);
    }
    for (int r = 0; r < n; r++) {
        double *row = e->feat + (size_t)r * e->def.n_def;
        for (int c = 0; c < e->def.n_def; c++) {
            int f = e->def.batch_field[c];
            const inf_value *v = f >= 0 ? inf__batch_at(b, r, f) : NULL;
            double x = NAN;
            if (v && v->type != INF_FIELD_NULL && (v->type == INF_FIELD_TIMESTAMP || inf_value_to_double(v, &x)))
                reject(e, r, -1, e->def.names[c], "field '%s' is not a number", e->def.names[c]);
            row[c] = x;
        }
    }
    /* compact accepted rows */
    e->n_accepted = 0;
    for (int r = 0; r < n; r++) {
        if (!e->ok[r]) continue;
        if (e->n_accepted != r)
            memmove(e->feat + (size_t)e->n_accepted * e->def.n_def, e->feat + (size_t)r * e->def.n_def, (size_t)e->def.n_def * sizeof(double));
        e->accepted[e->n_accepted++] = r;
    }
    return INF_OK;
}

/* ---- tensors ---- */

/* A feature as an integer tensor element: truncated toward zero, NaN -> 0,
 * out of range -> the nearest representable value (a C cast would be
 * undefined there, and x86 and ARM would give different bits). */
static int64_t to_i64(double v) {
    if (v != v) return 0;
    if (v >= 9223372036854775807.0) return INT64_MAX;
    if (v <= -9223372036854775808.0) return INT64_MIN;
    return (int64_t)v;
}

static int32_t to_i32(double v) {
    if (v != v) return 0;
    if (v >= 2147483647.0) return INT32_MAX;
    if (v <= -2147483648.0) return INT32_MIN;
    return (int32_t)v;
}

static inf_status build_tensors(inf_pipeline_exec *e, int n_feat_cols, inf_error *err) {
    const inf_pipeline *p = e->p;
    int col0 = 0;
    for (int m = 0; m < p->n_model_inputs; m++) {
        const pmodel_input *t = &p->model_inputs[m];
        int width = p->is_default ? e->def.n_def : t->width;
        size_t esz = inf_dtype_size(t->dtype);
        size_t need = (size_t)e->n_accepted * width * esz;
        if (need > e->tensor_caps[m] || !e->tensors[m].data) {
            void *d = realloc(e->tensors[m].data, need ? need : esz);
            if (!d) return inf_error_set(err, INF_ENOMEM, "out of memory");
            e->tensors[m].data = d;
            e->tensor_caps[m] = need ? need : esz;
        }
        void *data = e->tensors[m].data;
        int64_t dims[2] = {e->n_accepted, width};
        inf_tensor_init_view(&e->tensors[m], t->dtype, 2, dims, data);
        for (int k = 0; k < e->n_accepted; k++) {
            const double *src = e->feat + (size_t)k * n_feat_cols + col0;
            size_t base = (size_t)k * width;
            switch (t->dtype) {
            case INF_DTYPE_F32:
                for (int c = 0; c < width; c++) ((float *)data)[base + c] = (float)src[c];
                break;
            case INF_DTYPE_F64:
                for (int c = 0; c < width; c++) ((double *)data)[base + c] = src[c];
                break;
            case INF_DTYPE_I64:
                for (int c = 0; c < width; c++) ((int64_t *)data)[base + c] = to_i64(src[c]);
                break;
            default:
                for (int c = 0; c < width; c++) ((int32_t *)data)[base + c] = to_i32(src[c]);
                break;
            }
        }
        col0 += width;
        int mi = t->model_index >= 0 ? t->model_index : m;
        if (mi < e->n_tensor_ptrs) e->tensor_ptrs[mi] = &e->tensors[m];
    }
    return INF_OK;
}

static int cmp_rejection(const void *a, const void *b) {
    return ((const rejection *)a)->row - ((const rejection *)b)->row;
}

static void flush_counters(inf_pipeline_exec *e, int n) {
    if (e->n_rej > 1) qsort(e->rej, (size_t)e->n_rej, sizeof *e->rej, cmp_rejection); /* by row */
    inf_pipeline *p = (inf_pipeline *)e->p;
    atomic_fetch_add(&p->n_records, (uint64_t)n);
    atomic_fetch_add(&p->n_rejected, (uint64_t)(n - e->n_accepted));
    for (int i = 0; i < p->n_field_stats; i++) {
        if (e->count.f_invalid[i]) atomic_fetch_add(&p->field_invalid[i], e->count.f_invalid[i]);
        if (e->count.f_rejected[i]) atomic_fetch_add(&p->field_rejected[i], e->count.f_rejected[i]);
        if (e->count.f_missing[i]) atomic_fetch_add(&p->field_missing[i], e->count.f_missing[i]);
        e->count.f_invalid[i] = e->count.f_rejected[i] = e->count.f_missing[i] = 0;
    }
}

inf_status inf_pipeline_prepare(inf_pipeline_exec *e, const inf_record_batch *b, const inf_tensor *const **inputs,
                                inf_error *err) {
    const inf_pipeline *p = e->p;
    int n = b->n_rows;
    inf_status st;
    if (inputs) *inputs = NULL;
    e->n_rej = 0;
    e->n_accepted = 0;
    e->n_rows = 0;
    e->last_batch = b;
    inf__rarena_reset(&e->arena);
    if (reserve(e, n)) return inf_error_set(err, INF_ENOMEM, "out of memory (batch of %d records)", n);
    e->n_rows = n;
    if (n) memset(e->ok, 1, (size_t)n); /* e->ok may be NULL for an empty batch */
    if (p->is_default) {
        if ((st = default_prepare(e, b, n, err))) return st;
        if ((st = build_tensors(e, e->def.n_def, err))) return st;
        flush_counters(e, n);
        if (inputs) *inputs = e->tensor_ptrs;
        return INF_OK;
    }
    /* row blocks keep the rows being read in cache while every input is converted */
    for (int i = 0; i < p->n_inputs; i++) {
        int f = e->batch_field[i];
        if (!(f >= 0 && f < b->n_fields && !strcmp(b->names[f], p->inputs[i].name)))
            e->batch_field[i] = inf_record_batch_find_field(b, p->inputs[i].name);
    }
    for (int r0 = 0; r0 < n; r0 += 64) {
        int r1 = r0 + 64 < n ? r0 + 64 : n;
        for (int i = 0; i < p->n_inputs; i++)
            if ((st = read_input(e, b, i, r0, r1))) return inf_error_set(err, st, "out of memory");
    }
    for (int l = 0; l < p->n_lookups; l++)
        if ((st = run_lookup(e, b, l, n, err))) return st;
    const int cap = e->cap;
    for (int t = 0; n > 0 && t < p->n_xfs; t++) { /* an empty batch has no column buffers (e->num may be NULL) */
        const pxf *x = &p->xfs[t];
        const pcol *out = &p->cols[x->col];
        if (x->fit) { /* not learned yet (fit-spec passes) */
            for (int w = 0; w < out->width; w++)
                for (int r = 0; r < n; r++) e->num[(size_t)(out->slot + w) * cap + r] = NAN;
            continue;
        }
        const pcol *c0 = &p->cols[x->from_col[0]];
        const double *x0 = NULL, *x1 = NULL;
        const char *const *s0 = NULL;
        const uint32_t *l0 = NULL;
        if (c0->kind == COL_STR) {
            s0 = e->str + (size_t)c0->slot * cap;
            l0 = e->len + (size_t)c0->slot * cap;
        } else {
            x0 = e->num + (size_t)c0->slot * cap;
        }
        if (x->n_from > 1) x1 = e->num + (size_t)p->cols[x->from_col[1]].slot * cap;
        x->def->run(x, x0, x1, s0, l0, e->num + (size_t)out->slot * cap, n, cap);
    }
    /* gather accepted rows into the feature matrix */
    for (int r = 0; r < n; r++)
        if (e->ok[r]) e->accepted[e->n_accepted++] = r;
    int nfc = p->n_feature_cols;
    size_t need = (size_t)e->n_accepted * nfc;
    if (need > e->feat_cap) {
        double *f = realloc(e->feat, need * sizeof *f);
        if (!f) return inf_error_set(err, INF_ENOMEM, "out of memory");
        e->feat = f;
        e->feat_cap = need;
    }
    int fc = 0;
    for (int m = 0; e->n_accepted > 0 && m < p->n_model_inputs; m++) {
        const pmodel_input *t = &p->model_inputs[m];
        for (int c = 0; c < t->n_cols; c++) {
            const pcol *col = &p->cols[t->cols[c]];
            for (int w = 0; w < col->width; w++, fc++) {
                const double *src = e->num + (size_t)(col->slot + w) * cap;
                for (int k = 0; k < e->n_accepted; k++) e->feat[(size_t)k * nfc + fc] = src[e->accepted[k]];
            }
        }
    }
    if ((st = build_tensors(e, nfc, err))) return st;
    flush_counters(e, n);
    if (inputs) *inputs = e->tensor_ptrs;
    return INF_OK;
}

int inf_pipeline_n_accepted(const inf_pipeline_exec *e) { return e->n_accepted; }
int inf_pipeline_accepted_row(const inf_pipeline_exec *e, int k) {
    return k >= 0 && k < e->n_accepted ? e->accepted[k] : -1;
}
int inf_pipeline_n_rejected(const inf_pipeline_exec *e) { return e->n_rows - e->n_accepted; }
int inf_pipeline_rejected(const inf_pipeline_exec *e, int i, const char **field, const char **message) {
    if (i < 0 || i >= e->n_rej) {
        if (field) *field = NULL;
        if (message) *message = "rejected";
        return -1;
    }
    if (field) *field = e->rej[i].field;
    if (message) *message = e->rej[i].msg;
    return e->rej[i].row;
}
int inf_pipeline_n_ignored_fields(const inf_pipeline_exec *e) { return e->def.n_ignored; }

const double *inf_pipeline_features(const inf_pipeline_exec *e, int *n_rows, int *n_cols) {
    if (n_rows) *n_rows = e->n_accepted;
    if (n_cols) *n_cols = e->p->is_default ? e->def.n_def : e->p->n_feature_cols;
    return e->feat;
}

int inf_pipeline_exec_n_feature_columns(const inf_pipeline_exec *e) {
    return e->p->is_default ? e->def.n_def : e->p->n_feature_cols;
}
const char *inf_pipeline_exec_feature_column(const inf_pipeline_exec *e, int i) {
    if (e->p->is_default) return i >= 0 && i < e->def.n_def ? e->def.names[i] : NULL;
    return inf_pipeline_feature_column(e->p, i);
}

/* for fit.c */
const double *inf__exec_num(const inf_pipeline_exec *e, int col) {
    return e->num + (size_t)e->p->cols[col].slot * e->cap;
}
const char *const *inf__exec_str(const inf_pipeline_exec *e, int col, const uint32_t **lens) {
    *lens = e->len + (size_t)e->p->cols[col].slot * e->cap;
    return e->str + (size_t)e->p->cols[col].slot * e->cap;
}
int inf__exec_rows(const inf_pipeline_exec *e) { return e->n_rows; }
int inf__exec_row_ok(const inf_pipeline_exec *e, int row) { return e->ok[row]; }

/* ---- records out ---- */

/* The id as the spec declares it: an id input of type string is its text
 * even when the source typed it as a number (CSV cells and flat Redis entries
 * type "12345" as an int), so every mode gives the same id, and a keyed sink
 * does not make its key column an integer on the first record and then meet
 * "t777". */
static inf_status set_id(const inf_pipeline_exec *e, inf_record_batch *out, int row, int of, const inf_value *v) {
    char buf[64];
    uint32_t len = 0;
    const char *text = e->p->id_is_string && v->type != INF_FIELD_STRING ? value_text(v, buf, sizeof buf, &len) : NULL;
    return text ? inf_record_batch_set_string(out, row, of, text, len) : inf_record_batch_set(out, row, of, v);
}

static inf_status copy_id_and_passthrough(inf_pipeline_exec *e, inf_record_batch *out, int row, int k) {
    const inf_pipeline *p = e->p;
    const inf_record_batch *b = e->last_batch;
    inf_status st;
    if (p->id_column) {
        int f = inf_record_batch_find_field(b, p->id_column), of;
        if ((st = inf_record_batch_add_field(out, p->id_column, &of))) return st;
        if (f >= 0 && (st = set_id(e, out, row, of, inf__batch_at(b, e->accepted[k], f)))) return st;
    }
    for (int i = 0; i < p->n_passthrough; i++) {
        if (p->id_column && !strcmp(p->id_column, p->passthrough[i])) continue;
        int f = inf_record_batch_find_field(b, p->passthrough[i]), of;
        if ((st = inf_record_batch_add_field(out, p->passthrough[i], &of))) return st;
        if (f >= 0 && (st = inf_record_batch_set(out, row, of, inf__batch_at(b, e->accepted[k], f)))) return st;
    }
    return INF_OK;
}

inf_status inf_pipeline_features_to_records(inf_pipeline_exec *e, inf_record_batch *out, inf_error *err) {
    const inf_pipeline *p = e->p;
    int nfc = inf_pipeline_exec_n_feature_columns(e);
    int fields[4096];
    if (nfc > 4096) return inf_error_set(err, INF_EUNSUPPORTED, "more than 4096 feature columns");
    for (int k = 0; k < e->n_accepted; k++) {
        int row;
        inf_status st = inf_record_batch_add_row(out, &row);
        if (!st) st = copy_id_and_passthrough(e, out, row, k);
        if (st) return inf_error_set(err, st, "out of memory");
        if (k == 0)
            for (int c = 0; c < nfc; c++)
                if (inf_record_batch_add_field(out, inf_pipeline_exec_feature_column(e, c), &fields[c]))
                    return inf_error_set(err, INF_ENOMEM, "out of memory");
        /* values as the model sees them: cast to each model input's dtype */
        int c = 0;
        for (int m = 0; m < p->n_model_inputs; m++) {
            int width = p->is_default ? e->def.n_def : p->model_inputs[m].width;
            inf_dtype dt = p->model_inputs[m].dtype;
            for (int w = 0; w < width; w++, c++) {
                double v = e->feat[(size_t)k * nfc + c];
                if (dt == INF_DTYPE_F32) v = (double)(float)v;
                else if (dt == INF_DTYPE_I64) v = (double)to_i64(v);
                else if (dt == INF_DTYPE_I32) v = (double)to_i32(v);
                inf_record_batch_set_float(out, row, fields[c], v);
            }
        }
    }
    return INF_OK;
}

static int tensor_value(const inf_tensor *t, int64_t k, int64_t j, double *num, const char **str) {
    int64_t cols = t->ndim >= 2 ? t->dims[1] : 1;
    if (t->ndim >= 2 && j >= cols) return -1;
    int64_t i = k * cols + (j < 0 ? 0 : j);
    *str = NULL;
    switch (t->dtype) {
    case INF_DTYPE_F32: *num = ((const float *)t->data)[i]; return 0;
    case INF_DTYPE_F64: *num = ((const double *)t->data)[i]; return 0;
    case INF_DTYPE_I64: *num = (double)((const int64_t *)t->data)[i]; return 1;
    case INF_DTYPE_I32: *num = ((const int32_t *)t->data)[i]; return 1;
    case INF_DTYPE_BOOL: *num = ((const uint8_t *)t->data)[i]; return 1;
    case INF_DTYPE_STRING: *str = ((char *const *)t->data)[i]; return 2;
    default: return -1;
    }
}

static inf_status set_out(inf_record_batch *out, int row, int f, int kind, double num, const char *str) {
    if (kind == 2) return str ? inf_record_batch_set_string(out, row, f, str, strlen(str)) : inf_record_batch_set_null(out, row, f);
    if (kind == 1) return inf_record_batch_set_int(out, row, f, (int64_t)num);
    return inf_record_batch_set_float(out, row, f, num);
}

/* 1 when field f of out is called name (j < 0) or name_j: the executor
 * remembers where finish put each output field, and checks it is still
 * there (out may be another batch, or reset) before reusing it. */
static int cached_field(const inf_record_batch *out, int f, const char *name, int64_t j) {
    if (f < 0 || f >= out->n_fields) return 0;
    const char *have = out->names[f];
    size_t n = strlen(name);
    if (memcmp(have, name, n)) return 0;
    if (j < 0) return have[n] == '\0';
    if (have[n] != '_') return 0;
    char digits[24];
    int nd = 0;
    do digits[nd++] = (char)('0' + j % 10), j /= 10;
    while (j);
    for (int i = 0; i < nd; i++)
        if (have[n + 1 + i] != digits[nd - 1 - i]) return 0;
    return have[n + 1 + nd] == '\0';
}

/* e->fin.view: each model output a spec output reads, as a tensor; a
 * sequence of maps (ZipMap) becomes its dense [N, C] view. */
static inf_status view_outputs(inf_pipeline_exec *e, inf_tensor *const *outputs, inf_error *err) {
    const inf_pipeline *p = e->p;
    for (int i = 0; i < e->fin.n_model_outputs; i++) e->fin.view[i] = NULL;
    for (int o = 0; o < p->n_outputs; o++) {
        int i = p->outputs[o].from_field >= 0 ? -1 : p->outputs[o].from_output;
        if (i < 0 || i >= e->fin.n_model_outputs || e->fin.view[i]) continue;
        e->fin.view[i] = outputs[i];
        if (!inf__is_map_sequence(outputs[i])) continue;
        inf_status st = inf__map_columns_fill(&e->fin.map_cols[i], outputs[i], e->n_accepted, p->outputs[o].from, err);
        if (st) return st;
        e->fin.view[i] = &e->fin.map_cols[i].dense;
    }
    return INF_OK;
}

/* The keys of model output i when it is a sequence of maps, else NULL. */
static const inf__map_columns *output_keys(const inf_pipeline_exec *e, int i) {
    return e->fin.view[i] == &e->fin.map_cols[i].dense ? &e->fin.map_cols[i] : NULL;
}

/* Column j of an output is called name_j, or name_<key> for a map output
 * whose keys are not 0, 1, ... */
static int column_by_index(const inf__map_columns *keys, int64_t j) {
    return !keys || (!keys->string_keys && keys->int_keys[j] == j);
}

static void column_name(char *buf, size_t size, const poutput *po, const inf__map_columns *keys, int64_t j) {
    if (column_by_index(keys, j)) snprintf(buf, size, "%s_%lld", po->name, (long long)j);
    else snprintf(buf, size, "%s_%s", po->name, keys->key_names[j]);
}

/* An argmax/top-k class: the spec's label, the map's key, or the index. */
static inf_status set_class(inf_record_batch *out, int row, int f, const poutput *po, const inf__map_columns *keys,
                            int64_t best) {
    if (best < po->n_labels) return inf_record_batch_set_string(out, row, f, po->labels[best], strlen(po->labels[best]));
    if (keys && keys->string_keys)
        return inf_record_batch_set_string(out, row, f, keys->key_names[best], strlen(keys->key_names[best]));
    return inf_record_batch_set_int(out, row, f, keys ? keys->int_keys[best] : best);
}

inf_status inf_pipeline_finish(inf_pipeline_exec *e, inf_tensor *const *outputs, inf_record_batch *out, inf_error *err) {
    const inf_pipeline *p = e->p;
    if (!p->model) return inf_error_set(err, INF_EINVAL, "pipeline '%s' was loaded without a model; no outputs to map", p->name);
    int n_out = inf_model_n_outputs(p->model);
    if (n_out > e->fin.n_model_outputs)
        return inf_error_set(err, INF_EINVAL, "pipeline '%s': the executor was made for %d model outputs, not %d", p->name,
                    e->fin.n_model_outputs, n_out);
    inf_status vst = view_outputs(e, outputs, err);
    if (vst) return vst;
    const inf_tensor *const *view = e->fin.view;
    /* check shapes once */
    for (int o = 0; o < p->n_outputs; o++) {
        const poutput *po = &p->outputs[o];
        if (po->from_field >= 0) continue;
        const inf_tensor *t = po->from_output < n_out ? view[po->from_output] : NULL;
        if (!t || t->kind != INF_KIND_TENSOR)
            return inf_error_set(err, INF_ETYPE, "output '%s': the model output '%s' is neither a tensor nor a sequence of maps",
                        po->name, po->from);
        if (t->ndim < 1 || t->ndim > 2 || t->dims[0] != e->n_accepted)
            return inf_error_set(err, INF_ESHAPE, "output '%s': the model output '%s' has %d dims / %lld rows, expected [%d] or [%d, C]",
                        po->name, po->from, t->ndim, t->ndim ? (long long)t->dims[0] : 0LL, e->n_accepted, e->n_accepted);
        if (po->op == OUT_VALUE && po->index < 0 && !po->default_cols && t->ndim == 2 && t->dims[1] != 1)
            return inf_error_set(err, INF_ESHAPE, "output '%s': the model output '%s' has %lld columns; give an 'index'", po->name,
                        po->from, (long long)t->dims[1]);
        if (po->index >= 0 && t->ndim == 2 && po->index >= t->dims[1])
            return inf_error_set(err, INF_ESHAPE, "output '%s': index %d but '%s' has %lld columns", po->name, po->index, po->from,
                        (long long)t->dims[1]);
    }
    int f_model = -1, f_version = -1, f_hash = -1;
    char name[512];
    for (int k = 0; k < e->n_accepted; k++) {
        int row;
        inf_status st = inf_record_batch_add_row(out, &row);
        if (!st) st = copy_id_and_passthrough(e, out, row, k);
        if (st) return inf_error_set(err, st, "out of memory");
        for (int o = 0; o < p->n_outputs && !st; o++) {
            const poutput *po = &p->outputs[o];
            double num = 0;
            const char *str = NULL;
            int kind, f;
            if (po->from_field >= 0) {
                int src = inf_record_batch_find_field(out, p->outputs[po->from_field].name);
                const inf_value *v = inf_record_batch_get(out, row, src);
                kind = v->type == INF_FIELD_STRING ? 2 : v->type == INF_FIELD_INT || v->type == INF_FIELD_BOOL ? 1 : 0;
                if (kind == 2) str = v->u.s.ptr;
                else inf_value_to_double(v, &num);
            } else {
                const inf_tensor *t = view[po->from_output];
                const inf__map_columns *keys = output_keys(e, po->from_output);
                int64_t C = t->ndim == 2 ? t->dims[1] : 1;
                if (po->op == OUT_ARGMAX || po->op == OUT_TOP_K) {
                    int kk = po->op == OUT_ARGMAX ? 1 : po->k;
                    if (kk > C) kk = (int)C;
                    uint8_t taken[1024] = {0};
                    for (int rank = 0; rank < kk && rank < 1024; rank++) {
                        int64_t best = -1;
                        double bv = 0;
                        for (int64_t j = 0; j < C && j < 1024; j++) {
                            double v = 0;
                            if (taken[j] || tensor_value(t, k, j, &v, &str) < 0) continue;
                            if (best < 0 || v > bv) best = j, bv = v;
                        }
                        if (best < 0) break;
                        taken[best] = 1;
                        if (po->op == OUT_ARGMAX) snprintf(name, sizeof name, "%s", po->name);
                        else snprintf(name, sizeof name, "%s_%d", po->name, rank + 1);
                        if ((st = inf_record_batch_add_field(out, name, &f))) break;
                        st = set_class(out, row, f, po, keys, best);
                        if (st || po->op == OUT_ARGMAX) break;
                        snprintf(name, sizeof name, "%s_%d_score", po->name, rank + 1);
                        if ((st = inf_record_batch_add_field(out, name, &f))) break;
                        st = inf_record_batch_set_float(out, row, f, bv);
                    }
                    continue;
                }
                if (po->default_cols && C > 1 && t->ndim == 2) {
                    for (int64_t j = 0; j < C && !st; j++) {
                        kind = tensor_value(t, k, j, &num, &str);
                        int cache = column_by_index(keys, j) && o < FINISH_CACHE && j < FINISH_CACHE_COLS;
                        int *slot = cache ? &e->fin.col_field[o][j] : NULL;
                        if (slot && cached_field(out, *slot, po->name, j)) {
                            f = *slot;
                        } else {
                            column_name(name, sizeof name, po, keys, j);
                            if ((st = inf_record_batch_add_field(out, name, &f))) break;
                            if (slot) *slot = f;
                        }
                        st = set_out(out, row, f, kind, num, str);
                    }
                    continue;
                }
                kind = tensor_value(t, k, po->index, &num, &str);
                if (kind < 0) return inf_error_set(err, INF_ETYPE, "output '%s': unsupported dtype %s", po->name, inf_dtype_name(t->dtype));
            }
            if (o < FINISH_CACHE && cached_field(out, e->fin.out_field[o], po->name, -1)) {
                f = e->fin.out_field[o];
            } else {
                if ((st = inf_record_batch_add_field(out, po->name, &f))) break;
                if (o < FINISH_CACHE) e->fin.out_field[o] = f;
            }
            if (po->op == OUT_THRESHOLD) {
                int above = kind != 2 && num >= po->value;
                st = po->n_labels ? inf_record_batch_set_string(out, row, f, po->labels[above], strlen(po->labels[above]))
                                  : inf_record_batch_set_int(out, row, f, above);
            } else {
                st = set_out(out, row, f, kind, num, str);
            }
        }
        if (!st && f_model < 0) {
            int *c = e->fin.lineage_field;
            if (cached_field(out, c[0], "model_name", -1) && cached_field(out, c[1], "model_version", -1) &&
                cached_field(out, c[2], "pipeline_hash", -1)) {
                f_model = c[0], f_version = c[1], f_hash = c[2];
            } else if (!(st = inf_record_batch_add_field(out, "model_name", &f_model)) &&
                       !(st = inf_record_batch_add_field(out, "model_version", &f_version)) &&
                       !(st = inf_record_batch_add_field(out, "pipeline_hash", &f_hash))) {
                c[0] = f_model, c[1] = f_version, c[2] = f_hash;
            }
        }
        if (!st) st = inf_record_batch_set_string(out, row, f_model, p->model_name, strlen(p->model_name));
        if (!st) st = inf_record_batch_set_string(out, row, f_version, p->model_version, strlen(p->model_version));
        if (!st) st = inf_record_batch_set_string(out, row, f_hash, p->hash, 64);
        if (st) return inf_error_set(err, st, "prediction records: %s", inf_strerror(st));
    }
    return INF_OK;
}
