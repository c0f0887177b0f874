/*
 * format.h (internal) -- the bundle file layout shared by the writer
 * (write.c) and the loader (load.c).  docs/edge.md documents the same table.
 *
 * All integers little-endian.  Layout:
 *   [0, 64)     header (below)
 *   [64, ...)   section table: n_sections entries of 24 bytes
 *   sections    each starting on a 64-byte boundary
 * The header's body_crc is the striped CRC32C (crc32c.c: four CRC32Cs over
 * four quarters, combined) of bytes [64, file_size); head_crc is CRC32C
 * over bytes [0, 40) of the header.  A reader refuses a file whose
 * magic, version, target, size or either checksum does not match.
 *
 * Versioning: FORMAT_VERSION changes whenever the meaning of any byte
 * changes; a reader loads exactly the versions it knows (today: 2) and names
 * both versions when it refuses.  Version 2 (session 15): a PREPACK entry's
 * byte after the source offset is flags (INF__PP_*), not a bool, and a SOLE
 * entry's constant is stored as its panels only.  New optional sections may be added with a
 * new kind number without a version change: readers skip kinds they do not
 * know.
 */
#ifndef INF_BUNDLE_FORMAT_H
#define INF_BUNDLE_FORMAT_H

#include <stdint.h>

#include "core/core.h"
#include "infera/bundle.h"

#define INF__BUNDLE_MAGIC "INFBNDL\x1a"
#define INF__BUNDLE_MAGIC_LEN 8
#define INF__BUNDLE_VERSION 2u
#define INF__BUNDLE_ALIGN 64u
#define INF__BUNDLE_HEADER_BYTES 64u
#define INF__BUNDLE_SECTION_BYTES 24u
#define INF__BUNDLE_MAX_SECTIONS 16u
#define INF__BUNDLE_MAX_DEPTH 32 /* nesting of subgraphs and sequence constants */
/* CONVPACK geometry (M, group, C/group, K) stays below this, so the float
 * count of every variant is far from overflow; larger ones are not stored. */
#define INF__BUNDLE_CONVPACK_MAX_DIM ((int64_t)1 << 24)

/* Header field offsets. */
enum {
    INF__BH_MAGIC = 0,      /* 8 bytes */
    INF__BH_VERSION = 8,    /* u32 */
    INF__BH_TARGET = 12,    /* u32 inf_target */
    INF__BH_FILE_SIZE = 16, /* u64 */
    INF__BH_N_SECTIONS = 24, /* u32 */
    INF__BH_FLAGS = 28,     /* u32, 0 */
    INF__BH_BODY_CRC = 32,  /* u32 */
    INF__BH_RESERVED = 36,  /* u32, 0 */
    INF__BH_HEAD_CRC = 40,  /* u32 over [0, 40) */
    /* [44, 64) zero */
};

/* Section kinds. */
typedef enum inf__bundle_section {
    INF__BS_META = 1,     /* model facts, lineage, max batch (stream, see write.c) */
    INF__BS_GRAPH = 2,    /* the optimised graph IR (stream) */
    INF__BS_WEIGHTS = 3,  /* tensor data, each 64-byte aligned, referenced by offset */
    INF__BS_PIPELINE = 4, /* pipeline spec JSON bytes */
    INF__BS_PREPACK = 5,  /* GEMM panels packed from constants at compile time (write.c); optional */
    INF__BS_CONVPACK = 6, /* convolution weights packed likewise (write.c); optional */
} inf__bundle_section;
#define INF__BS_LAST INF__BS_CONVPACK

/* PREPACK entry flags (u8; write.c put_prepacked).  SOLE: the source matrix
 * is not stored; the constant's data offset is the panels' own (b offset ==
 * panels offset), and only the readers ops.h inf__ops_gemm_b_panels_only
 * admits read it. */
enum { INF__PP_TRANS_B = 1, INF__PP_SOLE = 2 };

/* CRC32C (Castagnoli), hardware-accelerated where the CPU has it (crc32c.c). */
uint32_t inf__crc32c(uint32_t crc, const void *data, size_t size);
/* The same with the table only (no CRC instruction): the reference twin. */
uint32_t inf__crc32c_soft(uint32_t crc, const void *data, size_t size);
/* What inf__crc32c uses on this machine: 0 the table, 1 the CRC32C
 * instruction, 2 that and VPCLMULQDQ folding (x86-64 AVX-512). */
int inf__crc32c_has_insn(void);
/* The body checksum: CRC32C of the CRC32Cs of 4 stripes (see crc32c.c). */
uint32_t inf__crc32c_striped(const void *data, size_t size);

static inline uint32_t inf__rd_u32(const uint8_t *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static inline uint64_t inf__rd_u64(const uint8_t *p) { return inf__rd_u32(p) | (uint64_t)inf__rd_u32(p + 4) << 32; }
static inline void inf__wr_u32(uint8_t *p, uint32_t v) {
    for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i));
}
static inline void inf__wr_u64(uint8_t *p, uint64_t v) {
    inf__wr_u32(p, (uint32_t)v);
    inf__wr_u32(p + 4, (uint32_t)(v >> 32));
}

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "bundles store tensor data little-endian; a big-endian target needs byte swapping in load.c"
#endif

#endif /* INF_BUNDLE_FORMAT_H */
