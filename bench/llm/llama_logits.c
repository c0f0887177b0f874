/*
 * llama_logits.c -- the llama.cpp peer's logits of every position of a
 * prompt, on ONE thread, for the tests that compare Infera's logits with
 * llama.cpp's (tests/llm/test_gemma3.sh).  Built against the peer's own
 * libllama by bench/llm/build_llama_cpp.sh; only llama.h's public API is used.
 *
 * The prompt is tokenized as llama_greedy.c does (special tokens parsed, BOS
 * as the file says) and run in one pass with float32 K/V caches and flash
 * attention off, so that the peer's attention is float32 like Infera's (its
 * default f16 caches move a Gemma 3 270M Q4_K_M file's logits by up to 1.6).
 * Writes the logits as raw float32 [n_tokens][n_vocab] to OUT and prints the
 * token count and the ids on stdout.
 *
 * usage: llama-logits-1t MODEL.gguf PROMPT OUT
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "llama_driver.h"

int main(int argc, char **argv) {
    if (argc != 4) {
        fprintf(stderr, "usage: %s MODEL.gguf PROMPT OUT\n", argv[0]);
        return 2;
    }
    const char *path = argv[1], *prompt = argv[2], *out = argv[3];
    struct llama_model *model = driver_load("llama_logits", path);
    if (!model) return 1;
    const struct llama_vocab *vocab = llama_model_get_vocab(model);
    int n = -llama_tokenize(vocab, prompt, (int32_t)strlen(prompt), NULL, 0, true, true);
    llama_token *tokens = malloc(sizeof *tokens * (size_t)(n > 0 ? n : 1));
    if (n <= 0 || !tokens || llama_tokenize(vocab, prompt, (int32_t)strlen(prompt), tokens, n, true, true) < 0)
        return fprintf(stderr, "llama_logits: cannot tokenize the prompt\n"), 1;
    struct llama_context_params cp = llama_context_default_params();
    cp.n_ctx = (uint32_t)n;
    cp.n_batch = cp.n_ubatch = (uint32_t)n;
    cp.n_threads = cp.n_threads_batch = 1;
    cp.type_k = cp.type_v = GGML_TYPE_F32;
    cp.flash_attn_type = LLAMA_FLASH_ATTN_TYPE_DISABLED;
    struct llama_context *ctx = llama_init_from_model(model, cp);
    struct llama_batch batch = llama_batch_init(n, 0, 1);
    if (!ctx) return fprintf(stderr, "llama_logits: cannot create the context\n"), 1;
    for (int i = 0; i < n; i++) {
        batch.token[i] = tokens[i], batch.pos[i] = i, batch.n_seq_id[i] = 1, batch.seq_id[i][0] = 0;
        batch.logits[i] = 1;
    }
    batch.n_tokens = n;
    if (llama_decode(ctx, batch)) return fprintf(stderr, "llama_logits: llama_decode failed\n"), 1;
    int n_vocab = llama_vocab_n_tokens(vocab);
    FILE *f = fopen(out, "wb");
    if (!f) return fprintf(stderr, "llama_logits: cannot write %s\n", out), 1;
    for (int i = 0; i < n; i++)
        if (fwrite(llama_get_logits_ith(ctx, i), sizeof(float), (size_t)n_vocab, f) != (size_t)n_vocab)
            return fprintf(stderr, "llama_logits: cannot write %s\n", out), 1;
    if (fclose(f)) return fprintf(stderr, "llama_logits: cannot write %s\n", out), 1;
    printf("%d", n);
    for (int i = 0; i < n; i++) printf(" %d", tokens[i]);
    printf("\n");
    llama_batch_free(batch);
    llama_free(ctx);
    llama_model_free(model);
    free(tokens);
    return 0;
}
