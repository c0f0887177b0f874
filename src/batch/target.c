/*
 * target.c -- what the batch runner needs to know about a source or sink
 * URI beyond the io/ interface: the file behind csv:/jsonl: (byte offsets
 * for exactly-once resume), dropping a table for --mode replace, and a cheap
 * row count for the progress bar's ETA.
 *
 * Talks to SQLite and PostgreSQL directly for DROP TABLE and count(*): these
 * are job-level operations the record-level io/ interface does not have.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <libpq-fe.h>
#include <sqlite3.h>

#include "batch/batch_int.h"
#include "io/io_int.h"

static int hexval(int c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* Query parameter key of uri, URL-decoded; 1 when present. */
static int uri_param(const char *uri, const char *key, char *buf, size_t size) {
    const char *q = strchr(uri, '?');
    size_t klen = strlen(key);
    if (!q) return 0;
    for (const char *p = q + 1; *p;) {
        const char *end = p + strcspn(p, "&");
        if ((size_t)(end - p) > klen && !strncmp(p, key, klen) && p[klen] == '=') {
            size_t n = 0;
            for (const char *s = p + klen + 1; s < end && n + 1 < size; s++) {
                if (*s == '%' && s + 2 < end + 1 && hexval(s[1]) >= 0 && hexval(s[2]) >= 0) {
                    buf[n++] = (char)(hexval(s[1]) * 16 + hexval(s[2]));
                    s += 2;
                } else {
                    buf[n++] = *s == '+' ? ' ' : *s;
                }
            }
            buf[n] = 0;
            return 1;
        }
        p = *end ? end + 1 : end;
    }
    return 0;
}

void inf__target_parse(const char *uri, inf__target *t) {
    memset(t, 0, sizeof *t);
    t->kind = INF__TARGET_OTHER;
    if (!uri) return;
    char qbuf[8];
    if (!strncmp(uri, "csv:", 4) || !strncmp(uri, "jsonl:", 6)) {
        const char *p = strchr(uri, ':') + 1;
        snprintf(t->path, sizeof t->path, "%s", p);
        t->kind = strcmp(p, "-") ? INF__TARGET_FILE : INF__TARGET_STDIO;
    } else if (!strncmp(uri, "sqlite:", 7)) {
        t->kind = INF__TARGET_SQLITE;
        snprintf(t->path, sizeof t->path, "%.*s", (int)strcspn(uri + 7, "?"), uri + 7);
        uri_param(uri, "table", t->table, sizeof t->table);
        t->is_query = uri_param(uri, "query", qbuf, sizeof qbuf);
    } else if (!strncmp(uri, "postgresql://", 13) || !strncmp(uri, "postgres://", 11)) {
        t->kind = INF__TARGET_PG;
        uri_param(uri, "table", t->table, sizeof t->table);
        t->is_query = uri_param(uri, "query", qbuf, sizeof qbuf);
    }
}

int64_t inf__target_file_size(const inf__target *t) {
    struct stat st;
    if (t->kind != INF__TARGET_FILE || stat(t->path, &st)) return -1;
    return (int64_t)st.st_size;
}

void inf__target_file_id(const inf__target *t, char out[64]) {
    struct stat st;
    out[0] = 0;
    if (t->kind == INF__TARGET_FILE && !stat(t->path, &st))
        snprintf(out, 64, "%llu:%llu", (unsigned long long)st.st_dev, (unsigned long long)st.st_ino);
}

inf_status inf__target_check_file(const inf__target *t, int64_t size, const char *file_id, inf_error *err) {
    if (t->kind != INF__TARGET_FILE || size < 0) return INF_OK;
    struct stat st;
    if (stat(t->path, &st)) {
        if (errno == ENOENT && size == 0) return INF_OK;
        if (errno == ENOENT) {
            inf_error_set(err, INF_EINVAL,
                          "batch: cannot resume: %s, which the job wrote (%lld bytes committed), no longer exists",
                          t->path, (long long)size);
            return INF_EINVAL;
        }
        goto fail;
    }
    char now_id[64];
    inf__target_file_id(t, now_id);
    int recorded = file_id && *file_id;
    if (recorded ? strcmp(file_id, now_id) != 0 : st.st_size > 0) { /* never truncate a file the job did not write */
        inf_error_set(err, INF_EINVAL,
                      "batch: cannot resume: %s is not the file this job wrote (%s; it was replaced or the "
                      "checkpoint does not record it); it is left unchanged",
                      t->path, file_id && *file_id ? "another device:inode" : "no identity recorded");
        return INF_EINVAL;
    }
    if ((int64_t)st.st_size < size) {
        inf_error_set(err, INF_EINVAL,
                      "batch: cannot resume: %s has %lld bytes but the checkpoint committed %lld (was it changed?)",
                      t->path, (long long)st.st_size, (long long)size);
        return INF_EINVAL;
    }
    return INF_OK;
fail:
    inf_error_set(err, INF_EIO, "batch: cannot read %s: %s", t->path, strerror(errno));
    return INF_EIO;
}

inf_status inf__target_truncate(const inf__target *t, int64_t size, const char *file_id, inf_error *err) {
    if (t->kind != INF__TARGET_FILE || size < 0) return INF_OK;
    inf_status st = inf__target_check_file(t, size, file_id, err);
    if (st) return st;
    if (size == 0 && access(t->path, F_OK)) return INF_OK; /* nothing committed, nothing there */
    if (truncate(t->path, (off_t)size) == 0) return INF_OK;
    inf_error_set(err, INF_EIO, "batch: cannot truncate %s to %lld bytes: %s", t->path, (long long)size,
                  strerror(errno));
    return INF_EIO;
}

inf_status inf__target_drop(const char *uri, const inf__target *t, inf_error *err) {
    char red[1024];
    if (t->kind == INF__TARGET_SQLITE && t->table[0]) {
        sqlite3 *db = NULL;
        if (sqlite3_open_v2(t->path, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL) != SQLITE_OK) {
            inf_error_set(err, INF_EIO, "sqlite:%s: cannot open: %s", t->path,
                          db ? sqlite3_errmsg(db) : "out of memory");
            sqlite3_close(db);
            return INF_EIO;
        }
        sqlite3_busy_timeout(db, 5000);
        char *sql = sqlite3_mprintf("DROP TABLE IF EXISTS \"%w\"", t->table);
        char *msg = NULL;
        int rc = sql ? sqlite3_exec(db, sql, NULL, NULL, &msg) : SQLITE_NOMEM;
        sqlite3_free(sql);
        if (rc != SQLITE_OK && err) {
            inf_error_set(err, INF_EIO, "sqlite:%s: cannot drop table %s: %s", t->path, t->table,
                          msg ? msg : "out of memory");
        }
        sqlite3_free(msg);
        sqlite3_close(db);
        return rc == SQLITE_OK ? INF_OK : INF_EIO;
    }
    if (t->kind == INF__TARGET_PG && t->table[0]) {
        char conninfo[4096], ident[600], sql[800];
        inf__io_pg_conninfo(uri, conninfo, sizeof conninfo);
        PGconn *c = PQconnectdb(conninfo);
        if (PQstatus(c) != CONNECTION_OK) {
            inf_error_set(err, INF_EIO, "%s: cannot connect: %s", inf_io_redact_uri(uri, red, sizeof red),
                          PQerrorMessage(c));
            PQfinish(c);
            return INF_EIO;
        }
        inf__io_pg_quote_table(c, t->table, ident, sizeof ident);
        snprintf(sql, sizeof sql, "DROP TABLE IF EXISTS %s", ident);
        PGresult *res = PQexec(c, sql);
        int ok = PQresultStatus(res) == PGRES_COMMAND_OK;
        if (!ok && err) {
            inf_error_set(err, INF_EIO, "%s: cannot drop table %s: %s", inf_io_redact_uri(uri, red, sizeof red),
                          t->table, PQerrorMessage(c));
        }
        PQclear(res);
        PQfinish(c);
        return ok ? INF_OK : INF_EIO;
    }
    return INF_OK;
}

static int64_t count_lines(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return -1;
    char buf[1 << 16];
    size_t n;
    int64_t lines = 0;
    int last = '\n';
    while ((n = fread(buf, 1, sizeof buf, f)) > 0) {
        for (const char *p = buf; (p = memchr(p, '\n', (size_t)(buf + n - p))) != NULL; p++) lines++;
        last = buf[n - 1];
    }
    fclose(f);
    if (last != '\n') lines++;
    return lines;
}

int64_t inf__target_count(const char *uri, const inf__target *t, const char *shard_where) {
    if (t->kind == INF__TARGET_FILE) {
        int64_t n = count_lines(t->path);
        if (n < 0) return -1;
        if (!strncmp(uri, "csv:", 4)) n--; /* header; quoted newlines make this an estimate */
        return n < 0 ? 0 : n;
    }
    if (t->kind == INF__TARGET_SQLITE && t->table[0] && !t->is_query) {
        sqlite3 *db = NULL;
        sqlite3_stmt *st = NULL;
        int64_t n = -1;
        if (sqlite3_open_v2(t->path, &db, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK) {
            char *sql = sqlite3_mprintf("SELECT count(*) FROM \"%w\"", t->table);
            if (sql && sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW)
                n = sqlite3_column_int64(st, 0);
            sqlite3_free(sql);
            sqlite3_finalize(st);
        }
        sqlite3_close(db);
        return n;
    }
    if (t->kind == INF__TARGET_PG && t->table[0] && !t->is_query) {
        char conninfo[4096], ident[600], sql[2000];
        inf__io_pg_conninfo(uri, conninfo, sizeof conninfo);
        PGconn *c = PQconnectdb(conninfo);
        int64_t n = -1;
        if (PQstatus(c) == CONNECTION_OK) {
            inf__io_pg_quote_table(c, t->table, ident, sizeof ident);
            snprintf(sql, sizeof sql, "SELECT count(*) FROM %s%s%s", ident, shard_where ? " WHERE " : "",
                     shard_where ? shard_where : "");
            PGresult *res = PQexec(c, sql);
            if (PQresultStatus(res) == PGRES_TUPLES_OK && PQntuples(res) == 1) n = atoll(PQgetvalue(res, 0, 0));
            PQclear(res);
        }
        PQfinish(c);
        return n;
    }
    return -1;
}
