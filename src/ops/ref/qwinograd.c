/*
 * qwinograd.c -- the INT8 Winograd F(2x2, 3x3) convolution (ops/qgemm.h):
 * W's transform and packing at load, the exactness test, and the plain-C
 * twins of the input transform, the per-point GEMM and the output
 * transform that x86/qwinograd_avx2.c and inf__qconv_raw_avx2 must match
 * bit for bit.  The driver (ops/ref/qgemm_drive.c) runs it for 3x3
 * stride-1 convolutions on the AVX2 kernels, where the direct kernel does
 * 36 multiplies per 2x2 outputs and channel and this does 16.
 *
 * The transforms (Lavin & Gray's F(2, 3), filter side scaled by 2 so that
 * every matrix is integer):
 *     B^T = [1 0 -1 0; 0 1 1 0; 0 -1 1 0; 0 1 0 -1]
 *     G'  = [2 0 0; 1 1 1; 1 -1 1; 0 0 2]
 *     A^T = [1 1 1 0; 0 1 -1 -1]
 * Y = A^T [(G' g G'^T) .* (B^T d B)] A = 4 * (the 2x2 outputs of the 3x3
 * correlation of d with g).  Every step is exact in int16 / wrapping int32
 * (qgemm.h); 4 * sum fits int32 when inf__qwino_exact says so, and the
 * division by 4 is then exact.  All wrapping arithmetic on uint32_t.
 */
#include <stdlib.h>
#include <string.h>

#include "ops/qgemm.h"

enum { PANEL = 8 }; /* the AVX2 packing (ops/ref/qgemm.c): panels of 8 columns, K in int16 pairs */

static int64_t round_up(int64_t v, int64_t to) { return (v + to - 1) / to * to; }

bool inf__qwino_exact(int64_t c, int64_t m, const int8_t *w) {
    for (int64_t o = 0; o < m; o++) {
        int64_t sum = 0;
        for (int64_t i = 0; i < c * 9; i++) sum += abs(w[o * c * 9 + i]);
        if (4 * 255 * sum >= ((int64_t)1 << 31)) return false;
    }
    return true;
}

bool inf__qwino_enabled(void) {
    static int on = -1; /* process-wide, read once */
    if (on < 0) {
        const char *q = getenv("INFERA_QCONV");
        on = !(q && !strcmp(q, "direct"));
    }
    return on;
}

/* ---- W: U = G' g G'^T per (output, input) channel, packed per point ---- */

static void filter_transform(const int8_t *g, int32_t u[INF_QWINO_PTS]) {
    static const int32_t gp[4][3] = {{2, 0, 0}, {1, 1, 1}, {1, -1, 1}, {0, 0, 2}};
    int32_t t[4][3]; /* G' g */
    for (int r = 0; r < 4; r++)
        for (int s = 0; s < 3; s++) t[r][s] = gp[r][0] * g[s] + gp[r][1] * g[3 + s] + gp[r][2] * g[6 + s];
    for (int r = 0; r < 4; r++)
        for (int s = 0; s < 4; s++) u[r * 4 + s] = t[r][0] * gp[s][0] + t[r][1] * gp[s][1] + t[r][2] * gp[s][2];
}

static size_t point_bytes(int64_t c, int64_t m) {
    return (size_t)round_up(round_up(c, 4) * round_up(m, PANEL) * 2, 64);
}

size_t inf__qwino_pack_bytes(int64_t c, int64_t m) { return INF_QWINO_PTS * point_bytes(c, m); }

void inf__qwino_pack_into(void *mem, int64_t c, int64_t m, const int8_t *w, inf__qwino_w *out) {
    int64_t cp = round_up(c, 4), np = round_up(m, PANEL);
    memset(mem, 0, inf__qwino_pack_bytes(c, m));
    *out = (inf__qwino_w){.c = c, .m = m, .cp = cp};
    for (int xi = 0; xi < INF_QWINO_PTS; xi++)
        out->u[xi] = (inf__qgemm_b){.isa = INF_QGEMM_AVX2, .k = c, .n = m, .kp = cp, .np = np, .panel = PANEL,
                                    .kgroup = 2, .data = (char *)mem + xi * point_bytes(c, m)};
    for (int64_t o = 0; o < m; o++)
        for (int64_t ch = 0; ch < c; ch++) {
            int32_t u[INF_QWINO_PTS];
            filter_transform(w + (o * c + ch) * 9, u);
            int64_t at = (o / PANEL) * cp * PANEL + (ch / 2) * 2 * PANEL + (o % PANEL) * 2 + ch % 2;
            for (int xi = 0; xi < INF_QWINO_PTS; xi++) ((int16_t *)out->u[xi].data)[at] = (int16_t)u[xi];
        }
}

inf_status inf__qwino_pack(inf__arena *arena, int64_t c, int64_t m, const int8_t *w, inf__qwino_w *out) {
    char *raw = inf__arena_alloc(arena, inf__qwino_pack_bytes(c, m) + 64);
    if (!raw) return INF_ENOMEM;
    inf__qwino_pack_into(raw + (64 - (uintptr_t)raw % 64) % 64, c, m, w, out);
    return INF_OK;
}

/* ---- the reference twins ---- */

void inf__qwino_in_ref(const uint8_t *x0, int64_t rowb, int64_t cs, int64_t c, int64_t cp, int32_t zp, int64_t trows,
                       int64_t tw, int16_t *v, int64_t ldxi) {
    for (int64_t r = 0; r < trows; r++)
        for (int64_t tx = 0; tx < tw; tx++) {
            const uint8_t *x = x0 + 2 * r * rowb + 2 * tx * cs;
            int16_t *vi = v + (r * tw + tx) * cp;
            for (int64_t ch = 0; ch < cp; ch++) {
                int32_t d[4][4], t[4][4];
                for (int a = 0; a < 4; a++)
                    for (int b = 0; b < 4; b++) d[a][b] = ch < c ? (int32_t)x[a * rowb + b * cs + ch] - zp : 0;
                for (int b = 0; b < 4; b++) { /* B^T d */
                    t[0][b] = d[0][b] - d[2][b], t[1][b] = d[1][b] + d[2][b];
                    t[2][b] = d[2][b] - d[1][b], t[3][b] = d[1][b] - d[3][b];
                }
                for (int a = 0; a < 4; a++) { /* (B^T d) B */
                    vi[(a * 4 + 0) * ldxi + ch] = (int16_t)(t[a][0] - t[a][2]);
                    vi[(a * 4 + 1) * ldxi + ch] = (int16_t)(t[a][1] + t[a][2]);
                    vi[(a * 4 + 2) * ldxi + ch] = (int16_t)(t[a][2] - t[a][1]);
                    vi[(a * 4 + 3) * ldxi + ch] = (int16_t)(t[a][1] - t[a][3]);
                }
            }
        }
}

void inf__qwino_gemm_ref(const inf__qwino_w *w, int64_t n, const int16_t *v, int64_t ldxi, int32_t *mm,
                         int64_t ldmxi) {
    int64_t np = w->u[0].np;
    for (int xi = 0; xi < INF_QWINO_PTS; xi++) {
        const int16_t *u = w->u[xi].data;
        for (int64_t i = 0; i < n; i++)
            for (int64_t j = 0; j < np; j++) {
                uint32_t acc = 0;
                for (int64_t ch = 0; ch < w->cp; ch++)
                    acc += (uint32_t)((int32_t)v[xi * ldxi + i * w->cp + ch] *
                                      u[(j / PANEL) * w->cp * PANEL + (ch / 2) * 2 * PANEL + (j % PANEL) * 2 + ch % 2]);
                mm[xi * ldmxi + i * np + j] = (int32_t)acc;
            }
    }
}

void inf__qwino_out_ref(const int32_t *mm, int64_t ldxi, int64_t ldm, int64_t trows, int64_t tw, int64_t orows,
                        int64_t ow, int64_t ncols, int32_t *c, int64_t ldc) {
    for (int64_t r = 0; r < trows; r++)
        for (int64_t tx = 0; tx < tw; tx++)
            for (int64_t j = 0; j < ncols; j++) {
                const int32_t *m = mm + (r * tw + tx) * ldm + j;
                uint32_t t[2][4], y[2][2];
                for (int b = 0; b < 4; b++) { /* A^T M */
                    uint32_t m0 = (uint32_t)m[b * ldxi], m1 = (uint32_t)m[(4 + b) * ldxi];
                    uint32_t m2 = (uint32_t)m[(8 + b) * ldxi], m3 = (uint32_t)m[(12 + b) * ldxi];
                    t[0][b] = m0 + m1 + m2, t[1][b] = m1 - m2 - m3;
                }
                for (int a = 0; a < 2; a++) /* (A^T M) A */
                    y[a][0] = t[a][0] + t[a][1] + t[a][2], y[a][1] = t[a][1] - t[a][2] - t[a][3];
                for (int a = 0; a < 2; a++)
                    for (int b = 0; b < 2; b++)
                        if (2 * r + a < orows && 2 * tx + b < ow)
                            c[((2 * r + a) * ow + 2 * tx + b) * ldc + j] = (int32_t)(y[a][b] & ~3u) / 4; /* floor: vpsrad */
            }
}
