/*
 * threadpool.c -- a persistent pool of worker threads for kernels.
 *
 * DESIGN: n_threads - 1 workers plus the calling thread.  A job is a range
 * [0, n) cut into chunks; every thread (the caller included) takes chunks from
 * an atomic counter until none are left, so uneven chunks balance themselves.
 * Workers spin briefly on the job generation before sleeping on a condition
 * variable: back-to-back kernels of one inference then start without a
 * futex wake-up, and an idle pool costs no CPU.  One job at a time: the pool
 * belongs to one session, which runs on one thread at a time.  The pool
 * also owns a workspace the current caller may use for data its tasks share
 * (inf__pool_workspace: the packed GEMM operand), grown on demand and freed
 * with the pool.
 */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>

#include "core/core.h"

#define SPIN_ITERS 20000

struct inf__pool {
    int n_threads;
    pthread_t *threads;
    pthread_mutex_t mu;
    pthread_cond_t wake;
    _Atomic uint64_t generation; /* bumped once per job */
    _Atomic int stop;
    /* the current job */
    inf__range_fn fn;
    void *arg;
    int64_t n, chunk;
    _Atomic int64_t next;    /* next chunk start */
    _Atomic int n_busy;      /* workers still in the current job */
    /* the caller's workspace (inf__pool_workspace) */
    void *ws;
    size_t ws_size;
};

static void run_chunks(inf__pool *p) {
    for (;;) {
        int64_t begin = atomic_fetch_add(&p->next, p->chunk);
        if (begin >= p->n) break;
        int64_t end = begin + p->chunk < p->n ? begin + p->chunk : p->n;
        p->fn(p->arg, begin, end);
    }
}

static void *worker_main(void *arg) {
    inf__pool *p = arg;
    uint64_t seen = 0;
    for (;;) {
        uint64_t gen;
        int spins = 0;
        while ((gen = atomic_load(&p->generation)) == seen && !atomic_load(&p->stop)) {
            if (++spins < SPIN_ITERS) {
                sched_yield();
                continue;
            }
            pthread_mutex_lock(&p->mu);
            while (atomic_load(&p->generation) == seen && !atomic_load(&p->stop))
                pthread_cond_wait(&p->wake, &p->mu);
            pthread_mutex_unlock(&p->mu);
        }
        if (atomic_load(&p->stop)) return NULL;
        seen = gen;
        run_chunks(p);
        atomic_fetch_sub(&p->n_busy, 1);
    }
}

inf_status inf__pool_new(int n_threads, inf__pool **out) {
    *out = NULL;
    if (n_threads < 1) n_threads = 1;
    inf__pool *p = inf__calloc(1, sizeof *p);
    if (!p) return INF_ENOMEM;
    p->n_threads = 1;
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->wake, NULL);
    if (n_threads > 1) {
        p->threads = inf__calloc((size_t)n_threads - 1, sizeof *p->threads);
        if (!p->threads) {
            inf__pool_free(p);
            return INF_ENOMEM;
        }
        for (int i = 0; i < n_threads - 1; i++) {
            if (pthread_create(&p->threads[i], NULL, worker_main, p) != 0) {
                inf__pool_free(p);
                return INF_ENOMEM;
            }
            p->n_threads++;
        }
    }
    *out = p;
    return INF_OK;
}

void inf__pool_free(inf__pool *p) {
    if (!p) return;
    pthread_mutex_lock(&p->mu);
    atomic_store(&p->stop, 1);
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->mu);
    for (int i = 0; i < p->n_threads - 1; i++) pthread_join(p->threads[i], NULL);
    pthread_mutex_destroy(&p->mu);
    pthread_cond_destroy(&p->wake);
    inf__free(p->threads);
    inf__aligned_free(p->ws);
    inf__free(p);
}

void *inf__pool_workspace(inf__pool *p, size_t bytes) {
    if (!p) return NULL;
    if (bytes > p->ws_size) {
        size_t want = bytes + bytes / 4; /* a little headroom for the next, larger shape */
        void *ws = inf__aligned_alloc(want);
        if (!ws) return NULL;
        inf__aligned_free(p->ws);
        p->ws = ws;
        p->ws_size = want;
    }
    return p->ws;
}

int inf__pool_size(const inf__pool *p) { return p ? p->n_threads : 1; }

void inf__pool_range(inf__pool *p, int64_t n, int64_t min_chunk, inf__range_fn fn, void *arg) {
    if (n <= 0) return;
    if (min_chunk < 1) min_chunk = 1;
    int threads = inf__pool_size(p);
    if (!p || threads == 1 || n <= min_chunk) {
        fn(arg, 0, n);
        return;
    }
    /* Four chunks per thread balance uneven work without much overhead. */
    int64_t chunk = (n + threads * 4 - 1) / (threads * 4);
    if (chunk < min_chunk) chunk = min_chunk;
    p->fn = fn;
    p->arg = arg;
    p->n = n;
    p->chunk = chunk;
    atomic_store(&p->next, 0);
    atomic_store(&p->n_busy, threads - 1);
    pthread_mutex_lock(&p->mu);
    atomic_fetch_add(&p->generation, 1);
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->mu);
    run_chunks(p);
    while (atomic_load(&p->n_busy) > 0) sched_yield();
}
