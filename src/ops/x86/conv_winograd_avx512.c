/*
 * conv_winograd_avx512.c -- the Winograd convolution of conv_winograd_avx2.c
 * (F(2x2,3x3), F(4x4,3x3), F(2x2,3x3) at stride 2) with its transforms 16
 * channels wide.
 *
 * Called from Conv / ConvAdd (ops/ref/conv.c) instead of
 * inf__conv2d_winograd_f32_avx2 when inf__cpu_has_avx512() (path avx512;
 * INFERA_CPU=avx2 keeps the AVX2 kernel).  Built with -mavx512f -mavx512bw
 * -mavx512vl (CMake: *_avx512.c).
 *
 * DESIGN: the AVX2 kernel's geometry, blocks, slots, scratch and packed U
 * (ops/x86/winograd_geom.h; the GEMMs are the same calls, whose driver picks
 * its AVX-512 tile itself), with every per-tile stage in zmm: the input
 * staged channel-last by 16x16 transposes, B^T d B and A^T M A on 16
 * channels per vector, Y's rows written back by 16x16 transposes that add
 * the bias and the residual and apply ReLU/Clip.  A channel count that is
 * a multiple of 8 but not of 16 ends on a half vector (masked loads and
 * stores), as do rows whose width is not a multiple of 16.
 * Bits: the transforms are the AVX2 kernel's expressions lane by lane (the
 * same adds, subs and FMAs in the same order), so both widths give the
 * same bits (tests/kernels/test_conv_winograd.c), independent of the
 * batch, the blocks and the threads as before.
 */
#if defined(__x86_64__) && defined(__AVX512F__)

#include <immintrin.h>

#include "ops/ops.h"
#include "ops/x86/transpose_avx512.h"
#include "ops/x86/winograd_geom.h"

/* The first n lanes (n clamped to 0..16). */
static inline __mmask16 lanes16(int64_t n) {
    return n >= 16 ? (__mmask16)0xFFFF : n <= 0 ? (__mmask16)0 : (__mmask16)((1u << n) - 1u);
}

/* The lanes in k of p (the others zero), and a store of them: plain moves
 * when k is full (the stride-2 transforms' rule: masked stores cost more on
 * AMD; in the 16-row staging within noise, bench/RESULTS.md "Session 23,
 * Winograd input staging"). */
static inline __m512 load_lanes(__mmask16 k, const float *p) {
    return k == 0xFFFF ? _mm512_loadu_ps(p) : _mm512_maskz_loadu_ps(k, p);
}

static inline void store_lanes(float *p, __mmask16 k, __m512 v) {
    if (k == 0xFFFF)
        _mm512_storeu_ps(p, v);
    else
        _mm512_mask_storeu_ps(p, k, v);
}

/* ---- input: stage a tile row channel-last, transform its tiles ---- */

/* d[x * ldd + q] = src[q * plane + x] for x < cols, q < nst (<= 16; channels
 * past nc zero). */
static void stage_channels(const float *src, int64_t plane, int64_t nc, int64_t nst, int64_t cols, float *d,
                           int64_t ldd) {
    __mmask16 ks = lanes16(nst);
    for (int64_t x = 0; x < cols; x += 16) {
        int64_t cnt = min64(16, cols - x);
        __mmask16 kl = lanes16(cnt);
        __m512 r[16];
        if (nc >= 16) /* no test per row */
            for (int q = 0; q < 16; q++)
                r[q] = load_lanes(kl, src + q * plane + x);
        else
            for (int q = 0; q < 16; q++)
                r[q] = q >= nc ? _mm512_setzero_ps() : load_lanes(kl, src + q * plane + x);
        inf__avx512_transpose16(r);
        for (int q = 0; q < cnt; q++)
            store_lanes(d + (x + q) * ldd, ks, r[q]);
    }
}

static void zero_floats(float *d, int64_t n) {
    int64_t i = 0;
    for (; i + 16 <= n; i += 16)
        _mm512_storeu_ps(d + i, _mm512_setzero_ps());
    if (i < n) _mm512_mask_storeu_ps(d + i, lanes16(n - i), _mm512_setzero_ps());
}

/* d[x * cp + q] = row[x * c + q] for x < cols, q < c, zero for c <= q < cp:
 * a channels-last X row (INF_NHWC_X) is already the staged layout, only
 * its channel stride may differ. */
static void stage_channels_last(const float *row, int64_t c, int64_t cp, int64_t cols, float *d) {
    for (int64_t x = 0; x < cols; x++)
        for (int64_t c0 = 0; c0 < cp; c0 += 16)
            store_lanes(d + x * cp + c0, lanes16(cp - c0), load_lanes(lanes16(c - c0), row + x * c + c0));
}

/* xs[i][x][c] = X[n][c][ty*m - pt + i][x - pl], zero outside X. */
static void stage_row(const wino_job *J, int64_t n, int64_t ty, float *xs) {
    const inf__conv2d *g = J->g;
    const wino_geom *G = &J->G;
    int64_t cp = G->cp, plane = g->ih * g->iw, x0 = g->pl, x1 = g->pl + g->iw;
    for (int i = 0; i < G->a; i++) {
        float *d = xs + i * G->pw * cp;
        int64_t iy = ty * G->m * G->s - g->pt + i;
        if (iy < 0 || iy >= g->ih) {
            zero_floats(d, G->pw * cp);
            continue;
        }
        zero_floats(d, x0 * cp);
        zero_floats(d + x1 * cp, (G->pw - x1) * cp);
        if (g->nhwc & INF_NHWC_X) {
            stage_channels_last(J->x + (n * g->ih + iy) * g->iw * g->c, g->c, cp, g->iw, d + x0 * cp);
            continue;
        }
        const float *src = J->x + n * g->c * plane + iy * g->iw;
        for (int64_t c0 = 0; c0 < cp; c0 += 16)
            stage_channels(src + c0 * plane, plane, g->c - c0, min64(16, cp - c0), g->iw, d + x0 * cp + c0, cp);
    }
}

/* One dimension of B^T d (conv_winograd_avx2.c's in_1d, 16 lanes). */
static inline __attribute__((always_inline)) void in_1d(const int A, const __m512 *s, int ss, __m512 *o, int os) {
    if (A == 4) {
        __m512 d0 = s[0], d1 = s[ss], d2 = s[2 * ss], d3 = s[3 * ss];
        o[0] = _mm512_sub_ps(d0, d2), o[os] = _mm512_add_ps(d1, d2);
        o[2 * os] = _mm512_sub_ps(d2, d1), o[3 * os] = _mm512_sub_ps(d1, d3);
        return;
    }
    __m512 d0 = s[0], d1 = s[ss], d2 = s[2 * ss], d3 = s[3 * ss], d4 = s[4 * ss], d5 = s[5 * ss];
    __m512 four = _mm512_set1_ps(4.0f), five = _mm512_set1_ps(5.0f), two = _mm512_set1_ps(2.0f);
    __m512 d42 = _mm512_sub_ps(d4, d2);
    o[0] = _mm512_fmadd_ps(four, d0, _mm512_fnmadd_ps(five, d2, d4));
    o[os] = _mm512_fnmadd_ps(four, _mm512_add_ps(d1, d2), _mm512_add_ps(d3, d4));
    o[2 * os] = _mm512_fmadd_ps(four, _mm512_sub_ps(d1, d2), _mm512_sub_ps(d4, d3));
    o[3 * os] = _mm512_fmadd_ps(two, _mm512_sub_ps(d3, d1), d42);
    o[4 * os] = _mm512_fmadd_ps(two, _mm512_sub_ps(d1, d3), d42);
    o[5 * os] = _mm512_fmadd_ps(four, d1, _mm512_fnmadd_ps(five, d3, d5));
}

/* V[e][t][c] for the tile at column tx of the staged row: B^T d B, 16
 * channels at a time (the last group of cp % 16 == 8 masked). */
static inline __attribute__((always_inline)) void input_tile_a(const int A, const wino_geom *G, const float *xs,
                                                               int64_t tx, float *v, int64_t t) {
    for (int64_t c0 = 0; c0 < G->cp; c0 += 16) {
        __mmask16 k = lanes16(G->cp - c0);
        __m512 d[MAX_NE], u[MAX_NE];
        const float *p = xs + tx * G->m * G->cp + c0;
        for (int i = 0; i < A; i++)
            for (int j = 0; j < A; j++)
                d[i * A + j] = load_lanes(k, p + (i * G->pw + j) * G->cp);
        for (int j = 0; j < A; j++)
            in_1d(A, d + j, A, u + j, A);
        for (int i = 0; i < A; i++)
            in_1d(A, u + i * A, 1, d + i * A, 1);
        for (int e = 0; e < A * A; e++)
            store_lanes(v + (e * G->tmax + t) * G->ldv + c0, k, d[e]);
    }
}

static void input_tile(const wino_geom *G, const float *xs, int64_t tx, float *v, int64_t t) {
    if (G->a == 4)
        input_tile_a(4, G, xs, tx, v, t);
    else
        input_tile_a(6, G, xs, tx, v, t);
}

/* The stride-2 transforms, 16 channels a zmm (a last group of 8 masked; full
 * groups plain: masked stores are slow on AMD). */
#define S2_VEC __m512
#define S2_LANES 16
#define S2_MASK_T __mmask16
#define S2_LANES_OF(n) lanes16(n)
#define S2_LOAD(k, p) load_lanes((k), (p))
#define S2_STORE(p, k, v) store_lanes((p), (k), (v))
#define S2_ADD _mm512_add_ps
#define S2_SUB _mm512_sub_ps
#include "ops/x86/winograd_s2_tile.h"

/* ---- output: A^T M A per tile, then back to Y's rows ---- */

/* One dimension of A^T m (conv_winograd_avx2.c's out_1d, 16 lanes). */
static inline __attribute__((always_inline)) void out_1d(const int A, const __m512 *s, int ss, __m512 *o, int os) {
    if (A == 4) {
        __m512 m12 = _mm512_sub_ps(s[ss], s[2 * ss]);
        o[0] = _mm512_add_ps(_mm512_add_ps(s[0], s[ss]), s[2 * ss]);
        o[os] = _mm512_sub_ps(m12, s[3 * ss]);
        return;
    }
    __m512 p12 = _mm512_add_ps(s[ss], s[2 * ss]), n12 = _mm512_sub_ps(s[ss], s[2 * ss]);
    __m512 p34 = _mm512_add_ps(s[3 * ss], s[4 * ss]), n34 = _mm512_sub_ps(s[3 * ss], s[4 * ss]);
    o[0] = _mm512_add_ps(_mm512_add_ps(s[0], p12), p34);
    o[os] = _mm512_fmadd_ps(_mm512_set1_ps(2.0f), n34, n12);
    o[2 * os] = _mm512_fmadd_ps(_mm512_set1_ps(4.0f), p34, p12);
    o[3 * os] = _mm512_add_ps(_mm512_fmadd_ps(_mm512_set1_ps(8.0f), n34, n12), s[5 * ss]);
}

/* os[i][tx*m + q][k] = (A^T M A)[i][q] for the tile t, 16 channels at a
 * time (lanes up to kp: past K they read M's slack, as the AVX2 kernel). */
static inline __attribute__((always_inline)) void output_tile_a(const int A, const wino_geom *G, const float *mm,
                                                                int64_t ldm, int64_t t, float *os, int64_t tx) {
    const int M = A - 2;
    for (int64_t k0 = 0; k0 < G->kp; k0 += 16) {
        __mmask16 k = lanes16(G->kp - k0);
        __m512 d[MAX_NE], u[MAX_NE];
        for (int e = 0; e < A * A; e++)
            d[e] = load_lanes(k, mm + (e * G->tmax + t) * ldm + k0);
        for (int j = 0; j < A; j++)
            out_1d(A, d + j, A, u + j, A);
        for (int i = 0; i < M; i++)
            out_1d(A, u + i * A, 1, d + i * A, 1);
        for (int i = 0; i < M; i++)
            for (int q = 0; q < M; q++)
                store_lanes(os + (i * G->wo + tx * M + q) * G->kp + k0, k, d[i * A + q]);
    }
}

static void output_tile(const wino_geom *G, const float *mm, int64_t ldm, int64_t t, float *os, int64_t tx) {
    if (G->a == 4)
        output_tile_a(4, G, mm, ldm, t, os, tx);
    else
        output_tile_a(6, G, mm, ldm, t, os, tx);
}

/* The store's ReLU / Clip. */
static inline __m512 activate(const inf__conv2d *g, __m512 v) {
    if (g->act == INF_EPILOGUE_RELU) return _mm512_max_ps(v, _mm512_setzero_ps()); /* NaN -> 0, as Relu */
    if (g->act == INF_EPILOGUE_CLIP)
        return _mm512_min_ps(_mm512_set1_ps(g->hi), _mm512_max_ps(_mm512_set1_ps(g->lo), v)); /* NaN kept */
    return v;
}

/* Y[off .. off + cnt) = act(v + bias[k] + res[off ...]) (lanes in km); the
 * residual's lanes from rv when it is channels-last (transposed). */
static inline void store_out(const wino_job *J, __m512 v, int64_t k, int64_t off, __mmask16 km, const __m512 *rv) {
    if (J->bias) v = _mm512_add_ps(v, _mm512_set1_ps(J->bias[k]));
    if (J->res) v = _mm512_add_ps(v, rv ? *rv : load_lanes(km, J->res + off));
    store_lanes(J->y + off, km, activate(J->g, v));
}

/* Output row oy of image n into a channels-last Y (INF_NHWC_Y): orow's
 * [x][kp] is Y's row but for the channel stride.  The same operations per
 * element as store_out (+ bias, + residual, activation), so the same bits;
 * a channels-first residual is read 16 positions x 16 channels at a time
 * and transposed. */
static void store_row_channels_last(const wino_job *J, const float *orow, int64_t n, int64_t oy) {
    const inf__conv2d *g = J->g;
    int64_t kp = J->G.kp, m = g->m;
    float *yrow = J->y + (n * g->oh + oy) * g->ow * m;
    bool res_last = J->res && (g->nhwc & INF_NHWC_RES);
    for (int64_t ox0 = 0; ox0 < g->ow; ox0 += 16) {
        int64_t cnt = min64(16, g->ow - ox0);
        for (int64_t k0 = 0; k0 < m; k0 += 16) {
            __mmask16 kk = lanes16(m - k0);
            __m512 b = J->bias ? load_lanes(kk, J->bias + k0) : _mm512_setzero_ps(), r[16];
            if (J->res && !res_last) {
                for (int q = 0; q < 16; q++)
                    r[q] = k0 + q < m ? load_lanes(lanes16(cnt), J->res + ((n * m + k0 + q) * g->oh + oy) * g->ow + ox0)
                                      : _mm512_setzero_ps();
                inf__avx512_transpose16(r);
            }
            for (int64_t q = 0; q < cnt; q++) {
                int64_t at = (ox0 + q) * m + k0;
                __m512 v = load_lanes(kk, orow + (ox0 + q) * kp + k0);
                if (J->bias) v = _mm512_add_ps(v, b);
                if (J->res)
                    v = _mm512_add_ps(v, res_last ? load_lanes(kk, J->res + (n * g->oh + oy) * g->ow * m + at) : r[q]);
                store_lanes(yrow + at, kk, activate(g, v));
            }
        }
    }
}

/* Output row oy of image n from its staged row orow ([x][kp]). */
static void store_row(const wino_job *J, const float *orow, int64_t n, int64_t oy) {
    const inf__conv2d *g = J->g;
    int64_t kp = J->G.kp;
    if (g->nhwc & INF_NHWC_Y) {
        store_row_channels_last(J, orow, n, oy);
        return;
    }
    bool res_last = J->res && (g->nhwc & INF_NHWC_RES);
    for (int64_t ox = 0; ox < g->ow; ox += 16) {
        int64_t cnt = min64(16, g->ow - ox);
        __mmask16 km = lanes16(cnt);
        for (int64_t k0 = 0; k0 < g->m; k0 += 16) {
            __mmask16 kk_lanes = lanes16(kp - k0);
            __m512 r[16], rr[16];
            for (int q = 0; q < 16; q++)
                r[q] = q < cnt ? load_lanes(kk_lanes, orow + (ox + q) * kp + k0) : _mm512_setzero_ps();
            inf__avx512_transpose16(r);
            if (res_last) { /* the residual's 16 positions x 16 channels, to channel rows */
                for (int q = 0; q < 16; q++)
                    rr[q] = q < cnt ? load_lanes(lanes16(g->m - k0),
                                                 J->res + ((n * g->oh + oy) * g->ow + ox + q) * g->m + k0)
                                    : _mm512_setzero_ps();
                inf__avx512_transpose16(rr);
            }
            for (int64_t kk = 0; kk < 16 && k0 + kk < g->m; kk++)
                store_out(J, r[kk], k0 + kk, ((n * g->m + k0 + kk) * g->oh + oy) * g->ow + ox, km,
                          res_last ? &rr[kk] : NULL);
        }
    }
}

/* ---- blocks: run_block, slot_tasks ---- */

#include "ops/x86/winograd_block.h"

void inf__conv2d_winograd_f32_avx512(inf__pool *pool, int tile, const inf__conv2d *g, const float *x, const float *up,
                                     const float *bias, const float *res, float *scratch, float *y) {
    if (g->n <= 0 || g->oh <= 0 || g->ow <= 0 || g->m <= 0 || g->c <= 0) return;
    wino_job J = {.g = g,
                  .G = wino_geometry(tile, g, inf__pool_size(pool)),
                  .x = x,
                  .up = up,
                  .bias = bias,
                  .res = res,
                  .y = y,
                  .scratch = scratch,
                  .pool = pool,
                  .u_floats = inf__ops_sgemm_packed_floats(g->c, g->m),
                  .prefetch = wino_prefetch_pays(g)};
    inf__pool_range(pool, J.G.n_slots, 1, slot_tasks, &J);
}

#endif /* x86-64 with AVX-512 */
