/*
 * quant_k_avx512.c -- the K-quant dot products of quant_k_avx2.c built for
 * AVX-512 VNNI (vpdpwssd adds the scaled 16-bit pair sums in one
 * instruction).  Same integers, same results; quant.c picks them with the
 * other VNNI kernels.
 */
#define INF_LLM_VNNI 1
#define KN(name) inf__llm_##name##_vnni
#include "quant_k_avx2.c"
