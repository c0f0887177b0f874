/*
 * bench_lockstep.c -- what a static two-way split loses on this machine
 * when nothing is shared: two threads, pinned to two CPUs, run the same
 * private work (multiply-adds over their own L2-resident buffer) in
 * lockstep, a barrier before each sample, and the pair's time is the slower
 * thread's -- as a 2-chunk kernel job waits for its slower half.
 *
 *   bench_lockstep [--cpus A,B] [--samples N] [--work-kb KB] [--reps R]
 *
 * Prints each thread's p10 / p50 / p90 in us, the pair's (the slower one's)
 * p50, the lockstep wait = pair p50 / the threads' mean p50 (what waiting
 * for the slower half costs) and the speed spread = the threads' mean p50 /
 * the p10 of all samples (how far the typical sample is from the fast
 * speed); both 1.00 on a machine whose cores run at one steady speed.  On
 * the 2-vCPU AMD Zen 5 VM of sessions 21-27 they read 1.02-1.04 and
 * 1.07-1.27, moving from minute to minute, with no data and no cache line
 * shared between the threads (bench/RESULTS.md, "Session 27"): a floor
 * under any 2-thread batch-1 figure that no split removes (the spread)
 * or that only finer, stolen chunks can (the wait).  Read it next to
 * bench_core_rtt.  Linux only; elsewhere prints "-1".
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_pin.h"

enum { LANES = 64 };

typedef struct lockstep {
    int cpus[2];
    int samples, reps;
    size_t floats;
    pthread_barrier_t barrier;
    double *ns[2]; /* per thread, per sample */
} lockstep;

typedef struct worker_arg {
    lockstep *L;
    int id;
} worker_arg;

static double now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e9 + t.tv_nsec;
}

/* reps passes of LANES independent multiply-add chains over buf. */
static float private_work(const float *buf, size_t floats, int reps) {
    float acc[LANES] = {0};
    for (int r = 0; r < reps; r++)
        for (size_t i = 0; i + LANES <= floats; i += LANES)
            for (int j = 0; j < LANES; j++)
                acc[j] = acc[j] * 0.999f + buf[i + j];
    float s = 0;
    for (int j = 0; j < LANES; j++)
        s += acc[j];
    return s;
}

static void *worker(void *arg) {
    worker_arg *w = arg;
    lockstep *L = w->L;
    bool pinned = bench_pin(L->cpus[w->id]);
    float *buf = malloc(L->floats * sizeof *buf);
    volatile float sink = 0;
    for (size_t i = 0; buf && i < L->floats; i++)
        buf[i] = (float)(i % 13) * 1e-3f;
    for (int s = 0; s < L->samples; s++) {
        pthread_barrier_wait(&L->barrier);
        double t0 = now_ns();
        if (buf && pinned)
            sink += private_work(buf, L->floats, L->reps);
        L->ns[w->id][s] = pinned && buf ? now_ns() - t0 : -1;
    }
    (void)sink;
    free(buf);
    return NULL;
}

static int by_value(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double quantile(double *v, int n, double q) {
    qsort(v, (size_t)n, sizeof *v, by_value);
    return v[(int)(q * (n - 1))];
}

static void report(lockstep *L) {
    int n = L->samples;
    double *pair = malloc((size_t)n * sizeof *pair), *both = malloc(2 * (size_t)n * sizeof *both);
    if (!pair || !both) {
        free(pair), free(both);
        printf("-1\n");
        return;
    }
    for (int s = 0; s < n; s++) {
        double a = L->ns[0][s], b = L->ns[1][s];
        pair[s] = a > b ? a : b;
        both[2 * s] = a, both[2 * s + 1] = b;
    }
    double fast = quantile(both, 2 * n, 0.10), pair50 = quantile(pair, n, 0.50), p50[2];
    for (int t = 0; t < 2; t++) {
        p50[t] = quantile(L->ns[t], n, 0.50);
        printf("cpu %d: p10 %.1f p50 %.1f p90 %.1f us\n", L->cpus[t], quantile(L->ns[t], n, 0.10) / 1e3, p50[t] / 1e3,
               quantile(L->ns[t], n, 0.90) / 1e3);
    }
    printf("pair (the slower thread) p50 %.1f us; lockstep wait %.3f (pair p50 / the threads' mean p50); "
           "speed spread %.3f (threads' mean p50 / p10 of both)\n",
           pair50 / 1e3, pair50 / ((p50[0] + p50[1]) / 2), (p50[0] + p50[1]) / 2 / fast);
    free(pair), free(both);
}

int main(int argc, char **argv) {
    lockstep L = {.cpus = {-1, -1}, .samples = 20000, .reps = 16, .floats = 64 * 1024 / sizeof(float)};
    for (int i = 1; i + 1 < argc; i += 2) {
        long kb;
        if (!strcmp(argv[i], "--cpus") && sscanf(argv[i + 1], "%d,%d", &L.cpus[0], &L.cpus[1]) == 2)
            continue;
        if (!strcmp(argv[i], "--samples") && (L.samples = atoi(argv[i + 1])) > 0)
            continue;
        if (!strcmp(argv[i], "--reps") && (L.reps = atoi(argv[i + 1])) > 0)
            continue;
        if (!strcmp(argv[i], "--work-kb") && (kb = atol(argv[i + 1])) > 0) {
            L.floats = (size_t)kb * 1024 / sizeof(float);
            continue;
        }
        fprintf(stderr, "bench_lockstep: bad option %s\n", argv[i]);
        return 2;
    }
    L.ns[0] = malloc((size_t)L.samples * sizeof(double));
    L.ns[1] = malloc((size_t)L.samples * sizeof(double));
    if (!L.ns[0] || !L.ns[1] || (L.cpus[0] < 0 && !bench_first_two_cpus(L.cpus)) ||
        pthread_barrier_init(&L.barrier, NULL, 2) != 0) {
        printf("-1\n"); /* out of memory, or fewer than two CPUs */
        return 0;
    }
    pthread_t t[2];
    worker_arg args[2] = {{&L, 0}, {&L, 1}};
    int started = 0;
    while (started < 2 && pthread_create(&t[started], NULL, worker, &args[started]) == 0)
        started++;
    if (started < 2) {
        printf("-1\n");
        return 0; /* the one started waits at the barrier forever; the process exits */
    }
    for (int i = 0; i < 2; i++)
        pthread_join(t[i], NULL);
    bool ok = true;
    for (int s = 0; s < L.samples; s++)
        ok = ok && L.ns[0][s] >= 0 && L.ns[1][s] >= 0;
    if (ok)
        report(&L);
    else
        printf("-1\n"); /* not allowed to pin, or a buffer not allocated */
    pthread_barrier_destroy(&L.barrier);
    free(L.ns[0]), free(L.ns[1]);
    return 0;
}
