/*
 * fuzz_model_load.c -- libFuzzer target for the model decoder.
 *
 * Any byte string handed to inf_model_load_buffer must either load or be
 * rejected with an error: no crash, no leak, no undefined behaviour.  When a
 * model loads, a session is compiled and, if every input is a small float
 * tensor, run once on zeros, so the kernels see fuzzed attributes and
 * weights too.  Built with -DINFERA_FUZZ=ON and clang (see .ci/run).
 * The harness's allocator refuses any single block over 16 MiB, so a fuzzed
 * shape that asks for more (a Pad of 2^22) exercises the ENOMEM path in
 * milliseconds instead of filling memory for seconds: under ASan a model
 * whose every row writes three 32 MiB tensors took 15-20 s a run (the
 * sub-batch probe runs one row, which fitted the 64 MiB cap of before).
 * Sessions stop after FUZZ_MAX_SUBGRAPH_RUNS If/Loop/Scan body runs: a
 * mutated trip count (Loop M = 2^47) is a valid model that would otherwise
 * run for days (regressions/model-loop-huge-trip-count.onnx).
 */
#include <stdlib.h>
#include <string.h>

#include "infera/session.h"

#define FUZZ_MAX_BLOCK ((size_t)16 << 20)
#define FUZZ_MAX_SUBGRAPH_RUNS 10000
#define FUZZ_MAX_RUN_MS 5000 /* any other slow path stops here, well below libFuzzer's -timeout=20 */

static void *capped_realloc(void *ud, void *ptr, size_t size) {
    (void)ud;
    if (size == 0) {
        free(ptr);
        return NULL;
    }
    return size > FUZZ_MAX_BLOCK ? NULL : realloc(ptr, size);
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc, (void)argv;
    inf_set_allocator(capped_realloc, NULL);
    return 0;
}

static void try_run(const inf_model *m) {
    inf_session *s = NULL;
    inf_error err;
    inf_session_options opts;
    inf_session_options_init(&opts);
    opts.max_subgraph_runs = FUZZ_MAX_SUBGRAPH_RUNS;
    opts.max_run_ms = FUZZ_MAX_RUN_MS;
    opts.max_memory_bytes = (int64_t)1 << 30; /* under libFuzzer's malloc limit (-rss_limit_mb=4096) */
    if (inf_session_new(m, &opts, &s, &err) != INF_OK) return;
    int n = inf_model_n_inputs(m);
    inf_tensor *inputs[8] = {0};
    int ok = n <= 8;
    for (int i = 0; i < n && ok; i++) {
        const inf_value_info *info = inf_model_input(m, i);
        if (info->kind != INF_KIND_TENSOR || info->dtype != INF_DTYPE_F32 || info->ndim < 0) {
            ok = 0;
            break;
        }
        int64_t dims[INF_MAX_DIMS], numel = 1;
        for (int d = 0; d < info->ndim; d++) {
            dims[d] = info->dims[d] < 0 ? 1 : info->dims[d];
            if (dims[d] > 4096 || (numel *= dims[d] ? dims[d] : 1) > 4096) numel = 4097; /* no overflow */
        }
        if (numel > 4096 || inf_tensor_new(INF_DTYPE_F32, info->ndim, dims, &inputs[i]) != INF_OK) ok = 0;
    }
    if (ok) {
        inf_tensor *const *outputs;
        inf_session_run(s, (const inf_tensor *const *)inputs, &outputs, &err);
    }
    for (int i = 0; i < 8; i++) inf_tensor_free(inputs[i]);
    inf_session_free(s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    inf_model *m = NULL;
    inf_error err;
    if (inf_model_load_buffer(data, size, NULL, NULL, &m, &err) == INF_OK) {
        try_run(m);
        inf_model_free(m);
    }
    return 0;
}
