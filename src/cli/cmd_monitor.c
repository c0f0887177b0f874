/*
 * cmd_monitor.c -- `infera monitor`: drift against a training baseline and
 * quality from late labels, over prediction logs (docs/monitoring.md,
 * shared/DESIGN.md §4, issue 23).
 *
 *   infera monitor baseline REF --data SRC [-o FILE]
 *   infera monitor drift REF --log SRC (--baseline FILE | --data SRC) [--since T] [--window 1h] [--json]
 *   infera monitor labels REF --log SRC --labels SRC --id-column C --label-column L
 *                         [--prediction-column P] [--json]
 *   infera monitor check REF --log SRC --rules FILE [--baseline FILE | --data SRC] [--dry-run] [--json]
 *   infera monitor report REF --log SRC --html OUT [--baseline FILE | --data SRC] [--window 1h]
 *                         [--labels SRC --id-column C --label-column L]
 *   infera monitor baseline REF --data SRC --register
 *   common: [--pipeline SPEC] [--home DIR] [--registry URL]
 *
 * Sub-commands are rows of one table.  The statistics are src/monitor/
 * (profile.c, labels.c), the rules and their actions rules.c / actions.c,
 * the HTML report.c, stored baselines baseline_store.c; the metrics of
 * `labels`, `check` and `report` are evaluate's (src/tools/metrics.c) over
 * the join, per window, by src/tools/quality.c -- as serve's and stream's
 * online quality rules; `report` draws the stored quality history
 * (monitor/quality_store.h) when no --labels are given.
 */
#include <math.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cjson/cJSON.h>

#include "cli/cli.h"
#include "monitor/actions.h"
#include "monitor/baseline_store.h"
#include "monitor/labels.h"
#include "monitor/predlog.h"
#include "monitor/profile.h"
#include "monitor/quality_store.h"
#include "monitor/report.h"
#include "monitor/rules.h"
#include "runtime/model.h"
#include "runtime/score.h"
#include "tools/quality.h"
#include "tools/tools.h"

#define CMD "monitor"

typedef struct mon_opts {
    const char *ref, *data, *out, *log, *baseline, *labels, *id_column, *label_column, *prediction_column,
        *window, *since, *pipeline, *home, *registry, *rules, *html;
    int json, dry_run, register_baseline;
    int64_t window_us, since_us; /* 0 = one window; INT64_MIN = no --since */
} mon_opts;

static int parse_args(int argc, char **argv, mon_opts *o) {
    struct {
        const char *flag;
        const char **dst;
    } strs[] = {
        {"--data", &o->data},           {"-o", &o->out},
        {"--log", &o->log},             {"--baseline", &o->baseline},
        {"--labels", &o->labels},       {"--id-column", &o->id_column},
        {"--label-column", &o->label_column}, {"--prediction-column", &o->prediction_column},
        {"--window", &o->window},       {"--since", &o->since},
        {"--pipeline", &o->pipeline},   {"--rules", &o->rules},
        {"--html", &o->html},
        {"--home", &o->home},           {"--registry", &o->registry},
    };
    for (int i = 2; i < argc; i++) {
        bool missing = false;
        int matched = 0;
        for (size_t k = 0; k < sizeof strs / sizeof strs[0] && !matched; k++) {
            int j = i;
            const char *v = cli_flag_value(argc, argv, &j, strs[k].flag, &missing);
            if (v || missing) {
                if (missing) return cli_usage(CMD, "%s needs a value", strs[k].flag);
                *strs[k].dst = v;
                i = j;
                matched = 1;
            }
        }
        if (matched) continue;
        if (!strcmp(argv[i], "--json")) o->json = 1;
        else if (!strcmp(argv[i], "--dry-run")) o->dry_run = 1;
        else if (!strcmp(argv[i], "--register")) o->register_baseline = 1;
        else if (argv[i][0] != '-' && !o->ref) o->ref = argv[i];
        else return cli_unexpected(CMD, argv[i]);
    }
    if (!o->ref) return cli_usage(CMD, "%s needs a model reference REF", argv[1]);
    if (o->window && !(o->window_us = inf__mon_parse_duration_us(o->window)))
        return cli_usage(CMD, "--window needs a duration such as 90s, 15m, 1h, 1d (got '%s')", o->window);
    o->since_us = INT64_MIN;
    if (o->since && inf_parse_timestamp(o->since, strlen(o->since), &o->since_us))
        return cli_usage(CMD, "--since needs an ISO-8601 time or epoch seconds (got '%s')", o->since);
    return 0;
}

static int open_model(const mon_opts *o, inf__rt_model *m) {
    inf__rt_model_options mo = {0};
    mo.pipeline_path = o->pipeline;
    mo.home = o->home;
    mo.registry_url = o->registry;
    mo.keep_registry = 1; /* check: a rule may roll an alias back */
    inf_error e;
    if (inf__rt_model_open(o->ref, &mo, m, &e)) return cli_fail(CMD, "model %s: %s", o->ref, e.message);
    return 0;
}

static int print_json_to(cJSON *j, const char *path) {
    char *s = j ? cJSON_Print(j) : NULL;
    if (!s) return cli_fail(CMD, "out of memory");
    FILE *f = path ? fopen(path, "w") : stdout;
    if (!f) {
        free(s);
        return cli_fail(CMD, "cannot write %s: %s", path, strerror(errno));
    }
    fprintf(f, "%s\n", s);
    int bad = path ? fclose(f) != 0 : fflush(f) != 0;
    free(s);
    return bad ? cli_fail(CMD, "writing %s failed", path ? path : "stdout") : 0;
}

/* The baseline of m from --data (prof: an empty profile). */
static int baseline_from_data(const inf__rt_model *m, const char *data, inf__mon_profile *prof) {
    inf_error e;
    int64_t n_rejected = 0;
    if (inf__mon_baseline_profile(m, data, prof, &n_rejected, &e))
        return cli_fail(CMD, "baseline from %s: %s", data, e.message);
    if (n_rejected) fprintf(stderr, "infera monitor: %lld records of %s rejected by the spec (not in the baseline)\n",
                            (long long)n_rejected, data);
    return 0;
}

static int sub_baseline(const mon_opts *o, inf__rt_model *m) {
    if (!o->data) return cli_usage(CMD, "baseline needs --data SRC");
    inf__mon_profile *prof;
    if (inf__mon_profile_new(&prof)) return cli_fail(CMD, "out of memory");
    if (o->register_baseline && !m->from_registry)
        return cli_usage(CMD, "--register stores the baseline with a registry version: REF must be NAME[@VERSION|@ALIAS]");
    int rc = baseline_from_data(m, o->data, prof);
    if (!rc) {
        cJSON *j = inf__mon_profile_to_json(prof, m->name, m->version);
        if (!o->register_baseline || o->out) rc = print_json_to(j, o->out);
        char *text = !rc && o->register_baseline && j ? cJSON_Print(j) : NULL;
        inf_error e;
        if (!rc && o->register_baseline) {
            if (!text) rc = cli_fail(CMD, "out of memory");
            else if (inf__mon_baseline_store(m->registry, o->home, m->name, m->version_num, text,
                                             (int64_t)inf__mon_profile_rows(prof), &e))
                rc = cli_fail(CMD, "baseline of %s@%lld: %s", m->name, (long long)m->version_num, e.message);
            else
                fprintf(stderr, "infera monitor: baseline of %s@%lld stored (%llu rows)\n", m->name,
                        (long long)m->version_num, (unsigned long long)inf__mon_profile_rows(prof));
        }
        free(text);
        cJSON_Delete(j);
    }
    inf__mon_profile_free(prof);
    return rc;
}

static int baseline_of(const mon_opts *o, inf__rt_model *m, inf__mon_profile **base);

/* ---- drift ----------------------------------------------------------------- */

static int load_baseline(const char *path, inf__mon_profile **out) {
    inf_error e;
    return inf__mon_profile_load(path, out, &e) ? cli_fail(CMD, "%s", e.message) : 0;
}

/* The log's rows of m's version, one profile per window (window_us = 0:
 * one window, start 0) ordered by start; rows before since_us or without a
 * time (when windows or --since need one) are left out. */
typedef struct windows {
    int64_t *start;
    inf__mon_profile **prof;
    int n, cap;
} windows;

static void windows_free(windows *w) {
    for (int i = 0; i < w->n; i++) inf__mon_profile_free(w->prof[i]);
    free(w->start);
    free(w->prof);
}

static inf__mon_profile *window_for(windows *w, int64_t start) {
    int i = 0;
    while (i < w->n && w->start[i] < start) i++;
    if (i < w->n && w->start[i] == start) return w->prof[i];
    if (w->n == w->cap) {
        int cap = w->cap ? 2 * w->cap : 8;
        int64_t *s = realloc(w->start, (size_t)cap * sizeof *s);
        if (!s) return NULL;
        w->start = s;
        inf__mon_profile **p = realloc(w->prof, (size_t)cap * sizeof *p);
        if (!p) return NULL;
        w->prof = p;
        w->cap = cap;
    }
    inf__mon_profile *p;
    if (inf__mon_profile_new(&p)) return NULL;
    memmove(w->start + i + 1, w->start + i, (size_t)(w->n - i) * sizeof *w->start);
    memmove(w->prof + i + 1, w->prof + i, (size_t)(w->n - i) * sizeof *w->prof);
    w->start[i] = start;
    w->prof[i] = p;
    w->n++;
    return p;
}

static int64_t floor_div(int64_t a, int64_t b) { return a / b - (a % b != 0 && (a < 0) != (b < 0)); }

static int profile_log(const mon_opts *o, const inf__rt_model *m, windows *w) {
    inf_source *src;
    inf_record_batch *b;
    inf_error e;
    if (inf_source_open(o->log, NULL, &src, &e)) return cli_fail(CMD, "log %s", e.message);
    if (inf_record_batch_new(&b)) {
        inf_source_close(src);
        return cli_fail(CMD, "out of memory");
    }
    int rc = o->window_us || window_for(w, 0) ? 0 : cli_fail(CMD, "out of memory");
    int need_time = o->window_us || o->since_us != INT64_MIN;
    for (int eof = 0; !eof && !rc;) {
        if (inf_source_next(src, b, &eof, &e)) {
            rc = cli_fail(CMD, "log %s", e.message);
            break;
        }
        int ft = inf_record_batch_find_field(b, "logged_at");
        for (int row = 0, nr = inf_record_batch_n_rows(b); !rc && row < nr; row++) {
            if (!inf__mon_profile_row_matches(b, row, m->name, m->version)) continue;
            int64_t t = 0;
            if (need_time && (ft < 0 || inf_value_to_timestamp(inf_record_batch_get(b, row, ft), &t))) continue;
            if (t < o->since_us) continue;
            inf__mon_profile *p = window_for(w, o->window_us ? floor_div(t, o->window_us) * o->window_us : 0);
            if (!p || inf__mon_profile_add_row(p, b, row)) rc = cli_fail(CMD, "out of memory");
        }
    }
    inf_record_batch_free(b);
    inf_source_close(src);
    return rc;
}

static void print_drift_text(const cJSON *j) {
    const cJSON *start = cJSON_GetObjectItem(j, "start");
    if (start) printf("window %s .. %s\n", start->valuestring, cJSON_GetObjectItem(j, "end")->valuestring);
    printf("model %s  version %s  rows %.0f\n", cJSON_GetObjectItem(j, "model")->valuestring,
           cJSON_GetObjectItem(j, "version")->valuestring, cJSON_GetObjectItem(j, "rows")->valuedouble);
    static const char *const sections[] = {"features", "outputs"};
    for (int s = 0; s < 2; s++) {
        const cJSON *c, *v;
        printf("%s:\n", sections[s]);
        cJSON_ArrayForEach(c, cJSON_GetObjectItem(j, sections[s])) {
            printf("  %-28s", c->string);
            cJSON_ArrayForEach(v, c) {
                if (cJSON_IsNumber(v)) printf("  %s %.4f", v->string, v->valuedouble);
                else printf("  %s -", v->string);
            }
            printf("\n");
        }
    }
}

static int sub_drift(const mon_opts *o, inf__rt_model *m) {
    if (!o->log) return cli_usage(CMD, "drift needs --log SRC");
    inf__mon_profile *base = NULL;
    windows w = {0};
    int rc = baseline_of(o, m, &base);
    if (!rc) rc = profile_log(o, m, &w);
    /* without --window: DESIGN.md's one object; with it {"model","version","window_s","windows":[...]} */
    cJSON *all = o->window_us ? cJSON_CreateObject() : NULL, *arr = NULL;
    if (all) {
        cJSON_AddStringToObject(all, "model", m->name);
        cJSON_AddStringToObject(all, "version", m->version);
        cJSON_AddNumberToObject(all, "window_s", (double)o->window_us / 1e6);
        arr = cJSON_AddArrayToObject(all, "windows");
    }
    for (int i = 0; !rc && i < w.n; i++) {
        cJSON *j = inf__mon_drift_json(base, w.prof[i], m->name, m->version);
        if (!j || (o->window_us && !arr)) {
            cJSON_Delete(j);
            rc = cli_fail(CMD, "out of memory");
            break;
        }
        if (o->window_us) {
            char t0[40], t1[40];
            cJSON_AddStringToObject(j, "start", inf_format_timestamp(w.start[i], t0, sizeof t0));
            cJSON_AddStringToObject(j, "end", inf_format_timestamp(w.start[i] + o->window_us, t1, sizeof t1));
        }
        if (!o->json) print_drift_text(j);
        if (arr) cJSON_AddItemToArray(arr, j);
        else {
            if (o->json) rc = print_json_to(j, NULL);
            cJSON_Delete(j);
        }
    }
    if (!rc && all && o->json) rc = print_json_to(all, NULL);
    cJSON_Delete(all);
    windows_free(&w);
    inf__mon_profile_free(base);
    return rc;
}

/* ---- check: alert rules over the log --------------------------------------- */

/* The baseline of --baseline FILE or --data SRC (one of them). */
static int baseline_of(const mon_opts *o, inf__rt_model *m, inf__mon_profile **base) {
    *base = NULL;
    if (o->baseline && o->data) return cli_usage(CMD, "give one of --baseline FILE or --data SRC, not both");
    if (!o->baseline && !o->data) { /* the baseline stored with the registry version */
        inf_error e;
        if (!m->from_registry)
            return cli_usage(CMD, "a file model needs --baseline FILE or --data SRC (registry versions may have one "
                                  "stored: monitor baseline NAME@VERSION --data SRC --register)");
        return inf__mon_baseline_find(o->home, m->name, m->version_num, base, &e) ? cli_fail(CMD, "%s", e.message) : 0;
    }
    if (o->baseline) return load_baseline(o->baseline, base);
    if (inf__mon_profile_new(base)) return cli_fail(CMD, "out of memory");
    return baseline_from_data(m, o->data, *base);
}

/* Evaluates rule r over the log's windows of its length: the alert when
 * its last max(1, for/window) windows (consecutive, each with min_rows
 * rows) all breach; *alert stays NULL otherwise. */
static int labels_join(const mon_opts *o, inf__rt_model *m, inf__mon_join *jn_out, inf__metrics *q_out, cJSON **out);

/* A quality rule over the labelled predictions' windows (jn: the join). */
static int check_quality_rule(const inf__rt_model *m, const inf__mon_join *jn, const inf__mon_rule *r, cJSON **alert) {
    *alert = NULL;
    cJSON *qw = inf__quality_windows_json(jn, r->window_us);
    if (!qw) return cli_fail(CMD, "out of memory");
    int n = cJSON_GetArraySize(qw);
    int64_t k = r->for_us / r->window_us + (r->for_us % r->window_us != 0);
    if (k < 1) k = 1;
    int fires = n >= k;
    if (fires) { /* consecutive windows */
        int64_t t0, t1;
        const cJSON *a = cJSON_GetObjectItem(cJSON_GetArrayItem(qw, (int)(n - k)), "start");
        const cJSON *b = cJSON_GetObjectItem(cJSON_GetArrayItem(qw, n - 1), "start");
        fires = !inf_parse_timestamp(a->valuestring, strlen(a->valuestring), &t0) &&
                !inf_parse_timestamp(b->valuestring, strlen(b->valuestring), &t1) && t1 - t0 == (k - 1) * r->window_us;
    }
    for (int i = (int)(n - k); fires && i < n; i++) {
        cJSON *w = cJSON_GetArrayItem(qw, i);
        double value;
        const char *col;
        fires = inf__mon_rule_check(r, w, &value, &col) == 1;
        if (fires && i == n - 1) {
            cJSON_AddStringToObject(w, "model", m->name);
            cJSON_AddStringToObject(w, "version", m->version);
            *alert = inf__mon_alert_json(r, w, value, "*");
            if (*alert) cJSON_AddNumberToObject(*alert, "windows", (double)k);
        }
    }
    cJSON_Delete(qw);
    return 0;
}

static int check_rule(const mon_opts *o, inf__rt_model *m, inf__mon_profile *base, const inf__mon_rule *r, cJSON **alert) {
    *alert = NULL;
    mon_opts wo = *o;
    wo.window_us = r->window_us;
    windows w = {0};
    int rc = profile_log(&wo, m, &w);
    int64_t k = r->for_us / r->window_us + (r->for_us % r->window_us != 0);
    if (k < 1) k = 1;
    int fires = !rc && w.n >= k && w.start[w.n - 1] - w.start[w.n - k] == (k - 1) * r->window_us;
    for (int i = (int)(w.n - k); fires && i < w.n; i++) {
        cJSON *d = inf__mon_drift_json(base, w.prof[i], m->name, m->version);
        if (!d) {
            rc = cli_fail(CMD, "out of memory");
            break;
        }
        char t0[40], t1[40];
        cJSON_AddStringToObject(d, "start", inf_format_timestamp(w.start[i], t0, sizeof t0));
        cJSON_AddStringToObject(d, "end", inf_format_timestamp(w.start[i] + r->window_us, t1, sizeof t1));
        double value;
        const char *col;
        fires = inf__mon_rule_check(r, d, &value, &col) == 1;
        if (fires && i == w.n - 1) {
            *alert = inf__mon_alert_json(r, d, value, col);
            if (*alert) cJSON_AddNumberToObject(*alert, "windows", (double)k);
        }
        cJSON_Delete(d);
    }
    windows_free(&w);
    return rc;
}

static int sub_check(const mon_opts *o, inf__rt_model *m) {
    if (!o->log || !o->rules) return cli_usage(CMD, "check needs --log SRC and --rules FILE");
    inf__mon_rules rules;
    inf_error e;
    if (inf__mon_rules_load(o->rules, &rules, &e)) return cli_fail(CMD, "%s", e.message);
    int n_drift = 0, n_quality = 0;
    for (int i = 0; i < rules.n; i++) *(rules.rules[i].quality ? &n_quality : &n_drift) += 1;
    if (n_quality && !(o->labels && o->id_column && o->label_column)) {
        inf__mon_rules_free(&rules);
        return cli_usage(CMD, "%s has quality rules: check needs --labels SRC --id-column C --label-column L", o->rules);
    }
    inf__mon_profile *base = NULL;
    int rc = n_drift ? baseline_of(o, m, &base) : 0;
    inf__mon_join jn;
    int have_join = 0;
    if (!rc && n_quality) {
        inf__metrics q;
        cJSON *qj = NULL;
        if (!(rc = labels_join(o, m, &jn, &q, &qj))) have_join = 1;
        cJSON_Delete(qj);
    }
    cJSON *out = cJSON_CreateObject(), *firing = out ? cJSON_AddArrayToObject(out, "firing") : NULL;
    if (!rc && !firing) rc = cli_fail(CMD, "out of memory");
    for (int i = 0; !rc && i < rules.n; i++) {
        cJSON *alert;
        rc = rules.rules[i].quality ? check_quality_rule(m, &jn, &rules.rules[i], &alert)
                                    : check_rule(o, m, base, &rules.rules[i], &alert);
        if (rc || !alert) continue;
        if (!o->dry_run) {
            inf__mon_act_result res;
            inf__mon_alert_act(&rules.rules[i], alert, m->registry, m->name, m->from_registry ? m->version_num : 0,
                               "infera monitor", &res);
        }
        cJSON_AddItemToArray(firing, alert);
    }
    if (!rc) {
        cJSON_AddStringToObject(out, "model", m->name);
        cJSON_AddStringToObject(out, "version", m->version);
        cJSON_AddNumberToObject(out, "rules", rules.n);
        if (o->json) rc = print_json_to(out, NULL);
        else {
            const cJSON *a;
            printf("model %s  version %s  %d rule%s, %d firing\n", m->name, m->version, rules.n, rules.n == 1 ? "" : "s",
                   cJSON_GetArraySize(firing));
            cJSON_ArrayForEach(a, firing)
                printf("  FIRING %-24s %s %s = %.4f > %g  (window %s, %.0f rows)\n",
                       cJSON_GetObjectItem(a, "rule")->valuestring, cJSON_GetObjectItem(a, "feature")->valuestring,
                       cJSON_GetObjectItem(a, "metric")->valuestring, cJSON_GetObjectItem(a, "value")->valuedouble,
                       cJSON_GetObjectItem(a, "threshold")->valuedouble,
                       cJSON_IsString(cJSON_GetObjectItem(a, "window_start")) ? cJSON_GetObjectItem(a, "window_start")->valuestring : "-",
                       cJSON_GetObjectItem(a, "rows")->valuedouble);
        }
        if (!rc && cJSON_GetArraySize(firing) > 0) rc = 3; /* 1 is an error, 2 a usage error */
    }
    cJSON_Delete(out);
    if (have_join) inf__mon_join_free(&jn);
    inf__mon_profile_free(base);
    inf__mon_rules_free(&rules);
    return rc;
}

/* ---- labels ---------------------------------------------------------------- */

static void add_count(cJSON *j, const char *k, int64_t v) { cJSON_AddNumberToObject(j, k, (double)v); }

static int labels_join(const mon_opts *o, inf__rt_model *m, inf__mon_join *jn_out, inf__metrics *q_out, cJSON **out);

static int sub_labels(const mon_opts *o, inf__rt_model *m) {
    if (!o->log || !o->labels || !o->id_column || !o->label_column)
        return cli_usage(CMD, "labels needs --log SRC --labels SRC --id-column C --label-column L");
    cJSON *j = NULL;
    inf__mon_join jn;
    inf__metrics q;
    memset(&q, 0, sizeof q);
    int rc = labels_join(o, m, &jn, &q, &j);
    if (rc) return rc;
    if (o->json) rc = print_json_to(j, NULL);
    else {
        printf("model %s  version %s  task %s  prediction %s\n", m->name, m->version, inf__task_names[q.task], jn.prediction_column);
        printf("rows joined %lld  (predictions %lld, labels %lld, unlabelled %lld, labels unmatched %lld, duplicate labels %lld, duplicate predictions %lld, missing %lld)\n",
               (long long)jn.rows_joined, (long long)jn.predictions, (long long)jn.labels, (long long)jn.unlabelled,
               (long long)jn.labels_unmatched, (long long)jn.duplicate_labels, (long long)jn.duplicate_predictions,
               (long long)jn.missing);
        for (int k = 0; k < INF__N_METRICS; k++)
            if (inf__metric_applies(q.task, k)) printf("  %-10s %.6f\n", inf__metric_names[k], q.v[k]);
    }
    cJSON_Delete(j);
    inf__mon_join_free(&jn);
    return rc;
}

/* The label join of o and its JSON (sub_labels' output); jn must be freed
 * by the caller when 0 is returned. */
static int labels_join(const mon_opts *o, inf__rt_model *m, inf__mon_join *jn_out, inf__metrics *q_out, cJSON **out) {
    char **skip = inf__quality_skip_new(m->pipeline);
    if (!skip) return cli_fail(CMD, "out of memory");
    char preferred[256];
    bool has_preferred = inf__quality_default_prediction(m->model, m->pipeline, preferred, sizeof preferred);
    inf__mon_join_options jo = {.log_uri = o->log,
                                .labels_uri = o->labels,
                                .id_column = o->id_column,
                                .label_column = o->label_column,
                                .prediction_column = o->prediction_column,
                                .skip = (const char *const *)skip,
                                .preferred = has_preferred ? preferred : NULL,
                                .model = m->name,
                                .version = m->version};
    inf__mon_join jn;
    inf_error e;
    inf_status st = inf__mon_join_labels(&jo, &jn, &e);
    inf__quality_skip_free(skip);
    if (st) return cli_fail(CMD, "%s", e.message);
    inf__metrics q;
    if (jn.rows_joined == 0 || inf__quality_metrics(&jn, &q)) {
        inf__mon_join_free(&jn);
        return cli_fail(CMD, "labels: %s", jn.rows_joined ? "out of memory" : "no label joined a logged prediction");
    }
    cJSON *j = cJSON_CreateObject(), *mj = cJSON_CreateObject();
    cJSON_AddStringToObject(j, "model", m->name);
    cJSON_AddStringToObject(j, "version", m->version);
    add_count(j, "rows_joined", jn.rows_joined);
    add_count(j, "predictions", jn.predictions);
    add_count(j, "labels", jn.labels);
    add_count(j, "unlabelled", jn.unlabelled);
    add_count(j, "labels_unmatched", jn.labels_unmatched);
    add_count(j, "duplicate_labels", jn.duplicate_labels);
    add_count(j, "duplicate_predictions", jn.duplicate_predictions);
    add_count(j, "missing", jn.missing);
    cJSON_AddStringToObject(j, "prediction_column", jn.prediction_column);
    cJSON_AddStringToObject(j, "task", inf__task_names[q.task]);
    inf__quality_metrics_json(mj, &q);
    cJSON_AddItemToObject(j, "metrics", mj);
    *jn_out = jn;
    *q_out = q;
    *out = j;
    return 0;
}

/* ---- report: one static HTML file ------------------------------------------- */

static int sub_report(const mon_opts *o, inf__rt_model *m) {
    if (!o->log || !o->html) return cli_usage(CMD, "report needs --log SRC and --html OUT");
    if (o->labels && (!o->id_column || !o->label_column))
        return cli_usage(CMD, "report --labels SRC needs --id-column C and --label-column L");
    inf__mon_profile *base = NULL;
    int rc = baseline_of(o, m, &base);
    mon_opts wo = *o;
    windows whole = {0}, w = {0};
    cJSON *r = cJSON_CreateObject();
    if (!rc && !r) rc = cli_fail(CMD, "out of memory");
    wo.window_us = 0;
    if (!rc) rc = profile_log(&wo, m, &whole);
    wo.window_us = o->window_us ? o->window_us : 3600000000LL;
    if (!rc) rc = profile_log(&wo, m, &w);
    if (!rc) {
        char now[40];
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        cJSON_AddStringToObject(r, "model", m->name);
        cJSON_AddStringToObject(r, "version", m->version);
        cJSON_AddStringToObject(r, "generated", inf_format_timestamp((int64_t)ts.tv_sec * 1000000, now, sizeof now));
        cJSON_AddNumberToObject(r, "rows", (double)inf__mon_profile_rows(whole.prof[0]));
        cJSON_AddItemToObject(r, "overall", inf__mon_drift_json(base, whole.prof[0], m->name, m->version));
        cJSON_AddItemToObject(r, "histograms", inf__mon_histograms_json(base, whole.prof[0]));
        cJSON_AddNumberToObject(r, "window_s", (double)wo.window_us / 1e6);
        cJSON *arr = cJSON_AddArrayToObject(r, "windows");
        for (int i = 0; arr && i < w.n; i++) {
            cJSON *d = inf__mon_drift_json(base, w.prof[i], m->name, m->version);
            char t0[40], t1[40];
            if (!d) break;
            cJSON_AddStringToObject(d, "start", inf_format_timestamp(w.start[i], t0, sizeof t0));
            cJSON_AddStringToObject(d, "end", inf_format_timestamp(w.start[i] + wo.window_us, t1, sizeof t1));
            cJSON_AddItemToArray(arr, d);
        }
        if (!arr || cJSON_GetArraySize(arr) != w.n || !cJSON_GetObjectItem(r, "overall") || !cJSON_GetObjectItem(r, "histograms"))
            rc = cli_fail(CMD, "out of memory");
    }
    if (!rc && o->labels) {
        inf__mon_join jn;
        inf__metrics q;
        cJSON *qj = NULL;
        if (!(rc = labels_join(o, m, &jn, &q, &qj))) {
            cJSON_AddItemToObject(r, "quality", qj);
            cJSON *qw = inf__quality_windows_json(&jn, wo.window_us);
            if (!qw) rc = cli_fail(CMD, "out of memory");
            else cJSON_AddItemToObject(r, "quality_windows", qw);
            inf__mon_join_free(&jn);
        }
    }
    if (!rc && !o->labels) { /* the quality history serve / stream stored for the version (quality_store.h) */
        cJSON *doc;
        inf_error e;
        if (inf__mon_quality_find(o->home, m->name, m->version, &doc, &e) == INF_OK) {
            cJSON_AddItemToObject(r, "quality_windows", cJSON_DetachItemFromObject(doc, "windows"));
            cJSON_AddNumberToObject(r, "quality_window_s", cJSON_GetNumberValue(cJSON_GetObjectItem(doc, "window_s")));
            cJSON_Delete(doc);
        }
    }
    if (!rc) {
        FILE *f = fopen(o->html, "w");
        inf_error e;
        if (!f)
            rc = cli_fail(CMD, "cannot write %s: %s", o->html, strerror(errno));
        else if (inf__mon_report_html(f, r, &e) != INF_OK) {
            fclose(f);
            rc = cli_fail(CMD, "%s: %s", o->html, e.message);
        } else if (fclose(f)) rc = cli_fail(CMD, "writing %s failed", o->html);
    }
    if (!rc) fprintf(stderr, "infera monitor: report of %s version %s (%d windows) written to %s\n", m->name, m->version, w.n, o->html);
    cJSON_Delete(r);
    windows_free(&whole);
    windows_free(&w);
    inf__mon_profile_free(base);
    return rc;
}

/* ---- the sub-command table ------------------------------------------------- */

static const struct {
    const char *name;
    int (*run)(const mon_opts *o, inf__rt_model *m);
} SUBS[] = {
    {"baseline", sub_baseline},
    {"drift", sub_drift},
    {"labels", sub_labels},
    {"check", sub_check},
    {"report", sub_report},
};

int cmd_monitor(int argc, char **argv) {
    if (argc < 2) return cli_usage(CMD, "a sub-command is needed: baseline, drift, labels, check or report (see 'infera help monitor')");
    for (size_t i = 0; i < sizeof SUBS / sizeof SUBS[0]; i++) {
        if (strcmp(argv[1], SUBS[i].name)) continue;
        mon_opts o;
        memset(&o, 0, sizeof o);
        int rc = parse_args(argc, argv, &o);
        if (rc) return rc;
        inf__rt_model m;
        if ((rc = open_model(&o, &m))) return rc;
        rc = SUBS[i].run(&o, &m);
        inf__rt_model_close(&m);
        return rc;
    }
    return cli_usage(CMD, "unknown sub-command '%s' (baseline, drift, labels, check, report)",
                     argv[1]);
}
