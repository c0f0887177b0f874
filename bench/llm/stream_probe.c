/*
 * stream_probe.c -- how fast one thread streams f32 weight rows through a
 * mat-vec (decoding's pattern), by memory kind and read pattern, and whether
 * a part of the weights read with ordinary loads stays in L3 from pass to
 * pass while the rest is read with non-temporal prefetches (issue 28: F32
 * decode at one thread sits at one core's DRAM bandwidth).
 *
 * usage: stream_probe [--mb N] [--k K] [--reps N] [--file F.gguf]
 *                     [--resident "MB MB ..."] [--kinds "anon4k anon2m file"]
 * A buffer of N MiB (default 538: SmolLM2-135M F32's weights per token) is
 * read as rows of K floats (default 576), each row dotted with one vector,
 * the way a decode step reads its weights.  Kernels (interleaved, --reps
 * rounds, each kernel's second of two passes in a row, the thread's CPU time,
 * GB/s best and median):
 *   plain  4 accumulators, no software prefetch (llama.cpp's ggml_vec_dot_f32)
 *   pf     2 accumulators, prefetcht0 4 KiB ahead (Infera's f32 row kernel)
 *   nta    the same with prefetchnta
 *   resR   the first R MiB with pf, the rest with nta (STREAM_FLUSH=1: with
 *          pf, each line flushed with clflushopt once read): R MiB that an L3
 *          keeps across passes read at L3 speed; prints the two parts' rates
 *          apart
 * Memory kinds: anon4k (anonymous, MADV_NOHUGEPAGE), anon2m (anonymous,
 * MADV_HUGEPAGE: 2 MiB pages where the kernel gives them), file (the GGUF
 * mapped MAP_PRIVATE, as src/llm/gguf.c does; its first N MiB), shared
 * (MAP_SHARED | MAP_POPULATE, as llama.cpp maps it).  Each kind's line says
 * how much of it /proc/self/smaps shows as huge pages; kinds are interleaved
 * too (rep by rep).  The F32 file is 515 MiB: --mb 510 with file kinds.
 * Results: bench/llm/RESULTS.md (Zen 5, session 17).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <fcntl.h>
#include <immintrin.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define AHEAD 4096
#define MAXR 8
#define MAXREPS 64
#define MAXKINDS 4

static double cpu_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

typedef enum { PF_NONE, PF_T0, PF_NTA, PF_FLUSH } pf_kind;

/* rows [0, n) of k floats dotted with x, into y */
__attribute__((target("avx512f"))) static void rows_plain(const float *w, int64_t n, int k, const float *x, float *y) {
    for (int64_t r = 0; r < n; r++, w += k) {
        __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
        int i = 0;
        for (; i + 64 <= k; i += 64) {
            a0 = _mm512_fmadd_ps(_mm512_loadu_ps(w + i), _mm512_loadu_ps(x + i), a0);
            a1 = _mm512_fmadd_ps(_mm512_loadu_ps(w + i + 16), _mm512_loadu_ps(x + i + 16), a1);
            a2 = _mm512_fmadd_ps(_mm512_loadu_ps(w + i + 32), _mm512_loadu_ps(x + i + 32), a2);
            a3 = _mm512_fmadd_ps(_mm512_loadu_ps(w + i + 48), _mm512_loadu_ps(x + i + 48), a3);
        }
        for (; i + 16 <= k; i += 16)
            a0 = _mm512_fmadd_ps(_mm512_loadu_ps(w + i), _mm512_loadu_ps(x + i), a0);
        y[r & 1023] = _mm512_reduce_add_ps(_mm512_add_ps(_mm512_add_ps(a0, a1), _mm512_add_ps(a2, a3)));
    }
}

__attribute__((target("avx512f,clflushopt"))) static void rows_pf(const float *w, int64_t n, int k, const float *x,
                                                                  float *y, pf_kind pf) {
    const float *w0 = w;
    for (int64_t r = 0; r < n; r++, w += k) {
        __m512 a0 = _mm512_setzero_ps(), a1 = a0;
        int i = 0;
        for (; i + 32 <= k; i += 32) {
            const char *p = (const char *)(w + i) + AHEAD;
            if (pf == PF_FLUSH) { /* the lines just read leave every cache (they cannot evict the resident part) */
                _mm_prefetch(p, _MM_HINT_T0);
                _mm_prefetch(p + 64, _MM_HINT_T0);
                if (w + i - 64 >= w0) {
                    _mm_clflushopt((void *)(w + i - 64));
                    _mm_clflushopt((void *)(w + i - 48));
                }
            } else if (pf == PF_NTA) {
                _mm_prefetch(p, _MM_HINT_NTA);
                _mm_prefetch(p + 64, _MM_HINT_NTA);
            } else {
                _mm_prefetch(p, _MM_HINT_T0);
                _mm_prefetch(p + 64, _MM_HINT_T0);
            }
            a0 = _mm512_fmadd_ps(_mm512_loadu_ps(w + i), _mm512_loadu_ps(x + i), a0);
            a1 = _mm512_fmadd_ps(_mm512_loadu_ps(w + i + 16), _mm512_loadu_ps(x + i + 16), a1);
        }
        for (; i + 16 <= k; i += 16)
            a0 = _mm512_fmadd_ps(_mm512_loadu_ps(w + i), _mm512_loadu_ps(x + i), a0);
        y[r & 1023] = _mm512_reduce_add_ps(_mm512_add_ps(a0, a1));
    }
}

static double hugepage_kb(const void *addr, const char *field) {
    FILE *f = fopen("/proc/self/smaps", "r");
    if (!f) return -1;
    char line[512];
    int in = 0;
    double kb = -1;
    size_t flen = strlen(field);
    while (fgets(line, sizeof line, f)) {
        unsigned long lo, hi;
        if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2 && strchr(line, '-') < strchr(line, ' ')) {
            in = (uintptr_t)addr >= lo && (uintptr_t)addr < hi;
            continue;
        }
        if (in && !strncmp(line, field, flen)) {
            kb = atof(line + flen + 1);
            break;
        }
    }
    fclose(f);
    return kb;
}

static int cmpd(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

typedef struct {
    char name[32];
    double t[MAXREPS], t_res[MAXREPS], t_str[MAXREPS];
} result;

static void report(const result *r, int reps, double bytes, double res_bytes) {
    double a[MAXREPS];
    memcpy(a, r->t, sizeof(double) * reps);
    qsort(a, reps, sizeof(double), cmpd);
    printf("  %-10s %6.2f GB/s best  %6.2f median", r->name, bytes / a[0] / 1e9, bytes / a[reps / 2] / 1e9);
    if (res_bytes > 0) {
        double b[MAXREPS], c[MAXREPS];
        memcpy(b, r->t_res, sizeof(double) * reps);
        memcpy(c, r->t_str, sizeof(double) * reps);
        qsort(b, reps, sizeof(double), cmpd);
        qsort(c, reps, sizeof(double), cmpd);
        printf("   (resident part %6.2f GB/s median, streamed part %6.2f)", res_bytes / b[reps / 2] / 1e9,
               (bytes - res_bytes) / c[reps / 2] / 1e9);
    }
    printf("\n");
}

int main(int argc, char **argv) {
    double mb = 538;
    int k = 576, reps = 7;
    const char *file = NULL, *kinds = "anon4k anon2m", *resident = "8 16 24";
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--mb"))
            mb = atof(argv[i + 1]);
        else if (!strcmp(argv[i], "--k"))
            k = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--reps"))
            reps = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--file"))
            file = argv[i + 1];
        else if (!strcmp(argv[i], "--kinds"))
            kinds = argv[i + 1];
        else if (!strcmp(argv[i], "--resident"))
            resident = argv[i + 1];
    }
    if (reps < 1 || reps > MAXREPS || k < 16 || k % 16) {
        fprintf(stderr, "stream_probe: --reps 1..%d, --k a multiple of 16\n", MAXREPS);
        return 2;
    }
    int flush = getenv("STREAM_FLUSH") != NULL; /* the streamed part flushed line by line instead of nta */
    double res_mb[MAXR];
    int nres = 0;
    for (const char *p = resident; *p && nres < MAXR;) {
        char *e;
        double v = strtod(p, &e);
        if (e == p) break;
        res_mb[nres++] = v;
        p = e;
    }
    int64_t rows = (int64_t)(mb * 1048576.0 / (4.0 * k));
    size_t bytes = (size_t)rows * k * 4, map_bytes = bytes + ((size_t)2 << 20);
    float *x = aligned_alloc(64, sizeof(float) * k), y[1024];
    if (!x) return perror("aligned_alloc"), 1;
    for (int i = 0; i < k; i++)
        x[i] = 1.0f / (i + 1);

    char kl[256];
    snprintf(kl, sizeof kl, "%s", kinds);
    struct {
        const char *name;
        float *w;
        void *base;
        size_t len;
        result R[3 + MAXR];
    } K[MAXKINDS];
    int nkinds = 0, nk = 3 + nres;
    for (char *kind = strtok(kl, " "); kind && nkinds < MAXKINDS; kind = strtok(NULL, " ")) {
        float *w = NULL;
        void *base = NULL;
        size_t len = map_bytes;
        if (!strcmp(kind, "anon4k") || !strcmp(kind, "anon2m")) {
            base = mmap(NULL, map_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
            if (base == MAP_FAILED) return perror("mmap"), 1;
            char *a = (char *)(((uintptr_t)base + ((1u << 21) - 1)) & ~(uintptr_t)((1u << 21) - 1));
            madvise(base, map_bytes, !strcmp(kind, "anon2m") ? MADV_HUGEPAGE : MADV_NOHUGEPAGE);
            w = (float *)a;
            for (size_t i = 0; i < bytes / 4; i++)
                w[i] = (float)(i % 977) * 1e-3f;
        } else if (file && (!strcmp(kind, "file") || !strcmp(kind, "shared"))) {
            int fd = open(file, O_RDONLY);
            struct stat st;
            if (fd < 0 || fstat(fd, &st)) return perror(file), 1;
            if ((size_t)st.st_size < bytes) {
                fprintf(stderr, "%s: smaller than %.0f MiB\n", file, mb);
                return 1;
            }
            len = (size_t)st.st_size;
            int shared = !strcmp(kind, "shared");
            if (shared) posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
            base = mmap(NULL, len, PROT_READ, shared ? MAP_SHARED | MAP_POPULATE : MAP_PRIVATE, fd, 0);
            close(fd);
            if (base == MAP_FAILED) return perror("mmap"), 1;
            w = base;
        } else {
            continue;
        }
        rows_plain(w, rows, k, x, y); /* fault it in */
        K[nkinds].name = kind, K[nkinds].w = w, K[nkinds].base = base, K[nkinds].len = len;
        result *R = K[nkinds].R;
        snprintf(R[0].name, 32, "plain");
        snprintf(R[1].name, 32, "pf");
        snprintf(R[2].name, 32, "nta");
        for (int i = 0; i < nres; i++)
            snprintf(R[3 + i].name, 32, "res%.0f", res_mb[i]);
        nkinds++;
    }
    for (int rep = 0; rep < reps; rep++) /* kinds and kernels interleaved */
        for (int q = 0; q < nkinds; q++)
            for (int c = 0; c < nk; c++)
                for (int pass = 0; pass < 2; pass++) { /* the first pass leaves the caches as this kernel does */
                    result *R = K[q].R;
                    const float *w = K[q].w;
                    double t0 = cpu_now();
                    if (c == 0)
                        rows_plain(w, rows, k, x, y);
                    else if (c < 3)
                        rows_pf(w, rows, k, x, y, c == 1 ? PF_T0 : PF_NTA);
                    else {
                        int64_t rr = (int64_t)(res_mb[c - 3] * 1048576.0 / (4.0 * k));
                        if (rr > rows) rr = rows;
                        rows_pf(w, rr, k, x, y, PF_T0);
                        double t1 = cpu_now();
                        rows_pf(w + (size_t)rr * k, rows - rr, k, x, y, flush ? PF_FLUSH : PF_NTA);
                        R[c].t_res[rep] = t1 - t0;
                        R[c].t_str[rep] = cpu_now() - t1;
                    }
                    R[c].t[rep] = cpu_now() - t0;
                }
    for (int q = 0; q < nkinds; q++) {
        printf("%s: %.0f MiB, rows of %d floats, %.0f kB AnonHugePages, %.0f kB FilePmdMapped\n", K[q].name,
               bytes / 1048576.0, k, hugepage_kb(K[q].w, "AnonHugePages:"), hugepage_kb(K[q].w, "FilePmdMapped:"));
        for (int c = 0; c < nk; c++) {
            int64_t rr = c >= 3 ? (int64_t)(res_mb[c - 3] * 1048576.0 / (4.0 * k)) : 0;
            report(&K[q].R[c], reps, (double)bytes, c >= 3 ? (double)rr * k * 4 : 0);
        }
        munmap(K[q].base, K[q].len);
    }
    printf("(y %g)\n", y[0] + y[1023]);
    free(x);
    return 0;
}
