/*
 * cpu.h -- what the processor running Infera is, as detected once at
 * start-up (src/core/cpu.c): vendor, family/model, brand string, the SIMD
 * features the kernels care about, cache sizes per level, and which kernel
 * path (generic, avx2, avx512) the engine uses.  Benchmarks record it so
 * that every figure names its machine (`infera info --cpu`,
 * `infera bench --json` -> "cpu").
 *
 * INFERA_CPU=generic|avx2|avx512 in the environment (read once, at the
 * first call) lowers the path the engine picks; it never raises it above
 * what the CPU and the OS support.  An unknown value is ignored with a
 * warning.
 */
#ifndef INFERA_CPU_H
#define INFERA_CPU_H

#include <stdbool.h>
#include <stdint.h>

#include "infera/infera.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Features, as bits of inf_cpu_info.features.  A bit is set only when the
 * CPU has the feature AND the OS saves its registers (XGETBV), except the
 * AMX bits, which report the hardware (Infera does not use AMX). */
typedef enum inf_cpu_feature {
    INF_CPU_SSE4_2 = 1u << 0,
    INF_CPU_AVX = 1u << 1,
    INF_CPU_AVX2 = 1u << 2,
    INF_CPU_FMA = 1u << 3,
    INF_CPU_F16C = 1u << 4,
    INF_CPU_AVX512F = 1u << 5,
    INF_CPU_AVX512DQ = 1u << 6,
    INF_CPU_AVX512CD = 1u << 7,
    INF_CPU_AVX512BW = 1u << 8,
    INF_CPU_AVX512VL = 1u << 9,
    INF_CPU_AVX512VBMI = 1u << 10,
    INF_CPU_AVX512VNNI = 1u << 11,
    INF_CPU_AVX512BF16 = 1u << 12,
    INF_CPU_AVX512FP16 = 1u << 13,
    INF_CPU_AVXVNNI = 1u << 14,
    INF_CPU_AMX_TILE = 1u << 15,
    INF_CPU_AMX_INT8 = 1u << 16,
    INF_CPU_AMX_BF16 = 1u << 17,
} inf_cpu_feature;

typedef struct inf_cpu_info {
    char vendor[16];          /* "AuthenticAMD", "GenuineIntel", "" off x86 */
    char brand[64];           /* the brand string, trimmed */
    int family, model, stepping; /* display family/model (extended fields folded in) */
    int n_logical;            /* online logical CPUs */
    uint32_t features;        /* inf_cpu_feature bits */
    int64_t l1d_bytes;        /* per core; 0 when unknown */
    int64_t l2_bytes;         /* per core; 0 when unknown */
    int64_t l3_bytes;         /* one L3 (shared); 0 when unknown */
    int line_bytes;           /* L1d line size (64 when unknown) */
    const char *cache_source; /* "cpuid", "sysconf", "sysfs" or "default" */
    const char *best_path;    /* the widest kernel path CPU and OS allow: "avx512", "avx2", "generic" */
    const char *path;         /* the path in use (best_path, or lower when INFERA_CPU says so) */
    bool forced;              /* INFERA_CPU lowered the path */
} inf_cpu_info;

/* The processor, detected at the first call (thread-safe); never NULL. */
INF_API const inf_cpu_info *inf_cpu_get_info(void);

/* The name of one feature bit ("avx512f", "avx_vnni", ...), NULL if not a
 * single known bit.  inf_cpu_feature_at(i) walks all of them in order
 * (INF_CPU_N_FEATURES). */
#define INF_CPU_N_FEATURES 18
INF_API const char *inf_cpu_feature_name(uint32_t bit);
INF_API uint32_t inf_cpu_feature_at(int i);

#ifdef __cplusplus
}
#endif

#endif /* INFERA_CPU_H */
