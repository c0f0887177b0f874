/*
 * alerts.c -- alert rules in `infera stream` (issue 23; docs/monitoring.md
 * "Alerts"): `--monitor RULES` checks every drift window the stream reports
 * against the rules file `infera serve --monitor` and `infera monitor check`
 * read, with the same actions (a log line, the webhook, the rollback of a
 * registry alias, audited) -- monitor/rules.h steps each rule's state
 * window after window (a breach is dated from its first window's start, so
 * "for" counts consecutive windows as `monitor check` does), and
 * monitor/actions.h acts.  A rule fires once per breach: again only after a
 * window with min_rows rows clears it.
 * QUALITY.  With a "labels" section in the rules file (monitor/rules.h
 * LABELS), the labels are joined with the stream's --log-predictions every
 * QUALITY_PERIOD_MS as the stream goes and once more at its end (after the
 * log is drained): the quality per window is stored (monitor/
 * quality_store.h), the newest window reported as an {"event":"quality",...}
 * line, and the quality rules stepped with it (src/tools/quality.c: the
 * join and metrics of `infera monitor labels`) -- the same actions.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "monitor/actions.h"
#include "monitor/quality_store.h"
#include "monitor/rules.h"
#include "stream/stream_int.h"
#include "tools/quality.h"

#define QUALITY_PERIOD_MS 10000

struct inf__stream_alerts {
    inf__mon_rules rules;
    inf__mon_rule_state *state; /* one per rule */
    inf_registry *registry;     /* the stream's model's (borrowed); NULL for a file model */
    char model[256];
    int64_t version;
    uint64_t fired;
    char version_text[64]; /* the version as logged (the join's filter) */
    const char *log_uri;   /* --log-predictions (borrowed; may be NULL) */
    char **skip;           /* the pipeline's feature columns, NULL-terminated */
    char preferred[256];   /* the default pipeline's score column ("": none; tools/quality.h) */
    int64_t last_quality_ms;
    char quality_error[256];
};

inf_status inf__stream_alerts_open(const char *path, inf__rt_model *m, const char *log_uri, inf__stream_alerts **out,
                                   inf_error *err) {
    *out = NULL;
    inf__stream_alerts *a = calloc(1, sizeof *a);
    if (!a) return inf_error_set(err, INF_ENOMEM, "--monitor: out of memory");
    inf_status st = inf__mon_rules_load(path, &a->rules, err);
    if (st) {
        free(a);
        return st;
    }
    if (!(a->state = calloc((size_t)a->rules.n + 1, sizeof *a->state))) {
        inf__stream_alerts_free(a);
        return inf_error_set(err, INF_ENOMEM, "--monitor: out of memory");
    }
    for (int i = 0; i < a->rules.n; i++)
        if (a->rules.rules[i].quality && !a->rules.labels.has)
            fprintf(stderr,
                    "infera stream: rule '%s': a quality rule needs labels: a \"labels\" section in %s "
                    "(docs/monitoring.md)\n",
                    a->rules.rules[i].name, path);
    if (a->rules.labels.has && !a->rules.labels.log[0] && !log_uri) {
        inf__stream_alerts_free(a);
        return inf_error_set(err, INF_EINVAL,
                             "%s: its labels are joined with the prediction log: give "
                             "--log-predictions DST (or labels.log)",
                             path);
    }
    if (!(a->skip = inf__quality_skip_new(m->pipeline))) {
        inf__stream_alerts_free(a);
        return inf_error_set(err, INF_ENOMEM, "--monitor: out of memory");
    }
    if (!inf__quality_default_prediction(m->model, m->pipeline, a->preferred, sizeof a->preferred))
        a->preferred[0] = 0;
    snprintf(a->version_text, sizeof a->version_text, "%s", m->version);
    a->log_uri = log_uri;
    a->last_quality_ms = inf__stream_now_ms();
    a->registry = m->from_registry ? m->registry : NULL;
    snprintf(a->model, sizeof a->model, "%s", m->name);
    a->version = m->from_registry ? m->version_num : 0;
    *out = a;
    return INF_OK;
}

void inf__stream_alerts_free(inf__stream_alerts *a) {
    if (!a) return;
    inf__mon_rules_free(&a->rules);
    inf__quality_skip_free(a->skip);
    free(a->state);
    free(a);
}

int inf__stream_alerts_need_windows(const inf__stream_alerts *a) {
    for (int i = 0; a && i < a->rules.n; i++)
        if (!a->rules.rules[i].quality) return 1;
    return 0;
}

uint64_t inf__stream_alerts_fired(const inf__stream_alerts *a) { return a ? a->fired : 0; }

static int64_t seconds_us(const cJSON *drift, const char *key) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(drift, key);
    return cJSON_IsNumber(v) ? (int64_t)(v->valuedouble * 1e6 + (v->valuedouble >= 0 ? 0.5 : -0.5)) : 0;
}

/* The alert as a {"event":"alert",...} line, then the actions. */
static void fire(inf__stream_alerts *a, const inf__mon_rule *r, const inf__mon_rule_state *st, const cJSON *drift) {
    cJSON *alert = inf__mon_alert_json(r, drift, st->value, st->column);
    if (!alert) return;
    a->fired++;
    cJSON_AddStringToObject(alert, "status", "firing");
    inf__mon_act_result res;
    if (r->quality) cJSON_ReplaceItemInObjectCaseSensitive(alert, "feature", cJSON_CreateString(r->feature));
    inf__mon_alert_act(r, alert, a->registry, a->model, a->version, "infera stream", &res);
    char *json = cJSON_PrintUnformatted(alert);
    if (json && json[0] == '{' && json[1] != '}') fprintf(stderr, "{\"event\":\"alert\",%s\n", json + 1);
    cJSON_free(json);
    cJSON_Delete(alert);
}

void inf__stream_alerts_check(inf__stream_alerts *a, const cJSON *drift) {
    if (!a || !drift) return;
    int64_t start = seconds_us(drift, "start"), end = seconds_us(drift, "end");
    for (int i = 0; i < a->rules.n; i++) {
        const inf__mon_rule *r = &a->rules.rules[i];
        if (r->quality) continue;
        int step = inf__mon_rule_step(r, &a->state[i], drift, start, end);
        if (step < 0) fprintf(stderr, "infera stream: alert '%s' resolved: model '%s'\n", r->name, a->model);
        if (step > 0) fire(a, r, &a->state[i], drift);
    }
}

/* An {"event":"quality",...} line: the newest window of the labels joined so far. */
static void quality_event(const cJSON *doc) {
    const cJSON *w = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(doc, "windows"),
                                        cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(doc, "windows")) - 1);
    cJSON *e = w ? cJSON_Duplicate(w, 1) : NULL;
    if (!e) return;
    cJSON_AddItemToObject(e, "model", cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(doc, "model"), 1));
    cJSON_AddItemToObject(e, "version", cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(doc, "version"), 1));
    char *json = cJSON_PrintUnformatted(e);
    if (json && json[0] == '{' && json[1] != '}') fprintf(stderr, "{\"event\":\"quality\",%s\n", json + 1);
    cJSON_free(json);
    cJSON_Delete(e);
}

void inf__stream_alerts_quality(inf__stream_alerts *a, int final) {
    if (!a || !a->rules.labels.has) return;
    int64_t now = inf__stream_now_ms();
    if (!final && now - a->last_quality_ms < QUALITY_PERIOD_MS) return;
    a->last_quality_ms = now;
    inf__mon_join jn;
    inf_error err;
    if (inf__quality_join(&a->rules.labels, a->log_uri, a->model, a->version_text, (const char *const *)a->skip,
                          a->preferred[0] ? a->preferred : NULL, &jn, &err)) {
        if (strcmp(a->quality_error, err.message)) /* once per distinct error: labels may not have arrived yet */
            fprintf(stderr, "infera stream: quality: %s\n", err.message);
        snprintf(a->quality_error, sizeof a->quality_error, "%s", err.message);
        return;
    }
    a->quality_error[0] = 0;
    cJSON *doc = jn.rows_joined ? inf__quality_doc(&jn, a->rules.labels.window_us, a->model, a->version_text) : NULL;
    if (doc) {
        if (inf__mon_quality_store(NULL, a->model, a->version_text, doc, &err))
            fprintf(stderr, "infera stream: quality: %s\n", err.message);
        quality_event(doc);
    }
    cJSON_Delete(doc);
    for (int i = 0; i < a->rules.n; i++) {
        const inf__mon_rule *r = &a->rules.rules[i];
        if (!r->quality) continue;
        cJSON *w;
        int step = inf__quality_rule_step(r, &a->state[i], &jn, a->model, a->version_text, &w);
        if (step < 0) fprintf(stderr, "infera stream: alert '%s' resolved: model '%s'\n", r->name, a->model);
        if (step > 0) fire(a, r, &a->state[i], w);
        cJSON_Delete(w);
    }
    inf__mon_join_free(&jn);
}
