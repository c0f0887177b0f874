/*
 * model.c -- a llama-architecture decoder from a GGUF file: hyper-parameters
 * from the `<arch>.*` keys, tensors by their llama.cpp names, every shape and
 * type checked at load so that the decoder can trust them.
 *
 * Architectures are rows of a table (name, RoPE type as llama.cpp picks it,
 * the feed-forward gate, the embedding scale); a new llama-like architecture
 * is one line.  Norm vectors must be f32 (as every converter writes them);
 * matrices may be any type of quant.h.  The output head is `output.weight`,
 * or the token embedding when absent (tied).  Fused projections (phi3's
 * `attn_qkv` rows q | k | v, its `ffn_up` rows gate | up) are read as views
 * of their rows, so the decoder sees the same separate matrices.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "llm/llm_int.h"

typedef struct arch_info {
    const char *name;
    int rope_type;
    inf__llm_gate_kind gate;
    bool embed_scale; /* the token embeddings times sqrt(embedding length) */
    /* sliding-window layers: all but every swa_every-th (0: none), the window when the file does not say (0: none),
     * and whether their RoPE base defaults to the model's (else 10000), as llama.cpp reads each architecture */
    uint32_t swa_every, swa_window;
    bool swa_base_is_global;
    /* logit soft-capping, c tanh(x / c), when the file does not say (0: none): attention scores, final logits */
    float attn_softcap, final_softcap;
    /* the layer count of the one size whose q . k is divided by sqrt(n_embd / n_head), not sqrt(head size) (0: none;
     * llama.cpp's rule after gemma_pytorch's query_pre_attn_scalar) */
    uint32_t embd_scaled_layers;
} arch_info;

#define GELU INF__LLM_GATE_GELU_TANH
static const arch_info archs[] = {
    {.name = "llama", .rope_type = INF__ROPE_NORM},
    {.name = "qwen2", .rope_type = INF__ROPE_NEOX}, /* Qwen2 / Qwen2.5: q/k/v biases (read when present) */
    {.name = "qwen3", .rope_type = INF__ROPE_NEOX}, /* Qwen3: RMSNorm of each q/k head before RoPE */
    {.name = "phi3", .rope_type = INF__ROPE_NEOX},  /* Phi-3 / 3.5: fused qkv and gate|up, LongRoPE */
    /* Gemma (1): GeGLU, scaled embeddings, tied head */
    {.name = "gemma", .rope_type = INF__ROPE_NEOX, .gate = GELU, .embed_scale = true},
    /* Gemma 2: gemma's, with post-attention / post-feed-forward norms, every other layer sliding (4096), soft-capped
     * attention scores (50) and logits (30) */
    {.name = "gemma2",
     .rope_type = INF__ROPE_NEOX,
     .gate = GELU,
     .embed_scale = true,
     .swa_every = 2,
     .swa_window = 4096,
     .swa_base_is_global = true,
     .attn_softcap = 50,
     .final_softcap = 30,
     .embd_scaled_layers = 46},
    /* Gemma 3 (text): gemma's, with q/k head norms, post-norms, 5 sliding-window layers in 6 (window from the file) */
    {.name = "gemma3",
     .rope_type = INF__ROPE_NEOX,
     .gate = GELU,
     .embed_scale = true,
     .swa_every = 6,
     .embd_scaled_layers = 62},
};
#undef GELU

/* "llama, qwen2, ..." into buf, for messages */
static const char *arch_list(char *buf, size_t n) {
    buf[0] = 0;
    for (size_t i = 0; i < sizeof archs / sizeof archs[0]; i++)
        snprintf(buf + strlen(buf), n - strlen(buf), "%s%s", i ? ", " : "", archs[i].name);
    return buf;
}

static const arch_info *find_arch(const char *s, size_t n) {
    for (size_t i = 0; i < sizeof archs / sizeof archs[0]; i++)
        if (strlen(archs[i].name) == n && !memcmp(archs[i].name, s, n)) return &archs[i];
    return NULL;
}

typedef struct loader {
    inf_llm_model *m;
    inf_error *err;
} loader;

static inf_status key_u32(loader *L, const char *suffix, bool required, uint32_t dflt, uint32_t *out) {
    char key[128];
    snprintf(key, sizeof key, "%s.%s", L->m->arch, suffix);
    if (inf__gguf_find_key(L->m->g, key) < 0) {
        if (required) return inf_error_set(L->err, INF_EMODEL, "%s: GGUF key '%s' is missing", L->m->info.path, key);
        *out = dflt;
        return INF_OK;
    }
    return inf__gguf_get_u32(L->m->g, key, out, L->err);
}

static inf_status key_f32(loader *L, const char *suffix, float dflt, float *out) {
    char key[128];
    snprintf(key, sizeof key, "%s.%s", L->m->arch, suffix);
    if (inf__gguf_find_key(L->m->g, key) < 0) {
        *out = dflt;
        return INF_OK;
    }
    return inf__gguf_get_f32(L->m->g, key, out, L->err);
}

static const inf__gguf_tensor *tensor(loader *L, const char *name, bool required, inf_status *st) {
    const inf__gguf_tensor *t = inf__gguf_find_tensor(L->m->g, name);
    if (!t && required) *st = inf_error_set(L->err, INF_EMODEL, "%s: tensor '%s' is missing", L->m->info.path, name);
    return t;
}

/* A 1-D f32 vector of n elements. */
static inf_status vec(loader *L, const char *name, bool required, int64_t n, const float **out) {
    inf_status st = INF_OK;
    const inf__gguf_tensor *t = tensor(L, name, required, &st);
    *out = NULL;
    if (!t) return st;
    if (t->type != INF__GGML_F32)
        return inf_error_set(L->err, INF_EUNSUPPORTED, "%s: tensor '%s' is %s; norm and bias vectors must be f32",
                          L->m->info.path, name, inf__ggml_type_name(t->type));
    if (t->ne[0] != n || t->ne[1] != 1 || t->ne[2] != 1 || t->ne[3] != 1)
        return inf_error_set(L->err, INF_ESHAPE, "%s: tensor '%s' has shape [%lld,%lld], expected [%lld]", L->m->info.path,
                          name, (long long)t->ne[0], (long long)t->ne[1], (long long)n);
    if ((uintptr_t)t->data % 4)
        return inf_error_set(L->err, INF_EFORMAT, "%s: tensor '%s' is not 4-byte aligned", L->m->info.path, name);
    *out = t->data;
    return INF_OK;
}

/* A matrix of rows x cols (ggml ne = [cols, rows]). */
static inf_status mat(loader *L, const char *name, bool required, int64_t cols, int64_t rows, inf__llm_weight *w) {
    inf_status st = INF_OK;
    const inf__gguf_tensor *t = tensor(L, name, required, &st);
    memset(w, 0, sizeof *w);
    if (!t) return st;
    const inf__llm_qtype *q = inf__llm_qtype_get(t->type, L->m->force_ref);
    if (!q || !q->dot)
        return inf_error_set(L->err, INF_EUNSUPPORTED, "%s: tensor '%s' is of type %s; supported: %s", L->m->info.path,
                          name, inf__ggml_type_name(t->type) ? inf__ggml_type_name(t->type) : "?", inf__llm_qtype_list());
    if (t->ne[0] != cols || t->ne[1] != rows || t->ne[2] != 1 || t->ne[3] != 1)
        return inf_error_set(L->err, INF_ESHAPE, "%s: tensor '%s' has shape [%lld,%lld,%lld], expected [%lld,%lld]",
                          L->m->info.path, name, (long long)t->ne[0], (long long)t->ne[1], (long long)t->ne[2],
                          (long long)cols, (long long)rows);
    if (q->block > 1 && cols % q->block)
        return inf_error_set(L->err, INF_ESHAPE, "%s: tensor '%s': %lld columns is not a multiple of %u (%s blocks)",
                             L->m->info.path, name, (long long)cols, q->block, q->name);
    if ((uintptr_t)t->data % 4)
        return inf_error_set(L->err, INF_EFORMAT, "%s: tensor '%s' is not 4-byte aligned (general.alignment)",
                          L->m->info.path, name);
    w->data = t->data;
    w->q = q;
    w->rows = rows;
    w->cols = cols;
    w->row_bytes = inf__llm_row_bytes(q, cols);
    return INF_OK;
}

/* Sliding-window attention (architectures with swa_every): the window (`attention.sliding_window`, else the
 * architecture's; 0: none), which layers use it (`attention.sliding_window_pattern` = P: all but every P-th, as
 * llama.cpp's set_swa_pattern), and their RoPE base (`rope.freq_base_swa`, else the model's or 10000 by
 * architecture) and scale (1). */
static inf_status load_swa(loader *L, const arch_info *a) {
    inf_llm_model *m = L->m;
    uint32_t window, every = a->swa_every;
    inf_status st;
    m->rope_base_swa = 10000.0f, m->rope_freq_scale_swa = 1.0f;
    if (!every) return INF_OK;
    if ((st = key_u32(L, "attention.sliding_window", false, a->swa_window, &window)) ||
        (st = key_u32(L, "attention.sliding_window_pattern", false, every, &every)) ||
        (st = key_f32(L, "rope.freq_base_swa", a->swa_base_is_global ? m->rope_base : 10000.0f, &m->rope_base_swa)))
        return st;
    if (!(m->rope_base_swa > 0))
        return inf_error_set(L->err, INF_EMODEL, "%s: rope.freq_base_swa %g", m->info.path, m->rope_base_swa);
    m->swa_window = (int)(window > (1u << 24) ? (1u << 24) : window);
    m->swa_every = window ? every : 0;
    return INF_OK;
}

/* Logit soft-capping (`attn_logit_softcapping`, `final_logit_softcapping`, else the architecture's). */
static inf_status load_softcaps(loader *L, const arch_info *a) {
    inf_llm_model *m = L->m;
    inf_status st;
    if ((st = key_f32(L, "attn_logit_softcapping", a->attn_softcap, &m->attn_softcap)) ||
        (st = key_f32(L, "final_logit_softcapping", a->final_softcap, &m->final_softcap)))
        return st;
    if (!(m->attn_softcap >= 0 && m->attn_softcap < 1e6f) || !(m->final_softcap >= 0 && m->final_softcap < 1e6f))
        return inf_error_set(L->err, INF_EMODEL, "%s: logit soft-capping %g / %g out of range", m->info.path,
                             m->attn_softcap, m->final_softcap);
    return INF_OK;
}

static inf_status load_hparams(loader *L, const arch_info *a) {
    inf_llm_model *m = L->m;
    inf_llm_model_info *I = &m->info;
    uint32_t ctx, embd, nl, nh, nkv, ff, rdim, hd;
    inf_status st;
    if ((st = key_u32(L, "context_length", false, 2048, &ctx)) || (st = key_u32(L, "embedding_length", true, 0, &embd)) ||
        (st = key_u32(L, "block_count", true, 0, &nl)) || (st = key_u32(L, "feed_forward_length", true, 0, &ff)) ||
        (st = key_u32(L, "attention.head_count", true, 0, &nh)) ||
        (st = key_u32(L, "attention.head_count_kv", false, nh, &nkv)))
        return st;
    if (embd == 0 || nl == 0 || nh == 0 || nkv == 0 || ff == 0 || embd > (1u << 16) || nl > 1024 || ff > (1u << 20) ||
        nh > embd || nh % nkv || embd % nh)
        return inf_error_set(L->err, INF_EMODEL,
                          "%s: hyper-parameters out of range: embedding %u, layers %u, heads %u/%u (kv), ffn %u",
                          I->path, embd, nl, nh, nkv, ff);
    /* the head size may differ from embedding / heads (Qwen3-0.6B: 1024 / 16 heads of 128): q is heads x head size */
    uint32_t vd;
    if ((st = key_u32(L, "attention.key_length", false, embd / nh, &hd)) ||
        (st = key_u32(L, "attention.value_length", false, hd, &vd)))
        return st;
    if (hd == 0 || hd > 1024 || (uint64_t)hd * nh > (1u << 20))
        return inf_error_set(L->err, INF_EMODEL, "%s: head size %u out of range", I->path, hd);
    if (vd != hd)
        return inf_error_set(L->err, INF_EUNSUPPORTED, "%s: value head size %u differs from the key head size %u",
                             I->path, vd, hd);
    if ((st = key_u32(L, "rope.dimension_count", false, hd, &rdim))) return st;
    if (rdim == 0 || rdim > hd || rdim % 2)
        return inf_error_set(L->err, INF_EMODEL, "%s: rope.dimension_count %u (head size %u)", I->path, rdim, hd);
    if ((st = key_f32(L, "attention.layer_norm_rms_epsilon", 1e-5f, &m->rms_eps)) ||
        (st = key_f32(L, "rope.freq_base", 10000.0f, &m->rope_base)))
        return st;
    /* RoPE scaling: linear (positions divided by the factor), or none */
    float factor = 0;
    char key[128];
    snprintf(key, sizeof key, "%s.rope.scaling.type", m->arch);
    if (inf__gguf_find_key(m->g, key) >= 0) {
        const char *s;
        size_t n;
        if ((st = inf__gguf_get_str(m->g, key, &s, &n, L->err))) return st;
        bool none = n == 4 && !memcmp(s, "none", 4), linear = n == 6 && !memcmp(s, "linear", 6),
             longrope = n == 8 && !memcmp(s, "longrope", 8); /* its factors are tensors (rope_factors_*) */
        if (!none && !linear && !longrope)
            return inf_error_set(L->err, INF_EUNSUPPORTED, "%s: %s = '%.*s' (supported: none, linear, longrope)",
                                 I->path, key, (int)(n > 64 ? 64 : n), s);
        if (linear && (st = key_f32(L, "rope.scaling.factor", 1.0f, &factor))) return st;
    } else if ((st = key_f32(L, "rope.scale_linear", 0.0f, &factor))) {
        return st;
    }
    m->rope_freq_scale = factor > 0 ? 1.0f / factor : 1.0f;
    uint32_t orig_ctx;
    if ((st = key_u32(L, "rope.scaling.original_context_length", false, ctx, &orig_ctx)) ||
        (st = key_f32(L, "rope.scaling.attn_factor", 1.0f, &m->rope_attn_factor)))
        return st;
    m->rope_orig_ctx = (int)(orig_ctx > (1u << 24) ? (1u << 24) : orig_ctx);
    if (!(m->rope_base > 0) || !(m->rms_eps >= 0) || !(m->rope_attn_factor > 0) || m->rope_attn_factor > 100)
        return inf_error_set(L->err, INF_EMODEL,
                             "%s: rope.freq_base %g / rms epsilon %g / rope attn_factor %g out of range", I->path,
                             m->rope_base, m->rms_eps, m->rope_attn_factor);
    m->rope_dim = (int)rdim;
    if ((st = load_swa(L, a)) || (st = load_softcaps(L, a))) return st;
    I->swa_window = m->swa_window, I->attn_softcap = m->attn_softcap, I->final_softcap = m->final_softcap;
    /* q . k / sqrt(head size), or / sqrt(n_embd / n_head) for the one size that does (arch_info) */
    m->attn_scale = 1.0f / sqrtf((float)hd);
    if (a->embd_scaled_layers && nl == a->embd_scaled_layers) m->attn_scale = 1.0f / sqrtf((float)(embd / nh));
    I->n_ctx_train = (int)(ctx > (1u << 24) ? (1u << 24) : ctx);
    I->n_embd = (int)embd, I->n_layer = (int)nl, I->n_head = (int)nh, I->n_head_kv = (int)nkv, I->n_ff = (int)ff;
    I->n_head_dim = (int)hd;
    return INF_OK;
}

static int32_t token_id(const inf__gguf *g, const char *key, int n_vocab) {
    uint32_t v;
    if (inf__gguf_find_key(g, key) < 0 || inf__gguf_get_u32(g, key, &v, NULL) || v >= (uint32_t)n_vocab) return -1;
    return (int32_t)v;
}

/* Rows [r0, r0 + n) of w, as a matrix of its own (the same bytes). */
static inf__llm_weight rows_of(const inf__llm_weight *w, int64_t r0, int64_t n) {
    inf__llm_weight v = *w;
    v.data = (const uint8_t *)w->data + (size_t)r0 * w->row_bytes;
    v.rows = n;
    return v;
}

/* the name of layer l's tensor s, in the caller's buffer n */
#define NAME(s) (snprintf(n, sizeof n, "blk.%d.%s", l, s), n)

/* Layer l's q, k, v projections (and biases): three matrices, or one `attn_qkv` of their rows in that order. */
static inf_status load_attention(loader *L, int l, inf__llm_layer *y) {
    const inf_llm_model_info *I = &L->m->info;
    int64_t E = I->n_embd, Q = (int64_t)I->n_head * I->n_head_dim, KV = (int64_t)I->n_head_kv * I->n_head_dim;
    inf_status st;
    char n[96];
    if (inf__gguf_find_tensor(L->m->g, NAME("attn_qkv.weight"))) {
        inf__llm_weight qkv;
        const float *b;
        if ((st = mat(L, n, true, E, Q + 2 * KV, &qkv)) || (st = vec(L, NAME("attn_qkv.bias"), false, Q + 2 * KV, &b)))
            return st;
        y->wq = rows_of(&qkv, 0, Q), y->wk = rows_of(&qkv, Q, KV), y->wv = rows_of(&qkv, Q + KV, KV);
        if (b) y->bq = b, y->bk = b + Q, y->bv = b + Q + KV;
        return INF_OK;
    }
    if ((st = mat(L, NAME("attn_q.weight"), true, E, Q, &y->wq)) ||
        (st = mat(L, NAME("attn_k.weight"), true, E, KV, &y->wk)) ||
        (st = mat(L, NAME("attn_v.weight"), true, E, KV, &y->wv)) ||
        (st = vec(L, NAME("attn_q.bias"), false, Q, &y->bq)) || (st = vec(L, NAME("attn_k.bias"), false, KV, &y->bk)) ||
        (st = vec(L, NAME("attn_v.bias"), false, KV, &y->bv)))
        return st;
    return INF_OK;
}

/* Layer l's gate and up projections: two matrices, or (no `ffn_gate`) one `ffn_up` of 2 x n_ff rows, gate first. */
static inf_status load_feed_forward(loader *L, int l, inf__llm_layer *y) {
    const inf_llm_model_info *I = &L->m->info;
    int64_t E = I->n_embd, F = I->n_ff;
    inf_status st = INF_OK;
    char n[96];
    const inf__gguf_tensor *up = inf__gguf_find_tensor(L->m->g, NAME("ffn_up.weight"));
    if (!inf__gguf_find_tensor(L->m->g, NAME("ffn_gate.weight")) && up && up->ne[1] == 2 * F) {
        inf__llm_weight both;
        if ((st = mat(L, NAME("ffn_up.weight"), true, E, 2 * F, &both))) return st;
        y->w_gate = rows_of(&both, 0, F), y->w_up = rows_of(&both, F, F);
        return INF_OK;
    }
    if ((st = mat(L, NAME("ffn_gate.weight"), true, E, F, &y->w_gate)) ||
        (st = mat(L, NAME("ffn_up.weight"), true, E, F, &y->w_up)))
        return st;
    return INF_OK;
}

static inf_status load_tensors(loader *L) {
    inf_llm_model *m = L->m;
    inf_llm_model_info *I = &m->info;
    inf_status st = INF_OK;
    const inf__gguf_tensor *emb = tensor(L, "token_embd.weight", true, &st);
    if (!emb) return st;
    int64_t E = I->n_embd, Hd = I->n_head_dim, Q = (int64_t)I->n_head * Hd;
    if (emb->ne[1] < 1 || emb->ne[1] > (1 << 24))
        return inf_error_set(L->err, INF_EMODEL, "%s: token_embd.weight has %lld rows", I->path, (long long)emb->ne[1]);
    I->n_vocab = (int)emb->ne[1];
    if ((st = mat(L, "token_embd.weight", true, E, I->n_vocab, &m->tok_embd))) return st;
    if ((st = vec(L, "output_norm.weight", true, E, &m->output_norm))) return st;
    if ((st = mat(L, "output.weight", false, E, I->n_vocab, &m->output))) return st;
    if (!m->output.data) m->output = m->tok_embd; /* tied */
    if ((st = vec(L, "rope_freqs.weight", false, m->rope_dim / 2, &m->rope_freqs)) ||
        (st = vec(L, "rope_factors_short.weight", false, m->rope_dim / 2, &m->rope_factors_short)) ||
        (st = vec(L, "rope_factors_long.weight", false, m->rope_dim / 2, &m->rope_factors_long)))
        return st;
    m->layers = inf__calloc((size_t)I->n_layer, sizeof *m->layers);
    if (!m->layers) return inf_error_set(L->err, INF_ENOMEM, "%s: no memory for %d layers", I->path, I->n_layer);
    for (int l = 0; l < I->n_layer; l++) {
        inf__llm_layer *y = &m->layers[l];
        char n[96];
        if ((st = vec(L, NAME("attn_norm.weight"), true, E, &y->attn_norm)) ||
            (st = vec(L, NAME("ffn_norm.weight"), true, E, &y->ffn_norm)) || (st = load_attention(L, l, y)) ||
            (st = mat(L, NAME("attn_output.weight"), true, Q, E, &y->wo)) || (st = load_feed_forward(L, l, y)) ||
            (st = mat(L, NAME("ffn_down.weight"), true, I->n_ff, E, &y->w_down)) ||
            (st = vec(L, NAME("attn_output.bias"), false, E, &y->bo)) ||
            (st = vec(L, NAME("attn_q_norm.weight"), false, Hd, &y->q_norm)) ||
            (st = vec(L, NAME("attn_k_norm.weight"), false, Hd, &y->k_norm)) ||
            (st = vec(L, NAME("post_attention_norm.weight"), false, E, &y->post_attn_norm)) ||
            (st = vec(L, NAME("post_ffw_norm.weight"), false, E, &y->post_ffn_norm)))
            return st;
        /* llama.cpp's set_swa_pattern(P): layer l slides unless l % P == P - 1 (P = 0: every layer) */
        y->swa = m->swa_window > 0 && (m->swa_every == 0 || (uint32_t)l % m->swa_every < m->swa_every - 1);
        I->swa_layers += y->swa;
#undef NAME
    }
    /* sizes, and the type most bytes are in */
    uint64_t bytes_by_type[64] = {0};
    for (uint64_t i = 0; i < inf__gguf_n_tensors(m->g); i++) {
        const inf__gguf_tensor *t = inf__gguf_tensor_at(m->g, i);
        I->weight_bytes += t->nbytes;
        I->n_params += t->ne[0] * t->ne[1] * t->ne[2] * t->ne[3];
        if (t->n_dims >= 2 && t->type < 64) bytes_by_type[t->type] += t->nbytes;
    }
    int best = 0;
    for (int t = 1; t < 64; t++)
        if (bytes_by_type[t] > bytes_by_type[best]) best = t;
    I->weight_type = inf__ggml_type_name((uint32_t)best) ? inf__ggml_type_name((uint32_t)best) : "?";
    /* a decode step reads every layer matrix and the output head once, one embedding row */
    uint64_t per_layer = 0;
    const inf__llm_layer *y0 = &m->layers[0];
    const inf__llm_weight *ws[] = {&y0->wq, &y0->wk, &y0->wv, &y0->wo, &y0->w_gate, &y0->w_up, &y0->w_down};
    for (int i = 0; i < 7; i++) per_layer += (uint64_t)ws[i]->rows * ws[i]->row_bytes;
    I->bytes_per_token = per_layer * (uint64_t)I->n_layer + (uint64_t)m->output.rows * m->output.row_bytes;
    I->bos_id = token_id(m->g, "tokenizer.ggml.bos_token_id", I->n_vocab);
    I->eos_id = token_id(m->g, "tokenizer.ggml.eos_token_id", I->n_vocab);
    I->eot_id = token_id(m->g, "tokenizer.ggml.eot_token_id", I->n_vocab);
    return INF_OK;
}

inf_status inf__llm_model_from_gguf(inf__gguf *g, bool force_ref, inf_llm_model **out, inf_error *err) {
    *out = NULL;
    inf_llm_model *m = inf__calloc(1, sizeof *m);
    if (!m) { /* the message names the file before the file's object goes */
        inf_status st = inf_error_set(err, INF_ENOMEM, "%s: no memory for the model", inf__gguf_path(g));
        inf__gguf_close(g);
        return st;
    }
    m->g = g;
    m->force_ref = force_ref;
    m->info.path = inf__gguf_path(g);
    loader L = {m, err};
    const char *s;
    size_t n;
    inf_status st = inf__gguf_get_str(g, "general.architecture", &s, &n, err);
    if (st) goto fail;
    const arch_info *a = find_arch(s, n);
    if (!a) {
        char list[128];
        st = inf_error_set(err, INF_EUNSUPPORTED, "%s: architecture '%.*s' is not supported (supported: %s)",
                           m->info.path, (int)(n > 64 ? 64 : n), s, arch_list(list, sizeof list));
        goto fail;
    }
    snprintf(m->arch, sizeof m->arch, "%s", a->name);
    m->rope_type = a->rope_type;
    m->gate = a->gate;
    m->embed_scale = a->embed_scale;
    m->info.architecture = m->arch;
    if (inf__gguf_find_key(g, "general.name") >= 0 && inf__gguf_get_str(g, "general.name", &s, &n, NULL) == INF_OK)
        snprintf(m->name, sizeof m->name, "%.*s", (int)(n > 127 ? 127 : n), s);
    m->info.name = m->name;
    if ((st = load_hparams(&L, a)) || (st = load_tensors(&L)) || (st = inf__llm_place_weights(m, err))) goto fail;
    *out = m;
    return INF_OK;
fail:
    inf_llm_model_free(m);
    return st;
}

inf_status inf__llm_model_load_ex(const char *path, bool force_ref, inf_llm_model **out, inf_error *err) {
    inf__gguf *g;
    *out = NULL;
    inf_status st = inf__gguf_open(path, &g, err);
    if (st) return st;
    return inf__llm_model_from_gguf(g, force_ref, out, err);
}

inf_status inf_llm_model_load(const char *path, inf_llm_model **out, inf_error *err) {
    return inf__llm_model_load_ex(path, false, out, err);
}

void inf_llm_model_free(inf_llm_model *m) {
    if (!m) return;
    inf__aligned_free(m->region); /* the tiles and copied matrices (weight_region.c) */
    inf__free(m->layers);
    inf__gguf_close(m->g);
    inf__free(m);
}

const inf_llm_model_info *inf_llm_model_get_info(const inf_llm_model *m) { return &m->info; }
const inf__gguf *inf__llm_model_gguf(const inf_llm_model *m) { return m->g; }
