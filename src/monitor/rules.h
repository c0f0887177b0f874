/*
 * rules.h -- alert rules of model monitoring (issue 23): `infera monitor
 * check REF --rules FILE` evaluates them once over a prediction log,
 * `infera serve --monitor FILE` continuously over its rolling windows.
 *
 * RULE FILE (JSON; docs/monitoring.md "Alerts"):
 *   {"rules": [{"name": "distance drift", "metric": "psi", "feature": "distance_from_home_km",
 *               "threshold": 0.25, "window": "1h", "for": "0s", "min_rows": 100,
 *               "action": ["webhook", "rollback"], "webhook": "http://host:port/path",
 *               "alias": "production"}]}
 *   metric     psi | js | ks | chi2 (a drift metric of profile.h; bigger = worse), or a
 *              quality metric of `monitor labels` (accuracy, precision, recall, f1,
 *              auc, r2 breach BELOW the threshold; logloss, rmse, mae above it),
 *              checked by `monitor check --labels` only
 *   feature    a feature or output column, or "*" (the worst column); default "*"
 *   threshold  a drift rule breaches when the metric is > threshold
 *   window     the window the metric is computed over (offline; serve uses its
 *              --monitor-window), default "1h"
 *   for        the rule fires when it has breached for this long: offline, in
 *              every one of the last max(1, for/window) windows; online, at
 *              every evaluation over that span; default "0s" (at once)
 *   min_rows   a window with fewer rows neither breaches nor clears; default 30
 *   action     "log" (always), "webhook", "rollback", or an array of them
 * LABELS (optional, beside "rules"): where late ground truth arrives, for the
 * quality rules of `infera serve --monitor` / `infera stream --monitor`:
 *   "labels": {"source": "csv:labels.csv", "id_column": "txn", "label_column": "label",
 *              "prediction_column": "fraud_score", "log": "jsonl:log.jsonl", "window": "1h"}
 *   source, id_column, label_column   the labels (any batch source URI) and their columns
 *   prediction_column  the log's score to judge (default: as `monitor labels`)
 *   log        the prediction log to join (default: the runner's --log-predictions)
 *   window     the windows whose quality is stored and exported (default "1h")
 * At every check the whole log is joined with the whole labels source by id
 * (monitor/labels.h's rules: late, missing, duplicate labels), so a label
 * arriving late changes the quality of the window its prediction was in.
 * A rule file that is not this shape is refused with the rule and field.
 */
#ifndef INF_MONITOR_RULES_H
#define INF_MONITOR_RULES_H

#include <stdint.h>

#include <cjson/cJSON.h>

#include "infera/infera.h"

enum { INF__MON_ACT_WEBHOOK = 1, INF__MON_ACT_ROLLBACK = 2 };

typedef struct inf__mon_rule {
    char name[128];
    char metric[16];
    char feature[256];
    double threshold;
    int64_t window_us, for_us, min_rows;
    int actions;           /* INF__MON_ACT_* bits; the log line is always written */
    char webhook[512];
    char alias[129];       /* rollback: the alias moved back (default "production") */
    int quality;           /* a quality metric (needs labels: `monitor check --labels`) */
    int higher_is_better;  /* quality: breaches below the threshold (else above) */
} inf__mon_rule;

/* The file's "labels" section (LABELS above); has = 0 without one. */
typedef struct inf__mon_labels_src {
    int has;
    char source[1024], log[1024], id_column[256], label_column[256], prediction_column[256];
    int64_t window_us;
} inf__mon_labels_src;

typedef struct inf__mon_rules {
    inf__mon_rule *rules;
    int n;
    inf__mon_labels_src labels;
} inf__mon_rules;

/* "90s", "15m", "1h", "1d" or plain seconds -> microseconds; 0 when bad
 * ("0s" too: callers that accept zero check for it). */
int64_t inf__mon_parse_duration_us(const char *s);
inf_status inf__mon_rules_load(const char *path, inf__mon_rules *out, inf_error *err);
inf_status inf__mon_rules_parse(const char *text, size_t len, const char *where, inf__mon_rules *out, inf_error *err);
void inf__mon_rules_free(inf__mon_rules *rs);
/* Checks rule against one window's drift JSON ({"rows","features","outputs"}),
 * or for a quality rule its quality JSON ({"rows","metrics"}):
 * -1 when the window has fewer than min_rows rows or no value of the metric
 * (unknown), 1 when it breaches, else 0.  *value and
 * *column get the metric's value and the column (the worst one for "*"). */
int inf__mon_rule_check(const inf__mon_rule *r, const cJSON *drift, double *value, const char **column);
/* The state of one rule for one model version, evaluated window after
 * window (`infera serve --monitor`, `infera stream --monitor`). */
typedef struct inf__mon_rule_state {
    int breaching, firing;
    int64_t breach_since_us; /* when the current breach began (valid while breaching) */
    double value;            /* the last known value of the metric, and its column */
    char column[256];
} inf__mon_rule_state;
/* One evaluation of r against a window's drift: a breach that begins now
 * is dated since_us (serve: the evaluation's time; stream: the window's
 * start); the rule starts firing once breached for r->for_us at now_us.
 * Returns 1 when it starts firing (run its actions: once per breach), -1
 * when a firing rule cleared (a window with min_rows rows that does not
 * breach), else 0 (an unknown window changes nothing). */
int inf__mon_rule_step(const inf__mon_rule *r, inf__mon_rule_state *st, const cJSON *drift, int64_t since_us,
                       int64_t now_us);
/* The alert object of a firing rule: {"rule","metric","feature","value",
 * "threshold","model","version","rows","window_start","window_end"}. */
cJSON *inf__mon_alert_json(const inf__mon_rule *r, const cJSON *drift, double value, const char *column);

#endif /* INF_MONITOR_RULES_H */
