/*
 * test_subbatch.c -- sub-batch execution (src/graph/subbatch.c): the proof
 * that a graph is batch-separable accepts and rejects the right graphs
 * (tests/models/subbatch/, made by gen_subbatch_models.py), kernels are
 * batch-invariant (row r of a batch = that row run alone), split runs give
 * the bits of whole runs at 1 and 2 threads, odd batches and sub-batch
 * sizes that do not divide them (fixed and claimed assignments of
 * sub-batches to frames), and warm split runs allocate nothing.
 */
#include <stdlib.h>
#include <string.h>

#include "graph/subbatch.h"
#include "infera/session.h"
#include "test.h"

#define MAX_OUT 8

static const char *const separable[] = {
    "cnn", "mlp", "conv_add", "subbatch/sep_elementwise", "subbatch/sep_reduce_norm",
    "subbatch/sep_batched_matmul", "subbatch/sep_conv_pool", "subbatch/sep_reshape_batch_shape", "subbatch/sep_pad",
    "subbatch/sep_quantize",
};
static const char *const mixing[] = {
    "subbatch/mix_reshape_dim0", "subbatch/mix_softmax_axis0", "subbatch/mix_transpose",
    "subbatch/mix_gemm_trans_a", "subbatch/mix_add_rowwise", "subbatch/mix_reduce_all",
    "subbatch/mix_flatten_axis2", "subbatch/mix_shape", "subbatch/mix_maxpool_indices",
    "subbatch/mix_batch_size_value", "subbatch/mix_reshape_batch_not_first", "subbatch/mix_pad_batch",
    "subbatch/mix_quantize_axis0",
};
#define N_SEPARABLE (int)(sizeof separable / sizeof separable[0])
#define N_MIXING (int)(sizeof mixing / sizeof mixing[0])

static inf_status load(const char *name, inf_model **m, inf_error *err) {
    char path[1024];
    snprintf(path, sizeof path, "%s/tests/models/%s.onnx", INFERA_SOURCE_DIR, name);
    return inf_model_load(path, NULL, m, err);
}

/* A random input of `batch` rows shaped like the model's input 0. */
static inf_tensor *make_input(const inf_model *m, int64_t batch, uint64_t seed) {
    const inf_value_info *info = inf_model_input(m, 0);
    int64_t dims[INF_MAX_DIMS];
    for (int i = 0; i < info->ndim; i++) dims[i] = info->dims[i] >= 0 ? info->dims[i] : 4;
    dims[0] = batch;
    inf_tensor *x;
    if (inf_tensor_new(INF_DTYPE_F32, info->ndim, dims, &x) != INF_OK) return NULL;
    test_fill_uniform(x->data, (int)inf_tensor_numel(x), seed, -1.0, 1.0);
    return x;
}

static inf_session *open_session(const inf_model *m, int threads, int sub_batch) {
    inf_session_options o;
    inf_session_options_init(&o);
    o.n_threads = threads;
    o.sub_batch = sub_batch;
    inf_session *s = NULL;
    inf_error err;
    if (inf_session_new(m, &o, &s, &err) != INF_OK) fprintf(stderr, "session: %s\n", err.message);
    return s;
}

/* Runs s on x and clones its outputs into out[]; returns the output count or -1. */
static int run_clone(inf_session *s, const inf_tensor *x, inf_tensor **out) {
    const inf_tensor *in[1] = {x};
    inf_tensor *const *o;
    inf_error err;
    if (inf_session_run(s, in, &o, &err) != INF_OK) {
        fprintf(stderr, "run: %s\n", err.message);
        return -1;
    }
    int n = inf_model_n_outputs(inf_session_model(s));
    for (int i = 0; i < n && i < MAX_OUT; i++)
        if (inf_tensor_clone(o[i], &out[i]) != INF_OK) return -1;
    return n < MAX_OUT ? n : MAX_OUT;
}

static void free_all(inf_tensor **t, int n) {
    for (int i = 0; i < n; i++) inf_tensor_free(t[i]);
}

/* Do rows [r0, r0 + rows) of a equal all of b's rows, bit for bit? */
static bool rows_equal(const inf_tensor *a, int64_t r0, const inf_tensor *b) {
    if (a->dtype != b->dtype || a->ndim != b->ndim || a->ndim < 1) return false;
    for (int i = 1; i < a->ndim; i++)
        if (a->dims[i] != b->dims[i]) return false;
    size_t row = a->dims[0] ? inf_tensor_nbytes(a) / (size_t)a->dims[0] : 0;
    return r0 + b->dims[0] <= a->dims[0] && !memcmp((char *)a->data + (size_t)r0 * row, b->data, row * (size_t)b->dims[0]);
}

TEST(subbatch_proof_accepts_separable_and_rejects_mixing_graphs) {
    inf_error err;
    char why[256];
    for (int i = 0; i < N_SEPARABLE + N_MIXING; i++) {
        bool want = i < N_SEPARABLE;
        const char *name = want ? separable[i] : mixing[i - N_SEPARABLE];
        inf_model *m;
        ASSERT_OK(load(name, &m, &err));
        why[0] = 0;
        bool got = inf__graph_batch_separable(m->graph, why, sizeof why);
        if (got != want) TEST_FAIL_AT("%s: separable %d, expected %d (%s)", name, got, want, why);
        if (!want) ASSERT_TRUE(why[0] != 0);
        inf_session *s = open_session(m, 1, 0);
        ASSERT_TRUE(s != NULL);
        ASSERT_EQ(inf__session_subbatch(s) != NULL, want);
        inf_session_free(s);
        s = open_session(m, 1, -1); /* the option turns it off */
        ASSERT_TRUE(s != NULL && inf__session_subbatch(s) == NULL);
        inf_session_free(s);
        inf_model_free(m);
    }
}

/* The whole batch at once (no split): row r equals row r run alone. */
TEST(kernels_are_batch_invariant) {
    inf_error err;
    for (int i = 0; i < N_SEPARABLE; i++) {
        inf_model *m;
        ASSERT_OK(load(separable[i], &m, &err));
        for (int threads = 1; threads <= 2; threads++) {
            inf_session *s = open_session(m, threads, -1);
            inf_tensor *x = make_input(m, 7, 100 + (uint64_t)i), *whole[MAX_OUT], *one[MAX_OUT];
            ASSERT_TRUE(s && x);
            int n = run_clone(s, x, whole);
            ASSERT_TRUE(n > 0);
            for (int64_t r = 0; r < 7; r++) {
                inf_tensor row = *x;
                row.dims[0] = 1;
                row.data = (char *)x->data + (size_t)r * (inf_tensor_nbytes(x) / 7);
                row.flags = 0;
                ASSERT_EQ(run_clone(s, &row, one), n);
                for (int k = 0; k < n; k++)
                    if (!rows_equal(whole[k], r, one[k]))
                        TEST_FAIL_AT("%s, %d threads: output %d row %lld differs alone", separable[i], threads, k, (long long)r);
                free_all(one, n);
            }
            free_all(whole, n);
            inf_tensor_free(x);
            inf_session_free(s);
        }
        inf_model_free(m);
    }
}

/* Split runs at rows 0 (automatic), 1, 3 and 5 against the whole run. */
static void check_split_bits(const char *name, inf_model *m, int threads, int64_t batch) {
    static const int rows[] = {0, 1, 3, 5};
    inf_session *whole_s = open_session(m, threads, -1);
    inf_tensor *x = make_input(m, batch, 7 * (uint64_t)batch + (uint64_t)threads), *want[MAX_OUT], *got[MAX_OUT];
    ASSERT_TRUE(whole_s && x);
    int n = run_clone(whole_s, x, want);
    ASSERT_TRUE(n > 0);
    for (int k = 0; k < 4; k++) {
        inf_session *s = open_session(m, threads, rows[k]);
        ASSERT_TRUE(s != NULL);
        /* the first run probes and runs the fixed assignment (frame w: sub-batches w, w + n, ...); once every
         * frame has run a full sub-batch, later runs claim sub-batches from a counter */
        for (int rep = 0; rep < 3; rep++) {
            ASSERT_EQ(run_clone(s, x, got), n);
            for (int o = 0; o < n; o++)
                if (want[o]->dims[0] != batch || !rows_equal(want[o], 0, got[o]))
                    TEST_FAIL_AT("%s, %d threads, batch %lld, rows %d, run %d: output %d differs", name, threads,
                                 (long long)batch, rows[k], rep, o);
            free_all(got, n);
        }
        if (rows[k] > 0 && rows[k] < batch) ASSERT_EQ(inf__subbatch_runs(inf__session_subbatch(s)), 3);
        inf_session_free(s);
    }
    free_all(want, n);
    inf_tensor_free(x);
    inf_session_free(whole_s);
}

TEST(split_runs_are_bit_identical_to_whole_runs) {
    static const int64_t batches[] = {2, 7, 13, 33};
    inf_error err;
    for (int i = 0; i < N_SEPARABLE; i++) {
        inf_model *m;
        ASSERT_OK(load(separable[i], &m, &err));
        for (int threads = 1; threads <= 2; threads++)
            for (int b = 0; b < 4; b++) check_split_bits(separable[i], m, threads, batches[b]);
        inf_model_free(m);
    }
}

TEST(split_warm_runs_allocate_nothing) {
    inf_error err;
    inf_model *m;
    ASSERT_OK(load("cnn", &m, &err));
    inf_tensor *x = make_input(m, 11, 5), *y = make_input(m, 6, 6);
    ASSERT_TRUE(x && y);
    for (int threads = 1; threads <= 2; threads++)
        for (int rows = 0; rows <= 3; rows += 3) {
            inf_session *s = open_session(m, threads, rows);
            ASSERT_TRUE(s != NULL);
            const inf_tensor *in[1] = {x}, *in_y[1] = {y};
            inf_tensor *const *out;
            ASSERT_OK(inf_session_run(s, in, &out, &err)); /* the first run at a shape may allocate */
            ASSERT_OK(inf_session_run(s, in_y, &out, &err));
            inf_alloc_stats before, after;
            inf_alloc_get_stats(&before);
            for (int i = 0; i < 20; i++) ASSERT_OK(inf_session_run(s, i % 3 ? in : in_y, &out, &err));
            inf_alloc_get_stats(&after);
            ASSERT_EQ(after.n_allocs - before.n_allocs, 0);
            ASSERT_EQ(after.n_frees - before.n_frees, 0);
            ASSERT_TRUE(inf__subbatch_runs(inf__session_subbatch(s)) >= 7);
            inf_session_free(s);
        }
    inf_tensor_free(x);
    inf_tensor_free(y);
    inf_model_free(m);
}
