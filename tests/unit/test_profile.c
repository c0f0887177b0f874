/*
 * test_profile.c -- the per-node profile (options.profile,
 * inf_session_profile): one entry per node of the optimised graph with
 * its name and fused op, calls equal to runs, positive times, the last
 * run's output shape, reset; nothing recorded when off; If/Loop bodies
 * under their parent; sub-batch frames added up; no allocation in a
 * profiled warm run.
 */
#include <stdlib.h>

#include "graph/subbatch.h"
#include "infera/session.h"
#include "test.h"

enum { MAX_ENTRIES = 64 };

static inf_model *load_model(const char *file) {
    char path[1024];
    snprintf(path, sizeof path, "%s/tests/models/%s", INFERA_SOURCE_DIR, file);
    inf_model *m = NULL;
    inf_error err;
    if (inf_model_load(path, NULL, &m, &err) != INF_OK) fprintf(stderr, "    %s: %s\n", path, err.message);
    return m;
}

static inf_tensor *load_npy(const char *file) {
    char path[1024];
    snprintf(path, sizeof path, "%s/tests/models/%s", INFERA_SOURCE_DIR, file);
    inf_tensor *t = NULL;
    inf_error err;
    if (inf_tensor_load_npy(path, &t, &err) != INF_OK) fprintf(stderr, "    %s: %s\n", path, err.message);
    return t;
}

static inf_session *profiled_session(const inf_model *m, int threads, int sub_batch) {
    inf_session_options o;
    inf_session_options_init(&o);
    o.n_threads = threads;
    o.sub_batch = sub_batch;
    o.profile = 1;
    inf_session *s = NULL;
    inf_error err;
    if (inf_session_new(m, &o, &s, &err) != INF_OK) fprintf(stderr, "    session: %s\n", err.message);
    return s;
}

static int find_entry(const inf_node_profile *p, int n, const char *name) {
    for (int i = 0; i < n; i++)
        if (!strcmp(p[i].name, name)) return i;
    return -1;
}

/* The CNN: one entry per optimised node, in graph order, with the graph's
 * names and fused ops; after R runs every node has R calls and positive
 * times, and the nodes' times fit inside the runs'. */
TEST(profile_counts_every_node_of_every_run) {
    inf_model *m = load_model("cnn.onnx");
    inf_tensor *x = load_npy("cnn_input.npy");
    ASSERT_TRUE(m && x);
    inf_session *s = profiled_session(m, 1, -1); /* whole batches: one call a run */
    ASSERT_TRUE(s != NULL);
    const inf_tensor *in[1] = {x};
    inf_tensor *const *out;
    inf_error err;
    enum { RUNS = 3 };
    for (int r = 0; r < RUNS; r++) ASSERT_OK(inf_session_run(s, in, &out, &err));
    static inf_node_profile p[MAX_ENTRIES];
    inf_profile_totals tot;
    int n = inf_session_profile(s, p, MAX_ENTRIES, &tot);
    inf_model_summary sum;
    inf_model_get_summary(m, &sum);
    ASSERT_EQ(n, sum.n_nodes_optimized);
    ASSERT_TRUE(n > 5 && n <= MAX_ENTRIES);
    ASSERT_EQ(tot.runs, RUNS);
    uint64_t nodes_ns = 0;
    bool fused = false;
    for (int i = 0; i < n; i++) {
        const char *op, *act;
        inf_model_optimized_node(m, i, &op, &act);
        ASSERT_STR_EQ(p[i].op_type, op);
        ASSERT_STR_EQ(p[i].activation, act);
        fused |= act != NULL;
        ASSERT_TRUE(p[i].name && p[i].name[0]);
        ASSERT_EQ(p[i].parent, -1);
        ASSERT_EQ(p[i].calls, RUNS);
        ASSERT_EQ(p[i].last_run, RUNS);
        ASSERT_TRUE(p[i].min_ns > 0 && p[i].min_ns <= p[i].max_ns);
        ASSERT_TRUE(p[i].total_ns >= p[i].min_ns * RUNS && p[i].total_ns <= p[i].max_ns * RUNS);
        nodes_ns += p[i].total_ns;
    }
    ASSERT_TRUE(fused); /* the CNN's Conv+Relu: op types are the optimised graph's */
    ASSERT_TRUE(nodes_ns <= tot.run_ns);
    /* the last node writes the graph's output: its shape is the output's */
    ASSERT_EQ(p[n - 1].ndim, out[0]->ndim);
    for (int d = 0; d < out[0]->ndim; d++) ASSERT_EQ(p[n - 1].dims[d], out[0]->dims[d]);
    ASSERT_EQ(p[n - 1].dtype, out[0]->dtype);
    /* asking for fewer entries fills only those */
    static inf_node_profile few[2];
    ASSERT_EQ(inf_session_profile(s, few, 2, NULL), n);
    ASSERT_STR_EQ(few[1].name, p[1].name);
    inf_session_free(s);
    inf_tensor_free(x);
    inf_model_free(m);
}

TEST(profile_reset_zeroes_and_counts_again) {
    inf_model *m = load_model("mlp.onnx");
    inf_tensor *x = load_npy("mlp_input.npy");
    ASSERT_TRUE(m && x);
    inf_session *s = profiled_session(m, 2, -1);
    ASSERT_TRUE(s != NULL);
    const inf_tensor *in[1] = {x};
    inf_tensor *const *out;
    inf_error err;
    for (int r = 0; r < 4; r++) ASSERT_OK(inf_session_run(s, in, &out, &err));
    inf_session_profile_reset(s);
    static inf_node_profile p[MAX_ENTRIES];
    inf_profile_totals tot;
    int n = inf_session_profile(s, p, MAX_ENTRIES, &tot);
    ASSERT_TRUE(n > 0);
    ASSERT_EQ(tot.runs, 0);
    ASSERT_EQ(tot.run_ns, 0);
    for (int i = 0; i < n; i++) {
        ASSERT_EQ(p[i].calls, 0);
        ASSERT_EQ(p[i].total_ns, 0);
        ASSERT_EQ(p[i].max_ns, 0);
        ASSERT_EQ(p[i].last_run, -1);
        ASSERT_EQ(p[i].ndim, -1);
    }
    ASSERT_OK(inf_session_run(s, in, &out, &err));
    n = inf_session_profile(s, p, MAX_ENTRIES, &tot);
    ASSERT_EQ(tot.runs, 1);
    for (int i = 0; i < n; i++) {
        ASSERT_EQ(p[i].calls, 1);
        ASSERT_EQ(p[i].min_ns, p[i].max_ns);
        ASSERT_EQ(p[i].total_ns, p[i].max_ns);
        ASSERT_TRUE(p[i].total_ns > 0);
    }
    inf_session_free(s);
    inf_tensor_free(x);
    inf_model_free(m);
}

TEST(profile_off_records_nothing) {
    inf_model *m = load_model("mlp.onnx");
    inf_tensor *x = load_npy("mlp_input.npy");
    ASSERT_TRUE(m && x);
    inf_session *s = NULL;
    inf_error err;
    ASSERT_OK(inf_session_new(m, NULL, &s, &err));
    const inf_tensor *in[1] = {x};
    inf_tensor *const *out;
    for (int r = 0; r < 3; r++) ASSERT_OK(inf_session_run(s, in, &out, &err));
    static inf_node_profile p[MAX_ENTRIES];
    memset(p, 0xAB, sizeof p);
    inf_profile_totals tot = {7, 7};
    ASSERT_EQ(inf_session_profile(s, p, MAX_ENTRIES, &tot), 0);
    ASSERT_EQ(tot.runs, 0);
    ASSERT_EQ(tot.run_ns, 0);
    ASSERT_EQ(p[0].calls, (int64_t)0xABABABABABABABABull); /* untouched */
    inf_session_profile_reset(s); /* a no-op */
    inf_session_free(s);
    inf_tensor_free(x);
    inf_model_free(m);
}

/* profile_loop.onnx (gen_profile_model.py): Loop (4 iterations, body
 * body_cond and body_add) then Mul.  Body nodes follow the Loop with
 * parent = the Loop's entry and 4 calls a run. */
TEST(profile_puts_loop_body_nodes_under_their_loop) {
    inf_model *m = load_model("profile_loop.onnx");
    ASSERT_TRUE(m != NULL);
    inf_session *s = profiled_session(m, 1, 0);
    ASSERT_TRUE(s != NULL);
    float data[6] = {1, 2, 3, 4, 5, 6};
    int64_t dims[2] = {2, 3};
    inf_tensor x;
    inf_tensor_init_view(&x, INF_DTYPE_F32, 2, dims, data);
    const inf_tensor *in[1] = {&x};
    inf_tensor *const *out;
    inf_error err;
    enum { RUNS = 2 };
    for (int r = 0; r < RUNS; r++) ASSERT_OK(inf_session_run(s, in, &out, &err));
    ASSERT_NEAR(((float *)out[0]->data)[1], 2 * 5 * 2, 0); /* (x + 4x) * x */
    static inf_node_profile p[MAX_ENTRIES];
    int n = inf_session_profile(s, p, MAX_ENTRIES, NULL);
    ASSERT_EQ(n, 4);
    int loop = find_entry(p, n, "loop"), add = find_entry(p, n, "body_add"), cond = find_entry(p, n, "body_cond"),
        mul = find_entry(p, n, "mul");
    ASSERT_EQ(loop, 0);
    ASSERT_TRUE(add > loop && cond > loop && mul > add && mul > cond);
    ASSERT_STR_EQ(p[loop].op_type, "Loop");
    ASSERT_STR_EQ(p[add].op_type, "Add");
    ASSERT_EQ(p[loop].parent, -1);
    ASSERT_EQ(p[mul].parent, -1);
    ASSERT_EQ(p[add].parent, loop);
    ASSERT_STR_EQ(p[add].graph, "body");
    ASSERT_STR_EQ(p[mul].graph, "profile_loop");
    ASSERT_EQ(p[cond].parent, loop);
    ASSERT_EQ(p[loop].calls, RUNS);
    ASSERT_EQ(p[mul].calls, RUNS);
    ASSERT_EQ(p[add].calls, 4 * RUNS);
    ASSERT_EQ(p[cond].calls, 4 * RUNS);
    ASSERT_EQ(p[cond].ndim, 0);
    ASSERT_TRUE(p[add].total_ns + p[cond].total_ns <= p[loop].total_ns); /* the body runs inside the Loop */
    inf_session_free(s);
    inf_model_free(m);
}

/* A batch of 64 on 2 threads in sub-batches of 16: each node runs once per
 * sub-batch, on the frames, and the entries add the frames up; the shape
 * is a sub-batch's. */
TEST(profile_adds_up_sub_batch_frames) {
    inf_model *m = load_model("mlp.onnx");
    ASSERT_TRUE(m != NULL);
    const inf_value_info *info = inf_model_input(m, 0);
    ASSERT_EQ(info->ndim, 2);
    int64_t dims[2] = {64, info->dims[1]};
    inf_tensor *x;
    ASSERT_OK(inf_tensor_new(INF_DTYPE_F32, 2, dims, &x));
    test_fill_uniform(x->data, (int)inf_tensor_numel(x), 42, -1, 1);
    inf_session *s = profiled_session(m, 2, 16);
    ASSERT_TRUE(s != NULL);
    const inf_tensor *in[1] = {x};
    inf_tensor *const *out;
    inf_error err;
    ASSERT_OK(inf_session_run(s, in, &out, &err)); /* the first run probes one row on a frame */
    inf_session_profile_reset(s);
    enum { RUNS = 3 };
    for (int r = 0; r < RUNS; r++) ASSERT_OK(inf_session_run(s, in, &out, &err));
    inf__subbatch *sb = inf__session_subbatch(s);
    ASSERT_TRUE(sb != NULL);
    ASSERT_EQ(inf__subbatch_rows(sb), 16);
    static inf_node_profile p[MAX_ENTRIES];
    inf_profile_totals tot;
    int n = inf_session_profile(s, p, MAX_ENTRIES, &tot);
    ASSERT_TRUE(n > 0);
    ASSERT_EQ(tot.runs, RUNS);
    for (int i = 0; i < n; i++) {
        ASSERT_EQ(p[i].calls, 4 * RUNS);
        ASSERT_TRUE(p[i].total_ns > 0);
        ASSERT_EQ(p[i].last_run, RUNS);
        ASSERT_TRUE(p[i].ndim >= 1);
        ASSERT_EQ(p[i].dims[0], 16);
    }
    /* a batch of 1 runs whole, on the main frame: its shape is now the last */
    int64_t one[2] = {1, dims[1]};
    inf_tensor row;
    inf_tensor_init_view(&row, INF_DTYPE_F32, 2, one, x->data);
    const inf_tensor *in1[1] = {&row};
    ASSERT_OK(inf_session_run(s, in1, &out, &err));
    n = inf_session_profile(s, p, MAX_ENTRIES, NULL);
    for (int i = 0; i < n; i++) {
        ASSERT_EQ(p[i].calls, 4 * RUNS + 1);
        ASSERT_EQ(p[i].dims[0], 1);
    }
    inf_session_free(s);
    inf_tensor_free(x);
    inf_model_free(m);
}

TEST(profiled_warm_run_allocates_nothing) {
    inf_model *m = load_model("cnn.onnx");
    inf_tensor *x = load_npy("cnn_input.npy");
    ASSERT_TRUE(m && x);
    inf_session *s = profiled_session(m, 2, 0);
    ASSERT_TRUE(s != NULL);
    const inf_tensor *in[1] = {x};
    inf_tensor *const *out;
    inf_error err;
    for (int i = 0; i < 3; i++) ASSERT_OK(inf_session_run(s, in, &out, &err));
    inf_alloc_stats before, after;
    inf_alloc_get_stats(&before);
    for (int i = 0; i < 20; i++) ASSERT_OK(inf_session_run(s, in, &out, &err));
    inf_session_profile_reset(s);
    inf_alloc_get_stats(&after);
    ASSERT_EQ(after.n_allocs - before.n_allocs, 0);
    ASSERT_EQ(after.n_frees - before.n_frees, 0);
    inf_session_free(s);
    inf_tensor_free(x);
    inf_model_free(m);
}
