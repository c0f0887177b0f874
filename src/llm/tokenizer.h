/*
 * tokenizer.h -- internals of the GGUF tokenizers (include/infera/tokenizer.h is the public face).
 *
 * DESIGN: one immutable vocabulary object serves both tokenizer families.  Token texts live in one
 * pool; a hash maps text -> id (the last duplicate wins, as in llama.cpp); BPE merge ranks live in a
 * second hash keyed by the ids of the two halves.  Encoding is split by concept:
 *   tokenizer.c          loading from GGUF, special-token splitting, BOS/EOS, pieces, public API;
 *   tokenizer_merge.c    the bigram-merge loop both families share (a heap of candidate pairs);
 *   tokenizer_spm.c      SentencePiece: `▁` escaping, score-ordered merges, <0xXX> byte fallback;
 *   tokenizer_bpe.c      byte-level BPE: pre-tokenize, GPT-2 byte map, rank-ordered merges;
 *   tokenizer_pretok.c   the pre-tokenizer splitters of `tokenizer.ggml.pre`, written by hand;
 *   tokenizer_unicode.c  UTF-8 decoding and code point classes (table generated from unicodedata).
 * Everything follows llama.cpp's llama-vocab.cpp/unicode.cpp, the reference for GGUF files.
 */
#ifndef INF_LLM_TOKENIZER_H
#define INF_LLM_TOKENIZER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "infera/tokenizer.h"
#include "core/core.h"
#include "llm/gguf.h"

/* Build a tokenizer from an open GGUF file (metadata only; g may be closed afterwards). */
inf_status inf__llm_tokenizer_from_gguf(const inf__gguf *g, inf_tokenizer **out, inf_error *err);

/* Token types as GGUF's tokenizer.ggml.token_type stores them. */
enum inf__tok_type {
    INF__TOK_NORMAL = 1,
    INF__TOK_UNKNOWN = 2,
    INF__TOK_CONTROL = 3,
    INF__TOK_USER_DEFINED = 4,
    INF__TOK_UNUSED = 5,
    INF__TOK_BYTE = 6,
};

enum inf__tok_model { INF__TOK_MODEL_SPM, INF__TOK_MODEL_BPE };

/* Pre-tokenizer families (several `tokenizer.ggml.pre` names share one). */
enum inf__tok_pre {
    INF__PRE_NONE,           /* SPM */
    INF__PRE_DEFAULT,        /* "default" or no name: llama.cpp's fallback regex list */
    INF__PRE_GPT2,           /* gpt-2, mpt, olmo, phi-2, ... */
    INF__PRE_LLAMA3,         /* llama3, llama-bpe, dbrx, smaug, chatglm4 */
    INF__PRE_QWEN2,          /* qwen2, stablelm2, deepseek-r1-qwen */
    INF__PRE_QWEN35,         /* qwen35: qwen2 with marks (\p{M}) inside letter runs */
    INF__PRE_STARCODER,      /* starcoder, refact, command-r, smollm, codeshell, exaone, minerva */
    INF__PRE_DEEPSEEK_CODER, /* deepseek-coder */
    INF__PRE_DEEPSEEK_LLM,   /* deepseek-llm */
    INF__PRE_FALCON,         /* falcon */
};

struct inf_tokenizer {
    enum inf__tok_model model;
    enum inf__tok_pre pre;
    bool add_bos, add_eos, add_space_prefix, ignore_merges;
    int32_t n_vocab;
    int32_t bos, eos, eot, eom, unk;
    int32_t fim[3]; /* fill-in-the-middle pad, repository, file separator (tokenizer.ggml.fim_{pad,rep,sep}_token_id) */
    char *pool;          /* all token texts, back to back */
    uint32_t *text_off;  /* [n_vocab] */
    uint32_t *text_len;  /* [n_vocab] */
    float *scores;       /* [n_vocab] (0 when the file has none) */
    uint8_t *types;      /* [n_vocab] enum inf__tok_type */
    bool *eog;           /* [n_vocab] ends generation */
    int32_t *text_hash;  /* open addressing: id or -1 */
    uint32_t text_mask;
    struct inf__tok_merge { int32_t left, right, rank; } *merges; /* open addressing, left -1 = empty */
    uint32_t merge_mask;
    int32_t *specials;   /* control / user-defined / unknown ids, longest text first */
    int32_t n_specials;
    int32_t byte_token[256]; /* SPM: <0xXX>; BPE: the token of the mapped byte (-1 if none) */
};

/* Output sink: ids past cap are counted, not written. */
typedef struct {
    int32_t *ids;
    size_t cap;
    size_t n;
} inf__tok_out;

static inline void inf__tok_out_push(inf__tok_out *o, int32_t id) {
    if (o->n < o->cap) o->ids[o->n] = id;
    o->n++;
}

static inline const char *inf__tok_text(const inf_tokenizer *t, int32_t id, size_t *len) {
    *len = t->text_len[id];
    return t->pool + t->text_off[id];
}

int32_t inf__tok_find(const inf_tokenizer *t, const char *s, size_t n); /* -1 if absent */
int32_t inf__tok_merge_rank(const inf_tokenizer *t, int32_t left, int32_t right); /* -1 if none */

/* ---- the shared merge loop (tokenizer_merge.c) ---- */
typedef struct {
    int32_t start, n;  /* bytes of the word */
    int32_t prev, next;
    int32_t id;        /* token of the text, -1 if not in the vocabulary */
} inf__tok_symbol;

/* Splits word (n bytes) into UTF-8 characters and merges neighbours, best pair first: SPM by the
 * highest score of the joined text (when it is a token), BPE by the lowest merge rank.  On return
 * syms[0..*n_syms) holds the symbols in order, merged-away ones with n == 0.  Allocates its work
 * arrays; INF_ENOMEM. */
inf_status inf__tok_merge_word(const inf_tokenizer *t, const char *word, size_t n, inf__tok_symbol **syms,
                               int32_t *n_syms, inf_error *err);

/* ---- families ---- */
inf_status inf__tok_spm_encode(const inf_tokenizer *t, const char *text, size_t len, inf__tok_out *o,
                               inf_error *err);
inf_status inf__tok_bpe_encode(const inf_tokenizer *t, const char *text, size_t len, inf__tok_out *o,
                               inf_error *err);

/* ---- pre-tokenizer (tokenizer_pretok.c) ---- */
/* Splits cps[0..n) into words; *lens receives the word lengths in code points (caller frees with
 * inf__free).  INF_ENOMEM. */
inf_status inf__tok_pretokenize(enum inf__tok_pre pre, const uint32_t *cps, size_t n, size_t **lens,
                                size_t *n_words, inf_error *err);
/* The pre-tokenizer family of a `tokenizer.ggml.pre` name; false when unknown. */
bool inf__tok_pre_from_name(const char *name, size_t len, enum inf__tok_pre *pre, bool *ignore_merges,
                            bool *add_bos);

/* ---- Unicode (tokenizer_unicode.c) ---- */
enum inf__uclass {
    INF__UCLASS_UNDEFINED = 0x01,
    INF__UCLASS_NUMBER = 0x02,
    INF__UCLASS_LETTER = 0x04,
    INF__UCLASS_SEPARATOR = 0x08,
    INF__UCLASS_MARK = 0x10,
    INF__UCLASS_PUNCT = 0x20,
    INF__UCLASS_SYMBOL = 0x40,
    INF__UCLASS_CONTROL = 0x80,
    INF__UCLASS_WHITESPACE = 0x100, /* a flag on top of the class */
    INF__UCLASS_CASED = 0x200,      /* Lu, Ll, Lt (with LETTER) */
};
/* Class bits of a code point (0 for "no code point": the out-of-range sentinel). */
unsigned inf__unicode_flags(uint32_t cp);
/* Decodes one code point at s[*i] (advancing *i); an invalid sequence gives U+FFFD and advances one
 * byte, as llama.cpp does. */
uint32_t inf__utf8_decode(const char *s, size_t n, size_t *i);
/* inf__utf8_encode: core/core.h */
/* Length of the UTF-8 sequence a lead byte announces (1 for continuation/invalid bytes). */
size_t inf__utf8_len(unsigned char lead);
/* GPT-2 byte-to-unicode map: the code point byte b stands for, and the reverse (-1 if none). */
uint32_t inf__gpt2_byte_to_cp(uint8_t b);
int inf__gpt2_cp_to_byte(uint32_t cp);

#endif /* INF_LLM_TOKENIZER_H */
