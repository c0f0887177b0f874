/*
 * test_qgemm.c -- the 8-bit integer GEMM (ops/qgemm.h) and its drivers,
 * every kernel the CPU runs against its reference twin, bit for bit:
 *   - inf__qgemm_rows for each ISA (reference, AVX2 vpmaddwd, AVX-512 VNNI,
 *     AVX-VNNI, and AVX2 vpmaddubsw with pair-safe weights: every weight
 *     within [-64, 64], extremes 255 x -64 pairs summing to -32640, one
 *     step from int16's limit)
 *     against a plain int64 sum of (a - a_zp)(b - b_zp) written here and
 *     wrapped to int32 -- random shapes around the panel widths and k groups,
 *     uint8 and int8 B, B given transposed or not, zero points none / per
 *     tensor / per column, extreme values (255 x -128 everywhere: the case
 *     where vpmaddubsw would saturate);
 *   - activation quantization (AVX2) and min/max against the scalar twins,
 *     with halfway cases, NaN, infinities and huge values;
 *   - the drivers: a matrix product (8-bit rows, or float rows quantized to
 *     uint8 or int8 on the way in) and a convolution (1-D/2-D, groups,
 *     strides, dilations, pads) with int32, requantized 8-bit and fused
 *     float outputs (bias, ReLU / Clip / LeakyRelu, output Q -> DQ), run on
 *     the fast ISA (vector stores) and on the reference ISA (scalar
 *     stores): same bits; the int32 results also against QuantizeLinear's
 *     bytes and a direct product / convolution written here;
 *   - the depthwise convolution (ops/ref/qdepthwise.c, group == channels):
 *     the driver on each ISA (AVX2: x86/qdepthwise_avx2.c, AVX-512 VNNI:
 *     x86/qdepthwise_avx512.c) against the
 *     reference ISA's bits, and its int32 sums against a direct depthwise
 *     convolution written here, with uint8/int8 weights and zero points.
 *   - inf__qgemm_pack_isa: vpmaddubsw exactly when every pair has
 *     |b0| + |b1| <= 128;
 *   - the routed ubs2 kernel (GEMM and implicit-GEMM convolution) on
 *     adversarial weights -- int16 slots right at the +-128 bound, all
 *     negative, mixed, one past it -- with A at 255, against a direct sum,
 *     and its route against the class each group's weights allow.
 * An ISA the CPU lacks is reported as skipped ("skipped: avx512-vnni").
 * Prints one line per failure and "N passed, M failed".
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/core.h"
#include "core/cpu.h"
#include "ops/qgemm.h"

#define KERNEL_TEST_SEED 0x51A7E5D00DF00Dull
#include "test_rng.h"

static int n_passed, n_failed;

static void check(bool ok, const char *what, int case_no) {
    if (ok) n_passed++;
    else if (n_failed++ < 20) printf("FAIL %s (case %d)\n", what, case_no);
}

/* Weights drawn for the ISA under test: the pair-safe kernel's within
 * [-64, 64] (so |b0| + |b1| <= 128), the others' the full int8 range. */
static int32_t w_lim(inf__qgemm_isa isa) { return isa == INF_QGEMM_AVX2_UBS ? 64 : 127; }

static bool isa_runs(inf__qgemm_isa isa) {
#if defined(__x86_64__)
    if (isa == INF_QGEMM_AVX2 || isa == INF_QGEMM_AVX2_UBS) return inf__cpu_has_avx2_fma();
    if (isa == INF_QGEMM_VNNI512) return inf__cpu_has_avx2_fma() && inf__cpu_has_avx512_vnni();
    if (isa == INF_QGEMM_AVXVNNI) return inf__cpu_path_allows(INF__CPU_AVX2, INF_CPU_AVXVNNI);
    return true;
#else
    return isa == INF_QGEMM_REF;
#endif
}

/* ---- the GEMM ---- */

static void gemm_case(inf__qgemm_isa isa, int case_no) {
    /* K past the AVX2 kernel's 1024-value blocks now and then, rows past its 24-row blocks */
    int64_t m = rand_in(1, 30), k = rand_in(0, 9) ? rand_in(1, 300) : rand_in(1000, 2300), n = rand_in(1, 70);
    bool b_u8 = rand_in(0, 1), trans = rand_in(0, 1), extreme = rand_in(0, 7) == 0;
    int zp_kind = (int)rand_in(0, 2); /* none, per tensor, per column */
    int64_t kp = (k + 3) / 4 * 4;
    uint8_t *a = calloc((size_t)(m * kp), 1), *b = malloc((size_t)(k * n)), *bz = malloc((size_t)n);
    int32_t a_zp = extreme ? 0 : (int32_t)rand_in(0, 255);
    for (int64_t i = 0; i < m; i++)
        for (int64_t p = 0; p < k; p++) a[i * kp + p] = extreme ? 255 : (uint8_t)rand_in(0, 255);
    int32_t lim = w_lim(isa); /* B's values after the u8 shift within [-lim - (lim == 127), lim] */
    for (int64_t i = 0; i < k * n; i++) {
        int32_t v = extreme ? (lim == 127 ? -128 : -lim) : (int32_t)rand_in(lim == 127 ? -128 : -lim, lim);
        b[i] = (uint8_t)(b_u8 ? v + 128 : v);
    }
    for (int64_t j = 0; j < n; j++) bz[j] = (uint8_t)rand_in(0, 255);
    if (zp_kind == 1) memset(bz, bz[0], (size_t)n);
    inf__qgemm_b pb;
    void *mem = inf__aligned_alloc(inf__qgemm_pack_b_bytes(isa, k, n));
    int64_t ldb = trans ? k : n;
    inf__qgemm_pack_b_into(mem, isa, k, n, b, b_u8 ? INF_DTYPE_U8 : INF_DTYPE_I8, ldb, trans,
                           zp_kind ? bz : NULL, zp_kind == 2 ? n : 1, &pb);
    int32_t *c = malloc((size_t)(m * pb.np) * sizeof *c);
    inf__qgemm_rows(&pb, m, a, kp, a_zp, c, pb.np);
    bool ok = true;
    for (int64_t i = 0; i < m && ok; i++)
        for (int64_t j = 0; j < n && ok; j++) {
            int64_t acc = 0, zb = zp_kind ? (b_u8 ? bz[j] : (int8_t)bz[j]) : 0;
            for (int64_t p = 0; p < k; p++) {
                uint8_t raw = trans ? b[j * ldb + p] : b[p * ldb + j];
                int64_t bv = b_u8 ? raw : (int8_t)raw;
                acc += ((int64_t)a[i * kp + p] - a_zp) * (bv - zb);
            }
            ok = c[i * pb.np + j] == (int32_t)(uint32_t)acc;
        }
    char what[96];
    snprintf(what, sizeof what, "%s gemm m=%lld k=%lld n=%lld", inf__qgemm_isa_name(isa), (long long)m, (long long)k,
             (long long)n);
    check(ok, what, case_no);
    free(a), free(b), free(bz), free(c);
    inf__aligned_free(mem);
}

/* ---- quantization and range ---- */

static void quantize_cases(void) {
#if defined(__x86_64__)
    if (!inf__cpu_has_avx2_fma()) return;
    enum { N = 1037 };
    static float x[N];
    static uint8_t q1[N], q2[N];
    for (int round = 0; round < 50; round++) {
        float scale = (float)rand_in(1, 1000) / 997.0f;
        int32_t zp = (int32_t)rand_in(0, 255);
        for (int i = 0; i < N; i++) {
            int kind = (int)rand_in(0, 9);
            x[i] = kind == 0 ? ((float)rand_in(-300, 300) + 0.5f) * scale /* halfway */
                 : kind == 1 ? NAN : kind == 2 ? (rand_in(0, 1) ? INFINITY : -INFINITY)
                 : kind == 3 ? uniform() * 1e30f : uniform() * 200.0f * scale;
        }
        int64_t n = rand_in(1, N);
        inf__quantize_u8_ref(x, n, scale, zp, q1);
        inf__quantize_u8_avx2(x, n, scale, zp, q2);
        check(!memcmp(q1, q2, (size_t)n), "quantize_u8 avx2 vs ref", round);
        { /* a stem's c planes straight into 4-byte positions: each plane's bytes, the rest the zero point */
            int64_t c = rand_in(1, 4), npos = n / c;
            static uint8_t want[4 * N], got[4 * N];
            for (int64_t k = 0; k < 4; k++) {
                if (k < c) inf__quantize_u8_ref(x + k * npos, npos, scale, zp, q1);
                for (int64_t i = 0; i < npos; i++)
                    want[4 * i + k] = k < c ? q1[i] : (uint8_t)zp;
            }
            memset(got, 0xA5, sizeof got);
            inf__quantize_planes4_u8_avx2(x, npos, c, npos, scale, zp, got);
            check(!memcmp(want, got, (size_t)(4 * npos)) && got[4 * npos] == 0xA5, "quantize_planes4 avx2 vs ref",
                  round);
            inf__quantize_u8_ref(x, n, scale, zp, q1); /* restore q1 for the checks below */
        }
        if (isa_runs(INF_QGEMM_VNNI512)) { /* the 16-lane form (x86/qstore_avx512.c) */
            memset(q2, 0, sizeof q2);
            inf__quantize_u8_avx512(x, n, scale, zp, q2);
            check(!memcmp(q1, q2, (size_t)n), "quantize_u8 avx512 vs ref", round);
        }
        float lo1, hi1, lo2, hi2;
        inf__minmax_f32_ref(x, n, &lo1, &hi1);
        inf__minmax_f32_avx2(x, n, &lo2, &hi2);
        check(lo1 == lo2 && hi1 == hi2, "minmax avx2 vs ref", round);
        if (isa_runs(INF_QGEMM_VNNI512)) {
            inf__minmax_f32_avx512(x, n, &lo2, &hi2);
            check(lo1 == lo2 && hi1 == hi2, "minmax avx512 vs ref", round);
        }
    }
#endif
}

/* ---- drivers: the fast ISA against the reference ISA ---- */

static const inf__epilogue acts[] = {
    {INF_EPILOGUE_NONE, 0, 0, 0}, {INF_EPILOGUE_RELU, 0, 0, 0},
    {INF_EPILOGUE_CLIP, 0, -0.5f, 2.0f}, {INF_EPILOGUE_LEAKY_RELU, 0.1f, 0, 0}};

static inf__qout random_out(float *mult, float *bias, int32_t *bias_i32, int64_t n, inf__qout_kind kind) {
    for (int64_t j = 0; j < n; j++) {
        mult[j] = (float)rand_in(1, 1000) * 1e-5f;
        bias[j] = uniform();
        bias_i32[j] = (int32_t)rand_in(-5000, 5000);
    }
    inf__qout o = {.kind = kind, .mult = mult, .mult_per_col = rand_in(0, 1), .y_dtype = rand_in(0, 1) ? INF_DTYPE_U8 : INF_DTYPE_I8,
                   .y_zp = (int32_t)rand_in(-20, 20)};
    if (o.y_dtype == INF_DTYPE_U8) o.y_zp += 100;
    if (kind == INF_QOUT_Q8 && rand_in(0, 1)) o.bias_i32 = bias_i32;
    if (kind == INF_QOUT_F32) {
        o.bias_f32 = rand_in(0, 1) ? bias : NULL;
        o.act = &acts[rand_in(0, 3)];
        if (rand_in(0, 1)) o.requant = true, o.rq_scale = 0.01f, o.rq_zp = (int32_t)rand_in(0, 255), o.rq_dtype = INF_DTYPE_U8;
    }
    return o;
}

static size_t out_size(inf__qout_kind kind) { return kind == INF_QOUT_Q8 ? 1 : 4; }

/* y (m x n, esize bytes a value, calloc'd) = the matrix-product driver on isa: W [k][n] int8 packed here. */
static void *run_matmul(inf__qgemm_isa isa, inf__pool *pool, const int8_t *w, int64_t m, int64_t k, int64_t n,
                        const inf__qsrc *src, const inf__qout *out, size_t esize) {
    inf__qgemm_b pb;
    void *mem = inf__aligned_alloc(inf__qgemm_pack_b_bytes(isa, k, n));
    inf__qgemm_pack_b_into(mem, isa, k, n, w, INF_DTYPE_I8, n, false, NULL, 1, &pb);
    void *scratch = inf__aligned_alloc(inf__qmatmul_scratch_bytes(&pb, m));
    void *y = calloc((size_t)(m * n), esize);
    inf__qmatmul_drive(pool, &pb, m, src, out, y, n, scratch);
    inf__aligned_free(scratch);
    inf__aligned_free(mem);
    return y;
}

static void matmul_driver_case(inf__qgemm_isa isa, inf__pool *pool, int case_no) {
    int64_t m = rand_in(1, 100), k = rand_in(1, 200), n = rand_in(1, 60);
    inf_dtype adt = (inf_dtype)(rand_in(0, 2) == 0 ? INF_DTYPE_F32 : rand_in(0, 1) ? INF_DTYPE_U8 : INF_DTYPE_I8);
    size_t asz = adt == INF_DTYPE_F32 ? 4 : 1;
    void *a = malloc((size_t)(m * k) * asz);
    int8_t *w = malloc((size_t)(k * n));
    for (int64_t i = 0; i < m * k; i++) {
        if (adt == INF_DTYPE_F32) ((float *)a)[i] = uniform() * 3;
        else ((uint8_t *)a)[i] = (uint8_t)rand_in(0, 255);
    }
    for (int64_t i = 0; i < k * n; i++)
        w[i] = (int8_t)rand_in(-w_lim(isa), w_lim(isa));
    inf__qsrc src = {.data = a, .dtype = adt, .ld = k, .scale = 0.02f, .zp = (int32_t)rand_in(0, 100),
                     .q_dtype = rand_in(0, 1) ? INF_DTYPE_U8 : INF_DTYPE_I8};
    if (adt == INF_DTYPE_I8 || (adt == INF_DTYPE_F32 && src.q_dtype == INF_DTYPE_I8)) src.zp -= 50;
    inf__qout_kind kind = adt == INF_DTYPE_F32 ? (rand_in(0, 2) ? INF_QOUT_F32 : INF_QOUT_I32)
                                               : rand_in(0, 1) ? INF_QOUT_I32 : INF_QOUT_Q8;
    float *mult = malloc((size_t)n * 4), *bias = malloc((size_t)n * 4);
    int32_t *bias_i32 = malloc((size_t)n * 4);
    inf__qout out = random_out(mult, bias, bias_i32, n, kind);
    void *y[2];
    for (int v = 0; v < 2; v++)
        y[v] = run_matmul(v ? INF_QGEMM_REF : isa, pool, w, m, k, n, &src, &out, out_size(kind));
    char what[96];
    snprintf(what, sizeof what, "%s matmul driver m=%lld k=%lld n=%lld kind=%d", inf__qgemm_isa_name(isa), (long long)m,
             (long long)k, (long long)n, (int)kind);
    check(!memcmp(y[0], y[1], (size_t)(m * n) * out_size(kind)), what, case_no);
    if (kind == INF_QOUT_I32) { /* and against QuantizeLinear's bytes summed here (uint8 or int8 activations) */
        bool ok = true;
        float lo = src.q_dtype == INF_DTYPE_I8 ? -128.0f : 0.0f, hi = src.q_dtype == INF_DTYPE_I8 ? 127.0f : 255.0f;
        for (int64_t i = 0; i < m && ok; i++)
            for (int64_t j = 0; j < n && ok; j++) {
                int64_t acc = 0;
                for (int64_t p = 0; p < k; p++) {
                    int64_t av;
                    if (adt == INF_DTYPE_F32) {
                        float r = nearbyintf(((float *)a)[i * k + p] / src.scale) + (float)src.zp;
                        av = (int64_t)(r < lo ? lo : r > hi ? hi : r);
                    } else {
                        av = adt == INF_DTYPE_U8 ? ((uint8_t *)a)[i * k + p] : ((int8_t *)a)[i * k + p];
                    }
                    acc += (av - src.zp) * w[p * n + j];
                }
                ok = ((int32_t *)y[0])[i * n + j] == (int32_t)acc;
            }
        check(ok, "matmul driver int32 vs QuantizeLinear + a direct sum", case_no);
    }
    free(a), free(w), free(mult), free(bias), free(bias_i32), free(y[0]), free(y[1]);
}

static void conv_driver_case(inf__qgemm_isa isa, inf__pool *pool, int case_no) {
    inf__qconv_geom g = {.n = rand_in(1, 2), .group = rand_in(1, 2), .kh = rand_in(1, 3), .kw = rand_in(1, 3),
                         .sh = rand_in(1, 2), .sw = rand_in(1, 2), .dh = rand_in(1, 2), .dw = rand_in(1, 2)};
    /* cg a multiple of 4 half the time: the implicit-GEMM path on VNNI (qconv_vnni_avx512.c) */
    g.cg = rand_in(0, 1) ? 4 * rand_in(1, 3) : rand_in(1, 9), g.mg = rand_in(1, 40), g.c = g.cg * g.group, g.m = g.mg * g.group;
    if (rand_in(0, 3) == 0) g.ih = 1, g.kh = 1, g.sh = 1, g.dh = 1; /* 1-D */
    else g.ih = rand_in(g.kh, 12);
    g.iw = rand_in(g.kw, 14);
    g.pt = g.kh > 1 ? rand_in(0, 1) : 0, g.pl = rand_in(0, g.kw - 1);
    int64_t eh = (g.kh - 1) * g.dh + 1, ew = (g.kw - 1) * g.dw + 1;
    g.oh = (g.ih + 2 * g.pt - eh) / g.sh + 1, g.ow = (g.iw + 2 * g.pl - ew) / g.sw + 1;
    if (g.oh < 1 || g.ow < 1) return;
    int64_t kdim = g.cg * g.kh * g.kw, x_n = g.n * g.c * g.ih * g.iw, y_n = g.n * g.m * g.oh * g.ow;
    bool f32 = rand_in(0, 1);
    void *x = malloc((size_t)x_n * 4);
    int8_t *w = malloc((size_t)(g.m * kdim)), *whwc = malloc((size_t)(g.m * kdim));
    for (int64_t i = 0; i < x_n; i++) {
        if (f32) ((float *)x)[i] = uniform() * 2;
        else ((uint8_t *)x)[i] = (uint8_t)rand_in(0, 255);
    }
    for (int64_t i = 0; i < g.m * kdim; i++)
        w[i] = (int8_t)rand_in(-w_lim(isa), w_lim(isa));
    int64_t taps = g.kh * g.kw;
    for (int64_t o = 0; o < g.m; o++) /* W as the driver packs it: K in (ky, kx, channel) order */
        for (int64_t c = 0; c < g.cg; c++)
            for (int64_t t = 0; t < taps; t++) whwc[(o * taps + t) * g.cg + c] = w[(o * g.cg + c) * taps + t];
    inf__qsrc src = {.data = x, .dtype = f32 ? INF_DTYPE_F32 : INF_DTYPE_U8, .scale = 0.015f, .zp = (int32_t)rand_in(0, 255),
                     .q_dtype = INF_DTYPE_U8};
    inf__qout_kind kind = f32 ? INF_QOUT_F32 : rand_in(0, 1) ? INF_QOUT_I32 : INF_QOUT_Q8;
    float *mult = malloc((size_t)g.m * 4), *bias = malloc((size_t)g.m * 4);
    int32_t *bias_i32 = malloc((size_t)g.m * 4);
    inf__qout out = random_out(mult, bias, bias_i32, g.m, kind);
    out.mult_per_col = true;
    void *y[2];
    for (int v = 0; v < 2; v++) {
        inf__qgemm_isa which = v ? INF_QGEMM_REF : isa;
        inf__qgemm_b pb[2];
        void *mem[2] = {NULL, NULL};
        for (int64_t grp = 0; grp < g.group; grp++) {
            mem[grp] = inf__aligned_alloc(inf__qgemm_pack_b_bytes(which, kdim, g.mg));
            inf__qgemm_pack_b_into(mem[grp], which, kdim, g.mg, whwc + grp * g.mg * kdim, INF_DTYPE_I8, kdim, true, NULL, 1,
                                   &pb[grp]);
        }
        void *scratch = inf__aligned_alloc(inf__qconv_scratch_bytes(&g, &pb[0]));
        y[v] = calloc((size_t)y_n, out_size(kind));
        inf__qconv_drive(pool, &g, pb, &src, &out, y[v], scratch);
        inf__aligned_free(scratch);
        for (int grp = 0; grp < 2; grp++) inf__aligned_free(mem[grp]);
    }
    char what[128];
    snprintf(what, sizeof what, "%s conv driver %lldx%lld k%lldx%lld s%lld,%lld d%lld,%lld g%lld kind=%d",
             inf__qgemm_isa_name(isa), (long long)g.ih, (long long)g.iw, (long long)g.kh, (long long)g.kw,
             (long long)g.sh, (long long)g.sw, (long long)g.dh, (long long)g.dw, (long long)g.group, (int)kind);
    check(!memcmp(y[0], y[1], (size_t)y_n * out_size(kind)), what, case_no);
    if (kind == INF_QOUT_I32) { /* and the int32 sums against a direct convolution */
        bool ok = true;
        for (int64_t n = 0; n < g.n && ok; n++)
            for (int64_t o = 0; o < g.m && ok; o++)
                for (int64_t oy = 0; oy < g.oh && ok; oy++)
                    for (int64_t ox = 0; ox < g.ow && ok; ox++) {
                        int64_t acc = 0, grp = o / g.mg;
                        for (int64_t c = 0; c < g.cg; c++)
                            for (int64_t ky = 0; ky < g.kh; ky++)
                                for (int64_t kx = 0; kx < g.kw; kx++) {
                                    int64_t iy = oy * g.sh - g.pt + ky * g.dh, ix = ox * g.sw - g.pl + kx * g.dw;
                                    int64_t xv = iy >= 0 && iy < g.ih && ix >= 0 && ix < g.iw
                                                     ? ((uint8_t *)x)[((n * g.c + grp * g.cg + c) * g.ih + iy) * g.iw + ix]
                                                     : src.zp;
                                    acc += (xv - src.zp) * w[((o * g.cg + c) * g.kh + ky) * g.kw + kx];
                                }
                        ok = ((int32_t *)y[0])[((n * g.m + o) * g.oh + oy) * g.ow + ox] == (int32_t)acc;
                    }
        check(ok, "conv driver int32 vs direct convolution", case_no);
    }
    free(x), free(w), free(whwc), free(mult), free(bias), free(bias_i32), free(y[0]), free(y[1]);
}

/* The fused forms of the conv driver (graph/passes/qdq_chain.c) against the
 * plain reference driver's output, transformed here: a MaxPool on the F32
 * output (max over each window of the unpooled reference), the uint8
 * channels-last store (QuantizeLinear of the reference's float values, also
 * pooled and after a residual Add of uint8 channels-last or float values),
 * and a channels-last uint8 input (the same sums as the planes). */
static void *run_conv(inf__qgemm_isa isa, inf__pool *pool, const inf__qconv_geom *g, const int8_t *whwc,
                      const inf__qsrc *src, const inf__qout *out, size_t y_bytes) {
    int64_t kdim = g->cg * g->kh * g->kw;
    inf__qgemm_b pb[2];
    void *mem[2] = {NULL, NULL};
    for (int64_t grp = 0; grp < g->group; grp++) {
        mem[grp] = inf__aligned_alloc(inf__qgemm_pack_b_bytes(isa, kdim, g->mg));
        inf__qgemm_pack_b_into(mem[grp], isa, kdim, g->mg, whwc + grp * g->mg * kdim, INF_DTYPE_I8, kdim, true, NULL, 1,
                               &pb[grp]);
    }
    void *scratch = inf__aligned_alloc(inf__qconv_scratch_bytes(g, &pb[0]));
    void *y = calloc(y_bytes, 1);
    inf__qconv_drive(pool, g, pb, src, out, y, scratch);
    inf__aligned_free(scratch);
    for (int grp = 0; grp < 2; grp++) inf__aligned_free(mem[grp]);
    return y;
}

static void conv_fused_case(inf__qgemm_isa isa, inf__pool *pool, int case_no) {
    inf__qconv_geom g = {.n = rand_in(1, 2), .group = rand_in(1, 2), .kh = rand_in(1, 3), .kw = rand_in(1, 3),
                         .sh = rand_in(1, 2), .sw = rand_in(1, 2), .dh = 1, .dw = 1};
    g.cg = rand_in(0, 1) ? 4 * rand_in(1, 3) : rand_in(1, 9), g.mg = rand_in(1, 40), g.c = g.cg * g.group,
    g.m = g.mg * g.group;
    g.ih = rand_in(g.kh + 1, 12), g.iw = rand_in(g.kw + 1, 14), g.pt = rand_in(0, g.kh - 1), g.pl = rand_in(0, g.kw - 1);
    g.oh = (g.ih + 2 * g.pt - g.kh) / g.sh + 1, g.ow = (g.iw + 2 * g.pl - g.kw) / g.sw + 1;
    int64_t kdim = g.cg * g.kh * g.kw, pos = g.oh * g.ow, x_n = g.n * g.c * g.ih * g.iw, y_n = g.n * g.m * pos;
    float *x = malloc((size_t)x_n * 4);
    uint8_t *x8 = malloc((size_t)x_n), *x8t = malloc((size_t)x_n);
    int8_t *whwc = malloc((size_t)(g.m * kdim));
    for (int64_t i = 0; i < x_n; i++) x[i] = uniform() * 2, x8[i] = (uint8_t)rand_in(0, 255);
    for (int64_t i = 0; i < g.m * kdim; i++)
        whwc[i] = (int8_t)rand_in(-w_lim(isa), w_lim(isa));
    int64_t plane = g.ih * g.iw;
    for (int64_t n = 0; n < g.n; n++) /* x8 channels last */
        for (int64_t c = 0; c < g.c; c++)
            for (int64_t p = 0; p < plane; p++) x8t[(n * plane + p) * g.c + c] = x8[(n * g.c + c) * plane + p];
    float *mult = malloc((size_t)g.m * 4), *bias = malloc((size_t)g.m * 4);
    int32_t *bias_i32 = malloc((size_t)g.m * 4);
    inf__qout out = random_out(mult, bias, bias_i32, g.m, INF_QOUT_F32);
    out.mult_per_col = true;
    if (rand_in(0, 3) == 0) /* a multiplier past 2^64: the uint8 stores' full QuantizeLinear for its chunk */
        mult[rand_in(0, g.m - 1)] = 3e30f;
    inf__qsrc src = {.data = x, .dtype = INF_DTYPE_F32, .scale = 0.015f, .zp = (int32_t)rand_in(0, 255),
                     .q_dtype = INF_DTYPE_U8};
    char what[160];
    snprintf(what, sizeof what, "%s fused conv %lldx%lld c%lld k%lldx%lld s%lld,%lld g%lld",
             inf__qgemm_isa_name(isa), (long long)g.ih, (long long)g.iw, (long long)g.cg, (long long)g.kh,
             (long long)g.kw, (long long)g.sh, (long long)g.sw, (long long)g.group);
    float *ref = run_conv(INF_QGEMM_REF, NULL, &g, whwc, &src, &out, (size_t)y_n * 4);

    /* MaxPool */
    inf__qconv_geom gp = g;
    gp.pkh = rand_in(1, g.oh < 2 ? 1 : 2), gp.pkw = rand_in(1, g.ow < 2 ? 1 : 2);
    gp.psh = gp.pkh + rand_in(0, 1), gp.psw = gp.pkw + rand_in(0, 1);
    int64_t ph = (g.oh - gp.pkh) / gp.psh + 1, pw = (g.ow - gp.pkw) / gp.psw + 1;
    float *pooled = run_conv(isa, pool, &gp, whwc, &src, &out, (size_t)(g.n * g.m * ph * pw) * 4);
    bool ok = true;
    for (int64_t i = 0; i < g.n * g.m && ok; i++)
        for (int64_t py = 0; py < ph && ok; py++)
            for (int64_t px = 0; px < pw && ok; px++) {
                float m = -INFINITY;
                for (int64_t ky = 0; ky < gp.pkh; ky++)
                    for (int64_t kx = 0; kx < gp.pkw; kx++) {
                        float v = ref[i * pos + (py * gp.psh + ky) * g.ow + px * gp.psw + kx];
                        m = v > m ? v : m;
                    }
                ok = pooled[(i * ph + py) * pw + px] == m;
            }
    check(ok, what, case_no);

    /* uint8 channels-last store: QuantizeLinear of the float value without its own Q -> DQ */
    inf__qout o8 = out;
    o8.requant = false;
    float *ref8 = run_conv(INF_QGEMM_REF, NULL, &g, whwc, &src, &o8, (size_t)y_n * 4);
    o8.kind = INF_QOUT_F32_U8, o8.rq_scale = 0.02f, o8.rq_zp = (int32_t)rand_in(0, 255), o8.rq_dtype = INF_DTYPE_U8;
    uint8_t *yu8 = run_conv(isa, pool, &g, whwc, &src, &o8, (size_t)y_n);
    ok = true;
    for (int64_t n = 0; n < g.n && ok; n++)
        for (int64_t j = 0; j < g.m && ok; j++)
            for (int64_t p = 0; p < pos && ok; p++) {
                uint8_t q;
                inf__quantize_u8_ref(&ref8[(n * g.m + j) * pos + p], 1, o8.rq_scale, o8.rq_zp, &q);
                ok = yu8[(n * pos + p) * g.m + j] == q;
            }
    check(ok, "uint8 channels-last store vs QuantizeLinear of the float store", case_no);

    /* the fused residual Add: act(value + r), value as the store makes it without the activation */
    float *r = malloc((size_t)y_n * 4);
    for (int64_t i = 0; i < y_n; i++) r[i] = uniform() * 3;
    inf__qout plain = out, with_r = out;
    plain.act = NULL, with_r.residual = r;
    float *val = run_conv(INF_QGEMM_REF, NULL, &g, whwc, &src, &plain, (size_t)y_n * 4);
    float *fused = run_conv(isa, pool, &g, whwc, &src, &with_r, (size_t)y_n * 4);
    ok = true;
    for (int64_t i = 0; i < y_n && ok; i++) {
        float v = val[i] + r[i];
        if (out.act && out.act->kind == INF_EPILOGUE_RELU) v = v > 0 ? v : 0;
        else if (out.act && out.act->kind == INF_EPILOGUE_LEAKY_RELU) v = v < 0 ? out.act->alpha * v : v;
        else if (out.act && out.act->kind == INF_EPILOGUE_CLIP) v = v < out.act->lo ? out.act->lo : v > out.act->hi ? out.act->hi : v;
        ok = fused[i] == v;
    }
    check(ok, "fused residual Add vs the store's value + r, then the activation", case_no);

    /* the residual Add with a uint8 channels-last output (out.pre: the value before the Add), the residual
     * uint8 channels last (worth (q - zp) * s) or float planes: QuantizeLinear(act(value + r)) */
    uint8_t *r8 = malloc((size_t)y_n);
    for (int64_t i = 0; i < y_n; i++)
        r8[i] = (uint8_t)rand_in(0, 255);
    inf__qout pre = plain, ou = out;
    ou.kind = INF_QOUT_F32_U8, ou.requant = false, ou.pre = &pre;
    ou.rq_scale = 0.03f, ou.rq_zp = (int32_t)rand_in(0, 255), ou.rq_dtype = INF_DTYPE_U8;
    for (int form = 0; form < 2; form++) {
        inf__qout of = ou;
        if (form)
            of.residual = r;
        else
            of.residual_u8 = r8, of.res_scale = 0.05f, of.res_zp = (int32_t)rand_in(0, 255);
        uint8_t *yr = run_conv(isa, pool, &g, whwc, &src, &of, (size_t)y_n);
        ok = true;
        for (int64_t n = 0; n < g.n && ok; n++)
            for (int64_t j = 0; j < g.m && ok; j++)
                for (int64_t p = 0; p < pos && ok; p++) {
                    int64_t at = (n * g.m + j) * pos + p, last = (n * pos + p) * g.m + j;
                    float rv = form ? r[at] : (float)((int32_t)r8[last] - of.res_zp) * of.res_scale, v = val[at] + rv;
                    if (out.act && out.act->kind == INF_EPILOGUE_RELU)
                        v = v > 0 ? v : 0;
                    else if (out.act && out.act->kind == INF_EPILOGUE_LEAKY_RELU)
                        v = v < 0 ? out.act->alpha * v : v;
                    else if (out.act && out.act->kind == INF_EPILOGUE_CLIP)
                        v = v < out.act->lo ? out.act->lo : v > out.act->hi ? out.act->hi : v;
                    uint8_t q;
                    inf__quantize_u8_ref(&v, 1, of.rq_scale, of.rq_zp, &q);
                    ok = yr[last] == q;
                }
        check(ok,
              form ? "uint8 store after a residual Add of float planes vs QuantizeLinear(act(value + r))"
                   : "uint8 store after a residual Add of uint8 channels last vs QuantizeLinear(act(value + DQ(r)))",
              case_no);
        free(yr);
    }
    free(r8);
    free(r), free(val), free(fused);

    /* MaxPool with the uint8 channels-last store: the max of QuantizeLinear of the unpooled float values */
    uint8_t *pooled8 = run_conv(isa, pool, &gp, whwc, &src, &o8, (size_t)(g.n * g.m * ph * pw));
    ok = true;
    for (int64_t n = 0; n < g.n && ok; n++)
        for (int64_t j = 0; j < g.m && ok; j++)
            for (int64_t py = 0; py < ph && ok; py++)
                for (int64_t px = 0; px < pw && ok; px++) {
                    uint8_t m = 0;
                    for (int64_t ky = 0; ky < gp.pkh; ky++)
                        for (int64_t kx = 0; kx < gp.pkw; kx++) {
                            uint8_t q;
                            inf__quantize_u8_ref(
                                &ref8[(n * g.m + j) * pos + (py * gp.psh + ky) * g.ow + px * gp.psw + kx], 1,
                                o8.rq_scale, o8.rq_zp, &q);
                            m = q > m ? q : m;
                        }
                    ok = pooled8[((n * ph + py) * pw + px) * g.m + j] == m;
                }
    check(ok, "pooled uint8 channels-last store vs the max of QuantizeLinear of the float store", case_no);
    free(pooled8);

    /* uint8 channels-last input */
    inf__qsrc s8 = {.data = x8, .dtype = INF_DTYPE_U8, .zp = src.zp}, s8t = s8;
    s8t.data = x8t, s8t.nhwc = true;
    inf__qout oi = {.kind = INF_QOUT_I32};
    int32_t *planes = run_conv(INF_QGEMM_REF, NULL, &g, whwc, &s8, &oi, (size_t)y_n * 4);
    int32_t *last = run_conv(isa, pool, &g, whwc, &s8t, &oi, (size_t)y_n * 4);
    check(!memcmp(planes, last, (size_t)y_n * 4), "channels-last uint8 input vs planes", case_no);

    free(x), free(x8), free(x8t), free(whwc), free(mult), free(bias), free(bias_i32);
    free(ref), free(pooled), free(ref8), free(yu8), free(planes), free(last);
}

/* A stem (ops/ref/quantize_conv.c): 1-3 float input channels, W packed with the channels padded to 4 by zero
 * weights (inf__qconv_geom.cgp) so the VNNI kernels read the image in place, its input packed 4 bytes a
 * position -- against the reference driver on the unpadded W, bit for bit: the uint8 channels-last store,
 * pooled (the stem's fused MaxPool) or not, and the float store. */
/* A random order of the RGB stem's 28 row bytes (ops/qgemm.h inf__qconv_rgb): a shuffle of 0 .. 27. */
static void random_rgb_order(uint8_t *order) {
    for (int k = 0; k < 28; k++)
        order[k] = (uint8_t)k;
    for (int k = 27; k > 0; k--) {
        int j = (int)rand_in(0, k);
        uint8_t t = order[k];
        order[k] = order[j], order[j] = t;
    }
}

/* rgb: an RGB stem (3 channels, 3 x 3, stride 1 along x, 2 x 2 pooled), whose pooled form also runs with W packed
 * densely (inf__qconv_geom.rgb: the im2col rows of ops/ref/qconv_rgb.c) where the pair-safe kernel has a route. */
static void conv_stem_case(inf__qgemm_isa isa, inf__pool *pool, int case_no, bool rgb) {
    if (isa == INF_QGEMM_REF) return;
    inf__qconv_geom g = {.n = rand_in(1, 2),
                         .group = 1,
                         .kh = rgb ? 3 : rand_in(1, 3),
                         .kw = rgb ? 3 : rand_in(1, 3),
                         .sh = rand_in(1, 2),
                         .sw = rgb ? 1 : rand_in(1, 2),
                         .dh = 1,
                         .dw = 1};
    g.cg = g.c = rgb ? 3 : rand_in(1, 3), g.mg = g.m = rand_in(1, 70);
    g.ih = rand_in(g.kh + 1, 40), g.iw = rand_in(g.kw + 1, 40), g.pt = rand_in(0, g.kh - 1),
    g.pl = rand_in(0, g.kw - 1);
    g.oh = (g.ih + 2 * g.pt - g.kh) / g.sh + 1, g.ow = (g.iw + 2 * g.pl - g.kw) / g.sw + 1;
    int64_t taps = g.kh * g.kw, kdim = g.cg * taps, pos = g.oh * g.ow, x_n = g.n * g.c * g.ih * g.iw;
    float *x = malloc((size_t)x_n * 4);
    int8_t *whwc = malloc((size_t)(g.m * kdim)), *w4 = calloc((size_t)(g.m * taps * 4), 1);
    for (int64_t i = 0; i < x_n; i++)
        x[i] = uniform() * 2;
    for (int64_t i = 0; i < g.m * kdim; i++)
        whwc[i] = (int8_t)rand_in(-w_lim(isa), w_lim(isa)); /* pair-safe weights: ubs2 where a slot allows */
    for (int64_t o = 0; o < g.m; o++)
        for (int64_t t = 0; t < taps; t++)
            for (int64_t c = 0; c < g.cg; c++)
                w4[(o * taps + t) * 4 + c] = whwc[(o * taps + t) * g.cg + c];
    float *mult = malloc((size_t)g.m * 4), *bias = malloc((size_t)g.m * 4);
    int32_t *bias_i32 = malloc((size_t)g.m * 4);
    inf__qout out = random_out(mult, bias, bias_i32, g.m, INF_QOUT_F32), o8 = out;
    out.mult_per_col = true, o8 = out;
    o8.requant = false, o8.kind = INF_QOUT_F32_U8, o8.rq_scale = 0.02f, o8.rq_zp = (int32_t)rand_in(0, 255);
    o8.rq_dtype = INF_DTYPE_U8;
    inf__qsrc src = {
        .data = x, .dtype = INF_DTYPE_F32, .scale = 0.015f, .zp = (int32_t)rand_in(0, 255), .q_dtype = INF_DTYPE_U8};
    inf__qconv_geom g4 = g;
    g4.cgp = 4;
    for (int form = 0; form < 3; form++) { /* uint8 store, pooled uint8 store, float store */
        inf__qconv_geom gr = g, gf = g4;
        if (form == 1) { /* half of them 2 x 2 (the kernels' pooled path where the store is monotonic) */
            bool two = (rgb || rand_in(0, 1)) && g.oh >= 2 && g.ow >= 2;
            gr.pkh = two ? 2 : rand_in(1, g.oh < 2 ? 1 : 2), gr.pkw = two ? 2 : rand_in(1, g.ow < 2 ? 1 : 2);
            gr.psh = gr.pkh + rand_in(0, 1), gr.psw = gr.pkw + rand_in(0, 1);
            gf.pkh = gr.pkh, gf.pkw = gr.pkw, gf.psh = gr.psh, gf.psw = gr.psw;
        }
        int64_t outs =
            form == 1 ? g.n * g.m * ((g.oh - gr.pkh) / gr.psh + 1) * ((g.ow - gr.pkw) / gr.psw + 1) : g.n * g.m * pos;
        const inf__qout *o = form == 2 ? &out : &o8;
        size_t bytes = (size_t)outs * (form == 2 ? 4 : 1);
        void *ref = run_conv(INF_QGEMM_REF, NULL, &gr, whwc, &src, o, bytes);
        inf__qgemm_b pb;
        void *mem = inf__aligned_alloc(inf__qgemm_pack_b_bytes(isa, taps * 4, g.m));
        inf__qgemm_pack_b_into(mem, isa, taps * 4, g.m, w4, INF_DTYPE_I8, taps * 4, true, NULL, 1, &pb);
        void *scratch = inf__aligned_alloc(inf__qconv_scratch_bytes(&gf, &pb));
        void *y = calloc(bytes, 1);
        inf__qconv_drive(pool, &gf, &pb, &src, o, y, scratch);
        char what[160];
        snprintf(what, sizeof what, "%s stem conv %lldx%lld c%lld m%lld k%lldx%lld s%lld,%lld form %d",
                 inf__qgemm_isa_name(isa), (long long)g.ih, (long long)g.iw, (long long)g.c, (long long)g.m,
                 (long long)g.kh, (long long)g.kw, (long long)g.sh, (long long)g.sw, form);
        check(!memcmp(ref, y, bytes), what, case_no);
        inf__qconv_rgb rgbw; /* the RGB stem's dense W in a random row order (tap * 3 + channel; 27 the zero) */
        void *mem_rgb =
            rgb && isa == INF_QGEMM_AVX2_UBS ? inf__aligned_alloc(inf__qgemm_pack_b_bytes(isa, 28, g.m)) : NULL;
        if (mem_rgb) {
            random_rgb_order(rgbw.order);
            int8_t *dense = malloc((size_t)(g.m * 28));
            for (int64_t o = 0; o < g.m; o++)
                for (int k = 0; k < 28; k++)
                    dense[o * 28 + k] = rgbw.order[k] == 27 ? 0 : whwc[o * kdim + rgbw.order[k]];
            inf__qgemm_pack_b_into(mem_rgb, isa, 28, g.m, dense, INF_DTYPE_I8, 28, true, NULL, 1, &rgbw.b);
            inf__qconv_rgb_masks(&rgbw);
            gf.rgb = rgbw.b.route ? &rgbw : NULL;
            memset(y, 0, bytes);
            inf__qconv_drive(pool, &gf, &pb, &src, o, y, scratch);
            check(!memcmp(ref, y, bytes), "rgb stem: dense W, im2col rows", case_no);
            free(dense);
        }
        inf__aligned_free(mem_rgb);
        inf__aligned_free(scratch), inf__aligned_free(mem), free(ref), free(y);
    }
    free(x), free(whwc), free(w4), free(mult), free(bias), free(bias_i32);
}

/* The RGB stem's im2col rows (random row orders): the AVX2 form against the twin byte for byte, and the twin
 * against the image (row byte k: the value order[k] = ky * 9 + kx * 3 + channel names, 0 for 27); nothing written
 * past 56 npairs + 4 bytes. */
static void rgb_pairs_cases(void) {
#if defined(__x86_64__) && !defined(INF_EDGE)
    if (!isa_runs(INF_QGEMM_AVX2_UBS)) {
        printf("skipped: rgb im2col pairs\n");
        return;
    }
    for (int case_no = 0; case_no < 200; case_no++) {
        int64_t w = rand_in(4, 40), h = rand_in(3, 8), rowb = 4 * w + 4 * rand_in(0, 3), np = rand_in(1, 30);
        inf__qconv_rgb r;
        if (case_no % 4)
            random_rgb_order(r.order);
        else
            for (int k = 0; k < 28; k++)
                r.order[k] = (uint8_t)k;
        inf__qconv_rgb_masks(&r);
        uint8_t *x = malloc((size_t)(h * rowb)), *d[2];
        for (int64_t i = 0; i < h * rowb; i++)
            x[i] = (uint8_t)rand_in(0, 255);
        const uint8_t **first = malloc((size_t)np * sizeof *first);
        for (int64_t i = 0; i < np; i++) /* a pair reads positions x .. x + 3 of rows y .. y + 2 */
            first[i] = x + rand_in(0, h - 3) * rowb + 4 * rand_in(0, w - 4);
        size_t bytes = (size_t)(np * 2 * INF_QCONV_RGB_ROW);
        for (int k = 0; k < 2; k++) {
            d[k] = malloc(bytes + 4 + 32);
            memset(d[k], 0xA5, bytes + 4 + 32);
        }
        inf__qconv_rgb_pairs_ref(&r, first, np, rowb, d[0]);
        inf__qconv_rgb_pairs_avx2(&r, first, np, rowb, d[1]);
        check(!memcmp(d[0], d[1], bytes), "rgb im2col pairs avx2 vs twin", case_no);
        bool untouched = true, image = true;
        for (size_t i = bytes + 4; i < bytes + 36; i++)
            untouched = untouched && d[1][i] == 0xA5;
        for (int64_t i = 0; i < 2 * np; i++)
            for (int k = 0; k < INF_QCONV_RGB_ROW; k++) {
                int v = r.order[k];
                const uint8_t *p = first[i / 2] + 4 * (i % 2) + (v / 9) * rowb + (v % 9 / 3) * 4 + v % 3;
                image = image && d[0][i * INF_QCONV_RGB_ROW + k] == (v < 27 ? *p : 0);
            }
        check(untouched, "rgb im2col pairs: nothing past 56 n + 4 bytes", case_no);
        check(image, "rgb im2col pairs twin: the image's values in the row order", case_no);
        free(x), free(first), free(d[0]), free(d[1]);
    }
    printf("rgb im2col pairs: checked\n");
#endif
}

/* ---- depthwise convolutions ---- */

static void depthwise_case(inf__qgemm_isa isa, inf__pool *pool, int case_no) {
    int64_t c = rand_in(1, 40);
    inf__qconv_geom g = {.n = rand_in(1, 2), .c = c, .m = c, .group = c, .cg = 1, .mg = 1, .kh = rand_in(1, 5),
                         .kw = rand_in(1, 5), .sh = rand_in(1, 2), .sw = rand_in(1, 2), .dh = rand_in(1, 2), .dw = rand_in(1, 2)};
    g.ih = rand_in(g.kh, 12), g.iw = rand_in(g.kw, 14);
    g.pt = rand_in(0, g.kh - 1), g.pl = rand_in(0, g.kw - 1);
    int64_t eh = (g.kh - 1) * g.dh + 1, ew = (g.kw - 1) * g.dw + 1;
    g.oh = (g.ih + 2 * g.pt - eh) / g.sh + 1, g.ow = (g.iw + 2 * g.pl - ew) / g.sw + 1;
    if (g.oh < 1 || g.ow < 1) return;
    int64_t taps = g.kh * g.kw, x_n = g.n * c * g.ih * g.iw, y_n = g.n * c * g.oh * g.ow;
    bool f32 = rand_in(0, 1), w_u8 = rand_in(0, 2) == 0;
    int zp_kind = (int)rand_in(0, 2); /* none, per tensor, per channel */
    void *x = malloc((size_t)x_n * 4);
    uint8_t *w = malloc((size_t)(c * taps)), *wz = malloc((size_t)c);
    for (int64_t i = 0; i < x_n; i++) {
        if (f32) ((float *)x)[i] = uniform() * 2;
        else ((uint8_t *)x)[i] = (uint8_t)rand_in(0, 255);
    }
    for (int64_t i = 0; i < c * taps; i++) w[i] = (uint8_t)(w_u8 ? rand_in(0, 255) : rand_in(-128, 127));
    for (int64_t i = 0; i < c; i++) wz[i] = (uint8_t)(zp_kind == 0 ? 0 : w_u8 ? rand_in(0, 255) : rand_in(-128, 127));
    inf__qsrc src = {.data = x, .dtype = f32 ? INF_DTYPE_F32 : INF_DTYPE_U8, .scale = 0.015f, .zp = (int32_t)rand_in(0, 255),
                     .q_dtype = INF_DTYPE_U8};
    inf__qout_kind kind = f32 ? INF_QOUT_F32 : rand_in(0, 1) ? INF_QOUT_I32 : INF_QOUT_Q8;
    float *mult = malloc((size_t)c * 4), *bias = malloc((size_t)c * 4);
    int32_t *bias_i32 = malloc((size_t)c * 4);
    inf__qout out = random_out(mult, bias, bias_i32, c, kind);
    out.mult_per_col = true;
    inf_dtype wdt = w_u8 ? INF_DTYPE_U8 : INF_DTYPE_I8;
    void *y[2];
    for (int v = 0; v < 2; v++) {
        inf__qgemm_isa which = v ? INF_QGEMM_REF : isa;
        inf__qgemm_b pb; /* the driver takes the ISA from it */
        void *bmem = inf__aligned_alloc(inf__qgemm_pack_b_bytes(which, taps, 1));
        inf__qgemm_pack_b_into(bmem, which, taps, 1, w, wdt, taps, true, NULL, 1, &pb);
        inf__qdw_w dw;
        void *wmem = inf__aligned_alloc(inf__qdw_pack_bytes(c, taps));
        inf__qdw_pack_into(wmem, c, taps, w, wdt, zp_kind ? wz : NULL, zp_kind == 2 ? c : 1, &dw);
        g.dwise = &dw;
        void *scratch = inf__aligned_alloc(inf__qconv_scratch_bytes(&g, &pb));
        y[v] = calloc((size_t)y_n, out_size(kind));
        inf__qconv_drive(pool, &g, &pb, &src, &out, y[v], scratch);
        inf__aligned_free(scratch), inf__aligned_free(wmem), inf__aligned_free(bmem);
    }
    char what[160];
    snprintf(what, sizeof what, "%s depthwise c%lld %lldx%lld k%lldx%lld s%lld,%lld d%lld,%lld w%s zp%d kind=%d",
             inf__qgemm_isa_name(isa), (long long)c, (long long)g.ih, (long long)g.iw, (long long)g.kh, (long long)g.kw,
             (long long)g.sh, (long long)g.sw, (long long)g.dh, (long long)g.dw, w_u8 ? "u8" : "i8", zp_kind, (int)kind);
    check(!memcmp(y[0], y[1], (size_t)y_n * out_size(kind)), what, case_no);
    if (kind == INF_QOUT_I32) {
        bool ok = true;
        for (int64_t n = 0; n < g.n && ok; n++)
            for (int64_t o = 0; o < c && ok; o++)
                for (int64_t oy = 0; oy < g.oh && ok; oy++)
                    for (int64_t ox = 0; ox < g.ow && ok; ox++) {
                        int64_t acc = 0, zw = zp_kind == 0 ? 0 : w_u8 ? wz[zp_kind == 2 ? o : 0] : (int8_t)wz[zp_kind == 2 ? o : 0];
                        for (int64_t ky = 0; ky < g.kh; ky++)
                            for (int64_t kx = 0; kx < g.kw; kx++) {
                                int64_t iy = oy * g.sh - g.pt + ky * g.dh, ix = ox * g.sw - g.pl + kx * g.dw;
                                int64_t xv = iy >= 0 && iy < g.ih && ix >= 0 && ix < g.iw
                                                 ? ((uint8_t *)x)[((n * c + o) * g.ih + iy) * g.iw + ix]
                                                 : src.zp;
                                int64_t wv = w_u8 ? w[o * taps + ky * g.kw + kx] : (int8_t)w[o * taps + ky * g.kw + kx];
                                acc += (xv - src.zp) * (wv - zw);
                            }
                        ok = ((int32_t *)y[0])[((n * c + o) * g.oh + oy) * g.ow + ox] == (int32_t)acc;
                    }
        check(ok, "depthwise driver int32 vs direct depthwise convolution", case_no);
    }
    free(x), free(w), free(wz), free(mult), free(bias), free(bias_i32), free(y[0]), free(y[1]);
}

/* The quotient x / scale next to a half-integer (a few ulps either side),
 * near +-1024, and ordinary, with no NaN in the vectors: the cases where
 * any shortcut for the division (a reciprocal multiply) would round
 * differently from QuantizeLinear's true quotient. */
static void quantize_near_half_cases(void) {
#if defined(__x86_64__)
    if (!inf__cpu_has_avx2_fma()) return;
    enum { N = 4099 };
    static float x[N];
    static uint8_t q1[N], q2[N];
    static const float scales[] = {1.0f / 3.0f, 0.1f, 7.77e-5f, 0.0039215689f, 1e-30f, 3e30f, 1.0f, 0.023529412f};
    for (int round = 0; round < 400; round++) {
        float scale = round < 8 ? scales[round] : (float)rand_in(1, 1 << 20) / (float)rand_in(1, 1 << 20);
        int32_t zp = (int32_t)rand_in(0, 255);
        for (int i = 0; i < N; i++) {
            int kind = (int)rand_in(0, 3);
            float q = kind == 0   ? (float)rand_in(-1100, 1100) + 0.5f
                      : kind == 1 ? (float)rand_in(-1030, 1030)
                                  : uniform() * 600.0f;
            float v = q * scale;
            for (int s = (int)rand_in(-3, 3); s != 0; s += s > 0 ? -1 : 1)
                v = nextafterf(v, s > 0 ? INFINITY : -INFINITY);
            x[i] = kind == 3 ? uniform() * 300.0f * scale : v;
        }
        inf__quantize_u8_ref(x, N, scale, zp, q1);
        inf__quantize_u8_avx2(x, N, scale, zp, q2);
        check(!memcmp(q1, q2, N), "quantize_u8 avx2 vs ref (near half)", round);
        if (isa_runs(INF_QGEMM_VNNI512)) {
            inf__quantize_u8_avx512(x, N, scale, zp, q2);
            check(!memcmp(q1, q2, N), "quantize_u8 avx512 vs ref (near half)", round);
        }
    }
#endif
}

/* ---- the uint8 row store (INF_QOUT_F32_U8) against a scalar twin ----
 * inf__qstore_u8_row_avx2 (and the 16-lane form) on one row of sums
 * against (float)acc * mult + bias and the activation computed here, then
 * QuantizeLinear's bytes (inf__quantize_u8_ref).  Ordinary rows take the
 * AVX2 store's lean sequence (no NaN compare); now and then a multiplier or
 * bias past 2^64 or infinite (saturating quotients, still lean), a NaN
 * multiplier or bias, an infinite multiplier times a zero sum, or a zero
 * scale with a zero value (NaN quotients: the row falls back to the full
 * sequence), or a zero point outside [0, 255] (the full sequence at once);
 * the bytes after the row stay untouched. */
static float twin_act(const inf__epilogue *ep, float v) {
    if (!ep) return v;
    switch (ep->kind) {
    case INF_EPILOGUE_RELU:
        return v > 0 ? v : 0;
    case INF_EPILOGUE_LEAKY_RELU:
        return v < 0 ? ep->alpha * v : v;
    case INF_EPILOGUE_CLIP:
        return v < ep->lo ? ep->lo : v > ep->hi ? ep->hi : v;
    default:
        return v;
    }
}

static void qstore_u8_row_cases(void) {
#if defined(__x86_64__)
    if (!inf__cpu_has_avx2_fma()) return;
    enum { N = 300 };
    static int32_t c[N];
    static float mult[N + 16], bias[N + 16], v[N];
    static uint8_t want[N], got[N + 16];
    static const float odd[] = {3e30f, -3e30f, INFINITY, -INFINITY, NAN, 1.9e19f};
    for (int round = 0; round < 400; round++) {
        int64_t n = rand_in(1, N - 20), j0 = rand_in(0, 16);
        for (int64_t j = 0; j < n + j0; j++)
            mult[j] = (float)rand_in(1, 1000) * 1e-5f, bias[j] = uniform() * 2.0f;
        for (int64_t j = 0; j < n; j++)
            c[j] = (int32_t)rand_in(-300000, 300000);
        inf__qout o = {.kind = INF_QOUT_F32_U8,
                       .mult = mult,
                       .mult_per_col = rand_in(0, 1),
                       .bias_f32 = rand_in(0, 2) ? bias : NULL,
                       .act = rand_in(0, 4) ? &acts[rand_in(0, 3)] : NULL,
                       .rq_scale = (float)rand_in(1, 1000) * 1e-4f,
                       .rq_zp = (int32_t)rand_in(0, 255),
                       .rq_dtype = INF_DTYPE_U8};
        int odd_kind = round < 40 ? 0 : (int)rand_in(0, 7);
        int64_t at = j0 + rand_in(0, n - 1);
        if (odd_kind == 1) mult[o.mult_per_col ? at : 0] = odd[rand_in(0, 5)];
        if (odd_kind == 2 && o.bias_f32) bias[at] = odd[rand_in(0, 5)];
        if (odd_kind == 3) mult[o.mult_per_col ? at : 0] = INFINITY, c[at - j0] = 0; /* inf * 0: NaN */
        if (odd_kind == 4) o.rq_scale = 0, c[at - j0] = 0, o.act = NULL;             /* 0 / 0: NaN */
        if (odd_kind == 5) o.rq_zp = rand_in(0, 1) ? -(int32_t)rand_in(1, 40) : (int32_t)rand_in(256, 400);
        if (odd_kind == 6) o.rq_scale = rand_in(0, 1) ? 1e-30f : 3e30f;
        for (int64_t j = 0; j < n; j++) {
            float x = (float)c[j] * mult[o.mult_per_col ? j0 + j : 0];
            if (o.bias_f32) x += bias[j0 + j];
            v[j] = twin_act(o.act, x);
        }
        inf__quantize_u8_ref(v, n, o.rq_scale, o.rq_zp, want);
        char what[120];
        snprintf(what, sizeof what, "qstore_u8_row avx2 vs ref n=%lld odd=%d", (long long)n, odd_kind);
        memset(got, 0xA5, sizeof got);
        inf__qstore_u8_row_avx2(&o, c, j0, n, got);
        bool untouched = true;
        for (int64_t j = n; j < n + 16; j++)
            untouched = untouched && got[j] == 0xA5;
        check(!memcmp(want, got, (size_t)n) && untouched, what, round);
        if (isa_runs(INF_QGEMM_VNNI512)) {
            memset(got, 0xA5, sizeof got);
            inf__qstore_u8_row_avx512(&o, c, j0, n, got);
            snprintf(what, sizeof what, "qstore_u8_row avx512 vs ref n=%lld odd=%d", (long long)n, odd_kind);
            check(!memcmp(want, got, (size_t)n), what, round);
        }
    }
#endif
}

/* ---- the int8 / uint8 requantizing row store (INF_QOUT_Q8, QLinearMatMul) against a scalar twin ----
 * inf__qstore_q8_row_avx2 / _avx512 on one row of sums against QLinearMatMul's arithmetic written here:
 * round half to even of (float)acc * mult, + y_zero_point, saturated to the type; a NaN product (an infinite
 * multiplier times a zero sum) gives the zero point.  Both output types, zero points at the type's edges,
 * multipliers that saturate, lengths that leave tails; the bytes after the row stay untouched. */
static uint8_t twin_q8(float v, int32_t zp, bool u8) {
    float r = nearbyintf(v) + (float)zp, lo = u8 ? 0.0f : -128.0f, hi = u8 ? 255.0f : 127.0f;
    if (r != r) r = (float)zp;
    r = r < lo ? lo : r > hi ? hi : r;
    return u8 ? (uint8_t)r : (uint8_t)(int8_t)r;
}

static void qstore_q8_row_cases(void) {
#if defined(__x86_64__)
    if (!inf__cpu_has_avx2_fma()) return;
    enum { N = 300 };
    static int32_t c[N];
    static float mult[N + 16];
    static uint8_t want[N], got[N + 16];
    for (int round = 0; round < 400; round++) {
        int64_t n = rand_in(1, N - 20), j0 = rand_in(0, 16);
        bool u8 = rand_in(0, 1);
        for (int64_t j = 0; j < n + j0; j++) mult[j] = (float)rand_in(1, 1000) * 1e-5f;
        for (int64_t j = 0; j < n; j++) c[j] = (int32_t)rand_in(-300000, 300000);
        if (round % 5 == 0) c[rand_in(0, n - 1)] = rand_in(0, 1) ? INT32_MAX : INT32_MIN;
        inf__qout o = {.kind = INF_QOUT_Q8,
                       .mult = mult,
                       .mult_per_col = rand_in(0, 1),
                       .y_dtype = u8 ? INF_DTYPE_U8 : INF_DTYPE_I8,
                       .y_zp = u8 ? (int32_t)rand_in(0, 255) : (int32_t)rand_in(-128, 127)};
        if (round % 7 == 0) o.y_zp = u8 ? (rand_in(0, 1) ? 0 : 255) : (rand_in(0, 1) ? -128 : 127);
        int64_t at = rand_in(0, n - 1);
        if (round % 9 == 0) mult[o.mult_per_col ? j0 + at : 0] = INFINITY, c[at] = 0; /* inf * 0: NaN */
        if (round % 11 == 0) mult[o.mult_per_col ? j0 + at : 0] = 3e30f;
        for (int64_t j = 0; j < n; j++) want[j] = twin_q8((float)c[j] * mult[o.mult_per_col ? j0 + j : 0], o.y_zp, u8);
        char what[120];
        memset(got, 0xA5, sizeof got);
        inf__qstore_q8_row_avx2(&o, c, j0, n, got);
        bool untouched = true;
        for (int64_t j = n; j < n + 16; j++) untouched = untouched && got[j] == 0xA5;
        snprintf(what, sizeof what, "qstore_q8_row avx2 vs twin n=%lld %s", (long long)n, u8 ? "u8" : "i8");
        check(!memcmp(want, got, (size_t)n) && untouched, what, round);
        if (isa_runs(INF_QGEMM_VNNI512)) {
            memset(got, 0xA5, sizeof got);
            inf__qstore_q8_row_avx512(&o, c, j0, n, got);
            untouched = true;
            for (int64_t j = n; j < n + 16; j++) untouched = untouched && got[j] == 0xA5;
            snprintf(what, sizeof what, "qstore_q8_row avx512 vs twin n=%lld %s", (long long)n, u8 ? "u8" : "i8");
            check(!memcmp(want, got, (size_t)n) && untouched, what, round);
        }
    }
#endif
}

/* The AVX2 plain uint8 block store (x86/qstore_res_avx2.c, inf__qstore_u8_rows_avx2) against the sequence
 * computed here per row: (float)acc * mult + bias, the activation, QuantizeLinear (inf__quantize_u8_ref).
 * Blocks of 1-24 rows with strides; where it returns true the bytes must be those, where false nothing may be
 * written; it must run on ordinary blocks (n a multiple of 8, finite parameters) and decline where a value could
 * be NaN (inf * 0, 0 / 0) or the zero point is outside [0, 255]. */
static void qstore_u8_rows_cases(void) {
#if defined(__x86_64__)
    if (!inf__cpu_has_avx2_fma()) return;
    enum { N = 136, R = 24, LD = N + 24 };
    static int32_t c[R * LD];
    static float mult[N + 16], bias[N + 16], v[N];
    static uint8_t want[R * LD], got[R * LD];
    static const float odd[] = {3e30f, -3e30f, INFINITY, -INFINITY, NAN, 1.9e19f};
    for (int round = 0; round < 500; round++) {
        int64_t n = rand_in(0, 5) ? 8 * rand_in(1, N / 8) : rand_in(1, N), j0 = rand_in(0, 16);
        int64_t rows = rand_in(1, R), ldc = n + rand_in(0, 24), ldy = n + rand_in(0, 24);
        for (int64_t j = 0; j < n + j0; j++)
            mult[j] = (float)rand_in(1, 1000) * 1e-5f, bias[j] = uniform() * 2.0f;
        for (int64_t i = 0; i < rows * ldc; i++)
            c[i] = (int32_t)rand_in(-2000000000, 2000000000) / (rand_in(0, 1) ? 1 : 5000);
        inf__qout o = {.kind = INF_QOUT_F32_U8,
                       .mult = mult,
                       .mult_per_col = rand_in(0, 1),
                       .bias_f32 = rand_in(0, 2) ? bias : NULL,
                       .act = rand_in(0, 4) ? &acts[rand_in(0, 3)] : NULL,
                       .rq_scale = (float)rand_in(1, 1000) * 1e-4f,
                       .rq_zp = (int32_t)rand_in(0, 255),
                       .rq_dtype = INF_DTYPE_U8};
        int odd_kind = round < 100 ? 0 : (int)rand_in(0, 6);
        int64_t at = j0 + rand_in(0, n - 1), row = rand_in(0, rows - 1);
        if (odd_kind == 1) mult[o.mult_per_col ? at : 0] = odd[rand_in(0, 5)];
        if (odd_kind == 2 && o.bias_f32) bias[at] = odd[rand_in(0, 5)];
        if (odd_kind == 3) mult[o.mult_per_col ? at : 0] = INFINITY, c[row * ldc + at - j0] = 0; /* inf * 0 */
        if (odd_kind == 4) o.rq_scale = 0, c[row * ldc + at - j0] = 0, o.act = NULL;             /* 0 / 0 */
        if (odd_kind == 5) o.rq_zp = rand_in(0, 1) ? -(int32_t)rand_in(1, 40) : (int32_t)rand_in(256, 400);
        if (odd_kind == 6) o.rq_scale = rand_in(0, 1) ? 1e-30f : 3e30f;
        memset(want, 0xA5, sizeof want);
        for (int64_t i = 0; i < rows; i++) {
            for (int64_t j = 0; j < n; j++) {
                float x = (float)c[i * ldc + j] * mult[o.mult_per_col ? j0 + j : 0];
                if (o.bias_f32) x += bias[j0 + j];
                v[j] = twin_act(o.act, x);
            }
            inf__quantize_u8_ref(v, n, o.rq_scale, o.rq_zp, want + i * ldy);
        }
        memset(got, 0xA5, sizeof got);
        bool ran = inf__qstore_u8_rows_avx2(&o, c, ldc, rows, j0, n, got, ldy);
        bool untouched = true, same = true;
        for (int64_t i = 0; i < rows * ldy; i++) {
            untouched = untouched && got[i] == 0xA5;
            same = same && (i % ldy >= n || got[i] == want[i]) && (i % ldy < n || got[i] == 0xA5);
        }
        bool must_run = odd_kind == 0 && n % 8 == 0, must_decline = odd_kind == 3 || odd_kind == 4 || odd_kind == 5;
        char what[140];
        snprintf(what, sizeof what, "qstore_u8_rows avx2 vs ref n=%lld rows=%lld odd=%d ran=%d", (long long)n,
                 (long long)rows, odd_kind, ran);
        check(ran ? same && !must_decline : untouched && !must_run, what, round);
    }
#endif
}

/* The AVX2 uint8 residual store (x86/qstore_res_avx2.c) against the sequence computed here: pre's value
 * (float)acc * mult + bias, its Q -> DQ when pre->requant (uint8 or int8), + (r - res_zp) * res_scale, Relu or
 * nothing, then QuantizeLinear (inf__quantize_u8_ref).  Blocks of 1-24 rows with row strides; cases it must
 * decline (returns false, nothing written): n not a multiple of 8, an activation of pre's own or one other than
 * Relu, multipliers / biases / the residual scale at 3e30 or NaN or infinite, an output zero point outside
 * [0, 255]. */
static void qstore_res_rows_cases(void) {
#if defined(__x86_64__)
    if (!inf__cpu_has_avx2_fma()) return;
    enum { R = 24, N = 136, LD = N + 24 };
    static int32_t c[R * LD];
    static float mult[N + 16], bias[N + 16];
    static uint8_t r8[R * LD], want[R * LD], got[R * LD];
    static const float odd[] = {3e30f, -3e30f, INFINITY, -INFINITY, NAN};
    const inf__epilogue relu = {.kind = INF_EPILOGUE_RELU};
    for (int round = 0; round < 500; round++) {
        int64_t rows = rand_in(1, R), n = rand_in(0, 3) ? 8 * rand_in(1, N / 8) : rand_in(1, N), j0 = rand_in(0, 16);
        int64_t ldc = n + rand_in(0, 24), ldy = n + rand_in(0, 24);
        for (int64_t j = 0; j < n + j0; j++)
            mult[j] = (float)rand_in(1, 1000) * 1e-5f, bias[j] = uniform() * 2.0f;
        for (int64_t i = 0; i < rows * LD; i++)
            c[i] = (int32_t)(rand_in(0, 9) ? rand_in(-300000, 300000) : rand_in(-2000000000, 2000000000)),
            r8[i] = (uint8_t)rand_in(0, 255);
        inf__qout pre = {.kind = INF_QOUT_F32,
                         .mult = mult,
                         .mult_per_col = rand_in(0, 1),
                         .bias_f32 = rand_in(0, 2) ? bias : NULL,
                         .requant = rand_in(0, 3) != 0,
                         .rq_scale = (float)rand_in(1, 1000) * 1e-3f,
                         .rq_zp = (int32_t)rand_in(0, 255),
                         .rq_dtype = rand_in(0, 1) ? INF_DTYPE_U8 : INF_DTYPE_I8};
        if (pre.rq_dtype == INF_DTYPE_I8) pre.rq_zp -= 128;
        inf__qout o = {.kind = INF_QOUT_F32_U8,
                       .pre = &pre,
                       .res_scale = (float)rand_in(1, 1000) * 1e-3f,
                       .res_zp = (int32_t)rand_in(0, 255),
                       .rq_scale = (float)rand_in(1, 1000) * 1e-3f,
                       .rq_zp = (int32_t)rand_in(0, 255),
                       .rq_dtype = INF_DTYPE_U8};
        const inf__epilogue *act = rand_in(0, 3) ? &relu : NULL;
        bool eligible = n % 8 == 0;
        int odd_kind = round < 50 ? 0 : (int)rand_in(0, 6);
        int64_t at = j0 + rand_in(0, n - 1);
        if (odd_kind == 1) mult[pre.mult_per_col ? at : 0] = odd[rand_in(0, 4)], eligible = false;
        if (odd_kind == 2 && pre.bias_f32) bias[at] = odd[rand_in(0, 4)], eligible = false;
        if (odd_kind == 3) o.res_scale = odd[rand_in(0, 4)], eligible = false;
        if (odd_kind == 4)
            o.rq_zp = rand_in(0, 1) ? -(int32_t)rand_in(1, 40) : (int32_t)rand_in(256, 400), eligible = false;
        if (odd_kind == 5) act = &acts[rand_in(0, 3)], eligible = eligible && act->kind == INF_EPILOGUE_RELU;
        if (odd_kind == 6) pre.act = &acts[rand_in(0, 3)], eligible = false;
        for (int64_t i = 0; i < rows; i++)
            for (int64_t j = 0; j < n; j++) {
                float x = (float)c[i * ldc + j] * mult[pre.mult_per_col ? j0 + j : 0];
                if (pre.bias_f32) x += bias[j0 + j];
                if (pre.requant) {
                    float lo = pre.rq_dtype == INF_DTYPE_U8 ? 0.0f : -128.0f, hi = lo + 255.0f;
                    float q = nearbyintf(x / pre.rq_scale) + (float)pre.rq_zp;
                    q = q < lo ? lo : q > hi ? hi : q;
                    x = (q - (float)pre.rq_zp) * pre.rq_scale;
                }
                float v = x + (float)((int32_t)r8[i * ldy + j] - o.res_zp) * o.res_scale;
                if (act) v = v > 0 ? v : 0;
                inf__quantize_u8_ref(&v, 1, o.rq_scale, o.rq_zp, &want[i * ldy + j]);
            }
        memset(got, 0xA5, sizeof got);
        bool done = inf__qstore_u8_res_rows_avx2(&o, c, ldc, rows, j0, n, r8, act, got, ldy);
        bool ok = done == eligible, untouched = true;
        for (int64_t i = 0; i < rows && ok; i++) {
            if (done) ok = !memcmp(want + i * ldy, got + i * ldy, (size_t)n);
            for (int64_t j = done ? n : 0; j < ldy; j++)
                untouched = untouched && got[i * ldy + j] == 0xA5;
        }
        char what[160];
        snprintf(what, sizeof what,
                 "qstore_u8_res_rows avx2 vs the sequence rows=%lld n=%lld requant=%d odd=%d done=%d", (long long)rows,
                 (long long)n, (int)pre.requant, odd_kind, (int)done);
        check(ok && untouched, what, round);
    }
#endif
}

/* ---- the float row store (INF_QOUT_F32) against a scalar twin ----
 * inf__qstore_f32_row_avx2 (its lean sequence: the quotient clamped before
 * rounding, no compare/blend chain) and the 16-lane form against
 * (float)acc * mult + bias, the activation, then (4 rows in 5) QuantizeLinear
 * and DequantizeLinear as the ONNX nodes define them (twin_fq), compared bit
 * for bit (so a -0 where the nodes give +0 fails): uint8 and int8, zero
 * points in and out of the type's range and past 65536 (the full
 * sequence), multipliers / biases +-3e30, +-inf, NaN, 1.9e19, inf * 0,
 * 0 / 0 and x / 0 quotients, scales 1e-30, 3e30 and 1e4 (most quotients in
 * (-0.5, 0.5): rounded -0s); every other row stored in place (y over c, as
 * the convolutions store), bytes after the row untouched. */
static float twin_fq(float v, float s, int32_t zp, bool u8) {
    float r = nearbyintf(v / s) + (float)zp, lo = u8 ? 0.0f : -128.0f, hi = u8 ? 255.0f : 127.0f;
    r = r < lo ? lo : r > hi ? hi : r;
    if (r != r) r = (float)zp;
    return (float)((int64_t)r - zp) * s;
}

static void qstore_f32_row_cases(void) {
#if defined(__x86_64__)
    if (!inf__cpu_has_avx2_fma()) return;
    enum { N = 300 };
    static int32_t c[N], cc[N + 16];
    static float mult[N + 16], bias[N + 16], want[N], got[N + 16];
    static const float odd[] = {3e30f, -3e30f, INFINITY, -INFINITY, NAN, 1.9e19f};
    for (int round = 0; round < 600; round++) {
        int64_t n = rand_in(1, N - 20), j0 = rand_in(0, 16);
        for (int64_t j = 0; j < n + j0; j++)
            mult[j] = (float)rand_in(1, 1000) * 1e-5f, bias[j] = uniform() * 2.0f;
        for (int64_t j = 0; j < n; j++)
            c[j] = (int32_t)rand_in(-300000, 300000);
        bool u8 = rand_in(0, 1);
        inf__qout o = {.kind = INF_QOUT_F32,
                       .mult = mult,
                       .mult_per_col = rand_in(0, 1),
                       .bias_f32 = rand_in(0, 2) ? bias : NULL,
                       .act = rand_in(0, 4) ? &acts[rand_in(0, 3)] : NULL,
                       .requant = rand_in(0, 4) != 0,
                       .rq_scale = (float)rand_in(1, 1000) * 1e-4f,
                       .rq_zp = u8 ? (int32_t)rand_in(0, 255) : (int32_t)rand_in(-128, 127),
                       .rq_dtype = u8 ? INF_DTYPE_U8 : INF_DTYPE_I8};
        int odd_kind = round < 40 ? 0 : (int)rand_in(0, 9);
        int64_t at = j0 + rand_in(0, n - 1);
        if (odd_kind == 1) mult[o.mult_per_col ? at : 0] = odd[rand_in(0, 5)];
        if (odd_kind == 2 && o.bias_f32) bias[at] = odd[rand_in(0, 5)];
        if (odd_kind == 3) mult[o.mult_per_col ? at : 0] = INFINITY, c[at - j0] = 0; /* inf * 0: NaN */
        if (odd_kind == 4) o.rq_scale = 0, c[at - j0] = 0, o.act = NULL;             /* 0 / 0: NaN, x / 0: inf */
        if (odd_kind == 5) o.rq_zp = rand_in(0, 1) ? -(int32_t)rand_in(1, 300) : (int32_t)rand_in(128, 400);
        if (odd_kind == 6) o.rq_scale = rand_in(0, 1) ? 1e-30f : 3e30f;
        if (odd_kind == 7) o.rq_scale = 1e4f;                                                 /* rounded -0s */
        if (odd_kind == 8) o.rq_zp = rand_in(0, 1) ? 65537 + (int32_t)rand_in(0, 9) : -70000; /* full sequence */
        for (int64_t j = 0; j < n; j++) {
            float x = (float)c[j] * mult[o.mult_per_col ? j0 + j : 0];
            if (o.bias_f32) x += bias[j0 + j];
            want[j] = o.requant ? twin_fq(twin_act(o.act, x), o.rq_scale, o.rq_zp, u8) : twin_act(o.act, x);
        }
        char what[120];
        bool in_place = round % 2;
        snprintf(what, sizeof what, "qstore_f32_row avx2 vs twin n=%lld odd=%d%s%s", (long long)n, odd_kind,
                 in_place ? " in place" : "", o.requant ? "" : " no Q -> DQ");
        memset(got, 0xA5, sizeof got);
        if (in_place) {
            memset(cc, 0xA5, sizeof cc);
            memcpy(cc, c, (size_t)n * sizeof *c);
            inf__qstore_f32_row_avx2(&o, cc, j0, n, (float *)cc);
            memcpy(got, cc, sizeof got);
        } else {
            inf__qstore_f32_row_avx2(&o, c, j0, n, got);
        }
        bool untouched = true;
        for (int64_t j = n; j < n + 16; j++) {
            uint32_t u;
            memcpy(&u, &got[j], 4);
            untouched = untouched && u == 0xA5A5A5A5u;
        }
        check(!memcmp(want, got, (size_t)n * sizeof *got) && untouched, what, round);
        if (isa_runs(INF_QGEMM_VNNI512)) {
            inf__qstore_f32_row_avx512(&o, c, j0, n, got);
            snprintf(what, sizeof what, "qstore_f32_row avx512 vs twin n=%lld odd=%d", (long long)n, odd_kind);
            check(!memcmp(want, got, (size_t)n * sizeof *got), what, round);
        }
    }
#endif
}

/* ---- input quantization's lean sequence against the reference ----
 * inf__quantize_u8_avx2 on rows with no NaN (the lean sequence whole: 16
 * values a step, the last n % 16 by the reference), one NaN somewhere (the
 * call falls back to the full sequence), infinities and values past 2^64
 * (saturating quotients, still lean), zero points 0, 255 and outside
 * [0, 255] (the full sequence), scales 1e-30 and 3e30. */
static void quantize_lean_cases(void) {
#if defined(__x86_64__)
    if (!inf__cpu_has_avx2_fma()) return;
    enum { N = 777 };
    static float x[N];
    static uint8_t q1[N], q2[N + 16];
    static const float odd[] = {3e30f, -3e30f, INFINITY, -INFINITY, 1.9e19f, -1.9e19f};
    for (int round = 0; round < 400; round++) {
        float scale = (float)rand_in(1, 1000) / 997.0f;
        int32_t zp = (int32_t)rand_in(0, 255);
        int64_t n = rand_in(1, N);
        for (int64_t i = 0; i < n; i++)
            x[i] = uniform() * 300.0f * scale;
        int kind = round < 40 ? 0 : (int)rand_in(0, 5);
        if (kind == 1) x[rand_in(0, n - 1)] = NAN;
        if (kind == 2)
            for (int t = 0; t < 5; t++)
                x[rand_in(0, n - 1)] = odd[rand_in(0, 5)];
        if (kind == 3) zp = rand_in(0, 1) ? (rand_in(0, 1) ? 0 : 255) : (rand_in(0, 1) ? -7 : 300);
        if (kind == 4) scale = rand_in(0, 1) ? 1e-30f : 3e30f;
        inf__quantize_u8_ref(x, n, scale, zp, q1);
        memset(q2, 0xA5, sizeof q2);
        inf__quantize_u8_avx2(x, n, scale, zp, q2);
        bool untouched = true;
        for (int64_t i = n; i < n + 16; i++)
            untouched = untouched && q2[i] == 0xA5;
        char what[96];
        snprintf(what, sizeof what, "quantize_u8 avx2 lean vs ref n=%lld kind=%d", (long long)n, kind);
        check(!memcmp(q1, q2, (size_t)n) && untouched, what, round);
    }
#endif
}

/* ---- which AVX2 kernel a B gets ---- */

/* ---- the routed ubs2 kernel (x86/qgemm_ubs2_avx2.c) ----
 * B drawn per (8-column panel, 8-K group) block: plain [-32, 32] (every
 * slot passes), slots right at the bound (four weights with positive sum
 * 128 and/or negative sum -128: 32 x 4, -32 x 4, 64 -64 64 -64, 127 1 0 0,
 * -128 0 0 0), one slot one past it (129 or -129: the block must take ubs),
 * or any pair-safe weights ([-64, 64]); A all 255 now and then (a slot past
 * the bound would then saturate).  Slot s of column c in group g is
 * K = {8g + 2s, 8g + 2s + 1, 8g + 4 + 2s, 8g + 5 + 2s}, as vpmaddubsw pairs
 * bytes and vpaddw adds two quads. */
static const int8_t at_bound[][4] = {{32, 32, 32, 32}, {-32, -32, -32, -32}, {64, -64, 64, -64}, {127, 1, 0, 0},
                                     {-128, 0, 0, 0},  {0, 64, 64, 0},       {-64, -64, 0, 0},   {100, -28, 28, -100}};
static const int8_t past_bound[][4] = {{33, 32, 32, 32}, {-33, -32, -32, -32}, {64, 64, 1, 0}, {0, -1, -64, -64}};

static void fill_block(int8_t *b, int64_t k, int64_t n, int64_t g, int64_t p, int mode) {
    int bad_c = (int)rand_in(0, 7), bad_s = (int)rand_in(0, 1);
    for (int c = 0; c < 8 && p * 8 + c < n; c++)
        for (int sl = 0; sl < 2; sl++) {
            const int64_t ks[4] = {8 * g + 2 * sl, 8 * g + 2 * sl + 1, 8 * g + 4 + 2 * sl, 8 * g + 5 + 2 * sl};
            int8_t v[4];
            const int8_t *pat = mode == 1 || mode == 2 ? at_bound[rand_in(0, 7)] : NULL;
            if (mode == 2 && c == bad_c && sl == bad_s) pat = past_bound[rand_in(0, 3)];
            for (int i = 0; i < 4; i++)
                v[i] = pat ? pat[i] : (int8_t)rand_in(mode ? -64 : -32, mode ? 64 : 32);
            if (pat && rand_in(0, 1)) { /* the two pairs swapped: the same slot */
                int8_t t0 = v[0], t1 = v[1];
                v[0] = v[2], v[1] = v[3], v[2] = t0, v[3] = t1;
            }
            for (int i = 0; i < 4; i++)
                if (ks[i] < k) b[ks[i] * n + p * 8 + c] = v[i];
        }
}

/* The class a group of a tile must get, from B as given (not the packing). */
static int expect_class(const int8_t *b, int64_t k, int64_t n, int64_t t, int64_t g) {
    bool ok[2] = {true, true}, two = 2 * t + 1 < (n + 7) / 8;
    for (int h = 0; h < 2; h++)
        for (int64_t j = (2 * t + h) * 8; j < (2 * t + h + 1) * 8 && j < n; j++)
            for (int sl = 0; sl < 2; sl++) {
                int pos = 0, neg = 0;
                const int64_t ks[4] = {8 * g + 2 * sl, 8 * g + 2 * sl + 1, 8 * g + 4 + 2 * sl, 8 * g + 5 + 2 * sl};
                for (int i = 0; i < 4; i++) {
                    int v = ks[i] < k ? b[ks[i] * n + j] : 0;
                    if (v > 0)
                        pos += v;
                    else
                        neg -= v;
                }
                if (pos > 128 || neg > 128) ok[h] = false;
            }
    if (!two) ok[1] = ok[0];
    return ok[0] ? (ok[1] ? 0 : 1) : (ok[1] ? 2 : 3);
}

static void ubs2_case(int case_no) {
    int64_t m = rand_in(1, 20), k = rand_in(1, 5) == 1 ? rand_in(1, 12) : rand_in(8, 400), n = rand_in(1, 60);
    bool a255 = rand_in(0, 3) == 0;
    int64_t kp = (k + 3) / 4 * 4, ng8 = (kp + 7) / 8, npan = (n + 7) / 8;
    uint8_t *a = calloc((size_t)(m * kp), 1);
    int8_t *b = calloc((size_t)(k * n), 1);
    for (int64_t i = 0; i < m; i++)
        for (int64_t p = 0; p < k; p++)
            a[i * kp + p] = a255 ? 255 : (uint8_t)rand_in(0, 255);
    for (int64_t g = 0; g < ng8; g++)
        for (int64_t p = 0; p < npan; p++)
            fill_block(b, k, n, g, p, (int)rand_in(0, 3));
    inf__qgemm_b pb;
    void *mem = inf__aligned_alloc(inf__qgemm_pack_b_bytes(INF_QGEMM_AVX2_UBS, k, n));
    inf__qgemm_pack_b_into(mem, INF_QGEMM_AVX2_UBS, k, n, b, INF_DTYPE_I8, n, false, NULL, 1, &pb);
    bool route_ok = pb.route != NULL;
    for (int64_t t = 0; route_ok && t < (npan + 1) / 2; t++) { /* each group once, in its class's list */
        const int32_t *rt = pb.route + t * (INF_QGEMM_ROUTE_HDR + kp / 8), *gl = rt + INF_QGEMM_ROUTE_HDR;
        int64_t seen = 0;
        for (int cls = 0; cls < 4; cls++)
            for (int32_t i = 0; i < rt[cls]; i++, seen++)
                route_ok = route_ok && expect_class(b, k, n, t, gl[seen]) == cls;
        route_ok = route_ok && seen == kp / 8;
    }
    check(route_ok, "ubs2 route: each group in the class its weights allow", case_no);
    int32_t *c = malloc((size_t)(m * pb.np) * sizeof *c);
    int32_t a_zp = (int32_t)rand_in(0, 255);
    inf__qgemm_rows(&pb, m, a, kp, a_zp, c, pb.np);
    bool ok = true;
    for (int64_t i = 0; i < m && ok; i++)
        for (int64_t j = 0; j < n && ok; j++) {
            int64_t acc = 0;
            for (int64_t p = 0; p < k; p++)
                acc += ((int64_t)a[i * kp + p] - a_zp) * b[p * n + j];
            ok = c[i * pb.np + j] == (int32_t)(uint32_t)acc;
        }
    char what[96];
    snprintf(what, sizeof what, "ubs2 gemm m=%lld k=%lld n=%lld a255=%d", (long long)m, (long long)k, (long long)n,
             (int)a255);
    check(ok, what, case_no);
    free(a), free(b), free(c);
    inf__aligned_free(mem);
}

/* The routed implicit-GEMM convolution: ntaps taps of cq channels (cq % 8 == 4 now and then, so 8-K groups
 * straddle two taps), rows and tap offsets anywhere in an image, against a direct sum. */
static void ubs2_conv_case(int case_no) {
    int64_t m = rand_in(1, 14), ntaps = rand_in(1, 9), cq = 4 * rand_in(1, 16), n = rand_in(1, 40), k = ntaps * cq;
    int64_t npan = (n + 7) / 8, img_len = 4096;
    uint8_t *img = malloc((size_t)img_len);
    int8_t *b = calloc((size_t)(k * n), 1);
    for (int64_t i = 0; i < img_len; i++)
        img[i] = rand_in(0, 2) ? 255 : (uint8_t)rand_in(0, 255);
    for (int64_t g = 0; g < (k + 7) / 8; g++)
        for (int64_t p = 0; p < npan; p++)
            fill_block(b, k, n, g, p, (int)rand_in(0, 3));
    const uint8_t *rows[16];
    int64_t tapoff[9];
    for (int64_t i = 0; i < m; i++)
        rows[i] = img + rand_in(0, 1024);
    for (int64_t t = 0; t < ntaps; t++)
        tapoff[t] = rand_in(0, 2048);
    inf__qgemm_b pb;
    void *mem = inf__aligned_alloc(inf__qgemm_pack_b_bytes(INF_QGEMM_AVX2_UBS, k, n));
    inf__qgemm_pack_b_into(mem, INF_QGEMM_AVX2_UBS, k, n, b, INF_DTYPE_I8, n, false, NULL, 1, &pb);
    int32_t init[64], *c = malloc((size_t)(m * pb.np) * sizeof *c);
    for (int64_t j = 0; j < pb.np; j++)
        init[j] = (int32_t)rand_in(-100000, 100000);
    inf__qconv_raw_avx2ubs(&pb, m, rows, tapoff, ntaps, cq, init, c, pb.np);
    bool ok = pb.route != NULL;
    for (int64_t i = 0; i < m && ok; i++)
        for (int64_t j = 0; j < n && ok; j++) {
            int64_t acc = init[j];
            for (int64_t t = 0; t < ntaps; t++)
                for (int64_t ch = 0; ch < cq; ch++)
                    acc += (int64_t)rows[i][tapoff[t] + ch] * b[(t * cq + ch) * n + j];
            ok = c[i * pb.np + j] == (int32_t)(uint32_t)acc;
        }
    char what[96];
    snprintf(what, sizeof what, "ubs2 conv m=%lld taps=%lld cq=%lld n=%lld", (long long)m, (long long)ntaps,
             (long long)cq, (long long)n);
    check(ok, what, case_no);
    free(img), free(b), free(c);
    inf__aligned_free(mem);
}

static void pack_isa_cases(void) {
    int8_t b[4 * 3] = {0};
    /* k = 4, n = 3, row-major: column 1's pairs (rows 0-1, rows 2-3) */
    b[0 * 3 + 1] = 64, b[1 * 3 + 1] = -64, b[2 * 3 + 1] = -128;
    check(inf__qgemm_pack_isa(INF_QGEMM_AVX2, 4, 3, b, INF_DTYPE_I8, 3, false) == INF_QGEMM_AVX2_UBS,
          "pack_isa: 64 + 64 and 128 + 0 are pair-safe", 0);
    b[3 * 3 + 1] = 1;
    check(inf__qgemm_pack_isa(INF_QGEMM_AVX2, 4, 3, b, INF_DTYPE_I8, 3, false) == INF_QGEMM_AVX2,
          "pack_isa: 128 + 1 is not", 1);
    b[3 * 3 + 1] = 0, b[1 * 3 + 2] = 65, b[0 * 3 + 2] = 64; /* the pair (64, 65) of column 2 */
    check(inf__qgemm_pack_isa(INF_QGEMM_AVX2, 4, 3, b, INF_DTYPE_I8, 3, false) == INF_QGEMM_AVX2, "pack_isa: 64 + 65",
          2);
    check(inf__qgemm_pack_isa(INF_QGEMM_AVX2, 3, 4, b, INF_DTYPE_I8, 4, false) == INF_QGEMM_AVX2,
          "pack_isa: odd k, another shape", 3);
    uint8_t u[2] = {128 + 64, 128 - 64}; /* uint8 B: values after the shift */
    check(inf__qgemm_pack_isa(INF_QGEMM_AVX2, 2, 1, u, INF_DTYPE_U8, 1, false) == INF_QGEMM_AVX2_UBS,
          "pack_isa: uint8 B shifted", 4);
    check(inf__qgemm_pack_isa(INF_QGEMM_VNNI512, 2, 1, u, INF_DTYPE_U8, 1, false) == INF_QGEMM_VNNI512,
          "pack_isa: other kernels unchanged", 5);
}

/* The matrix-product driver's fused residual Add (QGemm input 9, graph/passes/qdq_chain.c): each row
 * y = act(value + r), value the reference store's float without the activation (with its Q -> DQ when
 * it has one), the Add and the activation computed here, on float or uint8 A, 1 or 2 threads. */
static void matmul_residual_case(inf__qgemm_isa isa, inf__pool *pool, int case_no) {
    int64_t m = rand_in(1, 80), k = rand_in(1, 160), n = rand_in(1, 70);
    bool f32 = rand_in(0, 1);
    void *a = malloc((size_t)(m * k) * (f32 ? 4 : 1));
    int8_t *w = malloc((size_t)(k * n));
    float *mult = malloc((size_t)n * 4), *bias = malloc((size_t)n * 4), *r = malloc((size_t)(m * n) * 4);
    int32_t *bias_i32 = malloc((size_t)n * 4);
    for (int64_t i = 0; i < m * k; i++) {
        if (f32)
            ((float *)a)[i] = uniform() * 3;
        else
            ((uint8_t *)a)[i] = (uint8_t)rand_in(0, 255);
    }
    for (int64_t i = 0; i < k * n; i++)
        w[i] = (int8_t)rand_in(-w_lim(isa), w_lim(isa));
    for (int64_t i = 0; i < m * n; i++)
        r[i] = uniform() * 3;
    inf__qsrc src = {.data = a,
                     .dtype = f32 ? INF_DTYPE_F32 : INF_DTYPE_U8,
                     .ld = k,
                     .scale = 0.02f,
                     .zp = (int32_t)rand_in(0, 255),
                     .q_dtype = INF_DTYPE_U8};
    inf__qout out = random_out(mult, bias, bias_i32, n, INF_QOUT_F32), plain = out, with_r = out;
    plain.act = NULL, with_r.residual = r;
    float *y[2] = {run_matmul(isa, pool, w, m, k, n, &src, &with_r, 4),
                   run_matmul(INF_QGEMM_REF, NULL, w, m, k, n, &src, &plain, 4)};
    bool ok = true;
    for (int64_t i = 0; i < m * n && ok; i++)
        ok = y[0][i] == twin_act(out.act, y[1][i] + r[i]);
    char what[128];
    snprintf(what, sizeof what, "%s matmul driver residual Add m=%lld k=%lld n=%lld act=%d requant=%d",
             inf__qgemm_isa_name(isa), (long long)m, (long long)k, (long long)n, out.act ? (int)out.act->kind : -1,
             (int)out.requant);
    check(ok, what, case_no);
    free(a), free(w), free(mult), free(bias), free(r), free(bias_i32), free(y[0]), free(y[1]);
}

int main(void) {
    static const inf__qgemm_isa isas[] = {INF_QGEMM_REF, INF_QGEMM_AVX2, INF_QGEMM_VNNI512, INF_QGEMM_AVXVNNI,
                                          INF_QGEMM_AVX2_UBS};
    inf__pool *pool = NULL;
    if (inf__pool_new(2, &pool) != INF_OK) return 1;
    for (size_t i = 0; i < sizeof isas / sizeof isas[0]; i++) {
        if (!isa_runs(isas[i])) {
            printf("skipped: %s (the CPU lacks it, or INFERA_CPU rules it out)\n", inf__qgemm_isa_name(isas[i]));
            continue;
        }
        for (int c = 0; c < 300; c++) gemm_case(isas[i], c);
        for (int c = 0; c < 60 && isas[i] != INF_QGEMM_REF; c++) matmul_driver_case(isas[i], c % 2 ? pool : NULL, c);
        for (int c = 0; c < 60; c++)
            matmul_residual_case(isas[i], c % 2 ? pool : NULL, c);
        for (int c = 0; c < 120; c++) conv_driver_case(isas[i], c % 2 ? pool : NULL, c);
        for (int c = 0; c < 80; c++) conv_fused_case(isas[i], c % 2 ? pool : NULL, c);
        for (int c = 0; c < 80; c++)
            conv_stem_case(isas[i], c % 2 ? pool : NULL, c, false);
        for (int c = 0; c < 40; c++)
            conv_stem_case(isas[i], c % 2 ? pool : NULL, c, true);
        for (int c = 0; c < 120; c++) depthwise_case(isas[i], c % 2 ? pool : NULL, c);
        printf("%s: checked\n", inf__qgemm_isa_name(isas[i]));
    }
    if (isa_runs(INF_QGEMM_AVX2_UBS) && !(getenv("INFERA_QGEMM") && !strcmp(getenv("INFERA_QGEMM"), "avx2-ubs"))) {
        for (int c = 0; c < 300; c++)
            ubs2_case(c);
        for (int c = 0; c < 200; c++)
            ubs2_conv_case(c);
        printf("avx2-maddubs routed (ubs2): checked\n");
    } else {
        printf("skipped: avx2-maddubs routed (ubs2)\n");
    }
    rgb_pairs_cases();
    quantize_cases();
    quantize_near_half_cases();
    qstore_u8_row_cases();
    qstore_q8_row_cases();
    qstore_u8_rows_cases();
    qstore_res_rows_cases();
    qstore_f32_row_cases();
    quantize_lean_cases();
    if (getenv("INFERA_QGEMM") && !strcmp(getenv("INFERA_QGEMM"), "avx2-maddwd"))
        printf("pack_isa: skipped (INFERA_QGEMM=avx2-maddwd)\n");
    else
        pack_isa_cases();
    inf__pool_free(pool);
    printf("%d passed, %d failed\n", n_passed, n_failed);
    return n_failed ? 1 : 0;
}
