/*
 * fuzz_http_request.c -- libFuzzer target for what `infera serve` decodes
 * of an HTTP request before any model runs: the framing of the header block
 * (src/serve/http_framing.c: Content-Length and Transfer-Encoding rules,
 * where the block ends, the chunked-body reader), the KServe V2 inference
 * request decoder with its binary-data extension (src/serve/kserve_v2.c,
 * infer_bind.c) and the records decoder.
 *
 * The first byte picks the decoder; the rest is its input:
 *   0  a header block: the framing check and the end of the block;
 *   1  a chunked body: followed whole and again one byte at a time -- both
 *      must stop at the same byte in the same state (a reader that depends
 *      on how the bytes arrive would desynchronise a connection);
 *   2  an /infer body: two bytes give where the JSON ends (the rest is the
 *      binary part); decoded against the FP32 and BYTES identity models and
 *      the fraud model, and a request the identity models accept is encoded
 *      back as their response, whose JSON must parse (cJSON, with the non-finite
 *      numbers NaN/Infinity that the server spells as Python and Triton do);
 *   3  a /records body, each record's text handed to a callback;
 *   4  an OpenAI body (src/serve/openai_request.c): the next byte picks the
 *      endpoint (completions, chat, embeddings); decoded and checked, a
 *      token-id prompt taken against a 1000-token vocabulary (every id kept
 *      must be in it), chat messages rendered through each chat template.
 * Must never crash, leak or read out of bounds; a refusal is fine.  The
 * models are found under INFERA_SOURCE_DIR (compiled in).
 */
#include <cjson/cJSON.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "serve/openai_request.h"
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
        if (inf_model_load(p, NULL, &models[n_models], &err) == INF_OK)
            n_models++;
        else
            fprintf(stderr, "fuzz_http_request: %s: %s\n", p, err.message);
    }
    if (n_models < 3) abort();
}

static void fuzz_framing(const char *p, size_t n) {
    char msg[INF_ERROR_MESSAGE_MAX];
    srv_body_framing body;
    if (!inf__serve_gate_check_framing(p, n, &body, msg, sizeof msg) && body.is_chunked && !body.has_transfer_encoding)
        abort(); /* chunked is a Transfer-Encoding */
    if (inf__serve_gate_head_end(p, n) > n) abort();
}

static void fuzz_chunks(const char *p, size_t n) {
    srv_chunks whole, bytewise;
    inf__serve_chunks_start(&whole);
    inf__serve_chunks_start(&bytewise);
    size_t a = inf__serve_chunks_follow(&whole, p, n, 64), b = 0;
    while (b < n && inf__serve_chunks_follow(&bytewise, p + b, 1, 64) == 1)
        b++;
    if (a != b || whole.state != bytewise.state || a > n) abort();
}

/* Parses a response with cJSON after spelling the non-finite numbers (NaN,
 * Infinity, -Infinity: docs/serving.md, as Python's json and Triton write
 * them) as null; inside a string the replacement keeps it a string. */
static cJSON *parse_response(const char *json, size_t n) {
    char *t = malloc(2 * n + 1), *w = t; /* "NaN" -> "null" grows by one byte in three */
    if (!t) return NULL;
    static const char *const words[] = {"-Infinity", "Infinity", "NaN"};
    for (size_t i = 0; i < n;) {
        size_t k = 0;
        for (int j = 0; j < 3 && !k; j++)
            if (n - i >= strlen(words[j]) && !memcmp(json + i, words[j], strlen(words[j]))) k = strlen(words[j]);
        if (k)
            memcpy(w, "null", 4), w += 4, i += k;
        else
            *w++ = json[i++];
    }
    cJSON *doc = cJSON_ParseWithLength(t, (size_t)(w - t));
    free(t);
    return doc;
}

static void fuzz_infer(const char *p, size_t n) {
    if (n < 2) return;
    size_t json_len = ((size_t)(unsigned char)p[0] << 8 | (unsigned char)p[1]);
    p += 2, n -= 2;
    if (json_len > n) json_len = n;
    char *body = malloc(n ? n : 1); /* exact size: a read past the body is caught */
    if (!body) return;
    memcpy(body, p, n);
    for (int i = 0; i < n_models; i++) {
        srv_infer_request req;
        inf_error err;
        if (inf__serve_decode_infer(body, n, json_len, models[i], &req, &err) != INF_OK) continue;
        if (i < 2 && req.n_inputs == 1) { /* identity: the input is the output */
            inf_tensor *outs[1] = {&req.inputs[0].t};
            srv_buf json = {0}, bin = {0};
            if (inf__serve_encode_infer(&req, models[i], "m", "1", outs, &json, &bin, &err) == INF_OK && !json.oom) {
                cJSON *back = parse_response(json.p, json.n);
                if (!back) abort(); /* the encoder wrote something that is not JSON */
                cJSON_Delete(back);
            }
            inf__serve_buf_free(&json);
            inf__serve_buf_free(&bin);
        }
        inf__serve_infer_request_clear(&req);
    }
    free(body);
}

/* A record's text is one JSON object: the body's own bytes, or a copy with
 * its non-finite numbers rewritten (kserve_v2.c). */
static int each_record(const char *obj, size_t n, void *user, inf_error *err) {
    (void)user, (void)err;
    if (n < 2 || obj[0] != '{' || obj[n - 1] != '}') abort();
    return 0;
}

static void fuzz_records(const char *p, size_t n) {
    char *body = malloc(n ? n : 1);
    if (!body) return;
    memcpy(body, p, n);
    inf_error err;
    inf__serve_decode_records(body, n, each_record, NULL, &err);
    free(body);
}

static void fuzz_openai(const char *p, size_t n) {
    if (n < 1) return;
    oai_kind kind = (oai_kind)((unsigned char)p[0] % 3);
    char *body = malloc(n - 1 ? n - 1 : 1);
    if (!body) return;
    memcpy(body, p + 1, n - 1);
    oai_request rq;
    oai_fail f;
    if (inf__oai_parse(body, n - 1, &rq, &f) == 0) {
        if (!rq.model) abort();
        if (inf__oai_check(&rq, kind, &f) == 0) {
            if (kind == OAI_COMPLETIONS && !rq.prompt) {
                int32_t *ids = NULL;
                int n_ids = 0;
                if (inf__oai_prompt_ids(rq.prompt_ids, 1000, &ids, &n_ids, &f) == 0)
                    for (int i = 0; i < n_ids; i++)
                        if (ids[i] < 0 || ids[i] >= 1000) abort();
                free(ids);
            } else if (kind == OAI_CHAT) {
                static const char *const templates[] = {NULL,     "<|im_start|>",    "<|start_header_id|>",
                                                        "[INST]", "<start_of_turn>", "<|assistant|><|end|>"};
                for (int t = 0; t < 6; t++) {
                    srv_buf text = {0};
                    inf__oai_render_chat(templates[t], rq.messages, &text);
                    if (!text.oom && !text.p && t != 3) abort(); /* all but llama-2 always write the turn */
                    inf__serve_buf_free(&text);
                }
            } else if (kind == OAI_EMBEDDINGS && !rq.input) {
                abort();
            }
        } else if (!f.message[0] || f.status < 400) {
            abort(); /* a refusal names why */
        }
        inf__oai_request_free(&rq);
    }
    free(body);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (!n_models) load_models();
    if (size < 1) return 0;
    const char *p = (const char *)data + 1;
    size_t n = size - 1;
    switch (data[0] % 5) {
    case 0:
        fuzz_framing(p, n);
        break;
    case 1:
        fuzz_chunks(p, n);
        break;
    case 2:
        fuzz_infer(p, n);
        break;
    case 3: fuzz_records(p, n); break;
    default: fuzz_openai(p, n); break;
    }
    return 0;
}
