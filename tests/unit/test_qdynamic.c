/*
 * test_qdynamic.c -- the optimizer's dynamic-INT8 pass (graph/passes/
 * qdynamic.c) on tests/models/qdynamic.onnx (made by
 * tests/models/gen_qdynamic_model.py): DynamicQuantizeLinear ->
 * MatMulInteger -> Cast -> Mul [-> Add] [-> Relu] chains in Infera's and ONNX
 * Runtime's spellings (per tensor and per channel, int8 and uint8 weights,
 * weight zero points, a shared DynamicQuantizeLinear) become QGemm; a second
 * DynamicQuantizeLinear of the same x is merged into the first; a chain
 * whose Cast output is a graph output is kept.  The reference twin is the
 * unoptimised graph, run node by node: the fused results must be its bits
 * exactly (the same integer sums, int32 -> float conversion, scale product,
 * multiply and add, in that order), on 1 and 2 threads.  The same for the
 * ConvInteger chains of tests/models/qdynamic_conv.onnx
 * (gen_qdynamic_conv_model.py): both spellings -> QConv (a bias Reshape
 * folded first, per-channel scales [1, m, 1, 1], weight zero points, a
 * MaxPool and a residual Add then fused into the QConv's store), and the
 * near misses whose bias or scale broadcasts along another axis.  (ONNX
 * Runtime checks that file's outputs: tests/quant/test_quantize.sh.)  (ONNX Runtime checks
 * the dynamic files end to end: tests/quant/test_quantize.sh.)
 */
#include <stdio.h>
#include <string.h>

#include "infera/model.h"
#include "infera/session.h"
#include "test.h"

enum { N_OUT = 5, CAP = 144, N_IN = 2 * 3 * 16 };

TEST(qdynamic_pass_fuses_both_spellings_bit_for_bit) {
    char path[1024];
    snprintf(path, sizeof path, "%s/tests/models/qdynamic.onnx", INFERA_SOURCE_DIR);
    static float data[N_IN], plain[N_OUT * CAP], fused[N_OUT * CAP], fused2[N_OUT * CAP];
    test_fill_uniform(data, N_IN, 0x9E3779B97F4A7C15ull, -3.0, 3.0);
    data[0] = 0.0f, data[1] = -7.5f; /* an exact zero, and a wider negative range */
    int64_t dims[3] = {2, 3, 16};
    inf_tensor x;
    inf_tensor_init_view(&x, INF_DTYPE_F32, 3, dims, data);
    test_run_plain_and_fused(path, &x, plain, fused, N_OUT, CAP, 22, 9);
    for (int k = 0; k < N_OUT; k++)
        for (int i = 0; i < CAP; i++) {
            float a = fused[k * CAP + i], b = plain[k * CAP + i];
            if (a != b) /* equal values (a zero's sign may differ: the store adds +0 without a bias) */
                TEST_FAIL_AT("output %d element %d: fused %.9g, plain %.9g", k, i, a, b);
        }
    int n_fused = 0;
    test_run_floats(path, true, 2, &x, fused2, N_OUT, CAP, &n_fused);
    ASSERT_TRUE(memcmp(fused, fused2, sizeof fused) == 0);
    /* every output is non-trivial (Relu and a wrong match would show as all zeros) */
    for (int k = 0; k < N_OUT; k++) {
        int nonzero = 0;
        for (int i = 0; i < 48; i++) nonzero += plain[k * CAP + i] != 0.0f;
        if (nonzero < 8) TEST_FAIL_AT("output %d: only %d of 48 values non-zero", k, nonzero);
    }
}

enum { C_OUT = 6, C_CAP = 1024 };

TEST(qdynamic_pass_fuses_conv_chains_bit_for_bit) {
    char path[1024];
    snprintf(path, sizeof path, "%s/tests/models/qdynamic_conv.onnx", INFERA_SOURCE_DIR);
    static float data[2 * 4 * 8 * 8], plain[C_OUT * C_CAP], fused[C_OUT * C_CAP], fused2[C_OUT * C_CAP];
    test_fill_uniform(data, 2 * 4 * 8 * 8, 0xD1B54A32D192ED03ull, -2.0, 3.0);
    data[5] = 0.0f;
    int64_t dims[4] = {2, 4, 8, 8};
    inf_tensor x;
    inf_tensor_init_view(&x, INF_DTYPE_F32, 4, dims, data);
    /* 36 nodes -> 12: a, b, c (+ MaxPool), e (+ residual Add, Relu), f (its [8] bias Add kept) QConv; g kept */
    test_run_plain_and_fused(path, &x, plain, fused, C_OUT, C_CAP, 36, 12);
    static const int sizes[C_OUT] = {512, 192, 128, 512, 512, 512};
    for (int k = 0; k < C_OUT; k++) {
        int nonzero = 0;
        for (int i = 0; i < sizes[k]; i++) {
            float a = fused[k * C_CAP + i], b = plain[k * C_CAP + i];
            if (a != b) TEST_FAIL_AT("output %d element %d: fused %.9g, plain %.9g", k, i, a, b);
            nonzero += b != 0.0f;
        }
        if (nonzero < sizes[k] / 4) TEST_FAIL_AT("output %d: only %d of %d values non-zero", k, nonzero, sizes[k]);
    }
    int n_fused = 0;
    test_run_floats(path, true, 2, &x, fused2, C_OUT, C_CAP, &n_fused);
    ASSERT_TRUE(memcmp(fused, fused2, sizeof fused) == 0);
}
