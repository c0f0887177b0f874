/*
 * loadgen.c -- open-loop HTTP load at a fixed mean rate with Poisson
 * (exponential) inter-arrival times, for "p99 at half of the maximum
 * throughput" (wrk is closed-loop and cannot hold a rate).
 *
 *   loadgen PORT PATH BODY_FILE RATE_PER_S SECONDS [CONNECTIONS] [THREADS]
 *
 * MODEL.  Each of THREADS (default 1) event-loop threads owns
 * CONNECTIONS/THREADS kept-alive connections and an arrival process at
 * RATE/THREADS per second (the sum is Poisson at RATE).  An arrival takes
 * any idle connection of its thread -- a client connection pool, as an
 * application server has -- or waits in the thread's backlog until one is
 * free.  Latency runs from the arrival's *scheduled* time to the last byte
 * of its response, so a stalled server (or a stalled client) is not hidden
 * (no coordinated omission).
 *
 * WHY AN EVENT LOOP.  The first version ran one blocking thread per
 * connection, each with its own Poisson clock and nanosleep: at 64
 * connections that is 64 threads time-sharing the client's CPU (each wake-up
 * a context switch, nanosleep with the default 50 us timer slack), and a
 * request whose connection was still busy waited for that connection even
 * when 63 others were idle.  Here one thread waits in epoll on the sockets
 * and one timerfd (absolute, 1 ns slack), and sends are non-blocking.
 *
 * OUTPUT.  One JSON object: rate, achieved, sent, ok, errors, latency
 * percentiles (us) from the scheduled time, "lag" percentiles (how late the
 * client's loop saw each arrival: the client's own scheduling delay, which
 * the latency includes but the server did not cause; waiting for an idle
 * connection is not lag, it is the server's backlog), and the client's CPU
 * use in percent of one core ("client_cpu"), so a saturated client shows.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* memmem */
#endif
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/timerfd.h>
#include <time.h>

#include "../../tests/serve/http_client.h"

typedef struct conn {
    int fd;
    int busy;
    double t_sched;
    size_t off;           /* bytes of the request sent */
    char *in;             /* response bytes so far */
    size_t n_in, cap_in;
} conn;

typedef struct worker {
    int port;
    const char *req;      /* the whole request: head + body */
    size_t req_len;
    double rate, seconds, t0;
    uint64_t seed;
    int n_conns;
    conn *conns;
    double *backlog;      /* scheduled times waiting for a connection (ring) */
    long bl_head, bl_n, bl_cap;
    double *lat, *lag;    /* per response; per arrival */
    long n, cap, n_lag, cap_lag, ok, err, sent;
} worker;

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double next_gap(worker *w) {
    uint64_t s = w->seed;
    s ^= s << 13, s ^= s >> 7, s ^= s << 17;
    w->seed = s;
    double u = ((double)(s >> 11) + 0.5) / 9007199254740992.0;
    return -log(u) / w->rate; /* exponential gap: Poisson arrivals */
}

/* Appends v seconds (as us) to a growable sample array. */
static int sample(double **a, long *n, long *cap, double v) {
    if (*n == *cap) {
        long c = *cap ? 2 * *cap : 16384;
        double *p = realloc(*a, (size_t)c * sizeof *p);
        if (!p) return -1;
        *a = p, *cap = c;
    }
    (*a)[(*n)++] = v * 1e6;
    return 0;
}

static int open_conn(worker *w, int ep, conn *c) {
    c->fd = http_connect(w->port);
    if (c->fd < 0) return -1;
    fcntl(c->fd, F_SETFL, fcntl(c->fd, F_GETFL) | O_NONBLOCK);
    struct epoll_event ev = {.events = EPOLLIN, .data.ptr = c};
    return epoll_ctl(ep, EPOLL_CTL_ADD, c->fd, &ev);
}

static void drop_conn(worker *w, int ep, conn *c) {
    if (c->busy) w->err++;
    if (c->fd >= 0) {
        epoll_ctl(ep, EPOLL_CTL_DEL, c->fd, NULL);
        close(c->fd);
    }
    c->fd = -1;
    c->busy = 0;
    c->n_in = 0;
    if (open_conn(w, ep, c)) c->fd = -1;
}

/* Writes what is left of the request; arms EPOLLOUT when the socket is full. */
static void push(worker *w, int ep, conn *c) {
    while (c->off < w->req_len) {
        ssize_t k = send(c->fd, w->req + c->off, w->req_len - c->off, MSG_NOSIGNAL);
        if (k < 0 && errno == EAGAIN) {
            struct epoll_event ev = {.events = EPOLLIN | EPOLLOUT, .data.ptr = c};
            epoll_ctl(ep, EPOLL_CTL_MOD, c->fd, &ev);
            return;
        }
        if (k <= 0) {
            drop_conn(w, ep, c);
            return;
        }
        c->off += (size_t)k;
    }
}

static void start(worker *w, int ep, conn *c, double t_sched) {
    c->busy = 1;
    c->t_sched = t_sched;
    c->off = 0;
    c->n_in = 0;
    w->sent++;
    push(w, ep, c);
}

/* Length of a complete response in c->in (0 = not yet), status in *st. */
static size_t complete_len(const conn *c, int *st) {
    const char *end = memmem(c->in, c->n_in, "\r\n\r\n", 4);
    if (!end) return 0;
    size_t hlen = (size_t)(end - c->in) + 4;
    long cl = 0;
    for (const char *p = c->in; p && p < end; p = memchr(p, '\n', (size_t)(end - p))) {
        if (*p == '\n') p++;
        if (!strncasecmp(p, "Content-Length:", 15)) cl = atol(p + 15);
    }
    *st = atoi(c->in + 9);
    return c->n_in >= hlen + (size_t)cl ? hlen + (size_t)cl : 0;
}

/* An idle connection for the scheduled time t, or into the backlog. */
static void arrive(worker *w, int ep, double t) {
    if (sample(&w->lag, &w->n_lag, &w->cap_lag, now_s() - t)) w->err++;
    for (int i = 0; i < w->n_conns; i++) {
        conn *c = &w->conns[i];
        if (!c->busy && c->fd >= 0) {
            start(w, ep, c, t);
            return;
        }
    }
    if (w->bl_n == w->bl_cap) {
        long cap = w->bl_cap ? 2 * w->bl_cap : 1024;
        double *b = malloc((size_t)cap * sizeof *b);
        if (!b) {
            w->err++;
            return;
        }
        for (long k = 0; k < w->bl_n; k++) b[k] = w->backlog[(w->bl_head + k) % w->bl_cap];
        free(w->backlog);
        w->backlog = b, w->bl_head = 0, w->bl_cap = cap;
    }
    w->backlog[(w->bl_head + w->bl_n++) % w->bl_cap] = t;
}

static void readable(worker *w, int ep, conn *c) {
    int st = 0;
    for (;;) { /* level-triggered: stop at a complete response (saves the EAGAIN read) */
        if (c->cap_in - c->n_in < 4096) {
            size_t cap = c->cap_in ? 2 * c->cap_in : 16384;
            char *p = realloc(c->in, cap);
            if (!p) {
                drop_conn(w, ep, c);
                return;
            }
            c->in = p, c->cap_in = cap;
        }
        ssize_t k = recv(c->fd, c->in + c->n_in, c->cap_in - c->n_in, 0);
        if (k < 0 && errno == EAGAIN) break;
        if (k <= 0) {
            drop_conn(w, ep, c);
            return;
        }
        c->n_in += (size_t)k;
        if (c->busy && complete_len(c, &st)) break;
    }
    if (!c->busy || !complete_len(c, &st)) return;
    double t = now_s();
    if (sample(&w->lat, &w->n, &w->cap, t - c->t_sched)) w->err++;
    if (st == 200)
        w->ok++;
    else
        w->err++;
    c->busy = 0;
    if (w->bl_n) {
        double ts = w->backlog[w->bl_head];
        w->bl_head = (w->bl_head + 1) % w->bl_cap, w->bl_n--;
        start(w, ep, c, ts);
    }
}

/* Sets the timer to fire at t (absolute); *armed caches the last setting. */
static void arm(int tfd, double t, double *armed) {
    if (t == *armed) return;
    *armed = t;
    struct itimerspec its = {{0, 0}, {(time_t)t, (long)((t - (double)(time_t)t) * 1e9)}};
    if (its.it_value.tv_sec == 0 && its.it_value.tv_nsec == 0) its.it_value.tv_nsec = 1;
    timerfd_settime(tfd, TFD_TIMER_ABSTIME, &its, NULL);
}

static void *run(void *p) {
    worker *w = p;
    prctl(PR_SET_TIMERSLACK, 1UL);
    int ep = epoll_create1(0), tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK);
    struct epoll_event tev = {.events = EPOLLIN, .data.ptr = NULL};
    epoll_ctl(ep, EPOLL_CTL_ADD, tfd, &tev);
    for (int i = 0; i < w->n_conns; i++)
        if (open_conn(w, ep, &w->conns[i])) w->conns[i].fd = -1;
    double t_next = w->t0 + next_gap(w), t_end = w->t0 + w->seconds, armed = -1;
    struct epoll_event evs[64];
    for (;;) {
        double now = now_s();
        while (t_next <= now && t_next < t_end) {
            arrive(w, ep, t_next);
            t_next += next_gap(w);
        }
        int in_flight = w->bl_n > 0;
        for (int i = 0; i < w->n_conns && !in_flight; i++) in_flight = w->conns[i].busy;
        if (t_next >= t_end && !in_flight) break;
        if (now > t_end + 10.0) break; /* give up on answers 10 s late */
        arm(tfd, t_next < t_end ? t_next : now + 0.01, &armed);
        int k = epoll_wait(ep, evs, 64, -1);
        for (int i = 0; i < k; i++) {
            conn *c = evs[i].data.ptr;
            if (!c) {
                uint64_t x;
                if (read(tfd, &x, sizeof x) < 0) continue;
                continue;
            }
            if (evs[i].events & EPOLLOUT) {
                struct epoll_event ev = {.events = EPOLLIN, .data.ptr = c};
                epoll_ctl(ep, EPOLL_CTL_MOD, c->fd, &ev);
                push(w, ep, c);
            }
            if (evs[i].events & (EPOLLIN | EPOLLERR | EPOLLHUP)) readable(w, ep, c);
        }
    }
    for (int i = 0; i < w->n_conns; i++) {
        if (w->conns[i].busy) w->err++;
        if (w->conns[i].fd >= 0) close(w->conns[i].fd);
        free(w->conns[i].in);
    }
    w->err += w->bl_n;
    close(tfd);
    close(ep);
    return NULL;
}

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* All threads' samples of one kind (lat or lag), sorted; *n their count. */
static double *gather(worker *w, int nt, int lag, long *n) {
    *n = 0;
    for (int i = 0; i < nt; i++) *n += lag ? w[i].n_lag : w[i].n;
    double *all = malloc((size_t)(*n ? *n : 1) * sizeof *all);
    if (!all) return NULL;
    long k = 0;
    for (int i = 0; i < nt; i++) {
        long m = lag ? w[i].n_lag : w[i].n;
        memcpy(all + k, lag ? w[i].lag : w[i].lat, (size_t)m * sizeof *all);
        k += m;
    }
    qsort(all, (size_t)*n, sizeof *all, cmp);
    return all;
}

static double cpu_s(void) {
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 + (double)ru.ru_stime.tv_sec +
           (double)ru.ru_stime.tv_usec / 1e6;
}

int main(int argc, char **argv) {
    if (argc < 6) {
        fprintf(stderr, "usage: loadgen PORT PATH BODY_FILE RATE_PER_S SECONDS [CONNECTIONS] [THREADS]\n");
        return 2;
    }
    FILE *f = fopen(argv[3], "rb");
    if (!f) {
        fprintf(stderr, "loadgen: cannot open body file %s\n", argv[3]);
        return 2;
    }
    static char body[1 << 20];
    size_t len = fread(body, 1, sizeof body, f);
    fclose(f);
    double rate = atof(argv[4]), secs = atof(argv[5]);
    int nc = argc > 6 ? atoi(argv[6]) : 32, nt = argc > 7 ? atoi(argv[7]) : 1;
    if (rate <= 0 || secs <= 0 || nc < 1 || nt < 1 || nt > nc) {
        fprintf(stderr, "loadgen: need RATE > 0, SECONDS > 0, 1 <= THREADS <= CONNECTIONS\n");
        return 2;
    }
    size_t cap = len + 512;
    char *req = malloc(cap);
    worker *w = calloc((size_t)nt, sizeof *w);
    conn *conns = calloc((size_t)nc, sizeof *conns);
    pthread_t *th = calloc((size_t)nt, sizeof *th);
    if (!req || !w || !conns || !th) {
        fprintf(stderr, "loadgen: out of memory\n");
        return 1;
    }
    int hn = snprintf(req, cap, "POST %s HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                      "Content-Length: %zu\r\n\r\n", argv[2], len);
    memcpy(req + hn, body, len);
    double t0 = now_s() + 0.05, c0 = cpu_s();
    for (int i = 0, c = 0; i < nt; i++) {
        int mine = nc / nt + (i < nc % nt);
        w[i] = (worker){.port = atoi(argv[1]), .req = req, .req_len = (size_t)hn + len, .rate = rate / nt,
                        .seconds = secs, .t0 = t0, .seed = 0x9E3779B97F4A7C15ull * (uint64_t)(i + 1),
                        .n_conns = mine, .conns = conns + c};
        c += mine;
        pthread_create(&th[i], NULL, run, &w[i]);
    }
    long ok = 0, err = 0, sent = 0;
    for (int i = 0; i < nt; i++) {
        pthread_join(th[i], NULL);
        ok += w[i].ok, err += w[i].err, sent += w[i].sent;
    }
    double cpu = 100.0 * (cpu_s() - c0) / secs;
    long n, n_lag;
    double *lat = gather(w, nt, 0, &n), *lag = gather(w, nt, 1, &n_lag);
    if (!lat || !lag) {
        fprintf(stderr, "loadgen: out of memory\n");
        return 1;
    }
#define P(a, m, q) ((m) ? (a)[(long)((double)((m) - 1) * (q))] : 0)
    printf("{\"rate\":%.0f,\"achieved\":%.0f,\"sent\":%ld,\"ok\":%ld,\"errors\":%ld,\"p50_us\":%.0f,\"p90_us\":%.0f,"
           "\"p99_us\":%.0f,\"p999_us\":%.0f,\"max_us\":%.0f,\"lag_p50_us\":%.0f,\"lag_p99_us\":%.0f,"
           "\"client_cpu\":%.0f}\n",
           rate, (double)n / secs, sent, ok, err, P(lat, n, 0.5), P(lat, n, 0.9),
           P(lat, n, 0.99), P(lat, n, 0.999), P(lat, n, 1.0), P(lag, n_lag, 0.5), P(lag, n_lag, 0.99), cpu);
    for (int i = 0; i < nt; i++) free(w[i].lat), free(w[i].lag), free(w[i].backlog);
    free(lat);
    free(lag);
    free(w);
    free(conns);
    free(th);
    free(req);
    return 0;
}
