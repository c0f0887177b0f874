/*
 * conv_rows_drive.h -- what the rows convolution's two widths share
 * (conv_rows_avx2.c, conv_rows_avx512.c): the job, one conv row of every
 * channel through the file's tile_any, the tasks over output rows, and the
 * driver -- the padded input pass by pass, then rows or, for a fused MaxPool
 * (g->pool), bands of pooled rows (inf__conv2d_pooled_rows,
 * conv_pool_bands.c) or the file's own pooled-row tasks.  Included by each file after RB, VB, KMAX, ROWS_LANES
 * (floats per vector) and min64; the file defines tile_any (its tile).
 */
#ifndef INF_OPS_X86_CONV_ROWS_DRIVE_H
#define INF_OPS_X86_CONV_ROWS_DRIVE_H

typedef struct rows_job {
    const inf__conv2d *g;
    inf__conv2d_input xg;
    const float *x; /* the pass's first image: padded buffer or X */
    const float *wp, *bias, *res;
    float *y; /* the pass's first image */
    int64_t kdim, npos, nblk;
    int64_t off[KMAX]; /* tap k's offset in a (padded) image of the group */
} rows_job;

/* R channels x V vectors (the last with `tail` valid lanes) at x0, W block w;
 * channel r stored at y + r * ys (res at res + r * npos): the file's tile. */
static void tile_any(int R, int V, const rows_job *J, const float *x0, const float *w, const float *bias,
                     const float *res, float *y, int64_t ys, int tail);

/* Conv row oy of image-group ng, every channel of the group: channel c at
 * y + c * ys (res, when not NULL, at the same position of Y's layout). */
static void conv_row(const rows_job *J, int64_t ng, int64_t oy, float *y, int64_t ys) {
    const inf__conv2d *g = J->g;
    int64_t n = ng / g->group, gi = ng % g->group;
    const float *xrow = J->x + (n * g->c + gi * g->cg) * J->xg.ph * J->xg.pw + oy * g->sh * J->xg.pw;
    int64_t row0 = gi * g->mg, rbase = (n * g->m + row0) * J->npos + oy * g->ow;
    for (int64_t b = 0; b < J->nblk; b++) {
        int R = (int)min64(RB, g->mg - b * RB);
        const float *w = J->wp + (gi * J->nblk + b) * J->kdim * RB;
        const float *bias = J->bias ? J->bias + row0 + b * RB : NULL;
        const float *res = J->res ? J->res + rbase + b * RB * J->npos : NULL;
        float *yb = y + b * RB * ys;
        for (int64_t ox = 0; ox < g->ow; ox += ROWS_LANES * VB) {
            int64_t cnt = min64(ROWS_LANES * VB, g->ow - ox);
            int V = (int)((cnt + ROWS_LANES - 1) / ROWS_LANES), tail = (int)(cnt - ROWS_LANES * (V - 1));
            tile_any(R, V, J, xrow + ox, w, bias, res ? res + ox : NULL, yb + ox, ys, tail);
        }
    }
}

/* The row function of the pooled store (inf__conv2d_pooled_rows). */
static void pooled_row(const void *job, int64_t ng, int64_t oy, float *dst, int64_t cstride) {
    conv_row(job, ng, oy, dst, cstride);
}

/* Tasks: output rows (image-group, oy). */
static void rows_tasks(void *arg, int64_t begin, int64_t end) {
    const rows_job *J = arg;
    const inf__conv2d *g = J->g;
    for (int64_t t = begin; t < end; t++) {
        int64_t ng = t / g->oh, oy = t % g->oh, n = ng / g->group, gi = ng % g->group;
        conv_row(J, ng, oy, J->y + (n * g->m + gi * g->mg) * J->npos + oy * g->ow, J->npos);
    }
}

/* The whole convolution (inf__conv2d_rows_f32_avx2 / _avx512's contract); pool2d: the file's MaxPool kernel;
 * pool_tasks: NULL, or the file's tasks over pooled rows (g->pool: the pooling in the tile's registers) that
 * replace the bands of inf__conv2d_pooled_rows. */
static void rows_run(inf__pool *pool, const inf__conv2d *g, const float *x, const float *wp, const float *bias,
                     const float *res, float *scratch, float *y, inf__pool2d_fn pool2d, inf__range_fn pool_tasks) {
    rows_job J = {.g = g,
                  .xg = inf__conv2d_input_geom(g),
                  .wp = wp,
                  .bias = bias,
                  .kdim = g->cg * g->kh * g->kw,
                  .npos = g->oh * g->ow,
                  .nblk = (g->mg + RB - 1) / RB};
    if (J.kdim <= 0 || J.kdim > KMAX || J.npos <= 0 || g->mg <= 0 || g->sw != 1)
        return;
    int64_t khw = g->kh * g->kw, plane = J.xg.ph * J.xg.pw;
    for (int64_t k = 0; k < J.kdim; k++)
        J.off[k] = k / khw * plane + k % khw / g->kw * g->dh * J.xg.pw + k % g->kw * g->dw;
    int64_t work = g->ow * g->mg * J.kdim; /* multiply-adds per task (a row) */
    bool pooled = g->pool != NULL;         /* res is NULL then; conv.c checked inf__conv2d_pooled_fits */
    int64_t ystep = pooled ? g->m * g->pool->oh * g->pool->ow : g->m * J.npos;
    for (int64_t n0 = 0; n0 < g->n; n0 += J.xg.per_pass) {
        int64_t imgs = min64(J.xg.per_pass, g->n - n0);
        J.x = inf__conv2d_input_pass(pool, g, &J.xg, x, n0, imgs, scratch);
        J.y = y + n0 * ystep;
        J.res = res ? res + n0 * g->m * J.npos : NULL;
        if (pooled && pool_tasks)
            inf__pool_range(pool, imgs * g->group * g->pool->oh, work >= 16384 ? 1 : 16384 / (2 * work + 1) + 1,
                            pool_tasks, &J);
        else if (pooled)
            inf__conv2d_pooled_rows(pool, g, imgs, &J, pooled_row, pool2d, J.y);
        else
            inf__pool_range(pool, imgs * g->group * g->oh, work >= 32768 ? 1 : 32768 / (work + 1) + 1, rows_tasks, &J);
    }
}

#endif /* INF_OPS_X86_CONV_ROWS_DRIVE_H */
