/*
 * tokenizer_spm.c -- SentencePiece-style encoding (`tokenizer.ggml.model = "llama"`).
 *
 * The text is escaped (every ' ' becomes U+2581 `▁`; the caller adds the leading space when the file
 * asks for a space prefix), merged by token score (tokenizer_merge.c), and every final symbol that is
 * not a token is written as its bytes through the <0xXX> byte tokens (the unknown token when a byte
 * token is missing).
 */
#include <string.h>

#include "core/core.h"
#include "llm/tokenizer.h"

static const char SPM_SPACE[] = "\xE2\x96\x81"; /* U+2581 */

static char *escape_spaces(const char *text, size_t len, size_t *out_len) {
    size_t spaces = 0;
    for (size_t i = 0; i < len; i++) spaces += text[i] == ' ';
    char *s = inf__malloc(len + 2 * spaces + 1);
    if (!s) return NULL;
    size_t o = 0;
    for (size_t i = 0; i < len; i++) {
        if (text[i] == ' ') {
            memcpy(s + o, SPM_SPACE, 3);
            o += 3;
        } else {
            s[o++] = text[i];
        }
    }
    s[o] = 0;
    *out_len = o;
    return s;
}

inf_status inf__tok_spm_encode(const inf_tokenizer *t, const char *text, size_t len, inf__tok_out *o, inf_error *err) {
    size_t n = 0;
    char *word = escape_spaces(text, len, &n);
    if (!word) return inf_error_set(err, INF_ENOMEM, "tokenizer: no memory for %zu bytes of text", len);
    inf__tok_symbol *syms = NULL;
    int32_t count = 0;
    inf_status st = inf__tok_merge_word(t, word, n, &syms, &count, err);
    if (st == INF_OK) {
        for (int32_t i = 0; i < count; i = syms[i].next) {
            const inf__tok_symbol *s = &syms[i];
            if (s->id >= 0) {
                inf__tok_out_push(o, s->id);
            } else {
                for (int32_t b = 0; b < s->n; b++) {
                    int32_t id = t->byte_token[(unsigned char)word[s->start + b]];
                    if (id < 0) id = t->unk;
                    if (id >= 0) inf__tok_out_push(o, id);
                }
            }
            if (s->next < 0) break;
        }
    }
    inf__free(syms);
    inf__free(word);
    return st;
}
