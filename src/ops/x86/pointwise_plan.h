/*
 * pointwise_plan.h -- how the 1x1 convolution kernels (pointwise_avx2.c,
 * pointwise_avx512.c) cut their work into pool units: one plan for both
 * widths, parameterised by the strip (positions a tile row covers).
 */
#ifndef INF_OPS_X86_POINTWISE_PLAN_H
#define INF_OPS_X86_POINTWISE_PLAN_H

#include "ops/ops.h"

typedef struct inf__pw_job {
    const inf__conv2d *g;
    const float *x, *w, *bias, *res;
    float *y;
    int64_t npos, mb, pg, n_mb, n_pg; /* rows a block, positions a group; blocks, groups an image */
} inf__pw_job;

/* Units: unit u is image u / (n_mb n_pg), channel block (u / n_pg) % n_mb,
 * position group u % n_pg.  Channel blocks of inf__blocking's
 * pointwise_w_floats floats of W (128 KiB from 512 KiB of L2 up: stays in
 * L2; at least 24 rows), then, with more than one thread and fewer than 8
 * units a thread, position groups (whole strips of `strip` positions), then
 * narrower channel blocks (multiples of 12 rows, at least 12). */
static inline void inf__pw_plan(inf__pw_job *J, int64_t threads, int64_t strip) {
    const inf__conv2d *g = J->g;
    int64_t strips = (J->npos + strip - 1) / strip, want = 8 * threads, have;
    inf__blocking bl;
    inf__blocking_get(&bl);
    J->mb = bl.pointwise_w_floats / g->c / 12 * 12;
    if (J->mb < 24) J->mb = 24;
    if (J->mb > g->m) J->mb = g->m;
    J->n_mb = (g->m + J->mb - 1) / J->mb;
    J->pg = J->npos, J->n_pg = 1;
    have = g->n * J->n_mb;
    if (threads < 2 || have >= want) return;
    int64_t groups = strips < (want + have - 1) / have ? strips : (want + have - 1) / have;
    J->pg = (strips + groups - 1) / groups * strip;
    J->n_pg = (J->npos + J->pg - 1) / J->pg;
    have *= J->n_pg;
    if (have >= want) return;
    int64_t blocks = (want + g->n * J->n_pg - 1) / (g->n * J->n_pg), mb = (g->m + blocks - 1) / blocks;
    mb = (mb + 11) / 12 * 12;
    if (mb < 12) mb = 12;
    if (mb < J->mb) J->mb = mb, J->n_mb = (g->m + mb - 1) / mb;
}

/* A kernel's work on one strip: rows [m0, m1) x positions [j, j + cols) of
 * image n, input channels [k0, k0 + kc), with buf its strip buffer. */
typedef void (*inf__pw_strip_fn)(const inf__pw_job *J, int64_t n, int64_t m0, int64_t m1, int64_t j, int64_t cols,
                                 int64_t k0, int64_t kc, float *buf);

/* Units [begin, end) of the plan: each unit's image, channel rows and
 * positions, strip after strip of `strip` positions, each in blocks of kc_max
 * input channels (inlined into each kernel with its own strip function). */
static inline __attribute__((always_inline)) void inf__pw_walk(const inf__pw_job *J, int64_t begin, int64_t end,
                                                               int64_t strip, int64_t kc_max, inf__pw_strip_fn run,
                                                               float *buf) {
    const inf__conv2d *g = J->g;
    for (int64_t u = begin; u < end; u++) {
        int64_t mbk = (u / J->n_pg) % J->n_mb, pgk = u % J->n_pg, n = u / (J->n_mb * J->n_pg);
        int64_t m0 = mbk * J->mb, m1 = g->m < m0 + J->mb ? g->m : m0 + J->mb;
        int64_t q0 = pgk * J->pg, q1 = J->npos < q0 + J->pg ? J->npos : q0 + J->pg;
        for (int64_t j = q0; j < q1; j += strip)
            for (int64_t k0 = 0; k0 < g->c; k0 += kc_max)
                run(J, n, m0, m1, j, q1 - j < strip ? q1 - j : strip, k0, g->c - k0 < kc_max ? g->c - k0 : kc_max, buf);
    }
}

/* The whole convolution: the plan for strips of `strip` positions, then its
 * units on the pool through the kernel's units function (which walks them
 * with inf__pw_walk). */
static inline void inf__pw_run(inf__pool *pool, const inf__conv2d *g, const float *x, const float *w,
                               const float *bias, const float *res, float *y, int64_t strip,
                               void (*units)(void *job, int64_t begin, int64_t end)) {
    int64_t npos = g->oh * g->ow;
    if (npos < 1 || g->m < 1 || g->n < 1 || g->c < 1) return;
    inf__pw_job J = {.g = g, .x = x, .w = w, .bias = bias, .res = res, .y = y, .npos = npos};
    inf__pw_plan(&J, inf__pool_size(pool), strip);
    inf__pool_range(pool, g->n * J.n_mb * J.n_pg, 1, units, &J);
}

#endif
