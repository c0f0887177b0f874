/*
 * kserve_v2.c -- the KServe V2 / Open Inference Protocol codec's request
 * side: inference requests in (shared/reference/kserve-v2.md §2.2), and the
 * records endpoint's body.
 *
 * DECODING.  A small hand-written scanner walks the request object (keys in
 * any order).  The small structured parts ("parameters" objects) go through
 * cJSON; tensor "data" arrays, which dominate the cost of a request, are
 * first located as spans and then parsed straight into the typed buffer of
 * the tensor once its datatype and shape are known: flat or nested, numbers
 * through json_num.c, booleans, strings for BYTES.  (Locating a flat numeric
 * "data" array takes one tight loop, skip_flat_numbers, with the general
 * skipper's grammar and messages: 6.9 k instead of 9.5 k instructions for the
 * 64 numbers of a bench-MLP request, callgrind, 2026-12-01.)  With the
 * binary tensor data extension an input declares "binary_data_size" and its
 * bytes follow the JSON header in declaration order; a suitably aligned blob
 * is used in place, otherwise copied.
 *
 * VALIDATION.  Every input must name a model input (once), carry the model's
 * datatype and a shape of the model's rank whose fixed dimensions match;
 * data must hold exactly prod(shape) elements, each within its datatype's
 * range (NaN, Infinity and -Infinity are float values, as Python's json and
 * Triton write them; a finite literal that overflows is refused), BYTES
 * elements without NUL bytes (the engine's strings end at one).  Messages
 * name the input, the field and the expected value, and become the
 * {"error": ...} body.
 *
 * The response side (ENCODING) is kserve_v2_response.c.
 */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "serve/serve.h"

/* ---- datatypes -------------------------------------------------------------- */

/* The names are the engine's one table (inf_dtype_kserve_name, tensor.h). */
const char *inf__serve_kserve_dtype(inf_dtype d) { return inf_dtype_kserve_name(d); }

inf_dtype inf__serve_dtype_from_kserve(const char *s, size_t n) { return inf_dtype_from_kserve_name(s, n); }

/* ---- scanner ------------------------------------------------------------------ */

typedef struct scan {
    const char *base, *p, *end;
    inf_error *err;
    int failed;
    int nonfinite; /* NaN / Infinity / -Infinity are values (inference requests; not records) */
} scan;

static int fail(scan *sc, inf_status st, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail(scan *sc, inf_status st, const char *fmt, ...) {
    if (sc->failed) return -1;
    sc->failed = 1;
    if (sc->err) {
        va_list ap;
        va_start(ap, fmt);
        sc->err->status = st;
        vsnprintf(sc->err->message, sizeof sc->err->message, fmt, ap);
        va_end(ap);
    }
    return -1;
}

/* A callee has already written sc->err: mark the scan failed. */
static int failed_in_callee(scan *sc) {
    sc->failed = 1;
    return -1;
}

static void ws(scan *sc) {
    while (sc->p < sc->end && (*sc->p == ' ' || *sc->p == '\n' || *sc->p == '\r' || *sc->p == '\t')) sc->p++;
}

/* Skips whitespace; when the next byte is c, consumes it and returns 1. */
static int eat(scan *sc, char c) {
    ws(sc);
    if (sc->p < sc->end && *sc->p == c) {
        sc->p++;
        return 1;
    }
    return 0;
}

static int expect(scan *sc, char c, const char *where) {
    if (eat(sc, c)) return 0;
    if (sc->p >= sc->end)
        return fail(sc, INF_EFORMAT, "malformed JSON: unexpected end of input in %s (expected '%c')", where, c);
    return fail(sc, INF_EFORMAT, "malformed JSON at offset %ld in %s: expected '%c', found '%c'",
                (long)(sc->p - sc->base), where, c, *sc->p);
}

static int hexval(char c);

/* 1 when p (just after a backslash) starts a JSON escape: one of "\/bfnrt
 * or u and four hex digits. */
static int valid_escape(const char *p, const char *end) {
    if (*p && strchr("\"\\/bfnrt", *p)) return 1;
    if (*p != 'u' || end - p < 5) return 0;
    for (int i = 1; i <= 4; i++)
        if (hexval(p[i]) < 0) return 0;
    return 1;
}

/* A string token: [s, s+n) raw (escapes not decoded); has_esc when it has '\'. */
static int str_span(scan *sc, const char **s, size_t *n, int *has_esc, const char *where) {
    if (expect(sc, '"', where)) return -1;
    const char *start = sc->p;
    int esc = 0;
    while (sc->p < sc->end && *sc->p != '"') {
        if ((unsigned char)*sc->p < 0x20)
            return fail(sc, INF_EFORMAT, "malformed JSON at offset %ld in %s: control character in string",
                        (long)(sc->p - sc->base), where);
        if (*sc->p == '\\') {
            esc = 1;
            sc->p++;
            if (sc->p >= sc->end) break;
            if (!valid_escape(sc->p, sc->end))
                return fail(sc, INF_EFORMAT, "malformed JSON at offset %ld in %s: invalid escape '\\%c' in string",
                            (long)(sc->p - sc->base), where, *sc->p);
        }
        sc->p++;
    }
    if (sc->p >= sc->end) return fail(sc, INF_EFORMAT, "malformed JSON: unterminated string in %s", where);
    *s = start;
    *n = (size_t)(sc->p - start);
    if (has_esc) *has_esc = esc;
    sc->p++;
    return 0;
}

static int hexval(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* Decodes a raw string span (with escapes) into a malloc'd NUL-terminated
 * string; *out_len gets its length.  NULL on a bad escape, a lone UTF-16
 * surrogate (or no memory). */
static char *unescape(const char *s, size_t n, size_t *out_len) {
    char *o = malloc(n + 1);
    if (!o) return NULL;
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] != '\\') {
            o[k++] = s[i];
            continue;
        }
        if (++i >= n) goto bad;
        switch (s[i]) {
        case '"': o[k++] = '"'; break;
        case '\\': o[k++] = '\\'; break;
        case '/': o[k++] = '/'; break;
        case 'b': o[k++] = '\b'; break;
        case 'f': o[k++] = '\f'; break;
        case 'n': o[k++] = '\n'; break;
        case 'r': o[k++] = '\r'; break;
        case 't': o[k++] = '\t'; break;
        case 'u': {
            unsigned cp = 0;
            for (int j = 1; j <= 4; j++) {
                if (i + j >= n) goto bad;
                int h = hexval(s[i + j]);
                if (h < 0) goto bad;
                cp = cp * 16 + (unsigned)h;
            }
            i += 4;
            if (cp >= 0xD800 && cp <= 0xDBFF && i + 6 < n && s[i + 1] == '\\' &&
                s[i + 2] == 'u') {
                unsigned lo = 0;
                int okk = 1;
                for (int j = 3; j <= 6; j++) {
                    int h = hexval(s[i + j]);
                    if (h < 0) okk = 0;
                    lo = lo * 16 + (unsigned)(h < 0 ? 0 : h);
                }
                if (okk && lo >= 0xDC00 && lo <= 0xDFFF) {
                    cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                    i += 6;
                }
            }
            if (cp >= 0xD800 && cp <= 0xDFFF) goto bad; /* a lone surrogate is no character (not UTF-8) */
            if (cp < 0x80) {
                o[k++] = (char)cp;
            } else if (cp < 0x800) {
                o[k++] = (char)(0xC0 | (cp >> 6));
                o[k++] = (char)(0x80 | (cp & 0x3F));
            } else if (cp < 0x10000) {
                o[k++] = (char)(0xE0 | (cp >> 12));
                o[k++] = (char)(0x80 | ((cp >> 6) & 0x3F));
                o[k++] = (char)(0x80 | (cp & 0x3F));
            } else {
                o[k++] = (char)(0xF0 | (cp >> 18));
                o[k++] = (char)(0x80 | ((cp >> 12) & 0x3F));
                o[k++] = (char)(0x80 | ((cp >> 6) & 0x3F));
                o[k++] = (char)(0x80 | (cp & 0x3F));
            }
            break;
        }
        default: goto bad;
        }
    }
    o[k] = 0;
    *out_len = k;
    return o;
bad:
    free(o);
    return NULL;
}

static int skip_value(scan *sc, int depth, const char *where);

/* The non-finite spellings of JSON's common extension (Python's json,
 * rapidjson's kParseNanAndInfFlag as Triton parses requests): the length of
 * the one s starts with, its value in *out (may be NULL); 0 if none. */
static size_t nonfinite_len(const char *s, const char *end, double *out) {
    static const struct {
        const char *text;
        size_t n;
        int sign; /* 0 = NaN */
    } lits[] = {{"-Infinity", 9, -1}, {"Infinity", 8, 1}, {"-Inf", 4, -1}, {"Inf", 3, 1}, {"NaN", 3, 0}};
    for (size_t i = 0; i < sizeof lits / sizeof lits[0]; i++) {
        if ((size_t)(end - s) < lits[i].n || memcmp(s, lits[i].text, lits[i].n)) continue;
        if (out) *out = lits[i].sign ? lits[i].sign * (double)INFINITY : (double)NAN;
        return lits[i].n;
    }
    return 0;
}

static const char *skip_ws(const char *p, const char *end) {
    while (p < end && (*p == ' ' || *p == '\n' || *p == '\r' || *p == '\t')) p++;
    return p;
}

/* A flat, non-empty array of numbers -- a tensor's "data" row, the bulk of a
 * request -- skipped in one loop with the grammar of the general path
 * (numbers checked by inf__serve_number_len, commas between, whitespace
 * anywhere).  Returns 1 with sc->p past the ']', or 0 with sc->p unmoved
 * for anything else (nesting, other values, a malformed array), which the
 * general path then walks and reports. */
static int skip_flat_numbers(scan *sc) {
    const char *p = sc->p + 1, *end = sc->end;
    for (;;) {
        p = skip_ws(p, end);
        size_t n = inf__serve_number_len(p, end);
        if (!n) return 0;
        p = skip_ws(p + n, end);
        if (p >= end) return 0;
        if (*p == ']') {
            sc->p = p + 1;
            return 1;
        }
        if (*p != ',') return 0;
        p++;
    }
}

static int skip_container(scan *sc, char open, char close, int depth, const char *where) {
    if (depth > 64) return fail(sc, INF_EFORMAT, "malformed JSON: nesting deeper than 64 in %s", where);
    if (open == '[' && skip_flat_numbers(sc)) return 0;
    sc->p++; /* open */
    if (eat(sc, close)) return 0;
    for (;;) {
        if (open == '{') {
            const char *k;
            size_t kn;
            if (str_span(sc, &k, &kn, NULL, where) || expect(sc, ':', where)) return -1;
        }
        if (skip_value(sc, depth + 1, where)) return -1;
        if (eat(sc, ',')) continue;
        return expect(sc, close, where);
    }
}

static int skip_value(scan *sc, int depth, const char *where) {
    ws(sc);
    if (sc->p >= sc->end) return fail(sc, INF_EFORMAT, "malformed JSON: unexpected end of input in %s", where);
    char c = *sc->p;
    if (c == '{') return skip_container(sc, '{', '}', depth, where);
    if (c == '[') return skip_container(sc, '[', ']', depth, where);
    if (c == '"') {
        const char *s;
        size_t n;
        return str_span(sc, &s, &n, NULL, where);
    }
    static const char *const lits[] = {"true", "false", "null"};
    static const size_t lit_len[] = {4, 5, 4};
    for (int i = 0; i < 3; i++) {
        if (c == lits[i][0] && (size_t)(sc->end - sc->p) >= lit_len[i] && !memcmp(sc->p, lits[i], lit_len[i])) {
            sc->p += lit_len[i];
            return 0;
        }
    }
    size_t n = inf__serve_number_len(sc->p, sc->end); /* checked, not converted: skipped */
    if (!n && sc->nonfinite) n = nonfinite_len(sc->p, sc->end, NULL);
    if (!n)
        return fail(sc, INF_EFORMAT, "malformed JSON at offset %ld in %s: unexpected '%c'", (long)(sc->p - sc->base),
                    where, c);
    sc->p += n;
    return 0;
}

/* Iterates an object: calls fn(key, keylen) positioned at the value. */
#define FOR_EACH_KEY(sc, where, KEY, KLEN, BODY)                                                                     \
    do {                                                                                                             \
        if (expect(sc, '{', where)) goto out;                                                                         \
        ws(sc);                                                                                                      \
        if ((sc)->p < (sc)->end && *(sc)->p == '}') {                                                                \
            (sc)->p++;                                                                                               \
            break;                                                                                                   \
        }                                                                                                            \
        for (;;) {                                                                                                   \
            const char *KEY;                                                                                         \
            size_t KLEN;                                                                                             \
            if (str_span(sc, &KEY, &KLEN, NULL, where) || expect(sc, ':', where)) goto out;                          \
            BODY;                                                                                                    \
            ws(sc);                                                                                                  \
            if ((sc)->p < (sc)->end && *(sc)->p == ',') {                                                            \
                (sc)->p++;                                                                                           \
                continue;                                                                                            \
            }                                                                                                        \
            if (expect(sc, '}', where)) goto out;                                                                     \
            break;                                                                                                   \
        }                                                                                                            \
    } while (0)

static int key_is(const char *k, size_t n, const char *lit) { return strlen(lit) == n && !memcmp(k, lit, n); }

/* A string value as an owned C string. */
static int get_string(scan *sc, char **out, const char *where) {
    const char *s = NULL;
    size_t n = 0;
    int esc = 0;
    if (str_span(sc, &s, &n, &esc, where)) return -1;
    size_t len = 0;
    char *v = esc ? unescape(s, n, &len) : NULL;
    if (!esc) {
        v = malloc(n + 1);
        if (v) memcpy(v, s, n), v[n] = 0;
    }
    if (!v) return fail(sc, INF_EFORMAT, "bad string escape in %s", where);
    if (esc && memchr(v, 0, len)) {
        free(v);
        return fail(sc, INF_EINVAL, "%s contains a NUL character", where);
    }
    free(*out);
    *out = v;
    return 0;
}

/* A "parameters" object through cJSON. */
static int get_params(scan *sc, cJSON **out, const char *where) {
    ws(sc);
    const char *start = sc->p;
    if (sc->p >= sc->end || *sc->p != '{') return fail(sc, INF_EFORMAT, "%s: 'parameters' must be an object", where);
    if (skip_value(sc, 0, where)) return -1;
    cJSON *j = cJSON_ParseWithLength(start, (size_t)(sc->p - start));
    if (!j) /* the scanner checked the grammar and the escape syntax: left are lone \u surrogates (or memory) */
        return fail(sc, INF_EFORMAT, "%s: cannot parse 'parameters' (a \\u escape that is no character?)", where);
    cJSON_Delete(*out);
    *out = j;
    return 0;
}

/* An integer parameter: 1 with *out, 0 when absent, -1 when not an integer
 * (a string, a fraction, or beyond 2^53 where a JSON number stops being one
 * exactly). */
static int param_int(const cJSON *params, const char *key, int64_t *out) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(params, key);
    if (!v) return 0;
    if (!cJSON_IsNumber(v)) return -1;
    double d = v->valuedouble;
    if (!(fabs(d) <= 9007199254740992.0) || d != floor(d)) return -1;
    *out = (int64_t)d;
    return 1;
}

static int param_bool(const cJSON *params, const char *key, int *out) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(params, key);
    if (!v) return 0;
    if (!cJSON_IsBool(v)) return -1;
    *out = cJSON_IsTrue(v);
    return 1;
}

/* ---- tensor data ------------------------------------------------------------- */

/* The engine's strings end at a NUL: an element with one inside is refused,
 * not silently cut (INF__SERVE_NUL_MSG, serve.h). */

/* NESTED DATA.  "data" is flat (one array of prod(shape) elements, row
 * major) or nested exactly as the shape: ndim levels of arrays, the arrays
 * at level d holding dims[d-1] items, elements only at the innermost
 * level.  Ragged rows ([[13 values],[11 values]] for [2,12]) are refused
 * rather than re-flowed into other rows.  Counted while parsing: items[d]
 * is the number of items seen in the open array at depth d (elements are
 * counted once the data has nested: elements before the first inner array
 * leave that count short, which fails the check, or the element count). */
typedef struct nesting {
    int max_depth;                     /* deepest '[' seen */
    int64_t items[INF_MAX_DIMS + 2];
    int bad_depth;                     /* where it went wrong (for the message) */
    int64_t bad_items;                 /* how many items that array had; -1: an element at the wrong level */
} nesting;

static int nest_open(nesting *n, int depth) {
    if (depth > 1) n->items[depth - 1]++;
    n->items[depth] = 0;
    if (depth > n->max_depth) n->max_depth = depth;
    return 0;
}

/* An element at depth: nested data keeps elements at level ndim only. */
static int nest_leaf(nesting *n, int depth, const srv_input *in) {
    n->items[depth]++;
    if (n->max_depth > 1 && depth != in->ndim) {
        n->bad_depth = depth;
        n->bad_items = -1;
        return 1;
    }
    return 0;
}

/* Closing the array at depth: in nested data it holds dims[depth-1] items. */
static int nest_close(nesting *n, int depth, const srv_input *in) {
    if (n->max_depth <= 1) return 0; /* flat so far: the element count decides */
    if (depth > in->ndim || n->items[depth] != in->dims[depth - 1]) {
        n->bad_depth = depth;
        n->bad_items = n->items[depth];
        return 1;
    }
    return 0;
}

static int ragged(scan *outer, const srv_input *in, const nesting *n) {
    char sh[96];
    inf__serve_shape_str(sh, sizeof sh, in->ndim, in->dims);
    if (n->bad_items < 0 || n->bad_depth > in->ndim)
        return fail(outer, INF_ESHAPE,
                    "input '%s': nested data does not follow shape %s: it nests %d level%s deep where the shape has %d "
                    "(give data flat, or nested exactly as the shape)",
                    in->name, sh, n->max_depth > n->bad_depth ? n->max_depth : n->bad_depth,
                    (n->max_depth > n->bad_depth ? n->max_depth : n->bad_depth) == 1 ? "" : "s", in->ndim);
    return fail(outer, INF_ESHAPE,
                "input '%s': nested data does not follow shape %s: an array at level %d has %lld items where the shape "
                "has %lld (ragged rows are refused, not re-flowed)",
                in->name, sh, n->bad_depth, (long long)n->bad_items, (long long)in->dims[n->bad_depth - 1]);
}

/* Parses a "data" span into in->data (numel elements of in->dtype). */
static int parse_data(scan *outer, srv_input *in, const char *span, size_t span_len, int64_t numel) {
    scan sc = {outer->base, span, span + span_len, outer->err, 0, outer->nonfinite};
    const char *nm = in->name;
    size_t esz = inf_dtype_size(in->dtype);
    if (in->dtype == INF_DTYPE_F16 || in->dtype == INF_DTYPE_BF16)
        return fail(outer, INF_ETYPE,
                    "input '%s': %s data cannot be given as JSON; use the binary tensor data extension", nm,
                    in->dtype == INF_DTYPE_F16 ? "FP16" : "BF16");
    if (numel > 4096 && numel > (int64_t)span_len) { /* each element takes a byte: do not allocate for a lie */
        char sh[96];
        inf__serve_shape_str(sh, sizeof sh, in->ndim, in->dims);
        return fail(outer, INF_ESHAPE, "input '%s': data of %zu bytes cannot hold the %lld elements shape %s needs", nm,
                    span_len, (long long)numel, sh);
    }
    if (in->dtype == INF_DTYPE_STRING) {
        in->strings = calloc((size_t)(numel ? numel : 1), sizeof(char *));
        if (!in->strings) return fail(outer, INF_ENOMEM, "input '%s': out of memory", nm);
        in->n_strings = numel;
        in->data = malloc((size_t)(numel ? numel : 1) * sizeof(char *));
        if (!in->data) return fail(outer, INF_ENOMEM, "input '%s': out of memory", nm);
    } else {
        in->data = malloc((size_t)(numel ? numel : 1) * esz);
        if (!in->data) return fail(outer, INF_ENOMEM, "input '%s': data of %lld elements: out of memory", nm, (long long)numel);
    }
    int64_t k = 0;
    int depth = 0;
    nesting nest = {0};
    const char *p = sc.p, *end = sc.end;
    for (;;) {
        while (p < end && (*p == ' ' || *p == '\n' || *p == '\r' || *p == '\t' || *p == ',')) p++;
        if (p >= end) break;
        char c = *p;
        if (c == '[') {
            if (++depth > INF_MAX_DIMS + 1)
                return fail(outer, INF_EFORMAT, "input '%s': data nested deeper than the shape", nm);
            if (nest_open(&nest, depth)) return ragged(outer, in, &nest);
            p++;
            continue;
        }
        if (c == ']') {
            if (depth < 1) return fail(outer, INF_EFORMAT, "input '%s': unbalanced ']' in data", nm);
            if (nest_close(&nest, depth, in)) return ragged(outer, in, &nest);
            --depth;
            p++;
            continue;
        }
        if (nest.max_depth > 1 && nest_leaf(&nest, depth, in)) /* flat data: the element count decides */
            return ragged(outer, in, &nest);
        if (k >= numel) {
            char sh[96];
            inf__serve_shape_str(sh, sizeof sh, in->ndim, in->dims);
            /* count the rest for the message */
            int64_t more = 0;
            for (const char *q = p; q < end; q++) more += (*q == ',');
            return fail(outer, INF_ESHAPE, "input '%s': data has %lld elements but shape %s holds %lld", nm,
                        (long long)(numel + 1 + more), sh, (long long)numel);
        }
        size_t n = 0;
        switch (in->dtype) {
        case INF_DTYPE_F32:
        case INF_DTYPE_F64: {
            double d;
            n = inf__serve_parse_double(p, end, &d);
            if (n && (!isfinite(d) || (in->dtype == INF_DTYPE_F32 && isinf((float)d))))
                return fail(outer, INF_ERANGE,
                            "input '%s': element %lld (%.*s) is out of range for %s (an infinity is written "
                            "Infinity or -Infinity)",
                            nm, (long long)k, (int)(n < 40 ? n : 40), p, inf__serve_kserve_dtype(in->dtype));
            if (!n) n = nonfinite_len(p, end, &d);
            if (!n) goto bad_elem;
            if (in->dtype == INF_DTYPE_F32)
                ((float *)in->data)[k] = (float)d;
            else
                ((double *)in->data)[k] = d;
            break;
        }
        case INF_DTYPE_BOOL: {
            uint8_t b;
            if (end - p >= 4 && !memcmp(p, "true", 4)) {
                b = 1, n = 4;
            } else if (end - p >= 5 && !memcmp(p, "false", 5)) {
                b = 0, n = 5;
            } else if ((*p == '0' || *p == '1') && (p + 1 >= end || (unsigned)(p[1] - '0') >= 10)) {
                b = (uint8_t)(*p - '0'), n = 1;
            } else {
                goto bad_elem;
            }
            ((uint8_t *)in->data)[k] = b;
            break;
        }
        case INF_DTYPE_STRING: {
            if (*p != '"') goto bad_elem;
            sc.p = p;
            const char *s = NULL;
            size_t sn = 0;
            int esc = 0;
            if (str_span(&sc, &s, &sn, &esc, nm)) {
                outer->failed = 1;
                return -1;
            }
            size_t len = sn;
            char *v = esc ? unescape(s, sn, &len) : malloc(sn + 1);
            if (!v)
                return fail(outer, INF_EFORMAT, "input '%s': element %lld: a \\u escape that is no character (a lone "
                            "UTF-16 surrogate)", nm, (long long)k);
            if (!esc) memcpy(v, s, sn), v[sn] = 0;
            if (memchr(v, 0, len)) {
                free(v);
                return fail(outer, INF_EINVAL, INF__SERVE_NUL_MSG, nm, (long long)k);
            }
            in->strings[k] = v;
            ((char **)in->data)[k] = v;
            n = (size_t)(sc.p - p);
            break;
        }
        case INF_DTYPE_U64: {
            uint64_t u;
            n = inf__serve_parse_u64(p, end, &u);
            if (!n) goto bad_elem;
            ((uint64_t *)in->data)[k] = u;
            break;
        }
        default: { /* signed and small unsigned integers */
            int64_t v;
            n = inf__serve_parse_i64(p, end, &v);
            if (!n) goto bad_elem;
            static const struct {
                inf_dtype d;
                int64_t lo, hi;
            } ranges[] = {{INF_DTYPE_I8, -128, 127},          {INF_DTYPE_U8, 0, 255},
                          {INF_DTYPE_I16, -32768, 32767},     {INF_DTYPE_U16, 0, 65535},
                          {INF_DTYPE_I32, INT32_MIN, INT32_MAX}, {INF_DTYPE_U32, 0, UINT32_MAX},
                          {INF_DTYPE_I64, INT64_MIN, INT64_MAX}};
            int found = 0;
            for (size_t r = 0; r < sizeof ranges / sizeof ranges[0]; r++) {
                if (ranges[r].d != in->dtype) continue;
                found = 1;
                if (v < ranges[r].lo || v > ranges[r].hi)
                    return fail(outer, INF_ERANGE, "input '%s': element %lld = %lld is out of range for %s", nm,
                                (long long)k, (long long)v, inf__serve_kserve_dtype(in->dtype));
            }
            if (!found) return fail(outer, INF_ETYPE, "input '%s': datatype not supported in JSON", nm);
            switch (in->dtype) {
            case INF_DTYPE_I8: ((int8_t *)in->data)[k] = (int8_t)v; break;
            case INF_DTYPE_U8: ((uint8_t *)in->data)[k] = (uint8_t)v; break;
            case INF_DTYPE_I16: ((int16_t *)in->data)[k] = (int16_t)v; break;
            case INF_DTYPE_U16: ((uint16_t *)in->data)[k] = (uint16_t)v; break;
            case INF_DTYPE_I32: ((int32_t *)in->data)[k] = (int32_t)v; break;
            case INF_DTYPE_U32: ((uint32_t *)in->data)[k] = (uint32_t)v; break;
            default: ((int64_t *)in->data)[k] = v; break;
            }
        }
        }
        p += n;
        k++;
        /* the next byte must end the element */
        if (p < end && !(*p == ',' || *p == ']' || *p == ' ' || *p == '\n' || *p == '\r' || *p == '\t')) goto bad_elem_after;
        continue;
    bad_elem:;
        {
            char tok[24];
            size_t tn = 0;
            while (p + tn < end && tn < sizeof tok - 1 && p[tn] != ',' && p[tn] != ']') tn++;
            memcpy(tok, p, tn);
            tok[tn] = 0;
            return fail(outer, INF_ETYPE, "input '%s': element %lld ('%s') is not a valid %s value", nm, (long long)k,
                        tok, inf__serve_kserve_dtype(in->dtype));
        }
    bad_elem_after:
        return fail(outer, INF_ETYPE, "input '%s': element %lld is not a valid %s value", nm, (long long)(k - 1),
                    inf__serve_kserve_dtype(in->dtype));
    }
    if (depth != 0) return fail(outer, INF_EFORMAT, "input '%s': unbalanced '[' in data", nm);
    if (k != numel) {
        char sh[96];
        inf__serve_shape_str(sh, sizeof sh, in->ndim, in->dims);
        return fail(outer, INF_ESHAPE, "input '%s': data has %lld elements but shape %s needs %lld", nm, (long long)k,
                    sh, (long long)numel);
    }
    return 0;
}

/* ---- request ------------------------------------------------------------------ */

void inf__serve_infer_request_clear(srv_infer_request *req) {
    for (int i = 0; i < req->n_inputs; i++) {
        srv_input *in = &req->inputs[i];
        free(in->name);
        if (in->strings)
            for (int64_t k = 0; k < in->n_strings; k++) free(in->strings[k]);
        free(in->strings);
        if (!in->borrowed_data) free(in->data);
    }
    free(req->inputs);
    for (int i = 0; i < req->n_outputs; i++) free(req->outputs[i].name);
    free(req->outputs);
    free(req->id);
    memset(req, 0, sizeof *req);
}

typedef struct input_tmp {
    const char *data_span;
    size_t data_len;
    int64_t binary_size; /* -1 = none */
    int has_shape;
    char *dtype_name;
} input_tmp;

static int parse_shape(scan *sc, srv_input *in) {
    const char *where = in->name ? in->name : "input";
    if (expect(sc, '[', "shape")) return -1;
    in->ndim = 0;
    if (eat(sc, ']')) return 0;
    for (;;) {
        ws(sc);
        int64_t v;
        size_t n = inf__serve_parse_i64(sc->p, sc->end, &v);
        if (!n || v < 0)
            return fail(sc, INF_EINVAL, "input '%s': shape must be a list of non-negative integers", where);
        if (in->ndim >= INF_MAX_DIMS)
            return fail(sc, INF_ESHAPE, "input '%s': shape has more than %d dimensions", where, INF_MAX_DIMS);
        in->dims[in->ndim++] = v;
        sc->p += n;
        if (eat(sc, ',')) continue;
        return expect(sc, ']', "shape");
    }
}

static int parse_input(scan *sc, srv_input *in, input_tmp *tmp) {
    cJSON *params = NULL;
    tmp->binary_size = -1;
    FOR_EACH_KEY(sc, "inputs[]", key, klen, {
        if (key_is(key, klen, "name")) {
            if (get_string(sc, &in->name, "input name")) goto out;
        } else if (key_is(key, klen, "datatype")) {
            if (get_string(sc, &tmp->dtype_name, "datatype")) goto out;
        } else if (key_is(key, klen, "shape")) {
            if (parse_shape(sc, in)) goto out;
            tmp->has_shape = 1;
        } else if (key_is(key, klen, "data")) {
            ws(sc);
            tmp->data_span = sc->p;
            if (skip_value(sc, 0, "data")) goto out;
            tmp->data_len = (size_t)(sc->p - tmp->data_span);
        } else if (key_is(key, klen, "parameters")) {
            if (get_params(sc, &params, "input parameters")) goto out;
        } else {
            if (skip_value(sc, 0, "input")) goto out;
        }
    });
    if (params) {
        int64_t bs;
        int r = param_int(params, "binary_data_size", &bs);
        if (r < 0 || (r > 0 && bs < 0)) {
            fail(sc, INF_EINVAL, "input '%s': parameters.binary_data_size must be a non-negative integer",
                 in->name ? in->name : "?");
            goto out;
        }
        if (r > 0) tmp->binary_size = bs;
    }
out:
    cJSON_Delete(params);
    return sc->failed ? -1 : 0;
}

static int parse_output(scan *sc, srv_output_req *o) {
    cJSON *params = NULL;
    o->binary = -1;
    FOR_EACH_KEY(sc, "outputs[]", key, klen, {
        if (key_is(key, klen, "name")) {
            if (get_string(sc, &o->name, "output name")) goto out;
        } else if (key_is(key, klen, "parameters")) {
            if (get_params(sc, &params, "output parameters")) goto out;
        } else {
            if (skip_value(sc, 0, "output")) goto out;
        }
    });
    if (params) {
        int b;
        int r = param_bool(params, "binary_data", &b);
        if (r < 0) {
            fail(sc, INF_EINVAL, "output '%s': parameters.binary_data must be a boolean", o->name ? o->name : "?");
            goto out;
        }
        if (r > 0) o->binary = b;
        int64_t k;
        if (param_int(params, "classification", &k) != 0) {
            fail(sc, INF_EUNSUPPORTED, "output '%s': the classification extension is not supported",
                 o->name ? o->name : "?");
            goto out;
        }
    }
out:
    cJSON_Delete(params);
    return sc->failed ? -1 : 0;
}

static int grow(void **arr, int n, size_t elem) {
    if (n & (n - 1)) return 0; /* capacity doubles at powers of two */
    void *p = realloc(*arr, (size_t)(n ? 2 * n : 4) * elem);
    if (!p) return -1;
    memset((char *)p + (size_t)n * elem, 0, (size_t)(n ? n : 4) * elem);
    *arr = p;
    return 0;
}

/* Checks a decoded input against the model and binds it (infer_bind.c). */
static int check_input(scan *sc, const inf_model *model, srv_input *in, const input_tmp *tmp,
                       const uint8_t *seen) {
    if (inf__serve_bind_input(model, in, tmp->dtype_name, tmp->has_shape, seen, sc->err) != INF_OK) sc->failed = 1;
    return sc->failed ? -1 : 0;
}

/* "id": a string of valid UTF-8, echoed in the response. */
static int parse_request_id(scan *sc, srv_infer_request *req) {
    ws(sc);
    if (sc->p >= sc->end || *sc->p != '"') return fail(sc, INF_EINVAL, "'id' must be a string");
    if (get_string(sc, &req->id, "id")) return -1;
    if (!inf__serve_utf8_valid(req->id, strlen(req->id))) {
        /* a JSON text is UTF-8 (RFC 8259 §8.1): echoed, these bytes would make the
         * response invalid JSON, and a changed id would not match the caller's */
        fail(sc, INF_EFORMAT, "'id' is not valid UTF-8 text");
        return -1;
    }
    return 0;
}

/* "inputs": [ {...}, ... ] -- each input's header, its data span kept in *tmps for later; sets *have_inputs. */
static int parse_inputs(scan *sc, srv_infer_request *req, input_tmp **tmps, int *have_inputs) {
    *have_inputs = 1;
    if (expect(sc, '[', "inputs")) return -1;
    if (eat(sc, ']')) return 0;
    for (;;) {
        if (grow((void **)&req->inputs, req->n_inputs, sizeof(srv_input)) ||
            grow((void **)tmps, req->n_inputs, sizeof(input_tmp)))
            return fail(sc, INF_ENOMEM, "out of memory decoding inputs");
        srv_input *in = &req->inputs[req->n_inputs];
        input_tmp *tmp = &(*tmps)[req->n_inputs];
        req->n_inputs++;
        if (parse_input(sc, in, tmp)) return -1;
        if (eat(sc, ',')) continue;
        return expect(sc, ']', "inputs") ? -1 : 0;
    }
}

/* "outputs": [ {...}, ... ] -- the outputs asked for and their parameters. */
static int parse_outputs(scan *sc, srv_infer_request *req) {
    if (expect(sc, '[', "outputs")) return -1;
    if (eat(sc, ']')) return 0;
    for (;;) {
        if (grow((void **)&req->outputs, req->n_outputs, sizeof(srv_output_req)))
            return fail(sc, INF_ENOMEM, "out of memory decoding outputs");
        if (parse_output(sc, &req->outputs[req->n_outputs++])) return -1;
        if (eat(sc, ',')) continue;
        return expect(sc, ']', "outputs") ? -1 : 0;
    }
}

/* The request object's members, in any order; unknown members are skipped. */
static int parse_request_object(scan *sc, srv_infer_request *req, input_tmp **tmps, cJSON **params,
                                int *have_inputs) {
    sc->p++; /* '{' */
    if (eat(sc, '}')) return 0;
    for (;;) {
        const char *key;
        size_t klen;
        if (str_span(sc, &key, &klen, NULL, "request") || expect(sc, ':', "request")) return -1;
        int rc;
        if (key_is(key, klen, "id")) rc = parse_request_id(sc, req);
        else if (key_is(key, klen, "parameters")) rc = get_params(sc, params, "request parameters");
        else if (key_is(key, klen, "inputs")) rc = parse_inputs(sc, req, tmps, have_inputs);
        else if (key_is(key, klen, "outputs")) rc = parse_outputs(sc, req);
        else rc = skip_value(sc, 0, "request");
        if (rc) return -1;
        if (eat(sc, ',')) continue;
        return expect(sc, '}', "request") ? -1 : 0;
    }
}

/* The request-level parameters Infera reads: binary_data_output, timeout. */
static int apply_request_params(scan *sc, cJSON *params, srv_infer_request *req) {
    if (!params) return 0;
    int b;
    if (param_bool(params, "binary_data_output", &b) < 0)
        return fail(sc, INF_EINVAL, "parameters.binary_data_output must be a boolean");
    if (param_bool(params, "binary_data_output", &b) > 0) req->binary_default = b;
    int64_t t = 0;
    if (param_int(params, "timeout", &t) < 0 || t < 0)
        return fail(sc, INF_EINVAL, "parameters.timeout must be a non-negative integer (microseconds; 0 = the "
                                    "server's --request-timeout-ms)"),
               -1;
    req->timeout_us = t;
    return 0;
}

/* An input's data: the next binary_data_size bytes of the binary part
 * (*bin_off moves past them), or its JSON 'data'. */
static int fill_input_data(scan *sc, srv_input *in, const input_tmp *tmp, int64_t numel, const char *body,
                           size_t body_len, size_t json_len, size_t *bin_off) {
    if (tmp->binary_size < 0) {
        if (!tmp->data_span)
            return fail(sc, INF_EINVAL, "input '%s': missing 'data' (or parameters.binary_data_size)", in->name);
        return parse_data(sc, in, tmp->data_span, tmp->data_len, numel);
    }
    if (tmp->data_span)
        return fail(sc, INF_EINVAL, "input '%s': both 'data' and parameters.binary_data_size are given", in->name);
    if (json_len == body_len && tmp->binary_size > 0)
        return fail(sc, INF_EINVAL,
                    "input '%s': binary_data_size given but the request has no binary part (missing "
                    "Inference-Header-Content-Length header?)",
                    in->name);
    if ((uint64_t)tmp->binary_size > body_len - *bin_off)
        return fail(sc, INF_EFORMAT,
                    "input '%s': binary data truncated: binary_data_size %lld but only %zu bytes remain in the body",
                    in->name, (long long)tmp->binary_size, body_len - *bin_off);
    const uint8_t *blob = (const uint8_t *)body + *bin_off;
    size_t bs = (size_t)tmp->binary_size;
    *bin_off += bs;
    if (inf__serve_input_from_blob(in, blob, bs, numel, tmp->dtype_name, "binary_data_size", sc->err) != INF_OK)
        return failed_in_callee(sc);
    return 0;
}

/* Binds every input to the model, fills its data, and checks that the
 * binary part is used exactly and that no required input is missing. */
static int bind_inputs(scan *sc, const inf_model *model, srv_infer_request *req, const input_tmp *tmps,
                       const char *body, size_t body_len, size_t json_len) {
    uint8_t seen[256] = {0};
    size_t bin_off = json_len;
    for (int i = 0; i < req->n_inputs; i++) {
        srv_input *in = &req->inputs[i];
        if (check_input(sc, model, in, &tmps[i], seen)) return -1;
        seen[in->model_index] = 1;
        int64_t numel = 1;
        if (inf__serve_input_numel(in, &numel, sc->err) != INF_OK) return failed_in_callee(sc);
        if (fill_input_data(sc, in, &tmps[i], numel, body, body_len, json_len, &bin_off)) return -1;
        inf_tensor_init_view(&in->t, in->dtype, in->ndim, in->dims, in->data);
    }
    if (bin_off != body_len)
        return fail(sc, INF_EFORMAT, "binary part has %zu bytes but the inputs declare %zu", body_len - json_len,
                    bin_off - json_len);
    if (inf__serve_infer_check_complete(model, req, seen, sc->err) != INF_OK) return failed_in_callee(sc);
    return 0;
}

/* Decodes a KServe V2 inference request: the JSON header (json_len bytes),
 * then the binary part, into req, bound to model's inputs. */
inf_status inf__serve_decode_infer(const char *body, size_t body_len, size_t json_len, const inf_model *model,
                                   srv_infer_request *req, inf_error *err) {
    memset(req, 0, sizeof *req);
    scan sc0 = {body, body, body + json_len, err, 0, 1};
    scan *sc = &sc0;
    input_tmp *tmps = NULL;
    cJSON *params = NULL;
    int have_inputs = 0;
    if (inf_model_n_inputs(model) > 256) {
        fail(sc, INF_EUNSUPPORTED, "models with more than 256 inputs are not served");
        goto done;
    }
    ws(sc);
    if (sc->p >= sc->end || *sc->p != '{') {
        fail(sc, INF_EFORMAT, json_len   ? "malformed JSON: the request must be a JSON object"
                              : body_len ? "Inference-Header-Content-Length is 0: the request has no JSON header"
                                         : "empty request body: expected a JSON inference request");
        goto done;
    }
    if (parse_request_object(sc, req, &tmps, &params, &have_inputs)) goto done;
    ws(sc);
    if (sc->p != sc->end) {
        fail(sc, INF_EFORMAT, "malformed JSON: unexpected data after the request object at offset %ld%s",
             (long)(sc->p - sc->base),
             json_len == body_len ? " (binary tensor data needs the Inference-Header-Content-Length header)" : "");
        goto done;
    }
    if (!have_inputs) {
        fail(sc, INF_EINVAL, "the request has no 'inputs'");
        goto done;
    }
    if (apply_request_params(sc, params, req)) goto done;
    bind_inputs(sc, model, req, tmps, body, body_len, json_len);
done:
    cJSON_Delete(params);
    if (tmps) {
        for (int i = 0; i < req->n_inputs; i++) free(tmps[i].dtype_name);
        free(tmps);
    }
    if (sc->failed) {
        inf_status st = err ? err->status : INF_EINVAL;
        inf__serve_infer_request_clear(req);
        return st;
    }
    return INF_OK;
}

/* ---- records endpoint body ----------------------------------------------------- */

/* RECORD NUMBERS.  A record's numeric field values follow /infer's rules:
 * a finite literal beyond the double range (1e999) is refused (400, naming
 * the record and field) instead of becoming an infinity, and NaN, Infinity,
 * -Infinity (Inf, -Inf) are values.  The record reader (src/io) knows no
 * bare non-finite words, so a record holding one is handed on with the word
 * quoted ("Infinity"), which it reads as that number.  Nested values are
 * left to the record reader. */
static int record_numbers(scan *outer, const char *obj, size_t n, int index, srv_buf *fixed) {
    scan sc = {outer->base, obj, obj + n, outer->err, 0, 1};
    const char *copied = obj; /* obj[..copied) is in fixed already */
    fixed->n = 0;
    if (expect(&sc, '{', "record") || eat(&sc, '}')) return sc.failed ? (outer->failed = 1, -1) : 0;
    for (;;) {
        const char *key;
        size_t klen;
        if (str_span(&sc, &key, &klen, NULL, "record") || expect(&sc, ':', "record")) break;
        ws(&sc);
        const char *v = sc.p;
        double d;
        size_t nl = inf__serve_number_len(v, sc.end);
        if (nl) {
            inf__serve_parse_double(v, sc.end, &d);
            if (!isfinite(d)) {
                fail(&sc, INF_ERANGE,
                     "records[%d]: field '%.*s': %.*s is out of range for a number (an infinity is written Infinity "
                     "or -Infinity)",
                     index, (int)(klen < 100 ? klen : 100), key, (int)(nl < 40 ? nl : 40), v);
                break;
            }
            sc.p += nl;
        } else if ((nl = nonfinite_len(v, sc.end, NULL))) {
            inf__serve_buf_put(fixed, copied, (size_t)(v - copied));
            inf__serve_buf_put(fixed, "\"", 1);
            inf__serve_buf_put(fixed, v, nl);
            inf__serve_buf_put(fixed, "\"", 1);
            copied = v + nl;
            sc.p += nl;
        } else if (skip_value(&sc, 1, "record")) {
            break;
        }
        if (eat(&sc, ',')) continue;
        expect(&sc, '}', "record");
        break;
    }
    if (sc.failed) {
        outer->failed = 1;
        return -1;
    }
    if (fixed->n || copied != obj) inf__serve_buf_put(fixed, copied, (size_t)(obj + n - copied));
    if (fixed->oom) return fail(outer, INF_ENOMEM, "records[%d]: out of memory", index);
    return 0;
}

inf_status inf__serve_decode_records(const char *body, size_t len,
                                     int (*each)(const char *obj, size_t n, void *user, inf_error *err), void *user,
                                     inf_error *err) {
    scan sc0 = {body, body, body + len, err, 0, 1};
    srv_buf fixed = {0};
    scan *sc = &sc0;
    int have = 0;
    ws(sc);
    if (sc->p >= sc->end || *sc->p != '{') {
        fail(sc, INF_EFORMAT, "malformed JSON: expected {\"records\": [{...}, ...]}");
        return err ? err->status : INF_EFORMAT;
    }
    sc->p++;
    if (!eat(sc, '}')) {
        for (;;) {
            const char *key;
            size_t klen;
            if (str_span(sc, &key, &klen, NULL, "request") || expect(sc, ':', "request")) goto out;
            if (key_is(key, klen, "records")) {
                have = 1;
                if (expect(sc, '[', "records")) goto out;
                if (!eat(sc, ']')) {
                    for (int i = 0;; i++) {
                        ws(sc);
                        const char *start = sc->p;
                        if (sc->p >= sc->end) {
                            fail(sc, INF_EFORMAT, "malformed JSON: unexpected end of input in records[%d]", i);
                            goto out;
                        }
                        if (*sc->p != '{') {
                            fail(sc, INF_EFORMAT, "records[%d] is not a JSON object", i);
                            goto out;
                        }
                        if (skip_value(sc, 0, "records")) goto out;
                        if (record_numbers(sc, start, (size_t)(sc->p - start), i, &fixed)) goto out;
                        if (fixed.n ? each(fixed.p, fixed.n, user, err) : each(start, (size_t)(sc->p - start), user, err)) {
                            sc->failed = 1;
                            goto out;
                        }
                        if (eat(sc, ',')) continue;
                        if (expect(sc, ']', "records")) goto out;
                        break;
                    }
                }
            } else if (skip_value(sc, 0, "request")) {
                goto out;
            }
            if (eat(sc, ',')) continue;
            if (expect(sc, '}', "request")) goto out;
            break;
        }
    }
    ws(sc);
    if (sc->p != sc->end) fail(sc, INF_EFORMAT, "malformed JSON: unexpected data after the request object");
    else if (!have) fail(sc, INF_EINVAL, "the request has no 'records' array");
out:
    inf__serve_buf_free(&fixed);
    return sc->failed ? (err ? err->status : INF_EFORMAT) : INF_OK;
}
