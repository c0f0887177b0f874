/*
 * rules.c -- alert rules (rules.h): the rule file's parser (one table of
 * fields) and the check of a rule against one drift window.
 */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "monitor/rules.h"

int64_t inf__mon_parse_duration_us(const char *s) {
    char *end;
    double v = strtod(s, &end);
    static const struct {
        const char *suffix;
        double seconds;
    } units[] = {{"", 1}, {"s", 1}, {"m", 60}, {"h", 3600}, {"d", 86400}};
    for (size_t i = 0; end != s && i < sizeof units / sizeof units[0]; i++)
        if (!strcmp(end, units[i].suffix) && v > 0 && v * units[i].seconds < 1e12)
            return (int64_t)(v * units[i].seconds * 1e6);
    return 0;
}

/* Drift metrics (bigger = worse), then quality metrics with their
 * direction (the labels' metrics of `monitor labels`). */
static const struct {
    const char *name;
    int quality, higher_is_better;
} METRICS[] = {{"psi", 0, 0},      {"js", 0, 0},   {"ks", 0, 0},   {"chi2", 0, 0},    {"accuracy", 1, 1},
               {"precision", 1, 1}, {"recall", 1, 1}, {"f1", 1, 1}, {"auc", 1, 1},     {"logloss", 1, 0},
               {"rmse", 1, 0},      {"mae", 1, 0},  {"r2", 1, 1}};
static const struct {
    const char *name;
    int bit;
} ACTIONS[] = {{"log", 0}, {"webhook", INF__MON_ACT_WEBHOOK}, {"rollback", INF__MON_ACT_ROLLBACK}};

static int copy_field(char *dst, size_t size, const cJSON *x) {
    if (!cJSON_IsString(x) || strlen(x->valuestring) >= size) return -1;
    memcpy(dst, x->valuestring, strlen(x->valuestring) + 1);
    return 0;
}

static inf_status action_bits(const cJSON *a, int *bits, const char *where, int i, inf_error *err) {
    const cJSON *x;
    const cJSON *one = cJSON_IsString(a) ? a : NULL;
    if (!a) return INF_OK;
    if (!one && !cJSON_IsArray(a))
        return inf_error_set(err, INF_EFORMAT, "%s: rules[%d].action must be a string or an array of them", where, i);
    for (x = one ? one : a->child; x; x = one ? NULL : x->next) {
        size_t k = 0;
        while (k < sizeof ACTIONS / sizeof ACTIONS[0] && (!cJSON_IsString(x) || strcmp(x->valuestring, ACTIONS[k].name)))
            k++;
        if (k == sizeof ACTIONS / sizeof ACTIONS[0])
            return inf_error_set(err, INF_EFORMAT, "%s: rules[%d].action: expected log, webhook or rollback", where, i);
        *bits |= ACTIONS[k].bit;
    }
    return INF_OK;
}

static inf_status duration_field(const cJSON *rule, const char *key, int64_t dflt, int zero_ok, int64_t *out,
                                 const char *where, int i, inf_error *err) {
    const cJSON *x = cJSON_GetObjectItemCaseSensitive(rule, key);
    *out = dflt;
    if (!x) return INF_OK;
    if (cJSON_IsNumber(x) && x->valuedouble >= 0 && x->valuedouble < 1e12) {
        *out = (int64_t)(x->valuedouble * 1e6);
    } else if (cJSON_IsString(x)) {
        *out = inf__mon_parse_duration_us(x->valuestring);
        if (*out == 0 && !(zero_ok && strtod(x->valuestring, NULL) == 0 && x->valuestring[0] == '0')) *out = -1;
    } else {
        *out = -1;
    }
    if (*out < 0 || (!zero_ok && *out == 0))
        return inf_error_set(err, INF_EFORMAT, "%s: rules[%d].%s needs a duration such as 90s, 15m, 1h, 1d", where, i,
                             key);
    return INF_OK;
}

static inf_status parse_rule(const cJSON *j, int i, const char *where, inf__mon_rule *r, inf_error *err) {
    memset(r, 0, sizeof *r);
    if (!cJSON_IsObject(j)) return inf_error_set(err, INF_EFORMAT, "%s: rules[%d] is not an object", where, i);
    if (copy_field(r->name, sizeof r->name, cJSON_GetObjectItemCaseSensitive(j, "name")))
        return inf_error_set(err, INF_EFORMAT, "%s: rules[%d] needs a \"name\" (a string)", where, i);
    const cJSON *m = cJSON_GetObjectItemCaseSensitive(j, "metric");
    size_t k = 0;
    while (k < sizeof METRICS / sizeof METRICS[0] && (!cJSON_IsString(m) || strcmp(m->valuestring, METRICS[k].name))) k++;
    if (k == sizeof METRICS / sizeof METRICS[0])
        return inf_error_set(err, INF_EFORMAT,
                             "%s: rule '%s': \"metric\" must be psi, js, ks, chi2 (drift) or accuracy, precision, "
                             "recall, f1, auc, logloss, rmse, mae, r2 (quality)", where, r->name);
    snprintf(r->metric, sizeof r->metric, "%s", METRICS[k].name);
    r->quality = METRICS[k].quality;
    r->higher_is_better = METRICS[k].higher_is_better;
    const cJSON *f = cJSON_GetObjectItemCaseSensitive(j, "feature");
    if (!f) snprintf(r->feature, sizeof r->feature, "*");
    else if (copy_field(r->feature, sizeof r->feature, f))
        return inf_error_set(err, INF_EFORMAT, "%s: rule '%s': \"feature\" must be a column name or \"*\"", where, r->name);
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(j, "threshold");
    if (!cJSON_IsNumber(t) || !isfinite(t->valuedouble))
        return inf_error_set(err, INF_EFORMAT, "%s: rule '%s': \"threshold\" must be a number", where, r->name);
    r->threshold = t->valuedouble;
    inf_status st;
    if ((st = duration_field(j, "window", 3600000000LL, 0, &r->window_us, where, i, err)) ||
        (st = duration_field(j, "for", 0, 1, &r->for_us, where, i, err)))
        return st;
    const cJSON *mr = cJSON_GetObjectItemCaseSensitive(j, "min_rows");
    r->min_rows = 30;
    if (mr && !(cJSON_IsNumber(mr) && mr->valuedouble >= 0 && mr->valuedouble < 1e15))
        return inf_error_set(err, INF_EFORMAT, "%s: rule '%s': \"min_rows\" must be a count", where, r->name);
    if (mr) r->min_rows = (int64_t)mr->valuedouble;
    if ((st = action_bits(cJSON_GetObjectItemCaseSensitive(j, "action"), &r->actions, where, i, err))) return st;
    const cJSON *w = cJSON_GetObjectItemCaseSensitive(j, "webhook");
    if (w && (copy_field(r->webhook, sizeof r->webhook, w) || strncmp(r->webhook, "http://", 7)))
        return inf_error_set(err, INF_EFORMAT, "%s: rule '%s': \"webhook\" must be an http:// URL", where, r->name);
    if ((r->actions & INF__MON_ACT_WEBHOOK) && !r->webhook[0])
        return inf_error_set(err, INF_EFORMAT, "%s: rule '%s': action webhook needs a \"webhook\" URL", where, r->name);
    const cJSON *a = cJSON_GetObjectItemCaseSensitive(j, "alias");
    if (!a) snprintf(r->alias, sizeof r->alias, "production");
    else if (copy_field(r->alias, sizeof r->alias, a) || !r->alias[0])
        return inf_error_set(err, INF_EFORMAT, "%s: rule '%s': \"alias\" must be an alias name", where, r->name);
    return INF_OK;
}

/* The optional "labels" section (rules.h LABELS). */
static inf_status parse_labels(const cJSON *j, const char *where, inf__mon_labels_src *out, inf_error *err) {
    memset(out, 0, sizeof *out);
    if (!j) return INF_OK;
    if (!cJSON_IsObject(j)) return inf_error_set(err, INF_EFORMAT, "%s: \"labels\" must be an object", where);
    static const struct {
        const char *key;
        size_t off, size;
        int required;
    } FIELDS[] = {
        {"source", offsetof(inf__mon_labels_src, source), sizeof out->source, 1},
        {"id_column", offsetof(inf__mon_labels_src, id_column), sizeof out->id_column, 1},
        {"label_column", offsetof(inf__mon_labels_src, label_column), sizeof out->label_column, 1},
        {"prediction_column", offsetof(inf__mon_labels_src, prediction_column), sizeof out->prediction_column, 0},
        {"log", offsetof(inf__mon_labels_src, log), sizeof out->log, 0},
    };
    for (size_t k = 0; k < sizeof FIELDS / sizeof FIELDS[0]; k++) {
        const cJSON *x = cJSON_GetObjectItemCaseSensitive(j, FIELDS[k].key);
        if (!x && !FIELDS[k].required) continue;
        if (copy_field((char *)out + FIELDS[k].off, FIELDS[k].size, x) || !((char *)out + FIELDS[k].off)[0])
            return inf_error_set(err, INF_EFORMAT, "%s: labels.%s must be a non-empty string", where, FIELDS[k].key);
    }
    out->window_us = 3600000000LL;
    const cJSON *w = cJSON_GetObjectItemCaseSensitive(j, "window");
    if (w && !(cJSON_IsString(w) && (out->window_us = inf__mon_parse_duration_us(w->valuestring)) > 0))
        return inf_error_set(err, INF_EFORMAT, "%s: labels.window needs a duration such as 90s, 15m, 1h, 1d", where);
    out->has = 1;
    return INF_OK;
}

inf_status inf__mon_rules_parse(const char *text, size_t len, const char *where, inf__mon_rules *out, inf_error *err) {
    memset(out, 0, sizeof *out);
    cJSON *j = cJSON_ParseWithLength(text, len);
    if (!j) return inf_error_set(err, INF_EFORMAT, "%s: not JSON", where);
    const cJSON *arr = cJSON_IsArray(j) ? j : cJSON_GetObjectItemCaseSensitive(j, "rules");
    int n = cJSON_IsArray(arr) ? cJSON_GetArraySize(arr) : -1;
    inf_status st = INF_OK;
    if (n <= 0) st = inf_error_set(err, INF_EFORMAT, "%s: expected {\"rules\": [ {...}, ... ]} with at least one rule", where);
    else if (!(out->rules = calloc((size_t)n, sizeof *out->rules))) st = inf_error_set(err, INF_ENOMEM, "%s: out of memory", where);
    for (int i = 0; st == INF_OK && i < n; i++) st = parse_rule(cJSON_GetArrayItem(arr, i), i, where, &out->rules[i], err);
    if (st == INF_OK && cJSON_IsObject(j))
        st = parse_labels(cJSON_GetObjectItemCaseSensitive(j, "labels"), where, &out->labels, err);
    cJSON_Delete(j);
    if (st) {
        inf__mon_rules_free(out);
        return st;
    }
    out->n = n;
    return INF_OK;
}

inf_status inf__mon_rules_load(const char *path, inf__mon_rules *out, inf_error *err) {
    void *data = NULL;
    size_t size = 0;
    memset(out, 0, sizeof *out);
    inf_status st = inf_file_read(path, "rule file", INF_FILE_MAX_SPEC_BYTES, &data, &size, err);
    if (st) return st;
    st = inf__mon_rules_parse(data, size, path, out, err);
    inf_file_free(data);
    return st;
}

void inf__mon_rules_free(inf__mon_rules *rs) {
    free(rs->rules);
    rs->rules = NULL;
    rs->n = 0;
}

int inf__mon_rule_check(const inf__mon_rule *r, const cJSON *drift, double *value, const char **column) {
    *value = NAN;
    *column = NULL;
    const cJSON *rows = cJSON_GetObjectItemCaseSensitive(drift, "rows");
    if (!cJSON_IsNumber(rows) || rows->valuedouble < (double)r->min_rows) return -1;
    if (r->quality) {
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(drift, "metrics"), r->metric);
        if (!cJSON_IsNumber(v)) return -1;
        *value = v->valuedouble;
        return r->higher_is_better ? *value < r->threshold : *value > r->threshold;
    }
    static const char *const sections[] = {"features", "outputs"};
    int any = 0;
    for (int s = 0; s < 2; s++) {
        const cJSON *c;
        cJSON_ArrayForEach(c, cJSON_GetObjectItemCaseSensitive(drift, sections[s])) {
            if (strcmp(r->feature, "*") && strcmp(r->feature, c->string)) continue;
            const cJSON *v = cJSON_GetObjectItemCaseSensitive(c, r->metric);
            if (!cJSON_IsNumber(v)) continue;
            if (!any || v->valuedouble > *value) {
                *value = v->valuedouble;
                *column = c->string;
            }
            any = 1;
        }
    }
    if (!any) return -1;
    return *value > r->threshold;
}

cJSON *inf__mon_alert_json(const inf__mon_rule *r, const cJSON *drift, double value, const char *column) {
    cJSON *a = cJSON_CreateObject();
    if (!a) return NULL;
    cJSON_AddStringToObject(a, "rule", r->name);
    cJSON_AddStringToObject(a, "metric", r->metric);
    cJSON_AddStringToObject(a, "feature", column ? column : r->feature);
    cJSON_AddNumberToObject(a, "value", value);
    cJSON_AddNumberToObject(a, "threshold", r->threshold);
    static const char *const copied[] = {"model", "version", "rows", "start", "end"};
    static const char *const as[] = {"model", "version", "rows", "window_start", "window_end"};
    for (size_t i = 0; i < sizeof copied / sizeof copied[0]; i++) {
        const cJSON *x = cJSON_GetObjectItemCaseSensitive(drift, copied[i]);
        if (x) cJSON_AddItemToObject(a, as[i], cJSON_Duplicate(x, 1));
    }
    return a;
}

int inf__mon_rule_step(const inf__mon_rule *r, inf__mon_rule_state *st, const cJSON *drift, int64_t since_us,
                       int64_t now_us) {
    double value;
    const char *col;
    int res = inf__mon_rule_check(r, drift, &value, &col);
    if (res >= 0) {
        st->value = value;
        snprintf(st->column, sizeof st->column, "%s", col ? col : "");
    }
    if (res == 1) {
        if (!st->breaching) {
            st->breaching = 1;
            st->breach_since_us = since_us;
        }
        if (st->firing || now_us - st->breach_since_us < r->for_us) return 0;
        st->firing = 1;
        return 1;
    }
    if (res == 0) {
        int was = st->firing;
        st->breaching = st->firing = 0;
        st->breach_since_us = 0;
        return was ? -1 : 0;
    }
    return 0;
}
