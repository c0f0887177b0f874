/*
 * cpu.h (internal) -- the kernel path and cache sizes the engine tunes for,
 * from the one detection in cpu.c (public view: include/infera/cpu.h).
 */
#ifndef INF_CORE_CPU_H
#define INF_CORE_CPU_H

#include <stdbool.h>
#include <stdint.h>

#include "infera/cpu.h"

/* Kernel paths, ordered: a path may run every kernel of the lower ones.
 * Each architecture has its own ladder: x86-64 generic < avx2 < avx512,
 * aarch64 generic < neon (NEON is part of ARMv8-A; INFERA_CPU=generic
 * turns the NEON kernels off). */
typedef enum inf__cpu_path {
    INF__CPU_GENERIC = 0,
    INF__CPU_AVX2 = 1,
    INF__CPU_AVX512 = 2,
    INF__CPU_NEON = 1 /* aarch64 */
} inf__cpu_path;

/* The path in use: the widest the CPU and OS allow, lowered by INFERA_CPU. */
inf__cpu_path inf__cpu_path_get(void);
/* AVX-512 F/BW/VL/DQ kernels may run (path avx512). */
bool inf__cpu_has_avx512(void);
/* aarch64: the NEON kernels (ops/arm/) may run (path neon); false elsewhere. */
bool inf__cpu_has_neon(void);
/* aarch64: NEON and the ARMv8.2 dot-product instructions (sdot/udot,
 * HWCAP_ASIMDDP from getauxval); false elsewhere. */
bool inf__cpu_has_neon_dotprod(void);
/* The path in use is at least `min` and the CPU has every feature bit of
 * `features` (inf_cpu_feature): e.g. the INT8 VNNI kernels ask
 * inf__cpu_path_allows(INF__CPU_AVX512, INF_CPU_AVX512VNNI), so that
 * INFERA_CPU=avx2 turns them off too. */
bool inf__cpu_path_allows(inf__cpu_path min, uint32_t features);
/* Per-core data cache sizes for blocking; sane defaults when unknown. */
int64_t inf__cpu_l1d_bytes(void);
int64_t inf__cpu_l2_bytes(void);

#endif /* INF_CORE_CPU_H */
