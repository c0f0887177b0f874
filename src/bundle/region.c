/*
 * region.c -- the fixed memory region of the edge runtime
 * (inf_session_new_in): every byte the engine uses comes from one caller
 * buffer, and nothing is allocated after start-up.
 *
 * DESIGN: the region's bookkeeping sits at the start of the buffer and is
 * installed as the engine's allocator (inf_set_allocator, process-wide: one
 * region per process).  Blocks are laid out one after another, each with a
 * 16-byte header (its size and whether it is free); allocation is first fit
 * over the freed blocks, then a bump of the high-water mark; a freed block
 * merges with free blocks after it, and the high-water mark comes down when
 * the last block is freed.  Start-up makes a few hundred allocations, so a
 * linear scan costs nothing that matters, and after start-up the engine
 * (a warm session) allocates nothing at all.  A request that does not fit
 * returns NULL: the engine reports INF_ENOMEM.
 */
#include <string.h>

#include "bundle/format.h"
#include "infera/bundle.h"

typedef struct block {
    size_t size; /* payload bytes */
    size_t free;
} block;

typedef struct region {
    uint8_t *base, *end; /* blocks live in [base, end) */
    uint8_t *top;        /* high-water mark: first byte after the last block */
    size_t used, peak;   /* payload + header bytes of live blocks */
} region;

#define HDR sizeof(block)
#define ROUND(n) (((n) + 15) & ~(size_t)15)

static block *next_block(block *b) { return (block *)((uint8_t *)b + HDR + b->size); }

static void *region_alloc(region *r, size_t n) {
    if (n > (size_t)(r->end - r->base)) return NULL;
    n = ROUND(n ? n : 1);
    for (block *b = (block *)r->base; (uint8_t *)b < r->top; b = next_block(b)) {
        if (!b->free) continue;
        while ((uint8_t *)next_block(b) < r->top && next_block(b)->free) b->size += HDR + next_block(b)->size;
        if (b->size < n) continue;
        if (b->size >= n + HDR + 64) { /* split */
            block *rest = (block *)((uint8_t *)b + HDR + n);
            rest->size = b->size - n - HDR;
            rest->free = 1;
            b->size = n;
        }
        b->free = 0;
        r->used += HDR + b->size;
        if (r->used > r->peak) r->peak = r->used;
        return b + 1;
    }
    if ((size_t)(r->end - r->top) < HDR + n) return NULL;
    block *b = (block *)r->top;
    b->size = n;
    b->free = 0;
    r->top += HDR + n;
    r->used += HDR + n;
    if (r->used > r->peak) r->peak = r->used;
    return b + 1;
}

static void region_free(region *r, void *p) {
    block *b = (block *)p - 1;
    b->free = 1;
    r->used -= HDR + b->size;
    if ((uint8_t *)next_block(b) == r->top) r->top = (uint8_t *)b;
}

/* The inf_realloc_fn of a region. */
static void *region_realloc(void *ud, void *ptr, size_t size) {
    region *r = ud;
    if (size == 0) {
        if (ptr) region_free(r, ptr);
        return NULL;
    }
    if (!ptr) return region_alloc(r, size);
    block *b = (block *)ptr - 1;
    if (b->size >= size) return ptr;
    void *np = region_alloc(r, size);
    if (!np) return NULL;
    memcpy(np, ptr, b->size);
    region_free(r, ptr);
    return np;
}

static region *region_at(const void *buffer) {
    uintptr_t p = ((uintptr_t)buffer + 15) & ~(uintptr_t)15;
    return (region *)p;
}

size_t inf_region_bytes_used(const void *buffer) { return buffer ? region_at(buffer)->used : 0; }
size_t inf_region_bytes_peak(const void *buffer) { return buffer ? region_at(buffer)->peak : 0; }

/* Zero inputs of the declared shapes (symbolic dimensions = batch), in the region. */
static inf_status warm_up(inf_session *s, const inf_model *m, int batch, inf_error *err) {
    int n = inf_model_n_inputs(m);
    inf_tensor **in = inf__calloc((size_t)n + 1, sizeof *in);
    if (!in) return inf_error_set(err, INF_ENOMEM, "edge: out of region memory for the warm-up inputs");
    inf_status st = INF_OK;
    for (int i = 0; i < n && !st; i++) {
        const inf_value_info *info = inf_model_input(m, i);
        int64_t dims[INF_MAX_DIMS];
        int nd = info->ndim < 0 ? 1 : info->ndim;
        for (int d = 0; d < nd; d++) dims[d] = info->ndim < 0 || info->dims[d] < 0 ? batch : info->dims[d];
        if (info->kind != INF_KIND_TENSOR || info->dtype == INF_DTYPE_UNDEFINED) {
            st = inf_error_set(err, INF_EUNSUPPORTED, "edge: input '%s' is not a typed tensor; cannot warm up", info->name);
        } else if ((st = inf_tensor_new(info->dtype, nd, dims, &in[i]))) {
            st = inf_error_set(err, st, "edge: out of region memory for input '%s'", info->name);
        }
    }
    inf_tensor *const *out;
    if (!st) st = inf_session_run(s, (const inf_tensor *const *)in, &out, err);
    for (int i = 0; i < n; i++) inf_tensor_free(in[i]);
    inf__free(in);
    return st;
}

inf_status inf_session_new_in(void *buffer, size_t size, const void *bundle, size_t bundle_size,
                              const inf_session_options *opts, inf_model **model, inf_session **session,
                              inf_error *err) {
    *model = NULL;
    *session = NULL;
    region *r = region_at(buffer);
    size_t skip = (size_t)((uint8_t *)r - (uint8_t *)buffer) + ROUND(sizeof *r) + 64;
    if (!buffer || size < skip + 4096)
        return inf_error_set(err, INF_ENOMEM, "edge: a memory region of %zu bytes is too small", size);
    memset(r, 0, sizeof *r);
    r->base = (uint8_t *)(((uintptr_t)r + sizeof *r + 63) & ~(uintptr_t)63);
    r->top = r->base;
    r->end = (uint8_t *)buffer + size;
    inf_set_allocator(region_realloc, r);
    inf_session_options so;
    inf_session_options_init(&so);
    if (opts) so = *opts;
    inf_status st = inf_bundle_load_static(bundle, bundle_size, "embedded bundle", model, err);
    inf_bundle_info bi;
    int batch = !st && inf_model_bundle_info(*model, &bi) ? bi.max_batch : 1;
    if (!st && so.max_batch <= 0) so.max_batch = batch;
    if (!st) st = inf_session_new(*model, &so, session, err);
    if (!st) st = warm_up(*session, *model, batch, err);
    if (st) {
        inf_session_free(*session);
        inf_model_free(*model);
        *session = NULL;
        *model = NULL;
        if (st == INF_ENOMEM)
            inf_error_set(err, INF_ENOMEM, "edge: the memory region of %zu bytes is too small for this model (start-up "
                       "had used up to %zu bytes when an allocation did not fit)", size, r->peak);
    }
    return st;
}
