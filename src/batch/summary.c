/*
 * summary.c -- the closing summary of `infera batch`: the text block
 * (job, model, input/output, row counts, time, lineage) or one JSON line
 * with --progress json (docs/batch.md "Summary").
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include <cjson/cJSON.h>

#include "batch/batch_int.h"

/* v with thousands separators ("1,234,567") in buf. */
static const char *fmt_int(int64_t v, char *buf, size_t size) {
    char tmp[32];
    int n = snprintf(tmp, sizeof tmp, "%lld", (long long)v);
    size_t o = 0;
    for (int i = 0; i < n && o + 2 < size; i++) {
        buf[o++] = tmp[i];
        int left = n - i - 1;
        if (left && left % 3 == 0 && tmp[i] != '-') buf[o++] = ',';
    }
    buf[o] = 0;
    return buf;
}


/* v rounded to `digits` decimals (the summary's precision). */
static double rounded(double v, int digits) {
    double scale = digits == 1 ? 10.0 : 1000.0;
    return round(v * scale) / scale;
}

/* The summary as one JSON line (cJSON: names, paths and messages escaped). */
static void print_summary_json(FILE *f, const inf__batch_summary *s, double per_m) {
    const inf__job *j = s->job;
    cJSON *o = cJSON_CreateObject();
    const struct {
        const char *key, *value;
    } strs[] = {{"event", "summary"},
                {"job_id", j->id},
                {"state", j->state},
                {"model_name", j->model_name},
                {"model_version", j->model_version},
                {"pipeline_hash", j->pipeline_hash}};
    const struct {
        const char *key;
        double value;
    } nums[] = {{"rows_read", (double)j->rows_read},
                {"rows_scored", (double)j->rows_scored},
                {"rows_written", (double)j->rows_written},
                {"rows_rejected", (double)j->rows_rejected},
                {"wall_s", rounded(s->wall, 3)},
                {"rows_per_s", rounded(s->rate, 1)},
                {"cpu_s", rounded(j->cpu_seconds, 3)},
                {"cpu_s_per_million", rounded(per_m, 3)}};
    int ok = o != NULL;
    for (size_t i = 0; ok && i < sizeof strs / sizeof strs[0]; i++)
        ok = cJSON_AddStringToObject(o, strs[i].key, strs[i].value) != NULL;
    for (size_t i = 0; ok && i < sizeof nums / sizeof nums[0]; i++)
        ok = cJSON_AddNumberToObject(o, nums[i].key, nums[i].value) != NULL;
    ok = ok && cJSON_AddStringToObject(o, "lineage", s->lineage) != NULL;
    char *text = ok ? cJSON_PrintUnformatted(o) : NULL;
    if (text) fprintf(f, "%s\n", text);
    else fprintf(stderr, "infera batch: out of memory writing the summary\n");
    free(text);
    cJSON_Delete(o);
}

void inf__batch_print_summary(FILE *f, const inf__batch_summary *s) {
    const inf__job *j = s->job;
    double per_m = j->rows_scored > 0 ? j->cpu_seconds / (double)j->rows_scored * 1e6 : 0;
    if (s->json) {
        print_summary_json(f, s, per_m);
        return;
    }
    char a[32], b[32], c[32], d[32];
    fprintf(f, "job       %s %s%s\n", j->id, j->state, s->failed ? " (resume with --resume)" : "");
    if (j->model_name[0])
        fprintf(f, "model     %s %s  pipeline %.12s\n", j->model_name, j->model_version, j->pipeline_hash);
    fprintf(f, "input     %s\noutput    %s\n", s->in, s->out);
    if (s->errs) fprintf(f, "errors    %s\n", s->errs);
    fprintf(f, "rows      read %s  scored %s  written %s  rejected %s\n", fmt_int(j->rows_read, a, sizeof a),
            fmt_int(j->rows_scored, b, sizeof b), fmt_int(j->rows_written, c, sizeof c),
            fmt_int(j->rows_rejected, d, sizeof d));
    fprintf(f, "time      wall %.2f s  %s rows/s  cpu %.2f s  %.1f cpu-s per million predictions\n", s->wall,
            fmt_int((int64_t)s->rate, a, sizeof a), j->cpu_seconds, per_m);
    fprintf(f, "lineage   %s\n", s->lineage);
}
