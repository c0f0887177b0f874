/*
 * npy_compare.c -- `npy_compare GOT.npy WANT.npy [RTOL ATOL]`: exits 0 when
 * the arrays have the same dtype and shape and every element is within
 * |got - want| <= atol + rtol * |want| (defaults 1e-4, 1e-5); else prints why
 * and exits 1.  Used by the model tests.
 */
#include <stdlib.h>
#include <string.h>

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
    /* .npy, or .pb (TensorProto; "*.seq.pb": SequenceProto, e.g. ZipMap's maps) */
    int hint1 = strstr(argv[1], ".seq.pb") ? INF_KIND_SEQUENCE : INF_KIND_TENSOR;
    int hint2 = strstr(argv[2], ".seq.pb") ? INF_KIND_SEQUENCE : INF_KIND_TENSOR;
    if (cli_load_value(argv[1], hint1, &got, &err) != INF_OK || cli_load_value(argv[2], hint2, &want, &err) != INF_OK) {
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
