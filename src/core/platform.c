/*
 * platform.c -- the little the engine asks of the operating system and CPU:
 * a monotonic clock and whether AVX2/FMA (and AVX-512 VNNI) kernels may run.
 */
#include <time.h>

#include "core/core.h"

double inf__now_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

bool inf__cpu_has_avx2_fma(void) {
#if defined(__x86_64__) || defined(__i386__)
    static int cached = -1; /* process-wide, idempotent */
    if (cached < 0) {
        __builtin_cpu_init();
        cached = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
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
        __builtin_cpu_init();
        cached = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                 __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512vnni");
    }
    return cached;
#else
    return false;
#endif
}
