/*
 * http_framing.c -- the HTTP/1.1 framing rules of a request, as pure
 * functions over bytes: where a header block ends, whether its
 * Content-Length lines frame the body soundly (and how the body is framed),
 * and a reader that follows a chunked body chunk by chunk.  The gate
 * (gate.c: a connection's first request) and the stream follower
 * (gate_stream.c: the later ones) apply them; fuzz_http_request feeds them
 * arbitrary bytes.  See gate.c for why the server checks framing itself
 * (issue 27, finding 8).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "serve/serve.h"

#define VALUE_SHOWN 40 /* bytes of a bad value quoted in the error */

/* Copies a header value for an error message: at most VALUE_SHOWN bytes, any
 * byte outside printable ASCII as '?'. */
static void shown_value(const char *v, size_t n, char out[VALUE_SHOWN + 4]) {
    size_t k = n < VALUE_SHOWN ? n : VALUE_SHOWN;
    for (size_t i = 0; i < k; i++)
        out[i] = v[i] >= 0x20 && v[i] < 0x7f ? v[i] : '?';
    if (n > VALUE_SHOWN) memcpy(out + k, "...", 3), k += 3;
    out[k] = 0;
}

/* 0 when value v[0..n) is a Content-Length (1*DIGIT, at most 2^63-1), else
 * the reason in msg. */
static int bad_length_value(const char *v, size_t n, char *msg, size_t cap) {
    char shown[VALUE_SHOWN + 4];
    shown_value(v, n, shown);
    if (n == 0) return snprintf(msg, cap, "the Content-Length header is empty"), 1;
    if (v[0] == '-') return snprintf(msg, cap, "the Content-Length header '%s' is negative", shown), 1;
    uint64_t x = 0;
    for (size_t i = 0; i < n; i++) {
        if (v[i] < '0' || v[i] > '9')
            return snprintf(msg, cap, "the Content-Length header '%s' is not a decimal number of bytes", shown), 1;
        if (x > (uint64_t)(INT64_MAX - (v[i] - '0')) / 10)
            return snprintf(msg, cap, "the Content-Length header '%s' overflows (more than 2^63-1 bytes)", shown), 1;
        x = x * 10 + (uint64_t)(v[i] - '0');
    }
    return 0;
}

/* 1 when the Transfer-Encoding value v[..end) is exactly "chunked" (any
 * case, spaces around it): the one coding whose framing the stream follows. */
static int is_chunked_value(const char *v, const char *end) {
    while (v < end && (*v == ' ' || *v == '\t'))
        v++;
    while (end > v && (end[-1] == ' ' || end[-1] == '\t'))
        end--;
    return end - v == 7 && !strncasecmp(v, "chunked", 7);
}

/* The header block head[0..n) (request line first, up to the empty line or
 * the end of the window).  0 when its Content-Length framing is sound or
 * absent; else 1 with the reason in msg: a value that is not 1*DIGIT
 * (empty, negative, non-numeric, overflowing), space before the colon,
 * a value folded over two lines, or two values that differ. */
int inf__serve_gate_check_framing(const char *head, size_t n, srv_body_framing *body, char *msg, size_t cap) {
    const char *end = head + n, *line = memchr(head, '\n', n);
    const char *first = NULL;
    size_t first_n = 0;
    int n_lengths = 0, differ = 0, prev_was_length = 0;
    int n_encodings = 0;
    if (body) body->length = 0, body->has_length = body->has_transfer_encoding = body->is_chunked = 0;
    if (!line) return 0;
    for (line++; line < end;) {
        const char *eol = memchr(line, '\n', (size_t)(end - line));
        if (!eol) eol = end; /* the window ended inside the line: check what is there */
        const char *stop = eol > line && eol[-1] == '\r' ? eol - 1 : eol;
        if (stop == line) break; /* the empty line: end of the headers */
        if (*line == ' ' || *line == '\t') {
            if (prev_was_length) return snprintf(msg, cap, "the Content-Length header is folded over two lines"), 1;
            line = eol + 1;
            continue;
        }
        const char *colon = memchr(line, ':', (size_t)(stop - line));
        const char *name_end = colon ? colon : stop;
        const char *trimmed = name_end;
        while (trimmed > line && (trimmed[-1] == ' ' || trimmed[-1] == '\t'))
            trimmed--;
        prev_was_length = colon && trimmed - line == 14 && !strncasecmp(line, "content-length", 14);
        if (body && colon && trimmed - line == 17 && !strncasecmp(line, "transfer-encoding", 17)) {
            body->has_transfer_encoding = 1;
            body->is_chunked = ++n_encodings == 1 && is_chunked_value(colon + 1, stop);
        }
        if (prev_was_length && trimmed != name_end)
            return snprintf(msg, cap, "whitespace between the header name Content-Length and its colon"), 1;
        if (prev_was_length) {
            const char *v = colon + 1, *ve = stop;
            while (v < ve && (*v == ' ' || *v == '\t'))
                v++;
            while (ve > v && (ve[-1] == ' ' || ve[-1] == '\t'))
                ve--;
            if (bad_length_value(v, (size_t)(ve - v), msg, cap)) return 1;
            if (body && !body->has_length) {
                body->has_length = 1;
                for (const char *d = v; d < ve; d++)
                    body->length = body->length * 10 + (uint64_t)(*d - '0');
            }
            if (n_lengths++ == 0)
                first = v, first_n = (size_t)(ve - v);
            else if (first_n != (size_t)(ve - v) || memcmp(first, v, first_n))
                differ = 1;
        }
        line = eol + 1;
    }
    if (differ)
        return snprintf(msg, cap, "the request has %d Content-Length headers with different values", n_lengths), 1;
    return 0;
}

size_t inf__serve_gate_head_end(const char *p, size_t n) {
    for (const char *nl = memchr(p, '\n', n), *end = p + n; nl; nl = memchr(nl + 1, '\n', (size_t)(end - nl - 1))) {
        if (nl + 1 < end && nl[1] == '\n') return (size_t)(nl + 2 - p);
        if (nl + 2 < end && nl[1] == '\r' && nl[2] == '\n') return (size_t)(nl + 3 - p);
    }
    return 0;
}

/* ---- a chunked body ------------------------------------------------------- */

void inf__serve_chunks_start(srv_chunks *c) { memset(c, 0, sizeof *c), c->state = CHUNKS_SIZE; }

static int hex_value(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* One byte of a chunk-size line (hex digits, then ;extensions up to its
 * end); at its end: the data, or the trailer after the 0 chunk. */
static void size_byte(srv_chunks *c, char b, size_t max_line) {
    if (++c->line_n > max_line) {
        c->state = CHUNKS_UNREADABLE;
    } else if (b == '\n') {
        if (!c->digits)
            c->state = CHUNKS_UNREADABLE;
        else if (c->size)
            c->state = CHUNKS_DATA, c->left = c->size;
        else
            c->state = CHUNKS_TRAILER, c->line_n = 0;
    } else if (b == '\r' || c->in_ext) {
        /* the CR of the line end; extension bytes are skipped */
    } else if (b == ';' || b == ' ' || b == '\t') {
        c->in_ext = 1;
    } else {
        int v = hex_value(b);
        if (v < 0 || c->digits == 16)
            c->state = CHUNKS_UNREADABLE;
        else
            c->size = c->size << 4 | (uint64_t)v, c->digits++;
    }
}

/* One byte after a chunk's data: CR, then LF starts the next size line. */
static void data_end_byte(srv_chunks *c, char b) {
    if (b == '\n')
        c->state = CHUNKS_SIZE, c->size = 0, c->digits = c->in_ext = 0, c->line_n = 0;
    else if (b != '\r')
        c->state = CHUNKS_UNREADABLE;
}

/* One byte of the trailer: an empty line ends the body. */
static void trailer_byte(srv_chunks *c, char b, size_t max_line) {
    if (b == '\n') {
        if (!c->line_n) c->state = CHUNKS_DONE;
        c->line_n = 0;
    } else if (b != '\r' && ++c->line_n > max_line) {
        c->state = CHUNKS_UNREADABLE;
    }
}

size_t inf__serve_chunks_follow(srv_chunks *c, const char *p, size_t n, size_t max_line) {
    size_t pos = 0;
    while (pos < n && c->state != CHUNKS_DONE && c->state != CHUNKS_UNREADABLE) {
        switch (c->state) {
        case CHUNKS_DATA: {
            size_t take = n - pos < c->left ? n - pos : (size_t)c->left;
            pos += take;
            if (!(c->left -= take)) c->state = CHUNKS_DATA_END;
            break;
        }
        case CHUNKS_SIZE:
            size_byte(c, p[pos++], max_line);
            break;
        case CHUNKS_DATA_END:
            data_end_byte(c, p[pos++]);
            break;
        case CHUNKS_TRAILER:
            trailer_byte(c, p[pos++], max_line);
            break;
        default:
            break;
        }
    }
    return pos;
}
