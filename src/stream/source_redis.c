/*
 * source_redis.c -- `redis://[USER:PASSWORD@]HOST[:PORT]/STREAM?group=G` stream
 * source: a consumer in a Redis Streams consumer group.
 *
 * Parameters: group=G (required), consumer=NAME (default infera-<hostname>;
 * --consumer overrides; keep it stable across restarts so the consumer finds
 * its pending entries), field=F (default data), start=0|$|ID (where a new
 * group starts: 0 = the whole stream, the default; $ = only new entries),
 * claim_idle_ms=N (0 = off, the default).
 *
 * Startup: XGROUP CREATE STREAM G START MKSTREAM (BUSYGROUP = it exists).
 * Then, in order:
 *   1. this consumer's own pending entries (its PEL: delivered before a crash
 *      or a kill, never acknowledged): XREADGROUP ... STREAMS s 0, from the
 *      lowest id, until the PEL is read through;
 *   2. new entries: XREADGROUP ... COUNT n BLOCK ms STREAMS s >.
 * With claim_idle_ms, every claim_idle_ms/2 (at least 1 s) the source also
 * takes over entries other consumers left pending for longer than
 * claim_idle_ms (XAUTOCLAIM, Redis >= 6.2), e.g. those of a dead consumer.
 *
 * Payload: an entry whose field F holds a JSON object is that object; an
 * entry without F is a flat record of its fields, each value typed like a
 * CSV cell (inf_record_batch_set_text).  Bytes that are not UTF-8 text (in
 * the JSON, a field name or a value) make the entry malformed: the sinks
 * (PostgreSQL's text columns) would refuse them on every redelivery.  The
 * event id is the entry id.  An
 * entry deleted from the stream while pending (nil fields) is acknowledged
 * and counted, not scored.
 *
 * ack() sends XACK for every entry returned so far (1000 ids per command).
 * A connection lost while reading is re-established (every 0.5 s, for 60 s),
 * and the consumer then reads its PEL again (an XREADGROUP reply lost with
 * the connection left its entries there).  Lost during XACK, or for longer,
 * it is fatal for the run: the runner exits non-zero, nothing unwritten was
 * acknowledged, and the restarted consumer reads its PEL again.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>

#include <hiredis/hiredis.h>

#include "io/io_int.h"
#include "stream/stream_int.h"

#define POLL_MS 200
#define ACK_CHUNK 1000
#define RETRY_S 60

typedef struct redis_stream {
    redisContext *c;
    char stream[512], group[256], consumer[256], field[128], start[64];
    char red[512];
    int max_delay_ms;
    int64_t claim_idle_ms, last_claim_ms;
    char claim_cursor[64];
    int pending_phase;         /* reading our own PEL (step 1) */
    char pending_from[64];     /* the last PEL id read */
    inf_record_batch *unacked; /* field 0: entry ids delivered, not yet acknowledged */
    inf_net_uri uri;           /* to reconnect */
    int conn_lost;             /* the last failure was the connection's, not a command's */
    int64_t n_new, n_pending, n_claimed, n_deleted, n_acked, n_reconnects;
} redis_stream;

static void redis_close(void *state) {
    redis_stream *s = state;
    if (!s) return;
    if (s->c) redisFree(s->c);
    inf_record_batch_free(s->unacked);
    free(s);
}

static inf_status reply_error(redis_stream *s, redisReply *r, const char *what, inf_error *err) {
    char msg[600];
    snprintf(msg, sizeof msg, "%s: %s", what, r ? (r->str ? r->str : "unexpected reply") : s->c->errstr);
    s->conn_lost = !r;
    if (r) freeReplyObject(r);
    return inf_error_set(err, INF_EIO, "%s: %s", s->red, msg);
}

static inf_status connect_redis(redis_stream *s, inf_error *err) {
    /* replies may take a blocking read's whole wait */
    inf_status st = inf__io_redis_connect(&s->uri, 10 + s->max_delay_ms / 1000, s->red, &s->c, err);
    if (st) return st;
    redisReply *r;
    r = redisCommand(s->c, "XGROUP CREATE %s %s %s MKSTREAM", s->stream, s->group, s->start);
    if (!r || (r->type == REDIS_REPLY_ERROR && strncmp(r->str, "BUSYGROUP", 9)))
        return reply_error(s, r, "XGROUP CREATE", err);
    freeReplyObject(r);
    return INF_OK;
}

static inf_status redis_open(const char *uri, const inf__stream_source_options *o, void **state, inf_error *err) {
    inf_net_uri u;
    inf_status st = inf_io_parse_net_uri(uri, 6379, &u, err);
    if (st) return st;
    redis_stream *s = calloc(1, sizeof *s);
    if (!s || inf_record_batch_new(&s->unacked)) {
        redis_close(s);
        return inf_error_set(err, INF_ENOMEM, "redis source: out of memory");
    }
    inf_io_redact_uri(uri, s->red, sizeof s->red);
    char v[64], host[200];
    snprintf(s->stream, sizeof s->stream, "%s", u.path);
    if (!inf_io_uri_param(uri, "group", s->group, sizeof s->group) || !s->group[0] || !s->stream[0]) {
        inf_error_set(err, INF_EINVAL, "%s: needs a stream and a group: redis://HOST:PORT/STREAM?group=G", s->red);
        redis_close(s);
        return INF_EINVAL;
    }
    if (o->consumer)
        snprintf(s->consumer, sizeof s->consumer, "%s", o->consumer);
    else if (!inf_io_uri_param(uri, "consumer", s->consumer, sizeof s->consumer)) {
        if (gethostname(host, sizeof host)) snprintf(host, sizeof host, "localhost");
        host[sizeof host - 1] = 0;
        snprintf(s->consumer, sizeof s->consumer, "infera-%s", host);
    }
    if (!inf_io_uri_param(uri, "field", s->field, sizeof s->field)) snprintf(s->field, sizeof s->field, "data");
    if (!inf_io_uri_param(uri, "start", s->start, sizeof s->start)) snprintf(s->start, sizeof s->start, "0");
    s->claim_idle_ms = inf_io_uri_param(uri, "claim_idle_ms", v, sizeof v) ? atoll(v) : 0;
    s->max_delay_ms = o->max_delay_ms;
    s->pending_phase = 1;
    snprintf(s->pending_from, sizeof s->pending_from, "0");
    snprintf(s->claim_cursor, sizeof s->claim_cursor, "0-0");
    s->uri = u;
    if ((st = connect_redis(s, err))) {
        redis_close(s);
        return st;
    }
    *state = s;
    return INF_OK;
}

static inf_status remember(redis_stream *s, const char *id, size_t len) {
    int f, row;
    inf_status st;
    if ((st = inf_record_batch_add_field(s->unacked, "id", &f)) || (st = inf_record_batch_add_row(s->unacked, &row)))
        return st;
    return inf_record_batch_set_string(s->unacked, row, f, id, len);
}

/* One entry [id, [f1, v1, ...] | nil] -> an event. */
static inf_status add_entry(redis_stream *s, inf__stream_events *ev, const redisReply *e) {
    if (e->type == REDIS_REPLY_NIL) return INF_OK; /* XAUTOCLAIM of Redis 6.2: a deleted entry */
    if (e->type != REDIS_REPLY_ARRAY || e->elements < 2 || e->element[0]->type != REDIS_REPLY_STRING)
        return INF_EFORMAT;
    const redisReply *id = e->element[0], *kv = e->element[1];
    inf_status st = remember(s, id->str, id->len);
    if (st) return st;
    if (kv->type != REDIS_REPLY_ARRAY) { /* deleted while pending */
        s->n_deleted++;
        return INF_OK;
    }
    for (size_t i = 0; i + 1 < kv->elements; i += 2)
        if (!strcmp(kv->element[i]->str, s->field))
            return inf__stream_events_add_json(ev, id->str, id->len, kv->element[i + 1]->str, kv->element[i + 1]->len,
                                               "entry");
    for (size_t i = 0; i < kv->elements; i++) { /* names and values: UTF-8 text, or the entry is malformed */
        const redisReply *x = kv->element[i];
        size_t valid = inf__stream_utf8_valid(x->str, x->len);
        if (valid < x->len) {
            char why[700];
            const redisReply *name = kv->element[i - i % 2];
            if (i % 2)
                snprintf(why, sizeof why, "entry %s: the value of field '%.*s' is not UTF-8 text (byte %zu)", id->str,
                         (int)(name->len < 200 ? name->len : 200), name->str, valid);
            else
                snprintf(why, sizeof why, "entry %s: a field name is not UTF-8 text (byte %zu)", id->str, valid);
            return inf__stream_events_add_bad(ev, id->str, id->len, why, x->str, x->len);
        }
    }
    int row, f;
    if ((st = inf_record_batch_add_row(ev->records, &row))) return st;
    for (size_t i = 0; i + 1 < kv->elements; i += 2) {
        if ((st = inf_record_batch_add_field(ev->records, kv->element[i]->str, &f)) ||
            (st = inf_record_batch_set_text(ev->records, row, f, kv->element[i + 1]->str, kv->element[i + 1]->len)))
            return st;
    }
    return inf__stream_events_add_id(ev, id->str, id->len);
}

/* Adds the entries of an array of entries; *n_added, *last_id (may be NULL). */
static inf_status add_entries(redis_stream *s, inf__stream_events *ev, const redisReply *list, int64_t *counter,
                              char *last_id, size_t last_size, inf_error *err) {
    if (list->type != REDIS_REPLY_ARRAY) return inf_error_set(err, INF_EIO, "%s: unexpected reply shape", s->red);
    for (size_t i = 0; i < list->elements; i++) {
        inf_status st = add_entry(s, ev, list->element[i]);
        if (st) return inf_error_set(err, st, "%s: reading an entry: %s", s->red, inf_strerror(st));
        (*counter)++;
        if (last_id && list->element[i]->type == REDIS_REPLY_ARRAY)
            snprintf(last_id, last_size, "%s", list->element[i]->element[0]->str);
    }
    return INF_OK;
}

/* XREADGROUP from id (">" = new, else our PEL after id); *n gets the count. */
static inf_status read_group(redis_stream *s, inf__stream_events *ev, int count, int block_ms, const char *id,
                             size_t *n, inf_error *err) {
    char cnt[16], blk[16];
    snprintf(cnt, sizeof cnt, "%d", count);
    snprintf(blk, sizeof blk, "%d", block_ms > 0 ? block_ms : 1);
    const char *argv[11] = {"XREADGROUP", "GROUP", s->group,  s->consumer, "COUNT", cnt,
                            "BLOCK",      blk,     "STREAMS", s->stream,   id};
    int pending = strcmp(id, ">") != 0;
    /* our own PEL: no BLOCK (it answers at once) */
    const char *pargv[9] = {"XREADGROUP", "GROUP", s->group, s->consumer, "COUNT", cnt, "STREAMS", s->stream, id};
    redisReply *r = pending ? redisCommandArgv(s->c, 9, pargv, NULL) : redisCommandArgv(s->c, 11, argv, NULL);
    *n = 0;
    if (!r || r->type == REDIS_REPLY_ERROR) return reply_error(s, r, "XREADGROUP", err);
    inf_status st = INF_OK;
    if (r->type == REDIS_REPLY_ARRAY && r->elements > 0 && r->element[0]->type == REDIS_REPLY_ARRAY &&
        r->element[0]->elements == 2) {
        const redisReply *list = r->element[0]->element[1];
        *n = list->type == REDIS_REPLY_ARRAY ? list->elements : 0;
        st = pending ? add_entries(s, ev, list, &s->n_pending, s->pending_from, sizeof s->pending_from, err)
                     : add_entries(s, ev, list, &s->n_new, NULL, 0, err);
    }
    freeReplyObject(r);
    return st;
}

static inf_status claim_stale(redis_stream *s, inf__stream_events *ev, int count, inf_error *err) {
    int64_t now = inf__stream_now_ms(), every = s->claim_idle_ms / 2 > 1000 ? s->claim_idle_ms / 2 : 1000;
    if (s->claim_idle_ms <= 0 || now - s->last_claim_ms < every || count <= 0) return INF_OK;
    s->last_claim_ms = now;
    redisReply *r = redisCommand(s->c, "XAUTOCLAIM %s %s %s %lld %s COUNT %d", s->stream, s->group, s->consumer,
                                 (long long)s->claim_idle_ms, s->claim_cursor, count);
    if (!r || r->type == REDIS_REPLY_ERROR) return reply_error(s, r, "XAUTOCLAIM", err);
    inf_status st = INF_OK;
    if (r->type == REDIS_REPLY_ARRAY && r->elements >= 2 && r->element[0]->type == REDIS_REPLY_STRING) {
        snprintf(s->claim_cursor, sizeof s->claim_cursor, "%s", r->element[0]->str);
        st = add_entries(s, ev, r->element[1], &s->n_claimed, NULL, 0, err);
    }
    freeReplyObject(r);
    return st;
}

/* After a lost connection: reconnects (every 0.5 s, for at most RETRY_S),
 * then reads this consumer's pending list again, which holds any entry whose
 * XREADGROUP reply was lost with the connection. */
static inf_status reconnect(redis_stream *s, const inf_error *why, inf_error *err) {
    fprintf(stderr, "infera stream: %s; reconnecting\n", why->message);
    int64_t until = inf__stream_now_ms() + RETRY_S * 1000;
    inf_error e;
    while (!inf__stream_stopping()) {
        if (s->c) redisFree(s->c);
        s->c = NULL;
        if (connect_redis(s, &e) == INF_OK) {
            s->n_reconnects++;
            s->pending_phase = 1;
            snprintf(s->pending_from, sizeof s->pending_from, "0");
            fprintf(stderr, "infera stream: %s: reconnected\n", s->red);
            return INF_OK;
        }
        if (inf__stream_now_ms() > until) break;
        usleep(500000);
    }
    *err = inf__stream_stopping() ? *why : e;
    return err->status ? err->status : INF_EIO;
}

static inf_status next_events(redis_stream *s, inf__stream_events *ev, int max, inf_error *err);

static inf_status redis_next(void *state, inf__stream_events *ev, int max, int *eof, inf_error *err) {
    redis_stream *s = state;
    s->conn_lost = 0;
    inf_status st = next_events(s, ev, max, err);
    return st && s->conn_lost ? reconnect(s, err, err) : st;
}

static inf_status next_events(redis_stream *s, inf__stream_events *ev, int max, inf_error *err) {
    size_t n;
    inf_status st;
    /* claimed entries join our PEL: claim only once the PEL was read through */
    if (!s->pending_phase && (st = claim_stale(s, ev, max, err))) return st;
    if (s->pending_phase) {
        int room = max - inf__stream_events_count(ev);
        if (room <= 0) return INF_OK;
        if ((st = read_group(s, ev, room, 0, s->pending_from, &n, err))) return st;
        if (n == 0) s->pending_phase = 0;
        return INF_OK;
    }
    int64_t first = inf__stream_events_count(ev) ? inf__stream_now_ms() : -1;
    while (!inf__stream_stopping()) {
        int have = inf__stream_events_count(ev);
        if (have >= max) break;
        int64_t now = inf__stream_now_ms();
        int block = have == 0 ? POLL_MS : (int)(first + s->max_delay_ms - now);
        if (have > 0 && block <= 0) break;
        if ((st = read_group(s, ev, max - have, block, ">", &n, err))) return st;
        if (n == 0) break; /* timed out: idle, or the delay is over */
        if (first < 0) first = inf__stream_now_ms();
    }
    return INF_OK;
}

static inf_status redis_ack(void *state, inf_error *err) {
    redis_stream *s = state;
    int n = inf_record_batch_n_rows(s->unacked);
    for (int from = 0; from < n; from += ACK_CHUNK) {
        int k = n - from < ACK_CHUNK ? n - from : ACK_CHUNK;
        const char *argv[3 + ACK_CHUNK];
        size_t argl[3 + ACK_CHUNK];
        argv[0] = "XACK";
        argv[1] = s->stream;
        argv[2] = s->group;
        for (int i = 0; i < 3; i++) argl[i] = strlen(argv[i]);
        for (int i = 0; i < k; i++) {
            const inf_value *v = inf_record_batch_get(s->unacked, from + i, 0);
            argv[3 + i] = v->u.s.ptr;
            argl[3 + i] = v->u.s.len;
        }
        redisReply *r = redisCommandArgv(s->c, 3 + k, argv, argl);
        if (!r || r->type == REDIS_REPLY_ERROR) return reply_error(s, r, "XACK", err);
        s->n_acked += r->type == REDIS_REPLY_INTEGER ? r->integer : 0;
        freeReplyObject(r);
    }
    inf_record_batch_clear(s->unacked);
    return INF_OK;
}

static void redis_describe(void *state, char *buf, size_t size) {
    redis_stream *s = state;
    snprintf(buf, size,
             "redis stream %s group %s consumer %s: %lld new, %lld redelivered from the pending list, %lld claimed, "
             "%lld deleted, %lld acknowledged, %lld reconnects",
             s->stream, s->group, s->consumer, (long long)s->n_new, (long long)s->n_pending, (long long)s->n_claimed,
             (long long)s->n_deleted, (long long)s->n_acked, (long long)s->n_reconnects);
}

/* buffered: NULL -- an entry read but not acknowledged stays in the group's PEL */
const inf__stream_source_type inf__stream_redis_source = {"redis",     redis_open,     redis_next, redis_ack,
                                                          redis_close, redis_describe, NULL};
