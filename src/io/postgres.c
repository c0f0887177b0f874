/*
 * postgres.c -- `postgresql://USER[:PASS]@HOST[:PORT]/DB?table=T` (or
 * `&query=SQL`) sources and `...?table=T` sinks, through libpq.
 *
 * The part before infera's own parameters (table, query, shard) is handed to
 * libpq as a connection URI, so libpq's parameters (sslmode=, connect_timeout=,
 * application_name=, ...) pass through.  Error messages show the URI without
 * its password.
 *
 * Source: a server-side cursor in a read-only transaction (BEGIN; DECLARE c
 * NO SCROLL CURSOR FOR ...; FETCH max_rows), so the result set is streamed
 * and never held.  `?table=T` reads `SELECT * FROM T`, ordered by the id
 * column when opts->id_column names one (a resumed job then sees the rows in
 * the same order).  `shard=K/N` (added by `infera batch --shard K/N`) keeps
 * the rows with abs(hashtext(id::text)::bigint) % N = K (bigint: abs() of the
 * smallest int4 would overflow).  Types by column OID: bool -> bool,
 * int2/4/8 and oid -> int, float4/8 and numeric -> float, timestamp(tz) and
 * date -> timestamp, everything else (text, varchar, json, uuid, ...) ->
 * string; SQL NULL -> null.
 *
 * Sink: the table is created when missing (CREATE TABLE IF NOT EXISTS under
 * an advisory lock, so concurrent writers -- shards -- do not race), with
 * column types from the first batch (bool -> boolean, int -> bigint, float ->
 * double precision, string -> text, timestamp -> timestamptz, all-null ->
 * text) and PRIMARY KEY (key_column); an existing table whose key column is
 * not unique gets a UNIQUE index on it.  Rows go in with COPY: straight into
 * the table without a key, else into a temporary staging table followed by
 * INSERT ... ON CONFLICT (key) DO UPDATE, so a resumed job overwrites instead
 * of duplicating.  Fields missing from an existing table are added (ALTER
 * TABLE ADD COLUMN IF NOT EXISTS).  write() runs inside a transaction that
 * commit() ends.  Non-finite floats are written as NULL.
 */
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include <libpq-fe.h>

#include "io/io_int.h"
#include "io/numfmt.h"

/* Pg type OIDs (server/catalog/pg_type_d.h). */
enum {
    OID_BOOL = 16, OID_INT8 = 20, OID_INT2 = 21, OID_INT4 = 23, OID_OID = 26, OID_FLOAT4 = 700,
    OID_FLOAT8 = 701, OID_NUMERIC = 1700, OID_DATE = 1082, OID_TIMESTAMP = 1114, OID_TIMESTAMPTZ = 1184,
};

/* See io_int.h. */
void inf__io_pg_conninfo(const char *uri, char *conninfo, size_t size) {
    const char *q = strchr(uri, '?');
    size_t n = q ? (size_t)(q - uri) : strlen(uri);
    if (n >= size) n = size - 1;
    memcpy(conninfo, uri, n);
    conninfo[n] = 0;
    if (!q) return;
    int first = 1;
    for (const char *p = q + 1; *p;) {
        size_t len = strcspn(p, "&");
        int ours = (len >= 6 && (!strncmp(p, "table=", 6) || !strncmp(p, "query=", 6) || !strncmp(p, "shard=", 6)));
        if (!ours && len) {
            size_t used = strlen(conninfo);
            snprintf(conninfo + used, size - used, "%c%.*s", first ? '?' : '&', (int)len, p);
            first = 0;
        }
        p += len;
        if (*p) p++;
    }
}

void inf__io_pg_quote_table(PGconn *c, const char *table, char *out, size_t size) {
    const char *dot = strchr(table, '.');
    out[0] = 0;
    char *a = NULL, *b = NULL;
    if (dot) {
        a = PQescapeIdentifier(c, table, (size_t)(dot - table));
        b = PQescapeIdentifier(c, dot + 1, strlen(dot + 1));
        if (a && b) snprintf(out, size, "%s.%s", a, b);
    } else {
        a = PQescapeIdentifier(c, table, strlen(table));
        if (a) snprintf(out, size, "%s", a);
    }
    PQfreemem(a);
    PQfreemem(b);
}

/* The server's message on one line (its DETAIL / HINT lines joined by
 * blanks, no trailing newline), in buf (400 bytes): errors are one line. */
#define pg_msg(c) pg_msg_into((c), (char[400]){0})
static const char *pg_msg_into(PGconn *c, char *buf) {
    snprintf(buf, 400, "%s", PQerrorMessage(c));
    size_t n = strlen(buf);
    while (n && (buf[n - 1] == '\n' || buf[n - 1] == ' ')) buf[--n] = 0;
    for (size_t i = 0; i < n; i++)
        if (buf[i] == '\n') buf[i] = ' ';
    return buf;
}

static void quiet_notice(void *arg, const char *message) {
    (void)arg;
    (void)message; /* NOTICEs ("already exists, skipping") are expected, not news */
}

static inf_status pg_connect(const char *uri, const char *rest, PGconn **out, char *red, size_t red_size,
                             inf_error *err) {
    inf_io_redact_uri(uri, red, red_size);
    char conninfo[4096];
    inf__io_pg_conninfo(uri, conninfo, sizeof conninfo);
    PGconn *c = PQconnectdb(conninfo);
    if (!c) return inf_error_set(err, INF_ENOMEM, "%s: out of memory", red);
    if (PQstatus(c) != CONNECTION_OK) {
        inf_status st = inf_error_set(err, INF_EIO, "%s: cannot connect: %s", red, pg_msg(c));
        PQfinish(c);
        return st;
    }
    PQsetNoticeProcessor(c, quiet_notice, NULL);
    PGresult *r = PQexec(c, "SET extra_float_digits = 3");
    PQclear(r);
    *out = c;
    (void)rest;
    return INF_OK;
}

static inf_status exec_ok(PGconn *c, const char *sql, const char *red, const char *what, inf_error *err) {
    PGresult *r = PQexec(c, sql);
    ExecStatusType s = PQresultStatus(r);
    PQclear(r);
    if (s == PGRES_COMMAND_OK || s == PGRES_TUPLES_OK) return INF_OK;
    return inf_error_set(err, INF_EIO, "%s: %s: %s", red, what, pg_msg(c));
}

/* ---- source --------------------------------------------------------------- */

typedef struct pg_source {
    PGconn *conn;
    int max_rows;
    int done;
    long row;
    int n_cols;
    int *fields;
    Oid *types;
    char fetch[64];
    char red[1024];
} pg_source;

static void pg_source_close(void *state) {
    pg_source *s = state;
    if (!s) return;
    if (s->conn) {
        PGresult *r = PQexec(s->conn, "ROLLBACK");
        PQclear(r);
        PQfinish(s->conn);
    }
    free(s->fields);
    free(s->types);
    free(s);
}

static inf_status pg_source_open(const char *uri, const char *rest, const inf_source_options *opts, void **state,
                                 inf_error *err) {
    pg_source *s = calloc(1, sizeof *s);
    size_t qsize = strlen(uri) + 1;
    char *query = malloc(qsize), *sql = NULL, shard[64];
    inf_status st = INF_OK;
    if (!s || !query) {
        free(s);
        free(query);
        return inf_error_set(err, INF_ENOMEM, "postgresql source: out of memory");
    }
    s->max_rows = opts->max_rows > 0 ? opts->max_rows : 1024;
    snprintf(s->fetch, sizeof s->fetch, "FETCH FORWARD %d FROM infera_src", s->max_rows);
    if ((st = pg_connect(uri, rest, &s->conn, s->red, sizeof s->red, err))) goto fail;
    char table[512], ident[1100], idq[600] = "";
    const char *id = opts->id_column;
    if (id) inf__io_quote_ident(idq, sizeof idq, id);
    int k = 0, n = 0;
    int has_shard = inf__io_uri_param(uri, "shard", shard, sizeof shard) != NULL;
    if (has_shard) {
        char extra;
        if (sscanf(shard, "%d/%d%c", &k, &n, &extra) != 2 || n < 1 || k < 0 || k >= n) {
            st = inf_error_set(err, INF_EINVAL, "%s: shard must be K/N with 0 <= K < N", s->red);
            goto fail;
        }
        if (!id) {
            st = inf_error_set(err, INF_EINVAL, "%s: sharding needs the id column", s->red);
            goto fail;
        }
    }
    size_t cap = strlen(uri) + 2048;
    if (!(sql = malloc(cap))) {
        st = inf_error_set(err, INF_ENOMEM, "%s: out of memory", s->red);
        goto fail;
    }
    if (inf__io_uri_param(uri, "query", query, qsize)) {
        snprintf(sql, cap, "SELECT * FROM (%s) AS infera_q", query);
    } else if (inf__io_uri_param(uri, "table", table, sizeof table)) {
        inf__io_pg_quote_table(s->conn, table, ident, sizeof ident);
        snprintf(sql, cap, "SELECT * FROM %s", ident);
    } else {
        st = inf_error_set(err, INF_EINVAL, "%s: the URI needs ?table=T or &query=SQL", s->red);
        goto fail;
    }
    size_t used = strlen(sql);
    if (has_shard) {
        char where[800];
        if (inf_io_shard_predicate(id, k, n, where, sizeof where)) {
            st = inf_error_set(err, INF_EINVAL, "%s: the id column name is too long to shard by", s->red);
            goto fail;
        }
        used += (size_t)snprintf(sql + used, cap - used, " WHERE %s", where);
    }
    if (id && !inf__io_uri_param(uri, "query", query, qsize))
        snprintf(sql + used, cap - used, " ORDER BY %s", idq);
    if ((st = exec_ok(s->conn, "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY", s->red, "begin", err))) goto fail;
    {
        size_t dcap = strlen(sql) + 64;
        char *decl = malloc(dcap);
        if (!decl) {
            st = inf_error_set(err, INF_ENOMEM, "%s: out of memory", s->red);
            goto fail;
        }
        snprintf(decl, dcap, "DECLARE infera_src NO SCROLL CURSOR FOR %s", sql);
        st = exec_ok(s->conn, decl, s->red, "query", err);
        free(decl);
        if (st) {
            if (err) err->status = st = INF_EINVAL;
            goto fail;
        }
    }
    free(sql);
    free(query);
    *state = s;
    return INF_OK;
fail:
    free(sql);
    free(query);
    pg_source_close(s);
    return st;
}

static inf_status set_cell(inf_record_batch *b, int row, int field, Oid type, const char *v, int len) {
    switch (type) {
    case OID_BOOL: return inf_record_batch_set_bool(b, row, field, v[0] == 't');
    case OID_INT2:
    case OID_INT4:
    case OID_INT8:
    case OID_OID: return inf_record_batch_set_int(b, row, field, strtoll(v, NULL, 10));
    case OID_FLOAT4:
    case OID_FLOAT8:
    case OID_NUMERIC: {
        if (!strcmp(v, "NaN")) return inf_record_batch_set_float(b, row, field, NAN);
        if (!strcmp(v, "Infinity")) return inf_record_batch_set_float(b, row, field, INFINITY);
        if (!strcmp(v, "-Infinity")) return inf_record_batch_set_float(b, row, field, -INFINITY);
        return inf_record_batch_set_float(b, row, field, strtod(v, NULL));
    }
    case OID_DATE:
    case OID_TIMESTAMP:
    case OID_TIMESTAMPTZ: {
        int64_t us;
        if (inf_parse_timestamp(v, (size_t)len, &us) == 0) return inf_record_batch_set_timestamp(b, row, field, us);
        return inf_record_batch_set_string(b, row, field, v, (size_t)len);
    }
    default: return inf_record_batch_set_string(b, row, field, v, (size_t)len);
    }
}

static inf_status pg_source_next(void *state, inf_record_batch *b, int *eof, inf_error *err) {
    pg_source *s = state;
    if (s->done) {
        *eof = 1;
        return INF_OK;
    }
    PGresult *r = PQexec(s->conn, s->fetch);
    if (PQresultStatus(r) != PGRES_TUPLES_OK) {
        inf_status st = inf_error_set(err, INF_EIO, "%s: row %ld: %s", s->red, s->row + 1, pg_msg(s->conn));
        PQclear(r);
        return st;
    }
    int nc = PQnfields(r), nr = PQntuples(r);
    if (!s->fields) {
        s->n_cols = nc;
        s->fields = calloc((size_t)(nc ? nc : 1), sizeof *s->fields);
        s->types = calloc((size_t)(nc ? nc : 1), sizeof *s->types);
        if (!s->fields || !s->types) {
            PQclear(r);
            return inf_error_set(err, INF_ENOMEM, "%s: out of memory", s->red);
        }
        for (int c = 0; c < nc; c++) s->types[c] = PQftype(r, c);
    }
    inf_status st = INF_OK;
    for (int c = 0; c < nc && !st; c++) st = inf_record_batch_add_field(b, PQfname(r, c), &s->fields[c]);
    for (int i = 0; i < nr && !st; i++) {
        int row;
        if ((st = inf_record_batch_add_row(b, &row))) break;
        for (int c = 0; c < nc && !st; c++) {
            if (PQgetisnull(r, i, c)) continue;
            if (inf__batch_is_id(b, s->fields[c])) /* ids are text: the server's exact text of the value */
                st = inf_record_batch_set_string(b, row, s->fields[c], PQgetvalue(r, i, c), (size_t)PQgetlength(r, i, c));
            else
                st = set_cell(b, row, s->fields[c], s->types[c], PQgetvalue(r, i, c), PQgetlength(r, i, c));
        }
        s->row++;
    }
    PQclear(r);
    if (st) return inf_error_set(err, st, "%s: out of memory", s->red);
    if (nr < s->max_rows) {
        s->done = 1;
        *eof = 1;
    }
    return INF_OK;
}

const inf_source_type inf__io_postgresql_source = {"postgresql", pg_source_open, pg_source_next, NULL,
                                                   pg_source_close};

/* ---- sink ----------------------------------------------------------------- */

typedef struct pg_sink {
    PGconn *conn;
    int in_txn;
    int n_cols;
    char **cols;
    int *map;           /* n_cols: each column's field in the batch being written, -1 = absent */
    char table_q[1100]; /* quoted (schema.)table */
    char key[256];
    char *upsert;       /* INSERT ... SELECT FROM staging ON CONFLICT ...; NULL without a key */
    char *copy;         /* COPY target (cols) FROM STDIN */
    char *line;         /* a COPY line being built */
    size_t line_cap;
    char table[512];
    char red[1024];
    int keep_table_shape; /* opts->keep_table_shape */
    int64_t ts_last;      /* the last timestamp formatted and its text (ts_text[0] = 0: none): */
    char ts_text[40];     /* rows written together often share one (a prediction log's batch) */
} pg_sink;

static inf_status pg_sink_open(const char *uri, const char *rest, const inf_sink_options *opts, void **state,
                               inf_error *err) {
    pg_sink *s = calloc(1, sizeof *s);
    if (!s) return inf_error_set(err, INF_ENOMEM, "postgresql sink: out of memory");
    inf_status st = pg_connect(uri, rest, &s->conn, s->red, sizeof s->red, err);
    if (st) {
        free(s);
        return st;
    }
    if (!inf__io_uri_param(uri, "table", s->table, sizeof s->table)) {
        PQfinish(s->conn);
        st = inf_error_set(err, INF_EINVAL, "%s: a sink needs ?table=T", s->red);
        free(s);
        return st;
    }
    inf__io_pg_quote_table(s->conn, s->table, s->table_q, sizeof s->table_q);
    if (opts->key_column) snprintf(s->key, sizeof s->key, "%s", opts->key_column);
    s->keep_table_shape = opts->keep_table_shape;
    *state = s;
    return INF_OK;
}

static const char *pg_decl_type(const inf_record_batch *b, int f) {
    for (int r = 0; r < b->n_rows; r++) {
        switch (inf__batch_at(b, r, f)->type) {
        case INF_FIELD_BOOL: return "boolean";
        case INF_FIELD_INT: return "bigint";
        case INF_FIELD_FLOAT: return "double precision";
        case INF_FIELD_STRING: return "text";
        case INF_FIELD_TIMESTAMP: return "timestamptz";
        default: break;
        }
    }
    return "text";
}

/* Appends to a growing heap string. */
static int sb_printf(char **buf, size_t *cap, size_t *len, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static int sb_printf(char **buf, size_t *cap, size_t *len, const char *fmt, ...) {
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(*buf ? *buf + *len : NULL, *buf ? *cap - *len : 0, fmt, ap);
        va_end(ap);
        if (n < 0) return -1;
        if (*buf && *len + (size_t)n < *cap) {
            *len += (size_t)n;
            return 0;
        }
        size_t ncap = (*cap ? *cap * 2 : 256) + (size_t)n;
        char *p = realloc(*buf, ncap);
        if (!p) return -1;
        *buf = p;
        *cap = ncap;
    }
}

/* ON CONFLICT (key) needs a unique index on the key alone: an existing table
 * created without one gets it (refused, with the server's reason, when the
 * table already holds duplicate ids).  Runs inside setup's transaction. */
static inf_status ensure_unique_key(pg_sink *s, inf_error *err) {
    const char *params[2] = {s->table_q, s->key};
    PGresult *r = PQexecParams(s->conn,
                               "SELECT EXISTS (SELECT 1 FROM pg_index i JOIN pg_attribute a ON a.attrelid = i.indrelid "
                               "AND a.attnum = i.indkey[0] WHERE i.indrelid = to_regclass($1) AND i.indisunique "
                               "AND i.indnkeyatts = 1 AND i.indpred IS NULL AND i.indexprs IS NULL AND a.attname = $2)",
                               2, NULL, params, NULL, NULL, 0);
    int ok = PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 1;
    int unique = ok && PQgetvalue(r, 0, 0)[0] == 't';
    PQclear(r);
    if (!ok) return inf_error_set(err, INF_EIO, "%s: table %s: cannot read its indexes: %s", s->red, s->table, pg_msg(s->conn));
    if (unique) return INF_OK;
    char name[600], keyq[600], sql[2400];
    snprintf(name, sizeof name, "%s_%s_key", strchr(s->table, '.') ? strchr(s->table, '.') + 1 : s->table, s->key);
    char *nameq = PQescapeIdentifier(s->conn, name, strlen(name));
    if (!nameq) return inf_error_set(err, INF_ENOMEM, "%s: out of memory", s->red);
    inf__io_quote_ident(keyq, sizeof keyq, s->key);
    snprintf(sql, sizeof sql, "CREATE UNIQUE INDEX IF NOT EXISTS %s ON %s (%s)", nameq, s->table_q, keyq);
    PQfreemem(nameq);
    r = PQexec(s->conn, sql);
    ok = PQresultStatus(r) == PGRES_COMMAND_OK;
    PQclear(r);
    if (!ok)
        return inf_error_set(err, INF_EIO,
                            "%s: table %s: rows are keyed by '%s' but it is neither the table's primary key nor unique, "
                            "and a unique index on it cannot be made: %s",
                            s->red, s->table, s->key, pg_msg(s->conn));
    return INF_OK;
}

/* keep_table_shape: an existing table must have every field of b as a
 * column (the shape of an earlier run); refused otherwise, left unchanged.
 * Runs inside setup's transaction, after the table lock. */
static inf_status check_table_shape(pg_sink *s, const inf_record_batch *b, inf_error *err) {
    const char *params[1] = {s->table_q};
    PGresult *r = PQexecParams(s->conn,
                               "SELECT attname FROM pg_attribute WHERE attrelid = to_regclass($1) AND attnum > 0 "
                               "AND NOT attisdropped",
                               1, NULL, params, NULL, NULL, 0);
    if (PQresultStatus(r) != PGRES_TUPLES_OK) {
        PQclear(r);
        return inf_error_set(err, INF_EIO, "%s: table %s: cannot read its columns: %s", s->red, s->table, pg_msg(s->conn));
    }
    int n = PQntuples(r), n_missing = 0;
    const char **missing = n ? calloc((size_t)b->n_fields + 1, sizeof *missing) : NULL;
    if (n && !missing) {
        PQclear(r);
        return inf_error_set(err, INF_ENOMEM, "%s: out of memory", s->red);
    }
    for (int f = 0; f < b->n_fields && n; f++) { /* n == 0: no such table, it is created */
        int found = 0;
        for (int i = 0; i < n && !found; i++) found = !strcmp(PQgetvalue(r, i, 0), b->names[f]);
        if (!found) missing[n_missing++] = b->names[f];
    }
    inf_status st = n_missing ? inf__io_table_shape_refused(err, s->red, s->table, missing, n_missing) : INF_OK;
    free(missing);
    PQclear(r);
    return st;
}

static inf_status pg_sink_setup(pg_sink *s, const inf_record_batch *b, inf_error *err) {
    char *sql = NULL, ident[600];
    size_t cap = 0, len = 0;
    inf_status st = INF_OK;
    s->cols = calloc((size_t)(b->n_fields ? b->n_fields : 1), sizeof *s->cols);
    s->map = calloc((size_t)(b->n_fields ? b->n_fields : 1), sizeof *s->map);
    if (!s->cols || !s->map) return inf_error_set(err, INF_ENOMEM, "%s: out of memory", s->red);
    for (int f = 0; f < b->n_fields; f++) {
        if (!(s->cols[f] = strdup(b->names[f]))) return inf_error_set(err, INF_ENOMEM, "%s: out of memory", s->red);
        s->n_cols = f + 1;
    }
    if (s->key[0] && inf_record_batch_find_field(b, s->key) < 0)
        return inf_error_set(err, INF_EINVAL, "%s: table %s: the key column '%s' is not among the fields", s->red,
                            s->table, s->key);
    if ((st = exec_ok(s->conn, "BEGIN", s->red, "begin", err))) return st;
    s->in_txn = 1;
    /* concurrent writers (shards) must not race on CREATE TABLE */
    {
        char *lit = PQescapeLiteral(s->conn, s->table, strlen(s->table));
        if (!lit) goto oom;
        len = 0;
        int bad = sb_printf(&sql, &cap, &len, "SELECT pg_advisory_xact_lock(hashtext('infera-table:' || %s))", lit);
        PQfreemem(lit);
        if (bad) goto oom;
    }
    if ((st = exec_ok(s->conn, sql, s->red, "lock", err))) goto done;
    if (s->keep_table_shape && (st = check_table_shape(s, b, err))) goto done;
    len = 0;
    if (sb_printf(&sql, &cap, &len, "CREATE TABLE IF NOT EXISTS %s (", s->table_q)) goto oom;
    for (int f = 0; f < b->n_fields; f++) {
        inf__io_quote_ident(ident, sizeof ident, b->names[f]);
        if (sb_printf(&sql, &cap, &len, "%s%s %s%s", f ? ", " : "", ident, pg_decl_type(b, f),
                      s->key[0] && !strcmp(s->key, b->names[f]) ? " PRIMARY KEY" : ""))
            goto oom;
    }
    if (sb_printf(&sql, &cap, &len, ")")) goto oom;
    if ((st = exec_ok(s->conn, sql, s->red, "create table", err))) goto done;
    for (int f = 0; f < b->n_fields; f++) {
        inf__io_quote_ident(ident, sizeof ident, b->names[f]);
        len = 0;
        if (sb_printf(&sql, &cap, &len, "ALTER TABLE %s ADD COLUMN IF NOT EXISTS %s %s", s->table_q, ident,
                      pg_decl_type(b, f)))
            goto oom;
        if ((st = exec_ok(s->conn, sql, s->red, "add column", err))) goto done;
    }
    if (s->key[0] && (st = ensure_unique_key(s, err))) goto done;
    /* the COPY statement, into the table or the staging table */
    char *cols = NULL;
    size_t ccap = 0, clen = 0;
    for (int f = 0; f < b->n_fields; f++) {
        inf__io_quote_ident(ident, sizeof ident, b->names[f]);
        if (sb_printf(&cols, &ccap, &clen, "%s%s", f ? ", " : "", ident)) {
            free(cols);
            goto oom;
        }
    }
    if (!cols && sb_printf(&cols, &ccap, &clen, "%s", "")) goto oom;
    size_t l2 = 0, c2 = 0;
    if (s->key[0]) {
        len = 0;
        if (sb_printf(&sql, &cap, &len,
                      "CREATE TEMP TABLE IF NOT EXISTS infera_staging AS SELECT %s FROM %s WITH NO DATA", cols,
                      s->table_q)) {
            free(cols);
            goto oom;
        }
        if ((st = exec_ok(s->conn, sql, s->red, "staging table", err))) {
            free(cols);
            goto done;
        }
        int bad = sb_printf(&s->copy, &c2, &l2, "COPY infera_staging (%s) FROM STDIN", cols);
        size_t ucap = 0, ulen = 0;
        char keyq[600];
        inf__io_quote_ident(keyq, sizeof keyq, s->key);
        bad = bad || sb_printf(&s->upsert, &ucap, &ulen, "INSERT INTO %s (%s) SELECT %s FROM infera_staging ON CONFLICT (%s) ",
                               s->table_q, cols, cols, keyq);
        if (b->n_fields > 1) {
            bad = bad || sb_printf(&s->upsert, &ucap, &ulen, "DO UPDATE SET ");
            int first = 1;
            for (int f = 0; f < b->n_fields; f++) {
                if (!strcmp(b->names[f], s->key)) continue;
                inf__io_quote_ident(ident, sizeof ident, b->names[f]);
                bad = bad || sb_printf(&s->upsert, &ucap, &ulen, "%s%s = EXCLUDED.%s", first ? "" : ", ", ident, ident);
                first = 0;
            }
        } else {
            bad = bad || sb_printf(&s->upsert, &ucap, &ulen, "DO NOTHING");
        }
        if (bad) {
            free(cols);
            goto oom;
        }
    } else if (sb_printf(&s->copy, &c2, &l2, "COPY %s (%s) FROM STDIN", s->table_q, cols)) {
        free(cols);
        goto oom;
    }
    free(cols);
    goto done;
oom:
    st = inf_error_set(err, INF_ENOMEM, "%s: out of memory", s->red);
done:
    free(sql);
    return st;
}

/* Appends n bytes (no printf: a COPY line is built a value at a time). */
static int sb_put(char **buf, size_t *cap, size_t *len, const char *text, size_t n) {
    if (!*buf || *len + n >= *cap) {
        size_t ncap = (*cap ? *cap * 2 : 256) + n;
        char *p = realloc(*buf, ncap);
        if (!p) return -1;
        *buf = p;
        *cap = ncap;
    }
    memcpy(*buf + *len, text, n);
    *len += n;
    (*buf)[*len] = 0;
    return 0;
}

/* A value in COPY's text format: numbers as %lld / %.17g give them (io/numfmt.c, byte for byte,
 * ~10x cheaper than printf), a timestamp's text kept for the rows that share it. */
static int copy_value(pg_sink *s, char **buf, size_t *cap, size_t *len, const inf_value *v) {
    char tmp[INF__FMT_NUM_MAX];
    switch (v ? v->type : INF_FIELD_NULL) {
    case INF_FIELD_NULL:
        return sb_put(buf, cap, len, "\\N", 2);
    case INF_FIELD_BOOL:
        return sb_put(buf, cap, len, v->u.b ? "t" : "f", 1);
    case INF_FIELD_INT:
        return sb_put(buf, cap, len, tmp, (size_t)inf__fmt_i64(v->u.i, tmp));
    case INF_FIELD_FLOAT:
        if (!isfinite(v->u.f)) return sb_put(buf, cap, len, "\\N", 2);
        return sb_put(buf, cap, len, tmp, (size_t)inf__fmt_g17(v->u.f, tmp));
    case INF_FIELD_TIMESTAMP:
        if (!s->ts_text[0] || v->u.ts != s->ts_last) {
            inf_format_timestamp(v->u.ts, s->ts_text, sizeof s->ts_text);
            s->ts_last = v->u.ts;
        }
        return sb_put(buf, cap, len, s->ts_text, strlen(s->ts_text));
    case INF_FIELD_STRING: {
        if (*len + (size_t)v->u.s.len * 2 + 8 >= *cap) {
            size_t ncap = *cap * 2 + (size_t)v->u.s.len * 2 + 16;
            char *p = realloc(*buf, ncap);
            if (!p) return -1;
            *buf = p;
            *cap = ncap;
        }
        char *o = *buf + *len;
        for (uint32_t i = 0; i < v->u.s.len; i++) {
            char c = v->u.s.ptr[i];
            switch (c) {
            case '\\': *o++ = '\\'; *o++ = '\\'; break;
            case '\n': *o++ = '\\'; *o++ = 'n'; break;
            case '\r': *o++ = '\\'; *o++ = 'r'; break;
            case '\t': *o++ = '\\'; *o++ = 't'; break;
            case 0: break; /* PostgreSQL text cannot hold NUL */
            default: *o++ = c;
            }
        }
        *len = (size_t)(o - *buf);
        (*buf)[*len] = 0;
        return 0;
    }
    }
    return sb_printf(buf, cap, len, "\\N");
}

static inf_status pg_sink_write(void *state, const inf_record_batch *b, inf_error *err) {
    pg_sink *s = state;
    inf_status st;
    if (!s->cols && (st = pg_sink_setup(s, b, err))) return st;
    if (!s->in_txn) {
        if ((st = exec_ok(s->conn, "BEGIN", s->red, "begin", err))) return st;
        s->in_txn = 1;
    }
    int *map = s->map;
    for (int c = 0; c < s->n_cols; c++) map[c] = inf_record_batch_find_field(b, s->cols[c]);
    PGresult *r = PQexec(s->conn, s->copy);
    if (PQresultStatus(r) != PGRES_COPY_IN) {
        PQclear(r);
        return inf_error_set(err, INF_EIO, "%s: table %s: copy: %s", s->red, s->table, pg_msg(s->conn));
    }
    PQclear(r);
    /* rows are sent in blocks of about 64 KiB */
    size_t len = 0;
    int bad = 0;
    for (int row = 0; row < b->n_rows && !bad; row++) {
        for (int c = 0; c < s->n_cols && !bad; c++) {
            if (c && sb_put(&s->line, &s->line_cap, &len, "\t", 1)) bad = 1;
            if (!bad && copy_value(s, &s->line, &s->line_cap, &len, map[c] >= 0 ? inf__batch_at(b, row, map[c]) : NULL))
                bad = 1;
        }
        if (!bad && sb_put(&s->line, &s->line_cap, &len, "\n", 1)) bad = 1;
        if (!bad && (len >= 65536 || row == b->n_rows - 1)) {
            if (PQputCopyData(s->conn, s->line, (int)len) != 1) bad = 2;
            len = 0;
        }
    }
    if (bad == 1) {
        PQputCopyEnd(s->conn, "out of memory");
        PQclear(PQgetResult(s->conn));
        return inf_error_set(err, INF_ENOMEM, "%s: out of memory", s->red);
    }
    PQputCopyEnd(s->conn, bad ? "send failed" : NULL);
    st = INF_OK;
    while ((r = PQgetResult(s->conn)) != NULL) {
        if (PQresultStatus(r) != PGRES_COMMAND_OK && !st)
            st = inf_error_set(err, INF_EIO, "%s: table %s: copy: %s", s->red, s->table, pg_msg(s->conn));
        PQclear(r);
    }
    if (st) return st;
    if (s->upsert) {
        if ((st = exec_ok(s->conn, s->upsert, s->red, "upsert", err))) return st;
        if ((st = exec_ok(s->conn, "TRUNCATE infera_staging", s->red, "staging table", err))) return st;
    }
    return INF_OK;
}

static inf_status pg_sink_commit(void *state, inf_error *err) {
    pg_sink *s = state;
    if (!s->in_txn) return INF_OK;
    s->in_txn = 0;
    return exec_ok(s->conn, "COMMIT", s->red, "commit", err);
}

static inf_status pg_sink_close(void *state, inf_error *err) {
    pg_sink *s = state;
    inf_status st = pg_sink_commit(s, err);
    PQfinish(s->conn);
    for (int c = 0; c < s->n_cols; c++) free(s->cols[c]);
    free(s->cols);
    free(s->map);
    free(s->upsert);
    free(s->copy);
    free(s->line);
    free(s);
    return st;
}

const inf_sink_type inf__io_postgresql_sink = {"postgresql", pg_sink_open, pg_sink_write, pg_sink_commit,
                                               pg_sink_close};
