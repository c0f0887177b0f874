/*
 * qconv_pool_ubs_avx2.c -- a direct convolution with its 2 x 2 MaxPool
 * fused in registers on the AVX2 kernel for pair-safe weights (the CNN stem's
 * conv + pool of a CPU without VNNI on a `--reduce-range` file): per pooling
 * window, the int32 sums of its four positions side by side, only their
 * maximum stored.
 *
 * DESIGN: the routed implicit GEMM of inf__qconv_raw_avx2ubs
 * (x86/qgemm_ubs2_avx2.c; B packed in quads, panels of 8 columns, with the
 * route of 8-K groups per 16-column tile: ubs2 -- two vpmaddubsw results
 * added in int16, one vpmaddwd by ones -- where the packer proved it exact,
 * ubs elsewhere; A read in place as bytes through per-position row pointers
 * and a per-call table of quad offsets): a tile is one window's 4 positions
 * x two panels (8 sums), so the window's max is 3 vpmaxsd per panel instead
 * of storing the four rows and pooling them in a second pass (the AVX2
 * `vpmaddwd` twin is x86/qconv_pool_avx2.c, the VNNI one
 * x86/qconv_vnni_avx512.c).  Every step is exact, so the sums are the
 * reference's int32 values whatever the route, and the driver uses the max
 * only where the store is non-decreasing in the sum (ops/ref/qgemm_drive.c
 * store_monotonic): the bytes are the unfused ones.
 * Compiled for AVX2 only (never -mavxvnni).
 */
#include <immintrin.h>
#include <string.h>

#include "ops/qgemm.h"
#include "ops/x86/qubs_steps_avx2.h"

enum { PANEL = 8, MAXQ = INF_QGEMM_ROUTE_MAX_KP / 4 };

/* A route entry resolved once per call: the group's two A quad offsets and its B offset in a panel. */
typedef struct group_at {
    int64_t o0, o1, w;
} group_at;

static inline __m256i max4(__m256i a, __m256i b, __m256i c, __m256i d) {
    return _mm256_max_epi32(_mm256_max_epi32(a, b), _mm256_max_epi32(c, d));
}

/* One row of the window: quads at o0, o1 of row R into its two panel sums. */
#define ROW(R, S0, S1)                                                                                                 \
    do {                                                                                                               \
        __m256i q0 = bcast4(r##R + o0), q1 = bcast4(r##R + o1);                                                        \
        s##R##0 = S0(s##R##0, q0, q1, w00, w01, ones);                                                                 \
        if (two) s##R##1 = S1(s##R##1, q0, q1, w10, w11, ones);                                                        \
    } while (0)

/* The groups of one route class, S0 / S1 the steps of the two panels. */
#define GROUPS(count, S0, S1)                                                                                          \
    for (const group_at *e_ = ga, *end_ = ga + (count); e_ < end_; e_++) {                                             \
        int64_t o0 = e_->o0, o1 = e_->o1;                                                                              \
        __m256i w00 = ld(w0p + e_->w), w01 = ld(w0p + e_->w + 32);                                                     \
        __m256i w10 = two ? ld(w1p + e_->w) : w00, w11 = two ? ld(w1p + e_->w + 32) : w01;                             \
        ROW(0, S0, S1);                                                                                                \
        ROW(1, S0, S1);                                                                                                \
        ROW(2, S0, S1);                                                                                                \
        ROW(3, S0, S1);                                                                                                \
    }                                                                                                                  \
    ga += (count);

/* One window (rows r[0..3]) x panels p (and p + 1 when two), its route rt with the groups resolved in rt's order
 * (ga), into c's columns p * PANEL.. */
static inline __attribute__((always_inline)) void pool_tile(const inf__qgemm_b *b, const uint8_t *const *r,
                                                            const int64_t *qoff, const int32_t *rt, const group_at *ga,
                                                            const int32_t *init, int64_t p, const int two, int32_t *c) {
    static const int32_t zeros[2 * PANEL];
    const int32_t *start = init ? init + p * PANEL : zeros;
    const int8_t *w0p = (const int8_t *)b->data + p * b->kp * PANEL, *w1p = w0p + b->kp * PANEL;
    const uint8_t *r0 = r[0], *r1 = r[1], *r2 = r[2], *r3 = r[3];
    const __m256i ones = _mm256_set1_epi16(1);
    __m256i s00 = _mm256_loadu_si256((const __m256i *)start);
    __m256i s01 = two ? _mm256_loadu_si256((const __m256i *)(start + PANEL)) : s00;
    __m256i s10 = s00, s11 = s01, s20 = s00, s21 = s01, s30 = s00, s31 = s01;
    GROUPS(rt[0], step2, step2)
    GROUPS(rt[1], step2, step1)
    GROUPS(rt[2], step1, step2)
    GROUPS(rt[3], step1, step1)
    if (b->kp % 8) { /* the trailing quad: ubs */
        int64_t q = b->kp / 4 - 1, o = qoff[q];
        __m256i x0 = ld(w0p + q * 32), x1 = two ? ld(w1p + q * 32) : x0;
#define ROWQ(R)                                                                                                        \
    do {                                                                                                               \
        __m256i qa = bcast4(r##R + o);                                                                                 \
        s##R##0 = _mm256_add_epi32(s##R##0, _mm256_madd_epi16(_mm256_maddubs_epi16(qa, x0), ones));                    \
        if (two) s##R##1 = _mm256_add_epi32(s##R##1, _mm256_madd_epi16(_mm256_maddubs_epi16(qa, x1), ones));           \
    } while (0)
        ROWQ(0);
        ROWQ(1);
        ROWQ(2);
        ROWQ(3);
#undef ROWQ
    }
    _mm256_storeu_si256((__m256i *)(c + p * PANEL), max4(s00, s10, s20, s30));
    if (two) _mm256_storeu_si256((__m256i *)(c + (p + 1) * PANEL), max4(s01, s11, s21, s31));
}

bool inf__qconv_pool4_avx2ubs_fits(const inf__qgemm_b *b, int64_t ntaps, int64_t cq) {
    return b->isa == INF_QGEMM_AVX2_UBS && b->route && ntaps * cq == b->kp && b->kp / 4 <= MAXQ && cq % 4 == 0;
}

void inf__qconv_pool4_avx2ubs(const inf__qgemm_b *b, int64_t nwin, const uint8_t *const *rows, const int64_t *tapoff,
                              int64_t ntaps, int64_t cq, const int32_t *init, int32_t *c, int64_t ldc) {
    int64_t qoff[MAXQ], panels = b->np / PANEL, ng = b->kp / 8, stride = INF_QGEMM_ROUTE_HDR + ng;
    group_at groups[MAXQ / 2];
    for (int64_t t = 0, q = 0; t < ntaps; t++)
        for (int64_t ch = 0; ch < cq; ch += 4)
            qoff[q++] = tapoff[t] + ch;
    for (int64_t p = 0; p < panels; p += 2) { /* panel pair outer: its B stays in L1 over the windows */
        const int32_t *rt = b->route + p / 2 * stride, *gl = rt + INF_QGEMM_ROUTE_HDR;
        for (int64_t i = 0; i < ng; i++) /* the route lists every group once, in class order */
            groups[i] = (group_at){qoff[2 * gl[i]], qoff[2 * gl[i] + 1], 64 * (int64_t)gl[i]};
        for (int64_t w = 0; w < nwin; w++) {
            if (p + 2 <= panels)
                pool_tile(b, rows + 4 * w, qoff, rt, groups, init, p, 1, c + w * ldc);
            else
                pool_tile(b, rows + 4 * w, qoff, rt, groups, init, p, 0, c + w * ldc);
        }
    }
}

/* The RGB stem's im2col (ops/qgemm.h): a pair of positions at a time, one per 128-bit lane; each kernel row's
 * 16 bytes broadcast to both lanes, the row's two halves or-ed from three vpshufb each (masks: ops/ref/qconv_rgb.c). */
void inf__qconv_rgb_pairs_avx2(const inf__qconv_rgb *r, const uint8_t *const *first, int64_t npairs, int64_t rowb,
                               uint8_t *dst) {
    const __m256i m0l = ld(r->masks[0]), m0h = ld(r->masks[1]), m1l = ld(r->masks[2]), m1h = ld(r->masks[3]);
    const __m256i m2l = ld(r->masks[4]), m2h = ld(r->masks[5]);
    for (int64_t i = 0; i < npairs; i++) {
        const uint8_t *x = first[i];
        __m256i r0 = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)x));
        __m256i r1 = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)(x + rowb)));
        __m256i r2 = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)(x + 2 * rowb)));
        __m256i lo = _mm256_or_si256(_mm256_or_si256(_mm256_shuffle_epi8(r0, m0l), _mm256_shuffle_epi8(r1, m1l)),
                                     _mm256_shuffle_epi8(r2, m2l));
        __m256i hi = _mm256_or_si256(_mm256_or_si256(_mm256_shuffle_epi8(r0, m0h), _mm256_shuffle_epi8(r1, m1h)),
                                     _mm256_shuffle_epi8(r2, m2h));
        uint8_t *d = dst + i * 2 * INF_QCONV_RGB_ROW; /* in order: each store's 4 extra bytes are written again */
        _mm_storeu_si128((__m128i *)d, _mm256_castsi256_si128(lo));
        _mm_storeu_si128((__m128i *)(d + 16), _mm256_castsi256_si128(hi));
        _mm_storeu_si128((__m128i *)(d + INF_QCONV_RGB_ROW), _mm256_extracti128_si256(lo, 1));
        _mm_storeu_si128((__m128i *)(d + INF_QCONV_RGB_ROW + 16), _mm256_extracti128_si256(hi, 1));
    }
}
