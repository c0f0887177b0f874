/*
 * scorer.h -- scoring JSON records one small batch at a time, for the SQL
 * extensions (sqlite_ext.c, pg/infera_pg.c).
 *
 * A scorer holds one model reference resolved once (runtime/model.h: a
 * file or the registry), one session (one thread) and one pipeline executor:
 * the same code path as `infera batch`, so a record gives bit-identical
 * predictions in SQL and in batch jobs.  A scorer is used by one thread at a
 * time; the extensions keep one per model reference per connection/backend.
 *
 *     inf__scorer_clear(s);
 *     inf__scorer_add_json(s, json, len, &err);        // per record
 *     inf__scorer_score(s, &err);
 *     for each record i: inf__scorer_result(s, i, &msg) -> row or -1 (rejected)
 *
 * PREDICTION FIELDS.  The fields of the prediction record other than the id
 * column, the spec's `passthrough` fields (an output may share its name with a
 * field of the input record: it is still a prediction) and
 * the lineage stamp (model_name, model_version, pipeline_hash).  The PRIMARY
 * prediction is the first of them: the spec's first output, or for the
 * default pipeline the model's first output column (e.g. `label`).
 */
#ifndef INF_SQL_SCORER_H
#define INF_SQL_SCORER_H

#include "infera/io.h"

typedef struct inf__scorer inf__scorer;
struct inf__mon_log;

typedef struct inf__scorer_options {
    const char *home;         /* registry home (NULL: INFERA_HOME or ./infera-data) */
    const char *registry_url; /* NULL: INFERA_REGISTRY or the embedded registry */
    const char *id_column;    /* may be NULL */
} inf__scorer_options;

/* Resolves and loads ref.  err names the reference and why. */
inf_status inf__scorer_new(const char *ref, const inf__scorer_options *opts, inf__scorer **out, inf_error *err);
void inf__scorer_free(inf__scorer *s);
const char *inf__scorer_ref(const inf__scorer *s);
const char *inf__scorer_model_name(const inf__scorer *s);
const char *inf__scorer_model_version(const inf__scorer *s);
/* 1 when the model has no pipeline spec (records map by field order). */
int inf__scorer_is_default(const inf__scorer *s);

/* Logs the predictions of s to log (monitor/predlog.h: the connection's or
 * backend's prediction log, shared by its scorers, sampled there; borrowed,
 * NULL: none).  Log rows are built with s's pipeline (sensitive fields left
 * out) and carry its lineage stamp; logging never fails a call. */
void inf__scorer_set_log(inf__scorer *s, struct inf__mon_log *log);

void inf__scorer_clear(inf__scorer *s);
/* Adds one record (a JSON object).  INF_EFORMAT names the offset. */
inf_status inf__scorer_add_json(inf__scorer *s, const char *json, size_t len, inf_error *err);
int inf__scorer_n_records(const inf__scorer *s);
/* Scores the records added since the last clear.  Per-record rejections do
 * not fail the call; a model/pipeline failure does. */
inf_status inf__scorer_score(inf__scorer *s, inf_error *err);
/* The output row of record i, or -1 when it was rejected (then *why, if not
 * NULL, gets the reason, borrowed from s). */
int inf__scorer_result(const inf__scorer *s, int i, const char **why);
/* The primary prediction of an output row (borrowed), NULL when the model
 * has no prediction field. */
const inf_value *inf__scorer_primary(const inf__scorer *s, int row);
const char *inf__scorer_primary_name(const inf__scorer *s);
/* All prediction fields of an output row (plus model_name, model_version,
 * pipeline_hash), and the id column when with_id, as one JSON object through
 * write.  INF_ENOMEM. */
inf_status inf__scorer_row_json(const inf__scorer *s, int row, int with_id, inf_write_fn write, void *user);

/* A growable byte buffer and an inf_write_fn that appends to it (user is an
 * inf__scorer_buf *, zero-initialised by the caller, who frees p).  Keeps one
 * spare byte past n.  Returns -1 when out of memory. */
typedef struct inf__scorer_buf {
    char *p;
    size_t n, cap;
} inf__scorer_buf;
int inf__scorer_buf_write(const char *bytes, size_t n, void *user);

#endif /* INF_SQL_SCORER_H */
