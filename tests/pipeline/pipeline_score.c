/*
 * pipeline_score.c -- scores records through the pipeline C API (the path
 * every runner takes): source -> inf_pipeline_prepare -> inf_session_run ->
 * inf_pipeline_finish, in batches of 700 (not the CLI's 1024, so batch
 * boundaries differ).  Writes OUTDIR/features.npy (the model input tensor,
 * concatenated) and OUTDIR/<output>.npy for each numeric model output, for
 * tests/pipeline/test_consistency.sh to compare bit for bit with
 * `infera features` + `infera run`, and OUTDIR/predictions.csv (the prediction
 * records) to compare with the runners' outputs.
 * usage: pipeline_score SPEC MODEL SRC OUTDIR
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "infera/pipeline.h"
#include "infera/session.h"

static int die(const char *what, const inf_error *err) {
    fprintf(stderr, "pipeline_score: %s: %s\n", what, err->message);
    return 1;
}

typedef struct growing {
    char *data;
    size_t n, cap;
    int64_t rows, cols;
    inf_dtype dtype;
} growing;

static int append(growing *g, const inf_tensor *t) {
    size_t nb = inf_tensor_nbytes(t);
    if (g->n + nb > g->cap) {
        size_t cap = g->cap ? g->cap : 1 << 16;
        while (cap < g->n + nb) cap *= 2;
        char *d = realloc(g->data, cap);
        if (!d) return -1;
        g->data = d;
        g->cap = cap;
    }
    memcpy(g->data + g->n, t->data, nb);
    g->n += nb;
    g->rows += t->dims[0];
    g->cols = t->ndim == 2 ? t->dims[1] : 0;
    g->dtype = t->dtype;
    return 0;
}

static int save(const char *dir, const char *name, growing *g) {
    char path[1024];
    snprintf(path, sizeof path, "%s/%s.npy", dir, name);
    inf_tensor t;
    int64_t dims[2] = {g->rows, g->cols};
    inf_tensor_init_view(&t, g->dtype, g->cols ? 2 : 1, dims, g->data);
    inf_error err;
    if (inf_tensor_save_npy(path, &t, &err)) return die(path, &err);
    return 0;
}

int main(int argc, char **argv) {
    if (argc != 5) {
        fprintf(stderr, "usage: pipeline_score SPEC MODEL SRC OUTDIR\n");
        return 2;
    }
    inf_error err;
    inf_model *model;
    inf_pipeline *p;
    inf_pipeline_exec *e;
    inf_session *s;
    inf_source *src;
    if (inf_model_load(argv[2], NULL, &model, &err)) return die(argv[2], &err);
    if (inf_pipeline_load(argv[1], model, NULL, &p, &err)) return die(argv[1], &err);
    if (inf_pipeline_exec_new(p, &e, &err)) return die("executor", &err);
    if (inf_session_new(model, NULL, &s, &err)) return die("session", &err);
    inf_source_options so = {700, NULL};
    if (inf_source_open(argv[3], &so, &src, &err)) return die(argv[3], &err);
    inf_record_batch *b, *out;
    inf_record_batch_new(&b);
    inf_record_batch_new(&out);
    char pred_uri[1100];
    snprintf(pred_uri, sizeof pred_uri, "csv:%s/predictions.csv", argv[4]);
    inf_sink *sink;
    if (inf_sink_open(pred_uri, NULL, &sink, &err)) return die(pred_uri, &err);
    int n_out = inf_model_n_outputs(model);
    growing feat = {0}, *outs = calloc((size_t)n_out, sizeof *outs);
    int eof = 0;
    while (!eof) {
        if (inf_source_next(src, b, &eof, &err)) return die("source", &err);
        if (!inf_record_batch_n_rows(b)) continue;
        const inf_tensor *const *x;
        inf_tensor *const *y;
        if (inf_pipeline_prepare(e, b, &x, &err)) return die("prepare", &err);
        if (inf_session_run(s, x, &y, &err)) return die("run", &err);
        inf_record_batch_clear(out);
        if (inf_pipeline_finish(e, y, out, &err)) return die("finish", &err);
        if (inf_sink_write(sink, out, &err)) return die(pred_uri, &err);
        if (append(&feat, x[0])) return 1;
        for (int i = 0; i < n_out; i++)
            if (append(&outs[i], y[i])) return 1;
    }
    if (inf_sink_close(sink, &err)) return die(pred_uri, &err);
    int rc = save(argv[4], "features", &feat);
    for (int i = 0; i < n_out; i++) rc |= save(argv[4], inf_model_output(model, i)->name, &outs[i]);
    for (int i = 0; i < n_out; i++) free(outs[i].data);
    free(outs);
    free(feat.data);
    inf_record_batch_free(b);
    inf_record_batch_free(out);
    inf_source_close(src);
    inf_session_free(s);
    inf_pipeline_exec_free(e);
    inf_pipeline_free(p);
    inf_model_free(model);
    return rc;
}
