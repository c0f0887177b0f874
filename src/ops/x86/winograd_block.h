/*
 * winograd_block.h -- the Winograd convolution's block and slot drivers
 * (conv_winograd_avx2.c), written once for both widths:
 * conv_winograd_avx2.c (8 channels a ymm) and conv_winograd_avx512.c (16 a
 * zmm) include it after their file-local per-width stages
 *     stage_row(J, n, ty, xs)                    a tile row's input rows, channel-last
 *     input_tile(G, xs, tx, v, t)                B^T d B of one tile (stride 1)
 *     input_tile_s2, output_tile_s2              the stride-2 ones (winograd_s2_tile.h)
 *     output_tile(G, mm, ldm, t, os, tx)         A^T M A of one tile (stride 1)
 *     store_row(J, orow, n, oy)                  an output row back into Y
 * The GEMMs between them are the same calls at both widths.
 */
#ifndef INF_OPS_X86_WINOGRAD_BLOCK_H
#define INF_OPS_X86_WINOGRAD_BLOCK_H

/* Prefetch into L2 rows [lo, hi) (clamped to [0, h)) of w floats of the
 * planes [base, base + planes * h * w).  The kernel reads X and writes Y
 * (and reads the residual) a short row of each of C or K planes at a time,
 * too little and too far apart for the hardware prefetchers: from L3
 * (batch 64) the staging waited on every 16-row group's first load (perf,
 * bench/RESULTS.md "Session 23, Winograd input staging").  Inlined: GCC
 * takes a function that only prefetches for one without effects and drops
 * its calls. */
static inline __attribute__((always_inline)) void prefetch_rows(const float *base, int64_t planes, int64_t h, int64_t w,
                                                                int64_t lo, int64_t hi) {
    lo = max64(lo, 0), hi = min64(hi, h);
    for (int64_t c = 0; c < planes; c++)
        for (int64_t y = lo; y < hi; y++) {
            const char *p = (const char *)(base + (c * h + y) * w), *end = p + w * (int64_t)sizeof(float);
            for (p = (const char *)((uintptr_t)p & ~(uintptr_t)63); p < end; p += 64)
                _mm_prefetch(p, _MM_HINT_T1);
        }
}

/* Rows [lo, hi) of one image's planes x h x w floats at base, channels
 * first (prefetch_rows) or channels last (one span of rows x w x planes). */
static inline __attribute__((always_inline)) void prefetch_band(const float *base, bool channels_last, int64_t planes,
                                                                int64_t h, int64_t w, int64_t lo, int64_t hi) {
    if (!channels_last) {
        prefetch_rows(base, planes, h, w, lo, hi);
        return;
    }
    prefetch_rows(base, 1, h, w * planes, lo, hi);
}

/* Whether the rows are worth prefetching: X or Y beyond L2 (from L3; in L2
 * the prefetches only cost). */
static inline bool wino_prefetch_pays(const inf__conv2d *g) {
    inf__blocking bl;
    inf__blocking_get(&bl);
    int64_t x = g->n * g->c * g->ih * g->iw, y = g->n * g->m * g->oh * g->ow;
    return max64(x, y) * (int64_t)sizeof(float) > bl.winograd_prefetch_bytes;
}

/* The input rows tile row `row` (of G->rows) stages that tile row row - 1
 * did not. */
static inline __attribute__((always_inline)) void prefetch_input(const wino_job *J, int64_t row) {
    const inf__conv2d *g = J->g;
    const wino_geom *G = &J->G;
    if (!J->prefetch || row >= G->rows)
        return;
    int64_t n = row / G->tiles_y, ty = row % G->tiles_y, step = G->m * G->s, y0 = ty * step - g->pt;
    prefetch_band(J->x + n * g->c * g->ih * g->iw, g->nhwc & INF_NHWC_X, g->c, g->ih, g->iw,
                  y0 + (ty > 0 ? G->a - step : 0), y0 + G->a);
}

/* The output rows of tile row `row`: Y's (written) and the residual's. */
static inline __attribute__((always_inline)) void prefetch_output(const wino_job *J, int64_t row) {
    const inf__conv2d *g = J->g;
    const wino_geom *G = &J->G;
    if (!J->prefetch || row >= G->rows)
        return;
    int64_t n = row / G->tiles_y, ty = row % G->tiles_y, at = n * g->m * g->oh * g->ow;
    prefetch_band(J->y + at, g->nhwc & INF_NHWC_Y, g->m, g->oh, g->ow, ty * G->m, ty * G->m + G->m);
    if (J->res)
        prefetch_band(J->res + at, g->nhwc & INF_NHWC_RES, g->m, g->oh, g->ow, ty * G->m, ty * G->m + G->m);
}

/* Tile rows [b * rpb, ...) through input transform, GEMMs, output
 * transform; buf is the slot's scratch. */
static void run_block(const wino_job *J, int64_t b, float *buf) {
    const inf__conv2d *g = J->g;
    const wino_geom *G = &J->G;
    float *xs = buf, *v = xs + G->xs_floats, *mm = v + G->v_floats, *os = mm + G->m_floats;
    int64_t r0 = b * G->rpb, nr = min64(G->rpb, G->rows - r0), T = nr * G->tiles_x;
    bool s2 = G->s == 2;
    int64_t pos[S2_A * S2_A], ld[S2_A * S2_A];
    if (s2)
        s2_v_layout(G->cp, T, pos, ld);
    for (int64_t r = 0; r < nr; r++) {
        stage_row(J, (r0 + r) / G->tiles_y, (r0 + r) % G->tiles_y, xs);
        prefetch_input(J, r0 + r + 1);
        for (int64_t tx = 0; tx < G->tiles_x; tx++)
            if (s2)
                input_tile_s2(G, xs, tx, v, r * G->tiles_x + tx, pos, ld);
            else
                input_tile(G, xs, tx, v, r * G->tiles_x + tx);
    }
    prefetch_output(J, r0);
    if (s2)
        wino_s2_gemms(J, v, mm, T);
    else
        for (int e = 0; e < G->ne; e++)
            inf__ops_sgemm_packed_avx2(NULL, false, T, g->m, g->c, 1.0f, v + e * G->tmax * G->ldv, G->ldv,
                                       J->up + e * J->u_floats, 0.0f, mm + e * G->tmax * g->m, g->m);
    for (int64_t r = 0; r < nr; r++) {
        int64_t n = (r0 + r) / G->tiles_y, ty = (r0 + r) % G->tiles_y;
        if (r + 1 < nr)
            prefetch_output(J, r0 + r + 1);
        for (int64_t tx = 0; tx < G->tiles_x; tx++)
            if (s2)
                output_tile_s2(G, mm, g->m, r * G->tiles_x + tx, T, os, tx);
            else
                output_tile(G, mm, g->m, r * G->tiles_x + tx, os, tx);
        for (int64_t i = 0; i < G->m && ty * G->m + i < g->oh; i++)
            store_row(J, os + i * G->wo * G->kp, n, ty * G->m + i);
    }
}

/* Slots [begin, end): slot s runs its band of blocks (wino_slot_block) in
 * its own scratch: the pool's persistent one for the slot (stays on the
 * slot's core: the bench CNN's 64- and 128-channel layers at batch 1, 2
 * threads, no shared L3, -10 to -30%), else its part of the session's. */
static void slot_tasks(void *arg, int64_t begin, int64_t end) {
    const wino_job *J = arg;
    for (int64_t s = begin; s < end; s++) {
        float *buf = inf__pool_slot_workspace(J->pool, (int)s, (size_t)J->G.slot_floats * sizeof(float));
        if (!buf)
            buf = J->scratch + s * J->G.slot_floats;
        for (int64_t b = wino_slot_block(&J->G, s); b < wino_slot_block(&J->G, s + 1); b++)
            run_block(J, b, buf);
    }
}

#endif /* INF_OPS_X86_WINOGRAD_BLOCK_H */
