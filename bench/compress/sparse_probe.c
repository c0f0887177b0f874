/*
 * sparse_probe.c -- would a sparse kernel pay for unstructured pruning?  (bench/compress/sparse_run.sh)
 *
 *   sparse_probe K N BATCH DENSITY REPS
 *
 * Times Y[BATCH, N] = X[BATCH, K] W[K, N] + b with W kept as its nonzeros only (compressed rows of
 * W: for each input k, the (n, w) pairs), computed as BATCH-wide AXPYs on transposed activations
 * (Y^T[n, :] += w * X^T[k, :]: contiguous, vectorisable), transposes in and out included.  The
 * dense side is Infera's own Gemm on the same layer (`infera bench`, same script), so the ratio is
 * what a sparse kernel in the engine could gain.  Prints the median microseconds per call and a
 * checksum compared against a plain dense loop.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_us(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv) {
    if (argc != 6) {
        fprintf(stderr, "usage: sparse_probe K N BATCH DENSITY REPS\n");
        return 2;
    }
    int K = atoi(argv[1]), N = atoi(argv[2]), B = atoi(argv[3]), reps = atoi(argv[5]);
    double density = atof(argv[4]);
    uint64_t s = 88172645463325252ull;
#define RND() (s ^= s << 13, s ^= s >> 7, s ^= s << 17, (double)(s >> 11) / 9007199254740992.0)
    float *W = calloc((size_t)K * N, sizeof *W), *X = malloc((size_t)B * K * sizeof *X), *bias = malloc((size_t)N * sizeof *bias);
    float *XT = malloc((size_t)K * B * sizeof *XT), *YT = malloc((size_t)N * B * sizeof *YT), *Y = malloc((size_t)B * N * sizeof *Y);
    int *rowptr = malloc((size_t)(K + 1) * sizeof *rowptr), *col = malloc((size_t)K * N * sizeof *col);
    float *val = malloc((size_t)K * N * sizeof *val);
    double *t = malloc((size_t)reps * sizeof *t);
    if (!W || !X || !bias || !XT || !YT || !Y || !rowptr || !col || !val || !t) return 1;
    for (size_t i = 0; i < (size_t)K * N; i++) W[i] = RND() < density ? (float)(2 * RND() - 1) : 0;
    for (size_t i = 0; i < (size_t)B * K; i++) X[i] = (float)(2 * RND() - 1);
    for (int n = 0; n < N; n++) bias[n] = (float)RND();
    int nnz = 0;
    for (int k = 0; k < K; k++) {
        rowptr[k] = nnz;
        for (int n = 0; n < N; n++)
            if (W[(size_t)k * N + n] != 0) col[nnz] = n, val[nnz++] = W[(size_t)k * N + n];
    }
    rowptr[K] = nnz;
    for (int r = 0; r < reps; r++) {
        double a = now_us();
        for (int b = 0; b < B; b++)
            for (int k = 0; k < K; k++) XT[(size_t)k * B + b] = X[(size_t)b * K + k];
        for (int n = 0; n < N; n++)
            for (int b = 0; b < B; b++) YT[(size_t)n * B + b] = bias[n];
        for (int k = 0; k < K; k++) {
            const float *x = XT + (size_t)k * B;
            for (int e = rowptr[k]; e < rowptr[k + 1]; e++) {
                float w = val[e], *y = YT + (size_t)col[e] * B;
                for (int b = 0; b < B; b++) y[b] += w * x[b];
            }
        }
        for (int n = 0; n < N; n++)
            for (int b = 0; b < B; b++) Y[(size_t)b * N + n] = YT[(size_t)n * B + b];
        t[r] = now_us() - a;
    }
    double maxdiff = 0;
    for (int b = 0; b < B; b++)
        for (int n = 0; n < N; n++) {
            double ref = bias[n];
            for (int k = 0; k < K; k++) ref += (double)X[(size_t)b * K + k] * W[(size_t)k * N + n];
            double d = ref - Y[(size_t)b * N + n];
            if (d < 0) d = -d;
            if (d > maxdiff) maxdiff = d;
        }
    qsort(t, (size_t)reps, sizeof *t, cmp);
    printf("{\"K\":%d,\"N\":%d,\"batch\":%d,\"density\":%.3f,\"nnz\":%d,\"median_us\":%.3f,\"max_abs_diff_vs_dense\":%.3g}\n",
           K, N, B, density, nnz, t[reps / 2], maxdiff);
    return maxdiff < 1e-3 ? 0 : 1;
}
