/*
 * test_crc32c.c -- the bundle checksum (src/bundle/crc32c.c) against known
 * CRC32C values: the test vectors of RFC 3720 (iSCSI) appendix B.4 and the
 * customary check value of "123456789" (0xE3069283).  The instruction path
 * (SSE4.2 on x86-64, with VPCLMULQDQ folding from 256 bytes where AVX-512
 * has it; the CRC extension on aarch64; reported) must equal the table path
 * (the reference twin) on every length 0..600 and every 7th to 4,200, at
 * every alignment 0..7, chained from a non-zero CRC; and the striped body checksum must be the CRC32C of the four
 * stripes' CRC32Cs as docs/edge.md describes it, computed with the table,
 * on sizes to 1 MiB (the AVX-512 path's 4 KiB blocks and their joins).  Runs on x86-64 and, in the aarch64 subset, under qemu.
 */
#include <stdio.h>
#include <string.h>

#include "bundle/format.h"

static int failures;

#define CHECK(cond, ...)                                                                                               \
    do {                                                                                                               \
        if (!(cond)) {                                                                                                 \
            failures++;                                                                                                \
            printf("FAIL %s:%d: ", __FILE__, __LINE__);                                                                \
            printf(__VA_ARGS__);                                                                                       \
            printf("\n");                                                                                              \
        }                                                                                                              \
    } while (0)

/* RFC 3720 B.4: the CRC as the four bytes sent (little-endian) */
static uint32_t le(const char *hex4) {
    unsigned b[4];
    sscanf(hex4, "%x %x %x %x", &b[0], &b[1], &b[2], &b[3]);
    return b[0] | b[1] << 8 | b[2] << 16 | (uint32_t)b[3] << 24;
}

static void vectors(void) {
    uint8_t v[48];
    struct {
        const char *name;
        int n;
        uint32_t want;
    } cases[6] = {{"32 bytes of zeroes", 32, le("aa 36 91 8a")},
                  {"32 bytes of ones", 32, le("43 ab a8 62")},
                  {"32 bytes of incrementing 00..1f", 32, le("4e 79 dd 46")},
                  {"32 bytes of decrementing 1f..00", 32, le("5c db 3f 11")},
                  {"an iSCSI SCSI Read (10) command PDU", 48, le("56 3a 96 d9")},
                  {"\"123456789\"", 9, 0xE3069283u}};
    static const uint8_t pdu[48] = {0x01, 0xc0, 0, 0, 0, 0, 0,    0, 0,    0, 0, 0,    0, 0, 0, 0,
                                    0x14, 0,    0, 0, 0, 0, 0x04, 0, 0,    0, 0, 0x14, 0, 0, 0, 0x18,
                                    0x28, 0,    0, 0, 0, 0, 0,    0, 0x02, 0, 0, 0,    0, 0, 0, 0};
    for (int k = 0; k < 6; k++) {
        for (int i = 0; i < 48; i++)
            v[i] = k == 0 ? 0 : k == 1 ? 0xff : k == 2 ? (uint8_t)i : k == 3 ? (uint8_t)(31 - i) : k == 4 ? pdu[i] : 0;
        if (k == 5) memcpy(v, "123456789", 9);
        uint32_t hw = inf__crc32c(0, v, (size_t)cases[k].n), sw = inf__crc32c_soft(0, v, (size_t)cases[k].n);
        CHECK(hw == cases[k].want, "%s: inf__crc32c %08x, RFC 3720 %08x", cases[k].name, hw, cases[k].want);
        CHECK(sw == cases[k].want, "%s: table %08x, RFC 3720 %08x", cases[k].name, sw, cases[k].want);
        /* chained in two pieces */
        uint32_t two = inf__crc32c(inf__crc32c(0, v, 5), v + 5, (size_t)cases[k].n - 5);
        CHECK(two == cases[k].want, "%s in two pieces: %08x", cases[k].name, two);
    }
}

static void paths_agree(void) {
    static uint8_t buf[4300];
    uint64_t r = 0x9E3779B97F4A7C15ull;
    for (size_t i = 0; i < sizeof buf; i++) {
        r = r * 6364136223846793005ull + 1442695040888963407ull;
        buf[i] = (uint8_t)(r >> 56);
    }
    int bad = 0, pairs = 0;
    for (size_t off = 0; off < 8; off++)
        for (size_t n = 0; n <= 4200; n += n < 600 ? 1 : 7, pairs++) /* every length to 600, then every 7th */
            if (inf__crc32c(0x12345678u, buf + off, n) != inf__crc32c_soft(0x12345678u, buf + off, n)) bad++;
    CHECK(bad == 0, "instruction and table paths differ on %d of the %d (alignment, length) pairs", bad, pairs);
}

/* Sizes up to 4,099 bytes and bundle-sized ones: stripes of several 4 KiB
 * blocks (the AVX-512 path interleaves the stripes in blocks of 4 KiB and
 * joins block CRCs by shifting them), exactly whole blocks, and odd tails. */
static void striped(void) {
    static uint8_t buf[1 << 20];
    uint64_t r = 0x2545F4914F6CDD1Dull;
    for (size_t i = 0; i < sizeof buf; i++) {
        r = r * 6364136223846793005ull + 1442695040888963407ull;
        buf[i] = (uint8_t)(r >> 56);
    }
    size_t sizes[] = {0,
                      1,
                      31,
                      32,
                      33,
                      100,
                      4096,
                      4099,
                      4 * 4352,
                      4 * 4096 * 4 + 1024,
                      4 * 65536 + 13,
                      934536,
                      934536 + 4095,
                      4 * (17 * 4096 + 255) + 7,
                      sizeof buf};
    for (size_t k = 0; k < sizeof sizes / sizeof *sizes; k++) {
        size_t n = sizes[k], stripe = n / 4 / 8 * 8;
        uint32_t c[4];
        for (int i = 0; i < 4; i++)
            c[i] = inf__crc32c_soft(0, buf + (size_t)i * stripe, stripe);
        c[3] = inf__crc32c_soft(c[3], buf + 4 * stripe, n - 4 * stripe);
        uint8_t cat[16];
        for (int i = 0; i < 4; i++)
            inf__wr_u32(cat + 4 * i, c[i]);
        uint32_t want = inf__crc32c_soft(0, cat, 16), got = inf__crc32c_striped(buf, n);
        CHECK(got == want, "striped over %zu bytes: %08x, expected %08x", n, got, want);
    }
}

int main(void) {
    static const char *const path[] = {"the table only (no CRC32C instruction)", "the CRC32C instruction",
                                       "the CRC32C instruction and VPCLMULQDQ folding"};
    printf("crc32c: %s\n", path[inf__crc32c_has_insn()]);
    vectors();
    paths_agree();
    striped();
    if (failures) return 1;
    printf("ok   RFC 3720 B.4 vectors and the check value, the machine's path == table on every "
           "(alignment, length) pair tried, striped checksum as documented\n");
    return 0;
}
