/*
 * tokenizer_merge.c -- the bigram-merge loop shared by SentencePiece and byte-level BPE.
 *
 * A word starts as one symbol per UTF-8 character (a linked list over an array).  Every adjacent
 * pair that may merge goes on a binary heap keyed by its priority: SPM uses the score of the joined
 * text (highest first, only if the text is a token), BPE the merge rank of the pair (lowest first);
 * ties go to the leftmost pair.  Popping a pair whose symbols changed since it was pushed (their
 * joined length no longer matches) skips it, as llama.cpp's queues do; a merge pushes the two new
 * neighbouring pairs.  The result is exactly llama.cpp's for the same vocabulary.
 */
#include <string.h>

#include "core/core.h"
#include "llm/tokenizer.h"

typedef struct {
    double key; /* smaller pops first */
    int32_t left, right, size;
} bigram;

typedef struct {
    bigram *items;
    size_t n, cap;
} bigram_heap;

static bool bigram_before(const bigram *a, const bigram *b) {
    return a->key < b->key || (a->key == b->key && a->left < b->left);
}

static inf_status heap_push(bigram_heap *h, bigram b) {
    if (h->n == h->cap) {
        size_t cap = h->cap ? h->cap * 2 : 64;
        bigram *items = inf__realloc(h->items, cap * sizeof *items);
        if (!items) return INF_ENOMEM;
        h->items = items;
        h->cap = cap;
    }
    size_t i = h->n++;
    while (i > 0) {
        size_t parent = (i - 1) / 2;
        if (!bigram_before(&b, &h->items[parent])) break;
        h->items[i] = h->items[parent];
        i = parent;
    }
    h->items[i] = b;
    return INF_OK;
}

static bigram heap_pop(bigram_heap *h) {
    bigram top = h->items[0];
    bigram last = h->items[--h->n];
    size_t i = 0;
    for (;;) {
        size_t child = 2 * i + 1;
        if (child >= h->n) break;
        if (child + 1 < h->n && bigram_before(&h->items[child + 1], &h->items[child])) child++;
        if (!bigram_before(&h->items[child], &last)) break;
        h->items[i] = h->items[child];
        i = child;
    }
    if (h->n > 0) h->items[i] = last;
    return top;
}

/* Priority of merging symbols l and r, or false when they may not merge. */
static bool pair_key(const inf_tokenizer *t, const char *word, const inf__tok_symbol *l, const inf__tok_symbol *r,
                     double *key) {
    if (t->model == INF__TOK_MODEL_SPM) {
        int32_t id = inf__tok_find(t, word + l->start, (size_t)l->n + (size_t)r->n);
        if (id < 0) return false;
        *key = -(double)t->scores[id];
        return true;
    }
    if (l->id < 0 || r->id < 0) return false;
    int32_t rank = inf__tok_merge_rank(t, l->id, r->id);
    if (rank < 0) return false;
    *key = (double)rank;
    return true;
}

static inf_status try_add_pair(const inf_tokenizer *t, const char *word, inf__tok_symbol *syms, int32_t left,
                               int32_t right, bigram_heap *h) {
    if (left < 0 || right < 0) return INF_OK;
    double key;
    if (!pair_key(t, word, &syms[left], &syms[right], &key)) return INF_OK;
    bigram b = {key, left, right, syms[left].n + syms[right].n};
    return heap_push(h, b);
}

inf_status inf__tok_merge_word(const inf_tokenizer *t, const char *word, size_t n, inf__tok_symbol **out,
                               int32_t *n_out, inf_error *err) {
    *out = NULL;
    *n_out = 0;
    if (n > (size_t)INT32_MAX / 2) return inf_error_set(err, INF_ERANGE, "tokenizer: text of %zu bytes is too long", n);
    inf__tok_symbol *syms = inf__malloc((n ? n : 1) * sizeof *syms);
    if (!syms) return inf_error_set(err, INF_ENOMEM, "tokenizer: no memory for %zu symbols", n);
    int32_t count = 0;
    for (size_t off = 0; off < n;) {
        size_t len = inf__utf8_len((unsigned char)word[off]);
        if (len > n - off) len = n - off;
        syms[count].start = (int32_t)off;
        syms[count].n = (int32_t)len;
        syms[count].prev = count - 1;
        off += len;
        syms[count].next = off == n ? -1 : count + 1;
        syms[count].id = inf__tok_find(t, word + syms[count].start, len);
        count++;
    }
    bigram_heap h = {0};
    inf_status st = INF_OK;
    for (int32_t i = 1; i < count && st == INF_OK; i++) st = try_add_pair(t, word, syms, i - 1, i, &h);
    while (st == INF_OK && h.n > 0) {
        bigram b = heap_pop(&h);
        inf__tok_symbol *l = &syms[b.left], *r = &syms[b.right];
        if (l->n == 0 || r->n == 0 || l->n + r->n != b.size) continue; /* stale */
        l->n += r->n;
        r->n = 0;
        l->next = r->next;
        if (r->next >= 0) syms[r->next].prev = b.left;
        l->id = inf__tok_find(t, word + l->start, (size_t)l->n);
        st = try_add_pair(t, word, syms, l->prev, b.left, &h);
        if (st == INF_OK) st = try_add_pair(t, word, syms, b.left, l->next, &h);
    }
    inf__free(h.items);
    if (st != INF_OK) {
        inf__free(syms);
        return inf_error_set(err, st, "tokenizer: no memory for the merge queue");
    }
    *out = syms;
    *n_out = count;
    return INF_OK;
}
