/*
 * bench_pin.h -- pinning a thread to one CPU and finding the first two CPUs
 * the process may use: the two-thread probes' shared set-up
 * (bench_core_rtt.c, bench_lockstep.c).  Pinning needs Linux; elsewhere
 * both answer false and the probes print "-1".
 */
#ifndef INF_BENCH_PIN_H
#define INF_BENCH_PIN_H

#include <pthread.h>
#include <sched.h>
#include <stdbool.h>

/* Pins the calling thread to cpu; false if not allowed. */
static inline bool bench_pin(int cpu) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    return pthread_setaffinity_np(pthread_self(), sizeof set, &set) == 0;
}

/* The first two CPUs in the affinity mask, or false. */
static inline bool bench_first_two_cpus(int cpus[2]) {
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) != 0)
        return false;
    int n = 0;
    for (int c = 0; c < CPU_SETSIZE && n < 2; c++)
        if (CPU_ISSET(c, &set))
            cpus[n++] = c;
    return n == 2;
}

#endif /* INF_BENCH_PIN_H */
