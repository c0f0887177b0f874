/*
 * llm_int.h -- what the files of src/llm share: the loaded model (model.c)
 * and the per-sequence context (context.c, decoder.c).
 */
#ifndef INF_LLM_INT_H
#define INF_LLM_INT_H

#include "core/core.h"
#include "infera/llm.h"
#include "llm/gguf.h"
#include "llm/quant.h"
#include "llm/swiglu.h"

/* A matrix of `rows` rows of `cols` elements (ggml ne[1], ne[0]). */
typedef struct inf__llm_weight {
    const void *data;
    const inf__llm_qtype *q;
    int64_t rows, cols;
    size_t row_bytes;
    /* the first packed_rows rows (a multiple of INF__LLM_TILE_ROWS) repacked
     * into tiles for q->tile (in the model's weight region), or NULL */
    void *packed;
    int64_t packed_rows;
    size_t tile_bytes;
} inf__llm_weight;

typedef struct inf__llm_layer {
    const float *attn_norm, *ffn_norm;
    inf__llm_weight wq, wk, wv, wo, w_gate, w_up, w_down;
    const float *bq, *bk, *bv, *bo; /* optional biases (NULL) */
    const float *q_norm, *k_norm; /* optional RMSNorm weights of each query / key head before RoPE (qwen3), head_dim */
    /* optional RMSNorm weights of the attention and feed-forward outputs before their residual adds (gemma3), n_embd */
    const float *post_attn_norm, *post_ffn_norm;
    bool swa; /* a sliding-window layer (gemma2, gemma3): attends to the model's swa_window last positions, its own RoPE */
} inf__llm_layer;

enum inf__llm_rope_type { INF__ROPE_NORM = 0, INF__ROPE_NEOX = 2 };

struct inf_llm_model {
    inf__gguf *g;
    inf_llm_model_info info;
    char arch[32], name[128];
    float rms_eps, rope_base, rope_freq_scale;
    int rope_dim, rope_type;
    const float *rope_freqs; /* optional per-dimension divisors (llama 3), rope_dim/2 */
    /* LongRoPE (phi3): divisors for contexts up to rope_orig_ctx positions and beyond, rope_dim/2 (or NULL), and
     * the factor cos/sin are scaled by (rope.scaling.attn_factor, 1 when absent) */
    const float *rope_factors_short, *rope_factors_long;
    int rope_orig_ctx;
    float rope_attn_factor;
    /* sliding-window layers (gemma3): window in positions (0: none), their RoPE base and scale */
    int swa_window;
    uint32_t swa_every; /* which layers: all but every swa_every-th (0: none) */
    float rope_base_swa, rope_freq_scale_swa;
    float attn_scale;        /* of q . k: 1 / sqrt(head size), or gemma2/3 27B's 1 / sqrt(n_embd / n_head) */
    float attn_softcap;      /* attention scores c tanh(s / c) when c > 0 (gemma2) */
    float final_softcap;     /* logits c tanh(x / c) when c > 0 (gemma2, optional in gemma3) */
    inf__llm_gate_kind gate; /* the feed-forward gate: SwiGLU or GeGLU */
    bool embed_scale;        /* token embeddings times sqrt(n_embd) (gemma) */
    inf__llm_weight tok_embd, output;
    const float *output_norm;
    inf__llm_layer *layers;
    bool force_ref; /* reference kernels only (tests) */
    /* weight_region.c: the repacked tiles and the copied matrices (data of
     * the weights then points into it), or NULL */
    void *region;
    size_t region_bytes, region_copied; /* its bytes; those of copied (not repacked) matrices */
};

/* One sequence (context.c). */
struct inf_llm_context {
    const inf_llm_model *m;
    inf__pool *pool;
    int n_ctx, n_batch, n_logits, n_past, n_threads;
    float *k_cache, *v_cache; /* [n_layer][n_ctx][kv_dim] */
    float *x, *xb, *q, *att, *hb, *hb2, *logits, *rope; /* scratch */
    const float *rope_freqs; /* the model's RoPE divisors for this context's size (or NULL) */
    float *rope_swa;         /* cos/sin of the sliding-window layers' RoPE (scratch), or NULL without them */
    void *qx;      /* activations converted for a matrix product */
    size_t qx_cap; /* bytes per token row of qx */
};

/* Loads like inf_llm_model_load with the reference kernels (tests). */
inf_status inf__llm_model_load_ex(const char *path, bool force_ref, inf_llm_model **out, inf_error *err);
/* The same over a GGUF already opened (taken: closed with the model, also on failure). */
inf_status inf__llm_model_from_gguf(inf__gguf *g, bool force_ref, inf_llm_model **out, inf_error *err);
const inf__gguf *inf__llm_model_gguf(const inf_llm_model *m);
/* Repacks the tiles and copies the other matrices of m into its weight region (weight_region.c). */
inf_status inf__llm_place_weights(inf_llm_model *m, inf_error *err);

/* Speculative decoding's draft length (generate.c): the k <= k_max to
 * propose when a proposal passes with probability alpha, and alpha after a
 * step of k proposals of which `accepted` passed. */
int inf__llm_draft_k(double alpha, int k_max);
/* The most tokens a short pass of c's model handles in one call per block of weight rows (context.c). */
int inf__llm_context_pass_tokens(const inf_llm_context *c);
double inf__llm_draft_alpha(double alpha, int accepted, int k);

#endif
