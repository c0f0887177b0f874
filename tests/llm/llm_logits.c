/*
 * llm_logits.c -- test tool: the logits of every position of a token
 * sequence, as a float32 .npy [n_tokens, n_vocab], for comparison with an
 * independent oracle (PyTorch's logits of tests/llm/models, test_reference.sh).
 * usage: llm_logits MODEL.gguf OUT.npy ID...
 * With --dequant, a tensor converted to float by the engine's row kernels
 * (quant.h to_float), [rows, cols] (test_kquants.sh compares it with gguf-py):
 *        llm_logits --dequant MODEL.gguf TENSOR OUT.npy
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "infera/llm.h"
#include "llm/gguf.h"
#include "llm/quant.h"

static int write_npy(const char *path, const float *x, long rows, long cols) {
    FILE *f = fopen(path, "wb");
    if (!f) return 1;
    char header[128];
    int len = snprintf(header, sizeof header, "{'descr': '<f4', 'fortran_order': False, 'shape': (%ld, %ld), }", rows, cols);
    int total = 10 + len + 1, pad = (64 - total % 64) % 64;
    unsigned short hl = (unsigned short)(len + pad + 1);
    fwrite("\x93NUMPY\x01\x00", 1, 8, f);
    fwrite(&hl, 2, 1, f);
    fwrite(header, 1, (size_t)len, f);
    for (int i = 0; i < pad; i++) fputc(' ', f);
    fputc('\n', f);
    fwrite(x, sizeof(float), (size_t)rows * (size_t)cols, f);
    return fclose(f) != 0;
}

static int dequant(const char *model, const char *name, const char *out) {
    inf_error err;
    inf__gguf *g;
    if (inf__gguf_open(model, &g, &err)) {
        fprintf(stderr, "%s\n", err.message);
        return 1;
    }
    const inf__gguf_tensor *t = inf__gguf_find_tensor(g, name);
    const inf__llm_qtype *q = t ? inf__llm_qtype_get(t->type, false) : NULL;
    if (!t || !q) {
        fprintf(stderr, "%s: no tensor '%s' of a supported type\n", model, name);
        return 1;
    }
    long cols = (long)t->ne[0], rows = (long)(t->ne[1] * t->ne[2] * t->ne[3]);
    float *x = malloc(sizeof(float) * (size_t)rows * (size_t)cols);
    if (!x) return 1;
    size_t rb = inf__llm_row_bytes(q, cols);
    for (long r = 0; r < rows; r++) q->to_float((const uint8_t *)t->data + (size_t)r * rb, x + (size_t)r * cols, cols);
    int rc = write_npy(out, x, rows, cols);
    free(x);
    inf__gguf_close(g);
    return rc;
}

int main(int argc, char **argv) {
    if (argc == 5 && !strcmp(argv[1], "--dequant")) return dequant(argv[2], argv[3], argv[4]);
    if (argc < 4) {
        fprintf(stderr, "usage: llm_logits MODEL.gguf OUT.npy ID...\n       llm_logits --dequant MODEL.gguf TENSOR OUT.npy\n");
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
    if (write_npy(argv[2], logits, n, V)) return 1;
    inf_llm_context_free(c);
    inf_llm_model_free(m);
    free(ids);
    return 0;
}
