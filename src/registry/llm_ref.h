/*
 * llm_ref.h -- a GGUF language-model reference (shared/DESIGN.md §4: a path
 * to a .gguf file, or NAME, NAME@VERSION, NAME@ALIAS in the registry) turned
 * into the path of the file to map (llm_ref.c).  Used by `infera generate`,
 * `infera serve` and the SQL AI functions; ONNX references go through the
 * runtime core (src/runtime/model.h) instead.
 */
#ifndef INF_REGISTRY_LLM_REF_H
#define INF_REGISTRY_LLM_REF_H

#include <stdbool.h>
#include <stddef.h>

#include "infera/infera.h"

/* A GGUF model reference (a file, or NAME[@VERSION|@ALIAS] in the registry,
 * artifact SHA-256 checked) -> the path of the file. */
inf_status inf__llm_ref_resolve(const char *ref, char *path, size_t size, inf_error *err);
/* The same with a registry home / URL (NULL: the environment's). */
inf_status inf__llm_ref_resolve_at(const char *ref, const char *home, const char *registry_url, char *path,
                                   size_t size, inf_error *err);

/* Whether REF names a GGUF file: an existing file starting with the GGUF
 * magic, or a registry version whose artifact does (only then is the artifact
 * hashed, as above); *path gets the file's path.  For `infera info`, which
 * reads ONNX references its own way. */
bool inf__llm_ref_names_gguf(const char *ref, char *path, size_t size);

#endif /* INF_REGISTRY_LLM_REF_H */
