/*
 * gate_stream.c -- the framing check of the LATER requests of a kept-alive
 * connection, before libmicrohttpd reads them (issue 27, finding 8; the
 * first request is the gate's, gate.c).
 *
 * WHY.  libmicrohttpd 0.9.75 answers a non-numeric Content-Length itself
 * (status line and headers twice, an HTML body) while it parses the
 * headers, before any callback of the server; it has no option to take that
 * answer over, and once it has read a connection's bytes nobody else can.
 * So the bytes are looked at on their way to it: libmicrohttpd reads its
 * sockets with recv(2) (libmicrohttpd.so imports `recv` from libc; it is
 * the only reader of its connections), and this file defines `recv` in the
 * infera executable, which the dynamic linker binds libmicrohttpd's calls
 * to.  For a socket the gate did not hand over (gRPC, PostgreSQL, Redis,
 * the gate's own peeks, anything else in the process) it is exactly
 * recvfrom(fd, buf, len, flags, NULL, NULL), after one table lookup.
 *
 * DESIGN.  A handed-over socket has a srv_stream (inf__serve_stream_watch,
 * called by the gate before MHD_add_connection; dropped by http.c when
 * libmicrohttpd notifies the close, before it closes the socket).  It
 * follows the request stream with libmicrohttpd's own framing rules: a
 * header block (up to the empty line; split over reads, it is gathered up
 * to --conn-memory-bytes), then Content-Length body bytes, then the next
 * header block.  Each header block goes through the gate's check
 * (inf__serve_gate_check_framing).  A bad one is never given to
 * libmicrohttpd: the server answers 400 {"error"} naming the header and
 * why, with Connection: close, shuts the socket for writing, hands a
 * duplicate of it to the gate for the lingering close (so the answer is not
 * lost to a reset), and libmicrohttpd reads the end of the stream and
 * closes the connection as a client that left.
 *
 * A chunked body (Transfer-Encoding: chunked) is followed chunk by chunk
 * (http_framing.c: each size line with its ;extensions, the data and its
 * line end, after the 0 chunk the trailer up to its empty line); the next
 * header block is checked like any other.
 *
 * LIMITS.  A body of another transfer coding, or a chunk framing this file
 * cannot read (a size line that is not hex, over 16 digits or longer than
 * the window, data not ended by a line end), is not followed: after it the
 * stream is no longer vetted (libmicrohttpd answers those bytes as before).
 * A header block larger than the window is left to libmicrohttpd (it answers
 * 431).  When a bad header block follows other bytes in the same read
 * (pipelining), the bytes before it go to libmicrohttpd, and the connection
 * ends at the bad request without the 400.  Sockets numbered beyond the
 * table (the open-files limit at start) are not vetted.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include "serve/serve.h"

#define TABLE_MAX (1 << 20) /* sockets numbered beyond this are not vetted */

typedef enum {
    AT_HEAD,    /* the next header block */
    IN_BODY,    /* body_left bytes of a Content-Length body */
    IN_CHUNKED, /* a chunked body (chunks) */
    UNTRACKED,  /* no longer followed */
    ENDED       /* refused: nothing more goes to libmicrohttpd */
} stream_state;

struct srv_stream {
    srv_server *srv;
    stream_state state;
    uint64_t body_left;
    srv_chunks chunks;        /* IN_CHUNKED: where in the chunk framing */
    uint64_t heads, answered; /* header blocks passed on / requests answered (http.c) */
    char *refusal;            /* a refused request's error, until the requests before it are answered */
    char *head;               /* a header block split over reads, gathered (--conn-memory-bytes) */
    size_t head_n;
};

/* Process-wide singleton: the watched sockets by number (NULL = not
 * watched); sized once, at the first watch, never freed. */
static _Atomic(srv_stream *) *stream_table;
static _Atomic size_t stream_table_n; /* set once the table exists */
static pthread_once_t stream_table_once = PTHREAD_ONCE_INIT;

static void stream_table_init(void) {
    struct rlimit rl;
    size_t n = getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY ? (size_t)rl.rlim_cur : TABLE_MAX;
    if (n > TABLE_MAX) n = TABLE_MAX;
    if ((stream_table = calloc(n, sizeof *stream_table))) atomic_store_explicit(&stream_table_n, n, memory_order_release);
}

static void stream_free(srv_stream *s) {
    if (!s) return;
    free(s->refusal);
    free(s->head);
    free(s);
}

void inf__serve_stream_watch(srv_server *srv, int fd) {
    pthread_once(&stream_table_once, stream_table_init);
    if (fd < 0 || (size_t)fd >= stream_table_n) return;
    srv_stream *s = calloc(1, sizeof *s);
    if (!s) return; /* not vetted: libmicrohttpd answers as before */
    s->srv = srv;
    s->state = AT_HEAD;
    srv_stream *old = atomic_exchange(&stream_table[fd], s);
    stream_free(old);
}

void inf__serve_stream_forget(int fd) {
    if (fd < 0 || (size_t)fd >= stream_table_n) return;
    srv_stream *s = atomic_exchange(&stream_table[fd], NULL);
    stream_free(s);
}

/* Answers the refused request: 400, and the socket to the gate to close. */
static void send_refusal(srv_stream *s, int fd) {
    inf__serve_gate_send_refusal(s->srv, fd, s->refusal);
    free(s->refusal);
    s->refusal = NULL;
    int dup_fd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
    if (dup_fd >= 0) inf__serve_gate_linger(s->srv->gate, dup_fd);
}

void inf__serve_stream_answered(int fd) {
    if (fd < 0 || (size_t)fd >= stream_table_n) return;
    srv_stream *s = atomic_load_explicit(&stream_table[fd], memory_order_acquire);
    if (!s) return;
    s->answered++;
    if (s->refusal && s->answered == s->heads) send_refusal(s, fd); /* the pipelined requests before it are answered */
}

/* Ends the stream at a bad header block; it is answered 400 at once when
 * every request before it was answered (nothing else is being written on
 * the socket), else when the last of them is (inf__serve_stream_answered). */
static void refuse(srv_stream *s, int fd, const char *why) {
    s->state = ENDED;
    s->refusal = strdup(why); /* NULL: no memory, the connection just ends */
    if (s->refusal && s->answered == s->heads) send_refusal(s, fd);
}

/* Checks a complete header block and sets what follows it; 0, or -1 when
 * it was refused. */
static int check_head(srv_stream *s, int fd, const char *head, size_t n) {
    char why[INF_ERROR_MESSAGE_MAX];
    srv_body_framing body;
    if (inf__serve_gate_check_framing(head, n, &body, why, sizeof why)) {
        refuse(s, fd, why);
        return -1;
    }
    s->heads++;
    if (body.has_transfer_encoding) {
        s->state = body.is_chunked ? IN_CHUNKED : UNTRACKED;
        inf__serve_chunks_start(&s->chunks);
    } else if (body.has_length && body.length)
        s->state = IN_BODY, s->body_left = body.length;
    else s->state = AT_HEAD;
    return 0;
}

/* How much of one header block or line is gathered or followed (--conn-memory-bytes). */
static size_t stream_window(const srv_stream *s) {
    return s->srv->opt.conn_memory_bytes > 0 ? (size_t)s->srv->opt.conn_memory_bytes : 8192;
}

/* Gathers part of a split header block; 1 when it no longer fits (left to libmicrohttpd). */
static int gather(srv_stream *s, const char *p, size_t n) {
    size_t window = stream_window(s);
    if (s->head_n + n > window) return 1;
    if (!s->head && !(s->head = malloc(window))) return 1;
    memcpy(s->head + s->head_n, p, n);
    s->head_n += n;
    return 0;
}

/* Follows the k bytes just read into buf; returns how many of them
 * libmicrohttpd gets (k, fewer when a bad request starts inside them, 0
 * when it starts them: the end of the stream). */
static size_t follow(srv_stream *s, int fd, const char *buf, size_t k) {
    size_t pos = 0;
    while (pos < k) {
        switch (s->state) {
        case UNTRACKED: return k;
        case ENDED: return pos;
        case IN_BODY: {
            size_t take = k - pos < s->body_left ? k - pos : (size_t)s->body_left;
            pos += take;
            s->body_left -= take;
            if (!s->body_left) s->state = AT_HEAD;
            break;
        }
        case IN_CHUNKED:
            pos += inf__serve_chunks_follow(&s->chunks, buf + pos, k - pos, stream_window(s));
            if (s->chunks.state == CHUNKS_UNREADABLE)
                s->state = UNTRACKED;
            else if (s->chunks.state == CHUNKS_DONE)
                s->state = AT_HEAD;
            break;
        case AT_HEAD:
            if (!s->head_n) {
                while (pos < k && (buf[pos] == '\r' || buf[pos] == '\n')) pos++; /* empty lines before a request */
                if (pos == k) return k;
                size_t e = inf__serve_gate_head_end(buf + pos, k - pos);
                if (!e) {
                    if (gather(s, buf + pos, k - pos)) s->state = UNTRACKED;
                    return k;
                }
                if (check_head(s, fd, buf + pos, e) < 0) return pos;
                pos += e;
            } else {
                size_t before = s->head_n, e;
                if (gather(s, buf + pos, k - pos)) {
                    s->state = UNTRACKED;
                    return k;
                }
                /* the end may straddle the two parts: look from a little before the new bytes */
                size_t from = before >= 3 ? before - 3 : 0;
                e = inf__serve_gate_head_end(s->head + from, s->head_n - from);
                if (!e) return k;
                e += from;
                s->head_n = 0;
                if (check_head(s, fd, s->head, e) < 0) return 0; /* its start went to libmicrohttpd: it reads the end */
                pos += e - before;
            }
            break;
        }
    }
    return k;
}

/* libmicrohttpd's reads (and every other recv of the process; default
 * visibility so that the executable exports it to the shared libraries). */
__attribute__((visibility("default"))) ssize_t recv(int fd, void *buf, size_t len, int flags) {
    ssize_t k = recvfrom(fd, buf, len, flags, NULL, NULL);
    if (k <= 0 || (flags & MSG_PEEK) || fd < 0 || (size_t)fd >= atomic_load_explicit(&stream_table_n, memory_order_acquire))
        return k;
    srv_stream *s = atomic_load_explicit(&stream_table[fd], memory_order_acquire);
    if (!s) return k;
    return (ssize_t)follow(s, fd, buf, (size_t)k);
}
