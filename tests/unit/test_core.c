/*
 * test_core.c -- unit tests of src/core: status codes, allocator and fault
 * injection, arena, tensors, half-precision conversions, thread pool.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#ifdef __linux__
#include <sched.h>
#endif

#include "core/core.h"
#include "test.h"

TEST(status_messages_and_codes) {
    ASSERT_STR_EQ(inf_strerror(INF_OK), "success");
    ASSERT_STR_EQ(inf_strerror(INF_ENOMEM), "out of memory");
    ASSERT_STR_EQ(inf_status_name(INF_ESHAPE), "INF_ESHAPE");
    ASSERT_EQ(inf_status_http_code(INF_EINVAL), 400);
    ASSERT_EQ(inf_status_http_code(INF_EUNSUPPORTED), 501);
    ASSERT_STR_EQ(inf_strerror((inf_status)-999), "unknown status");
}

TEST(error_report_formats_and_prefixes) {
    inf_error err;
    ASSERT_STATUS(inf_error_set(&err, INF_ESHAPE, "input '%s' has rank %d", "x", 3), INF_ESHAPE);
    ASSERT_EQ(err.status, INF_ESHAPE);
    ASSERT_STR_EQ(err.message, "input 'x' has rank 3");
    inf__error_prefix(&err, "model.onnx");
    ASSERT_STR_EQ(err.message, "model.onnx: input 'x' has rank 3");
    ASSERT_STATUS(inf_error_set(NULL, INF_EIO, "ignored"), INF_EIO); /* NULL report is allowed */
}

TEST(allocator_counts_and_injected_failures) {
    inf_alloc_stats before, after;
    inf_alloc_get_stats(&before);
    void *p = inf__malloc(100);
    ASSERT_TRUE(p != NULL);
    inf_alloc_get_stats(&after);
    ASSERT_EQ(after.n_allocs - before.n_allocs, 1);
    ASSERT_EQ(after.bytes_live - before.bytes_live, 100);
    inf__free(p);
    inf_alloc_get_stats(&after);
    ASSERT_EQ(after.bytes_live, before.bytes_live);
    inf_alloc_fail_after(2);
    void *a = inf__malloc(8), *b = inf__malloc(8);
    inf_alloc_fail_after(0);
    ASSERT_TRUE(a != NULL);
    ASSERT_TRUE(b == NULL);
    inf__free(a);
    ASSERT_TRUE(inf__calloc(SIZE_MAX / 2, 4) == NULL); /* overflow is refused, not wrapped */
}

TEST(aligned_allocation_is_64_byte_aligned) {
    for (size_t n = 1; n < 5000; n += 777) {
        void *p = inf__aligned_alloc(n);
        ASSERT_TRUE(p != NULL);
        ASSERT_EQ((uintptr_t)p % 64, 0);
        inf__aligned_free(p);
    }
}

TEST(arena_allocates_zeroed_aligned_and_large_blocks) {
    inf__arena a;
    inf__arena_init(&a, 64);
    char *small = inf__arena_alloc(&a, 10);
    char *big = inf__arena_alloc(&a, 100000);
    ASSERT_TRUE(small && big);
    ASSERT_EQ((uintptr_t)big % 16, 0);
    for (int i = 0; i < 100000; i++)
        if (big[i]) TEST_FAIL_AT("arena memory not zeroed at %d", i);
    ASSERT_STR_EQ(inf__arena_strdup(&a, "hello"), "hello");
    ASSERT_STR_EQ(inf__arena_strndup(&a, "hello", 2), "he");
    inf__arena_deinit(&a);
}

TEST(tensor_new_numel_and_describe) {
    int64_t dims[3] = {2, 3, 4};
    inf_tensor *t;
    ASSERT_OK(inf_tensor_new(INF_DTYPE_F32, 3, dims, &t));
    ASSERT_EQ(inf_tensor_numel(t), 24);
    ASSERT_EQ(inf_tensor_nbytes(t), 96);
    char buf[64];
    ASSERT_STR_EQ(inf_tensor_describe(t, buf, sizeof buf), "float32[2,3,4]");
    inf_tensor_free(t);
    int64_t bad[1] = {-1};
    ASSERT_STATUS(inf_tensor_new(INF_DTYPE_F32, 1, bad, &t), INF_EINVAL);
    ASSERT_STATUS(inf_tensor_new(INF_DTYPE_UNDEFINED, 0, NULL, &t), INF_EINVAL);
    ASSERT_OK(inf_tensor_new(INF_DTYPE_I64, 0, NULL, &t)); /* scalar */
    ASSERT_EQ(inf_tensor_numel(t), 1);
    inf_tensor_free(t);
}

TEST(tensor_strings_sequences_and_clone) {
    int64_t n = 2;
    inf_tensor *s, *copy, *seq;
    ASSERT_OK(inf_tensor_new(INF_DTYPE_STRING, 1, &n, &s));
    ASSERT_OK(inf_tensor_set_string(s, 0, "abc", 3));
    ASSERT_OK(inf_tensor_set_string(s, 1, "de", 2));
    ASSERT_STATUS(inf_tensor_set_string(s, 2, "x", 1), INF_EINVAL);
    ASSERT_OK(inf_tensor_clone(s, &copy));
    ASSERT_STR_EQ(((char **)copy->data)[0], "abc");
    ASSERT_TRUE(((char **)copy->data)[1] != ((char **)s->data)[1]); /* deep copy */
    ASSERT_OK(inf_tensor_new_sequence(INF_DTYPE_STRING, &seq));
    ASSERT_OK(inf_tensor_sequence_append(seq, s));
    ASSERT_OK(inf_tensor_sequence_append(seq, copy));
    inf_tensor *seq2;
    ASSERT_OK(inf_tensor_clone(seq, &seq2));
    ASSERT_EQ(seq2->kind, INF_KIND_SEQUENCE);
    ASSERT_EQ(seq2->n_items, 2);
    ASSERT_STR_EQ(((char **)seq2->items[1]->data)[1], "de");
    inf_tensor_free(seq);
    inf_tensor_free(seq2);
}

TEST(dtype_names_round_trip) {
    for (int d = 1; d < INF_DTYPE_COUNT; d++)
        ASSERT_EQ(inf_dtype_from_name(inf_dtype_name((inf_dtype)d)), d);
    ASSERT_EQ(inf_dtype_from_name("FP32"), INF_DTYPE_F32);
    ASSERT_EQ(inf_dtype_from_name("BYTES"), INF_DTYPE_STRING);
    ASSERT_EQ(inf_dtype_from_name("nonsense"), INF_DTYPE_UNDEFINED);
    ASSERT_EQ(inf_dtype_size(INF_DTYPE_BF16), 2);
}

TEST(half_precision_conversions) {
    /* exact values, rounding to nearest even, subnormals, infinities, NaN */
    ASSERT_EQ(inf_f32_to_f16(1.0f), 0x3c00);
    ASSERT_EQ(inf_f32_to_f16(-2.0f), 0xc000);
    ASSERT_EQ(inf_f32_to_f16(65504.0f), 0x7bff);
    ASSERT_EQ(inf_f32_to_f16(65520.0f), 0x7c00); /* rounds up to infinity */
    ASSERT_EQ(inf_f32_to_f16(5.960464477539063e-08f), 0x0001);
    ASSERT_EQ(inf_f32_to_f16(1.0f + 1.0f / 2048), 0x3c00); /* tie -> even */
    ASSERT_EQ(inf_f32_to_f16(1.0f + 3.0f / 2048), 0x3c02);
    ASSERT_NEAR(inf_f16_to_f32(0x3555), 0.333251953125, 0);
    ASSERT_NEAR(inf_f16_to_f32(0x0001), 5.960464477539063e-08, 0);
    ASSERT_TRUE(isinf(inf_f16_to_f32(0x7c00)));
    ASSERT_TRUE(isnan(inf_f16_to_f32(0x7e00)));
    for (uint32_t h = 0; h < 0x7c00; h++) /* every finite half survives a round trip */
        if (inf_f32_to_f16(inf_f16_to_f32((uint16_t)h)) != h) TEST_FAIL_AT("half 0x%04x does not round-trip", h);
    ASSERT_EQ(inf_f32_to_bf16(1.0f), 0x3f80);
    ASSERT_NEAR(inf_bf16_to_f32(0x4049), 3.140625, 0);
    ASSERT_EQ(inf_f32_to_bf16(1.00390625f), 0x3f80); /* tie -> even */
    ASSERT_TRUE(isnan(inf_bf16_to_f32(inf_f32_to_bf16(NAN))));
}

typedef struct pool_check {
    _Atomic int hits[1000];
    _Atomic int calls;
} pool_check;

static void mark_range(void *arg, int64_t begin, int64_t end) {
    pool_check *c = arg;
    atomic_fetch_add(&c->calls, 1);
    for (int64_t i = begin; i < end; i++) atomic_fetch_add(&c->hits[i], 1);
}

TEST(thread_pool_covers_every_index_once) {
    for (int threads = 1; threads <= 4; threads++) {
        inf__pool *pool;
        ASSERT_OK(inf__pool_new(threads, &pool));
        ASSERT_EQ(inf__pool_size(pool), threads);
        for (int round = 0; round < 50; round++) {
            pool_check *c = calloc(1, sizeof *c);
            int n = 1 + round * 19 % 1000;
            inf__pool_range(pool, n, 1, mark_range, c);
            for (int i = 0; i < n; i++)
                if (c->hits[i] != 1) TEST_FAIL_AT("threads=%d n=%d: index %d hit %d times", threads, n, i, c->hits[i]);
            free(c);
        }
        inf__pool_free(pool);
    }
}

/* mark_range with a few microseconds of work per index, longer than the
 * test's checks, so that a chunk still running when the caller returns
 * would be seen. */
static void mark_range_slowly(void *arg, int64_t begin, int64_t end) {
    for (volatile int64_t spin = 0; spin < 3000 * (end - begin); spin++) {
    }
    mark_range(arg, begin, end);
}

/* The first index of c not hit exactly once below n and never from n on, or -1. */
static int first_bad_hit(const pool_check *c, int n) {
    for (int i = 0; i < 1000; i++)
        if (c->hits[i] != (i < n)) return i;
    return -1;
}

/* Many back-to-back jobs on an oversubscribed pool (4 threads on fewer
 * cores, so workers are descheduled mid-wait and wake late), alternating
 * between two targets: a worker that ran a chunk with the previous job's
 * function/argument or range would mark the other target again or miss an
 * index of this one, and a caller that returned before a claimed chunk
 * finished would see an index not yet marked. */
TEST(thread_pool_late_workers_never_run_a_stale_job) {
    inf__pool *pool;
    ASSERT_OK(inf__pool_new(4, &pool));
    pool_check *c[2] = {calloc(1, sizeof(pool_check)), calloc(1, sizeof(pool_check))};
    ASSERT_TRUE(c[0] && c[1]);
    int n_of[2] = {0, 0};
    for (int job = 0; job < 3000; job++) {
        int t = job & 1, n = 2 + job * 7 % 63;
        memset(c[t], 0, sizeof *c[t]);
        n_of[t] = n;
        inf__pool_range(pool, n, 1, mark_range_slowly, c[t]);
        int bad = first_bad_hit(c[t], n), bad_prev = first_bad_hit(c[!t], n_of[!t]);
        if (bad >= 0) TEST_FAIL_AT("job %d (n=%d): index %d hit %d times", job, n, bad, c[t]->hits[bad]);
        if (bad_prev >= 0) TEST_FAIL_AT("job %d: the previous job's index %d now hit %d times", job, bad_prev, c[!t]->hits[bad_prev]);
    }
    inf__pool_free(pool);
    free(c[0]);
    free(c[1]);
}

#ifdef __linux__
static bool same_cpus(const cpu_set_t *a, const cpu_set_t *b) { return CPU_EQUAL(a, b); }

/* The move a pool worker makes when it finds itself on its caller's CPU
 * (threadpool.c): the thread is put on the first allowed CPU (pinned there,
 * then unpinned: it keeps running where it is), moved off it, and must then
 * run on another CPU with its affinity as it was (a nudge, not a pin).
 * Asking for more CPUs than are allowed must change nothing.  Needs Linux
 * and 2+ usable CPUs (passes trivially otherwise). */
TEST(thread_pool_worker_leaves_the_callers_cpu) {
    cpu_set_t all, one, after;
    if (pthread_getaffinity_np(pthread_self(), sizeof all, &all) != 0 || CPU_COUNT(&all) < 2) return;
    int first = 0;
    while (!CPU_ISSET(first, &all)) first++;
    CPU_ZERO(&one);
    CPU_SET(first, &one);
    /* no early return from here on: the affinity is put back first */
    bool placed = pthread_setaffinity_np(pthread_self(), sizeof one, &one) == 0 && sched_getcpu() == first &&
                  pthread_setaffinity_np(pthread_self(), sizeof all, &all) == 0;
    bool refused = !inf__thread_move_off_cpu(first, CPU_COUNT(&all) + 1);
    int before_move = sched_getcpu();
    bool moved = inf__thread_move_off_cpu(first, 2);
    int cpu = sched_getcpu();
    bool kept = pthread_getaffinity_np(pthread_self(), sizeof after, &after) == 0 && same_cpus(&after, &all);
    pthread_setaffinity_np(pthread_self(), sizeof all, &all);
    if (!placed) TEST_FAIL_AT("could not put the test thread on CPU %d", first);
    if (!refused) TEST_FAIL_AT("moved although more CPUs than allowed were asked for");
    if (!moved) TEST_FAIL_AT("inf__thread_move_off_cpu(%d) failed (thread was on CPU %d)", first, before_move);
    if (cpu == first) TEST_FAIL_AT("still on CPU %d after moving off it", first);
    if (!kept) TEST_FAIL_AT("the thread's affinity was not put back after the move");
}
#else
TEST(thread_pool_worker_leaves_the_callers_cpu) {} /* the move is Linux-only */
#endif

/* Which thread ran each index of a job, for the claim-order test. */
typedef struct owner_check {
    pthread_t caller;
    _Atomic int by_caller[256]; /* 1: the caller ran it, 2: a worker */
} owner_check;

static void mark_owner(void *arg, int64_t begin, int64_t end) {
    owner_check *c = arg;
    for (volatile int spin = 0; spin < 2000; spin++) {
    }
    for (int64_t i = begin; i < end; i++)
        atomic_store(&c->by_caller[i], pthread_equal(pthread_self(), c->caller) ? 1 : 2);
}

/* The pool's claims (threadpool.c): the caller takes chunks from the front
 * and the worker from the back, so the caller's indices are a prefix of the
 * range and the worker's the rest -- whatever the timing, and whoever ran
 * more (the attention, Winograd and direct-convolution splits count on it
 * to give each thread the same heads or rows from node to node). */
TEST(thread_pool_caller_claims_the_front) {
    inf__pool *pool;
    ASSERT_OK(inf__pool_new(2, &pool));
    for (int round = 0; round < 200; round++) {
        owner_check *c = calloc(1, sizeof *c);
        ASSERT_TRUE(c != NULL);
        c->caller = pthread_self();
        int n = 2 + round % 255;
        inf__pool_range(pool, n, 1, mark_owner, c);
        int split = 0;
        while (split < n && c->by_caller[split] == 1)
            split++;
        for (int i = split; i < n; i++)
            if (c->by_caller[i] != 2)
                TEST_FAIL_AT("n=%d: index %d ran on %d after the caller's prefix [0, %d)", n, i, c->by_caller[i],
                             split);
        free(c);
    }
    inf__pool_free(pool);
}

/* Slot workspaces (inf__pool_slot_workspace): asked for by whichever thread
 * runs the slot, one buffer per slot, 64-byte aligned, kept while large
 * enough; NULL without a pool, with one thread or out of range. */
typedef struct slot_ws_check {
    inf__pool *pool;
    size_t bytes;
    void *got[3];
} slot_ws_check;

static void take_slot_ws(void *arg, int64_t begin, int64_t end) {
    slot_ws_check *c = arg;
    for (int64_t s = begin; s < end; s++) {
        unsigned char *w = inf__pool_slot_workspace(c->pool, (int)s, c->bytes);
        if (w) memset(w, (int)s + 1, c->bytes); /* each slot writes all of its own buffer */
        c->got[s] = w;
    }
}

TEST(thread_pool_slot_workspace) {
    ASSERT_TRUE(inf__pool_slot_workspace(NULL, 0, 64) == NULL);
    inf__pool *one, *pool;
    ASSERT_OK(inf__pool_new(1, &one));
    ASSERT_TRUE(inf__pool_slot_workspace(one, 0, 64) == NULL);
    inf__pool_free(one);
    ASSERT_OK(inf__pool_new(3, &pool));
    ASSERT_TRUE(inf__pool_slot_workspace(pool, 3, 64) == NULL);
    ASSERT_TRUE(inf__pool_slot_workspace(pool, -1, 64) == NULL);
    slot_ws_check c = {pool, 100000, {NULL, NULL, NULL}};
    void *kept[3] = {NULL, NULL, NULL};
    for (int round = 0; round < 50; round++) {
        c.bytes = round == 0 ? 100000 : round % 2 ? 150000 : 4096; /* grows in round 1, then kept */
        inf__pool_range(pool, 3, 1, take_slot_ws, &c);
        for (int s = 0; s < 3; s++) {
            ASSERT_TRUE(c.got[s] != NULL);
            ASSERT_EQ((uintptr_t)c.got[s] % 64, 0);
            const unsigned char *w = c.got[s];
            ASSERT_TRUE(w[0] == s + 1 && w[c.bytes - 1] == s + 1); /* no other slot wrote into it */
            if (round == 1) kept[s] = c.got[s];
            if (round > 1) ASSERT_TRUE(c.got[s] == kept[s]);
        }
    }
    ASSERT_TRUE(c.got[0] != c.got[1] && c.got[1] != c.got[2] && c.got[0] != c.got[2]);
    inf__pool_free(pool);
}

TEST(thread_pool_single_thread_runs_inline) {
    pool_check *c = calloc(1, sizeof *c);
    inf__pool_range(NULL, 10, 1, mark_range, c);
    ASSERT_EQ(c->calls, 1);
    ASSERT_EQ(c->hits[9], 1);
    free(c);
}
