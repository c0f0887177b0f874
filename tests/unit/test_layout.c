/*
 * test_layout.c -- the optimizer's layout pass (graph/passes/layout.c) on
 * tests/models/layout.onnx (made by tests/models/gen_layout_model.py):
 * Transpose -> Transpose chains (an NHWC round trip, a composed pair and a
 * triple), an identity Transpose and Reshape-like -> Reshape chains
 * collapse; a Transpose whose output is also a graph output, a Reshape
 * whose shape has a 0 and two Transposes with a Relu between are kept.
 * Data only moves, so every output must be the unoptimised graph's bits, on
 * 1 and 2 threads, and the NHWC round trip must give back x itself.
 */
#include <stdio.h>
#include <string.h>

#include "infera/model.h"
#include "infera/session.h"
#include "test.h"

enum { N_OUT = 10, CAP = 120, N_IN = 2 * 3 * 4 * 5 };

/* 20 nodes; 6 chains collapse (a triple, three pairs, two into Identity) -> 13. */
TEST(layout_pass_collapses_transposes_and_reshapes_bit_exactly) {
    char path[1024];
    snprintf(path, sizeof path, "%s/tests/models/layout.onnx", INFERA_SOURCE_DIR);
    static float data[N_IN], plain[N_OUT * CAP], fused[N_OUT * CAP], fused2[N_OUT * CAP];
    test_fill_uniform(data, N_IN, 0x9E3779B97F4A7C15ull, -3.0, 3.0);
    int64_t dims[4] = {2, 3, 4, 5};
    inf_tensor x;
    inf_tensor_init_view(&x, INF_DTYPE_F32, 4, dims, data);
    int n_plain = 0, n_fused = 0;
    memset(plain, 0, sizeof plain), memset(fused, 0, sizeof fused), memset(fused2, 0, sizeof fused2);
    test_run_floats(path, false, 1, &x, plain, N_OUT, CAP, &n_plain);
    test_run_floats(path, true, 1, &x, fused, N_OUT, CAP, &n_fused);
    ASSERT_EQ(n_plain, 20);
    ASSERT_EQ(n_fused, 13);
    ASSERT_TRUE(memcmp(plain, fused, sizeof plain) == 0);
    ASSERT_TRUE(memcmp(fused, data, sizeof data) == 0); /* y_a: the round trip is x */
    test_run_floats(path, true, 2, &x, fused2, N_OUT, CAP, &n_fused);
    ASSERT_TRUE(memcmp(fused, fused2, sizeof fused) == 0);
}
