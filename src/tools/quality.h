/*
 * quality.h -- the quality of logged predictions once their labels arrive
 * (issue 23): evaluate's metrics (metrics.c) over monitor/labels.h's join,
 * per window.  The one place `infera monitor labels|check|report` and the
 * online quality rules of `infera serve --monitor` / `infera stream
 * --monitor` get their numbers from (a runner layer: the runtime's
 * monitor/ does not depend on the tools).
 *
 * TASK.  Binary when every joined label is 0/1 and every score a
 * probability (accuracy ... logloss of class 1 at 0.5); else regression
 * (rmse, mae, r2).  WINDOWS are aligned on the epoch and hold the pairs
 * whose PREDICTION was logged in them (a late label counts where its
 * prediction was); pairs without a logged time are in no window.
 */
#ifndef INF_TOOLS_QUALITY_H
#define INF_TOOLS_QUALITY_H

#include <stdbool.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "monitor/labels.h"
#include "monitor/rules.h"
#include "tools/tools.h"

/* The metrics of jn's pairs (the TASK above).  INF_ENOMEM. */
inf_status inf__quality_metrics(const inf__mon_join *jn, inf__metrics *q);
/* Adds q's metrics of its task to object mj (null where undefined). */
void inf__quality_metrics_json(cJSON *mj, const inf__metrics *q);
/* The windows of window_us with pairs, in time order:
 * [{"start","end" (ISO-8601),"rows","task","metrics":{...}}, ...].  NULL when out of memory. */
cJSON *inf__quality_windows_json(const inf__mon_join *jn, int64_t window_us);
/* The feature columns of p (NULL: none) as a NULL-terminated list of owned
 * names: the columns never judged as the prediction (inf__mon_join_options'
 * skip).  NULL when out of memory; free with inf__quality_skip_free. */
char **inf__quality_skip_new(const inf_pipeline *p);
void inf__quality_skip_free(char **skip);
/* The default pipeline (no spec) logs model inputs and outputs by their
 * names alone, so the prediction is found from the model as `infera
 * evaluate` finds its scores: the float tensor output named like "prob*",
 * else the first float output; of [N, 2] its column 1, P(class 1)
 * ("<name>_1"), of [N] or [N, 1] the output itself.  Writes that log column
 * into buf and returns true; false for a spec (its outputs are named there)
 * or when no output qualifies (several classes: --prediction-column). */
bool inf__quality_default_prediction(const inf_model *m, const inf_pipeline *p, char *buf, size_t size);
/* Joins the labels of lab (rules.h LABELS) to log_uri (lab->log wins when
 * set) for model/version; skip: the model's feature columns (never the
 * prediction; may be NULL); preferred: inf__quality_default_prediction's
 * column (may be NULL).  inf__mon_join_labels's errors. */
inf_status inf__quality_join(const inf__mon_labels_src *lab, const char *log_uri, const char *model,
                             const char *version, const char *const *skip, const char *preferred, inf__mon_join *jn,
                             inf_error *err);
/* One online evaluation of quality rule r (rules.h) over jn: the newest
 * window of r's length with pairs is stepped (inf__mon_rule_step, dated from
 * the window's start to its end, so "for" counts consecutive windows as
 * `monitor check` does).  *window gets that window's JSON with "model" and
 * "version" (the alert's source; caller frees; NULL when none).  Returns
 * inf__mon_rule_step's answer (1: starts firing), 0 when no window. */
int inf__quality_rule_step(const inf__mon_rule *r, inf__mon_rule_state *st, const inf__mon_join *jn, const char *model,
                           const char *version, cJSON **window);
/* The history document of quality_store.h for model/version over jn's
 * windows of window_us (NULL when out of memory). */
cJSON *inf__quality_doc(const inf__mon_join *jn, int64_t window_us, const char *model, const char *version);

#endif /* INF_TOOLS_QUALITY_H */
