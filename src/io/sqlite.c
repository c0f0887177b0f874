/*
 * sqlite.c -- `sqlite:PATH?table=T` and `sqlite:PATH?query=SQL` sources, and
 * `sqlite:PATH?table=T` sinks.
 *
 * Source: one prepared statement stepped a batch at a time (streaming, the
 * result set is never held); a rowid table is read in pages of rowids (see
 * prepare_pages), so no read lock is held between batches.  Column values
 * keep SQLite's storage class: INTEGER -> int, REAL -> float, TEXT/BLOB ->
 * string, NULL -> null.
 * Sink: creates the table when missing, with types from the first batch (the
 * first non-null value of each field: int/bool -> INTEGER, float -> REAL,
 * string/timestamp -> TEXT; all-null -> no declared type), and
 * `PRIMARY KEY` on opts->key_column (then rows are upserted: INSERT OR
 * REPLACE, so a resumed job does not duplicate).  An existing table keeps its
 * columns; fields it lacks are added with ALTER TABLE ADD COLUMN, and when
 * the key column is neither its primary key nor unique it gets a UNIQUE index
 * (else REPLACE would not replace).  Writes are grouped in a transaction that
 * commit() ends.  busy_timeout is 5 s.  A batch goes in as multi-row INSERTs
 * (INSERT_ROWS rows a statement).  ?journal=wal and ?synchronous=normal set
 * the database's journal mode and the connection's sync level (sink_pragmas).
 */
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "io/io_int.h"

typedef struct sqlite_source {
    sqlite3 *db;
    sqlite3_stmt *stmt;
    int max_rows;
    long row;
    int *fields;
    int n_cols;
    int paged;                /* stmt is a rowid page query (column 0 = the rowid) */
    sqlite3_int64 next_rowid; /* paged: the first rowid of the next page */
    char path[512];
} sqlite_source;

static void sqlite_source_close(void *state) {
    sqlite_source *s = state;
    if (!s) return;
    sqlite3_finalize(s->stmt);
    sqlite3_close(s->db);
    free(s->fields);
    free(s);
}

/* A table is read a page at a time, in rowid order (the order of `SELECT *`
 * over a rowid table), each page its own short read: between pages the
 * source holds no lock, so a sink writing into the same database file can
 * commit (a statement stepped through the whole table would keep its
 * writers waiting until they time out, "database is locked").  Sets
 * s->stmt to the page query, or leaves it NULL for a table without a usable
 * rowid (WITHOUT ROWID, a view, columns shadowing every rowid alias), which
 * is then read by one statement. */
static inf_status prepare_pages(sqlite_source *s, const char *table, const char *ident, inf_error *err) {
    static const char *const aliases[] = {"_rowid_", "rowid", "oid"};
    sqlite3_stmt *cols = NULL;
    if (sqlite3_prepare_v2(s->db, "SELECT count(*) FROM pragma_table_info(?1) WHERE name = ?2 COLLATE NOCASE", -1,
                           &cols, NULL) != SQLITE_OK)
        return INF_OK; /* no table-valued pragmas: one statement */
    const char *alias = NULL;
    for (int i = 0; i < 3 && !alias; i++) {
        sqlite3_reset(cols);
        sqlite3_bind_text(cols, 1, table, -1, SQLITE_STATIC);
        sqlite3_bind_text(cols, 2, aliases[i], -1, SQLITE_STATIC);
        if (sqlite3_step(cols) == SQLITE_ROW && sqlite3_column_int(cols, 0) == 0) alias = aliases[i];
    }
    sqlite3_finalize(cols);
    if (!alias) return INF_OK;
    char *sql = sqlite3_mprintf("SELECT %s, * FROM %s WHERE %s >= ?1 ORDER BY %s", alias, ident, alias, alias);
    if (!sql) return inf_error_set(err, INF_ENOMEM, "sqlite:%s: out of memory", s->path);
    if (sqlite3_prepare_v2(s->db, sql, -1, &s->stmt, NULL) == SQLITE_OK) {
        s->paged = 1;
        s->next_rowid = INT64_MIN;
    } else {
        sqlite3_finalize(s->stmt);
        s->stmt = NULL;
    }
    sqlite3_free(sql);
    return INF_OK;
}

static inf_status sqlite_source_open(const char *uri, const char *rest, const inf_source_options *opts, void **state,
                                     inf_error *err) {
    sqlite_source *s = calloc(1, sizeof *s);
    char table[256], *sql = NULL, ident[600];
    size_t qsize = strlen(rest) + 1;
    char *query = malloc(qsize);
    if (!s || !query) {
        free(s);
        free(query);
        return inf_error_set(err, INF_ENOMEM, "%s: out of memory", uri);
    }
    s->max_rows = opts->max_rows > 0 ? opts->max_rows : 1024;
    inf__io_uri_path(rest, s->path, sizeof s->path);
    inf_status st = INF_OK;
    if (sqlite3_open_v2(s->path, &s->db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK) {
        st = inf_error_set(err, INF_EIO, "sqlite:%s: cannot open: %s", s->path, s->db ? sqlite3_errmsg(s->db) : "no memory");
        goto fail;
    }
    sqlite3_busy_timeout(s->db, 5000);
    if (inf__io_uri_param(rest, "query", query, qsize)) {
        sql = query;
    } else if (inf__io_uri_param(rest, "table", table, sizeof table)) {
        inf__io_quote_ident(ident, sizeof ident, table);
        snprintf(query, qsize, "%s", "");
        if ((st = prepare_pages(s, table, ident, err))) goto fail;
        if (!s->stmt && !(sql = sqlite3_mprintf("SELECT * FROM %s", ident))) {
            st = inf_error_set(err, INF_ENOMEM, "%s: out of memory", uri);
            goto fail;
        }
    } else {
        st = inf_error_set(err, INF_EINVAL, "sqlite:%s: the URI needs ?table=T or ?query=SQL", s->path);
        goto fail;
    }
    int rc = s->stmt ? SQLITE_OK : sqlite3_prepare_v2(s->db, sql, -1, &s->stmt, NULL);
    if (sql != query) sqlite3_free(sql);
    if (rc != SQLITE_OK) {
        st = inf_error_set(err, rc == SQLITE_CANTOPEN || rc == SQLITE_NOTADB ? INF_EIO : INF_EINVAL, "sqlite:%s: %s",
                          s->path, sqlite3_errmsg(s->db));
        goto fail;
    }
    s->n_cols = sqlite3_column_count(s->stmt) - s->paged;
    s->fields = calloc((size_t)(s->n_cols ? s->n_cols : 1), sizeof *s->fields);
    if (!s->fields) {
        st = inf_error_set(err, INF_ENOMEM, "%s: out of memory", uri);
        goto fail;
    }
    free(query);
    *state = s;
    return INF_OK;
fail:
    free(query);
    sqlite_source_close(s);
    return st;
}

/* The current row of stmt (from column c0 on) as a new row of b. */
static inf_status add_row(sqlite_source *s, inf_record_batch *b, int c0, inf_error *err) {
    int row;
    if (inf_record_batch_add_row(b, &row)) return inf_error_set(err, INF_ENOMEM, "sqlite:%s: out of memory", s->path);
    for (int c = 0; c < s->n_cols; c++) {
        inf_status st = INF_OK;
        int k = c + c0;
        int type = sqlite3_column_type(s->stmt, k);
        if (type != SQLITE_NULL && inf__batch_is_id(b, s->fields[c])) {
            /* ids are text: an integer's exact decimal text, other types as SQLite prints them */
            char num[32];
            const char *t = num;
            size_t len;
            if (type == SQLITE_INTEGER) {
                len = (size_t)snprintf(num, sizeof num, "%lld", (long long)sqlite3_column_int64(s->stmt, k));
            } else {
                t = (const char *)sqlite3_column_text(s->stmt, k);
                len = (size_t)sqlite3_column_bytes(s->stmt, k);
            }
            st = inf_record_batch_set_string(b, row, s->fields[c], t ? t : "", t ? len : 0);
            if (st) return inf_error_set(err, st, "sqlite:%s: out of memory", s->path);
            continue;
        }
        switch (type) {
        case SQLITE_INTEGER: st = inf_record_batch_set_int(b, row, s->fields[c], sqlite3_column_int64(s->stmt, k)); break;
        case SQLITE_FLOAT: st = inf_record_batch_set_float(b, row, s->fields[c], sqlite3_column_double(s->stmt, k)); break;
        case SQLITE_TEXT:
        case SQLITE_BLOB: {
            const char *t = (const char *)sqlite3_column_text(s->stmt, k);
            st = inf_record_batch_set_string(b, row, s->fields[c], t ? t : "", (size_t)sqlite3_column_bytes(s->stmt, k));
            break;
        }
        default: break;
        }
        if (st) return inf_error_set(err, st, "sqlite:%s: out of memory", s->path);
    }
    return INF_OK;
}

static inf_status sqlite_source_next(void *state, inf_record_batch *b, int *eof, inf_error *err) {
    sqlite_source *s = state;
    for (int c = 0; c < s->n_cols; c++)
        if (inf_record_batch_add_field(b, sqlite3_column_name(s->stmt, c + s->paged), &s->fields[c]))
            return inf_error_set(err, INF_ENOMEM, "sqlite:%s: out of memory", s->path);
    if (s->paged) {
        sqlite3_reset(s->stmt);
        sqlite3_bind_int64(s->stmt, 1, s->next_rowid);
    }
    inf_status st = INF_OK;
    while (!st && b->n_rows < s->max_rows) {
        int rc = sqlite3_step(s->stmt);
        if (rc == SQLITE_DONE) {
            *eof = 1;
            break;
        }
        if (rc != SQLITE_ROW) {
            st = inf_error_set(err, INF_EIO, "sqlite:%s: row %ld: %s", s->path, s->row + 1, sqlite3_errmsg(s->db));
            break;
        }
        s->row++;
        if (s->paged) {
            sqlite3_int64 id = sqlite3_column_int64(s->stmt, 0);
            if (id == INT64_MAX) *eof = 1; /* the last possible rowid: nothing can follow */
            s->next_rowid = id + (id < INT64_MAX);
        }
        st = add_row(s, b, s->paged, err);
        if (*eof) break;
    }
    if (s->paged) sqlite3_reset(s->stmt); /* end the page's read: writers may commit */
    return st;
}

const inf_source_type inf__io_sqlite_source = {"sqlite", sqlite_source_open, sqlite_source_next, NULL,
                                               sqlite_source_close};

/* ---- sink ----------------------------------------------------------------- */

/* Rows per INSERT statement: a batch is written in statements of INSERT_ROWS[0]
 * rows (VALUES (...), (...), ...: one sqlite3_step each), its rest in smaller
 * ones; one row per statement costs ~2.3 k more instructions a row (20 columns). */
#define N_INSERTS 4
static const int INSERT_ROWS[N_INSERTS] = {64, 16, 4, 1};
#define TS_TEXT 40 /* a timestamp's text (inf_format_timestamp: 27 bytes and its 0) */

typedef struct sqlite_sink {
    sqlite3 *db;
    sqlite3_stmt *insert[N_INSERTS];      /* INSERT_ROWS[i] rows each; NULL: more variables than SQLite allows */
    const inf_value **prev[N_INSERTS];    /* rows x n_cols: the value each parameter has bound, within one write() */
    char (*ts_param[N_INSERTS])[TS_TEXT]; /* rows x n_cols: a timestamp parameter's text (bound SQLITE_STATIC) */
    int in_txn;
    int n_cols;
    char **cols;
    int *map;           /* n_cols: each column's field in the batch being written, -1 = absent */
    char table[256];
    char key[256];
    char path[512];
    int keep_table_shape; /* opts->keep_table_shape */
    int64_t ts_last;      /* the last timestamp formatted, and its text (ts_text[0] = 0: none): */
    char ts_text[TS_TEXT]; /* rows written together often share one (a prediction log's batch) */
} sqlite_sink;

/* Whether a and b (NULL: an absent column) bind the same SQL value. */
static inline int same_value(const inf_value *a, const inf_value *b) {
    if (!a || !b) return a == b;
    if (a->type != b->type) return 0;
    switch (a->type) {
    case INF_FIELD_BOOL: return a->u.b == b->u.b;
    case INF_FIELD_INT: return a->u.i == b->u.i;
    case INF_FIELD_FLOAT: return !memcmp(&a->u.f, &b->u.f, sizeof a->u.f);
    case INF_FIELD_STRING:
        return a->u.s.len == b->u.s.len && (a->u.s.ptr == b->u.s.ptr || !memcmp(a->u.s.ptr, b->u.s.ptr, a->u.s.len));
    case INF_FIELD_TIMESTAMP: return a->u.ts == b->u.ts;
    default: return 1;
    }
}

static inf_status exec_sql(sqlite_sink *s, const char *sql, inf_error *err) {
    char *msg = NULL;
    if (sqlite3_exec(s->db, sql, NULL, NULL, &msg) != SQLITE_OK) {
        inf_status st = inf_error_set(err, INF_EIO, "sqlite:%s: table %s: %s", s->path, s->table, msg ? msg : "error");
        sqlite3_free(msg);
        return st;
    }
    return INF_OK;
}

/* The sink's ?journal=MODE (PRAGMA journal_mode: wal, delete, truncate, persist, memory, off; kept
 * in the database file) and ?synchronous=LEVEL (off, normal, full, extra; this connection's): a
 * prediction log trades the last commits on a power loss for no fsync per commit with
 * journal=wal&synchronous=normal (docs/monitoring.md).  Values outside those lists are refused. */
static inf_status sink_pragmas(sqlite_sink *s, const char *rest, inf_error *err) {
    static const char *const journals[] = {"wal", "delete", "truncate", "persist", "memory", "off", NULL};
    static const char *const syncs[] = {"off", "normal", "full", "extra", NULL};
    static const struct {
        const char *param, *pragma;
        const char *const *ok;
    } opt[] = {{"journal", "journal_mode", journals}, {"synchronous", "synchronous", syncs}};
    for (size_t i = 0; i < sizeof opt / sizeof opt[0]; i++) {
        char val[32], sql[96];
        if (!inf__io_uri_param(rest, opt[i].param, val, sizeof val)) continue;
        int known = 0;
        for (int j = 0; opt[i].ok[j] && !known; j++)
            known = !strcmp(val, opt[i].ok[j]);
        if (!known)
            return inf_error_set(err, INF_EINVAL, "sqlite:%s: ?%s=%s: not one of SQLite's %s values", s->path,
                                 opt[i].param, val, opt[i].pragma);
        snprintf(sql, sizeof sql, "PRAGMA %s=%s", opt[i].pragma, val);
        char *msg = NULL;
        if (sqlite3_exec(s->db, sql, NULL, NULL, &msg) != SQLITE_OK) {
            inf_status st = inf_error_set(err, INF_EIO, "sqlite:%s: %s: %s", s->path, sql, msg ? msg : "error");
            sqlite3_free(msg);
            return st;
        }
    }
    return INF_OK;
}

static inf_status sqlite_sink_open(const char *uri, const char *rest, const inf_sink_options *opts, void **state,
                                   inf_error *err) {
    sqlite_sink *s = calloc(1, sizeof *s);
    if (!s) return inf_error_set(err, INF_ENOMEM, "%s: out of memory", uri);
    inf__io_uri_path(rest, s->path, sizeof s->path);
    if (!inf__io_uri_param(rest, "table", s->table, sizeof s->table)) {
        inf_status st = inf_error_set(err, INF_EINVAL, "sqlite:%s: a sink needs ?table=T", s->path);
        free(s);
        return st;
    }
    if (opts->key_column) snprintf(s->key, sizeof s->key, "%s", opts->key_column);
    s->keep_table_shape = opts->keep_table_shape;
    /* a sink is used by one thread at a time (io.h): no mutex around each bind and step
     * (SQLite's multi-thread mode; ~100 instructions per bound value) */
    if (sqlite3_open_v2(s->path, &s->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, NULL) !=
        SQLITE_OK) {
        inf_status st = inf_error_set(err, INF_EIO, "sqlite:%s: cannot open: %s", s->path,
                                     s->db ? sqlite3_errmsg(s->db) : "out of memory");
        sqlite3_close(s->db);
        free(s);
        return st;
    }
    sqlite3_busy_timeout(s->db, 5000);
    inf_status st = sink_pragmas(s, rest, err);
    if (st) {
        sqlite3_close(s->db);
        free(s);
        return st;
    }
    *state = s;
    return INF_OK;
}

static const char *decl_type(const inf_record_batch *b, int f) {
    for (int r = 0; r < b->n_rows; r++) {
        switch (inf__batch_at(b, r, f)->type) {
        case INF_FIELD_BOOL:
        case INF_FIELD_INT: return " INTEGER";
        case INF_FIELD_FLOAT: return " REAL";
        case INF_FIELD_STRING:
        case INF_FIELD_TIMESTAMP: return " TEXT";
        default: break;
        }
    }
    return "";
}

static int table_has_column(sqlite_sink *s, const char *name) {
    return sqlite3_table_column_metadata(s->db, NULL, s->table, name, NULL, NULL, NULL, NULL, NULL) == SQLITE_OK;
}

/* 1 when the existing table keeps at most one row per key value: the key is
 * its only PRIMARY KEY column, or a UNIQUE index (constraint) covers the key
 * alone; 0 when not; -1 when it cannot be told. */
static int key_is_unique(sqlite_sink *s) {
    static const char sql[] =
        "SELECT (SELECT count(*) FROM pragma_table_info(?1) WHERE pk > 0) = 1"
        "   AND (SELECT pk FROM pragma_table_info(?1) WHERE name = ?2) = 1"
        " OR EXISTS (SELECT 1 FROM pragma_index_list(?1) AS il WHERE il.\"unique\""
        "   AND (SELECT count(*) FROM pragma_index_info(il.name)) = 1"
        "   AND (SELECT name FROM pragma_index_info(il.name)) = ?2 AND NOT il.partial)";
    sqlite3_stmt *st = NULL;
    int unique = -1;
    if (sqlite3_prepare_v2(s->db, sql, -1, &st, NULL) == SQLITE_OK &&
        sqlite3_bind_text(st, 1, s->table, -1, SQLITE_STATIC) == SQLITE_OK &&
        sqlite3_bind_text(st, 2, s->key, -1, SQLITE_STATIC) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW)
        unique = sqlite3_column_int(st, 0);
    sqlite3_finalize(st);
    return unique;
}

/* An existing table without a unique key column would get a second row per
 * id from INSERT OR REPLACE on a re-run or a resume: give it a UNIQUE index
 * on the key (refused, with the reason, when the table already holds
 * duplicate ids). */
static inf_status ensure_unique_key(sqlite_sink *s, inf_error *err) {
    int unique = key_is_unique(s);
    if (unique == 1) return INF_OK;
    if (unique < 0)
        return inf_error_set(err, INF_EIO, "sqlite:%s: table %s: cannot read its indexes: %s", s->path, s->table,
                            sqlite3_errmsg(s->db));
    char *sql = sqlite3_mprintf("CREATE UNIQUE INDEX IF NOT EXISTS \"%w_%w_key\" ON \"%w\" (\"%w\")", s->table,
                                s->key, s->table, s->key);
    if (!sql) return inf_error_set(err, INF_ENOMEM, "sqlite:%s: out of memory", s->path);
    char *msg = NULL;
    int rc = sqlite3_exec(s->db, sql, NULL, NULL, &msg);
    sqlite3_free(sql);
    inf_status st = INF_OK;
    if (rc != SQLITE_OK)
        st = inf_error_set(err, INF_EIO,
                          "sqlite:%s: table %s: rows are keyed by '%s' but it is neither the table's primary key nor "
                          "unique, and a unique index on it cannot be made: %s",
                          s->path, s->table, s->key, msg ? msg : "out of memory");
    sqlite3_free(msg);
    return st;
}

/* Prepares the INSERT of INSERT_ROWS[i] rows for each i ("PREFIX (?, ...), (?, ...)"),
 * those of more variables than the database allows left NULL (the one-row one always
 * made), and their bound-value scratch. */
static inf_status prepare_inserts(sqlite_sink *s, const char *prefix, inf_error *err) {
    int max_vars = sqlite3_limit(s->db, SQLITE_LIMIT_VARIABLE_NUMBER, -1);
    size_t plen = strlen(prefix), row = 3 * (size_t)s->n_cols + 4;
    char *sql = malloc(plen + (size_t)INSERT_ROWS[0] * row + 1);
    if (!sql) return inf_error_set(err, INF_ENOMEM, "sqlite:%s: out of memory", s->path);
    inf_status st = INF_OK;
    for (int i = 0; i < N_INSERTS && !st; i++) {
        int rows = INSERT_ROWS[i];
        if (rows > 1 && (int64_t)rows * s->n_cols > max_vars) continue;
        char *w = sql + plen;
        memcpy(sql, prefix, plen);
        for (int r = 0; r < rows; r++) {
            *w++ = r ? ',' : ' ';
            *w++ = '(';
            for (int c = 0; c < s->n_cols; c++) {
                if (c) *w++ = ',';
                *w++ = '?';
            }
            *w++ = ')';
        }
        *w = 0;
        size_t n_params = (size_t)rows * (size_t)(s->n_cols ? s->n_cols : 1);
        if (!(s->prev[i] = calloc(n_params, sizeof *s->prev[i])) ||
            !(s->ts_param[i] = malloc(n_params * sizeof *s->ts_param[i])))
            st = inf_error_set(err, INF_ENOMEM, "sqlite:%s: out of memory", s->path);
        else if (sqlite3_prepare_v2(s->db, sql, -1, &s->insert[i], NULL) != SQLITE_OK)
            st = inf_error_set(err, INF_EIO, "sqlite:%s: table %s: %s", s->path, s->table, sqlite3_errmsg(s->db));
    }
    free(sql);
    if (st) /* none kept: a later write() sets up again */
        for (int i = 0; i < N_INSERTS; i++) {
            sqlite3_finalize(s->insert[i]);
            free(s->prev[i]);
            free(s->ts_param[i]);
            s->insert[i] = NULL;
            s->prev[i] = NULL;
            s->ts_param[i] = NULL;
        }
    return st;
}

static inf_status sqlite_sink_setup(sqlite_sink *s, const inf_record_batch *b, inf_error *err) {
    char ident[600];
    inf_status st = INF_OK;
    size_t cap = 256 + (size_t)b->n_fields * 600;
    char *sql = malloc(cap);
    s->cols = calloc((size_t)(b->n_fields ? b->n_fields : 1), sizeof *s->cols);
    s->map = calloc((size_t)(b->n_fields ? b->n_fields : 1), sizeof *s->map);
    if (!sql || !s->cols || !s->map) {
        free(sql);
        return inf_error_set(err, INF_ENOMEM, "sqlite:%s: out of memory", s->path);
    }
    int exists = sqlite3_table_column_metadata(s->db, NULL, s->table, NULL, NULL, NULL, NULL, NULL, NULL) == SQLITE_OK;
    size_t n = 0;
    inf__io_quote_ident(ident, sizeof ident, s->table);
    if (!exists) {
        n += (size_t)snprintf(sql + n, cap - n, "CREATE TABLE IF NOT EXISTS %s (", ident);
        for (int f = 0; f < b->n_fields; f++) {
            inf__io_quote_ident(ident, sizeof ident, b->names[f]);
            n += (size_t)snprintf(sql + n, cap - n, "%s%s%s%s", f ? ", " : "", ident, decl_type(b, f),
                                  s->key[0] && !strcmp(s->key, b->names[f]) ? " PRIMARY KEY" : "");
        }
        snprintf(sql + n, cap - n, ")");
        if ((st = exec_sql(s, sql, err))) goto done;
    } else {
        if (s->keep_table_shape) { /* an unrelated table is refused, not altered */
            const char **missing = (const char **)s->cols; /* free scratch: filled with names below */
            int n_missing = 0;
            for (int f = 0; f < b->n_fields; f++)
                if (!table_has_column(s, b->names[f])) missing[n_missing++] = b->names[f];
            if (n_missing) {
                char who[600];
                snprintf(who, sizeof who, "sqlite:%s", s->path);
                st = inf__io_table_shape_refused(err, who, s->table, missing, n_missing);
                memset(s->cols, 0, (size_t)b->n_fields * sizeof *s->cols);
                goto done;
            }
            memset(s->cols, 0, (size_t)b->n_fields * sizeof *s->cols);
        }
        for (int f = 0; f < b->n_fields; f++) {
            if (table_has_column(s, b->names[f])) continue;
            char tident[600];
            inf__io_quote_ident(tident, sizeof tident, s->table);
            inf__io_quote_ident(ident, sizeof ident, b->names[f]);
            snprintf(sql, cap, "ALTER TABLE %s ADD COLUMN %s%s", tident, ident, decl_type(b, f));
            if ((st = exec_sql(s, sql, err))) goto done;
        }
        if (s->key[0] && (st = ensure_unique_key(s, err))) goto done;
    }
    inf__io_quote_ident(ident, sizeof ident, s->table);
    n = (size_t)snprintf(sql, cap, "INSERT %sINTO %s (", s->key[0] ? "OR REPLACE " : "", ident);
    for (int f = 0; f < b->n_fields; f++) {
        inf__io_quote_ident(ident, sizeof ident, b->names[f]);
        n += (size_t)snprintf(sql + n, cap - n, "%s%s", f ? ", " : "", ident);
        if (!(s->cols[f] = strdup(b->names[f]))) {
            st = inf_error_set(err, INF_ENOMEM, "sqlite:%s: out of memory", s->path);
            goto done;
        }
        s->n_cols = f + 1;
    }
    snprintf(sql + n, cap - n, ") VALUES ");
    st = prepare_inserts(s, sql, err);
done:
    free(sql);
    return st;
}

/* Binds row r of b as the k-th row of statement i (parameters k * n_cols + 1 ...);
 * a value equal to the one that parameter holds from this write()'s previous
 * statement stays bound (bindings survive a reset: a log batch's model, version,
 * pipeline hash and time -- its text is in b, alive for this call). */
static void bind_row(sqlite_sink *s, int i, int k, const inf_record_batch *b, int r, int again) {
    sqlite3_stmt *ins = s->insert[i];
    const inf_value **prev = s->prev[i] + (size_t)k * (size_t)s->n_cols;
    const int *map = s->map;
    const inf_value *row = inf__batch_at(b, r, 0);
    for (int c = 0; c < s->n_cols; c++) {
        const inf_value *v = map[c] >= 0 ? row + map[c] : NULL;
        int p = k * s->n_cols + c + 1;
        if (again && same_value(v, prev[c])) continue;
        prev[c] = v;
        if (!v) {
            sqlite3_bind_null(ins, p);
            continue;
        }
        switch (v->type) {
        case INF_FIELD_BOOL:
            sqlite3_bind_int(ins, p, v->u.b);
            break;
        case INF_FIELD_INT:
            sqlite3_bind_int64(ins, p, v->u.i);
            break;
        case INF_FIELD_FLOAT:
            if (v->u.f != v->u.f)
                sqlite3_bind_null(ins, p); /* NaN -> NULL */
            else
                sqlite3_bind_double(ins, p, v->u.f);
            break;
        case INF_FIELD_STRING:
            sqlite3_bind_text(ins, p, v->u.s.ptr, (int)v->u.s.len, SQLITE_STATIC);
            break;
        case INF_FIELD_TIMESTAMP: { /* its own copy of the text: other rows of the statement have theirs */
            if (!s->ts_text[0] || v->u.ts != s->ts_last) {
                inf_format_timestamp(v->u.ts, s->ts_text, sizeof s->ts_text);
                s->ts_last = v->u.ts;
            }
            char *t = s->ts_param[i][p - 1];
            memcpy(t, s->ts_text, TS_TEXT);
            sqlite3_bind_text(ins, p, t, -1, SQLITE_STATIC);
            break;
        }
        default:
            sqlite3_bind_null(ins, p);
        }
    }
}

static inf_status sqlite_sink_write(void *state, const inf_record_batch *b, inf_error *err) {
    sqlite_sink *s = state;
    inf_status st;
    if (!s->insert[N_INSERTS - 1] && (st = sqlite_sink_setup(s, b, err))) return st;
    if (!s->in_txn) {
        if ((st = exec_sql(s, "BEGIN", err))) return st;
        s->in_txn = 1;
    }
    for (int c = 0; c < s->n_cols; c++)
        s->map[c] = inf_record_batch_find_field(b, s->cols[c]);
    int used[N_INSERTS] = {0};
    for (int r = 0, i = 0; r < b->n_rows;) {
        while (!s->insert[i] || INSERT_ROWS[i] > b->n_rows - r)
            i++; /* the last (one row) always fits */
        sqlite3_stmt *ins = s->insert[i];
        sqlite3_reset(ins);
        for (int k = 0; k < INSERT_ROWS[i]; k++)
            bind_row(s, i, k, b, r + k, used[i]);
        used[i] = 1;
        if (sqlite3_step(ins) != SQLITE_DONE) {
            st = INSERT_ROWS[i] == 1
                     ? inf_error_set(err, INF_EIO, "sqlite:%s: table %s: row %d of the batch: %s", s->path, s->table,
                                     r + 1, sqlite3_errmsg(s->db))
                     : inf_error_set(err, INF_EIO, "sqlite:%s: table %s: rows %d-%d of the batch: %s", s->path,
                                     s->table, r + 1, r + INSERT_ROWS[i], sqlite3_errmsg(s->db));
            sqlite3_reset(ins);
            return st;
        }
        r += INSERT_ROWS[i];
    }
    for (int i = 0; i < N_INSERTS; i++)
        if (used[i]) sqlite3_reset(s->insert[i]);
    return INF_OK;
}

static inf_status sqlite_sink_commit(void *state, inf_error *err) {
    sqlite_sink *s = state;
    if (!s->in_txn) return INF_OK;
    s->in_txn = 0;
    return exec_sql(s, "COMMIT", err);
}

static inf_status sqlite_sink_close(void *state, inf_error *err) {
    sqlite_sink *s = state;
    inf_status st = sqlite_sink_commit(s, err);
    for (int i = 0; i < N_INSERTS; i++) {
        sqlite3_finalize(s->insert[i]);
        free(s->prev[i]);
        free(s->ts_param[i]);
    }
    sqlite3_close(s->db);
    for (int c = 0; c < s->n_cols; c++) free(s->cols[c]);
    free(s->cols);
    free(s->map);
    free(s);
    return st;
}

const inf_sink_type inf__io_sqlite_sink = {"sqlite", sqlite_sink_open, sqlite_sink_write, sqlite_sink_commit,
                                           sqlite_sink_close};
