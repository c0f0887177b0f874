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

/* Unit u's image, channel rows [m0, m1) and positions [q0, q1). */
static inline void inf__pw_unit(const inf__pw_job *J, int64_t u, int64_t *n, int64_t *m0, int64_t *m1, int64_t *q0,
                                int64_t *q1) {
    int64_t mbk = (u / J->n_pg) % J->n_mb, pgk = u % J->n_pg;
    *n = u / (J->n_mb * J->n_pg);
    *m0 = mbk * J->mb, *m1 = J->g->m < *m0 + J->mb ? J->g->m : *m0 + J->mb;
    *q0 = pgk * J->pg, *q1 = J->npos < *q0 + J->pg ? J->npos : *q0 + J->pg;
}

#endif
