/*
 * llm_logits.c -- test tool: the logits of every position of a token
 * sequence, as a float32 .npy [n_tokens, n_vocab], for comparison with an
 * independent oracle (PyTorch's logits of tests/llm/models, test_reference.sh).
 * usage: llm_logits MODEL.gguf OUT.npy ID...
 */
#include <stdio.h>
#include <stdlib.h>

#include "infera/llm.h"

int main(int argc, char **argv) {
    if (argc < 4) {
        fprintf(stderr, "usage: llm_logits MODEL.gguf OUT.npy ID...\n");
        return 2;
    }
    int n = argc - 3;
    int32_t *ids = malloc(sizeof(int32_t) * (size_t)n);
    for (int i = 0; i < n; i++) ids[i] = (int32_t)atoi(argv[3 + i]);
    inf_error err;
    inf_llm_model *m;
    inf_llm_context *c;
    if (inf_llm_model_load(argv[1], &m, &err)) {
        fprintf(stderr, "%s\n", err.message);
        return 1;
    }
    inf_llm_context_options o;
    inf_llm_context_options_init(&o);
    o.n_batch = o.n_logits = n;
    o.n_ctx = n + 8;
    const float *logits;
    if (inf_llm_context_new(m, &o, &c, &err) || inf_llm_context_eval(c, ids, n, true, &logits, &err)) {
        fprintf(stderr, "%s\n", err.message);
        return 1;
    }
    int V = inf_llm_model_get_info(m)->n_vocab;
    FILE *f = fopen(argv[2], "wb");
    if (!f) return 1;
    char header[128];
    int len = snprintf(header, sizeof header, "{'descr': '<f4', 'fortran_order': False, 'shape': (%d, %d), }", n, V);
    int total = 10 + len + 1, pad = (64 - total % 64) % 64;
    unsigned short hl = (unsigned short)(len + pad + 1);
    fwrite("\x93NUMPY\x01\x00", 1, 8, f);
    fwrite(&hl, 2, 1, f);
    fwrite(header, 1, (size_t)len, f);
    for (int i = 0; i < pad; i++) fputc(' ', f);
    fputc('\n', f);
    fwrite(logits, sizeof(float), (size_t)n * V, f);
    fclose(f);
    inf_llm_context_free(c);
    inf_llm_model_free(m);
    free(ids);
    return 0;
}
