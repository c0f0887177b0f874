/*
 * batcher.c -- dynamic batching for one model version: a bounded FIFO of
 * jobs and one scheduler thread that owns the version's session.
 *
 * ALGORITHM (Triton's dynamic batcher, kserve-v2.md §2.7).  Jobs are taken
 * in arrival order.  A batch grows while the next job's inputs are
 * compatible (same dtypes and trailing dimensions) and the rows stay within
 * max_batch.  If a preferred size can be formed, the largest one is sent.
 * With max_queue_delay_us > 0 and fewer queued rows than max_batch, the
 * scheduler holds the batch until the oldest job has waited that long or
 * enough rows arrive; with 0 it sends whatever is queued at once (under load
 * batches still form, from what queued while the previous batch ran).
 *
 * A model is batchable when every input and output has a symbolic leading
 * dimension; otherwise each job runs alone.  Merged inputs are copied into
 * per-input staging buffers (grown, never shrunk); a single job runs on its
 * own tensors without a copy.  Outputs are split back by leading row into
 * tensors the job owns.  Jobs whose deadline passed while queued are
 * answered INF_ETIMEDOUT without running.
 *
 * INLINE RUNS.  With no queue delay (and a model for which batching does
 * not pay, below), a job that finds the queue empty and the session idle
 * runs at once on the caller's (HTTP) thread: no thread hand-off, which
 * halves the round trip of a lone request.  Under load the
 * session is busy, jobs queue, and the scheduler batches them as above.
 * An inline run blocks every other connection of that HTTP thread, so only
 * jobs expected to be short run inline: the model's mean compute per row so
 * far times the job's rows must stay within INLINE_MAX_US (long jobs go to
 * the scheduler thread, where they also batch).  When the main session is
 * busy, a short job may run inline on one of up to SRV_MAX_SPARE spare
 * sessions (opts.n_spare, one per extra HTTP thread, compiled on first use)
 * instead of waiting for the scheduler thread: on a busy server of cheap
 * models this saves two thread hand-offs (scheduler, then resume) per request
 * and lets every HTTP thread compute at once.  Queued jobs always go first.
 * With job->hold the caller keeps the session after the run and encodes its
 * answer straight from the session's output tensors (no per-request copy of
 * each output), then gives the session back (inf__serve_batcher_release);
 * the scheduler waits meanwhile, as for any inline run.
 *
 * DOES BATCHING PAY?  Inline runs never merge anything, so they are used
 * only for models where merging saves little: at start-up the batcher times
 * the engine at 1 row and at GAIN_ROWS rows (best of a few runs, on zeros)
 * and sets batch_pays when a row costs more than GAIN_MIN_US less in the
 * batch -- more than the hand-off a queued request pays (suspend, queue,
 * resume: ~5-10 us of server CPU measured).  When batching pays, every job
 * goes through the queue (as with a queue delay): an inline run would keep
 * its HTTP thread from queueing the requests that arrive meanwhile -- on
 * one core nothing else runs, and every job would find the session idle.
 * This is measured once, on the engine's own timings, so the choice does
 * not flip with the machine's load (the wall-clock mean used by
 * short_enough does).  Exported as infera_model_row_compute_us and
 * infera_model_batch_pays.
 *
 * OUTPUT STORE.  A queued job's outputs are copied into the caller's
 * out_store (a buffer its connection keeps from request to request, sized
 * by the HTTP thread with inf__serve_batcher_store_bytes before the job is
 * queued) as views, instead of into tensors allocated here: the scheduler
 * thread then allocates nothing per job.  Allocating on the scheduler thread
 * and freeing on the HTTP threads defeated malloc's per-thread caches --
 * ~6 % of the server's CPU on the batched path of a small MLP (perf).
 * Outputs that do not fit (strings, sizes known only at run time, a
 * model that returns other shapes than it declares) are allocated as before.
 *
 * INVARIANTS.  The session and staging buffers are used only by whoever
 * set busy (the scheduler, or one inline caller until it releases), under the lock; spare
 * session k only by whoever set spare_busy[k].  done()
 * is called exactly once per queued job, from the scheduler thread, after
 * the job's outputs are filled; inline jobs are complete on return.  free() stops
 * accepting, runs what is queued, then joins.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "serve/serve.h"

struct srv_batcher {
    const inf_model *model;
    inf_session *session;
    srv_batch_options opt;
    srv_model_metrics *metrics;
    int n_inputs, n_outputs;
    int batchable;
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t cond;
    srv_job *head, *tail;
    int depth;
    int64_t queued_rows;
    int stopping;
    int busy; /* the session is running (scheduler or an inline caller) */
    int batch_pays; /* merging saves more than the hand-off: no inline runs */
    inf_session *spare[SRV_MAX_SPARE]; /* inline-only sessions, made on first use */
    int spare_busy[SRV_MAX_SPARE];
    /* whoever holds busy */
    void **stage;          /* per input staging buffer */
    size_t *stage_cap;
    inf_tensor *stage_t;   /* per input view */
    const inf_tensor **run_in;
    srv_map_output *map_out; /* per output; labels NULL unless a sequence of maps (warm-up) */
};

int inf__serve_batcher_batchable(const srv_batcher *b) { return b->batchable; }

const srv_map_output *inf__serve_batcher_map_output(const srv_batcher *b, int i) {
    return i >= 0 && i < b->n_outputs && b->map_out[i].labels ? &b->map_out[i] : NULL;
}

int inf__serve_batcher_depth(srv_batcher *b) {
    pthread_mutex_lock(&b->lock);
    int d = b->depth;
    pthread_mutex_unlock(&b->lock);
    return d;
}

static int compatible(const srv_batcher *b, const srv_job *a, const srv_job *c) {
    for (int i = 0; i < b->n_inputs; i++) {
        const inf_tensor *x = a->inputs[i], *y = c->inputs[i];
        if (!x || !y) {
            if (x != y) return 0;
            continue;
        }
        if (x->dtype != y->dtype || x->ndim != y->ndim || x->ndim < 1) return 0;
        for (int d = 1; d < x->ndim; d++)
            if (x->dims[d] != y->dims[d]) return 0;
    }
    return 1;
}

static void finish(srv_job *j, uint64_t t_end_ns) {
    j->t_end_ns = t_end_ns;
    if (j->done) j->done(j, j->done_user);
}

static void fail_job(srv_job *j, inf_status st, const char *fmt, const char *arg) {
    j->err.status = st;
    snprintf(j->err.message, sizeof j->err.message, fmt, arg);
}

/* Elements in one row (along the leading dimension) of t: the product of its
 * trailing dimensions, also when t itself has 0 rows (an empty request may
 * be merged with others; numel / dims[0] would say 0). */
static int64_t row_elems(const inf_tensor *t) {
    int64_t n = 1;
    for (int d = 1; d < t->ndim; d++) n *= t->dims[d];
    return n;
}

/* Copies rows [r0, r0+rows) of out into a new tensor the job owns. */
static inf_status slice_output(const inf_tensor *out, int64_t r0, int64_t rows, int whole, inf_tensor **dst) {
    if (whole) return inf_tensor_clone(out, dst);
    int64_t dims[INF_MAX_DIMS];
    memcpy(dims, out->dims, sizeof dims);
    dims[0] = rows;
    inf_tensor *t = NULL;
    inf_status st = inf_tensor_new(out->dtype, out->ndim, dims, &t);
    if (st != INF_OK) return st;
    int64_t per_row = row_elems(out);
    if (out->dtype == INF_DTYPE_STRING) {
        char *const *src = (char *const *)out->data;
        for (int64_t k = 0; k < rows * per_row; k++) {
            const char *s = src[r0 * per_row + k];
            st = inf_tensor_set_string(t, k, s ? s : "", s ? strlen(s) : 0);
            if (st != INF_OK) {
                inf_tensor_free(t);
                return st;
            }
        }
    } else {
        size_t esz = inf_dtype_size(out->dtype);
        size_t nb = (size_t)(rows * per_row) * esz;
        if (nb) memcpy(t->data, (const char *)out->data + (size_t)(r0 * per_row) * esz, nb);
    }
    *dst = t;
    return INF_OK;
}

#define STORE_ALIGN 64
static size_t store_align(size_t n) { return (n + STORE_ALIGN - 1) & ~(size_t)(STORE_ALIGN - 1); }

size_t inf__serve_batcher_store_bytes(const srv_batcher *b, int64_t rows) {
    if (!b->batchable || b->n_outputs > SRV_INLINE_IO || rows < 1 || rows > b->opt.max_batch) return 0;
    size_t total = 0;
    for (int o = 0; o < b->n_outputs; o++) {
        const inf_value_info *vi = inf_model_output(b->model, o);
        size_t esz = inf_dtype_size(vi->dtype);
        if (vi->dtype == INF_DTYPE_STRING || !esz) return 0;
        int64_t per_row = 1;
        for (int d = 1; d < vi->ndim; d++) {
            if (vi->dims[d] < 0 || per_row > (INT64_C(1) << 30) / (vi->dims[d] + 1)) return 0;
            per_row *= vi->dims[d];
        }
        total += store_align((size_t)(rows * per_row) * esz);
    }
    return total;
}

/* Copies j's rows [r0, r0 + j->rows) of every output (each `rows` rows
 * long) into views in j->out_store (OUTPUT STORE).  0 when there is no
 * store or the outputs do not fit it; the caller then allocates. */
static int fill_store(const srv_batcher *b, srv_job *j, inf_tensor *const *out, int64_t r0, int64_t rows) {
    if (!j->out_store || !j->out_views || rows < 1) return 0;
    for (int pass = 0; pass < 2; pass++) {
        size_t off = 0;
        for (int o = 0; o < b->n_outputs; o++) {
            const inf_tensor *t = out[o];
            if (!t || t->kind != INF_KIND_TENSOR || t->dtype == INF_DTYPE_STRING || t->ndim < 1 || t->dims[0] != rows)
                return 0;
            size_t esz = inf_dtype_size(t->dtype);
            int64_t per_row = inf_tensor_numel(t) / rows;
            size_t nb = (size_t)(j->rows * per_row) * esz;
            if (pass == 1) {
                int64_t dims[INF_MAX_DIMS];
                memcpy(dims, t->dims, sizeof dims);
                dims[0] = j->rows;
                char *dst = (char *)j->out_store + off;
                if (nb) memcpy(dst, (const char *)t->data + (size_t)(r0 * per_row) * esz, nb);
                inf_tensor_init_view(&j->out_views[o], t->dtype, t->ndim, dims, dst);
                j->outputs[o] = &j->out_views[o];
            }
            off += store_align(nb);
            if (off > j->out_store_cap) return 0;
        }
    }
    j->outputs_borrowed = 2;
    return 1;
}

static void run_batch(srv_batcher *b, inf_session *session, srv_job *first, int n_jobs, int64_t rows) {
    uint64_t t0 = inf__serve_now_ns();
    const inf_tensor **in = first->inputs;
    inf_error err = {0};
    srv_job *j;
    int k;
    inf_status st = INF_OK;
    inf_tensor *const *out = NULL;
    uint64_t tc0 = t0, tc1 = t0;
    if (n_jobs > 1) {
        for (int i = 0; i < b->n_inputs; i++) {
            const inf_tensor *x = first->inputs[i];
            if (!x) {
                b->run_in[i] = NULL;
                continue;
            }
            size_t esz = inf_dtype_size(x->dtype);
            int64_t per_row = row_elems(x); /* from the trailing dims: the first job may have 0 rows */
            size_t need = (size_t)(rows * per_row) * esz;
            if (need > b->stage_cap[i]) {
                void *p = realloc(b->stage[i], need);
                if (!p) {
                    st = err.status = INF_ENOMEM;
                    snprintf(err.message, sizeof err.message, "out of memory forming a batch of %lld rows",
                             (long long)rows);
                    goto done;
                }
                b->stage[i] = p;
                b->stage_cap[i] = need;
            }
            size_t off = 0;
            for (j = first, k = 0; k < n_jobs; j = j->next, k++) {
                size_t nb = (size_t)(j->inputs[i]->dims[0] * per_row) * esz;
                if (nb) memcpy((char *)b->stage[i] + off, j->inputs[i]->data, nb); /* (0 rows: maybe no buffers) */
                off += nb;
            }
            int64_t dims[INF_MAX_DIMS];
            memcpy(dims, x->dims, sizeof dims);
            dims[0] = rows;
            inf_tensor_init_view(&b->stage_t[i], x->dtype, x->ndim, dims, b->stage[i]);
            b->run_in[i] = &b->stage_t[i];
        }
        in = b->run_in;
    }
    if (n_jobs > 1) tc0 = inf__serve_now_ns(); /* (one job: no staging, compute starts at t0) */
    st = inf_session_run(session, in, &out, &err);
    tc1 = inf__serve_now_ns();
    if (st == INF_OK && n_jobs > 1) {
        for (int o = 0; o < b->n_outputs; o++) {
            const inf_tensor *t = out[o];
            if (!t || t->kind != INF_KIND_TENSOR || t->ndim < 1 || t->dims[0] != rows) {
                st = err.status = INF_EINTERNAL;
                snprintf(err.message, sizeof err.message,
                         "output '%s' of a batch of %lld rows is not batched along its first dimension; "
                         "serve this model with --max-batch 1",
                         inf_model_output(b->model, o)->name, (long long)rows);
                break;
            }
        }
    }
    if (b->metrics) {
        srv_model_metrics *m = b->metrics;
        atomic_fetch_add_explicit(&m->exec_count, 1, memory_order_relaxed);
        atomic_fetch_add_explicit(&m->inference_count, (uint64_t)rows, memory_order_relaxed);
        inf__serve_hist_observe(&m->compute_hist, (double)(tc1 - tc0) / 1e3);
        inf__serve_hist_observe(&m->batch_hist, (double)rows);
    }
done:;
    int64_t r0 = 0;
    srv_job *next;
    for (j = first, k = 0; k < n_jobs; j = next, k++) {
        next = j->next;
        j->t_start_ns = t0;
        j->batch_rows = (int)rows;
        if (st != INF_OK || err.status != INF_OK) {
            j->err = err;
            if (j->err.status == INF_OK) j->err.status = st;
        } else {
            if (n_jobs == 1 && j->hold) { /* inline, session kept for the caller: no copy */
                for (int o = 0; o < b->n_outputs; o++) j->outputs[o] = out[o];
                j->outputs_borrowed = 1;
            }
            if (!j->outputs_borrowed) fill_store(b, j, out, r0, rows);
            for (int o = 0; !j->outputs_borrowed && o < b->n_outputs; o++) {
                inf_status s2 = slice_output(out[o], r0, j->rows, n_jobs == 1, &j->outputs[o]);
                if (s2 != INF_OK) {
                    j->err.status = s2;
                    snprintf(j->err.message, sizeof j->err.message, "cannot copy output '%s': %s",
                             inf_model_output(b->model, o)->name, inf_strerror(s2));
                    break;
                }
            }
        }
        r0 += j->rows;
        if (b->metrics) {
            atomic_fetch_add_explicit(&b->metrics->compute_us, (tc1 - tc0) / 1000, memory_order_relaxed);
        }
        finish(j, tc1);
    }
}

static void add_ns(struct timespec *ts, uint64_t ns) {
    ts->tv_sec += (time_t)(ns / 1000000000ull);
    ts->tv_nsec += (long)(ns % 1000000000ull);
    if (ts->tv_nsec >= 1000000000L) ts->tv_sec++, ts->tv_nsec -= 1000000000L;
}

static void *scheduler(void *arg) {
    srv_batcher *b = arg;
    pthread_mutex_lock(&b->lock);
    for (;;) {
        while ((!b->head && !b->stopping) || b->busy) pthread_cond_wait(&b->cond, &b->lock);
        if (!b->head) break;
        /* hold for more rows while the oldest job may still wait */
        if (b->batchable && b->opt.max_queue_delay_us > 0 && !b->stopping) {
            uint64_t deadline = b->head->t_enqueue_ns + (uint64_t)b->opt.max_queue_delay_us * 1000u;
            while (b->queued_rows < b->opt.max_batch && !b->stopping) {
                uint64_t now = inf__serve_now_ns();
                if (now >= deadline) break;
                struct timespec ts;
                clock_gettime(CLOCK_REALTIME, &ts);
                add_ns(&ts, deadline - now);
                pthread_cond_timedwait(&b->cond, &b->lock, &ts);
            }
        }
        /* take jobs in arrival order */
        srv_job *first = b->head, *last = first;
        int n = 1;
        int64_t rows = first->rows;
        if (b->batchable) {
            /* the largest prefix within max_batch; prefer a preferred size when one is reachable */
            int best_n = 1;
            int64_t best_rows = rows;
            int pref_n = 0;
            for (srv_job *j = first->next; j; j = j->next) {
                if (rows + j->rows > b->opt.max_batch || !compatible(b, first, j)) break;
                rows += j->rows;
                n++;
                best_n = n, best_rows = rows;
                for (int p = 0; p < b->opt.n_preferred; p++)
                    if (rows == b->opt.preferred[p]) pref_n = n;
            }
            if (pref_n && pref_n != best_n) {
                int is_pref_max = 0;
                for (int p = 0; p < b->opt.n_preferred; p++)
                    if (best_rows == b->opt.preferred[p]) is_pref_max = 1;
                if (!is_pref_max) {
                    best_n = pref_n;
                    best_rows = 0;
                    srv_job *j = first;
                    for (int k = 0; k < pref_n; k++, j = j->next) best_rows += j->rows;
                }
            }
            n = best_n;
            rows = best_rows;
            last = first;
            for (int k = 1; k < n; k++) last = last->next;
        }
        b->head = last->next;
        if (!b->head) b->tail = NULL;
        last->next = NULL;
        b->depth -= n;
        b->queued_rows -= rows;
        if (b->metrics) atomic_fetch_sub_explicit(&b->metrics->queue_depth, n, memory_order_relaxed);
        b->busy = 1;
        pthread_mutex_unlock(&b->lock);

        /* expired jobs are answered without running */
        uint64_t now = inf__serve_now_ns();
        srv_job *keep = NULL, **kt = &keep, *j = first, *next;
        int n_keep = 0;
        int64_t keep_rows = 0;
        for (; j; j = next) {
            next = j->next;
            j->next = NULL;
            if (b->metrics) {
                uint64_t q_us = (now - j->t_enqueue_ns) / 1000;
                atomic_fetch_add_explicit(&b->metrics->queue_us, q_us, memory_order_relaxed);
                inf__serve_hist_observe(&b->metrics->queue_hist, (double)q_us);
            }
            if (j->deadline_ns && now > j->deadline_ns) {
                char waited[64];
                snprintf(waited, sizeof waited, "%llu us (timeout %llu us)",
                         (unsigned long long)((now - j->t_enqueue_ns) / 1000),
                         (unsigned long long)j->timeout_us);
                fail_job(j, INF_ETIMEDOUT, "request timed out after waiting %s in the queue; not run", waited);
                j->t_start_ns = now;
                finish(j, now);
                continue;
            }
            *kt = j;
            kt = &j->next;
            n_keep++;
            keep_rows += j->rows;
        }
        if (keep) run_batch(b, b->session, keep, n_keep, keep_rows);
        pthread_mutex_lock(&b->lock);
        b->busy = 0;
    }
    pthread_mutex_unlock(&b->lock);
    return NULL;
}

#ifndef INLINE_MAX_US /* (overridable for profiling under valgrind, where every run looks long) */
#define INLINE_MAX_US 200.0
#endif

/* 1 when job is expected to compute within INLINE_MAX_US (or there is too
 * little history to tell: the first rows of a model run inline). */
static int short_enough(const srv_batcher *b, const srv_job *job) {
    const srv_model_metrics *m = b->metrics;
    if (!m) return 1;
    uint64_t rows = atomic_load_explicit(&m->inference_count, memory_order_relaxed);
    uint64_t us = atomic_load_explicit(&m->compute_hist.sum, memory_order_relaxed);
    if (rows < 8) return 1;
    return (double)us / (double)rows * (double)job->rows <= INLINE_MAX_US;
}

/* Runs job alone on session s on the calling (HTTP) thread: no queue time;
 * the caller answers, so the completion callback is not called. */
static void run_inline(srv_batcher *b, inf_session *s, srv_job *job) {
    job->next = NULL;
    job->err.status = INF_OK;
    job->err.message[0] = 0;
    srv_job_done_fn done = job->done;
    job->done = NULL;
    if (b->metrics) {
        inf__serve_hist_observe(&b->metrics->queue_hist, 0);
        atomic_fetch_add_explicit(&b->metrics->inline_exec_count, 1, memory_order_relaxed);
    }
    run_batch(b, s, job, 1, job->rows);
    job->t_enqueue_ns = job->t_start_ns; /* never queued */
    job->done = done;
}

/* Runs job alone on spare session k (taken by the caller). */
static int run_spare(srv_batcher *b, int k, srv_job *job) {
    if (!b->spare[k]) { /* first use: compile it here, off the lock */
        inf_session_options so;
        inf_session_options_init(&so);
        so.n_threads = b->opt.n_threads;
        so.max_batch = b->opt.max_batch;
        so.max_run_ms = b->opt.max_run_ms;
        so.precision = b->opt.precision;
        inf_error e = {0};
        if (inf_session_new(b->model, &so, &b->spare[k], &e) != INF_OK) b->spare[k] = NULL;
    }
    if (!b->spare[k]) return 0;
    run_inline(b, b->spare[k], job);
    return 1;
}

int inf__serve_batcher_try_inline(srv_batcher *b, srv_job *job) {
    job->held = 0;
    job->outputs_borrowed = 0;
    if (b->opt.max_queue_delay_us > 0 || b->batch_pays || !short_enough(b, job)) return 0;
    pthread_mutex_lock(&b->lock);
    if (b->head || b->stopping) {
        pthread_mutex_unlock(&b->lock);
        return 0;
    }
    if (b->busy) { /* the main session runs: a spare one, when configured and free */
        int k = 0;
        while (k < b->opt.n_spare && k < SRV_MAX_SPARE && b->spare_busy[k]) k++;
        if (k >= b->opt.n_spare || k >= SRV_MAX_SPARE) {
            pthread_mutex_unlock(&b->lock);
            return 0;
        }
        b->spare_busy[k] = 1;
        pthread_mutex_unlock(&b->lock);
        int ran = run_spare(b, k, job);
        job->held = 2 + k;
        if (!ran || !job->hold) inf__serve_batcher_release(b, job);
        return ran;
    }
    b->busy = 1;
    pthread_mutex_unlock(&b->lock);
    run_inline(b, b->session, job);
    job->held = 1;
    if (!job->hold) inf__serve_batcher_release(b, job);
    return 1;
}

void inf__serve_batcher_release(srv_batcher *b, srv_job *job) {
    if (!job->held) return;
    if (job->outputs_borrowed)
        for (int o = 0; o < b->n_outputs; o++) job->outputs[o] = NULL;
    job->outputs_borrowed = 0;
    pthread_mutex_lock(&b->lock);
    if (job->held == 1) {
        b->busy = 0;
        if (b->head) pthread_cond_signal(&b->cond);
    } else {
        b->spare_busy[job->held - 2] = 0;
    }
    pthread_mutex_unlock(&b->lock);
    job->held = 0;
}

inf_status inf__serve_batcher_submit(srv_batcher *b, srv_job *job) {
    job->next = NULL;
    job->err.status = INF_OK;
    job->err.message[0] = 0;
    job->t_enqueue_ns = inf__serve_now_ns();
    pthread_mutex_lock(&b->lock);
    if (b->stopping) {
        pthread_mutex_unlock(&b->lock);
        return INF_EINVAL;
    }
    if (b->depth >= b->opt.max_queue) {
        pthread_mutex_unlock(&b->lock);
        return INF_EBUSY;
    }
    int was_empty = !b->head;
    if (b->tail)
        b->tail->next = job;
    else
        b->head = job;
    b->tail = job;
    b->depth++;
    b->queued_rows += job->rows;
    if (b->metrics) atomic_fetch_add_explicit(&b->metrics->queue_depth, 1, memory_order_relaxed);
    /* the scheduler waits for a first job, or (queue delay) for a full batch
     * or its deadline; other arrivals need not wake it */
    if (was_empty || b->queued_rows >= b->opt.max_batch) pthread_cond_signal(&b->cond);
    pthread_mutex_unlock(&b->lock);
    return INF_OK;
}

/* Notes the outputs of a warm-up run that are sequences of maps (their
 * labels for the model metadata).  Out of memory only loses the note. */
static void note_map_outputs(srv_batcher *b, inf_tensor *const *out) {
    for (int o = 0; o < b->n_outputs; o++) {
        srv_map_seq ms;
        if (inf__serve_map_seq(out[o], inf_model_output(b->model, o)->name, &ms, NULL) != 1) continue;
        srv_buf labels = {0};
        inf__serve_map_seq_labels(&labels, &ms);
        if (labels.oom) {
            inf__serve_buf_free(&labels);
            continue;
        }
        free(b->map_out[o].labels);
        b->map_out[o].labels = inf__serve_buf_take(&labels, NULL);
        b->map_out[o].dtype = ms.dtype;
        b->map_out[o].n_classes = ms.n_classes;
    }
}

/* Runs the session reps times on zero inputs of the declared shapes with
 * `rows` in symbolic dimensions; *best_us (may be NULL) gets the fastest.
 * With note, the last run's sequence-of-map outputs are noted. */
static inf_status warm(srv_batcher *b, int64_t rows, int reps, double *best_us, int note, inf_error *err) {
    inf_tensor *vals[256] = {0};
    const inf_tensor *in[256] = {0};
    inf_status st = INF_OK;
    for (int i = 0; i < b->n_inputs && i < 256; i++) {
        const inf_value_info *vi = inf_model_input(b->model, i);
        if (vi->kind != INF_KIND_TENSOR || vi->ndim < 0 || vi->dtype == INF_DTYPE_UNDEFINED) {
            st = INF_EUNSUPPORTED; /* cannot invent this input: skip the warm-up */
            goto out;
        }
        int64_t dims[INF_MAX_DIMS];
        for (int d = 0; d < vi->ndim; d++) dims[d] = vi->dims[d] >= 0 ? vi->dims[d] : (d == 0 ? rows : 1);
        st = inf_tensor_new(vi->dtype, vi->ndim, dims, &vals[i]);
        if (st != INF_OK) goto out;
        if (vi->dtype == INF_DTYPE_STRING)
            for (int64_t k = 0; k < inf_tensor_numel(vals[i]); k++) inf_tensor_set_string(vals[i], k, "", 0);
        in[i] = vals[i];
    }
    inf_tensor *const *out = NULL;
    for (int r = 0; r < reps && st == INF_OK; r++) {
        uint64_t t0 = inf__serve_now_ns();
        st = inf_session_run(b->session, in, &out, err);
        double us = (double)(inf__serve_now_ns() - t0) / 1e3;
        if (best_us && (r == 0 || us < *best_us)) *best_us = us;
    }
    if (st == INF_OK && note && out) note_map_outputs(b, out);
out:
    for (int i = 0; i < 256; i++) inf_tensor_free(vals[i]);
    return st;
}

#define GAIN_ROWS 32
#define GAIN_MIN_US 15.0
#define GAIN_MAX_ROW_US 1000.0 /* slower rows never run inline: no need to time a batch */

/* Sets batch_pays from the engine's cost per row at 1 and GAIN_ROWS rows
 * (see DOES BATCHING PAY) and exports both costs.  first_us: the first
 * (warm-up) run at 1 row.  A model slower than GAIN_MAX_ROW_US a row never
 * runs inline: batch_pays without timing a batch. */
static void measure_gain(srv_batcher *b, double first_us) {
    int64_t n = b->opt.max_batch < GAIN_ROWS ? b->opt.max_batch : GAIN_ROWS;
    double t1 = 0, tn = 0;
    inf_error e = {0};
    if (warm(b, 1, first_us > GAIN_MAX_ROW_US ? 1 : 5, &t1, 0, &e) != INF_OK) return;
    if (t1 > GAIN_MAX_ROW_US) {
        b->batch_pays = 1;
    } else {
        if (warm(b, n, 3, &tn, 0, &e) != INF_OK) return;
        b->batch_pays = t1 - tn / (double)n > GAIN_MIN_US;
        if (b->metrics) {
            b->metrics->row_us_1 = t1;
            b->metrics->row_us_batch = tn / (double)n;
            b->metrics->gain_rows = (int)n;
        }
    }
    if (b->metrics) b->metrics->batch_pays = b->batch_pays;
}

static void free_map_outputs(srv_batcher *b) {
    for (int o = 0; b->map_out && o < b->n_outputs; o++) free(b->map_out[o].labels);
    free(b->map_out);
}

inf_status inf__serve_batcher_new(const inf_model *model, const srv_batch_options *opts, srv_model_metrics *metrics,
                                  srv_batcher **out, double *warmup_seconds, inf_error *err) {
    *out = NULL;
    srv_batcher *b = calloc(1, sizeof *b);
    if (!b) goto oom;
    b->model = model;
    b->opt = *opts;
    if (b->opt.max_batch < 1) b->opt.max_batch = 1;
    if (b->opt.max_queue < 1) b->opt.max_queue = 1;
    b->metrics = metrics;
    b->n_inputs = inf_model_n_inputs(model);
    b->n_outputs = inf_model_n_outputs(model);
    b->batchable = b->opt.max_batch > 1 && b->n_inputs > 0;
    for (int i = 0; i < b->n_inputs; i++) {
        const inf_value_info *vi = inf_model_input(model, i);
        if (vi->kind != INF_KIND_TENSOR || vi->ndim < 1 || vi->dims[0] >= 0) b->batchable = 0;
    }
    for (int o = 0; o < b->n_outputs; o++) {
        const inf_value_info *vi = inf_model_output(model, o);
        if (vi->kind != INF_KIND_TENSOR || vi->ndim < 1 || vi->dims[0] >= 0) b->batchable = 0;
    }
    b->stage = calloc((size_t)b->n_inputs + 1, sizeof *b->stage);
    b->stage_cap = calloc((size_t)b->n_inputs + 1, sizeof *b->stage_cap);
    b->stage_t = calloc((size_t)b->n_inputs + 1, sizeof *b->stage_t);
    b->run_in = calloc((size_t)b->n_inputs + 1, sizeof *b->run_in);
    b->map_out = calloc((size_t)b->n_outputs + 1, sizeof *b->map_out);
    if (!b->stage || !b->stage_cap || !b->stage_t || !b->run_in || !b->map_out) goto oom;
    inf_session_options so;
    inf_session_options_init(&so);
    so.n_threads = opts->n_threads;
    so.max_batch = b->opt.max_batch;
    so.max_run_ms = b->opt.max_run_ms;
    so.precision = b->opt.precision;
    inf_status st = inf_session_new(model, &so, &b->session, err);
    if (st != INF_OK) goto fail;
    /* warm-up: batch 1 and the largest batch, so the first requests find memory planned */
    uint64_t t0 = inf__serve_now_ns();
    inf_error werr = {0};
    double first_us = 0;
    st = warm(b, 1, 1, &first_us, 1, &werr);
    if (st == INF_OK && b->batchable) st = warm(b, b->opt.max_batch, 1, NULL, 0, &werr);
    if (st == INF_OK && b->batchable) measure_gain(b, first_us);
    if (st != INF_OK && st != INF_EUNSUPPORTED) {
        /* a model that cannot run on zeros still serves; the warm-up is only skipped */
        fprintf(stderr, "infera serve: warm-up skipped: %s\n", werr.message);
    }
    if (warmup_seconds) *warmup_seconds = (double)(inf__serve_now_ns() - t0) / 1e9;
    pthread_mutex_init(&b->lock, NULL);
    pthread_cond_init(&b->cond, NULL);
    if (pthread_create(&b->thread, NULL, scheduler, b)) {
        pthread_mutex_destroy(&b->lock);
        pthread_cond_destroy(&b->cond);
        inf_error_set(err, INF_ENOMEM, "cannot start the batch scheduler thread");
        st = INF_ENOMEM;
        goto fail;
    }
    *out = b;
    return INF_OK;
oom:
    st = INF_ENOMEM;
    inf_error_set(err, INF_ENOMEM, "out of memory creating the batcher");
fail:
    if (b) {
        inf_session_free(b->session);
        free(b->stage);
        free(b->stage_cap);
        free(b->stage_t);
        free(b->run_in);
        free_map_outputs(b);
        free(b);
    }
    return st;
}

void inf__serve_batcher_free(srv_batcher *b) {
    if (!b) return;
    pthread_mutex_lock(&b->lock);
    b->stopping = 1;
    pthread_cond_broadcast(&b->cond);
    pthread_mutex_unlock(&b->lock);
    pthread_join(b->thread, NULL);
    pthread_mutex_destroy(&b->lock);
    pthread_cond_destroy(&b->cond);
    inf_session_free(b->session);
    for (int k = 0; k < SRV_MAX_SPARE; k++) inf_session_free(b->spare[k]);
    for (int i = 0; i < b->n_inputs; i++) free(b->stage[i]);
    free(b->stage);
    free(b->stage_cap);
    free(b->stage_t);
    free(b->run_in);
    free_map_outputs(b);
    free(b);
}
