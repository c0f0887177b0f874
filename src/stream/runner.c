/*
 * runner.c -- the loop of `infera stream` (stream_int.h, docs/stream.md):
 *
 *   next micro-batch (<= --max-batch events, <= --max-delay-ms after the first)
 *     -> pipeline (schema checks, lookups, transforms: the same inf_pipeline_*
 *        code as batch and serve, so features are bit-identical)
 *     -> engine (one inf_session, --threads kernel threads, planned for
 *        --max-batch rows)
 *     -> outputs + dead letters -> write, commit the sinks -> ack the source
 *
 * One micro-batch is in flight at a time, so "acknowledge only after the
 * output is durably written" is a plain sequence.  SIGTERM/SIGINT set a flag
 * the sources poll: the batch in hand is finished, written and acknowledged,
 * then the run ends (exit 0).  A fatal error (sink or store down, source
 * connection lost) ends the run before the ack: the events come again.
 * An error the events cause (the engine cannot take a value: an index out
 * of range, a shape the data decides) is not fatal, or a restarted consumer
 * would meet the same events again, for ever: the micro-batch is scored
 * again one event at a time, and the events that fail alone become dead
 * letters with the error while the others are scored.
 *
 * Output record: the key (the id column when there is one, else event_id),
 * event_id, the prediction fields with the lineage stamp (model_name,
 * model_version, pipeline_hash), scored_at.  Dead letter: event_id, id,
 * field, reason, record (the event as JSON without sensitive fields, or the
 * raw payload of a malformed event).
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cjson/cJSON.h>

#include "io/io_int.h"
#include "monitor/online.h"
#include "monitor/predlog.h"
#include "runtime/reject.h"
#include "runtime/score.h"
#include "stream/stream_int.h"

/* ---- process-wide stop flag ------------------------------------------------ */

static volatile sig_atomic_t stream_stop; /* the one process-wide singleton of the stream runner */

static void on_signal(int sig) { stream_stop = sig; }

int inf__stream_stopping(void) { return stream_stop != 0; }

void inf__stream_install_signals(void) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = 0; /* no SA_RESTART: blocking reads return EINTR */
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
}

int64_t inf__stream_now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int64_t wall_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

const inf__stream_source_type *inf__stream_source_find(const char *uri) {
    static const inf__stream_source_type *const types[] = {&inf__stream_redis_source, &inf__stream_mqtt_source,
                                                           &inf__stream_jsonl_source};
    size_t n = strcspn(uri, ":");
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++)
        if (strlen(types[i]->scheme) == n && !strncmp(uri, types[i]->scheme, n)) return types[i];
    return NULL;
}

/* ---- one micro-batch ----------------------------------------------------------- */

typedef struct work {
    const inf__stream_config *cfg;
    inf_session *session;
    inf_pipeline_exec *exec;
    inf__rt_scorer scorer;  /* the scoring core (runtime/score.h): every event failing alone = dead letters */
    inf_record_batch *out, *errs;
    const inf__stream_events *ev; /* the micro-batch being scored */
    const char **sensitive; /* NULL-terminated: fields left out of dead letters */
    int n_scored, n_rejected;
    bool ignored_noted; /* the default mapping's ignored fields were reported */
} work;

static const inf_value *event_id(const inf__stream_events *ev, int row) {
    return inf_record_batch_get(ev->ids, row, 0);
}

/* A dead letter (runtime/reject.h) for row `row` of ev->records (row < 0: no record). */
static inf_status add_error(work *w, const inf__stream_events *ev, int row, const inf_value *eid, const char *field,
                            const char *reason) {
    int idf = w->cfg->id_column && row >= 0 ? inf_record_batch_find_field(ev->records, w->cfg->id_column) : -1;
    const inf_value *id = idf >= 0 ? inf_record_batch_get(ev->records, row, idf) : NULL;
    return inf__rt_reject_row(w->errs, "event_id", eid, id, field, reason, ev->records, row, w->sensitive);
}

/* Malformed events (ev->bad) -> dead letters. */
static inf_status add_malformed(work *w, const inf__stream_events *ev) {
    const inf_record_batch *bad = ev->bad;
    int n = inf_record_batch_n_rows(bad), f_rec, r0 = inf_record_batch_n_rows(w->errs);
    inf_status st = INF_OK;
    for (int i = 0; i < n && !st; i++) {
        const inf_value *reason = inf_record_batch_get(bad, i, 1);
        st = add_error(w, ev, -1, inf_record_batch_get(bad, i, 0), NULL,
                       reason->type == INF_FIELD_STRING ? reason->u.s.ptr : "malformed");
        if (!st && (st = inf_record_batch_add_field(w->errs, "record", &f_rec)) == INF_OK)
            st = inf_record_batch_set(w->errs, r0 + i, f_rec, inf_record_batch_get(bad, i, 2));
    }
    return st;
}

/* pred (row k = the event at in_rows[k]) -> out: key, event_id, predictions, scored_at. */
static inf_status build_output(work *w, const inf_record_batch *pred, const int *in_rows, int n) {
    const inf__stream_events *ev = w->ev;
    const char *idc = w->cfg->id_column;
    const char *key = idc ? idc : "event_id";
    int np = inf_record_batch_n_fields(pred), f_key, f_eid, f_ts, map[1024];
    if (np > 1024) return INF_EUNSUPPORTED;
    inf_status st;
    if ((st = inf_record_batch_add_field(w->out, key, &f_key)) ||
        (st = inf_record_batch_add_field(w->out, "event_id", &f_eid)))
        return st;
    for (int f = 0; f < np; f++) {
        const char *name = inf_record_batch_field_name(pred, f);
        map[f] = -1;
        if (strcmp(name, key) && strcmp(name, "event_id") && (st = inf_record_batch_add_field(w->out, name, &map[f])))
            return st;
    }
    if ((st = inf_record_batch_add_field(w->out, "scored_at", &f_ts))) return st;
    /* the key as the prediction has it (an id the spec declares a string is a string), else as the event has it */
    int idf = idc ? inf_record_batch_find_field(ev->records, idc) : -1;
    int pkf = idc ? inf_record_batch_find_field(pred, idc) : -1;
    int64_t now = wall_us();
    for (int k = 0; k < n; k++) {
        int in_row = in_rows[k], r;
        const inf_value *eid = event_id(ev, in_row);
        const inf_value *kv = pkf >= 0 ? inf_record_batch_get(pred, k, pkf)
                              : idc   ? inf_record_batch_get(ev->records, in_row, idf)
                                      : eid;
        if (kv->type == INF_FIELD_NULL) {
            char why[300];
            snprintf(why, sizeof why, "the id column '%s' is null or missing", idc);
            if ((st = add_error(w, ev, in_row, eid, idc, why))) return st;
            w->n_rejected++;
            continue;
        }
        if ((st = inf_record_batch_add_row(w->out, &r)) || (st = inf_record_batch_set(w->out, r, f_key, kv)) ||
            (st = inf_record_batch_set(w->out, r, f_eid, eid)))
            return st;
        for (int f = 0; f < np; f++)
            if (map[f] >= 0 && (st = inf_record_batch_set(w->out, r, map[f], inf_record_batch_get(pred, k, f))))
                return st;
        if ((st = inf_record_batch_set_timestamp(w->out, r, f_ts, now))) return st;
        w->n_scored++;
    }
    return INF_OK;
}

/* Copies the records as they are (--no-score), plus event_id when they have
 * none (the key of keyed sinks without an id column). */
static inf_status forward(work *w, const inf__stream_events *ev) {
    const inf_record_batch *in = ev->records;
    int nf = inf_record_batch_n_fields(in), r, f_eid = -1;
    inf_status st = INF_OK;
    for (int f = 0; f < nf && !st; f++) st = inf_record_batch_add_field(w->out, inf_record_batch_field_name(in, f), &r);
    if (!st && inf_record_batch_find_field(in, "event_id") < 0)
        st = inf_record_batch_add_field(w->out, "event_id", &f_eid);
    for (int row = 0; row < inf_record_batch_n_rows(in) && !st; row++) {
        st = inf_record_batch_add_row(w->out, &r);
        for (int f = 0; f < nf && !st; f++) st = inf_record_batch_set(w->out, r, f, inf_record_batch_get(in, row, f));
        if (!st && f_eid >= 0) st = inf_record_batch_set(w->out, r, f_eid, event_id(ev, row));
        w->n_scored++;
    }
    return st;
}

/* Building outputs or dead letters failed (out of memory): fatal. */
static inf_status outputs_failed(inf_status st, inf_error *e) {
    inf_error_set(e, st, "stream: building the outputs of a micro-batch: %s", inf_strerror(st));
    return st;
}

/* The scoring core's results (runtime/score.h): outputs and dead letters. */
static inf_status on_scored(void *user, const inf_record_batch *pred, const int *in_rows, int n) {
    return build_output(user, pred, in_rows, n);
}

static inf_status on_rejected(void *user, int in_row, const char *field, const char *reason) {
    work *w = user;
    inf_status st = add_error(w, w->ev, in_row, event_id(w->ev, in_row), field, reason);
    if (!st) w->n_rejected++;
    return st;
}

static void on_restart(void *user) {
    work *w = user;
    inf_record_batch_reset(w->out);
    inf_record_batch_clear(w->errs);
    w->n_scored = w->n_rejected = 0;
}

/* Scores ev into w->out and w->errs.  Fatal errors only (INF_EIO from a
 * lookup store, INF_ENOMEM, ...); per-event problems are dead letters. */
static inf_status score(work *w, const inf__stream_events *ev, inf_error *e) {
    inf_record_batch_reset(w->out);
    inf_record_batch_clear(w->errs);
    w->n_scored = w->n_rejected = 0;
    inf_status st = INF_OK;
    if (inf_record_batch_n_rows(ev->records) > 0 && !w->cfg->model) {
        if ((st = forward(w, ev))) return outputs_failed(st, e);
    } else if (inf_record_batch_n_rows(ev->records) > 0) {
        inf__rt_results results = {w, on_scored, on_rejected, on_restart};
        w->ev = ev;
        if ((st = inf__rt_score_batch(&w->scorer, ev->records, &results, e))) return st;
        char note[1024];
        if (!w->ignored_noted && inf__rt_ignored_fields_note(w->exec, note, sizeof note)) {
            fprintf(stderr, "infera stream: %s\n", note);
            w->ignored_noted = true;
        }
    }
    if ((st = add_malformed(w, ev))) return outputs_failed(st, e);
    return INF_OK;
}

/* ---- the loop ------------------------------------------------------------------- */

static void report_rejections(const inf_record_batch *errs, int64_t *n_reported) {
    int fr = inf_record_batch_find_field(errs, "reason"), fe = inf_record_batch_find_field(errs, "event_id");
    for (int i = 0; i < inf_record_batch_n_rows(errs) && *n_reported < 5; i++, (*n_reported)++) {
        const inf_value *r = inf_record_batch_get(errs, i, fr), *id = inf_record_batch_get(errs, i, fe);
        fprintf(stderr, "infera stream: event %s rejected: %s%s\n", id->type == INF_FIELD_STRING ? id->u.s.ptr : "?",
                r->type == INF_FIELD_STRING ? r->u.s.ptr : "",
                *n_reported == 4 ? " (further rejections are counted; use --errors DST to keep them)" : "");
    }
}

/* Writes, commits, acknowledges one scored micro-batch. */
static inf_status deliver(work *w, void *src, inf__stream_stats *stats, int64_t *n_reported, inf_error *e) {
    const inf__stream_config *cfg = w->cfg;
    inf_status st = INF_OK;
    if (inf_record_batch_n_rows(w->out) > 0 && (st = inf_sink_write(cfg->sink, w->out, e))) return st;
    if (cfg->errors && inf_record_batch_n_rows(w->errs) > 0 && (st = inf_sink_write(cfg->errors, w->errs, e)))
        return st;
    if ((st = inf_sink_commit(cfg->sink, e))) return st;
    if (cfg->errors && (st = inf_sink_commit(cfg->errors, e))) return st;
    if (!cfg->errors) report_rejections(w->errs, n_reported);
    if (cfg->source_type->ack && (st = cfg->source_type->ack(src, e))) return st;
    stats->written += inf_record_batch_n_rows(w->out);
    return INF_OK;
}

static void progress(const inf__stream_config *cfg, const inf__stream_stats *s, double elapsed_s, int64_t since_events,
                     double since_s) {
    (void)cfg;
    double cpu = inf__cpu_seconds();
    fprintf(stderr,
            "{\"event\":\"progress\",\"elapsed_s\":%.1f,\"events\":%lld,\"batches\":%lld,\"scored\":%lld,"
            "\"written\":%lld,\"rejected\":%lld,\"malformed\":%lld,\"events_per_s\":%.1f,\"cpu_s\":%.3f,"
            "\"cpu_s_per_million\":%.3f}\n",
            elapsed_s, (long long)s->events, (long long)s->batches, (long long)s->scored, (long long)s->written,
            (long long)s->rejected, (long long)s->malformed, since_s > 0 ? (double)since_events / since_s : 0.0, cpu,
            s->scored > 0 ? cpu / (double)s->scored * 1e6 : 0.0);
}

void inf__stream_drift_event(inf__stream_alerts *alerts, cJSON *drift) {
    char *json = drift ? cJSON_PrintUnformatted(drift) : NULL;
    if (json && json[0] == '{' && json[1] != '}') fprintf(stderr, "{\"event\":\"drift\",%s\n", json + 1);
    cJSON_free(json);
    inf__stream_alerts_check(alerts, drift);
    cJSON_Delete(drift);
}

static inf_status work_init(work *w, const inf__stream_config *cfg, inf_error *e) {
    memset(w, 0, sizeof *w);
    w->cfg = cfg;
    if (inf_record_batch_new(&w->out) || inf_record_batch_new(&w->errs)) goto oom;
    if (!cfg->model) return INF_OK;
    const inf_pipeline *pl = cfg->model->pipeline;
    int n_in = inf_pipeline_n_inputs(pl), k = 0;
    w->sensitive = calloc((size_t)n_in + 1, sizeof *w->sensitive);
    if (!w->sensitive) goto oom;
    for (int i = 0; i < n_in; i++)
        if (inf_pipeline_is_sensitive(pl, inf_pipeline_input_name(pl, i)))
            w->sensitive[k++] = inf_pipeline_input_name(pl, i);
    inf_status st = inf__rt_model_session(cfg->model, cfg->n_threads, cfg->max_batch, &w->session, &w->exec, e);
    if (st) return st;
    if (inf__rt_scorer_init(&w->scorer, w->session, w->exec, INF__RT_ALL_FAILED_REJECT)) goto oom;
    w->scorer.log = cfg->log;
    w->scorer.online = cfg->online;
    return INF_OK;
oom:
    inf_error_set(e, INF_ENOMEM, "stream: out of memory");
    return INF_ENOMEM;
}

static void work_deinit(work *w) {
    inf__rt_scorer_deinit(&w->scorer);
    inf_pipeline_exec_free(w->exec);
    inf_session_free(w->session);
    inf_record_batch_free(w->out);
    inf_record_batch_free(w->errs);
    free(w->sensitive);
}

/* Events the source holds that a stop must still score (see inf__stream_source_type.buffered). */
static int64_t source_buffered(const inf__stream_config *cfg) {
    return cfg->source_type->buffered ? cfg->source_type->buffered(cfg->source) : 0;
}

inf_status inf__stream_run(const inf__stream_config *cfg, inf__stream_stats *stats, inf_error *err) {
    memset(stats, 0, sizeof *stats);
    work w;
    inf__stream_events ev;
    inf_status st = work_init(&w, cfg, err);
    if (!st && ((st = inf__stream_events_init(&ev)) || (st = inf_record_batch_set_id_field(ev.records, cfg->id_column)))) {
        inf_error_set(err, st, "stream: out of memory");
        work_deinit(&w);
        return st;
    }
    if (st) {
        work_deinit(&w);
        return st;
    }
    int64_t t0 = inf__stream_now_ms(), last = t0, last_events = 0, n_reported = 0;
    int eof = 0;
    while (!st && !eof && (!inf__stream_stopping() || source_buffered(cfg))) {
        int max = cfg->max_batch;
        if (cfg->max_events > 0 && cfg->max_events - stats->events < max) max = (int)(cfg->max_events - stats->events);
        if (max <= 0) break;
        inf__stream_events_clear(&ev);
        if ((st = cfg->source_type->next(cfg->source, &ev, max, &eof, err))) break;
        int n = inf__stream_events_count(&ev);
        if (n > 0) {
            int64_t b0 = inf__stream_now_ms();
            if ((st = score(&w, &ev, err)) || (st = deliver(&w, cfg->source, stats, &n_reported, err))) break;
            stats->events += n;
            stats->batches++;
            stats->scored += w.n_scored;
            stats->rejected += w.n_rejected;
            stats->malformed += inf_record_batch_n_rows(ev.bad);
            stats->busy_s += (double)(inf__stream_now_ms() - b0) / 1000.0;
        }
        /* a drift window that ended: reported once, as the stream goes (a quiet stream reports it
         * with its next batch or at the end) */
        if (cfg->online)
            inf__stream_drift_event(cfg->alerts, inf__mon_online_take_complete(cfg->online, inf__mon_now_us()));
        inf__stream_alerts_quality(cfg->alerts, 0);
        int64_t now = inf__stream_now_ms();
        if (cfg->progress_ms > 0 && now - last >= cfg->progress_ms) {
            progress(cfg, stats, (double)(now - t0) / 1000.0, stats->events - last_events,
                     (double)(now - last) / 1000.0);
            last = now;
            last_events = stats->events;
        }
    }
    stats->wall_s = (double)(inf__stream_now_ms() - t0) / 1000.0;
    inf__stream_events_deinit(&ev);
    work_deinit(&w);
    return st;
}
