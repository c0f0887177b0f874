/*
 * main.c -- the `infera` command: a table of sub-commands (shared/DESIGN.md §4).
 *
 * `infera <command> [options]`; `infera help [command]`.  Exit status 0 on
 * success, non-zero with a one-line error on stderr naming what failed.
 */
#include <stdarg.h>
#include <string.h>

#include "cli/cli.h"

const cli_command cli_commands[] = {
    {"run", cmd_run, "run a model on input files",
     "usage: infera run REF [--input NAME=FILE]... [--output-dir DIR] [--output-format npy|pb] [--threads N]\n"
     "\n"
     "Runs the model REF (an .onnx file) once.  Each --input binds a .npy or ONNX\n"
     "TensorProto .pb file to the graph input NAME (NAME= may be left out when the\n"
     "model has one input).  Sequence and optional inputs are read as ONNX\n"
     "SequenceProto / OptionalProto .pb files.  With --output-dir, each output is\n"
     "written to DIR/<output name>.npy (or .pb); values .npy cannot hold (sequences,\n"
     "optionals, bfloat16) are written as .pb.  Without it, each output's name,\n"
     "dtype, shape and leading values are printed.\n"},
    {"info", cmd_info, "describe a model: inputs, outputs, opsets, ops, parameters",
     "usage: infera info REF [--json]\n"
     "\n"
     "Prints the model's inputs and outputs with dtypes and shapes (symbolic\n"
     "dimensions by name), opset imports, op counts, parameter count and size.\n"},
    {"bench", cmd_bench, "measure load time, latency and throughput",
     "usage: infera bench REF [--input NAME=FILE]... [--threads N] [--iters N] [--warmup N] [--batch N] [--json]\n"
     "\n"
     "Runs the model repeatedly on the given inputs, or on random inputs of the\n"
     "declared shapes (symbolic dimensions = --batch, default 1).  --json prints one\n"
     "object: {\"model\",\"threads\",\"batch\",\"iters\",\"load_ms\",\"first_run_ms\",\n"
     "\"latency_us\":{\"mean\",\"p50\",\"p90\",\"p99\"},\"throughput_rows_per_s\",\"peak_rss_mb\"}.\n"},
    {"conformance", cmd_conformance, "run the ONNX backend test suites",
     "usage: infera conformance [--suite node|pytorch-converted|pytorch-operator|simple|all] [--filter REGEX]\n"
     "                          [--data-dir DIR] [--expected-failures FILE] [--quiet]\n"
     "\n"
     "Runs the ONNX backend test data (Debian package libonnx-testdata, default\n"
     "DIR /usr/share/libonnx-testdata/data), one process per test.  Prints one line per\n"
     "test (PASS, FAIL with the reason, XFAIL for a listed known failure, XPASS for a\n"
     "listed test that now passes) and closes with 'N passed, M failed'.  Exit status\n"
     "is non-zero when a test fails that is not listed in the expected-failures\n"
     "file, or a listed test passes.  The file (default: $INFERA_EXPECTED_FAILURES)\n"
     "has one 'suite/test_name  reason' per line.\n"},
    {"ops", cmd_ops, "list the operators this build implements",
     "usage: infera ops [--markdown]\n"
     "\n"
     "Lists every operator with its domain and the opset versions supported.\n"},
    {"help", cmd_help, "show help for a command", "usage: infera help [command]\n"},
};
const int cli_n_commands = (int)(sizeof cli_commands / sizeof cli_commands[0]);

static void print_overview(FILE *f) {
    fprintf(f, "infera %s -- ONNX inference engine\n\nusage: infera <command> [options]\n\ncommands:\n", inf_version());
    for (int i = 0; i < cli_n_commands; i++) fprintf(f, "  %-12s %s\n", cli_commands[i].name, cli_commands[i].summary);
    fprintf(f, "\nRun 'infera help <command>' for a command's options.\n");
}

int cmd_help(int argc, char **argv) {
    if (argc < 2) {
        print_overview(stdout);
        return 0;
    }
    for (int i = 0; i < cli_n_commands; i++)
        if (!strcmp(argv[1], cli_commands[i].name)) {
            fputs(cli_commands[i].usage, stdout);
            return 0;
        }
    return cli_usage("help", "unknown command '%s'", argv[1]);
}

int main(int argc, char **argv) {
    if (argc < 2) {
        print_overview(stderr);
        return 2;
    }
    if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "version")) {
        printf("infera %s\n", inf_version());
        return 0;
    }
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) return cmd_help(1, argv);
    for (int i = 0; i < cli_n_commands; i++) {
        if (strcmp(argv[1], cli_commands[i].name)) continue;
        for (int k = 2; k < argc; k++)
            if (!strcmp(argv[k], "--help") || !strcmp(argv[k], "-h")) {
                fputs(cli_commands[i].usage, stdout);
                return 0;
            }
        return cli_commands[i].fn(argc - 1, argv + 1);
    }
    fprintf(stderr, "infera: unknown command '%s' (try 'infera help')\n", argv[1]);
    return 2;
}
