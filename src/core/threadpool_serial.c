/*
 * threadpool_serial.c -- the thread pool of a build without threads
 * (-DINFERA_THREADS=OFF, the edge runtime): the same interface as
 * threadpool.c (core.h), every job run on the calling thread, no pthreads
 * linked.  Only compiled into that build (INF_NO_THREADS).
 */
#ifdef INF_NO_THREADS
#include "core/core.h"

struct inf__pool {
    void *ws;       /* the caller's workspace (inf__pool_workspace) */
    size_t ws_size;
};

inf_status inf__pool_new(int n_threads, inf__pool **out) {
    (void)n_threads;
    *out = inf__calloc(1, sizeof **out);
    return *out ? INF_OK : INF_ENOMEM;
}

void inf__pool_free(inf__pool *p) {
    if (!p) return;
    inf__aligned_free(p->ws);
    inf__free(p);
}

int inf__pool_size(const inf__pool *p) {
    (void)p;
    return 1;
}

void inf__pool_range(inf__pool *p, int64_t n, int64_t min_chunk, inf__range_fn fn, void *arg) {
    (void)p, (void)min_chunk;
    if (n > 0) fn(arg, 0, n);
}

void *inf__pool_workspace(inf__pool *p, size_t bytes) {
    if (!p) return NULL;
    if (bytes > p->ws_size) {
        size_t want = bytes + bytes / 4;
        void *ws = inf__aligned_alloc(want);
        if (!ws) return NULL;
        inf__aligned_free(p->ws);
        p->ws = ws;
        p->ws_size = want;
    }
    return p->ws;
}

void *inf__pool_slot_workspace(inf__pool *p, int slot, size_t bytes) {
    (void)p, (void)slot, (void)bytes;
    return NULL; /* one thread: the caller's own scratch */
}

unsigned inf__pool_moves(const inf__pool *p) {
    (void)p;
    return 0;
}

bool inf__thread_move_off_cpu(int cpu, int n_threads) {
    (void)cpu, (void)n_threads;
    return false;
}
#else
typedef int inf__threadpool_serial_unused; /* ISO C: a translation unit is not empty */
#endif
