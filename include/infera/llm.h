/*
 * llm.h -- generative language models (GGUF, llama-architecture decoders).
 *
 * Three objects, so that a server can run many sequences on one model:
 *
 *   inf_llm_model    the weights (a mapped GGUF file) and hyper-parameters;
 *                    read-only once loaded, shared by any number of contexts
 *                    on any threads.
 *   inf_llm_context  one sequence: its KV cache (preallocated for n_ctx
 *                    positions), its scratch buffers and its thread pool.
 *                    Evaluating tokens allocates nothing.  One thread at a
 *                    time per context.
 *   inf_llm_sampler  turns logits into a token (greedy, temperature, top-k,
 *                    top-p, seeded); preallocated for the vocabulary.
 *
 *     inf_llm_model *m;  inf_llm_context *c;  const float *logits;
 *     inf_llm_model_load("model.gguf", &m, &err);
 *     inf_llm_context_new(m, NULL, &c, &err);
 *     inf_llm_context_eval(c, prompt, n_prompt, false, &logits, &err); // last row
 *     ... sample, eval the sampled token, repeat ...
 *
 * inf_llm_generate runs that loop (and speculative decoding with a draft
 * context) and reports token metrics.  Tokenizers are in tokenizer.h.
 */
#ifndef INFERA_LLM_H
#define INFERA_LLM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "infera/infera.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct inf_llm_model inf_llm_model;
typedef struct inf_llm_context inf_llm_context;
typedef struct inf_llm_sampler inf_llm_sampler;

/* What a loaded model is; strings borrowed from the model. */
typedef struct inf_llm_model_info {
    const char *path;
    const char *architecture; /* "llama", ... */
    const char *name;         /* general.name or "" */
    const char *weight_type;  /* ggml type of most matrices: "q4_0", "f32", ... */
    int n_vocab, n_ctx_train, n_embd, n_layer, n_head, n_head_kv, n_head_dim, n_ff;
    int64_t n_params;
    uint64_t weight_bytes;    /* bytes of all tensors */
    uint64_t bytes_per_token; /* bytes of weights one decode step reads */
    int32_t bos_id, eos_id, eot_id; /* -1 when the file has none */
    int swa_window, swa_layers;     /* sliding-window attention: positions, and how many layers (0, 0: none) */
    float attn_softcap, final_softcap; /* logit soft-capping of attention scores and of the logits (0: none) */
} inf_llm_model_info;

/* Maps and validates a GGUF file: architecture, hyper-parameters, every
 * tensor's presence, shape and type.  *out owned by the caller.  Errors
 * (INF_EIO, INF_EFORMAT, INF_EUNSUPPORTED, INF_EMODEL) name the file and the
 * key or tensor at fault. */
INF_API inf_status inf_llm_model_load(const char *path, inf_llm_model **out, inf_error *err);
INF_API void inf_llm_model_free(inf_llm_model *m);
INF_API const inf_llm_model_info *inf_llm_model_get_info(const inf_llm_model *m);
/* A string of the file's metadata (e.g. "tokenizer.chat_template"), borrowed
 * from the mapping and not NUL-terminated: *len bytes; NULL when absent or
 * not a string. */
INF_API const char *inf_llm_model_meta_str(const inf_llm_model *m, const char *key, size_t *len);

typedef struct inf_llm_context_options {
    int n_ctx;      /* positions of the KV cache; 0 = the model's context length, capped at 4096 */
    int n_threads;  /* 0 = 1 */
    int n_batch;    /* tokens per forward pass (longer inputs are split); 0 = 256 */
    int n_logits;   /* rows of logits one eval may return (speculative verification); 0 = 16 */
} inf_llm_context_options;
INF_API void inf_llm_context_options_init(inf_llm_context_options *o);

/* A sequence on m (which must outlive it).  o may be NULL. */
INF_API inf_status inf_llm_context_new(const inf_llm_model *m, const inf_llm_context_options *o,
                                       inf_llm_context **out, inf_error *err);
INF_API void inf_llm_context_free(inf_llm_context *c);
INF_API int inf_llm_context_n_ctx(const inf_llm_context *c);
INF_API int inf_llm_context_n_past(const inf_llm_context *c);
INF_API const inf_llm_model *inf_llm_context_model(const inf_llm_context *c);

/* Feeds n tokens at positions n_past .. n_past+n-1 and appends their keys and
 * values to the cache.  *logits (borrowed, valid until the next call) gets
 * n_vocab floats per row: the last token's only, or -- when all_logits --
 * one row per token (then n <= n_logits).  INF_ERANGE when the cache is
 * full or a token id is outside the vocabulary (nothing is appended then). */
INF_API inf_status inf_llm_context_eval(inf_llm_context *c, const int32_t *tokens, int n, bool all_logits,
                                        const float **logits, inf_error *err);
/* One decode step of n sequences at once (continuous batching): seqs[i]
 * (contexts of batch's model, all different) gets tokens[i] at its position
 * n_past, in one forward pass that reads each weight matrix once for all n.
 * batch lends only its scratch, threads and n rows of its own KV cache: make
 * it with n_ctx, n_batch and n_logits >= the most sequences a step takes.
 * *logits (borrowed from batch, valid until its next use): n rows of n_vocab,
 * row i bit for bit what inf_llm_context_eval(seqs[i], &tokens[i], 1, ...)
 * gives.  INF_ERANGE when n is too large, a sequence's context is full or a
 * token is outside the vocabulary (nothing is appended then). */
INF_API inf_status inf_llm_context_eval_batch(inf_llm_context *batch, inf_llm_context *const *seqs,
                                              const int32_t *tokens, int n, const float **logits, inf_error *err);
/* Forgets every position from n_past on (speculative roll-back, reuse of a
 * shared prefix).  n_past must not exceed the current one. */
INF_API inf_status inf_llm_context_rewind(inf_llm_context *c, int n_past, inf_error *err);

/* Feeds n tokens like eval and writes the mean over them of the final hidden
 * state (after the output norm) into out[n_embd] -- the embedding the
 * server's /v1/embeddings and SQL's infera_embed L2-normalise. */
INF_API inf_status inf_llm_context_embed(inf_llm_context *c, const int32_t *tokens, int n, float *out,
                                         inf_error *err);

/* ---- sampling ---- */
typedef struct inf_llm_sampling {
    float temperature; /* 0 = greedy (argmax) */
    int top_k;         /* 0 = off */
    float top_p;       /* 1 = off */
    uint64_t seed;
} inf_llm_sampling;
INF_API void inf_llm_sampling_init(inf_llm_sampling *s); /* greedy, top_k 40, top_p 0.95, seed 0 */

INF_API inf_status inf_llm_sampler_new(const inf_llm_sampling *s, int n_vocab, inf_llm_sampler **out,
                                       inf_error *err);
INF_API void inf_llm_sampler_free(inf_llm_sampler *s);
/* A token from one row of logits. */
INF_API int32_t inf_llm_sampler_sample(inf_llm_sampler *s, const float *logits);
/* The distribution the sampler draws from (temperature, top-k, top-p
 * applied; one-hot when greedy) into probs[n_vocab]. */
INF_API void inf_llm_sampler_probs(inf_llm_sampler *s, const float *logits, float *probs);
/* A uniform number in [0, 1) from the sampler's generator. */
INF_API double inf_llm_sampler_uniform(inf_llm_sampler *s);

/* ---- generation ---- */
typedef struct inf_llm_generate_options {
    int max_tokens;           /* completion tokens at most; 0 = until end of sequence or context */
    inf_llm_sampling sampling;
    int draft_tokens;         /* speculative: tokens the draft proposes per step (with a draft context) */
    const int32_t *stop_ids;  /* end-of-generation tokens (borrowed); NULL: the model's EOS and EOT */
    int n_stop_ids;
} inf_llm_generate_options;
INF_API void inf_llm_generate_options_init(inf_llm_generate_options *o); /* 128 tokens, greedy, 4 drafts */

typedef struct inf_llm_generate_stats {
    int prompt_tokens, completion_tokens;
    double ttft_ms;      /* start of prompt processing -> first completion token */
    double tpot_ms;      /* mean time per completion token after the first */
    double tokens_per_s; /* 1000 / tpot_ms */
    double prompt_ms;    /* prompt processing alone */
    int draft_proposed, draft_accepted;
    bool stopped_by_eos;
} inf_llm_generate_stats;

/* Called for each completion token as it is made; a non-zero return stops. */
typedef int (*inf_llm_token_fn)(void *user, int32_t token);

/* Generates from prompt on target (from position 0: the contexts are
 * rewound).  With draft (a context of a model sharing the vocabulary), the
 * draft proposes draft_tokens tokens (INFERA_LLM_DRAFT_ADAPTIVE=1: at most,
 * fewer while its proposals are rejected) that the target checks in one pass;
 * greedy output is the target's own, and sampled output follows the
 * target's distribution (accept with min(1, p/q), else resample from
 * max(0, p - q)).  Stops at the model's end-of-sequence token, at
 * max_tokens, or when the context is full. */
INF_API inf_status inf_llm_generate(inf_llm_context *target, inf_llm_context *draft, const int32_t *prompt,
                                    int n_prompt, const inf_llm_generate_options *o, inf_llm_token_fn on_token,
                                    void *user, inf_llm_generate_stats *stats, inf_error *err);

#ifdef __cplusplus
}
#endif

#endif /* INFERA_LLM_H */
