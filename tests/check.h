/*
 * check.h -- the one CHECK macro of the standalone test programs (tests/<area>/test_*.c that are their own
 * main, outside tests/unit's runner).
 *
 *   CHECK(cond, fmt, ...)   counts a check; a failed one prints "FAIL file:line: (cond) message"
 *   check_summary("name")   prints "name: N passed, M failed" and returns the exit status (1 on any failure)
 *
 * Define CHECK_PRINT_PASSES before including it for one "PASS message" line per passed check too (the
 * end-to-end tests, whose logs read as a transcript).
 */
#ifndef INFERA_TESTS_CHECK_H
#define INFERA_TESTS_CHECK_H

#include <stdio.h>

static int check_passed, check_failed;

#ifdef CHECK_PRINT_PASSES
#define CHECK_REPORT_PASS_(...) (printf("PASS "), printf(__VA_ARGS__), printf("\n"))
#else
#define CHECK_REPORT_PASS_(...) ((void)0)
#endif

#define CHECK(cond, ...)                                                  \
    do {                                                                  \
        if (cond) {                                                       \
            check_passed++;                                               \
            CHECK_REPORT_PASS_(__VA_ARGS__);                              \
        } else {                                                          \
            check_failed++;                                               \
            printf("FAIL %s:%d: (%s) ", __FILE__, __LINE__, #cond);       \
            printf(__VA_ARGS__);                                          \
            printf("\n");                                                 \
        }                                                                 \
        fflush(stdout);                                                   \
    } while (0)

static inline int check_summary(const char *suite) {
    printf("%s: %d passed, %d failed\n", suite, check_passed, check_failed);
    fflush(stdout);
    return check_failed ? 1 : 0;
}

#endif
