/*
 * runner.c -- runs the tests listed in test_list.h, or those whose name
 * contains argv[1].  One line per test, then "N passed, M failed".
 */
#include <stdio.h>
#include <string.h>

#include "test.h"

int test_failed_flag;

#define X(name) void test_##name(void);
#include "test_list.h"
#undef X

static const struct {
    const char *name;
    void (*fn)(void);
} k_tests[] = {
#define X(name) {#name, test_##name},
#include "test_list.h"
#undef X
};

int main(int argc, char **argv) {
    int passed = 0, failed = 0;
    for (size_t i = 0; i < sizeof k_tests / sizeof k_tests[0]; i++) {
        if (argc > 1 && !strstr(k_tests[i].name, argv[1])) continue;
        test_failed_flag = 0;
        k_tests[i].fn();
        printf("%s %s\n", test_failed_flag ? "FAIL" : "ok  ", k_tests[i].name);
        fflush(stdout);
        if (test_failed_flag) failed++;
        else passed++;
    }
    printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
