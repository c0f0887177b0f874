/*
 * record.c -- typed values, timestamps and batches of records (include/infera/io.h).
 *
 * Design: see record_int.h for the layout.  Every function that can allocate
 * returns INF_ENOMEM instead of aborting and leaves the batch consistent
 * (a failed add_row adds nothing; a failed set leaves the old value).
 * Timestamps: UTC microseconds; civil dates use Howard Hinnant's
 * days_from_civil, valid for years 0000-9999.
 * Callers: the sources and sinks of src/io, src/pipeline, the runners.
 */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "io/io_int.h"
#include "io/numfmt.h"
#include "io/record_int.h"

/* ---- arena ---------------------------------------------------------------- */

char *inf__rarena_alloc(inf__rarena *a, size_t n) {
    n = (n + 7) & ~(size_t)7;
    if (a->head && a->head->size - a->head->used >= n) {
        char *p = a->head->data + a->head->used;
        a->head->used += n;
        return p;
    }
    /* take a kept block if big enough, else a new one */
    inf__arena_block *blk = NULL;
    if (a->free && a->free->size >= n) {
        blk = a->free;
        a->free = blk->next;
    } else {
        size_t size = n > 16384 ? n : 16384;
        blk = malloc(sizeof *blk + size);
        if (!blk) return NULL;
        blk->size = size;
    }
    blk->used = n;
    blk->next = a->head;
    a->head = blk;
    return blk->data;
}

void inf__rarena_reset(inf__rarena *a) {
    while (a->head) {
        inf__arena_block *b = a->head;
        a->head = b->next;
        b->next = a->free;
        b->used = 0;
        a->free = b;
    }
}

void inf__rarena_deinit(inf__rarena *a) {
    inf__rarena_reset(a);
    while (a->free) {
        inf__arena_block *b = a->free;
        a->free = b->next;
        free(b);
    }
}

/* ---- values --------------------------------------------------------------- */

static const char *const type_names[] = {"null", "bool", "int", "float", "string", "timestamp"};

const char *inf_field_type_name(inf_field_type type) {
    return (unsigned)type < 6 ? type_names[type] : "invalid";
}

int inf_field_type_from_name(const char *name) {
    static const struct {
        const char *name;
        int type;
    } names[] = {{"null", INF_FIELD_NULL},      {"bool", INF_FIELD_BOOL},           {"boolean", INF_FIELD_BOOL},
                 {"int", INF_FIELD_INT},        {"integer", INF_FIELD_INT},         {"int64", INF_FIELD_INT},
                 {"float", INF_FIELD_FLOAT},    {"double", INF_FIELD_FLOAT},        {"number", INF_FIELD_FLOAT},
                 {"string", INF_FIELD_STRING},  {"str", INF_FIELD_STRING},          {"timestamp", INF_FIELD_TIMESTAMP},
                 {"datetime", INF_FIELD_TIMESTAMP}};
    if (!name) return -1;
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (!strcmp(name, names[i].name)) return names[i].type;
    return -1;
}

/* Parses a whole decimal number (strtod grammar, surrounding blanks allowed). */
static int parse_double(const char *s, size_t len, double *out) {
    char buf[64];
    while (len && isspace((unsigned char)*s)) s++, len--;
    while (len && isspace((unsigned char)s[len - 1])) len--;
    if (!len || len >= sizeof buf) return -1;
    memcpy(buf, s, len);
    buf[len] = 0;
    char *end;
    errno = 0;
    double v = strtod(buf, &end);
    if (end != buf + len) return -1;
    *out = v;
    return 0;
}

int inf_value_to_double(const inf_value *v, double *out) {
    switch (v->type) {
    case INF_FIELD_BOOL: *out = v->u.b ? 1.0 : 0.0; return 0;
    case INF_FIELD_INT: *out = (double)v->u.i; return 0;
    case INF_FIELD_FLOAT: *out = v->u.f; return 0;
    case INF_FIELD_TIMESTAMP: *out = (double)v->u.ts / 1e6; return 0;
    case INF_FIELD_STRING: return parse_double(v->u.s.ptr, v->u.s.len, out);
    default: return -1;
    }
}

static int64_t days_from_civil(int64_t y, unsigned m, unsigned d) {
    y -= m <= 2;
    const int64_t era = (y >= 0 ? y : y - 399) / 400;
    const unsigned yoe = (unsigned)(y - era * 400);
    const unsigned doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
    const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + (int64_t)doe - 719468;
}

static void civil_from_days(int64_t z, int *y, unsigned *m, unsigned *d) {
    z += 719468;
    const int64_t era = (z >= 0 ? z : z - 146096) / 146097;
    const unsigned doe = (unsigned)(z - era * 146097);
    const unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    const unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    const unsigned mp = (5 * doy + 2) / 153;
    *d = doy - (153 * mp + 2) / 5 + 1;
    *m = mp < 10 ? mp + 3 : mp - 9;
    *y = (int)((int64_t)yoe + era * 400 + (*m <= 2));
}

static int digits(const char *s, size_t len, size_t *pos, int n, int *out) {
    int v = 0;
    for (int k = 0; k < n; k++) {
        if (*pos >= len || !isdigit((unsigned char)s[*pos])) return -1;
        v = v * 10 + (s[(*pos)++] - '0');
    }
    *out = v;
    return 0;
}

int inf_parse_timestamp(const char *s, size_t len, int64_t *out_us) {
    while (len && isspace((unsigned char)*s)) s++, len--;
    while (len && isspace((unsigned char)s[len - 1])) len--;
    if (!len) return -1;
    /* plain number: epoch seconds */
    if (len < 5 || s[4] != '-') {
        double v;
        if (parse_double(s, len, &v) || !isfinite(v) || fabs(v) > 9.2e12) return -1;
        *out_us = (int64_t)llround(v * 1e6);
        return 0;
    }
    size_t p = 0;
    int y, mo, d, h = 0, mi = 0, sec = 0;
    if (digits(s, len, &p, 4, &y) || s[p++] != '-' || digits(s, len, &p, 2, &mo) || p >= len || s[p++] != '-' ||
        digits(s, len, &p, 2, &d))
        return -1;
    if (mo < 1 || mo > 12 || d < 1 || d > 31) return -1;
    int64_t frac_us = 0, offset_s = 0;
    if (p < len && (s[p] == 'T' || s[p] == 't' || s[p] == ' ')) {
        p++;
        if (digits(s, len, &p, 2, &h) || p >= len || s[p++] != ':' || digits(s, len, &p, 2, &mi)) return -1;
        if (p < len && s[p] == ':') {
            p++;
            if (digits(s, len, &p, 2, &sec)) return -1;
            if (p < len && (s[p] == '.' || s[p] == ',')) {
                p++;
                int64_t scale = 100000;
                size_t start = p;
                while (p < len && isdigit((unsigned char)s[p])) {
                    frac_us += (s[p] - '0') * scale;
                    scale /= 10;
                    p++;
                }
                if (p == start) return -1;
            }
        }
        if (h > 23 || mi > 59 || sec > 60) return -1;
        if (p < len && (s[p] == 'Z' || s[p] == 'z')) {
            p++;
        } else if (p < len && (s[p] == '+' || s[p] == '-')) {
            int sign = s[p++] == '-' ? -1 : 1, oh, om = 0;
            if (digits(s, len, &p, 2, &oh)) return -1;
            if (p < len && s[p] == ':') p++;
            if (p < len && digits(s, len, &p, 2, &om)) return -1;
            offset_s = sign * (oh * 3600 + om * 60);
        }
    }
    if (p != len) return -1;
    int64_t days = days_from_civil(y, (unsigned)mo, (unsigned)d);
    *out_us = ((days * 86400 + h * 3600 + mi * 60 + sec) - offset_s) * 1000000 + frac_us;
    return 0;
}

int inf_value_to_timestamp(const inf_value *v, int64_t *out_us) {
    switch (v->type) {
    case INF_FIELD_TIMESTAMP: *out_us = v->u.ts; return 0;
    case INF_FIELD_INT: *out_us = v->u.i * 1000000; return 0;
    case INF_FIELD_FLOAT:
        if (!isfinite(v->u.f)) return -1;
        *out_us = (int64_t)llround(v->u.f * 1e6);
        return 0;
    case INF_FIELD_STRING: return inf_parse_timestamp(v->u.s.ptr, v->u.s.len, out_us);
    default: return -1;
    }
}

const char *inf_format_timestamp(int64_t us, char *buf, size_t size) {
    int64_t secs = us >= 0 ? us / 1000000 : -((-us + 999999) / 1000000);
    int64_t frac = us - secs * 1000000;
    int64_t days = secs >= 0 ? secs / 86400 : -((-secs + 86399) / 86400);
    int64_t rem = secs - days * 86400;
    int y;
    unsigned m, d;
    civil_from_days(days, &y, &m, &d);
    if (y < 0 || y > 9999 || size < 28) { /* printf's widths for the rare years, and short buffers */
        if (frac)
            snprintf(buf, size, "%04d-%02u-%02uT%02d:%02d:%02d.%06dZ", y, m, d, (int)(rem / 3600), (int)(rem / 60 % 60),
                     (int)(rem % 60), (int)frac);
        else
            snprintf(buf, size, "%04d-%02u-%02uT%02d:%02d:%02dZ", y, m, d, (int)(rem / 3600), (int)(rem / 60 % 60),
                     (int)(rem % 60));
        return buf;
    }
    /* YYYY-MM-DDTHH:MM:SS[.ffffff]Z without printf (a log row or an output row each has one) */
    char *p = buf;
    p += inf__fmt_digits((uint64_t)y, 4, p);
    *p++ = '-';
    p += inf__fmt_digits(m, 2, p);
    *p++ = '-';
    p += inf__fmt_digits(d, 2, p);
    *p++ = 'T';
    p += inf__fmt_digits((uint64_t)(rem / 3600), 2, p);
    *p++ = ':';
    p += inf__fmt_digits((uint64_t)(rem / 60 % 60), 2, p);
    *p++ = ':';
    p += inf__fmt_digits((uint64_t)(rem % 60), 2, p);
    if (frac) {
        *p++ = '.';
        p += inf__fmt_digits((uint64_t)frac, 6, p);
    }
    *p++ = 'Z';
    *p = 0;
    return buf;
}

/* ---- batches -------------------------------------------------------------- */

inf_status inf_record_batch_new(inf_record_batch **out) {
    *out = calloc(1, sizeof **out);
    return *out ? INF_OK : INF_ENOMEM;
}

void inf_record_batch_free(inf_record_batch *b) {
    if (!b) return;
    free(b->names);
    free(b->hash);
    free(b->vals);
    free(b->id_field);
    inf__rarena_deinit(&b->names_arena);
    inf__rarena_deinit(&b->strs);
    free(b);
}

void inf_record_batch_clear(inf_record_batch *b) {
    if (b->n_rows) memset(b->vals, 0, (size_t)b->n_rows * b->cap_fields * sizeof *b->vals);
    b->n_rows = 0;
    inf__rarena_reset(&b->strs);
}

void inf__record_batch_clear_unzeroed(inf_record_batch *b) {
    b->n_rows = 0;
    inf__rarena_reset(&b->strs);
}

void inf_record_batch_reset(inf_record_batch *b) {
    inf_record_batch_clear(b);
    b->n_fields = 0;
    b->id_slot = 0;
    if (b->hash) memset(b->hash, 0, (size_t)b->hash_size * sizeof *b->hash);
    inf__rarena_reset(&b->names_arena);
}

inf_status inf_record_batch_set_id_field(inf_record_batch *b, const char *name) {
    if (b->id_field && name && !strcmp(b->id_field, name)) return INF_OK;
    char *copy = NULL;
    if (name && !(copy = strdup(name))) return INF_ENOMEM;
    free(b->id_field);
    b->id_field = copy;
    int f = name ? inf_record_batch_find_field(b, name) : -1;
    b->id_slot = f + 1;
    return INF_OK;
}

const char *inf_record_batch_id_field(const inf_record_batch *b) { return b->id_field; }

int inf_record_batch_n_rows(const inf_record_batch *b) { return b->n_rows; }
int inf_record_batch_n_fields(const inf_record_batch *b) { return b->n_fields; }

const char *inf_record_batch_field_name(const inf_record_batch *b, int i) {
    return i >= 0 && i < b->n_fields ? b->names[i] : NULL;
}

static uint32_t name_hash(const char *s) {
    uint32_t h = 2166136261u;
    for (; *s; s++) h = (h ^ (uint8_t)*s) * 16777619u;
    return h;
}

int inf_record_batch_find_field(const inf_record_batch *b, const char *name) {
    if (!b->hash_size) return -1;
    uint32_t mask = (uint32_t)b->hash_size - 1;
    for (uint32_t h = name_hash(name) & mask;; h = (h + 1) & mask) {
        int slot = b->hash[h];
        if (!slot) return -1;
        if (!strcmp(b->names[slot - 1], name)) return slot - 1;
    }
}

static void hash_insert(inf_record_batch *b, int index) {
    uint32_t mask = (uint32_t)b->hash_size - 1;
    uint32_t h = name_hash(b->names[index]) & mask;
    while (b->hash[h]) h = (h + 1) & mask;
    b->hash[h] = index + 1;
}

inf_status inf_record_batch_add_field(inf_record_batch *b, const char *name, int *out_index) {
    int idx = inf_record_batch_find_field(b, name);
    if (idx >= 0) {
        if (out_index) *out_index = idx;
        return INF_OK;
    }
    if (b->n_fields == b->cap_fields) {
        int cap = b->cap_fields ? b->cap_fields * 2 : 16;
        char **names = realloc(b->names, (size_t)cap * sizeof *names);
        if (!names) return INF_ENOMEM;
        b->names = names;
        if (b->cap_rows) {
            inf_value *vals = calloc((size_t)b->cap_rows * cap, sizeof *vals);
            if (!vals) return INF_ENOMEM;
            for (int r = 0; r < b->n_rows; r++)
                memcpy(vals + (size_t)r * cap, b->vals + (size_t)r * b->cap_fields, (size_t)b->n_fields * sizeof *vals);
            free(b->vals);
            b->vals = vals;
        }
        b->cap_fields = cap;
    }
    if ((b->n_fields + 1) * 2 > b->hash_size) {
        int size = b->hash_size ? b->hash_size * 2 : 32;
        while ((b->n_fields + 1) * 2 > size) size *= 2;
        int *hash = calloc((size_t)size, sizeof *hash);
        if (!hash) return INF_ENOMEM;
        free(b->hash);
        b->hash = hash;
        b->hash_size = size;
        for (int i = 0; i < b->n_fields; i++) hash_insert(b, i);
    }
    size_t n = strlen(name);
    char *copy = inf__rarena_alloc(&b->names_arena, n + 1);
    if (!copy) return INF_ENOMEM;
    memcpy(copy, name, n + 1);
    b->names[b->n_fields] = copy;
    hash_insert(b, b->n_fields);
    if (b->id_field && !strcmp(b->id_field, copy)) b->id_slot = b->n_fields + 1;
    if (out_index) *out_index = b->n_fields;
    b->n_fields++;
    return INF_OK;
}

inf_status inf__record_batch_reserve_rows(inf_record_batch *b, int n) {
    if (n <= b->cap_rows) return INF_OK;
    if (b->cap_fields == 0) {
        char **names = realloc(b->names, 16 * sizeof *names);
        if (!names) return INF_ENOMEM;
        b->names = names;
        b->cap_fields = 16;
    }
    inf_value *vals = realloc(b->vals, (size_t)n * b->cap_fields * sizeof *vals);
    if (!vals) return INF_ENOMEM;
    memset(vals + (size_t)b->cap_rows * b->cap_fields, 0, (size_t)(n - b->cap_rows) * b->cap_fields * sizeof *vals);
    b->vals = vals;
    b->cap_rows = n;
    return INF_OK;
}

inf_status inf_record_batch_add_row(inf_record_batch *b, int *out_row) {
    if (b->cap_fields == 0) {
        /* rows before any field: give the stride a capacity */
        char **names = realloc(b->names, 16 * sizeof *names);
        if (!names) return INF_ENOMEM;
        b->names = names;
        b->cap_fields = 16;
    }
    if (b->n_rows == b->cap_rows) {
        int cap = b->cap_rows ? b->cap_rows * 2 : 64;
        inf_value *vals = realloc(b->vals, (size_t)cap * b->cap_fields * sizeof *vals);
        if (!vals) return INF_ENOMEM;
        memset(vals + (size_t)b->cap_rows * b->cap_fields, 0,
               (size_t)(cap - b->cap_rows) * b->cap_fields * sizeof *vals);
        b->vals = vals;
        b->cap_rows = cap;
    }
    if (out_row) *out_row = b->n_rows;
    b->n_rows++;
    return INF_OK;
}

static const inf_value null_value = {INF_FIELD_NULL, {0}};

const inf_value *inf_record_batch_get(const inf_record_batch *b, int row, int field) {
    if (row < 0 || row >= b->n_rows || field < 0 || field >= b->n_fields) return &null_value;
    return inf__batch_at(b, row, field);
}

static inf_value *slot(inf_record_batch *b, int row, int field) {
    if (row < 0 || row >= b->n_rows || field < 0 || field >= b->n_fields) return NULL;
    return &b->vals[(size_t)row * b->cap_fields + field];
}

inf_status inf_record_batch_set(inf_record_batch *b, int row, int field, const inf_value *v) {
    if (v->type == INF_FIELD_STRING) return inf_record_batch_set_string(b, row, field, v->u.s.ptr, v->u.s.len);
    inf_value *s = slot(b, row, field);
    if (!s) return INF_EINVAL;
    *s = *v;
    return INF_OK;
}

#define SETTER(fn, ctype, TYPE, member)                                                                            \
    inf_status fn(inf_record_batch *b, int row, int field, ctype v) {                                              \
        inf_value *s = slot(b, row, field);                                                                        \
        if (!s) return INF_EINVAL;                                                                                 \
        s->type = TYPE;                                                                                            \
        s->u.member = v;                                                                                           \
        return INF_OK;                                                                                             \
    }
SETTER(inf_record_batch_set_bool, int, INF_FIELD_BOOL, b)
SETTER(inf_record_batch_set_int, int64_t, INF_FIELD_INT, i)
SETTER(inf_record_batch_set_float, double, INF_FIELD_FLOAT, f)
SETTER(inf_record_batch_set_timestamp, int64_t, INF_FIELD_TIMESTAMP, ts)

inf_status inf_record_batch_set_null(inf_record_batch *b, int row, int field) {
    inf_value *s = slot(b, row, field);
    if (!s) return INF_EINVAL;
    s->type = INF_FIELD_NULL;
    return INF_OK;
}

inf_status inf_record_batch_set_string(inf_record_batch *b, int row, int field, const char *str, size_t len) {
    inf_value *s = slot(b, row, field);
    if (!s) return INF_EINVAL;
    if (len > UINT32_MAX - 1) return INF_ERANGE;
    char *copy = inf__rarena_alloc(&b->strs, len + 1);
    if (!copy) return INF_ENOMEM;
    if (len) memcpy(copy, str, len);
    copy[len] = 0;
    s->type = INF_FIELD_STRING;
    s->u.s.ptr = copy;
    s->u.s.len = (uint32_t)len;
    return INF_OK;
}

/* ---- JSON ----------------------------------------------------------------- */

/* ---- numbers ---------------------------------------------------------------- */

/* Clinger's fast path: a mantissa below 2^53 and a power of ten up to 1e22
 * are both exact doubles, so one IEEE multiplication or division gives the
 * correctly rounded result -- the same double strtod returns. */
int inf__parse_double(const char *s, size_t n, double *out) {
    static const double pow10[] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,  1e8,  1e9,  1e10, 1e11,
                                   1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};
    const char *p = s, *end = s + n;
    int neg = 0;
    if (p < end && (*p == '-' || *p == '+')) neg = *p++ == '-';
    uint64_t m = 0;
    int n_sig = 0, n_digits = 0, exp10 = 0;
    for (; p < end && *p >= '0' && *p <= '9'; p++, n_digits++) {
        if (m || *p != '0') n_sig++;
        if (n_sig <= 19) m = m * 10 + (uint64_t)(*p - '0');
        else exp10++;
    }
    if (p < end && *p == '.') {
        for (p++; p < end && *p >= '0' && *p <= '9'; p++, n_digits++) {
            if (m || *p != '0') n_sig++;
            if (n_sig <= 19) {
                m = m * 10 + (uint64_t)(*p - '0');
                exp10--;
            }
        }
    }
    if (!n_digits) return -1;
    if (p < end && (*p == 'e' || *p == 'E')) {
        p++;
        int eneg = 0, e = 0, ed = 0;
        if (p < end && (*p == '-' || *p == '+')) eneg = *p++ == '-';
        for (; p < end && *p >= '0' && *p <= '9'; p++, ed++)
            if (e < 100000) e = e * 10 + (*p - '0');
        if (!ed) return -1;
        exp10 += eneg ? -e : e;
    }
    if (p != end) return -1;
    if (n_sig <= 15 && exp10 >= -22 && exp10 <= 22) {
        double v = (double)m;
        v = exp10 < 0 ? v / pow10[-exp10] : v * pow10[exp10];
        *out = neg ? -v : v;
        return 0;
    }
    char buf[128];
    if (n >= sizeof buf) return -1;
    memcpy(buf, s, n);
    buf[n] = '\0';
    *out = strtod(buf, NULL);
    return 0;
}

/* ---- JSON records: a fast scanner for flat objects, cJSON for the rest ---- */

/* Index of the field whose name is the n bytes at name, or -1.  Tries
 * `hint` first (records of one shape repeat their key order). */
static int find_field_n(const inf_record_batch *b, const char *name, size_t n, int hint) {
    if (hint >= 0 && hint < b->n_fields && !memcmp(b->names[hint], name, n) && !b->names[hint][n]) return hint;
    if (!b->hash_size) return -1;
    uint32_t h = 2166136261u; /* name_hash over n bytes */
    for (size_t i = 0; i < n; i++) h = (h ^ (uint8_t)name[i]) * 16777619u;
    uint32_t mask = (uint32_t)b->hash_size - 1;
    for (h &= mask;; h = (h + 1) & mask) {
        int slot = b->hash[h];
        if (!slot) return -1;
        if (!memcmp(b->names[slot - 1], name, n) && !b->names[slot - 1][n]) return slot - 1;
    }
}

/* A JSON string without escapes or control bytes starting at the '"' at p;
 * sets [*s, *s + *n) and returns the byte after the closing quote, or NULL
 * (anything else: the caller falls back to cJSON). */
static const char *scan_plain_string(const char *p, const char *end, const char **s, size_t *n) {
    /* bytes that end a plain string: '"', '\\' and control bytes */
    static const uint8_t stop[256] = {
        1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
        ['"'] = 1, ['\\'] = 1};
    const char *q = ++p;
    while (q + 4 <= end && !(stop[(uint8_t)q[0]] | stop[(uint8_t)q[1]] | stop[(uint8_t)q[2]] | stop[(uint8_t)q[3]]))
        q += 4;
    while (q < end && !stop[(uint8_t)*q]) q++;
    if (q >= end || *q != '"') return NULL;
    *s = p;
    *n = (size_t)(q - p);
    return q + 1;
}

static const char *skip_ws(const char *p, const char *end) {
    while (p < end && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')) p++;
    return p;
}

/* A strict JSON number at p: returns its end or NULL. */
static const char *scan_number(const char *p, const char *end) {
    if (p < end && *p == '-') p++;
    if (p >= end || *p < '0' || *p > '9') return NULL;
    if (*p == '0') p++;
    else while (p < end && *p >= '0' && *p <= '9') p++;
    if (p < end && *p == '.') {
        if (++p >= end || *p < '0' || *p > '9') return NULL;
        while (p < end && *p >= '0' && *p <= '9') p++;
    }
    if (p < end && (*p == 'e' || *p == 'E')) {
        p++;
        if (p < end && (*p == '+' || *p == '-')) p++;
        if (p >= end || *p < '0' || *p > '9') return NULL;
        while (p < end && *p >= '0' && *p <= '9') p++;
    }
    return p;
}

/* Sets a parsed JSON number the way the cJSON path does: integral and
 * exactly representable -> int, else float. */
static void set_number(inf_value *out, double v) {
    if (fabs(v) < 9007199254740992.0 && (double)(int64_t)v == v) { /* integral: v == floor(v) */
        out->type = INF_FIELD_INT;
        out->u.i = (int64_t)v;
    } else {
        out->type = INF_FIELD_FLOAT;
        out->u.f = v;
    }
}

/* The fast path of inf_record_batch_add_json: a flat object whose keys and
 * strings have no escapes, whose values are numbers, plain strings, true,
 * false or null.  Returns 1 when the record was added, 0 when the text needs
 * the full parser (nothing added), -1 when out of memory (nothing added).
 * Same values as the cJSON path (numbers through strtod, as cJSON does). */
static int add_json_flat(inf_record_batch *b, const char *json, size_t len) {
    const char *p = json, *end = json + len;
    p = skip_ws(p, end);
    if (p >= end || *p != '{') return 0;
    p = skip_ws(p + 1, end);
    /* validate and locate everything first, so a fallback adds nothing */
    enum { MAXF = 128 };
    struct {
        const char *k, *v;
        uint32_t kn, vn;
        char type; /* 'n' number, 's' string, 't', 'f', 'z' null */
    } it[MAXF];
    int n = 0;
    if (p < end && *p == '}') goto scanned;
    for (;;) {
        if (n == MAXF || p >= end || *p != '"') return 0;
        const char *k, *v;
        size_t kn, vn;
        if (!(p = scan_plain_string(p, end, &k, &kn)) || kn > 1000) return 0;
        p = skip_ws(p, end);
        if (p >= end || *p != ':') return 0;
        p = skip_ws(p + 1, end);
        if (p >= end) return 0;
        char type;
        if (*p == '"') {
            if (!(p = scan_plain_string(p, end, &v, &vn))) return 0;
            type = 's';
        } else if (*p == '-' || (*p >= '0' && *p <= '9')) {
            v = p;
            if (!(p = scan_number(p, end)) || p - v > 60) return 0;
            vn = (size_t)(p - v);
            type = 'n';
        } else if (end - p >= 4 && !memcmp(p, "true", 4)) {
            v = p, vn = 4, type = 't', p += 4;
        } else if (end - p >= 5 && !memcmp(p, "false", 5)) {
            v = p, vn = 5, type = 'f', p += 5;
        } else if (end - p >= 4 && !memcmp(p, "null", 4)) {
            v = p, vn = 4, type = 'z', p += 4;
        } else {
            return 0; /* nested value, or not JSON */
        }
        if (vn > UINT32_MAX) return 0;
        it[n].k = k, it[n].kn = (uint32_t)kn, it[n].v = v, it[n].vn = (uint32_t)vn, it[n].type = type;
        n++;
        p = skip_ws(p, end);
        if (p < end && *p == ',') {
            p = skip_ws(p + 1, end);
            continue;
        }
        if (p < end && *p == '}') break;
        return 0;
    }
scanned:
    if (skip_ws(p + 1, end) != end) return 0; /* text after the object: the full parser reports it */
    int row;
    if (inf_record_batch_add_row(b, &row)) return -1;
    for (int i = 0; i < n; i++) {
        int f = find_field_n(b, it[i].k, it[i].kn, i);
        if (f < 0) {
            char name[1001];
            memcpy(name, it[i].k, it[i].kn);
            name[it[i].kn] = '\0';
            if (inf_record_batch_add_field(b, name, &f)) goto oom;
        }
        inf_value *cell = &b->vals[(size_t)row * (size_t)b->cap_fields + (size_t)f]; /* the new row: no old string */
        switch (it[i].type) {
        case 'n': {
            if (inf__batch_is_id(b, f)) { /* ids are text: the literal as written */
                if (inf_record_batch_set_string(b, row, f, it[i].v, it[i].vn)) goto oom;
                break;
            }
            double v = 0;
            inf__parse_double(it[i].v, it[i].vn, &v); /* a JSON number: always parses */
            set_number(cell, v);
            break;
        }
        case 's':
            if (inf_record_batch_set_string(b, row, f, it[i].v, it[i].vn)) goto oom;
            break;
        case 't':
        case 'f':
            cell->type = INF_FIELD_BOOL;
            cell->u.b = it[i].type == 't';
            break;
        default: break; /* null: as the cJSON path, an earlier duplicate key keeps its value */
        }
    }
    return 1;
oom:
    memset(b->vals + (size_t)row * b->cap_fields, 0, (size_t)b->cap_fields * sizeof *b->vals);
    b->n_rows--;
    return -1;
}

/* The end of the JSON value at p (a string, a number, a literal, or a
 * nested array/object skipped by bracket depth outside strings), or NULL. */
static const char *skip_json_value(const char *p, const char *end) {
    int depth = 0;
    do {
        if (p >= end) return NULL;
        if (*p == '"') {
            for (p++; p < end && *p != '"'; p++)
                if (*p == '\\') p++;
            if (p >= end) return NULL;
            p++;
        } else if (*p == '{' || *p == '[') {
            depth++, p++;
        } else if (*p == '}' || *p == ']') {
            depth--, p++;
        } else if (depth) {
            p++;
        } else {
            while (p < end && !strchr(",}] \t\r\n", *p)) p++;
        }
    } while (depth > 0);
    return p;
}

/* The literal text of the top-level member `key` of the JSON object at json
 * (its last occurrence, as cJSON's object lookup of the row keeps the last
 * value), for a member whose key has no escapes; NULL when not found. */
static const char *member_literal(const char *json, size_t len, const char *key, size_t *out_n) {
    const char *p = skip_ws(json, json + len), *end = json + len, *found = NULL;
    size_t klen = strlen(key);
    if (p >= end || *p != '{') return NULL;
    for (p = skip_ws(p + 1, end); p < end && *p == '"';) {
        const char *k = p + 1, *v;
        if (!(p = skip_json_value(p, end))) return NULL;
        int match = (size_t)(p - 1 - k) == klen && !memcmp(k, key, klen);
        p = skip_ws(p, end);
        if (p >= end || *p != ':') return NULL;
        v = p = skip_ws(p + 1, end);
        if (!(p = skip_json_value(p, end))) return NULL;
        if (match) {
            found = v;
            *out_n = (size_t)(p - v);
        }
        p = skip_ws(p, end);
        if (p < end && *p == ',') p = skip_ws(p + 1, end);
        else break;
    }
    return found;
}

inf_status inf_record_batch_add_json(inf_record_batch *b, const char *json, size_t len, inf_error *err) {
    int fast = add_json_flat(b, json, len);
    if (fast == 1) return INF_OK;
    if (fast < 0) {
        inf_error_set(err, INF_ENOMEM, "record: %s", inf_strerror(INF_ENOMEM));
        return INF_ENOMEM;
    }
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithLengthOpts(json, len, &end, 0);
    /* one value, then only blanks: `{...} junk` or two objects on one line are malformed */
    const char *rest = root && end ? skip_ws(end, json + len) : NULL;
    if (!root || !cJSON_IsObject(root) || rest != json + len) {
        if (err) {
            err->status = INF_EFORMAT;
            if (!root)
                snprintf(err->message, sizeof err->message, "malformed JSON near byte %ld",
                         end ? (long)(end - json) : (long)(cJSON_GetErrorPtr() ? cJSON_GetErrorPtr() - json : 0));
            else if (!cJSON_IsObject(root))
                snprintf(err->message, sizeof err->message, "a record must be a JSON object");
            else
                snprintf(err->message, sizeof err->message, "malformed JSON near byte %ld: text after the record",
                         (long)(rest - json));
        }
        cJSON_Delete(root);
        return INF_EFORMAT;
    }
    int row;
    inf_status st = inf_record_batch_add_row(b, &row);
    if (st) goto fail;
    for (cJSON *it = root->child; it; it = it->next) {
        int f;
        if (!it->string) continue;
        if ((st = inf_record_batch_add_field(b, it->string, &f))) goto fail_row;
        if (cJSON_IsNull(it)) continue;
        if (cJSON_IsBool(it)) {
            inf_record_batch_set_bool(b, row, f, cJSON_IsTrue(it));
        } else if (cJSON_IsNumber(it) && inf__batch_is_id(b, f)) {
            /* ids are text: the literal as written (cJSON keeps only the double) */
            size_t n = 0;
            const char *lit = member_literal(json, len, it->string, &n);
            if (lit && (st = inf_record_batch_set_string(b, row, f, lit, n))) goto fail_row;
            if (!lit) inf_record_batch_set_float(b, row, f, it->valuedouble);
        } else if (cJSON_IsNumber(it)) {
            /* integral and exactly representable -> int; otherwise float.
             * cJSON does not keep the literal, so 2.0 reads as int 2 (same
             * numeric value either way). */
            double v = it->valuedouble;
            if (v == floor(v) && fabs(v) < 9007199254740992.0)
                inf_record_batch_set_int(b, row, f, (int64_t)v);
            else
                inf_record_batch_set_float(b, row, f, v);
        } else if (cJSON_IsString(it)) {
            if ((st = inf_record_batch_set_string(b, row, f, it->valuestring, strlen(it->valuestring)))) goto fail_row;
        } else {
            char *text = cJSON_PrintUnformatted(it);
            if (!text) {
                st = INF_ENOMEM;
                goto fail_row;
            }
            st = inf_record_batch_set_string(b, row, f, text, strlen(text));
            free(text);
            if (st) goto fail_row;
        }
    }
    cJSON_Delete(root);
    return INF_OK;
fail_row:
    memset(b->vals + (size_t)row * b->cap_fields, 0, (size_t)b->cap_fields * sizeof *b->vals);
    b->n_rows--;
fail:
    cJSON_Delete(root);
    inf_error_set(err, st, "record: %s", inf_strerror(st));
    return st;
}

/* JSON text gathered in a buffer and given to `write` in few calls (a FILE
 * write takes the stream's lock; a row has dozens of tokens). */
typedef struct json_out {
    char buf[8192];
    size_t n;
    inf_write_fn write;
    void *user;
    int failed;
} json_out;

/* (not `= {...}`: that would clear the whole buffer on every row) */
static void json_out_init(json_out *o, inf_write_fn write, void *user) {
    o->n = 0;
    o->write = write;
    o->user = user;
    o->failed = 0;
}

static void json_flush(json_out *o) {
    if (o->n && !o->failed && o->write(o->buf, o->n, o->user)) o->failed = 1;
    o->n = 0;
}

static void json_put(json_out *o, const char *bytes, size_t n) {
    if (o->n + n > sizeof o->buf) json_flush(o);
    if (n > sizeof o->buf) {
        if (!o->failed && o->write(bytes, n, o->user)) o->failed = 1;
        return;
    }
    memcpy(o->buf + o->n, bytes, n);
    o->n += n;
}

/* Whether any of the 8 bytes of w needs escaping in JSON: a control byte
 * (< 0x20), '"' or '\\' (the classic "has a byte less than n" bit tricks). */
static int needs_escape8(uint64_t w) {
    const uint64_t ones = 0x0101010101010101ULL, highs = 0x8080808080808080ULL;
    uint64_t quote = w ^ (ones * '"'), slash = w ^ (ones * '\\');
    uint64_t ctl = (w - ones * 0x20) & ~w, q = (quote - ones) & ~quote, b = (slash - ones) & ~slash;
    return ((ctl | q | b) & highs) != 0;
}

static void write_json_string(const char *s, size_t len, json_out *o) {
    json_put(o, "\"", 1);
    size_t start = 0, i = 0; /* s[start, i) is plain text not yet put */
    for (;;) {
        uint64_t w;
        while (i + 8 <= len && (memcpy(&w, s + i, 8), !needs_escape8(w))) i += 8;
        unsigned char c = 0; /* then byte by byte to the byte to escape (in the next 8) or the end */
        while (i < len && (c = (unsigned char)s[i]) >= 0x20 && c != '"' && c != '\\') i++;
        if (i >= len) break;
        json_put(o, s + start, i - start);
        start = ++i;
        char esc[8];
        if (c == '"' || c == '\\') esc[0] = '\\', esc[1] = (char)c, json_put(o, esc, 2);
        else if (c == '\n') json_put(o, "\\n", 2);
        else if (c == '\t') json_put(o, "\\t", 2);
        else if (c == '\r') json_put(o, "\\r", 2);
        else json_put(o, esc, (size_t)snprintf(esc, sizeof esc, "\\u%04x", c));
    }
    json_put(o, s + start, len - start);
    json_put(o, "\"", 1);
}

/* The escaped keys of a batch's fields, '"name":' each, for writing many
 * rows: key f is text[off[f] .. off[f + 1]). */
typedef struct json_keys {
    char *text;
    size_t *off;
} json_keys;

/* Row `row` of b as one JSON object into o (keys: escaped field names, or
 * NULL to escape them here). */
static void json_row(const inf_record_batch *b, int row, const char *const *skip, const json_keys *keys, json_out *o) {
    int first = 1;
    char num[64];
    json_put(o, "{", 1);
    for (int f = 0; f < b->n_fields; f++) {
        int skipped = 0;
        for (const char *const *s = skip; s && *s; s++)
            if (!strcmp(*s, b->names[f])) skipped = 1;
        if (skipped) continue;
        const inf_value *v = inf_record_batch_get(b, row, f);
        if (!first) json_put(o, ",", 1);
        first = 0;
        if (keys) {
            json_put(o, keys->text + keys->off[f], keys->off[f + 1] - keys->off[f]);
        } else {
            write_json_string(b->names[f], strlen(b->names[f]), o);
            json_put(o, ":", 1);
        }
        switch (v->type) {
        case INF_FIELD_BOOL: json_put(o, v->u.b ? "true" : "false", v->u.b ? 4 : 5); break;
        case INF_FIELD_INT: json_put(o, num, (size_t)inf__fmt_i64(v->u.i, num)); break;
        case INF_FIELD_FLOAT:
            if (isfinite(v->u.f)) json_put(o, num, (size_t)inf__fmt_g17(v->u.f, num));
            else json_put(o, "null", 4);
            break;
        case INF_FIELD_STRING: write_json_string(v->u.s.ptr, v->u.s.len, o); break;
        case INF_FIELD_TIMESTAMP:
            inf_format_timestamp(v->u.ts, num, sizeof num);
            write_json_string(num, strlen(num), o);
            break;
        default: json_put(o, "null", 4);
        }
    }
    json_put(o, "}", 1);
}

inf_status inf_record_batch_row_to_json(const inf_record_batch *b, int row, const char *const *skip,
                                        inf_write_fn write, void *user) {
    json_out o;
    json_out_init(&o, write, user);
    json_row(b, row, skip, NULL, &o);
    json_flush(&o);
    return o.failed ? INF_EIO : INF_OK;
}

inf_status inf__record_batch_write_jsonl(const inf_record_batch *b, inf_write_fn write, void *user) {
    /* the keys escaped once for the batch, not once per row */
    json_keys keys = {NULL, malloc(((size_t)b->n_fields + 1) * sizeof(size_t))};
    inf__io_buf g = {0};
    json_out *o = malloc(sizeof *o);
    inf_status st = keys.off && o ? INF_OK : INF_ENOMEM;
    if (!st) {
        json_out_init(o, inf__io_buf_write, &g);
        for (int f = 0; f < b->n_fields; f++) {
            keys.off[f] = g.n + o->n;
            write_json_string(b->names[f], strlen(b->names[f]), o);
            json_put(o, ":", 1);
        }
        keys.off[b->n_fields] = g.n + o->n;
        json_flush(o);
        keys.text = g.p;
        if (o->failed) st = INF_ENOMEM;
    }
    if (!st) {
        json_out_init(o, write, user);
        for (int r = 0; r < b->n_rows; r++) {
            json_row(b, r, NULL, b->n_fields ? &keys : NULL, o);
            json_put(o, "\n", 1);
        }
        json_flush(o);
        if (o->failed) st = INF_EIO;
    }
    free(g.p);
    free(keys.off);
    free(o);
    return st;
}
