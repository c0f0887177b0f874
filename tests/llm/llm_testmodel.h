/*
 * llm_testmodel.h -- random llama-architecture GGUF models for tests, built
 * in memory (gguf_writer.h): a vocabulary of V, E-wide embeddings, 4 heads
 * (2 kv heads), matrices in a chosen ggml type; optionally another
 * architecture's name and the tensors and keys it adds (tm_params).  Weights are quantized here
 * with plain textbook rules (not the engine's code) so that the quantized
 * files are like those a converter writes.
 */
#ifndef TEST_LLM_TESTMODEL_H
#define TEST_LLM_TESTMODEL_H

#include <math.h>

#include "gguf_writer.h"

typedef struct tm_params {
    int vocab, embd, layers, heads, heads_kv, ff, ctx;
    uint32_t type; /* ggml type of the matrices */
    uint64_t seed;
    int tied;
    /* other architectures (NULL: llama) and what their files add: */
    const char *arch;
    int fused;      /* phi3's attn_qkv (q | k | v rows) and ffn_up (gate | up rows), same rows as apart */
    int head_norms; /* attn_q_norm / attn_k_norm (qwen3, gemma3) */
    int post_norms; /* post_attention_norm / post_ffw_norm (gemma2, gemma3) */
    int swa_window; /* <arch>.attention.sliding_window when > 0, with ...sliding_window_pattern = swa_pattern */
    int swa_pattern;
    float attn_softcap; /* <arch>.attn_logit_softcapping / final_logit_softcapping when > 0 */
    float final_softcap;
} tm_params;

static inline float tm_rand(uint64_t *s) { /* uniform in [-1, 1) */
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    return (float)((*s >> 40) / (double)(1ull << 24)) * 2 - 1;
}

static inline uint16_t tm_f2h(float f) { /* round to nearest (good enough for scales) */
    uint32_t x;
    memcpy(&x, &f, 4);
    uint32_t sign = (x >> 16) & 0x8000;
    int e = (int)((x >> 23) & 0xff) - 127 + 15;
    if (f == 0 || e <= 0) return (uint16_t)sign;
    uint32_t m = (x & 0x7fffff) + 0x1000;
    if (m & 0x800000) m = 0, e++;
    return (uint16_t)(sign | (uint32_t)(e << 10) | (m >> 13));
}

/* rows x cols floats -> bytes of ggml type; returns bytes written into out. */
static inline size_t tm_quantize(uint32_t type, const float *x, int64_t n, uint8_t *out) {
    size_t o = 0;
    if (type == 0) { memcpy(out, x, n * 4); return n * 4; }
    if (type == 1) { for (int64_t i = 0; i < n; i++) { uint16_t h = tm_f2h(x[i]); memcpy(out + 2 * i, &h, 2); } return n * 2; }
    for (int64_t b = 0; b < n / 32; b++) {
        const float *v = x + b * 32;
        if (type == 8) { /* q8_0 */
            float amax = 0;
            for (int j = 0; j < 32; j++) amax = fmaxf(amax, fabsf(v[j]));
            float d = amax / 127, id = d ? 1 / d : 0;
            uint16_t h = tm_f2h(d);
            memcpy(out + o, &h, 2);
            for (int j = 0; j < 32; j++) out[o + 2 + j] = (uint8_t)(int8_t)roundf(v[j] * id);
            o += 34;
        } else if (type == 2) { /* q4_0 */
            float amax = 0, mx = 0;
            for (int j = 0; j < 32; j++) if (fabsf(v[j]) > amax) amax = fabsf(v[j]), mx = v[j];
            float d = mx / -8, id = d ? 1 / d : 0;
            uint16_t h = tm_f2h(d);
            memcpy(out + o, &h, 2);
            for (int j = 0; j < 16; j++) {
                int a = (int)(v[j] * id + 8.5f), c = (int)(v[j + 16] * id + 8.5f);
                a = a > 15 ? 15 : a, c = c > 15 ? 15 : c;
                out[o + 2 + j] = (uint8_t)(a | (c << 4));
            }
            o += 18;
        } else if (type == 3) { /* q4_1 */
            float mn = v[0], mx = v[0];
            for (int j = 1; j < 32; j++) mn = fminf(mn, v[j]), mx = fmaxf(mx, v[j]);
            float d = (mx - mn) / 15, id = d ? 1 / d : 0;
            uint16_t hd = tm_f2h(d), hm = tm_f2h(mn);
            memcpy(out + o, &hd, 2);
            memcpy(out + o + 2, &hm, 2);
            for (int j = 0; j < 16; j++) {
                int a = (int)((v[j] - mn) * id + 0.5f), c = (int)((v[j + 16] - mn) * id + 0.5f);
                a = a > 15 ? 15 : a, c = c > 15 ? 15 : c;
                out[o + 4 + j] = (uint8_t)(a | (c << 4));
            }
            o += 20;
        }
    }
    return o;
}

static inline void tm_matrix(gw *w, const char *name, uint32_t type, int64_t cols, int64_t rows, float scale,
                             uint64_t *s) {
    float *x = malloc(cols * rows * 4);
    uint8_t *q = malloc(cols * rows * 4 + 64);
    for (int64_t i = 0; i < cols * rows; i++) x[i] = tm_rand(s) * scale;
    size_t n = tm_quantize(type, x, cols * rows, q);
    int64_t ne[2] = {cols, rows};
    gw_tensor(w, name, type, 2, ne, q, n);
    free(x), free(q);
}

static inline void tm_vector(gw *w, const char *name, int64_t n, float base, float spread, uint64_t *s) {
    float *x = malloc(n * 4);
    for (int64_t i = 0; i < n; i++) x[i] = base + spread * tm_rand(s);
    gw_tensor(w, name, 0, 1, &n, x, n * 4);
    free(x);
}

/* rows x cols matrices generated one after another into one tensor: the same bytes as tm_matrix gives each */
static inline void tm_matrices(gw *w, const char *name, uint32_t type, int64_t cols, int n, const int64_t *rows,
                               const float *scale, uint64_t *s) {
    int64_t total = 0;
    for (int i = 0; i < n; i++) total += rows[i];
    float *x = malloc(cols * total * 4);
    uint8_t *q = malloc(cols * total * 4 + 64);
    int64_t at = 0;
    for (int i = 0; i < n; i++)
        for (int64_t j = 0; j < cols * rows[i]; j++) x[at++] = tm_rand(s) * scale[i];
    size_t bytes = tm_quantize(type, x, cols * total, q);
    int64_t ne[2] = {cols, total};
    gw_tensor(w, name, type, 2, ne, q, bytes);
    free(x), free(q);
}

static inline void tm_build(const tm_params *p, uint8_t **out, size_t *size) {
    gw w;
    gw_init(&w);
    uint64_t s = p->seed * 7919 + 1;
    int hd = p->embd / p->heads;
    const char *a = p->arch ? p->arch : "llama";
    char k[96];
#define AK(x) (snprintf(k, sizeof k, "%s.%s", a, x), k)
    gw_key_str(&w, "general.architecture", a);
    gw_key_str(&w, "general.name", "random test model");
    gw_key_u32(&w, AK("context_length"), (uint32_t)p->ctx);
    gw_key_u32(&w, AK("embedding_length"), (uint32_t)p->embd);
    gw_key_u32(&w, AK("block_count"), (uint32_t)p->layers);
    gw_key_u32(&w, AK("feed_forward_length"), (uint32_t)p->ff);
    gw_key_u32(&w, AK("attention.head_count"), (uint32_t)p->heads);
    gw_key_u32(&w, AK("attention.head_count_kv"), (uint32_t)p->heads_kv);
    gw_key_f32(&w, AK("attention.layer_norm_rms_epsilon"), 1e-5f);
    gw_key_f32(&w, AK("rope.freq_base"), 10000.0f);
    if (p->swa_window > 0) {
        gw_key_u32(&w, AK("attention.sliding_window"), (uint32_t)p->swa_window);
        gw_key_u32(&w, AK("attention.sliding_window_pattern"), (uint32_t)p->swa_pattern);
    }
    if (p->attn_softcap > 0) gw_key_f32(&w, AK("attn_logit_softcapping"), p->attn_softcap);
    if (p->final_softcap > 0) gw_key_f32(&w, AK("final_logit_softcapping"), p->final_softcap);
#undef AK
    gw_key_u32(&w, "tokenizer.ggml.bos_token_id", 1);
    gw_key_u32(&w, "tokenizer.ggml.eos_token_id", 2);
    tm_matrix(&w, "token_embd.weight", p->type == 1 ? 1 : 8, p->embd, p->vocab, 1.0f, &s);
    tm_vector(&w, "output_norm.weight", p->embd, 1.0f, 0.2f, &s);
    if (!p->tied) tm_matrix(&w, "output.weight", p->type, p->embd, p->vocab, 0.5f, &s);
    for (int l = 0; l < p->layers; l++) {
        char n[64];
#define TN(x) (snprintf(n, sizeof n, "blk.%d.%s", l, x), n)
        float sc = 1.0f / sqrtf((float)p->embd) * 2;
        tm_vector(&w, TN("attn_norm.weight"), p->embd, 1.0f, 0.2f, &s);
        if (p->fused) {
            int64_t rows[3] = {p->embd, hd * p->heads_kv, hd * p->heads_kv};
            float scales[3] = {sc * 2, sc * 2, sc};
            tm_matrices(&w, TN("attn_qkv.weight"), p->type, p->embd, 3, rows, scales, &s);
        } else {
            tm_matrix(&w, TN("attn_q.weight"), p->type, p->embd, p->embd, sc * 2, &s);
            tm_matrix(&w, TN("attn_k.weight"), p->type, p->embd, hd * p->heads_kv, sc * 2, &s);
            tm_matrix(&w, TN("attn_v.weight"), p->type, p->embd, hd * p->heads_kv, sc, &s);
        }
        tm_matrix(&w, TN("attn_output.weight"), p->type, p->embd, p->embd, sc, &s);
        tm_vector(&w, TN("ffn_norm.weight"), p->embd, 1.0f, 0.2f, &s);
        if (p->fused) {
            int64_t rows[2] = {p->ff, p->ff};
            float scales[2] = {sc, sc};
            tm_matrices(&w, TN("ffn_up.weight"), p->type, p->embd, 2, rows, scales, &s);
        } else {
            tm_matrix(&w, TN("ffn_gate.weight"), p->type, p->embd, p->ff, sc, &s);
            tm_matrix(&w, TN("ffn_up.weight"), p->type, p->embd, p->ff, sc, &s);
        }
        tm_matrix(&w, TN("ffn_down.weight"), p->type, p->ff, p->embd, 1.0f / sqrtf((float)p->ff) * 2, &s);
        if (p->head_norms) {
            tm_vector(&w, TN("attn_q_norm.weight"), hd, 1.0f, 0.5f, &s);
            tm_vector(&w, TN("attn_k_norm.weight"), hd, 1.0f, 0.5f, &s);
        }
        if (p->post_norms) {
            tm_vector(&w, TN("post_attention_norm.weight"), p->embd, 1.0f, 0.5f, &s);
            tm_vector(&w, TN("post_ffw_norm.weight"), p->embd, 1.0f, 0.5f, &s);
        }
#undef TN
    }
    gw_finish(&w, 3, out, size);
}

#endif
