/*
 * tokenizer.c -- GGUF tokenizers: loading, special tokens, BOS/EOS, pieces and the public API.
 *
 * Loading reads `tokenizer.ggml.*` (model, pre, tokens, scores, token_type, merges, the special
 * ids and add_* flags) with llama.cpp's defaults for keys a file leaves out (SPM: BOS 1, EOS 2,
 * UNK 0, add BOS and a space prefix; BPE: BOS/EOS 11, BOS only for the llama3 family).  Encoding
 * first cuts the text around special tokens (user-defined always, control/unknown only when the
 * caller asks for special handling; longest text first, as llama.cpp's tokenizer_st_partition),
 * then encodes each plain fragment with the family's encoder.
 */
#include <stdlib.h>
#include <string.h>

#include "core/core.h"
#include "llm/tokenizer.h"

/* ---- hashes ---- */
static uint32_t hash_bytes(const char *s, size_t n) {
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)s[i]) * 16777619u;
    return h;
}

static uint32_t hash_pair(int32_t a, int32_t b) {
    uint64_t x = ((uint64_t)(uint32_t)a << 32) | (uint32_t)b;
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    return (uint32_t)x;
}

static uint32_t table_size_for(uint64_t n) {
    uint32_t size = 16;
    while (size < 2 * n) size *= 2;
    return size;
}

int32_t inf__tok_find(const inf_tokenizer *t, const char *s, size_t n) {
    for (uint32_t i = hash_bytes(s, n) & t->text_mask;; i = (i + 1) & t->text_mask) {
        int32_t id = t->text_hash[i];
        if (id < 0) return -1;
        if (t->text_len[id] == n && memcmp(t->pool + t->text_off[id], s, n) == 0) return id;
    }
}

/* Later duplicates replace earlier ones, as llama.cpp's token_to_id map does. */
static void text_insert(inf_tokenizer *t, int32_t id) {
    size_t n;
    const char *s = inf__tok_text(t, id, &n);
    for (uint32_t i = hash_bytes(s, n) & t->text_mask;; i = (i + 1) & t->text_mask) {
        int32_t other = t->text_hash[i];
        if (other < 0 || (t->text_len[other] == n && memcmp(t->pool + t->text_off[other], s, n) == 0)) {
            t->text_hash[i] = id;
            return;
        }
    }
}

int32_t inf__tok_merge_rank(const inf_tokenizer *t, int32_t left, int32_t right) {
    if (!t->merges) return -1;
    for (uint32_t i = hash_pair(left, right) & t->merge_mask;; i = (i + 1) & t->merge_mask) {
        const struct inf__tok_merge *m = &t->merges[i];
        if (m->left < 0) return -1;
        if (m->left == left && m->right == right) return m->rank;
    }
}

/* The first rank of a pair wins (llama.cpp's map emplace keeps the first). */
static void merge_insert(inf_tokenizer *t, int32_t left, int32_t right, int32_t rank) {
    for (uint32_t i = hash_pair(left, right) & t->merge_mask;; i = (i + 1) & t->merge_mask) {
        struct inf__tok_merge *m = &t->merges[i];
        if (m->left == left && m->right == right) return;
        if (m->left < 0) {
            m->left = left;
            m->right = right;
            m->rank = rank;
            return;
        }
    }
}

/* ---- loading ---- */
static const char *KEY_MODEL = "tokenizer.ggml.model";
static const char *KEY_PRE = "tokenizer.ggml.pre";
static const char *KEY_TOKENS = "tokenizer.ggml.tokens";
static const char *KEY_SCORES = "tokenizer.ggml.scores";
static const char *KEY_TYPES = "tokenizer.ggml.token_type";
static const char *KEY_MERGES = "tokenizer.ggml.merges";

static inf_status load_tokens(inf_tokenizer *t, const inf__gguf *g, const char *path, inf_error *err) {
    enum inf__gguf_type et;
    uint64_t n;
    const void *data;
    inf_status st = inf__gguf_get_arr(g, KEY_TOKENS, &et, &n, &data, err);
    if (st != INF_OK) return st;
    if (et != INF__GGUF_STRING || n == 0 || n > (uint64_t)INT32_MAX / 4)
        return inf_error_set(err, INF_EFORMAT, "%s: %s must be a non-empty array of strings", path, KEY_TOKENS);
    t->n_vocab = (int32_t)n;
    uint64_t total = 0;
    for (uint64_t i = 0; i < n; i++) {
        const char *s;
        size_t len;
        if ((st = inf__gguf_arr_str(g, KEY_TOKENS, i, &s, &len, err)) != INF_OK) return st;
        total += len;
    }
    if (total > UINT32_MAX)
        return inf_error_set(err, INF_EFORMAT, "%s: token texts total %llu bytes, too many", path,
                             (unsigned long long)total);
    t->pool = inf__malloc(total ? total : 1);
    t->text_off = inf__calloc(n, sizeof *t->text_off);
    t->text_len = inf__calloc(n, sizeof *t->text_len);
    t->scores = inf__calloc(n, sizeof *t->scores);
    t->types = inf__calloc(n, sizeof *t->types);
    t->eog = inf__calloc(n, sizeof *t->eog);
    t->text_mask = table_size_for(n) - 1;
    t->text_hash = inf__malloc(((size_t)t->text_mask + 1) * sizeof *t->text_hash);
    if (!t->pool || !t->text_off || !t->text_len || !t->scores || !t->types || !t->eog || !t->text_hash)
        return inf_error_set(err, INF_ENOMEM, "%s: no memory for a vocabulary of %llu tokens", path,
                             (unsigned long long)n);
    memset(t->text_hash, 0xff, ((size_t)t->text_mask + 1) * sizeof *t->text_hash);
    uint32_t off = 0;
    for (uint64_t i = 0; i < n; i++) {
        const char *s;
        size_t len;
        inf__gguf_arr_str(g, KEY_TOKENS, i, &s, &len, NULL);
        memcpy(t->pool + off, s, len);
        t->text_off[i] = off;
        t->text_len[i] = (uint32_t)len;
        t->types[i] = INF__TOK_NORMAL;
        off += (uint32_t)len;
        text_insert(t, (int32_t)i);
    }
    return INF_OK;
}

/* Optional numeric per-token array (scores: F32 or I32; types: I32). */
static inf_status load_per_token(inf_tokenizer *t, const inf__gguf *g, const char *key, bool is_scores,
                                 const char *path, inf_error *err) {
    if (inf__gguf_find_key(g, key) < 0) return INF_OK;
    enum inf__gguf_type et;
    uint64_t n;
    const void *data;
    inf_status st = inf__gguf_get_arr(g, key, &et, &n, &data, err);
    if (st != INF_OK) return st;
    bool ok_type = et == INF__GGUF_I32 || (is_scores && et == INF__GGUF_F32);
    if (!ok_type || n < (uint64_t)t->n_vocab)
        return inf_error_set(err, INF_EFORMAT, "%s: %s must be an array of %s with %d entries (has %llu)", path,
                             key, is_scores ? "f32 or i32" : "i32", t->n_vocab, (unsigned long long)n);
    for (int32_t i = 0; i < t->n_vocab; i++) {
        const char *p = (const char *)data + (size_t)i * 4;
        if (et == INF__GGUF_F32) {
            memcpy(&t->scores[i], p, 4);
        } else {
            int32_t v;
            memcpy(&v, p, 4);
            if (is_scores) t->scores[i] = (float)v;
            else t->types[i] = (uint8_t)(v >= 1 && v <= 6 ? v : 0);
        }
    }
    return INF_OK;
}

static inf_status load_merges(inf_tokenizer *t, const inf__gguf *g, const char *path, inf_error *err) {
    enum inf__gguf_type et;
    uint64_t n;
    const void *data;
    inf_status st = inf__gguf_get_arr(g, KEY_MERGES, &et, &n, &data, err);
    if (st != INF_OK) return st;
    if (et != INF__GGUF_STRING || n > (uint64_t)INT32_MAX / 4)
        return inf_error_set(err, INF_EFORMAT, "%s: %s must be an array of strings", path, KEY_MERGES);
    t->merge_mask = table_size_for(n) - 1;
    t->merges = inf__malloc(((size_t)t->merge_mask + 1) * sizeof *t->merges);
    if (!t->merges) return inf_error_set(err, INF_ENOMEM, "%s: no memory for %llu merges", path, (unsigned long long)n);
    for (size_t i = 0; i <= t->merge_mask; i++) t->merges[i].left = -1;
    for (uint64_t i = 0; i < n; i++) {
        const char *s;
        size_t len;
        if ((st = inf__gguf_arr_str(g, KEY_MERGES, i, &s, &len, err)) != INF_OK) return st;
        const char *sp = len > 1 ? memchr(s + 1, ' ', len - 1) : NULL; /* first space after the first byte */
        if (!sp) continue;
        int32_t left = inf__tok_find(t, s, (size_t)(sp - s));
        int32_t right = inf__tok_find(t, sp + 1, len - (size_t)(sp - s) - 1);
        if (left >= 0 && right >= 0) merge_insert(t, left, right, (int32_t)i);
    }
    return INF_OK;
}

/* Optional key getters that keep the default when the key is absent. */
static inf_status opt_bool(const inf__gguf *g, const char *key, bool *v, inf_error *err) {
    if (inf__gguf_find_key(g, key) < 0) return INF_OK;
    return inf__gguf_get_bool(g, key, v, err);
}

static inf_status opt_id(const inf_tokenizer *t, const inf__gguf *g, const char *key, int32_t *v, inf_error *err) {
    if (inf__gguf_find_key(g, key) < 0) return INF_OK;
    uint32_t id;
    inf_status st = inf__gguf_get_u32(g, key, &id, err);
    if (st != INF_OK) return st;
    if (id < (uint32_t)t->n_vocab) *v = (int32_t)id; /* out of range: keep the default, as llama.cpp */
    return INF_OK;
}

static inf_status load_special_ids(inf_tokenizer *t, const inf__gguf *g, inf_error *err) {
    static const struct {
        const char *key;
        size_t field;
    } ids[] = {
        {"tokenizer.ggml.bos_token_id", offsetof(inf_tokenizer, bos)},
        {"tokenizer.ggml.eos_token_id", offsetof(inf_tokenizer, eos)},
        {"tokenizer.ggml.eot_token_id", offsetof(inf_tokenizer, eot)},
        {"tokenizer.ggml.eom_token_id", offsetof(inf_tokenizer, eom)},
        {"tokenizer.ggml.unknown_token_id", offsetof(inf_tokenizer, unk)},
        {"tokenizer.ggml.fim_pad_token_id", offsetof(inf_tokenizer, fim[0])},
        {"tokenizer.ggml.fim_rep_token_id", offsetof(inf_tokenizer, fim[1])},
        {"tokenizer.ggml.fim_sep_token_id", offsetof(inf_tokenizer, fim[2])},
    };
    for (size_t i = 0; i < sizeof ids / sizeof ids[0]; i++) {
        int32_t *field = (int32_t *)((char *)t + ids[i].field);
        if (*field >= t->n_vocab) *field = -1;
        inf_status st = opt_id(t, g, ids[i].key, field, err);
        if (st != INF_OK) return st;
    }
    inf_status st = opt_bool(g, "tokenizer.ggml.add_bos_token", &t->add_bos, err);
    if (st == INF_OK) st = opt_bool(g, "tokenizer.ggml.add_eos_token", &t->add_eos, err);
    if (st == INF_OK) st = opt_bool(g, "tokenizer.ggml.add_space_prefix", &t->add_space_prefix, err);
    return st;
}

/* End-of-generation: EOS, EOT, EOM, the fill-in-the-middle pad/repository/file-separator tokens, and the tokens
 * llama.cpp recognises by their text as ending a turn; those it also makes control tokens (parsed as specials)
 * whatever the file's token_type says. */
static void mark_eog(inf_tokenizer *t) {
    static const char *const turn_enders[] = {
        "<|eot_id|>", "<|im_end|>", "<|end|>", "<|return|>", "<|call|>", "<|flush|>", "<|calls|>",
        "<end_of_turn>", "<|endoftext|>", "</s>", "<|eom_id|>", "<EOT>", "_<EOT>", "[EOT]", "[EOS]",
        "<|end_of_text|>", "<end_of_utterance>", "<eos>", "<turn|>", "<|tool_response>",
        "<\xEF\xBD\x9C" "end\xE2\x96\x81" "of\xE2\x96\x81" "sentence\xEF\xBD\x9C>" /* <｜end▁of▁sentence｜> */, "[e~["};
    /* fill-in-the-middle pad, repository and file-separator tokens end generation too: the id the file's
     * tokenizer.ggml.fim_{pad,rep,sep}_token_id key gives, else the first name of each list the vocabulary has
     * (llama.cpp's special_fim_pad/rep/sep_id detection, which also runs only without the key) */
    static const char *const fim_enders[][5] = {
        {"<|fim_pad|>", "<fim-pad>", "<fim_pad>", "<PAD>", "[PAD]"},
        {"<|fim_repo|>", "<|repo_name|>", "<fim-repo>", "<REPO>", "<reponame>"},
        {"<|file_sep|>"},
    };
    int32_t ids[] = {t->eos, t->eot, t->eom};
    for (size_t i = 0; i < 3; i++)
        if (ids[i] >= 0) t->eog[ids[i]] = true;
    for (size_t c = 0; c < sizeof fim_enders / sizeof fim_enders[0]; c++) {
        if (t->fim[c] >= 0) {
            t->eog[t->fim[c]] = true;
            continue;
        }
        for (size_t i = 0; i < 5 && fim_enders[c][i]; i++) {
            int32_t id = inf__tok_find(t, fim_enders[c][i], strlen(fim_enders[c][i]));
            if (id < 0) continue;
            t->eog[id] = true;
            if (t->types[id] != INF__TOK_CONTROL) t->types[id] = INF__TOK_CONTROL;
            break;
        }
    }
    for (size_t i = 0; i < sizeof turn_enders / sizeof turn_enders[0]; i++) {
        int32_t id = inf__tok_find(t, turn_enders[i], strlen(turn_enders[i]));
        if (id < 0) continue;
        t->eog[id] = true;
        if (t->types[id] != INF__TOK_CONTROL) t->types[id] = INF__TOK_CONTROL;
    }
}

static bool is_special_type(uint8_t ty) {
    return ty == INF__TOK_CONTROL || ty == INF__TOK_USER_DEFINED || ty == INF__TOK_UNKNOWN;
}

typedef struct {
    uint32_t len;
    int32_t id;
} len_id;

static int by_length_desc_then_id(const void *a, const void *b) {
    const len_id *x = a, *y = b;
    if (x->len != y->len) return x->len > y->len ? -1 : 1;
    return (x->id > y->id) - (x->id < y->id);
}

static inf_status build_specials(inf_tokenizer *t, const char *path, inf_error *err) {
    int32_t count = 0;
    for (int32_t i = 0; i < t->n_vocab; i++) count += is_special_type(t->types[i]) && t->text_len[i] > 0;
    len_id *order = inf__malloc((count ? (size_t)count : 1) * sizeof *order);
    t->specials = inf__malloc((count ? (size_t)count : 1) * sizeof *t->specials);
    if (!order || !t->specials) {
        inf__free(order);
        return inf_error_set(err, INF_ENOMEM, "%s: no memory for special tokens", path);
    }
    int32_t k = 0;
    for (int32_t i = 0; i < t->n_vocab; i++)
        if (is_special_type(t->types[i]) && t->text_len[i] > 0) order[k++] = (len_id){t->text_len[i], i};
    qsort(order, (size_t)count, sizeof *order, by_length_desc_then_id);
    for (k = 0; k < count; k++) t->specials[k] = order[k].id;
    t->n_specials = count;
    inf__free(order);
    return INF_OK;
}

static void build_byte_tokens(inf_tokenizer *t) {
    static const char hex[] = "0123456789ABCDEF";
    for (int b = 0; b < 256; b++) {
        int32_t id = -1;
        if (t->model == INF__TOK_MODEL_SPM) {
            char name[6] = {'<', '0', 'x', hex[b >> 4], hex[b & 15], '>'};
            id = inf__tok_find(t, name, 6);
            if (id < 0) {
                char one = (char)b;
                id = inf__tok_find(t, &one, 1);
            }
        } else {
            char buf[4];
            int k = inf__utf8_encode(inf__gpt2_byte_to_cp((uint8_t)b), buf);
            id = inf__tok_find(t, buf, (size_t)k);
        }
        t->byte_token[b] = id;
    }
}

static bool str_is(const char *s, size_t len, const char *lit) {
    return strlen(lit) == len && memcmp(s, lit, len) == 0;
}

static inf_status choose_model(inf_tokenizer *t, const inf__gguf *g, const char *path, inf_error *err) {
    const char *s;
    size_t len;
    inf_status st = inf__gguf_get_str(g, KEY_MODEL, &s, &len, err);
    if (st != INF_OK) return st;
    if (str_is(s, len, "llama")) {
        t->model = INF__TOK_MODEL_SPM;
        t->pre = INF__PRE_NONE;
        t->bos = 1, t->eos = 2, t->unk = 0;
        t->add_bos = true, t->add_space_prefix = true;
        return INF_OK;
    }
    if (!str_is(s, len, "gpt2"))
        return inf_error_set(err, INF_EUNSUPPORTED,
                             "%s: tokenizer model '%.*s' is not supported (supported: llama (SentencePiece), gpt2 (BPE))",
                             path, (int)(len > 64 ? 64 : len), s);
    t->model = INF__TOK_MODEL_BPE;
    t->bos = 11, t->eos = 11;
    const char *pre = "default";
    size_t pre_len = 7;
    if (inf__gguf_find_key(g, KEY_PRE) >= 0 && (st = inf__gguf_get_str(g, KEY_PRE, &pre, &pre_len, err)) != INF_OK)
        return st;
    if (!inf__tok_pre_from_name(pre, pre_len, &t->pre, &t->ignore_merges, &t->add_bos))
        return inf_error_set(err, INF_EUNSUPPORTED,
                             "%s: pre-tokenizer '%.*s' (%s) is not supported (supported: gpt-2, llama3/llama-bpe, "
                             "qwen2, starcoder, refact, command-r, smollm, deepseek-coder, falcon, default, ...)",
                             path, (int)(pre_len > 64 ? 64 : pre_len), pre, KEY_PRE);
    return INF_OK;
}

inf_status inf__llm_tokenizer_from_gguf(const inf__gguf *g, inf_tokenizer **out, inf_error *err) {
    *out = NULL;
    const char *path = inf__gguf_path(g);
    if (!path) path = "<gguf>";
    inf_tokenizer *t = inf__calloc(1, sizeof *t);
    if (!t) return inf_error_set(err, INF_ENOMEM, "%s: no memory for a tokenizer", path);
    t->bos = t->eos = t->eot = t->eom = t->unk = t->fim[0] = t->fim[1] = t->fim[2] = -1;
    inf_status st = choose_model(t, g, path, err);
    if (st == INF_OK) st = load_tokens(t, g, path, err);
    if (st == INF_OK) st = load_per_token(t, g, KEY_SCORES, true, path, err);
    if (st == INF_OK) st = load_per_token(t, g, KEY_TYPES, false, path, err);
    if (st == INF_OK && t->model == INF__TOK_MODEL_BPE) st = load_merges(t, g, path, err);
    if (st == INF_OK) st = load_special_ids(t, g, err);
    if (st == INF_OK) mark_eog(t); /* before build_specials: it may make tokens control tokens */
    if (st == INF_OK) st = build_specials(t, path, err);
    if (st != INF_OK) {
        inf_tokenizer_free(t);
        return st;
    }
    build_byte_tokens(t);
    *out = t;
    return INF_OK;
}

/* ---- encoding ---- */
typedef struct {
    int32_t token;   /* -1: plain text */
    size_t off, len; /* plain text: bytes of the input */
} fragment;

typedef struct {
    fragment *items;
    size_t n, cap;
} fragment_list;

static bool fragments_push(fragment_list *l, fragment f) {
    if (f.token < 0 && f.len == 0) return true;
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 16;
        fragment *items = inf__realloc(l->items, cap * sizeof *items);
        if (!items) return false;
        l->items = items;
        l->cap = cap;
    }
    l->items[l->n++] = f;
    return true;
}

static const char *find_bytes(const char *hay, size_t n, const char *needle, size_t m) {
    if (m == 0 || m > n) return NULL;
    for (const char *p = hay; (p = memchr(p, needle[0], (size_t)(hay + n - p) - m + 1)) != NULL; p++) {
        if (memcmp(p, needle, m) == 0) return p;
        if ((size_t)(hay + n - p) <= m) break;
    }
    return NULL;
}

/* Cuts plain fragments around every occurrence of special token id. */
static bool split_on_special(const inf_tokenizer *t, const char *text, int32_t id, fragment_list *in, fragment_list *out) {
    size_t m;
    const char *needle = inf__tok_text(t, id, &m);
    for (size_t i = 0; i < in->n; i++) {
        fragment f = in->items[i];
        if (f.token >= 0) {
            if (!fragments_push(out, f)) return false;
            continue;
        }
        size_t at = f.off, end = f.off + f.len;
        const char *hit;
        while ((hit = find_bytes(text + at, end - at, needle, m)) != NULL) {
            size_t pos = (size_t)(hit - text);
            fragment left = {-1, at, pos - at}, tok = {id, 0, 0};
            if (!fragments_push(out, left) || !fragments_push(out, tok)) return false;
            at = pos + m;
        }
        fragment rest = {-1, at, end - at};
        if (!fragments_push(out, rest)) return false;
    }
    return true;
}

static inf_status partition(const inf_tokenizer *t, const char *text, size_t len, bool parse_special,
                            fragment_list *result, inf_error *err) {
    fragment_list cur = {0};
    fragment whole = {-1, 0, len};
    if (!fragments_push(&cur, whole)) return inf_error_set(err, INF_ENOMEM, "tokenizer: no memory");
    for (int32_t k = 0; k < t->n_specials; k++) {
        int32_t id = t->specials[k];
        if (!parse_special && t->types[id] != INF__TOK_USER_DEFINED) continue;
        size_t m = t->text_len[id];
        bool present = false; /* skip the copy when the token does not occur */
        for (size_t i = 0; i < cur.n && !present; i++)
            present = cur.items[i].token < 0 && find_bytes(text + cur.items[i].off, cur.items[i].len, t->pool + t->text_off[id], m);
        if (!present) continue;
        fragment_list next = {0};
        if (!split_on_special(t, text, id, &cur, &next)) {
            inf__free(next.items);
            inf__free(cur.items);
            return inf_error_set(err, INF_ENOMEM, "tokenizer: no memory for text fragments");
        }
        inf__free(cur.items);
        cur = next;
    }
    *result = cur;
    return INF_OK;
}

static inf_status encode_fragments(const inf_tokenizer *t, const char *text, const fragment_list *frags, bool add_special,
                                   inf__tok_out *o, inf_error *err) {
    if (add_special && t->add_bos && t->bos >= 0) inf__tok_out_push(o, t->bos);
    bool prev_special = true; /* SPM: a space prefix at the start and after a special token */
    char *buf = NULL;
    inf_status st = INF_OK;
    for (size_t i = 0; i < frags->n && st == INF_OK; i++) {
        const fragment *f = &frags->items[i];
        if (f->token >= 0) {
            inf__tok_out_push(o, f->token);
            prev_special = true;
            continue;
        }
        if (t->model == INF__TOK_MODEL_BPE) {
            st = inf__tok_bpe_encode(t, text + f->off, f->len, o, err);
            continue;
        }
        if (t->add_space_prefix && prev_special) {
            buf = inf__malloc(f->len + 1);
            if (!buf) return inf_error_set(err, INF_ENOMEM, "tokenizer: no memory for %zu bytes", f->len);
            buf[0] = ' ';
            memcpy(buf + 1, text + f->off, f->len);
            st = inf__tok_spm_encode(t, buf, f->len + 1, o, err);
            inf__free(buf);
            buf = NULL;
        } else {
            st = inf__tok_spm_encode(t, text + f->off, f->len, o, err);
        }
        prev_special = false;
    }
    if (st == INF_OK && add_special && t->add_eos && t->eos >= 0) inf__tok_out_push(o, t->eos);
    return st;
}

inf_status inf_tokenizer_encode(const inf_tokenizer *t, const char *text, size_t len, bool add_special, int32_t *ids,
                                size_t cap, size_t *n_out, inf_error *err) {
    if (n_out) *n_out = 0;
    if (!t || (!text && len) || (!ids && cap) || !n_out)
        return inf_error_set(err, INF_EINVAL, "inf_tokenizer_encode: NULL tokenizer, text, ids or n_out");
    fragment_list frags = {0};
    inf_status st = INF_OK;
    if (len > 0) st = partition(t, text, len, add_special, &frags, err);
    inf__tok_out o = {ids, cap, 0};
    if (st == INF_OK) st = encode_fragments(t, text, &frags, add_special, &o, err);
    inf__free(frags.items);
    if (st != INF_OK) return st;
    *n_out = o.n;
    if (o.n > cap)
        return inf_error_set(err, INF_ERANGE, "tokenizer: the text needs %zu tokens, the buffer holds %zu", o.n, cap);
    return INF_OK;
}

inf_status inf_tokenizer_encode_alloc(const inf_tokenizer *t, const char *text, size_t len, bool add_special,
                                      int32_t **ids, size_t *n_out, inf_error *err) {
    *ids = NULL;
    size_t cap = len + 8, n = 0; /* a guess that fits valid UTF-8; else the second pass has the count */
    for (int pass = 0; pass < 2; pass++) {
        int32_t *buf = malloc(cap * sizeof *buf);
        if (!buf)
            return inf_error_set(err, INF_ENOMEM, "tokenizer: out of memory for %zu tokens", cap);
        inf_status st = inf_tokenizer_encode(t, text, len, add_special, buf, cap, &n, err);
        if (st == INF_OK) {
            *ids = buf;
            *n_out = n;
            return INF_OK;
        }
        free(buf);
        if (st != INF_ERANGE)
            return st;
        cap = n;
    }
    return inf_error_set(err, INF_ERANGE, "tokenizer: the token count of the text changed between two passes");
}

/* ---- pieces ---- */
static void put(char *buf, size_t cap, size_t *n, const char *s, size_t len) {
    if (*n < cap) memcpy(buf + *n, s, len <= cap - *n ? len : cap - *n);
    *n += len;
}

inf_status inf_tokenizer_piece(const inf_tokenizer *t, int32_t id, char *buf, size_t cap, size_t *n) {
    if (n) *n = 0;
    if (!t || !n || (!buf && cap)) return INF_EINVAL;
    if (id < 0 || id >= t->n_vocab) return INF_ERANGE;
    size_t len;
    const char *s = inf__tok_text(t, id, &len);
    uint8_t ty = t->types[id];
    if (ty == INF__TOK_CONTROL || ty == INF__TOK_UNUSED) return INF_OK;
    if (ty == INF__TOK_USER_DEFINED) {
        put(buf, cap, n, s, len);
        return INF_OK;
    }
    if (t->model == INF__TOK_MODEL_SPM) {
        if (ty == INF__TOK_UNKNOWN) {
            put(buf, cap, n, "\xE2\x96\x85", 3); /* ▅, as llama.cpp */
            return INF_OK;
        }
        if (ty == INF__TOK_BYTE && len == 6 && memcmp(s, "<0x", 3) == 0) {
            char byte = (char)strtol((char[3]){s[3], s[4], 0}, NULL, 16);
            put(buf, cap, n, &byte, 1);
            return INF_OK;
        }
        for (size_t i = 0; i < len;) { /* ▁ -> ' ' */
            if (len - i >= 3 && memcmp(s + i, "\xE2\x96\x81", 3) == 0) {
                put(buf, cap, n, " ", 1);
                i += 3;
            } else {
                put(buf, cap, n, s + i, 1);
                i++;
            }
        }
        return INF_OK;
    }
    for (size_t i = 0; i < len;) { /* BPE: mapped code points -> bytes */
        size_t at = i;
        uint32_t cp = inf__utf8_decode(s, len, &i);
        int b = inf__gpt2_cp_to_byte(cp);
        if (b >= 0) {
            char c = (char)b;
            put(buf, cap, n, &c, 1);
        } else {
            put(buf, cap, n, s + at, i - at);
        }
    }
    return INF_OK;
}

inf_status inf_tokenizer_append_piece(const inf_tokenizer *t, int32_t id, char **text, size_t *len, size_t *cap) {
    if (!text || !len || !cap) return INF_EINVAL;
    size_t n = 0;
    inf_status st = inf_tokenizer_piece(t, id, NULL, 0, &n); /* the piece's length */
    if (st != INF_OK) return st;
    if (*len + n + 1 > *cap) {
        size_t grown = (*cap + n + 1) * 2;
        char *p = realloc(*text, grown);
        if (!p) return INF_ENOMEM;
        *text = p;
        *cap = grown;
    }
    st = inf_tokenizer_piece(t, id, *text + *len, n, &n);
    *len += n;
    (*text)[*len] = 0;
    return st;
}

/* ---- facts and lifetime ---- */
int32_t inf_tokenizer_bos(const inf_tokenizer *t) { return t ? t->bos : -1; }
int32_t inf_tokenizer_eos(const inf_tokenizer *t) { return t ? t->eos : -1; }
int32_t inf_tokenizer_n_vocab(const inf_tokenizer *t) { return t ? t->n_vocab : 0; }
bool inf_tokenizer_add_bos(const inf_tokenizer *t) { return t && t->add_bos && t->bos >= 0; }
bool inf_tokenizer_is_eog(const inf_tokenizer *t, int32_t id) {
    return t && id >= 0 && id < t->n_vocab && t->eog[id];
}

inf_status inf_tokenizer_load(const char *gguf_path, inf_tokenizer **out, inf_error *err) {
    if (!out || !gguf_path) return inf_error_set(err, INF_EINVAL, "inf_tokenizer_load: NULL path or out");
    *out = NULL;
    inf__gguf *g = NULL;
    inf_status st = inf__gguf_open(gguf_path, &g, err);
    if (st != INF_OK) return st;
    st = inf__llm_tokenizer_from_gguf(g, out, err);
    inf__gguf_close(g);
    return st;
}

void inf_tokenizer_free(inf_tokenizer *t) {
    if (!t) return;
    inf__free(t->pool);
    inf__free(t->text_off);
    inf__free(t->text_len);
    inf__free(t->scores);
    inf__free(t->types);
    inf__free(t->eog);
    inf__free(t->text_hash);
    inf__free(t->merges);
    inf__free(t->specials);
    inf__free(t);
}
