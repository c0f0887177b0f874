/*
 * linalg.c -- the small numerical pieces the tools need, in plain C (the
 * tools never call engine kernels): a Cholesky solve for the least-squares
 * compensation of structured pruning, and a seeded generator (xorshift64*,
 * Box-Muller) so distillation is reproducible bit for bit.
 */
#include <math.h>

#include "tools/tools.h"

int inf__cholesky_solve(double *A, int n, double *B, int nrhs, double ridge) {
    /* ridge relative to the mean diagonal, so it is scale-free */
    double diag = 0;
    for (int i = 0; i < n; i++) diag += A[(size_t)i * n + i];
    double add = ridge * (diag > 0 ? diag / n : 1);
    for (int i = 0; i < n; i++) A[(size_t)i * n + i] += add;
    for (int j = 0; j < n; j++) { /* A = L L^T, L in the lower triangle */
        double *aj = A + (size_t)j * n;
        double d = aj[j];
        for (int k = 0; k < j; k++) d -= aj[k] * aj[k];
        if (!(d > 0)) return -1;
        d = sqrt(d);
        aj[j] = d;
        for (int i = j + 1; i < n; i++) {
            double *ai = A + (size_t)i * n;
            double s = ai[j];
            for (int k = 0; k < j; k++) s -= ai[k] * aj[k];
            ai[j] = s / d;
        }
    }
    for (int c = 0; c < nrhs; c++) {
        for (int i = 0; i < n; i++) { /* L y = b */
            double s = B[(size_t)i * nrhs + c];
            for (int k = 0; k < i; k++) s -= A[(size_t)i * n + k] * B[(size_t)k * nrhs + c];
            B[(size_t)i * nrhs + c] = s / A[(size_t)i * n + i];
        }
        for (int i = n - 1; i >= 0; i--) { /* L^T x = y */
            double s = B[(size_t)i * nrhs + c];
            for (int k = i + 1; k < n; k++) s -= A[(size_t)k * n + i] * B[(size_t)k * nrhs + c];
            B[(size_t)i * nrhs + c] = s / A[(size_t)i * n + i];
        }
    }
    return 0;
}

uint64_t inf__rng_next(inf__rng *r) {
    r->s ^= r->s >> 12;
    r->s ^= r->s << 25;
    r->s ^= r->s >> 27;
    return r->s * 0x2545F4914F6CDD1Dull;
}

double inf__rng_uniform(inf__rng *r) { return (double)(inf__rng_next(r) >> 11) * (1.0 / 9007199254740992.0); }

double inf__rng_normal(inf__rng *r) {
    double u = inf__rng_uniform(r), v = inf__rng_uniform(r);
    return sqrt(-2 * log(u + 1e-300)) * cos(6.283185307179586 * v);
}
