/*
 * f32_tile_avx512.c -- the AVX-512 kernels of f32 and f16 weights: the
 * one-row dot product (decoding, attention, edges) and a register-blocked
 * tile of up to 6 weight rows x 4 activation rows (prompt processing and
 * speculative verification), picked by quant.c's table on CPUs with AVX-512.
 *
 * One order of operations for every product of a weight row w with an
 * activation row x, whichever kernel computes it: 16-element chunk c is
 * summed into acc[c & 1] (each accumulator's chunks in order), then
 * reduce1(acc0 + acc1) (a fixed order of additions), then the k % 16
 * remaining elements in order.  So a batch of tokens gets bit for bit the
 * logits of the same tokens fed one by one, which greedy speculative
 * decoding relies on.  f16 values are widened with vcvtph2ps (exact);
 * products and sums are in f32.
 *
 * The one-row kernel (decoding: one or two tokens) advances acc0 and acc1
 * side by side, reading the weight row as one sequential stream (an order
 * that read a row at two places -- its two halves, or alternating segments of
 * 512 bytes -- halved F32 decode on Zen 5: 20-25 vs 40 tokens per CPU-second),
 * prefetching 4 KiB ahead of its loads: one core's DRAM bandwidth is bounded
 * by the misses it has in flight, and the hardware prefetcher alone left
 * F32 decode ~20% below that.
 * A short pass (<= 8 tokens: a speculative check, a batched step) goes to
 * inf__llm_small_*_zmm: 1-2 tokens through the one-row kernel, 3-6 tokens two
 * rows at a time, each row read once as one stream (rows_stream below).
 * The tile of up to 6 rows x 4 tokens (prompt processing; 5-6 tokens go to
 * rows_stream) sums the even chunks, then the odd ones, with ONE accumulator
 * per (row, token): 24 accumulators + 6 weight vectors + 1 activation fit
 * the 32 zmm registers, 24 FMAs per 10 loads (the 3 x 4 block before the
 * 4 x 6 tile kept both accumulators live: 12 per 7); the first pass's sums
 * wait on the stack, the second pass finds the rows in L1/L2, and the 24
 * sums are reduced 16 at a time with reduce1's additions.  Zen 5,
 * SmolLM2-135M F32, 128-token prompt, 1 thread: 402 vs 306 tokens per
 * CPU-second (4 x 6 vs 3 x 4, load ~20).  6 x 4 rather than 4 x 6 (session
 * 16): the weight rows sit in L1 while the pass's activation rows stream from
 * L2, and 4 tokens per 6 rows read a third less from L2 per FMA than 6 per 4:
 * 1536 x 576 x 128 tokens at 145-185 vs 140-157 GFLOP/s, 576 x 1536 at
 * 124-161 vs 112-136 (3 interleaved rounds, load ~9; peak 236).
 */
#include <immintrin.h>
#include <stdint.h>
#include <string.h>

#include "llm/quant.h"

#define TILE_ROWS 6   /* = the f32/f16 fblock_rows quant.c gives these kernels */
#define TILE_TOKENS 4 /* = fblock_tokens */
#define ROW_TOKENS 6  /* = fblock_row_tokens: one row against up to 6 tokens (verification passes) */

#define INLINE static inline __attribute__((always_inline))
/* Bytes ahead of the one-row kernel's loads that it prefetches its weight row
 * (and the rows after it, which follow in memory).  Zen 5, SmolLM2-135M F32
 * decode, 1 thread, tokens per CPU-second (interleaved rounds, load 6-17): no
 * prefetch 36-55 (median 46), 4096 B 49-61 (median 55), 2048 B 54-55, 8192 B
 * 49-52; prefetcht1 no better (bench/llm/RESULTS.md, session 16). */
#define PREFETCH_AHEAD 4096

/* 16 elements of a row from element i, widened to f32 */
INLINE __m512 load16(int f16, const uint8_t *row, int64_t i) {
    if (f16) return _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(row + 2 * i)));
    return _mm512_loadu_ps((const float *)row + i);
}
INLINE float load1(int f16, const uint8_t *row, int64_t i) {
    if (f16) {
        uint16_t h;
        memcpy(&h, row + 2 * i, 2);
        return _cvtsh_ss(h);
    }
    return ((const float *)row)[i];
}

/* The horizontal sum of every product, in one fixed order: s8 = low 8 lanes +
 * high 8, s4 = low 4 of s8 + high 4, u = (s4[0] + s4[2], s4[1] + s4[3]),
 * u[0] + u[1] (the order of GCC's _mm512_reduce_add_ps, written out so that
 * reduce16 below can reproduce it 16 sums at a time). */
INLINE float reduce1(__m512 v) {
    __m256 s8 =
        _mm256_add_ps(_mm512_castps512_ps256(v), _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1)));
    __m128 s4 = _mm_add_ps(_mm256_castps256_ps128(s8), _mm256_extractf128_ps(s8, 1));
    __m128 u = _mm_add_ps(s4, _mm_movehl_ps(s4, s4));
    return _mm_cvtss_f32(_mm_add_ss(u, _mm_movehdup_ps(u)));
}

/* reduce1 of 16 vectors at once (the same additions, lanes of several sums
 * side by side: 45 instructions instead of 16 x 9): r[i] = reduce1(v[i]). */
INLINE void reduce16(const __m512 v[16], float r[16]) {
    __m512 s8[8], s4[4], u[2];
    for (int p = 0; p < 8; p++) /* 128-bit lanes: v[2p]'s s8 in 0-1, v[2p+1]'s in 2-3 */
        s8[p] = _mm512_add_ps(_mm512_shuffle_f32x4(v[2 * p], v[2 * p + 1], _MM_SHUFFLE(1, 0, 1, 0)),
                              _mm512_shuffle_f32x4(v[2 * p], v[2 * p + 1], _MM_SHUFFLE(3, 2, 3, 2)));
    for (int p = 0; p < 4; p++) /* 128-bit lane j: v[4p + j]'s s4 */
        s4[p] = _mm512_add_ps(_mm512_shuffle_f32x4(s8[2 * p], s8[2 * p + 1], _MM_SHUFFLE(2, 0, 2, 0)),
                              _mm512_shuffle_f32x4(s8[2 * p], s8[2 * p + 1], _MM_SHUFFLE(3, 1, 3, 1)));
    for (int p = 0; p < 2; p++) /* per 128-bit lane: u of s4[2p], then u of s4[2p + 1] */
        u[p] = _mm512_add_ps(_mm512_shuffle_ps(s4[2 * p], s4[2 * p + 1], _MM_SHUFFLE(1, 0, 1, 0)),
                             _mm512_shuffle_ps(s4[2 * p], s4[2 * p + 1], _MM_SHUFFLE(3, 2, 3, 2)));
    __m512 sum = _mm512_add_ps(_mm512_shuffle_ps(u[0], u[1], _MM_SHUFFLE(2, 0, 2, 0)),
                               _mm512_shuffle_ps(u[0], u[1], _MM_SHUFFLE(3, 1, 3, 1)));
    float t[16]; /* t[4j + q] = sum of v[4q + j] */
    _mm512_storeu_ps(t, sum);
    for (int j = 0; j < 4; j++)
        for (int q = 0; q < 4; q++)
            r[4 * q + j] = t[4 * j + q];
}

/* The elements after the last whole chunk, in order. */
INLINE float tail(int f16, int64_t k, float s, const uint8_t *W, const uint8_t *X) {
    for (int64_t j = k / 16 * 16; j < k; j++)
        s += load1(f16, W, j) * load1(f16, X, j);
    return s;
}

/* The chunks of parity par (0, 2, 4, ... or 1, 3, 5, ...), in order, of R rows x T tokens: one chain per
 * (row, token). */
INLINE void half(int f16, int R, int T, const uint8_t *const *W, const uint8_t *const *X, int64_t n, int par,
                 __m512 acc[TILE_ROWS][ROW_TOKENS]) {
    for (int r = 0; r < R; r++)
        for (int t = 0; t < T; t++)
            acc[r][t] = _mm512_setzero_ps();
    for (int64_t c = par; c < n; c += 2) {
        __m512 w[TILE_ROWS];
        for (int r = 0; r < R; r++)
            w[r] = load16(f16, W[r], 16 * c);
        for (int t = 0; t < T; t++) {
            __m512 xv = load16(f16, X[t], 16 * c);
            for (int r = 0; r < R; r++)
                acc[r][t] = _mm512_fmadd_ps(w[r], xv, acc[r][t]);
        }
    }
}

/* R rows x T tokens (constants after inlining) into out[t * TILE_ROWS + r]: the halves one after the other,
 * then the sums reduced 16 at a time. */
INLINE void micro(int f16, int R, int T, int64_t k, const uint8_t *const *W, const uint8_t *const *X, float *out) {
    int64_t n = k / 16;
    __m512 a0[TILE_ROWS][ROW_TOKENS], a1[TILE_ROWS][ROW_TOKENS];
    half(f16, R, T, W, X, n, 0, a0);
    half(f16, R, T, W, X, n, 1, a1);
    __m512 v[32]; /* (r, t) at t * R + r, zero-padded to a multiple of 16 */
    float sums[32];
    for (int t = 0; t < T; t++)
        for (int r = 0; r < R; r++)
            v[t * R + r] = _mm512_add_ps(a0[r][t], a1[r][t]);
    for (int i = R * T; i < 32; i++)
        v[i] = _mm512_setzero_ps();
    for (int g = 0; g < R * T; g += 16)
        reduce16(v + g, sums + g);
    for (int t = 0; t < T; t++)
        for (int r = 0; r < R; r++)
            out[t * TILE_ROWS + r] = tail(f16, k, sums[t * R + r], W[r], X[t]);
}

/* One row x T <= 2 tokens: the two accumulators advance side by side (two FMA chains, the weight row read
 * as one stream). */
INLINE void row_pair(int f16, int T, int64_t k, const uint8_t *W, const uint8_t *const *X, float *out) {
    int64_t n = k / 16, c = 0;
    __m512 a0[2], a1[2];
    for (int t = 0; t < T; t++)
        a0[t] = a1[t] = _mm512_setzero_ps();
    for (; c + 2 <= n; c += 2) {
        const char *ahead = (const char *)W + (f16 ? 2 : 4) * 16 * c + PREFETCH_AHEAD; /* both lines of the pair */
        _mm_prefetch(ahead, _MM_HINT_T0);
        if (!f16) _mm_prefetch(ahead + 64, _MM_HINT_T0);
        __m512 w0 = load16(f16, W, 16 * c), w1 = load16(f16, W, 16 * (c + 1));
        for (int t = 0; t < T; t++) {
            a0[t] = _mm512_fmadd_ps(w0, load16(f16, X[t], 16 * c), a0[t]);
            a1[t] = _mm512_fmadd_ps(w1, load16(f16, X[t], 16 * (c + 1)), a1[t]);
        }
    }
    if (c < n) { /* an odd number of chunks: the last one is even */
        __m512 w0 = load16(f16, W, 16 * c);
        for (int t = 0; t < T; t++)
            a0[t] = _mm512_fmadd_ps(w0, load16(f16, X[t], 16 * c), a0[t]);
    }
    for (int t = 0; t < T; t++)
        out[t * TILE_ROWS] = tail(f16, k, reduce1(_mm512_add_ps(a0[t], a1[t])), W, X[t]);
}

/* R <= 2 rows x T <= 6 tokens, each row read once as one stream (a short
 * pass: decoding several sequences, a speculative check): per pair of chunks
 * both rows' weights are loaded once and meet every token, both accumulators
 * of every (row, token) advance side by side (4 T + 2 R + 2 registers), and
 * the weight rows are prefetched PREFETCH_AHEAD bytes ahead like the one-row
 * kernel's.  The same sums as `dot`, reduced 16 at a time.  Zen 5, 16 MiB of
 * f32 rows of 256 (the Austen target's shape), one process, variants
 * interleaved, best of 30, load 3-4 (session 18): 5 tokens 0.30 ms against
 * 0.45-0.57 for a row at a time in two halves (the tile's order), 4 tokens
 * 0.25 against 0.75 in two 2-token calls; 2 rows beat 1 (0.46 without the
 * x registers below) and 3 rows in two halves (0.36). */
INLINE void rows_stream(int f16, int R, int T, int64_t k, const uint8_t *const *W, const uint8_t *const *X,
                        float *out) {
    int64_t n = k / 16, c = 0;
    __m512 a0[2][ROW_TOKENS], a1[2][ROW_TOKENS];
    for (int r = 0; r < R; r++)
        for (int t = 0; t < T; t++)
            a0[r][t] = a1[r][t] = _mm512_setzero_ps();
    for (; c + 2 <= n; c += 2) {
        __m512 w0[2], w1[2];
        for (int r = 0; r < R; r++) {
            const char *ahead = (const char *)W[r] + (f16 ? 2 : 4) * 16 * c + PREFETCH_AHEAD;
            _mm_prefetch(ahead, _MM_HINT_T0);
            if (!f16) _mm_prefetch(ahead + 64, _MM_HINT_T0);
            w0[r] = load16(f16, W[r], 16 * c);
            w1[r] = load16(f16, W[r], 16 * (c + 1));
        }
        for (int t = 0; t < T; t++) {
            __m512 x0 = load16(f16, X[t], 16 * c), x1 = load16(f16, X[t], 16 * (c + 1));
            /* in registers: GCC folds each into both rows' FMAs, loading it twice (24 loads per 20 FMAs at
             * 5 tokens, which bound the loop; 14 this way: a 5-token pass's products 10-14% faster) */
            __asm__("" : "+v"(x0), "+v"(x1));
            for (int r = 0; r < R; r++) {
                a0[r][t] = _mm512_fmadd_ps(w0[r], x0, a0[r][t]);
                a1[r][t] = _mm512_fmadd_ps(w1[r], x1, a1[r][t]);
            }
        }
    }
    if (c < n) /* an odd number of chunks: the last one is even */
        for (int t = 0; t < T; t++) {
            __m512 x0 = load16(f16, X[t], 16 * c);
            for (int r = 0; r < R; r++)
                a0[r][t] = _mm512_fmadd_ps(load16(f16, W[r], 16 * c), x0, a0[r][t]);
        }
    __m512 v[16]; /* (r, t) at t * R + r, zero-padded */
    float sums[16];
    for (int t = 0; t < T; t++)
        for (int r = 0; r < R; r++)
            v[t * R + r] = _mm512_add_ps(a0[r][t], a1[r][t]);
    for (int i = R * T; i < 16; i++)
        v[i] = _mm512_setzero_ps();
    reduce16(v, sums);
    for (int t = 0; t < T; t++)
        for (int r = 0; r < R; r++)
            out[t * TILE_ROWS + r] = tail(f16, k, sums[t * R + r], W[r], X[t]);
}

/* rows_stream over nr rows, two at a time, for nt = 3..6 tokens (constants after inlining) */
INLINE void stream_t(int f16, int T, int64_t k, const uint8_t *const *W, int nr, const uint8_t *const *X, float *out) {
    int r = 0;
    for (; r + 2 <= nr; r += 2)
        rows_stream(f16, 2, T, k, W + r, X, out + r);
    if (r < nr) rows_stream(f16, 1, T, k, W + r, X, out + r);
}

/* A short pass's call (nt <= ROW_TOKENS): 1-2 tokens a row at a time (decoding), 3-6 two rows at a time */
INLINE void small(int f16, int64_t k, const void *w, size_t rb, int nr, const void *x, size_t xs, int nt, float *out) {
    const uint8_t *W[TILE_ROWS], *X[ROW_TOKENS];
    for (int r = 0; r < nr; r++)
        W[r] = (const uint8_t *)w + (size_t)r * rb;
    for (int t = 0; t < nt; t++)
        X[t] = (const uint8_t *)x + (size_t)t * xs;
    switch (nt) {
    case 1:
    case 2:
        for (int r = 0; r < nr; r++) {
            if (nt == 1)
                row_pair(f16, 1, k, W[r], X, out + r);
            else
                row_pair(f16, 2, k, W[r], X, out + r);
        }
        break;
    case 3:
        stream_t(f16, 3, k, W, nr, X, out);
        break;
    case 4:
        stream_t(f16, 4, k, W, nr, X, out);
        break;
    case 5:
        stream_t(f16, 5, k, W, nr, X, out);
        break;
    default:
        stream_t(f16, 6, k, W, nr, X, out);
        break;
    }
}

/* R rows (a constant) against 3..4 tokens */
INLINE void rows_t(int f16, int R, int nt, int64_t k, const uint8_t *const *W, const uint8_t *const *X, float *out) {
    if (nt == 3)
        micro(f16, R, 3, k, W, X, out);
    else
        micro(f16, R, 4, k, W, X, out);
}

INLINE void tile(int f16, int64_t k, const void *w, size_t rb, int nr, const void *x, size_t xs, int nt, float *out) {
    const uint8_t *W[TILE_ROWS], *X[ROW_TOKENS];
    for (int r = 0; r < nr; r++)
        W[r] = (const uint8_t *)w + (size_t)r * rb;
    for (int t = 0; t < nt; t++)
        X[t] = (const uint8_t *)x + (size_t)t * xs;
    if (nt > TILE_TOKENS) { /* 5-6 tokens (a short pass): rows streamed two at a time */
        if (nt == 5)
            stream_t(f16, 5, k, W, nr, X, out);
        else
            stream_t(f16, 6, k, W, nr, X, out);
        return;
    }
    if (nt <= 2) {
        for (int r = 0; r < nr; r++) {
            if (nt == 1)
                row_pair(f16, 1, k, W[r], X, out + r);
            else
                row_pair(f16, 2, k, W[r], X, out + r);
        }
        return;
    }
    switch (nr) {
    case 1:
        rows_t(f16, 1, nt, k, W, X, out);
        break;
    case 2:
        rows_t(f16, 2, nt, k, W, X, out);
        break;
    case 3:
        rows_t(f16, 3, nt, k, W, X, out);
        break;
    case 4:
        rows_t(f16, 4, nt, k, W, X, out);
        break;
    case 5:
        rows_t(f16, 5, nt, k, W, X, out);
        break;
    default:
        rows_t(f16, 6, nt, k, W, X, out);
        break;
    }
}

void inf__llm_block_f32_zmm(int64_t k, const void *w, size_t rb, int nr, const void *x, size_t xs, int nt, float *out) {
    tile(0, k, w, rb, nr, x, xs, nt, out);
}
void inf__llm_block_f16_zmm(int64_t k, const void *w, size_t rb, int nr, const void *x, size_t xs, int nt, float *out) {
    tile(1, k, w, rb, nr, x, xs, nt, out);
}
void inf__llm_small_f32_zmm(int64_t k, const void *w, size_t rb, int nr, const void *x, size_t xs, int nt, float *out) {
    small(0, k, w, rb, nr, x, xs, nt, out);
}
void inf__llm_small_f16_zmm(int64_t k, const void *w, size_t rb, int nr, const void *x, size_t xs, int nt, float *out) {
    small(1, k, w, rb, nr, x, xs, nt, out);
}

/* The one-row twins: the tile's 1-token path. */
float inf__llm_dot_f32_zmm(int64_t k, const void *w, const void *x) {
    float o[1];
    const uint8_t *X[1] = {x};
    row_pair(0, 1, k, w, X, o);
    return o[0];
}
float inf__llm_dot_f16_zmm(int64_t k, const void *w, const void *x) {
    float o[1];
    const uint8_t *X[1] = {x};
    row_pair(1, 1, k, w, X, o);
    return o[0];
}
