/*
 * bench_layout_split.c -- what two threads that split a stack of layers by
 * rows cost each other through the memory layout alone, in microseconds.
 *
 *   bench_layout_split [--layout nchw|nhwc] [--threads 1|2] [--c C] [--hw N] [--halo 0|1] [--iters K]
 *
 * Four tensors of C planes of N x N floats rotate through 8 "layers"; in
 * each, thread t reads rows [t N/2, (t+1) N/2) of every plane of the input
 * (with --halo 1 also the row above and below, the other thread's at the
 * boundary) and writes the same rows of the output (y = (x + (up + down) / 4)
 * / 2, AVX-512 or AVX2), a barrier between layers.  Channels first (nchw) a
 * thread's rows are half of every plane, so the two threads' lines alternate
 * every N x N x 2 bytes; channels last (nhwc) each thread's rows are one span.
 * Prints the fastest of K runs of the 8 layers (default 2000): the layout's
 * cost without any arithmetic to hide it.  Session 31 (bench/RESULTS.md), AMD
 * Zen 5 VM, 64 planes of 32 x 32, halo 1, its AVX-512 first version: vCPUs on different L3s
 * (bench_core_rtt ~350 ns) nchw 83 us on 1 thread, 220 on 2; nhwc 27 and 22;
 * sharing an L3 (~80 ns) nchw 83 / 57-60, nhwc 24-26 / 11.5-12.  Pinned to the
 * first two CPUs the process may use (Linux).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <immintrin.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_pin.h"

enum { N_TENSORS = 4, N_LAYERS = 8 };

static int planes = 64, hw = 32, n_threads = 2, iters = 2000, cpus[2];
static bool nhwc, halo = true;
static float *tensor[N_TENSORS];
static _Atomic int arrived, generation;
static double best_us;

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void barrier(void) {
    int gen = atomic_load(&generation);
    if (atomic_fetch_add(&arrived, 1) == n_threads - 1) {
        atomic_store(&arrived, 0);
        atomic_fetch_add(&generation, 1);
    } else
        while (atomic_load(&generation) == gen) _mm_pause();
}

/* y[i] = (x[i] + (up[i] + down[i]) / 4) / 2 for n floats (n a multiple of 8). */
static void row_op(const float *x, const float *up, const float *down, float *y, int64_t n) {
    for (int64_t i = 0; i < n; i += 8) {
        __m256 s = _mm256_add_ps(_mm256_loadu_ps(up + i), _mm256_loadu_ps(down + i));
        __m256 v = _mm256_add_ps(_mm256_loadu_ps(x + i), _mm256_mul_ps(_mm256_set1_ps(0.25f), s));
        _mm256_storeu_ps(y + i, _mm256_mul_ps(v, _mm256_set1_ps(0.5f)));
    }
}

/* Thread t's rows of one layer. */
static void layer(int l, int t) {
    const float *x = tensor[l % N_TENSORS];
    float *y = tensor[(l + 1) % N_TENSORS];
    int y0 = n_threads == 1 ? 0 : t * hw / 2, y1 = n_threads == 1 ? hw : y0 + hw / 2;
    for (int r = y0; r < y1; r++) {
        int lo = halo ? 0 : y0, hi = halo ? hw - 1 : y1 - 1;
        int ru = r > lo ? r - 1 : r, rd = r < hi ? r + 1 : r;
        if (nhwc) { /* row r of every plane: one span */
            int64_t rs = (int64_t)hw * planes;
            row_op(x + r * rs, x + ru * rs, x + rd * rs, y + r * rs, rs);
        } else
            for (int c = 0; c < planes; c++) {
                int64_t p = (int64_t)c * hw * hw;
                row_op(x + p + r * hw, x + p + ru * hw, x + p + rd * hw, y + p + r * hw, hw);
            }
    }
}

static void *thread_main(void *arg) {
    int t = (int)(intptr_t)arg;
    if (!bench_pin(cpus[t])) return NULL;
    double best = 1e30;
    for (int it = 0; it < iters; it++) {
        barrier();
        double t0 = now();
        for (int l = 0; l < N_LAYERS; l++) {
            layer(l, t);
            if (n_threads > 1) barrier();
        }
        double d = now() - t0;
        if (d < best) best = d;
    }
    if (t == 0) best_us = best * 1e6;
    return NULL;
}

int main(int argc, char **argv) {
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--layout")) nhwc = !strcmp(argv[i + 1], "nhwc");
        else if (!strcmp(argv[i], "--threads")) n_threads = atoi(argv[i + 1]) == 1 ? 1 : 2;
        else if (!strcmp(argv[i], "--c")) planes = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--hw")) hw = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--halo")) halo = atoi(argv[i + 1]) != 0;
        else if (!strcmp(argv[i], "--iters")) iters = atoi(argv[i + 1]);
        else {
            fprintf(stderr, "bench_layout_split: unknown option %s\n", argv[i]);
            return 2;
        }
    }
    if (planes < 1 || hw < 2 || hw % 16 || iters < 1) {
        fprintf(stderr, "bench_layout_split: --c >= 1, --hw a multiple of 16, --iters >= 1\n");
        return 2;
    }
    if (!bench_first_two_cpus(cpus)) {
        printf("-1\n");
        return 0;
    }
    size_t bytes = (size_t)planes * hw * hw * sizeof(float);
    for (int i = 0; i < N_TENSORS; i++) {
        tensor[i] = aligned_alloc(4096, (bytes + 4095) / 4096 * 4096);
        if (!tensor[i]) {
            fprintf(stderr, "bench_layout_split: out of memory\n");
            return 1;
        }
        memset(tensor[i], 0, bytes);
    }
    pthread_t th[2];
    for (int t = 0; t < n_threads; t++)
        if (pthread_create(&th[t], NULL, thread_main, (void *)(intptr_t)t)) {
            fprintf(stderr, "bench_layout_split: cannot start a thread\n");
            return 1;
        }
    for (int t = 0; t < n_threads; t++) pthread_join(th[t], NULL);
    printf("%.2f\n", best_us);
    for (int i = 0; i < N_TENSORS; i++) free(tensor[i]);
    return 0;
}
