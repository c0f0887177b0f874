/*
 * predlog.h -- the prediction log (issue 23): the model-input features and
 * outputs of scored records, with record id, model name and version,
 * pipeline hash and time, written to any sink URI (io.h: jsonl:, csv:,
 * sqlite:, postgresql:).
 *
 * DESIGN.  The scoring core (runtime/score.c) calls inf__mon_log_add once
 * per scored batch when a scorer has a log.  add() samples records
 * (fraction `sample`, a counter hashed with splitmix64: no shared RNG state
 * beyond one atomic), copies the sampled rows into a fresh batch OUTSIDE any
 * lock, then takes a mutex for a few instructions to queue it.  When the
 * queue already holds max_rows rows the batch is dropped and counted: add()
 * never waits for the sink and never fails scoring.  One writer thread
 * drains the queue into the sink; a sink error is remembered (the first
 * one), counts the rows as dropped, and never reaches the scorer.
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
 * p is borrowed (sensitive fields); NULL when the rows are built by the
 * caller (inf__mon_log_queue).  INF_EINVAL, INF_EIO (the sink), INF_ENOMEM. */
inf_status inf__mon_log_open(const char *sink_uri, const inf_pipeline *p, double sample, int max_rows,
                             inf__mon_log **out, inf_error *err);
/* Logs the accepted records of the last prepare of ex (their batch `in`)
 * with their prediction rows pred (row k = accepted record k).  Thread-safe;
 * never blocks on the sink, never fails. */
void inf__mon_log_add(inf__mon_log *l, const inf_pipeline_exec *ex, const inf_record_batch *in,
                      const inf_record_batch *pred);
/* Appends the log row of accepted record k (LOG ROWS above) to out: what
 * add() queues, and what `infera monitor baseline` profiles.  INF_ENOMEM. */
inf_status inf__mon_log_row(const inf_pipeline *p, const char *const *passthrough, const inf_pipeline_exec *ex,
                            const inf_record_batch *in, const inf_record_batch *pred, int k, int64_t now_us,
                            inf_record_batch *out);
/* The spec's passthrough fields (NULL-terminated; from the canonical spec),
 * the `passthrough` argument of inf__mon_log_row.  NULL on ENOMEM. */
char **inf__mon_passthrough_new(const inf_pipeline *p);
void inf__mon_passthrough_free(char **list);
/* The fixed fields of a log row that are neither features nor outputs. */
int inf__mon_log_is_meta_field(const char *name);
/* For runners that build the log rows themselves (serve: one log for every
 * served model, rows built with each version's pipeline; open with p NULL):
 * sample_next decides whether the next record is logged (and counts it as
 * seen, and sampled when it is); queue takes ownership of a batch of log
 * rows and queues it, or drops and counts it when the buffer is full. */
int inf__mon_log_sample_next(inf__mon_log *l);
void inf__mon_log_queue(inf__mon_log *l, inf_record_batch *rows);
/* The counts so far (the log stays open). */
void inf__mon_log_stats_get(inf__mon_log *l, inf__mon_log_stats *stats);
/* Drains the queue, closes the sink, frees l.  stats (may be NULL) gets the
 * counts; returns the sink's first error (err says it), else INF_OK. */
inf_status inf__mon_log_close(inf__mon_log *l, inf__mon_log_stats *stats, inf_error *err);

#endif /* INF_MONITOR_PREDLOG_H */
