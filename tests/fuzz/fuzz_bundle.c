/*
 * fuzz_bundle.c -- libFuzzer target for the bundle loader (src/bundle/load.c).
 *
 * Any byte string must load or be refused with an error: no crash, no leak,
 * no read outside the buffer.  So that mutations get past the integrity
 * checks into the stream decoder (the checks themselves are covered by
 * tests/edge/test_bundle.c), the target rewrites the declared file size, the
 * format version (so that seeds and regressions of an older version still
 * reach the decoder) and both CRC32Cs of any input that has a header before
 * loading it.  The bytes
 * are copied into an exact-size 64-byte aligned heap block (ASan sees its
 * end).  A bundle that loads gets a session and one run on zero inputs of
 * its declared shapes (symbolic dimensions 1), under run limits, so fuzzed
 * graphs and weights reach the kernels' init and run.
 * Built with -DINFERA_FUZZ=ON and clang; seeds: bundles of the test models.
 */
#include <stdlib.h>
#include <string.h>

#include "bundle/format.h"
#include "infera/bundle.h"
#include "infera/session.h"

static void run_once(const inf_model *m) {
    inf_session_options so;
    inf_session_options_init(&so);
    so.max_subgraph_runs = 1000;
    so.max_run_ms = 2000;
    /* 64 MiB: a kernel's time grows with its output, and the run limit is
     * checked between nodes only; at 1 GiB a Conv with a fuzzed pad of 2^24
     * filled 468 MB for 21 s (release) in one node, past -timeout=20
     * (regressions/bundle-conv-wide-pad.bundle) */
    so.max_memory_bytes = (int64_t)64 << 20;
    inf_session *s;
    inf_error err;
    if (inf_session_new(m, &so, &s, &err)) return;
    int n = inf_model_n_inputs(m);
    inf_tensor **in = calloc((size_t)n + 1, sizeof *in);
    bool ok = in != NULL;
    for (int i = 0; ok && i < n; i++) {
        const inf_value_info *info = inf_model_input(m, i);
        int64_t dims[INF_MAX_DIMS];
        int64_t numel = 1;
        for (int d = 0; d < info->ndim; d++) {
            dims[d] = info->dims[d] < 0 ? 1 : info->dims[d];
            if (__builtin_mul_overflow(numel, dims[d], &numel)) { /* a fuzzed declared shape: too big to run */
                numel = INT64_MAX;
                break;
            }
        }
        ok = info->kind == INF_KIND_TENSOR && info->ndim >= 0 && info->dtype != INF_DTYPE_UNDEFINED && numel <= 1 << 20 &&
             inf_tensor_new(info->dtype, info->ndim, dims, &in[i]) == INF_OK;
    }
    inf_tensor *const *out;
    if (ok) (void)inf_session_run(s, (const inf_tensor *const *)in, &out, &err);
    for (int i = 0; in && i < n; i++) inf_tensor_free(in[i]);
    free(in);
    inf_session_free(s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    void *mem = NULL;
    if (posix_memalign(&mem, 64, size ? size : 1)) return 0; /* exactly size bytes: ASan sees the end */
    uint8_t *buf = mem;
    if (size) memcpy(buf, data, size);
    if (size >= INF__BUNDLE_HEADER_BYTES) {
        inf__wr_u64(buf + INF__BH_FILE_SIZE, size);
        inf__wr_u32(buf + INF__BH_VERSION, INF__BUNDLE_VERSION);
        inf__wr_u32(buf + INF__BH_BODY_CRC, inf__crc32c_striped(buf + INF__BUNDLE_HEADER_BYTES, size - INF__BUNDLE_HEADER_BYTES));
        inf__wr_u32(buf + INF__BH_HEAD_CRC, inf__crc32c(0, buf, INF__BH_HEAD_CRC));
    }
    inf_model *m = NULL;
    inf_error err;
    if (inf_bundle_load_static(buf, size, "fuzz", &m, &err) == INF_OK) {
        run_once(m);
        inf_model_free(m);
    }
    free(buf);
    return 0;
}
