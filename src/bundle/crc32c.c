/*
 * crc32c.c -- CRC32C (Castagnoli polynomial 0x82F63B78, reflected), the
 * bundle checksum.  A bundle is checked whole at every load, so the check
 * must cost far less than the load: on x86-64 with SSE4.2 it runs the crc32
 * instruction 8 bytes at a time (~1 byte per cycle or better); elsewhere a
 * slicing-by-8 table, filled on first use (a process-wide constant once
 * built; two threads building it at once write the same values).
 */
#include <string.h>

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
    __builtin_cpu_init();
    return __builtin_cpu_supports("sse4.2");
}
#endif

uint32_t inf__crc32c(uint32_t crc, const void *data, size_t size) {
    crc = ~crc;
#if defined(__x86_64__)
    if (has_sse42()) return ~crc_sse42(crc, data, size);
#endif
    return ~crc_soft(crc, data, size);
}
