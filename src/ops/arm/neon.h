/*
 * neon.h (internal) -- the AArch64 NEON kernels (src/ops/arm/, files *_neon.c),
 * twins of the portable ones with the same contracts, built only on aarch64
 * and called only when inf__cpu_has_neon() (core/cpu.h; INFERA_CPU=generic
 * turns them off).  The callers (ops/ref/gemm.c, vmath.c, pool.c) pick them
 * exactly where the x86-64 build picks the AVX2 ones; docs/edge-aarch64.md
 * says how to add one.
 */
#ifndef INF_OPS_ARM_NEON_H
#define INF_OPS_ARM_NEON_H

#include <stdbool.h>
#include <stdint.h>

#include "core/core.h"

#if defined(__aarch64__)
/* inf__ops_sgemm's contract (ops.h), batch invariance included; false
 * (nothing done) when its packing buffers cannot be had (ops/arm/gemm_neon.c). */
bool inf__ops_sgemm_neon(inf__pool *pool, bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha,
                         const float *a, int64_t lda, const float *b, int64_t ldb, float beta, float *c,
                         int64_t ldc);
#endif

#endif /* INF_OPS_ARM_NEON_H */
