/*
 * ttft_probe.c -- `infera generate`'s time to first token, but generation
 * after generation in one process (bench/llm/ttft.py's CLI side when both
 * sides are measured warm or both cold).
 *
 * The CLI's own `ttft_ms` is the first generation right after its load, which
 * has just written the weights onto their pages; a server's request runs on
 * weights its last request read.  This probe makes the CLI's calls
 * (cmd_generate.c: the tokenizer and the model loaded from the file, one
 * context with --threads and 5 logit rows, the prompt encoded with BOS as
 * the file says, inf_llm_generate greedy with the tokenizer's end tokens)
 * and then answers commands on stdin, one per line:
 *   gen TEXT     generate one token from TEXT; prints
 *                {"ttft_ms","prompt_tokens","token"} (ttft_ms: inf_llm_generate's,
 *                the CLI's --json figure)
 *   thrash MB    write and read MB MiB of memory (evicts the caches: a
 *                "cold" measurement of either side follows one); prints {"ok":1}
 * usage: ttft_probe MODEL.gguf [--threads N]
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "infera/llm.h"
#include "infera/tokenizer.h"

static int die(const char *what, const inf_error *err) {
    fprintf(stderr, "ttft_probe: %s: %s\n", what, err->message);
    return 1;
}

static void thrash(size_t mb) {
    static unsigned char *buf;
    static size_t have;
    size_t n = mb << 20;
    if (have < n) {
        free(buf);
        buf = malloc(n);
        have = buf ? n : 0;
        if (!buf) return;
    }
    volatile unsigned sum = 0;
    memset(buf, (int)(mb & 0xff), n);
    for (size_t i = 0; i < n; i += 64)
        sum += buf[i];
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: ttft_probe MODEL.gguf [--threads N]\n");
        return 2;
    }
    int threads = 1;
    for (int i = 2; i + 1 < argc; i++)
        if (!strcmp(argv[i], "--threads")) threads = atoi(argv[++i]);
    inf_error err = {0};
    inf_tokenizer *tok = NULL;
    inf_llm_model *m = NULL;
    inf_llm_context *c = NULL;
    if (inf_tokenizer_load(argv[1], &tok, &err) != INF_OK) return die("tokenizer", &err);
    if (inf_llm_model_load(argv[1], &m, &err) != INF_OK) return die("model", &err);
    inf_llm_context_options co;
    inf_llm_context_options_init(&co);
    co.n_threads = threads;
    co.n_logits = 5; /* the CLI's: --draft-tokens (4) + 1 */
    if (inf_llm_context_new(m, &co, &c, &err) != INF_OK) return die("context", &err);
    int n_vocab = inf_tokenizer_n_vocab(tok), n_stops = 0;
    int32_t *stops = malloc((size_t)n_vocab * sizeof *stops);
    if (!stops) return 1;
    for (int32_t id = 0; id < n_vocab; id++)
        if (inf_tokenizer_is_eog(tok, id)) stops[n_stops++] = id;
    static char line[1 << 16];
    static int32_t ids[1 << 16];
    while (fgets(line, sizeof line, stdin)) {
        line[strcspn(line, "\n")] = 0;
        if (!strncmp(line, "thrash ", 7)) {
            thrash((size_t)atol(line + 7));
            printf("{\"ok\":1}\n");
        } else if (!strncmp(line, "gen ", 4)) {
            size_t n = 0;
            if (inf_tokenizer_encode(tok, line + 4, strlen(line + 4), true, ids, sizeof ids / sizeof ids[0], &n,
                                     &err) != INF_OK)
                return die("encode", &err);
            inf_llm_generate_options go;
            inf_llm_generate_options_init(&go);
            go.max_tokens = 1;
            go.sampling.temperature = 0;
            go.stop_ids = stops;
            go.n_stop_ids = n_stops;
            inf_llm_generate_stats st;
            if (inf_llm_generate(c, NULL, ids, (int)n, &go, NULL, NULL, &st, &err) != INF_OK)
                return die("generate", &err);
            printf("{\"ttft_ms\":%.3f,\"prompt_tokens\":%d}\n", st.ttft_ms, st.prompt_tokens);
        } else {
            fprintf(stderr, "ttft_probe: unknown command '%s'\n", line);
            return 2;
        }
        fflush(stdout);
    }
    free(stops);
    inf_llm_context_free(c);
    inf_llm_model_free(m);
    inf_tokenizer_free(tok);
    return 0;
}
