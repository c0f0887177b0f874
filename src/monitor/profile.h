/*
 * profile.h -- distribution profiles of log-shaped rows (predlog.h LOG ROWS)
 * and the drift between two of them (issue 23, `infera monitor baseline`,
 * `infera monitor drift`).
 *
 * A profile has one column per feature and per output.  A column is numeric
 * when every non-null value is bool/int/float, else categorical.  Numeric:
 * count, missing rate, quantile bin edges (the interior cut points
 * q = 1/B .. (B-1)/B, numpy's default linear interpolation, duplicates
 * removed), the counts per bin (bin i = values v with edges[i-1] <= v <
 * edges[i], i.e. numpy searchsorted(edges, v, side="right")), and a sample of
 * the values (all of them up to INF__MON_SAMPLE_MAX, else a deterministic
 * reservoir) for the Kolmogorov-Smirnov statistic.  Categorical: count,
 * missing rate, frequencies.
 *
 * Drift of a current profile against a baseline, per column:
 *   numeric      psi  = sum (a-e) ln(a/e) over the baseline's bins,
 *                js   = Jensen-Shannon distance (natural log, scipy's
 *                       jensenshannon) of the two bin distributions,
 *                ks   = two-sample KS statistic (scipy ks_2samp) of the
 *                       current values against the baseline sample;
 *   categorical  psi and js over the union of categories, chi2 = sum
 *                (o-E)^2/E with E = n_current * e;
 * fractions a, e floored at INF__MON_EPS (an empty bin would give inf).
 */
#ifndef INF_MONITOR_PROFILE_H
#define INF_MONITOR_PROFILE_H

#include <stdint.h>

#include <cjson/cJSON.h>

#include "infera/io.h"

#define INF__MON_BINS 10
#define INF__MON_SAMPLE_MAX 20000
#define INF__MON_EPS 1e-4

typedef struct inf__mon_profile inf__mon_profile;

inf_status inf__mon_profile_new(inf__mon_profile **out);
void inf__mon_profile_free(inf__mon_profile *p);
/* Marks a column as a model-input feature (others are outputs). */
inf_status inf__mon_profile_mark_feature(inf__mon_profile *p, const char *name);
/* Adds rows [0, n) of a log-shaped batch (meta fields skipped).  With
 * model/version non-NULL only rows stamped with them count.  INF_ENOMEM. */
inf_status inf__mon_profile_add(inf__mon_profile *p, const inf_record_batch *b, const char *model,
                                const char *version);
/* Column by column (online.c's fast path, no log row built): the index of
 * column name in p, or -1 (absent); add a number (NaN = missing) or a
 * value to column idx; end_row counts the row and pads the columns that got
 * nothing in it as missing.  INF_ENOMEM. */
int inf__mon_profile_find(const inf__mon_profile *p, const char *name);
inf_status inf__mon_profile_add_number(inf__mon_profile *p, int idx, double v);
inf_status inf__mon_profile_add_value(inf__mon_profile *p, int idx, const inf_value *v);
void inf__mon_profile_end_row(inf__mon_profile *p);
/* The names of the columns of p (the baseline's, for a fast-path map). */
int inf__mon_profile_n_columns(const inf__mon_profile *p);
const char *inf__mon_profile_column_name(const inf__mon_profile *p, int idx);
/* An empty profile with the columns of like (same order, same kinds):
 * find() indexes of like are valid in it.  INF_ENOMEM. */
inf_status inf__mon_profile_new_like(const inf__mon_profile *like, inf__mon_profile **out);
/* Adds one row (no model/version filter; see row_matches).  INF_ENOMEM. */
inf_status inf__mon_profile_add_row(inf__mon_profile *p, const inf_record_batch *b, int row);
/* 1 when row is stamped with model and version (NULL: any). */
int inf__mon_profile_row_matches(const inf_record_batch *b, int row, const char *model, const char *version);
uint64_t inf__mon_profile_rows(const inf__mon_profile *p);
/* The profile as the baseline JSON (bins computed here); NULL on ENOMEM. */
cJSON *inf__mon_profile_to_json(inf__mon_profile *p, const char *model, const char *version);
/* Reads a baseline written by to_json.  INF_EFORMAT (err names what). */
inf_status inf__mon_profile_from_json(const cJSON *j, inf__mon_profile **out, inf_error *err);
/* Reads a baseline file (the JSON of to_json).  INF_EIO, INF_EFORMAT (err
 * names the file and what is wrong), INF_ENOMEM. */
inf_status inf__mon_profile_load(const char *path, inf__mon_profile **out, inf_error *err);
/* The drift JSON of DESIGN.md §4 ({"model","version","rows","features",
 * "outputs"}) of cur against base; columns of base only.  NULL on ENOMEM. */
cJSON *inf__mon_drift_json(inf__mon_profile *base, inf__mon_profile *cur, const char *model, const char *version);

/* Per column of base: the two distributions drift compares, as fractions,
 * for charts: {NAME: {"type":"number","edges":[...],"baseline":[...],
 * "current":[...]} or {"type":"category","labels":[...],"baseline":[...],
 * "current":[...]}}.  NULL on ENOMEM. */
cJSON *inf__mon_histograms_json(inf__mon_profile *base, inf__mon_profile *cur);

#endif /* INF_MONITOR_PROFILE_H */
