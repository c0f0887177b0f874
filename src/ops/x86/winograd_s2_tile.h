/*
 * winograd_s2_tile.h -- the stride-2 Winograd's per-tile transforms
 * (INF_WINOGRAD_S2, winograd_geom.h), written once for both widths:
 * conv_winograd_avx2.c (8 channels a ymm) and conv_winograd_avx512.c (16 a
 * zmm, a masked last group) include it after defining
 *     S2_VEC             the vector type
 *     S2_LANES           its floats
 *     S2_MASK_T          the type of a lane mask, S2_LANES_OF(n) the first n lanes
 *     S2_LOAD(k, p)      a load of the lanes in k (the others zero)
 *     S2_STORE(p, k, v)  a store of the lanes in k
 *     S2_ADD, S2_SUB     lane-wise + and -
 * Both widths do the same adds and subs per lane, so they give the same bits.
 */
#ifndef INF_OPS_X86_WINOGRAD_S2_TILE_H
#define INF_OPS_X86_WINOGRAD_S2_TILE_H

/* The tile at column tx, t of T, into V (pos, ld: s2_v_layout), S2_LANES
 * channels at a time.  One dimension: d0 - d2, d2, d4 - d2, d1, d3. */
static void input_tile_s2(const wino_geom *G, const float *xs, int64_t tx, float *v, int64_t t, const int64_t *pos,
                          const int64_t *ld) {
    float *dst[S2_A][S2_A];
    for (int i = 0; i < S2_A; i++)
        for (int j = 0; j < S2_A; j++)
            dst[i][j] = v + pos[i * S2_A + j] + t * ld[i * S2_A + j];
    for (int64_t c0 = 0; c0 < G->cp; c0 += S2_LANES) {
        S2_MASK_T k = S2_LANES_OF(G->cp - c0);
        S2_VEC d[S2_A][S2_A], u[S2_A][S2_A];
        const float *p = xs + tx * 4 * G->cp + c0;
        for (int i = 0; i < S2_A; i++)
            for (int j = 0; j < S2_A; j++)
                d[i][j] = S2_LOAD(k, p + (i * G->pw + j) * G->cp);
        for (int i = 0; i < S2_A; i++) {
            u[i][0] = S2_SUB(d[i][0], d[i][2]), u[i][1] = d[i][2], u[i][2] = S2_SUB(d[i][4], d[i][2]);
            u[i][3] = d[i][1], u[i][4] = d[i][3];
        }
        for (int j = 0; j < S2_A; j++) {
            d[0][j] = S2_SUB(u[0][j], u[2][j]), d[1][j] = u[2][j], d[2][j] = S2_SUB(u[4][j], u[2][j]);
            d[3][j] = u[1][j], d[4][j] = u[3][j];
        }
#pragma GCC unroll 5
        for (int i = 0; i < S2_A; i++)
#pragma GCC unroll 5
            for (int j = 0; j < S2_A; j++)
                S2_STORE(dst[i][j] + c0, k, d[i][j]);
    }
}

/* os[i][tx*2 + q][k] from M's 9 rows of tile t (P * T + t); one
 * dimension: y0 = m0 + m1, y1 = m1 + m2. */
static void output_tile_s2(const wino_geom *G, const float *mm, int64_t ldm, int64_t t, int64_t T, float *os,
                           int64_t tx) {
    for (int64_t k0 = 0; k0 < G->kp; k0 += S2_LANES) {
        S2_MASK_T k = S2_LANES_OF(G->kp - k0);
        S2_VEC r[3][2];
        for (int i = 0; i < 3; i++) {
            S2_VEC d0 = S2_LOAD(k, mm + ((i * 3) * T + t) * ldm + k0);
            S2_VEC d1 = S2_LOAD(k, mm + ((i * 3 + 1) * T + t) * ldm + k0);
            S2_VEC d2 = S2_LOAD(k, mm + ((i * 3 + 2) * T + t) * ldm + k0);
            r[i][0] = S2_ADD(d0, d1), r[i][1] = S2_ADD(d1, d2);
        }
        for (int q = 0; q < 2; q++) {
            S2_STORE(os + (tx * 2 + q) * G->kp + k0, k, S2_ADD(r[0][q], r[1][q]));
            S2_STORE(os + (G->wo + tx * 2 + q) * G->kp + k0, k, S2_ADD(r[1][q], r[2][q]));
        }
    }
}

#endif /* INF_OPS_X86_WINOGRAD_S2_TILE_H */
