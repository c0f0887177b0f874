/*
 * test_grpc_encode.c -- the direct ModelInferResponse writer
 * (src/serve/grpc_encode.c) against protobuf-c: for each case the test
 * builds the response itself as protobuf-c structs (the generated code of
 * proto/kserve_v2.proto, the oracle) and packs it, and the writer must give
 * the same bytes.  Cases: every typed dtype it takes (negative INT32 as
 * 10-byte varints, INT64 extremes, UINT64 above 2^63, FP32 NaN/-0),
 * scalars, empty tensors, zero dimensions, raw contents of FP16/BOOL/INT8
 * (and empty raw elements), requested outputs in another order, id and
 * version empty or set; and the writer declines what it does not cover
 * (strings, typed BOOL/INT8, sequences).  The two outputs' names come from
 * examples/fraud/fraud_xgb.onnx (label, probabilities).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kserve_v2.pb-c.h"
#include "serve/serve.h"

static int failures, cases;

typedef Inference__ModelInferResponse__InferOutputTensor out_msg;

/* The oracle: the same response built as protobuf-c structs and packed. */
static uint8_t *oracle(const char *name, const char *version, const char *id, const char *const *names,
                       inf_tensor *const *ts, int n, int raw, size_t *size) {
    Inference__ModelInferResponse r = INFERENCE__MODEL_INFER_RESPONSE__INIT;
    r.model_name = (char *)name, r.model_version = (char *)version, r.id = (char *)id;
    out_msg os[4], *ops[4];
    Inference__InferTensorContents cs[4];
    ProtobufCBinaryData raws[4];
    for (int i = 0; i < n; i++) {
        const inf_tensor *t = ts[i];
        inference__model_infer_response__infer_output_tensor__init(&os[i]);
        os[i].name = (char *)names[i];
        os[i].datatype = (char *)inf__serve_kserve_dtype(t->dtype);
        os[i].n_shape = (size_t)t->ndim, os[i].shape = (int64_t *)t->dims;
        ops[i] = &os[i];
        size_t k = (size_t)inf_tensor_numel(t);
        if (raw) {
            raws[i].data = t->data, raws[i].len = inf_tensor_nbytes(t);
            continue;
        }
        inference__infer_tensor_contents__init(&cs[i]);
        switch (t->dtype) {
        case INF_DTYPE_F32:
            cs[i].n_fp32_contents = k, cs[i].fp32_contents = t->data;
            break;
        case INF_DTYPE_F64:
            cs[i].n_fp64_contents = k, cs[i].fp64_contents = t->data;
            break;
        case INF_DTYPE_I32:
            cs[i].n_int_contents = k, cs[i].int_contents = t->data;
            break;
        case INF_DTYPE_I64:
            cs[i].n_int64_contents = k, cs[i].int64_contents = t->data;
            break;
        case INF_DTYPE_U32:
            cs[i].n_uint_contents = k, cs[i].uint_contents = t->data;
            break;
        case INF_DTYPE_U64:
            cs[i].n_uint64_contents = k, cs[i].uint64_contents = t->data;
            break;
        default:
            break;
        }
        os[i].contents = &cs[i];
    }
    r.n_outputs = (size_t)n, r.outputs = ops;
    if (raw) r.n_raw_output_contents = (size_t)n, r.raw_output_contents = raws;
    *size = inference__model_infer_response__get_packed_size(&r);
    uint8_t *b = malloc(*size + 1);
    if (b) inference__model_infer_response__pack(&r, b);
    return b;
}

static inf_tensor *tensor(inf_dtype dt, int ndim, const int64_t *dims, const void *data) {
    inf_tensor *t;
    if (inf_tensor_new(dt, ndim, dims, &t) != INF_OK) exit(2);
    if (inf_tensor_nbytes(t)) memcpy(t->data, data, inf_tensor_nbytes(t));
    return t;
}

/* One case: outputs a (label slot) and b (probabilities slot) of the model;
 * order: -1 = all outputs, else the request asks for b then a. */
static void check(const char *what, const inf_model *m, inf_tensor *a, inf_tensor *b, int raw, int order,
                  const char *version, const char *id) {
    inf_tensor *outs[2] = {a, b};
    srv_infer_request req;
    memset(&req, 0, sizeof req);
    srv_output_req want[2] = {{(char *)"probabilities", 1, -1}, {(char *)"label", 0, -1}};
    if (order >= 0) req.n_outputs = 2, req.outputs = want;
    req.id = (char *)id;
    const char *names[2] = {inf_model_output(m, order >= 0)->name, inf_model_output(m, order < 0)->name};
    inf_tensor *ordered[2] = {order >= 0 ? b : a, order >= 0 ? a : b};
    size_t n_want, n_got = 0;
    uint8_t *w = oracle("fraud", version, id ? id : "", names, ordered, 2, raw, &n_want), *g = NULL;
    int r = inf__serve_grpc_encode_plain(&req, m, "fraud", version, outs, raw, &g, &n_got);
    cases++;
    if (r != 1 || !w || n_got != n_want || memcmp(g, w, n_want) != 0) {
        failures++;
        printf("FAIL %s: writer %d, %zu bytes vs protobuf-c's %zu\n", what, r, n_got, n_want);
    }
    free(w);
    free(g);
}

int main(int argc, char **argv) {
    char path[1024];
    snprintf(path, sizeof path, "%s/examples/fraud/fraud_xgb.onnx", argc > 1 ? argv[1] : ".");
    inf_model *m;
    inf_error err;
    if (inf_model_load(path, NULL, &m, &err) != INF_OK) {
        printf("SKIP %s\n", err.message);
        return 77;
    }
    int64_t d1[1] = {3}, d2[2] = {3, 2}, d0[1] = {0}, dz[2] = {2, 0};
    float f[6] = {0.25f, NAN, -0.0f, 3.4e38f, -1.5f, 1e-30f};
    double f64[6] = {1.0 / 3, -2.5, 1e300, 0, -0.0, 7};
    int32_t i32[3] = {-1, 2147483647, -2147483647 - 1};
    int64_t i64[3] = {-1, INT64_MAX, INT64_MIN};
    uint32_t u32[3] = {0, 127, 4294967295u};
    uint64_t u64[3] = {128, UINT64_MAX, 1ull << 63};
    uint16_t h[6] = {0x3c00, 0x7e00, 0x8000, 1, 2, 3};
    uint8_t b8[3] = {1, 0, 1};
    int8_t i8[3] = {-128, 0, 127};
    inf_tensor *t_f32 = tensor(INF_DTYPE_F32, 2, d2, f), *t_f64 = tensor(INF_DTYPE_F64, 2, d2, f64),
               *t_i32 = tensor(INF_DTYPE_I32, 1, d1, i32), *t_i64 = tensor(INF_DTYPE_I64, 1, d1, i64),
               *t_u32 = tensor(INF_DTYPE_U32, 1, d1, u32), *t_u64 = tensor(INF_DTYPE_U64, 1, d1, u64),
               *t_scalar = tensor(INF_DTYPE_F32, 0, NULL, f), *t_empty = tensor(INF_DTYPE_F32, 1, d0, f),
               *t_zero = tensor(INF_DTYPE_I64, 2, dz, i64), *t_f16 = tensor(INF_DTYPE_F16, 2, d2, h),
               *t_bool = tensor(INF_DTYPE_BOOL, 1, d1, b8), *t_i8 = tensor(INF_DTYPE_I8, 1, d1, i8);
    inf_tensor *typed[] = {t_f32, t_f64, t_i32, t_i64, t_u32, t_u64, t_scalar, t_empty, t_zero};
    int nt = (int)(sizeof typed / sizeof *typed);
    for (int i = 0; i < nt; i++)
        for (int j = 0; j < nt; j++) {
            char what[64];
            snprintf(what, sizeof what, "typed %d,%d", i, j);
            check(what, m, typed[i], typed[j], 0, -1, "1", "req-7");
            check(what, m, typed[i], typed[j], 1, -1, "", NULL);
        }
    inf_tensor *rawonly[] = {t_f16, t_bool, t_i8, t_empty, t_zero};
    for (int i = 0; i < 5; i++)
        for (int j = 0; j < 5; j++)
            check("raw", m, rawonly[i], rawonly[j], 1, j % 2 ? 0 : -1, "2", "x");
    check("requested outputs, reversed", m, t_i64, t_f32, 0, 0, "1", "");
    check("a long id", m, t_i64, t_f32, 0, -1, "1",
          "an id longer than 127 bytes, so that its length takes two varint bytes in the message; "
          "an id longer than 127 bytes, so that its length takes two varint bytes");
    /* declined: protobuf-c's path keeps these */
    srv_infer_request req;
    memset(&req, 0, sizeof req);
    uint8_t *g = NULL;
    size_t n = 0;
    inf_tensor *declined[][2] = {{t_i64, t_bool}, {t_i8, t_f32}, {t_i64, NULL}};
    for (int k = 0; k < 3; k++) {
        cases++;
        if (inf__serve_grpc_encode_plain(&req, m, "fraud", "1", declined[k], 0, &g, &n) != 0) {
            failures++;
            printf("FAIL declined case %d was written\n", k);
            free(g);
        }
    }
    inf_tensor *all[] = {t_f32, t_f64, t_i32, t_i64, t_u32, t_u64, t_scalar, t_empty, t_zero, t_f16, t_bool, t_i8};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++)
        inf_tensor_free(all[i]);
    inf_model_free(m);
    if (failures) return 1;
    printf("ok   %d responses: the direct writer == protobuf-c's pack byte for byte (typed, raw, requested "
           "outputs, ids), and it declines what it does not cover\n",
           cases);
    return 0;
}
