/*
 * test_formats.c -- tensor files: .npy (NumPy) and .pb (ONNX TensorProto,
 * SequenceProto, OptionalProto) readers and writers, and their errors.
 */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "core/core.h"
#include "test.h"

static void tmp_path(char *buf, size_t size, const char *name) {
    snprintf(buf, size, "/tmp/infera_test_%d_%s", (int)getpid(), name);
}

static void write_bytes(const char *path, const void *data, size_t n) {
    FILE *f = fopen(path, "wb");
    fwrite(data, 1, n, f);
    fclose(f);
}

/* A version-1.0 .npy file with the given header dict and payload. */
static void write_npy(const char *path, const char *dict, const void *payload, size_t n) {
    char hdr[256];
    int len = snprintf(hdr, sizeof hdr, "%s\n", dict);
    unsigned char pre[10] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, (unsigned char)len, 0};
    FILE *f = fopen(path, "wb");
    fwrite(pre, 1, 10, f);
    fwrite(hdr, 1, (size_t)len, f);
    if (n) fwrite(payload, 1, n, f);
    fclose(f);
}

TEST(npy_round_trip_every_numeric_dtype) {
    inf_dtype types[] = {INF_DTYPE_F32, INF_DTYPE_F64, INF_DTYPE_F16, INF_DTYPE_I8,  INF_DTYPE_I16, INF_DTYPE_I32,
                         INF_DTYPE_I64, INF_DTYPE_U8,  INF_DTYPE_U16, INF_DTYPE_U32, INF_DTYPE_U64, INF_DTYPE_BOOL};
    char path[256];
    tmp_path(path, sizeof path, "rt.npy");
    for (size_t k = 0; k < sizeof types / sizeof types[0]; k++) {
        for (int ndim = 0; ndim <= 3; ndim++) {
            int64_t dims[3] = {2, 3, 5};
            inf_tensor *t, *back;
            ASSERT_OK(inf_tensor_new(types[k], ndim, dims, &t));
            unsigned char *b = t->data;
            for (size_t i = 0; i < inf_tensor_nbytes(t); i++) b[i] = types[k] == INF_DTYPE_BOOL ? (i % 3 == 0) : (unsigned char)(i * 7 + 1);
            inf_error err;
            ASSERT_OK(inf_tensor_save_npy(path, t, &err));
            ASSERT_OK(inf_tensor_load_npy(path, &back, &err));
            ASSERT_EQ(back->dtype, types[k]);
            ASSERT_EQ(back->ndim, ndim);
            for (int i = 0; i < ndim; i++) ASSERT_EQ(back->dims[i], dims[i]);
            ASSERT_EQ(memcmp(back->data, t->data, inf_tensor_nbytes(t)), 0);
            inf_tensor_free(t);
            inf_tensor_free(back);
        }
    }
    unlink(path);
}

TEST(npy_rejects_bad_files_with_a_reason) {
    char path[256];
    tmp_path(path, sizeof path, "bad.npy");
    inf_tensor *t = NULL;
    inf_error err;
    write_bytes(path, "hello world", 11);
    ASSERT_STATUS(inf_tensor_load_npy(path, &t, &err), INF_EFORMAT);
    ASSERT_CONTAINS(err.message, "bad magic");
    static const float four[4] = {1, 2, 3, 4};
    write_npy(path, "{'descr': '>f4', 'fortran_order': False, 'shape': (2,), }", four, 8);
    ASSERT_STATUS(inf_tensor_load_npy(path, &t, &err), INF_EUNSUPPORTED);
    ASSERT_CONTAINS(err.message, ">f4");
    write_npy(path, "{'descr': '<f4', 'fortran_order': True, 'shape': (2,2), }", four, 16);
    ASSERT_STATUS(inf_tensor_load_npy(path, &t, &err), INF_EUNSUPPORTED);
    ASSERT_CONTAINS(err.message, "Fortran");
    write_npy(path, "{'descr': '<f4', 'fortran_order': False, 'shape': (4,), }", four, 4);
    ASSERT_STATUS(inf_tensor_load_npy(path, &t, &err), INF_EFORMAT);
    ASSERT_CONTAINS(err.message, "shape needs 16 bytes of data but the file holds 4");
    /* refused before any allocation: a shape of 4 GB in a file of 100 bytes (fuzz_npy,
     * regressions/npy-huge-shape.npy), one whose byte count overflows, a header longer than the file */
    write_npy(path, "{'descr': '<f4', 'fortran_order': False, 'shape': (1000000000,), }", four, 4);
    ASSERT_STATUS(inf_tensor_load_npy(path, &t, &err), INF_EFORMAT);
    ASSERT_CONTAINS(err.message, "shape needs 4000000000 bytes of data but the file holds 4");
    write_npy(path, "{'descr': '<f8', 'fortran_order': False, 'shape': (4294967296, 4294967296), }", four, 4);
    ASSERT_STATUS(inf_tensor_load_npy(path, &t, &err), INF_EFORMAT);
    ASSERT_CONTAINS(err.message, "shape needs 18446744073709551615 bytes");
    write_bytes(path, "\x93NUMPY\x02\x00\x00\x00\x10\x00{}", 14);
    ASSERT_STATUS(inf_tensor_load_npy(path, &t, &err), INF_EFORMAT);
    ASSERT_CONTAINS(err.message, ".npy header length 1048576 runs past the end of the file (14 bytes)");
    write_npy(path, "{'descr': '<f4', 'fortran_order': False}", four, 16);
    ASSERT_STATUS(inf_tensor_load_npy(path, &t, &err), INF_EFORMAT);
    ASSERT_CONTAINS(err.message, "shape");
    write_npy(path, "{'descr': '|O', 'fortran_order': False, 'shape': (2,), }", four, 16);
    ASSERT_STATUS(inf_tensor_load_npy(path, &t, &err), INF_EUNSUPPORTED);
    write_npy(path, "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }", four, 16);
    ASSERT_STATUS(inf_tensor_load_npy(path, &t, &err), INF_EFORMAT); /* trailing bytes */
    write_npy(path, "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }", four, 8);
    ASSERT_OK(inf_tensor_load_npy(path, &t, &err));
    ASSERT_NEAR(((float *)t->data)[1], 2, 0);
    inf_tensor_free(t);
    t = NULL;
    ASSERT_TRUE(t == NULL);
    ASSERT_STATUS(inf_tensor_load_npy("/nonexistent/x.npy", &t, &err), INF_ENOENT);
    unlink(path);
}

TEST(pb_round_trip_tensors_sequences_optionals) {
    char path[256];
    tmp_path(path, sizeof path, "rt.pb");
    inf_error err;
    int64_t dims[2] = {2, 2};
    inf_tensor *t, *back, *s, *seq, *none;
    ASSERT_OK(inf_tensor_new(INF_DTYPE_BF16, 2, dims, &t));
    ((uint16_t *)t->data)[3] = inf_f32_to_bf16(2.5f);
    ASSERT_OK(inf_tensor_save_pb(path, "x", t, 0, &err));
    ASSERT_OK(inf_tensor_load_pb(path, INF_KIND_TENSOR, &back, &err));
    ASSERT_EQ(back->dtype, INF_DTYPE_BF16); /* keeps its dtype */
    ASSERT_NEAR(inf_bf16_to_f32(((uint16_t *)back->data)[3]), 2.5, 0);
    inf_tensor_free(back);

    ASSERT_OK(inf_tensor_new(INF_DTYPE_STRING, 1, dims, &s));
    ASSERT_OK(inf_tensor_set_string(s, 1, "hello", 5));
    ASSERT_OK(inf_tensor_new_sequence(INF_DTYPE_BF16, &seq));
    ASSERT_OK(inf_tensor_sequence_append(seq, t));
    ASSERT_OK(inf_tensor_save_pb(path, "seq", seq, 0, &err));
    ASSERT_OK(inf_tensor_load_pb(path, INF_KIND_SEQUENCE, &back, &err));
    ASSERT_EQ(back->kind, INF_KIND_SEQUENCE);
    ASSERT_EQ(back->n_items, 1);
    ASSERT_EQ(back->items[0]->dtype, INF_DTYPE_BF16);
    inf_tensor_free(back);

    ASSERT_OK(inf_tensor_save_pb(path, "opt", s, 1, &err));
    ASSERT_OK(inf_tensor_load_pb(path, INF_KIND_NONE, &back, &err));
    ASSERT_EQ(back->kind, INF_KIND_TENSOR);
    ASSERT_STR_EQ(((char **)back->data)[1], "hello");
    inf_tensor_free(back);

    ASSERT_OK(inf_tensor_new_none(&none));
    ASSERT_OK(inf_tensor_save_pb(path, "empty", none, 1, &err));
    ASSERT_OK(inf_tensor_load_pb(path, INF_KIND_NONE, &back, &err));
    ASSERT_EQ(back->kind, INF_KIND_NONE);
    inf_tensor_free(back);
    inf_tensor_free(none);
    inf_tensor_free(s);
    inf_tensor_free(seq);
    unlink(path);
}

TEST(pb_rejects_corrupt_and_inconsistent_tensors) {
    char path[256];
    tmp_path(path, sizeof path, "bad.pb");
    inf_tensor *t = NULL;
    inf_error err;
    write_bytes(path, "\xff\xff\xff\xff\xff", 5);
    ASSERT_STATUS(inf_tensor_load_pb(path, INF_KIND_TENSOR, &t, &err), INF_EFORMAT);
    /* dims {4}, float, raw_data of 8 bytes: the payload does not fit the shape */
    static const unsigned char short_raw[] = {0x08, 0x04, 0x10, 0x01, 0x4a, 0x08, 0, 0, 0, 0, 0, 0, 0, 0};
    write_bytes(path, short_raw, sizeof short_raw);
    ASSERT_STATUS(inf_tensor_load_pb(path, INF_KIND_TENSOR, &t, &err), INF_EFORMAT);
    ASSERT_CONTAINS(err.message, "raw_data");
    /* data type 99 */
    static const unsigned char bad_type[] = {0x08, 0x01, 0x10, 0x63};
    write_bytes(path, bad_type, sizeof bad_type);
    ASSERT_STATUS(inf_tensor_load_pb(path, INF_KIND_TENSOR, &t, &err), INF_EFORMAT);
    ASSERT_CONTAINS(err.message, "data type");
    ASSERT_TRUE(t == NULL);
    unlink(path);
}
