/*
 * generator.h -- a GGUF language model for the SQL functions (sqlite_ext.c:
 * infera_generate / infera_embed, pg/infera_pg.c: infera.generate /
 * infera.embed).  One model reference resolved once (a file or the registry,
 * registry/llm_ref.h inf__llm_ref_resolve), one tokenizer, one context (one
 * thread); the extensions keep one per reference per connection/backend.
 * Generation is greedy and stops at the model's end-of-generation tokens:
 * exactly `infera generate --temperature 0` (the same engine loop).
 */
#ifndef INF_SQL_GENERATOR_H
#define INF_SQL_GENERATOR_H

#include <stddef.h>

#include "infera/infera.h"

typedef struct inf__generator inf__generator;

/* home / registry_url: the registry (NULL: INFERA_HOME / INFERA_REGISTRY). */
inf_status inf__generator_new(const char *ref, const char *home, const char *registry_url, inf__generator **out,
                              inf_error *err);
void inf__generator_free(inf__generator *g);
const char *inf__generator_ref(const inf__generator *g);
/* The greedy completion of prompt (max_tokens <= 0: 128) into *text
 * (malloc'd, NUL-terminated, *len bytes). */
inf_status inf__generator_generate(inf__generator *g, const char *prompt, size_t prompt_len, int max_tokens,
                                   char **text, size_t *len, inf_error *err);
/* The mean-pooled, L2-normalised final hidden state of text as a JSON array
 * (malloc'd). */
inf_status inf__generator_embed_json(inf__generator *g, const char *text, size_t text_len, char **json,
                                     inf_error *err);

#endif
