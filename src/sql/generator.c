/*
 * generator.c -- GGUF language models for the SQL functions (generator.h).
 * Tokenize as `infera generate` does (BOS and special tokens as the file
 * says), run inf_llm_generate greedily with the tokenizer's end-of-generation
 * tokens as stops, collect the pieces.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "infera/llm.h"
#include "infera/tokenizer.h"
#include "registry/llm_ref.h"
#include "sql/generator.h"

struct inf__generator {
    char *ref;
    inf_llm_model *model;
    inf_llm_context *ctx;
    inf_tokenizer *tok;
    int32_t *stops;
    int n_stops;
};

void inf__generator_free(inf__generator *g) {
    if (!g) return;
    inf_llm_context_free(g->ctx);
    inf_llm_model_free(g->model);
    inf_tokenizer_free(g->tok);
    free(g->stops);
    free(g->ref);
    free(g);
}

const char *inf__generator_ref(const inf__generator *g) { return g->ref; }

inf_status inf__generator_new(const char *ref, const char *home, const char *registry_url, inf__generator **out,
                              inf_error *err) {
    *out = NULL;
    char path[4200];
    inf_status st = inf__llm_ref_resolve_at(ref, home, registry_url, path, sizeof path, err);
    if (st != INF_OK) return st;
    inf__generator *g = calloc(1, sizeof *g);
    if (!g || !(g->ref = strdup(ref))) {
        free(g);
        return inf_error_set(err, INF_ENOMEM, "out of memory loading %s", ref);
    }
    inf_llm_context_options co;
    inf_llm_context_options_init(&co);
    co.n_ctx = 2048;
    if ((st = inf_tokenizer_load(path, &g->tok, err)) == INF_OK && (st = inf_llm_model_load(path, &g->model, err)) == INF_OK &&
        (st = inf_llm_context_new(g->model, &co, &g->ctx, err)) == INF_OK) {
        int n_vocab = inf_tokenizer_n_vocab(g->tok);
        if (n_vocab != inf_llm_model_get_info(g->model)->n_vocab)
            st = inf_error_set(err, INF_EMODEL, "%s: the tokenizer has %d tokens, the model's embedding %d", ref,
                               n_vocab, inf_llm_model_get_info(g->model)->n_vocab);
        else if (!(g->stops = malloc((size_t)n_vocab * sizeof *g->stops)))
            st = inf_error_set(err, INF_ENOMEM, "out of memory loading %s", ref);
        for (int32_t id = 0; st == INF_OK && id < n_vocab; id++)
            if (inf_tokenizer_is_eog(g->tok, id)) g->stops[g->n_stops++] = id;
    }
    if (st != INF_OK) {
        inf__generator_free(g);
        return st;
    }
    *out = g;
    return INF_OK;
}

static int32_t *tokenize(inf__generator *g, const char *text, size_t len, int *n, inf_error *err) {
    size_t k = 0;
    int32_t *ids = NULL;
    if (inf_tokenizer_encode_alloc(g->tok, text, len, true, &ids, &k, err) != INF_OK)
        return NULL;
    if (k == 0) {
        free(ids);
        inf_error_set(err, INF_EINVAL, "the text has no tokens");
        return NULL;
    }
    *n = (int)k;
    return ids;
}

typedef struct collect {
    const inf_tokenizer *tok;
    char *p;
    size_t n, cap;
    int oom;
} collect;

static int on_token(void *user, int32_t id) {
    collect *c = user;
    if (inf_tokenizer_append_piece(c->tok, id, &c->p, &c->n, &c->cap) == INF_ENOMEM) return c->oom = 1;
    return 0;
}

inf_status inf__generator_generate(inf__generator *g, const char *prompt, size_t prompt_len, int max_tokens,
                                   char **text, size_t *len, inf_error *err) {
    *text = NULL;
    int n = 0;
    int32_t *ids = tokenize(g, prompt, prompt_len, &n, err);
    if (!ids) return err ? err->status : INF_EINVAL;
    inf_llm_generate_options go;
    inf_llm_generate_options_init(&go);
    go.max_tokens = max_tokens > 0 ? max_tokens : 128;
    go.sampling.temperature = 0; /* greedy: deterministic, like a SQL function should be */
    go.stop_ids = g->stops;
    go.n_stop_ids = g->n_stops;
    collect c = {g->tok, NULL, 0, 0, 0};
    inf_llm_generate_stats stats;
    inf_status st = inf_llm_generate(g->ctx, NULL, ids, n, &go, on_token, &c, &stats, err);
    free(ids);
    if (st == INF_OK && c.oom) st = inf_error_set(err, INF_ENOMEM, "out of memory for the completion");
    if (st == INF_OK && !c.p && !(c.p = calloc(1, 1))) st = inf_error_set(err, INF_ENOMEM, "out of memory");
    if (st != INF_OK) {
        free(c.p);
        return st;
    }
    *text = c.p;
    *len = c.n;
    return INF_OK;
}

inf_status inf__generator_embed_json(inf__generator *g, const char *text, size_t text_len, char **json,
                                     inf_error *err) {
    *json = NULL;
    int n = 0;
    int32_t *ids = tokenize(g, text, text_len, &n, err);
    if (!ids) return err ? err->status : INF_EINVAL;
    int d = inf_llm_model_get_info(g->model)->n_embd;
    float *v = malloc((size_t)d * sizeof *v);
    char *out = malloc((size_t)d * 18 + 3);
    inf_status st = v && out ? INF_OK : inf_error_set(err, INF_ENOMEM, "out of memory for an embedding");
    if (st == INF_OK && n > inf_llm_context_n_ctx(g->ctx))
        st = inf_error_set(err, INF_ERANGE, "the text has %d tokens; at most %d are embedded", n,
                           inf_llm_context_n_ctx(g->ctx));
    if (st == INF_OK && (st = inf_llm_context_rewind(g->ctx, 0, err)) == INF_OK)
        st = inf_llm_context_embed(g->ctx, ids, n, v, err);
    free(ids);
    if (st == INF_OK) {
        double ss = 0;
        for (int i = 0; i < d; i++) ss += (double)v[i] * v[i];
        double inv = ss > 0 ? 1.0 / sqrt(ss) : 0;
        size_t k = 0;
        out[k++] = '[';
        for (int i = 0; i < d; i++) k += (size_t)snprintf(out + k, 18, "%s%.9g", i ? "," : "", (double)(float)(v[i] * inv));
        out[k++] = ']';
        out[k] = 0;
        *json = out;
        out = NULL;
    }
    free(v);
    free(out);
    return st;
}
