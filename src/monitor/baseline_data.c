/*
 * baseline_data.c -- a baseline profile from training data (issue 23): the
 * records of a source scored through the model's pipeline with the scoring
 * core (runtime/score.h), profiled as the log rows the prediction log would
 * hold (inf__mon_log_rows), so that `monitor drift` compares like with like.
 * Used by `infera monitor baseline` and `infera registry register --baseline`.
 */
#include <stdlib.h>
#include <string.h>

#include "monitor/baseline_store.h"
#include "monitor/predlog.h"
#include "runtime/score.h"

typedef struct profiler {
    const inf__rt_model *m;
    inf_pipeline_exec *exec;
    const inf_record_batch *in;
    inf_record_batch *rows;
    int64_t n_rejected;
} profiler;

static inf_status prof_scored(void *user, const inf_record_batch *pred, const int *in_rows, int n) {
    (void)in_rows;
    profiler *p = user;
    return inf__mon_log_rows(p->m->pipeline, p->exec, p->in, pred, n, 0, p->rows);
}

static inf_status prof_rejected(void *user, int in_row, const char *field, const char *reason) {
    (void)in_row, (void)field, (void)reason;
    ((profiler *)user)->n_rejected++;
    return INF_OK;
}

static void prof_restart(void *user) { inf_record_batch_reset(((profiler *)user)->rows); }

inf_status inf__mon_baseline_profile(const inf__rt_model *m, const char *src_uri, inf__mon_profile *prof,
                                     int64_t *n_rejected, inf_error *e) {
    inf_session *session = NULL;
    profiler p = {.m = m};
    inf__rt_scorer scorer;
    memset(&scorer, 0, sizeof scorer);
    inf_source *src = NULL;
    inf_record_batch *in = NULL;
    inf_status st;
    if ((st = inf__rt_model_session(m, 1, 1024, &session, &p.exec, e))) return st;
    inf_source_options so = {0};
    so.max_rows = 1024;
    so.id_column = inf_pipeline_id_column(m->pipeline);
    if (inf_record_batch_new(&p.rows) || inf_record_batch_new(&in) ||
        inf__rt_scorer_init(&scorer, session, p.exec, INF__RT_ALL_FAILED_REJECT)) {
        st = inf_error_set(e, INF_ENOMEM, "monitor: out of memory");
        goto done;
    }
    if ((st = inf_source_open(src_uri, &so, &src, e))) goto done;
    inf__rt_results r = {.user = &p, .scored = prof_scored, .rejected = prof_rejected, .restart = prof_restart};
    for (int eof = 0; !eof;) {
        if ((st = inf_source_next(src, in, &eof, e))) goto done;
        p.in = in;
        inf_record_batch_reset(p.rows);
        if ((st = inf__rt_score_batch(&scorer, in, &r, e))) goto done;
        for (int j = 0, n = inf_pipeline_exec_n_feature_columns(p.exec); j < n; j++)
            if ((st = inf__mon_profile_mark_feature(prof, inf_pipeline_exec_feature_column(p.exec, j)))) goto oom;
        if ((st = inf__mon_profile_add(prof, p.rows, NULL, NULL))) goto oom;
    }
    *n_rejected = p.n_rejected;
    goto done;
oom:
    st = inf_error_set(e, INF_ENOMEM, "monitor: out of memory");
done:
    inf_source_close(src);
    inf_record_batch_free(in);
    inf_record_batch_free(p.rows);
    inf__rt_scorer_deinit(&scorer);
    inf_pipeline_exec_free(p.exec);
    inf_session_free(session);
    return st;
}
