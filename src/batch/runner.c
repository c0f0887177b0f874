/*
 * runner.c -- the pipelined batch runner: one reader thread, N scoring
 * workers, one writer thread, connected by bounded queues of chunks.
 *
 *   reader  --free chunks-->  fills chunk.in from the source (chunk_rows
 *           records), numbers it (seq) and queues it for the workers
 *   worker  own inf_session + inf_pipeline_exec; chunk.in -> chunk.out
 *           (predictions + lineage columns) and chunk.errs (rejected rows)
 *   writer  takes chunks strictly in seq order (a slot per chunk), writes
 *           them to the sinks, commits (every chunk, or at most every
 *           checkpoint_ms), checkpoints the job file, updates progress,
 *           returns the chunk to the free list
 *
 * The number of chunks is fixed (2 * threads + 2), so memory is bounded and
 * a slow sink slows the reader down.  One mutex and one condition variable
 * guard the queues; each chunk is touched by one thread at a time.  A fatal
 * error (source I/O, model failure, sink failure, error-rate limit) sets
 * `stop`; every thread then leaves, and nothing after the last commit is
 * checkpointed, so --resume redoes it.
 *
 * Source records are numbered from 1 in source order (`source_row` of error
 * rows; `row_number` of outputs when there is no id column).
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "batch/batch_int.h"
#include "runtime/reject.h"
#include "runtime/score.h"

typedef struct chunk {
    int64_t seq;
    int64_t first_ordinal; /* 1-based source number of in's row 0 */
    int64_t n_src;         /* source records consumed: rows + malformed ones */
    int n_rows;
    int bad;               /* a malformed source record follows the rows */
    char bad_msg[INF_ERROR_MESSAGE_MAX];
    int n_scored, n_rejected;
    inf_record_batch *in, *out, *errs;
} chunk;

typedef struct runner {
    const inf__runner_config *cfg;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    chunk *chunks;
    int n_chunks;
    chunk **free_list;
    int n_free;
    chunk **work; /* FIFO ring */
    int work_head, n_work;
    chunk **slots; /* done chunks by seq % n_chunks */
    int reader_done;
    int64_t n_seq; /* chunks produced (final when reader_done) */
    int stop;
    int ignored_noted; /* the default mapping's ignored fields were reported (once per job) */
    inf_error err;
    const char **sensitive; /* NULL-terminated skip list for error records */
} runner;

static int per_record_status(inf_status st) { return st == INF_EFORMAT || st == INF_ETYPE || st == INF_ERANGE; }

static void set_fatal(runner *r, const inf_error *e) {
    pthread_mutex_lock(&r->mu);
    if (!r->stop) {
        r->stop = 1;
        r->err = *e;
    }
    pthread_cond_broadcast(&r->cv);
    pthread_mutex_unlock(&r->mu);
}

static void fatal_msg(runner *r, inf_status st, const char *msg) {
    inf_error e;
    e.status = st;
    snprintf(e.message, sizeof e.message, "%s", msg);
    set_fatal(r, &e);
}

/* ---- reader --------------------------------------------------------------- */

static chunk *take_free(runner *r) {
    pthread_mutex_lock(&r->mu);
    while (!r->stop && r->n_free == 0) pthread_cond_wait(&r->cv, &r->mu);
    chunk *c = r->stop ? NULL : r->free_list[--r->n_free];
    pthread_mutex_unlock(&r->mu);
    return c;
}

static void give_free(runner *r, chunk *c) {
    pthread_mutex_lock(&r->mu);
    r->free_list[r->n_free++] = c;
    pthread_cond_broadcast(&r->cv);
    pthread_mutex_unlock(&r->mu);
}

static void queue_work(runner *r, chunk *c) {
    pthread_mutex_lock(&r->mu);
    r->work[(r->work_head + r->n_work) % r->n_chunks] = c;
    r->n_work++;
    r->n_seq = c->seq + 1;
    pthread_cond_broadcast(&r->cv);
    pthread_mutex_unlock(&r->mu);
}

static inf_status copy_rows(inf_record_batch *dst, const inf_record_batch *src, int from) {
    inf_record_batch_clear(dst);
    return inf__rt_append_rows(dst, src, from, inf_record_batch_n_rows(src));
}

static void *reader_main(void *arg) {
    runner *r = arg;
    const inf__runner_config *cfg = r->cfg;
    int64_t ordinal = 1, seq = 0, skipped = 0;
    int eof = 0;
    inf_error e;
    /* Resume: skip the records a previous run committed.  The last batch read
     * may reach past the skip point: its tail becomes the first chunk. */
    chunk *carry = NULL;
    if (cfg->skip > 0) {
        inf_record_batch *tmp = NULL;
        if (inf_record_batch_new(&tmp)) {
            fatal_msg(r, INF_ENOMEM, "batch: out of memory");
            return NULL;
        }
        while (skipped < cfg->skip && !eof) {
            inf_status st = inf_source_next(cfg->source, tmp, &eof, &e);
            if (st && !per_record_status(st)) {
                set_fatal(r, &e);
                break;
            }
            int n = inf_record_batch_n_rows(tmp), bad = st != INF_OK;
            if (skipped + n + bad <= cfg->skip) {
                skipped += n + bad;
                continue;
            }
            /* overshoot: keep rows from (skip - skipped), and the bad record */
            int from = (int)(cfg->skip - skipped);
            carry = take_free(r);
            if (!carry) break;
            if (from < n && copy_rows(carry->in, tmp, from)) {
                fatal_msg(r, INF_ENOMEM, "batch: out of memory");
                give_free(r, carry);
                carry = NULL;
                break;
            }
            if (from >= n) inf_record_batch_clear(carry->in);
            carry->n_rows = from < n ? n - from : 0;
            carry->bad = bad;
            if (bad) snprintf(carry->bad_msg, sizeof carry->bad_msg, "%s", e.message);
            skipped = cfg->skip;
        }
        inf_record_batch_free(tmp);
        if (skipped < cfg->skip && !r->stop && eof) {
            /* the source has fewer records than the checkpoint says */
            char msg[INF_ERROR_MESSAGE_MAX];
            snprintf(msg, sizeof msg,
                     "batch: cannot resume: the input has %lld records but the checkpoint says %lld were done "
                     "(was the input changed?)",
                     (long long)skipped, (long long)cfg->skip);
            fatal_msg(r, INF_EINVAL, msg);
        }
        ordinal = cfg->skip + 1;
        if (carry) {
            carry->first_ordinal = ordinal;
            carry->n_src = carry->n_rows + carry->bad;
            carry->seq = seq++;
            ordinal += carry->n_src;
            queue_work(r, carry);
        }
    }
    while (!eof && !r->stop) {
        chunk *c = take_free(r);
        if (!c) break;
        inf_status st = inf_source_next(cfg->source, c->in, &eof, &e);
        if (st && !per_record_status(st)) {
            give_free(r, c);
            set_fatal(r, &e);
            break;
        }
        c->n_rows = inf_record_batch_n_rows(c->in);
        c->bad = st != INF_OK;
        if (c->bad) snprintf(c->bad_msg, sizeof c->bad_msg, "%s", e.message);
        if (c->n_rows == 0 && !c->bad) {
            give_free(r, c);
            continue;
        }
        c->first_ordinal = ordinal;
        c->n_src = c->n_rows + c->bad;
        ordinal += c->n_src;
        c->seq = seq++;
        queue_work(r, c);
    }
    pthread_mutex_lock(&r->mu);
    r->reader_done = 1;
    r->n_seq = seq;
    pthread_cond_broadcast(&r->cv);
    pthread_mutex_unlock(&r->mu);
    return NULL;
}

/* ---- workers -------------------------------------------------------------- */

/* A rejection row (runtime/reject.h) keyed by the record's source number. */
static inf_status add_error_row(runner *r, chunk *c, int64_t ordinal, const inf_value *id, const char *field,
                                const char *reason, int in_row) {
    inf_value key = {.type = INF_FIELD_INT, .u.i = ordinal};
    return inf__rt_reject_row(c->errs, "source_row", &key, id, field, reason, in_row >= 0 ? c->in : NULL, in_row,
                              r->sensitive);
}

/* The scoring core's results for one chunk (runtime/score.h): prediction
 * rows become output rows, rejections error rows. */
typedef struct chunk_results {
    runner *r;
    chunk *c;
    int64_t scored_at_us;
} chunk_results;

/* pred -> out: key column first, then the prediction fields and lineage
 * (model_name, model_version, pipeline_hash), scored_at.  map has room for
 * a field index per prediction field.  A null id is an error row. */
static inf_status fill_output(chunk_results *cr, const inf_record_batch *p, const int *in_rows, int n, int *map) {
    runner *r = cr->r;
    chunk *c = cr->c;
    const inf__runner_config *cfg = r->cfg;
    inf_record_batch *o = c->out;
    int np = inf_record_batch_n_fields(p), f_key, f_ts;
    const char *key = cfg->id_column ? cfg->id_column : "row_number";
    inf_status st;
    if ((st = inf_record_batch_add_field(o, key, &f_key))) return st;
    int key_in_pred = -1, key_in_in = cfg->id_column ? inf_record_batch_find_field(c->in, cfg->id_column) : -1;
    for (int f = 0; f < np; f++) {
        const char *name = inf_record_batch_field_name(p, f);
        if (!strcmp(name, key)) {
            key_in_pred = f;
            map[f] = -1;
            continue;
        }
        if ((st = inf_record_batch_add_field(o, name, &map[f]))) return st;
    }
    if ((st = inf_record_batch_add_field(o, "scored_at", &f_ts))) return st;
    for (int k = 0; k < n; k++) {
        int row, in_row = in_rows[k];
        if (cfg->id_column) {
            const inf_value *kv = key_in_pred >= 0 ? inf_record_batch_get(p, k, key_in_pred)
                                                   : inf_record_batch_get(c->in, in_row, key_in_in);
            if (kv->type == INF_FIELD_NULL) {
                char why[300];
                snprintf(why, sizeof why, "the id column '%s' is null or missing", cfg->id_column);
                if ((st = add_error_row(r, c, c->first_ordinal + in_row, NULL, cfg->id_column, why, in_row))) return st;
                c->n_rejected++;
                continue;
            }
        }
        if ((st = inf_record_batch_add_row(o, &row))) return st;
        if (!cfg->id_column)
            st = inf_record_batch_set_int(o, row, f_key, c->first_ordinal + in_row);
        else if (key_in_pred >= 0)
            st = inf_record_batch_set(o, row, f_key, inf_record_batch_get(p, k, key_in_pred));
        else if (key_in_in >= 0)
            st = inf_record_batch_set(o, row, f_key, inf_record_batch_get(c->in, in_row, key_in_in));
        for (int f = 0; !st && f < np; f++)
            if (map[f] >= 0) st = inf_record_batch_set(o, row, map[f], inf_record_batch_get(p, k, f));
        if (!st) st = inf_record_batch_set_timestamp(o, row, f_ts, cr->scored_at_us);
        if (st) return st;
        c->n_scored++;
    }
    return INF_OK;
}

/* fill_output with a map of the predictions' width (models may have
 * thousands of output columns). */
static inf_status on_scored(void *user, const inf_record_batch *pred, const int *in_rows, int n) {
    int np = inf_record_batch_n_fields(pred);
    int *map = malloc((size_t)(np ? np : 1) * sizeof *map);
    if (!map) return INF_ENOMEM;
    inf_status st = fill_output(user, pred, in_rows, n, map);
    free(map);
    return st;
}

static inf_status on_rejected(void *user, int in_row, const char *field, const char *reason) {
    chunk_results *cr = user;
    chunk *c = cr->c;
    const inf__runner_config *cfg = cr->r->cfg;
    int id_in = cfg->id_column ? inf_record_batch_find_field(c->in, cfg->id_column) : -1;
    inf_status st = add_error_row(cr->r, c, c->first_ordinal + in_row,
                                  id_in >= 0 ? inf_record_batch_get(c->in, in_row, id_in) : NULL, field, reason, in_row);
    if (!st) c->n_rejected++;
    return st;
}

static void clear_outputs(chunk *c) {
    inf_record_batch_clear(c->out);
    inf_record_batch_clear(c->errs);
    c->n_scored = c->n_rejected = 0;
}

static void on_restart(void *user) { clear_outputs(((chunk_results *)user)->c); }

static int64_t now_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* Building a chunk's outputs failed (out of memory): fatal. */
static inf_status outputs_failed(const chunk *c, inf_status st, inf_error *e) {
    inf_error_set(e, st, "batch: building the output of rows %lld-%lld: %s", (long long)c->first_ordinal,
                  (long long)(c->first_ordinal + c->n_src - 1), inf_strerror(st));
    return st;
}

/* Scores c->in into c->out and c->errs through the scoring core: a chunk
 * whose every record fails alone is the job's error (INF__RT_ALL_FAILED_FATAL,
 * runtime/score.h), returned as fatal. */
static inf_status score_chunk(runner *r, chunk *c, inf__rt_scorer *scorer, inf_error *e) {
    const inf__runner_config *cfg = r->cfg;
    clear_outputs(c);
    inf_status st = INF_OK;
    if (c->n_rows > 0 && cfg->id_column && inf_record_batch_find_field(c->in, cfg->id_column) < 0) {
        inf_error_set(e, INF_EINVAL, "%s has no column '%s' (--id-column)", cfg->input_uri, cfg->id_column);
        return INF_EINVAL;
    }
    if (c->n_rows > 0 && !cfg->model) {
        /* --no-score: a plain copy (benchmark baseline of the I/O path) */
        if ((st = copy_rows(c->out, c->in, 0))) return outputs_failed(c, st, e);
        c->n_scored = c->n_rows;
    } else if (c->n_rows > 0) {
        chunk_results cr = {r, c, now_us()};
        inf__rt_results results = {&cr, on_scored, on_rejected, on_restart};
        if ((st = inf__rt_score_batch(scorer, c->in, &results, e))) return st;
    }
    if (c->bad && (st = add_error_row(r, c, c->first_ordinal + c->n_rows, NULL, NULL, c->bad_msg, -1)))
        return outputs_failed(c, st, e);
    return INF_OK;
}

/* Says once per job which fields the default mapping scores when the
 * records have more numeric fields than the model takes. */
static void note_ignored_fields(runner *r, const inf_pipeline_exec *ex) {
    char note[1024];
    if (!ex || !inf__rt_ignored_fields_note(ex, note, sizeof note))
        return;
    pthread_mutex_lock(&r->mu);
    int first = !r->ignored_noted;
    r->ignored_noted = 1;
    pthread_mutex_unlock(&r->mu);
    if (first)
        fprintf(stderr, "infera batch: %s\n", note);
}

static void *worker_main(void *arg) {
    runner *r = arg;
    const inf__runner_config *cfg = r->cfg;
    inf_session *s = NULL;
    inf_pipeline_exec *ex = NULL;
    inf__rt_scorer scorer;
    memset(&scorer, 0, sizeof scorer);
    inf_error e;
    if (cfg->model) {
        if (inf__rt_model_session(cfg->model, 1, cfg->chunk_rows, &s, &ex, &e)) {
            set_fatal(r, &e);
            goto done;
        }
        if (inf__rt_scorer_init(&scorer, s, ex, INF__RT_ALL_FAILED_FATAL)) {
            fatal_msg(r, INF_ENOMEM, "batch: out of memory");
            goto done;
        }
        scorer.log = cfg->log;
    }
    for (;;) {
        pthread_mutex_lock(&r->mu);
        while (!r->stop && r->n_work == 0 && !r->reader_done) pthread_cond_wait(&r->cv, &r->mu);
        if (r->stop || r->n_work == 0) {
            pthread_mutex_unlock(&r->mu);
            break;
        }
        chunk *c = r->work[r->work_head];
        r->work_head = (r->work_head + 1) % r->n_chunks;
        r->n_work--;
        pthread_mutex_unlock(&r->mu);
        if (score_chunk(r, c, &scorer, &e)) {
            char msg[INF_ERROR_MESSAGE_MAX];
            snprintf(msg, sizeof msg, "rows %lld-%lld: %s", (long long)c->first_ordinal,
                     (long long)(c->first_ordinal + c->n_src - 1), e.message);
            fatal_msg(r, e.status, msg);
            break;
        }
        note_ignored_fields(r, ex);
        pthread_mutex_lock(&r->mu);
        r->slots[c->seq % r->n_chunks] = c;
        pthread_cond_broadcast(&r->cv);
        pthread_mutex_unlock(&r->mu);
    }
done:
    inf__rt_scorer_deinit(&scorer);
    inf_pipeline_exec_free(ex);
    inf_session_free(s);
    return NULL;
}

/* ---- writer --------------------------------------------------------------- */

typedef struct pending {
    int64_t n_src, read, scored, written, rejected;
} pending;

static inf_status commit_and_checkpoint(runner *r, pending *p, inf_error *e) {
    const inf__runner_config *cfg = r->cfg;
    inf__job *job = cfg->job;
    inf_status st;
    if ((st = inf_sink_commit(cfg->sink, e))) return st;
    if (cfg->errors && (st = inf_sink_commit(cfg->errors, e))) return st;
    job->source_done += p->n_src;
    job->rows_read += p->read;
    job->rows_scored += p->scored;
    job->rows_written += p->written;
    job->rows_rejected += p->rejected;
    memset(p, 0, sizeof *p);
    if (cfg->out_target->kind == INF__TARGET_FILE) job->output_bytes = inf__target_file_size(cfg->out_target);
    if (cfg->errors && cfg->err_target->kind == INF__TARGET_FILE)
        job->errors_bytes = inf__target_file_size(cfg->err_target);
    return inf__job_save(job, cfg->input_uri, cfg->output_uri, cfg->errors_uri, e);
}

/* Waits on r->cv (r->mu held) until woken or until the monotonic time
 * `deadline` (inf__now()).  Returns 1 when the deadline passed.  The writer
 * waits so while it has written chunks it has not committed: it then
 * commits without waiting for the next chunk, which its open transaction
 * may be holding up (a SQLite sink in the source's database file locks the
 * source out once the transaction spills to the file). */
static int wait_until(runner *r, double deadline) {
    double left = deadline - inf__now();
    if (left <= 0) return 1;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    long long ns = (long long)ts.tv_nsec + (long long)(left * 1e9);
    ts.tv_sec += (time_t)(ns / 1000000000LL);
    ts.tv_nsec = (long)(ns % 1000000000LL);
    return pthread_cond_timedwait(&r->cv, &r->mu, &ts) == ETIMEDOUT;
}

static void *writer_main(void *arg) {
    runner *r = arg;
    const inf__runner_config *cfg = r->cfg;
    inf__job *job = cfg->job;
    pending p = {0};
    int64_t next = 0;
    double last_commit = inf__now();
    inf_error e;
    for (;;) {
        pthread_mutex_lock(&r->mu);
        chunk *c = NULL;
        int idle_commit = 0;
        for (;;) {
            if (r->stop) break;
            c = r->slots[next % r->n_chunks];
            if (c && c->seq == next) break;
            c = NULL;
            if (r->reader_done && next >= r->n_seq) break;
            if (!p.n_src) {
                pthread_cond_wait(&r->cv, &r->mu);
            } else if (wait_until(r, last_commit + cfg->checkpoint_s)) {
                idle_commit = 1; /* chunks written but not committed, and the next one is late */
                break;
            }
        }
        if (c) r->slots[next % r->n_chunks] = NULL;
        pthread_mutex_unlock(&r->mu);
        if (idle_commit) {
            if (commit_and_checkpoint(r, &p, &e)) {
                set_fatal(r, &e);
                break;
            }
            last_commit = inf__now();
            continue;
        }
        if (!c) break;
        inf_status st = INF_OK;
        if (inf_record_batch_n_rows(c->out) > 0) st = inf_sink_write(cfg->sink, c->out, &e);
        if (!st && cfg->errors && inf_record_batch_n_rows(c->errs) > 0) st = inf_sink_write(cfg->errors, c->errs, &e);
        if (st) {
            give_free(r, c);
            set_fatal(r, &e);
            break;
        }
        if (!cfg->errors && (c->n_rejected || c->bad) && job->rows_rejected + p.rejected == 0 &&
            inf_record_batch_n_rows(c->errs) > 0) {
            const inf_value *v = inf_record_batch_get(c->errs, 0, inf_record_batch_find_field(c->errs, "reason"));
            fprintf(stderr, "infera batch: source row %lld rejected: %s (further rejections are counted; use --errors DST to keep them)\n",
                    (long long)inf_record_batch_get(c->errs, 0, 0)->u.i, v->type == INF_FIELD_STRING ? v->u.s.ptr : "");
        }
        p.n_src += c->n_src;
        p.read += c->n_rows + c->bad;
        p.scored += c->n_scored;
        p.written += inf_record_batch_n_rows(c->out);
        p.rejected += c->n_rejected + c->bad;
        next++;
        give_free(r, c);
        double now = inf__now();
        pthread_mutex_lock(&r->mu);
        int last = r->reader_done && next >= r->n_seq;
        pthread_mutex_unlock(&r->mu);
        if (last || now - last_commit >= cfg->checkpoint_s) {
            if (commit_and_checkpoint(r, &p, &e)) {
                set_fatal(r, &e);
                break;
            }
            last_commit = now;
        }
        if (cfg->progress)
            inf__progress_update(cfg->progress, job->source_done + p.n_src, job->rows_written + p.written,
                                 job->rows_rejected + p.rejected, 0);
        int64_t read = job->rows_read + p.read, rej = job->rows_rejected + p.rejected;
        if (cfg->max_error_rate >= 0 && read > 0 && (read >= 1000 || last) &&
            (double)rej / (double)read > cfg->max_error_rate) {
            if (p.n_src && commit_and_checkpoint(r, &p, &e)) {
                set_fatal(r, &e);
                break;
            }
            char msg[INF_ERROR_MESSAGE_MAX];
            snprintf(msg, sizeof msg,
                     "batch: stopped: %lld of %lld rows rejected (%.1f%%), above --max-error-rate %g; "
                     "see the error sink for the reasons",
                     (long long)rej, (long long)read, 100.0 * (double)rej / (double)read, cfg->max_error_rate);
            fatal_msg(r, INF_ERANGE, msg);
            break;
        }
    }
    if (p.n_src && !r->stop && commit_and_checkpoint(r, &p, &e)) set_fatal(r, &e);
    return NULL;
}

/* ---- run ------------------------------------------------------------------- */

inf_status inf__runner_run(const inf__runner_config *cfg, inf_error *err) {
    runner r;
    memset(&r, 0, sizeof r);
    r.cfg = cfg;
    int n_threads = cfg->n_threads > 0 ? cfg->n_threads : 1;
    r.n_chunks = 2 * n_threads + 2;
    inf_status st = INF_OK;
    pthread_t reader, writer, *workers = NULL;
    int n_started = 0, reader_ok = 0, writer_ok = 0;
    pthread_mutex_init(&r.mu, NULL);
    pthread_cond_init(&r.cv, NULL);
    r.chunks = calloc((size_t)r.n_chunks, sizeof *r.chunks);
    r.free_list = calloc((size_t)r.n_chunks, sizeof *r.free_list);
    r.work = calloc((size_t)r.n_chunks, sizeof *r.work);
    r.slots = calloc((size_t)r.n_chunks, sizeof *r.slots);
    workers = calloc((size_t)n_threads, sizeof *workers);
    if (!r.chunks || !r.free_list || !r.work || !r.slots || !workers) goto oom;
    for (int i = 0; i < r.n_chunks; i++) {
        chunk *c = &r.chunks[i];
        if (inf_record_batch_new(&c->in) || inf_record_batch_new(&c->out) ||
            inf_record_batch_new(&c->errs))
            goto oom;
        r.free_list[r.n_free++] = c;
    }
    if (cfg->model) {
        const inf_pipeline *pl = cfg->model->pipeline;
        int n_in = inf_pipeline_n_inputs(pl), k = 0;
        r.sensitive = calloc((size_t)n_in + 1, sizeof *r.sensitive);
        if (!r.sensitive) goto oom;
        for (int i = 0; i < n_in; i++)
            if (inf_pipeline_is_sensitive(pl, inf_pipeline_input_name(pl, i)))
                r.sensitive[k++] = inf_pipeline_input_name(pl, i);
    }
    if (pthread_create(&reader, NULL, reader_main, &r)) goto threads;
    reader_ok = 1;
    for (; n_started < n_threads; n_started++)
        if (pthread_create(&workers[n_started], NULL, worker_main, &r)) goto threads;
    if (pthread_create(&writer, NULL, writer_main, &r)) goto threads;
    writer_ok = 1;
    goto join;
threads:
    fatal_msg(&r, INF_ENOMEM, "batch: cannot start threads");
join:
    if (writer_ok) pthread_join(writer, NULL);
    /* the writer is gone: nothing will free chunks any more, so stop the rest */
    pthread_mutex_lock(&r.mu);
    if (!r.stop && !(r.reader_done && r.n_work == 0)) {
        r.stop = 1;
        if (!r.err.message[0]) {
            r.err.status = INF_EINTERNAL;
            snprintf(r.err.message, sizeof r.err.message, "batch: the writer stopped early");
        }
    }
    if (!writer_ok) r.stop = 1;
    pthread_cond_broadcast(&r.cv);
    pthread_mutex_unlock(&r.mu);
    if (reader_ok) pthread_join(reader, NULL);
    for (int i = 0; i < n_started; i++) pthread_join(workers[i], NULL);
    if (r.stop) {
        st = r.err.status ? r.err.status : INF_EINTERNAL;
        if (err) *err = r.err;
    }
    goto cleanup;
oom:
    st = INF_ENOMEM;
    inf_error_set(err, st, "batch: out of memory");
cleanup:
    if (r.chunks)
        for (int i = 0; i < r.n_chunks; i++) {
            inf_record_batch_free(r.chunks[i].in);
            inf_record_batch_free(r.chunks[i].out);
            inf_record_batch_free(r.chunks[i].errs);
        }
    free(r.chunks);
    free(r.free_list);
    free(r.work);
    free(r.slots);
    free(workers);
    free(r.sensitive);
    pthread_mutex_destroy(&r.mu);
    pthread_cond_destroy(&r.cv);
    return st;
}
