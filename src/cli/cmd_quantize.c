/*
 * cmd_quantize.c -- `infera quantize IN -o OUT ...`: parses the options,
 * runs the quantizer (tools/quantize.c; with --sensitivity / --min-sqnr the
 * per-node analysis, tools/quantize_sensitivity.c) and prints its report
 * (and the analysis as a table, or JSON with --sensitivity-json).
 */
#include <errno.h>
#include <math.h>
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

/* ---- the sensitivity table ---- */

typedef struct sens_request {
    bool on; /* --sensitivity (or implied by the others) */
    bool min_sqnr_set;
    double min_sqnr;
    const char *json; /* --sensitivity-json FILE */
} sens_request;

static const char *shown_name(const inf__quant_node *n) {
    return *n->name ? n->name : n->output;
}

static void fmt_sqnr(char *buf, size_t size, double db) {
    if (isfinite(db))
        snprintf(buf, size, "%.1f", db);
    else
        snprintf(buf, size, "%s", isnan(db) ? "nan" : db > 0 ? "inf" : "-inf");
}

static void fmt_top1(char *buf, size_t size, double top1) {
    if (top1 < 0)
        snprintf(buf, size, "-");
    else
        snprintf(buf, size, "%.2f%%", 100 * top1);
}

static void print_fidelity_row(int width, const char *name, const char *op, const inf__quant_fidelity *f,
                               const char *note) {
    char sq[32], t1[32];
    fmt_sqnr(sq, sizeof sq, f->sqnr_db);
    fmt_top1(t1, sizeof t1, f->top1);
    printf("    %-*s  %-8s %8s  %11.4g  %8s%s\n", width, name, op, sq, f->max_abs_err, t1, note);
}

static void print_sensitivity(const sens_request *q, const inf__quant_sensitivity *s) {
    int width = 24;
    for (int i = 0; i < s->n_rows; i++) {
        int len = (int)strlen(shown_name(&s->rows[i].node));
        if (len > width)
            width = len;
    }
    printf("  sensitivity: each node quantized alone vs FP32 on %lld records, worst SQNR first\n", s->records);
    for (int i = 0; i < s->n_skipped_outputs; i++)
        printf("    (output '%s' is not float32: left out of the comparison)\n", s->skipped_outputs[i]);
    printf("    %-*s  %-8s %8s  %11s  %8s\n", width, "node", "op", "SQNR dB", "max abs err", "top-1");
    for (int i = 0; i < s->n_rows; i++)
        print_fidelity_row(width, shown_name(&s->rows[i].node), s->rows[i].node.op_type, &s->rows[i].fid,
                           s->rows[i].excluded ? "  excluded by --min-sqnr" : "");
    char all[64];
    snprintf(all, sizeof all, "(all %d nodes quantized)", s->n_rows);
    print_fidelity_row(width, all, "", &s->all, "");
    if (q->min_sqnr_set) {
        printf("  --min-sqnr %g: %d node%s excluded by --min-sqnr (kept FP32 in the output)\n", q->min_sqnr,
               s->n_min_sqnr_excluded, s->n_min_sqnr_excluded == 1 ? "" : "s");
        if (s->n_min_sqnr_excluded)
            print_fidelity_row(width, "(output model)", "", &s->out, "");
    }
}

static void json_number(FILE *f, double v) {
    if (isfinite(v))
        fprintf(f, "%.17g", v);
    else
        fputs("null", f);
}

static void json_fidelity(FILE *f, const inf__quant_fidelity *fid) {
    fputs("{\"sqnr_db\": ", f);
    json_number(f, fid->sqnr_db);
    fputs(", \"max_abs_err\": ", f);
    json_number(f, fid->max_abs_err);
    fputs(", \"top1_agreement\": ", f);
    json_number(f, fid->top1 < 0 ? NAN : fid->top1);
    fputc('}', f);
}

/* The table as JSON (non-finite figures null: an SQNR of null means the outputs are equal). */
static bool write_sensitivity_json(const inf__quantize_options *o, const sens_request *q,
                                   const inf__quant_sensitivity *s) {
    FILE *f = fopen(q->json, "w");
    if (!f)
        return false;
    fputs("{\"model\": ", f);
    cli_json_fstring(f, o->in_path);
    fputs(", \"output\": ", f);
    cli_json_fstring(f, o->out_path);
    fprintf(f, ", \"records\": %lld, \"min_sqnr_db\": ", s->records);
    json_number(f, q->min_sqnr_set ? q->min_sqnr : NAN);
    fputs(", \"skipped_outputs\": [", f);
    for (int i = 0; i < s->n_skipped_outputs; i++) {
        if (i)
            fputs(", ", f);
        cli_json_fstring(f, s->skipped_outputs[i]);
    }
    fputs("],\n \"nodes\": [", f);
    for (int i = 0; i < s->n_rows; i++) {
        const inf__quant_sensitivity_row *r = &s->rows[i];
        fputs(i ? ",\n   {\"name\": " : "\n   {\"name\": ", f);
        cli_json_fstring(f, r->node.name);
        fputs(", \"op_type\": ", f);
        cli_json_fstring(f, r->node.op_type);
        fputs(", \"output\": ", f);
        cli_json_fstring(f, r->node.output);
        fputs(", \"alone\": ", f);
        json_fidelity(f, &r->fid);
        fprintf(f, ", \"excluded_by_min_sqnr\": %s}", r->excluded ? "true" : "false");
    }
    fputs("],\n \"all_quantized\": ", f);
    json_fidelity(f, &s->all);
    fputs(",\n \"output_model\": ", f);
    json_fidelity(f, &s->out);
    fputs("}\n", f);
    return fclose(f) == 0;
}

/* --min-sqnr's value: a finite number of dB. */
static bool parse_db(const char *cmd, const char *text, double *out) {
    char *end;
    double v = strtod(text, &end);
    if (end == text || *end || !isfinite(v)) {
        cli_usage(cmd, "--min-sqnr needs a number of dB, not '%s'", text);
        return false;
    }
    *out = v;
    return true;
}

int cmd_quantize(int argc, char **argv) {
    static const name_value modes[] = {{"dynamic", 0}, {"static", 1}};
    static const name_value formats[] = {{"qdq", 0}, {"qoperator", 1}};
    static const name_value methods[] = {
        {"minmax", INF_QUANT_MINMAX}, {"percentile", INF_QUANT_PERCENTILE}, {"entropy", INF_QUANT_ENTROPY}};
    const char *cmd = "quantize";
    inf__quantize_options o = {0};
    sens_request sens = {0};
    inf__quant_sensitivity s = {0};
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
        } else if ((v = cli_flag_value(argc, argv, &i, "--min-sqnr", &missing))) {
            if (!parse_db(cmd, v, &sens.min_sqnr))
                goto done;
            sens.min_sqnr_set = sens.on = true;
        } else if ((v = cli_flag_value(argc, argv, &i, "--sensitivity-json", &missing))) {
            sens.json = v;
            sens.on = true;
        } else if (missing) {
            rc = cli_usage(cmd, "%s needs a value", argv[i]);
            goto done;
        } else if (!strcmp(argv[i], "--per-channel")) {
            o.per_channel = true;
        } else if (!strcmp(argv[i], "--reduce-range")) {
            o.reduce_range = true;
        } else if (!strcmp(argv[i], "--quantize-attention")) {
            o.quantize_attention = true;
        } else if (!strcmp(argv[i], "--sensitivity")) {
            sens.on = true;
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
    if (!o.static_mode && (o.calibration || o.spec) && !sens.on) {
        rc = cli_usage(cmd, "--calibration and --spec are for --mode static (or --sensitivity)");
        goto done;
    }
    if (sens.on && !o.calibration) {
        rc = cli_usage(cmd, "--sensitivity and --min-sqnr need --calibration SRC: the records on which each "
                            "quantized node's outputs are compared with the FP32 model's");
        goto done;
    }
    o.exclude = exclude;
    inf__quantize_report r;
    inf_error err = {0};
    inf_status st = sens.on ? inf__tools_quantize_sensitivity(&o, sens.min_sqnr_set, sens.min_sqnr, &r, &s, &err)
                            : inf__tools_quantize(&o, &r, &err);
    if (st != INF_OK) {
        rc = cli_fail(cmd, "%s", err.message);
        goto done;
    }
    print_report(&o, &r);
    if (sens.on)
        print_sensitivity(&sens, &s);
    rc = 0;
    if (sens.json && !write_sensitivity_json(&o, &sens, &s))
        rc = cli_fail(cmd, "cannot write --sensitivity-json '%s': %s", sens.json, strerror(errno));
done:
    inf__quant_sensitivity_free(&s);
    free(exclude);
    return rc;
}
