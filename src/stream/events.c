/*
 * events.c -- the micro-batch of events a stream source hands the runner
 * (stream_int.h): the well-formed records, their event ids (a parallel
 * one-column batch) and the malformed events with their reasons.  All three
 * are record batches, so their memory is the batches' arenas, reused from one
 * micro-batch to the next.  Callers: the sources (source_*.c), runner.c.
 */
#include <stdio.h>
#include <string.h>

#include "stream/stream_int.h"

#define BAD_PAYLOAD_MAX 1000

/* The length of the valid UTF-8 (RFC 3629: no overlongs, no surrogates, at
 * most U+10FFFF) at the start of s; len when all of it is. */
size_t inf__stream_utf8_valid(const char *s, size_t len) {
    const unsigned char *p = (const unsigned char *)s;
    size_t i = 0;
    while (i < len) {
        unsigned c = p[i];
        size_t n = c < 0x80 ? 1 : (c & 0xe0) == 0xc0 ? 2 : (c & 0xf0) == 0xe0 ? 3 : (c & 0xf8) == 0xf0 ? 4 : 0;
        if (!n || i + n > len || (n == 2 && c < 0xc2) || (n == 4 && c > 0xf4)) return i;
        for (size_t k = 1; k < n; k++)
            if ((p[i + k] & 0xc0) != 0x80) return i;
        if ((n == 3 && c == 0xe0 && p[i + 1] < 0xa0) || (n == 3 && c == 0xed && p[i + 1] > 0x9f) ||
            (n == 4 && c == 0xf0 && p[i + 1] < 0x90) || (n == 4 && c == 0xf4 && p[i + 1] > 0x8f))
            return i;
        i += n;
    }
    return len;
}

/* Up to max bytes of s as valid UTF-8 into out (max bytes): every byte that
 * is not part of a valid sequence becomes '?', and a sequence cut by max is
 * dropped.  Returns the length. */
static size_t utf8_clean(const char *s, size_t len, char *out, size_t max) {
    size_t o = 0, i = 0;
    while (i < len && o < max) {
        size_t ok = inf__stream_utf8_valid(s + i, len - i);
        size_t take = ok < max - o ? ok : max - o;
        /* do not cut a multi-byte sequence */
        while (take > 0 && take < ok && ((unsigned char)s[i + take] & 0xc0) == 0x80) take--;
        memcpy(out + o, s + i, take);
        o += take;
        i += take;
        if (take < ok) break; /* out is full */
        if (i < len && o < max) out[o++] = '?', i++;
    }
    return o;
}

inf_status inf__stream_events_init(inf__stream_events *ev) {
    memset(ev, 0, sizeof *ev);
    if (inf_record_batch_new(&ev->records) || inf_record_batch_new(&ev->ids) || inf_record_batch_new(&ev->bad)) {
        inf__stream_events_deinit(ev);
        return INF_ENOMEM;
    }
    return INF_OK;
}

void inf__stream_events_deinit(inf__stream_events *ev) {
    inf_record_batch_free(ev->records);
    inf_record_batch_free(ev->ids);
    inf_record_batch_free(ev->bad);
    memset(ev, 0, sizeof *ev);
}

void inf__stream_events_clear(inf__stream_events *ev) {
    /* records may change schema between micro-batches (JSON events) */
    inf_record_batch_reset(ev->records);
    inf_record_batch_clear(ev->ids);
    inf_record_batch_clear(ev->bad);
}

int inf__stream_events_count(const inf__stream_events *ev) {
    return inf_record_batch_n_rows(ev->records) + inf_record_batch_n_rows(ev->bad);
}

inf_status inf__stream_events_add_id(inf__stream_events *ev, const char *id, size_t id_len) {
    int f, row;
    inf_status st;
    if ((st = inf_record_batch_add_field(ev->ids, "event_id", &f)) || (st = inf_record_batch_add_row(ev->ids, &row)))
        return st;
    return inf_record_batch_set_string(ev->ids, row, f, id, id_len);
}

inf_status inf__stream_events_add_bad(inf__stream_events *ev, const char *id, size_t id_len, const char *reason,
                                      const char *payload, size_t len) {
    int f_id, f_reason, f_payload, row;
    inf_status st;
    if ((st = inf_record_batch_add_field(ev->bad, "event_id", &f_id)) ||
        (st = inf_record_batch_add_field(ev->bad, "reason", &f_reason)) ||
        (st = inf_record_batch_add_field(ev->bad, "payload", &f_payload)) ||
        (st = inf_record_batch_add_row(ev->bad, &row)))
        return st;
    if ((st = inf_record_batch_set_string(ev->bad, row, f_id, id, id_len)) ||
        (st = inf_record_batch_set_string(ev->bad, row, f_reason, reason, strlen(reason))))
        return st;
    if (payload) { /* dead letters go to any sink, PostgreSQL's text columns too: valid UTF-8 only */
        char clean[BAD_PAYLOAD_MAX];
        st = inf_record_batch_set_string(ev->bad, row, f_payload, clean, utf8_clean(payload, len, clean, sizeof clean));
    }
    return st;
}

inf_status inf__stream_events_add_json(inf__stream_events *ev, const char *id, size_t id_len, const char *json,
                                       size_t len, const char *what) {
    inf_error e;
    size_t valid = inf__stream_utf8_valid(json, len);
    if (valid < len) { /* JSON is UTF-8 (RFC 8259); text sinks would refuse the rest, for ever */
        char reason[300];
        snprintf(reason, sizeof reason, "%s %.*s: not UTF-8 text (byte %zu)", what, (int)(id_len < 200 ? id_len : 200),
                 id, valid);
        return inf__stream_events_add_bad(ev, id, id_len, reason, json, len);
    }
    inf_status st = inf_record_batch_add_json(ev->records, json, len, &e);
    if (st == INF_ENOMEM) return st;
    if (st) {
        char reason[INF_ERROR_MESSAGE_MAX + 200];
        snprintf(reason, sizeof reason, "%s %.*s: %s", what, (int)id_len, id, e.message);
        return inf__stream_events_add_bad(ev, id, id_len, reason, json, len);
    }
    return inf__stream_events_add_id(ev, id, id_len);
}
