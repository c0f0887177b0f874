/*
 * cmd_run.c -- `infera run REF [--input NAME=FILE]... [--output-dir DIR]
 * [--output-format npy|pb] [--threads N] [--max-run-ms N]` (shared/DESIGN.md §4).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli/cli.h"

static const char *CMD = "run";

/* Output names may contain '/' or other characters unfit for file names. */
static void safe_file_name(const char *name, char *out, size_t size) {
    size_t k = 0;
    for (const char *p = name; *p && k + 1 < size; p++)
        out[k++] = (*p == '/' || *p == '\\' || (*p == '.' && p == name)) ? '_' : *p;
    out[k] = 0;
    if (!k) snprintf(out, size, "output");
}

static int write_output(const char *dir, const char *format, const inf_value_info *info, const inf_tensor *t) {
    char base[256], path[4096];
    safe_file_name(info->name, base, sizeof base);
    bool as_pb = !strcmp(format, "pb") || t->kind != INF_KIND_TENSOR || info->is_optional || t->dtype == INF_DTYPE_BF16 ||
                 t->dtype == INF_DTYPE_STRING;
    snprintf(path, sizeof path, "%s/%s.%s", dir, base, as_pb ? "pb" : "npy");
    inf_error err;
    inf_status st = as_pb ? inf_tensor_save_pb(path, info->name, t, info->is_optional, &err) : inf_tensor_save_npy(path, t, &err);
    if (st != INF_OK) return cli_fail(CMD, "output '%s': %s", info->name, err.message);
    return 0;
}

static void print_output(const inf_value_info *info, const inf_tensor *t) {
    char desc[160];
    printf("%s: %s ", info->name, inf_tensor_describe(t, desc, sizeof desc));
    cli_print_values(stdout, t, 10);
    printf("\n");
}

int cmd_run(int argc, char **argv) {
    const char *ref = NULL, *out_dir = NULL, *format = "npy";
    int threads = 1, max_run_ms = CLI_DEFAULT_MAX_RUN_MS, precision = INF_PRECISION_FP32;
    cli_inputs specs = {0};
    for (int i = 1; i < argc; i++) {
        bool missing = false;
        const char *v;
        if ((v = cli_flag_value(argc, argv, &i, "--input", &missing))) {
            if (!cli_inputs_add(CMD, &specs, v)) return 2;
        } else if ((v = cli_flag_value(argc, argv, &i, "--output-dir", &missing))) {
            out_dir = v;
        } else if ((v = cli_flag_value(argc, argv, &i, "--output-format", &missing))) {
            if (strcmp(v, "npy") && strcmp(v, "pb")) return cli_usage(CMD, "--output-format must be npy or pb, got '%s'", v);
            format = v;
        } else if ((v = cli_flag_value(argc, argv, &i, "--threads", &missing))) {
            if (!cli_parse_int(CMD, "--threads", v, 1, 256, &threads)) return 2;
        } else if ((v = cli_flag_value(argc, argv, &i, "--max-run-ms", &missing))) {
            if (!cli_parse_int(CMD, "--max-run-ms", v, 0, 2147483647, &max_run_ms)) return 2;
        } else if ((v = cli_flag_value(argc, argv, &i, "--precision", &missing))) {
            if (!cli_parse_precision(CMD, v, &precision)) return 2;
        } else if (missing) {
            return cli_usage(CMD, "%s needs a value", argv[i]);
        } else if (argv[i][0] == '-' && argv[i][1]) {
            return cli_usage(CMD, "unknown option '%s' (see 'infera help run')", argv[i]);
        } else if (!ref) {
            ref = argv[i];
        } else {
            return cli_usage(CMD, "unexpected argument '%s'", argv[i]);
        }
    }
    if (!ref) return cli_usage(CMD, "missing model (usage: infera run REF [--input NAME=FILE]...)");
    inf_error err;
    inf_model *model = NULL;
    inf_session *session = NULL;
    inf_tensor *values[256] = {0};
    int rc = 0;
    if (cli_load_model(ref, &model, &err) != INF_OK) return cli_fail(CMD, "%s", err.message);
    int n_inputs = inf_model_n_inputs(model);
    if (n_inputs > 256) {
        rc = cli_fail(CMD, "%s: %d inputs (at most 256 supported)", ref, n_inputs);
        goto done;
    }
    if ((rc = cli_inputs_load(CMD, model, &specs, values)) != 0) goto done;
    inf_session_options opts;
    inf_session_options_init(&opts);
    opts.n_threads = threads;
    opts.max_run_ms = max_run_ms;
    opts.precision = precision;
    if (inf_session_new(model, &opts, &session, &err) != INF_OK) {
        rc = cli_fail(CMD, "%s", err.message);
        goto done;
    }
    inf_tensor *const *outputs;
    if (inf_session_run(session, (const inf_tensor *const *)values, &outputs, &err) != INF_OK) {
        rc = cli_fail(CMD, "%s: %s", ref, err.message);
        goto done;
    }
    if (out_dir && mkdir(out_dir, 0777) != 0 && errno != EEXIST) {
        rc = cli_fail(CMD, "cannot create output directory '%s': %s", out_dir, strerror(errno));
        goto done;
    }
    for (int i = 0; i < inf_model_n_outputs(model) && rc == 0; i++) {
        const inf_value_info *info = inf_model_output(model, i);
        if (!outputs[i]) continue;
        if (out_dir) rc = write_output(out_dir, format, info, outputs[i]);
        else print_output(info, outputs[i]);
    }
done:
    for (int i = 0; i < 256; i++) inf_tensor_free(values[i]);
    inf_session_free(session);
    inf_model_free(model);
    return rc;
}
