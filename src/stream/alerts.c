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
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "monitor/actions.h"
#include "monitor/rules.h"
#include "stream/stream_int.h"

struct inf__stream_alerts {
    inf__mon_rules rules;
    inf__mon_rule_state *state; /* one per rule */
    inf_registry *registry;     /* the stream's model's (borrowed); NULL for a file model */
    char model[256];
    int64_t version;
    uint64_t fired;
};

inf_status inf__stream_alerts_open(const char *path, inf__rt_model *m, inf__stream_alerts **out, inf_error *err) {
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
        if (a->rules.rules[i].quality)
            fprintf(stderr,
                    "infera stream: rule '%s': a quality rule needs labels, checked by `infera monitor check "
                    "--labels` only\n",
                    a->rules.rules[i].name);
    a->registry = m->from_registry ? m->registry : NULL;
    snprintf(a->model, sizeof a->model, "%s", m->name);
    a->version = m->from_registry ? m->version_num : 0;
    *out = a;
    return INF_OK;
}

void inf__stream_alerts_free(inf__stream_alerts *a) {
    if (!a) return;
    inf__mon_rules_free(&a->rules);
    free(a->state);
    free(a);
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
