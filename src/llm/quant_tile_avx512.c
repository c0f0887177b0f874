/*
 * quant_tile_avx512.c -- Q4_0 / Q8_0 weights repacked at load into tiles of
 * 16 rows, and the AVX-512 VNNI kernel that multiplies a tile with up to
 * INF__LLM_TILE_TOKENS activation rows (q8_0 activations): the GEMM of prompt
 * processing and, with one token, the GEMV of decoding.
 *
 * DESIGN: a tile holds, per 32-element block, the 16 rows' fp16 scales
 * (32 bytes) and then their quants interleaved so that one 512-bit register
 * carries 4 consecutive quants of each of the 16 rows (lane r = row r):
 *   q4_0: 4 registers (256 bytes); register h, lane r = row r's qs[4h..4h+3],
 *         whose low nibbles are elements 4h..4h+3 and high nibbles elements
 *         16+4h..16+4h+3 (as stored: q + 8, unsigned);
 *   q8_0: 8 registers (512 bytes); register g, lane r = row r's qs[4g..4g+3]
 *         xor 0x80 (q + 128, unsigned).
 * vpdpbusd of such a register with the activation's 4 matching bytes
 * broadcast to every lane adds 4 products to each row's sum: no horizontal
 * reduction at all.  The integer sum starts at -offset * sum(x) (the
 * activation block's integer sum), so it is exactly sum(q * x), and is
 * scaled into one float lane per row with acc = fma(isum, d_w * d_x, acc)
 * block after block -- the operations of the one-row kernel (rowx in
 * quant_avx2.c), so every (row, token) result is bit for bit the same as
 * there, whatever the number of tokens or threads.
 * The unpacked weights of a block stay in registers for all the tokens.
 * Bytes per tile block equal the original rows' (18 x 16, 34 x 16): the
 * decode stream reads no more memory than before.
 */
#include <immintrin.h>
#include <string.h>

#include "llm/quant.h"

#define TR INF__LLM_TILE_ROWS

/* ---- packing (plain C, runs once at load) ---- */

static void pack_common(const uint8_t *rows, size_t row_bytes, int64_t k, uint8_t *tile, size_t blk_bytes, int q8) {
    const size_t tb = q8 ? 32 + 16 * 32 : 32 + 16 * 16;
    for (int64_t b = 0; b < k / 32; b++) {
        uint8_t *t = tile + (size_t)b * tb;
        for (int r = 0; r < TR; r++) {
            const uint8_t *src = rows + (size_t)r * row_bytes + (size_t)b * blk_bytes;
            memcpy(t + 2 * r, src, 2);
            int groups = q8 ? 8 : 4;
            for (int g = 0; g < groups; g++)
                for (int e = 0; e < 4; e++) {
                    uint8_t v = src[2 + 4 * g + e];
                    t[32 + (size_t)g * 64 + (size_t)r * 4 + e] = q8 ? (uint8_t)(v ^ 0x80) : v;
                }
        }
    }
}

void inf__llm_pack_q4_0_vnni(const void *rows, size_t row_bytes, int64_t k, void *tile) {
    pack_common(rows, row_bytes, k, tile, 18, 0);
}
void inf__llm_pack_q8_0_vnni(const void *rows, size_t row_bytes, int64_t k, void *tile) {
    pack_common(rows, row_bytes, k, tile, 34, 1);
}

/* ---- kernels ---- */

static inline __m512i bcast4(const int8_t *p) {
    int32_t v;
    memcpy(&v, p, 4);
    return _mm512_set1_epi32(v);
}

/* activation block fields (inf__blk_q8_0a): d, sum, qs */
#define ACT(x, xs, t, b) ((const inf__blk_q8_0a *)((const uint8_t *)(x) + (size_t)(t) * (xs)) + (b))

static inline __m512 block_scale(const uint8_t *t, const inf__blk_q8_0a *a) {
    return _mm512_mul_ps(_mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)t)), _mm512_set1_ps(a->d));
}

/* One token against a block: 4 independent integer chains (summed exactly),
 * for decode, where the chain latency matters more than the adds. */
static inline __m512i dot1(const __m512i w[8], const inf__blk_q8_0a *a, int off, const int map[8]) {
    __m512i s0 = _mm512_set1_epi32(-off * a->sum), s1 = _mm512_setzero_si512(), s2 = s1, s3 = s1;
    s0 = _mm512_dpbusd_epi32(s0, w[0], bcast4(a->qs + map[0]));
    s1 = _mm512_dpbusd_epi32(s1, w[1], bcast4(a->qs + map[1]));
    s2 = _mm512_dpbusd_epi32(s2, w[2], bcast4(a->qs + map[2]));
    s3 = _mm512_dpbusd_epi32(s3, w[3], bcast4(a->qs + map[3]));
    s0 = _mm512_dpbusd_epi32(s0, w[4], bcast4(a->qs + map[4]));
    s1 = _mm512_dpbusd_epi32(s1, w[5], bcast4(a->qs + map[5]));
    s2 = _mm512_dpbusd_epi32(s2, w[6], bcast4(a->qs + map[6]));
    s3 = _mm512_dpbusd_epi32(s3, w[7], bcast4(a->qs + map[7]));
    return _mm512_add_epi32(_mm512_add_epi32(s0, s1), _mm512_add_epi32(s2, s3));
}

/* Unpacked weights of block b: w[i] pairs with activation bytes map[i]. */
/* Blocks ahead to prefetch: the weights stream from L3 or DRAM (a tile's
 * blocks, then the next tile's, are consecutive in memory). */
#ifndef PF_BLOCKS
#define PF_BLOCKS 8
#endif

static inline void prefetch_block(const uint8_t *t, size_t tb) {
    for (size_t o = 0; o < tb; o += 64)
        _mm_prefetch((const char *)(t + PF_BLOCKS * tb + o), _MM_HINT_T0);
}

static inline const uint8_t *load_block(int q8, const uint8_t *tile, int64_t b, __m512i w[8]) {
    prefetch_block(tile + (size_t)b * (q8 ? 32 + 512 : 32 + 256), q8 ? 32 + 512 : 32 + 256);
    if (q8) {
        const uint8_t *t = tile + (size_t)b * (32 + 512);
        for (int g = 0; g < 8; g++) w[g] = _mm512_loadu_si512((const void *)(t + 32 + 64 * g));
        return t;
    }
    const uint8_t *t = tile + (size_t)b * (32 + 256);
    const __m512i m4 = _mm512_set1_epi8(0x0f);
    for (int h = 0; h < 4; h++) {
        __m512i p = _mm512_loadu_si512((const void *)(t + 32 + 64 * h));
        w[h] = _mm512_and_si512(p, m4);
        w[h + 4] = _mm512_and_si512(_mm512_srli_epi16(p, 4), m4);
    }
    return t;
}

static const int MAP_Q8[8] = {0, 4, 8, 12, 16, 20, 24, 28};
static const int MAP_Q4[8] = {0, 4, 8, 12, 16, 20, 24, 28}; /* w[h] = elements 4h.., w[h+4] = 16+4h.. */

/* The n-token body (n a constant 2..8 after inlining, so the accumulators
 * stay in registers): per block the unpacked weights once, then per token
 * its 8 products in two integer chains and one fused multiply-add. */
static inline __attribute__((always_inline)) void tile_n(int q8, int64_t k, const uint8_t *tile, const void *x,
                                                         size_t xs, const int n, __m512 *acc) {
    const int off = q8 ? 128 : 8;
    const int *map = q8 ? MAP_Q8 : MAP_Q4;
    for (int u = 0; u < n; u++)
        acc[u] = _mm512_setzero_ps();
    for (int64_t b = 0; b < k / 32; b++) {
        __m512i w[8];
        const uint8_t *t = load_block(q8, tile, b, w);
        __m512 dw = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)t));
        for (int u = 0; u < n; u++) {
            const inf__blk_q8_0a *a = ACT(x, xs, u, b);
            __m512i s = _mm512_set1_epi32(-off * a->sum), s1 = _mm512_setzero_si512();
            s = _mm512_dpbusd_epi32(s, w[0], bcast4(a->qs + map[0]));
            s1 = _mm512_dpbusd_epi32(s1, w[1], bcast4(a->qs + map[1]));
            s = _mm512_dpbusd_epi32(s, w[2], bcast4(a->qs + map[2]));
            s1 = _mm512_dpbusd_epi32(s1, w[3], bcast4(a->qs + map[3]));
            s = _mm512_dpbusd_epi32(s, w[4], bcast4(a->qs + map[4]));
            s1 = _mm512_dpbusd_epi32(s1, w[5], bcast4(a->qs + map[5]));
            s = _mm512_dpbusd_epi32(s, w[6], bcast4(a->qs + map[6]));
            s1 = _mm512_dpbusd_epi32(s1, w[7], bcast4(a->qs + map[7]));
            __m512 scale = _mm512_mul_ps(dw, _mm512_set1_ps(a->d));
            acc[u] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_add_epi32(s, s1)), scale, acc[u]);
        }
    }
}

/* y[u * ldy + r] = (or +=) row r of the tile . token u, for n <= 8 tokens:
 * (the sum + 0, as the old per-tile buffer held it, then the add). */
static inline __attribute__((always_inline)) void tile_out(int q8, int64_t k, const uint8_t *tile, const void *x,
                                                           size_t xs, int n, float *y, size_t ldy, bool add) {
    __m512 acc[INF__LLM_TILE_TOKENS];
    if (n == 1) {
        acc[0] = _mm512_setzero_ps();
        for (int64_t b = 0; b < k / 32; b++) {
            __m512i w[8];
            const uint8_t *t = load_block(q8, tile, b, w);
            const inf__blk_q8_0a *a = ACT(x, xs, 0, b);
            acc[0] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(dot1(w, a, q8 ? 128 : 8, q8 ? MAP_Q8 : MAP_Q4)),
                                     block_scale(t, a), acc[0]);
        }
    } else {
        switch (n) {
        case 2:
            tile_n(q8, k, tile, x, xs, 2, acc);
            break;
        case 3:
            tile_n(q8, k, tile, x, xs, 3, acc);
            break;
        case 4:
            tile_n(q8, k, tile, x, xs, 4, acc);
            break;
        case 5:
            tile_n(q8, k, tile, x, xs, 5, acc);
            break;
        case 6:
            tile_n(q8, k, tile, x, xs, 6, acc);
            break;
        case 7:
            tile_n(q8, k, tile, x, xs, 7, acc);
            break;
        default:
            tile_n(q8, k, tile, x, xs, 8, acc);
            break;
        }
    }
    for (int u = 0; u < n; u++) {
        __m512 r = _mm512_add_ps(acc[u], _mm512_setzero_ps());
        if (add) r = _mm512_add_ps(_mm512_loadu_ps(y + (size_t)u * ldy), r);
        _mm512_storeu_ps(y + (size_t)u * ldy, r);
    }
}

static inline __attribute__((always_inline)) void tiles_kernel(int q8, int64_t k, const uint8_t *tiles,
                                                               size_t tile_bytes, int ntiles, const void *x, size_t xs,
                                                               int n, float *y, size_t ldy, bool add) {
    for (int i = 0; i < ntiles; i++)
        tile_out(q8, k, tiles + (size_t)i * tile_bytes, x, xs, n, y + (size_t)i * TR, ldy, add);
}

void inf__llm_tile_q4_0_vnni(int64_t k, const void *tile, const void *x, size_t xs, int n, float *out) {
    tiles_kernel(0, k, tile, 0, 1, x, xs, n, out, TR, false);
}
void inf__llm_tile_q8_0_vnni(int64_t k, const void *tile, const void *x, size_t xs, int n, float *out) {
    tiles_kernel(1, k, tile, 0, 1, x, xs, n, out, TR, false);
}
void inf__llm_tiles_q4_0_vnni(int64_t k, const void *tiles, size_t tile_bytes, int ntiles, const void *x, size_t xs,
                              int n, float *y, size_t ldy, bool add) {
    tiles_kernel(0, k, tiles, tile_bytes, ntiles, x, xs, n, y, ldy, add);
}
void inf__llm_tiles_q8_0_vnni(int64_t k, const void *tiles, size_t tile_bytes, int ntiles, const void *x, size_t xs,
                              int n, float *y, size_t ldy, bool add) {
    tiles_kernel(1, k, tiles, tile_bytes, ntiles, x, xs, n, y, ldy, add);
}
