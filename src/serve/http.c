/*
 * http.c -- the transport of `infera serve`: libmicrohttpd (Debian
 * libmicrohttpd-dev) with a pool of epoll threads, HTTP/1.1 keep-alive and
 * pipelining (MHD answers a connection's requests in order).
 *
 * PER REQUEST.  The first call of the access handler creates an srv_request
 * (and rejects a Content-Length over the body limit with 413 -- at once, with
 * no "100 Continue", when the client asked for one); the next calls append
 * upload chunks to the body (a body growing past the limit is dropped and
 * answered 413); the final call dispatches the route.  A route that posts a
 * job to a batcher suspends the connection before the job is queued, and the
 * job's completion resumes it from the scheduler thread; MHD then calls the
 * handler again and the response is encoded on the HTTP thread.  The completion callback
 * (NOTIFY_COMPLETED) releases everything the request holds.
 *
 * PER CONNECTION.  Each connection gets an srv_conn when it opens
 * (MHD_OPTION_NOTIFY_CONNECTION) holding the srv_request its requests use
 * in turn -- MHD answers a connection's requests one at a time, so one is
 * enough -- together with its body, response and output-store buffers, kept (up to
 * SRV_KEEP_BYTES each) for the next request: a keep-alive request then
 * allocates nothing for itself, its body or its response, and the response
 * is handed to MHD without a copy (MHD_RESPMEM_PERSISTENT: MHD reads it
 * until the request completes, and the buffer is rewritten only by the
 * connection's next request).  If the srv_conn could not be allocated, or
 * is still in use, a request is allocated alone as before (owner NULL).  A
 * connection closing under a request (after its completion is notified, as
 * MHD orders it, or -- defensively -- before) frees the srv_conn last.
 *
 * LIMITS.  Connection limit (MHD_OPTION_CONNECTION_LIMIT), idle/header/body
 * timeout (MHD_OPTION_CONNECTION_TIMEOUT), body size (413), per-connection
 * memory for headers (MHD_OPTION_CONNECTION_MEMORY_LIMIT, --conn-memory-bytes;
 * over it MHD answers 431/413 itself).
 *
 * ACCEPT.  The server listens and accepts itself (gate.c: the first
 * request's Content-Length is checked before libmicrohttpd parses it) and
 * hands each connection over (MHD_USE_NO_LISTEN_SOCKET, MHD_add_connection).
 *
 * DRAIN.  On SIGTERM main.c calls quiesce (the listening socket closes; new
 * connections are refused), responses get "Connection: close", and main.c
 * waits for in_flight to reach 0 before stopping the daemon.
 */
#include <arpa/inet.h>
#include <microhttpd.h>
#include <netdb.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "serve/serve.h"

void inf__serve_error(srv_request *rq, int status, const char *fmt, ...) {
    char msg[INF_ERROR_MESSAGE_MAX + 64];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    inf__serve_buf_free(&rq->resp);
    inf__serve_buf_free(&rq->resp_bin);
    rq->json_header_len = 0;
    rq->status = status;
    inf__serve_buf_puts(&rq->resp, "{\"error\":");
    inf__serve_buf_json_str(&rq->resp, msg, strlen(msg));
    inf__serve_buf_puts(&rq->resp, "}");
    rq->content_type = "application/json";
}

/* Per-connection memory pool of libmicrohttpd (--conn-memory-bytes, default
 * 8 KiB): request line and headers, the read buffer and the response headers
 * live in it; bodies stream through it in chunks into our own buffer.
 * libmicrohttpd 0.9.75 zeroes the whole pool after every request on a
 * keep-alive connection (MHD_pool_reset: memset of pool size minus what it
 * keeps), so its size is paid per request.  8 KiB takes request headers up
 * to about nginx's default header buffer (a Bearer JWT, cookies and tracing
 * headers behind a proxy).  4 KiB cuts the clear from 12.5 k to 4.5 k
 * instructions (callgrind counts `rep stosb` per byte) of ~109 k per
 * bench-MLP request, with no wall time measurable here (bench/serve/
 * RESULTS.md, session 7), and takes headers up to about 3.4 KB: an option
 * (--conn-memory-bytes), not the default.  Headers over the pool get 431
 * from libmicrohttpd itself; bodies of any size stream through any pool. */

/* Body and response buffers larger than this are freed after the request
 * instead of being kept for the connection's next one. */
#define SRV_KEEP_BYTES (64 * 1024)

typedef struct srv_conn {
    srv_request rq; /* the connection's current (or next) request */
    int in_use;     /* rq belongs to a request not yet completed */
    int closed;     /* the connection closed while in_use: free on completion */
    int raw_nul;    /* the current request's raw path holds %00 (seen by on_uri, before decoding) */
    srv_guarded guard; /* read deadline (conn_guard.c) */
} srv_conn;

static void conn_free(srv_conn *c) {
    inf__serve_buf_free(&c->rq.resp);
    free(c->rq.body);
    free(c->rq.out_store);
    free(c);
}

static int socket_fd(struct MHD_Connection *conn) {
    const union MHD_ConnectionInfo *ci = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
    return ci ? ci->connect_fd : -1;
}

static void on_connection(void *cls, struct MHD_Connection *conn, void **socket_context,
                          enum MHD_ConnectionNotificationCode toe) {
    srv_server *srv = cls;
    if (toe == MHD_CONNECTION_NOTIFY_STARTED) {
        srv_conn *c = calloc(1, sizeof(srv_conn)); /* NULL: its requests are allocated alone, unguarded */
        *socket_context = c;
        const union MHD_ConnectionInfo *ci = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
        if (c && ci && srv->guard) inf__serve_guard_add(srv->guard, &c->guard, ci->connect_fd);
        return;
    }
    inf__serve_stream_forget(socket_fd(conn)); /* before libmicrohttpd closes the socket */
    inf__serve_gate_closed(srv->gate);
    srv_conn *c = *socket_context;
    *socket_context = NULL;
    if (!c) return;
    if (srv->guard) inf__serve_guard_remove(srv->guard, &c->guard); /* before libmicrohttpd closes the socket */
    if (c->in_use)
        c->closed = 1;
    else
        conn_free(c);
}

/* A zeroed request: the connection's own when free (keeping its buffers),
 * else a new allocation; NULL when out of memory. */
static srv_request *request_new(struct MHD_Connection *conn) {
    const union MHD_ConnectionInfo *ci = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    srv_conn *c = ci ? ci->socket_context : NULL;
    if (!c || c->in_use) return calloc(1, sizeof(srv_request));
    srv_request *rq = &c->rq;
    srv_buf resp = rq->resp;
    char *body = rq->body;
    size_t body_cap = rq->body_cap;
    void *out_store = rq->out_store;
    size_t out_store_cap = rq->out_store_cap;
    memset(rq, 0, sizeof *rq);
    rq->out_store = out_store;
    rq->out_store_cap = out_store_cap;
    rq->owner = c;
    rq->resp.p = resp.p;
    rq->resp.cap = resp.cap;
    rq->body = body;
    rq->body_cap = body_cap;
    if (body) body[0] = 0;
    c->in_use = 1;
    return rq;
}

/* Ends a request (completion callback): its own memory, or the kept
 * buffers of its connection's srv_conn. */
static void request_free(srv_request *rq) {
    srv_conn *c = rq->owner;
    inf__serve_buf_free(&rq->resp_bin);
    if (!c) {
        inf__serve_buf_free(&rq->resp);
        free(rq->body);
        free(rq->out_store);
        free(rq);
        return;
    }
    if (rq->out_store_cap > SRV_KEEP_BYTES) {
        free(rq->out_store);
        rq->out_store = NULL;
        rq->out_store_cap = 0;
    }
    if (rq->resp.cap > SRV_KEEP_BYTES) inf__serve_buf_free(&rq->resp);
    if (rq->body_cap > SRV_KEEP_BYTES) {
        free(rq->body);
        rq->body = NULL;
        rq->body_cap = 0;
    }
    c->in_use = 0;
    if (c->closed) conn_free(c);
}

static enum MHD_Result send_response(srv_request *rq) {
    srv_server *srv = rq->srv;
    size_t n = 0;
    if (rq->json_header_len) {
        rq->json_header_len = rq->resp.n;
        inf__serve_buf_put(&rq->resp, rq->resp_bin.p ? rq->resp_bin.p : "", rq->resp_bin.n);
        inf__serve_buf_free(&rq->resp_bin);
    }
    if (rq->resp.oom) inf__serve_error(rq, 503, "out of memory building the response");
    struct MHD_Response *resp;
    char *body = NULL;
    if (rq->stream_read && rq->status == 200) { /* Server-Sent Events (openai.c) */
        resp = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 4096, rq->stream_read, rq->stream_cls,
                                                 rq->stream_free);
        if (!resp) rq->stream_free(rq->stream_cls);
        rq->stream_read = NULL;
        if (!resp) return MHD_NO;
        MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL, "no-cache");
    } else if (rq->owner) { /* the connection's buffer, valid until the request completes */
        n = rq->resp.n;
        resp = MHD_create_response_from_buffer(n, n ? rq->resp.p : (void *)"", MHD_RESPMEM_PERSISTENT);
    } else {
        body = inf__serve_buf_take(&rq->resp, &n);
        resp = body ? MHD_create_response_from_buffer(n, body, MHD_RESPMEM_MUST_FREE)
                    : MHD_create_response_from_buffer(0, (void *)"", MHD_RESPMEM_PERSISTENT);
    }
    if (!resp) {
        free(body);
        return MHD_NO;
    }
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE,
                            rq->content_type ? rq->content_type : "application/json");
    if (rq->json_header_len) {
        char len[32];
        snprintf(len, sizeof len, "%zu", rq->json_header_len);
        MHD_add_response_header(resp, "Inference-Header-Content-Length", len);
    }
    if (rq->status == 405 && rq->allow[0]) MHD_add_response_header(resp, MHD_HTTP_HEADER_ALLOW, rq->allow);
    if (rq->status == 429 && rq->retry_after_s > 0) {
        char secs[16];
        snprintf(secs, sizeof secs, "%d", rq->retry_after_s);
        MHD_add_response_header(resp, MHD_HTTP_HEADER_RETRY_AFTER, secs);
    }
    if (atomic_load(&srv->draining) || rq->close_conn)
        MHD_add_response_header(resp, MHD_HTTP_HEADER_CONNECTION, "close");
    if (rq->status == 0) rq->status = 200;
    enum MHD_Result r = MHD_queue_response(rq->conn, (unsigned)rq->status, resp);
    MHD_destroy_response(resp);
    int cls = rq->status / 100;
    if (cls >= 1 && cls <= 5) atomic_fetch_add_explicit(&srv->metrics.http_by_class[cls], 1, memory_order_relaxed);
    inf__serve_access_log(srv, rq);
    rq->state = SRV_RQ_RESPONDED;
    return r;
}

void inf__serve_http_suspend(srv_request *rq) { MHD_suspend_connection(rq->conn); }
void inf__serve_http_resume(srv_request *rq) { MHD_resume_connection(rq->conn); }

const char *inf__serve_http_header(srv_request *rq, const char *name) {
    return MHD_lookup_connection_value(rq->conn, MHD_HEADER_KIND, name);
}

const char *inf__serve_http_query(srv_request *rq, const char *name) {
    return MHD_lookup_connection_value(rq->conn, MHD_GET_ARGUMENT_KIND, name);
}

void inf__serve_http_job_done(srv_job *job, void *user) {
    srv_request *rq = user;
    (void)job;
    MHD_resume_connection(rq->conn);
}

static void too_large(srv_request *rq) {
    inf__serve_error(rq, 413, "request body larger than the limit of %lld bytes (--max-body-bytes)",
                     (long long)rq->srv->opt.max_body_bytes);
}

static srv_conn *conn_of(struct MHD_Connection *conn) {
    const union MHD_ConnectionInfo *ci = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    return ci ? ci->socket_context : NULL;
}

/* The raw request target, before libmicrohttpd decodes it (it decodes %00
 * to a NUL, which cuts the path the handler sees: "/v2/models/a%00b/ready"
 * would answer for model "a").  Also the moment the request line arrived,
 * which tightens the read deadline.  Returns NULL: the request object is
 * made by on_request. */
static void *on_uri(void *cls, const char *uri, struct MHD_Connection *conn) {
    srv_server *srv = cls;
    srv_conn *c = conn_of(conn);
    if (!c) return NULL;
    const char *nul = uri ? strstr(uri, "%00") : NULL, *query = nul ? strchr(uri, '?') : NULL;
    c->raw_nul = nul && (!query || nul < query);
    if (srv->guard) inf__serve_guard_request_line(srv->guard, &c->guard);
    return NULL;
}

/* Content-Length given more than once with different values */
typedef struct framing {
    int n_length, lengths_differ, n_te;
    const char *first_length, *te;
} framing;

static enum MHD_Result count_framing(void *cls, enum MHD_ValueKind kind, const char *key, const char *value) {
    framing *f = cls;
    (void)kind;
    char k0 = (char)(key[0] | 0x20); /* most headers are neither: skip them on their first letter */
    if (k0 != 'c' && k0 != 't') return MHD_YES;
    if (!strcasecmp(key, MHD_HTTP_HEADER_CONTENT_LENGTH)) {
        if (f->n_length++ && strcmp(f->first_length, value ? value : "")) f->lengths_differ = 1;
        if (f->n_length == 1) f->first_length = value ? value : "";
    } else if (!strcasecmp(key, MHD_HTTP_HEADER_TRANSFER_ENCODING)) {
        f->n_te++;
        f->te = value ? value : "";
    }
    return MHD_YES;
}

/* REQUEST FRAMING.  A request whose body length is ambiguous is answered
 * 400 and its connection closed before its body is read, as RFC 9112 §6.3
 * asks of a server: two Content-Length headers that differ (libmicrohttpd
 * takes the first), Content-Length together with Transfer-Encoding
 * (libmicrohttpd takes chunked) -- what request smuggling through a proxy
 * that reads the other one is made of; a Transfer-Encoding other than
 * chunked is answered 501 (libmicrohttpd would wait for the connection to
 * close to end the body).  A Content-Length that is not a
 * number is refused by gate.c on a connection's first request (libmicrohttpd
 * would answer it itself before any callback runs; on a later request of a
 * kept-alive connection it still does, see docs/serving.md).  Also refused: a %00 in the path.  0 when the request
 * may go on. */
static int bad_framing(srv_request *rq, srv_conn *c) {
    framing f = {0};
    MHD_get_connection_values(rq->conn, MHD_HEADER_KIND, count_framing, &f);
    if (f.lengths_differ)
        inf__serve_error(rq, 400, "the request has %d Content-Length headers with different values", f.n_length);
    else if (f.n_length && f.n_te)
        inf__serve_error(rq, 400, "the request has both Content-Length and Transfer-Encoding: its length is ambiguous");
    else if (f.n_te > 1)
        inf__serve_error(rq, 400, "the request has %d Transfer-Encoding headers", f.n_te);
    else if (f.n_te && strcasecmp(f.te, "chunked")) /* libmicrohttpd would read such a body until the connection closes */
        inf__serve_error(rq, 501, "Transfer-Encoding '%.40s' is not supported (only chunked)", f.te);
    else if (c && c->raw_nul)
        inf__serve_error(rq, 400, "the URL path contains an encoded NUL (%%00)");
    else
        return 0;
    rq->close_conn = 1;
    return 1;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url, const char *method,
                                  const char *version, const char *upload_data, size_t *upload_data_size,
                                  void **con_cls) {
    srv_server *srv = cls;
    srv_request *rq = *con_cls;
    if (!rq) {
        rq = request_new(conn);
        if (!rq) return MHD_NO;
        rq->srv = srv;
        rq->conn = conn;
        rq->caller = -1;
        rq->retry_after_s = 0;
        rq->method = method;
        rq->url = url;
        rq->t_start_ns = inf__serve_now_ns();
        rq->request_no = atomic_fetch_add_explicit(&srv->next_request_id, 1, memory_order_relaxed) + 1;
        atomic_fetch_add(&srv->in_flight, 1);
        *con_cls = rq;
        if (bad_framing(rq, rq->owner ? rq->owner : conn_of(conn))) return send_response(rq);
        const char *cl = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
        if (cl && strtoull(cl, NULL, 10) > (unsigned long long)srv->opt.max_body_bytes) {
            rq->body_too_large = 1;
            /* a client waiting for "100 Continue" is answered now, before it
             * sends the body (libmicrohttpd then closes the connection); one
             * already sending gets its 413 once the body is read (and
             * dropped): closing under an upload would reset the connection
             * before the client reads the answer */
            const char *ex = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_EXPECT);
            if (ex && !strcasecmp(ex, "100-continue")) {
                too_large(rq);
                return send_response(rq);
            }
        }
        return MHD_YES;
    }
    if (*upload_data_size) {
        size_t n = *upload_data_size;
        *upload_data_size = 0;
        if (rq->body_too_large) return MHD_YES;
        if (rq->body_len + n > (size_t)srv->opt.max_body_bytes) {
            rq->body_too_large = 1;
            free(rq->body);
            rq->body = NULL;
            rq->body_len = rq->body_cap = 0;
            return MHD_YES;
        }
        if (rq->body_len + n + 1 > rq->body_cap) {
            size_t cap = rq->body_cap ? rq->body_cap : 4096;
            while (cap < rq->body_len + n + 1) cap *= 2;
            /* a body whose Content-Length is known gets its full size at once */
            char *p = realloc(rq->body, cap);
            if (!p) {
                rq->body_too_large = 2; /* out of memory */
                free(rq->body);
                rq->body = NULL;
                rq->body_len = rq->body_cap = 0;
                return MHD_YES;
            }
            rq->body = p;
            rq->body_cap = cap;
        }
        memcpy(rq->body + rq->body_len, upload_data, n);
        rq->body_len += n;
        rq->body[rq->body_len] = 0;
        return MHD_YES;
    }
    if (rq->state == SRV_RQ_SUSPENDED) { /* resumed: the job finished */
        inf__serve_route_complete(rq);
        return send_response(rq);
    }
    if (rq->state == SRV_RQ_COMPLETED) /* answered before the job was queued */
        return send_response(rq);
    if (rq->state == SRV_RQ_RESPONDED) return MHD_YES;
    srv_conn *owner = srv->guard ? conn_of(conn) : NULL; /* (rq->owner is NULL for a request allocated alone) */
    if (owner) inf__serve_guard_received(&owner->guard); /* read in full: no read deadline */
    if (rq->body_too_large == 1) {
        too_large(rq);
        return send_response(rq);
    }
    if (rq->body_too_large == 2) {
        inf__serve_error(rq, 503, "out of memory receiving the request body");
        return send_response(rq);
    }
    if (inf__serve_route_dispatch(rq)) return MHD_YES; /* suspended by the route */
    return send_response(rq);
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **con_cls, enum MHD_RequestTerminationCode toe) {
    srv_server *srv = cls;
    srv_request *rq = *con_cls;
    (void)toe;
    inf__serve_stream_answered(socket_fd(conn)); /* its next request may be answered by the stream check */
    if (!rq) { /* a request libmicrohttpd answered itself */
        srv_conn *c = srv->guard ? conn_of(conn) : NULL;
        if (c) inf__serve_guard_answered(srv->guard, &c->guard);
        return;
    }
    srv_conn *c = srv->guard ? conn_of(conn) : NULL; /* NULL once the connection closed */
    if (c) inf__serve_guard_answered(srv->guard, &c->guard);
    inf__serve_request_release(rq);
    request_free(rq);
    *con_cls = NULL;
    atomic_fetch_sub(&srv->in_flight, 1);
}

inf_status inf__serve_http_start(srv_server *srv, inf_error *err) {
    struct sockaddr_storage ss;
    memset(&ss, 0, sizeof ss);
    struct addrinfo hints = {0}, *ai = NULL;
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_NUMERICSERV;
    char port[16];
    snprintf(port, sizeof port, "%d", srv->opt.port);
    int gai = getaddrinfo(srv->opt.host, port, &hints, &ai);
    if (gai || !ai) {
        inf_error_set(err, INF_EINVAL, "cannot resolve --host %s: %s", srv->opt.host, gai_strerror(gai));
        return INF_EINVAL;
    }
    memcpy(&ss, ai->ai_addr, ai->ai_addrlen);
    int family = ai->ai_family;
    freeaddrinfo(ai);
    if (srv->opt.read_deadline_s > 0 && !(srv->guard = inf__serve_guard_new(srv))) {
        inf_error_set(err, INF_ENOMEM, "cannot start the connection guard (out of memory or threads)");
        return INF_ENOMEM;
    }
    /* the server listens and accepts itself (gate.c) and hands sockets over */
    inf_status gst = inf__serve_gate_new(srv, (struct sockaddr *)&ss, (socklen_t)(family == AF_INET6
                                                                             ? sizeof(struct sockaddr_in6)
                                                                             : sizeof(struct sockaddr_in)),
                                         &srv->gate, err);
    if (gst) {
        inf__serve_http_stop(srv);
        return gst;
    }
    if (srv->opt.port == 0) srv->opt.port = inf__serve_gate_port(srv->gate);
    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_ALLOW_SUSPEND_RESUME | MHD_USE_TURBO |
                     MHD_USE_NO_LISTEN_SOCKET | MHD_USE_ITC;
    if (family == AF_INET6) flags |= MHD_USE_IPv6;
    int threads = srv->opt.http_threads > 0 ? srv->opt.http_threads : (int)sysconf(_SC_NPROCESSORS_ONLN);
    if (threads < 1) threads = 1;
    /* the gate keeps the open connections within --max-connections; the
     * daemon's own limit (split among its threads, and freed only after a
     * close is notified) is twice that, so a socket handed over just after a
     * close is never refused (MHD_add_connection would close it) */
    unsigned mhd_limit = 2u * (unsigned)srv->opt.conn_limit + (unsigned)threads;
    srv->daemon = MHD_start_daemon(
        flags, 0, NULL, NULL, on_request, srv, MHD_OPTION_NOTIFY_COMPLETED, on_completed, srv,
        MHD_OPTION_NOTIFY_CONNECTION, on_connection, srv, MHD_OPTION_URI_LOG_CALLBACK, on_uri, srv,
        MHD_OPTION_THREAD_POOL_SIZE, (unsigned)threads, MHD_OPTION_CONNECTION_LIMIT, mhd_limit,
        MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)srv->opt.conn_timeout_s, MHD_OPTION_CONNECTION_MEMORY_LIMIT,
        (size_t)srv->opt.conn_memory_bytes, MHD_OPTION_END);
    if (!srv->daemon) {
        inf_error_set(err, INF_EIO, "cannot start the HTTP server on %s:%d (out of threads?)", srv->opt.host,
                      srv->opt.port);
        inf__serve_http_stop(srv);
        return INF_EIO;
    }
    if (inf__serve_gate_start(srv->gate, err)) {
        inf__serve_http_stop(srv);
        return INF_ENOMEM;
    }
    snprintf(srv->listen_url, sizeof srv->listen_url, "http://%s%s%s:%d", family == AF_INET6 ? "[" : "",
             srv->opt.host, family == AF_INET6 ? "]" : "", srv->opt.port);
    return INF_OK;
}

void inf__serve_http_quiesce(srv_server *srv) { inf__serve_gate_quiesce(srv->gate); }

void inf__serve_http_stop(srv_server *srv) {
    inf__serve_gate_stop(srv->gate); /* first: nothing more is handed over */
    if (srv->daemon) MHD_stop_daemon(srv->daemon);
    srv->daemon = NULL;
    inf__serve_gate_free(srv->gate); /* after the daemon: its closes report to the gate */
    srv->gate = NULL;
    inf__serve_guard_free(srv->guard); /* after the daemon: every connection is unlisted */
    srv->guard = NULL;
}
