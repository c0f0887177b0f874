/*
 * quant.h -- ggml block formats and the row kernels of the LLM decoder.
 *
 * DESIGN: a weight row of type T is multiplied with an activation row that
 * was first converted to T's "activation type", as llama.cpp does, so that
 * results track llama.cpp's: f32 x f32, f16 x f16 (dot in f32), q8_0 x q8_0,
 * q4_0 x q8_0, q4_1 x q8_1.  One table (inf__llm_qtypes) holds, per type,
 * the block layout, its activation type, the conversion to and from float
 * and the plain reference dot product; quant_avx2.c holds the fast twins,
 * picked at run time by inf__llm_qtype_get (tests/llm/test_llm_kernels.c
 * checks each one against its reference).
 */
#ifndef INF_LLM_QUANT_H
#define INF_LLM_QUANT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define QK 32 /* elements per block of the 32-element formats */

typedef struct { uint16_t d; int8_t qs[QK]; } inf__blk_q8_0;          /* 34 bytes */
typedef struct { uint16_t d, s; int8_t qs[QK]; } inf__blk_q8_1;       /* 36 bytes: s = d * sum(qs) */
/* Activations live only in memory, so their blocks keep the scales as the
 * floats of the fp16 values ggml stores (same numbers, no conversion in the
 * inner loops): q8_0 and q8_1 activations. */
typedef struct { float d; int32_t sum; int8_t qs[QK]; } inf__blk_q8_0a; /* 40 bytes: sum = sum(qs) */
typedef struct { float d, s; int8_t qs[QK]; } inf__blk_q8_1a;         /* 40 bytes */
#define INF__LLM_ACT_Q8_0 0x100 /* type ids of the activation-only formats */
#define INF__LLM_ACT_Q8_1 0x101
typedef struct { uint16_t d; uint8_t qs[QK / 2]; } inf__blk_q4_0;     /* 18 bytes: x = d * (q - 8) */
typedef struct { uint16_t d, m; uint8_t qs[QK / 2]; } inf__blk_q4_1;  /* 20 bytes: x = d * q + m */

typedef struct { uint16_t d; uint8_t qh[4]; uint8_t qs[QK / 2]; } inf__blk_q5_0;   /* 22 bytes: x = d * (q5 - 16) */
typedef struct { uint16_t d, m; uint8_t qh[4]; uint8_t qs[QK / 2]; } inf__blk_q5_1; /* 24 bytes: x = d * q5 + m */
/* (q5: the nibble of element e (qs as in q4_0) | bit e of qh << 4) */

/* K-quants: super-blocks of 256 elements (quant_k.c). */
#define QK_K 256
/* q4_K: 8 sub-blocks of 32, each with a 6-bit scale and min packed in
 * scales[12]; x = d * sc_j * q - dmin * m_j; element e's nibble is
 * qs[32 * (e / 64) + e % 32], low for e % 64 < 32. */
typedef struct { uint16_t d, dmin; uint8_t scales[12]; uint8_t qs[QK_K / 2]; } inf__blk_q4_K; /* 144 bytes */
/* q6_K: 16 sub-blocks of 16 with int8 scales; x = d * sc[e / 16] * (q6 - 32),
 * q6 = 4 low bits from ql, 2 high bits from qh (ggml's order, quant_k.c). */
typedef struct { uint8_t ql[QK_K / 2]; uint8_t qh[QK_K / 4]; int8_t scales[QK_K / 16]; uint16_t d; } inf__blk_q6_K; /* 210 */
/* q8_K activations (as ggml's block_q8_K): d, 256 int8, the sums of each 16 */
typedef struct { float d; int8_t qs[QK_K]; int16_t bsums[QK_K / 16]; } inf__blk_q8_Ka; /* 292 bytes */
#define INF__LLM_ACT_Q8_K 0x102

_Static_assert(sizeof(inf__blk_q5_0) == 22 && sizeof(inf__blk_q5_1) == 24, "q5 blocks");
_Static_assert(sizeof(inf__blk_q4_K) == 144 && sizeof(inf__blk_q6_K) == 210, "k blocks");
_Static_assert(sizeof(inf__blk_q8_Ka) == 292, "q8_K activation block");
_Static_assert(sizeof(inf__blk_q8_0) == 34, "q8_0 block");
_Static_assert(sizeof(inf__blk_q8_1) == 36, "q8_1 block");
_Static_assert(sizeof(inf__blk_q4_0) == 18, "q4_0 block");
_Static_assert(sizeof(inf__blk_q4_1) == 20, "q4_1 block");
_Static_assert(sizeof(inf__blk_q8_0a) == 40 && sizeof(inf__blk_q8_1a) == 40, "activation blocks");

/* dot of a weight row (k elements of its type) with an activation row of
 * its activation type. */
typedef float (*inf__llm_dot_fn)(int64_t k, const void *w, const void *x);
/* The same against 4 activation rows x, x + x_stride, ...: out[0..3]
 * (one unpacking of the weight row for 4 tokens: prompt processing). */
typedef void (*inf__llm_dot4_fn)(int64_t k, const void *w, const void *x, size_t x_stride, float out[4]);
/* Eight weight rows (w, w + row_bytes, ...) against n <= INF__LLM_GEMM_TOKENS
 * activation rows: out[t * 8 + r].  Each (row, token) sum is bit for bit the one `dot` gives
 * (per block: the exact integer dot product, then one fused multiply-add of
 * it by d_w * d_x), whatever n and whichever rows are grouped, so a batch
 * of tokens gets the logits of the same tokens fed one by one. */
#define INF__LLM_GEMM_TOKENS 8
typedef void (*inf__llm_gemm8_fn)(int64_t k, const void *w, size_t row_bytes, const void *x, size_t x_stride, int n,
                                  float out[8 * INF__LLM_GEMM_TOKENS]);
/* Weights repacked at load into tiles of INF__LLM_TILE_ROWS rows
 * (quant_tile_avx512.c with VNNI, quant_tile_avx2.c without): pack writes the tile of rows (row_bytes apart,
 * k elements); tile multiplies it with n <= INF__LLM_TILE_TOKENS activation
 * rows: out[t * INF__LLM_TILE_ROWS + r], bit for bit what `dot` gives. */
#define INF__LLM_TILE_ROWS 16
#define INF__LLM_TILE_TOKENS 8
typedef void (*inf__llm_pack_fn)(const void *rows, size_t row_bytes, int64_t k, void *tile);
typedef void (*inf__llm_tile_fn)(int64_t k, const void *tile, const void *x, size_t x_stride, int n, float *out);
/* ntiles consecutive tiles (tile_bytes apart) against n <= INF__LLM_TILE_TOKENS
 * tokens, straight into y[t * ldy + 16 i + r] (= or, add, +=): the sums of
 * `tile` without its per-tile call and buffer (a short pass of a small
 * model is hundreds of tiles of a few blocks each). */
typedef void (*inf__llm_tiles_fn)(int64_t k, const void *tiles, size_t tile_bytes, int ntiles, const void *x,
                                  size_t x_stride, int n, float *y, size_t ldy, bool add);
/* f32/f16 rows: nr <= fblock_rows weight rows (rb bytes apart) against
 * nt <= fblock_tokens activation rows (passes of a few tokens: nt <=
 * fblock_row_tokens), out[t * fblock_rows + r], bit for bit
 * `dot` (AVX-512: 6 x 4, f32_tile_avx512.c; AVX2: 4 x 8, f32_tile_avx2.c). */
#define INF__LLM_FBLOCK_MAX 36 /* most outputs of one call (fblock_rows x fblock_row_tokens) */
typedef void (*inf__llm_fblock_fn)(int64_t k, const void *w, size_t rb, int nr, const void *x, size_t xs, int nt,
                                   float *out);
typedef void (*inf__llm_to_float_fn)(const void *src, float *dst, int64_t k);
typedef void (*inf__llm_from_float_fn)(const float *src, void *dst, int64_t k);

typedef struct inf__llm_qtype {
    uint32_t type;       /* ggml type id */
    const char *name;
    uint32_t block, size; /* elements and bytes per block */
    uint32_t act_type;   /* ggml type the activations are converted to */
    inf__llm_to_float_fn to_float;
    inf__llm_from_float_fn from_float; /* for activation types */
    inf__llm_dot_fn dot;  /* fastest available on this CPU */
    inf__llm_dot4_fn dot4; /* NULL: call dot four times */
    inf__llm_dot_fn dot_ref;
    inf__llm_gemm8_fn gemm8; /* when set, dot is its one-row twin (same sums) */
    inf__llm_pack_fn pack;   /* when set (with tile): weights are repacked at load */
    inf__llm_tile_fn tile;
    inf__llm_tiles_fn tiles;   /* NULL: `tile` per tile */
    uint32_t tile_block_bytes; /* bytes of one block of a packed tile */
    inf__llm_fblock_fn fblock; /* f32/f16 tiles (dot is their one-row twin) */
    uint8_t fblock_rows, fblock_tokens;
    uint8_t fblock_pass; /* tokens whose rows stream past a tile's weight rows before the next rows (L2-sized) */
    uint8_t fblock_row_tokens; /* passes of <= 8 tokens: up to this many per call (>= fblock_tokens) */
    inf__llm_fblock_fn fblock_small; /* NULL: fblock; else a pass of <= 8 tokens' calls (nt <= fblock_row_tokens) */
} inf__llm_qtype;

/* The row kernels of a ggml type, fast ones chosen for this CPU (or the
 * reference ones when force_ref); NULL when the decoder cannot multiply it. */
const inf__llm_qtype *inf__llm_qtype_get(uint32_t type, bool force_ref);
/* "f32, f16, q8_0, q4_0, q4_1" for messages. */
const char *inf__llm_qtype_list(void);
/* Bytes of a row of k elements of type (k a multiple of the block). */
size_t inf__llm_row_bytes(const inf__llm_qtype *q, int64_t k);

float inf__llm_fp16_to_fp32(uint16_t h);
uint16_t inf__llm_fp32_to_fp16(float f);

/* f32/f16 on AVX2/FMA (f32_tile_avx2.c): the one-row kernel and its tile of
 * nr <= 4 rows x nt <= 8 tokens (fblock), bit for bit the same sums. */
float inf__llm_dot_f32_avx2(int64_t k, const void *w, const void *x);
float inf__llm_dot_f16_avx2(int64_t k, const void *w, const void *x);
void inf__llm_tile_f32_avx2(int64_t k, const void *w, size_t rb, int nr, const void *x, size_t xs, int nt, float *out);
void inf__llm_tile_f16_avx2(int64_t k, const void *w, size_t rb, int nr, const void *x, size_t xs, int nt, float *out);
/* AVX2/FMA twins of the block formats (quant_avx2.c); NULL when not built. */
float inf__llm_dot_q8_0_avx2(int64_t k, const void *w, const void *x);
float inf__llm_dot_q4_0_avx2(int64_t k, const void *w, const void *x);
float inf__llm_dot_q4_1_avx2(int64_t k, const void *w, const void *x);
void inf__llm_dot4_q8_0_avx2(int64_t k, const void *w, const void *x, size_t x_stride, float out[4]);
void inf__llm_dot4_q4_0_avx2(int64_t k, const void *w, const void *x, size_t x_stride, float out[4]);
void inf__llm_dot4_q4_1_avx2(int64_t k, const void *w, const void *x, size_t x_stride, float out[4]);
void inf__llm_quantize_q8_0_avx2(const float *src, void *dst, int64_t k);
void inf__llm_quantize_q8_1_avx2(const float *src, void *dst, int64_t k);
/* AVX-512 VNNI twins (quant_avx512.c): same signatures, suffix _vnni. */
float inf__llm_dot_q8_0_vnni(int64_t k, const void *w, const void *x);
float inf__llm_dot_q4_0_vnni(int64_t k, const void *w, const void *x);
float inf__llm_dot_q4_1_vnni(int64_t k, const void *w, const void *x);
void inf__llm_dot4_q8_0_vnni(int64_t k, const void *w, const void *x, size_t x_stride, float out[4]);
void inf__llm_dot4_q4_0_vnni(int64_t k, const void *w, const void *x, size_t x_stride, float out[4]);
void inf__llm_dot4_q4_1_vnni(int64_t k, const void *w, const void *x, size_t x_stride, float out[4]);
void inf__llm_quantize_q8_0_vnni(const float *src, void *dst, int64_t k);
void inf__llm_quantize_q8_1_vnni(const float *src, void *dst, int64_t k);
/* Eight-row kernels and their exact one-row twins (quant_avx2.c / _avx512.c). */
void inf__llm_gemm8_q8_0_avx2(int64_t k, const void *w, size_t rb, const void *x, size_t xs, int n, float out[8 * INF__LLM_GEMM_TOKENS]);
void inf__llm_gemm8_q4_0_avx2(int64_t k, const void *w, size_t rb, const void *x, size_t xs, int n, float out[8 * INF__LLM_GEMM_TOKENS]);
void inf__llm_gemm8_q4_1_avx2(int64_t k, const void *w, size_t rb, const void *x, size_t xs, int n, float out[8 * INF__LLM_GEMM_TOKENS]);
float inf__llm_rowx_q8_0_avx2(int64_t k, const void *w, const void *x);
float inf__llm_rowx_q4_0_avx2(int64_t k, const void *w, const void *x);
float inf__llm_rowx_q4_1_avx2(int64_t k, const void *w, const void *x);
void inf__llm_gemm8_q8_0_vnni(int64_t k, const void *w, size_t rb, const void *x, size_t xs, int n, float out[8 * INF__LLM_GEMM_TOKENS]);
void inf__llm_gemm8_q4_0_vnni(int64_t k, const void *w, size_t rb, const void *x, size_t xs, int n, float out[8 * INF__LLM_GEMM_TOKENS]);
void inf__llm_gemm8_q4_1_vnni(int64_t k, const void *w, size_t rb, const void *x, size_t xs, int n, float out[8 * INF__LLM_GEMM_TOKENS]);
float inf__llm_rowx_q8_0_vnni(int64_t k, const void *w, const void *x);
float inf__llm_rowx_q4_0_vnni(int64_t k, const void *w, const void *x);
float inf__llm_rowx_q4_1_vnni(int64_t k, const void *w, const void *x);
/* q5_0 / q5_1 (quant.c reference; eight-row kernels in quant_avx2.c) */
void inf__llm_gemm8_q5_0_avx2(int64_t k, const void *w, size_t rb, const void *x, size_t xs, int n, float out[8 * INF__LLM_GEMM_TOKENS]);
void inf__llm_gemm8_q5_1_avx2(int64_t k, const void *w, size_t rb, const void *x, size_t xs, int n, float out[8 * INF__LLM_GEMM_TOKENS]);
float inf__llm_rowx_q5_0_avx2(int64_t k, const void *w, const void *x);
float inf__llm_rowx_q5_1_avx2(int64_t k, const void *w, const void *x);
void inf__llm_gemm8_q5_0_vnni(int64_t k, const void *w, size_t rb, const void *x, size_t xs, int n, float out[8 * INF__LLM_GEMM_TOKENS]);
void inf__llm_gemm8_q5_1_vnni(int64_t k, const void *w, size_t rb, const void *x, size_t xs, int n, float out[8 * INF__LLM_GEMM_TOKENS]);
float inf__llm_rowx_q5_0_vnni(int64_t k, const void *w, const void *x);
float inf__llm_rowx_q5_1_vnni(int64_t k, const void *w, const void *x);
/* K-quants: reference (quant_k.c) and fast twins (quant_k_avx2.c, _avx512.c).
 * Per super-block the exact integer sums, then
 *   acc = fma(isum, d_w * d_x, acc);  accm = fma(imin, dmin_w * d_x, accm)  (q4_K)
 * and acc - accm at the end, in every variant: fast == reference bit for bit. */
void inf__llm_q4_K_to_float(const void *src, float *dst, int64_t k);
void inf__llm_q6_K_to_float(const void *src, float *dst, int64_t k);
void inf__llm_quantize_q8_K(const float *src, void *dst, int64_t k);
float inf__llm_dot_q4_K_ref(int64_t k, const void *w, const void *x);
float inf__llm_dot_q6_K_ref(int64_t k, const void *w, const void *x);
float inf__llm_dot_q4_K_avx2(int64_t k, const void *w, const void *x);
float inf__llm_dot_q6_K_avx2(int64_t k, const void *w, const void *x);
float inf__llm_dot_q4_K_vnni(int64_t k, const void *w, const void *x);
float inf__llm_dot_q6_K_vnni(int64_t k, const void *w, const void *x);
/* The same for 4 activation rows (a super-block unpacked once): bit for bit dot's sums per row. */
void inf__llm_dot4_q4_K_avx2(int64_t k, const void *w, const void *x, size_t x_stride, float out[4]);
void inf__llm_dot4_q6_K_avx2(int64_t k, const void *w, const void *x, size_t x_stride, float out[4]);
void inf__llm_dot4_q4_K_vnni(int64_t k, const void *w, const void *x, size_t x_stride, float out[4]);
void inf__llm_dot4_q6_K_vnni(int64_t k, const void *w, const void *x, size_t x_stride, float out[4]);
/* Tiles of 16 rows (quant_tile_avx512.c, VNNI). */
void inf__llm_pack_q4_0_vnni(const void *rows, size_t row_bytes, int64_t k, void *tile);
void inf__llm_pack_q8_0_vnni(const void *rows, size_t row_bytes, int64_t k, void *tile);
void inf__llm_tile_q4_0_vnni(int64_t k, const void *tile, const void *x, size_t xs, int n, float *out);
void inf__llm_tile_q8_0_vnni(int64_t k, const void *tile, const void *x, size_t xs, int n, float *out);
void inf__llm_tiles_q4_0_vnni(int64_t k, const void *tiles, size_t tile_bytes, int ntiles, const void *x, size_t xs,
                              int n, float *y, size_t ldy, bool add);
void inf__llm_tiles_q8_0_vnni(int64_t k, const void *tiles, size_t tile_bytes, int ntiles, const void *x, size_t xs,
                              int n, float *y, size_t ldy, bool add);
/* Tiles of 16 rows for AVX2 (quant_tile_avx2.c): two halves of 8 rows; q5_0 and q4_1 (q8_1 activations) too. */
void inf__llm_pack_q4_0_avx2(const void *rows, size_t row_bytes, int64_t k, void *tile);
void inf__llm_pack_q8_0_avx2(const void *rows, size_t row_bytes, int64_t k, void *tile);
void inf__llm_pack_q5_0_avx2(const void *rows, size_t row_bytes, int64_t k, void *tile);
void inf__llm_pack_q4_1_avx2(const void *rows, size_t row_bytes, int64_t k, void *tile);
void inf__llm_tile_q4_0_avx2(int64_t k, const void *tile, const void *x, size_t xs, int n, float *out);
void inf__llm_tile_q8_0_avx2(int64_t k, const void *tile, const void *x, size_t xs, int n, float *out);
void inf__llm_tile_q5_0_avx2(int64_t k, const void *tile, const void *x, size_t xs, int n, float *out);
void inf__llm_tile_q4_1_avx2(int64_t k, const void *tile, const void *x, size_t xs, int n, float *out);
float inf__llm_dot_f32_zmm(int64_t k, const void *w, const void *x);
float inf__llm_dot_f16_zmm(int64_t k, const void *w, const void *x);
void inf__llm_block_f32_zmm(int64_t k, const void *w, size_t rb, int nr, const void *x, size_t xs, int nt, float *out);
void inf__llm_block_f16_zmm(int64_t k, const void *w, size_t rb, int nr, const void *x, size_t xs, int nt, float *out);
void inf__llm_small_f32_zmm(int64_t k, const void *w, size_t rb, int nr, const void *x, size_t xs, int nt, float *out);
void inf__llm_small_f16_zmm(int64_t k, const void *w, size_t rb, int nr, const void *x, size_t xs, int nt, float *out);
/* Bytes of a packed tile of k columns (0: the type is not packed). */
size_t inf__llm_tile_bytes(const inf__llm_qtype *q, int64_t k);
/* Which kernels inf__llm_qtype_get hands out: "vnni", "avx2" or "reference". */
const char *inf__llm_kernel_isa(void);

#endif
