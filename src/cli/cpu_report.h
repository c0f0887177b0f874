/*
 * cpu_report.h -- the processor (include/infera/cpu.h) as text or JSON, for
 * `infera info --cpu` and the "cpu" object of `infera bench --json`.
 */
#ifndef INF_CLI_CPU_REPORT_H
#define INF_CLI_CPU_REPORT_H

/* One JSON object, no newline: {"vendor","brand","family","model",
 * "stepping","logical_cpus","features":[...],"cache":{"l1d_bytes",
 * "l2_bytes","l3_bytes","line_bytes","source"},"path","best_path","forced","int8_gemm"}
 * (int8_gemm: the INT8 GEMM kernel, inf__qgemm_isa_name). */
void cli_cpu_print_json(void);
/* Human-readable lines. */
void cli_cpu_print_text(void);

#endif /* INF_CLI_CPU_REPORT_H */
