/*
 * bench_timing.h -- the timing loop the kernel benchmarks share
 * (bench_conv.c, bench_stem.c, bench_depthwise.c): a clock, and rounds
 * that time every variant of a case once per round, the order rotating
 * per round so no variant always runs right after another, then sorted so
 * t[v][rounds / 2] is the median.
 */
#ifndef INFERA_BENCH_TIMING_H
#define INFERA_BENCH_TIMING_H

#include <stdbool.h>
#include <stdlib.h>
#include <time.h>

enum { BENCH_MAX_ROUNDS = 64 };

static inline double bench_now_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e6 + ts.tv_nsec * 1e-3;
}

static inline int bench_cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Calls per timing so that one timing covers about 2e7 floating-point
 * operations (a call of `flop` operations). */
static inline int bench_inner_calls(double flop) { return flop < 2e7 ? (int)(2e7 / flop) + 1 : 1; }

/* Times run(ctx, v) for the variants v < n with ok[v]: one warm-up call
 * each, then `rounds` (at most BENCH_MAX_ROUNDS) rounds of `inner` calls
 * per variant, rotating the order; t[v][0 .. rounds) gets the microseconds
 * per call, sorted.  Returns the rounds used. */
static inline int bench_rounds(int n, const bool *ok, int rounds, int inner, void (*run)(const void *ctx, int v),
                               const void *ctx, double t[][BENCH_MAX_ROUNDS]) {
    if (rounds > BENCH_MAX_ROUNDS) rounds = BENCH_MAX_ROUNDS;
    for (int v = 0; v < n; v++)
        if (ok[v]) run(ctx, v);
    for (int r = 0; r < rounds; r++)
        for (int i = 0; i < n; i++) {
            int v = (i + r) % n;
            if (!ok[v]) continue;
            double t0 = bench_now_us();
            for (int k = 0; k < inner; k++) run(ctx, v);
            t[v][r] = (bench_now_us() - t0) / inner;
        }
    for (int v = 0; v < n; v++)
        if (ok[v]) qsort(t[v], (size_t)rounds, sizeof(double), bench_cmp_double);
    return rounds;
}

#endif /* INFERA_BENCH_TIMING_H */
