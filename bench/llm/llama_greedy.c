/*
 * llama_greedy.c -- the llama.cpp peer's greedy continuation of a prompt, on
 * ONE thread, for the tests that compare Infera's text with llama.cpp's
 * (tests/llm/llama_greedy.sh).  Built against the peer's own libllama by
 * bench/llm/build_llama_cpp.sh; only llama.h's public API is used.
 *
 * Why not the peer's tools: llama-simple cannot be given a thread count (it
 * always starts GGML_DEFAULT_N_THREADS = 4: on 2 vCPUs one 12-token answer took
 * 39 s to 3 minutes instead of 0.5 s), and llama-completion prints through an
 * asynchronous logger that may lose its last lines at exit (its common/log.cpp
 * says so), which cut answers short under load.
 *
 * What it does is llama-simple's loop: the prompt tokenized with special
 * tokens parsed and BOS as the file says, one pass over it, then greedy
 * sampling of up to N tokens, stopping before an end-of-generation token;
 * each token's text (specials rendered) written to stdout and flushed.
 *
 * usage: llama-greedy-1t MODEL.gguf N PROMPT
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "llama_driver.h"

int main(int argc, char **argv) {
    if (argc != 4) {
        fprintf(stderr, "usage: %s MODEL.gguf N PROMPT\n", argv[0]);
        return 2;
    }
    const char *path = argv[1], *prompt = argv[3];
    int n_predict = atoi(argv[2]);
    struct llama_model *model = driver_load("llama_greedy", path);
    if (!model) return 1;
    const struct llama_vocab *vocab = llama_model_get_vocab(model);
    int n_prompt = -llama_tokenize(vocab, prompt, (int32_t)strlen(prompt), NULL, 0, true, true);
    llama_token *tokens = malloc(sizeof *tokens * (size_t)(n_prompt > 0 ? n_prompt : 1));
    if (!tokens || llama_tokenize(vocab, prompt, (int32_t)strlen(prompt), tokens, n_prompt, true, true) < 0)
        return fprintf(stderr, "llama_greedy: cannot tokenize the prompt\n"), 1;
    struct llama_context_params cp = llama_context_default_params();
    cp.n_ctx = (uint32_t)(n_prompt + n_predict);
    cp.n_batch = (uint32_t)n_prompt;
    cp.n_threads = cp.n_threads_batch = 1;
    struct llama_context *ctx = llama_init_from_model(model, cp);
    struct llama_sampler *smpl = llama_sampler_chain_init(llama_sampler_chain_default_params());
    if (!ctx || !smpl) return fprintf(stderr, "llama_greedy: cannot create the context\n"), 1;
    llama_sampler_chain_add(smpl, llama_sampler_init_greedy());
    struct llama_batch batch = llama_batch_get_one(tokens, n_prompt);
    llama_token next;
    for (int n = 0; n < n_predict; n++) {
        if (llama_decode(ctx, batch)) return fprintf(stderr, "llama_greedy: llama_decode failed\n"), 1;
        next = llama_sampler_sample(smpl, ctx, -1);
        if (llama_vocab_is_eog(vocab, next)) break;
        char piece[256];
        int len = llama_token_to_piece(vocab, next, piece, sizeof piece, 0, true);
        if (len < 0) return fprintf(stderr, "llama_greedy: token %d has no text\n", next), 1;
        fwrite(piece, 1, (size_t)len, stdout);
        fflush(stdout);
        batch = llama_batch_get_one(&next, 1);
    }
    llama_sampler_free(smpl);
    llama_free(ctx);
    llama_model_free(model);
    free(tokens);
    return 0;
}
