/*
 * test.h -- a tiny unit-test harness (after libuv's test/task.h).
 *
 * TEST(name) defines a test; list it in test_list.h.  Typed asserts print
 * both sides and the line, then fail the test (the runner goes on with the
 * next one).  The runner prints one line per test and closes with
 * "N passed, M failed".
 */
#ifndef INF_TEST_H
#define INF_TEST_H

#include <stdbool.h>
#include <stdint.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

extern int test_failed_flag;

#define TEST(name) void test_##name(void)

#define TEST_FAIL_AT(...)                                           \
    do {                                                            \
        fprintf(stderr, "    %s:%d: ", __FILE__, __LINE__);         \
        fprintf(stderr, __VA_ARGS__);                               \
        fputc('\n', stderr);                                        \
        test_failed_flag = 1;                                       \
        return;                                                     \
    } while (0)

#define ASSERT_TRUE(x) \
    do { if (!(x)) TEST_FAIL_AT("expected true: %s", #x); } while (0)
#define ASSERT_EQ(a, b)                                                                               \
    do {                                                                                              \
        long long _a = (long long)(a), _b = (long long)(b);                                           \
        if (_a != _b) TEST_FAIL_AT("%s == %s: %lld != %lld", #a, #b, _a, _b);                         \
    } while (0)
#define ASSERT_NE(a, b)                                                                               \
    do {                                                                                              \
        long long _a = (long long)(a), _b = (long long)(b);                                           \
        if (_a == _b) TEST_FAIL_AT("%s != %s: both %lld", #a, #b, _a);                                \
    } while (0)
#define ASSERT_OK(st)                                                                                 \
    do {                                                                                              \
        int _s = (int)(st);                                                                           \
        if (_s != 0) TEST_FAIL_AT("%s returned %d (%s)", #st, _s, inf_strerror((inf_status)_s));      \
    } while (0)
#define ASSERT_STATUS(st, want)                                                                       \
    do {                                                                                              \
        int _s = (int)(st), _w = (int)(want);                                                         \
        if (_s != _w) TEST_FAIL_AT("%s returned %s, expected %s", #st, inf_status_name((inf_status)_s), \
                                   inf_status_name((inf_status)_w));                                  \
    } while (0)
#define ASSERT_NEAR(a, b, tol)                                                                        \
    do {                                                                                              \
        double _a = (double)(a), _b = (double)(b);                                                    \
        if (!(fabs(_a - _b) <= (tol))) TEST_FAIL_AT("%s ~ %s: %.9g vs %.9g", #a, #b, _a, _b);        \
    } while (0)
#define ASSERT_STR_EQ(a, b)                                                                           \
    do {                                                                                              \
        const char *_a = (a), *_b = (b);                                                              \
        if (strcmp(_a ? _a : "(null)", _b ? _b : "(null)"))                                           \
            TEST_FAIL_AT("%s == %s: \"%s\" != \"%s\"", #a, #b, _a ? _a : "(null)", _b ? _b : "(null)"); \
    } while (0)
#define ASSERT_CONTAINS(haystack, needle)                                                             \
    do {                                                                                              \
        const char *_h = (haystack), *_n = (needle);                                                  \
        if (!_h || !strstr(_h, _n)) TEST_FAIL_AT("\"%s\" does not contain \"%s\"", _h ? _h : "(null)", _n); \
    } while (0)

/* Runs the model at path (optimised or not) on its one float input x with
 * `threads` threads; copies each of its n_out float outputs (at most cap
 * floats each) into out + k * cap and the optimised node count into
 * *n_nodes.  For the optimizer tests (test_session.c, test_attention.c). */
struct inf_tensor;
void test_run_floats(const char *path, bool optimize, int threads, const struct inf_tensor *x, float *out, int n_out,
                     int cap, int *n_nodes);
/* test_run_floats of the unoptimised and the optimised graph (1 thread) into
 * plain and fused (zeroed first), checking their node counts. */
void test_run_plain_and_fused(const char *path, const struct inf_tensor *x, float *plain, float *fused, int n_out,
                              int cap, int want_plain, int want_fused);
/* Fills x[0..n) with uniform values in [lo, hi) from a xorshift64 sequence
 * started at seed: the optimizer tests' random inputs. */
void test_fill_uniform(float *x, int n, uint64_t seed, double lo, double hi);

/* Where the source tree's test data lives (set by CMake). */
#ifndef INFERA_SOURCE_DIR
#define INFERA_SOURCE_DIR "."
#endif

#endif /* INF_TEST_H */
