/*
 * qgemm_maddubs_avx2.c -- the AVX2 kernel of the 8-bit integer GEMM and of
 * the implicit-GEMM convolution (ops/qgemm.h) for pair-safe weights: u8 x s8
 * products through vpmaddubsw, exact because the packer proved they cannot
 * saturate.
 *
 * DESIGN: vpmaddubsw multiplies 32 u8 x s8 pairs and adds neighbours into
 * 16 int16 lanes with saturation; vpmaddwd by ones then adds those into 8
 * int32 lanes (a K quad per lane, as vpdpbusd does).  For any A in
 * [0, 255] the pair sum a0 * b0 + a1 * b1 lies within 255 * (|b0| + |b1|),
 * so when every packed pair of every column has |b0| + |b1| <= 128 (7-bit
 * weights -- `infera quantize --reduce-range` -- always; any file by
 * chance) no int16 sum saturates and the result is the reference's bit for
 * bit.  inf__qgemm_pack_b_into checks this and gives such B this kernel
 * (INF_QGEMM_AVX2_UBS) in place of the vpmaddwd one (x86/qgemm_avx2.c);
 * x86/qgemm_ubs2_avx2.c runs it routed (ubs2 where the weights allow), this
 * file's entries (..._avx2ubs1) run every group by this step.
 * Per 32 products: two multiplies and one vpaddd, against two and two for
 * vpmaddwd on 16-bit operands; A is read as bytes in place (no widening
 * pass) and a broadcast serves a quad, not a pair.
 *
 * The tiles are x86/qgemm_quad_tile.h's, AVX-VNNI's scheme with the
 * multiply-add below.  Compiled for AVX2 only (never -mavxvnni: the
 * compiler may fuse madd + add into vpdpwssd there).
 */
#define DP_SETUP const __m256i ones16 = _mm256_set1_epi16(1)
#define DP(acc, a, w) acc = _mm256_add_epi32(acc, _mm256_madd_epi16(_mm256_maddubs_epi16(a, w), ones16))
#define QUAD_CONV_FN inf__qconv_raw_avx2ubs1
#define QUAD_GEMM_FN inf__qgemm_raw_avx2ubs1
#include "ops/x86/qgemm_quad_tile.h"
