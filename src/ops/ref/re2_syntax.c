/*
 * re2_syntax.c -- RE2 patterns checked and rewritten as PCRE2 patterns
 * (see re2_syntax.h).
 *
 * A recursive-descent pass over RE2's grammar (github.com/google/re2/wiki/Syntax,
 * Perl mode as RE2::Options' defaults): it refuses what RE2's parser refuses
 * and writes each construct in a form whose PCRE2 meaning is RE2's:
 *   - literals as \x{HEX} (no PCRE2 metacharacter can leak in); octal \123
 *     and \v (a vertical tab in RE2, a class in PCRE2) likewise;
 *   - \d \s \w and [[:name:]] as explicit ASCII ranges (RE2's \s has no \v,
 *     PCRE2's has); negated ones inside a class as the complement ranges;
 *   - ^ $ \A \z \b \B wrapped in (?:...), so that RE2's quantified
 *     assertions (^*) stay legal; \p{Script} as \p{sc:Script} (PCRE2's bare
 *     \p{Script} means Script_Extensions);
 *   - $ as \z (PCRE2's $ also matches before a final newline), and under
 *     (?m) as PCRE2's $ (PCRE2_DOLLAR_ENDONLY would stop that matching
 *     before a newline), so the m flag is followed through the groups;
 *   - named groups (?P<n>..) (?<n>..) as plain groups (names do not matter
 *     to a full match; RE2 allows a name twice, PCRE2 not).
 * The matcher's options supply the rest of RE2's semantics (regex_full_match.c):
 * UTF-8, (?m)^ also after a final newline, LF newlines.
 * Known differences (all rare): under (?i), RE2 folds \p{..} classes and
 * PCRE2 does not; PCRE2's \p{C} includes unassigned code points, RE2's not;
 * \C (one byte of UTF-8) is refused; a surrogate code point in a class is
 * refused (RE2 accepts it, to match nothing).
 */
#include <ctype.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "core/core.h"
#include "ops/ref/re2_syntax.h"

#define RE2_MAX_REPEAT 1000 /* RE2's kMaxRepeat: a count, and the product of nested counts */
#define RE2_MAX_DEPTH 1000  /* RE2's nesting limit */
#define MAX_CODE_POINT 0x10FFFFu

typedef struct rx {
    const char *src;
    size_t pos, len;
    char *out; /* the PCRE2 pattern, growing */
    size_t out_len, out_cap;
    int depth;
    bool failed;
    char *why;
    size_t why_size;
} rx;

static bool fail(rx *r, size_t at, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static bool fail(rx *r, size_t at, const char *fmt, ...) {
    if (r->failed) return false;
    r->failed = true;
    char msg[192];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    snprintf(r->why, r->why_size, "%s at offset %zu", msg, at);
    return false;
}

/* ---- output ---- */

static bool put(rx *r, const char *s, size_t n) {
    if (r->out_len + n + 1 > r->out_cap) {
        size_t cap = (r->out_len + n + 1) * 2;
        char *grown = inf__realloc(r->out, cap);
        if (!grown) return fail(r, r->pos, "out of memory");
        r->out = grown;
        r->out_cap = cap;
    }
    memcpy(r->out + r->out_len, s, n);
    r->out_len += n;
    r->out[r->out_len] = 0;
    return true;
}

static bool put_str(rx *r, const char *s) { return put(r, s, strlen(s)); }

static bool put_cp(rx *r, uint32_t cp) {
    char b[16];
    return put(r, b, (size_t)snprintf(b, sizeof b, "\\x{%x}", (unsigned)cp));
}

static bool put_range(rx *r, uint32_t lo, uint32_t hi) {
    if (!put_cp(r, lo)) return false;
    return lo == hi || (put(r, "-", 1) && put_cp(r, hi));
}

/* ---- input ---- */

static int peek(const rx *r, size_t ahead) {
    return r->pos + ahead < r->len ? (unsigned char)r->src[r->pos + ahead] : -1;
}

/* Decodes the code point at r->pos and steps over it; refuses invalid UTF-8 as RE2 does. */
static bool next_cp(rx *r, uint32_t *cp) {
    const unsigned char *s = (const unsigned char *)r->src + r->pos;
    size_t left = r->len - r->pos;
    uint32_t c = s[0], min;
    size_t n;
    if (c < 0x80) {
        *cp = c;
        r->pos++;
        return true;
    }
    if ((c & 0xE0) == 0xC0) n = 2, c &= 0x1F, min = 0x80;
    else if ((c & 0xF0) == 0xE0) n = 3, c &= 0x0F, min = 0x800;
    else if ((c & 0xF8) == 0xF0) n = 4, c &= 0x07, min = 0x10000;
    else return fail(r, r->pos, "invalid UTF-8");
    if (n > left) return fail(r, r->pos, "invalid UTF-8");
    for (size_t i = 1; i < n; i++) {
        if ((s[i] & 0xC0) != 0x80) return fail(r, r->pos, "invalid UTF-8");
        c = (c << 6) | (s[i] & 0x3Fu);
    }
    if (c < min || c > MAX_CODE_POINT || (c >= 0xD800 && c <= 0xDFFF)) return fail(r, r->pos, "invalid UTF-8");
    *cp = c;
    r->pos += n;
    return true;
}

/* ---- character sets: RE2's Perl and POSIX classes (ASCII), as sorted ranges ---- */

typedef struct char_set {
    const char *name;
    int n;
    uint32_t lo[4], hi[4];
} char_set;

static const char_set k_posix[] = {
    {"alnum", 3, {'0', 'A', 'a'}, {'9', 'Z', 'z'}},
    {"alpha", 2, {'A', 'a'}, {'Z', 'z'}},
    {"ascii", 1, {0}, {0x7F}},
    {"blank", 2, {'\t', ' '}, {'\t', ' '}},
    {"cntrl", 2, {0, 0x7F}, {0x1F, 0x7F}},
    {"digit", 1, {'0'}, {'9'}},
    {"graph", 1, {0x21}, {0x7E}},
    {"lower", 1, {'a'}, {'z'}},
    {"print", 1, {0x20}, {0x7E}},
    {"punct", 4, {0x21, 0x3A, 0x5B, 0x7B}, {0x2F, 0x40, 0x60, 0x7E}},
    {"space", 2, {0x09, 0x20}, {0x0D, 0x20}},
    {"upper", 1, {'A'}, {'Z'}},
    {"word", 4, {'0', 'A', '_', 'a'}, {'9', 'Z', '_', 'z'}},
    {"xdigit", 3, {'0', 'A', 'a'}, {'9', 'F', 'f'}},
};
static const char_set k_perl_d = {"d", 1, {'0'}, {'9'}};
static const char_set k_perl_s = {"s", 3, {'\t', 0x0C, ' '}, {'\n', 0x0D, ' '}}; /* no \v, unlike PCRE2 */
static const char_set k_perl_w = {"w", 4, {'0', 'A', '_', 'a'}, {'9', 'Z', '_', 'z'}};

/* The ranges of set, or of its complement over all code points (inside a class). */
static bool put_set_ranges(rx *r, const char_set *set, bool complement) {
    if (!complement) {
        for (int i = 0; i < set->n; i++)
            if (!put_range(r, set->lo[i], set->hi[i])) return false;
        return true;
    }
    uint32_t next = 0;
    for (int i = 0; i < set->n; i++) {
        if (set->lo[i] > next && !put_range(r, next, set->lo[i] - 1)) return false;
        next = set->hi[i] + 1;
    }
    return next > MAX_CODE_POINT || put_range(r, next, MAX_CODE_POINT);
}

/* ---- escapes ---- */

typedef enum esc_kind { ESC_CHAR, ESC_SET, ESC_PROPERTY, ESC_ASSERT } esc_kind;

typedef struct esc {
    esc_kind kind;
    uint32_t cp;              /* ESC_CHAR */
    const char_set *set;      /* ESC_SET */
    bool negated;             /* ESC_SET, ESC_PROPERTY */
    char property[80];        /* ESC_PROPERTY: "Lu", "Any", "sc:Greek" */
    const char *assertion;    /* ESC_ASSERT */
} esc;

static const char *const k_categories[] = {
    "Any", "C", "Cc", "Cf", "Co", "Cs", "L", "Ll", "Lm", "Lo", "Lt", "Lu", "M", "Mc", "Me", "Mn", "N", "Nd", "Nl",
    "No", "P", "Pc", "Pd", "Pe", "Pf", "Pi", "Po", "Ps", "S", "Sc", "Sk", "Sm", "So", "Z", "Zl", "Zp", "Zs"};

/* \pX, \p{Name}, \p{^Name} (r->pos after the p/P): a general category, Any, or a script name
 * (left to PCRE2 to know, as sc:Name). */
static bool parse_property(rx *r, size_t at, bool upper_p, esc *e) {
    const char *name;
    size_t n;
    e->kind = ESC_PROPERTY;
    e->negated = upper_p;
    if (peek(r, 0) == '{') {
        const char *close = memchr(r->src + r->pos, '}', r->len - r->pos);
        if (!close) return fail(r, at, "missing } in \\p{...}");
        name = r->src + r->pos + 1;
        n = (size_t)(close - name);
        r->pos = (size_t)(close - r->src) + 1;
        if (n && name[0] == '^') name++, n--, e->negated = !e->negated;
    } else {
        if (peek(r, 0) < 0) return fail(r, at, "missing name after \\p");
        name = r->src + r->pos++;
        n = 1;
    }
    for (size_t i = 0; i < sizeof k_categories / sizeof k_categories[0]; i++)
        if (strlen(k_categories[i]) == n && !memcmp(k_categories[i], name, n)) {
            memcpy(e->property, name, n);
            e->property[n] = 0;
            return true;
        }
    bool script = n > 0 && n < sizeof e->property - 4 && name[0] >= 'A' && name[0] <= 'Z';
    for (size_t i = 0; script && i < n; i++)
        script = (name[i] >= 'A' && name[i] <= 'Z') || (name[i] >= 'a' && name[i] <= 'z') || name[i] == '_';
    if (!script) return fail(r, at, "invalid Unicode class \\p{%.*s}", (int)(n < 40 ? n : 40), name);
    snprintf(e->property, sizeof e->property, "sc:%.*s", (int)n, name);
    return true;
}

static int hex_value(int c) {
    static const char digits[] = "0123456789abcdef";
    const char *d = c > 0 && c < 0x80 ? strchr(digits, tolower(c)) : NULL;
    return d ? (int)(d - digits) : -1;
}

/* \x41 or \x{10FFFF} (r->pos after the x). */
static bool parse_hex(rx *r, size_t at, uint32_t *cp) {
    if (peek(r, 0) == '{') {
        uint32_t v = 0;
        size_t digits = 0;
        for (r->pos++; hex_value(peek(r, 0)) >= 0; r->pos++, digits++) {
            v = v * 16 + (uint32_t)hex_value(peek(r, 0));
            if (v > MAX_CODE_POINT) return fail(r, at, "invalid escape \\x{...}: beyond U+10FFFF");
        }
        if (!digits || peek(r, 0) != '}') return fail(r, at, "invalid escape \\x{...}");
        r->pos++;
        *cp = v;
        return true;
    }
    int h1 = hex_value(peek(r, 0)), h2 = hex_value(peek(r, 1));
    if (h1 < 0 || h2 < 0) return fail(r, at, "invalid escape \\x: two hex digits or \\x{...} expected");
    r->pos += 2;
    *cp = (uint32_t)(h1 * 16 + h2);
    return true;
}

/* An octal code: first (a digit already read) and up to two more digits. */
static bool parse_octal(rx *r, int first, uint32_t *cp) {
    *cp = (uint32_t)(first - '0');
    for (int i = 0; i < 2 && peek(r, 0) >= '0' && peek(r, 0) <= '7'; i++) *cp = *cp * 8 + (uint32_t)(r->src[r->pos++] - '0');
    return true;
}

/* The escape at r->pos (a backslash); \Q is the caller's. */
static bool parse_escape(rx *r, bool in_class, esc *e) {
    size_t at = r->pos++;
    int c = peek(r, 0);
    if (c < 0) return fail(r, at, "trailing \\");
    r->pos++;
    e->kind = ESC_CHAR;
    e->negated = false;
    switch (c) {
    case '0': case '1': case '2': case '3': case '4': case '5': case '6': case '7':
        if (c != '0' && (peek(r, 0) < '0' || peek(r, 0) > '7')) /* \1-\7 alone: a backreference */
            return fail(r, at, "backreference \\%c is not RE2 syntax", c);
        return parse_octal(r, c, &e->cp);
    case '8': case '9': return fail(r, at, "backreference \\%c is not RE2 syntax", c);
    case 'x': return parse_hex(r, at, &e->cp);
    case 'a': e->cp = 0x07; return true;
    case 'f': e->cp = 0x0C; return true;
    case 'n': e->cp = 0x0A; return true;
    case 'r': e->cp = 0x0D; return true;
    case 't': e->cp = 0x09; return true;
    case 'v': e->cp = 0x0B; return true;
    case 'd': case 'D': case 's': case 'S': case 'w': case 'W':
        e->kind = ESC_SET;
        e->negated = c < 'a';
        e->set = (c | 0x20) == 'd' ? &k_perl_d : (c | 0x20) == 's' ? &k_perl_s : &k_perl_w;
        return true;
    case 'p': case 'P': return parse_property(r, at, c == 'P', e);
    case 'A': case 'z': case 'b': case 'B':
        if (in_class) return fail(r, at, "\\%c is not allowed in a character class", c);
        e->kind = ESC_ASSERT;
        e->assertion = c == 'A' ? "\\A" : c == 'z' ? "\\z" : c == 'b' ? "\\b" : "\\B";
        return true;
    case 'C': return fail(r, at, "\\C (any byte) is not supported");
    default:
        if (c < 0x80 && !((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'))) {
            e->cp = (uint32_t)c; /* escaped punctuation is itself */
            return true;
        }
        if (c < 0x80) return fail(r, at, "invalid escape \\%c (not RE2 syntax)", c);
        return fail(r, at, "invalid escape of a non-ASCII character");
    }
}

/* ---- character classes ---- */

/* [:name:] or [:^name:] at r->pos, if it is one (false, not failed, when it is not). */
static bool parse_posix(rx *r, bool *found) {
    *found = false;
    if (peek(r, 0) != '[' || peek(r, 1) != ':') return true;
    const char *start = r->src + r->pos + 2;
    const char *end = strstr(start, ":]");
    if (!end) return true;
    size_t at = r->pos;
    bool negated = *start == '^';
    const char *name = start + negated;
    size_t n = (size_t)(end - name);
    for (size_t i = 0; i < sizeof k_posix / sizeof k_posix[0]; i++)
        if (strlen(k_posix[i].name) == n && !memcmp(k_posix[i].name, name, n)) {
            *found = true;
            r->pos = (size_t)(end - r->src) + 2;
            return put_set_ranges(r, &k_posix[i], negated);
        }
    return fail(r, at, "invalid character class [:%.*s:]", (int)(n < 40 ? n : 40), name);
}

/* One endpoint of a class item: a literal code point or an escape (r->pos at it). */
static bool parse_class_atom(rx *r, esc *e) {
    if (peek(r, 0) == '\\') {
        if (peek(r, 1) == 'Q' || peek(r, 1) == 'E') return fail(r, r->pos, "\\%c is not allowed in a character class", peek(r, 1));
        return parse_escape(r, true, e);
    }
    e->kind = ESC_CHAR;
    return next_cp(r, &e->cp);
}

static bool put_class_item(rx *r, const esc *e) {
    if (e->kind == ESC_SET) return put_set_ranges(r, e->set, e->negated);
    char b[96];
    snprintf(b, sizeof b, "\\%c{%s}", e->negated ? 'P' : 'p', e->property);
    return put_str(r, b);
}

/* [...] at r->pos. */
static bool parse_class(rx *r) {
    size_t at = r->pos++;
    bool negated = peek(r, 0) == '^';
    r->pos += negated;
    if (!put_str(r, negated ? "[^" : "[")) return false;
    for (bool first = true;; first = false) {
        int c = peek(r, 0);
        if (c < 0) return fail(r, at, "missing ] of a character class");
        if (c == ']' && !first) break;
        bool posix;
        if (!parse_posix(r, &posix)) return false;
        if (posix) continue;
        size_t item = r->pos;
        esc lo;
        if (!parse_class_atom(r, &lo)) return false;
        if (lo.kind != ESC_CHAR) {
            if (!put_class_item(r, &lo)) return false;
            continue;
        }
        if (peek(r, 0) == '-' && peek(r, 1) >= 0 && peek(r, 1) != ']') {
            r->pos++;
            esc hi;
            if (!parse_class_atom(r, &hi)) return false;
            if (hi.kind != ESC_CHAR || hi.cp < lo.cp) return fail(r, item, "bad character class range");
            if (!put_range(r, lo.cp, hi.cp)) return false;
        } else if (!put_cp(r, lo.cp)) {
            return false;
        }
    }
    r->pos++;
    return put_str(r, "]");
}

/* ---- groups, repetitions, alternation ---- */

static bool parse_alternation(rx *r, int *product, bool multiline);

static bool is_name_char(int c) {
    return (c >= '0' && c <= '9') || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_' || c >= 0x80;
}

/* The name of (?P<name> / (?<name> (r->pos at its first character): checked, skipped. */
static bool parse_group_name(rx *r, size_t at) {
    size_t start = r->pos;
    while (peek(r, 0) >= 0 && peek(r, 0) != '>') {
        if (!is_name_char(peek(r, 0))) return fail(r, at, "invalid capture group name");
        r->pos++;
    }
    if (peek(r, 0) != '>' || r->pos == start) return fail(r, at, "invalid capture group name");
    r->pos++;
    return true;
}

/* (?flags) or (?flags: (r->pos after "(?"): *opens tells which; *multiline follows m and -m. */
static bool parse_flags(rx *r, size_t at, bool *opens, bool *multiline) {
    bool negated = false, saw_flag = false;
    size_t start = r->pos;
    for (;;) {
        int c = peek(r, 0);
        if (c == 'i' || c == 'm' || c == 's' || c == 'U') {
            saw_flag = true;
            if (c == 'm') *multiline = !negated;
        } else if (c == '-' && !negated) {
            negated = true;
            saw_flag = false;
        } else if (c == ':' || c == ')') {
            if (negated && !saw_flag) break;
            *opens = c == ':';
            size_t n = r->pos - start;
            r->pos++;
            if (!*opens && !n) return true; /* (?) is nothing */
            return put(r, "(?", 2) && put(r, r->src + start, n) && put(r, *opens ? ":" : ")", 1);
        } else {
            break;
        }
        r->pos++;
    }
    return fail(r, at, "invalid or unsupported group syntax (RE2 has no look-arounds, atomic groups, comments, "
                       "conditionals, recursion or backreferences; its flags are i, m, s, U)");
}

/* A repetition count {n} {n,} {n,m} at r->pos, if well-formed (RE2 reads anything else as a literal {).
 * *max is -1 for {n,}. */
static bool read_count(const rx *r, size_t *len, long *min, long *max) {
    size_t p = r->pos + 1;
    long v[2] = {-1, -1};
    int k = 0;
    for (;; k++) {
        size_t start = p;
        long n = 0;
        while (p < r->len && r->src[p] >= '0' && r->src[p] <= '9') {
            if (n < 100000000) n = n * 10 + (r->src[p] - '0');
            p++;
        }
        if (p == start) {
            if (k == 1 && p < r->len && r->src[p] == '}') break; /* {n,} */
            return false;
        }
        if (p - start > 1 && r->src[start] == '0') return false; /* RE2: no leading zeros */
        v[k] = n;
        if (k == 1 || p >= r->len || r->src[p] != ',') break;
        p++;
    }
    if (p >= r->len || r->src[p] != '}') return false;
    *len = p + 1 - r->pos;
    *min = v[0];
    *max = k == 0 ? v[0] : v[1];
    return true;
}

/* A repetition operator at r->pos, if any: *n_chars its length (0: none), *factor its count for
 * the nesting product (0 for * + ?), or failure for a malformed count. */
static bool read_repetition(rx *r, size_t *n_chars, long *factor) {
    int c = peek(r, 0);
    *n_chars = 0;
    *factor = 0;
    if (c == '*' || c == '+' || c == '?') {
        *n_chars = 1;
    } else if (c == '{') {
        long min, max;
        if (!read_count(r, n_chars, &min, &max)) return true;
        if (min > RE2_MAX_REPEAT || max > RE2_MAX_REPEAT || (max >= 0 && max < min))
            return fail(r, r->pos, "bad repetition operator %.*s (RE2 allows counts up to %d)", (int)*n_chars,
                        r->src + r->pos, RE2_MAX_REPEAT);
        *factor = max >= 0 ? max : min;
    }
    if (*n_chars && peek(r, (size_t)*n_chars) == '?') (*n_chars)++; /* non-greedy */
    return true;
}

/* One atom at r->pos (not | or )); *product: the product of the nested counts inside it;
 * *is_atom: false for a flags group (?i), which nothing may repeat; *multiline: whether (?m) is
 * in effect (a flags group changes it for the rest of the enclosing group). */
static bool parse_atom(rx *r, int *product, bool *is_atom, bool *multiline) {
    size_t at = r->pos;
    int c = peek(r, 0);
    *product = 1;
    *is_atom = true;
    if (c == '(') {
        bool opens = true, inner_multiline = *multiline;
        r->pos++;
        if (peek(r, 0) == '?') {
            r->pos++;
            if (peek(r, 0) == 'P' && peek(r, 1) == '<') {
                r->pos += 2;
                if (!parse_group_name(r, at) || !put(r, "(", 1)) return false;
            } else if (peek(r, 0) == '<' && peek(r, 1) != '=' && peek(r, 1) != '!') {
                r->pos++;
                if (!parse_group_name(r, at) || !put(r, "(", 1)) return false;
            } else {
                if (!parse_flags(r, at, &opens, &inner_multiline)) return false;
                if (!opens) {
                    *multiline = inner_multiline;
                    *is_atom = false;
                    return true;
                }
            }
        } else if (!put(r, "(", 1)) {
            return false;
        }
        if (++r->depth > RE2_MAX_DEPTH) return fail(r, at, "groups nest deeper than %d", RE2_MAX_DEPTH);
        if (!parse_alternation(r, product, inner_multiline)) return false;
        r->depth--;
        if (peek(r, 0) != ')') return fail(r, at, "missing )");
        r->pos++;
        return put(r, ")", 1);
    }
    if (c == '[') return parse_class(r);
    if (c == '.') {
        r->pos++;
        return put(r, ".", 1);
    }
    if (c == '^' || c == '$') {
        r->pos++;
        return put_str(r, c == '^' ? "(?:^)" : *multiline ? "(?:$)" : "(?:\\z)");
    }
    if (c == '\\') {
        esc e;
        if (!parse_escape(r, false, &e)) return false;
        switch (e.kind) {
        case ESC_CHAR: return e.cp >= 0xD800 && e.cp <= 0xDFFF ? put_str(r, "(?!)") /* in no UTF-8 text */
                                                              : put_cp(r, e.cp);
        case ESC_SET: return put_str(r, e.negated ? "[^" : "[") && put_set_ranges(r, e.set, false) && put(r, "]", 1);
        case ESC_PROPERTY: return put_class_item(r, &e);
        case ESC_ASSERT: return put(r, "(?:", 3) && put_str(r, e.assertion) && put(r, ")", 1);
        }
    }
    uint32_t cp;
    return next_cp(r, &cp) && put_cp(r, cp);
}

/* \Q...\E at r->pos: each character a literal atom; *any: whether there was one, *last_start: where
 * the last one begins in the output (a repetition applies to it alone). */
static bool parse_quoted(rx *r, bool *any, size_t *last_start) {
    r->pos += 2;
    *any = false;
    while (r->pos < r->len) {
        if (peek(r, 0) == '\\' && peek(r, 1) == 'E') {
            r->pos += 2;
            return true;
        }
        uint32_t cp;
        *last_start = r->out_len;
        if (!next_cp(r, &cp) || !put_cp(r, cp)) return false;
        *any = true;
    }
    return true;
}

/* The repetition (n characters, count factor) at r->pos, of an atom whose nested counts multiply to
 * *inner: checks RE2's limits and refuses a second repetition right after it (a** a*+ a{2}{3}). */
static bool take_repetition(rx *r, size_t n, long factor, int *inner) {
    size_t op_at = r->pos;
    r->pos += n;
    if (factor > 0 && (long)*inner * factor > RE2_MAX_REPEAT)
        return fail(r, op_at, "bad repetition operator: nested counts multiply to more than %d", RE2_MAX_REPEAT);
    if (factor > 0) *inner *= (int)factor;
    size_t again;
    if (!read_repetition(r, &again, &factor)) return false;
    if (again) return fail(r, op_at, "bad repetition operator: stacked or possessive repetition %.*s",
                           (int)(r->pos + again - op_at), r->src + op_at);
    return true;
}

/* A repetition after flags groups, as in a(?i)*: RE2 applies it to the atom before them (written at
 * [*atom_start, *atom_end) of the output), PCRE2 refuses it there, so the output becomes
 * (?:atom)<op><flags>; the span then covers (?:atom)<op>. */
static bool repeat_before_flags(rx *r, size_t *atom_start, size_t *atom_end, size_t n) {
    size_t flags_len = r->out_len - *atom_end;
    char *flags = inf__malloc(flags_len + 1);
    if (!flags) return fail(r, r->pos, "out of memory");
    memcpy(flags, r->out + *atom_end, flags_len);
    r->out_len = *atom_end;
    bool ok = put(r, "(?:", 3); /* room for the opening, moved to atom_start */
    if (ok) {
        memmove(r->out + *atom_start + 3, r->out + *atom_start, *atom_end - *atom_start);
        memcpy(r->out + *atom_start, "(?:", 3);
        ok = put(r, ")", 1) && put(r, r->src + r->pos, n);
    }
    *atom_end = r->out_len;
    ok = ok && put(r, flags, flags_len);
    inf__free(flags);
    return ok;
}

/* A sequence of atoms, each with at most one repetition, up to | or ) or the end. */
static bool parse_concat(rx *r, int *product, bool *multiline) {
    bool have_atom = false;
    size_t atom_start = 0, atom_end = 0; /* the last atom, with its repetition, in the output */
    int inner = 1;                       /* its nested counts' product */
    *product = 1;
    while (r->pos < r->len && peek(r, 0) != '|' && peek(r, 0) != ')') {
        size_t n;
        long factor;
        if (!read_repetition(r, &n, &factor)) return false;
        if (n) { /* after flags groups (or an empty \Q\E): the atom before them repeats */
            if (!have_atom) return fail(r, r->pos, "missing argument to repetition operator %.*s", (int)n, r->src + r->pos);
            if (!repeat_before_flags(r, &atom_start, &atom_end, n) || !take_repetition(r, n, factor, &inner)) return false;
        } else {
            bool is_atom = true, any = true;
            size_t start = r->out_len;
            int atom_inner = 1;
            if (peek(r, 0) == '\\' && peek(r, 1) == 'Q') {
                if (!parse_quoted(r, &any, &start)) return false;
            } else if (!parse_atom(r, &atom_inner, &is_atom, multiline)) {
                return false;
            }
            if (!is_atom || !any) continue;
            have_atom = true;
            inner = atom_inner;
            atom_start = start;
            if (!read_repetition(r, &n, &factor)) return false;
            if (n && (!put(r, r->src + r->pos, n) || !take_repetition(r, n, factor, &inner))) return false;
            atom_end = r->out_len;
        }
        if (inner > *product) *product = inner;
    }
    return true;
}

static bool parse_alternation(rx *r, int *product, bool multiline) {
    *product = 1;
    for (;;) {
        int p;
        if (!parse_concat(r, &p, &multiline)) return false;
        if (p > *product) *product = p;
        if (peek(r, 0) != '|') return true;
        r->pos++;
        if (!put(r, "|", 1)) return false;
    }
}

char *inf__re2_to_pcre2(const char *pattern, char *why, size_t why_size) {
    rx r = {.src = pattern, .len = strlen(pattern), .why = why, .why_size = why_size};
    int product;
    bool ok = put(&r, "", 0) && parse_alternation(&r, &product, false);
    if (ok && r.pos < r.len) ok = fail(&r, r.pos, "unexpected )");
    if (!ok) {
        inf__free(r.out);
        return NULL;
    }
    return r.out;
}
