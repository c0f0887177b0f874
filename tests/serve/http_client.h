/*
 * http_client.h -- a tiny blocking HTTP/1.1 client for the serve tests and
 * the bench round-trip probe: one request per connection (Connection:
 * close) or on a kept-alive socket, with full control over headers and raw
 * bodies (binary tensors, truncated bodies, oversized bodies).
 */
#ifndef INF_TEST_HTTP_CLIENT_H
#define INF_TEST_HTTP_CLIENT_H

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

typedef struct http_resp {
    int status;          /* 0 when the exchange failed */
    char headers[4096];
    char *body;          /* malloc'd, NUL-terminated */
    size_t body_len;
} http_resp;

static inline void http_resp_free(http_resp *r) {
    free(r->body);
    r->body = NULL;
}

static inline int http_connect(int port) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) return -1;
    struct sockaddr_in a = {0};
    a.sin_family = AF_INET;
    a.sin_port = htons((uint16_t)port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd, (struct sockaddr *)&a, sizeof a)) {
        close(fd);
        return -1;
    }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    return fd;
}

static inline int write_all(int fd, const void *p, size_t n) {
    const char *c = p;
    while (n) {
        ssize_t k = send(fd, c, n, MSG_NOSIGNAL);
        if (k <= 0) return -1;
        c += k;
        n -= (size_t)k;
    }
    return 0;
}

/* Header value (case-insensitive name) from r->headers into out; 0 if found. */
static inline int http_header(const http_resp *r, const char *name, char *out, size_t size) {
    size_t n = strlen(name);
    const char *p = r->headers;
    while ((p = strchr(p, '\n'))) {
        p++;
        if (!strncasecmp(p, name, n) && p[n] == ':') {
            p += n + 1;
            while (*p == ' ') p++;
            size_t k = strcspn(p, "\r\n");
            if (k >= size) k = size - 1;
            memcpy(out, p, k);
            out[k] = 0;
            return 0;
        }
    }
    return -1;
}

/* Sends one request on fd and reads the response.  extra_headers: "" or
 * lines ending in \r\n.  declared_len < 0: Content-Length = body_len. */
static inline int http_exchange(int fd, const char *method, const char *path, const char *extra_headers,
                                const void *body, size_t body_len, long declared_len, int keep_alive, http_resp *r) {
    memset(r, 0, sizeof *r);
    char head[2048];
    int hn = snprintf(head, sizeof head, "%s %s HTTP/1.1\r\nHost: 127.0.0.1\r\n%sContent-Length: %ld\r\n%s\r\n", method,
                      path, keep_alive ? "" : "Connection: close\r\n", declared_len >= 0 ? declared_len : (long)body_len,
                      extra_headers ? extra_headers : "");
    if (write_all(fd, head, (size_t)hn)) return -1;
    if (body_len && write_all(fd, body, body_len)) return -1;
    /* read headers */
    size_t cap = 8192, n = 0;
    char *buf = malloc(cap);
    if (!buf) return -1;
    char *end = NULL;
    for (;;) {
        if (n + 1 >= cap) {
            cap *= 2;
            char *nb = realloc(buf, cap);
            if (!nb) {
                free(buf);
                return -1;
            }
            buf = nb;
        }
        ssize_t k = recv(fd, buf + n, cap - n - 1, 0);
        if (k <= 0) {
            free(buf);
            return -1;
        }
        n += (size_t)k;
        buf[n] = 0;
        if ((end = strstr(buf, "\r\n\r\n"))) break;
    }
    size_t hlen = (size_t)(end - buf) + 4;
    size_t copy = hlen < sizeof r->headers - 1 ? hlen : sizeof r->headers - 1;
    memcpy(r->headers, buf, copy);
    r->headers[copy] = 0;
    r->status = atoi(buf + 9);
    char cl[32];
    long want = http_header(r, "Content-Length", cl, sizeof cl) == 0 ? atol(cl) : -1;
    size_t have = n - hlen;
    if (want >= 0) {
        size_t need = hlen + (size_t)want + 1;
        if (need > cap) {
            char *nb = realloc(buf, need);
            if (!nb) {
                free(buf);
                return -1;
            }
            buf = nb;
            cap = need;
        }
        while (have < (size_t)want) {
            ssize_t k = recv(fd, buf + hlen + have, (size_t)want - have, 0);
            if (k <= 0) break;
            have += (size_t)k;
        }
    }
    r->body = malloc(have + 1);
    if (r->body) {
        memcpy(r->body, buf + hlen, have);
        r->body[have] = 0;
        r->body_len = have;
    }
    free(buf);
    return 0;
}

/* One request on a fresh connection. */
static inline int http_request(int port, const char *method, const char *path, const char *extra_headers,
                               const void *body, size_t body_len, http_resp *r) {
    memset(r, 0, sizeof *r);
    int fd = http_connect(port);
    if (fd < 0) return -1;
    int rc = http_exchange(fd, method, path, extra_headers, body, body_len, -1, 0, r);
    close(fd);
    return rc;
}

#endif
