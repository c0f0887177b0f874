/*
 * labels.c -- the label join (labels.h): the log read into one batch, its
 * ids hashed (open addressing), then the labels streamed through it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "monitor/labels.h"
#include "monitor/predlog.h"
#include "infera/pipeline.h"
#include "runtime/score.h"

typedef struct id_slot {
    const char *id; /* borrowed from the log batch */
    double score;
    int64_t at; /* logged_at in us, INT64_MIN when the row has none */
    int has_score, labelled;
} id_slot;

typedef struct id_table {
    id_slot *slots;
    size_t cap;
} id_table;

static uint64_t hash_id(const char *s) { return inf_pipeline_hash_string(s, strlen(s)); }

static id_slot *lookup(id_table *t, const char *id, int *found) {
    size_t i = (size_t)(hash_id(id) & (t->cap - 1));
    while (t->slots[i].id && strcmp(t->slots[i].id, id)) i = (i + 1) & (t->cap - 1);
    *found = t->slots[i].id != NULL;
    return &t->slots[i];
}

/* The record's id as text (ids are text, io.h); NULL when null. */
static const char *id_text(const inf_value *v, char *buf, size_t size) {
    if (v->type == INF_FIELD_STRING) return v->u.s.ptr;
    if (v->type == INF_FIELD_INT) {
        snprintf(buf, size, "%lld", (long long)v->u.i);
        return buf;
    }
    double d;
    if (inf_value_to_double(v, &d)) return NULL;
    snprintf(buf, size, "%.17g", d);
    return buf;
}

static inf_status read_all(const char *uri, const char *id_column, inf_record_batch *all, inf_error *err) {
    inf_source_options so = {0};
    so.id_column = id_column;
    inf_source *src;
    inf_record_batch *b;
    inf_status st = inf_source_open(uri, &so, &src, err);
    if (st) return st;
    if (inf_record_batch_new(&b)) {
        inf_source_close(src);
        return inf_error_set(err, INF_ENOMEM, "monitor: out of memory");
    }
    int eof = 0;
    while (!eof && !(st = inf_source_next(src, b, &eof, err)))
        if ((st = inf__rt_append_rows(all, b, 0, inf_record_batch_n_rows(b))))
            st = inf_error_set(err, st, "monitor: out of memory reading %s", uri);
    inf_record_batch_free(b);
    inf_source_close(src);
    return st;
}

static int skipped(const inf__mon_join_options *o, const char *name) {
    if (inf__mon_log_is_meta_field(name)) return 1;
    for (int i = 0; o->skip && o->skip[i]; i++)
        if (!strcmp(o->skip[i], name)) return 1;
    return 0;
}

static int pick_prediction(const inf__mon_join_options *o, const inf_record_batch *log, inf_error *err) {
    if (o->prediction_column) {
        int f = inf_record_batch_find_field(log, o->prediction_column);
        if (f < 0) inf_error_set(err, INF_EINVAL, "monitor labels: the log has no field '%s'", o->prediction_column);
        return f;
    }
    int preferred = o->preferred ? inf_record_batch_find_field(log, o->preferred) : -1;
    if (preferred >= 0)
        return preferred;
    for (int f = 0, nf = inf_record_batch_n_fields(log); f < nf; f++) {
        if (skipped(o, inf_record_batch_field_name(log, f))) continue;
        for (int r = 0, nr = inf_record_batch_n_rows(log); r < nr; r++) {
            const inf_value *v = inf_record_batch_get(log, r, f);
            if (v->type == INF_FIELD_FLOAT) return f;
            if (v->type != INF_FIELD_NULL) break;
        }
    }
    inf_error_set(err, INF_EINVAL, "monitor labels: the log has no float output to score (name one with --prediction-column)");
    return -1;
}

static int stamped(const inf_record_batch *b, int row, int f, const char *want) {
    if (!want || f < 0) return 1;
    const inf_value *v = inf_record_batch_get(b, row, f);
    return v->type == INF_FIELD_STRING && !strcmp(v->u.s.ptr, want);
}

static inf_status index_log(const inf__mon_join_options *o, const inf_record_batch *log, int fp, id_table *t,
                            inf__mon_join *out) {
    int nr = inf_record_batch_n_rows(log), fid = inf_record_batch_find_field(log, "record_id");
    int fm = inf_record_batch_find_field(log, "model_name"), fv = inf_record_batch_find_field(log, "model_version");
    int ft = inf_record_batch_find_field(log, "logged_at");
    t->cap = 16;
    while (t->cap < (size_t)nr * 2 + 16) t->cap *= 2;
    if (!(t->slots = calloc(t->cap, sizeof *t->slots))) return INF_ENOMEM;
    for (int r = 0; r < nr; r++) {
        const inf_value *v = inf_record_batch_get(log, r, fid);
        if (v->type != INF_FIELD_STRING || !stamped(log, r, fm, o->model) || !stamped(log, r, fv, o->version)) continue;
        int found;
        id_slot *s = lookup(t, v->u.s.ptr, &found);
        if (found) {
            out->duplicate_predictions++;
            continue;
        }
        out->predictions++;
        s->id = v->u.s.ptr;
        s->has_score = inf_value_to_double(inf_record_batch_get(log, r, fp), &s->score) == 0;
        if (ft < 0 || inf_value_to_timestamp(inf_record_batch_get(log, r, ft), &s->at)) s->at = INT64_MIN;
    }
    return INF_OK;
}

static inf_status push_pair(inf__mon_join *out, double y, double score, int64_t at, int64_t *cap) {
    if (out->rows_joined == *cap) {
        int64_t c = *cap ? 2 * *cap : 1024;
        double *ny = realloc(out->y, (size_t)c * sizeof *ny);
        if (!ny) return INF_ENOMEM;
        out->y = ny;
        double *ns = realloc(out->score, (size_t)c * sizeof *ns);
        if (!ns) return INF_ENOMEM;
        out->score = ns;
        int64_t *na = realloc(out->at, (size_t)c * sizeof *na);
        if (!na) return INF_ENOMEM;
        out->at = na;
        *cap = c;
    }
    out->y[out->rows_joined] = y;
    out->at[out->rows_joined] = at;
    out->score[out->rows_joined++] = score;
    return INF_OK;
}

static inf_status join(const inf__mon_join_options *o, const inf_record_batch *labels, id_table *t,
                       inf__mon_join *out, inf_error *err) {
    int fid = inf_record_batch_find_field(labels, o->id_column), fl = inf_record_batch_find_field(labels, o->label_column);
    if (fid < 0 || fl < 0)
        return inf_error_set(err, INF_EINVAL, "monitor labels: %s has no column '%s'", o->labels_uri,
                             fid < 0 ? o->id_column : o->label_column);
    int64_t cap = 0;
    for (int r = 0, nr = inf_record_batch_n_rows(labels); r < nr; r++) {
        char buf[64];
        const char *id = id_text(inf_record_batch_get(labels, r, fid), buf, sizeof buf);
        if (!id) continue;
        out->labels++;
        int found;
        id_slot *s = lookup(t, id, &found);
        if (!found) {
            out->labels_unmatched++;
            continue;
        }
        if (s->labelled) {
            out->duplicate_labels++;
            continue;
        }
        s->labelled = 1;
        double y;
        if (!s->has_score || inf_value_to_double(inf_record_batch_get(labels, r, fl), &y)) {
            out->missing++;
            continue;
        }
        if (push_pair(out, y, s->score, s->at, &cap)) return inf_error_set(err, INF_ENOMEM, "monitor labels: out of memory");
    }
    for (size_t i = 0; i < t->cap; i++)
        if (t->slots[i].id && !t->slots[i].labelled) out->unlabelled++;
    return INF_OK;
}

inf_status inf__mon_join_labels(const inf__mon_join_options *o, inf__mon_join *out, inf_error *err) {
    memset(out, 0, sizeof *out);
    inf_record_batch *log = NULL, *labels = NULL;
    id_table t = {0};
    inf_status st;
    if (inf_record_batch_new(&log) || inf_record_batch_new(&labels)) {
        st = inf_error_set(err, INF_ENOMEM, "monitor labels: out of memory");
        goto done;
    }
    if ((st = read_all(o->log_uri, "record_id", log, err)) || (st = read_all(o->labels_uri, o->id_column, labels, err)))
        goto done;
    int fp = pick_prediction(o, log, err);
    if (fp < 0) {
        st = INF_EINVAL;
        goto done;
    }
    snprintf(out->prediction_column, sizeof out->prediction_column, "%s", inf_record_batch_field_name(log, fp));
    if ((st = index_log(o, log, fp, &t, out))) {
        st = inf_error_set(err, st, "monitor labels: out of memory");
        goto done;
    }
    st = join(o, labels, &t, out, err);
done:
    free(t.slots);
    inf_record_batch_free(log);
    inf_record_batch_free(labels);
    if (st) inf__mon_join_free(out);
    return st;
}

void inf__mon_join_free(inf__mon_join *j) {
    free(j->y);
    free(j->score);
    free(j->at);
    j->y = j->score = NULL;
    j->at = NULL;
}
