/*
 * tensorrow.h -- the log rows of serve's tensor endpoint (`/infer`, HTTP and
 * gRPC; issue 23): which columns of a request's input and output tensors a
 * log row has, under which names, worked out once per layout (predlog.h
 * LOG ROWS has the records endpoint's).
 *
 * COLUMNS.  A tensor whose first dimension is the request's row count (a
 * scalar when it has one row) gives per_row = numel / rows columns per row:
 * one column named as the tensor when per_row is 1, else NAME[j] (j the flat
 * index within the row).  Left out: tensors of more than
 * INF__MON_TENSOR_MAX_COLS columns (images, embeddings), whose first
 * dimension is not the row count, sequences and maps, and absent (NULL)
 * tensors.  When a pipeline is given and its model-input feature columns
 * (inf_pipeline_feature_column) number exactly the input columns, in tensor
 * order, the input columns take the spec's names (so the baseline of
 * `infera monitor baseline` matches them) and a column the spec marks
 * sensitive (or one-hot of a sensitive input) is not logged.
 *
 * A ROW: record_id (the request's id; "ID[k]" for row k of a request of
 * several rows; null without an id), logged_at, model_name, model_version,
 * then the input columns, then the output columns.  Numbers as floats (NaN =
 * null), bools as bools, strings as strings.  A row sets every one of its
 * fields, nulls included (the log recycles its batches without clearing them).
 *
 * A plan is immutable once built; it fits a later request whose tensors
 * have the same per-row column counts and dtypes (inf__mon_tplan_matches).
 */
#ifndef INF_MONITOR_TENSORROW_H
#define INF_MONITOR_TENSORROW_H

#include <stdint.h>

#include "infera/io.h"
#include "infera/pipeline.h"
#include "infera/tensor.h"

#define INF__MON_TENSOR_MAX_COLS 256

typedef struct inf__mon_tplan inf__mon_tplan;

/* The tensors of one request: n_in inputs / n_out outputs (model order,
 * NULL = absent) named in_names / out_names, rows rows. */
typedef struct inf__mon_tensors {
    int n_in, n_out;
    const inf_tensor *const *in;
    const inf_tensor *const *out;
    const char *const *in_names, *const *out_names;
    int64_t rows;
} inf__mon_tensors;

/* The plan of requests like t; p (may be NULL) names the input columns as
 * above.  INF_ENOMEM. */
inf_status inf__mon_tplan_new(const inf__mon_tensors *t, const inf_pipeline *p, inf__mon_tplan **out);
void inf__mon_tplan_free(inf__mon_tplan *plan);
/* 1 when plan builds the rows of t. */
int inf__mon_tplan_matches(const inf__mon_tplan *plan, const inf__mon_tensors *t);
/* The log fields, in order. */
int inf__mon_tplan_n_fields(const inf__mon_tplan *plan);
const char *const *inf__mon_tplan_field_names(const inf__mon_tplan *plan);
/* The input columns (the drift window's features): their number, names,
 * and row k's values as doubles (NaN for a non-number) into x[0..n). */
int inf__mon_tplan_n_features(const inf__mon_tplan *plan);
const char *const *inf__mon_tplan_feature_names(const inf__mon_tplan *plan);
void inf__mon_tplan_features(const inf__mon_tplan *plan, const inf__mon_tensors *t, int64_t k, double *x);
/* The spec's outputs (pipeline.h PREDICTION RECORDS) that the drift window
 * profiles, worked out from the output tensors as the pipeline's finish
 * would: a model output's column (op value) and thresholds of one or of an
 * earlier output; argmax / top_k outputs, outputs of sequences of maps and
 * the default pipeline's are left out.  Their number, names, and row k's
 * values into y[0..n) (strings borrowed from t or the plan). */
int inf__mon_tplan_n_outputs(const inf__mon_tplan *plan);
const char *const *inf__mon_tplan_output_names(const inf__mon_tplan *plan);
void inf__mon_tplan_outputs(const inf__mon_tplan *plan, const inf__mon_tensors *t, int64_t k, inf_value *y);
/* Appends row k's log row to out, whose fields were added in plan order
 * (map[i] = out's index of field i).  INF_ENOMEM. */
inf_status inf__mon_tplan_row(const inf__mon_tplan *plan, const int *map, const inf__mon_tensors *t, int64_t k,
                              const char *request_id, int64_t now_us, const char *model_name, const char *model_version,
                              inf_record_batch *out);

#endif /* INF_MONITOR_TENSORROW_H */
