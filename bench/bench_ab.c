/*
 * bench_ab.c -- an in-process A/B of two builds of libinfera.so on one model:
 * both libraries loaded into the same process (dlmopen, each in a link map
 * of its own, so their symbols do not clash), one session each, run in
 * alternation, so both see the same load, the same vCPU placement and the
 * same core speed -- on a shared 2-vCPU machine the only wall-clock
 * comparison of two versions that means something (bench/RESULTS.md,
 * sessions 18-21).
 *
 *   bench_ab LIB_A LIB_B MODEL [--threads N] [--batch N] [--seq N] [--rounds R]
 *            [--runs K] [--warmup W] [--profile] [--rtt PROGRAM] [--flush MB]
 *
 * Every round runs K inferences of A then K of B (the order swapped every
 * round), after W warm-up runs of each at the start; it prints one line per
 * round (p50 of A and of B in us, B / A, then the same for the p90) and at
 * the end the median of the per-round ratios (p50 and p90) and how many
 * rounds B was faster.  With --profile both
 * sessions count per node; at the end each node's minimum and mean call
 * over all runs are printed for A and B (matched by node name; B's nodes
 * that A lacks -- a fusion's -- after them, marked "B only"), and the whole
 * run's mean (what lies outside the nodes).  Inputs: every input of the model must be
 * float or int64 (token ids, masks: 0..7); each is filled with a fixed pattern, dimension 0 = --batch, other
 * unknown dimensions --seq (default 1; a transformer's sequence length).  Defaults: 1 thread, batch 1, 20
 * rounds of 300 runs, 20 warm-up.  The same build as A and B (an A/A control) gave
 * medians 0.986-1.021 on the bench CNN (session 21): a difference under
 * ~2 % needs more rounds and both orders (A/B and B/A).
 * --rtt PROGRAM (bench/bench_core_rtt) runs it before every round and
 * prints the vCPUs' cache-line round trip with the round; the summary then
 * splits the rounds at 250 ns (on the 2-vCPU cloud VMs of sessions 13-21:
 * ~90 ns = the vCPUs share an L3, ~400 ns = they do not; the state flips
 * every few minutes and decides 2-thread figures more than most changes).
 * --flush MB reads a buffer of MB MiB before every timed run (outside its
 * time): with MB above the L3 (64 on a 32 MiB L3) every run starts cold --
 * weights, activations and the arena come from DRAM, as after another
 * tenant swept the L3 -- and the p50 and the per-node figures are the cold
 * ones; the warm-up runs stay warm.  Reads only, so no write-backs land in
 * the timed run.  The sweep's 4 KiB pages flush the TLB as well; a sweep in
 * 2 MiB pages (TLB kept) gave the same cold figures on the bench CNN
 * (session 22): the cold cost is DRAM traffic, not page walks.
 * Linux/glibc only (dlmopen); it links no Infera library itself, only the
 * header's types.  A build target on Linux (bench/CMakeLists.txt).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_timing.h"
#include "infera/infera.h"
#include "infera/model.h"
#include "infera/session.h"
#include "infera/tensor.h"

enum { MAX_IO = 16, MAX_NODES = 512 };

/* The entry points the driver calls, looked up in one library's link map. */
typedef struct engine {
    void *lib;
    inf_status (*model_load)(const char *, const inf_model_options *, inf_model **, inf_error *);
    void (*model_free)(inf_model *);
    int (*n_inputs)(const inf_model *);
    const inf_value_info *(*input)(const inf_model *, int);
    void (*opts_init)(inf_session_options *);
    inf_status (*session_new)(const inf_model *, const inf_session_options *, inf_session **, inf_error *);
    void (*session_free)(inf_session *);
    inf_status (*run)(inf_session *, const inf_tensor *const *, inf_tensor *const **, inf_error *);
    int (*profile)(const inf_session *, inf_node_profile *, int, inf_profile_totals *);
    void (*profile_reset)(inf_session *);
    inf_model *model;
    inf_session *session;
    int n_in;
    inf_tensor views[MAX_IO];
    const inf_tensor *in[MAX_IO];
    void *data[MAX_IO];
} engine;

static void *sym(void *lib, const char *name, const char *path) {
    void *p = dlsym(lib, name);
    if (!p) {
        fprintf(stderr, "bench_ab: %s: no symbol %s\n", path, name);
        exit(2);
    }
    return p;
}

static void engine_open(engine *e, const char *path) {
    e->lib = dlmopen(LM_ID_NEWLM, path, RTLD_NOW | RTLD_LOCAL);
    if (!e->lib) {
        fprintf(stderr, "bench_ab: %s\n", dlerror());
        exit(2);
    }
    *(void **)&e->model_load = sym(e->lib, "inf_model_load", path);
    *(void **)&e->model_free = sym(e->lib, "inf_model_free", path);
    *(void **)&e->n_inputs = sym(e->lib, "inf_model_n_inputs", path);
    *(void **)&e->input = sym(e->lib, "inf_model_input", path);
    *(void **)&e->opts_init = sym(e->lib, "inf_session_options_init", path);
    *(void **)&e->session_new = sym(e->lib, "inf_session_new", path);
    *(void **)&e->session_free = sym(e->lib, "inf_session_free", path);
    *(void **)&e->run = sym(e->lib, "inf_session_run", path);
    *(void **)&e->profile = sym(e->lib, "inf_session_profile", path);
    *(void **)&e->profile_reset = sym(e->lib, "inf_session_profile_reset", path);
}

/* Loads the model, makes the session and the inputs (float, or int64 token
 * ids / masks: values 0..7, valid indices for any vocabulary). */
static void engine_start(engine *e, const char *path, const char *model, int threads, int batch, int seq, int profile) {
    inf_error err = {0};
    if (e->model_load(model, NULL, &e->model, &err) != INF_OK) {
        fprintf(stderr, "bench_ab: %s: %s\n", path, err.message);
        exit(2);
    }
    inf_session_options o;
    e->opts_init(&o);
    o.n_threads = threads;
    o.max_batch = batch;
    o.profile = profile;
    if (e->session_new(e->model, &o, &e->session, &err) != INF_OK) {
        fprintf(stderr, "bench_ab: %s: %s\n", path, err.message);
        exit(2);
    }
    e->n_in = e->n_inputs(e->model);
    if (e->n_in > MAX_IO) {
        fprintf(stderr, "bench_ab: more than %d inputs\n", MAX_IO);
        exit(2);
    }
    for (int i = 0; i < e->n_in; i++) {
        const inf_value_info *v = e->input(e->model, i);
        if ((v->dtype != INF_DTYPE_F32 && v->dtype != INF_DTYPE_I64) || v->ndim < 1) {
            fprintf(stderr, "bench_ab: input %d is not a float or int64 tensor\n", i);
            exit(2);
        }
        int64_t dims[INF_MAX_DIMS], n = 1;
        for (int d = 0; d < v->ndim; d++) {
            dims[d] = d == 0 ? batch : v->dims[d] > 0 ? v->dims[d] : seq;
            n *= dims[d];
        }
        bool i64 = v->dtype == INF_DTYPE_I64;
        e->data[i] = malloc((size_t)n * (i64 ? sizeof(int64_t) : sizeof(float)));
        if (!e->data[i]) {
            fprintf(stderr, "bench_ab: out of memory\n");
            exit(2);
        }
        for (int64_t k = 0; k < n; k++)
            if (i64)
                ((int64_t *)e->data[i])[k] = k * 37 % 101 % 8;
            else
                ((float *)e->data[i])[k] = (float)((k * 37 % 101) - 50) / 50.0f;
        e->views[i] = (inf_tensor){.dtype = v->dtype, .kind = INF_KIND_TENSOR, .ndim = v->ndim, .data = e->data[i]};
        memcpy(e->views[i].dims, dims, sizeof dims);
        e->in[i] = &e->views[i];
    }
}

static void engine_run(engine *e) {
    inf_tensor *const *out;
    inf_error err = {0};
    if (e->run(e->session, e->in, &out, &err) != INF_OK) {
        fprintf(stderr, "bench_ab: run: %s\n", err.message);
        exit(2);
    }
}

/* The round trip PROGRAM prints (ns), or -1. */
static double round_trip(const char *program) {
    char cmd[4200], line[64];
    snprintf(cmd, sizeof cmd, "%s --iters 4000", program);
    FILE *f = popen(cmd, "r");
    if (!f)
        return -1;
    double ns = fgets(line, sizeof line, f) ? atof(line) : -1;
    pclose(f);
    return ns;
}

/* The median of the n ratios r[i] whose round trip t[i] is in [lo, hi), or 0. */
static double median_where(const double *r, const double *t, int n, double lo, double hi, int *count) {
    double *v = malloc((size_t)n * sizeof(double));
    int k = 0;
    for (int i = 0; v && i < n; i++)
        if (t[i] >= lo && t[i] < hi)
            v[k++] = r[i];
    double m = 0;
    if (k > 0) {
        qsort(v, (size_t)k, sizeof(double), bench_cmp_double);
        m = v[k / 2];
    }
    free(v);
    *count = k;
    return m;
}

/* The caches' sweep before a cold run: reads every line of the buffer (a
 * sum the compiler must keep). */
typedef struct sweep {
    const unsigned char *buf;
    size_t bytes;
} sweep;

static volatile unsigned sweep_sink;

static void sweep_caches(const sweep *w) {
    unsigned s = 0;
    for (size_t i = 0; i < w->bytes; i += 64)
        s += w->buf[i];
    sweep_sink = s;
}

/* p50 and p90 (q[0], q[1]) in us of k runs, each after a sweep of the
 * caches when w has a buffer. */
static void engine_quantiles(engine *e, int k, double *t, const sweep *w, double q[2]) {
    for (int i = 0; i < k; i++) {
        if (w->buf)
            sweep_caches(w);
        double t0 = bench_now_us();
        engine_run(e);
        t[i] = bench_now_us() - t0;
    }
    qsort(t, (size_t)k, sizeof(double), bench_cmp_double);
    q[0] = t[k / 2], q[1] = t[k * 9 / 10];
}

/* Per node: the least and the mean time of a call, for A and B; then the
 * sums and the mean of a whole run (inf_session_run: what lies beyond the
 * nodes -- input checks, the planner's arena, the pool's first wake-up). */
static void print_profiles(engine *a, engine *b) {
    static inf_node_profile pa[MAX_NODES], pb[MAX_NODES];
    inf_profile_totals ta, tb;
    int na = a->profile(a->session, pa, MAX_NODES, &ta), nb = b->profile(b->session, pb, MAX_NODES, &tb);
    double s[4] = {0};
    printf("%-36s %9s %9s %9s %9s\n", "node (per call, us)", "A min", "B min", "A mean", "B mean");
    for (int i = 0; i < na && i < MAX_NODES; i++) {
        const inf_node_profile *q = NULL;
        for (int j = 0; j < nb && j < MAX_NODES && !q; j++)
            if (pb[j].name && pa[i].name && strcmp(pb[j].name, pa[i].name) == 0)
                q = &pb[j];
        double ca = pa[i].calls > 0 ? (double)pa[i].calls : 1, cb = q && q->calls > 0 ? (double)q->calls : 1;
        double v[4] = {pa[i].min_ns * 1e-3, q ? q->min_ns * 1e-3 : 0, pa[i].total_ns * 1e-3 / ca,
                       q ? q->total_ns * 1e-3 / cb : 0};
        for (int k = 0; k < 4; k++)
            s[k] += v[k];
        printf("%-36.36s %9.1f %9.1f %9.1f %9.1f\n", pa[i].name ? pa[i].name : "?", v[0], v[1], v[2], v[3]);
    }
    for (int j = 0; j < nb && j < MAX_NODES; j++) { /* B's nodes A does not have (a fusion A lacks) */
        bool in_a = false;
        for (int i = 0; i < na && i < MAX_NODES && !in_a; i++)
            in_a = pa[i].name && pb[j].name && strcmp(pb[j].name, pa[i].name) == 0;
        if (in_a)
            continue;
        double cb = pb[j].calls > 0 ? (double)pb[j].calls : 1, v[2] = {pb[j].min_ns * 1e-3, pb[j].total_ns * 1e-3 / cb};
        s[1] += v[0], s[3] += v[1];
        printf("%-36.36s %9.1f %9.1f %9.1f %9.1f (B only)\n", pb[j].name ? pb[j].name : "?", 0.0, v[0], 0.0, v[1]);
    }
    printf("%-36s %9.1f %9.1f %9.1f %9.1f\n", "sum of nodes", s[0], s[1], s[2], s[3]);
    printf("%-36s %9s %9s %9.1f %9.1f\n", "whole run (mean)", "", "", ta.runs ? ta.run_ns * 1e-3 / ta.runs : 0,
           tb.runs ? tb.run_ns * 1e-3 / tb.runs : 0);
}

int main(int argc, char **argv) {
    if (argc < 4) {
        fprintf(stderr, "usage: bench_ab LIB_A LIB_B MODEL [--threads N] [--batch N] [--seq N] [--rounds R] "
                        "[--runs K] [--warmup W] [--profile] [--rtt PROGRAM] [--flush MB]\n");
        return 2;
    }
    int threads = 1, batch = 1, seq = 1, rounds = 20, runs = 300, warmup = 20, profile = 0, flush_mb = 0;
    const char *rtt_program = NULL;
    for (int i = 4; i < argc; i++) {
        const char *o = argv[i];
        int *dst = !strcmp(o, "--threads")  ? &threads
                   : !strcmp(o, "--batch")  ? &batch
                   : !strcmp(o, "--seq")    ? &seq
                   : !strcmp(o, "--rounds") ? &rounds
                   : !strcmp(o, "--runs")   ? &runs
                   : !strcmp(o, "--warmup") ? &warmup
                   : !strcmp(o, "--flush")  ? &flush_mb
                                            : NULL;
        if (!strcmp(o, "--profile")) {
            profile = 1;
        } else if (!strcmp(o, "--rtt") && i + 1 < argc) {
            rtt_program = argv[++i];
        } else if (dst && i + 1 < argc && atoi(argv[i + 1]) > 0) {
            *dst = atoi(argv[++i]);
        } else {
            fprintf(stderr, "bench_ab: bad option %s\n", o);
            return 2;
        }
    }
    engine e[2] = {{0}};
    const char *lib[2] = {argv[1], argv[2]};
    for (int v = 0; v < 2; v++) {
        engine_open(&e[v], lib[v]);
        engine_start(&e[v], lib[v], argv[3], threads, batch, seq, profile);
        for (int i = 0; i < warmup; i++)
            engine_run(&e[v]);
        if (profile)
            e[v].profile_reset(e[v].session);
    }
    double *t = malloc((size_t)runs * sizeof(double)), *ratio = malloc((size_t)rounds * sizeof(double));
    double *rtt = malloc((size_t)rounds * sizeof(double)), *ratio90 = malloc((size_t)rounds * sizeof(double));
    if (!t || !ratio || !rtt || !ratio90)
        return 2;
    sweep w = {NULL, (size_t)flush_mb << 20};
    unsigned char *flush_buf = NULL;
    if (flush_mb > 0) {
        flush_buf = malloc(w.bytes);
        if (!flush_buf) {
            fprintf(stderr, "bench_ab: no memory for --flush %d\n", flush_mb);
            return 2;
        }
        memset(flush_buf, 1, w.bytes); /* pages backed, not the shared zero page */
        w.buf = flush_buf;
    }
    int b_lower = 0;
    for (int r = 0; r < rounds; r++) {
        double p[2][2];
        rtt[r] = rtt_program ? round_trip(rtt_program) : -1;
        for (int i = 0; i < 2; i++) {
            int v = (i + r) % 2;
            engine_quantiles(&e[v], runs, t, &w, p[v]);
        }
        ratio[r] = p[1][0] / p[0][0], ratio90[r] = p[1][1] / p[0][1];
        b_lower += p[1][0] < p[0][0];
        printf("round %2d  A %8.1f us  B %8.1f us  B/A %.3f  p90 A %8.1f B %8.1f B/A %.3f", r, p[0][0], p[1][0],
               ratio[r], p[0][1], p[1][1], ratio90[r]);
        if (rtt_program)
            printf("  rtt %.0f ns", rtt[r]);
        printf("\n");
        fflush(stdout);
    }
    if (rtt_program) {
        int ns, nn;
        double ms = median_where(ratio, rtt, rounds, 0, 250, &ns), mn = median_where(ratio, rtt, rounds, 250, 1e9, &nn);
        printf("rtt < 250 ns (shared L3): %d rounds, median B/A %.3f; rtt >= 250 ns: %d rounds, median B/A %.3f\n", ns,
               ms, nn, mn);
    }
    qsort(ratio, (size_t)rounds, sizeof(double), bench_cmp_double);
    qsort(ratio90, (size_t)rounds, sizeof(double), bench_cmp_double);
    printf("median B/A %.3f (range %.3f-%.3f), B lower in %d of %d rounds; p90: median B/A %.3f (range %.3f-%.3f)\n",
           ratio[rounds / 2], ratio[0], ratio[rounds - 1], b_lower, rounds, ratio90[rounds / 2], ratio90[0],
           ratio90[rounds - 1]);
    if (profile)
        print_profiles(&e[0], &e[1]);
    for (int v = 0; v < 2; v++) {
        e[v].session_free(e[v].session);
        e[v].model_free(e[v].model);
        for (int i = 0; i < e[v].n_in; i++)
            free(e[v].data[i]);
    }
    free(flush_buf);
    free(t);
    free(ratio);
    free(ratio90);
    free(rtt);
    return 0;
}
