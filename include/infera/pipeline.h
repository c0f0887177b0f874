/*
 * pipeline.h -- the pipeline spec: raw records -> (schema check, online
 * lookups, transforms) -> model input tensors; model outputs ->
 * (post-processing) -> prediction records.  One implementation used by every
 * runner (batch, serve, stream, SQL, `infera features`), so a record gives
 * bit-identical features everywhere.  The spec format is documented in
 * docs/pipeline-spec.md.
 *
 * OBJECTS AND OWNERSHIP.
 *   inf_pipeline       loaded once per model version from a spec (or the
 *                      default mapping); immutable after load and shared by
 *                      any number of threads.  It borrows the inf_model it was
 *                      loaded for: the model must outlive it.  Its monitoring
 *                      counters are atomic.
 *   inf_pipeline_exec  per-thread executor: scratch buffers for one batch,
 *                      the input tensors it builds, and its own connections to
 *                      the lookup stores.  Reused across batches; once warm
 *                      (batches no larger than before), preparing a batch
 *                      without lookups allocates nothing.
 *
 * USE (one thread; `session` is an inf_session of the same model):
 *
 *     inf_pipeline *p;  inf_pipeline_load("spec.json", model, &opts, &p, &err);
 *     inf_pipeline_exec *e;  inf_pipeline_exec_new(p, &e, &err);
 *     while (source has records) {
 *         const inf_tensor *const *x;      // borrowed from e until the next prepare
 *         inf_pipeline_prepare(e, records, &x, &err);   // rejected rows skipped
 *         inf_tensor *const *y;
 *         inf_session_run(session, x, &y, &err);
 *         inf_pipeline_finish(e, y, predictions, &err);  // one row per accepted record
 *         for (int i = 0; i < inf_pipeline_n_rejected(e); i++) ... report ...
 *     }
 *
 * PER-RECORD ERRORS.  A record that violates the input schema (missing
 * required field, wrong type, out of range, unknown category) is handled by
 * the spec's policy (`on_invalid`, per field or for the whole spec):
 *   "reject"  the record is left out of the tensors and listed as rejected
 *             (its row, the field and why); the rest of the batch goes on;
 *   "count"   the violation is counted and the value replaced by the field's
 *             default (missing/NaN when none); the record is scored.
 * Counters per field (invalid / rejected) are kept on the pipeline for
 * monitoring.  Fields marked `sensitive` never appear in messages: the
 * error names the field, not its value.
 *
 * PREDICTION RECORDS.  inf_pipeline_finish writes, per accepted record: the
 * id column (when the spec or options name one), the spec's `passthrough`
 * fields, the output fields, then `model_name`, `model_version` and
 * `pipeline_hash` (SHA-256 hex of the canonical spec: keys sorted, no
 * whitespace; for the default pipeline, of the string "default").
 *
 * DEFAULT PIPELINE (no spec; DESIGN.md §4).  The model must have one 2-D
 * numeric input [N, K].  Each record's numeric fields (bool, int, float;
 * strings that parse as numbers; null = NaN) other than the id column, in
 * the batch's field order, form a row.  When K is known and the record has
 * more numeric fields, the first K are used and the count of the others is
 * reported through inf_pipeline_n_ignored_fields; fewer is an error.  Each
 * output becomes columns named after it: a 1-D or [N,1] output `label` ->
 * `label`; an [N,C] output `probabilities` -> `probabilities_0` ..
 * `probabilities_{C-1}`.
 */
#ifndef INFERA_PIPELINE_H
#define INFERA_PIPELINE_H

#include <stdint.h>

#include "infera/infera.h"
#include "infera/io.h"
#include "infera/model.h"
#include "infera/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct inf_pipeline inf_pipeline;
typedef struct inf_pipeline_exec inf_pipeline_exec;

typedef struct inf_pipeline_options {
    const char *model_name;    /* stamped on predictions; NULL = the spec's "name" or "model" */
    const char *model_version; /* stamped on predictions; NULL = "" */
    const char *id_column;     /* the record's id field (default pipeline; overrides the spec's id) */
    const char *base_dir;      /* resolves relative store paths in lookups; NULL = the spec
                                * file's directory (load) or the current directory (load_string) */
    int check_model;           /* reserved; the spec is always checked against the model */
} inf_pipeline_options;

INF_API void inf_pipeline_options_init(inf_pipeline_options *opts);

/* Loads and validates a spec (a JSON file) for model.  The model is borrowed
 * and must outlive the pipeline; model may be NULL for feature-only work
 * (`infera features`, fit-spec): then the spec is not checked against model
 * inputs/outputs, and prepare/finish need no session.  Every problem is
 * reported at load with the JSON path of the field ("features[3].mean: ...",
 * "model_inputs.input: width 14 but the model expects 12"): INF_EFORMAT for
 * malformed JSON or a bad spec, INF_ETYPE for a type/width mismatch with the
 * model, INF_EIO/INF_ENOENT for the file. */
INF_API inf_status inf_pipeline_load(const char *path, const inf_model *model,
                                     const inf_pipeline_options *opts, inf_pipeline **out,
                                     inf_error *err);
/* As inf_pipeline_load, from len bytes of JSON (copied). */
INF_API inf_status inf_pipeline_load_string(const char *json, size_t len, const inf_model *model,
                                            const inf_pipeline_options *opts, inf_pipeline **out,
                                            inf_error *err);
/* The default pipeline for model (see above).  INF_ETYPE when the model has
 * not one 2-D numeric input. */
INF_API inf_status inf_pipeline_default(const inf_model *model, const inf_pipeline_options *opts,
                                        inf_pipeline **out, inf_error *err);
INF_API void inf_pipeline_free(inf_pipeline *p);

/* Identity, borrowed from p. */
INF_API const char *inf_pipeline_name(const inf_pipeline *p);        /* spec "name" or "default" */
INF_API const char *inf_pipeline_hash(const inf_pipeline *p);        /* 64 hex chars */
INF_API const char *inf_pipeline_model_name(const inf_pipeline *p);
INF_API const char *inf_pipeline_model_version(const inf_pipeline *p);
INF_API const char *inf_pipeline_id_column(const inf_pipeline *p);   /* NULL when none */
INF_API int inf_pipeline_is_default(const inf_pipeline *p);
/* The canonical spec text (keys sorted, no whitespace) that the hash covers. */
INF_API const char *inf_pipeline_canonical(const inf_pipeline *p);

/* The declared raw input fields (spec "inputs"): name, type, sensitivity. */
INF_API int inf_pipeline_n_inputs(const inf_pipeline *p);
INF_API const char *inf_pipeline_input_name(const inf_pipeline *p, int i);
INF_API inf_field_type inf_pipeline_input_type(const inf_pipeline *p, int i);
/* 1 when the field is marked sensitive: runners must not log or audit it. */
INF_API int inf_pipeline_is_sensitive(const inf_pipeline *p, const char *field);

/* The model-input columns, flattened, in tensor order (a one-hot feature
 * "mcc" gives "mcc=grocery", ..., "mcc=<unknown>"): what `infera features`
 * writes.  For the default pipeline these are known only after the first
 * batch (0 before). */
INF_API int inf_pipeline_n_feature_columns(const inf_pipeline *p);
INF_API const char *inf_pipeline_feature_column(const inf_pipeline *p, int i);

/* ---- Executing ------------------------------------------------------------ */

/* A per-thread executor.  Opens the lookup stores (one connection each).
 * INF_ENOMEM, INF_EIO (a store cannot be opened: the error names the lookup
 * and the store URI without credentials). */
INF_API inf_status inf_pipeline_exec_new(const inf_pipeline *p, inf_pipeline_exec **out,
                                         inf_error *err);
INF_API void inf_pipeline_exec_free(inf_pipeline_exec *e);

/* Without a spec, the default mapping (DESIGN.md §4) takes its fields from
 * the first batch the executor prepares and keeps them for the batches after
 * it: one source, one mapping (batch, stream); a field a later batch lacks
 * reads as missing.  With `on`, every batch is mapped by its own fields:
 * for executors that take independent calls (a serve request, a SQL call),
 * whose records need not have the keys of an earlier caller's.  No effect
 * with a spec, which maps fields by name. */
INF_API void inf_pipeline_exec_map_each_batch(inf_pipeline_exec *e, int on);

/* Overrides "now" (epoch seconds) for lookup staleness (max_age); 0 = the
 * wall clock, the default.  For tests and replays. */
INF_API void inf_pipeline_exec_set_now(inf_pipeline_exec *e, double now_s);

/* Point-in-time mode (training features): lookups read the history table
 * `history_uri` (sqlite:PATH?table=T, same columns as the online store plus
 * every version of each entity) as of each record's own timestamp, taken
 * from its field `as_of_field`.  NULL history_uri = the lookup's own store.
 * Applies to every lookup.  INF_EIO when the history cannot be opened. */
INF_API inf_status inf_pipeline_exec_set_point_in_time(inf_pipeline_exec *e, const char *as_of_field,
                                                       const char *history_uri, inf_error *err);

/* Validates the records of batch, runs the lookups (one round trip per store
 * per batch), computes the features and assembles the model inputs.  On
 * success *inputs points at inf_model_n_inputs(model) tensors owned by e,
 * valid until the next prepare or free, with one row per accepted record
 * (possibly 0 rows: check inf_pipeline_n_accepted).  Per-record problems do not
 * fail the call (see PER-RECORD ERRORS).  Fails with INF_EIO when a store is
 * unreachable, INF_ENOMEM. */
INF_API inf_status inf_pipeline_prepare(inf_pipeline_exec *e, const inf_record_batch *batch,
                                        const inf_tensor *const **inputs, inf_error *err);

/* After prepare: the number of accepted records, and for accepted record k
 * the row of the batch it came from. */
INF_API int inf_pipeline_n_accepted(const inf_pipeline_exec *e);
INF_API int inf_pipeline_accepted_row(const inf_pipeline_exec *e, int k);
/* After prepare: the rejected records, each with its batch row, the field
 * and a message (borrowed from e; never contains a sensitive value). */
INF_API int inf_pipeline_n_rejected(const inf_pipeline_exec *e);
INF_API int inf_pipeline_rejected(const inf_pipeline_exec *e, int i, const char **field,
                                  const char **message);
/* Default pipeline: numeric fields beyond the model's width in the last batch. */
INF_API int inf_pipeline_n_ignored_fields(const inf_pipeline_exec *e);

/* The feature columns of this executor: those of the spec, or for the
 * default pipeline the record fields it chose at its first batch. */
INF_API int inf_pipeline_exec_n_feature_columns(const inf_pipeline_exec *e);
INF_API const char *inf_pipeline_exec_feature_column(const inf_pipeline_exec *e, int i);

/* After prepare: the feature matrix as float64 [n_accepted, n_feature_columns]
 * (before the cast to each model input's dtype), borrowed from e. */
INF_API const double *inf_pipeline_features(const inf_pipeline_exec *e, int *n_rows, int *n_cols);

/* Turns the session's outputs for the last prepared batch into prediction
 * records, appended to out (fields added as needed; out is not cleared).
 * outputs are borrowed.  INF_ESHAPE/INF_ETYPE when an output does not have
 * the shape or type the spec expects, INF_ENOMEM. */
INF_API inf_status inf_pipeline_finish(inf_pipeline_exec *e, inf_tensor *const *outputs,
                                       inf_record_batch *out, inf_error *err);

/* Writes the features of the last prepared batch as records appended to out:
 * the id column (if any), the passthrough fields, then one field per feature
 * column (float).  This is what `infera features` writes. */
INF_API inf_status inf_pipeline_features_to_records(inf_pipeline_exec *e, inf_record_batch *out,
                                                    inf_error *err);

/* ---- Monitoring ----------------------------------------------------------- */

typedef struct inf_pipeline_field_stats {
    const char *field;   /* borrowed from the pipeline */
    uint64_t n_invalid;  /* violations seen (rejected or counted) */
    uint64_t n_rejected; /* records rejected because of this field */
    uint64_t n_missing;  /* null / absent values (defaults applied) */
} inf_pipeline_field_stats;

typedef struct inf_pipeline_stats {
    uint64_t n_records;  /* records prepared */
    uint64_t n_rejected; /* records rejected */
    uint64_t n_lookups;  /* store round trips */
    uint64_t n_lookup_missing; /* entities not found or stale (defaults used) */
} inf_pipeline_stats;

/* Totals over every executor of p (atomic counters, read without locks). */
INF_API void inf_pipeline_get_stats(const inf_pipeline *p, inf_pipeline_stats *out);
/* Per-field counters: n = inf_pipeline_n_inputs(p) (plus lookup features). */
INF_API int inf_pipeline_n_field_stats(const inf_pipeline *p);
INF_API void inf_pipeline_get_field_stats(const inf_pipeline *p, int i, inf_pipeline_field_stats *out);

/* ---- Fitting (fit-spec) --------------------------------------------------- */

/* Learns the parameters of transforms that ask for it ("fit": true) from the
 * records a source yields, in as many passes as their dependencies need
 * (src_uri is reopened per pass; only per-feature columns needed for
 * quantiles are kept in memory).  Writes the completed spec (the template
 * with the learned parameters, "fit" removed) as pretty JSON to *out_json
 * (owned: release with inf_pipeline_string_free).  history/as_of as for
 * inf_pipeline_exec_set_point_in_time (may be NULL). */
INF_API inf_status inf_pipeline_fit(const char *template_json, size_t len, const char *src_uri,
                                    const char *as_of_field, const char *history_uri,
                                    const inf_pipeline_options *opts, char **out_json,
                                    inf_error *err);
INF_API void inf_pipeline_string_free(char *s);

/* The stable hash used by the hash_bucket transform: 64-bit FNV-1a over the
 * bytes (offset basis 0xcbf29ce484222325, prime 0x100000001b3). */
INF_API uint64_t inf_pipeline_hash_string(const char *s, size_t len);

#ifdef __cplusplus
}
#endif

#endif /* INFERA_PIPELINE_H */
