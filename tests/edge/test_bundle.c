/*
 * test_bundle.c -- bundles against their source models, and bundles that
 * must be refused.
 *
 *   test_bundle MODEL.onnx...
 *
 * ROUND TRIP: each ONNX model (the oracle: the same engine through the
 * protobuf loader, whose outputs the models/ORT tests check against ONNX
 * Runtime) is compiled to a bundle file as `infera compile` does (the GEMM
 * panels packed during the load recorded and stored), loaded back
 * through inf_model_load (the path every command takes) and through
 * inf_model_load_buffer, and both are run on the same deterministic inputs
 * (symbolic dimensions = 3).  Every output must be equal byte for byte; a
 * model whose inputs the generator cannot make (or that fails on them) must
 * fail the same way from the bundle.
 * REFUSALS (on the first model): truncated, a flipped byte in the weights,
 * another format version (version 1, whose plain weights sat beside their
 * panels, and a later one), another target, garbage -- each refused with an
 * error naming the file and the reason.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bundle/bundle_int.h"
#include "infera/bundle.h"
#include "infera/session.h"


#include "../check.h"

static uint64_t rng = 0x9E3779B97F4A7C15ull;
static uint32_t next_rand(void) {
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return (uint32_t)(rng >> 11);
}

static inf_tensor *make_input(const inf_value_info *info) {
    if (info->kind != INF_KIND_TENSOR || info->ndim < 0 || info->dtype == INF_DTYPE_STRING ||
        info->dtype == INF_DTYPE_UNDEFINED)
        return NULL;
    int64_t dims[INF_MAX_DIMS];
    for (int d = 0; d < info->ndim; d++) dims[d] = info->dims[d] < 0 ? 3 : info->dims[d];
    inf_tensor *t;
    if (inf_tensor_new(info->dtype, info->ndim, dims, &t)) return NULL;
    int64_t n = inf_tensor_numel(t);
    for (int64_t i = 0; i < n; i++) {
        uint32_t r = next_rand();
        switch (info->dtype) {
        case INF_DTYPE_F32: ((float *)t->data)[i] = (float)(r % 2001) / 1000.0f - 1.0f; break;
        case INF_DTYPE_F64: ((double *)t->data)[i] = (double)(r % 2001) / 1000.0 - 1.0; break;
        case INF_DTYPE_I64: ((int64_t *)t->data)[i] = r % 3; break;
        case INF_DTYPE_I32: ((int32_t *)t->data)[i] = (int32_t)(r % 3); break;
        case INF_DTYPE_BOOL: ((uint8_t *)t->data)[i] = (uint8_t)(r & 1); break;
        default: ((uint8_t *)t->data)[i * (int64_t)inf_dtype_size(info->dtype)] = (uint8_t)(r % 3); break;
        }
    }
    return t;
}

static bool same_value(const inf_tensor *a, const inf_tensor *b) {
    if (a->kind != b->kind || a->dtype != b->dtype || a->ndim != b->ndim || a->n_items != b->n_items) return false;
    if (memcmp(a->dims, b->dims, (size_t)a->ndim * sizeof a->dims[0])) return false;
    for (int i = 0; i < a->n_items; i++)
        if (!same_value(a->items[i], b->items[i])) return false;
    if (a->kind != INF_KIND_TENSOR) return true;
    if (a->dtype == INF_DTYPE_STRING) {
        for (int64_t i = 0; i < inf_tensor_numel(a); i++)
            if (strcmp(((char **)a->data)[i], ((char **)b->data)[i])) return false;
        return true;
    }
    size_t n = inf_tensor_nbytes(a);
    return !n || !memcmp(a->data, b->data, n);
}

/* Runs model on inputs: status, and a copy of the outputs on success. */
static inf_status run(const inf_model *m, inf_tensor **in, inf_tensor ***out, inf_error *err) {
    inf_session *s;
    inf_session_options so;
    inf_session_options_init(&so);
    so.max_run_ms = 20000;
    *out = NULL;
    inf_status st = inf_session_new(m, &so, &s, err);
    if (st) return st;
    inf_tensor *const *o;
    st = inf_session_run(s, (const inf_tensor *const *)in, &o, err);
    if (!st) {
        int n = inf_model_n_outputs(m);
        *out = calloc((size_t)n + 1, sizeof **out);
        for (int i = 0; i < n; i++) inf_tensor_clone(o[i], &(*out)[i]);
    }
    inf_session_free(s);
    return st;
}

static void free_values(inf_tensor **v, int n) {
    for (int i = 0; v && i < n; i++) inf_tensor_free(v[i]);
    free(v);
}

static bool write_file(const char *path, const void *d, size_t n) {
    FILE *f = fopen(path, "wb");
    if (!f) return false;
    bool ok = fwrite(d, 1, n, f) == n;
    return fclose(f) == 0 && ok;
}

static int n_compared, n_both_failed, n_prepacked, n_used_prepacked, n_panels_only, n_convpacked, n_used_convpacked;

static void round_trip(const char *path, const char *tmp) {
    inf_error err;
    inf_model *src = NULL, *fb = NULL, *mb = NULL;
    inf__prepack_log packed = {0}; /* as `infera compile` does: the panels packed at load go into the bundle */
    inf__ops_prepack_begin(&packed);
    inf_status lst = inf_model_load(path, NULL, &src, &err);
    inf__ops_prepack_end();
    if (lst) {
        printf("skip %s: %s\n", path, err.message);
        inf__free(packed.items);
        inf__free(packed.conv);
        return;
    }
    void *img;
    size_t size;
    inf_bundle_write_options wo = {.max_batch = 3};
    inf_status st = inf__bundle_write_prepacked(src, &wo, &packed, &img, &size, &err);
    n_prepacked += packed.n;
    n_convpacked += packed.n_conv;
    inf__free(packed.items);
    inf__free(packed.conv);
    CHECK(!st, "%s: write: %s", path, err.message);
    if (st) goto done;
    CHECK(write_file(tmp, img, size), "cannot write %s", tmp);
    st = inf_model_load(tmp, NULL, &fb, &err);
    CHECK(!st, "%s: load bundle file: %s", path, err.message);
    inf_status st2 = inf_model_load_buffer(img, size, NULL, NULL, &mb, &err);
    CHECK(!st2, "%s: load bundle buffer: %s", path, err.message);
    inf_bundle_buffer_free(img);
    if (st || st2) goto done;
    inf_bundle_info bi;
    CHECK(inf_model_bundle_info(fb, &bi) && bi.max_batch == 3 && bi.format_version == INF__BUNDLE_VERSION,
          "%s: bundle facts", path);
    n_used_prepacked += bi.n_prepacked;
    n_panels_only += bi.n_panels_only;
    n_used_convpacked += bi.n_convpacked;
    int n_in = inf_model_n_inputs(src), n_out = inf_model_n_outputs(src);
    CHECK(n_in == inf_model_n_inputs(fb) && n_out == inf_model_n_outputs(fb), "%s: signature differs", path);
    inf_tensor **in = calloc((size_t)n_in + 1, sizeof *in);
    bool inputs_ok = true;
    for (int i = 0; i < n_in; i++) inputs_ok &= (in[i] = make_input(inf_model_input(src, i))) != NULL;
    if (inputs_ok) {
        inf_tensor **o_src, **o_file, **o_buf;
        inf_error e1, e2, e3;
        inf_status s1 = run(src, in, &o_src, &e1), s2 = run(fb, in, &o_file, &e2), s3 = run(mb, in, &o_buf, &e3);
        CHECK(s1 == s2 && s1 == s3, "%s: status onnx %d, bundle file %d, bundle buffer %d (%s | %s)", path, s1, s2, s3,
              s1 ? e1.message : "", s2 ? e2.message : "");
        if (!s1 && !s2 && !s3) {
            bool same = true;
            for (int i = 0; i < n_out; i++) same &= same_value(o_src[i], o_file[i]) && same_value(o_src[i], o_buf[i]);
            CHECK(same, "%s: outputs differ between the ONNX model and its bundle", path);
            n_compared += same;
        } else if (s1 && s1 == s2) {
            n_both_failed++;
        }
        free_values(o_src, n_out), free_values(o_file, n_out), free_values(o_buf, n_out);
    }
    free_values(in, n_in);
done:
    inf_model_free(src);
    inf_model_free(fb);
    inf_model_free(mb);
}

/* The bundle image of path with byte at `at` replaced (or truncated to `len`),
 * re-checksummed where `fix_crc` says, written to tmp; the load must fail
 * with an error that contains `want`. */
static void expect_refused(const uint8_t *img, size_t size, const char *tmp, const char *what, const char *want) {
    inf_model *m = NULL;
    inf_error err;
    CHECK(write_file(tmp, img, size), "cannot write %s", tmp);
    inf_status st = inf_model_load(tmp, NULL, &m, &err);
    CHECK(st != INF_OK, "%s: loaded", what);
    if (st) {
        CHECK(strstr(err.message, tmp) && strstr(err.message, want), "%s: error '%s' lacks '%s' or the file name",
              what, err.message, want);
        printf("  refused (%s): %s\n", what, err.message);
    }
    inf_model_free(m);
}

static void refusals(const char *path, const char *tmp) {
    inf_error err;
    inf_model *src;
    if (inf_model_load(path, NULL, &src, &err)) return;
    void *img;
    size_t size;
    if (inf_bundle_write(src, NULL, &img, &size, &err)) return;
    inf_model_free(src);
    uint8_t *b = malloc(size);
    memcpy(b, img, size);
    expect_refused(b, size / 2, tmp, "truncated", "truncated");
    expect_refused(b, 40, tmp, "shorter than the header", "truncated");
    b[size - 7] ^= 0x40;
    expect_refused(b, size, tmp, "flipped byte", "checksum mismatch");
    memcpy(b, img, size);
    b[3] = 'X';
    expect_refused(b, size, tmp, "bad magic", "not a valid ONNX model");
    memcpy(b, img, size);
    b[INF__BH_HEAD_CRC + 1] ^= 1;
    expect_refused(b, size, tmp, "header checksum", "header checksum");
    memcpy(b, img, size);
    inf__wr_u32(b + INF__BH_VERSION, INF__BUNDLE_VERSION + 1);
    inf__wr_u32(b + INF__BH_HEAD_CRC, inf__crc32c(0, b, INF__BH_HEAD_CRC));
    expect_refused(b, size, tmp, "a later format version", "infera compile");
    memcpy(b, img, size);
    inf__wr_u32(b + INF__BH_VERSION, 1); /* version 1 kept the plain weights beside their panels */
    inf__wr_u32(b + INF__BH_HEAD_CRC, inf__crc32c(0, b, INF__BH_HEAD_CRC));
    expect_refused(b, size, tmp, "format version 1", "bundle format version 1; this build reads version 2");
    expect_refused(b, size, tmp, "format version 1 (how to mend)", "rebuild it from its source model: infera compile");
    memcpy(b, img, size);
#if defined(__aarch64__)
    inf__wr_u32(b + INF__BH_TARGET, INF_TARGET_X86_64);
#else
    inf__wr_u32(b + INF__BH_TARGET, INF_TARGET_AARCH64);
#endif
    inf__wr_u32(b + INF__BH_HEAD_CRC, inf__crc32c(0, b, INF__BH_HEAD_CRC));
    expect_refused(b, size, tmp, "other target", "compiled for target");
    free(b);
    inf_bundle_buffer_free(img);
}

/* inf__ops_sgemm_unpack_b (how a CPU without AVX2, bf16 precision and a
 * recompile get a panels-only matrix back) inverts the AVX2 packing, both
 * ways round, on ragged and whole panels. */
static void unpack_round_trip(void) {
#if defined(__x86_64__)
    if (!inf__cpu_has_avx2_fma()) return;
    static const int64_t shapes[][2] = {{1, 1}, {3, 16}, {5, 17}, {64, 8}, {33, 48}, {7, 100}};
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
        for (int tb = 0; tb < 2; tb++) {
            int64_t k = shapes[s][0], n = shapes[s][1];
            float *b = malloc((size_t)(k * n) * sizeof(float)), *back = malloc((size_t)(k * n) * sizeof(float));
            float *p = inf__aligned_alloc((size_t)inf__ops_sgemm_packed_floats(k, n) * sizeof(float));
            for (int64_t i = 0; i < k * n; i++)
                b[i] = (float)next_rand() / 65536.0f;
            inf__ops_sgemm_pack_b(tb, k, n, b, tb ? k : n, p);
            inf__ops_sgemm_unpack_b(tb, k, n, p, back);
            CHECK(!memcmp(b, back, (size_t)(k * n) * sizeof(float)), "unpack(pack(B)) != B for k %lld n %lld transB %d",
                  (long long)k, (long long)n, tb);
            free(b), free(back), inf__aligned_free(p);
        }
#endif
}

int main(int argc, char **argv) {
    char tmp[256];
    snprintf(tmp, sizeof tmp, "/tmp/infera_test_bundle_%d.bundle", (int)getpid());
    unpack_round_trip();
    for (int i = 1; i < argc; i++) round_trip(argv[i], tmp);
    if (argc > 1) refusals(argv[1], tmp);
    remove(tmp);
    printf("bundle round trip: %d models equal byte for byte, %d failing identically on generated inputs; "
           "%d packed GEMM panel sets recorded, %d used in place by the bundles (%d stored as panels only); "
           "%d packed convolution weights recorded, %d used in place\n",
           n_compared, n_both_failed, n_prepacked, n_used_prepacked, n_panels_only, n_convpacked, n_used_convpacked);
#if defined(__x86_64__) /* packed panels are the x86-64 AVX2 GEMM's */
    CHECK(n_used_prepacked > 0 || !__builtin_cpu_supports("avx2"), "no bundle used its packed panels");
    CHECK(n_panels_only > 0 || !__builtin_cpu_supports("avx2"), "no bundle stored a weight matrix as panels only");
    CHECK(n_used_convpacked > 0 || !__builtin_cpu_supports("avx2"), "no bundle used its packed convolution weights");
#endif
    CHECK(n_compared >= (argc - 1) / 2, "too few models compared (%d of %d)", n_compared, argc - 1);
    return check_summary("edge bundle");
}
