/*
 * source_mqtt.c -- `mqtt://[USER:PASSWORD@]HOST[:PORT]/TOPIC` stream source:
 * a QoS 1 subscription through libmosquitto; each message payload is one
 * JSON object = one event.
 *
 * Parameters: client_id=ID (default: --consumer, else infera-<hostname>),
 * qos=0|1|2 (default 1).  The session is persistent (clean_session false):
 * while the consumer is down the broker keeps the QoS>0 messages of its
 * subscription and delivers them when the same client id reconnects.  TOPIC
 * may hold the + and # wildcards.
 *
 * The network loop runs on the runner's thread (mosquitto_loop inside
 * next()), so the socket is not read while a micro-batch is being scored:
 * back-pressure is TCP's, and at most what one loop call reads waits in the
 * queue here.  A lost connection is retried (mosquitto_reconnect) for 60 s,
 * then the run fails.
 *
 * ACKNOWLEDGEMENT.  libmosquitto sends the PUBACK of a QoS 1 message when it
 * receives it, before the application sees it; it has no manual ack.  So a
 * message received but not yet written when the process is killed (-9) is
 * lost; SIGTERM/SIGINT score the queue first (buffered()), and a run that ends
 * (--max-events, an error) with messages still queued says how many it dropped.  ack()
 * has nothing to do.
 * The event id is CLIENT_ID:START_MS:N (MQTT messages carry no stable id):
 * give the records an id column (--id-column or the spec's id input) to make
 * the outputs idempotent by key.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/io_int.h"
#include "stream/stream_int.h"

#ifdef INFERA_WITH_MQTT
#include <errno.h>
#include <pthread.h>
#include <time.h>
#include <unistd.h>

#include <mosquitto.h>

#define POLL_MS 200
#define RETRY_S 60

typedef struct msg {
    struct msg *next;
    size_t len;
    char data[];
} msg;

typedef struct mqtt_stream {
    struct mosquitto *m;
    char topic[512], client_id[256], red[512];
    int qos, max_delay_ms;
    int connect_rc, subscribed, oom;
    msg *head, *tail;
    int64_t n_queued; /* messages in head..tail */
    int64_t start_ms, seq, n_received, n_reconnects, down_since_ms;
} mqtt_stream;

static void on_connect(struct mosquitto *m, void *obj, int rc) {
    mqtt_stream *s = obj;
    s->connect_rc = rc;
    if (rc == 0) mosquitto_subscribe(m, NULL, s->topic, s->qos);
}

static void on_subscribe(struct mosquitto *m, void *obj, int mid, int n, const int *granted) {
    mqtt_stream *s = obj;
    s->subscribed = n > 0 && granted[0] <= 2 ? 1 : -1;
}

static void on_message(struct mosquitto *m, void *obj, const struct mosquitto_message *mm) {
    mqtt_stream *s = obj;
    size_t len = mm->payloadlen > 0 ? (size_t)mm->payloadlen : 0;
    msg *x = malloc(sizeof *x + len + 1);
    if (!x) {
        s->oom = 1;
        return;
    }
    x->next = NULL;
    x->len = len;
    if (len) memcpy(x->data, mm->payload, len);
    x->data[len] = 0;
    if (s->tail)
        s->tail->next = x;
    else
        s->head = x;
    s->tail = x;
    s->n_queued++;
    s->n_received++;
}

static void mqtt_close(void *state) {
    mqtt_stream *s = state;
    if (!s) return;
    if (s->n_queued > 0)
        fprintf(stderr,
                "infera stream: %s: %lld message(s) received but not scored (the run ended at --max-events or "
                "on an error); the broker will not deliver them again (QoS 1 is acknowledged on receipt)\n",
                s->red, (long long)s->n_queued);
    if (s->m) {
        mosquitto_disconnect(s->m);
        mosquitto_destroy(s->m);
    }
    while (s->head) {
        msg *x = s->head;
        s->head = x->next;
        free(x);
    }
    free(s);
}

static inf_status failf(inf_error *err, inf_status st, const char *red, const char *what, const char *why) {
    inf_error_set(err, st, "%s: %s%s", red, what, why);
    return st;
}

/* Runs the loop until subscribed (SUBACK), refused, or 10 s. */
static inf_status wait_subscribed(mqtt_stream *s, inf_error *err) {
    int64_t until = inf__stream_now_ms() + 10000;
    while (s->subscribed == 0 && s->connect_rc <= 0 && inf__stream_now_ms() < until) {
        int rc = mosquitto_loop(s->m, 100, 1);
        if (rc != MOSQ_ERR_SUCCESS) return failf(err, INF_EIO, s->red, "connection lost: ", mosquitto_strerror(rc));
    }
    if (s->connect_rc > 0)
        return failf(err, INF_EAUTH, s->red, "connection refused: ", mosquitto_connack_string(s->connect_rc));
    if (s->subscribed != 1) return failf(err, INF_EIO, s->red, "the broker did not accept the subscription", "");
    return INF_OK;
}

static inf_status mqtt_open(const char *uri, const inf__stream_source_options *o, void **state, inf_error *err) {
    inf_net_uri u;
    inf_status st = inf_io_parse_net_uri(uri, 1883, &u, err);
    if (st) return st;
    mqtt_stream *s = calloc(1, sizeof *s);
    if (!s) return failf(err, INF_ENOMEM, "mqtt source", ": out of memory", "");
    inf_io_redact_uri(uri, s->red, sizeof s->red);
    char v[16], host[200];
    s->qos = inf_io_uri_param(uri, "qos", v, sizeof v) ? atoi(v) : 1;
    s->max_delay_ms = o->max_delay_ms;
    s->connect_rc = -1;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    s->start_ms = (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
    snprintf(s->topic, sizeof s->topic, "%s", u.path);
    if (o->consumer)
        snprintf(s->client_id, sizeof s->client_id, "%s", o->consumer);
    else if (!inf_io_uri_param(uri, "client_id", s->client_id, sizeof s->client_id)) {
        if (gethostname(host, sizeof host)) snprintf(host, sizeof host, "localhost");
        host[sizeof host - 1] = 0;
        snprintf(s->client_id, sizeof s->client_id, "infera-%s", host);
    }
    if (!s->topic[0] || s->qos < 0 || s->qos > 2) {
        st = failf(err, INF_EINVAL, s->red, "needs a topic (mqtt://HOST:PORT/TOPIC) and qos 0, 1 or 2", "");
        goto fail;
    }
    /* a persistent session (clean_session false): the broker keeps QoS 1 messages while we are away */
    if ((st = inf__io_mqtt_connect(&u, s->client_id, 0, s, s->red, &s->m, err))) goto fail;
    mosquitto_connect_callback_set(s->m, on_connect);
    mosquitto_subscribe_callback_set(s->m, on_subscribe);
    mosquitto_message_callback_set(s->m, on_message);
    if ((st = wait_subscribed(s, err))) goto fail;
    *state = s;
    return INF_OK;
fail:
    mqtt_close(s);
    return st;
}

/* Moves queued messages into ev, at most max events in all. */
static inf_status drain(mqtt_stream *s, inf__stream_events *ev, int max) {
    while (s->head && inf__stream_events_count(ev) < max) {
        msg *x = s->head;
        char id[320];
        int n = snprintf(id, sizeof id, "%s:%lld:%lld", s->client_id, (long long)s->start_ms, (long long)++s->seq);
        inf_status st = inf__stream_events_add_json(ev, id, (size_t)n, x->data, x->len, "message");
        if (st) return st;
        s->head = x->next;
        if (!s->head) s->tail = NULL;
        s->n_queued--;
        free(x);
    }
    return INF_OK;
}

/* After a loop error: reconnect, giving up after RETRY_S seconds down. */
static inf_status recover(mqtt_stream *s, int rc, inf_error *err) {
    int64_t now = inf__stream_now_ms();
    if (!s->down_since_ms) s->down_since_ms = now;
    if (now - s->down_since_ms > RETRY_S * 1000)
        return failf(err, INF_EIO, s->red, "connection lost for 60 s: ", mosquitto_strerror(rc));
    usleep(200000);
    if (mosquitto_reconnect(s->m) == MOSQ_ERR_SUCCESS) {
        s->n_reconnects++;
        s->down_since_ms = 0;
    }
    return INF_OK;
}

static inf_status mqtt_next(void *state, inf__stream_events *ev, int max, int *eof, inf_error *err) {
    mqtt_stream *s = state;
    int64_t first = -1;
    for (;;) {
        if (drain(s, ev, max) || s->oom) return failf(err, INF_ENOMEM, s->red, "out of memory", "");
        int n = inf__stream_events_count(ev);
        if (n >= max || inf__stream_stopping()) break;
        int64_t now = inf__stream_now_ms();
        if (n > 0 && first < 0) first = now;
        int wait = n == 0 ? POLL_MS : (int)(first + s->max_delay_ms - now);
        if (n > 0 && wait <= 0) break;
        int64_t before = s->n_received;
        int rc = mosquitto_loop(s->m, wait, 1);
        if (rc != MOSQ_ERR_SUCCESS) {
            inf_status st = recover(s, rc, err);
            if (st) return st;
            if (n == 0) break;
        }
        if (n == 0 && s->n_received == before) break; /* idle */
    }
    return INF_OK;
}

static int64_t mqtt_buffered(void *state) { return ((const mqtt_stream *)state)->n_queued; }

static void mqtt_describe(void *state, char *buf, size_t size) {
    mqtt_stream *s = state;
    snprintf(buf, size, "mqtt topic %s client %s: %lld messages received, %lld reconnects", s->topic, s->client_id,
             (long long)s->n_received, (long long)s->n_reconnects);
}

#else /* !INFERA_WITH_MQTT */

static inf_status mqtt_open(const char *uri, const inf__stream_source_options *o, void **state, inf_error *err) {
    char red[512];
    inf_error_set(err, INF_EUNSUPPORTED,
                  "%s: this infera was built without MQTT support (install libmosquitto-dev and re-run cmake)",
                  inf_io_redact_uri(uri, red, sizeof red));
    return INF_EUNSUPPORTED;
}
static inf_status mqtt_next(void *state, inf__stream_events *ev, int max, int *eof, inf_error *err) {
    return INF_EUNSUPPORTED;
}
static void mqtt_close(void *state) {}
#define mqtt_describe NULL
#define mqtt_buffered NULL

#endif

const inf__stream_source_type inf__stream_mqtt_source = {"mqtt",     mqtt_open,     mqtt_next,    NULL,
                                                         mqtt_close, mqtt_describe, mqtt_buffered};
