/*
 * predlog.h -- the prediction log (issue 23): the model-input features and
 * outputs of scored records, with record id, model name and version,
 * pipeline hash and time, written to any sink URI (io.h: jsonl:, csv:,
 * sqlite:, postgresql:).
 *
 * DESIGN (the cost target: a 10 % sample costs <= 5 % of the scoring's CPU
 * time; bench/monitor/RESULTS.md).  The scoring core (runtime/score.c) and
 * serve call inf__mon_log_add once per scored batch.  add() reserves the
 * batch's range of the record counter with one atomic add and samples it
 * (splitmix64 of the counter: deterministic, no shared RNG state); a batch
 * with no sampled record costs nothing more.  The sampled rows are built
 * from a ROW PLAN -- which feature columns and prediction fields are logged,
 * under which names, computed once per (pipeline, feature columns,
 * prediction fields) and kept by the log (immutable, found by comparing
 * names) -- appended to the layout's OPEN BATCH (no name lookups, no
 * sensitivity checks, no allocation per row once warm; one short lock per
 * call, the layout's own: a request's few sampled rows join those of the
 * requests before it, so per-batch work -- getting, binding, queueing and
 * writing a batch -- is paid once per OPEN_ROWS rows, not per request).  A
 * full open batch is queued into a preallocated ring under a mutex held for
 * a few instructions.  A full ring drops the batch and counts its rows:
 * add() never waits for the sink and never fails scoring.  One writer
 * thread wakes when FLUSH_ROWS rows or TAKE_BATCHES batches wait, or every
 * FLUSH_MS (predlog.c; then it also takes the open batches), writes what is
 * queued and commits once (one SQLite transaction for many requests), then
 * gives the batches back for reuse.
 * Sinks format numbers without printf (io/numfmt.h).  A sink error is
 * remembered (the first one), counts the rows as dropped, and never reaches
 * the scorer.
 *
 * LOG ROWS.  record_id (the record's id as text, null without one),
 * logged_at (timestamp), model_name, model_version, pipeline_hash, then one
 * float field per model-input feature column (inf_pipeline_exec_feature_column:
 * the spec's names, or the record fields of the default mapping; NaN = null),
 * then the model's output fields of the prediction row (fields of the
 * prediction row that are not the id, one of the spec's passthrough fields,
 * or the lineage stamp).  A feature column whose name, or its part before
 * '=' (one-hot columns "mcc=grocery"), is an input the spec marks sensitive
 * is never logged, nor is a sensitive passthrough field.
 */
#ifndef INF_MONITOR_PREDLOG_H
#define INF_MONITOR_PREDLOG_H

#include <stdint.h>

#include "infera/io.h"
#include "infera/pipeline.h"

typedef struct inf__mon_log inf__mon_log;

typedef struct inf__mon_log_stats {
    uint64_t n_seen;    /* records offered to the log */
    uint64_t n_sampled; /* records chosen by the sample */
    uint64_t n_written; /* rows the sink accepted */
    uint64_t n_dropped; /* rows lost: buffer full, out of memory or sink error */
} inf__mon_log_stats;

/* Opens the sink (appending to an existing file/table) and starts the
 * writer.  sample in (0, 1]; max_rows = rows buffered at most (0 = 65536).
 * p is borrowed (sensitive fields); NULL when every add() names its own
 * (serve: one log for every served model version).  INF_EINVAL, INF_EIO (the sink), INF_ENOMEM. */
inf_status inf__mon_log_open(const char *sink_uri, const inf_pipeline *p, double sample, int max_rows,
                             inf__mon_log **out, inf_error *err);
/* Logs the sampled accepted records of the last prepare of ex (their
 * batch `in`) with their prediction rows pred (row k = accepted record k),
 * built with pipeline p (NULL: the log's own); model_name, when not NULL,
 * replaces the prediction rows' model_name stamp (serve: the registry's
 * name of a model served under another).  Thread-safe; never blocks on the
 * sink, never fails.  Returns the number of records sampled. */
int inf__mon_log_add(inf__mon_log *l, const inf_pipeline *p, const char *model_name, const inf_pipeline_exec *ex,
                     const inf_record_batch *in, const inf_record_batch *pred);
/* The same, the rows' logged_at = t_us (UTC microseconds): a runner that also
 * adds the batch to drift windows (online.h) stamps both with one time, so a
 * record's log row and its window agree on when it was scored. */
int inf__mon_log_add_at(inf__mon_log *l, const inf_pipeline *p, const char *model_name, const inf_pipeline_exec *ex,
                        const inf_record_batch *in, const inf_record_batch *pred, int64_t t_us);
/* The second entry point: rows the caller builds itself (serve's tensor
 * endpoint, tensorrow.h).  Samples the n records of a batch first (as add:
 * one atomic add; nothing more when none is sampled), then calls
 * row(user, k, map, out) for each sampled record k, appending its row to
 * out, a recycled batch whose fields are names[0..n_fields) (map[i] = out's
 * index of names[i]); row() sets every field of its row (null included: a
 * recycled batch's rows are not cleared).  layout identifies the names (the same pointer, the
 * same names) and outlives the log.  Queued as add() queues; never blocks,
 * never fails (a row that fails drops the batch's rows, counted).  Returns
 * the number of records sampled. */
typedef inf_status (*inf__mon_build_row_fn)(void *user, int k, const int *map, inf_record_batch *out);
int inf__mon_log_add_built(inf__mon_log *l, int n, const void *layout, int n_fields, const char *const *names,
                           inf__mon_build_row_fn row, void *user);
/* Appends the log rows (LOG ROWS above) of the first n accepted records
 * to out: what add() queues, and what `infera monitor baseline` profiles.
 * One row plan for the call.  INF_ENOMEM. */
inf_status inf__mon_log_rows(const inf_pipeline *p, const inf_pipeline_exec *ex, const inf_record_batch *in,
                             const inf_record_batch *pred, int n, int64_t now_us, inf_record_batch *out);
/* The log's clock: UTC microseconds (CLOCK_REALTIME), what logged_at and
 * drift windows are stamped with. */
int64_t inf__mon_now_us(void);
/* The fixed fields of a log row that are neither features nor outputs. */
int inf__mon_log_is_meta_field(const char *name);
/* The counts so far (the log stays open). */
void inf__mon_log_stats_get(inf__mon_log *l, inf__mon_log_stats *stats);
/* Drains the queue, closes the sink, frees l.  stats (may be NULL) gets the
 * counts; returns the sink's first error (err says it), else INF_OK. */
inf_status inf__mon_log_close(inf__mon_log *l, inf__mon_log_stats *stats, inf_error *err);

#endif /* INF_MONITOR_PREDLOG_H */
