/*
 * test_constant_inputs.c -- kernels that prepare constant inputs at load.
 *
 * BatchNormalization computes its per-channel coefficients once when scale,
 * B, mean and var are constants: its outputs must be the bits of the same
 * model with those parameters given as inputs (computed per run), and match
 * the formula in double.  A constant reached through a folded node (PyTorch
 * writes an Identity when layers share equal weights) must be prepared like
 * an initializer: the first run of weights_shared.onnx needs no more memory
 * than weights_plain.onnx (an unprepared MatMul packs its weights into a
 * run-time workspace).  Models: tests/models/gen_constant_inputs_models.py.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "infera/session.h"
#include "test.h"

enum { BN_N = 3, BN2 = BN_N * 5, BN4 = BN_N * 3 * 4 * 5 };

static void model_path(char *buf, size_t size, const char *file) {
    snprintf(buf, size, "%s/tests/models/%s", INFERA_SOURCE_DIR, file);
}

/* The generator's parameters of channel c: scale, B, mean, var. */
static void bn_param_values(int c, float *out) {
    out[0] = 0.5f + 0.25f * (float)c;
    out[1] = 0.1f * (float)c - 0.3f;
    out[2] = 0.2f * (float)c - 0.4f;
    out[3] = 0.3f + 0.5f * (float)c;
}

/* Runs file once on in and copies its n_out outputs (counts[i] floats each)
 * to dst[i]; no output may sit at not_at (the caller's buffer). */
static void run_outputs(const char *file, const inf_tensor *const *in, int n_out, float *const *dst,
                        const int64_t *counts, const void *not_at) {
    char path[1024];
    model_path(path, sizeof path, file);
    inf_model *m;
    inf_session *s;
    inf_tensor *const *out;
    inf_error err;
    ASSERT_OK(inf_model_load(path, NULL, &m, &err));
    ASSERT_OK(inf_session_new(m, NULL, &s, &err));
    ASSERT_OK(inf_session_run(s, in, &out, &err));
    for (int i = 0; i < n_out; i++) {
        ASSERT_EQ(inf_tensor_numel(out[i]), counts[i]);
        ASSERT_TRUE(out[i]->data != not_at);
        memcpy(dst[i], out[i]->data, sizeof(float) * (size_t)counts[i]);
    }
    inf_session_free(s);
    inf_model_free(m);
}

/* y2 and y4 of bn_const.onnx (n_in 2) or bn_inputs.onnx (n_in 10). */
static void run_bn(const char *file, const inf_tensor *const *in, float *y2, float *y4) {
    float *dst[2] = {y2, y4};
    const int64_t counts[2] = {BN2, BN4};
    run_outputs(file, in, 2, dst, counts, NULL);
}

/* |y - ((x - mean) / sqrt(var + 1e-3) * scale + B)| within float rounding. */
static int bn_matches_formula(const float *x, const float *y, int n, int c, int inner) {
    for (int i = 0; i < n; i++) {
        float p[4];
        bn_param_values(i / inner % c, p);
        double want = ((double)x[i] - p[2]) / sqrt((double)p[3] + 1e-3) * p[0] + p[1];
        if (fabs(y[i] - want) > 1e-5 * (1 + fabs(want))) return 0;
    }
    return 1;
}

TEST(batchnorm_load_time_coefficients_match_per_run_bits) {
    static float x2[BN2], x4[BN4], c2[BN2], c4[BN4], r2[BN2], r4[BN4], params[2][4][5];
    test_fill_uniform(x2, BN2, 11, -4.0, 4.0);
    test_fill_uniform(x4, BN4, 12, -4.0, 4.0);
    int64_t d2[2] = {BN_N, 5}, d4[4] = {BN_N, 3, 4, 5};
    inf_tensor t2, t4, tp[2][4];
    inf_tensor_init_view(&t2, INF_DTYPE_F32, 2, d2, x2);
    inf_tensor_init_view(&t4, INF_DTYPE_F32, 4, d4, x4);
    const inf_tensor *in[10] = {&t2, &t4};
    for (int k = 0; k < 2; k++) {
        int64_t c = k == 0 ? 5 : 3;
        for (int ch = 0; ch < c; ch++) {
            float p[4];
            bn_param_values(ch, p);
            for (int j = 0; j < 4; j++) params[k][j][ch] = p[j];
        }
        for (int j = 0; j < 4; j++) {
            inf_tensor_init_view(&tp[k][j], INF_DTYPE_F32, 1, &c, params[k][j]);
            in[2 + 4 * k + j] = &tp[k][j];
        }
    }
    run_bn("bn_const.onnx", in, c2, c4);
    run_bn("bn_inputs.onnx", in, r2, r4);
    ASSERT_TRUE(memcmp(c2, r2, sizeof c2) == 0);
    ASSERT_TRUE(memcmp(c4, r4, sizeof c4) == 0);
    ASSERT_TRUE(bn_matches_formula(x2, c2, BN2, 5, 1));
    ASSERT_TRUE(bn_matches_formula(x4, c4, BN4, 3, 20));
}

/* *bytes: what the allocator holds more after creating a session of file and
 * running it once on 256 rows; the outputs go to y. */
static void first_run_bytes(const char *file, float *y, int64_t *bytes) {
    char path[1024];
    model_path(path, sizeof path, file);
    static float x[256 * 64];
    test_fill_uniform(x, 256 * 64, 5, -1.0, 1.0);
    int64_t dims[2] = {256, 64};
    inf_tensor t;
    inf_tensor_init_view(&t, INF_DTYPE_F32, 2, dims, x);
    const inf_tensor *in[1] = {&t};
    inf_model *m;
    inf_session *s;
    inf_tensor *const *out;
    inf_error err;
    inf_session_options opts;
    inf_session_options_init(&opts);
    opts.n_threads = 1;
    ASSERT_OK(inf_model_load(path, NULL, &m, &err));
    inf_alloc_stats before, after;
    inf_alloc_get_stats(&before);
    ASSERT_OK(inf_session_new(m, &opts, &s, &err));
    ASSERT_OK(inf_session_run(s, in, &out, &err));
    inf_alloc_get_stats(&after);
    memcpy(y, out[0]->data, sizeof(float) * 256 * 64);
    inf_session_free(s);
    inf_model_free(m);
    *bytes = after.bytes_live - before.bytes_live;
}

TEST(weights_through_a_folded_identity_are_prepared_at_load) {
    static float plain[256 * 64], shared[256 * 64];
    int64_t plain_bytes = 0, shared_bytes = 0;
    first_run_bytes("weights_plain.onnx", plain, &plain_bytes);
    first_run_bytes("weights_shared.onnx", shared, &shared_bytes);
    ASSERT_TRUE(memcmp(plain, shared, sizeof plain) == 0);
    /* an unprepared W costs a packing workspace of at least 64 x 64 floats */
    ASSERT_TRUE(shared_bytes < plain_bytes + 64 * 64 * (int64_t)sizeof(float));
}

/* A Pad whose pads are all zero shares its input; a graph output still never
 * borrows the caller's buffer, and a reader sees the input's values. */
TEST(pad_of_zero_shares_its_input_safely) {
    float x[24], y1[24], y2[24], *dst[2] = {y1, y2};
    test_fill_uniform(x, 24, 3, -1.0, 1.0);
    int64_t dims[3] = {2, 3, 4}, counts[2] = {24, 24};
    inf_tensor t;
    inf_tensor_init_view(&t, INF_DTYPE_F32, 3, dims, x);
    const inf_tensor *in[1] = {&t};
    run_outputs("pad_zero.onnx", in, 2, dst, counts, x);
    ASSERT_TRUE(memcmp(y1, x, sizeof x) == 0);
    for (int i = 0; i < 24; i++) ASSERT_TRUE(y2[i] == (x[i] > 0 ? x[i] : 0));
}
