/*
 * test_edge_region.c -- the edge runtime in a fixed memory region.
 *
 * Linked against libinfera_edge.a only (no protobuf-c, no cJSON) with the
 * model compiled in by `infera compile --c-source` (edge_test_model.c, made
 * at build time from tests/models/mlp.onnx, --max-batch 4), and with libc's
 * allocator wrapped (-Wl,--wrap=malloc,...) to count every call the engine
 * makes.  Checks:
 *   - in a large enough region, start-up succeeds without libc's allocator;
 *     afterwards 200 runs make no libc allocation, no engine allocation
 *     (inf_alloc stats) and do not grow the region's use;
 *   - a region too small is refused with INF_ENOMEM and a message, twice
 *     (tiny, and half of what start-up needed), without crashing and
 *     leaving nothing in use;
 *   - the outputs equal ONNX Runtime's (tests/models/mlp_*.ort.npy, the
 *     oracle, within the models test's tolerance) for mlp_input.npy.
 *   usage: test_edge_region SOURCE_DIR
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "infera/bundle.h"

const void *infera_bundle_edge_test_model(size_t *size);

/* ---- libc allocation counter (the engine's calls, through --wrap) ---- */
static long libc_calls;
void *__real_malloc(size_t n);
void *__real_calloc(size_t n, size_t m);
void *__real_realloc(void *p, size_t n);
void *__wrap_malloc(size_t n) { return libc_calls++, __real_malloc(n); }
void *__wrap_calloc(size_t n, size_t m) { return libc_calls++, __real_calloc(n, m); }
void *__wrap_realloc(void *p, size_t n) { return libc_calls++, __real_realloc(p, n); }

#include "../check.h"

/* A float32 .npy (format 1.0, C order) into out; returns the element count or -1. */
static long read_npy_f32(const char *path, float *out, long cap) {
    static unsigned char buf[1 << 16];
    FILE *f = fopen(path, "rb");
    if (!f) return -1;
    size_t n = fread(buf, 1, sizeof buf, f);
    fclose(f);
    if (n < 10 || memcmp(buf, "\x93NUMPY", 6)) return -1;
    size_t hdr = 10 + (size_t)(buf[8] | buf[9] << 8);
    if (!strstr((char *)buf + 10, "<f4") || hdr > n) return -1;
    long count = (long)((n - hdr) / 4);
    if (count > cap) return -1;
    memcpy(out, buf + hdr, (size_t)count * 4);
    return count;
}

static _Alignas(64) unsigned char big_region[4 << 20];
static _Alignas(64) unsigned char small_region[1 << 20];

int main(int argc, char **argv) {
    if (argc < 2) return 2;
    char path[4096];
    static float input[4 * 32], want_logits[8], want_probs[8];
    snprintf(path, sizeof path, "%s/tests/models/mlp_input.npy", argv[1]);
    long n_in = read_npy_f32(path, input, 4 * 32);
    snprintf(path, sizeof path, "%s/tests/models/mlp_logits.ort.npy", argv[1]);
    long n_l = read_npy_f32(path, want_logits, 8);
    snprintf(path, sizeof path, "%s/tests/models/mlp_probabilities.ort.npy", argv[1]);
    long n_p = read_npy_f32(path, want_probs, 8);
    if (n_in != 128 || n_l != 8 || n_p != 8) {
        printf("cannot read the test data under %s\n", argv[1]);
        return 1;
    }
    size_t bundle_size;
    const void *bundle = infera_bundle_edge_test_model(&bundle_size);
    inf_model *model;
    inf_session *session;
    inf_error err;

    /* large enough: nothing allocated after start-up */
    long libc_before_start = libc_calls;
    inf_status st = inf_session_new_in(big_region, sizeof big_region, bundle, bundle_size, NULL, &model, &session, &err);
    CHECK(st == INF_OK, "4 MiB region: %s", err.message);
    if (st) goto out;
    printf("start-up: %zu bytes of the region in use (peak %zu); %ld libc allocations during start-up\n",
           inf_region_bytes_used(big_region), inf_region_bytes_peak(big_region), libc_calls - libc_before_start);
    CHECK(libc_calls == libc_before_start, "start-up called libc's allocator %ld times", libc_calls - libc_before_start);
    inf_tensor x;
    int64_t dims[2] = {4, 32};
    inf_tensor_init_view(&x, INF_DTYPE_F32, 2, dims, input);
    const inf_tensor *in[1] = {&x};
    inf_alloc_stats a0, a1;
    inf_alloc_get_stats(&a0);
    long libc0 = libc_calls;
    size_t used0 = inf_region_bytes_used(big_region);
    inf_tensor *const *out = NULL;
    int ok_runs = 0;
    for (int i = 0; i < 200; i++) ok_runs += inf_session_run(session, in, &out, &err) == INF_OK;
    inf_alloc_get_stats(&a1);
    CHECK(ok_runs == 200, "%d of 200 runs succeeded (%s)", ok_runs, err.message);
    CHECK(libc_calls == libc0, "runs called libc's allocator %ld times", libc_calls - libc0);
    CHECK(a1.n_allocs == a0.n_allocs && a1.n_failed == a0.n_failed, "runs allocated %llu times",
          (unsigned long long)(a1.n_allocs - a0.n_allocs));
    CHECK(inf_region_bytes_used(big_region) <= used0, "region use grew from %zu to %zu", used0,
          inf_region_bytes_used(big_region));
    if (out) {
        const float *got_l = out[0]->data, *got_p = out[1]->data;
        float worst = 0;
        for (int i = 0; i < 8; i++) {
            float dl = fabsf(got_l[i] - want_logits[i]) - 1e-4f * fabsf(want_logits[i]);
            float dp = fabsf(got_p[i] - want_probs[i]) - 1e-4f * fabsf(want_probs[i]);
            worst = fmaxf(worst, fmaxf(dl, dp));
        }
        CHECK(worst <= 1e-5f, "outputs differ from ONNX Runtime's by %g", worst);
        printf("outputs vs ONNX Runtime: within tolerance (worst excess %g)\n", worst);
    }
    inf_session_free(session);
    inf_model_free(model);
    CHECK(inf_region_bytes_used(big_region) == 0, "%zu bytes still in use after free", inf_region_bytes_used(big_region));
    /* too small: refused cleanly -- a tiny region, and one half the peak start-up needed */
    size_t short_size = inf_region_bytes_peak(big_region) / 2;
    inf_status st2 = inf_session_new_in(small_region, 300, bundle, bundle_size, NULL, &model, &session, &err);
    CHECK(st2 == INF_ENOMEM && !model && !session, "300-byte region: status %d", st2);
    printf("300 bytes: %s\n", err.message);
    st2 = inf_session_new_in(small_region, short_size, bundle, bundle_size, NULL, &model, &session, &err);
    CHECK(st2 == INF_ENOMEM && !model && !session && strstr(err.message, "too small"), "%zu-byte region: status %d: %s",
          short_size, st2, err.message);
    printf("%zu bytes: %s\n", short_size, err.message);
    CHECK(inf_region_bytes_used(small_region) == 0, "a failed start-up left %zu bytes in use",
          inf_region_bytes_used(small_region));
out:
    return check_summary("edge region");
}
