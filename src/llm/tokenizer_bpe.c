/*
 * tokenizer_bpe.c -- byte-level BPE encoding (`tokenizer.ggml.model = "gpt2"`).
 *
 * The text is decoded to code points (invalid UTF-8 becomes U+FFFD, as in llama.cpp), split into
 * words by the file's pre-tokenizer (tokenizer_pretok.c), each word's UTF-8 bytes are mapped through
 * the GPT-2 byte-to-unicode table, and the mapped word is merged by rank (tokenizer_merge.c).  With
 * ignore_merges (llama3 family) a word that is itself a token is emitted whole.  A final symbol that
 * is not a token falls back to the tokens of its single bytes, where they exist.
 */
#include <string.h>

#include "core/core.h"
#include "llm/tokenizer.h"

/* Maps the UTF-8 of cps[0..n) through the GPT-2 byte map into buf (at most 8 bytes per cp). */
static size_t byte_encode_word(const uint32_t *cps, size_t n, char *buf) {
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        char raw[4];
        int k = inf__utf8_encode(cps[i], raw);
        for (int j = 0; j < k; j++) o += (size_t)inf__utf8_encode(inf__gpt2_byte_to_cp((uint8_t)raw[j]), buf + o);
    }
    return o;
}

static inf_status encode_word(const inf_tokenizer *t, const char *word, size_t n, inf__tok_out *o, inf_error *err) {
    if (t->ignore_merges) {
        int32_t id = inf__tok_find(t, word, n);
        if (id >= 0) {
            inf__tok_out_push(o, id);
            return INF_OK;
        }
    }
    inf__tok_symbol *syms = NULL;
    int32_t count = 0;
    inf_status st = inf__tok_merge_word(t, word, n, &syms, &count, err);
    if (st != INF_OK) return st;
    for (int32_t i = 0; i < count; i = syms[i].next) {
        const inf__tok_symbol *s = &syms[i];
        if (s->id >= 0) {
            inf__tok_out_push(o, s->id);
        } else {
            for (int32_t b = 0; b < s->n; b++) {
                int32_t id = inf__tok_find(t, word + s->start + b, 1);
                if (id >= 0) inf__tok_out_push(o, id);
            }
        }
        if (s->next < 0) break;
    }
    inf__free(syms);
    return INF_OK;
}

inf_status inf__tok_bpe_encode(const inf_tokenizer *t, const char *text, size_t len, inf__tok_out *o, inf_error *err) {
    uint32_t *cps = inf__malloc((len ? len : 1) * sizeof *cps);
    char *buf = inf__malloc(len * 8 + 8);
    size_t *lens = NULL, n_words = 0, n = 0;
    inf_status st = INF_OK;
    if (!cps || !buf) {
        st = inf_error_set(err, INF_ENOMEM, "tokenizer: no memory for %zu bytes of text", len);
        goto done;
    }
    for (size_t i = 0; i < len;) cps[n++] = inf__utf8_decode(text, len, &i);
    st = inf__tok_pretokenize(t->pre, cps, n, &lens, &n_words, err);
    size_t at = 0;
    for (size_t w = 0; st == INF_OK && w < n_words; w++) {
        size_t bytes = byte_encode_word(cps + at, lens[w], buf);
        at += lens[w];
        st = encode_word(t, buf, bytes, o, err);
    }
done:
    inf__free(lens);
    inf__free(buf);
    inf__free(cps);
    return st;
}
