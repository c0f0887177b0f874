/*
 * fuzz_gguf.c -- libFuzzer target for the GGUF reader (src/llm/gguf.c).
 *
 * Any byte string handed to inf__gguf_open_buffer must either open or be
 * refused with an error: no crash, no leak, no read outside the buffer.
 * When it opens, every key is read through the typed getters (every string
 * of a string array too) and the first and last byte of every tensor's data
 * are touched, so an offset the reader let through that points outside the
 * buffer shows up under ASan.  The buffer is copied into an exact-size heap
 * block so ASan sees its end.  A file that opens is also loaded as a llama
 * model; when that succeeds and the model is small, two tokens are run
 * through the decoder (fuzzed weights and shapes reach the kernels).
 * Built with -DINFERA_FUZZ=ON and clang.
 */
#include <stdlib.h>
#include <string.h>

#include "infera/llm.h"
#include "llm/gguf.h"
#include "llm/llm_int.h"

static volatile unsigned sink;

static void read_key(const inf__gguf *g, int64_t k) {
    size_t klen;
    const char *kname = inf__gguf_key_name(g, k, &klen);
    char key[256];
    if (klen >= sizeof key) return;
    memcpy(key, kname, klen);
    key[klen] = 0;
    uint32_t u;
    int64_t i;
    float f;
    bool b;
    const char *s;
    size_t len;
    enum inf__gguf_type et;
    uint64_t n;
    const void *data;
    if (inf__gguf_get_u32(g, key, &u, NULL) == INF_OK) sink += u;
    if (inf__gguf_get_i64(g, key, &i, NULL) == INF_OK) sink += (unsigned)i;
    if (inf__gguf_get_f32(g, key, &f, NULL) == INF_OK) sink += (unsigned)(f == f);
    if (inf__gguf_get_bool(g, key, &b, NULL) == INF_OK) sink += b;
    if (inf__gguf_get_str(g, key, &s, &len, NULL) == INF_OK && len) sink += (unsigned char)s[len - 1];
    if (inf__gguf_get_arr(g, key, &et, &n, &data, NULL) == INF_OK) {
        if (et == INF__GGUF_STRING) {
            for (uint64_t j = 0; j < n && j < 100000; j++)
                if (inf__gguf_arr_str(g, key, j, &s, &len, NULL) == INF_OK && len) sink += (unsigned char)s[len - 1];
            inf__gguf_arr_str(g, key, n, &s, &len, NULL); /* one past: refused */
        } else if (n && data) {
            sink += ((const unsigned char *)data)[0];
        }
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    uint8_t *copy = malloc(size ? size : 1);
    if (!copy) return 0;
    memcpy(copy, data, size);
    inf__gguf *g = NULL;
    inf_error err;
    if (inf__gguf_open_buffer(copy, size, "fuzz.gguf", &g, &err) == INF_OK) {
        for (int64_t k = 0; k < inf__gguf_n_keys(g); k++) read_key(g, k);
        for (uint64_t t = 0; t < inf__gguf_n_tensors(g); t++) {
            const inf__gguf_tensor *ti = inf__gguf_tensor_at(g, t);
            if (inf__gguf_find_tensor(g, ti->name) != ti) abort();
            if (ti->nbytes) sink += ((const uint8_t *)ti->data)[0] + ((const uint8_t *)ti->data)[ti->nbytes - 1];
        }
        inf__gguf_close(g);
        if (inf__gguf_open_buffer(copy, size, "fuzz.gguf", &g, &err) == INF_OK) {
            inf_llm_model *m = NULL;
            if (inf__llm_model_from_gguf(g, false, &m, &err) == INF_OK) { /* takes g */
                const inf_llm_model_info *I = inf_llm_model_get_info(m);
                inf_llm_context *c = NULL;
                inf_llm_context_options o;
                inf_llm_context_options_init(&o);
                o.n_ctx = 8;
                o.n_batch = 4;
                o.n_logits = 2;
                if (I->weight_bytes < (1u << 22) && (int64_t)I->n_embd * I->n_ff < (1 << 22) &&
                    inf_llm_context_new(m, &o, &c, &err) == INF_OK) {
                    int32_t ids[2] = {0, I->n_vocab - 1};
                    const float *logits;
                    inf_llm_context_eval(c, ids, 2, true, &logits, &err);
                    inf_llm_context_free(c);
                }
                inf_llm_model_free(m);
            }
        }
    }
    free(copy);
    return 0;
}
