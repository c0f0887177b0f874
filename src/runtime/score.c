/*
 * score.c -- the scoring core of every runner (score.h): prepare, run,
 * finish on a batch; record by record after a data error; the one policy
 * for a batch whose every record fails.  No I/O and no output format here:
 * adapters get prediction rows and rejections through inf__rt_results.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "monitor/online.h"
#include "monitor/predlog.h"
#include "runtime/score.h"

inf_status inf__rt_append_rows(inf_record_batch *dst, const inf_record_batch *src, int from, int to) {
    int nf = inf_record_batch_n_fields(src);
    int *map = malloc((size_t)(nf ? nf : 1) * sizeof *map);
    if (!map) return INF_ENOMEM;
    inf_status st = INF_OK;
    for (int f = 0; !st && f < nf; f++) st = inf_record_batch_add_field(dst, inf_record_batch_field_name(src, f), &map[f]);
    for (int row = from; !st && row < to; row++) {
        int k;
        st = inf_record_batch_add_row(dst, &k);
        for (int f = 0; !st && f < nf; f++) st = inf_record_batch_set(dst, k, map[f], inf_record_batch_get(src, row, f));
    }
    free(map);
    return st;
}

inf_status inf__rt_scorer_init(inf__rt_scorer *s, inf_session *session, inf_pipeline_exec *exec,
                               inf__rt_all_failed policy) {
    memset(s, 0, sizeof *s);
    s->session = session;
    s->exec = exec;
    s->policy = policy;
    if (inf_record_batch_new(&s->one) || inf_record_batch_new(&s->pred)) {
        inf__rt_scorer_deinit(s);
        return INF_ENOMEM;
    }
    return INF_OK;
}

void inf__rt_scorer_deinit(inf__rt_scorer *s) {
    inf_record_batch_free(s->one);
    inf_record_batch_free(s->pred);
    free(s->in_rows);
    memset(s, 0, sizeof *s);
}

static inf_status out_of_memory(inf_error *e) {
    return inf_error_set(e, INF_ENOMEM, "scoring: out of memory");
}

/* An adapter's callback failed (out of memory building its rows): always
 * fatal, never taken for the data's error. */
static inf_status adapter_failed(inf_error *e, inf_status st) {
    return inf_error_set(e, inf_status_is_data_error(st) ? INF_EINTERNAL : st, "scoring: building the results: %s",
                         inf_strerror(st));
}

/* The engine step: s's run hook, else its session. */
static inf_status run_engine(inf__rt_scorer *s, const inf_tensor *const *x, int rows, inf_tensor *const **y,
                             inf_error *e) {
    if (s->run) return s->run(s->run_user, x, rows, y, e);
    return inf_session_run(s->session, x, y, e);
}

/* After prepare (and the run when records were accepted): finish, and
 * deliver the scored rows and the pipeline's rejections.  `only`: see
 * score_once. */
static inf_status deliver(inf__rt_scorer *s, const inf_record_batch *in, int only, inf_tensor *const *y,
                          const inf__rt_results *r, inf_error *e) {
    inf_status st;
    int n_acc = inf_pipeline_n_accepted(s->exec);
    if (n_acc > 0) {
        if ((st = inf_pipeline_finish(s->exec, y, s->pred, e))) return st;
        if (n_acc > s->cap_rows) {
            int *rows = realloc(s->in_rows, (size_t)n_acc * sizeof *rows);
            if (!rows) return out_of_memory(e);
            s->in_rows = rows;
            s->cap_rows = n_acc;
        }
        for (int k = 0; k < n_acc; k++) s->in_rows[k] = only >= 0 ? only : inf_pipeline_accepted_row(s->exec, k);
        if ((st = r->scored(r->user, s->pred, s->in_rows, n_acc))) return adapter_failed(e, st);
        /* the prediction log (never blocks or fails: predlog.h) and the drift windows (never fail
         * scoring), both stamped with one time */
        int64_t t = s->log || s->online ? inf__mon_now_us() : 0;
        if (s->log) inf__mon_log_add_at(s->log, s->log_pipeline, NULL, s->exec, in, s->pred, t);
        if (s->online && inf__mon_online_add_scored(s->online, s->exec, s->pred, t)) s->online_failures++;
    }
    for (int i = 0, n = inf_pipeline_n_rejected(s->exec); i < n; i++) {
        const char *field = NULL, *msg = NULL;
        int row = inf_pipeline_rejected(s->exec, i, &field, &msg);
        if ((st = r->rejected(r->user, only >= 0 ? only : row, field, msg ? msg : "rejected")))
            return adapter_failed(e, st);
    }
    return INF_OK;
}

/* One pass over `in` (the caller's batch, or the one-record scratch whose
 * record is the caller's row `only`; only < 0: in is the caller's batch).
 * Engine and pipeline errors come back as they are. */
static inf_status score_once(inf__rt_scorer *s, const inf_record_batch *in, int only, const inf__rt_results *r,
                             inf_error *e) {
    const inf_tensor *const *x;
    inf_tensor *const *y = NULL;
    inf_status st;
    inf_record_batch_reset(s->pred);
    if ((st = inf_pipeline_prepare(s->exec, in, &x, e))) return st;
    int n_acc = inf_pipeline_n_accepted(s->exec);
    if (n_acc > 0 && (st = run_engine(s, x, n_acc, &y, e))) return st;
    return deliver(s, in, only, y, r, e);
}

/* After a data error on the whole batch: each record alone (score.h). */
static inf_status score_one_by_one(inf__rt_scorer *s, const inf_record_batch *in, const inf__rt_results *r,
                                   const inf_error *batch_error, inf_error *e) {
    int n = inf_record_batch_n_rows(in), n_failed = 0;
    inf_status st;
    if (r->restart) r->restart(r->user);
    for (int row = 0; row < n; row++) {
        inf_record_batch_reset(s->one);
        if ((st = inf__rt_append_rows(s->one, in, row, row + 1))) return out_of_memory(e);
        if ((st = score_once(s, s->one, row, r, e)) == INF_OK) continue;
        if (!inf_status_is_data_error(st)) return st;
        n_failed++;
        if ((st = r->rejected(r->user, row, NULL, e->message))) return adapter_failed(e, st);
    }
    if (n_failed == n && s->policy == INF__RT_ALL_FAILED_FATAL) {
        *e = *batch_error;
        return e->status;
    }
    return INF_OK;
}

/* The outcome of a first pass over the whole batch: a data error turns
 * into the record-by-record pass. */
static inf_status settle(inf__rt_scorer *s, const inf_record_batch *in, inf_status st, const inf__rt_results *r,
                         inf_error *e) {
    if (st && inf_status_is_data_error(st)) {
        inf_error batch_error = *e;
        st = score_one_by_one(s, in, r, &batch_error, e);
    }
    return st;
}

inf_status inf__rt_score_batch(inf__rt_scorer *s, const inf_record_batch *in, const inf__rt_results *r,
                               inf_error *e) {
    if (inf_record_batch_n_rows(in) == 0) return INF_OK;
    return settle(s, in, score_once(s, in, -1, r, e), r, e);
}

inf_status inf__rt_score_prepare(inf__rt_scorer *s, const inf_record_batch *in, const inf_tensor *const **x,
                                 int *n_accepted, inf_error *e) {
    *x = NULL;
    *n_accepted = 0;
    inf_record_batch_reset(s->pred);
    inf_status st = inf_pipeline_prepare(s->exec, in, x, e);
    if (st == INF_OK) *n_accepted = inf_pipeline_n_accepted(s->exec);
    return st;
}

inf_status inf__rt_score_complete(inf__rt_scorer *s, const inf_record_batch *in, inf_status st, inf_tensor *const *y,
                                  const inf__rt_results *r, inf_error *e) {
    if (st == INF_OK) st = deliver(s, in, -1, y, r, e);
    return settle(s, in, st, r, e);
}

bool inf__rt_ignored_fields_note(const inf_pipeline_exec *ex, char *buf, size_t size) {
    enum { NAMES_SHOWN = 8 };
    int ignored = inf_pipeline_n_ignored_fields(ex), used = inf_pipeline_exec_n_feature_columns(ex);
    if (ignored <= 0 || size == 0)
        return false;
    int k = snprintf(
        buf, size,
        "default mapping (no pipeline spec): the records have %d numeric fields and the model input takes %d: scoring ",
        used + ignored, used);
    for (int i = 0; i < used && i < NAMES_SHOWN && k >= 0 && (size_t)k < size; i++)
        k += snprintf(buf + k, size - (size_t)k, "%s'%s'", i ? ", " : "", inf_pipeline_exec_feature_column(ex, i));
    if (k >= 0 && (size_t)k < size)
        snprintf(buf + k, size - (size_t)k, "%s; %d more ignored (a pipeline spec chooses the fields)",
                 used > NAMES_SHOWN ? ", ..." : "", ignored);
    return true;
}
