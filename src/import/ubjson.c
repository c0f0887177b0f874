/*
 * ubjson.c -- reads a UBJSON document (Universal Binary JSON, draft 12: the
 * format of XGBoost's Booster.save_model("model.ubj"), XGBoost >= 1.6) into
 * a cJSON tree, so that the XGBoost importer (xgboost.c) reads .ubj and
 * .json models with the same code.
 *
 * Supported: null/no-op, true/false, int8/uint8/int16/int32/int64 (big
 * endian), float32/float64, char, string, high-precision numbers (as
 * strings, parsed), arrays and objects, with the optimised forms
 * ($ type and # count; XGBoost writes its node arrays as [$d#L / [$l#L).
 * Bad input never reads past the buffer: every length is checked against
 * the bytes left before anything is allocated, nesting is limited to
 * UBJ_MAX_DEPTH, and the first problem is reported with its byte offset.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "import/import.h"

enum { UBJ_MAX_DEPTH = 64 };

typedef struct ubj {
    const uint8_t *p;
    size_t n, i;
    char *why; /* first error */
    size_t why_len;
    bool failed;
} ubj;

static bool ubj_fail(ubj *u, const char *what) {
    if (!u->failed) snprintf(u->why, u->why_len, "%s at byte %zu", what, u->i);
    u->failed = true;
    return false;
}

static bool ubj_byte(ubj *u, uint8_t *out) {
    if (u->i >= u->n) return ubj_fail(u, "unexpected end of data");
    *out = u->p[u->i++];
    return true;
}

/* Big-endian unsigned of `size` bytes. */
static bool ubj_be(ubj *u, int size, uint64_t *out) {
    if (u->n - u->i < (size_t)size) return ubj_fail(u, "unexpected end of data");
    uint64_t v = 0;
    for (int k = 0; k < size; k++) v = v << 8 | u->p[u->i++];
    *out = v;
    return true;
}

/* An integer of type marker m (i U I l L). */
static bool ubj_int(ubj *u, uint8_t m, int64_t *out) {
    uint64_t v;
    switch (m) {
    case 'i': if (!ubj_be(u, 1, &v)) return false; *out = (int8_t)v; return true;
    case 'U': if (!ubj_be(u, 1, &v)) return false; *out = (uint8_t)v; return true;
    case 'I': if (!ubj_be(u, 2, &v)) return false; *out = (int16_t)v; return true;
    case 'l': if (!ubj_be(u, 4, &v)) return false; *out = (int32_t)v; return true;
    case 'L': if (!ubj_be(u, 8, &v)) return false; *out = (int64_t)v; return true;
    default: return ubj_fail(u, "expected an integer type marker");
    }
}

/* A length (an integer that must be >= 0 and fit in the bytes left, at
 * `min_bytes` bytes per element). */
static bool ubj_length(ubj *u, size_t min_bytes, int64_t *out) {
    uint8_t m;
    if (!ubj_byte(u, &m) || !ubj_int(u, m, out)) return false;
    if (*out < 0) return ubj_fail(u, "negative length");
    if ((uint64_t)*out > (u->n - u->i) / (min_bytes ? min_bytes : 1)) return ubj_fail(u, "length past the end of data");
    return true;
}

static cJSON *ubj_value(ubj *u, uint8_t m, int depth);

/* A string body (after its S marker, or an object key). */
static cJSON *ubj_string(ubj *u, bool key_only, char **key) {
    int64_t len;
    if (!ubj_length(u, 1, &len)) return NULL;
    char *s = cJSON_malloc((size_t)len + 1);
    if (!s) {
        ubj_fail(u, "out of memory");
        return NULL;
    }
    memcpy(s, u->p + u->i, (size_t)len);
    s[len] = 0;
    u->i += (size_t)len;
    if (key_only) {
        *key = s;
        return (cJSON *)1; /* non-NULL: success */
    }
    cJSON *j = cJSON_CreateString(s);
    cJSON_free(s);
    if (!j) ubj_fail(u, "out of memory");
    return j;
}

static size_t ubj_elem_size(uint8_t m) {
    switch (m) {
    case 'i': case 'U': case 'C': return 1;
    case 'I': return 2;
    case 'l': case 'd': return 4;
    case 'L': case 'D': return 8;
    default: return 1;
    }
}

/* The elements of an array or object after its [ or {. */
static cJSON *ubj_container(ubj *u, bool object, int depth) {
    if (depth > UBJ_MAX_DEPTH) {
        ubj_fail(u, "nesting too deep");
        return NULL;
    }
    cJSON *c = object ? cJSON_CreateObject() : cJSON_CreateArray();
    if (!c) {
        ubj_fail(u, "out of memory");
        return NULL;
    }
    uint8_t type = 0, m;
    int64_t count = -1;
    if (u->i < u->n && u->p[u->i] == '$') {
        u->i++;
        if (!ubj_byte(u, &type)) goto bad;
        if (u->i >= u->n || u->p[u->i] != '#') {
            ubj_fail(u, "typed container without a count");
            goto bad;
        }
    }
    if (u->i < u->n && u->p[u->i] == '#') {
        u->i++;
        if (!ubj_length(u, type ? ubj_elem_size(type) : 1, &count)) goto bad;
    }
    cJSON *last = NULL;
    for (int64_t k = 0; count < 0 || k < count; k++) {
        char *key = NULL;
        if (count < 0) {
            if (u->i < u->n && u->p[u->i] == (object ? '}' : ']')) {
                u->i++;
                break;
            }
        }
        if (object && !ubj_string(u, true, &key)) goto bad;
        if (type) m = type;
        else if (!ubj_byte(u, &m)) {
            cJSON_free(key);
            goto bad;
        }
        if (!type && m == 'N') { /* no-op */
            cJSON_free(key);
            k--;
            continue;
        }
        cJSON *v = ubj_value(u, m, depth + 1);
        if (!v) {
            cJSON_free(key);
            goto bad;
        }
        if (object) {
            v->string = key; /* cJSON frees it with the item */
        }
        /* append in O(1): cJSON keeps child->prev as the last element */
        if (!last) {
            c->child = v;
        } else {
            last->next = v;
            v->prev = last;
        }
        c->child->prev = v;
        last = v;
    }
    return c;
bad:
    cJSON_Delete(c);
    return NULL;
}

static cJSON *ubj_value(ubj *u, uint8_t m, int depth) {
    cJSON *j = NULL;
    int64_t iv;
    uint64_t bits;
    switch (m) {
    case 'Z': j = cJSON_CreateNull(); break;
    case 'T': j = cJSON_CreateTrue(); break;
    case 'F': j = cJSON_CreateFalse(); break;
    case 'i': case 'U': case 'I': case 'l': case 'L':
        if (!ubj_int(u, m, &iv)) return NULL;
        j = cJSON_CreateNumber((double)iv);
        break;
    case 'd': {
        if (!ubj_be(u, 4, &bits)) return NULL;
        uint32_t b32 = (uint32_t)bits;
        float f;
        memcpy(&f, &b32, 4);
        j = cJSON_CreateNumber(f);
        break;
    }
    case 'D': {
        if (!ubj_be(u, 8, &bits)) return NULL;
        double d;
        memcpy(&d, &bits, 8);
        j = cJSON_CreateNumber(d);
        break;
    }
    case 'C': {
        uint8_t ch;
        char s[2] = {0, 0};
        if (!ubj_byte(u, &ch)) return NULL;
        s[0] = (char)ch;
        j = cJSON_CreateString(s);
        break;
    }
    case 'S':
    case 'H': return ubj_string(u, false, NULL); /* high precision: kept as a string, read by strtod */
    case '[': return ubj_container(u, false, depth);
    case '{': return ubj_container(u, true, depth);
    default:
        u->i--;
        ubj_fail(u, "unknown type marker");
        return NULL;
    }
    if (!j) ubj_fail(u, "out of memory");
    return j;
}

bool inf__import_is_ubjson_object(const void *data, size_t size) {
    const uint8_t *p = data;
    return size >= 3 && p[0] == '{' && (p[1] == 'i' || p[1] == 'U' || p[1] == 'I' || p[1] == 'l' || p[1] == 'L');
}

cJSON *inf__ubjson_parse(const void *data, size_t size, char *why, size_t why_len) {
    ubj u = {.p = data, .n = size, .why = why, .why_len = why_len};
    uint8_t m;
    if (!ubj_byte(&u, &m)) return NULL;
    cJSON *root = ubj_value(&u, m, 0);
    if (root && u.i != u.n) {
        ubj_fail(&u, "trailing data");
        cJSON_Delete(root);
        return NULL;
    }
    return root;
}
