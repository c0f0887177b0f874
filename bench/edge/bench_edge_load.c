/*
 * bench_edge_load.c -- load to first result: an ONNX model against its
 * bundle, in one process, interleaved.
 *
 *   bench_edge_load [--reps N] [--cpu-time] [--fork] MODEL.onnx MODEL.bundle [MODEL2.onnx MODEL2.bundle ...]
 *
 * One measurement = inf_model_load + inf_session_new + the first
 * inf_session_run on zero inputs of the declared shapes (symbolic
 * dimensions 1), then everything freed.  The files are in the page cache
 * (each is loaded once before timing); the two forms of a model alternate,
 * so machine noise hits both alike.  Prints the median and the 10th/90th
 * percentiles in milliseconds and the ratio of the medians (bundle / ONNX),
 * and the page faults (getrusage minflt + majflt) of one load to first
 * result.  --cpu-time measures the process's CPU time (user + system, the
 * page faults' kernel work included) instead of wall time: on a shared
 * machine, time spent descheduled then does not count.  --fork makes each
 * measurement the first load of a fresh child process: in one process,
 * earlier loads change what later ones cost (glibc raises its mmap threshold
 * when a large block is freed, so the ONNX load's large blocks stop being
 * mapped and faulted in anew: 193 -> 15 faults for the bench MLP once a
 * 935 KB block has been freed), and one-time set-up (CPU detection, tables)
 * is paid by the first load only.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "infera/session.h"

static clockid_t clock_id = CLOCK_MONOTONIC;

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(clock_id, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static long faults(void) {
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_minflt + ru.ru_majflt;
}

/* One load to first result, in ms (*load_ms: the model load and session
 * creation alone; *nflt: the page faults of the whole); negative on
 * failure (printed). */
static double load_to_first(const char *path, double *load_ms, long *nflt) {
    long f0 = faults();
    double t0 = now_ms();
    inf_model *m;
    inf_session *s;
    inf_error err;
    if (inf_model_load(path, NULL, &m, &err)) {
        fprintf(stderr, "%s\n", err.message);
        return -1;
    }
    if (inf_session_new(m, NULL, &s, &err)) {
        fprintf(stderr, "%s\n", err.message);
        inf_model_free(m);
        return -1;
    }
    *load_ms = now_ms() - t0;
    int n = inf_model_n_inputs(m);
    inf_tensor *in[64] = {0};
    for (int i = 0; i < n && i < 64; i++) {
        const inf_value_info *info = inf_model_input(m, i);
        int64_t dims[INF_MAX_DIMS];
        for (int d = 0; d < info->ndim; d++) dims[d] = info->dims[d] < 0 ? 1 : info->dims[d];
        inf_tensor_new(info->dtype, info->ndim, dims, &in[i]);
    }
    inf_tensor *const *out;
    inf_status st = inf_session_run(s, (const inf_tensor *const *)in, &out, &err);
    double t1 = now_ms() - 0; /* input tensors are made inside the timing: both forms alike */
    *nflt = faults() - f0;
    if (st) fprintf(stderr, "%s: %s\n", path, err.message);
    for (int i = 0; i < n && i < 64; i++) inf_tensor_free(in[i]);
    inf_session_free(s);
    inf_model_free(m);
    return st ? -1 : t1 - t0;
}

static int fork_mode;

/* load_to_first, in a fresh child process with --fork. */
static double measure(const char *path, double *load_ms, long *nflt) {
    if (!fork_mode) return load_to_first(path, load_ms, nflt);
    struct {
        double t, load;
        long nflt;
    } res = {-1, 0, 0};
    int fds[2];
    if (pipe(fds)) return -1;
    fflush(stdout);
    pid_t pid = fork();
    if (pid < 0) return -1;
    if (pid == 0) {
        close(fds[0]);
        res.t = load_to_first(path, &res.load, &res.nflt);
        _exit(write(fds[1], &res, sizeof res) == (ssize_t)sizeof res ? 0 : 1);
    }
    close(fds[1]);
    ssize_t got = read(fds[0], &res, sizeof res);
    close(fds[0]);
    waitpid(pid, NULL, 0);
    if (got != (ssize_t)sizeof res) return -1;
    *load_ms = res.load, *nflt = res.nflt;
    return res.t;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv) {
    int reps = 30, first = 1;
    if (argc > first + 1 && !strcmp(argv[first], "--reps")) reps = atoi(argv[first + 1]), first += 2;
    if (argc > first && !strcmp(argv[first], "--cpu-time")) clock_id = CLOCK_PROCESS_CPUTIME_ID, first++;
    if (argc > first && !strcmp(argv[first], "--fork")) fork_mode = 1, first++;
    if (reps < 1) reps = 1;
    if ((argc - first) < 2 || (argc - first) % 2) {
        fprintf(stderr, "usage: bench_edge_load [--reps N] [--cpu-time] [--fork] MODEL.onnx MODEL.bundle ...\n");
        return 2;
    }
    printf("(%s%s)\n", clock_id == CLOCK_MONOTONIC ? "wall time" : "process CPU time, user + system",
           fork_mode ? "; each load the first of a fresh process" : "");
    printf("%-22s %10s %10s %10s %14s %8s\n", "model", "p10 ms", "median ms", "p90 ms", "load only ms", "faults");
    for (int p = first; p + 1 < argc; p += 2) {
        double *t[2] = {calloc((size_t)reps, sizeof(double)), calloc((size_t)reps, sizeof(double))};
        double *l[2] = {calloc((size_t)reps, sizeof(double)), calloc((size_t)reps, sizeof(double))};
        double scratch;
        long nflt, flt[2] = {0, 0};
        for (int k = 0; k < 2; k++)
            if (measure(argv[p + k], &scratch, &nflt) < 0) return 1; /* warm the page cache */
        for (int r = 0; r < reps; r++)
            for (int k = 0; k < 2; k++)
                t[k][r] = measure(argv[p + k], &l[k][r], &nflt), flt[k] += nflt;
        double med[2], lmed[2];
        for (int k = 0; k < 2; k++) {
            qsort(t[k], (size_t)reps, sizeof(double), cmp_double);
            qsort(l[k], (size_t)reps, sizeof(double), cmp_double);
            med[k] = t[k][reps / 2];
            lmed[k] = l[k][reps / 2];
            const char *name = strrchr(argv[p + k], '/');
            printf("%-22s %10.3f %10.3f %10.3f %14.3f %8.1f\n", name ? name + 1 : argv[p + k], t[k][reps / 10], med[k],
                   t[k][reps - 1 - reps / 10], lmed[k], (double)flt[k] / reps);
        }
        printf("%-22s %10s %10.3f %10s %14.3f   (bundle / ONNX, medians)\n", "  ratio", "", med[1] / med[0], "",
               lmed[1] / lmed[0]);
        for (int k = 0; k < 2; k++) free(t[k]), free(l[k]);
    }
    return 0;
}
