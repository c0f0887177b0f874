/*
 * kernel_paths.h -- which kernel path (core/cpu.c: generic, avx2, avx512)
 * a kernel test exercises, printed so a log says what ran and what was
 * skipped.  `--skip-unless-best PATH` (ctest runs a test again with
 * INFERA_CPU lowering the path): exit 77 (ctest SKIP) unless PATH is the
 * widest path this CPU allows -- otherwise the lowered run would only
 * repeat the plain one.
 */
#ifndef TEST_KERNEL_PATHS_H
#define TEST_KERNEL_PATHS_H

#include <stdio.h>
#include <string.h>

#include "infera/cpu.h"

/* 0: go on; 77: skip (printed). */
static inline int kernel_paths_begin(int argc, char **argv, const char *what) {
    const inf_cpu_info *ci = inf_cpu_get_info();
    for (int i = 1; i + 1 < argc; i++)
        if (!strcmp(argv[i], "--skip-unless-best") && strcmp(ci->best_path, argv[i + 1])) {
            printf("%s: this CPU's widest path is %s, not %s: nothing more to test, skipped\n", what, ci->best_path,
                   argv[i + 1]);
            return 77;
        }
    printf("%s: kernel path %s%s (widest on this CPU: %s; %s)\n", what, ci->path,
           ci->forced ? ", lowered by INFERA_CPU" : "", ci->best_path, *ci->brand ? ci->brand : "unknown CPU");
    if (strcmp(ci->path, "avx512"))
        printf("%s: AVX-512 kernel variants not run (path %s)\n", what, ci->path);
    return 0;
}

#endif /* TEST_KERNEL_PATHS_H */
