/*
 * memplan.h -- the memory of one frame of the executor: a buffer pool and a
 * memory plan (one activation arena with an offset per intermediate).
 * Private to src/graph/ (graph/session.c is the only caller).
 *
 * A frame (the session's main graph, or a sub-batch frame) asks for buffers
 * in the same order every run at the same input shapes.  The first run takes
 * them from the pool (best fit) and records each request: its size, the step
 * (node index) that made it and the step at which its buffer was released
 * (graph outputs: the end of the run).  At the end of that run the requests
 * are placed in one arena (largest first, each at the lowest offset free over
 * its whole lifetime), the arena is allocated once and the pool's buffers
 * are returned to the heap (those holding graph outputs at the next run's
 * start).  Later runs whose requests match the plan
 * (same step, size <= the planned size: a smaller batch fits) take their
 * buffers at the planned offsets with no search; the first request that does
 * not match, and every request after it, goes to the pool, and the end of
 * that run replans (sizes and lifetimes merged with the old plan, so the arena
 * only grows: it ends sized for the largest batch seen).
 *
 * Safety: before each step, every arena buffer whose planned lifetime ended
 * must have been released; if one is still in use (a run whose lifetimes
 * differ from the plan's), the rest of the run leaves the arena.  So a planned
 * buffer is never handed out while another one over the same bytes is live.
 */
#ifndef INF_MEMPLAN_H
#define INF_MEMPLAN_H

#include "graph/graph.h"
#include "infera/session.h"
#include "ops/ops.h"

typedef struct inf__buf {
    void *data;
    size_t cap;
    int refs;
    int64_t n_strings;   /* string elements to free when released */
    struct inf__buf *next_all;
    int entry;           /* plan entry (arena buffer), -1 for a pool buffer, -2 for a retired arena's */
    int rec;             /* request of the current run that took it, -1 if not recorded */
    uint32_t gen;        /* run in which rec was set */
} inf__buf;

/* One request of a run: bytes, and the steps of its first and last use. */
typedef struct inf__memreq {
    size_t size;
    int first, last;
} inf__memreq;

typedef struct inf__mem {
    /* the pool */
    inf__buf *all;
    inf__buf **free_list; /* unordered array of free buffers */
    int n_free, cap_free, n_all;
    size_t pool_bytes, pool_peak; /* bytes held by pool buffers now, and at most */
    /* the plan (NULL-free when planning is off) */
    bool planning;
    inf__memreq *trace;   /* this run's requests */
    int n_trace, cap_trace;
    bool trace_lost;      /* a request could not be recorded (out of memory) */
    bool trim_pending;    /* free the pool's buffers at the next run's start */
    inf__memreq *req;     /* the plan: n_plan requests and their offsets */
    size_t *offset;
    int *by_last;         /* plan entries ordered by last step */
    uint8_t *live;        /* per entry: its arena buffer is in use this run */
    inf__buf *bufs;       /* per entry: the arena buffer */
    int n_plan, cap_plan, cap_bufs;
    int n_switches;       /* plans replaced by one of other requests */
    char *arena;
    size_t arena_bytes;
    char *retired_arena;  /* an arena replaced while some of its buffers were in use */
    inf__buf *retired_bufs;
    /* the current run */
    uint32_t gen;
    int step, next, next_death;
    bool on_plan;
    /* statistics */
    int64_t runs_planned; /* runs served entirely by the arena */
    int64_t n_plans;      /* plans computed */
    int64_t n_inplace;    /* outputs written over a dying input (counted by session.c) */
    /* the guard: the most bytes the pool and the arena may hold together
     * (0 = the machine's physical memory); a request past it fails before
     * reaching the allocator, and sets over_limit (until the next run) */
    size_t limit;
    bool over_limit;
} inf__mem;

/* planning: false = pool only (the behaviour before the planner). */
void inf__mem_init(inf__mem *m, bool planning);
void inf__mem_deinit(inf__mem *m);
/* The byte limit in force (m->limit, or the physical memory when 0). */
size_t inf__mem_limit(const inf__mem *m);
/* A buffer of at least size bytes, refs = 1; NULL when out of memory or
 * when the pool and arena would hold more than the limit (over_limit set).
 * recorded: part of the frame's plan (outputs and scratch of its own nodes);
 * false for strings and for subgraphs' values. */
inf__buf *inf__mem_take(inf__mem *m, size_t size, bool recorded);
/* Drops one reference; at zero the buffer is free again. */
void inf__mem_release(inf__mem *m, inf__buf *b);
/* Run boundaries and steps: begin after the previous run's values were
 * released; step before each node; end after the last (may replan: the only
 * place the planner allocates; out of memory there leaves the pool in use).
 * ok = false: the run failed, its requests are not planned from. */
void inf__mem_run_begin(inf__mem *m);
void inf__mem_step(inf__mem *m, int step);
void inf__mem_run_end(inf__mem *m, int n_steps, bool ok);

/* For tests and measurements: the memory of a session's main frame. */
typedef struct inf__memstats {
    size_t arena_bytes;    /* the arena (0 without a plan) */
    size_t pool_bytes;     /* pool buffers now */
    size_t pool_peak;      /* pool buffers at most */
    int n_plan;            /* requests in the plan */
    int64_t runs_planned;  /* runs served entirely by the arena since the last plan */
    int64_t n_plans;       /* plans computed */
    int64_t n_inplace;     /* outputs written over a dying input */
} inf__memstats;
void inf__session_memstats(const inf_session *s, inf__memstats *out);

/* Places n requests in one arena: offset[i] for each, 64-byte aligned, no two
 * whose [first, last] intersect overlapping in bytes; largest first, each at
 * the lowest offset that fits.  Returns the arena's size.  order: 2n ints of
 * scratch.  Exposed for tests. */
size_t inf__memplan_place(const inf__memreq *req, int n, size_t *offset, int *order);

/* Bit k set: node may write output 0 over input k (element-wise, each element
 * read before it is written at the same index).  The executor still checks
 * the input is a dying intermediate of the output's exact shape and type. */
uint32_t inf__memplan_inplace_inputs(const inf__node *node);

#endif /* INF_MEMPLAN_H */
