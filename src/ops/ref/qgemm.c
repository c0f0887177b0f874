/*
 * qgemm.c -- the 8-bit integer GEMM of qgemm.h: choosing the kernel,
 * packing B for it, the zero-point correction, and the reference twins
 * (the raw sum, activation quantization, min/max) that the AVX2 and
 * AVX-512 VNNI kernels (ops/x86/qgemm_*.c) must match bit for bit.
 *
 * All integer arithmetic that may wrap is done on uint32_t (wrapping is
 * what the reference's int64 sum cast to int32 gives, and signed overflow
 * would be undefined in C).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/cpu.h"
#include "ops/qgemm.h"

/* ---- which kernel ---- */

static inf__qgemm_isa detect_isa(void) {
#if defined(__x86_64__)
    const char *force = getenv("INFERA_CPU");
    if (force && !strcmp(force, "generic")) return INF_QGEMM_REF;
    if (!inf__cpu_has_avx2_fma()) return INF_QGEMM_REF;
    if (inf__cpu_has_avx512_vnni()) return INF_QGEMM_VNNI512; /* off under INFERA_CPU=avx2 */
    /* AVX-VNNI on the avx2 path; INFERA_QGEMM=avx2 keeps the AVX2-only CPUs' kernels (vpmaddwd, and
     * vpmaddubsw for pair-safe weights, routed ubs2 / ubs: inf__qgemm_pack_isa), INFERA_QGEMM=avx2-maddwd
     * vpmaddwd alone, INFERA_QGEMM=avx2-ubs no ubs2 route (comparisons) */
    const char *q = getenv("INFERA_QGEMM");
    if (q && (!strcmp(q, "avx2") || !strcmp(q, "avx2-maddwd") || !strcmp(q, "avx2-ubs"))) return INF_QGEMM_AVX2;
    return inf__cpu_path_allows(INF__CPU_AVX2, INF_CPU_AVXVNNI) ? INF_QGEMM_AVXVNNI : INF_QGEMM_AVX2;
#else
    return INF_QGEMM_REF;
#endif
}

inf__qgemm_isa inf__qgemm_best_isa(void) {
    static int cached = -1; /* process-wide, idempotent (the CPU does not change) */
    if (cached < 0) cached = (int)detect_isa();
    return (inf__qgemm_isa)cached;
}

const char *inf__qgemm_isa_name(inf__qgemm_isa isa) {
    static const char *const names[] = {"generic", "avx2", "avx512-vnni", "avx-vnni", "avx2-maddubs"};
    return names[isa];
}

/* ---- packing ---- */

typedef struct pack_shape {
    int panel, kgroup, elem; /* columns per panel, k per group, bytes per value */
} pack_shape;

static pack_shape shape_of(inf__qgemm_isa isa) {
    static const pack_shape shapes[] = {{1, 1, 1}, {8, 2, 2}, {16, 4, 1}, {8, 4, 1}, {8, 4, 1}};
    return shapes[isa];
}

static int64_t round_up(int64_t v, int64_t to) { return (v + to - 1) / to * to; }

/* The route's int32 values (qgemm.h, inf__qgemm_b.route): INF_QGEMM_AVX2_UBS only. */
static int64_t route_values(inf__qgemm_isa isa, int64_t kp, int64_t np) {
    if (isa != INF_QGEMM_AVX2_UBS) return 0;
    return (np / 8 + 1) / 2 * (INF_QGEMM_ROUTE_HDR + kp / 8);
}

size_t inf__qgemm_pack_b_bytes(inf__qgemm_isa isa, int64_t k, int64_t n) {
    pack_shape s = shape_of(isa);
    int64_t kp = round_up(k > 0 ? k : 1, 4), np = round_up(n > 0 ? n : 1, s.panel);
    size_t data = (size_t)(kp * np * s.elem);
    return round_up((int64_t)data, 64) + 2 * round_up(np * 4, 64) + round_up(route_values(isa, kp, np) * 4, 64);
}

/* ---- the ubs2 route (x86/qgemm_ubs2_avx2.c) ---- */

/* May 8-K group g of a quad-packed panel (8 columns x 4 values per quad)
 * add its two vpmaddubsw results in int16: each int16 slot (column c, pair
 * s of quads 2g and 2g + 1) sums four u8 x s8 products, which stay within
 * [-32768, 32767] for every A in [0, 255] iff its positive weights sum to
 * <= 128 and its negative ones to >= -128 (255 x 128 = 32640). */
static bool group_ubs2(const int8_t *panel, int64_t g) {
    const int8_t *q0 = panel + 2 * g * 32, *q1 = q0 + 32;
    for (int c = 0; c < 8; c++)
        for (int sl = 0; sl < 2; sl++) {
            const int8_t v[4] = {q0[4 * c + 2 * sl], q0[4 * c + 2 * sl + 1], q1[4 * c + 2 * sl],
                                 q1[4 * c + 2 * sl + 1]};
            int pos = 0, neg = 0;
            for (int i = 0; i < 4; i++) {
                if (v[i] > 0)
                    pos += v[i];
                else
                    neg -= v[i];
            }
            if (pos > 128 || neg > 128) return false;
        }
    return true;
}

/* Group g's class in tile t: 0 ubs2 / ubs2, 1 ubs2 / ubs, 2 ubs / ubs2, 3 ubs / ubs (a lone panel: 0 or 3). */
static int group_class(const inf__qgemm_b *b, int64_t t, int64_t g) {
    const int8_t *p0 = (const int8_t *)b->data + 2 * t * b->kp * 8;
    bool two = 2 * t + 1 < b->np / 8, u0 = group_ubs2(p0, g), u1 = two ? group_ubs2(p0 + b->kp * 8, g) : u0;
    return u0 ? (u1 ? 0 : 1) : (u1 ? 2 : 3);
}

/* INFERA_QGEMM names this packing choice (comparisons; read at pack time, not per call). */
static bool qgemm_env_is(const char *value) {
    const char *q = getenv("INFERA_QGEMM");
    return q && !strcmp(q, value);
}

/* Sorts every tile's groups by class into route (route_values of them; kp <= INF_QGEMM_ROUTE_MAX_KP). */
static void build_route(const inf__qgemm_b *b, int32_t *route) {
    int64_t ng = b->kp / 8, ntile = (b->np / 8 + 1) / 2;
    uint8_t cls_of[INF_QGEMM_ROUTE_MAX_KP / 8];
    for (int64_t t = 0; t < ntile; t++) {
        int32_t *h = route + t * (INF_QGEMM_ROUTE_HDR + ng), *list = h + INF_QGEMM_ROUTE_HDR;
        for (int64_t g = 0; g < ng; g++)
            cls_of[g] = (uint8_t)group_class(b, t, g);
        for (int cls = 0; cls < 4; cls++) {
            h[cls] = 0;
            for (int64_t g = 0; g < ng; g++)
                if (cls_of[g] == cls) *list++ = (int32_t)g, h[cls]++;
        }
    }
}

/* B's value (kk, j) as the signed 8-bit operand. */
static inline int32_t b_value(const void *b, inf_dtype dtype, int64_t ldb, bool trans, int64_t kk, int64_t j) {
    int64_t at = trans ? j * ldb + kk : kk * ldb + j;
    return dtype == INF_DTYPE_U8 ? (int32_t)((const uint8_t *)b)[at] - 128 : (int32_t)((const int8_t *)b)[at];
}

static inline int32_t zp_value(const void *zp, inf_dtype dtype, int64_t n_bzp, int64_t j) {
    if (!zp) return dtype == INF_DTYPE_U8 ? -128 : 0; /* a uint8 B without zero point: 0 - 128 */
    int64_t at = n_bzp == 1 ? 0 : j;
    return dtype == INF_DTYPE_U8 ? (int32_t)((const uint8_t *)zp)[at] - 128 : (int32_t)((const int8_t *)zp)[at];
}

/* May the AVX2 vpmaddubsw kernel (x86/qgemm_maddubs_avx2.c) take B: every
 * pair (k even, k + 1) of every column with |b0| + |b1| <= 128, so that no
 * u8 x s8 pair sum (at most 255 * 128 = 32640) saturates int16?  Not when
 * INFERA_QGEMM=avx2-maddwd (comparisons). */
#if !defined(INF_EDGE)
static bool pair_safe(const void *b, inf_dtype dtype, int64_t ldb, bool trans, int64_t k, int64_t n) {
    if (qgemm_env_is("avx2-maddwd")) return false;
    for (int64_t j = 0; j < n; j++)
        for (int64_t kk = 0; kk < k; kk += 2) {
            int32_t v0 = b_value(b, dtype, ldb, trans, kk, j),
                    v1 = kk + 1 < k ? b_value(b, dtype, ldb, trans, kk + 1, j) : 0;
            if (abs(v0) + abs(v1) > 128) return false;
        }
    return true;
}
#endif

inf__qgemm_isa inf__qgemm_pack_isa(inf__qgemm_isa isa, int64_t k, int64_t n, const void *b, inf_dtype dtype,
                                   int64_t ldb, bool trans) {
#if defined(INF_EDGE) /* the edge runtime leaves the vpmaddubsw kernel out (cmake/edge.cmake): size */
    (void)k, (void)n, (void)b, (void)dtype, (void)ldb, (void)trans;
    return isa;
#else
    return isa == INF_QGEMM_AVX2 && pair_safe(b, dtype, ldb, trans, k, n) ? INF_QGEMM_AVX2_UBS : isa;
#endif
}

/* The element of b's data holding value (kk, j) (the layout of qgemm.h, inf__qgemm_layout). */
static int64_t packed_at(const inf__qgemm_b *b, int64_t kk, int64_t j) {
    return j / b->panel * b->kp * b->panel + kk / b->kgroup * b->panel * b->kgroup + j % b->panel * b->kgroup +
           kk % b->kgroup;
}

/* Down one column: n groups from element `at`, step elements apart, group g
 * from the bytes q[g * kgroup ...]. */
static void groups_down(void *mem, pack_shape s, int64_t at, int64_t step, int64_t n, const uint8_t *q) {
    if (s.elem == 1 && s.kgroup == 4) {
        for (int64_t g = 0; g < n; g++) {
            uint32_t w;
            memcpy(&w, q + 4 * g, 4);
            w ^= 0x80808080u;
            memcpy((int8_t *)mem + at + g * step, &w, 4);
        }
    } else if (s.elem == 2 && s.kgroup == 2) {
        for (int64_t g = 0; g < n; g++) {
            uint32_t w = (uint16_t)(q[2 * g] - 128) | (uint32_t)(uint16_t)(q[2 * g + 1] - 128) << 16;
            memcpy((int16_t *)mem + at + g * step, &w, 4);
        }
    } else {
        for (int64_t g = 0; g < n; g++)
            for (int e = 0; e < s.kgroup; e++) {
                int v = q[g * s.kgroup + e] - 128;
                if (s.elem == 2)
                    ((int16_t *)mem)[at + g * step + e] = (int16_t)v;
                else
                    ((int8_t *)mem)[at + g * step + e] = (int8_t)v;
            }
    }
}

/* Across one panel: the groups of w adjacent columns from element `at`,
 * value e of column c from q[e * ld + c]. */
static void groups_across(void *mem, pack_shape s, int64_t at, int64_t w, const uint8_t *q, int64_t ld) {
    if (s.elem == 1 && s.kgroup == 4) {
        uint32_t *d = (uint32_t *)((int8_t *)mem + at);
        const uint8_t *a0 = q, *a1 = a0 + ld, *a2 = a1 + ld, *a3 = a2 + ld;
        for (int64_t c = 0; c < w; c++)
            d[c] =
                ((uint32_t)a0[c] | (uint32_t)a1[c] << 8 | (uint32_t)a2[c] << 16 | (uint32_t)a3[c] << 24) ^ 0x80808080u;
    } else if (s.elem == 2 && s.kgroup == 2) {
        uint32_t *d = (uint32_t *)((int16_t *)mem + at);
        const uint8_t *a0 = q, *a1 = a0 + ld;
        for (int64_t c = 0; c < w; c++)
            d[c] = (uint16_t)(a0[c] - 128) | (uint32_t)(uint16_t)(a1[c] - 128) << 16;
    } else {
        for (int64_t c = 0; c < w; c++)
            for (int e = 0; e < s.kgroup; e++) {
                int v = q[e * ld + c] - 128;
                if (s.elem == 2)
                    ((int16_t *)mem)[at + c * s.kgroup + e] = (int16_t)v;
                else
                    ((int8_t *)mem)[at + c * s.kgroup + e] = (int8_t)v;
            }
    }
}

void inf__qgemm_pack_column(const inf__qgemm_b *b, int64_t k0, int64_t j, int64_t n, const uint8_t *q) {
    groups_down(b->data, shape_of(b->isa), packed_at(b, k0, j), (int64_t)b->panel * b->kgroup, n, q);
}

void inf__qgemm_pack_kgroup(const inf__qgemm_b *b, int64_t k0, int64_t j, int64_t n, const uint8_t *q, int64_t ld) {
    pack_shape s = shape_of(b->isa);
    int64_t first = j % b->panel, at = packed_at(b, k0, j - first); /* K group k0 of j's panel */
    for (int64_t c = 0; c < n; at += b->kp * b->panel, first = 0) {
        int64_t w = b->panel - first < n - c ? b->panel - first : n - c;
        groups_across(b->data, s, at + first * b->kgroup, w, q + c, ld);
        c += w;
    }
}

/* Column j's values, shifted to uint8 (v + 128), are packed PACK_RUN at a time. */
enum { PACK_RUN = 256 };

void inf__qgemm_pack_b_into(void *mem, inf__qgemm_isa isa, int64_t k, int64_t n, const void *b, inf_dtype dtype,
                            int64_t ldb, bool trans, const void *b_zp, int64_t n_bzp, inf__qgemm_b *out) {
    size_t bytes = inf__qgemm_pack_b_bytes(isa, k, n);
    pack_shape s = shape_of(isa);
    int64_t kp = round_up(k > 0 ? k : 1, 4), np = round_up(n > 0 ? n : 1, s.panel);
    size_t data_bytes = (size_t)round_up(kp * np * s.elem, 64);
    memset(mem, 0, bytes);
    *out = (inf__qgemm_b){.isa = isa, .k = k, .n = n, .kp = kp, .np = np, .panel = s.panel, .kgroup = s.kgroup,
                          .data = mem};
    out->colsum = (int32_t *)((char *)mem + data_bytes);
    out->b_zp = out->colsum + round_up(np * 4, 64) / 4;
    uint8_t run[PACK_RUN];
    for (int64_t j = 0; j < n; j++) {
        uint32_t sum = 0;
        for (int64_t k0 = 0; k0 < kp; k0 += PACK_RUN) {
            int64_t len = kp - k0 < PACK_RUN ? kp - k0 : PACK_RUN; /* a multiple of 4, so of kgroup */
            for (int64_t i = 0; i < len; i++) {
                int32_t v = k0 + i < k ? b_value(b, dtype, ldb, trans, k0 + i, j) : 0;
                run[i] = (uint8_t)(v + 128);
                sum += (uint32_t)v;
            }
            inf__qgemm_pack_column(out, k0, j, len / s.kgroup, run);
        }
        out->colsum[j] = (int32_t)sum;
        out->b_zp[j] = zp_value(b_zp, dtype, n_bzp, j);
        if (out->b_zp[j]) out->any_b_zp = true;
    }
    if (route_values(isa, kp, np) && kp <= INF_QGEMM_ROUTE_MAX_KP && !qgemm_env_is("avx2-ubs")) {
        int32_t *route = (int32_t *)((char *)out->b_zp + round_up(np * 4, 64));
        build_route(out, route);
        out->route = route;
    }
}

inf_status inf__qgemm_pack_b(inf__arena *arena, inf__qgemm_isa isa, int64_t k, int64_t n, const void *b,
                             inf_dtype dtype, int64_t ldb, bool trans, const void *b_zp, int64_t n_bzp,
                             inf__qgemm_b *out) {
    size_t bytes = inf__qgemm_pack_b_bytes(isa, k, n);
    char *raw = inf__arena_alloc(arena, bytes + 64);
    if (!raw) return INF_ENOMEM;
    void *mem = raw + (64 - (uintptr_t)raw % 64) % 64;
    inf__qgemm_pack_b_into(mem, isa, k, n, b, dtype, ldb, trans, b_zp, n_bzp, out);
    return INF_OK;
}

/* ---- the raw sum: the reference twin ---- */

void inf__qgemm_raw_ref(const inf__qgemm_b *b, int64_t m, const uint8_t *a, int64_t lda, const int32_t *init,
                        int32_t *c, int64_t ldc) {
    const int8_t *bd = b->data; /* panel 1, kgroup 1: column j is kp contiguous values */
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < b->np; j++) {
            uint32_t acc = init ? (uint32_t)init[j] : 0;
            for (int64_t kk = 0; kk < b->kp; kk++) acc += (uint32_t)((int32_t)a[i * lda + kk] * bd[j * b->kp + kk]);
            c[i * ldc + j] = (int32_t)acc;
        }
}

typedef void (*raw_fn)(const inf__qgemm_b *, int64_t, const uint8_t *, int64_t, const int32_t *, int32_t *, int64_t);

static raw_fn raw_kernel(inf__qgemm_isa isa) {
#if defined(__x86_64__)
    if (isa == INF_QGEMM_VNNI512) return inf__qgemm_raw_vnni512;
    if (isa == INF_QGEMM_AVXVNNI) return inf__qgemm_raw_avxvnni;
    if (isa == INF_QGEMM_AVX2) return inf__qgemm_raw_avx2;
#if !defined(INF_EDGE)
    if (isa == INF_QGEMM_AVX2_UBS) return inf__qgemm_raw_avx2ubs;
#endif
#endif
    (void)isa;
    return inf__qgemm_raw_ref;
}

void inf__qgemm_raw(const inf__qgemm_b *b, int64_t m, const uint8_t *a, int64_t lda, const int32_t *init, int32_t *c,
                    int64_t ldc) {
    raw_kernel(b->isa)(b, m, a, lda, init, c, ldc);
}

void inf__qgemm_layout(inf__qgemm_isa isa, int *panel, int *kgroup, int *elem) {
    pack_shape s = shape_of(isa);
    *panel = s.panel, *kgroup = s.kgroup, *elem = s.elem;
}

enum { FOLD_MAX_N = 4096 };

void inf__qgemm_rows(const inf__qgemm_b *b, int64_t m, const uint8_t *a, int64_t lda, int32_t a_zp, int32_t *c,
                     int64_t ldc) {
    uint32_t za = (uint32_t)a_zp, kk = (uint32_t)b->k;
    if (!b->any_b_zp && b->np <= FOLD_MAX_N) { /* the a_zp term as the sums' start value: no second pass */
        int32_t init[FOLD_MAX_N];
        for (int64_t j = 0; j < b->np; j++) init[j] = (int32_t)(0u - za * (uint32_t)b->colsum[j]);
        raw_kernel(b->isa)(b, m, a, lda, init, c, ldc);
        return;
    }
    raw_kernel(b->isa)(b, m, a, lda, NULL, c, ldc);
    for (int64_t i = 0; i < m; i++) {
        uint32_t rowsum = 0;
        if (b->any_b_zp)
            for (int64_t p = 0; p < b->kp; p++) rowsum += a[i * lda + p];
        int32_t *ci = c + i * ldc;
        for (int64_t j = 0; j < b->np; j++) {
            uint32_t v = (uint32_t)ci[j] - za * (uint32_t)b->colsum[j];
            if (b->any_b_zp) v = v - (uint32_t)b->b_zp[j] * rowsum + kk * za * (uint32_t)b->b_zp[j];
            ci[j] = (int32_t)v;
        }
    }
}

/* ---- activations: quantization and range ---- */

void inf__quantize_u8_ref(const float *x, int64_t n, float scale, int32_t zp, uint8_t *q) {
    for (int64_t i = 0; i < n; i++) {
        float r = nearbyintf(x[i] / scale) + (float)zp;
        r = r < 0.0f ? 0.0f : r > 255.0f ? 255.0f : r;
        q[i] = r != r ? (uint8_t)zp : (uint8_t)r;
    }
}

void inf__gelu_quantize_u8_ref(const float *x, int64_t n, float scale, int32_t zp, uint8_t *q,
                               void (*gelu)(const float *x, float *y, int64_t n)) {
    float g[64];
    for (int64_t i = 0; i < n; i += 64) {
        int64_t len = n - i < 64 ? n - i : 64;
        gelu(x + i, g, len);
        inf__quantize_u8_ref(g, len, scale, zp, q + i);
    }
}

void inf__quantize_u8(const float *x, int64_t n, float scale, int32_t zp, uint8_t *q) {
#if defined(__x86_64__)
    inf__qgemm_isa isa = inf__qgemm_best_isa();
    if (isa == INF_QGEMM_VNNI512) {
        inf__quantize_u8_avx512(x, n, scale, zp, q);
        return;
    }
    if (isa != INF_QGEMM_REF) {
        inf__quantize_u8_avx2(x, n, scale, zp, q);
        return;
    }
#endif
    inf__quantize_u8_ref(x, n, scale, zp, q);
}

void inf__minmax_f32_ref(const float *x, int64_t n, float *lo, float *hi) {
    float a = INFINITY, b = -INFINITY;
    for (int64_t i = 0; i < n; i++) {
        if (x[i] < a) a = x[i];
        if (x[i] > b) b = x[i];
    }
    *lo = a, *hi = b;
}
