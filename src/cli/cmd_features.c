/*
 * cmd_features.c -- `infera features` (training features from raw records
 * with the same pipeline code as serving) and `infera fit-spec` (learn the
 * transform parameters of a spec template).  See docs/pipeline-spec.md.
 *
 * features: streams SRC a batch at a time through one executor and writes
 * the id column, passthrough fields and feature columns to DST; with
 * --as-of COLUMN (and --history sqlite:PATH?table=T) lookups are point in
 * time.  Rejected records are reported on stderr (first 10, then a count)
 * and left out; the exit status is 0 unless the job itself fails.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "infera/pipeline.h"

/* Reads a spec file through the check every reader shares (a regular file
 * of at most 64 MiB: a FIFO or /dev/zero is refused); free with inf_file_free. */
static int read_file(const char *cmd, const char *path, char **out, size_t *len) {
    void *data;
    inf_error err;
    if (inf_file_read(path, "pipeline spec", INF_FILE_MAX_SPEC_BYTES, &data, len, &err)) return cli_fail(cmd, "%s", err.message);
    *out = data;
    return 0;
}

int cmd_features(int argc, char **argv) {
    const char *cmd = "features", *spec = NULL, *input = NULL, *output = NULL, *as_of = NULL, *history = NULL,
               *model_path = NULL;
    int batch_rows = 1024;
    for (int i = 1; i < argc; i++) {
        bool missing = false;
        const char *v;
        if ((v = cli_flag_value(argc, argv, &i, "--spec", &missing))) spec = v;
        else if ((v = cli_flag_value(argc, argv, &i, "--input", &missing))) input = v;
        else if ((v = cli_flag_value(argc, argv, &i, "--output", &missing))) output = v;
        else if ((v = cli_flag_value(argc, argv, &i, "--as-of", &missing))) as_of = v;
        else if ((v = cli_flag_value(argc, argv, &i, "--history", &missing))) history = v;
        else if ((v = cli_flag_value(argc, argv, &i, "--model", &missing))) model_path = v;
        else if ((v = cli_flag_value(argc, argv, &i, "--batch-size", &missing))) {
            if (!cli_parse_int(cmd, "--batch-size", v, 1, 1 << 20, &batch_rows)) return 2;
        } else if (missing) return cli_usage(cmd, "%s needs a value", argv[i]);
        else return cli_unexpected(cmd, argv[i]);
        if (missing) return cli_usage(cmd, "%s needs a value", argv[i]);
    }
    if (!spec || !input || !output) return cli_usage(cmd, "--spec, --input and --output are required");
    if (history && !as_of) return cli_usage(cmd, "--history needs --as-of COLUMN");
    inf_error err = {0};
    inf_model *model = NULL;
    inf_pipeline *p = NULL;
    inf_pipeline_exec *e = NULL;
    inf_source *src = NULL;
    inf_sink *sink = NULL;
    inf_record_batch *in = NULL, *out = NULL;
    int rc = 1;
    char dst[2048];
    if (model_path && cli_load_model(model_path, &model, &err)) {
        rc = cli_fail(cmd, "%s", err.message);
        goto done;
    }
    if (inf_pipeline_load(spec, model, NULL, &p, &err)) {
        rc = cli_fail(cmd, "%s", err.message);
        goto done;
    }
    if (inf_pipeline_exec_new(p, &e, &err) ||
        (as_of && inf_pipeline_exec_set_point_in_time(e, as_of, history, &err))) {
        rc = cli_fail(cmd, "%s", err.message);
        goto done;
    }
    inf_source_options so = {batch_rows, inf_pipeline_id_column(p)};
    if (inf_source_open(input, &so, &src, &err)) {
        rc = cli_fail(cmd, "%s", err.message);
        goto done;
    }
    /* npy output: a float matrix without the id */
    snprintf(dst, sizeof dst, "%s", output);
    if (!strncmp(output, "npy:", 4) && inf_pipeline_id_column(p) && !strchr(output, '?'))
        snprintf(dst, sizeof dst, "%s?skip=%s", output, inf_pipeline_id_column(p));
    if (inf_sink_open(dst, NULL, &sink, &err)) {
        rc = cli_fail(cmd, "%s", err.message);
        goto done;
    }
    if (inf_record_batch_new(&in) || inf_record_batch_new(&out)) {
        rc = cli_fail(cmd, "out of memory");
        goto done;
    }
    long long row0 = 0, n_written = 0, n_rejected = 0;
    int eof = 0;
    while (!eof) {
        inf_status st = inf_source_next(src, in, &eof, &err);
        if (st == INF_EFORMAT) { /* a malformed record: report, go on */
            fprintf(stderr, "infera features: %s\n", err.message);
            n_rejected++;
            continue;
        }
        if (st) {
            rc = cli_fail(cmd, "%s", err.message);
            goto done;
        }
        int n = inf_record_batch_n_rows(in);
        if (!n) continue;
        if (inf_pipeline_prepare(e, in, NULL, &err)) {
            rc = cli_fail(cmd, "%s", err.message);
            goto done;
        }
        for (int i = 0; i < inf_pipeline_n_rejected(e); i++) {
            const char *field, *msg;
            int row = inf_pipeline_rejected(e, i, &field, &msg);
            if (n_rejected + i < 10) fprintf(stderr, "infera features: record %lld rejected: %s\n", row0 + row + 1, msg);
        }
        n_rejected += inf_pipeline_n_rejected(e);
        inf_record_batch_reset(out);
        if (inf_pipeline_features_to_records(e, out, &err) || inf_sink_write(sink, out, &err)) {
            rc = cli_fail(cmd, "%s", err.message);
            goto done;
        }
        n_written += inf_record_batch_n_rows(out);
        row0 += n;
    }
    inf_status cst = inf_sink_close(sink, &err);
    sink = NULL;
    if (cst) {
        rc = cli_fail(cmd, "%s", err.message);
        goto done;
    }
    fprintf(stderr, "infera features: %lld records, %lld feature rows written, %lld rejected (spec %s, sha256 %.12s)\n",
            row0, n_written, n_rejected, inf_pipeline_name(p), inf_pipeline_hash(p));
    rc = 0;
done:
    if (sink) inf_sink_close(sink, NULL);
    inf_source_close(src);
    inf_record_batch_free(in);
    inf_record_batch_free(out);
    inf_pipeline_exec_free(e);
    inf_pipeline_free(p);
    inf_model_free(model);
    return rc;
}

int cmd_fit_spec(int argc, char **argv) {
    const char *cmd = "fit-spec", *spec = NULL, *input = NULL, *output = NULL, *as_of = NULL, *history = NULL;
    for (int i = 1; i < argc; i++) {
        bool missing = false;
        const char *v;
        if ((v = cli_flag_value(argc, argv, &i, "--spec", &missing))) spec = v;
        else if ((v = cli_flag_value(argc, argv, &i, "--input", &missing))) input = v;
        else if ((v = cli_flag_value(argc, argv, &i, "--output", &missing))) output = v;
        else if ((v = cli_flag_value(argc, argv, &i, "--as-of", &missing))) as_of = v;
        else if ((v = cli_flag_value(argc, argv, &i, "--history", &missing))) history = v;
        else if (missing) return cli_usage(cmd, "%s needs a value", argv[i]);
        else return cli_unexpected(cmd, argv[i]);
        if (missing) return cli_usage(cmd, "%s needs a value", argv[i]);
    }
    if (!spec || !input || !output) return cli_usage(cmd, "--spec, --input and --output are required");
    char *text = NULL, *result = NULL;
    size_t len = 0;
    int rc = read_file(cmd, spec, &text, &len);
    if (rc) return rc;
    inf_pipeline_options opts;
    inf_pipeline_options_init(&opts);
    char dir[1024];
    snprintf(dir, sizeof dir, "%s", spec);
    char *slash = strrchr(dir, '/');
    if (slash) *slash = 0;
    else snprintf(dir, sizeof dir, ".");
    opts.base_dir = dir;
    inf_error err = {0};
    if (inf_pipeline_fit(text, len, input, as_of, history, &opts, &result, &err)) {
        inf_file_free(text);
        return cli_fail(cmd, "%s: %s", spec, err.message);
    }
    inf_file_free(text);
    FILE *f = strcmp(output, "-") ? fopen(output, "wb") : stdout;
    if (!f) {
        inf_pipeline_string_free(result);
        return cli_fail(cmd, "%s: cannot create", output);
    }
    fputs(result, f);
    fputc('\n', f);
    int bad = ferror(f);
    if (f != stdout) bad |= fclose(f);
    inf_pipeline_string_free(result);
    if (bad) return cli_fail(cmd, "%s: write failed", output);
    return 0;
}
