/*
 * crc32c.c -- the bundle checksum: CRC32C (Castagnoli polynomial 0x82F63B78,
 * reflected), and the striped form the header stores for the body.
 *
 * A bundle is checked whole at every load, so the check must cost far less
 * than the load.  The CPU's CRC32C instruction -- x86-64 SSE4.2 `crc32`,
 * ARMv8 `crc32cx` (the CRC extension, optional in ARMv8.0, mandatory from
 * ARMv8.1) -- does 8 bytes per cycle of throughput but has a 3-cycle latency,
 * so one CRC over the body runs at a third of that.  inf__crc32c_striped
 * therefore splits the data into 4 equal stripes (the last takes the
 * remainder), computes their CRC32Cs in one interleaved loop, and returns
 * the CRC32C of the four results (16 bytes, little-endian).
 *
 * Which path runs: the instruction when the compiler targets it
 * (__SSE4_2__, __ARM_FEATURE_CRC32) or, failing that, when the CPU reports
 * it at run time (cpuid; getauxval HWCAP_CRC32 on Linux/aarch64); elsewhere
 * inf__crc32c_soft, a slicing-by-8 table (filled on first use; two threads
 * building it at once write the same values), which is also the reference
 * twin the tests hold the instruction paths to.
 *
 * FOLDING (x86-64 with AVX-512 and VPCLMULQDQ: Zen 4/5, Ice Lake and later).
 * Four interleaved crc32 streams run at ~11 bytes a cycle on Zen 5 (23 us for
 * the bench MLP's 935 KB bundle, 40 % of its load).  Carry-less multiplies
 * go further: a 16-byte block S = L.x^64 + H (L its first 8 bytes, bit
 * order reflected) is moved d bytes forward by
 *     S.x^(8d) = L.x^(64+8d) + H.x^(8d)  ==  clmul(L, x^(64+8d-1) mod P) ^ clmul(H, x^(8d-1) mod P)   (mod P)
 * (the -1: a product of reflected operands comes out shifted by one bit),
 * an at most 96-bit value that is XORed into the block d bytes later.  Four
 * zmm registers fold 256 bytes per step (16 blocks, d = 256); at the end the
 * blocks are folded into one, and the crc32 instruction reduces its 16 bytes
 * and the tail: the CRC state after a prefix equals the state after any
 * message congruent to it with the same end, with the initial state XORed
 * into the first 4 bytes.  The constants x^k mod P are computed once, by
 * squaring and multiplying (no tables copied from anywhere);
 * tests/edge/test_crc32c.c holds this path to the table on lengths up to
 * 4 KiB at every alignment, and the striped form on bundle-sized data.
 *
 * The folds are bound by the carry-less multiplies (two per 64 bytes; Zen 5:
 * ~57 GB/s whether one stripe or four are folded at a time), which leaves the
 * crc32 instruction's port idle.  So the striped form folds three stripes
 * and feeds the fourth to crc32 in the same loop: in 4 KiB blocks of four
 * 1 KiB chains (its latency is 3 cycles), whose states are joined by moving
 * each forward over the bytes after it (crc_shift: one carry-less multiply
 * by x^(8d-1) mod P, reduced by crc32) -- 1.28x on Zen 5 (the bench MLP's
 * 935 KB: 16.3 -> 12.8 us, warm).
 */
#include <string.h>

#if defined(__aarch64__)
#include <arm_acle.h>
#if defined(__linux__)
#include <sys/auxv.h>
#ifndef HWCAP_CRC32
#define HWCAP_CRC32 (1 << 7)
#endif
#endif
#endif

#include "bundle/format.h"
#include "core/cpu.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

static uint32_t crc_table[8][256];
static volatile int crc_table_ready;

static void build_table(void) {
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++) c = c & 1 ? (c >> 1) ^ 0x82F63B78u : c >> 1;
        crc_table[0][i] = c;
    }
    for (uint32_t i = 0; i < 256; i++)
        for (int t = 1; t < 8; t++) crc_table[t][i] = (crc_table[t - 1][i] >> 8) ^ crc_table[0][crc_table[t - 1][i] & 0xFF];
    crc_table_ready = 1;
}

static uint32_t crc_soft(uint32_t crc, const uint8_t *p, size_t n) {
    if (!crc_table_ready) build_table();
    while (n >= 8) {
        uint64_t w;
        memcpy(&w, p, 8);
        w ^= crc;
        crc = crc_table[7][w & 0xFF] ^ crc_table[6][(w >> 8) & 0xFF] ^ crc_table[5][(w >> 16) & 0xFF] ^
              crc_table[4][(w >> 24) & 0xFF] ^ crc_table[3][(w >> 32) & 0xFF] ^ crc_table[2][(w >> 40) & 0xFF] ^
              crc_table[1][(w >> 48) & 0xFF] ^ crc_table[0][w >> 56];
        p += 8;
        n -= 8;
    }
    while (n--) crc = (crc >> 8) ^ crc_table[0][(crc ^ *p++) & 0xFF];
    return crc;
}

uint32_t inf__crc32c_soft(uint32_t crc, const void *data, size_t size) { return ~crc_soft(~crc, data, size); }

#if defined(__x86_64__)
__attribute__((target("sse4.2"))) static uint32_t crc_sse42(uint32_t crc, const uint8_t *p, size_t n) {
    uint64_t c = crc;
    while (n >= 8) {
        uint64_t w;
        memcpy(&w, p, 8);
        c = __builtin_ia32_crc32di(c, w);
        p += 8;
        n -= 8;
    }
    uint32_t c32 = (uint32_t)c;
    while (n--) c32 = __builtin_ia32_crc32qi(c32, *p++);
    return c32;
}

static int has_sse42(void) {
#if defined(__SSE4_2__)
    return 1;
#else
    __builtin_cpu_init();
    return __builtin_cpu_supports("sse4.2");
#endif
}
#define HAS_CRC_INSN() has_sse42()
#define CRC_STEP8(c, w) __builtin_ia32_crc32di(c, w)
#define CRC_STEP1(c, b) __builtin_ia32_crc32qi(c, b)
#define CRC_TARGET __attribute__((target("sse4.2")))
#elif defined(__aarch64__)
static int has_armcrc(void) {
#if defined(__ARM_FEATURE_CRC32)
    return 1;
#elif defined(__linux__)
    static int cached = -1; /* process-wide, idempotent */
    if (cached < 0) cached = (getauxval(AT_HWCAP) & HWCAP_CRC32) != 0;
    return cached;
#else
    return 0;
#endif
}
#define HAS_CRC_INSN() has_armcrc()
#define CRC_STEP8(c, w) __crc32cd((uint32_t)(c), w)
#define CRC_STEP1(c, b) __crc32cb(c, b)
#define CRC_TARGET __attribute__((target("+crc")))
#endif

#if defined(__aarch64__)
/* One CRC with the instruction (the x86 one is crc_sse42 above). */
CRC_TARGET static uint32_t crc_armv8(uint32_t crc, const uint8_t *p, size_t n) {
    while (n >= 8) {
        uint64_t w;
        memcpy(&w, p, 8);
        crc = CRC_STEP8(crc, w);
        p += 8;
        n -= 8;
    }
    while (n--)
        crc = CRC_STEP1(crc, *p++);
    return crc;
}
#endif

#if defined(HAS_CRC_INSN)
/* Four stripes of n bytes each at p, p + n, p + 2n, p + 3n (n a multiple of 8). */
CRC_TARGET static void crc4_insn(const uint8_t *p, size_t n, uint32_t c[4]) {
    uint64_t a = ~0u, b = ~0u, x = ~0u, y = ~0u;
    for (size_t i = 0; i < n; i += 8) {
        uint64_t w0, w1, w2, w3;
        memcpy(&w0, p + i, 8);
        memcpy(&w1, p + n + i, 8);
        memcpy(&w2, p + 2 * n + i, 8);
        memcpy(&w3, p + 3 * n + i, 8);
        a = CRC_STEP8(a, w0);
        b = CRC_STEP8(b, w1);
        x = CRC_STEP8(x, w2);
        y = CRC_STEP8(y, w3);
    }
    c[0] = ~(uint32_t)a, c[1] = ~(uint32_t)b, c[2] = ~(uint32_t)x, c[3] = ~(uint32_t)y;
}
#endif

#if defined(__x86_64__)
/* ---- folding with VPCLMULQDQ (see the top of the file) ---- */

#define FOLD_MIN 256 /* bytes: shorter data goes to the crc32 instruction */

/* a.b mod P for polynomials of degree < 32 (bit j: the coefficient of x^j). */
static uint32_t gf2_mulmod(uint32_t a, uint32_t b) {
    uint64_t prod = 0;
    for (int j = 0; j < 32; j++)
        if (b >> j & 1) prod ^= (uint64_t)a << j;
    for (int j = 62; j >= 32; j--)
        if (prod >> j & 1) prod ^= 0x11EDC6F41ull << (j - 32);
    return (uint32_t)prod;
}

/* x^n mod P (P = x^32 + 0x1EDC6F41, the Castagnoli polynomial), as a 64-bit
 * reflected operand: the coefficient of x^j at bit 63 - j.  Square and
 * multiply, so large n (a 4 KiB shift) costs ~25 steps. */
static uint64_t xpow_reflected(unsigned n) {
    uint32_t r = 1, sq = 2; /* x^0, x^1 */
    for (; n; n >>= 1, sq = gf2_mulmod(sq, sq))
        if (n & 1) r = gf2_mulmod(r, sq);
    uint64_t out = 0;
    for (int j = 0; j < 32; j++)
        if (r >> j & 1) out |= 1ull << (63 - j);
    return out;
}

/* The two constants moving a block d bytes forward: {L's, H's}. */
typedef struct fold_k {
    uint64_t lo, hi;
} fold_k;
static fold_k k_d(unsigned d) { return (fold_k){xpow_reflected(64 + 8 * d - 1), xpow_reflected(8 * d - 1)}; }

static fold_k k256, k64, k48, k32, k16;
static uint64_t kshift[4]; /* x^(8 * 1024 * (i + 1) - 1) mod P: a CRC state moved 1, 2, 3, 4 KiB forward */
static volatile int fold_ready;

static void fold_init(void) {
    k256 = k_d(256), k64 = k_d(64), k48 = k_d(48), k32 = k_d(32), k16 = k_d(16);
    for (int i = 0; i < 4; i++)
        kshift[i] = xpow_reflected(8 * 1024 * (unsigned)(i + 1) - 1);
    fold_ready = 1; /* two threads computing them at once write the same values */
}

static int has_fold(void) {
    static int cached = -1; /* process-wide, idempotent; INFERA_CPU below avx512 turns it off */
    if (cached < 0) {
        __builtin_cpu_init();
        cached = inf__cpu_path_get() >= INF__CPU_AVX512 && __builtin_cpu_supports("avx512f") &&
                 __builtin_cpu_supports("vpclmulqdq") && __builtin_cpu_supports("sse4.2");
    }
    return cached;
}

#define FOLD_TARGET __attribute__((target("avx512f,vpclmulqdq,pclmul,sse4.2")))

FOLD_TARGET static inline __m512i fold512(__m512i x, __m512i k, __m512i next) {
    return _mm512_ternarylogic_epi64(_mm512_clmulepi64_epi128(x, k, 0x00), _mm512_clmulepi64_epi128(x, k, 0x11), next,
                                     0x96); /* a ^ b ^ c */
}

FOLD_TARGET static inline __m128i fold128(__m128i x, fold_k k, __m128i next) {
    __m128i kk = _mm_set_epi64x((long long)k.hi, (long long)k.lo);
    return _mm_xor_si128(_mm_xor_si128(_mm_clmulepi64_si128(x, kk, 0x00), _mm_clmulepi64_si128(x, kk, 0x11)), next);
}

/* The CRC state (not inverted) from four folded accumulators (the last 256
 * bytes folded in) and the n < 256 bytes at p after them. */
FOLD_TARGET static inline uint32_t fold_finish(__m512i x0, __m512i x1, __m512i x2, __m512i x3, const uint8_t *p,
                                               size_t n) {
    __m512i k = _mm512_broadcast_i32x4(_mm_set_epi64x((long long)k64.hi, (long long)k64.lo));
    x1 = fold512(x0, k, x1);
    x2 = fold512(x1, k, x2);
    x3 = fold512(x2, k, x3);
    for (; n >= 64; p += 64, n -= 64) x3 = fold512(x3, k, _mm512_loadu_si512(p));
    __m128i s = _mm512_extracti32x4_epi32(x3, 3);
    s = fold128(_mm512_extracti32x4_epi32(x3, 2), k16, s);
    s = fold128(_mm512_extracti32x4_epi32(x3, 1), k32, s);
    s = fold128(_mm512_castsi512_si128(x3), k48, s);
    uint64_t c64 = _mm_crc32_u64(0, (uint64_t)_mm_cvtsi128_si64(s));
    c64 = _mm_crc32_u64(c64, (uint64_t)_mm_extract_epi64(s, 1));
    for (; n >= 8; p += 8, n -= 8) {
        uint64_t w;
        memcpy(&w, p, 8);
        c64 = _mm_crc32_u64(c64, w);
    }
    uint32_t c32 = (uint32_t)c64;
    while (n--) c32 = _mm_crc32_u8(c32, *p++);
    return c32;
}

/* The CRC state (not inverted) after n >= FOLD_MIN bytes at p, from state c. */
FOLD_TARGET static uint32_t crc_fold(uint32_t c, const uint8_t *p, size_t n) {
    if (!fold_ready) fold_init();
    __m512i x0 = _mm512_loadu_si512(p), x1 = _mm512_loadu_si512(p + 64), x2 = _mm512_loadu_si512(p + 128),
            x3 = _mm512_loadu_si512(p + 192);
    x0 = _mm512_xor_si512(x0, _mm512_castsi128_si512(_mm_cvtsi32_si128((int)c)));
    p += 256, n -= 256;
    __m512i k = _mm512_broadcast_i32x4(_mm_set_epi64x((long long)k256.hi, (long long)k256.lo));
    for (; n >= 256; p += 256, n -= 256) {
        x0 = fold512(x0, k, _mm512_loadu_si512(p));
        x1 = fold512(x1, k, _mm512_loadu_si512(p + 64));
        x2 = fold512(x2, k, _mm512_loadu_si512(p + 128));
        x3 = fold512(x3, k, _mm512_loadu_si512(p + 192));
    }
    return fold_finish(x0, x1, x2, x3, p, n);
}

/* a.x^(8d) mod P for a CRC state a (not inverted): the state a moved d bytes
 * forward over zeros, with k = x^(8d - 1) mod P (reflected). */
FOLD_TARGET static inline uint32_t crc_shift(uint32_t a, uint64_t k) {
    __m128i p = _mm_clmulepi64_si128(_mm_cvtsi32_si128((int)a), _mm_cvtsi64_si128((long long)k), 0x00);
    return (uint32_t)_mm_crc32_u64(0, (uint64_t)_mm_cvtsi128_si64(p)) ^ (uint32_t)_mm_extract_epi32(p, 2);
}

#define CRC8(c, q) (c = _mm_crc32_u64(c, ld64(q)))
static inline uint64_t ld64(const uint8_t *q) {
    uint64_t w;
    memcpy(&w, q, 8);
    return w;
}

/* The four stripes, three folded (twelve accumulators) while the crc32
 * instruction -- another execution port than the carry-less multiply --
 * takes the fourth: in 4 KiB blocks of four 1 KiB chains (the instruction's
 * latency is 3 cycles), joined by shifting their states (crc_shift). */
FOLD_TARGET static void crc_fold3_insn1(const uint8_t *p, size_t n, uint32_t c[4]) {
    if (!fold_ready) fold_init();
    const uint8_t *q[3] = {p, p + n, p + 2 * n}, *q3 = p + 3 * n;
    __m512i x[3][4];
    __m512i init = _mm512_castsi128_si512(_mm_cvtsi32_si128(-1));
#pragma GCC unroll 3
    for (int s = 0; s < 3; s++) {
#pragma GCC unroll 4
        for (int j = 0; j < 4; j++)
            x[s][j] = _mm512_loadu_si512(q[s] + 64 * j);
        x[s][0] = _mm512_xor_si512(x[s][0], init);
    }
    __m512i k = _mm512_broadcast_i32x4(_mm_set_epi64x((long long)k256.hi, (long long)k256.lo));
    size_t steps = (n - 256) / 256, blocks = steps / 16, i = 256;
    uint32_t s3 = ~0u;
    for (size_t b = 0; b < blocks; b++) {
        const uint8_t *blk = q3 + b * 4096;
        uint64_t c0 = 0, c1 = 0, c2 = 0, cc = 0;
        for (int t = 0; t < 16; t++, i += 256) {
#pragma GCC unroll 3
            for (int s = 0; s < 3; s++)
#pragma GCC unroll 4
                for (int j = 0; j < 4; j++)
                    x[s][j] = fold512(x[s][j], k, _mm512_loadu_si512(q[s] + i + 64 * j));
            const uint8_t *w = blk + 64 * t;
#pragma GCC unroll 8
            for (int j = 0; j < 64; j += 8) {
                CRC8(c0, w + j);
                CRC8(c1, w + 1024 + j);
                CRC8(c2, w + 2048 + j);
                CRC8(cc, w + 3072 + j);
            }
        }
        s3 = crc_shift(s3, kshift[3]) ^ crc_shift((uint32_t)c0, kshift[2]) ^ crc_shift((uint32_t)c1, kshift[1]) ^
             crc_shift((uint32_t)c2, kshift[0]) ^ (uint32_t)cc;
    }
    for (; n - i >= 256; i += 256)
#pragma GCC unroll 3
        for (int s = 0; s < 3; s++)
#pragma GCC unroll 4
            for (int j = 0; j < 4; j++)
                x[s][j] = fold512(x[s][j], k, _mm512_loadu_si512(q[s] + i + 64 * j));
    for (int s = 0; s < 3; s++)
        c[s] = ~fold_finish(x[s][0], x[s][1], x[s][2], x[s][3], q[s] + i, n - i);
    size_t done = blocks * 4096;
    c[3] = n - done >= FOLD_MIN ? ~crc_fold(s3, q3 + done, n - done) : ~crc_sse42(s3, q3 + done, n - done);
}
#endif

uint32_t inf__crc32c_striped(const void *data, size_t size) {
    const uint8_t *p = data;
    size_t stripe = size / 4 / 8 * 8;
    uint32_t c[4];
#if defined(__x86_64__)
    if (stripe >= FOLD_MIN && has_fold())
        crc_fold3_insn1(p, stripe, c);
    else
#endif
#if defined(HAS_CRC_INSN)
        if (HAS_CRC_INSN())
        crc4_insn(p, stripe, c);
    else
#endif
        for (int i = 0; i < 4; i++) c[i] = inf__crc32c(0, p + (size_t)i * stripe, stripe);
    c[3] = inf__crc32c(c[3], p + 4 * stripe, size - 4 * stripe); /* the remainder continues the last stripe */
    uint8_t le[16];
    for (int i = 0; i < 4; i++) inf__wr_u32(le + 4 * i, c[i]);
    return inf__crc32c(0, le, sizeof le);
}

uint32_t inf__crc32c(uint32_t crc, const void *data, size_t size) {
    crc = ~crc;
#if defined(__x86_64__)
    if (size >= FOLD_MIN && has_fold()) return ~crc_fold(crc, data, size);
    if (has_sse42()) return ~crc_sse42(crc, data, size);
#elif defined(__aarch64__)
    if (has_armcrc()) return ~crc_armv8(crc, data, size);
#endif
    return ~crc_soft(crc, data, size);
}

int inf__crc32c_has_insn(void) {
#if defined(__x86_64__)
    if (has_fold()) return 2;
#endif
#if defined(HAS_CRC_INSN)
    return HAS_CRC_INSN() != 0;
#else
    return 0;
#endif
}
