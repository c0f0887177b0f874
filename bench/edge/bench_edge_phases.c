/*
 * bench_edge_phases.c -- where a bundle's load to first result goes, phase
 * by phase (issue 22; docs/edge.md "Cold start and load time").
 *
 *   bench_edge_phases [--reps N] [--fork] MODEL.bundle [MODEL.onnx]
 *
 * One measurement walks the steps inf_model_load takes for a bundle, timed
 * one by one (thread CPU time and wall time, in microseconds):
 *   map     open + fstat + mmap of the file (no page touched yet)
 *   check   the striped CRC32C of the body over the fresh mapping: the
 *           checksum plus the first-touch page faults of every page
 *   decode  inf_bundle_load_static on the now-touched mapping, minus one
 *           more warm checksum of the body (measured right after): header
 *           checks, META/GRAPH decode, PREPACK/CONVPACK tables, kernel binding
 *   session inf_session_new
 *   first   the first inf_session_run on zeros of the declared shapes (the
 *           memory plan for those shapes is made here)
 *   warm    a second run, the same shapes: the first run's cost without
 *           cold caches and planning
 * With MODEL.onnx the same program also times inf_model_load +
 * inf_session_new + the first run of the ONNX file (its "total") so that
 * the bundle's share is in one table.  --fork: every measurement is the first
 * load of a fresh child process (one-time set-up and cold allocator count);
 * without it, the same process repeats.  Prints the median of N per phase.
 * Links libinfera.a and uses one internal symbol (inf__crc32c_striped).
 */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "infera/bundle.h"
#include "infera/session.h"

uint32_t inf__crc32c_striped(const void *data, size_t size); /* src/bundle/crc32c.c */

enum { P_MAP, P_CHECK, P_DECODE, P_SESSION, P_FIRST, P_WARM, P_TOTAL, P_ONNX, N_PHASES };
static const char *const k_names[N_PHASES] = {"map",       "check",    "decode",       "session",
                                              "first run", "warm run", "bundle total", "ONNX total"};

typedef struct sample {
    double cpu[N_PHASES], wall[N_PHASES];
} sample;

static double clock_us(clockid_t id) {
    struct timespec ts;
    clock_gettime(id, &ts);
    return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

typedef struct stamp {
    double cpu, wall;
} stamp;

static stamp now(void) { return (stamp){clock_us(CLOCK_THREAD_CPUTIME_ID), clock_us(CLOCK_MONOTONIC)}; }

static void put(sample *s, int phase, stamp a, stamp b) {
    s->cpu[phase] = b.cpu - a.cpu;
    s->wall[phase] = b.wall - a.wall;
}

/* Zero inputs of the declared shapes (symbolic dimensions 1); n returned. */
static int make_inputs(const inf_model *m, inf_tensor **in) {
    int n = inf_model_n_inputs(m);
    for (int i = 0; i < n && i < 64; i++) {
        const inf_value_info *info = inf_model_input(m, i);
        int64_t dims[INF_MAX_DIMS];
        for (int d = 0; d < info->ndim; d++)
            dims[d] = info->dims[d] < 0 ? 1 : info->dims[d];
        inf_tensor_new(info->dtype, info->ndim, dims, &in[i]);
    }
    return n < 64 ? n : 64;
}

static int run_once(inf_session *s, inf_tensor *const *in, inf_error *err) {
    inf_tensor *const *out;
    return inf_session_run(s, (const inf_tensor *const *)in, &out, err) != INF_OK;
}

static int fail(const char *what, const inf_error *err) {
    fprintf(stderr, "%s: %s\n", what, err ? err->message : "failed");
    return 1;
}

static int measure_bundle(const char *path, sample *s) {
    inf_error err;
    stamp t0 = now();
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st)) return fail(path, NULL);
    size_t size = (size_t)st.st_size;
    void *map = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (map == MAP_FAILED) return fail(path, NULL);
    stamp t1 = now();
    volatile uint32_t crc = inf__crc32c_striped((const char *)map + 64, size - 64);
    stamp t2 = now();
    inf_model *m;
    if (inf_bundle_load_static(map, size, path, &m, &err)) return fail(path, &err);
    stamp t3 = now();
    crc = inf__crc32c_striped((const char *)map + 64, size - 64);
    stamp t3b = now();
    (void)crc;
    inf_session *sess;
    if (inf_session_new(m, NULL, &sess, &err)) return fail(path, &err);
    stamp t4 = now();
    inf_tensor *in[64] = {0};
    int n = make_inputs(m, in);
    if (run_once(sess, in, &err)) return fail(path, &err);
    stamp t5 = now();
    if (run_once(sess, in, &err)) return fail(path, &err);
    stamp t6 = now();
    put(s, P_MAP, t0, t1);
    put(s, P_CHECK, t1, t2);
    put(s, P_DECODE, t2, t3);
    s->cpu[P_DECODE] -= t3b.cpu - t3.cpu;
    s->wall[P_DECODE] -= t3b.wall - t3.wall;
    put(s, P_SESSION, t3b, t4);
    put(s, P_FIRST, t4, t5);
    put(s, P_WARM, t5, t6);
    s->cpu[P_TOTAL] = s->cpu[P_MAP] + s->cpu[P_CHECK] + s->cpu[P_DECODE] + s->cpu[P_SESSION] + s->cpu[P_FIRST];
    s->wall[P_TOTAL] = s->wall[P_MAP] + s->wall[P_CHECK] + s->wall[P_DECODE] + s->wall[P_SESSION] + s->wall[P_FIRST];
    for (int i = 0; i < n; i++)
        inf_tensor_free(in[i]);
    inf_session_free(sess);
    inf_model_free(m);
    munmap(map, size);
    return 0;
}

static int measure_onnx(const char *path, sample *s) {
    inf_error err;
    stamp t0 = now();
    inf_model *m;
    inf_session *sess;
    if (inf_model_load(path, NULL, &m, &err) || inf_session_new(m, NULL, &sess, &err)) return fail(path, &err);
    inf_tensor *in[64] = {0};
    int n = make_inputs(m, in);
    if (run_once(sess, in, &err)) return fail(path, &err);
    stamp t1 = now();
    put(s, P_ONNX, t0, t1);
    for (int i = 0; i < n; i++)
        inf_tensor_free(in[i]);
    inf_session_free(sess);
    inf_model_free(m);
    return 0;
}

static int fork_mode;

/* One measurement (in a fresh child with --fork); the kind: 0 bundle, 1 ONNX. */
static int measure(int kind, const char *path, sample *s) {
    if (!fork_mode) return kind ? measure_onnx(path, s) : measure_bundle(path, s);
    int fds[2];
    if (pipe(fds)) return 1;
    fflush(stdout);
    pid_t pid = fork();
    if (pid < 0) return 1;
    if (pid == 0) {
        close(fds[0]);
        int rc = kind ? measure_onnx(path, s) : measure_bundle(path, s);
        _exit(rc || write(fds[1], s, sizeof *s) != (ssize_t)sizeof *s);
    }
    close(fds[1]);
    sample got;
    ssize_t n = read(fds[0], &got, sizeof got);
    close(fds[0]);
    int status;
    waitpid(pid, &status, 0);
    if (n != (ssize_t)sizeof got) return 1;
    for (int p = 0; p < N_PHASES; p++) /* an ONNX measurement fills its own phase only */
        if ((p == P_ONNX) == (kind == 1)) s->cpu[p] = got.cpu[p], s->wall[p] = got.wall[p];
    return 0;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(sample *s, int reps, int phase, int wall) {
    double *v = malloc((size_t)reps * sizeof *v);
    if (!v) return -1;
    for (int r = 0; r < reps; r++)
        v[r] = wall ? s[r].wall[phase] : s[r].cpu[phase];
    qsort(v, (size_t)reps, sizeof *v, cmp_double);
    double med = v[reps / 2];
    free(v);
    return med;
}

int main(int argc, char **argv) {
    int reps = 21, a = 1;
    if (argc > a + 1 && !strcmp(argv[a], "--reps")) reps = atoi(argv[a + 1]), a += 2;
    if (argc > a && !strcmp(argv[a], "--fork")) fork_mode = 1, a++;
    if (reps < 1) reps = 1;
    if (argc - a < 1 || argc - a > 2) {
        fprintf(stderr, "usage: bench_edge_phases [--reps N] [--fork] MODEL.bundle [MODEL.onnx]\n");
        return 2;
    }
    const char *bundle = argv[a], *onnx = argc - a > 1 ? argv[a + 1] : NULL;
    sample *s = calloc((size_t)reps, sizeof *s), warm;
    if (!s || measure(0, bundle, &warm) || (onnx && measure(1, onnx, &warm))) return 1; /* page cache */
    for (int r = 0; r < reps; r++) /* interleaved: the two forms see the same machine */
        if (measure(0, bundle, &s[r]) || (onnx && measure(1, onnx, &s[r]))) return 1;
    printf("%s%s: median of %d%s (us; thread CPU time, wall time)\n", bundle, onnx ? " vs ONNX" : "", reps,
           fork_mode ? ", each the first load of a fresh process" : "");
    double total_cpu = median(s, reps, P_TOTAL, 0), total_wall = median(s, reps, P_TOTAL, 1);
    for (int p = 0; p < N_PHASES; p++) {
        if (p == P_ONNX && !onnx) continue;
        double c = median(s, reps, p, 0), w = median(s, reps, p, 1);
        printf("  %-13s %9.1f %9.1f", k_names[p], c, w);
        if (p < P_TOTAL && p != P_WARM) printf("   %4.0f%% of the bundle total (CPU)", 100.0 * c / total_cpu);
        if (p == P_ONNX) printf("   bundle/ONNX %.3f (CPU) %.3f (wall)", total_cpu / c, total_wall / w);
        printf("\n");
    }
    free(s);
    return 0;
}
