/*
 * logrow.c -- the prediction log's row plans (logrow.h): the log fields of
 * an executor's scored batches worked out once, then rows set by index.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "io/numfmt.h"
#include "monitor/logrow.h"

static const char *const STAMP_FIELDS[] = {"model_name", "model_version", "pipeline_hash"};
#define N_STAMPS 3

struct inf__mon_row_plan {
    const inf_pipeline *p;
    char *id_name;                /* the records' id field (NULL: none) */
    int n_feat, n_pred;           /* what the plan was built for: feature columns, prediction fields */
    char **feat_names, **pred_names;
    int *feat_cols, n_feat_cols;  /* the logged feature columns */
    int *pred_cols, n_pred_cols;  /* the logged prediction fields (outputs) */
    int stamp_src[N_STAMPS];      /* the prediction field of each stamp, -1 */
    int n_fields;
    const char **field_names;     /* the log fields, in order */
};

/* A feature column of a sensitive input ("ssn", or one-hot "ssn=..."). */
int inf__mon_column_is_sensitive(const inf_pipeline *p, const char *col) {
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

/* Whether name is one of the spec's passthrough fields (canonical spec). */
static int is_passthrough(const cJSON *pt, const char *name) {
    const cJSON *x;
    cJSON_ArrayForEach(x, pt) if (cJSON_IsString(x) && !strcmp(x->valuestring, name)) return 1;
    return 0;
}

/* A prediction field that is a model output (predlog.h LOG ROWS). */
static int is_output_field(const inf_pipeline *p, const cJSON *passthrough, const char *name, const char *id) {
    for (int i = 0; i < N_STAMPS; i++)
        if (!strcmp(name, STAMP_FIELDS[i])) return 0;
    if (id && !strcmp(name, id)) return 0;
    if (is_passthrough(passthrough, name)) return 0;
    return !inf_pipeline_is_sensitive(p, name);
}

void inf__mon_plan_free(inf__mon_row_plan *plan) {
    if (!plan) return;
    for (int i = 0; plan->feat_names && i < plan->n_feat; i++) free(plan->feat_names[i]);
    for (int i = 0; plan->pred_names && i < plan->n_pred; i++) free(plan->pred_names[i]);
    free(plan->feat_names);
    free(plan->pred_names);
    free(plan->feat_cols);
    free(plan->pred_cols);
    free(plan->field_names);
    free(plan->id_name);
    free(plan);
}

static const char *id_name_of(const inf_pipeline *p, const inf_record_batch *in) {
    const char *id = inf_pipeline_id_column(p);
    return id ? id : in ? inf_record_batch_id_field(in) : NULL;
}

static int copy_names(int n, const char *(*name_of)(const void *, int), const void *ctx, char ***out) {
    if (!(*out = calloc((size_t)(n ? n : 1), sizeof **out))) return -1;
    for (int i = 0; i < n; i++) {
        const char *nm = name_of(ctx, i);
        if (!((*out)[i] = strdup(nm ? nm : ""))) return -1;
    }
    return 0;
}

static const char *feat_name(const void *ex, int j) { return inf_pipeline_exec_feature_column(ex, j); }
static const char *pred_name(const void *pred, int j) { return inf_record_batch_field_name(pred, j); }

inf_status inf__mon_plan_new(const inf_pipeline *p, const inf_pipeline_exec *ex, const inf_record_batch *in,
                             const inf_record_batch *pred, inf__mon_row_plan **out) {
    *out = NULL;
    inf__mon_row_plan *plan = calloc(1, sizeof *plan);
    if (!plan) return INF_ENOMEM;
    plan->p = p;
    plan->n_feat = inf_pipeline_exec_n_feature_columns(ex);
    plan->n_pred = inf_record_batch_n_fields(pred);
    const char *id = id_name_of(p, in);
    cJSON *spec = cJSON_Parse(inf_pipeline_canonical(p) ? inf_pipeline_canonical(p) : "{}");
    const cJSON *pt = cJSON_GetObjectItemCaseSensitive(spec, "passthrough");
    int max_fields = 2 + N_STAMPS + plan->n_feat + plan->n_pred;
    if ((id && !(plan->id_name = strdup(id))) || copy_names(plan->n_feat, feat_name, ex, &plan->feat_names) ||
        copy_names(plan->n_pred, pred_name, pred, &plan->pred_names) ||
        !(plan->feat_cols = calloc((size_t)plan->n_feat + 1, sizeof *plan->feat_cols)) ||
        !(plan->pred_cols = calloc((size_t)plan->n_pred + 1, sizeof *plan->pred_cols)) ||
        !(plan->field_names = calloc((size_t)max_fields, sizeof *plan->field_names))) {
        cJSON_Delete(spec);
        inf__mon_plan_free(plan);
        return INF_ENOMEM;
    }
    plan->field_names[plan->n_fields++] = "record_id";
    plan->field_names[plan->n_fields++] = "logged_at";
    for (int i = 0; i < N_STAMPS; i++)
        if ((plan->stamp_src[i] = inf_record_batch_find_field(pred, STAMP_FIELDS[i])) >= 0)
            plan->field_names[plan->n_fields++] = STAMP_FIELDS[i];
    int nr = 0, nc = 0;
    if (!inf_pipeline_features(ex, &nr, &nc)) nc = 0;
    for (int j = 0; j < plan->n_feat && j < nc; j++) {
        if (!inf_pipeline_exec_feature_column(ex, j) || inf__mon_column_is_sensitive(p, plan->feat_names[j])) continue;
        plan->feat_cols[plan->n_feat_cols++] = j;
        plan->field_names[plan->n_fields++] = plan->feat_names[j];
    }
    for (int j = 0; j < plan->n_pred; j++) {
        if (!is_output_field(p, pt, plan->pred_names[j], id)) continue;
        plan->pred_cols[plan->n_pred_cols++] = j;
        plan->field_names[plan->n_fields++] = plan->pred_names[j];
    }
    cJSON_Delete(spec);
    *out = plan;
    return INF_OK;
}

static int same_name(const char *a, const char *b) { return b ? !strcmp(a, b) : !*a; }

int inf__mon_plan_matches(const inf__mon_row_plan *plan, const inf_pipeline *p, const inf_pipeline_exec *ex,
                          const inf_record_batch *in, const inf_record_batch *pred) {
    if (plan->p != p || plan->n_feat != inf_pipeline_exec_n_feature_columns(ex) ||
        plan->n_pred != inf_record_batch_n_fields(pred))
        return 0;
    const char *id = id_name_of(p, in);
    if (!plan->id_name != !id || (id && strcmp(id, plan->id_name))) return 0;
    for (int j = 0; j < plan->n_feat; j++)
        if (!same_name(plan->feat_names[j], inf_pipeline_exec_feature_column(ex, j))) return 0;
    for (int j = 0; j < plan->n_pred; j++)
        if (!same_name(plan->pred_names[j], inf_record_batch_field_name(pred, j))) return 0;
    return 1;
}

int inf__mon_plan_n_fields(const inf__mon_row_plan *plan) { return plan->n_fields; }

inf_status inf__mon_plan_bind(const inf__mon_row_plan *plan, inf_record_batch *out, int *map) {
    for (int i = 0; i < plan->n_fields; i++) {
        inf_status st = inf_record_batch_add_field(out, plan->field_names[i], &map[i]);
        if (st) return st;
    }
    return INF_OK;
}

int inf__mon_plan_id_field(const inf__mon_row_plan *plan, const inf_record_batch *in) {
    return plan->id_name ? inf_record_batch_find_field(in, plan->id_name) : -1;
}

/* The record's id as text (numbers as the sinks write them). */
static inf_status set_id(inf_record_batch *out, int row, int f, const inf_value *v) {
    char num[INF__FMT_NUM_MAX];
    switch (v->type) {
    case INF_FIELD_STRING: return inf_record_batch_set(out, row, f, v);
    case INF_FIELD_INT: return inf_record_batch_set_string(out, row, f, num, (size_t)inf__fmt_i64(v->u.i, num));
    case INF_FIELD_NULL: return INF_OK;
    default: {
        double d = 0;
        inf_value_to_double(v, &d);
        return inf_record_batch_set_string(out, row, f, num, (size_t)inf__fmt_g17(d, num));
    }
    }
}

inf_status inf__mon_plan_row(const inf__mon_row_plan *plan, const int *map, const inf_pipeline_exec *ex,
                             const inf_record_batch *in, int id_f, const inf_record_batch *pred, int k, int64_t now_us,
                             const char *model_name, inf_record_batch *out) {
    int row, c = 0;
    inf_status st;
    if ((st = inf_record_batch_add_row(out, &row))) return st;
    if (id_f >= 0 && (st = set_id(out, row, map[c], inf_record_batch_get(in, inf_pipeline_accepted_row(ex, k), id_f))))
        return st;
    c++;
    if ((st = inf_record_batch_set_timestamp(out, row, map[c++], now_us))) return st;
    for (int i = 0; i < N_STAMPS; i++) {
        if (plan->stamp_src[i] < 0) continue;
        if (i == 0 && model_name) st = inf_record_batch_set_string(out, row, map[c++], model_name, strlen(model_name));
        else st = inf_record_batch_set(out, row, map[c++], inf_record_batch_get(pred, k, plan->stamp_src[i]));
        if (st) return st;
    }
    int nr = 0, nc = 0;
    const double *x = inf_pipeline_features(ex, &nr, &nc);
    for (int i = 0; i < plan->n_feat_cols; i++, c++) {
        int j = plan->feat_cols[i];
        double v = x && k < nr && j < nc ? x[(size_t)k * (size_t)nc + (size_t)j] : NAN;
        if (isfinite(v) && (st = inf_record_batch_set_float(out, row, map[c], v))) return st;
    }
    for (int i = 0; i < plan->n_pred_cols; i++, c++)
        if ((st = inf_record_batch_set(out, row, map[c], inf_record_batch_get(pred, k, plan->pred_cols[i])))) return st;
    return INF_OK;
}
