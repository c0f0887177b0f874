/*
 * collect.c -- runs a model over every record of a source, through its
 * pipeline, and keeps what the tools need in memory: the label of each
 * scored record, each tensor output (as float64, or text; a ZipMap's
 * sequence of per-row maps as its float values in key order), and optionally
 * the model input (the features a student learns from).
 *
 * The label column is taken out of each batch before the pipeline sees it,
 * so the default mapping never feeds it to the model.  Records the
 * pipeline rejects, and records without a label, are counted and left out.
 * Memory grows with the rows kept (the tools work on samples that fit).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/score.h"
#include "tools/tools.h"

typedef struct grow_buf {
    void *p;
    size_t cap; /* elements */
} grow_buf;

static int reserve(grow_buf *g, size_t n, size_t elem) {
    if (n <= g->cap) return 0;
    size_t cap = g->cap ? g->cap : 1024;
    while (cap < n) cap *= 2;
    void *p = realloc(g->p, cap * elem);
    if (!p) return -1;
    g->p = p;
    g->cap = cap;
    return 0;
}

static char *value_text(const inf_value *v) {
    char buf[64];
    switch (v->type) {
    case INF_FIELD_NULL: return NULL;
    case INF_FIELD_BOOL: snprintf(buf, sizeof buf, "%d", v->u.b); break;
    case INF_FIELD_INT: snprintf(buf, sizeof buf, "%lld", (long long)v->u.i); break;
    case INF_FIELD_TIMESTAMP: snprintf(buf, sizeof buf, "%lld", (long long)v->u.ts); break;
    case INF_FIELD_FLOAT:
        if (isnan(v->u.f)) return NULL;
        if (v->u.f == floor(v->u.f) && fabs(v->u.f) < 9e15) snprintf(buf, sizeof buf, "%lld", (long long)v->u.f);
        else snprintf(buf, sizeof buf, "%.17g", v->u.f);
        break;
    case INF_FIELD_STRING:
        if (!v->u.s.len) return NULL;
        return strdup(v->u.s.ptr);
    }
    return strdup(buf);
}

/* Copies batch into feat without the label field. */
static inf_status strip_label(const inf_record_batch *b, int label_field, inf_record_batch *feat, inf_error *err) {
    inf_record_batch_reset(feat);
    int nf = inf_record_batch_n_fields(b), map[4096];
    if (nf > 4096) return inf_error_set(err, INF_EINVAL, "too many fields (%d)", nf);
    for (int f = 0; f < nf; f++) {
        map[f] = -1;
        if (f != label_field && inf_record_batch_add_field(feat, inf_record_batch_field_name(b, f), &map[f]))
            return inf_error_set(err, INF_ENOMEM, "out of memory copying records");
    }
    for (int r = 0; r < inf_record_batch_n_rows(b); r++) {
        int row;
        if (inf_record_batch_add_row(feat, &row)) return inf_error_set(err, INF_ENOMEM, "out of memory copying records");
        for (int f = 0; f < nf; f++)
            if (map[f] >= 0 && inf_record_batch_set(feat, row, map[f], inf_record_batch_get(b, r, f)))
                return inf_error_set(err, INF_ENOMEM, "out of memory copying records");
    }
    return INF_OK;
}

static void list_fields(const inf_record_batch *b, char *buf, size_t cap) {
    size_t n = 0;
    buf[0] = 0;
    for (int f = 0; f < inf_record_batch_n_fields(b) && n + 4 < cap; f++)
        n += (size_t)snprintf(buf + n, cap - n, "%s%s", f ? ", " : "", inf_record_batch_field_name(b, f));
}

typedef struct collector {
    inf__tool_rows *r;
    int want_y;
    grow_buf x, y, out_v[64], out_s[64];
} collector;

/* The values of row k's map when t is a ZipMap output (a sequence of one
 * map per row with float32 values), else NULL. */
static const inf_tensor *row_map_values(const inf_tensor *t, int k) {
    if (!t || t->kind != INF_KIND_SEQUENCE || k >= t->n_items || !t->items[k]) return NULL;
    const inf_tensor *m = t->items[k];
    if (m->kind != INF_KIND_MAP || m->n_items < 2 || !m->items[1]) return NULL;
    const inf_tensor *v = m->items[1];
    return v->kind == INF_KIND_TENSOR && v->dtype == INF_DTYPE_F32 && v->ndim == 1 ? v : NULL;
}

static inf_status keep_row(collector *c, const inf_tensor *const *x, inf_tensor *const *y, int k, int rows,
                           char *label, inf_error *err) {
    inf__tool_rows *r = c->r;
    size_t n = (size_t)r->n;
    if (c->want_y) {
        if (reserve(&c->y, n + 1, sizeof(char *))) goto nomem;
        r->y = c->y.p;
        r->y[n] = label;
    }
    if (r->x_cols) {
        const inf_tensor *t = x[0];
        if (reserve(&c->x, (n + 1) * (size_t)r->x_cols, sizeof(double))) goto nomem;
        r->x = c->x.p;
        double *dst = (double *)c->x.p + n * (size_t)r->x_cols;
        for (int j = 0; j < r->x_cols; j++) {
            size_t i = (size_t)k * (size_t)r->x_cols + (size_t)j;
            dst[j] = t->dtype == INF_DTYPE_F64 ? ((const double *)t->data)[i] : ((const float *)t->data)[i];
        }
    }
    for (int o = 0; o < r->n_out; o++) {
        inf__tool_output *out = &r->out[o];
        const inf_tensor *t = y[o];
        if (!out->width) continue; /* not a per-row tensor */
        if (out->from_map) {
            const inf_tensor *mv = row_map_values(t, k);
            if (!mv || mv->dims[0] != out->width) {
                free(label);
                return inf_error_set(err, INF_EINVAL,
                                     "output '%s': row %d is not a map of %d float values (a ZipMap "
                                     "output must give one per row, every one alike)",
                                     out->name, r->n + 1, out->width);
            }
            if (reserve(&c->out_v[o], (n + 1) * (size_t)out->width, sizeof(double))) goto nomem;
            out->v = c->out_v[o].p;
            for (int j = 0; j < out->width; j++)
                out->v[n * (size_t)out->width + j] = ((const float *)mv->data)[j];
            continue;
        }
        if (out->dtype == INF_DTYPE_STRING) {
            if (reserve(&c->out_s[o], n + 1, sizeof(char *))) goto nomem;
            out->s = c->out_s[o].p;
            const char *s = ((char *const *)t->data)[(size_t)k * (size_t)out->width];
            if (!(out->s[n] = strdup(s ? s : ""))) goto nomem;
            continue;
        }
        if (reserve(&c->out_v[o], (n + 1) * (size_t)out->width, sizeof(double))) goto nomem;
        out->v = c->out_v[o].p;
        double *dst = out->v + n * (size_t)out->width;
        for (int j = 0; j < out->width; j++) {
            size_t i = (size_t)k * (size_t)out->width + (size_t)j;
            switch (t->dtype) {
            case INF_DTYPE_F32: dst[j] = ((const float *)t->data)[i]; break;
            case INF_DTYPE_F64: dst[j] = ((const double *)t->data)[i]; break;
            case INF_DTYPE_I64: dst[j] = (double)((const int64_t *)t->data)[i]; break;
            case INF_DTYPE_I32: dst[j] = ((const int32_t *)t->data)[i]; break;
            case INF_DTYPE_BOOL: case INF_DTYPE_U8: dst[j] = ((const uint8_t *)t->data)[i]; break;
            case INF_DTYPE_I8: dst[j] = ((const int8_t *)t->data)[i]; break;
            default: dst[j] = NAN;
            }
        }
    }
    (void)rows;
    r->n++;
    return INF_OK;
nomem:
    free(label);
    return inf_error_set(err, INF_ENOMEM, "out of memory keeping %d scored rows", r->n);
}

/* Sets up the outputs table from the first run. */
static inf_status describe_outputs(inf__tool_rows *r, const inf_model *model, inf_tensor *const *y, int rows,
                                   inf_error *err) {
    int n = inf_model_n_outputs(model);
    if (n > 64) return inf_error_set(err, INF_EUNSUPPORTED, "model has %d outputs (at most 64)", n);
    r->out = calloc((size_t)n, sizeof *r->out);
    if (!r->out) return inf_error_set(err, INF_ENOMEM, "out of memory");
    for (int o = 0; o < n; o++) {
        inf__tool_output *out = &r->out[r->n_out];
        const inf_tensor *t = y[o];
        const inf_tensor *mv =
            rows > 0 && t && t->kind == INF_KIND_SEQUENCE && t->n_items == rows ? row_map_values(t, 0) : NULL;
        if (mv && mv->dims[0] > 0) { /* ZipMap: one {class: probability} map per row, read as a float row */
            out->dtype = INF_DTYPE_F32;
            out->width = (int)mv->dims[0];
            out->from_map = 1;
            const inf_tensor *keys = t->items[0]->items[0];
            if (!(out->keys = calloc((size_t)out->width, sizeof *out->keys)))
                return inf_error_set(err, INF_ENOMEM, "out of memory");
            for (int j = 0;
                 keys && keys->kind == INF_KIND_TENSOR && inf_tensor_numel(keys) == out->width && j < out->width; j++) {
                char buf[64];
                const char *txt = buf;
                if (keys->dtype == INF_DTYPE_STRING)
                    txt = ((char *const *)keys->data)[j] ? ((char *const *)keys->data)[j] : "";
                else if (keys->dtype == INF_DTYPE_I64)
                    snprintf(buf, sizeof buf, "%lld", (long long)((const int64_t *)keys->data)[j]);
                else
                    break;
                if (!(out->keys[j] = strdup(txt))) return inf_error_set(err, INF_ENOMEM, "out of memory");
            }
        } else if (!t || t->kind != INF_KIND_TENSOR || t->ndim < 1 || t->dims[0] != rows) {
            /* other sequences, scalars: not a per-row output; keep a placeholder */
            out->width = 0;
            out->dtype = INF_DTYPE_UNDEFINED;
        } else {
            out->dtype = t->dtype;
            out->width = rows ? (int)(inf_tensor_numel(t) / rows) : 1;
        }
        snprintf(out->name, sizeof out->name, "%s", inf_model_output(model, o)->name);
        r->n_out++;
    }
    return INF_OK;
}

inf_status inf__tool_collect(const char *src_uri, const inf_pipeline *p, inf_session *session,
                             const inf__tool_collect_options *o, inf__tool_rows *r, inf_error *err) {
    memset(r, 0, sizeof *r);
    collector c;
    memset(&c, 0, sizeof c);
    c.r = r;
    char red[1024];
    inf_io_redact_uri(src_uri, red, sizeof red);
    inf_source_options so = {o->batch_rows > 0 ? o->batch_rows : 1024, inf_pipeline_id_column(p)};
    inf_source *src = NULL;
    inf_pipeline_exec *ex = NULL;
    inf_record_batch *b = NULL, *feat = NULL;
    const inf_model *model = inf_session_model(session);
    inf_status st;
    if ((st = inf_source_open(src_uri, &so, &src, err))) return st;
    if ((st = inf_pipeline_exec_new(p, &ex, err))) goto done;
    if (inf_record_batch_new(&b) || inf_record_batch_new(&feat)) {
        st = inf_error_set(err, INF_ENOMEM, "out of memory");
        goto done;
    }
    if (o->want_x) {
        const inf_value_info *in = inf_model_input(model, 0);
        if (inf_model_n_inputs(model) != 1 || in->ndim != 2 || in->dims[1] <= 0 ||
            (in->dtype != INF_DTYPE_F32 && in->dtype != INF_DTYPE_F64)) {
            st = inf_error_set(err, INF_EUNSUPPORTED,
                               "the model needs one 2-D float input [N, K] with K known (it has %d inputs; '%s')",
                               inf_model_n_inputs(model), in->name);
            goto done;
        }
        r->x_cols = (int)in->dims[1];
    }
    int eof = 0;
    while (!eof && !(o->max_rows && r->n >= o->max_rows)) {
        if ((st = inf_source_next(src, b, &eof, err))) goto done;
        int nb = inf_record_batch_n_rows(b);
        if (!nb) continue;
        r->n_read += nb;
        int lf = -1;
        if (o->label) {
            lf = inf_record_batch_find_field(b, o->label);
            if (lf < 0) {
                char fields[600];
                list_fields(b, fields, sizeof fields);
                st = inf_error_set(err, INF_ENOENT, "label column '%s' is not in %s (fields: %s)", o->label, red, fields);
                goto done;
            }
            c.want_y = 1;
        }
        if ((st = strip_label(b, lf, feat, err))) goto done;
        const inf_tensor *const *x;
        if ((st = inf_pipeline_prepare(ex, feat, &x, err))) goto done;
        r->n_rejected += inf_pipeline_n_rejected(ex);
        if (!r->ignored_note[0])
            inf__rt_ignored_fields_note(ex, r->ignored_note, sizeof r->ignored_note);
        int na = inf_pipeline_n_accepted(ex);
        if (!na) continue;
        inf_tensor *const *y;
        if ((st = inf_session_run(session, x, &y, err))) goto done;
        if (!r->out && (st = describe_outputs(r, model, y, na, err))) goto done;
        for (int k = 0; k < na && !(o->max_rows && r->n >= o->max_rows); k++) {
            char *label = NULL;
            if (lf >= 0 && !(label = value_text(inf_record_batch_get(b, inf_pipeline_accepted_row(ex, k), lf)))) {
                r->n_unlabelled++;
                continue;
            }
            if ((st = keep_row(&c, x, y, k, na, label, err))) goto done;
        }
    }
    if (r->n_read == 0) {
        st = inf_error_set(err, INF_EINVAL, "%s has no records", red);
        goto done;
    }
    if (r->n == 0) {
        st = inf_error_set(err, INF_EINVAL, "%s: none of its %d records could be scored (%d rejected by the pipeline, %d without a label)",
                           red, r->n_read, r->n_rejected, r->n_unlabelled);
        goto done;
    }
done:
    inf_record_batch_free(b);
    inf_record_batch_free(feat);
    inf_pipeline_exec_free(ex);
    inf_source_close(src);
    if (st) inf__tool_rows_free(r); /* every buffer is published in r as soon as it is allocated */
    return st;
}

void inf__tool_rows_free(inf__tool_rows *r) {
    if (!r) return;
    for (int i = 0; r->y && i < r->n; i++) free(r->y[i]);
    free(r->y);
    free(r->x);
    for (int o = 0; o < r->n_out; o++) {
        free(r->out[o].v);
        for (int i = 0; r->out[o].s && i < r->n; i++) free(r->out[o].s[i]);
        free(r->out[o].s);
        for (int j = 0; r->out[o].keys && j < r->out[o].width; j++)
            free(r->out[o].keys[j]);
        free(r->out[o].keys);
    }
    free(r->out);
    memset(r, 0, sizeof *r);
}

const inf__tool_output *inf__tool_rows_output(const inf__tool_rows *r, const char *name) {
    for (int o = 0; o < r->n_out; o++)
        if (!strcmp(r->out[o].name, name)) return &r->out[o];
    return NULL;
}
