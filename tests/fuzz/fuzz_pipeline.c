/*
 * fuzz_pipeline.c -- libFuzzer target for the feature pipeline: the spec
 * decoder (src/pipeline/spec.c, inf_pipeline_load_string: `--pipeline FILE`
 * of serve, batch and stream) and the record decoding and validation that
 * follow it (inf_record_batch_add_json, as serve's /records reads a body's
 * records, then inf_pipeline_prepare).
 *
 * The input is a spec, a NUL byte, then records one JSON object a line.  The
 * spec is loaded for the fraud example's model (checked against its inputs)
 * and for no model; each pipeline that loads, and the fraud model's default
 * pipeline, prepares the records.  A spec with lookups is loaded but not
 * executed (its stores are files or servers the fuzzer must not open).
 * Must never crash, leak or read out of bounds; a refusal is fine.  Seeds:
 * tests/fuzz/seeds/pipeline_*.bin.  Built with -DINFERA_FUZZ=ON and clang.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "infera/pipeline.h"
#include "pipeline/pipeline_int.h"

#define MAX_RECORDS 64

static inf_model *fraud;

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc, (void)argv;
    inf_error err;
    if (inf_model_load(INFERA_SOURCE_DIR "/examples/fraud/fraud_xgb.onnx", NULL, &fraud, &err) != INF_OK) {
        fprintf(stderr, "fuzz_pipeline: %s\n", err.message);
        abort();
    }
    return 0;
}

/* Each line of the records (at most MAX_RECORDS) as a row; bad lines are refused one by one. */
static void add_records(inf_record_batch *b, const char *recs, size_t n) {
    inf_error err;
    for (int k = 0; n && k < MAX_RECORDS; k++) {
        const char *nl = memchr(recs, '\n', n);
        size_t line = nl ? (size_t)(nl - recs) : n;
        (void)inf_record_batch_add_json(b, recs, line, &err);
        recs += line + (nl != NULL), n -= line + (nl != NULL);
    }
}

static void prepare(const inf_pipeline *p, const inf_record_batch *b) {
    inf_pipeline_exec *e;
    inf_error err;
    if (p->n_lookups || inf_pipeline_exec_new(p, &e, &err) != INF_OK)
        return;
    const inf_tensor *const *inputs;
    if (inf_pipeline_prepare(e, b, &inputs, &err) == INF_OK) {
        int rows, cols;
        (void)inf_pipeline_features(e, &rows, &cols);
        if (rows != inf_pipeline_n_accepted(e) || rows + inf_pipeline_n_rejected(e) != inf_record_batch_n_rows(b))
            abort(); /* every record is accepted or rejected */
    }
    inf_pipeline_exec_free(e);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const uint8_t *nul = memchr(data, 0, size);
    size_t spec_len = nul ? (size_t)(nul - data) : size;
    char *copy = malloc(size ? size : 1); /* exact size: a read past the input is caught */
    inf_record_batch *b = NULL;
    if (!copy || inf_record_batch_new(&b) != INF_OK)
        goto done;
    memcpy(copy, data, size);
    add_records(b, copy + spec_len + (nul != NULL), size - spec_len - (nul != NULL));
    inf_pipeline_options opts;
    inf_pipeline_options_init(&opts);
    opts.base_dir = "/nonexistent"; /* a lookup's relative store path resolves to nothing */
    inf_pipeline *p;
    inf_error err;
    const inf_model *models[2] = {fraud, NULL};
    for (int i = 0; i < 2; i++)
        if (inf_pipeline_load_string(copy, spec_len, models[i], &opts, &p, &err) == INF_OK) {
            prepare(p, b);
            inf_pipeline_free(p);
        }
    if (inf_pipeline_default(fraud, &opts, &p, &err) == INF_OK) {
        prepare(p, b);
        inf_pipeline_free(p);
    }
done:
    inf_record_batch_free(b);
    free(copy);
    return 0;
}
