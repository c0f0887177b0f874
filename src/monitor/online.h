/*
 * online.h -- rolling drift windows of a served model version against its
 * training baseline (issue 23, `infera serve`: infera_feature_drift gauges
 * and `serve --monitor` rules).
 *
 * DESIGN.  Time is cut into windows of window_us aligned on the epoch (as
 * `infera monitor drift --window` cuts a log).  Scored records are added to
 * the current window's profile under a mutex, column by column straight
 * from the pipeline's feature matrix and the prediction rows (no log row is
 * built: that is what keeps it near a hundred instructions per record); the
 * first max_rows rows of a window are profiled, later ones only counted
 * (memory stays bounded at any request rate).  When a window ends, its
 * drift against the baseline (profile.h) is computed once and kept as the
 * "last complete window"; the current window's drift is recomputed on
 * demand, at most once per `refresh_us` (a scrape of /metrics sorts at most
 * max_rows values per column).  drift() answers the current window when it
 * has at least min_rows profiled rows, else the last complete one.
 */
#ifndef INF_MONITOR_ONLINE_H
#define INF_MONITOR_ONLINE_H

#include <stdint.h>

#include <cjson/cJSON.h>

#include "infera/io.h"
#include "infera/pipeline.h"
#include "monitor/profile.h"

typedef struct inf__mon_online inf__mon_online;

/* baseline: owned by the window set from now on (freed with it); model and
 * version name the drift JSONs. */
inf_status inf__mon_online_new(inf__mon_profile *baseline, int64_t window_us, int max_rows, const char *model,
                               const char *version, inf__mon_online **out);
void inf__mon_online_free(inf__mon_online *o);
/* The fast path of a runner that scores through a pipeline: the accepted
 * records of ex's last prepare (features: inf_pipeline_features) with their
 * prediction rows pred, profiled column by column into the baseline's
 * columns (nothing else: no log row is built; a column the baseline does
 * not have -- a sensitive one never is -- is not looked at).  INF_ENOMEM. */
inf_status inf__mon_online_add_scored(inf__mon_online *o, const inf_pipeline_exec *ex, const inf_record_batch *pred,
                                      int64_t now_us);
/* The tensor endpoint's path (serve's /infer): n_rows rows of n_cols
 * numbers (row-major x, NaN = missing) in columns named names[0..n_cols),
 * and of n_y values (row-major y, the spec's outputs: tensorrow.h; may be
 * NULL with n_y 0) named y_names, profiled into the baseline's columns of
 * those names (others are not looked at).  INF_ENOMEM. */
inf_status inf__mon_online_add_matrix(inf__mon_online *o, const double *x, int n_rows, int n_cols,
                                      const char *const *names, const inf_value *y, int n_y, const char *const *y_names,
                                      int64_t now_us);
/* The drift JSON (profile.h inf__mon_drift_json, plus "start", "end" in
 * epoch seconds and "complete": true for a finished window) of the window
 * described above; NULL when no window has rows yet (or out of memory).
 * Caller frees. */
cJSON *inf__mon_online_drift(inf__mon_online *o, int64_t now_us, int min_rows);
/* The drift JSON (as above, "complete": true) of the window that ended
 * before now_us, once: NULL when no window with rows has ended since the
 * last call (or out of memory).  A runner that reports windows as they end
 * (`infera stream`) calls it after each batch it adds: adding rolls at most
 * one window.  Caller frees. */
cJSON *inf__mon_online_take_complete(inf__mon_online *o, int64_t now_us);
/* Rows observed in the current window (profiled or not), and in total. */
void inf__mon_online_counts(inf__mon_online *o, uint64_t *window_rows, uint64_t *total_rows);

#endif /* INF_MONITOR_ONLINE_H */
