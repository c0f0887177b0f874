/*
 * io.c -- the URI-scheme tables of sources and sinks, and the thin public
 * wrappers around their vtables (include/infera/io.h).
 *
 * A URI is "scheme:rest".  The scheme picks a row of source_types /
 * sink_types; the row's open() gets the whole URI (for messages, after
 * redaction) and `rest`.  To add a kind, define its inf_source_type /
 * inf_sink_type in a new file and add one row below.
 * Callers: batch and stream runners, `infera features`, fit-spec, tests.
 */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "io/io_int.h"
#include "io/numfmt.h"

static const inf_source_type *const source_types[] = {
    &inf__io_csv_source,
    &inf__io_jsonl_source,
    &inf__io_sqlite_source,
    &inf__io_postgresql_source,
};

static const inf_sink_type *const sink_types[] = {
    &inf__io_csv_sink,
    &inf__io_jsonl_sink,
    &inf__io_sqlite_sink,
    &inf__io_npy_sink,
    &inf__io_postgresql_sink,
    &inf__io_redis_sink,
    &inf__io_mqtt_sink,
};

#define N_SOURCE_TYPES ((int)(sizeof source_types / sizeof source_types[0]))
#define N_SINK_TYPES ((int)(sizeof sink_types / sizeof sink_types[0]))

int inf_io_n_source_types(void) { return N_SOURCE_TYPES; }
const inf_source_type *inf_io_source_type(int i) { return i >= 0 && i < N_SOURCE_TYPES ? source_types[i] : NULL; }
int inf_io_n_sink_types(void) { return N_SINK_TYPES; }
const inf_sink_type *inf_io_sink_type(int i) { return i >= 0 && i < N_SINK_TYPES ? sink_types[i] : NULL; }

struct inf_source {
    const inf_source_type *type;
    void *state;
    char *id_column; /* malloc'd copy of opts->id_column, or NULL: set as each batch's id field */
};

struct inf_sink {
    const inf_sink_type *type;
    void *state;
};

inf_status inf__io_open_input(const char *uri, const char *rest, FILE **f, int *owns, inf_error *err) {
    if (!strcmp(rest, "-")) {
        *f = stdin;
        *owns = 0;
        return INF_OK;
    }
    *f = fopen(rest, "rb");
    *owns = 1;
    if (!*f) {
        int e = errno;
        return inf_error_set(err, e == ENOENT ? INF_ENOENT : INF_EIO, "%s: cannot open: %s", uri, strerror(e));
    }
    return INF_OK;
}

inf_status inf__io_open_output(const char *uri, const char *rest, int append, FILE **f, int *owns, inf_error *err) {
    if (!strcmp(rest, "-")) {
        *f = stdout;
        *owns = 0;
        return INF_OK;
    }
    *f = fopen(rest, append ? "ab" : "wb");
    *owns = 1;
    if (!*f) return inf_error_set(err, INF_EIO, "%s: cannot create: %s", uri, strerror(errno));
    return INF_OK;
}

inf_status inf__io_flush(FILE *f, const char *kind, const char *path, inf_error *err) {
    if (fflush(f) || ferror(f)) return inf_error_set(err, INF_EIO, "%s:%s: write failed: %s", kind, path, strerror(errno));
    return INF_OK;
}

void inf__io_quote_ident(char *out, size_t size, const char *name) {
    size_t n = 0;
    if (size < 3) return;
    out[n++] = '"';
    for (; *name && n + 3 < size; name++) {
        if (*name == '"') out[n++] = '"';
        out[n++] = *name;
    }
    out[n++] = '"';
    out[n] = 0;
}

int inf_io_shard_predicate(const char *id_column, int k, int n, char *out, size_t size) {
    char ident[600];
    if (!id_column || n < 1 || k < 0 || k >= n || strlen(id_column) * 2 + 3 > sizeof ident) return -1;
    inf__io_quote_ident(ident, sizeof ident, id_column);
    int len = snprintf(out, size, "abs(hashtext(%s::text)::bigint) %% %d = %d", ident, n, k);
    return len > 0 && (size_t)len < size ? 0 : -1;
}

inf_status inf__io_out_new(size_t state_size, const char *kind, const char *uri, const char *rest, int append,
                           void **state, inf_error *err) {
    inf__io_out *o = calloc(1, state_size);
    if (!o) return inf_error_set(err, INF_ENOMEM, "%s: out of memory", uri);
    o->kind = kind;
    snprintf(o->path, sizeof o->path, "%s", rest);
    inf_status st = inf__io_open_output(uri, rest, append, &o->f, &o->owns, err);
    if (st) {
        free(o);
        return st;
    }
    /* a file written in many small pieces (a prediction log's batches of a few rows) reaches the
     * kernel in large writes: a commit flushes, so this only saves write() calls */
    if (o->owns) setvbuf(o->f, NULL, _IOFBF, 256 * 1024);
    *state = o;
    return INF_OK;
}

inf_status inf__io_out_commit(void *state, inf_error *err) {
    inf__io_out *o = state;
    return inf__io_flush(o->f, o->kind, o->path, err);
}

inf_status inf__io_out_close(inf__io_out *o, inf_error *err) {
    inf_status st = inf__io_flush(o->f, o->kind, o->path, err);
    if (o->owns && fclose(o->f) && !st)
        st = inf_error_set(err, INF_EIO, "%s:%s: close failed: %s", o->kind, o->path, strerror(errno));
    return st;
}

const char *inf_io_redact_uri(const char *uri, char *buf, size_t size) {
    if (!size) return buf;
    snprintf(buf, size, "%s", uri ? uri : "");
    /* user:password@host -> user:***@host */
    char *scheme_end = strstr(buf, "://");
    if (scheme_end) {
        char *auth = scheme_end + 3;
        char *at = strchr(auth, '@');
        char *slash = strchr(auth, '/');
        if (at && (!slash || at < slash)) {
            char *colon = memchr(auth, ':', (size_t)(at - auth));
            if (colon) {
                char tail[1024];
                snprintf(tail, sizeof tail, "%s", at);
                snprintf(colon, size - (size_t)(colon - buf), ":***%s", tail);
            }
        }
    }
    /* password=... in a query string */
    for (char *p = buf; (p = strstr(p, "password=")) != NULL;) {
        p += 9;
        char *end = p + strcspn(p, "& ");
        char tail[1024];
        snprintf(tail, sizeof tail, "%s", end);
        snprintf(p, size - (size_t)(p - buf), "***%s", tail);
        p += 3;
    }
    return buf;
}

static int hexval(int c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

const char *inf__io_uri_param(const char *rest, const char *key, char *buf, size_t size) {
    const char *q = strchr(rest, '?');
    if (!q) return NULL;
    size_t klen = strlen(key);
    for (const char *p = q + 1; *p;) {
        const char *end = p + strcspn(p, "&");
        if ((size_t)(end - p) > klen && !strncmp(p, key, klen) && p[klen] == '=') {
            size_t n = 0;
            for (const char *s = p + klen + 1; s < end && n + 1 < size; s++) {
                if (*s == '%' && s + 2 < end + 0 + 1 && hexval(s[1]) >= 0 && hexval(s[2]) >= 0) {
                    buf[n++] = (char)(hexval(s[1]) * 16 + hexval(s[2]));
                    s += 2;
                } else if (*s == '+') {
                    buf[n++] = ' ';
                } else {
                    buf[n++] = *s;
                }
            }
            buf[n] = 0;
            return buf;
        }
        p = *end ? end + 1 : end;
    }
    return NULL;
}

const char *inf__io_uri_path(const char *rest, char *buf, size_t size) {
    size_t n = strcspn(rest, "?");
    if (n >= size) n = size - 1;
    memcpy(buf, rest, n);
    buf[n] = 0;
    return buf;
}

inf_status inf__io_table_shape_refused(inf_error *err, const char *who, const char *table, const char *const *missing,
                                       int n_missing) {
    char list[600];
    size_t n = 0;
    list[0] = 0;
    for (int i = 0; i < n_missing && n + 8 < sizeof list; i++)
        n += (size_t)snprintf(list + n, sizeof list - n, "%s'%s'", i ? ", " : "", missing[i]);
    if (n >= sizeof list) snprintf(list + sizeof list - 5, 5, "...");
    return inf_error_set(err, INF_EINVAL,
                        "%s: table %s exists but is not the output of an earlier run of this job (it has no column%s "
                        "%s); it is left unchanged: write into another table, recreate it (--mode replace) or add "
                        "the columns to it (--mode append)",
                        who, table, n_missing > 1 ? "s" : "", list);
}

inf_status inf__io_set_text_cell(inf_record_batch *b, int row, int field, const char *s, size_t len) {
    if (!len) return inf_record_batch_set_null(b, row, field);
    if (inf__batch_is_id(b, field)) return inf_record_batch_set_string(b, row, field, s, len); /* ids are text */
    const char *p = s, *end = s + len;
    if (*p == '-' || *p == '+') p++;
    int all_digits = p < end;
    for (const char *q = p; q < end; q++)
        if (!isdigit((unsigned char)*q)) {
            all_digits = 0;
            break;
        }
    if (all_digits && end - p > 1 && *p == '0') /* "007", "02134": a code, kept as written (JSON keeps it too) */
        return inf_record_batch_set_string(b, row, field, s, len);
    if (all_digits && end - p <= 18) {
        int64_t v = 0;
        for (const char *q = p; q < end; q++) v = v * 10 + (*q - '0');
        return inf_record_batch_set_int(b, row, field, *s == '-' ? -v : v);
    }
    int c0 = (unsigned char)*p;
    double v;
    if (p < end && (isdigit(c0) || c0 == '.') && len < 64 && !inf__parse_double(s, len, &v))
        return inf_record_batch_set_float(b, row, field, v);
    if (len <= 4 && (!strncmp(s, "nan", len) || !strncmp(s, "NaN", len)) && len == 3)
        return inf_record_batch_set_float(b, row, field, NAN);
    if ((len == 3 && !strncmp(s, "inf", 3)) || (len == 4 && !strncmp(s, "+inf", 4)))
        return inf_record_batch_set_float(b, row, field, INFINITY);
    if (len == 4 && !strncmp(s, "-inf", 4)) return inf_record_batch_set_float(b, row, field, -INFINITY);
    if (len == 4 && !strncmp(s, "true", 4)) return inf_record_batch_set_bool(b, row, field, 1);
    if (len == 5 && !strncmp(s, "false", 5)) return inf_record_batch_set_bool(b, row, field, 0);
    return inf_record_batch_set_string(b, row, field, s, len);
}

inf_status inf_record_batch_set_text(inf_record_batch *b, int row, int field, const char *s, size_t len) {
    return inf__io_set_text_cell(b, row, field, s, len);
}

const char *inf_io_uri_param(const char *uri, const char *key, char *buf, size_t size) {
    return inf__io_uri_param(uri, key, buf, size);
}

/* Copies the n bytes at s into out (size bytes), URL-decoding; -1 when too long. */
static int copy_decoded(char *out, size_t size, const char *s, size_t n) {
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        if (k + 1 >= size) return -1;
        if (s[i] == '%' && i + 2 < n && hexval(s[i + 1]) >= 0 && hexval(s[i + 2]) >= 0) {
            out[k++] = (char)(hexval(s[i + 1]) * 16 + hexval(s[i + 2]));
            i += 2;
        } else {
            out[k++] = s[i];
        }
    }
    out[k] = 0;
    return 0;
}

inf_status inf_io_parse_net_uri(const char *uri, int default_port, inf_net_uri *u, inf_error *err) {
    char red[512];
    memset(u, 0, sizeof *u);
    u->port = default_port;
    const char *sep = uri ? strstr(uri, "://") : NULL;
    if (!sep || sep == uri || (size_t)(sep - uri) >= sizeof u->scheme) goto bad;
    memcpy(u->scheme, uri, (size_t)(sep - uri));
    const char *auth = sep + 3, *end = auth + strcspn(auth, "/?");
    const char *at = memchr(auth, '@', (size_t)(end - auth));
    if (at) {
        const char *colon = memchr(auth, ':', (size_t)(at - auth));
        const char *uend = colon ? colon : at;
        if (copy_decoded(u->user, sizeof u->user, auth, (size_t)(uend - auth)) ||
            (colon && copy_decoded(u->password, sizeof u->password, colon + 1, (size_t)(at - colon - 1))))
            goto bad;
        auth = at + 1;
    }
    const char *colon = memchr(auth, ':', (size_t)(end - auth));
    const char *hend = colon ? colon : end;
    if (hend == auth || (size_t)(hend - auth) >= sizeof u->host) goto bad;
    memcpy(u->host, auth, (size_t)(hend - auth));
    if (colon) {
        char *pe;
        long port = strtol(colon + 1, &pe, 10);
        if (pe != end || port < 0 || port > 65535) goto bad;
        u->port = (int)port;
    }
    if (*end == '/' && copy_decoded(u->path, sizeof u->path, end + 1, strcspn(end + 1, "?"))) goto bad;
    return INF_OK;
bad:
    return inf_error_set(err, INF_EINVAL, "'%s': expected SCHEME://[USER[:PASSWORD]@]HOST[:PORT][/PATH][?PARAMS]",
                        inf_io_redact_uri(uri ? uri : "", red, sizeof red));
}

int inf__io_buf_write(const char *bytes, size_t n, void *user) {
    inf__io_buf *b = user;
    if (b->n + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->n + n + 1) cap *= 2;
        char *p = realloc(b->p, cap);
        if (!p) return -1;
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->n, bytes, n);
    b->n += n;
    b->p[b->n] = 0;
    return 0;
}

const char *inf__io_value_text(const inf_value *v, char *buf, size_t size, size_t *len) {
    switch (v->type) {
    case INF_FIELD_STRING:
        *len = v->u.s.len;
        return v->u.s.ptr;
    case INF_FIELD_BOOL: snprintf(buf, size, "%s", v->u.b ? "true" : "false"); break;
    case INF_FIELD_INT:
        if (size < INF__FMT_NUM_MAX) snprintf(buf, size, "%lld", (long long)v->u.i);
        else inf__fmt_i64(v->u.i, buf);
        break;
    case INF_FIELD_FLOAT:
        if (size < INF__FMT_NUM_MAX) snprintf(buf, size, "%.17g", v->u.f);
        else inf__fmt_g17(v->u.f, buf); /* %.17g without printf (SQLite/PostgreSQL text, ids) */
        break;
    case INF_FIELD_TIMESTAMP: inf_format_timestamp(v->u.ts, buf, size); break;
    default: buf[0] = 0; break;
    }
    *len = strlen(buf);
    return buf;
}

static int scheme_len(const char *uri) {
    const char *c = strchr(uri, ':');
    return c ? (int)(c - uri) : -1;
}

inf_status inf_source_open(const char *uri, const inf_source_options *opts, inf_source **out, inf_error *err) {
    *out = NULL;
    char red[512];
    int n = uri ? scheme_len(uri) : -1;
    if (n <= 0)
        return inf_error_set(err, INF_EINVAL, "source '%s': expected SCHEME:LOCATION (csv:, jsonl:, sqlite:)",
                            inf_io_redact_uri(uri ? uri : "", red, sizeof red));
    inf_source_options defaults = {0};
    if (!opts) opts = &defaults;
    for (int i = 0; i < N_SOURCE_TYPES; i++) {
        const inf_source_type *t = source_types[i];
        if (strlen(t->scheme) != (size_t)n || strncmp(uri, t->scheme, (size_t)n)) continue;
        inf_source *src = calloc(1, sizeof *src);
        if (!src) return inf_error_set(err, INF_ENOMEM, "source: out of memory");
        src->type = t;
        if (opts->id_column && !(src->id_column = strdup(opts->id_column))) {
            free(src);
            return inf_error_set(err, INF_ENOMEM, "source: out of memory");
        }
        inf_status st = t->open(uri, uri + n + 1, opts, &src->state, err);
        if (st) {
            free(src->id_column);
            free(src);
            return st;
        }
        *out = src;
        return INF_OK;
    }
    return inf_error_set(err, INF_EINVAL, "source '%s': unknown scheme '%.*s'", inf_io_redact_uri(uri, red, sizeof red),
                        n, uri);
}

inf_status inf_source_next(inf_source *src, inf_record_batch *batch, int *eof, inf_error *err) {
    inf_record_batch_clear(batch);
    *eof = 0;
    if (src->id_column && inf_record_batch_set_id_field(batch, src->id_column))
        return inf_error_set(err, INF_ENOMEM, "source: out of memory");
    return src->type->next(src->state, batch, eof, err);
}

inf_status inf_source_ack(inf_source *src, inf_error *err) {
    return src->type->ack ? src->type->ack(src->state, err) : INF_OK;
}

void inf_source_close(inf_source *src) {
    if (!src) return;
    src->type->close(src->state);
    free(src->id_column);
    free(src);
}

inf_status inf_sink_open(const char *uri, const inf_sink_options *opts, inf_sink **out, inf_error *err) {
    *out = NULL;
    char red[512];
    int n = uri ? scheme_len(uri) : -1;
    if (n <= 0)
        return inf_error_set(err, INF_EINVAL, "sink '%s': expected SCHEME:LOCATION (csv:, jsonl:, sqlite:, npy:)",
                            inf_io_redact_uri(uri ? uri : "", red, sizeof red));
    inf_sink_options defaults = {0};
    if (!opts) opts = &defaults;
    for (int i = 0; i < N_SINK_TYPES; i++) {
        const inf_sink_type *t = sink_types[i];
        if (strlen(t->scheme) != (size_t)n || strncmp(uri, t->scheme, (size_t)n)) continue;
        inf_sink *sink = calloc(1, sizeof *sink);
        if (!sink) return inf_error_set(err, INF_ENOMEM, "sink: out of memory");
        sink->type = t;
        inf_status st = t->open(uri, uri + n + 1, opts, &sink->state, err);
        if (st) {
            free(sink);
            return st;
        }
        *out = sink;
        return INF_OK;
    }
    return inf_error_set(err, INF_EINVAL, "sink '%s': unknown scheme '%.*s'", inf_io_redact_uri(uri, red, sizeof red), n,
                        uri);
}

inf_status inf_sink_write(inf_sink *sink, const inf_record_batch *batch, inf_error *err) {
    return sink->type->write(sink->state, batch, err);
}

inf_status inf_sink_commit(inf_sink *sink, inf_error *err) { return sink->type->commit(sink->state, err); }

inf_status inf_sink_close(inf_sink *sink, inf_error *err) {
    if (!sink) return INF_OK;
    inf_status st = sink->type->close(sink->state, err);
    free(sink);
    return st;
}
