/*
 * test_batch_invariance.c -- the same record gives bit-identical outputs
 * whatever batch it is in (DESIGN.md section 1), end to end through the
 * example models (tests/models: mlp = Gemm/Relu/Softmax, cnn = Conv/pooling,
 * transformer = MatMul/attention/LayerNorm/GELU), so every float32 kernel
 * they use is covered, whichever kernel variant or fused op the loader picks.
 *
 * For each model and 1 and 2 threads: a batch of 7 random records, then each
 * record alone (batch 1) and rows 2..4 as a batch of 3; every output row must
 * match the batch-7 run bit for bit, and the 2-thread run the 1-thread one.
 * Prints one line per model and "N passed, M failed".
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "infera/infera.h"
#include "infera/model.h"
#include "infera/session.h"
#include "infera/tensor.h"

#ifndef INFERA_SOURCE_DIR
#define INFERA_SOURCE_DIR "."
#endif

enum { BATCH = 7, MAX_OUT = 8 };

static int n_passed, n_failed;
static uint64_t rng = 0x9E3779B97F4A7C15ull;

static float uniform(void) {
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return (float)((double)(rng >> 11) / 9007199254740992.0 * 2.0 - 1.0);
}

/* Runs rows [r0, r0 + nb) of x (row_elems floats each) through s; copies the
 * outputs' bytes into out[o] at row offset r0. */
static bool run_rows(inf_session *s, const inf_value_info *in, const float *x, int64_t row_elems, int r0, int nb,
                     int n_out, char **out, size_t *row_bytes) {
    int64_t dims[INF_MAX_DIMS];
    for (int d = 0; d < in->ndim; d++) dims[d] = in->dims[d] < 0 ? 1 : in->dims[d];
    dims[0] = nb;
    inf_tensor t;
    inf_tensor_init_view(&t, INF_DTYPE_F32, in->ndim, dims, (void *)(x + r0 * row_elems));
    const inf_tensor *inputs[1] = {&t};
    inf_tensor *const *outputs;
    inf_error err = {0};
    if (inf_session_run(s, inputs, &outputs, &err) != INF_OK) {
        fprintf(stderr, "  run failed: %s\n", err.message);
        return false;
    }
    for (int o = 0; o < n_out; o++) {
        size_t rb = inf_tensor_nbytes(outputs[o]) / (size_t)nb;
        if (row_bytes[o] && row_bytes[o] != rb) return false;
        row_bytes[o] = rb;
        if (out) memcpy(out[o] + (size_t)r0 * rb, outputs[o]->data, rb * (size_t)nb);
    }
    return true;
}

static bool same(char **a, char **b, int n_out, const size_t *row_bytes, int r0, int nb, const char *what,
                 const char *model, int threads) {
    for (int o = 0; o < n_out; o++)
        if (memcmp(a[o] + (size_t)r0 * row_bytes[o], b[o] + (size_t)r0 * row_bytes[o], row_bytes[o] * (size_t)nb)) {
            fprintf(stderr, "FAIL %s threads=%d: output %d rows %d..%d differ (%s)\n", model, threads, o, r0,
                    r0 + nb - 1, what);
            return false;
        }
    return true;
}

static void check_model(const char *name) {
    char path[512];
    snprintf(path, sizeof path, "%s/tests/models/%s.onnx", INFERA_SOURCE_DIR, name);
    inf_model *model = NULL;
    inf_error err = {0};
    if (inf_model_load(path, NULL, &model, &err) != INF_OK) {
        fprintf(stderr, "FAIL %s: %s\n", path, err.message);
        n_failed++;
        return;
    }
    const inf_value_info *in = inf_model_input(model, 0);
    int n_out = inf_model_n_outputs(model);
    if (n_out > MAX_OUT) n_out = MAX_OUT;
    int64_t row_elems = 1;
    for (int d = 1; d < in->ndim; d++) row_elems *= in->dims[d];
    float *x = malloc((size_t)(BATCH * row_elems) * sizeof *x);
    char *ref[MAX_OUT] = {0}, *got[MAX_OUT] = {0};
    size_t row_bytes[MAX_OUT] = {0};
    bool ok = x != NULL;
    for (int64_t i = 0; ok && i < BATCH * row_elems; i++) x[i] = uniform();
    for (int threads = 1; threads <= 2 && ok; threads++) {
        inf_session_options opts;
        inf_session_options_init(&opts);
        opts.n_threads = threads;
        opts.max_batch = BATCH;
        inf_session *s = NULL;
        ok = inf_session_new(model, &opts, &s, &err) == INF_OK;
        /* the batch of 7 (the reference: first on 1 thread) */
        if (ok && threads == 1) {
            ok = run_rows(s, in, x, row_elems, 0, BATCH, n_out, NULL, row_bytes); /* sizes */
            for (int o = 0; ok && o < n_out; o++) {
                ref[o] = malloc(row_bytes[o] * BATCH);
                got[o] = malloc(row_bytes[o] * BATCH);
                ok = ref[o] && got[o];
            }
            ok = ok && run_rows(s, in, x, row_elems, 0, BATCH, n_out, ref, row_bytes);
        } else if (ok) {
            ok = run_rows(s, in, x, row_elems, 0, BATCH, n_out, got, row_bytes) &&
                 same(ref, got, n_out, row_bytes, 0, BATCH, "batch of 7, 2 threads vs 1", name, threads);
        }
        for (int r = 0; ok && r < BATCH; r++)
            ok = run_rows(s, in, x, row_elems, r, 1, n_out, got, row_bytes) &&
                 same(ref, got, n_out, row_bytes, r, 1, "record alone vs in a batch of 7", name, threads);
        ok = ok && run_rows(s, in, x, row_elems, 2, 3, n_out, got, row_bytes) &&
             same(ref, got, n_out, row_bytes, 2, 3, "batch of 3 vs batch of 7", name, threads);
        inf_session_free(s);
    }
    printf("%s: %s\n", name, ok ? "ok" : "FAILED");
    if (ok) n_passed++;
    else n_failed++;
    for (int o = 0; o < MAX_OUT; o++) free(ref[o]), free(got[o]);
    free(x);
    inf_model_free(model);
}

int main(void) {
    check_model("mlp");
    check_model("cnn");
    check_model("transformer");
    printf("%d passed, %d failed\n", n_passed, n_failed);
    return n_failed ? 1 : 0;
}
