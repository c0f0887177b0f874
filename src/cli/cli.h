/*
 * cli.h -- shared pieces of the `infera` command: the command table and the
 * helpers sub-commands use (argument parsing, loading models and tensor
 * files, printing and comparing values).
 *
 * Every command is `int cmd_<verb>(int argc, char **argv)` with argv[0] the
 * command name; it returns the process exit status.  Errors are printed as
 * one line on stderr: "infera <command>: <what failed and why>".
 */
#ifndef INF_CLI_H
#define INF_CLI_H

#include <stdbool.h>
#include <stdio.h>

#include "infera/session.h"

typedef struct cli_command {
    const char *name;
    int (*fn)(int argc, char **argv);
    const char *summary;
    const char *usage; /* full help text */
} cli_command;

extern const cli_command cli_commands[];
extern const int cli_n_commands;

int cmd_run(int argc, char **argv);
int cmd_info(int argc, char **argv);
int cmd_bench(int argc, char **argv);
int cmd_conformance(int argc, char **argv);
int cmd_ops(int argc, char **argv);
int cmd_serve(int argc, char **argv);
int cmd_ui(int argc, char **argv);
int cmd_help(int argc, char **argv);
int cmd_registry(int argc, char **argv);
int cmd_batch(int argc, char **argv); /* src/batch/cmd_batch.c */
int cmd_stream(int argc, char **argv); /* src/stream/cmd_stream.c */
int cmd_features(int argc, char **argv); /* cmd_features.c */
int cmd_fit_spec(int argc, char **argv); /* cmd_features.c */
int cmd_quantize(int argc, char **argv); /* cmd_quantize.c */
int cmd_evaluate(int argc, char **argv); /* cmd_evaluate.c */
int cmd_prune(int argc, char **argv);    /* cmd_prune.c */
int cmd_distill(int argc, char **argv);  /* cmd_distill.c */
int cmd_tokenize(int argc, char **argv); /* cmd_tokenize.c */
int cmd_generate(int argc, char **argv); /* cmd_generate.c */
int cmd_monitor(int argc, char **argv);  /* cmd_monitor.c */
int cmd_compile(int argc, char **argv);  /* cmd_compile.c */

/* Prints "infera <cmd>: message" to stderr and returns 1 (or 2 for usage). */
int cli_fail(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int cli_usage(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The usage error for an argument no rule took: "unknown option '--x'" for a flag, "unexpected argument 'x'" for
 * a stray word (a second model, a value without its flag). */
int cli_unexpected(const char *cmd, const char *arg);

/* The options batch and stream share: --input and --output required, --model unless --no-score,
 * --log-predictions only with a model.  0, or 2 after the usage message. */
int cli_check_runner_io(const char *cmd, const char *input, const char *output, const char *model, int no_score,
                        const char *log_predictions);

/* Parses a positive int option value; false (with a message) if invalid. */
bool cli_parse_int(const char *cmd, const char *flag, const char *text, int min, int max, int *out);
/* Parses --precision fp32|bf16 (session option precision); false (with a message) if invalid. */
bool cli_parse_precision(const char *cmd, const char *text, int *out);
/* The help paragraph of --precision, shared by the commands that take it. */
#define CLI_PRECISION_HELP                                                                                             \
    "--precision fp32|bf16: fp32 (the default) computes as the model says.  bf16, on\n"                                \
    "request: MatMul/Gemm weights and activations rounded to bfloat16, float32 sums\n"                                 \
    "(AVX512_BF16 CPUs only -- elsewhere an error, never a silent fallback); faster,\n"                                \
    "outputs change slightly: measure with `infera evaluate` (docs/sessions.md).\n"
/* Time budget of one model run for run/bench (session option max_run_ms). */
#define CLI_DEFAULT_MAX_RUN_MS 60000

/* Returns the value of "--flag VALUE" or "--flag=VALUE" at argv[*i], advancing
 * *i; NULL if argv[*i] is not that flag. *missing is set to true when argv[*i] is
 * the flag and its value is absent, and left alone when argv[*i] is another flag
 * (initialise it to false before trying several flags on one argument). */
const char *cli_flag_value(int argc, char **argv, int *i, const char *flag, bool *missing);

/* Loads a model reference: a path to an .onnx file, or -- when REF is not an
 * existing file and does not look like a path (no '/', no .onnx suffix) --
 * NAME, NAME@VERSION or NAME@ALIAS in the registry named by INFERA_HOME /
 * INFERA_REGISTRY, authenticated with INFERA_TOKEN (needs the predictor role
 * when auth is on). */
inf_status cli_load_model(const char *ref, inf_model **out, inf_error *err);

/* Global options, accepted before or after the command: --home DIR,
 * --registry URL, --token TOKEN.  Removes them from argv (updating *argc) and
 * exports them as INFERA_HOME, INFERA_REGISTRY, INFERA_TOKEN, the one channel
 * through which every command and cli_load_model find the registry.  Returns
 * 0, or 2 after printing a usage error. */
int cli_take_global_options(int *argc, char **argv);

/* Loads a .npy or .pb value file; kind_hint as for inf_tensor_load_pb. */
inf_status cli_load_value(const char *path, int kind_hint, inf_tensor **out, inf_error *err);

/* The .pb kind hint for a model input: sequence, optional or tensor. */
int cli_kind_hint(const inf_value_info *info);

/* `infera info` for a GGUF language model at path (info_gguf.c; whether a REF
 * names one: inf__llm_ref_names_gguf). */
int cli_info_gguf(const char *path, const char *shown_ref, bool json);

/* Prints s (NULL: empty) to stdout as a JSON string, quotes and escapes included. */
void cli_json_string(const char *s);
/* The same to f. */
void cli_json_fstring(FILE *f, const char *s);

/* Prints a value's leading elements ("[0.1, 0.2, ...]"). */
void cli_print_values(FILE *f, const inf_tensor *t, int max_values);

/* Compares got with want: same kind, dtype and shape, elements within
 * |got - want| <= atol + rtol * |want| (NaN equals NaN).  On mismatch writes
 * the reason into why. */
bool cli_values_close(const inf_tensor *got, const inf_tensor *want, double rtol, double atol, char *why,
                      size_t why_size);

/* Input files given as --input NAME=FILE (or FILE alone for a one-input model). */
typedef struct cli_inputs {
    int n_specs;
    const char *names[64];  /* NULL when NAME= was left out; else points into name_buf */
    const char *paths[64];
    char name_buf[64][256];
} cli_inputs;

/* Parses one "--input" value into specs; false (with a message) on error. */
bool cli_inputs_add(const char *cmd, cli_inputs *specs, const char *value);
/* Loads the files into values[] indexed by model input (NULL where not
 * given); returns 0 or an exit status after printing the error. */
int cli_inputs_load(const char *cmd, const inf_model *model, const cli_inputs *specs, inf_tensor **values);

/* Peak resident set size of this process in MiB (from /proc/self/status). */
double cli_peak_rss_mb(void);

/* Bench helpers (cmd_bench.c), shared with `infera evaluate`: random values
 * for the inputs of model not already in values[] (symbolic dimensions =
 * batch); returns -1, or the index of an input it cannot make.  Then the
 * latency of warm runs of session on values. */
typedef struct cli_bench_stats {
    int64_t rows; /* leading dimension of the first input */
    double mean, p50, p90, p99; /* microseconds */
    double throughput;          /* rows per second (rows / mean) */
} cli_bench_stats;
int cli_bench_random_inputs(const inf_model *model, int batch, inf_tensor **values);
inf_status cli_bench_time(inf_session *session, inf_tensor *const *values, int warmup, int iters,
                          cli_bench_stats *out, inf_error *err);
double cli_now_seconds(void);

#endif /* INF_CLI_H */
