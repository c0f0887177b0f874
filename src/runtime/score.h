/*
 * score.h -- the one scoring core of the runners (issue 19): a batch of
 * records through the pipeline and the engine, with the record-by-record
 * fallback after a data error and ONE stated policy for "every record
 * failed".  Batch (src/batch/runner.c), stream (src/stream/runner.c) and the
 * SQL functions (src/sql/scorer.c) are adapters: they read records from
 * their source, give them here, and turn the two kinds of result -- scored
 * rows and rejected records -- into their own output rows and error rows.
 *
 * DESIGN.  inf__rt_score_batch() runs prepare -> run -> finish on the whole
 * batch.  A data error (inf_status_is_data_error: a value the model cannot
 * take, an index out of range, a shape the data decides) is not the job's
 * error but some record's: the adapter is told to drop what it built from
 * this batch (restart), and each record is scored alone, so the records the
 * model takes are scored and the others are rejected with the engine's
 * message.  Results always name records by their row in the caller's batch,
 * so an adapter never sees the one-record scratch batch.
 *
 * POLICY WHEN EVERY RECORD FAILS ALONE (inf__rt_all_failed):
 *   INF__RT_ALL_FAILED_FATAL   the batch's own error is returned: when no
 *                              record of a batch can be scored, the model
 *                              cannot take these records at all (a job
 *                              error, e.g. a spec that does not fit the
 *                              model); `infera batch` stops the job and
 *                              --resume meets the same rows again once it
 *                              is fixed; a single-record batch (a SQL call)
 *                              fails with the engine's error as before.
 *   INF__RT_ALL_FAILED_REJECT  every record is rejected and the call
 *                              succeeds: `infera stream` must not stop on
 *                              events that would come again on a restart
 *                              for ever, so they become dead letters.
 * The rejections are delivered in both cases (the adapter may drop them).
 *
 * ASYNCHRONOUS ENGINES.  `infera serve`'s records endpoint runs the engine
 * on its batcher's thread (batched with other requests), not here: it calls
 * inf__rt_score_prepare, runs the accepted records' inputs its own way, and
 * gives the outcome to inf__rt_score_complete, which finishes and delivers
 * -- or falls back record by record -- exactly as inf__rt_score_batch does.
 * The fallback's one-record runs go through the scorer's run hook (serve: a
 * synchronous run on its batcher), or its session when there is no hook.
 */
#ifndef INF_RUNTIME_SCORE_H
#define INF_RUNTIME_SCORE_H

#include <stdbool.h>
#include <stddef.h>

#include "infera/io.h"
#include "infera/pipeline.h"
#include "infera/session.h"

typedef enum inf__rt_all_failed {
    INF__RT_ALL_FAILED_FATAL = 0,
    INF__RT_ALL_FAILED_REJECT = 1,
} inf__rt_all_failed;

/* What an adapter does with the results of one batch.  Every callback gets
 * `user`; rows are rows of the batch given to inf__rt_score_batch. */
typedef struct inf__rt_results {
    void *user;
    /* The pipeline's prediction rows (inf_pipeline_finish) for n records:
     * prediction row k is the record at in_rows[k].  The executor is there
     * for inf_pipeline_* queries.  An error status is fatal (out of memory). */
    inf_status (*scored)(void *user, const inf_record_batch *pred, const int *in_rows, int n);
    /* A record rejected: by the pipeline (field and reason of the spec), or
     * by the engine when scored alone (field NULL, reason = its message). */
    inf_status (*rejected)(void *user, int in_row, const char *field, const char *reason);
    /* Forget everything delivered for this batch so far (the fallback starts
     * again record by record).  May be NULL when nothing was delivered
     * before a data error can happen (scored() runs after the engine). */
    void (*restart)(void *user);
} inf__rt_results;

/* An engine run of rows accepted records: *y receives the outputs, valid
 * until the next run (a session's own tensors, or the hook owner's). */
typedef inf_status (*inf__rt_run_fn)(void *user, const inf_tensor *const *x, int rows, inf_tensor *const **y,
                                     inf_error *e);

/* One scorer: a session and a pipeline executor over an opened model, plus
 * the scratch of the fallback.  Used by one thread at a time. */
typedef struct inf__rt_scorer {
    inf_session *session;      /* borrowed */
    inf_pipeline_exec *exec;   /* borrowed */
    inf_record_batch *one;     /* owned: one record, scored alone */
    inf_record_batch *pred;    /* owned: prediction rows */
    int *in_rows;              /* owned: prediction row -> batch row */
    int cap_rows;
    inf__rt_all_failed policy;
    inf__rt_run_fn run;        /* NULL: inf_session_run(session); set by the adapter after init */
    void *run_user;
    struct inf__mon_log *log;  /* borrowed, may be NULL: the prediction log (monitor/predlog.h),
                                * given every scored batch; set by the adapter after init */
    const inf_pipeline *log_pipeline; /* borrowed, may be NULL (the log's own): the pipeline the
                                       * log rows are built with (a log shared by several models) */
    struct inf__mon_online *online;   /* borrowed, may be NULL: drift windows (monitor/online.h) every
                                       * scored batch goes into; set by the adapter after init */
    uint64_t online_failures;         /* batches the windows could not take (out of memory) */
} inf__rt_scorer;

/* Sets up s over a session and an executor (borrowed: they must outlive s).
 * INF_ENOMEM. */
inf_status inf__rt_scorer_init(inf__rt_scorer *s, inf_session *session, inf_pipeline_exec *exec,
                               inf__rt_all_failed policy);
void inf__rt_scorer_deinit(inf__rt_scorer *s);

/* Scores the records of in, delivering results through r.  Returns INF_OK,
 * or a fatal error (e says it): a failure that is not the data's (a lookup
 * store down, out of memory, an engine failure), an error of r's
 * callbacks, or -- with INF__RT_ALL_FAILED_FATAL -- the batch's data error
 * when every record failed alone. */
inf_status inf__rt_score_batch(inf__rt_scorer *s, const inf_record_batch *in, const inf__rt_results *r,
                               inf_error *e);

/* The two halves of inf__rt_score_batch for an adapter that runs the
 * engine itself (see ASYNCHRONOUS ENGINES).  prepare: the pipeline over in;
 * *x the model inputs of the *n_accepted records accepted (no run needed
 * when 0).  complete: st is prepare's status, or the engine run's (e holds
 * its error when st is not INF_OK); y the outputs when st is INF_OK and
 * records were accepted.  complete returns what inf__rt_score_batch would. */
inf_status inf__rt_score_prepare(inf__rt_scorer *s, const inf_record_batch *in, const inf_tensor *const **x,
                                 int *n_accepted, inf_error *e);
inf_status inf__rt_score_complete(inf__rt_scorer *s, const inf_record_batch *in, inf_status st, inf_tensor *const *y,
                                  const inf__rt_results *r, inf_error *e);

/* The default mapping (no spec) takes the first K numeric fields of records
 * that have more (DESIGN.md §4, docs/pipeline-spec.md): when ex's last batch
 * had such fields, writes a one-line note naming the fields scored and the
 * count ignored into buf (for the runner to report once) and returns true. */
bool inf__rt_ignored_fields_note(const inf_pipeline_exec *ex, char *buf, size_t size);

/* Appends rows [from, to) of src to dst, field by field name (dst gains the
 * fields it lacks).  INF_ENOMEM. */
inf_status inf__rt_append_rows(inf_record_batch *dst, const inf_record_batch *src, int from, int to);

#endif /* INF_RUNTIME_SCORE_H */
