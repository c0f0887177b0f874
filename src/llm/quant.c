/*
 * quant.c -- reference row kernels of the ggml block formats (quant.h) and
 * the table that picks, per type, the reference or the AVX2 twin.
 *
 * The reference kernels are the plain definitions, written like ggml's
 * *_ref functions: per block, an integer dot product scaled by the two
 * block scales, summed in float.  Activations are rounded to nearest, ties
 * to even (nearbyintf), as ggml's AVX2 quantizers do.
 */
#include "llm/quant.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/core.h"
#include "llm/gguf.h"

/* ---- fp16 ---- */

float inf__llm_fp16_to_fp32(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000) << 16, exp = (h >> 10) & 0x1f, man = h & 0x3ff, bits;
    if (exp == 0x1f) {
        bits = sign | 0x7f800000u | (man << 13);
    } else if (exp == 0) {
        if (man == 0) {
            bits = sign;
        } else { /* subnormal: normalise */
            int e = -1;
            do { man <<= 1; e++; } while (!(man & 0x400));
            bits = sign | ((uint32_t)(127 - 15 - e) << 23) | ((man & 0x3ff) << 13);
        }
    } else {
        bits = sign | ((exp + 112) << 23) | (man << 13);
    }
    float f;
    memcpy(&f, &bits, 4);
    return f;
}

uint16_t inf__llm_fp32_to_fp16(float f) {
    uint32_t x;
    memcpy(&x, &f, 4);
    uint32_t sign = (x >> 16) & 0x8000, ax = x & 0x7fffffffu;
    if (ax >= 0x7f800000u) return (uint16_t)(sign | 0x7c00 | (ax > 0x7f800000u ? 0x200 : 0)); /* inf, nan */
    if (ax >= 0x477ff000u) return (uint16_t)(sign | 0x7c00);                                      /* overflow */
    if (ax < 0x38800000u) {                                                                       /* subnormal or 0 */
        if (ax < 0x33000000u) return (uint16_t)sign;
        uint32_t e = ax >> 23, m = (ax & 0x7fffff) | 0x800000;
        uint32_t shift = 126 - e; /* 14 + (113 - e) - 1 */
        uint32_t r = m >> shift, rem = m & ((1u << shift) - 1), half = 1u << (shift - 1);
        if (rem > half || (rem == half && (r & 1))) r++;
        return (uint16_t)(sign | r);
    }
    uint32_t r = ((ax - 0x38000000u) >> 13), rem = ax & 0x1fff;
    if (rem > 0x1000 || (rem == 0x1000 && (r & 1))) r++;
    return (uint16_t)(sign | r);
}
#define H2F inf__llm_fp16_to_fp32
#define F2H inf__llm_fp32_to_fp16

/* ---- conversions to float ---- */

static void f32_to_float(const void *src, float *dst, int64_t k) { memcpy(dst, src, (size_t)k * 4); }
static void f16_to_float(const void *src, float *dst, int64_t k) {
    const uint8_t *s = src;
    for (int64_t i = 0; i < k; i++) {
        uint16_t h;
        memcpy(&h, s + 2 * i, 2);
        dst[i] = H2F(h);
    }
}
static void q8_0_to_float(const void *src, float *dst, int64_t k) {
    const inf__blk_q8_0 *b = src;
    for (int64_t i = 0; i < k / QK; i++) {
        float d = H2F(b[i].d);
        for (int j = 0; j < QK; j++) dst[i * QK + j] = d * b[i].qs[j];
    }
}
static void q4_0_to_float(const void *src, float *dst, int64_t k) {
    const inf__blk_q4_0 *b = src;
    for (int64_t i = 0; i < k / QK; i++) {
        float d = H2F(b[i].d);
        for (int j = 0; j < QK / 2; j++) {
            dst[i * QK + j] = d * ((b[i].qs[j] & 0xf) - 8);
            dst[i * QK + j + QK / 2] = d * ((b[i].qs[j] >> 4) - 8);
        }
    }
}
static void q4_1_to_float(const void *src, float *dst, int64_t k) {
    const inf__blk_q4_1 *b = src;
    for (int64_t i = 0; i < k / QK; i++) {
        float d = H2F(b[i].d), m = H2F(b[i].m);
        for (int j = 0; j < QK / 2; j++) {
            dst[i * QK + j] = d * (b[i].qs[j] & 0xf) + m;
            dst[i * QK + j + QK / 2] = d * (b[i].qs[j] >> 4) + m;
        }
    }
}

/* q5 element j of a block (qh: 32 fifth bits, qs: nibbles as q4_0): 0..31 */
static inline int q5_value(const uint8_t *qh4, const uint8_t *qs, int j) {
    uint32_t qh;
    memcpy(&qh, qh4, 4);
    int lo = j < QK / 2 ? qs[j] & 0xf : qs[j - QK / 2] >> 4;
    return lo | (int)(((qh >> j) & 1) << 4);
}
static void q5_0_to_float(const void *src, float *dst, int64_t k) {
    const inf__blk_q5_0 *b = src;
    for (int64_t i = 0; i < k / QK; i++) {
        float d = H2F(b[i].d);
        for (int j = 0; j < QK; j++) dst[i * QK + j] = d * (q5_value(b[i].qh, b[i].qs, j) - 16);
    }
}
static void q5_1_to_float(const void *src, float *dst, int64_t k) {
    const inf__blk_q5_1 *b = src;
    for (int64_t i = 0; i < k / QK; i++) {
        float d = H2F(b[i].d), m = H2F(b[i].m);
        for (int j = 0; j < QK; j++) dst[i * QK + j] = d * q5_value(b[i].qh, b[i].qs, j) + m;
    }
}

/* ---- activation conversions ---- */

static void f16_from_float(const float *src, void *dst, int64_t k) {
    uint8_t *d = dst;
    for (int64_t i = 0; i < k; i++) {
        uint16_t h = F2H(src[i]);
        memcpy(d + 2 * i, &h, 2);
    }
}
/* The scale as ggml stores it: rounded to fp16 (here kept as its float). */
static float fp16_rounded(float x) { return H2F(F2H(x)); }

static void act_q8_0_from_float(const float *src, void *dst, int64_t k) {
    inf__blk_q8_0a *b = dst;
    for (int64_t i = 0; i < k / QK; i++) {
        float amax = 0;
        for (int j = 0; j < QK; j++) amax = fmaxf(amax, fabsf(src[i * QK + j]));
        float d = amax / 127, id = amax != 0 ? 127.f / amax : 0; /* as ggml's AVX2 quantizer */
        b[i].d = fp16_rounded(d);
        b[i].sum = 0;
        for (int j = 0; j < QK; j++) {
            b[i].qs[j] = (int8_t)nearbyintf(src[i * QK + j] * id);
            b[i].sum += b[i].qs[j];
        }
    }
}
static void act_q8_1_from_float(const float *src, void *dst, int64_t k) {
    inf__blk_q8_1a *b = dst;
    for (int64_t i = 0; i < k / QK; i++) {
        float amax = 0;
        for (int j = 0; j < QK; j++) amax = fmaxf(amax, fabsf(src[i * QK + j]));
        float d = amax / 127, id = amax != 0 ? 127.f / amax : 0;
        int sum = 0;
        for (int j = 0; j < QK; j++) {
            b[i].qs[j] = (int8_t)nearbyintf(src[i * QK + j] * id);
            sum += b[i].qs[j];
        }
        b[i].d = fp16_rounded(d);
        b[i].s = fp16_rounded(sum * d);
    }
}

/* ---- reference dot products ---- */

static float dot_f32_ref(int64_t k, const void *w, const void *x) {
    const float *a = w, *b = x;
    double s = 0;
    for (int64_t i = 0; i < k; i++) s += (double)a[i] * b[i];
    return (float)s;
}
static float dot_f16_ref(int64_t k, const void *w, const void *x) {
    const uint8_t *a = w, *b = x;
    double s = 0;
    for (int64_t i = 0; i < k; i++) {
        uint16_t ha, hb;
        memcpy(&ha, a + 2 * i, 2);
        memcpy(&hb, b + 2 * i, 2);
        s += (double)H2F(ha) * H2F(hb);
    }
    return (float)s;
}
static float dot_q8_0_ref(int64_t k, const void *w, const void *x) {
    const inf__blk_q8_0 *a = w;
    const inf__blk_q8_0a *b = x;
    float s = 0;
    for (int64_t i = 0; i < k / QK; i++) {
        int si = 0;
        for (int j = 0; j < QK; j++) si += a[i].qs[j] * b[i].qs[j];
        s += si * (H2F(a[i].d) * b[i].d);
    }
    return s;
}
static float dot_q4_0_ref(int64_t k, const void *w, const void *x) {
    const inf__blk_q4_0 *a = w;
    const inf__blk_q8_0a *b = x;
    float s = 0;
    for (int64_t i = 0; i < k / QK; i++) {
        int si = 0;
        for (int j = 0; j < QK / 2; j++)
            si += ((a[i].qs[j] & 0xf) - 8) * b[i].qs[j] + ((a[i].qs[j] >> 4) - 8) * b[i].qs[j + QK / 2];
        s += si * (H2F(a[i].d) * b[i].d);
    }
    return s;
}
static float dot_q4_1_ref(int64_t k, const void *w, const void *x) {
    const inf__blk_q4_1 *a = w;
    const inf__blk_q8_1a *b = x;
    float s = 0;
    for (int64_t i = 0; i < k / QK; i++) {
        int si = 0;
        for (int j = 0; j < QK / 2; j++)
            si += (a[i].qs[j] & 0xf) * b[i].qs[j] + (a[i].qs[j] >> 4) * b[i].qs[j + QK / 2];
        s += si * (H2F(a[i].d) * b[i].d) + H2F(a[i].m) * b[i].s;
    }
    return s;
}

static float dot_q5_0_ref(int64_t k, const void *w, const void *x) {
    const inf__blk_q5_0 *a = w;
    const inf__blk_q8_0a *b = x;
    float s = 0;
    for (int64_t i = 0; i < k / QK; i++) {
        int si = 0;
        for (int j = 0; j < QK; j++) si += (q5_value(a[i].qh, a[i].qs, j) - 16) * b[i].qs[j];
        s += si * (H2F(a[i].d) * b[i].d);
    }
    return s;
}
static float dot_q5_1_ref(int64_t k, const void *w, const void *x) {
    const inf__blk_q5_1 *a = w;
    const inf__blk_q8_1a *b = x;
    float s = 0;
    for (int64_t i = 0; i < k / QK; i++) {
        int si = 0;
        for (int j = 0; j < QK; j++) si += q5_value(a[i].qh, a[i].qs, j) * b[i].qs[j];
        s += si * (H2F(a[i].d) * b[i].d) + H2F(a[i].m) * b[i].s;
    }
    return s;
}

/* ---- the table ---- */

enum { ROW_REF, ROW_FAST, N_VARIANTS };
enum { N_TYPES = 9, FIRST_BLOCK32 = 2, N_BLOCK32 = 5, FIRST_K = 7 }; /* rows of the table below */

/* One row: named fields, so the per-CPU ones (dot4, gemm8, pack/tile, fblock) start zero and are set below. */
#define QTYPE(TYPE, NAME, BLOCK, SIZE, ACT, TO_FLOAT, FROM_FLOAT, DOT)                                          \
    {.type = (TYPE), .name = (NAME), .block = (BLOCK), .size = (SIZE), .act_type = (ACT), .to_float = (TO_FLOAT), \
     .from_float = (FROM_FLOAT), .dot = (DOT), .dot_ref = (DOT)}

static inf__llm_qtype qtypes[N_VARIANTS][N_TYPES] = {
    [ROW_REF] = {
        QTYPE(INF__GGML_F32, "f32", 1, 4, INF__GGML_F32, f32_to_float, NULL, dot_f32_ref),
        QTYPE(INF__GGML_F16, "f16", 1, 2, INF__GGML_F16, f16_to_float, f16_from_float, dot_f16_ref),
        QTYPE(INF__GGML_Q8_0, "q8_0", QK, 34, INF__LLM_ACT_Q8_0, q8_0_to_float, NULL, dot_q8_0_ref),
        QTYPE(INF__GGML_Q4_0, "q4_0", QK, 18, INF__LLM_ACT_Q8_0, q4_0_to_float, NULL, dot_q4_0_ref),
        QTYPE(INF__GGML_Q4_1, "q4_1", QK, 20, INF__LLM_ACT_Q8_1, q4_1_to_float, NULL, dot_q4_1_ref),
        QTYPE(INF__GGML_Q5_0, "q5_0", QK, 22, INF__LLM_ACT_Q8_0, q5_0_to_float, NULL, dot_q5_0_ref),
        QTYPE(INF__GGML_Q5_1, "q5_1", QK, 24, INF__LLM_ACT_Q8_1, q5_1_to_float, NULL, dot_q5_1_ref),
        QTYPE(INF__GGML_Q4_K, "q4_K", QK_K, 144, INF__LLM_ACT_Q8_K, inf__llm_q4_K_to_float, NULL, inf__llm_dot_q4_K_ref),
        QTYPE(INF__GGML_Q6_K, "q6_K", QK_K, 210, INF__LLM_ACT_Q8_K, inf__llm_q6_K_to_float, NULL, inf__llm_dot_q6_K_ref),
    },
};
/* Activation-only formats: conversions from float, no weight kernels. */
static inf__llm_qtype acts[N_VARIANTS][3] = {
    [ROW_REF] = {
        QTYPE(INF__LLM_ACT_Q8_0, "q8_0 activations", QK, 40, INF__LLM_ACT_Q8_0, NULL, act_q8_0_from_float, NULL),
        QTYPE(INF__LLM_ACT_Q8_1, "q8_1 activations", QK, 40, INF__LLM_ACT_Q8_1, NULL, act_q8_1_from_float, NULL),
        QTYPE(INF__LLM_ACT_Q8_K, "q8_K activations", QK_K, sizeof(inf__blk_q8_Ka), INF__LLM_ACT_Q8_K, NULL,
              inf__llm_quantize_q8_K, NULL),
    },
};
#undef QTYPE

static const char *kernel_isa = "reference";

#if defined(__x86_64__)
/* A block format's weights repacked at load into 16-row tiles of block_bytes per block. */
static void use_tiles(inf__llm_qtype *q, inf__llm_pack_fn pack, inf__llm_tile_fn tile, uint32_t block_bytes) {
    q->pack = pack;
    q->tile = tile;
    q->tile_block_bytes = block_bytes;
}
#endif

static void fill_fast(void) {
    memcpy(qtypes[ROW_FAST], qtypes[ROW_REF], sizeof qtypes[ROW_REF]);
    memcpy(acts[ROW_FAST], acts[ROW_REF], sizeof acts[ROW_REF]);
#if defined(__x86_64__)
    if (!inf__cpu_has_avx2_fma()) return;
    typedef struct isa_kernels {
        struct { inf__llm_dot_fn dot; inf__llm_dot4_fn dot4; } row[5];
        inf__llm_from_float_fn q8_0, q8_1;
        inf__llm_gemm8_fn gemm8[N_BLOCK32]; /* q8_0, q4_0, q4_1, q5_0, q5_1 */
        inf__llm_dot_fn rowx[N_BLOCK32];
        inf__llm_dot_fn dot_k[2]; /* q4_K, q6_K */
        inf__llm_dot4_fn dot4_k[2];
    } isa_kernels;
    static const isa_kernels avx2 = {
        {{inf__llm_dot_f32_avx2, NULL}, {inf__llm_dot_f16_avx2, NULL},
         {inf__llm_dot_q8_0_avx2, inf__llm_dot4_q8_0_avx2}, {inf__llm_dot_q4_0_avx2, inf__llm_dot4_q4_0_avx2},
         {inf__llm_dot_q4_1_avx2, inf__llm_dot4_q4_1_avx2}},
        inf__llm_quantize_q8_0_avx2, inf__llm_quantize_q8_1_avx2,
        {inf__llm_gemm8_q8_0_avx2, inf__llm_gemm8_q4_0_avx2, inf__llm_gemm8_q4_1_avx2, inf__llm_gemm8_q5_0_avx2,
         inf__llm_gemm8_q5_1_avx2},
        {inf__llm_rowx_q8_0_avx2, inf__llm_rowx_q4_0_avx2, inf__llm_rowx_q4_1_avx2, inf__llm_rowx_q5_0_avx2,
         inf__llm_rowx_q5_1_avx2},
        {inf__llm_dot_q4_K_avx2, inf__llm_dot_q6_K_avx2},
        {inf__llm_dot4_q4_K_avx2, inf__llm_dot4_q6_K_avx2}};
    static const isa_kernels vnni = {
        {{inf__llm_dot_f32_zmm, NULL}, {inf__llm_dot_f16_zmm, NULL},
         {inf__llm_dot_q8_0_vnni, inf__llm_dot4_q8_0_vnni}, {inf__llm_dot_q4_0_vnni, inf__llm_dot4_q4_0_vnni},
         {inf__llm_dot_q4_1_vnni, inf__llm_dot4_q4_1_vnni}},
        inf__llm_quantize_q8_0_vnni, inf__llm_quantize_q8_1_vnni,
        {inf__llm_gemm8_q8_0_vnni, inf__llm_gemm8_q4_0_vnni, inf__llm_gemm8_q4_1_vnni, inf__llm_gemm8_q5_0_vnni,
         inf__llm_gemm8_q5_1_vnni},
        {inf__llm_rowx_q8_0_vnni, inf__llm_rowx_q4_0_vnni, inf__llm_rowx_q4_1_vnni, inf__llm_rowx_q5_0_vnni,
         inf__llm_rowx_q5_1_vnni},
        {inf__llm_dot_q4_K_vnni, inf__llm_dot_q6_K_vnni},
        {inf__llm_dot4_q4_K_vnni, inf__llm_dot4_q6_K_vnni}};
    /* core/cpu.c: AVX-512 F/BW/VL/DQ + VNNI, lowered by INFERA_CPU=avx2|generic;
     * INFERA_LLM_NO_AVX512=1 lowers the LLM kernels alone */
    bool has_vnni = inf__cpu_has_avx512_vnni() && !getenv("INFERA_LLM_NO_AVX512");
    const isa_kernels *k = has_vnni ? &vnni : &avx2;
    kernel_isa = has_vnni ? "vnni" : "avx2";
    for (int i = 0; i < 5; i++) { /* f32 .. q4_1 */
        qtypes[ROW_FAST][i].dot = k->row[i].dot;
        qtypes[ROW_FAST][i].dot4 = k->row[i].dot4;
    }
    /* block formats: eight-row kernels, and their exact one-row twins for the rest */
    for (int i = FIRST_BLOCK32; i < FIRST_BLOCK32 + N_BLOCK32; i++) {
        qtypes[ROW_FAST][i].gemm8 = k->gemm8[i - FIRST_BLOCK32];
        qtypes[ROW_FAST][i].dot = k->rowx[i - FIRST_BLOCK32];
        qtypes[ROW_FAST][i].dot4 = NULL;
    }
    for (int i = FIRST_K; i < N_TYPES; i++) {
        qtypes[ROW_FAST][i].dot = k->dot_k[i - FIRST_K];
        qtypes[ROW_FAST][i].dot4 = k->dot4_k[i - FIRST_K];
    }
    if (has_vnni) { /* q8_0, q4_0 (VNNI), q5_0, q4_1 (AVX2): weights repacked into 16-row tiles */
        use_tiles(&qtypes[ROW_FAST][2], inf__llm_pack_q8_0_vnni, inf__llm_tile_q8_0_vnni, 32 + 16 * 32);
        use_tiles(&qtypes[ROW_FAST][3], inf__llm_pack_q4_0_vnni, inf__llm_tile_q4_0_vnni, 32 + 16 * 16);
        qtypes[ROW_FAST][2].tiles = inf__llm_tiles_q8_0_vnni;
        qtypes[ROW_FAST][3].tiles = inf__llm_tiles_q4_0_vnni;
        /* q5_0 (llama-quantize's fallback for Q4_K tensors whose rows are not a multiple of 256, e.g. most of
         * SmolLM2's Q4_K_M): the AVX2 tiles, 2-2.8x the eight-row VNNI kernels in decode */
        use_tiles(&qtypes[ROW_FAST][5], inf__llm_pack_q5_0_avx2, inf__llm_tile_q5_0_avx2, 32 + 16 * 20);
        use_tiles(&qtypes[ROW_FAST][4], inf__llm_pack_q4_1_avx2, inf__llm_tile_q4_1_avx2, 16 * 20);
    } else if (!getenv("INFERA_LLM_NO_TILES")) {
        /* AVX2 without VNNI: q8_0, q4_0, q5_0, q4_1 in 16-row tiles of two 8-row halves
         * (INFERA_LLM_NO_TILES=1: the eight-row kernels instead, for comparisons) */
        use_tiles(&qtypes[ROW_FAST][2], inf__llm_pack_q8_0_avx2, inf__llm_tile_q8_0_avx2, 32 + 16 * 32);
        use_tiles(&qtypes[ROW_FAST][3], inf__llm_pack_q4_0_avx2, inf__llm_tile_q4_0_avx2, 32 + 16 * 16);
        use_tiles(&qtypes[ROW_FAST][5], inf__llm_pack_q5_0_avx2, inf__llm_tile_q5_0_avx2, 32 + 16 * 20);
        use_tiles(&qtypes[ROW_FAST][4], inf__llm_pack_q4_1_avx2, inf__llm_tile_q4_1_avx2, 16 * 20);
    }
    /* f32, f16: the one-row kernel (row[] above) and its tile twin */
    typedef struct float_tiles {
        inf__llm_fblock_fn f32, f16;
        uint8_t rows, tokens, pass, row_tokens;
        inf__llm_fblock_fn small_f32, small_f16;
    } float_tiles;
    static const float_tiles ftile_avx2 = {
        inf__llm_tile_f32_avx2, inf__llm_tile_f16_avx2, 4, 8, 32, 8, NULL, NULL}; /* f32_tile_avx2.c */
    /* f32_tile_avx512.c; passes of up to 128 tokens: 126 x 1536 f32 at 126-133 GFLOP/s vs 102-104 with 30 (Zen 5,
     * 1 MiB L2); 128 so that a 128-token prompt is one pass (120 left a pass of 8 that read the weights again) */
    static const float_tiles ftile_zmm = {inf__llm_block_f32_zmm, inf__llm_block_f16_zmm, 6, 4, 128, 6,
                                          inf__llm_small_f32_zmm, inf__llm_small_f16_zmm};
    const float_tiles *ft = has_vnni ? &ftile_zmm : &ftile_avx2;
    qtypes[ROW_FAST][0].fblock = ft->f32;
    qtypes[ROW_FAST][1].fblock = ft->f16;
    qtypes[ROW_FAST][0].fblock_small = ft->small_f32;
    qtypes[ROW_FAST][1].fblock_small = ft->small_f16;
    for (int i = 0; i < 2; i++) {
        qtypes[ROW_FAST][i].fblock_rows = ft->rows;
        qtypes[ROW_FAST][i].fblock_tokens = ft->tokens;
        qtypes[ROW_FAST][i].fblock_pass = ft->pass;
        qtypes[ROW_FAST][i].fblock_row_tokens = ft->row_tokens;
    }
    acts[ROW_FAST][0].from_float = k->q8_0;
    acts[ROW_FAST][1].from_float = k->q8_1;
#endif
}

#include <pthread.h>
static pthread_once_t fast_once = PTHREAD_ONCE_INIT; /* the one init-once: fills an immutable table */

const inf__llm_qtype *inf__llm_qtype_get(uint32_t type, bool force_ref) {
    pthread_once(&fast_once, fill_fast);
    int v = force_ref ? ROW_REF : ROW_FAST;
    if (type >= INF__LLM_ACT_Q8_0 && type <= INF__LLM_ACT_Q8_K) return &acts[v][type - INF__LLM_ACT_Q8_0];
    for (int i = 0; i < N_TYPES; i++)
        if (qtypes[v][i].type == type) return &qtypes[v][i];
    return NULL;
}

const char *inf__llm_qtype_list(void) { return "f32, f16, q8_0, q4_0, q4_1, q5_0, q5_1, q4_K, q6_K"; }

size_t inf__llm_row_bytes(const inf__llm_qtype *q, int64_t k) { return (size_t)(k / q->block) * q->size; }

size_t inf__llm_tile_bytes(const inf__llm_qtype *q, int64_t k) {
    return q->tile ? (size_t)(k / q->block) * q->tile_block_bytes : 0;
}

const char *inf__llm_kernel_isa(void) {
    pthread_once(&fast_once, fill_fast);
    return kernel_isa;
}
