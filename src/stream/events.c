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
    if (payload)
        st = inf_record_batch_set_string(ev->bad, row, f_payload, payload,
                                         len > BAD_PAYLOAD_MAX ? BAD_PAYLOAD_MAX : len);
    return st;
}

inf_status inf__stream_events_add_json(inf__stream_events *ev, const char *id, size_t id_len, const char *json,
                                       size_t len, const char *what) {
    inf_error e;
    inf_status st = inf_record_batch_add_json(ev->records, json, len, &e);
    if (st == INF_ENOMEM) return st;
    if (st) {
        char reason[INF_ERROR_MESSAGE_MAX + 200];
        snprintf(reason, sizeof reason, "%s %.*s: %s", what, (int)id_len, id, e.message);
        return inf__stream_events_add_bad(ev, id, id_len, reason, json, len);
    }
    return inf__stream_events_add_id(ev, id, id_len);
}
