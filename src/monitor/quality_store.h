/*
 * quality_store.h -- the quality history of model versions (issue 23): the
 * quality per window that `infera serve --monitor` / `infera stream
 * --monitor` compute from late labels (rules.h LABELS), kept so that the
 * console (`/ui`, `infera ui`) and `infera monitor report --html` can draw
 * it over time.
 *
 * DESIGN.  Like stored baselines (baseline_store.h), beside the registry in
 * its home: HOME/quality/NAME/VERSION.json, one document per model version
 *   {"model","version","window_s","updated","windows":[{"start","end","rows","metrics":{...}}, ...]}
 * windows ordered by start.  Each check recomputes the windows its join
 * covers; storing MERGES them into the file: a recomputed window replaces
 * the stored one of the same start (late labels change it), windows the
 * join no longer covers (a rotated log) stay -- that is the history.  A
 * file is written whole to a temporary name and renamed (a reader never
 * sees half of it).  No registry rights are checked: it is a measurement
 * of traffic, like the prediction log, not a change of the registry.
 */
#ifndef INF_MONITOR_QUALITY_STORE_H
#define INF_MONITOR_QUALITY_STORE_H

#include <cjson/cJSON.h>

#include "infera/infera.h"

/* Merges doc (the shape above; borrowed) into name/version's stored file
 * under home (inf__mon_home's rule).  INF_EINVAL (a name or version that
 * cannot be a file name), INF_EIO, INF_ENOMEM. */
inf_status inf__mon_quality_store(const char *home, const char *name, const char *version, const cJSON *doc,
                                  inf_error *err);
/* The stored document of name/version: *out owned by the caller; INF_ENOENT
 * when there is none, INF_EFORMAT (not such a document), INF_EIO. */
inf_status inf__mon_quality_find(const char *home, const char *name, const char *version, cJSON **out, inf_error *err);
/* The stored documents of every version of name, as a JSON array ordered
 * by version (numbers numerically), empty when none; or with name NULL the
 * sorted array of the model names that have one.  *out owned by the caller.
 * INF_ENOMEM. */
inf_status inf__mon_quality_list(const char *home, const char *name, cJSON **out, inf_error *err);

#endif /* INF_MONITOR_QUALITY_STORE_H */
