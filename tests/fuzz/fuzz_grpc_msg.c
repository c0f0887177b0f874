/*
 * fuzz_grpc_msg.c -- libFuzzer target for the KServe V2 gRPC request decoder
 * (src/serve/grpc_codec.c, with infer_bind.c's checks) and its response
 * encoder.
 *
 * Any byte string is unpacked as an inference.ModelInferRequest; what
 * unpacks is decoded against three models (the FP32 and BYTES identity
 * models of tests/serve/models and the fraud model: typed contents,
 * raw_input_contents, shapes, datatypes, parameters), and a request the
 * identity models accept is encoded back as their response (typed and raw),
 * as the server would.  Must never crash, leak or read out of bounds; a
 * refusal is fine.  Seeds: tests/fuzz/gen_grpc_seeds.py (scripts/test.sh).
 * The models are found under INFERA_SOURCE_DIR (compiled in).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kserve_v2.pb-c.h"
#include "serve/serve.h"

static inf_model *models[3];
static int n_models;

static void load_models(void) {
    static const char *const paths[] = {"/tests/serve/models/id_fp32.onnx", "/tests/serve/models/id_bytes.onnx",
                                        "/examples/fraud/fraud_xgb.onnx"};
    for (int i = 0; i < 3; i++) {
        char p[4096];
        snprintf(p, sizeof p, "%s%s", INFERA_SOURCE_DIR, paths[i]);
        inf_error err;
        if (inf_model_load(p, NULL, &models[n_models], &err) == INF_OK) n_models++;
        else fprintf(stderr, "fuzz_grpc_msg: %s: %s\n", p, err.message);
    }
    if (n_models < 3) abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (!n_models) load_models();
    Inference__ModelInferRequest *m = NULL;
    inf_error err;
    if (inf__serve_grpc_unpack_infer(data, size, &m, &err) != INF_OK) return 0;
    for (int i = 0; i < n_models; i++) {
        srv_infer_request req;
        int raw = 0;
        if (inf__serve_grpc_decode_infer(m, models[i], &req, &raw, &err) != INF_OK) continue;
        if (i < 2 && req.n_inputs == 1) { /* identity: the input is the output */
            inf_tensor *outs[1] = {&req.inputs[0].t};
            for (int r = 0; r < 2; r++) {
                uint8_t *buf = NULL;
                size_t n = 0;
                if (inf__serve_grpc_encode_infer(&req, models[i], "m", "1", outs, r, &buf, &n, &err) == INF_OK) {
                    Inference__ModelInferResponse *back = inference__model_infer_response__unpack(NULL, n, buf);
                    if (!back) abort(); /* the encoder wrote something protobuf cannot read */
                    inference__model_infer_response__free_unpacked(back, NULL);
                }
                free(buf);
            }
        }
        inf__serve_infer_request_clear(&req);
    }
    inf__serve_grpc_free_infer(m);
    return 0;
}
