/*
 * arena.c -- bump allocation for objects that live and die together.
 *
 * A model's IR (names, nodes, attributes, shapes) is built in one arena and
 * released by one call, as ggml_context does.  Blocks grow geometrically; a
 * request larger than the block size gets a block of its own.  Memory is
 * zeroed and 16-byte aligned.
 */
#include <string.h>

#include "core/core.h"

/* A request this large (a weight packed at load) is faulted in with one call. */
#define ARENA_PREFAULT_BYTES ((size_t)256 << 10)

struct inf__arena_block {
    inf__arena_block *next;
    size_t size;
    size_t used;
    _Alignas(16) unsigned char data[];
};

void inf__arena_init(inf__arena *a, size_t block_size) {
    a->head = NULL;
    a->block_size = block_size ? block_size : 16384;
    a->bytes_used = 0;
}

void *inf__arena_alloc(inf__arena *a, size_t size) {
    size = (size + 15) & ~(size_t)15;
    if (size == 0) size = 16;
    inf__arena_block *b = a->head;
    if (!b || b->size - b->used < size) {
        size_t bsize = size > a->block_size ? size : a->block_size;
        b = inf__malloc(sizeof *b + bsize);
        if (!b) return NULL;
        b->size = bsize;
        b->used = 0;
        b->next = a->head;
        a->head = b;
        if (a->block_size < (1u << 20)) a->block_size *= 2;
    }
    void *p = b->data + b->used;
    b->used += size;
    a->bytes_used += size;
    if (size >= ARENA_PREFAULT_BYTES) inf__prefault(p, size); /* just what the memset touches */
    memset(p, 0, size);
    return p;
}

char *inf__arena_strndup(inf__arena *a, const char *s, size_t n) {
    char *d = inf__arena_alloc(a, n + 1);
    if (!d) return NULL;
    if (n) memcpy(d, s, n); /* s may be NULL when n is 0 */
    d[n] = 0;
    return d;
}

char *inf__arena_strdup(inf__arena *a, const char *s) {
    return inf__arena_strndup(a, s ? s : "", s ? strlen(s) : 0);
}

void inf__arena_deinit(inf__arena *a) {
    inf__arena_block *b = a->head;
    while (b) {
        inf__arena_block *next = b->next;
        inf__free(b);
        b = next;
    }
    a->head = NULL;
    a->bytes_used = 0;
}
