/*
 * baseline_store.h -- baselines stored with registry versions (issue 23):
 * `infera monitor baseline NAME@VERSION --data SRC --register` keeps the
 * baseline so that `monitor drift|check|report` and `serve --baseline`-less
 * monitoring find it by the version alone.
 *
 * DESIGN.  The registry's API has no place for a document per version, so
 * the baseline lives beside the registry, in its home:
 * HOME/baselines/NAME/VERSION.json (written to a temporary file and renamed:
 * a reader never sees half a file).  Storing it is a registry action: the
 * caller needs the publisher role on NAME (inf_registry_check), and a
 * "monitor-baseline" audit event records the file's SHA-256 and row count.
 * HOME is --home, else $INFERA_HOME, else ./infera-data -- the registry's
 * own rule (a PostgreSQL registry keeps its artifacts in HOME too).
 */
#ifndef INF_MONITOR_BASELINE_STORE_H
#define INF_MONITOR_BASELINE_STORE_H

#include <stdint.h>

#include "infera/registry.h"
#include "monitor/profile.h"
#include "runtime/model.h"

/* The home a command uses (home, else $INFERA_HOME, else ./infera-data). */
const char *inf__mon_home(const char *home);
/* Stores json (a baseline) for name@version.  INF_EDENIED / INF_EAUTH (the
 * registry's check), INF_EINVAL (a name that cannot be a file name), INF_EIO. */
inf_status inf__mon_baseline_store(inf_registry *r, const char *home, const char *name, int64_t version,
                                   const char *json, int64_t rows, inf_error *err);
/* The stored baseline of name@version: INF_ENOENT when there is none (err
 * says where it was looked for), else inf__mon_profile_load's errors. */
inf_status inf__mon_baseline_find(const char *home, const char *name, int64_t version, inf__mon_profile **out,
                                  inf_error *err);

/* Profiles the training data src_uri scored through m's pipeline into prof
 * (an empty profile): the columns the prediction log has, features marked.
 * *n_rejected = the records the spec rejected (left out).  Errors of the
 * source, the model or the pipeline (e says which); INF_ENOMEM.
 * (baseline_data.c: `monitor baseline`, `registry register --baseline`.) */
inf_status inf__mon_baseline_profile(const inf__rt_model *m, const char *src_uri, inf__mon_profile *prof,
                                     int64_t *n_rejected, inf_error *e);

#endif /* INF_MONITOR_BASELINE_STORE_H */
