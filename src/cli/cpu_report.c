/*
 * cpu_report.c -- prints inf_cpu_get_info() (src/core/cpu.c) for the CLI:
 * `infera info --cpu [--json]` and the "cpu" key of `infera bench --json`,
 * so every benchmark figure names the machine it was measured on.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/cpu_report.h"
#include "infera/cpu.h"
#include "ops/qgemm.h"

void cli_cpu_print_json(void) {
    const inf_cpu_info *ci = inf_cpu_get_info();
    printf("{\"vendor\":");
    cli_json_string(ci->vendor);
    printf(",\"brand\":");
    cli_json_string(ci->brand);
    printf(",\"family\":%d,\"model\":%d,\"stepping\":%d,\"logical_cpus\":%d,\"features\":[", ci->family, ci->model,
           ci->stepping, ci->n_logical);
    int n = 0;
    for (int i = 0; i < INF_CPU_N_FEATURES; i++) {
        uint32_t bit = inf_cpu_feature_at(i);
        if (!(ci->features & bit)) continue;
        printf("%s", n++ ? "," : "");
        cli_json_string(inf_cpu_feature_name(bit));
    }
    printf("],\"cache\":{\"l1d_bytes\":%lld,\"l2_bytes\":%lld,\"l3_bytes\":%lld,\"line_bytes\":%d,\"source\":",
           (long long)ci->l1d_bytes, (long long)ci->l2_bytes, (long long)ci->l3_bytes, ci->line_bytes);
    cli_json_string(ci->cache_source);
    printf("},\"path\":");
    cli_json_string(ci->path);
    printf(",\"best_path\":");
    cli_json_string(ci->best_path);
    printf(",\"forced\":%s,\"int8_gemm\":", ci->forced ? "true" : "false");
    cli_json_string(inf__qgemm_isa_name(inf__qgemm_best_isa()));
    printf("}");
}

/* The INT8 GEMM kernel the quantized ops run (ops/qgemm.h: INFERA_CPU and
 * INFERA_QGEMM choose a lower one), with its multiply instruction. */
static const char *int8_kernel_text(inf__qgemm_isa isa) {
    switch (isa) {
    case INF_QGEMM_VNNI512:
        return "avx512-vnni (vpdpbusd, 512-bit)";
    case INF_QGEMM_AVXVNNI:
        return "avx-vnni (vpdpbusd, 256-bit)";
    case INF_QGEMM_AVX2: {
        const char *q = getenv("INFERA_QGEMM");
        if (q && !strcmp(q, "avx2-maddwd")) return "avx2 (vpmaddwd only: INFERA_QGEMM=avx2-maddwd)";
        if (q && !strcmp(q, "avx2-ubs"))
            return "avx2 (vpmaddwd; vpmaddubsw for pair-safe weights, no ubs2 routes: INFERA_QGEMM=avx2-ubs)";
        return "avx2 (vpmaddwd; vpmaddubsw for pair-safe weights, e.g. --reduce-range, routed: two summed in int16 "
               "where the weights allow)";
    }
    case INF_QGEMM_AVX2_UBS:
        return "avx2 (vpmaddubsw)";
    default:
        return "generic (reference C)";
    }
}

void cli_cpu_print_text(void) {
    const inf_cpu_info *ci = inf_cpu_get_info();
    printf("cpu          %s\n", *ci->brand ? ci->brand : "(unknown)");
    printf("vendor       %s, family %d model %d stepping %d, %d logical CPUs\n", *ci->vendor ? ci->vendor : "(unknown)",
           ci->family, ci->model, ci->stepping, ci->n_logical);
    printf("features    ");
    for (int i = 0; i < INF_CPU_N_FEATURES; i++) {
        uint32_t bit = inf_cpu_feature_at(i);
        if (ci->features & bit) printf(" %s", inf_cpu_feature_name(bit));
    }
    printf("\ncaches       L1d %lld KiB, L2 %lld KiB, L3 %lld KiB, line %d B (from %s)\n",
           (long long)(ci->l1d_bytes / 1024), (long long)(ci->l2_bytes / 1024), (long long)(ci->l3_bytes / 1024),
           ci->line_bytes, ci->cache_source);
    printf("kernel path  %s%s (best this CPU allows: %s)\n", ci->path, ci->forced ? " (lowered by INFERA_CPU)" : "",
           ci->best_path);
    printf("int8 gemm    %s\n", int8_kernel_text(inf__qgemm_best_isa()));
}
