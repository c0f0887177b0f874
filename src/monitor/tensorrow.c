/*
 * tensorrow.c -- the log rows of serve's tensor endpoint (tensorrow.h): the
 * columns of a request's tensors worked out once per layout, then rows set
 * by index.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "io/numfmt.h"
#include "io/record_int.h"
#include "monitor/logrow.h"
#include "monitor/tensorrow.h"

#define N_META 4 /* record_id, logged_at, model_name, model_version */

/* One logged column: element j of each row of tensor t (an output when out). */
typedef struct tcol {
    int out, t;
    int64_t j;
} tcol;

/* A spec output (pipeline.h PREDICTION RECORDS) worked out from the output
 * tensors for the drift window: a column of a model output (op value), or
 * a threshold of one or of an earlier output.  argmax / top_k are left out. */
typedef struct tout {
    int threshold;
    int src_t; /* model output index, -1: the earlier spec output src_o */
    int src_o;
    int64_t j;       /* column of model output src_t */
    double value;    /* threshold */
    char *labels[2]; /* threshold labels [below, at or above]; NULL: 0 / 1 */
} tout;

/* Columns c0 .. c1 - 1 of a plan: elements of one tensor (index ti: inputs then outputs). */
typedef struct tseg {
    int c0, c1, ti;
} tseg;

struct inf__mon_tplan {
    int n_in, n_out;
    int64_t *per_row; /* per tensor (inputs then outputs): columns per row, -1 when left out */
    inf_dtype *dtype; /* per tensor, as the plan was built for */
    tcol *cols;       /* the logged columns: inputs first */
    int n_cols, n_feat;
    tseg *segs; /* the columns in runs of one tensor (a row is written run by run) */
    int n_segs;
    char **names; /* the log fields: N_META, then one per column */
    int n_fields;
    tout *outs;       /* the spec's outputs the window profiles */
    char **out_names; /* their names */
    int n_outs;
};

void inf__mon_tplan_free(inf__mon_tplan *plan) {
    if (!plan) return;
    for (int i = N_META; plan->names && i < plan->n_fields; i++)
        free(plan->names[i]);
    free(plan->names);
    for (int i = 0; i < plan->n_outs; i++) {
        free(plan->out_names[i]);
        free(plan->outs[i].labels[0]);
        free(plan->outs[i].labels[1]);
    }
    free(plan->outs);
    free(plan->out_names);
    free(plan->cols);
    free(plan->segs);
    free(plan->per_row);
    free(plan->dtype);
    free(plan);
}

/* Columns per row of tensor x in a request of rows rows, -1 when left out. */
static int64_t per_row_of(const inf_tensor *x, int64_t rows) {
    if (!x || x->kind != INF_KIND_TENSOR || !x->data || rows <= 0) return -1;
    if (x->dtype == INF_DTYPE_C64 || x->dtype == INF_DTYPE_C128 || x->dtype == INF_DTYPE_UNDEFINED) return -1;
    int64_t n = inf_tensor_numel(x);
    if (x->ndim == 0) return rows == 1 ? 1 : -1;
    if (x->dims[0] != rows || n % rows) return -1;
    int64_t c = n / rows;
    return c >= 1 && c <= INF__MON_TENSOR_MAX_COLS ? c : -1;
}

static const inf_tensor *tensor_at(const inf__mon_tensors *t, int i) {
    return i < t->n_in ? t->in[i] : t->out[i - t->n_in];
}

static char *column_name(const char *tensor, int64_t per_row, int64_t j) {
    size_t n = strlen(tensor) + 24;
    char *s = malloc(n);
    if (!s) return NULL;
    if (per_row == 1)
        snprintf(s, n, "%s", tensor);
    else
        snprintf(s, n, "%s[%lld]", tensor, (long long)j);
    return s;
}

/* The spec's feature names fit the input columns: as many, in order. */
static int spec_names_fit(const inf_pipeline *p, int64_t n_in_cols) {
    if (!p || n_in_cols <= 0) return 0;
    int n = inf_pipeline_n_feature_columns(p);
    if (n != n_in_cols) return 0;
    for (int i = 0; i < n; i++)
        if (!inf_pipeline_feature_column(p, i)) return 0;
    return 1;
}

static inf_status add_columns(inf__mon_tplan *plan, const inf__mon_tensors *t, const inf_pipeline *p) {
    int n_t = t->n_in + t->n_out;
    int64_t n_in_cols = 0, total = 0;
    for (int i = 0; i < n_t; i++) {
        plan->per_row[i] = per_row_of(tensor_at(t, i), t->rows);
        plan->dtype[i] = tensor_at(t, i) ? tensor_at(t, i)->dtype : INF_DTYPE_UNDEFINED;
        if (plan->per_row[i] > 0) total += plan->per_row[i];
        if (i < t->n_in && plan->per_row[i] > 0) n_in_cols += plan->per_row[i];
    }
    if (!(plan->cols = calloc((size_t)total + 1, sizeof *plan->cols)) ||
        !(plan->names = calloc((size_t)total + N_META, sizeof *plan->names)))
        return INF_ENOMEM;
    static const char *const meta[N_META] = {"record_id", "logged_at", "model_name", "model_version"};
    for (int i = 0; i < N_META; i++)
        plan->names[plan->n_fields++] = (char *)meta[i];
    int spec = spec_names_fit(p, n_in_cols);
    int64_t f = 0; /* the spec's feature column index */
    for (int i = 0; i < n_t; i++) {
        int out = i >= t->n_in, ti = out ? i - t->n_in : i;
        const char *tname = out ? t->out_names[ti] : t->in_names[ti];
        for (int64_t j = 0; j < plan->per_row[i]; j++) {
            const char *sname = spec && !out ? inf_pipeline_feature_column(p, (int)f++) : NULL;
            if (sname && inf__mon_column_is_sensitive(p, sname)) continue;
            char *nm = sname ? strdup(sname) : column_name(tname ? tname : "?", plan->per_row[i], j);
            if (!nm) return INF_ENOMEM;
            plan->names[plan->n_fields++] = nm;
            plan->cols[plan->n_cols++] = (tcol){out, ti, j};
            if (!out) plan->n_feat++;
        }
    }
    if (!(plan->segs = calloc((size_t)plan->n_cols + 1, sizeof *plan->segs))) return INF_ENOMEM;
    for (int c = 0; c < plan->n_cols; c++) {
        const tcol *col = &plan->cols[c];
        int ti = col->out ? t->n_in + col->t : col->t;
        if (!plan->n_segs || plan->segs[plan->n_segs - 1].ti != ti) plan->segs[plan->n_segs++] = (tseg){c, c, ti};
        plan->segs[plan->n_segs - 1].c1 = c + 1;
    }
    return INF_OK;
}

/* Whether the pipeline reads a value from a tensor of this dtype (exec.c tensor_value). */
static int readable(inf_dtype d) {
    return d == INF_DTYPE_F32 || d == INF_DTYPE_F64 || d == INF_DTYPE_I64 || d == INF_DTYPE_I32 ||
           d == INF_DTYPE_BOOL || d == INF_DTYPE_STRING;
}

/* The earlier spec output called name (-1: none). */
static int find_out(const inf__mon_tplan *plan, const char *name) {
    for (int i = plan->n_outs - 1; i >= 0; i--)
        if (!strcmp(plan->out_names[i], name)) return i;
    return -1;
}

/* One spec output from its canonical JSON o: added when it can be worked out
 * from these tensors (0), left out otherwise (an earlier output of that name
 * then hides the model output, as in the pipeline: find_out first). */
static inf_status add_spec_output(inf__mon_tplan *plan, const inf__mon_tensors *t, const cJSON *o) {
    const char *name = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, "name"));
    const char *from = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, "from"));
    const char *op = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, "op"));
    const cJSON *idx = cJSON_GetObjectItemCaseSensitive(o, "index"),
                *val = cJSON_GetObjectItemCaseSensitive(o, "value");
    const cJSON *labels = cJSON_GetObjectItemCaseSensitive(o, "labels");
    if (!name || !from) return INF_OK;
    tout u = {0};
    u.threshold = op && !strcmp(op, "threshold");
    if (op && !u.threshold && strcmp(op, "value") && strcmp(op, "rename")) return INF_OK; /* argmax, top_k */
    if (u.threshold && !cJSON_IsNumber(val)) return INF_OK;
    u.value = u.threshold ? val->valuedouble : 0;
    u.src_o = find_out(plan, from);
    u.src_t = -1;
    if (u.src_o < 0) {
        for (int i = 0; i < t->n_out && u.src_t < 0; i++)
            if (t->out_names[i] && !strcmp(t->out_names[i], from)) u.src_t = i;
        if (u.src_t < 0) return INF_OK; /* a sequence of maps, or an output left out before */
        int64_t per = plan->per_row[plan->n_in + u.src_t];
        u.j = cJSON_IsNumber(idx) ? (int64_t)idx->valuedouble : -1;
        if (per <= 0 || !readable(plan->dtype[plan->n_in + u.src_t]) || u.j >= per || (u.j < 0 && per != 1))
            return INF_OK;
        if (u.j < 0) u.j = 0;
    }
    if (u.threshold && cJSON_GetArraySize(labels) == 2) {
        const char *a = cJSON_GetStringValue(cJSON_GetArrayItem(labels, 0)),
                   *b = cJSON_GetStringValue(cJSON_GetArrayItem(labels, 1));
        if (!a || !b) return INF_OK;
        if (!(u.labels[0] = strdup(a)) || !(u.labels[1] = strdup(b))) {
            free(u.labels[0]);
            return INF_ENOMEM;
        }
    }
    char *nm = strdup(name);
    if (!nm) {
        free(u.labels[0]);
        free(u.labels[1]);
        return INF_ENOMEM;
    }
    plan->out_names[plan->n_outs] = nm;
    plan->outs[plan->n_outs++] = u;
    return INF_OK;
}

/* The spec's outputs (its canonical text: pipeline.h) that the window can
 * profile from the output tensors; none for the default pipeline. */
static inf_status add_spec_outputs(inf__mon_tplan *plan, const inf__mon_tensors *t, const inf_pipeline *p) {
    if (!p || inf_pipeline_is_default(p)) return INF_OK;
    cJSON *root = cJSON_Parse(inf_pipeline_canonical(p));
    const cJSON *outs = cJSON_GetObjectItemCaseSensitive(root, "outputs");
    int n = cJSON_GetArraySize(outs);
    inf_status st = INF_OK;
    if (n > 0 && (!(plan->outs = calloc((size_t)n, sizeof *plan->outs)) ||
                  !(plan->out_names = calloc((size_t)n, sizeof *plan->out_names))))
        st = INF_ENOMEM;
    for (int i = 0; i < n && !st; i++)
        st = add_spec_output(plan, t, cJSON_GetArrayItem(outs, i));
    cJSON_Delete(root);
    return st;
}

inf_status inf__mon_tplan_new(const inf__mon_tensors *t, const inf_pipeline *p, inf__mon_tplan **out) {
    *out = NULL;
    inf__mon_tplan *plan = calloc(1, sizeof *plan);
    if (!plan) return INF_ENOMEM;
    plan->n_in = t->n_in;
    plan->n_out = t->n_out;
    size_t n_t = (size_t)(t->n_in + t->n_out) + 1;
    inf_status st = INF_ENOMEM;
    if ((plan->per_row = calloc(n_t, sizeof *plan->per_row)) && (plan->dtype = calloc(n_t, sizeof *plan->dtype)))
        st = add_columns(plan, t, p);
    if (!st) st = add_spec_outputs(plan, t, p);
    if (st) {
        inf__mon_tplan_free(plan);
        return st;
    }
    *out = plan;
    return INF_OK;
}

int inf__mon_tplan_matches(const inf__mon_tplan *plan, const inf__mon_tensors *t) {
    if (plan->n_in != t->n_in || plan->n_out != t->n_out) return 0;
    for (int i = 0; i < t->n_in + t->n_out; i++) {
        const inf_tensor *x = tensor_at(t, i);
        if (per_row_of(x, t->rows) != plan->per_row[i]) return 0;
        if ((x ? x->dtype : INF_DTYPE_UNDEFINED) != plan->dtype[i]) return 0;
    }
    return 1;
}

int inf__mon_tplan_n_fields(const inf__mon_tplan *plan) { return plan->n_fields; }
const char *const *inf__mon_tplan_field_names(const inf__mon_tplan *plan) { return (const char *const *)plan->names; }
int inf__mon_tplan_n_features(const inf__mon_tplan *plan) { return plan->n_feat; }
const char *const *inf__mon_tplan_feature_names(const inf__mon_tplan *plan) {
    return (const char *const *)plan->names + N_META;
}

/* Element i of a numeric tensor as a double (NaN for strings). */
static double number_at(const inf_tensor *x, int64_t i) {
    const void *d = x->data;
    switch (x->dtype) {
    case INF_DTYPE_F32:
        return ((const float *)d)[i];
    case INF_DTYPE_F64:
        return ((const double *)d)[i];
    case INF_DTYPE_F16:
        return inf_f16_to_f32(((const uint16_t *)d)[i]);
    case INF_DTYPE_BF16:
        return inf_bf16_to_f32(((const uint16_t *)d)[i]);
    case INF_DTYPE_I8:
        return ((const int8_t *)d)[i];
    case INF_DTYPE_U8:
        return ((const uint8_t *)d)[i];
    case INF_DTYPE_I16:
        return ((const int16_t *)d)[i];
    case INF_DTYPE_U16:
        return ((const uint16_t *)d)[i];
    case INF_DTYPE_I32:
        return ((const int32_t *)d)[i];
    case INF_DTYPE_U32:
        return ((const uint32_t *)d)[i];
    case INF_DTYPE_I64:
        return (double)((const int64_t *)d)[i];
    case INF_DTYPE_U64:
        return (double)((const uint64_t *)d)[i];
    case INF_DTYPE_BOOL:
        return ((const uint8_t *)d)[i] != 0;
    default:
        return NAN;
    }
}

void inf__mon_tplan_features(const inf__mon_tplan *plan, const inf__mon_tensors *t, int64_t k, double *x) {
    for (int c = 0; c < plan->n_feat; c++) {
        const tcol *col = &plan->cols[c];
        const inf_tensor *ten = t->in[col->t];
        x[c] = number_at(ten, k * plan->per_row[col->t] + col->j);
    }
}

/* Every cell is set, null included (the log's recycled rows are not cleared: predlog.h). */
int inf__mon_tplan_n_outputs(const inf__mon_tplan *plan) { return plan->n_outs; }
const char *const *inf__mon_tplan_output_names(const inf__mon_tplan *plan) {
    return (const char *const *)plan->out_names;
}

void inf__mon_tplan_outputs(const inf__mon_tplan *plan, const inf__mon_tensors *t, int64_t k, inf_value *y) {
    for (int o = 0; o < plan->n_outs; o++) {
        const tout *u = &plan->outs[o];
        inf_value v = {0};
        if (u->src_t < 0) {
            v = y[u->src_o];
        } else {
            const inf_tensor *x = t->out[u->src_t];
            int64_t i = k * plan->per_row[plan->n_in + u->src_t] + u->j;
            if (x->dtype == INF_DTYPE_STRING) {
                const char *str = ((char *const *)x->data)[i];
                if (str) v.type = INF_FIELD_STRING, v.u.s.ptr = str, v.u.s.len = (uint32_t)strlen(str);
            } else if (x->dtype == INF_DTYPE_F32 || x->dtype == INF_DTYPE_F64) {
                v.type = INF_FIELD_FLOAT, v.u.f = number_at(x, i);
            } else {
                v.type = INF_FIELD_INT, v.u.i = (int64_t)number_at(x, i);
            }
        }
        if (u->threshold) { /* exec.c: above = not a string and its number (0 for a null) >= the threshold */
            double num = 0;
            if (v.type != INF_FIELD_STRING) inf_value_to_double(&v, &num);
            int above = v.type != INF_FIELD_STRING && num >= u->value;
            v = (inf_value){0};
            if (u->labels[0])
                v.type = INF_FIELD_STRING, v.u.s.ptr = u->labels[above], v.u.s.len = (uint32_t)strlen(u->labels[above]);
            else
                v.type = INF_FIELD_INT, v.u.i = above;
        }
        y[o] = v;
    }
}

static inf_status set_cell(inf_record_batch *out, int row, int f, const inf_tensor *x, int64_t i) {
    if (x->dtype == INF_DTYPE_STRING) {
        const char *s = ((char *const *)x->data)[i];
        return s ? inf_record_batch_set_string(out, row, f, s, strlen(s)) : inf_record_batch_set_null(out, row, f);
    }
    if (x->dtype == INF_DTYPE_BOOL) return inf_record_batch_set_bool(out, row, f, ((const uint8_t *)x->data)[i] != 0);
    double v = number_at(x, i);
    return isfinite(v) ? inf_record_batch_set_float(out, row, f, v) : inf_record_batch_set_null(out, row, f);
}

/* "ID" for a one-row request, "ID[k]" for row k (no printf: one per logged row). */
static inf_status set_id(inf_record_batch *out, int row, int f, const char *id, int64_t rows, int64_t k) {
    if (!id) return inf_record_batch_set_null(out, row, f);
    size_t n = strlen(id);
    if (rows == 1) return inf_record_batch_set_string(out, row, f, id, n);
    char small[256], *s = n + INF__FMT_NUM_MAX + 2 <= sizeof small ? small : malloc(n + INF__FMT_NUM_MAX + 2);
    if (!s) return INF_ENOMEM;
    memcpy(s, id, n);
    s[n] = '[';
    size_t len = n + 1 + (size_t)inf__fmt_i64(k, s + n + 1);
    s[len++] = ']';
    inf_status st = inf_record_batch_set_string(out, row, f, s, len);
    if (s != small) free(s);
    return st;
}

/* Sets a text that rows of a batch share (a model's name, version): the previous row's
 * copy when it holds the same text (one arena copy per batch, not per row). */
static inf_status set_shared_string(inf_record_batch *out, int row, int f, const char *s) {
    size_t n = strlen(s);
    if (row > 0 && f >= 0 && f < out->n_fields) {
        inf_value *cells = out->vals + (size_t)row * (size_t)out->cap_fields;
        const inf_value *prev = cells - out->cap_fields + f;
        if (prev->type == INF_FIELD_STRING && prev->u.s.len == n && !memcmp(prev->u.s.ptr, s, n)) {
            cells[f] = *prev;
            return INF_OK;
        }
    }
    return inf_record_batch_set_string(out, row, f, s, n);
}

inf_status inf__mon_tplan_row(const inf__mon_tplan *plan, const int *map, const inf__mon_tensors *t, int64_t k,
                              const char *request_id, int64_t now_us, const char *model_name, const char *model_version,
                              inf_record_batch *out) {
    int row;
    inf_status st;
    if ((st = inf_record_batch_add_row(out, &row)) || (st = set_id(out, row, map[0], request_id, t->rows, k)) ||
        (st = inf_record_batch_set_timestamp(out, row, map[1], now_us)) ||
        (st = set_shared_string(out, row, map[2], model_name)) ||
        (st = set_shared_string(out, row, map[3], model_version)))
        return st;
    /* the row's cells written in place (the row and every mapped field exist: add_row above, the
     * plan's map); FP32 cells -- a model's usual inputs and outputs -- without a setter call */
    inf_value *cells = out->vals + (size_t)row * (size_t)out->cap_fields;
    const unsigned n_fields = (unsigned)out->n_fields;
    const tcol *cols = plan->cols;
    const int *fmap = map + N_META;
    for (int g = 0; g < plan->n_segs; g++) { /* a run of one tensor's elements: its row's start once */
        const tseg sg = plan->segs[g];
        const inf_tensor *x = tensor_at(t, sg.ti);
        int64_t at = k * plan->per_row[sg.ti];
        if (x->dtype == INF_DTYPE_F32) {
            const float *src = (const float *)x->data + at;
            for (int c = sg.c0; c < sg.c1; c++) {
                int f = fmap[c];
                float v = src[cols[c].j];
                if ((unsigned)f >= n_fields) {
                    if ((st = set_cell(out, row, f, x, at + cols[c].j))) return st; /* refused: INF_EINVAL */
                } else if (isfinite(v)) {
                    cells[f].type = INF_FIELD_FLOAT, cells[f].u.f = v;
                } else {
                    cells[f].type = INF_FIELD_NULL;
                }
            }
        } else {
            for (int c = sg.c0; c < sg.c1; c++)
                if ((st = set_cell(out, row, fmap[c], x, at + cols[c].j))) return st;
        }
    }
    return INF_OK;
}
