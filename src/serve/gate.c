/*
 * gate.c -- the front door of `infera serve`: the listening socket, and the
 * framing check of a connection's first request before libmicrohttpd reads
 * it (issue 27, finding 8).
 *
 * WHY.  libmicrohttpd 0.9.75 answers a request whose Content-Length is not a
 * decimal number (`12abc`, `-5`, `0x10`, beyond 2^64) itself, while it parses
 * the headers and before any callback of the server runs: its status line and
 * headers twice, then an HTML body -- not the `{"error": ...}` of
 * shared/DESIGN.md §5.  It has no option to take that answer over.  So the
 * server accepts connections itself (MHD_USE_NO_LISTEN_SOCKET) and looks at
 * a connection's first header block before it hands the socket over
 * (MHD_add_connection); libmicrohttpd then reads the request from its first
 * byte, as if it had accepted the connection.
 *
 * DESIGN.  One gate thread and one epoll set: the listening socket, an
 * eventfd to wake the thread, and every accepted connection whose first
 * header block has not arrived yet ("pending").  A connection whose sound
 * header block is there when it is accepted (the common case: clients send
 * at once) is handed over at once, without entering the set.  A pending socket is watched
 * edge-triggered: on new bytes the gate peeks (MSG_PEEK: nothing is
 * consumed) at up to --conn-memory-bytes, and once the header block is
 * complete checks its Content-Length lines (check_content_length).  A bad
 * one is answered here: 400 `{"error"}` naming the header and why (and a
 * window filled before the block ended: 431, or 414 for the request line), with
 * `Connection: close`; the socket is shut for writing and what the client
 * still sends is read and dropped for up to CLOSING_NS before it is closed
 * (closing with unread bytes would reset the connection under the answer).
 * Everything else goes to libmicrohttpd.  Later requests of a kept-alive
 * connection get the same check on their way to libmicrohttpd
 * (gate_stream.c); a refused one's socket comes back here for the
 * lingering close (inf__serve_gate_linger).
 *
 * LIMITS.  Pending plus handed-over connections stay within
 * --max-connections: at the limit the gate stops accepting (connections
 * wait in the kernel's backlog, as before) until one closes (http.c calls
 * inf__serve_gate_closed).  A pending connection is listed in the
 * connection guard (conn_guard.c) like any open connection, so the read
 * deadline and the reserve apply to it; the guard's cut (a shutdown) shows
 * here as the end of the stream, and the gate closes the socket.  Without
 * the guard (--read-deadline-s 0) a pending connection silent for
 * --timeout-s is closed, libmicrohttpd's idle rule.
 */
#include <errno.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <microhttpd.h>

#include "serve/serve.h"

#define TICK_MS 100                    /* deadline checks while connections are pending */
#define CLOSING_NS 2000000000ull       /* reading and dropping after a refusal, at most */

typedef enum { PENDING_READING, PENDING_CLOSING } pending_state;

typedef struct pending {
    int fd;
    pending_state state;
    struct sockaddr_storage addr;
    socklen_t addr_len;
    uint64_t deadline_ns; /* reading without the guard: idle deadline; closing: its end; 0 = none */
    srv_guarded guarded;  /* listed in the guard while reading (srv->guard) */
    struct pending *prev, *next;
} pending;

struct srv_gate {
    srv_server *srv;
    int listen_fd, epoll_fd, wake_fd;
    int accepting;       /* listen_fd is in the epoll set */
    int n_pending;
    pending *head;
    char *window;        /* the peek buffer (--conn-memory-bytes) */
    size_t window_cap;
    pthread_t thread;
    int started;
    _Atomic int stop, quiesce;
    _Atomic int handed;  /* connections given to libmicrohttpd and not yet closed */
    _Atomic int paused;  /* at the limit: a close must wake the thread */
    pthread_mutex_t handed_back_lock;
    pending *handed_back; /* refused later requests' sockets to close lingering (inf__serve_gate_linger) */
};

/* epoll tags of the two sockets that are not connections */
static char tag_listen, tag_wake;

/* ---- the check (http_framing.c) ----------------------------------------- */

/* 1 when the header block in w[0..n) is complete (an empty line). */
static int headers_complete(const char *w, size_t n) { return inf__serve_gate_head_end(w, n) != 0; }

/* ---- pending connections ---------------------------------------------------- */

static void unlist(srv_gate *g, pending *p) {
    if (p->prev) p->prev->next = p->next;
    else g->head = p->next;
    if (p->next) p->next->prev = p->prev;
    g->n_pending--;
}

static void guard_off(srv_gate *g, pending *p) {
    if (g->srv->guard && p->guarded.listed) inf__serve_guard_remove(g->srv->guard, &p->guarded);
}

static void drop(srv_gate *g, pending *p) {
    guard_off(g, p);
    epoll_ctl(g->epoll_fd, EPOLL_CTL_DEL, p->fd, NULL);
    close(p->fd);
    unlist(g, p);
    free(p);
}

/* Gives fd to libmicrohttpd (which closes it when it cannot take it), its
 * later requests vetted on the way (gate_stream.c). */
static void give(srv_gate *g, int fd, const struct sockaddr *addr, socklen_t len) {
    atomic_fetch_add(&g->handed, 1);
    inf__serve_stream_watch(g->srv, fd);
    if (MHD_add_connection(g->srv->daemon, fd, addr, len) != MHD_YES) {
        inf__serve_stream_forget(fd);
        atomic_fetch_sub(&g->handed, 1);
    }
}

/* Gives p's socket to libmicrohttpd. */
static void hand_over(srv_gate *g, pending *p) {
    guard_off(g, p);
    epoll_ctl(g->epoll_fd, EPOLL_CTL_DEL, p->fd, NULL);
    give(g, p->fd, (const struct sockaddr *)&p->addr, p->addr_len);
    unlist(g, p);
    free(p);
}

void inf__serve_gate_send_refusal(srv_server *srv, int fd, const char *why) {
    inf__serve_gate_send_error(srv, fd, 400, "Bad Request", why);
}

void inf__serve_gate_send_error(srv_server *srv, int fd, int status, const char *reason, const char *why) {
    srv_buf body = {0}, out = {0};
    inf__serve_buf_puts(&body, "{\"error\":");
    inf__serve_buf_json_str(&body, why, strlen(why));
    inf__serve_buf_puts(&body, "}");
    inf__serve_buf_printf(&out,
                          "HTTP/1.1 %d %s\r\nContent-Type: application/json\r\nContent-Length: %zu\r\n"
                          "Connection: close\r\n\r\n",
                          status, reason, body.n);
    inf__serve_buf_put(&out, body.p ? body.p : "", body.n);
    if (!out.oom && out.p) (void)!send(fd, out.p, out.n, MSG_NOSIGNAL | MSG_DONTWAIT);
    inf__serve_buf_free(&body);
    inf__serve_buf_free(&out);
    atomic_fetch_add_explicit(&srv->metrics.http_by_class[4], 1, memory_order_relaxed);
    shutdown(fd, SHUT_WR);
}

/* Starts p's lingering close: what the client still sends is read and
 * dropped for up to CLOSING_NS. */
static void start_closing(srv_gate *g, pending *p) {
    guard_off(g, p);
    p->state = PENDING_CLOSING;
    p->deadline_ns = inf__serve_now_ns() + CLOSING_NS;
}

/* Answers 400 {"error": why} and starts the lingering close. */
static void refuse(srv_gate *g, pending *p, const char *why) {
    inf__serve_gate_send_refusal(g->srv, p->fd, why);
    start_closing(g, p);
}

/* The window is full and the header block has not ended: libmicrohttpd would
 * answer 414/431 with an HTML page of its own, so the gate answers in JSON. */
static void refuse_too_large(srv_gate *g, pending *p, const char *head, size_t n) {
    char why[INF_ERROR_MESSAGE_MAX];
    int line_ended = memchr(head, '\n', n) != NULL;
    snprintf(why, sizeof why,
             "the request %s is longer than the %zu bytes a connection may use for it (--conn-memory-bytes)",
             line_ended ? "header block" : "line", n);
    if (line_ended) inf__serve_gate_send_error(g->srv, p->fd, 431, "Request Header Fields Too Large", why);
    else inf__serve_gate_send_error(g->srv, p->fd, 414, "URI Too Long", why);
    start_closing(g, p);
}

/* New bytes (or the end) on p; events: epoll's. */
static void on_readable(srv_gate *g, pending *p, uint32_t events) {
    if (p->state == PENDING_CLOSING) {
        for (;;) {
            ssize_t k = recv(p->fd, g->window, g->window_cap, MSG_DONTWAIT);
            if (k > 0) continue;
            if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return;
            drop(g, p); /* the client closed (or failed): done */
            return;
        }
    }
    if (events & (EPOLLHUP | EPOLLERR)) { /* cut by the guard (shutdown), or reset */
        drop(g, p);
        return;
    }
    ssize_t k = recv(p->fd, g->window, g->window_cap, MSG_PEEK | MSG_DONTWAIT);
    if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return;
    if (k <= 0) { /* closed before a request, or cut by the guard */
        drop(g, p);
        return;
    }
    if (!g->srv->guard && g->srv->opt.conn_timeout_s > 0)
        p->deadline_ns = inf__serve_now_ns() + (uint64_t)g->srv->opt.conn_timeout_s * 1000000000ull;
    size_t n = (size_t)k;
    int complete = headers_complete(g->window, n);
    if (!complete && n < g->window_cap) { /* wait for the rest of the header block */
        if (events & EPOLLRDHUP) drop(g, p); /* ... which will never come */
        return;
    }
    char why[INF_ERROR_MESSAGE_MAX];
    if (inf__serve_gate_check_framing(g->window, n, NULL, why, sizeof why))
        refuse(g, p, why);
    else if (!complete) refuse_too_large(g, p, g->window, n);
    else
        hand_over(g, p);
}

/* 1 when fd's whole first header block is there already and sound: it can
 * go to libmicrohttpd at once, without a round through the epoll set. */
static int sound_already(srv_gate *g, int fd) {
    ssize_t k = recv(fd, g->window, g->window_cap, MSG_PEEK | MSG_DONTWAIT);
    if (k <= 0 || !headers_complete(g->window, (size_t)k)) return 0; /* the rest to come, or too large */
    char why[INF_ERROR_MESSAGE_MAX];
    return !inf__serve_gate_check_framing(g->window, (size_t)k, NULL, why, sizeof why);
}

static void accept_all(srv_gate *g) {
    int limit = g->srv->opt.conn_limit;
    while (g->n_pending + atomic_load(&g->handed) < limit) {
        struct sockaddr_storage addr;
        socklen_t len = sizeof addr;
        int fd = accept4(g->listen_fd, (struct sockaddr *)&addr, &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) return; /* EAGAIN, or a transient error (EMFILE, ECONNABORTED): the next event retries */
        if (sound_already(g, fd)) { /* the common case: the headers came with the connection */
            give(g, fd, (const struct sockaddr *)&addr, len);
            continue;
        }
        pending *p = calloc(1, sizeof *p);
        struct epoll_event ev = {.events = EPOLLIN | EPOLLRDHUP | EPOLLET};
        ev.data.ptr = p;
        if (!p || epoll_ctl(g->epoll_fd, EPOLL_CTL_ADD, fd, &ev)) {
            close(fd);
            free(p);
            continue;
        }
        p->fd = fd;
        p->addr = addr;
        p->addr_len = len;
        p->next = g->head;
        if (g->head) g->head->prev = p;
        g->head = p;
        g->n_pending++;
        if (g->srv->guard) inf__serve_guard_add(g->srv->guard, &p->guarded, fd);
        else if (g->srv->opt.conn_timeout_s > 0)
            p->deadline_ns = inf__serve_now_ns() + (uint64_t)g->srv->opt.conn_timeout_s * 1000000000ull;
    }
}

/* Keeps the listening socket in the epoll set exactly while below the limit. */
static void update_accepting(srv_gate *g) {
    int want = g->listen_fd >= 0 && g->n_pending + atomic_load(&g->handed) < g->srv->opt.conn_limit;
    if (want == g->accepting) return;
    struct epoll_event ev = {.events = EPOLLIN};
    ev.data.ptr = &tag_listen;
    if (want) {
        atomic_store(&g->paused, 0);
        if (epoll_ctl(g->epoll_fd, EPOLL_CTL_ADD, g->listen_fd, &ev) == 0) g->accepting = 1;
    } else {
        atomic_store(&g->paused, 1);
        epoll_ctl(g->epoll_fd, EPOLL_CTL_DEL, g->listen_fd, NULL);
        g->accepting = 0;
        /* a connection that closed before `paused` was set has not woken us: look again */
        if (g->n_pending + atomic_load(&g->handed) < g->srv->opt.conn_limit) update_accepting(g);
    }
}

static void expire(srv_gate *g) {
    uint64_t now = inf__serve_now_ns();
    for (pending *p = g->head, *next; p; p = next) {
        next = p->next;
        if (p->deadline_ns && now > p->deadline_ns) drop(g, p);
    }
}

/* Takes the sockets inf__serve_gate_linger handed back (a list). */
static pending *pop_handed_back(srv_gate *g) {
    pthread_mutex_lock(&g->handed_back_lock);
    pending *list = g->handed_back;
    g->handed_back = NULL;
    pthread_mutex_unlock(&g->handed_back_lock);
    return list;
}

/* Lists the sockets handed back, closing lingering. */
static void take_handed_back(srv_gate *g) {
    for (pending *p = pop_handed_back(g), *next; p; p = next) {
        next = p->next;
        struct epoll_event ev = {.events = EPOLLIN | EPOLLRDHUP | EPOLLET};
        ev.data.ptr = p;
        if (epoll_ctl(g->epoll_fd, EPOLL_CTL_ADD, p->fd, &ev)) {
            close(p->fd);
            free(p);
            continue;
        }
        p->prev = NULL;
        p->next = g->head;
        if (g->head) g->head->prev = p;
        g->head = p;
        g->n_pending++;
        on_readable(g, p, EPOLLIN); /* what arrived before it was listed */
    }
}

static void *gate_main(void *arg) {
    srv_gate *g = arg;
    struct epoll_event evs[64];
    while (!atomic_load(&g->stop)) {
        if (atomic_load(&g->quiesce) && g->listen_fd >= 0) {
            if (g->accepting) epoll_ctl(g->epoll_fd, EPOLL_CTL_DEL, g->listen_fd, NULL);
            close(g->listen_fd);
            g->listen_fd = -1;
            g->accepting = 0;
        }
        update_accepting(g);
        int n = epoll_wait(g->epoll_fd, evs, 64, g->head ? TICK_MS : -1);
        for (int i = 0; i < n; i++) {
            void *tag = evs[i].data.ptr;
            if (tag == &tag_wake) {
                uint64_t v;
                (void)!read(g->wake_fd, &v, sizeof v);
                take_handed_back(g);
            } else if (tag == &tag_listen) {
                accept_all(g);
            } else {
                on_readable(g, tag, evs[i].events);
            }
        }
        if (g->head) expire(g);
    }
    return NULL;
}

/* ---- life cycle -------------------------------------------------------------- */

static inf_status gate_fail(srv_gate *g, inf_error *err, inf_status st, const char *what) {
    inf_error_set(err, st, "cannot listen on %s:%d: %s: %s", g->srv->opt.host, g->srv->opt.port, what, strerror(errno));
    inf__serve_gate_free(g);
    return st;
}

inf_status inf__serve_gate_new(srv_server *srv, const struct sockaddr *addr, socklen_t addr_len, srv_gate **out,
                               inf_error *err) {
    srv_gate *g = calloc(1, sizeof *g);
    *out = NULL;
    if (!g) return err ? inf_error_set(err, INF_ENOMEM, "serve: out of memory starting the listener") : INF_ENOMEM;
    g->srv = srv;
    g->listen_fd = g->epoll_fd = g->wake_fd = -1;
    pthread_mutex_init(&g->handed_back_lock, NULL);
    g->window_cap = srv->opt.conn_memory_bytes > 0 ? (size_t)srv->opt.conn_memory_bytes : 8192;
    if (!(g->window = malloc(g->window_cap))) {
        errno = ENOMEM;
        return gate_fail(g, err, INF_ENOMEM, "out of memory");
    }
    int one = 1;
    g->listen_fd = socket(addr->sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (g->listen_fd < 0) return gate_fail(g, err, INF_EIO, "socket");
    setsockopt(g->listen_fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (addr->sa_family == AF_INET6) setsockopt(g->listen_fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one);
    if (bind(g->listen_fd, addr, addr_len)) return gate_fail(g, err, INF_EIO, "bind (address in use, or not local?)");
    if (listen(g->listen_fd, 1024)) return gate_fail(g, err, INF_EIO, "listen");
    if ((g->epoll_fd = epoll_create1(EPOLL_CLOEXEC)) < 0) return gate_fail(g, err, INF_EIO, "epoll_create1");
    if ((g->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) < 0) return gate_fail(g, err, INF_EIO, "eventfd");
    struct epoll_event ev = {.events = EPOLLIN};
    ev.data.ptr = &tag_wake;
    if (epoll_ctl(g->epoll_fd, EPOLL_CTL_ADD, g->wake_fd, &ev)) return gate_fail(g, err, INF_EIO, "epoll_ctl");
    *out = g;
    return INF_OK;
}

int inf__serve_gate_port(srv_gate *g) {
    struct sockaddr_storage ss;
    socklen_t len = sizeof ss;
    if (getsockname(g->listen_fd, (struct sockaddr *)&ss, &len)) return 0;
    if (ss.ss_family == AF_INET6) return ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
    return ntohs(((struct sockaddr_in *)&ss)->sin_port);
}

inf_status inf__serve_gate_start(srv_gate *g, inf_error *err) {
    if (pthread_create(&g->thread, NULL, gate_main, g)) {
        if (err) inf_error_set(err, INF_ENOMEM, "serve: cannot start the listener thread");
        return INF_ENOMEM;
    }
    g->started = 1;
    return INF_OK;
}

static void wake(srv_gate *g) {
    uint64_t one = 1;
    (void)!write(g->wake_fd, &one, sizeof one);
}

void inf__serve_gate_closed(srv_gate *g) {
    if (!g) return;
    atomic_fetch_sub(&g->handed, 1);
    if (atomic_load(&g->paused)) wake(g);
}

void inf__serve_gate_linger(srv_gate *g, int fd) {
    pending *p = g ? calloc(1, sizeof *p) : NULL;
    if (!p) {
        close(fd); /* the answer may be lost to a reset; nothing else to do without memory */
        return;
    }
    p->fd = fd;
    p->state = PENDING_CLOSING;
    p->deadline_ns = inf__serve_now_ns() + CLOSING_NS;
    pthread_mutex_lock(&g->handed_back_lock);
    p->next = g->handed_back;
    g->handed_back = p;
    pthread_mutex_unlock(&g->handed_back_lock);
    wake(g);
}

void inf__serve_gate_quiesce(srv_gate *g) {
    if (!g) return;
    atomic_store(&g->quiesce, 1);
    wake(g);
}

/* Closes what was handed back and not listed yet (stopping). */
static void take_handed_back_closed(srv_gate *g) {
    for (pending *p = pop_handed_back(g), *next; p; p = next) {
        next = p->next;
        close(p->fd);
        free(p);
    }
}

void inf__serve_gate_stop(srv_gate *g) {
    if (!g) return;
    if (g->started) {
        atomic_store(&g->stop, 1);
        wake(g);
        pthread_join(g->thread, NULL);
        g->started = 0;
    }
    while (g->head) drop(g, g->head);
    take_handed_back_closed(g);
    if (g->listen_fd >= 0) close(g->listen_fd);
    g->listen_fd = -1;
}

void inf__serve_gate_free(srv_gate *g) {
    if (!g) return;
    inf__serve_gate_stop(g);
    if (g->epoll_fd >= 0) close(g->epoll_fd);
    if (g->wake_fd >= 0) close(g->wake_fd);
    take_handed_back_closed(g);
    pthread_mutex_destroy(&g->handed_back_lock);
    free(g->window);
    free(g);
}
