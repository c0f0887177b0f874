/*
 * logrow.h -- the row plan of the prediction log (predlog.h LOG ROWS): which
 * feature columns of an executor and which fields of its prediction rows a
 * log row has, under which names, worked out once (sensitive inputs,
 * passthrough fields, the id and the lineage stamp left out) so that
 * building a row is setting values by index: no name lookups, no
 * sensitivity checks.  A plan is immutable once built; it fits a later
 * batch when the pipeline, the feature column names and the prediction
 * field names are the same (inf__mon_plan_matches).
 */
#ifndef INF_MONITOR_LOGROW_H
#define INF_MONITOR_LOGROW_H

#include <stdint.h>

#include "infera/io.h"
#include "infera/pipeline.h"

typedef struct inf__mon_row_plan inf__mon_row_plan;

/* The plan of the log rows of ex's scored batches of records like in
 * (its id field) with prediction rows pred, under pipeline p.  INF_ENOMEM. */
inf_status inf__mon_plan_new(const inf_pipeline *p, const inf_pipeline_exec *ex, const inf_record_batch *in,
                             const inf_record_batch *pred, inf__mon_row_plan **out);
void inf__mon_plan_free(inf__mon_row_plan *plan);
/* 1 when plan builds the rows of this batch (same pipeline, feature columns
 * and prediction fields, and id field, by name). */
int inf__mon_plan_matches(const inf__mon_row_plan *plan, const inf_pipeline *p, const inf_pipeline_exec *ex,
                          const inf_record_batch *in, const inf_record_batch *pred);
/* The number of log fields (the length of a bind map). */
int inf__mon_plan_n_fields(const inf__mon_row_plan *plan);
/* Adds the plan's fields to out (those it has are found by name) and fills
 * map[i] with out's index of plan field i.  On an empty batch the map is
 * 0, 1, 2, ...  INF_ENOMEM. */
inf_status inf__mon_plan_bind(const inf__mon_row_plan *plan, inf_record_batch *out, int *map);
/* The field of in holding the records' ids (the spec's id column, or in's
 * own id field), -1 without one: looked up once per batch. */
int inf__mon_plan_id_field(const inf__mon_row_plan *plan, const inf_record_batch *in);
/* Appends the log row of accepted record k to out (bound with map): id
 * from in's field id_f, logged_at now_us, model_name (NULL: the prediction
 * row's stamp).  INF_ENOMEM. */
inf_status inf__mon_plan_row(const inf__mon_row_plan *plan, const int *map, const inf_pipeline_exec *ex,
                             const inf_record_batch *in, int id_f, const inf_record_batch *pred, int k, int64_t now_us,
                             const char *model_name, inf_record_batch *out);

/* 1 when feature column col is an input p marks sensitive, or a one-hot
 * column of one ("card=...").  The tensor endpoint's rows (tensorrow.c)
 * leave them out too. */
int inf__mon_column_is_sensitive(const inf_pipeline *p, const char *col);

#endif /* INF_MONITOR_LOGROW_H */
