/*
 * store_pg.c -- the shared registry store: a PostgreSQL database reached
 * with libpq ("postgresql://user@host:port/db").  Tables are prefixed reg_
 * so the registry can live in a database that holds other things.
 *
 * Statements arrive in portable SQL with '?' placeholders and are rewritten
 * to $1, $2, ... (outside quotes); SQLite's COLLATE BINARY becomes COLLATE
 * "C", so names sort by bytes in both stores whatever the database locale.  A write transaction takes the advisory
 * lock INF_PG_LOCK_KEY for its duration, which serialises registry writers
 * across every machine sharing the database.  Notices are silenced; error
 * messages never contain the connection password.
 *
 * ALIAS CHANGES are announced with NOTIFY on the channel
 * INF_PG_ALIAS_CHANNEL ("infera_alias"; payload "name@alias"): a statement
 * that writes reg_aliases is followed, in the same transaction, by
 * pg_notify, so listeners (`infera serve`, src/serve/notify.c) hear of a move
 * when it commits and never of one rolled back.  Done here rather than by a
 * trigger so registries created by older builds notify too.
 */
#include <libpq-fe.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "registry/registry_int.h"

#define INF_PG_LOCK_KEY "7301996211"
#define INF_PG_ALIAS_CHANNEL "infera_alias"

typedef struct pg_store {
    inf__store base;
    PGconn *conn;
    char where[1024]; /* redacted URL */
} pg_store;

static void quiet(void *arg, const char *message) { (void)arg, (void)message; }

/* The first line of libpq's message. */
static inf_status pg_fail(pg_store *s, inf_error *err, const char *what, const char *msg) {
    char line[300];
    snprintf(line, sizeof line, "%s", msg ? msg : "");
    line[strcspn(line, "\n")] = '\0';
    return inf_error_set(err, INF_EIO, "registry %s: %s: %s", s->where, what, line);
}

/* '?' -> $n outside single-quoted literals, and SQLite's COLLATE BINARY ->
 * COLLATE "C": ORDER BY on names says COLLATE BINARY so both stores sort by
 * bytes, whatever the database's locale (en_US would put "alpha" before
 * "Beta", SQLite after).  NULL on out of memory. */
static char *rewrite(const char *sql) {
    size_t n = strlen(sql), q = 0;
    for (size_t i = 0; i < n; i++) q += sql[i] == '?';
    char *out = malloc(n + q * 4 + 1);
    if (!out) return NULL;
    size_t o = 0;
    int k = 0;
    bool quoted = false;
    for (size_t i = 0; i < n; i++) {
        if (sql[i] == '\'') quoted = !quoted;
        if (sql[i] == '?' && !quoted) {
            o += (size_t)sprintf(out + o, "$%d", ++k);
        } else if (!quoted && !strncmp(sql + i, "COLLATE BINARY", 14)) {
            o += (size_t)sprintf(out + o, "COLLATE \"C\"");
            i += 13;
        } else
            out[o++] = sql[i];
    }
    out[o] = '\0';
    return out;
}

/* 1 when sql is an INSERT, UPDATE or DELETE of reg_aliases. */
static int writes_aliases(const char *sql) {
    while (*sql == ' ' || *sql == '\n' || *sql == '\t') sql++;
    return (!strncasecmp(sql, "INSERT", 6) || !strncasecmp(sql, "UPDATE", 6) || !strncasecmp(sql, "DELETE", 6)) &&
           strstr(sql, "reg_aliases") != NULL;
}

/* NOTIFY listeners of an alias write (delivered at commit).  params[0] and
 * [1] of the registry's alias statements are the model name and alias. */
static void notify_alias(pg_store *s, int n_params, const char *const *params) {
    char payload[300] = "";
    if (n_params >= 2 && params[0] && params[1]) snprintf(payload, sizeof payload, "%s@%s", params[0], params[1]);
    const char *p[2] = {INF_PG_ALIAS_CHANNEL, payload};
    PGresult *res = PQexecParams(s->conn, "SELECT pg_notify($1, $2)", 2, NULL, p, NULL, NULL, 0);
    PQclear(res); /* a failed notify only delays listeners until their next poll */
}

static inf_status pg_query(inf__store *base, const char *sql, int n_params, const char *const *params,
                           inf__rows **out, inf_error *err) {
    pg_store *s = (pg_store *)base;
    char *text = rewrite(sql);
    if (!text) return inf_error_set(err, INF_ENOMEM, "registry %s: out of memory", s->where);
    PGresult *res = PQexecParams(s->conn, text, n_params, NULL, params, NULL, NULL, 0);
    free(text);
    ExecStatusType st = PQresultStatus(res);
    if (st != PGRES_TUPLES_OK && st != PGRES_COMMAND_OK) {
        inf_status rc = pg_fail(s, err, "running a statement", PQresultErrorMessage(res));
        PQclear(res);
        return rc;
    }
    if (writes_aliases(sql)) notify_alias(s, n_params, params);
    if (out) {
        inf__rows *rows = calloc(1, sizeof *rows);
        int nr = st == PGRES_TUPLES_OK ? PQntuples(res) : 0, nc = st == PGRES_TUPLES_OK ? PQnfields(res) : 0;
        if (!rows) goto oom;
        rows->n_cols = nc;
        if (nr && nc && !(rows->cells = calloc((size_t)nr * nc, sizeof *rows->cells))) {
            free(rows);
            goto oom;
        }
        rows->n_rows = nr;
        for (int i = 0; i < nr; i++)
            for (int j = 0; j < nc; j++)
                if (!PQgetisnull(res, i, j) &&
                    !(rows->cells[(size_t)i * nc + j] = inf__reg_strdup(PQgetvalue(res, i, j)))) {
                    inf__rows_free(rows);
                    goto oom;
                }
        *out = rows;
    }
    PQclear(res);
    return INF_OK;
oom:
    PQclear(res);
    return inf_error_set(err, INF_ENOMEM, "registry %s: out of memory reading results", s->where);
}

static inf_status pg_exec(pg_store *s, const char *sql, const char *what, inf_error *err) {
    PGresult *res = PQexec(s->conn, sql);
    ExecStatusType st = PQresultStatus(res);
    inf_status rc = INF_OK;
    if (st != PGRES_TUPLES_OK && st != PGRES_COMMAND_OK) rc = pg_fail(s, err, what, PQresultErrorMessage(res));
    PQclear(res);
    return rc;
}

static inf_status pg_script(inf__store *base, const char *sql, inf_error *err) {
    return pg_exec((pg_store *)base, sql, "creating the schema", err);
}

static inf_status pg_begin(inf__store *base, inf_error *err) {
    pg_store *s = (pg_store *)base;
    inf_status rc = pg_exec(s, "BEGIN", "starting a write transaction", err);
    if (rc) return rc;
    rc = pg_exec(s, "SELECT pg_advisory_xact_lock(" INF_PG_LOCK_KEY ")", "taking the registry write lock", err);
    if (rc) pg_exec(s, "ROLLBACK", "rolling back", NULL);
    return rc;
}

static inf_status pg_commit(inf__store *base, inf_error *err) {
    pg_store *s = (pg_store *)base;
    inf_status rc = pg_exec(s, "COMMIT", "committing", err);
    if (rc) pg_exec(s, "ROLLBACK", "rolling back", NULL);
    return rc;
}

static void pg_rollback(inf__store *base) {
    pg_store *s = (pg_store *)base;
    if (PQtransactionStatus(s->conn) != PQTRANS_IDLE) pg_exec(s, "ROLLBACK", "rolling back", NULL);
}

static void pg_close(inf__store *base) {
    pg_store *s = (pg_store *)base;
    PQfinish(s->conn);
    free(s);
}

/* The audit table refuses UPDATE and DELETE (a superuser can still drop the
 * trigger; the hash chain catches what follows). */
static const inf__store_ops pg_ops = {
    .kind = "postgresql",
    .schema_extra =
        "CREATE OR REPLACE FUNCTION reg_audit_append_only() RETURNS trigger LANGUAGE plpgsql AS $$ "
        "BEGIN RAISE EXCEPTION 'the audit log is append-only'; END $$;"
        "CREATE OR REPLACE TRIGGER reg_audit_no_change BEFORE UPDATE OR DELETE ON reg_audit "
        "FOR EACH ROW EXECUTE FUNCTION reg_audit_append_only();",
    .schema_probe = "SELECT CASE WHEN to_regclass('reg_meta') IS NULL THEN 0 ELSE 1 END",
    .query = pg_query,
    .script = pg_script,
    .begin_write = pg_begin,
    .commit = pg_commit,
    .rollback = pg_rollback,
    .close = pg_close,
};

inf_status inf__store_pg_open(const char *url, inf__store **out, inf_error *err) {
    *out = NULL;
    pg_store *s = calloc(1, sizeof *s);
    if (!s) return inf_error_set(err, INF_ENOMEM, "registry: out of memory");
    s->base.ops = &pg_ops;
    inf__reg_redact(url, s->where, sizeof s->where);
    s->conn = PQconnectdb(url);
    if (!s->conn || PQstatus(s->conn) != CONNECTION_OK) {
        inf_status rc = pg_fail(s, err, "cannot connect", s->conn ? PQerrorMessage(s->conn) : "out of memory");
        PQfinish(s->conn);
        free(s);
        return rc;
    }
    PQsetNoticeProcessor(s->conn, quiet, NULL);
    *out = &s->base;
    return INF_OK;
}
