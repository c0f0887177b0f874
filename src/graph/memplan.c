/*
 * memplan.c -- a frame's memory: the buffer pool, the recorded requests of a
 * run, the memory plan (one arena, an offset per request) and the list of ops
 * that may run in place.  See memplan.h for the design and its safety rule.
 *
 * The pool: buffers are never returned to the heap while they may be reused;
 * a request takes the smallest free buffer that fits, else grows the largest
 * free one, else makes a new one.  When a plan is made the pool's free
 * buffers are freed (before the arena is allocated), and the rest, which held
 * the planning run's graph outputs, at the start of the next run; from then
 * on the pool serves only requests that leave the plan.
 *
 * The plan is built from the trace of a run that was not served entirely by
 * the arena.  If that run made the same requests at the same steps as the
 * plan, the two are merged (each request's size and last step the larger of
 * both), so the plan covers every shape seen and the arena only grows; if the
 * requests differ (another path through the graph, another kernel variant)
 * and the old plan already served runs (or the plan was replaced that way
 * twice already), the old plan is kept and the other shape keeps using the
 * pool, warm from its second run (no thrashing between two shapes).
 *
 * The guard: a corrupt or hostile shape can ask for terabytes, and what
 * malloc does then is not ours to rely on (sanitizers and fuzzers abort
 * instead of returning NULL; Linux may overcommit and kill us later).  So
 * every buffer and the arena are checked against a byte limit first -- the
 * session's max_memory_bytes, by default the machine's physical memory --
 * and a request past it fails like an allocation that returned NULL.  The
 * plan's offsets saturate instead of wrapping, so a huge plan is refused
 * the same way.
 *
 * Callers: graph/session.c only (one inf__mem per session and per sub-batch
 * frame; subgraphs of If/Loop/Scan share their frame's pool, unrecorded).
 */
#include <string.h>

#include "graph/memplan.h"

#define ALIGN 64

/* ---- the guard ---- */

size_t inf__mem_limit(const inf__mem *m) { return m->limit ? m->limit : inf__phys_memory_bytes(); }

/* Whether the pool and arena may hold bytes more; sets over_limit if not. */
static bool within_limit(inf__mem *m, size_t bytes) {
    size_t limit = inf__mem_limit(m), held = m->pool_bytes + m->arena_bytes;
    if (held <= limit && bytes <= limit - held) return true;
    m->over_limit = true;
    return false;
}

/* ---- the pool ---- */

static inf__buf *pool_grow_or_new(inf__mem *m, size_t size) {
    inf__buf *b = NULL;
    int best = -1;
    for (int i = 0; i < m->n_free; i++)
        if (!b || m->free_list[i]->cap > b->cap) {
            b = m->free_list[i];
            best = i;
        }
    size_t cap = size < ALIGN ? ALIGN : size;
    if (!within_limit(m, b ? cap - b->cap : cap)) return NULL; /* b's bytes are let go */
    void *data = inf__aligned_alloc(cap);
    if (!data) return NULL;
    if (b) {
        inf__aligned_free(b->data);
        m->pool_bytes -= b->cap;
        m->free_list[best] = m->free_list[--m->n_free];
    } else {
        b = inf__calloc(1, sizeof *b);
        if (!b ||
            inf__array_reserve((void **)&m->free_list, &m->cap_free, m->n_all + 1, sizeof(inf__buf *)) != INF_OK) {
            inf__aligned_free(data);
            inf__free(b);
            return NULL;
        }
        b->entry = -1;
        b->next_all = m->all;
        m->all = b;
        m->n_all++;
    }
    b->data = data;
    b->cap = cap;
    m->pool_bytes += cap;
    if (m->pool_bytes > m->pool_peak) m->pool_peak = m->pool_bytes;
    return b;
}

static inf__buf *pool_take(inf__mem *m, size_t size) {
    int best = -1;
    for (int i = 0; i < m->n_free; i++) {
        size_t cap = m->free_list[i]->cap;
        if (cap >= size && (best < 0 || cap < m->free_list[best]->cap)) best = i;
    }
    inf__buf *b;
    if (best >= 0) {
        b = m->free_list[best];
        m->free_list[best] = m->free_list[--m->n_free];
    } else if (!(b = pool_grow_or_new(m, size))) {
        return NULL;
    }
    b->refs = 1;
    b->rec = -1;
    return b;
}

static void free_strings(inf__buf *b) {
    char **s = b->data;
    for (int64_t i = 0; i < b->n_strings; i++) inf__free(s[i]);
    b->n_strings = 0;
}

/* Returns the pool's free buffers to the heap (after a plan took over). */
static void pool_trim(inf__mem *m) {
    inf__buf **link = &m->all;
    while (*link) {
        inf__buf *b = *link;
        if (b->refs > 0) {
            link = &b->next_all;
            continue;
        }
        *link = b->next_all;
        m->pool_bytes -= b->cap;
        m->n_all--;
        inf__aligned_free(b->data);
        inf__free(b);
    }
    m->n_free = 0;
}

void inf__mem_init(inf__mem *m, bool planning) {
    memset(m, 0, sizeof *m);
    m->planning = planning;
}

static void free_arena(char **arena, inf__buf **bufs) {
    inf__aligned_free(*arena);
    inf__free(*bufs);
    *arena = NULL;
    *bufs = NULL;
}

void inf__mem_deinit(inf__mem *m) {
    for (inf__buf *b = m->all; b;) {
        inf__buf *next = b->next_all;
        free_strings(b);
        inf__aligned_free(b->data);
        inf__free(b);
        b = next;
    }
    inf__free(m->free_list);
    inf__free(m->trace);
    inf__free(m->req); /* one block: req, offset, by_last, live */
    free_arena(&m->arena, &m->bufs);
    free_arena(&m->retired_arena, &m->retired_bufs);
    memset(m, 0, sizeof *m);
}

/* ---- requests ---- */

/* The most requests a run may record to be planned from.  Placement is
 * quadratic in the requests that live at once, and a Loop kernel asks its
 * frame for its carried values at every iteration: a Loop of 100,000
 * iterations spent 30 s placing them (10,000: 0.3 s).  A run past the limit
 * is not planned from; the pool serves it. */
#define MAX_TRACE 32768

static void record(inf__mem *m, inf__buf *b, size_t size) {
    b->rec = -1;
    if (m->trace_lost) return;
    if (m->n_trace >= MAX_TRACE) {
        m->trace_lost = true;
        return;
    }
    if (inf__array_reserve((void **)&m->trace, &m->cap_trace, m->n_trace + 1, sizeof *m->trace) != INF_OK) {
        m->trace_lost = true; /* this run will not be planned from */
        return;
    }
    b->rec = m->n_trace;
    b->gen = m->gen;
    m->trace[m->n_trace++] = (inf__memreq){size, m->step, -1};
}

/* The plan's next entry, if this request matches it. */
static inf__buf *arena_take(inf__mem *m, size_t size) {
    if (!m->on_plan || m->next >= m->n_plan || m->req[m->next].first != m->step || size > m->req[m->next].size) {
        m->on_plan = false;
        return NULL;
    }
    int e = m->next++;
    m->live[e] = 1;
    inf__buf *b = &m->bufs[e];
    b->refs = 1;
    return b;
}

inf__buf *inf__mem_take(inf__mem *m, size_t size, bool recorded) {
    if (!recorded || !m->planning) return pool_take(m, size);
    inf__buf *b = arena_take(m, size);
    if (!b && !(b = pool_take(m, size))) return NULL;
    record(m, b, size);
    return b;
}

void inf__mem_release(inf__mem *m, inf__buf *b) {
    if (--b->refs > 0) return;
    if (b->n_strings) free_strings(b);
    if (b->rec >= 0 && b->gen == m->gen) m->trace[b->rec].last = m->step;
    b->rec = -1;
    if (b->entry >= 0) m->live[b->entry] = 0;
    /* the free list can hold every pool buffer: it was reserved when each was made */
    if (b->entry == -1) m->free_list[m->n_free++] = b;
}

void inf__mem_run_begin(inf__mem *m) {
    if (m->trim_pending) { /* the last run's graph outputs, now released, were the pool's last buffers */
        pool_trim(m);
        m->trim_pending = false;
    }
    m->gen++;
    m->n_trace = 0;
    m->over_limit = false;
    m->trace_lost = false;
    m->step = 0;
    m->next = 0;
    m->next_death = 0;
    m->on_plan = m->n_plan > 0;
}

void inf__mem_step(inf__mem *m, int step) {
    m->step = step;
    if (!m->on_plan) return;
    /* every buffer planned to die before this step must be free by now */
    while (m->next_death < m->n_plan && m->req[m->by_last[m->next_death]].last < step) {
        if (m->live[m->by_last[m->next_death]]) {
            m->on_plan = false;
            return;
        }
        m->next_death++;
    }
}

/* ---- placement ---- */

typedef int (*cmp_fn)(const inf__memreq *req, int a, int b);

static int by_size_desc(const inf__memreq *req, int a, int b) {
    if (req[a].size != req[b].size) return req[a].size > req[b].size ? -1 : 1;
    return req[a].first != req[b].first ? req[a].first - req[b].first : a - b;
}

static int by_last_asc(const inf__memreq *req, int a, int b) {
    return req[a].last != req[b].last ? req[a].last - req[b].last : a - b;
}

static void sift(int *v, int root, int n, const inf__memreq *req, cmp_fn cmp) {
    for (int child; (child = 2 * root + 1) < n; root = child) {
        if (child + 1 < n && cmp(req, v[child], v[child + 1]) < 0) child++;
        if (cmp(req, v[root], v[child]) >= 0) return;
        int t = v[root];
        v[root] = v[child];
        v[child] = t;
    }
}

/* Heap sort of the indices 0..n-1 by cmp (ours, so it takes the requests). */
static void sort_indices(int *v, int n, const inf__memreq *req, cmp_fn cmp) {
    for (int i = 0; i < n; i++) v[i] = i;
    for (int i = n / 2 - 1; i >= 0; i--) sift(v, i, n, req, cmp);
    for (int end = n - 1; end > 0; end--) {
        int t = v[0];
        v[0] = v[end];
        v[end] = t;
        sift(v, 0, end, req, cmp);
    }
}

/* Rounded up to ALIGN; saturates at SIZE_MAX (which no limit admits). */
static size_t round_up(size_t n) {
    return n < ALIGN ? ALIGN : n > SIZE_MAX - ALIGN ? SIZE_MAX : (n + ALIGN - 1) / ALIGN * ALIGN;
}
static size_t add_sat(size_t a, size_t b) { return a > SIZE_MAX - b ? SIZE_MAX : a + b; }

static bool lifetimes_meet(const inf__memreq *a, const inf__memreq *b) {
    return a->first <= b->last && b->first <= a->last;
}

size_t inf__memplan_place(const inf__memreq *req, int n, size_t *offset, int *order) {
    int *placed = order + n; /* placed entries, by offset */
    int n_placed = 0;
    size_t total = 0;
    sort_indices(order, n, req, by_size_desc);
    for (int k = 0; k < n; k++) {
        int i = order[k];
        size_t size = round_up(req[i].size), at = 0;
        for (int j = 0; j < n_placed; j++) {
            int p = placed[j];
            if (!lifetimes_meet(&req[i], &req[p])) continue;
            if (offset[p] >= add_sat(at, size)) break; /* the gap before p fits */
            size_t end = add_sat(offset[p], round_up(req[p].size));
            if (end > at) at = end;
        }
        int pos = n_placed;
        while (pos > 0 && offset[placed[pos - 1]] > at) pos--;
        memmove(placed + pos + 1, placed + pos, (size_t)(n_placed - pos) * sizeof *placed);
        placed[pos] = i;
        n_placed++;
        offset[i] = at;
        if (add_sat(at, size) > total) total = add_sat(at, size);
    }
    return total;
}

/* ---- planning at the end of a run ---- */

/* Merges the old plan into the trace when both made the same requests at
 * the same steps; false when they differ. */
static bool merge_old_plan(inf__mem *m) {
    if (m->n_plan != m->n_trace) return m->n_plan == 0;
    for (int i = 0; i < m->n_plan; i++)
        if (m->trace[i].first != m->req[i].first) return false;
    for (int i = 0; i < m->n_plan; i++) {
        if (m->req[i].size > m->trace[i].size) m->trace[i].size = m->req[i].size;
        if (m->req[i].last > m->trace[i].last) m->trace[i].last = m->req[i].last;
    }
    return true;
}

/* Makes room for n entries in the plan's arrays (one block). */
static inf_status reserve_plan(inf__mem *m, int n) {
    if (n <= m->cap_plan) return INF_OK;
    size_t bytes = (size_t)n * (sizeof(inf__memreq) + sizeof(size_t) + 3 * sizeof(int) + 1);
    char *block = inf__malloc(bytes);
    if (!block) return INF_ENOMEM;
    inf__free(m->req);
    m->req = (inf__memreq *)block;
    m->offset = (size_t *)(m->req + n);
    m->by_last = (int *)(m->offset + n);
    m->live = (uint8_t *)(m->by_last + 3 * (size_t)n); /* by_last, then 2n ints of placement scratch */
    m->cap_plan = n;
    return INF_OK;
}

static bool arena_in_use(const inf__mem *m) {
    for (int i = 0; i < m->n_plan; i++)
        if (m->bufs[i].refs > 0) return true;
    return false;
}

/* Lets go of the arena: freed, or retired while a value of the last run
 * still lives in it (freed at the next replan or with the frame). */
static void let_go_arena(inf__mem *m) {
    if (arena_in_use(m)) {
        free_arena(&m->retired_arena, &m->retired_bufs);
        for (int i = 0; i < m->n_plan; i++) m->bufs[i].entry = -2;
        m->retired_arena = m->arena;
        m->retired_bufs = m->bufs;
        m->arena = NULL;
        m->bufs = NULL;
    } else {
        free_arena(&m->arena, &m->bufs);
    }
    m->arena_bytes = 0;
    m->cap_bufs = 0;
}

/* An arena of bytes with n buffer descriptors (the current one if it is big
 * enough and free). */
static inf_status new_arena(inf__mem *m, size_t bytes, int n) {
    if (!arena_in_use(m) && bytes <= m->arena_bytes && n <= m->cap_bufs) return INF_OK;
    size_t limit = inf__mem_limit(m);
    if (bytes > limit || m->pool_bytes > limit - bytes) { /* a huge plan: the pool keeps serving */
        m->over_limit = true;
        return INF_ENOMEM;
    }
    char *arena = inf__aligned_alloc(bytes);
    inf__buf *bufs = inf__calloc((size_t)n + 1, sizeof *bufs);
    if (!arena || !bufs) {
        inf__aligned_free(arena);
        inf__free(bufs);
        return INF_ENOMEM;
    }
    let_go_arena(m);
    m->arena = arena;
    m->bufs = bufs;
    m->arena_bytes = bytes;
    m->cap_bufs = n;
    return INF_OK;
}

static void drop_plan(inf__mem *m) {
    let_go_arena(m);
    m->n_plan = 0;
}

static void replan(inf__mem *m) {
    if (!merge_old_plan(m)) {
        /* keep a plan that served runs, or after two switches (shapes taking
         * turns would replan every run): the pool serves this shape */
        if (m->runs_planned > 0 || m->n_switches >= 2) return;
        m->n_switches++;
    }
    int n = m->n_trace;
    if (n == 0) { /* nothing to plan (every value borrowed, aliased or on the heap) */
        drop_plan(m);
        return;
    }
    if (reserve_plan(m, n) != INF_OK) {
        drop_plan(m);
        return;
    }
    memcpy(m->req, m->trace, (size_t)n * sizeof *m->req);
    size_t bytes = inf__memplan_place(m->req, n, m->offset, m->by_last + n);
    pool_trim(m); /* before the arena is allocated, so the two do not add up in the peak */
    if (new_arena(m, bytes, n) != INF_OK) {
        drop_plan(m);
        return;
    }
    for (int i = 0; i < n; i++) {
        inf__buf *b = &m->bufs[i];
        memset(b, 0, sizeof *b);
        b->data = m->arena + m->offset[i];
        b->cap = round_up(m->req[i].size);
        b->entry = i;
        b->rec = -1;
        m->live[i] = 0;
    }
    sort_indices(m->by_last, n, m->req, by_last_asc);
    m->n_plan = n;
    m->n_plans++;
    m->runs_planned = 0;
    m->trim_pending = true;
}

void inf__mem_run_end(inf__mem *m, int n_steps, bool ok) {
    if (!m->planning) return;
    for (int i = 0; i < m->n_trace; i++)
        if (m->trace[i].last < 0) m->trace[i].last = n_steps; /* still live: a graph output */
    bool served = m->on_plan && m->next == m->n_plan && m->n_trace == m->n_plan;
    if (ok && served) m->runs_planned++;
    else if (ok && !m->trace_lost) replan(m);
    m->gen++; /* releases from now on belong to no run */
}

/* ---- in-place ops ---- */

/* Which inputs output 0 may reuse: the operator's facts (ops/op_facts.c). */
uint32_t inf__memplan_inplace_inputs(const inf__node *node) {
    if (!node->op || node->n_outputs < 1) return 0;
    return inf__op_facts_of(node->op)->inplace_inputs;
}
