/*
 * source_jsonl.c -- `jsonl:-` (stdin) and `jsonl:PATH` stream sources: one
 * JSON object per line, each line one event.
 *
 * Unlike io/'s jsonl source (which fills a batch, blocking), this one reads
 * the file descriptor with poll(): a micro-batch ends at max events, at
 * max_delay_ms after its first event, or when the input is idle, so events
 * typed or piped in slowly are scored at once.  The event id is the line
 * number (1-based, blank lines counted), stable when the same input is
 * replayed.  A line that is not a JSON object, or not UTF-8 text, is a
 * malformed event (its reason names the line), and so is a line longer than
 * 16 MiB (memory stays bounded: its bytes are dropped up to its newline).
 * End of input = eof.
 * Nothing to acknowledge.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "stream/stream_int.h"

#define POLL_MS 200
#define MAX_LINE (16 << 20) /* a longer line is a malformed event, skipped up to its newline */

typedef struct jsonl_stream {
    int fd, owns, eof;
    int skipping; /* inside a line longer than MAX_LINE: drop bytes up to its newline */
    int max_delay_ms;
    int64_t line;
    char *buf; /* bytes read, not yet split: [start, len) */
    size_t start, len, cap;
    char path[512];
} jsonl_stream;

static void jsonl_close(void *state) {
    jsonl_stream *s = state;
    if (!s) return;
    if (s->owns && s->fd >= 0) close(s->fd);
    free(s->buf);
    free(s);
}

static inf_status jsonl_open(const char *uri, const inf__stream_source_options *o, void **state, inf_error *err) {
    jsonl_stream *s = calloc(1, sizeof *s);
    if (!s) goto oom;
    const char *path = uri + 6;
    snprintf(s->path, sizeof s->path, "%s", path);
    s->max_delay_ms = o->max_delay_ms;
    s->cap = 1 << 16;
    s->buf = malloc(s->cap);
    if (!s->buf) goto oom;
    if (!strcmp(path, "-")) {
        s->fd = 0;
    } else {
        s->fd = open(path, O_RDONLY | O_CLOEXEC);
        s->owns = 1;
        if (s->fd < 0) {
            int e = errno;
            jsonl_close(s);
            inf_error_set(err, e == ENOENT ? INF_ENOENT : INF_EIO, "%s: cannot open: %s", uri, strerror(e));
            return err->status;
        }
    }
    *state = s;
    return INF_OK;
oom:
    jsonl_close(s);
    inf_error_set(err, INF_ENOMEM, "%s: out of memory", uri);
    return INF_ENOMEM;
}

/* Drops the bytes of an over-long line up to its newline; 1 while inside it. */
static int skip_long_line(jsonl_stream *s) {
    char *p = s->buf + s->start, *nl = memchr(p, '\n', s->len - s->start);
    s->start = nl ? (size_t)(nl - s->buf) + 1 : s->len;
    s->skipping = !nl;
    return s->skipping;
}

/* Moves complete lines of the buffer into ev, at most max events in all. */
static inf_status take_lines(jsonl_stream *s, inf__stream_events *ev, int max) {
    while (inf__stream_events_count(ev) < max && s->start < s->len) {
        if (s->skipping && skip_long_line(s)) break;
        char *p = s->buf + s->start, *nl = memchr(p, '\n', s->len - s->start);
        if (!nl && !s->eof && s->len - s->start >= MAX_LINE) {
            char id[32], why[96];
            int id_len = snprintf(id, sizeof id, "%lld", (long long)++s->line);
            snprintf(why, sizeof why, "line %s: longer than %d bytes", id, MAX_LINE);
            inf_status st = inf__stream_events_add_bad(ev, id, (size_t)id_len, why, p, 200);
            if (st) return st;
            s->skipping = 1;
            continue;
        }
        if (!nl && !s->eof) break;
        size_t n = nl ? (size_t)(nl - p) : s->len - s->start;
        s->start += n + (nl ? 1 : 0);
        s->line++;
        while (n && (p[n - 1] == '\r' || p[n - 1] == ' ' || p[n - 1] == '\t')) n--;
        if (!n) continue;
        char id[32];
        int id_len = snprintf(id, sizeof id, "%lld", (long long)s->line);
        inf_status st = inf__stream_events_add_json(ev, id, (size_t)id_len, p, n, "line");
        if (st) return st;
    }
    return INF_OK;
}

/* Reads what is available (waiting up to timeout_ms); sets eof at the end. */
static inf_status fill(jsonl_stream *s, int timeout_ms, inf_error *err) {
    struct pollfd pfd = {s->fd, POLLIN, 0};
    int rc = poll(&pfd, 1, timeout_ms);
    if (rc < 0 && errno == EINTR) return INF_OK;
    if (rc <= 0) return INF_OK;
    if (s->start > 0) { /* compact */
        memmove(s->buf, s->buf + s->start, s->len - s->start);
        s->len -= s->start;
        s->start = 0;
    }
    if (s->cap - s->len < 4096) {
        char *p = realloc(s->buf, s->cap * 2);
        if (!p) {
            inf_error_set(err, INF_ENOMEM, "jsonl:%s: out of memory (a line of %zu bytes)", s->path, s->len);
            return INF_ENOMEM;
        }
        s->buf = p;
        s->cap *= 2;
    }
    ssize_t n = read(s->fd, s->buf + s->len, s->cap - s->len);
    if (n < 0 && errno != EINTR && errno != EAGAIN) {
        inf_error_set(err, INF_EIO, "jsonl:%s: read failed: %s", s->path, strerror(errno));
        return INF_EIO;
    }
    if (n == 0) s->eof = 1;
    if (n > 0) s->len += (size_t)n;
    return INF_OK;
}

static inf_status jsonl_next(void *state, inf__stream_events *ev, int max, int *eof, inf_error *err) {
    jsonl_stream *s = state;
    int64_t first = -1;
    for (;;) {
        inf_status st = take_lines(s, ev, max);
        if (st) {
            inf_error_set(err, st, "jsonl:%s: out of memory", s->path);
            return st;
        }
        int n = inf__stream_events_count(ev);
        if (n >= max || inf__stream_stopping()) break;
        if (s->eof) {
            *eof = s->start >= s->len;
            break;
        }
        int64_t now = inf__stream_now_ms();
        if (n > 0 && first < 0) first = now;
        int wait = n == 0 ? POLL_MS : (int)(first + s->max_delay_ms - now);
        if (wait < 0) wait = 0; /* the delay is over: take only what is there already */
        size_t had = s->len - s->start;
        if ((st = fill(s, wait, err))) return st;
        if (s->len - s->start == had && !s->eof) break; /* nothing more came: idle, or the delay is over */
    }
    return INF_OK;
}

/* Complete lines read from the descriptor but not yet returned (a stop scores them: a pipe's
 * writer counts them as delivered). */
static int64_t jsonl_buffered(void *state) {
    const jsonl_stream *s = state;
    if (s->start >= s->len) return 0;
    return s->eof || memchr(s->buf + s->start, '\n', s->len - s->start) ? 1 : 0;
}

const inf__stream_source_type inf__stream_jsonl_source = {"jsonl",     jsonl_open, jsonl_next,    NULL,
                                                          jsonl_close, NULL,       jsonl_buffered};
