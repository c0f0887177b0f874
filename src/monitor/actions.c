/*
 * actions.c -- alert actions (actions.h): a minimal HTTP/1.1 POST over a
 * socket with a deadline (one request, Connection: close), and the alias
 * rollback through the registry API.
 */
#include <errno.h>
#include <math.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "monitor/actions.h"

static int64_t now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Waits for fd to be ready for events until deadline: 0, or -1 on time-out. */
static int wait_fd(int fd, short events, int64_t deadline) {
    for (;;) {
        int64_t left = deadline - now_ms();
        if (left <= 0) return -1;
        struct pollfd p = {.fd = fd, .events = events};
        int n = poll(&p, 1, (int)left);
        if (n > 0) return 0;
        if (n < 0 && errno != EINTR) return -1;
    }
}

static int connect_to(const char *host, const char *port, int64_t deadline) {
    struct addrinfo hints = {0}, *res = NULL;
    hints.ai_socktype = SOCK_STREAM;
    if (getaddrinfo(host, port, &hints, &res)) return -1;
    int fd = -1;
    for (struct addrinfo *a = res; a && fd < 0; a = a->ai_next) {
        fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
        if (fd < 0) continue;
        fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
        int rc = connect(fd, a->ai_addr, a->ai_addrlen);
        int soerr = 0;
        socklen_t sl = sizeof soerr;
        if (rc && (errno != EINPROGRESS || wait_fd(fd, POLLOUT, deadline) ||
                   getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) || soerr)) {
            close(fd);
            fd = -1;
        }
    }
    freeaddrinfo(res);
    return fd;
}

static int send_all(int fd, const char *p, size_t n, int64_t deadline) {
    while (n) {
        ssize_t k = send(fd, p, n, MSG_NOSIGNAL);
        if (k > 0) {
            p += k, n -= (size_t)k;
            continue;
        }
        if (k < 0 && errno != EAGAIN && errno != EINTR) return -1;
        if (wait_fd(fd, POLLOUT, deadline)) return -1;
    }
    return 0;
}

inf_status inf__mon_webhook_post(const char *url, const char *body, int timeout_ms, int *http_status, inf_error *err) {
    *http_status = 0;
    char host[256], port[8] = "80";
    const char *path;
    if (strncmp(url, "http://", 7)) return inf_error_set(err, INF_EINVAL, "webhook %s: only http:// URLs", url);
    const char *h = url + 7, *slash = strchr(h, '/'), *end = slash ? slash : h + strlen(h);
    const char *colon = memchr(h, ':', (size_t)(end - h));
    size_t hn = (size_t)((colon ? colon : end) - h);
    if (hn == 0 || hn >= sizeof host || (colon && ((size_t)(end - colon - 1) >= sizeof port || end == colon + 1)))
        return inf_error_set(err, INF_EINVAL, "webhook %s: bad host or port", url);
    memcpy(host, h, hn);
    host[hn] = 0;
    if (colon) {
        memcpy(port, colon + 1, (size_t)(end - colon - 1));
        port[end - colon - 1] = 0;
    }
    path = slash ? slash : "/";
    int64_t deadline = now_ms() + (timeout_ms > 0 ? timeout_ms : 2000);
    int fd = connect_to(host, port, deadline);
    if (fd < 0) return inf_error_set(err, INF_EIO, "webhook %s: cannot connect", url);
    char head[1024];
    int n = snprintf(head, sizeof head,
                     "POST %s HTTP/1.1\r\nHost: %s:%s\r\nContent-Type: application/json\r\nContent-Length: %zu\r\n"
                     "User-Agent: infera-monitor\r\nConnection: close\r\n\r\n",
                     path, host, port, strlen(body));
    inf_status st = INF_OK;
    if (n < 0 || (size_t)n >= sizeof head) st = inf_error_set(err, INF_EINVAL, "webhook %s: URL too long", url);
    else if (send_all(fd, head, (size_t)n, deadline) || send_all(fd, body, strlen(body), deadline))
        st = inf_error_set(err, INF_EIO, "webhook %s: sending failed or timed out", url);
    char resp[64];
    size_t got = 0;
    while (st == INF_OK && got < sizeof resp - 1) {
        ssize_t k = recv(fd, resp + got, sizeof resp - 1 - got, 0);
        if (k > 0) got += (size_t)k;
        else if (k == 0) break;
        else if ((errno != EAGAIN && errno != EINTR) || wait_fd(fd, POLLIN, deadline)) break;
    }
    close(fd);
    if (st) return st;
    resp[got] = 0;
    if (sscanf(resp, "HTTP/%*d.%*d %d", http_status) != 1)
        return inf_error_set(err, INF_EIO, "webhook %s: no HTTP response", url);
    return INF_OK;
}

/* The newest live version of model below version (0: none). */
static inf_status previous_version(inf_registry *r, const char *model, int64_t version, int64_t *prev, inf_error *err) {
    char *js = NULL;
    *prev = 0;
    inf_status st = inf_registry_versions_json(r, model, &js, err);
    if (st) return st;
    cJSON *arr = cJSON_Parse(js);
    inf_registry_string_free(js);
    const cJSON *v;
    cJSON_ArrayForEach(v, arr) {
        const cJSON *num = cJSON_GetObjectItemCaseSensitive(v, "version");
        if (!cJSON_IsNumber(num) || cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(v, "deleted"))) continue;
        int64_t k = (int64_t)num->valuedouble;
        if (k < version && k > *prev) *prev = k;
    }
    cJSON_Delete(arr);
    return INF_OK;
}

inf_status inf__mon_rollback(inf_registry *r, const char *model, int64_t from_version, const char *alias,
                             const char *reason_json, int64_t *to_version, inf_error *err) {
    *to_version = 0;
    char ref[300];
    snprintf(ref, sizeof ref, "%s@%s", model, alias);
    inf_registry_resolved cur;
    memset(&cur, 0, sizeof cur);
    inf_status st = inf_registry_resolve(r, ref, &cur, err);
    int64_t now_at = cur.version;
    inf_registry_resolved_clear(&cur);
    if (st) return st;
    if (now_at != from_version) return INF_OK; /* already moved (by us or anyone): exactly once */
    int64_t prev;
    if ((st = previous_version(r, model, from_version, &prev, err))) return st;
    if (!prev)
        return inf_error_set(err, INF_ENOENT, "rollback %s: no live version of '%s' below %lld", ref, model,
                             (long long)from_version);
    if ((st = inf_registry_alias_set(r, model, prev, alias, -1, err))) return st;
    *to_version = prev;
    cJSON *d = cJSON_CreateObject();
    cJSON_AddStringToObject(d, "alias", alias);
    cJSON_AddNumberToObject(d, "from", (double)from_version);
    cJSON_AddNumberToObject(d, "to", (double)prev);
    cJSON *why = reason_json ? cJSON_Parse(reason_json) : NULL;
    if (why) cJSON_AddItemToObject(d, "alert", why);
    char *text = cJSON_PrintUnformatted(d);
    cJSON_Delete(d);
    inf_error ae;
    if (inf_registry_audit_event(r, "monitor-rollback", model, prev, "ok", text, &ae) != INF_OK)
        fprintf(stderr, "infera monitor: rollback of %s audited as an alias move, but the reason could not be: %s\n",
                ref, ae.message);
    free(text);
    return INF_OK;
}

static void act_rollback(const inf__mon_rule *r, cJSON *alert, inf_registry *reg, const char *model, int64_t version,
                         const char *who, inf__mon_act_result *res) {
    cJSON *rb = cJSON_CreateObject();
    inf_error err = {0};
    int64_t to = 0;
    char *why = cJSON_PrintUnformatted(alert);
    inf_status st = !version ? inf_error_set(&err, INF_EINVAL, "model '%s' is not a registry version", model)
                    : !reg   ? inf_error_set(&err, INF_EINVAL, "no registry")
                             : inf__mon_rollback(reg, model, version, r->alias, why, &to, &err);
    free(why);
    cJSON_AddStringToObject(rb, "alias", r->alias);
    cJSON_AddNumberToObject(rb, "from", (double)version);
    if (st) {
        res->rollback_failed = 1;
        cJSON_AddStringToObject(rb, "error", err.message);
        fprintf(stderr, "%s: alert '%s': rollback of %s@%s refused: %s\n", who, r->name, model, r->alias, err.message);
    } else if (to) {
        res->rolled_to = to;
        cJSON_AddNumberToObject(rb, "to", (double)to);
        fprintf(stderr, "%s: alert '%s': rolled %s@%s back from version %lld to %lld\n", who, r->name, model, r->alias,
                (long long)version, (long long)to);
    } else {
        cJSON_AddStringToObject(rb, "skipped", "the alias no longer points at this version");
    }
    cJSON_AddItemToObject(alert, "rollback", rb);
}

void inf__mon_alert_act(const inf__mon_rule *r, cJSON *alert, inf_registry *reg, const char *model, int64_t version,
                        const char *who, inf__mon_act_result *res) {
    memset(res, 0, sizeof *res);
    const cJSON *feature = cJSON_GetObjectItemCaseSensitive(alert, "feature");
    const cJSON *value = cJSON_GetObjectItemCaseSensitive(alert, "value");
    fprintf(stderr, "%s: alert '%s' firing: model '%s' version %lld: %s %s = %.4f %s %g\n", who, r->name, model,
            (long long)version, cJSON_IsString(feature) ? feature->valuestring : "?", r->metric,
            cJSON_IsNumber(value) ? value->valuedouble : NAN, r->quality && r->higher_is_better ? "<" : ">",
            r->threshold);
    if (r->actions & INF__MON_ACT_ROLLBACK) act_rollback(r, alert, reg, model, version, who, res);
    if (!(r->actions & INF__MON_ACT_WEBHOOK)) return;
    char *body = cJSON_PrintUnformatted(alert);
    int code = 0;
    inf_error err = {0};
    inf_status st = body ? inf__mon_webhook_post(r->webhook, body, 2000, &code, &err)
                         : inf_error_set(&err, INF_ENOMEM, "out of memory");
    free(body);
    if (st || code < 200 || code >= 300) {
        res->webhook_failed = 1;
        fprintf(stderr, "%s: alert '%s': webhook %s failed: %s\n", who, r->name, r->webhook,
                st ? err.message : "the receiver did not answer 2xx");
    } else {
        res->webhook_ok = 1;
    }
}
