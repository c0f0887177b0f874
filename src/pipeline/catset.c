/*
 * catset.c -- the lookup structure of a list of categories (an input's
 * allowed values, a one_hot / ordinal transform's columns).
 *
 * Specs can list hundreds of thousands of categories.  Checking them for
 * duplicates pairwise took 3.6 s for 40,000 and over 30 s for 200,000, and a
 * scored value was looked up by a linear scan.  Here a category list gets,
 * once, an open-addressing hash of its texts (duplicates found while
 * inserting) and an index of its numeric values sorted by value (binary
 * search; equal values keep the lowest index, as the first match of a scan
 * did).  Building is O(n log n), a lookup O(1) for text, O(log n) for a
 * number.  The texts and numbers stay owned by the caller.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "pipeline/pipeline_int.h"

void inf__catset_free(inf__catset *s) {
    free(s->hash);
    free(s->by_num);
    memset(s, 0, sizeof *s);
}

static uint32_t text_len(const char *const *texts, const uint32_t *lens, int c) {
    return lens ? lens[c] : (uint32_t)strlen(texts[c]);
}

typedef struct num_entry {
    double value;
    int index;
} num_entry;

static int by_value_then_index(const void *a, const void *b) {
    const num_entry *x = a, *y = b;
    if (x->value != y->value) return x->value < y->value ? -1 : 1;
    return (x->index > y->index) - (x->index < y->index);
}

int inf__catset_build(inf__catset *s, const char *const *texts, const uint32_t *lens, const double *nums, int n,
                      int *duplicate) {
    memset(s, 0, sizeof *s);
    *duplicate = -1;
    int size = 8;
    while (size < n * 2) size *= 2;
    s->hash = calloc((size_t)size, sizeof *s->hash);
    if (!s->hash) return -1;
    s->hash_size = size;
    for (int c = 0; c < n; c++) {
        uint32_t len = text_len(texts, lens, c);
        uint32_t h = (uint32_t)inf_pipeline_hash_string(texts[c], len) & (uint32_t)(size - 1);
        for (; s->hash[h]; h = (h + 1) & (uint32_t)(size - 1)) {
            int k = s->hash[h] - 1;
            if (*duplicate < 0 && text_len(texts, lens, k) == len && !memcmp(texts[k], texts[c], len)) *duplicate = c;
        }
        s->hash[h] = c + 1;
    }
    if (!nums) return 0;
    s->by_num = malloc((size_t)(n ? n : 1) * sizeof *s->by_num);
    num_entry *entries = malloc((size_t)(n ? n : 1) * sizeof *entries);
    if (!s->by_num || !entries) {
        free(entries);
        inf__catset_free(s);
        return -1;
    }
    for (int c = 0; c < n; c++)
        if (!isnan(nums[c])) entries[s->n_num++] = (num_entry){nums[c], c};
    qsort(entries, (size_t)s->n_num, sizeof *entries, by_value_then_index);
    for (int k = 0; k < s->n_num; k++) s->by_num[k] = entries[k].index;
    free(entries);
    return 0;
}

int inf__catset_find_text(const inf__catset *s, const char *const *texts, const uint32_t *lens, const char *text,
                          uint32_t len) {
    if (!s->hash_size) return -1;
    uint32_t mask = (uint32_t)s->hash_size - 1;
    for (uint32_t h = (uint32_t)inf_pipeline_hash_string(text, len) & mask;; h = (h + 1) & mask) {
        int c = s->hash[h];
        if (!c) return -1;
        if (text_len(texts, lens, c - 1) == len && !memcmp(texts[c - 1], text, len)) return c - 1;
    }
}

int inf__catset_find_number(const inf__catset *s, const double *nums, double v) {
    if (isnan(v)) return -1;
    int lo = 0, hi = s->n_num;
    while (lo < hi) { /* first position whose value is >= v */
        int mid = lo + (hi - lo) / 2;
        if (nums[s->by_num[mid]] < v) lo = mid + 1;
        else hi = mid;
    }
    return lo < s->n_num && nums[s->by_num[lo]] == v ? s->by_num[lo] : -1;
}
