/*
 * conv_test_main.h -- what the convolution kernel tests (test_conv_avx2.c,
 * test_depthwise.c, test_pointwise.c) share: the fused activation as the
 * session's Relu / Clip pass applies it, the output size of a random shape,
 * the loop that runs a test's cases on pools of 1, 2 and 3 threads, the skip on
 * a CPU without AVX2/FMA, and the main of a build for another architecture.
 * Each test keeps its own cases, references and pass / fail counts.
 */
#ifndef INF_TESTS_CONV_TEST_MAIN_H
#define INF_TESTS_CONV_TEST_MAIN_H

#include <math.h>
#include <stdbool.h>
#include <stdio.h>

#include "core/core.h"
#include "ops/ops.h"
#include "ops/vmath.h"

/* main for a build without the AVX2 kernels: nothing to test. */
#define CONV_TEST_NOT_X86_MAIN                           \
    int main(void) {                                     \
        printf("0 passed, 0 failed (not x86-64)\n");    \
        return 77; /* ctest SKIP_RETURN_CODE */          \
    }

#if defined(__x86_64__)

/* v after g's activation (none, ReLU or Clip to [lo, hi]). */
static inline float conv_test_act(const inf__conv2d *g, float v) {
    if (g->act == INF_EPILOGUE_RELU) return v > 0 ? v : 0;
    if (g->act == INF_EPILOGUE_CLIP) return v < g->lo ? g->lo : v > g->hi ? g->hi : v;
    if (g->act == INF_EPILOGUE_SILU) { /* as the epilogue pass: the vector table's sigmoid, then a multiply */
        float s;
        inf__vmath_best()->sigmoid(&v, &s, 1);
        return v * s;
    }
    return v;
}

/* g's output size (oh, ow) from its input, kernel, strides, dilations and
 * pads: pt and pl as set in g, pb and pr the bottom and right ones.  False,
 * leaving oh and ow, when the kernel is larger than the padded input (the
 * random-shape tests then draw again). */
static inline bool conv_test_out_size(inf__conv2d *g, int64_t pb, int64_t pr) {
    int64_t sh = g->ih + g->pt + pb - ((g->kh - 1) * g->dh + 1), sw = g->iw + g->pl + pr - ((g->kw - 1) * g->dw + 1);
    if (sh < 0 || sw < 0) return false;
    g->oh = sh / g->sh + 1, g->ow = sw / g->sw + 1;
    return true;
}

/* Runs cases(pool) on a pool of 1 thread, then of 2, then of 3 (tasks cut
 * into unequal shares; the direct kernel's tasks in position-major order,
 * conv_direct_avx512.c).  Returns 0 when all
 * ran (the test then prints and judges its counts), 1 when a pool could not
 * be made, and -1 (printing "0 passed, 0 failed") on a CPU without AVX2/FMA:
 * the test then exits 77 (ctest SKIP_RETURN_CODE). */
static inline int conv_test_on_pools(void (*cases)(inf__pool *pool)) {
    if (!inf__cpu_has_avx2_fma()) {
        printf("0 passed, 0 failed (no AVX2/FMA)\n");
        return -1;
    }
    for (int threads = 1; threads <= 3; threads++) {
        inf__pool *pool = NULL;
        if (inf__pool_new(threads, &pool) != INF_OK) {
            printf("cannot create a pool of %d threads\n", threads);
            return 1;
        }
        cases(pool);
        inf__pool_free(pool);
    }
    return 0;
}

/* The whole of a test's main after its own checks: cases on both pools,
 * then "N passed, M failed"; the exit status. */
static inline int conv_test_main(void (*cases)(inf__pool *pool), const int *n_passed, const int *n_failed) {
    int st = conv_test_on_pools(cases);
    if (st) return st < 0 ? 77 : st; /* 77: no AVX2/FMA, nothing ran (ctest SKIP_RETURN_CODE) */
    printf("%d passed, %d failed\n", *n_passed, *n_failed);
    return *n_failed ? 1 : 0;
}

#endif /* __x86_64__ */
#endif /* INF_TESTS_CONV_TEST_MAIN_H */
