/*
 * test_memplan.c -- the memory planner and in-place execution
 * (src/graph/memplan.c): placement never overlaps two buffers that live at
 * the same time; chains need two buffers (one when the ops run in place);
 * planned runs, also at a smaller batch than the plan's, allocate nothing;
 * values read by two nodes and graph outputs are never overwritten in place;
 * and every test and bench model gives the same bits with the planner on and
 * off, with an arena no larger than the pool's peak.
 */
#include <dirent.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "graph/memplan.h"
#include "ops/ops.h"
#include "infera/session.h"
#include "test.h"

#define MAX_IO 16

static inf_session *open_session(const inf_model *m, int threads, int sub_batch, int mem_plan) {
    inf_session_options o;
    inf_session_options_init(&o);
    o.n_threads = threads;
    o.sub_batch = sub_batch;
    o.mem_plan = mem_plan;
    inf_session *s = NULL;
    inf_error err;
    if (inf_session_new(m, &o, &s, &err) != INF_OK) fprintf(stderr, "session: %s\n", err.message);
    return s;
}

static inf_status load_path(const char *dir, const char *name, inf_model **m) {
    char path[1024];
    inf_error err;
    snprintf(path, sizeof path, "%s/%s/%s", INFERA_SOURCE_DIR, dir, name);
    inf_status st = inf_model_load(path, NULL, m, &err);
    if (st != INF_OK) fprintf(stderr, "%s: %s\n", path, err.message);
    return st;
}

/* Random inputs of `batch` rows for every input of m (free dims: 4; integer
 * inputs 0 or 1, valid as indices and ids); false when one cannot be made. */
static bool make_inputs(const inf_model *m, int64_t batch, uint64_t seed, inf_tensor **in) {
    int n = inf_model_n_inputs(m);
    for (int i = 0; i < n; i++) in[i] = NULL;
    for (int i = 0; i < n && i < MAX_IO; i++) {
        const inf_value_info *info = inf_model_input(m, i);
        if (info->kind != INF_KIND_TENSOR || info->ndim < 0) return false;
        int64_t dims[INF_MAX_DIMS];
        for (int d = 0; d < info->ndim; d++) dims[d] = info->dims[d] >= 0 ? info->dims[d] : d == 0 ? batch : 4;
        inf_dtype dt = info->dtype == INF_DTYPE_UNDEFINED ? INF_DTYPE_F32 : info->dtype;
        if (inf_tensor_new(dt, info->ndim, dims, &in[i]) != INF_OK) return false;
        int64_t numel = inf_tensor_numel(in[i]);
        if (dt == INF_DTYPE_F32) test_fill_uniform(in[i]->data, (int)numel, seed + (uint64_t)i, -1.0, 1.0);
        else if (dt == INF_DTYPE_STRING) return false;
        else
            for (int64_t k = 0; k < numel; k++) inf__tensor_set_f64(in[i], k, (double)((k * 7 + (int64_t)seed) % 2));
    }
    return n <= MAX_IO;
}

static void free_all(inf_tensor **t, int n) {
    for (int i = 0; i < n; i++) {
        inf_tensor_free(t[i]);
        t[i] = NULL;
    }
}

/* Runs s on in and clones the outputs; the output count, or -1. */
static int run_clone(inf_session *s, inf_tensor **in, inf_tensor **out) {
    inf_tensor *const *o;
    inf_error err;
    if (inf_session_run(s, (const inf_tensor *const *)in, &o, &err) != INF_OK) {
        fprintf(stderr, "run: %s\n", err.message);
        return -1;
    }
    int n = inf_model_n_outputs(inf_session_model(s));
    for (int i = 0; i < n && i < MAX_IO; i++)
        if (!o[i] || inf_tensor_clone(o[i], &out[i]) != INF_OK) return -1;
    return n < MAX_IO ? n : MAX_IO;
}

static bool same_bits(const inf_tensor *a, const inf_tensor *b) {
    if (a->kind != b->kind || a->kind != INF_KIND_TENSOR) return a->kind == b->kind;
    if (a->dtype != b->dtype || a->ndim != b->ndim) return false;
    for (int d = 0; d < a->ndim; d++)
        if (a->dims[d] != b->dims[d]) return false;
    return a->dtype == INF_DTYPE_STRING || !memcmp(a->data, b->data, inf_tensor_nbytes(a));
}

/* ---- placement ---- */

TEST(memplan_places_lifetimes_without_overlap) {
    enum { N = 200 };
    inf__memreq req[N];
    size_t offset[N];
    int order[2 * N];
    uint64_t r = 12345;
    for (int i = 0; i < N; i++) {
        r = r * 6364136223846793005ull + 1442695040888963407ull;
        int first = (int)(r >> 33) % 100, len = (int)(r >> 20) % 12;
        req[i] = (inf__memreq){(size_t)((r >> 40) % 5000), first, first + len};
    }
    size_t total = inf__memplan_place(req, N, offset, order), sum = 0;
    for (int i = 0; i < N; i++) {
        size_t si = req[i].size < 64 ? 64 : (req[i].size + 63) / 64 * 64;
        sum += si;
        ASSERT_EQ(offset[i] % 64, 0);
        ASSERT_TRUE(offset[i] + si <= total);
        for (int j = 0; j < i; j++) {
            size_t sj = req[j].size < 64 ? 64 : (req[j].size + 63) / 64 * 64;
            bool meet = req[i].first <= req[j].last && req[j].first <= req[i].last;
            bool overlap = offset[i] < offset[j] + sj && offset[j] < offset[i] + si;
            if (meet && overlap) TEST_FAIL_AT("requests %d and %d live together and share bytes", i, j);
        }
    }
    ASSERT_TRUE(total < sum);
    /* a chain: each value lives from its producer to its one reader */
    for (int i = 0; i < 10; i++) req[i] = (inf__memreq){4096, i, i + 1};
    ASSERT_EQ(inf__memplan_place(req, 10, offset, order), 2 * 4096);
}

/* The guard: requests past the limit (one huge buffer, or a pool that would
 * hold more than it in total) fail before the allocator is asked -- the
 * allocator's counters do not move -- so a hostile shape cannot depend on
 * malloc returning NULL (ASan and libFuzzer abort instead). */
TEST(memplan_refuses_past_the_limit_before_allocating) {
    inf__mem m;
    inf__mem_init(&m, true);
    m.limit = (size_t)1 << 20;
    inf_alloc_stats before, after;
    inf_alloc_get_stats(&before);
    ASSERT_TRUE(inf__mem_take(&m, (size_t)2 << 20, true) == NULL);
    ASSERT_TRUE(m.over_limit);
    m.over_limit = false;
    ASSERT_TRUE(inf__mem_take(&m, SIZE_MAX / 2, false) == NULL);
    ASSERT_TRUE(inf__mem_take(&m, SIZE_MAX, false) == NULL);
    m.over_limit = false;
    inf_alloc_get_stats(&after);
    ASSERT_EQ(after.n_allocs, before.n_allocs);
    ASSERT_EQ(after.n_failed, before.n_failed);
    inf__buf *a = inf__mem_take(&m, 600 << 10, false);
    ASSERT_TRUE(a != NULL);
    ASSERT_TRUE(!m.over_limit);
    ASSERT_TRUE(inf__mem_take(&m, 600 << 10, false) == NULL); /* 1.2 MB in all */
    ASSERT_TRUE(m.over_limit);
    inf__mem_release(&m, a);
    inf__mem_deinit(&m);
    inf__mem_init(&m, true); /* limit 0: the machine's physical memory */
    ASSERT_EQ(inf__mem_limit(&m), inf__phys_memory_bytes());
    ASSERT_TRUE(inf__mem_take(&m, SIZE_MAX / 2, false) == NULL);
    ASSERT_TRUE(m.over_limit);
    inf__mem_deinit(&m);
}

/* A plan whose sizes add up past SIZE_MAX saturates instead of wrapping to a
 * small arena. */
TEST(memplan_huge_plan_saturates) {
    inf__memreq req[3] = {{SIZE_MAX / 2, 0, 2}, {SIZE_MAX / 2, 0, 2}, {SIZE_MAX - 8, 1, 2}};
    size_t offset[3];
    int order[6];
    ASSERT_EQ(inf__memplan_place(req, 3, offset, order), SIZE_MAX);
}

/* A session with a memory limit refuses a batch past it with a clean error
 * naming the option, and runs the batch that fits. */
TEST(memplan_session_memory_limit) {
    inf_model *m;
    ASSERT_OK(load_path("tests/models", "mlp.onnx", &m));
    inf_session_options o;
    inf_session_options_init(&o);
    o.max_memory_bytes = 64 << 10;
    inf_session *s = NULL;
    inf_error err;
    ASSERT_OK(inf_session_new(m, &o, &s, &err));
    inf_tensor *in[MAX_IO];
    inf_tensor *const *out;
    ASSERT_TRUE(make_inputs(m, 4096, 1, in));
    ASSERT_EQ(inf_session_run(s, (const inf_tensor *const *)in, &out, &err), INF_ENOMEM);
    ASSERT_TRUE(strstr(err.message, "max_memory_bytes") != NULL);
    for (int i = 0; i < inf_model_n_inputs(m); i++)
        inf_tensor_free(in[i]);
    ASSERT_TRUE(make_inputs(m, 1, 1, in));
    ASSERT_OK(inf_session_run(s, (const inf_tensor *const *)in, &out, &err));
    for (int i = 0; i < inf_model_n_inputs(m); i++)
        inf_tensor_free(in[i]);
    inf_session_free(s);
    inf_model_free(m);
}

/* ---- runs against a plan (inf__mem driven as the executor drives it) ---- */

/* One run: a at step 0, b at step 1, c at step 2 (the output, live at the
 * end: *c); a is released at step 1 unless held (then at step 2).  data[]
 * and entry[] tell where a, b and c were while they lived. */
static void three_step_run(inf__mem *m, bool hold_a, inf__buf **c, char **data, int *entry) {
    inf__buf *buf[3];
    inf__mem_run_begin(m);
    inf__mem_step(m, 0);
    buf[0] = inf__mem_take(m, 1000, true);
    inf__mem_step(m, 1);
    buf[1] = inf__mem_take(m, 1000, true);
    if (!hold_a) inf__mem_release(m, buf[0]);
    inf__mem_step(m, 2);
    buf[2] = *c = inf__mem_take(m, 1000, true);
    for (int i = 0; i < 3; i++) {
        data[i] = buf[i]->data;
        entry[i] = buf[i]->entry;
    }
    if (hold_a) inf__mem_release(m, buf[0]);
    inf__mem_release(m, buf[1]);
    inf__mem_run_end(m, 3, true);
}

static bool apart(const char *x, const char *y, size_t n) { return x + n <= y || y + n <= x; }

TEST(memplan_run_that_outlives_its_plan_leaves_the_arena) {
    inf__mem m;
    inf__buf *c;
    char *data[3];
    int entry[3];
    inf__mem_init(&m, true);
    three_step_run(&m, false, &c, data, entry); /* recorded: a [0,1], b [1,2], c [2,3] */
    ASSERT_EQ(m.n_plan, 3);
    ASSERT_EQ(m.arena_bytes, 2048); /* a and c share bytes */
    inf__mem_release(&m, c);
    three_step_run(&m, false, &c, data, entry);
    ASSERT_EQ(m.runs_planned, 1);
    ASSERT_TRUE(data[0] == data[2] && entry[0] >= 0 && entry[2] >= 0);
    inf__mem_release(&m, c);
    /* a lives past its planned last step: c must not get a's bytes */
    three_step_run(&m, true, &c, data, entry);
    ASSERT_EQ(entry[2], -1); /* from the pool */
    ASSERT_TRUE(apart(data[0], data[2], 1000) && apart(data[1], data[2], 1000));
    ASSERT_EQ(m.n_plans, 2); /* same requests: merged, a now lives to step 2 */
    inf__mem_release(&m, c);
    three_step_run(&m, true, &c, data, entry);
    ASSERT_EQ(m.runs_planned, 1);
    ASSERT_TRUE(entry[0] >= 0 && entry[2] >= 0 && apart(data[0], data[2], 1000));
    inf__mem_release(&m, c);
    inf__mem_deinit(&m);
}

/* Two shapes whose requests differ, taking turns: the planner stops
 * switching plans and the other shape uses the warm pool. */
TEST(memplan_alternating_request_patterns_stop_allocating) {
    inf__mem m;
    inf__mem_init(&m, true);
    inf_alloc_stats before, after;
    for (int run = 0; run < 40; run++) {
        if (run == 8) inf_alloc_get_stats(&before);
        int n = run % 2 ? 3 : 2;
        inf__buf *bufs[3];
        inf__mem_run_begin(&m);
        inf__mem_step(&m, 0);
        for (int i = 0; i < n; i++) bufs[i] = inf__mem_take(&m, 512 * (size_t)(i + 1), true);
        for (int i = 0; i < n; i++) inf__mem_release(&m, bufs[i]);
        inf__mem_run_end(&m, 1, true);
    }
    inf_alloc_get_stats(&after);
    ASSERT_EQ(after.n_allocs - before.n_allocs, 0);
    ASSERT_TRUE(m.n_plans <= 3);
    inf__mem_deinit(&m);
}

/* ---- chains ---- */

/* Runs model dir/name at batch rows `runs` times with the planner on and
 * once more off; checks the bits agree; *on and *off get the memory stats. */
static void run_on_off(const char *name, int64_t batch, int runs, inf__memstats *on, inf__memstats *off) {
    inf_model *m;
    inf_tensor *in[MAX_IO], *a[MAX_IO] = {0}, *b[MAX_IO] = {0};
    char file[64];
    snprintf(file, sizeof file, "%s.onnx", name);
    ASSERT_OK(load_path("tests/models/memplan", file, &m));
    ASSERT_TRUE(make_inputs(m, batch, 7, in));
    inf_session *s_on = open_session(m, 1, -1, 0), *s_off = open_session(m, 1, -1, -1);
    ASSERT_TRUE(s_on && s_off);
    int n = 0;
    for (int i = 0; i < runs; i++) {
        free_all(a, MAX_IO);
        n = run_clone(s_on, in, a);
        ASSERT_TRUE(n > 0);
    }
    ASSERT_EQ(run_clone(s_off, in, b), n);
    for (int i = 0; i < n; i++)
        if (!same_bits(a[i], b[i])) TEST_FAIL_AT("%s: output %d differs with the planner on", name, i);
    inf__session_memstats(s_on, on);
    inf__session_memstats(s_off, off);
    free_all(a, MAX_IO);
    free_all(b, MAX_IO);
    free_all(in, inf_model_n_inputs(m));
    inf_session_free(s_on);
    inf_session_free(s_off);
    inf_model_free(m);
}

TEST(memplan_chain_arena_holds_two_intermediates) {
    inf__memstats on, off;
    size_t one = 16 * 256 * sizeof(float);
    run_on_off("chain", 16, 3, &on, &off);
    ASSERT_EQ(on.arena_bytes, 2 * one); /* ten Softmax nodes, two buffers */
    ASSERT_TRUE(off.pool_peak >= on.arena_bytes);
    ASSERT_EQ(on.n_plan, 10);
    ASSERT_EQ(on.runs_planned, 2);
    ASSERT_EQ(on.pool_bytes, 0); /* the plan took over: the pool's buffers went back to the heap */
    ASSERT_EQ(off.arena_bytes, 0);
    ASSERT_EQ(off.n_inplace, 0);
}

TEST(memplan_unary_chain_runs_in_one_buffer) {
    inf__memstats on, off;
    run_on_off("unary", 16, 2, &on, &off);
    ASSERT_EQ(on.arena_bytes, 16 * 256 * sizeof(float)); /* ten ops, one buffer */
    ASSERT_EQ(on.n_plan, 1);
    ASSERT_EQ(on.n_inplace, 2 * 9);                       /* all but the first node, both runs */
}

/* fanout.onnx: y = (sigmoid(t) + tanh(t) + sum(x, axis 0)) * abs(g), t =
 * relu(x), g = exp(x).  t is read by two nodes, g is a graph output read by
 * Abs, and sum(x) is broadcast: none may be overwritten.  Only Tanh (the
 * last reader of t), both Adds (over their full-shape operand) and Mul run
 * in place. */
TEST(memplan_inplace_keeps_shared_values_and_outputs) {
    inf__memstats on, off;
    run_on_off("fanout", 5, 3, &on, &off);
    ASSERT_EQ(on.n_inplace, 3 * 4);
    inf_model *m;
    inf_tensor *in[MAX_IO], *out[MAX_IO] = {0};
    ASSERT_OK(load_path("tests/models/memplan", "fanout.onnx", &m));
    ASSERT_TRUE(make_inputs(m, 5, 3, in));
    inf_session *s = open_session(m, 1, -1, 0);
    ASSERT_TRUE(s != NULL);
    for (int r = 0; r < 2; r++) {
        free_all(out, MAX_IO);
        ASSERT_EQ(run_clone(s, in, out), 2);
    }
    const float *x = in[0]->data, *y = out[0]->data, *g = out[1]->data;
    for (int j = 0; j < 8; j++) {
        double col = 0;
        for (int i = 0; i < 5; i++) col += x[i * 8 + j];
        for (int i = 0; i < 5; i++) {
            double v = x[i * 8 + j], t = v > 0 ? v : 0;
            double want = (1 / (1 + exp(-t)) + tanh(t) + col) * fabs(exp(v));
            ASSERT_NEAR(y[i * 8 + j], want, 1e-5 * (1 + fabs(want)));
            ASSERT_NEAR(g[i * 8 + j], exp(v), 1e-6 * exp(v));
        }
    }
    free_all(out, MAX_IO);
    free_all(in, 1);
    inf_session_free(s);
    inf_model_free(m);
}

/* ---- zero allocation ---- */

TEST(memplan_smaller_batch_after_larger_allocates_nothing) {
    inf_model *m;
    inf_tensor *big[MAX_IO], *small[MAX_IO], *odd[MAX_IO];
    ASSERT_OK(load_path("tests/models", "mlp.onnx", &m));
    ASSERT_TRUE(make_inputs(m, 64, 1, big) && make_inputs(m, 16, 2, small) && make_inputs(m, 7, 3, odd));
    inf_session *s = open_session(m, 1, -1, 0);
    ASSERT_TRUE(s != NULL);
    inf_tensor *const *out;
    inf_error err;
    ASSERT_OK(inf_session_run(s, (const inf_tensor *const *)big, &out, &err)); /* plans for 64 rows */
    ASSERT_OK(inf_session_run(s, (const inf_tensor *const *)big, &out, &err)); /* frees the pool's last buffers */
    inf_alloc_stats before, after;
    inf_alloc_get_stats(&before);
    for (int i = 0; i < 30; i++) {
        inf_tensor **in = i % 3 == 0 ? small : i % 3 == 1 ? odd : big;
        ASSERT_OK(inf_session_run(s, (const inf_tensor *const *)in, &out, &err));
    }
    inf_alloc_get_stats(&after);
    ASSERT_EQ(after.n_allocs - before.n_allocs, 0);
    ASSERT_EQ(after.n_frees - before.n_frees, 0);
    inf__memstats st;
    inf__session_memstats(s, &st);
    ASSERT_EQ(st.n_plans, 1);
    ASSERT_EQ(st.runs_planned, 31);
    ASSERT_EQ(st.pool_bytes, 0);
    /* a larger batch leaves the plan once, replans, and the arena grows to it */
    inf_tensor *huge[MAX_IO];
    ASSERT_TRUE(make_inputs(m, 100, 4, huge));
    ASSERT_OK(inf_session_run(s, (const inf_tensor *const *)huge, &out, &err));
    inf__memstats grown;
    inf__session_memstats(s, &grown);
    ASSERT_EQ(grown.n_plans, 2);
    ASSERT_TRUE(grown.arena_bytes > st.arena_bytes);
    ASSERT_OK(inf_session_run(s, (const inf_tensor *const *)small, &out, &err));
    inf_alloc_get_stats(&before);
    for (int i = 0; i < 10; i++)
        ASSERT_OK(inf_session_run(s, (const inf_tensor *const *)(i % 2 ? huge : small), &out, &err));
    inf_alloc_get_stats(&after);
    ASSERT_EQ(after.n_allocs - before.n_allocs, 0);
    free_all(big, 1);
    free_all(small, 1);
    free_all(odd, 1);
    free_all(huge, 1);
    inf_session_free(s);
    inf_model_free(m);
}

/* ---- every model: same bits, arena <= pool ---- */

/* Runs dir/file at batches 3, 2, 3 (planner on: plan, smaller batch on the
 * plan, larger again) with the planner on and off, threads and sub-batches
 * as given; *n_ran counts the models that ran on made-up inputs.  strict:
 * the arena may not exceed the pool's peak by a byte. */
static void compare_model(const char *dir, const char *file, int threads, int sub_batch, const int64_t *batches,
                          int n_batches, bool strict, int *n_ran) {
    inf_model *m;
    if (load_path(dir, file, &m) != INF_OK) return;
    inf_session *s_on = open_session(m, threads, sub_batch, 0), *s_off = open_session(m, threads, sub_batch, -1);
    bool ran = s_on && s_off;
    for (int r = 0; r < n_batches && ran; r++) {
        inf_tensor *in[MAX_IO], *a[MAX_IO] = {0}, *b[MAX_IO] = {0};
        ran = make_inputs(m, batches[r], 11 + (uint64_t)r, in);
        int n = ran ? run_clone(s_off, in, b) : -1;
        ran = n >= 0;
        if (ran) ASSERT_EQ(run_clone(s_on, in, a), n);
        for (int i = 0; ran && i < n; i++)
            if (!same_bits(a[i], b[i]))
                TEST_FAIL_AT("%s/%s: output %d differs with the planner on (batch %lld)", dir, file, i,
                             (long long)batches[r]);
        free_all(a, MAX_IO);
        free_all(b, MAX_IO);
        free_all(in, inf_model_n_inputs(m) < MAX_IO ? inf_model_n_inputs(m) : MAX_IO);
    }
    if (ran && sub_batch < 0) {
        /* the arena rounds each buffer up to 64 bytes, which only tiny models notice */
        inf__memstats on, off;
        inf__session_memstats(s_on, &on);
        inf__session_memstats(s_off, &off);
        if (on.arena_bytes > off.pool_peak + (size_t)(strict ? 0 : 64 * on.n_plan))
            TEST_FAIL_AT("%s/%s: arena %zu bytes > the pool's peak %zu", dir, file, on.arena_bytes, off.pool_peak);
    }
    inf_session_free(s_on);
    inf_session_free(s_off);
    inf_model_free(m);
    *n_ran += ran;
}

static int compare_dir(const char *dir, int threads, int sub_batch, const int64_t *batches, int n_batches,
                       bool strict) {
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", INFERA_SOURCE_DIR, dir);
    DIR *d = opendir(path);
    if (!d) return 0;
    int n = 0;
    for (struct dirent *e; (e = readdir(d));) {
        size_t len = strlen(e->d_name);
        if (len < 6 || strcmp(e->d_name + len - 5, ".onnx") != 0 || strncmp(e->d_name, "bad_", 4) == 0) continue;
        compare_model(dir, e->d_name, threads, sub_batch, batches, n_batches, strict, &n);
    }
    closedir(d);
    return n;
}

TEST(memplan_results_match_pool_on_every_model) {
    static const int64_t small[] = {3, 2, 3}, bench[] = {2, 1};
    int n = 0;
    static const char *const dirs[] = {"tests/models", "tests/models/subbatch", "tests/models/memplan"};
    for (int i = 0; i < 3; i++) {
        n += compare_dir(dirs[i], 1, -1, small, 3, false);
        n += compare_dir(dirs[i], 2, 0, small, 3, false); /* sub-batch frames plan too */
    }
    ASSERT_TRUE(n >= 40);
    /* the benchmark models exist once bench/gen_bench_models.py has run (bench/run.sh), not in a fresh clone */
    int n_bench = compare_dir("bench/models", 1, -1, bench, 2, true);
    ASSERT_TRUE(n_bench == 0 || n_bench == 3);
}
