/*
 * qwinograd.c -- the INT8 Winograd convolutions F(4x4, 3x3) and F(2x2, 3x3)
 * (ops/qgemm.h): W's transform and packing at load, the exactness test,
 * and the plain-C twins of the input transform, the per-point GEMM and
 * the output transform that x86/qwinograd_avx2.c and inf__qconv_raw_avx2
 * must match bit for bit.  The driver (ops/ref/qgemm_drive.c) runs it for
 * 3x3 stride-1 convolutions on the AVX2 kernels, where the direct kernel
 * does 9 multiplies per output and input channel; this does 2.25 (4x4
 * tiles) or 4 (2x2).
 *
 * The transforms are Lavin & Gray's, made integer:
 *   F(2x2): B^T = [1 0 -1 0; 0 1 1 0; 0 -1 1 0; 0 1 0 -1], Gi = 2G =
 *           [2 0 0; 1 1 1; 1 -1 1; 0 0 2], A^T = [1 1 1 0; 0 1 -1 -1]:
 *           Y = A^T [(Gi g Gi^T) .* V] A = 4 * the outputs.
 *   F(4x4): G = D Gi with D = diag(1/4, 1/6, 1/6, 1/24, 1/24, 1) and
 *           Gi = [1 0 0; -1 -1 -1; -1 1 -1; 1 2 4; 1 -2 4; 0 0 1]; since D
 *           is diagonal, (D X D) .* V = D (X .* V) D, so D moves to the
 *           output side: with E = 24 D = diag(6, 4, 4, 1, 1, 24) = Eu Ea,
 *           Eu = diag(6, 4, 4, 1, 1, 12) on U's side (U = Eu Gi g Gi^T Eu:
 *           |U| <= 128 * 144 = 18432, int16, since e_r times row r's sum of
 *           |Gi| is at most 12) and Ea = diag(1, 1, 1, 1, 1, 2) on A's,
 *           A'^T = A^T Ea = [1 1 1 1 1 0; 0 1 -1 2 -2 0; 0 1 1 4 4 0;
 *           0 1 -1 8 -8 2] -- the output transform's adds without the
 *           scaling shifts -- and Y = A'^T [U .* V] A' = 576 * the outputs.
 * Every step is exact in int16 or in wrapping 32-bit arithmetic (qgemm.h);
 * 576 = 9 * 64: 9 is undone by multiplying by its inverse mod 2^32, and 64
 * (or F(2x2)'s 4) by a shift, exact when 64 * sum (4 * sum) fits int32 --
 * what inf__qwino_exact checks on the weights.  Wrapping arithmetic on
 * uint32_t (signed overflow would be undefined in C).
 */
#include <stdlib.h>
#include <string.h>

#include "ops/qgemm.h"

enum { PANEL = 8 }; /* the AVX2 packing (ops/ref/qgemm.c): panels of 8 columns, K in int16 pairs */

static int64_t round_up(int64_t v, int64_t to) { return (v + to - 1) / to * to; }

/* the matrices, row-major, padded to 6 columns */
static const int32_t BT4[6][6] = {{4, 0, -5, 0, 1, 0},  {0, -4, -4, 1, 1, 0}, {0, 4, -4, -1, 1, 0},
                                  {0, -2, -1, 2, 1, 0}, {0, 2, -1, -2, 1, 0}, {0, 4, 0, -5, 0, 1}};
static const int32_t BT2[4][6] = {{1, 0, -1, 0}, {0, 1, 1, 0}, {0, -1, 1, 0}, {0, 1, 0, -1}};
static const int32_t GI4[6][3] = {{1, 0, 0}, {-1, -1, -1}, {-1, 1, -1}, {1, 2, 4}, {1, -2, 4}, {0, 0, 1}};
static const int32_t GI2[4][3] = {{2, 0, 0}, {1, 1, 1}, {1, -1, 1}, {0, 0, 2}};
static const int32_t AT4[4][6] = {{1, 1, 1, 1, 1, 0}, {0, 1, -1, 2, -2, 0}, {0, 1, 1, 4, 4, 0}, {0, 1, -1, 8, -8, 2}};
static const int32_t EU4[6] = {6, 4, 4, 1, 1, 12}; /* E's part on U's side (F(4x4)) */
static const int32_t AT2[2][6] = {{1, 1, 1, 0}, {0, 1, -1, -1}};
enum { INV9 = 954437177 }; /* 9 * INV9 = 1 mod 2^32 */

static const int32_t (*bt_of(int tile))[6] { return tile == 4 ? BT4 : BT2; }
static const int32_t (*at_of(int tile))[6] { return tile == 4 ? AT4 : AT2; }
static const int32_t (*gi_of(int tile))[3] { return tile == 4 ? GI4 : GI2; }

int inf__qwino_tile(void) {
    static int tile = -1; /* process-wide, read once */
    if (tile < 0) {
        const char *q = getenv("INFERA_QCONV");
        tile = q && !strcmp(q, "direct") ? 0 : q && !strcmp(q, "wino2") ? 2 : 4;
    }
    return tile;
}

bool inf__qwino_exact(int tile, int64_t c, int64_t m, const int8_t *w) {
    int64_t shift_scale = tile == 4 ? 64 : 4;
    for (int64_t o = 0; o < m; o++) {
        int64_t sum = 0;
        for (int64_t i = 0; i < c * 9; i++)
            sum += abs(w[o * c * 9 + i]);
        if (shift_scale * 255 * sum >= ((int64_t)1 << 31)) return false;
    }
    return true;
}

/* ---- W: U = Gi g Gi^T per (output, input) channel, packed per point ---- */

static void filter_transform(int tile, const int8_t *g, int32_t *u) {
    const int32_t(*gi)[3] = gi_of(tile);
    int a = tile + 2;
    int32_t t[6][3]; /* Gi g */
    for (int r = 0; r < a; r++)
        for (int s = 0; s < 3; s++)
            t[r][s] = gi[r][0] * g[s] + gi[r][1] * g[3 + s] + gi[r][2] * g[6 + s];
    for (int r = 0; r < a; r++)
        for (int s = 0; s < a; s++)
            u[r * a + s] =
                (t[r][0] * gi[s][0] + t[r][1] * gi[s][1] + t[r][2] * gi[s][2]) * (tile == 4 ? EU4[r] * EU4[s] : 1);
}

static size_t point_bytes(int64_t c, int64_t m) {
    return (size_t)round_up(round_up(c, 4) * round_up(m, PANEL) * 2, 64);
}

size_t inf__qwino_pack_bytes(int tile, int64_t c, int64_t m) {
    return (size_t)((tile + 2) * (tile + 2)) * point_bytes(c, m);
}

void inf__qwino_pack_into(void *mem, int tile, int64_t c, int64_t m, const int8_t *w, inf__qwino_w *out) {
    int64_t cp = round_up(c, 4), np = round_up(m, PANEL);
    memset(mem, 0, inf__qwino_pack_bytes(tile, c, m));
    *out = (inf__qwino_w){.tile = tile, .pts = (tile + 2) * (tile + 2), .c = c, .m = m, .cp = cp};
    for (int xi = 0; xi < out->pts; xi++)
        out->u[xi] = (inf__qgemm_b){.isa = INF_QGEMM_AVX2,
                                    .k = c,
                                    .n = m,
                                    .kp = cp,
                                    .np = np,
                                    .panel = PANEL,
                                    .kgroup = 2,
                                    .data = (char *)mem + xi * point_bytes(c, m)};
    for (int64_t o = 0; o < m; o++)
        for (int64_t ch = 0; ch < c; ch++) {
            int32_t u[INF_QWINO_MAX_PTS];
            filter_transform(tile, w + (o * c + ch) * 9, u);
            int64_t at = (o / PANEL) * cp * PANEL + (ch / 2) * 2 * PANEL + (o % PANEL) * 2 + ch % 2;
            for (int xi = 0; xi < out->pts; xi++)
                ((int16_t *)out->u[xi].data)[at] = (int16_t)u[xi];
        }
}

inf_status inf__qwino_pack(inf__arena *arena, int tile, int64_t c, int64_t m, const int8_t *w, inf__qwino_w *out) {
    char *raw = inf__arena_alloc(arena, inf__qwino_pack_bytes(tile, c, m) + 64);
    if (!raw) return INF_ENOMEM;
    inf__qwino_pack_into(raw + (64 - (uintptr_t)raw % 64) % 64, tile, c, m, w, out);
    return INF_OK;
}

/* ---- the reference twins ---- */

void inf__qwino_in_ref(int tile, const uint8_t *x0, int64_t rowb, int64_t cs, int64_t c, int64_t cp, int32_t zp,
                       int64_t trows, int64_t tw, int16_t *v, int64_t ldxi) {
    const int32_t(*bt)[6] = bt_of(tile);
    int a = tile + 2;
    for (int64_t r = 0; r < trows; r++)
        for (int64_t tx = 0; tx < tw; tx++) {
            const uint8_t *x = x0 + tile * r * rowb + tile * tx * cs;
            int16_t *vi = v + (r * tw + tx) * cp;
            for (int64_t ch = 0; ch < cp; ch++) {
                int32_t d[6][6], t[6][6];
                for (int i = 0; i < a; i++)
                    for (int j = 0; j < a; j++)
                        d[i][j] = ch < c ? (int32_t)x[i * rowb + j * cs + ch] - zp : 0;
                for (int i = 0; i < a; i++) /* B^T d */
                    for (int j = 0; j < a; j++) {
                        t[i][j] = 0;
                        for (int k = 0; k < a; k++)
                            t[i][j] += bt[i][k] * d[k][j];
                    }
                for (int i = 0; i < a; i++) /* (B^T d) B */
                    for (int j = 0; j < a; j++) {
                        int32_t acc = 0;
                        for (int k = 0; k < a; k++)
                            acc += t[i][k] * bt[j][k];
                        vi[(i * a + j) * ldxi + ch] = (int16_t)acc;
                    }
            }
        }
}

void inf__qwino_gemm_ref(const inf__qwino_w *w, int64_t n, const int16_t *v, int64_t ldxi, int32_t *mm, int64_t ldmxi) {
    int64_t np = w->u[0].np;
    for (int xi = 0; xi < w->pts; xi++) {
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

void inf__qwino_out_ref(int tile, const int32_t *mm, int64_t ldxi, int64_t ldm, int64_t trows, int64_t tw,
                        int64_t orows, int64_t ow, int64_t ncols, int32_t *c, int64_t ldc) {
    const int32_t(*at)[6] = at_of(tile);
    int a = tile + 2;
    uint32_t inv = tile == 4 ? INV9 : 1, low = tile == 4 ? 63 : 3, div = low + 1;
    for (int64_t r = 0; r < trows; r++)
        for (int64_t tx = 0; tx < tw; tx++)
            for (int64_t j = 0; j < ncols; j++) {
                const int32_t *m = mm + (r * tw + tx) * ldm + j;
                uint32_t t[4][6];
                for (int i = 0; i < tile; i++) /* A'^T M */
                    for (int k = 0; k < a; k++) {
                        t[i][k] = 0;
                        for (int l = 0; l < a; l++)
                            t[i][k] += (uint32_t)at[i][l] * (uint32_t)m[(l * a + k) * ldxi];
                    }
                for (int i = 0; i < tile; i++) /* (A'^T M) A' */
                    for (int k = 0; k < tile; k++) {
                        uint32_t y = 0;
                        for (int l = 0; l < a; l++)
                            y += t[i][l] * (uint32_t)at[k][l];
                        y *= inv;                                       /* the odd factor of the scale */
                        if (tile * r + i < orows && tile * tx + k < ow) /* floor division: vpsrad */
                            c[((tile * r + i) * ow + tile * tx + k) * ldc + j] = (int32_t)(y & ~low) / (int32_t)div;
                    }
            }
}
