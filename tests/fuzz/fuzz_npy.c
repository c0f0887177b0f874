/*
 * fuzz_npy.c -- libFuzzer target for the .npy reader (src/core/npy.c,
 * inf_tensor_load_npy: `infera run --input x.npy`, calibration data of
 * `infera quantize`).  Any file must load or be refused with an error: no
 * crash, no leak, no read past the data, and no allocation bigger than the
 * file could fill (the allocator aborts on a block larger than the file plus
 * FUZZ_SLACK: a 100-byte file must not make the process ask for gigabytes).
 * A tensor that loads has exactly the bytes its shape needs.
 * Seeds: the .npy files of examples/ and tests/.  Built with -DINFERA_FUZZ=ON.
 */
#include <stdlib.h>

#include "core/core.h"
#include "memfile.h"

#define FUZZ_SLACK 4096

static size_t file_size;

static void *file_bounded_realloc(void *ud, void *ptr, size_t size) {
    (void)ud;
    if (size == 0) {
        free(ptr);
        return NULL;
    }
    if (size > file_size + FUZZ_SLACK)
        abort(); /* more than the file could fill */
    return realloc(ptr, size);
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc, (void)argv;
    inf_set_allocator(file_bounded_realloc, NULL);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    file_size = size;
    char path[64];
    int fd = fuzz_memfile(data, size, path, sizeof path);
    if (fd < 0)
        return 0;
    inf_tensor *t = NULL;
    inf_error err;
    if (inf_tensor_load_npy(path, &t, &err) == INF_OK) {
        if (inf_tensor_nbytes(t) > size)
            abort(); /* the data is in the file */
        inf_tensor_free(t);
    }
    close(fd);
    return 0;
}
