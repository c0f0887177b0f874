/*
 * mqtt.c -- `mqtt://[USER:PASSWORD@]HOST[:PORT]/TOPIC` sinks: each record is
 * published as one JSON object (inf_record_batch_row_to_json) to TOPIC,
 * through libmosquitto (Debian libmosquitto-dev).
 *
 * Parameters: `?qos=0|1|2` (default 1), `&retain=1`, `&client_id=ID`
 * (default: a random id, clean session).  The network loop runs on
 * libmosquitto's own thread (mosquitto_loop_start); it reconnects by itself
 * and resends unacknowledged QoS>0 messages.  commit() waits until the broker
 * has acknowledged every message published so far (on_publish: PUBACK for
 * QoS 1, PUBCOMP for QoS 2), at most 30 s, so a stream runner acknowledges
 * its input only after the broker has its output.  MQTT has no way to
 * deduplicate on the broker: the key column travels inside each message, for
 * consumers to deduplicate a replay.
 *
 * Built only with libmosquitto (CMake defines INFERA_WITH_MQTT); without it
 * the scheme exists and open() says how to get it.
 */
#include <stdlib.h>
#include <string.h>

#include "io/io_int.h"

#ifdef INFERA_WITH_MQTT
#include <errno.h>
#include <pthread.h>
#include <time.h>

#include <mosquitto.h>

#define MQTT_WAIT_S 30

static pthread_once_t mqtt_once = PTHREAD_ONCE_INIT; /* process-wide: mosquitto_lib_init */
static void mqtt_lib_init(void) { mosquitto_lib_init(); }

typedef struct mqtt_sink {
    struct mosquitto *m;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int64_t n_sent, n_acked;
    int connect_rc; /* -1 until CONNACK */
    int loop_started;
    int qos, retain;
    char topic[512];
    char red[512];
    inf__io_buf json;
} mqtt_sink;

static void on_connect(struct mosquitto *m, void *obj, int rc) {
    mqtt_sink *s = obj;
    pthread_mutex_lock(&s->mu);
    s->connect_rc = rc;
    pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->mu);
}

static void on_publish(struct mosquitto *m, void *obj, int mid) {
    mqtt_sink *s = obj;
    pthread_mutex_lock(&s->mu);
    s->n_acked++;
    pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->mu);
}

/* Waits (mu held) until done(s) or MQTT_WAIT_S; 1 when done. */
static int wait_for(mqtt_sink *s, int (*done)(const mqtt_sink *)) {
    struct timespec dl;
    clock_gettime(CLOCK_REALTIME, &dl);
    dl.tv_sec += MQTT_WAIT_S;
    while (!done(s))
        if (pthread_cond_timedwait(&s->cv, &s->mu, &dl) == ETIMEDOUT) return done(s);
    return 1;
}
static int connected_or_refused(const mqtt_sink *s) { return s->connect_rc >= 0; }
static int all_acked(const mqtt_sink *s) { return s->n_acked >= s->n_sent; }

static inf_status mqtt_sink_commit(void *state, inf_error *err) {
    mqtt_sink *s = state;
    pthread_mutex_lock(&s->mu);
    int ok = wait_for(s, all_acked);
    int64_t missing = s->n_sent - s->n_acked;
    pthread_mutex_unlock(&s->mu);
    if (ok) return INF_OK;
    return inf_error_set(err, INF_EIO, "%s: the broker did not acknowledge %lld message(s) within %d s", s->red,
                        (long long)missing, MQTT_WAIT_S);
}

static void free_sink(mqtt_sink *s) {
    if (s->m) {
        mosquitto_disconnect(s->m);
        if (s->loop_started) mosquitto_loop_stop(s->m, false);
        mosquitto_destroy(s->m);
    }
    pthread_mutex_destroy(&s->mu);
    pthread_cond_destroy(&s->cv);
    free(s->json.p);
    free(s);
}

static inf_status mqtt_sink_close(void *state, inf_error *err) {
    mqtt_sink *s = state;
    if (!s) return INF_OK;
    inf_status st = mqtt_sink_commit(s, err);
    free_sink(s);
    return st;
}

inf_status inf__io_mqtt_connect(const inf_net_uri *u, const char *client_id, int clean_session, void *obj,
                                const char *who, struct mosquitto **out, inf_error *err) {
    pthread_once(&mqtt_once, mqtt_lib_init);
    struct mosquitto *m = mosquitto_new(client_id, clean_session, obj);
    *out = m;
    if (!m) return inf_error_set(err, INF_ENOMEM, "%s: cannot create an MQTT client", who);
    if (u->user[0]) mosquitto_username_pw_set(m, u->user, u->password[0] ? u->password : NULL);
    int rc = mosquitto_connect(m, u->host, u->port, 60);
    if (rc != MOSQ_ERR_SUCCESS)
        return inf_error_set(err, INF_EIO, "%s: cannot connect: %s", who,
                            rc == MOSQ_ERR_ERRNO ? strerror(errno) : mosquitto_strerror(rc));
    return INF_OK;
}

static inf_status start_client(mqtt_sink *s, const inf_net_uri *u, const char *client_id, inf_error *err) {
    inf_status st = inf__io_mqtt_connect(u, client_id, 1, s, s->red, &s->m, err);
    if (st) return st;
    mosquitto_connect_callback_set(s->m, on_connect);
    mosquitto_publish_callback_set(s->m, on_publish);
    int rc;
    if ((rc = mosquitto_loop_start(s->m)) != MOSQ_ERR_SUCCESS)
        return inf_error_set(err, INF_EIO, "%s: cannot start the MQTT loop: %s", s->red, mosquitto_strerror(rc));
    s->loop_started = 1;
    pthread_mutex_lock(&s->mu);
    int ok = wait_for(s, connected_or_refused);
    int crc = s->connect_rc;
    pthread_mutex_unlock(&s->mu);
    if (!ok) return inf_error_set(err, INF_EIO, "%s: no CONNACK from the broker within %d s", s->red, MQTT_WAIT_S);
    if (crc) return inf_error_set(err, INF_EAUTH, "%s: connection refused: %s", s->red, mosquitto_connack_string(crc));
    return INF_OK;
}

static inf_status mqtt_sink_open(const char *uri, const char *rest, const inf_sink_options *opts, void **state,
                                 inf_error *err) {
    inf_net_uri u;
    inf_status st = inf_io_parse_net_uri(uri, 1883, &u, err);
    if (st) return st;
    mqtt_sink *s = calloc(1, sizeof *s);
    if (!s) return inf_error_set(err, INF_ENOMEM, "mqtt sink: out of memory");
    pthread_mutex_init(&s->mu, NULL);
    pthread_cond_init(&s->cv, NULL);
    s->connect_rc = -1;
    inf_io_redact_uri(uri, s->red, sizeof s->red);
    char v[256], cid[256];
    s->qos = inf__io_uri_param(rest, "qos", v, sizeof v) ? atoi(v) : 1;
    s->retain = inf__io_uri_param(rest, "retain", v, sizeof v) ? atoi(v) != 0 : 0;
    const char *client_id = inf__io_uri_param(rest, "client_id", cid, sizeof cid);
    if (!u.path[0] || strpbrk(u.path, "+#") || s->qos < 0 || s->qos > 2) {
        st = inf_error_set(err, INF_EINVAL, "%s: needs a topic without wildcards and qos 0, 1 or 2", s->red);
        goto fail;
    }
    snprintf(s->topic, sizeof s->topic, "%s", u.path);
    if ((st = start_client(s, &u, client_id, err))) goto fail;
    *state = s;
    return INF_OK;
fail:
    free_sink(s);
    return st;
}

static inf_status mqtt_sink_write(void *state, const inf_record_batch *b, inf_error *err) {
    mqtt_sink *s = state;
    int n = inf_record_batch_n_rows(b);
    for (int r = 0; r < n; r++) {
        s->json.n = 0;
        if (inf_record_batch_row_to_json(b, r, NULL, inf__io_buf_write, &s->json) || !s->json.p)
            return inf_error_set(err, INF_ENOMEM, "%s: out of memory", s->red);
        pthread_mutex_lock(&s->mu);
        s->n_sent++;
        pthread_mutex_unlock(&s->mu);
        int rc = mosquitto_publish(s->m, NULL, s->topic, (int)s->json.n, s->json.p, s->qos, s->retain != 0);
        if (rc != MOSQ_ERR_SUCCESS && rc != MOSQ_ERR_NO_CONN) {
            pthread_mutex_lock(&s->mu);
            s->n_sent--;
            pthread_mutex_unlock(&s->mu);
            return inf_error_set(err, INF_EIO, "%s: publish failed: %s", s->red, mosquitto_strerror(rc));
        }
    }
    return INF_OK;
}

#else /* !INFERA_WITH_MQTT */

static inf_status mqtt_sink_open(const char *uri, const char *rest, const inf_sink_options *opts, void **state,
                                 inf_error *err) {
    char red[512];
    return inf_error_set(err, INF_EUNSUPPORTED,
                        "%s: this infera was built without MQTT support (install libmosquitto-dev and re-run cmake)",
                        inf_io_redact_uri(uri, red, sizeof red));
}
static inf_status mqtt_sink_write(void *state, const inf_record_batch *b, inf_error *err) { return INF_EUNSUPPORTED; }
static inf_status mqtt_sink_commit(void *state, inf_error *err) { return INF_EUNSUPPORTED; }
static inf_status mqtt_sink_close(void *state, inf_error *err) { return INF_OK; }

#endif

const inf_sink_type inf__io_mqtt_sink = {"mqtt", mqtt_sink_open, mqtt_sink_write, mqtt_sink_commit, mqtt_sink_close};
