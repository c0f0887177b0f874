/*
 * model_meta.c -- read access to a loaded model's GGUF metadata strings for
 * the layers above the engine (the server's chat templates, pooling keys).
 * One function over the gguf reader: the model keeps its file mapped, so the
 * strings are borrowed from the mapping.
 */
#include "infera/llm.h"
#include "llm/llm_int.h"

const char *inf_llm_model_meta_str(const inf_llm_model *m, const char *key, size_t *len) {
    const char *s = NULL;
    size_t n = 0;
    if (!m || !key) return NULL;
    const inf__gguf *g = inf__llm_model_gguf(m);
    if (!g || inf__gguf_get_str(g, key, &s, &n, NULL) != INF_OK) return NULL;
    if (len) *len = n;
    return s;
}
