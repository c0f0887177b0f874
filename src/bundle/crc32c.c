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

uint32_t inf__crc32c_striped(const void *data, size_t size) {
    const uint8_t *p = data;
    size_t stripe = size / 4 / 8 * 8;
    uint32_t c[4];
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
    if (has_sse42()) return ~crc_sse42(crc, data, size);
#elif defined(__aarch64__)
    if (has_armcrc()) return ~crc_armv8(crc, data, size);
#endif
    return ~crc_soft(crc, data, size);
}

int inf__crc32c_has_insn(void) {
#if defined(HAS_CRC_INSN)
    return HAS_CRC_INSN();
#else
    return 0;
#endif
}
