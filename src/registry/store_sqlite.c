/*
 * store_sqlite.c -- the embedded registry store: one SQLite database file,
 * HOME/registry.db, in WAL mode with a generous busy time-out so several
 * processes can share it.  A write transaction is BEGIN IMMEDIATE, which
 * takes the database's write lock at once: two writers never interleave.
 */
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "registry/registry_int.h"

typedef struct sqlite_store {
    inf__store base;
    sqlite3 *db;
    char path[4096];
} sqlite_store;

static inf_status db_fail(sqlite_store *s, inf_error *err, const char *what) {
    return inf_error_set(err, INF_EIO, "registry %s: %s: %s", s->path, what, sqlite3_errmsg(s->db));
}

static inf_status sq_query(inf__store *base, const char *sql, int n_params, const char *const *params,
                           inf__rows **out, inf_error *err) {
    sqlite_store *s = (sqlite_store *)base;
    sqlite3_stmt *st = NULL;
    inf__rows *rows = NULL;
    size_t cap = 0;
    if (sqlite3_prepare_v2(s->db, sql, -1, &st, NULL) != SQLITE_OK) return db_fail(s, err, "preparing a statement");
    for (int i = 0; i < n_params; i++) {
        int rc = params[i] ? sqlite3_bind_text(st, i + 1, params[i], -1, SQLITE_TRANSIENT) : sqlite3_bind_null(st, i + 1);
        if (rc != SQLITE_OK) goto fail;
    }
    if (out) {
        rows = calloc(1, sizeof *rows);
        if (!rows) goto oom;
        rows->n_cols = sqlite3_column_count(st);
    }
    for (;;) {
        int rc = sqlite3_step(st);
        if (rc == SQLITE_DONE) break;
        if (rc != SQLITE_ROW) goto fail;
        if (!rows) continue;
        size_t need = ((size_t)rows->n_rows + 1) * rows->n_cols;
        if (need > cap) {
            size_t ncap = cap ? cap * 2 : 16;
            while (ncap < need) ncap *= 2;
            char **c = realloc(rows->cells, ncap * sizeof *c);
            if (!c) goto oom;
            rows->cells = c;
            cap = ncap;
        }
        for (int j = 0; j < rows->n_cols; j++) {
            const unsigned char *t = sqlite3_column_text(st, j);
            char **cell = &rows->cells[(size_t)rows->n_rows * rows->n_cols + j];
            *cell = NULL;
            if (t && !(*cell = inf__reg_strdup((const char *)t))) {
                rows->n_rows++;
                goto oom;
            }
        }
        rows->n_rows++;
    }
    sqlite3_finalize(st);
    if (out) *out = rows;
    return INF_OK;
oom:
    sqlite3_finalize(st);
    inf__rows_free(rows);
    return inf_error_set(err, INF_ENOMEM, "registry %s: out of memory reading results", s->path);
fail : {
    inf_status rc = db_fail(s, err, "running a statement");
    sqlite3_finalize(st);
    inf__rows_free(rows);
    return rc;
}
}

static inf_status sq_script(inf__store *base, const char *sql, inf_error *err) {
    sqlite_store *s = (sqlite_store *)base;
    if (sqlite3_exec(s->db, sql, NULL, NULL, NULL) != SQLITE_OK) return db_fail(s, err, "creating the schema");
    return INF_OK;
}

static inf_status sq_begin(inf__store *base, inf_error *err) {
    sqlite_store *s = (sqlite_store *)base;
    if (sqlite3_exec(s->db, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK)
        return db_fail(s, err, "starting a write transaction");
    return INF_OK;
}

static inf_status sq_commit(inf__store *base, inf_error *err) {
    sqlite_store *s = (sqlite_store *)base;
    if (sqlite3_exec(s->db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK) {
        inf_status rc = db_fail(s, err, "committing");
        sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
        return rc;
    }
    return INF_OK;
}

static void sq_rollback(inf__store *base) {
    sqlite_store *s = (sqlite_store *)base;
    if (!sqlite3_get_autocommit(s->db)) sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
}

static void sq_close(inf__store *base) {
    sqlite_store *s = (sqlite_store *)base;
    sqlite3_close(s->db);
    free(s);
}

/* The audit table refuses UPDATE and DELETE: an edit needs someone to drop
 * the triggers first, and the hash chain still tells. */
static const inf__store_ops sqlite_ops = {
    .kind = "sqlite",
    .schema_extra = "CREATE TRIGGER IF NOT EXISTS reg_audit_no_update BEFORE UPDATE ON reg_audit "
                    "BEGIN SELECT RAISE(ABORT, 'the audit log is append-only'); END;"
                    "CREATE TRIGGER IF NOT EXISTS reg_audit_no_delete BEFORE DELETE ON reg_audit "
                    "BEGIN SELECT RAISE(ABORT, 'the audit log is append-only'); END;",
    .schema_probe = "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'reg_meta'",
    .query = sq_query,
    .script = sq_script,
    .begin_write = sq_begin,
    .commit = sq_commit,
    .rollback = sq_rollback,
    .close = sq_close,
};

inf_status inf__store_sqlite_open(const char *path, int create, inf__store **out, inf_error *err) {
    *out = NULL;
    sqlite_store *s = calloc(1, sizeof *s);
    if (!s) return inf_error_set(err, INF_ENOMEM, "registry %s: out of memory", path);
    s->base.ops = &sqlite_ops;
    snprintf(s->path, sizeof s->path, "%s", path);
    int flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_FULLMUTEX | (create ? SQLITE_OPEN_CREATE : 0);
    if (sqlite3_open_v2(path, &s->db, flags, NULL) != SQLITE_OK) {
        inf_status rc = create ? db_fail(s, err, "cannot open the database")
                               : inf_error_set(err, INF_ENOENT, "no registry at %s (nothing registered yet?)", path);
        sq_close(&s->base);
        return rc;
    }
    sqlite3_busy_timeout(s->db, 60000);
    sqlite3_exec(s->db, "PRAGMA journal_mode=WAL", NULL, NULL, NULL);
    sqlite3_exec(s->db, "PRAGMA synchronous=FULL", NULL, NULL, NULL);
    *out = &s->base;
    return INF_OK;
}
