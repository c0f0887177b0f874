/*
 * test_conv_bn.c -- the optimizer's Conv+BatchNorm pass (graph/passes/
 * conv_bn.c) on tests/models/conv_bn.onnx (made by tests/models/
 * gen_conv_bn_model.py): Conv -> BatchNormalization chains with and
 * without a Conv bias, strided, depthwise, followed by a Relu (which then
 * fuses as the Conv's epilogue) and by a residual Add (which then becomes a
 * ConvAdd) are folded into one Conv; a Conv whose output is also a graph
 * output, a training-mode BatchNormalization and two Convs sharing one
 * weight tensor are kept.  The folded weights differ from the two nodes by
 * float32 rounding only, so every output must agree with the unoptimised
 * graph within 1e-5 relative, on 1 and 2 threads, and the kept chains
 * (y_e, y_f, y_g, y_h: still the plain kernels) bit for bit.
 */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "infera/model.h"
#include "infera/session.h"
#include "test.h"

enum { N_OUT = 9, CAP = 420, N_IN = 2 * 4 * 6 * 7 };

/* Outputs computed by the plain Conv and BatchNormalization kernels in both
 * graphs: c_e, y_e, y_f, y_g, y_h. */
static bool kept(int k) { return k >= 4; }

/* 18 nodes; 4 chains folded (one then ConvAdd, one with a fused Relu) -> 12. */
TEST(conv_bn_pass_folds_batchnorm_and_keeps_near_misses) {
    char path[1024];
    snprintf(path, sizeof path, "%s/tests/models/conv_bn.onnx", INFERA_SOURCE_DIR);
    static float data[N_IN], plain[N_OUT * CAP], fused[N_OUT * CAP], fused2[N_OUT * CAP];
    test_fill_uniform(data, N_IN, 0x2545F4914F6CDD1Dull, -2.0, 2.0);
    int64_t dims[4] = {2, 4, 6, 7};
    inf_tensor x;
    inf_tensor_init_view(&x, INF_DTYPE_F32, 4, dims, data);
    test_run_plain_and_fused(path, &x, plain, fused, N_OUT, CAP, 18, 12);
    int n_fused = 0;
    double worst = 0;
    for (int k = 0; k < N_OUT; k++)
        for (int i = 0; i < CAP; i++) {
            float a = fused[k * CAP + i], b = plain[k * CAP + i];
            float tol = kept(k) ? 0.0f : 1e-5f * (fabsf(b) > 1 ? fabsf(b) : 1);
            if (!(fabsf(a - b) <= tol) || (tol == 0.0f && memcmp(&a, &b, sizeof a)))
                TEST_FAIL_AT("output %d element %d: fused %.9g, plain %.9g", k, i, a, b);
            if (fabsf(a - b) > worst) worst = fabsf(a - b);
        }
    ASSERT_TRUE(worst > 0); /* the folded chains really ran another computation */
    test_run_floats(path, true, 2, &x, fused2, N_OUT, CAP, &n_fused);
    ASSERT_TRUE(memcmp(fused, fused2, sizeof fused) == 0);
}
