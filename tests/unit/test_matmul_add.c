/*
 * test_matmul_add.c -- the optimizer's FusedMatMul pass (graph/passes/
 * matmul_add.c) on tests/models/matmul_add.onnx (made by
 * tests/models/gen_matmul_add_model.py): MatMul -> bias Add chains with a
 * residual (same shape, broadcast, growing the result's rank), a GELU, both,
 * a 2-D product of one row per batch, and the bias as the Add's first
 * operand are fused; a MatMul or bias Add that is also a graph output, a
 * bias of shape [1, N] and computed weights are kept.  Fusion must give the
 * unoptimised graph's bits where no GELU is involved (the same float adds
 * in the same order), agree within float32 rounding through the GELU (the
 * fused Gelu kernel against the exported Erf chain), and give the same bits
 * on 1 and 2 threads.  (The GEMM epilogue itself is checked bit for bit
 * over random shapes in tests/kernels/test_gemm.c.)
 */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "infera/model.h"
#include "infera/session.h"
#include "test.h"

enum { N_OUT = 14, CAP = 400, N_IN = 2 * 5 * 24 };

/* Outputs that pass through a GELU: y_b, y_c, y_j. */
static bool through_gelu(int k) { return k == 1 || k == 2 || k == 11; }

/* 45 nodes; 8 chains fused (3 Gelu rewrites first) -> 19. */
TEST(matmul_add_pass_fuses_bias_residual_gelu_and_keeps_near_misses) {
    char path[1024];
    snprintf(path, sizeof path, "%s/tests/models/matmul_add.onnx", INFERA_SOURCE_DIR);
    static float data[N_IN], plain[N_OUT * CAP], fused[N_OUT * CAP], fused2[N_OUT * CAP];
    test_fill_uniform(data, N_IN, 0x9E3779B97F4A7C15ull, -3.0, 3.0);
    int64_t dims[3] = {2, 5, 24};
    inf_tensor x;
    inf_tensor_init_view(&x, INF_DTYPE_F32, 3, dims, data);
    test_run_plain_and_fused(path, &x, plain, fused, N_OUT, CAP, 45, 19);
    int n_fused = 0;
    for (int k = 0; k < N_OUT; k++)
        for (int i = 0; i < CAP; i++) {
            float a = fused[k * CAP + i], b = plain[k * CAP + i];
            float tol = through_gelu(k) ? 1e-5f * (fabsf(b) > 1 ? fabsf(b) : 1) : 0.0f;
            if (!(fabsf(a - b) <= tol) || (tol == 0.0f && memcmp(&a, &b, sizeof a)))
                TEST_FAIL_AT("output %d element %d: fused %.9g, plain %.9g", k, i, a, b);
        }
    test_run_floats(path, true, 2, &x, fused2, N_OUT, CAP, &n_fused);
    ASSERT_TRUE(memcmp(fused, fused2, sizeof fused) == 0);
}
