/*
 * conn_guard.c -- the whole-request read deadline and the connection
 * reserve of `infera serve` (slowloris defence).
 *
 * libmicrohttpd's own timeout (--timeout-s, MHD_OPTION_CONNECTION_TIMEOUT)
 * is an idle timer: any byte restarts it, so a client trickling a byte a
 * second holds its connection forever, and a thousand of them fill the
 * connection limit.  libmicrohttpd (0.9.75) has no total-time limit, so this
 * file keeps one of its own:
 *
 * DEADLINE.  Every open connection is listed (http.c adds it when it opens,
 * MHD_OPTION_NOTIFY_CONNECTION, and removes it when it closes).  While a
 * connection is reading a request -- from its opening, or from its previous
 * response on a kept-alive connection, until the request's last body byte --
 * it carries a deadline:
 *     opened / previous response + --timeout-s + --read-deadline-s
 * tightened, once the request line has arrived, to
 *     request line + --read-deadline-s.
 * A client that starts sending within the idle timeout and sends its whole
 * request (line, headers, body) within --read-deadline-s of its first byte
 * is never cut; a trickler is cut after at most the sum.  A request being
 * computed or answered has no deadline (the per-request timeout covers it).
 *
 * RESERVE.  When the open connections reach the connection limit minus a
 * reserve (a tenth of it, at least 1), the oldest connections still reading
 * a request (idle kept-alive ones included) that have read for at least a
 * second are cut until the reserve is free again, so clients that send
 * their requests promptly keep finding a free connection.
 *
 * CUTTING.  One sweeper thread checks the list every 100 ms and cuts a
 * connection with shutdown(2) on its socket: libmicrohttpd then sees the
 * end of the stream on its own thread and closes and frees the connection
 * as for any client that went away.  The socket stays valid while listed:
 * libmicrohttpd notifies the close (and http.c unlists it, under the lock
 * the sweeper holds) before it closes the descriptor.
 */
#include <stdlib.h>
#include <sys/socket.h>
#include <time.h>

#include "serve/serve.h"

#define SWEEP_NS 100000000ull     /* 100 ms between sweeps */
#define RESERVE_GRACE_NS 1000000000ull /* under pressure, cut only connections reading for 1 s or more */

struct srv_guard {
    srv_server *srv;
    pthread_mutex_t lock; /* the list */
    pthread_cond_t wake;
    srv_guarded *head;
    int n_open;
    int stop;
    pthread_t sweeper;
    int started;
    uint64_t deadline_ns, idle_ns; /* --read-deadline-s, --timeout-s */
};

static uint64_t secs_ns(int s) { return s > 0 ? (uint64_t)s * 1000000000ull : 0; }

/* Cuts c (lock held): the owning HTTP thread sees the end of its stream. */
static void cut(srv_guard *g, srv_guarded *c, _Atomic uint64_t *counter) {
    if (c->cut) return;
    c->cut = 1;
    shutdown(c->fd, SHUT_RDWR);
    atomic_fetch_add_explicit(counter, 1, memory_order_relaxed);
    (void)g;
}

static void sweep(srv_guard *g) {
    uint64_t now = inf__serve_now_ns();
    srv_metrics *m = &g->srv->metrics;
    pthread_mutex_lock(&g->lock);
    int live = 0;
    for (srv_guarded *c = g->head; c; c = c->next) {
        uint64_t d = atomic_load_explicit(&c->deadline_ns, memory_order_relaxed);
        if (!c->cut && d && now > d) cut(g, c, &m->conns_cut_deadline);
        live += !c->cut;
    }
    int limit = g->srv->opt.conn_limit;
    int reserve = limit / 10 > 1 ? limit / 10 : 1;
    /* the oldest readers first, one pass per connection to free */
    while (live >= limit - reserve && live > 0) {
        srv_guarded *oldest = NULL;
        uint64_t oldest_since = 0;
        for (srv_guarded *c = g->head; c; c = c->next) {
            uint64_t since = atomic_load_explicit(&c->since_ns, memory_order_relaxed);
            if (c->cut || !atomic_load_explicit(&c->deadline_ns, memory_order_relaxed)) continue;
            if (now - since < RESERVE_GRACE_NS) continue;
            if (!oldest || since < oldest_since) oldest = c, oldest_since = since;
        }
        if (!oldest) break;
        cut(g, oldest, &m->conns_cut_reserve);
        live--;
    }
    pthread_mutex_unlock(&g->lock);
}

static void *sweeper(void *arg) {
    srv_guard *g = arg;
    pthread_mutex_lock(&g->lock);
    while (!g->stop) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        uint64_t ns = (uint64_t)ts.tv_nsec + SWEEP_NS;
        ts.tv_sec += (time_t)(ns / 1000000000ull);
        ts.tv_nsec = (long)(ns % 1000000000ull);
        pthread_cond_timedwait(&g->wake, &g->lock, &ts);
        if (g->stop) break;
        pthread_mutex_unlock(&g->lock);
        sweep(g);
        pthread_mutex_lock(&g->lock);
    }
    pthread_mutex_unlock(&g->lock);
    return NULL;
}

srv_guard *inf__serve_guard_new(srv_server *srv) {
    srv_guard *g = calloc(1, sizeof *g);
    if (!g) return NULL;
    g->srv = srv;
    g->deadline_ns = secs_ns(srv->opt.read_deadline_s);
    g->idle_ns = secs_ns(srv->opt.conn_timeout_s);
    pthread_mutex_init(&g->lock, NULL);
    pthread_cond_init(&g->wake, NULL);
    if (pthread_create(&g->sweeper, NULL, sweeper, g) == 0) g->started = 1;
    if (!g->started) {
        inf__serve_guard_free(g);
        return NULL;
    }
    return g;
}

void inf__serve_guard_free(srv_guard *g) {
    if (!g) return;
    if (g->started) {
        pthread_mutex_lock(&g->lock);
        g->stop = 1;
        pthread_cond_signal(&g->wake);
        pthread_mutex_unlock(&g->lock);
        pthread_join(g->sweeper, NULL);
    }
    pthread_mutex_destroy(&g->lock);
    pthread_cond_destroy(&g->wake);
    free(g);
}

/* A read phase starts now: its deadline allows the idle time before the
 * first byte and the read deadline after it. */
static void reading_from(srv_guard *g, srv_guarded *c, uint64_t now) {
    atomic_store_explicit(&c->since_ns, now, memory_order_relaxed);
    atomic_store_explicit(&c->deadline_ns, g->deadline_ns ? now + g->idle_ns + g->deadline_ns : 0,
                          memory_order_relaxed);
}

void inf__serve_guard_add(srv_guard *g, srv_guarded *c, int fd) {
    c->fd = fd;
    c->cut = 0;
    reading_from(g, c, inf__serve_now_ns());
    pthread_mutex_lock(&g->lock);
    c->prev = NULL;
    c->next = g->head;
    if (g->head) g->head->prev = c;
    g->head = c;
    g->n_open++;
    c->listed = 1;
    pthread_mutex_unlock(&g->lock);
}

void inf__serve_guard_remove(srv_guard *g, srv_guarded *c) {
    pthread_mutex_lock(&g->lock);
    if (c->listed) {
        if (c->prev) c->prev->next = c->next;
        else g->head = c->next;
        if (c->next) c->next->prev = c->prev;
        g->n_open--;
        c->listed = 0;
    }
    pthread_mutex_unlock(&g->lock);
}

void inf__serve_guard_request_line(srv_guard *g, srv_guarded *c) {
    if (!g->deadline_ns) return;
    uint64_t d = inf__serve_now_ns() + g->deadline_ns;
    uint64_t cur = atomic_load_explicit(&c->deadline_ns, memory_order_relaxed);
    if (cur && d < cur) atomic_store_explicit(&c->deadline_ns, d, memory_order_relaxed);
}

void inf__serve_guard_received(srv_guarded *c) { atomic_store_explicit(&c->deadline_ns, 0, memory_order_relaxed); }

void inf__serve_guard_answered(srv_guard *g, srv_guarded *c) { reading_from(g, c, inf__serve_now_ns()); }
