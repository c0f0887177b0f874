/*
 * alloc.c -- the one door through which the engine allocates memory.
 *
 * DESIGN: a process-wide allocator function (inf_set_allocator, set once at
 * start-up, like lua_Alloc) plus counters.  The counters let tests prove that
 * a warm inf_session_run allocates nothing, and inf_alloc_fail_after injects
 * failures so that every INF_ENOMEM path can be exercised (SQLite's
 * do_faultsim_test).  The counters are atomics: sessions on many threads
 * allocate concurrently.
 */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#if defined(__linux__)
#include <sys/mman.h>
#endif

#include "core/core.h"

static void *default_realloc(void *ud, void *ptr, size_t size) {
    (void)ud;
    if (size == 0) {
        free(ptr);
        return NULL;
    }
    return realloc(ptr, size);
}

/* Process-wide allocator singleton: replaced only before first use. */
static inf_realloc_fn g_alloc_fn = default_realloc;
static void *g_alloc_ud = NULL;
static _Atomic uint64_t g_n_allocs, g_n_frees, g_n_failed, g_fail_at, g_countdown_base;
static _Atomic int64_t g_bytes_live;

void inf_set_allocator(inf_realloc_fn fn, void *user_data) {
    g_alloc_fn = fn ? fn : default_realloc;
    g_alloc_ud = fn ? user_data : NULL;
}

void inf_alloc_get_stats(inf_alloc_stats *out) {
    out->n_allocs = atomic_load(&g_n_allocs);
    out->n_frees = atomic_load(&g_n_frees);
    out->n_failed = atomic_load(&g_n_failed);
    out->bytes_live = atomic_load(&g_bytes_live);
}

void inf_alloc_fail_after(uint64_t n) {
    atomic_store(&g_countdown_base, atomic_load(&g_n_allocs) + atomic_load(&g_n_failed));
    atomic_store(&g_fail_at, n);
}

static bool should_fail(void) {
    uint64_t at = atomic_load(&g_fail_at);
    if (at == 0) return false;
    uint64_t attempt = atomic_load(&g_n_allocs) + atomic_load(&g_n_failed) + 1;
    return attempt - atomic_load(&g_countdown_base) >= at;
}

/* Every block carries its size in a 16-byte header so that bytes_live stays
 * exact and frees need no size from the caller. */
#define HEADER 16

void *inf__realloc(void *ptr, size_t size) {
    if (size == 0) {
        inf__free(ptr);
        return NULL;
    }
    if (size > SIZE_MAX - HEADER || should_fail()) {
        atomic_fetch_add(&g_n_failed, 1);
        return NULL;
    }
    char *base = ptr ? (char *)ptr - HEADER : NULL;
    size_t old = base ? *(size_t *)base : 0;
    char *nb = g_alloc_fn(g_alloc_ud, base, size + HEADER);
    if (!nb) {
        atomic_fetch_add(&g_n_failed, 1);
        return NULL;
    }
    *(size_t *)nb = size;
    atomic_fetch_add(&g_n_allocs, 1);
    atomic_fetch_add(&g_bytes_live, (int64_t)size - (int64_t)old);
    return nb + HEADER;
}

void *inf__malloc(size_t size) { return inf__realloc(NULL, size ? size : 1); }

void *inf__calloc(size_t n, size_t size) {
    if (size && n > SIZE_MAX / size) {
        atomic_fetch_add(&g_n_failed, 1);
        return NULL;
    }
    size_t total = n * size;
    void *p = inf__malloc(total ? total : 1);
    if (p) memset(p, 0, total);
    return p;
}

void inf__free(void *ptr) {
    if (!ptr) return;
    char *base = (char *)ptr - HEADER;
    atomic_fetch_add(&g_bytes_live, -(int64_t) * (size_t *)base);
    atomic_fetch_add(&g_n_frees, 1);
    g_alloc_fn(g_alloc_ud, base, 0);
}

char *inf__strndup(const char *s, size_t n) {
    char *d = inf__malloc(n + 1);
    if (!d) return NULL;
    if (n) memcpy(d, s, n);
    d[n] = 0;
    return d;
}

char *inf__strdup(const char *s) { return inf__strndup(s, strlen(s)); }

/* Aligned blocks: over-allocate, align, and keep the original pointer just
 * before the aligned address. */
void *inf__aligned_alloc(size_t size) {
    if (size > SIZE_MAX - 64 - sizeof(void *)) return NULL;
    char *raw = inf__malloc(size + 64 + sizeof(void *));
    if (!raw) return NULL;
    uintptr_t p = ((uintptr_t)raw + sizeof(void *) + 63) & ~(uintptr_t)63;
    ((void **)p)[-1] = raw;
    return (void *)p;
}

void inf__aligned_free(void *ptr) {
    if (ptr) inf__free(((void **)ptr)[-1]);
}

inf_status inf__array_reserve(void **items, int *cap, int need, size_t elem_size) {
    if (need <= *cap) return INF_OK;
    int ncap = *cap ? *cap : 8;
    while (ncap < need) {
        if (ncap > INT32_MAX / 2) return INF_ENOMEM;
        ncap *= 2;
    }
    void *n = inf__realloc(*items, (size_t)ncap * elem_size);
    if (!n) return INF_ENOMEM;
    *items = n;
    *cap = ncap;
    return INF_OK;
}

void inf__prefault(void *p, size_t size) {
#if defined(__linux__) && defined(MADV_POPULATE_WRITE)
    uintptr_t page = 4096, lo = ((uintptr_t)p + page - 1) & ~(page - 1), hi = ((uintptr_t)p + size) & ~(page - 1);
    if (hi > lo) (void)madvise((void *)lo, hi - lo, MADV_POPULATE_WRITE);
#else
    (void)p, (void)size;
#endif
}
