/*
 * route_bench.c -- the routed ubs2 AVX2 INT8 kernel (src/ops/x86/qgemm_ubs2_avx2.c) against ubs alone
 * (qgemm_maddubs_avx2.c) on real weights: each file packed once for INF_QGEMM_AVX2_UBS, then
 * inf__qgemm_raw_avx2ubs1 and inf__qgemm_raw_avx2ubs on the same B and random A, M rows in 24-row calls
 * (as ops/ref/qgemm_drive.c makes them), CPU time, best of 7 interleaved rounds.  Prints each weight's
 * route classes (ubs2 on both panels / first / second / neither, summed over tiles; none when the packer
 * builds no route), both rates in products per ns, and the ratio of the summed times.
 *
 *   /usr/bin/python3 bench/quant/quad_safe.py --dump /tmp/w bench/quant/out/mlp_int8_rr.onnx ...
 *   cc -O2 -std=gnu11 -Isrc -Iinclude -Ibuild/gen bench/quant/route_bench.c build/libinfera.a -lm -lpthread -ldl \
 *       -o /tmp/route_bench && /tmp/route_bench 384 /tmp/w/[a-z]*.bin
 * (file names TAG_I_K_N.bin: raw int8 [K, N]).  x86-64 with AVX2 only.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/core.h"
#include "ops/qgemm.h"

typedef void (*raw_fn)(const inf__qgemm_b *, int64_t, const uint8_t *, int64_t, const int32_t *, int32_t *, int64_t);

static double cpu_now(void) {
    struct timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* Best seconds per pass of fn over the m rows. */
static double time_pass(raw_fn fn, const inf__qgemm_b *b, int64_t m, const uint8_t *a, int32_t *c, int reps) {
    double t0 = cpu_now();
    for (int r = 0; r < reps; r++)
        for (int64_t i = 0; i < m; i += 24)
            fn(b, m - i < 24 ? m - i : 24, a + i * b->kp, b->kp, NULL, c + i * b->np, b->np);
    return (cpu_now() - t0) / reps;
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: route_bench M WEIGHT.bin ...\n");
        return 2;
    }
    int64_t m = atoll(argv[1]);
    double total[2] = {0, 0};
    for (int fi = 2; fi < argc; fi++) {
        const char *base = strrchr(argv[fi], '/') ? strrchr(argv[fi], '/') + 1 : argv[fi];
        long long k = 0, n = 0;
        int idx;
        char tag[64];
        if (sscanf(base, "%63[^_]_%d_%lld_%lld", tag, &idx, &k, &n) != 4 || k <= 0 || n <= 0) {
            fprintf(stderr, "%s: not TAG_I_K_N.bin\n", base);
            return 2;
        }
        int8_t *w = malloc((size_t)(k * n));
        FILE *f = fopen(argv[fi], "rb");
        if (!w || !f || fread(w, 1, (size_t)(k * n), f) != (size_t)(k * n)) {
            fprintf(stderr, "%s: cannot read %lld bytes\n", argv[fi], k * n);
            return 1;
        }
        fclose(f);
        inf__qgemm_b b;
        void *mem = inf__aligned_alloc(inf__qgemm_pack_b_bytes(INF_QGEMM_AVX2_UBS, k, n));
        uint8_t *a = malloc((size_t)(m * ((k + 3) / 4 * 4)));
        int32_t *c = malloc((size_t)(m * ((n + 15) / 16 * 16)) * sizeof *c);
        if (!mem || !a || !c) return 1;
        inf__qgemm_pack_b_into(mem, INF_QGEMM_AVX2_UBS, k, n, w, INF_DTYPE_I8, n, false, NULL, 1, &b);
        for (int64_t i = 0; i < m * b.kp; i++)
            a[i] = (uint8_t)rand();
        long cls[4] = {0, 0, 0, 0};
        for (int64_t t = 0; b.route && t < (b.np / 8 + 1) / 2; t++)
            for (int q = 0; q < 4; q++)
                cls[q] += b.route[t * (INF_QGEMM_ROUTE_HDR + b.kp / 8) + q];
        int reps = (int)(2e9 / (double)(m * k * n)) + 1;
        double best[2] = {1e9, 1e9};
        for (int round = 0; round < 7; round++)
            for (int v = 0; v < 2; v++) {
                double t = time_pass(v ? inf__qgemm_raw_avx2ubs : inf__qgemm_raw_avx2ubs1, &b, m, a, c, reps);
                if (t < best[v]) best[v] = t;
            }
        double prods = (double)m * (double)k * (double)n;
        printf("%-24s K %5lld N %5lld  classes %ld/%ld/%ld/%ld%s  ubs %6.1f  routed %6.1f products/ns  %.3fx\n", base,
               k, n, cls[0], cls[1], cls[2], cls[3], b.route ? "" : " (no route)", prods / best[0] / 1e9,
               prods / best[1] / 1e9, best[0] / best[1]);
        total[0] += best[0], total[1] += best[1];
        free(w), free(a), free(c);
        inf__aligned_free(mem);
    }
    printf("all: ubs %.1f us, routed %.1f us per pass: %.3fx\n", total[0] * 1e6, total[1] * 1e6, total[0] / total[1]);
    return 0;
}
