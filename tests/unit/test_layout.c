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
    test_run_plain_and_fused(path, &x, plain, fused, N_OUT, CAP, 20, 13);
    int n_fused = 0;
    ASSERT_TRUE(memcmp(plain, fused, sizeof plain) == 0);
    ASSERT_TRUE(memcmp(fused, data, sizeof data) == 0); /* y_a: the round trip is x */
    test_run_floats(path, true, 2, &x, fused2, N_OUT, CAP, &n_fused);
    ASSERT_TRUE(memcmp(fused, fused2, sizeof fused) == 0);
}

/* Runs model m on x (dims[0] = batch) and checks every output against the
 * unoptimised model p's: same dtype, shape and bytes. */
static void same_outputs(inf_model *m, inf_model *p, const inf_tensor *x) {
    inf_session *sm, *sp;
    inf_error err;
    inf_session_options so = {.n_threads = 1};
    ASSERT_OK(inf_session_new(m, &so, &sm, &err));
    ASSERT_OK(inf_session_new(p, &so, &sp, &err));
    const inf_tensor *in[1] = {x};
    inf_tensor *const *om, *const *op;
    ASSERT_OK(inf_session_run(sm, in, &om, &err));
    ASSERT_OK(inf_session_run(sp, in, &op, &err));
    for (int k = 0; k < inf_model_n_outputs(m); k++) {
        ASSERT_TRUE(om[k]->dtype == op[k]->dtype && om[k]->ndim == op[k]->ndim);
        ASSERT_TRUE(memcmp(om[k]->dims, op[k]->dims, (size_t)om[k]->ndim * sizeof(int64_t)) == 0);
        ASSERT_TRUE(memcmp(om[k]->data, op[k]->data, inf_tensor_nbytes(om[k])) == 0);
    }
    inf_session_free(sm);
    inf_session_free(sp);
}

/* shape_fold.onnx (tests/models/gen_shape_fold_model.py): 33 nodes, of
 * which the shape arithmetic on fixed dimensions folds away -> 16 (three
 * Shape -> Gather -> Unsqueeze chains of the batch, their two Concats and
 * the Shape output stay).  The folded graph must give the unoptimised
 * graph's outputs at batch 1 and 3: a fold that took the batch for a
 * constant would give batch 1's shapes at batch 3. */
TEST(shape_folding_keeps_only_the_batch_dependent_chains) {
    char path[1024];
    snprintf(path, sizeof path, "%s/tests/models/shape_fold.onnx", INFERA_SOURCE_DIR);
    inf_model *m, *p;
    inf_error err;
    inf_model_options plain = {.no_optimize = true};
    ASSERT_OK(inf_model_load(path, NULL, &m, &err));
    ASSERT_OK(inf_model_load(path, &plain, &p, &err));
    inf_model_summary sum;
    inf_model_get_summary(m, &sum);
    ASSERT_EQ(sum.n_nodes_optimized, 16);
    static float data[3 * 6 * 8];
    test_fill_uniform(data, 3 * 6 * 8, 0x2545F4914F6CDD1Dull, -2.0, 2.0);
    for (int64_t batch = 1; batch <= 3; batch += 2) {
        int64_t dims[3] = {batch, 6, 8};
        inf_tensor x;
        inf_tensor_init_view(&x, INF_DTYPE_F32, 3, dims, data);
        same_outputs(m, p, &x);
    }
    inf_model_free(m);
    inf_model_free(p);
}
