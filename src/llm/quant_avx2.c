/*
 * quant_avx2.c -- AVX2/FMA/F16C twins of the reference row kernels in
 * quant.c (built with -mavx2 -mfma -mf16c, called only when the CPU has
 * them: quant.c's table).
 *
 * Integer dot products of 32-element blocks use the usual pair of
 * instructions: maddubs (u8 x i8 -> i16 pairs) then madd with ones (-> i32);
 * a signed x signed product first moves x's sign onto y (sign_epi8).  Each
 * block's integer sum is scaled by d_w * d_x and accumulated with an FMA in
 * eight float lanes, summed at the end.  The dot4 variants unpack a weight
 * block once for four activation rows (prompt processing).
 */
#include <immintrin.h>
#include <math.h>
#include <string.h>

#include "llm/quant.h"

#ifndef KN
#define KN(name) inf__llm_##name##_avx2
#endif

static inline float hsum_ps(__m256 v) {
    __m128 r = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    r = _mm_add_ps(r, _mm_movehl_ps(r, r));
    r = _mm_add_ss(r, _mm_movehdup_ps(r));
    return _mm_cvtss_f32(r);
}
static inline float h2f(uint16_t h) { return _cvtsh_ss(h); }

/* 16 bytes of nibbles -> 32 bytes 0..15: low nibbles first, then high. */
static inline __m256i unpack_nibbles(const uint8_t *qs) {
    __m128i t = _mm_loadu_si128((const __m128i *)qs);
    __m256i b = _mm256_set_m128i(_mm_srli_epi16(t, 4), t);
    return _mm256_and_si256(b, _mm256_set1_epi8(0xf));
}
/* sum of x*y in i32 lanes -> float, x unsigned bytes (<= 127 or small), y signed */
static inline __m256 dot_u8_i8(__m256i ux, __m256i y) {
#ifdef INF_LLM_VNNI
    return _mm256_cvtepi32_ps(_mm256_dpbusd_epi32(_mm256_setzero_si256(), ux, y));
#else
    __m256i p = _mm256_maddubs_epi16(ux, y);
    return _mm256_cvtepi32_ps(_mm256_madd_epi16(p, _mm256_set1_epi16(1)));
#endif
}
static inline __m256 dot_i8_i8(__m256i x, __m256i y) {
    return dot_u8_i8(_mm256_sign_epi8(x, x), _mm256_sign_epi8(y, x));
}

/* (f32 and f16: f32_tile_avx2.c) */

/* ---- q8_0, q4_0, q4_1 ----
 * Even blocks accumulate into acc0, odd ones into acc1; the single-row and
 * four-row kernels do the same float operations in the same order per row,
 * so a batch of tokens gives bit for bit the logits of the same tokens fed
 * one by one (speculative decoding relies on it). */

static inline __m256i load_q8_0(const inf__blk_q8_0 *a) { return _mm256_loadu_si256((const __m256i *)a->qs); }
static inline __m256i load_q4_0(const inf__blk_q4_0 *a) {
    return _mm256_sub_epi8(unpack_nibbles(a->qs), _mm256_set1_epi8(8));
}
static inline __m256i load_y(const int8_t *qs) { return _mm256_loadu_si256((const __m256i *)qs); }

#define ACT_ROW(x, s, r, T) ((const T *)((const char *)(x) + (size_t)(r) * (s)))

/* signed weights (q8_0, q4_0) against q8_0 activations */
#define SIGNED_DOT(NAME, WT, LOAD)                                                                     \
    float KN(NAME)(int64_t k, const void *w, const void *x) {                                          \
        const WT *a = w;                                                                               \
        const inf__blk_q8_0a *b = x;                                                                   \
        __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();                                 \
        int64_t n = k / QK, i = 0;                                                                     \
        for (; i + 2 <= n; i += 2) {                                                                   \
            acc0 = _mm256_fmadd_ps(_mm256_set1_ps(h2f(a[i].d) * b[i].d), dot_i8_i8(LOAD(&a[i]), load_y(b[i].qs)), acc0); \
            acc1 = _mm256_fmadd_ps(_mm256_set1_ps(h2f(a[i + 1].d) * b[i + 1].d),                          \
                                   dot_i8_i8(LOAD(&a[i + 1]), load_y(b[i + 1].qs)), acc1);             \
        }                                                                                              \
        if (i < n)                                                                                     \
            acc0 = _mm256_fmadd_ps(_mm256_set1_ps(h2f(a[i].d) * b[i].d), dot_i8_i8(LOAD(&a[i]), load_y(b[i].qs)), acc0); \
        return hsum_ps(_mm256_add_ps(acc0, acc1));                                                     \
    }
SIGNED_DOT(dot_q8_0, inf__blk_q8_0, load_q8_0)
SIGNED_DOT(dot_q4_0, inf__blk_q4_0, load_q4_0)

/* one block of a signed weight row against four activation rows */
static inline void signed_block4(__m256i qa, float da, const void *x, size_t xs, int64_t i, __m256 acc[4]) {
    __m256i ax = _mm256_sign_epi8(qa, qa);
    __m256 vda = _mm256_set1_ps(da);
    for (int r = 0; r < 4; r++) {
        const inf__blk_q8_0a *b = ACT_ROW(x, xs, r, inf__blk_q8_0a) + i;
        __m256i sy = _mm256_sign_epi8(load_y(b->qs), qa);
        acc[r] = _mm256_fmadd_ps(_mm256_mul_ps(vda, _mm256_broadcast_ss(&b->d)), dot_u8_i8(ax, sy), acc[r]);
    }
}

#define SIGNED_DOT4(NAME, WT, LOAD)                                                                    \
    void KN(NAME)(int64_t k, const void *w, const void *x, size_t xs, float out[4]) {                  \
        const WT *a = w;                                                                               \
        __m256 acc0[4], acc1[4];                                                                       \
        for (int r = 0; r < 4; r++) acc0[r] = acc1[r] = _mm256_setzero_ps();                           \
        int64_t n = k / QK, i = 0;                                                                     \
        for (; i + 2 <= n; i += 2) {                                                                   \
            signed_block4(LOAD(&a[i]), h2f(a[i].d), x, xs, i, acc0);                                   \
            signed_block4(LOAD(&a[i + 1]), h2f(a[i + 1].d), x, xs, i + 1, acc1);                       \
        }                                                                                              \
        if (i < n) signed_block4(LOAD(&a[i]), h2f(a[i].d), x, xs, i, acc0);                            \
        for (int r = 0; r < 4; r++) out[r] = hsum_ps(_mm256_add_ps(acc0[r], acc1[r]));                 \
    }
SIGNED_DOT4(dot4_q8_0, inf__blk_q8_0, load_q8_0)
SIGNED_DOT4(dot4_q4_0, inf__blk_q4_0, load_q4_0)

/* q4_1 (unsigned nibbles, a minimum) against q8_1 activations */
float KN(dot_q4_1)(int64_t k, const void *w, const void *x) {
    const inf__blk_q4_1 *a = w;
    const inf__blk_q8_1a *b = x;
    __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
    float summs = 0;
    int64_t n = k / QK, i = 0;
    for (; i + 2 <= n; i += 2) {
        summs += h2f(a[i].m) * b[i].s;
        acc0 = _mm256_fmadd_ps(_mm256_set1_ps(h2f(a[i].d) * b[i].d), dot_u8_i8(unpack_nibbles(a[i].qs), load_y(b[i].qs)), acc0);
        summs += h2f(a[i + 1].m) * b[i + 1].s;
        acc1 = _mm256_fmadd_ps(_mm256_set1_ps(h2f(a[i + 1].d) * b[i + 1].d),
                               dot_u8_i8(unpack_nibbles(a[i + 1].qs), load_y(b[i + 1].qs)), acc1);
    }
    if (i < n) {
        summs += h2f(a[i].m) * b[i].s;
        acc0 = _mm256_fmadd_ps(_mm256_set1_ps(h2f(a[i].d) * b[i].d), dot_u8_i8(unpack_nibbles(a[i].qs), load_y(b[i].qs)), acc0);
    }
    return hsum_ps(_mm256_add_ps(acc0, acc1)) + summs;
}

static inline void q4_1_block4(const inf__blk_q4_1 *a, const void *x, size_t xs, int64_t i, __m256 acc[4],
                               __m128 *summs) {
    __m256i qa = unpack_nibbles(a->qs);
    __m256 vda = _mm256_set1_ps(h2f(a->d));
    const inf__blk_q8_1a *b[4];
    for (int r = 0; r < 4; r++) b[r] = ACT_ROW(x, xs, r, inf__blk_q8_1a) + i;
    __m128 s = _mm_setr_ps(b[0]->s, b[1]->s, b[2]->s, b[3]->s);
    *summs = _mm_add_ps(*summs, _mm_mul_ps(_mm_set1_ps(h2f(a->m)), s));
    for (int r = 0; r < 4; r++)
        acc[r] = _mm256_fmadd_ps(_mm256_mul_ps(vda, _mm256_broadcast_ss(&b[r]->d)), dot_u8_i8(qa, load_y(b[r]->qs)), acc[r]);
}

void KN(dot4_q4_1)(int64_t k, const void *w, const void *x, size_t xs, float out[4]) {
    const inf__blk_q4_1 *a = w;
    __m256 acc0[4], acc1[4];
    __m128 summs = _mm_setzero_ps();
    for (int r = 0; r < 4; r++) acc0[r] = acc1[r] = _mm256_setzero_ps();
    int64_t n = k / QK, i = 0;
    for (; i + 2 <= n; i += 2) {
        q4_1_block4(&a[i], x, xs, i, acc0, &summs);
        q4_1_block4(&a[i + 1], x, xs, i + 1, acc1, &summs);
    }
    if (i < n) q4_1_block4(&a[i], x, xs, i, acc0, &summs);
    float sm[4];
    _mm_storeu_ps(sm, summs);
    for (int r = 0; r < 4; r++) out[r] = hsum_ps(_mm256_add_ps(acc0[r], acc1[r])) + sm[r];
}

/* ---- activation quantizers ---- */

/* One block of 32 floats -> 32 int8 (round to nearest even) and its scale;
 * returns the sum of the quantized values. */
static inline int quantize_block(const float *src, int8_t *qs, float *d_out) {
    const __m256 sign = _mm256_set1_ps(-0.0f);
    __m256 v0 = _mm256_loadu_ps(src), v1 = _mm256_loadu_ps(src + 8), v2 = _mm256_loadu_ps(src + 16),
           v3 = _mm256_loadu_ps(src + 24);
    __m256 m = _mm256_max_ps(_mm256_max_ps(_mm256_andnot_ps(sign, v0), _mm256_andnot_ps(sign, v1)),
                             _mm256_max_ps(_mm256_andnot_ps(sign, v2), _mm256_andnot_ps(sign, v3)));
    __m128 m4 = _mm_max_ps(_mm256_extractf128_ps(m, 1), _mm256_castps256_ps128(m));
    m4 = _mm_max_ps(m4, _mm_movehl_ps(m4, m4));
    m4 = _mm_max_ss(m4, _mm_movehdup_ps(m4));
    float amax = _mm_cvtss_f32(m4);
    *d_out = amax / 127.f;
    __m256 id = _mm256_set1_ps(amax != 0 ? 127.f / amax : 0.f);
#define mode (_MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)
    __m256i i0 = _mm256_cvtps_epi32(_mm256_round_ps(_mm256_mul_ps(v0, id), mode));
    __m256i i1 = _mm256_cvtps_epi32(_mm256_round_ps(_mm256_mul_ps(v1, id), mode));
    __m256i i2 = _mm256_cvtps_epi32(_mm256_round_ps(_mm256_mul_ps(v2, id), mode));
    __m256i i3 = _mm256_cvtps_epi32(_mm256_round_ps(_mm256_mul_ps(v3, id), mode));
    __m256i p = _mm256_packs_epi16(_mm256_packs_epi32(i0, i1), _mm256_packs_epi32(i2, i3));
    p = _mm256_permutevar8x32_epi32(p, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
    _mm256_storeu_si256((__m256i *)qs, p);
    /* the sum of the stored bytes (not of the int32 values: a NaN or infinite
     * input converts to INT_MIN, which the packs saturate), so it is always
     * within +-4096 and exactly what the kernels' offsets need */
    __m256i s = _mm256_madd_epi16(_mm256_maddubs_epi16(_mm256_set1_epi8(1), p), _mm256_set1_epi16(1));
    __m128i s4 = _mm_add_epi32(_mm256_castsi256_si128(s), _mm256_extracti128_si256(s, 1));
    s4 = _mm_add_epi32(s4, _mm_shuffle_epi32(s4, _MM_SHUFFLE(1, 0, 3, 2)));
    s4 = _mm_add_epi32(s4, _mm_shuffle_epi32(s4, _MM_SHUFFLE(2, 3, 0, 1)));
#undef mode
    return _mm_cvtsi128_si32(s4);
}

/* d and s rounded to fp16 as ggml stores them, kept as floats */
static inline float fp16_rounded(float x) { return _cvtsh_ss(_cvtss_sh(x, 0)); }

void KN(quantize_q8_0)(const float *src, void *dst, int64_t k) {
    inf__blk_q8_0a *b = dst;
    for (int64_t i = 0; i < k / QK; i++) {
        float d;
        b[i].sum = quantize_block(src + i * QK, b[i].qs, &d);
        b[i].d = fp16_rounded(d);
    }
}

void KN(quantize_q8_1)(const float *src, void *dst, int64_t k) {
    inf__blk_q8_1a *b = dst;
    for (int64_t i = 0; i < k / QK; i++) {
        float d;
        int sum = quantize_block(src + i * QK, b[i].qs, &d);
        b[i].d = fp16_rounded(d);
        b[i].s = fp16_rounded(d * sum);
    }
}

/* ---- eight-row kernels ----
 * A weight block becomes 32 unsigned bytes u = q + offset (q4_0: nibble, offset
 * 8; q8_0: q ^ 0x80, offset 128; q4_1: nibble, offset 0 and a minimum), so one
 * vpdpbusd (or maddubs + madd) per (row, token) gives its 32 products; eight
 * rows' partial sums are reduced together into one vector (lane = row), the
 * offset removed with the activation block's integer sum, and that exact
 * integer sum is scaled into one float accumulator lane per (row, token):
 *   acc = fma((float)isum, d_w * d_x, acc);   accm = fma(m_w, s_x, accm) (q4_1)
 * The one-row twins (rowx) do the same operations on scalars.
 */

enum { FMT_Q8_0, FMT_Q4_0, FMT_Q4_1, FMT_Q5_0, FMT_Q5_1 };
static inline int fmt_has_min(int fmt) { return fmt == FMT_Q4_1 || fmt == FMT_Q5_1; }

/* 32 bits -> 32 bytes, 0x10 where the bit is set (q5's fifth bit) */
static inline __m256i fifth_bits(const uint8_t *qh) {
    uint32_t x32;
    memcpy(&x32, qh, 4);
    const __m256i shuf = _mm256_set_epi64x(0x0303030303030303, 0x0202020202020202, 0x0101010101010101, 0);
    __m256i bytes = _mm256_shuffle_epi8(_mm256_set1_epi32((int)x32), shuf);
    bytes = _mm256_or_si256(bytes, _mm256_set1_epi64x(0x7fbfdfeff7fbfdfe));
    return _mm256_and_si256(_mm256_cmpeq_epi8(bytes, _mm256_set1_epi64x(-1)), _mm256_set1_epi8(0x10));
}

static inline __m256i dpbusd_i32(__m256i u, __m256i y) {
#ifdef INF_LLM_VNNI
    return _mm256_dpbusd_epi32(_mm256_setzero_si256(), u, y);
#else
    return _mm256_madd_epi16(_mm256_maddubs_epi16(u, y), _mm256_set1_epi16(1));
#endif
}

/* Without VNNI, maddubs would saturate on 255 x 127 pairs: q8_0 stays signed
 * there and takes the sign trick instead of the +128 offset. */
#ifdef INF_LLM_VNNI
#define Q8_SIGNED 0
#else
#define Q8_SIGNED 1
#endif

static inline __m256i weight_bytes(int fmt, const uint8_t *b) {
    if (fmt == FMT_Q8_0) {
        __m256i v = _mm256_loadu_si256((const __m256i *)(b + 2));
        return Q8_SIGNED ? v : _mm256_xor_si256(v, _mm256_set1_epi8((char)0x80));
    }
    if (fmt == FMT_Q5_0) return _mm256_or_si256(unpack_nibbles(b + 6), fifth_bits(b + 2));
    if (fmt == FMT_Q5_1) return _mm256_or_si256(unpack_nibbles(b + 8), fifth_bits(b + 4));
    return unpack_nibbles(b + (fmt == FMT_Q4_1 ? 4 : 2));
}
static inline int fmt_offset(int fmt) {
    return fmt == FMT_Q8_0 ? (Q8_SIGNED ? 0 : 128) : fmt == FMT_Q4_0 ? 8 : fmt == FMT_Q5_0 ? 16 : 0;
}
static inline __m256i block_dot(int fmt, __m256i u, __m256i y) {
    if (fmt == FMT_Q8_0 && Q8_SIGNED)
        return _mm256_madd_epi16(_mm256_maddubs_epi16(_mm256_sign_epi8(u, u), _mm256_sign_epi8(y, u)), _mm256_set1_epi16(1));
    return dpbusd_i32(u, y);
}
static inline size_t fmt_block(int fmt) {
    static const size_t bytes[] = {34, 18, 20, 22, 24};
    return bytes[fmt];
}
static inline size_t fmt_act(int fmt) { return fmt_has_min(fmt) ? sizeof(inf__blk_q8_1a) : sizeof(inf__blk_q8_0a); }

/* lane r = sum of the 8 lanes of p[r] */
static inline __m256i hsum8x8(const __m256i p[8]) {
    __m256i s01 = _mm256_hadd_epi32(p[0], p[1]), s23 = _mm256_hadd_epi32(p[2], p[3]);
    __m256i s45 = _mm256_hadd_epi32(p[4], p[5]), s67 = _mm256_hadd_epi32(p[6], p[7]);
    __m256i s0123 = _mm256_hadd_epi32(s01, s23), s4567 = _mm256_hadd_epi32(s45, s67);
    return _mm256_add_epi32(_mm256_permute2x128_si256(s0123, s4567, 0x20),
                            _mm256_permute2x128_si256(s0123, s4567, 0x31));
}

/* activation block fields: d, the integer sum (q8_0 form) or s (q8_1 form), qs */
static inline float act_d(const uint8_t *a) { float d; memcpy(&d, a, 4); return d; }
static inline int32_t act_sum(const uint8_t *a) { int32_t s; memcpy(&s, a + 4, 4); return s; }
static inline float act_s(const uint8_t *a) { float s; memcpy(&s, a + 4, 4); return s; }

static inline void gemm8(int fmt, int64_t k, const uint8_t *w, size_t rb, const uint8_t *x, size_t xs, int n,
                         float out[8 * INF__LLM_GEMM_TOKENS]) {
    const size_t bs = fmt_block(fmt), as = fmt_act(fmt);
    const int off = fmt_offset(fmt);
    __m256 acc[INF__LLM_GEMM_TOKENS], accm[INF__LLM_GEMM_TOKENS];
    for (int t = 0; t < INF__LLM_GEMM_TOKENS; t++) acc[t] = accm[t] = _mm256_setzero_ps();
    for (int64_t i = 0; i < k / QK; i++) {
        __m256i u[8];
        uint16_t dh[8], mh[8];
        for (int r = 0; r < 8; r++) {
            const uint8_t *b = w + (size_t)r * rb + (size_t)i * bs;
            memcpy(&dh[r], b, 2);
            if (fmt_has_min(fmt)) memcpy(&mh[r], b + 2, 2);
            u[r] = weight_bytes(fmt, b);
        }
        __m256 dw = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)dh));
        __m256 mw = fmt_has_min(fmt) ? _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)mh)) : _mm256_setzero_ps();
        for (int t = 0; t < n; t++) {
            const uint8_t *a = x + (size_t)t * xs + (size_t)i * as;
            __m256i y = _mm256_loadu_si256((const __m256i *)(a + 8)); /* qs after d and sum/s */
            __m256i p[8];
            for (int r = 0; r < 8; r++) p[r] = block_dot(fmt, u[r], y);
            __m256i isum = hsum8x8(p);
            if (off) isum = _mm256_sub_epi32(isum, _mm256_set1_epi32(off * act_sum(a)));
            __m256 scale = _mm256_mul_ps(dw, _mm256_set1_ps(act_d(a)));
            acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum), scale, acc[t]);
            if (fmt_has_min(fmt)) accm[t] = _mm256_fmadd_ps(mw, _mm256_set1_ps(act_s(a)), accm[t]);
        }
    }
    for (int t = 0; t < n; t++) _mm256_storeu_ps(out + 8 * t, _mm256_add_ps(acc[t], accm[t]));
}

static inline float rowx(int fmt, int64_t k, const uint8_t *w, const uint8_t *x) {
    const size_t bs = fmt_block(fmt), as = fmt_act(fmt);
    const int off = fmt_offset(fmt);
    float acc = 0, accm = 0;
    for (int64_t i = 0; i < k / QK; i++) {
        const uint8_t *b = w + (size_t)i * bs, *a = x + (size_t)i * as;
        uint16_t dh, mh = 0;
        memcpy(&dh, b, 2);
        if (fmt_has_min(fmt)) memcpy(&mh, b + 2, 2);
        __m256i p = block_dot(fmt, weight_bytes(fmt, b), _mm256_loadu_si256((const __m256i *)(a + 8)));
        __m128i q = _mm_add_epi32(_mm256_castsi256_si128(p), _mm256_extracti128_si256(p, 1));
        q = _mm_add_epi32(q, _mm_shuffle_epi32(q, _MM_SHUFFLE(1, 0, 3, 2)));
        q = _mm_add_epi32(q, _mm_shuffle_epi32(q, _MM_SHUFFLE(2, 3, 0, 1)));
        int32_t isum = _mm_cvtsi128_si32(q) - (off ? off * act_sum(a) : 0);
        acc = fmaf((float)isum, h2f(dh) * act_d(a), acc);
        if (fmt_has_min(fmt)) accm = fmaf(h2f(mh), act_s(a), accm);
    }
    return acc + accm;
}

void KN(gemm8_q8_0)(int64_t k, const void *w, size_t rb, const void *x, size_t xs, int n, float out[8 * INF__LLM_GEMM_TOKENS]) {
    gemm8(FMT_Q8_0, k, w, rb, x, xs, n, out);
}
void KN(gemm8_q4_0)(int64_t k, const void *w, size_t rb, const void *x, size_t xs, int n, float out[8 * INF__LLM_GEMM_TOKENS]) {
    gemm8(FMT_Q4_0, k, w, rb, x, xs, n, out);
}
void KN(gemm8_q4_1)(int64_t k, const void *w, size_t rb, const void *x, size_t xs, int n, float out[8 * INF__LLM_GEMM_TOKENS]) {
    gemm8(FMT_Q4_1, k, w, rb, x, xs, n, out);
}
float KN(rowx_q8_0)(int64_t k, const void *w, const void *x) { return rowx(FMT_Q8_0, k, w, x); }
float KN(rowx_q4_0)(int64_t k, const void *w, const void *x) { return rowx(FMT_Q4_0, k, w, x); }
float KN(rowx_q4_1)(int64_t k, const void *w, const void *x) { return rowx(FMT_Q4_1, k, w, x); }
void KN(gemm8_q5_0)(int64_t k, const void *w, size_t rb, const void *x, size_t xs, int n, float out[8 * INF__LLM_GEMM_TOKENS]) {
    gemm8(FMT_Q5_0, k, w, rb, x, xs, n, out);
}
void KN(gemm8_q5_1)(int64_t k, const void *w, size_t rb, const void *x, size_t xs, int n, float out[8 * INF__LLM_GEMM_TOKENS]) {
    gemm8(FMT_Q5_1, k, w, rb, x, xs, n, out);
}
float KN(rowx_q5_0)(int64_t k, const void *w, const void *x) { return rowx(FMT_Q5_0, k, w, x); }
float KN(rowx_q5_1)(int64_t k, const void *w, const void *x) { return rowx(FMT_Q5_1, k, w, x); }
