/*
 * test_attention.c -- the optimizer's attention pass (graph/passes/
 * attention.c) on tests/models/attention.onnx (made by
 * tests/models/gen_attention_model.py): the BERT export with its shape
 * subgraphs and a masked, Mul-scaled variant are fused; a Softmax over
 * another axis, a softmax output that is also a graph output, and a
 * non-scalar scale are kept.  Fusion must keep every output within float32
 * rounding of the unoptimised graph, and give the same bits on 1 and 2
 * threads.  (The kernel itself is checked against a double reference over
 * random shapes in tests/kernels/test_attention.c.)
 */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "infera/model.h"
#include "infera/session.h"
#include "test.h"

enum { N_OUT = 6, CAP = 2 * 5 * 24 };

/* 154 nodes: 2 fused chains lose 7 and 8 nodes (3 Transposes, 2 MatMuls,
 * the scale, Softmax; att_b also its mask Add) -> 139; the 15 Q/K/V
 * projections (MatMul + bias Add) become FusedMatMul -> 124; the input's
 * dimensions are all fixed, so shape-subgraph folding turns the 62 nodes
 * of the reshapes' Shape -> Gather -> Unsqueeze -> Concat chains into
 * constants -> 62. */
TEST(attention_pass_fuses_bert_export_and_keeps_near_misses) {
    char path[1024];
    snprintf(path, sizeof path, "%s/tests/models/attention.onnx", INFERA_SOURCE_DIR);
    static float data[CAP], plain[N_OUT * CAP], fused[N_OUT * CAP], fused2[N_OUT * CAP];
    test_fill_uniform(data, CAP, 0x9E3779B97F4A7C15ull, -2.0, 2.0);
    int64_t dims[3] = {2, 5, 24};
    inf_tensor x;
    inf_tensor_init_view(&x, INF_DTYPE_F32, 3, dims, data);
    test_run_plain_and_fused(path, &x, plain, fused, N_OUT, CAP, 154, 62);
    int n_fused = 0;
    for (int k = 0; k < N_OUT; k++) {
        int n = k == N_OUT - 1 ? 2 * 3 * 5 * 5 : CAP; /* the last output is att_d's softmax [2,3,5,5] */
        for (int i = 0; i < n; i++) {
            float a = fused[k * CAP + i], b = plain[k * CAP + i];
            float tol = 1e-5f * (fabsf(b) > 1 ? fabsf(b) : 1);
            if (!(fabsf(a - b) <= tol)) TEST_FAIL_AT("output %d element %d: fused %.9g, plain %.9g", k, i, a, b);
        }
    }
    test_run_floats(path, true, 2, &x, fused2, N_OUT, CAP, &n_fused);
    ASSERT_TRUE(memcmp(fused, fused2, sizeof fused) == 0);
}
