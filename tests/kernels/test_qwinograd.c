/*
 * test_qwinograd.c -- the INT8 Winograd convolutions F(4x4, 3x3) and F(2x2, 3x3)
 * (ops/ref/qwinograd.c, x86/qwinograd_avx2.c, the driver's path in
 * ops/ref/qgemm_drive.c), bit for bit:
 *   - the AVX2 input and output transforms against their plain-C twins
 *     (random images, channel counts around the 16-lane vectors, zero
 *     points, tile grids, extremes 255 / 0; the output transform on any
 *     int32 values, its shift a floor division as the twin's);
 *   - the per-point GEMM: inf__qconv_raw_avx2 reading V in place against
 *     inf__qwino_gemm_ref, with weights at the int8 extremes;
 *   - the driver with W transformed (U packed next to the AVX2 and AVX2
 *     vpmaddubsw packings) against the reference driver's direct
 *     convolution (int32, requantized 8-bit, float with a fused residual
 *     Add, uint8 channels-last in and out), and its int32 sums against a
 *     direct convolution written here: the integer Winograd is exact;
 *   - inf__qwino_exact at its boundary (64 resp. 4 * 255 * sum|w| against 2^31).
 * Skips (77) on a CPU without AVX2.  Prints "N passed, M failed".
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/core.h"
#include "core/cpu.h"
#include "ops/qgemm.h"

#define KERNEL_TEST_SEED 0x3A7B0C0DE2FA11ull
#include "test_rng.h"

static int n_passed, n_failed;

static void check(bool ok, const char *what, int case_no) {
    if (ok)
        n_passed++;
    else if (n_failed++ < 20)
        printf("FAIL %s (case %d)\n", what, case_no);
}

/* ---- transforms ---- */

static __attribute__((unused)) void input_case(int tile, int case_no) {
    int64_t c = rand_in(0, 3) ? rand_in(1, 40) : 16 * rand_in(1, 3), cp = (c + 3) / 4 * 4, cs = c + rand_in(0, 5);
    int64_t trows = rand_in(1, 3), tw = rand_in(1, 5), w = tile * tw + 2 + rand_in(0, 3), h = tile * trows + 2;
    int pts = (tile + 2) * (tile + 2), lim = tile == 4 ? 25500 : 1020;
    int extreme = (int)rand_in(0, 5); /* 1: 255 with zero point 0, 2: 0 with zero point 255 */
    int32_t zp = extreme == 1 ? 0 : extreme == 2 ? 255 : (int32_t)rand_in(0, 255);
    uint8_t *x = malloc((size_t)(h * w * cs));
    for (int64_t i = 0; i < h * w * cs; i++)
        x[i] = extreme == 1 ? 255 : extreme == 2 ? 0 : (uint8_t)rand_in(0, 255);
    int64_t ldxi = trows * tw * cp + rand_in(0, 9);
    int16_t *v[2];
    for (int k = 0; k < 2; k++) {
        v[k] = malloc((size_t)(pts * ldxi) * 2);
        memset(v[k], 0x5A, (size_t)(pts * ldxi) * 2);
    }
    inf__qwino_in_ref(tile, x, w * cs, cs, c, cp, zp, trows, tw, v[0], ldxi);
    inf__qwino_in_avx2(tile, x, w * cs, cs, c, cp, zp, trows, tw, v[1], ldxi);
    check(!memcmp(v[0], v[1], (size_t)(pts * ldxi) * 2),
          tile == 4 ? "4x4 input transform avx2 vs twin" : "2x2 input transform avx2 vs twin", case_no);
    if (extreme) { /* the range the GEMM relies on: |V| <= 25500 (4x4) or 1020 (2x2) */
        bool ok = true;
        for (int64_t i = 0; i < pts * ldxi; i++)
            ok = ok && (v[0][i] == 0x5A5A || (v[0][i] >= -lim && v[0][i] <= lim));
        check(ok, "input transform within its int16 range", case_no);
    }
    free(x), free(v[0]), free(v[1]);
}

static __attribute__((unused)) void output_case(int tile, int case_no) {
    int64_t trows = rand_in(1, 3), tw = rand_in(1, 5), ncols = 8 * rand_in(1, 5), ldm = ncols + 8 * rand_in(0, 1);
    int64_t ldxi = trows * tw * ldm, ow = tile * tw - rand_in(0, tile - 1), orows = tile * trows - rand_in(0, tile - 1);
    int64_t ldc = ncols, pts = (tile + 2) * (tile + 2);
    int32_t *mm = malloc((size_t)(pts * ldxi) * 4), *y[2];
    for (int64_t i = 0; i < pts * ldxi; i++)
        mm[i] = rand_in(0, 7) ? (int32_t)rand_in(-3000000, 3000000) : (int32_t)(uint32_t)next_u64(); /* and wraps */
    for (int k = 0; k < 2; k++) {
        y[k] = malloc((size_t)(orows * ow * ldc) * 4);
        memset(y[k], 0x33, (size_t)(orows * ow * ldc) * 4);
    }
    inf__qwino_out_ref(tile, mm, ldxi, ldm, trows, tw, orows, ow, ncols, y[0], ldc);
    inf__qwino_out_avx2(tile, mm, ldxi, ldm, trows, tw, orows, ow, ncols, y[1], ldc);
    check(!memcmp(y[0], y[1], (size_t)(orows * ow * ldc) * 4),
          tile == 4 ? "4x4 output transform avx2 vs twin" : "2x2 output transform avx2 vs twin", case_no);
    free(mm), free(y[0]), free(y[1]);
}

/* ---- the per-point GEMM ---- */

static __attribute__((unused)) void gemm_case(int tile, int case_no) {
    int64_t c = rand_in(1, 70), m = rand_in(1, 40), n = rand_in(1, 30);
    bool extreme = rand_in(0, 4) == 0;
    int8_t *w = malloc((size_t)(m * c * 9));
    for (int64_t i = 0; i < m * c * 9; i++)
        w[i] = extreme ? -128 : (int8_t)rand_in(-128, 127);
    inf__qwino_w u;
    void *mem = inf__aligned_alloc(inf__qwino_pack_bytes(tile, c, m));
    inf__qwino_pack_into(mem, tile, c, m, w, &u);
    int64_t ldxi = n * u.cp, np = u.u[0].np, pts = u.pts, lim = tile == 4 ? 25500 : 1020;
    int16_t *v = malloc((size_t)(pts * ldxi) * 2);
    for (int64_t i = 0; i < pts * ldxi; i++)
        v[i] = (int16_t)(extreme ? lim : rand_in(-lim, lim));
    int32_t *mm[2];
    for (int k = 0; k < 2; k++)
        mm[k] = calloc((size_t)(pts * n * np), 4);
    inf__qwino_gemm_ref(&u, n, v, ldxi, mm[0], n * np);
    const uint16_t **rows = malloc((size_t)n * sizeof *rows);
    for (int64_t i = 0; i < n; i++)
        rows[i] = (const uint16_t *)(v + i * u.cp);
    for (int xi = 0; xi < pts; xi++) {
        int64_t off = xi * ldxi;
        inf__qconv_raw_avx2(&u.u[xi], n, rows, &off, 1, u.cp, NULL, mm[1] + xi * n * np, np);
    }
    check(!memcmp(mm[0], mm[1], (size_t)(pts * n * np) * 4), "per-point GEMM avx2 vs twin", case_no);
    inf__aligned_free(mem);
    free(w), free(v), free(rows), free(mm[0]), free(mm[1]);
}

/* ---- the driver ---- */

static const inf__epilogue relu = {.kind = INF_EPILOGUE_RELU};

static void *run_conv(inf__qgemm_isa isa, int wino, inf__pool *pool, inf__qconv_geom g, const int8_t *w,
                      const int8_t *whwc, const inf__qsrc *src, const inf__qout *out, size_t y_bytes) {
    int64_t kdim = g.cg * 9;
    inf__qgemm_b pb;
    void *mem = inf__aligned_alloc(inf__qgemm_pack_b_bytes(isa, kdim, g.m)), *wmem = NULL;
    inf__qgemm_pack_b_into(mem, isa, kdim, g.m, whwc, INF_DTYPE_I8, kdim, true, NULL, 1, &pb);
    inf__qwino_w u;
    if (wino) {
        wmem = inf__aligned_alloc(inf__qwino_pack_bytes(wino, g.c, g.m));
        inf__qwino_pack_into(wmem, wino, g.c, g.m, w, &u);
        g.wino = &u;
    }
    void *scratch = inf__aligned_alloc(inf__qconv_scratch_bytes(&g, &pb));
    void *y = calloc(y_bytes, 1);
    inf__qconv_drive(pool, &g, &pb, src, out, y, scratch);
    inf__aligned_free(scratch), inf__aligned_free(mem), inf__aligned_free(wmem);
    return y;
}

static __attribute__((unused)) void driver_case(int tile, inf__qgemm_isa isa, inf__pool *pool, int case_no) {
    inf__qconv_geom g = {.n = rand_in(1, 2), .group = 1, .kh = 3, .kw = 3, .sh = 1, .sw = 1, .dh = 1, .dw = 1};
    g.c = g.cg = rand_in(0, 2) ? 8 * rand_in(1, 5) : rand_in(1, 40), g.m = g.mg = rand_in(1, 40);
    g.ih = rand_in(3, 13), g.iw = rand_in(3, 15), g.pt = rand_in(0, 1), g.pl = g.pt;
    g.oh = g.ih + 2 * g.pt - 2, g.ow = g.iw + 2 * g.pl - 2;
    int64_t kdim = g.c * 9, pos = g.oh * g.ow, x_n = g.n * g.c * g.ih * g.iw, y_n = g.n * g.m * pos;
    int32_t lim = isa == INF_QGEMM_AVX2_UBS ? 64 : 127;
    bool extreme = rand_in(0, 6) == 0;
    int8_t *w = malloc((size_t)(g.m * kdim)), *whwc = malloc((size_t)(g.m * kdim));
    for (int64_t i = 0; i < g.m * kdim; i++)
        w[i] = extreme ? (int8_t)-lim : (int8_t)rand_in(-lim - (lim == 127), lim);
    for (int64_t o = 0; o < g.m; o++) /* W as the direct driver packs it: K in (ky, kx, channel) order */
        for (int64_t ch = 0; ch < g.c; ch++)
            for (int64_t t = 0; t < 9; t++)
                whwc[(o * 9 + t) * g.c + ch] = w[(o * g.c + ch) * 9 + t];
    uint8_t *x8 = malloc((size_t)x_n), *x8t = malloc((size_t)x_n);
    float *xf = malloc((size_t)x_n * 4);
    for (int64_t i = 0; i < x_n; i++)
        x8[i] = extreme ? 255 : (uint8_t)rand_in(0, 255), xf[i] = uniform() * 2;
    int64_t plane = g.ih * g.iw;
    for (int64_t n = 0; n < g.n; n++)
        for (int64_t ch = 0; ch < g.c; ch++)
            for (int64_t p = 0; p < plane; p++)
                x8t[(n * plane + p) * g.c + ch] = x8[(n * g.c + ch) * plane + p];
    int32_t zp = extreme ? 0 : (int32_t)rand_in(0, 255);
    char what[160];
    snprintf(what, sizeof what, "%s winograd %dx%d driver %lldx%lld c%lld m%lld pad%lld", inf__qgemm_isa_name(isa),
             tile, tile, (long long)g.ih, (long long)g.iw, (long long)g.c, (long long)g.m, (long long)g.pt);

    /* int32 sums, uint8 planes in: vs the reference driver and a direct convolution */
    inf__qsrc s8 = {.data = x8, .dtype = INF_DTYPE_U8, .zp = zp};
    inf__qout oi = {.kind = INF_QOUT_I32};
    int32_t *ref = run_conv(INF_QGEMM_REF, 0, NULL, g, w, whwc, &s8, &oi, (size_t)y_n * 4);
    int32_t *got = run_conv(isa, tile, pool, g, w, whwc, &s8, &oi, (size_t)y_n * 4);
    check(!memcmp(ref, got, (size_t)y_n * 4), what, case_no);
    bool ok = true;
    for (int64_t n = 0; n < g.n && ok; n++)
        for (int64_t o = 0; o < g.m && ok; o++)
            for (int64_t oy = 0; oy < g.oh && ok; oy++)
                for (int64_t ox = 0; ox < g.ow && ok; ox++) {
                    int64_t acc = 0;
                    for (int64_t ch = 0; ch < g.c; ch++)
                        for (int64_t ky = 0; ky < 3; ky++)
                            for (int64_t kx = 0; kx < 3; kx++) {
                                int64_t iy = oy - g.pt + ky, ix = ox - g.pl + kx;
                                int64_t xv = iy >= 0 && iy < g.ih && ix >= 0 && ix < g.iw
                                                 ? x8[((n * g.c + ch) * g.ih + iy) * g.iw + ix]
                                                 : zp;
                                acc += (xv - zp) * w[((o * g.c + ch) * 3 + ky) * 3 + kx];
                            }
                    ok = got[((n * g.m + o) * g.oh + oy) * g.ow + ox] == (int32_t)acc;
                }
    check(ok, "winograd int32 sums vs a direct convolution", case_no);
    free(ref), free(got);

    /* float in (quantized on the way), float out with a fused residual Add and ReLU */
    float *mult = malloc((size_t)g.m * 4), *bias = malloc((size_t)g.m * 4), *r = malloc((size_t)y_n * 4);
    for (int64_t j = 0; j < g.m; j++)
        mult[j] = (float)rand_in(1, 1000) * 1e-5f, bias[j] = uniform();
    for (int64_t i = 0; i < y_n; i++)
        r[i] = uniform() * 3;
    inf__qsrc sf = {
        .data = xf, .dtype = INF_DTYPE_F32, .scale = 0.015f, .zp = (int32_t)rand_in(0, 255), .q_dtype = INF_DTYPE_U8};
    inf__qout of = {.kind = INF_QOUT_F32,
                    .mult = mult,
                    .mult_per_col = true,
                    .bias_f32 = bias,
                    .act = &relu,
                    .residual = rand_in(0, 1) ? r : NULL};
    float *fref = run_conv(INF_QGEMM_REF, 0, NULL, g, w, whwc, &sf, &of, (size_t)y_n * 4);
    float *fgot = run_conv(isa, tile, pool, g, w, whwc, &sf, &of, (size_t)y_n * 4);
    check(!memcmp(fref, fgot, (size_t)y_n * 4), "winograd float store (residual Add) vs reference", case_no);
    free(fref), free(fgot);

    /* uint8 channels-last in and out (the fused QDQ chain), and requantized 8-bit planes */
    inf__qsrc st = {.data = x8t, .dtype = INF_DTYPE_U8, .zp = zp, .nhwc = true};
    inf__qout ou = {.kind = INF_QOUT_F32_U8,
                    .mult = mult,
                    .mult_per_col = true,
                    .bias_f32 = bias,
                    .act = &relu,
                    .rq_scale = 0.02f,
                    .rq_zp = (int32_t)rand_in(0, 40),
                    .rq_dtype = INF_DTYPE_U8};
    uint8_t *uref = run_conv(INF_QGEMM_REF, 0, NULL, g, w, whwc, &st, &ou, (size_t)y_n);
    uint8_t *ugot = run_conv(isa, tile, pool, g, w, whwc, &st, &ou, (size_t)y_n);
    check(!memcmp(uref, ugot, (size_t)y_n), "winograd uint8 channels-last vs reference", case_no);
    inf__qout oq = {.kind = INF_QOUT_Q8, .mult = mult, .mult_per_col = true, .y_dtype = INF_DTYPE_U8, .y_zp = 100};
    uint8_t *qref = run_conv(INF_QGEMM_REF, 0, NULL, g, w, whwc, &s8, &oq, (size_t)y_n);
    uint8_t *qgot = run_conv(isa, tile, pool, g, w, whwc, &s8, &oq, (size_t)y_n);
    check(!memcmp(qref, qgot, (size_t)y_n), "winograd requantized 8-bit vs reference", case_no);
    free(uref), free(ugot), free(qref), free(qgot);
    free(w), free(whwc), free(x8), free(x8t), free(xf), free(mult), free(bias), free(r);
}

/* ---- exactness ---- */

/* s * 255 * sum|w| < 2^31 (s = 64 for 4x4 tiles, 4 for 2x2): the largest sum|w| passes, one more does not */
static __attribute__((unused)) void exact_case(int tile) {
    int64_t s = tile == 4 ? 64 : 4, most = (((int64_t)1 << 31) - 1) / (s * 255), c = most / (9 * 127) + 2, m = 2;
    int8_t *w = calloc((size_t)(m * c * 9), 1);
    int64_t left = most;
    for (int64_t i = 0; i < c * 9 && left > 0; i++) {
        int v = left > 127 ? 127 : (int)left;
        w[i] = (int8_t)(i % 2 ? v : -v), w[c * 9 + i] = w[i], left -= v;
    }
    check(inf__qwino_exact(tile, c, m, w), tile == 4 ? "4x4 exact at the bound" : "2x2 exact at the bound", 0);
    for (int64_t i = 0; i < c * 9; i++)
        if (w[c * 9 + i] == 0) {
            w[c * 9 + i] = 1;
            break;
        }
    check(!inf__qwino_exact(tile, c, m, w), tile == 4 ? "4x4 not exact one above" : "2x2 not exact one above", 0);
    free(w);
}

int main(void) {
#if defined(__x86_64__)
    if (!inf__cpu_has_avx2_fma()) {
        printf("skipped: the CPU lacks AVX2\n");
        return 77;
    }
    inf__pool *pool = NULL;
    if (inf__pool_new(2, &pool) != INF_OK) return 1;
    static const inf__qgemm_isa isas[] = {INF_QGEMM_AVX2, INF_QGEMM_AVX2_UBS};
    for (int tile = 2; tile <= 4; tile += 2) {
        for (int c = 0; c < 300; c++)
            input_case(tile, c);
        for (int c = 0; c < 300; c++)
            output_case(tile, c);
        for (int c = 0; c < 100; c++)
            gemm_case(tile, c);
        for (int i = 0; i < 2; i++) {
            for (int c = 0; c < 60; c++)
                driver_case(tile, isas[i], c % 2 ? pool : NULL, c);
            printf("%dx%d tiles, %s: checked\n", tile, tile, inf__qgemm_isa_name(isas[i]));
        }
        exact_case(tile);
    }
    inf__pool_free(pool);
    printf("%d passed, %d failed\n", n_passed, n_failed);
    return n_failed ? 1 : 0;
#else
    printf("skipped: x86-64 only\n");
    return 77;
#endif
}
