/*
 * bench_pool.c -- what one job of the kernel thread pool costs (core/
 * threadpool.c): the wall time of inf__pool_range over and above the work
 * its chunks do, the price every split node pays at batch 1.
 *
 *   bench_pool [--threads N] [--jobs N] [--work NS]
 *
 * Runs --jobs jobs (default 20000) back to back on a pool of --threads
 * threads (default 2); each job has 2 x threads chunks that each spin for
 * --work nanoseconds (default 0: empty chunks).  Prints, in ns per job,
 * the fastest batch of 1000 jobs and the median batch, and what the same
 * work costs run inline by one thread, so
 *
 *     overhead = job time - inline time / threads
 *
 * is the hand-off, the waits for the slower thread and the workers'
 * acknowledgements.  Read it next to bench_core_rtt: on a 2-vCPU VM the
 * cost follows the cache-line round trip between the vCPUs.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/core.h"

static double work_ns;

/* Spins for work_ns per chunk (the clock read is part of the work). */
static void spin_chunk(void *arg, int64_t begin, int64_t end) {
    (void)arg;
    for (int64_t c = begin; c < end; c++) {
        double t0 = inf__now_seconds();
        while ((inf__now_seconds() - t0) * 1e9 < work_ns) {
        }
    }
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* ns per job of `batches` batches of 1000 jobs: fastest and median. */
static void time_jobs(inf__pool *pool, int threads, int batches, double *best, double *median) {
    double *per = malloc((size_t)batches * sizeof *per);
    if (!per) exit(1);
    for (int b = 0; b < batches; b++) {
        double t0 = inf__now_seconds();
        for (int j = 0; j < 1000; j++)
            inf__pool_range(pool, 2 * threads, 1, spin_chunk, NULL);
        per[b] = (inf__now_seconds() - t0) * 1e6; /* ns per job */
    }
    qsort(per, (size_t)batches, sizeof *per, cmp_double);
    *best = per[0];
    *median = per[batches / 2];
    free(per);
}

int main(int argc, char **argv) {
    int threads = 2, jobs = 20000;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--threads"))
            threads = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--jobs"))
            jobs = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--work"))
            work_ns = atof(argv[i + 1]);
        else {
            fprintf(stderr, "usage: bench_pool [--threads N] [--jobs N] [--work NS]\n");
            return 2;
        }
    }
    int batches = jobs / 1000 > 0 ? jobs / 1000 : 1;
    inf__pool *pool;
    if (threads < 1 || inf__pool_new(threads, &pool) != INF_OK) {
        fprintf(stderr, "bench_pool: cannot start %d threads\n", threads);
        return 1;
    }
    double best1, med1, best, med;
    time_jobs(NULL, threads, batches, &best1, &med1); /* the same chunks inline */
    time_jobs(pool, threads, batches, &best, &med);
    printf("threads %d, %d chunks of %.0f ns a job: inline %.0f ns, pool best %.0f ns, median %.0f ns, "
           "overhead (median - inline/threads) %.0f ns\n",
           threads, 2 * threads, work_ns, med1, best, med, med - med1 / threads);
    inf__pool_free(pool);
    return 0;
}
