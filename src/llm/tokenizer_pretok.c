/*
 * tokenizer_pretok.c -- the pre-tokenizers of byte-level BPE files, by hand instead of a regex engine.
 *
 * A pre-tokenizer is a list of passes; each pass splits every word the previous pass produced (the
 * first pass sees the whole text as one word), exactly as llama.cpp's unicode_regex_split applies
 * its regex list.  Two kinds of pass:
 *   - the GPT-2 and llama3/qwen2 patterns, ported from llama.cpp's hand-written matchers
 *     (unicode.cpp: unicode_regex_split_custom_gpt2 / _llama3 / _qwen2);
 *   - "runs": a regex of the form `\s?CLASS{min,max}` searched left to right, greedy, matches and the
 *     text between them both becoming words (std::regex_iterator semantics in llama.cpp).
 * Families map `tokenizer.ggml.pre` names to a pass list (table below).  Positions are code points.
 */
#include <string.h>

#include "core/core.h"
#include "llm/tokenizer.h"

#define OUT_OF_RANGE 0xFFFFFFFFu

typedef struct {
    size_t *lens;
    size_t n, cap;
} word_list;

static bool words_push(word_list *w, size_t len) {
    if (len == 0) return true;
    if (w->n == w->cap) {
        size_t cap = w->cap ? w->cap * 2 : 64;
        size_t *lens = inf__realloc(w->lens, cap * sizeof *lens);
        if (!lens) return false;
        w->lens = lens;
        w->cap = cap;
    }
    w->lens[w->n++] = len;
    return true;
}

/* A view of one word: code points and class flags, with the out-of-range sentinel past its ends. */
typedef struct {
    const uint32_t *cps;
    size_t ini, end;
} span;

static uint32_t cp_at(const span *s, size_t pos) {
    return pos >= s->ini && pos < s->end ? s->cps[pos] : OUT_OF_RANGE;
}
static unsigned flags_at(const span *s, size_t pos) {
    return pos >= s->ini && pos < s->end ? inf__unicode_flags(s->cps[pos]) : 0;
}
#define IS_LETTER(f) ((f) & INF__UCLASS_LETTER)
#define IS_NUMBER(f) ((f) & INF__UCLASS_NUMBER)
#define IS_SPACE(f) ((f) & INF__UCLASS_WHITESPACE)

/* 's|'t|'re|'ve|'m|'ll|'d (case-insensitive when fold): length of the match at pos, or 0. */
static size_t contraction_at(const span *s, size_t pos, bool fold) {
    if (cp_at(s, pos) != '\'' || pos + 1 >= s->end) return 0;
    uint32_t a = cp_at(s, pos + 1), b = pos + 2 < s->end ? cp_at(s, pos + 2) : OUT_OF_RANGE;
    if (fold) {
        if (a >= 'A' && a <= 'Z') a += 32;
        if (b >= 'A' && b <= 'Z') b += 32;
    }
    if (a == 's' || a == 't' || a == 'm' || a == 'd') return 2;
    if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l')) return 3;
    return 0;
}

/* Whitespace run at pos: \s+(?!\S) leaves the last space to the next word unless the run ends the
 * word; returns the end of the token. */
static size_t whitespace_end(const span *s, size_t pos, size_t n_ws) {
    if (n_ws > 1 && cp_at(s, pos + n_ws) != OUT_OF_RANGE) return pos + n_ws - 1;
    return pos + n_ws;
}

/* 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+ */
static bool split_gpt2(const span *s, word_list *out) {
    size_t pos = s->ini, prev = s->ini;
#define EMIT(end) do { if (!words_push(out, (end) - prev)) return false; prev = (end); pos = (end); } while (0)
    while (pos < s->end) {
        uint32_t cp = cp_at(s, pos);
        unsigned f = flags_at(s, pos);
        size_t c = contraction_at(s, pos, false);
        if (c) { EMIT(pos + c); continue; }
        unsigned f2 = cp == ' ' ? flags_at(s, pos + 1) : f;
        size_t p = pos + (cp == ' ');
        if (IS_LETTER(f2)) {
            while (IS_LETTER(flags_at(s, p))) p++;
            EMIT(p);
            continue;
        }
        if (IS_NUMBER(f2)) {
            while (IS_NUMBER(flags_at(s, p))) p++;
            EMIT(p);
            continue;
        }
        if (!(IS_SPACE(f2) || IS_LETTER(f2) || IS_NUMBER(f2)) && f2) {
            for (unsigned g = f2; !(IS_SPACE(g) || IS_LETTER(g) || IS_NUMBER(g)) && g; g = flags_at(s, ++p)) {}
            EMIT(p);
            continue;
        }
        size_t n_ws = 0;
        while (IS_SPACE(flags_at(s, pos + n_ws))) n_ws++;
        if (n_ws > 0) { EMIT(whitespace_end(s, pos, n_ws)); continue; }
        EMIT(pos + 1);
    }
#undef EMIT
    return true;
}

/* (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,G}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|
 * \s+(?!\S)|\s+   with G = 3 (llama3) or 1 (qwen2); qwen35 also counts marks (\p{M}) as letters. */
static bool split_llama3(const span *s, word_list *out, size_t digit_group, bool marks) {
    const unsigned letter = INF__UCLASS_LETTER | (marks ? INF__UCLASS_MARK : 0u);
#undef IS_LETTER
#define IS_LETTER(f) ((f) & letter)
    size_t pos = s->ini, prev = s->ini;
#define EMIT(end) do { if (!words_push(out, (end) - prev)) return false; prev = (end); pos = (end); } while (0)
    while (pos < s->end) {
        uint32_t cp = cp_at(s, pos);
        unsigned f = flags_at(s, pos);
        size_t c = contraction_at(s, pos, true);
        if (c) { EMIT(pos + c); continue; }
        if (!(cp == '\r' || cp == '\n' || IS_NUMBER(f)) && (IS_LETTER(f) || IS_LETTER(flags_at(s, pos + 1)))) {
            size_t p = pos + 1;
            while (IS_LETTER(flags_at(s, p))) p++;
            EMIT(p);
            continue;
        }
        if (IS_NUMBER(f)) {
            size_t p = pos, ini = pos;
            while (IS_NUMBER(flags_at(s, p))) {
                if (++p - ini >= digit_group) {
                    if (!words_push(out, p - prev)) return false;
                    prev = p;
                    ini = p;
                }
            }
            EMIT(p);
            continue;
        }
        unsigned f2 = cp == ' ' ? flags_at(s, pos + 1) : f;
        if (!(IS_SPACE(f2) || IS_LETTER(f2) || IS_NUMBER(f2)) && f) {
            size_t p = pos + (cp == ' ');
            for (unsigned g = f2; !(IS_SPACE(g) || IS_LETTER(g) || IS_NUMBER(g)) && g; g = flags_at(s, ++p)) {}
            while (cp_at(s, p) == '\r' || cp_at(s, p) == '\n') p++;
            EMIT(p);
            continue;
        }
        size_t n_ws = 0, last_rn = 0;
        while (IS_SPACE(flags_at(s, pos + n_ws))) {
            uint32_t c2 = cp_at(s, pos + n_ws);
            if (c2 == '\r' || c2 == '\n') last_rn = pos + n_ws + 1;
            n_ws++;
        }
        if (last_rn > 0) { EMIT(last_rn); continue; }
        if (n_ws > 0) { EMIT(whitespace_end(s, pos, n_ws)); continue; }
        EMIT(pos + 1);
    }
#undef EMIT
#undef IS_LETTER
#define IS_LETTER(f) ((f) & INF__UCLASS_LETTER)
    return true;
}

/* ---- run passes: \s?CLASS{min,max} ---- */
typedef bool (*cp_class)(uint32_t cp, unsigned flags);

/* Classes as llama.cpp's "collapsed" regexes see them: white space matches only \s. */
static bool cls_newline(uint32_t cp, unsigned f) { (void)f; return cp == '\r' || cp == '\n'; }
static bool cls_number(uint32_t cp, unsigned f) { (void)cp; return !IS_SPACE(f) && IS_NUMBER(f); }
static bool cls_letter(uint32_t cp, unsigned f) { (void)cp; return !IS_SPACE(f) && IS_LETTER(f); }
static bool cls_punct(uint32_t cp, unsigned f) { (void)cp; return !IS_SPACE(f) && (f & INF__UCLASS_PUNCT); }
static bool cls_ascii_digit(uint32_t cp, unsigned f) { (void)f; return cp >= '0' && cp <= '9'; }
static bool cls_cjk(uint32_t cp, unsigned f) { /* [一-龥ࠀ-一가-퟿] */
    (void)f;
    return (cp >= 0x4E00 && cp <= 0x9FA5) || (cp >= 0x0800 && cp <= 0x4E00) || (cp >= 0xAC00 && cp <= 0xD7FF);
}
static bool cls_falcon_punct(uint32_t cp, unsigned f) { /* [\p{P}\$\+<=>\^~\|`] */
    if (cp != 0 && cp < 128 && strchr("$+<=>^~|`", (int)cp)) return true;
    return cls_punct(cp, f);
}
static bool cls_default_punct(uint32_t cp, unsigned f) { /* [\p{P}\$\+<=>\^~\|] */
    return cp != '`' && cls_falcon_punct(cp, f);
}

typedef struct {
    bool opt_space; /* a leading \s? */
    cp_class cls;
    size_t min, max; /* max 0: unbounded */
} run_rule;

/* Length of the run of cls at p (at most max), in the word. */
static size_t run_length(const span *s, const run_rule *r, size_t p) {
    size_t k = 0;
    while (p + k < s->end && (r->max == 0 || k < r->max) && r->cls(s->cps[p + k], inf__unicode_flags(s->cps[p + k])))
        k++;
    return k;
}

static bool split_runs(const span *s, word_list *out, const run_rule *r) {
    size_t pos = s->ini, prev = s->ini;
    while (pos < s->end) {
        size_t start = pos, k = 0;
        if (r->opt_space && IS_SPACE(flags_at(s, pos)) && pos + 1 < s->end) {
            k = run_length(s, r, pos + 1);
            if (k >= r->min) start = pos + 1;
            else k = 0;
        }
        if (start == pos) k = run_length(s, r, pos);
        if (k < r->min || k == 0) {
            pos++;
            continue;
        }
        if (!words_push(out, pos - prev) || !words_push(out, start + k - pos)) return false;
        pos = prev = start + k;
    }
    return words_push(out, s->end - prev);
}

/* ---- families ---- */
enum pass_kind { PASS_GPT2, PASS_LLAMA3, PASS_QWEN2, PASS_QWEN35, PASS_RUNS };
typedef struct {
    enum pass_kind kind;
    run_rule rule;
} pass;

#define RUN(space, cls, min, max) {PASS_RUNS, {space, cls, min, max}}
#define MAX_PASSES 5

static const struct family {
    enum inf__tok_pre pre;
    int n;
    pass passes[MAX_PASSES];
} families[] = {
    {INF__PRE_GPT2, 1, {{PASS_GPT2, {0}}}},
    {INF__PRE_LLAMA3, 1, {{PASS_LLAMA3, {0}}}},
    {INF__PRE_QWEN2, 1, {{PASS_QWEN2, {0}}}},
    {INF__PRE_QWEN35, 1, {{PASS_QWEN35, {0}}}},
    {INF__PRE_STARCODER, 2, {RUN(false, cls_number, 1, 1), {PASS_GPT2, {0}}}},
    {INF__PRE_DEEPSEEK_CODER, 5,
     {RUN(false, cls_newline, 1, 1), RUN(true, cls_letter, 1, 0), RUN(true, cls_punct, 1, 0), RUN(false, cls_cjk, 1, 0),
      RUN(false, cls_number, 1, 1)}},
    {INF__PRE_DEFAULT, 4,
     {RUN(false, cls_default_punct, 1, 0), {PASS_GPT2, {0}}, RUN(false, cls_number, 1, 0),
      RUN(false, cls_ascii_digit, 3, 3)}},
    {INF__PRE_FALCON, 3, {RUN(false, cls_falcon_punct, 1, 0), {PASS_GPT2, {0}}, RUN(false, cls_ascii_digit, 3, 3)}},
};

static const struct {
    const char *name;
    enum inf__tok_pre pre;
    bool ignore_merges, add_bos;
} pre_names[] = {
    {"default", INF__PRE_DEFAULT, false, false},   {"gpt-2", INF__PRE_GPT2, false, false},
    {"phi-2", INF__PRE_GPT2, false, false},     {"mpt", INF__PRE_GPT2, false, false},
    {"olmo", INF__PRE_GPT2, false, false},      {"jais", INF__PRE_GPT2, false, false},
    {"trillion", INF__PRE_GPT2, false, false},  {"llama3", INF__PRE_LLAMA3, true, true},
    {"llama-v3", INF__PRE_LLAMA3, true, true},  {"llama-bpe", INF__PRE_LLAMA3, true, true},
    {"falcon3", INF__PRE_LLAMA3, true, true},   {"pixtral", INF__PRE_LLAMA3, true, true},
    {"dbrx", INF__PRE_LLAMA3, false, false},    {"smaug-bpe", INF__PRE_LLAMA3, false, false},
    {"chatglm-bpe", INF__PRE_LLAMA3, false, false}, {"qwen2", INF__PRE_QWEN2, false, false},
    {"deepseek-r1-qwen", INF__PRE_QWEN2, false, false}, {"stablelm2", INF__PRE_QWEN2, false, false},
    {"starcoder", INF__PRE_STARCODER, false, false}, {"refact", INF__PRE_STARCODER, false, false},
    {"command-r", INF__PRE_STARCODER, false, false}, {"smollm", INF__PRE_STARCODER, false, false},
    {"codeshell", INF__PRE_STARCODER, false, false},  {"exaone", INF__PRE_STARCODER, false, false},
    {"minerva-7b", INF__PRE_STARCODER, false, false}, {"deepseek-coder", INF__PRE_DEEPSEEK_CODER, false, false},
    {"falcon", INF__PRE_FALCON, false, false},  {"glm4", INF__PRE_LLAMA3, false, false},
    {"exaone4", INF__PRE_GPT2, false, false},   {"megrez", INF__PRE_QWEN2, false, false},
    {"qwen35", INF__PRE_QWEN35, false, false},
};

bool inf__tok_pre_from_name(const char *name, size_t len, enum inf__tok_pre *pre, bool *ignore_merges, bool *add_bos) {
    for (size_t i = 0; i < sizeof pre_names / sizeof pre_names[0]; i++) {
        if (strlen(pre_names[i].name) == len && memcmp(pre_names[i].name, name, len) == 0) {
            *pre = pre_names[i].pre;
            *ignore_merges = pre_names[i].ignore_merges;
            *add_bos = pre_names[i].add_bos;
            return true;
        }
    }
    return false;
}

static bool run_pass(const pass *p, const span *s, word_list *out) {
    switch (p->kind) {
    case PASS_GPT2: return split_gpt2(s, out);
    case PASS_LLAMA3: return split_llama3(s, out, 3, false);
    case PASS_QWEN2: return split_llama3(s, out, 1, false);
    case PASS_QWEN35: return split_llama3(s, out, 1, true);
    case PASS_RUNS: return split_runs(s, out, &p->rule);
    }
    return false;
}

inf_status inf__tok_pretokenize(enum inf__tok_pre pre, const uint32_t *cps, size_t n, size_t **lens, size_t *n_words,
                                inf_error *err) {
    *lens = NULL;
    *n_words = 0;
    const struct family *fam = NULL;
    for (size_t i = 0; i < sizeof families / sizeof families[0]; i++)
        if (families[i].pre == pre) fam = &families[i];
    if (!fam) return inf_error_set(err, INF_EINTERNAL, "tokenizer: no pre-tokenizer for family %d", (int)pre);
    word_list cur = {0};
    if (!words_push(&cur, n) && n > 0) return inf_error_set(err, INF_ENOMEM, "tokenizer: no memory");
    for (int k = 0; k < fam->n; k++) {
        word_list next = {0};
        size_t at = 0;
        for (size_t w = 0; w < cur.n; w++) {
            span s = {cps, at, at + cur.lens[w]};
            at += cur.lens[w];
            if (!run_pass(&fam->passes[k], &s, &next)) {
                inf__free(next.lens);
                inf__free(cur.lens);
                return inf_error_set(err, INF_ENOMEM, "tokenizer: no memory for pre-tokenized words");
            }
        }
        inf__free(cur.lens);
        cur = next;
    }
    *lens = cur.lens;
    *n_words = cur.n;
    return INF_OK;
}
