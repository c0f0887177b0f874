/*
 * bench_core_rtt.c -- the round trip of a cache line between two CPUs, in
 * nanoseconds: how fast data written by one thread reaches another.
 *
 *   bench_core_rtt [--cpus A,B] [--iters N]
 *
 * Two threads, pinned to CPUs A and B (default the first two the process
 * may use), hand a flag back and forth N times (default 20000) in batches
 * of 1000; prints the mean round trip of the fastest batch in ns, one
 * number (the fastest: a batch that another process interrupted says
 * nothing about the cores).  bench/run.sh records it next to
 * every measurement ("rtt_ns"): on the 2-vCPU cloud VMs of sessions 13-15
 * (AMD Zen 5) it moved between ~105-180 ns and ~450-520 ns over minutes --
 * the hypervisor placing the two vCPUs on cores that share an L3 or not --
 * and the bench CNN at batch 1 and 2 threads ran ~200 us in the first state
 * and ~380-460 us in the second (slower than at 1 thread: every kernel's
 * input, output and scratch cross between the cores), so a 2-thread figure
 * means little without it.  Linux only (pthread affinity); elsewhere -1.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_pin.h"

static _Alignas(64) _Atomic int flag;
static int iters = 20000;

static void *echo(void *arg) {
    if (!bench_pin(*(int *)arg))
        return NULL;
    for (int i = 0; i < iters; i++) {
        while (atomic_load_explicit(&flag, memory_order_acquire) != 1) {
        }
        atomic_store_explicit(&flag, 0, memory_order_release);
    }
    return NULL;
}

int main(int argc, char **argv) {
    int cpus[2] = {-1, -1};
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--cpus") && sscanf(argv[i + 1], "%d,%d", &cpus[0], &cpus[1]) == 2) continue;
        if (!strcmp(argv[i], "--iters") && (iters = atoi(argv[i + 1])) > 0) continue;
        fprintf(stderr, "bench_core_rtt: bad option %s\n", argv[i]);
        return 2;
    }
    if ((cpus[0] < 0 && !bench_first_two_cpus(cpus)) || !bench_pin(cpus[0])) {
        printf("-1\n"); /* fewer than two CPUs, or not allowed to pin */
        return 0;
    }
    pthread_t t;
    if (pthread_create(&t, NULL, echo, &cpus[1]) != 0) {
        printf("-1\n");
        return 0;
    }
    double best = -1;
    for (int done = 0; done < iters; done += 1000) {
        int n = iters - done < 1000 ? iters - done : 1000;
        struct timespec t0, t1;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        for (int i = 0; i < n; i++) {
            atomic_store_explicit(&flag, 1, memory_order_release);
            while (atomic_load_explicit(&flag, memory_order_acquire) != 0) {
            }
        }
        clock_gettime(CLOCK_MONOTONIC, &t1);
        double ns = ((t1.tv_sec - t0.tv_sec) * 1e9 + (t1.tv_nsec - t0.tv_nsec)) / n;
        if (best < 0 || ns < best) best = ns;
    }
    pthread_join(t, NULL);
    printf("%.0f\n", best);
    return 0;
}
