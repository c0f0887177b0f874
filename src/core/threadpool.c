/*
 * threadpool.c -- a persistent pool of worker threads for kernels.
 *
 * DESIGN: n_threads - 1 workers plus the calling thread.  A job is a range
 * [0, n) cut into chunks; every thread (the caller included) claims chunks
 * until none are left, so uneven chunks balance themselves.  (Claiming a
 * share of what is left at a time -- guided self-scheduling, fewer claims
 * -- measured no faster on the bench models at 2 threads, session 17, and
 * balances uneven chunks less well: one chunk a claim stays.)
 *
 * The caller never waits long for a worker that has not started: a claim
 * is a compare-and-swap on one word holding (job generation, chunks left),
 * so a worker that wakes late -- its vCPU was busy with another process --
 * finds the job's chunks taken (or a newer generation) and claims nothing.
 * The caller waits for the chunks a worker claimed (counted in `done`), then
 * a little longer (ACK_YIELDS) for each worker to have seen the job
 * (`seen`): on an idle machine that keeps the threads in step (without it,
 * measured p99 at batch 1 doubled), while on a loaded one a descheduled
 * worker costs the caller the remaining chunks instead of a scheduler time
 * slice (cnn b1 at 2 threads beside two CPU hogs: p50 47 ms -> 1.8 ms).
 *
 * Workers spin briefly on the generation (pause, then sched_yield) before
 * sleeping on a condition variable: back-to-back kernels of one inference
 * start without a futex wake-up, and an idle pool costs no CPU.  One job at a
 * time: the pool belongs to one session, which runs on one thread at a time.
 *
 * A worker that finds itself on the caller's CPU moves off it (Linux): it
 * sets its affinity to the CPUs it may use minus that one, which migrates it
 * at once, and puts the mask back (a nudge, not a pin).  There it could only
 * run when the caller yields, and it does not get away by itself: a worker
 * created while the other CPUs were busy starts there, and the kernel left
 * the pair together for hundreds of milliseconds (measured: the first 100-200
 * runs of the bench CNN at batch 1, 2 threads, at 1-thread speed, ~2 ms
 * instead of ~1; probably because the two hand the CPU to each other by
 * sched_yield every few microseconds, so both always look cache-hot to the
 * load balancer).  A sleeping worker needs none of this: its
 * wake-up is placed on an idle CPU.  Nudges are at least MOVE_INTERVAL apart,
 * so a scheduler that keeps putting the worker back costs little.
 *
 * The pool also owns a workspace the current caller may use for data its
 * tasks share (inf__pool_workspace: the packed GEMM operand), grown on demand
 * and freed with the pool.
 */
#ifndef INF_NO_THREADS /* -DINFERA_THREADS=OFF builds threadpool_serial.c instead */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <string.h>

#include "core/core.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define cpu_relax() _mm_pause()
#elif defined(__aarch64__)
#define cpu_relax() __asm__ volatile("yield" ::: "memory")
#else
#define cpu_relax() ((void)0)
#endif

#define PAUSE_ITERS 256   /* pause-spins before yielding the CPU */
#define ACK_YIELDS 64     /* how long the caller waits for a worker to see a job */
#define YIELD_ITERS 20000 /* sched_yield spins before sleeping */
#define MOVE_INTERVAL 2e-3 /* seconds between two moves of a worker off the caller's CPU */

/* The claim word: generation in the high 32 bits, then the chunks not yet
 * claimed as [front, back) in two 16-bit halves.  The caller claims from the
 * front, workers from the back: with two threads each keeps the same part of
 * every kernel's work from run to run (the same output rows, the same
 * Winograd slot and its scratch), so the lines it writes are already in its
 * own cache -- with a random split half of them came from the other core,
 * which on a VM whose vCPUs share no L3 costs ~460 ns a round trip (bench
 * CNN, batch 1, 2 threads).  A late or descheduled worker still loses its
 * part to the caller.  Once front == back no claim of that generation can
 * succeed, whatever a late reader saw. */
#define CLAIM(gen, front, back)                                                                                        \
    (((uint64_t)(uint32_t)(gen) << 32) | ((uint64_t)(uint16_t)(front) << 16) | (uint16_t)(back))
#define CLAIM_GEN(w) ((uint32_t)((w) >> 32))
#define CLAIM_FRONT(w) ((uint32_t)(uint16_t)((w) >> 16))
#define CLAIM_BACK(w) ((uint32_t)(uint16_t)(w))
#define MAX_CHUNKS 65535u

/* What a worker is started with.  The array lives in the pool, not in
 * the thread: a worker that frees its own argument when it first runs
 * would free memory in the middle of a later run when the OS starts it
 * late (a warm run must not touch the allocator). */
typedef struct worker_arg {
    inf__pool *p;
    int index, n_threads;
} worker_arg;

/* A slot's persistent workspace (inf__pool_slot_workspace), on cache lines
 * of its own: each is read and grown only by the thread running its slot. */
typedef struct slot_ws {
    _Alignas(64) void *data;
    size_t size;
} slot_ws;

/* A worker's acknowledgement, on a cache line of its own. */
typedef struct seen_slot {
    _Alignas(64) _Atomic uint32_t gen; /* the last generation the worker finished looking at */
} seen_slot;

/* The fields every thread touches during a job sit on cache lines by what
 * writes them (see DESIGN): the generation workers spin on, the job the
 * caller writes before bumping it, the claim word, the done counter.  On
 * one line, each of the caller's stores while publishing and each of the
 * other thread's claims or done increments took the line from the thread
 * spinning on a neighbour -- a cross-core round trip each (~100 ns between
 * vCPUs sharing an L3, ~450 ns otherwise). */
struct inf__pool {
    /* set at creation */
    int n_threads;
    pthread_t *threads;
    worker_arg *args; /* per worker, freed with the pool */
    seen_slot *seen;  /* per worker */
    slot_ws *slots;   /* per thread: inf__pool_slot_workspace */
    pthread_mutex_t mu;
    pthread_cond_t wake;
    /* the caller's workspace (inf__pool_workspace) */
    void *ws;
    size_t ws_size;
    _Atomic uint32_t n_moves; /* workers moved off the caller's CPU (inf__pool_moves) */
    /* what idle workers spin on */
    _Alignas(64) _Atomic uint32_t generation; /* bumped once per job, published last */
    _Atomic int stop;
    _Atomic int n_sleeping; /* workers blocked on `wake` */
    /* the current job, written before `generation` is bumped; atomics
     * because a late worker may read them while the next job writes them
     * (its claim then fails, so what it read is never used) */
    _Alignas(64) _Atomic(inf__range_fn) fn;
    _Atomic(void *) arg;
    _Atomic int64_t n, chunk;
    _Atomic int caller_cpu; /* the CPU the caller published the current job from (-1: unknown) */
    _Alignas(64) _Atomic uint64_t claim; /* CLAIM(generation, front, back): the chunks not yet claimed */
    _Alignas(64) _Atomic uint32_t done;  /* chunks finished in the current job */
};

/* One step of a busy wait: a pause at first, then giving the CPU away. */
static inline void spin_step(int spins) {
    if (spins < PAUSE_ITERS)
        cpu_relax();
    else
        sched_yield();
}

/* Claims a chunk of job `gen`, the first unclaimed one (caller) or the
 * last (workers, from_back); false once the job has no chunk left or a
 * newer job replaced it. */
static bool claim_chunk(inf__pool *p, uint32_t gen, bool from_back, uint32_t *chunk) {
    uint64_t w = atomic_load(&p->claim);
    for (;;) {
        uint32_t front = CLAIM_FRONT(w), back = CLAIM_BACK(w);
        if (CLAIM_GEN(w) != gen || front >= back) return false;
        uint64_t next = from_back ? CLAIM(gen, front, back - 1) : CLAIM(gen, front + 1, back);
        if (atomic_compare_exchange_weak(&p->claim, &w, next)) {
            *chunk = from_back ? back - 1 : front;
            return true;
        }
    }
}

/* Runs chunks of job `gen` until none is left. */
static void run_chunks(inf__pool *p, uint32_t gen, bool from_back) {
    inf__range_fn fn = atomic_load(&p->fn);
    void *arg = atomic_load(&p->arg);
    int64_t n = atomic_load(&p->n), size = atomic_load(&p->chunk);
    uint32_t c;
    while (claim_chunk(p, gen, from_back, &c)) {
        /* A successful claim proves fn..chunk (read before it) were job
         * gen's: the next job is written only after all of gen's chunks were
         * claimed and done. */
        int64_t begin = (int64_t)c * size;
        int64_t end = begin + size < n ? begin + size : n;
        fn(arg, begin, end);
        atomic_fetch_add(&p->done, 1);
    }
}

/* Waits until the generation differs from `seen` (or the pool stops):
 * spins, then yields, then sleeps on the condition variable. */
static uint32_t wait_for_job(inf__pool *p, uint32_t seen) {
    for (int spins = 0;; spins++) {
        uint32_t gen = atomic_load(&p->generation);
        if (gen != seen || atomic_load(&p->stop)) return gen;
        if (spins < PAUSE_ITERS + YIELD_ITERS) {
            spin_step(spins);
        } else {
            pthread_mutex_lock(&p->mu);
            atomic_fetch_add(&p->n_sleeping, 1);
            while (atomic_load(&p->generation) == seen && !atomic_load(&p->stop))
                pthread_cond_wait(&p->wake, &p->mu);
            atomic_fetch_sub(&p->n_sleeping, 1);
            pthread_mutex_unlock(&p->mu);
            spins = 0;
        }
    }
}

/* A worker's state for moving off the caller's CPU. */
typedef struct mover {
    int n_threads;    /* the pool's threads, caller included */
    bool can_move;    /* false once a move proved impossible or pointless */
    double last_move; /* inf__now_seconds() of the last move */
} mover;

/* The CPU the calling thread runs on, or -1. */
static int current_cpu(void) {
#ifdef __linux__
    return sched_getcpu();
#else
    return -1;
#endif
}

/* Moves the calling worker off `cpu`: affinity to the allowed CPUs minus
 * `cpu` (the kernel migrates the thread before returning), then the allowed
 * CPUs again (the thread stays where it is).  False if it cannot, or if
 * fewer CPUs than the pool's threads are allowed (then some must share one,
 * and moving would only shuffle them). */
bool inf__thread_move_off_cpu(int cpu, int n_threads) {
#ifdef __linux__
    cpu_set_t allowed, away;
    pthread_t self = pthread_self();
    if (cpu >= CPU_SETSIZE || pthread_getaffinity_np(self, sizeof allowed, &allowed) != 0) return false;
    if (CPU_COUNT(&allowed) < n_threads) return false;
    memcpy(&away, &allowed, sizeof away);
    CPU_CLR(cpu, &away);
    if (CPU_COUNT(&away) == 0 || pthread_setaffinity_np(self, sizeof away, &away) != 0) return false;
    pthread_setaffinity_np(self, sizeof allowed, &allowed);
    return true;
#else
    (void)cpu, (void)n_threads;
    return false;
#endif
}

/* After a job: a worker on the CPU its caller publishes from moves off it
 * (see DESIGN), at most once per MOVE_INTERVAL. */
static void leave_callers_cpu(inf__pool *p, mover *m) {
    int caller = atomic_load_explicit(&p->caller_cpu, memory_order_relaxed);
    if (!m->can_move || caller < 0 || current_cpu() != caller) return;
    double now = inf__now_seconds();
    if (now - m->last_move < MOVE_INTERVAL) return;
    m->last_move = now;
    if (inf__thread_move_off_cpu(caller, m->n_threads))
        atomic_fetch_add_explicit(&p->n_moves, 1, memory_order_relaxed);
    else
        m->can_move = false;
}

static void *worker_main(void *arg) {
    inf__pool *p = ((worker_arg *)arg)->p;
    int index = ((worker_arg *)arg)->index;
    mover m = {((worker_arg *)arg)->n_threads, true, -1.0};
    uint32_t seen = atomic_load(&p->generation);
    for (;;) {
        seen = wait_for_job(p, seen);
        if (atomic_load(&p->stop)) return NULL;
        run_chunks(p, seen, true);
        atomic_store(&p->seen[index].gen, seen);
        leave_callers_cpu(p, &m); /* after acknowledging: the caller does not wait for it */
    }
}

inf_status inf__pool_new(int n_threads, inf__pool **out) {
    *out = NULL;
    if (n_threads < 1) n_threads = 1;
    inf__pool *p = inf__aligned_alloc(sizeof *p); /* 64-aligned: the cache lines of the struct */
    if (!p) return INF_ENOMEM;
    memset(p, 0, sizeof *p);
    p->n_threads = 1;
    atomic_store(&p->caller_cpu, -1);
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->wake, NULL);
    if (n_threads > 1) {
        p->threads = inf__calloc((size_t)n_threads - 1, sizeof *p->threads);
        p->seen = inf__aligned_alloc(((size_t)n_threads - 1) * sizeof *p->seen);
        p->args = inf__calloc((size_t)n_threads - 1, sizeof *p->args);
        p->slots = inf__aligned_alloc((size_t)n_threads * sizeof *p->slots);
        if (p->slots) memset(p->slots, 0, (size_t)n_threads * sizeof *p->slots);
        if (!p->threads || !p->seen || !p->args || !p->slots) {
            inf__pool_free(p);
            return INF_ENOMEM;
        }
        memset(p->seen, 0, ((size_t)n_threads - 1) * sizeof *p->seen);
        for (int i = 0; i < n_threads - 1; i++) {
            worker_arg *wa = &p->args[i];
            wa->p = p, wa->index = i, wa->n_threads = n_threads;
            if (pthread_create(&p->threads[i], NULL, worker_main, wa) != 0) {
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
    inf__aligned_free(p->seen);
    inf__free(p->args);
    inf__aligned_free(p->ws);
    if (p->slots)
        for (int i = 0; i < p->n_threads; i++)
            inf__aligned_free(p->slots[i].data);
    inf__aligned_free(p->slots);
    inf__aligned_free(p);
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

void *inf__pool_slot_workspace(inf__pool *p, int slot, size_t bytes) {
    if (!p || p->n_threads < 2 || !p->slots || slot < 0 || slot >= p->n_threads) return NULL;
    slot_ws *w = &p->slots[slot];
    if (bytes > w->size) {
        void *data = inf__aligned_alloc(bytes); /* not touched here: the slot's thread touches it first */
        if (!data) return NULL;
        inf__aligned_free(w->data);
        w->data = data;
        w->size = bytes;
    }
    return w->data;
}

int inf__pool_size(const inf__pool *p) { return p ? p->n_threads : 1; }

unsigned inf__pool_moves(const inf__pool *p) { return p ? atomic_load(&p->n_moves) : 0; }

/* Publishes a job of n_chunks chunks and wakes sleeping workers. */
static uint32_t publish_job(inf__pool *p, int64_t n, int64_t chunk, uint32_t n_chunks,
                            inf__range_fn fn, void *arg) {
    uint32_t gen = atomic_load(&p->generation) + 1;
    atomic_store(&p->fn, fn);
    atomic_store(&p->arg, arg);
    atomic_store(&p->n, n);
    atomic_store(&p->chunk, chunk);
    atomic_store(&p->done, 0);
    atomic_store(&p->claim, CLAIM(gen, 0, n_chunks));
    atomic_store_explicit(&p->caller_cpu, current_cpu(), memory_order_relaxed);
    atomic_store(&p->generation, gen);
    if (atomic_load(&p->n_sleeping) > 0) {
        pthread_mutex_lock(&p->mu);
        pthread_cond_broadcast(&p->wake);
        pthread_mutex_unlock(&p->mu);
    }
    return gen;
}

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
    if ((n + chunk - 1) / chunk > MAX_CHUNKS) chunk = (n + MAX_CHUNKS - 1) / MAX_CHUNKS; /* 2^14 threads and more */
    uint32_t n_chunks = (uint32_t)((n + chunk - 1) / chunk);
    uint32_t gen = publish_job(p, n, chunk, n_chunks, fn, arg);
    run_chunks(p, gen, false);
    /* Only chunks a worker claimed can still be running. */
    for (int spins = 0; atomic_load(&p->done) < n_chunks; spins++) spin_step(spins);
    /* Keep the workers in step: wait a little for each to have seen this
     * job (a worker descheduled by another process is not waited for). */
    for (int w = 0; w < threads - 1; w++)
        for (int spins = 0; atomic_load(&p->seen[w].gen) != gen && spins < PAUSE_ITERS + ACK_YIELDS; spins++)
            spin_step(spins);
}
#endif /* INF_NO_THREADS */
