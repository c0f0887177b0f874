/*
 * quality.c -- quality of joined labels per window (quality.h).
 */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tools/quality.h"

static int join_task(const inf__mon_join *jn) {
    for (int64_t i = 0; i < jn->rows_joined; i++)
        if ((jn->y[i] != 0 && jn->y[i] != 1) || !(jn->score[i] >= 0 && jn->score[i] <= 1)) return INF__TASK_REGRESSION;
    return INF__TASK_BINARY;
}

inf_status inf__quality_metrics(const inf__mon_join *jn, inf__metrics *q) {
    int n = (int)jn->rows_joined, task = join_task(jn);
    if (task == INF__TASK_REGRESSION) {
        inf__metrics_regression(jn->y, jn->score, n, q);
        return INF_OK;
    }
    int *y = malloc((size_t)(n ? n : 1) * sizeof *y);
    if (!y) return INF_ENOMEM;
    for (int i = 0; i < n; i++)
        y[i] = jn->y[i] != 0;
    inf__metrics_binary(y, jn->score, n, q);
    free(y);
    return INF_OK;
}

void inf__quality_metrics_json(cJSON *mj, const inf__metrics *q) {
    for (int k = 0; k < INF__N_METRICS; k++) {
        if (!inf__metric_applies(q->task, k)) continue;
        if (isfinite(q->v[k]))
            cJSON_AddNumberToObject(mj, inf__metric_names[k], q->v[k]);
        else
            cJSON_AddNullToObject(mj, inf__metric_names[k]);
    }
}

static int64_t floor_div(int64_t a, int64_t b) { return a / b - (a % b != 0 && (a < 0) != (b < 0)); }

static int cmp_i64(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

cJSON *inf__quality_windows_json(const inf__mon_join *jn, int64_t window_us) {
    cJSON *arr = cJSON_CreateArray();
    int64_t n = jn->rows_joined;
    int64_t *starts = malloc((size_t)(n ? n : 1) * sizeof *starts);
    inf__mon_join sub = *jn;
    sub.y = malloc((size_t)(n ? n : 1) * sizeof *sub.y);
    sub.score = malloc((size_t)(n ? n : 1) * sizeof *sub.score);
    int ok = arr && starts && sub.y && sub.score;
    int64_t n_st = 0;
    for (int64_t i = 0; ok && i < n; i++) /* each pair's window start, then the distinct ones in order */
        if (jn->at[i] != INT64_MIN) starts[n_st++] = floor_div(jn->at[i], window_us) * window_us;
    if (ok) qsort(starts, (size_t)n_st, sizeof *starts, cmp_i64);
    int64_t n_distinct = 0;
    for (int64_t k = 0; ok && k < n_st; k++)
        if (!n_distinct || starts[n_distinct - 1] != starts[k]) starts[n_distinct++] = starts[k];
    for (int64_t k = 0; ok && k < n_distinct; k++) {
        sub.rows_joined = 0;
        for (int64_t i = 0; i < n; i++)
            if (jn->at[i] != INT64_MIN && floor_div(jn->at[i], window_us) * window_us == starts[k]) {
                sub.y[sub.rows_joined] = jn->y[i];
                sub.score[sub.rows_joined++] = jn->score[i];
            }
        inf__metrics q;
        memset(&q, 0, sizeof q);
        cJSON *w = cJSON_CreateObject(), *mj = cJSON_CreateObject();
        char t0[40], t1[40];
        if (!w || !mj || inf__quality_metrics(&sub, &q)) {
            cJSON_Delete(w);
            cJSON_Delete(mj);
            ok = 0;
            break;
        }
        cJSON_AddStringToObject(w, "start", inf_format_timestamp(starts[k], t0, sizeof t0));
        cJSON_AddStringToObject(w, "end", inf_format_timestamp(starts[k] + window_us, t1, sizeof t1));
        cJSON_AddNumberToObject(w, "rows", (double)sub.rows_joined);
        cJSON_AddStringToObject(w, "task", inf__task_names[q.task]);
        inf__quality_metrics_json(mj, &q);
        cJSON_AddItemToObject(w, "metrics", mj);
        cJSON_AddItemToArray(arr, w);
    }
    free(starts);
    free(sub.y);
    free(sub.score);
    if (!ok) {
        cJSON_Delete(arr);
        return NULL;
    }
    return arr;
}

char **inf__quality_skip_new(const inf_pipeline *p) {
    int nf = p ? inf_pipeline_n_feature_columns(p) : 0;
    char **skip = calloc((size_t)nf + 1, sizeof *skip);
    for (int i = 0; skip && i < nf; i++)
        if (!(skip[i] = strdup(inf_pipeline_feature_column(p, i)))) {
            inf__quality_skip_free(skip);
            return NULL;
        }
    return skip;
}

void inf__quality_skip_free(char **skip) {
    for (char **k = skip; k && *k; k++)
        free(*k);
    free(skip);
}

bool inf__quality_default_prediction(const inf_model *m, const inf_pipeline *p, char *buf, size_t size) {
    if (!m || !p || !inf_pipeline_is_default(p))
        return false;
    const inf_value_info *pick = NULL;
    for (int i = 0; i < inf_model_n_outputs(m); i++) {
        const inf_value_info *o = inf_model_output(m, i);
        if (o->kind != INF_KIND_TENSOR || (o->dtype != INF_DTYPE_F32 && o->dtype != INF_DTYPE_F64))
            continue;
        if (inf__tools_scores_name(o->name)) {
            pick = o;
            break;
        }
        if (!pick)
            pick = o;
    }
    if (!pick || pick->ndim < 1 || pick->ndim > 2)
        return false;
    int64_t width = pick->ndim == 2 ? pick->dims[1] : 1;
    if (width == 1)
        snprintf(buf, size, "%s", pick->name);
    else if (width == 2)
        snprintf(buf, size, "%s_1", pick->name);
    else
        return false;
    return true;
}

inf_status inf__quality_join(const inf__mon_labels_src *lab, const char *log_uri, const char *model,
                             const char *version, const char *const *skip, const char *preferred, inf__mon_join *jn,
                             inf_error *err) {
    inf__mon_join_options jo = {.log_uri = lab->log[0] ? lab->log : log_uri,
                                .labels_uri = lab->source,
                                .id_column = lab->id_column,
                                .label_column = lab->label_column,
                                .prediction_column = lab->prediction_column[0] ? lab->prediction_column : NULL,
                                .skip = skip,
                                .preferred = preferred,
                                .model = model,
                                .version = version};
    if (!jo.log_uri)
        return inf_error_set(err, INF_EINVAL, "labels: no prediction log to join (labels.log or --log-predictions)");
    return inf__mon_join_labels(&jo, jn, err);
}

static int64_t parse_start(const cJSON *w) {
    const cJSON *s = cJSON_GetObjectItemCaseSensitive(w, "start");
    int64_t t;
    return cJSON_IsString(s) && !inf_parse_timestamp(s->valuestring, strlen(s->valuestring), &t) ? t : INT64_MIN;
}

int inf__quality_rule_step(const inf__mon_rule *r, inf__mon_rule_state *st, const inf__mon_join *jn, const char *model,
                           const char *version, cJSON **window) {
    *window = NULL;
    cJSON *qw = inf__quality_windows_json(jn, r->window_us);
    int n = qw ? cJSON_GetArraySize(qw) : 0;
    if (n == 0) {
        cJSON_Delete(qw);
        return 0;
    }
    cJSON *w = cJSON_DetachItemFromArray(qw, n - 1);
    cJSON_Delete(qw);
    int64_t t0 = parse_start(w);
    if (!w || t0 == INT64_MIN) {
        cJSON_Delete(w);
        return 0;
    }
    cJSON_AddStringToObject(w, "model", model);
    cJSON_AddStringToObject(w, "version", version);
    *window = w;
    return inf__mon_rule_step(r, st, w, t0, t0 + r->window_us);
}

cJSON *inf__quality_doc(const inf__mon_join *jn, int64_t window_us, const char *model, const char *version) {
    cJSON *doc = cJSON_CreateObject(), *w = inf__quality_windows_json(jn, window_us);
    if (!doc || !w) {
        cJSON_Delete(doc);
        cJSON_Delete(w);
        return NULL;
    }
    char now[40];
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    cJSON_AddStringToObject(doc, "model", model);
    cJSON_AddStringToObject(doc, "version", version);
    cJSON_AddNumberToObject(doc, "window_s", (double)window_us / 1e6);
    cJSON_AddStringToObject(doc, "updated",
                            inf_format_timestamp((int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000, now, sizeof now));
    cJSON_AddNumberToObject(doc, "rows_joined", (double)jn->rows_joined);
    cJSON_AddItemToObject(doc, "windows", w);
    return doc;
}
