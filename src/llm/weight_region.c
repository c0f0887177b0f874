/*
 * weight_region.c -- the memory a decode step streams its weights from: one
 * region per model, backed by 2 MiB pages where the kernel gives them, that
 * holds every repacked tile (Q4_0/Q8_0/Q5_0/Q4_1) and a copy of every other
 * matrix the forward pass multiplies with (F32, F16, the K-quants ...), in
 * the order a forward pass reads them (layer by layer: q k v o gate up down,
 * then the output head).
 *
 * DESIGN: decoding reads each weight once per token, so a small model's
 * decode speed is one core's streaming rate.  On Zen 5 (bench/llm/RESULTS.md,
 * session 17) one core streams f32 rows ~8% faster from 2 MiB pages than from
 * 4 KiB pages (bench/llm/stream_probe.c; each 4 KiB page costs a TLB miss, a
 * nested page walk in a VM), and the GGUF mapping is whatever the page cache
 * holds -- here 340 of 515 MB of the F32 file in 2 MiB folios, the rest in
 * 4 KiB ones.  SmolLM2-135M decode, tokens per CPU-second, 1 thread, with and
 * without (INFERA_LLM_NO_HUGEPAGES=1) interleaved: F32 +4-13%, Q8_0 +17-23%,
 * Q4_0 +17-25% (3 rounds each, load 21-25).  The copy costs memory: the file's
 * pages stay in the page cache (clean, reclaimable) beside it, so matrices
 * are copied only when huge pages are available (transparent huge pages not
 * "never") and their bytes are at most a quarter of the physical memory;
 * otherwise they are read from the mapping as before.  INFERA_LLM_NO_HUGEPAGES=1
 * keeps every unpacked matrix on the mapping and the tiles in ordinary pages
 * (for comparisons).  The region is allocated through inf__aligned_alloc
 * (counted by the allocator statistics) and freed with the model.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#if defined(__linux__)
#include <sys/mman.h>
#include <unistd.h>
#endif

#include "llm/llm_int.h"

#define HUGE_PAGE ((size_t)2 << 20)

/* Transparent huge pages can back an madvise'd region: Linux with THP "always" or "madvise", not turned off. */
static bool hugepages_available(void) {
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    const char *off = getenv("INFERA_LLM_NO_HUGEPAGES");
    if (off && *off && strcmp(off, "0")) return false;
    FILE *f = fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r");
    if (!f) return false;
    char line[128] = "";
    bool ok = fgets(line, sizeof line, f) && !strstr(line, "[never]");
    fclose(f);
    return ok;
#else
    return false;
#endif
}

static size_t physical_memory(void) {
#if defined(__linux__)
    long pages = sysconf(_SC_PHYS_PAGES), size = sysconf(_SC_PAGESIZE);
    return pages > 0 && size > 0 ? (size_t)pages * (size_t)size : 0;
#else
    return 0;
#endif
}

typedef struct region_plan {
    uint8_t *base; /* NULL while sizing */
    size_t off, packed, copied;
    bool copy; /* copy the unpacked matrices */
} region_plan;

static size_t round64(size_t n) { return (n + 63) / 64 * 64; }

/* Places w: its tiles (when its kernels want them, repacked here) or, with copy, its rows. */
static void place(region_plan *p, inf__llm_weight *w) {
    const inf__llm_qtype *q = w->q;
    if (!q) return;
    if (q->pack && w->rows >= INF__LLM_TILE_ROWS) {
        int64_t tiles = w->rows / INF__LLM_TILE_ROWS;
        size_t tile_bytes = inf__llm_tile_bytes(q, w->cols), n = (size_t)tiles * tile_bytes;
        if (p->base) {
            w->tile_bytes = tile_bytes;
            w->packed = p->base + p->off;
            for (int64_t t = 0; t < tiles; t++)
                q->pack((const uint8_t *)w->data + (size_t)t * INF__LLM_TILE_ROWS * w->row_bytes, w->row_bytes, w->cols,
                        (uint8_t *)w->packed + (size_t)t * tile_bytes);
            w->packed_rows = tiles * INF__LLM_TILE_ROWS;
        }
        p->off += round64(n);
        p->packed += n;
        return; /* rows past the last whole tile stay on the mapping (a few rows) */
    }
    if (!p->copy) return;
    size_t n = (size_t)w->rows * w->row_bytes;
    if (p->base) {
        memcpy(p->base + p->off, w->data, n);
        w->data = p->base + p->off;
    }
    p->off += round64(n);
    p->copied += n;
}

/* The matrices in the order a forward pass reads them. */
static void place_all(region_plan *p, inf_llm_model *m) {
    for (int l = 0; l < m->info.n_layer; l++) {
        inf__llm_layer *y = &m->layers[l];
        inf__llm_weight *ws[] = {&y->wq, &y->wk, &y->wv, &y->wo, &y->w_gate, &y->w_up, &y->w_down};
        for (size_t i = 0; i < sizeof ws / sizeof ws[0]; i++)
            place(p, ws[i]);
    }
    place(p, &m->output); /* a tied head is its own copy of the embedding's weight: the lookups keep the mapping */
}

inf_status inf__llm_place_weights(inf_llm_model *m, inf_error *err) {
    bool huge = hugepages_available();
    region_plan p = {.copy = huge};
    place_all(&p, m);
    if (p.copy && p.copied > physical_memory() / 4) { /* too large to hold twice: read it from the mapping */
        p = (region_plan){.copy = false};
        place_all(&p, m);
    }
    if (p.off == 0) return INF_OK;
    size_t slack = huge ? HUGE_PAGE : 0;
    if (p.off > SIZE_MAX - slack)
        return inf_error_set(err, INF_ENOMEM, "%s: %zu bytes of weights do not fit the address space", m->info.path,
                             p.off);
    m->region = inf__aligned_alloc(p.off + slack);
    if (!m->region)
        return inf_error_set(err, INF_ENOMEM, "%s: no memory for %.1f MiB of repacked/copied weights", m->info.path,
                             (double)p.off / 1048576.0);
    uint8_t *base = m->region;
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    if (huge) { /* before the first touch, so that the faults take 2 MiB pages */
        base = (uint8_t *)(((uintptr_t)base + HUGE_PAGE - 1) & ~(uintptr_t)(HUGE_PAGE - 1));
        (void)madvise(base, p.off, MADV_HUGEPAGE);
    }
#endif
    p = (region_plan){.base = base, .copy = p.copy};
    place_all(&p, m);
    m->region_bytes = p.off;
    m->region_copied = p.copied;
    return INF_OK;
}
