/*
 * bench_llm.c -- prompt processing and decode speed of a GGUF model, measured
 * the way llama-bench does (pp: one pass over N_PROMPT tokens; tg: N_GEN
 * single-token steps), so bench/llm/run.sh can put the two side by side.
 *
 * usage: bench_llm MODEL.gguf [--threads N] [--pp N] [--tg N] [--reps N]
 *        bench_llm MODEL.gguf --verify N [--reps N]
 * Prints one JSON line: {"model","threads","pp","tg","pp_tokens_per_s",
 * "tg_tokens_per_s","bytes_per_token","read_gb_per_s","tg_bound_tokens_per_s",
 * "pp_tokens_per_cpu_s","tg_tokens_per_cpu_s","pp_cpu_s_sum","tg_cpu_s_sum"}
 * (best of --reps repetitions: the machine is shared, the best run is the
 * least disturbed one; *_sum: the process CPU time of all the timed
 * repetitions, warm-up excluded).  read_gb_per_s is the memory read
 * bandwidth measured here (a 512 MiB buffer on 2 MiB pages summed by one
 * thread with scalar loads), and tg_bound = bandwidth / bytes of weights per
 * token: about the decode speed one core's DRAM reads allow -- a floor
 * rather than a ceiling, as the engines' vector streams read up to ~25% more
 * (bench/llm/RESULTS.md, Zen 5 session 17).
 * --verify N: the cost v of speculative decoding's verification pass, in
 * the thread's CPU time: a pass over N tokens (all logits) / a one-token
 * decode step, both at position 64 after a 64-token prompt, interleaved,
 * --reps (default 3) x 50 passes each, the best repetition of each side;
 * prints {"model","verify_tokens","step_ms","verify_ms","v"}.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "infera/llm.h"

static double cpu_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* CPU time of the whole process (every thread of the pool) */
static double proc_cpu_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Read bandwidth of one thread over a buffer much larger than the caches, in
 * the thread's CPU time (the machine is shared: wall time would measure the
 * run queue). */
static double read_bandwidth_gbs(void) {
    size_t n = (size_t)512 << 20, words = n / sizeof(uint64_t);
    /* on 2 MiB pages where the kernel gives them, as the engine's weights (src/llm/weight_region.c): one core
     * streams ~8% faster from them than from 4 KiB pages (bench/stream_probe) */
    void *map = mmap(NULL, n + ((size_t)2 << 20), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (map == MAP_FAILED) return 0;
    uint64_t *buf = (uint64_t *)(((uintptr_t)map + ((2u << 20) - 1)) & ~(uintptr_t)((2u << 20) - 1));
#ifdef MADV_HUGEPAGE
    (void)madvise(buf, n, MADV_HUGEPAGE);
#endif
    for (size_t i = 0; i < words; i++) buf[i] = i;
    double best = 1e30;
    volatile uint64_t sink = 0;
    for (int r = 0; r < 3; r++) {
        double t0 = cpu_now();
        uint64_t a = 0, b = 0, c = 0, d = 0;
        for (size_t i = 0; i < words; i += 4) a += buf[i], b ^= buf[i + 1], c += buf[i + 2], d ^= buf[i + 3];
        sink += a + b + c + d;
        double t = cpu_now() - t0;
        if (t < best) best = t;
    }
    munmap(map, n + ((size_t)2 << 20));
    return n / best / 1e9;
}

/* --verify: CPU time of an n-token pass vs a one-token step at position pos. */
static double passes_cpu(inf_llm_context *c, const int32_t *toks, int pos, int n, int passes) {
    const float *l;
    double t0 = cpu_now();
    for (int i = 0; i < passes; i++) {
        inf_llm_context_rewind(c, pos, NULL);
        inf_llm_context_eval(c, toks + pos, n, n > 1, &l, NULL);
    }
    return (cpu_now() - t0) / passes;
}

static int verify_cost(const char *path, inf_llm_context *c, const int32_t *toks, int pos, int n, int reps) {
    inf_error err;
    const float *l;
    if (inf_llm_context_eval(c, toks, pos, false, &l, &err)) {
        fprintf(stderr, "%s\n", err.message);
        return 1;
    }
    double step = 1e30, pass = 1e30;
    for (int r = 0; r < reps + 1; r++) { /* the first repetition warms the caches */
        double s = passes_cpu(c, toks, pos, 1, 50), p = passes_cpu(c, toks, pos, n, 50);
        if (r == 0) continue;
        if (s < step) step = s;
        if (p < pass) pass = p;
    }
    printf("{\"model\":\"%s\",\"verify_tokens\":%d,\"step_ms\":%.4f,\"verify_ms\":%.4f,\"v\":%.3f}\n", path, n,
           step * 1e3, pass * 1e3, pass / step);
    return 0;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: bench_llm MODEL.gguf [--threads N] [--pp N] [--tg N] [--reps N]\n");
        return 2;
    }
    int threads = 1, pp = 128, tg = 32, reps = 3, verify = 0;
    for (int i = 2; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--threads")) threads = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--pp")) pp = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--tg")) tg = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--reps")) reps = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--verify")) verify = atoi(argv[i + 1]);
    }
    if (verify < 0 || verify > 64 || reps < 1) {
        fprintf(stderr, "bench_llm: --verify takes 1..64 tokens, --reps at least 1\n");
        return 2;
    }
    if (verify) pp = 64, tg = verify, threads = 1;
    inf_error err;
    inf_llm_model *m;
    inf_llm_context *c;
    if (inf_llm_model_load(argv[1], &m, &err)) {
        fprintf(stderr, "%s\n", err.message);
        return 1;
    }
    const inf_llm_model_info *I = inf_llm_model_get_info(m);
    inf_llm_context_options o;
    inf_llm_context_options_init(&o);
    o.n_threads = threads;
    o.n_ctx = pp + tg + 8;
    o.n_batch = pp > 0 ? pp : 1;
    o.n_logits = verify > 0 ? verify : 0;
    if (inf_llm_context_new(m, &o, &c, &err)) {
        fprintf(stderr, "%s\n", err.message);
        return 1;
    }
    int32_t *toks = malloc(sizeof(int32_t) * (size_t)(pp + tg + 1));
    for (int i = 0; i < pp + tg + 1; i++) toks[i] = (int32_t)((i * 7919u + 13) % (unsigned)I->n_vocab);
    const float *l;
    if (verify) {
        int rc = verify_cost(argv[1], c, toks, pp, verify, reps);
        free(toks);
        inf_llm_context_free(c);
        inf_llm_model_free(m);
        return rc;
    }
    double best_pp = 1e30, best_tg = 1e30, cpu_pp = 1e30, cpu_tg = 1e30, sum_pp = 0, sum_tg = 0;
    for (int r = 0; r < reps + 1; r++) { /* the first repetition warms the page cache */
        inf_llm_context_rewind(c, 0, NULL);
        double t0 = now(), c0 = proc_cpu_now();
        if (pp > 0 && inf_llm_context_eval(c, toks, pp, false, &l, &err)) break;
        double t1 = now(), c1 = proc_cpu_now();
        /* tg decode steps from an empty cache, every one timed (as llama-bench's test_gen): bench/llm/cpu_time.py
         * divides a repetition's whole CPU time by pp and tg, so an untimed extra step here (there was one, a
         * decode at position 0 before the timed ones) would count against both figures */
        inf_llm_context_rewind(c, 0, NULL);
        double t2 = now(), c2 = proc_cpu_now();
        for (int i = 0; i < tg; i++) inf_llm_context_eval(c, &toks[1 + i], 1, false, &l, &err);
        double t3 = now(), c3 = proc_cpu_now();
        if (r == 0) continue;
        if (t1 - t0 < best_pp) best_pp = t1 - t0;
        if (t3 - t2 < best_tg) best_tg = t3 - t2;
        if (c1 - c0 < cpu_pp) cpu_pp = c1 - c0;
        if (c3 - c2 < cpu_tg) cpu_tg = c3 - c2;
        sum_pp += c1 - c0, sum_tg += c3 - c2;
    }
    double bw = getenv("BENCH_LLM_NO_BW") ? 0 : read_bandwidth_gbs();
    printf("{\"model\":\"%s\",\"threads\":%d,\"pp\":%d,\"tg\":%d,\"pp_tokens_per_s\":%.2f,\"tg_tokens_per_s\":%.2f,"
           "\"bytes_per_token\":%llu,\"read_gb_per_s\":%.2f,\"tg_bound_tokens_per_s\":%.1f,"
           "\"pp_tokens_per_cpu_s\":%.2f,\"tg_tokens_per_cpu_s\":%.2f,\"pp_cpu_s_sum\":%.6f,\"tg_cpu_s_sum\":%.6f}\n",
           argv[1], threads, pp, tg, pp > 0 ? pp / best_pp : 0.0, tg / best_tg, (unsigned long long)I->bytes_per_token,
           bw, bw * 1e9 / (double)I->bytes_per_token, pp > 0 ? pp / cpu_pp : 0.0, tg > 0 ? tg / cpu_tg : 0.0, sum_pp,
           sum_tg);
    free(toks);
    inf_llm_context_free(c);
    inf_llm_model_free(m);
    return 0;
}
