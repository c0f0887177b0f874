/*
 * redis.c -- `redis://[USER:PASSWORD@]HOST[:PORT]/STREAM` sinks: each record
 * becomes one entry of a Redis stream (XADD), for `infera stream` (and any
 * other runner: `infera batch --output redis://...` works too, without
 * deduplication, since batch gives a key column to table sinks only).
 *
 * ENTRY.  Two fields: the key column (opts->key_column, e.g. the event id or
 * the record's id column) with its value as text, and `data` = the whole
 * record as one JSON object (inf_record_batch_row_to_json).  A consumer that
 * reads the stream with `infera stream --input redis://...` gets the record
 * back from `data`.
 *
 * IDEMPOTENCE.  With a key column, entries are added by a Lua script that,
 * for each row, does SET <STREAM>:infera-seen:<key> 1 NX EX <dedupe_ttl> and
 * runs the XADD only when that SET succeeded, atomically (a script runs alone
 * on the server).  One script call takes up to 500 rows.  A replayed record (an event redelivered after a crash, before
 * its acknowledgement) therefore adds nothing: one output entry per key within
 * the dedupe window (default 7 days; `?dedupe_ttl=SECONDS`, 0 = no dedupe).
 * Rows whose key is null, or sinks without a key column, use a plain XADD.
 * `?maxlen=N` caps the stream (XADD MAXLEN ~ N).
 *
 * DURABILITY.  write() sends one script call per 500 rows and reads each
 * reply: when it returns, the server has applied them (as durable as the server's
 * own persistence settings).  commit() has nothing left to do.  Not for
 * Redis Cluster (the seen-key and the stream may live on different slots).
 *
 * RECONNECTS.  A connection lost during a write (the server restarted, the
 * client was killed) is re-established, every 0.5 s for up to 60 s, and the
 * script call is sent again; with dedupe a call the server had applied before
 * the connection broke adds nothing the second time.  Still down after 60 s:
 * write() fails (INF_EIO).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include <hiredis/hiredis.h>

#include "io/io_int.h"

/* KEYS[1] = the stream, KEYS[2 + j] = the seen-key of row j; ARGV[1] = ttl,
 * ARGV[2] = the key field's name, ARGV[3] = maxlen, then per row j (from 0)
 * ARGV[4 + 3j] = '1' to deduplicate, ARGV[5 + 3j] = the key, ARGV[6 + 3j] =
 * the JSON.  Returns the number of entries added. */
static const char DEDUPE_SCRIPT[] =
    "local added = 0\n"
    "for j = 0, #KEYS - 2 do\n"
    "  local a = 4 + 3 * j\n"
    "  if ARGV[a] == '0' or redis.call('SET', KEYS[2 + j], '1', 'NX', 'EX', ARGV[1]) then\n"
    "    if ARGV[3] ~= '0' then\n"
    "      redis.call('XADD', KEYS[1], 'MAXLEN', '~', ARGV[3], '*', ARGV[2], ARGV[a + 1], 'data', ARGV[a + 2])\n"
    "    else\n"
    "      redis.call('XADD', KEYS[1], '*', ARGV[2], ARGV[a + 1], 'data', ARGV[a + 2])\n"
    "    end\n"
    "    added = added + 1\n"
    "  end\n"
    "end\n"
    "return added\n";

#define ROWS_PER_CALL 500
#define RECONNECT_S 60 /* a lost connection is re-established for this long */

typedef struct redis_sink {
    redisContext *c;
    inf_net_uri uri; /* to reconnect */
    char stream[512];
    char seen_prefix[600];
    char key[256];
    char ttl[24], maxlen[24];
    char red[512];
    inf__io_buf json;
    int64_t n_added, n_duplicates;
} redis_sink;

static inf_status redis_sink_close(void *state, inf_error *err) {
    redis_sink *s = state;
    if (!s) return INF_OK;
    if (s->c) redisFree(s->c);
    free(s->json.p);
    free(s);
    return INF_OK;
}

inf_status inf__io_redis_connect(const inf_net_uri *u, int timeout_s, const char *who, redisContext **out,
                                 inf_error *err) {
    struct timeval tv = {timeout_s, 0};
    redisContext *c = redisConnectWithTimeout(u->host, u->port, tv);
    *out = NULL;
    if (!c || c->err) {
        inf_status st = inf_error_set(err, INF_EIO, "%s: cannot connect to %s:%d: %s", who, u->host, u->port,
                                     c ? c->errstr : "out of memory");
        if (c) redisFree(c);
        return st;
    }
    redisSetTimeout(c, tv);
    if (u->password[0]) {
        redisReply *r = u->user[0] ? redisCommand(c, "AUTH %s %s", u->user, u->password)
                                   : redisCommand(c, "AUTH %s", u->password);
        if (!r || r->type == REDIS_REPLY_ERROR) {
            inf_status st = inf_error_set(err, INF_EAUTH, "%s: AUTH failed: %s", who, r ? r->str : c->errstr);
            if (r) freeReplyObject(r);
            redisFree(c);
            return st;
        }
        freeReplyObject(r);
    }
    *out = c;
    return INF_OK;
}

static inf_status redis_sink_open(const char *uri, const char *rest, const inf_sink_options *opts, void **state,
                                  inf_error *err) {
    inf_net_uri u;
    inf_status st = inf_io_parse_net_uri(uri, 6379, &u, err);
    if (st) return st;
    redis_sink *s = calloc(1, sizeof *s);
    if (!s) return inf_error_set(err, INF_ENOMEM, "redis sink: out of memory");
    inf_io_redact_uri(uri, s->red, sizeof s->red);
    if (!u.path[0]) {
        st = inf_error_set(err, INF_EINVAL, "%s: no stream name (redis://HOST:PORT/STREAM)", s->red);
        goto fail;
    }
    snprintf(s->stream, sizeof s->stream, "%s", u.path);
    snprintf(s->seen_prefix, sizeof s->seen_prefix, "%s:infera-seen:", u.path);
    if (opts->key_column) snprintf(s->key, sizeof s->key, "%s", opts->key_column);
    char v[32];
    long long ttl = inf__io_uri_param(rest, "dedupe_ttl", v, sizeof v) ? atoll(v) : 7 * 86400LL;
    long long maxlen = inf__io_uri_param(rest, "maxlen", v, sizeof v) ? atoll(v) : 0;
    if (ttl < 0 || maxlen < 0) {
        st = inf_error_set(err, INF_EINVAL, "%s: dedupe_ttl and maxlen must be >= 0", s->red);
        goto fail;
    }
    snprintf(s->ttl, sizeof s->ttl, "%lld", ttl);
    snprintf(s->maxlen, sizeof s->maxlen, "%lld", maxlen);
    s->uri = u;
    if ((st = inf__io_redis_connect(&u, 10, s->red, &s->c, err))) goto fail;
    *state = s;
    return INF_OK;
fail:
    redis_sink_close(s, NULL);
    return st;
}

/* The argument vector of one EVAL call: its strings live in `text`
 * (offsets, since the buffer moves as it grows). */
typedef struct eval_args {
    inf__io_buf text;
    size_t off[6 + 4 * ROWS_PER_CALL], len[6 + 4 * ROWS_PER_CALL];
    int n;
} eval_args;

/* Appends one argument: the n1 bytes at p1 followed by the n2 bytes at p2. */
static int arg_add2(eval_args *a, const char *p1, size_t n1, const char *p2, size_t n2) {
    a->off[a->n] = a->text.n;
    a->len[a->n++] = n1 + n2;
    return (n1 && inf__io_buf_write(p1, n1, &a->text)) || (n2 && inf__io_buf_write(p2, n2, &a->text)) ||
                   inf__io_buf_write("", 1, &a->text)
               ? -1
               : 0;
}

static int arg_add(eval_args *a, const char *p, size_t n) { return arg_add2(a, p, n, "", 0); }

/* Appends row r of b: its seen-key (a KEYS entry, kept in keys: the prefix
 * and the whole key, however long) and its three ARGV entries. */
static int add_row(redis_sink *s, eval_args *keys, eval_args *argv, const inf_record_batch *b, int r, int kf) {
    s->json.n = 0;
    if (inf_record_batch_row_to_json(b, r, NULL, inf__io_buf_write, &s->json) || !s->json.p) return -1;
    const inf_value *kv = kf >= 0 ? inf_record_batch_get(b, r, kf) : NULL;
    char kbuf[64];
    size_t klen = 0;
    const char *ktext = kv && kv->type != INF_FIELD_NULL ? inf__io_value_text(kv, kbuf, sizeof kbuf, &klen) : "";
    int dedupe = kv && kv->type != INF_FIELD_NULL && strcmp(s->ttl, "0");
    return arg_add2(keys, s->seen_prefix, strlen(s->seen_prefix), ktext, klen) ||
           arg_add(argv, dedupe ? "1" : "0", 1) || arg_add(argv, ktext, klen) || arg_add(argv, s->json.p, s->json.n);
}

static int64_t now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Sends one command, riding out a lost connection (a server restart, a
 * CLIENT KILL, a network blip: connects again) and a server still loading its
 * data set, every 0.5 s for at most RECONNECT_S.  The reply, or NULL with err
 * set. */
static redisReply *command(redis_sink *s, int n, const char **v, const size_t *l, inf_error *err) {
    int64_t until = now_ms() + RECONNECT_S * 1000;
    char why[INF_ERROR_MESSAGE_MAX] = "";
    for (;;) {
        redisReply *rep = s->c ? redisCommandArgv(s->c, n, v, l) : NULL;
        if (rep && !(rep->type == REDIS_REPLY_ERROR && !strncmp(rep->str, "LOADING", 7))) return rep;
        if (rep) {
            snprintf(why, sizeof why, "%s", rep->str);
            freeReplyObject(rep);
        } else if (s->c) {
            snprintf(why, sizeof why, "%s", s->c->errstr);
            redisFree(s->c);
            s->c = NULL;
        }
        if (now_ms() > until) {
            inf_error_set(err, INF_EIO, "%s: XADD: %s (retried for %d s)", s->red, why, RECONNECT_S);
            return NULL;
        }
        inf_error ce;
        int reconnected = 0;
        if (!s->c) {
            if (inf__io_redis_connect(&s->uri, 10, s->red, &s->c, &ce) == INF_OK) {
                reconnected = 1; /* send again at once */
            } else if (ce.status == INF_EAUTH) {
                *err = ce;
                return NULL;
            } else {
                snprintf(why, sizeof why, "%s", ce.message);
            }
        }
        if (!reconnected && usleep(500000) && errno == EINTR) { /* a signal (SIGTERM): stop waiting */
            inf_error_set(err, INF_EIO, "%s: XADD: %s (interrupted)", s->red, why);
            return NULL;
        }
    }
}

/* One EVAL for rows [from, to) of b; *added gets the entries added.  A
 * connection lost on the way is re-established and the call sent again:
 * with dedupe, rows the server had already added are not added twice. */
static inf_status eval_rows(redis_sink *s, eval_args *keys, eval_args *argv, const inf_record_batch *b, int from,
                            int to, int kf, long long *added, inf_error *err) {
    char nkeys[16];
    keys->n = argv->n = 0;
    keys->text.n = argv->text.n = 0;
    snprintf(nkeys, sizeof nkeys, "%d", 1 + to - from);
    if (arg_add(keys, s->stream, strlen(s->stream)) || arg_add(argv, s->ttl, strlen(s->ttl)) ||
        arg_add(argv, s->key[0] ? s->key : "key", strlen(s->key[0] ? s->key : "key")) ||
        arg_add(argv, s->maxlen, strlen(s->maxlen)))
        return inf_error_set(err, INF_ENOMEM, "%s: out of memory", s->red);
    for (int r = from; r < to; r++)
        if (add_row(s, keys, argv, b, r, kf)) return inf_error_set(err, INF_ENOMEM, "%s: out of memory", s->red);
    const char *v[8 + 4 * ROWS_PER_CALL];
    size_t l[8 + 4 * ROWS_PER_CALL];
    int n = 0;
    v[n] = "EVAL", l[n++] = 4;
    v[n] = DEDUPE_SCRIPT, l[n++] = sizeof DEDUPE_SCRIPT - 1;
    v[n] = nkeys, l[n++] = strlen(nkeys);
    for (int i = 0; i < keys->n; i++) v[n] = keys->text.p + keys->off[i], l[n++] = keys->len[i];
    for (int i = 0; i < argv->n; i++) v[n] = argv->text.p + argv->off[i], l[n++] = argv->len[i];
    redisReply *rep = command(s, n, v, l, err);
    if (!rep) return err->status;
    inf_status st = INF_OK;
    if (rep->type == REDIS_REPLY_ERROR)
        st = inf_error_set(err, INF_EIO, "%s: XADD to %s failed: %s", s->red, s->stream, rep->str);
    else
        *added = rep->type == REDIS_REPLY_INTEGER ? rep->integer : 0;
    freeReplyObject(rep);
    return st;
}

static inf_status redis_sink_write(void *state, const inf_record_batch *b, inf_error *err) {
    redis_sink *s = state;
    int n = inf_record_batch_n_rows(b), kf = s->key[0] ? inf_record_batch_find_field(b, s->key) : -1;
    eval_args *keys = calloc(1, sizeof *keys), *argv = calloc(1, sizeof *argv);
    inf_status st = keys && argv ? INF_OK : inf_error_set(err, INF_ENOMEM, "%s: out of memory", s->red);
    for (int from = 0; from < n && !st; from += ROWS_PER_CALL) {
        int to = n - from > ROWS_PER_CALL ? from + ROWS_PER_CALL : n;
        long long added = 0;
        st = eval_rows(s, keys, argv, b, from, to, kf, &added, err);
        s->n_added += added;
        s->n_duplicates += (to - from) - added;
    }
    if (keys) free(keys->text.p);
    if (argv) free(argv->text.p);
    free(keys);
    free(argv);
    return st;
}

static inf_status redis_sink_commit(void *state, inf_error *err) { return INF_OK; }

const inf_sink_type inf__io_redis_sink = {"redis", redis_sink_open, redis_sink_write, redis_sink_commit,
                                          redis_sink_close};
