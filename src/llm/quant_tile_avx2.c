/*
 * quant_tile_avx2.c -- Q4_0 / Q8_0 / Q5_0 / Q4_1 weights repacked at load into
 * tiles of 16 rows for AVX2 (without VNNI: AMD Zen 2/3, Intel before Ice Lake;
 * Q5_0 and Q4_1 on VNNI machines too), and the kernel that multiplies a tile
 * with up to INF__LLM_TILE_TOKENS q8_0 (q8_1 for Q4_1) activation rows: the
 * GEMM of prompt processing and, with one token, the GEMV of decoding.
 * (quant_tile_avx512.c is the VNNI variant of Q4_0/Q8_0; the same tile size
 * and bytes per block, another order inside the block.)
 *
 * DESIGN: a tile is two halves of 8 rows; a 256-bit register carries 4
 * consecutive quants of each of the 8 rows of a half (32-bit lane r = row r),
 * so vpmaddubsw with the activation's 4 matching bytes broadcast to every
 * lane, then vpmaddwd, adds 4 products to each row's sum: no horizontal
 * reduction.  Per 32-element block a tile holds the 16 rows' fp16 scales
 * (32 bytes; q4_1: then the 16 rows' fp16 minimums, 32 bytes), then half 0,
 * then half 1:
 *   q4_0: 4 registers (128 bytes); register h, lane r = row r's qs[4h..4h+3]
 *         (low nibbles: elements 4h.., high nibbles: 16+4h.., as stored, q + 8);
 *   q8_0: 8 registers (256 bytes); register g, lane r = row r's qs[4g..4g+3]
 *         (signed: vpmaddubsw takes |q| and the activation with q's sign);
 *   q5_0: the q4_0 nibbles, then one register of fifth bits (32 bytes): bit
 *         8e + g of lane r = the fifth bit of row r's element 4g + e, so one
 *         shift and one mask give register g's bits in place;
 *   q4_1: the q4_0 nibbles (no offset: x = d q + m, the minimum's term
 *         m x s_x summed in a second accumulator as the one-row kernel does).
 * Without VNNI the 16-bit pair sums of vpmaddubsw are added before they are
 * widened: exact, because |q4 x| <= 15 x 127 (8 registers of pairs stay
 * below 2^15) and |q5 x| <= 31 x 127 (4 at a time).  The integer sum of a
 * (row, token, block) is exact, the offset (8, 16: -offset x the activation
 * block's integer sum) removed, and it is scaled into one float lane per row
 * with acc = fma(isum, d_w * d_x, acc) block after block: the operations of
 * the one-row kernel (rowx in quant_avx2.c), so every result is bit for bit
 * the one that kernel gives, whatever the number of tokens or threads.
 * Bytes per tile block equal the original rows' (18, 34, 22, 20 x 16):
 * decoding reads no more memory than before.
 */
#include <immintrin.h>
#include <stdbool.h>
#include <string.h>

#include "llm/quant.h"

#define TR INF__LLM_TILE_ROWS
#define HALF 8 /* rows of a half tile: the 8 lanes of a register */

enum tile_fmt { T_Q4_0, T_Q8_0, T_Q5_0, T_Q4_1 };

static inline bool has_min(enum tile_fmt f) { return f == T_Q4_1; }
static inline size_t src_block_bytes(enum tile_fmt f) {
    return f == T_Q8_0 ? 34 : f == T_Q5_0 ? 22 : f == T_Q4_1 ? 20 : 18;
}
static inline size_t half_bytes(enum tile_fmt f) { return f == T_Q8_0 ? 256 : f == T_Q5_0 ? 160 : 128; }
/* scales (and minimums) before the halves */
static inline size_t head_bytes(enum tile_fmt f) { return has_min(f) ? 64 : 32; }
static inline size_t tile_block_bytes(enum tile_fmt f) { return head_bytes(f) + 2 * half_bytes(f); }
static inline const uint8_t *half_at(enum tile_fmt f, const uint8_t *t, int half) {
    return t + head_bytes(f) + (size_t)half * half_bytes(f);
}

/* ---- packing (plain C, runs once at load) ---- */

static void pack_tile(enum tile_fmt f, const uint8_t *rows, size_t row_bytes, int64_t k, uint8_t *tile) {
    const size_t sb = src_block_bytes(f), tb = tile_block_bytes(f), hb = half_bytes(f);
    const size_t qs_at = f == T_Q5_0 ? 6 : f == T_Q4_1 ? 4 : 2, n_qs = f == T_Q8_0 ? 32 : 16;
    for (int64_t b = 0; b < k / 32; b++) {
        uint8_t *t = tile + (size_t)b * tb;
        for (int r = 0; r < TR; r++) {
            const uint8_t *src = rows + (size_t)r * row_bytes + (size_t)b * sb;
            uint8_t *h = t + head_bytes(f) + (size_t)(r / HALF) * hb;
            int lane = r % HALF;
            memcpy(t + 2 * r, src, 2);
            if (has_min(f)) memcpy(t + 32 + 2 * r, src + 2, 2);
            for (size_t g = 0; g < n_qs / 4; g++) memcpy(h + g * 32 + (size_t)lane * 4, src + qs_at + 4 * g, 4);
            if (f == T_Q5_0) {
                uint32_t qh, bits = 0;
                memcpy(&qh, src + 2, 4);
                for (int e = 0; e < 32; e++) /* element e = 4g + i: register g, byte i */
                    if ((qh >> e) & 1) bits |= 1u << (8 * (e % 4) + e / 4);
                memcpy(h + 128 + (size_t)lane * 4, &bits, 4);
            }
        }
    }
}

void inf__llm_pack_q4_0_avx2(const void *rows, size_t row_bytes, int64_t k, void *tile) {
    pack_tile(T_Q4_0, rows, row_bytes, k, tile);
}
void inf__llm_pack_q8_0_avx2(const void *rows, size_t row_bytes, int64_t k, void *tile) {
    pack_tile(T_Q8_0, rows, row_bytes, k, tile);
}
void inf__llm_pack_q5_0_avx2(const void *rows, size_t row_bytes, int64_t k, void *tile) {
    pack_tile(T_Q5_0, rows, row_bytes, k, tile);
}
void inf__llm_pack_q4_1_avx2(const void *rows, size_t row_bytes, int64_t k, void *tile) {
    pack_tile(T_Q4_1, rows, row_bytes, k, tile);
}

/* ---- kernels ---- */

static inline __m256i bcast4(const int8_t *p) {
    int32_t v;
    memcpy(&v, p, 4);
    return _mm256_set1_epi32(v);
}

#define ACT(x, xs, t, b) ((const inf__blk_q8_0a *)((const uint8_t *)(x) + (size_t)(t) * (xs)) + (b))

/* The weights of one half block, ready for vpmaddubsw: w[g] pairs with the
 * activation bytes 4g..4g+3 (q8_0: |q|; its signs stay in memory at h). */
static inline void load_half(enum tile_fmt f, const uint8_t *h, __m256i w[8]) {
    const __m256i m4 = _mm256_set1_epi8(0x0f);
    if (f == T_Q8_0) {
        for (int g = 0; g < 8; g++) {
            __m256i v = _mm256_loadu_si256((const __m256i *)(h + 32 * g));
            w[g] = _mm256_sign_epi8(v, v);
        }
        return;
    }
    for (int g = 0; g < 4; g++) {
        __m256i p = _mm256_loadu_si256((const __m256i *)(h + 32 * g));
        w[g] = _mm256_and_si256(p, m4);
        w[g + 4] = _mm256_and_si256(_mm256_srli_epi16(p, 4), m4);
    }
    if (f == T_Q5_0) {
        __m256i qh = _mm256_loadu_si256((const __m256i *)(h + 128));
        const __m256i m5 = _mm256_set1_epi8(0x10);
        /* register g's fifth bits sit at bit g of each byte: move them to bit 4 */
        w[0] = _mm256_or_si256(w[0], _mm256_and_si256(_mm256_slli_epi32(qh, 4), m5));
        w[1] = _mm256_or_si256(w[1], _mm256_and_si256(_mm256_slli_epi32(qh, 3), m5));
        w[2] = _mm256_or_si256(w[2], _mm256_and_si256(_mm256_slli_epi32(qh, 2), m5));
        w[3] = _mm256_or_si256(w[3], _mm256_and_si256(_mm256_slli_epi32(qh, 1), m5));
        w[4] = _mm256_or_si256(w[4], _mm256_and_si256(qh, m5));
        w[5] = _mm256_or_si256(w[5], _mm256_and_si256(_mm256_srli_epi32(qh, 1), m5));
        w[6] = _mm256_or_si256(w[6], _mm256_and_si256(_mm256_srli_epi32(qh, 2), m5));
        w[7] = _mm256_or_si256(w[7], _mm256_and_si256(_mm256_srli_epi32(qh, 3), m5));
    }
}

/* lane r: the exact integer dot product of row r's block with the token's */
static inline __m256i half_dot(enum tile_fmt f, const __m256i w[8], const uint8_t *h, const inf__blk_q8_0a *a) {
    const __m256i ones = _mm256_set1_epi16(1);
    const int8_t *y = a->qs;
    if (f == T_Q8_0) { /* pair sums up to 2 x 128 x 127: widened one by one */
        __m256i s0 = _mm256_setzero_si256(), s1 = s0;
        for (int g = 0; g < 8; g += 2) {
            __m256i y0 = _mm256_sign_epi8(bcast4(y + 4 * g), _mm256_loadu_si256((const __m256i *)(h + 32 * g)));
            __m256i y1 = _mm256_sign_epi8(bcast4(y + 4 * g + 4), _mm256_loadu_si256((const __m256i *)(h + 32 * g + 32)));
            s0 = _mm256_add_epi32(s0, _mm256_madd_epi16(_mm256_maddubs_epi16(w[g], y0), ones));
            s1 = _mm256_add_epi32(s1, _mm256_madd_epi16(_mm256_maddubs_epi16(w[g + 1], y1), ones));
        }
        return _mm256_add_epi32(s0, s1);
    }
    __m256i p0 = _mm256_maddubs_epi16(w[0], bcast4(y));
    __m256i p1 = _mm256_maddubs_epi16(w[1], bcast4(y + 4));
    p0 = _mm256_add_epi16(p0, _mm256_maddubs_epi16(w[2], bcast4(y + 8)));
    p1 = _mm256_add_epi16(p1, _mm256_maddubs_epi16(w[3], bcast4(y + 12)));
    __m256i q0 = _mm256_maddubs_epi16(w[4], bcast4(y + 16));
    __m256i q1 = _mm256_maddubs_epi16(w[5], bcast4(y + 20));
    q0 = _mm256_add_epi16(q0, _mm256_maddubs_epi16(w[6], bcast4(y + 24)));
    q1 = _mm256_add_epi16(q1, _mm256_maddubs_epi16(w[7], bcast4(y + 28)));
    if (f == T_Q4_1) /* unsigned nibbles, no offset (a is a q8_1 block: no integer sum) */
        return _mm256_madd_epi16(_mm256_add_epi16(_mm256_add_epi16(p0, p1), _mm256_add_epi16(q0, q1)), ones);
    const int off = f == T_Q5_0 ? 16 : 8;
    __m256i base = _mm256_set1_epi32(-off * a->sum);
    if (f == T_Q4_0) /* 8 pairs of at most 15 x 127 x 2 each: below 2^15 */
        return _mm256_add_epi32(base, _mm256_madd_epi16(_mm256_add_epi16(_mm256_add_epi16(p0, p1), _mm256_add_epi16(q0, q1)), ones));
    return _mm256_add_epi32(_mm256_add_epi32(base, _mm256_madd_epi16(_mm256_add_epi16(p0, p1), ones)),
                            _mm256_madd_epi16(_mm256_add_epi16(q0, q1), ones));
}

static inline __m256 half_scales(const uint8_t *t, int half) {
    return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(t + 16 * half)));
}

/* q4_1: the 8 rows' minimums of a half */
static inline __m256 half_mins(const uint8_t *t, int half) {
    return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(t + 32 + 16 * half)));
}

/* One block of one token into a half's accumulators: acc += isum x (d_w d_x); q4_1 also accm += m_w x s_x (the
 * one-row kernel's two fmaf per block, lane by lane) */
static inline void block_step(enum tile_fmt f, const __m256i w[8], const uint8_t *t, const uint8_t *h, int half,
                              __m256 dw, const inf__blk_q8_0a *a, __m256 *acc, __m256 *accm) {
    *acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(half_dot(f, w, h, a)), _mm256_mul_ps(dw, _mm256_set1_ps(a->d)), *acc);
    if (has_min(f))
        *accm = _mm256_fmadd_ps(half_mins(t, half), _mm256_set1_ps(((const inf__blk_q8_1a *)(const void *)a)->s), *accm);
}

/* the one-row kernel returns acc + accm (accm zero without a minimum: -0 -> +0 as there) */
static inline void store_lanes(float *o, __m256 acc, __m256 accm) { _mm256_storeu_ps(o, _mm256_add_ps(acc, accm)); }

/* up to 2 tokens: blocks outer, both halves inner (decode streams each block once) */
static inline void tile_few(enum tile_fmt f, int64_t k, const uint8_t *tile, const void *x, size_t xs, int n,
                            float *out) {
    const size_t tb = tile_block_bytes(f);
    __m256 acc[2][2], accm[2][2];
    for (int half = 0; half < 2; half++)
        for (int u = 0; u < 2; u++) acc[half][u] = accm[half][u] = _mm256_setzero_ps();
    for (int64_t b = 0; b < k / 32; b++) {
        const uint8_t *t = tile + (size_t)b * tb;
        for (int half = 0; half < 2; half++) {
            const uint8_t *h = half_at(f, t, half);
            __m256i w[8];
            load_half(f, h, w);
            __m256 dw = half_scales(t, half);
            for (int u = 0; u < n; u++) block_step(f, w, t, h, half, dw, ACT(x, xs, u, b), &acc[half][u], &accm[half][u]);
        }
    }
    for (int u = 0; u < n; u++)
        for (int half = 0; half < 2; half++) store_lanes(out + TR * u + HALF * half, acc[half][u], accm[half][u]);
}

/* more tokens: a half at a time, nu <= 4 tokens per pass over it (weights and
 * accumulators in registers; nu a constant once inlined) */
#define TOKEN_GROUP 4
static inline __attribute__((always_inline)) void half_pass(enum tile_fmt f, int64_t k, const uint8_t *tile, int half,
                                                            const void *x, size_t xs, int nu, float *out) {
    const size_t tb = tile_block_bytes(f);
    __m256 acc[TOKEN_GROUP], accm[TOKEN_GROUP];
    for (int u = 0; u < nu; u++) acc[u] = accm[u] = _mm256_setzero_ps();
    for (int64_t b = 0; b < k / 32; b++) {
        const uint8_t *t = tile + (size_t)b * tb, *h = half_at(f, t, half);
        __m256i w[8];
        load_half(f, h, w);
        __m256 dw = half_scales(t, half);
        for (int u = 0; u < nu; u++) block_step(f, w, t, h, half, dw, ACT(x, xs, u, b), &acc[u], &accm[u]);
    }
    for (int u = 0; u < nu; u++) store_lanes(out + TR * u + HALF * half, acc[u], accm[u]);
}

static inline void tile_many(enum tile_fmt f, int64_t k, const uint8_t *tile, const void *x, size_t xs, int n,
                             float *out) {
    for (int half = 0; half < 2; half++)
        for (int u0 = 0; u0 < n; u0 += TOKEN_GROUP) {
            const void *xu = (const uint8_t *)x + (size_t)u0 * xs;
            float *o = out + TR * u0;
            switch (n - u0 < TOKEN_GROUP ? n - u0 : TOKEN_GROUP) {
            case 4: half_pass(f, k, tile, half, xu, xs, 4, o); break;
            case 3: half_pass(f, k, tile, half, xu, xs, 3, o); break;
            case 2: half_pass(f, k, tile, half, xu, xs, 2, o); break;
            default: half_pass(f, k, tile, half, xu, xs, 1, o); break;
            }
        }
}

static inline void tile_kernel(enum tile_fmt f, int64_t k, const void *tile, const void *x, size_t xs, int n,
                               float *out) {
    if (n <= 2) tile_few(f, k, tile, x, xs, n, out);
    else tile_many(f, k, tile, x, xs, n, out);
}

void inf__llm_tile_q4_0_avx2(int64_t k, const void *tile, const void *x, size_t xs, int n, float *out) {
    tile_kernel(T_Q4_0, k, tile, x, xs, n, out);
}
void inf__llm_tile_q8_0_avx2(int64_t k, const void *tile, const void *x, size_t xs, int n, float *out) {
    tile_kernel(T_Q8_0, k, tile, x, xs, n, out);
}
void inf__llm_tile_q5_0_avx2(int64_t k, const void *tile, const void *x, size_t xs, int n, float *out) {
    tile_kernel(T_Q5_0, k, tile, x, xs, n, out);
}
void inf__llm_tile_q4_1_avx2(int64_t k, const void *tile, const void *x, size_t xs, int n, float *out) {
    tile_kernel(T_Q4_1, k, tile, x, xs, n, out);
}
