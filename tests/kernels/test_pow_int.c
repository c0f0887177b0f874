/*
 * test_pow_int.c -- float32 Pow with a one-element exponent 2, 3 or 4, which
 * the Pow kernel computes by multiplication in double instead of calling
 * pow() (ops/ref/binary.c, pow_int_range), against libm: (float)pow(x, e)
 * in double, the general path's result.
 *
 * tests/models/pow_int.onnx (tests/models/gen_pow_int_model.py), loaded
 * without the optimizer (Pow(x, 2) stays a Pow): y2, y3, y4 (int64
 * exponent), y5 = Pow(x, 3.5) (the pow() path, as a control), ye = Pow(x, e)
 * with e a run-time input (3, then 2).  x: every 997th float bit pattern
 * (both signs, every exponent: denormals, overflow to inf, +-inf, NaN) and
 * edge values.  Every output must have pow()'s bits (NaN for NaN), on 1 and
 * 2 threads.  Prints one line per check and "N passed, M failed".
 */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "infera/model.h"
#include "infera/session.h"

static int n_passed, n_failed;

static bool same_float(float a, float b) { return (isnan(a) && isnan(b)) || !memcmp(&a, &b, sizeof a); }

/* Every output of one run against (float)pow(x, exponent). */
static void check_outputs(inf_tensor *const *o, const float *x, int64_t n, double e_runtime, int threads) {
    static const char *const names[5] = {"y2", "y3", "y4", "y5", "ye"};
    const double exps[5] = {2, 3, 4, 3.5, e_runtime};
    for (int k = 0; k < 5; k++) {
        const float *y = o[k]->data;
        int64_t bad = -1;
        for (int64_t i = 0; i < n && bad < 0; i++)
            if (!same_float(y[i], (float)pow((double)x[i], exps[k]))) bad = i;
        printf("%s %s = Pow(x, %g), %d thread(s): pow()'s bits for %lld values", bad < 0 ? "ok  " : "FAIL", names[k],
               exps[k], threads, (long long)n);
        if (bad >= 0) printf(" (x = %.9g: %.9g, pow %.9g)", x[bad], y[bad], (float)pow((double)x[bad], exps[k]));
        printf("\n");
        bad < 0 ? n_passed++ : n_failed++;
    }
}

int main(void) {
    static const float edges[] = {0.0f,    -0.0f,    INFINITY, -INFINITY, NAN,     1e-45f, -1e-45f, 1.0f, -1.0f,
                                  3.4e38f, -3.4e38f, 6.98e12f, -6.98e12f, 1.8e19f, 1e-13f, 2.5f,    -2.5f};
    size_t n_edges = sizeof edges / sizeof edges[0], n = n_edges + (1ull << 32) / 997 + 1;
    float *x = malloc(n * sizeof *x);
    if (!x) {
        printf("out of memory\n0 passed, 1 failed\n");
        return 1;
    }
    size_t k = 0;
    for (size_t i = 0; i < n_edges; i++) x[k++] = edges[i];
    for (uint64_t b = 0; b < (1ull << 32); b += 997) {
        uint32_t u = (uint32_t)b;
        memcpy(&x[k++], &u, sizeof u);
    }
    char path[1024];
    snprintf(path, sizeof path, "%s/tests/models/pow_int.onnx", INFERA_SOURCE_DIR);
    inf_model_options mo = {.no_optimize = 1};
    inf_model *m = NULL;
    inf_error err = {0};
    if (inf_model_load(path, &mo, &m, &err) != INF_OK) {
        printf("FAIL load %s: %s\n0 passed, 1 failed\n", path, err.message);
        free(x);
        return 1;
    }
    int64_t dims[1] = {(int64_t)k}, one = 1;
    for (int threads = 1; threads <= 2; threads++)
        for (int r = 0; r < 2; r++) {
            float e = r ? 2.0f : 3.0f;
            inf_tensor tx, te;
            inf_tensor_init_view(&tx, INF_DTYPE_F32, 1, dims, x);
            inf_tensor_init_view(&te, INF_DTYPE_F32, 1, &one, &e);
            const inf_tensor *in[2] = {&tx, &te};
            inf_session_options so = {.n_threads = threads};
            inf_session *s = NULL;
            inf_tensor *const *o;
            if (inf_session_new(m, &so, &s, &err) != INF_OK || inf_session_run(s, in, &o, &err) != INF_OK) {
                printf("FAIL run (%d threads): %s\n", threads, err.message);
                n_failed++;
            } else {
                check_outputs(o, x, (int64_t)k, e, threads);
            }
            inf_session_free(s);
        }
    inf_model_free(m);
    free(x);
    printf("%d passed, %d failed\n", n_passed, n_failed);
    return n_failed ? 1 : 0;
}
