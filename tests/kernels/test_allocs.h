/*
 * test_allocs.h -- the kernel tests' buffers of one case, allocated, checked
 * and freed as a set, so a test states only their sizes:
 *
 *     test_allocs A = {0};
 *     float *x = test_alloc(&A, nx * sizeof *x), *y = test_alloc_aligned(&A, 32, ny_bytes);
 *     if (test_allocs_failed(&A, idx)) { n_failed++; goto done; }   // printed "case idx: out of memory"
 *     ...
 *   done:
 *     test_allocs_free(&A);
 *
 * Each buffer is an allocation of its own (malloc, or aligned_alloc with the
 * size the caller gives, which C11 wants a multiple of the alignment), so
 * ASan still sees an overrun of any one of them.  A NULL from the allocator
 * marks the set failed; so does a set fuller than TEST_ALLOCS_MAX (that
 * buffer is freed at once and NULL returned).  Used by test_conv.c,
 * test_conv_winograd.c, test_conv_avx2.c, test_depthwise.c and
 * test_pointwise.c.
 */
#ifndef INF_TESTS_TEST_ALLOCS_H
#define INF_TESTS_TEST_ALLOCS_H

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#define TEST_ALLOCS_MAX 24

typedef struct test_allocs {
    void *p[TEST_ALLOCS_MAX]; /* owned: what test_allocs_free frees */
    int n;
    bool failed; /* an allocation returned NULL, or the set was full */
} test_allocs;

/* p (NULL or just allocated) taken into a's set; p, or NULL when a is full. */
static inline void *test_allocs_keep(test_allocs *a, void *p) {
    if (p && a->n == TEST_ALLOCS_MAX) {
        free(p);
        p = NULL;
    }
    if (!p) {
        a->failed = true;
        return NULL;
    }
    a->p[a->n++] = p;
    return p;
}

/* malloc(bytes), owned by a. */
static inline void *test_alloc(test_allocs *a, size_t bytes) { return test_allocs_keep(a, malloc(bytes)); }

/* aligned_alloc(align, bytes), owned by a. */
static inline void *test_alloc_aligned(test_allocs *a, size_t align, size_t bytes) {
    return test_allocs_keep(a, aligned_alloc(align, bytes));
}

/* Whether any of a's allocations failed; if so, prints "case idx: out of
 * memory". */
static inline bool test_allocs_failed(const test_allocs *a, int idx) {
    if (a->failed) printf("case %d: out of memory\n", idx);
    return a->failed;
}

/* Frees every buffer of a; a is empty (and not failed) again. */
static inline void test_allocs_free(test_allocs *a) {
    for (int i = 0; i < a->n; i++) free(a->p[i]);
    a->n = 0;
    a->failed = false;
}

#endif /* INF_TESTS_TEST_ALLOCS_H */
