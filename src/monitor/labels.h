/*
 * labels.h -- late ground truth joined to logged predictions by record id
 * (issue 23, `infera monitor labels`).  The metrics themselves are those of
 * `infera evaluate` (src/tools/metrics.c), computed by the CLI on the pairs
 * this join yields: the runtime layer does not depend on the tools.
 *
 * JOIN RULES.  Log rows of another model/version are ignored.  A record id
 * logged more than once (a re-run, a retry) counts once: the FIRST logged
 * prediction is kept, the others are counted as duplicate_predictions.  A
 * label given more than once for an id: the first one is kept, the others
 * counted as duplicate_labels.  Labels arrive whenever they arrive: the join
 * is by id only, so a label days late joins like any other.  A label whose
 * id was never logged (not sampled, another model) is counted as
 * labels_unmatched; a prediction without a label as unlabelled; a null label
 * or a prediction that is not a number as missing.
 */
#ifndef INF_MONITOR_LABELS_H
#define INF_MONITOR_LABELS_H

#include <stdint.h>

#include "infera/io.h"

typedef struct inf__mon_join {
    double *y, *score; /* rows_joined pairs (owned) */
    int64_t *at;       /* the prediction's logged_at (us; INT64_MIN: none), per pair (owned) */
    int64_t rows_joined;
    int64_t predictions, labels, duplicate_predictions, duplicate_labels, labels_unmatched, unlabelled, missing;
    char prediction_column[256];
} inf__mon_join;

typedef struct inf__mon_join_options {
    const char *log_uri, *labels_uri, *id_column, *label_column;
    const char *prediction_column; /* NULL: `preferred` when the log has it, else the first float
                                    * field of the log that is not meta nor in skip */
    const char *preferred;         /* may be NULL: the model's own score column (default pipeline) */
    const char *const *skip;       /* NULL-terminated names never taken as the prediction (features) */
    const char *model, *version;   /* log rows stamped otherwise are ignored (NULL: any) */
} inf__mon_join_options;

/* Reads both sources and joins them.  INF_EINVAL (no prediction column, the
 * id/label columns absent), the sources' errors, INF_ENOMEM. */
inf_status inf__mon_join_labels(const inf__mon_join_options *o, inf__mon_join *out, inf_error *err);
void inf__mon_join_free(inf__mon_join *j);

#endif /* INF_MONITOR_LABELS_H */
