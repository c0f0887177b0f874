/*
 * quant_avx512.c -- the row kernels of quant_avx2.c built for AVX-512 VNNI
 * (-mavx512f -mavx512bw -mavx512vl -mavx512vnni): the 256-bit vpdpbusd does
 * a block's u8 x i8 products and their sums in one instruction.  Same
 * algorithms, same results as the AVX2 kernels (integer sums are exact);
 * quant.c picks them when the CPU has AVX512-VNNI and AVX512-VL.
 */
#define INF_LLM_VNNI 1
#define KN(name) inf__llm_##name##_vnni
#include "quant_avx2.c"
