/*
 * stream_int.h -- the pieces of `infera stream` (shared/DESIGN.md §1, §4, §6;
 * docs/stream.md).
 *
 *   cmd_stream.c     options, opening model/source/sinks, audit, summary
 *   runner.c         the loop: next micro-batch -> pipeline -> engine ->
 *                    output + dead letters -> commit sinks -> ack source;
 *                    SIGTERM/SIGINT drain; progress lines
 *   events.c         the micro-batch of events a source hands the runner
 *   source_redis.c   redis://H:P/STREAM?group=G  consumer group (XREADGROUP,
 *                    own pending entries first, XAUTOCLAIM, XACK)
 *   source_mqtt.c    mqtt://H:P/TOPIC  QoS 1 subscription (libmosquitto)
 *   source_jsonl.c   jsonl:-  / jsonl:PATH  one JSON object per line
 *
 * AT-LEAST-ONCE.  The runner handles one micro-batch at a time: it writes the
 * outputs and dead letters of every event of the batch, commits the sinks
 * (durable), and only then calls the source's ack(), which acknowledges every
 * event next() returned so far.  A crash before the ack leaves the events
 * unacknowledged, so they are delivered again; the sinks are idempotent
 * (tables upsert by key, the Redis sink skips a key it has seen), so a
 * replay does not duplicate outputs.
 *
 * Sinks are the io/ kinds (src/io), shared with `infera batch`; sources are
 * here because a stream source hands out event ids and acknowledges them.
 */
#ifndef INF_STREAM_INT_H
#define INF_STREAM_INT_H

#include <signal.h>
#include <stdint.h>

#include "runtime/model.h"
#include "infera/io.h"
#include "infera/pipeline.h"

/* ---- a micro-batch of events (events.c) ---- */
typedef struct inf__stream_events {
    inf_record_batch *records; /* well-formed events, one row each */
    inf_record_batch *ids;     /* field 0 "event_id": the id of records' row i */
    inf_record_batch *bad;     /* malformed events: event_id, reason, payload */
} inf__stream_events;

inf_status inf__stream_events_init(inf__stream_events *ev);
void inf__stream_events_deinit(inf__stream_events *ev);
void inf__stream_events_clear(inf__stream_events *ev);
/* Events in the batch, good and bad. */
int inf__stream_events_count(const inf__stream_events *ev);
/* Adds one event from its JSON payload: a row of records (+ its id), or, when
 * the payload is not UTF-8 text holding a JSON object, a row of bad with the
 * reason.  Only INF_ENOMEM fails. */
inf_status inf__stream_events_add_json(inf__stream_events *ev, const char *id, size_t id_len, const char *json,
                                       size_t len, const char *what);
/* The length of the valid UTF-8 at the start of s (len when all of it is). */
size_t inf__stream_utf8_valid(const char *s, size_t len);
/* Adds the id of the row just added to records. */
inf_status inf__stream_events_add_id(inf__stream_events *ev, const char *id, size_t id_len);
/* Adds a malformed event: id, reason and (up to 1000 bytes of) its payload,
 * as valid UTF-8 (bytes that are not become '?'). */
inf_status inf__stream_events_add_bad(inf__stream_events *ev, const char *id, size_t id_len, const char *reason,
                                      const char *payload, size_t len);

/* ---- sources ---- */
typedef struct inf__stream_source_options {
    int max_batch;        /* events per micro-batch */
    int max_delay_ms;     /* after the first event, wait at most this long for more */
    const char *consumer; /* consumer name / client id override (may be NULL) */
} inf__stream_source_options;

/* next() adds at most `max` events to ev (cleared by the caller).  It waits
 * up to a poll interval (<= 250 ms, less when inf__stream_stopping()) for the
 * first event, then up to max_delay_ms for more, so an empty batch is a
 * normal answer.  *eof = 1 when the source can have no more events (end of a
 * file or of stdin).  Errors are fatal for the run (connection lost, ...).
 * ack() acknowledges every event next() returned so far. */
typedef struct inf__stream_source_type {
    const char *scheme;
    inf_status (*open)(const char *uri, const inf__stream_source_options *o, void **state, inf_error *err);
    inf_status (*next)(void *state, inf__stream_events *ev, int max, int *eof, inf_error *err);
    inf_status (*ack)(void *state, inf_error *err);
    void (*close)(void *state);
    /* one line for the summary (counters the source keeps), may be NULL */
    void (*describe)(void *state, char *buf, size_t size);
    /* events already taken from the transport but not yet returned by next() (MQTT messages the
     * broker counts as delivered, complete lines read from a pipe): the runner drains them before
     * it stops on SIGTERM/SIGINT, so a stop loses nothing.  NULL = never any. */
    int64_t (*buffered)(void *state);
} inf__stream_source_type;

extern const inf__stream_source_type inf__stream_redis_source, inf__stream_mqtt_source, inf__stream_jsonl_source;

/* The source kind of uri (by scheme), or NULL. */
const inf__stream_source_type *inf__stream_source_find(const char *uri);

/* ---- the runner (runner.c) ---- */

/* Process-wide: set by SIGTERM/SIGINT (and by the runner at --max-events);
 * sources poll it to return early.  inf__stream_install_signals() installs
 * the handlers (no SA_RESTART, so blocking reads return EINTR). */
int inf__stream_stopping(void);
void inf__stream_install_signals(void);

/* CPU seconds of the process, every thread (batch/progress.c: the same
 * measure batch's summary reports). */
double inf__cpu_seconds(void);

/* Milliseconds of a monotonic clock. */
int64_t inf__stream_now_ms(void);

typedef struct inf__stream_stats {
    int64_t events, batches, scored, written, rejected, malformed;
    double wall_s, busy_s;
} inf__stream_stats;

typedef struct inf__stream_config {
    inf__rt_model *model; /* NULL: --no-score (records are forwarded as they are) */
    const inf__stream_source_type *source_type;
    void *source;
    inf_sink *sink;
    inf_sink *errors;      /* may be NULL: dead letters are reported and counted */
    const char *id_column; /* the record's id column, or NULL */
    const char *input_uri; /* redacted, for messages */
    int n_threads;
    int max_batch;
    int64_t max_events; /* 0 = no limit */
    int progress_ms;    /* a progress line on stderr this often; 0 = none */
    struct inf__mon_log *log; /* may be NULL: --log-predictions (monitor/predlog.h) */
    struct inf__mon_online *online; /* may be NULL: --baseline drift windows (monitor/online.h) */
    struct inf__stream_alerts *alerts; /* may be NULL: --monitor RULES (alerts.c) */
} inf__stream_config;

struct cJSON;
/* A drift window (monitor/online.h's JSON, freed here) as a {"event":"drift",...}
 * line on stderr, then checked against the --monitor rules (alerts may be NULL). */
void inf__stream_drift_event(struct inf__stream_alerts *alerts, struct cJSON *drift);

/* ---- alerts.c: --monitor RULES --------------------------------------------- */
typedef struct inf__stream_alerts inf__stream_alerts;
/* Reads the rules; rollbacks go through m's registry (a file model's are
 * refused in the alert).  INF_EIO, INF_EFORMAT (the file), INF_ENOMEM. */
inf_status inf__stream_alerts_open(const char *path, inf__rt_model *m, const char *log_uri, inf__stream_alerts **out,
                                   inf_error *err);
void inf__stream_alerts_free(inf__stream_alerts *a);
/* 1 when a rule is a drift rule (it needs --baseline's windows). */
int inf__stream_alerts_need_windows(const inf__stream_alerts *a);
/* The quality rules (alerts.c QUALITY): at most every 10 s, or now when
 * final (the end of the run, after the log is drained).  a may be NULL. */
void inf__stream_alerts_quality(inf__stream_alerts *a, int final);
/* Steps every drift rule with one reported window (monitor/rules.h) and
 * runs the actions of a rule that starts firing: an {"event":"alert",...}
 * line, the log line, rollback, webhook (monitor/actions.h). */
void inf__stream_alerts_check(inf__stream_alerts *a, const struct cJSON *drift);
/* Alerts fired so far. */
uint64_t inf__stream_alerts_fired(const inf__stream_alerts *a);

/* Runs until eof, --max-events, a signal (drain: the batch in hand is
 * finished and acknowledged) or a fatal error (err says which; nothing after
 * the last ack is acknowledged). */
inf_status inf__stream_run(const inf__stream_config *cfg, inf__stream_stats *stats, inf_error *err);

#endif /* INF_STREAM_INT_H */
