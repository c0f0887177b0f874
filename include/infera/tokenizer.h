/*
 * tokenizer.h -- text <-> token ids for GGUF language models, as llama.cpp does it.
 *
 * A tokenizer is built from the `tokenizer.ggml.*` metadata of a GGUF file: SentencePiece-style
 * (`tokenizer.ggml.model = "llama"`: score-driven merges, `▁` for spaces, <0xXX> byte fallback) or
 * byte-level BPE (`"gpt2"`: merge ranks, the GPT-2 byte-to-unicode map, and the pre-tokenizer of
 * `tokenizer.ggml.pre`).  BOS/EOS follow the file (`add_bos_token`, `add_eos_token`).
 *
 *     inf_tokenizer *t = NULL;
 *     inf_error err;
 *     if (inf_tokenizer_load("model.gguf", &t, &err) != INF_OK) { ... err.message ... }
 *     int32_t ids[256];
 *     size_t n = 0;
 *     inf_tokenizer_encode(t, text, strlen(text), true, ids, 256, &n, &err);   // BOS as the file says
 *     ...
 *     inf_tokenizer_free(t);
 *
 * A tokenizer is immutable after loading: encode and piece may be called from many threads at once.
 */
#ifndef INFERA_TOKENIZER_H
#define INFERA_TOKENIZER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "infera.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct inf_tokenizer inf_tokenizer;

/* Loads the tokenizer of a GGUF file (only the metadata is read).  INF_ENOENT / INF_EIO when the
 * file cannot be read, INF_EFORMAT for malformed metadata, INF_EUNSUPPORTED for an unknown
 * tokenizer model or pre-tokenizer (the message names it). */
INF_API inf_status inf_tokenizer_load(const char *gguf_path, inf_tokenizer **out, inf_error *err);

/* Encodes len bytes of UTF-8 text (invalid bytes go through byte fallback).  add_special adds BOS
 * (and EOS) as the file's add_bos_token / add_eos_token say, and recognises control and
 * user-defined tokens written in the text (e.g. "<|im_start|>").  *n_out receives the number of
 * ids the text needs, even when cap is too small: then INF_ERANGE and ids holds the first cap. */
INF_API inf_status inf_tokenizer_encode(const inf_tokenizer *t, const char *text, size_t len, bool add_special,
                                        int32_t *ids, size_t cap, size_t *n_out, inf_error *err);
/* As inf_tokenizer_encode, into an array it allocates (*ids, free() it) of the *n_out ids the
 * text needs.  Usually len + 2 or fewer, but not always: a byte-level BPE vocabulary encodes each
 * invalid UTF-8 byte as U+FFFD, which can take two or three tokens (falcon: 2).  INF_ENOMEM. */
INF_API inf_status inf_tokenizer_encode_alloc(const inf_tokenizer *t, const char *text, size_t len, bool add_special,
                                              int32_t **ids, size_t *n_out, inf_error *err);

/* The text of one token as it appears in generated output (SPM `▁` as a space, byte tokens as
 * their byte, BPE pieces mapped back to bytes; control tokens give no text).  Writes at most cap
 * bytes (not NUL-terminated); *n gets the full length (the piece was cut when *n > cap).
 * INF_ERANGE for an id outside the vocabulary. */
INF_API inf_status inf_tokenizer_piece(const inf_tokenizer *t, int32_t id, char *buf, size_t cap, size_t *n);
/* Appends id's text (whole, as inf_tokenizer_piece gives it) to the NUL-terminated *text of *len bytes in a
 * buffer of *cap bytes, growing it (realloc) when needed.  INF_ENOMEM leaves *text as it was. */
INF_API inf_status inf_tokenizer_append_piece(const inf_tokenizer *t, int32_t id, char **text, size_t *len,
                                              size_t *cap);

/* Special ids (-1 when the file has none) and facts. */
INF_API int32_t inf_tokenizer_bos(const inf_tokenizer *t);
INF_API int32_t inf_tokenizer_eos(const inf_tokenizer *t);
INF_API int32_t inf_tokenizer_n_vocab(const inf_tokenizer *t);
INF_API bool inf_tokenizer_add_bos(const inf_tokenizer *t);
/* True for an end-of-generation token (EOS, EOT, or a token the file marks as ending a turn). */
INF_API bool inf_tokenizer_is_eog(const inf_tokenizer *t, int32_t id);

INF_API void inf_tokenizer_free(inf_tokenizer *t);

#ifdef __cplusplus
}
#endif
#endif
