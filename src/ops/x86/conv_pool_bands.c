/*
 * conv_pool_bands.c -- a Conv's output pooled before it is stored
 * (ConvMaxPool: graph/passes/conv_pool.c): the driver the rows kernels
 * (conv_rows_avx2.c, conv_rows_avx512.c) hand their row computation to when
 * g->pool is set (but for the AVX-512 kernel's 2x2/2 windows, which it
 * pools in registers).
 *
 * DESIGN: a task is a band of pooled output rows of one image and group.
 * It computes the conv rows the band's windows read -- every channel of the
 * group, bias and activation applied, through the kernel's row function --
 * into a buffer on its stack ([channel][row][ow], BAND_FLOATS floats: the
 * bench CNN's stem, 32 channels x 64 columns, holds 4 rows), then pools
 * each channel's rows into Y with the MaxPool kernel (pool2d: a band is
 * the same pool on a shorter input, no top padding).  So the full-size
 * conv output is never written nor read again, and at 2+ threads the
 * MaxPool's own job and its join are gone.  Windows that overlap (3x3/2)
 * share rows between bands: a task keeps the rows the next band of its
 * range reads again (moved to the buffer's top) instead of computing them
 * twice.
 * Bits: each conv row is the kernel's usual store (one FMA chain, + bias,
 * the activation), and max is exact and order-free (pool_avx2.c), so Y is
 * bit for bit the Conv followed by the MaxPool.
 */
#if defined(__x86_64__)

#include <string.h>

#include "ops/ops.h"

enum { BAND_FLOATS = 8192 }; /* 32 KiB of stack a task: in L1 with the rows kernel's inputs */

static inline int64_t min64(int64_t a, int64_t b) {
    return a < b ? a : b;
}

/* Conv rows the buffer holds per channel. */
static int64_t rows_cap(const inf__conv2d *g) {
    return BAND_FLOATS / (g->mg * g->ow);
}

bool inf__conv2d_pooled_fits(const inf__conv2d *g) {
    const inf__conv2d_maxpool *p = g->pool;
    return p && g->mg > 0 && g->ow > 0 && p->kh >= 1 && p->kw >= 1 && p->sh >= 1 && p->sw >= 1 && p->oh >= 1 &&
           p->ow >= 1 && (p->oh - 1) * p->sh + p->kh <= g->oh && (p->ow - 1) * p->sw + p->kw <= g->ow &&
           g->mg * g->ow <= BAND_FLOATS && rows_cap(g) >= p->kh && g->ow <= INF_POOL2D_MAX_W;
}

typedef struct band_job {
    const inf__conv2d *g;
    const void *job;
    inf__conv2d_row_fn row;
    inf__pool2d_fn pool2d;
    float *y;             /* the pass's first image, pooled */
    int64_t band, nbands; /* pooled rows per task, tasks per image-group */
    int64_t cap;          /* conv rows per channel in the buffer */
} band_job;

/* Tasks [begin, end): band (t % nbands) of image-group t / nbands. */
static void band_tasks(void *arg, int64_t begin, int64_t end) {
    const band_job *B = arg;
    const inf__conv2d *g = B->g;
    const inf__conv2d_maxpool *p = g->pool;
    _Alignas(64) float buf[BAND_FLOATS];
    int64_t cs = B->cap * g->ow;                /* a channel's rows in buf */
    int64_t have_ng = -1, have0 = 0, have1 = 0; /* conv rows [have0, have1) of have_ng are in buf */
    for (int64_t t = begin; t < end; t++) {
        int64_t ng = t / B->nbands, py0 = t % B->nbands * B->band, py1 = min64(py0 + B->band, p->oh);
        int64_t r0 = py0 * p->sh, r1 = (py1 - 1) * p->sh + p->kh, from = r0;
        if (ng == have_ng && r0 < have1 && r0 >= have0) { /* the rows this band shares with the last one */
            from = have1;
            if (r0 > have0)
                for (int64_t c = 0; c < g->mg; c++)
                    memmove(buf + c * cs, buf + c * cs + (r0 - have0) * g->ow,
                            (size_t)((have1 - r0) * g->ow) * sizeof(float));
        }
        for (int64_t oy = from; oy < r1; oy++)
            B->row(B->job, ng, oy, buf + (oy - r0) * g->ow, cs);
        have_ng = ng, have0 = r0, have1 = r1;
        inf__pool2d q = {.ih = r1 - r0,
                         .iw = g->ow,
                         .oh = py1 - py0,
                         .ow = p->ow,
                         .kh = p->kh,
                         .kw = p->kw,
                         .sh = p->sh,
                         .sw = p->sw,
                         .max = true,
                         .xplane = cs,
                         .yplane = p->oh * p->ow};
        int64_t plane0 = ng / g->group * g->m + ng % g->group * g->mg; /* every channel of the group in one call */
        B->pool2d(&q, buf, B->y + (plane0 * p->oh + py0) * p->ow, g->mg);
    }
}

void inf__conv2d_pooled_rows(inf__pool *pool, const inf__conv2d *g, int64_t imgs, const void *job,
                             inf__conv2d_row_fn row, inf__pool2d_fn pool2d, float *y) {
    const inf__conv2d_maxpool *p = g->pool;
    band_job B = {.g = g, .job = job, .row = row, .pool2d = pool2d, .y = y, .cap = rows_cap(g)};
    B.band = (B.cap - p->kh) / p->sh + 1; /* the most pooled rows whose windows fit the buffer */
    B.band = B.band < 1 ? 1 : min64(B.band, p->oh);
    B.nbands = (p->oh + B.band - 1) / B.band;
    int64_t kdim = g->cg * g->kh * g->kw;
    int64_t work = B.band * p->sh * g->ow * g->mg * kdim; /* multiply-adds per task, about */
    inf__pool_range(pool, imgs * g->group * B.nbands, work >= 32768 ? 1 : 32768 / (work + 1) + 1, band_tasks, &B);
}

#endif /* x86-64 */
