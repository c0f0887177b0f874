/*
 * npy_compare.c -- `npy_compare GOT.npy WANT.npy [RTOL ATOL]`: exits 0 when
 * the arrays have the same dtype and shape and every element is within
 * |got - want| <= atol + rtol * |want| (defaults 1e-4, 1e-5); else prints why
 * and exits 1.  Used by the model tests.
 */
#include <stdlib.h>

#include "cli/cli.h"

int main(int argc, char **argv) {
    if (argc != 3 && argc != 5) {
        fprintf(stderr, "usage: npy_compare GOT.npy WANT.npy [RTOL ATOL]\n");
        return 2;
    }
    double rtol = argc == 5 ? atof(argv[3]) : 1e-4, atol = argc == 5 ? atof(argv[4]) : 1e-5;
    inf_tensor *got = NULL, *want = NULL;
    inf_error err;
    int rc = 0;
    if (inf_tensor_load_npy(argv[1], &got, &err) != INF_OK || inf_tensor_load_npy(argv[2], &want, &err) != INF_OK) {
        fprintf(stderr, "npy_compare: %s\n", err.message);
        rc = 2;
    } else {
        char why[512];
        if (!cli_values_close(got, want, rtol, atol, why, sizeof why)) {
            fprintf(stderr, "npy_compare: %s vs %s: %s\n", argv[1], argv[2], why);
            rc = 1;
        }
    }
    inf_tensor_free(got);
    inf_tensor_free(want);
    return rc;
}
