/*
 * c_run_loop.c -- the C side of the Python overhead benchmark: times
 * inf_session_run on one model and one .npy input (warm, same shapes), the
 * call that infera.Model.run wraps.  Prints nanoseconds per call.
 * Usage: c_run_loop MODEL INPUT.npy N
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <infera/session.h>

static double now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e9 + ts.tv_nsec;
}

int main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: c_run_loop MODEL INPUT.npy N\n");
        return 2;
    }
    inf_error err = {0};
    inf_model *model = NULL;
    inf_session *s = NULL;
    inf_tensor *x = NULL;
    if (inf_model_load(argv[1], NULL, &model, &err) || inf_session_new(model, NULL, &s, &err) ||
        inf_tensor_load_npy(argv[2], &x, &err)) {
        fprintf(stderr, "c_run_loop: %s\n", err.message);
        return 1;
    }
    long n = atol(argv[3]);
    const inf_tensor *in[1] = {x};
    inf_tensor *const *out;
    for (int i = 0; i < 200; i++)
        inf_session_run(s, in, &out, &err);
    double t0 = now_ns();
    for (long i = 0; i < n; i++)
        if (inf_session_run(s, in, &out, &err)) {
            fprintf(stderr, "c_run_loop: %s\n", err.message);
            return 1;
        }
    printf("%.1f\n", (now_ns() - t0) / (double)n);
    inf_tensor_free(x);
    inf_session_free(s);
    inf_model_free(model);
    return 0;
}
