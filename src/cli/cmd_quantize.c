/*
 * cmd_quantize.c -- `infera quantize IN -o OUT ...`: parses the options,
 * runs the quantizer (tools/quantize.c) and prints its report.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "tools/quantize.h"

typedef struct name_value {
    const char *name;
    int value;
} name_value;

/* text's value in table; else a usage error naming the flag and its choices. */
static bool pick(const char *cmd, const char *flag, const char *text, const name_value *table, int n, int *out) {
    char choices[128] = "";
    for (int i = 0; i < n; i++) {
        if (!strcmp(text, table[i].name)) {
            *out = table[i].value;
            return true;
        }
        size_t used = strlen(choices);
        snprintf(choices + used, sizeof choices - used, "%s%s",
                 i == 0       ? ""
                 : i == n - 1 ? " or "
                              : ", ",
                 table[i].name);
    }
    cli_usage(cmd, "%s must be %s, got '%s'", flag, choices, text);
    return false;
}

static void print_report(const inf__quantize_options *o, const inf__quantize_report *r) {
    printf("quantized %s -> %s (%s%s%s, %s)\n", o->in_path, o->out_path,
           o->static_mode ? "static" : "dynamic", o->per_channel ? ", per-channel" : "",
           o->reduce_range ? ", 7-bit weights" : "",
           o->qoperator ? "qoperator" : "qdq");
    printf("  nodes quantized: %d of %d Gemm/MatMul/Conv with constant weights (%d excluded)\n", r->n_quantized,
           r->n_candidates, r->n_excluded);
    if (r->n_act_candidates)
        printf("  activation MatMuls quantized (attention scores): %d of %d (%d excluded)\n", r->n_act_quantized,
               r->n_act_candidates, r->n_act_excluded);
    if (o->static_mode)
        printf("  calibration: %lld records, %d activation tensors\n", r->calibration_rows, r->n_calibrated_tensors);
    if (o->static_mode && r->calibration_nonfinite)
        fprintf(stderr,
                "infera quantize: warning: %lld NaN or infinite activation values in the calibration data "
                "were left out of the ranges\n",
                r->calibration_nonfinite);
    printf("  weights: %.1f KiB -> %.1f KiB\n", r->weight_bytes_before / 1024.0, r->weight_bytes_after / 1024.0);
    bool larger = r->bytes_after > r->bytes_before; /* a tiny model: the Q/DQ nodes outweigh the weights saved */
    printf("  file size: %zu -> %zu bytes (%.2fx %s)\n", r->bytes_before, r->bytes_after,
           larger           ? (double)r->bytes_after / (double)r->bytes_before
           : r->bytes_after ? (double)r->bytes_before / (double)r->bytes_after
                            : 0.0,
           larger ? "larger" : "smaller");
}

int cmd_quantize(int argc, char **argv) {
    static const name_value modes[] = {{"dynamic", 0}, {"static", 1}};
    static const name_value formats[] = {{"qdq", 0}, {"qoperator", 1}};
    static const name_value methods[] = {
        {"minmax", INF_QUANT_MINMAX}, {"percentile", INF_QUANT_PERCENTILE}, {"entropy", INF_QUANT_ENTROPY}};
    const char *cmd = "quantize";
    inf__quantize_options o = {0};
    int mode = -1, v_int;
    const char **exclude = calloc((size_t)argc + 1, sizeof *exclude);
    if (!exclude) return cli_fail(cmd, "out of memory");
    int rc = 2;
    for (int i = 1; i < argc; i++) {
        bool missing = false;
        const char *v;
        if ((v = cli_flag_value(argc, argv, &i, "-o", &missing)) ||
            (v = cli_flag_value(argc, argv, &i, "--output", &missing))) {
            o.out_path = v;
        } else if ((v = cli_flag_value(argc, argv, &i, "--mode", &missing))) {
            if (!pick(cmd, "--mode", v, modes, 2, &mode))
                goto done;
        } else if ((v = cli_flag_value(argc, argv, &i, "--format", &missing))) {
            if (!pick(cmd, "--format", v, formats, 2, &v_int))
                goto done;
            o.qoperator = v_int;
        } else if ((v = cli_flag_value(argc, argv, &i, "--method", &missing))) {
            if (!pick(cmd, "--method", v, methods, 3, &v_int))
                goto done;
            o.method = (inf__quant_method)v_int;
        } else if ((v = cli_flag_value(argc, argv, &i, "--calibration", &missing))) {
            o.calibration = v;
        } else if ((v = cli_flag_value(argc, argv, &i, "--spec", &missing))) {
            o.spec = v;
        } else if ((v = cli_flag_value(argc, argv, &i, "--calibration-rows", &missing))) {
            if (!cli_parse_int(cmd, "--calibration-rows", v, 1, 1 << 30, &o.calibration_rows)) goto done;
        } else if ((v = cli_flag_value(argc, argv, &i, "--exclude", &missing))) {
            exclude[o.n_exclude++] = v;
        } else if (missing) {
            rc = cli_usage(cmd, "%s needs a value", argv[i]);
            goto done;
        } else if (!strcmp(argv[i], "--per-channel")) {
            o.per_channel = true;
        } else if (!strcmp(argv[i], "--reduce-range")) {
            o.reduce_range = true;
        } else if (!strcmp(argv[i], "--quantize-attention")) {
            o.quantize_attention = true;
        } else if (argv[i][0] == '-' && argv[i][1]) {
            rc = cli_usage(cmd, "unknown option '%s'", argv[i]);
            goto done;
        } else if (!o.in_path) {
            o.in_path = argv[i];
        } else {
            rc = cli_usage(cmd, "unexpected argument '%s'", argv[i]);
            goto done;
        }
        if (missing) {
            rc = cli_usage(cmd, "%s needs a value", argv[i]);
            goto done;
        }
    }
    if (!o.in_path || !o.out_path) {
        rc = cli_usage(cmd, "IN and -o OUT are required");
        goto done;
    }
    o.static_mode = mode < 0 ? o.calibration != NULL : mode == 1;
    if (o.static_mode && !o.calibration) {
        rc = cli_usage(cmd, "--mode static needs --calibration SRC");
        goto done;
    }
    if (!o.static_mode && (o.calibration || o.spec)) {
        rc = cli_usage(cmd, "--calibration and --spec are for --mode static");
        goto done;
    }
    o.exclude = exclude;
    inf__quantize_report r;
    inf_error err = {0};
    if (inf__tools_quantize(&o, &r, &err) != INF_OK) {
        rc = cli_fail(cmd, "%s", err.message);
        goto done;
    }
    print_report(&o, &r);
    rc = 0;
done:
    free(exclude);
    return rc;
}
