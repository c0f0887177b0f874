/*
 * f32_tile_avx2.c -- the AVX2/FMA/F16C kernels of f32 and f16 weights: the
 * one-row dot product (attention, edges) and a register-blocked tile of up
 * to 4 weight rows x 8 activation rows (decoding, prompt processing and
 * speculative verification), picked by quant.c's table when the CPU has
 * AVX2 and FMA but no AVX-512.
 *
 * One order of operations for every product of a weight row w with an
 * activation row x, whichever kernel computes it:
 *   f32: 8-element chunks alternate between two accumulators (chunk c into
 *        acc[c & 1]); f16: 16-element steps, the first 8 into acc[0], the
 *        next 8 into acc[1] (an odd last chunk of 8 is left to the tail);
 *   then hsum(acc[0] + acc[1]), then the remaining elements in order.
 * So a batch of tokens gets bit for bit the logits of the same tokens fed
 * one by one, which greedy speculative decoding relies on (the verification
 * pass of K+1 tokens must pick the tokens decoding alone would pick).  f16
 * values are widened with vcvtph2ps (exact), products and sums are in f32.
 *
 * The tile walks its rows one at a time, each against up to 6 tokens at once
 * (7 or 8 as 4 + 3 / 4 + 4): 2 x 6 accumulators, the weight vector and one
 * activation vector fill the 16 ymm registers, and a weight row is read
 * from memory once for all the tokens of a pass.  Rows one at a time keep
 * the weight reads one sequential stream: on Zen 3 with rows of 1 KiB, two
 * rows read side by side (a 2-row x 3-token kernel, FMA-bound on paper)
 * measured 1.4-2x slower when the weights come from L3 or DRAM, which is
 * where decoding and verification read them.
 */
#include <immintrin.h>
#include <stdint.h>
#include <string.h>

#include "llm/quant.h"

#define TILE_ROWS 4   /* = the f32/f16 fblock_rows quant.c gives these kernels */
#define TILE_TOKENS 8 /* = fblock_tokens */
#define MICRO_TOKENS 6

#define INLINE static inline __attribute__((always_inline))

INLINE float hsum8(__m256 v) {
    __m128 r = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    r = _mm_add_ps(r, _mm_movehl_ps(r, r));
    r = _mm_add_ss(r, _mm_movehdup_ps(r));
    return _mm_cvtss_f32(r);
}

/* 8 elements of a row from element i, widened to f32 */
INLINE __m256 load8(int f16, const uint8_t *row, int64_t i) {
    if (f16) return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(row + 2 * i)));
    return _mm256_loadu_ps((const float *)row + i);
}
INLINE float load1(int f16, const uint8_t *row, int64_t i) {
    if (f16) {
        uint16_t h;
        memcpy(&h, row + 2 * i, 2);
        return _cvtsh_ss(h);
    }
    return ((const float *)row)[i];
}

/* Row W x T <= MICRO_TOKENS tokens X[t] into out[t * TILE_ROWS], in the
 * order of operations described above (T is a constant after inlining: the
 * accumulators live in registers). */
INLINE void micro(int f16, int T, int64_t k, const uint8_t *W, const uint8_t *const *X, float *out) {
    __m256 a0[MICRO_TOKENS], a1[MICRO_TOKENS];
    for (int t = 0; t < T; t++) a0[t] = a1[t] = _mm256_setzero_ps();
    int64_t i = 0;
    for (; i + 16 <= k; i += 16) {
        __m256 w0 = load8(f16, W, i), w1 = load8(f16, W, i + 8);
        for (int t = 0; t < T; t++) a0[t] = _mm256_fmadd_ps(w0, load8(f16, X[t], i), a0[t]);
        for (int t = 0; t < T; t++) a1[t] = _mm256_fmadd_ps(w1, load8(f16, X[t], i + 8), a1[t]);
    }
    if (!f16 && i + 8 <= k) { /* f32: an even chunk left over goes to acc[0] */
        __m256 w0 = load8(f16, W, i);
        for (int t = 0; t < T; t++) a0[t] = _mm256_fmadd_ps(w0, load8(f16, X[t], i), a0[t]);
        i += 8;
    }
    for (int t = 0; t < T; t++) {
        float s = hsum8(_mm256_add_ps(a0[t], a1[t]));
        for (int64_t j = i; j < k; j++) s += load1(f16, W, j) * load1(f16, X[t], j);
        out[t * TILE_ROWS] = s;
    }
}

/* The micro-kernel for T tokens, T known at compile time. */
INLINE void micro_t(int f16, int T, int64_t k, const uint8_t *W, const uint8_t *const *X, float *out) {
    switch (T) {
    case 1: micro(f16, 1, k, W, X, out); break;
    case 2: micro(f16, 2, k, W, X, out); break;
    case 3: micro(f16, 3, k, W, X, out); break;
    case 4: micro(f16, 4, k, W, X, out); break;
    case 5: micro(f16, 5, k, W, X, out); break;
    default: micro(f16, 6, k, W, X, out); break;
    }
}

INLINE void tile(int f16, int64_t k, const void *w, size_t rb, int nr, const void *x, size_t xs, int nt, float *out) {
    const uint8_t *X[TILE_TOKENS];
    for (int t = 0; t < nt; t++) X[t] = (const uint8_t *)x + (size_t)t * xs;
    int first = nt <= MICRO_TOKENS ? nt : (nt + 1) / 2; /* 7, 8 tokens: 4 + 3, 4 + 4 */
    for (int r = 0; r < nr; r++) {
        const uint8_t *W = (const uint8_t *)w + (size_t)r * rb;
        micro_t(f16, first, k, W, X, out + r);
        if (nt > first) micro_t(f16, nt - first, k, W, X + first, out + first * TILE_ROWS + r);
    }
}

void inf__llm_tile_f32_avx2(int64_t k, const void *w, size_t rb, int nr, const void *x, size_t xs, int nt, float *out) {
    tile(0, k, w, rb, nr, x, xs, nt, out);
}
void inf__llm_tile_f16_avx2(int64_t k, const void *w, size_t rb, int nr, const void *x, size_t xs, int nt, float *out) {
    tile(1, k, w, rb, nr, x, xs, nt, out);
}

/* The one-row twins: the tile's 1-token micro-kernel. */
float inf__llm_dot_f32_avx2(int64_t k, const void *w, const void *x) {
    float o[1];
    const uint8_t *X[1] = {x};
    micro(0, 1, k, w, X, o);
    return o[0];
}
float inf__llm_dot_f16_avx2(int64_t k, const void *w, const void *x) {
    float o[1];
    const uint8_t *X[1] = {x};
    micro(1, 1, k, w, X, o);
    return o[0];
}
