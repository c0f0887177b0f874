/*
 * lookup.c -- online feature stores for the spec's `lookups`: a SQLite table
 * (embedded default) or Redis hashes, one round trip per record batch.
 *
 * SQLite, online: `SELECT key, f1.., inf_ts(as_of) FROM T WHERE key IN (?,..)`
 *   for all the batch's unique keys at once (statements cached per
 *   power-of-two size, padded with NULLs; batches over 8192 unique keys take
 *   one query per 8192).  When a key has several rows, the one with the
 *   latest as_of wins (ties: the last row returned).
 * SQLite, point in time (training, `infera features --as-of`): one query per
 *   chunk of records, pushed down to SQLite: for each (key, t) the row of
 *   the history table with the greatest as_of <= t (and available_at <= t
 *   when the lookup names one), ties broken by the latest rowid.  A value
 *   with as_of == t is visible; later ones never are.
 * Redis: one pipelined `HMGET <prefix><key> f1 .. as_of` per unique key,
 *   written in one go and read back (one network round trip per batch).  A
 *   broken connection (the server restarted) is opened again once and the
 *   batch fetched again; still failing, the fetch fails (INF_EIO).
 * Timestamps in stores: epoch seconds (numbers) or ISO-8601 text, read by the
 *   SQL function inf_ts() registered on each connection.
 * A connection belongs to one executor (one thread).
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hiredis/hiredis.h>
#include <sqlite3.h>

#include "io/io_int.h"
#include "pipeline/pipeline_int.h"

#define MAX_IN 8192
#define N_CACHED 14 /* sizes 1, 2, 4, ... 8192 */

struct lookup_conn {
    const plookup *lk;
    int pit;
    sqlite3 *db;
    sqlite3_stmt *in_stmt[N_CACHED];
    sqlite3_stmt *pit_stmt[N_CACHED];
    redisContext *redis;
    char *table;     /* table in use (the lookup's, or the history's) */
    int *hash;       /* key -> index, for mapping result rows */
    int hash_size;
    char where[600]; /* store for messages */
};

int inf__lookup_is_redis(const char *uri) { return !strncmp(uri, "redis://", 8); }

inf_status inf__lookup_result_reserve(lookup_result *r, int n_keys, int n_features) {
    if (n_keys <= r->cap_keys) {
        r->n_keys = n_keys;
        return INF_OK;
    }
    int cap = r->cap_keys ? r->cap_keys : 64;
    while (cap < n_keys) cap *= 2;
    double *v = realloc(r->values, (size_t)cap * (n_features ? n_features : 1) * sizeof *v);
    if (v) r->values = v;
    double *a = realloc(r->as_of, (size_t)cap * sizeof *a);
    if (a) r->as_of = a;
    uint8_t *f = realloc(r->found, (size_t)cap);
    if (f) r->found = f;
    if (!v || !a || !f) return INF_ENOMEM;
    r->cap_keys = cap;
    r->n_keys = n_keys;
    return INF_OK;
}

void inf__lookup_result_free(lookup_result *r) {
    free(r->values);
    free(r->as_of);
    free(r->found);
    memset(r, 0, sizeof *r);
}

/* inf_ts(x): epoch seconds of a number or an ISO-8601 / numeric text; NULL otherwise. */
static void sql_inf_ts(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
    switch (sqlite3_value_type(argv[0])) {
    case SQLITE_INTEGER:
    case SQLITE_FLOAT: sqlite3_result_double(ctx, sqlite3_value_double(argv[0])); return;
    case SQLITE_TEXT: {
        int64_t us;
        const char *s = (const char *)sqlite3_value_text(argv[0]);
        if (s && !inf_parse_timestamp(s, (size_t)sqlite3_value_bytes(argv[0]), &us)) {
            sqlite3_result_double(ctx, (double)us / 1e6);
            return;
        }
        sqlite3_result_null(ctx);
        return;
    }
    default: sqlite3_result_null(ctx);
    }
}

void inf__lookup_close(lookup_conn *c) {
    if (!c) return;
    for (int i = 0; i < N_CACHED; i++) {
        sqlite3_finalize(c->in_stmt[i]);
        sqlite3_finalize(c->pit_stmt[i]);
    }
    sqlite3_close(c->db);
    if (c->redis) redisFree(c->redis);
    free(c->table);
    free(c->hash);
    free(c);
}

static inf_status open_redis(lookup_conn *c, const char *uri, inf_error *err) {
    /* redis://[user:password@]host[:port][/db] */
    inf_net_uri u;
    char who[600];
    snprintf(who, sizeof who, "lookup '%s': %s", c->lk->name, c->where);
    inf_status st = inf_io_parse_net_uri(uri, 6379, &u, err);
    if (st) return st;
    if ((st = inf__io_redis_connect(&u, 2, who, &c->redis, err))) return st;
    int db = atoi(u.path);
    if (db) {
        redisReply *r = redisCommand(c->redis, "SELECT %d", db);
        int bad = !r || r->type == REDIS_REPLY_ERROR;
        freeReplyObject(r);
        if (bad) {
            redisFree(c->redis);
            c->redis = NULL;
            return inf_error_set(err, INF_EIO, "lookup '%s': %s: cannot select db %d", c->lk->name, c->where, db);
        }
    }
    return INF_OK;
}

inf_status inf__lookup_open(const inf_pipeline *p, const plookup *lk, const char *history_uri, lookup_conn **out,
                            inf_error *err) {
    *out = NULL;
    lookup_conn *c = calloc(1, sizeof *c);
    if (!c) return inf_error_set(err, INF_ENOMEM, "out of memory");
    c->lk = lk;
    c->pit = history_uri != NULL || 0;
    inf_status st = INF_OK;
    char path[1024];
    const char *table = lk->table;
    char tbuf[256];
    if (history_uri) {
        if (strncmp(history_uri, "sqlite:", 7)) {
            st = inf_error_set(err, INF_EINVAL, "--history: point-in-time lookups read a SQLite table (sqlite:PATH?table=T)");
            goto fail;
        }
        inf__io_uri_path(history_uri + 7, path, sizeof path);
        if (!inf__io_uri_param(history_uri + 7, "table", tbuf, sizeof tbuf)) {
            st = inf_error_set(err, INF_EINVAL, "--history '%s': needs ?table=T", history_uri);
            goto fail;
        }
        table = tbuf;
    } else if (lk->is_redis) {
        inf_io_redact_uri(lk->store, c->where, sizeof c->where);
        if ((st = open_redis(c, lk->store, err))) goto fail;
        *out = c;
        return INF_OK;
    } else {
        snprintf(path, sizeof path, "%s", lk->store);
    }
    snprintf(c->where, sizeof c->where, "sqlite:%s?table=%s", path, table);
    if (!(c->table = strdup(table))) {
        st = inf_error_set(err, INF_ENOMEM, "out of memory");
        goto fail;
    }
    if (sqlite3_open_v2(path, &c->db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK) {
        st = inf_error_set(err, INF_EIO, "lookup '%s': cannot open %s: %s", lk->name, c->where,
                  c->db ? sqlite3_errmsg(c->db) : "out of memory");
        goto fail;
    }
    sqlite3_busy_timeout(c->db, 5000);
    sqlite3_create_function(c->db, "inf_ts", 1, SQLITE_UTF8 | SQLITE_DETERMINISTIC, NULL, sql_inf_ts, NULL, NULL);
    /* check the columns exist now, not at the first batch */
    char sql[4096], id[600];
    size_t n = (size_t)snprintf(sql, sizeof sql, "SELECT ");
    inf__io_quote_ident(id, sizeof id, lk->key_column);
    n += (size_t)snprintf(sql + n, sizeof sql - n, "%s", id);
    for (int j = 0; j < lk->n_features; j++) {
        inf__io_quote_ident(id, sizeof id, lk->features[j]);
        n += (size_t)snprintf(sql + n, sizeof sql - n, ", %s", id);
    }
    if (lk->as_of) {
        inf__io_quote_ident(id, sizeof id, lk->as_of);
        n += (size_t)snprintf(sql + n, sizeof sql - n, ", %s", id);
    }
    inf__io_quote_ident(id, sizeof id, table);
    snprintf(sql + n, sizeof sql - n, " FROM %s LIMIT 0", id);
    sqlite3_stmt *probe = NULL;
    if (sqlite3_prepare_v2(c->db, sql, -1, &probe, NULL) != SQLITE_OK) {
        st = inf_error_set(err, INF_EIO, "lookup '%s': %s: %s", lk->name, c->where, sqlite3_errmsg(c->db));
        goto fail;
    }
    sqlite3_finalize(probe);
    *out = c;
    return INF_OK;
fail:
    inf__lookup_close(c);
    return st;
}

static int size_class(int n, int *size) {
    int cls = 0, s = 1;
    while (s < n) s *= 2, cls++;
    *size = s;
    return cls;
}

static char *select_list(const plookup *lk, const char *alias) {
    size_t cap = 256 + (size_t)lk->n_features * 300;
    char *s = malloc(cap), id[600];
    if (!s) return NULL;
    size_t n = 0;
    for (int j = 0; j < lk->n_features; j++) {
        inf__io_quote_ident(id, sizeof id, lk->features[j]);
        n += (size_t)snprintf(s + n, cap - n, ", %s.%s", alias, id);
    }
    if (lk->as_of) {
        inf__io_quote_ident(id, sizeof id, lk->as_of);
        n += (size_t)snprintf(s + n, cap - n, ", inf_ts(%s.%s)", alias, id);
    } else {
        snprintf(s + n, cap - n, ", NULL");
    }
    return s;
}

static sqlite3_stmt *in_statement(lookup_conn *c, int n, int *size, inf_error *err) {
    int cls = size_class(n, size);
    if (c->in_stmt[cls]) return c->in_stmt[cls];
    const plookup *lk = c->lk;
    char *cols = select_list(lk, "t");
    size_t cap = 1024 + (size_t)*size * 3 + (cols ? strlen(cols) : 0);
    char *sql = malloc(cap), key[600], tab[600];
    if (!cols || !sql) {
        free(cols);
        free(sql);
        inf_error_set(err, INF_ENOMEM, "out of memory");
        return NULL;
    }
    inf__io_quote_ident(key, sizeof key, lk->key_column);
    inf__io_quote_ident(tab, sizeof tab, c->table);
    size_t m = (size_t)snprintf(sql, cap, "SELECT t.%s%s FROM %s AS t WHERE t.%s IN (", key, cols, tab, key);
    for (int i = 0; i < *size; i++) m += (size_t)snprintf(sql + m, cap - m, i ? ",?" : "?");
    snprintf(sql + m, cap - m, ")");
    if (sqlite3_prepare_v2(c->db, sql, -1, &c->in_stmt[cls], NULL) != SQLITE_OK)
        inf_error_set(err, INF_EIO, "lookup '%s': %s: %s", lk->name, c->where, sqlite3_errmsg(c->db));
    free(cols);
    free(sql);
    return c->in_stmt[cls];
}

static inf_status ensure_hash(lookup_conn *c, int n) {
    int size = 16;
    while (size < n * 2) size *= 2;
    if (size > c->hash_size) {
        int *h = realloc(c->hash, (size_t)size * sizeof *h);
        if (!h) return INF_ENOMEM;
        c->hash = h;
        c->hash_size = size;
    }
    memset(c->hash, 0, (size_t)c->hash_size * sizeof *c->hash);
    return INF_OK;
}

static int hash_find(lookup_conn *c, const char *const *keys, const uint32_t *lens, const char *s, uint32_t len,
                     int insert_index) {
    uint32_t mask = (uint32_t)c->hash_size - 1;
    for (uint32_t h = (uint32_t)inf_pipeline_hash_string(s, len) & mask;; h = (h + 1) & mask) {
        int slot = c->hash[h];
        if (!slot) {
            if (insert_index >= 0) c->hash[h] = insert_index + 1;
            return -1;
        }
        if (lens[slot - 1] == len && !memcmp(keys[slot - 1], s, len)) return slot - 1;
    }
}

static inf_status fetch_redis(lookup_conn *c, const char *const *keys, const uint32_t *lens, int n, lookup_result *res,
                              inf_error *err) {
    const plookup *lk = c->lk;
    int argc = 2 + lk->n_features + (lk->as_of ? 1 : 0);
    const char **argv = malloc((size_t)argc * sizeof *argv);
    size_t *argl = malloc((size_t)argc * sizeof *argl);
    char *keybuf = NULL;
    size_t plen = strlen(lk->prefix);
    inf_status st = INF_OK;
    if (!argv || !argl) {
        st = inf_error_set(err, INF_ENOMEM, "out of memory");
        goto done;
    }
    argv[0] = "HMGET";
    argl[0] = 5;
    for (int j = 0; j < lk->n_features; j++) argv[2 + j] = lk->features[j], argl[2 + j] = strlen(lk->features[j]);
    if (lk->as_of) argv[argc - 1] = lk->as_of, argl[argc - 1] = strlen(lk->as_of);
    for (int k = 0; k < n; k++) {
        char *kb = realloc(keybuf, plen + lens[k] + 1);
        if (!kb) {
            st = inf_error_set(err, INF_ENOMEM, "out of memory");
            goto done;
        }
        keybuf = kb;
        memcpy(keybuf, lk->prefix, plen);
        memcpy(keybuf + plen, keys[k], lens[k]);
        argv[1] = keybuf;
        argl[1] = plen + lens[k];
        if (redisAppendCommandArgv(c->redis, argc, argv, argl) != REDIS_OK) {
            st = inf_error_set(err, INF_EIO, "lookup '%s': %s: %s", lk->name, c->where, c->redis->errstr);
            goto done;
        }
    }
    for (int k = 0; k < n; k++) {
        redisReply *r = NULL;
        if (redisGetReply(c->redis, (void **)&r) != REDIS_OK || !r) {
            st = inf_error_set(err, INF_EIO, "lookup '%s': %s: %s", lk->name, c->where, c->redis->errstr);
            goto done;
        }
        if (r->type != REDIS_REPLY_ARRAY || (int)r->elements != argc - 2) {
            freeReplyObject(r);
            st = inf_error_set(err, INF_EIO, "lookup '%s': %s: unexpected HMGET reply (is the key a hash?)", lk->name, c->where);
            /* drain the remaining replies so the connection stays usable */
            for (int rest = k + 1; rest < n; rest++) {
                redisReply *x = NULL;
                if (redisGetReply(c->redis, (void **)&x) != REDIS_OK) break;
                freeReplyObject(x);
            }
            goto done;
        }
        int found = 0;
        for (int j = 0; j < argc - 2; j++) {
            redisReply *e = r->element[j];
            double v = NAN;
            if (e->type == REDIS_REPLY_STRING) {
                found = 1;
                int64_t us;
                if (j == lk->n_features) v = !inf_parse_timestamp(e->str, e->len, &us) ? (double)us / 1e6 : NAN;
                else {
                    char *end;
                    char tmp[64];
                    snprintf(tmp, sizeof tmp, "%.*s", (int)e->len, e->str);
                    v = strtod(tmp, &end);
                    if (end == tmp || *end) v = NAN;
                }
            }
            if (j < lk->n_features) res->values[(size_t)k * lk->n_features + j] = v;
            else res->as_of[k] = v;
        }
        if (!lk->as_of) res->as_of[k] = NAN;
        res->found[k] = (uint8_t)found;
        freeReplyObject(r);
    }
done:
    free(argv);
    free(argl);
    free(keybuf);
    return st;
}

static void read_row(sqlite3_stmt *s, const plookup *lk, lookup_result *res, int k, int first) {
    for (int j = 0; j < lk->n_features; j++)
        res->values[(size_t)k * lk->n_features + j] =
            sqlite3_column_type(s, first + j) == SQLITE_NULL ? NAN : sqlite3_column_double(s, first + j);
    res->as_of[k] = sqlite3_column_type(s, first + lk->n_features) == SQLITE_NULL ? NAN
                                                                                 : sqlite3_column_double(s, first + lk->n_features);
    res->found[k] = 1;
}

inf_status inf__lookup_fetch(lookup_conn *c, const char *const *keys, const uint32_t *lens, int n, lookup_result *res,
                             inf_error *err) {
    const plookup *lk = c->lk;
    if (inf__lookup_result_reserve(res, n, lk->n_features)) return inf_error_set(err, INF_ENOMEM, "out of memory");
    memset(res->found, 0, (size_t)n);
    if (!c->db) { /* Redis */
        inf_status st = c->redis ? fetch_redis(c, keys, lens, n, res, err) : INF_EIO;
        if (c->redis && (st != INF_EIO || !c->redis->err)) return st;
        /* the connection broke (the server restarted, a time-out), or an
         * earlier attempt to open it again failed: a new connection and one
         * more try, so a restart costs no batch and no request */
        if (c->redis) redisFree(c->redis);
        c->redis = NULL;
        if ((st = open_redis(c, c->lk->store, err))) return st;
        return fetch_redis(c, keys, lens, n, res, err);
    }
    if (ensure_hash(c, n)) return inf_error_set(err, INF_ENOMEM, "out of memory");
    for (int k = 0; k < n; k++) hash_find(c, keys, lens, keys[k], lens[k], k);
    for (int start = 0; start < n; start += MAX_IN) {
        int m = n - start < MAX_IN ? n - start : MAX_IN, size;
        sqlite3_stmt *s = in_statement(c, m, &size, err);
        if (!s) return err ? err->status : INF_EIO;
        sqlite3_reset(s);
        sqlite3_clear_bindings(s);
        for (int i = 0; i < m; i++) sqlite3_bind_text(s, i + 1, keys[start + i], (int)lens[start + i], SQLITE_STATIC);
        int rc;
        while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
            const char *key = (const char *)sqlite3_column_text(s, 0);
            if (!key) continue;
            int k = hash_find(c, keys, lens, key, (uint32_t)sqlite3_column_bytes(s, 0), -1);
            if (k < 0) continue;
            double as_of = sqlite3_column_type(s, 1 + lk->n_features) == SQLITE_NULL
                               ? NAN
                               : sqlite3_column_double(s, 1 + lk->n_features);
            if (res->found[k] && !(as_of >= res->as_of[k])) continue; /* keep the latest */
            read_row(s, lk, res, k, 1);
        }
        sqlite3_reset(s);
        if (rc != SQLITE_DONE) return inf_error_set(err, INF_EIO, "lookup '%s': %s: %s", lk->name, c->where, sqlite3_errmsg(c->db));
    }
    return INF_OK;
}

static sqlite3_stmt *pit_statement(lookup_conn *c, int n, int *size, inf_error *err) {
    int cls = size_class(n, size);
    if (c->pit_stmt[cls]) return c->pit_stmt[cls];
    const plookup *lk = c->lk;
    char *cols = select_list(lk, "h");
    size_t cap = 2048 + (size_t)*size * 12 + (cols ? strlen(cols) : 0);
    char *sql = malloc(cap), key[600], tab[600], asof[600], avail[600];
    if (!cols || !sql) {
        free(cols);
        free(sql);
        inf_error_set(err, INF_ENOMEM, "out of memory");
        return NULL;
    }
    inf__io_quote_ident(key, sizeof key, lk->key_column);
    inf__io_quote_ident(tab, sizeof tab, c->table);
    inf__io_quote_ident(asof, sizeof asof, lk->as_of);
    if (lk->available_at) inf__io_quote_ident(avail, sizeof avail, lk->available_at);
    size_t m = (size_t)snprintf(sql, cap, "WITH q(i, k, t) AS (VALUES ");
    for (int i = 0; i < *size; i++) m += (size_t)snprintf(sql + m, cap - m, i ? ",(?,?,?)" : "(?,?,?)");
    m += (size_t)snprintf(sql + m, cap - m,
                          ") SELECT q.i%s FROM q JOIN %s AS h ON h.rowid = (SELECT h2.rowid FROM %s AS h2 WHERE h2.%s = q.k "
                          "AND inf_ts(h2.%s) <= q.t",
                          cols, tab, tab, key, asof);
    if (lk->available_at) m += (size_t)snprintf(sql + m, cap - m, " AND inf_ts(h2.%s) <= q.t", avail);
    snprintf(sql + m, cap - m, " ORDER BY inf_ts(h2.%s) DESC, h2.rowid DESC LIMIT 1) WHERE q.i IS NOT NULL", asof);
    if (sqlite3_prepare_v2(c->db, sql, -1, &c->pit_stmt[cls], NULL) != SQLITE_OK)
        inf_error_set(err, INF_EIO, "lookup '%s': %s: %s", lk->name, c->where, sqlite3_errmsg(c->db));
    free(cols);
    free(sql);
    return c->pit_stmt[cls];
}

inf_status inf__lookup_fetch_as_of(lookup_conn *c, const char *const *keys, const uint32_t *lens, const double *t,
                                   int n, lookup_result *res, inf_error *err) {
    const plookup *lk = c->lk;
    if (!c->db) return inf_error_set(err, INF_EINVAL, "lookup '%s': point-in-time lookups need a SQLite history table", lk->name);
    if (inf__lookup_result_reserve(res, n, lk->n_features)) return inf_error_set(err, INF_ENOMEM, "out of memory");
    memset(res->found, 0, (size_t)n);
    const int chunk = 2048; /* 3 parameters per record */
    for (int start = 0; start < n; start += chunk) {
        int m = n - start < chunk ? n - start : chunk, size;
        sqlite3_stmt *s = pit_statement(c, m, &size, err);
        if (!s) return err ? err->status : INF_EIO;
        sqlite3_reset(s);
        sqlite3_clear_bindings(s);
        for (int i = 0; i < m; i++) {
            sqlite3_bind_int(s, 3 * i + 1, start + i);
            sqlite3_bind_text(s, 3 * i + 2, keys[start + i], (int)lens[start + i], SQLITE_STATIC);
            sqlite3_bind_double(s, 3 * i + 3, t[start + i]);
        }
        int rc;
        while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
            int k = sqlite3_column_int(s, 0);
            if (k < 0 || k >= n) continue;
            read_row(s, lk, res, k, 1);
        }
        sqlite3_reset(s);
        if (rc != SQLITE_DONE) return inf_error_set(err, INF_EIO, "lookup '%s': %s: %s", lk->name, c->where, sqlite3_errmsg(c->db));
    }
    return INF_OK;
}
