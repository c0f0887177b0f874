/*
 * qgemm_avxvnni.c -- the AVX-VNNI kernels of the 8-bit integer GEMM and of
 * the implicit-GEMM convolution (ops/qgemm.h): the raw u8 x s8 sums with the
 * 256-bit VEX-encoded vpdpbusd, for CPUs with AVX-VNNI but no AVX-512
 * (Intel Alder Lake and later client cores, Sierra Forest; and the avx2
 * path, INFERA_CPU=avx2, of CPUs that have both).
 *
 * DESIGN: the AVX-512 VNNI kernels' scheme (x86/qgemm_vnni_avx512.c,
 * x86/qconv_vnni_avx512.c) at half the width: B packed as panels of 8
 * columns, K in quads (32 bytes hold one quad of every column of a panel);
 * a row's quad is broadcast to the eight 32-bit lanes and vpdpbusd adds the
 * four u8 x s8 products of each lane to its int32 sum -- no intermediate
 * saturation (vpmaddubsw's int16 pair sums would), so exact and wrapping
 * like the reference.  The micro-kernel keeps 6 rows x 16 columns in 12 ymm
 * sums (+ 2 B registers + 1 broadcast of the 16 registers).
 *
 * The tiles are x86/qgemm_quad_tile.h's (shared with the AVX2 vpmaddubsw
 * kernel for pair-safe weights).  Compiled with -mavxvnni; called only
 * when inf__qgemm_best_isa() is INF_QGEMM_AVXVNNI.
 */
#define DP(acc, a, w) acc = _mm256_dpbusd_avx_epi32(acc, a, w)
#define QUAD_CONV_FN inf__qconv_raw_avxvnni
#define QUAD_GEMM_FN inf__qgemm_raw_avxvnni
#include "ops/x86/qgemm_quad_tile.h"
