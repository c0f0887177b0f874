/*
 * platform.c -- the little the engine asks of the operating system and CPU:
 * a monotonic clock, the machine's physical memory, and whether AVX2/FMA
 * (and AVX-512 VNNI) kernels may run.
 */
#include <stdint.h>
#include <time.h>
#include <unistd.h>

#include "core/core.h"
#include "core/cpu.h"

double inf__now_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

size_t inf__phys_memory_bytes(void) {
    static size_t cached; /* process-wide, idempotent */
    if (!cached) {
        long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
        cached = pages > 0 && page > 0 && (uint64_t)pages <= SIZE_MAX / (uint64_t)page ? (size_t)pages * (size_t)page
                                                                                       : SIZE_MAX / 4;
    }
    return cached;
}

bool inf__cpu_has_avx2_fma(void) {
#if defined(__x86_64__) || defined(__i386__)
    static int cached = -1; /* process-wide, idempotent */
    if (cached < 0) {
        cached = inf__cpu_path_get() >= INF__CPU_AVX2; /* cpu.c; INFERA_CPU=generic lowers it */
    }
    return cached;
#else
    return false;
#endif
}

/* AVX-512 F/BW/VL with VNNI (vpdpbusd): the INT8 GEMM's widest kernel
 * (ops/x86/qgemm_vnni_avx512.c). */
bool inf__cpu_has_avx512_vnni(void) {
#if defined(__x86_64__) || defined(__i386__)
    static int cached = -1; /* process-wide, idempotent */
    if (cached < 0) {
        /* cpu.c: path avx512 (F/BW/VL/DQ, OS-enabled) plus VNNI; INFERA_CPU=avx2|generic turns it off */
        cached = inf__cpu_path_allows(INF__CPU_AVX512, INF_CPU_AVX512VNNI);
    }
    return cached;
#else
    return false;
#endif
}
